//! `str(x)` and `repr(x)` of every value (LANGUAGE.md §3 "Printing").

use crate::text::{float_repr, quote_str};
use crate::value::Value;
use std::cell::RefCell;

thread_local! {
    /// Containers being printed on this thread, to print a list that
    /// contains itself as `[...]` instead of recursing forever.
    static IN_PROGRESS: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// Nesting deeper than this prints as `[...]` too (no stack overflow on a
/// list nested a million levels deep).
const MAX_NESTING: usize = 500;

/// Runs `f` unless the container at `ptr` is already being printed.
fn guarded(ptr: usize, f: impl FnOnce() -> String, cycle: &str) -> String {
    let entered = IN_PROGRESS.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() >= MAX_NESTING || s.contains(&ptr) {
            false
        } else {
            s.push(ptr);
            true
        }
    });
    if !entered {
        return cycle.to_string();
    }
    let out = f();
    IN_PROGRESS.with(|s| {
        let mut s = s.borrow_mut();
        if let Some(pos) = s.iter().rposition(|p| *p == ptr) {
            s.remove(pos);
        }
    });
    out
}

thread_local! {
    /// The first error raised by a `__str__`/`__repr__` while text was being
    /// made; [`str_checked`] and [`repr_checked`] report it.
    static PENDING: RefCell<Option<crate::value::Exc>> = const { RefCell::new(None) };
}

/// Calls a struct's `__str__`/`__repr__`; an error (or a result that is
/// not a str) is kept for the checked callers and the text is empty.
fn dunder_text(f: &Value, obj: &Value, what: &str) -> String {
    let r = crate::ops::reentry::call(f, std::slice::from_ref(obj), &[]);
    let e = match r {
        Ok(Value::Str(s)) => return s.as_str().to_string(),
        Ok(other) => crate::value::err(
            crate::error::ErrorKind::TypeError,
            format!("{what} returned non-string (type {})", other.type_name()),
        ),
        Err(e) => e,
    };
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if p.is_none() {
            *p = Some(e);
        }
    });
    String::new()
}

fn take_pending() -> Option<crate::value::Exc> {
    PENDING.with(|p| p.borrow_mut().take())
}

/// `str(x)`, raising what a struct's `__str__` raised.
pub fn str_checked(v: &Value) -> crate::value::VResult<String> {
    take_pending();
    let s = str_of(v);
    match take_pending() {
        Some(e) => Err(e),
        None => Ok(s),
    }
}

/// `repr(x)`, raising what a struct's `__repr__` raised.
pub fn repr_checked(v: &Value) -> crate::value::VResult<String> {
    take_pending();
    let s = repr_of(v);
    match take_pending() {
        Some(e) => Err(e),
        None => Ok(s),
    }
}

/// `str(x)`: what `print` shows. Strings are raw at the top level; an
/// error is `ValueError: message`; everything else is its repr.
pub fn str_of(v: &Value) -> String {
    match v {
        Value::Str(s) => s.as_str().to_string(),
        Value::Struct(s) => {
            if let Some(f) = s.ty.method("__str__").or_else(|| s.ty.method("__repr__")) {
                return dunder_text(f, v, "__str__");
            }
            if s.ty.error_kind.is_some() {
                return crate::ops::structs::error_text(s);
            }
            repr_of(v)
        }
        Value::Error(e) if e.payload.is_some() => match &e.payload {
            Some(p) => str_of(p),
            None => String::new(),
        },
        Value::Error(e) => {
            if e.message.is_empty() {
                e.kind.name().to_string()
            } else {
                format!("{}: {}", e.kind.name(), e.message)
            }
        }
        Value::Object(o) => o.0.to_str(),
        other => repr_of(other),
    }
}

fn join_reprs(items: &[Value]) -> String {
    let parts: Vec<String> = items.iter().map(repr_of).collect();
    parts.join(", ")
}

/// `repr(x)`: how a value shows inside a container.
pub fn repr_of(v: &Value) -> String {
    match v {
        Value::None => "none".into(),
        Value::Bool(b) => if *b { "true" } else { "false" }.into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => float_repr(*f),
        Value::Str(s) => quote_str(s.as_str()),
        Value::List(l) => {
            let ptr = std::sync::Arc::as_ptr(l) as usize;
            guarded(
                ptr,
                || {
                    let items: Vec<Value> = l.items.read().clone();
                    format!("[{}]", join_reprs(&items))
                },
                "[...]",
            )
        }
        Value::Tuple(t) => {
            let ptr = std::sync::Arc::as_ptr(t) as usize;
            guarded(
                ptr,
                || {
                    if t.0.len() == 1 {
                        format!("({},)", repr_of(&t.0[0]))
                    } else {
                        format!("({})", join_reprs(&t.0))
                    }
                },
                "(...)",
            )
        }
        Value::Dict(d) => {
            let ptr = std::sync::Arc::as_ptr(d) as usize;
            guarded(
                ptr,
                || {
                    let pairs: Vec<(Value, Value)> = d
                        .map
                        .read()
                        .iter()
                        .map(|(k, v)| (k.value().clone(), v.clone()))
                        .collect();
                    let parts: Vec<String> = pairs
                        .iter()
                        .map(|(k, v)| format!("{}: {}", repr_of(k), repr_of(v)))
                        .collect();
                    format!("{{{}}}", parts.join(", "))
                },
                "{...}",
            )
        }
        Value::Range(r) => {
            if r.step == 1 {
                format!("range({}, {})", r.start, r.stop)
            } else {
                format!("range({}, {}, {})", r.start, r.stop, r.step)
            }
        }
        Value::Slice(s) => format!(
            "slice({}, {}, {})",
            repr_of(&s.start),
            repr_of(&s.stop),
            repr_of(&s.step)
        ),
        Value::Func(f) => format!("<function {}>", f.name),
        Value::Native(f) => match crate::builtins::type_token_name(f) {
            Some(name) => format!("<type {name}>"),
            None => format!("<function {}>", f.name),
        },
        Value::BoundMethod(m) => {
            let name = match &m.func {
                Value::Func(f) => f.name.to_string(),
                Value::Native(f) => f.name.to_string(),
                other => other.type_name().to_string(),
            };
            format!("<bound method {}.{}>", m.receiver.type_name(), name)
        }
        Value::StructType(t) => format!("<struct {}>", t.name),
        Value::Error(e) if e.payload.is_some() => match &e.payload {
            Some(p) => repr_of(p),
            None => String::new(),
        },
        Value::Struct(s) => {
            if let Some(f) = s.ty.method("__repr__") {
                return dunder_text(f, v, "__repr__");
            }
            let ptr = std::sync::Arc::as_ptr(s) as usize;
            guarded(
                ptr,
                || {
                    let fields: Vec<Value> = s.fields.read().to_vec();
                    let parts: Vec<String> =
                        s.ty.fields
                            .iter()
                            .zip(fields.iter())
                            .map(|(f, v)| format!("{}={}", f.name, repr_of(v)))
                            .collect();
                    format!("{}({})", s.ty.name, parts.join(", "))
                },
                &format!("{}(...)", s.ty.name),
            )
        }
        Value::Kind(k) => format!("<error kind {}>", k.name()),
        Value::Unbound => "<unbound>".into(),
        Value::Error(e) => {
            if e.message.is_empty() {
                format!("{}()", e.kind.name())
            } else {
                format!("{}({})", e.kind.name(), quote_str(&e.message))
            }
        }
        Value::Module(m) => format!("<module {}>", m.name),
        Value::Object(o) => o.0.repr(),
        Value::Bytes(b) => super::bytes_repr(&b.0),
        Value::Set(s) => {
            let items = crate::ops::sets::members(s);
            if items.is_empty() {
                "set()".into()
            } else {
                format!("{{{}}}", join_reprs(&items))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use crate::value::{ErrorObj, HashKey, RangeObj};
    use std::sync::Arc;

    #[test]
    fn containers_use_repr_of_elements() {
        let mut map = crate::value::DictMap::new();
        map.insert(HashKey::new(Value::str("k")).must(), Value::list(vec![Value::None]));
        let v = Value::list(vec![
            Value::Float(1.0),
            Value::str("x"),
            Value::tuple(vec![Value::Int(1), Value::Int(2)]),
            Value::dict(map),
        ]);
        assert_eq!(str_of(&v), "[1.0, 'x', (1, 2), {'k': [none]}]");
        assert_eq!(str_of(&Value::tuple(vec![Value::Int(1)])), "(1,)");
        assert_eq!(str_of(&Value::tuple(vec![])), "()");
        assert_eq!(str_of(&Value::empty_dict()), "{}");
        assert_eq!(
            str_of(&Value::list(vec![Value::Bool(true), Value::Bool(false)])),
            "[true, false]"
        );
    }

    #[test]
    fn strings_raw_at_top_level_quoted_inside() {
        assert_eq!(str_of(&Value::str("a'b")), "a'b");
        assert_eq!(repr_of(&Value::str("a'b")), "\"a'b\"");
        assert_eq!(repr_of(&Value::str("a'b\"")), "'a\\'b\"'");
        assert_eq!(repr_of(&Value::str("x\ny\t\\")), "'x\\ny\\t\\\\'");
        assert_eq!(repr_of(&Value::str("\u{1}é")), "'\\x01é'");
    }

    #[test]
    fn self_containing_list_prints_ellipsis() {
        let l = Value::list(vec![Value::Int(1)]);
        if let Value::List(inner) = &l {
            inner.items.write().push(l.clone());
        }
        assert_eq!(str_of(&l), "[1, [...]]");
        // Break the cycle so the test does not leak.
        if let Value::List(inner) = &l {
            inner.items.write().clear();
        }
    }

    #[test]
    fn deep_nesting_is_cut_off() {
        let mut v = Value::list(vec![]);
        for _ in 0..100_000 {
            v = Value::list(vec![v]);
        }
        let text = str_of(&v);
        assert!(text.starts_with("[[[[") && text.contains("[...]"));
        // Dropping a deeply nested value is the value model's business; unwind it here iteratively.
        while let Value::List(l) = v {
            let inner = l.items.write().pop();
            match inner {
                Some(x) => v = x,
                None => break,
            }
        }
    }

    #[test]
    fn misc_values() {
        assert_eq!(
            str_of(&Value::Range(Arc::new(RangeObj {
                start: 0,
                stop: 10,
                step: 1
            }))),
            "range(0, 10)"
        );
        assert_eq!(
            str_of(&Value::Range(Arc::new(RangeObj {
                start: 0,
                stop: 10,
                step: 2
            }))),
            "range(0, 10, 2)"
        );
        assert_eq!(str_of(&Value::Kind(ErrorKind::ValueError)), "<error kind ValueError>");
        let e = Value::Error(ErrorObj::new(ErrorKind::ValueError, "base"));
        assert_eq!(str_of(&e), "ValueError: base");
        assert_eq!(repr_of(&e), "ValueError('base')");
        assert_eq!(str_of(&Value::None), "none");
    }
}
