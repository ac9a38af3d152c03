//! `check_torch(device="auto", precision="fp64")` (LAYERS.md §7): every
//! layer kind built with fixed values, run forward and backward on Apsi's
//! engine and on the PyTorch backend, and compared.
//!
//! Each case's parameters and input come from a fixed generator (the
//! program's own generator is not touched). The backward pass is the
//! gradient of `(out * r).sum()` for a fixed `r`, with respect to the input
//! (when it is a float tensor) and every parameter. Errors are absolute,
//! relative to max(1, |Apsi's value|): the largest over all elements.

use crate::backend;
use crate::construct;
use crate::layer::{forward_value, tensor_arg};
use crate::model::{collect, Swap};
use crate::ops;
use crate::train::{Autocast, Mode, Rng};
use apsi_core::api::tensor::{backward, dtype_value, leaf, tensor_value, DType, Tensor};
use apsi_core::api::{err, record_type, Args, Caller, ErrorKind, Kwargs, NativeFnPtr, StructType, VResult, Value};
use std::sync::{Arc, OnceLock};

const WHO: &str = "check_torch";

fn check_type() -> Arc<StructType> {
    static T: OnceLock<Arc<StructType>> = OnceLock::new();
    T.get_or_init(|| {
        record_type(
            "TorchCheck",
            &[
                ("layer", "str"),
                ("forward", "float"),
                ("backward", "float"),
                ("tol", "float"),
                ("ok", "bool"),
            ],
        )
    })
    .clone()
}

/// The tolerance of a precision (LAYERS.md §7).
fn tolerance(precision: &str) -> f64 {
    match precision {
        "fp64" => 1e-10,
        "fp32" => 1e-4,
        "tf32" => 1e-2,
        _ => 5e-2,
    }
}

struct Case {
    name: &'static str,
    model: Value,
    input: Tensor,
}

fn build(f: NativeFnPtr, args: &[Value], kw: &[(&str, Value)]) -> VResult<Value> {
    let kw: Vec<(Arc<str>, Value)> = kw.iter().map(|(k, v)| ((*k).into(), v.clone())).collect();
    f(&mut apsi_core::api::NoCaller, args, &kw)
}

fn int(n: i64) -> Value {
    Value::Int(n)
}

fn floats(rng: &mut Rng, shape: &[usize], dtype: DType) -> VResult<Tensor> {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|_| rng.uniform() * 2.0 - 1.0).collect();
    ops::constant(v, shape.to_vec(), dtype)
}

/// Every layer kind of LAYERS.md, with an input it takes.
fn cases(dtype: DType, rng: &mut Rng) -> VResult<Vec<Case>> {
    let dt = dtype_value(dtype);
    let d = |extra: Vec<(&'static str, Value)>| -> Vec<(&'static str, Value)> {
        let mut kw = extra;
        kw.push(("dtype", dt.clone()));
        kw
    };
    let relu = crate::exported("relu");
    let gelu = crate::exported("gelu");
    let dense = |i: i64, o: i64, act: Option<&Value>| -> VResult<Value> {
        let mut kw = d(vec![]);
        if let Some(a) = act {
            kw.push(("activation", a.clone()));
        }
        build(construct::f_dense, &[int(i), int(o)], &kw)
    };
    let tokens = {
        let v: Vec<i64> = (0..15).map(|_| rng.below(10) as i64).collect();
        Tensor::from_vec(v, vec![3, 5])
    };
    let mut out = vec![
        Case {
            name: "Dense",
            model: dense(6, 5, None)?,
            input: floats(rng, &[4, 6], dtype)?,
        },
        Case {
            name: "Dense(relu)",
            model: dense(6, 5, Some(&relu))?,
            input: floats(rng, &[4, 6], dtype)?,
        },
        Case {
            name: "Dense(gelu)",
            model: dense(6, 5, Some(&gelu))?,
            input: floats(rng, &[4, 6], dtype)?,
        },
        Case {
            name: "Conv2d",
            model: build(
                construct::f_conv2d,
                &[int(2), int(3), int(3)],
                &d(vec![("stride", int(1)), ("padding", int(1))]),
            )?,
            input: floats(rng, &[2, 2, 6, 6], dtype)?,
        },
        Case {
            name: "Conv2d(stride 2)",
            model: build(
                construct::f_conv2d,
                &[int(2), int(4), int(3)],
                &d(vec![("stride", int(2)), ("padding", int(0))]),
            )?,
            input: floats(rng, &[2, 2, 7, 7], dtype)?,
        },
        Case {
            name: "MaxPool2d",
            model: build(construct::f_maxpool2d, &[int(2)], &[])?,
            input: floats(rng, &[2, 3, 6, 6], dtype)?,
        },
        Case {
            name: "Flatten",
            model: build(construct::f_flatten, &[], &[])?,
            input: floats(rng, &[2, 3, 4], dtype)?,
        },
        Case {
            name: "Dropout",
            model: build(construct::f_dropout, &[Value::Float(0.5)], &[])?,
            input: floats(rng, &[4, 6], dtype)?,
        },
        Case {
            name: "Embedding",
            model: build(construct::f_embedding, &[int(10), int(4)], &d(vec![]))?,
            input: tokens,
        },
        Case {
            name: "PositionEmbedding",
            model: build(construct::f_position_embedding, &[int(8), int(4)], &d(vec![]))?,
            input: floats(rng, &[2, 5, 4], dtype)?,
        },
        Case {
            name: "LayerNorm",
            model: build(construct::f_layer_norm, &[int(6)], &d(vec![]))?,
            input: floats(rng, &[4, 6], dtype)?,
        },
        Case {
            name: "LSTM",
            model: build(construct::f_lstm, &[int(3), int(4)], &d(vec![]))?,
            input: floats(rng, &[2, 5, 3], dtype)?,
        },
        Case {
            name: "LSTM(sequences)",
            model: build(
                construct::f_lstm,
                &[int(3), int(4)],
                &d(vec![("return_sequences", Value::Bool(true))]),
            )?,
            input: floats(rng, &[2, 5, 3], dtype)?,
        },
        Case {
            name: "MultiHeadAttention",
            model: build(construct::f_attention, &[int(8), int(2)], &d(vec![]))?,
            input: floats(rng, &[2, 5, 8], dtype)?,
        },
        Case {
            name: "MultiHeadAttention(causal)",
            model: build(
                construct::f_attention,
                &[int(8), int(2)],
                &d(vec![("causal", Value::Bool(true))]),
            )?,
            input: floats(rng, &[2, 5, 8], dtype)?,
        },
        Case {
            name: "Residual",
            model: build(construct::f_residual, &[dense(6, 6, Some(&relu))?], &[])?,
            input: floats(rng, &[4, 6], dtype)?,
        },
    ];
    let seq = build(
        construct::f_sequential,
        &[Value::list(vec![
            dense(6, 8, Some(&relu))?,
            relu.clone(),
            dense(8, 3, None)?,
        ])],
        &[],
    )?;
    out.push(Case {
        name: "Sequential",
        model: seq,
        input: floats(rng, &[4, 6], dtype)?,
    });
    // Fixed parameter values, not the constructors' random ones.
    for c in &out {
        for p in collect(&c.model)? {
            let t = p.get()?;
            let v: Vec<f64> = (0..t.size()).map(|_| (rng.uniform() * 2.0 - 1.0) * 0.5).collect();
            ops::write_f64(&t, &v)?;
        }
    }
    Ok(out)
}

/// Apsi's side of a case.
struct ApsiSide {
    out: Tensor,
    /// The cotangent, drawn in the output's shape.
    r: Tensor,
    /// The gradients of `(out * r).sum()` with respect to the input (for
    /// a float input) and to each parameter.
    grad_input: Option<Tensor>,
    grad_params: Vec<Option<Tensor>>,
}

fn apsi_side(
    c: &mut dyn Caller,
    case: &Case,
    rng: &mut Rng,
    dtype: DType,
    autocast: Option<DType>,
) -> VResult<ApsiSide> {
    let params = collect(&case.model)?;
    let current: Vec<Tensor> = params.iter().map(|p| p.get()).collect::<VResult<_>>()?;
    let leaves: Vec<Tensor> = current.iter().map(leaf).collect();
    let float_in = case.input.dtype.is_float();
    let x = if float_in {
        leaf(&case.input)
    } else {
        case.input.clone()
    };
    let out = {
        let _swap = Swap::new(&params, &leaves)?;
        let _mode = Mode::inference();
        let _cast = Autocast::new(autocast);
        forward_value(c, &case.model, x.clone(), None)?
    };
    let r = floats(rng, out.shape(), dtype)?;
    let total = ops::sum_all(&ops::mul(&out, &r)?)?;
    let mut wrt = Vec::with_capacity(leaves.len() + 1);
    if float_in {
        wrt.push(x);
    }
    wrt.extend(leaves.iter().cloned());
    let mut grads = backward(&total, &wrt, false)?;
    let grad_input = if float_in { grads.remove(0) } else { None };
    Ok(ApsiSide {
        out: ops::detach(&out),
        r,
        grad_input,
        grad_params: grads,
    })
}

/// One `TorchCheck` row.
fn row(c: &mut dyn Caller, layer: &str, forward: f64, backward: f64, tol: f64, ok: bool) -> VResult<Value> {
    let fields = [
        Value::str(layer),
        Value::Float(forward),
        Value::Float(backward),
        Value::Float(tol),
        Value::Bool(ok),
    ];
    c.call(&Value::StructType(check_type()), &fields, &[])
}

/// The largest error of `got` against `want`, relative to max(1, |want|).
fn max_error(want: &[f64], got: &[f64]) -> f64 {
    if want.len() != got.len() {
        return f64::INFINITY;
    }
    want.iter()
        .zip(got)
        .map(|(w, g)| {
            let e = (w - g).abs() / w.abs().max(1.0);
            if e.is_nan() {
                f64::INFINITY
            } else {
                e
            }
        })
        .fold(0.0, f64::max)
}

fn values_of(c: &mut dyn Caller, v: &Value) -> VResult<Option<Vec<f64>>> {
    match v {
        Value::None => Ok(None),
        other => Ok(Some(ops::values(&tensor_arg(c, WHO, other)?))),
    }
}

pub fn f_check_torch(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new(WHO, args, kw, 0, &["device", "precision"])?;
    let device = match a.opt(0) {
        None | Some(Value::None) => "auto".to_string(),
        Some(Value::Str(s)) => s.as_str().to_string(),
        Some(other) => return Err(a.wrong(0, "a device name such as \"cpu\" or \"auto\"", other)),
    };
    let precision = match a.opt(1) {
        // `none` is fp64 here: the tightest comparison.
        v @ (None | Some(Value::None) | Some(Value::Str(_))) => crate::fit::precision_name(WHO, v, DType::F64)?,
        Some(other) => return Err(a.wrong(1, "a precision name such as \"fp64\"", other)),
    };
    let driver = backend::torch(WHO)?;
    let dtype = if precision == "fp64" { DType::F64 } else { DType::F32 };
    let tol = tolerance(&precision);
    // Mixed precision on both sides: Apsi rounds matmul and convolution
    // operands as `fit(…, precision=)` does.
    let autocast = match precision.as_str() {
        "bf16" => Some(DType::BF16),
        "fp16" => Some(DType::F16),
        _ => None,
    };
    let mut rng = Rng::new(20_251_205);
    let cases = cases(dtype, &mut rng)?;
    let mut rows: Vec<Value> = Vec::with_capacity(cases.len());
    let mut table: Vec<[String; 5]> = vec![[
        "layer".into(),
        "forward".into(),
        "backward".into(),
        "tol".into(),
        "".into(),
    ]];
    let (mut agree, mut version, mut on) = (0usize, String::new(), device.clone());
    for case in &cases {
        let params = collect(&case.model)?;
        let ApsiSide {
            out,
            r,
            grad_input: gx,
            grad_params: gp,
        } = apsi_side(c, case, &mut rng, dtype, autocast)?;
        let mut args = crate::torch::model_args(WHO, &case.model)?;
        args.extend([
            tensor_value(case.input.clone()),
            tensor_value(r),
            crate::torch::check_spec(&device, &precision)?,
        ]);
        let reply = driver.call("check", args);
        // A layer PyTorch cannot run this way is a failed row, not the end of the check.
        let reply = match reply {
            Ok(v) => v,
            Err(e) if e.kind == ErrorKind::PythonError => {
                table.push([
                    case.name.to_string(),
                    "error".into(),
                    "error".into(),
                    format!("{tol:.0e}"),
                    format!("✗ {}", e.message.lines().next().unwrap_or("")),
                ]);
                rows.push(row(c, case.name, f64::INFINITY, f64::INFINITY, tol, false)?);
                continue;
            }
            Err(e) => return Err(e),
        };
        let parts = crate::torch::items(&reply);
        let [t_out, t_gx, t_gp, Value::Str(dev), Value::Str(ver)] = parts.as_slice() else {
            return Err(err(
                ErrorKind::PythonError,
                "the PyTorch backend's check answered in an unexpected form",
            ));
        };
        on = dev.as_str().to_string();
        version = ver.as_str().to_string();
        let t_out = values_of(c, t_out)?.unwrap_or_default();
        let forward = max_error(&ops::values(&out), &t_out);
        let mut bwd: f64 = 0.0;
        if let (Some(g), Some(tg)) = (&gx, values_of(c, t_gx)?) {
            bwd = bwd.max(max_error(&ops::values(g), &tg));
        }
        let t_pairs = crate::torch::named(t_gp);
        for (p, g) in params.iter().zip(&gp) {
            let theirs = match t_pairs.iter().find(|(n, _)| *n == p.name) {
                Some((_, v)) => values_of(c, v)?,
                None => None,
            };
            let e = match (g, theirs) {
                (Some(g), Some(t)) => max_error(&ops::values(g), &t),
                (None, None) => 0.0,
                // A gradient on one side only is compared with zeros.
                (Some(g), None) => max_error(&ops::values(g), &vec![0.0; g.size()]),
                (None, Some(t)) => max_error(&vec![0.0; t.len()], &t),
            };
            bwd = bwd.max(e);
        }
        let ok = forward <= tol && bwd <= tol;
        agree += ok as usize;
        table.push([
            case.name.to_string(),
            format!("{forward:.1e}"),
            format!("{bwd:.1e}"),
            format!("{tol:.0e}"),
            if ok { "✓" } else { "✗" }.to_string(),
        ]);
        rows.push(row(c, case.name, forward, bwd, tol, ok)?);
    }
    use crate::table::{lines, Align};
    let mut text = String::new();
    for line in lines(
        &table,
        &[Align::Left, Align::Right, Align::Right, Align::Right, Align::Left],
    ) {
        text.push_str(&line);
        text.push('\n');
    }
    text.push_str(&format!(
        "torch {version} on {on}, {precision}: {agree}/{} layers agree\n",
        cases.len()
    ));
    c.write_out(&text)?;
    Ok(Value::list(rows))
}
