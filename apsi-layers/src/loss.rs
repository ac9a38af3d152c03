//! Losses (LAYERS.md §3): `mse`, `cross_entropy`, `bce`, `bce_logits`,
//! each a mean over elements (rows for `cross_entropy`) unless
//! `reduction="sum"` or `"none"`.

use crate::layer::tensor_arg;
use crate::ops;
use apsi_core::api::tensor::{shape_str, tensor_value, DType, Tensor, UFn};
use apsi_core::api::{err, Args, BinOp, Caller, ErrorKind, Kwargs, VResult, Value};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Loss {
    Mse,
    CrossEntropy,
    Bce,
    BceLogits,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Reduction {
    Mean,
    Sum,
    None,
}

impl Loss {
    pub fn from_name(s: &str) -> Option<Loss> {
        Some(match s {
            "mse" => Loss::Mse,
            "cross_entropy" => Loss::CrossEntropy,
            "bce" => Loss::Bce,
            "bce_logits" => Loss::BceLogits,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Loss::Mse => "mse",
            Loss::CrossEntropy => "cross_entropy",
            Loss::Bce => "bce",
            Loss::BceLogits => "bce_logits",
        }
    }

    /// The loss of `pred` against `target`.
    pub fn compute(self, pred: &Tensor, target: &Tensor, red: Reduction, smoothing: f64) -> VResult<Tensor> {
        let per = match self {
            Loss::Mse => {
                let t = same_shape("mse", pred, target)?;
                let d = ops::sub(pred, &t)?;
                ops::mul(&d, &d)?
            }
            Loss::CrossEntropy => return cross_entropy(pred, target, red, smoothing),
            Loss::Bce => {
                let t = same_shape("bce", pred, target)?;
                let lp = clamp_log(pred)?;
                let lq = clamp_log(&ops::rscalar(BinOp::Sub, 1.0, pred)?)?;
                let a = ops::mul(&t, &lp)?;
                let b = ops::mul(&ops::rscalar(BinOp::Sub, 1.0, &t)?, &lq)?;
                ops::unary(UFn::Neg, &ops::add(&a, &b)?)?
            }
            Loss::BceLogits => {
                let t = same_shape("bce_logits", pred, target)?;
                // softplus(x) - x·t = (1 - t)·x + log(1 + e^-x), stable.
                let sp = ops::softplus(pred)?;
                ops::sub(&sp, &ops::mul(pred, &t)?)?
            }
        };
        reduce(&per, red)
    }
}

fn reduce(per: &Tensor, red: Reduction) -> VResult<Tensor> {
    match red {
        Reduction::Mean => ops::mean_all(per),
        Reduction::Sum => ops::sum_all(per),
        Reduction::None => Ok(per.clone()),
    }
}

/// `log(x)` clamped at −100 (PyTorch's `BCELoss`).
fn clamp_log(x: &Tensor) -> VResult<Tensor> {
    let l = ops::unary(UFn::Log, x)?;
    apsi_core::api::tensor::extremum(
        &apsi_core::api::tensor::Arg::T(l),
        &apsi_core::api::tensor::Arg::Float(-100.0),
        true,
    )
}

/// The target in the prediction's float dtype, of the prediction's shape
/// (a target `(N,)` is taken as `(N, 1)` for a prediction `(N, 1)`).
fn same_shape(who: &str, pred: &Tensor, target: &Tensor) -> VResult<Tensor> {
    let mut t = target.clone();
    if t.shape() != pred.shape() {
        let column = pred.ndim() == 2 && pred.shape()[1] == 1 && t.ndim() == 1 && t.shape()[0] == pred.shape()[0];
        if !column {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "{who}: prediction {} and target {} differ",
                    shape_str(pred.shape()),
                    shape_str(target.shape())
                ),
            ));
        }
        t = ops::reshape(&t, pred.shape().to_vec())?;
    }
    let dt = if pred.dtype.is_float() { pred.dtype } else { DType::F32 };
    ops::cast(&t, dt)
}

fn cross_entropy(logits: &Tensor, labels: &Tensor, red: Reduction, smoothing: f64) -> VResult<Tensor> {
    let want = &logits.shape()[..logits.ndim().saturating_sub(1)];
    if logits.ndim() == 0 || labels.shape() != want {
        return Err(err(
            ErrorKind::ShapeError,
            format!(
                "cross_entropy: logits {} need labels of shape {}, got {}",
                shape_str(logits.shape()),
                shape_str(want),
                shape_str(labels.shape())
            ),
        ));
    }
    let classes = logits.shape()[logits.ndim() - 1];
    let ids = ops::int_values("cross_entropy", "labels", labels)?;
    let mut onehot = vec![0.0; ids.len() * classes];
    for (r, &k) in ids.iter().enumerate() {
        if k < 0 || k as usize >= classes {
            return Err(err(
                ErrorKind::IndexError,
                format!("cross_entropy: label {k} is out of range for {classes} classes"),
            ));
        }
        onehot[r * classes + k as usize] = 1.0;
    }
    let x = if logits.dtype.is_float() {
        logits.clone()
    } else {
        ops::cast(logits, DType::F32)?
    };
    let logp = ops::log_softmax_last(&x)?;
    let last = x.ndim() - 1;
    let oh = ops::constant(onehot, x.shape().to_vec(), x.dtype)?;
    let picked = ops::sum(&ops::mul(&logp, &oh)?, &[last], false)?;
    let mut per = ops::unary(UFn::Neg, &picked)?;
    if smoothing != 0.0 {
        let uniform = ops::unary(UFn::Neg, &ops::mean(&logp, &[last], false)?)?;
        per = ops::add(
            &ops::scalar(BinOp::Mul, &per, 1.0 - smoothing)?,
            &ops::scalar(BinOp::Mul, &uniform, smoothing)?,
        )?;
    }
    reduce(&per, red)
}

fn reduction(a: &Args, i: usize, who: &str) -> VResult<Reduction> {
    match a.opt(i) {
        None => Ok(Reduction::Mean),
        Some(Value::Str(s)) => match s.as_str() {
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            "none" => Ok(Reduction::None),
            other => Err(err(
                ErrorKind::ValueError,
                format!("{who}: reduction must be \"mean\", \"sum\" or \"none\", not \"{other}\""),
            )),
        },
        Some(other) => Err(a.wrong(i, "\"mean\", \"sum\" or \"none\"", other)),
    }
}

fn call(c: &mut dyn Caller, loss: Loss, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let name = loss.name();
    let (a, smoothing, red_i) = if loss == Loss::CrossEntropy {
        let a = Args::new(name, args, kw, 2, &["logits", "labels", "label_smoothing", "reduction"])?;
        let s = a.float_opt(2)?.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&s) {
            return Err(err(
                ErrorKind::ValueError,
                format!("cross_entropy: label_smoothing must be in [0, 1], not {s}"),
            ));
        }
        (a, s, 3)
    } else {
        (Args::new(name, args, kw, 2, &["pred", "target", "reduction"])?, 0.0, 2)
    };
    let red = reduction(&a, red_i, name)?;
    let p = tensor_arg(c, name, a.req(0)?)?;
    let t = tensor_arg(c, name, a.req(1)?)?;
    Ok(tensor_value(loss.compute(&p, &t, red, smoothing)?))
}

pub fn f_mse(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    call(c, Loss::Mse, args, kw)
}
pub fn f_cross_entropy(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    call(c, Loss::CrossEntropy, args, kw)
}
pub fn f_bce(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    call(c, Loss::Bce, args, kw)
}
pub fn f_bce_logits(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    call(c, Loss::BceLogits, args, kw)
}

/// What `fit`'s `loss=` names: a built-in loss, or any function
/// `(pred, target) -> scalar`.
pub enum LossArg {
    Builtin(Loss),
    Func(Value),
}

impl LossArg {
    pub fn from_value(who: &str, v: Option<&Value>) -> VResult<LossArg> {
        match v {
            None | Some(Value::None) => Err(err(
                ErrorKind::TypeError,
                format!("{who}() missing required argument 'loss' (a name such as \"mse\" or \"cross_entropy\", or a function)"),
            )),
            Some(Value::Str(s)) => Loss::from_name(s.as_str()).map(LossArg::Builtin).ok_or_else(|| {
                err(
                    ErrorKind::ValueError,
                    format!(
                        "{who}: unknown loss \"{}\" (expected \"mse\", \"cross_entropy\", \"bce\" or \"bce_logits\", or a function)",
                        s.as_str()
                    ),
                )
            }),
            Some(Value::Native(f)) if Loss::from_name(&f.name).is_some() => {
                Ok(LossArg::Builtin(Loss::from_name(&f.name).unwrap_or(Loss::Mse)))
            }
            Some(f) => Ok(LossArg::Func(f.clone())),
        }
    }

    pub fn name(&self) -> String {
        match self {
            LossArg::Builtin(l) => l.name().to_string(),
            LossArg::Func(f) => crate::layer::fn_name(f).unwrap_or_else(|| "loss".to_string()),
        }
    }

    /// The mean loss of a batch, as a traced scalar tensor.
    pub fn compute(&self, c: &mut dyn Caller, pred: &Tensor, target: &Tensor) -> VResult<Tensor> {
        match self {
            LossArg::Builtin(l) => l.compute(pred, target, Reduction::Mean, 0.0),
            LossArg::Func(f) => {
                let v = c.call(f, &[tensor_value(pred.clone()), tensor_value(target.clone())], &[])?;
                let t = match &v {
                    Value::Float(x) => Tensor::from_vec(vec![*x], vec![]),
                    other => tensor_arg(c, "loss", other)?,
                };
                if t.size() != 1 {
                    return Err(err(
                        ErrorKind::ShapeError,
                        format!(
                            "the loss function must return a scalar; it returned a tensor of shape {}",
                            shape_str(t.shape())
                        ),
                    ));
                }
                Ok(t)
            }
        }
    }
}
