//! Scalar codecs for the binary floating-point formats, generic over the
//! format's parameters (exponent bits, mantissa bits, bias, special-value
//! rule). Every function is branch-light integer/float arithmetic on one
//! value, written so a loop over a slice auto-vectorizes.
//!
//! Encoding rounds once, to nearest with ties to even, straight from the
//! f32 or f64 input bits (no intermediate rounding), keeps subnormals, and
//! follows ml_dtypes' `astype` for what does not fit (see [`Rule`]).

/// What a format does with values past its largest finite value, infinities and NaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// IEEE-like (f16, bf16, fp8_e5m2): the all-ones exponent holds ±inf and
    /// NaNs; overflow gives ±inf; NaN gives the quiet NaN, sign kept.
    Ieee,
    /// "fn" formats with one NaN and no inf (fp8_e4m3: S.1111.111 is NaN):
    /// inf and overflow give NaN, sign kept.
    NanOnly,
    /// No inf and no NaN (fp6, fp4): overflow and ±inf saturate to ±max;
    /// NaN gives a zero of the opposite sign (ml_dtypes' behaviour).
    Finite,
}

/// The parameters of a binary floating-point format of at most 16 bits.
pub trait Spec {
    const E: u32;
    const M: u32;
    const BIAS: i32;
    const RULE: Rule;
    /// NaN payloads as numpy's float16 keeps them (top payload bits, no quieting).
    const NUMPY_NAN: bool = false;

    const SIGN: u32 = 1 << (Self::E + Self::M);
    /// Largest finite magnitude code.
    const MAX_CODE: u32 = match Self::RULE {
        Rule::Ieee => (((1 << Self::E) - 1) << Self::M) - 1,
        Rule::NanOnly => (1 << (Self::E + Self::M)) - 2,
        Rule::Finite => (1 << (Self::E + Self::M)) - 1,
    };
    /// Magnitude code of +inf (Ieee) or of the NaN (NanOnly).
    const INF_CODE: u32 = ((1 << Self::E) - 1) << Self::M;
    const NAN_CODE: u32 = match Self::RULE {
        Rule::Ieee => Self::INF_CODE | (1 << (Self::M - 1)),
        _ => (1 << (Self::E + Self::M)) - 1,
    };
}

macro_rules! spec {
    ($name:ident, $e:expr, $m:expr, $bias:expr, $rule:expr $(, $np:expr)?) => {
        pub struct $name;
        impl Spec for $name {
            const E: u32 = $e;
            const M: u32 = $m;
            const BIAS: i32 = $bias;
            const RULE: Rule = $rule;
            $(const NUMPY_NAN: bool = $np;)?
        }
    };
}

spec!(F16, 5, 10, 15, Rule::Ieee, true);
spec!(BF16, 8, 7, 127, Rule::Ieee);
spec!(E4M3, 4, 3, 7, Rule::NanOnly);
spec!(E5M2, 5, 2, 15, Rule::Ieee);
spec!(E3M2, 3, 2, 3, Rule::Finite);
spec!(E2M3, 2, 3, 1, Rule::Finite);
spec!(E2M1, 2, 1, 1, Rule::Finite);

/// Applies the format's rule to a rounded magnitude code and adds the sign.
#[inline(always)]
fn finish<S: Spec>(mag: u32, sign: u32) -> u32 {
    match S::RULE {
        Rule::Ieee => sign | if mag > S::MAX_CODE { S::INF_CODE } else { mag },
        Rule::NanOnly => sign | if mag > S::MAX_CODE { S::NAN_CODE } else { mag },
        Rule::Finite => sign | mag.min(S::MAX_CODE),
    }
}

/// The code of a NaN input with sign bit `sign` (already shifted into place)
/// and the payload's top bits `top` (numpy float16 only).
#[inline(always)]
fn nan_code<S: Spec>(sign: u32, top: u32) -> u32 {
    match S::RULE {
        Rule::Finite => sign ^ S::SIGN,
        _ if S::NUMPY_NAN => sign | S::INF_CODE | if top == 0 { 1 } else { top },
        _ => sign | S::NAN_CODE,
    }
}

/// Encodes one f32 (single rounding to nearest even).
#[inline(always)]
pub fn encode_f32<S: Spec>(x: f32) -> u32 {
    let bits = x.to_bits();
    let sign = (bits >> 31) << (S::E + S::M);
    let a = bits & 0x7fff_ffff;
    // Normal results: round the f32 bits to M mantissa bits, then rebias.
    let shift = 23 - S::M;
    let rn = (a + ((1u32 << (shift - 1)) - 1) + ((a >> shift) & 1)) >> shift;
    let normal = rn.wrapping_sub(((127 - S::BIAS) as u32) << S::M);
    // Subnormal results: scale so one subnormal step is 1.0 and round to an
    // integer by adding 2^23 (exact: the scaling is by a power of two) and
    // reading the integer from the mantissa bits (no float→int conversion,
    // which AVX2 lacks for unsigned lanes).
    let min_normal_bits = ((128 - S::BIAS) as u32) << 23;
    let scale = f32::from_bits(((S::M as i32 + S::BIAS - 1 + 127) as u32) << 23);
    let y = f32::from_bits(a.min(min_normal_bits)) * scale;
    let sub = (y + 8_388_608.0).to_bits() & 0x7f_ffff;
    let mag = if a < min_normal_bits { sub } else { normal };
    let out = finish::<S>(mag, sign);
    if a > 0x7f80_0000 {
        nan_code::<S>(sign, (a & 0x7f_ffff) >> shift)
    } else {
        out
    }
}

/// Encodes one f64 (single rounding to nearest even, straight from the f64 bits).
#[inline(always)]
pub fn encode_f64<S: Spec>(x: f64) -> u32 {
    let bits = x.to_bits();
    let sign = ((bits >> 63) as u32) << (S::E + S::M);
    let a = bits & 0x7fff_ffff_ffff_ffff;
    let shift = 52 - S::M;
    let rn = (a + ((1u64 << (shift - 1)) - 1) + ((a >> shift) & 1)) >> shift;
    let normal = rn.wrapping_sub(((1023 - S::BIAS) as u64) << S::M);
    let min_normal_bits = ((1024 - S::BIAS) as u64) << 52;
    let scale = f64::from_bits(((S::M as i64 + S::BIAS as i64 - 1 + 1023) as u64) << 52);
    let y = f64::from_bits(a.min(min_normal_bits)) * scale;
    let sub = (y + 4_503_599_627_370_496.0).to_bits() & 0xf_ffff_ffff_ffff;
    let mag = if a < min_normal_bits { sub } else { normal };
    // Anything past u32 is an overflow; clamp so the rule sees it as one.
    let mag = mag.min(u32::MAX as u64) as u32;
    let out = finish::<S>(mag, sign);
    if a > 0x7ff0_0000_0000_0000 {
        nan_code::<S>(sign, ((a & 0xf_ffff_ffff_ffff) >> shift) as u32)
    } else {
        out
    }
}

/// bf16 from f32: the rounding is a carry into the upper half of the bits.
#[inline(always)]
pub fn encode_bf16_f32(x: f32) -> u16 {
    let bits = x.to_bits();
    // Wrapping: only NaN bit patterns can carry out, and they are replaced below.
    let r = (bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) >> 16) as u16;
    if bits & 0x7fff_ffff > 0x7f80_0000 {
        ((bits >> 16) as u16 & 0x8000) | 0x7fc0
    } else {
        r
    }
}

/// f16 to f32 without branches (vectorizes): shift the exponent and mantissa
/// into place, rebias, fix up inf/NaN, and renormalize subnormals with one
/// float subtraction (exact).
#[inline(always)]
pub fn decode_f16(h: u16) -> f32 {
    let h = h as u32;
    let mag = (h & 0x7fff) << 13;
    let exp = mag & 0x0f80_0000;
    let normal = mag + ((127 - 15) << 23);
    let special = normal + ((128 - 16) << 23);
    let sub = f32::from_bits(mag + (113 << 23)) - f32::from_bits(113 << 23);
    let v = if exp == 0x0f80_0000 {
        special
    } else if exp == 0 {
        sub.to_bits()
    } else {
        normal
    };
    f32::from_bits(v | ((h & 0x8000) << 16))
}

/// Decodes one code to f32 (exact for every finite code).
pub fn decode<S: Spec>(code: u32) -> f32 {
    let neg = code & S::SIGN != 0;
    let mag = code & (S::SIGN - 1);
    let exp = mag >> S::M;
    let man = mag & ((1 << S::M) - 1);
    let v = if exp == 0 {
        // Subnormal: man * 2^(1 - BIAS - M), exact in f32.
        man as f32 * f32::from_bits(((1 - S::BIAS - S::M as i32 + 127) as u32) << 23)
    } else if S::RULE == Rule::Ieee && exp == (1 << S::E) - 1 {
        if man == 0 {
            f32::INFINITY
        } else {
            // Keep the payload's top bits, as the vendors' decoders do.
            return f32::from_bits(((neg as u32) << 31) | 0x7fc0_0000 | (man << (23 - S::M)));
        }
    } else if S::RULE == Rule::NanOnly && mag == S::NAN_CODE {
        return f32::from_bits(((neg as u32) << 31) | 0x7fc0_0000);
    } else {
        f32::from_bits((((exp as i32 - S::BIAS + 127) as u32) << 23) | (man << (23 - S::M)))
    };
    if neg {
        -v
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e4m3_rounds_ties_to_even_and_overflows_to_nan() {
        assert_eq!(encode_f32::<E4M3>(448.0), 0x7e);
        assert_eq!(encode_f32::<E4M3>(464.0), 0x7e); // tie between 448 and (NaN) 480 goes to even
        assert_eq!(encode_f32::<E4M3>(465.0), 0x7f);
        assert_eq!(encode_f32::<E4M3>(-f32::INFINITY), 0xff);
        assert_eq!(encode_f64::<E4M3>(464.0), 0x7e);
        assert_eq!(decode::<E4M3>(0x7e), 448.0);
        assert!(decode::<E4M3>(0x7f).is_nan());
    }

    #[test]
    fn fp4_saturates_and_maps_nan_to_opposite_zero() {
        assert_eq!(encode_f32::<E2M1>(100.0), 0x7);
        assert_eq!(encode_f32::<E2M1>(-f32::INFINITY), 0xf);
        assert_eq!(encode_f32::<E2M1>(f32::NAN), 0x8);
        assert_eq!(encode_f32::<E2M1>(-f32::NAN), 0x0);
        assert_eq!(encode_f32::<E2M1>(0.25), 0x0); // tie with 0 goes to even (0)
        assert_eq!(encode_f32::<E2M1>(0.26), 0x1);
        assert_eq!(decode::<E2M1>(0x7), 6.0);
        assert_eq!(decode::<E2M1>(0x1), 0.5);
    }

    #[test]
    fn f16_and_bf16_match_the_half_crate_on_ordinary_values() {
        for &x in &[0.1f32, 1.0, 65504.0, 65520.0, 1e-7, 6e-8, 3e-8, -2.5, 1e30] {
            assert_eq!(encode_f32::<F16>(x) as u16, half::f16::from_f32(x).to_bits(), "{x}");
            assert_eq!(encode_bf16_f32(x), half::bf16::from_f32(x).to_bits(), "{x}");
            assert_eq!(
                encode_f64::<BF16>(x as f64) as u16,
                half::bf16::from_f32(x).to_bits(),
                "{x}"
            );
        }
    }
}
