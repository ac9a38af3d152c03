//! Constant folding. Folds only what cannot fail: an operation that would
//! raise at run time (1/0, overflow, a type error) is left for the VM, so
//! the error still happens, at the right moment and place.

use crate::syntax::ast::{BinOp, Expr, ExprKind, UnaryOp};

/// A folded constant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Folded {
    Int(i64),
    Float(f64),
}

pub fn fold(e: &Expr) -> Option<Folded> {
    match &e.kind {
        ExprKind::Int(i) => Some(Folded::Int(*i)),
        ExprKind::Float(f) => Some(Folded::Float(*f)),
        ExprKind::UnaryOp { op, operand } => {
            let v = fold(operand)?;
            match (op, v) {
                (UnaryOp::Neg, Folded::Int(i)) => i.checked_neg().map(Folded::Int),
                (UnaryOp::Neg, Folded::Float(f)) => Some(Folded::Float(-f)),
                (UnaryOp::Pos, v) => Some(v),
                (UnaryOp::Invert, Folded::Int(i)) => Some(Folded::Int(!i)),
                _ => None,
            }
        }
        ExprKind::BinOp { op, left, right } => {
            let (a, b) = (fold(left)?, fold(right)?);
            fold_bin(*op, a, b)
        }
        _ => None,
    }
}

fn fold_bin(op: BinOp, a: Folded, b: Folded) -> Option<Folded> {
    use Folded::*;
    match (a, b) {
        (Int(x), Int(y)) => match op {
            BinOp::Add => x.checked_add(y).map(Int),
            BinOp::Sub => x.checked_sub(y).map(Int),
            BinOp::Mul => x.checked_mul(y).map(Int),
            BinOp::Pow if (0..=64).contains(&y) => x.checked_pow(y as u32).map(Int),
            // A negative power of a non-zero int is the float the VM computes
            // (`2 ** -53`); `0 ** -1` raises, so it stays.
            BinOp::Pow if y < 0 && x != 0 => {
                Some(Float((x as f64).powf(y as f64))).filter(|f| matches!(f, Float(r) if r.is_finite()))
            }
            BinOp::BitAnd => Some(Int(x & y)),
            BinOp::BitOr => Some(Int(x | y)),
            BinOp::BitXor => Some(Int(x ^ y)),
            BinOp::Shl if (0..63).contains(&y) => {
                let r = x.checked_shl(y as u32)?;
                (r >> y == x).then_some(Int(r))
            }
            _ => None,
        },
        (Float(_), _) | (_, Float(_)) => {
            let x = as_f(a);
            let y = as_f(b);
            let r = match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                // `float_pow`'s result where it cannot raise: finite operands,
                // no zero to a negative power, no negative base to a fractional one.
                BinOp::Pow
                    if x.is_finite() && y.is_finite() && !(x == 0.0 && y < 0.0) && !(x < 0.0 && y.fract() != 0.0) =>
                {
                    x.powf(y)
                }
                _ => return None,
            };
            r.is_finite().then_some(Float(r))
        }
    }
}

fn as_f(v: Folded) -> f64 {
    match v {
        Folded::Int(i) => i as f64,
        Folded::Float(f) => f,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Span;

    fn e(kind: ExprKind) -> Expr {
        Expr {
            kind,
            span: Span::default(),
        }
    }
    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        e(ExprKind::BinOp {
            op,
            left: Box::new(a),
            right: Box::new(b),
        })
    }

    #[test]
    fn folds_safe_arithmetic() {
        assert_eq!(
            fold(&bin(BinOp::Add, e(ExprKind::Int(2)), e(ExprKind::Int(3)))),
            Some(Folded::Int(5))
        );
        assert_eq!(
            fold(&bin(BinOp::Pow, e(ExprKind::Int(2)), e(ExprKind::Int(10)))),
            Some(Folded::Int(1024))
        );
        assert_eq!(
            fold(&bin(BinOp::Mul, e(ExprKind::Float(1.5)), e(ExprKind::Int(2)))),
            Some(Folded::Float(3.0))
        );
        // The scale of a 53-bit random integer, written either way.
        assert_eq!(
            fold(&bin(BinOp::Pow, e(ExprKind::Int(2)), e(ExprKind::Int(-53)))),
            Some(Folded::Float(1.0 / 9007199254740992.0))
        );
        assert_eq!(
            fold(&bin(BinOp::Pow, e(ExprKind::Float(2.0)), e(ExprKind::Int(-53)))),
            Some(Folded::Float(1.0 / 9007199254740992.0))
        );
        assert_eq!(
            fold(&bin(BinOp::Pow, e(ExprKind::Float(2.0)), e(ExprKind::Float(0.5)))),
            Some(Folded::Float(2.0f64.powf(0.5)))
        );
    }

    #[test]
    fn never_folds_errors() {
        assert_eq!(fold(&bin(BinOp::Div, e(ExprKind::Int(1)), e(ExprKind::Int(0)))), None);
        assert_eq!(
            fold(&bin(BinOp::Add, e(ExprKind::Int(i64::MAX)), e(ExprKind::Int(1)))),
            None
        );
        assert_eq!(fold(&bin(BinOp::Pow, e(ExprKind::Int(0)), e(ExprKind::Int(-1)))), None);
        assert_eq!(
            fold(&bin(BinOp::Pow, e(ExprKind::Float(0.0)), e(ExprKind::Int(-1)))),
            None
        );
        assert_eq!(
            fold(&bin(BinOp::Pow, e(ExprKind::Float(-8.0)), e(ExprKind::Float(0.5)))),
            None
        );
        assert_eq!(
            fold(&bin(BinOp::Pow, e(ExprKind::Float(10.0)), e(ExprKind::Int(400)))),
            None
        );
        assert_eq!(
            fold(&bin(BinOp::Mul, e(ExprKind::Float(1e300)), e(ExprKind::Float(1e300)))),
            None
        );
    }
}
