//! The semantics of Apsi's operators on the core values: arithmetic,
//! comparison, indexing, attributes, iteration (LANGUAGE.md §3–4).
//!
//! The VM inlines the hot cases (int + int, float * float, list[i]) and
//! calls these functions for everything else; they are the reference.
//!
//! Values from modules (`Value::Object`, e.g. tensors) take part through a
//! small attribute protocol, since `ApsiObject` has no operator hooks: an
//! object that answers `get_attr` for `__add__`, `__radd__`, `__sub__`, …,
//! `__neg__`, `__eq__`, `__lt__`, `__getitem__`, `__setitem__`,
//! `__contains__`, `__len__` or `__iter__` with a native function (or a
//! method bound to a native function) gets that operation. Such functions
//! must not call back into Apsi code (they run without an interpreter).

pub(crate) mod arith;
mod attr;
mod compare;
pub use crate::value::dunder;
mod annotations;
mod hash;
mod index;
pub(crate) mod inplace;
mod iter;
pub mod iters;
mod protocol;
pub use crate::value::reentry;
pub mod sets;
pub mod structs;

pub use annotations::accepts;
pub(crate) use arith::num;
pub use arith::{binary, unary};
pub use attr::{get_attr, set_attr, suggest};
pub(crate) use compare::num_cmp;
pub use compare::{compare, compare_value, eq, eq_or_same, list_position, order};
pub(crate) use hash::hash_builtin;
pub use hash::{hash_float, hash_int, hash_of, struct_hash};
pub use index::{del_index, get_index, set_index, slice_indices};
pub(crate) use iter::int_among_ints;
pub(crate) use iter::known_len;
pub(crate) use iter::range_position;
pub use iter::{contains, hash_key, iterate, len, len_with};
pub use protocol::{call_dunder, NoCaller};

/// Unwrapping for tests: `ErrorObj` has no `Debug`, so a failed
/// `VResult` shows the error's kind and message instead.
#[cfg(test)]
pub(crate) trait Must<T> {
    fn must(self) -> T;
}

#[cfg(test)]
impl<T> Must<T> for crate::value::VResult<T> {
    #[track_caller]
    fn must(self) -> T {
        match self {
            Ok(v) => v,
            Err(e) => panic!("unexpected error {}: {}", e.kind, e.message),
        }
    }
}

#[cfg(test)]
impl<T> Must<T> for Option<T> {
    #[track_caller]
    fn must(self) -> T {
        match self {
            Some(v) => v,
            None => panic!("unexpected none"),
        }
    }
}

#[cfg(test)]
impl<T> Must<T> for std::io::Result<T> {
    #[track_caller]
    fn must(self) -> T {
        match self {
            Ok(v) => v,
            Err(e) => panic!("unexpected I/O error {e}"),
        }
    }
}
