//! The `Tensor` type: storage + layout + dtype (+ its place on the autodiff tape).

use super::autodiff::Node;
use super::dtype::DType;
use super::layout::{checked_size, for_each_offset, for_each_row, Layout};
use super::storage::{Buffer, Elems, Scalar, Storage};
use crate::error::ErrorKind;
use crate::value::{err, VResult};
use std::sync::Arc;

#[derive(Clone)]
pub struct Tensor {
    pub storage: Arc<Storage>,
    pub layout: Layout,
    pub dtype: DType,
    /// Set while `grad` traces a computation that depends on this tensor.
    pub node: Option<Arc<Node>>,
}

fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Tensor>();
}

/// Elements at or above which kernels split work across threads.
pub const PAR_MIN: usize = 1 << 15;

/// Whether an elementwise kernel over `n` elements splits its work across
/// rayon's pool: from [`PAR_MIN`] elements, and only when the pool has more
/// than one thread. With one (`--threads 1`), a split would only hand the
/// whole job to the pool's thread and put the caller to sleep until it is
/// done: two context switches per operation, 5x NumPy's time on a 100k
/// `g + g`. Reductions keep their own test (their chunking fixes the order
/// of the sum, which must not depend on the thread count).
pub fn par_split(n: usize) -> bool {
    n >= PAR_MIN && crate::par::kernel_pool::threads() > 1
}

/// Elements from which a kernel of a few cycles an element (arithmetic,
/// comparisons, selects, copies) splits across threads when it is called
/// from outside the pool. Below it, handing the job to the pool and
/// sleeping costs more than the second core saves: a 100k-element `g + g`
/// took 0.068 ms on 2 threads and 0.027 ms on one. Kernels of math
/// functions (`exp`, `log`, softmax) keep [`PAR_MIN`].
pub const PAR_MIN_CHEAP: usize = 1 << 18;

/// [`par_split`] for the cheap kernels: from [`PAR_MIN_CHEAP`] elements,
/// or from [`PAR_MIN`] on a pool thread (the interpreter's, in `apsi run`:
/// `par::kernel_pool`), where a split costs no sleep: the caller computes
/// its share at once and takes the other back when no thread stole it
/// (64K-element `a + b` on 2 threads 5.5 us against 8.2 unsplit).
pub fn par_split_cheap(n: usize) -> bool {
    n >= PAR_MIN
        && crate::par::kernel_pool::threads() > 1
        && (n >= PAR_MIN_CHEAP || crate::par::kernel_pool::on_pool_thread())
}

impl Tensor {
    pub fn from_vec<T: Scalar>(v: Vec<T>, shape: Vec<usize>) -> Tensor {
        debug_assert_eq!(v.len(), shape.iter().product::<usize>());
        Tensor {
            storage: Arc::new(Storage::cpu(T::buffer(v))),
            layout: Layout::contiguous(shape),
            dtype: T::DTYPE,
            node: None,
        }
    }

    pub fn from_buffer(b: Buffer, shape: Vec<usize>, dtype: DType) -> Tensor {
        Tensor {
            storage: Arc::new(Storage::cpu(b)),
            layout: Layout::contiguous(shape),
            dtype,
            node: None,
        }
    }

    pub fn scalar<T: Scalar>(x: T) -> Tensor {
        Tensor::from_vec(vec![x], vec![])
    }

    /// A tensor of `shape` filled with `x` converted to `dtype`.
    pub fn full(shape: Vec<usize>, x: f64, dtype: DType) -> VResult<Tensor> {
        let n = checked_size(&shape)?;
        if super::codec::is_packed(dtype) {
            return Ok(super::codec::narrow::filled(shape, n, x, dtype));
        }
        let dtype = dtype.check_supported()?;
        Ok(
            crate::with_dtype!(dtype, T => Tensor::from_vec(vec![T::from_f64(x); n], shape), other => unreachable_dtype()),
        )
    }

    pub fn shape(&self) -> &[usize] {
        &self.layout.shape
    }
    pub fn ndim(&self) -> usize {
        self.layout.shape.len()
    }
    pub fn size(&self) -> usize {
        self.layout.size()
    }

    /// The same elements seen through another layout (no copy, no tape).
    pub fn view(&self, layout: Layout) -> Tensor {
        Tensor {
            storage: self.storage.clone(),
            layout,
            dtype: self.dtype,
            node: None,
        }
    }

    /// Whether the elements are exactly the storage from offset 0, in order.
    pub fn is_dense(&self) -> bool {
        self.layout.offset == 0 && self.layout.is_contiguous() && self.storage.read(|b| b.len()) == self.size()
    }

    /// Runs `f` on the elements as `T`: borrowed from storage under the read
    /// lock when the dtype's native type is `T`, else converted to a fresh
    /// contiguous vector.
    pub fn with_slice<T: Scalar, R>(&self, f: impl FnOnce(&[T], &Layout) -> R) -> R {
        let direct = self.storage.read(|b| T::slice(b).is_some());
        if direct {
            let layout = &self.layout;
            let mut f = Some(f);
            let r = self
                .storage
                .read(|b| T::slice(b).map(|s| f.take().map(|f| f(s, layout))));
            if let Some(Some(r)) = r {
                return r;
            }
            unreachable_state()
        } else {
            let v: Vec<T> = self.to_vec();
            let l = Layout::contiguous(self.layout.shape.clone());
            f(&v, &l)
        }
    }

    /// The elements in row-major order, converted to `U`.
    pub fn to_vec<U: Scalar>(&self) -> Vec<U> {
        let layout = &self.layout;
        self.storage.read(|b| {
            crate::with_buffer!(b, v => gather::<_, U>(v, layout), packed => super::codec::narrow::packed_to_vec::<U>(b, layout, self.dtype))
        })
    }

    /// A dense copy (fresh storage) with the same dtype.
    pub fn contiguous(&self) -> Tensor {
        let shape = self.layout.shape.clone();
        let layout = &self.layout;
        let buf = self.storage.read(|b| match b {
            Buffer::F64(v) => Buffer::F64(Elems::Owned(gather(v, layout))),
            Buffer::F32(v) => Buffer::F32(Elems::Owned(gather(v, layout))),
            Buffer::F16(v) => Buffer::F16(Elems::Owned(gather(v, layout))),
            Buffer::BF16(v) => Buffer::BF16(Elems::Owned(gather(v, layout))),
            Buffer::I64(v) => Buffer::I64(Elems::Owned(gather(v, layout))),
            Buffer::I32(v) => Buffer::I32(Elems::Owned(gather(v, layout))),
            Buffer::Bool(v) => Buffer::Bool(Elems::Owned(gather(v, layout))),
            Buffer::Packed { .. } => super::codec::narrow::packed_contiguous(b, layout),
        });
        Tensor::from_buffer(buf, shape, self.dtype)
    }

    /// Dense with a layout starting at 0 (self when already so).
    pub fn dense(&self) -> Tensor {
        if self.is_dense() {
            let mut t = self.clone();
            t.node = None;
            t
        } else {
            self.contiguous()
        }
    }

    /// A converted copy (`astype`); the same dtype still copies.
    pub fn astype(&self, dtype: DType) -> VResult<Tensor> {
        if let Some(t) = super::codec::narrow::astype(self, dtype) {
            return Ok(t);
        }
        let dtype = dtype.check_supported()?;
        let shape = self.layout.shape.clone();
        Ok(crate::with_dtype!(dtype, T => Tensor::from_vec(self.to_vec::<T>(), shape), other => unreachable_dtype()))
    }

    /// The dtype-converted tensor, sharing storage when already of that dtype.
    pub fn cast(&self, dtype: DType) -> VResult<Tensor> {
        if dtype == self.dtype {
            let mut t = self.clone();
            t.node = None;
            Ok(t)
        } else {
            self.astype(dtype)
        }
    }

    /// The single element as f64 (for `item`, truthiness, scalars).
    pub fn first_f64(&self) -> f64 {
        self.with_slice::<f64, _>(|s, l| s.get(l.offset).copied().unwrap_or(0.0))
    }

    /// Reshaped view (or copy when the layout cannot be viewed so).
    pub fn reshaped(&self, shape: Vec<usize>) -> VResult<Tensor> {
        if checked_size(&shape)? != self.size() {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "cannot reshape a tensor of shape {} (size {}) into shape {}",
                    super::layout::shape_str(self.shape()),
                    self.size(),
                    super::layout::shape_str(&shape)
                ),
            ));
        }
        if self.layout.is_contiguous() {
            let mut l = Layout::contiguous(shape);
            l.offset = self.layout.offset;
            Ok(self.view(l))
        } else {
            let c = self.contiguous();
            Ok(c.view(Layout::contiguous(shape)))
        }
    }

    pub fn nbytes(&self) -> usize {
        (self.size() * self.dtype.bits()).div_ceil(8)
    }
}

/// Copies a strided view into a row-major vector, converting elements.
pub fn gather<T: Scalar, U: Scalar>(src: &[T], layout: &Layout) -> Vec<U> {
    let n = layout.size();
    if layout.is_contiguous() {
        if let Some(s) = src.get(layout.offset..layout.offset + n) {
            if T::DTYPE == U::DTYPE {
                // Same type: a straight copy.
                return s.iter().map(|&x| x.cast::<U>()).collect();
            }
            if par_split_cheap(n) {
                use rayon::prelude::*;
                return s.par_iter().map(|&x| x.cast::<U>()).collect();
            }
            return s.iter().map(|&x| x.cast::<U>()).collect();
        }
    }
    let nd = layout.shape.len();
    if nd > 0 && matches!(layout.strides[nd - 1], 0 | 1) && n > 0 {
        return gather_rows(src, layout);
    }
    let mut out = Vec::with_capacity(n);
    for_each_offset(&layout.shape, &layout.strides, layout.offset, |o| {
        if let Some(&x) = src.get(o) {
            out.push(x.cast::<U>());
        }
    });
    out
}

/// [`gather`] of a view whose last stride is 1 (a slice of rows or
/// columns, attention's heads: each row copied) or 0 (a `(…, 1)` tensor
/// broadcast along its last axis, as a reduction's gradient is: each row
/// one value, filled), with at least one element. Large views share their
/// rows among the pool's threads (same bits).
fn gather_rows<T: Scalar, U: Scalar>(src: &[T], layout: &Layout) -> Vec<U> {
    use std::mem::MaybeUninit;
    let n = layout.size();
    let nd = layout.shape.len();
    let (last, unit) = (layout.shape[nd - 1], layout.strides[nd - 1] == 1);
    // A layout's rows lie inside its storage; were one not to, it reads as
    // zeros rather than leaving the output unwritten.
    let write_row = |dst: &mut [MaybeUninit<U>], r: usize| match (unit, src.get(r..r + last), src.get(r)) {
        (true, Some(row), _) => {
            for (d, &x) in dst.iter_mut().zip(row) {
                d.write(x.cast::<U>());
            }
        }
        (false, _, Some(&x)) => dst.fill(MaybeUninit::new(x.cast::<U>())),
        _ => dst.fill(MaybeUninit::new(U::from_f64(0.0))),
    };
    let mut out: Vec<U> = Vec::with_capacity(n);
    let spare = &mut out.spare_capacity_mut()[..n];
    let written = if par_split_cheap(n) {
        use rayon::prelude::*;
        let mut rows = Vec::with_capacity(n / last);
        for_each_row(&layout.shape, &layout.strides, layout.offset, |o| rows.push(o));
        let per = (super::kernels::grain(n) / last).max(1);
        spare
            .par_chunks_mut(per * last)
            .zip(rows.par_chunks(per))
            .for_each(|(o, rs)| o.chunks_mut(last).zip(rs).for_each(|(dst, &r)| write_row(dst, r)));
        rows.len()
    } else {
        let mut dsts = spare.chunks_mut(last);
        let mut rows = 0;
        for_each_row(&layout.shape, &layout.strides, layout.offset, |o| {
            if let Some(dst) = dsts.next() {
                write_row(dst, o);
                rows += 1;
            }
        });
        rows
    };
    // SAFETY: every row taken wrote its `last` slots, rows in order from
    // the start (a view has n / last rows, so this is n).
    unsafe { out.set_len((written * last).min(n)) };
    out
}

#[cold]
pub(crate) fn unreachable_dtype() -> ! {
    // `check_supported` ran first; reaching here is a bug in this module.
    panic!("internal error: unsupported dtype reached a kernel")
}

#[cold]
fn unreachable_state() -> ! {
    panic!("internal error: tensor storage changed type under a lock")
}
