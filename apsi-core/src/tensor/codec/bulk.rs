//! Slice codecs: f32/f64 slices into real-size code buffers and back.
//!
//! Each loop is a plain map over a block of values (the scalar codecs are
//! branch-free selects), compiled twice: for the baseline target and, picked
//! at run time, with AVX2 enabled, so LLVM vectorizes it 8 lanes wide.
//! Slices of `PAR_MIN` elements or more are split into chunks for rayon.
//! Decoding of the ≤ 8-bit formats reads a 256-entry table per format.

use super::minifloat::{self, E2M1, E2M3, E3M2, E4M3, E5M2, F16};
use super::pack::{byte_len, get, pack};
use crate::tensor::core::PAR_MIN;
use crate::tensor::dtype::DType;
use crate::tensor::storage::Buffer;
use half::{bf16, f16};
use rayon::prelude::*;
use std::sync::OnceLock;

/// Elements per block (a multiple of 4, so every packing starts on a byte).
const BLOCK: usize = 2048;
/// Elements per rayon task.
const CHUNK: usize = 1 << 16;

#[inline(always)]
fn encode_seq<T: Copy, F: Fn(T) -> u8>(src: &[T], bits: u8, out: &mut [u8], f: &F) {
    if bits == 8 {
        for (o, &x) in out.iter_mut().zip(src) {
            *o = f(x);
        }
        return;
    }
    let mut codes = [0u8; BLOCK];
    let per = byte_len(BLOCK, bits);
    for (s, o) in src.chunks(BLOCK).zip(out.chunks_mut(per)) {
        let c = &mut codes[..s.len()];
        for (c, &x) in c.iter_mut().zip(s) {
            *c = f(x);
        }
        pack(c, bits, o);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn encode_avx2<T: Copy, F: Fn(T) -> u8>(src: &[T], bits: u8, out: &mut [u8], f: &F) {
    encode_seq(src, bits, out, f)
}

fn encode_run<T: Copy, F: Fn(T) -> u8>(src: &[T], bits: u8, out: &mut [u8], f: &F) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        unsafe { encode_avx2(src, bits, out, f) };
        return;
    }
    encode_seq(src, bits, out, f)
}

fn encode_packed<T: Copy + Sync, F: Fn(T) -> u8 + Sync>(src: &[T], bits: u8, f: F) -> Buffer {
    let mut out = vec![0u8; byte_len(src.len(), bits)];
    if src.len() >= PAR_MIN {
        let ob = byte_len(CHUNK, bits);
        src.par_chunks(CHUNK)
            .zip(out.par_chunks_mut(ob))
            .for_each(|(s, o)| encode_run(s, bits, o, &f));
    } else {
        encode_run(src, bits, &mut out, &f);
    }
    Buffer::Packed {
        bits,
        bytes: out,
        len: src.len(),
    }
}

#[inline(always)]
fn map_seq<T: Copy, U, F: Fn(T) -> U>(src: &[T], out: &mut [U], f: &F) {
    for (o, &x) in out.iter_mut().zip(src) {
        *o = f(x);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn map_avx2<T: Copy, U, F: Fn(T) -> U>(src: &[T], out: &mut [U], f: &F) {
    map_seq(src, out, f)
}

fn map_run<T: Copy, U, F: Fn(T) -> U>(src: &[T], out: &mut [U], f: &F) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("fma")
        && std::is_x86_feature_detected!("f16c")
    {
        // SAFETY: the CPU has the features the function is compiled for.
        unsafe { map_avx2(src, out, f) };
        return;
    }
    map_seq(src, out, f)
}

/// Maps a slice elementwise into a fresh vector (vectorized, rayon when large).
pub fn map_vec<T: Copy + Sync, U: Copy + Send + Default, F: Fn(T) -> U + Sync>(src: &[T], f: F) -> Vec<U> {
    let mut out = vec![U::default(); src.len()];
    if src.len() >= PAR_MIN {
        src.par_chunks(CHUNK)
            .zip(out.par_chunks_mut(CHUNK))
            .for_each(|(s, o)| map_run(s, o, &f));
    } else {
        map_run(src, &mut out, &f);
    }
    out
}

/// Encodes f32 values into a buffer of dtype `d` (a packed format, f16 or bf16).
pub fn encode_f32(d: DType, src: &[f32]) -> Buffer {
    use super::{int4_f32, int8_f32, uint8_f32};
    match d {
        DType::F16 => Buffer::F16(map_vec(src, |x| f16::from_bits(minifloat::encode_f32::<F16>(x) as u16))),
        DType::BF16 => Buffer::BF16(map_vec(src, |x| bf16::from_bits(minifloat::encode_bf16_f32(x)))),
        DType::Fp8E4M3 => encode_packed(src, 8, |x| minifloat::encode_f32::<E4M3>(x) as u8),
        DType::Fp8E5M2 => encode_packed(src, 8, |x| minifloat::encode_f32::<E5M2>(x) as u8),
        DType::Fp6E3M2 => encode_packed(src, 6, |x| minifloat::encode_f32::<E3M2>(x) as u8),
        DType::Fp6E2M3 => encode_packed(src, 6, |x| minifloat::encode_f32::<E2M3>(x) as u8),
        DType::Fp4E2M1 => encode_packed(src, 4, |x| minifloat::encode_f32::<E2M1>(x) as u8),
        DType::Int8 => encode_packed(src, 8, int8_f32),
        DType::Int4 => encode_packed(src, 4, int4_f32),
        DType::UInt8 => encode_packed(src, 8, uint8_f32),
        _ => Buffer::F32(src.to_vec()),
    }
}

/// Encodes f64 values into a buffer of dtype `d`, each rounded once from the f64.
pub fn encode_f64(d: DType, src: &[f64]) -> Buffer {
    use minifloat::BF16;
    match d {
        DType::F16 => Buffer::F16(map_vec(src, |x| f16::from_bits(minifloat::encode_f64::<F16>(x) as u16))),
        DType::BF16 => Buffer::BF16(map_vec(src, |x| {
            bf16::from_bits(minifloat::encode_f64::<BF16>(x) as u16)
        })),
        DType::Fp8E4M3 => encode_packed(src, 8, |x| minifloat::encode_f64::<E4M3>(x) as u8),
        DType::Fp8E5M2 => encode_packed(src, 8, |x| minifloat::encode_f64::<E5M2>(x) as u8),
        DType::Fp6E3M2 => encode_packed(src, 6, |x| minifloat::encode_f64::<E3M2>(x) as u8),
        DType::Fp6E2M3 => encode_packed(src, 6, |x| minifloat::encode_f64::<E2M3>(x) as u8),
        DType::Fp4E2M1 => encode_packed(src, 4, |x| minifloat::encode_f64::<E2M1>(x) as u8),
        DType::Int8 | DType::Int4 | DType::UInt8 => {
            let bits = d.bits() as u8;
            encode_packed(src, bits, |x| super::encode_f64(d, x) as u8)
        }
        _ => Buffer::F64(src.to_vec()),
    }
}

/// The f32 value of each 8-bit (or narrower) code of `d`.
pub fn table(d: DType) -> &'static [f32; 256] {
    static TABLES: OnceLock<Vec<[f32; 256]>> = OnceLock::new();
    let all = TABLES.get_or_init(|| {
        crate::tensor::dtype::ALL
            .iter()
            .map(|&d| {
                let mut t = [0f32; 256];
                if super::is_packed(d) {
                    let mask = ((1u32 << d.bits()) - 1) as usize;
                    for (c, v) in t.iter_mut().enumerate() {
                        *v = super::decode(d, (c & mask) as u16);
                    }
                }
                t
            })
            .collect()
    });
    let i = crate::tensor::dtype::ALL.iter().position(|x| *x == d).unwrap_or(0);
    &all[i]
}

#[inline(always)]
fn decode_seq(bytes: &[u8], bits: u8, out: &mut [f32], t: &[f32; 256]) {
    match bits {
        4 => {
            let half = out.len() / 2;
            let mut pairs = out.chunks_exact_mut(2);
            for (o, &b) in pairs.by_ref().zip(bytes) {
                o[0] = t[(b & 0xf) as usize];
                o[1] = t[(b >> 4) as usize];
            }
            if let ([o], Some(&b)) = (pairs.into_remainder(), bytes.get(half)) {
                *o = t[(b & 0xf) as usize];
            }
        }
        6 => {
            let n = out.len();
            let mut quads = out.chunks_exact_mut(4);
            for (o, b) in quads.by_ref().zip(bytes.chunks_exact(3)) {
                let w = b[0] as u32 | (b[1] as u32) << 8 | (b[2] as u32) << 16;
                o[0] = t[(w & 0x3f) as usize];
                o[1] = t[((w >> 6) & 0x3f) as usize];
                o[2] = t[((w >> 12) & 0x3f) as usize];
                o[3] = t[(w >> 18) as usize & 0x3f];
            }
            let rest = quads.into_remainder();
            let base = n - rest.len();
            for (k, o) in rest.iter_mut().enumerate() {
                *o = t[get(bytes, 6, base + k) as usize];
            }
        }
        _ => {
            for (o, &b) in out.iter_mut().zip(bytes) {
                *o = t[b as usize];
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn decode_avx2(bytes: &[u8], bits: u8, out: &mut [f32], t: &[f32; 256]) {
    decode_seq(bytes, bits, out, t)
}

/// Decodes codes `start..start + out.len()` of a packed buffer into `out`.
fn decode_range(bytes: &[u8], bits: u8, start: usize, out: &mut [f32], t: &[f32; 256]) {
    let group = match bits {
        4 => 2,
        6 => 4,
        _ => 1,
    };
    // Unaligned head element by element, then whole bytes/groups.
    let head = ((group - start % group) % group).min(out.len());
    for (k, o) in out[..head].iter_mut().enumerate() {
        *o = t[get(bytes, bits, start + k) as usize];
    }
    let first = byte_len(start + head, bits);
    let bytes = bytes.get(first..).unwrap_or(&[]);
    let out = &mut out[head..];
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        unsafe { decode_avx2(bytes, bits, out, t) };
        return;
    }
    decode_seq(bytes, bits, out, t)
}

/// Codes `start..start + n` of a packed buffer of dtype `d`, decoded to f32.
pub fn decode_packed(d: DType, bytes: &[u8], bits: u8, start: usize, n: usize) -> Vec<f32> {
    let t = table(d);
    let mut out = vec![0f32; n];
    if n >= PAR_MIN {
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(k, o)| decode_range(bytes, bits, start + k * CHUNK, o, t));
    } else {
        decode_range(bytes, bits, start, &mut out, t);
    }
    out
}

/// f16 values to f32 (branch-free, vectorized).
pub fn decode_f16(src: &[f16]) -> Vec<f32> {
    map_vec(src, |x: f16| minifloat::decode_f16(x.to_bits()))
}

/// bf16 values to f32 (a shift).
pub fn decode_bf16(src: &[bf16]) -> Vec<f32> {
    map_vec(src, |x: bf16| f32::from_bits((x.to_bits() as u32) << 16))
}
