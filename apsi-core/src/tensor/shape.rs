//! Shape operations: reshape, transpose, squeeze, expand_dims, concat,
//! stack, and the reverse of broadcasting (`sum_to`) that autodiff uses.

use super::autodiff::{record, Op};
use super::core::Tensor;
use super::dtype::DType;
use super::layout::{checked_size, shape_str, Layout};
use crate::error::ErrorKind;
use crate::value::{err, VResult};

/// Resolves a requested shape with at most one `-1` against `size`.
pub fn resolve_shape(want: &[i64], size: usize, from: &[usize]) -> VResult<Vec<usize>> {
    let mut unknown = None;
    let mut known = 1usize;
    for (i, &d) in want.iter().enumerate() {
        if d == -1 {
            if unknown.is_some() {
                return Err(err(ErrorKind::ValueError, "reshape() allows only one -1 dimension"));
            }
            unknown = Some(i);
        } else if d < 0 {
            return Err(err(
                ErrorKind::ValueError,
                format!("reshape() dimension {d} is negative"),
            ));
        } else {
            known = known
                .checked_mul(d as usize)
                .ok_or_else(|| err(ErrorKind::ValueError, "reshape() shape is too large"))?;
        }
    }
    let mut out: Vec<usize> = want.iter().map(|&d| d.max(0) as usize).collect();
    if let Some(i) = unknown {
        if known == 0 || !size.is_multiple_of(known) {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "cannot reshape a tensor of shape {} (size {size}) into shape {:?} ",
                    shape_str(from),
                    want
                )
                .trim_end()
                .to_string(),
            ));
        }
        out[i] = size / known;
    }
    Ok(out)
}

pub fn reshape(t: &Tensor, shape: Vec<usize>) -> VResult<Tensor> {
    let mut r = t.reshaped(shape)?;
    if t.node.is_some() {
        r.node = record(Op::Reshape(t.clone()), &r);
    }
    Ok(r)
}

/// Axes permuted (`transpose(axes)`; none reverses them).
pub fn permute(t: &Tensor, perm: &[usize]) -> VResult<Tensor> {
    let n = t.ndim();
    let mut seen = vec![false; n];
    if perm.len() != n {
        return Err(err(
            ErrorKind::ValueError,
            format!("transpose() axes must list all {n} axes once"),
        ));
    }
    for &p in perm {
        if p >= n || seen[p] {
            return Err(err(
                ErrorKind::ValueError,
                format!("transpose() axes must list all {n} axes once"),
            ));
        }
        seen[p] = true;
    }
    let mut r = t.view(t.layout.permuted(perm));
    if t.node.is_some() {
        r.node = record(Op::Permute(t.clone(), perm.to_vec()), &r);
    }
    Ok(r)
}

pub fn reversed_axes(n: usize) -> Vec<usize> {
    (0..n).rev().collect()
}

pub fn squeeze(t: &Tensor, axes: Option<Vec<usize>>) -> VResult<Tensor> {
    let shape: Vec<usize> = match &axes {
        None => t.shape().iter().copied().filter(|&d| d != 1).collect(),
        Some(ax) => {
            for &a in ax {
                if t.shape()[a] != 1 {
                    return Err(err(
                        ErrorKind::ValueError,
                        format!("cannot squeeze axis {a}: its length is {}, not 1", t.shape()[a]),
                    ));
                }
            }
            t.shape()
                .iter()
                .enumerate()
                .filter(|(i, _)| !ax.contains(i))
                .map(|(_, &d)| d)
                .collect()
        }
    };
    reshape(t, shape)
}

pub fn expand_dims(t: &Tensor, axis: i64) -> VResult<Tensor> {
    let n = t.ndim() as i64 + 1;
    let a = if axis < 0 { axis + n } else { axis };
    if a < 0 || a >= n {
        return Err(err(
            ErrorKind::IndexError,
            format!("axis {axis} is out of bounds for a tensor of dimension {n}"),
        ));
    }
    let mut shape = t.shape().to_vec();
    shape.insert(a as usize, 1);
    reshape(t, shape)
}

/// `concat(ts, axis)`.
pub fn concat(ts: &[Tensor], axis: i64) -> VResult<Tensor> {
    let first = ts
        .first()
        .ok_or_else(|| err(ErrorKind::ValueError, "concat() needs at least one tensor"))?;
    let nd = first.ndim();
    if nd == 0 {
        return Err(err(
            ErrorKind::ValueError,
            "concat() cannot join 0-d tensors (use stack)",
        ));
    }
    let ax = super::layout::norm_axis(axis, nd)?;
    let mut dtype = first.dtype;
    let mut total = 0usize;
    for t in ts {
        if t.ndim() != nd
            || t.shape()
                .iter()
                .enumerate()
                .any(|(i, &d)| i != ax && d != first.shape()[i])
        {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "concat() shapes {} and {} differ outside axis {ax}",
                    shape_str(first.shape()),
                    shape_str(t.shape())
                ),
            ));
        }
        dtype = DType::promote(dtype, t.dtype);
        total += t.shape()[ax];
    }
    let mut shape = first.shape().to_vec();
    shape[ax] = total;
    let outer: usize = shape[..ax].iter().product();
    let inner: usize = shape[ax + 1..].iter().product();
    checked_size(&shape)?;
    let parts: Vec<Tensor> = ts
        .iter()
        .map(|t| super::arith::Arg::T(t.clone()).to_tensor(dtype))
        .collect::<VResult<_>>()?;
    let mut r = crate::with_dtype!(dtype, T => {
        let vs: Vec<Vec<T>> = parts.iter().map(|p| p.to_vec::<T>()).collect();
        let mut out: Vec<T> = Vec::with_capacity(shape.iter().product());
        for o in 0..outer {
            for (p, v) in parts.iter().zip(&vs) {
                let w = p.shape()[ax] * inner;
                if let Some(s) = v.get(o * w..(o + 1) * w) {
                    out.extend_from_slice(s);
                }
            }
        }
        Tensor::from_vec(out, shape.clone())
    }, other => return super::codec::narrow::concat(ts, axis, dtype));
    if ts.iter().any(|t| t.node.is_some()) && dtype.is_float() {
        let sizes = ts.iter().map(|t| t.shape()[ax]).collect();
        r.node = record(Op::Concat(parts, ax, sizes), &r);
    }
    Ok(r)
}

/// `stack(ts, axis)`: a new axis.
pub fn stack(ts: &[Tensor], axis: i64) -> VResult<Tensor> {
    let first = ts
        .first()
        .ok_or_else(|| err(ErrorKind::ValueError, "stack() needs at least one tensor"))?;
    for t in ts {
        if t.shape() != first.shape() {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "stack() needs tensors of one shape, found {} and {}",
                    shape_str(first.shape()),
                    shape_str(t.shape())
                ),
            ));
        }
    }
    let n = first.ndim() as i64 + 1;
    let a = if axis < 0 { axis + n } else { axis };
    let expanded: Vec<Tensor> = ts.iter().map(|t| expand_dims(t, a)).collect::<VResult<_>>()?;
    concat(&expanded, a)
}

/// Sums `g` down to `shape` (undoing a broadcast).
pub fn sum_to(g: &Tensor, shape: &[usize]) -> VResult<Tensor> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let lead = g.ndim() - shape.len();
    let mut axes: Vec<usize> = (0..lead).collect();
    for (i, &d) in shape.iter().enumerate() {
        if d == 1 && g.shape()[lead + i] != 1 {
            axes.push(lead + i);
        }
    }
    let s = super::reduce::reduce(g, &axes, true, super::reduce::RKind::Sum)?;
    reshape(&s, shape.to_vec())
}

/// `g` broadcast (materialised) to `shape`.
pub fn broadcast_to(g: &Tensor, shape: &[usize]) -> VResult<Tensor> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    if g.node.is_none() {
        // One pass, no addition (a traced `g` goes through `+` so that a
        // higher-order grad sees the broadcast).
        if super::layout::broadcast_shapes(g.shape(), shape)?.as_slice() == shape {
            super::layout::checked_size(shape)?;
            let dense = crate::with_dtype!(g.dtype, T => {
                Some(Tensor::from_vec(super::kernels::expand_to::<T>(g, shape), shape.to_vec()))
            }, other => None);
            if let Some(t) = dense {
                return Ok(t);
            }
        }
    }
    let z = Tensor::full(shape.to_vec(), 0.0, g.dtype)?;
    super::arith::binary_same(crate::syntax::ast::BinOp::Add, g, &z)
}

pub fn layout_of(shape: Vec<usize>) -> Layout {
    Layout::contiguous(shape)
}

/// `roll` along one axis by `shift` in `0..len` (the elements move to
/// higher indices and wrap around). Any layout, every dtype.
pub fn roll(t: &Tensor, axis: usize, shift: usize) -> VResult<Tensor> {
    let shape = t.shape().to_vec();
    let len = shape[axis];
    let s = if len == 0 { 0 } else { shift % len };
    let outer: usize = shape[..axis].iter().product();
    let block = len * shape[axis + 1..].iter().product::<usize>();
    // Each outer block of `len` slices: its last `s` slices first.
    let cut = block - block / len.max(1) * s;
    let mut r = crate::with_dtype!(t.dtype, T => {
        let v: Vec<T> = t.to_vec();
        let mut out: Vec<T> = Vec::with_capacity(v.len());
        if block > 0 {
            for b in v.chunks(block).take(outer) {
                out.extend_from_slice(&b[cut..]);
                out.extend_from_slice(&b[..cut]);
            }
        }
        Tensor::from_vec(out, shape.clone())
    }, other => {
        // Packed formats: the same permutation of storage offsets.
        let offs = t.layout.offsets();
        let mut moved = Vec::with_capacity(offs.len());
        if block > 0 {
            for b in offs.chunks(block) {
                moved.extend_from_slice(&b[cut..]);
                moved.extend_from_slice(&b[..cut]);
            }
        }
        super::codec::narrow::gather(t, &moved, shape.clone())
    });
    if t.node.is_some() && t.dtype.is_float() {
        r.node = record(Op::Roll(t.clone(), axis, s), &r);
    }
    Ok(r)
}

/// NumPy's `roll(x, shift, axis)`: `shifts` and `axes` pair up (one of
/// them may be a single value, repeated for the other); `axes` `None`
/// rolls the flattened tensor and restores the shape.
pub fn roll_axes(t: &Tensor, shifts: &[i64], axes: Option<&[i64]>) -> VResult<Tensor> {
    let Some(axes) = axes else {
        let total = shifts.iter().fold(0i64, |a, &s| a.wrapping_add(s));
        let flat = reshape(t, vec![t.size()])?;
        let n = t.size() as i64;
        let r = roll(&flat, 0, if n == 0 { 0 } else { total.rem_euclid(n) as usize })?;
        return reshape(&r, t.shape().to_vec());
    };
    let pairs: Vec<(i64, i64)> = match (shifts.len(), axes.len()) {
        (a, b) if a == b => shifts.iter().copied().zip(axes.iter().copied()).collect(),
        (1, _) => axes.iter().map(|&a| (shifts[0], a)).collect(),
        (_, 1) => shifts.iter().map(|&s| (s, axes[0])).collect(),
        (a, b) => {
            return Err(err(
                ErrorKind::ShapeError,
                format!("roll() got {a} shifts for {b} axes: give one of each per axis, or a single shift or axis"),
            ))
        }
    };
    // Shifts along one axis add up (as NumPy's).
    let mut per_axis = vec![0i64; t.ndim()];
    for (s, a) in pairs {
        let ax = super::layout::norm_axis(a, t.ndim())?;
        per_axis[ax] = per_axis[ax].wrapping_add(s);
    }
    let mut r = t.clone();
    for (ax, &s) in per_axis.iter().enumerate() {
        let len = t.shape()[ax] as i64;
        if s != 0 && len > 1 {
            r = roll(&r, ax, s.rem_euclid(len) as usize)?;
        }
    }
    if r.node.is_none() && std::sync::Arc::ptr_eq(&r.storage, &t.storage) {
        // Nothing moved: still a new tensor, as NumPy's roll returns.
        r = r.contiguous();
    }
    Ok(r)
}
