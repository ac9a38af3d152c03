//! Integer arithmetic with Python's semantics (floor division, modulo,
//! powers, overflow checks) and the math functions.

use super::*;

impl<'ctx> Gen<'_, 'ctx> {
    /// Python's `x % y`. A dividend in `[0, 2y)` (`(i + 1) % n`,
    /// `(j + n - 1) % n`: the periodic indices of stencils and lattices)
    /// needs no division: it is `x` or `x - y`, found by two compares on
    /// the way to the division (a 64-bit `idiv` costs 40-90 cycles).
    fn int_mod(&self, st: &FnState<'ctx>, x: IntValue<'ctx>, y: IntValue<'ctx>, line: u32) -> R<IntValue<'ctx>> {
        let z = self.i64c(0);
        let pos = self.icmp(IntPredicate::SGT, y, z)?;
        // With y > 0: x <u y is 0 <= x < y (a negative x is a large unsigned one).
        let below = self.icmp(IntPredicate::ULT, x, y)?;
        let below = e(self.b.build_and(pos, below, "below"))?;
        // With y > 0 and x >= y: x - y cannot wrap, and x - y < y is x < 2y.
        let d = e(self.b.build_int_sub(x, y, "d"))?;
        let ge = self.icmp(IntPredicate::SGE, x, y)?;
        let lt2 = self.icmp(IntPredicate::ULT, d, y)?;
        let once = e(self.b.build_and(ge, lt2, "once"))?;
        let once = e(self.b.build_and(pos, once, "once"))?;
        let quick = e(self.b.build_or(below, once, "quick"))?;
        let r_quick = e(self.b.build_select(below, x, d, "mq"))?.into_int_value();
        let (divide, join) = (self.new_bb(st, "mod_divide"), self.new_bb(st, "mod_join"));
        let quick_end = self.b.get_insert_block().ok_or("no block")?;
        e(self.b.build_conditional_branch(quick, join, divide))?;
        self.b.position_at_end(divide);
        let r_div = self.floor_div_mod(st, false, x, y, line)?;
        let divide_end = self.b.get_insert_block().ok_or("no block")?;
        e(self.b.build_unconditional_branch(join))?;
        self.b.position_at_end(join);
        let phi = e(self.b.build_phi(self.ctx.i64_type(), "mod"))?;
        phi.add_incoming(&[(&r_quick, quick_end), (&r_div, divide_end)]);
        Ok(phi.as_basic_value().into_int_value())
    }

    /// Python's `x // y` (`div`) or `x % y` by a division (floor
    /// semantics; zero and `i64::MIN // -1` raise).
    fn floor_div_mod(
        &self,
        st: &FnState<'ctx>,
        div: bool,
        x: IntValue<'ctx>,
        y: IntValue<'ctx>,
        line: u32,
    ) -> R<IntValue<'ctx>> {
        let z = self.i64c(0);
        let dz = self.icmp(IntPredicate::EQ, y, z)?;
        self.raise_if(st, dz, err::INT_DIV_ZERO, line, [x, y, self.i64c(!div as i64)])?;
        let m1 = self.icmp(IntPredicate::EQ, y, self.i64c(-1))?;
        if div {
            let mn = self.icmp(IntPredicate::EQ, x, self.i64c(i64::MIN))?;
            let o = e(self.b.build_and(m1, mn, "o"))?;
            self.raise_if(st, o, err::INT_OVERFLOW, line, [x, y, z])?;
        }
        // Avoid sdiv/srem overflow UB for y == -1 (handled above / remainder 0).
        let ys = e(self.b.build_select(m1, self.i64c(1), y, "ys"))?.into_int_value();
        let q0 = e(self.b.build_int_signed_div(x, ys, "q"))?;
        let q0 = if div {
            let nx = e(self.b.build_int_neg(x, "nx"))?;
            e(self.b.build_select(m1, nx, q0, "q"))?.into_int_value()
        } else {
            q0
        };
        let r0 = e(self.b.build_int_signed_rem(x, ys, "r"))?;
        let r0 = e(self.b.build_select(m1, z, r0, "r"))?.into_int_value();
        let nz = self.icmp(IntPredicate::NE, r0, z)?;
        let sx = e(self.b.build_xor(r0, y, "sx"))?;
        let diff = self.icmp(IntPredicate::SLT, sx, z)?;
        let adj = e(self.b.build_and(nz, diff, "adj"))?;
        Ok(if div {
            let q1 = e(self.b.build_int_sub(q0, self.i64c(1), "q1"))?;
            e(self.b.build_select(adj, q1, q0, "fd"))?.into_int_value()
        } else {
            let r1 = e(self.b.build_int_add(r0, y, "r1"))?;
            e(self.b.build_select(adj, r1, r0, "md"))?.into_int_value()
        })
    }

    pub(super) fn int_bin(
        &self,
        st: &FnState<'ctx>,
        op: IntOp,
        x: IntValue<'ctx>,
        y: IntValue<'ctx>,
        line: u32,
    ) -> R<IntValue<'ctx>> {
        let z = self.i64c(0);
        Ok(match op {
            IntOp::Add | IntOp::Sub | IntOp::Mul => {
                let name = match op {
                    IntOp::Add => "llvm.sadd.with.overflow.i64",
                    IntOp::Sub => "llvm.ssub.with.overflow.i64",
                    _ => "llvm.smul.with.overflow.i64",
                };
                let (_, o) = self.overflow_op(name, x, y)?;
                self.raise_if(st, o, err::INT_OVERFLOW, line, [x, y, z])?;
                match op {
                    IntOp::Add => e(self.b.build_int_nsw_add(x, y, "nsw"))?,
                    IntOp::Sub => e(self.b.build_int_nsw_sub(x, y, "nsw"))?,
                    _ => e(self.b.build_int_nsw_mul(x, y, "nsw"))?,
                }
            }
            IntOp::Mod => self.int_mod(st, x, y, line)?,
            IntOp::FloorDiv => self.floor_div_mod(st, true, x, y, line)?,
            IntOp::WrapAdd => e(self.b.build_int_add(x, y, "wadd"))?,
            IntOp::WrapSub => e(self.b.build_int_sub(x, y, "wsub"))?,
            IntOp::WrapMul => e(self.b.build_int_mul(x, y, "wmul"))?,
            IntOp::WrapShl | IntOp::ShrU => {
                let neg = self.icmp(IntPredicate::SLT, y, z)?;
                self.raise_if(st, neg, err::NEG_SHIFT, line, [x, y, z])?;
                // Counts of 64 and more give 0 (LLVM's shifts would be poison there).
                let big = self.icmp(IntPredicate::UGT, y, self.i64c(63))?;
                let ys = e(self.b.build_select(big, z, y, "ys"))?.into_int_value();
                let r = if op == IntOp::ShrU {
                    e(self.b.build_right_shift(x, ys, false, "shru"))?
                } else {
                    e(self.b.build_left_shift(x, ys, "wshl"))?
                };
                e(self.b.build_select(big, z, r, "wsh"))?.into_int_value()
            }
            IntOp::BitAnd => e(self.b.build_and(x, y, "and"))?,
            IntOp::BitOr => e(self.b.build_or(x, y, "or"))?,
            IntOp::BitXor => e(self.b.build_xor(x, y, "xor"))?,
            IntOp::Shl | IntOp::Shr => {
                let neg = self.icmp(IntPredicate::SLT, y, z)?;
                self.raise_if(st, neg, err::NEG_SHIFT, line, [x, y, z])?;
                let big = self.icmp(IntPredicate::SGE, y, self.i64c(64))?;
                let ys = e(self.b.build_select(big, self.i64c(63), y, "ys"))?.into_int_value();
                if op == IntOp::Shr {
                    e(self.b.build_right_shift(x, ys, true, "shr"))?
                } else {
                    let xz = self.icmp(IntPredicate::EQ, x, z)?;
                    let r = e(self.b.build_left_shift(x, ys, "shl"))?;
                    let back = e(self.b.build_right_shift(r, ys, true, "back"))?;
                    let lost = self.icmp(IntPredicate::NE, back, x)?;
                    let bad = e(self.b.build_or(big, lost, "bad"))?;
                    let nxz = e(self.b.build_not(xz, "nxz"))?;
                    let bad = e(self.b.build_and(bad, nxz, "bad"))?;
                    self.raise_if(st, bad, err::INT_OVERFLOW, line, [x, y, z])?;
                    r
                }
            }
            IntOp::Pow => {
                let i64t = self.ctx.i64_type();
                let hf = self.host_fn(
                    "apsi_rt_ipow",
                    &[
                        self.ctxp_ty(),
                        i64t.into(),
                        i64t.into(),
                        self.ctx.i32_type().into(),
                        i64t.ptr_type(AddressSpace::default()).into(),
                    ],
                );
                let out = e(self.b.build_alloca(i64t, "o"))?;
                let s = self.call(
                    hf,
                    &[
                        st.ctxp.into(),
                        x.into(),
                        y.into(),
                        self.i32c(line as i64).into(),
                        out.into(),
                    ],
                )?;
                self.check_status(st, s.into_int_value())?;
                e(self.b.build_load(out, "r"))?.into_int_value()
            }
        })
    }

    /// The result of `mf`, and for the float → int functions also the
    /// integral float the int was converted from.
    pub(super) fn math(
        &self,
        st: &FnState<'ctx>,
        mf: MathFn,
        args: &[Var],
        line: u32,
    ) -> R<(BasicValueEnum<'ctx>, Option<FloatValue<'ctx>>)> {
        let z = self.i64c(0);
        let id = self.i64c(mf as i64);
        let x = self.fval(st, *args.first().ok_or("math arity")?)?;
        let y = match args.get(1) {
            Some(v) => Some(self.fval(st, *v)?),
            None => None,
        };
        // fastmath: C's semantics (a domain error gives NaN, an overflow an infinity).
        let fast = self.m.fastmath;
        let domain = |cond: IntValue<'ctx>| {
            if fast {
                Ok(())
            } else {
                self.raise_if(st, cond, err::DOMAIN, line, [id, z, z])
            }
        };
        // The interpreter's one-argument functions: an infinite result of a
        // finite argument is an OverflowError. Only an argument past `limit`
        // (in magnitude when `abs`) can overflow, so the test of the result
        // is on a separate path taken for those: the usual path keeps no
        // copy of the argument across the call to test it afterwards.
        let ranged = |name: &str, limit: f64, abs: bool| -> R<BasicValueEnum<'ctx>> {
            if fast {
                return Ok(self.f1(name, x)?.into());
            }
            let a = if abs { self.f1("llvm.fabs.f64", x)? } else { x };
            let near = self.fcmp(FloatPredicate::OGT, a, self.f64c(limit))?;
            let (usual, edge, join) = (
                self.new_bb(st, "rng_usual"),
                self.new_bb(st, "rng_edge"),
                self.new_bb(st, "rng_join"),
            );
            let near = self.unlikely(near)?;
            e(self.b.build_conditional_branch(near, edge, usual))?;
            self.b.position_at_end(usual);
            let r1 = self.f1(name, x)?;
            e(self.b.build_unconditional_branch(join))?;
            self.b.position_at_end(edge);
            // The argument's test first, so the two paths do not start alike
            // (SimplifyCFG would hoist a common first call back above the branch).
            let fin = self.is_finite(x)?;
            let r2 = self.f1(name, x)?;
            let inf = self.is_inf(r2)?;
            let bad = e(self.b.build_and(inf, fin, "rng"))?;
            self.raise_if(st, bad, err::RANGE, line, [id, z, z])?;
            let edge_end = self.b.get_insert_block().ok_or("no block")?;
            e(self.b.build_unconditional_branch(join))?;
            self.b.position_at_end(join);
            let phi = e(self.b.build_phi(self.ctx.f64_type(), "rng_r"))?;
            phi.add_incoming(&[(&r1, usual), (&r2, edge_end)]);
            Ok(phi.as_basic_value())
        };
        let zero = self.f64c(0.0);
        let to_int = match mf {
            MathFn::Floor => Some("llvm.floor.f64"),
            MathFn::Ceil => Some("llvm.ceil.f64"),
            // Python's round(x): half to even.
            MathFn::Round => Some("llvm.roundeven.f64"),
            _ => None,
        };
        if let Some(name) = to_int {
            let r = self.f1(name, x)?;
            return Ok((self.float_to_int(st, r, line)?.into(), Some(r)));
        }
        Ok((
            match mf {
                MathFn::Sqrt => {
                    domain(self.fcmp(FloatPredicate::OLT, x, zero)?)?;
                    // The square root of a finite number is finite: no range check.
                    self.f1("llvm.sqrt.f64", x)?.into()
                }
                // exp(709) is 8.2e307: below it nothing overflows.
                MathFn::Exp => ranged("llvm.exp.f64", 709.0, false)?,
                MathFn::Log => {
                    domain(self.fcmp(FloatPredicate::OLE, x, zero)?)?;
                    self.f1("llvm.log.f64", x)?.into()
                }
                MathFn::Log2 => {
                    domain(self.fcmp(FloatPredicate::OLE, x, zero)?)?;
                    // The logarithm of a positive finite double is finite: no range check.
                    self.f1("llvm.log2.f64", x)?.into()
                }
                MathFn::Log10 => {
                    domain(self.fcmp(FloatPredicate::OLE, x, zero)?)?;
                    self.f1("llvm.log10.f64", x)?.into()
                }
                MathFn::Log1p => {
                    domain(self.fcmp(FloatPredicate::OLE, x, self.f64c(-1.0))?)?;
                    self.f1("log1p", x)?.into()
                }
                MathFn::Sin | MathFn::Cos | MathFn::Tan => {
                    domain(self.is_inf(x)?)?;
                    let name = match mf {
                        MathFn::Sin => "llvm.sin.f64",
                        MathFn::Cos => "llvm.cos.f64",
                        _ => "tan",
                    };
                    // No range check: of a finite double these are finite (tan's
                    // largest is about 1.6e16), so the interpreter's OverflowError
                    // cannot happen. Without a check between them, `sin(a)` and
                    // `cos(a)` stay in one block and become one `sincos` call.
                    self.f1(name, x)?.into()
                }
                // Bounded results: no range check (as for sin).
                MathFn::Atan => self.f1("atan", x)?.into(),
                // sinh and cosh of 709 in magnitude are 4.1e307.
                MathFn::Sinh => ranged("sinh", 709.0, true)?,
                MathFn::Cosh => ranged("cosh", 709.0, true)?,
                MathFn::Tanh => self.f1("tanh", x)?.into(),
                MathFn::Abs => self.f1("llvm.fabs.f64", x)?.into(),
                MathFn::Floor | MathFn::Ceil | MathFn::Round => return Err("internal error: float to int".into()),
                MathFn::IsNan => self.fcmp(FloatPredicate::UNO, x, x)?.into(),
                MathFn::IsInf => self.is_inf(x)?.into(),
                MathFn::Atan2 => self.f2("atan2", x, y.ok_or("arity")?)?.into(),
                MathFn::Hypot => self.f2("hypot", x, y.ok_or("arity")?)?.into(),
                MathFn::Min | MathFn::Max => {
                    let y = y.ok_or("arity")?;
                    let p = if mf == MathFn::Max {
                        FloatPredicate::OGT
                    } else {
                        FloatPredicate::OLT
                    };
                    let take_y = self.fcmp(p, y, x)?;
                    e(self.b.build_select(take_y, y, x, "mm"))?
                }
                MathFn::Minimum | MathFn::Maximum => {
                    let y = y.ok_or("arity")?;
                    // NaN first (x's, then y's), else y when it orders before/after x.
                    let xn = self.fcmp(FloatPredicate::UNO, x, x)?;
                    let yn = self.fcmp(FloatPredicate::UNO, y, y)?;
                    let p = if mf == MathFn::Maximum {
                        FloatPredicate::OLT
                    } else {
                        FloatPredicate::OGT
                    };
                    let take_y = self.fcmp(p, x, y)?;
                    let r = e(self.b.build_select(take_y, y, x, "mm"))?;
                    let r = e(self.b.build_select(yn, y.into(), r, "mm"))?;
                    e(self.b.build_select(xn, x.into(), r, "mm"))?
                }
            },
            None,
        ))
    }
}
