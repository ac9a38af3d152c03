//! The operator methods of structs (LANGUAGE.md §10.3): `a + b` calls
//! `__add__`, then the reflected `__radd__`; comparisons, `hash`, `len`,
//! indexing, `in`, truthiness and calls likewise.
//!
//! Every function here answers `None` when no struct operand has the
//! method, so the caller goes on with the built-in rules (and their error
//! messages). Methods run through `value::reentry`, so any Rust code can
//! reach them without a `Caller`.

use crate::error::ErrorKind;
use crate::syntax::ast::{BinOp, CmpOp, UnaryOp};
use crate::value::reentry::Reentrant;
use crate::value::{err, ApsiObject, Caller, ObjBox, StructObj, VResult, Value};
use std::sync::{Arc, OnceLock};

/// The value an operator method returns to say "not for this operand".
struct NotImplementedObj;

impl ApsiObject for NotImplementedObj {
    fn type_name(&self) -> &str {
        "NotImplementedType"
    }
    fn to_str(&self) -> String {
        "NotImplemented".into()
    }
    fn hashable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The prelude's `NotImplemented`.
pub fn not_implemented() -> Value {
    static V: OnceLock<Value> = OnceLock::new();
    V.get_or_init(|| Value::Object(Arc::new(ObjBox(Box::new(NotImplementedObj)))))
        .clone()
}

pub(crate) fn is_not_implemented(v: &Value) -> bool {
    matches!(v, Value::Object(o) if o.0.as_any().is::<NotImplementedObj>())
}

#[inline]
fn as_struct(v: &Value) -> Option<&Arc<StructObj>> {
    match v {
        Value::Struct(s) => Some(s),
        _ => None,
    }
}

/// `obj.name(args…)` when `obj` is a struct with that method.
fn call_method(obj: &Value, name: &str, rest: &[Value]) -> Option<VResult<Value>> {
    call_method_with(&mut Reentrant, obj, name, rest)
}

fn call_method_with(c: &mut dyn Caller, obj: &Value, name: &str, rest: &[Value]) -> Option<VResult<Value>> {
    // Borrowed from the type, which `obj` keeps alive through the call.
    let f = as_struct(obj)?.ty.method(name)?;
    Some(call_found(c, f, obj, rest))
}

/// `obj`'s comparison method `CMP_METHODS[i]` called with `other`, when
/// `obj` is a struct that has it (looked up once per type, not by name).
fn call_cmp_with(c: &mut dyn Caller, obj: &Value, i: usize, other: &Value) -> Option<VResult<Value>> {
    let f = as_struct(obj)?.ty.cmp_methods.get(i)?.as_ref()?;
    Some(call_found(c, f, obj, std::slice::from_ref(other)))
}

/// The method `f` of `obj` called with `rest`.
fn call_found(c: &mut dyn Caller, f: &Value, obj: &Value, rest: &[Value]) -> VResult<Value> {
    match rest {
        [] => c.call(f, std::slice::from_ref(obj), &[]),
        [other] => {
            // `self` and the one argument side by side without raising
            // either's count: bitwise copies that are never dropped. A
            // callee only borrows its arguments (it clones what it keeps),
            // and both originals outlive the call.
            // SAFETY: see above; `ManuallyDrop` keeps the copies from
            // being dropped, so each object's count stays what it was.
            let pair = std::mem::ManuallyDrop::new(unsafe { [std::ptr::read(obj), std::ptr::read(other)] });
            c.call(f, &pair[..], &[])
        }
        _ => {
            let mut args: smallvec::SmallVec<[Value; 4]> = smallvec::SmallVec::with_capacity(rest.len() + 1);
            args.push(obj.clone());
            args.extend(rest.iter().cloned());
            c.call(f, &args, &[])
        }
    }
}

pub(crate) fn binary_names(op: BinOp) -> (&'static str, &'static str, &'static str) {
    match op {
        BinOp::Add => ("__add__", "__radd__", "__iadd__"),
        BinOp::Sub => ("__sub__", "__rsub__", "__isub__"),
        BinOp::Mul => ("__mul__", "__rmul__", "__imul__"),
        BinOp::Div => ("__truediv__", "__rtruediv__", "__itruediv__"),
        BinOp::FloorDiv => ("__floordiv__", "__rfloordiv__", "__ifloordiv__"),
        BinOp::Mod => ("__mod__", "__rmod__", "__imod__"),
        BinOp::Pow => ("__pow__", "__rpow__", "__ipow__"),
        BinOp::MatMul => ("__matmul__", "__rmatmul__", "__imatmul__"),
        BinOp::BitAnd => ("__and__", "__rand__", "__iand__"),
        BinOp::BitOr => ("__or__", "__ror__", "__ior__"),
        BinOp::BitXor => ("__xor__", "__rxor__", "__ixor__"),
        BinOp::Shl => ("__lshift__", "__rlshift__", "__ilshift__"),
        BinOp::Shr => ("__rshift__", "__rrshift__", "__irshift__"),
    }
}

/// Does `b`'s struct descend strictly from `a`'s and define `name` itself
/// differently (then its reflected method is tried first, as Python does)?
pub(crate) fn reflected_first(a: &Value, b: &Value, name: &str) -> bool {
    match (as_struct(a), as_struct(b)) {
        (Some(x), Some(y)) => {
            !Arc::ptr_eq(&x.ty, &y.ty)
                && y.ty.descends_from(&x.ty)
                && match (y.ty.method(name), x.ty.method(name)) {
                    (Some(p), Some(q)) => !p.is(q),
                    (Some(_), None) => true,
                    _ => false,
                }
        }
        _ => false,
    }
}

/// `a op b` through `__op__` / `__rop__`.
pub fn binary(op: BinOp, a: &Value, b: &Value) -> Option<VResult<Value>> {
    binary_with(&mut Reentrant, op, a, b)
}

/// [`binary`] running the methods on `c` (the VM passes itself).
pub fn binary_with(c: &mut dyn Caller, op: BinOp, a: &Value, b: &Value) -> Option<VResult<Value>> {
    if as_struct(a).is_none() && as_struct(b).is_none() {
        return None;
    }
    let (fwd, rev, _) = binary_names(op);
    if reflected_first(a, b, rev) {
        if let Some(r) = call_method_with(c, b, rev, std::slice::from_ref(a)) {
            match r {
                Ok(v) if is_not_implemented(&v) => {}
                other => return Some(other),
            }
        }
    }
    if let Some(r) = call_method_with(c, a, fwd, std::slice::from_ref(b)) {
        match r {
            Ok(v) if is_not_implemented(&v) => {}
            other => return Some(other),
        }
    }
    Some(binary_after_forward(c, op, a, b))
}

/// The rest of [`binary_with`] once `a`'s forward method is out of the
/// way (absent, or it answered `NotImplemented`): `b`'s reflected method
/// when `b` is of another type, else the `TypeError`. (The VM calls this
/// when a forward method it ran as a frame answered `NotImplemented`.)
pub(crate) fn binary_after_forward(c: &mut dyn Caller, op: BinOp, a: &Value, b: &Value) -> VResult<Value> {
    let (_, rev, _) = binary_names(op);
    let same_type = matches!((as_struct(a), as_struct(b)), (Some(x), Some(y)) if Arc::ptr_eq(&x.ty, &y.ty));
    if !same_type {
        if let Some(r) = call_method_with(c, b, rev, std::slice::from_ref(a)) {
            match r {
                Ok(v) if is_not_implemented(&v) => {}
                other => return other,
            }
        }
    }
    Err(err(
        ErrorKind::TypeError,
        format!(
            "unsupported operand types for {}: '{}' and '{}'",
            op.symbol(),
            a.type_name(),
            b.type_name()
        ),
    ))
}

/// `a op= b`: `__iop__` when `a` has it, else `a op b`.
pub fn inplace_with(c: &mut dyn Caller, op: BinOp, a: &Value, b: &Value) -> Option<VResult<Value>> {
    let (_, _, iname) = binary_names(op);
    if let Some(r) = call_method_with(c, a, iname, std::slice::from_ref(b)) {
        match r {
            Ok(v) if is_not_implemented(&v) => {}
            other => return Some(other),
        }
    }
    binary_with(c, op, a, b)
}

/// `-a`, `+a`, `~a`.
pub fn unary(op: UnaryOp, v: &Value) -> Option<VResult<Value>> {
    unary_with(&mut Reentrant, op, v)
}

/// [`unary`] running the method on `c`.
pub fn unary_with(c: &mut dyn Caller, op: UnaryOp, v: &Value) -> Option<VResult<Value>> {
    let name = match op {
        UnaryOp::Neg => "__neg__",
        UnaryOp::Pos => "__pos__",
        UnaryOp::Invert => "__invert__",
        UnaryOp::Not => return None,
    };
    let r = call_method_with(c, v, name, &[]);
    if r.is_none() && as_struct(v).is_some() {
        return Some(Err(err(
            ErrorKind::TypeError,
            format!("bad operand type for unary {}: '{}'", op_symbol(op), v.type_name()),
        )));
    }
    r
}

fn op_symbol(op: UnaryOp) -> &'static str {
    match op {
        UnaryOp::Neg => "-",
        UnaryOp::Pos => "+",
        UnaryOp::Invert => "~",
        UnaryOp::Not => "not",
    }
}

/// `abs(a)`.
pub fn abs(v: &Value) -> Option<VResult<Value>> {
    call_method(v, "__abs__", &[])
}

pub(crate) fn reflect(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::LtE => CmpOp::GtE,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::GtE => CmpOp::LtE,
        other => other,
    }
}

/// `a op b` for the six rich comparisons, as a value (a method may return
/// anything). `None` when no method applies: `==`/`!=` then keep their
/// default, the orderings raise.
pub fn compare(op: CmpOp, a: &Value, b: &Value) -> Option<VResult<Value>> {
    compare_with(&mut Reentrant, op, a, b)
}

/// [`compare`] running the methods on `c`.
pub fn compare_with(c: &mut dyn Caller, op: CmpOp, a: &Value, b: &Value) -> Option<VResult<Value>> {
    compare_from(c, op, a, b, false)
}

/// The rest of `a op b` after `a`'s method for `op` ran and returned
/// `NotImplemented` (the VM ran it as a frame, `b`'s reflected method not
/// going first): `b`'s reflected method, then the defaults.
pub(crate) fn compare_after_forward(c: &mut dyn Caller, op: CmpOp, a: &Value, b: &Value) -> VResult<Value> {
    compare_from(c, op, a, b, true).unwrap_or_else(|| Err(unsupported_cmp(op, a, b)))
}

/// `TypeError: '<' not supported between instances of 'P' and 'int'`.
fn unsupported_cmp(op: CmpOp, a: &Value, b: &Value) -> crate::value::Exc {
    err(
        ErrorKind::TypeError,
        format!(
            "'{}' not supported between instances of '{}' and '{}'",
            op.symbol(),
            a.type_name(),
            b.type_name()
        ),
    )
}

fn compare_from(c: &mut dyn Caller, op: CmpOp, a: &Value, b: &Value, forward_done: bool) -> Option<VResult<Value>> {
    if as_struct(a).is_none() && as_struct(b).is_none() {
        return None;
    }
    let name = crate::value::cmp_method_index(op)?;
    let rop = reflect(op);
    let rname = crate::value::cmp_method_index(rop)?;
    let attempts: [Option<(&Value, usize, &Value)>; 2] = if forward_done {
        [Some((b, rname, a)), None]
    } else if reflected_first(a, b, crate::value::CMP_METHODS[rname]) {
        [Some((b, rname, a)), Some((a, name, b))]
    } else {
        [Some((a, name, b)), Some((b, rname, a))]
    };
    for (x, m, y) in attempts.into_iter().flatten() {
        if let Some(r) = call_cmp_with(c, x, m, y) {
            match r {
                Ok(v) if is_not_implemented(&v) => {}
                other => return Some(other),
            }
        }
    }
    // `!=` without `__ne__`: the negation of `__eq__`.
    if op == CmpOp::NotEq {
        if let Some(r) = compare_with(c, CmpOp::Eq, a, b) {
            return Some(r.and_then(|v| v.truthy()).map(|t| Value::Bool(!t)));
        }
    }
    match op {
        CmpOp::Eq | CmpOp::NotEq => {
            // Defined only when some side has `__eq__` (else the default rule).
            let has = |v: &Value| as_struct(v).is_some_and(|s| s.ty.cmp_methods[0].is_some());
            if has(a) || has(b) {
                let same = a.is(b);
                return Some(Ok(Value::Bool(if op == CmpOp::Eq { same } else { !same })));
            }
            None
        }
        _ => Some(Err(unsupported_cmp(op, a, b))),
    }
}

/// `a == b` as a bool, for containers, `in`, `list.index` and dict keys.
pub fn eq(a: &Value, b: &Value) -> Option<VResult<bool>> {
    let r = compare(CmpOp::Eq, a, b)?;
    Some(r.and_then(|v| v.truthy()))
}

/// `hash(a)` of a struct with `__hash__`.
pub fn hash(v: &Value) -> Option<VResult<i64>> {
    let r = call_method(v, "__hash__", &[])?;
    Some(match r {
        Ok(Value::Int(i)) => Ok(i),
        Ok(Value::Bool(b)) => Ok(b as i64),
        Ok(other) => Err(err(
            ErrorKind::TypeError,
            format!("__hash__ method should return an integer, not {}", other.type_name()),
        )),
        Err(e) => Err(e),
    })
}

/// `len(a)`.
pub fn len(v: &Value) -> Option<VResult<i64>> {
    let r = call_method(v, "__len__", &[])?;
    Some(match r {
        Ok(Value::Int(i)) if i >= 0 => Ok(i),
        Ok(Value::Int(_)) => Err(err(ErrorKind::ValueError, "__len__() should return >= 0")),
        Ok(other) => Err(err(
            ErrorKind::TypeError,
            format!("'{}' object cannot be interpreted as an integer", other.type_name()),
        )),
        Err(e) => Err(e),
    })
}

/// `bool(a)`: `__bool__`, else `__len__`, else true.
pub fn truthy(s: &Arc<StructObj>) -> VResult<bool> {
    if s.ty.always_true {
        return Ok(true);
    }
    let v = Value::Struct(s.clone());
    if let Some(r) = call_method(&v, "__bool__", &[]) {
        return match r? {
            Value::Bool(b) => Ok(b),
            other => Err(err(
                ErrorKind::TypeError,
                format!("__bool__ should return bool, returned {}", other.type_name()),
            )),
        };
    }
    if let Some(r) = len(&v) {
        return Ok(r? != 0);
    }
    Ok(true)
}

/// `a[k]`.
pub fn get_index(v: &Value, k: &Value) -> Option<VResult<Value>> {
    call_method(v, "__getitem__", std::slice::from_ref(k))
}

/// `a[k] = x`.
pub fn set_index(v: &Value, k: &Value, x: Value) -> Option<VResult<()>> {
    call_method(v, "__setitem__", &[k.clone(), x]).map(|r| r.map(|_| ()))
}

/// `del a[k]`.
pub fn del_index(v: &Value, k: &Value) -> Option<VResult<()>> {
    call_method(v, "__delitem__", std::slice::from_ref(k)).map(|r| r.map(|_| ()))
}

/// `x in a`: `__contains__`.
pub fn contains(container: &Value, item: &Value) -> Option<VResult<bool>> {
    let r = call_method(container, "__contains__", std::slice::from_ref(item))?;
    Some(r.and_then(|v| v.truthy()))
}
