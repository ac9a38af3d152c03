//! Typed IR → LLVM IR. Every IR variable is an `alloca` (SROA/mem2reg turn
//! them into SSA values); every function returns an i32 status and writes
//! its results through out-pointers; errors store their code, line and
//! operands into the context and return 1.
//!
//! This file holds the generator's state, its entry (`compile`) and the
//! helpers; `functions` builds each function and its trampolines, `ops`
//! emits IR operations, `arith` integer arithmetic and math, `parfor`
//! `parallel for`.

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

mod arith;
mod functions;
mod ops;
mod parfor;

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
    /// `reaches[g][f]`: function `f` can be called (directly or not) from `g`.
    /// A call f → g is part of a recursion only when `reaches[g][f]`.
    reaches: Vec<Vec<bool>>,
}

/// Which functions each function can reach through calls (`parallel for`
/// bodies count as called by their loop).
fn call_reach(m: &IrModule) -> Vec<Vec<bool>> {
    let n = m.funcs.len();
    let callees: Vec<Vec<usize>> = m
        .funcs
        .iter()
        .map(|f| {
            f.ops
                .iter()
                .filter_map(|op| match op {
                    Op::Call { func, .. } => Some(*func as usize),
                    Op::ParFor { chunk, .. } => Some(*chunk as usize),
                    _ => None,
                })
                .filter(|&g| g < n)
                .collect()
        })
        .collect();
    (0..n)
        .map(|start| {
            let mut seen = vec![false; n];
            let mut stack = callees[start].clone();
            while let Some(g) = stack.pop() {
                if !std::mem::replace(&mut seen[g], true) {
                    stack.extend(callees[g].iter().copied());
                }
            }
            seen
        })
        .collect()
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
    /// Int variables that hold the conversion of an integral float computed
    /// in the current block (`floor`/`ceil`/`round`): that float. A store to
    /// the variable or a new block forgets it.
    integral: std::cell::RefCell<HashMap<Var, FloatValue<'ctx>>>,
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
            reaches: call_reach(m),
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
        st.integral.borrow_mut().remove(&v);
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

    /// `cond` marked as rarely true (`llvm.expect`), for a branch to a cold path.
    fn unlikely(&self, cond: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        let expect = self.intr(
            "llvm.expect.i1",
            self.ctx.bool_type().into(),
            &[self.ctx.bool_type().into(), self.ctx.bool_type().into()],
        );
        let c = e(self
            .b
            .build_call(expect, &[cond.into(), self.ctx.bool_type().const_zero().into()], "c"))?;
        Ok(c.try_as_basic_value().left().ok_or("expect")?.into_int_value())
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
        let c = self.unlikely(cond)?;
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use apsi_native_ir::abi::Host;

    fn func(name: &str, calls: &[u32]) -> Func {
        Func {
            name: name.into(),
            params: vec![],
            rets: vec![],
            vars: vec![],
            ops: calls
                .iter()
                .map(|&g| Op::Call {
                    func: g,
                    args: vec![],
                    dsts: vec![],
                })
                .collect(),
            entry: false,
            chunk: false,
        }
    }

    #[test]
    fn only_calls_on_a_cycle_can_recurse() {
        // 0 -> 1 -> 2 -> 1 (a cycle), 0 -> 3 (a helper), 3 -> 3 (self-recursive).
        let m = IrModule {
            funcs: vec![func("a", &[1, 3]), func("b", &[2]), func("c", &[1]), func("d", &[3])],
            fastmath: false,
            boundscheck: true,
            host: Host::default(),
        };
        let r = call_reach(&m);
        // A call f -> g may recurse when g reaches f.
        let recursive = |f: usize, g: usize| r[g][f];
        assert!(!recursive(0, 1) && !recursive(0, 3));
        assert!(recursive(1, 2) && recursive(2, 1));
        assert!(recursive(3, 3));
    }
}
