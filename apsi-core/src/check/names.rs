//! Name resolution and the checks that need it: unknown names (with a
//! did-you-mean hint), ambiguous unqualified module exports, `nonlocal`
//! without a binding, `break`/`continue`/`return` out of place (and inside
//! `parallel for`), and calls whose callee is statically known (arity,
//! keywords, literal argument types — see `calls`).
//!
//! What each scope binds comes from the unit's scope table (`scopes`, the
//! one scope analysis, which the compiler uses too); this pass walks the
//! tree with the table's scopes open. Lookup order for a name read in a
//! scope (Python's, plus modules): the scope's own bindings → enclosing
//! function scopes (with their function-level `use` exports) → module
//! globals → unqualified exports of the module's `use`s → names from
//! earlier REPL inputs → the prelude.

use super::calls;
use super::defs::{Def, DefIndex};
use super::scopes::{Bound, ScopeId, ScopeTable};
use super::suggest::closest;
use super::{CheckEnv, ReplScope, ResolvedUse, Unit, UseTarget};
use crate::diagnostic::{Diagnostic, FileId, Span};
use crate::error::ErrorKind;
use crate::syntax::ast::*;
use rustc_hash::FxHashSet;

/// What every unit of one check shares.
pub(crate) struct Shared<'a> {
    pub units: &'a [Unit],
    pub env: &'a CheckEnv,
    /// The definitions of each unit, by unit index.
    pub defs: Vec<DefIndex<'a>>,
    /// Exports of each unit, by unit index.
    pub exports: Vec<Vec<String>>,
    /// Prelude names plus the always-present ones (argv, error kinds, dtypes).
    pub builtins: FxHashSet<String>,
    pub repl: Option<&'a ReplScope>,
    /// Files where unknown names are not reported (an unqualified `use`
    /// there failed, and the missing module could define them).
    pub open_files: FxHashSet<FileId>,
}

impl<'a> Shared<'a> {
    pub fn new(units: &'a [Unit], env: &'a CheckEnv, repl: Option<&'a ReplScope>) -> Shared<'a> {
        let defs = units.iter().map(|u| DefIndex::of(&u.ast)).collect();
        let exports = units.iter().map(|u| u.scopes.exports()).collect();
        let mut builtins: FxHashSet<String> = env.prelude.iter().cloned().collect();
        // `argv`, `native` (`@native` needs no `use`) and the `Tensor` type
        // are always there.
        for name in ["argv", "native", "Tensor"] {
            builtins.insert(name.to_string());
        }
        for k in ErrorKind::ALL {
            builtins.insert(k.name().to_string());
        }
        for d in super::annot::DTYPES {
            builtins.insert(d.to_string());
        }
        Shared {
            units,
            env,
            defs,
            exports,
            builtins,
            repl,
            open_files: FxHashSet::default(),
        }
    }

    fn export_list(&self, target: &UseTarget) -> &[String] {
        match target {
            UseTarget::Builtin(name) => self
                .env
                .builtin_modules
                .iter()
                .find(|m| &m.name == name)
                .map(|m| m.exports.as_slice())
                .unwrap_or(&[]),
            UseTarget::File(i) => self.exports.get(*i).map(|v| v.as_slice()).unwrap_or(&[]),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Module,
    Function,
    Lambda,
    Comp,
    /// The body of a `parallel for` (a function scope of its own, which the
    /// iterations run; for `return`, `yield` and `nonlocal` it belongs to
    /// the scope around it).
    ParallelBody,
}

/// An unqualified export visible in a scope.
struct Export {
    name: String,
    module: String,
    target: UseTarget,
}

struct Frame {
    kind: Kind,
    scope: ScopeId,
    exports: Vec<Export>,
}

/// Where a name read resolves to.
enum Res<'b> {
    /// Bound in one of the open scopes.
    Frame(&'b Bound),
    Export(UseTarget),
    Builtin,
    Missing,
    Ambiguous(Vec<String>),
}

struct FnCtx {
    in_function: bool,
    /// Enclosing loops of the current function, innermost last; true = parallel.
    loops: Vec<bool>,
}

pub(crate) struct Checker<'s, 'a> {
    shared: &'s Shared<'a>,
    unit: &'a Unit,
    unit_index: usize,
    table: &'a ScopeTable,
    frames: Vec<Frame>,
    ctx: Vec<FnCtx>,
    pub diags: Vec<Diagnostic>,
    /// How many struct method bodies enclose the code being checked.
    methods: usize,
}

/// Runs the name and call checks over one unit.
pub(crate) fn check_unit(shared: &Shared<'_>, idx: usize) -> Vec<Diagnostic> {
    let Some(unit) = shared.units.get(idx) else {
        return Vec::new();
    };
    let mut c = Checker {
        shared,
        unit,
        unit_index: idx,
        table: &unit.scopes,
        frames: Vec::new(),
        ctx: Vec::new(),
        diags: Vec::new(),
        methods: 0,
    };
    c.push_frame(Kind::Module, ScopeTable::MODULE);
    c.ctx.push(FnCtx {
        in_function: false,
        loops: Vec::new(),
    });
    c.body(&unit.ast.body);
    c.diags
}

impl<'s, 'a> Checker<'s, 'a> {
    fn push_frame(&mut self, kind: Kind, scope: ScopeId) {
        let mut exports = Vec::new();
        for span in &self.table.scope(scope).uses {
            let Some(ru) = self.resolved_use(*span) else { continue };
            if !ru.unqualified {
                continue;
            }
            for name in self.shared.export_list(&ru.target) {
                exports.push(Export {
                    name: name.clone(),
                    module: ru.binding.clone(),
                    target: ru.target.clone(),
                });
            }
        }
        self.frames.push(Frame { kind, scope, exports });
    }

    /// Runs `f` with the scope the table made for a node (a `def`, lambda,
    /// comprehension or `parallel for` body) open; without one (the table
    /// skipped the node, such as a comprehension without a loop) in the
    /// scope around it.
    fn in_scope(&mut self, kind: Kind, scope: Option<ScopeId>, f: impl FnOnce(&mut Self)) {
        if let Some(id) = scope {
            self.push_frame(kind, id);
        }
        f(self);
        if scope.is_some() {
            self.frames.pop();
        }
    }

    /// The innermost open frame that is not a `parallel for` body.
    fn enclosing(&self) -> Option<(usize, Kind)> {
        self.frames
            .iter()
            .enumerate()
            .rev()
            .map(|(i, f)| (i, f.kind))
            .find(|(_, k)| *k != Kind::ParallelBody)
    }

    fn resolved_use(&self, span: Span) -> Option<&'a ResolvedUse> {
        self.unit.uses.iter().find(|u| u.span == span)
    }

    // ----- resolution -------------------------------------------------

    fn resolve(&self, name: &str) -> Res<'_> {
        let Some(cur) = self.frames.len().checked_sub(1) else {
            return Res::Missing;
        };
        for j in (0..=cur).rev() {
            let f = &self.frames[j];
            if f.kind == Kind::Module {
                break;
            }
            let scope = self.table.scope(f.scope);
            if scope.declared_global.contains(name) {
                return self.resolve_global(name);
            }
            if scope.declared_nonlocal.contains(name) {
                // Checked where the `nonlocal` stands; look further out.
                continue;
            }
            if let Some(b) = scope.bound.get(name) {
                return Res::Frame(b);
            }
            let hits: Vec<&Export> = f.exports.iter().filter(|e| e.name == name).collect();
            if let Some(r) = pick_export(&hits) {
                return r;
            }
        }
        self.resolve_global(name)
    }

    fn resolve_global(&self, name: &str) -> Res<'_> {
        let Some(module) = self.frames.first() else {
            return Res::Missing;
        };
        if let Some(b) = self.table.scope(ScopeTable::MODULE).bound.get(name) {
            return Res::Frame(b);
        }
        let hits: Vec<&Export> = module.exports.iter().filter(|e| e.name == name).collect();
        if let Some(r) = pick_export(&hits) {
            return r;
        }
        if self.shared.repl.is_some_and(|r| r.names.contains(name)) || self.shared.builtins.contains(name) {
            return Res::Builtin;
        }
        Res::Missing
    }

    /// Whether the code being checked runs later (inside a `def` or `lambda`).
    fn in_deferred_code(&self) -> bool {
        // A `parallel for` body runs now.
        self.frames
            .iter()
            .any(|f| matches!(f.kind, Kind::Function | Kind::Lambda))
    }

    /// Whether a `parallel for` body directly inside the current scope
    /// binds `name` (which is then local to each iteration).
    fn bound_in_parallel_body(&self, name: &str) -> bool {
        let Some(cur) = self.frames.last().map(|f| f.scope) else {
            return false;
        };
        self.table
            .scopes
            .iter()
            .any(|s| s.parent == Some(cur) && s.name == super::scopes::PARALLEL_BODY && s.bound.contains_key(name))
    }

    /// Every name visible from the current scope (for suggestions).
    fn visible_names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for f in &self.frames {
            out.extend(self.table.scope(f.scope).bound.keys().map(|s| s.as_str()));
            out.extend(f.exports.iter().map(|e| e.name.as_str()));
        }
        out.extend(self.shared.builtins.iter().map(|s| s.as_str()));
        if let Some(r) = self.shared.repl {
            out.extend(r.names.iter().map(|s| s.as_str()));
        }
        out
    }

    fn read_name(&mut self, name: &str, span: Span) {
        match self.resolve(name) {
            Res::Missing if self.shared.open_files.contains(&self.unit.file) => {}
            // In the REPL a function may name what a later input defines.
            Res::Missing if self.shared.repl.is_some() && self.in_deferred_code() => {}
            Res::Missing => {
                let candidates = self.visible_names();
                let hint = if self.bound_in_parallel_body(name) {
                    format!(
                        "'{name}' is assigned only inside a `parallel for` body, where each iteration has its own; \
                         combine iterations with a reduction (`s += …` on a variable set before the loop) or write each one into a list or tensor slot"
                    )
                } else if let Some(lower) = python_constant(name) {
                    format!("Python's `{name}` is `{lower}` in Apsi (`none`, `true` and `false` are lowercase)")
                } else {
                    match closest(name, candidates) {
                        Some(s) => format!("did you mean '{s}'?"),
                        None => format!(
                            "assign '{name}' before reading it, define it with `def` or `struct`, or `use` the module that provides it"
                        ),
                    }
                };
                self.diags.push(
                    Diagnostic::new(ErrorKind::NameError, format!("name '{name}' is not defined"))
                        .label(span, "not defined")
                        .help(hint),
                );
            }
            Res::Ambiguous(modules) => {
                let quoted: Vec<String> = modules.iter().map(|m| format!("'{m}'")).collect();
                let qualified: Vec<String> = modules.iter().map(|m| format!("{m}.{name}")).collect();
                self.diags.push(
                    Diagnostic::new(
                        ErrorKind::NameError,
                        format!("name '{name}' is ambiguous: it is exported by {}", join_and(&quoted)),
                    )
                    .label(span, "which module's?")
                    .help(format!("write {} to say which one you mean", join_or(&qualified))),
                );
            }
            _ => {}
        }
    }

    /// The known signature of a called name, if any.
    fn callee(&self, func: &Expr) -> Option<Def<'a>> {
        match &func.kind {
            ExprKind::Name(name) => match self.resolve(name) {
                Res::Frame(b) => self.unit_defs().get(b.sole()?),
                Res::Export(UseTarget::File(i)) => self.unit_def(i, name),
                _ => None,
            },
            ExprKind::Attribute { value, attr } => {
                let ExprKind::Name(m) = &value.kind else { return None };
                let Res::Frame(b) = self.resolve(m) else { return None };
                let Some(super::scopes::Binder::Use(span)) = b.sole() else {
                    return None;
                };
                match self.resolved_use(span)?.target {
                    UseTarget::File(i) => self.unit_def(i, &attr.name),
                    UseTarget::Builtin(_) => None,
                }
            }
            _ => None,
        }
    }

    /// What a struct's parent names, as far as this scope knows.
    fn parent_of(&self, sd: &'a StructDef) -> super::structs::Parent<'a> {
        use super::structs::Parent;
        let Some(base) = &sd.base else { return Parent::None };
        if let Some(Def::Struct(p)) = self.callee(base) {
            return Parent::Struct(p);
        }
        if let ExprKind::Name(n) = &base.kind {
            if matches!(self.resolve(n), Res::Builtin) {
                if super::structs::BUILTIN_TYPES.contains(&n.as_str()) {
                    return Parent::Builtin(n.clone());
                }
                if n == "Exception" || crate::error::ErrorKind::ALL.iter().any(|k| k.name() == n) {
                    return Parent::ErrorKind;
                }
            }
        }
        Parent::Unknown
    }

    fn unit_def(&self, unit: usize, name: &str) -> Option<Def<'a>> {
        let table = &self.shared.units.get(unit)?.scopes;
        let b = table.scope(ScopeTable::MODULE).bound.get(name)?;
        self.shared.defs.get(unit)?.get(b.sole()?)
    }

    /// The definitions of the unit being checked.
    fn unit_defs(&self) -> &DefIndex<'a> {
        &self.shared.defs[self.unit_index]
    }

    // ----- statements -------------------------------------------------

    fn body(&mut self, body: &'a [Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }

    fn fn_ctx(&mut self) -> &mut FnCtx {
        if self.ctx.is_empty() {
            self.ctx.push(FnCtx {
                in_function: false,
                loops: Vec::new(),
            });
        }
        let last = self.ctx.len() - 1;
        &mut self.ctx[last]
    }

    fn stmt(&mut self, s: &'a Stmt) {
        match &s.kind {
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::Assign { targets, value } => {
                self.expr(value);
                for t in targets {
                    self.target(t);
                }
            }
            StmtKind::AugAssign { target, value, .. } => {
                self.expr(target);
                self.expr(value);
            }
            StmtKind::AnnAssign { target, value, .. } => {
                if let Some(v) = value {
                    self.expr(v);
                }
                self.target(target);
            }
            StmtKind::If { test, body, orelse } => {
                self.expr(test);
                self.body(body);
                self.body(orelse);
            }
            StmtKind::While { test, body, orelse } => {
                self.expr(test);
                self.loop_body(false, body);
                // `break` in a loop's `else` leaves the enclosing loop.
                self.body(orelse);
            }
            StmtKind::For {
                target,
                iter,
                body,
                parallel,
                orelse,
            } => {
                self.expr(iter);
                // A `parallel for` body is a scope of its own (its target
                // is bound there).
                let scope = self.table.of_stmt(s).filter(|_| *parallel);
                self.in_scope(Kind::ParallelBody, scope, |c| {
                    c.target(target);
                    c.loop_body(*parallel, body);
                });
                self.body(orelse);
            }
            StmtKind::Del(targets) => {
                for t in targets {
                    self.del_target(t);
                }
            }
            StmtKind::Break | StmtKind::Continue => self.loop_jump(s),
            StmtKind::Pass => {}
            StmtKind::Return(value) => {
                if let Some(v) = value {
                    self.expr(v);
                }
                self.check_return(s.span);
            }
            StmtKind::FuncDef(f) => self.func(f),
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
                for field in &sd.fields {
                    if let Some(d) = &field.default {
                        self.expr(d);
                    }
                }
                self.diags.extend(calls::check_field_defaults(sd));
                let parent_of = |s: &'a StructDef| self.parent_of(s);
                let found = super::structs::check_struct(sd, &parent_of);
                self.diags.extend(found);
                self.methods += 1;
                for m in &sd.methods {
                    self.func(m);
                }
                self.methods -= 1;
            }
            StmtKind::Use { .. } | StmtKind::Global(_) | StmtKind::Error => {}
            StmtKind::Nonlocal(names) => self.check_nonlocal(names, s.span),
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                self.body(body);
                for h in handlers {
                    if let Some(k) = &h.kind {
                        self.expr(k);
                    }
                    self.body(&h.body);
                }
                self.body(orelse);
                self.body(finalbody);
            }
            StmtKind::Raise(e) => {
                if let Some(e) = e {
                    self.expr(e);
                }
            }
            StmtKind::Assert { test, msg } => {
                self.expr(test);
                if let Some(m) = msg {
                    self.expr(m);
                }
            }
            StmtKind::With { items, body } => {
                for item in items {
                    self.expr(&item.context);
                    if let Some(t) = &item.target {
                        self.target(t);
                    }
                }
                self.body(body);
            }
        }
    }

    fn loop_body(&mut self, parallel: bool, body: &'a [Stmt]) {
        self.fn_ctx().loops.push(parallel);
        self.body(body);
        self.fn_ctx().loops.pop();
    }

    fn loop_jump(&mut self, s: &Stmt) {
        let is_break = matches!(s.kind, StmtKind::Break);
        let word = if is_break { "break" } else { "continue" };
        match self.fn_ctx().loops.last().copied() {
            None => {
                let msg = if is_break {
                    "'break' outside loop"
                } else {
                    "'continue' not properly in loop"
                };
                self.diags.push(
                    Diagnostic::new(ErrorKind::SyntaxError, msg)
                        .label(s.span, "not inside a `for` or `while` loop")
                        .help(format!("`{word}` can only stand inside a loop of the same function")),
                );
            }
            Some(true) if is_break => {
                self.diags.push(
                    Diagnostic::new(ErrorKind::SyntaxError, "'break' is not allowed inside 'parallel for'")
                        .label(s.span, "iterations of a `parallel for` run at once, so none can stop the others")
                        .help(
                            "use a plain `for` loop if you need `break`, or skip the rest of one iteration with `continue`",
                        ),
                );
            }
            Some(_) => {}
        }
    }

    fn check_return(&mut self, span: Span) {
        let ctx = self.fn_ctx();
        if !ctx.in_function {
            self.diags.push(
                Diagnostic::new(ErrorKind::SyntaxError, "'return' outside function")
                    .label(span, "not inside a `def`")
                    .help("`return` can only stand inside a function body"),
            );
        } else if ctx.loops.contains(&true) {
            self.diags.push(
                Diagnostic::new(ErrorKind::SyntaxError, "'return' is not allowed inside 'parallel for'")
                    .label(span, "iterations of a `parallel for` run at once, so none can return for the function")
                    .help("collect results into a list or tensor inside the loop and return after it, or use a plain `for`"),
            );
        }
    }

    /// `yield` belongs in a `def` body (which makes it a generator): not at
    /// module level, in a lambda, in a comprehension, or in a `parallel for`
    /// body (whose iterations run at once on other threads).
    fn check_yield(&mut self, span: Span) {
        let kind = self.enclosing().map(|(_, k)| k).unwrap_or(Kind::Module);
        let (msg, label, help) = match kind {
            Kind::Module => (
                "'yield' outside function",
                "not inside a `def`",
                "`yield` makes the `def` it stands in a generator; it cannot stand at module level",
            ),
            Kind::Lambda => (
                "'yield' inside a lambda",
                "a lambda cannot be a generator",
                "write a `def` with `yield` in its body",
            ),
            Kind::Comp => (
                "'yield' inside a comprehension",
                "a comprehension cannot yield",
                "use a generator expression `(x for x in xs)`, or a `def` with `yield`",
            ),
            Kind::Function if self.fn_ctx().loops.contains(&true) => (
                "'yield' is not allowed inside 'parallel for'",
                "iterations of a `parallel for` run at once on other threads, so none can suspend the function",
                "collect the values in the loop and yield them after it, or use a plain `for`",
            ),
            Kind::Function | Kind::ParallelBody => return,
        };
        self.diags.push(
            Diagnostic::new(ErrorKind::SyntaxError, msg)
                .label(span, label)
                .help(help),
        );
    }

    fn check_nonlocal(&mut self, names: &[Ident], span: Span) {
        // In a `parallel for` body the declaration is its function's.
        let Some((cur, kind)) = self.enclosing() else {
            return;
        };
        if kind == Kind::Module {
            self.diags.push(
                Diagnostic::new(
                    ErrorKind::SyntaxError,
                    "nonlocal declaration not allowed at module level",
                )
                .label(span, "not inside a function")
                .help("use `global` to assign a module-level name from a function"),
            );
            return;
        }
        for n in names {
            let found = (1..cur).rev().any(|j| {
                let f = &self.frames[j];
                let scope = self.table.scope(f.scope);
                !matches!(f.kind, Kind::Module | Kind::ParallelBody)
                    && !scope.declared_global.contains(&n.name)
                    && (scope.bound.contains_key(&n.name) || scope.declared_nonlocal.contains(&n.name))
            });
            if !found {
                self.diags.push(
                    Diagnostic::new(ErrorKind::SyntaxError, format!("no binding for nonlocal '{}' found", n.name))
                        .label(n.span, "no enclosing function assigns this name")
                        .help(format!(
                            "`nonlocal {0}` needs an enclosing function that assigns '{0}'; for a module-level name use `global {0}`",
                            n.name
                        )),
                );
            }
        }
    }

    fn func(&mut self, f: &'a FuncDef) {
        for d in &f.decorators {
            self.expr(d);
        }
        self.param_defaults(&f.params);
        self.diags.extend(calls::check_param_defaults(&f.params, &f.name.name));
        self.in_scope(Kind::Function, self.table.of_func(f), |c| {
            c.ctx.push(FnCtx {
                in_function: true,
                loops: Vec::new(),
            });
            c.body(&f.body);
            c.ctx.pop();
        });
    }

    fn param_defaults(&mut self, p: &'a Params) {
        for param in p.params.iter().chain(&p.kwonly) {
            if let Some(d) = &param.default {
                self.expr(d);
            }
        }
    }

    /// An assignment target: names are bound (nothing to check), but the
    /// objects and indices of `a.b = …` and `a[i] = …` are read.
    fn target(&mut self, e: &'a Expr) {
        match &e.kind {
            ExprKind::Name(_) => {}
            ExprKind::Tuple(xs) | ExprKind::List(xs) => {
                for x in xs {
                    self.target(x);
                }
            }
            ExprKind::Starred(x) => self.target(x),
            ExprKind::Attribute { value, .. } => self.expr(value),
            ExprKind::Index { value, index } => {
                self.expr(value);
                self.expr(index);
            }
            _ => self.expr(e),
        }
    }

    /// A `del` target: a name needs nothing (reading it afterwards is a
    /// run-time `NameError`); `obj.attr` is an `AttributeError` now, since
    /// struct fields (and every other attribute) are fixed.
    fn del_target(&mut self, e: &'a Expr) {
        match &e.kind {
            ExprKind::Name(_) => {}
            ExprKind::Tuple(xs) | ExprKind::List(xs) => {
                for x in xs {
                    self.del_target(x);
                }
            }
            ExprKind::Attribute { value, attr } => {
                self.expr(value);
                self.diags.push(
                    Diagnostic::new(ErrorKind::AttributeError, super::del_attr_message(&attr.name))
                        .label(e.span, "cannot be deleted")
                        .help("set the field to another value instead, such as `none`"),
                );
            }
            _ => self.target(e),
        }
    }

    // ----- expressions ------------------------------------------------

    fn expr(&mut self, e: &'a Expr) {
        match &e.kind {
            ExprKind::Name(n) => self.read_name(n, e.span),
            ExprKind::Call { func, args } => {
                if let (ExprKind::Name(n), true) = (&func.kind, args.is_empty()) {
                    if n == "super" && self.methods == 0 && matches!(self.resolve(n), Res::Builtin) {
                        self.diags.push(
                            Diagnostic::new(
                                ErrorKind::SyntaxError,
                                "super() is only valid inside a method of a struct",
                            )
                            .label(e.span, "not inside a struct's method")
                            .help("name the parent instead: 'Parent.method(obj, …)'"),
                        );
                    }
                }
                self.expr(func);
                for a in args {
                    match a {
                        Arg::Positional(x) | Arg::Keyword(_, x) | Arg::Star(x) | Arg::DoubleStar(x) => self.expr(x),
                    }
                }
                if let Some(def) = self.callee(func).filter(|d| super::structs::call_checkable(*d)) {
                    self.diags.extend(calls::check_call(def, e.span, args));
                }
            }
            ExprKind::Lambda { params, body } => {
                self.param_defaults(params);
                self.in_scope(Kind::Lambda, self.table.of_expr(e), |c| c.expr(body));
            }
            ExprKind::ListComp { elt, generators } => self.comprehension(e, generators, &[elt]),
            ExprKind::DictComp { key, value, generators } => self.comprehension(e, generators, &[key, value]),
            ExprKind::SetComp { elt, generators } => self.comprehension(e, generators, &[elt]),
            ExprKind::GenExp { elt, generators } => self.comprehension(e, generators, &[elt]),
            ExprKind::Yield(v) => {
                self.check_yield(e.span);
                if let Some(v) = v {
                    self.expr(v);
                }
            }
            ExprKind::YieldFrom(v) => {
                self.check_yield(e.span);
                self.expr(v);
            }
            _ => {
                let mut sub = SubExprs(Vec::new());
                super::walk::walk_expr(&mut sub, e);
                for x in sub.0 {
                    self.expr(x);
                }
            }
        }
    }

    fn comprehension(&mut self, e: &'a Expr, generators: &'a [Comprehension], elts: &[&'a Expr]) {
        if let Some(first) = generators.first() {
            self.expr(&first.iter);
        }
        self.in_scope(Kind::Comp, self.table.of_expr(e), |c| {
            for (k, g) in generators.iter().enumerate() {
                if k > 0 {
                    c.expr(&g.iter);
                }
                c.target(&g.target);
                for cond in &g.ifs {
                    c.expr(cond);
                }
            }
            for x in elts {
                c.expr(x);
            }
        });
    }
}

/// Collects the direct children of an expression.
struct SubExprs<'a>(Vec<&'a Expr>);

impl<'a> super::walk::Visitor<'a> for SubExprs<'a> {
    fn expr(&mut self, e: &'a Expr) {
        self.0.push(e);
    }
}

fn pick_export<'b>(hits: &[&Export]) -> Option<Res<'b>> {
    let first = hits.first()?;
    let mut modules: Vec<String> = Vec::new();
    let mut targets: Vec<&UseTarget> = Vec::new();
    for h in hits {
        if !targets.contains(&&h.target) {
            targets.push(&h.target);
            modules.push(h.module.clone());
        }
    }
    if targets.len() > 1 {
        Some(Res::Ambiguous(modules))
    } else {
        Some(Res::Export(first.target.clone()))
    }
}

fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [a] => a.clone(),
        [a, b] => format!("{a} and {b}"),
        [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
    }
}

fn join_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [a] => a.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// Python's spelling of a constant Apsi writes in lowercase, as Apsi writes
/// it (`None` -> `none`), for the hint of a `NameError`.
fn python_constant(name: &str) -> Option<&'static str> {
    match name {
        "None" => Some("none"),
        "True" => Some("true"),
        "False" => Some("false"),
        _ => None,
    }
}
