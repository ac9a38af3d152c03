//! `conv2d` and `max_pool2d` with PyTorch's semantics (`torch.nn.functional`),
//! for the `layers` module.
//!
//! `conv2d` lowers the convolution to one matrix product: `im2col` lays the
//! input windows out as the columns of a `(C*kh*kw, N*H'*W')` matrix, the
//! weights are a `(O, C*kh*kw)` matrix, and the core's [`matmul`] multiplies
//! them (the same bits at every thread count: the product never splits a
//! reduction by thread). The backward pass is two more products and a
//! `col2im` (the adjoint of `im2col`, summing each input element's window
//! contributions in one fixed order), all recorded operations, so
//! `grad(grad(f))` differentiates through a convolution too.
//!
//! Dtypes: the result has the promoted dtype of `x`, `w` (and `b`); f64 and
//! f32 compute natively, f16/bf16 in f32 (rounded back), and int or bool
//! operands (which PyTorch refuses) in f64.

use super::autodiff::{record, want, Op};
use super::core::{par_split, Tensor};
use super::dtype::DType;
use super::layout::{checked_size, shape_str};
use super::matmul::matmul;
use super::real::Real;
use super::reduce::{reduce, RKind};
use super::shape::{permute, reshape};
use super::storage::Scalar;
use crate::error::ErrorKind;
use crate::value::{err, Exc, VResult};

/// One sweep of a `kh x kw` window over a batch of `(N, C, H, W)` planes:
/// stride, zero (or -inf) padding and the output size `(oh, ow)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub kh: usize,
    pub kw: usize,
    pub sh: usize,
    pub sw: usize,
    pub ph: usize,
    pub pw: usize,
    pub oh: usize,
    pub ow: usize,
}

fn shape_err(msg: String) -> Exc {
    err(ErrorKind::ShapeError, msg)
}

impl Window {
    /// The sweep over `x` (already checked to be 4-D), or the error `name`
    /// reports for a zero stride or kernel, or a kernel larger than the
    /// padded input.
    fn new(
        name: &str,
        x: &[usize],
        kernel: (usize, usize),
        stride: (usize, usize),
        padding: (usize, usize),
    ) -> VResult<Window> {
        let (n, c, h, w) = (x[0], x[1], x[2], x[3]);
        let (kh, kw) = kernel;
        let (sh, sw) = stride;
        let (ph, pw) = padding;
        if kh == 0 || kw == 0 {
            return Err(err(
                ErrorKind::ValueError,
                format!("{name}() needs a kernel of at least 1 x 1, got ({kh}, {kw})"),
            ));
        }
        if sh == 0 || sw == 0 {
            return Err(err(
                ErrorKind::ValueError,
                format!("{name}() needs strides of at least 1, got ({sh}, {sw})"),
            ));
        }
        let padded = |len: usize, p: usize| p.checked_mul(2).and_then(|p2| len.checked_add(p2));
        let (Some(hp), Some(wp)) = (padded(h, ph), padded(w, pw)) else {
            return Err(err(
                ErrorKind::ValueError,
                format!("{name}() padding ({ph}, {pw}) is too large"),
            ));
        };
        if kh > hp || kw > wp {
            return Err(shape_err(format!(
                "{name}() kernel of size ({kh}, {kw}) is larger than the padded input of size ({hp}, {wp}) (input ({h}, {w}), padding ({ph}, {pw}))"
            )));
        }
        Ok(Window {
            n,
            c,
            h,
            w,
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            oh: (hp - kh) / sh + 1,
            ow: (wp - kw) / sw + 1,
        })
    }

    /// Rows of the column matrix: `C * kh * kw`.
    fn rows(&self) -> usize {
        self.c * self.kh * self.kw
    }

    /// Output positions per plane: `oh * ow`.
    fn plane(&self) -> usize {
        self.oh * self.ow
    }

    /// Columns of the column matrix: `N * oh * ow`.
    fn cols(&self) -> usize {
        self.n * self.plane()
    }

    fn input_shape(&self) -> Vec<usize> {
        vec![self.n, self.c, self.h, self.w]
    }

    /// The input row `iy` (or column) a window offset `i` at output `oy`
    /// reads, `None` in the padding.
    #[inline]
    fn src(o: usize, s: usize, i: usize, p: usize, len: usize) -> Option<usize> {
        (o * s + i).checked_sub(p).filter(|&v| v < len)
    }
}

fn rank4(name: &str, what: &str, t: &Tensor, layout: &str) -> VResult<()> {
    if t.ndim() != 4 {
        return Err(shape_err(format!(
            "{name}() expects {what} of rank 4 {layout}, got a tensor of shape {}",
            shape_str(t.shape())
        )));
    }
    Ok(())
}

/// The dtype a convolution computes in, for a result of dtype `d`.
fn compute_dtype(d: DType) -> VResult<DType> {
    let d = d.check_supported()?;
    Ok(match d {
        DType::F64 | DType::F32 => d,
        DType::F16 | DType::BF16 => DType::F32,
        _ => DType::F64,
    })
}

/// `torch.nn.functional.conv2d(x, w, b, stride, padding)`: `x` is
/// `(N, C, H, W)`, `w` is `(O, C, kh, kw)`, `b` is `(O,)`; the result is
/// `(N, O, H', W')` with `H' = (H + 2*ph - kh) / sh + 1` (floor), the
/// cross-correlation of each zero-padded input plane with each filter.
pub fn conv2d(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    stride: (usize, usize),
    padding: (usize, usize),
) -> VResult<Tensor> {
    rank4("conv2d", "an input", x, "(N, C, H, W)")?;
    rank4("conv2d", "a weight", w, "(O, C, kh, kw)")?;
    let (xs, ws) = (x.shape(), w.shape());
    if xs[1] != ws[1] {
        return Err(shape_err(format!(
            "conv2d() weight of shape {} expects {} input channels, but the input of shape {} has {}",
            shape_str(ws),
            ws[1],
            shape_str(xs),
            xs[1]
        )));
    }
    let o = ws[0];
    if let Some(b) = b {
        if b.shape() != [o] {
            return Err(shape_err(format!(
                "conv2d() expects a bias of shape ({o},) (one per output channel), got {}",
                shape_str(b.shape())
            )));
        }
    }
    let g = Window::new("conv2d", xs, (ws[2], ws[3]), stride, padding)?;
    checked_size(&[g.rows(), g.cols()])?;
    checked_size(&[g.n, o, g.oh, g.ow])?;
    let mut d = DType::promote(x.dtype, w.dtype);
    if let Some(b) = b {
        d = DType::promote(d, b.dtype);
    }
    if !d.is_float() {
        d = DType::F64;
    }
    let cd = compute_dtype(d)?;
    let cols = im2col_raw(&x.cast(cd)?, &g)?;
    let w2 = w.cast(cd)?.reshaped(vec![o, g.rows()])?;
    // (O, N*H'*W'): one product for the whole batch.
    let y = matmul(&w2, &cols)?;
    let bias = b.map(|b| b.cast(cd)).transpose()?;
    let shape = vec![g.n, o, g.oh, g.ow];
    let mut r = match cd {
        DType::F32 => unfold_batch::<f32>(&y, bias.as_ref(), &g, o, shape),
        _ => unfold_batch::<f64>(&y, bias.as_ref(), &g, o, shape),
    };
    if cd != d {
        r = r.astype(d)?;
    }
    if x.node.is_some() || w.node.is_some() || b.is_some_and(|b| b.node.is_some()) {
        r.node = record(
            Op::Conv2d {
                x: x.clone(),
                w: w.clone(),
                b: b.cloned(),
                window: g,
            },
            &r,
        );
    }
    Ok(r)
}

/// `(O, N*L)` to `(N, O, L)` (as `(N, O, H', W')`), adding the bias of each
/// output channel.
fn unfold_batch<T: Real>(y: &Tensor, b: Option<&Tensor>, g: &Window, o: usize, shape: Vec<usize>) -> Tensor {
    let (l, nl) = (g.plane(), g.cols());
    let yv: Vec<T> = y.to_vec();
    let bv: Vec<T> = b.map(|b| b.to_vec()).unwrap_or_else(|| vec![T::ZERO; o]);
    let mut out = vec![T::ZERO; g.n * o * l];
    if l > 0 {
        for (k, dst) in out.chunks_mut(l).enumerate() {
            let (n, c) = (k / o.max(1), k % o.max(1));
            let bias = bv.get(c).copied().unwrap_or(T::ZERO);
            if let Some(src) = yv.get(c * nl + n * l..c * nl + (n + 1) * l) {
                for (d, &s) in dst.iter_mut().zip(src) {
                    *d = s + bias;
                }
            }
        }
    }
    Tensor::from_vec(out, shape)
}

/// The column matrix of `x` (dense, not recorded).
fn im2col_raw(x: &Tensor, g: &Window) -> VResult<Tensor> {
    let shape = vec![g.rows(), g.cols()];
    Ok(crate::with_dtype!(x.dtype, T => {
        let v: Vec<T> = x.to_vec();
        Tensor::from_vec(im2col_in(&v, g), shape)
    }, other => return Err(x.dtype.check_supported().err().unwrap_or_else(|| err(ErrorKind::TypeError, "bad dtype")))))
}

fn im2col_in<T: Scalar>(x: &[T], g: &Window) -> Vec<T> {
    let (l, nl) = (g.plane(), g.cols());
    let zero = T::from_f64(0.0);
    let mut out = vec![zero; g.rows() * nl];
    if out.is_empty() || x.len() != g.n * g.c * g.h * g.w {
        return out;
    }
    let kk = g.kh * g.kw;
    let fill = |r: usize, row: &mut [T]| {
        let (c, i, j) = (r / kk, (r / g.kw) % g.kh, r % g.kw);
        for n in 0..g.n {
            let base = (n * g.c + c) * g.h * g.w;
            for oy in 0..g.oh {
                let Some(iy) = Window::src(oy, g.sh, i, g.ph, g.h) else {
                    continue;
                };
                let at = n * l + oy * g.ow;
                let Some(dst) = row.get_mut(at..at + g.ow) else {
                    continue;
                };
                for (ox, d) in dst.iter_mut().enumerate() {
                    if let Some(ix) = Window::src(ox, g.sw, j, g.pw, g.w) {
                        if let Some(&s) = x.get(base + iy * g.w + ix) {
                            *d = s;
                        }
                    }
                }
            }
        }
    };
    if par_split(out.len()) {
        use rayon::prelude::*;
        out.par_chunks_mut(nl).enumerate().for_each(|(r, row)| fill(r, row));
    } else {
        out.chunks_mut(nl).enumerate().for_each(|(r, row)| fill(r, row));
    }
    out
}

/// The adjoint of [`im2col_in`]: each input element gets the sum of the
/// column entries that read it, in one fixed order (window row, window
/// column, output row, output column), one plane per task.
fn col2im_in<T: Real>(cols: &[T], g: &Window) -> Vec<T> {
    let (l, nl) = (g.plane(), g.cols());
    let hw = g.h * g.w;
    let mut out = vec![T::ZERO; g.n * g.c * hw];
    if out.is_empty() || cols.len() != g.rows() * nl {
        return out;
    }
    let kk = g.kh * g.kw;
    let fill = |p: usize, plane: &mut [T]| {
        let (n, c) = (p / g.c.max(1), p % g.c.max(1));
        for i in 0..g.kh {
            for j in 0..g.kw {
                let row = (c * kk + i * g.kw + j) * nl + n * l;
                for oy in 0..g.oh {
                    let Some(iy) = Window::src(oy, g.sh, i, g.ph, g.h) else {
                        continue;
                    };
                    for ox in 0..g.ow {
                        if let Some(ix) = Window::src(ox, g.sw, j, g.pw, g.w) {
                            if let (Some(d), Some(&s)) = (plane.get_mut(iy * g.w + ix), cols.get(row + oy * g.ow + ox)) {
                                *d = *d + s;
                            }
                        }
                    }
                }
            }
        }
    };
    if hw == 0 {
        return out;
    }
    if par_split(cols.len()) {
        use rayon::prelude::*;
        out.par_chunks_mut(hw).enumerate().for_each(|(p, plane)| fill(p, plane));
    } else {
        out.chunks_mut(hw).enumerate().for_each(|(p, plane)| fill(p, plane));
    }
    out
}

/// The column matrix `(C*kh*kw, N*H'*W')` of `x` `(N, C, H, W)`, recorded
/// (its adjoint is [`col2im`]).
pub(super) fn im2col(x: &Tensor, g: &Window) -> VResult<Tensor> {
    let mut r = im2col_raw(x, g)?;
    if x.node.is_some() && x.dtype.is_float() {
        r.node = record(Op::Im2col(x.clone(), *g), &r);
    }
    Ok(r)
}

/// The `(N, C, H, W)` sums of a column matrix's entries at the input
/// elements they read, recorded (its adjoint is [`im2col`]). Computes in
/// f64 for f64 columns and in f32 otherwise, with the columns' dtype (f64
/// for ints).
pub(super) fn col2im(cols: &Tensor, g: &Window) -> VResult<Tensor> {
    let shape = g.input_shape();
    let mut r = match cols.dtype {
        DType::F32 | DType::F16 | DType::BF16 => {
            Tensor::from_vec(col2im_in::<f32>(&cols.to_vec(), g), shape).cast(cols.dtype)?
        }
        _ => Tensor::from_vec(col2im_in::<f64>(&cols.to_vec(), g), shape),
    };
    if cols.node.is_some() && cols.dtype.is_float() {
        r.node = record(Op::Col2im(cols.clone(), *g), &r);
    }
    Ok(r)
}

/// The cotangents of a convolution's `x`, `w` (and `b`) for the cotangent
/// `g` of its result, with recorded operations (so they can be
/// differentiated again): `col2im(wᵀ g)`, `g colsᵀ` and the sum of `g` over
/// the batch and the positions.
pub(super) fn conv2d_vjp(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    g_: &Window,
    g: &Tensor,
    need: &[bool],
) -> VResult<Vec<Option<Tensor>>> {
    let o = w.shape()[0];
    let gm = || -> VResult<Tensor> {
        // (N, O, H', W') -> (O, N*H'*W'), the layout of the forward product.
        let g3 = reshape(g, vec![g_.n, o, g_.plane()])?;
        reshape(&permute(&g3, &[1, 0, 2])?, vec![o, g_.cols()])
    };
    let mut out = vec![
        want(need, 0, || {
            let w2 = reshape(w, vec![o, g_.rows()])?;
            let gcols = matmul(&permute(&w2, &[1, 0])?, &gm()?)?;
            col2im(&gcols, g_)
        })?,
        want(need, 1, || {
            let cols = im2col(x, g_)?;
            let gw = matmul(&gm()?, &permute(&cols, &[1, 0])?)?;
            reshape(&gw, w.shape().to_vec())
        })?,
    ];
    if b.is_some() {
        out.push(want(need, 2, || reduce(g, &[0, 2, 3], false, RKind::Sum))?);
    }
    Ok(out)
}

/// `torch.nn.functional.max_pool2d(x, kernel, stride, padding)` (floor
/// mode, no dilation): `(N, C, H, W)` to `(N, C, H', W')`, each output the
/// largest element of its window, the padding standing for -inf. The
/// padding may be at most half the kernel (as PyTorch requires), so every
/// window holds an input element. The gradient goes to the first maximum
/// of each window in row-major order; a NaN in a window is its maximum (the
/// last NaN, as PyTorch's kernel picks).
pub fn max_pool2d(
    x: &Tensor,
    kernel: (usize, usize),
    stride: (usize, usize),
    padding: (usize, usize),
) -> VResult<Tensor> {
    rank4("max_pool2d", "an input", x, "(N, C, H, W)")?;
    let g = Window::new("max_pool2d", x.shape(), kernel, stride, padding)?;
    if padding.0 > kernel.0 / 2 || padding.1 > kernel.1 / 2 {
        return Err(err(
            ErrorKind::ValueError,
            format!(
                "max_pool2d() padding ({}, {}) must be at most half the kernel size ({}, {})",
                padding.0, padding.1, kernel.0, kernel.1
            ),
        ));
    }
    let x = if x.dtype.supported() { x.clone() } else { x.astype(DType::F32)? };
    let out_shape = vec![g.n, g.c, g.oh, g.ow];
    checked_size(&out_shape)?;
    let vals: Vec<f64> = x.to_vec();
    let idx = pool_argmax(&vals, &g);
    let mut r = crate::with_dtype!(x.dtype, T => {
        let v: Vec<T> = x.to_vec();
        let picked: Vec<T> = idx.iter().map(|&i| v.get(i).copied().unwrap_or(T::from_f64(0.0))).collect();
        Tensor::from_vec(picked, out_shape.clone())
    }, other => return Err(x.dtype.check_supported().err().unwrap_or_else(|| err(ErrorKind::TypeError, "bad dtype"))));
    if x.node.is_some() && x.dtype.is_float() {
        r.node = record(Op::Gather(x.clone(), idx, out_shape), &r);
    }
    Ok(r)
}

/// The row-major index into `x` of each window's maximum.
fn pool_argmax(x: &[f64], g: &Window) -> Vec<usize> {
    let mut idx = Vec::with_capacity(g.n * g.c * g.plane());
    let hw = g.h * g.w;
    for p in 0..g.n * g.c {
        let base = p * hw;
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                let (mut best, mut at) = (f64::NEG_INFINITY, None);
                for i in 0..g.kh {
                    let Some(iy) = Window::src(oy, g.sh, i, g.ph, g.h) else {
                        continue;
                    };
                    for j in 0..g.kw {
                        let Some(ix) = Window::src(ox, g.sw, j, g.pw, g.w) else {
                            continue;
                        };
                        let k = base + iy * g.w + ix;
                        let v = x.get(k).copied().unwrap_or(f64::NEG_INFINITY);
                        if at.is_none() || v > best || v.is_nan() {
                            best = v;
                            at = Some(k);
                        }
                    }
                }
                // Every window holds an input element (padding <= kernel / 2).
                idx.push(at.unwrap_or(base));
            }
        }
    }
    idx
}

