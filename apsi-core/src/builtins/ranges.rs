//! The methods of `range` values (`r.index(x)`, `r.count(x)`), worked out
//! from the range's start, stop and step as Python does, without walking
//! its items.

use super::args::Args;
use crate::error::ErrorKind;
use crate::ops::range_position as position;
use crate::value::{err, Caller, Kwargs, RangeObj, VResult, Value};

pub(crate) const NAMES: &[&str] = &["index", "count"];

pub(crate) fn method(name: &str) -> Option<crate::value::NativeFnPtr> {
    Some(match name {
        "index" => index,
        "count" => count,
        _ => return None,
    })
}

fn receiver(args: &[Value]) -> VResult<&RangeObj> {
    match args.first() {
        Some(Value::Range(r)) => Ok(r),
        other => Err(err(
            ErrorKind::TypeError,
            format!(
                "descriptor needs a 'range' object but received '{}'",
                other.map_or("nothing", |v| v.type_name())
            ),
        )),
    }
}

fn index(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let r = receiver(args)?;
    let a = Args::new("index", &args[1..], kw, 1, &["x"])?;
    let x = a.req(0)?;
    match position(r, x) {
        Some(i) => i64::try_from(i)
            .map(Value::Int)
            .map_err(|_| err(ErrorKind::OverflowError, "the index does not fit in a 64-bit int")),
        None => Err(err(
            ErrorKind::ValueError,
            format!("{} is not in range", crate::format::repr_of(x)),
        )),
    }
}

fn count(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let r = receiver(args)?;
    let a = Args::new("count", &args[1..], kw, 1, &["x"])?;
    Ok(Value::Int(position(r, a.req(0)?).is_some() as i64))
}
