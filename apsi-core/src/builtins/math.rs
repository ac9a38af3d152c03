//! The math functions on plain numbers (LANGUAGE.md §7 "The same names
//! work on plain numbers"). Given a module object (a tensor) as the first
//! argument, each calls the object's method of the same name, so the tensor
//! module supplies the elementwise versions.
//!
//! Decisions: domain errors raise `ValueError` ("math domain error: …") and
//! a finite argument with an infinite result raises `OverflowError`, as
//! Python's `math` does; `floor`/`ceil` return ints; `sign` returns an int
//! for an int and a float for a float (NaN stays NaN); `maximum`/`minimum`
//! propagate NaN as NumPy does; `pow` of two ints is an exact int.

use super::args::{expect_float, Args};
use super::types::float_to_int;
use crate::error::ErrorKind;
use crate::ops;
use crate::syntax::ast::BinOp;
use crate::value::{err, Caller, Kwargs, VResult, Value};

/// Calls `obj.name(*rest)`.
pub(crate) fn call_method(c: &mut dyn Caller, obj: &Value, name: &str, rest: &[Value]) -> VResult<Value> {
    let m = ops::get_attr(obj, name)?;
    c.call(&m, rest, &[])
}

fn domain(what: &str) -> crate::value::Exc {
    err(ErrorKind::ValueError, format!("math domain error: {what}"))
}

fn range_error(name: &str) -> crate::value::Exc {
    err(
        ErrorKind::OverflowError,
        format!("math range error: the result of {name}() is too large"),
    )
}

/// A one-argument float function with its domain check.
fn unary(
    c: &mut dyn Caller,
    name: &'static str,
    args: &[Value],
    kw: Kwargs,
    f: fn(f64) -> VResult<f64>,
) -> VResult<Value> {
    // One float (or int) argument: straight to the function; anything
    // else, and every error, through the general path below.
    if kw.is_empty() {
        if let [x @ (Value::Float(_) | Value::Int(_))] = args {
            let v = match *x {
                Value::Float(v) => v,
                Value::Int(i) => i as f64,
                _ => f64::NAN,
            };
            if let Ok(r) = f(v) {
                if !(r.is_infinite() && v.is_finite()) {
                    return Ok(Value::Float(r));
                }
            }
        }
    }
    let a = Args::new(name, args, kw, 1, &["x"])?;
    let x = a.req(0)?;
    if let Value::Object(_) = x {
        return call_method(c, x, name, &[]);
    }
    let v = expect_float(x, name, "x")?;
    let r = f(v)?;
    if r.is_infinite() && v.is_finite() {
        return Err(range_error(name));
    }
    Ok(Value::Float(r))
}

macro_rules! unary_fns {
    ($($fname:ident => $body:expr;)*) => {
        $(
            pub(crate) fn $fname(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
                unary(c, stringify!($fname), args, kw, $body)
            }
        )*
    };
}

unary_fns! {
    sqrt => |x| if x < 0.0 { Err(domain("sqrt of a negative number")) } else { Ok(x.sqrt()) };
    exp => |x| Ok(x.exp());
    log1p => |x| if x <= -1.0 { Err(domain("log1p of a number <= -1")) } else { Ok(x.ln_1p()) };
    log2 => |x| if x <= 0.0 { Err(domain("log2 of a number <= 0")) } else { Ok(x.log2()) };
    log10 => |x| if x <= 0.0 { Err(domain("log10 of a number <= 0")) } else { Ok(x.log10()) };
    sin => |x| if x.is_infinite() { Err(domain("sin of an infinity")) } else { Ok(x.sin()) };
    cos => |x| if x.is_infinite() { Err(domain("cos of an infinity")) } else { Ok(x.cos()) };
    tan => |x| if x.is_infinite() { Err(domain("tan of an infinity")) } else { Ok(x.tan()) };
    asin => |x| if x.abs() > 1.0 { Err(domain("asin of a number outside [-1, 1]")) } else { Ok(x.asin()) };
    acos => |x| if x.abs() > 1.0 { Err(domain("acos of a number outside [-1, 1]")) } else { Ok(x.acos()) };
    atan => |x| Ok(x.atan());
    sinh => |x| Ok(x.sinh());
    cosh => |x| Ok(x.cosh());
    tanh => |x| Ok(x.tanh());
    sigmoid => |x| Ok(if x >= 0.0 { 1.0 / (1.0 + (-x).exp()) } else { let e = x.exp(); e / (1.0 + e) });
}

pub(crate) fn log(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("log", args, kw, 1, &["x", "base"])?;
    let x = a.req(0)?;
    if let Value::Object(_) = x {
        let rest: Vec<Value> = a.opt(1).cloned().into_iter().collect();
        return call_method(c, x, "log", &rest);
    }
    let v = expect_float(x, "log", "x")?;
    if v <= 0.0 {
        return Err(domain("log of a number <= 0"));
    }
    match a.opt(1) {
        None => Ok(Value::Float(v.ln())),
        Some(b) => {
            let b = expect_float(b, "log", "base")?;
            if b <= 0.0 {
                return Err(domain("log base <= 0"));
            }
            let d = b.ln();
            if d == 0.0 {
                return Err(err(ErrorKind::ZeroDivisionError, "log base 1 divides by zero"));
            }
            Ok(Value::Float(v.ln() / d))
        }
    }
}

fn to_int_result(name: &str, x: &Value, f: fn(f64) -> f64, c: &mut dyn Caller) -> VResult<Value> {
    match x {
        Value::Int(i) => Ok(Value::Int(*i)),
        Value::Bool(b) => Ok(Value::Int(*b as i64)),
        Value::Float(v) => Ok(Value::Int(float_to_int(f(*v))?)),
        Value::Object(_) => call_method(c, x, name, &[]),
        other => Err(err(
            ErrorKind::TypeError,
            format!("{name}() argument must be a number, not {}", other.type_name()),
        )),
    }
}

pub(crate) fn floor(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("floor", args, kw, 1, &["x"])?;
    to_int_result("floor", a.req(0)?, f64::floor, c)
}

pub(crate) fn ceil(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("ceil", args, kw, 1, &["x"])?;
    to_int_result("ceil", a.req(0)?, f64::ceil, c)
}

pub(crate) fn sign(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("sign", args, kw, 1, &["x"])?;
    match a.req(0)? {
        Value::Int(i) => Ok(Value::Int(i.signum())),
        Value::Bool(b) => Ok(Value::Int(*b as i64)),
        Value::Float(f) => Ok(Value::Float(if f.is_nan() || *f == 0.0 { *f } else { f.signum() })),
        x @ Value::Object(_) => call_method(c, x, "sign", &[]),
        other => Err(err(
            ErrorKind::TypeError,
            format!("sign() argument must be a number, not {}", other.type_name()),
        )),
    }
}

fn pick(c: &mut dyn Caller, name: &'static str, args: &[Value], kw: Kwargs, want_greater: bool) -> VResult<Value> {
    let a = Args::new(name, args, kw, 2, &["a", "b"])?;
    let (x, y) = (a.req(0)?, a.req(1)?);
    if let Value::Object(_) = x {
        return call_method(c, x, name, std::slice::from_ref(y));
    }
    if let Value::Object(_) = y {
        return call_method(c, y, name, std::slice::from_ref(x));
    }
    for v in [x, y] {
        if let Value::Float(f) = v {
            if f.is_nan() {
                return Ok(Value::Float(*f));
            }
        }
        expect_float(v, name, "argument")?;
    }
    let o = ops::order(x, y)?;
    let take_y = if want_greater {
        o == std::cmp::Ordering::Less
    } else {
        o == std::cmp::Ordering::Greater
    };
    Ok(if take_y { y.clone() } else { x.clone() })
}

pub(crate) fn maximum(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    pick(c, "maximum", args, kw, true)
}

pub(crate) fn minimum(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    pick(c, "minimum", args, kw, false)
}

fn predicate(c: &mut dyn Caller, name: &'static str, args: &[Value], kw: Kwargs, f: fn(f64) -> bool) -> VResult<Value> {
    let a = Args::new(name, args, kw, 1, &["x"])?;
    let x = a.req(0)?;
    if let Value::Object(_) = x {
        return call_method(c, x, name, &[]);
    }
    Ok(Value::Bool(f(expect_float(x, name, "x")?)))
}

pub(crate) fn isnan(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    predicate(c, "isnan", args, kw, f64::is_nan)
}

pub(crate) fn isinf(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    predicate(c, "isinf", args, kw, f64::is_infinite)
}

pub(crate) fn atan2(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("atan2", args, kw, 2, &["y", "x"])?;
    Ok(Value::Float(a.float(0)?.atan2(a.float(1)?)))
}

pub(crate) fn hypot(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    if let Some((k, _)) = kw.first() {
        return Err(err(
            ErrorKind::TypeError,
            format!("hypot() got an unexpected keyword argument '{k}'"),
        ));
    }
    let mut acc = 0.0f64;
    for v in args {
        acc = acc.hypot(expect_float(v, "hypot", "x")?);
    }
    Ok(Value::Float(acc))
}

pub(crate) fn pow(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("pow", args, kw, 2, &["base", "exp", "mod"])?;
    let (b, e) = (a.req(0)?, a.req(1)?);
    match a.opt(2) {
        None => ops::binary(BinOp::Pow, b, e),
        Some(m) => {
            let (b, e, m) = (a.int(0)?, a.int(1)?, super::args::expect_int(m, "pow", "mod")?);
            if m == 0 {
                return Err(err(ErrorKind::ValueError, "pow() 3rd argument cannot be 0"));
            }
            if e < 0 {
                return Err(err(
                    ErrorKind::ValueError,
                    "pow() with a modulus needs a non-negative exponent",
                ));
            }
            let m128 = m as i128;
            let mut result: i128 = 1i128.rem_euclid(m128);
            let mut base = (b as i128).rem_euclid(m128);
            let mut e = e;
            while e > 0 {
                if e & 1 == 1 {
                    result = (result * base).rem_euclid(m128);
                }
                base = (base * base).rem_euclid(m128);
                e >>= 1;
            }
            // Python's result has the sign of the modulus.
            if m < 0 && result > 0 {
                result += m128;
            }
            Ok(Value::Int(result as i64))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::str_of;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use crate::ops::NoCaller;

    fn call(f: crate::value::NativeFnPtr, args: &[Value]) -> VResult<Value> {
        f(&mut NoCaller, args, &[])
    }

    #[test]
    fn values_and_domains() {
        assert_eq!(str_of(&call(sqrt, &[Value::Float(16.0)]).must()), "4.0");
        assert_eq!(str_of(&call(sqrt, &[Value::Int(2)]).must()), "1.4142135623730951");
        let e = call(sqrt, &[Value::Float(-1.0)]).unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::ValueError, "math domain error: sqrt of a negative number")
        );
        assert_eq!(call(log, &[Value::Float(0.0)]).unwrap_err().kind, ErrorKind::ValueError);
        assert_eq!(str_of(&call(log, &[Value::Int(8), Value::Int(2)]).must()), "3.0");
        assert_eq!(
            call(exp, &[Value::Float(1000.0)]).unwrap_err().kind,
            ErrorKind::OverflowError
        );
        assert_eq!(str_of(&call(exp, &[Value::Float(f64::INFINITY)]).must()), "inf");
        assert_eq!(str_of(&call(sigmoid, &[Value::Float(0.0)]).must()), "0.5");
        assert_eq!(str_of(&call(sigmoid, &[Value::Float(-1000.0)]).must()), "0.0");
        assert_eq!(str_of(&call(floor, &[Value::Float(2.7)]).must()), "2");
        assert_eq!(str_of(&call(ceil, &[Value::Float(2.1)]).must()), "3");
        assert_eq!(str_of(&call(floor, &[Value::Float(-2.5)]).must()), "-3");
        assert_eq!(
            call(floor, &[Value::Float(f64::NAN)]).unwrap_err().kind,
            ErrorKind::ValueError
        );
        assert_eq!(
            call(ceil, &[Value::Float(f64::INFINITY)]).unwrap_err().kind,
            ErrorKind::OverflowError
        );
        assert_eq!(str_of(&call(sign, &[Value::Int(-5)]).must()), "-1");
        assert_eq!(str_of(&call(sign, &[Value::Float(2.5)]).must()), "1.0");
        assert_eq!(
            str_of(&call(maximum, &[Value::Int(1), Value::Float(f64::NAN)]).must()),
            "nan"
        );
        assert_eq!(
            str_of(&call(minimum, &[Value::Int(1), Value::Float(0.5)]).must()),
            "0.5"
        );
        assert_eq!(str_of(&call(hypot, &[Value::Int(3), Value::Int(4)]).must()), "5.0");
        assert_eq!(str_of(&call(pow, &[Value::Int(2), Value::Int(10)]).must()), "1024");
        assert_eq!(
            str_of(&call(pow, &[Value::Int(3), Value::Int(200), Value::Int(7)]).must()),
            "2"
        );
        assert_eq!(
            str_of(&call(pow, &[Value::Int(3), Value::Int(2), Value::Int(-7)]).must()),
            "-5"
        );
        assert_eq!(str_of(&call(isnan, &[Value::Float(f64::NAN)]).must()), "true");
        assert_eq!(str_of(&call(isinf, &[Value::Int(3)]).must()), "false");
        assert_eq!(
            call(asin, &[Value::Float(2.0)]).unwrap_err().kind,
            ErrorKind::ValueError
        );
        assert_eq!(call(sqrt, &[Value::str("x")]).unwrap_err().kind, ErrorKind::TypeError);
    }
}
