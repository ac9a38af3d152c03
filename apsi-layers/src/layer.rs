//! The layer value: one Rust type for every layer of LAYERS.md §1, its
//! parameters (live tensors), its forward computation, shape inference,
//! shape errors and printing.
//!
//! Invariants:
//! - a layer's parameter tensors are dense, row-major, and keep their
//!   storage for the layer's life: `set_params`, `load_weights` and the
//!   optimizers write into it, so every name for a parameter (`d.weight`)
//!   sees the new values;
//! - while `fit` (or `apply`) computes, a parameter slot may hold a traced
//!   copy of the tensor (same storage, with a node on the tape): see
//!   `model::Swap`.

use crate::act::Act;
use crate::ops;
use crate::train;
use apsi_core::api::tensor::{as_tensor, shape_str, tensor_value, DType, Tensor};
use apsi_core::api::{
    bound_method, err, method_of, native, repr_of, ApsiObject, Args, Caller, ErrorKind, Exc, Kwargs, VResult, Value,
};
use parking_lot::RwLock;
use std::sync::OnceLock;

/// What a layer is, with its configuration.
pub enum Kind {
    Dense {
        inp: usize,
        out: usize,
        act: Option<Act>,
        bias: bool,
    },
    Conv2d {
        inp: usize,
        out: usize,
        kernel: (usize, usize),
        stride: (usize, usize),
        padding: (usize, usize),
        bias: bool,
        act: Option<Act>,
        /// the arguments as given (an int or a pair), for printing
        given: [Value; 3],
    },
    MaxPool2d {
        kernel: (usize, usize),
        stride: (usize, usize),
        padding: (usize, usize),
        given: [Value; 3],
    },
    Flatten,
    Dropout {
        p: f64,
    },
    Embedding {
        num: usize,
        dim: usize,
    },
    PositionEmbedding {
        max_len: usize,
        dim: usize,
    },
    LayerNorm {
        dim: usize,
        eps: f64,
    },
    Lstm {
        inp: usize,
        hidden: usize,
        seq: bool,
    },
    Attention {
        dim: usize,
        heads: usize,
        causal: bool,
        bias: bool,
    },
    Residual(Value),
    Sequential(Vec<Value>),
}

pub struct Layer {
    pub kind: Kind,
    pub dtype: DType,
    /// Own parameters, in `param_names` order (containers have none).
    pub params: RwLock<Vec<Tensor>>,
}

/// The layer a value holds, if it is one.
pub fn layer_of(v: &Value) -> Option<&Layer> {
    match v {
        Value::Object(o) => o.0.as_any().downcast_ref::<Layer>(),
        _ => None,
    }
}

fn pair_str(given: &Value) -> String {
    repr_of(given)
}

impl Kind {
    /// The layer type's name, as the program spells its constructor.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Dense { .. } => "Dense",
            Kind::Conv2d { .. } => "Conv2d",
            Kind::MaxPool2d { .. } => "MaxPool2d",
            Kind::Flatten => "Flatten",
            Kind::Dropout { .. } => "Dropout",
            Kind::Embedding { .. } => "Embedding",
            Kind::PositionEmbedding { .. } => "PositionEmbedding",
            Kind::LayerNorm { .. } => "LayerNorm",
            Kind::Lstm { .. } => "LSTM",
            Kind::Attention { .. } => "MultiHeadAttention",
            Kind::Residual(_) => "Residual",
            Kind::Sequential(_) => "Sequential",
        }
    }
}

impl Layer {
    pub fn type_name(&self) -> &'static str {
        self.kind.name()
    }

    /// The names of this layer's own parameters (PyTorch's).
    pub fn param_names(&self) -> Vec<&'static str> {
        match &self.kind {
            Kind::Dense { bias, .. } | Kind::Conv2d { bias, .. } => {
                if *bias {
                    vec!["weight", "bias"]
                } else {
                    vec!["weight"]
                }
            }
            Kind::Embedding { .. } | Kind::PositionEmbedding { .. } => vec!["weight"],
            Kind::LayerNorm { .. } => vec!["weight", "bias"],
            Kind::Lstm { .. } => vec!["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"],
            Kind::Attention { bias, .. } => {
                if *bias {
                    vec!["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
                } else {
                    vec!["in_proj_weight", "out_proj.weight"]
                }
            }
            _ => vec![],
        }
    }

    /// Child layers with the name each takes in parameter paths.
    pub fn children(&self) -> Vec<(String, Value)> {
        match &self.kind {
            Kind::Sequential(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (i.to_string(), v.clone()))
                .collect(),
            Kind::Residual(inner) => vec![("inner".to_string(), inner.clone())],
            _ => vec![],
        }
    }

    /// Own parameter `i` (a clone sharing storage).
    pub fn param(&self, i: usize) -> Option<Tensor> {
        self.params.read().get(i).cloned()
    }

    fn p(&self, i: usize) -> VResult<Tensor> {
        self.param(i).ok_or_else(|| {
            err(
                ErrorKind::ValueError,
                format!("{}: parameter {i} is missing", self.describe()),
            )
        })
    }

    /// The layer as its constructor call (LAYERS.md "Attributes and printing").
    pub fn describe(&self) -> String {
        let dt = if self.dtype == DType::F32 {
            String::new()
        } else {
            format!(", dtype={}", self.dtype.name())
        };
        let act = |a: &Option<Act>| a.map(|a| format!(", activation={}", a.name())).unwrap_or_default();
        let flag = |b: bool, name: &str, default: bool| {
            if b == default {
                String::new()
            } else {
                format!(", {name}={b}")
            }
        };
        match &self.kind {
            Kind::Dense { inp, out, act: a, bias } => {
                format!("Dense({inp}, {out}{}{}{dt})", act(a), flag(*bias, "bias", true))
            }
            Kind::Conv2d {
                inp,
                out,
                act: a,
                bias,
                given,
                ..
            } => {
                let mut s = format!("Conv2d({inp}, {out}, {}", pair_str(&given[0]));
                if !matches!(given[1], Value::Int(1)) {
                    s.push_str(&format!(", stride={}", pair_str(&given[1])));
                }
                if !matches!(given[2], Value::Int(0)) {
                    s.push_str(&format!(", padding={}", pair_str(&given[2])));
                }
                s.push_str(&flag(*bias, "bias", true));
                s.push_str(&act(a));
                s.push_str(&dt);
                s.push(')');
                s
            }
            Kind::MaxPool2d { given, .. } => {
                let mut s = format!("MaxPool2d({}", pair_str(&given[0]));
                if !matches!(given[1], Value::None) {
                    s.push_str(&format!(", stride={}", pair_str(&given[1])));
                }
                if !matches!(given[2], Value::Int(0)) {
                    s.push_str(&format!(", padding={}", pair_str(&given[2])));
                }
                s.push(')');
                s
            }
            Kind::Flatten => "Flatten()".to_string(),
            Kind::Dropout { p } => format!("Dropout({})", repr_of(&Value::Float(*p))),
            Kind::Embedding { num, dim } => format!("Embedding({num}, {dim}{dt})"),
            Kind::PositionEmbedding { max_len, dim } => format!("PositionEmbedding({max_len}, {dim}{dt})"),
            Kind::LayerNorm { dim, eps } => {
                let e = if *eps == 1e-5 {
                    String::new()
                } else {
                    format!(", eps={}", repr_of(&Value::Float(*eps)))
                };
                format!("LayerNorm({dim}{e}{dt})")
            }
            Kind::Lstm { inp, hidden, seq } => {
                format!("LSTM({inp}, {hidden}{}{dt})", flag(*seq, "return_sequences", false))
            }
            Kind::Attention {
                dim,
                heads,
                causal,
                bias,
            } => format!(
                "MultiHeadAttention({dim}, {heads}{}{}{dt})",
                flag(*causal, "causal", false),
                flag(*bias, "bias", true)
            ),
            Kind::Residual(inner) => format!("Residual({})", item_str(inner)),
            Kind::Sequential(items) => {
                let parts: Vec<String> = items.iter().map(item_str).collect();
                format!("Sequential([{}])", parts.join(", "))
            }
        }
    }

    fn shape_error(&self, path: Option<&str>, expected: &str, got: &[usize]) -> Exc {
        err(
            ErrorKind::ShapeError,
            format!(
                "{}{}: expected input shape {expected}, got {}",
                path_prefix(path),
                self.describe(),
                shape_str(got)
            ),
        )
    }

    /// The expected-shape text and whether `shape` fits it.
    fn check_input(&self, path: Option<&str>, shape: &[usize]) -> VResult<()> {
        let (expected, ok) = match &self.kind {
            Kind::Dense { inp, .. } => (format!("(*, {inp})"), shape.last() == Some(inp)),
            Kind::Conv2d { inp, .. } => (format!("(N, {inp}, H, W)"), shape.len() == 4 && shape[1] == *inp),
            Kind::MaxPool2d { .. } => ("(N, C, H, W)".to_string(), shape.len() == 4),
            Kind::Flatten => ("(N, *)".to_string(), !shape.is_empty()),
            Kind::Lstm { inp, .. } => (format!("(N, T, {inp})"), shape.len() == 3 && shape[2] == *inp),
            Kind::Attention { dim, .. } | Kind::PositionEmbedding { dim, .. } => {
                (format!("(N, T, {dim})"), shape.len() == 3 && shape[2] == *dim)
            }
            Kind::LayerNorm { dim, .. } => (format!("(*, {dim})"), shape.last() == Some(dim)),
            _ => return Ok(()),
        };
        if ok {
            Ok(())
        } else {
            Err(self.shape_error(path, &expected, shape))
        }
    }

    /// This layer's output for `x` (`path`: where it sits in a model, for errors).
    pub fn forward(&self, c: &mut dyn Caller, x: Tensor, path: Option<&str>) -> VResult<Tensor> {
        self.check_input(path, x.shape())?;
        match &self.kind {
            Kind::Sequential(items) => {
                let mut h = x;
                for (i, item) in items.iter().enumerate() {
                    let p = child_path(path, &i.to_string());
                    h = forward_value(c, item, h, Some(&p))?;
                }
                Ok(h)
            }
            Kind::Residual(inner) => {
                let p = child_path(path, "inner");
                let y = forward_value(c, inner, x.clone(), Some(&p))?;
                if y.shape() != x.shape() {
                    return Err(err(
                        ErrorKind::ShapeError,
                        format!(
                            "{}{}: the inner layer changes the shape {} to {}",
                            path_prefix(path),
                            self.describe(),
                            shape_str(x.shape()),
                            shape_str(y.shape())
                        ),
                    ));
                }
                ops::add(&x, &y)
            }
            Kind::Dense { act, .. } => {
                let x = self.input(&x)?;
                let w = self.p(0)?;
                let mut y = ops::mm(&x, &ops::transpose(&w)?)?;
                if let Some(b) = self.param(1) {
                    y = ops::add(&y, &b)?;
                }
                match act {
                    Some(a) => a.apply(&y),
                    None => Ok(y),
                }
            }
            Kind::Conv2d {
                stride, padding, act, ..
            } => {
                let x = self.input(&x)?;
                let w = self.p(0)?;
                let b = self.param(1);
                let (x, w) = (ops::mm_operand(&x)?, ops::mm_operand(&w)?);
                let y = apsi_core::api::tensor::conv2d(&x, &w, b.as_ref(), *stride, *padding)
                    .map_err(|e| self.rename(path, e))?;
                match act {
                    Some(a) => a.apply(&y),
                    None => Ok(y),
                }
            }
            Kind::MaxPool2d {
                kernel,
                stride,
                padding,
                ..
            } => apsi_core::api::tensor::max_pool2d(&x, *kernel, *stride, *padding).map_err(|e| self.rename(path, e)),
            Kind::Flatten => {
                let n = x.shape()[0];
                let rest: usize = x.shape()[1..].iter().product();
                ops::reshape(&x, vec![n, rest])
            }
            Kind::Dropout { p } => {
                if !train::training() || *p == 0.0 {
                    return Ok(x);
                }
                let scale = 1.0 / (1.0 - p);
                let u = train::dropout_uniform(x.size());
                let mask: Vec<f64> = u.iter().map(|&u| if u < *p { 0.0 } else { scale }).collect();
                let dt = if x.dtype.is_float() { x.dtype } else { DType::F32 };
                let m = ops::constant(mask, x.shape().to_vec(), dt)?;
                ops::mul(&ops::cast(&x, dt)?, &m)
            }
            Kind::Embedding { num, .. } => {
                if x.dtype.is_float() {
                    return Err(err(
                        ErrorKind::TypeError,
                        format!(
                            "{}{}: expected an integer tensor of indices, got {}",
                            path_prefix(path),
                            self.describe(),
                            x.dtype.name()
                        ),
                    ));
                }
                let ids = x.to_vec::<i64>();
                let mut rows = Vec::with_capacity(ids.len());
                for &i in &ids {
                    if i < 0 || i as usize >= *num {
                        return Err(err(
                            ErrorKind::IndexError,
                            format!(
                                "{}{}: index {i} is out of range for {num} entries",
                                path_prefix(path),
                                self.describe()
                            ),
                        ));
                    }
                    rows.push(i as usize);
                }
                let w = self.p(0)?;
                let dim = w.shape()[1];
                let mut shape = x.shape().to_vec();
                shape.push(dim);
                ops::reshape(&ops::take_rows(&w, &rows)?, shape)
            }
            Kind::PositionEmbedding { max_len, .. } => {
                let t = x.shape()[1];
                if t > *max_len {
                    return Err(err(
                        ErrorKind::ShapeError,
                        format!(
                            "{}{}: sequence length {t} is longer than max_len {max_len} (input {})",
                            path_prefix(path),
                            self.describe(),
                            shape_str(x.shape())
                        ),
                    ));
                }
                let x = self.input(&x)?;
                let rows: Vec<usize> = (0..t).collect();
                ops::add(&x, &ops::take_rows(&self.p(0)?, &rows)?)
            }
            Kind::LayerNorm { eps, .. } => {
                let x = self.input(&x)?;
                let last = x.ndim() - 1;
                let mu = ops::mean(&x, &[last], true)?;
                let xc = ops::sub(&x, &mu)?;
                let var = ops::mean(&ops::mul(&xc, &xc)?, &[last], true)?;
                let rstd = ops::unary(
                    apsi_core::api::tensor::UFn::Sqrt,
                    &ops::scalar(apsi_core::api::BinOp::Add, &var, *eps)?,
                )?;
                let y = ops::div(&xc, &rstd)?;
                ops::add(&ops::mul(&y, &self.p(0)?)?, &self.p(1)?)
            }
            Kind::Lstm { hidden, seq, .. } => {
                let x = self.input(&x)?;
                crate::recurrent::lstm(&x, *hidden, *seq, &self.params.read())
            }
            Kind::Attention { heads, causal, .. } => {
                let x = self.input(&x)?;
                crate::attention::forward(self, &x, &x, &x, *heads, *causal)
            }
        }
    }

    /// `x` converted to the layer's dtype (Keras' rule).
    fn input(&self, x: &Tensor) -> VResult<Tensor> {
        ops::cast(x, self.dtype)
    }

    /// An error from a core kernel, prefixed with this layer's place and name.
    fn rename(&self, path: Option<&str>, e: Exc) -> Exc {
        let mut e = e;
        let msg = format!("{}{}: {}", path_prefix(path), self.describe(), e.message);
        if let Some(o) = std::sync::Arc::get_mut(&mut e) {
            o.message = msg;
            e
        } else {
            err(e.kind, msg)
        }
    }

    /// The output shape for an input shape, without computing.
    pub fn out_shape(&self, c: &mut dyn Caller, shape: &[usize], path: Option<&str>) -> VResult<Vec<usize>> {
        self.check_input(path, shape)?;
        let mut s = shape.to_vec();
        Ok(match &self.kind {
            Kind::Sequential(items) => {
                for (i, item) in items.iter().enumerate() {
                    let p = child_path(path, &i.to_string());
                    s = out_shape_value(c, item, &s, Some(&p))?;
                }
                s
            }
            Kind::Residual(inner) => {
                let p = child_path(path, "inner");
                let y = out_shape_value(c, inner, &s, Some(&p))?;
                if y != s {
                    return Err(err(
                        ErrorKind::ShapeError,
                        format!(
                            "{}{}: the inner layer changes the shape {} to {}",
                            path_prefix(path),
                            self.describe(),
                            shape_str(&s),
                            shape_str(&y)
                        ),
                    ));
                }
                s
            }
            Kind::Dense { out, .. } => {
                *s.last_mut().unwrap_or(&mut 0) = *out;
                s
            }
            Kind::Conv2d {
                out,
                kernel,
                stride,
                padding,
                ..
            } => {
                let (h, w) = window_out(self, path, shape, *kernel, *stride, *padding)?;
                vec![shape[0], *out, h, w]
            }
            Kind::MaxPool2d {
                kernel,
                stride,
                padding,
                ..
            } => {
                let (h, w) = window_out(self, path, shape, *kernel, *stride, *padding)?;
                vec![shape[0], shape[1], h, w]
            }
            Kind::Flatten => vec![shape[0], shape[1..].iter().product()],
            Kind::Embedding { dim, .. } => {
                s.push(*dim);
                s
            }
            Kind::Lstm { hidden, seq, .. } => {
                if *seq {
                    vec![shape[0], shape[1], *hidden]
                } else {
                    vec![shape[0], *hidden]
                }
            }
            Kind::PositionEmbedding { max_len, .. } if shape[1] > *max_len => {
                return Err(err(
                    ErrorKind::ShapeError,
                    format!(
                        "{}{}: sequence length {} is longer than max_len {max_len} (input {})",
                        path_prefix(path),
                        self.describe(),
                        shape[1],
                        shape_str(shape)
                    ),
                ))
            }
            _ => s,
        })
    }
}

/// `(H', W')` of a windowed layer, or the `ShapeError` for a window larger
/// than the padded input.
fn window_out(
    l: &Layer,
    path: Option<&str>,
    shape: &[usize],
    k: (usize, usize),
    s: (usize, usize),
    p: (usize, usize),
) -> VResult<(usize, usize)> {
    let (h, w) = (shape[2] + 2 * p.0, shape[3] + 2 * p.1);
    if k.0 > h || k.1 > w {
        return Err(err(
            ErrorKind::ShapeError,
            format!(
                "{}{}: the window ({}, {}) is larger than the padded input ({h}, {w}) of {}",
                path_prefix(path),
                l.describe(),
                k.0,
                k.1,
                shape_str(shape)
            ),
        ));
    }
    Ok(((h - k.0) / s.0 + 1, (w - k.1) / s.1 + 1))
}

fn path_prefix(path: Option<&str>) -> String {
    match path {
        Some(p) => format!("layer {p}, "),
        None => String::new(),
    }
}

fn child_path(path: Option<&str>, name: &str) -> String {
    match path {
        Some(p) => format!("{p}.{name}"),
        None => name.to_string(),
    }
}

/// A `Sequential` item as it prints: a layer as its call, a function by name.
pub fn item_str(v: &Value) -> String {
    if let Some(l) = layer_of(v) {
        return l.describe();
    }
    fn_name(v).unwrap_or_else(|| repr_of(v))
}

/// The name of a function value (`relu`, `<lambda>`).
pub fn fn_name(v: &Value) -> Option<String> {
    match v {
        Value::Native(f) => Some(f.name.to_string()),
        Value::Func(f) => Some(f.name.to_string()),
        _ => None,
    }
}

/// `m(x)` for anything a model may hold: a layer, a struct model (its
/// `forward`), or a function of one tensor.
pub fn forward_value(c: &mut dyn Caller, m: &Value, x: Tensor, path: Option<&str>) -> VResult<Tensor> {
    if let Some(l) = layer_of(m) {
        return l.forward(c, x, path);
    }
    let out = match m {
        Value::Struct(s) => match s.ty.methods.get("forward").cloned() {
            Some(f) => c.call(&f, &[m.clone(), tensor_value(x)], &[])?,
            None => {
                return Err(err(
                    ErrorKind::TypeError,
                    format!("{} is not a model: it defines no forward(self, x)", s.ty.name),
                ))
            }
        },
        _ => c.call(m, &[tensor_value(x)], &[])?,
    };
    as_tensor(&out).ok_or_else(|| {
        err(
            ErrorKind::TypeError,
            format!(
                "{}{} returned {}, not a tensor",
                path_prefix(path),
                item_str(m),
                out.type_name()
            ),
        )
    })
}

/// The output shape of any model item; a function or a struct model runs
/// on zeros (its shape is what it computes).
pub fn out_shape_value(c: &mut dyn Caller, m: &Value, shape: &[usize], path: Option<&str>) -> VResult<Vec<usize>> {
    if let Some(l) = layer_of(m) {
        return l.out_shape(c, shape, path);
    }
    let dt = DType::F32;
    let zeros = Tensor::full(shape.to_vec(), 0.0, dt)?;
    let _inference = train::Mode::inference();
    Ok(forward_value(c, m, zeros, path)?.shape().to_vec())
}

/// A tensor argument: a tensor, or a list/number that spells one.
pub fn tensor_arg(c: &mut dyn Caller, who: &str, v: &Value) -> VResult<Tensor> {
    if let Some(t) = as_tensor(v) {
        return Ok(t);
    }
    if matches!(v, Value::List(_) | Value::Tuple(_) | Value::Int(_) | Value::Float(_)) {
        if let Some(f) = apsi_core::api::prelude_function("tensor") {
            if let Some(t) = as_tensor(&c.call(&f, std::slice::from_ref(v), &[])?) {
                return Ok(t);
            }
        }
    }
    Err(err(
        ErrorKind::TypeError,
        format!("{who}: expected a tensor, got {}", v.type_name()),
    ))
}

fn methods() -> &'static [(&'static str, Value)] {
    static M: OnceLock<Vec<(&'static str, Value)>> = OnceLock::new();
    M.get_or_init(|| {
        vec![
            ("__call__", native("__call__", m_call)),
            ("forward", native("forward", m_call)),
            ("params", native("params", crate::model::m_params)),
            ("named_params", native("named_params", crate::model::m_named_params)),
            ("output_shape", native("output_shape", crate::model::m_output_shape)),
        ]
    })
}

/// `layer(x)` / `layer.forward(x)`; `mha(q, k, v)` for attention.
fn m_call(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let this = args.first().cloned().unwrap_or(Value::None);
    let Some(l) = layer_of(&this) else {
        return Err(err(ErrorKind::TypeError, "a layer method was called without its layer"));
    };
    if let Kind::Attention { heads, causal, .. } = &l.kind {
        if args.len() == 4 {
            let a = Args::new("MultiHeadAttention", &args[1..], kw, 3, &["q", "k", "v"])?;
            let q = l.input(&tensor_arg(c, "MultiHeadAttention", a.req(0)?)?)?;
            let k = l.input(&tensor_arg(c, "MultiHeadAttention", a.req(1)?)?)?;
            let v = l.input(&tensor_arg(c, "MultiHeadAttention", a.req(2)?)?)?;
            for t in [&q, &k, &v] {
                l.check_input(None, t.shape())?;
            }
            return Ok(tensor_value(crate::attention::forward(l, &q, &k, &v, *heads, *causal)?));
        }
    }
    let a = Args::new(l.type_name(), &args[1..], kw, 1, &["x"])?;
    let x = tensor_arg(c, l.type_name(), a.req(0)?)?;
    Ok(tensor_value(l.forward(c, x, None)?))
}

/// `mha.out_proj`: the output projection's parameters, by name.
struct OutProj(Value);

impl ApsiObject for OutProj {
    fn type_name(&self) -> &str {
        "Linear"
    }
    fn to_str(&self) -> String {
        match layer_of(&self.0).map(|l| &l.kind) {
            Some(Kind::Attention { dim, .. }) => format!("Linear({dim}, {dim})"),
            _ => "Linear".to_string(),
        }
    }
    fn get_attr(&self, _this: &Value, name: &str) -> Option<VResult<Value>> {
        let l = layer_of(&self.0)?;
        let full = format!("out_proj.{name}");
        let i = l.param_names().iter().position(|n| *n == full)?;
        l.param(i).map(|t| Ok(tensor_value(t)))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl ApsiObject for Layer {
    fn type_name(&self) -> &str {
        Layer::type_name(self)
    }
    fn to_str(&self) -> String {
        self.describe()
    }
    fn get_attr(&self, this: &Value, name: &str) -> Option<VResult<Value>> {
        if let Some(i) = self.param_names().iter().position(|n| *n == name) {
            return self.param(i).map(|t| Ok(tensor_value(t)));
        }
        if name == "out_proj" && matches!(self.kind, Kind::Attention { .. }) {
            return Some(Ok(apsi_core::api::object(OutProj(this.clone()))));
        }
        if name == "dtype" {
            return Some(Ok(apsi_core::api::tensor::dtype_value(self.dtype)));
        }
        if name == "layers" {
            if let Kind::Sequential(items) = &self.kind {
                return Some(Ok(Value::list(items.clone())));
            }
        }
        if name == "inner" {
            if let Kind::Residual(inner) = &self.kind {
                return Some(Ok(inner.clone()));
            }
        }
        if name == "__call__" {
            return Some(Ok(bound_method(this, &methods()[0].1)));
        }
        method_of(this, methods(), name)
    }
    fn protocols(&self) -> apsi_core::api::Protocols {
        let mut p = apsi_core::api::Protocols::NONE;
        if matches!(self.kind, Kind::Sequential(_)) {
            p.len = true;
            p.item = true;
        }
        p
    }
    fn len(&self, _this: &Value) -> VResult<i64> {
        match &self.kind {
            Kind::Sequential(items) => Ok(items.len() as i64),
            _ => Err(err(ErrorKind::TypeError, format!("{} has no len()", self.type_name()))),
        }
    }
    fn get_item(&self, _this: &Value, key: &Value) -> VResult<Value> {
        match (&self.kind, key) {
            (Kind::Sequential(items), Value::Int(i)) => {
                let n = items.len() as i64;
                let j = if *i < 0 { i + n } else { *i };
                items.get(j as usize).filter(|_| j >= 0).cloned().ok_or_else(|| {
                    err(
                        ErrorKind::IndexError,
                        format!("Sequential index {i} is out of range for {n} layers"),
                    )
                })
            }
            _ => Err(err(
                ErrorKind::TypeError,
                format!("{} indices must be ints, not {}", self.type_name(), key.type_name()),
            )),
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
