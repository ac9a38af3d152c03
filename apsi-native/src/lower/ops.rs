//! Truth tests, arithmetic, unary operators and comparisons on typed
//! values: the numeric promotions of the native subset.

use super::*;

impl FnLower<'_> {
    pub(crate) fn truth(&mut self, st: &[T], a: usize) -> R<Var> {
        let (t, v) = self.get(st, a)?;
        match t {
            T::Bool => Ok(v[0]),
            T::Int | T::Float => {
                let d = self.new_var(Ty::Bool);
                self.push(Op::Truthy { dst: d, src: v[0] });
                Ok(d)
            }
            T::None => Ok(self.konst(Const::Bool(false))),
            T::Unknown => Ok(self.konst(Const::Bool(false))),
            other => Err(self.bad(format!("the truth value of {}", other.describe()))),
        }
    }

    pub(super) fn numeric_pair(&mut self, st: &[T], b: usize, c: usize, what: &str) -> R<Option<(T, T)>> {
        let (tb, _) = self.get(st, b)?;
        let (tc, _) = self.get(st, c)?;
        if matches!(tb, T::Unknown) || matches!(tc, T::Unknown) {
            return Ok(None);
        }
        if !tb.is_num() || !tc.is_num() {
            let bad = if tb.is_num() { &tc } else { &tb };
            let hint = if matches!(bad, T::Tensor(..)) {
                " (whole-tensor arithmetic is not native: write the loop)"
            } else {
                ""
            };
            return Err(self.bad(format!("{what} on {}{hint}", bad.describe())));
        }
        Ok(Some((tb, tc)))
    }

    pub(super) fn binary(&mut self, st: &mut [T], op: BinOp, a: usize, b: usize, c: usize) -> R<()> {
        let Some((tb, tc)) = self.numeric_pair(st, b, c, &format!("the operator {}", op.symbol()))? else {
            if let Some(x) = st.get_mut(a) {
                *x = T::Unknown;
            }
            return Ok(());
        };
        let both_int = !matches!(tb, T::Float) && !matches!(tc, T::Float);
        let line = self.line();
        if both_int {
            let iop = match op {
                BinOp::Add => Some(IntOp::Add),
                BinOp::Sub => Some(IntOp::Sub),
                BinOp::Mul => Some(IntOp::Mul),
                BinOp::FloorDiv => Some(IntOp::FloorDiv),
                BinOp::Mod => Some(IntOp::Mod),
                BinOp::BitAnd => Some(IntOp::BitAnd),
                BinOp::BitOr => Some(IntOp::BitOr),
                BinOp::BitXor => Some(IntOp::BitXor),
                BinOp::Shl => Some(IntOp::Shl),
                BinOp::Shr => Some(IntOp::Shr),
                BinOp::Pow => {
                    match self.const_int_before(c as Reg) {
                        Some(k) if k >= 0 => Some(IntOp::Pow),
                        _ => return Err(self.bad("int ** int with an exponent that is not a non-negative constant (its result type depends on the sign; use a float)")),
                    }
                }
                BinOp::Div => None,
                BinOp::MatMul => return Err(self.bad("the operator @")),
            };
            if matches!(tb, T::Bool)
                && matches!(tc, T::Bool)
                && matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor)
            {
                return Err(self.bad("bitwise operators on two bools (use and/or)"));
            }
            if let Some(iop) = iop {
                let x = self.scalar_as(st, b, &T::Int)?;
                let y = self.scalar_as(st, c, &T::Int)?;
                let d = self.new_var(Ty::Int);
                self.push(Op::IntBin {
                    op: iop,
                    dst: d,
                    a: x,
                    b: y,
                    line,
                });
                self.set(st, a, T::Int, &[d]);
                return Ok(());
            }
        }
        let fop = match op {
            BinOp::Add => FloatOp::Add,
            BinOp::Sub => FloatOp::Sub,
            BinOp::Mul => FloatOp::Mul,
            BinOp::Div => FloatOp::Div,
            BinOp::FloorDiv => FloatOp::FloorDiv,
            BinOp::Mod => FloatOp::Mod,
            BinOp::Pow => FloatOp::Pow,
            _ => return Err(self.bad(format!("the operator {} on a float", op.symbol()))),
        };
        let x = self.scalar_as(st, b, &T::Float)?;
        let y = self.scalar_as(st, c, &T::Float)?;
        let d = self.new_var(Ty::Float);
        self.push(Op::FloatBin {
            op: fop,
            dst: d,
            a: x,
            b: y,
            line,
        });
        self.set(st, a, T::Float, &[d]);
        Ok(())
    }

    pub(super) fn unary(&mut self, st: &mut [T], op: UnaryOp, a: usize, b: usize) -> R<()> {
        let (t, _) = self.get(st, b)?;
        if matches!(t, T::Unknown) {
            if let Some(x) = st.get_mut(a) {
                *x = T::Unknown;
            }
            return Ok(());
        }
        match op {
            UnaryOp::Not => {
                let c = self.truth(st, b)?;
                let d = self.new_var(Ty::Bool);
                self.push(Op::Not { dst: d, src: c });
                self.set(st, a, T::Bool, &[d]);
            }
            UnaryOp::Neg | UnaryOp::Pos => {
                let want = if matches!(t, T::Float) { T::Float } else { T::Int };
                if !t.is_num() {
                    return Err(self.bad(format!(
                        "unary {} on {}",
                        if op == UnaryOp::Neg { "-" } else { "+" },
                        t.describe()
                    )));
                }
                let x = self.scalar_as(st, b, &want)?;
                if op == UnaryOp::Pos {
                    self.set(st, a, want, &[x]);
                } else {
                    let line = self.line();
                    let d = self.new_var(if want == T::Float { Ty::Float } else { Ty::Int });
                    self.push(Op::Neg { dst: d, src: x, line });
                    self.set(st, a, want, &[d]);
                }
            }
            UnaryOp::Invert => {
                if !matches!(t, T::Int | T::Bool) {
                    return Err(self.bad(format!("~ on {}", t.describe())));
                }
                let x = self.scalar_as(st, b, &T::Int)?;
                let d = self.new_var(Ty::Int);
                self.push(Op::Invert { dst: d, src: x });
                self.set(st, a, T::Int, &[d]);
            }
        }
        Ok(())
    }

    pub(super) fn compare(&mut self, st: &[T], op: CmpOp, b: usize, c: usize) -> R<Var> {
        let iop = match op {
            CmpOp::Eq => ir::CmpOp::Eq,
            CmpOp::NotEq => ir::CmpOp::Ne,
            CmpOp::Lt => ir::CmpOp::Lt,
            CmpOp::LtE => ir::CmpOp::Le,
            CmpOp::Gt => ir::CmpOp::Gt,
            CmpOp::GtE => ir::CmpOp::Ge,
            other => return Err(self.bad(format!("the comparison {}", other.symbol()))),
        };
        let Some((tb, tc)) = self.numeric_pair(st, b, c, &format!("the comparison {}", op.symbol()))? else {
            return Ok(self.konst(Const::Bool(false)));
        };
        let want = if matches!(tb, T::Float) || matches!(tc, T::Float) {
            T::Float
        } else if matches!(tb, T::Bool) && matches!(tc, T::Bool) {
            T::Bool
        } else {
            T::Int
        };
        let x = self.scalar_as(st, b, &want)?;
        let y = self.scalar_as(st, c, &want)?;
        let d = self.new_var(Ty::Bool);
        self.push(Op::Cmp {
            op: iop,
            dst: d,
            a: x,
            b: y,
        });
        Ok(d)
    }
}
