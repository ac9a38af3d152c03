//! `fit`/`predict`/`evaluate` with `backend="torch"` (LAYERS.md §7): the
//! model goes to the backend's worker as the source `torch_module` writes
//! plus its weights, the job runs there, and the trained weights come back
//! into the Apsi model (rounded to its dtype).
//!
//! Invariants:
//! - batch order is decided here, by `fit`'s own generator exactly as on the
//!   cpu backend: the worker gets each epoch's permutation;
//! - the data cross once per `fit` (`fit_start`), and each epoch is one
//!   request whose reply carries its figures (one host synchronisation);
//! - a failure after `fit_start` abandons the worker's session, and the
//!   model keeps its weights (nothing is written back before `fit_finish`).

use crate::backend::{self, TorchDriver};
use crate::export;
use crate::fit::{dict_of, metric_name, model_dtype, precision_name, scores_dict, Data, Figures, Metric};
use crate::layer::tensor_arg;
use crate::loss::LossArg;
use crate::model::collect;
use crate::ops;
use crate::optim::{Algo, Optimizer, Schedule};
use crate::progress::Progress;
use crate::train::Rng;
use apsi_core::api::tensor::{tensor_value, Tensor};
use apsi_core::api::{err, Caller, ErrorKind, VResult, Value};

/// Everything `fit` parsed, for the torch backend.
pub(crate) struct FitJob<'a> {
    pub model: &'a Value,
    pub data: &'a Data,
    pub validation: Option<&'a Data>,
    pub loss: &'a LossArg,
    pub optimizer: &'a Optimizer,
    pub epochs: usize,
    pub batch: usize,
    pub shuffle: bool,
    pub metrics: &'a [Metric],
    pub seed: u64,
    pub device: String,
    pub precision: Option<&'a Value>,
    pub compile: bool,
    pub progress: Progress,
}

/// The optimizer as the worker rebuilds it (`torch.optim`), with the
/// schedule and the counts it starts from.
fn optimizer_spec(o: &Optimizer) -> VResult<Value> {
    let (steps, epochs) = o.counts();
    let mut pairs: Vec<(&str, Value)> = vec![
        ("lr", Value::Float(o.lr)),
        ("weight_decay", Value::Float(o.weight_decay)),
        ("steps", Value::Int(steps as i64)),
        ("epochs", Value::Int(epochs as i64)),
    ];
    match o.algo {
        Algo::Sgd { momentum, nesterov } => {
            pairs.push(("kind", Value::str("SGD")));
            pairs.push(("momentum", Value::Float(momentum)));
            pairs.push(("nesterov", Value::Bool(nesterov)));
        }
        Algo::Adam { b1, b2, eps } | Algo::AdamW { b1, b2, eps } => {
            let kind = if matches!(o.algo, Algo::Adam { .. }) {
                "Adam"
            } else {
                "AdamW"
            };
            pairs.push(("kind", Value::str(kind)));
            pairs.push(("betas", Value::tuple(vec![Value::Float(b1), Value::Float(b2)])));
            pairs.push(("eps", Value::Float(eps)));
        }
    }
    let schedule = match o.schedule {
        None => Value::None,
        Some(Schedule::Cosine {
            total,
            min_lr,
            warmup,
            per_step,
        }) => dict_of(vec![
            ("kind", Value::str("cosine")),
            ("total", Value::Int(total as i64)),
            ("min_lr", Value::Float(min_lr)),
            ("warmup", Value::Int(warmup as i64)),
            ("per_step", Value::Bool(per_step)),
        ])?,
        Some(Schedule::Step { every, gamma, per_step }) => dict_of(vec![
            ("kind", Value::str("step")),
            ("every", Value::Int(every as i64)),
            ("gamma", Value::Float(gamma)),
            ("per_step", Value::Bool(per_step)),
        ])?,
    };
    pairs.push(("schedule", schedule));
    dict_of(pairs)
}

/// The model as the worker builds it, the first three arguments of every
/// job: its source, its parameters' names and their values.
pub(crate) fn model_args(who: &str, m: &Value) -> VResult<Vec<Value>> {
    let ex = export::export(m, None, "model.safetensors").map_err(|e| {
        if e.kind == ErrorKind::NotImplementedError {
            err(
                ErrorKind::NotImplementedError,
                format!("{who}(backend=\"torch\"): {}", e.message),
            )
        } else {
            e
        }
    })?;
    let params = collect(m)?;
    let mut names = Vec::with_capacity(params.len());
    let mut weights = Vec::with_capacity(params.len());
    for p in &params {
        names.push(Value::str(&p.name));
        weights.push(tensor_value(ops::detach(&p.get()?)));
    }
    Ok(vec![Value::str(ex.python), Value::list(names), Value::list(weights)])
}

fn builtin_loss(who: &str, l: &LossArg) -> VResult<Value> {
    match l {
        LossArg::Builtin(b) => Ok(Value::str(b.name())),
        LossArg::Func(_) => Err(err(
            ErrorKind::NotImplementedError,
            format!(
                "{who}(backend=\"torch\"): the loss {} is an Apsi function, which PyTorch cannot run; use a built-in loss (\"mse\", \"cross_entropy\", \"bce\", \"bce_logits\") or backend=\"cpu\"",
                l.name()
            ),
        )),
    }
}

fn arrays<'a>(who: &str, what: &str, d: &'a Data) -> VResult<(&'a Tensor, &'a Tensor)> {
    match d {
        Data::Arrays(x, y) => Ok((x, y)),
        Data::Batches(_) => Err(err(
            ErrorKind::NotImplementedError,
            format!("{who}(backend=\"torch\"): {what} must be a tuple (X, y) of tensors (the data move to the device once); a Dataset runs on backend=\"cpu\""),
        )),
    }
}

fn metric_names(ms: &[Metric]) -> Value {
    Value::list(ms.iter().map(|m| Value::str(metric_name(*m))).collect())
}

fn threads() -> i64 {
    apsi_core::api::par::threads() as i64
}

fn float_of(v: &Value) -> f64 {
    match v {
        Value::Float(x) => *x,
        Value::Int(i) => *i as f64,
        _ => f64::NAN,
    }
}

/// The items of a tuple or list the worker answered with (none otherwise).
pub(crate) fn items(v: &Value) -> Vec<Value> {
    match v {
        Value::Tuple(t) => t.0.to_vec(),
        Value::List(l) => l.items.read().clone(),
        _ => Vec::new(),
    }
}

fn bad_reply(func: &str) -> apsi_core::api::Exc {
    err(
        ErrorKind::PythonError,
        format!("the PyTorch backend's {func} answered in an unexpected form (is the installed torch package for this apsi?)"),
    )
}

/// The worker's `(name, value)` pairs (parameters' weights or gradients).
pub(crate) fn named(v: &Value) -> Vec<(String, Value)> {
    items(v)
        .into_iter()
        .filter_map(|p| match items(&p).as_slice() {
            [Value::Str(n), v] => Some((n.as_str().to_string(), v.clone())),
            _ => None,
        })
        .collect()
}

/// Writes the worker's `(name, array)` pairs into the model's parameters,
/// each converted to its parameter's dtype.
fn write_back(c: &mut dyn Caller, m: &Value, pairs: &Value) -> VResult<()> {
    let got = named(pairs);
    let params = collect(m)?;
    let mut values = Vec::with_capacity(params.len());
    for p in &params {
        let Some((_, v)) = got.iter().find(|(n, _)| *n == p.name) else {
            return Err(err(
                ErrorKind::PythonError,
                format!("the PyTorch backend returned no weights for parameter '{}'", p.name),
            ));
        };
        values.push(tensor_arg(c, "fit", v)?);
    }
    for (p, t) in params.iter().zip(&values) {
        ops::write_into(&p.get()?, t)?;
    }
    Ok(())
}

pub(crate) fn fit(c: &mut dyn Caller, job: FitJob<'_>) -> VResult<Value> {
    let who = "fit";
    let driver = backend::torch(who)?;
    let loss = builtin_loss(who, job.loss)?;
    let (x, y) = arrays(who, "data", job.data)?;
    let val = match job.validation {
        Some(v) => {
            let (vx, vy) = arrays(who, "validation", v)?;
            Value::tuple(vec![tensor_value(ops::detach(vx)), tensor_value(ops::detach(vy))])
        }
        None => Value::None,
    };
    let precision = precision_name(who, job.precision, model_dtype(job.model)?)?;
    if collect(job.model)?.is_empty() {
        return Err(err(ErrorKind::ValueError, "fit: the model has no parameters to train"));
    }
    let mut args = model_args(who, job.model)?;
    let spec = dict_of(vec![
        ("loss", loss),
        ("optimizer", optimizer_spec(job.optimizer)?),
        ("batch", Value::Int(job.batch as i64)),
        ("metrics", metric_names(job.metrics)),
        ("seed", Value::Int((job.seed & 0x7fff_ffff_ffff_ffff) as i64)),
        ("device", Value::str(&job.device)),
        ("precision", Value::str(&precision)),
        ("compile", Value::Bool(job.compile)),
        ("threads", Value::Int(threads())),
    ])?;
    args.extend([tensor_value(ops::detach(x)), tensor_value(ops::detach(y)), val, spec]);
    let started = driver.call("fit_start", args)?;
    let (sid, device) = match items(&started).as_slice() {
        [Value::Int(sid), Value::Str(d), _] => (*sid, d.as_str().to_string()),
        _ => return Err(bad_reply("fit_start")),
    };
    let figures = match train(&job, driver.as_ref(), sid, x.shape()[0]) {
        Ok(f) => f,
        Err(e) => {
            let _ = driver.call("fit_abandon", vec![Value::Int(sid)]);
            return Err(e);
        }
    };
    let done = driver.call("fit_finish", vec![Value::Int(sid)])?;
    match items(&done).as_slice() {
        [pairs, Value::Int(steps), Value::Int(epochs)] => {
            write_back(c, job.model, pairs)?;
            job.optimizer.trained_elsewhere(*steps as u64, *epochs as u64);
        }
        _ => return Err(bad_reply("fit_finish")),
    }
    figures.history(c, "torch", &device, &precision)
}

/// The epochs, one request each, with the progress bar and the history.
fn train(job: &FitJob<'_>, driver: &dyn TorchDriver, sid: i64, n: usize) -> VResult<Figures> {
    let mut rng = Rng::new(job.seed);
    let mut figures = Figures::new(job.metrics, job.validation.is_some());
    let steps = n.div_ceil(job.batch.max(1));
    let mut bar = job.progress.start(job.epochs, Some(steps));
    for epoch in 0..job.epochs {
        let mut order: Vec<usize> = (0..n).collect();
        if job.shuffle {
            rng.shuffle(&mut order);
        }
        bar.epoch(epoch, steps);
        let order_t = Tensor::from_vec(order.iter().map(|&i| i as i64).collect::<Vec<i64>>(), vec![n]);
        let r = driver.call("fit_epoch", vec![Value::Int(sid), tensor_value(order_t)])?;
        let [loss, ms, vl, vms, secs] = items(&r).try_into().map_err(|_| bad_reply("fit_epoch"))?;
        let (loss, secs) = (float_of(&loss), float_of(&secs));
        let floats = |v: &Value| items(v).iter().map(float_of).collect::<Vec<f64>>();
        figures.epoch(loss, secs, n, &floats(&ms));
        bar.step(steps, loss, n, secs);
        let val_text = if job.validation.is_some() {
            figures.validation(float_of(&vl), &floats(&vms))
        } else {
            String::new()
        };
        bar.end_epoch(epoch, loss, &val_text, secs);
    }
    bar.finish();
    Ok(figures)
}

fn session_spec(batch: usize, device: &str, precision: &str, loss: Value, metrics: &[Metric]) -> VResult<Value> {
    dict_of(vec![
        ("batch", Value::Int(batch as i64)),
        ("device", Value::str(device)),
        ("precision", Value::str(precision)),
        ("threads", Value::Int(threads())),
        ("loss", loss),
        ("metrics", metric_names(metrics)),
    ])
}

/// What `check` runs under: the device and precision.
pub(crate) fn check_spec(device: &str, precision: &str) -> VResult<Value> {
    session_spec(256, device, precision, Value::None, &[])
}

pub(crate) fn predict(
    c: &mut dyn Caller,
    model: &Value,
    xv: &Value,
    batch: usize,
    device: String,
    precision: Option<&Value>,
) -> VResult<Value> {
    let who = "predict";
    let driver = backend::torch(who)?;
    let x = match apsi_core::api::tensor::as_tensor(xv) {
        Some(x) if x.ndim() > 0 => x,
        Some(_) => {
            return Err(err(
                ErrorKind::ShapeError,
                "predict: x must have a first (batch) axis, got a 0-d tensor",
            ))
        }
        None => {
            return Err(err(
                ErrorKind::NotImplementedError,
                "predict(backend=\"torch\"): x must be a tensor (the data move to the device once); a Dataset runs on backend=\"cpu\"",
            ))
        }
    };
    let precision = precision_name(who, precision, model_dtype(model)?)?;
    let mut args = model_args(who, model)?;
    args.extend([
        tensor_value(ops::detach(&x)),
        session_spec(batch, &device, &precision, Value::None, &[])?,
    ]);
    let r = driver.call("predict", args)?;
    match items(&r).as_slice() {
        [out, _device] => Ok(tensor_value(tensor_arg(c, who, out)?)),
        _ => Err(bad_reply("predict")),
    }
}

pub(crate) fn evaluate(
    model: &Value,
    data: &Data,
    loss: Option<&LossArg>,
    metrics: &[Metric],
    batch: usize,
    device: String,
    precision: Option<&Value>,
) -> VResult<Value> {
    let who = "evaluate";
    let driver = backend::torch(who)?;
    let (x, y) = arrays(who, "data", data)?;
    let loss_v = match loss {
        Some(l) => builtin_loss(who, l)?,
        None => Value::None,
    };
    let precision = precision_name(who, precision, model_dtype(model)?)?;
    let mut args = model_args(who, model)?;
    args.extend([
        tensor_value(ops::detach(x)),
        tensor_value(ops::detach(y)),
        session_spec(batch, &device, &precision, loss_v, metrics)?,
    ]);
    let r = driver.call("evaluate", args)?;
    let (l, ms) = match items(&r).as_slice() {
        [l, ms, _device] => (float_of(l), items(ms)),
        _ => return Err(bad_reply("evaluate")),
    };
    let values: Vec<f64> = ms.iter().map(float_of).collect();
    scores_dict(metrics, &values, loss.map(|_| l))
}
