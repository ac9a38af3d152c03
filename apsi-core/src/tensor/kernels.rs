//! Elementwise kernels with broadcasting: strided inputs, dense outputs,
//! split across threads (rayon) when large.

use super::core::{par_split, par_split_cheap, Tensor};
use super::layout::{broadcast_shapes, for_each_offset, for_each_row, Layout};
use super::storage::Scalar;
use crate::value::VResult;
use rayon::prelude::*;

/// Runs `f` inside a function compiled for the widest vector unit this CPU
/// has (AVX-512, else AVX2). The result is exactly `f()`'s (Rust never
/// contracts `a * b + c` into a fused multiply-add by itself). Best effort:
/// the loops vectorise for that unit only when LLVM inlines the closure,
/// which it does not always do; compute-bound kernels use explicit
/// `#[target_feature]` functions instead (see `fused::softmax_rows`).
#[inline(always)]
pub fn wide<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { wide_avx512(f) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { wide_avx2(f) };
        }
    }
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,bmi2")]
unsafe fn wide_avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2")]
unsafe fn wide_avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// An empty vector with room for `n` elements, for a kernel to fill. Large
/// ones (4 MiB and up) ask the kernel for transparent huge pages, as NumPy
/// does: filling them then takes a few page faults instead of one per 4 KiB.
pub fn out_vec<T>(n: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(n);
    let bytes = n.saturating_mul(std::mem::size_of::<T>());
    if bytes >= 4 << 20 {
        advise_huge(v.as_ptr() as usize, bytes);
    }
    v
}

#[cfg(target_os = "linux")]
fn advise_huge(start: usize, bytes: usize) {
    const HUGE: usize = 2 << 20;
    let lo = start.div_ceil(HUGE).saturating_mul(HUGE);
    let hi = start.saturating_add(bytes) / HUGE * HUGE;
    if hi > lo {
        // SAFETY: [lo, hi) lies inside the allocation just made; the advice
        // changes how its pages are backed, never their contents.
        unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_start: usize, _bytes: usize) {}

/// Elements per parallel task for `n` elements: a few tasks per thread, at
/// least 16K elements each.
pub fn grain(n: usize) -> usize {
    let t = crate::par::kernel_pool::threads().max(1);
    n.div_ceil(t * 4).max(1 << 14)
}

/// `f` over a dense slice, in parallel chunks when large. `f` is taken by
/// value so that what it captures (the scalar of `tensor * 2.0`) is a local
/// of the loop: captured by reference, it was reloaded for every element
/// (the stores might alias it) and the loop stayed scalar, 2.7x NumPy's time.
pub fn map_dense<T: Scalar, R: Scalar, F: Fn(T) -> R + Copy + Sync + Send>(src: &[T], f: F) -> Vec<R> {
    let n = src.len();
    let mut out: Vec<R> = out_vec(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    if par_split_cheap(n) {
        let g = grain(n);
        spare
            .par_chunks_mut(g)
            .zip(src.par_chunks(g))
            .for_each(|(o, i)| dense_map(o, i, f));
    } else {
        dense_map(spare, src, f);
    }
    // SAFETY: the zips above cover all n slots.
    unsafe { out.set_len(n) };
    out
}

/// `o[i] = f(x[i])`, compiled for the CPU's widest vector unit (an explicit
/// `#[target_feature]` function, so the loop and `f` are surely inlined).
#[inline(always)]
fn dense_map<T: Scalar, R: Scalar, F: Fn(T) -> R + Copy>(o: &mut [std::mem::MaybeUninit<R>], x: &[T], f: F) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { dense_map_avx512(o, x, f) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { dense_map_avx2(o, x, f) };
        }
    }
    dense_map_plain(o, x, f)
}

#[inline(always)]
fn dense_map_plain<T: Scalar, R: Scalar, F: Fn(T) -> R>(o: &mut [std::mem::MaybeUninit<R>], x: &[T], f: F) {
    for (o, &x) in o.iter_mut().zip(x) {
        o.write(f(x));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,bmi2")]
unsafe fn dense_map_avx512<T: Scalar, R: Scalar, F: Fn(T) -> R>(o: &mut [std::mem::MaybeUninit<R>], x: &[T], f: F) {
    dense_map_plain(o, x, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2")]
unsafe fn dense_map_avx2<T: Scalar, R: Scalar, F: Fn(T) -> R>(o: &mut [std::mem::MaybeUninit<R>], x: &[T], f: F) {
    dense_map_plain(o, x, f)
}

/// Maps every element of `t` (read as `T`) to an `R`.
pub fn map<T: Scalar, R: Scalar>(t: &Tensor, f: impl Fn(T) -> R + Sync + Send) -> Tensor {
    let shape = t.shape().to_vec();
    let out = t.with_slice::<T, _>(|s, l| map_slice(s, l, &f));
    Tensor::from_vec(out, shape)
}

pub fn map_slice<T: Scalar, R: Scalar>(s: &[T], l: &Layout, f: &(impl Fn(T) -> R + Sync + Send)) -> Vec<R> {
    let n = l.size();
    if l.is_contiguous() {
        if let Some(src) = s.get(l.offset..l.offset + n) {
            let mut out: Vec<R> = out_vec(n);
            let spare = &mut out.spare_capacity_mut()[..n];
            let body = |(o, i): (&mut [std::mem::MaybeUninit<R>], &[T])| {
                wide(|| {
                    for (o, &x) in o.iter_mut().zip(i) {
                        o.write(f(x));
                    }
                })
            };
            if par_split_cheap(n) {
                let g = grain(n);
                spare.par_chunks_mut(g).zip(src.par_chunks(g)).for_each(body);
            } else {
                body((spare, src));
            }
            // SAFETY: every one of the n slots was written above (zips of equal lengths).
            unsafe { out.set_len(n) };
            return out;
        }
    }
    let mut out = Vec::with_capacity(n);
    let nd = l.shape.len();
    if nd > 0 && l.strides[nd - 1] == 1 {
        // Unit-strided rows: map row by row (each row vectorises).
        let last = l.shape[nd - 1];
        for_each_row(&l.shape, &l.strides, l.offset, |o| {
            if let Some(r) = s.get(o..o + last) {
                wide(|| out.extend(r.iter().map(|&x| f(x))));
            }
        });
        return out;
    }
    for_each_offset(&l.shape, &l.strides, l.offset, |o| {
        if let Some(&x) = s.get(o) {
            out.push(f(x))
        }
    });
    out
}

/// Maps `t` (read as `T`) through a slice kernel `fc(src, dst)` that
/// writes every slot of `dst` from the equally long `src`: for functions
/// whose loop must see a whole run of elements to vectorise (see
/// [`super::vmath`]). Dense tensors go in parallel chunks, unit-strided
/// rows one row at a time, other layouts through a packed copy.
pub fn map_chunks<T: Scalar, R: Scalar>(
    t: &Tensor,
    fc: impl Fn(&[T], &mut [std::mem::MaybeUninit<R>]) + Sync + Send,
) -> Tensor {
    let shape = t.shape().to_vec();
    let out = t.with_slice::<T, _>(|s, l| {
        let n = l.size();
        let mut out: Vec<R> = out_vec(n);
        let spare = &mut out.spare_capacity_mut()[..n];
        let nd = l.shape.len();
        let dense = if l.is_contiguous() {
            s.get(l.offset..l.offset + n)
        } else {
            None
        };
        if let Some(src) = dense {
            if par_split(n) {
                let g = grain(n);
                spare
                    .par_chunks_mut(g)
                    .zip(src.par_chunks(g))
                    .for_each(|(o, i)| fc(i, o));
            } else {
                fc(src, spare);
            }
        } else {
            let mut written = 0usize;
            if nd > 0 && l.strides[nd - 1] == 1 && l.shape[nd - 1] > 0 {
                let last = l.shape[nd - 1];
                let mut rows = spare.chunks_mut(last);
                for_each_row(&l.shape, &l.strides, l.offset, |o| {
                    if let (Some(r), Some(d)) = (s.get(o..o + last), rows.next()) {
                        fc(r, d);
                        written += last;
                    }
                });
            }
            if written != n {
                let packed = map_slice(s, l, &|x: T| x);
                if packed.len() == n {
                    fc(&packed, spare);
                } else {
                    // A layout reaching outside its storage (never built):
                    // an empty result rather than unwritten slots.
                    return Vec::new();
                }
            }
        }
        // SAFETY: every one of the n slots was written: the dense chunks and
        // the packed copy cover [0, n) with equal-length zips, and the rows
        // path counted n elements written.
        unsafe { out.set_len(n) };
        out
    });
    Tensor::from_vec(out, shape)
}

/// Combines two tensors elementwise with NumPy broadcasting.
pub fn zip<T: Scalar, R: Scalar>(a: &Tensor, b: &Tensor, f: impl Fn(T, T) -> R + Sync + Send) -> VResult<Tensor> {
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    super::layout::checked_size(&shape)?;
    let out = a.with_slice::<T, _>(|sa, la| b.with_slice::<T, _>(|sb, lb| zip_slices(sa, la, sb, lb, &shape, &f)));
    Ok(Tensor::from_vec(out, shape))
}

fn zip_slices<T: Scalar, R: Scalar>(
    sa: &[T],
    la: &Layout,
    sb: &[T],
    lb: &Layout,
    shape: &[usize],
    f: &(impl Fn(T, T) -> R + Sync + Send),
) -> Vec<R> {
    let n: usize = shape.iter().product();
    let same = la.shape == shape && lb.shape == shape;
    if same && la.is_contiguous() && lb.is_contiguous() {
        if let (Some(x), Some(y)) = (sa.get(la.offset..la.offset + n), sb.get(lb.offset..lb.offset + n)) {
            return zip_dense(x, y, f);
        }
    }
    // One side a single element: map the other.
    if lb.size() == 1 && la.shape == shape {
        if let Some(&y) = sb.get(lb.offset) {
            if let Some(x) = la.is_contiguous().then(|| sa.get(la.offset..la.offset + n)).flatten() {
                return map_dense(x, move |p| f(p, y));
            }
            return map_slice(sa, la, &|x| f(x, y));
        }
    }
    if la.size() == 1 && lb.shape == shape {
        if let Some(&x) = sa.get(la.offset) {
            if let Some(y) = lb.is_contiguous().then(|| sb.get(lb.offset..lb.offset + n)).flatten() {
                return map_dense(y, move |q| f(x, q));
            }
            return map_slice(sb, lb, &|y| f(x, y));
        }
    }
    if n == 0 {
        return Vec::new();
    }
    let nd = shape.len();
    let sta = la.broadcast_strides(shape);
    let stb = lb.broadcast_strides(shape);
    let last = shape[nd - 1];
    let (ia, ib) = (sta[nd - 1], stb[nd - 1]);
    let outer = &shape[..nd - 1];
    let mut rows_a = Vec::new();
    for_each_offset(outer, &sta[..nd - 1], la.offset, |o| rows_a.push(o));
    let mut rows_b = Vec::new();
    for_each_offset(outer, &stb[..nd - 1], lb.offset, |o| rows_b.push(o));
    let row = |(ra, rb): (&usize, &usize), o: &mut [std::mem::MaybeUninit<R>]| {
        // Unit-strided or broadcast rows (slices of rows and columns, a
        // row vector against a matrix): whole-row loops that vectorise.
        let len = last.min(o.len());
        let o = &mut o[..len];
        match (ia, ib) {
            (1, 1) => {
                if let (Some(x), Some(y)) = (sa.get(*ra..*ra + last), sb.get(*rb..*rb + last)) {
                    return wide(|| {
                        for ((slot, &p), &q) in o.iter_mut().zip(x).zip(y) {
                            slot.write(f(p, q));
                        }
                    });
                }
            }
            (1, 0) => {
                if let (Some(x), Some(&q)) = (sa.get(*ra..*ra + last), sb.get(*rb)) {
                    return wide(|| {
                        for (slot, &p) in o.iter_mut().zip(x) {
                            slot.write(f(p, q));
                        }
                    });
                }
            }
            (0, 1) => {
                if let (Some(&p), Some(y)) = (sa.get(*ra), sb.get(*rb..*rb + last)) {
                    return wide(|| {
                        for (slot, &q) in o.iter_mut().zip(y) {
                            slot.write(f(p, q));
                        }
                    });
                }
            }
            _ => {}
        }
        let (mut pa, mut pb) = (*ra as isize, *rb as isize);
        for slot in o.iter_mut().take(last) {
            let x = sa.get(pa as usize).copied();
            let y = sb.get(pb as usize).copied();
            if let (Some(x), Some(y)) = (x, y) {
                slot.write(f(x, y));
            } else {
                slot.write(R::from_i64(0));
            }
            pa += ia;
            pb += ib;
        }
    };
    let mut out: Vec<R> = out_vec(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    if par_split_cheap(n) {
        spare
            .par_chunks_mut(last)
            .zip(rows_a.par_iter().zip(rows_b.par_iter()))
            .for_each(|(o, r)| row(r, o));
    } else {
        spare
            .chunks_mut(last)
            .zip(rows_a.iter().zip(rows_b.iter()))
            .for_each(|(o, r)| row(r, o));
    }
    // SAFETY: rows_a has one entry per row of `last` elements, so every slot was written.
    unsafe { out.set_len(n) };
    out
}

/// A chunk of output with the two input chunks it is computed from.
type ZipChunk<'a, T, R> = (&'a mut [std::mem::MaybeUninit<R>], (&'a [T], &'a [T]));

fn zip_dense<T: Scalar, R: Scalar>(x: &[T], y: &[T], f: &(impl Fn(T, T) -> R + Sync + Send)) -> Vec<R> {
    let n = x.len().min(y.len());
    let mut out: Vec<R> = out_vec(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    let body = |(o, (a, b)): ZipChunk<'_, T, R>| {
        wide(|| {
            for ((o, &p), &q) in o.iter_mut().zip(a).zip(b) {
                o.write(f(p, q));
            }
        })
    };
    if par_split_cheap(n) {
        let g = grain(n);
        spare
            .par_chunks_mut(g)
            .zip(x.par_chunks(g).zip(y.par_chunks(g)))
            .for_each(body);
    } else {
        body((spare, (x, y)));
    }
    // SAFETY: the zips above cover all n slots (x and y hold at least n elements).
    unsafe { out.set_len(n) };
    out
}

/// Elements per block of [`fill_blocks`]: a one-element operand is spread
/// over a block of this many (on the stack) so every operand is a slice.
const BLOCK: usize = 512;

/// A vector of `n` results, written block by block by `f(out, operands)`,
/// where each operand is the block's slice of a dense operand or a block of
/// copies of a one-element one: the loop `f` runs sees only slices of one
/// length, so it vectorises (reading the operands through a per-element
/// match on their kind did not: 4 ns an element). In parallel chunks from
/// `PAR_MIN_CHEAP` elements, each chunk under [`wide`].
fn fill_blocks<T: Scalar, R: Scalar, const K: usize>(
    n: usize,
    ops: [Operand<'_, T>; K],
    f: impl Fn(&mut [std::mem::MaybeUninit<R>], [&[T]; K]) + Sync,
) -> Vec<R> {
    let body = |start: usize, o: &mut [std::mem::MaybeUninit<R>]| {
        // A block of copies of each one-element operand (unused for the dense ones).
        let consts: [[T; BLOCK]; K] = std::array::from_fn(|k| match &ops[k] {
            Operand::Const(x) => [*x; BLOCK],
            Operand::Dense(_) => [T::from_f64(0.0); BLOCK],
        });
        wide(|| {
            for (b, o) in o.chunks_mut(BLOCK).enumerate() {
                let at = start + b * BLOCK;
                let len = o.len();
                let slices: [&[T]; K] = std::array::from_fn(|k| match &ops[k] {
                    Operand::Dense(s) => s.get(at..at + len).unwrap_or(&[]),
                    Operand::Const(_) => &consts[k][..len],
                });
                f(o, slices);
            }
        })
    };
    // SAFETY: `body` hands `f` every block of its chunk, and `f` writes
    // each slot of its block (every dense operand holds n elements, so no
    // slice comes back short).
    unsafe { fill_chunked(n, BLOCK, par_split_cheap(n), body) }
}

/// A vector of `n` results written chunk by chunk by `body(start, chunk)`
/// (`start`: the chunk's first index): in parallel chunks of a multiple of
/// `block` elements when `split`, else as one chunk.
///
/// # Safety
/// `body` must write every slot of the chunk it is given.
pub unsafe fn fill_chunked<R: Send>(
    n: usize,
    block: usize,
    split: bool,
    body: impl Fn(usize, &mut [std::mem::MaybeUninit<R>]) + Sync,
) -> Vec<R> {
    let mut out: Vec<R> = out_vec(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    if split {
        let g = grain(n).div_ceil(block.max(1)) * block.max(1);
        spare.par_chunks_mut(g).enumerate().for_each(|(k, o)| body(k * g, o));
    } else {
        body(0, spare);
    }
    // SAFETY: the chunks cover all n slots and `body` wrote each (the
    // caller's contract).
    unsafe { out.set_len(n) };
    out
}

/// `f(a, b, c)` elementwise with broadcasting of all three (for `where` and fused `a*b+c`).
/// An operand already dense in the result's shape is read in place, and a
/// one-element operand as a constant; others are expanded first.
pub fn zip3<T: Scalar, R: Scalar>(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    f: impl Fn(T, T, T) -> R + Sync + Send,
) -> VResult<Tensor> {
    let s1 = broadcast_shapes(a.shape(), b.shape())?;
    let shape = broadcast_shapes(&s1, c.shape())?;
    let n = super::layout::checked_size(&shape)?;
    let out = with_operand::<T, _>(a, &shape, |x| {
        with_operand::<T, _>(b, &shape, |y| {
            with_operand::<T, _>(c, &shape, |z| {
                fill_blocks(n, [x, y, z], |o, [p, q, r]| {
                    for (o, ((&p, &q), &r)) in o.iter_mut().zip(p.iter().zip(q).zip(r)) {
                        o.write(f(p, q, r));
                    }
                })
            })
        })
    });
    Ok(Tensor::from_vec(out, shape))
}

/// `f(a, b, c, d)` elementwise with broadcasting of all four, the way
/// [`zip3`] reads its operands (for gradient rules that combine the
/// incoming gradient with three recorded tensors in one pass).
pub fn zip4<T: Scalar, R: Scalar>(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    d: &Tensor,
    f: impl Fn(T, T, T, T) -> R + Sync + Send,
) -> VResult<Tensor> {
    let s1 = broadcast_shapes(a.shape(), b.shape())?;
    let s2 = broadcast_shapes(&s1, c.shape())?;
    let shape = broadcast_shapes(&s2, d.shape())?;
    let n = super::layout::checked_size(&shape)?;
    let out = with_operand::<T, _>(a, &shape, |w| {
        with_operand::<T, _>(b, &shape, |x| {
            with_operand::<T, _>(c, &shape, |y| {
                with_operand::<T, _>(d, &shape, |z| {
                    fill_blocks(n, [w, x, y, z], |o, [p, q, r, t]| {
                        for (o, (((&p, &q), &r), &t)) in o.iter_mut().zip(p.iter().zip(q).zip(r).zip(t)) {
                            o.write(f(p, q, r, t));
                        }
                    })
                })
            })
        })
    });
    Ok(Tensor::from_vec(out, shape))
}

/// One operand of [`zip3`] (and of the gradient programs of
/// `cotangent.rs`) as the result's elements in row-major order.
#[derive(Clone, Copy)]
pub enum Operand<'a, T> {
    Dense(&'a [T]),
    Const(T),
}

/// Runs `f` with `t` as an operand of a result of `shape`: read in place
/// when dense in that shape, a constant when it holds one element or is one
/// element broadcast (every stride 0), else expanded to the shape first.
pub fn with_operand<T: Scalar, R>(t: &Tensor, shape: &[usize], f: impl FnOnce(Operand<'_, T>) -> R) -> R {
    let n: usize = shape.iter().product();
    // `f` comes back out when the operand has to be expanded first.
    let r = t.with_slice::<T, _>(move |s, l| {
        let op = if l.size() == 1 || l.strides.iter().all(|&st| st == 0) {
            s.get(l.offset).map(|&x| Operand::Const(x))
        } else if l.shape == shape && l.is_contiguous() {
            s.get(l.offset..l.offset + n).map(Operand::Dense)
        } else {
            None
        };
        match op {
            Some(op) => Ok(f(op)),
            None => Err(f),
        }
    });
    match r {
        Ok(r) => r,
        Err(f) => {
            let v = expand_to::<T>(t, shape);
            f(Operand::Dense(&v))
        }
    }
}

/// The elements of `t` broadcast to `shape`, dense, as `T`.
pub fn expand_to<T: Scalar>(t: &Tensor, shape: &[usize]) -> Vec<T> {
    if t.shape() == shape {
        return t.to_vec();
    }
    if t.size() == 1 {
        // One value everywhere (the gradient of a sum or mean): a fill, not
        // a gather that works out each element's offset.
        if let Some(&x) = t.to_vec::<T>().first() {
            let n: usize = shape.iter().product();
            return vec![x; n];
        }
    }
    let st = t.layout.broadcast_strides(shape);
    let l = Layout {
        shape: shape.to_vec(),
        strides: st,
        offset: t.layout.offset,
    };
    let mut tt = t.clone();
    tt.layout = l;
    tt.to_vec()
}
