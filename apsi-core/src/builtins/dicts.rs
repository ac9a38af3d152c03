//! Methods of dicts. The receiver is `args[0]`. `keys`, `values` and
//! `items` return lists (snapshots), a decision recorded for the docs; a
//! loop over `d.items()` walks the same snapshot as rows (`items_for`).

use super::args::Args;
use crate::error::ErrorKind;
use crate::format::repr_of;
use crate::value::{err, Caller, DictObj, HashKey, Kwargs, NativeFnPtr, VResult, Value};
use std::sync::Arc;

pub(crate) const NAMES: &[&str] = &[
    "keys",
    "values",
    "items",
    "get",
    "pop",
    "setdefault",
    "update",
    "copy",
    "clear",
];

pub(crate) fn method(name: &str) -> Option<NativeFnPtr> {
    Some(match name {
        "keys" => keys,
        "values" => values,
        "items" => items,
        "get" => get,
        "pop" => pop,
        "setdefault" => setdefault,
        "update" => update,
        "copy" => copy,
        "clear" => clear,
        _ => return None,
    })
}

fn recv<'a>(args: &'a [Value], name: &str) -> VResult<(&'a Arc<DictObj>, &'a [Value])> {
    match args.split_first() {
        Some((Value::Dict(d), rest)) => Ok((d, rest)),
        _ => Err(err(
            ErrorKind::TypeError,
            format!("dict.{name}() needs a dict receiver"),
        )),
    }
}

fn keys(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (d, rest) = recv(args, "keys")?;
    Args::new("keys", rest, kw, 0, &[])?;
    let ks = d.map.read().keys().map(|k| k.value().clone()).collect();
    Ok(Value::list(ks))
}

fn values(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (d, rest) = recv(args, "values")?;
    Args::new("values", rest, kw, 0, &[])?;
    let vs = d.map.read().values().cloned().collect();
    Ok(Value::list(vs))
}

fn items(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (d, rest) = recv(args, "items")?;
    Args::new("items", rest, kw, 0, &[])?;
    let its = d
        .map
        .read()
        .iter()
        .map(|(k, v)| Value::tuple_small(smallvec::smallvec![k.value().clone(), v.clone()]))
        .collect();
    Ok(Value::list(its))
}

/// `x.items()` as the iterable of a `for` loop or comprehension (the
/// compiler puts this in place of the method call: `Compiler::
/// for_iterable_to`). For a dict: the pairs taken at the same moment as
/// `items()` takes them, handed out as rows, so a loop that unpacks them
/// (`for k, v in d.items()`) builds no tuple per pair. Anything else:
/// its own `items` method, called as written.
pub(crate) fn items_for(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    match args {
        [Value::Dict(d)] if kw.is_empty() => {
            let g = d.map.read();
            let mut flat = Vec::with_capacity(2 * g.len());
            // By parts (`push_words`): a clone is returned through memory
            // written by parts, and pushing it whole stalled on every item.
            for (k, v) in g.iter() {
                crate::value::push_words(&mut flat, k.value().words());
                crate::value::push_words(&mut flat, v.words());
            }
            drop(g);
            Ok(crate::ops::iters::pairs(flat))
        }
        [obj] => {
            let m = crate::ops::get_attr(obj, "items")?;
            c.call(&m, &[], kw)
        }
        _ => Err(err(ErrorKind::TypeError, "items() takes no arguments")),
    }
}

/// The native the compiler calls for a loop's `x.items()` ([`items_for`]).
pub fn loop_items() -> Value {
    static F: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    F.get_or_init(|| Value::Native(Arc::new(crate::value::NativeFn::new("items", items_for))))
        .clone()
}

fn get(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (d, rest) = recv(args, "get")?;
    // `d.get(k)` and `d.get(k, default)` with a string or int key (counting
    // words, memo tables): the key's cached hash, no `HashKey`, no `Args`.
    if kw.is_empty() && (1..=2).contains(&rest.len()) {
        let found = d.map.read().get_plain(&rest[0]).map(|v| v.cloned());
        if let Some(found) = found {
            return Ok(found.unwrap_or_else(|| rest.get(1).cloned().unwrap_or(Value::None)));
        }
    }
    let a = Args::new("get", rest, kw, 1, &["key", "default"])?;
    let k = HashKey::new(a.req(0)?.clone())?;
    let found = d.map.read().get(&k).cloned();
    Ok(found.unwrap_or_else(|| a.get(1).cloned().unwrap_or(Value::None)))
}

fn pop(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (d, rest) = recv(args, "pop")?;
    let a = Args::new("pop", rest, kw, 1, &["key", "default"])?;
    let key = a.req(0)?;
    let k = HashKey::new(key.clone())?;
    let removed = d.map.write().remove(&k);
    match (removed, a.get(1)) {
        (Some(v), _) => Ok(v),
        (None, Some(default)) => Ok(default.clone()),
        (None, None) => Err(err(ErrorKind::KeyError, repr_of(key))),
    }
}

fn setdefault(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (d, rest) = recv(args, "setdefault")?;
    let a = Args::new("setdefault", rest, kw, 1, &["key", "default"])?;
    let k = HashKey::new(a.req(0)?.clone())?;
    let default = a.get(1).cloned().unwrap_or(Value::None);
    Ok(d.map.write().get_or_insert(k, default).clone())
}

fn update(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (d, rest) = recv(args, "update")?;
    if rest.len() > 1 {
        return Err(err(
            ErrorKind::TypeError,
            format!("update() takes at most 1 positional argument ({} given)", rest.len()),
        ));
    }
    let mut pairs = Vec::new();
    if let Some(src) = rest.first() {
        super::types::update_from(c, &mut pairs, src)?;
    }
    for (k, v) in kw {
        pairs.push((HashKey::new(Value::str(&**k))?, v.clone()));
    }
    d.map.write().extend(pairs);
    Ok(Value::None)
}

fn copy(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (d, rest) = recv(args, "copy")?;
    Args::new("copy", rest, kw, 0, &[])?;
    let m = d.map.read().clone();
    Ok(Value::dict(m))
}

fn clear(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (d, rest) = recv(args, "clear")?;
    Args::new("clear", rest, kw, 0, &[])?;
    d.map.write().clear();
    Ok(Value::None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::str_of;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use crate::ops::NoCaller;

    fn call(name: &str, recv: &Value, args: &[Value]) -> VResult<Value> {
        let mut all = vec![recv.clone()];
        all.extend_from_slice(args);
        method(name).must()(&mut NoCaller, &all, &[])
    }

    #[test]
    fn dict_methods() {
        let d = Value::empty_dict();
        crate::ops::set_index(&d, &Value::str("b"), Value::Int(2)).must();
        crate::ops::set_index(&d, &Value::str("a"), Value::Int(1)).must();
        assert_eq!(str_of(&call("keys", &d, &[]).must()), "['b', 'a']");
        assert_eq!(str_of(&call("items", &d, &[]).must()), "[('b', 2), ('a', 1)]");
        assert_eq!(str_of(&call("get", &d, &[Value::str("z"), Value::Int(0)]).must()), "0");
        assert_eq!(str_of(&call("get", &d, &[Value::str("z")]).must()), "none");
        assert_eq!(
            str_of(&call("setdefault", &d, &[Value::str("c"), Value::Int(3)]).must()),
            "3"
        );
        assert_eq!(str_of(&call("pop", &d, &[Value::str("b")]).must()), "2");
        assert_eq!(
            call("pop", &d, &[Value::str("b")]).unwrap_err().kind,
            ErrorKind::KeyError
        );
        let pairs = Value::list(vec![Value::tuple(vec![Value::str("x"), Value::Int(9)])]);
        call("update", &d, &[pairs]).must();
        assert_eq!(str_of(&d), "{'a': 1, 'c': 3, 'x': 9}");
        assert_eq!(str_of(&call("values", &d, &[]).must()), "[1, 3, 9]");
        let c = call("copy", &d, &[]).must();
        call("clear", &d, &[]).must();
        assert_eq!(str_of(&d), "{}");
        assert_eq!(str_of(&c), "{'a': 1, 'c': 3, 'x': 9}");
    }
}
