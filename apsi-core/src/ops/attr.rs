//! Attributes: `x.name` and `x.name = v`, with did-you-mean hints.

use crate::error::ErrorKind;
use crate::value::{err, BoundMethod, ErrorObj, Exc, NativeFn, VResult, Value};
use std::sync::Arc;

/// Edit distance between two short names (for "did you mean" hints).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The candidate closest to `name`, when it is close enough to be a typo.
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.to_string())
}

fn no_attr<'a>(what: String, name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Exc {
    let msg = format!("{what} has no attribute '{name}'");
    match suggest(name, candidates) {
        Some(s) => ErrorObj::with_hint(ErrorKind::AttributeError, msg, format!("did you mean '{s}'?")),
        None => err(ErrorKind::AttributeError, msg),
    }
}

/// The built-in method `name` of `obj` as a value (`f = xs.append`), bound
/// to `obj`; `None` when the type has no such method.
fn bound_builtin(obj: &Value, name: &str) -> Option<Value> {
    let f = crate::builtins::method(obj, name)?;
    Some(Value::BoundMethod(Arc::new(BoundMethod {
        receiver: obj.clone(),
        func: Value::Native(Arc::new(NativeFn::new(name, f))),
    })))
}

/// `obj.name`: struct fields and methods (bound), an error's `message` and
/// `kind` (the kind's name as a str), a module's exports, the methods of
/// str/list/dict/tuple (bound), a range's `start`/`stop`/`step`, and
/// whatever a module object answers.
pub fn get_attr(obj: &Value, name: &str) -> VResult<Value> {
    match obj {
        Value::Struct(s) => {
            if let Some(i) = s.ty.field_index(name) {
                let fields = s.fields.read();
                if let Some(v) = fields.get(i) {
                    return Ok(v.clone());
                }
            }
            if let Some(m) = s.ty.methods.get(name) {
                return Ok(Value::BoundMethod(Arc::new(BoundMethod {
                    receiver: obj.clone(),
                    func: m.clone(),
                })));
            }
            if let Some(g) = s.ty.properties.get(name) {
                return crate::ops::reentry::call(g, std::slice::from_ref(obj), &[]);
            }
            if let Some(m) = s.ty.statics.get(name) {
                return Ok(m.clone());
            }
            if let Some(v) = s.ty.constant(name) {
                return Ok(v);
            }
            if s.ty.error_kind.is_some() && name == "kind" {
                return Ok(Value::str(&*s.ty.name));
            }
            let consts = s.ty.consts.read();
            let names =
                s.ty.fields
                    .iter()
                    .map(|f| &*f.name)
                    .chain(s.ty.methods.keys().map(|k| &**k))
                    .chain(s.ty.properties.keys().map(|k| &**k))
                    .chain(s.ty.statics.keys().map(|k| &**k))
                    .chain(consts.keys().map(|k| &**k));
            Err(no_attr(format!("'{}' object", s.ty.name), name, names))
        }
        Value::StructType(t) => match crate::ops::structs::type_attr(t, name) {
            Some(m) => Ok(m),
            None if name == "__name__" => Ok(Value::str(&*t.name)),
            None => {
                let consts = t.consts.read();
                let names = t
                    .methods
                    .keys()
                    .chain(t.statics.keys())
                    .chain(t.properties.keys())
                    .chain(consts.keys())
                    .map(|k| &**k);
                Err(no_attr(format!("struct '{}'", t.name), name, names))
            }
        },
        Value::Error(e) if e.payload.is_some() => match &e.payload {
            Some(p) => get_attr(p, name),
            None => Err(no_attr("an error".to_string(), name, [])),
        },
        Value::Error(e) => match name {
            "message" => Ok(Value::str(e.message.clone())),
            "kind" => Ok(Value::str(e.kind.name())),
            // A `StopIteration`'s value (a finished generator's return value).
            "value" if e.kind == ErrorKind::StopIteration => Ok(e.value.clone().unwrap_or(Value::None)),
            _ => Err(no_attr("an error".to_string(), name, ["message", "kind"])),
        },
        Value::Kind(k) => match name {
            "name" => Ok(Value::str(k.name())),
            _ => Err(no_attr(format!("error kind {}", k.name()), name, ["name"])),
        },
        Value::Module(m) => {
            let attrs = m.attrs.read();
            match attrs.get(name) {
                Some(v) => Ok(v.clone()),
                None => Err(no_attr(
                    format!("module '{}'", m.name),
                    name,
                    attrs.keys().map(|k| &**k),
                )),
            }
        }
        Value::Range(r) => match name {
            "start" => Ok(Value::Int(r.start)),
            "stop" => Ok(Value::Int(r.stop)),
            "step" => Ok(Value::Int(r.step)),
            // `r.index`, `r.count` as values: the built-in method, bound.
            _ => match bound_builtin(obj, name) {
                Some(m) => Ok(m),
                None => Err(no_attr(
                    "'range' object".to_string(),
                    name,
                    ["start", "stop", "step", "index", "count"],
                )),
            },
        },
        Value::Object(o) => match o.0.get_attr(obj, name) {
            Some(r) => r,
            None => match protocol_method(obj, o.0.protocols(), name) {
                Some(m) => Ok(m),
                None => Err(no_attr(format!("'{}' object", o.0.type_name()), name, [])),
            },
        },
        _ => match bound_builtin(obj, name) {
            Some(m) => Ok(m),
            None => Err(no_attr(
                format!("'{}' object", obj.type_name()),
                name,
                crate::builtins::method_names(obj).iter().copied(),
            )),
        },
    }
}

/// `obj.name = v`: a struct's declared fields and a module's names.
pub fn set_attr(obj: &Value, name: &str, v: Value) -> VResult<()> {
    match obj {
        Value::Struct(s) if s.ty.field_index(name).is_none() && s.ty.properties.contains_key(name) => Err(err(
            ErrorKind::AttributeError,
            format!(
                "cannot assign to '{name}': it is a read-only property of '{}'",
                s.ty.name
            ),
        )),
        Value::Struct(s) if s.ty.field_index(name).is_none() && s.ty.constant(name).is_some() => {
            let msg = format!(
                "cannot assign to '{name}': it is a constant of '{}', not a field",
                s.ty.name
            );
            Err(match crate::ops::structs::constant_hint(&s.ty, name) {
                Some(h) => ErrorObj::with_hint(ErrorKind::AttributeError, msg, h),
                None => err(ErrorKind::AttributeError, msg),
            })
        }
        Value::StructType(t) => Err(err(
            ErrorKind::AttributeError,
            if t.constant(name).is_some() {
                format!("cannot assign to '{}.{name}': struct constants are read-only", t.name)
            } else {
                format!("cannot set attribute '{name}' on struct '{}'", t.name)
            },
        )),
        Value::Error(e) if e.payload.is_some() => match &e.payload {
            Some(p) => set_attr(p, name, v),
            None => Ok(()),
        },
        Value::Struct(s) => match s.ty.field_index(name) {
            Some(i) => {
                let mut fields = s.fields.write();
                match fields.get_mut(i) {
                    Some(slot) => {
                        crate::value::cycles::note_store(s, &v);
                        *slot = v;
                        Ok(())
                    }
                    None => Err(err(
                        ErrorKind::AttributeError,
                        format!("'{}' object has no field '{name}'", s.ty.name),
                    )),
                }
            }
            None => {
                let msg = format!("'{}' object has no field '{name}'", s.ty.name);
                Err(match suggest(name, s.ty.fields.iter().map(|f| &*f.name)) {
                    Some(h) => ErrorObj::with_hint(ErrorKind::AttributeError, msg, format!("did you mean '{h}'?")),
                    None => ErrorObj::with_hint(
                        ErrorKind::AttributeError,
                        msg,
                        format!("a struct's fields are fixed by its declaration of '{}'", s.ty.name),
                    ),
                })
            }
        },
        Value::Module(m) => {
            m.attrs.write().insert(name.into(), v);
            Ok(())
        }
        other => Err(err(
            ErrorKind::AttributeError,
            format!("cannot set attribute '{name}' on a '{}' object", other.type_name()),
        )),
    }
}

/// `x.__iter__`, `x.__next__`, `x.__len__`, `x.__getitem__`,
/// `x.__setitem__`, `x.__enter__`, `x.__exit__` of a module object, answered from its typed protocol hooks: how the
/// with-statement (which calls `__enter__`/`__exit__`) and Python-style
/// explicit calls reach them. `__next__` raises `StopIteration` at the end,
/// as Python's does.
fn protocol_method(this: &Value, p: crate::value::Protocols, name: &str) -> Option<Value> {
    use crate::value::{Caller, Kwargs};
    type Hook = fn(&Value, &mut dyn Caller, &[Value]) -> VResult<Value>;
    fn object(v: &Value) -> &dyn crate::value::ApsiObject {
        match v {
            Value::Object(o) => &*o.0,
            _ => unreachable!("protocol methods are made for objects only"),
        }
    }
    let hook: Hook = match name {
        "__iter__" if p.iter => |v, c, _| object(v).iter(v, c),
        "__iter__" if p.next => |v, _, _| Ok(v.clone()),
        "__next__" if p.next => |v, c, _| match object(v).next(v, c)? {
            Some(x) => Ok(x),
            None => Err(crate::value::err(ErrorKind::StopIteration, "")),
        },
        "__len__" if p.len => |v, _, _| object(v).len(v).map(Value::Int),
        "__getitem__" if p.item => |v, _, args| match args {
            [k] => object(v).get_item(v, k),
            _ => Err(crate::value::err(
                ErrorKind::TypeError,
                "__getitem__() takes one argument",
            )),
        },
        "__setitem__" if p.item => |v, _, args| match args {
            [k, x] => object(v).set_item(v, k, x.clone()).map(|_| Value::None),
            _ => Err(crate::value::err(
                ErrorKind::TypeError,
                "__setitem__() takes two arguments",
            )),
        },
        "__enter__" if p.context => |v, c, _| object(v).enter(v, c),
        "__exit__" if p.context => |v, c, args| {
            let error = args.get(1).filter(|e| !matches!(e, Value::None));
            object(v).exit(v, c, error).map(Value::Bool)
        },
        _ => return None,
    };
    let receiver = this.clone();
    let name_owned = name.to_string();
    let f = move |c: &mut dyn Caller, args: &[Value], kw: Kwargs| -> VResult<Value> {
        if let Some((k, _)) = kw.first() {
            return Err(crate::value::err(
                ErrorKind::TypeError,
                format!("{name_owned}() got an unexpected keyword argument '{k}'"),
            ));
        }
        hook(&receiver, c, args)
    };
    Some(Value::Native(Arc::new(NativeFn::closure(name, Box::new(f)))))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use crate::value::{StructField, StructObj, StructType};

    fn vec2() -> Value {
        let ty = Arc::new(StructType {
            name: "Vec2".into(),
            fields: vec![
                StructField {
                    name: "x".into(),
                    default: None,
                    annotation: None,
                },
                StructField {
                    name: "y".into(),
                    default: None,
                    annotation: None,
                },
            ],
            methods: Default::default(),
            ..StructType::plain(String::new(), Vec::new(), Default::default())
        });
        Value::Struct(StructObj::new(ty, vec![Value::Float(3.0), Value::Float(4.0)].into()))
    }

    #[test]
    fn struct_fields() {
        let v = vec2();
        assert_eq!(crate::format::str_of(&get_attr(&v, "y").must()), "4.0");
        set_attr(&v, "y", Value::Float(5.0)).must();
        assert_eq!(crate::format::str_of(&v), "Vec2(x=3.0, y=5.0)");
        let e = set_attr(&v, "z", Value::Int(1)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::AttributeError);
        let e = get_attr(&v, "yy").unwrap_err();
        assert_eq!(e.hint.as_deref(), Some("did you mean 'y'?"));
    }

    fn fields(n: usize) -> Vec<StructField> {
        (0..n)
            .map(|i| StructField {
                name: format!("f{i}").into(),
                default: None,
                annotation: None,
            })
            .collect()
    }

    /// `StructObj::field_solo` (the dispatch loop's field read in solo
    /// mode) finds each field through the address taken when the instance
    /// was made: inside the instance (up to three fields) or in the
    /// vector's own block, also after fields were overwritten in place.
    #[test]
    fn field_reads_through_the_first_field_address_see_every_field() {
        for n in [1, 3, 4, 9] {
            let ty = Arc::new(StructType::plain("S", fields(n), Default::default()));
            let vals: Vec<Value> = (0..n as i64).map(Value::Int).collect();
            let obj = StructObj::new(ty, vals.into());
            let v = Value::Struct(obj.clone());
            set_attr(&v, &format!("f{}", n - 1), Value::str("last")).must();
            for i in 0..n {
                // SAFETY: this test is the only thread touching the instance,
                // and `i` is below the type's field count.
                let got = unsafe { obj.field_solo(i) };
                let want = get_attr(&v, &format!("f{i}")).must();
                assert!(crate::ops::eq(got, &want).must(), "{n} fields, field {i}");
            }
            assert_eq!(crate::format::str_of(unsafe { obj.field_solo(n - 1) }), "last");
        }
    }

    #[test]
    #[should_panic(expected = "wrong number of fields")]
    fn an_instance_has_exactly_its_types_fields() {
        let ty = Arc::new(StructType::plain("S", fields(2), Default::default()));
        StructObj::new(ty, vec![Value::Int(1)].into());
    }

    #[test]
    fn struct_methods_bind_and_structs_compare_by_fields() {
        let v = vec2();
        let Value::Struct(s) = &v else { panic!("not a struct") };
        let ty = s.ty.clone();
        let f = Value::Native(Arc::new(NativeFn::new("norm2", |_c, _a, _k| Ok(Value::Int(0)))));
        let mut methods: indexmap::IndexMap<Arc<str>, Value, crate::value::FxBuild> = Default::default();
        methods.insert("norm2".into(), f.clone());
        let ty2 = Arc::new(StructType::plain(ty.name.clone(), Vec::new(), methods));
        let w = Value::Struct(StructObj::new(ty2, Vec::new().into()));
        match get_attr(&w, "norm2").must() {
            Value::BoundMethod(m) => assert!(m.receiver.is(&w) && m.func.is(&f)),
            other => panic!("got {}", other.type_name()),
        }
        let same = Value::Struct(StructObj::new(
            ty.clone(),
            vec![Value::Int(3), Value::Float(4.0)].into(),
        ));
        assert!(crate::ops::eq(&v, &same).must());
        set_attr(&same, "x", Value::Float(1.0)).must();
        assert!(!crate::ops::eq(&v, &same).must());
        // Same fields, different struct type: not equal.
        assert!(!crate::ops::eq(&v, &w).must());
    }

    #[test]
    fn builtin_methods_and_errors() {
        let l = Value::list(vec![]);
        assert!(matches!(get_attr(&l, "append").must(), Value::BoundMethod(_)));
        let e = get_attr(&l, "apend").unwrap_err();
        assert_eq!(e.message, "'list' object has no attribute 'apend'");
        assert_eq!(e.hint.as_deref(), Some("did you mean 'append'?"));
        let e = get_attr(&l, "foo").unwrap_err();
        assert_eq!(e.message, "'list' object has no attribute 'foo'");
        let ev = Value::Error(ErrorObj::new(ErrorKind::IndexError, "boom"));
        assert_eq!(crate::format::str_of(&get_attr(&ev, "kind").must()), "IndexError");
        assert_eq!(crate::format::str_of(&get_attr(&ev, "message").must()), "boom");
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("lenght", ["length", "width"]), Some("length".into()));
        assert_eq!(suggest("zzz", ["length"]), None);
    }
}
