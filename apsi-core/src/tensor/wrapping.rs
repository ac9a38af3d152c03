//! The wrapping integer operations elementwise (`wrapping_add(x, y)` with a
//! tensor operand; the prelude side and the definition of each operation
//! are `builtins/wrapping.rs`). Both operands become i64 (any integer
//! format or bool is widened first), broadcast as for `+`, and the result is
//! an i64 tensor: the operations are defined on 64-bit patterns, so an i32
//! tensor gives the same numbers as plain ints would. A negative shift
//! count anywhere is a `ValueError`, as for plain ints.

use super::arith::Arg;
use super::core::Tensor;
use super::dtype::DType;
use super::kernels::zip;
use crate::builtins::wrapping::{negative_shift, WrapOp};
use crate::value::VResult;

/// `op(a, b)` elementwise; the caller has checked that neither operand is a float.
pub fn wrapping(op: WrapOp, a: &Arg, b: &Arg) -> VResult<Tensor> {
    let x = a.to_tensor(DType::I64)?;
    let y = b.to_tensor(DType::I64)?;
    if op.is_shift() {
        let neg = y.with_slice::<i64, _>(|s, l| l.offsets().iter().any(|&o| s.get(o).is_some_and(|v| *v < 0)));
        if neg {
            return Err(negative_shift());
        }
    }
    // One kernel per operation, so each loop is a plain (vectorisable) one.
    match op {
        WrapOp::Add => zip::<i64, i64>(&x, &y, |p, q| p.wrapping_add(q)),
        WrapOp::Sub => zip::<i64, i64>(&x, &y, |p, q| p.wrapping_sub(q)),
        WrapOp::Mul => zip::<i64, i64>(&x, &y, |p, q| p.wrapping_mul(q)),
        WrapOp::Shl => zip::<i64, i64>(&x, &y, |p, q| WrapOp::Shl.apply(p, q).unwrap_or(0)),
        WrapOp::ShrU => zip::<i64, i64>(&x, &y, |p, q| WrapOp::ShrU.apply(p, q).unwrap_or(0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    #[allow(unused_imports)]
    use crate::ops::Must;

    fn ints(t: &Tensor) -> Vec<i64> {
        t.with_slice::<i64, _>(|s, l| l.offsets().iter().map(|&o| s[o]).collect())
    }

    #[test]
    fn elementwise_with_broadcasting_gives_i64() {
        let x = Tensor::from_vec(vec![i64::MAX, -1, 5], vec![3]);
        let r = wrapping(WrapOp::Add, &Arg::T(x.clone()), &Arg::Int(1)).must();
        assert_eq!((r.dtype, ints(&r)), (DType::I64, vec![i64::MIN, 0, 6]));
        let r = wrapping(WrapOp::ShrU, &Arg::T(x.clone()), &Arg::Int(62)).must();
        assert_eq!(ints(&r), vec![1, 3, 0]);
        let k = Tensor::from_vec(vec![0i64, 1, 64], vec![3]);
        let r = wrapping(WrapOp::Shl, &Arg::Int(3), &Arg::T(k)).must();
        assert_eq!(ints(&r), vec![3, 6, 0]);
        let small = x.astype(DType::I32).must();
        let r = wrapping(WrapOp::Mul, &Arg::T(small), &Arg::Int(1 << 40)).must();
        assert_eq!((r.dtype, ints(&r)), (DType::I64, vec![-(1 << 40), -(1 << 40), 5 << 40]));
    }

    #[test]
    fn a_negative_count_anywhere_raises() {
        let k = Tensor::from_vec(vec![1i64, -1], vec![2]);
        let e = wrapping(WrapOp::ShrU, &Arg::Int(8), &Arg::T(k)).err().must();
        assert_eq!(e.kind, ErrorKind::ValueError);
    }
}
