//! Fused kernels: softmax in one pass per row (max, exp-sum, scale).

use super::arith::{self, Arg, UFn};
use super::core::{Tensor, PAR_MIN};
use super::real::Real;
#[allow(unused_imports)]
use super::storage::Scalar;
use super::reduce::{self, RKind};
use crate::syntax::ast::BinOp;
use crate::vm::value::VResult;
use rayon::prelude::*;

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
    let src = if last { x.clone() } else { x.view(x.layout.permuted(&perm_last(n, axis))) };
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
    if x != x {
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
        let mut out: Vec<T> = vec![T::ZERO; n];
        let row = |(o, r): (&mut [T], &[T])| {
            // Separate simple loops so each one vectorises.
            let mut m = -T::INF;
            for &v in r.iter() {
                m = if v > m { v } else { m };
            }
            if r.iter().any(|v| v.is_nan()) {
                m = T::from_f64(f64::NAN);
            }
            for (d, &v) in o.iter_mut().zip(r) {
                *d = (v - m).fexp();
            }
            let s = T::from_f64(T::lanes_sum(o));
            let inv = T::ONE / s;
            for d in o.iter_mut() {
                *d = *d * inv;
            }
        };
        if n >= PAR_MIN {
            out.par_chunks_mut(len).zip(src.par_chunks(len)).for_each(row);
        } else {
            out.chunks_mut(len).zip(src.chunks(len)).for_each(row);
        }
        out
    });
    Tensor::from_vec(out, shape)
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
