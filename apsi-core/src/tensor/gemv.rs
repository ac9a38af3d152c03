//! Matrix-vector products: `X @ w`, `w @ X` and the `X.T @ g` of a linear
//! model's gradient, where one side of a product is a vector. A general
//! matrix-product kernel packs panels for a product that reads each matrix
//! element once; these kernels stream the matrix instead.
//!
//! Two shapes of loop, by which axis of the matrix is unit-strided:
//! - rows contiguous: one dot product per output element;
//! - columns contiguous (a transposed matrix): the output is a sum of
//!   columns scaled by the vector's elements, accumulated in fixed blocks of
//!   the inner axis whose partial sums are added in block order.
//!
//! Determinism: the order of every sum depends only on the shapes, never
//! on the thread count, so a product gives the same bits with 1 and 2
//! threads (as `use layers` training requires).

use rayon::prelude::*;
use std::ops::{Add, Mul};

/// The element types the kernels run on (f32 and f64).
pub trait Real: Copy + Default + Send + Sync + Add<Output = Self> + Mul<Output = Self> + 'static {}
impl Real for f32 {}
impl Real for f64 {}

/// A strided matrix operand: element `(i, k)` at `ptr + i * rs + k * cs`.
#[derive(Clone, Copy)]
pub struct Strided<T> {
    pub ptr: *const T,
    pub rs: isize,
    pub cs: isize,
}

// SAFETY: a `Strided` is only read through (the kernels never write via
// `ptr`), so sharing it between threads is sharing `&[T]`.
unsafe impl<T: Sync> Sync for Strided<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Send for Strided<T> {}

/// Elements of inner-axis work below which a product runs on one thread.
const PAR_WORK: usize = 1 << 16;
/// Inner-axis block of the column kernel (fixed: it decides the summation order).
const K_BLOCK: usize = 2048;

/// `dst[i] = sum_k a(i, k) * v[k * sv]` for `i < m`, `k < k_len`; `false`
/// (nothing written) when neither axis of `a` is unit-strided. `threads`
/// above 1 lets it run on rayon's pool (which `--threads` sizes).
///
/// # Safety
/// `a` must address valid elements for every `i < m`, `k < k_len`; `v`
/// every `k * sv`; `dst` must hold `m` elements and overlap neither.
pub unsafe fn gemv<T: Real>(
    m: usize,
    k_len: usize,
    a: Strided<T>,
    v: *const T,
    sv: isize,
    dst: *mut T,
    threads: usize,
) -> bool {
    if a.cs != 1 && a.rs != 1 {
        return false;
    }
    // SAFETY: the caller guarantees v addresses k_len elements at stride sv.
    let vec: Vec<T> = (0..k_len).map(|k| unsafe { *v.offset(k as isize * sv) }).collect();
    // SAFETY: dst holds m elements (caller).
    let out = unsafe { std::slice::from_raw_parts_mut(dst, m) };
    let parallel = threads > 1 && m.saturating_mul(k_len) >= PAR_WORK;
    if a.cs == 1 {
        let a = &a;
        let row = |i: usize| -> &[T] {
            // SAFETY: row i holds k_len unit-strided elements (caller).
            unsafe { std::slice::from_raw_parts(a.ptr.offset(i as isize * a.rs), k_len) }
        };
        // Rows in chunks, each chunk one call into the vector-unit kernel
        // (dispatching per row cost as much as a 32-element dot itself).
        let chunk = ROW_CHUNK;
        let body = |(c, o): (usize, &mut [T])| dot_rows(o, c * chunk, &vec, &row);
        if parallel {
            out.par_chunks_mut(chunk).enumerate().for_each(body);
        } else {
            out.chunks_mut(chunk).enumerate().for_each(body);
        }
    } else {
        let a = &a;
        let col = |k: usize| -> &[T] {
            // SAFETY: column k holds m unit-strided elements (caller).
            unsafe { std::slice::from_raw_parts(a.ptr.offset(k as isize * a.cs), m) }
        };
        let block = |b: usize| -> Vec<T> {
            let mut acc = vec![T::default(); m];
            let end = ((b + 1) * K_BLOCK).min(k_len);
            axpy_block(&mut acc, &vec, b * K_BLOCK, end, &col);
            acc
        };
        let blocks = k_len.div_ceil(K_BLOCK);
        let partials: Vec<Vec<T>> = if parallel && blocks > 1 {
            (0..blocks).into_par_iter().map(block).collect()
        } else {
            (0..blocks).map(block).collect()
        };
        out.fill(T::default());
        for p in &partials {
            for (o, &x) in out.iter_mut().zip(p) {
                *o = *o + x;
            }
        }
    }
    true
}

/// Rows of the row kernel per task and per call into the vector unit.
const ROW_CHUNK: usize = 256;

/// `out[r] = dot(row(first + r), vec)` for every r.
fn dot_rows<'a, T: Real>(out: &mut [T], first: usize, vec: &[T], row: &(impl Fn(usize) -> &'a [T] + Sync)) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { dot_rows_avx512(out, first, vec, row) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { dot_rows_avx2(out, first, vec, row) };
        }
    }
    dot_rows_plain(out, first, vec, row)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx2")]
unsafe fn dot_rows_avx512<'a, T: Real>(
    out: &mut [T],
    first: usize,
    vec: &[T],
    row: &(impl Fn(usize) -> &'a [T] + Sync),
) {
    dot_rows_plain(out, first, vec, row)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_rows_avx2<'a, T: Real>(out: &mut [T], first: usize, vec: &[T], row: &(impl Fn(usize) -> &'a [T] + Sync)) {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>() && vec.len().is_multiple_of(8) {
        // SAFETY: T is f64 (checked above), so these are the same slices
        // under their own type; the CPU has AVX2 (the caller's contract).
        let out64 = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut f64, out.len()) };
        let vec64 = unsafe { std::slice::from_raw_parts(vec.as_ptr() as *const f64, vec.len()) };
        let row64 = |i: usize| -> *const f64 { row(i).as_ptr() as *const f64 };
        let done = unsafe { dot_rows4_f64_avx2(out64, first, vec64, &row64) };
        return dot_rows_plain(&mut out[done..], first + done, vec, row);
    }
    dot_rows_plain(out, first, vec, row)
}

/// Four f64 rows at a time (their lanes in eight registers, the vector's
/// chunk loaded once for all four), each summed in exactly `dot`'s order
/// (eight lanes, then `(s[0] + s[2]) + (s[1] + s[3])` of the lanes folded in
/// half), so the bits are those of the plain kernel. For `k % 8 == 0`;
/// returns how many leading outputs it wrote (a multiple of four).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_rows4_f64_avx2(out: &mut [f64], first: usize, vec: &[f64], row: &impl Fn(usize) -> *const f64) -> usize {
    use std::arch::x86_64::*;
    let k = vec.len();
    let v = vec.as_ptr();
    let n = out.len() / 4 * 4;
    let mut r = 0;
    while r < n {
        let p = [
            row(first + r),
            row(first + r + 1),
            row(first + r + 2),
            row(first + r + 3),
        ];
        let z = _mm256_setzero_pd();
        let (mut l0, mut h0, mut l1, mut h1, mut l2, mut h2, mut l3, mut h3) = (z, z, z, z, z, z, z, z);
        let mut c = 0;
        // SAFETY: every row holds k elements and c + 8 <= k.
        unsafe {
            while c < k {
                let vl = _mm256_loadu_pd(v.add(c));
                let vh = _mm256_loadu_pd(v.add(c + 4));
                l0 = _mm256_add_pd(l0, _mm256_mul_pd(_mm256_loadu_pd(p[0].add(c)), vl));
                h0 = _mm256_add_pd(h0, _mm256_mul_pd(_mm256_loadu_pd(p[0].add(c + 4)), vh));
                l1 = _mm256_add_pd(l1, _mm256_mul_pd(_mm256_loadu_pd(p[1].add(c)), vl));
                h1 = _mm256_add_pd(h1, _mm256_mul_pd(_mm256_loadu_pd(p[1].add(c + 4)), vh));
                l2 = _mm256_add_pd(l2, _mm256_mul_pd(_mm256_loadu_pd(p[2].add(c)), vl));
                h2 = _mm256_add_pd(h2, _mm256_mul_pd(_mm256_loadu_pd(p[2].add(c + 4)), vh));
                l3 = _mm256_add_pd(l3, _mm256_mul_pd(_mm256_loadu_pd(p[3].add(c)), vl));
                h3 = _mm256_add_pd(h3, _mm256_mul_pd(_mm256_loadu_pd(p[3].add(c + 4)), vh));
                c += 8;
            }
        }
        // s[i] = lane i + lane i + 4, per row.
        let (s0, s1, s2, s3) = (
            _mm256_add_pd(l0, h0),
            _mm256_add_pd(l1, h1),
            _mm256_add_pd(l2, h2),
            _mm256_add_pd(l3, h3),
        );
        // [s0[0] + s0[2], s0[1] + s0[3], s1[0] + s1[2], s1[1] + s1[3]], and rows 2, 3.
        let u01 = _mm256_add_pd(
            _mm256_permute2f128_pd(s0, s1, 0x20),
            _mm256_permute2f128_pd(s0, s1, 0x31),
        );
        let u23 = _mm256_add_pd(
            _mm256_permute2f128_pd(s2, s3, 0x20),
            _mm256_permute2f128_pd(s2, s3, 0x31),
        );
        // [row 0, row 2, row 1, row 3], then in order.
        let sums = _mm256_permute4x64_pd(_mm256_hadd_pd(u01, u23), 0b11_01_10_00);
        // SAFETY: r + 4 <= out.len().
        unsafe { _mm256_storeu_pd(out.as_mut_ptr().add(r), sums) };
        r += 4;
    }
    n
}

#[inline(always)]
fn dot_rows_plain<'a, T: Real>(out: &mut [T], first: usize, vec: &[T], row: &(impl Fn(usize) -> &'a [T] + Sync)) {
    for (r, o) in out.iter_mut().enumerate() {
        *o = dot(row(first + r), vec);
    }
}

/// Outputs a tile of the column kernel keeps in registers.
const TILE: usize = 32;
/// Bytes of matrix a sub-block of the column kernel reads (it stays in L2
/// while each tile of outputs passes over it).
const SUB_BYTES: usize = 256 << 10;

/// `acc[j] += sum_{k in start..end} vec[k] * col(k)[j]`, in increasing k for
/// every j (the order the determinism promise fixes). Outputs go in tiles
/// of 32 held in registers, over sub-blocks of k that stay in cache: with
/// the accumulators in memory, each element cost a load and a store of its
/// accumulator besides its own load (X.T @ g took 1.45x OpenBLAS's time).
fn axpy_block<'a, T: Real>(
    acc: &mut [T],
    vec: &[T],
    start: usize,
    end: usize,
    col: &(impl Fn(usize) -> &'a [T] + Sync),
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { axpy_block_avx512(acc, vec, start, end, col) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { axpy_block_avx2(acc, vec, start, end, col) };
        }
    }
    axpy_block_plain(acc, vec, start, end, col)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx2")]
unsafe fn axpy_block_avx512<'a, T: Real>(
    acc: &mut [T],
    vec: &[T],
    start: usize,
    end: usize,
    col: &(impl Fn(usize) -> &'a [T] + Sync),
) {
    axpy_block_plain(acc, vec, start, end, col)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn axpy_block_avx2<'a, T: Real>(
    acc: &mut [T],
    vec: &[T],
    start: usize,
    end: usize,
    col: &(impl Fn(usize) -> &'a [T] + Sync),
) {
    axpy_block_plain(acc, vec, start, end, col)
}

#[inline(always)]
fn axpy_block_plain<'a, T: Real>(
    acc: &mut [T],
    vec: &[T],
    start: usize,
    end: usize,
    col: &(impl Fn(usize) -> &'a [T] + Sync),
) {
    let m = acc.len();
    let sub = (SUB_BYTES / (m.max(1) * std::mem::size_of::<T>())).max(1);
    let mut k0 = start;
    while k0 < end {
        let k1 = (k0 + sub).min(end);
        let ks = vec.get(k0..k1).unwrap_or(&[]);
        let mut j0 = 0;
        while j0 + TILE <= m {
            let mut t = [T::default(); TILE];
            t.copy_from_slice(&acc[j0..j0 + TILE]);
            for (k, &s) in (k0..k1).zip(ks) {
                if let Some(c) = col(k).get(j0..j0 + TILE) {
                    for j in 0..TILE {
                        t[j] = t[j] + s * c[j];
                    }
                }
            }
            acc[j0..j0 + TILE].copy_from_slice(&t);
            j0 += TILE;
        }
        if j0 < m {
            let rest = &mut acc[j0..];
            for (k, &s) in (k0..k1).zip(ks) {
                for (o, &x) in rest.iter_mut().zip(&col(k)[j0..]) {
                    *o = *o + s * x;
                }
            }
        }
        k0 = k1;
    }
}

/// A dot product in eight independent lanes (so it vectorises), added
/// pairwise at the end: the same order on every machine and thread count.
#[inline(always)]
fn dot<T: Real>(a: &[T], b: &[T]) -> T {
    let mut acc = [T::default(); 8];
    let n = a.len().min(b.len());
    let (ac, at) = a[..n].split_at(n / 8 * 8);
    let (bc, bt) = b[..n].split_at(n / 8 * 8);
    for (x, y) in ac.chunks_exact(8).zip(bc.chunks_exact(8)) {
        for j in 0..8 {
            acc[j] = acc[j] + x[j] * y[j];
        }
    }
    for (j, (&x, &y)) in at.iter().zip(bt).enumerate() {
        acc[j] = acc[j] + x * y;
    }
    let s4 = [acc[0] + acc[4], acc[1] + acc[5], acc[2] + acc[6], acc[3] + acc[7]];
    (s4[0] + s4[2]) + (s4[1] + s4[3])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(m: usize, k: usize, a: &[f64], (rs, cs): (usize, usize), v: &[f64]) -> Vec<f64> {
        (0..m)
            .map(|i| (0..k).map(|j| a[i * rs + j * cs] * v[j]).sum())
            .collect()
    }

    #[test]
    fn both_loop_shapes_match_a_plain_sum() {
        for &(m, k) in &[(1, 1), (3, 5), (17, 9), (64, 3000), (5000, 33)] {
            let a: Vec<f64> = (0..m * k).map(|i| ((i * 7919) % 101) as f64 / 13.0 - 3.0).collect();
            let v: Vec<f64> = (0..k).map(|i| ((i * 31) % 17) as f64 / 7.0 - 1.0).collect();
            for (rs, cs) in [(k, 1), (1, m)] {
                let want = reference(m, k, &a, (rs, cs), &v);
                for threads in [1, 2] {
                    let mut got = vec![0.0; m];
                    let s = Strided {
                        ptr: a.as_ptr(),
                        rs: rs as isize,
                        cs: cs as isize,
                    };
                    // SAFETY: a holds m*k elements addressed by (rs, cs); v holds k.
                    let ok = unsafe { gemv(m, k, s, v.as_ptr(), 1, got.as_mut_ptr(), threads) };
                    assert!(ok);
                    for (g, w) in got.iter().zip(&want) {
                        assert!(
                            (g - w).abs() <= 1e-9 * (1.0 + w.abs()),
                            "{m}x{k} ({rs},{cs}): {g} vs {w}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        let (m, k) = (40, 20000);
        let a: Vec<f64> = (0..m * k).map(|i| (i as f64 * 0.37).sin()).collect();
        let v: Vec<f64> = (0..k).map(|i| (i as f64 * 0.11).cos()).collect();
        for (rs, cs) in [(k as isize, 1), (1, m as isize)] {
            let run = |threads| {
                let mut got = vec![0.0; m];
                let s = Strided {
                    ptr: a.as_ptr(),
                    rs,
                    cs,
                };
                // SAFETY: as above.
                unsafe { gemv(m, k, s, v.as_ptr(), 1, got.as_mut_ptr(), threads) };
                got.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            };
            assert_eq!(run(1), run(2));
        }
    }

    #[test]
    fn rows_of_f64_give_the_bits_of_the_plain_dot() {
        // Row counts around the four-row kernel's step, widths that take it
        // (multiples of eight) and that leave it to the plain loop.
        for &(m, k) in &[(1, 8), (3, 16), (4, 32), (7, 32), (101, 40), (9, 12), (258, 64)] {
            let a: Vec<f64> = (0..m * k)
                .map(|i| (i as f64 * 0.731).sin() * 1e3_f64.powi((i % 7) as i32 - 3))
                .collect();
            let v: Vec<f64> = (0..k).map(|i| (i as f64 * 0.29).cos()).collect();
            let mut got = vec![0.0; m];
            let s = Strided {
                ptr: a.as_ptr(),
                rs: k as isize,
                cs: 1,
            };
            // SAFETY: a holds m*k elements addressed by (k, 1); v holds k.
            assert!(unsafe { gemv(m, k, s, v.as_ptr(), 1, got.as_mut_ptr(), 1) });
            for (i, g) in got.iter().enumerate() {
                let want = dot(&a[i * k..(i + 1) * k], &v);
                assert_eq!(g.to_bits(), want.to_bits(), "{m}x{k} row {i}");
            }
        }
    }

    #[test]
    fn a_matrix_with_no_unit_stride_is_left_to_the_general_kernel() {
        let a = [0.0f64; 16];
        let v = [1.0f64; 2];
        let mut d = [0.0f64; 2];
        let s = Strided {
            ptr: a.as_ptr(),
            rs: 4,
            cs: 2,
        };
        // SAFETY: the call refuses before touching memory.
        assert!(!unsafe { gemv(2, 2, s, v.as_ptr(), 1, d.as_mut_ptr(), 1) });
    }
}
