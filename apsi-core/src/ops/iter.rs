//! Iteration, membership, `len` and hashing.

use super::arith::{num, Num};
use super::compare::{eq, eq_or_same};
use super::protocol::call_dunder;
use crate::error::ErrorKind;
use crate::value::{err, Caller, HashKey, RangeObj, VResult, Value};

/// The most elements materialising a range may create.
const MAX_MATERIALISE: i64 = 1 << 28;

fn range_items(r: &RangeObj) -> VResult<Vec<Value>> {
    let n = r.len();
    if n > MAX_MATERIALISE {
        return Err(err(
            ErrorKind::OverflowError,
            format!("a range of {n} elements is too large to turn into a list"),
        ));
    }
    let mut out = Vec::with_capacity(n as usize);
    let mut x = r.start as i128;
    for _ in 0..n {
        out.push(Value::Int(x as i64));
        x += r.step as i128;
    }
    Ok(out)
}

fn not_iterable(v: &Value) -> crate::value::Exc {
    err(
        ErrorKind::TypeError,
        format!("'{}' object is not iterable", v.type_name()),
    )
}

/// The elements of any iterable that needs no interpreter to produce them.
pub(crate) fn iterate_plain(v: &Value) -> VResult<Vec<Value>> {
    match v {
        Value::List(l) => Ok(l.items.read().clone()),
        Value::Tuple(t) => Ok(t.0.to_vec()),
        Value::Range(r) => range_items(r),
        Value::Str(s) => Ok(Value::chars_of(s)),
        Value::Dict(d) => Ok(d.map.read().keys().map(|k| k.value().clone()).collect()),
        Value::Bytes(b) => Ok(b.0.iter().map(|&x| Value::Int(x as i64)).collect()),
        Value::Set(s) => Ok(super::sets::members(s)),
        Value::Object(o) if o.0.protocols().iter || o.0.protocols().next => {
            super::iters::collect_lazy(&mut super::NoCaller, v)
        }
        Value::Object(_) => match call_dunder(v, "__iter__", &[]) {
            Some(r) => {
                let inner = r?;
                if matches!(inner, Value::Object(_)) {
                    return Err(not_iterable(v));
                }
                iterate_plain(&inner)
            }
            None => Err(not_iterable(v)),
        },
        other => Err(not_iterable(other)),
    }
}

/// Materialises any iterable: lists, tuples, ranges, strings (characters),
/// dicts (keys), generators, iterators, structs with `__iter__`, and module objects through their `__iter__` hook (a
/// function returning a list or tuple of the elements; it is called through
/// `caller`, so it may be written in Apsi).
pub fn iterate(caller: &mut dyn Caller, v: &Value) -> VResult<Vec<Value>> {
    // Generators, iterators and structs are pulled item by item (`iters`).
    if super::iters::is_lazy(v) {
        return super::iters::collect_lazy(caller, v);
    }
    if let Value::Object(o) = v {
        if o.0.protocols().iter {
            return super::iters::collect_lazy(caller, v);
        }
        let hook = o.0.get_attr(v, "__iter__").ok_or_else(|| not_iterable(v))??;
        let inner = caller.call(&hook, &[], &[])?;
        if matches!(inner, Value::Object(_)) {
            return Err(not_iterable(v));
        }
        return iterate_plain(&inner);
    }
    iterate_plain(v)
}

/// `item in container`.
/// `item in items` when `item` is an int and every item is one: `None`
/// when either is not so (the general scan decides then).
#[inline]
pub(crate) fn int_among_ints(item: &Value, items: &[Value]) -> Option<bool> {
    let Value::Int(n) = *item else { return None };
    for x in items {
        match *x {
            Value::Int(y) if y == n => return Some(true),
            Value::Int(_) => {}
            _ => return None,
        }
    }
    Some(false)
}

/// Where `x` stands in range `r` (its index), when `x` is a number equal
/// to one of its items (past `i64::MAX` in a range that long): `x in r`, `r.index(x)` and `r.count(x)` work it
/// out from start, stop and step, without walking the items.
pub(crate) fn range_position(r: &RangeObj, x: &Value) -> Option<i128> {
    let i = match num(x) {
        Some(Num::I(i)) => i as i128,
        Some(Num::F(f)) if f.fract() == 0.0 && f.abs() < 9.2e18 => f as i128,
        _ => return None,
    };
    let (start, stop, step) = (r.start as i128, r.stop as i128, r.step as i128);
    let inside = if step > 0 {
        i >= start && i < stop
    } else {
        i <= start && i > stop
    };
    if !inside || (i - start) % step != 0 {
        return None;
    }
    Some((i - start) / step)
}

pub fn contains(container: &Value, item: &Value) -> VResult<bool> {
    if let Value::Struct(_) = container {
        if let Some(r) = super::dunder::contains(container, item) {
            return r;
        }
        let items = iterate(&mut crate::ops::reentry::Reentrant, container)?;
        for x in &items {
            if eq_or_same(x, item)? {
                return Ok(true);
            }
        }
        return Ok(false);
    }
    match container {
        Value::Str(s) => match item {
            Value::Str(sub) => Ok(s.as_str().contains(sub.as_str())),
            other => Err(err(
                ErrorKind::TypeError,
                format!("'in <str>' requires a str as left operand, not {}", other.type_name()),
            )),
        },
        Value::List(l) => {
            // An int among ints: compared by payload (the common case).
            if let Some(found) = int_among_ints(item, &l.items.read()) {
                return Ok(found);
            }
            // Plain values compare without Apsi code: scanned in place,
            // under the read lock; from the first other value on, a copy.
            let plain = |v: &Value| {
                matches!(
                    v,
                    Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_)
                )
            };
            let from = {
                let g = l.items.read();
                let mut i = 0;
                if plain(item) {
                    while let Some(x) = g.get(i) {
                        if !plain(x) {
                            break;
                        }
                        if eq(x, item)? {
                            return Ok(true);
                        }
                        i += 1;
                    }
                }
                i
            };
            // From the first other value on, Apsi code may run: the list
            // is scanned as it is at each step (as CPython does).
            Ok(super::list_position(l, item, from, usize::MAX)?.is_some())
        }
        Value::Tuple(t) => {
            if let Some(found) = int_among_ints(item, &t.0) {
                return Ok(found);
            }
            for x in t.0.iter() {
                if eq_or_same(x, item)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Value::Dict(d) => {
            let key = HashKey::new(item.clone())?;
            Ok(d.map.read().contains_key(&key))
        }
        Value::Bytes(b) => crate::builtins::bytes_contains(&b.0, item),
        Value::Set(s) => {
            let key = HashKey::new(item.clone())?;
            Ok(s.map.read().contains_key(&key))
        }
        Value::Range(r) => Ok(range_position(r, item).is_some()),
        Value::Object(_) => match call_dunder(container, "__contains__", std::slice::from_ref(item)) {
            Some(r) => r?.truthy(),
            None => Err(err(
                ErrorKind::TypeError,
                format!("argument of type '{}' is not a container", container.type_name()),
            )),
        },
        other => Err(err(
            ErrorKind::TypeError,
            format!("argument of type '{}' is not a container", other.type_name()),
        )),
    }
}

fn no_len(v: &Value) -> crate::value::Exc {
    err(
        ErrorKind::TypeError,
        format!("object of type '{}' has no len()", v.type_name()),
    )
}

/// The length of a built-in string, container, range or bytes, which no
/// Apsi code decides (`None` for anything else); a range's may pass
/// `i64` (`range(2**63 + 1)`).
fn builtin_len(v: &Value) -> Option<i128> {
    Some(match v {
        Value::Str(s) => s.char_len() as i128,
        Value::List(l) => l.items.read().len() as i128,
        Value::Tuple(t) => t.0.len() as i128,
        Value::Dict(d) => d.map.read().len() as i128,
        Value::Set(s) => s.map.read().len() as i128,
        Value::Range(r) => r.len_wide(),
        Value::Bytes(b) => b.0.len() as i128,
        _ => return None,
    })
}

/// How many items iterating `v` yields when that is known without running
/// any code (a built-in string, container, range or bytes, or the rows
/// left of a loop's `zip`/`enumerate`/`d.items()`); 0 otherwise.
/// A hint for sizing what is built from them, never a promise.
pub fn known_len(v: &Value) -> usize {
    if let Some(n) = builtin_len(v) {
        return usize::try_from(n.max(0)).unwrap_or(usize::MAX);
    }
    match v {
        Value::Object(o) => {
            o.0.as_any()
                .downcast_ref::<super::iters::IterObj>()
                .and_then(super::iters::IterObj::rows_left)
                .unwrap_or(0)
        }
        _ => 0,
    }
}

/// `len(v)`: characters of a string, elements of a container; a module
/// object through its `__len__` hook.
pub fn len(v: &Value) -> VResult<i64> {
    if let Value::Struct(_) = v {
        if let Some(r) = super::dunder::len(v) {
            return r;
        }
    }
    if let Some(n) = builtin_len(v) {
        // Only a range can be that long.
        return i64::try_from(n).map_err(|_| {
            err(
                ErrorKind::OverflowError,
                "range has more than 2**63 - 1 items: too many for len()",
            )
        });
    }
    match v {
        Value::Object(o) if o.0.protocols().len => o.0.len(v),
        Value::Object(_) => match call_dunder(v, "__len__", &[]) {
            Some(r) => match r? {
                Value::Int(n) => Ok(n),
                _ => Err(no_len(v)),
            },
            None => Err(no_len(v)),
        },
        other => Err(no_len(other)),
    }
}

/// Like [`len`], but a module object's `__len__` may be written in Apsi.
pub fn len_with(caller: &mut dyn Caller, v: &Value) -> VResult<i64> {
    if let Value::Object(o) = v {
        if o.0.protocols().len {
            return o.0.len(v);
        }
        let hook = o.0.get_attr(v, "__len__").ok_or_else(|| no_len(v))??;
        return match caller.call(&hook, &[], &[])? {
            Value::Int(n) => Ok(n),
            _ => Err(no_len(v)),
        };
    }
    len(v)
}

/// The dict key for `v`; lists and dicts are unhashable (`TypeError`).
pub fn hash_key(v: &Value) -> VResult<HashKey> {
    HashKey::new(v.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use crate::ops::NoCaller;
    use std::sync::Arc;
    use Value::Int as I;

    #[test]
    fn iterate_everything() {
        let r = Value::Range(Arc::new(RangeObj {
            start: 10,
            stop: 0,
            step: -3,
        }));
        let got = iterate(&mut NoCaller, &r).must();
        assert_eq!(crate::format::str_of(&Value::list(got)), "[10, 7, 4, 1]");
        let got = iterate(&mut NoCaller, &Value::str("hé")).must();
        assert_eq!(crate::format::str_of(&Value::list(got)), "['h', 'é']");
        let e = iterate(&mut NoCaller, &I(3)).unwrap_err();
        assert_eq!(e.message, "'int' object is not iterable");
        let huge = Value::Range(Arc::new(RangeObj {
            start: 0,
            stop: i64::MAX,
            step: 1,
        }));
        assert_eq!(
            iterate(&mut NoCaller, &huge).unwrap_err().kind,
            ErrorKind::OverflowError
        );
    }

    #[test]
    fn membership() {
        assert!(contains(&Value::str("abc"), &Value::str("b")).must());
        assert!(contains(&Value::str("abc"), &Value::str("")).must());
        assert_eq!(
            contains(&Value::str("abc"), &I(1)).unwrap_err().kind,
            ErrorKind::TypeError
        );
        assert!(contains(&Value::list(vec![I(1), Value::Float(2.0)]), &I(2)).must());
        let r = Value::Range(Arc::new(RangeObj {
            start: 10,
            stop: 0,
            step: -3,
        }));
        assert!(contains(&r, &I(7)).must());
        assert!(!contains(&r, &I(8)).must());
        assert!(!contains(&r, &I(0)).must());
        assert!(contains(&r, &Value::Float(4.0)).must());
        assert_eq!(contains(&I(3), &I(3)).unwrap_err().kind, ErrorKind::TypeError);
    }

    #[test]
    fn lengths() {
        assert_eq!(len(&Value::str("héllo")).must(), 5);
        assert_eq!(len(&Value::tuple(vec![I(1)])).must(), 1);
        assert_eq!(len(&I(1)).unwrap_err().message, "object of type 'int' has no len()");
        assert!(hash_key(&Value::list(vec![])).is_err());
        assert!(hash_key(&Value::tuple(vec![I(1)])).is_ok());
    }
}
