//! Sorting for `sorted` and `list.sort` (LANGUAGE.md §10.5): stable, keys
//! computed once per element (decorate, sort, undecorate), `reverse` done
//! as CPython does it (reverse, stable sort, reverse back), so equal
//! elements keep their order and a sorted input sorts in O(n) either way.
//!
//! Homogeneous keys (all ints, all floats without NaN, all numbers without
//! NaN, all strings, all tuples of those: `Kind`) are sorted with Rust's stable `sort_by`, a
//! run-detecting merge sort (like timsort, O(n) on sorted or reversed
//! runs), comparing unboxed ints and floats. Those orders are total, so
//! `sort_by` cannot panic. Everything else goes through [`merge_sort`] with
//! `ops::order`, which may raise `TypeError` (uncomparable values) and
//! never panics on an inconsistent order (NaN); it also skips a merge when
//! the halves are already in order, so sorted input stays O(n) there too.

use crate::ops;
use crate::ops::num;
use crate::ops::num_cmp;
use crate::value::{Caller, VResult, Value};
use std::cmp::Ordering;

/// What a whole slice of sort keys is made of.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    /// Only `Value::Int`.
    Int,
    /// Only `Value::Float`, no NaN.
    Float,
    /// Ints, floats and bools, no NaN (exact mixed comparisons: total).
    Num,
    Str,
    /// Only tuples of numbers (no NaN) and strings, with each position
    /// holding numbers in every tuple or strings in every tuple (records
    /// such as `(score, name)`): a total order compared without errors.
    Tuples,
    /// Anything else: the general comparison.
    Other,
}

fn kind_of(keys: &[Value]) -> Kind {
    let mut kind = match keys.first() {
        Some(Value::Int(_)) => Kind::Int,
        Some(Value::Float(f)) if !f.is_nan() => Kind::Float,
        Some(Value::Bool(_)) => Kind::Num,
        Some(Value::Str(_)) => Kind::Str,
        Some(Value::Tuple(_)) => return if plain_tuples(keys) { Kind::Tuples } else { Kind::Other },
        _ => return Kind::Other,
    };
    for k in keys {
        kind = match (kind, k) {
            (Kind::Int, Value::Int(_)) | (Kind::Str, Value::Str(_)) => kind,
            (Kind::Float, Value::Float(f)) if !f.is_nan() => kind,
            (Kind::Int | Kind::Float | Kind::Num, Value::Int(_) | Value::Bool(_)) => Kind::Num,
            (Kind::Int | Kind::Float | Kind::Num, Value::Float(f)) if !f.is_nan() => Kind::Num,
            _ => return Kind::Other,
        };
    }
    kind
}

/// What a tuple item is for [`Kind::Tuples`]: 1 a number (no NaN), 2 a
/// string, 0 anything else.
#[inline]
fn plain_class(v: &Value) -> u8 {
    match v {
        Value::Int(_) | Value::Bool(_) => 1,
        Value::Float(f) if !f.is_nan() => 1,
        Value::Str(_) => 2,
        _ => 0,
    }
}

/// Are all keys tuples of [`Kind::Tuples`]?
fn plain_tuples(keys: &[Value]) -> bool {
    let mut classes: smallvec::SmallVec<[u8; 8]> = smallvec::SmallVec::new();
    for k in keys {
        let Value::Tuple(t) = k else { return false };
        for (j, x) in t.0.iter().enumerate() {
            let c = plain_class(x);
            if c == 0 {
                return false;
            }
            // Positions are seen in order, so `j <= classes.len()`.
            match classes.get(j) {
                Some(&d) if d != c => return false,
                Some(_) => {}
                None => classes.push(c),
            }
        }
    }
    true
}

/// Two items of [`Kind::Tuples`] tuples at one position (both numbers or
/// both strings): a total order.
#[inline]
fn plain_order(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Str(x), Value::Str(y)) => x.as_str().cmp(y.as_str()),
        _ => num_order(a, b),
    }
}

/// `<` on two [`Kind::Tuples`] tuples: the first position that differs,
/// else the shorter first, as Python compares tuples.
fn tuple_order(a: &Value, b: &Value) -> Ordering {
    let (Value::Tuple(x), Value::Tuple(y)) = (a, b) else {
        return Ordering::Equal;
    };
    for (p, q) in x.0.iter().zip(y.0.iter()) {
        match plain_order(p, q) {
            Ordering::Equal => continue,
            o => return o,
        }
    }
    x.0.len().cmp(&y.0.len())
}

#[inline]
fn num_order(a: &Value, b: &Value) -> Ordering {
    match (num(a), num(b)) {
        (Some(x), Some(y)) => num_cmp(x, y).unwrap_or(Ordering::Equal),
        _ => Ordering::Equal,
    }
}

#[inline]
fn int_of(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        _ => 0,
    }
}

#[inline]
fn float_of(v: &Value) -> f64 {
    match v {
        Value::Float(f) => *f,
        _ => 0.0,
    }
}

#[inline]
fn str_order(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => x.as_str().cmp(y.as_str()),
        _ => Ordering::Equal,
    }
}

/// Sorts values, by `key(x)` when a key function is given; stable, and
/// with `reverse` equal elements keep their order (as Python's).
pub(crate) fn sort_values(
    c: &mut dyn Caller,
    mut items: Vec<Value>,
    key: Option<&Value>,
    reverse: bool,
) -> VResult<Vec<Value>> {
    if items.len() < 2 && key.is_none() {
        return Ok(items);
    }
    // CPython's way: reversing around a stable sort keeps equal elements
    // in their first order, and turns a sorted input into one run.
    if reverse {
        items.reverse();
    }
    let mut items = match key {
        None => {
            sort_plain(&mut items)?;
            items
        }
        Some(f) => {
            let mut keys = Vec::with_capacity(items.len());
            for x in &items {
                keys.push(c.call(f, std::slice::from_ref(x), &[])?);
            }
            sort_keyed(keys, items)?
        }
    };
    if reverse {
        items.reverse();
    }
    Ok(items)
}

/// Sorts the values themselves (no key function).
fn sort_plain(items: &mut [Value]) -> VResult<()> {
    match kind_of(items) {
        Kind::Int => {
            // Equal ints are indistinguishable: sort the unboxed numbers.
            let mut v: Vec<i64> = items.iter().map(int_of).collect();
            v.sort();
            for (slot, i) in items.iter_mut().zip(v) {
                *slot = Value::Int(i);
            }
        }
        Kind::Float => {
            // -0.0 and 0.0 are equal but distinct: keep a stable order.
            let mut v: Vec<f64> = items.iter().map(float_of).collect();
            v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(Ordering::Equal));
            for (slot, f) in items.iter_mut().zip(v) {
                *slot = Value::Float(f);
            }
        }
        Kind::Num => items.sort_by(num_order),
        Kind::Str => items.sort_by(str_order),
        Kind::Tuples => items.sort_by(tuple_order),
        Kind::Other => merge_sort(items, &mut ops::order)?,
    }
    Ok(())
}

/// Sorts `items` by `keys` (one key per item, computed once).
fn sort_keyed(keys: Vec<Value>, items: Vec<Value>) -> VResult<Vec<Value>> {
    Ok(match kind_of(&keys) {
        Kind::Int => {
            let mut pairs: Vec<(i64, Value)> = keys.iter().map(int_of).zip(items).collect();
            pairs.sort_by_key(|p| p.0);
            pairs.into_iter().map(|p| p.1).collect()
        }
        Kind::Float => {
            let mut pairs: Vec<(f64, Value)> = keys.iter().map(float_of).zip(items).collect();
            pairs.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(Ordering::Equal));
            pairs.into_iter().map(|p| p.1).collect()
        }
        kind => {
            let mut pairs: Vec<(Value, Value)> = keys.into_iter().zip(items).collect();
            match kind {
                Kind::Num => pairs.sort_by(|a, b| num_order(&a.0, &b.0)),
                Kind::Str => pairs.sort_by(|a, b| str_order(&a.0, &b.0)),
                Kind::Tuples => pairs.sort_by(|a, b| tuple_order(&a.0, &b.0)),
                _ => merge_sort(&mut pairs, &mut |a, b| ops::order(&a.0, &b.0))?,
            }
            pairs.into_iter().map(|p| p.1).collect()
        }
    })
}

/// Sorts `items` stably by `cmp`, which may fail (the first error stops
/// the sort; `items` is then some permutation of what it was) or be
/// inconsistent (NaN: no panic).
pub(crate) fn merge_sort<T: Clone>(items: &mut [T], cmp: &mut dyn FnMut(&T, &T) -> VResult<Ordering>) -> VResult<()> {
    let n = items.len();
    if n < 2 {
        return Ok(());
    }
    // Insertion sort for short runs.
    if n <= 16 {
        for i in 1..n {
            let mut j = i;
            while j > 0 && cmp(&items[j - 1], &items[j])? == Ordering::Greater {
                items.swap(j - 1, j);
                j -= 1;
            }
        }
        return Ok(());
    }
    let mid = n / 2;
    merge_sort(&mut items[..mid], cmp)?;
    merge_sort(&mut items[mid..], cmp)?;
    // Halves already in order (a sorted input): nothing to merge.
    if cmp(&items[mid - 1], &items[mid])? != Ordering::Greater {
        return Ok(());
    }
    let left: Vec<T> = items[..mid].to_vec();
    let (mut i, mut j, mut k) = (0, mid, 0);
    while i < left.len() && j < n {
        // Take from the right only when strictly smaller: stability.
        if cmp(&left[i], &items[j])? == Ordering::Greater {
            items[k] = items[j].clone();
            j += 1;
        } else {
            items[k] = left[i].clone();
            i += 1;
        }
        k += 1;
    }
    while i < left.len() {
        items[k] = left[i].clone();
        i += 1;
        k += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::ops::Must;

    #[test]
    fn plain_tuples_sort_as_the_general_order_does() {
        use crate::ops::NoCaller;
        let mut seed = 12345u64;
        let mut rnd = move |m: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        for round in 0..50 {
            let n = 1 + rnd(60) as usize;
            let items: Vec<Value> = (0..n)
                .map(|i| {
                    let first = match round % 3 {
                        0 => Value::Int(rnd(5) as i64),
                        1 => Value::Float(rnd(5) as f64 * 0.5),
                        _ => Value::Bool(rnd(2) == 1),
                    };
                    let len = 1 + rnd(3) as usize;
                    let mut t = vec![first, Value::str(format!("s{}", rnd(4))), Value::Int(i as i64)];
                    t.truncate(len);
                    Value::tuple(t)
                })
                .collect();
            assert_eq!(kind_of(&items), Kind::Tuples);
            let fast = sort_values(&mut NoCaller, items.clone(), None, round % 2 == 0).must();
            let mut slow = items.clone();
            if round % 2 == 0 {
                slow.reverse();
            }
            merge_sort(&mut slow, &mut ops::order).must();
            if round % 2 == 0 {
                slow.reverse();
            }
            let show = |v: &[Value]| crate::format::repr_of(&Value::list(v.to_vec()));
            assert_eq!(show(&fast), show(&slow));
        }
        // Mixed classes at one position, NaN, or non-tuples: the general path.
        let t = |a: Value| Value::tuple(vec![a]);
        assert_eq!(kind_of(&[t(Value::Int(1)), t(Value::str("a"))]), Kind::Other);
        assert_eq!(kind_of(&[t(Value::Float(f64::NAN)), t(Value::Int(1))]), Kind::Other);
        assert_eq!(kind_of(&[t(Value::Int(1)), Value::Int(2)]), Kind::Other);
    }

    #[test]
    fn sorts_stably() {
        let mut v: Vec<(i32, usize)> = (0..100).map(|i| ((i * 37 % 11) as i32, i)).collect();
        merge_sort(&mut v, &mut |a, b| Ok(a.0.cmp(&b.0))).must();
        for w in v.windows(2) {
            assert!(w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1));
        }
    }

    #[test]
    fn inconsistent_orders_do_not_panic() {
        let mut v: Vec<f64> = (0..200)
            .map(|i| if i % 7 == 0 { f64::NAN } else { (i * 13 % 17) as f64 })
            .collect();
        merge_sort(&mut v, &mut |a, b| Ok(a.partial_cmp(b).unwrap_or(Ordering::Equal))).must();
    }

    fn sort(items: Vec<Value>, reverse: bool) -> VResult<Vec<Value>> {
        sort_values(&mut crate::ops::reentry::Reentrant, items, None, reverse)
    }

    fn show(v: &[Value]) -> String {
        crate::format::repr_checked(&Value::list(v.to_vec())).must()
    }

    #[test]
    fn kinds_of_keys() {
        use Value::{Bool as B, Float as F, Int as I};
        assert_eq!(kind_of(&[I(1), I(2)]), Kind::Int);
        assert_eq!(kind_of(&[F(1.0), F(-0.0)]), Kind::Float);
        assert_eq!(kind_of(&[F(1.0), F(f64::NAN)]), Kind::Other);
        assert_eq!(kind_of(&[I(1), F(2.5), B(true)]), Kind::Num);
        assert_eq!(kind_of(&[B(true), I(1)]), Kind::Num);
        assert_eq!(kind_of(&[Value::str("a"), Value::str("b")]), Kind::Str);
        assert_eq!(kind_of(&[Value::str("a"), I(1)]), Kind::Other);
        assert_eq!(kind_of(&[I(1), Value::None]), Kind::Other);
    }

    #[test]
    fn fast_paths_sort_like_the_general_one() {
        use Value::{Bool as B, Float as F, Int as I};
        let mixed = vec![I(3), F(1.5), B(true), I(0), F(-2.5), I(1), F(1.0)];
        assert_eq!(
            show(&sort(mixed.clone(), false).must()),
            "[-2.5, 0, true, 1, 1.0, 1.5, 3]"
        );
        // reverse keeps equal elements in their first order (true, 1, 1.0).
        assert_eq!(show(&sort(mixed, true).must()), "[3, 1.5, true, 1, 1.0, 0, -2.5]");
        assert_eq!(
            show(&sort(vec![F(0.0), F(-0.0), F(0.0)], true).must()),
            "[0.0, -0.0, 0.0]"
        );
        let n = 10_000;
        let asc: Vec<Value> = (0..n).map(I).collect();
        let desc: Vec<Value> = (0..n).rev().map(I).collect();
        assert_eq!(show(&sort(desc.clone(), false).must()), show(&asc));
        assert_eq!(show(&sort(asc.clone(), true).must()), show(&desc));
        let strs: Vec<Value> = ["b", "a", "c", "a"].iter().map(|s| Value::str(*s)).collect();
        assert_eq!(show(&sort(strs, true).must()), "['c', 'b', 'a', 'a']");
    }

    #[test]
    fn uncomparable_values_raise() {
        let e = sort(vec![Value::Int(1), Value::str("a")], false).err().map(|e| e.kind);
        assert_eq!(e, Some(crate::error::ErrorKind::TypeError));
        let e = sort(vec![Value::None, Value::None, Value::Int(2)], true)
            .err()
            .map(|e| e.kind);
        assert_eq!(e, Some(crate::error::ErrorKind::TypeError));
    }

    #[test]
    fn merge_sort_skips_ordered_halves() {
        let mut calls = 0;
        let mut v: Vec<i32> = (0..1024).collect();
        merge_sort(&mut v, &mut |a, b| {
            calls += 1;
            Ok(a.cmp(b))
        })
        .must();
        assert!(calls < 2 * 1024, "{calls} comparisons for a sorted input");
    }
}
