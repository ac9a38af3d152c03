//! Bytecode → typed IR (Numba style): abstract interpretation of one
//! function's register bytecode with the concrete argument types of a call,
//! to a fixpoint over its control flow, then one emission pass that turns
//! every reachable instruction into typed IR operations.
//!
//! A register holds one type at each program point; its value lives in one
//! IR variable per (register, type), so a temporary register reused with
//! another type gets another variable. A register whose type differs
//! between two merging paths is an error only if it is read there.
//!
//! This file holds the session, the per-function state and its helpers and
//! the fixpoint; `step` lowers one instruction, `ops` the arithmetic and
//! comparisons, `parfor` a `parallel for`.

use crate::calls;
use crate::registry;
use crate::types::T;
use apsi_core::api::code::Span;
use apsi_core::api::code::{Capture, Code, FuncProto, Instr, Reg, NO_REG};
use apsi_core::api::Value;
use apsi_core::api::{BinOp, CmpOp, UnaryOp};
use apsi_native_ir::abi::err as ecode;
use apsi_native_ir::ir::{self, Const, FloatOp, IntOp, Op, Ty, Var};
use std::collections::HashMap;
use std::sync::Arc;

mod ops;
mod parfor;
mod step;

/// A construct outside the native subset, at an instruction.
#[derive(Debug, Clone)]
pub struct Unsupported {
    pub what: String,
    pub function: String,
    pub span: Span,
}

pub type R<T> = Result<T, Unsupported>;

/// Identity of a specialisation: the function's prototype and the argument types.
#[derive(Clone, PartialEq)]
pub struct Key {
    pub proto: usize,
    pub args: Vec<T>,
}

/// Everything lowered for one compile: the IR functions and the error sites.
pub struct Session {
    pub funcs: Vec<Option<ir::Func>>,
    pub sites: Vec<(String, Span)>,
    done: Vec<(Key, u32, T)>,
    /// Functions being lowered: key, id, result guess, whether a recursive call was seen.
    active: Vec<(Key, u32, Option<T>, bool)>,
    counter: usize,
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}

impl Session {
    pub fn new() -> Session {
        Session {
            funcs: Vec::new(),
            sites: Vec::new(),
            done: Vec::new(),
            active: Vec::new(),
            counter: 0,
        }
    }

    fn new_id(&mut self) -> u32 {
        self.funcs.push(None);
        (self.funcs.len() - 1) as u32
    }

    fn symbol(&mut self, name: &str) -> String {
        self.counter += 1;
        let clean: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        format!("apsi_{clean}_{}", self.counter)
    }

    /// Lower `proto` for argument types `args`; returns its function id and result type.
    pub fn function(&mut self, proto: &Arc<FuncProto>, args: Vec<T>, entry: bool) -> R<(u32, T)> {
        let key = Key {
            proto: Arc::as_ptr(proto) as usize,
            args: args.clone(),
        };
        if let Some((_, id, t)) = self.done.iter().find(|(k, _, _)| *k == key) {
            if !entry {
                return Ok((*id, t.clone()));
            }
        }
        let id = self.new_id();
        self.active.push((key.clone(), id, None, false));
        let code = proto.code.arc().clone();
        let nparams = proto.nparams as usize;
        let params: Vec<usize> = (0..nparams).collect();
        let name = proto.name.to_string();
        fn make<'a>(s: &'a mut Session, code: &Arc<Code>, name: &str, args: &[T], nparams: usize) -> FnLower<'a> {
            let mut f = FnLower::new(s, code, name, 0);
            for (i, t) in args.iter().enumerate().take(nparams) {
                f.init[i] = t.clone();
            }
            f
        }
        // Recursion: infer with the recursive calls' result unknown, then
        // again with the result found, until it settles.
        let mut guess: Option<T> = None;
        for _round in 0..4 {
            self.set_guess(&key, guess.clone());
            let rt = make(self, &code, &name, &args, nparams).infer()?;
            let recursed = self.active.iter().any(|a| a.0 == key && a.3);
            if guess.as_ref() == Some(&rt) || !recursed {
                guess = Some(rt);
                break;
            }
            guess = Some(rt);
        }
        self.set_guess(&key, guess.clone());
        let (mut func, rt) = make(self, &code, &name, &args, nparams).run(&params)?;
        self.active.retain(|a| a.0 != key);
        if matches!(rt, T::Unknown) {
            return Err(Unsupported {
                what: "a recursive function with no non-recursive return (its result type cannot be inferred)".into(),
                function: proto.name.to_string(),
                span: code.span,
            });
        }
        func.entry = entry;
        if let Some(slot) = self.funcs.get_mut(id as usize) {
            *slot = Some(func);
        }
        self.done.push((key, id, rt.clone()));
        Ok((id, rt))
    }

    fn set_guess(&mut self, key: &Key, g: Option<T>) {
        if let Some(a) = self.active.iter_mut().find(|a| a.0 == *key) {
            a.2 = g;
        }
    }

    /// A call to `proto` with `args` from code being lowered: the callee's
    /// id and result type (`Unknown` while a recursive result is inferred).
    pub(crate) fn callee(&mut self, proto: &Arc<FuncProto>, args: Vec<T>) -> R<(u32, T)> {
        let key = Key {
            proto: Arc::as_ptr(proto) as usize,
            args: args.clone(),
        };
        if let Some(a) = self.active.iter_mut().find(|a| a.0 == key) {
            a.3 = true;
            return Ok((a.1, a.2.clone().unwrap_or(T::Unknown)));
        }
        self.function(proto, args, false)
    }

    /// Lower the chunk function of a `parallel for`.
    fn chunk(&mut self, proto: &Arc<FuncProto>, reds: &[T], free: &[T]) -> R<(u32, Vec<T>)> {
        let id = self.new_id();
        let code = proto.code.arc().clone();
        let mut f = FnLower::new(self, &code, "parallel for", free.len());
        f.init[0] = T::Int;
        f.init[1] = T::Int;
        f.init[2] = T::Int;
        f.init[3] = T::None;
        for (k, t) in reds.iter().enumerate() {
            f.init[4 + k] = t.clone();
        }
        let base = code.nregs as usize + code.ncells as usize;
        for (k, t) in free.iter().enumerate() {
            f.init[base + k] = t.clone();
        }
        let mut params: Vec<usize> = vec![0, 1, 2];
        params.extend((0..free.len()).map(|k| base + k));
        params.extend((0..reds.len()).map(|k| 4 + k));
        let (mut func, rt) = f.run(&params)?;
        let outs = match (&rt, reds.len()) {
            (T::None, 0) => Vec::new(),
            (T::Tuple(ts), n) if ts.len() == n => ts.clone(),
            _ => {
                return Err(Unsupported {
                    what: "a parallel for whose reductions change type".into(),
                    function: "parallel for".into(),
                    span: code.span,
                })
            }
        };
        func.chunk = true;
        if let Some(slot) = self.funcs.get_mut(id as usize) {
            *slot = Some(func);
        }
        Ok((id, outs))
    }

    fn site(&mut self, function: &str, span: Span) -> u32 {
        self.sites.push((function.to_string(), span));
        (self.sites.len() - 1) as u32
    }
}

/// Lowering of one function body.
pub(crate) struct FnLower<'s> {
    pub(crate) s: &'s mut Session,
    pub(crate) code: Arc<Code>,
    pub(crate) name: String,
    /// Register file: registers, then own cells, then captured cells.
    pub(crate) init: Vec<T>,
    nslots: usize,
    pub(crate) vars: Vec<Ty>,
    slots: HashMap<(usize, String), Vec<Var>>,
    pub(crate) ops: Vec<Op>,
    next_label: u32,
    pub(crate) emit: bool,
    pub(crate) pc: usize,
    rets: Vec<T>,
    /// The state for one successor that differs from the others' (set by `step`).
    exit_state: Option<(usize, Vec<T>)>,
}

impl<'s> FnLower<'s> {
    fn new(s: &'s mut Session, code: &Arc<Code>, name: &str, nfree: usize) -> FnLower<'s> {
        let nslots = code.nregs as usize + code.ncells as usize + nfree;
        FnLower {
            s,
            code: code.clone(),
            name: name.to_string(),
            init: vec![T::Undef; nslots],
            nslots,
            vars: Vec::new(),
            slots: HashMap::new(),
            ops: Vec::new(),
            next_label: code.instrs.len() as u32 + 1,
            emit: false,
            pc: 0,
            rets: Vec::new(),
            exit_state: None,
        }
    }

    pub(crate) fn bad(&self, what: impl Into<String>) -> Unsupported {
        Unsupported {
            what: what.into(),
            function: self.name.clone(),
            span: self.code.span_at(self.pc),
        }
    }

    pub(crate) fn line(&mut self) -> u32 {
        if !self.emit {
            return 0;
        }
        let span = self.code.span_at(self.pc);
        let name = self.name.clone();
        self.s.site(&name, span)
    }

    /// A temporary variable (a dummy while only inferring).
    pub(crate) fn new_var(&mut self, t: Ty) -> Var {
        if !self.emit {
            return 0;
        }
        self.alloc_var(t)
    }

    fn alloc_var(&mut self, t: Ty) -> Var {
        self.vars.push(t);
        (self.vars.len() - 1) as Var
    }

    pub(crate) fn label(&mut self) -> u32 {
        self.next_label += 1;
        self.next_label
    }

    /// The IR variables of register `r` holding type `t`.
    pub(crate) fn slots(&mut self, r: usize, t: &T) -> Vec<Var> {
        let k = (r, t.key());
        if let Some(v) = self.slots.get(&k) {
            return v.clone();
        }
        let vs: Vec<Var> = t.leaf_types().into_iter().map(|ty| self.alloc_var(ty)).collect();
        self.slots.insert(k, vs.clone());
        vs
    }

    pub(crate) fn push(&mut self, op: Op) {
        if self.emit {
            self.ops.push(op);
        }
    }

    /// `f(args…)` into a new variable of type `ty`, at the current line.
    pub(crate) fn math(&mut self, f: ir::MathFn, args: Vec<Var>, ty: Ty) -> Var {
        let line = self.line();
        let dst = self.new_var(ty);
        self.push(Op::Math { f, dst, args, line });
        dst
    }

    /// Copy the value of type `t` from variables `src` into register `dst`.
    pub(crate) fn set(&mut self, st: &mut [T], dst: usize, t: T, src: &[Var]) {
        let d = self.slots(dst, &t);
        for (a, b) in d.iter().zip(src) {
            if a != b {
                self.push(Op::Move { dst: *a, src: *b });
            }
        }
        if let Some(x) = st.get_mut(dst) {
            *x = t;
        }
    }

    /// The type and variables of register `r` (an error when it cannot be read).
    pub(crate) fn get(&mut self, st: &[T], r: usize) -> R<(T, Vec<Var>)> {
        let t = st.get(r).cloned().unwrap_or(T::Undef);
        match t {
            T::Undef => Err(self.bad("a variable read before it is assigned")),
            T::Conflict => Err(self.bad(
                "a variable that holds different types on different paths (for example an int and a float: start it as 0.0)",
            )),
            T::Unknown if self.emit => Err(self.bad("a value whose type cannot be inferred (a recursive call)")),
            t => {
                let v = self.slots(r, &t);
                Ok((t, v))
            }
        }
    }

    /// A scalar register converted to `want` (Int, Float or Bool).
    pub(crate) fn scalar_as(&mut self, st: &[T], r: usize, want: &T) -> R<Var> {
        let (t, v) = self.get(st, r)?;
        if matches!(t, T::Unknown) {
            return Ok(0);
        }
        let Some(&src) = v.first() else {
            return Err(self.bad(format!("{} where a number is needed", t.describe())));
        };
        if !t.is_num() {
            return Err(self.bad(format!("{} where a number is needed", t.describe())));
        }
        if &t == want {
            return Ok(src);
        }
        let ty = match want {
            T::Int => Ty::Int,
            T::Float => Ty::Float,
            T::Bool => Ty::Bool,
            _ => return Err(self.bad("a conversion to a non-number")),
        };
        if matches!((&t, want), (T::Float, T::Int)) {
            return Err(self.bad("a float where an int is needed (use int(x))"));
        }
        let d = self.new_var(ty);
        self.push(Op::Cast { dst: d, src });
        Ok(d)
    }

    pub(crate) fn konst(&mut self, c: Const) -> Var {
        let ty = match c {
            Const::Int(_) => Ty::Int,
            Const::Float(_) => Ty::Float,
            Const::Bool(_) => Ty::Bool,
        };
        let v = self.new_var(ty);
        self.push(Op::Const { dst: v, c });
        v
    }

    /// The int constant loaded into register `r` just before `pc`, if any.
    pub(crate) fn const_int_before(&self, r: Reg) -> Option<i64> {
        for back in 1..=3 {
            let i = self.pc.checked_sub(back)?;
            match self.code.instrs.get(i)? {
                Instr::LoadInt { a, v } if *a == r => return Some(*v as i64),
                Instr::LoadK { a, k } if *a == r => {
                    return match self.code.consts.get(*k as usize)? {
                        Value::Int(i) => Some(*i),
                        _ => None,
                    }
                }
                // These write several registers (`writes` names one).
                Instr::Unpack { .. } | Instr::UnpackRegs { .. } | Instr::UnpackEx { .. } => return None,
                ins if writes(ins) == Some(r) => return None,
                _ => {}
            }
        }
        None
    }

    /// Infer to a fixpoint; returns the per-instruction entry states and the result type.
    fn fixpoint(&mut self) -> R<(Vec<Option<Vec<T>>>, T)> {
        let n = self.code.instrs.len();
        let mut states: Vec<Option<Vec<T>>> = vec![None; n + 1];
        states[0] = Some(self.init.clone());
        let mut work = vec![0usize];
        let mut visits = 0usize;
        while let Some(pc) = work.pop() {
            visits += 1;
            if visits > 200_000 {
                return Err(self.bad("a function too large to specialise"));
            }
            let Some(mut st) = states.get(pc).cloned().flatten() else {
                continue;
            };
            self.pc = pc;
            let succ = self.step(pc, &mut st)?;
            let alt = self.exit_state.take();
            for s in succ {
                if s >= n {
                    continue;
                }
                let st = match &alt {
                    Some((to, other)) if *to == s => other,
                    _ => &st,
                };
                let changed = match &states[s] {
                    None => {
                        states[s] = Some(st.clone());
                        true
                    }
                    Some(old) => {
                        let j: Vec<T> = old.iter().zip(st).map(|(a, b)| a.join(b)).collect();
                        let ch = j != *old;
                        states[s] = Some(j);
                        ch
                    }
                };
                if changed {
                    work.push(s);
                }
            }
        }
        let ret = self.rets.iter().fold(T::Undef, |a, b| a.join(b));
        let ret = match ret {
            T::Undef => T::Unknown,
            T::Conflict => {
                self.pc = 0;
                return Err(self.bad("a function that returns different types on different paths"));
            }
            t => t,
        };
        Ok((states, ret))
    }

    /// Only the result type.
    fn infer(mut self) -> R<T> {
        Ok(self.fixpoint()?.1)
    }

    /// Infer, then emit the IR. `params` are the register-file indices of
    /// the IR parameters, in order.
    fn run(mut self, params: &[usize]) -> R<(ir::Func, T)> {
        let (states, ret) = self.fixpoint()?;
        self.emit = true;
        self.rets.clear();
        for (pc, st) in states.iter().enumerate().take(self.code.instrs.len()) {
            let Some(st) = st else { continue };
            self.pc = pc;
            self.ops.push(Op::Label(pc as u32));
            let mut st = st.clone();
            self.step(pc, &mut st)?;
            self.exit_state = None;
        }
        let body = std::mem::take(&mut self.ops);
        let func = self.finish(params, &ret, body)?;
        Ok((func, ret))
    }

    fn finish(&mut self, params: &[usize], ret: &T, body: Vec<Op>) -> R<ir::Func> {
        let mut pvars = Vec::new();
        for &r in params {
            let t = self.init.get(r).cloned().unwrap_or(T::Undef);
            pvars.extend(self.slots(r, &t));
        }
        let name = self.s.symbol(&self.name.clone());
        Ok(ir::Func {
            name,
            params: pvars,
            rets: ret.leaf_types(),
            vars: self.vars.clone(),
            ops: body,
            entry: false,
            chunk: false,
        })
    }
}

/// The register an instruction writes, for the few cases constant lookback needs.
fn writes(ins: &Instr) -> Option<Reg> {
    match *ins {
        Instr::Move { a, .. }
        | Instr::LoadK { a, .. }
        | Instr::LoadInt { a, .. }
        | Instr::LoadBool { a, .. }
        | Instr::LoadNone { a }
        | Instr::GetGlobal { a, .. }
        | Instr::GetCell { a, .. }
        | Instr::GetFree { a, .. }
        | Instr::Add { a, .. }
        | Instr::Sub { a, .. }
        | Instr::Mul { a, .. }
        | Instr::MulT { a, .. }
        | Instr::AddI { a, .. }
        | Instr::Bin { a, .. }
        | Instr::Unary { a, .. }
        | Instr::Cmp { a, .. }
        | Instr::CmpI { a, .. }
        | Instr::GetIndex { a, .. }
        | Instr::GetAttr { a, .. } => Some(a),
        _ => Some(NO_REG - 1),
    }
}

/// Whether a value is a native-dispatching function made by `@native`.
pub fn native_target(v: &Value) -> Option<Arc<crate::func::NativeFunc>> {
    match v {
        Value::Native(nf) => registry::lookup(nf),
        _ => None,
    }
}
