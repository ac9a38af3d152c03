//! `channel(cap)`, `lock()`, `atomic(v)`: the Apsi objects around the cores.

use crate::atomic::{AtomicError, AtomicNum, Num};
use crate::chan::Chan;
use crate::util::{arity, bound, int_arg, native, object, recv};
use apsi_core::error::ErrorKind;
use apsi_core::vm::value::{err, ApsiObject, Caller, Kwargs, VResult, Value};
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
            ("__iter__", native("__iter__", chan_iter)),
            ("__next__", native("__next__", chan_next)),
            ("__len__", native("__len__", chan_len)),
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
        bound(this, chan_methods(), name)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub fn channel(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("channel", args, kw, 1, 1)?;
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
    arity("send", args, kw, 2, 2)?;
    let ch = recv::<Channel>(args, "Channel")?;
    ch.0.send(args[1].clone())
        .map_err(|_| err(ErrorKind::ValueError, "send on a closed channel"))?;
    Ok(Value::None)
}

/// `recv()`: the next item, or none once the channel is closed and empty.
fn chan_recv(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("recv", args, kw, 1, 1)?;
    Ok(recv::<Channel>(args, "Channel")?.0.recv().unwrap_or(Value::None))
}

fn chan_close(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("close", args, kw, 1, 1)?;
    recv::<Channel>(args, "Channel")?.0.close();
    Ok(Value::None)
}

fn chan_len(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("len", args, kw, 1, 1)?;
    Ok(Value::Int(recv::<Channel>(args, "Channel")?.0.len() as i64))
}

/// `for v in ch`: every item until the channel is closed and empty.
fn chan_iter(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("__iter__", args, kw, 1, 1)?;
    let ch = recv::<Channel>(args, "Channel")?;
    let mut items = Vec::new();
    while let Some(v) = ch.0.recv() {
        items.push(v);
    }
    Ok(Value::list(items))
}

/// `for v in ch` pulls one item at a time: `(item,)`, or `none` once the
/// channel is closed and empty (so the loop body runs while producers are
/// still sending, and a bounded channel never has to hold everything).
fn chan_next(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("__next__", args, kw, 1, 1)?;
    let ch = recv::<Channel>(args, "Channel")?;
    Ok(match ch.0.recv() {
        Some(v) => Value::tuple(vec![v]),
        None => Value::None,
    })
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
            ("__enter__", native("__enter__", lock_enter)),
            ("__exit__", native("__exit__", lock_exit)),
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
        bound(this, lock_methods(), name)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
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
            apsi_core::par::pool::blocking(|| {
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
    arity("lock", args, kw, 0, 0)?;
    Ok(object(Lock::new()))
}

fn lock_acquire(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("acquire", args, kw, 1, 1)?;
    recv::<Lock>(args, "Lock")?.acquire()?;
    Ok(Value::None)
}

fn lock_release(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("release", args, kw, 1, 1)?;
    recv::<Lock>(args, "Lock")?.release()?;
    Ok(Value::None)
}

fn lock_locked(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("locked", args, kw, 1, 1)?;
    Ok(Value::Bool(recv::<Lock>(args, "Lock")?.owner.lock().is_some()))
}

fn lock_enter(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("__enter__", args, kw, 1, 1)?;
    recv::<Lock>(args, "Lock")?.acquire()?;
    Ok(args[0].clone())
}

/// `__exit__(kind, error, trace)`: release; never swallows the error.
fn lock_exit(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("__exit__", args, kw, 1, 4)?;
    recv::<Lock>(args, "Lock")?.release()?;
    Ok(Value::Bool(false))
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

fn atomic_err(fname: &str, e: AtomicError) -> apsi_core::vm::value::Exc {
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
        format!("atomic({})", apsi_core::format::repr_of(&to_value(self.0.load())))
    }
    fn get_attr(&self, this: &Value, name: &str) -> Option<VResult<Value>> {
        bound(this, atomic_methods(), name)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub fn atomic(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("atomic", args, kw, 0, 1)?;
    let n = match args.first() {
        Some(v) => to_num("atomic", v)?,
        None => Num::Int(0),
    };
    Ok(object(Atomic(AtomicNum::new(n))))
}

fn atomic_load(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("load", args, kw, 1, 1)?;
    Ok(to_value(recv::<Atomic>(args, "Atomic")?.0.load()))
}

fn atomic_store(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("store", args, kw, 2, 2)?;
    let a = recv::<Atomic>(args, "Atomic")?;
    a.0.store(to_num("store", &args[1])?)
        .map_err(|e| atomic_err("store", e))?;
    Ok(Value::None)
}

fn atomic_add(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("add", args, kw, 2, 2)?;
    let a = recv::<Atomic>(args, "Atomic")?;
    a.0.fetch_add(to_num("add", &args[1])?)
        .map_err(|e| atomic_err("add", e))?;
    Ok(Value::None)
}

fn atomic_fetch_add(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("fetch_add", args, kw, 2, 2)?;
    let a = recv::<Atomic>(args, "Atomic")?;
    a.0.fetch_add(to_num("fetch_add", &args[1])?)
        .map(to_value)
        .map_err(|e| atomic_err("fetch_add", e))
}

fn atomic_cas(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    arity("compare_exchange", args, kw, 3, 3)?;
    let a = recv::<Atomic>(args, "Atomic")?;
    let (e, n) = (
        to_num("compare_exchange", &args[1])?,
        to_num("compare_exchange", &args[2])?,
    );
    a.0.compare_exchange(e, n)
        .map(Value::Bool)
        .map_err(|e| atomic_err("compare_exchange", e))
}
