//! `parallel for` (LANGUAGE.md §5): what the scope pass and the code
//! generator both need to know about one loop.
//!
//! The loop body is outlined into a chunk function
//! `<parallel for>(.lo, .hi, .step, .seq, r1 … rm)` that runs the iterations
//! `range(.lo, .hi, .step)` (the loop values themselves, or indices into the
//! tuple `.seq` for other iterables) and returns its reduction partials
//! `(r1, …, rm)`. Names the body assigns are private to the chunk; the
//! reduction variables `r1 … rm` are its parameters. The `ParFor`
//! instruction runs the chunks on the pool; the enclosing code then combines
//! the partials in worker order.
//!
//! A reduction is a variable from outside the loop that the body updates only
//! with `s += e`, only with `s *= e`, only with `s = min(s, e)` or only with
//! `s = max(s, e)` (either argument order), and binds in no other way.

use crate::diagnostic::Span;
use crate::syntax::ast::*;
use indexmap::IndexMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedOp {
    Add,
    Mul,
    /// `s = f(s, e)` with `f` the name `min` or `max`: the combine calls the same `f`.
    Call,
}

#[derive(Debug, Clone)]
pub struct Reduction<'a> {
    pub name: String,
    pub op: RedOp,
    /// The callee expression of a min/max reduction.
    pub func: Option<&'a Expr>,
}

/// The parameter names of a chunk function before the reductions.
pub const FIXED_PARAMS: [&str; 4] = [".lo", ".hi", ".step", ".seq"];

#[derive(Clone, Copy, PartialEq)]
enum Seen<'a> {
    Red(RedOp, Option<&'a str>),
    Other,
}

/// The reductions of a loop body, in order of first appearance.
pub fn reductions<'a>(target: &Expr, body: &'a [Stmt]) -> Vec<Reduction<'a>> {
    let mut seen: IndexMap<String, (Seen<'a>, Option<&'a Expr>)> = IndexMap::new();
    let mut targets = Vec::new();
    bound_names(target, &mut targets);
    for t in targets {
        seen.insert(t, (Seen::Other, None));
    }
    walk(body, &mut seen);
    seen.into_iter()
        .filter_map(|(name, (s, func))| match s {
            Seen::Red(op, _) => Some(Reduction { name, op, func }),
            Seen::Other => None,
        })
        .collect()
}

fn note<'a>(
    seen: &mut IndexMap<String, (Seen<'a>, Option<&'a Expr>)>,
    name: &str,
    s: Seen<'a>,
    func: Option<&'a Expr>,
) {
    match seen.get_mut(name) {
        None => {
            seen.insert(name.to_string(), (s, func));
        }
        Some(prev) => {
            if prev.0 != s {
                prev.0 = Seen::Other;
            }
        }
    }
}

fn bound_names(t: &Expr, out: &mut Vec<String>) {
    match &t.kind {
        ExprKind::Name(n) => out.push(n.clone()),
        ExprKind::Tuple(xs) | ExprKind::List(xs) => xs.iter().for_each(|x| bound_names(x, out)),
        ExprKind::Starred(x) => bound_names(x, out),
        _ => {}
    }
}

/// `s = min(s, e)` / `s = max(e, s)`: the callee and its name.
fn minmax_update<'a>(name: &str, value: &'a Expr) -> Option<(&'a Expr, &'a str)> {
    let ExprKind::Call { func, args } = &value.kind else {
        return None;
    };
    let ExprKind::Name(f) = &func.kind else { return None };
    if f != "min" && f != "max" {
        return None;
    }
    let [Arg::Positional(a), Arg::Positional(b)] = args.as_slice() else {
        return None;
    };
    let is_s = |e: &Expr| matches!(&e.kind, ExprKind::Name(n) if n == name);
    if is_s(a) != is_s(b) {
        Some((func, f.as_str()))
    } else {
        None
    }
}

fn walk<'a>(body: &'a [Stmt], seen: &mut IndexMap<String, (Seen<'a>, Option<&'a Expr>)>) {
    for s in body {
        match &s.kind {
            StmtKind::AugAssign { target, op, .. } => {
                if let ExprKind::Name(n) = &target.kind {
                    let r = match op {
                        BinOp::Add => Seen::Red(RedOp::Add, None),
                        BinOp::Mul => Seen::Red(RedOp::Mul, None),
                        _ => Seen::Other,
                    };
                    note(seen, n, r, None);
                }
            }
            StmtKind::Assign { targets, value } => {
                if let [t] = targets.as_slice() {
                    if let ExprKind::Name(n) = &t.kind {
                        match minmax_update(n, value) {
                            Some((func, fname)) => note(seen, n, Seen::Red(RedOp::Call, Some(fname)), Some(func)),
                            None => note(seen, n, Seen::Other, None),
                        }
                        continue;
                    }
                }
                let mut names = Vec::new();
                targets.iter().for_each(|t| bound_names(t, &mut names));
                names.iter().for_each(|n| note(seen, n, Seen::Other, None));
            }
            StmtKind::AnnAssign { target, .. } => {
                let mut names = Vec::new();
                bound_names(target, &mut names);
                names.iter().for_each(|n| note(seen, n, Seen::Other, None));
            }
            StmtKind::If { body, orelse, .. } => {
                walk(body, seen);
                walk(orelse, seen);
            }
            StmtKind::While { body, orelse, .. } => {
                walk(body, seen);
                walk(orelse, seen);
            }
            StmtKind::For {
                target, body, orelse, ..
            } => {
                let mut names = Vec::new();
                bound_names(target, &mut names);
                names.iter().for_each(|n| note(seen, n, Seen::Other, None));
                walk(body, seen);
                walk(orelse, seen);
            }
            StmtKind::Del(targets) => {
                let mut names = Vec::new();
                targets.iter().for_each(|t| bound_names(t, &mut names));
                names.iter().for_each(|n| note(seen, n, Seen::Other, None));
            }
            StmtKind::With { items, body } => {
                for it in items {
                    if let Some(t) = &it.target {
                        let mut names = Vec::new();
                        bound_names(t, &mut names);
                        names.iter().for_each(|n| note(seen, n, Seen::Other, None));
                    }
                }
                walk(body, seen);
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                walk(body, seen);
                for h in handlers {
                    if let Some(n) = &h.name {
                        note(seen, &n.name, Seen::Other, None);
                    }
                    walk(&h.body, seen);
                }
                walk(orelse, seen);
                walk(finalbody, seen);
            }
            StmtKind::FuncDef(f) => note(seen, &f.name.name, Seen::Other, None),
            StmtKind::StructDef(sd) => note(seen, &sd.name.name, Seen::Other, None),
            StmtKind::Use { path, alias } => {
                if let Some(n) = alias.as_ref().or(path.last()) {
                    note(seen, &n.name, Seen::Other, None);
                }
            }
            StmtKind::Global(ns) | StmtKind::Nonlocal(ns) => {
                ns.iter().for_each(|n| note(seen, &n.name, Seen::Other, None))
            }
            _ => {}
        }
    }
}

/// A `break` or `return` that would leave the parallel loop (the checker
/// reports these too; the compiler refuses them on its own as well).
pub fn forbidden_exit(body: &[Stmt]) -> Option<(Span, &'static str)> {
    fn go(body: &[Stmt], in_loop: bool) -> Option<(Span, &'static str)> {
        for s in body {
            let r = match &s.kind {
                StmtKind::Return(_) => Some((s.span, "return")),
                StmtKind::Break if !in_loop => Some((s.span, "break")),
                StmtKind::If { body, orelse, .. } => go(body, in_loop).or_else(|| go(orelse, in_loop)),
                // A loop's `else` belongs to the enclosing loop (its `break` leaves that one).
                StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => {
                    go(body, true).or_else(|| go(orelse, in_loop))
                }
                StmtKind::With { body, .. } => go(body, in_loop),
                StmtKind::Try {
                    body,
                    handlers,
                    orelse,
                    finalbody,
                } => go(body, in_loop)
                    .or_else(|| handlers.iter().find_map(|h| go(&h.body, in_loop)))
                    .or_else(|| go(orelse, in_loop))
                    .or_else(|| go(finalbody, in_loop)),
                _ => None,
            };
            if r.is_some() {
                return r;
            }
        }
        None
    }
    go(body, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::FileId;

    fn reds(src: &str) -> Vec<(String, RedOp)> {
        let (m, d) = crate::syntax::parse(FileId(0), src);
        assert!(d.is_empty(), "{d:?}");
        let Some(StmtKind::For { target, body, .. }) = m.body.last().map(|s| &s.kind) else {
            panic!("no for")
        };
        reductions(target, body).into_iter().map(|r| (r.name, r.op)).collect()
    }

    #[test]
    fn finds_the_four_reduction_forms() {
        let r = reds("parallel for i in range(3):\n    s += i\n    p *= i\n    lo = min(lo, i)\n    hi = max(i, hi)\n");
        assert_eq!(
            r,
            vec![
                ("s".into(), RedOp::Add),
                ("p".into(), RedOp::Mul),
                ("lo".into(), RedOp::Call),
                ("hi".into(), RedOp::Call)
            ]
        );
    }

    #[test]
    fn other_bindings_make_a_name_private() {
        let r = reds("parallel for i in range(3):\n    t = i * 2\n    s += t\n    u += 1\n    u = 0\n    i += 1\n    m = min(m, i)\n    m = max(m, i)\n");
        assert_eq!(r, vec![("s".into(), RedOp::Add)]);
    }

    #[test]
    fn break_and_return_are_refused_but_inner_loops_may_break() {
        let body = |src: &str| crate::syntax::parse(FileId(0), src).0;
        let m = body("for j in range(2):\n    break\n");
        assert!(forbidden_exit(&m.body).is_none());
        let m = body("if true:\n    break\n");
        assert_eq!(forbidden_exit(&m.body).map(|x| x.1), Some("break"));
    }
}
