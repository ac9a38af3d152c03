//! `del`, `else` on loops and set displays: the parts of code generation
//! they need beyond the rest of `emit`.
//!
//! Definite assignment with `del`: a deleted local is not certainly
//! assigned afterwards, so a later read goes through `CheckBound` and raises
//! `NameError` at run time. A block whose assignments are forgotten
//! afterwards (`scoped_defs`: loop bodies, `try`) also forgets the locals it
//! may have deleted, and a loop body is compiled as if every local deleted
//! anywhere in it were unassigned at its top (the next iteration sees the
//! deletion).

use super::*;

impl<'a, 'e> Compiler<'a, 'e> {
    /// Mark every local register in `deleted[mark..]` as not certainly assigned.
    pub(super) fn undefine_deleted_since(&mut self, mark: usize) {
        let f = self.f();
        for i in mark..f.deleted.len() {
            let r = f.deleted[i] as usize;
            if let Some(d) = f.defined.get_mut(r) {
                *d = false;
            }
        }
    }

    /// At the top of a loop: the locals its body deletes (at any depth) are
    /// not certainly assigned in the body or after it. Returns what is
    /// certainly assigned whenever the loop ends normally, for its `else`.
    pub(super) fn loop_entry_defs(&mut self, body: &'a [Stmt]) -> Vec<bool> {
        let mut names = Vec::new();
        deleted_names(body, &mut names);
        for n in names {
            if self.resolve(n) == Binding::Local {
                if let Some(r) = self.local_reg(n) {
                    if let Some(d) = self.f().defined.get_mut(r as usize) {
                        *d = false;
                    }
                }
            }
        }
        self.f().defined.clone()
    }

    /// A loop's `else` block, compiled where the loop ends without `break`.
    pub(super) fn loop_else(&mut self, entry: Vec<bool>, orelse: &'a [Stmt]) -> CResult<()> {
        if orelse.is_empty() {
            return Ok(());
        }
        self.f().defined = entry;
        self.block(orelse)
    }

    /// `{a, b, …}`.
    pub(super) fn set_display(&mut self, xs: &'a [Expr], dst: Reg, span: Span) -> CResult<()> {
        if let Some(x) = xs.iter().find(|x| matches!(x.kind, ExprKind::Starred(_))) {
            return Err(cerr(
                x.span,
                "a starred expression `*x` is not allowed in a set display",
            ));
        }
        let n = u16::try_from(xs.len()).map_err(|_| cerr(span, "too many elements in one set display"))?;
        let b = self.alloc_n(xs.len())?;
        for (i, x) in xs.iter().enumerate() {
            self.expr_to(x, b + i as u16)?;
        }
        self.emit_at(Instr::BuildSet { a: dst, b, n }, span);
        Ok(())
    }

    /// One target of `del`.
    pub(super) fn del_target(&mut self, t: &'a Expr) -> CResult<()> {
        let span = t.span;
        match &t.kind {
            ExprKind::Name(n) => {
                let k = self.str_const16(n)?;
                match self.resolve(n) {
                    Binding::Local => {
                        let Some(r) = self.local_reg(n) else {
                            return Err(cerr(span, format!("internal: no register for '{n}'")));
                        };
                        self.emit_at(Instr::DelLocal { a: r, k }, span);
                        if let Some(d) = self.f().defined.get_mut(r as usize) {
                            *d = false;
                        }
                        self.f().deleted.push(r);
                    }
                    Binding::Cell(c) => {
                        self.emit_at(Instr::DelCell { c, k }, span);
                    }
                    Binding::Free(c) => {
                        self.emit_at(Instr::DelFree { c, k }, span);
                    }
                    Binding::Global => {
                        let slot = self.env.slot_for_write(n);
                        let g = self.global_index(slot);
                        self.emit_at(Instr::DelGlobal { g }, span);
                    }
                }
                Ok(())
            }
            ExprKind::Tuple(xs) | ExprKind::List(xs) => {
                for x in xs {
                    self.del_target(x)?;
                }
                Ok(())
            }
            ExprKind::Index { value, index } => {
                let m = self.mark();
                let o = self.expr_reg(value)?;
                let i = self.expr_reg(index)?;
                self.emit_at(Instr::DelIndex { a: o, b: i }, span);
                self.free_to(m);
                Ok(())
            }
            ExprKind::Attribute { attr, .. } => Err(Box::new(
                Diagnostic::new(ErrorKind::AttributeError, del_attr_message(&attr.name)).at(attr.span),
            )),
            _ => Err(cerr(span, "cannot delete this expression")),
        }
    }
}

/// The error for `del obj.attr` (the checker reports it before running).
pub use crate::check::del_attr_message;

/// The names a block deletes with `del`, at any depth of compound
/// statements (not inside nested functions, which have their own locals).
pub(crate) fn deleted_names<'s>(body: &'s [Stmt], out: &mut Vec<&'s str>) {
    fn target<'s>(t: &'s Expr, out: &mut Vec<&'s str>) {
        match &t.kind {
            ExprKind::Name(n) => out.push(n),
            ExprKind::Tuple(xs) | ExprKind::List(xs) => xs.iter().for_each(|x| target(x, out)),
            _ => {}
        }
    }
    for s in body {
        match &s.kind {
            StmtKind::Del(ts) => ts.iter().for_each(|t| target(t, out)),
            StmtKind::If { body, orelse, .. }
            | StmtKind::While { body, orelse, .. }
            | StmtKind::For { body, orelse, .. } => {
                deleted_names(body, out);
                deleted_names(orelse, out);
            }
            StmtKind::With { body, .. } => deleted_names(body, out),
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                deleted_names(body, out);
                for h in handlers {
                    deleted_names(&h.body, out);
                }
                deleted_names(orelse, out);
                deleted_names(finalbody, out);
            }
            _ => {}
        }
    }
}
