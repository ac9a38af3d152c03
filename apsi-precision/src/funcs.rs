//! The functions `use precision` exports.

use crate::object::{as_qtensor, qtensor_value};
use crate::quant::{self, Quantized};
use apsi_core::api::tensor::codec;
use apsi_core::api::tensor::{as_dtype, DType};
use apsi_core::api::tensor::{as_tensor, tensor_value, Tensor};
use apsi_core::api::tensor::{binary, Arg};
use apsi_core::api::tensor::{record, Op};
use apsi_core::api::Args;
use apsi_core::api::BinOp;
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, record_type, Caller, Kwargs, NativeFn, StructType, VResult, Value};
use std::sync::{Arc, OnceLock};

fn fmt_arg(a: &Args, i: usize) -> VResult<DType> {
    let v = a.req(i)?;
    as_dtype(v).ok_or_else(|| a.wrong(i, "a number format (bf16, fp8, fp4, int8, …)", v))
}

fn tensor_arg(a: &Args, i: usize) -> VResult<Tensor> {
    let v = a.req(i)?;
    match v {
        Value::Float(f) => Ok(Tensor::from_vec(vec![*f], vec![])),
        Value::Int(n) => Ok(Tensor::from_vec(vec![*n as f64], vec![])),
        _ => as_tensor(v).ok_or_else(|| a.wrong(i, "a tensor", v)),
    }
}

/// `quantize(x, fmt, axis=none)`.
pub fn quantize(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("quantize", args, kw, &["x", "fmt", "axis"])?;
    let x = tensor_arg(&a, 0)?;
    let fmt = fmt_arg(&a, 1)?;
    let axis = quant::norm_axis(a.int_opt(2)?, x.ndim())?;
    Ok(qtensor_value(quant::quantize(&x, fmt, axis)?))
}

fn qtensor_arg<'a>(a: &Args<'a>, i: usize) -> VResult<&'a Quantized> {
    let v = a.req(i)?;
    as_qtensor(v).ok_or_else(|| a.wrong(i, "a QTensor (from quantize)", v))
}

/// `dequantize(q)` → f32 tensor.
pub fn dequantize(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("dequantize", args, kw, &["q"])?;
    Ok(tensor_value(quant::dequantize(qtensor_arg(&a, 0)?)))
}

/// `round_to(x, fmt)`: nearest values of fmt, x's dtype kept, straight-through gradient.
pub fn round_to(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("round_to", args, kw, &["x", "fmt"])?;
    let fmt = fmt_arg(&a, 1)?;
    match a.req(0)? {
        Value::Float(f) => return Ok(Value::Float(codec::decode(fmt, codec::encode_f64(fmt, *f)) as f64)),
        Value::Int(n) => {
            return Ok(Value::Float(
                codec::decode(fmt, codec::encode_f64(fmt, *n as f64)) as f64
            ))
        }
        _ => {}
    }
    let x = tensor_arg(&a, 0)?;
    let mut r = x.astype(fmt)?.astype(x.dtype)?;
    if x.node.is_some() {
        // d round_to(x) / dx = 1: the result stands for x on the tape.
        r.node = record(Op::Alias(x.clone()), &r);
    }
    Ok(tensor_value(r))
}

/// One operand of `qmatmul`: the code values and the scale factored out of
/// the product (`None`: the operand was dequantized, its values are real).
fn mm_operand(v: &Value, left: bool) -> VResult<(Tensor, Option<Tensor>)> {
    if let Some(q) = as_qtensor(v) {
        // Scales factor out of the sum over k when they are constant along k:
        // per tensor, per row of the left operand, per column of the right.
        let factorable = q.zero_points.is_none()
            && q.codes.ndim() == 2
            && match q.axis {
                None => true,
                Some(ax) => ax == if left { 0 } else { 1 },
            };
        if factorable {
            return Ok((quant::code_values(q), Some(q.scales.clone())));
        }
        return Ok((quant::dequantize(q), None));
    }
    match as_tensor(v) {
        Some(t) => Ok((Arg::T(t).to_tensor(DType::F32)?, None)),
        None => Err(err(
            ErrorKind::TypeError,
            format!("qmatmul() operands must be QTensors or tensors, not {}", v.type_name()),
        )),
    }
}

/// `qmatmul(a, b)`: products of codes (exact in f32), f32 accumulation, then the scales.
pub fn qmatmul(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("qmatmul", args, kw, &["a", "b"])?;
    let (x, sx) = mm_operand(a.req(0)?, true)?;
    let (y, sy) = mm_operand(a.req(1)?, false)?;
    let mut r = apsi_core::api::tensor::matmul(&x, &y)?;
    for s in [sx, sy].into_iter().flatten() {
        r = binary(BinOp::Mul, &Arg::T(r), &Arg::T(s))?;
    }
    Ok(tensor_value(r))
}

fn convert(v: &Value, fmt: DType) -> VResult<Value> {
    if let Some(t) = as_tensor(v) {
        return Ok(tensor_value(Arg::T(t).to_tensor(fmt)?));
    }
    Ok(match v {
        Value::List(l) => Value::list(
            l.items
                .read()
                .iter()
                .map(|x| convert(x, fmt))
                .collect::<VResult<Vec<_>>>()?,
        ),
        Value::Tuple(t) => Value::tuple(t.0.iter().map(|x| convert(x, fmt)).collect::<VResult<Vec<_>>>()?),
        other => other.clone(),
    })
}

/// `@precision(fmt)`: a decorator converting every tensor argument and result to fmt.
pub fn precision(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("precision", args, kw, &["fmt"])?;
    let fmt = fmt_arg(&a, 0)?;
    let deco = move |_c: &mut dyn Caller, args: &[Value], kw: Kwargs| -> VResult<Value> {
        let a = Args::optional("precision(fmt)", args, kw, &["f"])?;
        let f = a.req(0)?.clone();
        let name = format!("precision({})", fmt.name());
        let wrapped = move |c: &mut dyn Caller, args: &[Value], kw: Kwargs| -> VResult<Value> {
            let args: Vec<Value> = args.iter().map(|v| convert(v, fmt)).collect::<VResult<_>>()?;
            let kw: Vec<_> = kw
                .iter()
                .map(|(k, v)| Ok((k.clone(), convert(v, fmt)?)))
                .collect::<VResult<_>>()?;
            let r = c.call(&f, &args, &kw)?;
            convert(&r, fmt)
        };
        Ok(Value::Native(Arc::new(NativeFn::closure(&name, Box::new(wrapped)))))
    };
    Ok(Value::Native(Arc::new(NativeFn::closure("precision", Box::new(deco)))))
}

fn struct_type(cell: &'static OnceLock<Arc<StructType>>, name: &str, fields: &[(&str, &str)]) -> Arc<StructType> {
    cell.get_or_init(|| record_type(name, fields)).clone()
}

/// An instance of `ty` (built by calling the type, as a program would).
fn make_struct(c: &mut dyn Caller, ty: Arc<StructType>, vals: Vec<Value>) -> VResult<Value> {
    c.call(&Value::StructType(ty), &vals, &[])
}

/// `quant_error(x, fmt, axis=none)` → `QuantError(max_abs, rms, rel_rms, sqnr_db)`.
pub fn quant_error(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    static T: OnceLock<Arc<StructType>> = OnceLock::new();
    let a = Args::optional("quant_error", args, kw, &["x", "fmt", "axis"])?;
    let x = tensor_arg(&a, 0)?;
    let fmt = fmt_arg(&a, 1)?;
    let axis = quant::norm_axis(a.int_opt(2)?, x.ndim())?;
    let (m, r, rel, s) = quant::error_stats(&x, fmt, axis)?;
    let ty = struct_type(
        &T,
        "QuantError",
        &[
            ("max_abs", "float"),
            ("rms", "float"),
            ("rel_rms", "float"),
            ("sqnr_db", "float"),
        ],
    );
    make_struct(
        c,
        ty,
        vec![Value::Float(m), Value::Float(r), Value::Float(rel), Value::Float(s)],
    )
}

/// `format_info(fmt)` → `FormatInfo(name, bits, max, min_normal, min_subnormal, eps, has_inf, has_nan)`.
pub fn format_info(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    static T: OnceLock<Arc<StructType>> = OnceLock::new();
    let a = Args::optional("format_info", args, kw, &["fmt"])?;
    let i = codec::info(fmt_arg(&a, 0)?);
    let ty = struct_type(
        &T,
        "FormatInfo",
        &[
            ("name", "str"),
            ("bits", "int"),
            ("max", "float"),
            ("min_normal", "float"),
            ("min_subnormal", "float"),
            ("eps", "float"),
            ("has_inf", "bool"),
            ("has_nan", "bool"),
        ],
    );
    make_struct(
        c,
        ty,
        vec![
            Value::str(i.name),
            Value::Int(i.bits as i64),
            Value::Float(i.max),
            Value::Float(i.min_normal),
            Value::Float(i.min_subnormal),
            Value::Float(i.eps),
            Value::Bool(i.has_inf),
            Value::Bool(i.has_nan),
        ],
    )
}

/// `nbytes(x)`: real bytes of a tensor, or of a QTensor's codes, scales and zero points.
pub fn nbytes(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("nbytes", args, kw, &["x"])?;
    let v = a.req(0)?;
    if let Some(q) = as_qtensor(v) {
        return Ok(Value::Int(q.nbytes() as i64));
    }
    match as_tensor(v) {
        Some(t) => Ok(Value::Int(t.nbytes() as i64)),
        None => Err(a.wrong(0, "a tensor or QTensor", v)),
    }
}
