//! Small helpers shared by the module's functions and object methods.

use apsi_core::error::ErrorKind;
use apsi_core::vm::value::{err, BoundMethod, Kwargs, NativeFn, NativeFnPtr, VResult, Value};
use std::sync::Arc;

/// A method table entry: a native function taking the receiver first.
pub fn native(name: &str, f: NativeFnPtr) -> Value {
    Value::Native(Arc::new(NativeFn::new(name, f)))
}

/// `this.name`, looked up in a method table built once.
pub fn bound(this: &Value, table: &[(&'static str, Value)], name: &str) -> Option<VResult<Value>> {
    let (_, f) = table.iter().find(|(n, _)| *n == name)?;
    Some(Ok(Value::BoundMethod(Arc::new(BoundMethod {
        receiver: this.clone(),
        func: f.clone(),
    }))))
}

/// Check the positional count (receiver included for methods) and refuse keywords.
pub fn arity(fname: &str, args: &[Value], kw: Kwargs, min: usize, max: usize) -> VResult<()> {
    if let Some((k, _)) = kw.first() {
        return Err(err(
            ErrorKind::TypeError,
            format!("{fname}() got an unexpected keyword argument '{k}'"),
        ));
    }
    if args.len() < min || args.len() > max {
        let want = if min == max {
            format!("{min}")
        } else {
            format!("{min} to {max}")
        };
        return Err(err(
            ErrorKind::TypeError,
            format!("{fname}() takes {want} arguments, got {}", args.len()),
        ));
    }
    Ok(())
}

/// The receiver of a method, as its Rust type.
pub fn recv<'a, T: 'static>(args: &'a [Value], ty: &str) -> VResult<&'a T> {
    match args.first() {
        Some(Value::Object(o)) => o.0.as_any().downcast_ref::<T>(),
        _ => None,
    }
    .ok_or_else(|| err(ErrorKind::TypeError, format!("this method needs a {ty}")))
}

/// An int argument.
pub fn int_arg(fname: &str, what: &str, v: &Value) -> VResult<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(*b as i64),
        other => Err(err(
            ErrorKind::TypeError,
            format!("{fname}() needs an int for {what}, found {}", other.type_name()),
        )),
    }
}

/// Wrap a Rust object as an Apsi value.
pub fn object(o: impl apsi_core::vm::value::ApsiObject) -> Value {
    Value::Object(Arc::new(apsi_core::vm::value::ObjBox(Box::new(o))))
}
