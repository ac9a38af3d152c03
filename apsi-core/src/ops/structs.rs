//! Structs at run time (LANGUAGE.md §6, §10.1–10.4): building a struct
//! type with its inheritance flattened in, constructing instances (the
//! field-wise constructor or `__init__`), struct constants, `super()`, and
//! user error kinds.
//!
//! Invariants: a `StructType` never changes after its `struct` statement
//! ran, except that its constants are filled in, in order, by that same
//! statement (`StructConst`); everything a lookup needs is in the type
//! itself (inherited methods, statics, properties and constants are copied
//! in), so no lookup walks the parent chain.

use crate::code::{MethodKind, StructProto, TypeCheck};
use crate::error::ErrorKind;
use crate::format;
use crate::value::CallArgs as Args;
use crate::value::*;
use std::sync::{Arc, OnceLock};

fn type_err(msg: impl Into<String>) -> Exc {
    err(ErrorKind::TypeError, msg)
}

fn clone_field(f: &StructField) -> StructField {
    StructField {
        name: f.name.clone(),
        default: f.default.clone(),
        annotation: f.annotation.clone(),
    }
}

/// What a base that is not a struct is called in the error.
fn describe_base(v: &Value) -> String {
    match v {
        Value::Native(f) => match crate::builtins::type_token_name(f) {
            Some(name) => format!("the built-in type '{name}'"),
            None => format!("the function '{}'", f.name),
        },
        other => format!("a {} value", other.type_name()),
    }
}

/// A struct type from its prototype and the evaluated field defaults, then
/// the methods, then (with `has_base`) the parent.
pub(crate) fn make_struct_type(sp: &StructProto, vals: Vec<Value>) -> VResult<Value> {
    let ndef = sp.has_default.iter().filter(|d| **d).count();
    let mut it = vals.into_iter();
    let defaults: Vec<Value> = (0..ndef).map(|_| it.next().unwrap_or(Value::None)).collect();
    let funcs: Vec<Value> = (0..sp.methods.len())
        .map(|_| it.next().unwrap_or(Value::None))
        .collect();
    let base = if sp.has_base { it.next() } else { None };
    let (parent, error_kind) = match base {
        None => (None, None),
        Some(Value::StructType(p)) => {
            let k = p.error_kind;
            (Some(p), k)
        }
        Some(Value::Kind(k)) => (None, Some(k)),
        Some(other) => {
            return Err(ErrorObj::with_hint(
                ErrorKind::TypeError,
                format!(
                    "struct '{}' can inherit only from a struct or an error kind, not from {}",
                    sp.name,
                    describe_base(&other)
                ),
                "keep the built-in value in a field instead: 'items: list'",
            ))
        }
    };
    let mut fields: Vec<StructField> = match (&parent, error_kind) {
        (Some(p), _) => p.fields.iter().map(clone_field).collect(),
        (None, Some(_)) => vec![StructField {
            name: "message".into(),
            default: Some(Value::str("")),
            annotation: Some("str".into()),
        }],
        (None, None) => Vec::with_capacity(sp.fields.len()),
    };
    let inherited = fields.len();
    let mut dit = defaults.into_iter();
    for ((name, has), ann) in sp.fields.iter().zip(sp.has_default.iter()).zip(sp.annotations.iter()) {
        let default = if *has { dit.next() } else { None };
        if fields[..inherited].iter().any(|f| f.name == *name) {
            let owner = parent
                .as_ref()
                .map(|p| p.name.to_string())
                .unwrap_or_else(|| "Error".to_string());
            return Err(type_err(format!(
                "struct '{}' redeclares the field '{name}' of its parent '{owner}'",
                sp.name
            )));
        }
        fields.push(StructField {
            name: name.clone(),
            default,
            annotation: ann.clone(),
        });
    }
    let (mut methods, mut statics, mut properties, consts) = match &parent {
        Some(p) => (
            p.methods.clone(),
            p.statics.clone(),
            p.properties.clone(),
            p.consts.read().clone(),
        ),
        None => (
            indexmap::IndexMap::with_capacity_and_hasher(sp.methods.len(), Default::default()),
            Default::default(),
            Default::default(),
            Default::default(),
        ),
    };
    let mut own_eq = false;
    let mut own_hash = false;
    for ((name, f), kind) in sp.methods.iter().zip(funcs).zip(sp.method_kinds.iter()) {
        own_eq |= &**name == "__eq__";
        own_hash |= &**name == "__hash__";
        methods.shift_remove(name);
        statics.shift_remove(name);
        properties.shift_remove(name);
        match kind {
            MethodKind::Plain => methods.insert(name.clone(), f),
            MethodKind::Static => statics.insert(name.clone(), f),
            MethodKind::Property => properties.insert(name.clone(), f),
        };
    }
    let hash_mode = if own_hash {
        HashMode::Method
    } else if own_eq {
        HashMode::Unhashable
    } else {
        parent
            .as_ref()
            .map(|p| p.hash_mode.clone())
            .unwrap_or(HashMode::Identity)
    };
    // The special methods the type keeps at hand: none to look up (a
    // dozen hashed lookups) when no method name is a dunder, as in most
    // structs.
    let dunder = methods.keys().any(|k| k.starts_with("__"));
    let special = |name: &str| if dunder { methods.get(name).cloned() } else { None };
    let simple_init = match special("__init__") {
        Some(Value::Func(c)) if c.proto.simple => Some(c),
        _ => None,
    };
    let cmp_methods = CMP_METHODS.map(special);
    let item_methods = crate::value::ITEM_METHODS.map(special);
    let iter_method = special("__iter__");
    let always_true = !dunder || crate::value::always_true(&methods);
    let id = StructType::new_id();
    let layout = match &parent {
        Some(p) if sp.fields.is_empty() => p.layout,
        _ => id,
    };
    Ok(Value::StructType(Arc::new(StructType {
        id,
        layout,
        simple_init,
        cmp_methods,
        item_methods,
        iter_method,
        always_true,
        name: sp.name.clone(),
        fields,
        methods,
        statics,
        properties,
        consts: crate::value::VLock::new(consts),
        parent,
        error_kind,
        hash_mode,
    })))
}

/// `NAME = value` in a struct body, run right after the struct exists.
pub(crate) fn define_const(ty: &Value, name: &str, v: Value) -> VResult<()> {
    match ty {
        Value::StructType(t) => {
            t.consts.write().insert(name.into(), v);
            Ok(())
        }
        // A decorator replaced the struct: constants go nowhere.
        _ => Ok(()),
    }
}

/// A new instance of `t` whose fields `write` writes in place, given a
/// pointer to room for `t.fields.len()` values.
///
/// Fields are written into the new object by their parts (`Value::words`,
/// `take_words`): a field built on the stack and then moved in was read
/// back as one 16-byte load of a value just written by parts, which stalls
/// on store forwarding (9% of raytrace, whose vectors have `__init__`).
///
/// `write` returns whether a value it wrote may lead back to an instance
/// (`cycles::may_link`), so the cycle collector watches the new one.
///
/// # Safety
/// `write` must write each of the `t.fields.len()` slots once (a value it
/// owns: parts whose count was raised, or moved out of their place).
pub(crate) unsafe fn new_instance(t: &Arc<StructType>, write: impl FnOnce(*mut Value) -> bool) -> Value {
    let n = t.fields.len();
    // The fields are written before the instance is made, and the type's
    // handle is taken the solo way (`solo::clone_arc`): filling them in a
    // new `Arc` through `Arc::get_mut` cost an atomic compare-exchange,
    // and `Arc::clone` of the type an atomic increment, which were 60% of
    // a construction's own time (raytrace's vectors).
    let mut vals = FieldVec::new();
    if n > vals.inline_size() {
        vals.reserve_exact(n);
    }
    let link = write(vals.as_mut_ptr());
    // SAFETY: there was room for `n` values, and the caller wrote each.
    unsafe { vals.set_len(n) };
    let obj = StructObj::placed(crate::value::solo::clone_arc(t), vals);
    if link {
        crate::value::cycles::linked(&obj);
    }
    Value::Struct(obj)
}

/// Writes `f`'s default (its parts, its count raised by `words`), or a
/// `none`, at `p`, for [`new_instance`].
///
/// # Safety
/// `p` is valid for writes; what it held is overwritten without a drop.
pub(crate) unsafe fn write_default(f: &StructField, p: *mut Value) {
    // SAFETY: the caller's.
    unsafe {
        match &f.default {
            Some(v) => v.words().write_raw(p),
            None => std::ptr::write(p, Value::None),
        }
    }
}

/// An instance with every field at its default, or `none` (before `__init__`).
pub(crate) fn blank(t: &Arc<StructType>) -> Value {
    // SAFETY: every field's slot is written once, by `write_default`.
    unsafe {
        new_instance(t, |p| {
            let mut link = false;
            for (i, f) in t.fields.iter().enumerate() {
                link |= f.default.as_ref().is_some_and(crate::value::cycles::may_link);
                write_default(f, p.add(i));
            }
            link
        })
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The hint for a name that is a constant where a field was meant (the
/// rule changed: `x = 0` in a struct body is a constant now).
pub(crate) fn constant_hint(t: &StructType, name: &str) -> Option<String> {
    let v = t.constant(name)?;
    Some(format!(
        "'{name}' is a constant of '{}' (assigned without a type in the struct body); to make it a field, declare it as '{name}: any = {}'",
        t.name,
        format::repr_of(&v)
    ))
}

/// Binds a field-wise constructor call to the first `n` fields of `t`.
pub(crate) fn bind_fields(
    t: &StructType,
    n: usize,
    what: &str,
    pos: Args,
    kw: Vec<(Arc<str>, Value)>,
) -> VResult<Vec<Value>> {
    let fields = &t.fields[..n.min(t.fields.len())];
    let n = fields.len();
    if pos.len() > n {
        let given = if pos.len() == 1 { "was" } else { "were" };
        return Err(type_err(format!(
            "{what}() takes {} but {} {given} given",
            plural(n, "positional argument"),
            pos.len()
        )));
    }
    let mut vals: Vec<Option<Value>> = vec![None; n];
    for (i, v) in pos.into_iter().enumerate() {
        vals[i] = Some(v);
    }
    for (k, v) in kw {
        match fields.iter().position(|f| f.name == k) {
            Some(i) => {
                if vals[i].is_some() {
                    return Err(type_err(format!("{what}() got multiple values for field '{k}'")));
                }
                vals[i] = Some(v);
            }
            None => {
                let names: Vec<&str> = fields.iter().map(|f| &*f.name).collect();
                let msg = if names.is_empty() {
                    format!("{what}() got an unexpected keyword argument '{k}' (it has no fields)")
                } else {
                    format!(
                        "{what}() got an unexpected keyword argument '{k}' (its fields are {})",
                        names.join(", ")
                    )
                };
                return Err(match constant_hint(t, &k) {
                    Some(h) => ErrorObj::with_hint(ErrorKind::TypeError, msg, h),
                    None => type_err(msg),
                });
            }
        }
    }
    let mut missing = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        if vals[i].is_none() {
            vals[i] = f.default.clone();
            if vals[i].is_none() {
                missing.push(&*f.name);
            }
        }
    }
    if !missing.is_empty() {
        return Err(type_err(format!(
            "{what}() missing {} required argument{}: {}",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" },
            crate::text::name_list(&missing)
        )));
    }
    let vals: Vec<Value> = vals.into_iter().map(|v| v.unwrap_or(Value::None)).collect();
    for (f, v) in fields.iter().zip(vals.iter()) {
        if let Some(check) = refused_by(f, v) {
            return Err(type_err(format!(
                "{what}() field '{}' must be {}, not {}",
                f.name,
                check.name(),
                v.type_name()
            )));
        }
    }
    Ok(vals)
}

/// The check of `f`'s annotation when it refuses `v` (`None`: taken).
pub(crate) fn refused_by(f: &StructField, v: &Value) -> Option<TypeCheck> {
    let check = f.annotation.as_deref().and_then(TypeCheck::from_name)?;
    (!crate::ops::accepts(check, v)).then_some(check)
}

/// `Point(1.0, y=2.0)`: `__init__` when the struct has one (its own or
/// inherited), otherwise the field-wise constructor.
pub(crate) fn construct(
    c: &mut dyn Caller,
    t: &Arc<StructType>,
    pos: Args,
    kw: Vec<(Arc<str>, Value)>,
) -> VResult<Value> {
    if let Some(init) = t.methods.get("__init__") {
        let obj = blank(t);
        let mut args: Vec<Value> = Vec::with_capacity(pos.len() + 1);
        args.push(obj.clone());
        args.extend(pos);
        let r = c.call(init, &args, &kw)?;
        if !matches!(r, Value::None) {
            return Err(type_err(format!(
                "__init__() should return none, not '{}'",
                r.type_name()
            )));
        }
        return Ok(obj);
    }
    let vals = bind_fields(t, t.fields.len(), &t.name, pos, kw)?;
    Ok(Value::Struct(StructObj::new(t.clone(), FieldVec::from_vec(vals))))
}

/// The `message` of a user error (its first field, inherited from `Error`).
fn message_of(s: &StructObj) -> String {
    let first = s.fields.read().first().cloned();
    match first {
        Some(Value::Str(m)) => m.as_str().to_string(),
        Some(Value::None) | None => String::new(),
        Some(other) => format::str_of(&other),
    }
}

/// The error a raised instance of a user error kind travels as.
pub(crate) fn raise_struct(s: &Arc<StructObj>) -> Option<Exc> {
    let kind = s.ty.error_kind?;
    Some(ErrorObj::user(kind, message_of(s), Value::Struct(s.clone())))
}

/// `str(e)` of a user error without `__str__`: `Kind: message`.
pub(crate) fn error_text(s: &StructObj) -> String {
    let msg = message_of(s);
    if msg.is_empty() {
        s.ty.name.to_string()
    } else {
        format!("{}: {msg}", s.ty.name)
    }
}

/// `super()`: the method lookup of the parent of the struct whose body
/// holds the call, bound to `self`.
struct SuperObj {
    receiver: Value,
    /// The struct whose body holds the `super()` call.
    owner: Arc<StructType>,
}

impl SuperObj {
    /// The implicit `__init__` of a parent without one: assigns the
    /// parent's fields (for an error kind root: `message`).
    fn field_init(&self) -> Value {
        let receiver = self.receiver.clone();
        let parent = self.owner.parent.clone();
        let owner = self.owner.clone();
        let f = move |_c: &mut dyn Caller, args: &[Value], kw: Kwargs| -> VResult<Value> {
            let Value::Struct(obj) = &receiver else {
                return Err(type_err("super().__init__ needs an instance"));
            };
            let (n, what) = match &parent {
                Some(p) => (p.fields.len(), p.name.to_string()),
                None if owner.error_kind.is_some() => {
                    (1, owner.error_kind.map(|k| k.name().to_string()).unwrap_or_default())
                }
                None => (0, "object".to_string()),
            };
            let what = format!("{what}.__init__");
            let vals = bind_fields(&obj.ty, n, &what, args.iter().cloned().collect(), kw.to_vec())?;
            let mut fields = obj.fields.write();
            for (slot, v) in fields.iter_mut().zip(vals) {
                crate::value::cycles::note_store(obj, &v);
                *slot = v;
            }
            Ok(Value::None)
        };
        Value::Native(Arc::new(NativeFn::closure("__init__", Box::new(f))))
    }
}

impl ApsiObject for SuperObj {
    fn type_name(&self) -> &str {
        "super"
    }
    fn to_str(&self) -> String {
        format!("<super of {}>", self.owner.name)
    }
    fn get_attr(&self, _this: &Value, name: &str) -> Option<VResult<Value>> {
        let Some(p) = &self.owner.parent else {
            if name == "__init__" {
                return Some(Ok(self.field_init()));
            }
            return Some(Err(err(
                ErrorKind::AttributeError,
                format!(
                    "'super' object has no attribute '{name}' ('{}' has no parent struct)",
                    self.owner.name
                ),
            )));
        };
        if let Some(m) = p.methods.get(name) {
            return Some(Ok(Value::BoundMethod(Arc::new(BoundMethod {
                receiver: self.receiver.clone(),
                func: m.clone(),
            }))));
        }
        if let Some(m) = p.statics.get(name) {
            return Some(Ok(m.clone()));
        }
        if let Some(g) = p.properties.get(name) {
            return Some(crate::ops::reentry::call(g, std::slice::from_ref(&self.receiver), &[]));
        }
        if let Some(v) = p.constant(name) {
            return Some(Ok(v));
        }
        if name == "__init__" {
            return Some(Ok(self.field_init()));
        }
        Some(Err(err(
            ErrorKind::AttributeError,
            format!(
                "'super' object has no attribute '{name}' (no method '{name}' in '{}' or its parents)",
                p.name
            ),
        )))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `super().name` when `v` is a `super()` value and `name` is a method of
/// the parent (found the way `get_attr` finds it): the method and the
/// receiver to call it with, so `super().name(args…)` can be called as
/// `method(receiver, args…)` without a bound method in between.
pub(crate) fn super_method(v: &Value, name: &str) -> Option<(Value, Value)> {
    let Value::Object(o) = v else { return None };
    let sup = o.0.as_any().downcast_ref::<SuperObj>()?;
    let m = sup.owner.parent.as_ref()?.methods.get(name)?;
    Some((m.clone(), sup.receiver.clone()))
}

/// `super().name(…)` in a method of `owner`, on an instance of `ty`, for the
/// call-site cache (`Hit::Super`, read back by [`super_target`]): the
/// method `name` of `owner`'s parent, as how many parents up from `ty` that
/// parent is and the method's index there; or [`SUPER_ROOT_INIT`] for
/// `super().__init__()` without arguments in a root struct that is not an
/// error kind (the implicit `__init__`, which does nothing then). `None`
/// for everything else (the full lookup runs each time).
pub(crate) fn super_slot(ty: &StructType, owner: &str, name: &str, nargs: usize) -> Option<usize> {
    let mut t = ty;
    let mut depth = 0usize;
    while *t.name != *owner {
        t = t.parent.as_deref()?;
        depth += 1;
    }
    let Some(p) = &t.parent else {
        let root_init = name == "__init__" && nargs == 0 && t.error_kind.is_none();
        return root_init.then_some(SUPER_ROOT_INIT);
    };
    let i = p.methods.get_index_of(name)?;
    (depth < SUPER_MAX_DEPTH && i < SUPER_INDEX).then_some(((depth + 1) << SUPER_SHIFT) | i)
}

/// The `Hit::Super` entry of a root struct's implicit `super().__init__()`.
pub(crate) const SUPER_ROOT_INIT: usize = SUPER_INDEX;
const SUPER_SHIFT: u32 = 20;
const SUPER_INDEX: usize = (1 << SUPER_SHIFT) - 1;
const SUPER_MAX_DEPTH: usize = 255;

/// The method a [`super_slot`] entry names, found from the receiver's type.
#[inline]
pub(crate) fn super_target(ty: &StructType, slot: usize) -> Option<&Value> {
    let mut t = ty;
    for _ in 0..slot >> SUPER_SHIFT {
        t = t.parent.as_deref()?;
    }
    t.methods.get_index(slot & SUPER_INDEX).map(|(_, m)| m)
}

fn super_of(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    let (Some(recv), Some(Value::Str(owner))) = (args.first(), args.get(1)) else {
        return Err(type_err("super() needs a method's self"));
    };
    make_super(recv, owner.as_str())
}

/// `super()` in a method of the struct named `owner`, with `recv` its `self`.
pub(crate) fn make_super(recv: &Value, owner: &str) -> VResult<Value> {
    let ty = match recv {
        Value::Struct(s) => s.ty.clone(),
        Value::Error(e) => match &e.payload {
            Some(Value::Struct(s)) => s.ty.clone(),
            _ => return Err(type_err("super() needs an instance of a struct")),
        },
        _ => {
            return Err(type_err(format!(
                "super(): the first argument of the method is a {}, not an instance of '{}'",
                recv.type_name(),
                owner
            )))
        }
    };
    let mut t = Some(ty);
    while let Some(cur) = t {
        if *cur.name == *owner {
            let recv = match recv {
                Value::Error(e) => e.payload.clone().unwrap_or(Value::None),
                other => other.clone(),
            };
            return Ok(Value::Object(Arc::new(ObjBox(Box::new(SuperObj {
                receiver: recv,
                owner: cur,
            })))));
        }
        t = cur.parent.clone();
    }
    Err(type_err(format!("super(): the instance is not a '{}'", owner)))
}

/// The native `super_of(self, "Struct")` that `super()` compiles to.
pub fn super_native() -> Value {
    static F: OnceLock<Value> = OnceLock::new();
    F.get_or_init(|| Value::Native(Arc::new(NativeFn::new("super", super_of))))
        .clone()
}

/// Methods, statics and properties of a struct type by name, for `S.name`.
pub(crate) fn type_attr(t: &StructType, name: &str) -> Option<Value> {
    if let Some(m) = t.methods.get(name) {
        return Some(m.clone());
    }
    if let Some(m) = t.statics.get(name) {
        return Some(m.clone());
    }
    if let Some(m) = t.properties.get(name) {
        return Some(m.clone());
    }
    t.constant(name)
}
