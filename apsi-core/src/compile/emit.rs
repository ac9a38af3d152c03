//! Code generation: the syntax tree (with its scope table) to register bytecode.
//!
//! Expressions are compiled into a destination register (`expr_to`) or into
//! whatever register already holds them (`expr_reg`: a local's own register).
//! Temporaries are allocated stack-wise above the locals and released at the
//! end of each statement. `finally` bodies (and `with` exits) are compiled
//! inline on every way out of their block: normal exit, `return`, `break`,
//! `continue`, and (through a handler) an error.

use super::code::*;
use super::fold::{fold, Folded};
use super::scope::{Binding, ScopeId, ScopeTable};
use crate::diagnostic::{Diagnostic, Span};
use crate::error::ErrorKind;
use crate::syntax::ast::*;
use crate::vm::globals::GlobalSlot;
use crate::vm::value::Value;
use std::collections::HashMap;
use std::sync::Arc;

mod del;
pub use del::del_attr_message;

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
                code,
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
            .collect();
        unbound_regs.sort_unstable();
        unbound_regs.dedup();
        // (Arithmetic too: on a struct it calls an operator method, cached like one.)
        let cached = |i: &Instr| {
            matches!(
                i,
                Instr::GetAttr { .. }
                    | Instr::SetAttr { .. }
                    | Instr::CallMethod { .. }
                    | Instr::Add { .. }
                    | Instr::Sub { .. }
                    | Instr::Mul { .. }
                    | Instr::MulT { .. }
                    | Instr::Bin { .. }
                    | Instr::AddI { .. }
            )
        };
        let ncached = self.instrs.iter().filter(|i| cached(i)).count();
        let mut next = 0u32;
        let ic_slots: Box<[u32]> = if ncached == 0 {
            Box::new([])
        } else {
            self.instrs
                .iter()
                .map(|i| {
                    if cached(i) {
                        next += 1;
                        next - 1
                    } else {
                        u32::MAX
                    }
                })
                .collect()
        };
        let code = Arc::new(Code {
            ic: (0..ncached).map(|_| Default::default()).collect(),
            ic_slots,
            unbound_regs: unbound_regs.into_boxed_slice(),
            name: self.name,
            instrs: self.instrs.into_boxed_slice(),
            spans: self.spans.into_boxed_slice(),
            consts: self.consts.into_boxed_slice(),
            globals: self.globals.into_boxed_slice(),
            protos: self.protos.into_boxed_slice(),
            structs: self.structs.into_boxed_slice(),
            nregs: self.max.max(1),
            ncells,
            span: self.span,
            inplace: self.inplace.into_boxed_slice(),
            sub_addi: self.sub_addi.into_boxed_slice(),
            cell_names: names.0,
            free_names: names.1,
        });
        if dump_bytecode() {
            eprintln!("{code:?}");
        }
        code
    }
}

/// `APSI_DUMP_BYTECODE=1`: print every compiled body to stderr (for
/// people working on the compiler and the VM).
fn dump_bytecode() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("APSI_DUMP_BYTECODE").is_some_and(|v| v == "1"))
}

/// Is `ins` a test whose jump target is the `Jmp` word right after it?
fn reads_next_jmp(ins: &Instr) -> bool {
    matches!(
        ins,
        Instr::CmpJmp { .. }
            | Instr::CmpJmpI { .. }
            | Instr::ForNext { .. }
            | Instr::ForRangePrep { .. }
            | Instr::ForRangeLoop { .. }
    )
}

/// Two peepholes on finished code: a jump to a return becomes that return,
/// and `Move { a, b }` right before `Return { a }` becomes `Return { b }`
/// (the copy is dead once the frame ends). A jump word that belongs to a
/// two-word test is left alone.
fn thread_returns(instrs: &mut [Instr], spans: &mut [Span]) {
    fn copy_span(spans: &mut [Span], from: usize, to: usize) {
        if let Some(&sp) = spans.get(from) {
            if let Some(s) = spans.get_mut(to) {
                *s = sp;
            }
        }
    }
    for i in 0..instrs.len() {
        if i > 0 && reads_next_jmp(&instrs[i - 1]) {
            continue;
        }
        if let Instr::Jmp { t } = instrs[i] {
            if let Some(&ret @ (Instr::Return { .. } | Instr::ReturnNone)) = instrs.get(t as usize) {
                instrs[i] = ret;
                copy_span(spans, t as usize, i);
            }
        }
    }
    for i in 0..instrs.len() {
        if let (Instr::Move { a, b }, Some(&Instr::Return { a: r })) = (instrs[i], instrs.get(i + 1)) {
            if r == a {
                instrs[i] = Instr::Return { a: b };
                copy_span(spans, i + 1, i);
            }
        }
    }
}

/// Where control can go after instruction `pc` (a superset is safe: it only
/// makes `mark_early_returns` mark fewer returns). Jump targets live only in
/// `Jmp`, `JmpIf`, `JmpIfNot` and `PushHandler`; a test that reads the `Jmp`
/// word after it continues at `pc + 2` or at that word's target.
fn successors(instrs: &[Instr], pc: usize) -> Vec<usize> {
    let Some(ins) = instrs.get(pc) else { return Vec::new() };
    match *ins {
        Instr::Jmp { t } => vec![t as usize],
        Instr::Return { .. } | Instr::ReturnParams { .. } | Instr::ReturnNone => Vec::new(),
        Instr::JmpIf { t, .. } | Instr::JmpIfNot { t, .. } | Instr::PushHandler { t, .. } => vec![pc + 1, t as usize],
        ref i if reads_next_jmp(i) => vec![pc + 1, pc + 2],
        _ => vec![pc + 1],
    }
}

/// Turn each `Return { a }` that is reached from the entry only through
/// instructions that write no register, or write only register `a` itself,
/// into `ReturnParams { a, n: nparams }`. On such a path every register
/// other than the parameters and `a` still holds what it held when the frame
/// was pushed: nothing this call owns (the locals it may read unassigned are
/// reset on entry, see `Code::unbound_regs`). The return takes `a`'s value
/// out (a scalar is copied and may stay behind; an owned value is replaced
/// by `none`), so clearing the parameters is enough: `def add(a, b): return
/// a + b` and a recursion's base case clear two and one registers instead of
/// the whole window.
///
/// A generator's code is left alone: its frame is resumed in the middle,
/// with every register restored, so "reached from the entry" says nothing
/// about what its registers hold (its frames also always end on the slow
/// path, which clears the whole window).
fn mark_early_returns(instrs: &mut [Instr], nparams: u16) {
    if instrs.iter().any(|i| matches!(i, Instr::Yield { .. })) {
        return;
    }
    let len = instrs.len();
    // Write no register, end nothing, raise nothing but errors that unwind
    // (which clears the whole window). Operator hooks written in Apsi run in
    // frames above this whole window.
    let pure = |i: &Instr| {
        matches!(
            i,
            Instr::Nop
                | Instr::Jmp { .. }
                | Instr::JmpIf { .. }
                | Instr::JmpIfNot { .. }
                | Instr::CmpJmp { .. }
                | Instr::CmpJmpI { .. }
                | Instr::CheckBound { .. }
        )
    };
    // Write register `r` and no other.
    let writes_only = |i: &Instr, r: Reg| match *i {
        Instr::Move { a, .. }
        | Instr::LoadK { a, .. }
        | Instr::LoadInt { a, .. }
        | Instr::LoadNone { a }
        | Instr::LoadBool { a, .. }
        | Instr::GetGlobal { a, .. }
        | Instr::Add { a, .. }
        | Instr::Sub { a, .. }
        | Instr::Mul { a, .. }
        | Instr::AddI { a, .. }
        | Instr::Bin { a, .. }
        | Instr::Unary { a, .. }
        | Instr::Cmp { a, .. } => a == r,
        _ => false,
    };
    let mut regs: Vec<Reg> = instrs
        .iter()
        .filter_map(|i| match i {
            Instr::Return { a } => Some(*a),
            _ => None,
        })
        .collect();
    regs.sort_unstable();
    regs.dedup();
    if regs.is_empty() {
        return;
    }
    // The control-flow edges, once; only what counts as harmless depends on `r`.
    let succ: Vec<Vec<usize>> = (0..len).map(|pc| successors(instrs, pc)).collect();
    for r in regs {
        let ok = |i: &Instr| pure(i) || writes_only(i, r);
        let mut reached = vec![false; len];
        let mut work = vec![0usize];
        while let Some(pc) = work.pop() {
            if pc >= len || reached[pc] {
                continue;
            }
            reached[pc] = true;
            if ok(&instrs[pc]) {
                work.extend_from_slice(&succ[pc]);
            }
        }
        let mut only_ok_preds = vec![true; len];
        for (pc, targets) in succ.iter().enumerate() {
            let from_ok = reached[pc] && ok(&instrs[pc]);
            for &s in targets {
                if let Some(p) = only_ok_preds.get_mut(s) {
                    *p &= from_ok;
                }
            }
        }
        for pc in 0..len {
            if matches!(instrs[pc], Instr::Return { a } if a == r) && reached[pc] && only_ok_preds[pc] {
                instrs[pc] = Instr::ReturnParams { a: r, n: nparams };
            }
        }
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

    // ---------------------------------------------------------- expressions

    /// Evaluate into a register that already holds the value if possible
    /// (a local), else into a new temporary.
    fn expr_reg(&mut self, e: &'a Expr) -> CResult<Reg> {
        if let ExprKind::Name(n) = &e.kind {
            if self.resolve(n) == Binding::Local {
                if let Some(r) = self.local_reg(n) {
                    self.check_bound(n, r, e.span)?;
                    return Ok(r);
                }
            }
        }
        let r = self.alloc()?;
        self.expr_to(e, r)?;
        Ok(r)
    }

    fn load_int(&mut self, dst: Reg, i: i64) -> CResult<()> {
        if let Ok(v) = i32::try_from(i) {
            self.emit(Instr::LoadInt { a: dst, v });
        } else {
            let k = self.konst(Value::Int(i))?;
            self.emit(Instr::LoadK { a: dst, k });
        }
        Ok(())
    }

    fn expr_to(&mut self, e: &'a Expr, dst: Reg) -> CResult<()> {
        let m = self.mark();
        let r = self.expr_inner(e, dst);
        self.free_to(m);
        r
    }

    fn expr_inner(&mut self, e: &'a Expr, dst: Reg) -> CResult<()> {
        let span = e.span;
        self.f().span = span;
        match &e.kind {
            ExprKind::Int(i) => self.load_int(dst, *i)?,
            ExprKind::Float(x) => {
                let k = self.konst(Value::Float(*x))?;
                self.emit(Instr::LoadK { a: dst, k });
            }
            ExprKind::Str(s) => {
                let k = self.konst(Value::str(s.as_str()))?;
                self.emit(Instr::LoadK { a: dst, k });
            }
            ExprKind::Bytes(data) => {
                let k = self.konst(Value::bytes(data.clone()))?;
                self.emit(Instr::LoadK { a: dst, k });
            }
            ExprKind::Bool(b) => {
                self.emit(Instr::LoadBool { a: dst, v: *b });
            }
            ExprKind::None => {
                self.emit(Instr::LoadNone { a: dst });
            }
            ExprKind::Error => return Err(cerr(span, "cannot run a program with syntax errors")),
            ExprKind::Name(n) => self.load_name(n, dst, span)?,
            ExprKind::FString(parts) => self.fstring(parts, dst, span)?,
            ExprKind::List(xs) => self.sequence(xs, dst, false, span)?,
            ExprKind::Tuple(xs) => self.sequence(xs, dst, true, span)?,
            ExprKind::Dict(items) => self.dict(items, dst, span)?,
            ExprKind::Set(xs) => self.set_display(xs, dst, span)?,
            ExprKind::Starred(_) => {
                return Err(cerr(
                    span,
                    "a starred expression `*x` is only allowed in a list, tuple or call",
                ))
            }
            ExprKind::BinOp { op, left, right } => {
                if let Some(v) = fold(e) {
                    match v {
                        Folded::Int(i) => self.load_int(dst, i)?,
                        Folded::Float(x) => {
                            let k = self.konst(Value::Float(x))?;
                            self.emit(Instr::LoadK { a: dst, k });
                        }
                    }
                    return Ok(());
                }
                let l = self.expr_reg(left)?;
                // `x * y + z`: the product's index, to mark it for fusion.
                let product = match (op, &left.kind, self.f().instrs.last()) {
                    (BinOp::Add, ExprKind::BinOp { op: BinOp::Mul, .. }, Some(&Instr::Mul { a, .. })) if a == l => {
                        Some(self.here() - 1)
                    }
                    _ => None,
                };
                if matches!(op, BinOp::Add | BinOp::Sub) {
                    if let Some(v) = small_int(right) {
                        let v = if *op == BinOp::Sub { v.checked_neg() } else { Some(v) };
                        if let Some(v) = v {
                            self.emit_add_imm(dst, l, v, *op == BinOp::Sub, span);
                            return Ok(());
                        }
                    }
                }
                let r = self.expr_reg(right)?;
                if let Some(Instr::Mul { a, b, c }) = product.and_then(|i| self.f().instrs.get(i).copied()) {
                    if let Some(slot) = product.and_then(|i| self.f().instrs.get_mut(i)) {
                        *slot = Instr::MulT { a, b, c };
                    }
                }
                let ins = match op {
                    BinOp::Add => Instr::Add { a: dst, b: l, c: r },
                    BinOp::Sub => Instr::Sub { a: dst, b: l, c: r },
                    BinOp::Mul => Instr::Mul { a: dst, b: l, c: r },
                    op => Instr::Bin {
                        op: *op,
                        a: dst,
                        b: l,
                        c: r,
                    },
                };
                self.emit_at(ins, span);
            }
            ExprKind::UnaryOp { op, operand } => {
                if let Some(v) = fold(e) {
                    match v {
                        Folded::Int(i) => self.load_int(dst, i)?,
                        Folded::Float(x) => {
                            let k = self.konst(Value::Float(x))?;
                            self.emit(Instr::LoadK { a: dst, k });
                        }
                    }
                    return Ok(());
                }
                let r = self.expr_reg(operand)?;
                self.emit_at(Instr::Unary { op: *op, a: dst, b: r }, span);
            }
            ExprKind::BoolOp { op, left, right } => {
                self.expr_to(left, dst)?;
                let site = match op {
                    BoolOp::And => self.emit(Instr::JmpIfNot { a: dst, t: 0 }),
                    BoolOp::Or => self.emit(Instr::JmpIf { a: dst, t: 0 }),
                };
                self.expr_to(right, dst)?;
                self.patch_here(vec![site]);
            }
            ExprKind::Compare { left, ops } => {
                let mut l = self.expr_reg(left)?;
                let mut exits = Vec::new();
                for (i, (op, x)) in ops.iter().enumerate() {
                    let last = i + 1 == ops.len();
                    let r = if last {
                        self.expr_reg(x)?
                    } else {
                        self.expr_tmp_keep(x)?
                    };
                    self.emit_at(
                        Instr::Cmp {
                            op: *op,
                            a: dst,
                            b: l,
                            c: r,
                        },
                        span,
                    );
                    if !last {
                        exits.push(self.emit(Instr::JmpIfNot { a: dst, t: 0 }));
                    }
                    l = r;
                }
                self.patch_here(exits);
            }
            ExprKind::Range { start, end } => {
                let a = self.expr_reg(start)?;
                let b = self.expr_reg(end)?;
                self.emit_at(Instr::BuildRange { a: dst, b: a, c: b }, span);
            }
            ExprKind::Call { func, args } => self.call(func, args, dst, span)?,
            ExprKind::Attribute { value, attr } => {
                let o = self.expr_reg(value)?;
                let k = self.str_const16(&attr.name)?;
                self.emit_at(Instr::GetAttr { a: dst, b: o, k }, span);
            }
            ExprKind::Index { value, index } => {
                let o = self.expr_reg(value)?;
                let i = self.expr_reg(index)?;
                self.emit_at(Instr::GetIndex { a: dst, b: o, c: i }, span);
            }
            ExprKind::Slice { lower, upper, step } => {
                let b = self.alloc_n(3)?;
                for (i, part) in [lower, upper, step].into_iter().enumerate() {
                    match part {
                        Some(x) => self.expr_to(x, b + i as u16)?,
                        None => {
                            self.emit(Instr::LoadNone { a: b + i as u16 });
                        }
                    }
                }
                self.emit_at(Instr::BuildSlice { a: dst, b }, span);
            }
            ExprKind::Lambda { params, body } => {
                let sid = self
                    .table
                    .of_expr(e)
                    .ok_or_else(|| cerr(span, "internal: lambda without scope"))?;
                self.make_function(sid, "<lambda>", params, FnBody::Expr(body), dst, span)?;
            }
            ExprKind::IfExp { test, body, orelse } => {
                let f = self.cond_jump(test, false)?;
                self.expr_to(body, dst)?;
                let j = self.jmp_placeholder();
                self.patch_here(f);
                self.expr_to(orelse, dst)?;
                self.patch_here(vec![j]);
            }
            ExprKind::ListComp { generators, .. }
            | ExprKind::DictComp { generators, .. }
            | ExprKind::SetComp { generators, .. } => {
                let sid = self
                    .table
                    .of_expr(e)
                    .ok_or_else(|| cerr(span, "internal: comprehension without scope"))?;
                let first = generators
                    .first()
                    .ok_or_else(|| cerr(span, "a comprehension needs a `for`"))?;
                let f = self.alloc()?;
                self.make_function(sid, "<comprehension>", &NO_PARAMS, FnBody::Comp(e), f, span)?;
                let a = self.alloc()?;
                self.expr_to(&first.iter, a)?;
                self.emit_at(Instr::Call { a: f, n: 1 }, span);
                if f != dst {
                    self.emit(Instr::Move { a: dst, b: f });
                }
            }
            ExprKind::GenExp { generators, .. } => {
                // As a comprehension, but the function is a generator and its
                // outermost iterable is turned into an iterator now (Python
                // raises for a non-iterable at creation, not at the first step).
                let sid = self
                    .table
                    .of_expr(e)
                    .ok_or_else(|| cerr(span, "internal: generator expression without scope"))?;
                let first = generators
                    .first()
                    .ok_or_else(|| cerr(span, "a generator expression needs a `for`"))?;
                let f = self.alloc()?;
                self.make_function(sid, "<genexpr>", &NO_PARAMS, FnBody::Comp(e), f, span)?;
                let a = self.alloc()?;
                self.expr_to(&first.iter, a)?;
                self.emit_at(Instr::IterPrep { a }, first.iter.span);
                self.emit_at(Instr::Call { a: f, n: 1 }, span);
                if f != dst {
                    self.emit(Instr::Move { a: dst, b: f });
                }
            }
            ExprKind::Yield(v) => {
                self.check_yield(span)?;
                let m = self.mark();
                let r = match v {
                    Some(v) => self.expr_reg(v)?,
                    None => {
                        let r = self.alloc()?;
                        self.emit(Instr::LoadNone { a: r });
                        r
                    }
                };
                self.emit_at(Instr::Yield { a: r, b: dst }, span);
                self.free_to(m);
            }
            ExprKind::YieldFrom(v) => {
                // it = iter(v); for x in it: yield x; dst = its return value
                // (ForNext leaves a finished generator's return value, or
                // none, in it+1).
                self.check_yield(span)?;
                let m = self.mark();
                let it = self.alloc_n(2)?;
                self.expr_to(v, it)?;
                self.emit_at(Instr::GetIter { a: it, b: it }, v.span);
                self.emit_at(Instr::ForPrep { a: it }, v.span);
                let x = self.alloc()?;
                let top = self.here();
                self.emit_at(Instr::ForNext { a: it, b: x }, span);
                let exit = self.jmp_placeholder();
                self.emit_at(Instr::Yield { a: x, b: x }, span);
                self.emit(Instr::Jmp { t: top as u32 });
                self.patch_here(vec![exit]);
                self.emit(Instr::Move { a: dst, b: it + 1 });
                self.free_to(m);
            }
        }
        Ok(())
    }

    /// `yield` compiles only in a generator function's own body (the
    /// checker reports the other places first, with more help).
    fn check_yield(&mut self, span: Span) -> CResult<()> {
        let sc = self.table.scope(self.f().scope);
        if sc.generator && sc.kind == crate::compile::scope::ScopeKind::Function {
            return Ok(());
        }
        let msg = if sc.name == "<parallel for>" {
            "'yield' is not allowed inside 'parallel for'"
        } else {
            "'yield' outside function"
        };
        Err(cerr(span, msg))
    }

    /// A temporary that stays allocated after the call (for chained comparisons).
    fn expr_tmp_keep(&mut self, e: &'a Expr) -> CResult<Reg> {
        let r = self.alloc()?;
        self.expr_to(e, r)?;
        Ok(r)
    }

    fn sequence(&mut self, xs: &'a [Expr], dst: Reg, tuple: bool, span: Span) -> CResult<()> {
        if xs.iter().any(|x| matches!(x.kind, ExprKind::Starred(_))) {
            let l = self.alloc()?;
            self.emit(Instr::BuildList { a: l, b: l, n: 0 });
            for x in xs {
                match &x.kind {
                    ExprKind::Starred(inner) => {
                        let v = self.expr_reg(inner)?;
                        self.emit_at(Instr::ListExtend { a: l, b: v }, x.span);
                    }
                    _ => {
                        let v = self.expr_reg(x)?;
                        self.emit(Instr::ListAppend { a: l, b: v });
                    }
                }
            }
            if tuple {
                self.emit(Instr::BuildTuple {
                    a: dst,
                    b: l,
                    n: u16::MAX,
                });
            } else {
                self.emit(Instr::Move { a: dst, b: l });
            }
            return Ok(());
        }
        // (u16::MAX is BuildTuple's "convert a list" marker.)
        let n = u16::try_from(xs.len())
            .ok()
            .filter(|&n| n < u16::MAX)
            .ok_or_else(|| cerr(span, "too many elements in one display"))?;
        let b = self.alloc_n(xs.len())?;
        for (i, x) in xs.iter().enumerate() {
            self.expr_to(x, b + i as u16)?;
        }
        self.f().span = span;
        if tuple {
            self.emit(Instr::BuildTuple { a: dst, b, n });
        } else {
            self.emit(Instr::BuildList { a: dst, b, n });
        }
        Ok(())
    }

    fn dict(&mut self, items: &'a [DictItem], dst: Reg, span: Span) -> CResult<()> {
        if items.iter().any(|i| matches!(i, DictItem::Spread(_))) {
            let d = self.alloc()?;
            self.emit(Instr::BuildDict { a: d, b: d, n: 0 });
            for it in items {
                match it {
                    DictItem::Pair(k, v) => {
                        let kr = self.expr_reg(k)?;
                        let vr = self.expr_reg(v)?;
                        self.emit_at(Instr::DictSet { a: d, b: kr, c: vr }, k.span);
                    }
                    DictItem::Spread(x) => {
                        let v = self.expr_reg(x)?;
                        self.emit_at(Instr::DictUpdate { a: d, b: v }, x.span);
                    }
                }
            }
            self.emit(Instr::Move { a: dst, b: d });
            return Ok(());
        }
        let n = u16::try_from(items.len()).map_err(|_| cerr(span, "too many entries in one dict display"))?;
        let b = self.alloc_n(items.len() * 2)?;
        for (i, it) in items.iter().enumerate() {
            if let DictItem::Pair(k, v) = it {
                self.expr_to(k, b + 2 * i as u16)?;
                self.expr_to(v, b + 2 * i as u16 + 1)?;
            }
        }
        self.emit_at(Instr::BuildDict { a: dst, b, n }, span);
        Ok(())
    }

    fn fstring(&mut self, parts: &'a [FStringPart], dst: Reg, span: Span) -> CResult<()> {
        if parts.is_empty() {
            let k = self.konst(Value::str(""))?;
            self.emit(Instr::LoadK { a: dst, k });
            return Ok(());
        }
        if let [FStringPart::Literal(s)] = parts {
            let k = self.konst(Value::str(s.as_str()))?;
            self.emit(Instr::LoadK { a: dst, k });
            return Ok(());
        }
        let mut regs = Vec::new();
        for p in parts {
            match p {
                FStringPart::Literal(s) => {
                    let r = self.alloc()?;
                    let k = self.konst(Value::str(s.as_str()))?;
                    self.emit(Instr::LoadK { a: r, k });
                    regs.push(r);
                }
                FStringPart::Expr {
                    expr,
                    conversion,
                    spec,
                    debug_text,
                } => {
                    if let Some(t) = debug_text {
                        let r = self.alloc()?;
                        let k = self.konst(Value::str(t.as_str()))?;
                        self.emit(Instr::LoadK { a: r, k });
                        regs.push(r);
                    }
                    let out = self.alloc()?;
                    regs.push(out);
                    let v = self.expr_reg(expr)?;
                    let conv = match conversion {
                        Some('r') => Some(true),
                        Some('s') => Some(false),
                        _ if debug_text.is_some() && spec.is_empty() => Some(true),
                        _ => None,
                    };
                    let v = match conv {
                        Some(true) => {
                            self.emit_at(Instr::ToRepr { a: out, b: v }, expr.span);
                            out
                        }
                        Some(false) => {
                            self.emit_at(Instr::ToStr { a: out, b: v }, expr.span);
                            out
                        }
                        None => v,
                    };
                    if spec.is_empty() {
                        if conv.is_none() {
                            self.emit_at(Instr::ToStr { a: out, b: v }, expr.span);
                        }
                    } else {
                        let s = self.alloc()?;
                        self.fstring(spec, s, span)?;
                        self.emit_at(Instr::Format { a: out, b: v, c: s }, expr.span);
                    }
                    // Release the scratch registers above `out`.
                    self.free_to(out + 1);
                }
            }
        }
        // The parts were allocated one after another.
        let b = regs[0];
        let n = regs.len() as u16;
        self.emit_at(Instr::Concat { a: dst, b, n }, span);
        Ok(())
    }

    fn call(&mut self, func: &'a Expr, args: &'a [Arg], dst: Reg, span: Span) -> CResult<()> {
        if let (ExprKind::Name(n), []) = (&func.kind, args) {
            if n == "super" && self.resolve(n) == Binding::Global {
                return self.super_call(dst, span);
            }
        }
        // `str(x)` of the prelude's `str` is one instruction.
        if let (ExprKind::Name(n), [Arg::Positional(x)]) = (&func.kind, args) {
            if n == "str" && self.resolve(n) == Binding::Global {
                if let GlobalRef::Const(Value::Native(f)) = self.env.resolve(n) {
                    if &*f.name == "str" {
                        let r = self.expr_reg(x)?;
                        self.emit_at(Instr::ToStr { a: dst, b: r }, span);
                        return Ok(());
                    }
                }
            }
        }
        // `xs.append(v)` on a local: one instruction, no receiver copy.
        if let (ExprKind::Attribute { value, attr }, [Arg::Positional(x)]) = (&func.kind, args) {
            if let ExprKind::Name(n) = &value.kind {
                if attr.name == "append" && self.resolve(n) == Binding::Local {
                    if let Some(b) = self.local_reg(n) {
                        self.check_bound(n, b, value.span)?;
                        let c = self.expr_reg(x)?;
                        let mv = !self.is_local_reg(c);
                        self.emit_at(Instr::AppendTo { a: dst, b, c, mv }, span);
                        return Ok(());
                    }
                }
            }
        }
        let general = args.iter().any(|a| matches!(a, Arg::Star(_) | Arg::DoubleStar(_)));
        let has_kw = args.iter().any(|a| matches!(a, Arg::Keyword(..)));
        // The callee register: reuse `dst` when it is the newest temporary.
        let f = if dst + 1 == self.mark() && !self.is_local_reg(dst) {
            dst
        } else {
            self.alloc()?
        };
        if general {
            self.expr_to(func, f)?;
            let l = self.alloc()?;
            let d = self.alloc()?;
            self.emit(Instr::BuildList { a: l, b: l, n: 0 });
            let mut any_kw = false;
            for a in args {
                match a {
                    Arg::Positional(x) => {
                        let v = self.expr_reg(x)?;
                        self.emit(Instr::ListAppend { a: l, b: v });
                    }
                    Arg::Star(x) => {
                        let v = self.expr_reg(x)?;
                        self.emit_at(Instr::ListExtend { a: l, b: v }, x.span);
                    }
                    _ => any_kw = true,
                }
            }
            if any_kw {
                self.emit(Instr::BuildDict { a: d, b: d, n: 0 });
                for a in args {
                    let m = self.mark();
                    match a {
                        Arg::Keyword(name, x) => {
                            let k = self.alloc()?;
                            let kc = self.konst(Value::str(name.name.as_str()))?;
                            self.emit(Instr::LoadK { a: k, k: kc });
                            let v = self.expr_reg(x)?;
                            self.emit(Instr::DictSet { a: d, b: k, c: v });
                        }
                        Arg::DoubleStar(x) => {
                            let v = self.expr_reg(x)?;
                            self.emit_at(Instr::DictUpdate { a: d, b: v }, x.span);
                        }
                        _ => {}
                    }
                    self.free_to(m);
                }
            } else {
                self.emit(Instr::LoadNone { a: d });
            }
            self.emit_at(Instr::CallEx { a: f }, span);
        } else {
            let npos = args.iter().filter(|a| matches!(a, Arg::Positional(_))).count();
            let n = u16::try_from(npos).map_err(|_| cerr(span, "too many arguments"))?;
            enum Kind {
                Plain,
                Global(u16),
                Method(u16),
                Const(u16),
            }
            let mut kind = Kind::Plain;
            match &func.kind {
                ExprKind::Attribute { value, attr } if !has_kw => {
                    let recv = self.alloc()?;
                    self.expr_to(value, recv)?;
                    kind = Kind::Method(self.str_const16(&attr.name)?);
                }
                ExprKind::Name(name) if self.resolve(name) == Binding::Global => match self.env.resolve(name) {
                    GlobalRef::Const(v) => {
                        let k = self.konst(v)?;
                        match u16::try_from(k) {
                            Ok(k16) if !has_kw => kind = Kind::Const(k16),
                            _ => {
                                self.emit(Instr::LoadK { a: f, k });
                            }
                        }
                    }
                    GlobalRef::Slot(s) => {
                        let g = self.global_index(s);
                        match u16::try_from(g) {
                            Ok(g16) if !has_kw => kind = Kind::Global(g16),
                            _ => {
                                self.emit_at(Instr::GetGlobal { a: f, g }, func.span);
                            }
                        }
                    }
                },
                _ => self.expr_to(func, f)?,
            }
            for a in args {
                if let Arg::Positional(x) = a {
                    let r = self.alloc()?;
                    self.expr_to(x, r)?;
                }
            }
            if has_kw {
                let mut names = Vec::new();
                for a in args {
                    if let Arg::Keyword(name, x) = a {
                        let r = self.alloc()?;
                        self.expr_to(x, r)?;
                        names.push(Value::str(name.name.as_str()));
                    }
                }
                let k = self.konst16(Value::tuple(names))?;
                self.emit_at(Instr::CallKw { a: f, n, k }, span);
            } else {
                let ins = match kind {
                    Kind::Plain => Instr::Call { a: f, n },
                    Kind::Global(g) => Instr::CallGlobal { a: f, g, n },
                    Kind::Method(k) => Instr::CallMethod { a: f, k, n },
                    Kind::Const(k) => Instr::CallK { a: f, k, n },
                };
                self.emit_at(ins, span);
            }
        }
        if f != dst {
            self.emit(Instr::Move { a: dst, b: f });
        }
        Ok(())
    }

    fn is_local_reg(&mut self, r: Reg) -> bool {
        self.f().locals.values().any(|&x| x == r)
    }

    /// Compile a condition; returns the jump sites taken when its truth equals `jump_if`.
    fn cond_jump(&mut self, e: &'a Expr, jump_if: bool) -> CResult<Vec<usize>> {
        let m = self.mark();
        let r = self.cond_inner(e, jump_if);
        self.free_to(m);
        r
    }

    fn cond_inner(&mut self, e: &'a Expr, jump_if: bool) -> CResult<Vec<usize>> {
        match &e.kind {
            ExprKind::Bool(b) => {
                if *b == jump_if {
                    Ok(vec![self.jmp_placeholder()])
                } else {
                    Ok(vec![])
                }
            }
            ExprKind::UnaryOp {
                op: UnaryOp::Not,
                operand,
            } => self.cond_jump(operand, !jump_if),
            ExprKind::BoolOp { op, left, right } => match (op, jump_if) {
                (BoolOp::And, false) | (BoolOp::Or, true) => {
                    let mut a = self.cond_jump(left, jump_if)?;
                    a.extend(self.cond_jump(right, jump_if)?);
                    Ok(a)
                }
                _ => {
                    let skip = self.cond_jump(left, !jump_if)?;
                    let a = self.cond_jump(right, jump_if)?;
                    self.patch_here(skip);
                    Ok(a)
                }
            },
            ExprKind::Compare { left, ops } if ops.len() == 1 => {
                let (op, right) = (&ops[0].0, &ops[0].1);
                let l = self.expr_reg(left)?;
                let ins = match small_int(right) {
                    Some(v) if !matches!(op, CmpOp::In | CmpOp::NotIn | CmpOp::Is | CmpOp::IsNot) => Instr::CmpJmpI {
                        op: *op,
                        a: l,
                        v,
                        jt: jump_if,
                    },
                    _ => {
                        let r = self.expr_reg(right)?;
                        Instr::CmpJmp {
                            op: *op,
                            a: l,
                            b: r,
                            jt: jump_if,
                        }
                    }
                };
                self.emit_at(ins, e.span);
                Ok(vec![self.jmp_placeholder()])
            }
            _ => {
                let r = self.expr_reg(e)?;
                let ins = if jump_if {
                    Instr::JmpIf { a: r, t: 0 }
                } else {
                    Instr::JmpIfNot { a: r, t: 0 }
                };
                Ok(vec![self.emit_at(ins, e.span)])
            }
        }
    }

    // ----------------------------------------------------------- assignment

    fn assign(&mut self, target: &'a Expr, src: Reg) -> CResult<()> {
        let span = target.span;
        match &target.kind {
            ExprKind::Name(n) => self.store_name(n, src, span),
            ExprKind::Tuple(xs) | ExprKind::List(xs) => {
                let m = self.mark();
                let star = xs.iter().position(|x| matches!(x.kind, ExprKind::Starred(_)));
                let b = self.alloc_n(xs.len())?;
                match star {
                    None => {
                        let n = u16::try_from(xs.len()).map_err(|_| cerr(span, "too many targets"))?;
                        // Every target a local in a register (and the source none
                        // of them): straight into those registers.
                        let regs: Option<Vec<Reg>> = xs
                            .iter()
                            .map(|x| match &x.kind {
                                ExprKind::Name(name) if self.resolve(name) == Binding::Local => {
                                    self.local_reg(name).filter(|r| *r != src)
                                }
                                _ => None,
                            })
                            .collect();
                        if let Some(regs) = regs {
                            let k = self.konst16(Value::tuple(regs.iter().map(|r| Value::Int(*r as i64)).collect()))?;
                            self.emit_at(Instr::UnpackRegs { b: src, k, n }, span);
                            for r in regs {
                                self.mark_defined(r);
                            }
                            self.free_to(m);
                            return Ok(());
                        }
                        self.emit_at(Instr::Unpack { a: b, b: src, n }, span);
                    }
                    Some(i) => {
                        if xs.iter().filter(|x| matches!(x.kind, ExprKind::Starred(_))).count() > 1 {
                            return Err(cerr(span, "only one starred target is allowed in an assignment"));
                        }
                        let before = u8::try_from(i).map_err(|_| cerr(span, "too many targets"))?;
                        let after = u8::try_from(xs.len() - i - 1).map_err(|_| cerr(span, "too many targets"))?;
                        self.emit_at(
                            Instr::UnpackEx {
                                a: b,
                                b: src,
                                before,
                                after,
                            },
                            span,
                        );
                    }
                }
                for (i, x) in xs.iter().enumerate() {
                    let t = match &x.kind {
                        ExprKind::Starred(inner) => inner,
                        _ => x,
                    };
                    self.assign(t, b + i as u16)?;
                }
                self.free_to(m);
                Ok(())
            }
            ExprKind::Attribute { value, attr } => {
                let m = self.mark();
                let o = self.expr_reg(value)?;
                let k = self.str_const16(&attr.name)?;
                self.emit_at(Instr::SetAttr { a: o, k, c: src }, span);
                self.free_to(m);
                Ok(())
            }
            ExprKind::Index { value, index } => {
                let m = self.mark();
                let o = self.expr_reg(value)?;
                let i = self.expr_reg(index)?;
                self.emit_at(Instr::SetIndex { a: o, b: i, c: src }, span);
                self.free_to(m);
                Ok(())
            }
            ExprKind::Starred(_) => Err(cerr(span, "a starred target must be inside a list or tuple")),
            _ => Err(cerr(span, "cannot assign to this expression")),
        }
    }

    // ----------------------------------------------------------- statements

    fn block(&mut self, body: &'a [Stmt]) -> CResult<()> {
        for s in body {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &'a Stmt) -> CResult<()> {
        let m = self.mark();
        self.f().span = s.span;
        let r = self.stmt_inner(s);
        self.free_to(m);
        r
    }

    fn stmt_inner(&mut self, s: &'a Stmt) -> CResult<()> {
        let span = s.span;
        match &s.kind {
            StmtKind::Expr(e) => {
                let r = self.alloc()?;
                self.expr_to(e, r)?;
            }
            StmtKind::Assign { targets, value } => self.assign_stmt(targets, value)?,
            StmtKind::AugAssign { target, op, value } => self.aug_assign(target, *op, value, span)?,
            StmtKind::AnnAssign { target, value, .. } => {
                if let Some(v) = value {
                    self.assign_stmt(std::slice::from_ref(target), v)?;
                }
            }
            StmtKind::If { test, body, orelse } => {
                let f = self.cond_jump(test, false)?;
                let before = self.f().defined.clone();
                self.block(body)?;
                let after_body = std::mem::replace(&mut self.f().defined, before);
                if orelse.is_empty() {
                    self.patch_here(f);
                } else {
                    let j = self.jmp_placeholder();
                    self.patch_here(f);
                    self.block(orelse)?;
                    self.patch_here(vec![j]);
                }
                // Certainly assigned after the `if`: on both paths.
                for (d, b) in self.f().defined.iter_mut().zip(after_body) {
                    *d = *d && b;
                }
            }
            StmtKind::While { test, body, orelse } => self.scoped_defs(|c| {
                let entry = c.loop_entry_defs(body);
                let top = c.here();
                let exit = c.cond_jump(test, false)?;
                c.f().blocks.push(Block::Loop {
                    breaks: Vec::new(),
                    continues: Vec::new(),
                });
                c.block(body)?;
                c.emit(Instr::Jmp { t: top as u32 });
                let (breaks, continues) = c.pop_loop();
                for site in continues {
                    c.patch(site, top);
                }
                c.patch_here(exit);
                c.loop_else(entry, orelse)?;
                c.patch_here(breaks);
                Ok(())
            })?,
            StmtKind::For {
                orelse, parallel: true, ..
            } if !orelse.is_empty() => {
                return Err(cerr(span, "a 'parallel for' loop cannot have an 'else' clause"));
            }
            StmtKind::For {
                target,
                iter,
                body,
                parallel: true,
                ..
            } => self.scoped_defs(|c| c.par_for_stmt(s, target, iter, body, span))?,
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
                ..
            } => self.scoped_defs(|c| c.for_stmt(target, iter, body, orelse, span))?,
            StmtKind::Del(targets) => {
                for t in targets {
                    self.del_target(t)?;
                }
            }
            StmtKind::Break | StmtKind::Continue => {
                let is_break = matches!(s.kind, StmtKind::Break);
                let Some(li) = self.f().blocks.iter().rposition(|b| matches!(b, Block::Loop { .. })) else {
                    let w = if is_break { "break" } else { "continue" };
                    return Err(cerr(span, format!("'{w}' outside a loop")));
                };
                self.unwind_blocks(li + 1)?;
                let site = self.jmp_placeholder();
                if let Some(Block::Loop { breaks, continues }) = self.f().blocks.get_mut(li) {
                    if is_break {
                        breaks.push(site)
                    } else {
                        continues.push(site)
                    }
                }
            }
            StmtKind::Pass | StmtKind::Global(_) | StmtKind::Nonlocal(_) => {}
            StmtKind::Error => return Err(cerr(span, "cannot run a program with syntax errors")),
            StmtKind::Return(v) => {
                if self.f().is_module {
                    return Err(cerr(span, "'return' outside a function"));
                }
                let has_finally = self.f().blocks.iter().any(|b| !matches!(b, Block::Loop { .. }));
                let r = match v {
                    Some(e) if has_finally => Some(self.expr_tmp_keep(e)?),
                    Some(e) => Some(self.expr_reg(e)?),
                    None => None,
                };
                self.unwind_blocks(0)?;
                self.f().span = span;
                match r {
                    Some(a) => self.emit(Instr::Return { a }),
                    None => self.emit(Instr::ReturnNone),
                };
            }
            StmtKind::FuncDef(fd) => {
                let dst = self.def_value(fd)?;
                self.store_name(&fd.name.name, dst, fd.name.span)?;
            }
            StmtKind::StructDef(sd) => self.struct_def(sd)?,
            StmtKind::Use { path, alias } => {
                if !self.f().is_module {
                    // Module-level `use` bindings are made before the unit runs;
                    // inside a function the statement binds the module locally.
                    if let Some(n) = alias.as_ref().or(path.last()) {
                        let r = self.alloc()?;
                        match self.env.resolve(&n.name) {
                            GlobalRef::Const(v) => {
                                let k = self.konst(v)?;
                                self.emit(Instr::LoadK { a: r, k });
                            }
                            GlobalRef::Slot(sl) => {
                                let g = self.global_index(sl);
                                self.emit_at(Instr::GetGlobal { a: r, g }, n.span);
                            }
                        }
                        self.store_name(&n.name, r, n.span)?;
                    }
                }
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => self.scoped_defs(|c| c.try_stmt(body, handlers, orelse, finalbody, span))?,
            StmtKind::Raise(e) => match e {
                Some(e) => {
                    let r = self.expr_reg(e)?;
                    self.emit_at(Instr::Raise { a: r }, span);
                }
                None => {
                    let r = self.f().exc_regs.last().copied().unwrap_or(NO_REG);
                    self.emit_at(Instr::Reraise { a: r }, span);
                }
            },
            StmtKind::Assert { test, msg } => {
                let ok = self.cond_jump(test, true)?;
                let r = match msg {
                    Some(m) => self.expr_reg(m)?,
                    None => NO_REG,
                };
                self.emit_at(Instr::AssertFail { a: r }, span);
                self.patch_here(ok);
            }
            StmtKind::With { items, body } => self.with_stmt(items, body, span)?,
        }
        Ok(())
    }

    fn assign_stmt(&mut self, targets: &'a [Expr], value: &'a Expr) -> CResult<()> {
        if let [t] = targets {
            if let ExprKind::Name(n) = &t.kind {
                if self.resolve(n) == Binding::Local && !mentions(value, n) {
                    if let Some(r) = self.local_reg(n) {
                        self.expr_to(value, r)?;
                        self.mark_defined(r);
                        return Ok(());
                    }
                }
            }
            // `a, b = x, y`: evaluate every value first, then assign.
            if let (ExprKind::Tuple(ts) | ExprKind::List(ts), ExprKind::Tuple(vs)) = (&t.kind, &value.kind) {
                let simple = |xs: &'a [Expr]| xs.iter().all(|x| !matches!(x.kind, ExprKind::Starred(_)));
                if ts.len() == vs.len() && simple(ts) && simple(vs) {
                    let b = self.alloc_n(vs.len())?;
                    for (i, v) in vs.iter().enumerate() {
                        self.expr_to(v, b + i as u16)?;
                    }
                    for (i, t) in ts.iter().enumerate() {
                        self.assign(t, b + i as u16)?;
                    }
                    return Ok(());
                }
            }
            // `a, b = pair` with `pair` a local: unpacked where it is (the
            // unpack reads every item before it writes a target).
            if matches!(t.kind, ExprKind::Tuple(_) | ExprKind::List(_)) && matches!(value.kind, ExprKind::Name(_)) {
                let m = self.mark();
                let v = self.expr_reg(value)?;
                self.assign(t, v)?;
                self.free_to(m);
                return Ok(());
            }
        }
        let v = self.expr_tmp_keep(value)?;
        for t in targets {
            self.assign(t, v)?;
        }
        Ok(())
    }

    fn binop_into(&mut self, op: BinOp, dst: Reg, l: Reg, value: &'a Expr, span: Span) -> CResult<()> {
        if matches!(op, BinOp::Add | BinOp::Sub) {
            if let Some(v) = small_int(value) {
                let v = if op == BinOp::Sub { v.checked_neg() } else { Some(v) };
                if let Some(v) = v {
                    self.emit_add_imm(dst, l, v, op == BinOp::Sub, span);
                    return Ok(());
                }
            }
        }
        let r = self.expr_reg(value)?;
        let ins = match op {
            BinOp::Add => Instr::Add { a: dst, b: l, c: r },
            BinOp::Sub => Instr::Sub { a: dst, b: l, c: r },
            BinOp::Mul => Instr::Mul { a: dst, b: l, c: r },
            op => Instr::Bin { op, a: dst, b: l, c: r },
        };
        self.emit_at(ins, span);
        Ok(())
    }

    /// `dst = l + v` as `AddI`; `from_sub` records that it stands for
    /// `l - (-v)` (a struct operand then gets `__sub__`).
    fn emit_add_imm(&mut self, dst: Reg, l: Reg, v: i16, from_sub: bool, span: Span) {
        if from_sub {
            let pc = self.here() as u32;
            self.f().sub_addi.push(pc);
        }
        self.emit_at(Instr::AddI { a: dst, b: l, v }, span);
    }

    /// The operation just emitted belongs to an augmented assignment.
    fn mark_inplace(&mut self) {
        let pc = self.f().instrs.len().saturating_sub(1) as u32;
        self.f().inplace.push(pc);
    }

    fn aug_assign(&mut self, target: &'a Expr, op: BinOp, value: &'a Expr, span: Span) -> CResult<()> {
        match &target.kind {
            ExprKind::Name(n) => {
                if self.resolve(n) == Binding::Local {
                    if let Some(r) = self.local_reg(n) {
                        self.check_bound(n, r, target.span)?;
                        return self.binop_into(op, r, r, value, span).map(|_| self.mark_inplace());
                    }
                }
                let t = self.alloc()?;
                self.load_name(n, t, target.span)?;
                self.binop_into(op, t, t, value, span)?;
                self.mark_inplace();
                self.store_name(n, t, target.span)
            }
            ExprKind::Attribute { value: obj, attr } => {
                let o = self.expr_reg(obj)?;
                let k = self.str_const16(&attr.name)?;
                let t = self.alloc()?;
                self.emit_at(Instr::GetAttr { a: t, b: o, k }, target.span);
                self.binop_into(op, t, t, value, span)?;
                self.mark_inplace();
                self.emit_at(Instr::SetAttr { a: o, k, c: t }, target.span);
                Ok(())
            }
            ExprKind::Index { value: obj, index } => {
                let o = self.expr_reg(obj)?;
                let i = self.expr_reg(index)?;
                let t = self.alloc()?;
                self.emit_at(Instr::GetIndex { a: t, b: o, c: i }, target.span);
                self.binop_into(op, t, t, value, span)?;
                self.mark_inplace();
                self.emit_at(Instr::SetIndex { a: o, b: i, c: t }, target.span);
                Ok(())
            }
            _ => Err(cerr(target.span, "cannot assign to this expression")),
        }
    }

    fn pop_loop(&mut self) -> (Vec<usize>, Vec<usize>) {
        match self.f().blocks.pop() {
            Some(Block::Loop { breaks, continues }) => (breaks, continues),
            _ => (Vec::new(), Vec::new()),
        }
    }

    /// Is `iter` a call of the prelude's `range` (so the loop can count in registers)?
    fn range_args(&mut self, iter: &'a Expr) -> Option<Vec<&'a Expr>> {
        match &iter.kind {
            ExprKind::Range { start, end } => Some(vec![start, end]),
            ExprKind::Call { func, args } => {
                let ExprKind::Name(n) = &func.kind else { return None };
                if n != "range" || self.resolve(n) != Binding::Global || args.is_empty() || args.len() > 3 {
                    return None;
                }
                let is_prelude_range =
                    matches!(self.env.resolve(n), GlobalRef::Const(Value::Native(f)) if &*f.name == "range");
                if !is_prelude_range {
                    return None;
                }
                let mut out = Vec::new();
                for a in args {
                    match a {
                        Arg::Positional(x) => out.push(x),
                        _ => return None,
                    }
                }
                Some(out)
            }
            _ => None,
        }
    }

    fn loop_target_reg(&mut self, target: &'a Expr) -> CResult<(Reg, bool)> {
        if let ExprKind::Name(n) = &target.kind {
            if self.resolve(n) == Binding::Local {
                if let Some(r) = self.local_reg(n) {
                    // Assigned before the body runs (which is all that can read it
                    // in the loop; after the loop it is not certain).
                    self.mark_defined(r);
                    return Ok((r, true));
                }
            }
        }
        Ok((self.alloc()?, false))
    }

    fn for_stmt(
        &mut self,
        target: &'a Expr,
        iter: &'a Expr,
        body: &'a [Stmt],
        orelse: &'a [Stmt],
        span: Span,
    ) -> CResult<()> {
        let entry = self.loop_entry_defs(body);
        if let Some(args) = self.range_args(iter) {
            let base = self.alloc_n(3)?;
            match args.as_slice() {
                [n] => {
                    self.emit(Instr::LoadInt { a: base, v: 0 });
                    self.expr_to(n, base + 1)?;
                    self.emit(Instr::LoadInt { a: base + 2, v: 1 });
                }
                [a, b] => {
                    self.expr_to(a, base)?;
                    self.expr_to(b, base + 1)?;
                    self.emit(Instr::LoadInt { a: base + 2, v: 1 });
                }
                [a, b, c] => {
                    self.expr_to(a, base)?;
                    self.expr_to(b, base + 1)?;
                    self.expr_to(c, base + 2)?;
                }
                _ => return Err(cerr(iter.span, "range() takes 1 to 3 arguments")),
            }
            let (dst, direct) = self.loop_target_reg(target)?;
            self.emit_at(Instr::ForRangePrep { a: base, b: dst }, iter.span);
            let exit = self.jmp_placeholder();
            let body_start = self.here();
            if !direct {
                self.assign(target, dst)?;
            }
            self.f().blocks.push(Block::Loop {
                breaks: Vec::new(),
                continues: Vec::new(),
            });
            self.block(body)?;
            let (breaks, continues) = self.pop_loop();
            self.patch_here(continues);
            self.emit_at(Instr::ForRangeLoop { a: base, b: dst }, span);
            self.emit(Instr::Jmp { t: body_start as u32 });
            self.patch_here(vec![exit]);
            self.loop_else(entry, orelse)?;
            self.patch_here(breaks);
            return Ok(());
        }
        let it = self.alloc_n(2)?;
        self.expr_to(iter, it)?;
        self.emit_at(Instr::ForPrep { a: it }, iter.span);
        let (dst, direct) = self.loop_target_reg(target)?;
        let top = self.here();
        self.emit_at(Instr::ForNext { a: it, b: dst }, iter.span);
        let exit = self.jmp_placeholder();
        if !direct {
            self.assign(target, dst)?;
        }
        self.f().blocks.push(Block::Loop {
            breaks: Vec::new(),
            continues: Vec::new(),
        });
        self.block(body)?;
        self.emit(Instr::Jmp { t: top as u32 });
        let (breaks, continues) = self.pop_loop();
        for c in continues {
            self.patch(c, top);
        }
        self.patch_here(vec![exit]);
        self.loop_else(entry, orelse)?;
        self.patch_here(breaks);
        Ok(())
    }

    /// `parallel for` (see `compile::parfor`): make the chunk function, run
    /// it with `ParFor`, then combine the reduction partials in worker order.
    fn par_for_stmt(
        &mut self,
        s: &'a Stmt,
        target: &'a Expr,
        iter: &'a Expr,
        body: &'a [Stmt],
        span: Span,
    ) -> CResult<()> {
        use super::parfor::{forbidden_exit, reductions, RedOp};
        if let Some((sp, what)) = forbidden_exit(body) {
            return Err(cerr(sp, format!("'{what}' cannot leave a parallel for loop")));
        }
        let sid = self
            .table
            .of_stmt(s)
            .ok_or_else(|| cerr(span, "internal: parallel for without a scope"))?;
        let reds = reductions(target, body);
        let red_names: Vec<String> = reds.iter().map(|r| r.name.clone()).collect();
        let m = u16::try_from(red_names.len()).map_err(|_| cerr(span, "too many reductions in one parallel for"))?;
        let a = self.alloc_n(4 + 2 * red_names.len())?;
        let range = match self.range_args(iter) {
            Some(args) => {
                match args.as_slice() {
                    [n] => {
                        self.emit(Instr::LoadInt { a: a + 1, v: 0 });
                        self.expr_to(n, a + 2)?;
                        self.emit(Instr::LoadInt { a: a + 3, v: 1 });
                    }
                    [x, y] => {
                        self.expr_to(x, a + 1)?;
                        self.expr_to(y, a + 2)?;
                        self.emit(Instr::LoadInt { a: a + 3, v: 1 });
                    }
                    [x, y, z] => {
                        self.expr_to(x, a + 1)?;
                        self.expr_to(y, a + 2)?;
                        self.expr_to(z, a + 3)?;
                    }
                    _ => return Err(cerr(iter.span, "range() takes 1 to 3 arguments")),
                }
                true
            }
            None => {
                self.expr_to(iter, a + 1)?;
                false
            }
        };
        for (j, r) in reds.iter().enumerate() {
            let first = a + 4 + 2 * j as u16;
            self.load_name(&r.name, first, span)?;
            match r.op {
                RedOp::Add => {
                    self.emit(Instr::LoadInt { a: first + 1, v: 0 });
                }
                RedOp::Mul => {
                    self.emit(Instr::LoadInt { a: first + 1, v: 1 });
                }
                RedOp::Call => {
                    self.emit(Instr::Move { a: first + 1, b: first });
                }
            }
        }
        self.make_function(
            sid,
            "<parallel for>",
            &NO_PARAMS,
            FnBody::ParChunk(target, body, range),
            a,
            span,
        )?;
        self.emit_at(Instr::ParFor { a, n: m, range }, span);
        if m == 0 {
            return Ok(());
        }
        // The first worker's partials become the variables' values ...
        let t = self.alloc_n(m as usize)?;
        self.emit(Instr::Unpack { a: t, b: a, n: m });
        for (j, r) in reds.iter().enumerate() {
            self.store_name(&r.name, t + j as u16, span)?;
        }
        // ... and every other worker's are combined into them, in order.
        let it = self.alloc_n(2)?;
        let p = self.alloc()?;
        self.emit(Instr::Move { a: it, b: a + 1 });
        self.emit(Instr::ForPrep { a: it });
        let top = self.here();
        self.emit(Instr::ForNext { a: it, b: p });
        let exit = self.jmp_placeholder();
        self.emit(Instr::Unpack { a: t, b: p, n: m });
        for (j, r) in reds.iter().enumerate() {
            let part = t + j as u16;
            let mk = self.mark();
            match r.op {
                RedOp::Add | RedOp::Mul => {
                    let x = self.alloc()?;
                    self.load_name(&r.name, x, span)?;
                    if r.op == RedOp::Add {
                        self.emit_at(Instr::Add { a: x, b: x, c: part }, span);
                    } else {
                        self.emit_at(Instr::Mul { a: x, b: x, c: part }, span);
                    }
                    self.store_name(&r.name, x, span)?;
                }
                RedOp::Call => {
                    let f = self.alloc_n(3)?;
                    let func = r
                        .func
                        .ok_or_else(|| cerr(span, "internal: reduction without a function"))?;
                    self.expr_to(func, f)?;
                    self.load_name(&r.name, f + 1, span)?;
                    self.emit(Instr::Move { a: f + 2, b: part });
                    self.emit_at(Instr::Call { a: f, n: 2 }, span);
                    self.store_name(&r.name, f, span)?;
                }
            }
            self.free_to(mk);
        }
        self.emit(Instr::Jmp { t: top as u32 });
        self.patch_here(vec![exit]);
        Ok(())
    }

    /// The body of a chunk function: parameters `.lo .hi .step .seq` (registers
    /// 0–3) and the reductions; runs the iterations, returns the partials.
    fn par_chunk_body(&mut self, target: &'a Expr, body: &'a [Stmt], range: bool) -> CResult<()> {
        let reds: Vec<String> = super::parfor::reductions(target, body)
            .into_iter()
            .map(|r| r.name)
            .collect();
        // Registers 0..3 hold lo, hi, step: the counting loop runs on them.
        let base: Reg = 0;
        let (dst, direct) = if range {
            self.loop_target_reg(target)?
        } else {
            (self.alloc()?, false)
        };
        self.emit(Instr::ForRangePrep { a: base, b: dst });
        let exit = self.jmp_placeholder();
        let body_start = self.here();
        if range {
            if !direct {
                self.assign(target, dst)?;
            }
        } else {
            let item = self.alloc()?;
            self.emit(Instr::GetIndex { a: item, b: 3, c: dst });
            self.assign(target, item)?;
        }
        self.f().blocks.push(Block::Loop {
            breaks: Vec::new(),
            continues: Vec::new(),
        });
        self.block(body)?;
        let (breaks, continues) = self.pop_loop();
        self.patch_here(continues);
        self.emit(Instr::ForRangeLoop { a: base, b: dst });
        self.emit(Instr::Jmp { t: body_start as u32 });
        self.patch_here(vec![exit]);
        self.patch_here(breaks);
        if reds.is_empty() {
            self.emit(Instr::ReturnNone);
            return Ok(());
        }
        let n = u16::try_from(reds.len()).map_err(|_| cerr(self.f().span, "too many reductions"))?;
        let t = self.alloc_n(reds.len())?;
        for (j, r) in reds.iter().enumerate() {
            let sp = self.f().span;
            self.load_name(r.as_str(), t + j as u16, sp)?;
        }
        let tup = self.alloc()?;
        self.emit(Instr::BuildTuple { a: tup, b: t, n });
        self.emit(Instr::Return { a: tup });
        Ok(())
    }

    /// Leave every block above `keep` (innermost first): pop handlers and
    /// run finally bodies, as `return`/`break`/`continue` must.
    fn unwind_blocks(&mut self, keep: usize) -> CResult<()> {
        let n = self.f().blocks.len();
        let mut i = n;
        while i > keep {
            i -= 1;
            let saved: Vec<Block<'a>> = self.f().blocks.drain(i..).collect();
            let res = match &saved[0] {
                Block::Loop { .. } => Ok(()),
                Block::Handler => {
                    self.emit(Instr::PopHandler);
                    Ok(())
                }
                Block::Finally(FinallyBody::Stmts(body)) => {
                    self.emit(Instr::PopHandler);
                    let body: &'a [Stmt] = body;
                    self.block(body)
                }
                Block::Finally(FinallyBody::WithExit(ctx)) => {
                    self.emit(Instr::PopHandler);
                    self.with_exit_call(*ctx, None)
                }
            };
            self.f().blocks.extend(saved);
            res?;
        }
        Ok(())
    }

    fn try_stmt(
        &mut self,
        body: &'a [Stmt],
        handlers: &'a [ExceptHandler],
        orelse: &'a [Stmt],
        finalbody: &'a [Stmt],
        span: Span,
    ) -> CResult<()> {
        let has_finally = !finalbody.is_empty();
        let fin_exc = self.alloc()?;
        let fin_site = if has_finally {
            self.f().blocks.push(Block::Finally(FinallyBody::Stmts(finalbody)));
            Some(self.emit_at(Instr::PushHandler { a: fin_exc, t: 0 }, span))
        } else {
            None
        };
        let exc = self.alloc()?;
        if handlers.is_empty() {
            self.block(body)?;
            self.block(orelse)?;
        } else {
            let h_site = self.emit(Instr::PushHandler { a: exc, t: 0 });
            self.f().blocks.push(Block::Handler);
            self.block(body)?;
            self.f().blocks.pop();
            self.emit(Instr::PopHandler);
            self.block(orelse)?;
            let done = self.jmp_placeholder();
            self.patch_here(vec![h_site]);
            let mut ends = vec![done];
            self.f().exc_regs.push(exc);
            for h in handlers {
                let m = self.mark();
                // A bare `except:` catches every error but the unwinding of `exit()`.
                let kr = match &h.kind {
                    Some(k) => self.expr_reg(k)?,
                    None => NO_REG,
                };
                let t = self.alloc()?;
                let kspan = h.kind.as_ref().map(|k| k.span).unwrap_or(h.span);
                self.emit_at(Instr::ExcMatch { a: t, b: exc, c: kr }, kspan);
                let next = self.emit(Instr::JmpIfNot { a: t, t: 0 });
                self.free_to(m);
                if let Some(n) = &h.name {
                    self.store_name(&n.name, exc, n.span)?;
                }
                self.block(&h.body)?;
                ends.push(self.jmp_placeholder());
                self.patch_here(vec![next]);
            }
            self.emit_at(Instr::Reraise { a: exc }, span);
            self.f().exc_regs.pop();
            self.patch_here(ends);
        }
        if let Some(site) = fin_site {
            self.f().blocks.pop();
            self.emit(Instr::PopHandler);
            self.block(finalbody)?;
            let end = self.jmp_placeholder();
            self.patch_here(vec![site]);
            self.f().exc_regs.push(fin_exc);
            self.block(finalbody)?;
            self.f().exc_regs.pop();
            self.emit_at(Instr::Reraise { a: fin_exc }, span);
            self.patch_here(vec![end]);
        }
        Ok(())
    }

    /// `ctx.__exit__(none, none, none)`, or with the error in `exc`; the result lands in a new temp.
    fn with_exit_call(&mut self, ctx: Reg, exc: Option<Reg>) -> CResult<()> {
        let m = self.mark();
        let f = self.alloc()?;
        let recv = self.alloc()?;
        self.emit(Instr::Move { a: recv, b: ctx });
        let args = self.alloc_n(3)?;
        match exc {
            Some(e) => {
                let k = self.str_const16("kind")?;
                self.emit(Instr::GetAttr { a: args, b: e, k });
                self.emit(Instr::Move { a: args + 1, b: e });
            }
            None => {
                self.emit(Instr::LoadNone { a: args });
                self.emit(Instr::LoadNone { a: args + 1 });
            }
        }
        self.emit(Instr::LoadNone { a: args + 2 });
        let k = self.str_const16("__exit__")?;
        self.emit(Instr::CallMethod { a: f, k, n: 3 });
        if exc.is_some() {
            // Suppress the error when __exit__ returns a true value.
            self.f().top = f + 1;
            return Ok(());
        }
        self.free_to(m);
        Ok(())
    }

    fn with_stmt(&mut self, items: &'a [WithItem], body: &'a [Stmt], span: Span) -> CResult<()> {
        let Some((first, rest)) = items.split_first() else {
            return self.block(body);
        };
        let ctx = self.alloc()?;
        self.expr_to(&first.context, ctx)?;
        {
            let m = self.mark();
            let f = self.alloc()?;
            let recv = self.alloc()?;
            self.emit(Instr::Move { a: recv, b: ctx });
            let k = self.str_const16("__enter__")?;
            self.emit_at(Instr::CallMethod { a: f, k, n: 0 }, first.context.span);
            if let Some(t) = &first.target {
                self.assign(t, f)?;
            }
            self.free_to(m);
        }
        let exc = self.alloc()?;
        let site = self.emit(Instr::PushHandler { a: exc, t: 0 });
        self.f().blocks.push(Block::Finally(FinallyBody::WithExit(ctx)));
        if rest.is_empty() {
            self.block(body)?;
        } else {
            self.with_stmt(rest, body, span)?;
        }
        self.f().blocks.pop();
        self.emit(Instr::PopHandler);
        self.with_exit_call(ctx, None)?;
        let end = self.jmp_placeholder();
        self.patch_here(vec![site]);
        let m = self.mark();
        self.with_exit_call(ctx, Some(exc))?;
        let res = m; // the result register of the exit call
        let j = self.emit(Instr::JmpIf { a: res, t: 0 });
        self.free_to(m);
        self.emit_at(Instr::Reraise { a: exc }, span);
        self.patch_here(vec![end, j]);
        Ok(())
    }

    // ----------------------------------------------------- functions, structs

    /// Evaluate a def (decorators, defaults, the function, decorator calls) into a new temp.
    fn def_value(&mut self, fd: &'a FuncDef) -> CResult<Reg> {
        let mut decos = Vec::new();
        for d in &fd.decorators {
            decos.push(self.expr_tmp_keep(d)?);
        }
        let sid = self
            .table
            .of_func(fd)
            .ok_or_else(|| cerr(fd.span, "internal: function without scope"))?;
        let f = self.alloc()?;
        self.make_function(sid, &fd.name.name, &fd.params, FnBody::Stmts(&fd.body), f, fd.span)?;
        self.apply_decorators(decos, f, fd.span)
    }

    fn apply_decorators(&mut self, decos: Vec<Reg>, mut f: Reg, span: Span) -> CResult<Reg> {
        for d in decos.into_iter().rev() {
            let c = self.alloc()?;
            self.emit(Instr::Move { a: c, b: d });
            let a = self.alloc()?;
            self.emit(Instr::Move { a, b: f });
            self.emit_at(Instr::Call { a: c, n: 1 }, span);
            self.f().top = c + 1;
            f = c;
        }
        Ok(f)
    }

    fn struct_def(&mut self, sd: &'a StructDef) -> CResult<()> {
        let mut decos = Vec::new();
        for d in &sd.decorators {
            decos.push(self.expr_tmp_keep(d)?);
        }
        let dst = self.alloc()?;
        let ndef = sd.fields.iter().filter(|f| f.default.is_some()).count();
        let nbase = usize::from(sd.base.is_some());
        let b = self.alloc_n(ndef + sd.methods.len() + nbase)?;
        let mut i = 0u16;
        for fld in &sd.fields {
            if let Some(d) = &fld.default {
                self.expr_to(d, b + i)?;
                i += 1;
            }
        }
        let mut kinds = Vec::with_capacity(sd.methods.len());
        for m in &sd.methods {
            let mut mdecos = Vec::new();
            let mut kind = MethodKind::Plain;
            for d in &m.decorators {
                match &d.kind {
                    ExprKind::Name(n) if n == "staticmethod" && self.resolve(n) == Binding::Global => {
                        kind = MethodKind::Static
                    }
                    ExprKind::Name(n) if n == "property" && self.resolve(n) == Binding::Global => {
                        kind = MethodKind::Property
                    }
                    _ => mdecos.push(self.expr_tmp_keep(d)?),
                }
            }
            kinds.push(kind);
            let sid = self
                .table
                .of_func(m)
                .ok_or_else(|| cerr(m.span, "internal: method without scope"))?;
            let t = self.alloc()?;
            let self_name = m.params.params.first().map(|p| p.name.name.clone());
            self.next_method = match (kind, self_name) {
                (MethodKind::Static, _) | (_, None) => None,
                (_, Some(s)) => Some((sd.name.name.clone(), s)),
            };
            let made = self.make_function(sid, &m.name.name, &m.params, FnBody::Stmts(&m.body), t, m.span);
            self.next_method = None;
            made?;
            let r = self.apply_decorators(mdecos, t, m.span)?;
            self.emit(Instr::Move { a: b + i, b: r });
            self.free_to(b + (ndef + sd.methods.len() + nbase) as u16);
            i += 1;
        }
        if let Some(base) = &sd.base {
            self.expr_to(base, b + i)?;
        }
        let proto = StructProto {
            name: sd.name.name.clone(),
            fields: sd.fields.iter().map(|f| Arc::from(f.name.name.as_str())).collect(),
            has_default: sd.fields.iter().map(|f| f.default.is_some()).collect(),
            annotations: sd
                .fields
                .iter()
                .map(|f| f.annotation.as_ref().map(annotation_text))
                .collect(),
            methods: sd.methods.iter().map(|m| Arc::from(m.name.name.as_str())).collect(),
            method_kinds: kinds.into_boxed_slice(),
            has_base: sd.base.is_some(),
        };
        let p = self.f().structs.len();
        let p = u16::try_from(p).map_err(|_| cerr(sd.span, "too many structs in one body"))?;
        self.f().structs.push(Arc::new(proto));
        let base_span = sd.base.as_ref().map(|b| b.span).unwrap_or(sd.span);
        self.emit_at(Instr::MakeStruct { a: dst, p, b }, base_span);
        // Without decorators the name is bound first, so constants may use
        // the struct (`ZERO = Vec(0.0, 0.0)` inside `struct Vec`).
        let plain = decos.is_empty();
        if plain {
            self.store_name(&sd.name.name, dst, sd.name.span)?;
        }
        // Constants run after the struct exists, in order.
        for c in &sd.consts {
            let m = self.mark();
            let v = self.expr_reg(&c.value)?;
            let k = self.str_const16(&c.name.name)?;
            self.emit_at(Instr::StructConst { a: dst, k, c: v }, c.span);
            self.free_to(m);
        }
        if plain {
            return Ok(());
        }
        let r = self.apply_decorators(decos, dst, sd.span)?;
        self.store_name(&sd.name.name, r, sd.name.span)
    }

    /// `super()` inside a method: `super_of(self, "Struct")`.
    fn super_call(&mut self, dst: Reg, span: Span) -> CResult<()> {
        let ctx = self.fs.iter().rev().find_map(|f| f.method_of.clone());
        let Some((sname, self_name)) = ctx else {
            return Err(Box::new(
                Diagnostic::new(ErrorKind::SyntaxError, "super() is only valid inside a method of a struct")
                    .at(span)
                    .help("call the parent's method through super() from a method with 'self', or name the parent: 'Parent.method(self, …)'"),
            ));
        };
        let m = self.mark();
        let a = self.alloc()?;
        let k = self.konst(crate::vm::structs::super_native())?;
        self.emit(Instr::LoadK { a, k });
        let s = self.alloc()?;
        self.load_name(&self_name, s, span)?;
        let n = self.alloc()?;
        let kn = self.konst(Value::str(sname))?;
        self.emit(Instr::LoadK { a: n, k: kn });
        self.emit_at(Instr::Call { a, n: 2 }, span);
        self.emit(Instr::Move { a: dst, b: a });
        self.free_to(m);
        Ok(())
    }

    fn make_function(
        &mut self,
        sid: ScopeId,
        name: &str,
        params: &'a Params,
        body: FnBody<'a>,
        dst: Reg,
        span: Span,
    ) -> CResult<()> {
        // Defaults are evaluated now, in the defining scope.
        let mut seen_default = false;
        for p in &params.params {
            if p.default.is_some() {
                seen_default = true;
            } else if seen_default {
                return Err(cerr(
                    p.span,
                    format!(
                        "parameter '{}' without a default follows a parameter with one",
                        p.name.name
                    ),
                ));
            }
        }
        let defaults: Vec<&Expr> = params
            .params
            .iter()
            .filter_map(|p| p.default.as_ref())
            .chain(params.kwonly.iter().filter_map(|p| p.default.as_ref()))
            .collect();
        let b = self.alloc_n(defaults.len())?;
        for (i, d) in defaults.iter().enumerate() {
            self.expr_to(d, b + i as u16)?;
        }
        let proto = self.compile_function(sid, name, params, body, span)?;
        let p = self.f().protos.len();
        let p = u16::try_from(p).map_err(|_| cerr(span, "too many functions in one body"))?;
        self.f().protos.push(proto);
        self.emit_at(Instr::MakeFunc { a: dst, p, b }, span);
        Ok(())
    }

    fn compile_function(
        &mut self,
        sid: ScopeId,
        name: &str,
        params: &'a Params,
        body: FnBody<'a>,
        span: Span,
    ) -> CResult<Arc<FuncProto>> {
        let table = self.table;
        let scope = table.scope(sid);
        let mut st = FnState::new(sid, name.into(), span, false);
        st.method_of = self.next_method.take();
        // Registers: parameters first (in scope order), then the other plain locals.
        for (i, p) in scope.params.iter().enumerate() {
            st.locals.insert(p.clone(), i as u16);
        }
        let mut next = scope.params.len() as u16;
        for (n, captured) in &scope.locals {
            if st.locals.contains_key(n) || *captured {
                continue;
            }
            st.locals.insert(n.clone(), next);
            next += 1;
        }
        if next >= 60000 {
            return Err(cerr(span, "function too large: too many local variables"));
        }
        st.top = next;
        st.max = next;
        let nparams = scope.params.len();
        st.defined = (0..next as usize).map(|i| i < nparams).collect();
        self.fs.push(st);
        // Prologue: move captured parameters into cells; make the other cells.
        for (c, n) in scope.cells.iter().enumerate() {
            let a = match scope.params.iter().position(|p| p == n) {
                Some(i) => i as u16,
                None => NO_REG,
            };
            self.emit(Instr::MakeCell { a, c: c as u16 });
        }
        let r = match body {
            FnBody::Stmts(b) => self.block(b).map(|_| {
                self.emit(Instr::ReturnNone);
            }),
            FnBody::Expr(e) => {
                self.f().span = e.span;
                self.expr_reg(e).map(|r| {
                    self.emit(Instr::Return { a: r });
                })
            }
            FnBody::Comp(e) => self.comprehension_body(e),
            FnBody::ParChunk(target, body, range) => self.par_chunk_body(target, body, range),
        };
        let st = self
            .fs
            .pop()
            .ok_or_else(|| cerr(span, "internal: compiler state lost"))?;
        r?;
        let names = (
            scope.cells.iter().map(|n| Arc::from(n.as_str())).collect(),
            scope.frees.iter().map(|n| Arc::from(n.as_str())).collect(),
        );
        let code = st.finish(scope.cells.len() as u16, nparams as u16, names);
        // Where each captured name comes from in the defining scope.
        let parent = self.f().scope;
        let mut captures = Vec::new();
        for n in &scope.frees {
            match table.resolve(parent, n) {
                Binding::Cell(c) => captures.push(Capture::Cell(c)),
                Binding::Free(c) => captures.push(Capture::Free(c)),
                _ => return Err(cerr(span, format!("internal: cannot capture '{n}'"))),
            }
        }
        let mut checks = Vec::new();
        let all: Vec<&Param> = params
            .params
            .iter()
            .chain(params.vararg.iter())
            .chain(params.kwonly.iter())
            .chain(params.kwarg.iter())
            .collect();
        for (i, p) in all.iter().enumerate() {
            let is_plain = i < params.params.len()
                || (i >= params.params.len() + params.vararg.is_some() as usize
                    && i < params.params.len() + params.vararg.is_some() as usize + params.kwonly.len());
            if !is_plain {
                continue;
            }
            if let Some(ExprKind::Name(t)) = p.annotation.as_ref().map(|a| &a.kind) {
                if let Some(tc) = TypeCheck::from_name(t) {
                    checks.push((i as u16, tc));
                }
            }
            // `Tensor[N, bf16]` and the other tensor forms (tensor/annot.rs).
            if let Some(tc) = p.annotation.as_ref().and_then(crate::tensor::annot::type_check_of) {
                checks.push((i as u16, tc));
            }
        }
        let simple = params.vararg.is_none()
            && params.kwonly.is_empty()
            && params.kwarg.is_none()
            && checks.is_empty()
            && !scope.generator;
        Ok(Arc::new(FuncProto {
            name: name.into(),
            code,
            nparams: if matches!(body, FnBody::ParChunk(..)) {
                scope.params.len() as u16
            } else {
                params.params.len() as u16 + matches!(body, FnBody::Comp(_)) as u16
            },
            has_vararg: params.vararg.is_some(),
            nkwonly: params.kwonly.len() as u16,
            has_kwarg: params.kwarg.is_some(),
            param_names: scope.params.iter().map(|p| Arc::from(p.as_str())).collect(),
            ndefaults: params.params.iter().filter(|p| p.default.is_some()).count() as u16,
            kwonly_has_default: params.kwonly.iter().map(|p| p.default.is_some()).collect(),
            captures: captures.into_boxed_slice(),
            checks: checks.into_boxed_slice(),
            simple,
            generator: scope.generator,
        }))
    }

    fn comprehension_body(&mut self, e: &'a Expr) -> CResult<()> {
        let (gens, is_dict) = match &e.kind {
            ExprKind::ListComp { generators, .. } => (generators, false),
            ExprKind::DictComp { generators, .. } => (generators, true),
            ExprKind::SetComp { generators, .. } => (generators, false),
            ExprKind::GenExp { generators, .. } => {
                // A generator expression yields each element; `acc` is unused.
                let acc = self.alloc()?;
                self.comp_level(e, generators, 0, acc)?;
                self.emit(Instr::ReturnNone);
                return Ok(());
            }
            _ => return Err(cerr(e.span, "internal: not a comprehension")),
        };
        let acc = self.alloc()?;
        if is_dict {
            self.emit(Instr::BuildDict { a: acc, b: acc, n: 0 });
        } else if matches!(e.kind, ExprKind::SetComp { .. }) {
            self.emit(Instr::BuildSet { a: acc, b: acc, n: 0 });
        } else {
            self.emit(Instr::BuildList { a: acc, b: acc, n: 0 });
        }
        self.comp_level(e, gens, 0, acc)?;
        self.emit(Instr::Return { a: acc });
        Ok(())
    }

    fn comp_level(&mut self, e: &'a Expr, gens: &'a [Comprehension], i: usize, acc: Reg) -> CResult<()> {
        let Some(g) = gens.get(i) else {
            let m = self.mark();
            match &e.kind {
                ExprKind::ListComp { elt, .. } => {
                    let v = self.expr_reg(elt)?;
                    self.emit(Instr::ListAppend { a: acc, b: v });
                }
                ExprKind::DictComp { key, value, .. } => {
                    let k = self.expr_reg(key)?;
                    let v = self.expr_reg(value)?;
                    self.emit_at(Instr::DictSet { a: acc, b: k, c: v }, key.span);
                }
                ExprKind::SetComp { elt, .. } => {
                    let v = self.expr_reg(elt)?;
                    self.emit_at(Instr::SetAdd { a: acc, b: v }, elt.span);
                }
                ExprKind::GenExp { elt, .. } => {
                    let v = self.expr_reg(elt)?;
                    self.emit_at(Instr::Yield { a: v, b: acc }, elt.span);
                }
                _ => {}
            }
            self.free_to(m);
            return Ok(());
        };
        let m = self.mark();
        let it = self.alloc_n(2)?;
        if i == 0 {
            self.emit(Instr::Move { a: it, b: 0 });
        } else {
            self.expr_to(&g.iter, it)?;
        }
        self.emit_at(Instr::ForPrep { a: it }, g.iter.span);
        let (dst, direct) = self.loop_target_reg(&g.target)?;
        let top = self.here();
        self.emit_at(Instr::ForNext { a: it, b: dst }, g.iter.span);
        let exit = self.jmp_placeholder();
        if !direct {
            self.assign(&g.target, dst)?;
        }
        let mut skips = Vec::new();
        for c in &g.ifs {
            skips.extend(self.cond_jump(c, false)?);
        }
        self.comp_level(e, gens, i + 1, acc)?;
        for s in skips {
            self.patch(s, top);
        }
        self.emit(Instr::Jmp { t: top as u32 });
        self.patch_here(vec![exit]);
        self.free_to(m);
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum FnBody<'a> {
    Stmts(&'a [Stmt]),
    Expr(&'a Expr),
    Comp(&'a Expr),
    /// The outlined body of a `parallel for` (target, body, range form, reductions).
    ParChunk(&'a Expr, &'a [Stmt], bool),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::scope::analyze;
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
            Ok(p) => p.code.protos[i].code.clone(),
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
        // `a is none` loads `none` into a register first: nothing is early.
        let code = func("def f(a, b):\n    if a is none:\n        return b\n    return a\n", 0);
        assert_eq!(early_returns(&code), vec![], "{code:?}");
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
            Ok(p) => p.code.protos[0].clone(),
            Err(e) => panic!("{e:?}"),
        };
        assert!(p.generator && !p.simple);
        assert!(early_returns(&p.code).is_empty(), "{:?}", p.code);
        assert!(p.code.instrs.iter().any(|i| matches!(i, Instr::Yield { .. })));
        // A generator expression is a generator function of its own.
        let p = match compile("g = (x for x in [1])\n") {
            Ok(p) => p.code.protos[0].clone(),
            Err(e) => panic!("{e:?}"),
        };
        assert!(p.generator && &*p.name == "<genexpr>");
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
    fn captured_parameters_move_into_cells() {
        let code = func("def f(p):\n    return lambda: p\n", 0);
        assert!(matches!(code.instrs[0], Instr::MakeCell { a: 0, c: 0 }), "{code:?}");
        assert_eq!(code.ncells, 1);
        assert_eq!(code.protos[0].captures.as_ref(), &[Capture::Cell(0)]);
    }
}
