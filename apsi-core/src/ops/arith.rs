//! Arithmetic and bitwise operators (`+ - * / // % ** @ & | ^ << >>`, unary
//! `- + ~ not`) with Python's semantics on 64-bit checked ints.

use super::protocol::call_dunder;
use crate::error::ErrorKind;
use crate::syntax::ast::{BinOp, UnaryOp};
use crate::value::{err, Exc, VResult, Value};

/// A number operand: bools take part as ints, as in Python.
#[derive(Clone, Copy)]
pub(crate) enum Num {
    I(i64),
    F(f64),
}

pub(crate) fn num(v: &Value) -> Option<Num> {
    match v {
        Value::Int(i) => Some(Num::I(*i)),
        Value::Bool(b) => Some(Num::I(*b as i64)),
        Value::Float(f) => Some(Num::F(*f)),
        _ => None,
    }
}

fn unsupported(op: BinOp, a: &Value, b: &Value) -> Exc {
    err(
        ErrorKind::TypeError,
        format!(
            "unsupported operand types for {}: '{}' and '{}'",
            op.symbol(),
            a.type_name(),
            b.type_name()
        ),
    )
}

fn overflow(op: BinOp, a: i64, b: i64) -> Exc {
    err(
        ErrorKind::OverflowError,
        format!("integer overflow: {a} {} {b} does not fit in a 64-bit int", op.symbol()),
    )
}

fn dunder_names(op: BinOp) -> (&'static str, &'static str) {
    match op {
        BinOp::Add => ("__add__", "__radd__"),
        BinOp::Sub => ("__sub__", "__rsub__"),
        BinOp::Mul => ("__mul__", "__rmul__"),
        BinOp::Div => ("__truediv__", "__rtruediv__"),
        BinOp::FloorDiv => ("__floordiv__", "__rfloordiv__"),
        BinOp::Mod => ("__mod__", "__rmod__"),
        BinOp::Pow => ("__pow__", "__rpow__"),
        BinOp::MatMul => ("__matmul__", "__rmatmul__"),
        BinOp::BitAnd => ("__and__", "__rand__"),
        BinOp::BitOr => ("__or__", "__ror__"),
        BinOp::BitXor => ("__xor__", "__rxor__"),
        BinOp::Shl => ("__lshift__", "__rlshift__"),
        BinOp::Shr => ("__rshift__", "__rrshift__"),
    }
}

/// `a op b`.
pub fn binary(op: BinOp, a: &Value, b: &Value) -> VResult<Value> {
    if matches!(a, Value::Struct(_)) || matches!(b, Value::Struct(_)) {
        if let Some(r) = super::dunder::binary(op, a, b) {
            return r;
        }
    }
    if let (Some(x), Some(y)) = (num(a), num(b)) {
        if let (Value::Bool(p), Value::Bool(q)) = (a, b) {
            match op {
                BinOp::BitAnd => return Ok(Value::Bool(*p & *q)),
                BinOp::BitOr => return Ok(Value::Bool(*p | *q)),
                BinOp::BitXor => return Ok(Value::Bool(*p ^ *q)),
                _ => {}
            }
        }
        return match (x, y) {
            (Num::I(x), Num::I(y)) => int_op(op, x, y, a, b),
            (Num::I(x), Num::F(y)) => float_op(op, x as f64, y, a, b),
            (Num::F(x), Num::I(y)) => float_op(op, x, y as f64, a, b),
            (Num::F(x), Num::F(y)) => float_op(op, x, y, a, b),
        };
    }
    if let (BinOp::Mod, Value::Str(fmt)) = (op, a) {
        return crate::format::percent::percent_format(fmt.as_str(), b);
    }
    if matches!(a, Value::Bytes(_)) || matches!(b, Value::Bytes(_)) {
        if let Some(r) = crate::builtins::bytes_binary(op, a, b) {
            return r;
        }
    }
    if matches!(a, Value::Object(_)) || matches!(b, Value::Object(_)) {
        // Typed hooks of module objects first: the left operand, then the
        // right one reflected.
        if let Value::Object(o) = a {
            if o.0.protocols().arith {
                if let Some(v) = o.0.binary(a, op, b, false)? {
                    return Ok(v);
                }
            }
        }
        if let Value::Object(o) = b {
            if o.0.protocols().arith {
                if let Some(v) = o.0.binary(b, op, a, true)? {
                    return Ok(v);
                }
            }
        }
        let (fwd, rev) = dunder_names(op);
        if let Some(r) = call_dunder(a, fwd, std::slice::from_ref(b)) {
            return r;
        }
        if let Some(r) = call_dunder(b, rev, std::slice::from_ref(a)) {
            return r;
        }
        return Err(unsupported(op, a, b));
    }
    if let Some(r) = super::sets::binary(op, a, b) {
        return r;
    }
    match (op, a, b) {
        (BinOp::Add, Value::Str(x), Value::Str(y)) => {
            let mut s = String::with_capacity(x.as_str().len() + y.as_str().len());
            s.push_str(x.as_str());
            s.push_str(y.as_str());
            Ok(Value::str(s))
        }
        (BinOp::Add, Value::List(x), Value::List(y)) => {
            let mut items = x.items.read().clone();
            let more = y.items.read().clone();
            items.extend(more);
            Ok(Value::list(items))
        }
        (BinOp::Add, Value::Tuple(x), Value::Tuple(y)) => {
            let mut items = x.0.to_vec();
            items.extend_from_slice(&y.0);
            Ok(Value::tuple(items))
        }
        (BinOp::BitOr, Value::Dict(x), Value::Dict(y)) => {
            let mut map = x.map.read().clone();
            let more = y.map.read().clone();
            map.extend(more);
            Ok(Value::dict(map))
        }
        (BinOp::Mul, seq, n) | (BinOp::Mul, n, seq)
            if matches!(seq, Value::Str(_) | Value::List(_) | Value::Tuple(_))
                && matches!(n, Value::Int(_) | Value::Bool(_)) =>
        {
            let count = match num(n) {
                Some(Num::I(c)) => c.max(0) as usize,
                _ => 0,
            };
            repeat(seq, count)
        }
        _ => Err(unsupported(op, a, b)),
    }
}

/// The most bytes of text one repetition may create.
const MAX_REPEAT_BYTES: usize = 1 << 30;
/// The most elements one repetition may create.
const MAX_REPEAT: usize = 1 << 27;

pub(crate) fn repeat(seq: &Value, count: usize) -> VResult<Value> {
    let too_long = || err(ErrorKind::OverflowError, "repeated sequence is too long");
    // An empty sequence repeated any number of times is empty (and must
    // not loop `count` times doing nothing).
    let empty = match seq {
        Value::Str(s) => s.as_str().is_empty(),
        Value::List(l) => l.items.read().is_empty(),
        Value::Tuple(t) => t.0.is_empty(),
        _ => false,
    };
    let count = if empty { 0 } else { count };
    match seq {
        Value::Str(s) => {
            let n = s
                .as_str()
                .len()
                .checked_mul(count)
                .filter(|n| *n <= MAX_REPEAT_BYTES)
                .ok_or_else(too_long)?;
            let mut out = String::new();
            out.try_reserve_exact(n).map_err(|_| too_long())?;
            for _ in 0..count {
                out.push_str(s.as_str());
            }
            Ok(Value::str(out))
        }
        Value::List(l) => {
            let items = l.items.read().clone();
            let n = items
                .len()
                .checked_mul(count)
                .filter(|n| *n <= MAX_REPEAT)
                .ok_or_else(too_long)?;
            let mut out = Vec::new();
            out.try_reserve_exact(n).map_err(|_| too_long())?;
            for _ in 0..count {
                out.extend(items.iter().cloned());
            }
            Ok(Value::list(out))
        }
        Value::Tuple(t) => {
            let n =
                t.0.len()
                    .checked_mul(count)
                    .filter(|n| *n <= MAX_REPEAT)
                    .ok_or_else(too_long)?;
            let mut out = Vec::new();
            out.try_reserve_exact(n).map_err(|_| too_long())?;
            for _ in 0..count {
                out.extend(t.0.iter().cloned());
            }
            Ok(Value::tuple(out))
        }
        other => Err(err(
            ErrorKind::TypeError,
            format!("cannot repeat a {}", other.type_name()),
        )),
    }
}

/// Python's floor division of ints (rounds toward negative infinity).
pub(crate) fn int_floordiv(x: i64, y: i64) -> Option<i64> {
    let q = x.checked_div(y)?;
    if x % y != 0 && ((x < 0) != (y < 0)) {
        q.checked_sub(1)
    } else {
        Some(q)
    }
}

/// Python's modulo of ints (the result has the sign of the divisor).
pub(crate) fn int_mod(x: i64, y: i64) -> i64 {
    let r = x.wrapping_rem(y);
    if r != 0 && ((r < 0) != (y < 0)) {
        r + y
    } else {
        r
    }
}

fn int_op(op: BinOp, x: i64, y: i64, a: &Value, b: &Value) -> VResult<Value> {
    let checked = |r: Option<i64>| r.map(Value::Int).ok_or_else(|| overflow(op, x, y));
    match op {
        BinOp::Add => checked(x.checked_add(y)),
        BinOp::Sub => checked(x.checked_sub(y)),
        BinOp::Mul => checked(x.checked_mul(y)),
        BinOp::Div => {
            if y == 0 {
                return Err(err(ErrorKind::ZeroDivisionError, "division by zero"));
            }
            Ok(Value::Float(int_true_div(x, y)))
        }
        BinOp::FloorDiv => {
            if y == 0 {
                return Err(err(ErrorKind::ZeroDivisionError, "integer division by zero"));
            }
            checked(int_floordiv(x, y))
        }
        BinOp::Mod => {
            if y == 0 {
                return Err(err(ErrorKind::ZeroDivisionError, "integer modulo by zero"));
            }
            Ok(Value::Int(int_mod(x, y)))
        }
        BinOp::Pow => int_pow(x, y),
        BinOp::BitAnd => Ok(Value::Int(x & y)),
        BinOp::BitOr => Ok(Value::Int(x | y)),
        BinOp::BitXor => Ok(Value::Int(x ^ y)),
        BinOp::Shl => {
            if y < 0 {
                return Err(err(ErrorKind::ValueError, "negative shift count"));
            }
            if x == 0 {
                return Ok(Value::Int(0));
            }
            if y >= 64 {
                return Err(overflow(op, x, y));
            }
            let r = x << y;
            if r >> y != x {
                return Err(overflow(op, x, y));
            }
            Ok(Value::Int(r))
        }
        BinOp::Shr => {
            if y < 0 {
                return Err(err(ErrorKind::ValueError, "negative shift count"));
            }
            Ok(Value::Int(if y >= 64 {
                if x < 0 {
                    -1
                } else {
                    0
                }
            } else {
                x >> y
            }))
        }
        BinOp::MatMul => Err(unsupported(op, a, b)),
    }
}

fn int_pow(x: i64, y: i64) -> VResult<Value> {
    if y < 0 {
        if x == 0 {
            return Err(err(
                ErrorKind::ZeroDivisionError,
                "0 cannot be raised to a negative power",
            ));
        }
        return Ok(Value::Float((x as f64).powf(y as f64)));
    }
    match x {
        0 => return Ok(Value::Int(if y == 0 { 1 } else { 0 })),
        1 => return Ok(Value::Int(1)),
        -1 => return Ok(Value::Int(if y % 2 == 0 { 1 } else { -1 })),
        _ => {}
    }
    u32::try_from(y)
        .ok()
        .and_then(|e| x.checked_pow(e))
        .map(Value::Int)
        .ok_or_else(|| overflow(BinOp::Pow, x, y))
}

/// Python's float floor division (`float.__floordiv__`).
pub(crate) fn float_floordiv(x: f64, y: f64) -> f64 {
    let m = x % y;
    let mut div = (x - m) / y;
    if m != 0.0 && ((y < 0.0) != (m < 0.0)) {
        div -= 1.0;
    }
    if div != 0.0 {
        let mut f = div.floor();
        if div - f > 0.5 {
            f += 1.0;
        }
        f
    } else {
        (0.0f64).copysign(x / y)
    }
}

/// Python's float modulo (the result has the sign of the divisor).
pub(crate) fn float_mod(x: f64, y: f64) -> f64 {
    let m = x % y;
    if m != 0.0 {
        if (y < 0.0) != (m < 0.0) {
            m + y
        } else {
            m
        }
    } else {
        (0.0f64).copysign(y)
    }
}

/// Python's `float ** float`.
pub(crate) fn float_pow(x: f64, y: f64) -> VResult<f64> {
    if x == 0.0 && y < 0.0 {
        return Err(err(
            ErrorKind::ZeroDivisionError,
            "0.0 cannot be raised to a negative power",
        ));
    }
    if x < 0.0 && x.is_finite() && y.is_finite() && y.fract() != 0.0 {
        return Err(err(
            ErrorKind::ValueError,
            "a negative number cannot be raised to a fractional power",
        ));
    }
    let r = x.powf(y);
    if r.is_infinite() && x.is_finite() && y.is_finite() {
        return Err(err(ErrorKind::OverflowError, "float power result too large"));
    }
    Ok(r)
}

fn float_op(op: BinOp, x: f64, y: f64, a: &Value, b: &Value) -> VResult<Value> {
    let r = match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => {
            if y == 0.0 {
                return Err(err(ErrorKind::ZeroDivisionError, "float division by zero"));
            }
            x / y
        }
        BinOp::FloorDiv => {
            if y == 0.0 {
                return Err(err(ErrorKind::ZeroDivisionError, "float floor division by zero"));
            }
            float_floordiv(x, y)
        }
        BinOp::Mod => {
            if y == 0.0 {
                return Err(err(ErrorKind::ZeroDivisionError, "float modulo by zero"));
            }
            float_mod(x, y)
        }
        BinOp::Pow => float_pow(x, y)?,
        _ => return Err(unsupported(op, a, b)),
    };
    Ok(Value::Float(r))
}

/// `op v` for `- + ~ not`.
pub fn unary(op: UnaryOp, v: &Value) -> VResult<Value> {
    if op == UnaryOp::Not {
        return Ok(Value::Bool(!v.truthy()?));
    }
    if let Some(r) = super::dunder::unary(op, v) {
        return r;
    }
    match (op, v) {
        (UnaryOp::Neg, Value::Int(i)) => i.checked_neg().map(Value::Int).ok_or_else(|| {
            err(
                ErrorKind::OverflowError,
                format!("integer overflow: -({i}) does not fit in a 64-bit int"),
            )
        }),
        (UnaryOp::Neg, Value::Bool(b)) => Ok(Value::Int(-(*b as i64))),
        (UnaryOp::Neg, Value::Float(f)) => Ok(Value::Float(-f)),
        (UnaryOp::Pos, Value::Int(i)) => Ok(Value::Int(*i)),
        (UnaryOp::Pos, Value::Bool(b)) => Ok(Value::Int(*b as i64)),
        (UnaryOp::Pos, Value::Float(f)) => Ok(Value::Float(*f)),
        (UnaryOp::Invert, Value::Int(i)) => Ok(Value::Int(!i)),
        (UnaryOp::Invert, Value::Bool(b)) => Ok(Value::Int(!(*b as i64))),
        (_, Value::Object(_)) => {
            let name = match op {
                UnaryOp::Neg => "__neg__",
                UnaryOp::Pos => "__pos__",
                _ => "__invert__",
            };
            call_dunder(v, name, &[]).unwrap_or_else(|| Err(bad_unary(op, v)))
        }
        _ => Err(bad_unary(op, v)),
    }
}

fn bad_unary(op: UnaryOp, v: &Value) -> Exc {
    let sym = match op {
        UnaryOp::Neg => "-",
        UnaryOp::Pos => "+",
        UnaryOp::Invert => "~",
        UnaryOp::Not => "not",
    };
    err(
        ErrorKind::TypeError,
        format!("bad operand type for unary {sym}: '{}'", v.type_name()),
    )
}

/// `x / y` for ints, correctly rounded to the nearest float (ties to even)
/// for every pair of 64-bit operands, as CPython's `int / int` is. Operands
/// of at most 53 bits are exact floats, so one float division rounds once;
/// wider ones are divided exactly in 128-bit integers to 55 significant
/// bits, and the last two bits and the remainder decide the rounding.
/// `y` must not be 0.
pub fn int_true_div(x: i64, y: i64) -> f64 {
    const EXACT: u64 = 1 << 53;
    if x.unsigned_abs() <= EXACT && y.unsigned_abs() <= EXACT {
        return x as f64 / y as f64;
    }
    if x == 0 {
        return if (y < 0) != (x < 0) { -0.0 } else { 0.0 };
    }
    let negative = (x < 0) != (y < 0);
    let (n, d) = (x.unsigned_abs() as u128, y.unsigned_abs() as u128);
    let bits = |v: u128| 128 - v.leading_zeros() as i32;
    // Scale so that the quotient has 55 or 56 bits: n·2^s / d.
    let s = 55 - (bits(n) - bits(d));
    let (num, den) = if s >= 0 { (n << s, d) } else { (n, d << -s) };
    let mut q = num / den;
    let mut sticky = num % den != 0;
    let mut exp = -s;
    if q >= 1 << 56 {
        sticky |= q & 1 != 0;
        q >>= 1;
        exp += 1;
    }
    if q >= 1 << 55 {
        sticky |= q & 1 != 0;
        q >>= 1;
        exp += 1;
    }
    // q has 55 bits: 53 to keep, then a guard bit and a round bit.
    let low = q & 3;
    let mut m = q >> 2;
    exp += 2;
    if low > 2 || (low == 2 && (sticky || m & 1 == 1)) {
        m += 1;
    }
    let v = m as f64 * 2f64.powi(exp);
    if negative {
        -v
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::str_of;
    #[allow(unused_imports)]
    use crate::ops::Must;

    fn b(op: BinOp, x: Value, y: Value) -> VResult<Value> {
        binary(op, &x, &y)
    }
    fn ok(op: BinOp, x: Value, y: Value) -> String {
        str_of(&b(op, x, y).must())
    }
    fn kind(op: BinOp, x: Value, y: Value) -> ErrorKind {
        b(op, x, y).unwrap_err().kind
    }
    use Value::{Float as F, Int as I};

    #[test]
    fn python_division_and_modulo() {
        assert_eq!(ok(BinOp::Div, I(7), I(2)), "3.5");
        assert_eq!(ok(BinOp::FloorDiv, I(7), I(2)), "3");
        assert_eq!(ok(BinOp::FloorDiv, I(-7), I(2)), "-4");
        assert_eq!(ok(BinOp::Mod, I(-7), I(3)), "2");
        assert_eq!(ok(BinOp::Mod, I(7), I(-3)), "-2");
        assert_eq!(ok(BinOp::Mod, F(10.5), I(3)), "1.5");
        assert_eq!(ok(BinOp::Mod, F(-1.0), F(3.0)), "2.0");
        assert_eq!(ok(BinOp::FloorDiv, F(-7.5), F(2.0)), "-4.0");
        assert_eq!(ok(BinOp::Mod, I(i64::MIN), I(-1)), "0");
        assert_eq!(kind(BinOp::FloorDiv, I(i64::MIN), I(-1)), ErrorKind::OverflowError);
        assert_eq!(kind(BinOp::FloorDiv, I(7), I(0)), ErrorKind::ZeroDivisionError);
        assert_eq!(kind(BinOp::Mod, I(7), I(0)), ErrorKind::ZeroDivisionError);
        assert_eq!(kind(BinOp::Div, F(1.0), F(0.0)), ErrorKind::ZeroDivisionError);
        assert_eq!(kind(BinOp::Mod, F(1.0), F(-0.0)), ErrorKind::ZeroDivisionError);
        assert_eq!(kind(BinOp::FloorDiv, F(1.0), I(0)), ErrorKind::ZeroDivisionError);
    }

    #[test]
    fn checked_int_arithmetic() {
        assert_eq!(kind(BinOp::Add, I(i64::MAX), I(1)), ErrorKind::OverflowError);
        assert_eq!(kind(BinOp::Sub, I(i64::MIN), I(1)), ErrorKind::OverflowError);
        assert_eq!(kind(BinOp::Mul, I(1 << 32), I(1 << 31)), ErrorKind::OverflowError);
        assert_eq!(ok(BinOp::Pow, I(2), I(62)), "4611686018427387904");
        assert_eq!(kind(BinOp::Pow, I(2), I(63)), ErrorKind::OverflowError);
        assert_eq!(ok(BinOp::Pow, I(-2), I(63)), "-9223372036854775808");
        assert_eq!(ok(BinOp::Pow, I(2), I(-1)), "0.5");
        assert_eq!(ok(BinOp::Pow, I(-1), I(i64::MAX)), "-1");
        assert_eq!(kind(BinOp::Pow, I(0), I(-1)), ErrorKind::ZeroDivisionError);
        assert_eq!(kind(BinOp::Pow, F(0.0), I(-1)), ErrorKind::ZeroDivisionError);
        assert_eq!(kind(BinOp::Pow, F(10.0), F(400.0)), ErrorKind::OverflowError);
        assert_eq!(ok(BinOp::Pow, F(2.0), F(0.5)), "1.4142135623730951");
        assert_eq!(ok(BinOp::Add, Value::Bool(true), I(1)), "2");
        assert_eq!(ok(BinOp::Add, Value::Bool(true), F(0.5)), "1.5");
    }

    #[test]
    fn bits_and_shifts() {
        assert_eq!(ok(BinOp::BitAnd, I(5), I(3)), "1");
        assert_eq!(ok(BinOp::BitOr, I(5), I(3)), "7");
        assert_eq!(ok(BinOp::BitXor, I(5), I(3)), "6");
        assert_eq!(ok(BinOp::Shl, I(1), I(4)), "16");
        assert_eq!(ok(BinOp::Shl, I(1), I(62)), "4611686018427387904");
        assert_eq!(kind(BinOp::Shl, I(1), I(63)), ErrorKind::OverflowError);
        assert_eq!(ok(BinOp::Shl, I(-1), I(63)), "-9223372036854775808");
        assert_eq!(kind(BinOp::Shl, I(1), I(-1)), ErrorKind::ValueError);
        assert_eq!(ok(BinOp::Shr, I(-8), I(100)), "-1");
        assert_eq!(ok(BinOp::Shr, I(-8), I(1)), "-4");
        assert_eq!(ok(BinOp::BitAnd, Value::Bool(true), Value::Bool(false)), "false");
        assert_eq!(kind(BinOp::BitAnd, F(1.0), I(1)), ErrorKind::TypeError);
    }

    #[test]
    fn sequences() {
        assert_eq!(ok(BinOp::Add, Value::str("ab"), Value::str("c")), "abc");
        assert_eq!(ok(BinOp::Mul, Value::str("ab"), I(3)), "ababab");
        assert_eq!(ok(BinOp::Mul, I(2), Value::list(vec![I(1)])), "[1, 1]");
        assert_eq!(ok(BinOp::Mul, Value::list(vec![I(1)]), I(-3)), "[]");
        assert_eq!(
            ok(BinOp::Add, Value::tuple(vec![I(1)]), Value::tuple(vec![I(2)])),
            "(1, 2)"
        );
        assert_eq!(ok(BinOp::Mul, Value::tuple(vec![I(1)]), I(2)), "(1, 1)");
        assert_eq!(
            kind(BinOp::Mul, Value::str("ab"), I(i64::MAX)),
            ErrorKind::OverflowError
        );
        assert_eq!(ok(BinOp::Mul, Value::list(vec![]), I(i64::MAX)), "[]");
        assert_eq!(ok(BinOp::Mul, Value::str(""), I(i64::MAX)), "");
        assert_eq!(ok(BinOp::Mul, I(i64::MAX), Value::tuple(vec![])), "()");
        let e = b(BinOp::Add, I(1), Value::str("x")).unwrap_err();
        assert_eq!(e.message, "unsupported operand types for +: 'int' and 'str'");
    }

    #[test]
    fn unary_ops() {
        assert_eq!(str_of(&unary(UnaryOp::Neg, &I(3)).must()), "-3");
        assert_eq!(
            unary(UnaryOp::Neg, &I(i64::MIN)).unwrap_err().kind,
            ErrorKind::OverflowError
        );
        assert_eq!(str_of(&unary(UnaryOp::Invert, &I(0)).must()), "-1");
        assert_eq!(str_of(&unary(UnaryOp::Not, &Value::list(vec![])).must()), "true");
        assert_eq!(str_of(&unary(UnaryOp::Neg, &F(0.0)).must()), "-0.0");
        assert_eq!(
            unary(UnaryOp::Neg, &Value::str("x")).unwrap_err().kind,
            ErrorKind::TypeError
        );
    }

    #[test]
    fn int_true_div_is_correctly_rounded_as_in_cpython() {
        // (x, y, CPython's x / y), from python3 3.11.
        let cases: &[(i64, i64, f64)] = &[
            (1741530386164897330, 7, 2.4879005516641392e+17),
            (-9223372036854775808, 3, -3.0744573456182584e+18),
            (9223372036854775807, -9223372036854775808, -1.0),
            (9223372036854775807, 1, 9.223372036854776e+18),
            (9007199254740993, 1, 9007199254740992.0),
            (9007199254740995, 2, 4503599627370498.0),
            (-1152921504606846977, 3, -3.843071682022823e+17),
            (1, 9223372036854775807, 1.0842021724855044e-19),
            (123456789012345678, 1000, 123456789012345.67),
            (4611686018427387905, 1024, 4503599627370496.0),
            (9007199254740993, 18014398509481986, 0.5),
            (-9223372036854775808, -1, 9.223372036854776e+18),
            (9223372036854775807, 9223372036854775807, 1.0),
            (8261657684473197624, -549, -1.5048556802319122e+16),
            (1527169275425311224, 445, 3431841068371486.0),
            (-4783923260488021105, -1392375180351672626, 3.435800442291527),
            (8253990209213004835, -1905908760335480075, -4.330737326460543),
            (-3881023613069443411, 750522153793611428, -5.17109800617118),
            (2562501216369800041, 545, 4701837094256514.0),
            (-3428379579663223016, -255, 1.3444625802600874e+16),
            (5161945549082021012, 1372875159667766079, 3.7599526167632056),
            (-7873054320740221640, -1510367338119166020, 5.21267516983279),
            (7992424660898182485, 359, 2.2263021339549256e+16),
            (5476690359863214875, 6271298756702532305, 0.873294443835885),
            (-1002750821430351451, -2822254768612912354, 0.355301311767536),
        ];
        for &(x, y, want) in cases {
            let got = int_true_div(x, y);
            assert_eq!(got.to_bits(), want.to_bits(), "{x} / {y}: {got:e}, CPython {want:e}");
        }
    }

    proptest::proptest! {
        #[test]
        fn int_true_div_matches_float_division_for_exact_operands(x in -(1i64 << 53)..(1i64 << 53), y in 1i64..(1 << 53)) {
            proptest::prop_assert_eq!(int_true_div(x, y).to_bits(), (x as f64 / y as f64).to_bits());
            proptest::prop_assert_eq!(int_true_div(x, -y).to_bits(), (x as f64 / -y as f64).to_bits());
        }
    }
}
