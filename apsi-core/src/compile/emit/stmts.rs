//! Assignment targets and statements (loops, handlers and definitions
//! have their own files).

use super::*;

impl<'a, 'e> Compiler<'a, 'e> {
    // ----------------------------------------------------------- assignment

    pub(super) fn assign(&mut self, target: &'a Expr, src: Reg) -> CResult<()> {
        self.assign_as(target, src, false)
    }

    /// Assign a `for` loop's or comprehension's item to its target. A row
    /// unpacked into locals stays `UnpackRegs`, consecutive or not: the
    /// dispatch loop fuses that instruction with the step of a `zip` or
    /// `enumerate` (`for_step!` in `vm/exec.rs`; teaching it `Unpack` as
    /// well cost every call 3% more instructions, by the loop's register
    /// allocation).
    pub(super) fn assign_loop_item(&mut self, target: &'a Expr, src: Reg) -> CResult<()> {
        self.assign_as(target, src, true)
    }

    fn assign_as(&mut self, target: &'a Expr, src: Reg, loop_item: bool) -> CResult<()> {
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
                            // Consecutive registers in order (locals are
                            // numbered as they are first assigned, so
                            // `a, b, c = t` usually is): `Unpack` straight
                            // into them, with no list of registers to read.
                            let ins = if !loop_item && regs.windows(2).all(|w| w[1] == w[0] + 1) {
                                Instr::Unpack { a: regs[0], b: src, n }
                            } else {
                                let k =
                                    self.konst16(Value::tuple(regs.iter().map(|r| Value::Int(*r as i64)).collect()))?;
                                Instr::UnpackRegs { b: src, k, n }
                            };
                            self.emit_at(ins, span);
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

    pub(super) fn block(&mut self, body: &'a [Stmt]) -> CResult<()> {
        for s in body {
            self.stmt(s)?;
        }
        Ok(())
    }

    pub(super) fn stmt(&mut self, s: &'a Stmt) -> CResult<()> {
        let m = self.mark();
        self.f().span = s.span;
        let r = self.stmt_inner(s);
        self.free_to(m);
        r
    }

    pub(super) fn stmt_inner(&mut self, s: &'a Stmt) -> CResult<()> {
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
                if !self.lazy_def(fd)? {
                    let dst = self.def_value(fd)?;
                    self.store_name(&fd.name.name, dst, fd.name.span)?;
                }
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

    pub(super) fn assign_stmt(&mut self, targets: &'a [Expr], value: &'a Expr) -> CResult<()> {
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
            // `obj.attr = x` / `obj[i] = x` with `x` a local in a register:
            // stored from that register, not copied into a temporary first.
            // The value is still read first (its unbound check comes before
            // the target's parts run, as in Python), and nothing the target's
            // parts evaluate can rebind a local held in a register (Apsi has
            // no `:=`; a name a closure rebinds lives in a cell).
            if matches!(t.kind, ExprKind::Attribute { .. } | ExprKind::Index { .. }) {
                if let ExprKind::Name(n) = &value.kind {
                    if self.resolve(n) == Binding::Local && self.local_reg(n).is_some() {
                        let m = self.mark();
                        let v = self.expr_reg(value)?;
                        self.assign(t, v)?;
                        self.free_to(m);
                        return Ok(());
                    }
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

    pub(super) fn binop_into(&mut self, op: BinOp, dst: Reg, l: Reg, value: &'a Expr, span: Span) -> CResult<()> {
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
    pub(super) fn emit_add_imm(&mut self, dst: Reg, l: Reg, v: i16, from_sub: bool, span: Span) {
        if from_sub {
            let pc = self.here() as u32;
            self.f().sub_addi.push(pc);
        }
        self.emit_at(Instr::AddI { a: dst, b: l, v }, span);
    }

    /// The operation just emitted belongs to an augmented assignment.
    pub(super) fn mark_inplace(&mut self) {
        let pc = self.f().instrs.len().saturating_sub(1) as u32;
        self.f().inplace.push(pc);
    }

    pub(super) fn aug_assign(&mut self, target: &'a Expr, op: BinOp, value: &'a Expr, span: Span) -> CResult<()> {
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
}
