//! Activations: `relu`, `gelu` (this module's), `tanh`, `sigmoid` and
//! `softmax` (the prelude's), as a layer's `activation=` and as functions.

use crate::ops;
use apsi_core::api::tensor::{Tensor, UFn};
use apsi_core::api::{err, BinOp, ErrorKind, VResult, Value};

/// One of the five activations `activation=` takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    Relu,
    /// `gelu`: exact (`false`) or PyTorch's tanh approximation (`true`).
    Gelu(bool),
    Tanh,
    Sigmoid,
    /// over the last axis
    Softmax,
}

impl Act {
    pub fn from_name(name: &str) -> Option<Act> {
        Some(match name {
            "relu" => Act::Relu,
            "gelu" => Act::Gelu(false),
            "tanh" => Act::Tanh,
            "sigmoid" => Act::Sigmoid,
            "softmax" => Act::Softmax,
            _ => return None,
        })
    }

    /// `activation=`: one of the five functions or its name; `none` is no activation.
    pub fn from_value(who: &str, v: Option<&Value>) -> VResult<Option<Act>> {
        let name = match v {
            None | Some(Value::None) => return Ok(None),
            Some(Value::Str(s)) => s.as_str().to_string(),
            Some(Value::Native(f)) => f.name.to_string(),
            Some(other) => {
                return Err(err(
                    ErrorKind::TypeError,
                    format!(
                        "{who}: activation must be relu, gelu, tanh, sigmoid or softmax (or its name), not {}",
                        other.type_name()
                    ),
                ))
            }
        };
        match Act::from_name(&name) {
            Some(a) => Ok(Some(a)),
            None => Err(err(
                ErrorKind::ValueError,
                format!("{who}: unknown activation '{name}' (expected relu, gelu, tanh, sigmoid or softmax)"),
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Act::Relu => "relu",
            Act::Gelu(_) => "gelu",
            Act::Tanh => "tanh",
            Act::Sigmoid => "sigmoid",
            Act::Softmax => "softmax",
        }
    }

    pub fn apply(self, x: &Tensor) -> VResult<Tensor> {
        match self {
            Act::Relu => ops::relu(x),
            Act::Gelu(approx) => gelu(x, approx),
            Act::Tanh => ops::unary(UFn::Tanh, x),
            Act::Sigmoid => ops::unary(UFn::Sigmoid, x),
            Act::Softmax => ops::softmax_last(x),
        }
    }
}

/// `gelu(x)`: `0.5·x·(1 + erf(x/√2))`, or with `approximate`
/// `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))` (PyTorch's two forms).
pub fn gelu(x: &Tensor, approximate: bool) -> VResult<Tensor> {
    if !approximate {
        // One fused pass forward and backward (apsi-core's UFn::Gelu).
        return ops::unary(UFn::Gelu, x);
    }
    let x3 = ops::mul(&ops::mul(x, x)?, x)?;
    let s = ops::add(x, &ops::scalar(BinOp::Mul, &x3, 0.044715)?)?;
    let k = (2.0 / std::f64::consts::PI).sqrt();
    let inner = ops::unary(UFn::Tanh, &ops::scalar(BinOp::Mul, &s, k)?)?;
    let one_plus = ops::scalar(BinOp::Add, &inner, 1.0)?;
    ops::scalar(BinOp::Mul, &ops::mul(x, &one_plus)?, 0.5)
}
