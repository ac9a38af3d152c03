//! `x op= y` on a tensor, as NumPy does it: the result is written into
//! `x`'s own elements (through a view, into the tensor it views), so every
//! name for those elements sees it and no new tensor is made.
//! `ap[1:, :] -= p[:-1, :]` is then one pass over the slice (the read of
//! `ap[1:, :]` is a view, the subtraction writes into it, and writing the
//! view back onto itself is recognised as done: `index::set`).
//!
//! Invariants (when one fails, `x op= y` is `x = x op y`, a new tensor):
//! - neither operand is being differentiated (a traced tensor is a value
//!   on the tape: writing into it would change what `grad` recorded);
//! - the result has `x`'s dtype and `x`'s shape (`y` broadcasts to `x`);
//!   NumPy refuses the other cases, Apsi rebinds (docs/LANGUAGE.md);
//! - no two indices of `x` name one element (a broadcast view of stride 0
//!   is read-only in NumPy; here it rebinds);
//! - `y` sharing `x`'s storage is read from a copy, so overlapping views
//!   (`x[1:] += x[:-1]`) see the old values, as NumPy's buffering gives.
//!
//! Locks: the destination's write lock and the source's read lock are
//! taken in one global order (by storage address), so two threads writing
//! each into the other's source cannot deadlock ([`with_dst_src`]).

use super::arith::{binary_same, result_dtype, Arg};
use super::core::{par_split_cheap, Tensor};
use super::dtype::{DType, Kind};
use super::kernels::{grain, wide};
use super::layout::{broadcast_shapes, for_each_offset2, Layout};
use super::object::as_tensor;
use super::real::Real;
use super::storage::Scalar;
use crate::syntax::ast::BinOp;
use crate::value::{VResult, Value};
use rayon::prelude::*;
use std::sync::Arc;

/// `a op= b` written into the tensor `a`, returning `a` itself; `None` when
/// `a` is no tensor or an invariant above fails (the caller computes
/// `a op b` instead).
pub fn binary_inplace(op: BinOp, a: &Value, b: &Value) -> Option<VResult<Value>> {
    let x = as_tensor(a)?;
    if x.node.is_some() || op == BinOp::MatMul || !distinct_elements(&x.layout) {
        return None;
    }
    let arg = match Arg::from_value(b) {
        Some(arg) => arg,
        // `x += [1.0, 2.0]`: a list or tuple is the tensor it spells, as in
        // `x[i] = [...]`.
        None if matches!(b, Value::List(_) | Value::Tuple(_)) => match super::api::from_data(b, None) {
            Ok(t) => Arg::T(t),
            Err(e) => return Some(Err(e)),
        },
        None => return None,
    };
    if let Arg::T(y) = &arg {
        if y.node.is_some() {
            return None;
        }
    }
    let mut d = result_dtype(&Arg::T(x.clone()), &arg);
    if op == BinOp::Div && d.kind() != Kind::Float {
        d = DType::F64;
    }
    if d != x.dtype {
        return None;
    }
    let y = match arg.to_tensor(d) {
        Ok(y) => y,
        Err(e) => return Some(Err(e)),
    };
    match broadcast_shapes(x.shape(), y.shape()) {
        Ok(s) if s == x.shape() => {}
        _ => return None,
    }
    let y = if Arc::ptr_eq(&x.storage, &y.storage) {
        y.contiguous()
    } else {
        y
    };
    let done = match d {
        DType::F64 => float_op::<f64>(op, &x, &y),
        DType::F32 => float_op::<f32>(op, &x, &y),
        DType::I64 => int_op::<i64>(op, &x, &y, [i64::wrapping_add, i64::wrapping_sub, i64::wrapping_mul]),
        DType::I32 => int_op::<i32>(op, &x, &y, [i32::wrapping_add, i32::wrapping_sub, i32::wrapping_mul]),
        _ => false,
    };
    if done {
        return Some(Ok(a.clone()));
    }
    // Every other operator and dtype: the kernel of `x op y`, then one copy.
    Some(binary_same(op, &x, &y).and_then(|r| super::index::assign_view(&x, &x.layout, &r).map(|()| a.clone())))
}

/// Whether every index of `l` names its own element (no stride 0 along an
/// axis longer than 1).
fn distinct_elements(l: &Layout) -> bool {
    l.shape.iter().zip(&l.strides).all(|(&n, &s)| n <= 1 || s != 0)
}

fn float_op<T: Real>(op: BinOp, x: &Tensor, y: &Tensor) -> bool {
    match op {
        BinOp::Add => apply::<T>(x, y, |p, q| p + q),
        BinOp::Sub => apply::<T>(x, y, |p, q| p - q),
        BinOp::Mul => apply::<T>(x, y, |p, q| p * q),
        BinOp::Div => apply::<T>(x, y, |p, q| p / q),
        _ => false,
    }
}

/// The wrapping `+`, `-` and `*` of an integer type.
type Wrapping<T> = [fn(T, T) -> T; 3];

fn int_op<T: Scalar>(op: BinOp, x: &Tensor, y: &Tensor, [add, sub, mul]: Wrapping<T>) -> bool {
    match op {
        BinOp::Add => apply::<T>(x, y, add),
        BinOp::Sub => apply::<T>(x, y, sub),
        BinOp::Mul => apply::<T>(x, y, mul),
        _ => false,
    }
}

/// `x[i] = f(x[i], y[i])` over `x`'s layout, `y` broadcast to it; both of
/// native type `T` in distinct storages. False when a buffer is not of `T`.
fn apply<T: Scalar>(x: &Tensor, y: &Tensor, f: impl Fn(T, T) -> T + Sync + Send) -> bool {
    with_dst_src::<T, _>(x, y, |d, s| {
        let (l, sl) = (&x.layout, &y.layout);
        let n = l.size();
        // Both dense over the same elements: whole chunks, in parallel when large.
        if l.is_contiguous() && sl.is_contiguous() && sl.shape == l.shape {
            if let (Some(d), Some(s)) = (d.get_mut(l.offset..l.offset + n), s.get(sl.offset..sl.offset + n)) {
                let body = |(d, s): (&mut [T], &[T])| {
                    wide(|| {
                        for (p, &q) in d.iter_mut().zip(s) {
                            *p = f(*p, q);
                        }
                    })
                };
                if par_split_cheap(n) {
                    let g = grain(n);
                    d.par_chunks_mut(g).zip(s.par_chunks(g)).for_each(body);
                } else {
                    body((d, s));
                }
                return;
            }
        }
        rows(d, l, s, sl, &f);
    })
    .is_some()
}

/// The row-by-row form of [`apply`]: unit-strided rows in vectorised loops,
/// a broadcast source row as one value.
fn rows<T: Scalar>(d: &mut [T], l: &Layout, s: &[T], sl: &Layout, f: &(impl Fn(T, T) -> T + Sync + Send)) {
    wide(|| {
        walk_rows(
            d,
            l,
            s,
            sl,
            |dr, sr| {
                for (p, &q) in dr.iter_mut().zip(sr) {
                    *p = f(*p, q);
                }
            },
            |dr, q| {
                for p in dr.iter_mut() {
                    *p = f(*p, q);
                }
            },
            |p, q| *p = f(*p, q),
        )
    });
}

/// Walks the view `l` of `d` beside `s` (layout `sl`, broadcast to `l`'s
/// shape) by rows of the last axis: `unit(dst_row, src_row)` where both rows
/// are unit-strided, `fill(dst_row, value)` where the source row is one
/// element, and `one(dst, value)` element by element otherwise (and for a
/// 0-d view). Offsets outside either slice are skipped, never read.
pub(super) fn walk_rows<T: Copy>(
    d: &mut [T],
    l: &Layout,
    s: &[T],
    sl: &Layout,
    mut unit: impl FnMut(&mut [T], &[T]),
    mut fill: impl FnMut(&mut [T], T),
    mut one: impl FnMut(&mut T, T),
) {
    let nd = l.shape.len();
    // No elements: nothing to walk (the rows of a `(2**40, 0)` view are
    // many and all empty).
    if l.shape.contains(&0) {
        return;
    }
    let ss = sl.broadcast_strides(&l.shape);
    if nd == 0 {
        if let (Some(p), Some(&q)) = (d.get_mut(l.offset), s.get(sl.offset)) {
            one(p, q);
        }
        return;
    }
    let last = l.shape[nd - 1];
    let (dl, sl1) = (l.strides[nd - 1], ss[nd - 1]);
    let outer = &l.shape[..nd - 1];
    for_each_offset2(
        outer,
        (&l.strides[..nd - 1], l.offset),
        (&ss[..nd - 1], sl.offset),
        |o, i| {
            if dl == 1 && sl1 == 1 {
                if let (Some(dr), Some(sr)) = (d.get_mut(o..o + last), s.get(i..i + last)) {
                    unit(dr, sr);
                }
            } else if dl == 1 && sl1 == 0 {
                if let (Some(dr), Some(&q)) = (d.get_mut(o..o + last), s.get(i)) {
                    fill(dr, q);
                }
            } else {
                let (mut p, mut q) = (o as isize, i as isize);
                for _ in 0..last {
                    if let (Some(x), Some(&v)) = (d.get_mut(p as usize), s.get(q as usize)) {
                        one(x, v);
                    }
                    p += dl;
                    q += sl1;
                }
            }
        },
    );
}

/// Runs `f` with `dst`'s elements under its write lock and `src`'s under
/// its read lock, both as `T`, taking the two locks in address order (so
/// no two threads can wait on each other). `None` when a buffer is not of
/// `T`. The storages must differ (a lock is never taken twice).
pub(super) fn with_dst_src<T: Scalar, R>(dst: &Tensor, src: &Tensor, f: impl FnOnce(&mut [T], &[T]) -> R) -> Option<R> {
    debug_assert!(!Arc::ptr_eq(&dst.storage, &src.storage));
    let go = |db: &mut super::storage::Buffer, sb: &super::storage::Buffer| match (T::slice_mut(db), T::slice(sb)) {
        (Some(d), Some(s)) => Some(f(d, s)),
        _ => None,
    };
    if Arc::as_ptr(&dst.storage) < Arc::as_ptr(&src.storage) {
        dst.storage.write(|db| src.storage.read(|sb| go(db, sb)))
    } else {
        src.storage.read(|sb| dst.storage.write(|db| go(db, sb)))
    }
}
