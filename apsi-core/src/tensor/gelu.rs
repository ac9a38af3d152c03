//! PyTorch's exact `gelu`, `x·Φ(x)`, and its derivative `Φ(x) + x·φ(x)`
//! over float32 slices, vectorised eight or sixteen wide (the float64 path computes
//! with libm's `erf` in `arith`).
//!
//! Φ(x) is `erfc(-x/√2)/2`, with `erfc` from Numerical Recipes' Chebyshev
//! fit (`erfcc`, section 6.2: `erfc(z) = t·exp(-z² + P(t))`, `t = 1/(1 +
//! z/2)`, fractional error below 1.2e-7 for every z ≥ 0), so the left tail
//! keeps its relative accuracy where `1 + erf` would cancel. The square in
//! the exponent is carried as an exact sum of two floats (`x²/2 = h + l`
//! through a fused multiply-add), and `exp` is Cephes' `expf` (reduction by
//! ln 2 split in two, a degree-5 polynomial). Results are within about 5
//! ulp of float32 (the tests hold them to 6e-7 relative), down to Φ's
//! float32 range (below 1.2e-38 the result is 0).
//!
//! Only IEEE operations and `mul_add` (exactly rounded on every CPU), so the
//! bits are the same with or without AVX2. Inputs beyond |x| ≥ 10⁴, the
//! infinities and NaN go through the scalar formula in f64 instead.

use std::f32::consts::{FRAC_1_SQRT_2, LOG2_E};

/// Numerical Recipes' P(t), highest coefficient first (the published
/// digits; the compiler rounds them to float32).
#[allow(clippy::excessive_precision)]
const ERFC_P: [f32; 10] = [
    0.170_872_77,
    -0.822_152_23,
    1.488_515_87,
    -1.135_203_98,
    0.278_868_07,
    -0.186_288_06,
    0.096_784_18,
    0.374_091_96,
    1.000_023_68,
    -1.265_512_23,
];

/// 1/√(2π)
const INV_SQRT_2PI: f32 = 0.398_942_3;

/// Where the vector formula is used; beyond it Φ is 0 or 1 in float32.
const ORDINARY: f32 = 1.0e4;

/// `exp(p - h - l)` for `h ≥ 0` (the exact square split as `h + l`) and
/// a small `p`; 0 where the exponent is below -87.3.
#[inline(always)]
fn exp_minus_square(h: f32, l: f32, p: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0; // 1.5 * 2^23
                                     // ln 2 = C1 + C2, C1 with 9 significant bits (k·C1 exact for |k| < 2^15).
    const C1: f32 = 0.693_359_4;
    const C2: f32 = -2.121_944_4e-4;
    let rough = p - h;
    let a = rough.max(-87.3);
    // t holds k in its low mantissa bits (a in [-87.3, 0]: k in [-126, 0]).
    let t = a * LOG2_E + ROUND;
    let k = t - ROUND;
    // r = (p - h - l) - k ln 2; -k·C1 - h is exact (the two nearly cancel).
    let r = ((-k).mul_add(C1, -h) + p) - l + (-k) * C2;
    let e = super::vmath::expf_reduced(r);
    let scale = super::vmath::pow2_of_rounded(t);
    if rough < -87.3 {
        0.0
    } else {
        e * scale
    }
}

/// P(t) by Estrin's scheme: four levels of dependent operations where
/// Horner's rule takes ten, so the vector loop is not held up by one long
/// chain of fused multiply-adds (its latency, not the arithmetic, set the
/// pace).
#[inline(always)]
fn erfc_poly(t: f32) -> f32 {
    // q(k): the coefficient of t^k.
    let q = |k: usize| ERFC_P[9 - k];
    let t2 = t * t;
    let t4 = t2 * t2;
    let t8 = t4 * t4;
    let b0 = q(1).mul_add(t, q(0));
    let b1 = q(3).mul_add(t, q(2));
    let b2 = q(5).mul_add(t, q(4));
    let b3 = q(7).mul_add(t, q(6));
    let b4 = q(9).mul_add(t, q(8));
    let c0 = b1.mul_add(t2, b0);
    let c1 = b3.mul_add(t2, b2);
    let d0 = c1.mul_add(t4, c0);
    b4.mul_add(t8, d0)
}

/// (Φ(x), x²/2 as h + l) for |x| < [`ORDINARY`].
#[inline(always)]
fn cdf_and_square(x: f32) -> (f32, f32, f32) {
    let ax = x.abs();
    let sq = ax * ax;
    let (h, l) = (sq * 0.5, ax.mul_add(ax, -sq) * 0.5);
    let z = ax * FRAC_1_SQRT_2;
    let t = 1.0 / 0.5f32.mul_add(z, 1.0);
    let p = erfc_poly(t);
    // erfc(|x|/√2) = t·exp(P(t) - x²/2)
    let tail = 0.5 * (t * exp_minus_square(h, l, p));
    let cdf = if x >= 0.0 { 1.0 - tail } else { tail };
    (cdf, h, l)
}

#[inline(always)]
fn gelu_ordinary(x: f32) -> f32 {
    x * cdf_and_square(x).0
}

#[inline(always)]
fn gelu_grad_ordinary(x: f32) -> f32 {
    let (cdf, h, l) = cdf_and_square(x);
    cdf + x * (exp_minus_square(h, l, 0.0) * INV_SQRT_2PI)
}

#[inline(always)]
fn is_ordinary(x: f32) -> bool {
    x.abs() < ORDINARY
}

/// The scalar formulas in f64 (libm's `erf`, as the float64 path computes
/// them), for the inputs outside the ordinary range.
fn gelu_exact(x: f32) -> f32 {
    super::arith::gelu(x as f64) as f32
}

fn gelu_grad_exact(x: f32) -> f32 {
    super::arith::gelu_grad(x as f64) as f32
}

/// Which of the two functions.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Gelu {
    Value,
    Derivative,
}

/// `dst[i] = gelu(src[i])` or its derivative (equal lengths).
pub fn apply(f: Gelu, src: &[f32], dst: &mut [std::mem::MaybeUninit<f32>]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { apply_avx512(f, src, dst) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: as above.
            return unsafe { apply_avx2(f, src, dst) };
        }
    }
    apply_plain(f, src, dst)
}

// Sixteen wide where the CPU has AVX-512 (same operations, same bits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
unsafe fn apply_avx512(f: Gelu, src: &[f32], dst: &mut [std::mem::MaybeUninit<f32>]) {
    apply_plain(f, src, dst)
}

// Compiled with AVX2 and FMA so the loop is eight wide and `mul_add` one
// instruction (elsewhere a library call with the same result).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn apply_avx2(f: Gelu, src: &[f32], dst: &mut [std::mem::MaybeUninit<f32>]) {
    apply_plain(f, src, dst)
}

#[inline(always)]
fn apply_plain(f: Gelu, src: &[f32], dst: &mut [std::mem::MaybeUninit<f32>]) {
    // One monomorphic loop per function, so each vectorises whole.
    match f {
        Gelu::Value => {
            for (o, &x) in dst.iter_mut().zip(src) {
                o.write(gelu_ordinary(x));
            }
        }
        Gelu::Derivative => {
            for (o, &x) in dst.iter_mut().zip(src) {
                o.write(gelu_grad_ordinary(x));
            }
        }
    }
    let exact = match f {
        Gelu::Value => gelu_exact,
        Gelu::Derivative => gelu_grad_exact,
    };
    // One vectorised test of the slice before the scalar fix-up scan.
    if src.iter().fold(false, |any, &x| any | !is_ordinary(x)) {
        for (o, &x) in dst.iter_mut().zip(src) {
            if !is_ordinary(x) {
                o.write(exact(x));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::MaybeUninit;

    fn run(f: Gelu, xs: &[f32], dispatch: bool) -> Vec<u32> {
        let mut out = vec![MaybeUninit::new(0.0f32); xs.len()];
        if dispatch {
            apply(f, xs, &mut out);
        } else {
            apply_plain(f, xs, &mut out);
        }
        // SAFETY: every element was written (initialised above, overwritten by apply).
        out.iter().map(|v| unsafe { v.assume_init() }.to_bits()).collect()
    }

    /// The vector unit's loop and the portable one give the same bits, the
    /// ordinary range's edges and the special values included.
    #[test]
    fn the_same_bits_with_and_without_the_vector_unit() {
        let mut xs: Vec<f32> = (-200_000..200_000).map(|i| i as f32 * 1.3e-4).collect();
        xs.extend([
            9_999.0,
            -9_999.0,
            1.0e4,
            -1.0e4,
            3.0e38,
            -3.0e38,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ]);
        xs.extend([0.0, -0.0, 1.0e-40, -1.0e-40, -13.0, -13.5, -14.0, -20.0]);
        for f in [Gelu::Value, Gelu::Derivative] {
            assert_eq!(run(f, &xs, true), run(f, &xs, false), "{f:?}");
        }
        let v = |x: f32| f32::from_bits(run(Gelu::Value, &[x], true)[0]);
        assert_eq!(v(1.0e4), 1.0e4);
        assert_eq!(v(3.0e38), 3.0e38);
        assert_eq!(v(-20.0), 0.0);
        assert!(v(f32::NAN).is_nan() && v(f32::NEG_INFINITY).is_nan());
        let d = |x: f32| f32::from_bits(run(Gelu::Derivative, &[x], true)[0]);
        assert_eq!(d(0.0), 0.5);
        assert_eq!(d(1.0e4), 1.0);
        assert_eq!(d(-1.0e4), 0.0);
    }
}
