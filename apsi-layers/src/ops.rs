//! The tensor operations layers are written with: thin wrappers over
//! `apsi_core::api::tensor` that every take and give `Tensor`s, so layer
//! code reads like the formulas. Each records its autodiff node when an
//! input is traced (the core functions do), so `grad` and `fit` see
//! through every layer.

use apsi_core::api::tensor::{self as t, Arg, DType, RKind, Tensor, UFn};
use apsi_core::api::{err, BinOp, ErrorKind, VResult};

pub fn add(a: &Tensor, b: &Tensor) -> VResult<Tensor> {
    t::binary(BinOp::Add, &Arg::T(a.clone()), &Arg::T(b.clone()))
}
pub fn sub(a: &Tensor, b: &Tensor) -> VResult<Tensor> {
    t::binary(BinOp::Sub, &Arg::T(a.clone()), &Arg::T(b.clone()))
}
pub fn mul(a: &Tensor, b: &Tensor) -> VResult<Tensor> {
    t::binary(BinOp::Mul, &Arg::T(a.clone()), &Arg::T(b.clone()))
}
pub fn div(a: &Tensor, b: &Tensor) -> VResult<Tensor> {
    t::binary(BinOp::Div, &Arg::T(a.clone()), &Arg::T(b.clone()))
}
/// `a op x` for a plain number `x` (weakly typed: `a`'s dtype wins).
pub fn scalar(op: BinOp, a: &Tensor, x: f64) -> VResult<Tensor> {
    t::binary(op, &Arg::T(a.clone()), &Arg::Float(x))
}
/// `x op a` for a plain number `x`.
pub fn rscalar(op: BinOp, x: f64, a: &Tensor) -> VResult<Tensor> {
    t::binary(op, &Arg::Float(x), &Arg::T(a.clone()))
}
pub fn unary(f: UFn, x: &Tensor) -> VResult<Tensor> {
    t::unary(f, x)
}
pub fn matmul(a: &Tensor, b: &Tensor) -> VResult<Tensor> {
    t::matmul(a, b)
}
/// The last two axes swapped (a view).
/// A matmul or convolution operand under mixed precision (`fit(…,
/// precision="bf16")`, `train::Autocast`): rounded to the format (nearest
/// even; fp16 overflows to inf) and kept in its own dtype, so the product
/// accumulates in f32 (f64). The gradient passes through the rounding.
pub fn mm_operand(x: &Tensor) -> VResult<Tensor> {
    match crate::train::autocast() {
        Some(f) if x.dtype.is_float() && x.dtype != f => cast(&cast(x, f)?, x.dtype),
        _ => Ok(x.clone()),
    }
}
/// `a @ b` with both operands through [`mm_operand`].
pub fn mm(a: &Tensor, b: &Tensor) -> VResult<Tensor> {
    matmul(&mm_operand(a)?, &mm_operand(b)?)
}
pub fn transpose(x: &Tensor) -> VResult<Tensor> {
    let n = x.ndim();
    if n < 2 {
        return Ok(x.clone());
    }
    let mut perm: Vec<usize> = (0..n).collect();
    perm.swap(n - 2, n - 1);
    t::permute(x, &perm)
}
pub fn permute(x: &Tensor, perm: &[usize]) -> VResult<Tensor> {
    t::permute(x, perm)
}
pub fn reshape(x: &Tensor, shape: Vec<usize>) -> VResult<Tensor> {
    t::reshape(x, shape)
}
pub fn sum(x: &Tensor, axes: &[usize], keepdims: bool) -> VResult<Tensor> {
    t::reduce(x, axes, keepdims, RKind::Sum)
}
pub fn sum_all(x: &Tensor) -> VResult<Tensor> {
    let axes: Vec<usize> = (0..x.ndim()).collect();
    t::reduce(x, &axes, false, RKind::Sum)
}
pub fn mean_all(x: &Tensor) -> VResult<Tensor> {
    let n = x.size().max(1) as f64;
    scalar(BinOp::Div, &sum_all(x)?, n)
}
pub fn mean(x: &Tensor, axes: &[usize], keepdims: bool) -> VResult<Tensor> {
    let n: usize = axes.iter().map(|&a| x.shape()[a]).product();
    scalar(BinOp::Div, &sum(x, axes, keepdims)?, n.max(1) as f64)
}
pub fn max(x: &Tensor, axes: &[usize], keepdims: bool) -> VResult<Tensor> {
    t::reduce(x, axes, keepdims, RKind::Max)
}
pub fn relu(x: &Tensor) -> VResult<Tensor> {
    t::extremum(&Arg::T(x.clone()), &Arg::Float(0.0), true)
}
pub fn softmax_last(x: &Tensor) -> VResult<Tensor> {
    t::softmax(x, x.ndim().saturating_sub(1))
}
/// `log softmax` over the last axis, stable (the max shift is a constant).
pub fn log_softmax_last(x: &Tensor) -> VResult<Tensor> {
    let last = x.ndim() - 1;
    let m = max(&detach(x), &[last], true)?;
    let z = sub(x, &m)?;
    let lse = unary(UFn::Log, &sum(&unary(UFn::Exp, &z)?, &[last], true)?)?;
    sub(&z, &lse)
}
/// `x` without its place on the tape.
pub fn detach(x: &Tensor) -> Tensor {
    let mut d = x.clone();
    d.node = None;
    d
}
/// `x` in `dtype` (recorded when traced; the same tensor when it has it).
pub fn cast(x: &Tensor, dtype: DType) -> VResult<Tensor> {
    Arg::T(x.clone()).to_tensor(dtype)
}
/// A constant of `shape` from f64 values, in `dtype`.
pub fn constant(values: Vec<f64>, shape: Vec<usize>, dtype: DType) -> VResult<Tensor> {
    Tensor::from_vec(values, shape).astype(dtype)
}
/// The elements of a float tensor as f64, row-major.
pub fn values(x: &Tensor) -> Vec<f64> {
    x.to_vec::<f64>()
}
/// Integer labels or indices: the elements of an int tensor, or of a float
/// tensor holding whole numbers (labels loaded from a float `.npy`).
pub fn int_values(who: &str, what: &str, x: &Tensor) -> VResult<Vec<i64>> {
    match x.dtype.kind() {
        t::Kind::Int | t::Kind::Bool => Ok(x.to_vec::<i64>()),
        t::Kind::Float => {
            let v: Vec<f64> = x.to_vec();
            v.iter()
                .map(|&f| {
                    if f.fract() == 0.0 && f.is_finite() {
                        Ok(f as i64)
                    } else {
                        Err(err(
                            ErrorKind::TypeError,
                            format!("{who}: {what} must be whole numbers (an int tensor), found {f}"),
                        ))
                    }
                })
                .collect()
        }
    }
}
/// Rows `idx` of `x` along axis 0 (recorded when `x` is traced).
pub fn take_rows(x: &Tensor, idx: &[usize]) -> VResult<Tensor> {
    let idx: std::sync::Arc<[usize]> = idx.into();
    t::index_select(x, 0, &idx)
}
/// Copies `src`'s elements (converted to `dst`'s dtype) into `dst`'s own
/// storage, so every name for `dst` sees them.
pub fn write_into(dst: &Tensor, src: &Tensor) -> VResult<()> {
    if dst.shape() != src.shape() {
        return Err(err(
            ErrorKind::ShapeError,
            format!(
                "cannot copy a tensor of shape {} into one of shape {}",
                t::shape_str(src.shape()),
                t::shape_str(dst.shape())
            ),
        ));
    }
    let vals = src.to_vec::<f64>();
    write_f64(dst, &vals)
}
/// Writes f64 values (row-major over `dst`'s shape) into `dst`'s storage.
pub fn write_f64(dst: &Tensor, vals: &[f64]) -> VResult<()> {
    let offsets = dst.layout.offsets();
    if offsets.len() != vals.len() {
        return Err(err(ErrorKind::ValueError, "write_f64: length mismatch"));
    }
    dst.storage.write(|b| match b {
        t::Buffer::F64(e) => {
            let s = &mut e[..];
            for (&o, &v) in offsets.iter().zip(vals) {
                if let Some(x) = s.get_mut(o) {
                    *x = v;
                }
            }
            Ok(())
        }
        t::Buffer::F32(e) => {
            let s = &mut e[..];
            for (&o, &v) in offsets.iter().zip(vals) {
                if let Some(x) = s.get_mut(o) {
                    *x = v as f32;
                }
            }
            Ok(())
        }
        _ => Err(err(ErrorKind::TypeError, "layers: parameters are f32 or f64 tensors")),
    })
}
/// `log(1 + e^x)` (the core's softplus: linear past 20, as PyTorch's).
pub fn softplus(x: &Tensor) -> VResult<Tensor> {
    t::softplus(x, 1.0, 20.0)
}
/// The slices `idx` of `x` along `axis` (recorded when `x` is traced).
pub fn select(x: &Tensor, axis: usize, idx: &[usize]) -> VResult<Tensor> {
    let idx: std::sync::Arc<[usize]> = idx.into();
    t::index_select(x, axis, &idx)
}
/// Slice `k` of `x` along `axis`, that axis removed.
pub fn slice_at(x: &Tensor, axis: usize, k: usize) -> VResult<Tensor> {
    let s = select(x, axis, &[k])?;
    let mut shape = x.shape().to_vec();
    shape.remove(axis);
    reshape(&s, shape)
}
/// The range `lo..hi` of `x` along `axis`.
pub fn range_of(x: &Tensor, axis: usize, lo: usize, hi: usize) -> VResult<Tensor> {
    let idx: Vec<usize> = (lo..hi).collect();
    select(x, axis, &idx)
}
pub fn stack(ts: &[Tensor], axis: i64) -> VResult<Tensor> {
    t::stack(ts, axis)
}
