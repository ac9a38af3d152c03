//! Calling Apsi code from operations that have no `Caller` at hand: the
//! operator methods of structs (`__eq__`, `__hash__`, `__lt__`, `__str__`,
//! `__bool__`, `__len__`, …) reached from `ops`, dict and set lookups,
//! printing and truthiness.
//!
//! The operations sit below the executor, so they cannot name it: the
//! executor installs how to run a function here ([`set_hook`], done by
//! `vm::reentry` when a thread first runs code of a runtime), and
//! operations call through [`call`] / [`Reentrant`]. Before any runtime
//! exists only native functions can be called ([`NoCaller`]).

use crate::error::ErrorKind;
use crate::value::{err, Caller, Kwargs, VResult, Value};
use std::sync::OnceLock;

/// How the executor runs Apsi code for an operation.
pub struct ReentryHook {
    /// `f(*args, **kwargs)` on a spare executor of this thread's runtime.
    pub call: fn(&Value, &[Value], Kwargs) -> VResult<Value>,
    /// Print through this thread's runtime.
    pub write_out: fn(&str) -> VResult<()>,
}

static HOOK: OnceLock<ReentryHook> = OnceLock::new();

/// Installs the executor's way of running code (the first one stays).
pub fn set_hook(hook: ReentryHook) {
    let _ = HOOK.set(hook);
}

/// Call `f(*args, **kwargs)` from an operation.
pub fn call(f: &Value, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
    match HOOK.get() {
        Some(h) => (h.call)(f, args, kwargs),
        None => NoCaller.call(f, args, kwargs),
    }
}

/// A `Caller` that runs everything through [`call`], for Rust code that
/// needs one to pass on.
pub struct Reentrant;

impl Caller for Reentrant {
    fn call(&mut self, f: &Value, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
        call(f, args, kwargs)
    }
    fn write_out(&mut self, text: &str) -> VResult<()> {
        match HOOK.get() {
            Some(h) => (h.write_out)(text),
            None => Err(err(ErrorKind::IOError, "this operation cannot print")),
        }
    }
}

/// A `Caller` for native code that runs without an interpreter: it can call
/// native functions and methods bound to them, nothing written in Apsi.
pub struct NoCaller;

impl Caller for NoCaller {
    fn call(&mut self, f: &Value, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
        match f {
            Value::Native(n) => n.call(self, args, kwargs),
            Value::BoundMethod(m) => {
                let mut full = Vec::with_capacity(args.len() + 1);
                full.push(m.receiver.clone());
                full.extend_from_slice(args);
                self.call(&m.func, &full, kwargs)
            }
            other => Err(err(
                ErrorKind::TypeError,
                format!("a {} cannot be called from inside this operation", other.type_name()),
            )),
        }
    }
    fn write_out(&mut self, _text: &str) -> VResult<()> {
        Err(err(ErrorKind::IOError, "this operation cannot print"))
    }
}
