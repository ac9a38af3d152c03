//! Inline caches for attribute reads, writes and method calls on structs
//! (the simplest form of CPython 3.11's specialising interpreter, PEP 659).
//!
//! A code object holds a cache for each instruction that looks a name up
//! on a struct (`Code::ic`, indexed by pc: `code::InlineCaches`): `WAYS`
//! words, each saying "on a struct of type id T, this name is field i" (or
//! "method i" in the type's method map, or a static method or constant of
//! the type), so a site that sees a few types stays a hit. The dispatch loop tries the word first
//! and, on a hit, reads the field or calls the method without looking the
//! name up; a miss runs the full lookup, which fills the word.
//!
//! Invariants:
//! - A struct type's fields and methods never change after its `struct`
//!   statement ran (`ops/structs.rs`), and type ids are never reused
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
    /// At an `a op= b` site: the type's in-place operator method (`__iadd__`),
    /// the `i`-th entry of its methods (a `NotImplemented` from it goes on
    /// with `a op b`). A plain `Method` there is the binary one (`__add__`).
    MethodInplace(usize),
    /// On the struct type itself: the `i`-th entry of its static methods.
    /// On a module (keyed by `ModuleObj::id`): its `i`-th attribute.
    Static(usize),
    /// On the struct type or an instance: the `i`-th of its constants
    /// (neither a field nor any kind of method).
    Const(usize),
    /// On a built-in receiver (keyed by `builtins::method_slots::receiver_key`):
    /// the `i`-th of that type's methods.
    Builtin(usize),
    /// At a `super().name(…)` site, on an instance of the type: what
    /// `ops::structs::super_slot` found (a method of an ancestor, by depth
    /// and index, or the implicit `__init__` of a root struct).
    Super(usize),
}

const SHIFT: u32 = 29;
const INDEX: u32 = (1 << SHIFT) - 1;
const FIELD: u32 = 1;
const METHOD: u32 = 2;
const STATIC: u32 = 3;
const CONST: u32 = 4;
const METHOD_INPLACE: u32 = 5;
const BUILTIN: u32 = 6;
const SUPER: u32 = 7;

/// The first of the ids kept for built-in receivers' method caches
/// (`builtins::method_slots`); `StructType::new_id` stops below it.
pub const FIRST_RECEIVER_KEY: u32 = u32::MAX - 15;

/// How many struct types one instruction remembers (a polymorphic cache:
/// `t.run()` over a list of four kinds of task stays a hit).
pub const WAYS: usize = 4;

/// One instruction's cache: `WAYS` words, each `(type id << 32) | kind << 29 | index`;
/// 0 is empty.
#[derive(Default)]
pub struct AttrCache([AtomicU64; WAYS]);

#[inline(always)]
fn decode(w: u64) -> Option<Hit> {
    let lo = w as u32;
    let i = (lo & INDEX) as usize;
    match lo >> SHIFT {
        FIELD => Some(Hit::Field(i)),
        METHOD => Some(Hit::Method(i)),
        STATIC => Some(Hit::Static(i)),
        CONST => Some(Hit::Const(i)),
        METHOD_INPLACE => Some(Hit::MethodInplace(i)),
        BUILTIN => Some(Hit::Builtin(i)),
        SUPER => Some(Hit::Super(i)),
        _ => None,
    }
}

impl AttrCache {
    /// What the cache says for the struct type `ty`, if it knows that type.
    #[inline(always)]
    pub fn get(&self, ty: u32) -> Option<Hit> {
        let w = self.0[0].load(Ordering::Relaxed);
        if (w >> 32) as u32 == ty {
            return decode(w);
        }
        self.get_other(ty)
    }

    /// `Some(i)` when the cache says the name is field `i` of type `ty`:
    /// the first word is tested with one comparison.
    #[inline(always)]
    pub fn field(&self, ty: u32) -> Option<usize> {
        self.index_of(ty, FIELD)
    }

    /// `Some(i)` when the cache says the name is method `i` of type `ty`.
    #[inline(always)]
    pub fn method(&self, ty: u32) -> Option<usize> {
        self.index_of(ty, METHOD)
    }

    /// `Some(i)` when the cache says the name is built-in method `i` of
    /// the receiver type `key`.
    #[inline(always)]
    pub fn builtin(&self, key: u32) -> Option<usize> {
        self.index_of(key, BUILTIN)
    }

    /// `Some(x)` when the cache holds a `super().name` entry for type `ty`.
    #[inline(always)]
    pub fn super_slot(&self, ty: u32) -> Option<usize> {
        self.index_of(ty, SUPER)
    }

    /// The index of an entry of `kind` (`FIELD`, `METHOD`, `BUILTIN`, `SUPER`) for `ty`.
    #[inline(always)]
    fn index_of(&self, ty: u32, kind: u32) -> Option<usize> {
        let w = self.0[0].load(Ordering::Relaxed);
        if (w >> SHIFT) == ((ty as u64) << (32 - SHIFT)) | kind as u64 {
            return Some((w as u32 & INDEX) as usize);
        }
        match (self.get_other(ty)?, kind) {
            (Hit::Field(i), FIELD) | (Hit::Method(i), METHOD) | (Hit::Builtin(i), BUILTIN) | (Hit::Super(i), SUPER) => {
                Some(i)
            }
            _ => None,
        }
    }

    #[inline(never)]
    fn get_other(&self, ty: u32) -> Option<Hit> {
        for e in &self.0[1..] {
            let w = e.load(Ordering::Relaxed);
            if (w >> 32) as u32 == ty {
                return decode(w);
            }
        }
        None
    }

    /// Remember `hit` for the struct type `ty` (nothing for id 0 or an
    /// index too large to encode): in the word that holds `ty` already,
    /// else in an empty one, else in place of the last.
    #[inline]
    pub fn set(&self, ty: u32, hit: Hit) {
        let (kind, i) = match hit {
            Hit::Field(i) => (FIELD, i),
            Hit::Method(i) => (METHOD, i),
            Hit::Static(i) => (STATIC, i),
            Hit::Const(i) => (CONST, i),
            Hit::MethodInplace(i) => (METHOD_INPLACE, i),
            Hit::Builtin(i) => (BUILTIN, i),
            Hit::Super(i) => (SUPER, i),
        };
        if ty == 0 || i > INDEX as usize {
            return;
        }
        let w = ((ty as u64) << 32) | ((kind << SHIFT) | i as u32) as u64;
        let mut slot = WAYS - 1;
        for (j, e) in self.0.iter().enumerate() {
            let old = e.load(Ordering::Relaxed);
            if old == 0 || (old >> 32) as u32 == ty {
                slot = j;
                break;
            }
        }
        self.0[slot].store(w, Ordering::Relaxed);
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
        assert_eq!(c.get(7), Some(Hit::Field(3)), "a second type takes a second word");
        c.set(7, Hit::Const(2));
        assert_eq!(c.get(7), Some(Hit::Const(2)), "a type's word is rewritten in place");
        c.set(7, Hit::MethodInplace(4));
        assert_eq!(c.get(7), Some(Hit::MethodInplace(4)));
        assert_eq!((c.field(7), c.method(7)), (None, None), "an in-place method is neither");
        c.set(7, Hit::Field(5));
        assert_eq!(
            (c.field(7), c.method(7)),
            (Some(5), None),
            "the first word, one comparison"
        );
        assert_eq!((c.field(8), c.method(8)), (None, Some(0)), "a later word");
        assert_eq!(c.field(9), None);
    }

    #[test]
    fn a_fifth_type_replaces_the_last_word() {
        let c = AttrCache::default();
        for t in 1..=WAYS as u32 {
            c.set(t, Hit::Field(t as usize));
        }
        for t in 1..=WAYS as u32 {
            assert_eq!(c.get(t), Some(Hit::Field(t as usize)));
        }
        c.set(99, Hit::Static(5));
        assert_eq!(c.get(99), Some(Hit::Static(5)));
        assert_eq!(c.get(1), Some(Hit::Field(1)), "the first words stay");
        assert_eq!(c.get(WAYS as u32), None);
    }

    #[test]
    fn id_zero_and_huge_indices_are_never_stored() {
        let c = AttrCache::default();
        c.set(0, Hit::Field(1));
        assert_eq!(c.get(0), None);
        c.set(5, Hit::Method(1 << 29));
        assert_eq!(c.get(5), None);
        c.set(u32::MAX, Hit::Method((1 << 29) - 1));
        assert_eq!(c.get(u32::MAX), Some(Hit::Method((1 << 29) - 1)));
    }
}
