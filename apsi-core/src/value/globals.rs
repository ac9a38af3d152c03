//! Module-level variables, shared by every thread without a global lock.
//!
//! Each global is its own slot. A slot the compiler proved is bound exactly
//! once (a top-level `def`/`struct`/`use`) is a write-once cell whose reads
//! are one atomic load; every other slot is a small read-write lock.
//!
//! A write-once slot can also be bound lazily (`Instr::DefFunc`,
//! `Instr::DefStruct`): it holds what the function or struct is made of,
//! and the first read makes it and binds it. Reads find the cell empty on
//! the path that would otherwise raise `NameError`, so bound slots pay
//! nothing for it.

use super::vlock::VLock as RwLock;
use crate::value::Value;
use std::sync::{Arc, OnceLock};

/// Makes a lazily bound slot's value, on its first read; `None` leaves the
/// slot unbound (what the compiler binds lazily is always made).
pub type MakeLazy = Box<dyn Fn() -> Option<Value> + Send + Sync>;

pub struct GlobalSlot {
    pub name: Arc<str>,
    /// Bound once: read with `get_const`.
    pub is_const: bool,
    konst: OnceLock<Value>,
    /// What a lazily bound write-once slot makes its value from.
    lazy: OnceLock<MakeLazy>,
    var: RwLock<Option<Value>>,
}

impl GlobalSlot {
    /// `name` may be an `Arc<str>` already held elsewhere (a compiled
    /// program's string table): then it is shared, not copied.
    pub fn new(name: impl Into<Arc<str>>, is_const: bool, initial: Option<Value>) -> GlobalSlot {
        let konst = OnceLock::new();
        let mut var = None;
        if let Some(v) = initial {
            if is_const {
                let _ = konst.set(v);
            } else {
                var = Some(v);
            }
        }
        GlobalSlot {
            name: name.into(),
            is_const,
            konst,
            lazy: OnceLock::new(),
            var: RwLock::new(var),
        }
    }

    /// A variable slot's value as its parts (`Value::words`), for the
    /// dispatch loop (no `Value` temporary).
    #[inline(always)]
    pub fn get_words(&self) -> Option<super::Words> {
        self.var.read().as_ref().map(Value::words)
    }

    #[inline(always)]
    pub fn get(&self) -> Option<Value> {
        if self.is_const {
            self.get_const_or_make().map(Value::dup_words)
        } else {
            self.var.read().as_ref().map(Value::dup_words)
        }
    }

    /// A write-once slot's value: one load, for the interpreter's fast
    /// paths. `None` when unbound, and also when bound lazily and not made
    /// yet: those paths then take the slow one, which makes it
    /// ([`get_const_or_make`](Self::get_const_or_make)).
    #[inline]
    pub fn get_const(&self) -> Option<&Value> {
        self.konst.get()
    }

    /// A write-once slot's value, made first if it was bound lazily.
    #[inline]
    pub fn get_const_or_make(&self) -> Option<&Value> {
        match self.konst.get() {
            Some(v) => Some(v),
            None => self.bind_lazy(),
        }
    }

    /// Binds a write-once slot to what `make` makes (a function, a
    /// struct: `vm/exec/slow.rs`), when it is first read
    /// ([`get_const_or_make`](Self::get_const_or_make), [`get`](Self::get)). A slot that is not
    /// write-once, or already bound, is bound at once (the compiler emits
    /// this only for write-once slots bound here).
    pub fn set_lazy(&self, make: MakeLazy) {
        if self.is_const && self.konst.get().is_none() && self.lazy.get().is_none() {
            let _ = self.lazy.set(make);
        } else if let Some(v) = make() {
            self.set(v);
        }
    }

    /// The first read of a lazily bound slot: makes the value and binds it
    /// (when two threads race, both get the one bound first).
    #[cold]
    #[inline(never)]
    fn bind_lazy(&self) -> Option<&Value> {
        let v = (self.lazy.get()?)()?;
        let _ = self.konst.set(v);
        self.konst.get()
    }

    /// Bind the slot. A write-once slot keeps its first value (the compiler
    /// only makes a slot write-once when a second binding cannot happen).
    #[inline]
    pub fn set(&self, v: Value) {
        if self.is_const {
            let _ = self.konst.set(v);
        } else {
            *self.var.write() = Some(v);
        }
    }

    /// `del x` at module level: unbind the slot; false if it was not bound.
    /// (The compiler never makes a deleted name's slot write-once.)
    pub fn unbind(&self) -> bool {
        if self.is_const {
            return false;
        }
        let old = self.var.write().take();
        old.is_some()
    }

    pub fn is_bound(&self) -> bool {
        if self.is_const {
            self.konst.get().is_some() || self.lazy.get().is_some()
        } else {
            self.var.read().is_some()
        }
    }
}
