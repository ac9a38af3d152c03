//! Module-level variables, shared by every thread without a global lock.
//!
//! Each global is its own slot. A slot the compiler proved is bound exactly
//! once (a top-level `def`/`struct`/`use`) is a write-once cell whose reads
//! are one atomic load; every other slot is a small read-write lock.

use super::vlock::VLock as RwLock;
use crate::value::Value;
use std::sync::{Arc, OnceLock};

pub struct GlobalSlot {
    pub name: Arc<str>,
    /// Bound once: read with `get_const`.
    pub is_const: bool,
    konst: OnceLock<Value>,
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
            self.konst.get().map(Value::dup_words)
        } else {
            self.var.read().as_ref().map(Value::dup_words)
        }
    }

    #[inline]
    pub fn get_const(&self) -> Option<&Value> {
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
            self.konst.get().is_some()
        } else {
            self.var.read().is_some()
        }
    }
}
