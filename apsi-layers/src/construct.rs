//! The layer constructors (`Dense(…)`, `Sequential([…])`, …) and initial
//! values: PyTorch's distributions, drawn from the prelude generator
//! parameter by parameter in `params()` order, each tensor row-major.

use crate::act::Act;
use crate::layer::{layer_of, Kind, Layer};
use apsi_core::api::tensor::{as_dtype, normal, uniform, DType, Tensor};
use apsi_core::api::{err, object, Args, Caller, ErrorKind, Kwargs, VResult, Value};
use parking_lot::RwLock;
use std::cell::Cell;

thread_local! {
    /// Set while `load_model` rebuilds a model: parameters start as zeros
    /// (the file's weights replace them) and the prelude generator is left alone.
    static NO_INIT: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with initial values off (zeros, nothing drawn).
pub fn without_init<R>(f: impl FnOnce() -> R) -> R {
    let was = NO_INIT.with(|n| n.replace(true));
    let r = f();
    NO_INIT.with(|n| n.set(was));
    r
}

/// How a parameter starts.
enum Init {
    /// U(−k, k)
    Uniform(f64),
    /// N(0, 1)
    Normal,
    Ones,
    Zeros,
}

fn init(shape: Vec<usize>, how: Init, dtype: DType) -> VResult<Tensor> {
    let n: usize = shape.iter().product();
    if NO_INIT.with(|f| f.get()) {
        return Tensor::full(shape, 0.0, dtype);
    }
    let vals: Vec<f64> = match how {
        Init::Uniform(k) => uniform(n).into_iter().map(|u| -k + 2.0 * k * u).collect(),
        Init::Normal => normal(n),
        Init::Ones => vec![1.0; n],
        Init::Zeros => vec![0.0; n],
    };
    Tensor::from_vec(vals, shape).astype(dtype)
}

fn make(kind: Kind, dtype: DType, params: Vec<Tensor>) -> Value {
    object(Layer {
        kind,
        dtype,
        params: RwLock::new(params),
    })
}

/// `dtype=`: f32 (the default) or f64.
fn dtype_arg(a: &Args, i: usize, who: &str) -> VResult<DType> {
    let Some(v) = a.opt(i) else { return Ok(DType::F32) };
    match as_dtype(v) {
        Some(DType::F32) => Ok(DType::F32),
        Some(DType::F64) => Ok(DType::F64),
        Some(d) => Err(err(
            ErrorKind::TypeError,
            format!(
                "{who}: parameters are f32 or f64, not {}; for {} training keep f32 weights and use fit(…, precision=\"bf16\")",
                d.name(),
                d.name()
            ),
        )),
        None => Err(a.wrong(i, "a dtype (f32 or f64)", v)),
    }
}

fn size(a: &Args, i: usize, who: &str, what: &str) -> VResult<usize> {
    let n = a.int(i)?;
    if n < 1 {
        return Err(err(
            ErrorKind::ValueError,
            format!("{who}: {what} must be >= 1, not {n}"),
        ));
    }
    Ok(n as usize)
}

/// An int or an `(h, w)` pair; also the value as given, for printing.
fn pair(a: &Args, i: usize, who: &str, what: &str, default: Option<i64>, min: i64) -> VResult<((usize, usize), Value)> {
    let v = match a.opt(i) {
        Some(v) => v.clone(),
        None => Value::Int(default.unwrap_or(0)),
    };
    let one = |x: &Value| -> VResult<usize> {
        match x {
            Value::Int(n) if *n >= min => Ok(*n as usize),
            Value::Int(n) => Err(err(
                ErrorKind::ValueError,
                format!("{who}: {what} must be >= {min}, not {n}"),
            )),
            other => Err(a.wrong(i, "an int or a pair of ints", other)),
        }
    };
    let p = match &v {
        Value::Tuple(t) if t.0.len() == 2 => (one(&t.0[0])?, one(&t.0[1])?),
        Value::List(l) if l.items.read().len() == 2 => {
            let items = l.items.read().clone();
            (one(&items[0])?, one(&items[1])?)
        }
        other => {
            let n = one(other)?;
            (n, n)
        }
    };
    Ok((p, v))
}

pub fn f_dense(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new(
        "Dense",
        args,
        kw,
        2,
        &["in_features", "out_features", "activation", "bias", "dtype"],
    )?;
    let inp = size(&a, 0, "Dense", "in_features")?;
    let out = size(&a, 1, "Dense", "out_features")?;
    let act = Act::from_value("Dense", a.get(2))?;
    let bias = a.bool_or(3, true)?;
    let dtype = dtype_arg(&a, 4, "Dense")?;
    let k = 1.0 / (inp as f64).sqrt();
    let mut ps = vec![init(vec![out, inp], Init::Uniform(k), dtype)?];
    if bias {
        ps.push(init(vec![out], Init::Uniform(k), dtype)?);
    }
    Ok(make(Kind::Dense { inp, out, act, bias }, dtype, ps))
}

pub fn f_conv2d(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new(
        "Conv2d",
        args,
        kw,
        3,
        &[
            "in_channels",
            "out_channels",
            "kernel",
            "stride",
            "padding",
            "bias",
            "activation",
            "dtype",
        ],
    )?;
    let inp = size(&a, 0, "Conv2d", "in_channels")?;
    let out = size(&a, 1, "Conv2d", "out_channels")?;
    let (kernel, kv) = pair(&a, 2, "Conv2d", "kernel", None, 1)?;
    let (stride, sv) = pair(&a, 3, "Conv2d", "stride", Some(1), 1)?;
    let (padding, pv) = pair(&a, 4, "Conv2d", "padding", Some(0), 0)?;
    let bias = a.bool_or(5, true)?;
    let act = Act::from_value("Conv2d", a.get(6))?;
    let dtype = dtype_arg(&a, 7, "Conv2d")?;
    let k = 1.0 / ((inp * kernel.0 * kernel.1) as f64).sqrt();
    let mut ps = vec![init(vec![out, inp, kernel.0, kernel.1], Init::Uniform(k), dtype)?];
    if bias {
        ps.push(init(vec![out], Init::Uniform(k), dtype)?);
    }
    Ok(make(
        Kind::Conv2d {
            inp,
            out,
            kernel,
            stride,
            padding,
            bias,
            act,
            given: [kv, sv, pv],
        },
        dtype,
        ps,
    ))
}

pub fn f_maxpool2d(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("MaxPool2d", args, kw, 1, &["kernel", "stride", "padding"])?;
    let (kernel, kv) = pair(&a, 0, "MaxPool2d", "kernel", None, 1)?;
    let (stride, sv) = match a.opt(1) {
        Some(_) => pair(&a, 1, "MaxPool2d", "stride", None, 1)?,
        None => (kernel, Value::None),
    };
    let (padding, pv) = pair(&a, 2, "MaxPool2d", "padding", Some(0), 0)?;
    if padding.0 * 2 > kernel.0 || padding.1 * 2 > kernel.1 {
        return Err(err(
            ErrorKind::ValueError,
            format!(
                "MaxPool2d: padding must be at most half the kernel, got padding ({}, {}) for kernel ({}, {})",
                padding.0, padding.1, kernel.0, kernel.1
            ),
        ));
    }
    Ok(make(
        Kind::MaxPool2d {
            kernel,
            stride,
            padding,
            given: [kv, sv, pv],
        },
        DType::F32,
        vec![],
    ))
}

pub fn f_flatten(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("Flatten", args, kw, 0, &[])?;
    Ok(make(Kind::Flatten, DType::F32, vec![]))
}

pub fn f_dropout(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("Dropout", args, kw, 1, &["p"])?;
    let p = a.float(0)?;
    if !(0.0..1.0).contains(&p) {
        return Err(err(
            ErrorKind::ValueError,
            format!("Dropout: p must be in [0, 1), not {p}"),
        ));
    }
    Ok(make(Kind::Dropout { p }, DType::F32, vec![]))
}

pub fn f_embedding(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("Embedding", args, kw, 2, &["num", "dim", "dtype"])?;
    let num = size(&a, 0, "Embedding", "num")?;
    let dim = size(&a, 1, "Embedding", "dim")?;
    let dtype = dtype_arg(&a, 2, "Embedding")?;
    let w = init(vec![num, dim], Init::Normal, dtype)?;
    Ok(make(Kind::Embedding { num, dim }, dtype, vec![w]))
}

pub fn f_position_embedding(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("PositionEmbedding", args, kw, 2, &["max_len", "dim", "dtype"])?;
    let max_len = size(&a, 0, "PositionEmbedding", "max_len")?;
    let dim = size(&a, 1, "PositionEmbedding", "dim")?;
    let dtype = dtype_arg(&a, 2, "PositionEmbedding")?;
    let w = init(vec![max_len, dim], Init::Normal, dtype)?;
    Ok(make(Kind::PositionEmbedding { max_len, dim }, dtype, vec![w]))
}

pub fn f_layer_norm(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("LayerNorm", args, kw, 1, &["dim", "eps", "dtype"])?;
    let dim = size(&a, 0, "LayerNorm", "dim")?;
    let eps = a.float_opt(1)?.unwrap_or(1e-5);
    if eps.is_nan() || eps <= 0.0 {
        return Err(err(
            ErrorKind::ValueError,
            format!("LayerNorm: eps must be > 0, not {eps}"),
        ));
    }
    let dtype = dtype_arg(&a, 2, "LayerNorm")?;
    let ps = vec![
        init(vec![dim], Init::Ones, dtype)?,
        init(vec![dim], Init::Zeros, dtype)?,
    ];
    Ok(make(Kind::LayerNorm { dim, eps }, dtype, ps))
}

pub fn f_lstm(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new(
        "LSTM",
        args,
        kw,
        2,
        &["in_features", "hidden", "return_sequences", "dtype"],
    )?;
    let inp = size(&a, 0, "LSTM", "in_features")?;
    let hidden = size(&a, 1, "LSTM", "hidden")?;
    let seq = a.flag(2)?;
    let dtype = dtype_arg(&a, 3, "LSTM")?;
    let k = 1.0 / (hidden as f64).sqrt();
    let ps = vec![
        init(vec![4 * hidden, inp], Init::Uniform(k), dtype)?,
        init(vec![4 * hidden, hidden], Init::Uniform(k), dtype)?,
        init(vec![4 * hidden], Init::Uniform(k), dtype)?,
        init(vec![4 * hidden], Init::Uniform(k), dtype)?,
    ];
    Ok(make(Kind::Lstm { inp, hidden, seq }, dtype, ps))
}

pub fn f_attention(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new(
        "MultiHeadAttention",
        args,
        kw,
        2,
        &["dim", "heads", "causal", "bias", "dtype"],
    )?;
    let dim = size(&a, 0, "MultiHeadAttention", "dim")?;
    let heads = size(&a, 1, "MultiHeadAttention", "heads")?;
    if dim % heads != 0 {
        return Err(err(
            ErrorKind::ValueError,
            format!("MultiHeadAttention: dim {dim} is not divisible by heads {heads}"),
        ));
    }
    let causal = a.flag(2)?;
    let bias = a.bool_or(3, true)?;
    let dtype = dtype_arg(&a, 4, "MultiHeadAttention")?;
    let xav = (6.0 / (4 * dim) as f64).sqrt();
    let mut ps = vec![init(vec![3 * dim, dim], Init::Uniform(xav), dtype)?];
    if bias {
        ps.push(init(vec![3 * dim], Init::Zeros, dtype)?);
    }
    ps.push(init(vec![dim, dim], Init::Uniform(1.0 / (dim as f64).sqrt()), dtype)?);
    if bias {
        ps.push(init(vec![dim], Init::Zeros, dtype)?);
    }
    Ok(make(
        Kind::Attention {
            dim,
            heads,
            causal,
            bias,
        },
        dtype,
        ps,
    ))
}

/// A `Sequential` item or a `Residual`'s inner layer: a layer, a struct
/// model, or a function of one tensor.
fn layer_item(who: &str, v: &Value) -> VResult<Value> {
    let ok = layer_of(v).is_some()
        || matches!(v, Value::Func(_) | Value::Native(_) | Value::BoundMethod(_))
        || matches!(v, Value::Struct(s) if s.ty.methods.contains_key("forward"));
    if ok {
        Ok(v.clone())
    } else {
        Err(err(
            ErrorKind::TypeError,
            format!(
                "{who}: a layer, a model or a function of one tensor was expected, not {}",
                v.type_name()
            ),
        ))
    }
}

pub fn f_sequential(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("Sequential", args, kw, 1, &["layers"])?;
    let items: Vec<Value> = match a.req(0)? {
        Value::List(l) => l.items.read().clone(),
        Value::Tuple(t) => t.0.to_vec(),
        other => return Err(a.wrong(0, "a list of layers", other)),
    };
    let items = items
        .iter()
        .map(|v| layer_item("Sequential", v))
        .collect::<VResult<Vec<_>>>()?;
    Ok(make(Kind::Sequential(items), DType::F32, vec![]))
}

pub fn f_residual(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("Residual", args, kw, 1, &["layer"])?;
    let inner = layer_item("Residual", a.req(0)?)?;
    Ok(make(Kind::Residual(inner), DType::F32, vec![]))
}
