//! `fit`, `predict` and `evaluate` (LAYERS.md §5) on the cpu backend:
//! batches cut from `(X, y)` or taken from a Dataset, forward in training
//! mode, the loss, every parameter's gradient from the core's autodiff, one
//! optimizer step; a `History` of the epochs.
//!
//! Determinism: batch order and Dropout masks come from `fit`'s own
//! generator (`seed=`), and every kernel used gives the same bits whatever
//! the thread count, so a seed gives the same weights with 1 or 2 threads.

use crate::backend::{self, Backend};
use crate::layer::{forward_value, tensor_arg};
use crate::loss::LossArg;
use crate::model::{collect, expect_model, Swap};
use crate::ops;
use crate::optim::{default_adam, optimizer_of};
use crate::progress::Progress;
use crate::train::{Autocast, FitRng, Mode, Rng};
use apsi_core::api::tensor::{backward, concat, leaf, shape_str, tensor_value, uniform, DType, Tensor};
use apsi_core::api::{
    err, hash_key, iterate, record_type, Args, Caller, DictMap, ErrorKind, Kwargs, StructType, VResult, Value,
};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The training data: tensors cut into batches, or batches as they come.
pub(crate) enum Data {
    Arrays(Tensor, Tensor),
    Batches(Value),
}

fn data_arg(c: &mut dyn Caller, who: &str, what: &str, v: &Value) -> VResult<Data> {
    if let Value::Tuple(t) = v {
        if t.0.len() == 2 {
            let x = tensor_arg(c, who, &t.0[0])?;
            let y = tensor_arg(c, who, &t.0[1])?;
            if x.ndim() == 0 || y.ndim() == 0 || x.shape()[0] != y.shape()[0] {
                return Err(err(
                    ErrorKind::ShapeError,
                    format!(
                        "{who}: {what} X {} and y {} need equal first axes (one row of y per row of X)",
                        shape_str(x.shape()),
                        shape_str(y.shape())
                    ),
                ));
            }
            return Ok(Data::Arrays(x, y));
        }
    }
    match v {
        Value::Object(_) | Value::List(_) => Ok(Data::Batches(v.clone())),
        other => Err(err(
            ErrorKind::TypeError,
            format!(
                "{who}: {what} must be a tuple (X, y) of tensors or a Dataset of (xb, yb) batches, not {}",
                other.type_name()
            ),
        )),
    }
}

/// One `(xb, yb)` pair of a Dataset.
fn pair_of(c: &mut dyn Caller, who: &str, v: &Value) -> VResult<(Tensor, Tensor)> {
    match v {
        Value::Tuple(t) if t.0.len() == 2 => Ok((tensor_arg(c, who, &t.0[0])?, tensor_arg(c, who, &t.0[1])?)),
        Value::List(l) if l.items.read().len() == 2 => {
            let items = l.items.read().clone();
            Ok((tensor_arg(c, who, &items[0])?, tensor_arg(c, who, &items[1])?))
        }
        other => Err(err(
            ErrorKind::TypeError,
            format!(
                "{who}: each batch of a Dataset must be a pair (xb, yb), found {}",
                other.type_name()
            ),
        )),
    }
}

/// The batches of one pass: index lists into arrays, or a Dataset's pairs.
fn batches(
    c: &mut dyn Caller,
    who: &str,
    d: &Data,
    batch: usize,
    order: Option<&[usize]>,
) -> VResult<Vec<(Tensor, Tensor)>> {
    match d {
        Data::Arrays(x, y) => {
            let n = x.shape()[0];
            let idx: Vec<usize> = match order {
                Some(o) => o.to_vec(),
                None => (0..n).collect(),
            };
            let mut out = Vec::with_capacity(n.div_ceil(batch.max(1)));
            for chunk in idx.chunks(batch.max(1)) {
                let contiguous = chunk.windows(2).all(|w| w[1] == w[0] + 1);
                if contiguous && chunk.len() == n {
                    out.push((ops::detach(x), ops::detach(y)));
                } else {
                    out.push((
                        ops::take_rows(&ops::detach(x), chunk)?,
                        ops::take_rows(&ops::detach(y), chunk)?,
                    ));
                }
            }
            Ok(out)
        }
        Data::Batches(v) => iterate(c, v)?.iter().map(|b| pair_of(c, who, b)).collect(),
    }
}

// ---- metrics

/// Correct answers (or summed errors) and how many were counted.
#[derive(Default, Clone, Copy)]
struct Tally {
    sum: f64,
    count: f64,
}

impl Tally {
    /// The metric's value: the mean over what was counted.
    fn mean(&self) -> f64 {
        self.sum / self.count.max(1.0)
    }
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Metric {
    Accuracy,
    Mae,
    Mse,
}

fn metric_of(who: &str, v: &Value) -> VResult<Metric> {
    match v {
        Value::Str(s) => match s.as_str() {
            "accuracy" => Ok(Metric::Accuracy),
            "mae" => Ok(Metric::Mae),
            "mse" => Ok(Metric::Mse),
            other => Err(err(
                ErrorKind::ValueError,
                format!("{who}: unknown metric \"{other}\" (expected \"accuracy\", \"mae\" or \"mse\")"),
            )),
        },
        other => Err(err(
            ErrorKind::TypeError,
            format!(
                "{who}: metrics are names such as \"accuracy\", not {}",
                other.type_name()
            ),
        )),
    }
}

pub(crate) fn metric_name(m: Metric) -> &'static str {
    match m {
        Metric::Accuracy => "accuracy",
        Metric::Mae => "mae",
        Metric::Mse => "mse",
    }
}

fn metrics_arg(who: &str, v: Option<&Value>, default: &[Metric]) -> VResult<Vec<Metric>> {
    match v {
        None | Some(Value::None) => Ok(default.to_vec()),
        Some(Value::List(l)) => l.items.read().iter().map(|m| metric_of(who, m)).collect(),
        Some(Value::Tuple(t)) => t.0.iter().map(|m| metric_of(who, m)).collect(),
        Some(s @ Value::Str(_)) => Ok(vec![metric_of(who, s)?]),
        Some(other) => Err(err(
            ErrorKind::TypeError,
            format!("{who}: metrics must be a list of names, not {}", other.type_name()),
        )),
    }
}

fn tally(m: Metric, pred: &Tensor, target: &Tensor) -> VResult<Tally> {
    let p = ops::values(pred);
    let shape = pred.shape();
    let last = shape.last().copied().unwrap_or(1);
    match m {
        Metric::Accuracy => {
            let classes_form = last > 1 && target.shape() == &shape[..shape.len() - 1];
            if classes_form {
                let labels = ops::int_values("accuracy", "labels", target)?;
                let mut right = 0usize;
                for (r, &lab) in labels.iter().enumerate() {
                    let row = &p[r * last..(r + 1) * last];
                    let mut best = 0;
                    for (k, &v) in row.iter().enumerate() {
                        if v > row[best] {
                            best = k;
                        }
                    }
                    right += (best as i64 == lab) as usize;
                }
                Ok(Tally {
                    sum: right as f64,
                    count: labels.len() as f64,
                })
            } else {
                let t = ops::values(target);
                if t.len() != p.len() {
                    return Err(err(
                        ErrorKind::ShapeError,
                        format!(
                            "accuracy: prediction {} and target {} do not match (labels of shape {} for classes, or a target of the prediction's shape)",
                            shape_str(shape),
                            shape_str(target.shape()),
                            shape_str(&shape[..shape.len().saturating_sub(1)])
                        ),
                    ));
                }
                let right = p.iter().zip(&t).filter(|(a, b)| (**a >= 0.5) == (**b >= 0.5)).count();
                Ok(Tally {
                    sum: right as f64,
                    count: p.len() as f64,
                })
            }
        }
        Metric::Mae | Metric::Mse => {
            let t = ops::values(target);
            if t.len() != p.len() {
                return Err(err(
                    ErrorKind::ShapeError,
                    format!(
                        "{}: prediction {} and target {} differ",
                        metric_name(m),
                        shape_str(shape),
                        shape_str(target.shape())
                    ),
                ));
            }
            let sum = p
                .iter()
                .zip(&t)
                .map(|(a, b)| {
                    if m == Metric::Mae {
                        (a - b).abs()
                    } else {
                        (a - b) * (a - b)
                    }
                })
                .sum();
            Ok(Tally {
                sum,
                count: p.len() as f64,
            })
        }
    }
}

// ---- History

fn history_type() -> Arc<StructType> {
    static T: OnceLock<Arc<StructType>> = OnceLock::new();
    T.get_or_init(|| {
        record_type(
            "History",
            &[
                ("loss", "list"),
                ("val_loss", "list"),
                ("metrics", "dict"),
                ("seconds", "list"),
                ("rows_per_s", "list"),
                ("backend", "str"),
                ("device", "str"),
                ("precision", "str"),
            ],
        )
    })
    .clone()
}

/// What `fit` measured, epoch by epoch, for its `History`.
#[derive(Default)]
pub(crate) struct Figures {
    pub loss: Vec<f64>,
    pub val_loss: Vec<f64>,
    /// `(name, per epoch)`: the training metrics, then `val_`-prefixed ones.
    pub metrics: Vec<(String, Vec<f64>)>,
    pub seconds: Vec<f64>,
    pub rows_per_s: Vec<f64>,
}

impl Figures {
    /// Empty lists, one per metric (and per validation metric).
    pub fn new(metrics: &[Metric], validation: bool) -> Figures {
        let mut named: Vec<(String, Vec<f64>)> =
            metrics.iter().map(|m| (metric_name(*m).to_string(), vec![])).collect();
        if validation {
            named.extend(metrics.iter().map(|m| (format!("val_{}", metric_name(*m)), vec![])));
        }
        Figures {
            metrics: named,
            ..Figures::default()
        }
    }

    /// One epoch's training figures: its loss, time, rows and metric values.
    pub fn epoch(&mut self, loss: f64, secs: f64, rows: usize, metrics: &[f64]) {
        self.loss.push(loss);
        self.seconds.push(secs);
        self.rows_per_s.push(if secs > 0.0 { rows as f64 / secs } else { 0.0 });
        for (h, &v) in self.metrics.iter_mut().zip(metrics) {
            h.1.push(v);
        }
    }

    /// One epoch's validation figures (after `epoch`); the text the
    /// progress bar shows for them.
    pub fn validation(&mut self, loss: f64, metrics: &[f64]) -> String {
        self.val_loss.push(loss);
        let mut text = format!("  val_loss {loss:.4}");
        let first = self.metrics.len() - metrics.len();
        for (h, &v) in self.metrics[first..].iter_mut().zip(metrics) {
            h.1.push(v);
            text.push_str(&format!("  {} {v:.4}", h.0));
        }
        text
    }

    /// The `History` struct of LAYERS.md §5.
    pub fn history(self, c: &mut dyn Caller, backend: &str, device: &str, precision: &str) -> VResult<Value> {
        let metrics = dict_of(self.metrics.into_iter().map(|(k, v)| (k, floats(&v))).collect())?;
        let fields = vec![
            floats(&self.loss),
            floats(&self.val_loss),
            metrics,
            floats(&self.seconds),
            floats(&self.rows_per_s),
            Value::str(backend),
            Value::str(device),
            Value::str(precision),
        ];
        c.call(&Value::StructType(history_type()), &fields, &[])
    }
}

fn floats(v: &[f64]) -> Value {
    Value::list(v.iter().map(|&x| Value::Float(x)).collect())
}

pub(crate) fn dict_of<K: AsRef<str>>(pairs: Vec<(K, Value)>) -> VResult<Value> {
    let mut d = DictMap::with_capacity(pairs.len());
    for (k, v) in pairs {
        d.insert(hash_key(&Value::str(k.as_ref()))?, v);
    }
    Ok(Value::dict(d))
}

/// What `evaluate` returns on either backend: `{metric: value}` in the
/// order asked, then `"loss"` when one was computed.
pub(crate) fn scores_dict(metrics: &[Metric], values: &[f64], loss: Option<f64>) -> VResult<Value> {
    let mut pairs: Vec<(&str, Value)> = metrics
        .iter()
        .zip(values)
        .map(|(m, &v)| (metric_name(*m), Value::Float(v)))
        .collect();
    if let Some(l) = loss {
        pairs.push(("loss", Value::Float(l)));
    }
    dict_of(pairs)
}

// ---- common arguments

fn device_arg(who: &str, v: Option<&Value>) -> VResult<String> {
    match v {
        None | Some(Value::None) => Ok("auto".into()),
        Some(Value::Str(s)) => Ok(s.as_str().to_string()),
        Some(other) => Err(err(
            ErrorKind::TypeError,
            format!(
                "{who}: device must be a name such as \"cpu\" or \"auto\", not {}",
                other.type_name()
            ),
        )),
    }
}

/// The precision `precision=` names (LAYERS.md §5), checked; `none` is
/// the model's own (`"fp64"` for f64 parameters, else `"fp32"`).
pub(crate) fn precision_name(who: &str, v: Option<&Value>, model_dtype: DType) -> VResult<String> {
    match v {
        None | Some(Value::None) => Ok(own_precision(model_dtype).to_string()),
        Some(Value::Str(s)) => match s.as_str() {
            n @ ("fp64" | "fp32" | "tf32" | "bf16" | "fp16") => Ok(n.to_string()),
            other => Err(err(
                ErrorKind::ValueError,
                format!("{who}: unknown precision \"{other}\" (expected \"fp64\", \"fp32\", \"tf32\", \"bf16\" or \"fp16\")"),
            )),
        },
        Some(other) => Err(err(
            ErrorKind::TypeError,
            format!(
                "{who}: precision must be a name such as \"fp32\", not {}",
                other.type_name()
            ),
        )),
    }
}

fn own_precision(model_dtype: DType) -> &'static str {
    if model_dtype == DType::F64 {
        "fp64"
    } else {
        "fp32"
    }
}

/// How the cpu backend computes (LAYERS.md §5): the name for
/// `History.precision`, the format matmul and convolution operands are
/// rounded to (mixed precision), and whether losses are scaled (fp16).
struct Precision {
    name: String,
    autocast: Option<DType>,
    scaled: bool,
}

fn precision_arg(who: &str, v: Option<&Value>, model_dtype: DType) -> VResult<Precision> {
    let name = precision_name(who, v, model_dtype)?;
    let (autocast, scaled) = match name.as_str() {
        n if n == own_precision(model_dtype) => (None, false),
        "tf32" if model_dtype == DType::F32 => {
            warn_once(
                &TF32_WARNED,
                "precision=\"tf32\" uses TF32 tensor cores, which the cpu backend does not have: computing in fp32",
            );
            (None, false)
        }
        "bf16" => (Some(DType::BF16), false),
        "fp16" => (Some(DType::F16), true),
        _ => {
            return Err(err(
                ErrorKind::NotImplementedError,
                format!(
                    "{who}: precision=\"{name}\" for a model of {} parameters is not supported on the cpu backend (precision=none computes in the model's dtype; backend=\"torch\" computes in any format)",
                    model_dtype.name(),
                ),
            ))
        }
    };
    Ok(Precision { name, autocast, scaled })
}

static TF32_WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// One line on stderr, the first time only.
fn warn_once(flag: &std::sync::atomic::AtomicBool, text: &str) {
    if !flag.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!("warning: {text}");
    }
}

/// fp16's dynamic loss scaling, with PyTorch's `GradScaler` defaults: the
/// loss is multiplied by `scale` before the backward pass; a step whose
/// gradients hold an inf or NaN is skipped and halves the scale, 2,000 good
/// steps in a row double it.
struct LossScale {
    scale: f64,
    good: u32,
}

impl LossScale {
    const GROWTH_INTERVAL: u32 = 2000;

    fn new() -> LossScale {
        LossScale {
            scale: 65536.0,
            good: 0,
        }
    }

    /// The unscaled gradients, or `None` (step skipped) when one is not finite.
    fn unscale(&mut self, grads: Vec<Option<Tensor>>) -> VResult<Option<Vec<Option<Tensor>>>> {
        let finite = grads
            .iter()
            .flatten()
            .all(|g| ops::values(g).iter().all(|v| v.is_finite()));
        if !finite {
            self.scale /= 2.0;
            self.good = 0;
            return Ok(None);
        }
        let out = grads
            .iter()
            .map(|g| {
                g.as_ref()
                    .map(|g| ops::scalar(apsi_core::api::BinOp::Div, g, self.scale))
                    .transpose()
            })
            .collect::<VResult<Vec<_>>>()?;
        self.good += 1;
        if self.good == Self::GROWTH_INTERVAL {
            self.scale *= 2.0;
            self.good = 0;
        }
        Ok(Some(out))
    }
}

pub(crate) fn model_dtype(m: &Value) -> VResult<DType> {
    let ps = collect(m)?;
    match ps.first() {
        Some(p) => Ok(p.get()?.dtype),
        None => Ok(DType::F32),
    }
}

fn check_cpu_device(who: &str, device: &str) -> VResult<()> {
    if device == "auto" || device == "cpu" {
        Ok(())
    } else {
        Err(err(
            ErrorKind::ValueError,
            format!("{who}: the cpu backend runs on device \"cpu\" (or \"auto\"), not \"{device}\"; backend=\"torch\" runs on GPUs"),
        ))
    }
}

// ---- fit

const FIT_PARAMS: &[&str] = &[
    "model",
    "data",
    "loss",
    "optimizer",
    "epochs",
    "batch",
    "shuffle",
    "validation",
    "metrics",
    "seed",
    "backend",
    "device",
    "precision",
    "compile",
    "progress",
];

pub fn f_fit(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("fit", args, kw, 2, FIT_PARAMS)?;
    let model = expect_model("fit", a.req(0)?)?.clone();
    let backend = backend::resolve("fit", a.opt(10))?;
    let loss = LossArg::from_value("fit", a.opt(2))?;
    let data = data_arg(c, "fit", "data", a.req(1)?)?;
    if matches!(data, Data::Batches(_)) && (a.opt(5).is_some() || a.opt(6).is_some()) {
        return Err(err(
            ErrorKind::TypeError,
            "fit: batch= and shuffle= apply to (X, y) tensors; a Dataset's batches are used as they come (set batch size and shuffling on the Dataset)",
        ));
    }
    let opt_value = match a.opt(3) {
        Some(v) => v.clone(),
        None => default_adam(),
    };
    let opt = optimizer_of(&opt_value).ok_or_else(|| {
        err(
            ErrorKind::TypeError,
            format!(
                "fit: optimizer must be SGD(…), Adam(…) or AdamW(…), not {}",
                opt_value.type_name()
            ),
        )
    })?;
    let epochs = a.int_or(4, 1)?;
    if epochs < 0 {
        return Err(err(
            ErrorKind::ValueError,
            format!("fit: epochs must be >= 0, not {epochs}"),
        ));
    }
    let batch = a.int_or(5, 32)?;
    if batch < 1 {
        return Err(err(
            ErrorKind::ValueError,
            format!("fit: batch must be >= 1, not {batch}"),
        ));
    }
    let shuffle = a.bool_or(6, true)?;
    let validation = match a.opt(7) {
        Some(v) => Some(data_arg(c, "fit", "validation", v)?),
        None => None,
    };
    let metrics = metrics_arg("fit", a.opt(8), &[])?;
    let seed = match a.opt(9) {
        Some(Value::Int(s)) => *s as u64,
        Some(other) => return Err(a.wrong(9, "an int", other)),
        None => (uniform(1)[0] * 9_007_199_254_740_992.0) as u64,
    };
    let device = device_arg("fit", a.opt(11))?;
    let progress = Progress::from_arg("fit", a.opt(14))?;
    if backend == Backend::Torch {
        let job = crate::torch::FitJob {
            model: &model,
            data: &data,
            validation: validation.as_ref(),
            loss: &loss,
            optimizer: opt,
            epochs: epochs as usize,
            batch: batch as usize,
            shuffle,
            metrics: &metrics,
            seed,
            device,
            precision: a.opt(12),
            compile: a.bool_or(13, false)?,
            progress,
        };
        return crate::torch::fit(c, job);
    }
    check_cpu_device("fit", &device)?;
    let mdt = model_dtype(&model)?;
    let prec = precision_arg("fit", a.opt(12), mdt)?;
    let mut scale = prec.scaled.then(LossScale::new);

    let params = collect(&model)?;
    if params.is_empty() {
        return Err(err(ErrorKind::ValueError, "fit: the model has no parameters to train"));
    }
    let mut rng = Rng::new(seed);
    let rows_total = match &data {
        Data::Arrays(x, _) => Some(x.shape()[0]),
        Data::Batches(_) => None,
    };
    let mut figures = Figures::new(&metrics, validation.is_some());
    let mut bar = progress.start(epochs as usize, rows_total.map(|n| n.div_ceil(batch as usize)));
    for epoch in 0..epochs as usize {
        let t0 = Instant::now();
        let order = match &data {
            Data::Arrays(x, _) => {
                let mut o: Vec<usize> = (0..x.shape()[0]).collect();
                if shuffle {
                    rng.shuffle(&mut o);
                }
                Some(o)
            }
            Data::Batches(_) => None,
        };
        let bs = batches(c, "fit", &data, batch as usize, order.as_deref())?;
        bar.epoch(epoch, bs.len());
        let (mut loss_sum, mut rows) = (0.0, 0usize);
        let mut tallies = vec![Tally::default(); metrics.len()];
        for (k, (xb, yb)) in bs.iter().enumerate() {
            let current: Vec<Tensor> = params.iter().map(|p| p.get()).collect::<VResult<_>>()?;
            let leaves: Vec<Tensor> = current.iter().map(leaf).collect();
            let (loss_t, pred) = {
                let _swap = Swap::new(&params, &leaves)?;
                let _mode = Mode::training();
                let _fit_rng = FitRng::install(&mut rng);
                let _cast = Autocast::new(prec.autocast);
                let pred = forward_value(c, &model, xb.clone(), None)?;
                let l = loss.compute(c, &pred, yb)?;
                (l, pred)
            };
            let n = xb.shape().first().copied().unwrap_or(1);
            let lv = loss_t.first_f64();
            match &mut scale {
                None => opt.step(&current, &backward(&loss_t, &leaves, false)?)?,
                Some(s) => {
                    let scaled = ops::scalar(apsi_core::api::BinOp::Mul, &loss_t, s.scale)?;
                    if let Some(grads) = s.unscale(backward(&scaled, &leaves, false)?)? {
                        opt.step(&current, &grads)?;
                    }
                }
            }
            loss_sum += lv * n as f64;
            rows += n;
            for (m, t) in metrics.iter().zip(tallies.iter_mut()) {
                let s = tally(*m, &ops::detach(&pred), yb)?;
                t.sum += s.sum;
                t.count += s.count;
            }
            bar.step(k + 1, loss_sum / rows.max(1) as f64, rows, t0.elapsed().as_secs_f64());
        }
        opt.end_epoch();
        let secs = t0.elapsed().as_secs_f64();
        let epoch_loss = loss_sum / rows.max(1) as f64;
        let values: Vec<f64> = tallies.iter().map(Tally::mean).collect();
        figures.epoch(epoch_loss, secs, rows, &values);
        let mut val_text = String::new();
        if let Some(v) = &validation {
            let (vl, vt) = score(c, &model, v, Some(&loss), &metrics, 256, prec.autocast)?;
            let values: Vec<f64> = vt.iter().map(Tally::mean).collect();
            val_text = figures.validation(vl.unwrap_or(f64::NAN), &values);
        }
        bar.end_epoch(epoch, epoch_loss, &val_text, secs);
    }
    bar.finish();
    figures.history(c, "cpu", "cpu", &prec.name)
}

/// Runs `model` over `data` in inference mode: the loss (when asked) and
/// metric tallies.
fn score(
    c: &mut dyn Caller,
    model: &Value,
    data: &Data,
    loss: Option<&LossArg>,
    metrics: &[Metric],
    batch: usize,
    autocast: Option<DType>,
) -> VResult<(Option<f64>, Vec<Tally>)> {
    let _mode = Mode::inference();
    let _cast = Autocast::new(autocast);
    let bs = batches(c, "evaluate", data, batch, None)?;
    let (mut loss_sum, mut rows) = (0.0, 0usize);
    let mut tallies = vec![Tally::default(); metrics.len()];
    for (xb, yb) in &bs {
        let pred = ops::detach(&forward_value(c, model, xb.clone(), None)?);
        let n = xb.shape().first().copied().unwrap_or(1);
        if let Some(l) = loss {
            loss_sum += l.compute(c, &pred, yb)?.first_f64() * n as f64;
        }
        rows += n;
        for (m, t) in metrics.iter().zip(tallies.iter_mut()) {
            let s = tally(*m, &pred, yb)?;
            t.sum += s.sum;
            t.count += s.count;
        }
    }
    Ok((loss.map(|_| loss_sum / rows.max(1) as f64), tallies))
}

pub fn f_evaluate(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new(
        "evaluate",
        args,
        kw,
        2,
        &[
            "model",
            "data",
            "metrics",
            "loss",
            "batch",
            "backend",
            "device",
            "precision",
        ],
    )?;
    let model = expect_model("evaluate", a.req(0)?)?.clone();
    let backend = backend::resolve("evaluate", a.opt(5))?;
    let data = data_arg(c, "evaluate", "data", a.req(1)?)?;
    let metrics = metrics_arg("evaluate", a.opt(2), &[Metric::Accuracy])?;
    let loss = match a.opt(3) {
        Some(v) => Some(LossArg::from_value("evaluate", Some(v))?),
        None => None,
    };
    let batch = a.int_or(4, 256)?.max(1) as usize;
    if backend == Backend::Torch {
        let device = device_arg("evaluate", a.opt(6))?;
        return crate::torch::evaluate(&model, &data, loss.as_ref(), &metrics, batch, device, a.opt(7));
    }
    check_cpu_device("evaluate", &device_arg("evaluate", a.opt(6))?)?;
    let prec = precision_arg("evaluate", a.opt(7), model_dtype(&model)?)?;
    let (l, tallies) = score(c, &model, &data, loss.as_ref(), &metrics, batch, prec.autocast)?;
    let values: Vec<f64> = tallies.iter().map(Tally::mean).collect();
    scores_dict(&metrics, &values, l)
}

pub fn f_predict(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new(
        "predict",
        args,
        kw,
        2,
        &["model", "x", "batch", "backend", "device", "precision"],
    )?;
    let model = expect_model("predict", a.req(0)?)?.clone();
    let backend = backend::resolve("predict", a.opt(3))?;
    let batch = a.int_or(2, 256)?;
    if batch < 1 {
        return Err(err(
            ErrorKind::ValueError,
            format!("predict: batch must be >= 1, not {batch}"),
        ));
    }
    if backend == Backend::Torch {
        let device = device_arg("predict", a.opt(4))?;
        return crate::torch::predict(c, &model, a.req(1)?, batch as usize, device, a.opt(5));
    }
    check_cpu_device("predict", &device_arg("predict", a.opt(4))?)?;
    let prec = precision_arg("predict", a.opt(5), model_dtype(&model)?)?;
    let xv = a.req(1)?;
    let _mode = Mode::inference();
    let inputs: Vec<Tensor> = match apsi_core::api::tensor::as_tensor(xv) {
        Some(x) => {
            if x.ndim() == 0 {
                return Err(err(
                    ErrorKind::ShapeError,
                    "predict: x must have a first (batch) axis, got a 0-d tensor",
                ));
            }
            let n = x.shape()[0];
            let x = ops::detach(&x);
            if n <= batch as usize {
                vec![x]
            } else {
                let idx: Vec<usize> = (0..n).collect();
                idx.chunks(batch as usize)
                    .map(|ch| ops::take_rows(&x, ch))
                    .collect::<VResult<_>>()?
            }
        }
        None => iterate(c, xv)?
            .iter()
            .map(|b| match b {
                Value::Tuple(t) if !t.0.is_empty() => tensor_arg(c, "predict", &t.0[0]),
                other => tensor_arg(c, "predict", other),
            })
            .collect::<VResult<_>>()?,
    };
    let mut outs = Vec::with_capacity(inputs.len());
    let _cast = Autocast::new(prec.autocast);
    for x in inputs {
        outs.push(ops::detach(&forward_value(c, &model, x, None)?));
    }
    let y = match outs.len() {
        0 => return Err(err(ErrorKind::ValueError, "predict: no input rows")),
        1 => outs
            .pop()
            .unwrap_or_else(|| Tensor::from_vec(Vec::<f32>::new(), vec![0])),
        _ => concat(&outs, 0)?,
    };
    Ok(tensor_value(y))
}
