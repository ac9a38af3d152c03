//! The exported functions `python.eval`, `python.exec` and `python.call`.

use crate::bridge::Bridge;
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, Caller, Kwargs, NativeFn, VResult, Value};
use std::sync::Arc;

/// The one str argument of `eval`/`exec`.
fn code_arg<'a>(name: &str, what: &str, args: &'a [Value], kwargs: Kwargs) -> VResult<&'a str> {
    if let Some((k, _)) = kwargs.first() {
        return Err(err(
            ErrorKind::TypeError,
            format!("{name}() got an unexpected keyword argument '{k}'"),
        ));
    }
    match args {
        [v] => v.as_str().ok_or_else(|| {
            err(
                ErrorKind::TypeError,
                format!("{name}() expects the {what} as a str, found {}", v.type_name()),
            )
        }),
        _ => Err(err(
            ErrorKind::TypeError,
            format!("{name}() takes 1 argument (the {what} as a str), found {}", args.len()),
        )),
    }
}

pub fn eval(b: &Bridge, c: &mut dyn Caller, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
    let code = code_arg("python.eval", "Python expression", args, kwargs)?;
    c.flush_out()?;
    b.eval(code)
}

pub fn exec(b: &Bridge, c: &mut dyn Caller, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
    let code = code_arg("python.exec", "Python code", args, kwargs)?;
    c.flush_out()?;
    b.exec(code)
}

pub fn call(b: &Bridge, c: &mut dyn Caller, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
    let (name, rest) = match args.split_first() {
        Some((n, rest)) => match n.as_str() {
            Some(s) => (s, rest),
            None => {
                return Err(err(
                    ErrorKind::TypeError,
                    format!("python.call() expects the function's dotted name as a str, such as \"math.gcd\"; found {}", n.type_name()),
                ))
            }
        },
        None => {
            return Err(err(
                ErrorKind::TypeError,
                "python.call() takes the function's dotted name (such as \"math.gcd\") and then its arguments; found no arguments",
            ))
        }
    };
    c.flush_out()?;
    b.call(name, rest, kwargs)
}

type Entry = fn(&Bridge, &mut dyn Caller, &[Value], Kwargs) -> VResult<Value>;

/// `f` as an Apsi function bound to `bridge`.
pub fn bound(name: &str, bridge: &Arc<Bridge>, f: Entry) -> Value {
    let b = bridge.clone();
    Value::Native(Arc::new(NativeFn::closure(
        name,
        Box::new(move |c, args, kw| f(&b, c, args, kw)),
    )))
}
