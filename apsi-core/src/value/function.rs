//! Functions defined in Apsi: closures over compiled code, and the cells
//! that captured variables live in.
//!
//! Invariants: a [`Closure`] is immutable once made (defaults and captured
//! cells are fixed at definition time); only the contents of its cells change,
//! behind a lock, so closures may be called from several threads at once.

use super::vlock::VLock as RwLock;
use crate::code::{Code, FuncProto};
use crate::value::Value;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;

/// A variable captured by an inner function (or declared `nonlocal`).
pub struct Cell(RwLock<Value>);

impl Drop for Cell {
    /// What the cell held goes through the trashcan (`trashcan.rs`): a
    /// chain of closures each capturing the last is not freed recursively.
    fn drop(&mut self) {
        let v = self.0.get_mut();
        if super::trashcan::frees_nested(v) {
            super::trashcan::release([std::mem::replace(v, Value::None)]);
        }
    }
}

impl Cell {
    pub fn new(v: Value) -> Cell {
        Cell(RwLock::new(v))
    }
    #[inline]
    pub fn get(&self) -> Value {
        self.0.read().clone()
    }
    /// The cell's value as its parts (`Value::words`), or `None` while it
    /// is unbound: the dispatch loop's read, with no `Value` temporary.
    #[inline(always)]
    pub fn bound_words(&self) -> Option<crate::value::Words> {
        let g = self.0.read();
        match &*g {
            Value::Unbound => None,
            v => Some(v.words()),
        }
    }
    #[inline]
    pub fn set(&self, v: Value) {
        *self.0.write() = v;
    }
    /// `del x` of a cell variable: leaves `Unbound` in the cell (reads of
    /// it raise `NameError`) and returns what was there.
    pub fn take_unbound(&self) -> Value {
        std::mem::replace(&mut *self.0.write(), Value::Unbound)
    }

    /// The value, read without the lock, for the cycle collector.
    ///
    /// # Safety
    /// Nothing writes the cell while the reference lives (solo mode at a
    /// safe point of the dispatch loop).
    pub(crate) unsafe fn peek(&self) -> &Value {
        // SAFETY: the caller's.
        unsafe { self.0.peek() }
    }
}

/// A function value: compiled code plus what it captured when defined.
pub struct Closure {
    /// What a call reads first, copied from `proto` (the call paths read
    /// them here, one load from the closure, instead of through the
    /// prototype): `proto.nparams`, `proto.simple`, `proto.keeps_first`,
    /// `proto.leaf`.
    pub nparams: u16,
    pub simple: bool,
    pub keeps_first: bool,
    pub leaf: bool,
    /// `proto`'s body once it has been read ([`Closure::code`]); null
    /// before. Stored with `Release` after the prototype's `OnceLock`
    /// handed it out, read with `Acquire`: plain moves on x86.
    code: AtomicPtr<Code>,
    /// The function's name (`<lambda>` for lambdas): its prototype's, shared.
    pub name: Arc<str>,
    pub proto: Arc<FuncProto>,
    /// Values of the defaulted positional parameters (the last `defaults.len()`).
    pub defaults: Box<[Value]>,
    /// Defaults of the keyword-only parameters, by position (`None`: required).
    pub kwdefaults: Box<[Option<Value>]>,
    /// Captured cells, in the order of `proto.free`.
    pub free: Box<[Arc<Cell>]>,
}

impl Closure {
    /// A closure of `proto` named as it is.
    pub fn new(
        proto: Arc<FuncProto>,
        defaults: Box<[Value]>,
        kwdefaults: Box<[Option<Value>]>,
        free: Box<[Arc<Cell>]>,
    ) -> Closure {
        Closure::named(proto.name.clone(), proto, defaults, kwdefaults, free)
    }

    /// A module body's closure (`<module>`: no parameters, defaults or
    /// captures).
    pub fn module_body(proto: Arc<FuncProto>) -> Closure {
        Closure::named("<module>".into(), proto, Box::new([]), Box::new([]), Box::new([]))
    }

    fn named(
        name: Arc<str>,
        proto: Arc<FuncProto>,
        defaults: Box<[Value]>,
        kwdefaults: Box<[Option<Value>]>,
        free: Box<[Arc<Cell>]>,
    ) -> Closure {
        Closure {
            nparams: proto.nparams,
            simple: proto.simple,
            keeps_first: proto.keeps_first,
            leaf: proto.leaf,
            code: AtomicPtr::new(std::ptr::null_mut()),
            name,
            proto,
            defaults,
            kwdefaults,
            free,
        }
    }

    /// The body (read from the program's bytes first, if it has not been).
    #[inline(always)]
    pub fn code(&self) -> &Code {
        let p = self.code.load(Ordering::Acquire);
        if p.is_null() {
            return self.code_first();
        }
        // SAFETY: `p` came from `proto.code`, whose `OnceLock` never changes
        // once set and which `self.proto` keeps alive as long as `self`.
        unsafe { &*p }
    }

    #[cold]
    #[inline(never)]
    fn code_first(&self) -> &Code {
        let c: &Arc<Code> = self.proto.code.arc();
        self.code.store(Arc::as_ptr(c) as *mut Code, Ordering::Release);
        c
    }
}
