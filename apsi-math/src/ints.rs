//! The int functions of `math`: `floor ceil trunc isqrt gcd lcm factorial
//! comb perm`, and `prod` and `fsum` over iterables. Apsi ints are 64-bit:
//! a result past that is an `OverflowError`.

use crate::args::{between, exact, fit, index, no_kw, real, too_big};
use apsi_core::api::BinOp;
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, Caller, Kwargs, VResult, Value};

/// 2**63 as a float: the first float above every i64.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// A float already rounded to an integral value, as an int (CPython's
/// `PyLong_FromDouble` messages for inf and NaN).
fn to_int(f: f64) -> VResult<Value> {
    if f.is_nan() {
        return Err(err(ErrorKind::ValueError, "cannot convert float NaN to integer"));
    }
    if f.is_infinite() {
        return Err(err(
            ErrorKind::OverflowError,
            "cannot convert float infinity to integer",
        ));
    }
    if !(-TWO_63..TWO_63).contains(&f) {
        return Err(err(
            ErrorKind::OverflowError,
            format!("float {f:e} does not fit in a 64-bit int"),
        ));
    }
    Ok(Value::Int(f as i64))
}

fn rounding(fname: &str, args: &[Value], kw: Kwargs, f: fn(f64) -> f64) -> VResult<Value> {
    let a = exact(fname, args, kw, 1)?;
    match &a[0] {
        Value::Int(i) => Ok(Value::Int(*i)),
        Value::Bool(b) => Ok(Value::Int(i64::from(*b))),
        other => to_int(f(real(other)?)),
    }
}

pub fn floor(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    rounding("floor", args, kw, f64::floor)
}

pub fn ceil(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    rounding("ceil", args, kw, f64::ceil)
}

pub fn trunc(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    rounding("trunc", args, kw, f64::trunc)
}

/// The integer square root of `n`: the largest `r` with `r * r <= n`.
pub fn isqrt_u64(n: u64) -> u64 {
    let mut r = (n as f64).sqrt() as u64;
    while r.checked_mul(r).is_none_or(|sq| sq > n) {
        r -= 1;
    }
    while (r + 1).checked_mul(r + 1).is_some_and(|sq| sq <= n) {
        r += 1;
    }
    r
}

pub fn isqrt(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = exact("isqrt", args, kw, 1)?;
    let n = index(&a[0])?;
    if n < 0 {
        return Err(err(ErrorKind::ValueError, "isqrt() argument must be nonnegative"));
    }
    Ok(Value::Int(isqrt_u64(n as u64) as i64))
}

fn gcd_u(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `gcd(*integers)`: 0 for none.
pub fn gcd(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    no_kw("gcd", kw)?;
    let mut g = 0u64;
    for a in args {
        g = gcd_u(g, index(a)?.unsigned_abs());
    }
    fit("gcd", i128::from(g))
}

/// `lcm(*integers)`: 1 for none, 0 if any is 0.
pub fn lcm(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    no_kw("lcm", kw)?;
    let mut l: u128 = 1;
    let mut zero = false;
    for a in args {
        let x = index(a)?.unsigned_abs();
        if x == 0 || zero {
            zero = true;
            continue;
        }
        let g = gcd_u((l % u128::from(x)) as u64, x);
        l = (l / u128::from(g)) * u128::from(x);
        if l > i64::MAX as u128 {
            return Err(too_big("lcm"));
        }
    }
    if zero {
        return Ok(Value::Int(0));
    }
    fit("lcm", l as i128)
}

/// `n!`, or `None` past 64 bits.
pub fn factorial_i(n: i64) -> Option<i64> {
    (2..=n).try_fold(1i64, |acc, k| acc.checked_mul(k))
}

pub fn factorial(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = exact("factorial", args, kw, 1)?;
    let n = index(&a[0])?;
    if n < 0 {
        return Err(err(
            ErrorKind::ValueError,
            "factorial() not defined for negative values",
        ));
    }
    factorial_i(n).map(Value::Int).ok_or_else(|| too_big("factorial"))
}

/// `C(n, k)`, or `None` past 64 bits (`n, k >= 0`).
pub fn comb_i(n: i64, k: i64) -> Option<i64> {
    if k > n {
        return Some(0);
    }
    let k = k.min(n - k);
    // c = C(n, i) after step i; C(n, i) grows with i up to n / 2, so once it
    // leaves 64 bits the result does too.
    let mut c: i128 = 1;
    for i in 0..k {
        c = c.checked_mul(i128::from(n - i))? / i128::from(i + 1);
        if c > i128::from(i64::MAX) {
            return None;
        }
    }
    Some(c as i64)
}

fn nonneg(v: &Value, what: &str) -> VResult<i64> {
    let n = index(v)?;
    if n < 0 {
        return Err(err(
            ErrorKind::ValueError,
            format!("{what} must be a non-negative integer"),
        ));
    }
    Ok(n)
}

pub fn comb(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = exact("comb", args, kw, 2)?;
    let (n, k) = (index(&a[0])?, index(&a[1])?);
    let n = nonneg(&Value::Int(n), "n")?;
    let k = nonneg(&Value::Int(k), "k")?;
    comb_i(n, k).map(Value::Int).ok_or_else(|| too_big("comb"))
}

/// `n! / (n - k)!`, or `None` past 64 bits (`n, k >= 0`).
pub fn perm_i(n: i64, k: i64) -> Option<i64> {
    if k > n {
        return Some(0);
    }
    (0..k).try_fold(1i64, |acc, i| acc.checked_mul(n - i))
}

/// `perm(n, k=None)`: `factorial(n)` without `k`.
pub fn perm(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = between("perm", args, kw, 1, 2)?;
    match a.get(1) {
        None | Some(Value::None) => factorial(c, &a[..1], kw),
        Some(k) => {
            let (n, k) = (index(&a[0])?, index(k)?);
            let n = nonneg(&Value::Int(n), "n")?;
            let k = nonneg(&Value::Int(k), "k")?;
            perm_i(n, k).map(Value::Int).ok_or_else(|| too_big("perm"))
        }
    }
}

/// `prod(iterable, *, start=1)`: `start` times every item, left to right,
/// with the `*` of Apsi's operators.
pub fn prod(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    if args.len() != 1 {
        return Err(err(
            ErrorKind::TypeError,
            format!("prod() takes exactly 1 positional argument ({} given)", args.len()),
        ));
    }
    let mut acc = Value::Int(1);
    for (k, v) in kw {
        if &**k != "start" {
            return Err(err(
                ErrorKind::TypeError,
                format!("prod() got an unexpected keyword argument '{k}'"),
            ));
        }
        acc = v.clone();
    }
    for x in apsi_core::api::iterate(c, &args[0])? {
        acc = apsi_core::api::binary(BinOp::Mul, &acc, &x)?;
    }
    Ok(acc)
}

/// `fsum(iterable)`: the exactly rounded sum (CPython's algorithm).
pub fn fsum(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = exact("fsum", args, kw, 1)?;
    let items = apsi_core::api::iterate(c, &a[0])?;
    crate::norm::fsum(items.iter().map(real)).map(Value::Float)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combinatorics_fit_or_overflow() {
        assert_eq!(factorial_i(20), Some(2432902008176640000));
        assert_eq!(factorial_i(21), None);
        assert_eq!(factorial_i(0), Some(1));
        assert_eq!(comb_i(60, 30), Some(118264581564861424));
        assert_eq!(comb_i(5, 7), Some(0));
        assert_eq!(comb_i(66, 33), Some(7219428434016265740));
        assert_eq!(comb_i(68, 34), None);
        assert_eq!(comb_i(i64::MAX, 1), Some(i64::MAX));
        assert_eq!(comb_i(i64::MAX, i64::MAX - 1), Some(i64::MAX));
        assert_eq!(comb_i(i64::MAX, 2), None);
        assert_eq!(perm_i(5, 2), Some(20));
        assert_eq!(perm_i(21, 21), None);
        assert_eq!(perm_i(i64::MAX, 0), Some(1));
    }

    #[test]
    fn int_roots_and_divisors() {
        for n in [0u64, 1, 2, 3, 4, 15, 16, 17, u64::MAX, (1 << 62) - 1, 1 << 62] {
            let r = isqrt_u64(n);
            assert!(u128::from(r) * u128::from(r) <= u128::from(n));
            assert!(u128::from(r + 1) * u128::from(r + 1) > u128::from(n));
        }
        assert_eq!(gcd_u(12, 18), 6);
        assert!(to_int(1e300).is_err());
        assert!(to_int(f64::NAN).is_err());
        assert!(matches!(to_int(-3.0), Ok(Value::Int(-3))));
    }
}
