//! Reverse-mode automatic differentiation: a tape of tensor operations,
//! one vector-Jacobian rule per operation.
//!
//! While `grad` runs a function, its inputs are leaf tensors with a
//! [`Node`]; every operation with a traced input records a node holding its
//! inputs (and output where the rule needs it). Node ids grow with time, so
//! visiting nodes by decreasing id is a topological order. The rules are
//! written with the same recorded operations, so when the inputs of an
//! inner `grad` are themselves traced (by an outer `grad`), the gradients
//! it returns are traced too and `grad(grad(f))` is the second derivative.

use super::arith::{binary_same, compare, unary, where_, Arg, UFn};
use super::core::Tensor;
use super::cotangent::Cot;
use super::dtype::DType;
use super::shape::{broadcast_to, permute, reshape, sum_to};
use crate::error::ErrorKind;
use crate::syntax::ast::{BinOp, CmpOp};
use crate::value::{err, VResult};
use std::cell::Cell;
// Node ids are distinct counters: a fast hash, not SipHash (which took a
// fifth of a small tensor's `grad` step).
use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub struct Node {
    pub id: u64,
    pub op: Op,
}

pub enum Op {
    Leaf,
    /// A leaf standing for a tensor traced by an outer `grad`.
    Alias(Tensor),
    Add(Tensor, Tensor),
    Sub(Tensor, Tensor),
    Mul(Tensor, Tensor),
    Div(Tensor, Tensor),
    /// base, exponent, result
    Pow(Tensor, Tensor, Tensor),
    /// function, input, result
    Unary(UFn, Tensor, Tensor),
    Cast(Tensor),
    /// maximum/minimum: a, b, result
    Select(Tensor, Tensor, Tensor),
    Where(Tensor, Tensor, Tensor),
    Clip(Tensor, Option<f64>, Option<f64>),
    Sum(Tensor, Vec<usize>, bool),
    Extreme(Tensor, Vec<usize>, bool, Tensor),
    Prod(Tensor, Vec<usize>, bool, Tensor),
    Cumsum(Tensor, usize),
    Reshape(Tensor),
    Permute(Tensor, Vec<usize>),
    /// parts, axis, their lengths along it
    Concat(Vec<Tensor>, usize, Vec<usize>),
    /// source, logical (row-major) indices into it, result shape
    Gather(Tensor, Vec<usize>, Vec<usize>),
    /// values, logical indices, shape of the zero tensor they are added into
    Scatter(Tensor, Vec<usize>, Vec<usize>),
    Matmul(Tensor, Tensor),
    /// `sqrt` inside `std`: input, result
    Root(Tensor, Tensor),
    /// the 2-norm: x, axes, keepdims, result
    Norm(Tensor, Vec<usize>, bool, Tensor),
    /// `roll` along one axis: input, axis, shift (in `0..len`)
    Roll(Tensor, usize, usize),
    /// `index_add`: x, axis, index (in range), source
    IndexAdd(Tensor, usize, Arc<[usize]>, Tensor),
    /// the slices of x at index along axis (the adjoint of `IndexAdd`)
    IndexSelect(Tensor, usize, Arc<[usize]>),
    /// `logaddexp`: a, b (of one dtype)
    LogAddExp(Tensor, Tensor),
    /// `softplus`: x, beta, threshold
    Softplus(Tensor, f64, f64),
    /// `conv2d`: input, weight, bias, the window sweep (conv.rs)
    Conv2d {
        x: Tensor,
        w: Tensor,
        b: Option<Tensor>,
        window: super::conv::Window,
    },
    /// the column matrix of an input (conv.rs; the adjoint of `Col2im`)
    Im2col(Tensor, super::conv::Window),
    /// column entries summed back into the input's shape (the adjoint of `Im2col`)
    Col2im(Tensor, super::conv::Window),
    /// `scatter_reduce` (scatter.rs): x, the flat source, the flat index
    /// into x each source element lands at, the reduction, include_self,
    /// result
    ScatterReduce {
        x: Tensor,
        src: Tensor,
        targets: Arc<[usize]>,
        reduce: super::scatter::Reduce,
        include_self: bool,
        out: Tensor,
    },
    /// `lstm_seq` (lstm.rs): the whole recurrence as one node; xw (N, T,
    /// 4H) and w_hh (4H, H) in the computing dtype, the forward pass's
    /// activations, and whether the result holds every step.
    LstmSeq {
        xw: Tensor,
        w_hh: Tensor,
        saved: Box<super::lstm::LstmSaved>,
        return_sequences: bool,
    },
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static PAUSED: Cell<bool> = const { Cell::new(false) };
}

/// A node for `op` producing `out`, unless recording is paused (a
/// first-order backward pass needs no tape of its own).
pub fn record(op: Op, _out: &Tensor) -> Option<Arc<Node>> {
    if PAUSED.with(|p| p.get()) {
        return None;
    }
    Some(Arc::new(Node {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        op,
    }))
}

/// A fresh leaf standing for `t` (linked to `t` when `t` is traced).
pub fn leaf(t: &Tensor) -> Tensor {
    let mut x = t.clone();
    let op = if t.node.is_some() {
        Op::Alias(t.clone())
    } else {
        Op::Leaf
    };
    x.node = Some(Arc::new(Node {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        op,
    }));
    x
}

fn inputs(op: &Op) -> Vec<&Tensor> {
    match op {
        Op::Leaf => vec![],
        Op::Alias(a) | Op::Unary(_, a, _) | Op::Cast(a) | Op::Clip(a, _, _) | Op::Sum(a, _, _) => vec![a],
        Op::Norm(a, _, _, _) => vec![a],
        Op::Root(a, _) | Op::Roll(a, _, _) | Op::IndexSelect(a, _, _) | Op::Softplus(a, _, _) => vec![a],
        Op::IndexAdd(a, _, _, b) | Op::LogAddExp(a, b) => vec![a, b],
        Op::Extreme(a, _, _, _) | Op::Prod(a, _, _, _) | Op::Cumsum(a, _) | Op::Reshape(a) | Op::Permute(a, _) => {
            vec![a]
        }
        Op::Gather(a, _, _) | Op::Scatter(a, _, _) => vec![a],
        Op::Add(a, b) | Op::Sub(a, b) | Op::Mul(a, b) | Op::Div(a, b) | Op::Matmul(a, b) => vec![a, b],
        Op::Pow(a, b, _) | Op::Select(a, b, _) => vec![a, b],
        Op::Where(_, a, b) => vec![a, b],
        Op::Concat(parts, _, _) => parts.iter().collect(),
        Op::Conv2d { x, w, b, .. } => {
            let mut v = vec![x, w];
            v.extend(b);
            v
        }
        Op::Im2col(a, _) | Op::Col2im(a, _) => vec![a],
        Op::ScatterReduce { x, src, .. } => vec![x, src],
        Op::LstmSeq { xw, w_hh, .. } => vec![xw, w_hh],
    }
}

pub(super) fn detach(t: &Tensor) -> Tensor {
    let mut d = t.clone();
    d.node = None;
    d
}

/// `a op b` in the wider of their formats.
pub(super) fn bin(op: BinOp, a: &Tensor, b: &Tensor) -> VResult<Tensor> {
    let d = DType::promote(a.dtype, b.dtype);
    binary_same(op, &Arg::T(a.clone()).to_tensor(d)?, &Arg::T(b.clone()).to_tensor(d)?)
}

fn scal(op: BinOp, a: &Tensor, x: f64) -> VResult<Tensor> {
    let s = Tensor::full(vec![], x, a.dtype)?;
    binary_same(op, a, &s)
}

fn zeros_like(t: &Tensor) -> VResult<Tensor> {
    Tensor::full(t.shape().to_vec(), 0.0, t.dtype)
}

fn keep_shape(shape: &[usize], axes: &[usize]) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .map(|(i, &d)| if axes.contains(&i) { 1 } else { d })
        .collect()
}

/// Scatter-adds `g` (row-major over its shape) into zeros of `shape` at `idx`.
pub fn scatter(g: &Tensor, idx: &[usize], shape: &[usize]) -> VResult<Tensor> {
    let n: usize = shape.iter().product();
    let vals: Vec<f64> = g.to_vec();
    let mut out = vec![0f64; n];
    for (&i, &v) in idx.iter().zip(&vals) {
        if let Some(o) = out.get_mut(i) {
            *o += v;
        }
    }
    let mut r = Tensor::from_vec(out, shape.to_vec()).cast(g.dtype)?;
    if g.node.is_some() {
        r.node = record(Op::Scatter(g.clone(), idx.to_vec(), shape.to_vec()), &r);
    }
    Ok(r)
}

pub fn gather(x: &Tensor, idx: &[usize], shape: &[usize]) -> VResult<Tensor> {
    let vals: Vec<f64> = x.to_vec();
    let out: Vec<f64> = idx.iter().map(|&i| vals.get(i).copied().unwrap_or(0.0)).collect();
    let mut r = Tensor::from_vec(out, shape.to_vec()).cast(x.dtype)?;
    if x.node.is_some() {
        r.node = record(Op::Gather(x.clone(), idx.to_vec(), shape.to_vec()), &r);
    }
    Ok(r)
}

/// A node's recorded result `out`, for a rule that uses it: recomputed from
/// the (traced) inputs by `redo` when the backward pass is itself being
/// recorded (`grad(grad(f))`), so that the second derivative sees how the
/// result depends on them; the recorded value otherwise.
pub(super) fn live(out: &Tensor, redo: impl FnOnce() -> VResult<Tensor>) -> VResult<Tensor> {
    if PAUSED.with(|p| p.get()) {
        Ok(out.clone())
    } else {
        redo()
    }
}

/// `f()` when input `i` needs its cotangent, else `None` (nothing computed).
pub(super) fn want(need: &[bool], i: usize, f: impl FnOnce() -> VResult<Tensor>) -> VResult<Option<Tensor>> {
    if need.get(i).copied().unwrap_or(false) {
        f().map(Some)
    } else {
        Ok(None)
    }
}

/// The cotangents of a node's inputs, given the cotangent `g` of its
/// output. Only inputs with `need[i]` (those that lead to a leaf being
/// differentiated) get one: a constant operand, such as the data matrix of
/// `X @ w`, costs nothing (the "requires grad" pruning of other autodiff
/// systems).
fn vjp(op: &Op, g: &Tensor, need: &[bool]) -> VResult<Vec<Option<Tensor>>> {
    use BinOp::*;
    Ok(match op {
        Op::Leaf => vec![],
        Op::Alias(_) => vec![Some(g.clone())],
        Op::Add(a, b) => vec![
            want(need, 0, || sum_to(g, a.shape()))?,
            want(need, 1, || sum_to(g, b.shape()))?,
        ],
        Op::Sub(a, b) => vec![
            want(need, 0, || sum_to(g, a.shape()))?,
            want(need, 1, || sum_to(&unary(UFn::Neg, g)?, b.shape()))?,
        ],
        Op::Mul(a, b) => vec![
            want(need, 0, || sum_to(&bin(Mul, g, b)?, a.shape()))?,
            want(need, 1, || sum_to(&bin(Mul, g, a)?, b.shape()))?,
        ],
        Op::Div(a, b) => vec![
            want(need, 0, || sum_to(&bin(Div, g, b)?, a.shape()))?,
            want(need, 1, || {
                let q = bin(Div, &bin(Mul, g, a)?, &bin(Mul, b, b)?)?;
                sum_to(&unary(UFn::Neg, &q)?, b.shape())
            })?,
        ],
        Op::Pow(x, y, out) => vec![
            // Kinks as PyTorch: d/dx is 0 where y == 0 (x ** 0 is 1, even
            // at x = 0, never 0 * inf); d/dy is 0 where x == 0 and y >= 0
            // (never 0 * log 0).
            want(need, 0, || {
                let ym1 = scal(Sub, y, 1.0)?;
                let gx = bin(Mul, g, &bin(Mul, y, &bin(Pow, x, &ym1)?)?)?;
                let flat = compare(CmpOp::Eq, &Arg::T(detach(y)), &Arg::Float(0.0))?;
                sum_to(&where_(&flat, &Arg::Float(0.0), &Arg::T(gx))?, x.shape())
            })?,
            want(need, 1, || {
                let out = live(out, || bin(Pow, x, y))?;
                let gy = bin(Mul, &bin(Mul, g, &out)?, &unary(UFn::Log, x)?)?;
                let at0 = super::kernels::zip::<f64, bool>(&detach(x), &detach(y), |a, b| a == 0.0 && b >= 0.0)?;
                sum_to(&where_(&at0, &Arg::Float(0.0), &Arg::T(gy))?, y.shape())
            })?,
        ],
        Op::Unary(f, x, out) => vec![want(need, 0, || match direct_unary_vjp(*f, x, out, g) {
            Some(r) => r,
            None => unary_vjp(*f, x, out, g),
        })?],
        Op::Cast(x) => vec![want(need, 0, || Arg::T(g.clone()).to_tensor(x.dtype))?],
        Op::Select(a, b, out) => {
            // PyTorch's rule for maximum/minimum: the operand equal to the
            // result takes the gradient, and a tie splits it evenly.
            let (ta, tb) = (&detach(a), &detach(b));
            let d = DType::promote(DType::promote(ta.dtype, tb.dtype), g.dtype);
            let share = |this: &Tensor, other: &Tensor| -> VResult<Tensor> {
                if untraced(&[g]) && matches!(d, DType::F64 | DType::F32) {
                    // One pass: g times the share (0, 1/2 or 1; exact in
                    // either format, so the same bits as the product).
                    return super::kernels::zip4::<f64, f64>(g, &detach(out), this, other, |g, o, p, q| {
                        if o != p {
                            0.0
                        } else if o == q {
                            g * 0.5
                        } else {
                            g
                        }
                    })?
                    .cast(d);
                }
                let w = super::kernels::zip3::<f64, f64>(&detach(out), this, other, |o, p, q| {
                    if o != p {
                        0.0
                    } else if o == q {
                        0.5
                    } else {
                        1.0
                    }
                })?
                .cast(d)?;
                bin(Mul, g, &w)
            };
            vec![
                want(need, 0, || sum_to(&share(ta, tb)?, a.shape()))?,
                want(need, 1, || sum_to(&share(tb, ta)?, b.shape()))?,
            ]
        }
        Op::Where(c, a, b) => {
            let z = Arg::Float(0.0);
            vec![
                want(need, 0, || sum_to(&where_(c, &Arg::T(g.clone()), &z)?, a.shape()))?,
                want(need, 1, || sum_to(&where_(c, &z, &Arg::T(g.clone()))?, b.shape()))?,
            ]
        }
        Op::Clip(x, lo, hi) => {
            // PyTorch's clamp with number bounds (2.x): the gradient passes
            // strictly inside, lo < x < hi; at a bound it is 0 (as relu at
            // 0), and a missing bound never stops it.
            let (lo, hi) = (*lo, *hi);
            let inside = move |v: f64| lo.is_none_or(|l| v > l) && hi.is_none_or(|h| v < h);
            if untraced(&[g]) && g.dtype == x.dtype && matches!(g.dtype, DType::F64 | DType::F32) {
                let r = super::kernels::zip::<f64, f64>(g, &detach(x), move |g, v| if inside(v) { g } else { 0.0 })?;
                return Ok(vec![Some(r.cast(g.dtype)?)]);
            }
            let m = super::kernels::map::<f64, bool>(&detach(x), inside);
            vec![Some(where_(&m, &Arg::T(g.clone()), &Arg::Float(0.0))?)]
        }
        Op::Sum(x, axes, keepdims) => {
            let gk = if *keepdims {
                g.clone()
            } else {
                reshape(g, keep_shape(x.shape(), axes))?
            };
            vec![Some(broadcast_to(&gk, x.shape())?)]
        }
        Op::Extreme(x, axes, keepdims, out) => {
            // max/min reductions split the gradient evenly among ties
            // (PyTorch's amax/amin and full max()/min()).
            let ks = keep_shape(x.shape(), axes);
            let ok = detach(out).reshaped(ks.clone())?;
            let m = compare(CmpOp::Eq, &Arg::T(detach(x)), &Arg::T(ok))?.astype(x.dtype)?;
            let cnt = super::reduce::reduce(&m, axes, true, super::reduce::RKind::Sum)?;
            let gk = if *keepdims { g.clone() } else { reshape(g, ks)? };
            vec![Some(bin(Mul, &bin(Div, &gk, &cnt)?, &m)?)]
        }
        Op::Prod(x, axes, keepdims, _) => {
            // The product of the other elements, as PyTorch computes it:
            // with no zero that is prod / x; with one zero, the zero's slot
            // gets the product of the rest and the others 0; with two or
            // more, every slot gets 0 (never 0/0).
            let ks = keep_shape(x.shape(), axes);
            let gk = if *keepdims { g.clone() } else { reshape(g, ks)? };
            let zero = compare(CmpOp::Eq, &Arg::T(detach(x)), &Arg::Float(0.0))?;
            let nonzero = where_(&zero, &Arg::Float(1.0), &Arg::T(x.clone()))?;
            let rest = super::reduce::reduce(&nonzero, axes, true, super::reduce::RKind::Prod)?;
            let zeros = super::reduce::reduce(&zero.astype(x.dtype)?, axes, true, super::reduce::RKind::Sum)?;
            let none = compare(CmpOp::Eq, &Arg::T(zeros.clone()), &Arg::Float(0.0))?;
            let one = compare(CmpOp::Eq, &Arg::T(zeros), &Arg::Float(1.0))?;
            let only = super::kernels::zip::<bool, bool>(&one, &zero, |a, b| a && b)?;
            let picked = where_(&only, &Arg::T(rest.clone()), &Arg::Float(0.0))?;
            let d = where_(&none, &Arg::T(bin(Div, &rest, &nonzero)?), &Arg::T(picked))?;
            vec![Some(bin(Mul, &gk, &d)?)]
        }
        Op::Cumsum(x, axis) => {
            let total = super::reduce::reduce(g, &[*axis], true, super::reduce::RKind::Sum)?;
            let c = super::reduce::cumsum(g, Some(*axis))?;
            let r = bin(Add, &bin(Sub, &total, &c)?, g)?;
            vec![Some(r).filter(|_| x.ndim() > 0)]
        }
        Op::Reshape(x) => vec![Some(reshape(g, x.shape().to_vec())?)],
        Op::Permute(_, perm) => {
            let mut inv = vec![0usize; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                inv[p] = i;
            }
            vec![Some(permute(g, &inv)?)]
        }
        Op::Concat(parts, axis, sizes) => {
            let mut out = Vec::new();
            let mut start = 0usize;
            let shape = g.shape().to_vec();
            let outer: usize = shape[..*axis].iter().product();
            let inner: usize = shape[axis + 1..].iter().product();
            let total = shape[*axis];
            for (i, (p, &len)) in parts.iter().zip(sizes).enumerate() {
                out.push(want(need, i, || {
                    let mut idx = Vec::with_capacity(outer * len * inner);
                    for o in 0..outer {
                        for k in start..start + len {
                            for i in 0..inner {
                                idx.push((o * total + k) * inner + i);
                            }
                        }
                    }
                    gather(g, &idx, p.shape())
                })?);
                start += len;
            }
            out
        }
        Op::Gather(x, idx, _) => vec![Some(scatter(g, idx, x.shape())?)],
        Op::Scatter(v, idx, _) => vec![Some(gather(g, idx, v.shape())?)],
        Op::Matmul(a, b) => matmul_vjp(a, b, g, need)?,
        Op::Root(x, out) => {
            // Kink: where the result is 0 (the std of a constant) the
            // gradient is 0, as PyTorch's std gives (a bare `sqrt` keeps its
            // infinite slope at 0).
            let zero = compare(CmpOp::Eq, &Arg::T(detach(out)), &Arg::Float(0.0))?;
            let o = live(out, || super::arith::root(x))?;
            let safe = where_(&zero, &Arg::Float(1.0), &Arg::T(o))?;
            let q = bin(Div, g, &scal(Mul, &safe, 2.0)?)?;
            vec![want(need, 0, || where_(&zero, &Arg::Float(0.0), &Arg::T(q)))?]
        }
        Op::Norm(x, axes, keepdims, out) => {
            // PyTorch's rule: x * g / norm, and 0 where the norm is 0 (at
            // the origin, where the 2-norm has no derivative).
            let ks = keep_shape(x.shape(), axes);
            let gk = if *keepdims { g.clone() } else { reshape(g, ks.clone())? };
            let zero = compare(CmpOp::Eq, &Arg::T(detach(out).reshaped(ks.clone())?), &Arg::Float(0.0))?;
            let o = live(out, || {
                let ax: Vec<i64> = axes.iter().map(|&a| a as i64).collect();
                super::api::norm_of(x, Some(&ax), true)
            })?;
            let safe = where_(&zero, &Arg::Float(1.0), &Arg::T(reshape(&o, ks)?))?;
            let r = bin(Div, &bin(Mul, x, &gk)?, &safe)?;
            vec![want(need, 0, || where_(&zero, &Arg::Float(0.0), &Arg::T(r)))?]
        }
        Op::Roll(x, axis, shift) => {
            // Linear: roll back.
            let len = x.shape()[*axis];
            vec![want(need, 0, || {
                super::shape::roll(g, *axis, (len - shift) % len.max(1))
            })?]
        }
        Op::IndexAdd(x, axis, idx, _) => vec![
            // Linear in both: x passes through, each source slice takes the
            // gradient of the slot it was added into (duplicates each get it).
            want(need, 0, || sum_to(g, x.shape()))?,
            want(need, 1, || super::index::index_select(g, *axis, idx))?,
        ],
        Op::IndexSelect(x, axis, idx) => vec![want(need, 0, || {
            let z = Tensor::full(x.shape().to_vec(), 0.0, g.dtype)?;
            super::index::index_add_into(&z, *axis, idx, g)
        })?],
        Op::LogAddExp(a, b) => {
            // PyTorch's rule: d/da = 1 / (1 + exp(b - a)). A tie gives 0.5
            // to each side (also at +-inf ties: nan, as PyTorch gives, where
            // b - a is inf - inf); an infinite side takes all of it.
            let share = |this: &Tensor, other: &Tensor| -> VResult<Tensor> {
                let e = unary(UFn::Exp, &bin(Sub, other, this)?)?;
                bin(Div, g, &scal(Add, &e, 1.0)?)
            };
            vec![
                want(need, 0, || sum_to(&share(a, b)?, a.shape()))?,
                want(need, 1, || sum_to(&share(b, a)?, b.shape()))?,
            ]
        }
        Op::Softplus(x, beta, threshold) => {
            // sigmoid(beta * x) below the threshold; above it (beta * x >
            // threshold, where the result is x itself) exactly 1. At the
            // threshold the smooth branch applies, as in PyTorch.
            let (beta, threshold) = (*beta, *threshold);
            vec![want(need, 0, || {
                let linear = super::arith::softplus_linear(&detach(x), beta, threshold)?;
                let s = unary(UFn::Sigmoid, &scal(Mul, x, beta)?)?;
                where_(&linear, &Arg::T(g.clone()), &Arg::T(bin(Mul, g, &s)?))
            })?]
        }
        Op::Conv2d { x, w, b, window } => super::conv::conv2d_vjp(x, w, b.as_ref(), window, g, need)?,
        Op::Im2col(_, window) => vec![want(need, 0, || super::conv::col2im(g, window))?],
        Op::Col2im(_, window) => vec![want(need, 0, || super::conv::im2col(g, window))?],
        Op::ScatterReduce {
            x,
            src,
            targets,
            reduce,
            include_self,
            out,
        } => super::scatter::vjp(x, src, targets, *reduce, *include_self, out, g, need)?,
        Op::LstmSeq {
            xw,
            w_hh,
            saved,
            return_sequences,
        } => super::lstm::vjp(xw, w_hh, saved, *return_sequences, g, need)?,
    })
}

/// Whether a rule may compute a cotangent with plain kernels instead of
/// recorded operations: nothing is being recorded (a first-order backward
/// pass), or none of `ts` is traced.
pub(super) fn untraced(ts: &[&Tensor]) -> bool {
    PAUSED.with(|p| p.get()) || ts.iter().all(|t| t.node.is_none())
}

/// [`unary_vjp`] in one elementwise pass, where nothing needs recording and
/// the gradient and input share a float format; the same arithmetic in the
/// same order, so the same bits. `None` where the rule is composed instead.
fn direct_unary_vjp(f: UFn, x: &Tensor, out: &Tensor, g: &Tensor) -> Option<VResult<Tensor>> {
    if !untraced(&[g, x, out]) || g.dtype != x.dtype || g.shape() != x.shape() {
        return None;
    }
    if f == UFn::Gelu && g.dtype == DType::F32 {
        // The vectorised derivative (accurate to float32), then the product.
        let d = super::arith::gelu_f32(super::gelu::Gelu::Derivative, &detach(x));
        return Some(bin(BinOp::Mul, g, &d));
    }
    match g.dtype {
        DType::F64 => direct_unary_vjp_in::<f64>(f, &detach(x), &detach(out), g),
        DType::F32 => direct_unary_vjp_in::<f32>(f, &detach(x), &detach(out), g),
        _ => None,
    }
}

fn direct_unary_vjp_in<T: super::real::Real>(f: UFn, x: &Tensor, out: &Tensor, g: &Tensor) -> Option<VResult<Tensor>> {
    use super::kernels::zip;
    let two = T::ONE + T::ONE;
    Some(match f {
        UFn::Abs => zip::<T, T>(g, x, |g, x| g * x.sign()),
        UFn::Sqrt => zip::<T, T>(g, out, move |g, o| g / (o * two)),
        UFn::Log1p => zip::<T, T>(g, x, |g, x| g / (x + T::ONE)),
        UFn::Sin => zip::<T, T>(g, x, |g, x| g * x.cos()),
        UFn::Cos => zip::<T, T>(g, x, |g, x| -(g * x.sin())),
        UFn::Tan => zip::<T, T>(g, out, |g, o| g * (o * o + T::ONE)),
        UFn::Tanh => zip::<T, T>(g, out, |g, o| g * -(o * o - T::ONE)),
        UFn::Sigmoid => zip::<T, T>(g, out, |g, o| g * (o * -(o - T::ONE))),
        UFn::Erf => {
            let k = T::from_f64(std::f64::consts::FRAC_2_SQRT_PI);
            zip::<T, T>(g, x, move |g, x| g * (k * (-(x * x)).exp()))
        }
        UFn::Gelu => zip::<T, T>(g, x, |g, x| g * super::arith::gelu_grad(x)),
        _ => return None,
    })
}

/// The cotangent of a unary function's input. At a kink the derivative is
/// PyTorch's: `abs` has 0 at 0 (the sign), `floor`/`ceil`/`round`/`sign`
/// have 0 everywhere.
fn unary_vjp(f: UFn, x: &Tensor, out: &Tensor, g: &Tensor) -> VResult<Tensor> {
    use BinOp::*;
    let out = &match f {
        UFn::Sqrt | UFn::Exp | UFn::Tan | UFn::Tanh | UFn::Sigmoid => live(out, || unary(f, x))?,
        _ => out.clone(),
    };
    match f {
        UFn::Neg => unary(UFn::Neg, g),
        UFn::Abs => bin(Mul, g, &unary(UFn::Sign, &detach(x))?),
        UFn::Sqrt => bin(Div, g, &scal(Mul, out, 2.0)?),
        UFn::Exp => bin(Mul, g, out),
        UFn::Log => bin(Div, g, x),
        UFn::Log1p => bin(Div, g, &scal(Add, x, 1.0)?),
        UFn::Sin => bin(Mul, g, &unary(UFn::Cos, x)?),
        UFn::Cos => unary(UFn::Neg, &bin(Mul, g, &unary(UFn::Sin, x)?)?),
        UFn::Tan => bin(Mul, g, &scal(Add, &bin(Mul, out, out)?, 1.0)?),
        UFn::Tanh => bin(
            Mul,
            g,
            &scal(Sub, &bin(Mul, out, out)?, 1.0).and_then(|t| unary(UFn::Neg, &t))?,
        ),
        UFn::Sigmoid => bin(
            Mul,
            g,
            &bin(Mul, out, &scal(Sub, out, 1.0).and_then(|t| unary(UFn::Neg, &t))?)?,
        ),
        UFn::Floor | UFn::Ceil | UFn::Round | UFn::Sign => zeros_like(x),
        UFn::Erf => {
            let e = unary(UFn::Exp, &unary(UFn::Neg, &bin(Mul, x, x)?)?)?;
            bin(Mul, g, &scal(Mul, &e, std::f64::consts::FRAC_2_SQRT_PI)?)
        }
        UFn::Gelu => {
            // Φ(x) + x·φ(x) in recorded operations (a second derivative).
            let cdf = scal(
                Mul,
                &scal(
                    Add,
                    &unary(UFn::Erf, &scal(Mul, x, std::f64::consts::FRAC_1_SQRT_2)?)?,
                    1.0,
                )?,
                0.5,
            )?;
            let pdf = scal(
                Mul,
                &unary(UFn::Exp, &scal(Mul, &bin(Mul, x, x)?, -0.5)?)?,
                std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2 * 0.5,
            )?;
            bin(Mul, g, &bin(Add, &cdf, &bin(Mul, x, &pdf)?)?)
        }
    }
}

fn swap_last(t: &Tensor) -> VResult<Tensor> {
    let n = t.ndim();
    let mut perm: Vec<usize> = (0..n).collect();
    perm.swap(n - 2, n - 1);
    permute(t, &perm)
}

fn matmul_vjp(a: &Tensor, b: &Tensor, g: &Tensor, need: &[bool]) -> VResult<Vec<Option<Tensor>>> {
    use super::matmul::matmul;
    let a2 = if a.ndim() == 1 {
        reshape(a, vec![1, a.shape()[0]])?
    } else {
        a.clone()
    };
    let b2 = if b.ndim() == 1 {
        reshape(b, vec![b.shape()[0], 1])?
    } else {
        b.clone()
    };
    // g has the result shape; restore the lifted axes.
    let mut gs = g.shape().to_vec();
    if a.ndim() == 1 {
        let at = gs.len() - if b.ndim() == 1 { 0 } else { 1 };
        gs.insert(at, 1);
    }
    if b.ndim() == 1 {
        gs.push(1);
    }
    let g2 = reshape(g, gs)?;
    Ok(vec![
        want(need, 0, || {
            let ga = sum_to(&matmul(&g2, &swap_last(&b2)?)?, a2.shape())?;
            reshape(&ga, a.shape().to_vec())
        })?,
        want(need, 1, || {
            // A 2-D weight used by a batch of matrices: its gradient is one
            // product over all their rows, `(k, B·m) @ (B·m, n)`, not B
            // products summed afterwards.
            if b2.ndim() == 2 && a2.ndim() > 2 {
                let k = a2.shape()[a2.ndim() - 1];
                let rows = a2.size() / k.max(1);
                let n = g2.shape()[g2.ndim() - 1];
                if g2.size() == rows * n && a2.shape()[..a2.ndim() - 1] == g2.shape()[..g2.ndim() - 1] {
                    let af = reshape(&a2, vec![rows, k])?;
                    let gf = reshape(&g2, vec![rows, n])?;
                    let gb = matmul(&swap_last(&af)?, &gf)?;
                    return reshape(&gb, b.shape().to_vec());
                }
            }
            let gb = sum_to(&matmul(&swap_last(&a2)?, &g2)?, b2.shape())?;
            reshape(&gb, b.shape().to_vec())
        })?,
    ])
}

fn add_into(map: &mut HashMap<u64, Cot>, id: u64, g: Cot, lazy: bool) -> VResult<()> {
    let v = match map.remove(&id) {
        Some(prev) => super::cotangent::add(prev, g, lazy)?,
        None => g,
    };
    map.insert(id, v);
    Ok(())
}

/// The cotangents of `leaves` for the scalar `out` (seed 1).
/// `record_grads`: keep the tape while computing (for higher order).
pub fn backward(out: &Tensor, leaves: &[Tensor], record_grads: bool) -> VResult<Vec<Option<Tensor>>> {
    backward_with(out, leaves, record_grads, !record_grads)
}

/// [`backward`], choosing whether a first-order pass builds cotangent
/// expressions (`lazy`; the tests compare it with the eager rules).
pub(super) fn backward_with(
    out: &Tensor,
    leaves: &[Tensor],
    record_grads: bool,
    lazy: bool,
) -> VResult<Vec<Option<Tensor>>> {
    let Some(root) = &out.node else {
        return Ok(vec![None; leaves.len()]);
    };
    let leaf_ids: Vec<u64> = leaves.iter().filter_map(|l| l.node.as_ref().map(|n| n.id)).collect();
    let min_leaf = leaf_ids.iter().copied().min().unwrap_or(0);
    // Collect reachable nodes (only those newer than the oldest leaf can
    // depend on a leaf).
    let mut nodes: HashMap<u64, Arc<Node>> = HashMap::default();
    let mut stack = vec![root.clone()];
    while let Some(n) = stack.pop() {
        if n.id < min_leaf || nodes.contains_key(&n.id) {
            continue;
        }
        if !leaf_ids.contains(&n.id) {
            for t in inputs(&n.op) {
                if let Some(m) = &t.node {
                    stack.push(m.clone());
                }
            }
        }
        nodes.insert(n.id, n);
    }
    // Keep only the nodes a leaf flows into (inputs are older than their
    // node, so one pass in increasing id order decides each node after its
    // inputs); a tensor traced by an outer grad alone gets no cotangent.
    let mut order: Vec<u64> = nodes.keys().copied().collect();
    order.sort_unstable();
    for &id in &order {
        let Some(n) = nodes.get(&id) else { continue };
        let flows = leaf_ids.contains(&id)
            || inputs(&n.op)
                .iter()
                .any(|t| t.node.as_ref().is_some_and(|m| nodes.contains_key(&m.id)));
        if !flows {
            nodes.remove(&id);
        }
    }
    order.retain(|id| nodes.contains_key(id));
    order.reverse();
    let was = PAUSED.with(|p| p.replace(!record_grads));
    // A first-order pass keeps the cotangents of elementwise rules as
    // expressions, evaluated in one blocked pass where a tensor is needed
    // (cotangent.rs); a recorded one runs every rule eagerly.
    let lazy = lazy && !record_grads;
    let result = (|| {
        let mut grads: HashMap<u64, Cot> = HashMap::default();
        let seed = Tensor::full(out.shape().to_vec(), 1.0, out.dtype)?;
        grads.insert(root.id, Cot::Dense(seed));
        for id in order {
            if leaf_ids.contains(&id) {
                continue;
            }
            let Some(node) = nodes.get(&id) else { continue };
            let Some(g) = grads.remove(&id) else { continue };
            let ins = inputs(&node.op);
            let need: Vec<bool> = ins
                .iter()
                .map(|t| t.node.as_ref().is_some_and(|n| nodes.contains_key(&n.id)))
                .collect();
            let built = if lazy {
                super::cotangent::vjp(&node.op, &g, &need)
            } else {
                None
            };
            let gs: Vec<Option<Cot>> = match built {
                Some(gs) => gs?,
                None => vjp(&node.op, &g.into_tensor()?, &need)?
                    .into_iter()
                    .map(|t| t.map(Cot::Dense))
                    .collect(),
            };
            for (t, gi) in ins.iter().zip(gs) {
                if let (Some(n), Some(gi)) = (&t.node, gi) {
                    if nodes.contains_key(&n.id) {
                        add_into(&mut grads, n.id, gi, lazy)?;
                    }
                }
            }
        }
        leaves
            .iter()
            .map(|l| {
                l.node
                    .as_ref()
                    .and_then(|n| grads.get(&n.id).cloned())
                    .map(Cot::into_tensor)
                    .transpose()
            })
            .collect()
    })();
    PAUSED.with(|p| p.set(was));
    result
}

pub fn not_scalar(shape: &[usize]) -> crate::value::Exc {
    err(
        ErrorKind::TypeError,
        format!(
            "grad() needs a function that returns a scalar (a float or a 1-element tensor); it returned a tensor of shape {}",
            super::layout::shape_str(shape)
        ),
    )
}
