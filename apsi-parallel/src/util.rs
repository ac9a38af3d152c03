//! Small helpers shared by the module's functions and object methods.

use apsi_core::api::{err, ErrorKind, VResult, Value};

pub use apsi_core::api::{method_of, native, object};

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
