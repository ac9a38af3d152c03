//! What a scope binds, with Python's rules: a name is local to a function if
//! it is bound anywhere in the function's own body (assignment targets, `for`
//! targets, `with … as`, `except … as`, `def`, `struct`, `use`, parameters),
//! unless declared `global` or `nonlocal` there. Nested functions, lambdas and
//! comprehensions are scopes of their own; a struct's methods see the scope
//! around the struct.

use crate::diagnostic::Span;
use crate::syntax::ast::*;
use rustc_hash::{FxHashMap, FxHashSet};

/// A definition whose call signature is known.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Def<'a> {
    Func(&'a FuncDef),
    Struct(&'a StructDef),
}

#[derive(Debug, Clone)]
pub(crate) struct Binding<'a> {
    /// How many statements bind the name in this scope.
    pub count: u32,
    /// The definition, when the only binding is an undecorated `def`/`struct`.
    pub def: Option<Def<'a>>,
    /// Set when the name is bound by a `use` (its span).
    pub use_span: Option<Span>,
}

#[derive(Debug, Default)]
pub(crate) struct ScopeInfo<'a> {
    pub bindings: FxHashMap<String, Binding<'a>>,
    pub globals: FxHashSet<String>,
    pub nonlocals: FxHashSet<String>,
    /// `use` statements standing directly in this scope: their spans.
    pub uses: Vec<Span>,
}

impl<'a> ScopeInfo<'a> {
    fn bind(&mut self, name: &str, def: Option<Def<'a>>, use_span: Option<Span>) {
        let b = self.bindings.entry(name.to_string()).or_insert(Binding {
            count: 0,
            def,
            use_span,
        });
        b.count = b.count.saturating_add(1);
        if b.count > 1 {
            b.def = None;
            b.use_span = None;
        }
    }

    pub fn bind_plain(&mut self, name: &str) {
        self.bind(name, None, None);
    }

    pub fn bind_params(&mut self, p: &Params) {
        for param in p.params.iter().chain(&p.vararg).chain(&p.kwonly).chain(&p.kwarg) {
            self.bind_plain(&param.name.name);
        }
    }

    /// Records the names an assignment target binds.
    pub fn bind_target(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Name(n) => self.bind_plain(n),
            ExprKind::Tuple(xs) | ExprKind::List(xs) => {
                for x in xs {
                    self.bind_target(x);
                }
            }
            ExprKind::Starred(x) => self.bind_target(x),
            _ => {}
        }
    }

    /// Records what a block binds, without entering nested scopes.
    pub fn collect_body(&mut self, body: &'a [Stmt]) {
        for s in body {
            self.collect_stmt(s);
        }
    }

    fn collect_stmt(&mut self, s: &'a Stmt) {
        match &s.kind {
            StmtKind::Assign { targets, .. } => {
                for t in targets {
                    self.bind_target(t);
                }
            }
            StmtKind::AugAssign { target, .. } | StmtKind::AnnAssign { target, .. } => self.bind_target(target),
            StmtKind::If { body, orelse, .. } => {
                self.collect_body(body);
                self.collect_body(orelse);
            }
            StmtKind::While { body, orelse, .. } => {
                self.collect_body(body);
                self.collect_body(orelse);
            }
            StmtKind::For {
                target, body, orelse, ..
            } => {
                self.bind_target(target);
                self.collect_body(body);
                self.collect_body(orelse);
            }
            // `del x` binds `x` (Python's scoping); reads after it fail at run time.
            StmtKind::Del(targets) => {
                for t in targets {
                    self.bind_target(t);
                }
            }
            StmtKind::FuncDef(f) => {
                let def = f.decorators.is_empty().then_some(Def::Func(f));
                self.bind(&f.name.name, def, None);
            }
            StmtKind::StructDef(sd) => {
                // A struct's call signature is known when it has no decorator and
                // either no parent (its fields) or an `__init__` of its own.
                let def = sd.decorators.is_empty().then_some(Def::Struct(sd));
                self.bind(&sd.name.name, def, None);
            }
            StmtKind::Use { path, alias } => {
                if let Some(name) = alias.as_ref().or(path.last()) {
                    self.bind(&name.name, None, Some(s.span));
                }
                self.uses.push(s.span);
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                self.collect_body(body);
                for h in handlers {
                    if let Some(n) = &h.name {
                        self.bind_plain(&n.name);
                    }
                    self.collect_body(&h.body);
                }
                self.collect_body(orelse);
                self.collect_body(finalbody);
            }
            StmtKind::With { items, body } => {
                for item in items {
                    if let Some(t) = &item.target {
                        self.bind_target(t);
                    }
                }
                self.collect_body(body);
            }
            StmtKind::Global(names) => {
                for n in names {
                    self.globals.insert(n.name.clone());
                }
            }
            StmtKind::Nonlocal(names) => {
                for n in names {
                    self.nonlocals.insert(n.name.clone());
                }
            }
            StmtKind::Expr(_)
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Pass
            | StmtKind::Return(_)
            | StmtKind::Raise(_)
            | StmtKind::Assert { .. }
            | StmtKind::Error => {}
        }
    }
}

/// The module scope of a file: its top-level bindings plus every name some
/// function declares `global` (such a name is never statically known).
pub(crate) fn module_scope(m: &Module) -> ScopeInfo<'_> {
    let mut info = ScopeInfo::default();
    info.collect_body(&m.body);
    let mut declared = Vec::new();
    collect_global_decls(&m.body, false, &mut declared);
    for name in declared {
        info.bind_plain(&name);
    }
    info
}

/// Names declared `global` inside functions (at any depth).
fn collect_global_decls(body: &[Stmt], in_function: bool, out: &mut Vec<String>) {
    for s in body {
        match &s.kind {
            StmtKind::Global(names) if in_function => out.extend(names.iter().map(|n| n.name.clone())),
            StmtKind::FuncDef(f) => collect_global_decls(&f.body, true, out),
            StmtKind::StructDef(sd) => {
                for m in &sd.methods {
                    collect_global_decls(&m.body, true, out);
                }
            }
            StmtKind::If { body, orelse, .. } => {
                collect_global_decls(body, in_function, out);
                collect_global_decls(orelse, in_function, out);
            }
            StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => {
                collect_global_decls(body, in_function, out);
                collect_global_decls(orelse, in_function, out);
            }
            StmtKind::With { body, .. } => collect_global_decls(body, in_function, out),
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                collect_global_decls(body, in_function, out);
                for h in handlers {
                    collect_global_decls(&h.body, in_function, out);
                }
                collect_global_decls(orelse, in_function, out);
                collect_global_decls(finalbody, in_function, out);
            }
            _ => {}
        }
    }
}

/// The names a file module exports: everything its top level binds (and
/// every name its functions declare `global`), except names bound only by
/// `use` and names starting with `_`. Sorted.
pub fn file_exports(m: &Module) -> Vec<String> {
    let info = module_scope(m);
    let mut names: Vec<String> = info
        .bindings
        .iter()
        .filter(|(name, b)| !name.starts_with('_') && b.use_span.is_none())
        .map(|(name, _)| name.clone())
        .collect();
    names.sort();
    names
}
