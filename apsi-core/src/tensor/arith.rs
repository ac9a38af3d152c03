//! Elementwise arithmetic, comparison and math on tensors, with NumPy 2's
//! promotion, recorded on the autodiff tape when an input is traced.

use super::autodiff::{record, Op};
use super::core::Tensor;
use super::dtype::{DType, Kind};
use super::kernels::{map, map_chunks, zip};
use super::real::Real;
use super::storage::Scalar;
use super::vmath::{self, VFn};
use crate::error::ErrorKind;
use crate::syntax::ast::{BinOp, CmpOp};
use crate::value::{err, Exc, VResult, Value};

/// An operand of a tensor operator: a tensor or a plain (weakly typed) number.
#[derive(Clone)]
pub enum Arg {
    T(Tensor),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Arg {
    pub fn from_value(v: &Value) -> Option<Arg> {
        match v {
            Value::Int(i) => Some(Arg::Int(*i)),
            Value::Float(f) => Some(Arg::Float(*f)),
            Value::Bool(b) => Some(Arg::Bool(*b)),
            other => super::object::as_tensor(other).map(Arg::T),
        }
    }

    /// The dtype this operand has on its own.
    fn own_dtype(&self) -> DType {
        match self {
            Arg::T(t) => t.dtype,
            Arg::Int(_) => DType::I64,
            Arg::Float(_) => DType::F64,
            Arg::Bool(_) => DType::Bool,
        }
    }

    fn is_tensor(&self) -> bool {
        matches!(self, Arg::T(_))
    }

    /// This operand as a tensor of `dtype`.
    pub fn to_tensor(&self, dtype: DType) -> VResult<Tensor> {
        match self {
            Arg::T(t) => {
                if t.dtype == dtype {
                    Ok(t.clone())
                } else {
                    let mut c = t.astype(dtype)?;
                    if t.node.is_some() {
                        c.node = record(Op::Cast(t.clone()), &c);
                    }
                    Ok(c)
                }
            }
            Arg::Int(i) => Ok(match dtype.kind() {
                Kind::Float => Tensor::full(vec![], *i as f64, dtype)?,
                // A packed integer format (int8, int4, uint8): the number must
                // be one of its values, as NumPy 2 requires of a Python int.
                _ if super::codec::is_packed(dtype) => {
                    let (lo, hi) = match dtype {
                        DType::Int8 => (-128, 127),
                        DType::Int4 => (-8, 7),
                        _ => (0, 255),
                    };
                    if !(lo..=hi).contains(i) {
                        return Err(err(
                            ErrorKind::OverflowError,
                            format!("Python integer {i} out of bounds for {}", dtype.name()),
                        ));
                    }
                    Tensor::full(vec![], *i as f64, dtype)?
                }
                _ => {
                    crate::with_dtype!(dtype, T => Tensor::scalar(T::from_i64(*i)), other => return Err(dtype.check_supported().err().unwrap_or_else(|| err(ErrorKind::TypeError, "bad dtype"))))
                }
            }),
            Arg::Float(f) => Tensor::full(vec![], *f, dtype),
            Arg::Bool(b) => Tensor::full(vec![], *b as u8 as f64, dtype),
        }
    }
}

/// NumPy 2's result dtype for two operands: tensors promote by
/// [`DType::promote`]; a plain number never widens a tensor of its own kind
/// (an int with an int tensor, a float with a float tensor, a bool with
/// anything keep the tensor's dtype); a float with an int/bool tensor gives
/// f64 and an int with a bool tensor gives i64.
pub fn result_dtype(a: &Arg, b: &Arg) -> DType {
    match (a, b) {
        (Arg::T(x), Arg::T(y)) => DType::promote(x.dtype, y.dtype),
        (Arg::T(t), s) | (s, Arg::T(t)) => weak(t.dtype, s),
        _ => DType::promote(a.own_dtype(), b.own_dtype()),
    }
}

fn weak(t: DType, s: &Arg) -> DType {
    match (t.kind(), s) {
        (_, Arg::Bool(_)) => t,
        (Kind::Bool, Arg::Int(_)) => DType::I64,
        (_, Arg::Int(_)) => t,
        (Kind::Float, Arg::Float(_)) => t,
        (_, Arg::Float(_)) => DType::F64,
        _ => t,
    }
}

fn not_differentiable(what: &str) -> Exc {
    err(
        ErrorKind::ValueError,
        format!("{what} is not differentiable: grad cannot pass through it (compute it outside the function being differentiated)"),
    )
}

fn traced(a: &Tensor, b: &Tensor) -> bool {
    a.node.is_some() || b.node.is_some()
}

/// `a op b` for arithmetic and bitwise operators.
pub fn binary(op: BinOp, a: &Arg, b: &Arg) -> VResult<Tensor> {
    if op == BinOp::MatMul {
        let x = a.to_tensor(a.own_dtype())?;
        let y = b.to_tensor(b.own_dtype())?;
        return super::matmul::matmul(&x, &y);
    }
    let mut d = result_dtype(a, b);
    if op == BinOp::Div && d.kind() != Kind::Float {
        d = DType::F64;
    }
    let x = a.to_tensor(d)?;
    let y = b.to_tensor(d)?;
    let _ = (a.is_tensor(), b.is_tensor());
    binary_same(op, &x, &y)
}

/// `a op b` for two tensors of one dtype.
pub fn binary_same(op: BinOp, x: &Tensor, y: &Tensor) -> VResult<Tensor> {
    let d = x.dtype;
    if super::codec::is_packed(d) {
        return super::codec::narrow::binary_same(op, x, y);
    }
    // Traced float arithmetic is computed when read (deferred.rs).
    let mut r = match (super::deferred::binary(op, x, y), d) {
        (Some(r), _) => r,
        (None, DType::F64) => float_op::<f64>(op, x, y)?,
        (None, DType::F32) => float_op::<f32>(op, x, y)?,
        (None, DType::F16 | DType::BF16) => float_op::<f32>(op, x, y)?.astype(d)?,
        (None, DType::I64) => int_op(op, x, y)?,
        (None, DType::I32) => int_op(op, x, y)?.astype(d)?,
        (None, DType::Bool) => bool_op(op, x, y)?,
        (None, other) => {
            return Err(other
                .check_supported()
                .err()
                .unwrap_or_else(|| err(ErrorKind::TypeError, "bad dtype")))
        }
    };
    if traced(x, y) {
        let o = match op {
            BinOp::Add => Op::Add(x.clone(), y.clone()),
            BinOp::Sub => Op::Sub(x.clone(), y.clone()),
            BinOp::Mul => Op::Mul(x.clone(), y.clone()),
            BinOp::Div => Op::Div(x.clone(), y.clone()),
            BinOp::Pow => Op::Pow(x.clone(), y.clone(), r.clone()),
            BinOp::FloorDiv => return Err(not_differentiable("'//'")),
            BinOp::Mod => return Err(not_differentiable("'%'")),
            _ => return Err(not_differentiable(&format!("'{}'", op_symbol(op)))),
        };
        if d.is_float() {
            r.node = record(o, &r);
        }
    }
    Ok(r)
}

fn op_symbol(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::FloorDiv => "//",
        BinOp::Mod => "%",
        BinOp::Pow => "**",
        BinOp::MatMul => "@",
        BinOp::BitAnd => "&",
        BinOp::BitOr => "|",
        BinOp::BitXor => "^",
        BinOp::Shl => "<<",
        BinOp::Shr => ">>",
    }
}

fn unsupported(op: BinOp, d: DType) -> Exc {
    err(
        ErrorKind::TypeError,
        format!("unsupported operand dtype for {}: {}", op_symbol(op), d.name()),
    )
}

fn float_op<T: Real>(op: BinOp, x: &Tensor, y: &Tensor) -> VResult<Tensor> {
    match op {
        BinOp::Add => zip::<T, T>(x, y, |a, b| a + b),
        BinOp::Sub => zip::<T, T>(x, y, |a, b| a - b),
        BinOp::Mul => zip::<T, T>(x, y, |a, b| a * b),
        BinOp::Div => zip::<T, T>(x, y, |a, b| a / b),
        BinOp::FloorDiv => zip::<T, T>(x, y, |a, b| a.pyfloordiv(b)),
        BinOp::Mod => zip::<T, T>(x, y, |a, b| a.pymod(b)),
        BinOp::Pow => match square_or_same(x, y) {
            // NumPy's fast scalar powers: `x ** 2` is `x * x` (correctly
            // rounded, as pow is nearly always; 20x faster than libm's
            // pow), `x ** 1` is `x`.
            Some(true) => Ok(map::<T, T>(x, |a| a * a)),
            Some(false) => Ok(map::<T, T>(x, |a| a)),
            None => zip::<T, T>(x, y, |a, b| a.powf(b)),
        },
        _ => Err(unsupported(op, x.dtype)),
    }
}

/// For `x ** y` with one exponent that keeps `x`'s shape: `Some(true)` when
/// it is 2, `Some(false)` when it is 1, else `None`.
pub(super) fn square_or_same(x: &Tensor, y: &Tensor) -> Option<bool> {
    if y.size() != 1 || y.ndim() > x.ndim() {
        return None;
    }
    let e = *y.to_vec::<f64>().first()?;
    if e == 2.0 {
        Some(true)
    } else if e == 1.0 {
        Some(false)
    } else {
        None
    }
}

fn int_op(op: BinOp, x: &Tensor, y: &Tensor) -> VResult<Tensor> {
    match op {
        BinOp::Add => zip::<i64, i64>(x, y, |a, b| a.wrapping_add(b)),
        BinOp::Sub => zip::<i64, i64>(x, y, |a, b| a.wrapping_sub(b)),
        BinOp::Mul => zip::<i64, i64>(x, y, |a, b| a.wrapping_mul(b)),
        BinOp::FloorDiv => zip::<i64, i64>(x, y, |a, b| {
            if b == 0 {
                0
            } else {
                a.wrapping_div(b) - (((a.wrapping_rem(b) != 0) && ((a < 0) != (b < 0))) as i64)
            }
        }),
        BinOp::Mod => zip::<i64, i64>(x, y, |a, b| {
            if b == 0 {
                0
            } else {
                let r = a.wrapping_rem(b);
                if r != 0 && ((r < 0) != (b < 0)) {
                    r + b
                } else {
                    r
                }
            }
        }),
        BinOp::Pow => {
            let neg = y.with_slice::<i64, _>(|s, l| l.offsets().iter().any(|&o| s.get(o).is_some_and(|v| *v < 0)));
            if neg {
                return Err(err(
                    ErrorKind::ValueError,
                    "integers to negative integer powers are not allowed (use a float tensor)",
                ));
            }
            zip::<i64, i64>(x, y, |a, b| a.wrapping_pow(b.clamp(0, u32::MAX as i64) as u32))
        }
        BinOp::BitAnd => zip::<i64, i64>(x, y, |a, b| a & b),
        BinOp::BitOr => zip::<i64, i64>(x, y, |a, b| a | b),
        BinOp::BitXor => zip::<i64, i64>(x, y, |a, b| a ^ b),
        BinOp::Shl => zip::<i64, i64>(x, y, |a, b| {
            if (0..64).contains(&b) {
                a.wrapping_shl(b as u32)
            } else {
                0
            }
        }),
        BinOp::Shr => zip::<i64, i64>(x, y, |a, b| {
            if (0..64).contains(&b) {
                a >> b
            } else if a < 0 {
                -1
            } else {
                0
            }
        }),
        _ => Err(unsupported(op, x.dtype)),
    }
}

fn bool_op(op: BinOp, x: &Tensor, y: &Tensor) -> VResult<Tensor> {
    match op {
        BinOp::Add | BinOp::BitOr => zip::<bool, bool>(x, y, |a, b| a | b),
        BinOp::Mul | BinOp::BitAnd => zip::<bool, bool>(x, y, |a, b| a & b),
        BinOp::BitXor => zip::<bool, bool>(x, y, |a, b| a ^ b),
        BinOp::Sub => Err(err(
            ErrorKind::TypeError,
            "'-' is not supported between bool tensors (use ^ or logical operations)",
        )),
        // `//`, `%`, `**` and shifts of bools are small ints: int8, as NumPy gives.
        _ => {
            let xi = x.astype(DType::I64)?;
            let yi = y.astype(DType::I64)?;
            int_op(op, &xi, &yi)?.astype(DType::Int8)
        }
    }
}

/// `a op b` elementwise for `< <= > >= == !=`: a bool tensor.
pub fn compare(op: CmpOp, a: &Arg, b: &Arg) -> VResult<Tensor> {
    let d = result_dtype(a, b);
    let x = a.to_tensor(d)?;
    let y = b.to_tensor(d)?;
    match d.kind() {
        Kind::Float if d == DType::F64 => cmp_kernel::<f64>(op, &x, &y),
        Kind::Float if d == DType::F32 => cmp_kernel::<f32>(op, &x, &y),
        Kind::Float => cmp_kernel::<f64>(op, &x, &y),
        Kind::Int => cmp_kernel::<i64>(op, &x, &y),
        Kind::Bool => cmp_kernel::<i64>(op, &x, &y),
    }
}

fn cmp_kernel<T: Scalar + PartialOrd>(op: CmpOp, x: &Tensor, y: &Tensor) -> VResult<Tensor> {
    match op {
        CmpOp::Lt => zip::<T, bool>(x, y, |a, b| a < b),
        CmpOp::LtE => zip::<T, bool>(x, y, |a, b| a <= b),
        CmpOp::Gt => zip::<T, bool>(x, y, |a, b| a > b),
        CmpOp::GtE => zip::<T, bool>(x, y, |a, b| a >= b),
        CmpOp::Eq => zip::<T, bool>(x, y, |a, b| a == b),
        CmpOp::NotEq => zip::<T, bool>(x, y, |a, b| a != b),
        _ => Err(err(ErrorKind::TypeError, "this comparison is not elementwise")),
    }
}

/// The elementwise functions of one argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UFn {
    Neg,
    Abs,
    Sqrt,
    Exp,
    Log,
    Log1p,
    Sin,
    Cos,
    Tan,
    Tanh,
    Sigmoid,
    Floor,
    Ceil,
    Round,
    Sign,
    /// the error function (PyTorch's `erf`)
    Erf,
    /// PyTorch's exact `gelu`, `x/2 · (1 + erf(x/√2))`, in one pass (a
    /// layer's activation; no prelude name)
    Gelu,
}

impl UFn {
    pub fn from_name(s: &str) -> Option<UFn> {
        Some(match s {
            "abs" => UFn::Abs,
            "sqrt" => UFn::Sqrt,
            "exp" => UFn::Exp,
            "log" => UFn::Log,
            "log1p" => UFn::Log1p,
            "sin" => UFn::Sin,
            "cos" => UFn::Cos,
            "tan" => UFn::Tan,
            "tanh" => UFn::Tanh,
            "sigmoid" => UFn::Sigmoid,
            "floor" => UFn::Floor,
            "ceil" => UFn::Ceil,
            "round" => UFn::Round,
            "sign" => UFn::Sign,
            "erf" => UFn::Erf,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            UFn::Neg => "negation",
            UFn::Abs => "abs",
            UFn::Sqrt => "sqrt",
            UFn::Exp => "exp",
            UFn::Log => "log",
            UFn::Log1p => "log1p",
            UFn::Sin => "sin",
            UFn::Cos => "cos",
            UFn::Tan => "tan",
            UFn::Tanh => "tanh",
            UFn::Sigmoid => "sigmoid",
            UFn::Floor => "floor",
            UFn::Ceil => "ceil",
            UFn::Round => "round",
            UFn::Sign => "sign",
            UFn::Erf => "erf",
            UFn::Gelu => "gelu",
        }
    }
    /// Keeps an integer dtype (the others turn ints into f64).
    fn keeps_int(self) -> bool {
        matches!(
            self,
            UFn::Neg | UFn::Abs | UFn::Floor | UFn::Ceil | UFn::Round | UFn::Sign
        )
    }
    /// The vectorised kernel computing this function, where one exists.
    pub(super) fn vmath(self) -> Option<VFn> {
        match self {
            UFn::Exp => Some(VFn::Exp),
            UFn::Log => Some(VFn::Log),
            UFn::Log1p => Some(VFn::Log1p),
            UFn::Sigmoid => Some(VFn::Sigmoid),
            UFn::Tanh => Some(VFn::Tanh),
            _ => None,
        }
    }
    pub(super) fn apply<T: Real>(self, x: T) -> T {
        match self {
            UFn::Neg => -x,
            UFn::Abs => x.abs(),
            UFn::Sqrt => x.sqrt(),
            UFn::Exp => x.exp(),
            UFn::Log => x.ln(),
            UFn::Log1p => x.ln_1p(),
            UFn::Sin => x.sin(),
            UFn::Cos => x.cos(),
            UFn::Tan => x.tan(),
            UFn::Tanh => x.tanh(),
            UFn::Sigmoid => x.sigmoid(),
            UFn::Floor => x.floor(),
            UFn::Ceil => x.ceil(),
            UFn::Round => x.round_even(),
            UFn::Sign => x.sign(),
            UFn::Erf => x.erf(),
            UFn::Gelu => gelu(x),
        }
    }
}

/// gelu or its derivative over a float32 tensor's elements (gelu.rs).
pub(super) fn gelu_f32(f: super::gelu::Gelu, x: &Tensor) -> Tensor {
    map_chunks::<f32, f32>(x, |s, d| super::gelu::apply(f, s, d))
}

/// PyTorch's exact gelu, in its order of operations (`x · 0.5 · (1 + erf(x · √½))`).
#[inline(always)]
pub(super) fn gelu<T: Real>(x: T) -> T {
    let half = T::from_f64(0.5);
    x * half * (T::ONE + (x * T::from_f64(std::f64::consts::FRAC_1_SQRT_2)).erf())
}

/// gelu's derivative `Φ(x) + x·φ(x)`, PyTorch's GeluBackward (exact) term for term.
#[inline(always)]
pub(super) fn gelu_grad<T: Real>(x: T) -> T {
    let half = T::from_f64(0.5);
    let k = T::from_f64(std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2 * 0.5);
    let cdf = half * (T::ONE + (x * T::from_f64(std::f64::consts::FRAC_1_SQRT_2)).erf());
    let pdf = (-half * x * x).exp() * k;
    cdf + x * pdf
}

/// `f` over a float tensor, one monomorphic loop per function (a `match`
/// inside the element loop keeps it from vectorising: `abs` cost five
/// times NumPy's).
fn map_unary<T: Real>(f: UFn, x: &Tensor) -> Tensor {
    match f {
        UFn::Neg => map::<T, T>(x, |v| -v),
        UFn::Abs => map::<T, T>(x, |v| v.abs()),
        UFn::Sqrt => map::<T, T>(x, |v| v.sqrt()),
        UFn::Floor => map::<T, T>(x, |v| v.floor()),
        UFn::Ceil => map::<T, T>(x, |v| v.ceil()),
        UFn::Round => map::<T, T>(x, |v| v.round_even()),
        UFn::Sign => map::<T, T>(x, |v| v.sign()),
        _ => map::<T, T>(x, |v| f.apply(v)),
    }
}

/// `f(x)` elementwise.
pub fn unary(f: UFn, x: &Tensor) -> VResult<Tensor> {
    if super::codec::is_packed(x.dtype) {
        return super::codec::narrow::unary(f, x);
    }
    let vf = f.vmath();
    // float64 keeps libm's erf; the narrower formats compute in float32,
    // vectorised (gelu.rs).
    if f == UFn::Gelu && matches!(x.dtype, DType::F32 | DType::F16 | DType::BF16) {
        let mut r = if x.dtype == DType::F32 {
            gelu_f32(super::gelu::Gelu::Value, x)
        } else {
            gelu_f32(super::gelu::Gelu::Value, &x.astype(DType::F32)?).astype(x.dtype)?
        };
        if x.node.is_some() {
            r.node = record(Op::Unary(f, x.clone(), r.clone()), &r);
        }
        return Ok(r);
    }
    if let Some(mut r) = super::deferred::unary(f, x) {
        r.node = record(Op::Unary(f, x.clone(), r.clone()), &r);
        return Ok(r);
    }
    let mut r = match (x.dtype, vf) {
        (DType::F64, Some(vf)) => map_chunks::<f64, f64>(x, |s, d| vmath::apply(vf, s, d)),
        (DType::F32, Some(vf)) => map_chunks::<f32, f32>(x, |s, d| vmath::apply(vf, s, d)),
        (DType::F64, None) => map_unary::<f64>(f, x),
        (DType::F32, None) => map_unary::<f32>(f, x),
        (DType::F16 | DType::BF16, Some(vf)) => {
            map_chunks::<f32, f32>(x, |s, d| vmath::apply(vf, s, d)).astype(x.dtype)?
        }
        _ => match x.dtype {
            DType::F16 | DType::BF16 => map::<f32, f32>(x, |v| f.apply(v)).astype(x.dtype)?,
            DType::I64 | DType::I32 | DType::Bool if f.keeps_int() => {
                if x.dtype == DType::Bool && f == UFn::Neg {
                    return Err(err(
                        ErrorKind::TypeError,
                        "the '-' operator is not supported on bool tensors (use ~ or 'not')",
                    ));
                }
                let r = map::<i64, i64>(x, |v| match f {
                    UFn::Neg => v.wrapping_neg(),
                    UFn::Abs => v.wrapping_abs(),
                    UFn::Sign => v.signum(),
                    _ => v,
                });
                if x.dtype == DType::I64 {
                    r
                } else {
                    r.astype(x.dtype)?
                }
            }
            DType::I64 | DType::I32 | DType::Bool => map::<f64, f64>(x, |v| f.apply(v)),
            other => {
                return Err(other
                    .check_supported()
                    .err()
                    .unwrap_or_else(|| err(ErrorKind::TypeError, "bad dtype")))
            }
        },
    };
    if x.node.is_some() && r.dtype.is_float() {
        match f {
            UFn::Floor | UFn::Ceil | UFn::Round | UFn::Sign => {
                return Err(not_differentiable(&format!("{}()", f.name())))
            }
            _ => r.node = record(Op::Unary(f, x.clone(), r.clone()), &r),
        }
    }
    Ok(r)
}

/// `~x`: logical not of a bool tensor, bitwise not of an int tensor.
pub fn invert(x: &Tensor) -> VResult<Tensor> {
    match x.dtype.kind() {
        Kind::Bool => Ok(map::<bool, bool>(x, |v| !v)),
        Kind::Int => map::<i64, i64>(x, |v| !v).cast(x.dtype),
        Kind::Float => Err(err(ErrorKind::TypeError, "'~' is not supported on float tensors")),
    }
}

/// `isnan`/`isinf`.
pub fn predicate(x: &Tensor, inf: bool) -> Tensor {
    if x.dtype.is_float() {
        if inf {
            map::<f64, bool>(x, |v| v.is_infinite())
        } else {
            map::<f64, bool>(x, |v| v.is_nan())
        }
    } else {
        map::<bool, bool>(x, |_| false)
    }
}

/// `maximum`/`minimum`'s choice of one pair (also in the fused programs of
/// cotangent.rs): NaN when either is NaN, else `a` where `(a >= b) ==
/// greater`, else `b`.
#[inline(always)]
pub(super) fn extreme<T: Real>(a: T, b: T, greater: bool) -> T {
    if a.is_nan() || b.is_nan() {
        T::from_f64(f64::NAN)
    } else if (a >= b) == greater {
        a
    } else {
        b
    }
}

/// `maximum`/`minimum` (NaN propagates).
pub fn extremum(a: &Arg, b: &Arg, greater: bool) -> VResult<Tensor> {
    let d = result_dtype(a, b);
    let x = a.to_tensor(d)?;
    let y = b.to_tensor(d)?;
    let deferred = super::deferred::extremum(&x, &y, greater);
    let mut r = match (deferred, d.kind()) {
        (Some(r), _) => r,
        (None, Kind::Float) => zip::<f64, f64>(&x, &y, move |p, q| extreme(p, q, greater))?.cast(d)?,
        (None, _) => {
            let f = move |p: i64, q: i64| if (p >= q) == greater { p } else { q };
            zip::<i64, i64>(&x, &y, f)?.cast(d)?
        }
    };
    if traced(&x, &y) && d.is_float() {
        r.node = record(Op::Select(x.clone(), y.clone(), r.clone()), &r);
    }
    Ok(r)
}

/// `where(cond, a, b)`.
pub fn where_(cond: &Tensor, a: &Arg, b: &Arg) -> VResult<Tensor> {
    let d = result_dtype(a, b);
    let x = a.to_tensor(d)?;
    let y = b.to_tensor(d)?;
    let c = cond.cast(DType::Bool)?;
    let c64 = c.astype(d)?;
    let mut r = crate::with_dtype!(d, T => super::kernels::zip3::<T, T>(&c64, &x, &y, |k, p, q| if k.to_bool() { p } else { q })?, other => return super::codec::narrow::where_(cond, &x, &y, d));
    if traced(&x, &y) && d.is_float() {
        r.node = record(Op::Where(c, x.clone(), y.clone()), &r);
    }
    Ok(r)
}

/// `clip(x, lo, hi)` (either bound may be none).
pub fn clip(x: &Tensor, lo: Option<f64>, hi: Option<f64>) -> VResult<Tensor> {
    let mut r = match x.dtype.kind() {
        Kind::Float => {
            let (l, h) = (lo.unwrap_or(f64::NEG_INFINITY), hi.unwrap_or(f64::INFINITY));
            map::<f64, f64>(x, move |v| if v.is_nan() { v } else { v.max(l).min(h) }).cast(x.dtype)?
        }
        _ => {
            let (l, h) = (
                lo.map(|v| v.ceil() as i64).unwrap_or(i64::MIN),
                hi.map(|v| v.floor() as i64).unwrap_or(i64::MAX),
            );
            map::<i64, i64>(x, move |v| v.max(l).min(h)).cast(x.dtype)?
        }
    };
    if x.node.is_some() {
        r.node = record(Op::Clip(x.clone(), lo, hi), &r);
    }
    Ok(r)
}

/// The float dtype an elementwise float function of `d` computes in and
/// returns (ints and bool give f64, as `exp` does).
fn float_result(d: DType) -> VResult<DType> {
    match d.kind() {
        Kind::Float => d.check_supported(),
        _ => Ok(DType::F64),
    }
}

/// `f` over `x` in its own float type (f16/bf16 compute in f32 and round
/// once at the end, as the other elementwise functions do).
fn map_float(
    x: &Tensor,
    f64f: impl Fn(f64) -> f64 + Sync + Send,
    f32f: impl Fn(f32) -> f32 + Sync + Send,
) -> VResult<Tensor> {
    Ok(match x.dtype {
        DType::F64 => map::<f64, f64>(x, f64f),
        DType::F32 => map::<f32, f32>(x, f32f),
        d => map::<f32, f32>(x, f32f).astype(d)?,
    })
}

fn softplus_of<T: Real>(x: T, beta: T, threshold: T) -> T {
    let z = beta * x;
    if z > threshold {
        x
    } else {
        // log(1 + e^z) without overflow: max(z, 0) + log1p(e^-|z|).
        let m = if z > T::ZERO { z } else { T::ZERO };
        (m + (-z.abs()).exp().ln_1p()) / beta
    }
}

/// `softplus(x, beta, threshold)`: PyTorch's `log(1 + exp(beta*x)) / beta`,
/// and `x` itself where `beta * x > threshold`.
pub fn softplus(x: &Tensor, beta: f64, threshold: f64) -> VResult<Tensor> {
    let x = Arg::T(x.clone()).to_tensor(float_result(x.dtype)?)?;
    let (b32, t32) = (beta as f32, threshold as f32);
    let mut r = map_float(
        &x,
        move |v| softplus_of(v, beta, threshold),
        move |v| softplus_of(v, b32, t32),
    )?;
    if x.node.is_some() {
        r.node = record(Op::Softplus(x.clone(), beta, threshold), &r);
    }
    Ok(r)
}

/// Where `softplus` is linear (`beta * x > threshold`), computed in the
/// type the forward pass used.
pub fn softplus_linear(x: &Tensor, beta: f64, threshold: f64) -> VResult<Tensor> {
    Ok(match x.dtype {
        DType::F64 => map::<f64, bool>(x, move |v| beta * v > threshold),
        _ => {
            let (b, t) = (beta as f32, threshold as f32);
            map::<f32, bool>(x, move |v| b * v > t)
        }
    })
}

/// NumPy's `npy_logaddexp`, step for step: equal arguments (infinities of
/// one sign included) give `x + log 2`, else the larger plus
/// `log1p(exp(-|x - y|))`; a NaN propagates.
fn logaddexp_of<T: Real>(x: T, y: T, ln2: T) -> T {
    if x == y {
        return x + ln2;
    }
    let d = x - y;
    if d > T::ZERO {
        x + (-d).exp().ln_1p()
    } else if d <= T::ZERO {
        y + d.exp().ln_1p()
    } else {
        d
    }
}

/// `logaddexp(a, b)`: `log(exp(a) + exp(b))` without overflow, broadcast.
pub fn logaddexp(a: &Arg, b: &Arg) -> VResult<Tensor> {
    let d = float_result(result_dtype(a, b))?;
    let x = a.to_tensor(d)?;
    let y = b.to_tensor(d)?;
    const LN2: f64 = std::f64::consts::LN_2;
    let mut r = match d {
        DType::F64 => zip::<f64, f64>(&x, &y, |p, q| logaddexp_of(p, q, LN2))?,
        DType::F32 => zip::<f32, f32>(&x, &y, |p, q| logaddexp_of(p, q, LN2 as f32))?,
        _ => zip::<f32, f32>(&x, &y, |p, q| logaddexp_of(p, q, LN2 as f32))?.astype(d)?,
    };
    if traced(&x, &y) {
        r.node = record(Op::LogAddExp(x, y), &r);
    }
    Ok(r)
}

/// `sqrt(x)` for `std`: the same values, but its gradient is 0 where the
/// result is 0 ([`Op::Root`]).
pub fn root(x: &Tensor) -> VResult<Tensor> {
    let mut plain = x.clone();
    plain.node = None;
    let mut r = unary(UFn::Sqrt, &plain)?;
    if x.node.is_some() && r.dtype.is_float() {
        r.node = record(Op::Root(x.clone(), r.clone()), &r);
    }
    Ok(r)
}
