//! Bytecode → typed IR (Numba style): abstract interpretation of one
//! function's register bytecode with the concrete argument types of a call,
//! to a fixpoint over its control flow, then one emission pass that turns
//! every reachable instruction into typed IR operations.
//!
//! A register holds one type at each program point; its value lives in one
//! IR variable per (register, type), so a temporary register reused with
//! another type gets another variable. A register whose type differs
//! between two merging paths is an error only if it is read there.

use crate::calls;
use crate::registry;
use crate::types::T;
use apsi_core::compile::code::{Capture, Code, FuncProto, Instr, Reg, NO_REG};
use apsi_core::diagnostic::Span;
use apsi_core::syntax::ast::{BinOp, CmpOp, UnaryOp};
use apsi_core::vm::value::Value;
use apsi_native_ir::abi::err as ecode;
use apsi_native_ir::ir::{self, Const, FloatOp, IntOp, Op, Ty, Var};
use std::collections::HashMap;
use std::sync::Arc;

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
        let code = proto.code.clone();
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
        let code = proto.code.clone();
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

    /// One instruction: its effect on the types in `st` (and its IR when
    /// emitting); returns the successors.
    fn step(&mut self, pc: usize, st: &mut Vec<T>) -> R<Vec<usize>> {
        let ins = self
            .code
            .instrs
            .get(pc)
            .copied()
            .ok_or_else(|| self.bad("a jump out of the function"))?;
        let next = vec![pc + 1];
        let r = |x: Reg| x as usize;
        match ins {
            Instr::Nop => {}
            Instr::Move { a, b } => {
                let t = st.get(r(b)).cloned().unwrap_or(T::Undef);
                if matches!(t, T::Undef | T::Conflict) {
                    if let Some(x) = st.get_mut(r(a)) {
                        *x = t;
                    }
                } else {
                    let (t, v) = self.get(st, r(b))?;
                    self.set(st, r(a), t, &v);
                }
            }
            Instr::LoadK { a, k } => {
                let v = self.code.consts.get(k as usize).cloned().unwrap_or(Value::None);
                self.load_value(st, r(a), v);
            }
            Instr::LoadInt { a, v } => {
                let c = self.konst(Const::Int(v as i64));
                self.set(st, r(a), T::Int, &[c]);
            }
            Instr::LoadBool { a, v } => {
                let c = self.konst(Const::Bool(v));
                self.set(st, r(a), T::Bool, &[c]);
            }
            Instr::LoadNone { a } => self.set(st, r(a), T::None, &[]),
            Instr::GetGlobal { a, g } => {
                let v = self.global(g as usize)?;
                self.load_value(st, r(a), v);
            }
            Instr::SetGlobal { .. } => return Err(self.bad("an assignment to a global variable")),
            Instr::MakeCell { a, c } => {
                let cell = self.code.nregs as usize + c as usize;
                if a == NO_REG {
                    if let Some(x) = st.get_mut(cell) {
                        *x = T::Undef;
                    }
                } else {
                    let (t, v) = self.get(st, r(a))?;
                    self.set(st, cell, t, &v);
                }
            }
            Instr::GetCell { a, c } => {
                let (t, v) = self.get(st, self.code.nregs as usize + c as usize)?;
                self.set(st, r(a), t, &v);
            }
            Instr::SetCell { a, c } => {
                let (t, v) = self.get(st, r(a))?;
                self.set(st, self.code.nregs as usize + c as usize, t, &v);
            }
            Instr::GetFree { a, c } => {
                let base = self.code.nregs as usize + self.code.ncells as usize;
                if base + c as usize >= self.nslots {
                    return Err(self.bad("a closure variable (nested functions are not native)"));
                }
                let (t, v) = self.get(st, base + c as usize)?;
                self.set(st, r(a), t, &v);
            }
            Instr::SetFree { .. } => {
                return Err(self.bad(
                    "an assignment inside parallel for to a variable of the enclosing function that is not a reduction",
                ))
            }
            Instr::Add { a, b, c } => self.binary(st, BinOp::Add, r(a), r(b), r(c))?,
            Instr::Sub { a, b, c } => self.binary(st, BinOp::Sub, r(a), r(b), r(c))?,
            Instr::Mul { a, b, c } | Instr::MulT { a, b, c } => self.binary(st, BinOp::Mul, r(a), r(b), r(c))?,
            // A read the compiler could not prove assigned: native code needs
            // it assigned on every path.
            Instr::CheckBound { a, .. } => {
                self.get(st, r(a))?;
            }
            Instr::Bin { op, a, b, c } => self.binary(st, op, r(a), r(b), r(c))?,
            Instr::AddI { a, b, v } => {
                let tmp = self.nslots; // a scratch register index past the file
                let k = self.konst(Const::Int(v as i64));
                let mut st2 = st.clone();
                st2.push(T::Undef);
                self.set(&mut st2, tmp, T::Int, &[k]);
                self.binary(&mut st2, BinOp::Add, r(a), r(b), tmp)?;
                st2.pop();
                *st = st2;
            }
            Instr::Unary { op, a, b } => self.unary(st, op, r(a), r(b))?,
            Instr::Cmp { op, a, b, c } => {
                let d = self.compare(st, op, r(b), r(c))?;
                self.set(st, r(a), T::Bool, &[d]);
            }
            Instr::CmpJmp { op, a, b, jt } => {
                let d = self.compare(st, op, r(a), r(b))?;
                return self.cond_jump(pc, d, jt);
            }
            Instr::CmpJmpI { op, a, v, jt } => {
                let tmp = self.nslots;
                let k = self.konst(Const::Int(v as i64));
                let mut st2 = st.clone();
                st2.push(T::Undef);
                self.set(&mut st2, tmp, T::Int, &[k]);
                let d = self.compare(&st2, op, r(a), tmp)?;
                return self.cond_jump(pc, d, jt);
            }
            Instr::Jmp { t } => {
                self.push(Op::Jmp(t));
                return Ok(vec![t as usize]);
            }
            Instr::JmpIf { a, t } | Instr::JmpIfNot { a, t } => {
                let c = self.truth(st, r(a))?;
                let jump_when = matches!(ins, Instr::JmpIf { .. });
                let (then, els) = if jump_when {
                    (t, pc as u32 + 1)
                } else {
                    (pc as u32 + 1, t)
                };
                self.push(Op::Br { cond: c, then, els });
                return Ok(vec![t as usize, pc + 1]);
            }
            Instr::Call { a, n } => {
                let (t, _) = self.get(st, r(a))?;
                let T::Const(f) = t else {
                    return Err(self.bad(format!("calling {}", t.describe())));
                };
                let args: Vec<usize> = (1..=n as usize).map(|i| r(a) + i).collect();
                calls::call(self, st, r(a), &f, &args, &[])?;
            }
            Instr::CallK { a, k, n } => {
                let f = self.code.consts.get(k as usize).cloned().unwrap_or(Value::None);
                let args: Vec<usize> = (1..=n as usize).map(|i| r(a) + i).collect();
                calls::call(self, st, r(a), &f, &args, &[])?;
            }
            Instr::CallGlobal { a, g, n } => {
                let f = self.global(g as usize)?;
                let args: Vec<usize> = (1..=n as usize).map(|i| r(a) + i).collect();
                calls::call(self, st, r(a), &f, &args, &[])?;
            }
            Instr::CallKw { a, n, k } => {
                let (t, _) = self.get(st, r(a))?;
                let T::Const(f) = t else {
                    return Err(self.bad(format!("calling {}", t.describe())));
                };
                let names: Vec<String> = match self.code.consts.get(k as usize) {
                    Some(Value::Tuple(t)) => t.0.iter().map(|v| v.as_str().unwrap_or("").to_string()).collect(),
                    _ => Vec::new(),
                };
                let args: Vec<usize> = (1..=n as usize).map(|i| r(a) + i).collect();
                let kw: Vec<(String, usize)> = names
                    .into_iter()
                    .enumerate()
                    .map(|(i, nm)| (nm, r(a) + n as usize + 1 + i))
                    .collect();
                calls::call(self, st, r(a), &f, &args, &kw)?;
            }
            Instr::CallMethod { a, k, n } => {
                let name = self
                    .code
                    .consts
                    .get(k as usize)
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                let args: Vec<usize> = (2..=1 + n as usize).map(|i| r(a) + i).collect();
                calls::method(self, st, r(a), r(a) + 1, &name, &args)?;
            }
            Instr::GetAttr { a, b, k } => {
                let name = self
                    .code
                    .consts
                    .get(k as usize)
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                calls::attr(self, st, r(a), r(b), &name)?;
            }
            Instr::GetIndex { a, b, c } => calls::index(self, st, r(a), r(b), r(c))?,
            Instr::SetIndex { a, b, c } => calls::set_index(self, st, r(a), r(b), r(c))?,
            Instr::BuildTuple { a, b, n } => {
                let mut ts = Vec::new();
                let mut vs = Vec::new();
                for i in 0..n as usize {
                    let (t, v) = self.get(st, r(b) + i)?;
                    ts.push(t);
                    vs.extend(v);
                }
                self.set(st, r(a), T::Tuple(ts), &vs);
            }
            Instr::Unpack { .. } | Instr::UnpackRegs { .. } => {
                let (b, n, dests): (Reg, u16, Vec<usize>) = match ins {
                    Instr::Unpack { a, b, n } => (b, n, (0..n as usize).map(|i| r(a) + i).collect()),
                    Instr::UnpackRegs { b, k, n } => {
                        let regs: Option<Vec<usize>> = match self.code.consts.get(k as usize) {
                            Some(Value::Tuple(t)) => {
                                t.0.iter()
                                    .map(|x| match x {
                                        Value::Int(i) => Reg::try_from(*i).ok().map(r),
                                        _ => None,
                                    })
                                    .collect()
                            }
                            _ => None,
                        };
                        match regs {
                            Some(regs) => (b, n, regs),
                            None => return Err(self.bad("unpacking into unknown registers")),
                        }
                    }
                    _ => unreachable!("matched above"),
                };
                let (t, v) = self.get(st, r(b))?;
                let T::Tuple(ts) = t else {
                    return Err(self.bad(format!("unpacking {}", t.describe())));
                };
                if ts.len() != n as usize {
                    let line = self.line();
                    let k = self.konst(Const::Int(ts.len() as i64));
                    self.push(Op::Raise {
                        code: ecode::UNPACK,
                        line,
                        a: k,
                    });
                    return Ok(Vec::new());
                }
                let mut off = 0;
                for (i, t) in ts.iter().enumerate() {
                    let w = t.leaf_types().len();
                    let part: Vec<Var> = v.get(off..off + w).map(|s| s.to_vec()).unwrap_or_default();
                    off += w;
                    let Some(&d) = dests.get(i) else { break };
                    self.set(st, d, t.clone(), &part);
                }
            }
            Instr::ForRangePrep { a, b } => {
                let (x, stop, step) = (
                    self.scalar_as(st, r(a), &T::Int)?,
                    self.scalar_as(st, r(a) + 1, &T::Int)?,
                    self.scalar_as(st, r(a) + 2, &T::Int)?,
                );
                // The counter and bounds become int registers.
                self.set(st, r(a), T::Int, &[x]);
                self.set(st, r(a) + 1, T::Int, &[stop]);
                self.set(st, r(a) + 2, T::Int, &[step]);
                let (xa, sa, ka) = (
                    self.slots(r(a), &T::Int)[0],
                    self.slots(r(a) + 1, &T::Int)[0],
                    self.slots(r(a) + 2, &T::Int)[0],
                );
                let line = self.line();
                let c = self.new_var(Ty::Bool);
                self.push(Op::RangeTest {
                    dst: c,
                    a: xa,
                    stop: sa,
                    step: ka,
                    line,
                });
                // An empty loop leaves its variable as it was.
                return Ok(self.enter_body(st, c, r(b), xa, pc + 2, pc + 1));
            }
            Instr::ForRangeLoop { a, b } => {
                let xa = self.slots(r(a), &T::Int)[0];
                let sa = self.slots(r(a) + 1, &T::Int)[0];
                let ka = self.slots(r(a) + 2, &T::Int)[0];
                let c = self.new_var(Ty::Bool);
                self.push(Op::RangeNext {
                    dst: c,
                    a: xa,
                    stop: sa,
                    step: ka,
                });
                // After the last iteration the loop variable keeps its last value.
                return Ok(self.enter_body(st, c, r(b), xa, pc + 1, pc + 2));
            }
            Instr::ForPrep { a } => {
                let (t, _) = self.get(st, r(a))?;
                if !matches!(t, T::Partials(_)) {
                    return Err(self.bad(format!(
                        "a for loop over {} (native for loops run over range())",
                        t.describe()
                    )));
                }
                let z = self.konst(Const::Int(0));
                self.set(st, r(a) + 1, T::Int, &[z]);
            }
            Instr::ForNext { a, b } => {
                let (t, v) = self.get(st, r(a))?;
                let T::Partials(ts) = t else {
                    return Err(self.bad("a for loop over a non-range iterable"));
                };
                let (buf, count) = (v[0], v[1]);
                let pos = self.slots(r(a) + 1, &T::Int)[0];
                let c = self.new_var(Ty::Bool);
                self.push(Op::Cmp {
                    op: ir::CmpOp::Ge,
                    dst: c,
                    a: pos,
                    b: count,
                });
                let cont = self.label();
                self.push(Op::Br {
                    cond: c,
                    then: pc as u32 + 1,
                    els: cont,
                });
                self.push(Op::Label(cont));
                let mut vs = Vec::new();
                let width: u32 = ts.iter().map(|t| t.leaf_types().len() as u32).sum();
                let mut slot = 0;
                for t in &ts {
                    for ty in t.leaf_types() {
                        let d = self.new_var(ty);
                        self.push(Op::LoadPartial {
                            dst: d,
                            buf,
                            row: pos,
                            width,
                            slot,
                        });
                        slot += 1;
                        vs.push(d);
                    }
                }
                let one = self.konst(Const::Int(1));
                let line = self.line();
                self.push(Op::IntBin {
                    op: IntOp::Add,
                    dst: pos,
                    a: pos,
                    b: one,
                    line,
                });
                self.set(st, r(b), T::Tuple(ts), &vs);
                self.push(Op::Jmp(pc as u32 + 2));
                return Ok(vec![pc + 1, pc + 2]);
            }
            Instr::Return { a } | Instr::ReturnParams { a, .. } => {
                let (t, v) = self.get(st, r(a))?;
                if matches!(t, T::Const(_) | T::Chunk(_) | T::Partials(_)) {
                    return Err(self.bad(format!("returning {}", t.describe())));
                }
                if !matches!(t, T::Unknown) {
                    self.rets.push(t);
                }
                self.push(Op::Ret(v));
                return Ok(Vec::new());
            }
            Instr::ReturnNone => {
                self.rets.push(T::None);
                self.push(Op::Ret(Vec::new()));
                return Ok(Vec::new());
            }
            Instr::MakeFunc { a, p, .. } => {
                let is_chunk = self
                    .code
                    .protos
                    .get(p as usize)
                    .map(|pr| &*pr.name == "<parallel for>")
                    .unwrap_or(false);
                if !is_chunk {
                    return Err(self.bad("a nested function or lambda"));
                }
                if let Some(x) = st.get_mut(r(a)) {
                    *x = T::Chunk(p);
                }
            }
            Instr::ParFor { a, n, range } => {
                if !range {
                    return Err(self.bad("a parallel for over something other than range()"));
                }
                self.par_for(st, r(a), n as usize)?;
            }
            Instr::BuildList { .. } | Instr::ListAppend { .. } | Instr::ListExtend { .. } | Instr::AppendTo { .. } => {
                return Err(self.bad("a list"))
            }
            Instr::BuildDict { .. } | Instr::DictSet { .. } | Instr::DictUpdate { .. } => {
                return Err(self.bad("a dict"))
            }
            Instr::BuildSlice { .. } => return Err(self.bad("slicing (native code indexes one element at a time)")),
            Instr::BuildRange { .. } => return Err(self.bad("a range value (native code runs for loops over range())")),
            Instr::UnpackEx { .. } => return Err(self.bad("starred unpacking")),
            Instr::MakeStruct { .. } | Instr::StructConst { .. } => return Err(self.bad("a struct")),
            Instr::Raise { .. } | Instr::Reraise { .. } => return Err(self.bad("raise")),
            Instr::AssertFail { .. } => return Err(self.bad("assert")),
            Instr::PushHandler { .. } | Instr::PopHandler | Instr::ExcMatch { .. } => {
                return Err(self.bad("try/except"))
            }
            Instr::ToStr { .. } | Instr::ToRepr { .. } | Instr::Format { .. } | Instr::Concat { .. } => {
                return Err(self.bad("a str (f-strings and str() are not native)"))
            }
            Instr::CallEx { .. } => return Err(self.bad("a call with *args or **kwargs")),
            Instr::SetAttr { .. } => return Err(self.bad("an attribute assignment")),
            Instr::BuildSet { .. } | Instr::SetAdd { .. } => return Err(self.bad("a set")),
            Instr::DelIndex { .. }
            | Instr::DelLocal { .. }
            | Instr::DelGlobal { .. }
            | Instr::DelCell { .. }
            | Instr::DelFree { .. } => return Err(self.bad("del")),
            Instr::Yield { .. } => return Err(self.bad("yield (a generator)")),
            Instr::GetIter { .. } | Instr::IterPrep { .. } => {
                return Err(self.bad("an iterator (yield from, a generator expression)"))
            }
        }
        Ok(next)
    }

    /// A range loop's branch: into the body (`body_pc`) with the loop
    /// variable `b` set to the counter `xa` when `cond` holds, else out to
    /// `exit_pc` with the state as it was (the variable keeps its value, as
    /// in the interpreter). Returns the successors.
    ///
    /// A variable never assigned before the loop gets the counter on the
    /// way out too: the interpreter's UnboundLocalError for reading it
    /// after an empty loop has no native equivalent, and an unassigned
    /// value must not reach an index.
    fn enter_body(&mut self, st: &mut [T], cond: Var, b: usize, xa: Var, body_pc: usize, exit_pc: usize) -> Vec<usize> {
        let body = self.label();
        if matches!(st.get(b), Some(T::Undef) | None) {
            let out = self.label();
            self.push(Op::Br {
                cond,
                then: body,
                els: out,
            });
            self.push(Op::Label(out));
            let mut ex = st.to_vec();
            self.set(&mut ex, b, T::Int, &[xa]);
            self.push(Op::Jmp(exit_pc as u32));
            self.exit_state = Some((exit_pc, ex));
        } else {
            self.exit_state = Some((exit_pc, st.to_vec()));
            self.push(Op::Br {
                cond,
                then: body,
                els: exit_pc as u32,
            });
        }
        self.push(Op::Label(body));
        self.set(st, b, T::Int, &[xa]);
        self.push(Op::Jmp(body_pc as u32));
        vec![body_pc, exit_pc]
    }

    fn cond_jump(&mut self, pc: usize, c: Var, jt: bool) -> R<Vec<usize>> {
        // +J: the Jmp at pc+1 is taken when the condition equals `jt`.
        let (then, els) = if jt {
            (pc as u32 + 1, pc as u32 + 2)
        } else {
            (pc as u32 + 2, pc as u32 + 1)
        };
        self.push(Op::Br { cond: c, then, els });
        Ok(vec![pc + 1, pc + 2])
    }

    fn load_value(&mut self, st: &mut [T], a: usize, v: Value) {
        match v {
            Value::Int(i) => {
                let c = self.konst(Const::Int(i));
                self.set(st, a, T::Int, &[c]);
            }
            Value::Float(f) => {
                let c = self.konst(Const::Float(f.to_bits()));
                self.set(st, a, T::Float, &[c]);
            }
            Value::Bool(b) => {
                let c = self.konst(Const::Bool(b));
                self.set(st, a, T::Bool, &[c]);
            }
            Value::None => self.set(st, a, T::None, &[]),
            other => self.set(st, a, T::Const(other), &[]),
        }
    }

    fn global(&self, g: usize) -> R<Value> {
        let slot = self.code.globals.get(g).ok_or_else(|| self.bad("an unknown global"))?;
        slot.get()
            .ok_or_else(|| self.bad(format!("the global '{}', which is not bound yet", slot.name)))
    }

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

    fn numeric_pair(&mut self, st: &[T], b: usize, c: usize, what: &str) -> R<Option<(T, T)>> {
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

    fn binary(&mut self, st: &mut [T], op: BinOp, a: usize, b: usize, c: usize) -> R<()> {
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

    fn unary(&mut self, st: &mut [T], op: UnaryOp, a: usize, b: usize) -> R<()> {
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

    fn compare(&mut self, st: &[T], op: CmpOp, b: usize, c: usize) -> R<Var> {
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

    fn par_for(&mut self, st: &mut [T], a: usize, n: usize) -> R<()> {
        let (ft, _) = self.get(st, a)?;
        let T::Chunk(p) = ft else {
            return Err(self.bad("a parallel for without its body"));
        };
        let proto = self
            .code
            .protos
            .get(p as usize)
            .cloned()
            .ok_or_else(|| self.bad("a missing parallel for body"))?;
        // Captured cells of the body, typed as they are here.
        let mut free_t = Vec::new();
        let mut env = Vec::new();
        for cap in proto.captures.iter() {
            let Capture::Cell(c) = cap else {
                return Err(self.bad("a parallel for inside a parallel for body capturing outer variables"));
            };
            let idx = self.code.nregs as usize + *c as usize;
            let t = st.get(idx).cloned().unwrap_or(T::Undef);
            let t = if matches!(t, T::Undef) { T::None } else { t };
            if matches!(t, T::Conflict) {
                return Err(self.bad("a variable used in parallel for whose type differs between paths"));
            }
            env.extend(self.slots(idx, &t));
            free_t.push(t);
        }
        let lo = self.scalar_as(st, a + 1, &T::Int)?;
        let hi = self.scalar_as(st, a + 2, &T::Int)?;
        let step = self.scalar_as(st, a + 3, &T::Int)?;
        let mut reds = Vec::new();
        let mut init_first = Vec::new();
        let mut init_rest = Vec::new();
        for j in 0..n {
            let (t, _) = self.get(st, a + 4 + 2 * j)?;
            if !t.is_num() {
                return Err(self.bad(format!("a reduction over {}", t.describe())));
            }
            init_first.push(self.scalar_as(st, a + 4 + 2 * j, &t)?);
            init_rest.push(self.scalar_as(st, a + 5 + 2 * j, &t)?);
            reds.push(t);
        }
        let (chunk, outs) = self.s.chunk(&proto, &reds, &free_t)?;
        if outs != reds {
            return Err(
                self.bad("a reduction whose type changes inside parallel for (start it as 0.0 for a float sum)")
            );
        }
        let first: Vec<Var> = reds.iter().map(|t| self.new_var(t.leaf_types()[0])).collect();
        let rest = self.new_var(Ty::Ptr);
        let nrest = self.new_var(Ty::Int);
        let line = self.line();
        self.push(Op::ParFor {
            chunk,
            lo,
            hi,
            step,
            env,
            init_first,
            init_rest,
            first: first.clone(),
            rest,
            nrest,
            line,
        });
        let tup = T::Tuple(reds.clone());
        if n == 0 {
            self.set(st, a, T::None, &[]);
        } else {
            self.set(st, a, tup, &first);
        }
        self.set(st, a + 1, T::Partials(reds), &[rest, nrest]);
        Ok(())
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
