//! `a op= b` on the built-in mutable containers, in place as Python does
//! (docs/LANGUAGE.md, "Augmented assignment"):
//! - `xs += it` extends the list `xs` with any iterable (`xs += "ab"`,
//!   `xs += range(3)`), `xs *= n` repeats it;
//! - `s |= t`, `s &= t`, `s -= t`, `s ^= t` change the set `s` (`t` a set);
//! - `d |= m` updates the dict `d` (`m` a dict or an iterable of pairs).
//!
//! Every other name bound to the container sees the change, and a loop of
//! `xs += [x]` costs what `append` costs instead of copying `xs` each time.
//! Strings, tuples and numbers are immutable: `a op= b` is `a = a op b`
//! for them (a string held only by the assigned variable is appended to in
//! place by the VM, which no one can observe).
//!
//! Invariant: no lock is held while the right operand is iterated (a
//! generator runs Apsi code), and no two containers' locks are held at once.

use crate::syntax::ast::BinOp;
use crate::value::{Caller, HashKey, VResult, Value};

/// `a op= b` done in place: `Some(Ok(()))` when `a` was changed, `None` when
/// `a` is not a container this applies to (the caller computes `a op b`).
pub(crate) fn container(c: &mut dyn Caller, op: BinOp, a: &Value, b: &Value) -> Option<VResult<()>> {
    match (op, a) {
        (BinOp::Add, Value::List(l)) => Some(extend_list(c, l, b)),
        (BinOp::Mul, Value::List(l)) => match b {
            Value::Int(_) | Value::Bool(_) => Some(repeat_list(a, l, b)),
            _ => None,
        },
        (BinOp::BitOr | BinOp::BitAnd | BinOp::Sub | BinOp::BitXor, Value::Set(s)) => match b {
            Value::Set(t) => {
                set_inplace(op, s, t);
                Some(Ok(()))
            }
            _ => None,
        },
        (BinOp::BitOr, Value::Dict(d)) => Some(update_dict(c, d, b)),
        _ => None,
    }
}

fn extend_list(c: &mut dyn Caller, l: &crate::value::ListObj, b: &Value) -> VResult<()> {
    let more = match b {
        // Read under the right operand's lock alone (`xs += xs` included).
        Value::List(m) => m.items.read().clone(),
        Value::Tuple(t) => t.0.to_vec(),
        _ => super::iterate(c, b)?,
    };
    l.items.write().extend(more);
    Ok(())
}

/// `xs *= n`: `xs * n` (with its limits) moved into `xs`.
fn repeat_list(a: &Value, l: &crate::value::ListObj, n: &Value) -> VResult<()> {
    let count = match n {
        Value::Int(i) => (*i).max(0) as usize,
        Value::Bool(b) => *b as usize,
        _ => 0,
    };
    let Value::List(out) = super::arith::repeat(a, count)? else {
        return Ok(());
    };
    let out = std::mem::take(&mut *out.items.write());
    *l.items.write() = out;
    Ok(())
}

fn set_inplace(op: BinOp, s: &crate::value::SetObj, t: &crate::value::SetObj) {
    use super::sets;
    if std::ptr::eq(s, t) {
        // `s |= s` and `s &= s` leave `s` as it is; `s -= s`, `s ^= s` empty it.
        if matches!(op, BinOp::Sub | BinOp::BitXor) {
            s.map.write().clear();
        }
        return;
    }
    let out = match op {
        BinOp::BitOr => {
            // Only the members `s` lacks are new: copy `t`'s (not `s`'s).
            let more: Vec<(u64, HashKey)> = t.map.read().iter_hashed().map(|(h, k)| (h, k.clone())).collect();
            let mut m = s.map.write();
            for (h, k) in more {
                if !m.contains_hashed(h, &k) {
                    m.push_absent(h, k, Value::None);
                }
            }
            return;
        }
        BinOp::BitAnd => sets::with_tables(s, t, sets::intersection),
        BinOp::Sub => sets::with_tables(s, t, sets::difference),
        _ => sets::with_tables(s, t, sets::symmetric_difference),
    };
    *s.map.write() = out;
}

fn update_dict(c: &mut dyn Caller, d: &crate::value::DictObj, b: &Value) -> VResult<()> {
    let mut pairs = Vec::new();
    crate::builtins::types::update_from(c, &mut pairs, b)?;
    d.map.write().extend(pairs);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::ops::Must;
    use crate::ops::NoCaller;
    use Value::Int as I;

    fn show(v: &Value) -> String {
        crate::format::str_of(v)
    }

    #[test]
    fn lists_grow_in_place() {
        let xs = Value::list(vec![I(1)]);
        let alias = xs.clone();
        container(&mut NoCaller, BinOp::Add, &xs, &Value::tuple(vec![I(2)]))
            .unwrap()
            .must();
        container(&mut NoCaller, BinOp::Add, &xs, &xs.clone()).unwrap().must();
        assert_eq!(show(&alias), "[1, 2, 1, 2]");
        container(&mut NoCaller, BinOp::Mul, &xs, &I(2)).unwrap().must();
        assert_eq!(show(&alias), "[1, 2, 1, 2, 1, 2, 1, 2]");
        container(&mut NoCaller, BinOp::Mul, &xs, &I(-1)).unwrap().must();
        assert_eq!(show(&alias), "[]");
        let e = container(&mut NoCaller, BinOp::Add, &xs, &I(3)).unwrap().unwrap_err();
        assert_eq!(e.kind, ErrorKind::TypeError);
        assert!(container(&mut NoCaller, BinOp::Mul, &xs, &Value::Float(2.0)).is_none());
    }

    #[test]
    fn sets_change_in_place_and_keep_order() {
        let s = crate::ops::sets::set_of([I(3), I(1), I(2)]).must();
        let t = crate::ops::sets::set_of([I(2), I(9)]).must();
        let alias = s.clone();
        container(&mut NoCaller, BinOp::BitOr, &s, &t).unwrap().must();
        assert_eq!(show(&alias), "{3, 1, 2, 9}");
        container(&mut NoCaller, BinOp::Sub, &s, &t).unwrap().must();
        assert_eq!(show(&alias), "{3, 1}");
        container(&mut NoCaller, BinOp::BitXor, &s, &t).unwrap().must();
        assert_eq!(show(&alias), "{3, 1, 2, 9}");
        container(&mut NoCaller, BinOp::BitAnd, &s, &t).unwrap().must();
        assert_eq!(show(&alias), "{2, 9}");
        container(&mut NoCaller, BinOp::BitXor, &s, &s.clone()).unwrap().must();
        assert_eq!(show(&alias), "set()");
        assert!(container(&mut NoCaller, BinOp::BitOr, &s, &Value::list(vec![])).is_none());
    }
}
