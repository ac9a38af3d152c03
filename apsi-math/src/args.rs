//! Argument checks and conversions shared by the functions of `math`, with
//! CPython's messages.

use apsi_core::api::ErrorKind;
use apsi_core::api::{err, ErrorObj, Exc, Kwargs, VResult, Value};

/// `ValueError: math domain error`.
pub fn domain() -> Exc {
    err(ErrorKind::ValueError, "math domain error")
}

/// `OverflowError: math range error`.
pub fn range() -> Exc {
    err(ErrorKind::OverflowError, "math range error")
}

/// Refuse every keyword argument.
pub fn no_kw(fname: &str, kw: Kwargs) -> VResult<()> {
    match kw.first() {
        Some((k, _)) => Err(err(
            ErrorKind::TypeError,
            format!("math.{fname}() takes no keyword arguments (got '{k}')"),
        )),
        None => Ok(()),
    }
}

/// Exactly `n` positional arguments and no keywords.
pub fn exact<'a>(fname: &str, args: &'a [Value], kw: Kwargs, n: usize) -> VResult<&'a [Value]> {
    no_kw(fname, kw)?;
    if args.len() != n {
        let want = match n {
            1 => "exactly one argument".to_string(),
            _ => format!("exactly {n} arguments"),
        };
        return Err(err(
            ErrorKind::TypeError,
            format!("math.{fname}() takes {want} ({} given)", args.len()),
        ));
    }
    Ok(args)
}

/// Between `min` and `max` positional arguments and no keywords.
pub fn between<'a>(fname: &str, args: &'a [Value], kw: Kwargs, min: usize, max: usize) -> VResult<&'a [Value]> {
    no_kw(fname, kw)?;
    if args.len() < min || args.len() > max {
        return Err(err(
            ErrorKind::TypeError,
            format!(
                "math.{fname}() takes from {min} to {max} arguments ({} given)",
                args.len()
            ),
        ));
    }
    Ok(args)
}

/// A real number as a float: ints and bools convert; anything else (a
/// tensor included) is CPython's `TypeError`.
pub fn real(v: &Value) -> VResult<f64> {
    match v {
        Value::Float(f) => Ok(*f),
        Value::Int(i) => Ok(*i as f64),
        Value::Bool(b) => Ok(f64::from(u8::from(*b))),
        Value::Object(_) => Err(ErrorObj::with_hint(
            ErrorKind::TypeError,
            format!("must be real number, not {}", v.type_name()),
            "math's functions take one number; the prelude's functions (sqrt, exp, …) work elementwise on tensors",
        )),
        other => Err(err(
            ErrorKind::TypeError,
            format!("must be real number, not {}", other.type_name()),
        )),
    }
}

/// An int (bools count, as in Python); a float is CPython's `TypeError`.
pub fn index(v: &Value) -> VResult<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(i64::from(*b)),
        other => Err(err(
            ErrorKind::TypeError,
            format!("'{}' object cannot be interpreted as an integer", other.type_name()),
        )),
    }
}

/// An int result that must fit in 64 bits.
pub fn fit(fname: &str, v: i128) -> VResult<Value> {
    i64::try_from(v).map(Value::Int).map_err(|_| too_big(fname))
}

/// `OverflowError` for an int result past 64 bits.
pub fn too_big(fname: &str) -> Exc {
    err(
        ErrorKind::OverflowError,
        format!("math.{fname}() result does not fit in a 64-bit int"),
    )
}
