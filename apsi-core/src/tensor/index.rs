//! Indexing: ints and slices give views sharing storage; bool masks and int
//! arrays/lists copy on read and scatter on write (LANGUAGE.md §4).

use super::arith::Arg;
use super::autodiff::{record, Op};
use super::core::Tensor;
use super::dtype::{DType, Kind};
use super::layout::{for_each_offset, shape_str, Layout};
use super::storage::Scalar;
use crate::error::ErrorKind;
use crate::value::{err, Exc, VResult, Value};
use std::sync::Arc;

enum Item {
    Int(i64),
    Slice(Arc<crate::value::SliceObj>),
    NewAxis,
    Mask(Tensor),
    Ints(Tensor),
}

fn bad_index(v: &Value) -> Exc {
    err(
        ErrorKind::TypeError,
        format!(
            "a tensor index must be an int, a slice, a bool tensor or an int tensor/list, not {}",
            v.type_name()
        ),
    )
}

fn item(v: &Value) -> VResult<Item> {
    Ok(match v {
        Value::Int(i) => Item::Int(*i),
        Value::Bool(b) => Item::Int(*b as i64),
        Value::Slice(s) => Item::Slice(s.clone()),
        Value::None => Item::NewAxis,
        Value::List(_) => {
            let t = super::api::from_data(v, None)?;
            if t.size() == 0 {
                Item::Ints(t.cast(DType::I64)?)
            } else {
                match t.dtype.kind() {
                    Kind::Int => Item::Ints(t),
                    Kind::Bool => Item::Mask(t),
                    Kind::Float => return Err(bad_index(v)),
                }
            }
        }
        other => match super::object::as_tensor(other) {
            Some(t) => match t.dtype.kind() {
                Kind::Bool => Item::Mask(t),
                Kind::Int => Item::Ints(t),
                Kind::Float => {
                    return Err(err(
                        ErrorKind::TypeError,
                        "a tensor index must be an int or bool tensor, not a float tensor",
                    ))
                }
            },
            None => return Err(bad_index(other)),
        },
    })
}

/// What an index selects: a view, or a list of storage offsets (advanced).
enum Target {
    View(Layout),
    Gather { offsets: Vec<usize>, shape: Vec<usize> },
}

fn out_of_range(i: i64, axis: usize, len: usize) -> Exc {
    err(
        ErrorKind::IndexError,
        format!("index {i} is out of bounds for axis {axis} with size {len}"),
    )
}

fn norm_index(i: i64, axis: usize, len: usize) -> VResult<usize> {
    let n = len as i64;
    let j = if i < 0 { i + n } else { i };
    if j < 0 || j >= n {
        return Err(out_of_range(i, axis, len));
    }
    Ok(j as usize)
}

fn basic(l: &Layout, items: &[Item]) -> VResult<(Layout, Vec<Option<usize>>)> {
    // Returns the view and, for each original axis position of the view, which
    // item produced it (for locating an advanced item later).
    let used = items.iter().filter(|i| !matches!(i, Item::NewAxis)).count();
    if used > l.shape.len() {
        return Err(err(
            ErrorKind::IndexError,
            format!(
                "too many indices for a tensor: it has {} dimension(s) but {used} were indexed",
                l.shape.len()
            ),
        ));
    }
    let mut shape = Vec::new();
    let mut strides = Vec::new();
    let mut src = Vec::new();
    let mut offset = l.offset as isize;
    let mut ax = 0usize;
    for (k, it) in items.iter().enumerate() {
        match it {
            Item::Int(i) => {
                let j = norm_index(*i, ax, l.shape[ax])?;
                offset += j as isize * l.strides[ax];
                ax += 1;
            }
            Item::Slice(s) => {
                let (start, _stop, step, count) = crate::ops::slice_indices(s, l.shape[ax])?;
                if count > 0 {
                    offset += start as isize * l.strides[ax];
                }
                shape.push(count);
                strides.push(l.strides[ax] * step as isize);
                src.push(Some(k));
                ax += 1;
            }
            Item::NewAxis => {
                shape.push(1);
                strides.push(0);
                src.push(None);
            }
            Item::Mask(_) | Item::Ints(_) => {
                shape.push(l.shape[ax]);
                strides.push(l.strides[ax]);
                src.push(Some(k));
                ax += 1;
            }
        }
    }
    for a in ax..l.shape.len() {
        shape.push(l.shape[a]);
        strides.push(l.strides[a]);
        src.push(None);
    }
    Ok((
        Layout {
            shape,
            strides,
            offset: offset.max(0) as usize,
        },
        src,
    ))
}

fn target(t: &Tensor, idx: &Value) -> VResult<Target> {
    let items: Vec<Item> = match idx {
        Value::Tuple(parts) => parts.0.iter().map(item).collect::<VResult<_>>()?,
        other => vec![item(other)?],
    };
    // A whole-tensor (or leading-axes) bool mask.
    if let [Item::Mask(m)] = items.as_slice() {
        if m.ndim() > 1 || t.ndim() == 0 {
            return mask_target(t, m);
        }
    }
    let adv: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, i)| matches!(i, Item::Mask(_) | Item::Ints(_)))
        .map(|(k, _)| k)
        .collect();
    if adv.len() > 1 {
        return Err(err(
            ErrorKind::IndexError,
            "only one bool-mask or int-array index per indexing is supported",
        ));
    }
    let (view, src) = basic(&t.layout, &items)?;
    let Some(&k) = adv.first() else {
        return Ok(Target::View(view));
    };
    let ax = src.iter().position(|s| *s == Some(k)).unwrap_or(0);
    let len = view.shape[ax];
    let (ids, idx_shape): (Vec<i64>, Vec<usize>) = match &items[k] {
        Item::Mask(m) => {
            if m.ndim() != 1 || m.shape()[0] != len {
                return Err(err(
                    ErrorKind::IndexError,
                    format!(
                        "boolean index of shape {} does not match axis {ax} of length {len}",
                        shape_str(m.shape())
                    ),
                ));
            }
            let bits: Vec<bool> = m.to_vec();
            let ids: Vec<i64> = bits
                .iter()
                .enumerate()
                .filter(|(_, b)| **b)
                .map(|(i, _)| i as i64)
                .collect();
            let n = ids.len();
            (ids, vec![n])
        }
        Item::Ints(ix) => (ix.to_vec(), ix.shape().to_vec()),
        _ => (vec![], vec![0]),
    };
    let ids: Vec<usize> = ids.iter().map(|&i| norm_index(i, ax, len)).collect::<VResult<_>>()?;
    let outer = &view.shape[..ax];
    let inner = &view.shape[ax + 1..];
    let mut offsets = Vec::new();
    let st = view.strides[ax];
    for_each_offset(outer, &view.strides[..ax], view.offset, |o| {
        for &j in &ids {
            let base = (o as isize + j as isize * st) as usize;
            for_each_offset(inner, &view.strides[ax + 1..], base, |p| offsets.push(p));
        }
    });
    let mut shape = outer.to_vec();
    shape.extend(idx_shape);
    shape.extend_from_slice(inner);
    Ok(Target::Gather { offsets, shape })
}

fn mask_target(t: &Tensor, m: &Tensor) -> VResult<Target> {
    let k = m.ndim();
    if k > t.ndim() || m.shape() != &t.shape()[..k] {
        return Err(err(
            ErrorKind::IndexError,
            format!(
                "boolean index of shape {} does not match the tensor's shape {}",
                shape_str(m.shape()),
                shape_str(t.shape())
            ),
        ));
    }
    let bits: Vec<bool> = m.to_vec();
    let l = &t.layout;
    let mut lead = Vec::new();
    for_each_offset(&l.shape[..k], &l.strides[..k], l.offset, |o| lead.push(o));
    let mut offsets = Vec::new();
    let mut count = 0;
    for (o, b) in lead.iter().zip(&bits) {
        if *b {
            count += 1;
            for_each_offset(&l.shape[k..], &l.strides[k..], *o, |p| offsets.push(p));
        }
    }
    let mut shape = vec![count];
    shape.extend_from_slice(&l.shape[k..]);
    Ok(Target::Gather { offsets, shape })
}

/// `t[idx]`: a view, a copy, or (every axis given an int) a plain number.
pub fn get(t: &Tensor, idx: &Value) -> VResult<Value> {
    if t.node.is_some() && !t.is_dense() {
        // The tape's gather takes logical (row-major) indices: select from a
        // dense copy, whose storage offsets are those, and record against
        // `t` (a transposed or offset view would otherwise send gradients
        // to the wrong elements).
        let mut d = t.contiguous();
        d.node = t.node.clone();
        return get(&d, idx);
    }
    match target(t, idx)? {
        Target::View(l) => {
            let mut v = t.view(l);
            if v.ndim() == 0 && t.node.is_none() {
                return Ok(super::object::scalar_value(&v));
            }
            if t.node.is_some() {
                let offs = v.layout.offsets();
                let shape = v.shape().to_vec();
                v = v.contiguous();
                v.node = record(Op::Gather(t.clone(), offs, shape), &v);
            }
            Ok(super::object::tensor_value(v))
        }
        Target::Gather { offsets, shape } => {
            let mut r = crate::with_dtype!(t.dtype, T => {
                let vals: Vec<T> = t.storage.read(|b| {
                    let s = T::slice(b).unwrap_or(&[]);
                    offsets.iter().map(|&o| s.get(o).copied().unwrap_or(T::from_i64(0))).collect()
                });
                Tensor::from_vec(vals, shape.clone())
            }, other => super::codec::narrow::gather(t, &offsets, shape.clone()));
            if t.node.is_some() {
                r.node = record(Op::Gather(t.clone(), offsets, shape), &r);
            }
            Ok(super::object::tensor_value(r))
        }
    }
}

/// `t[idx] = v`: writes through the view or scatters into the selected elements.
pub fn set(t: &Tensor, idx: &Value, v: &Value) -> VResult<()> {
    if t.node.is_some() {
        return Err(err(
            ErrorKind::ValueError,
            "assignment into a tensor that grad is differentiating is not supported (build a new tensor with where() instead)",
        ));
    }
    let tgt = target(t, idx)?;
    let arg = match Arg::from_value(v) {
        Some(a) => a,
        None => match v {
            Value::List(_) | Value::Tuple(_) => Arg::T(super::api::from_data(v, None)?),
            other => {
                return Err(err(
                    ErrorKind::TypeError,
                    format!("cannot assign a {} into a tensor", other.type_name()),
                ))
            }
        },
    };
    // `x[i] op= y` on a view: the operator wrote into these very elements
    // (`inplace.rs`), so writing them back onto themselves is done.
    if let (Arg::T(s), Target::View(l)) = (&arg, &tgt) {
        if s.dtype == t.dtype && Arc::ptr_eq(&s.storage, &t.storage) && s.layout == *l {
            return Ok(());
        }
    }
    // A source in `t`'s own storage is copied by `assign_view`; the other
    // targets read the source into a vector before they lock `t`.
    let src = arg
        .to_tensor(if let Arg::T(x) = &arg { x.dtype } else { t.dtype })?
        .cast(t.dtype)?;
    let shape = match &tgt {
        Target::View(l) => l.shape.clone(),
        Target::Gather { shape, .. } => shape.clone(),
    };
    let bshape = super::layout::broadcast_shapes(src.shape(), &shape)?;
    if bshape != shape {
        return Err(err(
            ErrorKind::ShapeError,
            format!(
                "cannot assign a value of shape {} into a selection of shape {}",
                shape_str(src.shape()),
                shape_str(&shape)
            ),
        ));
    }
    match tgt {
        Target::View(l) => assign_view(t, &l, &src),
        Target::Gather { offsets, .. } => write_offsets(t, &offsets, &src, &shape),
    }
}

/// Copies `src` (of `t`'s dtype, broadcastable to the view `l` of `t`)
/// into that view of `t`.
pub(super) fn assign_view(t: &Tensor, l: &Layout, src: &Tensor) -> VResult<()> {
    let src = if Arc::ptr_eq(&src.storage, &t.storage) {
        src.contiguous()
    } else {
        src.clone()
    };
    if let Some(done) = write_view(t, l, &src) {
        return done;
    }
    write_offsets(t, &l.offsets(), &src, &l.shape)
}

/// Writes `src` (of `t`'s dtype, broadcast to `shape`) into the elements of
/// `t` at `offsets` (row-major over `shape`), one by one.
fn write_offsets(t: &Tensor, offsets: &[usize], src: &Tensor, shape: &[usize]) -> VResult<()> {
    crate::with_dtype!(t.dtype, T => {
        let vals: Vec<T> = super::kernels::expand_to::<T>(src, shape);
        t.storage.write(|b| {
            if let Some(s) = T::slice_mut(b) {
                for (&o, &x) in offsets.iter().zip(&vals) {
                    if let Some(slot) = s.get_mut(o) {
                        *slot = x;
                    }
                }
            }
        });
        Ok(())
    }, other => super::codec::narrow::scatter(t, offsets, src, shape))
}

/// `d.copy_from_slice(s)`, but backwards in 64-byte blocks when the
/// destination starts a little after the source modulo 4 KiB. A forward
/// copy then loads from addresses whose low 12 bits match stores still in
/// flight ("4K aliasing"), and the CPU holds every load back: `ap[:, 1:] =
/// p[:, :-1]` on 512x512 took 10x NumPy's time inside glibc's memmove.
fn copy_row<T: Copy>(d: &mut [T], s: &[T]) {
    let bytes = std::mem::size_of_val(s);
    let gap = (d.as_ptr() as usize).wrapping_sub(s.as_ptr() as usize) & 4095;
    if d.len() != s.len() || bytes < 256 || gap == 0 || gap >= 256 {
        d.copy_from_slice(s);
        return;
    }
    let dp = d.as_mut_ptr() as *mut u8;
    let sp = s.as_ptr() as *const u8;
    let mut end = bytes;
    // SAFETY: d and s are distinct slices (one is borrowed mutably) of
    // `bytes` bytes each; every block copied lies in [0, bytes) of both.
    unsafe {
        while end >= 64 {
            end -= 64;
            std::ptr::copy_nonoverlapping(sp.add(end), dp.add(end), 64);
            // Keeps LLVM from turning the loop back into one forward
            // memcpy (a compiler-only barrier: no instruction).
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        }
        std::ptr::copy_nonoverlapping(sp, dp, end);
    }
}

/// Copies `src` (of `t`'s dtype, broadcastable to the view, in other
/// storage) into the view `l` of `t`, row by row: a slice copy where both
/// rows are unit-strided, a fill where the source row is one element.
/// `None` for the packed formats, which the general path handles.
fn write_view(t: &Tensor, l: &Layout, src: &Tensor) -> Option<VResult<()>> {
    fn copy<T: Scalar>(d: &mut [T], l: &Layout, s: &[T], sl: &Layout) {
        super::inplace::walk_rows(d, l, s, sl, copy_row, |dr, v| dr.fill(v), |x, v| *x = v);
    }
    crate::with_dtype!(t.dtype, T => {
        super::inplace::with_dst_src::<T, _>(t, src, |d, s| copy(d, l, s, &src.layout)).map(Ok)
    }, other => None)
}

// ---- index_add, index_select, bincount ----

/// `(outer, len, inner)` of `shape` around `axis`.
fn around(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (
        shape[..axis].iter().product(),
        shape[axis],
        shape[axis + 1..].iter().product(),
    )
}

/// `out` (x's elements, row-major) with each slice `j` of `src` along the
/// axis added into slice `idx[j]`; duplicates accumulate in index order.
/// Blocks of the outer axes are independent (split across threads when large).
fn add_slices<T: Copy + Send + Sync>(
    out: &mut [T],
    src: &[T],
    (n, m, inner): (usize, usize, usize),
    idx: &[usize],
    add: impl Fn(T, T) -> T + Sync + Send,
) {
    use rayon::prelude::*;
    if out.is_empty() || src.is_empty() || inner == 0 {
        return;
    }
    let body = |(o, s): (&mut [T], &[T])| {
        for (j, &i) in idx.iter().enumerate() {
            let (Some(d), Some(s)) = (o.get_mut(i * inner..(i + 1) * inner), s.get(j * inner..(j + 1) * inner)) else {
                continue;
            };
            for (a, &b) in d.iter_mut().zip(s) {
                *a = add(*a, b);
            }
        }
    };
    if super::core::par_split_cheap(out.len()) && out.len() > n * inner {
        out.par_chunks_mut(n * inner)
            .zip(src.par_chunks(m * inner))
            .for_each(body);
    } else {
        out.chunks_mut(n * inner).zip(src.chunks(m * inner)).for_each(body);
    }
}

/// `x` with `src`'s slices along `axis` added at `idx` (checked by the
/// caller: in range, shapes that fit, one numeric dtype), as a new tensor.
pub fn index_add_into(x: &Tensor, axis: usize, idx: &Arc<[usize]>, src: &Tensor) -> VResult<Tensor> {
    let d = x.dtype;
    let (_, n, inner) = around(x.shape(), axis);
    let m = idx.len();
    let shape = x.shape().to_vec();
    let mut r = match d {
        DType::F64 => {
            let mut out: Vec<f64> = x.to_vec();
            add_slices(&mut out, &src.to_vec::<f64>(), (n, m, inner), idx, |a, b| a + b);
            Tensor::from_vec(out, shape)
        }
        DType::F32 | DType::F16 | DType::BF16 => {
            let mut out: Vec<f32> = x.to_vec();
            add_slices(&mut out, &src.to_vec::<f32>(), (n, m, inner), idx, |a, b| a + b);
            Tensor::from_vec(out, shape).cast(d)?
        }
        DType::I64 | DType::I32 => {
            let mut out: Vec<i64> = x.to_vec();
            add_slices(&mut out, &src.to_vec::<i64>(), (n, m, inner), idx, i64::wrapping_add);
            Tensor::from_vec(out, shape).cast(d)?
        }
        other => {
            return Err(err(
                ErrorKind::TypeError,
                format!(
                    "index_add() adds int or float tensors, not {} (convert first with .astype(f32))",
                    other.name()
                ),
            ))
        }
    };
    if (x.node.is_some() || src.node.is_some()) && d.is_float() {
        r.node = record(Op::IndexAdd(x.clone(), axis, idx.clone(), src.clone()), &r);
    }
    Ok(r)
}

/// The slices of `x` at `idx` along `axis` (the indices in range).
pub fn index_select(x: &Tensor, axis: usize, idx: &Arc<[usize]>) -> VResult<Tensor> {
    let (outer, n, inner) = around(x.shape(), axis);
    let mut shape = x.shape().to_vec();
    shape[axis] = idx.len();
    let mut r = crate::with_dtype!(x.dtype, T => {
        let v: Vec<T> = x.to_vec();
        let mut out: Vec<T> = Vec::with_capacity(outer * idx.len() * inner);
        for o in 0..outer {
            for &i in idx.iter() {
                let at = (o * n + i) * inner;
                if let Some(s) = v.get(at..at + inner) {
                    out.extend_from_slice(s);
                }
            }
        }
        Tensor::from_vec(out, shape.clone())
    }, other => return Err(x.dtype.check_supported().err().unwrap_or_else(|| err(ErrorKind::TypeError, "bad dtype"))));
    if x.node.is_some() && x.dtype.is_float() {
        r.node = record(Op::IndexSelect(x.clone(), axis, idx.clone()), &r);
    }
    Ok(r)
}

/// An index argument of `index_add`/`bincount`: a 1-D int tensor (or a
/// list of ints), as i64 values.
fn int_list(name: &str, what: &str, t: &Tensor) -> VResult<Vec<i64>> {
    if t.dtype.kind() == Kind::Float && t.size() > 0 {
        return Err(err(
            ErrorKind::TypeError,
            format!(
                "{name}() {what} must be an int tensor, not {} (use .astype(i64))",
                t.dtype.name()
            ),
        ));
    }
    if t.ndim() != 1 {
        return Err(err(
            ErrorKind::ShapeError,
            format!("{name}() {what} must be 1-D, not of shape {}", shape_str(t.shape())),
        ));
    }
    Ok(t.to_vec())
}

/// PyTorch's `index_add(x, axis, index, source, alpha=1)` as a function: a
/// new tensor, `x` with `alpha * source[..., j, ...]` added into
/// `x[..., index[j], ...]` along `axis`; repeated indices accumulate (what
/// NumPy's `np.add.at(x, index, source)` does in place). Negative indices
/// count from the end.
pub fn index_add(x: &Tensor, axis: i64, index: &Tensor, source: &Tensor, alpha: Option<f64>) -> VResult<Tensor> {
    let ax = super::layout::norm_axis(axis, x.ndim())?;
    let ids = int_list("index_add", "index", index)?;
    let n = x.shape()[ax];
    let idx: Vec<usize> = ids
        .iter()
        .map(|&i| {
            let j = if i < 0 { i + n as i64 } else { i };
            if j < 0 || j >= n as i64 {
                Err(err(
                    ErrorKind::IndexError,
                    format!("index_add() index {i} is out of bounds for axis {ax} with size {n}"),
                ))
            } else {
                Ok(j as usize)
            }
        })
        .collect::<VResult<_>>()?;
    let mut want = x.shape().to_vec();
    want[ax] = idx.len();
    if source.shape() != want.as_slice() {
        return Err(err(
            ErrorKind::ShapeError,
            format!(
                "index_add() source has shape {}; expected {} (x's shape {} with axis {ax} as long as index, {})",
                shape_str(source.shape()),
                shape_str(&want),
                shape_str(x.shape()),
                idx.len()
            ),
        ));
    }
    let d = DType::promote(x.dtype, source.dtype);
    if d == DType::Bool {
        return Err(err(
            ErrorKind::TypeError,
            "index_add() adds numbers, not bool tensors (use .astype(i64))",
        ));
    }
    let d = d.check_supported()?;
    let xt = Arg::T(x.clone()).to_tensor(d)?;
    let mut st = Arg::T(source.clone()).to_tensor(d)?;
    if let Some(a) = alpha.filter(|&a| a != 1.0) {
        st = super::arith::binary(crate::syntax::ast::BinOp::Mul, &Arg::T(st), &Arg::Float(a))?;
        st = Arg::T(st).to_tensor(d)?;
    }
    index_add_into(&xt, ax, &Arc::from(idx), &st)
}

/// NumPy's `bincount(x, weights=None, minlength=0)`: how often each of
/// `0..=max(x)` occurs in the 1-D non-negative int tensor `x` (i64), or with
/// `weights` the sum of the weights at each (f64, differentiable in the
/// weights); at least `minlength` bins.
pub fn bincount(x: &Tensor, weights: Option<&Tensor>, minlength: i64) -> VResult<Tensor> {
    if minlength < 0 {
        return Err(err(
            ErrorKind::ValueError,
            format!("bincount() minlength must be >= 0, not {minlength}"),
        ));
    }
    let ids = int_list("bincount", "input", x)?;
    if let Some((k, &v)) = ids.iter().enumerate().find(|(_, &v)| v < 0) {
        return Err(err(
            ErrorKind::ValueError,
            format!("bincount() counts non-negative ints; element {k} is {v}"),
        ));
    }
    let top = ids.iter().copied().max().map_or(0, |m| m as u64 + 1);
    let len = usize::try_from(top.max(minlength as u64)).unwrap_or(usize::MAX);
    super::layout::check_alloc(len, "bincount()")?;
    let idx: Vec<usize> = ids.iter().map(|&v| v as usize).collect();
    match weights {
        None => {
            let mut counts = vec![0i64; len];
            for &i in &idx {
                counts[i] += 1;
            }
            Ok(Tensor::from_vec(counts, vec![len]))
        }
        Some(w) => {
            if w.shape() != x.shape() {
                return Err(err(
                    ErrorKind::ShapeError,
                    format!(
                        "bincount() weights have shape {}; expected {}, the shape of the input",
                        shape_str(w.shape()),
                        shape_str(x.shape())
                    ),
                ));
            }
            let w = Arg::T(w.clone()).to_tensor(DType::F64)?;
            let z = Tensor::full(vec![len], 0.0, DType::F64)?;
            index_add_into(&z, 0, &Arc::from(idx), &w)
        }
    }
}
