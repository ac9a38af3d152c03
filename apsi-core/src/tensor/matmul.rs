//! `matmul`/`@` for 1-D, 2-D and batched operands (NumPy's rules). f32/f64
//! products run on OpenBLAS with the `blas` feature (see [`super::cblas`]),
//! else on the `gemm` crate's kernels (multi-threaded when large).

use super::autodiff::{record, Op};
use super::core::Tensor;
use super::dtype::{DType, Kind};
use super::layout::{broadcast_shapes, for_each_offset, shape_str, Layout};
use super::storage::Scalar;
use crate::error::ErrorKind;
use crate::vm::value::{err, VResult};

fn mismatch(a: &[usize], b: &[usize]) -> crate::vm::value::Exc {
    err(ErrorKind::ShapeError, format!("matmul: shapes {} and {} are not aligned", shape_str(a), shape_str(b)))
}

pub fn matmul(a: &Tensor, b: &Tensor) -> VResult<Tensor> {
    if a.ndim() == 0 || b.ndim() == 0 {
        return Err(err(ErrorKind::ValueError, "matmul: an operand is 0-d (use * to scale)"));
    }
    let d = DType::promote(a.dtype, b.dtype);
    let x = if a.dtype == d { a.clone() } else { a.astype(d)? };
    let y = if b.dtype == d { b.clone() } else { b.astype(d)? };
    // Lift 1-D operands to matrices.
    let xl = if x.ndim() == 1 { x.view(Layout { shape: vec![1, x.shape()[0]], strides: vec![0, x.layout.strides[0]], offset: x.layout.offset }) } else { x.clone() };
    let yl = if y.ndim() == 1 { y.view(Layout { shape: vec![y.shape()[0], 1], strides: vec![y.layout.strides[0], 0], offset: y.layout.offset }) } else { y.clone() };
    let (xs, ys) = (xl.shape(), yl.shape());
    let (m, k) = (xs[xs.len() - 2], xs[xs.len() - 1]);
    let (k2, n) = (ys[ys.len() - 2], ys[ys.len() - 1]);
    if k != k2 {
        return Err(mismatch(a.shape(), b.shape()));
    }
    let batch = broadcast_shapes(&xs[..xs.len() - 2], &ys[..ys.len() - 2]).map_err(|_| mismatch(a.shape(), b.shape()))?;
    let mut out_shape = batch.clone();
    out_shape.push(m);
    out_shape.push(n);
    let mut r = match d {
        DType::F64 => run::<f64>(&xl, &yl, &batch, m, k, n, out_shape.clone()),
        DType::F32 => run::<f32>(&xl, &yl, &batch, m, k, n, out_shape.clone()),
        DType::F16 | DType::BF16 => {
            let (xf, yf) = (xl.astype(DType::F32)?, yl.astype(DType::F32)?);
            run::<f32>(&xf, &yf, &batch, m, k, n, out_shape.clone()).astype(d)?
        }
        _ if d.kind() != Kind::Float => run_int(&xl, &yl, &batch, m, k, n, out_shape.clone()).cast(if d == DType::Bool { DType::Bool } else { d })?,
        _ if d.is_narrow() => return super::codec::narrow::matmul(&x, &y),
        other => return Err(other.check_supported().err().unwrap_or_else(|| err(ErrorKind::TypeError, "bad dtype"))),
    };
    // Drop the lifted axes.
    let mut final_shape = batch;
    if a.ndim() > 1 {
        final_shape.push(m);
    }
    if b.ndim() > 1 {
        final_shape.push(n);
    }
    r = r.reshaped(final_shape)?;
    if (x.node.is_some() || y.node.is_some() || a.node.is_some() || b.node.is_some()) && d.is_float() {
        let xa = if a.dtype == d { a.clone() } else { x.clone() };
        let yb = if b.dtype == d { b.clone() } else { y.clone() };
        r.node = record(Op::Matmul(xa, yb), &r);
    }
    Ok(r)
}

/// Storage offsets of each batch matrix of `t` broadcast over `batch`.
fn batch_offsets(t: &Layout, batch: &[usize]) -> Vec<usize> {
    let nb = t.shape.len() - 2;
    let bl = Layout { shape: t.shape[..nb].to_vec(), strides: t.strides[..nb].to_vec(), offset: t.offset };
    let st = bl.broadcast_strides(batch);
    let mut v = Vec::new();
    for_each_offset(batch, &st, t.offset, |o| v.push(o));
    v
}

fn run<T: Scalar + Default + Kernel>(x: &Tensor, y: &Tensor, batch: &[usize], m: usize, k: usize, n: usize, shape: Vec<usize>) -> Tensor {
    let nb: usize = batch.iter().product();
    let mut out = vec![T::default(); nb * m * n];
    x.with_slice::<T, _>(|sx, lx| {
        y.with_slice::<T, _>(|sy, ly| {
            let ox = batch_offsets(lx, batch);
            let oy = batch_offsets(ly, batch);
            let (xr, xc) = (lx.strides[lx.shape.len() - 2], lx.strides[lx.shape.len() - 1]);
            let (yr, yc) = (ly.strides[ly.shape.len() - 2], ly.strides[ly.shape.len() - 1]);
            // Bounded by the program's thread count (`set_threads`, `--threads`).
            let threads = if m * n * k >= 1 << 18 { rayon::current_num_threads().min(crate::par::threads()) } else { 1 };
            for (bi, (&px, &py)) in ox.iter().zip(&oy).enumerate() {
                if m == 0 || n == 0 {
                    continue;
                }
                let Some(dst) = out.get_mut(bi * m * n..(bi + 1) * m * n) else { continue };
                if k == 0 {
                    continue;
                }
                let (pa, pb) = (sx.as_ptr().wrapping_offset(px as isize), sy.as_ptr().wrapping_offset(py as isize));
                // SAFETY: the layouts of x and y address only elements inside
                // their storage slices (offset + strides within bounds, checked
                // when the views were made); dst has m*n elements, row-major.
                unsafe { T::kernel(m, n, k, pa, (xr, xc), pb, (yr, yc), dst.as_mut_ptr(), threads) };
            }
        })
    });
    Tensor::from_vec(out, shape)
}

/// One dense `m x n` product `dst = a @ b` of strided matrices: OpenBLAS
/// when built with the `blas` feature and both operands have a unit-strided
/// axis, else the `gemm` crate (multi-threaded on rayon when `threads > 1`).
pub trait Kernel: Sized + Copy + 'static {
    /// # Safety
    /// `a` and `b` with their (row, column) strides must address only valid
    /// elements for the sizes given; `dst` must hold `m * n` elements.
    #[allow(clippy::too_many_arguments)]
    unsafe fn kernel(m: usize, n: usize, k: usize, a: *const Self, sa: (isize, isize), b: *const Self, sb: (isize, isize), dst: *mut Self, threads: usize);
}

macro_rules! kernel_impl {
    ($t:ty) => {
        impl Kernel for $t {
            unsafe fn kernel(m: usize, n: usize, k: usize, a: *const $t, sa: (isize, isize), b: *const $t, sb: (isize, isize), dst: *mut $t, threads: usize) {
                #[cfg(feature = "blas")]
                {
                    use super::cblas::{operand, Gemm};
                    if let (Some(fa), Some(fb), true) = (operand(m, k, sa.0, sa.1), operand(k, n, sb.0, sb.1), i32::try_from(n).is_ok()) {
                        if <$t as Gemm>::gemm(m, n, k, a, fa, b, fb, dst) {
                            return;
                        }
                    }
                }
                let par = if threads > 1 { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
                gemm::gemm(m, n, k, dst, 1, n as isize, false, a, sa.1, sa.0, b, sb.1, sb.0, 0.0, 1.0, false, false, false, par);
            }
        }
    };
}
kernel_impl!(f32);
kernel_impl!(f64);

fn run_int(x: &Tensor, y: &Tensor, batch: &[usize], m: usize, k: usize, n: usize, shape: Vec<usize>) -> Tensor {
    let nb: usize = batch.iter().product();
    let mut out = vec![0i64; nb * m * n];
    x.with_slice::<i64, _>(|sx, lx| {
        y.with_slice::<i64, _>(|sy, ly| {
            let ox = batch_offsets(lx, batch);
            let oy = batch_offsets(ly, batch);
            let (xr, xc) = (lx.strides[lx.shape.len() - 2], lx.strides[lx.shape.len() - 1]);
            let (yr, yc) = (ly.strides[ly.shape.len() - 2], ly.strides[ly.shape.len() - 1]);
            for (bi, (&px, &py)) in ox.iter().zip(&oy).enumerate() {
                for i in 0..m {
                    for j in 0..n {
                        let mut acc = 0i64;
                        for p in 0..k {
                            let a = sx.get((px as isize + i as isize * xr + p as isize * xc) as usize).copied().unwrap_or(0);
                            let b = sy.get((py as isize + p as isize * yr + j as isize * yc) as usize).copied().unwrap_or(0);
                            acc = acc.wrapping_add(a.wrapping_mul(b));
                        }
                        if let Some(o) = out.get_mut(bi * m * n + i * n + j) {
                            *o = acc;
                        }
                    }
                }
            }
        })
    });
    Tensor::from_vec(out, shape)
}
