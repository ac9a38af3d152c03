//! Built-in methods by number, for the method-call inline cache.
//!
//! `xs.append(v)`, `d.get(k)`, `s.strip()`: the dispatch loop calls a
//! built-in receiver's method without looking its name up when the call
//! site's cache (`value/ic.rs`, `Hit::Builtin`) says which one it is. A
//! cache word is keyed by a number standing for the receiver's type
//! ([`receiver_key`], taken from the top of the id range that
//! `StructType::new_id` never hands out) and holds the method's position in
//! that type's name list (`lists::LIST_NAMES`…); [`method_at`] turns the
//! pair back into the function.
//!
//! Invariant: `method_at(key, i)` is exactly what `super::method` gives for
//! the `i`-th name of the type's list, so a hit calls what the full lookup
//! would have called.

use super::{bytes, dicts, lists, ranges, sets, strs};
use crate::value::{NativeFnPtr, Value};
use std::sync::OnceLock;

/// The first of the ids kept for built-in receivers (`StructType::new_id`
/// stops below it).
pub const FIRST_KEY: u32 = crate::value::ic::FIRST_RECEIVER_KEY;

const STR: u32 = FIRST_KEY;
const LIST: u32 = FIRST_KEY + 1;
const TUPLE: u32 = FIRST_KEY + 2;
const DICT: u32 = FIRST_KEY + 3;
const BYTES: u32 = FIRST_KEY + 4;
const SET: u32 = FIRST_KEY + 5;
const RANGE: u32 = FIRST_KEY + 6;
const KINDS: usize = 7;

/// `xs.append(v)`'s key and number: the dispatch loop pushes in place.
pub const LIST_APPEND: (u32, usize) = (LIST, 0);
const _: () = assert!(matches!(lists::LIST_NAMES[0].as_bytes(), b"append"));

/// `xs.remove(x)`'s key and number: the dispatch loop scans with the
/// elements' `__eq__` as frames when `x` is a struct.
pub const LIST_REMOVE: (u32, usize) = (LIST, 4);
const _: () = assert!(matches!(lists::LIST_NAMES[4].as_bytes(), b"remove"));

/// `d.get(k)`'s key and number: the dispatch loop looks a string or int
/// key up in place.
pub const DICT_GET: (u32, usize) = (DICT, 3);
const _: () = assert!(matches!(super::dicts::NAMES[3].as_bytes(), b"get"));

/// The cache key of a built-in receiver's type, `None` for any other value.
#[inline(always)]
pub fn receiver_key(v: &Value) -> Option<u32> {
    Some(match v {
        Value::Str(_) => STR,
        Value::List(_) => LIST,
        Value::Tuple(_) => TUPLE,
        Value::Dict(_) => DICT,
        Value::Bytes(_) => BYTES,
        Value::Set(_) => SET,
        Value::Range(_) => RANGE,
        _ => return None,
    })
}

/// The method names of the built-in type `key` (its numbering).
pub(crate) fn names(key: u32) -> &'static [&'static str] {
    match key {
        STR => strs::NAMES,
        LIST => lists::LIST_NAMES,
        TUPLE => lists::TUPLE_NAMES,
        DICT => dicts::NAMES,
        BYTES => bytes::NAMES,
        SET => sets::NAMES,
        RANGE => ranges::NAMES,
        _ => &[],
    }
}

/// The method `name` of the built-in type `key`, by its name.
pub(crate) fn lookup(key: u32, name: &str) -> Option<NativeFnPtr> {
    match key {
        STR => strs::method(name),
        LIST => lists::list_method(name),
        TUPLE => lists::tuple_method(name),
        DICT => dicts::method(name),
        BYTES => bytes::method(name),
        SET => sets::method(name),
        RANGE => ranges::method(name),
        _ => None,
    }
}

/// The receiver's key and the method's number, when `name` is one of the
/// receiver type's listed methods.
pub fn slot_of(receiver: &Value, name: &str) -> Option<(u32, usize)> {
    let key = receiver_key(receiver)?;
    let i = names(key).iter().position(|n| *n == name)?;
    lookup(key, name)?;
    Some((key, i))
}

/// The method numbered `i` of the built-in type `key`.
#[inline]
pub fn method_at(key: u32, i: usize) -> Option<NativeFnPtr> {
    static TABLES: [OnceLock<Vec<Option<NativeFnPtr>>>; KINDS] = [const { OnceLock::new() }; KINDS];
    let k = key.checked_sub(FIRST_KEY)? as usize;
    let table = TABLES
        .get(k)?
        .get_or_init(|| names(key).iter().map(|n| lookup(key, n)).collect());
    *table.get(i)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_is_a_method_and_numbers_round_trip() {
        let receivers = [
            Value::str("s"),
            Value::list(vec![]),
            Value::tuple(vec![]),
            Value::dict(Default::default()),
            Value::bytes(vec![]),
            Value::set(Default::default()),
            Value::Range(std::sync::Arc::new(crate::value::RangeObj {
                start: 0,
                stop: 3,
                step: 1,
            })),
        ];
        for r in &receivers {
            let key = receiver_key(r).unwrap();
            for (i, name) in names(key).iter().enumerate() {
                assert_eq!(slot_of(r, name), Some((key, i)), "{name}");
                assert!(method_at(key, i).is_some(), "{name}");
                assert!(super::super::method(r, name).is_some(), "{name}");
            }
            assert_eq!(slot_of(r, "no_such_method"), None);
            assert!(method_at(key, names(key).len()).is_none());
        }
        assert_eq!(receiver_key(&Value::Int(1)), None);
        assert!(method_at(FIRST_KEY - 1, 0).is_none());
    }

    #[test]
    fn a_numbered_method_is_the_named_one() {
        use crate::ops::NoCaller;
        let xs = Value::list(vec![Value::Int(1)]);
        let (key, i) = slot_of(&xs, "append").unwrap();
        method_at(key, i).unwrap()(&mut NoCaller, &[xs.clone(), Value::Int(2)], &[]).unwrap();
        let (key, i) = slot_of(&xs, "pop").unwrap();
        let popped = method_at(key, i).unwrap()(&mut NoCaller, std::slice::from_ref(&xs), &[]).unwrap();
        assert!(matches!(popped, Value::Int(2)));
        let (key, i) = slot_of(&xs, "pop").unwrap();
        let popped = method_at(key, i).unwrap()(&mut NoCaller, std::slice::from_ref(&xs), &[]).unwrap();
        assert!(matches!(popped, Value::Int(1)));
    }
}
