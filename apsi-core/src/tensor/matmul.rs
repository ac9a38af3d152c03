//! `matmul`/`@` for 1-D, 2-D and batched operands (NumPy's rules). Each
//! f32/f64 product runs on the `gemm` crate or on the system OpenBLAS
//! (`blas` feature, see [`super::cblas`]); [`choose`] says which and why.

use super::autodiff::{record, Op};
use super::core::Tensor;
use super::dtype::{DType, Kind};
use super::gemv::{gemv, Real, Strided};
use super::layout::{broadcast_shapes, for_each_offset, shape_str, Layout};
use super::storage::Scalar;
use crate::error::ErrorKind;
use crate::value::{err, VResult};

fn mismatch(a: &[usize], b: &[usize]) -> crate::value::Exc {
    err(
        ErrorKind::ShapeError,
        format!("matmul: shapes {} and {} are not aligned", shape_str(a), shape_str(b)),
    )
}

pub fn matmul(a: &Tensor, b: &Tensor) -> VResult<Tensor> {
    if a.ndim() == 0 || b.ndim() == 0 {
        return Err(err(ErrorKind::ValueError, "matmul: an operand is 0-d (use * to scale)"));
    }
    let d = DType::promote(a.dtype, b.dtype);
    let x = if a.dtype == d { a.clone() } else { a.astype(d)? };
    let y = if b.dtype == d { b.clone() } else { b.astype(d)? };
    // Lift 1-D operands to matrices.
    let xl = if x.ndim() == 1 {
        x.view(Layout {
            shape: vec![1, x.shape()[0]],
            strides: vec![0, x.layout.strides[0]],
            offset: x.layout.offset,
        })
    } else {
        x.clone()
    };
    let yl = if y.ndim() == 1 {
        y.view(Layout {
            shape: vec![y.shape()[0], 1],
            strides: vec![y.layout.strides[0], 0],
            offset: y.layout.offset,
        })
    } else {
        y.clone()
    };
    let (xs, ys) = (xl.shape(), yl.shape());
    let (m, k) = (xs[xs.len() - 2], xs[xs.len() - 1]);
    let (k2, n) = (ys[ys.len() - 2], ys[ys.len() - 1]);
    if k != k2 {
        return Err(mismatch(a.shape(), b.shape()));
    }
    let batch =
        broadcast_shapes(&xs[..xs.len() - 2], &ys[..ys.len() - 2]).map_err(|_| mismatch(a.shape(), b.shape()))?;
    let mut out_shape = batch.clone();
    out_shape.push(m);
    out_shape.push(n);
    // The result must be allocatable (this also keeps `batch * m * n` below from overflowing).
    super::layout::checked_size(&out_shape)?;
    // A stack of matrices times one matrix (`(B, m, k) @ (k, n)`, a layer's
    // weight applied to a batch of sequences) is one `(B·m, k) @ (k, n)`
    // product when the stack's rows lie evenly spaced: one well-shaped GEMM
    // instead of B small ones.
    let (xl, batch_run, m_run) = match merged_rows(&xl, &yl, &batch) {
        Some(rows) => (rows, Vec::new(), batch.iter().product::<usize>() * m),
        None => (xl, batch.clone(), m),
    };
    let mut r = match d {
        DType::F64 => run::<f64>(&xl, &yl, &batch_run, m_run, k, n, out_shape.clone()),
        DType::F32 => run::<f32>(&xl, &yl, &batch_run, m_run, k, n, out_shape.clone()),
        DType::F16 | DType::BF16 => {
            let (xf, yf) = (xl.astype(DType::F32)?, yl.astype(DType::F32)?);
            run::<f32>(&xf, &yf, &batch_run, m_run, k, n, out_shape.clone()).astype(d)?
        }
        _ if d.kind() != Kind::Float => run_int(&xl, &yl, &batch_run, m_run, k, n, out_shape.clone())
            .cast(if d == DType::Bool { DType::Bool } else { d })?,
        _ if d.is_narrow() => return super::codec::narrow::matmul(&x, &y),
        other => {
            return Err(other
                .check_supported()
                .err()
                .unwrap_or_else(|| err(ErrorKind::TypeError, "bad dtype")))
        }
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

/// `x` (batch dims, m, k) as one `(B·m, k)` matrix view, when `y` has no
/// batch dims of its own and x's batch and row axes step through storage
/// evenly (each axis' stride is the next one's times its length).
fn merged_rows(x: &Tensor, y: &Tensor, batch: &[usize]) -> Option<Tensor> {
    let (xs, st) = (&x.layout.shape, &x.layout.strides);
    if batch.is_empty() || y.ndim() != 2 || xs.len() != batch.len() + 2 {
        return None;
    }
    let rows = xs.len() - 1; // axes 0..rows are merged, axis `rows` is k
    for i in 0..rows - 1 {
        if xs[i] != 1 && st[i] != st[i + 1] * xs[i + 1] as isize {
            return None;
        }
    }
    let total: usize = xs[..rows].iter().product();
    Some(x.view(Layout {
        shape: vec![total, xs[rows]],
        strides: vec![st[rows - 1], st[rows]],
        offset: x.layout.offset,
    }))
}

/// Storage offsets of each batch matrix of `t` broadcast over `batch`.
fn batch_offsets(t: &Layout, batch: &[usize]) -> Vec<usize> {
    let nb = t.shape.len() - 2;
    let bl = Layout {
        shape: t.shape[..nb].to_vec(),
        strides: t.strides[..nb].to_vec(),
        offset: t.offset,
    };
    let st = bl.broadcast_strides(batch);
    let mut v = Vec::with_capacity(batch.iter().product());
    for_each_offset(batch, &st, t.offset, |o| v.push(o));
    v
}

fn run<T: Scalar + Default + Kernel + Real>(
    x: &Tensor,
    y: &Tensor,
    batch: &[usize],
    m: usize,
    k: usize,
    n: usize,
    shape: Vec<usize>,
) -> Tensor {
    let nb: usize = batch.iter().product();
    let len = nb * m * n;
    // The result is written in place by the kernels below (each writes all
    // of its m * n elements: BLAS with beta = 0, the crate without reading
    // dst, gemv every row), so it is not zeroed first: that pass cost 3-5%
    // of a 32x32 to 128x128 product.
    let mut out: Vec<T> = Vec::with_capacity(len);
    let base = out.as_mut_ptr();
    x.with_slice::<T, _>(|sx, lx| {
        y.with_slice::<T, _>(|sy, ly| {
            let (xr, xc) = (lx.strides[lx.shape.len() - 2], lx.strides[lx.shape.len() - 1]);
            let (yr, yc) = (ly.strides[ly.shape.len() - 2], ly.strides[ly.shape.len() - 1]);
            // Bounded by the program's thread count (`set_threads`, `--threads`).
            let pool = crate::par::kernel_pool::threads().min(crate::par::threads());
            let work = m.saturating_mul(n).saturating_mul(k);
            let threads = if work >= PAR_WORK { pool } else { 1 };
            // One backend for every product of the call, whatever the thread count.
            let be = choose(m, n, k, has_avx512(), blas_small_kernels, forced());
            // OpenBLAS chosen by size runs each product on one thread (see `choose`),
            // made ready once for all the products of the call.
            let blas_by_size = be == Backend::OpenBlas && forced().is_none();
            let blas_ready = if blas_by_size && m > 1 && n > 1 && k > 0 {
                T::prepare_blas(m, n, k, (xr, xc), (yr, yc))
            } else {
                None
            };
            // The address, not the pointer, so that products of a batch can
            // run on several threads (each writes its own m * n elements).
            let base_addr = base as usize;
            let product = |bi: usize, px: usize, py: usize| {
                if m == 0 || n == 0 {
                    return;
                }
                // SAFETY: bi < nb, so dst's m * n elements lie inside out's capacity.
                let dst = unsafe { (base_addr as *mut T).add(bi * m * n) };
                if k == 0 {
                    // SAFETY: as above; all-zero bits are 0.0 in f32 and f64.
                    unsafe { std::ptr::write_bytes(dst, 0, m * n) };
                    return;
                }
                let (pa, pb) = (sx.as_ptr().wrapping_add(px), sy.as_ptr().wrapping_add(py));
                // A vector on either side: stream the matrix (gemv.rs).
                // SAFETY: as for the kernel below; dst holds m * n elements.
                if n == 1 || m == 1 {
                    let (rows, a, v, sv) = if n == 1 {
                        (
                            m,
                            Strided {
                                ptr: pa,
                                rs: xr,
                                cs: xc,
                            },
                            pb,
                            yr,
                        )
                    } else {
                        (
                            n,
                            Strided {
                                ptr: pb,
                                rs: yc,
                                cs: yr,
                            },
                            pa,
                            xc,
                        )
                    };
                    if unsafe { gemv(rows, k, a, v, sv, dst, threads) } {
                        return;
                    }
                }
                if let Some(ready) = &blas_ready {
                    // SAFETY: as below; the operands have the prepared sizes and strides.
                    unsafe { ready.run(pa, pb, dst) };
                    return;
                }
                let threads = if blas_by_size { 1 } else { threads };
                // SAFETY: the layouts of x and y address only elements inside
                // their storage slices (offset + strides within bounds, checked
                // when the views were made); dst has m*n elements, row-major.
                unsafe { T::kernel_on(be, m, n, k, pa, (xr, xc), pb, (yr, yc), dst, threads) };
            };
            if batch.is_empty() {
                product(0, lx.offset, ly.offset);
            } else {
                let ox = batch_offsets(lx, batch);
                let oy = batch_offsets(ly, batch);
                // (Not under APSI_MATMUL=openblas: the library's own threads run each product.)
                let shared = (threads == 1 || blas_by_size)
                    && pool > 1
                    && nb > 1
                    && work.saturating_mul(nb) >= PAR_WORK
                    && (be == Backend::Gemm || blas_by_size);
                if shared {
                    // A stack of products each too small to split (attention's
                    // per-head `q @ kᵀ`) or each run by OpenBLAS on one thread:
                    // whole products are shared among the threads instead
                    // (OpenBLAS's one-thread calls run side by side). Each is
                    // still computed by one thread with the same kernel, so the
                    // bits do not depend on the split.
                    use rayon::prelude::*;
                    ox.par_iter()
                        .zip(oy.par_iter())
                        .enumerate()
                        .for_each(|(bi, (&px, &py))| product(bi, px, py));
                } else {
                    for (bi, (&px, &py)) in ox.iter().zip(&oy).enumerate() {
                        product(bi, px, py);
                    }
                }
            }
        })
    });
    // SAFETY: every product above wrote its m * n elements (nb of them).
    unsafe { out.set_len(len) };
    Tensor::from_vec(out, shape)
}

/// Products of at least this many multiply-adds (64^3) run on
/// `min(--threads, rayon's pool)` threads, smaller ones on one.
pub const PAR_WORK: usize = 1 << 18;

/// Which library multiplies one f32/f64 product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The `gemm` crate: its AVX-512 kernels where the CPU has AVX-512F, else AVX2+FMA (or its portable ones).
    Gemm,
    /// The system OpenBLAS (`blas` feature, `libopenblas.so.0` loadable), with its own kernel choice
    /// (which the user's `OPENBLAS_CORETYPE` steers).
    OpenBlas,
}

/// Products below this many multiply-adds (16 x 16 x 16) go to OpenBLAS where it is there on a CPU
/// with AVX-512, whatever its kernels: the `gemm` crate's set-up costs more than such a product (in
/// one process on the AVX-512 machine, gemm crate against OpenBLAS's Haswell kernels: 4^3 0.3x, 8^3
/// 0.5x (f32) to 1.0x (f64); see docs/ARCHITECTURE.md, "Matmul").
pub const SMALL: u64 = 16 * 16 * 16;

/// Products of at most this many multiply-adds (100^3) go to OpenBLAS where it runs its AVX-512
/// small-matrix kernels ([`super::cblas::small_kernels`]; OpenBLAS's own limit for them): 1.03x to
/// 1.2x the `gemm` crate's AVX-512 kernels on one thread from 16^3 to 100^3 (f32 and f64, square and
/// oblong; docs/ARCHITECTURE.md, "Matmul"), where the crate still runs one thread (its own split
/// starts at 48 x 48 x 256).
pub const BLAS_SMALL: u64 = 100 * 100 * 100;

/// The backend for an `m x k @ k x n` product (alone or one of a stack), from what the CPU has, what OpenBLAS runs (`blas_small_kernels`,
/// asked only when it matters: it loads the library) and what the user forced. It never depends
/// on the thread count, and every product it gives OpenBLAS runs there on one thread, because
/// OpenBLAS's bits change with its thread count (OpenBLAS 0.3.21, f64 96x300x80), and even with how
/// its rows are shared out (its small-matrix kernel for `x @ w.T` gives other bits for a band of 16
/// or 32 rows than for the whole: 64x64x64 and 100^3, 0.3.21); the crate splits a product between
/// threads by rows and columns, never along k. So a product gives the same bits on 1 and 2 threads
/// (`same_bits_on_1_and_2_threads`, `openblas_only_gets_small_products`).
///
/// - `APSI_MATMUL=gemm` or `=openblas` ([`forced`]) wins (for measuring one against the other).
/// - Without AVX-512 both libraries run AVX2 kernels: the crate has less set-up per call and won up
///   to about 1024^3 (f32) and 1536^3 (f64) on one thread (1.0x to 1.36x against OpenBLAS 0.3.21's
///   Zen kernels, AMD EPYC; 0.91-0.93x at 2048^3: bench/tensor/README.md), and it runs every
///   product (OpenBLAS above would make the bits depend on the thread count).
/// - With AVX-512F: OpenBLAS below [`SMALL`]; OpenBLAS up to [`BLAS_SMALL`] where it has its
///   AVX-512 small-matrix kernels (a stack of such products is shared out whole among the
///   threads, one call each); the crate's AVX-512 kernels for the rest (about twice as fast as
///   OpenBLAS's AVX2 (Haswell) kernels, which OpenBLAS runs when the user sets
///   `OPENBLAS_CORETYPE=Haswell`, as on the reference machine for NumPy too, and as fast as or
///   faster than its own AVX-512 (SkylakeX) kernels above 100^3).
/// - Whatever is chosen, `OpenBlas` falls back to the `gemm` crate when no OpenBLAS can be loaded
///   or an operand has no unit-strided axis.
pub fn choose(
    m: usize,
    n: usize,
    k: usize,
    avx512: bool,
    blas_small_kernels: impl FnOnce() -> bool,
    forced: Option<Backend>,
) -> Backend {
    if let Some(b) = forced {
        return b;
    }
    let work = (m as u64).saturating_mul(n as u64).saturating_mul(k as u64);
    let blas = avx512 && (work < SMALL || (work <= BLAS_SMALL && blas_small_kernels()));
    if blas {
        Backend::OpenBlas
    } else {
        Backend::Gemm
    }
}

/// Whether OpenBLAS runs its AVX-512 small-matrix kernels here (loads it).
fn blas_small_kernels() -> bool {
    #[cfg(feature = "blas")]
    {
        super::cblas::small_kernels()
    }
    #[cfg(not(feature = "blas"))]
    {
        false
    }
}

/// The backend `APSI_MATMUL` names (`gemm` or `openblas`, any case), read once; any other value
/// (or none) leaves the choice to [`choose`].
pub fn forced() -> Option<Backend> {
    static FORCED: std::sync::OnceLock<Option<Backend>> = std::sync::OnceLock::new();
    *FORCED.get_or_init(
        || match std::env::var("APSI_MATMUL").map(|v| v.to_ascii_lowercase()).as_deref() {
            Ok("gemm") => Some(Backend::Gemm),
            Ok("openblas") => Some(Backend::OpenBlas),
            _ => None,
        },
    )
}

/// Whether the CPU has AVX-512F (the `gemm` crate's test for its AVX-512 kernels), detected once.
pub fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static AVX512: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AVX512.get_or_init(|| std::arch::is_x86_feature_detected!("avx512f"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// One dense `m x n` product `dst = a @ b` of strided matrices, on the backend [`choose`] picks
/// (multi-threaded when `threads > 1`).
pub trait Kernel: Sized + Copy + 'static {
    /// OpenBLAS made ready on one thread for `m x k @ k x n` products with the (row, column)
    /// strides `sa` and `sb` (`None`: no OpenBLAS, or an operand it cannot take).
    fn prepare_blas(m: usize, n: usize, k: usize, sa: (isize, isize), sb: (isize, isize)) -> Option<BlasReady<Self>>;

    /// `dst = a @ b` on `be` (OpenBLAS falls back to the `gemm` crate where it cannot run), on
    /// `threads` threads.
    ///
    /// # Safety
    /// `a` and `b` with their (row, column) strides must address only valid
    /// elements for the sizes given; `dst` must hold `m * n` elements.
    #[allow(clippy::too_many_arguments)]
    unsafe fn kernel_on(
        be: Backend,
        m: usize,
        n: usize,
        k: usize,
        a: *const Self,
        sa: (isize, isize),
        b: *const Self,
        sb: (isize, isize),
        dst: *mut Self,
        threads: usize,
    );
}

/// Products made ready for OpenBLAS ([`super::cblas::Prepared`]); never made without the `blas` feature.
#[cfg(feature = "blas")]
pub type BlasReady<T> = super::cblas::Prepared<T>;

/// Products made ready for OpenBLAS; never made without the `blas` feature.
#[cfg(not(feature = "blas"))]
pub struct BlasReady<T>(std::convert::Infallible, std::marker::PhantomData<T>);

#[cfg(not(feature = "blas"))]
impl<T> BlasReady<T> {
    /// # Safety
    /// Never called: no value of this type exists.
    pub unsafe fn run(&self, _a: *const T, _b: *const T, _c: *mut T) {
        match self.0 {}
    }
}

macro_rules! kernel_impl {
    ($t:ty) => {
        impl Kernel for $t {
            fn prepare_blas(
                m: usize,
                n: usize,
                k: usize,
                sa: (isize, isize),
                sb: (isize, isize),
            ) -> Option<BlasReady<$t>> {
                #[cfg(feature = "blas")]
                {
                    super::cblas::prepare::<$t>(m, n, k, sa, sb, 1)
                }
                #[cfg(not(feature = "blas"))]
                {
                    let _ = (m, n, k, sa, sb);
                    None
                }
            }

            unsafe fn kernel_on(
                be: Backend,
                m: usize,
                n: usize,
                k: usize,
                a: *const $t,
                sa: (isize, isize),
                b: *const $t,
                sb: (isize, isize),
                dst: *mut $t,
                threads: usize,
            ) {
                #[cfg(feature = "blas")]
                if be == Backend::OpenBlas {
                    if let Some(ready) = super::cblas::prepare::<$t>(m, n, k, sa, sb, threads) {
                        ready.run(a, b, dst);
                        return;
                    }
                }
                #[cfg(not(feature = "blas"))]
                let _ = be;
                let par = if threads > 1 {
                    gemm::Parallelism::Rayon(threads)
                } else {
                    gemm::Parallelism::None
                };
                gemm::gemm(
                    m, n, k, dst, 1, n as isize, false, a, sa.1, sa.0, b, sb.1, sb.0, 0.0, 1.0, false, false, false,
                    par,
                );
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
                            let a = sx
                                .get((px as isize + i as isize * xr + p as isize * xc) as usize)
                                .copied()
                                .unwrap_or(0);
                            let b = sy
                                .get((py as isize + p as isize * yr + j as isize * yc) as usize)
                                .copied()
                                .unwrap_or(0);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A small xorshift generator: uniform values in [-1, 1).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        }
        fn below(&mut self, n: usize) -> usize {
            ((self.next() + 1.0) * 0.5 * n as f64) as usize % n
        }
    }

    /// How a `rows x cols` operand is laid out in its buffer.
    #[derive(Clone, Copy, Debug)]
    enum Form {
        RowMajor,
        /// Column-major: a transposed view.
        ColMajor,
        /// Every other column of a wider matrix, from column 1 (no unit-strided axis).
        Sliced,
        /// Row-major with the rows reversed (a negative row stride).
        Reversed,
    }
    const FORMS: [Form; 4] = [Form::RowMajor, Form::ColMajor, Form::Sliced, Form::Reversed];

    /// A random operand: its buffer, the offset of element (0, 0), the strides.
    fn operand(rng: &mut Rng, rows: usize, cols: usize, form: Form) -> (Vec<f64>, usize, (isize, isize)) {
        let (r, c) = (rows as isize, cols as isize);
        let (len, off, st) = match form {
            Form::RowMajor => (rows * cols, 0, (c, 1)),
            Form::ColMajor => (rows * cols, 0, (1, r)),
            Form::Sliced => (rows * (2 * cols + 1), 1, (2 * c + 1, 2)),
            Form::Reversed => (rows * cols, (rows.max(1) - 1) * cols, (-c, 1)),
        };
        ((0..len).map(|_| rng.next()).collect(), off, st)
    }

    fn at(v: &[f64], off: usize, st: (isize, isize), i: usize, j: usize) -> f64 {
        v[(off as isize + i as isize * st.0 + j as isize * st.1) as usize]
    }

    /// Multiplies with `T` on `be` and checks every element against an f64 reference, within
    /// k * eps(T) * sum |a||b| (the classic bound on a length-k dot product's rounding error).
    #[allow(clippy::too_many_arguments)]
    fn check<T: Kernel + Default + PartialEq + std::fmt::Debug>(
        rng: &mut Rng,
        be: Backend,
        m: usize,
        k: usize,
        n: usize,
        fa: Form,
        fb: Form,
        threads: usize,
        eps: f64,
        conv: fn(f64) -> T,
        back: fn(T) -> f64,
    ) {
        let (va, oa, sa) = operand(rng, m, k, fa);
        let (vb, ob, sb) = operand(rng, k, n, fb);
        // Round the inputs to T first so the reference sees the same numbers.
        let (va, vb): (Vec<f64>, Vec<f64>) = (
            va.into_iter().map(|x| back(conv(x))).collect(),
            vb.into_iter().map(|x| back(conv(x))).collect(),
        );
        let (ta, tb): (Vec<T>, Vec<T>) = (
            va.iter().map(|&x| conv(x)).collect(),
            vb.iter().map(|&x| conv(x)).collect(),
        );
        let mut c = vec![T::default(); m * n];
        // SAFETY: the forms above address only elements inside ta and tb; c has m * n elements.
        unsafe {
            T::kernel_on(
                be,
                m,
                n,
                k,
                ta.as_ptr().wrapping_add(oa),
                sa,
                tb.as_ptr().wrapping_add(ob),
                sb,
                c.as_mut_ptr(),
                threads,
            )
        };
        for i in 0..m {
            for j in 0..n {
                let (mut want, mut mag) = (0.0, 0.0);
                for p in 0..k {
                    let x = at(&va, oa, sa, i, p) * at(&vb, ob, sb, p, j);
                    want += x;
                    mag += x.abs();
                }
                let got = back(c[i * n + j]);
                let tol = (k as f64 + 1.0) * eps * mag + 1e-300;
                assert!((got - want).abs() <= tol, "{be:?} {m}x{k} @ {k}x{n} ({fa:?}, {fb:?}, {threads} threads): c[{i},{j}] = {got}, want {want} (tol {tol})");
            }
        }
    }

    const SIZES: [usize; 10] = [1, 2, 3, 7, 8, 16, 17, 31, 33, 129];

    fn random_products(be: Backend, seed: u64) {
        let mut rng = Rng(seed);
        for round in 0..48 {
            let (m, k, n) = (
                SIZES[rng.below(SIZES.len())],
                SIZES[rng.below(SIZES.len())],
                SIZES[rng.below(SIZES.len())],
            );
            let (fa, fb) = (FORMS[round % 4], FORMS[(round / 4) % 4]);
            check::<f64>(&mut rng, be, m, k, n, fa, fb, 1, f64::EPSILON, |x| x, |x| x);
            check::<f32>(
                &mut rng,
                be,
                m,
                k,
                n,
                fa,
                fb,
                1,
                f32::EPSILON as f64,
                |x| x as f32,
                |x| x as f64,
            );
        }
    }

    #[test]
    fn gemm_crate_matches_reference() {
        random_products(Backend::Gemm, 0x9e37_79b9_7f4a_7c15);
    }

    #[test]
    fn openblas_matches_reference() {
        // Without the `blas` feature or a loadable OpenBLAS this runs the gemm crate again.
        random_products(Backend::OpenBlas, 0x2545_f491_4f6c_dd1d);
    }

    #[test]
    fn threaded_and_large_products() {
        // Large enough for the crate's threads and several cache blocks in every dimension.
        let mut rng = Rng(7);
        for (m, k, n) in [(257, 300, 131), (67, 1031, 65), (1, 2000, 300), (300, 2000, 1)] {
            for be in [Backend::Gemm, Backend::OpenBlas] {
                check::<f64>(
                    &mut rng,
                    be,
                    m,
                    k,
                    n,
                    Form::RowMajor,
                    Form::ColMajor,
                    2,
                    f64::EPSILON,
                    |x| x,
                    |x| x,
                );
                check::<f32>(
                    &mut rng,
                    be,
                    m,
                    k,
                    n,
                    Form::Sliced,
                    Form::RowMajor,
                    2,
                    f32::EPSILON as f64,
                    |x| x as f32,
                    |x| x as f64,
                );
            }
        }
    }

    /// The bits of one product on `be` with `threads` threads (row-major a, transposed b).
    fn bits_of<T: Kernel + Default + Copy>(
        be: Backend,
        (m, k, n): (usize, usize, usize),
        threads: usize,
        conv: fn(f64) -> T,
        bits: fn(T) -> u64,
    ) -> Vec<u64> {
        let mut rng = Rng(0x5eed ^ (m * 31 + k * 7 + n) as u64);
        let a: Vec<T> = (0..m * k).map(|_| conv(rng.next())).collect();
        let b: Vec<T> = (0..k * n).map(|_| conv(rng.next())).collect();
        let mut c = vec![T::default(); m * n];
        // SAFETY: a is m x k row-major, b is k x n column-major; c has m * n elements.
        unsafe {
            T::kernel_on(
                be,
                m,
                n,
                k,
                a.as_ptr(),
                (k as isize, 1),
                b.as_ptr(),
                (1, k as isize),
                c.as_mut_ptr(),
                threads,
            )
        };
        c.into_iter().map(bits).collect()
    }

    /// A stack of products too small to split, shared among threads whole:
    /// each lands in its own place, and the bits are those of one thread.
    #[test]
    fn a_stack_of_small_products_is_shared_among_threads() {
        let (b, h, m, k, n) = (8usize, 4, 64, 32, 48);
        let mut rng = Rng(0xba7c);
        let x: Vec<f32> = (0..b * h * m * k).map(|_| rng.next() as f32).collect();
        let y: Vec<f32> = (0..b * h * k * n).map(|_| rng.next() as f32).collect();
        let xt = Tensor::from_vec(x.clone(), vec![b, h, m, k]);
        let yt = Tensor::from_vec(y.clone(), vec![b, h, k, n]);
        assert!(m * n * k < PAR_WORK && b * h * m * n * k >= PAR_WORK);
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a pool");
            pool.install(|| matmul(&xt, &yt).expect("a product").to_vec::<f32>())
        };
        let one = on(1);
        let two = on(2);
        assert!(
            one.iter().zip(&two).all(|(p, q)| p.to_bits() == q.to_bits()),
            "1 and 2 threads differ"
        );
        for p in 0..b * h {
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k)
                        .map(|l| x[(p * m + i) * k + l] as f64 * y[(p * k + l) * n + j] as f64)
                        .sum();
                    let got = two[(p * m + i) * n + j] as f64;
                    assert!(
                        (got - want).abs() < 1e-4,
                        "product {p} ({i}, {j}): {got} against {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn same_bits_on_1_and_2_threads() {
        // Every size where a second thread joins, the inner dimension on both sides of the
        // libraries' depth blocks (OpenBLAS's single- and multi-threaded drivers split k
        // between 256 and 768 differently when their block sizes differ).
        let sizes = [
            (64, 64, 64),
            (96, 300, 80),
            (128, 400, 128),
            (256, 600, 256),
            (200, 1000, 300),
        ];
        for be in [Backend::Gemm] {
            for &s in &sizes {
                let one = bits_of::<f64>(be, s, 1, |x| x, f64::to_bits);
                assert!(
                    one == bits_of::<f64>(be, s, 2, |x| x, f64::to_bits),
                    "{be:?} f64 {s:?}: 1 and 2 threads differ"
                );
                let one = bits_of::<f32>(be, s, 1, |x| x as f32, |x| x.to_bits() as u64);
                assert!(
                    one == bits_of::<f32>(be, s, 2, |x| x as f32, |x| x.to_bits() as u64),
                    "{be:?} f32 {s:?}: 1 and 2 threads differ"
                );
            }
        }
    }

    /// Products in OpenBLAS's band through `matmul`, on 1 and 2 threads: the same bits, and right.
    #[test]
    fn products_up_to_blas_small_give_the_same_bits_on_1_and_2_threads() {
        let mut rng = Rng(0x51de);
        for (m, k, n) in [(64, 64, 64), (96, 100, 96), (160, 30, 200), (80, 80, 80), (33, 500, 60)] {
            let x: Vec<f64> = (0..m * k).map(|_| rng.next()).collect();
            let y: Vec<f64> = (0..k * n).map(|_| rng.next()).collect();
            let xt = Tensor::from_vec(x.clone(), vec![m, k]);
            let yt = super::super::shape::permute(&Tensor::from_vec(y.clone(), vec![n, k]), &[1, 0]).expect("a view");
            for d in [DType::F64, DType::F32] {
                let two = same_bits_on_1_and_2(&xt, &yt, d);
                for i in 0..m {
                    for j in 0..n {
                        let want: f64 = (0..k).map(|l| x[i * k + l] * y[j * k + l]).sum();
                        assert!((two[i * n + j] - want).abs() < 1e-3, "{d:?} {m}x{k}x{n} ({i}, {j})");
                    }
                }
            }
        }
    }

    /// `x @ y` in `d` on rayon pools of 1 and 2 threads: checks that the bits
    /// agree and returns the product as f64 values.
    fn same_bits_on_1_and_2(x: &Tensor, y: &Tensor, d: DType) -> Vec<f64> {
        let (a, b) = (x.astype(d).expect("cast"), y.astype(d).expect("cast"));
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a pool");
            pool.install(|| {
                matmul(&a, &b)
                    .expect("a product")
                    .astype(DType::F64)
                    .expect("cast")
                    .to_vec::<f64>()
            })
        };
        let (one, two) = (on(1), on(2));
        assert!(
            one.iter().zip(&two).all(|(p, q)| p.to_bits() == q.to_bits()),
            "{d:?} {:?} @ {:?}: 1 and 2 threads differ",
            x.shape(),
            y.shape()
        );
        two
    }

    /// A stack of products each big enough for two threads but run by OpenBLAS
    /// on one (up to 100^3) is shared out whole: the same bits on 1 and 2 threads.
    #[test]
    fn a_stack_of_blas_sized_products_gives_the_same_bits_on_1_and_2_threads() {
        let mut rng = Rng(0x57ac);
        for (b, m, k, n) in [(4usize, 80usize, 80usize, 80usize), (3, 100, 100, 100), (5, 70, 90, 64)] {
            assert!(m * n * k >= PAR_WORK && (m * n * k) as u64 <= BLAS_SMALL);
            let x: Vec<f64> = (0..b * m * k).map(|_| rng.next()).collect();
            let y: Vec<f64> = (0..b * k * n).map(|_| rng.next()).collect();
            let (xt, yt) = (Tensor::from_vec(x, vec![b, m, k]), Tensor::from_vec(y, vec![b, k, n]));
            for d in [DType::F64, DType::F32] {
                same_bits_on_1_and_2(&xt, &yt, d);
            }
        }
    }

    /// OpenBLAS's bits depend on its thread count, so it only gets products
    /// small enough for its one-thread small-matrix kernels.
    #[test]
    fn openblas_only_gets_small_products() {
        for avx512 in [false, true] {
            for small_kernels in [false, true] {
                for m in [1usize, 2, 7, 16, 33, 64, 100, 128, 512, 2048] {
                    for k in [1usize, 3, 16, 64, 100, 300, 1024] {
                        for n in [1usize, 5, 16, 80, 100, 256, 2048] {
                            let be = choose(m, n, k, avx512, || small_kernels, None);
                            let work = (m * n * k) as u64;
                            if be == Backend::OpenBlas {
                                assert!(avx512 && work <= BLAS_SMALL, "{m}x{k}x{n}");
                                assert!(work < SMALL || small_kernels, "{m}x{k}x{n}");
                            } else {
                                assert!(!avx512 || work >= SMALL, "{m}x{k}x{n}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn backend_choice() {
        let small = 15;
        let yes = || true;
        let no = || false;
        assert_eq!(choose(512, 512, 512, true, yes, None), Backend::Gemm);
        assert_eq!(choose(16, 16, 16, true, no, None), Backend::Gemm);
        assert_eq!(choose(16, 16, 16, true, yes, None), Backend::OpenBlas);
        assert_eq!(choose(100, 100, 100, true, yes, None), Backend::OpenBlas);
        assert_eq!(choose(100, 101, 100, true, yes, None), Backend::Gemm);
        assert_eq!(choose(1, 4096, 1, true, no, None), Backend::Gemm);
        assert_eq!(choose(small, small, small, true, no, None), Backend::OpenBlas);
        assert_eq!(choose(usize::MAX, usize::MAX, 2, true, yes, None), Backend::Gemm);
        // The library is only asked (and so loaded) about a product it might get.
        let unasked = || -> bool { panic!("asked") };
        assert_eq!(choose(512, 512, 512, true, unasked, None), Backend::Gemm);
        assert_eq!(choose(8, 8, 8, true, unasked, None), Backend::OpenBlas);
        assert_eq!(choose(64, 64, 64, false, unasked, None), Backend::Gemm);
        // Without AVX-512: the crate for every product.
        for s in [2, small, 64, 256, 1024, 1536, 2048] {
            assert_eq!(choose(s, s, s, false, yes, None), Backend::Gemm, "{s}");
        }
        assert_eq!(choose(usize::MAX, usize::MAX, 2, false, yes, None), Backend::Gemm);
        assert_eq!(
            choose(512, 512, 512, true, no, Some(Backend::OpenBlas)),
            Backend::OpenBlas
        );
        assert_eq!(choose(2, 2, 2, false, yes, Some(Backend::Gemm)), Backend::Gemm);
    }

    #[test]
    fn too_large_result_is_an_error() {
        // A broadcast view of 2^62 rows times 4 columns: the result cannot exist.
        let a = Tensor::from_vec(vec![1.0f64], vec![1, 1]).view(Layout {
            shape: vec![1 << 62, 1],
            strides: vec![0, 0],
            offset: 0,
        });
        let b = Tensor::from_vec(vec![1.0f64; 4], vec![1, 4]);
        let e = matmul(&a, &b).err().map(|e| e.message.clone()).unwrap_or_default();
        assert!(e.contains("too large"), "{e}");
    }

    #[test]
    fn batched_views_through_matmul() {
        // (2, 1, 7, 5) @ transposed (3, 5, 9) -> (2, 3, 7, 9), every batch matrix checked.
        let mut rng = Rng(11);
        let av: Vec<f64> = (0..2 * 7 * 5).map(|_| rng.next()).collect();
        let bv: Vec<f64> = (0..3 * 9 * 5).map(|_| rng.next()).collect();
        let a = Tensor::from_vec(av.clone(), vec![2, 1, 7, 5]);
        // b[q, p, j] = bv[q * 45 + j * 5 + p]: the last two axes of a (3, 9, 5) tensor swapped.
        let b = Tensor::from_vec(bv.clone(), vec![3, 9, 5]).view(Layout {
            shape: vec![3, 5, 9],
            strides: vec![45, 1, 5],
            offset: 0,
        });
        for dt in [DType::F64, DType::F32] {
            let r = matmul(&a.astype(dt).unwrap(), &b.astype(dt).unwrap()).unwrap();
            assert_eq!(r.shape(), &[2, 3, 7, 9]);
            assert_eq!(r.dtype, dt);
            let got: Vec<f64> = r.to_vec();
            let tol = if dt == DType::F64 { 1e-14 } else { 1e-5 };
            for (bi, q) in (0..2).flat_map(|x| (0..3).map(move |q| (x, q))) {
                for i in 0..7 {
                    for j in 0..9 {
                        let want: f64 = (0..5).map(|p| av[bi * 35 + i * 5 + p] * bv[q * 45 + j * 5 + p]).sum();
                        let g = got[((bi * 3 + q) * 7 + i) * 9 + j];
                        assert!((g - want).abs() <= tol, "{dt:?} [{bi},{q},{i},{j}]: {g} vs {want}");
                    }
                }
            }
        }
    }
}
