//! Leaving blocks (`return`/`break`/`continue` through `finally`), `try`,
//! and `with`.

use super::*;

impl<'a, 'e> Compiler<'a, 'e> {
    /// Leave every block above `keep` (innermost first): pop handlers and
    /// run finally bodies, as `return`/`break`/`continue` must.
    pub(super) fn unwind_blocks(&mut self, keep: usize) -> CResult<()> {
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

    pub(super) fn try_stmt(
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
    pub(super) fn with_exit_call(&mut self, ctx: Reg, exc: Option<Reg>) -> CResult<()> {
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

    pub(super) fn with_stmt(&mut self, items: &'a [WithItem], body: &'a [Stmt], span: Span) -> CResult<()> {
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
}
