//! Test helpers for the parser tests: an s-expression printer of the AST
//! and shortcuts to parse and collect errors.
#![allow(dead_code)]

use apsi_core::diagnostic::{Diagnostic, FileId};
use apsi_core::syntax::ast::*;
use apsi_core::syntax::parse;

/// Parses and asserts there are no diagnostics.
pub fn ok(src: &str) -> Module {
    let (m, d) = parse(FileId(0), src);
    assert!(d.is_empty(), "unexpected diagnostics for {src:?}: {:#?}", d);
    m
}

/// The s-expression of every statement, one per line.
pub fn sexp(src: &str) -> String {
    let m = ok(src);
    m.body.iter().map(stmt).collect::<Vec<_>>().join("\n")
}

/// The s-expression of the single expression statement `src`.
pub fn e(src: &str) -> String {
    let m = ok(src);
    assert_eq!(m.body.len(), 1, "{src:?}");
    match &m.body[0].kind {
        StmtKind::Expr(x) => expr(x),
        _ => panic!("not an expression statement: {src:?}"),
    }
}

/// (message, start, end) of every diagnostic.
pub fn errs(src: &str) -> Vec<(String, u32, u32)> {
    let (_, d) = parse(FileId(0), src);
    d.iter()
        .map(|d| {
            let s = d.primary_span().unwrap_or_default();
            (d.message.clone(), s.start, s.end)
        })
        .collect()
}

pub fn diags(src: &str) -> Vec<Diagnostic> {
    parse(FileId(0), src).1
}

/// The only error's message; panics unless there is exactly one.
pub fn err1(src: &str) -> String {
    let es = errs(src);
    assert_eq!(es.len(), 1, "expected one error for {src:?}, got {es:#?}");
    es[0].0.clone()
}

fn block(b: &[Stmt]) -> String {
    let parts: Vec<String> = b.iter().map(stmt).collect();
    format!("[{}]", parts.join(" "))
}

fn opt(e: &Option<Expr>) -> String {
    e.as_ref().map(expr).unwrap_or_else(|| "_".to_string())
}

pub fn stmt(s: &Stmt) -> String {
    match &s.kind {
        StmtKind::Expr(x) => expr(x),
        StmtKind::Assign { targets, value } => {
            let ts: Vec<String> = targets.iter().map(expr).collect();
            format!("(= {} {})", ts.join(" "), expr(value))
        }
        StmtKind::AugAssign { target, op, value } => format!("({}= {} {})", op.symbol(), expr(target), expr(value)),
        StmtKind::AnnAssign {
            target,
            annotation,
            value,
        } => format!("(: {} {} {})", expr(target), expr(annotation), opt(value)),
        StmtKind::If { test, body, orelse } => format!("(if {} {} {})", expr(test), block(body), block(orelse)),
        StmtKind::While { test, body, orelse } => {
            format!("(while {} {}{})", expr(test), block(body), loop_else(orelse))
        }
        StmtKind::For {
            target,
            iter,
            body,
            parallel,
            orelse,
        } => {
            format!(
                "({} {} {} {}{})",
                if *parallel { "pfor" } else { "for" },
                expr(target),
                expr(iter),
                block(body),
                loop_else(orelse)
            )
        }
        StmtKind::Del(ts) => format!("(del {})", ts.iter().map(expr).collect::<Vec<_>>().join(" ")),
        StmtKind::Break => "break".into(),
        StmtKind::Continue => "continue".into(),
        StmtKind::Pass => "pass".into(),
        StmtKind::Return(v) => format!("(return {})", opt(v)),
        StmtKind::FuncDef(f) => func(f),
        StmtKind::StructDef(sd) => {
            let fields: Vec<String> = sd
                .fields
                .iter()
                .map(|f| format!("({} {} {})", f.name.name, opt(&f.annotation), opt(&f.default)))
                .collect();
            let methods: Vec<String> = sd.methods.iter().map(func).collect();
            let decos: Vec<String> = sd.decorators.iter().map(|d| format!("@{}", expr(d))).collect();
            let base = sd.base.as_ref().map(|b| format!("({})", expr(b))).unwrap_or_default();
            let consts: String = sd
                .consts
                .iter()
                .map(|c| format!(" (const {} {})", c.name.name, expr(&c.value)))
                .collect();
            format!(
                "(struct {}{}{base}{consts} [{}] [{}])",
                decos.iter().map(|d| format!("{d} ")).collect::<String>(),
                sd.name.name,
                fields.join(" "),
                methods.join(" ")
            )
        }
        StmtKind::Use { path, alias } => {
            let p: Vec<&str> = path.iter().map(|i| i.name.as_str()).collect();
            match alias {
                Some(a) => format!("(use {} as {})", p.join("."), a.name),
                None => format!("(use {})", p.join(".")),
            }
        }
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finalbody,
        } => {
            let hs: Vec<String> = handlers
                .iter()
                .map(|h| {
                    format!(
                        "(except {} {} {})",
                        opt(&h.kind),
                        h.name.as_ref().map(|n| n.name.as_str()).unwrap_or("_"),
                        block(&h.body)
                    )
                })
                .collect();
            format!(
                "(try {} [{}] {} {})",
                block(body),
                hs.join(" "),
                block(orelse),
                block(finalbody)
            )
        }
        StmtKind::Raise(v) => format!("(raise {})", opt(v)),
        StmtKind::Assert { test, msg } => format!("(assert {} {})", expr(test), opt(msg)),
        StmtKind::With { items, body } => {
            let is: Vec<String> = items
                .iter()
                .map(|i| format!("({} {})", expr(&i.context), opt(&i.target)))
                .collect();
            format!("(with [{}] {})", is.join(" "), block(body))
        }
        StmtKind::Global(ns) => format!(
            "(global {})",
            ns.iter().map(|n| n.name.as_str()).collect::<Vec<_>>().join(" ")
        ),
        StmtKind::Nonlocal(ns) => format!(
            "(nonlocal {})",
            ns.iter().map(|n| n.name.as_str()).collect::<Vec<_>>().join(" ")
        ),
        StmtKind::Error => "ERROR".into(),
    }
}

/// ` else [...]` for a loop with an `else` block (nothing without one).
fn loop_else(orelse: &[Stmt]) -> String {
    if orelse.is_empty() {
        String::new()
    } else {
        format!(" else {}", block(orelse))
    }
}

fn func(f: &FuncDef) -> String {
    let decos: String = f.decorators.iter().map(|d| format!("@{} ", expr(d))).collect();
    format!(
        "(def {}{} {} -> {} {})",
        decos,
        f.name.name,
        params(&f.params),
        opt(&f.returns),
        block(&f.body)
    )
}

fn param(p: &Param) -> String {
    let mut s = p.name.name.clone();
    if let Some(a) = &p.annotation {
        s = format!("{s}:{}", expr(a));
    }
    if let Some(d) = &p.default {
        s = format!("{s}={}", expr(d));
    }
    s
}

pub fn params(p: &Params) -> String {
    let mut parts: Vec<String> = p.params.iter().map(param).collect();
    if let Some(v) = &p.vararg {
        parts.push(format!("*{}", param(v)));
    } else if !p.kwonly.is_empty() {
        parts.push("*".into());
    }
    parts.extend(p.kwonly.iter().map(param));
    if let Some(k) = &p.kwarg {
        parts.push(format!("**{}", param(k)));
    }
    format!("({})", parts.join(" "))
}

fn arg(a: &Arg) -> String {
    match a {
        Arg::Positional(x) => expr(x),
        Arg::Keyword(n, x) => format!("{}={}", n.name, expr(x)),
        Arg::Star(x) => format!("*{}", expr(x)),
        Arg::DoubleStar(x) => format!("**{}", expr(x)),
    }
}

fn comps(gs: &[Comprehension]) -> String {
    gs.iter()
        .map(|g| {
            let ifs: String = g.ifs.iter().map(|i| format!(" (if {})", expr(i))).collect();
            format!(" (for {} {}{})", expr(&g.target), expr(&g.iter), ifs)
        })
        .collect()
}

fn fpart(p: &FStringPart) -> String {
    match p {
        FStringPart::Literal(s) => format!("{s:?}"),
        FStringPart::Expr {
            expr: x,
            conversion,
            spec,
            debug_text,
        } => {
            let mut s = format!("{{{}", expr(x));
            if let Some(d) = debug_text {
                s.push_str(&format!(" debug={d:?}"));
            }
            if let Some(c) = conversion {
                s.push_str(&format!(" !{c}"));
            }
            if !spec.is_empty() {
                let sp: Vec<String> = spec.iter().map(fpart).collect();
                s.push_str(&format!(" :{}", sp.join(" ")));
            }
            s.push('}');
            s
        }
    }
}

pub fn expr(x: &Expr) -> String {
    match &x.kind {
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Float(v) => format!("{v:?}"),
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::Bytes(b) => apsi_core::format::bytes_repr(b),
        ExprKind::FString(ps) => format!("(f {})", ps.iter().map(fpart).collect::<Vec<_>>().join(" ")),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::None => "none".into(),
        ExprKind::Name(n) => n.clone(),
        ExprKind::List(xs) => format!("[{}]", xs.iter().map(expr).collect::<Vec<_>>().join(" ")),
        ExprKind::Tuple(xs) => format!("(tuple {})", xs.iter().map(expr).collect::<Vec<_>>().join(" ")),
        ExprKind::Dict(items) => {
            let is: Vec<String> = items
                .iter()
                .map(|i| match i {
                    DictItem::Pair(k, v) => format!("{}:{}", expr(k), expr(v)),
                    DictItem::Spread(v) => format!("**{}", expr(v)),
                })
                .collect();
            format!("{{{}}}", is.join(" "))
        }
        ExprKind::Starred(v) => format!("*{}", expr(v)),
        ExprKind::BinOp { op, left, right } => format!("({} {} {})", op.symbol(), expr(left), expr(right)),
        ExprKind::UnaryOp { op, operand } => {
            let s = match op {
                UnaryOp::Neg => "neg",
                UnaryOp::Pos => "pos",
                UnaryOp::Invert => "~",
                UnaryOp::Not => "not",
            };
            format!("({s} {})", expr(operand))
        }
        ExprKind::BoolOp { op, left, right } => {
            format!(
                "({} {} {})",
                if *op == BoolOp::And { "and" } else { "or" },
                expr(left),
                expr(right)
            )
        }
        ExprKind::Compare { left, ops } => {
            let mut s = format!("(cmp {}", expr(left));
            for (op, r) in ops {
                s.push_str(&format!(" {} {}", op.symbol(), expr(r)));
            }
            s.push(')');
            s
        }
        ExprKind::Range { start, end } => format!("(.. {} {})", expr(start), expr(end)),
        ExprKind::Call { func, args } => {
            let mut s = format!("(call {}", expr(func));
            for a in args {
                s.push(' ');
                s.push_str(&arg(a));
            }
            s.push(')');
            s
        }
        ExprKind::Attribute { value, attr } => format!("(. {} {})", expr(value), attr.name),
        ExprKind::Index { value, index } => format!("(idx {} {})", expr(value), expr(index)),
        ExprKind::Slice { lower, upper, step } => {
            let f = |o: &Option<Box<Expr>>| o.as_ref().map(|b| expr(b)).unwrap_or_else(|| "_".into());
            format!("(slice {} {} {})", f(lower), f(upper), f(step))
        }
        ExprKind::Lambda { params: p, body } => format!("(lambda {} {})", params(p), expr(body)),
        ExprKind::IfExp { test, body, orelse } => format!("(ifexp {} {} {})", expr(test), expr(body), expr(orelse)),
        ExprKind::ListComp { elt, generators } => format!("(listcomp {}{})", expr(elt), comps(generators)),
        ExprKind::DictComp { key, value, generators } => {
            format!("(dictcomp {}:{}{})", expr(key), expr(value), comps(generators))
        }
        ExprKind::Set(xs) => format!("(set {})", xs.iter().map(expr).collect::<Vec<_>>().join(" ")),
        ExprKind::SetComp { elt, generators } => format!("(setcomp {}{})", expr(elt), comps(generators)),
        ExprKind::GenExp { elt, generators } => format!("(genexp {}{})", expr(elt), comps(generators)),
        ExprKind::Yield(None) => "(yield)".into(),
        ExprKind::Yield(Some(v)) => format!("(yield {})", expr(v)),
        ExprKind::YieldFrom(v) => format!("(yieldfrom {})", expr(v)),
        ExprKind::Error => "ERROR".into(),
    }
}

/// Calls `f` with the span of every statement and expression of `m`.
pub fn all_spans(m: &Module, f: &mut dyn FnMut(apsi_core::diagnostic::Span)) {
    for s in &m.body {
        stmt_spans(s, f);
    }
}

fn block_spans(b: &[Stmt], f: &mut dyn FnMut(apsi_core::diagnostic::Span)) {
    for s in b {
        stmt_spans(s, f);
    }
}

fn params_spans(p: &Params, f: &mut dyn FnMut(apsi_core::diagnostic::Span)) {
    let all = p
        .params
        .iter()
        .chain(p.vararg.iter())
        .chain(p.kwonly.iter())
        .chain(p.kwarg.iter());
    for q in all {
        f(q.span);
        f(q.name.span);
        q.annotation
            .iter()
            .chain(q.default.iter())
            .for_each(|x| expr_spans(x, f));
    }
}

fn func_spans(d: &FuncDef, f: &mut dyn FnMut(apsi_core::diagnostic::Span)) {
    f(d.span);
    f(d.name.span);
    d.decorators
        .iter()
        .chain(d.returns.iter())
        .for_each(|x| expr_spans(x, f));
    params_spans(&d.params, f);
    block_spans(&d.body, f);
}

fn stmt_spans(s: &Stmt, f: &mut dyn FnMut(apsi_core::diagnostic::Span)) {
    f(s.span);
    match &s.kind {
        StmtKind::Expr(x) | StmtKind::Return(Some(x)) | StmtKind::Raise(Some(x)) => expr_spans(x, f),
        StmtKind::Assign { targets, value } => {
            targets.iter().for_each(|x| expr_spans(x, f));
            expr_spans(value, f);
        }
        StmtKind::AugAssign { target, value, .. } => {
            expr_spans(target, f);
            expr_spans(value, f);
        }
        StmtKind::AnnAssign {
            target,
            annotation,
            value,
        } => {
            expr_spans(target, f);
            expr_spans(annotation, f);
            value.iter().for_each(|x| expr_spans(x, f));
        }
        StmtKind::If { test, body, orelse } => {
            expr_spans(test, f);
            block_spans(body, f);
            block_spans(orelse, f);
        }
        StmtKind::While { test, body, orelse } => {
            expr_spans(test, f);
            block_spans(body, f);
            block_spans(orelse, f);
        }
        StmtKind::For {
            target,
            iter,
            body,
            orelse,
            ..
        } => {
            expr_spans(target, f);
            expr_spans(iter, f);
            block_spans(body, f);
            block_spans(orelse, f);
        }
        StmtKind::Del(ts) => ts.iter().for_each(|x| expr_spans(x, f)),
        StmtKind::FuncDef(d) => func_spans(d, f),
        StmtKind::StructDef(d) => {
            f(d.span);
            f(d.name.span);
            d.decorators.iter().for_each(|x| expr_spans(x, f));
            for fl in &d.fields {
                f(fl.span);
                f(fl.name.span);
                fl.annotation
                    .iter()
                    .chain(fl.default.iter())
                    .for_each(|x| expr_spans(x, f));
            }
            d.base.iter().for_each(|x| expr_spans(x, f));
            for c in &d.consts {
                f(c.span);
                f(c.name.span);
                expr_spans(&c.value, f);
            }
            d.methods.iter().for_each(|m| func_spans(m, f));
        }
        StmtKind::Use { path, alias } => path.iter().chain(alias.iter()).for_each(|i| f(i.span)),
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finalbody,
        } => {
            block_spans(body, f);
            for h in handlers {
                f(h.span);
                h.kind.iter().for_each(|x| expr_spans(x, f));
                h.name.iter().for_each(|i| f(i.span));
                block_spans(&h.body, f);
            }
            block_spans(orelse, f);
            block_spans(finalbody, f);
        }
        StmtKind::Assert { test, msg } => {
            expr_spans(test, f);
            msg.iter().for_each(|x| expr_spans(x, f));
        }
        StmtKind::With { items, body } => {
            for i in items {
                expr_spans(&i.context, f);
                i.target.iter().for_each(|x| expr_spans(x, f));
            }
            block_spans(body, f);
        }
        StmtKind::Global(ns) | StmtKind::Nonlocal(ns) => ns.iter().for_each(|i| f(i.span)),
        _ => {}
    }
}

fn expr_spans(x: &Expr, f: &mut dyn FnMut(apsi_core::diagnostic::Span)) {
    f(x.span);
    let mut go = |e: &Expr| expr_spans(e, f);
    match &x.kind {
        ExprKind::FString(ps) => fparts(ps, &mut go),
        ExprKind::List(xs) | ExprKind::Tuple(xs) | ExprKind::Set(xs) => xs.iter().for_each(go),
        ExprKind::Dict(items) => {
            for i in items {
                match i {
                    DictItem::Pair(k, v) => {
                        go(k);
                        go(v);
                    }
                    DictItem::Spread(v) => go(v),
                }
            }
        }
        ExprKind::Starred(v) | ExprKind::UnaryOp { operand: v, .. } => go(v),
        ExprKind::BinOp { left, right, .. } | ExprKind::BoolOp { left, right, .. } => {
            go(left);
            go(right);
        }
        ExprKind::Range { start, end } => {
            go(start);
            go(end);
        }
        ExprKind::Compare { left, ops } => {
            go(left);
            ops.iter().for_each(|(_, r)| go(r));
        }
        ExprKind::Call { func, args } => {
            go(func);
            for a in args {
                match a {
                    Arg::Positional(v) | Arg::Star(v) | Arg::DoubleStar(v) | Arg::Keyword(_, v) => go(v),
                }
            }
        }
        ExprKind::Attribute { value, .. } => go(value),
        ExprKind::Index { value, index } => {
            go(value);
            go(index);
        }
        ExprKind::Slice { lower, upper, step } => {
            lower.iter().chain(upper.iter()).chain(step.iter()).for_each(|b| go(b));
        }
        ExprKind::Lambda { body, .. } => go(body),
        ExprKind::IfExp { test, body, orelse } => {
            go(test);
            go(body);
            go(orelse);
        }
        ExprKind::ListComp { elt, generators } | ExprKind::SetComp { elt, generators } => {
            go(elt);
            comp_spans(generators, &mut go);
        }
        ExprKind::DictComp { key, value, generators } => {
            go(key);
            go(value);
            comp_spans(generators, &mut go);
        }
        ExprKind::GenExp { elt, generators } => {
            go(elt);
            comp_spans(generators, &mut go);
        }
        ExprKind::Yield(Some(v)) | ExprKind::YieldFrom(v) => go(v),
        _ => {}
    }
}

fn comp_spans(gs: &[Comprehension], go: &mut dyn FnMut(&Expr)) {
    for g in gs {
        go(&g.target);
        go(&g.iter);
        g.ifs.iter().for_each(&mut *go);
    }
}

fn fparts(ps: &[FStringPart], go: &mut dyn FnMut(&Expr)) {
    for p in ps {
        if let FStringPart::Expr { expr, spec, .. } = p {
            go(expr);
            fparts(spec, go);
        }
    }
}
