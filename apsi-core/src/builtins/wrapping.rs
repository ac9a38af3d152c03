//! The wrapping integer operations (LANGUAGE.md "Wrapping integer
//! operations"): `wrapping_add`, `wrapping_sub`, `wrapping_mul`,
//! `wrapping_shl` and `shr_u` on 64-bit two's-complement patterns.
//!
//! Plain ints are checked (an overflow raises); these are the explicit
//! forms that keep the low 64 bits instead, for hash functions and
//! counter-based random numbers (splitmix64, PCG, xorshift). `& | ^` and
//! `~` already act on the 64-bit pattern and never overflow; `>>` is
//! arithmetic (Python's), so `shr_u` is the logical one. Given an integer
//! or bool tensor (of any integer format) they work elementwise with
//! broadcasting and give an i64 tensor (`tensor::wrapping`); `@native`
//! compiles them to single machine instructions (apsi-native's `calls.rs`).
//! [`WrapOp::apply`] defines each one for all three.

use super::args::Args;
use crate::error::ErrorKind;
use crate::tensor::arith::Arg;
use crate::tensor::dtype::Kind;
use crate::value::{err, Exc, Kwargs, VResult, Value};

/// One wrapping operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrapOp {
    Add,
    Sub,
    Mul,
    /// `x << k` keeping the low 64 bits (0 from `k >= 64`).
    Shl,
    /// Logical right shift of the 64-bit pattern: zeros come in at the top (0 from `k >= 64`).
    ShrU,
}

impl WrapOp {
    pub const ALL: [WrapOp; 5] = [WrapOp::Add, WrapOp::Sub, WrapOp::Mul, WrapOp::Shl, WrapOp::ShrU];

    /// The prelude name.
    pub fn name(self) -> &'static str {
        match self {
            WrapOp::Add => "wrapping_add",
            WrapOp::Sub => "wrapping_sub",
            WrapOp::Mul => "wrapping_mul",
            WrapOp::Shl => "wrapping_shl",
            WrapOp::ShrU => "shr_u",
        }
    }

    pub fn from_name(name: &str) -> Option<WrapOp> {
        WrapOp::ALL.into_iter().find(|o| o.name() == name)
    }

    pub fn is_shift(self) -> bool {
        matches!(self, WrapOp::Shl | WrapOp::ShrU)
    }

    fn params(self) -> &'static [&'static str] {
        if self.is_shift() {
            &["x", "k"]
        } else {
            &["a", "b"]
        }
    }

    /// The result for `x` and `y`; `None` for a negative shift count (a
    /// `ValueError`, as for `<<` and `>>`).
    #[inline]
    pub fn apply(self, x: i64, y: i64) -> Option<i64> {
        Some(match self {
            WrapOp::Add => x.wrapping_add(y),
            WrapOp::Sub => x.wrapping_sub(y),
            WrapOp::Mul => x.wrapping_mul(y),
            WrapOp::Shl | WrapOp::ShrU if y < 0 => return None,
            WrapOp::Shl | WrapOp::ShrU if y >= 64 => 0,
            WrapOp::Shl => ((x as u64) << y) as i64,
            WrapOp::ShrU => ((x as u64) >> y) as i64,
        })
    }
}

pub(crate) fn negative_shift() -> Exc {
    err(ErrorKind::ValueError, "negative shift count")
}

/// An operand: a plain int (or bool), or an integer or bool tensor.
fn operand(op: WrapOp, param: &str, v: &Value) -> VResult<Arg> {
    let found = match v {
        Value::Int(i) => return Ok(Arg::Int(*i)),
        Value::Bool(b) => return Ok(Arg::Int(*b as i64)),
        other => match crate::tensor::as_tensor(other) {
            Some(t) if t.dtype.kind() != Kind::Float => return Ok(Arg::T(t)),
            Some(t) => format!("a {} tensor", t.dtype.name()),
            None => other.type_name().to_string(),
        },
    };
    Err(err(
        ErrorKind::TypeError,
        format!(
            "{}() argument '{param}' must be an int or an integer tensor, not {found}",
            op.name()
        ),
    ))
}

/// `op(a, b)` on values: two ints give an int, a tensor gives an i64 tensor.
pub fn wrapping_value(op: WrapOp, a: &Value, b: &Value) -> VResult<Value> {
    let params = op.params();
    let x = operand(op, params[0], a)?;
    let y = operand(op, params[1], b)?;
    match (&x, &y) {
        (Arg::Int(p), Arg::Int(q)) => op.apply(*p, *q).map(Value::Int).ok_or_else(negative_shift),
        _ => Ok(crate::tensor::tensor_value(crate::tensor::wrapping::wrapping(
            op, &x, &y,
        )?)),
    }
}

fn call(op: WrapOp, args: &[Value], kw: Kwargs) -> VResult<Value> {
    // Two ints by position: the fast path of a hash loop.
    if kw.is_empty() {
        if let [Value::Int(x), Value::Int(y)] = args {
            if let Some(r) = op.apply(*x, *y) {
                return Ok(Value::Int(r));
            }
        }
    }
    let a = Args::new(op.name(), args, kw, 2, op.params())?;
    wrapping_value(op, a.req(0)?, a.req(1)?)
}

pub(crate) fn wrapping_add(_c: &mut dyn crate::value::Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    call(WrapOp::Add, args, kw)
}

pub(crate) fn wrapping_sub(_c: &mut dyn crate::value::Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    call(WrapOp::Sub, args, kw)
}

pub(crate) fn wrapping_mul(_c: &mut dyn crate::value::Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    call(WrapOp::Mul, args, kw)
}

pub(crate) fn wrapping_shl(_c: &mut dyn crate::value::Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    call(WrapOp::Shl, args, kw)
}

pub(crate) fn shr_u(_c: &mut dyn crate::value::Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    call(WrapOp::ShrU, args, kw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::str_of;
    #[allow(unused_imports)]
    use crate::ops::Must;
    use crate::ops::NoCaller;

    fn call2(f: crate::value::NativeFnPtr, a: Value, b: Value) -> VResult<Value> {
        f(&mut NoCaller, &[a, b], &[])
    }

    /// splitmix64 of `state` (the state advanced by the golden gamma first),
    /// written with the wrapping operations as a program would.
    fn splitmix64(state: i64) -> i64 {
        let add = |a, b| WrapOp::Add.apply(a, b).must();
        let mul = |a, b| WrapOp::Mul.apply(a, b).must();
        let shr = |a, k| WrapOp::ShrU.apply(a, k).must();
        let mut z = add(state, 0x9E3779B97F4A7C15u64 as i64);
        z = mul(z ^ shr(z, 30), 0xBF58476D1CE4E5B9u64 as i64);
        z = mul(z ^ shr(z, 27), 0x94D049BB133111EBu64 as i64);
        z ^ shr(z, 31)
    }

    #[test]
    fn scalars_wrap_at_64_bits() {
        assert_eq!(WrapOp::Add.apply(i64::MAX, 1), Some(i64::MIN));
        assert_eq!(WrapOp::Sub.apply(i64::MIN, 1), Some(i64::MAX));
        assert_eq!(WrapOp::Mul.apply(1 << 62, 4), Some(0));
        assert_eq!(WrapOp::Mul.apply(-1, i64::MIN), Some(i64::MIN));
        assert_eq!(WrapOp::Shl.apply(3, 63), Some(i64::MIN));
        assert_eq!(WrapOp::Shl.apply(1, 64), Some(0));
        assert_eq!(WrapOp::ShrU.apply(-1, 1), Some(i64::MAX));
        assert_eq!(WrapOp::ShrU.apply(-1, 63), Some(1));
        assert_eq!(WrapOp::ShrU.apply(-1, 0), Some(-1));
        assert_eq!(WrapOp::ShrU.apply(-1, 64), Some(0));
        assert_eq!(WrapOp::ShrU.apply(5, -1), None);
        assert_eq!(WrapOp::Shl.apply(5, i64::MIN), None);
        // Reference values of splitmix64 (Vigna's C code, seed 0 then 1, 2, 3 gammas).
        assert_eq!(splitmix64(0) as u64, 0xE220A8397B1DCDAF);
        assert_eq!(splitmix64(0x9E3779B97F4A7C15u64 as i64) as u64, 0x6E789E6AA1B965F4);
    }

    #[test]
    fn prelude_functions_check_their_arguments() {
        let r = call2(wrapping_mul, Value::Int(i64::MAX), Value::Int(3)).must();
        assert_eq!(str_of(&r), "9223372036854775805");
        let r = call2(shr_u, Value::Int(-8), Value::Bool(true)).must();
        assert_eq!(str_of(&r), "9223372036854775804");
        let e = call2(shr_u, Value::Int(1), Value::Int(-2)).unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::ValueError, "negative shift count")
        );
        let e = call2(wrapping_add, Value::Float(1.5), Value::Int(1)).unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (
                ErrorKind::TypeError,
                "wrapping_add() argument 'a' must be an int or an integer tensor, not float"
            )
        );
        let e = call2(wrapping_shl, Value::Int(1), Value::str("3")).unwrap_err();
        assert_eq!(
            e.message,
            "wrapping_shl() argument 'k' must be an int or an integer tensor, not str"
        );
        let e = wrapping_add(&mut NoCaller, &[Value::Int(1)], &[]).unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::TypeError, "wrapping_add() missing required argument 'b'")
        );
    }

    #[test]
    fn names_round_trip() {
        for op in WrapOp::ALL {
            assert_eq!(WrapOp::from_name(op.name()), Some(op));
        }
        assert_eq!(WrapOp::from_name("wrapping_div"), None);
    }
}
