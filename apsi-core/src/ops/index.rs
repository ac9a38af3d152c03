//! Indexing and slicing: `x[i]`, `x[a:b:s]`, `x[i] = v`, `x[a:b] = xs`.

use super::protocol::call_dunder;
use crate::error::ErrorKind;
use crate::value::{err, Caller, Exc, HashKey, RangeObj, SliceObj, VResult, Value};
use std::sync::Arc;

/// An index operand as an int (bools count as 0 and 1, as in Python).
fn as_index(container: &str, idx: &Value) -> VResult<i64> {
    match idx {
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(*b as i64),
        other => Err(err(
            ErrorKind::TypeError,
            format!(
                "{container} indices must be integers or slices, not {}",
                other.type_name()
            ),
        )),
    }
}

/// Resolves a possibly negative index against `len`.
fn resolve(container: &str, i: i64, len: usize) -> VResult<usize> {
    // In 128 bits: a range may have more than `i64::MAX` items.
    let n = len as i128;
    let j = if i < 0 { i as i128 + n } else { i as i128 };
    if j < 0 || j >= n {
        return Err(err(
            ErrorKind::IndexError,
            format!("{container} index {i} out of range (length {len})"),
        ));
    }
    Ok(j as usize)
}

fn slice_part(v: &Value) -> VResult<Option<i64>> {
    match v {
        Value::None => Ok(None),
        Value::Int(i) => Ok(Some(*i)),
        Value::Bool(b) => Ok(Some(*b as i64)),
        other => Err(err(
            ErrorKind::TypeError,
            format!("slice indices must be integers or none, not {}", other.type_name()),
        )),
    }
}

/// Python's `slice.indices(len)`: the concrete `(start, stop, step)` and the
/// number of selected elements. A zero step is a `ValueError`.
pub fn slice_indices(s: &SliceObj, len: usize) -> VResult<(i64, i64, i64, usize)> {
    let (start, stop, step, count) = slice_bounds(s, len as i128)?;
    // A container's length fits in an i64, so its bounds do (they lie in
    // -1..=len), and the step is a slice part (an i64).
    Ok((start as i64, stop as i64, step as i64, count as usize))
}

/// `slice_indices` for `n` items, in 128 bits: a range may have more than
/// `i64::MAX` items, and no bound or step can overflow on the way.
fn slice_bounds(s: &SliceObj, n: i128) -> VResult<(i128, i128, i128, i128)> {
    let step = slice_part(&s.step)?.unwrap_or(1) as i128;
    if step == 0 {
        return Err(err(ErrorKind::ValueError, "slice step cannot be zero"));
    }
    let clamp = |v: Option<i64>, default: i128| -> i128 {
        match v {
            None => default,
            Some(i) => {
                let i = i as i128;
                let i = if i < 0 { i + n } else { i };
                if step > 0 {
                    i.clamp(0, n)
                } else {
                    i.clamp(-1, n - 1)
                }
            }
        }
    };
    let (start, stop) = if step > 0 {
        (clamp(slice_part(&s.start)?, 0), clamp(slice_part(&s.stop)?, n))
    } else {
        (clamp(slice_part(&s.start)?, n - 1), clamp(slice_part(&s.stop)?, -1))
    };
    let count = if step > 0 {
        if stop > start {
            (stop - start - 1) / step + 1
        } else {
            0
        }
    } else if start > stop {
        (start - stop - 1) / (-step) + 1
    } else {
        0
    };
    Ok((start, stop, step, count))
}

/// The items of `items[s]`; a step-1 slice is copied whole by `copy`.
fn pick_with<T: Clone>(items: &[T], s: &SliceObj, copy: fn(&[T]) -> Vec<T>) -> VResult<Vec<T>> {
    let (start, _, step, count) = slice_indices(s, items.len())?;
    if step == 1 {
        return Ok(items
            .get(start as usize..start as usize + count)
            .map(copy)
            .unwrap_or_default());
    }
    let mut out = Vec::with_capacity(count);
    let mut i = start;
    for _ in 0..count {
        if let Some(x) = items.get(i as usize) {
            out.push(x.clone());
        }
        i += step;
    }
    Ok(out)
}

fn pick<T: Clone>(items: &[T], s: &SliceObj) -> VResult<Vec<T>> {
    pick_with(items, s, <[T]>::to_vec)
}

/// `pick` for values: a step-1 slice copied with `clone_all`.
fn pick_values(items: &[Value], s: &SliceObj) -> VResult<Vec<Value>> {
    pick_with(items, s, crate::value::clone_all)
}

fn not_subscriptable(v: &Value) -> Exc {
    err(
        ErrorKind::TypeError,
        format!("'{}' object is not subscriptable", v.type_name()),
    )
}

/// `obj[idx]`.
pub fn get_index(obj: &Value, idx: &Value) -> VResult<Value> {
    if let Value::Struct(s) = obj {
        if let Some(r) = super::dunder::get_index(obj, idx) {
            return r;
        }
        return Err(err(
            ErrorKind::TypeError,
            format!("'{}' object is not subscriptable (it has no __getitem__)", s.ty.name),
        ));
    }
    match obj {
        Value::List(l) => {
            if let Value::Slice(s) = idx {
                let items = l.items.read();
                return Ok(Value::list(pick_values(&items, s)?));
            }
            let i = as_index("list", idx)?;
            let items = l.items.read();
            let j = resolve("list", i, items.len())?;
            Ok(items[j].clone())
        }
        Value::Tuple(t) => {
            if let Value::Slice(s) = idx {
                return Ok(Value::tuple(pick_values(&t.0, s)?));
            }
            let j = resolve("tuple", as_index("tuple", idx)?, t.0.len())?;
            Ok(t.0[j].clone())
        }
        Value::Str(s) => {
            if let Value::Slice(sl) = idx {
                if s.is_ascii() {
                    let bytes: Vec<u8> = pick(s.as_str().as_bytes(), sl)?;
                    return Ok(Value::str(String::from_utf8_lossy(&bytes).into_owned()));
                }
                let chars: Vec<char> = s.as_str().chars().collect();
                return Ok(Value::str(pick(&chars, sl)?.into_iter().collect::<String>()));
            }
            let j = resolve("string", as_index("string", idx)?, s.char_len())?;
            let c = s
                .char_at(j)
                .ok_or_else(|| err(ErrorKind::IndexError, "string index out of range"))?;
            Ok(Value::char(c))
        }
        Value::Range(r) => {
            // Exact: a range over all the 64-bit ints has 2**64 - 1 items.
            let wide = r.len_wide();
            if let Value::Slice(s) = idx {
                let (start, _, step, count) = slice_bounds(s, wide)?;
                let fit = |v: i128| {
                    i64::try_from(v)
                        .map_err(|_| err(ErrorKind::OverflowError, "range slice does not fit in 64-bit ints"))
                };
                let new_start = r.start as i128 + start * r.step as i128;
                let new_step = r.step as i128 * step;
                // Any stop past the last item will do: one step past it may
                // not fit in 64 bits when the last item nearly does not.
                let (new_start, new_stop) = if count == 0 {
                    let at = fit(new_start).unwrap_or(r.stop);
                    (at, at)
                } else {
                    let last = new_start + (count - 1) * new_step;
                    let past = (last + new_step).clamp(i64::MIN as i128, i64::MAX as i128);
                    if past == last {
                        return Err(err(ErrorKind::OverflowError, "range slice does not fit in 64-bit ints"));
                    }
                    (fit(new_start)?, past as i64)
                };
                return Ok(Value::Range(Arc::new(RangeObj {
                    start: new_start,
                    stop: new_stop,
                    step: fit(new_step)?,
                })));
            }
            let len = usize::try_from(wide).unwrap_or(usize::MAX);
            let j = resolve("range object", as_index("range", idx)?, len)?;
            // In range, so it fits; the product alone may not (i128).
            Ok(Value::Int((r.start as i128 + j as i128 * r.step as i128) as i64))
        }
        Value::Bytes(b) => {
            if let Value::Slice(s) = idx {
                return Ok(Value::bytes(pick(&b.0, s)?));
            }
            let j = resolve("bytes", as_index("byte", idx)?, b.0.len())?;
            Ok(Value::Int(b.0[j] as i64))
        }
        Value::Dict(d) => {
            let key = HashKey::new(idx.clone())?;
            let found = d.map.read().get(&key).cloned();
            found.ok_or_else(|| err(ErrorKind::KeyError, crate::format::repr_of(idx)))
        }
        Value::Object(o) if o.0.protocols().item => o.0.get_item(obj, idx),
        Value::Object(_) => {
            call_dunder(obj, "__getitem__", std::slice::from_ref(idx)).unwrap_or_else(|| Err(not_subscriptable(obj)))
        }
        other => Err(not_subscriptable(other)),
    }
}

/// `obj[idx] = v`.
pub fn set_index(obj: &Value, idx: &Value, v: Value) -> VResult<()> {
    if let Value::Struct(s) = obj {
        if let Some(r) = super::dunder::set_index(obj, idx, v) {
            return r;
        }
        return Err(err(
            ErrorKind::TypeError,
            format!(
                "'{}' object does not support item assignment (it has no __setitem__)",
                s.ty.name
            ),
        ));
    }
    match obj {
        Value::List(l) => {
            if let Value::Slice(s) = idx {
                let new_items = super::iter::iterate_plain(&v)?;
                let mut items = l.items.write();
                let (start, stop, step, count) = slice_indices(s, items.len())?;
                if step == 1 {
                    let lo = start as usize;
                    let hi = (stop.max(start)) as usize;
                    items.splice(lo..hi, new_items);
                    return Ok(());
                }
                if new_items.len() != count {
                    return Err(err(
                        ErrorKind::ValueError,
                        format!(
                            "attempt to assign a sequence of size {} to an extended slice of size {count}",
                            new_items.len()
                        ),
                    ));
                }
                let mut i = start;
                for x in new_items {
                    if let Some(slot) = items.get_mut(i as usize) {
                        *slot = x;
                    }
                    i += step;
                }
                return Ok(());
            }
            let i = as_index("list", idx)?;
            let mut items = l.items.write();
            let j = resolve("list assignment", i, items.len())?;
            items[j] = v;
            Ok(())
        }
        Value::Dict(d) => {
            let key = HashKey::new(idx.clone())?;
            d.map.write().insert(key, v);
            Ok(())
        }
        Value::Object(o) if o.0.protocols().item => o.0.set_item(obj, idx, v),
        Value::Object(_) => match call_dunder(obj, "__setitem__", &[idx.clone(), v]) {
            Some(r) => r.map(|_| ()),
            None => Err(no_item_assignment(obj)),
        },
        other => Err(no_item_assignment(other)),
    }
}

/// `del obj[idx]`: list items and slices, dict keys, a struct's
/// `__delitem__` (called through `caller`), a module object's `__delitem__`
/// hook; every other value refuses (`TypeError`).
pub fn del_index(caller: &mut dyn Caller, obj: &Value, idx: &Value) -> VResult<()> {
    match obj {
        Value::List(l) => {
            let mut items = l.items.write();
            if let Value::Slice(s) = idx {
                let (start, stop, step, count) = slice_indices(s, items.len())?;
                if step == 1 {
                    let lo = start as usize;
                    let hi = stop.max(start) as usize;
                    items.drain(lo..hi);
                    return Ok(());
                }
                // Mark the chosen positions, then keep the rest in order.
                let mut gone = vec![false; items.len()];
                let mut i = start;
                for _ in 0..count {
                    if let Some(g) = gone.get_mut(i as usize) {
                        *g = true;
                    }
                    i += step;
                }
                let mut k = 0;
                items.retain(|_| {
                    let keep = !gone.get(k).copied().unwrap_or(false);
                    k += 1;
                    keep
                });
                return Ok(());
            }
            let i = as_index("list", idx)?;
            let n = items.len() as i64;
            let j = if i < 0 { i + n } else { i };
            if j < 0 || j >= n {
                return Err(err(ErrorKind::IndexError, "list assignment index out of range"));
            }
            let removed = items.remove(j as usize);
            drop(items);
            drop(removed);
            Ok(())
        }
        Value::Dict(d) => {
            let key = HashKey::new(idx.clone())?;
            let removed = d.map.write().remove(&key);
            match removed {
                Some(_) => Ok(()),
                None => Err(err(ErrorKind::KeyError, crate::format::repr_of(idx))),
            }
        }
        Value::Struct(s) => {
            let hook = s.ty.methods.get("__delitem__").cloned();
            match hook {
                Some(f) => caller.call(&f, &[obj.clone(), idx.clone()], &[]).map(|_| ()),
                None => Err(no_item_deletion(obj)),
            }
        }
        Value::Object(_) => match call_dunder(obj, "__delitem__", std::slice::from_ref(idx)) {
            Some(r) => r.map(|_| ()),
            None => Err(no_item_deletion(obj)),
        },
        other => Err(no_item_deletion(other)),
    }
}

fn no_item_deletion(v: &Value) -> Exc {
    err(
        ErrorKind::TypeError,
        format!("'{}' object doesn't support item deletion", v.type_name()),
    )
}

fn no_item_assignment(v: &Value) -> Exc {
    err(
        ErrorKind::TypeError,
        format!("'{}' object does not support item assignment", v.type_name()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::str_of;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use Value::Int as I;

    fn sl(a: Value, b: Value, c: Value) -> Value {
        Value::Slice(Arc::new(SliceObj {
            start: a,
            stop: b,
            step: c,
        }))
    }
    fn ints(v: &[i64]) -> Value {
        Value::list(v.iter().map(|i| I(*i)).collect())
    }
    fn get(o: &Value, i: Value) -> String {
        str_of(&get_index(o, &i).must())
    }

    #[test]
    fn list_indexing_and_errors() {
        let xs = ints(&[1, 2, 3]);
        assert_eq!(get(&xs, I(-1)), "3");
        let e = get_index(&xs, &I(7)).unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::IndexError, "list index 7 out of range (length 3)")
        );
        assert_eq!(get_index(&xs, &I(-4)).unwrap_err().kind, ErrorKind::IndexError);
        assert_eq!(
            get_index(&xs, &Value::Float(1.0)).unwrap_err().kind,
            ErrorKind::TypeError
        );
        assert_eq!(get(&xs, Value::Bool(true)), "2");
    }

    #[test]
    fn slices_with_steps() {
        let xs = ints(&[9, 3, 1, 2]);
        assert_eq!(get(&xs, sl(I(1), I(3), Value::None)), "[3, 1]");
        assert_eq!(get(&xs, sl(Value::None, Value::None, I(-1))), "[2, 1, 3, 9]");
        assert_eq!(get(&xs, sl(I(-1), I(0), I(-2))), "[2, 3]");
        assert_eq!(get(&xs, sl(I(100), Value::None, Value::None)), "[]");
        assert_eq!(
            get_index(&xs, &sl(Value::None, Value::None, I(0))).unwrap_err().kind,
            ErrorKind::ValueError
        );
        let s = Value::str("héllo wörld");
        assert_eq!(get(&s, I(1)), "é");
        assert_eq!(get(&s, I(-1)), "d");
        assert_eq!(get(&s, sl(I(0), I(5), Value::None)), "héllo");
        assert_eq!(get(&s, sl(Value::None, Value::None, I(-2))), "drwolh");
        assert_eq!(get(&Value::str("abcdef"), sl(I(1), Value::None, I(2))), "bdf");
        let t = Value::tuple(vec![I(1), I(2), I(3)]);
        assert_eq!(get(&t, sl(Value::None, I(1), Value::None)), "(1,)");
        let r = Value::Range(Arc::new(RangeObj {
            start: 0,
            stop: 10,
            step: 1,
        }));
        assert_eq!(get(&r, sl(I(1), Value::None, I(3))), "range(1, 10, 3)");
        assert_eq!(get(&r, sl(Value::None, Value::None, I(-1))), "range(9, -1, -1)");
        assert_eq!(get(&r, I(-1)), "9");
        let wide = Value::Range(Arc::new(RangeObj {
            start: i64::MIN,
            stop: i64::MAX,
            step: 1 << 62,
        }));
        assert_eq!(get(&wide, I(3)), "4611686018427387904");
    }

    #[test]
    fn slice_assignment() {
        let xs = ints(&[1, 2, 3, 4]);
        set_index(&xs, &sl(I(1), I(3), Value::None), ints(&[7, 8, 9])).must();
        assert_eq!(str_of(&xs), "[1, 7, 8, 9, 4]");
        set_index(&xs, &sl(Value::None, Value::None, I(2)), ints(&[0, 0, 0])).must();
        assert_eq!(str_of(&xs), "[0, 7, 0, 9, 0]");
        assert_eq!(
            set_index(&xs, &sl(Value::None, Value::None, I(2)), ints(&[1]))
                .unwrap_err()
                .kind,
            ErrorKind::ValueError
        );
        set_index(&xs, &sl(Value::None, Value::None, Value::None), xs.clone()).must();
        assert_eq!(str_of(&xs), "[0, 7, 0, 9, 0]");
        set_index(&xs, &I(-1), I(5)).must();
        assert_eq!(str_of(&xs), "[0, 7, 0, 9, 5]");
        assert_eq!(
            set_index(&Value::str("ab"), &I(0), I(1)).unwrap_err().kind,
            ErrorKind::TypeError
        );
    }

    #[test]
    fn deleting_items() {
        use crate::ops::NoCaller;
        let xs = ints(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        del_index(&mut NoCaller, &xs, &I(0)).must();
        del_index(&mut NoCaller, &xs, &I(-1)).must();
        assert_eq!(str_of(&xs), "[1, 2, 3, 4, 5, 6, 7, 8]");
        del_index(&mut NoCaller, &xs, &sl(I(2), I(4), Value::None)).must();
        assert_eq!(str_of(&xs), "[1, 2, 5, 6, 7, 8]");
        del_index(&mut NoCaller, &xs, &sl(Value::None, Value::None, I(2))).must();
        assert_eq!(str_of(&xs), "[2, 6, 8]");
        del_index(&mut NoCaller, &xs, &sl(Value::None, Value::None, I(-2))).must();
        assert_eq!(str_of(&xs), "[6]");
        del_index(&mut NoCaller, &xs, &sl(I(5), I(1), Value::None)).must();
        assert_eq!(str_of(&xs), "[6]");
        let e = del_index(&mut NoCaller, &xs, &I(1)).unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::IndexError, "list assignment index out of range")
        );
        assert_eq!(
            del_index(&mut NoCaller, &xs, &sl(I(0), I(1), I(0))).unwrap_err().kind,
            ErrorKind::ValueError
        );
        let d = Value::empty_dict();
        set_index(&d, &Value::str("a"), I(1)).must();
        del_index(&mut NoCaller, &d, &Value::str("a")).must();
        let e = del_index(&mut NoCaller, &d, &Value::str("a")).unwrap_err();
        assert_eq!((e.kind, e.message.as_str()), (ErrorKind::KeyError, "'a'"));
        let e = del_index(&mut NoCaller, &Value::tuple(vec![I(1)]), &I(0)).unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::TypeError, "'tuple' object doesn't support item deletion")
        );
        assert_eq!(
            del_index(&mut NoCaller, &Value::str("ab"), &I(0)).unwrap_err().kind,
            ErrorKind::TypeError
        );
    }

    #[test]
    fn dicts() {
        let d = Value::empty_dict();
        set_index(&d, &Value::str("a"), I(1)).must();
        assert_eq!(get(&d, Value::str("a")), "1");
        let e = get_index(&d, &Value::str("missing")).unwrap_err();
        assert_eq!((e.kind, e.message.as_str()), (ErrorKind::KeyError, "'missing'"));
        assert_eq!(get_index(&d, &ints(&[1])).unwrap_err().kind, ErrorKind::TypeError);
        assert_eq!(
            get_index(&I(3), &I(0)).unwrap_err().message,
            "'int' object is not subscriptable"
        );
    }
}
