//! The float functions of `math`, each with CPython 3.11's special cases and
//! errors (`Modules/mathmodule.c`): the platform libm computes, CPython's
//! rules decide what is an error.

use crate::args::{between, domain, exact, range, real};
use crate::norm::vector_norm;
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, Caller, Kwargs, VResult, Value};
use std::f64::consts::PI;

/// CPython's `math_1`: a NaN result from a non-NaN argument is a domain
/// error; an infinite result from a finite argument is an overflow (for the
/// functions that can overflow) or a singularity (a domain error).
fn math_1(x: f64, f: fn(f64) -> f64, can_overflow: bool) -> VResult<Value> {
    let r = f(x);
    if r.is_nan() && !x.is_nan() {
        return Err(domain());
    }
    if r.is_infinite() && x.is_finite() {
        return Err(if can_overflow { range() } else { domain() });
    }
    Ok(Value::Float(r))
}

macro_rules! unary {
    ($($name:ident => $f:expr, $over:expr;)*) => {
        $(
            pub fn $name(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
                let a = exact(stringify!($name), args, kw, 1)?;
                math_1(real(&a[0])?, $f, $over)
            }
        )*
    };
}

unary! {
    sqrt => f64::sqrt, false;
    exp => f64::exp, true;
    expm1 => f64::exp_m1, true;
    log1p => log1p_m, false;
    fabs => f64::abs, false;
    sin => f64::sin, false;
    cos => f64::cos, false;
    tan => f64::tan, false;
    asin => f64::asin, false;
    acos => f64::acos, false;
    atan => f64::atan, false;
    sinh => f64::sinh, true;
    cosh => f64::cosh, true;
    tanh => f64::tanh, false;
    asinh => libm::asinh, false;
    acosh => libm::acosh, false;
    atanh => libm::atanh, false;
}

/// The C library's inverse hyperbolic functions, which CPython calls (the
/// standard library's `f64::asinh` & co. are its own formulas, and differ
/// in the last bit).
mod libm {
    mod c {
        extern "C" {
            pub fn asinh(x: f64) -> f64;
            pub fn acosh(x: f64) -> f64;
            pub fn atanh(x: f64) -> f64;
        }
    }
    pub fn asinh(x: f64) -> f64 {
        // SAFETY: a pure C math function of one double, defined for every input.
        unsafe { c::asinh(x) }
    }
    pub fn acosh(x: f64) -> f64 {
        // SAFETY: as above (NaN outside the domain).
        unsafe { c::acosh(x) }
    }
    pub fn atanh(x: f64) -> f64 {
        // SAFETY: as above (NaN or inf outside the domain).
        unsafe { c::atanh(x) }
    }
}

/// CPython's `m_log1p`: keeps the sign of a zero.
fn log1p_m(x: f64) -> f64 {
    if x == 0.0 {
        x
    } else {
        x.ln_1p()
    }
}

/// CPython's `m_log`, `m_log2`, `m_log10`: a zero argument gives -inf, a
/// negative one NaN (both then domain errors through `math_1`).
fn log_with(x: f64, f: fn(f64) -> f64) -> f64 {
    if x.is_finite() {
        if x > 0.0 {
            f(x)
        } else if x == 0.0 {
            f64::NEG_INFINITY
        } else {
            f64::NAN
        }
    } else if x.is_nan() || x > 0.0 {
        x
    } else {
        f64::NAN
    }
}

/// CPython's `loghelper`: a non-positive int is a domain error at once.
fn log_of(v: &Value, f: fn(f64) -> f64) -> VResult<f64> {
    if let Value::Int(i) = v {
        if *i <= 0 {
            return Err(domain());
        }
    }
    if let Value::Bool(false) = v {
        return Err(domain());
    }
    let x = real(v)?;
    let r = log_with(x, f);
    if (r.is_nan() && !x.is_nan()) || (r.is_infinite() && x.is_finite()) {
        return Err(domain());
    }
    Ok(r)
}

/// `log(x[, base])`: `log(x) / log(base)` as CPython computes it.
pub fn log(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = between("log", args, kw, 1, 2)?;
    let num = log_of(&a[0], f64::ln)?;
    match a.get(1) {
        None => Ok(Value::Float(num)),
        Some(b) => {
            let den = log_of(b, f64::ln)?;
            if den == 0.0 {
                return Err(err(ErrorKind::ZeroDivisionError, "float division by zero"));
            }
            Ok(Value::Float(num / den))
        }
    }
}

pub fn log2(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = exact("log2", args, kw, 1)?;
    Ok(Value::Float(log_of(&a[0], f64::log2)?))
}

pub fn log10(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = exact("log10", args, kw, 1)?;
    Ok(Value::Float(log_of(&a[0], f64::log10)?))
}

/// CPython's `math_pow`: IEEE special values handled directly, libm for
/// finite ** finite, then NaN → domain error, inf → division by zero (a
/// zero base) or overflow.
pub fn pow_f(x: f64, y: f64) -> VResult<f64> {
    if !x.is_finite() || !y.is_finite() {
        let r = if x.is_nan() {
            if y == 0.0 {
                1.0
            } else {
                x
            }
        } else if y.is_nan() {
            if x == 1.0 {
                1.0
            } else {
                y
            }
        } else if x.is_infinite() {
            let odd_y = y.is_finite() && (y.abs() % 2.0) == 1.0;
            if y > 0.0 {
                if odd_y {
                    x
                } else {
                    x.abs()
                }
            } else if y == 0.0 {
                1.0
            } else if odd_y {
                0.0f64.copysign(x)
            } else {
                0.0
            }
        } else if x.abs() == 1.0 {
            1.0
        } else if (y > 0.0 && x.abs() > 1.0) || (y < 0.0 && x.abs() < 1.0) {
            f64::INFINITY
        } else {
            0.0
        };
        return Ok(r);
    }
    let r = x.powf(y);
    if r.is_nan() {
        return Err(domain());
    }
    if r.is_infinite() {
        return Err(if x == 0.0 { domain() } else { range() });
    }
    Ok(r)
}

pub fn pow(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = exact("pow", args, kw, 2)?;
    Ok(Value::Float(pow_f(real(&a[0])?, real(&a[1])?)?))
}

pub fn fmod(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = exact("fmod", args, kw, 2)?;
    let (x, y) = (real(&a[0])?, real(&a[1])?);
    if y.is_infinite() && x.is_finite() {
        return Ok(Value::Float(x));
    }
    let r = x % y;
    if r.is_nan() && !x.is_nan() && !y.is_nan() {
        return Err(domain());
    }
    Ok(Value::Float(r))
}

pub fn copysign(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = exact("copysign", args, kw, 2)?;
    Ok(Value::Float(real(&a[0])?.copysign(real(&a[1])?)))
}

/// CPython's `m_atan2`: the IEEE special cases first, then libm.
pub fn atan2_f(y: f64, x: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if y.is_infinite() {
        if x.is_infinite() {
            return if x.is_sign_positive() {
                (0.25 * PI).copysign(y)
            } else {
                (0.75 * PI).copysign(y)
            };
        }
        return (0.5 * PI).copysign(y);
    }
    if x.is_infinite() || y == 0.0 {
        return if x.is_sign_positive() {
            0.0f64.copysign(y)
        } else {
            PI.copysign(y)
        };
    }
    y.atan2(x)
}

pub fn atan2(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = exact("atan2", args, kw, 2)?;
    Ok(Value::Float(atan2_f(real(&a[0])?, real(&a[1])?)))
}

pub fn degrees(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = exact("degrees", args, kw, 1)?;
    Ok(Value::Float(real(&a[0])? * (180.0 / PI)))
}

pub fn radians(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = exact("radians", args, kw, 1)?;
    Ok(Value::Float(real(&a[0])? * (PI / 180.0)))
}

/// `hypot(*coordinates)`: CPython 3.11's `vector_norm`.
pub fn hypot(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    crate::args::no_kw("hypot", kw)?;
    let mut v = Vec::with_capacity(args.len());
    for a in args {
        v.push(real(a)?.abs());
    }
    Ok(Value::Float(vector_norm(&mut v)))
}

pub fn isnan(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = exact("isnan", args, kw, 1)?;
    Ok(Value::Bool(real(&a[0])?.is_nan()))
}

pub fn isinf(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = exact("isinf", args, kw, 1)?;
    Ok(Value::Bool(real(&a[0])?.is_infinite()))
}

pub fn isfinite(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = exact("isfinite", args, kw, 1)?;
    Ok(Value::Bool(real(&a[0])?.is_finite()))
}

/// CPython's `isclose` test.
pub fn isclose_f(a: f64, b: f64, rel_tol: f64, abs_tol: f64) -> bool {
    if a == b {
        return true;
    }
    if a.is_infinite() || b.is_infinite() {
        return false;
    }
    let diff = (b - a).abs();
    diff <= (rel_tol * b).abs() || diff <= (rel_tol * a).abs() || diff <= abs_tol
}

/// `isclose(a, b, *, rel_tol=1e-09, abs_tol=0.0)`.
pub fn isclose(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let (mut rel_tol, mut abs_tol) = (1e-9, 0.0);
    let mut pos: Vec<Option<&Value>> = args.iter().map(Some).collect();
    if pos.len() > 2 {
        return Err(err(
            ErrorKind::TypeError,
            format!("isclose() takes exactly 2 positional arguments ({} given)", pos.len()),
        ));
    }
    pos.resize(2, None);
    for (k, v) in kw {
        match &**k {
            "rel_tol" => rel_tol = real(v)?,
            "abs_tol" => abs_tol = real(v)?,
            "a" | "b" => {
                let i = usize::from(&**k == "b");
                if pos[i].is_some() {
                    return Err(err(
                        ErrorKind::TypeError,
                        format!("argument for isclose() given by name ('{k}') and position ({})", i + 1),
                    ));
                }
                pos[i] = Some(v);
            }
            _ => {
                return Err(err(
                    ErrorKind::TypeError,
                    format!("isclose() got an unexpected keyword argument '{k}'"),
                ))
            }
        }
    }
    let (Some(a), Some(b)) = (pos[0], pos[1]) else {
        let missing = if pos[0].is_none() { "a' (pos 1)" } else { "b' (pos 2)" };
        return Err(err(
            ErrorKind::TypeError,
            format!("isclose() missing required argument '{missing}"),
        ));
    };
    if rel_tol < 0.0 || abs_tol < 0.0 {
        return Err(err(ErrorKind::ValueError, "tolerances must be non-negative"));
    }
    Ok(Value::Bool(isclose_f(real(a)?, real(b)?, rel_tol, abs_tol)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pow_special_cases_follow_cpython() {
        assert_eq!(pow_f(f64::NAN, 0.0).ok(), Some(1.0));
        assert_eq!(pow_f(1.0, f64::NAN).ok(), Some(1.0));
        assert_eq!(pow_f(f64::NEG_INFINITY, 3.0).ok(), Some(f64::NEG_INFINITY));
        assert_eq!(pow_f(0.5, f64::NEG_INFINITY).ok(), Some(f64::INFINITY));
        assert_eq!(pow_f(2.0, 10.0).ok(), Some(1024.0));
        assert_eq!(pow_f(0.0, -1.0).err().map(|e| e.kind), Some(ErrorKind::ValueError));
        assert_eq!(pow_f(10.0, 400.0).err().map(|e| e.kind), Some(ErrorKind::OverflowError));
        assert_eq!(
            pow_f(-8.0, 1.0 / 3.0).err().map(|e| e.kind),
            Some(ErrorKind::ValueError)
        );
    }

    #[test]
    fn atan2_and_isclose() {
        assert_eq!(atan2_f(1.0, -1.0), 2.356194490192345);
        assert_eq!(atan2_f(f64::INFINITY, f64::NEG_INFINITY), 0.75 * PI);
        assert!(atan2_f(-0.0, 1.0).is_sign_negative());
        assert!(isclose_f(0.1 + 0.2, 0.3, 1e-9, 0.0));
        assert!(!isclose_f(1.0, 1.1, 1e-9, 0.0));
        assert!(isclose_f(0.0, 1e-12, 1e-9, 1e-9));
        assert!(!isclose_f(f64::INFINITY, 1e308, 1.0, 0.0));
    }

    #[test]
    fn log_domain() {
        assert!(log_of(&Value::Int(0), f64::ln).is_err());
        assert!(log_of(&Value::Float(-1.0), f64::ln).is_err());
        assert_eq!(log_of(&Value::Float(f64::INFINITY), f64::ln).ok(), Some(f64::INFINITY));
        assert!(log_of(&Value::Float(f64::NAN), f64::ln).is_ok_and(f64::is_nan));
        assert_eq!(log_of(&Value::Int(1024), f64::log2).ok(), Some(10.0));
    }
}
