//! `hash(x)` (LANGUAGE.md §10.9).
//!
//! - ints: CPython's value exactly — `n` reduced modulo the Mersenne prime
//!   `2**61 - 1` keeping the sign, and `-1` becomes `-2`; bools as ints;
//! - floats: CPython's `_Py_HashDouble`, so an integral float hashes as
//!   the equal int (`hash(-0.0) == 0`), `±inf` is `±314159`; NaN is 0;
//! - `none`: CPython 3.12's fixed `0xFCA86420`;
//! - str and bytes: 64-bit FNV-1a over the UTF-8 / raw bytes (no key, no
//!   per-process randomization: the same in every run), `-1` mapped to `-2`;
//! - tuples: CPython's xxHash-based combination of the element hashes
//!   (so a tuple of ints hashes as in CPython);
//! - ranges: as CPython, the tuple hash of `(len, start, step)` with
//!   `start`/`step` none for short ranges;
//! - structs: see [`struct_hash`]; functions, types, modules and module
//!   objects that say they are hashable: their identity;
//! - lists, dicts, slices (and anything else unhashable):
//!   `TypeError: unhashable type: 'list'`.
//!
//! Equal values hash equal (the rule dict keys rely on too).

use crate::error::ErrorKind;
use crate::value::{err, Caller, StructObj, VResult, Value};
use std::sync::Arc;

/// `2**61 - 1`, CPython's `_PyHASH_MODULUS` on 64-bit platforms.
const MODULUS: u64 = (1 << 61) - 1;
const BITS: u32 = 61;
/// CPython's `_PyHASH_INF`.
const HASH_INF: i64 = 314_159;
/// CPython 3.12's `hash(None)`.
const HASH_NONE: i64 = 0xFCA8_6420;

/// Nested tuples deeper than this raise `RecursionError`.
const MAX_DEPTH: usize = 1000;

fn fix(h: i64) -> i64 {
    if h == -1 {
        -2
    } else {
        h
    }
}

/// CPython's hash of an int.
pub fn hash_int(i: i64) -> i64 {
    let m = (i.unsigned_abs() % MODULUS) as i64;
    fix(if i < 0 { -m } else { m })
}

/// `frexp`: `x == m * 2**e` with `0.5 <= |m| < 1` (`x` finite, non-zero).
fn frexp(x: f64) -> (f64, i32) {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 {
        // Subnormal: scale into the normal range first.
        let (m, e) = frexp(x * f64::from_bits(0x4350_0000_0000_0000)); // 2**54
        return (m, e - 54);
    }
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, exp - 1022)
}

/// CPython's `_Py_HashDouble` (NaN, hashed by identity there, is 0 here).
pub fn hash_float(v: f64) -> i64 {
    if v.is_nan() {
        return 0;
    }
    if v.is_infinite() {
        return if v > 0.0 { HASH_INF } else { -HASH_INF };
    }
    if v == 0.0 {
        return 0;
    }
    let (mut m, mut e) = frexp(v);
    let mut sign: i64 = 1;
    if m < 0.0 {
        sign = -1;
        m = -m;
    }
    let mut x: u64 = 0;
    while m != 0.0 {
        x = ((x << 28) & MODULUS) | (x >> (BITS - 28));
        m *= 268_435_456.0; // 2**28
        e -= 28;
        let y = m as u64;
        m -= y as f64;
        x += y;
        if x >= MODULUS {
            x -= MODULUS;
        }
    }
    let b = BITS as i32;
    let e = if e >= 0 { e % b } else { b - 1 - ((-1 - e) % b) } as u32;
    x = ((x << e) & MODULUS) | (x >> (BITS - e));
    fix((x as i64).wrapping_mul(sign))
}

/// 64-bit FNV-1a: deterministic, unkeyed.
fn fnv1a(data: &[u8]) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    fix(h as i64)
}

/// CPython's tuple hash over already computed element hashes.
fn combine(lanes: impl ExactSizeIterator<Item = i64>) -> i64 {
    const P1: u64 = 11_400_714_785_074_694_791;
    const P2: u64 = 14_029_467_366_897_019_727;
    const P5: u64 = 2_870_177_450_012_600_261;
    let len = lanes.len() as u64;
    let mut acc = P5;
    for lane in lanes {
        acc = acc.wrapping_add((lane as u64).wrapping_mul(P2));
        acc = acc.rotate_left(31);
        acc = acc.wrapping_mul(P1);
    }
    acc = acc.wrapping_add(len ^ (P5 ^ 3_527_539));
    if acc == u64::MAX {
        return 1_546_275_796;
    }
    acc as i64
}

fn identity<T>(p: &Arc<T>) -> i64 {
    // CPython rotates the address right by 4 (objects are 16-aligned).
    fix((Arc::as_ptr(p) as usize as u64).rotate_right(4) as i64)
}

fn unhashable(v: &Value) -> crate::value::Exc {
    err(ErrorKind::TypeError, format!("unhashable type: '{}'", v.type_name()))
}

/// `hash(v)`. Takes the caller so a struct's `__hash__` (written in Apsi)
/// can be called from [`struct_hash`].
pub fn hash_of(caller: &mut dyn Caller, v: &Value) -> VResult<i64> {
    hash_depth(caller, v, 0)
}

fn hash_depth(caller: &mut dyn Caller, v: &Value, depth: usize) -> VResult<i64> {
    if depth > MAX_DEPTH {
        return Err(err(
            ErrorKind::RecursionError,
            "maximum recursion depth exceeded while hashing",
        ));
    }
    Ok(match v {
        Value::None => HASH_NONE,
        Value::Bool(b) => *b as i64,
        Value::Int(i) => hash_int(*i),
        Value::Float(f) => hash_float(*f),
        Value::Str(s) => fnv1a(s.as_str().as_bytes()),
        Value::Bytes(b) => fnv1a(&b.0),
        Value::Tuple(t) => {
            let mut lanes = Vec::with_capacity(t.0.len());
            for x in t.0.iter() {
                lanes.push(hash_depth(caller, x, depth + 1)?);
            }
            combine(lanes.into_iter())
        }
        Value::Range(r) => {
            let n = r.len();
            let start = if n == 0 { HASH_NONE } else { hash_int(r.start) };
            let step = if n <= 1 { HASH_NONE } else { hash_int(r.step) };
            combine([hash_int(n), start, step].into_iter())
        }
        Value::Struct(s) => struct_hash(caller, s)?,
        Value::Kind(k) => fnv1a(k.name().as_bytes()),
        Value::Func(f) => identity(f),
        Value::Native(f) => identity(f),
        Value::BoundMethod(m) => identity(m),
        Value::StructType(t) => identity(t),
        Value::Module(m) => identity(m),
        Value::Error(e) => identity(e),
        Value::Object(o) if o.0.hashable() => identity(o),
        Value::Unbound => 0,
        _ => return Err(unhashable(v)),
    })
}

/// The hash of a struct value. For now its identity (a struct without
/// `__hash__` is hashed by identity, as in Python); this is the one place
/// where a struct's `__hash__` method (LANGUAGE.md §10.3) is to be called
/// through `caller`, once structs have dunders.
pub fn struct_hash(caller: &mut dyn Caller, s: &Arc<StructObj>) -> VResult<i64> {
    match s.ty.hash_mode {
        crate::value::HashMode::Identity => Ok(identity(s)),
        crate::value::HashMode::Unhashable => {
            Err(err(ErrorKind::TypeError, format!("unhashable type: '{}'", s.ty.name)))
        }
        crate::value::HashMode::Method => {
            let f = s.ty.method("__hash__").cloned().unwrap_or(Value::None);
            match caller.call(&f, &[Value::Struct(s.clone())], &[])? {
                // As CPython: the method's int as it is (every i64 fits a
                // Py_ssize_t), except that -1 is -2.
                Value::Int(i) => Ok(fix(i)),
                Value::Bool(b) => Ok(b as i64),
                other => Err(err(
                    ErrorKind::TypeError,
                    format!("__hash__ method should return an integer, not {}", other.type_name()),
                )),
            }
        }
    }
}

/// The prelude's `hash(x)`.
pub(crate) fn hash_builtin(c: &mut dyn Caller, args: &[Value], kw: crate::value::Kwargs) -> VResult<Value> {
    if !kw.is_empty() {
        return Err(err(ErrorKind::TypeError, "hash() takes no keyword arguments"));
    }
    match args {
        [x] => Ok(Value::Int(hash_of(c, x)?)),
        _ => Err(err(
            ErrorKind::TypeError,
            format!("hash() takes exactly one argument ({} given)", args.len()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use crate::ops::NoCaller;
    use Value::{Float as F, Int as I};

    fn h(v: Value) -> i64 {
        hash_of(&mut NoCaller, &v).must()
    }

    #[test]
    fn ints_are_cpythons() {
        assert_eq!(h(I(7)), 7);
        assert_eq!(h(I(-1)), -2);
        assert_eq!(h(I(12345678901)), 12345678901);
        assert_eq!(h(I((1 << 61) - 2)), 2305843009213693950);
        assert_eq!(h(I((1 << 61) - 1)), 0);
        assert_eq!(h(I(-(1 << 61) + 1)), 0);
        assert_eq!(h(I(i64::MIN)), -4);
        assert_eq!(h(I(i64::MAX)), 3);
        assert_eq!(h(Value::Bool(true)), 1);
    }

    #[test]
    fn floats_are_cpythons() {
        // Values from CPython 3.11.
        assert_eq!(h(F(1.5)), 1152921504606846977);
        assert_eq!(h(F(-0.0)), 0);
        assert_eq!(h(F(f64::INFINITY)), 314159);
        assert_eq!(h(F(-1.0)), -2);
        assert_eq!(h(F(0.1)), 230584300921369408);
        assert_eq!(h(F(-2.5)), -1152921504606846978);
        assert_eq!(h(F(1e300)), 1224995262755759164);
        assert_eq!(h(F(5e-324)), 16777216);
        assert_eq!(h(F(3.0)), 3);
        assert_eq!(h(F(12345678901.0)), 12345678901);
        assert_eq!(h(F(9.2e18)), h(I(9_200_000_000_000_000_000)));
    }

    #[test]
    fn tuples_are_cpythons() {
        assert_eq!(h(Value::tuple(vec![])), 5740354900026072187);
        assert_eq!(h(Value::tuple(vec![I(1), I(2)])), -3550055125485641917);
        assert_eq!(h(Value::tuple(vec![F(1.0), I(2)])), h(Value::tuple(vec![I(1), I(2)])));
        let r = |a, b| {
            Value::Range(Arc::new(crate::value::RangeObj {
                start: a,
                stop: b,
                step: 1,
            }))
        };
        assert_eq!(h(r(0, 10)), -7546101314042312252);
    }

    #[test]
    fn strings_are_stable_and_unhashables_refused() {
        assert_eq!(h(Value::str("abc")), h(Value::str("abc")));
        assert_ne!(h(Value::str("abc")), h(Value::str("abd")));
        assert_eq!(h(Value::str("")), fnv1a(b""));
        assert_eq!(h(Value::bytes(b"x".to_vec())), h(Value::bytes(b"x".to_vec())));
        let e = hash_of(&mut NoCaller, &Value::list(vec![])).unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::TypeError, "unhashable type: 'list'")
        );
        let e = hash_of(&mut NoCaller, &Value::tuple(vec![I(1), Value::empty_dict()])).unwrap_err();
        assert_eq!(e.message, "unhashable type: 'dict'");
        assert_eq!(h(Value::None), 4238894112);
    }

    #[test]
    fn deep_tuples_are_a_recursion_error() {
        let mut v = Value::tuple(vec![]);
        for _ in 0..5000 {
            v = Value::tuple(vec![v]);
        }
        assert_eq!(hash_of(&mut NoCaller, &v).unwrap_err().kind, ErrorKind::RecursionError);
    }
}
