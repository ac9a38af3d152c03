//! AVX-512 kernels for the bulk codecs (x86_64 only), used when
//! [`available`] says the CPU has AVX-512 F, BW and VL. Each kernel works on
//! whole vectors, finishes the tail with scalar code, and writes every
//! element of its output slice (the callers hand it uninitialised memory).
//!
//! - [`decode4`]: 4-bit codes to f32 with a 16-entry table held in one
//!   register (`vpermps`): a nibble is an index.
//! - [`decode8`]: 8-bit codes to f32 with a 256-entry table in sixteen
//!   registers: eight two-register permutes (`vpermi2ps`) and a tree of
//!   blends on bits 5, 6 and 7 of the code.
//! - [`encode_int`]: f32 to int8/uint8 (low 8 bits) or int4 (low 4 bits,
//!   packed) by truncating conversion (`vcvttps2dq`), with the codec's rule
//!   that NaN, ±inf and magnitudes of 2^22 or more give 0.
//! - [`pack4`]: 4-bit codes (one per byte) packed two per byte.

use std::arch::x86_64::*;
use std::mem::MaybeUninit;

/// Whether the CPU runs these kernels (std caches the detection).
pub fn available() -> bool {
    std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512vl")
}

/// The table entry for code `c`, for a byte that may be past the input (0 then).
#[inline(always)]
fn entry<const K: usize>(t: &[f32; K], c: Option<&u8>, shift: u8) -> f32 {
    let i = c.map_or(0, |&b| ((b >> shift) as usize) & (K - 1));
    t.get(i).copied().unwrap_or(0.0)
}

/// Decodes 4-bit codes: `out[2i]` from the low nibble of `bytes[i]`,
/// `out[2i + 1]` from its high nibble; codes past `bytes` decode as code 0.
///
/// # Safety
/// The CPU must have AVX-512 F, BW and VL ([`available`]).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
pub unsafe fn decode4(t: &[f32; 16], bytes: &[u8], out: &mut [MaybeUninit<f32>]) {
    let tv = _mm512_loadu_ps(t.as_ptr());
    let nb = bytes.len().min(out.len() / 2) / 16 * 16;
    let m = _mm_set1_epi8(0xf);
    let mut i = 0;
    while i < nb {
        // SAFETY: i + 16 <= nb <= bytes.len() and 2 * i + 32 <= 2 * nb <= out.len().
        let b = _mm_loadu_si128(bytes.as_ptr().add(i) as *const __m128i);
        let lo = _mm_and_si128(b, m);
        let hi = _mm_and_si128(_mm_srli_epi16::<4>(b), m);
        let o = out.as_mut_ptr().add(2 * i) as *mut f32;
        _mm512_storeu_ps(
            o,
            _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi)), tv),
        );
        _mm512_storeu_ps(
            o.add(16),
            _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm_unpackhi_epi8(lo, hi)), tv),
        );
        i += 16;
    }
    for (k, o) in out.iter_mut().enumerate().skip(2 * nb) {
        o.write(entry(t, bytes.get(k / 2), if k % 2 == 0 { 0 } else { 4 }));
    }
}

/// Decodes 8-bit codes through a 256-entry table; codes past `bytes` decode as code 0.
///
/// # Safety
/// The CPU must have AVX-512 F, BW and VL ([`available`]).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
pub unsafe fn decode8(t: &[f32; 256], bytes: &[u8], out: &mut [MaybeUninit<f32>]) {
    let mut tv = [_mm512_setzero_ps(); 16];
    for (k, v) in tv.iter_mut().enumerate() {
        // SAFETY: 16 * k + 16 <= 256.
        *v = _mm512_loadu_ps(t.as_ptr().add(16 * k));
    }
    let n = bytes.len().min(out.len()) / 16 * 16;
    let (b5, b6, b7) = (_mm512_set1_epi32(32), _mm512_set1_epi32(64), _mm512_set1_epi32(128));
    let mut i = 0;
    while i < n {
        // SAFETY: i + 16 <= n <= bytes.len(), out.len().
        let idx = _mm512_cvtepu8_epi32(_mm_loadu_si128(bytes.as_ptr().add(i) as *const __m128i));
        let m5 = _mm512_test_epi32_mask(idx, b5);
        let m6 = _mm512_test_epi32_mask(idx, b6);
        let m7 = _mm512_test_epi32_mask(idx, b7);
        let mut p = [_mm512_setzero_ps(); 8];
        for (k, v) in p.iter_mut().enumerate() {
            *v = _mm512_permutex2var_ps(tv[2 * k], idx, tv[2 * k + 1]);
        }
        let q0 = _mm512_mask_blend_ps(m5, p[0], p[1]);
        let q1 = _mm512_mask_blend_ps(m5, p[2], p[3]);
        let q2 = _mm512_mask_blend_ps(m5, p[4], p[5]);
        let q3 = _mm512_mask_blend_ps(m5, p[6], p[7]);
        let r0 = _mm512_mask_blend_ps(m6, q0, q1);
        let r1 = _mm512_mask_blend_ps(m6, q2, q3);
        _mm512_storeu_ps(out.as_mut_ptr().add(i) as *mut f32, _mm512_mask_blend_ps(m7, r0, r1));
        i += 16;
    }
    for (k, o) in out.iter_mut().enumerate().skip(n) {
        o.write(entry(t, bytes.get(k), 0));
    }
}

/// Truncated integers of 16 f32 lanes, 0 where |x| >= 2^22 or x is NaN.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn trunc16(p: *const f32) -> __m512i {
    let x = _mm512_loadu_ps(p);
    let a = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fff_ffff)));
    let ok = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, _mm512_set1_ps(4_194_304.0));
    _mm512_maskz_mov_epi32(ok, _mm512_cvttps_epi32(x))
}

/// Encodes f32 into int8/uint8 codes (`bits` 8: one per byte) or int4 codes
/// (`bits` 4: two per byte, a last odd code in a low nibble), as
/// [`super::int8_f32`] and [`super::int4_f32`] do one value.
/// `out.len()` must be `pack::byte_len(src.len(), bits)`.
///
/// # Safety
/// The CPU must have AVX-512 F, BW and VL ([`available`]).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
pub unsafe fn encode_int(src: &[f32], bits: u8, out: &mut [MaybeUninit<u8>]) {
    if bits == 8 {
        let n = src.len().min(out.len()) / 16 * 16;
        let mut i = 0;
        while i < n {
            // SAFETY: i + 16 <= n <= src.len(), out.len().
            let v = trunc16(src.as_ptr().add(i));
            _mm_storeu_si128(out.as_mut_ptr().add(i) as *mut __m128i, _mm512_cvtepi32_epi8(v));
            i += 16;
        }
        for (o, &x) in out.iter_mut().zip(src).skip(n) {
            o.write(super::int8_f32(x));
        }
        return;
    }
    // 4 bits: 32 values into 16 bytes per step.
    let steps = (src.len() / 32).min(out.len() / 16);
    for s in 0..steps {
        // SAFETY: 32 * s + 32 <= src.len() and 16 * s + 16 <= out.len().
        let lo = _mm512_cvtepi32_epi8(trunc16(src.as_ptr().add(32 * s)));
        let hi = _mm512_cvtepi32_epi8(trunc16(src.as_ptr().add(32 * s + 16)));
        let codes = _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(lo), hi);
        _mm_storeu_si128(out.as_mut_ptr().add(16 * s) as *mut __m128i, nibbles(codes));
    }
    for (k, o) in out.iter_mut().enumerate().skip(16 * steps) {
        let c = |i: usize| src.get(i).map_or(0, |&x| super::int4_f32(x));
        o.write(c(2 * k) | c(2 * k + 1) << 4);
    }
}

/// 32 codes (one per byte) → 16 bytes, code 2i in the low nibble of byte i.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn nibbles(codes: __m256i) -> __m128i {
    let lo = _mm256_and_si256(codes, _mm256_set1_epi16(0x0f));
    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(codes), _mm256_set1_epi16(0xf0));
    _mm256_cvtepi16_epi8(_mm256_or_si256(lo, hi))
}

/// Packs 4-bit codes (one per byte, upper bits ignored) two per byte into
/// `out` (`out.len() == codes.len().div_ceil(2)`; a last odd code goes in a low nibble).
///
/// # Safety
/// The CPU must have AVX-512 F, BW and VL ([`available`]).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
pub unsafe fn pack4(codes: &[u8], out: &mut [MaybeUninit<u8>]) {
    let steps = (codes.len() / 32).min(out.len() / 16);
    for s in 0..steps {
        // SAFETY: 32 * s + 32 <= codes.len() and 16 * s + 16 <= out.len().
        let c = _mm256_loadu_si256(codes.as_ptr().add(32 * s) as *const __m256i);
        _mm_storeu_si128(out.as_mut_ptr().add(16 * s) as *mut __m128i, nibbles(c));
    }
    for (k, o) in out.iter_mut().enumerate().skip(16 * steps) {
        let c = |i: usize| codes.get(i).map_or(0, |&b| b & 0xf);
        o.write(c(2 * k) | c(2 * k + 1) << 4);
    }
}

/// Copies `len` bytes from `src` to `dst` (not overlapping), the 64-byte
/// aligned middle with non-temporal stores (past the caches: a large output
/// is not read back before the copy is done). Call [`fence`] before another
/// thread may read `dst`.
///
/// # Safety
/// The CPU must have AVX-512 F; `src` must be readable and `dst` writable for
/// `len` bytes, and the two must not overlap.
#[target_feature(enable = "avx512f")]
pub unsafe fn stream_copy(dst: *mut u8, src: *const u8, len: usize) {
    let head = ((64 - dst as usize % 64) % 64).min(len);
    std::ptr::copy_nonoverlapping(src, dst, head);
    let mut i = head;
    while i + 64 <= len {
        // SAFETY: i + 64 <= len; dst + i is 64-byte aligned.
        let v = _mm512_loadu_si512(src.add(i) as *const _);
        _mm512_stream_si512(dst.add(i) as *mut _, v);
        i += 64;
    }
    std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), len - i);
}

/// Orders the non-temporal stores of [`stream_copy`] before later stores.
pub fn fence() {
    // SAFETY: sfence is part of SSE, which every x86_64 CPU has.
    unsafe { _mm_sfence() }
}

/// Decodes int8 (`signed`) or uint8 codes to f32 by widening and
/// converting (`vpmovsxbd`/`vpmovzxbd`, `vcvtdq2ps`); codes past `bytes` give 0.
///
/// # Safety
/// The CPU must have AVX-512 F, BW and VL ([`available`]).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
pub unsafe fn decode_int8(signed: bool, bytes: &[u8], out: &mut [MaybeUninit<f32>]) {
    let n = bytes.len().min(out.len()) / 16 * 16;
    let mut i = 0;
    while i < n {
        // SAFETY: i + 16 <= n <= bytes.len(), out.len().
        let b = _mm_loadu_si128(bytes.as_ptr().add(i) as *const __m128i);
        let w = if signed {
            _mm512_cvtepi8_epi32(b)
        } else {
            _mm512_cvtepu8_epi32(b)
        };
        _mm512_storeu_ps(out.as_mut_ptr().add(i) as *mut f32, _mm512_cvtepi32_ps(w));
        i += 16;
    }
    for (k, o) in out.iter_mut().enumerate().skip(n) {
        let b = bytes.get(k).copied().unwrap_or(0);
        o.write(if signed { b as i8 as f32 } else { b as f32 });
    }
}
