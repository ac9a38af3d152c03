//! Calling the operator hooks of module objects (see the `ops` docs).

use crate::value::{Caller, VResult, Value};

pub use crate::value::reentry::NoCaller;

/// Calls the hook `name` of a module object with `args`, if it has one.
pub fn call_dunder(obj: &Value, name: &str, args: &[Value]) -> Option<VResult<Value>> {
    let Value::Object(o) = obj else { return None };
    let f = match o.0.get_attr(obj, name)? {
        Ok(f) => f,
        Err(e) => return Some(Err(e)),
    };
    Some(NoCaller.call(&f, args, &[]))
}
