//! Inline caches for attribute reads, writes and method calls on structs
//! (the simplest form of CPython 3.11's specialising interpreter, PEP 659).
//!
//! A code object holds one cache word per instruction (`Code::ic`, indexed
//! by pc; empty for code without `GetAttr`, `SetAttr` or `CallMethod`). A
//! word says "on a struct of type id T, this name is field i" (or "method
//! i" in the type's method map). The dispatch loop tries the word first
//! and, on a hit, reads the field or calls the method without looking the
//! name up; a miss runs the full lookup, which fills the word.
//!
//! Invariants:
//! - A struct type's fields and methods never change after its `struct`
//!   statement ran (`vm/structs.rs`), and type ids are never reused
//!   (`StructType::new_id`; id 0 is never stored), so an entry stays true
//!   for as long as anything can present its id.
//! - A word is read and written whole, with one relaxed atomic access:
//!   threads running the same code may overwrite each other's entries but
//!   never see half of one. Relaxed is enough: an entry describes an
//!   immutable type, and whoever presents that type's id already has it.
//! - A hit is only a shortcut: every entry names what the full lookup
//!   would find first for that type (a field shadows a method).

use std::sync::atomic::{AtomicU64, Ordering};

/// What a cache word knows about a name on one struct type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    /// The name is the type's field `i`.
    Field(usize),
    /// The name is not a field; it is the `i`-th entry of the type's methods.
    Method(usize),
}

const FIELD: u32 = 1 << 30;
const METHOD: u32 = 2 << 30;
const INDEX: u32 = (1 << 30) - 1;

/// One instruction's cache word: `(type id << 32) | kind | index`; 0 is empty.
#[derive(Default)]
pub struct AttrCache(AtomicU64);

impl AttrCache {
    /// What the word says for the struct type `ty`, if it is about that type.
    #[inline(always)]
    pub fn get(&self, ty: u32) -> Option<Hit> {
        let w = self.0.load(Ordering::Relaxed);
        if (w >> 32) as u32 != ty {
            return None;
        }
        let lo = w as u32;
        let i = (lo & INDEX) as usize;
        match lo & !INDEX {
            FIELD => Some(Hit::Field(i)),
            METHOD => Some(Hit::Method(i)),
            _ => None,
        }
    }

    /// Remember `hit` for the struct type `ty` (nothing for id 0 or an
    /// index too large to encode).
    #[inline]
    pub fn set(&self, ty: u32, hit: Hit) {
        let (kind, i) = match hit {
            Hit::Field(i) => (FIELD, i),
            Hit::Method(i) => (METHOD, i),
        };
        if ty == 0 || i > INDEX as usize {
            return;
        }
        self.0
            .store(((ty as u64) << 32) | (kind | i as u32) as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_answers_only_for_its_type() {
        let c = AttrCache::default();
        assert_eq!(c.get(7), None);
        assert_eq!(c.get(0), None, "an empty word is no entry, even for id 0");
        c.set(7, Hit::Field(3));
        assert_eq!(c.get(7), Some(Hit::Field(3)));
        assert_eq!(c.get(8), None);
        c.set(8, Hit::Method(0));
        assert_eq!(c.get(8), Some(Hit::Method(0)));
        assert_eq!(c.get(7), None, "a new entry replaces the old one");
    }

    #[test]
    fn id_zero_and_huge_indices_are_never_stored() {
        let c = AttrCache::default();
        c.set(0, Hit::Field(1));
        assert_eq!(c.get(0), None);
        c.set(5, Hit::Method(1 << 30));
        assert_eq!(c.get(5), None);
        c.set(u32::MAX, Hit::Method((1 << 30) - 1));
        assert_eq!(c.get(u32::MAX), Some(Hit::Method((1 << 30) - 1)));
    }
}
