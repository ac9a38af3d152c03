//! `scatter_reduce` with PyTorch's semantics (`Tensor.scatter_reduce`), for
//! the `layers` module.
//!
//! `index` and `src` have as many dimensions as `x`; `index` is no larger
//! than `src` in any dimension, and no larger than `x` in any but `dim`.
//! Each element of `src` at a position `p` of `index`'s shape goes to the
//! position of `x` that is `p` with `p[dim]` replaced by `index[p]`; each
//! position of the result reduces the elements that land there (and `x`'s
//! own value with `include_self`), in row-major order of `index`. A
//! position nothing lands on keeps `x`'s value.
//!
//! Internally the source is flattened to the `m` elements `index` selects
//! (a recorded reshape or gather of `src`) and each gets the flat position
//! of `x` it lands at; the recorded [`Op::ScatterReduce`] works on those.
//!
//! Gradients (PyTorch's rules, except where noted): `sum` passes `g` to `x`
//! (0 where something landed and `include_self` is false) and gathers it
//! for `src`; `mean` divides by the count; `prod` multiplies by the product
//! of the other elements, zeros included (one zero: its slot gets the
//! product of the rest, the others 0; two or more: all 0); `amax`/`amin`
//! share `g` equally among the elements equal to the result. There `x`'s
//! value counts only when it took part (`include_self`, or nothing landed):
//! PyTorch also counts an `x` equal to the result when `include_self` is
//! false, though it gives it no gradient, so a tie between `x` and a
//! source element halves the source's gradient there and not here.
//!
//! Dtypes: the result has the promoted dtype of `x` and `src`; f64 computes
//! in f64, f32/f16/bf16 in f32, ints in i64 (wrapping, `mean` rounding down
//! as PyTorch does). Bool tensors are refused.

use super::arith::{compare, where_, Arg};
use super::autodiff::{bin, detach, gather, live, record, want, Op};
use super::core::Tensor;
use super::dtype::{DType, Kind};
use super::layout::shape_str;
use super::shape::reshape;
use super::storage::Scalar;
use crate::error::ErrorKind;
use crate::syntax::ast::{BinOp, CmpOp};
use crate::value::{err, VResult};
use std::sync::Arc;

/// The reduction of `scatter_reduce`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    Sum,
    Prod,
    Mean,
    Amax,
    Amin,
}

impl Reduce {
    pub fn parse(s: &str) -> VResult<Reduce> {
        Ok(match s {
            "sum" => Reduce::Sum,
            "prod" => Reduce::Prod,
            "mean" => Reduce::Mean,
            "amax" => Reduce::Amax,
            "amin" => Reduce::Amin,
            other => {
                return Err(err(
                    ErrorKind::ValueError,
                    format!("scatter_reduce() reduce must be 'sum', 'prod', 'mean', 'amax' or 'amin', not '{other}'"),
                ))
            }
        })
    }
}

fn shape_err(msg: String) -> crate::value::Exc {
    err(ErrorKind::ShapeError, msg)
}

/// `x.scatter_reduce(dim, index, src, reduce, include_self=include_self)`
/// (see the module docs).
pub fn scatter_reduce(
    x: &Tensor,
    dim: usize,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
    include_self: bool,
) -> VResult<Tensor> {
    let mode = Reduce::parse(reduce)?;
    if index.dtype.kind() != Kind::Int {
        return Err(err(
            ErrorKind::TypeError,
            format!(
                "scatter_reduce() index must be an int tensor, not {}",
                index.dtype.name()
            ),
        ));
    }
    let nd = x.ndim();
    if index.ndim() != nd || src.ndim() != nd {
        return Err(shape_err(format!(
            "scatter_reduce() expects index and src with as many dimensions as x ({nd}), got index of shape {} and src of shape {}",
            shape_str(index.shape()),
            shape_str(src.shape())
        )));
    }
    if dim >= nd.max(1) {
        return Err(err(
            ErrorKind::IndexError,
            format!("scatter_reduce() dim {dim} is out of range for a tensor of {nd} dimension(s)"),
        ));
    }
    // A 0-d tensor is one element along dim 0.
    let lift = |s: &[usize]| if nd == 0 { vec![1] } else { s.to_vec() };
    let (xs, is, ss) = (lift(x.shape()), lift(index.shape()), lift(src.shape()));
    for d in 0..xs.len() {
        if is[d] > ss[d] || (d != dim && is[d] > xs[d]) {
            return Err(shape_err(format!(
                "scatter_reduce() index of shape {} must be no larger than src (shape {}) in every dimension and than x (shape {}) in every dimension but {dim}",
                shape_str(index.shape()),
                shape_str(src.shape()),
                shape_str(x.shape())
            )));
        }
    }
    let ids: Vec<i64> = index.to_vec();
    let m = ids.len();
    let len = xs[dim];
    let (mut targets, mut srcpos) = (Vec::with_capacity(m), Vec::with_capacity(m));
    let mut p = vec![0usize; is.len()];
    for &i in &ids {
        if i < 0 || i as u64 >= len as u64 {
            return Err(err(
                ErrorKind::IndexError,
                format!("scatter_reduce() index {i} is out of bounds for dimension {dim} with size {len}"),
            ));
        }
        let (mut t, mut s) = (0usize, 0usize);
        for d in 0..is.len() {
            t = t * xs[d] + if d == dim { i as usize } else { p[d] };
            s = s * ss[d] + p[d];
        }
        targets.push(t);
        srcpos.push(s);
        // The next position of index's shape, row-major.
        for d in (0..is.len()).rev() {
            p[d] += 1;
            if p[d] < is[d] {
                break;
            }
            p[d] = 0;
        }
    }
    let flat = if is == ss {
        reshape(src, vec![m])?
    } else {
        gather(src, &srcpos, &[m])?
    };
    let xw = if nd == 0 { reshape(x, vec![1])? } else { x.clone() };
    let r = reduce_flat(&xw, &targets.into(), &flat, mode, include_self)?;
    if nd == 0 {
        reshape(&r, vec![])
    } else {
        Ok(r)
    }
}

/// Element arithmetic of the reductions.
trait Acc: Scalar {
    fn add(self, b: Self) -> Self;
    fn mul(self, b: Self) -> Self;
    fn mean(self, n: usize) -> Self;
    /// The larger (`max`) or smaller, a NaN winning.
    fn pick(self, b: Self, max: bool) -> Self;
}

macro_rules! acc_float {
    ($t:ty) => {
        impl Acc for $t {
            fn add(self, b: Self) -> Self {
                self + b
            }
            fn mul(self, b: Self) -> Self {
                self * b
            }
            fn mean(self, n: usize) -> Self {
                self / n as $t
            }
            fn pick(self, b: Self, max: bool) -> Self {
                if self.is_nan() {
                    self
                } else if b.is_nan() || (max && b > self) || (!max && b < self) {
                    b
                } else {
                    self
                }
            }
        }
    };
}
acc_float!(f64);
acc_float!(f32);

impl Acc for i64 {
    fn add(self, b: Self) -> Self {
        self.wrapping_add(b)
    }
    fn mul(self, b: Self) -> Self {
        self.wrapping_mul(b)
    }
    fn mean(self, n: usize) -> Self {
        self.div_euclid(n.max(1) as i64)
    }
    fn pick(self, b: Self, max: bool) -> Self {
        if max {
            self.max(b)
        } else {
            self.min(b)
        }
    }
}

fn kernel<T: Acc>(x: Vec<T>, targets: &[usize], s: &[T], mode: Reduce, include_self: bool) -> Vec<T> {
    let mut out = x;
    let mut cnt = vec![0usize; out.len()];
    for (&t, &v) in targets.iter().zip(s) {
        let (Some(o), Some(c)) = (out.get_mut(t), cnt.get_mut(t)) else {
            continue;
        };
        *o = if *c == 0 && !include_self {
            v
        } else {
            match mode {
                Reduce::Sum | Reduce::Mean => o.add(v),
                Reduce::Prod => o.mul(v),
                Reduce::Amax => o.pick(v, true),
                Reduce::Amin => o.pick(v, false),
            }
        };
        *c += 1;
    }
    if mode == Reduce::Mean {
        for (o, &c) in out.iter_mut().zip(&cnt) {
            if c > 0 {
                *o = o.mean(c + include_self as usize);
            }
        }
    }
    out
}

/// The reduction of the flat source `s` into `x` at `targets` (in range),
/// recorded when `x` or `s` is traced.
fn reduce_flat(x: &Tensor, targets: &Arc<[usize]>, s: &Tensor, mode: Reduce, include_self: bool) -> VResult<Tensor> {
    let d = DType::promote(x.dtype, s.dtype).check_supported()?;
    let shape = x.shape().to_vec();
    let mut r = match d {
        DType::F64 => Tensor::from_vec(
            kernel::<f64>(x.to_vec(), targets, &s.to_vec(), mode, include_self),
            shape,
        ),
        DType::F32 | DType::F16 | DType::BF16 => Tensor::from_vec(
            kernel::<f32>(x.to_vec(), targets, &s.to_vec(), mode, include_self),
            shape,
        )
        .cast(d)?,
        DType::I64 | DType::I32 => Tensor::from_vec(
            kernel::<i64>(x.to_vec(), targets, &s.to_vec(), mode, include_self),
            shape,
        )
        .cast(d)?,
        other => {
            return Err(err(
                ErrorKind::TypeError,
                format!(
                    "scatter_reduce() reduces int or float tensors, not {} (convert first with .astype(f32))",
                    other.name()
                ),
            ))
        }
    };
    if (x.node.is_some() || s.node.is_some()) && d.is_float() {
        let out = r.clone();
        r.node = record(
            Op::ScatterReduce {
                x: x.clone(),
                src: s.clone(),
                targets: targets.clone(),
                reduce: mode,
                include_self,
                out,
            },
            &r,
        );
    }
    Ok(r)
}

/// The cotangents of `x` and the flat source `s` of a `scatter_reduce`
/// whose result `out` has the cotangent `g` (see the module docs), with
/// recorded operations (a gather of `g` at `targets` for the source; masks
/// and counts as constants), so they can be differentiated again.
#[allow(clippy::too_many_arguments)]
pub(super) fn vjp(
    x: &Tensor,
    s: &Tensor,
    targets: &Arc<[usize]>,
    mode: Reduce,
    include_self: bool,
    out: &Tensor,
    g: &Tensor,
    need: &[bool],
) -> VResult<Vec<Option<Tensor>>> {
    use BinOp::{Div, Mul};
    let xshape = x.shape().to_vec();
    let m = targets.len();
    let mut cnt = vec![0usize; x.size()];
    for &t in targets.iter() {
        if let Some(c) = cnt.get_mut(t) {
            *c += 1;
        }
    }
    let fl = g.dtype;
    let konst = |v: Vec<f64>, shape: &[usize]| Tensor::from_vec(v, shape.to_vec()).cast(fl);
    let mask = |v: Vec<bool>, shape: &[usize]| Tensor::from_vec(v, shape.to_vec());
    let to_src = |v: &Tensor| gather(v, targets, &[m]);
    let touched = mask(cnt.iter().map(|&c| c > 0).collect(), &xshape);
    // Where something landed and x took no part, x gets nothing.
    let pass = || -> VResult<Tensor> { where_(&touched, &Arg::Float(0.0), &Arg::T(g.clone())) };
    let count = |c: usize| (c + include_self as usize).max(1) as f64;
    Ok(match mode {
        Reduce::Sum => vec![
            want(need, 0, || if include_self { Ok(g.clone()) } else { pass() })?,
            want(need, 1, || to_src(g))?,
        ],
        Reduce::Mean => {
            let n = konst(cnt.iter().map(|&c| count(c)).collect(), &xshape)?;
            vec![
                want(need, 0, || if include_self { bin(Div, g, &n) } else { pass() })?,
                want(need, 1, || to_src(&bin(Div, g, &n)?))?,
            ]
        }
        Reduce::Amax | Reduce::Amin => {
            let (xv, sv, rv): (Vec<f64>, Vec<f64>, Vec<f64>) = (x.to_vec(), s.to_vec(), out.to_vec());
            let xeq: Vec<bool> = (0..xv.len())
                .map(|t| (include_self || cnt[t] == 0) && xv[t] == rv[t])
                .collect();
            let seq: Vec<bool> = targets
                .iter()
                .zip(&sv)
                .map(|(&t, &v)| rv.get(t).is_some_and(|&r| r == v))
                .collect();
            let mut n: Vec<f64> = xeq.iter().map(|&e| e as u8 as f64).collect();
            for (&t, &e) in targets.iter().zip(&seq) {
                if let (Some(c), true) = (n.get_mut(t), e) {
                    *c += 1.0;
                }
            }
            let n = konst(n.into_iter().map(|c| c.max(1.0)).collect(), &xshape)?;
            let gd = bin(Div, g, &n)?;
            let zero = Arg::Float(0.0);
            vec![
                want(need, 0, || where_(&mask(xeq, &xshape), &Arg::T(gd.clone()), &zero))?,
                want(need, 1, || where_(&mask(seq, &[m]), &Arg::T(to_src(&gd)?), &zero))?,
            ]
        }
        Reduce::Prod => {
            // PyTorch's rule: the product of the other elements, computed
            // with zeros masked so a single zero gets the product of the rest.
            let one = Arg::Float(1.0);
            vec![
                want(need, 0, || {
                    if !include_self {
                        return pass();
                    }
                    let zero = compare(CmpOp::Eq, &Arg::T(detach(x)), &Arg::Float(0.0))?;
                    let masked = where_(&zero, &one, &Arg::T(x.clone()))?;
                    let others = reduce_flat(&masked, targets, s, Reduce::Prod, true)?;
                    bin(Div, &bin(Mul, g, &others)?, &masked)
                })?,
                want(need, 1, || {
                    let sv: Vec<f64> = s.to_vec();
                    let mut zeros = vec![0usize; x.size()];
                    for (&t, &v) in targets.iter().zip(&sv) {
                        if let (Some(z), true) = (zeros.get_mut(t), v == 0.0) {
                            *z += 1;
                        }
                    }
                    let is_zero = mask(sv.iter().map(|&v| v == 0.0).collect(), &[m]);
                    let single = mask(
                        targets
                            .iter()
                            .zip(&sv)
                            .map(|(&t, &v)| v == 0.0 && zeros.get(t) == Some(&1))
                            .collect(),
                        &[m],
                    );
                    let masked = where_(&single, &one, &Arg::T(s.clone()))?;
                    let rest = reduce_flat(x, targets, &masked, Reduce::Prod, include_self)?;
                    let result = live(out, || reduce_flat(x, targets, s, Reduce::Prod, include_self))?;
                    let at_zero = to_src(&bin(Mul, g, &rest)?)?;
                    let safe = where_(&is_zero, &one, &Arg::T(s.clone()))?;
                    let elsewhere = bin(Div, &to_src(&bin(Mul, g, &result)?)?, &safe)?;
                    where_(&single, &Arg::T(at_zero), &Arg::T(elsewhere))
                })?,
            ]
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::autodiff::{backward, leaf};
    use super::super::reduce::{reduce, RKind};
    use super::super::test_support::{ok, randv};
    use super::*;

    fn t(v: Vec<f64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape.to_vec())
    }

    fn ints(v: &[i64], shape: &[usize]) -> Tensor {
        Tensor::from_vec(v.to_vec(), shape.to_vec())
    }

    fn vals(t: &Tensor) -> Vec<f64> {
        t.to_vec()
    }

    const MODES: [&str; 5] = ["sum", "prod", "mean", "amax", "amin"];

    #[test]
    fn the_specs_examples() {
        let z = t(vec![0.0; 3], &[3]);
        let r = ok(scatter_reduce(
            &z,
            0,
            &ints(&[0, 1, 0, 1], &[4]),
            &t(vec![1.0, 5.0, 3.0, 2.0], &[4]),
            "amax",
            false,
        ));
        assert_eq!(vals(&r), vec![3.0, 5.0, 0.0]);
        let r = ok(scatter_reduce(
            &z,
            0,
            &ints(&[0, 1, 0, 1, 2], &[5]),
            &t(vec![1.0, 5.0, 3.0, 2.0, 4.0], &[5]),
            "mean",
            false,
        ));
        assert_eq!(vals(&r), vec![2.0, 3.5, 4.0]);
        let two = t(vec![2.0; 3], &[3]);
        let r = ok(scatter_reduce(
            &two,
            0,
            &ints(&[0, 1, 0, 1], &[4]),
            &t(vec![1.0, 5.0, 3.0, 2.0], &[4]),
            "prod",
            true,
        ));
        assert_eq!(vals(&r), vec![6.0, 20.0, 2.0]);
        // grad of s -> (scatter_reduce(zeros, 0, [0,1,0,1], s, amax, false) * [1,2,3]).sum() at [3,5,3,2].
        let s = leaf(&t(vec![3.0, 5.0, 3.0, 2.0], &[4]));
        let r = ok(scatter_reduce(&z, 0, &ints(&[0, 1, 0, 1], &[4]), &s, "amax", false));
        let p = ok(bin(BinOp::Mul, &r, &t(vec![1.0, 2.0, 3.0], &[3])));
        let loss = ok(reduce(&p, &[0], false, RKind::Sum));
        let g = ok(backward(&loss, &[s], false)).pop().flatten();
        assert_eq!(g.as_ref().map(vals), Some(vec![0.5, 2.0, 0.5, 0.0]));
    }

    /// PyTorch's semantics by their definition, for 2-D tensors.
    #[allow(clippy::too_many_arguments)]
    fn naive(
        x: &[f64],
        xs: [usize; 2],
        dim: usize,
        idx: &[i64],
        is: [usize; 2],
        src: &[f64],
        ss: [usize; 2],
        mode: &str,
        include_self: bool,
    ) -> Vec<f64> {
        let mut groups: Vec<Vec<f64>> = x.iter().map(|&v| if include_self { vec![v] } else { vec![] }).collect();
        for a in 0..is[0] {
            for b in 0..is[1] {
                let i = idx[a * is[1] + b] as usize;
                let (ta, tb) = if dim == 0 { (i, b) } else { (a, i) };
                groups[ta * xs[1] + tb].push(src[a * ss[1] + b]);
            }
        }
        groups
            .iter()
            .enumerate()
            .map(|(k, g)| {
                if g.is_empty() {
                    return x[k];
                }
                match mode {
                    "sum" => g.iter().sum(),
                    "prod" => g.iter().product(),
                    "mean" => g.iter().sum::<f64>() / g.len() as f64,
                    "amax" => g.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    _ => g.iter().copied().fold(f64::INFINITY, f64::min),
                }
            })
            .collect()
    }

    #[test]
    fn two_dimensional_forward_matches_the_definition() {
        // x (3, 4); index (2, 3) smaller than src (2, 4); along dim 0 and dim 1.
        let xv = randv(12, 1, -2.0, 2.0);
        let sv = randv(8, 2, -2.0, 2.0);
        let idx0 = [2i64, 0, 2, 2, 1, 0];
        let idx1 = [3i64, 3, 0, 1, 3, 2];
        for (dim, idx) in [(0usize, idx0), (1, idx1)] {
            for mode in MODES {
                for include_self in [true, false] {
                    let want = naive(&xv, [3, 4], dim, &idx, [2, 3], &sv, [2, 4], mode, include_self);
                    for d in [DType::F64, DType::F32] {
                        let x = ok(t(xv.clone(), &[3, 4]).cast(d));
                        let s = ok(t(sv.clone(), &[2, 4]).cast(d));
                        let r = ok(scatter_reduce(&x, dim, &ints(&idx, &[2, 3]), &s, mode, include_self));
                        assert_eq!(r.dtype, d);
                        let tol = if d == DType::F64 { 1e-12 } else { 1e-5 };
                        for (i, (a, e)) in vals(&r).iter().zip(&want).enumerate() {
                            assert!(
                                (a - e).abs() <= tol,
                                "dim {dim} {mode} include_self={include_self} {d:?} [{i}]: {a} vs {e}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn ints_and_zero_d() {
        let x = ints(&[10, 0, 7], &[3]);
        let r = ok(scatter_reduce(
            &x,
            0,
            &ints(&[0, 0, 1], &[3]),
            &ints(&[1, 2, -3], &[3]),
            "mean",
            true,
        ));
        assert_eq!(r.dtype, DType::I64);
        // (10 + 1 + 2) / 3 = 4 (floor), (0 - 3) / 2 = -2 (floor of -1.5).
        assert_eq!(r.to_vec::<i64>(), vec![4, -2, 7]);
        let r = ok(scatter_reduce(
            &t(vec![1.0], &[]),
            0,
            &ints(&[0], &[]),
            &t(vec![4.0], &[]),
            "sum",
            true,
        ));
        assert_eq!(r.shape(), &[] as &[usize]);
        assert_eq!(vals(&r), vec![5.0]);
        // An empty index leaves x as it is.
        let r = ok(scatter_reduce(
            &t(vec![1.0, 2.0], &[2]),
            0,
            &ints(&[], &[0]),
            &t(vec![], &[0]),
            "amax",
            false,
        ));
        assert_eq!(vals(&r), vec![1.0, 2.0]);
    }

    /// Gradients of sum(scatter_reduce(x, ...) * w) in x and src against central differences.
    fn fd_modes(x: &Tensor, dim: usize, idx: &Tensor, src: &Tensor, mode: &str, include_self: bool) {
        let (xl, sl) = (leaf(x), leaf(src));
        let out = ok(scatter_reduce(&xl, dim, idx, &sl, mode, include_self));
        let w = t(randv(out.size(), 99, 0.5, 1.5), out.shape());
        let wsum = |o: &Tensor| -> f64 { vals(o).iter().zip(vals(&w)).map(|(a, b)| a * b).sum() };
        let p = ok(bin(BinOp::Mul, &out, &w));
        let all: Vec<usize> = (0..p.ndim()).collect();
        let loss = ok(reduce(&p, &all, false, RKind::Sum));
        let gs = ok(backward(&loss, &[xl, sl], false));
        for (k, base) in [x, src].into_iter().enumerate() {
            let g: Vec<f64> = gs[k].as_ref().map(vals).unwrap_or_else(|| vec![0.0; base.size()]);
            let bv = vals(base);
            for i in 0..bv.len() {
                let at = |delta: f64| {
                    let mut v = bv.clone();
                    v[i] += delta;
                    let moved = t(v, base.shape());
                    let (a, b) = if k == 0 { (&moved, src) } else { (x, &moved) };
                    wsum(&ok(scatter_reduce(a, dim, idx, b, mode, include_self)))
                };
                let eps = 1e-6;
                let num = (at(eps) - at(-eps)) / (2.0 * eps);
                assert!(
                    (num - g[i]).abs() <= 1e-5 * (1.0 + num.abs()),
                    "{mode} include_self={include_self}: d/d({})[{i}] analytic {} vs numeric {num}",
                    ["x", "src"][k],
                    g[i]
                );
            }
        }
    }

    #[test]
    fn gradients_match_finite_differences_in_every_mode() {
        let x = t(randv(12, 5, 0.5, 2.0), &[3, 4]);
        let src = t(randv(8, 6, 0.5, 2.0), &[2, 4]);
        for mode in MODES {
            for include_self in [true, false] {
                fd_modes(&x, 0, &ints(&[2, 0, 2, 2, 1, 0], &[2, 3]), &src, mode, include_self);
                fd_modes(&x, 1, &ints(&[3, 3, 0, 1, 3, 3], &[2, 3]), &src, mode, include_self);
                fd_modes(
                    &x,
                    1,
                    &ints(&[3, 3, 0, 1, 3, 2, 0, 0], &[2, 4]),
                    &src,
                    mode,
                    include_self,
                );
            }
        }
        // prod through zeros: one zero in a group (x's or a source's), two zeros.
        let x1 = t(vec![2.0, 0.0, 1.5, 3.0], &[4]);
        let s1 = t(vec![0.0, 1.5, 2.5, 0.0, 0.5, 0.0, 3.0], &[7]);
        let idx = ints(&[0, 0, 1, 2, 2, 3, 3], &[7]);
        for include_self in [true, false] {
            fd_modes(&x1, 0, &idx, &s1, "prod", include_self);
        }
    }

    #[test]
    fn ties_share_the_gradient() {
        // amax with x taking part: x = 3 ties with one source element.
        for (include_self, want_x, want_s) in [
            (true, vec![0.5, 1.0], vec![0.5, 0.0, 0.0]),
            (false, vec![0.0, 1.0], vec![1.0, 0.0, 0.0]),
        ] {
            let x = leaf(&t(vec![3.0, 7.0], &[2]));
            let s = leaf(&t(vec![3.0, 1.0, 2.0], &[3]));
            let r = ok(scatter_reduce(&x, 0, &ints(&[0, 0, 0], &[3]), &s, "amax", include_self));
            assert_eq!(vals(&r), vec![3.0, 7.0]);
            let loss = ok(reduce(&r, &[0], false, RKind::Sum));
            let gs = ok(backward(&loss, &[x, s], false));
            assert_eq!(gs[0].as_ref().map(vals), Some(want_x), "include_self={include_self}");
            assert_eq!(gs[1].as_ref().map(vals), Some(want_s), "include_self={include_self}");
        }
        // amin: three-way tie among sources.
        let s = leaf(&t(vec![1.0, 1.0, 1.0, 4.0], &[4]));
        let r = ok(scatter_reduce(
            &t(vec![0.0], &[1]),
            0,
            &ints(&[0, 0, 0, 0], &[4]),
            &s,
            "amin",
            false,
        ));
        let loss = ok(reduce(&r, &[0], false, RKind::Sum));
        let g = ok(backward(&loss, &[s], false)).pop().flatten();
        let third = 1.0 / 3.0;
        assert_eq!(g.as_ref().map(vals), Some(vec![third, third, third, 0.0]));
    }

    #[test]
    fn prod_second_order() {
        // d²/dx² of prod at a position with x and two sources: 0 in x (linear), and
        // d/ds1 d/dx = s2 (the rules are recorded operations).
        let x = leaf(&t(vec![2.0], &[1]));
        let s = leaf(&t(vec![3.0, 5.0], &[2]));
        let r = ok(scatter_reduce(&x, 0, &ints(&[0, 0], &[2]), &s, "prod", true));
        let loss = ok(reduce(&r, &[0], false, RKind::Sum));
        let gx = ok(backward(&loss, std::slice::from_ref(&x), true)).pop().flatten();
        let gx = gx.unwrap_or_else(|| panic!("no gradient"));
        assert_eq!(vals(&gx), vec![15.0]);
        let l2 = ok(reduce(&gx, &[0], false, RKind::Sum));
        let g2 = ok(backward(&l2, &[s], false)).pop().flatten();
        assert_eq!(g2.as_ref().map(vals), Some(vec![5.0, 3.0]));
    }

    fn kind_msg<T>(r: VResult<T>) -> (ErrorKind, String) {
        match r {
            Ok(_) => panic!("expected an error"),
            Err(e) => (e.kind, e.message.to_string()),
        }
    }

    #[test]
    fn errors() {
        let z = t(vec![0.0; 3], &[3]);
        let s = t(vec![1.0, 2.0], &[2]);
        let (k, m) = kind_msg(scatter_reduce(&z, 0, &ints(&[0, 3], &[2]), &s, "sum", true));
        assert_eq!(k, ErrorKind::IndexError);
        assert!(m.contains("index 3") && m.contains("size 3"), "{m}");
        let (k, m) = kind_msg(scatter_reduce(&z, 0, &ints(&[-1, 0], &[2]), &s, "sum", true));
        assert_eq!(k, ErrorKind::IndexError);
        assert!(m.contains("index -1"), "{m}");
        let (k, m) = kind_msg(scatter_reduce(&z, 0, &ints(&[0, 1], &[2]), &s, "max", true));
        assert_eq!(k, ErrorKind::ValueError);
        assert!(m.contains("'max'"), "{m}");
        let (k, _) = kind_msg(scatter_reduce(&z, 0, &t(vec![0.0, 1.0], &[2]), &s, "sum", true));
        assert_eq!(k, ErrorKind::TypeError);
        let (k, _) = kind_msg(scatter_reduce(&z, 1, &ints(&[0, 1], &[2]), &s, "sum", true));
        assert_eq!(k, ErrorKind::IndexError);
        let (k, _) = kind_msg(scatter_reduce(&z, 0, &ints(&[0, 1, 2], &[3]), &s, "sum", true));
        assert_eq!(k, ErrorKind::ShapeError);
        let (k, _) = kind_msg(scatter_reduce(
            &z,
            0,
            &ints(&[0, 1], &[1, 2]),
            &t(vec![1.0, 2.0], &[1, 2]),
            "sum",
            true,
        ));
        assert_eq!(k, ErrorKind::ShapeError);
        let m2 = t(vec![0.0; 4], &[2, 2]);
        let (k, _) = kind_msg(scatter_reduce(
            &m2,
            0,
            &ints(&[0, 1, 0], &[1, 3]),
            &t(vec![1.0; 3], &[1, 3]),
            "sum",
            true,
        ));
        assert_eq!(k, ErrorKind::ShapeError);
        let b = Tensor::from_vec(vec![true, false, true], vec![3]);
        let (k, _) = kind_msg(scatter_reduce(
            &b,
            0,
            &ints(&[0], &[1]),
            &Tensor::from_vec(vec![true], vec![1]),
            "sum",
            true,
        ));
        assert_eq!(k, ErrorKind::TypeError);
    }
}
