//! `@native` in a build without the native module: the decorated function
//! runs on the interpreter, and the first use prints one warning on stderr.
//! A build with the module replaces this prelude entry by the module's own
//! `native` export (see `Runtime::new`).

use crate::error::ErrorKind;
use crate::value::{err, Caller, Kwargs, NativeFn, VResult, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

static WARNED: AtomicBool = AtomicBool::new(false);

fn warn_once() {
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!("warning: this apsi was built without the native module; @native functions run on the interpreter");
    }
}

/// `native(f)` returns `f`; `native(fastmath=…, boundscheck=…)` returns a decorator that does.
pub fn native(_c: &mut dyn Caller, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
    match args {
        [f @ (Value::Func(_) | Value::Native(_))] if kwargs.is_empty() => {
            warn_once();
            Ok(f.clone())
        }
        [] => {
            for (k, _) in kwargs {
                if !matches!(&**k, "fastmath" | "boundscheck") {
                    return Err(err(
                        ErrorKind::TypeError,
                        format!(
                            "native() got an unexpected keyword argument '{k}' (expected fastmath= or boundscheck=)"
                        ),
                    ));
                }
            }
            Ok(Value::Native(Arc::new(NativeFn::new("native", native))))
        }
        [other] => Err(err(
            ErrorKind::TypeError,
            format!("@native expects a function, found {}", other.type_name()),
        )),
        _ => Err(err(
            ErrorKind::TypeError,
            format!("native() takes one function, {} arguments given", args.len()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::NoCaller;

    #[test]
    fn options_give_a_decorator_and_bad_ones_fail() {
        let mut c = NoCaller;
        let kw: Vec<(Arc<str>, Value)> = vec![("fastmath".into(), Value::Bool(true))];
        assert!(matches!(native(&mut c, &[], &kw), Ok(Value::Native(_))));
        let bad: Vec<(Arc<str>, Value)> = vec![("fast".into(), Value::Bool(true))];
        assert!(native(&mut c, &[], &bad).is_err());
        assert!(native(&mut c, &[Value::Int(1)], &[]).is_err());
    }
}
