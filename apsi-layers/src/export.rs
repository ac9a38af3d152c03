//! `torch_module(m, path="model", params=none)` (LAYERS.md §6): a model of
//! this crate's layers as PyTorch source — `path.py`, which imports only
//! `torch` and `safetensors.torch` and defines one `nn.Module` subclass per
//! layer kind the model uses, `build()` and `load()` — beside
//! `path.safetensors`, the weights as `save_model` writes them.
//!
//! Invariants:
//! - every parameter keeps the name `named_params` gives it and the layout
//!   it has here (they are PyTorch's: Dense `(out, in)`, LSTM gate rows
//!   i, f, g, o, attention `in_proj` rows q, k, v), so the weights load with
//!   `load_state_dict(strict=True)` untransposed;
//! - each generated class computes what the layer's `forward` computes in
//!   inference mode, including the input conversions (a layer with
//!   parameters converts its input to its dtype; `gelu` makes an integer
//!   input f32, `tanh`/`sigmoid`/`softmax` make it f64);
//! - nothing is written unless the whole model translates, and each file is
//!   written through a temporary name and a rename.

use crate::act::Act;
use crate::layer::{fn_name, item_str, layer_of, Kind, Layer};
use crate::model::{collect, expect_model, tensor_list};
use crate::ops;
use crate::save::{encode, spec, write_atomic};
use apsi_core::api::tensor::{DType, Tensor};
use apsi_core::api::{err, Args, Caller, ErrorKind, Kwargs, VResult, Value};
use serde_json::json;

const WHO: &str = "torch_module";

/// The Python classes, in the order the file defines them. Each computes
/// what the Apsi layer of the same name computes.
const CLASSES: &[(&str, &str)] = &[
    (
        "ReLU",
        r#"class ReLU(nn.ReLU):
    """relu: max(x, 0)."""
"#,
    ),
    (
        "GELU",
        r#"class GELU(nn.GELU):
    """gelu: exact (0.5·x·(1 + erf(x/√2))) or approximate="tanh"; an integer input becomes f32."""

    def forward(self, x):
        return super().forward(_floating(x, torch.float32))
"#,
    ),
    (
        "Tanh",
        r#"class Tanh(nn.Tanh):
    """tanh; an integer input becomes f64."""

    def forward(self, x):
        return super().forward(_floating(x, torch.float64))
"#,
    ),
    (
        "Sigmoid",
        r#"class Sigmoid(nn.Sigmoid):
    """sigmoid; an integer input becomes f64."""

    def forward(self, x):
        return super().forward(_floating(x, torch.float64))
"#,
    ),
    (
        "Softmax",
        r#"class Softmax(nn.Softmax):
    """softmax over the last axis; an integer input becomes f64."""

    def __init__(self):
        super().__init__(dim=-1)

    def forward(self, x):
        return super().forward(_floating(x, torch.float64))
"#,
    ),
    (
        "Dense",
        r#"class Dense(nn.Linear):
    """Dense(in, out): x @ weight.T + bias, then the activation; weight (out, in)."""

    def __init__(self, in_features, out_features, activation=None, bias=True, dtype=torch.float32):
        super().__init__(in_features, out_features, bias=bias, dtype=dtype)
        self.activation = activation

    def forward(self, x):
        y = super().forward(x.to(self.weight.dtype))
        return y if self.activation is None else self.activation(y)
"#,
    ),
    (
        "Conv2d",
        r#"class Conv2d(nn.Conv2d):
    """Conv2d(in_ch, out_ch, kernel): (N, C, H, W) -> (N, O, H', W'), zero padding, then the activation."""

    def __init__(self, in_channels, out_channels, kernel, stride=1, padding=0, bias=True, activation=None,
                 dtype=torch.float32):
        super().__init__(in_channels, out_channels, kernel, stride=stride, padding=padding, bias=bias, dtype=dtype)
        self.activation = activation

    def forward(self, x):
        y = super().forward(x.to(self.weight.dtype))
        return y if self.activation is None else self.activation(y)
"#,
    ),
    (
        "MaxPool2d",
        r#"class MaxPool2d(nn.MaxPool2d):
    """MaxPool2d(kernel, stride=kernel, padding=0): floor mode, padding never wins."""
"#,
    ),
    (
        "Flatten",
        r#"class Flatten(nn.Flatten):
    """(N, d1, d2, ...) -> (N, d1·d2·...); (N,) -> (N, 1)."""

    def forward(self, x):
        return x.reshape(x.shape[0], -1) if x.dim() < 2 else super().forward(x)
"#,
    ),
    (
        "Dropout",
        r#"class Dropout(nn.Dropout):
    """Dropout(p): the identity in eval mode, as Apsi's outside training."""
"#,
    ),
    (
        "Embedding",
        r#"class Embedding(nn.Embedding):
    """Embedding(num, dim): integer (...) -> (..., dim)."""

    def __init__(self, num, dim, dtype=torch.float32):
        super().__init__(num, dim, dtype=dtype)
"#,
    ),
    (
        "PositionEmbedding",
        r#"class PositionEmbedding(nn.Module):
    """PositionEmbedding(max_len, dim): (N, T, dim) -> x + weight[:T]."""

    def __init__(self, max_len, dim, dtype=torch.float32):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(max_len, dim, dtype=dtype))

    def forward(self, x):
        return x.to(self.weight.dtype) + self.weight[: x.shape[1]]
"#,
    ),
    (
        "LayerNorm",
        r#"class LayerNorm(nn.LayerNorm):
    """LayerNorm(dim, eps=1e-5): over the last axis, biased variance."""

    def __init__(self, dim, eps=1e-5, dtype=torch.float32):
        super().__init__(dim, eps=eps, dtype=dtype)

    def forward(self, x):
        return super().forward(x.to(self.weight.dtype))
"#,
    ),
    (
        "LSTM",
        r#"class LSTM(nn.LSTM):
    """LSTM(in, hidden): batch first, zero initial state; the last step's h (N, hidden),
    or every step's (N, T, hidden) with return_sequences=True."""

    def __init__(self, in_features, hidden, return_sequences=False, dtype=torch.float32):
        super().__init__(in_features, hidden, batch_first=True, dtype=dtype)
        self.return_sequences = return_sequences

    def forward(self, x):
        out, (h, _) = super().forward(x.to(self.weight_ih_l0.dtype))
        return out if self.return_sequences else h[0]

    def extra_repr(self):
        return super().extra_repr() + (", return_sequences=True" if self.return_sequences else "")
"#,
    ),
    (
        "MultiHeadAttention",
        r#"class MultiHeadAttention(nn.MultiheadAttention):
    """MultiHeadAttention(dim, heads): self-attention (N, T, dim) -> (N, T, dim), batch first;
    m(q, k, v) attends from q to k and v. causal=True: position i sees keys 0..i."""

    def __init__(self, dim, heads, causal=False, bias=True, dtype=torch.float32):
        super().__init__(dim, heads, bias=bias, batch_first=True, dtype=dtype)
        self.causal = causal

    def forward(self, q, k=None, v=None):
        dt = self.in_proj_weight.dtype
        q = q.to(dt)
        k = q if k is None else k.to(dt)
        v = k if v is None else v.to(dt)
        mask = None
        if self.causal:
            mask = torch.ones(q.shape[1], k.shape[1], dtype=torch.bool, device=q.device).triu(1)
        return super().forward(q, k, v, attn_mask=mask, need_weights=False)[0]

    def extra_repr(self):
        return f"{self.embed_dim}, {self.num_heads}" + (", causal=True" if self.causal else "")
"#,
    ),
    (
        "Residual",
        r#"class Residual(nn.Module):
    """Residual(layer): x + layer(x); the layer's parameters are under "inner."."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return x + self.inner(x)
"#,
    ),
    (
        "Sequential",
        r#"class Sequential(nn.Sequential):
    """Sequential(l0, l1, ...): the layers in order, their parameters under "0.", "1.", ..."""
"#,
    ),
];

/// The source of the Python file and the classes it uses.
struct Writer {
    used: Vec<&'static str>,
}

impl Writer {
    fn use_class(&mut self, name: &'static str) {
        if !self.used.contains(&name) {
            self.used.push(name);
        }
    }

    /// The constructor call of an activation function.
    fn act(&mut self, a: Act) -> String {
        match a {
            Act::Relu => {
                self.use_class("ReLU");
                "ReLU()".into()
            }
            Act::Gelu(approx) => {
                self.use_class("GELU");
                if approx {
                    "GELU(approximate=\"tanh\")".into()
                } else {
                    "GELU()".into()
                }
            }
            Act::Tanh => {
                self.use_class("Tanh");
                "Tanh()".into()
            }
            Act::Sigmoid => {
                self.use_class("Sigmoid");
                "Sigmoid()".into()
            }
            Act::Softmax => {
                self.use_class("Softmax");
                "Softmax()".into()
            }
        }
    }

    /// The Python expression that builds `v`, which sits at `path` in the
    /// model (`None`: the model itself); continuation lines are indented
    /// relative to `indent`.
    fn expr(&mut self, v: &Value, path: Option<&str>, indent: usize) -> VResult<String> {
        let Some(l) = layer_of(v) else {
            return self.function(v, path);
        };
        let s = match &l.kind {
            Kind::Sequential(items) => {
                self.use_class("Sequential");
                if items.is_empty() {
                    return Ok("Sequential()".into());
                }
                let pad = " ".repeat(indent + 4);
                let mut s = String::from("Sequential(\n");
                for (i, item) in items.iter().enumerate() {
                    let p = child(path, &i.to_string());
                    s.push_str(&format!("{pad}{},\n", self.expr(item, Some(&p), indent + 4)?));
                }
                s.push_str(&" ".repeat(indent));
                s.push(')');
                return Ok(s);
            }
            Kind::Residual(inner) => {
                self.use_class("Residual");
                let p = child(path, "inner");
                return Ok(format!("Residual({})", self.expr(inner, Some(&p), indent)?));
            }
            Kind::Dense { inp, out, act, bias } => {
                let mut args = vec![inp.to_string(), out.to_string()];
                if let Some(a) = act {
                    args.push(format!("activation={}", self.act(*a)));
                }
                if !bias {
                    args.push("bias=False".into());
                }
                call("Dense", args, l)
            }
            Kind::Conv2d {
                inp,
                out,
                kernel,
                stride,
                padding,
                bias,
                act,
                ..
            } => {
                let mut args = vec![inp.to_string(), out.to_string(), pair(*kernel)];
                if *stride != (1, 1) {
                    args.push(format!("stride={}", pair(*stride)));
                }
                if *padding != (0, 0) {
                    args.push(format!("padding={}", pair(*padding)));
                }
                if !bias {
                    args.push("bias=False".into());
                }
                if let Some(a) = act {
                    args.push(format!("activation={}", self.act(*a)));
                }
                call("Conv2d", args, l)
            }
            Kind::MaxPool2d {
                kernel,
                stride,
                padding,
                ..
            } => {
                let mut args = vec![pair(*kernel)];
                if stride != kernel {
                    args.push(format!("stride={}", pair(*stride)));
                }
                if *padding != (0, 0) {
                    args.push(format!("padding={}", pair(*padding)));
                }
                call("MaxPool2d", args, l)
            }
            Kind::Flatten => "Flatten()".into(),
            Kind::Dropout { p } => format!("Dropout({})", float(*p)),
            Kind::Embedding { num, dim } => call("Embedding", vec![num.to_string(), dim.to_string()], l),
            Kind::PositionEmbedding { max_len, dim } => {
                call("PositionEmbedding", vec![max_len.to_string(), dim.to_string()], l)
            }
            Kind::LayerNorm { dim, eps } => {
                let mut args = vec![dim.to_string()];
                if *eps != 1e-5 {
                    args.push(format!("eps={}", float(*eps)));
                }
                call("LayerNorm", args, l)
            }
            Kind::Lstm { inp, hidden, seq } => {
                let mut args = vec![inp.to_string(), hidden.to_string()];
                if *seq {
                    args.push("return_sequences=True".into());
                }
                call("LSTM", args, l)
            }
            Kind::Attention {
                dim,
                heads,
                causal,
                bias,
            } => {
                let mut args = vec![dim.to_string(), heads.to_string()];
                if *causal {
                    args.push("causal=True".into());
                }
                if !bias {
                    args.push("bias=False".into());
                }
                call("MultiHeadAttention", args, l)
            }
        };
        self.use_class(class_name(&l.kind));
        Ok(s)
    }

    /// A function in a `Sequential` (or a `Residual`): one of the five
    /// activations, or the error that names what it is.
    fn function(&mut self, v: &Value, path: Option<&str>) -> VResult<String> {
        if let Value::Struct(s) = v {
            let msg = match path {
                None => format!("{WHO} supports the layers, Sequential and Residual; {} defines its own forward", s.ty.name),
                Some(p) => format!(
                    "{WHO} supports the layers, Sequential and Residual; layer {p} is a {}, which defines its own forward",
                    s.ty.name
                ),
            };
            return Err(err(ErrorKind::NotImplementedError, msg));
        }
        // Only the compiled-in functions: a function of the program's own
        // (even one named `relu`) has no PyTorch form.
        if let Value::Native(f) = v {
            let name: &str = &f.name;
            if let Some(a) = Act::from_name(name) {
                return Ok(self.act(a));
            }
        }
        let what = match v {
            Value::Func(_) | Value::Native(_) => format!("the function {}", fn_name(v).unwrap_or_default()),
            other => format!("{} ({})", item_str(other), other.type_name()),
        };
        Err(err(
            ErrorKind::NotImplementedError,
            format!(
                "{WHO} supports the layers, Sequential and Residual, and the functions relu, gelu, tanh, sigmoid and softmax in a Sequential; layer {} is {what}",
                path.unwrap_or("(the model)")
            ),
        ))
    }

    /// The whole Python file.
    fn source(&self, description: &str, build: &str, weights_name: &str) -> String {
        let mut s = format!(
            r#""""{description}

as a PyTorch module, written by Apsi's torch_module (apsi-layers {version}).

build() gives the architecture with PyTorch's initial values; load() also
loads the weights ({weights_name} beside this file, or weights=...)
strictly, moves the module to `device` and puts it in eval mode. Parameter
names are the Apsi model's named_params names; layouts are PyTorch's.
"""

import torch
import safetensors.torch

nn = torch.nn


def _beside(name):
    """`name` in this file's directory."""
    cut = max(__file__.rfind("/"), __file__.rfind("\\")) + 1
    return __file__[:cut] + name


WEIGHTS = _beside({weights_lit})


def _floating(x, dtype):
    """Apsi's rule for the activations: an integer tensor becomes `dtype` first."""
    return x if x.is_floating_point() else x.to(dtype)
"#,
            version = crate::VERSION,
            weights_lit = json!(weights_name),
        );
        for (name, text) in CLASSES {
            if self.used.contains(name) {
                s.push_str("\n\n");
                s.push_str(text);
            }
        }
        s.push_str(&format!(
            r#"

def build():
    """The architecture, with PyTorch's initial values."""
    return {build}


def load(weights=WEIGHTS, device="cpu"):
    """build() with the weights of `weights` (every name and shape checked), on `device`, in eval mode."""
    model = build()
    model.load_state_dict(safetensors.torch.load_file(weights), strict=True)
    return model.to(device).eval()
"#
        ));
        s
    }
}

fn class_name(k: &Kind) -> &'static str {
    // The Python classes carry the layers' own names.
    k.name()
}

/// `Name(args…)`, with `dtype=torch.float64` for an f64 layer.
fn call(name: &str, mut args: Vec<String>, l: &Layer) -> String {
    if l.dtype == DType::F64 {
        args.push("dtype=torch.float64".into());
    }
    format!("{name}({})", args.join(", "))
}

fn child(path: Option<&str>, name: &str) -> String {
    match path {
        Some(p) => format!("{p}.{name}"),
        None => name.to_string(),
    }
}

/// An int pair as Python writes the argument: `3` or `(3, 2)`.
fn pair((a, b): (usize, usize)) -> String {
    if a == b {
        a.to_string()
    } else {
        format!("({a}, {b})")
    }
}

/// A float as a Python literal that reads back to it.
fn float(x: f64) -> String {
    if x.is_finite() {
        let s = format!("{x:?}");
        if s.contains(['.', 'e', 'E']) {
            s
        } else {
            format!("{s}.0")
        }
    } else if x.is_nan() {
        "float(\"nan\")".into()
    } else if x > 0.0 {
        "float(\"inf\")".into()
    } else {
        "float(\"-inf\")".into()
    }
}

/// `path` without a trailing `.py`, checked to name a file.
fn stem(path: &str) -> VResult<String> {
    let s = path.strip_suffix(".py").unwrap_or(path);
    let name = std::path::Path::new(s)
        .file_name()
        .map(|n| n.to_string_lossy().to_string());
    match name {
        Some(n) if !n.is_empty() && !s.ends_with('/') && !s.ends_with('\\') => Ok(s.to_string()),
        _ => Err(err(
            ErrorKind::ValueError,
            format!("{WHO}: path must name a file (written as PATH.py and PATH.safetensors), got \"{path}\""),
        )),
    }
}

/// What `torch_module` writes: the Python source and the safetensors bytes.
pub struct Export {
    pub python: String,
    pub weights: Vec<u8>,
}

/// The two files for model `m`, with `values` (in `params()` order) in place
/// of its parameters when given; `weights_name` is the file name the Python
/// source loads by default.
pub fn export(m: &Value, values: Option<Vec<Tensor>>, weights_name: &str) -> VResult<Export> {
    let mut w = Writer { used: Vec::new() };
    let build = w.expr(m, None, 4)?;
    let description = layer_of(m).map(|l| l.describe()).unwrap_or_default();
    let python = w.source(&description, &build, weights_name);
    let params = collect(m)?;
    let mut tensors = Vec::with_capacity(params.len());
    match values {
        Some(vs) => {
            for (p, t) in params.iter().zip(vs) {
                let dt = p.get()?.dtype;
                tensors.push((p.name.clone(), ops::cast(&ops::detach(&t), dt)?));
            }
        }
        None => {
            for p in &params {
                tensors.push((p.name.clone(), p.get()?));
            }
        }
    }
    let weights = encode(
        &tensors,
        &[
            ("format", "pt".to_string()),
            ("apsi.version", crate::VERSION.to_string()),
            ("apsi.model", spec(m)?.to_string()),
        ],
    )?;
    Ok(Export { python, weights })
}

/// `torch_module(m, path="model", params=none)`: writes `path.py` and
/// `path.safetensors`; returns the `.py` path.
pub fn f_torch_module(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new(WHO, args, kw, 1, &["model", "path", "params"])?;
    let m = expect_model(WHO, a.req(0)?)?;
    let path = match a.opt(1) {
        None => "model".to_string(),
        Some(Value::Str(s)) => s.as_str().to_string(),
        Some(other) => return Err(a.wrong(1, "a str (the path of the files, .py added)", other)),
    };
    let stem = stem(&path)?;
    // The model must translate before its parameters are looked at, so a
    // struct model is refused for what it is.
    Writer { used: Vec::new() }.expr(m, None, 4)?;
    let values = match a.opt(2) {
        None => None,
        Some(v) => Some(tensor_list(c, WHO, v, &collect(m)?)?),
    };
    let (py, st) = (format!("{stem}.py"), format!("{stem}.safetensors"));
    let weights_name = std::path::Path::new(&st)
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| st.clone());
    let out = export(m, values, &weights_name)?;
    write_atomic(WHO, &st, &out.weights)?;
    write_atomic(WHO, &py, out.python.as_bytes())?;
    Ok(Value::str(py))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::construct;
    use apsi_core::api::NoCaller;

    fn layer(f: apsi_core::api::NativeFnPtr, args: &[Value], kw: &[(&str, Value)]) -> Value {
        let kw: Vec<(std::sync::Arc<str>, Value)> = kw.iter().map(|(k, v)| ((*k).into(), v.clone())).collect();
        f(&mut NoCaller, args, &kw).expect("layer")
    }

    fn seq(items: Vec<Value>) -> Value {
        construct::f_sequential(&mut NoCaller, &[Value::list(items)], &[]).expect("Sequential")
    }

    #[test]
    fn literals_read_back_in_python() {
        assert_eq!(float(0.1), "0.1");
        assert_eq!(float(1e-5), "1e-5");
        assert_eq!(float(2.0), "2.0");
        assert_eq!(float(f64::INFINITY), "float(\"inf\")");
        assert_eq!(pair((3, 3)), "3");
        assert_eq!(pair((3, 2)), "(3, 2)");
    }

    #[test]
    fn a_path_loses_a_trailing_py_and_must_name_a_file() {
        assert_eq!(stem("model").unwrap(), "model");
        assert_eq!(stem("out/net.py").unwrap(), "out/net");
        assert_eq!(stem("net.v2").unwrap(), "net.v2");
        for bad in ["", "out/", ".py", "."] {
            let e = stem(bad).unwrap_err();
            assert_eq!(e.kind, ErrorKind::ValueError, "{bad}");
            assert!(e.message.contains("path must name a file"), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn the_source_imports_torch_only_and_defines_the_classes_it_uses() {
        let relu = crate::exported("relu");
        let m = seq(vec![
            layer(
                construct::f_dense,
                &[Value::Int(4), Value::Int(8)],
                &[("activation", Value::str("gelu"))],
            ),
            relu,
            layer(construct::f_dropout, &[Value::Float(0.1)], &[]),
            layer(
                construct::f_dense,
                &[Value::Int(8), Value::Int(2)],
                &[("dtype", Value::str("f64"))],
            ),
        ]);
        let out = export(&m, None, "m.safetensors").unwrap();
        let py = &out.python;
        let imports: Vec<&str> = py
            .lines()
            .filter(|l| l.starts_with("import ") || l.starts_with("from "))
            .collect();
        assert_eq!(imports, ["import torch", "import safetensors.torch"]);
        for used in [
            "class Dense(nn.Linear)",
            "class GELU(nn.GELU)",
            "class ReLU(nn.ReLU)",
            "class Dropout",
        ] {
            assert!(py.contains(used), "{used} missing:\n{py}");
        }
        for unused in ["class LSTM", "class Conv2d", "class Tanh", "class Residual"] {
            assert!(!py.contains(unused), "{unused} defined:\n{py}");
        }
        assert!(py.contains(
            "    return Sequential(\n        Dense(4, 8, activation=GELU()),\n        ReLU(),\n        Dropout(0.1),\n        Dense(8, 2, dtype=torch.float64),\n    )\n"
        ), "{py}");
        assert!(py.contains("WEIGHTS = _beside(\"m.safetensors\")"), "{py}");
        assert!(py.contains("def load(weights=WEIGHTS, device=\"cpu\"):"), "{py}");
        assert!(py.contains("strict=True"), "{py}");
        // the weights: save_model's bytes, named as named_params names them
        let n = u64::from_le_bytes(out.weights[..8].try_into().unwrap()) as usize;
        let header: serde_json::Value = serde_json::from_slice(&out.weights[8..8 + n]).unwrap();
        let mut names: Vec<&str> = header.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        names.sort();
        assert_eq!(names, ["0.bias", "0.weight", "3.bias", "3.weight", "__metadata__"]);
        assert_eq!(header["3.weight"]["dtype"], "F64");
        assert_eq!(header["3.weight"]["shape"], json!([2, 8]));
    }

    #[test]
    fn functions_of_the_program_and_struct_models_have_no_pytorch_form() {
        // a native that is not one of the five activations
        let exp = apsi_core::api::prelude_function("exp").unwrap();
        let m = seq(vec![
            layer(construct::f_dense, &[Value::Int(2), Value::Int(2)], &[]),
            exp,
        ]);
        let e = export(&m, None, "m.safetensors").err().unwrap();
        assert_eq!(e.kind, ErrorKind::NotImplementedError);
        assert!(e.message.ends_with("layer 1 is the function exp"), "{}", e.message);
        // a prelude activation is fine, nested in a Residual too
        let tanh = apsi_core::api::prelude_function("tanh").unwrap();
        let r = construct::f_residual(&mut NoCaller, &[tanh], &[]).unwrap();
        let out = export(&seq(vec![r]), None, "m.safetensors").unwrap();
        assert!(out.python.contains("Residual(Tanh())"), "{}", out.python);
    }
}
