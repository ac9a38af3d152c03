//! `lstm_seq`: the recurrence of an LSTM layer (PyTorch's `nn.LSTM`: one
//! layer, one direction, zero initial `h` and `c`) as one recorded
//! operation, so that a sequence of `T` steps costs one tape node instead of
//! a dozen per step.
//!
//! The caller passes the input part of every step's gates, `xw = x @ W_ihᵀ +
//! b_ih + b_hh` of shape (N, T, 4H), and the recurrent weights `w_hh` (4H,
//! H), gate rows in PyTorch's order i, f, g, o. Per step:
//!
//! ```text
//! gates = xw[:, t, :] + h @ w_hhᵀ
//! i, f, g, o = σ(gates[:, :H]), σ(gates[:, H:2H]), tanh(gates[:, 2H:3H]), σ(gates[:, 3H:])
//! c = f * c + i * g
//! h = o * tanh(c)
//! ```
//!
//! The product `h @ w_hhᵀ` runs on the `gemm` crate on one thread, and the
//! activations on [`super::vmath`]'s vectorised sigmoid (`tanh(x)` as
//! `2σ(2x) - 1`), so the result has the same bits whatever the thread count.
//! f32 inputs are computed in f32 (f32 accumulation, as PyTorch on the CPU).
//!
//! The backward pass ([`vjp`]) is backpropagation through time on the saved
//! activations, with plain loops and the same GEMM. When the backward pass
//! is itself recorded (`grad` of `grad`), the rule instead recomputes the
//! recurrence step by step with recorded tensor operations and
//! backpropagates through those, so a second derivative is right (and
//! slow: a dozen tape nodes per step, as an LSTM composed of small ops).

use super::arith::Arg;
use super::autodiff::{record, untraced, Op};
use super::core::{gather, Tensor};
use super::dtype::{DType, Kind};
use super::layout::shape_str;
use super::matmul::{Backend, Kernel};
use super::real::Real;
use super::vmath::{self, VElem, VFn};
use crate::error::ErrorKind;
use crate::value::{err, VResult};
use std::mem::MaybeUninit;
use std::sync::Arc;

/// What the backward pass keeps from the forward pass, row-major in the
/// computing dtype.
pub struct LstmSaved {
    /// i, f, g, o after their activations: (N, T, 4H).
    pub gates: Tensor,
    /// The cell states c_t: (N, T, H).
    pub c: Tensor,
    /// tanh(c_t): (N, T, H).
    pub tanh_c: Tensor,
    /// The hidden states h_t: (N, T, H).
    pub h: Tensor,
}

/// The element types the recurrence runs in (f32, f64).
trait Elem: Real + Kernel + VElem {
    /// `dst[i] = σ(src[i])` (equal lengths), vectorised.
    fn sigmoid_into(src: &[Self], dst: &mut [Self]);
}

impl Elem for f64 {
    fn sigmoid_into(src: &[f64], dst: &mut [f64]) {
        vmath::apply(VFn::Sigmoid, src, as_uninit(dst));
    }
}

impl Elem for f32 {
    fn sigmoid_into(src: &[f32], dst: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { sigmoid_f32_avx2(src, dst) };
        }
        sigmoid_f32_plain(src, dst)
    }
}

// The f32 loop compiled with AVX2 and FMA (so that it vectorises eight wide
// and `mul_add` is one instruction; elsewhere `mul_add` is a library call
// with the same, exactly rounded, result).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn sigmoid_f32_avx2(src: &[f32], dst: &mut [f32]) {
    sigmoid_f32_plain(src, dst)
}

#[inline(always)]
fn sigmoid_f32_plain(src: &[f32], dst: &mut [f32]) {
    for (o, &x) in dst.iter_mut().zip(src) {
        *o = sigmoid_f32(x);
    }
}

/// σ(x) in f32, branch-free: `exp(-|x|)` by Cephes' `expf` (range
/// reduction by ln 2 and a degree-5 polynomial, within 2 ulp), then `1/(1+e)`
/// or `e/(1+e)`. Below `-87.3` (where σ is under 1.2e-38) it gives about
/// 1.2e-38 for 0; NaN stays NaN. Only IEEE operations and `mul_add`, so the
/// same bits on every machine.
#[inline(always)]
fn sigmoid_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const ROUND: f32 = 12_582_912.0; // 1.5 * 2^23
    const C1: f32 = 0.693_359_4;
    const C2: f32 = -2.121_944_4e-4;
    let a = (-x.abs()).max(-87.3);
    // t holds k in its low mantissa bits (a in [-87.3, 0]: k in [-126, 0]).
    let t = a * LOG2E + ROUND;
    let k = t - ROUND;
    let r = (-k).mul_add(C2, (-k).mul_add(C1, a));
    let e = super::vmath::expf_reduced(r);
    let scale = super::vmath::pow2_of_rounded(t);
    let e = e * scale;
    let d = 1.0 + e;
    let s = if x >= 0.0 { 1.0 / d } else { e / d };
    if x.is_nan() {
        x
    } else {
        s
    }
}

#[derive(Clone, Copy)]
struct Dims {
    n: usize,
    t: usize,
    h: usize,
}

fn shape_err(msg: String) -> crate::value::Exc {
    err(ErrorKind::ShapeError, msg)
}

/// (N, T, H) from the operands' shapes, or a ShapeError saying what was
/// expected and what was found.
fn dims(xw: &[usize], w_hh: &[usize]) -> VResult<Dims> {
    if xw.len() != 3 {
        return Err(shape_err(format!(
            "lstm_seq: xw must be 3-D (N, T, 4H); found shape {}",
            shape_str(xw)
        )));
    }
    if w_hh.len() != 2 {
        return Err(shape_err(format!(
            "lstm_seq: w_hh must be 2-D (4H, H); found shape {}",
            shape_str(w_hh)
        )));
    }
    let h = w_hh[1];
    if h.checked_mul(4) != Some(w_hh[0]) {
        return Err(shape_err(format!(
            "lstm_seq: w_hh must have shape (4H, H), 4 times as many rows as columns; found shape {}",
            shape_str(w_hh)
        )));
    }
    if xw[2] != w_hh[0] {
        return Err(shape_err(format!(
            "lstm_seq: xw's last axis must be 4H = {} (w_hh has shape {}); found xw of shape {}",
            w_hh[0],
            shape_str(w_hh),
            shape_str(xw)
        )));
    }
    Ok(Dims { n: xw[0], t: xw[1], h })
}

/// The dtype the recurrence runs in: the promoted dtype of the operands,
/// f64 for integer or bool operands; f16/bf16/8-bit floats are refused.
fn compute_dtype(a: DType, b: DType) -> VResult<DType> {
    match DType::promote(a, b) {
        d @ (DType::F64 | DType::F32) => Ok(d),
        d if d.kind() != Kind::Float => Ok(DType::F64),
        d => Err(err(
            ErrorKind::TypeError,
            format!("lstm_seq: supports float32 and float64 tensors; found {}", d.name()),
        )),
    }
}

/// The LSTM recurrence over all steps of `xw` (N, T, 4H) with recurrent
/// weights `w_hh` (4H, H): every h as (N, T, H) when `return_sequences`,
/// else the last one (N, H). One tape node when either operand is traced.
pub fn lstm_seq(xw: &Tensor, w_hh: &Tensor, return_sequences: bool) -> VResult<Tensor> {
    let dm = dims(xw.shape(), w_hh.shape())?;
    let d = compute_dtype(xw.dtype, w_hh.dtype)?;
    let x = Arg::T(xw.clone()).to_tensor(d)?;
    let w = Arg::T(w_hh.clone()).to_tensor(d)?;
    let traced = x.node.is_some() || w.node.is_some();
    let (mut out, saved) = match d {
        DType::F64 => run::<f64>(&x, &w, dm, return_sequences, traced),
        _ => run::<f32>(&x, &w, dm, return_sequences, traced),
    };
    if let Some(saved) = saved {
        out.node = record(
            Op::LstmSeq {
                xw: x,
                w_hh: w,
                saved,
                return_sequences,
            },
            &out,
        );
    }
    Ok(out)
}

/// `f` on the elements of `t` in row-major order: borrowed when `t` is a
/// contiguous tensor of `T`, else a gathered copy.
fn with_dense<T: Elem, R>(t: &Tensor, f: impl FnOnce(&[T]) -> R) -> R {
    let n = t.size();
    t.with_slice::<T, _>(|s, l| {
        if l.is_contiguous() {
            if let Some(d) = s.get(l.offset..l.offset + n) {
                return f(d);
            }
        }
        f(&gather::<T, T>(s, l))
    })
}

fn as_uninit<T: Copy>(s: &mut [T]) -> &mut [MaybeUninit<T>] {
    // SAFETY: MaybeUninit<T> has T's layout, and the callers (vmath::apply)
    // write only initialised values of T into it.
    unsafe { &mut *(s as *mut [T] as *mut [MaybeUninit<T>]) }
}

/// `dst (m x n) = a (m x k) @ b (k x n)` for strided row-major operands, on
/// the `gemm` crate on one thread (the same bits whatever the pool size).
/// Needs m, n, k > 0 and the strides to stay inside `a` and `b`.
#[allow(clippy::too_many_arguments)]
fn gemm<T: Elem>(
    m: usize,
    n: usize,
    k: usize,
    a: &[T],
    sa: (usize, usize),
    b: &[T],
    sb: (usize, usize),
    dst: &mut [T],
) {
    let last = |(r, c): (usize, usize), rows: usize, cols: usize| (rows - 1) * r + (cols - 1) * c;
    assert!(m > 0 && n > 0 && k > 0 && dst.len() >= m * n);
    assert!(last(sa, m, k) < a.len() && last(sb, k, n) < b.len());
    // SAFETY: checked just above: every element the strides address lies in
    // `a` and `b`, and `dst` holds m * n elements.
    unsafe {
        T::kernel_on(
            Backend::Gemm,
            m,
            n,
            k,
            a.as_ptr(),
            (sa.0 as isize, sa.1 as isize),
            b.as_ptr(),
            (sb.0 as isize, sb.1 as isize),
            dst.as_mut_ptr(),
            1,
        )
    }
}

/// The forward pass: the result and, when `keep`, what the backward needs.
fn run<T: Elem>(x: &Tensor, w: &Tensor, dm: Dims, seq: bool, keep: bool) -> (Tensor, Option<Box<LstmSaved>>) {
    let Dims { n, t: tt, h: hh } = dm;
    let g4 = 4 * hh;
    let mut gates = vec![T::ZERO; n * tt * g4];
    let mut c = vec![T::ZERO; n * tt * hh];
    let mut tc = vec![T::ZERO; n * tt * hh];
    let mut h = vec![T::ZERO; n * tt * hh];
    with_dense::<T, _>(w, |w| {
        with_dense::<T, _>(x, |xw| {
            let mut pre = vec![T::ZERO; n * g4];
            let mut two_c = vec![T::ZERO; n * hh];
            let mut sig = vec![T::ZERO; n * hh];
            for t in 0..tt {
                // pre = h_{t-1} @ w_hhᵀ (h_{-1} = 0)
                if t > 0 && n > 0 && hh > 0 {
                    gemm(n, g4, hh, &h[(t - 1) * hh..], (tt * hh, 1), w, (1, hh), &mut pre);
                } else {
                    pre.fill(T::ZERO);
                }
                for b in 0..n {
                    let at = (b * tt + t) * g4;
                    let row = &mut pre[b * g4..(b + 1) * g4];
                    for (p, &v) in row.iter_mut().zip(&xw[at..at + g4]) {
                        *p = v + *p;
                    }
                    // tanh(x) = 2σ(2x) - 1 for the cell gate.
                    for p in &mut row[2 * hh..3 * hh] {
                        *p = *p + *p;
                    }
                    let dst = &mut gates[at..at + g4];
                    T::sigmoid_into(row, dst);
                    for v in &mut dst[2 * hh..3 * hh] {
                        *v = *v + *v - T::ONE;
                    }
                }
                for b in 0..n {
                    let a = &gates[(b * tt + t) * g4..(b * tt + t + 1) * g4];
                    let (i, f, g) = (&a[..hh], &a[hh..2 * hh], &a[2 * hh..3 * hh]);
                    let at = (b * tt + t) * hh;
                    let (before, cur) = c.split_at_mut(at);
                    let cur = &mut cur[..hh];
                    let tw = &mut two_c[b * hh..(b + 1) * hh];
                    if t > 0 {
                        let cp = &before[at - hh..];
                        for j in 0..hh {
                            let cn = f[j] * cp[j] + i[j] * g[j];
                            cur[j] = cn;
                            tw[j] = cn + cn;
                        }
                    } else {
                        for j in 0..hh {
                            let cn = f[j] * T::ZERO + i[j] * g[j];
                            cur[j] = cn;
                            tw[j] = cn + cn;
                        }
                    }
                }
                T::sigmoid_into(&two_c, &mut sig);
                for b in 0..n {
                    let o = &gates[(b * tt + t) * g4 + 3 * hh..(b * tt + t + 1) * g4];
                    let at = (b * tt + t) * hh;
                    let sg = &sig[b * hh..(b + 1) * hh];
                    let (tcr, hr) = (&mut tc[at..at + hh], &mut h[at..at + hh]);
                    for j in 0..hh {
                        let th = sg[j] + sg[j] - T::ONE;
                        tcr[j] = th;
                        hr[j] = o[j] * th;
                    }
                }
            }
        })
    });
    let h_all = Tensor::from_vec(h, vec![n, tt, hh]);
    let out = if seq {
        h_all.clone()
    } else if tt == 0 {
        // No step: the zero initial state.
        Tensor::from_vec(vec![T::ZERO; n * hh], vec![n, hh])
    } else {
        let last: Vec<T> = with_dense::<T, _>(&h_all, |hv| {
            (0..n)
                .flat_map(|b| hv[(b * tt + tt - 1) * hh..(b * tt + tt) * hh].iter().copied())
                .collect()
        });
        Tensor::from_vec(last, vec![n, hh])
    };
    let saved = keep.then(|| {
        Box::new(LstmSaved {
            gates: Tensor::from_vec(gates, vec![n, tt, g4]),
            c: Tensor::from_vec(c, vec![n, tt, hh]),
            tanh_c: Tensor::from_vec(tc, vec![n, tt, hh]),
            h: h_all,
        })
    });
    (out, saved)
}

/// The cotangents of `xw` and `w_hh` (those `need` asks for) given the
/// cotangent `g` of the result: backpropagation through time, on plain
/// loops for a first-order pass, in recorded operations ([`vjp_recorded`])
/// when the backward pass is itself recorded.
pub(super) fn vjp(
    xw: &Tensor,
    w_hh: &Tensor,
    saved: &LstmSaved,
    seq: bool,
    g: &Tensor,
    need: &[bool],
) -> VResult<Vec<Option<Tensor>>> {
    let need_x = need.first().copied().unwrap_or(false);
    let need_w = need.get(1).copied().unwrap_or(false);
    if !need_x && !need_w {
        return Ok(vec![None, None]);
    }
    let dm = dims(xw.shape(), w_hh.shape())?;
    let want: Vec<usize> = if seq { vec![dm.n, dm.t, dm.h] } else { vec![dm.n, dm.h] };
    if g.shape() != want.as_slice() {
        return Err(shape_err(format!(
            "lstm_seq: the result's cotangent must have shape {}; found {}",
            shape_str(&want),
            shape_str(g.shape())
        )));
    }
    if !untraced(&[g, xw, w_hh]) {
        return vjp_recorded(xw, w_hh, seq, g, dm, need_x, need_w);
    }
    let (dx, dw) = match xw.dtype {
        DType::F64 => back::<f64>(w_hh, saved, seq, g, dm, need_w),
        _ => back::<f32>(w_hh, saved, seq, g, dm, need_w),
    };
    Ok(vec![need_x.then_some(dx), dw])
}

/// [`vjp`] in recorded operations (the backward pass of `grad` of `grad`):
/// the forward pass recomputed from the traced operands, then
/// backpropagation through time, so that the cotangents depend on xw, w_hh
/// and g as an outer `grad` needs. The same arithmetic as [`back`], term for
/// term.
fn vjp_recorded(
    xw: &Tensor,
    w_hh: &Tensor,
    seq: bool,
    g: &Tensor,
    dm: Dims,
    need_x: bool,
    need_w: bool,
) -> VResult<Vec<Option<Tensor>>> {
    use super::arith::{unary, UFn};
    use super::autodiff::bin;
    use super::index::index_select;
    use super::matmul::matmul;
    use super::shape::{concat, permute, reshape, stack};
    use crate::syntax::ast::BinOp::{Add, Mul, Sub};
    let Dims { n, t: tt, h: hh } = dm;
    let d = xw.dtype;
    let g = Arg::T(g.clone()).to_tensor(d)?;
    let one = Tensor::full(vec![], 1.0, d)?;
    let zeros = Tensor::full(vec![n, hh], 0.0, d)?;
    // Gate k's columns of an (N, 4H) tensor; step s of an (N, T, width) one.
    let cols = |t: &Tensor, k: usize| index_select(t, 1, &(k * hh..(k + 1) * hh).collect::<Arc<[usize]>>());
    let step = |t: &Tensor, s: usize, width: usize| reshape(&index_select(t, 1, &Arc::from([s]))?, vec![n, width]);
    let mul = |a: &Tensor, b: &Tensor| bin(Mul, a, b);
    let one_minus = |a: &Tensor| bin(Sub, &one, a);
    let wt = permute(w_hh, &[1, 0])?;
    // hs[t], cs[t]: h and c before step t.
    let (mut hs, mut cs, mut acts) = (vec![zeros.clone()], vec![zeros.clone()], Vec::new());
    for t in 0..tt {
        let gates = bin(Add, &step(xw, t, 4 * hh)?, &matmul(&hs[t], &wt)?)?;
        let i = unary(UFn::Sigmoid, &cols(&gates, 0)?)?;
        let f = unary(UFn::Sigmoid, &cols(&gates, 1)?)?;
        let gg = unary(UFn::Tanh, &cols(&gates, 2)?)?;
        let o = unary(UFn::Sigmoid, &cols(&gates, 3)?)?;
        let c = bin(Add, &mul(&f, &cs[t])?, &mul(&i, &gg)?)?;
        let th = unary(UFn::Tanh, &c)?;
        hs.push(mul(&o, &th)?);
        cs.push(c);
        acts.push([i, f, gg, o, th]);
    }
    let (mut dh_next, mut dc_next) = (zeros.clone(), zeros.clone());
    let mut dgs: Vec<Tensor> = Vec::with_capacity(tt);
    let mut dw: Option<Tensor> = None;
    for t in (0..tt).rev() {
        let go = if seq {
            step(&g, t, hh)?
        } else if t + 1 == tt {
            g.clone()
        } else {
            zeros.clone()
        };
        let dh = bin(Add, &go, &dh_next)?;
        let [i, f, gg, o, th] = &acts[t];
        let dc = bin(Add, &mul(&mul(&dh, o)?, &one_minus(&mul(th, th)?)?)?, &dc_next)?;
        let di = mul(&mul(&mul(&dc, gg)?, i)?, &one_minus(i)?)?;
        let df = mul(&mul(&mul(&dc, &cs[t])?, f)?, &one_minus(f)?)?;
        let dg = mul(&mul(&dc, i)?, &one_minus(&mul(gg, gg)?)?)?;
        let d_o = mul(&mul(&mul(&dh, th)?, o)?, &one_minus(o)?)?;
        let dgt = concat(&[di, df, dg, d_o], 1)?;
        dc_next = mul(&dc, f)?;
        dh_next = matmul(&dgt, w_hh)?;
        if need_w && t > 0 {
            let p = matmul(&permute(&dgt, &[1, 0])?, &hs[t])?;
            dw = Some(match dw {
                Some(acc) => bin(Add, &acc, &p)?,
                None => p,
            });
        }
        dgs.push(dgt);
    }
    dgs.reverse();
    let dx = if !need_x {
        None
    } else if tt == 0 {
        Some(Tensor::full(vec![n, 0, 4 * hh], 0.0, d)?)
    } else {
        Some(stack(&dgs, 1)?)
    };
    let dw = match (need_w, dw) {
        (false, _) => None,
        (true, Some(w)) => Some(w),
        (true, None) => Some(Tensor::full(vec![4 * hh, hh], 0.0, d)?),
    };
    Ok(vec![dx, dw])
}

fn back<T: Elem>(w: &Tensor, s: &LstmSaved, seq: bool, g: &Tensor, dm: Dims, need_w: bool) -> (Tensor, Option<Tensor>) {
    let Dims { n, t: tt, h: hh } = dm;
    let g4 = 4 * hh;
    let gout: Vec<T> = g.to_vec();
    let mut dxw = vec![T::ZERO; n * tt * g4];
    let mut dw: Option<Vec<T>> = need_w.then(|| vec![T::ZERO; g4 * hh]);
    with_dense::<T, _>(w, |w| {
        with_dense::<T, _>(&s.gates, |gates| {
            with_dense::<T, _>(&s.c, |c| {
                with_dense::<T, _>(&s.tanh_c, |tc| {
                    let mut dh_next = vec![T::ZERO; n * hh];
                    let mut dc_next = vec![T::ZERO; n * hh];
                    for t in (0..tt).rev() {
                        for b in 0..n {
                            let at = (b * tt + t) * hh;
                            let ag = (b * tt + t) * g4;
                            let a = &gates[ag..ag + g4];
                            let dg = &mut dxw[ag..ag + g4];
                            for j in 0..hh {
                                let go = if seq {
                                    gout[at + j]
                                } else if t + 1 == tt {
                                    gout[b * hh + j]
                                } else {
                                    T::ZERO
                                };
                                let dh = go + dh_next[b * hh + j];
                                let (i, f, gg, o) = (a[j], a[hh + j], a[2 * hh + j], a[3 * hh + j]);
                                let th = tc[at + j];
                                let dc = dh * o * (T::ONE - th * th) + dc_next[b * hh + j];
                                let cp = if t > 0 { c[at - hh + j] } else { T::ZERO };
                                dg[j] = dc * gg * i * (T::ONE - i);
                                dg[hh + j] = dc * cp * f * (T::ONE - f);
                                dg[2 * hh + j] = dc * i * (T::ONE - gg * gg);
                                dg[3 * hh + j] = dh * th * o * (T::ONE - o);
                                dc_next[b * hh + j] = dc * f;
                            }
                        }
                        // dh_{t-1} = d_gates_t @ w_hh
                        if t > 0 && n > 0 && hh > 0 {
                            gemm(n, hh, g4, &dxw[t * g4..], (tt * g4, 1), w, (hh, 1), &mut dh_next);
                        }
                    }
                })
            })
        })
    });
    if let Some(dw) = dw.as_mut() {
        // d_w_hh = Σ_t d_gates_tᵀ @ h_{t-1}: one product over all (n, t),
        // with h shifted one step (h_{-1} = 0).
        if n > 0 && tt > 1 && hh > 0 {
            let mut hprev = vec![T::ZERO; n * tt * hh];
            with_dense::<T, _>(&s.h, |h| {
                for b in 0..n {
                    let base = b * tt * hh;
                    hprev[base + hh..base + tt * hh].copy_from_slice(&h[base..base + (tt - 1) * hh]);
                }
            });
            gemm(g4, hh, n * tt, &dxw, (1, g4), &hprev, (hh, 1), dw);
        }
    }
    (
        Tensor::from_vec(dxw, vec![n, tt, g4]),
        dw.map(|v| Tensor::from_vec(v, vec![g4, hh])),
    )
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{ok, randv};
    use super::lstm_seq;
    use crate::error::ErrorKind;
    use crate::syntax::ast::BinOp;
    use crate::tensor::arith::{binary, Arg};
    use crate::tensor::autodiff::{backward, leaf};
    use crate::tensor::core::Tensor;
    use crate::tensor::dtype::DType;
    use crate::tensor::reduce::{reduce, RKind};
    use crate::value::VResult;

    fn sigmoid(x: f64) -> f64 {
        1.0 / (1.0 + (-x).exp())
    }

    /// The recurrence step by step, one gate at a time, in f64: every h
    /// (N, T, H), row-major.
    fn reference(xw: &[f64], w: &[f64], n: usize, tt: usize, hh: usize) -> Vec<f64> {
        let mut out = vec![0.0; n * tt * hh];
        for b in 0..n {
            let mut h = vec![0.0; hh];
            let mut c = vec![0.0; hh];
            for t in 0..tt {
                let gate = |k: usize, h: &[f64]| -> Vec<f64> {
                    (0..hh)
                        .map(|j| {
                            let row = k * hh + j;
                            let rec: f64 = (0..hh).map(|q| h[q] * w[row * hh + q]).sum();
                            xw[(b * tt + t) * 4 * hh + row] + rec
                        })
                        .collect()
                };
                let i: Vec<f64> = gate(0, &h).into_iter().map(sigmoid).collect();
                let f: Vec<f64> = gate(1, &h).into_iter().map(sigmoid).collect();
                let g: Vec<f64> = gate(2, &h).into_iter().map(f64::tanh).collect();
                let o: Vec<f64> = gate(3, &h).into_iter().map(sigmoid).collect();
                for j in 0..hh {
                    c[j] = f[j] * c[j] + i[j] * g[j];
                    h[j] = o[j] * c[j].tanh();
                    out[(b * tt + t) * hh + j] = h[j];
                }
            }
        }
        out
    }

    fn last_steps(all: &[f64], n: usize, tt: usize, hh: usize) -> Vec<f64> {
        (0..n)
            .flat_map(|b| all[(b * tt + tt - 1) * hh..(b * tt + tt) * hh].to_vec())
            .collect()
    }

    fn inputs(n: usize, tt: usize, hh: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        (
            randv(n * tt * 4 * hh, seed, -1.5, 1.5),
            randv(4 * hh * hh, seed + 1, -0.8, 0.8),
        )
    }

    fn close(a: &[f64], b: &[f64], tol: f64, what: &str) {
        assert_eq!(a.len(), b.len(), "{what}: lengths");
        for (k, (x, y)) in a.iter().zip(b).enumerate() {
            assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{what}[{k}]: {x} against {y}");
        }
    }

    #[test]
    fn forward_matches_a_step_by_step_reference() {
        let (n, tt, hh) = (3, 5, 4);
        let (xv, wv) = inputs(n, tt, hh, 1);
        let want = reference(&xv, &wv, n, tt, hh);
        let x = Tensor::from_vec(xv, vec![n, tt, 4 * hh]);
        let w = Tensor::from_vec(wv, vec![4 * hh, hh]);
        let all = ok(lstm_seq(&x, &w, true));
        assert_eq!(all.shape(), &[n, tt, hh]);
        assert_eq!(all.dtype, DType::F64);
        close(&all.to_vec::<f64>(), &want, 1e-13, "sequence");
        let last = ok(lstm_seq(&x, &w, false));
        assert_eq!(last.shape(), &[n, hh]);
        close(&last.to_vec::<f64>(), &last_steps(&want, n, tt, hh), 1e-13, "last");
        // A strided view of xw (every other step of a longer sequence) reads the same as its copy.
        let (xl, _) = inputs(n, 2 * tt, hh, 5);
        let long = Tensor::from_vec(xl, vec![n, 2 * tt, 4 * hh]);
        let mut lay = long.layout.clone();
        lay.shape[1] = tt;
        lay.strides[1] *= 2;
        let view = long.view(lay);
        let copy = view.contiguous();
        assert_eq!(
            ok(lstm_seq(&view, &w, true)).to_vec::<f64>(),
            ok(lstm_seq(&copy, &w, true)).to_vec::<f64>()
        );
    }

    /// sum(lstm_seq(x, w) * weights) and its gradient by the tape.
    fn loss_and_grads(x: &Tensor, w: &Tensor, seq: bool) -> (f64, Tensor, Tensor) {
        let (lx, lw) = (leaf(x), leaf(w));
        let out = ok(lstm_seq(&lx, &lw, seq));
        let weights = Tensor::from_vec(randv(out.size(), 99, 0.5, 1.5), out.shape().to_vec()).cast(out.dtype);
        let weighted = ok(binary(BinOp::Mul, &Arg::T(out), &Arg::T(ok(weights))));
        let all: Vec<usize> = (0..weighted.ndim()).collect();
        let loss = ok(reduce(&weighted, &all, false, RKind::Sum));
        let mut gs = ok(backward(&loss, &[lx, lw], false));
        let gw = gs.pop().flatten().expect("a gradient for w_hh");
        let gx = gs.pop().flatten().expect("a gradient for xw");
        (loss.to_vec::<f64>()[0], gx, gw)
    }

    #[test]
    fn gradients_match_central_differences() {
        let (n, tt, hh) = (3, 5, 4);
        let (xv, wv) = inputs(n, tt, hh, 2);
        for seq in [true, false] {
            let x = Tensor::from_vec(xv.clone(), vec![n, tt, 4 * hh]);
            let w = Tensor::from_vec(wv.clone(), vec![4 * hh, hh]);
            let (_, gx, gw) = loss_and_grads(&x, &w, seq);
            assert_eq!(gx.shape(), x.shape());
            assert_eq!(gw.shape(), w.shape());
            let value = |xs: &[f64], ws: &[f64]| -> f64 {
                let x = Tensor::from_vec(xs.to_vec(), vec![n, tt, 4 * hh]);
                let w = Tensor::from_vec(ws.to_vec(), vec![4 * hh, hh]);
                loss_and_grads(&x, &w, seq).0
            };
            let eps = 1e-6;
            let mut fx = Vec::new();
            for k in 0..xv.len() {
                let (mut p, mut m) = (xv.clone(), xv.clone());
                p[k] += eps;
                m[k] -= eps;
                fx.push((value(&p, &wv) - value(&m, &wv)) / (2.0 * eps));
            }
            let mut fw = Vec::new();
            for k in 0..wv.len() {
                let (mut p, mut m) = (wv.clone(), wv.clone());
                p[k] += eps;
                m[k] -= eps;
                fw.push((value(&xv, &p) - value(&xv, &m)) / (2.0 * eps));
            }
            close(&gx.to_vec::<f64>(), &fx, 1e-7, &format!("d xw (sequences {seq})"));
            close(&gw.to_vec::<f64>(), &fw, 1e-7, &format!("d w_hh (sequences {seq})"));
        }
    }

    #[test]
    fn float32_runs_in_float32_near_float64() {
        let (n, tt, hh) = (4, 6, 8);
        let (xv, wv) = inputs(n, tt, hh, 3);
        let x64 = Tensor::from_vec(xv.clone(), vec![n, tt, 4 * hh]);
        let w64 = Tensor::from_vec(wv.clone(), vec![4 * hh, hh]);
        let x32 = ok(x64.astype(DType::F32));
        let w32 = ok(w64.astype(DType::F32));
        for seq in [true, false] {
            let o32 = ok(lstm_seq(&x32, &w32, seq));
            assert_eq!(o32.dtype, DType::F32);
            let o64 = ok(lstm_seq(&x64, &w64, seq));
            close(&o32.to_vec::<f64>(), &o64.to_vec::<f64>(), 1e-5, "f32 forward");
            let (_, gx32, gw32) = loss_and_grads(&x32, &w32, seq);
            let (_, gx64, gw64) = loss_and_grads(&x64, &w64, seq);
            assert_eq!((gx32.dtype, gw32.dtype), (DType::F32, DType::F32));
            close(&gx32.to_vec::<f64>(), &gx64.to_vec::<f64>(), 1e-4, "f32 d xw");
            close(&gw32.to_vec::<f64>(), &gw64.to_vec::<f64>(), 1e-4, "f32 d w_hh");
        }
        // Mixed: promoted to f64, with an f32 gradient for the f32 operand.
        let mixed = ok(lstm_seq(&x32, &w64, true));
        assert_eq!(mixed.dtype, DType::F64);
        let (_, gx, gw) = loss_and_grads(&x32, &w64, true);
        assert_eq!((gx.dtype, gw.dtype), (DType::F32, DType::F64));
        // Integer operands run in f64.
        let xi = ok(ok(x64.astype(DType::F32)).astype(DType::I64));
        assert_eq!(ok(lstm_seq(&xi, &w64, false)).dtype, DType::F64);
    }

    #[test]
    fn float32_sigmoid_is_within_a_few_ulp() {
        let mut worst = 0f64;
        for k in -200_000..=200_000 {
            let x = k as f32 * 1e-4;
            let want = 1.0 / (1.0 + (-(x as f64)).exp());
            let got = super::sigmoid_f32(x) as f64;
            worst = worst.max(((got - want) / want).abs());
        }
        assert!(worst < 4.0 * f32::EPSILON as f64, "relative error {worst}");
        assert!(super::sigmoid_f32(f32::NAN).is_nan());
        assert_eq!(super::sigmoid_f32(f32::INFINITY), 1.0);
        assert!(super::sigmoid_f32(f32::NEG_INFINITY) < 1e-37);
        assert!(super::sigmoid_f32(-1000.0) < 1e-37);
        let (mut a, b) = (vec![0f32; 37], (0..37).map(|k| k as f32 - 18.0).collect::<Vec<_>>());
        <f32 as super::Elem>::sigmoid_into(&b, &mut a);
        for (o, &x) in a.iter().zip(&b) {
            assert_eq!(o.to_bits(), super::sigmoid_f32(x).to_bits());
        }
    }

    /// Runs `f` on a rayon pool of `threads` threads.
    fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
        ok(pool.map_err(|e| crate::value::err(ErrorKind::Error, e.to_string()))).install(f)
    }

    #[test]
    fn same_bits_on_1_and_2_threads() {
        let (n, tt, hh) = (32, 7, 32);
        let (xv, wv) = inputs(n, tt, hh, 4);
        for d in [DType::F64, DType::F32] {
            let x = ok(Tensor::from_vec(xv.clone(), vec![n, tt, 4 * hh]).astype(d));
            let w = ok(Tensor::from_vec(wv.clone(), vec![4 * hh, hh]).astype(d));
            let bits = |threads: usize| -> Vec<u64> {
                let saved = crate::par::threads();
                crate::par::set_threads(threads);
                let r = on_threads(threads, || {
                    let out = ok(lstm_seq(&x, &w, true));
                    let (_, gx, gw) = loss_and_grads(&x, &w, false);
                    [out, gx, gw]
                        .iter()
                        .flat_map(|t| t.to_vec::<f64>())
                        .map(f64::to_bits)
                        .collect()
                });
                crate::par::set_threads(saved);
                r
            };
            assert_eq!(bits(1), bits(2), "{d:?}");
        }
    }

    #[test]
    fn zero_steps_give_the_zero_state() {
        let (n, hh) = (3, 4);
        let x = Tensor::from_vec(Vec::<f64>::new(), vec![n, 0, 4 * hh]);
        let w = Tensor::from_vec(randv(4 * hh * hh, 1, -1.0, 1.0), vec![4 * hh, hh]);
        let all = ok(lstm_seq(&x, &w, true));
        assert_eq!(all.shape(), &[n, 0, hh]);
        let last = ok(lstm_seq(&x, &w, false));
        assert_eq!(last.shape(), &[n, hh]);
        assert!(last.to_vec::<f64>().iter().all(|&v| v == 0.0));
        let (loss, gx, gw) = loss_and_grads(&x, &w, false);
        assert_eq!(loss, 0.0);
        assert_eq!(gx.shape(), &[n, 0, 4 * hh]);
        assert!(gw.to_vec::<f64>().iter().all(|&v| v == 0.0));
        // One step: no recurrent product, so no gradient for w_hh either.
        let x1 = Tensor::from_vec(randv(n * 4 * hh, 2, -1.0, 1.0), vec![n, 1, 4 * hh]);
        let (_, _, gw1) = loss_and_grads(&x1, &w, true);
        assert!(gw1.to_vec::<f64>().iter().all(|&v| v == 0.0));
        // No batch, no hidden units.
        let empty_w = Tensor::from_vec(Vec::<f64>::new(), vec![0, 0]);
        let e = ok(lstm_seq(
            &Tensor::from_vec(Vec::<f64>::new(), vec![2, 3, 0]),
            &empty_w,
            true,
        ));
        assert_eq!(e.shape(), &[2, 3, 0]);
        let nb = ok(lstm_seq(
            &Tensor::from_vec(Vec::<f64>::new(), vec![0, 3, 4 * hh]),
            &w,
            false,
        ));
        assert_eq!(nb.shape(), &[0, hh]);
    }

    #[test]
    fn wrong_shapes_and_dtypes_are_errors() {
        let w = Tensor::from_vec(vec![0.0f64; 32], vec![8, 4]);
        let x = Tensor::from_vec(vec![0.0f64; 2 * 3 * 16], vec![2, 3, 16]);
        let kind = |r: VResult<Tensor>| r.err().map(|e| (e.kind, e.message.to_string()));
        let cases: Vec<(Tensor, Tensor, &str)> = vec![
            (
                ok(x.reshaped(vec![6, 16])),
                w.clone(),
                "xw must be 3-D (N, T, 4H); found shape (6, 16)",
            ),
            (
                x.clone(),
                ok(w.reshaped(vec![32])),
                "w_hh must be 2-D (4H, H); found shape (32,)",
            ),
            (x.clone(), ok(w.reshaped(vec![4, 8])), "found shape (4, 8)"),
            (
                x.clone(),
                Tensor::from_vec(vec![0.0f64; 16], vec![8, 2]),
                "xw's last axis must be 4H = 8 (w_hh has shape (8, 2)); found xw of shape (2, 3, 16)",
            ),
        ];
        for (a, b, msg) in cases {
            match kind(lstm_seq(&a, &b, true)) {
                Some((ErrorKind::ShapeError, m)) => assert!(m.contains(msg), "{m}"),
                other => panic!("expected a ShapeError containing {msg:?}, got {other:?}"),
            }
        }
        let x16 = ok(x.astype(DType::F16));
        let w16 = ok(Tensor::from_vec(vec![0.0f64; 64], vec![16, 4]).astype(DType::F16));
        let r = kind(lstm_seq(&x16, &w16, true));
        assert!(matches!(r, Some((ErrorKind::TypeError, _))), "{r:?}");
    }

    #[test]
    fn the_recorded_rule_matches_the_fast_one_and_gives_second_derivatives() {
        let (n, tt, hh) = (2, 4, 3);
        let (xv, wv) = inputs(n, tt, hh, 6);
        let v = randv(n * tt * 4 * hh, 8, -1.0, 1.0);
        for seq in [true, false] {
            let x = Tensor::from_vec(xv.clone(), vec![n, tt, 4 * hh]);
            let w = Tensor::from_vec(wv.clone(), vec![4 * hh, hh]);
            let (_, fx, fw) = loss_and_grads(&x, &w, seq);
            // s(x, w) = sum(v * d loss / d xw), through a recorded backward pass.
            let s_and_grads = |ws: &[f64], record: bool| -> (f64, Tensor, Tensor, Option<Tensor>) {
                let (lx, lw) = (leaf(&x), leaf(&Tensor::from_vec(ws.to_vec(), vec![4 * hh, hh])));
                let out = ok(lstm_seq(&lx, &lw, seq));
                let weights = Tensor::from_vec(randv(out.size(), 99, 0.5, 1.5), out.shape().to_vec());
                let weighted = ok(binary(BinOp::Mul, &Arg::T(out), &Arg::T(weights)));
                let all: Vec<usize> = (0..weighted.ndim()).collect();
                let loss = ok(reduce(&weighted, &all, false, RKind::Sum));
                let mut gs = ok(backward(&loss, &[lx, lw.clone()], record));
                let gw = gs.pop().flatten().expect("d w_hh");
                let gx = gs.pop().flatten().expect("d xw");
                let vt = Tensor::from_vec(v.clone(), vec![n, tt, 4 * hh]);
                let sv = ok(reduce(
                    &ok(binary(BinOp::Mul, &Arg::T(gx.clone()), &Arg::T(vt))),
                    &[0, 1, 2],
                    false,
                    RKind::Sum,
                ));
                let second = if record {
                    ok(backward(&sv, &[lw], false)).pop().flatten()
                } else {
                    None
                };
                (sv.to_vec::<f64>()[0], gx, gw, second)
            };
            let (_, rx, rw, second) = s_and_grads(&wv, true);
            close(&rx.to_vec::<f64>(), &fx.to_vec::<f64>(), 1e-12, "recorded d xw");
            close(&rw.to_vec::<f64>(), &fw.to_vec::<f64>(), 1e-12, "recorded d w_hh");
            // d s / d w_hh against central differences of the fast first-order rule.
            let second = second.expect("a second derivative").to_vec::<f64>();
            let eps = 1e-6;
            let fd: Vec<f64> = (0..wv.len())
                .map(|k| {
                    let (mut p, mut m) = (wv.clone(), wv.clone());
                    p[k] += eps;
                    m[k] -= eps;
                    (s_and_grads(&p, false).0 - s_and_grads(&m, false).0) / (2.0 * eps)
                })
                .collect();
            close(&second, &fd, 1e-6, &format!("second derivative (sequences {seq})"));
        }
    }

    /// Forward + backward of N=32, T=24, H=32 in f32 (run by hand:
    /// `cargo test --release -p apsi-core --lib lstm_timing -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn lstm_timing() {
        let (n, tt, hh) = (32, 24, 32);
        let (xv, wv) = inputs(n, tt, hh, 7);
        let x = ok(Tensor::from_vec(xv, vec![n, tt, 4 * hh]).astype(DType::F32));
        let w = ok(Tensor::from_vec(wv, vec![4 * hh, hh]).astype(DType::F32));
        let step = || {
            let (lx, lw) = (leaf(&x), leaf(&w));
            let out = ok(lstm_seq(&lx, &lw, false));
            let loss = ok(reduce(&out, &[0, 1], false, RKind::Sum));
            ok(backward(&loss, &[lx, lw], false))
        };
        for _ in 0..20 {
            step();
        }
        let reps = 300;
        let t0 = std::time::Instant::now();
        for _ in 0..reps {
            step();
        }
        let both = t0.elapsed().as_secs_f64() / reps as f64 * 1e6;
        let t0 = std::time::Instant::now();
        for _ in 0..reps {
            ok(lstm_seq(&x, &w, false));
        }
        let fwd = t0.elapsed().as_secs_f64() / reps as f64 * 1e6;
        println!("lstm_seq N={n} T={tt} H={hh} f32: forward {fwd:.1} us, forward+backward {both:.1} us");
    }
}
