//! Methods of lists and tuples. The receiver is `args[0]`; list locks are
//! never held while Apsi code runs (keys, equality of module objects).

use super::args::Args;
use crate::error::ErrorKind;
use crate::format::repr_of;
use crate::ops;
use crate::value::{err, Caller, Kwargs, ListObj, NativeFnPtr, VResult, Value};
use std::sync::Arc;

pub(crate) const LIST_NAMES: &[&str] = &[
    "append", "extend", "insert", "pop", "remove", "index", "count", "sort", "reverse", "copy", "clear",
];
pub(crate) const TUPLE_NAMES: &[&str] = &["index", "count"];

pub(crate) fn list_method(name: &str) -> Option<NativeFnPtr> {
    Some(match name {
        "append" => append,
        "extend" => extend,
        "insert" => insert,
        "pop" => pop,
        "remove" => remove,
        "index" => index,
        "count" => count,
        "sort" => sort,
        "reverse" => reverse,
        "copy" => copy,
        "clear" => clear,
        _ => return None,
    })
}

pub(crate) fn tuple_method(name: &str) -> Option<NativeFnPtr> {
    Some(match name {
        "index" => index,
        "count" => count,
        _ => return None,
    })
}

fn recv<'a>(args: &'a [Value], name: &str) -> VResult<(&'a Arc<ListObj>, &'a [Value])> {
    match args.split_first() {
        Some((Value::List(l), rest)) => Ok((l, rest)),
        _ => Err(err(
            ErrorKind::TypeError,
            format!("list.{name}() needs a list receiver"),
        )),
    }
}

/// The elements of a list or tuple receiver (a snapshot).
fn elements(args: &[Value], name: &str) -> VResult<(Vec<Value>, Vec<Value>)> {
    match args.split_first() {
        Some((Value::List(l), rest)) => Ok((l.items.read().clone(), rest.to_vec())),
        Some((Value::Tuple(t), rest)) => Ok((t.0.to_vec(), rest.to_vec())),
        _ => Err(err(
            ErrorKind::TypeError,
            format!("{name}() needs a list or tuple receiver"),
        )),
    }
}

fn append(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (l, rest) = recv(args, "append")?;
    let a = Args::new("append", rest, kw, 1, &["x"])?;
    l.items.write().push(a.req(0)?.clone());
    Ok(Value::None)
}

fn extend(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (l, rest) = recv(args, "extend")?;
    let a = Args::new("extend", rest, kw, 1, &["xs"])?;
    let more = ops::iterate(c, a.req(0)?)?;
    l.items.write().extend(more);
    Ok(Value::None)
}

fn insert(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (l, rest) = recv(args, "insert")?;
    let a = Args::new("insert", rest, kw, 2, &["i", "x"])?;
    let i = a.int(0)?;
    let x = a.req(1)?.clone();
    let mut items = l.items.write();
    let n = items.len() as i64;
    let at = if i < 0 { (i + n).max(0) } else { i.min(n) };
    items.insert(at as usize, x);
    Ok(Value::None)
}

fn pop(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (l, rest) = recv(args, "pop")?;
    let a = Args::new("pop", rest, kw, 0, &["i"])?;
    let i = a.int_or(0, -1)?;
    let mut items = l.items.write();
    if items.is_empty() {
        return Err(err(ErrorKind::IndexError, "pop from an empty list"));
    }
    let n = items.len() as i64;
    let j = if i < 0 { i + n } else { i };
    if j < 0 || j >= n {
        return Err(err(
            ErrorKind::IndexError,
            format!("pop index {i} out of range (length {n})"),
        ));
    }
    Ok(items.remove(j as usize))
}

fn remove(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (l, rest) = recv(args, "remove")?;
    let a = Args::new("remove", rest, kw, 1, &["x"])?;
    let x = a.req(0)?;
    // Scanned as it is at each step.
    let found = ops::list_position(l, x, 0, usize::MAX)?;
    remove_found(l, x, found)?;
    Ok(Value::None)
}

/// The end of `l.remove(x)` once its scan found index `found` (or none,
/// a `ValueError`): that element goes (CPython's `list.remove`), if an
/// `__eq__` has not shortened the list meanwhile. The dispatch loop's scan
/// (`Ret::Scan`) ends here too.
pub(crate) fn remove_found(l: &ListObj, x: &Value, found: Option<usize>) -> VResult<()> {
    let Some(i) = found else {
        return Err(err(
            ErrorKind::ValueError,
            format!("list.remove(x): {} is not in the list", repr_of(x)),
        ));
    };
    let mut items = l.items.write();
    if i < items.len() {
        // Dropped after the lock is let go, not under it.
        let gone = items.remove(i);
        drop(items);
        drop(gone);
    }
    Ok(())
}

fn clamp_bound(i: i64, n: usize) -> usize {
    let n = n as i64;
    (if i < 0 { (i + n).max(0) } else { i.min(n) }) as usize
}

fn index(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let Some((Value::List(l), rest)) = args.split_first() else {
        return tuple_index(args, kw);
    };
    let a = Args::new("index", rest, kw, 1, &["x", "start", "stop"])?;
    let n = l.items.read().len();
    let start = clamp_bound(a.int_or(1, 0)?, n);
    let stop = clamp_bound(a.int_or(2, n as i64)?, n);
    let x = a.req(0)?;
    match ops::list_position(l, x, start, stop)? {
        Some(i) => Ok(Value::Int(i as i64)),
        None => Err(err(ErrorKind::ValueError, format!("{} is not in the list", repr_of(x)))),
    }
}

/// `tuple.index`: on the tuple's own items (it cannot change).
fn tuple_index(args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (items, rest) = elements(args, "index")?;
    let a = Args::new("index", &rest, kw, 1, &["x", "start", "stop"])?;
    let start = clamp_bound(a.int_or(1, 0)?, items.len());
    let stop = clamp_bound(a.int_or(2, items.len() as i64)?, items.len());
    let x = a.req(0)?;
    for (i, v) in items.iter().enumerate().take(stop).skip(start) {
        if ops::eq_or_same(v, x)? {
            return Ok(Value::Int(i as i64));
        }
    }
    Err(err(
        ErrorKind::ValueError,
        format!("{} is not in the {}", repr_of(x), args[0].type_name()),
    ))
}

fn count(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    if let Some((Value::List(l), rest)) = args.split_first() {
        // Scanned as it is at each step, as CPython's `list.count`.
        let a = Args::new("count", rest, kw, 1, &["x"])?;
        let x = a.req(0)?;
        let (mut n, mut i) = (0, 0);
        while let Some(at) = ops::list_position(l, x, i, usize::MAX)? {
            n += 1;
            i = at + 1;
        }
        return Ok(Value::Int(n));
    }
    let (items, rest) = elements(args, "count")?;
    let a = Args::new("count", &rest, kw, 1, &["x"])?;
    let x = a.req(0)?;
    let mut n = 0;
    for v in &items {
        if ops::eq_or_same(v, x)? {
            n += 1;
        }
    }
    Ok(Value::Int(n))
}

fn sort(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (l, rest) = recv(args, "sort")?;
    let a = Args::new("sort", rest, kw, 0, &["key", "reverse"])?;
    if !rest.is_empty() {
        return Err(err(
            ErrorKind::TypeError,
            "list.sort() takes only keyword arguments (key=, reverse=)",
        ));
    }
    let snapshot = l.items.read().clone();
    let sorted = super::sort::sort_values(c, snapshot, a.opt(0), a.bool_or(1, false)?)?;
    *l.items.write() = sorted;
    Ok(Value::None)
}

fn reverse(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (l, rest) = recv(args, "reverse")?;
    Args::new("reverse", rest, kw, 0, &[])?;
    l.items.write().reverse();
    Ok(Value::None)
}

fn copy(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (l, rest) = recv(args, "copy")?;
    Args::new("copy", rest, kw, 0, &[])?;
    let items = l.items.read().clone();
    Ok(Value::list(items))
}

fn clear(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (l, rest) = recv(args, "clear")?;
    Args::new("clear", rest, kw, 0, &[])?;
    l.items.write().clear();
    Ok(Value::None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::str_of;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use crate::ops::NoCaller;
    use Value::Int as I;

    fn call(name: &str, recv: &Value, args: &[Value]) -> VResult<Value> {
        let f = list_method(name).or_else(|| tuple_method(name)).must();
        let mut all = vec![recv.clone()];
        all.extend_from_slice(args);
        f(&mut NoCaller, &all, &[])
    }

    #[test]
    fn list_methods_follow_the_conformance_program() {
        let xs = Value::list(vec![I(3), I(1), I(2)]);
        call("append", &xs, &[I(5)]).must();
        call("insert", &xs, &[I(0), I(9)]).must();
        assert_eq!(str_of(&xs), "[9, 3, 1, 2, 5]");
        assert_eq!(str_of(&call("pop", &xs, &[]).must()), "5");
        assert_eq!(str_of(&xs), "[9, 3, 1, 2]");
        call("sort", &xs, &[]).must();
        assert_eq!(str_of(&xs), "[1, 2, 3, 9]");
        call("reverse", &xs, &[]).must();
        assert_eq!(str_of(&call("index", &xs, &[I(3)]).must()), "1");
        assert_eq!(call("index", &xs, &[I(7)]).unwrap_err().kind, ErrorKind::ValueError);
        call("remove", &xs, &[I(3)]).must();
        assert_eq!(str_of(&xs), "[9, 2, 1]");
        assert_eq!(call("remove", &xs, &[I(3)]).unwrap_err().kind, ErrorKind::ValueError);
        call("extend", &xs, std::slice::from_ref(&xs)).must();
        assert_eq!(str_of(&xs), "[9, 2, 1, 9, 2, 1]");
        assert_eq!(str_of(&call("count", &xs, &[I(9)]).must()), "2");
        assert_eq!(call("pop", &xs, &[I(10)]).unwrap_err().kind, ErrorKind::IndexError);
        let c = call("copy", &xs, &[]).must();
        call("clear", &xs, &[]).must();
        assert_eq!(str_of(&xs), "[]");
        assert_eq!(str_of(&c), "[9, 2, 1, 9, 2, 1]");
        assert_eq!(call("pop", &xs, &[]).unwrap_err().kind, ErrorKind::IndexError);
        let t = Value::tuple(vec![I(1), I(2), I(1)]);
        assert_eq!(str_of(&call("count", &t, &[I(1)]).must()), "2");
        assert_eq!(str_of(&call("index", &t, &[I(2)]).must()), "1");
    }
}
