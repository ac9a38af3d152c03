//! Sets (LANGUAGE.md §10.6): building them, their operators and relations.
//!
//! A set is a [`DictMap`] whose keys are the members (values unused), so it
//! hashes and compares members exactly as dict keys do (`1`, `1.0` and
//! `true` are one member) and keeps insertion order:
//! - `a | b`: `a`'s members, then `b`'s that are new;
//! - `a & b`, `a - b`: `a`'s members (in `a`'s order) that are / are not in `b`;
//! - `a ^ b`: `a`'s members not in `b`, then `b`'s not in `a`.
//!
//! Two sets are read together through `with_tables`: in place when that is
//! safe, from copies otherwise (see there); the in-place operators
//! (`s |= t`, …) are in `ops::inplace`.

use crate::error::ErrorKind;
use crate::syntax::ast::{BinOp, CmpOp};
use crate::value::{err, Caller, DictMap, Exc, HashKey, SetObj, VResult, Value};

/// The members of a set, in order (a snapshot).
pub fn members(s: &SetObj) -> Vec<Value> {
    s.map.read().keys().map(|k| k.value().clone()).collect()
}

/// A member table from values (a duplicate keeps its first place);
/// `TypeError` for an unhashable value.
pub fn map_of(items: impl IntoIterator<Item = Value>) -> VResult<DictMap> {
    let mut m = DictMap::new();
    for v in items {
        m.insert(HashKey::new(v)?, Value::None);
    }
    Ok(m)
}

/// A new set holding `items`.
pub fn set_of(items: impl IntoIterator<Item = Value>) -> VResult<Value> {
    Ok(Value::set(map_of(items)?))
}

/// The members of any iterable as a member table (a set is copied as is).
pub(crate) fn map_of_iterable(c: &mut dyn Caller, v: &Value) -> VResult<DictMap> {
    match v {
        Value::Set(s) => Ok(s.map.read().clone()),
        other => map_of(super::iterate(c, other)?),
    }
}

fn unsupported(op: &str, a: &Value, b: &Value) -> Exc {
    err(
        ErrorKind::TypeError,
        format!(
            "unsupported operand type(s) for {op}: '{}' and '{}'",
            a.type_name(),
            b.type_name()
        ),
    )
}

/// `a | b`.
pub(crate) fn union(a: &DictMap, b: &DictMap) -> DictMap {
    let mut out = a.clone();
    for (h, k) in b.iter_hashed() {
        if !a.contains_hashed(h, k) {
            out.push_absent(h, k.clone(), Value::None);
        }
    }
    out
}

/// `a & b`.
pub(crate) fn intersection(a: &DictMap, b: &DictMap) -> DictMap {
    let mut out = DictMap::with_capacity(a.len().min(b.len()));
    for (h, k) in a.iter_hashed() {
        if b.contains_hashed(h, k) {
            out.push_absent(h, k.clone(), Value::None);
        }
    }
    out
}

/// `a - b`.
pub(crate) fn difference(a: &DictMap, b: &DictMap) -> DictMap {
    let mut out = DictMap::with_capacity(a.len());
    for (h, k) in a.iter_hashed() {
        if !b.contains_hashed(h, k) {
            out.push_absent(h, k.clone(), Value::None);
        }
    }
    out
}

/// `a ^ b`.
pub(crate) fn symmetric_difference(a: &DictMap, b: &DictMap) -> DictMap {
    let mut out = difference(a, b);
    for (h, k) in b.iter_hashed() {
        if !a.contains_hashed(h, k) {
            out.push_absent(h, k.clone(), Value::None);
        }
    }
    out
}

/// Is every member of `a` in `b`?
pub(crate) fn is_subset(a: &DictMap, b: &DictMap) -> bool {
    a.len() <= b.len() && a.iter_hashed().all(|(h, k)| b.contains_hashed(h, k))
}

pub(crate) fn is_disjoint(a: &DictMap, b: &DictMap) -> bool {
    let (small, big) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    !small.iter_hashed().any(|(h, k)| big.contains_hashed(h, k))
}

/// Whether comparing `m`'s members never runs Apsi code (no struct
/// `__eq__`, which may touch the set): ints, floats, strings and the like.
fn plain_members(m: &DictMap) -> bool {
    m.iter_hashed().all(|(_, k)| {
        matches!(
            k.value(),
            Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::Str(_) | Value::None | Value::Bytes(_)
        )
    })
}

/// Run `f` on the member tables of two sets. While one thread runs Apsi
/// code and no member's comparison can run Apsi code, both tables are read
/// in place (the locks cost nothing then). Otherwise both are copied first,
/// so no lock is held while a struct's `__eq__` runs, and no thread waits
/// for one set's lock while holding another's.
pub(crate) fn with_tables<R>(x: &SetObj, y: &SetObj, f: impl FnOnce(&DictMap, &DictMap) -> R) -> R {
    if !crate::value::vlock::shared_mode() {
        let xm = x.map.read();
        if std::ptr::eq(x, y) {
            if plain_members(&xm) {
                return f(&xm, &xm);
            }
        } else {
            let ym = y.map.read();
            if plain_members(&xm) && plain_members(&ym) {
                return f(&xm, &ym);
            }
        }
    }
    let xm = x.map.read().clone();
    let ym = y.map.read().clone();
    f(&xm, &ym)
}

/// `a op b` when either operand is a set: `Some` with the result (or a
/// `TypeError` when the other operand is not a set), `None` when neither is.
pub fn binary(op: BinOp, a: &Value, b: &Value) -> Option<VResult<Value>> {
    let sym = match op {
        BinOp::BitOr | BinOp::BitAnd | BinOp::Sub | BinOp::BitXor => op.symbol(),
        _ => {
            return match (a, b) {
                (Value::Set(_), _) | (_, Value::Set(_)) => Some(Err(unsupported(op.symbol(), a, b))),
                _ => None,
            }
        }
    };
    let (x, y) = match (a, b) {
        (Value::Set(x), Value::Set(y)) => (x, y),
        (Value::Set(_), _) | (_, Value::Set(_)) => return Some(Err(unsupported(sym, a, b))),
        _ => return None,
    };
    let out = with_tables(x, y, |xm, ym| match op {
        BinOp::BitOr => union(xm, ym),
        BinOp::BitAnd => intersection(xm, ym),
        BinOp::Sub => difference(xm, ym),
        _ => symmetric_difference(xm, ym),
    });
    Some(Ok(Value::set(out)))
}

/// `a == b` for two sets: the same members, in any order.
pub(crate) fn equal(a: &SetObj, b: &SetObj) -> bool {
    if std::ptr::eq(a, b) {
        return true;
    }
    with_tables(a, b, |xm, ym| xm.len() == ym.len() && is_subset(xm, ym))
}

/// `<= < >= >` between two sets (subset and superset relations).
pub(crate) fn relation(op: CmpOp, a: &SetObj, b: &SetObj) -> bool {
    with_tables(a, b, |xm, ym| match op {
        CmpOp::LtE => is_subset(xm, ym),
        CmpOp::Lt => xm.len() < ym.len() && is_subset(xm, ym),
        CmpOp::GtE => is_subset(ym, xm),
        _ => ym.len() < xm.len() && is_subset(ym, xm),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use Value::Int as I;

    fn s(xs: &[i64]) -> Value {
        set_of(xs.iter().map(|&x| I(x))).must()
    }

    fn show(v: &Value) -> String {
        crate::format::str_of(v)
    }

    #[test]
    fn operators_keep_insertion_order() {
        let a = s(&[3, 1, 2, 0]);
        let b = s(&[2, 9]);
        assert_eq!(show(&binary(BinOp::BitOr, &b, &a).must().must()), "{2, 9, 3, 1, 0}");
        assert_eq!(show(&binary(BinOp::BitAnd, &a, &s(&[0, 3])).must().must()), "{3, 0}");
        assert_eq!(show(&binary(BinOp::Sub, &a, &s(&[1])).must().must()), "{3, 2, 0}");
        assert_eq!(
            show(&binary(BinOp::BitXor, &a, &s(&[0, 7, 3, 5])).must().must()),
            "{1, 2, 7, 5}"
        );
        assert_eq!(show(&binary(BinOp::BitOr, &a, &a).must().must()), "{3, 1, 2, 0}");
        assert_eq!(show(&s(&[])), "set()");
    }

    #[test]
    fn mixed_operands_are_type_errors() {
        let e = binary(BinOp::BitOr, &s(&[1]), &Value::list(vec![])).must().unwrap_err();
        assert_eq!(e.message, "unsupported operand type(s) for |: 'set' and 'list'");
        let e = binary(BinOp::Add, &s(&[1]), &s(&[2])).must().unwrap_err();
        assert_eq!(e.kind, ErrorKind::TypeError);
        assert!(binary(BinOp::BitOr, &I(1), &I(2)).is_none());
    }

    #[test]
    fn relations_and_equality() {
        let (Value::Set(a), Value::Set(b)) = (s(&[1, 2]), s(&[2, 1, 3])) else {
            unreachable!()
        };
        assert!(relation(CmpOp::LtE, &a, &b));
        assert!(relation(CmpOp::Lt, &a, &b));
        assert!(!relation(CmpOp::Lt, &a, &a));
        assert!(relation(CmpOp::GtE, &b, &a));
        assert!(relation(CmpOp::Gt, &b, &a));
        assert!(!equal(&a, &b));
        let Value::Set(c) = set_of([I(2), Value::Float(1.0)]).must() else {
            unreachable!()
        };
        assert!(equal(&a, &c));
    }

    #[test]
    fn equal_numbers_are_one_member_and_lists_are_unhashable() {
        assert_eq!(
            show(&set_of([I(1), Value::Float(1.0), Value::Bool(true)]).must()),
            "{1}"
        );
        let e = set_of([Value::list(vec![])]).unwrap_err();
        assert_eq!(e.message, "unhashable type: 'list'");
        let e = set_of([s(&[1])]).unwrap_err();
        assert_eq!(e.message, "unhashable type: 'set'");
    }
}
