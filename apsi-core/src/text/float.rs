//! Float text exactly as Python writes it.
//!
//! Rust's float formatting is exact (shortest round-trip digits for `{:e}`,
//! correctly rounded, ties-to-even on the exact binary value, for
//! `{:.N}`/`{:.Ne}`); this file only lays the digits out the way Python does.

/// Decimal digits `d1 d2 … dn` (no leading zeros unless the value is zero)
/// and the exponent `e` such that the value is `d1.d2…dn × 10^e`.
pub(crate) struct Digits {
    pub digits: String,
    pub exp: i32,
}

/// Parses the output of Rust's `{:e}` formatting (`"1.2345e-7"`).
fn parse_sci(s: &str) -> Digits {
    let (mant, exp) = match s.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (s, 0),
    };
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    Digits { digits, exp }
}

/// The shortest digits that read back as `x` (an f64, taken by magnitude).
/// Of the candidates of that length, the one nearest to `x`, ties to even
/// (as Python's repr chooses): Rust finds the length, and correctly rounded
/// formatting at that length gives the nearest digits.
pub(crate) fn shortest_f64(x: f64) -> Digits {
    let d = parse_sci(&format!("{:e}", x.abs()));
    let n = d.digits.len();
    if n < 2 {
        return d;
    }
    parse_sci(&format!("{:.*e}", n - 1, x.abs()))
}

/// The shortest digits that read back as `x` at f32 precision (nearest
/// of that length, ties to even).
pub(crate) fn shortest_f32(x: f32) -> Digits {
    let d = parse_sci(&format!("{:e}", x.abs()));
    let n = d.digits.len();
    if n < 2 {
        return d;
    }
    parse_sci(&format!("{:.*e}", n - 1, x.abs()))
}

/// A double has at most 767 significant decimal digits and 1074 digits
/// after the point; past these every digit is 0. (Rust's formatter also
/// refuses precisions above 65535.)
const MAX_SIGNIFICANT: usize = 800;
const MAX_FRACTION: usize = 1100;

/// `x` (by magnitude) correctly rounded to `n >= 1` significant digits.
pub(crate) fn significant(x: f64, n: usize) -> Digits {
    let mut d = parse_sci(&format!("{:.*e}", n.clamp(1, MAX_SIGNIFICANT) - 1, x.abs()));
    while d.digits.len() < n {
        d.digits.push('0');
    }
    d
}

/// `x` (by magnitude) correctly rounded to `prec` digits after the point.
pub(crate) fn fixed(x: f64, prec: usize) -> String {
    if let Some(t) = fixed_from_shortest(x.abs(), prec) {
        return t;
    }
    let mut t = format!("{:.*}", prec.min(MAX_FRACTION), x.abs());
    for _ in MAX_FRACTION..prec {
        t.push('0');
    }
    t
}

/// `fixed` without exact arithmetic where the shortest round-trip digits
/// already are the answer (`f"{x:.2f}"` of prices, `i * 2.5`): `None`
/// otherwise. Rust's exact `{:.N}` falls back to big-number arithmetic for
/// such values (Grisu cannot decide them), which costs ten times more.
///
/// Why it is exact: the shortest digits `s` read back as `x`, so `s` lies
/// in `x`'s rounding interval, `|s - x| <= ulp(x) / 2`. When `s` has at
/// most `prec` decimals it is a multiple of `10^-prec`, and when also
/// `ulp(x) / 2 < 10^-prec / 4`, every other multiple is farther from `x`
/// than `s` is, so `s` is `x` correctly rounded to `prec` decimals.
fn fixed_from_shortest(x: f64, prec: usize) -> Option<String> {
    if !x.is_finite() || x >= 1e15 || prec > 15 {
        return None;
    }
    let half_ulp = (f64::from_bits(x.to_bits() + 1) - x) / 2.0;
    if half_ulp * 4.0 >= 10f64.powi(-(prec as i32)) * 0.99 {
        return None;
    }
    // Rust's `{}` writes the shortest digits positionally ("2.5", "3", "0.0001").
    let mut t = format!("{x}");
    let frac = t.find('.').map_or(0, |p| t.len() - p - 1);
    if frac > prec {
        return None;
    }
    if prec > 0 {
        if frac == 0 {
            t.push('.');
        }
        for _ in frac..prec {
            t.push('0');
        }
    }
    Some(t)
}

/// Python's exponent suffix: `e+16`, `e-05`, `e+300`.
pub(crate) fn exp_suffix(e: i32, upper: bool) -> String {
    let sign = if e < 0 { '-' } else { '+' };
    format!("{}{}{:02}", if upper { 'E' } else { 'e' }, sign, e.unsigned_abs())
}

/// Lays out digits positionally: `digits × 10^exp` with at least
/// `min_frac` digits after the point (zeros appended); the point is written
/// only when there is a fractional part.
pub(crate) fn positional(d: &Digits, min_frac: usize) -> String {
    let digits = d.digits.as_bytes();
    let n = digits.len() as i64;
    let point = d.exp as i64 + 1; // digits before the decimal point
    let mut out = String::new();
    if point <= 0 {
        out.push('0');
        let mut frac = String::new();
        for _ in 0..(-point) {
            frac.push('0');
        }
        frac.push_str(&d.digits);
        while frac.len() < min_frac {
            frac.push('0');
        }
        out.push('.');
        out.push_str(&frac);
    } else {
        for i in 0..point {
            out.push(if i < n { digits[i as usize] as char } else { '0' });
        }
        let mut frac = String::new();
        for i in point..n {
            frac.push(digits[i as usize] as char);
        }
        while frac.len() < min_frac {
            frac.push('0');
        }
        if !frac.is_empty() {
            out.push('.');
            out.push_str(&frac);
        }
    }
    out
}

/// Lays out digits as `d.ddd` plus Python's exponent, with at least
/// `min_frac` digits after the point.
pub(crate) fn scientific(d: &Digits, min_frac: usize, upper: bool) -> String {
    let mut out = String::new();
    let mut chars = d.digits.chars();
    out.push(chars.next().unwrap_or('0'));
    let mut frac: String = chars.collect();
    while frac.len() < min_frac {
        frac.push('0');
    }
    if !frac.is_empty() {
        out.push('.');
        out.push_str(&frac);
    }
    out.push_str(&exp_suffix(d.exp, upper));
    out
}

/// Python's repr layout of shortest digits: scientific when the exponent is
/// below -4 or at least 16, else positional with `.0` for integral values.
fn repr_layout(neg: bool, d: &Digits) -> String {
    let body = if d.exp < -4 || d.exp >= 16 {
        scientific(d, 0, false)
    } else {
        positional(d, 1)
    };
    if neg {
        format!("-{body}")
    } else {
        body
    }
}

/// `repr(x)` of a Python float: `1.0`, `0.1`, `1e-10`, `1.5e+300`, `1e+16`,
/// `-0.0`, `inf`, `-inf`, `nan`.
pub fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    repr_layout(x.is_sign_negative(), &shortest_f64(x))
}

/// Like [`float_repr`] but with the shortest digits that read back to the
/// same f32: `0.1f32` → `0.1`, bf16's 0.1 → `0.100097656`.
pub fn f32_repr(x: f32) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    repr_layout(x.is_sign_negative(), &shortest_f32(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_from_shortest_agrees_with_exact_rounding() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut values: Vec<f64> = Vec::new();
        for i in 0..20_000 {
            values.push(i as f64 * 2.5);
            values.push(i as f64 / 100.0);
            values.push(i as f64 * 0.125 + 0.005);
            values.push(f64::from_bits(next() >> 2)); // spread over magnitudes
            values.push((next() % 10_000_000) as f64 / 1000.0);
        }
        values.extend([
            0.0,
            2.675,
            1.005,
            0.5,
            1.5,
            2.5,
            1e14 + 0.5,
            999_999_999_999_999.9,
            5e-324,
        ]);
        let mut taken = 0;
        for &x in &values {
            for prec in 0..=15 {
                if let Some(t) = fixed_from_shortest(x, prec) {
                    taken += 1;
                    assert_eq!(t, format!("{x:.prec$}"), "{x:e} .{prec}");
                }
            }
        }
        assert!(taken > 100_000, "the fast path was taken {taken} times");
    }

    #[test]
    fn repr_examples_from_the_spec() {
        let cases: &[(f64, &str)] = &[
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e-10, "1e-10"),
            (1.5e300, "1.5e+300"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (1.0 / 3.0, "0.3333333333333333"),
            (123456789.0, "123456789.0"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (2f64.sqrt(), "1.4142135623730951"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (-2.5, "-2.5"),
            (1234.5e10, "12345000000000.0"),
        ];
        for (x, want) in cases {
            assert_eq!(float_repr(*x), *want, "repr of {x:e}");
        }
    }

    #[test]
    fn f32_examples() {
        assert_eq!(f32_repr(0.1f32), "0.1");
        assert_eq!(f32_repr(f32::from_bits(0x3dcd0000)), "0.100097656");
        assert_eq!(f32_repr(1e-5f32), "1e-05");
        assert_eq!(f32_repr(3.0f32), "3.0");
        assert_eq!(f32_repr(-0.0f32), "-0.0");
        assert_eq!(f32_repr(f32::MAX), "3.4028235e+38");
    }

    #[test]
    fn huge_precisions_pad_with_zeros() {
        let t = fixed(0.5, 100_000);
        assert_eq!(t.len(), 100_002);
        assert!(t.starts_with("0.5000"));
        let d = significant(1.0 / 3.0, 100_000);
        assert_eq!(d.digits.len(), 100_000);
        assert!(d.digits.starts_with("333333333333333314829616256247"));
    }

    #[test]
    fn exponent_suffix() {
        assert_eq!(exp_suffix(5, false), "e+05");
        assert_eq!(exp_suffix(-300, true), "E-300");
    }
}
