//! `for`, `while`'s shared loop bookkeeping, and `parallel for` (its
//! chunk body outlined as its own function).

use super::*;

impl<'a, 'e> Compiler<'a, 'e> {
    pub(super) fn pop_loop(&mut self) -> (Vec<usize>, Vec<usize>) {
        match self.f().blocks.pop() {
            Some(Block::Loop { breaks, continues }) => (breaks, continues),
            _ => (Vec::new(), Vec::new()),
        }
    }

    /// Compile the iterable of a `for` loop or comprehension into `dst`.
    /// A call of the prelude's `zip` or `enumerate` (positional arguments
    /// only) calls `builtins::loop_zip`/`loop_enumerate` instead: the same
    /// rows taken at the same moment, handed out as an iterator, so a loop
    /// that unpacks them (`for a, b in zip(xs, ys)`) builds no tuples.
    /// Likewise `x.items()` with no arguments calls `builtins::loop_items`
    /// with `x`: a dict's pairs as rows, any other `x`'s own `items()`.
    pub(super) fn for_iterable_to(&mut self, iter: &'a Expr, dst: Reg) -> CResult<()> {
        let ExprKind::Call { func, args } = &iter.kind else {
            return self.expr_to(iter, dst);
        };
        if let (ExprKind::Attribute { value: obj, attr }, true) = (&func.kind, args.is_empty()) {
            if attr.name == "items" {
                return self.call_native_to(crate::builtins::loop_items(), &[obj], dst, iter.span);
            }
        }
        let ExprKind::Name(n) = &func.kind else {
            return self.expr_to(iter, dst);
        };
        let adapter = match n.as_str() {
            "zip" => crate::builtins::loop_zip(),
            "enumerate" if (1..=2).contains(&args.len()) => crate::builtins::loop_enumerate(),
            _ => return self.expr_to(iter, dst),
        };
        if !self.is_prelude_native(n) || !args.iter().all(|a| matches!(a, Arg::Positional(_))) {
            return self.expr_to(iter, dst);
        }
        if u16::try_from(args.len()).is_err() {
            return self.expr_to(iter, dst);
        }
        let xs: Vec<&'a Expr> = args
            .iter()
            .filter_map(|a| match a {
                Arg::Positional(x) => Some(x),
                _ => None,
            })
            .collect();
        self.call_native_to(adapter, &xs, dst, iter.span)
    }

    /// `dst = native(args…)` for a native the compiler itself puts into
    /// code (`CallK`: the function is a constant, the arguments above it).
    fn call_native_to(&mut self, native: Value, args: &[&'a Expr], dst: Reg, span: Span) -> CResult<()> {
        let n = u16::try_from(args.len()).map_err(|_| cerr(span, "too many arguments"))?;
        let m = self.mark();
        let f = self.alloc()?;
        for x in args {
            let r = self.alloc()?;
            self.expr_to(x, r)?;
        }
        let k = self.konst16(native)?;
        self.emit_at(Instr::CallK { a: f, k, n }, span);
        if f != dst {
            self.emit(Instr::Move { a: dst, b: f });
        }
        self.free_to(m);
        Ok(())
    }

    /// `dict(zip(ks, vs))` with the prelude's `dict` and `zip`: the `zip`
    /// compiles as a loop's iterable ([`Self::for_iterable_to`]: an
    /// iterator of the rows, taken at the same moment), and `dict` reads
    /// each key and value from it without building the pair's tuple
    /// (`builtins::types::update_from`). `Ok(false)`: compiled nothing.
    pub(super) fn dict_zip_call(&mut self, func: &'a Expr, args: &'a [Arg], dst: Reg, span: Span) -> CResult<bool> {
        let ([Arg::Positional(z)], ExprKind::Name(n)) = (args, &func.kind) else {
            return Ok(false);
        };
        let ExprKind::Call { func: zf, args: zargs } = &z.kind else {
            return Ok(false);
        };
        let ExprKind::Name(zn) = &zf.kind else { return Ok(false) };
        if n != "dict" || zn != "zip" || zargs.len() != 2 || !self.is_prelude_native(n) {
            return Ok(false);
        }
        self.call1_to(dst, span, |c, f| c.expr_to(func, f), |c, a| c.for_iterable_to(z, a))?;
        Ok(true)
    }

    /// `list(E)`, `sorted(E)` or `reversed(E)` with the prelude's function
    /// and `E` an expression that makes a new list (a list display, a list
    /// comprehension, or a call of the prelude's `list`, `sorted`,
    /// `reversed`, `zip` or `enumerate`): calls the variant that may use
    /// that list in place (`builtins::list_of_new`…), since nothing but the
    /// call's argument can hold it. `Ok(false)`: compiled nothing.
    pub(super) fn new_list_call(&mut self, func: &'a Expr, args: &'a [Arg], dst: Reg, span: Span) -> CResult<bool> {
        let ([Arg::Positional(x)], ExprKind::Name(n)) = (args, &func.kind) else {
            return Ok(false);
        };
        let native = match n.as_str() {
            "list" => crate::builtins::list_of_new(),
            "sorted" => crate::builtins::sorted_of_new(),
            "reversed" => crate::builtins::reversed_of_new(),
            _ => return Ok(false),
        };
        if !self.is_prelude_native(n) || !self.makes_new_list(x) {
            return Ok(false);
        }
        self.call_native_to(native, &[x], dst, span)?;
        Ok(true)
    }

    /// Does `x` always make a list no one else holds yet (or, for the
    /// prelude's `zip`/`enumerate` of lazy iterables, something that is not
    /// a list at all)?
    fn makes_new_list(&mut self, x: &'a Expr) -> bool {
        match &x.kind {
            ExprKind::List(_) | ExprKind::ListComp { .. } => true,
            ExprKind::Call { func, .. } => match &func.kind {
                ExprKind::Name(m) => {
                    matches!(m.as_str(), "list" | "sorted" | "reversed" | "zip" | "enumerate")
                        && self.is_prelude_native(m)
                }
                _ => false,
            },
            _ => false,
        }
    }

    /// Does the name `n` here mean the prelude's built-in of that name?
    pub(super) fn is_prelude_native(&mut self, n: &str) -> bool {
        self.resolve(n) == Binding::Global
            && matches!(self.env.resolve(n), GlobalRef::Const(Value::Native(f)) if &*f.name == n)
    }

    /// Is `iter` a call of the prelude's `range` (so the loop can count in registers)?
    pub(super) fn range_args(&mut self, iter: &'a Expr) -> Option<Vec<&'a Expr>> {
        match &iter.kind {
            ExprKind::Range { start, end } => Some(vec![start, end]),
            ExprKind::Call { func, args } => {
                let ExprKind::Name(n) = &func.kind else { return None };
                if n != "range" || args.is_empty() || args.len() > 3 || !self.is_prelude_native(n) {
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

    pub(super) fn loop_target_reg(&mut self, target: &'a Expr) -> CResult<(Reg, bool)> {
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

    pub(super) fn for_stmt(
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
        self.for_iterable_to(iter, it)?;
        self.emit_at(Instr::ForPrep { a: it }, iter.span);
        let (dst, direct) = self.loop_target_reg(target)?;
        // Entered at its test, which sits at the bottom (`ForLoop`): an
        // item goes back to the body, the end falls through.
        let enter = self.jmp_placeholder();
        let body_start = self.here();
        if !direct {
            self.assign_loop_item(target, dst)?;
        }
        self.f().blocks.push(Block::Loop {
            breaks: Vec::new(),
            continues: Vec::new(),
        });
        self.block(body)?;
        let (breaks, continues) = self.pop_loop();
        self.patch_here(continues);
        self.patch_here(vec![enter]);
        self.emit_at(Instr::ForLoop { a: it, b: dst }, iter.span);
        self.emit(Instr::Jmp { t: body_start as u32 });
        self.loop_else(entry, orelse)?;
        self.patch_here(breaks);
        Ok(())
    }

    /// `parallel for` (see `check::parfor`): make the chunk function, run
    /// it with `ParFor`, then combine the reduction partials in worker order.
    pub(super) fn par_for_stmt(
        &mut self,
        s: &'a Stmt,
        target: &'a Expr,
        iter: &'a Expr,
        body: &'a [Stmt],
        span: Span,
    ) -> CResult<()> {
        use crate::check::parfor::{forbidden_exit, reductions, RedOp};
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
            crate::check::scopes::PARALLEL_BODY,
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
                    // `acc += part`, as the loop body wrote it: a list
                    // reduction collects into the variable's own list.
                    self.mark_inplace();
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
    pub(super) fn par_chunk_body(&mut self, target: &'a Expr, body: &'a [Stmt], range: bool) -> CResult<()> {
        let reds: Vec<String> = crate::compile::parfor::reductions(target, body)
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
}
