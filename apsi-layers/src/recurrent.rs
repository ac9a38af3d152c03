//! The LSTM layer's computation (PyTorch's `nn.LSTM`, one layer, batch
//! first, zero initial state; gate rows in the order i, f, g, o).

use crate::ops;
use apsi_core::api::tensor::{lstm_seq, DType, Tensor, UFn};
use apsi_core::api::{err, ErrorKind, VResult};

/// `x (N, T, in)` → the last `h (N, hidden)`, or every `h` as `(N, T, hidden)`.
pub fn lstm(x: &Tensor, hidden: usize, seq: bool, params: &[Tensor]) -> VResult<Tensor> {
    let [w_ih, w_hh, b_ih, b_hh] = params else {
        return Err(err(ErrorKind::ValueError, "LSTM: the layer lost its parameters"));
    };
    // The input part of every step's gates in one product: (N, T, 4H).
    let xw = ops::add(&ops::add(&ops::matmul(x, &ops::transpose(w_ih)?)?, b_ih)?, b_hh)?;
    if matches!(xw.dtype, DType::F32 | DType::F64) && w_hh.dtype == xw.dtype {
        // The recurrence as one recorded op (apsi-core's lstm_seq).
        return lstm_seq(&xw, w_hh, seq);
    }
    composed(&xw, w_hh, x.shape()[0], hidden, seq)
}

/// The recurrence in small recorded ops, for the formats `lstm_seq` does
/// not compute in (the half formats of mixed precision).
fn composed(xw: &Tensor, w_hh: &Tensor, n: usize, hidden: usize, seq: bool) -> VResult<Tensor> {
    let t = xw.shape()[1];
    let w_hh_t = ops::transpose(w_hh)?;
    let mut h = Tensor::full(vec![n, hidden], 0.0, xw.dtype)?;
    let mut c = h.clone();
    let mut outs = Vec::with_capacity(if seq { t } else { 0 });
    for step in 0..t {
        let gates = ops::add(&ops::slice_at(xw, 1, step)?, &ops::matmul(&h, &w_hh_t)?)?;
        let gates = ops::reshape(&gates, vec![n, 4, hidden])?;
        let i = ops::unary(UFn::Sigmoid, &ops::slice_at(&gates, 1, 0)?)?;
        let f = ops::unary(UFn::Sigmoid, &ops::slice_at(&gates, 1, 1)?)?;
        let g = ops::unary(UFn::Tanh, &ops::slice_at(&gates, 1, 2)?)?;
        let o = ops::unary(UFn::Sigmoid, &ops::slice_at(&gates, 1, 3)?)?;
        c = ops::add(&ops::mul(&f, &c)?, &ops::mul(&i, &g)?)?;
        h = ops::mul(&o, &ops::unary(UFn::Tanh, &c)?)?;
        if seq {
            outs.push(h.clone());
        }
    }
    if seq {
        if outs.is_empty() {
            return Tensor::full(vec![n, 0, hidden], 0.0, xw.dtype);
        }
        ops::stack(&outs, 1)
    } else {
        Ok(h)
    }
}
