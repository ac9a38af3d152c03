//! `set(iterable)` and the methods of sets (LANGUAGE.md §10.6). The
//! receiver is `args[0]`. The non-mutating methods and `update` take any
//! iterable (`union`, `intersection`, `difference` and `update` take
//! several); results keep insertion order as the operators do
//! (`ops::sets`).

use super::args::Args;
use crate::error::ErrorKind;
use crate::format::repr_of;
use crate::ops::sets::{self, map_of_iterable};
use crate::value::{err, Caller, DictMap, HashKey, Kwargs, NativeFnPtr, SetObj, VResult, Value};
use std::sync::Arc;

pub(crate) const NAMES: &[&str] = &[
    "add",
    "remove",
    "discard",
    "pop",
    "clear",
    "copy",
    "update",
    "union",
    "intersection",
    "difference",
    "symmetric_difference",
    "issubset",
    "issuperset",
    "isdisjoint",
];

pub(crate) fn method(name: &str) -> Option<NativeFnPtr> {
    Some(match name {
        "add" => add,
        "remove" => remove,
        "discard" => discard,
        "pop" => pop,
        "clear" => clear,
        "copy" => copy,
        "update" => update,
        "union" => union,
        "intersection" => intersection,
        "difference" => difference,
        "symmetric_difference" => symmetric_difference,
        "issubset" => issubset,
        "issuperset" => issuperset,
        "isdisjoint" => isdisjoint,
        _ => return None,
    })
}

/// `set()` / `set(iterable)`.
pub(crate) fn set_ctor(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("set", args, kw, 0, &["iterable"])?;
    Ok(Value::set(match a.get(0) {
        None => DictMap::new(),
        Some(v) => map_of_iterable(c, v)?,
    }))
}

fn recv<'a>(args: &'a [Value], name: &str) -> VResult<(&'a Arc<SetObj>, &'a [Value])> {
    match args.split_first() {
        Some((Value::Set(s), rest)) => Ok((s, rest)),
        _ => Err(err(ErrorKind::TypeError, format!("set.{name}() needs a set receiver"))),
    }
}

/// The receiver and the member tables of its (any number of) iterable arguments.
fn with_others<'a>(
    c: &mut dyn Caller,
    args: &'a [Value],
    kw: Kwargs,
    name: &str,
) -> VResult<(&'a Arc<SetObj>, Vec<DictMap>)> {
    let (s, rest) = recv(args, name)?;
    if let Some((k, _)) = kw.first() {
        return Err(err(
            ErrorKind::TypeError,
            format!("{name}() got an unexpected keyword argument '{k}'"),
        ));
    }
    let mut others = Vec::with_capacity(rest.len());
    for v in rest {
        others.push(map_of_iterable(c, v)?);
    }
    Ok((s, others))
}

/// The receiver and the member table of its one iterable argument.
fn with_other<'a>(
    c: &mut dyn Caller,
    args: &'a [Value],
    kw: Kwargs,
    name: &'static str,
) -> VResult<(&'a Arc<SetObj>, DictMap)> {
    let (s, rest) = recv(args, name)?;
    let a = Args::new(name, rest, kw, 1, &["other"])?;
    let other = map_of_iterable(c, a.req(0)?)?;
    Ok((s, other))
}

fn member(args: &Args) -> VResult<HashKey> {
    HashKey::new(args.req(0)?.clone())
}

fn add(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (s, rest) = recv(args, "add")?;
    let k = member(&Args::new("add", rest, kw, 1, &["elem"])?)?;
    let mut m = s.map.write();
    if !m.contains_key(&k) {
        m.insert(k, Value::None);
    }
    Ok(Value::None)
}

fn remove(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (s, rest) = recv(args, "remove")?;
    let a = Args::new("remove", rest, kw, 1, &["elem"])?;
    let k = member(&a)?;
    let removed = s.map.write().remove(&k);
    match removed {
        Some(_) => Ok(Value::None),
        None => Err(err(ErrorKind::KeyError, repr_of(k.value()))),
    }
}

fn discard(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (s, rest) = recv(args, "discard")?;
    let k = member(&Args::new("discard", rest, kw, 1, &["elem"])?)?;
    let removed = s.map.write().remove(&k);
    drop(removed);
    Ok(Value::None)
}

/// Removes and returns the first member (insertion order).
fn pop(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (s, rest) = recv(args, "pop")?;
    Args::new("pop", rest, kw, 0, &[])?;
    let mut m = s.map.write();
    let Some(first) = m.keys().next().cloned() else {
        return Err(err(ErrorKind::KeyError, "'pop from an empty set'"));
    };
    m.remove(&first);
    Ok(first.into_value())
}

fn clear(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (s, rest) = recv(args, "clear")?;
    Args::new("clear", rest, kw, 0, &[])?;
    let old = std::mem::take(&mut *s.map.write());
    drop(old);
    Ok(Value::None)
}

fn copy(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (s, rest) = recv(args, "copy")?;
    Args::new("copy", rest, kw, 0, &[])?;
    let m = s.map.read().clone();
    Ok(Value::set(m))
}

fn update(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (s, others) = with_others(c, args, kw, "update")?;
    let mut m = s.map.write();
    for o in others {
        for (k, _) in o {
            if !m.contains_key(&k) {
                m.insert(k, Value::None);
            }
        }
    }
    Ok(Value::None)
}

/// Folds the receiver's members with each argument in turn.
fn fold(
    c: &mut dyn Caller,
    args: &[Value],
    kw: Kwargs,
    name: &str,
    f: fn(&DictMap, &DictMap) -> DictMap,
) -> VResult<Value> {
    let (s, others) = with_others(c, args, kw, name)?;
    let mut acc = s.map.read().clone();
    for o in &others {
        acc = f(&acc, o);
    }
    Ok(Value::set(acc))
}

fn union(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    fold(c, args, kw, "union", sets::union)
}

fn intersection(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    fold(c, args, kw, "intersection", sets::intersection)
}

fn difference(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    fold(c, args, kw, "difference", sets::difference)
}

fn symmetric_difference(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (s, other) = with_other(c, args, kw, "symmetric_difference")?;
    let mine = s.map.read().clone();
    Ok(Value::set(sets::symmetric_difference(&mine, &other)))
}

fn issubset(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (s, other) = with_other(c, args, kw, "issubset")?;
    let mine = s.map.read().clone();
    Ok(Value::Bool(sets::is_subset(&mine, &other)))
}

fn issuperset(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (s, other) = with_other(c, args, kw, "issuperset")?;
    let mine = s.map.read().clone();
    Ok(Value::Bool(sets::is_subset(&other, &mine)))
}

fn isdisjoint(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (s, other) = with_other(c, args, kw, "isdisjoint")?;
    let mine = s.map.read().clone();
    Ok(Value::Bool(sets::is_disjoint(&mine, &other)))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use crate::ops::NoCaller;
    use Value::Int as I;

    fn call(name: &str, args: &[Value]) -> VResult<Value> {
        let f = method(name).must();
        f(&mut NoCaller, args, &[])
    }

    fn show(v: &Value) -> String {
        crate::format::str_of(v)
    }

    #[test]
    fn mutating_methods_keep_insertion_order() {
        let s = set_ctor(&mut NoCaller, &[Value::list(vec![I(3), I(1), I(2)])], &[]).must();
        call("add", &[s.clone(), I(1)]).must();
        call("add", &[s.clone(), I(0)]).must();
        assert_eq!(show(&s), "{3, 1, 2, 0}");
        assert_eq!(show(&call("pop", std::slice::from_ref(&s)).must()), "3");
        call("remove", &[s.clone(), I(2)]).must();
        call("add", &[s.clone(), I(2)]).must();
        assert_eq!(show(&s), "{1, 0, 2}");
        let e = call("remove", &[s.clone(), I(9)]).unwrap_err();
        assert_eq!((e.kind, e.message.as_str()), (ErrorKind::KeyError, "9"));
        call("discard", &[s.clone(), I(9)]).must();
        call(
            "update",
            &[s.clone(), Value::list(vec![I(7)]), Value::tuple(vec![I(1), I(8)])],
        )
        .must();
        assert_eq!(show(&s), "{1, 0, 2, 7, 8}");
        let c = call("copy", std::slice::from_ref(&s)).must();
        call("clear", std::slice::from_ref(&c)).must();
        assert_eq!(
            (show(&c), show(&s)),
            ("set()".to_string(), "{1, 0, 2, 7, 8}".to_string())
        );
        assert_eq!(call("pop", &[c]).unwrap_err().kind, ErrorKind::KeyError);
        assert_eq!(
            call("add", &[s, Value::list(vec![])]).unwrap_err().message,
            "unhashable type: 'list'"
        );
    }

    #[test]
    fn set_algebra_methods_take_iterables() {
        let s = set_ctor(&mut NoCaller, &[Value::list(vec![I(1), I(2), I(3)])], &[]).must();
        let l = Value::list(vec![I(3), I(4)]);
        assert_eq!(show(&call("union", &[s.clone(), l.clone()]).must()), "{1, 2, 3, 4}");
        assert_eq!(show(&call("union", std::slice::from_ref(&s)).must()), "{1, 2, 3}");
        assert_eq!(show(&call("intersection", &[s.clone(), l.clone()]).must()), "{3}");
        assert_eq!(
            show(&call("difference", &[s.clone(), l.clone(), Value::list(vec![I(1)])]).must()),
            "{2}"
        );
        assert_eq!(
            show(&call("symmetric_difference", &[s.clone(), l.clone()]).must()),
            "{1, 2, 4}"
        );
        assert!(matches!(
            call("issubset", &[s.clone(), Value::list(vec![I(3), I(2), I(1)])]).must(),
            Value::Bool(true)
        ));
        assert!(matches!(
            call("issuperset", &[s.clone(), l.clone()]).must(),
            Value::Bool(false)
        ));
        assert!(matches!(
            call("isdisjoint", &[s.clone(), Value::list(vec![I(9)])]).must(),
            Value::Bool(true)
        ));
        assert_eq!(
            call("issubset", std::slice::from_ref(&s)).unwrap_err().kind,
            ErrorKind::TypeError
        );
        assert_eq!(
            call("union", &[s, I(3)]).unwrap_err().message,
            "'int' object is not iterable"
        );
    }
}
