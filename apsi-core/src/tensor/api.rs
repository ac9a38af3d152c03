//! The prelude functions of §7: constructors, tensor functions, `grad`.

use super::arith::{self, Arg};
use super::autodiff;
use super::core::Tensor;
use super::dtype::{dtype_value, DType, Kind};
use super::layout::checked_size;
use super::object::{as_tensor, result_value, tensor_value};
use super::reduce::{self, RKind};
use super::shape;
use crate::builtins::Args;
use crate::error::ErrorKind;
use crate::module::ModuleBuilder;
use crate::syntax::ast::BinOp;
use crate::value::{err, Caller, Kwargs, NativeFn, NativeFnPtr, VResult, Value};
use std::sync::Arc;

/// Adds the tensor names to a module (the prelude).
pub fn register(mut b: ModuleBuilder) -> ModuleBuilder {
    keep_big_buffers();
    let fns: &[(&str, NativeFnPtr)] = &[
        ("tensor", f_tensor),
        ("Tensor", f_tensor),
        ("zeros", f_zeros),
        ("ones", f_ones),
        ("full", f_full),
        ("arange", f_arange),
        ("linspace", f_linspace),
        ("eye", f_eye),
        ("rand", f_rand),
        ("randn", f_randn),
        ("seed", f_seed),
        ("concat", f_concat),
        ("stack", f_stack),
        ("matmul", f_matmul),
        ("dot", f_dot),
        ("outer", f_outer),
        ("norm", f_norm),
        ("softmax", f_softmax),
        ("softplus", f_softplus),
        ("logaddexp", f_logaddexp),
        ("roll", f_roll),
        ("bincount", f_bincount),
        ("index_add", f_index_add),
        ("where", f_where),
        ("clip", f_clip),
        ("grad", f_grad),
        ("value_and_grad", f_value_and_grad),
    ];
    for (name, f) in fns {
        b = b.function(name, *f);
    }
    // Method names that are also functions: `f(x, …)` is `x.f(…)`.
    for name in [
        "expand_dims",
        "squeeze",
        "transpose",
        "reshape",
        "flatten",
        "sort",
        "argsort",
        "cumsum",
        "mean",
        "std",
        "var",
        "prod",
        "argmax",
        "argmin",
        "astype",
    ] {
        let f = move |c: &mut dyn Caller, args: &[Value], kw: Kwargs| -> VResult<Value> {
            let x = args
                .first()
                .ok_or_else(|| err(ErrorKind::TypeError, format!("{name}() missing required argument 'x'")))?;
            let t = match as_tensor(x) {
                Some(_) => x.clone(),
                None => tensor_value(from_data(x, None)?),
            };
            let m = crate::ops::get_attr(&t, name)?;
            c.call(&m, &args[1..], kw)
        };
        b = b.constant(name, Value::Native(Arc::new(NativeFn::closure(name, Box::new(f)))));
    }
    for (name, d) in DType::prelude_names() {
        // `bool` stays the prelude's constructor (as `int` and `float` do);
        // `as_dtype` reads it as the bool dtype where a dtype is expected.
        if name == "bool" {
            continue;
        }
        b = b.constant(name, dtype_value(d));
    }
    b
}

/// Lets glibc reuse freed tensor buffers of up to 256 MiB from its heap
/// instead of mapping fresh pages for each one (a chain like `a * b + c`
/// on large tensors otherwise pays a page fault per 4 KiB of every result).
fn keep_big_buffers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: mallopt only changes allocator tuning parameters.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
        }
    });
}

/// Builds a tensor from nested lists/tuples of numbers (or tensors).
pub fn from_data(v: &Value, dtype: Option<DType>) -> VResult<Tensor> {
    if let Some(t) = as_tensor(v) {
        return match dtype {
            Some(d) => t.astype(d),
            None => Ok(t.contiguous()),
        };
    }
    let mut shape = Vec::new();
    let mut flat = Vec::new();
    let mut kind = Kind::Bool;
    walk(v, 0, &mut shape, &mut flat, &mut kind)?;
    if flat.is_empty() {
        // No elements to say otherwise: NumPy's default float.
        kind = Kind::Float;
    }
    let d = dtype.unwrap_or(match kind {
        Kind::Bool => DType::Bool,
        Kind::Int => DType::I64,
        Kind::Float => DType::F64,
    });
    let d = if d.is_narrow() { d } else { d.check_supported()? };
    Ok(match d.kind() {
        Kind::Float => Tensor::from_vec(flat.iter().map(|s| s.as_f64()).collect::<Vec<f64>>(), shape).cast(d)?,
        Kind::Int => Tensor::from_vec(flat.iter().map(|s| s.as_i64()).collect::<Vec<i64>>(), shape).cast(d)?,
        Kind::Bool => Tensor::from_vec(flat.iter().map(|s| s.as_f64() != 0.0).collect::<Vec<bool>>(), shape),
    })
}

#[derive(Clone, Copy)]
enum Num {
    B(bool),
    I(i64),
    F(f64),
}
impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::B(b) => b as u8 as f64,
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }
    fn as_i64(self) -> i64 {
        match self {
            Num::B(b) => b as i64,
            Num::I(i) => i,
            Num::F(f) => f as i64,
        }
    }
}

fn walk(v: &Value, depth: usize, shape: &mut Vec<usize>, flat: &mut Vec<Num>, kind: &mut Kind) -> VResult<()> {
    let ragged = || {
        err(
            ErrorKind::ShapeError,
            "tensor() data is ragged: nested lists must have equal lengths at each depth",
        )
    };
    let items: Option<Vec<Value>> = match v {
        Value::List(l) => Some(l.items.read().clone()),
        Value::Tuple(t) => Some(t.0.to_vec()),
        _ => None,
    };
    if let Some(items) = items {
        if depth == shape.len() {
            if depth > 0 && !flat.is_empty() {
                return Err(ragged());
            }
            shape.push(items.len());
        } else if shape.get(depth) != Some(&items.len()) {
            return Err(ragged());
        }
        for it in &items {
            walk(it, depth + 1, shape, flat, kind)?;
        }
        return Ok(());
    }
    if let Some(t) = as_tensor(v) {
        // A tensor inside a list: its elements, at this depth.
        let sub = t.shape().to_vec();
        if depth == shape.len() && (flat.is_empty() || depth == 0) {
            shape.extend_from_slice(&sub);
        } else if shape.get(depth..) != Some(&sub[..]) {
            return Err(ragged());
        }
        match t.dtype.kind() {
            Kind::Float => {
                *kind = Kind::Float;
                flat.extend(t.to_vec::<f64>().into_iter().map(Num::F));
            }
            Kind::Int => {
                *kind = (*kind).max(Kind::Int);
                flat.extend(t.to_vec::<i64>().into_iter().map(Num::I));
            }
            Kind::Bool => flat.extend(t.to_vec::<bool>().into_iter().map(Num::B)),
        }
        return Ok(());
    }
    if depth != shape.len() {
        return Err(ragged());
    }
    match v {
        Value::Bool(b) => flat.push(Num::B(*b)),
        Value::Int(i) => {
            *kind = (*kind).max(Kind::Int);
            flat.push(Num::I(*i))
        }
        Value::Float(f) => {
            *kind = Kind::Float;
            flat.push(Num::F(*f))
        }
        other => {
            return Err(err(
                ErrorKind::TypeError,
                format!(
                    "tensor() data must be numbers or nested lists of numbers, not {}",
                    other.type_name()
                ),
            ))
        }
    }
    Ok(())
}

fn f_tensor(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("tensor", args, kw, &["data", "dtype"])?;
    Ok(tensor_value(from_data(a.req(0)?, a.dtype_opt(1)?)?))
}

/// A shape argument: an int or a tuple/list of ints.
pub fn shape_of(v: &Value, name: &str) -> VResult<Vec<usize>> {
    let dims: Vec<Value> = match v {
        Value::Int(_) => vec![v.clone()],
        Value::Tuple(t) => t.0.to_vec(),
        Value::List(l) => l.items.read().clone(),
        other => {
            return Err(err(
                ErrorKind::TypeError,
                format!(
                    "{name}() shape must be an int or a tuple of ints, not {}",
                    other.type_name()
                ),
            ))
        }
    };
    let shape = dims
        .iter()
        .map(|d| match d {
            Value::Int(n) if *n >= 0 => Ok(*n as usize),
            Value::Int(n) => Err(err(
                ErrorKind::ValueError,
                format!("{name}() dimension {n} is negative"),
            )),
            other => Err(err(
                ErrorKind::TypeError,
                format!("{name}() dimensions must be ints, not {}", other.type_name()),
            )),
        })
        .collect::<VResult<Vec<usize>>>()?;
    checked_size(&shape)?;
    Ok(shape)
}

fn filled(name: &'static str, args: &[Value], kw: Kwargs, x: f64) -> VResult<Value> {
    let a = Args::optional(name, args, kw, &["shape", "dtype"])?;
    let shape = shape_of(a.req(0)?, name)?;
    Ok(tensor_value(Tensor::full(
        shape,
        x,
        a.dtype_opt(1)?.unwrap_or(DType::F64),
    )?))
}

fn f_zeros(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    filled("zeros", args, kw, 0.0)
}
fn f_ones(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    filled("ones", args, kw, 1.0)
}

fn f_full(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("full", args, kw, &["shape", "value", "dtype"])?;
    let shape = shape_of(a.req(0)?, "full")?;
    let v = a.req(1)?;
    let d = match (a.dtype_opt(2)?, v) {
        (Some(d), _) => d,
        (None, Value::Int(_)) => DType::I64,
        (None, Value::Bool(_)) => DType::Bool,
        _ => DType::F64,
    };
    let x = a.float_opt(1)?.unwrap_or(0.0);
    if let (Value::Int(i), Kind::Int) = (v, d.kind()) {
        let n = checked_size(&shape)?;
        return Ok(tensor_value(Tensor::from_vec(vec![*i; n], shape).cast(d)?));
    }
    Ok(tensor_value(Tensor::full(shape, x, d)?))
}

fn f_arange(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("arange", args, kw, &["start", "stop", "step", "dtype"])?;
    let (start, stop) = match a.opt(1) {
        Some(_) => (a.req(0)?.clone(), a.req(1)?.clone()),
        None => (Value::Int(0), a.req(0)?.clone()),
    };
    let step = a.opt(2).cloned().unwrap_or(Value::Int(1));
    let all_int = [&start, &stop, &step]
        .iter()
        .all(|v| matches!(v, Value::Int(_) | Value::Bool(_)));
    let d = a.dtype_opt(3)?.unwrap_or(if all_int { DType::I64 } else { DType::F64 });
    let f = |v: &Value| -> VResult<f64> {
        match v {
            Value::Int(i) => Ok(*i as f64),
            Value::Float(x) => Ok(*x),
            Value::Bool(b) => Ok(*b as u8 as f64),
            other => Err(err(
                ErrorKind::TypeError,
                format!("arange() bounds must be numbers, not {}", other.type_name()),
            )),
        }
    };
    let (s0, s1, st) = (f(&start)?, f(&stop)?, f(&step)?);
    if st == 0.0 {
        return Err(err(ErrorKind::ValueError, "arange() step must not be zero"));
    }
    let n = ((s1 - s0) / st).ceil().max(0.0);
    if !n.is_finite() || n > 1e10 {
        return Err(err(ErrorKind::ValueError, "arange() would make too many elements"));
    }
    let n = n as usize;
    super::layout::check_alloc(n, "arange()")?;
    if all_int && d.kind() == Kind::Int {
        let (i0, is) = (start_int(&start), start_int(&step));
        let v: Vec<i64> = (0..n as i64).map(|k| i0.wrapping_add(k.wrapping_mul(is))).collect();
        return Ok(tensor_value(Tensor::from_vec(v, vec![n]).cast(d)?));
    }
    let v: Vec<f64> = (0..n).map(|k| s0 + k as f64 * st).collect();
    Ok(tensor_value(Tensor::from_vec(v, vec![n]).cast(d)?))
}

fn start_int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::Bool(b) => *b as i64,
        _ => 0,
    }
}

fn f_linspace(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("linspace", args, kw, &["start", "stop", "n", "dtype"])?;
    let s0 = a
        .float_opt(0)?
        .ok_or_else(|| err(ErrorKind::TypeError, "linspace() missing required argument 'start'"))?;
    let s1 = a
        .float_opt(1)?
        .ok_or_else(|| err(ErrorKind::TypeError, "linspace() missing required argument 'stop'"))?;
    let n = a.int_opt(2)?.unwrap_or(50);
    if n < 0 {
        return Err(err(
            ErrorKind::ValueError,
            format!("linspace() n must be >= 0, not {n}"),
        ));
    }
    let n = n as usize;
    super::layout::check_alloc(n, "linspace()")?;
    let step = if n > 1 { (s1 - s0) / (n - 1) as f64 } else { 0.0 };
    let mut v: Vec<f64> = (0..n).map(|k| s0 + k as f64 * step).collect();
    if n > 1 {
        if let Some(last) = v.last_mut() {
            *last = s1;
        }
    }
    Ok(tensor_value(
        Tensor::from_vec(v, vec![n]).cast(a.dtype_opt(3)?.unwrap_or(DType::F64))?,
    ))
}

fn f_eye(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("eye", args, kw, &["n", "m", "dtype"])?;
    let n = a.int_opt(0)?.unwrap_or(0);
    let m = a.int_opt(1)?.unwrap_or(n);
    if n < 0 || m < 0 {
        return Err(err(ErrorKind::ValueError, "eye() sizes must be >= 0"));
    }
    let (n, m) = (n as usize, m as usize);
    checked_size(&[n, m])?;
    let mut v = vec![0f64; n * m];
    for i in 0..n.min(m) {
        v[i * m + i] = 1.0;
    }
    Ok(tensor_value(
        Tensor::from_vec(v, vec![n, m]).cast(a.dtype_opt(2)?.unwrap_or(DType::F64))?,
    ))
}

fn random(name: &'static str, args: &[Value], kw: Kwargs, normal: bool) -> VResult<Value> {
    let a = Args::optional(name, args, kw, &["shape", "dtype"])?;
    let shape = match a.opt(0) {
        Some(v) => shape_of(v, name)?,
        None => vec![],
    };
    let d = a.dtype_opt(1)?.unwrap_or(DType::F64);
    if !d.is_float() {
        return Err(err(
            ErrorKind::TypeError,
            format!("{name}() makes float tensors, not {}", d.name()),
        ));
    }
    let n = checked_size(&shape)?;
    let t = crate::with_dtype!(d, T => {
        let v: Vec<T> = if normal { super::random::normal_as(n) } else { super::random::uniform_as(n) };
        Tensor::from_vec(v, shape)
    }, other => {
        // Narrow formats: f32 draws rounded to the format.
        let v: Vec<f32> = if normal { super::random::normal_as(n) } else { super::random::uniform_as(n) };
        Tensor::from_vec(v, shape).astype(d)?
    });
    Ok(result_value(t))
}

fn f_rand(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    random("rand", args, kw, false)
}
fn f_randn(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    random("randn", args, kw, true)
}
fn f_seed(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("seed", args, kw, &["n"])?;
    let n = a
        .int_opt(0)?
        .ok_or_else(|| err(ErrorKind::TypeError, "seed() missing required argument 'n'"))?;
    super::random::seed(n as u64);
    Ok(Value::None)
}

fn tensors_of(v: &Value, name: &str) -> VResult<Vec<Tensor>> {
    let items: Vec<Value> = match v {
        Value::List(l) => l.items.read().clone(),
        Value::Tuple(t) => t.0.to_vec(),
        other => {
            return Err(err(
                ErrorKind::TypeError,
                format!("{name}() takes a list of tensors, not {}", other.type_name()),
            ))
        }
    };
    items
        .iter()
        .map(|x| match as_tensor(x) {
            Some(t) => Ok(t),
            None => from_data(x, None),
        })
        .collect()
}

fn f_concat(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("concat", args, kw, &["tensors", "axis"])?;
    let ts = tensors_of(a.req(0)?, "concat")?;
    Ok(tensor_value(shape::concat(&ts, a.int_opt(1)?.unwrap_or(0))?))
}

fn f_stack(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("stack", args, kw, &["tensors", "axis"])?;
    let ts = tensors_of(a.req(0)?, "stack")?;
    Ok(tensor_value(shape::stack(&ts, a.int_opt(1)?.unwrap_or(0))?))
}

fn tensor_arg(a: &Args, i: usize) -> VResult<Tensor> {
    let v = a.req(i)?;
    match as_tensor(v) {
        Some(t) => Ok(t),
        None => from_data(v, None),
    }
}

fn f_matmul(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("matmul", args, kw, &["a", "b"])?;
    Ok(result_value(super::matmul::matmul(
        &tensor_arg(&a, 0)?,
        &tensor_arg(&a, 1)?,
    )?))
}

fn f_dot(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("dot", args, kw, &["a", "b"])?;
    let (x, y) = (tensor_arg(&a, 0)?, tensor_arg(&a, 1)?);
    if x.ndim() == 0 || y.ndim() == 0 {
        return Ok(result_value(arith::binary(BinOp::Mul, &Arg::T(x), &Arg::T(y))?));
    }
    Ok(result_value(super::matmul::matmul(&x, &y)?))
}

fn f_outer(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("outer", args, kw, &["a", "b"])?;
    let (x, y) = (tensor_arg(&a, 0)?, tensor_arg(&a, 1)?);
    let xc = shape::reshape(&x, vec![x.size(), 1])?;
    let yr = shape::reshape(&y, vec![1, y.size()])?;
    Ok(tensor_value(arith::binary(BinOp::Mul, &Arg::T(xc), &Arg::T(yr))?))
}

fn f_norm(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("norm", args, kw, &["x", "axis", "keepdims"])?;
    let x = tensor_arg(&a, 0)?;
    Ok(result_value(norm_of(&x, a.axes(1)?.as_deref(), a.flag(2)?)?))
}

/// The 2-norm over `axes` (none: all), for `norm(x)` and `x.norm()`:
/// `sqrt(sum(x * x))`, ints as f64. Its gradient is `x / norm`, and 0 where
/// the norm is 0 (PyTorch's convention).
pub fn norm_of(x: &Tensor, axes: Option<&[i64]>, keepdims: bool) -> VResult<Tensor> {
    let x = if x.dtype.is_float() {
        x.clone()
    } else {
        Arg::T(x.clone()).to_tensor(DType::F64)?
    };
    let axes = reduce::resolve_axes(axes, x.ndim())?;
    let mut plain = x.clone();
    plain.node = None;
    let sq = arith::binary(BinOp::Mul, &Arg::T(plain.clone()), &Arg::T(plain))?;
    let s = reduce::reduce(&sq, &axes, keepdims, RKind::Sum)?;
    let mut r = arith::unary(arith::UFn::Sqrt, &s)?;
    if x.node.is_some() {
        r.node = autodiff::record(autodiff::Op::Norm(x, axes, keepdims, r.clone()), &r);
    }
    Ok(r)
}

fn f_softmax(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("softmax", args, kw, &["x", "axis"])?;
    let x = tensor_arg(&a, 0)?;
    let x = if x.dtype.is_float() {
        x
    } else {
        Arg::T(x).to_tensor(DType::F64)?
    };
    if x.ndim() == 0 {
        return Err(err(ErrorKind::ValueError, "softmax() of a 0-d tensor"));
    }
    let axis = super::layout::norm_axis(a.int_opt(1)?.unwrap_or(-1), x.ndim())?;
    Ok(tensor_value(super::fused::softmax(&x, axis)?))
}

fn f_softplus(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("softplus", args, kw, &["x", "beta", "threshold"])?;
    let x = tensor_arg(&a, 0)?;
    let beta = a.float_opt(1)?.unwrap_or(1.0);
    let threshold = a.float_opt(2)?.unwrap_or(20.0);
    Ok(result_value(arith::softplus(&x, beta, threshold)?))
}

fn operand(v: &Value) -> VResult<Arg> {
    match Arg::from_value(v) {
        Some(x) => Ok(x),
        None => Ok(Arg::T(from_data(v, None)?)),
    }
}

fn f_logaddexp(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("logaddexp", args, kw, &["a", "b"])?;
    Ok(result_value(arith::logaddexp(
        &operand(a.req(0)?)?,
        &operand(a.req(1)?)?,
    )?))
}

/// Ints from an int or a tuple/list of ints (`roll`'s shift and axis).
fn ints_of(a: &Args, i: usize) -> VResult<Vec<i64>> {
    let v = a.req(i)?;
    let items: Vec<Value> = match v {
        Value::Int(_) | Value::Bool(_) => vec![v.clone()],
        Value::Tuple(t) => t.0.to_vec(),
        Value::List(l) => l.items.read().clone(),
        other => return Err(a.wrong(i, "an int or a tuple of ints", other)),
    };
    items
        .iter()
        .map(|x| match x {
            Value::Int(n) => Ok(*n),
            Value::Bool(b) => Ok(*b as i64),
            other => Err(a.wrong(i, "an int or a tuple of ints", other)),
        })
        .collect()
}

fn f_roll(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("roll", args, kw, &["x", "shift", "axis"])?;
    let x = tensor_arg(&a, 0)?;
    let shifts = ints_of(&a, 1)?;
    let axes = match a.opt(2) {
        None => None,
        Some(_) => Some(ints_of(&a, 2)?),
    };
    Ok(tensor_value(shape::roll_axes(&x, &shifts, axes.as_deref())?))
}

fn f_bincount(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("bincount", args, kw, &["x", "weights", "minlength"])?;
    let x = tensor_arg(&a, 0)?;
    let w = match a.opt(1) {
        None => None,
        Some(_) => Some(tensor_arg(&a, 1)?),
    };
    let minlength = a.int_opt(2)?.unwrap_or(0);
    Ok(tensor_value(super::index::bincount(&x, w.as_ref(), minlength)?))
}

fn f_index_add(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("index_add", args, kw, &["x", "axis", "index", "source", "alpha"])?;
    let x = tensor_arg(&a, 0)?;
    let axis = a
        .int_opt(1)?
        .ok_or_else(|| err(ErrorKind::TypeError, "index_add() missing required argument 'axis'"))?;
    let index = tensor_arg(&a, 2)?;
    let source = tensor_arg(&a, 3)?;
    Ok(tensor_value(super::index::index_add(
        &x,
        axis,
        &index,
        &source,
        a.float_opt(4)?,
    )?))
}

fn f_where(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("where", args, kw, &["cond", "a", "b"])?;
    let c = tensor_arg(&a, 0)?;
    let arg = |v: &Value| -> VResult<Arg> {
        match Arg::from_value(v) {
            Some(x) => Ok(x),
            None => Ok(Arg::T(from_data(v, None)?)),
        }
    };
    Ok(result_value(arith::where_(&c, &arg(a.req(1)?)?, &arg(a.req(2)?)?)?))
}

fn f_clip(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::optional("clip", args, kw, &["x", "lo", "hi"])?;
    let x = tensor_arg(&a, 0)?;
    Ok(result_value(arith::clip(&x, a.float_opt(1)?, a.float_opt(2)?)?))
}

// ---- grad ----

/// One differentiated argument: its leaves and how to rebuild its gradient.
enum Shape {
    Number,
    Tensor,
    List(Vec<Shape>),
    Tuple(Vec<Shape>),
}

fn leafify(v: &Value, leaves: &mut Vec<(Tensor, bool)>) -> VResult<(Value, Shape)> {
    match v {
        Value::Float(_) | Value::Int(_) => {
            let x = match v {
                Value::Float(f) => *f,
                Value::Int(i) => *i as f64,
                _ => 0.0,
            };
            let t = Tensor::scalar(x);
            let l = autodiff::leaf(&t);
            leaves.push((l.clone(), false));
            Ok((tensor_value(l), Shape::Number))
        }
        Value::List(items) => {
            let items = items.items.read().clone();
            let mut vals = Vec::new();
            let mut shapes = Vec::new();
            for it in &items {
                let (v, s) = leafify(it, leaves)?;
                vals.push(v);
                shapes.push(s);
            }
            Ok((Value::list(vals), Shape::List(shapes)))
        }
        Value::Tuple(items) => {
            let mut vals = Vec::new();
            let mut shapes = Vec::new();
            for it in items.0.iter() {
                let (v, s) = leafify(it, leaves)?;
                vals.push(v);
                shapes.push(s);
            }
            Ok((Value::tuple(vals), Shape::Tuple(shapes)))
        }
        other => match as_tensor(other) {
            Some(t) if t.dtype.is_float() => {
                let was = t.node.is_some();
                let l = autodiff::leaf(&t);
                leaves.push((l.clone(), was));
                Ok((tensor_value(l), Shape::Tensor))
            }
            Some(t) => Err(err(
                ErrorKind::TypeError,
                format!(
                    "grad() differentiates float inputs; this one is a {} tensor (use .astype(f64))",
                    t.dtype.name()
                ),
            )),
            None => Err(err(
                ErrorKind::TypeError,
                format!(
                    "grad() differentiates floats, float tensors and lists/tuples of them, not {}",
                    other.type_name()
                ),
            )),
        },
    }
}

fn rebuild(shape: &Shape, grads: &mut std::vec::IntoIter<(Tensor, bool)>) -> Value {
    match shape {
        Shape::Number => match grads.next() {
            Some((g, _)) if g.node.is_none() => Value::Float(g.first_f64()),
            Some((g, _)) => tensor_value(g),
            None => Value::Float(0.0),
        },
        Shape::Tensor => match grads.next() {
            Some((g, _)) => tensor_value(g),
            None => Value::None,
        },
        Shape::List(items) => Value::list(items.iter().map(|s| rebuild(s, grads)).collect()),
        Shape::Tuple(items) => Value::tuple(items.iter().map(|s| rebuild(s, grads)).collect()),
    }
}

fn parse_argnums(v: Option<&Value>) -> VResult<(Vec<usize>, bool)> {
    match v {
        None | Some(Value::None) => Ok((vec![0], false)),
        Some(Value::Int(i)) if *i >= 0 => Ok((vec![*i as usize], false)),
        Some(Value::Tuple(t)) => {
            let v =
                t.0.iter()
                    .map(|x| match x {
                        Value::Int(i) if *i >= 0 => Ok(*i as usize),
                        _ => Err(err(
                            ErrorKind::TypeError,
                            "grad() argnums must be a non-negative int or a tuple of them",
                        )),
                    })
                    .collect::<VResult<Vec<usize>>>()?;
            Ok((v, true))
        }
        Some(_) => Err(err(
            ErrorKind::TypeError,
            "grad() argnums must be a non-negative int or a tuple of them",
        )),
    }
}

fn make_grad(args: &[Value], kw: Kwargs, with_value: bool) -> VResult<Value> {
    let name = if with_value { "value_and_grad" } else { "grad" };
    let a = Args::optional(
        if with_value { "value_and_grad" } else { "grad" },
        args,
        kw,
        &["f", "argnums"],
    )?;
    let f = a.req(0)?.clone();
    if !matches!(f, Value::Func(_) | Value::Native(_) | Value::BoundMethod(_)) {
        return Err(err(
            ErrorKind::TypeError,
            format!("{name}() needs a function, not {}", f.type_name()),
        ));
    }
    let (argnums, many) = parse_argnums(a.opt(1))?;
    let imp = move |c: &mut dyn Caller, call_args: &[Value], call_kw: Kwargs| -> VResult<Value> {
        let mut new_args = call_args.to_vec();
        let mut leaves: Vec<(Tensor, bool)> = Vec::new();
        let mut shapes = Vec::new();
        for &i in &argnums {
            let v = call_args.get(i).ok_or_else(|| {
                err(
                    ErrorKind::TypeError,
                    format!(
                        "{name}(): argnums names argument {i} but the function got {} argument(s)",
                        call_args.len()
                    ),
                )
            })?;
            let start = leaves.len();
            let (nv, s) = leafify(v, &mut leaves)?;
            let _ = start;
            new_args[i] = nv;
            shapes.push(s);
        }
        let out = c.call(&f, &new_args, call_kw)?;
        let out_t = match &out {
            Value::Float(x) => Tensor::scalar(*x),
            Value::Int(i) => Tensor::scalar(*i as f64),
            other => match as_tensor(other) {
                Some(t) if t.size() == 1 && t.dtype.is_float() => t,
                Some(t) if t.size() == 1 => Arg::T(t).to_tensor(DType::F64)?,
                Some(t) => return Err(autodiff::not_scalar(t.shape())),
                None => {
                    return Err(err(
                        ErrorKind::TypeError,
                        format!(
                            "{name}() needs a function that returns a float or a 1-element tensor; it returned {}",
                            other.type_name()
                        ),
                    ))
                }
            },
        };
        let higher = leaves.iter().any(|(_, was)| *was);
        let leaf_ts: Vec<Tensor> = leaves.iter().map(|(t, _)| t.clone()).collect();
        let gs = autodiff::backward(&out_t, &leaf_ts, higher)?;
        let mut grads = Vec::new();
        for ((l, was), g) in leaves.iter().zip(gs) {
            let mut g = match g {
                Some(g) => g,
                None => Tensor::full(l.shape().to_vec(), 0.0, l.dtype)?,
            };
            if g.shape() != l.shape() {
                g = shape::reshape(&g, l.shape().to_vec())?;
            }
            if g.dtype != l.dtype {
                g = Arg::T(g).to_tensor(l.dtype)?;
            }
            if !*was {
                g.node = None;
                g = g.dense();
            }
            grads.push((g, *was));
        }
        let mut it = grads.into_iter();
        let gvals: Vec<Value> = shapes.iter().map(|s| rebuild(s, &mut it)).collect();
        let gv = if many {
            Value::tuple(gvals)
        } else {
            gvals.into_iter().next().unwrap_or(Value::None)
        };
        if !with_value {
            return Ok(gv);
        }
        let value = match as_tensor(&out) {
            Some(mut t) => {
                if !higher {
                    t.node = None;
                }
                result_value(t)
            }
            None => out.clone(),
        };
        Ok(Value::tuple(vec![value, gv]))
    };
    Ok(Value::Native(Arc::new(NativeFn::closure(name, Box::new(imp)))))
}

fn f_grad(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    make_grad(args, kw, false)
}
fn f_value_and_grad(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    make_grad(args, kw, true)
}
