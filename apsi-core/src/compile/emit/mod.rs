//! Code generation: the syntax tree (with its scope table) to register bytecode.
//!
//! Expressions are compiled into a destination register (`expr_to`) or into
//! whatever register already holds them (`expr_reg`: a local's own register).
//! Temporaries are allocated stack-wise above the locals and released at the
//! end of each statement. `finally` bodies (and `with` exits) are compiled
//! inline on every way out of their block: normal exit, `return`, `break`,
//! `continue`, and (through a handler) an error.
//!
//! This file holds the state (`FnState`, `Compiler`), the entry point
//! (`compile_module`), registers, constants and names; `exprs`, `stmts`,
//! `loops`, `handlers` and `defs` add the `Compiler` methods for their
//! part of the language, `passes` works on finished bytecode, `del` on `del`.

use super::fold::{fold, Folded};
use crate::check::scopes::{Binding, ScopeId, ScopeTable};
use crate::code::*;
use crate::diagnostic::{Diagnostic, Span};
use crate::error::ErrorKind;
use crate::syntax::ast::*;
use crate::value::globals::GlobalSlot;
use crate::value::Value;
use std::collections::HashMap;
use std::sync::Arc;

mod defs;
mod del;
mod exprs;
mod handlers;
mod loops;
mod passes;
mod stmts;
pub use del::del_attr_message;
use passes::{dump_bytecode, mark_early_returns, thread_returns};

/// How compiled code reaches a module-level name.
#[derive(Clone)]
pub enum GlobalRef {
    /// A variable slot (this unit's global, or a file module's export).
    Slot(Arc<GlobalSlot>),
    /// A value that never changes (prelude names, built-in module exports).
    Const(Value),
}

/// The environment a unit is compiled against (supplied by the runtime).
pub trait GlobalEnv {
    /// Resolve a name read at module level.
    fn resolve(&mut self, name: &str) -> GlobalRef;
    /// The slot a module-level assignment writes.
    fn slot_for_write(&mut self, name: &str) -> Arc<GlobalSlot>;
}

#[derive(Hash, PartialEq, Eq)]
enum ConstKey {
    Int(i64),
    Float(u64),
    Str(String),
}

enum FinallyBody<'a> {
    Stmts(&'a [Stmt]),
    /// Call `__exit__(none, none, none)` on the context manager in this register.
    WithExit(Reg),
}

enum Block<'a> {
    Loop {
        breaks: Vec<usize>,
        continues: Vec<usize>,
    },
    /// An active `PushHandler` without a finally body (try/except).
    Handler,
    /// An active `PushHandler` whose body must also run on every exit.
    Finally(FinallyBody<'a>),
}

/// The names of a code's own cells and of its captured cells (`Code::cell_names`, `free_names`).
type CellNames = (Box<[Arc<str>]>, Box<[Arc<str>]>);

struct FnState<'a> {
    scope: ScopeId,
    name: Arc<str>,
    instrs: Vec<Instr>,
    spans: Vec<Span>,
    consts: Vec<Value>,
    const_idx: HashMap<ConstKey, u32>,
    globals: Vec<Arc<GlobalSlot>>,
    global_idx: HashMap<usize, u32>,
    protos: Vec<Arc<FuncProto>>,
    structs: Vec<Arc<StructProto>>,
    locals: HashMap<String, Reg>,
    /// Per local register: certainly assigned at this point of the code
    /// (parameters from the start; see `check_bound`).
    defined: Vec<bool>,
    /// Every local register a `del` unassigns, in order (see `scoped_defs`).
    deleted: Vec<Reg>,
    top: u16,
    max: u16,
    blocks: Vec<Block<'a>>,
    /// Registers holding the error of each enclosing `except` body.
    exc_regs: Vec<Reg>,
    span: Span,
    is_module: bool,
    /// For a method body: its struct's name and its first parameter, so
    /// `super()` can be compiled (nested closures look outwards).
    method_of: Option<(String, String)>,
    /// The pcs of binary operations written by augmented assignments
    /// (`a += b` tries `__iadd__` on a struct).
    inplace: Vec<u32>,
    /// The pcs of `AddI` written for `x - k` (a struct gets `__sub__`).
    sub_addi: Vec<u32>,
    /// In the body of a generator expression compiled for the built-in
    /// it is given to (`FnBody::Reduce`): which one, and for `any`/`all`
    /// the jumps out of the loop that decide it (`defs.rs`).
    reduce: Option<GenReduce>,
    reduce_exits: Vec<usize>,
}

/// How a generator expression given to a built-in is compiled instead of
/// as a generator (`Compiler::genexp_call` in `defs.rs`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum GenReduce {
    /// `sum(…)`: a running sum (`ReduceOp::Sum`), returned.
    Sum,
    /// `any(…)`: the first true item returns `true`.
    Any,
    /// `all(…)`: the first false item returns `false`.
    All,
    /// Every item into a list (what `list(…)` returns, and what the
    /// built-ins that take every item before anything else are given).
    List,
}

pub struct Compiler<'a, 'e> {
    table: &'a ScopeTable,
    env: &'e mut dyn GlobalEnv,
    fs: Vec<FnState<'a>>,
    /// Set while a struct's method is being compiled: (struct, self name).
    next_method: Option<(String, String)>,
    pub errors: Vec<Diagnostic>,
}

type CResult<T> = Result<T, Box<Diagnostic>>;

fn cerr(span: Span, msg: impl Into<String>) -> Box<Diagnostic> {
    Box::new(Diagnostic::new(ErrorKind::SyntaxError, msg).at(span))
}

/// Compile a module body. With `repl`, a trailing expression statement's
/// value is returned (otherwise the code returns none).
pub fn compile_module(
    module: &Module,
    table: &ScopeTable,
    env: &mut dyn GlobalEnv,
    repl: bool,
) -> Result<Arc<FuncProto>, Vec<Diagnostic>> {
    if !table.errors.is_empty() {
        return Err(table.errors.clone());
    }
    let mut c = Compiler {
        table,
        env,
        fs: Vec::new(),
        next_method: None,
        errors: Vec::new(),
    };
    c.fs.push(FnState::new(ScopeTable::MODULE, "<module>".into(), module.span, true));
    let n = module.body.len();
    let mut result: CResult<()> = Ok(());
    for (i, s) in module.body.iter().enumerate() {
        let r = if repl && i + 1 == n {
            if let StmtKind::Expr(e) = &s.kind {
                c.f().span = s.span;
                c.expr_reg(e).map(|r| {
                    c.emit(Instr::Return { a: r });
                })
            } else {
                c.stmt(s)
            }
        } else {
            c.stmt(s)
        };
        if let Err(d) = r {
            result = Err(d);
            break;
        }
    }
    if let Err(d) = result {
        c.errors.push(*d);
        return Err(c.errors);
    }
    c.emit(Instr::ReturnNone);
    let st = c.fs.pop();
    match st {
        Some(st) => {
            let code = st.finish(0, 0, Default::default());
            Ok(Arc::new(FuncProto {
                name: "<module>".into(),
                code: crate::code::LazyCode::ready(code),
                nparams: 0,
                has_vararg: false,
                nkwonly: 0,
                has_kwarg: false,
                param_names: Box::new([]),
                ndefaults: 0,
                kwonly_has_default: Box::new([]),
                captures: Box::new([]),
                checks: Box::new([]),
                simple: true,
                generator: false,
                keeps_first: false,
                leaf: false,
            }))
        }
        None => Err(vec![Diagnostic::new(
            ErrorKind::Error,
            "internal error: compiler state lost",
        )]),
    }
}

impl<'a> FnState<'a> {
    fn new(scope: ScopeId, name: Arc<str>, span: Span, is_module: bool) -> FnState<'a> {
        FnState {
            scope,
            name,
            instrs: Vec::new(),
            spans: Vec::new(),
            consts: Vec::new(),
            const_idx: HashMap::new(),
            globals: Vec::new(),
            global_idx: HashMap::new(),
            protos: Vec::new(),
            structs: Vec::new(),
            locals: HashMap::new(),
            defined: Vec::new(),
            deleted: Vec::new(),
            top: 0,
            max: 0,
            blocks: Vec::new(),
            exc_regs: Vec::new(),
            span,
            is_module,
            method_of: None,
            inplace: Vec::new(),
            sub_addi: Vec::new(),
            reduce: None,
            reduce_exits: Vec::new(),
        }
    }

    fn finish(mut self, ncells: u16, nparams: u16, names: CellNames) -> Arc<Code> {
        thread_returns(&mut self.instrs, &mut self.spans);
        mark_early_returns(&mut self.instrs, nparams);
        let mut unbound_regs: Vec<Reg> = self
            .instrs
            .iter()
            .filter_map(|i| match i {
                Instr::CheckBound { a, .. } | Instr::DelLocal { a, .. } => Some(*a),
                _ => None,
            })
            // A parameter (`def f(a): del a`) holds its argument on entry:
            // resetting it would lose the argument.
            .filter(|&r| r >= nparams)
            .collect();
        unbound_regs.sort_unstable();
        unbound_regs.dedup();
        let ic = crate::code::InlineCaches::for_instrs(&self.instrs);
        let leaf = crate::code::leaf_of(&self.instrs, &self.consts);
        let mut code = Code {
            ic,
            unbound_regs: unbound_regs.into_boxed_slice(),
            name: self.name,
            instrs: self.instrs.into_boxed_slice(),
            spans: crate::code::SpanTable::ready(self.spans.into_boxed_slice()),
            consts: self.consts.into_boxed_slice(),
            globals: self.globals.into_boxed_slice(),
            protos: self.protos.into_iter().map(crate::code::ProtoSlot::ready).collect(),
            structs: self.structs.into_iter().map(crate::code::StructSlot::ready).collect(),
            nregs: self.max.max(1),
            ncells,
            span: self.span,
            inplace: self.inplace.into_boxed_slice(),
            sub_addi: self.sub_addi.into_boxed_slice(),
            cell_names: names.0,
            free_names: names.1,
            has_yield_from: false,
            leaf,
        };
        code.has_yield_from = (1..code.instrs.len()).any(|pc| code.yield_from_site(pc).is_some());
        let code = Arc::new(code);
        if dump_bytecode() {
            eprintln!("{code:?}");
        }
        code
    }
}

/// Does `e` mention the name `n` anywhere (so it cannot be computed in place into `n`)?
fn mentions(e: &Expr, n: &str) -> bool {
    let mut found = false;
    visit_names(e, &mut |x| found |= x == n);
    found
}

fn visit_names(e: &Expr, f: &mut dyn FnMut(&str)) {
    match &e.kind {
        ExprKind::Name(n) => f(n),
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Bytes(_)
        | ExprKind::Bool(_)
        | ExprKind::None
        | ExprKind::Error => {}
        ExprKind::FString(parts) => {
            fn fp(parts: &[FStringPart], f: &mut dyn FnMut(&str)) {
                for p in parts {
                    if let FStringPart::Expr { expr, spec, .. } = p {
                        visit_names(expr, f);
                        fp(spec, f);
                    }
                }
            }
            fp(parts, f)
        }
        ExprKind::List(xs) | ExprKind::Tuple(xs) | ExprKind::Set(xs) => xs.iter().for_each(|x| visit_names(x, f)),
        ExprKind::Dict(items) => {
            for it in items {
                match it {
                    DictItem::Pair(k, v) => {
                        visit_names(k, f);
                        visit_names(v, f)
                    }
                    DictItem::Spread(x) => visit_names(x, f),
                }
            }
        }
        ExprKind::Starred(x) | ExprKind::UnaryOp { operand: x, .. } | ExprKind::Attribute { value: x, .. } => {
            visit_names(x, f)
        }
        ExprKind::BinOp { left, right, .. }
        | ExprKind::BoolOp { left, right, .. }
        | ExprKind::Range {
            start: left,
            end: right,
        }
        | ExprKind::Index {
            value: left,
            index: right,
        } => {
            visit_names(left, f);
            visit_names(right, f)
        }
        ExprKind::Compare { left, ops } => {
            visit_names(left, f);
            ops.iter().for_each(|(_, x)| visit_names(x, f))
        }
        ExprKind::Call { func, args } => {
            visit_names(func, f);
            for a in args {
                match a {
                    Arg::Positional(x) | Arg::Keyword(_, x) | Arg::Star(x) | Arg::DoubleStar(x) => visit_names(x, f),
                }
            }
        }
        ExprKind::Slice { lower, upper, step } => [lower, upper, step]
            .into_iter()
            .flatten()
            .for_each(|x| visit_names(x, f)),
        // Nested scopes may read the name through a cell; be conservative.
        ExprKind::Lambda { .. }
        | ExprKind::ListComp { .. }
        | ExprKind::DictComp { .. }
        | ExprKind::SetComp { .. }
        | ExprKind::GenExp { .. } => f(""),
        ExprKind::Yield(v) => {
            f("");
            if let Some(v) = v {
                visit_names(v, f)
            }
        }
        ExprKind::YieldFrom(v) => {
            f("");
            visit_names(v, f)
        }
        ExprKind::IfExp { test, body, orelse } => {
            visit_names(test, f);
            visit_names(body, f);
            visit_names(orelse, f)
        }
    }
}

/// The annotation as written, for messages (`float`, `Tensor[N, f32]`).
pub fn annotation_text(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Name(n) => n.clone(),
        ExprKind::None => "none".into(),
        ExprKind::Attribute { value, attr } => format!("{}.{}", annotation_text(value), attr.name),
        ExprKind::Index { value, index } => {
            let inner = match &index.kind {
                ExprKind::Tuple(xs) => xs.iter().map(annotation_text).collect::<Vec<_>>().join(", "),
                _ => annotation_text(index),
            };
            format!("{}[{}]", annotation_text(value), inner)
        }
        ExprKind::Int(i) => i.to_string(),
        ExprKind::Str(s) => s.clone(),
        _ => "?".into(),
    }
}

/// The right side of `x op k` as an immediate (`CmpI`, `CmpJmpI`): a small
/// int constant, and an operator other than `in`/`is` and their negations.
fn small_int_operand(op: CmpOp, e: &Expr) -> Option<i16> {
    match op {
        CmpOp::In | CmpOp::NotIn | CmpOp::Is | CmpOp::IsNot => None,
        _ => small_int(e),
    }
}

fn small_int(e: &Expr) -> Option<i16> {
    match fold(e)? {
        Folded::Int(i) => i16::try_from(i).ok(),
        Folded::Float(_) => None,
    }
}

static NO_PARAMS: Params = Params {
    params: Vec::new(),
    vararg: None,
    kwonly: Vec::new(),
    kwarg: None,
};

impl<'a, 'e> Compiler<'a, 'e> {
    #[inline]
    fn f(&mut self) -> &mut FnState<'a> {
        let n = self.fs.len() - 1;
        &mut self.fs[n]
    }

    fn emit(&mut self, ins: Instr) -> usize {
        let f = self.f();
        f.instrs.push(ins);
        f.spans.push(f.span);
        f.instrs.len() - 1
    }

    fn emit_at(&mut self, ins: Instr, span: Span) -> usize {
        self.f().span = span;
        self.emit(ins)
    }

    fn here(&mut self) -> usize {
        self.f().instrs.len()
    }

    fn jmp_placeholder(&mut self) -> usize {
        self.emit(Instr::Jmp { t: 0 })
    }

    fn patch(&mut self, site: usize, target: usize) {
        let t = target as u32;
        if let Some(
            Instr::Jmp { t: x }
            | Instr::JmpIf { t: x, .. }
            | Instr::JmpIfNot { t: x, .. }
            | Instr::PushHandler { t: x, .. },
        ) = self.f().instrs.get_mut(site)
        {
            *x = t;
        }
    }

    fn patch_here(&mut self, sites: Vec<usize>) {
        let h = self.here();
        for s in sites {
            self.patch(s, h);
        }
    }

    fn alloc(&mut self) -> CResult<Reg> {
        let f = self.f();
        if f.top >= 60000 {
            return Err(cerr(f.span, "function too large: more than 60000 registers"));
        }
        let r = f.top;
        f.top += 1;
        f.max = f.max.max(f.top);
        Ok(r)
    }

    fn alloc_n(&mut self, n: usize) -> CResult<Reg> {
        let first = self.f().top;
        for _ in 0..n {
            self.alloc()?;
        }
        Ok(first)
    }

    fn mark(&mut self) -> u16 {
        self.f().top
    }

    fn free_to(&mut self, m: u16) {
        self.f().top = m;
    }

    fn konst(&mut self, v: Value) -> CResult<u32> {
        let key = match &v {
            Value::Int(i) => Some(ConstKey::Int(*i)),
            Value::Float(x) => Some(ConstKey::Float(x.to_bits())),
            Value::Str(s) => Some(ConstKey::Str(s.as_str().to_string())),
            _ => None,
        };
        let f = self.f();
        if let Some(k) = &key {
            if let Some(&i) = f.const_idx.get(k) {
                return Ok(i);
            }
        }
        let i = f.consts.len() as u32;
        f.consts.push(v);
        if let Some(k) = key {
            f.const_idx.insert(k, i);
        }
        Ok(i)
    }

    fn konst16(&mut self, v: Value) -> CResult<u16> {
        let k = self.konst(v)?;
        u16::try_from(k).map_err(|_| {
            cerr(
                self.fs.last().map(|f| f.span).unwrap_or_default(),
                "too many constants in one function",
            )
        })
    }

    fn str_const16(&mut self, s: &str) -> CResult<u16> {
        self.konst16(Value::str(s))
    }

    fn global_index(&mut self, slot: Arc<GlobalSlot>) -> u32 {
        let key = Arc::as_ptr(&slot) as usize;
        let f = self.f();
        if let Some(&i) = f.global_idx.get(&key) {
            return i;
        }
        let i = f.globals.len() as u32;
        f.globals.push(slot);
        f.global_idx.insert(key, i);
        i
    }

    fn resolve(&mut self, name: &str) -> Binding {
        let scope = self.f().scope;
        self.table.resolve(scope, name)
    }

    fn local_reg(&mut self, name: &str) -> Option<Reg> {
        self.f().locals.get(name).copied()
    }

    /// Before reading local `r`: unless it is certainly assigned here, a
    /// `CheckBound` so an unassigned read raises instead of seeing a value.
    fn check_bound(&mut self, name: &str, r: Reg, span: Span) -> CResult<()> {
        if self.f().defined.get(r as usize) == Some(&false) {
            let k = self.str_const16(name)?;
            self.emit_at(Instr::CheckBound { a: r, k }, span);
            // Past the check it is assigned (or the function has raised).
            self.mark_defined(r);
        }
        Ok(())
    }

    fn mark_defined(&mut self, r: Reg) {
        if let Some(d) = self.f().defined.get_mut(r as usize) {
            *d = true;
        }
    }

    /// Run `f` and then forget what it assigned (loop bodies, try blocks:
    /// they may not run, or not to the end).
    fn scoped_defs(&mut self, f: impl FnOnce(&mut Self) -> CResult<()>) -> CResult<()> {
        let before = self.f().defined.clone();
        let dmark = self.f().deleted.len();
        let r = f(self);
        self.f().defined = before;
        // What the block may have deleted is not certainly assigned after it.
        self.undefine_deleted_since(dmark);
        r
    }

    // ---------------------------------------------------------------- names

    fn load_name(&mut self, name: &str, dst: Reg, span: Span) -> CResult<()> {
        match self.resolve(name) {
            Binding::Local => match self.local_reg(name) {
                Some(r) => {
                    self.check_bound(name, r, span)?;
                    if r != dst {
                        self.emit(Instr::Move { a: dst, b: r });
                    }
                }
                None => return Err(cerr(span, format!("internal: no register for '{name}'"))),
            },
            Binding::Cell(c) => {
                self.emit_at(Instr::GetCell { a: dst, c }, span);
            }
            Binding::Free(c) => {
                self.emit_at(Instr::GetFree { a: dst, c }, span);
            }
            Binding::Global => match self.env.resolve(name) {
                GlobalRef::Const(v) => {
                    let k = self.konst(v)?;
                    self.emit(Instr::LoadK { a: dst, k });
                }
                GlobalRef::Slot(s) => {
                    let g = self.global_index(s);
                    self.emit_at(Instr::GetGlobal { a: dst, g }, span);
                }
            },
        }
        Ok(())
    }

    fn store_name(&mut self, name: &str, src: Reg, span: Span) -> CResult<()> {
        match self.resolve(name) {
            Binding::Local => match self.local_reg(name) {
                Some(r) => {
                    if r != src {
                        self.emit(Instr::Move { a: r, b: src });
                    }
                    self.mark_defined(r);
                }
                None => return Err(cerr(span, format!("internal: no register for '{name}'"))),
            },
            Binding::Cell(c) => {
                self.emit(Instr::SetCell { a: src, c });
            }
            Binding::Free(c) => {
                self.emit(Instr::SetFree { a: src, c });
            }
            Binding::Global => {
                let s = self.env.slot_for_write(name);
                let g = self.global_index(s);
                self.emit_at(Instr::SetGlobal { a: src, g }, span);
            }
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum FnBody<'a> {
    Stmts(&'a [Stmt]),
    Expr(&'a Expr),
    Comp(&'a Expr),
    /// A generator expression compiled for the built-in it is given to:
    /// a plain function of the outermost iterator that returns what the
    /// built-in would.
    Reduce(&'a Expr, GenReduce),
    /// The outlined body of a `parallel for` (target, body, range form, reductions).
    ParChunk(&'a Expr, &'a [Stmt], bool),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::scopes::analyze;
    use crate::diagnostic::FileId;

    /// Globals are write-once slots; `range` and `print` come from the prelude.
    struct TestEnv(HashMap<String, Arc<GlobalSlot>>);
    impl GlobalEnv for TestEnv {
        fn resolve(&mut self, name: &str) -> GlobalRef {
            if let Some(v) = crate::builtins::prelude().get(name) {
                return GlobalRef::Const(v.clone());
            }
            GlobalRef::Slot(self.slot_for_write(name))
        }
        fn slot_for_write(&mut self, name: &str) -> Arc<GlobalSlot> {
            self.0
                .entry(name.to_string())
                .or_insert_with(|| Arc::new(GlobalSlot::new(name, true, None)))
                .clone()
        }
    }

    fn compile(src: &str) -> Result<Arc<FuncProto>, Vec<Diagnostic>> {
        let (m, diags) = crate::syntax::parse(FileId(0), src);
        assert!(diags.is_empty(), "{diags:?}");
        let t = analyze(&m, &[]);
        compile_module(&m, &t, &mut TestEnv(HashMap::new()), false)
    }

    fn func(src: &str, i: usize) -> Arc<Code> {
        match compile(src) {
            Ok(p) => p.code.protos[i].code.arc().clone(),
            Err(e) => panic!("{e:?}"),
        }
    }

    fn early_returns(code: &Code) -> Vec<(u16, u16)> {
        code.instrs
            .iter()
            .filter_map(|i| match i {
                Instr::ReturnParams { a, n } => Some((*a, *n)),
                _ => None,
            })
            .collect()
    }

    /// `Code::ic_of` reads a cache without a bounds check: every body with
    /// an instruction that has one gets one per instruction, and a body
    /// without any gets none.
    #[test]
    fn a_body_that_looks_names_up_has_a_cache_per_instruction() {
        let src = "struct P:\n    x: int = 0\n    def get(self):\n        return self.x + 1\n\
                   def f(p):\n    p.x = 2\n    return p.get()\n\
                   def g(n):\n    return n * 2\n\
                   def h(n):\n    return [i for i in range(n)]\n";
        let top = compile(src).unwrap_or_else(|e| panic!("{e:?}"));
        let mut bodies = vec![top.code.arc().clone()];
        let mut i = 0;
        while i < bodies.len() {
            let c = bodies[i].clone();
            for p in c.protos.iter() {
                bodies.push(p.code.arc().clone());
            }
            i += 1;
        }
        let mut with = 0;
        for c in &bodies {
            if c.instrs.iter().any(crate::code::has_cache) {
                assert_eq!(c.ic.len(), c.instrs.len(), "{c:?}");
                with += 1;
            } else {
                assert!(c.ic.is_empty(), "{c:?}");
            }
        }
        assert!(with >= 2 && with < bodies.len(), "{with} of {}", bodies.len());
    }

    #[test]
    fn a_base_case_returning_a_parameter_clears_only_the_parameters() {
        let code = func(
            "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
            0,
        );
        assert_eq!(early_returns(&code), vec![(0, 1)], "{code:?}");
        // Tests against immediates and of a parameter's truth write nothing.
        let code = func(
            "def f(a, b, c):\n    if a < 0:\n        return b\n    if b > 0 and c:\n        return c\n    return a\n",
            0,
        );
        assert_eq!(early_returns(&code), vec![(1, 3), (2, 3), (0, 3)], "{code:?}");
        // `a is none` is one test (`CmpJmpNone`), no `none` loaded: both
        // returns are early.
        let code = func("def f(a, b):\n    if a is none:\n        return b\n    return a\n", 0);
        assert!(
            matches!(code.instrs[0], Instr::CmpJmpNone { a: 0, jt: false }),
            "{code:?}"
        );
        assert_eq!(early_returns(&code), vec![(1, 2), (0, 2)], "{code:?}");
        // `is not none` in a loop's condition and under `not`.
        let code = func(
            "def f(a):\n    while a is not none:\n        a = a.next\n    if not (a is none):\n        return 1\n",
            0,
        );
        let tests: Vec<bool> = code
            .instrs
            .iter()
            .filter_map(|i| match i {
                Instr::CmpJmpNone { jt, .. } => Some(*jt),
                _ => None,
            })
            .collect();
        assert_eq!(tests.len(), 2, "{code:?}");
        assert!(
            !code.instrs.iter().any(|i| matches!(i, Instr::LoadNone { .. })),
            "{code:?}"
        );
    }

    #[test]
    fn a_return_whose_path_writes_only_its_own_register_clears_the_parameters() {
        let code = func("def add(a, b):\n    return a + b\n", 0);
        assert_eq!(early_returns(&code), vec![(2, 2)], "{code:?}");
        // A local assigned on one branch and read through CheckBound.
        let code = func("def f(n):\n    if n < 2:\n        y = 1\n    return y\n", 0);
        assert_eq!(early_returns(&code), vec![(1, 1)], "{code:?}");
        assert_eq!(&*code.unbound_regs, &[1], "{code:?}");
    }

    #[test]
    fn returns_after_a_write_or_of_a_local_clear_everything() {
        // The return of `n` comes after `x` is written; the return of `x`
        // after writes of `x` only, so that one is early.
        let code = func(
            "def f(n):\n    x = n\n    if n < 2:\n        return n\n    return x\n",
            0,
        );
        assert_eq!(early_returns(&code), vec![(1, 1)], "{code:?}");
        assert_eq!(
            code.instrs
                .iter()
                .filter(|i| matches!(i, Instr::Return { a: 0 }))
                .count(),
            1,
            "{code:?}"
        );
        // A call writes the callee's window too.
        let code = func("def f(n):\n    return g(n)\ndef g(n):\n    return n\n", 0);
        assert_eq!(early_returns(&code), vec![], "{code:?}");
        // A loop writes its counter before the return it leads to.
        let code = func("def f(n):\n    for i in range(n):\n        pass\n    return n\n", 0);
        assert_eq!(early_returns(&code), vec![], "{code:?}");
        // A handler's code is reached from `PushHandler`, which writes.
        let code = func(
            "def f(n):\n    try:\n        return n\n    except Error:\n        return n\n",
            0,
        );
        assert_eq!(early_returns(&code), vec![], "{code:?}");
    }

    #[test]
    fn generators_are_never_simple_and_keep_plain_returns() {
        let src = "def g(n):\n    if n < 2:\n        return n\n    yield n\n";
        let p = match compile(src) {
            Ok(p) => p.code.protos[0].get().clone(),
            Err(e) => panic!("{e:?}"),
        };
        assert!(p.generator && !p.simple);
        assert!(early_returns(&p.code).is_empty(), "{:?}", p.code);
        assert!(p.code.instrs.iter().any(|i| matches!(i, Instr::Yield { .. })));
        // A generator expression is a generator function of its own.
        let p = match compile("g = (x for x in [1])\n") {
            Ok(p) => p.code.protos[0].get().clone(),
            Err(e) => panic!("{e:?}"),
        };
        assert!(p.generator && &*p.name == "<genexpr>");
    }

    #[test]
    fn one_step_bodies_are_leaves_and_nothing_else_is() {
        use crate::code::{Leaf, Scalar};
        let leaf = |body: &str| match compile(&format!("def m(self, v=1):\n{body}")) {
            Ok(p) => {
                let proto = &p.code.protos[0];
                if proto.leaf {
                    proto.code.leaf
                } else {
                    Leaf::No
                }
            }
            Err(e) => panic!("{e:?}"),
        };
        assert_eq!(leaf("    return self.x\n"), Leaf::GetSelf);
        assert_eq!(leaf("    self.x = v\n"), Leaf::SetSelf);
        assert_eq!(leaf("    pass\n"), Leaf::Returns(Scalar::None));
        assert_eq!(leaf("    return\n"), Leaf::Returns(Scalar::None));
        assert_eq!(leaf("    return none\n"), Leaf::Returns(Scalar::None));
        assert_eq!(leaf("    return false\n"), Leaf::Returns(Scalar::Bool(false)));
        assert_eq!(leaf("    return 7\n"), Leaf::Returns(Scalar::Int(7)));
        assert_eq!(leaf("    return 1 << 40\n"), Leaf::Returns(Scalar::Int(1 << 40)));
        assert_eq!(leaf("    return 0.5\n"), Leaf::Returns(Scalar::Float(0.5)));
        for body in [
            "    return v.x\n",
            "    return self.x.y\n",
            "    self.x = 1\n",
            "    v.x = self\n",
            "    self.x = v\n    return 1\n",
            "    return 'text'\n",
            "    return v\n",
            "    x = self.x\n    return x + 1\n",
            "    if v:\n        return 1\n    return 2\n",
            "    return self.x\n    yield 1\n",
            "    f = lambda: self\n    return self.x\n",
        ] {
            assert_eq!(leaf(body), Leaf::No, "{body}");
        }
    }

    #[test]
    fn keeps_first_only_when_the_parameter_alone_binds_it() {
        let first = |body: &str| match compile(&format!("def m(self, k):\n{body}")) {
            Ok(p) => p.code.protos[0].keeps_first,
            Err(e) => panic!("{e:?}"),
        };
        assert!(first("    return self.x + k\n"));
        assert!(first("    k = self\n    return k\n"));
        for body in [
            "    self = k\n",
            "    self += k\n",
            "    del self\n",
            "    for self in k:\n        pass\n",
            "    try:\n        pass\n    except ValueError as self:\n        pass\n",
            "    f = lambda: self\n",
            "    def g():\n        nonlocal self\n        self = 1\n",
        ] {
            assert!(!first(body), "{body}");
        }
        // A function of no parameters has no first one to keep.
        match compile("def f():\n    return 1\n") {
            Ok(p) => assert!(!p.code.protos[0].keeps_first),
            Err(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn fib_uses_superinstructions() {
        let code = func(
            "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
            0,
        );
        let ins = &code.instrs;
        assert!(
            matches!(
                ins[0],
                Instr::CmpJmpI {
                    op: CmpOp::Lt,
                    a: 0,
                    v: 2,
                    jt: false
                }
            ),
            "{code:?}"
        );
        assert!(matches!(ins[1], Instr::Jmp { .. }));
        assert_eq!(
            ins.iter()
                .filter(|i| matches!(i, Instr::CallGlobal { n: 1, .. }))
                .count(),
            2,
            "{code:?}"
        );
        assert_eq!(
            ins.iter().filter(|i| matches!(i, Instr::AddI { .. })).count(),
            2,
            "{code:?}"
        );
        assert!(
            ins.iter().all(|i| !matches!(i, Instr::LoadInt { .. })),
            "constants are immediates: {code:?}"
        );
    }

    #[test]
    fn range_loops_count_in_registers() {
        let code = func(
            "def f(n):\n    s = 0\n    for i in range(n):\n        s += i * i\n    return s\n",
            0,
        );
        assert!(
            code.instrs.iter().any(|i| matches!(i, Instr::ForRangePrep { .. })),
            "{code:?}"
        );
        assert!(
            code.instrs.iter().any(|i| matches!(i, Instr::ForRangeLoop { .. })),
            "{code:?}"
        );
        assert!(
            !code
                .instrs
                .iter()
                .any(|i| matches!(i, Instr::ForPrep { .. } | Instr::CallK { .. })),
            "{code:?}"
        );
        // `s += i * i` writes straight into s's register.
        assert!(
            code.instrs.iter().any(|i| matches!(i, Instr::Add { a: 1, b: 1, .. })),
            "{code:?}"
        );
    }

    #[test]
    fn for_loops_test_at_the_bottom() {
        // A `for` statement and a comprehension: entered by a jump to the
        // `ForLoop` at the bottom, whose jump word goes back to the body.
        for src in [
            "def f(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n",
            "def f(xs):\n    return [x * 2 for x in xs if x]\n",
        ] {
            let f = func(src, 0);
            // The function's own body, or its comprehension's.
            let code = if src.contains('[') {
                let Some(c) = f
                    .protos
                    .iter()
                    .map(|p| p.code.arc().clone())
                    .find(|c| &*c.name == "<comprehension>")
                else {
                    panic!("no comprehension body in {f:?}");
                };
                c
            } else {
                f
            };
            let at = code.instrs.iter().position(|i| matches!(i, Instr::ForLoop { .. }));
            let Some(at) = at else { panic!("no ForLoop in {code:?}") };
            assert!(
                !code.instrs.iter().any(|i| matches!(i, Instr::ForNext { .. })),
                "{code:?}"
            );
            let Some(&Instr::Jmp { t: body }) = code.instrs.get(at + 1) else {
                panic!("ForLoop without its jump word: {code:?}");
            };
            assert!((body as usize) < at, "{code:?}");
            // The loop is entered by a jump to its test.
            let Some(&Instr::Jmp { t: enter }) = code.instrs.get(body as usize - 1) else {
                panic!("no entry jump before the body: {code:?}");
            };
            assert_eq!(enter as usize, at, "{code:?}");
        }
    }

    #[test]
    fn shadowed_range_is_a_plain_loop() {
        let code = func("def f(range):\n    for i in range(3):\n        pass\n", 0);
        assert!(
            code.instrs.iter().any(|i| matches!(i, Instr::ForPrep { .. })),
            "{code:?}"
        );
    }

    #[test]
    fn folding_keeps_runtime_errors() {
        let p =
            compile("x = 1 / 0\ny = 2 ** 10 + 3\nz = 9223372036854775807 + 1\n").unwrap_or_else(|e| panic!("{e:?}"));
        let ins = &p.code.instrs;
        assert!(
            ins.iter().any(|i| matches!(i, Instr::Bin { op: BinOp::Div, .. })),
            "1/0 stays a division: {:?}",
            p.code
        );
        assert!(
            ins.iter().any(|i| matches!(i, Instr::LoadInt { v: 1027, .. })),
            "{:?}",
            p.code
        );
        assert!(
            ins.iter().any(|i| matches!(i, Instr::AddI { v: 1, .. })),
            "the overflow happens at run time: {:?}",
            p.code
        );
    }

    #[test]
    fn every_instruction_has_a_span() {
        let src = "def f(a):\n    return a[0] + 1\nprint(f([1]))\n";
        let p = compile(src).unwrap_or_else(|e| panic!("{e:?}"));
        let code = &p.code.protos[0].code;
        assert_eq!(code.instrs.len(), code.spans.len());
        let idx = code
            .instrs
            .iter()
            .position(|i| matches!(i, Instr::GetIndex { .. }))
            .unwrap_or(usize::MAX);
        let sp = code.span_at(idx);
        assert_eq!(&src[sp.start as usize..sp.end as usize], "a[0]");
    }

    #[test]
    fn misplaced_statements_are_errors() {
        for (src, msg) in [
            ("break\n", "'break' outside a loop"),
            ("return 1\n", "'return' outside a function"),
            ("def f():\n    continue\n", "'continue' outside a loop"),
        ] {
            match compile(src) {
                Ok(_) => panic!("{src:?} compiled"),
                Err(ds) => assert!(ds[0].message.contains(msg), "{src:?}: {}", ds[0].message),
            }
        }
    }

    #[test]
    fn a_comprehension_with_one_for_and_no_if_starts_with_room() {
        let first = |src: &str| func(src, 0).protos[0].code.instrs[0];
        assert!(matches!(
            first("def f(xs):\n    return [x * 2 for x in xs]\n"),
            Instr::NewListFor { b: 0, .. }
        ));
        for src in [
            "def f(xs):\n    return [x for x in xs if x]\n",
            "def f(xs):\n    return [x for y in xs for x in y]\n",
        ] {
            assert!(matches!(first(src), Instr::BuildList { n: 0, .. }), "{src}");
        }
    }

    #[test]
    fn captured_parameters_move_into_cells() {
        let code = func("def f(p):\n    return lambda: p\n", 0);
        assert!(matches!(code.instrs[0], Instr::MakeCell { a: 0, c: 0 }), "{code:?}");
        assert_eq!(code.ncells, 1);
        assert_eq!(code.protos[0].captures.as_ref(), &[Capture::Cell(0)]);
    }

    #[test]
    fn a_local_stored_into_an_attribute_or_item_is_not_copied_first() {
        // `obj.v = x` and `obj[i] = x` read `x` from its own register.
        let code = func("def f(obj, x, i):\n    obj.v = x\n    obj[i] = x\n", 0);
        assert!(!code.instrs.iter().any(|i| matches!(i, Instr::Move { .. })), "{code:?}");
        assert!(
            code.instrs
                .iter()
                .any(|i| matches!(i, Instr::SetAttr { a: 0, c: 1, .. })),
            "{code:?}"
        );
        assert!(
            code.instrs
                .iter()
                .any(|i| matches!(i, Instr::SetIndex { a: 0, b: 2, c: 1 })),
            "{code:?}"
        );
        // A value that may be unbound is checked before the target's parts run.
        let code = func("def f(obj, flag):\n    if flag:\n        y = 1\n    obj.g().v = y\n", 0);
        let check = code.instrs.iter().position(|i| matches!(i, Instr::CheckBound { .. }));
        let call = code.instrs.iter().position(|i| matches!(i, Instr::CallMethod { .. }));
        assert!(check.is_some() && check < call, "{code:?}");
    }
}
