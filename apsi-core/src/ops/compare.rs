//! Comparison: `== != < <= > >= in not in is is not`, deep equality and the
//! total order used by `sorted`, `min` and `max`.

use super::arith::{num, Num};
use super::iter::contains;
use super::protocol::call_dunder;
use crate::error::ErrorKind;
use crate::syntax::ast::CmpOp;
use crate::value::{err, ListObj, VResult, Value};
use std::cmp::Ordering;
use std::sync::Arc;

/// How deep `==` and ordering descend into nested containers before
/// raising `RecursionError` (a list that contains itself, say).
const MAX_DEPTH: usize = 1000;

fn too_deep() -> crate::value::Exc {
    err(
        ErrorKind::RecursionError,
        "maximum recursion depth exceeded in comparison",
    )
}

/// `a op b`.
pub fn compare(op: CmpOp, a: &Value, b: &Value) -> VResult<bool> {
    if matches!(a, Value::Struct(_)) || matches!(b, Value::Struct(_)) {
        if let Some(r) = super::dunder::compare(op, a, b) {
            return r?.truthy();
        }
    }
    match op {
        CmpOp::Eq => eq(a, b),
        CmpOp::NotEq => Ok(!eq(a, b)?),
        CmpOp::Is => Ok(a.is(b)),
        CmpOp::IsNot => Ok(!a.is(b)),
        CmpOp::In => contains(b, a),
        CmpOp::NotIn => Ok(!contains(b, a)?),
        CmpOp::Lt | CmpOp::LtE | CmpOp::Gt | CmpOp::GtE => ordered(op, a, b, 0),
    }
}

/// `a op b` as a value: like [`compare`], except that a module object's
/// comparison hook may answer with any value (a tensor compares
/// elementwise and gives a bool tensor).
pub fn compare_value(op: CmpOp, a: &Value, b: &Value) -> VResult<Value> {
    if matches!(a, Value::Struct(_)) || matches!(b, Value::Struct(_)) {
        if let Some(r) = super::dunder::compare(op, a, b) {
            return r;
        }
    }
    if matches!(a, Value::Object(_)) || matches!(b, Value::Object(_)) {
        let names = match op {
            CmpOp::Eq => Some(("__eq__", "__eq__")),
            CmpOp::NotEq => Some(("__ne__", "__ne__")),
            CmpOp::Lt => Some(("__lt__", "__gt__")),
            CmpOp::LtE => Some(("__le__", "__ge__")),
            CmpOp::Gt => Some(("__gt__", "__lt__")),
            CmpOp::GtE => Some(("__ge__", "__le__")),
            _ => None,
        };
        if let Some((fwd, rev)) = names {
            if let Some(r) = call_dunder(a, fwd, std::slice::from_ref(b)) {
                return r;
            }
            if let Some(r) = call_dunder(b, rev, std::slice::from_ref(a)) {
                return r;
            }
        }
    }
    compare(op, a, b).map(Value::Bool)
}

/// 2**63 as a float: the first float above every i64.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// Exact comparison of an int with a float (no rounding of the int).
fn int_float_cmp(i: i64, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    if f >= TWO_63 {
        return Some(Ordering::Less);
    }
    if f < -TWO_63 {
        return Some(Ordering::Greater);
    }
    let fl = f.floor();
    let fi = fl as i64;
    match i.cmp(&fi) {
        Ordering::Equal => {
            if f > fl {
                Some(Ordering::Less)
            } else {
                Some(Ordering::Equal)
            }
        }
        o => Some(o),
    }
}

pub(crate) fn num_cmp(x: Num, y: Num) -> Option<Ordering> {
    match (x, y) {
        (Num::I(a), Num::I(b)) => Some(a.cmp(&b)),
        (Num::F(a), Num::F(b)) => a.partial_cmp(&b),
        (Num::I(a), Num::F(b)) => int_float_cmp(a, b),
        (Num::F(a), Num::I(b)) => int_float_cmp(b, a).map(Ordering::reverse),
    }
}

/// Deep equality: numbers by value (`1 == 1.0 == true`), strings by text,
/// lists/tuples/dicts by contents, structs by type and fields, everything
/// else by identity.
pub fn eq(a: &Value, b: &Value) -> VResult<bool> {
    eq_depth(a, b, 0)
}

/// Where the first element of `list` at `start` or after (below `stop`)
/// equal to `x` is, scanning the list as it is at each step, as CPython
/// does: an `__eq__` that changes the list changes what is scanned, and no
/// copy of the list is made. Each element is compared through a copy of
/// it, taken and given up the solo way, with no lock held.
// Out of line: each step may run Apsi code, and kept out of the callers
// (the dispatch loop reaches `contains`), it leaves their code as it was.
#[inline(never)]
pub fn list_position(list: &ListObj, x: &Value, start: usize, stop: usize) -> VResult<Option<usize>> {
    let mut i = start;
    loop {
        let v = {
            let items = list.items.read();
            match items.get(i) {
                Some(v) if i < stop => v.dup_words(),
                _ => return Ok(None),
            }
        };
        let same = eq_or_same(&v, x);
        v.give_up();
        if same? {
            return Ok(Some(i));
        }
        i += 1;
    }
}

/// Equality as a container sees it (`in`, `list.remove`, `index`, `count`):
/// an element that *is* the item matches without its `__eq__` running, as
/// in Python (`PyObject_RichCompareBool`), so `x in xs` finds `x` itself even
/// when `__eq__` is costly or odd. Floats have no identity in Apsi (they are
/// values), so a NaN never matches itself here either.
#[inline]
pub fn eq_or_same(element: &Value, item: &Value) -> VResult<bool> {
    if element.is(item) && !matches!(element, Value::Float(_)) {
        return Ok(true);
    }
    eq(element, item)
}

fn seq_eq(x: &[Value], y: &[Value], depth: usize) -> VResult<bool> {
    if x.len() != y.len() {
        return Ok(false);
    }
    for (p, q) in x.iter().zip(y) {
        // Identical values are equal without a deep look (floats excepted: NaN).
        let same = p.is(q) && !matches!(p, Value::Float(_));
        if !same && !eq_depth(p, q, depth + 1)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn eq_depth(a: &Value, b: &Value, depth: usize) -> VResult<bool> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    if let (Some(x), Some(y)) = (num(a), num(b)) {
        return Ok(num_cmp(x, y) == Some(Ordering::Equal));
    }
    if matches!(a, Value::Struct(_)) || matches!(b, Value::Struct(_)) {
        if let Some(r) = super::dunder::eq(a, b) {
            return r;
        }
    }
    match (a, b) {
        (Value::None, Value::None) => Ok(true),
        (Value::Str(x), Value::Str(y)) => Ok(x.text_eq(y)),
        (Value::Bytes(x), Value::Bytes(y)) => Ok(x.0 == y.0),
        (Value::List(x), Value::List(y)) => {
            if Arc::ptr_eq(x, y) {
                return Ok(true);
            }
            let xs = x.items.read().clone();
            let ys = y.items.read().clone();
            seq_eq(&xs, &ys, depth)
        }
        (Value::Tuple(x), Value::Tuple(y)) => seq_eq(&x.0, &y.0, depth),
        (Value::Dict(x), Value::Dict(y)) => {
            if Arc::ptr_eq(x, y) {
                return Ok(true);
            }
            let xs: Vec<_> = x.map.read().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let ym = y.map.read().clone();
            if xs.len() != ym.len() {
                return Ok(false);
            }
            for (k, v) in xs {
                match ym.get(&k) {
                    Some(w) => {
                        if !eq_depth(&v, w, depth + 1)? {
                            return Ok(false);
                        }
                    }
                    None => return Ok(false),
                }
            }
            Ok(true)
        }
        (Value::Set(x), Value::Set(y)) => Ok(super::sets::equal(x, y)),
        (Value::Range(x), Value::Range(y)) => {
            let (n, m) = (x.len(), y.len());
            Ok(n == m && (n == 0 || (x.start == y.start && (n == 1 || x.step == y.step))))
        }
        (Value::Struct(x), Value::Struct(y)) => {
            if Arc::ptr_eq(x, y) {
                return Ok(true);
            }
            if !Arc::ptr_eq(&x.ty, &y.ty) {
                return Ok(false);
            }
            let xs = x.fields.read().to_vec();
            let ys = y.fields.read().to_vec();
            seq_eq(&xs, &ys, depth)
        }
        (Value::BoundMethod(x), Value::BoundMethod(y)) => Ok(x.receiver.is(&y.receiver) && x.func.is(&y.func)),
        // `x.dtype == bool`: the `bool` constructor names the bool dtype too.
        (Value::Object(_), Value::Native(_)) | (Value::Native(_), Value::Object(_))
            if crate::tensor::dtype::as_dtype(a).is_some() && crate::tensor::dtype::as_dtype(b).is_some() =>
        {
            Ok(crate::tensor::dtype::as_dtype(a) == crate::tensor::dtype::as_dtype(b))
        }
        (Value::Object(_), _) | (_, Value::Object(_)) => {
            if a.is(b) {
                return Ok(true);
            }
            if let Some(r) = call_dunder(a, "__eq__", std::slice::from_ref(b)) {
                return r?.truthy();
            }
            if let Some(r) = call_dunder(b, "__eq__", std::slice::from_ref(a)) {
                return r?.truthy();
            }
            Ok(false)
        }
        _ => Ok(a.is(b)),
    }
}

fn not_supported(op: CmpOp, a: &Value, b: &Value) -> crate::value::Exc {
    err(
        ErrorKind::TypeError,
        format!(
            "'{}' not supported between '{}' and '{}'",
            op.symbol(),
            a.type_name(),
            b.type_name()
        ),
    )
}

/// `<`, `<=`, `>`, `>=` with Python's rules (NaN compares false; sequences
/// compare at their first differing element).
fn ordered(op: CmpOp, a: &Value, b: &Value, depth: usize) -> VResult<bool> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    let from = |o: Option<Ordering>| {
        Ok(match o {
            None => false,
            Some(o) => match op {
                CmpOp::Lt => o == Ordering::Less,
                CmpOp::LtE => o != Ordering::Greater,
                CmpOp::Gt => o == Ordering::Greater,
                _ => o != Ordering::Less,
            },
        })
    };
    if let (Some(x), Some(y)) = (num(a), num(b)) {
        return from(num_cmp(x, y));
    }
    if matches!(a, Value::Struct(_)) || matches!(b, Value::Struct(_)) {
        if let Some(r) = super::dunder::compare(op, a, b) {
            return r?.truthy();
        }
    }
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => from(Some(x.as_str().cmp(y.as_str()))),
        (Value::Bytes(x), Value::Bytes(y)) => from(Some(x.0.cmp(&y.0))),
        (Value::List(x), Value::List(y)) => {
            let xs = x.items.read().clone();
            let ys = y.items.read().clone();
            seq_ordered(op, &xs, &ys, depth)
        }
        (Value::Tuple(x), Value::Tuple(y)) => seq_ordered(op, &x.0, &y.0, depth),
        (Value::Set(x), Value::Set(y)) => Ok(super::sets::relation(op, x, y)),
        (Value::Object(_), _) | (_, Value::Object(_)) => {
            let (fwd, rev) = match op {
                CmpOp::Lt => ("__lt__", "__gt__"),
                CmpOp::LtE => ("__le__", "__ge__"),
                CmpOp::Gt => ("__gt__", "__lt__"),
                _ => ("__ge__", "__le__"),
            };
            if let Some(r) = call_dunder(a, fwd, std::slice::from_ref(b)) {
                return r?.truthy();
            }
            if let Some(r) = call_dunder(b, rev, std::slice::from_ref(a)) {
                return r?.truthy();
            }
            Err(not_supported(op, a, b))
        }
        _ => Err(not_supported(op, a, b)),
    }
}

fn seq_ordered(op: CmpOp, xs: &[Value], ys: &[Value], depth: usize) -> VResult<bool> {
    for (p, q) in xs.iter().zip(ys) {
        if !eq_depth(p, q, depth + 1)? {
            return ordered(op, p, q, depth + 1);
        }
    }
    let o = xs.len().cmp(&ys.len());
    Ok(match op {
        CmpOp::Lt => o == Ordering::Less,
        CmpOp::LtE => o != Ordering::Greater,
        CmpOp::Gt => o == Ordering::Greater,
        _ => o != Ordering::Less,
    })
}

/// The order `sorted`, `min` and `max` use: `Less` when `a < b`, `Greater`
/// when `b < a`, else `Equal` (so NaN is "equal" to everything and a stable
/// sort keeps it in place). Values that cannot be ordered raise `TypeError`.
pub fn order(a: &Value, b: &Value) -> VResult<Ordering> {
    order_depth(a, b, 0)
}

fn order_depth(a: &Value, b: &Value, depth: usize) -> VResult<Ordering> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    if let (Some(x), Some(y)) = (num(a), num(b)) {
        return Ok(num_cmp(x, y).unwrap_or(Ordering::Equal));
    }
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => return Ok(x.as_str().cmp(y.as_str())),
        // Sequences in one pass (sorting pairs and records): not `<` both
        // ways, which walks the common prefix twice per comparison.
        (Value::Tuple(x), Value::Tuple(y)) => return seq_order(&x.0, &y.0, depth),
        (Value::List(x), Value::List(y)) => {
            let xs = x.items.read().clone();
            let ys = y.items.read().clone();
            return seq_order(&xs, &ys, depth);
        }
        _ => {}
    }
    if ordered(CmpOp::Lt, a, b, depth)? {
        Ok(Ordering::Less)
    } else if ordered(CmpOp::Lt, b, a, depth)? {
        Ok(Ordering::Greater)
    } else {
        Ok(Ordering::Equal)
    }
}

/// `order` of two sequences: decided at the first pair of items that are
/// not equal (`==`), else by length, as `<` on sequences is.
fn seq_order(xs: &[Value], ys: &[Value], depth: usize) -> VResult<Ordering> {
    for (p, q) in xs.iter().zip(ys) {
        // Numbers and strings are told equal or ordered in one comparison.
        if let (Some(x), Some(y)) = (num(p), num(q)) {
            match num_cmp(x, y) {
                Some(Ordering::Equal) => continue,
                Some(o) => return Ok(o),
                // NaN: not equal, and neither side is less.
                None => return Ok(Ordering::Equal),
            }
        }
        if let (Value::Str(x), Value::Str(y)) = (p, q) {
            match x.as_str().cmp(y.as_str()) {
                Ordering::Equal => continue,
                o => return Ok(o),
            }
        }
        if !eq_depth(p, q, depth + 1)? {
            return order_depth(p, q, depth + 1);
        }
    }
    Ok(xs.len().cmp(&ys.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use Value::{Float as F, Int as I};

    #[test]
    fn numbers_compare_exactly() {
        assert!(eq(&I(1), &F(1.0)).must());
        assert!(eq(&Value::Bool(true), &I(1)).must());
        assert!(!eq(&I(i64::MAX), &F(TWO_63)).must());
        assert!(compare(CmpOp::Lt, &I(i64::MAX), &F(9.3e18)).must());
        assert!(compare(CmpOp::Lt, &I(1), &F(1.5)).must());
        assert!(!compare(CmpOp::Lt, &F(f64::NAN), &I(1)).must());
        assert!(!compare(CmpOp::GtE, &F(f64::NAN), &F(f64::NAN)).must());
        assert!(compare(CmpOp::GtE, &I(-2), &F(-2.5)).must());
        assert!(!eq(&F(f64::NAN), &F(f64::NAN)).must());
    }

    #[test]
    fn containers_see_identity_first_but_not_for_floats() {
        let l = Value::list(vec![I(1)]);
        assert!(eq_or_same(&l, &l).must());
        assert!(eq_or_same(&I(3), &F(3.0)).must(), "equal values still match");
        assert!(
            !eq_or_same(&F(f64::NAN), &F(f64::NAN)).must(),
            "a float has no identity"
        );
        assert!(!eq_or_same(&Value::str("a"), &Value::str("b")).must());
    }

    #[test]
    fn sequences_and_strings() {
        let l = |v: Vec<Value>| Value::list(v);
        assert!(compare(CmpOp::Lt, &l(vec![I(1), I(2)]), &l(vec![I(1), I(3)])).must());
        assert!(compare(CmpOp::Lt, &l(vec![I(1)]), &l(vec![I(1), I(0)])).must());
        assert!(compare(CmpOp::Gt, &Value::str("b"), &Value::str("abc")).must());
        assert!(eq(&l(vec![I(1), F(2.0)]), &l(vec![F(1.0), I(2)])).must());
        assert!(!eq(&l(vec![I(1)]), &Value::tuple(vec![I(1)])).must());
        let e = compare(CmpOp::Lt, &I(1), &Value::str("x")).unwrap_err();
        assert_eq!(e.message, "'<' not supported between 'int' and 'str'");
        assert_eq!(order(&I(2), &F(1.5)).must(), Ordering::Greater);
    }

    #[test]
    fn self_containing_list_equality_is_recursion_error() {
        let a = Value::list(vec![]);
        let b = Value::list(vec![]);
        if let (Value::List(x), Value::List(y)) = (&a, &b) {
            x.items.write().push(a.clone());
            y.items.write().push(b.clone());
        }
        assert_eq!(eq(&a, &b).unwrap_err().kind, ErrorKind::RecursionError);
        if let (Value::List(x), Value::List(y)) = (&a, &b) {
            x.items.write().clear();
            y.items.write().clear();
        }
    }
}
