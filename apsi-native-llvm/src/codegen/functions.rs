//! Functions: each IR function's LLVM function, its entry trampoline and,
//! for `parallel for` bodies, its chunk trampoline.

use super::*;

impl<'ctx> Gen<'_, 'ctx> {
    // ---------- functions ----------

    pub(super) fn emit_func(&self, i: usize, f: &Func) -> R<()> {
        let fv = self.funcs[i];
        let entry_bb = self.ctx.append_basic_block(fv, "entry");
        let err_bb = self.ctx.append_basic_block(fv, "error");
        self.b.position_at_end(err_bb);
        e(self.b.build_return(Some(&self.i32c(1))))?;
        self.b.position_at_end(entry_bb);
        let ctxp = fv.get_nth_param(0).ok_or("ctx param")?.into_pointer_value();
        let mut vars = Vec::with_capacity(f.vars.len());
        for t in &f.vars {
            vars.push(e(self.b.build_alloca(self.llty(*t), "var"))?);
        }
        let np = f.params.len() as u32;
        let mut outs = Vec::new();
        for k in 0..f.rets.len() as u32 {
            outs.push(fv.get_nth_param(1 + np + k).ok_or("out param")?.into_pointer_value());
        }
        let mut st = FnState {
            f: fv,
            ctxp,
            vars,
            labels: HashMap::new(),
            err_bb,
            outs,
            entry_bb,
            integral: Default::default(),
        };
        for (k, p) in f.params.iter().enumerate() {
            let v = fv.get_nth_param(1 + k as u32).ok_or("param")?;
            self.store(&st, *p, v)?;
        }
        // How many branches name each label: a label nothing but the code
        // just before it reaches continues that code's block (what it knows
        // about integral floats stays true).
        let mut refs: HashMap<u32, usize> = HashMap::new();
        for op in &f.ops {
            match op {
                Op::Jmp(l) => *refs.entry(*l).or_default() += 1,
                Op::Br { then, els, .. } => {
                    *refs.entry(*then).or_default() += 1;
                    *refs.entry(*els).or_default() += 1;
                }
                _ => {}
            }
        }
        let mut prev: Option<&Op> = None;
        for op in &f.ops {
            if let Op::Label(l) = op {
                let n = refs.get(l).copied().unwrap_or(0);
                let straight = match prev {
                    Some(Op::Jmp(j)) => j == l && n == 1,
                    _ => n == 0 && !self.terminated(),
                };
                if !straight {
                    st.integral.borrow_mut().clear();
                }
                prev = Some(op);
                let bb = self.label(&mut st, *l);
                if !self.terminated() {
                    e(self.b.build_unconditional_branch(bb))?;
                }
                self.b.position_at_end(bb);
                continue;
            }
            if self.terminated() {
                st.integral.borrow_mut().clear();
                let dead = self.new_bb(&st, "dead");
                self.b.position_at_end(dead);
            }
            self.emit_op(&mut st, f, op)?;
            prev = Some(op);
        }
        if !self.terminated() {
            e(self.b.build_unreachable())?;
        }
        let _ = st.entry_bb;
        Ok(())
    }

    pub(super) fn word_to(&self, w: IntValue<'ctx>, t: Ty) -> R<BasicValueEnum<'ctx>> {
        Ok(match t {
            Ty::Int => w.into(),
            Ty::Float => e(self.b.build_bit_cast(w, self.ctx.f64_type(), "f"))?,
            Ty::Bool => e(self.b.build_int_compare(IntPredicate::NE, w, self.i64c(0), "b"))?.into(),
            Ty::Ptr => e(self
                .b
                .build_int_to_ptr(w, self.ctx.i64_type().ptr_type(AddressSpace::default()), "p"))?
            .into(),
            Ty::Tensor { .. } => {
                let p = e(self
                    .b
                    .build_int_to_ptr(w, self.desc_ty.ptr_type(AddressSpace::default()), "d"))?;
                e(self.b.build_load(p, "desc"))?
            }
        })
    }

    /// A value as an 8-byte word (a tensor becomes its handle, or a pointer to a copy of its descriptor when `by_ptr`).
    pub(super) fn to_word(&self, v: BasicValueEnum<'ctx>, t: Ty, by_ptr: bool) -> R<IntValue<'ctx>> {
        let i64t = self.ctx.i64_type();
        Ok(match t {
            Ty::Int => v.into_int_value(),
            Ty::Float => e(self.b.build_bit_cast(v, i64t, "w"))?.into_int_value(),
            Ty::Bool => e(self.b.build_int_z_extend(v.into_int_value(), i64t, "w"))?,
            Ty::Ptr => e(self.b.build_ptr_to_int(v.into_pointer_value(), i64t, "w"))?,
            Ty::Tensor { .. } => {
                if by_ptr {
                    let p = e(self.b.build_alloca(self.desc_ty, "envd"))?;
                    e(self.b.build_store(p, v))?;
                    e(self.b.build_ptr_to_int(p, i64t, "w"))?
                } else {
                    e(self.b.build_extract_value(v.into_struct_value(), 1, "h"))?.into_int_value()
                }
            }
        })
    }

    pub(super) fn words_array(&self, n: usize, name: &str) -> R<PointerValue<'ctx>> {
        let arr = self.ctx.i64_type().array_type(n.max(1) as u32);
        let p = e(self.b.build_alloca(arr, name))?;
        e(self
            .b
            .build_pointer_cast(p, self.ctx.i64_type().ptr_type(AddressSpace::default()), name))
    }

    pub(super) fn word_at(&self, base: PointerValue<'ctx>, k: usize) -> R<PointerValue<'ctx>> {
        e(unsafe { self.b.build_gep(base, &[self.i64c(k as i64)], "wp") })
    }

    /// Call function `i` with `args`, returning its results (status checked by `on_err`).
    pub(super) fn call_ir(
        &self,
        i: usize,
        ctxp: PointerValue<'ctx>,
        args: Vec<BasicValueEnum<'ctx>>,
    ) -> R<(IntValue<'ctx>, Vec<BasicValueEnum<'ctx>>)> {
        let f = self.m.funcs.get(i).ok_or("bad callee")?;
        let mut a: Vec<BasicMetadataValueEnum> = vec![ctxp.into()];
        a.extend(args.into_iter().map(BasicMetadataValueEnum::from));
        let mut outs = Vec::new();
        for r in &f.rets {
            let p = e(self.b.build_alloca(self.llty(*r), "out"))?;
            outs.push(p);
            a.push(p.into());
        }
        let status = self.call(self.funcs[i], &a)?.into_int_value();
        let mut vals = Vec::new();
        for p in outs {
            vals.push(e(self.b.build_load(p, "r"))?);
        }
        Ok((status, vals))
    }

    /// Store a function's results as 8-byte words at `base` (a trampoline's out buffer).
    pub(super) fn store_words(&self, vals: Vec<BasicValueEnum<'ctx>>, tys: &[Ty], base: PointerValue<'ctx>) -> R<()> {
        for (k, (v, t)) in vals.into_iter().zip(tys).enumerate() {
            let w = self.to_word(v, *t, false)?;
            e(self.b.build_store(self.word_at(base, k)?, w))?;
        }
        Ok(())
    }

    pub(super) fn emit_entry(&self, i: usize, f: &Func) -> R<()> {
        let i64p = self.ctx.i64_type().ptr_type(AddressSpace::default());
        let ft = self
            .ctx
            .i32_type()
            .fn_type(&[self.ctxp_ty(), i64p.into(), i64p.into()], false);
        let fv = self
            .module
            .add_function(&format!("{}$entry", f.name), ft, Some(Linkage::External));
        self.mark(fv);
        let bb = self.ctx.append_basic_block(fv, "entry");
        self.b.position_at_end(bb);
        let ctxp = fv.get_nth_param(0).ok_or("p")?.into_pointer_value();
        let args = fv.get_nth_param(1).ok_or("p")?.into_pointer_value();
        let outs = fv.get_nth_param(2).ok_or("p")?.into_pointer_value();
        let mut vals = Vec::new();
        for (k, p) in f.params.iter().enumerate() {
            let w = e(self.b.build_load(self.word_at(args, k)?, "w"))?.into_int_value();
            vals.push(self.word_to(w, f.ty(*p).ok_or("param")?)?);
        }
        let (status, rets) = self.call_ir(i, ctxp, vals)?;
        self.store_words(rets, &f.rets, outs)?;
        e(self.b.build_return(Some(&status)))?;
        Ok(())
    }

    pub(super) fn emit_chunk(&self, i: usize, f: &Func) -> R<()> {
        let i64t = self.ctx.i64_type();
        let i64p = i64t.ptr_type(AddressSpace::default());
        let ft = self.ctx.i32_type().fn_type(
            &[
                self.ctxp_ty(),
                i64t.into(),
                i64t.into(),
                i64t.into(),
                i64p.into(),
                i64p.into(),
            ],
            false,
        );
        let cname = format!("{}$chunk", f.name);
        // A parallel for that uses this chunk may have declared it already.
        let fv = match self.module.get_function(&cname) {
            Some(fv) => fv,
            None => self.module.add_function(&cname, ft, Some(Linkage::External)),
        };
        self.mark(fv);
        let bb = self.ctx.append_basic_block(fv, "entry");
        self.b.position_at_end(bb);
        let ctxp = fv.get_nth_param(0).ok_or("p")?.into_pointer_value();
        let env = fv.get_nth_param(4).ok_or("p")?.into_pointer_value();
        let parts = fv.get_nth_param(5).ok_or("p")?.into_pointer_value();
        let nred = f.rets.len();
        let nenv = f.params.len().checked_sub(3 + nred).ok_or("chunk params")?;
        let mut vals: Vec<BasicValueEnum> = Vec::new();
        for k in 1..=3 {
            vals.push(fv.get_nth_param(k).ok_or("p")?);
        }
        for k in 0..nenv {
            let w = e(self.b.build_load(self.word_at(env, k)?, "w"))?.into_int_value();
            vals.push(self.word_to(w, f.ty(f.params[3 + k]).ok_or("env")?)?);
        }
        for k in 0..nred {
            let w = e(self.b.build_load(self.word_at(parts, k)?, "w"))?.into_int_value();
            vals.push(self.word_to(w, f.rets[k])?);
        }
        // Two copies of the body: one for step 1 (the common `range(n)`,
        // where LLVM sees a canonical loop it can vectorise), one general.
        // The first copy also knows the loop values are not negative, so
        // negative-index wrapping folds away and element accesses are consecutive.
        let step = vals[2].into_int_value();
        let one = self.icmp(IntPredicate::EQ, step, self.i64c(1))?;
        let nonneg = self.icmp(IntPredicate::SGE, vals[0].into_int_value(), self.i64c(0))?;
        let unit = e(self.b.build_and(one, nonneg, "unit"))?;
        let (bb1, bbn) = (
            self.ctx.append_basic_block(fv, "unit"),
            self.ctx.append_basic_block(fv, "any"),
        );
        e(self.b.build_conditional_branch(unit, bb1, bbn))?;
        for (bb, unit_step) in [(bb1, true), (bbn, false)] {
            self.b.position_at_end(bb);
            let mut v = vals.clone();
            if unit_step {
                v[2] = self.i64c(1).into();
            }
            let (status, rets) = self.call_ir(i, ctxp, v)?;
            self.store_words(rets, &f.rets, parts)?;
            e(self.b.build_return(Some(&status)))?;
        }
        let inline = inkwell::attributes::Attribute::get_named_enum_kind_id("alwaysinline");
        self.funcs[i].add_attribute(AttributeLoc::Function, self.ctx.create_enum_attribute(inline, 0));
        Ok(())
    }
}
