//! The two sums CPython 3.11 computes with extra precision: `hypot`'s
//! `vector_norm` and `fsum`'s exactly rounded Shewchuk partials (`msum`).

use apsi_core::api::ErrorKind;
use apsi_core::api::{err, VResult};

/// `(hi, lo)` with `hi + lo == a * b` exactly.
fn dl_mul(a: f64, b: f64) -> (f64, f64) {
    let hi = a * b;
    (hi, a.mul_add(b, -hi))
}

/// `(hi, lo)` with `hi + lo == a + b` exactly; needs `|a| >= |b|`.
fn dl_fast_sum(a: f64, b: f64) -> (f64, f64) {
    let hi = a + b;
    (hi, (a - hi) + b)
}

/// CPython 3.11's `vector_norm` of absolute values `v` (the caller takes
/// `fabs`): inf wins over NaN, NaN over the rest; otherwise the scaled sum of
/// squares with its rounding errors carried, then one correction step.
pub fn vector_norm(v: &mut [f64]) -> f64 {
    let mut max = 0.0f64;
    let mut found_nan = false;
    for &x in v.iter() {
        found_nan |= x.is_nan();
        if x > max {
            max = x;
        }
    }
    norm_of(v, max, found_nan)
}

fn norm_of(v: &mut [f64], max: f64, found_nan: bool) -> f64 {
    if max.is_infinite() {
        return max;
    }
    if found_nan {
        return f64::NAN;
    }
    if max == 0.0 || v.len() <= 1 {
        return max;
    }
    let max_e = frexp_exp(max);
    if max_e < -1023 {
        // ldexp(1.0, -max_e) would overflow: make subnormals normal first.
        for x in v.iter_mut() {
            *x /= f64::MIN_POSITIVE;
        }
        return f64::MIN_POSITIVE * norm_of(v, max / f64::MIN_POSITIVE, found_nan);
    }
    let scale = ldexp1(-max_e);
    let (mut csum, mut frac1, mut frac2) = (1.0f64, 0.0f64, 0.0f64);
    for &x in v.iter() {
        let x = x * scale;
        let pr = dl_mul(x, x);
        let sm = dl_fast_sum(csum, pr.0);
        csum = sm.0;
        frac1 += pr.1;
        frac2 += sm.1;
    }
    let mut h = (csum - 1.0 + (frac1 + frac2)).sqrt();
    let pr = dl_mul(-h, h);
    let sm = dl_fast_sum(csum, pr.0);
    csum = sm.0;
    frac1 += pr.1;
    frac2 += sm.1;
    let x = csum - 1.0 + (frac1 + frac2);
    h += x / (2.0 * h);
    h / scale
}

/// The exponent `e` of C's `frexp(x)` (`x = m * 2^e`, `0.5 <= m < 1`), for
/// finite `x > 0`.
fn frexp_exp(x: f64) -> i32 {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 {
        // Subnormal: the leading one is lower down.
        let mant = bits & ((1u64 << 52) - 1);
        let lz = mant.leading_zeros() as i32 - 12;
        -1022 - lz
    } else {
        exp - 1022
    }
}

/// `2^e` for `-1022 <= e <= 1023` (the range `vector_norm` needs).
fn ldexp1(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// CPython 3.11's `math_fsum` over `xs`: exactly rounded.
pub fn fsum(xs: impl IntoIterator<Item = VResult<f64>>) -> VResult<f64> {
    let mut p: Vec<f64> = Vec::with_capacity(32);
    let (mut special_sum, mut inf_sum) = (0.0f64, 0.0f64);
    for x in xs {
        let mut x = x?;
        let xsave = x;
        let mut i = 0;
        for j in 0..p.len() {
            let mut y = p[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let yr = hi - x;
            let lo = y - yr;
            if lo != 0.0 {
                p[i] = lo;
                i += 1;
            }
            x = hi;
        }
        p.truncate(i);
        if x != 0.0 {
            if !x.is_finite() {
                // From overflow, or from a NaN or inf among the summands.
                if xsave.is_finite() {
                    return Err(err(ErrorKind::OverflowError, "intermediate overflow in fsum"));
                }
                if xsave.is_infinite() {
                    inf_sum += xsave;
                }
                special_sum += xsave;
                p.clear();
            } else {
                p.push(x);
            }
        }
    }
    if special_sum != 0.0 {
        if inf_sum.is_nan() {
            return Err(err(ErrorKind::ValueError, "-inf + inf in fsum"));
        }
        return Ok(special_sum);
    }
    let mut n = p.len();
    let mut hi = 0.0f64;
    if n > 0 {
        n -= 1;
        hi = p[n];
        let mut lo = 0.0f64;
        // Sum from the top, stopping when the sum becomes inexact.
        while n > 0 {
            let x = hi;
            n -= 1;
            let y = p[n];
            hi = x + y;
            let yr = hi - x;
            lo = y - yr;
            if lo != 0.0 {
                break;
            }
        }
        // Half-even rounding across several partials.
        if n > 0 && ((lo < 0.0 && p[n - 1] < 0.0) || (lo > 0.0 && p[n - 1] > 0.0)) {
            let y = lo * 2.0;
            let x = hi + y;
            let yr = x - hi;
            if y == yr {
                hi = x;
            }
        }
    }
    Ok(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs(xs: &[f64]) -> VResult<f64> {
        fsum(xs.iter().map(|x| Ok(*x)))
    }

    #[test]
    fn fsum_is_exactly_rounded() {
        assert_eq!(fs(&[0.1; 10]).ok(), Some(1.0));
        assert_eq!(fs(&[1e100, 1.0, -1e100]).ok(), Some(1.0));
        assert_eq!(fs(&[1e-16, 1.0, 1e16]).ok(), Some(10000000000000002.0));
        assert_eq!(fs(&[]).ok(), Some(0.0));
        assert!(fs(&[f64::INFINITY, f64::NEG_INFINITY]).is_err());
        assert!(fs(&[1e308, 1e308]).is_err());
        assert_eq!(fs(&[f64::INFINITY, 1.0]).ok(), Some(f64::INFINITY));
        assert!(fs(&[f64::NAN, 1.0]).is_ok_and(f64::is_nan));
    }

    #[test]
    fn norms() {
        assert_eq!(vector_norm(&mut [3.0, 4.0]), 5.0);
        assert_eq!(vector_norm(&mut [1.0, 2.0, 2.0]), 3.0);
        assert_eq!(vector_norm(&mut []), 0.0);
        assert_eq!(vector_norm(&mut [f64::NAN, f64::INFINITY]), f64::INFINITY);
        assert!(vector_norm(&mut [f64::NAN, 1.0]).is_nan());
        assert_eq!(vector_norm(&mut [5e-324, 5e-324]), 5e-324);
        assert_eq!(frexp_exp(1.0), 1);
        assert_eq!(frexp_exp(0.75), 0);
        assert_eq!(frexp_exp(5e-324), -1073);
    }
}
