//! IR operations to LLVM instructions: the primitives (checked int ops,
//! float predicates, element pointers) and `emit_op`, one IR op at a time.

use super::*;

impl<'ctx> Gen<'_, 'ctx> {
    // ---------- operations ----------

    pub(super) fn overflow_op(
        &self,
        name: &str,
        a: IntValue<'ctx>,
        b: IntValue<'ctx>,
    ) -> R<(IntValue<'ctx>, IntValue<'ctx>)> {
        let i64t = self.ctx.i64_type();
        let rt = self.ctx.struct_type(&[i64t.into(), self.ctx.bool_type().into()], false);
        let f = self.intr(name, rt.into(), &[i64t.into(), i64t.into()]);
        let r = self.call(f, &[a.into(), b.into()])?.into_struct_value();
        let v = e(self.b.build_extract_value(r, 0, "v"))?.into_int_value();
        let o = e(self.b.build_extract_value(r, 1, "o"))?.into_int_value();
        Ok((v, o))
    }

    pub(super) fn f1(&self, name: &str, x: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        let f64t = self.ctx.f64_type();
        let f = self.intr(name, f64t.into(), &[f64t.into()]);
        Ok(self.call(f, &[x.into()])?.into_float_value())
    }
    pub(super) fn f2(&self, name: &str, x: FloatValue<'ctx>, y: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        let f64t = self.ctx.f64_type();
        let f = self.intr(name, f64t.into(), &[f64t.into(), f64t.into()]);
        Ok(self.call(f, &[x.into(), y.into()])?.into_float_value())
    }

    pub(super) fn fcmp(&self, p: FloatPredicate, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> R<IntValue<'ctx>> {
        e(self.b.build_float_compare(p, a, b, "c"))
    }
    pub(super) fn icmp(&self, p: IntPredicate, a: IntValue<'ctx>, b: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        e(self.b.build_int_compare(p, a, b, "c"))
    }
    pub(super) fn f64c(&self, x: f64) -> FloatValue<'ctx> {
        self.ctx.f64_type().const_float(x)
    }

    pub(super) fn is_inf(&self, x: FloatValue<'ctx>) -> R<IntValue<'ctx>> {
        let a = self.f1("llvm.fabs.f64", x)?;
        self.fcmp(FloatPredicate::OEQ, a, self.f64c(f64::INFINITY))
    }
    pub(super) fn is_finite(&self, x: FloatValue<'ctx>) -> R<IntValue<'ctx>> {
        let a = self.f1("llvm.fabs.f64", x)?;
        self.fcmp(FloatPredicate::OLT, a, self.f64c(f64::INFINITY))
    }

    /// Python's float → int of `floor`/`ceil`/`round` results (integral
    /// floats). One compare on the way: `|x| < 2^63` holds for every value
    /// that converts except -2^63; the rare rest (NaN, that one, the too
    /// large) is sorted out off the hot path.
    pub(super) fn float_to_int(&self, st: &FnState<'ctx>, x: FloatValue<'ctx>, line: u32) -> R<IntValue<'ctx>> {
        let z = self.i64c(0);
        let two63 = 9223372036854775808.0;
        let a = self.f1("llvm.fabs.f64", x)?;
        let fits = self.fcmp(FloatPredicate::OLT, a, self.f64c(two63))?;
        let (slow, cont) = (self.new_bb(st, "f2i_slow"), self.new_bb(st, "f2i"));
        let expect = self.intr(
            "llvm.expect.i1",
            self.ctx.bool_type().into(),
            &[self.ctx.bool_type().into(), self.ctx.bool_type().into()],
        );
        let c = e(self.b.build_call(
            expect,
            &[fits.into(), self.ctx.bool_type().const_int(1, false).into()],
            "c",
        ))?;
        let c = c.try_as_basic_value().left().ok_or("expect")?.into_int_value();
        e(self.b.build_conditional_branch(c, cont, slow))?;
        self.b.position_at_end(slow);
        let nan = self.fcmp(FloatPredicate::UNO, x, x)?;
        self.raise_if(st, nan, err::NAN_TO_INT, line, [z, z, z])?;
        let min = self.fcmp(FloatPredicate::OEQ, x, self.f64c(-two63))?;
        let fail = self.new_bb(st, "f2i_fail");
        e(self.b.build_conditional_branch(min, cont, fail))?;
        self.b.position_at_end(fail);
        self.set_err(st, err::FLOAT_TO_INT, line, [z, z, z])?;
        self.b.position_at_end(cont);
        e(self.b.build_float_to_signed_int(x, self.ctx.i64_type(), "i"))
    }

    pub(super) fn elem_ty(&self, dt: Dt) -> BasicTypeEnum<'ctx> {
        match dt {
            Dt::F64 => self.ctx.f64_type().into(),
            Dt::F32 => self.ctx.f32_type().into(),
            Dt::I64 => self.ctx.i64_type().into(),
            Dt::I32 => self.ctx.i32_type().into(),
            Dt::Bool => self.ctx.i8_type().into(),
        }
    }

    /// Address of element `idx` of tensor variable `t` (bounds checked unless
    /// turned off). Index `d` wraps when negative unless bit `d` of `nonneg` says it cannot be.
    pub(super) fn elem_ptr(
        &self,
        st: &FnState<'ctx>,
        f: &Func,
        t: Var,
        idx: &[Var],
        nonneg: u8,
        line: u32,
    ) -> R<(PointerValue<'ctx>, Dt)> {
        let Some(Ty::Tensor { dt, ndim, contig }) = f.ty(t) else {
            return Err("indexing a non-tensor".into());
        };
        if idx.len() != ndim as usize {
            return Err("index count mismatch".into());
        }
        let desc = self.load(st, t)?.into_struct_value();
        let shape = e(self.b.build_extract_value(desc, 2, "shape"))?.into_array_value();
        let strides = e(self.b.build_extract_value(desc, 3, "strides"))?.into_array_value();
        let mut dims = Vec::new();
        for d in 0..ndim as u32 {
            dims.push(e(self.b.build_extract_value(shape, d, "n"))?.into_int_value());
        }
        let mut off = self.i64c(0);
        let nd = ndim as usize;
        for (d, v) in idx.iter().enumerate() {
            let i = self.ival(st, *v)?;
            let n = dims[d];
            let j = if d < 8 && nonneg & (1 << d) != 0 {
                i
            } else {
                let neg = self.icmp(IntPredicate::SLT, i, self.i64c(0))?;
                let wrapped = e(self.b.build_int_add(i, n, "w"))?;
                e(self.b.build_select(neg, wrapped, i, "j"))?.into_int_value()
            };
            if self.m.boundscheck {
                let bad = self.icmp(IntPredicate::UGE, j, n)?;
                self.raise_if(st, bad, err::INDEX, line, [i, self.i64c(d as i64), n])?;
            }
            let stride = if contig {
                let mut s = self.i64c(1);
                for dd in dims.iter().take(nd).skip(d + 1) {
                    s = e(self.b.build_int_mul(s, *dd, "s"))?;
                }
                s
            } else {
                e(self.b.build_extract_value(strides, d as u32, "st"))?.into_int_value()
            };
            let term = e(self.b.build_int_nsw_mul(j, stride, "t"))?;
            off = e(self.b.build_int_nsw_add(off, term, "off"))?;
        }
        let data = e(self.b.build_extract_value(desc, 0, "data"))?.into_pointer_value();
        let et = self.elem_ty(dt);
        let p = e(self
            .b
            .build_pointer_cast(data, et.ptr_type(AddressSpace::default()), "ep"))?;
        let p = e(unsafe { self.b.build_in_bounds_gep(p, &[off], "el") })?;
        Ok((p, dt))
    }

    pub(super) fn emit_op(&self, st: &mut FnState<'ctx>, f: &Func, op: &Op) -> R<()> {
        let z = self.i64c(0);
        match op {
            Op::Label(_) => {}
            Op::Const { dst, c } => {
                let v: BasicValueEnum = match c {
                    Const::Int(i) => self.i64c(*i).into(),
                    Const::Float(bits) => self.f64c(f64::from_bits(*bits)).into(),
                    Const::Bool(b) => self.ctx.bool_type().const_int(*b as u64, false).into(),
                };
                self.store(st, *dst, v)?;
            }
            Op::Move { dst, src } => {
                let v = self.load(st, *src)?;
                let integral = st.integral.borrow().get(src).copied();
                self.store(st, *dst, v)?;
                if let Some(x) = integral {
                    st.integral.borrow_mut().insert(*dst, x);
                }
            }
            Op::Cast { dst, src } => {
                let (from, to) = (f.ty(*src).ok_or("cast")?, f.ty(*dst).ok_or("cast")?);
                let v = self.load(st, *src)?;
                // The int of `floor`/`ceil`/`round` back to a float is the
                // integral float it came from (`+ 0.0` makes -0.0 the +0.0
                // the int gives), without the two conversions.
                let integral = st.integral.borrow().get(src).copied();
                let r: BasicValueEnum = match (from, to) {
                    (a, b) if a == b => v,
                    (Ty::Int, Ty::Float) if integral.is_some() => {
                        let x = integral.ok_or("integral")?;
                        e(self.b.build_float_add(x, self.f64c(0.0), "f"))?.into()
                    }
                    (Ty::Int, Ty::Float) => {
                        e(self
                            .b
                            .build_signed_int_to_float(v.into_int_value(), self.ctx.f64_type(), "f"))?
                        .into()
                    }
                    (Ty::Bool, Ty::Float) => {
                        e(self
                            .b
                            .build_unsigned_int_to_float(v.into_int_value(), self.ctx.f64_type(), "f"))?
                        .into()
                    }
                    (Ty::Bool, Ty::Int) => {
                        e(self.b.build_int_z_extend(v.into_int_value(), self.ctx.i64_type(), "i"))?.into()
                    }
                    (Ty::Int, Ty::Bool) => self.icmp(IntPredicate::NE, v.into_int_value(), z)?.into(),
                    (Ty::Float, Ty::Bool) => self
                        .fcmp(FloatPredicate::UNE, v.into_float_value(), self.f64c(0.0))?
                        .into(),
                    _ => return Err(format!("internal error: cast {from:?} -> {to:?}")),
                };
                self.store(st, *dst, r)?;
            }
            Op::IntBin { op, dst, a, b, line } => {
                let (x, y) = (self.ival(st, *a)?, self.ival(st, *b)?);
                let r = self.int_bin(st, *op, x, y, *line)?;
                self.store(st, *dst, r.into())?;
            }
            Op::FloatBin { op, dst, a, b, line } => {
                let (x, y) = (self.fval(st, *a)?, self.fval(st, *b)?);
                let r = match op {
                    FloatOp::Add => e(self.b.build_float_add(x, y, "a"))?,
                    FloatOp::Sub => e(self.b.build_float_sub(x, y, "s"))?,
                    FloatOp::Mul => e(self.b.build_float_mul(x, y, "m"))?,
                    FloatOp::Div => {
                        // fastmath: C's float semantics (x / 0.0 is an infinity or NaN, no error).
                        if !self.m.fastmath {
                            let zero = self.fcmp(FloatPredicate::OEQ, y, self.f64c(0.0))?;
                            self.raise_if(st, zero, err::FLOAT_DIV_ZERO, *line, [z, z, z])?;
                        }
                        e(self.b.build_float_div(x, y, "d"))?
                    }
                    FloatOp::FloorDiv | FloatOp::Mod | FloatOp::Pow => {
                        let code = match op {
                            FloatOp::FloorDiv => 0,
                            FloatOp::Mod => 1,
                            _ => 2,
                        };
                        let f64t = self.ctx.f64_type();
                        let hf = self.host_fn(
                            "apsi_rt_fbin",
                            &[
                                self.ctxp_ty(),
                                self.ctx.i32_type().into(),
                                f64t.into(),
                                f64t.into(),
                                self.ctx.i32_type().into(),
                                f64t.ptr_type(AddressSpace::default()).into(),
                            ],
                        );
                        let out = e(self.b.build_alloca(f64t, "o"))?;
                        let s = self.call(
                            hf,
                            &[
                                st.ctxp.into(),
                                self.i32c(code).into(),
                                x.into(),
                                y.into(),
                                self.i32c(*line as i64).into(),
                                out.into(),
                            ],
                        )?;
                        self.check_status(st, s.into_int_value())?;
                        e(self.b.build_load(out, "r"))?.into_float_value()
                    }
                };
                self.store(st, *dst, r.into())?;
            }
            Op::Cmp { op, dst, a, b } => {
                let t = f.ty(*a).ok_or("cmp")?;
                let r = if t == Ty::Float {
                    let p = match op {
                        CmpOp::Eq => FloatPredicate::OEQ,
                        CmpOp::Ne => FloatPredicate::UNE,
                        CmpOp::Lt => FloatPredicate::OLT,
                        CmpOp::Le => FloatPredicate::OLE,
                        CmpOp::Gt => FloatPredicate::OGT,
                        CmpOp::Ge => FloatPredicate::OGE,
                    };
                    self.fcmp(p, self.fval(st, *a)?, self.fval(st, *b)?)?
                } else {
                    let signed = t == Ty::Int;
                    let p = match (op, signed) {
                        (CmpOp::Eq, _) => IntPredicate::EQ,
                        (CmpOp::Ne, _) => IntPredicate::NE,
                        (CmpOp::Lt, true) => IntPredicate::SLT,
                        (CmpOp::Le, true) => IntPredicate::SLE,
                        (CmpOp::Gt, true) => IntPredicate::SGT,
                        (CmpOp::Ge, true) => IntPredicate::SGE,
                        (CmpOp::Lt, false) => IntPredicate::ULT,
                        (CmpOp::Le, false) => IntPredicate::ULE,
                        (CmpOp::Gt, false) => IntPredicate::UGT,
                        (CmpOp::Ge, false) => IntPredicate::UGE,
                    };
                    self.icmp(p, self.ival(st, *a)?, self.ival(st, *b)?)?
                };
                self.store(st, *dst, r.into())?;
            }
            Op::Not { dst, src } => {
                let v = self.ival(st, *src)?;
                let r = e(self.b.build_not(v, "not"))?;
                self.store(st, *dst, r.into())?;
            }
            Op::Neg { dst, src, line } => {
                if f.ty(*src) == Some(Ty::Float) {
                    let r = e(self.b.build_float_neg(self.fval(st, *src)?, "neg"))?;
                    self.store(st, *dst, r.into())?;
                } else {
                    let x = self.ival(st, *src)?;
                    let (r, o) = self.overflow_op("llvm.ssub.with.overflow.i64", z, x)?;
                    self.raise_if(st, o, err::INT_OVERFLOW, *line, [z, x, z])?;
                    self.store(st, *dst, r.into())?;
                }
            }
            Op::Invert { dst, src } => {
                let r = e(self.b.build_not(self.ival(st, *src)?, "inv"))?;
                self.store(st, *dst, r.into())?;
            }
            Op::Truthy { dst, src } => {
                let r = if f.ty(*src) == Some(Ty::Float) {
                    self.fcmp(FloatPredicate::UNE, self.fval(st, *src)?, self.f64c(0.0))?
                } else {
                    self.icmp(IntPredicate::NE, self.ival(st, *src)?, z)?
                };
                self.store(st, *dst, r.into())?;
            }
            Op::Math { f: mf, dst, args, line } => {
                let (r, integral) = self.math(st, *mf, args, *line)?;
                self.store(st, *dst, r)?;
                if let Some(x) = integral {
                    st.integral.borrow_mut().insert(*dst, x);
                }
            }
            Op::IntMinMax { max, dst, a, b } => {
                let (x, y) = (self.ival(st, *a)?, self.ival(st, *b)?);
                // Python: min keeps a unless b < a; max keeps a unless b > a.
                let take_b = self.icmp(if *max { IntPredicate::SGT } else { IntPredicate::SLT }, y, x)?;
                let r = e(self.b.build_select(take_b, y, x, "mm"))?;
                self.store(st, *dst, r)?;
            }
            Op::IntAbs { dst, src, line } => {
                let x = self.ival(st, *src)?;
                let min = self.icmp(IntPredicate::EQ, x, self.i64c(i64::MIN))?;
                self.raise_if(st, min, err::INT_OVERFLOW, *line, [z, x, z])?;
                let neg = self.icmp(IntPredicate::SLT, x, z)?;
                let nx = e(self.b.build_int_neg(x, "n"))?;
                let r = e(self.b.build_select(neg, nx, x, "abs"))?;
                self.store(st, *dst, r)?;
            }
            Op::Dim { dst, t, axis } => {
                let desc = self.load(st, *t)?.into_struct_value();
                let shape = e(self.b.build_extract_value(desc, 2, "shape"))?.into_array_value();
                let n = e(self.b.build_extract_value(shape, *axis as u32, "n"))?;
                self.store(st, *dst, n)?;
            }
            Op::Size { dst, t } => {
                let Some(Ty::Tensor { ndim, .. }) = f.ty(*t) else {
                    return Err("size of a non-tensor".into());
                };
                let desc = self.load(st, *t)?.into_struct_value();
                let shape = e(self.b.build_extract_value(desc, 2, "shape"))?.into_array_value();
                let mut s = self.i64c(1);
                for d in 0..ndim as u32 {
                    let n = e(self.b.build_extract_value(shape, d, "n"))?.into_int_value();
                    s = e(self.b.build_int_mul(s, n, "s"))?;
                }
                self.store(st, *dst, s.into())?;
            }
            Op::Load {
                dst,
                t,
                idx,
                line,
                nonneg,
            } => {
                let (p, dt) = self.elem_ptr(st, f, *t, idx, *nonneg, *line)?;
                let v = e(self.b.build_load(p, "x"))?;
                let r: BasicValueEnum = match dt {
                    Dt::F64 | Dt::I64 => v,
                    Dt::F32 => e(self.b.build_float_ext(v.into_float_value(), self.ctx.f64_type(), "x"))?.into(),
                    Dt::I32 => e(self.b.build_int_s_extend(v.into_int_value(), self.ctx.i64_type(), "x"))?.into(),
                    Dt::Bool => self
                        .icmp(IntPredicate::NE, v.into_int_value(), self.ctx.i8_type().const_zero())?
                        .into(),
                };
                self.store(st, *dst, r)?;
            }
            Op::Store {
                t,
                idx,
                val,
                line,
                nonneg,
            } => {
                let (p, dt) = self.elem_ptr(st, f, *t, idx, *nonneg, *line)?;
                let v = self.load(st, *val)?;
                let w: BasicValueEnum = match dt {
                    Dt::F64 | Dt::I64 => v,
                    Dt::F32 => e(self.b.build_float_trunc(v.into_float_value(), self.ctx.f32_type(), "x"))?.into(),
                    Dt::I32 => e(self.b.build_int_truncate(v.into_int_value(), self.ctx.i32_type(), "x"))?.into(),
                    Dt::Bool => e(self.b.build_int_z_extend(v.into_int_value(), self.ctx.i8_type(), "x"))?.into(),
                };
                e(self.b.build_store(p, w))?;
            }
            Op::NewTensor { dst, dims, ones, line } => {
                let Some(Ty::Tensor { dt, .. }) = f.ty(*dst) else {
                    return Err("new tensor type".into());
                };
                let arr = self.words_array(dims.len(), "dims")?;
                for (k, d) in dims.iter().enumerate() {
                    e(self.b.build_store(self.word_at(arr, k)?, self.ival(st, *d)?))?;
                }
                let out = e(self.b.build_alloca(self.desc_ty, "nd"))?;
                let i32t = self.ctx.i32_type();
                let hf = self.host_fn(
                    "apsi_rt_alloc",
                    &[
                        self.ctxp_ty(),
                        i32t.into(),
                        i32t.into(),
                        self.ctx.i64_type().ptr_type(AddressSpace::default()).into(),
                        i32t.into(),
                        i32t.into(),
                        self.desc_ty.ptr_type(AddressSpace::default()).into(),
                    ],
                );
                let s = self.call(
                    hf,
                    &[
                        st.ctxp.into(),
                        self.i32c(dt.code() as i64).into(),
                        self.i32c(dims.len() as i64).into(),
                        arr.into(),
                        self.i32c(*ones as i64).into(),
                        self.i32c(*line as i64).into(),
                        out.into(),
                    ],
                )?;
                self.check_status(st, s.into_int_value())?;
                let v = e(self.b.build_load(out, "t"))?;
                self.store(st, *dst, v)?;
            }
            Op::CopyTensor { dst, src, line } => {
                let sp = e(self.b.build_alloca(self.desc_ty, "src"))?;
                e(self.b.build_store(sp, self.load(st, *src)?))?;
                let out = e(self.b.build_alloca(self.desc_ty, "cp"))?;
                let dp = self.desc_ty.ptr_type(AddressSpace::default());
                let hf = self.host_fn(
                    "apsi_rt_copy",
                    &[self.ctxp_ty(), dp.into(), self.ctx.i32_type().into(), dp.into()],
                );
                let s = self.call(
                    hf,
                    &[st.ctxp.into(), sp.into(), self.i32c(*line as i64).into(), out.into()],
                )?;
                self.check_status(st, s.into_int_value())?;
                let v = e(self.b.build_load(out, "t"))?;
                self.store(st, *dst, v)?;
            }
            Op::Call { func, args, dsts } => {
                let mut vals = Vec::new();
                for a in args {
                    vals.push(self.load(st, *a)?);
                }
                // Native frames share the thread's stack: bound the nesting
                // of recursive calls. A call that cannot lead back to its
                // caller adds at most one frame per function on the way (the
                // call graph without its cycles has no deeper path), so only
                // calls inside a cycle count; the others (a helper called in
                // a hot loop) pay nothing.
                let callee = *func as usize;
                let me = self.funcs.iter().position(|g| *g == st.f);
                let recursive = match me {
                    Some(me) => self
                        .reaches
                        .get(callee)
                        .is_none_or(|r| r.get(me).copied().unwrap_or(true)),
                    None => true,
                };
                let depth = if recursive {
                    let dp = e(self.b.build_struct_gep(st.ctxp, 6, "depth"))?;
                    let d = e(self.b.build_load(dp, "d"))?.into_int_value();
                    let d1 = e(self.b.build_int_add(d, self.i64c(1), "d1"))?;
                    let deep = self.icmp(IntPredicate::SGT, d1, self.i64c(MAX_NATIVE_DEPTH))?;
                    self.raise_if(st, deep, err::RECURSION, u32::MAX, [z, z, z])?;
                    e(self.b.build_store(dp, d1))?;
                    Some((dp, d))
                } else {
                    None
                };
                let (status, rets) = self.call_ir(callee, st.ctxp, vals)?;
                if let Some((dp, d)) = depth {
                    e(self.b.build_store(dp, d))?;
                }
                self.check_status(st, status)?;
                for (d, v) in dsts.iter().zip(rets) {
                    self.store(st, *d, v)?;
                }
            }
            Op::ParFor {
                chunk,
                lo,
                hi,
                step,
                env,
                init_first,
                init_rest,
                first,
                rest,
                nrest,
                line,
            } => {
                self.par_for(
                    st,
                    f,
                    *chunk,
                    [*lo, *hi, *step],
                    env,
                    init_first,
                    init_rest,
                    first,
                    *rest,
                    *nrest,
                    *line,
                )?;
            }
            Op::LoadPartial {
                dst,
                buf,
                row,
                width,
                slot,
            } => {
                let base = self.load(st, *buf)?.into_pointer_value();
                let r = self.ival(st, *row)?;
                let k = e(self.b.build_int_mul(r, self.i64c(*width as i64), "k"))?;
                let k = e(self.b.build_int_add(k, self.i64c(*slot as i64), "k"))?;
                let p = e(unsafe { self.b.build_gep(base, &[k], "pp") })?;
                let w = e(self.b.build_load(p, "w"))?.into_int_value();
                let v = self.word_to(w, f.ty(*dst).ok_or("partial")?)?;
                self.store(st, *dst, v)?;
            }
            Op::Jmp(l) => {
                let bb = self.label(st, *l);
                e(self.b.build_unconditional_branch(bb))?;
            }
            Op::Br { cond, then, els } => {
                let c = self.ival(st, *cond)?;
                let (t, x) = (self.label(st, *then), self.label(st, *els));
                e(self.b.build_conditional_branch(c, t, x))?;
            }
            Op::Ret(vs) => {
                for (p, v) in st.outs.clone().iter().zip(vs) {
                    let x = self.load(st, *v)?;
                    e(self.b.build_store(*p, x))?;
                }
                e(self.b.build_return(Some(&self.i32c(0))))?;
            }
            Op::Raise { code, line, a } => {
                let x = if f.ty(*a) == Some(Ty::Int) {
                    self.ival(st, *a)?
                } else {
                    z
                };
                self.set_err(st, *code, *line, [x, z, z])?;
            }
            Op::RangeTest {
                dst,
                a,
                stop,
                step,
                line,
            } => {
                let (x, s, k) = (self.ival(st, *a)?, self.ival(st, *stop)?, self.ival(st, *step)?);
                let zero = self.icmp(IntPredicate::EQ, k, z)?;
                self.raise_if(st, zero, err::RANGE_STEP, *line, [z, z, z])?;
                let r = self.in_range(x, s, k)?;
                self.store(st, *dst, r.into())?;
            }
            Op::RangeNext { dst, a, stop, step } => {
                // Continue while x + step is still in range, tested as x against a
                // saturated stop - step, so the increment itself never overflows
                // (an `add nsw` LLVM's induction analysis understands).
                // With step 1 (a constant after SROA, in nearly every loop) the
                // test is the canonical `x + 1 < stop` (no overflow: x < stop),
                // the latch shape IRCE and the vectoriser expect.
                let (x, s, k) = (self.ival(st, *a)?, self.ival(st, *stop)?, self.ival(st, *step)?);
                let i64t = self.ctx.i64_type();
                let sat = self.intr("llvm.ssub.sat.i64", i64t.into(), &[i64t.into(), i64t.into()]);
                let lim = self.call(sat, &[s.into(), k.into()])?.into_int_value();
                let general = self.in_range(x, lim, k)?;
                let n = e(self.b.build_int_nsw_add(x, k, "next"))?;
                let unit = self.icmp(IntPredicate::EQ, k, self.i64c(1))?;
                let below = self.icmp(IntPredicate::SLT, n, s)?;
                let r = e(self.b.build_select(unit, below, general, "more"))?.into_int_value();
                self.store(st, *a, n.into())?;
                self.store(st, *dst, r.into())?;
            }
        }
        Ok(())
    }

    pub(super) fn in_range(&self, x: IntValue<'ctx>, stop: IntValue<'ctx>, step: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        let up = self.icmp(IntPredicate::SGT, step, self.i64c(0))?;
        let lt = self.icmp(IntPredicate::SLT, x, stop)?;
        let gt = self.icmp(IntPredicate::SGT, x, stop)?;
        Ok(e(self.b.build_select(up, lt, gt, "inr"))?.into_int_value())
    }
}
