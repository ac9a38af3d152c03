//! Calling the operator hooks of module objects (see the `ops` docs).

use crate::error::ErrorKind;
use crate::vm::value::{err, Caller, Kwargs, VResult, Value};

/// A `Caller` for native code that runs without an interpreter: it can call
/// native functions and methods bound to them, nothing written in Apsi.
pub struct NoCaller;

impl Caller for NoCaller {
    fn call(&mut self, f: &Value, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
        match f {
            Value::Native(n) => n.call(self, args, kwargs),
            Value::BoundMethod(m) => {
                let mut full = Vec::with_capacity(args.len() + 1);
                full.push(m.receiver.clone());
                full.extend_from_slice(args);
                self.call(&m.func, &full, kwargs)
            }
            other => Err(err(
                ErrorKind::TypeError,
                format!("a {} cannot be called from inside this operation", other.type_name()),
            )),
        }
    }
    fn write_out(&mut self, _text: &str) -> VResult<()> {
        Err(err(ErrorKind::IOError, "this operation cannot print"))
    }
}

/// Calls the hook `name` of a module object with `args`, if it has one.
pub fn call_dunder(obj: &Value, name: &str, args: &[Value]) -> Option<VResult<Value>> {
    let Value::Object(o) = obj else { return None };
    let f = match o.0.get_attr(obj, name)? {
        Ok(f) => f,
        Err(e) => return Some(Err(e)),
    };
    Some(NoCaller.call(&f, args, &[]))
}
