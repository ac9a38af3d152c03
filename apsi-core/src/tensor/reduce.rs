//! Reductions over axes (`sum mean max min argmax argmin prod all any std
//! var`), with `keepdims`, plus `cumsum`. Fast kernels: a vectorised whole-
//! tensor sum, trailing short axes ((1M, 3) summed over axis 1) and leading
//! axes (column sums).

use super::autodiff::{record, Op};
use super::core::{par_split, Tensor, PAR_MIN};
use super::dtype::{DType, Kind};
use super::kernels::wide;
use super::layout::{for_each_offset, Layout};
use super::storage::Scalar;
use crate::error::ErrorKind;
use crate::value::{err, VResult};
use rayon::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RKind {
    Sum,
    Prod,
    Max,
    Min,
    ArgMax,
    ArgMin,
    All,
    Any,
}

impl RKind {
    pub fn name(self) -> &'static str {
        match self {
            RKind::Sum => "sum",
            RKind::Prod => "prod",
            RKind::Max => "max",
            RKind::Min => "min",
            RKind::ArgMax => "argmax",
            RKind::ArgMin => "argmin",
            RKind::All => "all",
            RKind::Any => "any",
        }
    }
}

/// The axes a reduction runs over, sorted and unique (None: all).
pub fn resolve_axes(axes: Option<&[i64]>, ndim: usize) -> VResult<Vec<usize>> {
    match axes {
        None => Ok((0..ndim).collect()),
        Some(list) => {
            let mut out = Vec::new();
            for &a in list {
                let n = ndim as i64;
                let x = if a < 0 { a + n } else { a };
                if x < 0 || x >= n {
                    return Err(err(
                        ErrorKind::IndexError,
                        format!("axis {a} is out of bounds for a tensor of dimension {ndim}"),
                    ));
                }
                if out.contains(&(x as usize)) {
                    return Err(err(ErrorKind::ValueError, format!("duplicate value in 'axis': {a}")));
                }
                out.push(x as usize);
            }
            out.sort_unstable();
            Ok(out)
        }
    }
}

fn out_shape(shape: &[usize], axes: &[usize], keepdims: bool) -> Vec<usize> {
    let mut s = Vec::new();
    for (i, &d) in shape.iter().enumerate() {
        if axes.contains(&i) {
            if keepdims {
                s.push(1);
            }
        } else {
            s.push(d);
        }
    }
    s
}

/// The result dtype of a reduction of `d`.
fn result_dtype(kind: RKind, d: DType) -> DType {
    match kind {
        RKind::Sum | RKind::Prod => match d.kind() {
            Kind::Float => d,
            _ => DType::I64,
        },
        RKind::Max | RKind::Min => d,
        RKind::ArgMax | RKind::ArgMin => DType::I64,
        RKind::All | RKind::Any => DType::Bool,
    }
}

/// Reduces `t` over `axes` (already resolved).
pub fn reduce(t: &Tensor, axes: &[usize], keepdims: bool, kind: RKind) -> VResult<Tensor> {
    let shape = out_shape(t.shape(), axes, keepdims);
    // An empty input can still ask for a huge output (`zeros([0, 10**10]).sum(0)`).
    super::layout::checked_size(&shape)?;
    let count: usize = axes.iter().map(|&a| t.shape()[a]).product();
    if count == 0 && matches!(kind, RKind::Max | RKind::Min | RKind::ArgMax | RKind::ArgMin) {
        return Err(err(
            ErrorKind::ValueError,
            format!(
                "{}() of an empty tensor (zero-size reduction has no identity)",
                kind.name()
            ),
        ));
    }
    if matches!(kind, RKind::ArgMax | RKind::ArgMin) && axes.len() > 1 && axes.len() != t.ndim() {
        return Err(err(
            ErrorKind::ValueError,
            format!("{}() takes one axis or none", kind.name()),
        ));
    }
    let rd = result_dtype(kind, t.dtype);
    // A traced sum of a deferred tensor is deferred too (deferred.rs).
    let deferred = match kind {
        RKind::Sum => super::deferred::sum(t, axes, shape.clone()),
        _ => None,
    };
    let mut r = match (deferred, kind, t.dtype) {
        (Some(r), _, _) => r,
        (None, RKind::Sum, DType::F32) => sum_float::<f32>(t, axes, shape.clone()),
        (None, RKind::Sum, DType::F64) => sum_float::<f64>(t, axes, shape.clone()),
        (None, RKind::Max | RKind::Min | RKind::ArgMax | RKind::ArgMin | RKind::All | RKind::Any, DType::F32) => {
            generic::<f32>(t, axes, shape.clone(), kind).cast(rd)?
        }
        (None, _, d) if d.kind() == Kind::Float => generic::<f64>(t, axes, shape.clone(), kind).cast(rd)?,
        _ => generic::<i64>(t, axes, shape.clone(), kind).cast(rd)?,
    };
    if t.node.is_some() && rd.is_float() {
        let op = match kind {
            RKind::Sum => Op::Sum(t.clone(), axes.to_vec(), keepdims),
            RKind::Max | RKind::Min => Op::Extreme(t.clone(), axes.to_vec(), keepdims, r.clone()),
            RKind::Prod => Op::Prod(t.clone(), axes.to_vec(), keepdims, r.clone()),
            _ => return Ok(r),
        };
        r.node = record(op, &r);
    }
    Ok(r)
}

/// Splits axes into the kept and reduced parts of a layout.
fn split(l: &Layout, axes: &[usize]) -> (Vec<usize>, Vec<isize>, Vec<usize>, Vec<isize>) {
    let (mut ks, mut kst, mut rs, mut rst) = (vec![], vec![], vec![], vec![]);
    for i in 0..l.shape.len() {
        if axes.contains(&i) {
            rs.push(l.shape[i]);
            rst.push(l.strides[i]);
        } else {
            ks.push(l.shape[i]);
            kst.push(l.strides[i]);
        }
    }
    (ks, kst, rs, rst)
}

trait Acc: Scalar + PartialOrd {
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn nan(self) -> bool;
}
impl Acc for f64 {
    fn add(self, o: f64) -> f64 {
        self + o
    }
    fn mul(self, o: f64) -> f64 {
        self * o
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
}
impl Acc for f32 {
    fn add(self, o: f32) -> f32 {
        self + o
    }
    fn mul(self, o: f32) -> f32 {
        self * o
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
}
impl Acc for i64 {
    fn add(self, o: i64) -> i64 {
        self.wrapping_add(o)
    }
    fn mul(self, o: i64) -> i64 {
        self.wrapping_mul(o)
    }
    fn nan(self) -> bool {
        false
    }
}

/// One reduction of the elements at `offs` (in order).
fn fold<T: Acc>(s: &[T], base: usize, rs: &[usize], rst: &[isize], kind: RKind) -> T {
    let mut first = true;
    let mut acc = match kind {
        RKind::Sum | RKind::Any => T::from_i64(0),
        RKind::Prod | RKind::All => T::from_i64(1),
        _ => T::from_i64(0),
    };
    let mut best_i = 0i64;
    let mut i = 0i64;
    let mut done = false;
    for_each_offset(rs, rst, base, |o| {
        let Some(&x) = s.get(o) else { return };
        if done {
            i += 1;
            return;
        }
        match kind {
            RKind::Sum => acc = acc.add(x),
            RKind::Prod => acc = acc.mul(x),
            RKind::All => {
                if !x.to_bool() {
                    acc = T::from_i64(0)
                }
            }
            RKind::Any => {
                if x.to_bool() {
                    acc = T::from_i64(1)
                }
            }
            RKind::Max | RKind::Min | RKind::ArgMax | RKind::ArgMin => {
                let better = first
                    || x.nan()
                    || if matches!(kind, RKind::Max | RKind::ArgMax) {
                        x > acc
                    } else {
                        x < acc
                    };
                if better {
                    acc = x;
                    best_i = i;
                }
                if x.nan() {
                    done = true;
                }
                first = false;
            }
        }
        i += 1;
    });
    match kind {
        RKind::ArgMax | RKind::ArgMin => T::from_i64(best_i),
        _ => acc,
    }
}

fn generic<T: Acc>(t: &Tensor, axes: &[usize], shape: Vec<usize>, kind: RKind) -> Tensor {
    let out = t.with_slice::<T, _>(|s, l| {
        let (ks, kst, rs, rst) = split(l, axes);
        let mut bases = Vec::new();
        for_each_offset(&ks, &kst, l.offset, |o| bases.push(o));
        let total = l.size();
        if par_split(total) && bases.len() > 1 {
            bases
                .par_iter()
                .map(|&b| fold(s, b, &rs, &rst, kind))
                .collect::<Vec<T>>()
        } else {
            bases.iter().map(|&b| fold(s, b, &rs, &rst, kind)).collect::<Vec<T>>()
        }
    });
    Tensor::from_vec(out, shape)
}

/// Float types with a vectorisable lane sum.
pub trait SumElem: Scalar + std::ops::Add<Output = Self> + Default {
    fn lanes_sum(x: &[Self]) -> f64;
}

macro_rules! sum_elem {
    ($t:ty) => {
        impl SumElem for $t {
            #[inline(always)]
            fn lanes_sum(x: &[$t]) -> f64 {
                // 32 independent accumulators so the loop vectorises (several
                // vector registers, no add waiting on the one before); blocks
                // of 4096 keep each lane's partial sum to 128 elements, then
                // the partials add up in f64.
                const L: usize = 32;
                let mut total = 0f64;
                for block in x.chunks(4096) {
                    let mut acc = [0 as $t; L];
                    let mut it = block.chunks_exact(L);
                    for c in &mut it {
                        for k in 0..L {
                            acc[k] += c[k];
                        }
                    }
                    let mut part = 0f64;
                    for a in acc {
                        part += a as f64;
                    }
                    for &r in it.remainder() {
                        part += r as f64;
                    }
                    total += part;
                }
                total
            }
        }
    };
}
sum_elem!(f32);
sum_elem!(f64);

/// Sums of consecutive blocks of `inner` elements (a reduction over the
/// trailing axes of a dense tensor), split across threads by output rows.
/// Short blocks (a (1M, 3) tensor summed over axis 1) add in order from
/// their first element, as NumPy does; longer ones use [`SumElem::lanes_sum`].
fn trailing_sums<T: SumElem>(d: &[T], inner: usize) -> Vec<T> {
    let rows = d.len() / inner;
    let mut out: Vec<T> = super::kernels::out_vec(rows);
    let spare = &mut out.spare_capacity_mut()[..rows];
    let block = |(o, src): (&mut [std::mem::MaybeUninit<T>], &[T])| {
        wide(|| match inner {
            2 => short::<T, 2>(o, src),
            3 => short::<T, 3>(o, src),
            4 => short::<T, 4>(o, src),
            _ if inner <= 8 => {
                for (o, c) in o.iter_mut().zip(src.chunks_exact(inner)) {
                    let mut a = c.first().copied().unwrap_or_default();
                    for &x in c.iter().skip(1) {
                        a = a + x;
                    }
                    o.write(a);
                }
            }
            _ => {
                for (o, c) in o.iter_mut().zip(src.chunks_exact(inner)) {
                    o.write(T::from_f64(T::lanes_sum(c)));
                }
            }
        })
    };
    if par_split(d.len()) && rows > 1 {
        let per = (super::kernels::grain(d.len()) / inner).max(1);
        spare.par_chunks_mut(per).zip(d.par_chunks(per * inner)).for_each(block);
    } else {
        block((spare, d));
    }
    // SAFETY: every output row was written (src holds rows * inner elements).
    unsafe { out.set_len(rows) };
    out
}

#[inline(always)]
fn short<T: SumElem, const K: usize>(o: &mut [std::mem::MaybeUninit<T>], src: &[T]) {
    for (o, c) in o.iter_mut().zip(src.chunks_exact(K)) {
        let mut a = c[0];
        for &x in &c[1..K] {
            a = a + x;
        }
        o.write(a);
    }
}

pub(super) fn sum_float<T: SumElem>(t: &Tensor, axes: &[usize], shape: Vec<usize>) -> Tensor {
    let nd = t.ndim();
    let out = t.with_slice::<T, _>(|s, l| {
        let n = l.size();
        let dense = l.is_contiguous().then(|| s.get(l.offset..l.offset + n)).flatten();
        if let Some(d) = dense {
            // Whole tensor.
            if axes.len() == nd {
                // Blocks of 64K summed in block order, on any number of
                // threads: the same bits at every thread count.
                let part = |c: &[T]| wide(|| T::lanes_sum(c));
                let total = if n < PAR_MIN {
                    part(d)
                } else if par_split(n) {
                    d.par_chunks(1 << 16).map(part).collect::<Vec<f64>>().iter().sum()
                } else {
                    d.chunks(1 << 16).map(part).sum()
                };
                return vec![T::from_f64(total)];
            }
            let k = axes.len();
            // Trailing axes: each output is a contiguous block.
            if axes.iter().enumerate().all(|(i, &a)| a == nd - k + i) {
                let inner: usize = axes.iter().map(|&a| l.shape[a]).product();
                if inner == 0 {
                    return vec![T::from_f64(0.0); shape.iter().product()];
                }
                return trailing_sums(d, inner);
            }
            // Leading axes: add rows into one accumulator row.
            if axes.iter().enumerate().all(|(i, &a)| a == i) {
                let outer: usize = axes.iter().map(|&a| l.shape[a]).product();
                let m = n / outer.max(1);
                if m > 0 {
                    let add_rows = |rows: &[T]| -> Vec<T> {
                        let mut acc = vec![T::default(); m];
                        for r in rows.chunks_exact(m) {
                            for (a, &x) in acc.iter_mut().zip(r) {
                                *a = *a + x;
                            }
                        }
                        acc
                    };
                    let rows_per = (1usize << 16).checked_div(m).unwrap_or(1).max(1) * m;
                    if n >= PAR_MIN && outer > 1 {
                        // Partial rows per block, added in block order: the
                        // same bits at every thread count.
                        let parts: Vec<Vec<T>> = if par_split(n) {
                            d.par_chunks(rows_per).map(add_rows).collect()
                        } else {
                            d.chunks(rows_per).map(add_rows).collect()
                        };
                        let mut acc = vec![T::default(); m];
                        for b in parts {
                            for (x, y) in acc.iter_mut().zip(b) {
                                *x = *x + y;
                            }
                        }
                        return acc;
                    }
                    return add_rows(d);
                }
            }
        }
        let (ks, kst, rs, rst) = split(l, axes);
        let mut bases = Vec::new();
        for_each_offset(&ks, &kst, l.offset, |o| bases.push(o));
        let one = |&b: &usize| {
            let mut acc = 0f64;
            for_each_offset(&rs, &rst, b, |o| {
                if let Some(&x) = s.get(o) {
                    acc += x.to_f64()
                }
            });
            T::from_f64(acc)
        };
        if par_split(n) && bases.len() > 1 {
            bases.par_iter().map(one).collect()
        } else {
            bases.iter().map(one).collect()
        }
    });
    Tensor::from_vec(out, shape)
}

/// `cumsum(axis)` (None: of the flattened tensor).
pub fn cumsum(t: &Tensor, axis: Option<usize>) -> VResult<Tensor> {
    let (src, axis) = match axis {
        None => (super::shape::reshape(t, vec![t.size()])?, 0),
        Some(a) => (t.clone(), a),
    };
    let shape = src.shape().to_vec();
    let len = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    fn run<T: Copy>(v: &mut [T], outer: usize, len: usize, inner: usize, zero: T, add: impl Fn(T, T) -> T) {
        for o in 0..outer {
            for i in 0..inner {
                let mut acc = zero;
                for k in 0..len {
                    if let Some(x) = v.get_mut((o * len + k) * inner + i) {
                        acc = add(acc, *x);
                        *x = acc;
                    }
                }
            }
        }
    }
    let mut r = if src.dtype.is_float() {
        let mut v: Vec<f64> = src.to_vec();
        run(&mut v, outer, len, inner, 0.0, |a, b| a + b);
        Tensor::from_vec(v, shape.clone()).cast(src.dtype)?
    } else {
        let mut v: Vec<i64> = src.to_vec();
        run(&mut v, outer, len, inner, 0, |a: i64, b| a.wrapping_add(b));
        Tensor::from_vec(v, shape.clone())
    };
    if src.node.is_some() && r.dtype.is_float() {
        r.node = record(Op::Cumsum(src.clone(), axis), &r);
    }
    Ok(r)
}
