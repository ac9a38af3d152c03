//! Fused kernels: softmax in one pass per row (max, exp-sum, scale).

use super::arith::{self, Arg, UFn};
use super::core::{Tensor, PAR_MIN};
use super::real::Real;
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

fn rows<T: Real>(x: &Tensor) -> Tensor {
    let shape = x.shape().to_vec();
    let len = *shape.last().unwrap_or(&1);
    let dense = x.dense();
    let mut out: Vec<T> = dense.to_vec();
    if len == 0 {
        return Tensor::from_vec(out, shape);
    }
    let row = |r: &mut [T]| {
        let mut m = -T::INF;
        for &v in r.iter() {
            if v > m || v.is_nan() {
                m = v;
            }
        }
        let mut s = T::ZERO;
        for v in r.iter_mut() {
            let e = (*v - m).exp();
            *v = e;
            s = s + e;
        }
        let inv = T::ONE / s;
        for v in r.iter_mut() {
            *v = *v * inv;
        }
    };
    if out.len() >= PAR_MIN {
        out.par_chunks_mut(len).for_each(row);
    } else {
        out.chunks_mut(len).for_each(row);
    }
    Tensor::from_vec(out, shape)
}
