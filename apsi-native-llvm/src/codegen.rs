//! Typed IR → LLVM IR. Every IR variable is an `alloca` (SROA/mem2reg turn
//! them into SSA values); every function returns an i32 status and writes
//! its results through out-pointers; errors store their code, line and
//! operands into the context and return 1.

use apsi_native_ir::abi::{err, MAX_DIMS, MAX_NATIVE_DEPTH};
use apsi_native_ir::ir::{CmpOp, Const, Dt, FloatOp, Func, IntOp, MathFn, Module as IrModule, Op, Ty, Var};
use inkwell::attributes::AttributeLoc;
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::module::{Linkage, Module};
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum, FunctionType, StructType};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, FloatValue, FunctionValue, IntValue, PointerValue};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate};
use std::collections::HashMap;

type R<T> = Result<T, String>;

fn e<T, E: std::fmt::Display>(r: Result<T, E>) -> R<T> {
    r.map_err(|x| format!("internal error: LLVM builder: {x}"))
}

pub struct Gen<'a, 'ctx> {
    ctx: &'ctx Context,
    m: &'a IrModule,
    module: Module<'ctx>,
    b: Builder<'ctx>,
    desc_ty: StructType<'ctx>,
    ctx_ty: StructType<'ctx>,
    funcs: Vec<FunctionValue<'ctx>>,
    cpu: String,
    features: String,
}

/// State while emitting one function.
struct FnState<'ctx> {
    f: FunctionValue<'ctx>,
    ctxp: PointerValue<'ctx>,
    vars: Vec<PointerValue<'ctx>>,
    labels: HashMap<u32, BasicBlock<'ctx>>,
    err_bb: BasicBlock<'ctx>,
    outs: Vec<PointerValue<'ctx>>,
    entry_bb: BasicBlock<'ctx>,
}

impl<'a, 'ctx> Gen<'a, 'ctx> {
    pub fn new(ctx: &'ctx Context, m: &'a IrModule, cpu: &str, features: &str) -> R<Gen<'a, 'ctx>> {
        let module = ctx.create_module("apsi_native");
        let i64t = ctx.i64_type();
        let arr = i64t.array_type(MAX_DIMS as u32);
        let i8p = ctx.i8_type().ptr_type(AddressSpace::default());
        let desc_ty = ctx.struct_type(&[i8p.into(), i64t.into(), arr.into(), arr.into()], false);
        let ctx_ty = ctx.struct_type(
            &[
                ctx.i32_type().into(),
                ctx.i32_type().into(),
                i64t.into(),
                i64t.into(),
                i64t.into(),
                i8p.into(),
                i64t.into(),
            ],
            false,
        );
        Ok(Gen {
            ctx,
            m,
            module,
            b: ctx.create_builder(),
            desc_ty,
            ctx_ty,
            funcs: Vec::new(),
            cpu: cpu.to_string(),
            features: features.to_string(),
        })
    }

    fn llty(&self, t: Ty) -> BasicTypeEnum<'ctx> {
        match t {
            Ty::Int => self.ctx.i64_type().into(),
            Ty::Float => self.ctx.f64_type().into(),
            Ty::Bool => self.ctx.bool_type().into(),
            Ty::Ptr => self.ctx.i64_type().ptr_type(AddressSpace::default()).into(),
            Ty::Tensor { .. } => self.desc_ty.into(),
        }
    }

    fn ctxp_ty(&self) -> BasicMetadataTypeEnum<'ctx> {
        self.ctx_ty.ptr_type(AddressSpace::default()).into()
    }

    fn fn_type(&self, f: &Func) -> R<FunctionType<'ctx>> {
        let mut ps: Vec<BasicMetadataTypeEnum> = vec![self.ctxp_ty()];
        for p in &f.params {
            let t = f.ty(*p).ok_or("bad parameter variable")?;
            ps.push(self.llty(t).into());
        }
        for r in &f.rets {
            ps.push(self.llty(*r).ptr_type(AddressSpace::default()).into());
        }
        Ok(self.ctx.i32_type().fn_type(&ps, false))
    }

    fn mark(&self, f: FunctionValue<'ctx>) {
        f.add_attribute(
            AttributeLoc::Function,
            self.ctx.create_string_attribute("target-cpu", &self.cpu),
        );
        f.add_attribute(
            AttributeLoc::Function,
            self.ctx.create_string_attribute("target-features", &self.features),
        );
        if self.m.fastmath {
            for k in [
                "unsafe-fp-math",
                "no-nans-fp-math",
                "no-infs-fp-math",
                "no-signed-zeros-fp-math",
            ] {
                f.add_attribute(AttributeLoc::Function, self.ctx.create_string_attribute(k, "true"));
            }
        }
    }

    pub fn build(mut self) -> R<Module<'ctx>> {
        for f in &self.m.funcs {
            let ft = self.fn_type(f)?;
            let fv = self.module.add_function(&f.name, ft, Some(Linkage::Internal));
            self.mark(fv);
            self.funcs.push(fv);
        }
        for (i, f) in self.m.funcs.iter().enumerate() {
            self.emit_func(i, f)?;
        }
        for (i, f) in self.m.funcs.iter().enumerate() {
            if f.entry {
                self.emit_entry(i, f)?;
            }
            if f.chunk {
                self.emit_chunk(i, f)?;
            }
        }
        Ok(self.module)
    }

    // ---------- helpers ----------

    fn intr(
        &self,
        name: &str,
        ret: BasicTypeEnum<'ctx>,
        params: &[BasicMetadataTypeEnum<'ctx>],
    ) -> FunctionValue<'ctx> {
        self.module
            .get_function(name)
            .unwrap_or_else(|| self.module.add_function(name, ret.fn_type(params, false), None))
    }

    fn host_fn(&self, name: &str, params: &[BasicMetadataTypeEnum<'ctx>]) -> FunctionValue<'ctx> {
        self.module.get_function(name).unwrap_or_else(|| {
            self.module.add_function(
                name,
                self.ctx.i32_type().fn_type(params, false),
                Some(Linkage::External),
            )
        })
    }

    fn i64c(&self, v: i64) -> IntValue<'ctx> {
        self.ctx.i64_type().const_int(v as u64, true)
    }
    fn i32c(&self, v: i64) -> IntValue<'ctx> {
        self.ctx.i32_type().const_int(v as u64, true)
    }

    fn load(&self, st: &FnState<'ctx>, v: Var) -> R<BasicValueEnum<'ctx>> {
        let p = *st.vars.get(v as usize).ok_or("bad variable")?;
        e(self.b.build_load(p, "v"))
    }
    fn ival(&self, st: &FnState<'ctx>, v: Var) -> R<IntValue<'ctx>> {
        Ok(self.load(st, v)?.into_int_value())
    }
    fn fval(&self, st: &FnState<'ctx>, v: Var) -> R<FloatValue<'ctx>> {
        Ok(self.load(st, v)?.into_float_value())
    }
    fn store(&self, st: &FnState<'ctx>, v: Var, x: BasicValueEnum<'ctx>) -> R<()> {
        let p = *st.vars.get(v as usize).ok_or("bad variable")?;
        e(self.b.build_store(p, x))?;
        Ok(())
    }

    fn new_bb(&self, st: &FnState<'ctx>, name: &str) -> BasicBlock<'ctx> {
        self.ctx.append_basic_block(st.f, name)
    }

    fn terminated(&self) -> bool {
        self.b.get_insert_block().and_then(|bb| bb.get_terminator()).is_some()
    }

    /// Store an error into the context and return 1.
    fn set_err(&self, st: &FnState<'ctx>, code: i32, line: u32, ops: [IntValue<'ctx>; 3]) -> R<()> {
        let ctxp = st.ctxp;
        let p = e(self.b.build_struct_gep(ctxp, 0, "err"))?;
        e(self.b.build_store(p, self.i32c(code as i64)))?;
        let p = e(self.b.build_struct_gep(ctxp, 1, "line"))?;
        e(self.b.build_store(p, self.i32c(line as i64)))?;
        for (k, x) in ops.iter().enumerate() {
            let p = e(self.b.build_struct_gep(ctxp, 2 + k as u32, "op"))?;
            e(self.b.build_store(p, *x))?;
        }
        e(self.b.build_unconditional_branch(st.err_bb))?;
        Ok(())
    }

    /// When `cond` holds, raise `code`; continues in a new block otherwise.
    fn raise_if(
        &self,
        st: &FnState<'ctx>,
        cond: IntValue<'ctx>,
        code: i32,
        line: u32,
        ops: [IntValue<'ctx>; 3],
    ) -> R<()> {
        let fail = self.new_bb(st, "fail");
        let ok = self.new_bb(st, "ok");
        let expect = self.intr(
            "llvm.expect.i1",
            self.ctx.bool_type().into(),
            &[self.ctx.bool_type().into(), self.ctx.bool_type().into()],
        );
        let c = e(self
            .b
            .build_call(expect, &[cond.into(), self.ctx.bool_type().const_zero().into()], "c"))?;
        let c = c.try_as_basic_value().left().ok_or("expect")?.into_int_value();
        e(self.b.build_conditional_branch(c, fail, ok))?;
        self.b.position_at_end(fail);
        self.set_err(st, code, line, ops)?;
        self.b.position_at_end(ok);
        Ok(())
    }

    /// Branch to the error exit when a call's status is not 0.
    fn check_status(&self, st: &FnState<'ctx>, status: IntValue<'ctx>) -> R<()> {
        let bad = e(self.b.build_int_compare(IntPredicate::NE, status, self.i32c(0), "bad"))?;
        let ok = self.new_bb(st, "ok");
        e(self.b.build_conditional_branch(bad, st.err_bb, ok))?;
        self.b.position_at_end(ok);
        Ok(())
    }

    fn call(&self, f: FunctionValue<'ctx>, args: &[BasicMetadataValueEnum<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let c = e(self.b.build_call(f, args, "call"))?;
        c.try_as_basic_value()
            .left()
            .ok_or_else(|| "internal error: void call".to_string())
    }

    fn label(&self, st: &mut FnState<'ctx>, l: u32) -> BasicBlock<'ctx> {
        if let Some(bb) = st.labels.get(&l) {
            return *bb;
        }
        let bb = self.ctx.append_basic_block(st.f, &format!("L{l}"));
        st.labels.insert(l, bb);
        bb
    }

    // ---------- functions ----------

    fn emit_func(&self, i: usize, f: &Func) -> R<()> {
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
        };
        for (k, p) in f.params.iter().enumerate() {
            let v = fv.get_nth_param(1 + k as u32).ok_or("param")?;
            self.store(&st, *p, v)?;
        }
        for op in &f.ops {
            if let Op::Label(l) = op {
                let bb = self.label(&mut st, *l);
                if !self.terminated() {
                    e(self.b.build_unconditional_branch(bb))?;
                }
                self.b.position_at_end(bb);
                continue;
            }
            if self.terminated() {
                let dead = self.new_bb(&st, "dead");
                self.b.position_at_end(dead);
            }
            self.emit_op(&mut st, f, op)?;
        }
        if !self.terminated() {
            e(self.b.build_unreachable())?;
        }
        let _ = st.entry_bb;
        Ok(())
    }

    fn word_to(&self, w: IntValue<'ctx>, t: Ty) -> R<BasicValueEnum<'ctx>> {
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
    fn to_word(&self, v: BasicValueEnum<'ctx>, t: Ty, by_ptr: bool) -> R<IntValue<'ctx>> {
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

    fn words_array(&self, n: usize, name: &str) -> R<PointerValue<'ctx>> {
        let arr = self.ctx.i64_type().array_type(n.max(1) as u32);
        let p = e(self.b.build_alloca(arr, name))?;
        e(self
            .b
            .build_pointer_cast(p, self.ctx.i64_type().ptr_type(AddressSpace::default()), name))
    }

    fn word_at(&self, base: PointerValue<'ctx>, k: usize) -> R<PointerValue<'ctx>> {
        e(unsafe { self.b.build_gep(base, &[self.i64c(k as i64)], "wp") })
    }

    /// Call function `i` with `args`, returning its results (status checked by `on_err`).
    fn call_ir(
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
    fn store_words(&self, vals: Vec<BasicValueEnum<'ctx>>, tys: &[Ty], base: PointerValue<'ctx>) -> R<()> {
        for (k, (v, t)) in vals.into_iter().zip(tys).enumerate() {
            let w = self.to_word(v, *t, false)?;
            e(self.b.build_store(self.word_at(base, k)?, w))?;
        }
        Ok(())
    }

    fn emit_entry(&self, i: usize, f: &Func) -> R<()> {
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

    fn emit_chunk(&self, i: usize, f: &Func) -> R<()> {
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

    // ---------- operations ----------

    fn overflow_op(&self, name: &str, a: IntValue<'ctx>, b: IntValue<'ctx>) -> R<(IntValue<'ctx>, IntValue<'ctx>)> {
        let i64t = self.ctx.i64_type();
        let rt = self.ctx.struct_type(&[i64t.into(), self.ctx.bool_type().into()], false);
        let f = self.intr(name, rt.into(), &[i64t.into(), i64t.into()]);
        let r = self.call(f, &[a.into(), b.into()])?.into_struct_value();
        let v = e(self.b.build_extract_value(r, 0, "v"))?.into_int_value();
        let o = e(self.b.build_extract_value(r, 1, "o"))?.into_int_value();
        Ok((v, o))
    }

    fn f1(&self, name: &str, x: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        let f64t = self.ctx.f64_type();
        let f = self.intr(name, f64t.into(), &[f64t.into()]);
        Ok(self.call(f, &[x.into()])?.into_float_value())
    }
    fn f2(&self, name: &str, x: FloatValue<'ctx>, y: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        let f64t = self.ctx.f64_type();
        let f = self.intr(name, f64t.into(), &[f64t.into(), f64t.into()]);
        Ok(self.call(f, &[x.into(), y.into()])?.into_float_value())
    }

    fn fcmp(&self, p: FloatPredicate, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> R<IntValue<'ctx>> {
        e(self.b.build_float_compare(p, a, b, "c"))
    }
    fn icmp(&self, p: IntPredicate, a: IntValue<'ctx>, b: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        e(self.b.build_int_compare(p, a, b, "c"))
    }
    fn f64c(&self, x: f64) -> FloatValue<'ctx> {
        self.ctx.f64_type().const_float(x)
    }

    fn is_inf(&self, x: FloatValue<'ctx>) -> R<IntValue<'ctx>> {
        let a = self.f1("llvm.fabs.f64", x)?;
        self.fcmp(FloatPredicate::OEQ, a, self.f64c(f64::INFINITY))
    }
    fn is_finite(&self, x: FloatValue<'ctx>) -> R<IntValue<'ctx>> {
        let a = self.f1("llvm.fabs.f64", x)?;
        self.fcmp(FloatPredicate::OLT, a, self.f64c(f64::INFINITY))
    }

    /// Python's float → int of `floor`/`ceil` results.
    fn float_to_int(&self, st: &FnState<'ctx>, x: FloatValue<'ctx>, line: u32) -> R<IntValue<'ctx>> {
        let z = self.i64c(0);
        let nan = self.fcmp(FloatPredicate::UNO, x, x)?;
        self.raise_if(st, nan, err::NAN_TO_INT, line, [z, z, z])?;
        // In range: -2^63 <= x < 2^63.
        let lo = self.fcmp(FloatPredicate::OGE, x, self.f64c(-9223372036854775808.0))?;
        let hi = self.fcmp(FloatPredicate::OLT, x, self.f64c(9223372036854775808.0))?;
        let ok = e(self.b.build_and(lo, hi, "in"))?;
        let bad = e(self.b.build_not(ok, "out"))?;
        self.raise_if(st, bad, err::FLOAT_TO_INT, line, [z, z, z])?;
        e(self.b.build_float_to_signed_int(x, self.ctx.i64_type(), "i"))
    }

    fn elem_ty(&self, dt: Dt) -> BasicTypeEnum<'ctx> {
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
    fn elem_ptr(
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

    fn emit_op(&self, st: &mut FnState<'ctx>, f: &Func, op: &Op) -> R<()> {
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
                self.store(st, *dst, v)?;
            }
            Op::Cast { dst, src } => {
                let (from, to) = (f.ty(*src).ok_or("cast")?, f.ty(*dst).ok_or("cast")?);
                let v = self.load(st, *src)?;
                let r: BasicValueEnum = match (from, to) {
                    (a, b) if a == b => v,
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
                let r = self.math(st, *mf, args, *line)?;
                self.store(st, *dst, r)?;
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
                // Native frames share the thread's stack: bound their nesting.
                let dp = e(self.b.build_struct_gep(st.ctxp, 6, "depth"))?;
                let d = e(self.b.build_load(dp, "d"))?.into_int_value();
                let d1 = e(self.b.build_int_add(d, self.i64c(1), "d1"))?;
                let deep = self.icmp(IntPredicate::SGT, d1, self.i64c(MAX_NATIVE_DEPTH))?;
                self.raise_if(st, deep, err::RECURSION, u32::MAX, [z, z, z])?;
                e(self.b.build_store(dp, d1))?;
                let (status, rets) = self.call_ir(*func as usize, st.ctxp, vals)?;
                e(self.b.build_store(dp, d))?;
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
                let (x, s, k) = (self.ival(st, *a)?, self.ival(st, *stop)?, self.ival(st, *step)?);
                let i64t = self.ctx.i64_type();
                let sat = self.intr("llvm.ssub.sat.i64", i64t.into(), &[i64t.into(), i64t.into()]);
                let lim = self.call(sat, &[s.into(), k.into()])?.into_int_value();
                let r = self.in_range(x, lim, k)?;
                let n = e(self.b.build_int_nsw_add(x, k, "next"))?;
                self.store(st, *a, n.into())?;
                self.store(st, *dst, r.into())?;
            }
        }
        Ok(())
    }

    fn in_range(&self, x: IntValue<'ctx>, stop: IntValue<'ctx>, step: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        let up = self.icmp(IntPredicate::SGT, step, self.i64c(0))?;
        let lt = self.icmp(IntPredicate::SLT, x, stop)?;
        let gt = self.icmp(IntPredicate::SGT, x, stop)?;
        Ok(e(self.b.build_select(up, lt, gt, "inr"))?.into_int_value())
    }

    fn int_bin(
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
                let (r, o) = self.overflow_op(name, x, y)?;
                self.raise_if(st, o, err::INT_OVERFLOW, line, [x, y, z])?;
                r
            }
            IntOp::FloorDiv | IntOp::Mod => {
                let dz = self.icmp(IntPredicate::EQ, y, z)?;
                self.raise_if(
                    st,
                    dz,
                    err::INT_DIV_ZERO,
                    line,
                    [x, y, self.i64c(matches!(op, IntOp::Mod) as i64)],
                )?;
                let m1 = self.icmp(IntPredicate::EQ, y, self.i64c(-1))?;
                if op == IntOp::FloorDiv {
                    let mn = self.icmp(IntPredicate::EQ, x, self.i64c(i64::MIN))?;
                    let o = e(self.b.build_and(m1, mn, "o"))?;
                    self.raise_if(st, o, err::INT_OVERFLOW, line, [x, y, z])?;
                }
                // Avoid sdiv/srem overflow UB for y == -1 (handled above / remainder 0).
                let ys = e(self.b.build_select(m1, self.i64c(1), y, "ys"))?.into_int_value();
                let q0 = e(self.b.build_int_signed_div(x, ys, "q"))?;
                let q0 = if op == IntOp::FloorDiv {
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
                if op == IntOp::FloorDiv {
                    let q1 = e(self.b.build_int_sub(q0, self.i64c(1), "q1"))?;
                    e(self.b.build_select(adj, q1, q0, "fd"))?.into_int_value()
                } else {
                    let r1 = e(self.b.build_int_add(r0, y, "r1"))?;
                    e(self.b.build_select(adj, r1, r0, "md"))?.into_int_value()
                }
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

    fn math(&self, st: &FnState<'ctx>, mf: MathFn, args: &[Var], line: u32) -> R<BasicValueEnum<'ctx>> {
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
        // The interpreter's one-argument functions: an infinite result of a finite argument is an OverflowError.
        let ranged = |r: FloatValue<'ctx>| -> R<BasicValueEnum<'ctx>> {
            if fast {
                return Ok(r.into());
            }
            let inf = self.is_inf(r)?;
            let fin = self.is_finite(x)?;
            let bad = e(self.b.build_and(inf, fin, "rng"))?;
            self.raise_if(st, bad, err::RANGE, line, [id, z, z])?;
            Ok(r.into())
        };
        let zero = self.f64c(0.0);
        Ok(match mf {
            MathFn::Sqrt => {
                domain(self.fcmp(FloatPredicate::OLT, x, zero)?)?;
                // The square root of a finite number is finite: no range check.
                self.f1("llvm.sqrt.f64", x)?.into()
            }
            MathFn::Exp => ranged(self.f1("llvm.exp.f64", x)?)?,
            MathFn::Log => {
                domain(self.fcmp(FloatPredicate::OLE, x, zero)?)?;
                self.f1("llvm.log.f64", x)?.into()
            }
            MathFn::Log2 => {
                domain(self.fcmp(FloatPredicate::OLE, x, zero)?)?;
                ranged(self.f1("llvm.log2.f64", x)?)?
            }
            MathFn::Log10 => {
                domain(self.fcmp(FloatPredicate::OLE, x, zero)?)?;
                ranged(self.f1("llvm.log10.f64", x)?)?
            }
            MathFn::Log1p => {
                domain(self.fcmp(FloatPredicate::OLE, x, self.f64c(-1.0))?)?;
                ranged(self.f1("log1p", x)?)?
            }
            MathFn::Sin | MathFn::Cos | MathFn::Tan => {
                domain(self.is_inf(x)?)?;
                let name = match mf {
                    MathFn::Sin => "llvm.sin.f64",
                    MathFn::Cos => "llvm.cos.f64",
                    _ => "tan",
                };
                ranged(self.f1(name, x)?)?
            }
            MathFn::Atan => ranged(self.f1("atan", x)?)?,
            MathFn::Sinh => ranged(self.f1("sinh", x)?)?,
            MathFn::Cosh => ranged(self.f1("cosh", x)?)?,
            MathFn::Tanh => ranged(self.f1("tanh", x)?)?,
            MathFn::Abs => self.f1("llvm.fabs.f64", x)?.into(),
            MathFn::Floor => {
                let r = self.f1("llvm.floor.f64", x)?;
                self.float_to_int(st, r, line)?.into()
            }
            MathFn::Ceil => {
                let r = self.f1("llvm.ceil.f64", x)?;
                self.float_to_int(st, r, line)?.into()
            }
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
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn par_for(
        &self,
        st: &FnState<'ctx>,
        f: &Func,
        chunk: u32,
        range: [Var; 3],
        env: &[Var],
        init_first: &[Var],
        init_rest: &[Var],
        first: &[Var],
        rest: Var,
        nrest: Var,
        line: u32,
    ) -> R<()> {
        let i64t = self.ctx.i64_type();
        let i64p = i64t.ptr_type(AddressSpace::default());
        let envp = self.words_array(env.len(), "env")?;
        for (k, v) in env.iter().enumerate() {
            let w = self.to_word(self.load(st, *v)?, f.ty(*v).ok_or("env")?, true)?;
            e(self.b.build_store(self.word_at(envp, k)?, w))?;
        }
        let m = init_first.len();
        let fp = self.words_array(m, "if")?;
        let rp = self.words_array(m, "ir")?;
        for k in 0..m {
            let (a, b) = (init_first[k], init_rest[k]);
            let wa = self.to_word(self.load(st, a)?, f.ty(a).ok_or("init")?, false)?;
            e(self.b.build_store(self.word_at(fp, k)?, wa))?;
            let wb = self.to_word(self.load(st, b)?, f.ty(b).ok_or("init")?, false)?;
            e(self.b.build_store(self.word_at(rp, k)?, wb))?;
        }
        let outp = self.words_array(m, "first")?;
        let restp = e(self.b.build_alloca(i64p, "rest"))?;
        let nrestp = e(self.b.build_alloca(i64t, "nrest"))?;
        let cname = format!("{}$chunk", self.m.funcs.get(chunk as usize).ok_or("chunk")?.name);
        let cf = self.module.get_function(&cname);
        // Chunk trampolines are emitted after every body: declare it now when needed.
        let cf = match cf {
            Some(cf) => cf,
            None => {
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
                self.module.add_function(&cname, ft, Some(Linkage::External))
            }
        };
        let cptr = cf.as_global_value().as_pointer_value();
        let i8p = self.ctx.i8_type().ptr_type(AddressSpace::default());
        let cptr = e(self.b.build_pointer_cast(cptr, i8p, "cp"))?;
        let hf = self.host_fn(
            "apsi_rt_par_for",
            &[
                self.ctxp_ty(),
                i8p.into(),
                i64t.into(),
                i64t.into(),
                i64t.into(),
                i64p.into(),
                i64t.into(),
                i64p.into(),
                i64p.into(),
                i64p.into(),
                i64p.ptr_type(AddressSpace::default()).into(),
                i64p.into(),
                self.ctx.i32_type().into(),
            ],
        );
        let s = self.call(
            hf,
            &[
                st.ctxp.into(),
                cptr.into(),
                self.ival(st, range[0])?.into(),
                self.ival(st, range[1])?.into(),
                self.ival(st, range[2])?.into(),
                envp.into(),
                self.i64c(m as i64).into(),
                fp.into(),
                rp.into(),
                outp.into(),
                restp.into(),
                nrestp.into(),
                self.i32c(line as i64).into(),
            ],
        )?;
        self.check_status(st, s.into_int_value())?;
        for (k, v) in first.iter().enumerate() {
            let w = e(self.b.build_load(self.word_at(outp, k)?, "w"))?.into_int_value();
            let x = self.word_to(w, f.ty(*v).ok_or("first")?)?;
            self.store(st, *v, x)?;
        }
        let rv = e(self.b.build_load(restp, "rest"))?;
        self.store(st, rest, rv)?;
        let nv = e(self.b.build_load(nrestp, "nrest"))?;
        self.store(st, nrest, nv)?;
        Ok(())
    }
}
