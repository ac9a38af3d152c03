//! `channel(cap)`, `lock()`, `atomic(v)`: the Apsi objects around the cores.

use crate::atomic::{AtomicError, AtomicNum, Num};
use crate::chan::Chan;
use crate::util::{int_arg, method_of, native, object, recv};
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, ApsiObject, Args, Caller, Kwargs, Protocols, VResult, Value};
use parking_lot::{Condvar, Mutex};
use std::sync::OnceLock;
use std::thread::ThreadId;

// ------------------------------------------------------------------ channel

pub struct Channel(pub Chan<Value>);

fn chan_methods() -> &'static [(&'static str, Value)] {
    static M: OnceLock<Vec<(&'static str, Value)>> = OnceLock::new();
    M.get_or_init(|| {
        vec![
            ("send", native("send", chan_send)),
            ("recv", native("recv", chan_recv)),
            ("close", native("close", chan_close)),
        ]
    })
}

impl ApsiObject for Channel {
    fn type_name(&self) -> &str {
        "Channel"
    }
    fn to_str(&self) -> String {
        format!(
            "<Channel {}/{}{}>",
            self.0.len(),
            self.0.capacity(),
            if self.0.is_closed() { " closed" } else { "" }
        )
    }
    fn get_attr(&self, this: &Value, name: &str) -> Option<VResult<Value>> {
        method_of(this, chan_methods(), name)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    /// A channel is its own iterator: `for v in ch` pulls one item at a
    /// time until the channel is closed and empty (so the loop body runs
    /// while producers are still sending, and a bounded channel never has
    /// to hold everything).
    fn protocols(&self) -> Protocols {
        Protocols {
            next: true,
            len: true,
            ..Protocols::NONE
        }
    }
    fn next(&self, _this: &Value, _c: &mut dyn Caller) -> VResult<Option<Value>> {
        Ok(self.0.recv())
    }
    fn len(&self, _this: &Value) -> VResult<i64> {
        Ok(self.0.len() as i64)
    }
}

pub fn channel(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("channel", args, kw, 1, &["capacity"])?;
    let cap = int_arg("channel", "the capacity", &args[0])?;
    if cap < 1 {
        return Err(err(
            ErrorKind::ValueError,
            format!("channel() needs a capacity of at least 1, got {cap}"),
        ));
    }
    Ok(object(Channel(Chan::new(cap.min(1 << 30) as usize))))
}

fn chan_send(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("send", args, kw, 2, &["self", "item"])?;
    let ch = recv::<Channel>(args, "Channel")?;
    ch.0.send(args[1].clone())
        .map_err(|_| err(ErrorKind::ValueError, "send on a closed channel"))?;
    Ok(Value::None)
}

/// `recv()`: the next item, or none once the channel is closed and empty.
fn chan_recv(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("recv", args, kw, 1, &["self"])?;
    Ok(recv::<Channel>(args, "Channel")?.0.recv().unwrap_or(Value::None))
}

fn chan_close(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("close", args, kw, 1, &["self"])?;
    recv::<Channel>(args, "Channel")?.0.close();
    Ok(Value::None)
}

// --------------------------------------------------------------------- lock

/// A mutual-exclusion lock held across Apsi code (`with l:` or
/// `acquire`/`release`). Not re-entrant: acquiring it again on the thread
/// that holds it is an error instead of a silent deadlock.
pub struct Lock {
    owner: Mutex<Option<ThreadId>>,
    cond: Condvar,
}

fn lock_methods() -> &'static [(&'static str, Value)] {
    static M: OnceLock<Vec<(&'static str, Value)>> = OnceLock::new();
    M.get_or_init(|| {
        vec![
            ("acquire", native("acquire", lock_acquire)),
            ("release", native("release", lock_release)),
            ("locked", native("locked", lock_locked)),
        ]
    })
}

impl ApsiObject for Lock {
    fn type_name(&self) -> &str {
        "Lock"
    }
    fn to_str(&self) -> String {
        if self.owner.lock().is_some() {
            "<Lock locked>".into()
        } else {
            "<Lock unlocked>".into()
        }
    }
    fn get_attr(&self, this: &Value, name: &str) -> Option<VResult<Value>> {
        method_of(this, lock_methods(), name)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    /// `with l:` acquires and releases; the block's error is never swallowed.
    fn protocols(&self) -> Protocols {
        Protocols {
            context: true,
            ..Protocols::NONE
        }
    }
    fn enter(&self, this: &Value, _c: &mut dyn Caller) -> VResult<Value> {
        self.acquire()?;
        Ok(this.clone())
    }
    fn exit(&self, _this: &Value, _c: &mut dyn Caller, _error: Option<&Value>) -> VResult<bool> {
        self.release()?;
        Ok(false)
    }
}

impl Lock {
    pub fn new() -> Lock {
        Lock {
            owner: Mutex::new(None),
            cond: Condvar::new(),
        }
    }

    pub fn acquire(&self) -> VResult<()> {
        let me = std::thread::current().id();
        let mut g = self.owner.lock();
        if *g == Some(me) {
            return Err(err(
                ErrorKind::Error,
                "this lock is already held here (locks are not re-entrant): acquiring it again would wait forever",
            ));
        }
        if g.is_some() {
            apsi_core::api::par::blocking(|| {
                while g.is_some() {
                    self.cond.wait(&mut g);
                }
            });
        }
        *g = Some(me);
        Ok(())
    }

    pub fn release(&self) -> VResult<()> {
        let mut g = self.owner.lock();
        if g.is_none() {
            return Err(err(ErrorKind::Error, "release of a lock that is not held"));
        }
        *g = None;
        drop(g);
        self.cond.notify_one();
        Ok(())
    }
}

impl Default for Lock {
    fn default() -> Self {
        Lock::new()
    }
}

pub fn lock(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("lock", args, kw, 0, &[])?;
    Ok(object(Lock::new()))
}

fn lock_acquire(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("acquire", args, kw, 1, &["self"])?;
    recv::<Lock>(args, "Lock")?.acquire()?;
    Ok(Value::None)
}

fn lock_release(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("release", args, kw, 1, &["self"])?;
    recv::<Lock>(args, "Lock")?.release()?;
    Ok(Value::None)
}

fn lock_locked(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("locked", args, kw, 1, &["self"])?;
    Ok(Value::Bool(recv::<Lock>(args, "Lock")?.owner.lock().is_some()))
}

// ------------------------------------------------------------------- atomic

pub struct Atomic(pub AtomicNum);

fn atomic_methods() -> &'static [(&'static str, Value)] {
    static M: OnceLock<Vec<(&'static str, Value)>> = OnceLock::new();
    M.get_or_init(|| {
        vec![
            ("load", native("load", atomic_load)),
            ("store", native("store", atomic_store)),
            ("add", native("add", atomic_add)),
            ("fetch_add", native("fetch_add", atomic_fetch_add)),
            ("compare_exchange", native("compare_exchange", atomic_cas)),
        ]
    })
}

fn to_value(n: Num) -> Value {
    match n {
        Num::Int(i) => Value::Int(i),
        Num::Float(f) => Value::Float(f),
    }
}

fn to_num(fname: &str, v: &Value) -> VResult<Num> {
    match v {
        Value::Int(i) => Ok(Num::Int(*i)),
        Value::Bool(b) => Ok(Num::Int(*b as i64)),
        Value::Float(f) => Ok(Num::Float(*f)),
        other => Err(err(
            ErrorKind::TypeError,
            format!("{fname}() needs an int or a float, found {}", other.type_name()),
        )),
    }
}

fn atomic_err(fname: &str, e: AtomicError) -> apsi_core::api::Exc {
    match e {
        AtomicError::NotInt => err(
            ErrorKind::TypeError,
            format!("{fname}(): an int atomic takes ints, found a float"),
        ),
        AtomicError::Overflow => err(
            ErrorKind::OverflowError,
            format!("{fname}(): the atomic int overflowed"),
        ),
    }
}

impl ApsiObject for Atomic {
    fn type_name(&self) -> &str {
        "Atomic"
    }
    fn to_str(&self) -> String {
        format!("atomic({})", apsi_core::api::repr_of(&to_value(self.0.load())))
    }
    fn get_attr(&self, this: &Value, name: &str) -> Option<VResult<Value>> {
        method_of(this, atomic_methods(), name)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub fn atomic(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("atomic", args, kw, 0, &["value"])?;
    let n = match args.first() {
        Some(v) => to_num("atomic", v)?,
        None => Num::Int(0),
    };
    Ok(object(Atomic(AtomicNum::new(n))))
}

fn atomic_load(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("load", args, kw, 1, &["self"])?;
    Ok(to_value(recv::<Atomic>(args, "Atomic")?.0.load()))
}

fn atomic_store(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("store", args, kw, 2, &["self", "value"])?;
    let a = recv::<Atomic>(args, "Atomic")?;
    a.0.store(to_num("store", &args[1])?)
        .map_err(|e| atomic_err("store", e))?;
    Ok(Value::None)
}

fn atomic_add(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("add", args, kw, 2, &["self", "value"])?;
    let a = recv::<Atomic>(args, "Atomic")?;
    a.0.fetch_add(to_num("add", &args[1])?)
        .map_err(|e| atomic_err("add", e))?;
    Ok(Value::None)
}

fn atomic_fetch_add(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("fetch_add", args, kw, 2, &["self", "value"])?;
    let a = recv::<Atomic>(args, "Atomic")?;
    a.0.fetch_add(to_num("fetch_add", &args[1])?)
        .map(to_value)
        .map_err(|e| atomic_err("fetch_add", e))
}

fn atomic_cas(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("compare_exchange", args, kw, 3, &["self", "expected", "new"])?;
    let a = recv::<Atomic>(args, "Atomic")?;
    let (e, n) = (
        to_num("compare_exchange", &args[1])?,
        to_num("compare_exchange", &args[2])?,
    );
    a.0.compare_exchange(e, n)
        .map(Value::Bool)
        .map_err(|e| atomic_err("compare_exchange", e))
}
