//! Tensors as Apsi values: `Value::Object` holding a [`TensorObj`], its
//! attributes, methods and the operator hooks of `ops` (`__add__`, …).

use super::arith::{self, Arg, UFn};
use super::core::Tensor;
use super::dtype::{as_dtype, dtype_value, DType, Kind};
use super::layout::shape_str;
use super::reduce::{self, RKind};
use super::shape;
use crate::builtins::Args;
use crate::error::ErrorKind;
use crate::syntax::ast::{BinOp, CmpOp};
use crate::value::{err, ApsiObject, BoundMethod, Caller, Exc, Kwargs, NativeFn, NativeFnPtr, ObjBox, VResult, Value};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

pub struct TensorObj(pub Tensor);

pub fn tensor_value(t: Tensor) -> Value {
    Value::Object(Arc::new(ObjBox(Box::new(TensorObj(t)))))
}

/// A 0-d untraced result becomes a plain number (as NumPy's scalars print);
/// anything else stays a tensor.
pub fn result_value(t: Tensor) -> Value {
    if t.ndim() == 0 && t.node.is_none() {
        scalar_value(&t)
    } else {
        tensor_value(t)
    }
}

/// The first element of `t` as a plain number of its kind.
pub fn scalar_value(t: &Tensor) -> Value {
    match t.dtype.kind() {
        Kind::Float => Value::Float(t.first_f64()),
        Kind::Int => Value::Int(t.with_slice::<i64, _>(|s, l| s.get(l.offset).copied().unwrap_or(0))),
        Kind::Bool => Value::Bool(t.with_slice::<bool, _>(|s, l| s.get(l.offset).copied().unwrap_or(false))),
    }
}

pub fn as_tensor(v: &Value) -> Option<Tensor> {
    match v {
        Value::Object(o) => o.0.as_any().downcast_ref::<TensorObj>().map(|t| t.0.clone()),
        _ => None,
    }
}

fn this(args: &[Value]) -> VResult<Tensor> {
    args.first()
        .and_then(as_tensor)
        .ok_or_else(|| err(ErrorKind::TypeError, "a tensor method was called without its tensor"))
}

impl ApsiObject for TensorObj {
    fn type_name(&self) -> &str {
        "Tensor"
    }
    fn to_str(&self) -> String {
        super::print::tensor_str(&self.0)
    }
    fn truthy(&self) -> VResult<bool> {
        match self.0.size() {
            1 => Ok(self.0.first_f64() != 0.0),
            0 => Err(err(
                ErrorKind::ValueError,
                "the truth value of an empty tensor is ambiguous; use .size or .any()",
            )),
            _ => Err(err(
                ErrorKind::ValueError,
                "the truth value of a tensor with more than one element is ambiguous; use .any() or .all()",
            )),
        }
    }
    fn get_attr(&self, this: &Value, name: &str) -> Option<VResult<Value>> {
        let t = &self.0;
        let v = match name {
            "shape" => Value::tuple(t.shape().iter().map(|&d| Value::Int(d as i64)).collect()),
            "ndim" => Value::Int(t.ndim() as i64),
            "size" => Value::Int(t.size() as i64),
            "dtype" => dtype_value(t.dtype),
            "nbytes" => Value::Int(t.nbytes() as i64),
            "T" => return Some(shape::permute(t, &shape::reversed_axes(t.ndim())).map(tensor_value)),
            _ => {
                let f = methods().get(name)?;
                return Some(Ok(Value::BoundMethod(Arc::new(BoundMethod {
                    receiver: this.clone(),
                    func: f.clone(),
                }))));
            }
        };
        Some(Ok(v))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The tensor parameters of the one argument parser ([`Args`]).
impl Args<'_> {
    /// An optional dtype (absent or `none` is `None`).
    pub fn dtype_opt(&self, i: usize) -> VResult<Option<DType>> {
        match self.opt(i) {
            None => Ok(None),
            Some(v) => match as_dtype(v) {
                Some(d) => Ok(Some(d)),
                None => Err(match v {
                    // A string names a dtype or nothing: say which string.
                    Value::Str(s) => err(
                        ErrorKind::TypeError,
                        format!(
                            "{}() argument '{}' must be a dtype; '{}' names none (f64, f32, f16, bf16, i64, i32, bool, the formats, or NumPy's 'float32', 'int64', …)",
                            self.name,
                            self.param(i),
                            s.as_str()
                        ),
                    ),
                    _ => self.wrong(i, "a dtype (f64, f32, i64, …)", v),
                }),
            },
        }
    }
    /// An `axis=` argument: none, an int or a tuple of ints.
    pub fn axes(&self, i: usize) -> VResult<Option<Vec<i64>>> {
        match self.opt(i) {
            None => Ok(None),
            Some(Value::Int(n)) => Ok(Some(vec![*n])),
            Some(Value::Tuple(t)) => {
                t.0.iter()
                    .map(|v| match v {
                        Value::Int(n) => Ok(*n),
                        other => Err(self.wrong(i, "an int or a tuple of ints", other)),
                    })
                    .collect::<VResult<Vec<i64>>>()
                    .map(Some)
            }
            Some(other) => Err(self.wrong(i, "an int or a tuple of ints", other)),
        }
    }
}

fn arg_of(v: &Value) -> VResult<Arg> {
    match Arg::from_value(v) {
        Some(a) => Ok(a),
        None => match v {
            Value::List(_) | Value::Tuple(_) => Ok(Arg::T(super::api::from_data(v, None)?)),
            other => Err(err(
                ErrorKind::TypeError,
                format!("a tensor cannot be combined with a {}", other.type_name()),
            )),
        },
    }
}

fn binop(op: BinOp, args: &[Value], reflected: bool) -> VResult<Value> {
    let a = Arg::T(this(args)?);
    let b = arg_of(args.get(1).unwrap_or(&Value::None))?;
    let r = if reflected {
        arith::binary(op, &b, &a)?
    } else {
        arith::binary(op, &a, &b)?
    };
    Ok(result_value(r))
}

fn cmpop(op: CmpOp, args: &[Value]) -> VResult<Value> {
    let a = Arg::T(this(args)?);
    let other = args.get(1).unwrap_or(&Value::None);
    let b = match arg_of(other) {
        Ok(b) => b,
        Err(e) => {
            return match op {
                CmpOp::Eq => Ok(Value::Bool(false)),
                CmpOp::NotEq => Ok(Value::Bool(true)),
                _ => Err(e),
            }
        }
    };
    Ok(result_value(arith::compare(op, &a, &b)?))
}

macro_rules! bin_hooks {
    ($($name:ident, $rname:ident => $op:expr;)*) => {
        $(
            fn $name(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> { binop($op, args, false) }
            fn $rname(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> { binop($op, args, true) }
        )*
    };
}

bin_hooks! {
    h_add, h_radd => BinOp::Add;
    h_sub, h_rsub => BinOp::Sub;
    h_mul, h_rmul => BinOp::Mul;
    h_div, h_rdiv => BinOp::Div;
    h_fdiv, h_rfdiv => BinOp::FloorDiv;
    h_mod, h_rmod => BinOp::Mod;
    h_pow, h_rpow => BinOp::Pow;
    h_matmul, h_rmatmul => BinOp::MatMul;
    h_and, h_rand => BinOp::BitAnd;
    h_or, h_ror => BinOp::BitOr;
    h_xor, h_rxor => BinOp::BitXor;
    h_shl, h_rshl => BinOp::Shl;
    h_shr, h_rshr => BinOp::Shr;
}

macro_rules! cmp_hooks {
    ($($name:ident => $op:expr;)*) => {
        $( fn $name(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> { cmpop($op, args) } )*
    };
}

cmp_hooks! {
    h_eq => CmpOp::Eq;
    h_ne => CmpOp::NotEq;
    h_lt => CmpOp::Lt;
    h_le => CmpOp::LtE;
    h_gt => CmpOp::Gt;
    h_ge => CmpOp::GtE;
}

fn h_neg(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    Ok(result_value(arith::unary(UFn::Neg, &this(args)?)?))
}
fn h_pos(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    Ok(tensor_value(this(args)?))
}
fn h_invert(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    Ok(result_value(arith::invert(&this(args)?)?))
}
fn h_getitem(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    super::index::get(&this(args)?, args.get(1).unwrap_or(&Value::None))
}
fn h_setitem(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    super::index::set(
        &this(args)?,
        args.get(1).unwrap_or(&Value::None),
        args.get(2).unwrap_or(&Value::None),
    )?;
    Ok(Value::None)
}
fn h_len(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    match t.shape().first() {
        Some(&n) => Ok(Value::Int(n as i64)),
        None => Err(err(ErrorKind::TypeError, "len() of a 0-d tensor")),
    }
}
fn h_iter(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    let n = *t
        .shape()
        .first()
        .ok_or_else(|| err(ErrorKind::TypeError, "iteration over a 0-d tensor"))?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(super::index::get(&t, &Value::Int(i as i64))?);
    }
    Ok(Value::list(out))
}
fn h_contains(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    let b = arg_of(args.get(1).unwrap_or(&Value::None))?;
    let eq = arith::compare(CmpOp::Eq, &Arg::T(t), &b)?;
    let any = reduce::reduce(&eq, &(0..eq.ndim()).collect::<Vec<_>>(), false, RKind::Any)?;
    Ok(Value::Bool(any.first_f64() != 0.0))
}

fn m_item(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    if t.size() != 1 {
        return Err(err(
            ErrorKind::ValueError,
            format!(
                "item() needs a tensor of one element; this one has shape {}",
                shape_str(t.shape())
            ),
        ));
    }
    if t.node.is_some() {
        return Err(untracked("item()"));
    }
    Ok(scalar_value(&t.dense()))
}

fn untracked(what: &str) -> Exc {
    err(
        ErrorKind::ValueError,
        format!("{what} is not differentiable: it turns a tensor that grad is tracing into plain numbers (keep tensor operations instead)"),
    )
}

fn to_list_of(t: &Tensor) -> VResult<Value> {
    // An empty axis leaves no elements but not no lists: `(2**40, 0)` would
    // build 2**40 empty lists (it hung). Each list counts as 8 slots.
    let shape = t.shape();
    // One list per index of each leading prefix of the shape.
    let (lists, _) = shape[..shape.len().saturating_sub(1)]
        .iter()
        .fold((0usize, 1usize), |(sum, p), &d| {
            let p = p.saturating_mul(d);
            (sum.saturating_add(p), p)
        });
    if lists > t.size() {
        super::layout::check_alloc(
            lists.saturating_mul(8),
            &format!(
                "to_list() of a tensor of shape {}, {lists} nested lists,",
                shape_str(shape)
            ),
        )?;
    }
    fn build(vals: &[Value], shape: &[usize]) -> Value {
        if shape.len() <= 1 {
            return Value::list(vals.to_vec());
        }
        let inner: usize = shape[1..].iter().product();
        let rows = (0..shape[0])
            .map(|i| build(vals.get(i * inner..(i + 1) * inner).unwrap_or(&[]), &shape[1..]))
            .collect();
        Value::list(rows)
    }
    let vals: Vec<Value> = match t.dtype.kind() {
        Kind::Float => t.to_vec::<f64>().into_iter().map(Value::Float).collect(),
        Kind::Int => t.to_vec::<i64>().into_iter().map(Value::Int).collect(),
        Kind::Bool => t.to_vec::<bool>().into_iter().map(Value::Bool).collect(),
    };
    if t.ndim() == 0 {
        return Ok(vals.into_iter().next().unwrap_or(Value::None));
    }
    Ok(build(&vals, t.shape()))
}

fn m_to_list(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    if t.node.is_some() {
        return Err(untracked("to_list()"));
    }
    to_list_of(&t)
}

fn shape_args(name: &'static str, rest: &[Value]) -> VResult<Vec<i64>> {
    let items: Vec<Value> = match rest {
        [Value::Tuple(t)] => t.0.to_vec(),
        [Value::List(l)] => l.items.read().clone(),
        other => other.to_vec(),
    };
    items
        .iter()
        .map(|v| match v {
            Value::Int(n) => Ok(*n),
            other => Err(err(
                ErrorKind::TypeError,
                format!("{name}() dimensions must be ints, not {}", other.type_name()),
            )),
        })
        .collect()
}

fn m_reshape(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    let want = shape_args("reshape", &args[1..])?;
    let s = shape::resolve_shape(&want, t.size(), t.shape())?;
    Ok(tensor_value(shape::reshape(&t, s)?))
}

fn m_transpose(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    let perm: Vec<usize> = if args.len() <= 1 {
        shape::reversed_axes(t.ndim())
    } else {
        shape_args("transpose", &args[1..])?
            .into_iter()
            .map(|a| super::layout::norm_axis(a, t.ndim()))
            .collect::<VResult<_>>()?
    };
    Ok(tensor_value(shape::permute(&t, &perm)?))
}

fn m_astype(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    let a = Args::optional("astype", &args[1..], kw, &["dtype"])?;
    let d = a
        .dtype_opt(0)?
        .ok_or_else(|| err(ErrorKind::TypeError, "astype() missing required argument 'dtype'"))?;
    let mut r = t.astype(d)?;
    if t.node.is_some() {
        if !d.is_float() {
            return Err(err(
                ErrorKind::ValueError,
                format!("astype({}) is not differentiable: grad needs float tensors", d.name()),
            ));
        }
        r.node = super::autodiff::record(super::autodiff::Op::Cast(t.clone()), &r);
    }
    Ok(tensor_value(r))
}

fn m_copy(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    let mut r = t.contiguous();
    if t.node.is_some() {
        r.node = super::autodiff::record(super::autodiff::Op::Reshape(t.clone()), &r);
    }
    Ok(tensor_value(r))
}

fn m_flatten(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    let n = t.size();
    let c = shape::reshape(&t, vec![n])?;
    Ok(tensor_value(c))
}

fn m_squeeze(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    let a = Args::optional("squeeze", &args[1..], kw, &["axis"])?;
    let axes = match a.axes(0)? {
        None => None,
        Some(v) => Some(reduce::resolve_axes(Some(&v), t.ndim())?),
    };
    Ok(tensor_value(shape::squeeze(&t, axes)?))
}

fn m_expand_dims(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    let a = Args::optional("expand_dims", &args[1..], kw, &["axis"])?;
    let ax = a
        .int_opt(0)?
        .ok_or_else(|| err(ErrorKind::TypeError, "expand_dims() missing required argument 'axis'"))?;
    Ok(tensor_value(shape::expand_dims(&t, ax)?))
}

/// Reduction methods: `x.sum(axis=None, keepdims=false)`.
fn reduction(kind: RKind, name: &'static str, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    let a = Args::optional(name, &args[1..], kw, &["axis", "keepdims"])?;
    let axes_in = a.axes(0)?;
    let keep = a.flag(1)?;
    if matches!(kind, RKind::ArgMax | RKind::ArgMin) {
        if let Some(ax) = &axes_in {
            if ax.len() != 1 {
                return Err(err(ErrorKind::TypeError, format!("{name}() takes one axis (an int)")));
            }
        } else {
            // Over the flattened tensor.
            let flat = t.reshaped(vec![t.size()])?;
            let r = reduce::reduce(&flat, &[0], false, kind)?;
            let r = if keep { r.reshaped(vec![1; t.ndim()])? } else { r };
            return Ok(result_value(r));
        }
    }
    let axes = reduce::resolve_axes(axes_in.as_deref(), t.ndim())?;
    Ok(result_value(reduce::reduce(&t, &axes, keep, kind)?))
}

macro_rules! reductions {
    ($($fname:ident => $kind:expr, $name:expr;)*) => {
        $( fn $fname(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> { reduction($kind, $name, args, kw) } )*
    };
}

reductions! {
    m_sum => RKind::Sum, "sum";
    m_prod => RKind::Prod, "prod";
    m_max => RKind::Max, "max";
    m_min => RKind::Min, "min";
    m_argmax => RKind::ArgMax, "argmax";
    m_argmin => RKind::ArgMin, "argmin";
    m_all => RKind::All, "all";
    m_any => RKind::Any, "any";
}

/// `mean` over resolved axes (f64 for ints).
pub fn mean_of(t: &Tensor, axes: &[usize], keep: bool) -> VResult<Tensor> {
    let src = if t.dtype.is_float() {
        t.clone()
    } else {
        Arg::T(t.clone()).to_tensor(DType::F64)?
    };
    let count: usize = axes.iter().map(|&a| t.shape()[a]).product();
    let s = reduce::reduce(&src, axes, keep, RKind::Sum)?;
    arith::binary(BinOp::Div, &Arg::T(s), &Arg::Float(count as f64))
}

fn m_mean(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    let a = Args::optional("mean", &args[1..], kw, &["axis", "keepdims"])?;
    let axes = reduce::resolve_axes(a.axes(0)?.as_deref(), t.ndim())?;
    Ok(result_value(mean_of(&t, &axes, a.flag(1)?)?))
}

pub fn var_of(t: &Tensor, axes: &[usize], keep: bool, ddof: f64) -> VResult<Tensor> {
    let src = if t.dtype.is_float() {
        t.clone()
    } else {
        Arg::T(t.clone()).to_tensor(DType::F64)?
    };
    let count: usize = axes.iter().map(|&a| t.shape()[a]).product();
    let m = mean_of(&src, axes, true)?;
    let d = arith::binary(BinOp::Sub, &Arg::T(src), &Arg::T(m))?;
    let sq = arith::binary(BinOp::Mul, &Arg::T(d.clone()), &Arg::T(d))?;
    let s = reduce::reduce(&sq, axes, keep, RKind::Sum)?;
    arith::binary(BinOp::Div, &Arg::T(s), &Arg::Float((count as f64 - ddof).max(0.0)))
}

fn var_like(name: &'static str, args: &[Value], kw: Kwargs, sqrt: bool) -> VResult<Value> {
    let t = this(args)?;
    let a = Args::optional(name, &args[1..], kw, &["axis", "ddof", "keepdims"])?;
    let axes = reduce::resolve_axes(a.axes(0)?.as_deref(), t.ndim())?;
    let ddof = a.float_opt(1)?.unwrap_or(0.0);
    let v = var_of(&t, &axes, a.flag(2)?, ddof)?;
    // std's sqrt has gradient 0 at a constant input (std 0), as PyTorch's.
    Ok(result_value(if sqrt { arith::root(&v)? } else { v }))
}

fn m_var(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    var_like("var", args, kw, false)
}
fn m_std(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    var_like("std", args, kw, true)
}

/// `x.norm(axis=None, keepdims=false)`: the prelude's `norm(x, …)`.
fn m_norm(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    let a = Args::optional("norm", &args[1..], kw, &["axis", "keepdims"])?;
    Ok(result_value(super::api::norm_of(
        &t,
        a.axes(0)?.as_deref(),
        a.flag(1)?,
    )?))
}

fn m_cumsum(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    let a = Args::optional("cumsum", &args[1..], kw, &["axis"])?;
    let axis = match a.int_opt(0)? {
        None => None,
        Some(ax) => Some(super::layout::norm_axis(ax, t.ndim())?),
    };
    Ok(tensor_value(reduce::cumsum(&t, axis)?))
}

fn sort_impl(args: &[Value], kw: Kwargs, name: &'static str, want_indices: bool) -> VResult<Value> {
    let t = this(args)?;
    let a = Args::optional(name, &args[1..], kw, &["axis"])?;
    if t.ndim() == 0 {
        return Err(err(ErrorKind::ValueError, format!("{name}() of a 0-d tensor")));
    }
    let ax = super::layout::norm_axis(a.int_opt(0)?.unwrap_or(-1), t.ndim())?;
    let n = t.ndim();
    // Move the axis last, sort each row, move it back.
    let mut perm: Vec<usize> = (0..n).filter(|&i| i != ax).collect();
    perm.push(ax);
    let moved = t.view(t.layout.permuted(&perm)).contiguous();
    let len = t.shape()[ax];
    let vals: Vec<f64> = moved.to_vec();
    let mut idx: Vec<i64> = Vec::with_capacity(vals.len());
    if len > 0 {
        for row in vals.chunks(len) {
            let mut ix: Vec<usize> = (0..len).collect();
            // NaN sorts last, as NumPy does; the sort is stable.
            ix.sort_by(|&i, &j| {
                let (x, y) = (row[i], row[j]);
                match (x.is_nan(), y.is_nan()) {
                    (true, true) => std::cmp::Ordering::Equal,
                    (true, false) => std::cmp::Ordering::Greater,
                    (false, true) => std::cmp::Ordering::Less,
                    _ => x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal),
                }
            });
            idx.extend(ix.into_iter().map(|i| i as i64));
        }
    }
    let mut inv = vec![0usize; n];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    let moved_shape = moved.shape().to_vec();
    if want_indices {
        let it = Tensor::from_vec(idx, moved_shape);
        return Ok(tensor_value(it.view(it.layout.permuted(&inv)).contiguous()));
    }
    // Gather the sorted values (through the tape when traced).
    let flat_idx: Vec<usize> = idx
        .iter()
        .enumerate()
        .map(|(k, &i)| (k / len.max(1)) * len + i as usize)
        .collect();
    let src = shape::permute(&t, &perm)?;
    let g = super::autodiff::gather(&src, &flat_idx, &moved_shape)?;
    let g = if t.dtype.is_float() {
        g
    } else {
        Tensor::from_vec(
            flat_idx
                .iter()
                .map(|&i| vals.get(i).copied().unwrap_or(0.0))
                .collect::<Vec<f64>>(),
            moved_shape,
        )
        .cast(t.dtype)?
    };
    let back = shape::permute(&g, &inv)?;
    Ok(tensor_value(if back.node.is_some() { back } else { back.contiguous() }))
}

fn m_sort(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    sort_impl(args, kw, "sort", false)
}
fn m_argsort(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    sort_impl(args, kw, "argsort", true)
}

fn m_clip(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    let a = Args::optional("clip", &args[1..], kw, &["lo", "hi"])?;
    Ok(tensor_value(arith::clip(&t, a.float_opt(0)?, a.float_opt(1)?)?))
}

fn m_round(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let t = this(args)?;
    let a = Args::optional("round", &args[1..], kw, &["ndigits"])?;
    match a.int_opt(0)? {
        None | Some(0) => Ok(result_value(arith::unary(UFn::Round, &t)?)),
        Some(n) => {
            let scale = 10f64.powi(n.clamp(-300, 300) as i32);
            let x = arith::binary(BinOp::Mul, &Arg::T(t), &Arg::Float(scale))?;
            let r = arith::unary(UFn::Round, &x)?;
            Ok(result_value(arith::binary(BinOp::Div, &Arg::T(r), &Arg::Float(scale))?))
        }
    }
}

fn m_unary(name: &str, args: &[Value]) -> VResult<Value> {
    let t = this(args)?;
    let f = UFn::from_name(name)
        .ok_or_else(|| err(ErrorKind::AttributeError, format!("no elementwise function {name}")))?;
    Ok(result_value(arith::unary(f, &t)?))
}

macro_rules! unary_methods {
    ($($fname:ident => $name:expr;)*) => {
        $( fn $fname(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> { m_unary($name, args) } )*
    };
}

unary_methods! {
    m_abs => "abs";
    m_sqrt => "sqrt";
    m_exp => "exp";
    m_log => "log";
    m_log1p => "log1p";
    m_sin => "sin";
    m_cos => "cos";
    m_tan => "tan";
    m_tanh => "tanh";
    m_sigmoid => "sigmoid";
    m_floor => "floor";
    m_ceil => "ceil";
    m_sign => "sign";
}

fn m_isnan(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    Ok(result_value(arith::predicate(&this(args)?, false)))
}
fn m_isinf(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    Ok(result_value(arith::predicate(&this(args)?, true)))
}
fn m_maximum(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    let b = arg_of(args.get(1).unwrap_or(&Value::None))?;
    Ok(result_value(arith::extremum(&Arg::T(this(args)?), &b, true)?))
}
fn m_minimum(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    let b = arg_of(args.get(1).unwrap_or(&Value::None))?;
    Ok(result_value(arith::extremum(&Arg::T(this(args)?), &b, false)?))
}

fn methods() -> &'static HashMap<&'static str, Value> {
    static M: OnceLock<HashMap<&'static str, Value>> = OnceLock::new();
    M.get_or_init(|| {
        let table: &[(&'static str, NativeFnPtr)] = &[
            ("__add__", h_add),
            ("__radd__", h_radd),
            ("__sub__", h_sub),
            ("__rsub__", h_rsub),
            ("__mul__", h_mul),
            ("__rmul__", h_rmul),
            ("__truediv__", h_div),
            ("__rtruediv__", h_rdiv),
            ("__floordiv__", h_fdiv),
            ("__rfloordiv__", h_rfdiv),
            ("__mod__", h_mod),
            ("__rmod__", h_rmod),
            ("__pow__", h_pow),
            ("__rpow__", h_rpow),
            ("__matmul__", h_matmul),
            ("__rmatmul__", h_rmatmul),
            ("__and__", h_and),
            ("__rand__", h_rand),
            ("__or__", h_or),
            ("__ror__", h_ror),
            ("__xor__", h_xor),
            ("__rxor__", h_rxor),
            ("__lshift__", h_shl),
            ("__rlshift__", h_rshl),
            ("__rshift__", h_shr),
            ("__rrshift__", h_rshr),
            ("__eq__", h_eq),
            ("__ne__", h_ne),
            ("__lt__", h_lt),
            ("__le__", h_le),
            ("__gt__", h_gt),
            ("__ge__", h_ge),
            ("__neg__", h_neg),
            ("__pos__", h_pos),
            ("__invert__", h_invert),
            ("__getitem__", h_getitem),
            ("__setitem__", h_setitem),
            ("__len__", h_len),
            ("__iter__", h_iter),
            ("__contains__", h_contains),
            ("item", m_item),
            ("to_list", m_to_list),
            ("tolist", m_to_list),
            ("reshape", m_reshape),
            ("transpose", m_transpose),
            ("astype", m_astype),
            ("copy", m_copy),
            ("flatten", m_flatten),
            ("squeeze", m_squeeze),
            ("expand_dims", m_expand_dims),
            ("sum", m_sum),
            ("prod", m_prod),
            ("max", m_max),
            ("min", m_min),
            ("argmax", m_argmax),
            ("argmin", m_argmin),
            ("all", m_all),
            ("any", m_any),
            ("mean", m_mean),
            ("var", m_var),
            ("std", m_std),
            ("norm", m_norm),
            ("cumsum", m_cumsum),
            ("sort", m_sort),
            ("argsort", m_argsort),
            ("clip", m_clip),
            ("round", m_round),
            ("abs", m_abs),
            ("sqrt", m_sqrt),
            ("exp", m_exp),
            ("log", m_log),
            ("log1p", m_log1p),
            ("sin", m_sin),
            ("cos", m_cos),
            ("tan", m_tan),
            ("tanh", m_tanh),
            ("sigmoid", m_sigmoid),
            ("floor", m_floor),
            ("ceil", m_ceil),
            ("sign", m_sign),
            ("isnan", m_isnan),
            ("isinf", m_isinf),
            ("maximum", m_maximum),
            ("minimum", m_minimum),
        ];
        table
            .iter()
            .map(|(n, f)| (*n, Value::Native(Arc::new(NativeFn::new(n, *f)))))
            .collect()
    })
}

/// The method names of a tensor (for hints and tests).
pub fn method_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = methods().keys().copied().filter(|n| !n.starts_with("__")).collect();
    v.sort_unstable();
    v
}
