//! Number-format codecs (LANGUAGE.md §7, docs/PRECISION.md): conversion of
//! f32 and f64 values into the codes of `f16 bf16 fp8_e4m3 fp8_e5m2
//! fp6_e3m2 fp6_e2m3 fp4_e2m1 int8 int4 uint8` and back, bit-exact with
//! ml_dtypes' `astype` (numpy's for f16), and their real-size storage.
//!
//! - [`minifloat`]: the scalar float codecs, generic over a format's parameters.
//! - [`pack`]: 4-bit codes two per byte, 6-bit codes four in three bytes.
//! - [`bulk`]: slice encode/decode (vectorized, rayon for large slices).
//! - [`narrow`]: tensors of the packed dtypes (astype, gather, arithmetic).
//! - `simd`: AVX-512 kernels of the bulk codecs (x86_64, chosen at run time).
//!
//! Integer formats convert as NumPy's `astype` does: truncation toward zero,
//! then the low bits (out-of-range values wrap); NaN, ±inf and magnitudes of
//! 2^22 or more give 0 (C leaves them undefined).

pub mod bulk;
pub mod minifloat;
pub mod narrow;
pub mod pack;
#[cfg(target_arch = "x86_64")]
mod simd;
#[cfg(test)]
mod tests;

use super::dtype::DType;
use minifloat::{Spec, BF16, E2M1, E2M3, E3M2, E4M3, E5M2, F16};

/// Whether the dtype is stored as packed codes (not a native Rust type).
pub fn is_packed(d: DType) -> bool {
    !d.supported()
}

/// The code of one f32 value in format `d` (f16 and bf16 give 16-bit codes).
pub fn encode_f32(d: DType, x: f32) -> u16 {
    match d {
        DType::F16 => minifloat::encode_f32::<F16>(x) as u16,
        DType::BF16 => minifloat::encode_bf16_f32(x),
        DType::Fp8E4M3 => minifloat::encode_f32::<E4M3>(x) as u16,
        DType::Fp8E5M2 => minifloat::encode_f32::<E5M2>(x) as u16,
        DType::Fp6E3M2 => minifloat::encode_f32::<E3M2>(x) as u16,
        DType::Fp6E2M3 => minifloat::encode_f32::<E2M3>(x) as u16,
        DType::Fp4E2M1 => minifloat::encode_f32::<E2M1>(x) as u16,
        DType::Int8 => int8_f32(x) as u16,
        DType::Int4 => int4_f32(x) as u16,
        DType::UInt8 => uint8_f32(x) as u16,
        _ => 0,
    }
}

/// The code of one f64 value in format `d`, rounded once from the f64.
pub fn encode_f64(d: DType, x: f64) -> u16 {
    match d {
        DType::F16 => minifloat::encode_f64::<F16>(x) as u16,
        DType::BF16 => minifloat::encode_f64::<BF16>(x) as u16,
        DType::Fp8E4M3 => minifloat::encode_f64::<E4M3>(x) as u16,
        DType::Fp8E5M2 => minifloat::encode_f64::<E5M2>(x) as u16,
        DType::Fp6E3M2 => minifloat::encode_f64::<E3M2>(x) as u16,
        DType::Fp6E2M3 => minifloat::encode_f64::<E2M3>(x) as u16,
        DType::Fp4E2M1 => minifloat::encode_f64::<E2M1>(x) as u16,
        DType::Int8 => int_f64(x) as u8 as u16,
        DType::Int4 => (int_f64(x) & 0xf) as u16,
        DType::UInt8 => int_f64(x) as u8 as u16,
        _ => 0,
    }
}

/// The value of one code of format `d`, as f32 (exact for every finite code).
pub fn decode(d: DType, code: u16) -> f32 {
    match d {
        DType::F16 => minifloat::decode_f16(code),
        DType::BF16 => f32::from_bits((code as u32) << 16),
        DType::Fp8E4M3 => minifloat::decode::<E4M3>(code as u32),
        DType::Fp8E5M2 => minifloat::decode::<E5M2>(code as u32),
        DType::Fp6E3M2 => minifloat::decode::<E3M2>(code as u32 & 0x3f),
        DType::Fp6E2M3 => minifloat::decode::<E2M3>(code as u32 & 0x3f),
        DType::Fp4E2M1 => minifloat::decode::<E2M1>(code as u32 & 0xf),
        DType::Int8 => code as u8 as i8 as f32,
        DType::Int4 => (((code as u8) << 4) as i8 >> 4) as f32,
        DType::UInt8 => code as u8 as f32,
        _ => 0.0,
    }
}

/// The low bits of x truncated toward zero, for |x| < 2^22 (NaN, ±inf and
/// larger magnitudes give 0). Adding 1.5 × 2^23 puts the integer in the
/// mantissa bits: no float→int conversion, so the loop vectorizes.
#[inline(always)]
fn low_bits_f32(x: f32) -> u32 {
    let t = x.trunc();
    let bits = (t + 12_582_912.0).to_bits();
    if t.abs() < 4_194_304.0 {
        bits
    } else {
        0
    }
}
#[inline(always)]
pub(crate) fn int8_f32(x: f32) -> u8 {
    low_bits_f32(x) as u8
}
#[inline(always)]
pub(crate) fn int4_f32(x: f32) -> u8 {
    (low_bits_f32(x) & 0xf) as u8
}
#[inline(always)]
pub(crate) fn uint8_f32(x: f32) -> u8 {
    low_bits_f32(x) as u8
}
/// The same rule from f64: the low bits of trunc(x) for |x| < 2^22, else 0.
#[inline(always)]
fn int_f64(x: f64) -> i64 {
    if x.abs() < 4_194_304.0 {
        x as i64
    } else {
        0
    }
}

/// A format's numbers, as `format_info` reports them.
#[derive(Clone, Debug, PartialEq)]
pub struct FormatInfo {
    pub name: &'static str,
    pub bits: u32,
    /// Largest finite value.
    pub max: f64,
    /// Smallest positive normal value (1 for integer formats).
    pub min_normal: f64,
    /// Smallest positive value (1 for integer formats).
    pub min_subnormal: f64,
    /// Distance from 1.0 to the next value (1 for integer formats).
    pub eps: f64,
    pub has_inf: bool,
    pub has_nan: bool,
}

fn float_info<S: Spec>(name: &'static str, max: f64) -> FormatInfo {
    FormatInfo {
        name,
        bits: 1 + S::E + S::M,
        max,
        min_normal: 2f64.powi(1 - S::BIAS),
        min_subnormal: 2f64.powi(1 - S::BIAS - S::M as i32),
        eps: 2f64.powi(-(S::M as i32)),
        has_inf: S::RULE == minifloat::Rule::Ieee,
        has_nan: S::RULE != minifloat::Rule::Finite,
    }
}

fn int_info(name: &'static str, bits: u32, max: f64) -> FormatInfo {
    FormatInfo {
        name,
        bits,
        max,
        min_normal: 1.0,
        min_subnormal: 1.0,
        eps: 1.0,
        has_inf: false,
        has_nan: false,
    }
}

/// The numbers of every dtype (for bool: max 1, bits 8).
pub fn info(d: DType) -> FormatInfo {
    let name = d.name();
    match d {
        DType::F64 => FormatInfo {
            name,
            bits: 64,
            max: f64::MAX,
            min_normal: f64::MIN_POSITIVE,
            min_subnormal: f64::from_bits(1),
            eps: f64::EPSILON,
            has_inf: true,
            has_nan: true,
        },
        DType::F32 => FormatInfo {
            name,
            bits: 32,
            max: f32::MAX as f64,
            min_normal: f32::MIN_POSITIVE as f64,
            min_subnormal: f32::from_bits(1) as f64,
            eps: f32::EPSILON as f64,
            has_inf: true,
            has_nan: true,
        },
        DType::F16 => float_info::<F16>(name, 65504.0),
        DType::BF16 => float_info::<BF16>(name, f32::from_bits(0x7f7f_0000) as f64),
        DType::Fp8E4M3 => float_info::<E4M3>(name, minifloat::decode::<E4M3>(E4M3::MAX_CODE) as f64),
        DType::Fp8E5M2 => float_info::<E5M2>(name, minifloat::decode::<E5M2>(E5M2::MAX_CODE) as f64),
        DType::Fp6E3M2 => float_info::<E3M2>(name, minifloat::decode::<E3M2>(E3M2::MAX_CODE) as f64),
        DType::Fp6E2M3 => float_info::<E2M3>(name, minifloat::decode::<E2M3>(E2M3::MAX_CODE) as f64),
        DType::Fp4E2M1 => float_info::<E2M1>(name, minifloat::decode::<E2M1>(E2M1::MAX_CODE) as f64),
        DType::Int8 => int_info(name, 8, 127.0),
        DType::Int4 => int_info(name, 4, 7.0),
        DType::UInt8 => int_info(name, 8, 255.0),
        DType::I64 => int_info(name, 64, i64::MAX as f64),
        DType::I32 => int_info(name, 32, i32::MAX as f64),
        DType::Bool => int_info(name, 8, 1.0),
    }
}
