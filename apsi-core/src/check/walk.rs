//! A read-only walk over the syntax tree, shared by the simpler passes
//! (collecting `use`s, the Guard scan, annotation checks).
//!
//! [`Visitor`]'s default methods visit every child; override a method and
//! call the matching `walk_*` function to keep descending. Annotations are
//! handed to [`Visitor::annotation`] only (by default not walked), since they
//! are types, not expressions that run.

use crate::syntax::ast::*;

pub(crate) trait Visitor<'a> {
    fn stmt(&mut self, s: &'a Stmt) {
        walk_stmt(self, s)
    }
    fn expr(&mut self, e: &'a Expr) {
        walk_expr(self, e)
    }
    fn annotation(&mut self, _e: &'a Expr) {}
}

pub(crate) fn walk_body<'a, V: Visitor<'a> + ?Sized>(v: &mut V, body: &'a [Stmt]) {
    for s in body {
        v.stmt(s);
    }
}

pub(crate) fn walk_func<'a, V: Visitor<'a> + ?Sized>(v: &mut V, f: &'a FuncDef) {
    for d in &f.decorators {
        v.expr(d);
    }
    walk_params(v, &f.params);
    if let Some(r) = &f.returns {
        v.annotation(r);
    }
    walk_body(v, &f.body);
}

pub(crate) fn walk_params<'a, V: Visitor<'a> + ?Sized>(v: &mut V, p: &'a Params) {
    for param in p.params.iter().chain(&p.vararg).chain(&p.kwonly).chain(&p.kwarg) {
        if let Some(a) = &param.annotation {
            v.annotation(a);
        }
        if let Some(d) = &param.default {
            v.expr(d);
        }
    }
}

pub(crate) fn walk_stmt<'a, V: Visitor<'a> + ?Sized>(v: &mut V, s: &'a Stmt) {
    match &s.kind {
        StmtKind::Expr(e) => v.expr(e),
        StmtKind::Assign { targets, value } => {
            for t in targets {
                v.expr(t);
            }
            v.expr(value);
        }
        StmtKind::AugAssign { target, value, .. } => {
            v.expr(target);
            v.expr(value);
        }
        StmtKind::AnnAssign {
            target,
            annotation,
            value,
        } => {
            v.expr(target);
            v.annotation(annotation);
            if let Some(value) = value {
                v.expr(value);
            }
        }
        StmtKind::If { test, body, orelse } => {
            v.expr(test);
            walk_body(v, body);
            walk_body(v, orelse);
        }
        StmtKind::While { test, body, orelse } => {
            v.expr(test);
            walk_body(v, body);
            walk_body(v, orelse);
        }
        StmtKind::For {
            target,
            iter,
            body,
            orelse,
            ..
        } => {
            v.expr(target);
            v.expr(iter);
            walk_body(v, body);
            walk_body(v, orelse);
        }
        StmtKind::Del(targets) => {
            for t in targets {
                v.expr(t);
            }
        }
        StmtKind::Return(e) | StmtKind::Raise(e) => {
            if let Some(e) = e {
                v.expr(e);
            }
        }
        StmtKind::FuncDef(f) => walk_func(v, f),
        StmtKind::StructDef(sd) => {
            for d in &sd.decorators {
                v.expr(d);
            }
            if let Some(b) = &sd.base {
                v.expr(b);
            }
            for c in &sd.consts {
                v.expr(&c.value);
            }
            for field in &sd.fields {
                if let Some(a) = &field.annotation {
                    v.annotation(a);
                }
                if let Some(d) = &field.default {
                    v.expr(d);
                }
            }
            for m in &sd.methods {
                walk_func(v, m);
            }
        }
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finalbody,
        } => {
            walk_body(v, body);
            for h in handlers {
                if let Some(k) = &h.kind {
                    v.expr(k);
                }
                walk_body(v, &h.body);
            }
            walk_body(v, orelse);
            walk_body(v, finalbody);
        }
        StmtKind::Assert { test, msg } => {
            v.expr(test);
            if let Some(m) = msg {
                v.expr(m);
            }
        }
        StmtKind::With { items, body } => {
            for item in items {
                v.expr(&item.context);
                if let Some(t) = &item.target {
                    v.expr(t);
                }
            }
            walk_body(v, body);
        }
        StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Pass
        | StmtKind::Use { .. }
        | StmtKind::Global(_)
        | StmtKind::Nonlocal(_)
        | StmtKind::Error => {}
    }
}

pub(crate) fn walk_fstring<'a, V: Visitor<'a> + ?Sized>(v: &mut V, parts: &'a [FStringPart]) {
    for part in parts {
        if let FStringPart::Expr { expr, spec, .. } = part {
            v.expr(expr);
            walk_fstring(v, spec);
        }
    }
}

pub(crate) fn walk_expr<'a, V: Visitor<'a> + ?Sized>(v: &mut V, e: &'a Expr) {
    match &e.kind {
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Bytes(_)
        | ExprKind::Bool(_)
        | ExprKind::None
        | ExprKind::Name(_)
        | ExprKind::Error => {}
        ExprKind::FString(parts) => walk_fstring(v, parts),
        ExprKind::List(xs) | ExprKind::Tuple(xs) | ExprKind::Set(xs) => {
            for x in xs {
                v.expr(x);
            }
        }
        ExprKind::Dict(items) => {
            for item in items {
                match item {
                    DictItem::Pair(k, val) => {
                        v.expr(k);
                        v.expr(val);
                    }
                    DictItem::Spread(x) => v.expr(x),
                }
            }
        }
        ExprKind::Starred(x) => v.expr(x),
        ExprKind::UnaryOp { operand, .. } => v.expr(operand),
        ExprKind::BinOp { left, right, .. } | ExprKind::BoolOp { left, right, .. } => {
            v.expr(left);
            v.expr(right);
        }
        ExprKind::Compare { left, ops } => {
            v.expr(left);
            for (_, x) in ops {
                v.expr(x);
            }
        }
        ExprKind::Range { start, end } => {
            v.expr(start);
            v.expr(end);
        }
        ExprKind::Call { func, args } => {
            v.expr(func);
            for a in args {
                match a {
                    Arg::Positional(x) | Arg::Keyword(_, x) | Arg::Star(x) | Arg::DoubleStar(x) => v.expr(x),
                }
            }
        }
        ExprKind::Attribute { value, .. } => v.expr(value),
        ExprKind::Index { value, index } => {
            v.expr(value);
            v.expr(index);
        }
        ExprKind::Slice { lower, upper, step } => {
            for x in [lower, upper, step].into_iter().flatten() {
                v.expr(x);
            }
        }
        ExprKind::Lambda { params, body } => {
            walk_params(v, params);
            v.expr(body);
        }
        ExprKind::IfExp { test, body, orelse } => {
            v.expr(test);
            v.expr(body);
            v.expr(orelse);
        }
        ExprKind::ListComp { elt, generators } | ExprKind::SetComp { elt, generators } => {
            walk_generators(v, generators);
            v.expr(elt);
        }
        ExprKind::DictComp { key, value, generators } => {
            walk_generators(v, generators);
            v.expr(key);
            v.expr(value);
        }
        ExprKind::GenExp { elt, generators } => {
            walk_generators(v, generators);
            v.expr(elt);
        }
        ExprKind::Yield(x) => {
            if let Some(x) = x {
                v.expr(x);
            }
        }
        ExprKind::YieldFrom(x) => v.expr(x),
    }
}

fn walk_generators<'a, V: Visitor<'a> + ?Sized>(v: &mut V, generators: &'a [Comprehension]) {
    for g in generators {
        v.expr(&g.iter);
        v.expr(&g.target);
        for c in &g.ifs {
            v.expr(c);
        }
    }
}
