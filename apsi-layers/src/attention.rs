//! Multi-head scaled dot-product attention (PyTorch's
//! `nn.MultiheadAttention`, batch first): `softmax(q·kᵀ/√d + mask)·v` per
//! head, heads concatenated, then the output projection.

use crate::layer::Layer;
use crate::ops;
use apsi_core::api::tensor::Tensor;
use apsi_core::api::{err, BinOp, ErrorKind, VResult};

/// Rows `lo..hi` of a projection's weight (and bias) applied to `x`.
fn project(x: &Tensor, w: &Tensor, b: Option<&Tensor>, lo: usize, hi: usize) -> VResult<Tensor> {
    let wr = ops::range_of(w, 0, lo, hi)?;
    let y = ops::mm(x, &ops::transpose(&wr)?)?;
    match b {
        Some(b) => ops::add(&y, &ops::range_of(b, 0, lo, hi)?),
        None => Ok(y),
    }
}

/// `(N, T, dim)` → `(N, heads, T, d)`.
fn split_heads(x: &Tensor, heads: usize) -> VResult<Tensor> {
    let (n, t, dim) = (x.shape()[0], x.shape()[1], x.shape()[2]);
    let r = ops::reshape(x, vec![n, t, heads, dim / heads])?;
    ops::permute(&r, &[0, 2, 1, 3])
}

pub fn forward(l: &Layer, q: &Tensor, k: &Tensor, v: &Tensor, heads: usize, causal: bool) -> VResult<Tensor> {
    let ps = l.params.read().clone();
    let (w_in, b_in, w_out, b_out) = match ps.as_slice() {
        [wi, bi, wo, bo] => (wi, Some(bi), wo, Some(bo)),
        [wi, wo] => (wi, None, wo, None),
        _ => {
            return Err(err(
                ErrorKind::ValueError,
                "MultiHeadAttention: the layer lost its parameters",
            ))
        }
    };
    let (n, tq, dim) = (q.shape()[0], q.shape()[1], q.shape()[2]);
    let tk = k.shape()[1];
    if k.shape()[0] != n || v.shape() != k.shape() {
        return Err(err(
            ErrorKind::ShapeError,
            format!(
                "{}: q {:?}, k {:?} and v {:?} need one batch size, and k and v one shape",
                l.describe(),
                q.shape(),
                k.shape(),
                v.shape()
            ),
        ));
    }
    let d = dim / heads;
    let qh = split_heads(&project(q, w_in, b_in, 0, dim)?, heads)?;
    let kh = split_heads(&project(k, w_in, b_in, dim, 2 * dim)?, heads)?;
    let vh = split_heads(&project(v, w_in, b_in, 2 * dim, 3 * dim)?, heads)?;
    let mut scores = ops::scalar(BinOp::Div, &ops::mm(&qh, &ops::transpose(&kh)?)?, (d as f64).sqrt())?;
    if causal {
        let mut mask = vec![0.0; tq * tk];
        for i in 0..tq {
            for j in (i + 1)..tk {
                mask[i * tk + j] = f64::NEG_INFINITY;
            }
        }
        scores = ops::add(&scores, &ops::constant(mask, vec![tq, tk], scores.dtype)?)?;
    }
    let att = ops::softmax_last(&scores)?;
    let o = ops::mm(&att, &vh)?;
    let o = ops::reshape(&ops::permute(&o, &[0, 2, 1, 3])?, vec![n, tq, dim])?;
    let y = ops::mm(&o, &ops::transpose(w_out)?)?;
    match b_out {
        Some(b) => ops::add(&y, b),
        None => Ok(y),
    }
}
