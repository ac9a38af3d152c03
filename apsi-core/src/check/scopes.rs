//! Scope analysis (Python's rules), run once per unit at check time
//! (`check::load`, stored in `Unit::scopes`); the compiler and every back
//! end use its table.
//!
//! A name assigned anywhere in a function body is local to that function
//! unless the body declares it `global` or `nonlocal`. A local that an inner
//! function (def, lambda or comprehension) uses becomes a *cell*; the inner
//! function — and every function between the two — captures it as *free*.
//! Module-level names are globals. Lambdas and comprehensions are scopes of
//! their own (a comprehension's loop variables never leak).
//!
//! Scopes are keyed by the address of their syntax node (`FuncDef`, or the
//! `Expr` of a lambda/comprehension), so the tree must not move between this
//! pass and its users.

use crate::diagnostic::{Diagnostic, Span};
use crate::error::ErrorKind;
use crate::syntax::ast::*;
use indexmap::{IndexMap, IndexSet};
use std::collections::{HashMap, HashSet};

pub type ScopeId = usize;

/// The name of the scope of a `parallel for` body.
pub const PARALLEL_BODY: &str = "<parallel for>";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeKind {
    Module,
    Function,
    Lambda,
    Comprehension,
}

/// How a name is reached from one scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// A register of the frame.
    Local,
    /// The frame's own cell number `n` (a local some inner function captures).
    Cell(u16),
    /// The closure's captured cell number `n`.
    Free(u16),
    /// A module-level (or prelude) name.
    Global,
}

#[derive(Debug)]
pub struct Scope {
    pub kind: ScopeKind,
    pub name: String,
    pub parent: Option<ScopeId>,
    /// Parameter names in register order (positional, *args, kw-only, **kwargs).
    pub params: Vec<String>,
    /// Local names (params first) → captured by an inner scope?
    pub locals: IndexMap<String, bool>,
    pub declared_global: HashSet<String>,
    pub declared_nonlocal: HashSet<String>,
    /// Where each `nonlocal` name was declared (for errors).
    nonlocal_spans: HashMap<String, Span>,
    /// Names captured from enclosing functions, in cell order.
    pub frees: IndexSet<String>,
    /// Names this scope reads or writes that are not its locals.
    used: IndexSet<String>,
    /// Own cells in order (filled by `finish`).
    pub cells: Vec<String>,
    /// A generator: a `def` whose body (not nested functions) holds
    /// `yield`, or a generator expression.
    pub generator: bool,
    /// What the statements of this scope bind, name by name, whatever
    /// `global`/`nonlocal` says (the checker reads the declarations first).
    /// At module level this also holds every name some function declares
    /// `global`. The checker's name and call checks read it.
    pub bound: IndexMap<String, Bound>,
    /// The `use` statements standing in this scope (their spans).
    pub uses: Vec<Span>,
}

/// How the statements of one scope bind a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// How many statements (or parameters) bind it.
    pub count: u32,
    /// What the first of them is.
    pub first: Binder,
    /// Whether one of them is a `use`.
    pub by_use: bool,
}

impl Bound {
    /// What binds the name when exactly one statement does.
    pub fn sole(&self) -> Option<Binder> {
        (self.count == 1).then_some(self.first)
    }
}

/// A statement that binds a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binder {
    /// An assignment, a parameter, a loop or `with`/`except` target, `del`,
    /// a `global` declaration, or a decorated `def`/`struct`.
    Plain,
    /// An undecorated `def`: the address of its `FuncDef` (see `check::defs`).
    Func(usize),
    /// An undecorated `struct`: the address of its `StructDef`.
    Struct(usize),
    /// A `use` statement, by its span.
    Use(Span),
}

impl Scope {
    fn new(kind: ScopeKind, name: &str, parent: Option<ScopeId>) -> Scope {
        Scope {
            kind,
            name: name.to_string(),
            parent,
            params: Vec::new(),
            locals: IndexMap::new(),
            declared_global: HashSet::new(),
            declared_nonlocal: HashSet::new(),
            nonlocal_spans: HashMap::new(),
            frees: IndexSet::new(),
            used: IndexSet::new(),
            cells: Vec::new(),
            generator: false,
            bound: IndexMap::new(),
            uses: Vec::new(),
        }
    }
}

/// The result of the analysis of one module (or one REPL snippet).
#[derive(Debug)]
pub struct ScopeTable {
    pub scopes: Vec<Scope>,
    by_node: HashMap<usize, ScopeId>,
    /// Every name bound at module level (including `global` declarations in functions).
    pub module_names: IndexSet<String>,
    /// Module-level names bound exactly once, by a top-level `def`, `struct` or `use`.
    pub module_once: HashSet<String>,
    pub errors: Vec<Diagnostic>,
}

impl ScopeTable {
    pub const MODULE: ScopeId = 0;

    pub fn scope(&self, id: ScopeId) -> &Scope {
        &self.scopes[id]
    }

    /// The scope of a `def` (or struct method).
    pub fn of_func(&self, f: &FuncDef) -> Option<ScopeId> {
        self.by_node.get(&(f as *const FuncDef as usize)).copied()
    }

    /// The scope of the outlined body of a `parallel for` statement.
    pub fn of_stmt(&self, s: &Stmt) -> Option<ScopeId> {
        self.by_node.get(&(s as *const Stmt as usize)).copied()
    }

    /// The scope of a lambda or comprehension expression.
    pub fn of_expr(&self, e: &Expr) -> Option<ScopeId> {
        self.by_node.get(&(e as *const Expr as usize)).copied()
    }

    pub fn resolve(&self, id: ScopeId, name: &str) -> Binding {
        let s = &self.scopes[id];
        if s.kind == ScopeKind::Module || s.declared_global.contains(name) {
            return Binding::Global;
        }
        if let Some(&captured) = s.locals.get(name) {
            if captured {
                let i = s.cells.iter().position(|c| c == name).unwrap_or(0);
                return Binding::Cell(i as u16);
            }
            return Binding::Local;
        }
        if let Some(i) = s.frees.get_index_of(name) {
            return Binding::Free(i as u16);
        }
        Binding::Global
    }

    /// The names a file module exports (the VM binds the same ones
    /// unqualified): everything its top level binds, and every name its
    /// functions declare `global`, except names a `use` binds and names
    /// starting with `_`. Sorted.
    pub fn exports(&self) -> Vec<String> {
        let mut names: Vec<String> = self.scopes[Self::MODULE]
            .bound
            .iter()
            .filter(|(name, b)| !name.starts_with('_') && !b.by_use)
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names
    }
}

/// Analyse a module's scopes. `top_level_binds` are names bound before the
/// body runs (the module's `use` bindings).
pub fn analyze(module: &Module, top_level_binds: &[String]) -> ScopeTable {
    let mut a = Analyzer {
        t: ScopeTable {
            scopes: vec![Scope::new(ScopeKind::Module, "<module>", None)],
            by_node: HashMap::new(),
            module_names: IndexSet::new(),
            module_once: HashSet::new(),
            errors: Vec::new(),
        },
        counts: HashMap::new(),
        cur: 0,
        method_self: Vec::new(),
        depth: 0,
    };
    for n in top_level_binds {
        a.bind_module(n, true);
    }
    a.stmts(&module.body);
    a.finish();
    a.t
}

struct Analyzer {
    t: ScopeTable,
    /// Module-level binding counts: (count, all were once-able).
    counts: HashMap<String, (u32, bool)>,
    cur: ScopeId,
    /// Nesting of compound statements at module level (0: directly at top level).
    depth: u32,
    /// The first parameter of each enclosing struct method (innermost
    /// last): `super()` reads it, also from a closure inside the method.
    method_self: Vec<String>,
}

impl Analyzer {
    fn bind_module(&mut self, name: &str, onceable: bool) {
        self.t.module_names.insert(name.to_string());
        let e = self.counts.entry(name.to_string()).or_insert((0, true));
        e.0 += 1;
        e.1 &= onceable;
    }

    fn bind(&mut self, name: &str) {
        self.bind_kind(name, Binder::Plain, false)
    }

    /// Records that a statement of scope `id` binds `name`.
    fn note(&mut self, id: ScopeId, name: &str, binder: Binder) {
        let by_use = matches!(binder, Binder::Use(_));
        let b = self.t.scopes[id].bound.entry(name.to_string()).or_insert(Bound {
            count: 0,
            first: binder,
            by_use: false,
        });
        b.count = b.count.saturating_add(1);
        b.by_use |= by_use;
    }

    /// `onceable`: a `def`/`struct` statement or a plain `name = value`
    /// (write-once at top level, outside compound statements, when it is the
    /// name's only binding in the module).
    fn bind_kind(&mut self, name: &str, binder: Binder, onceable: bool) {
        let cur = self.cur;
        self.note(cur, name, binder);
        let s = &mut self.t.scopes[cur];
        if s.kind == ScopeKind::Module {
            let once = onceable && self.depth == 0;
            self.bind_module(name, once);
        } else if s.declared_global.contains(name) {
            self.bind_module(name, false);
        } else if s.declared_nonlocal.contains(name) {
            s.used.insert(name.to_string());
        } else if !s.locals.contains_key(name) {
            s.locals.insert(name.to_string(), false);
        }
    }

    fn use_name(&mut self, name: &str) {
        let s = &mut self.t.scopes[self.cur];
        if !s.locals.contains_key(name) {
            s.used.insert(name.to_string());
        }
    }

    fn push_scope(&mut self, kind: ScopeKind, name: &str, key: usize) -> ScopeId {
        let id = self.t.scopes.len();
        self.t.scopes.push(Scope::new(kind, name, Some(self.cur)));
        self.t.by_node.insert(key, id);
        id
    }

    fn stmts(&mut self, body: &[Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }

    fn nested(&mut self, body: &[Stmt]) {
        self.depth += 1;
        self.stmts(body);
        self.depth -= 1;
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::Assign { targets, value } => {
                self.expr(value);
                for t in targets {
                    // `N = 100`, `Collection = list` at the top of a module:
                    // write-once when it is the name's only binding.
                    match &t.kind {
                        ExprKind::Name(n) => self.bind_kind(n, Binder::Plain, true),
                        _ => self.target(t),
                    }
                }
            }
            StmtKind::AugAssign { target, value, .. } => {
                self.expr(value);
                if let ExprKind::Name(n) = &target.kind {
                    self.use_name(n);
                }
                self.target(target);
            }
            StmtKind::AnnAssign {
                target,
                annotation,
                value,
            } => {
                self.expr(annotation);
                if let Some(v) = value {
                    self.expr(v);
                }
                self.target(target);
            }
            StmtKind::If { test, body, orelse } => {
                self.expr(test);
                self.nested(body);
                self.nested(orelse);
            }
            StmtKind::While { test, body, orelse } => {
                self.expr(test);
                self.nested(body);
                self.nested(orelse);
            }
            StmtKind::For {
                target,
                iter,
                body,
                parallel: true,
                orelse,
            } => {
                self.parallel_for(s, target, iter, body);
                self.nested(orelse);
            }
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
                ..
            } => {
                self.expr(iter);
                self.target(target);
                self.nested(body);
                self.nested(orelse);
            }
            // `del x` binds `x` as an assignment does (Python's scoping).
            StmtKind::Del(targets) => {
                for t in targets {
                    self.target(t);
                }
            }
            StmtKind::Break | StmtKind::Continue | StmtKind::Pass | StmtKind::Error => {}
            StmtKind::Return(v) => {
                if let Some(v) = v {
                    self.expr(v)
                }
            }
            StmtKind::FuncDef(f) => {
                for d in &f.decorators {
                    self.expr(d);
                }
                self.func(f);
                let binder = if f.decorators.is_empty() {
                    Binder::Func(&**f as *const FuncDef as usize)
                } else {
                    Binder::Plain
                };
                self.bind_kind(&f.name.name, binder, true);
            }
            StmtKind::StructDef(sd) => {
                for d in &sd.decorators {
                    self.expr(d);
                }
                if let Some(b) = &sd.base {
                    self.expr(b);
                }
                for c in &sd.consts {
                    self.expr(&c.value);
                }
                for fld in &sd.fields {
                    if let Some(d) = &fld.default {
                        self.expr(d);
                    }
                }
                for m in &sd.methods {
                    for d in &m.decorators {
                        self.expr(d);
                    }
                    let this = m.params.params.first().map(|p| p.name.name.clone()).unwrap_or_default();
                    self.method_self.push(this);
                    self.func(m);
                    self.method_self.pop();
                }
                let binder = if sd.decorators.is_empty() {
                    Binder::Struct(&**sd as *const StructDef as usize)
                } else {
                    Binder::Plain
                };
                self.bind_kind(&sd.name.name, binder, true);
            }
            StmtKind::Use { path, alias } => {
                // The module-level `use` bindings are passed in by the caller;
                // inside a function the statement binds a local.
                let cur = self.cur;
                self.t.scopes[cur].uses.push(s.span);
                if let Some(n) = alias.as_ref().or(path.last()) {
                    if self.t.scopes[cur].kind == ScopeKind::Module {
                        self.note(cur, &n.name, Binder::Use(s.span));
                    } else {
                        self.bind_kind(&n.name, Binder::Use(s.span), false);
                    }
                }
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                self.nested(body);
                for h in handlers {
                    if let Some(k) = &h.kind {
                        self.expr(k);
                    }
                    if let Some(n) = &h.name {
                        self.bind(&n.name);
                    }
                    self.nested(&h.body);
                }
                self.nested(orelse);
                self.nested(finalbody);
            }
            StmtKind::Raise(e) => {
                if let Some(e) = e {
                    self.expr(e)
                }
            }
            StmtKind::Assert { test, msg } => {
                self.expr(test);
                if let Some(m) = msg {
                    self.expr(m);
                }
            }
            StmtKind::With { items, body } => {
                for it in items {
                    self.expr(&it.context);
                    if let Some(t) = &it.target {
                        self.target(t);
                    }
                }
                self.nested(body);
            }
            StmtKind::Global(names) => {
                for n in names {
                    if self.t.scopes[self.cur].kind == ScopeKind::Module {
                        continue;
                    }
                    // Declared before the body is walked (see `func`); make sure
                    // the module knows the name.
                    self.t.module_names.insert(n.name.clone());
                    self.note(ScopeTable::MODULE, &n.name, Binder::Plain);
                    self.counts.entry(n.name.clone()).or_insert((0, false)).1 = false;
                }
            }
            StmtKind::Nonlocal(_) => {}
        }
    }

    /// `parallel for`: the body is a function scope of its own (see
    /// `check::parfor`). The enclosing scope reads and (when combining)
    /// writes the reduction variables; `global`/`nonlocal` declarations of
    /// the enclosing function hold inside the body too.
    fn parallel_for(&mut self, s: &Stmt, target: &Expr, iter: &Expr, body: &[Stmt]) {
        self.expr(iter);
        let reds = super::parfor::reductions(target, body);
        for r in &reds {
            self.use_name(&r.name);
            self.bind(&r.name);
            if let Some(f) = r.func {
                self.expr(f);
            }
        }
        let outer = self.cur;
        let id = self.push_scope(ScopeKind::Function, PARALLEL_BODY, s as *const Stmt as usize);
        let saved = (self.cur, self.depth);
        self.cur = id;
        self.depth = 1;
        let (g, nl): (Vec<String>, Vec<String>) = {
            let o = &self.t.scopes[outer];
            let keep = |n: &&String| !reds.iter().any(|r| &r.name == *n);
            (
                o.declared_global.iter().filter(keep).cloned().collect(),
                o.declared_nonlocal.iter().filter(keep).cloned().collect(),
            )
        };
        {
            let sc = &mut self.t.scopes[id];
            for p in super::parfor::FIXED_PARAMS
                .iter()
                .map(|p| p.to_string())
                .chain(reds.iter().map(|r| r.name.clone()))
            {
                sc.params.push(p.clone());
                sc.locals.insert(p, false);
            }
            sc.declared_global.extend(g);
            for n in nl {
                sc.used.insert(n.clone());
                sc.declared_nonlocal.insert(n);
            }
        }
        for p in super::parfor::FIXED_PARAMS
            .iter()
            .copied()
            .chain(reds.iter().map(|r| r.name.as_str()))
        {
            self.note(id, p, Binder::Plain);
        }
        self.target(target);
        self.stmts(body);
        (self.cur, self.depth) = saved;
    }

    fn target(&mut self, t: &Expr) {
        match &t.kind {
            ExprKind::Name(n) => self.bind(n),
            ExprKind::Tuple(xs) | ExprKind::List(xs) => {
                for x in xs {
                    self.target(x)
                }
            }
            ExprKind::Starred(x) => self.target(x),
            _ => self.expr(t),
        }
    }

    fn params_outer(&mut self, p: &Params) {
        for q in p
            .params
            .iter()
            .chain(p.kwonly.iter())
            .chain(p.vararg.iter())
            .chain(p.kwarg.iter())
        {
            if let Some(d) = &q.default {
                self.expr(d);
            }
            if let Some(a) = &q.annotation {
                self.expr(a);
            }
        }
    }

    fn enter_params(&mut self, p: &Params) {
        let cur = self.cur;
        let names: Vec<&Param> = p
            .params
            .iter()
            .chain(p.vararg.iter())
            .chain(p.kwonly.iter())
            .chain(p.kwarg.iter())
            .collect();
        for q in names {
            let s = &mut self.t.scopes[cur];
            s.params.push(q.name.name.clone());
            s.locals.insert(q.name.name.clone(), false);
            self.note(cur, &q.name.name, Binder::Plain);
        }
    }

    fn func(&mut self, f: &FuncDef) {
        self.params_outer(&f.params);
        if let Some(r) = &f.returns {
            self.expr(r);
        }
        let id = self.push_scope(ScopeKind::Function, &f.name.name, f as *const FuncDef as usize);
        let saved = (self.cur, self.depth);
        self.cur = id;
        self.depth = 1;
        self.enter_params(&f.params);
        let mut g = Vec::new();
        let mut nl = Vec::new();
        collect_decls(&f.body, &mut g, &mut nl);
        // A parameter cannot also be declared `global` or `nonlocal`.
        let decls = g
            .into_iter()
            .map(|n| (n, "global"))
            .chain(nl.into_iter().map(|n| (n, "nonlocal")));
        for (n, word) in decls {
            let s = &mut self.t.scopes[id];
            if s.locals.contains_key(&n.name) {
                let msg = format!("name '{}' is a parameter and declared {word}", n.name);
                self.t
                    .errors
                    .push(Diagnostic::new(ErrorKind::SyntaxError, msg).at(n.span));
            } else if word == "global" {
                s.declared_global.insert(n.name.clone());
            } else {
                s.declared_nonlocal.insert(n.name.clone());
                s.nonlocal_spans.insert(n.name.clone(), n.span);
                s.used.insert(n.name.clone());
            }
        }
        self.stmts(&f.body);
        (self.cur, self.depth) = saved;
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Str(_)
            | ExprKind::Bytes(_)
            | ExprKind::Bool(_)
            | ExprKind::None
            | ExprKind::Error => {}
            ExprKind::FString(parts) => self.fparts(parts),
            ExprKind::Name(n) => self.use_name(n),
            ExprKind::List(xs) | ExprKind::Tuple(xs) | ExprKind::Set(xs) => {
                for x in xs {
                    self.expr(x)
                }
            }
            ExprKind::Dict(items) => {
                for it in items {
                    match it {
                        DictItem::Pair(k, v) => {
                            self.expr(k);
                            self.expr(v);
                        }
                        DictItem::Spread(x) => self.expr(x),
                    }
                }
            }
            ExprKind::Starred(x) => self.expr(x),
            ExprKind::BinOp { left, right, .. } | ExprKind::BoolOp { left, right, .. } => {
                self.expr(left);
                self.expr(right);
            }
            ExprKind::UnaryOp { operand, .. } => self.expr(operand),
            ExprKind::Compare { left, ops } => {
                self.expr(left);
                for (_, x) in ops {
                    self.expr(x)
                }
            }
            ExprKind::Range { start, end } => {
                self.expr(start);
                self.expr(end);
            }
            ExprKind::Call { func, args } => {
                if let (ExprKind::Name(n), true) = (&func.kind, args.is_empty()) {
                    if n == "super" {
                        if let Some(s) = self.method_self.last().cloned() {
                            self.use_name(&s);
                        }
                    }
                }
                self.expr(func);
                for a in args {
                    match a {
                        Arg::Positional(x) | Arg::Keyword(_, x) | Arg::Star(x) | Arg::DoubleStar(x) => self.expr(x),
                    }
                }
            }
            ExprKind::Attribute { value, .. } => self.expr(value),
            ExprKind::Index { value, index } => {
                self.expr(value);
                self.expr(index);
            }
            ExprKind::Slice { lower, upper, step } => {
                for x in [lower, upper, step].into_iter().flatten() {
                    self.expr(x)
                }
            }
            ExprKind::Lambda { params, body } => {
                self.params_outer(params);
                let id = self.push_scope(ScopeKind::Lambda, "<lambda>", e as *const Expr as usize);
                let saved = (self.cur, self.depth);
                self.cur = id;
                self.depth = 1;
                self.enter_params(params);
                self.expr(body);
                (self.cur, self.depth) = saved;
            }
            ExprKind::IfExp { test, body, orelse } => {
                self.expr(test);
                self.expr(body);
                self.expr(orelse);
            }
            ExprKind::ListComp { elt, generators } | ExprKind::SetComp { elt, generators } => {
                self.comp(e, generators, |a| a.expr(elt))
            }
            ExprKind::DictComp { key, value, generators } => self.comp(e, generators, |a| {
                a.expr(key);
                a.expr(value);
            }),
            ExprKind::GenExp { elt, generators } => {
                self.comp(e, generators, |a| a.expr(elt));
                if let Some(&id) = self.t.by_node.get(&(e as *const Expr as usize)) {
                    self.t.scopes[id].generator = true;
                }
            }
            ExprKind::Yield(v) => {
                self.mark_generator();
                if let Some(v) = v {
                    self.expr(v);
                }
            }
            ExprKind::YieldFrom(v) => {
                self.mark_generator();
                self.expr(v);
            }
        }
    }

    /// A `yield` makes the `def` it stands in a generator. Anywhere else
    /// (module level, a lambda, a comprehension, a `parallel for` body) it
    /// is an error the checker reports and the compiler refuses.
    fn mark_generator(&mut self) {
        let s = &mut self.t.scopes[self.cur];
        if s.kind == ScopeKind::Function && s.name != PARALLEL_BODY {
            s.generator = true;
        }
    }

    fn comp(&mut self, e: &Expr, gens: &[Comprehension], inner: impl FnOnce(&mut Analyzer)) {
        let Some(first) = gens.first() else {
            return;
        };
        self.expr(&first.iter);
        let id = self.push_scope(ScopeKind::Comprehension, "<comprehension>", e as *const Expr as usize);
        let saved = (self.cur, self.depth);
        self.cur = id;
        self.depth = 1;
        {
            let s = &mut self.t.scopes[id];
            s.params.push(".0".to_string());
            s.locals.insert(".0".to_string(), false);
        }
        for (i, g) in gens.iter().enumerate() {
            if i > 0 {
                self.expr(&g.iter);
            }
            self.target(&g.target);
            for c in &g.ifs {
                self.expr(c);
            }
        }
        inner(self);
        (self.cur, self.depth) = saved;
    }

    fn fparts(&mut self, parts: &[FStringPart]) {
        for p in parts {
            if let FStringPart::Expr { expr, spec, .. } = p {
                self.expr(expr);
                self.fparts(spec);
            }
        }
    }

    /// Resolve free variables and decide cells.
    fn finish(&mut self) {
        for (name, (count, once)) in &self.counts {
            if *count == 1 && *once {
                self.t.module_once.insert(name.clone());
            }
        }
        for id in 1..self.t.scopes.len() {
            let used: Vec<String> = self.t.scopes[id].used.iter().cloned().collect();
            for name in used {
                let s = &self.t.scopes[id];
                if s.locals.contains_key(&name) || s.declared_global.contains(&name) {
                    continue;
                }
                let nonlocal = s.declared_nonlocal.contains(&name);
                let span = s.nonlocal_spans.get(&name).copied().unwrap_or_default();
                if !self.resolve_free(id, &name) && nonlocal {
                    let msg = format!("no binding for nonlocal '{name}' found in an enclosing function");
                    self.t
                        .errors
                        .push(Diagnostic::new(ErrorKind::SyntaxError, msg).at(span));
                }
            }
        }
        for s in &mut self.t.scopes {
            s.cells = s.locals.iter().filter(|(_, c)| **c).map(|(n, _)| n.clone()).collect();
        }
    }

    fn resolve_free(&mut self, id: ScopeId, name: &str) -> bool {
        let mut chain = vec![id];
        let mut p = self.t.scopes[id].parent;
        while let Some(pid) = p {
            let ps = &self.t.scopes[pid];
            if ps.kind == ScopeKind::Module || ps.declared_global.contains(name) {
                return false;
            }
            if ps.locals.contains_key(name) {
                if let Some(c) = self.t.scopes[pid].locals.get_mut(name) {
                    *c = true;
                }
                for &c in &chain {
                    self.t.scopes[c].frees.insert(name.to_string());
                }
                return true;
            }
            chain.push(pid);
            p = ps.parent;
        }
        false
    }
}

/// `global`/`nonlocal` declarations of one function body (not nested functions).
fn collect_decls<'a>(body: &'a [Stmt], g: &mut Vec<&'a Ident>, nl: &mut Vec<&'a Ident>) {
    for s in body {
        match &s.kind {
            StmtKind::Global(ns) => g.extend(ns.iter()),
            StmtKind::Nonlocal(ns) => nl.extend(ns.iter()),
            StmtKind::If { body, orelse, .. } => {
                collect_decls(body, g, nl);
                collect_decls(orelse, g, nl);
            }
            StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => {
                collect_decls(body, g, nl);
                collect_decls(orelse, g, nl);
            }
            StmtKind::With { body, .. } => collect_decls(body, g, nl),
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                collect_decls(body, g, nl);
                for h in handlers {
                    collect_decls(&h.body, g, nl);
                }
                collect_decls(orelse, g, nl);
                collect_decls(finalbody, g, nl);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::FileId;

    fn table(src: &str) -> (Module, ScopeTable) {
        let (m, diags) = crate::syntax::parse(FileId(0), src);
        assert!(diags.is_empty(), "{diags:?}");
        let t = analyze(&m, &[]);
        (m, t)
    }

    fn scope_named(t: &ScopeTable, name: &str) -> ScopeId {
        t.scopes
            .iter()
            .position(|s| s.name == name)
            .unwrap_or_else(|| panic!("no scope {name}"))
    }

    #[test]
    fn assignment_makes_a_local_unless_declared() {
        let (_, t) = table("x = 1\ndef f():\n    y = x\n    return y\ndef g():\n    global x\n    x = 2\n");
        let f = scope_named(&t, "f");
        assert_eq!(t.resolve(f, "y"), Binding::Local);
        assert_eq!(t.resolve(f, "x"), Binding::Global);
        let g = scope_named(&t, "g");
        assert_eq!(t.resolve(g, "x"), Binding::Global);
        assert!(t.module_names.contains("x"));
        assert!(!t.module_once.contains("x"), "x is bound twice");
        assert!(t.module_once.contains("f"));
    }

    #[test]
    fn captured_locals_become_cells_and_frees() {
        let src = "def outer():\n    a = 1\n    b = 2\n    def mid():\n        def inner():\n            return a\n        return inner\n    return mid\n";
        let (_, t) = table(src);
        let outer = scope_named(&t, "outer");
        let mid = scope_named(&t, "mid");
        let inner = scope_named(&t, "inner");
        assert_eq!(t.resolve(outer, "a"), Binding::Cell(0));
        assert_eq!(t.resolve(outer, "b"), Binding::Local);
        // `mid` passes the cell through to `inner`.
        assert_eq!(t.resolve(mid, "a"), Binding::Free(0));
        assert_eq!(t.resolve(inner, "a"), Binding::Free(0));
    }

    #[test]
    fn nonlocal_writes_the_enclosing_cell() {
        let (_, t) = table("def c():\n    n = 0\n    def inc():\n        nonlocal n\n        n += 1\n    return inc\n");
        assert_eq!(t.resolve(scope_named(&t, "c"), "n"), Binding::Cell(0));
        assert_eq!(t.resolve(scope_named(&t, "inc"), "n"), Binding::Free(0));
    }

    #[test]
    fn a_parameter_cannot_be_declared_global_or_nonlocal() {
        let (_, t) = table("def f(a, b):\n    global a\n    nonlocal b\n    return a\n");
        let msgs: Vec<&str> = t.errors.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(
            msgs,
            [
                "name 'a' is a parameter and declared global",
                "name 'b' is a parameter and declared nonlocal"
            ]
        );
        let f = scope_named(&t, "f");
        assert_eq!(t.resolve(f, "a"), Binding::Local, "the parameter stays local");
    }

    #[test]
    fn nonlocal_without_binding_is_an_error() {
        let (_, t) = table("def f():\n    nonlocal q\n    q = 1\n");
        assert_eq!(t.errors.len(), 1);
        assert!(t.errors[0].message.contains("no binding for nonlocal 'q'"));
    }

    #[test]
    fn comprehension_and_lambda_have_their_own_scope() {
        let (_, t) =
            table("def f(xs):\n    k = 5\n    ys = [k + x for x in xs]\n    g = lambda y, k=k: y + k\n    return ys\n");
        let f = scope_named(&t, "f");
        let comp = scope_named(&t, "<comprehension>");
        let lam = scope_named(&t, "<lambda>");
        assert_eq!(t.resolve(comp, "x"), Binding::Local);
        assert_eq!(t.resolve(comp, "k"), Binding::Free(0));
        assert_eq!(t.resolve(f, "k"), Binding::Cell(0));
        assert_eq!(
            t.resolve(f, "x"),
            Binding::Global,
            "x does not leak out of the comprehension"
        );
        assert_eq!(t.resolve(lam, "k"), Binding::Local, "a parameter shadows the outer k");
        assert_eq!(t.scope(comp).params, vec![".0".to_string()]);
    }

    #[test]
    fn yield_makes_only_its_own_def_a_generator() {
        let src = "def outer():\n    def inner():\n        yield 1\n    f = lambda: 2\n    return inner\ndef gen():\n    x = yield\n    g = (y for y in [x])\n";
        let (_, t) = table(src);
        assert!(!t.scope(scope_named(&t, "outer")).generator);
        assert!(t.scope(scope_named(&t, "inner")).generator);
        assert!(t.scope(scope_named(&t, "gen")).generator);
        assert!(
            t.scope(scope_named(&t, "<comprehension>")).generator,
            "a generator expression"
        );
        assert!(!t.scope(scope_named(&t, "<lambda>")).generator);
    }

    #[test]
    fn module_level_comprehension_variables_stay_local() {
        let (_, t) = table("k = 1\nys = [k for k in range(3)]\n");
        let comp = scope_named(&t, "<comprehension>");
        assert_eq!(t.resolve(comp, "k"), Binding::Local);
        assert!(t.module_names.contains("k"));
        assert!(t.module_names.contains("ys"));
    }

    #[test]
    fn methods_skip_the_struct_body() {
        let (_, t) = table("struct P:\n    x: int\n    def get(self):\n        return x\n");
        let get = scope_named(&t, "get");
        assert_eq!(t.resolve(get, "self"), Binding::Local);
        assert_eq!(t.resolve(get, "x"), Binding::Global, "fields are reached through self");
        assert!(t.module_once.contains("P"));
    }

    #[test]
    fn defs_inside_compound_statements_are_not_write_once() {
        let (_, t) = table("if true:\n    def f():\n        pass\ndef g():\n    pass\n");
        assert!(!t.module_once.contains("f"));
        assert!(t.module_once.contains("g"));
    }

    #[test]
    fn a_single_top_level_assignment_is_write_once() {
        let src = "N = 100\nC = list\na, b = 1, 2\nM = 1\nM += 1\nif true:\n    K = 1\nfor i in range(2):\n    pass\nx = y = 3\nD = 1\ndel D\n";
        let (_, t) = table(src);
        for n in ["N", "C", "x", "y"] {
            assert!(t.module_once.contains(n), "{n}");
        }
        for n in ["a", "b", "M", "K", "i", "D"] {
            assert!(!t.module_once.contains(n), "{n}");
        }
    }

    #[test]
    fn use_bindings_are_module_names() {
        let (m, _) = table("print(1)\n");
        let t = analyze(&m, &["geometry".to_string()]);
        assert!(t.module_names.contains("geometry"));
        assert!(t.module_once.contains("geometry"));
    }
}
