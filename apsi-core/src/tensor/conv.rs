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
use super::core::{par_split_cheap, Tensor};
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

    /// The window offsets `i` in `0..k` at output `o` that read inside the
    /// input (those [`Window::src`] answers `Some` for), as one range.
    #[inline]
    fn taps(o: usize, s: usize, p: usize, k: usize, len: usize) -> std::ops::Range<usize> {
        let start = o * s;
        let lo = p.saturating_sub(start);
        let hi = (len + p).saturating_sub(start).min(k);
        lo..hi.max(lo)
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
                // The outputs whose input column lies inside the row:
                // 0 <= ox * sw + j - pw < w for ox in lo..hi (the rest stay 0).
                let lo = if g.pw > j { (g.pw - j).div_ceil(g.sw) } else { 0 };
                let hi = if g.w + g.pw > j {
                    ((g.w + g.pw - j - 1) / g.sw + 1).min(g.ow)
                } else {
                    0
                };
                if lo >= hi {
                    continue;
                }
                let from = base + iy * g.w + lo * g.sw + j - g.pw;
                let Some(dst) = dst.get_mut(lo..hi) else {
                    continue;
                };
                if g.sw == 1 {
                    // A stride of 1: one copy of a piece of the input row.
                    if let Some(src) = x.get(from..from + dst.len()) {
                        dst.copy_from_slice(src);
                    }
                } else {
                    for (k, d) in dst.iter_mut().enumerate() {
                        if let Some(&s) = x.get(from + k * g.sw) {
                            *d = s;
                        }
                    }
                }
            }
        }
    };
    if par_split_cheap(out.len()) {
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
                            if let (Some(d), Some(&s)) = (plane.get_mut(iy * g.w + ix), cols.get(row + oy * g.ow + ox))
                            {
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
    if par_split_cheap(cols.len()) {
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
    let x = if x.dtype.supported() {
        x.clone()
    } else {
        x.astype(DType::F32)?
    };
    let out_shape = vec![g.n, g.c, g.oh, g.ow];
    checked_size(&out_shape)?;
    let (idx, mut r) = crate::with_dtype!(x.dtype, T => {
        let v: Vec<T> = x.to_vec();
        let idx = pool_argmax(&v, &g);
        let picked: Vec<T> = idx.iter().map(|&i| v.get(i).copied().unwrap_or(T::from_f64(0.0))).collect();
        (idx, Tensor::from_vec(picked, out_shape.clone()))
    }, other => return Err(x.dtype.check_supported().err().unwrap_or_else(|| err(ErrorKind::TypeError, "bad dtype"))));
    if x.node.is_some() && x.dtype.is_float() {
        r.node = record(Op::Gather(x.clone(), idx, out_shape), &r);
    }
    Ok(r)
}

/// The row-major index into `x` of each window's maximum (the first one;
/// a NaN wins, the last NaN of a window), compared as f64. Planes (one
/// image's channel) are independent, so large inputs share them among
/// threads; each window's answer is the same either way.
fn pool_argmax<T: Scalar>(x: &[T], g: &Window) -> Vec<usize> {
    let plane = g.oh * g.ow;
    let mut idx = vec![0usize; g.n * g.c * plane];
    if plane == 0 {
        return idx;
    }
    let hw = g.h * g.w;
    let fill = |p: usize, out: &mut [usize]| {
        let base = p * hw;
        for (oy, outs) in out.chunks_mut(g.ow).enumerate() {
            let rows = Window::taps(oy, g.sh, g.ph, g.kh, g.h);
            for (ox, slot) in outs.iter_mut().enumerate() {
                // The window's taps inside the plane, found once per window
                // (not tested per element).
                let cols = Window::taps(ox, g.sw, g.pw, g.kw, g.w);
                let at_tap = |i: usize, j: usize| base + (oy * g.sh + i - g.ph) * g.w + (ox * g.sw + j - g.pw);
                let value = |k: usize| x.get(k).map_or(f64::NEG_INFINITY, |v| v.to_f64());
                // Every window holds an input element (padding <= kernel / 2);
                // its first one is the maximum so far.
                if rows.is_empty() || cols.is_empty() {
                    *slot = base;
                    continue;
                }
                let mut at = at_tap(rows.start, cols.start);
                let mut best = value(at);
                for i in rows.clone() {
                    for j in cols.clone() {
                        let k = at_tap(i, j);
                        let v = value(k);
                        if v > best || v.is_nan() {
                            best = v;
                            at = k;
                        }
                    }
                }
                *slot = at;
            }
        }
    };
    if par_split_cheap(idx.len().saturating_mul(g.kh * g.kw)) {
        use rayon::prelude::*;
        idx.par_chunks_mut(plane).enumerate().for_each(|(p, out)| fill(p, out));
    } else {
        idx.chunks_mut(plane).enumerate().for_each(|(p, out)| fill(p, out));
    }
    idx
}

#[cfg(test)]
mod tests {
    use super::super::arith::{binary_same, Arg};
    use super::super::autodiff::{backward, leaf};
    use super::super::test_support::{ok, randv};
    use super::*;
    use crate::syntax::ast::BinOp;

    fn t(v: Vec<f64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape.to_vec())
    }

    fn vals(t: &Tensor) -> Vec<f64> {
        t.to_vec()
    }

    /// sum(out * wts), recorded.
    fn weighted_sum(out: &Tensor, wts: &Tensor) -> Tensor {
        let p = ok(super::super::arith::binary(
            BinOp::Mul,
            &Arg::T(out.clone()),
            &Arg::T(wts.clone()),
        ));
        let all: Vec<usize> = (0..p.ndim()).collect();
        ok(reduce(&p, &all, false, RKind::Sum))
    }

    /// Checks the gradient of `sum(f(ins) * wts)` with respect to each input
    /// against central differences (f64).
    pub(crate) fn fd_check(name: &str, f: &dyn Fn(&[Tensor]) -> VResult<Tensor>, ins: &[Tensor]) {
        let leaves: Vec<Tensor> = ins.iter().map(leaf).collect();
        let out = ok(f(&leaves));
        let wts = t(randv(out.size(), 99, 0.5, 1.5), out.shape());
        let loss = weighted_sum(&out, &wts);
        let grads = ok(backward(&loss, &leaves, false));
        let value_at = |k: usize, v: Vec<f64>| -> f64 {
            let mut xs: Vec<Tensor> = ins.to_vec();
            xs[k] = t(v, ins[k].shape());
            let o = ok(f(&xs));
            vals(&o).iter().zip(vals(&wts)).map(|(a, b)| a * b).sum()
        };
        for (k, input) in ins.iter().enumerate() {
            let g: Vec<f64> = grads[k].as_ref().map(vals).unwrap_or_else(|| vec![0.0; input.size()]);
            assert_eq!(g.len(), input.size(), "{name}: input {k} gradient size");
            let base = vals(input);
            let eps = 1e-6;
            for i in 0..base.len() {
                let (mut p, mut m) = (base.clone(), base.clone());
                p[i] += eps;
                m[i] -= eps;
                let num = (value_at(k, p) - value_at(k, m)) / (2.0 * eps);
                assert!(
                    (num - g[i]).abs() <= 1e-5 * (1.0 + num.abs()),
                    "{name}: d/d(input {k})[{i}] analytic {} vs numeric {num}",
                    g[i]
                );
            }
        }
    }

    /// The convolution by its definition.
    #[allow(clippy::too_many_arguments)]
    fn naive_conv(
        x: &[f64],
        xs: [usize; 4],
        w: &[f64],
        ws: [usize; 4],
        b: Option<&[f64]>,
        s: (usize, usize),
        p: (usize, usize),
    ) -> (Vec<f64>, Vec<usize>) {
        let [n, c, h, wd] = xs;
        let [o, _, kh, kw] = ws;
        let oh = (h + 2 * p.0 - kh) / s.0 + 1;
        let ow = (wd + 2 * p.1 - kw) / s.1 + 1;
        let mut out = Vec::new();
        for ni in 0..n {
            for oi in 0..o {
                for y in 0..oh {
                    for xq in 0..ow {
                        let mut acc = b.map_or(0.0, |b| b[oi]);
                        for ci in 0..c {
                            for i in 0..kh {
                                for j in 0..kw {
                                    let iy = (y * s.0 + i) as isize - p.0 as isize;
                                    let ix = (xq * s.1 + j) as isize - p.1 as isize;
                                    if iy < 0 || ix < 0 || iy >= h as isize || ix >= wd as isize {
                                        continue;
                                    }
                                    let xv = x[((ni * c + ci) * h + iy as usize) * wd + ix as usize];
                                    acc += xv * w[((oi * c + ci) * kh + i) * kw + j];
                                }
                            }
                        }
                        out.push(acc);
                    }
                }
            }
        }
        (out, vec![n, o, oh, ow])
    }

    type Case = ([usize; 4], [usize; 4], (usize, usize), (usize, usize));

    const CASES: [Case; 6] = [
        ([2, 3, 5, 6], [4, 3, 3, 2], (2, 1), (1, 0)),
        ([1, 1, 4, 4], [1, 1, 1, 1], (1, 1), (0, 0)),
        ([2, 2, 7, 5], [3, 2, 2, 3], (2, 2), (1, 1)),
        ([3, 2, 4, 4], [2, 2, 4, 4], (1, 1), (0, 0)),
        ([1, 2, 3, 3], [2, 2, 5, 3], (3, 2), (1, 1)),
        // A window column that never lies inside the one-column input.
        ([1, 1, 3, 1], [1, 1, 1, 3], (1, 1), (0, 1)),
    ];

    #[test]
    fn conv2d_matches_the_definition_in_f64_and_f32() {
        for (k, &(xs, ws, s, p)) in CASES.iter().enumerate() {
            let xv = randv(xs.iter().product(), 1 + k as u64, -1.0, 1.0);
            let wv = randv(ws.iter().product(), 11 + k as u64, -1.0, 1.0);
            let bv = randv(ws[0], 21 + k as u64, -1.0, 1.0);
            for bias in [false, true] {
                let (want, shape) = naive_conv(&xv, xs, &wv, ws, bias.then_some(&bv[..]), s, p);
                for d in [DType::F64, DType::F32] {
                    let x = ok(t(xv.clone(), &xs).cast(d));
                    let w = ok(t(wv.clone(), &ws).cast(d));
                    let b = ok(t(bv.clone(), &[ws[0]]).cast(d));
                    let r = ok(conv2d(&x, &w, bias.then_some(&b), s, p));
                    assert_eq!(r.dtype, d);
                    assert_eq!(r.shape(), &shape[..], "case {k}");
                    let tol = if d == DType::F64 { 1e-12 } else { 1e-5 };
                    for (i, (a, e)) in vals(&r).iter().zip(&want).enumerate() {
                        assert!((a - e).abs() <= tol, "case {k} {d:?} bias {bias} [{i}]: {a} vs {e}");
                    }
                }
            }
        }
    }

    #[test]
    fn conv2d_small_hand_computed() {
        // 4x4 input 1..16, kernel [[1, 0], [0, -1]], stride 2: x[i][j] - x[i+1][j+1] = -5 everywhere.
        let x = t((1..=16).map(f64::from).collect(), &[1, 1, 4, 4]);
        let w = t(vec![1.0, 0.0, 0.0, -1.0], &[1, 1, 2, 2]);
        let b = t(vec![0.5], &[1]);
        let r = ok(conv2d(&x, &w, Some(&b), (2, 2), (0, 0)));
        assert_eq!(r.shape(), &[1, 1, 2, 2]);
        assert_eq!(vals(&r), vec![-4.5; 4]);
        // A 3x3 box of ones over 3x3 ones with padding 1: the count of input elements in each window.
        let ones = t(vec![1.0; 9], &[1, 1, 3, 3]);
        let box3 = t(vec![1.0; 9], &[1, 1, 3, 3]);
        let r = ok(conv2d(&ones, &box3, None, (1, 1), (1, 1)));
        assert_eq!(vals(&r), vec![4.0, 6.0, 4.0, 6.0, 9.0, 6.0, 4.0, 6.0, 4.0]);
        // Stride 2 with padding 1: the corners.
        let r = ok(conv2d(&ones, &box3, None, (2, 2), (1, 1)));
        assert_eq!(vals(&r), vec![4.0, 4.0, 4.0, 4.0]);
        // Two output channels, two input channels, a non-square (1, 2) kernel.
        let x = t(vec![1.0, 2.0, 3.0, 10.0, 20.0, 30.0], &[1, 2, 1, 3]);
        let w = t(vec![1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, -1.0], &[2, 2, 1, 2]);
        let r = ok(conv2d(&x, &w, None, (1, 1), (0, 0)));
        assert_eq!(r.shape(), &[1, 2, 1, 2]);
        assert_eq!(vals(&r), vec![3.0, 5.0, -10.0, -10.0]);
    }

    #[test]
    fn conv2d_dtypes() {
        let x = t(randv(2 * 3 * 4 * 4, 3, -1.0, 1.0), &[2, 3, 4, 4]);
        let w = t(randv(2 * 3 * 9, 4, -1.0, 1.0), &[2, 3, 3, 3]);
        let h = ok(conv2d(
            &ok(x.cast(DType::F16)),
            &ok(w.cast(DType::F16)),
            None,
            (1, 1),
            (1, 1),
        ));
        assert_eq!(h.dtype, DType::F16);
        let mixed = ok(conv2d(&ok(x.cast(DType::F32)), &w, None, (1, 1), (1, 1)));
        assert_eq!(mixed.dtype, DType::F64);
        let xi = t(vec![1.0, 2.0, 3.0, 4.0], &[1, 1, 2, 2]);
        let wi = t(vec![1.0, -1.0], &[1, 1, 1, 2]);
        let r = ok(conv2d(
            &ok(xi.cast(DType::I64)),
            &ok(wi.cast(DType::I64)),
            None,
            (1, 1),
            (0, 0),
        ));
        assert_eq!(r.dtype, DType::F64);
        assert_eq!(vals(&r), vec![-1.0, -1.0]);
        // A strided (transposed) input view gives the values of its dense copy.
        let xt = ok(permute(&x, &[0, 1, 3, 2]));
        let a = ok(conv2d(&xt, &w, None, (2, 1), (1, 0)));
        let b = ok(conv2d(&xt.contiguous(), &w, None, (2, 1), (1, 0)));
        assert_eq!(vals(&a), vals(&b));
    }

    #[test]
    fn conv2d_gradients_match_finite_differences() {
        for (k, &(xs, ws, s, p)) in CASES.iter().enumerate() {
            let x = t(randv(xs.iter().product(), 31 + k as u64, -1.0, 1.0), &xs);
            let w = t(randv(ws.iter().product(), 41 + k as u64, -1.0, 1.0), &ws);
            let b = t(randv(ws[0], 51 + k as u64, -1.0, 1.0), &[ws[0]]);
            fd_check(
                &format!("conv2d case {k}"),
                &|v| conv2d(&v[0], &v[1], Some(&v[2]), s, p),
                &[x.clone(), w.clone(), b],
            );
            fd_check(
                &format!("conv2d case {k} without bias"),
                &|v| conv2d(&v[0], &v[1], None, s, p),
                &[x, w],
            );
        }
    }

    #[test]
    fn conv2d_bias_gradient_sums_over_batch_and_positions() {
        let x = t(randv(2 * 2 * 5 * 5, 5, -1.0, 1.0), &[2, 2, 5, 5]);
        let w = t(randv(3 * 2 * 3 * 2, 6, -1.0, 1.0), &[3, 2, 3, 2]);
        let b = leaf(&t(vec![0.1, 0.2, 0.3], &[3]));
        let out = ok(conv2d(&x, &w, Some(&b), (2, 1), (1, 1)));
        let loss = ok(reduce(&out, &[0, 1, 2, 3], false, RKind::Sum));
        let g = ok(backward(&loss, &[b], false)).pop().flatten();
        let per = (2 * out.shape()[2] * out.shape()[3]) as f64;
        assert_eq!(g.as_ref().map(vals), Some(vec![per; 3]));
    }

    #[test]
    fn conv2d_second_order() {
        // d/dw of sum(grad_x(sum(conv(x, w)^2)) * c) against finite differences:
        // the backward rules are recorded operations.
        let x = t(randv(2 * 2 * 4 * 5, 61, -1.0, 1.0), &[2, 2, 4, 5]);
        let w = t(randv(2 * 2 * 2 * 3, 62, -1.0, 1.0), &[2, 2, 2, 3]);
        let b = t(vec![0.3, -0.2], &[2]);
        let c = t(randv(x.size(), 63, 0.5, 1.5), x.shape());
        let f = |v: &[Tensor]| -> VResult<Tensor> {
            let (xl, wl, bl) = (leaf(&v[0]), leaf(&v[1]), leaf(&v[2]));
            let y = conv2d(&xl, &wl, Some(&bl), (2, 1), (1, 1))?;
            let sq = binary_same(BinOp::Mul, &y, &y)?;
            let loss = reduce(&sq, &[0, 1, 2, 3], false, RKind::Sum)?;
            let gs = backward(&loss, &[xl, wl, bl], true)?;
            let gx = gs[0]
                .clone()
                .unwrap_or(Tensor::full(v[0].shape().to_vec(), 0.0, DType::F64)?);
            let gw = gs[1]
                .clone()
                .unwrap_or(Tensor::full(v[1].shape().to_vec(), 0.0, DType::F64)?);
            let gb = gs[2].clone().unwrap_or(Tensor::full(vec![2], 0.0, DType::F64)?);
            let a = reduce(&binary_same(BinOp::Mul, &gx, &c)?, &[0, 1, 2, 3], false, RKind::Sum)?;
            let bw = reduce(&binary_same(BinOp::Mul, &gw, &gw)?, &[0, 1, 2, 3], false, RKind::Sum)?;
            let bb = reduce(&binary_same(BinOp::Mul, &gb, &gb)?, &[0], false, RKind::Sum)?;
            binary_same(BinOp::Add, &binary_same(BinOp::Add, &a, &bw)?, &bb)
        };
        fd_check("conv2d second order", &f, &[x, w, b]);
    }

    #[test]
    fn conv2d_gives_the_same_bits_on_1_and_2_threads() {
        // Large enough for the product's threads and a split im2col/col2im.
        let x = t(randv(4 * 8 * 32 * 32, 71, -1.0, 1.0), &[4, 8, 32, 32]);
        let w = t(randv(16 * 8 * 9, 72, -1.0, 1.0), &[16, 8, 3, 3]);
        let b = t(randv(16, 73, -1.0, 1.0), &[16]);
        let run = || -> Vec<u64> {
            let (xl, wl, bl) = (leaf(&x), leaf(&w), leaf(&b));
            let y = ok(conv2d(&xl, &wl, Some(&bl), (1, 1), (1, 1)));
            let loss = weighted_sum(&y, &t(randv(y.size(), 74, 0.5, 1.5), y.shape()));
            let mut bits: Vec<u64> = vals(&y).iter().map(|v| v.to_bits()).collect();
            for g in ok(backward(&loss, &[xl, wl, bl], false)).into_iter().flatten() {
                bits.extend(vals(&g).iter().map(|v| v.to_bits()));
            }
            bits
        };
        let on = |n: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build();
            match pool {
                Ok(p) => p.install(run),
                Err(e) => panic!("no pool: {e}"),
            }
        };
        let one = on(1);
        assert_eq!(one.len(), 4 * 16 * 32 * 32 + x.size() + w.size() + 16);
        assert!(one == on(2), "conv2d gave different bits on 1 and 2 threads");
    }

    fn kind_msg<T>(r: VResult<T>) -> (ErrorKind, String) {
        match r {
            Ok(_) => panic!("expected an error"),
            Err(e) => (e.kind, e.message.to_string()),
        }
    }

    #[test]
    fn conv2d_errors() {
        let x = t(vec![0.0; 2 * 3 * 4 * 4], &[2, 3, 4, 4]);
        let w = t(vec![0.0; 5 * 3 * 3 * 3], &[5, 3, 3, 3]);
        let (k, m) = kind_msg(conv2d(&t(vec![0.0; 48], &[3, 4, 4]), &w, None, (1, 1), (0, 0)));
        assert_eq!(k, ErrorKind::ShapeError);
        assert!(m.contains("rank 4") && m.contains("(3, 4, 4)"), "{m}");
        let (k, m) = kind_msg(conv2d(
            &x,
            &t(vec![0.0; 5 * 2 * 9], &[5, 2, 3, 3]),
            None,
            (1, 1),
            (0, 0),
        ));
        assert_eq!(k, ErrorKind::ShapeError);
        assert!(m.contains("expects 2 input channels") && m.contains("has 3"), "{m}");
        let big = t(vec![0.0; 5 * 3 * 7 * 2], &[5, 3, 7, 2]);
        let (k, m) = kind_msg(conv2d(&x, &big, None, (1, 1), (1, 0)));
        assert_eq!(k, ErrorKind::ShapeError);
        assert!(m.contains("(7, 2)") && m.contains("(6, 4)"), "{m}");
        assert!(conv2d(&x, &big, None, (1, 1), (2, 0)).is_ok());
        let (k, m) = kind_msg(conv2d(&x, &w, Some(&t(vec![0.0; 4], &[4])), (1, 1), (0, 0)));
        assert_eq!(k, ErrorKind::ShapeError);
        assert!(m.contains("(5,)") && m.contains("(4,)"), "{m}");
        let (k, _) = kind_msg(conv2d(&x, &w, None, (0, 1), (0, 0)));
        assert_eq!(k, ErrorKind::ValueError);
        let (k, _) = kind_msg(conv2d(&x, &w, None, (1, 1), (usize::MAX, 0)));
        assert_eq!(k, ErrorKind::ValueError);
        // Empty batches and channels are fine.
        let e = ok(conv2d(&t(vec![], &[0, 3, 4, 4]), &w, None, (1, 1), (0, 0)));
        assert_eq!(e.shape(), &[0, 5, 2, 2]);
        let e = ok(conv2d(
            &t(vec![], &[2, 0, 4, 4]),
            &t(vec![], &[5, 0, 3, 3]),
            Some(&t(vec![1.0; 5], &[5])),
            (1, 1),
            (0, 0),
        ));
        assert_eq!(vals(&e), vec![1.0; 2 * 5 * 4]);
    }

    fn naive_pool(x: &[f64], xs: [usize; 4], k: (usize, usize), s: (usize, usize), p: (usize, usize)) -> Vec<f64> {
        let [n, c, h, w] = xs;
        let oh = (h + 2 * p.0 - k.0) / s.0 + 1;
        let ow = (w + 2 * p.1 - k.1) / s.1 + 1;
        let mut out = Vec::new();
        for pl in 0..n * c {
            for y in 0..oh {
                for xq in 0..ow {
                    let mut best = f64::NEG_INFINITY;
                    for i in 0..k.0 {
                        for j in 0..k.1 {
                            let iy = (y * s.0 + i) as isize - p.0 as isize;
                            let ix = (xq * s.1 + j) as isize - p.1 as isize;
                            if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < w {
                                best = best.max(x[pl * h * w + iy as usize * w + ix as usize]);
                            }
                        }
                    }
                    out.push(best);
                }
            }
        }
        out
    }

    /// Input shape, kernel, stride, padding.
    type PoolCase = ([usize; 4], (usize, usize), (usize, usize), (usize, usize));

    const POOLS: [PoolCase; 4] = [
        ([2, 3, 5, 6], (2, 2), (2, 2), (0, 0)),
        ([1, 2, 7, 5], (3, 2), (2, 1), (1, 1)),
        ([2, 1, 4, 4], (3, 3), (1, 1), (1, 1)),
        ([1, 1, 6, 3], (2, 3), (3, 2), (1, 0)),
    ];

    #[test]
    fn max_pool2d_matches_the_definition() {
        for (q, &(xs, k, s, p)) in POOLS.iter().enumerate() {
            let xv = randv(xs.iter().product(), 81 + q as u64, -2.0, 1.0);
            let want = naive_pool(&xv, xs, k, s, p);
            for d in [DType::F64, DType::F32] {
                let x = ok(t(xv.clone(), &xs).cast(d));
                let r = ok(max_pool2d(&x, k, s, p));
                assert_eq!(r.dtype, d);
                let wd: Vec<f64> = ok(t(want.clone(), &[want.len()]).cast(d)).to_vec();
                assert_eq!(vals(&r), wd, "pool case {q} {d:?}");
            }
        }
        // Hand computed: 2x2 windows, stride 2, of a 4x4 ramp; -inf padding never wins over negatives.
        let x = t((1..=16).map(|v| -f64::from(v)).collect(), &[1, 1, 4, 4]);
        assert_eq!(
            vals(&ok(max_pool2d(&x, (2, 2), (2, 2), (0, 0)))),
            vec![-1.0, -3.0, -9.0, -11.0]
        );
        let r = ok(max_pool2d(&x, (2, 2), (2, 2), (1, 1)));
        assert_eq!(r.shape(), &[1, 1, 3, 3]);
        assert_eq!(vals(&r), vec![-1.0, -2.0, -4.0, -5.0, -6.0, -8.0, -13.0, -14.0, -16.0]);
    }

    /// An input large enough to share its planes among threads, with and
    /// without padding, and a NaN, which wins its window (as in PyTorch).
    #[test]
    fn max_pool2d_of_a_large_input() {
        let xs = [4, 64, 34, 32];
        let mut xv = randv(xs.iter().product(), 97, -2.0, 1.0);
        for (k, s, p) in [((2, 2), (2, 2), (0, 0)), ((3, 3), (2, 2), (1, 1))] {
            let want = naive_pool(&xv, xs, k, s, p);
            let r = ok(max_pool2d(&t(xv.clone(), &xs), k, s, p));
            assert_eq!(vals(&r), want, "{k:?} {s:?} {p:?}");
        }
        xv[3 * 32 + 5] = f64::NAN;
        let r = vals(&ok(max_pool2d(&t(xv, &xs), (2, 2), (2, 2), (0, 0))));
        assert!(r[16 + 2].is_nan() && r.iter().filter(|v| v.is_nan()).count() == 1);
    }

    #[test]
    fn max_pool2d_gradients() {
        for (q, &(xs, k, s, p)) in POOLS.iter().enumerate() {
            let x = t(randv(xs.iter().product(), 91 + q as u64, -2.0, 1.0), &xs);
            fd_check(&format!("max_pool2d case {q}"), &|v| max_pool2d(&v[0], k, s, p), &[x]);
        }
        // Ties: the first maximum of each window (row-major) takes it all.
        let x = leaf(&t(vec![1.0, 5.0, 5.0, 2.0, 5.0, 5.0, 0.0, 3.0, 3.0], &[1, 1, 3, 3]));
        let y = ok(max_pool2d(&x, (2, 2), (1, 1), (0, 0)));
        assert_eq!(vals(&y), vec![5.0, 5.0, 5.0, 5.0]);
        let loss = ok(reduce(&y, &[0, 1, 2, 3], false, RKind::Sum));
        let g = ok(backward(&loss, &[x], false)).pop().flatten();
        assert_eq!(
            g.as_ref().map(vals),
            Some(vec![0.0, 2.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0])
        );
    }

    #[test]
    fn max_pool2d_errors() {
        let x = t(vec![0.0; 16], &[1, 1, 4, 4]);
        let (k, m) = kind_msg(max_pool2d(&t(vec![0.0; 16], &[4, 4]), (2, 2), (2, 2), (0, 0)));
        assert_eq!(k, ErrorKind::ShapeError);
        assert!(m.contains("(4, 4)"), "{m}");
        let (k, _) = kind_msg(max_pool2d(&x, (2, 2), (2, 2), (2, 0)));
        assert_eq!(k, ErrorKind::ValueError);
        let (k, _) = kind_msg(max_pool2d(&x, (5, 1), (1, 1), (0, 0)));
        assert_eq!(k, ErrorKind::ShapeError);
        let (k, _) = kind_msg(max_pool2d(&x, (0, 1), (1, 1), (0, 0)));
        assert_eq!(k, ErrorKind::ValueError);
        let (k, _) = kind_msg(max_pool2d(&x, (1, 1), (1, 0), (0, 0)));
        assert_eq!(k, ErrorKind::ValueError);
    }
}
