//! Slice codecs: f32/f64 slices into real-size code buffers and back.
//!
//! Outputs are allocated uninitialised and written once (no zeroing pass).
//! Each encode loop is a plain map over a block of values (the scalar codecs
//! are branch-free selects), compiled three times: for the baseline target
//! and, picked at run time, with AVX2 or with AVX-512 enabled, so LLVM
//! vectorizes it 8 or 16 lanes wide. With AVX-512 the integer formats and
//! the table decoding of the ≤ 8-bit formats use the kernels of [`simd`];
//! elsewhere decoding reads a 256-entry table per format.
//! Slices of `PAR_MIN` elements or more are split into chunks for rayon.

use super::minifloat::{self, E2M1, E2M3, E3M2, E4M3, E5M2, F16};
use super::pack::{byte_len, get, pack};
#[cfg(target_arch = "x86_64")]
use super::simd;
use crate::tensor::core::par_split;
use crate::tensor::dtype::DType;
use crate::tensor::storage::{Buffer, Elems};
use half::{bf16, f16};
use rayon::prelude::*;
use std::mem::MaybeUninit;
use std::sync::OnceLock;

/// Elements per block (a multiple of 32, so every packing starts on a byte).
const BLOCK: usize = 2048;
/// Elements per rayon task (a multiple of 4).
const CHUNK: usize = 1 << 16;

/// Which vector code this CPU runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Base,
    Avx2,
    Avx512,
}

fn level() -> Level {
    static L: OnceLock<Level> = OnceLock::new();
    *L.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            let avx2 = std::is_x86_feature_detected!("avx2")
                && std::is_x86_feature_detected!("fma")
                && std::is_x86_feature_detected!("f16c");
            if avx2 && simd::available() && std::is_x86_feature_detected!("avx512dq") {
                return Level::Avx512;
            }
            if avx2 {
                return Level::Avx2;
            }
        }
        Level::Base
    })
}

/// Outputs of at least this many bytes are written with non-temporal stores
/// (measured on a Zen 4 for 40 MB outputs: bf16 → f32 about 1.4× faster).
const STREAM_MIN: usize = 16 << 20;
/// Elements per block when streaming (8 KiB of f32, in L1).
const SBLOCK: usize = 2048;

/// A vector of `n` elements, written in chunks of `per` by `fill(first, chunk)`
/// (`first`: the index of the chunk's first element), on rayon when `par`.
/// Every `fill` writes each element of its chunk. With `stream` (an output
/// that may be split anywhere) large outputs are filled block by block
/// through L1 and copied out with non-temporal stores.
fn build<U: Copy + Send>(
    n: usize,
    per: usize,
    par: bool,
    stream: bool,
    fill: impl Fn(usize, &mut [MaybeUninit<U>]) + Sync,
) -> Vec<U> {
    let mut v: Vec<U> = Vec::with_capacity(n);
    let spare = &mut v.spare_capacity_mut()[..n];
    let bytes = n.saturating_mul(std::mem::size_of::<U>());
    if bytes >= STREAM_MIN {
        huge_pages(spare.as_mut_ptr() as usize, bytes);
    }
    let stream = stream && level() == Level::Avx512 && bytes >= STREAM_MIN;
    let run = |first: usize, c: &mut [MaybeUninit<U>]| {
        if stream {
            streamed(first, c, &fill)
        } else {
            fill(first, c)
        }
    };
    if par && per > 0 {
        crate::par::kernel_pool::ready();
        spare.par_chunks_mut(per).enumerate().for_each(|(k, c)| run(k * per, c));
    } else {
        run(0, spare);
    }
    // SAFETY: the chunks cover 0..n and each fill wrote every element of its chunk.
    unsafe { v.set_len(n) };
    v
}

/// Asks Linux to back the whole 2 MiB pages of a large output with huge
/// pages (fewer page faults and TLB misses; NumPy does the same for its
/// arrays). Advice only: the memory's contents do not change.
fn huge_pages(addr: usize, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = addr.div_ceil(HUGE) * HUGE;
        let end = addr.saturating_add(len) / HUGE * HUGE;
        if end > start {
            // SAFETY: [start, end) lies inside the caller's allocation, and
            // MADV_HUGEPAGE neither frees nor changes memory.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (addr, len);
}

/// `fill` block by block into an L1 buffer, each block streamed into `out`.
fn streamed<U: Copy>(first: usize, out: &mut [MaybeUninit<U>], fill: &impl Fn(usize, &mut [MaybeUninit<U>])) {
    #[cfg(target_arch = "x86_64")]
    {
        let mut buf = [const { MaybeUninit::<U>::uninit() }; SBLOCK];
        for (b, o) in out.chunks_mut(SBLOCK).enumerate() {
            let tmp = &mut buf[..o.len()];
            fill(first + b * SBLOCK, tmp);
            // SAFETY: `build` streams only on AVX-512 CPUs; `tmp` (all written
            // by fill) and `o` have the same length and do not overlap.
            unsafe {
                simd::stream_copy(
                    o.as_mut_ptr() as *mut u8,
                    tmp.as_ptr() as *const u8,
                    std::mem::size_of_val(tmp),
                )
            };
        }
        simd::fence();
    }
    #[cfg(not(target_arch = "x86_64"))]
    fill(first, out);
}

#[inline(always)]
fn encode_seq<T: Copy, F: Fn(T) -> u8>(src: &[T], bits: u8, out: &mut [MaybeUninit<u8>], f: &F, wide: bool) {
    if bits == 8 {
        for (o, &x) in out.iter_mut().zip(src) {
            o.write(f(x));
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
        #[cfg(target_arch = "x86_64")]
        if wide && bits == 4 {
            // SAFETY: `wide` is only set by encode_avx512, which runs on AVX-512 CPUs.
            unsafe { simd::pack4(c, o) };
            continue;
        }
        let _ = wide;
        pack(c, bits, o);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn encode_avx2<T: Copy, F: Fn(T) -> u8>(src: &[T], bits: u8, out: &mut [MaybeUninit<u8>], f: &F) {
    encode_seq(src, bits, out, f, false)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
unsafe fn encode_avx512<T: Copy, F: Fn(T) -> u8>(src: &[T], bits: u8, out: &mut [MaybeUninit<u8>], f: &F) {
    encode_seq(src, bits, out, f, true)
}

/// Encodes `src` into `out` (`byte_len(src.len(), bits)` bytes, all written).
fn encode_run<T: Copy, F: Fn(T) -> u8>(src: &[T], bits: u8, out: &mut [MaybeUninit<u8>], f: &F) {
    match level() {
        // SAFETY: the CPU has the features the functions are compiled for.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { encode_avx512(src, bits, out, f) },
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { encode_avx2(src, bits, out, f) },
        _ => encode_seq(src, bits, out, f, false),
    }
}

/// Codes of `src` packed at `bits` bits, chunk by chunk through `kernel`
/// (which gets a run of values and exactly the bytes that hold them).
fn encode_with<T: Copy + Sync>(src: &[T], bits: u8, kernel: impl Fn(&[T], &mut [MaybeUninit<u8>]) + Sync) -> Buffer {
    let per = byte_len(CHUNK, bits);
    let total = byte_len(src.len(), bits);
    let bytes = build(total, per, par_split(src.len()), false, |first, o| {
        // Chunk k holds bytes k·per.. and values k·CHUNK.. (CHUNK is a multiple
        // of 4, so chunks start on whole bytes); the last chunk takes the rest.
        let s = src.get(first / per * CHUNK..).unwrap_or(&[]);
        let s = if first + o.len() < total {
            s.get(..CHUNK).unwrap_or(s)
        } else {
            s
        };
        kernel(s, o)
    });
    Buffer::Packed {
        bits,
        bytes,
        len: src.len(),
    }
}

fn encode_packed<T: Copy + Sync, F: Fn(T) -> u8 + Sync>(src: &[T], bits: u8, f: F) -> Buffer {
    encode_with(src, bits, |s, o| encode_run(s, bits, o, &f))
}

/// f32 into int8/uint8 (`bits` 8) or int4 (`bits` 4) codes.
fn encode_int(src: &[f32], bits: u8, f: fn(f32) -> u8) -> Buffer {
    #[cfg(target_arch = "x86_64")]
    if level() == Level::Avx512 {
        // SAFETY: the CPU has AVX-512 F/BW/VL.
        return encode_with(src, bits, |s, o| unsafe { simd::encode_int(s, bits, o) });
    }
    encode_packed(src, bits, f)
}

#[inline(always)]
fn map_seq<T: Copy, U, F: Fn(T) -> U>(src: &[T], out: &mut [MaybeUninit<U>], f: &F) {
    for (o, &x) in out.iter_mut().zip(src) {
        o.write(f(x));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn map_avx2<T: Copy, U, F: Fn(T) -> U>(src: &[T], out: &mut [MaybeUninit<U>], f: &F) {
    map_seq(src, out, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
unsafe fn map_avx512<T: Copy, U, F: Fn(T) -> U>(src: &[T], out: &mut [MaybeUninit<U>], f: &F) {
    map_seq(src, out, f)
}

fn map_run<T: Copy, U, F: Fn(T) -> U>(src: &[T], out: &mut [MaybeUninit<U>], f: &F) {
    match level() {
        // SAFETY: the CPU has the features the functions are compiled for.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { map_avx512(src, out, f) },
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { map_avx2(src, out, f) },
        _ => map_seq(src, out, f),
    }
}

/// Maps a slice elementwise into a fresh vector (vectorized, rayon when large).
pub fn map_vec<T: Copy + Sync, U: Copy + Send, F: Fn(T) -> U + Sync>(src: &[T], f: F) -> Vec<U> {
    build(src.len(), CHUNK, par_split(src.len()), true, |first, o| {
        let s = src.get(first..).unwrap_or(&[]);
        map_run(s, o, &f)
    })
}

/// Encodes f32 values into a buffer of dtype `d` (a packed format, f16 or bf16).
pub fn encode_f32(d: DType, src: &[f32]) -> Buffer {
    use super::{int4_f32, int8_f32, uint8_f32};
    match d {
        DType::F16 => Buffer::F16(Elems::Owned(map_vec(src, |x| {
            f16::from_bits(minifloat::encode_f32::<F16>(x) as u16)
        }))),
        DType::BF16 => Buffer::BF16(Elems::Owned(map_vec(src, |x| {
            bf16::from_bits(minifloat::encode_bf16_f32(x))
        }))),
        DType::Fp8E4M3 => encode_packed(src, 8, |x| minifloat::encode_f32::<E4M3>(x) as u8),
        DType::Fp8E5M2 => encode_packed(src, 8, |x| minifloat::encode_f32::<E5M2>(x) as u8),
        DType::Fp6E3M2 => encode_packed(src, 6, |x| minifloat::encode_f32::<E3M2>(x) as u8),
        DType::Fp6E2M3 => encode_packed(src, 6, |x| minifloat::encode_f32::<E2M3>(x) as u8),
        DType::Fp4E2M1 => encode_packed(src, 4, |x| minifloat::encode_f32::<E2M1>(x) as u8),
        DType::Int8 => encode_int(src, 8, int8_f32),
        DType::Int4 => encode_int(src, 4, int4_f32),
        DType::UInt8 => encode_int(src, 8, uint8_f32),
        _ => Buffer::F32(Elems::Owned(src.to_vec())),
    }
}

/// Encodes f64 values into a buffer of dtype `d`, each rounded once from the f64.
pub fn encode_f64(d: DType, src: &[f64]) -> Buffer {
    use minifloat::BF16;
    match d {
        DType::F16 => Buffer::F16(Elems::Owned(map_vec(src, |x| {
            f16::from_bits(minifloat::encode_f64::<F16>(x) as u16)
        }))),
        DType::BF16 => Buffer::BF16(Elems::Owned(map_vec(src, |x| {
            bf16::from_bits(minifloat::encode_f64::<BF16>(x) as u16)
        }))),
        DType::Fp8E4M3 => encode_packed(src, 8, |x| minifloat::encode_f64::<E4M3>(x) as u8),
        DType::Fp8E5M2 => encode_packed(src, 8, |x| minifloat::encode_f64::<E5M2>(x) as u8),
        DType::Fp6E3M2 => encode_packed(src, 6, |x| minifloat::encode_f64::<E3M2>(x) as u8),
        DType::Fp6E2M3 => encode_packed(src, 6, |x| minifloat::encode_f64::<E2M3>(x) as u8),
        DType::Fp4E2M1 => encode_packed(src, 4, |x| minifloat::encode_f64::<E2M1>(x) as u8),
        DType::Int8 | DType::Int4 | DType::UInt8 => {
            let bits = d.bits() as u8;
            encode_packed(src, bits, |x| super::encode_f64(d, x) as u8)
        }
        _ => Buffer::F64(Elems::Owned(src.to_vec())),
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

/// Decodes whole bytes (4 bits: pairs of codes; 6 bits: groups of four) into
/// `out`, every element written (codes past `bytes` read as 0).
#[inline(always)]
fn decode_seq(bytes: &[u8], bits: u8, out: &mut [MaybeUninit<f32>], t: &[f32; 256]) {
    match bits {
        4 => {
            let mut pairs = out.chunks_exact_mut(2);
            for (o, &b) in pairs.by_ref().zip(bytes) {
                o[0].write(t[(b & 0xf) as usize]);
                o[1].write(t[(b >> 4) as usize]);
            }
        }
        6 => {
            let mut quads = out.chunks_exact_mut(4);
            for (o, b) in quads.by_ref().zip(bytes.chunks_exact(3)) {
                let w = b[0] as u32 | (b[1] as u32) << 8 | (b[2] as u32) << 16;
                o[0].write(t[(w & 0x3f) as usize]);
                o[1].write(t[((w >> 6) & 0x3f) as usize]);
                o[2].write(t[((w >> 12) & 0x3f) as usize]);
                o[3].write(t[(w >> 18) as usize & 0x3f]);
            }
        }
        _ => {
            for (o, &b) in out.iter_mut().zip(bytes) {
                o.write(t[b as usize]);
            }
        }
    }
    // Whatever the loops above did not reach (a partial group, or bytes that ran out).
    let done = match bits {
        4 => (out.len() / 2).min(bytes.len()) * 2,
        6 => (out.len() / 4).min(bytes.len() / 3) * 4,
        _ => out.len().min(bytes.len()),
    };
    for (k, o) in out.iter_mut().enumerate().skip(done) {
        o.write(t[get(bytes, bits, k) as usize]);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn decode_avx2(bytes: &[u8], bits: u8, out: &mut [MaybeUninit<f32>], t: &[f32; 256]) {
    decode_seq(bytes, bits, out, t)
}

/// Decodes codes `start..start + out.len()` of a packed buffer of dtype `d` into `out`.
fn decode_range(d: DType, bytes: &[u8], bits: u8, start: usize, out: &mut [MaybeUninit<f32>], t: &[f32; 256]) {
    let group = match bits {
        4 => 2,
        6 => 4,
        _ => 1,
    };
    // Unaligned head element by element, then whole bytes/groups.
    let head = ((group - start % group) % group).min(out.len());
    let (out_head, out) = out.split_at_mut(head);
    for (k, o) in out_head.iter_mut().enumerate() {
        o.write(t[get(bytes, bits, start + k) as usize]);
    }
    let first = byte_len(start + head, bits);
    let bytes = bytes.get(first..).unwrap_or(&[]);
    match level() {
        // SAFETY: the CPU has the features the functions are compiled for.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 if bits == 4 => {
            let t16: &[f32; 16] = t.first_chunk().unwrap_or(&[0.0; 16]);
            unsafe { simd::decode4(t16, bytes, out) }
        }
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 if bits == 8 && matches!(d, DType::Int8 | DType::UInt8) => unsafe {
            simd::decode_int8(d == DType::Int8, bytes, out)
        },
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 if bits == 8 => unsafe { simd::decode8(t, bytes, out) },
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 | Level::Avx2 => unsafe { decode_avx2(bytes, bits, out, t) },
        _ => decode_seq(bytes, bits, out, t),
    }
}

/// Codes `start..start + n` of a packed buffer of dtype `d`, decoded to f32.
pub fn decode_packed(d: DType, bytes: &[u8], bits: u8, start: usize, n: usize) -> Vec<f32> {
    let t = table(d);
    build(n, CHUNK, par_split(n), true, |first, o| {
        decode_range(d, bytes, bits, start + first, o, t)
    })
}

/// f16 values to f32 (branch-free, vectorized).
pub fn decode_f16(src: &[f16]) -> Vec<f32> {
    map_vec(src, |x: f16| minifloat::decode_f16(x.to_bits()))
}

/// bf16 values to f32 (a shift).
pub fn decode_bf16(src: &[bf16]) -> Vec<f32> {
    map_vec(src, |x: bf16| f32::from_bits((x.to_bits() as u32) << 16))
}
