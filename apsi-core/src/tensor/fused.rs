//! Fused kernels: softmax in one pass per row (max, exp-sum, scale) and
//! `a * b + c` in one pass over memory.

use super::arith::{self, Arg, UFn};
use super::core::{par_split, par_split_cheap, Tensor, PAR_MIN};
use super::dtype::DType;
use super::kernels::wide;
use super::object::{as_tensor, tensor_value};
use super::real::Real;
use super::reduce::{self, RKind};
#[allow(unused_imports)]
use super::storage::Scalar;
use crate::syntax::ast::BinOp;
use crate::value::{VResult, Value};
use rayon::prelude::*;
use std::mem::MaybeUninit;

pub fn softmax(x: &Tensor, axis: usize) -> VResult<Tensor> {
    if x.node.is_some() {
        // Traced: compose recorded ops (the max shift is a constant).
        let m = reduce::reduce(&detached(x), &[axis], true, RKind::Max)?;
        let z = arith::binary(BinOp::Sub, &Arg::T(x.clone()), &Arg::T(m))?;
        let e = arith::unary(UFn::Exp, &z)?;
        let s = reduce::reduce(&e, &[axis], true, RKind::Sum)?;
        return arith::binary(BinOp::Div, &Arg::T(e), &Arg::T(s));
    }
    // Move the axis last and run rows.
    let n = x.ndim();
    let last = axis == n - 1;
    let src = if last {
        x.clone()
    } else {
        x.view(x.layout.permuted(&perm_last(n, axis)))
    };
    let r = match x.dtype {
        super::dtype::DType::F32 => rows::<f32>(&src),
        super::dtype::DType::F64 => rows::<f64>(&src),
        d => rows::<f32>(&src).astype(d)?,
    };
    if last {
        Ok(r)
    } else {
        let mut inv = vec![0usize; n];
        for (i, &p) in perm_last(n, axis).iter().enumerate() {
            inv[p] = i;
        }
        Ok(r.view(r.layout.permuted(&inv)).contiguous())
    }
}

fn detached(x: &Tensor) -> Tensor {
    let mut d = x.clone();
    d.node = None;
    d
}

fn perm_last(n: usize, axis: usize) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).filter(|&i| i != axis).collect();
    p.push(axis);
    p
}

/// e^x for f32 in a branch-free form the compiler vectorises (Cephes'
/// expf polynomial; within 2 ulp of the exact value).
#[inline(always)]
// `max`/`min`, not `clamp`: a NaN input must stay NaN through the range
// limit; the coefficients are written as published.
#[allow(clippy::manual_clamp, clippy::excessive_precision)]
pub fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23: adding it rounds to an integer
    let xc = x.max(-87.0).min(88.5);
    let t = xc * LOG2E + MAGIC;
    let k = t - MAGIC;
    let ki = (t.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let r = xc - k * 0.693_359_4 - k * -2.121_944_4e-4;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_2e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 5.000_000_1e-1;
    let e = p * r * r + r + 1.0;
    let scale = f32::from_bits((ki.wrapping_add(127) << 23) as u32);
    let v = e * scale;
    let v = if x < -87.0 { 0.0 } else { v };
    let v = if x > 88.5 { f32::INFINITY } else { v };
    if x.is_nan() {
        x
    } else {
        v
    }
}

/// Elements whose exp the softmax kernel computes.
pub trait SoftElem: Real + super::reduce::SumElem {
    fn fexp(self) -> Self;
}
impl SoftElem for f32 {
    #[inline(always)]
    fn fexp(self) -> f32 {
        exp_f32(self)
    }
}
impl SoftElem for f64 {
    #[inline(always)]
    fn fexp(self) -> f64 {
        self.exp()
    }
}

fn rows<T: SoftElem>(x: &Tensor) -> Tensor {
    let shape = x.shape().to_vec();
    let len = *shape.last().unwrap_or(&1);
    let n: usize = shape.iter().product();
    if len == 0 || n == 0 {
        return Tensor::from_vec(Vec::<T>::new(), shape);
    }
    let dense = x.dense();
    let out = dense.with_slice::<T, _>(|src, l| {
        let src = src.get(l.offset..l.offset + n).unwrap_or(&[]);
        let mut out: Vec<T> = super::kernels::out_vec(n);
        let spare = &mut out.spare_capacity_mut()[..src.len()];
        let block = |(o, r): (&mut [MaybeUninit<T>], &[T])| softmax_rows(o, r, len);
        if par_split(n) {
            // Whole rows per task, about 64K elements each.
            let per = ((1 << 16) / len).max(1) * len;
            spare.par_chunks_mut(per).zip(src.par_chunks(per)).for_each(block);
        } else {
            block((spare, src));
        }
        // SAFETY: softmax_row wrote every slot of every row (src holds n
        // elements: the dense copy starts at 0 and is contiguous).
        unsafe { out.set_len(src.len()) };
        out
    });
    Tensor::from_vec(out, shape)
}

/// Rows of `len` elements, in a function compiled for the CPU's widest
/// vector unit (explicit, so the row kernel is surely inlined into it).
fn softmax_rows<T: SoftElem>(o: &mut [MaybeUninit<T>], r: &[T], len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { rows_avx512(o, r, len) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { rows_avx2(o, r, len) };
        }
    }
    rows_plain(o, r, len)
}

#[inline(always)]
fn rows_plain<T: SoftElem>(o: &mut [MaybeUninit<T>], r: &[T], len: usize) {
    for (o, r) in o.chunks_mut(len).zip(r.chunks(len)) {
        softmax_row(o, r);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,bmi2")]
unsafe fn rows_avx512<T: SoftElem>(o: &mut [MaybeUninit<T>], r: &[T], len: usize) {
    rows_plain(o, r, len)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2")]
unsafe fn rows_avx2<T: SoftElem>(o: &mut [MaybeUninit<T>], r: &[T], len: usize) {
    rows_plain(o, r, len)
}

/// One row (in L1 cache): max, exp(x - max), their sum, then the scale.
/// A NaN anywhere gives a NaN sum, so the whole row is NaN (as NumPy's).
#[inline(always)]
fn softmax_row<T: SoftElem>(o: &mut [MaybeUninit<T>], r: &[T]) {
    const L: usize = 16;
    let mut mx = [-T::INF; L];
    let mut it = r.chunks_exact(L);
    for c in &mut it {
        for k in 0..L {
            mx[k] = if c[k] > mx[k] { c[k] } else { mx[k] };
        }
    }
    let mut m = -T::INF;
    for &v in mx.iter().chain(it.remainder()) {
        m = if v > m { v } else { m };
    }
    // A plain loop: the exp polynomial vectorises whole (an unrolled lane
    // array of it does not).
    for (d, &v) in o.iter_mut().zip(r) {
        d.write((v - m).fexp());
    }
    // SAFETY: every slot of `o` was written just above (o and r have the same length).
    let o = unsafe { &mut *(o as *mut [MaybeUninit<T>] as *mut [T]) };
    let inv = T::ONE / T::from_f64(T::lanes_sum(o));
    for d in o.iter_mut() {
        *d = *d * inv;
    }
}

/// An operand of [`mul_add`]: a dense tensor's elements or one number.
#[derive(Clone, Copy)]
enum Src<'a, T> {
    S(&'a [T]),
    K(T),
}

/// `x * y + z` in one pass, for what the VM runs as `a * b + c` (the
/// compiler marks such a product, see `Instr::MulT`): when at least one of
/// `x`, `y` is a tensor and every operand is an untraced contiguous f32/f64
/// tensor of one dtype and shape, or a plain number. The result is exactly
/// the two operators' (the product is rounded before the sum; no FMA).
/// `None`: this form does not apply and the caller runs the operators.
pub fn mul_add(x: &Value, y: &Value, z: &Value) -> Option<Value> {
    let t = as_tensor(x).or_else(|| as_tensor(y))?;
    if t.ndim() == 0 || t.size() < PAR_MIN {
        return None;
    }
    let r = match t.dtype {
        DType::F32 => mul_add_t::<f32>(x, y, z, t.shape())?,
        DType::F64 => mul_add_t::<f64>(x, y, z, t.shape())?,
        _ => return None,
    };
    Some(tensor_value(r))
}

enum Opd<T> {
    T(Tensor),
    K(T),
}

fn opd<T: Real>(v: &Value, shape: &[usize]) -> Option<Opd<T>> {
    match v {
        Value::Float(f) => Some(Opd::K(T::from_f64(*f))),
        Value::Int(i) => Some(Opd::K(T::from_f64(*i as f64))),
        _ => {
            let t = as_tensor(v)?;
            (t.dtype == T::DTYPE && t.node.is_none() && t.shape() == shape && t.layout.is_contiguous())
                .then_some(Opd::T(t))
        }
    }
}

fn with_src<T: Real, R>(o: &Opd<T>, n: usize, f: impl FnOnce(Src<'_, T>) -> R) -> Option<R> {
    match o {
        Opd::K(k) => Some(f(Src::K(*k))),
        Opd::T(t) => t.with_slice::<T, _>(|s, l| s.get(l.offset..l.offset + n).map(|s| f(Src::S(s)))),
    }
}

fn mul_add_t<T: Real>(x: &Value, y: &Value, z: &Value, shape: &[usize]) -> Option<Tensor> {
    let (a, b, c) = (opd::<T>(x, shape)?, opd::<T>(y, shape)?, opd::<T>(z, shape)?);
    let n: usize = shape.iter().product();
    let out = with_src(&a, n, |a| {
        with_src(&b, n, |b| with_src(&c, n, |c| mul_add_run(a, b, c, n)))
    })???;
    Some(Tensor::from_vec(out, shape.to_vec()))
}

fn mul_add_run<'a, T: Real>(a: Src<'a, T>, b: Src<'a, T>, c: Src<'a, T>, n: usize) -> Vec<T> {
    let mut out: Vec<T> = super::kernels::out_vec(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    let g = super::kernels::grain(n);
    let chunk = |(i, o): (usize, &mut [MaybeUninit<T>])| {
        let lo = i * g;
        let len = o.len();
        let part = |s: Src<'a, T>| -> Src<'a, T> {
            match s {
                Src::S(s) => Src::S(s.get(lo..lo + len).unwrap_or(&[])),
                k => k,
            }
        };
        let (pa, pb, pc) = (part(a), part(b), part(c));
        wide(|| match (pa, pb, pc) {
            (Src::S(a), Src::S(b), Src::S(c)) => {
                for (((o, &p), &q), &r) in o.iter_mut().zip(a).zip(b).zip(c) {
                    o.write(p * q + r);
                }
            }
            (Src::S(a), Src::K(q), Src::S(c)) | (Src::K(q), Src::S(a), Src::S(c)) => {
                for ((o, &p), &r) in o.iter_mut().zip(a).zip(c) {
                    o.write(p * q + r);
                }
            }
            (Src::S(a), Src::S(b), Src::K(r)) => {
                for ((o, &p), &q) in o.iter_mut().zip(a).zip(b) {
                    o.write(p * q + r);
                }
            }
            (Src::S(a), Src::K(q), Src::K(r)) | (Src::K(q), Src::S(a), Src::K(r)) => {
                for (o, &p) in o.iter_mut().zip(a) {
                    o.write(p * q + r);
                }
            }
            (Src::K(p), Src::K(q), Src::S(c)) => {
                for (o, &r) in o.iter_mut().zip(c) {
                    o.write(p * q + r);
                }
            }
            (Src::K(p), Src::K(q), Src::K(r)) => {
                for o in o.iter_mut() {
                    o.write(p * q + r);
                }
            }
        })
    };
    // Small products stay on the calling thread: handing them to a pool
    // of one costs two context switches (4x the time at 64K elements).
    if par_split_cheap(n) {
        spare.par_chunks_mut(g).enumerate().for_each(chunk);
    } else {
        chunk((0, spare));
    }
    // SAFETY: each task wrote its whole chunk (every slice operand holds n
    // elements, checked when it was taken), so all n slots are set.
    unsafe { out.set_len(n) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_exp_is_close_to_exact() {
        let mut worst = 0f64;
        let mut x = -87.0f32;
        while x < 88.0 {
            let got = exp_f32(x) as f64;
            let want = (x as f64).exp();
            worst = worst.max(((got - want) / want).abs());
            x += 0.0137;
        }
        assert!(worst < 3e-7, "worst relative error {worst}");
        assert_eq!(exp_f32(-100.0), 0.0);
        assert_eq!(exp_f32(0.0), 1.0);
        assert!(exp_f32(f32::NAN).is_nan());
        assert_eq!(exp_f32(100.0), f32::INFINITY);
    }
}
