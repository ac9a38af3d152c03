//! The methods of `range` values (`r.index(x)`, `r.count(x)`), worked out
//! from the range's start, stop and step as Python does, without walking
//! its items.

use super::args::Args;
use crate::error::ErrorKind;
use crate::ops::arith::{num, Num};
use crate::value::{err, Caller, Kwargs, RangeObj, VResult, Value};

pub(crate) const NAMES: &[&str] = &["index", "count"];

pub(crate) fn method(name: &str) -> Option<crate::value::NativeFnPtr> {
    Some(match name {
        "index" => index,
        "count" => count,
        _ => return None,
    })
}

/// The position of `x` in `r`, when `x` is a number equal to an item.
fn position(r: &RangeObj, x: &Value) -> Option<i64> {
    let i = match num(x) {
        Some(Num::I(i)) => i as i128,
        Some(Num::F(f)) if f.fract() == 0.0 && f.abs() < 9.2e18 => f as i128,
        _ => return None,
    };
    let (start, stop, step) = (r.start as i128, r.stop as i128, r.step as i128);
    let inside = if step > 0 {
        i >= start && i < stop
    } else {
        i <= start && i > stop
    };
    if !inside || (i - start) % step != 0 {
        return None;
    }
    i64::try_from((i - start) / step).ok()
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
        Some(i) => Ok(Value::Int(i)),
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
