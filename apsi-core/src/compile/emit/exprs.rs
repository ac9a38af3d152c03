//! Expressions: into a destination register (`expr_to`) or the register
//! that already holds them (`expr_reg`); displays, f-strings, calls, and
//! conditions compiled to jumps.

use super::*;

impl<'a, 'e> Compiler<'a, 'e> {
    // ---------------------------------------------------------- expressions

    /// Evaluate into a register that already holds the value if possible
    /// (a local), else into a new temporary.
    pub(super) fn expr_reg(&mut self, e: &'a Expr) -> CResult<Reg> {
        if let ExprKind::Name(n) = &e.kind {
            if self.resolve(n) == Binding::Local {
                if let Some(r) = self.local_reg(n) {
                    self.check_bound(n, r, e.span)?;
                    return Ok(r);
                }
            }
        }
        let r = self.alloc()?;
        self.expr_to(e, r)?;
        Ok(r)
    }

    pub(super) fn load_int(&mut self, dst: Reg, i: i64) -> CResult<()> {
        if let Ok(v) = i32::try_from(i) {
            self.emit(Instr::LoadInt { a: dst, v });
        } else {
            let k = self.konst(Value::Int(i))?;
            self.emit(Instr::LoadK { a: dst, k });
        }
        Ok(())
    }

    pub(super) fn expr_to(&mut self, e: &'a Expr, dst: Reg) -> CResult<()> {
        let m = self.mark();
        let r = self.expr_inner(e, dst);
        self.free_to(m);
        r
    }

    pub(super) fn expr_inner(&mut self, e: &'a Expr, dst: Reg) -> CResult<()> {
        let span = e.span;
        self.f().span = span;
        match &e.kind {
            ExprKind::Int(i) => self.load_int(dst, *i)?,
            ExprKind::Float(x) => {
                let k = self.konst(Value::Float(*x))?;
                self.emit(Instr::LoadK { a: dst, k });
            }
            ExprKind::Str(s) => {
                let k = self.konst(Value::str(s.as_str()))?;
                self.emit(Instr::LoadK { a: dst, k });
            }
            ExprKind::Bytes(data) => {
                let k = self.konst(Value::bytes(data.clone()))?;
                self.emit(Instr::LoadK { a: dst, k });
            }
            ExprKind::Bool(b) => {
                self.emit(Instr::LoadBool { a: dst, v: *b });
            }
            ExprKind::None => {
                self.emit(Instr::LoadNone { a: dst });
            }
            ExprKind::Error => return Err(cerr(span, "cannot run a program with syntax errors")),
            ExprKind::Name(n) => self.load_name(n, dst, span)?,
            ExprKind::FString(parts) => self.fstring(parts, dst, span)?,
            ExprKind::List(xs) => self.sequence(xs, dst, false, span)?,
            ExprKind::Tuple(xs) => self.sequence(xs, dst, true, span)?,
            ExprKind::Dict(items) => self.dict(items, dst, span)?,
            ExprKind::Set(xs) => self.set_display(xs, dst, span)?,
            ExprKind::Starred(_) => {
                return Err(cerr(
                    span,
                    "a starred expression `*x` is only allowed in a list, tuple or call",
                ))
            }
            ExprKind::BinOp { op, left, right } => {
                if let Some(v) = fold(e) {
                    match v {
                        Folded::Int(i) => self.load_int(dst, i)?,
                        Folded::Float(x) => {
                            let k = self.konst(Value::Float(x))?;
                            self.emit(Instr::LoadK { a: dst, k });
                        }
                    }
                    return Ok(());
                }
                let l = self.expr_reg(left)?;
                // `x * y + z`: the product's index, to mark it for fusion.
                let product = match (op, &left.kind, self.f().instrs.last()) {
                    (BinOp::Add, ExprKind::BinOp { op: BinOp::Mul, .. }, Some(&Instr::Mul { a, .. })) if a == l => {
                        Some(self.here() - 1)
                    }
                    _ => None,
                };
                if matches!(op, BinOp::Add | BinOp::Sub) {
                    if let Some(v) = small_int(right) {
                        let v = if *op == BinOp::Sub { v.checked_neg() } else { Some(v) };
                        if let Some(v) = v {
                            self.emit_add_imm(dst, l, v, *op == BinOp::Sub, span);
                            return Ok(());
                        }
                    }
                }
                let r = self.expr_reg(right)?;
                if let Some(Instr::Mul { a, b, c }) = product.and_then(|i| self.f().instrs.get(i).copied()) {
                    if let Some(slot) = product.and_then(|i| self.f().instrs.get_mut(i)) {
                        *slot = Instr::MulT { a, b, c };
                    }
                }
                let ins = match op {
                    BinOp::Add => Instr::Add { a: dst, b: l, c: r },
                    BinOp::Sub => Instr::Sub { a: dst, b: l, c: r },
                    BinOp::Mul => Instr::Mul { a: dst, b: l, c: r },
                    op => Instr::Bin {
                        op: *op,
                        a: dst,
                        b: l,
                        c: r,
                    },
                };
                self.emit_at(ins, span);
            }
            ExprKind::UnaryOp { op, operand } => {
                if let Some(v) = fold(e) {
                    match v {
                        Folded::Int(i) => self.load_int(dst, i)?,
                        Folded::Float(x) => {
                            let k = self.konst(Value::Float(x))?;
                            self.emit(Instr::LoadK { a: dst, k });
                        }
                    }
                    return Ok(());
                }
                let r = self.expr_reg(operand)?;
                self.emit_at(Instr::Unary { op: *op, a: dst, b: r }, span);
            }
            ExprKind::BoolOp { op, left, right } => {
                self.expr_to(left, dst)?;
                let site = match op {
                    BoolOp::And => self.emit(Instr::JmpIfNot { a: dst, t: 0 }),
                    BoolOp::Or => self.emit(Instr::JmpIf { a: dst, t: 0 }),
                };
                self.expr_to(right, dst)?;
                self.patch_here(vec![site]);
            }
            ExprKind::Compare { left, ops } => {
                let mut l = self.expr_reg(left)?;
                // One comparison with a small int: the int is the
                // instruction's (no register loaded with it).
                if let [(op, right)] = &ops[..] {
                    if let Some(v) = small_int_operand(*op, right) {
                        self.emit_at(
                            Instr::CmpI {
                                op: *op,
                                a: dst,
                                b: l,
                                v,
                            },
                            span,
                        );
                        return Ok(());
                    }
                }
                let mut exits = Vec::new();
                for (i, (op, x)) in ops.iter().enumerate() {
                    let last = i + 1 == ops.len();
                    let r = if last {
                        self.expr_reg(x)?
                    } else {
                        self.expr_tmp_keep(x)?
                    };
                    self.emit_at(
                        Instr::Cmp {
                            op: *op,
                            a: dst,
                            b: l,
                            c: r,
                        },
                        span,
                    );
                    if !last {
                        exits.push(self.emit(Instr::JmpIfNot { a: dst, t: 0 }));
                    }
                    l = r;
                }
                self.patch_here(exits);
            }
            ExprKind::Range { start, end } => {
                let a = self.expr_reg(start)?;
                let b = self.expr_reg(end)?;
                self.emit_at(Instr::BuildRange { a: dst, b: a, c: b }, span);
            }
            ExprKind::Call { func, args } => self.call(func, args, dst, span)?,
            ExprKind::Attribute { value, attr } => {
                let o = self.expr_reg(value)?;
                let k = self.str_const16(&attr.name)?;
                self.emit_at(Instr::GetAttr { a: dst, b: o, k }, span);
            }
            ExprKind::Index { value, index } => {
                let o = self.expr_reg(value)?;
                let i = self.expr_reg(index)?;
                self.emit_at(Instr::GetIndex { a: dst, b: o, c: i }, span);
            }
            ExprKind::Slice { lower, upper, step } => {
                let b = self.alloc_n(3)?;
                for (i, part) in [lower, upper, step].into_iter().enumerate() {
                    match part {
                        Some(x) => self.expr_to(x, b + i as u16)?,
                        None => {
                            self.emit(Instr::LoadNone { a: b + i as u16 });
                        }
                    }
                }
                self.emit_at(Instr::BuildSlice { a: dst, b }, span);
            }
            ExprKind::Lambda { params, body } => {
                let sid = self
                    .table
                    .of_expr(e)
                    .ok_or_else(|| cerr(span, "internal: lambda without scope"))?;
                self.make_function(sid, "<lambda>", params, FnBody::Expr(body), dst, span)?;
            }
            ExprKind::IfExp { test, body, orelse } => {
                let f = self.cond_jump(test, false)?;
                self.expr_to(body, dst)?;
                let j = self.jmp_placeholder();
                self.patch_here(f);
                self.expr_to(orelse, dst)?;
                self.patch_here(vec![j]);
            }
            ExprKind::ListComp { generators, .. }
            | ExprKind::DictComp { generators, .. }
            | ExprKind::SetComp { generators, .. } => {
                let sid = self
                    .table
                    .of_expr(e)
                    .ok_or_else(|| cerr(span, "internal: comprehension without scope"))?;
                let first = generators
                    .first()
                    .ok_or_else(|| cerr(span, "a comprehension needs a `for`"))?;
                let f = self.alloc()?;
                self.make_function(sid, "<comprehension>", &NO_PARAMS, FnBody::Comp(e), f, span)?;
                let a = self.alloc()?;
                self.for_iterable_to(&first.iter, a)?;
                self.emit_at(Instr::Call { a: f, n: 1 }, span);
                if f != dst {
                    self.emit(Instr::Move { a: dst, b: f });
                }
            }
            ExprKind::GenExp { generators, .. } => {
                // As a comprehension, but the function is a generator and its
                // outermost iterable is turned into an iterator now (Python
                // raises for a non-iterable at creation, not at the first step).
                let sid = self
                    .table
                    .of_expr(e)
                    .ok_or_else(|| cerr(span, "internal: generator expression without scope"))?;
                let first = generators
                    .first()
                    .ok_or_else(|| cerr(span, "a generator expression needs a `for`"))?;
                let f = self.alloc()?;
                self.make_function(sid, "<genexpr>", &NO_PARAMS, FnBody::Comp(e), f, span)?;
                let a = self.alloc()?;
                self.expr_to(&first.iter, a)?;
                self.emit_at(Instr::IterPrep { a }, first.iter.span);
                self.emit_at(Instr::Call { a: f, n: 1 }, span);
                if f != dst {
                    self.emit(Instr::Move { a: dst, b: f });
                }
            }
            ExprKind::Yield(v) => {
                self.check_yield(span)?;
                let m = self.mark();
                let r = match v {
                    Some(v) => self.expr_reg(v)?,
                    None => {
                        let r = self.alloc()?;
                        self.emit(Instr::LoadNone { a: r });
                        r
                    }
                };
                self.emit_at(Instr::Yield { a: r, b: dst }, span);
                self.free_to(m);
            }
            ExprKind::YieldFrom(v) => {
                // it = iter(v); for x in it: yield x; dst = its return value
                // (ForNext leaves a finished generator's return value, or
                // none, in it+1).
                self.check_yield(span)?;
                let m = self.mark();
                let it = self.alloc_n(2)?;
                self.expr_to(v, it)?;
                self.emit_at(Instr::GetIter { a: it, b: it }, v.span);
                self.emit_at(Instr::ForPrep { a: it }, v.span);
                let x = self.alloc()?;
                let top = self.here();
                self.emit_at(Instr::ForNext { a: it, b: x }, span);
                let exit = self.jmp_placeholder();
                self.emit_at(Instr::Yield { a: x, b: x }, span);
                self.emit(Instr::Jmp { t: top as u32 });
                self.patch_here(vec![exit]);
                self.emit(Instr::Move { a: dst, b: it + 1 });
                self.free_to(m);
            }
        }
        Ok(())
    }

    /// `yield` compiles only in a generator function's own body (the
    /// checker reports the other places first, with more help).
    pub(super) fn check_yield(&mut self, span: Span) -> CResult<()> {
        let sc = self.table.scope(self.f().scope);
        if sc.generator && sc.kind == crate::check::scopes::ScopeKind::Function {
            return Ok(());
        }
        let msg = if sc.name == crate::check::scopes::PARALLEL_BODY {
            "'yield' is not allowed inside 'parallel for'"
        } else {
            "'yield' outside function"
        };
        Err(cerr(span, msg))
    }

    /// A temporary that stays allocated after the call (for chained comparisons).
    pub(super) fn expr_tmp_keep(&mut self, e: &'a Expr) -> CResult<Reg> {
        let r = self.alloc()?;
        self.expr_to(e, r)?;
        Ok(r)
    }

    pub(super) fn sequence(&mut self, xs: &'a [Expr], dst: Reg, tuple: bool, span: Span) -> CResult<()> {
        if xs.iter().any(|x| matches!(x.kind, ExprKind::Starred(_))) {
            let l = self.alloc()?;
            self.emit(Instr::BuildList { a: l, b: l, n: 0 });
            for x in xs {
                match &x.kind {
                    ExprKind::Starred(inner) => {
                        let v = self.expr_reg(inner)?;
                        self.emit_at(Instr::ListExtend { a: l, b: v }, x.span);
                    }
                    _ => {
                        let v = self.expr_reg(x)?;
                        self.emit(Instr::ListAppend { a: l, b: v });
                    }
                }
            }
            if tuple {
                self.emit(Instr::BuildTuple {
                    a: dst,
                    b: l,
                    n: u16::MAX,
                });
            } else {
                self.emit(Instr::Move { a: dst, b: l });
            }
            return Ok(());
        }
        // (u16::MAX is BuildTuple's "convert a list" marker.)
        let n = u16::try_from(xs.len())
            .ok()
            .filter(|&n| n < u16::MAX)
            .ok_or_else(|| cerr(span, "too many elements in one display"))?;
        let b = self.alloc_n(xs.len())?;
        for (i, x) in xs.iter().enumerate() {
            self.expr_to(x, b + i as u16)?;
        }
        self.f().span = span;
        if tuple {
            self.emit(Instr::BuildTuple { a: dst, b, n });
        } else {
            self.emit(Instr::BuildList { a: dst, b, n });
        }
        Ok(())
    }

    pub(super) fn dict(&mut self, items: &'a [DictItem], dst: Reg, span: Span) -> CResult<()> {
        if items.iter().any(|i| matches!(i, DictItem::Spread(_))) {
            let d = self.alloc()?;
            self.emit(Instr::BuildDict { a: d, b: d, n: 0 });
            for it in items {
                match it {
                    DictItem::Pair(k, v) => {
                        let kr = self.expr_reg(k)?;
                        let vr = self.expr_reg(v)?;
                        self.emit_at(Instr::DictSet { a: d, b: kr, c: vr }, k.span);
                    }
                    DictItem::Spread(x) => {
                        let v = self.expr_reg(x)?;
                        self.emit_at(Instr::DictUpdate { a: d, b: v }, x.span);
                    }
                }
            }
            self.emit(Instr::Move { a: dst, b: d });
            return Ok(());
        }
        let n = u16::try_from(items.len()).map_err(|_| cerr(span, "too many entries in one dict display"))?;
        let b = self.alloc_n(items.len() * 2)?;
        for (i, it) in items.iter().enumerate() {
            if let DictItem::Pair(k, v) = it {
                self.expr_to(k, b + 2 * i as u16)?;
                self.expr_to(v, b + 2 * i as u16 + 1)?;
            }
        }
        self.emit_at(Instr::BuildDict { a: dst, b, n }, span);
        Ok(())
    }

    pub(super) fn fstring(&mut self, parts: &'a [FStringPart], dst: Reg, span: Span) -> CResult<()> {
        if parts.is_empty() {
            let k = self.konst(Value::str(""))?;
            self.emit(Instr::LoadK { a: dst, k });
            return Ok(());
        }
        if let [FStringPart::Literal(s)] = parts {
            let k = self.konst(Value::str(s.as_str()))?;
            self.emit(Instr::LoadK { a: dst, k });
            return Ok(());
        }
        let mut regs = Vec::new();
        for p in parts {
            match p {
                FStringPart::Literal(s) => {
                    let r = self.alloc()?;
                    let k = self.konst(Value::str(s.as_str()))?;
                    self.emit(Instr::LoadK { a: r, k });
                    regs.push(r);
                }
                FStringPart::Expr {
                    expr,
                    conversion,
                    spec,
                    debug_text,
                } => {
                    if let Some(t) = debug_text {
                        let r = self.alloc()?;
                        let k = self.konst(Value::str(t.as_str()))?;
                        self.emit(Instr::LoadK { a: r, k });
                        regs.push(r);
                    }
                    let out = self.alloc()?;
                    regs.push(out);
                    let v = self.expr_reg(expr)?;
                    let conv = match conversion {
                        Some('r') => Some(true),
                        Some('s') => Some(false),
                        _ if debug_text.is_some() && spec.is_empty() => Some(true),
                        _ => None,
                    };
                    let v = match conv {
                        Some(true) => {
                            self.emit_at(Instr::ToRepr { a: out, b: v }, expr.span);
                            out
                        }
                        Some(false) => {
                            self.emit_at(Instr::ToStr { a: out, b: v }, expr.span);
                            out
                        }
                        None => v,
                    };
                    if spec.is_empty() {
                        if conv.is_none() {
                            self.emit_at(Instr::ToStr { a: out, b: v }, expr.span);
                        }
                    } else {
                        let s = self.alloc()?;
                        self.fstring(spec, s, span)?;
                        self.emit_at(Instr::Format { a: out, b: v, c: s }, expr.span);
                    }
                    // Release the scratch registers above `out`.
                    self.free_to(out + 1);
                }
            }
        }
        // The parts were allocated one after another.
        let b = regs[0];
        let n = regs.len() as u16;
        self.emit_at(Instr::Concat { a: dst, b, n }, span);
        Ok(())
    }

    pub(super) fn call(&mut self, func: &'a Expr, args: &'a [Arg], dst: Reg, span: Span) -> CResult<()> {
        if let (ExprKind::Name(n), []) = (&func.kind, args) {
            if n == "super" && self.resolve(n) == Binding::Global {
                return self.super_call(dst, span);
            }
        }
        // `sum(e for x in xs)` and the like: no generator (`defs.rs`).
        if self.genexp_call(func, args, dst, span)? {
            return Ok(());
        }
        // `dict(zip(ks, vs))`: no tuple per pair (`loops.rs`).
        if self.dict_zip_call(func, args, dst, span)? {
            return Ok(());
        }
        // `list(reversed(xs))`: a new list used in place, not copied (`loops.rs`).
        if self.new_list_call(func, args, dst, span)? {
            return Ok(());
        }
        // `str(x)` and `len(x)` of the prelude are one instruction each.
        if let (ExprKind::Name(n), [Arg::Positional(x)]) = (&func.kind, args) {
            if (n == "str" || n == "len") && self.is_prelude_native(n) {
                let r = self.expr_reg(x)?;
                let ins = if n == "str" {
                    Instr::ToStr { a: dst, b: r }
                } else {
                    Instr::Len { a: dst, b: r }
                };
                self.emit_at(ins, span);
                return Ok(());
            }
        }
        // `isinstance(x, T)` of the prelude is one instruction.
        if let (ExprKind::Name(n), [Arg::Positional(x), Arg::Positional(t)]) = (&func.kind, args) {
            if n == "isinstance" && self.is_prelude_native(n) {
                let b = self.expr_reg(x)?;
                let c = self.expr_reg(t)?;
                self.emit_at(Instr::IsInstance { a: dst, b, c }, span);
                return Ok(());
            }
        }
        // `xs.append(v)` on a local: one instruction, no receiver copy.
        if let (ExprKind::Attribute { value, attr }, [Arg::Positional(x)]) = (&func.kind, args) {
            if let ExprKind::Name(n) = &value.kind {
                if attr.name == "append" && self.resolve(n) == Binding::Local {
                    if let Some(b) = self.local_reg(n) {
                        self.check_bound(n, b, value.span)?;
                        let c = self.expr_reg(x)?;
                        let mv = !self.is_local_reg(c);
                        self.emit_at(Instr::AppendTo { a: dst, b, c, mv }, span);
                        return Ok(());
                    }
                }
            }
        }
        let general = args.iter().any(|a| matches!(a, Arg::Star(_) | Arg::DoubleStar(_)));
        let has_kw = args.iter().any(|a| matches!(a, Arg::Keyword(..)));
        // The callee register: reuse `dst` when it is the newest temporary.
        let f = if dst + 1 == self.mark() && !self.is_local_reg(dst) {
            dst
        } else {
            self.alloc()?
        };
        if general {
            self.expr_to(func, f)?;
            let l = self.alloc()?;
            let d = self.alloc()?;
            self.emit(Instr::BuildList { a: l, b: l, n: 0 });
            let mut any_kw = false;
            for a in args {
                match a {
                    Arg::Positional(x) => {
                        let v = self.expr_reg(x)?;
                        self.emit(Instr::ListAppend { a: l, b: v });
                    }
                    Arg::Star(x) => {
                        let v = self.expr_reg(x)?;
                        self.emit_at(Instr::ListExtend { a: l, b: v }, x.span);
                    }
                    _ => any_kw = true,
                }
            }
            if any_kw {
                self.emit(Instr::BuildDict { a: d, b: d, n: 0 });
                for a in args {
                    let m = self.mark();
                    match a {
                        Arg::Keyword(name, x) => {
                            let k = self.alloc()?;
                            let kc = self.konst(Value::str(name.name.as_str()))?;
                            self.emit(Instr::LoadK { a: k, k: kc });
                            let v = self.expr_reg(x)?;
                            self.emit(Instr::DictSet { a: d, b: k, c: v });
                        }
                        Arg::DoubleStar(x) => {
                            let v = self.expr_reg(x)?;
                            self.emit_at(Instr::DictUpdate { a: d, b: v }, x.span);
                        }
                        _ => {}
                    }
                    self.free_to(m);
                }
            } else {
                self.emit(Instr::LoadNone { a: d });
            }
            self.emit_at(Instr::CallEx { a: f }, span);
        } else {
            let npos = args.iter().filter(|a| matches!(a, Arg::Positional(_))).count();
            let n = u16::try_from(npos).map_err(|_| cerr(span, "too many arguments"))?;
            enum Kind {
                Plain,
                Global(u16),
                Method(u16),
                Super(u16),
                Const(u16),
            }
            let mut kind = Kind::Plain;
            match &func.kind {
                // `super().name(args…)`: `self` is the receiver (`CallSuper`).
                ExprKind::Attribute { value, attr } if !has_kw && self.is_super_call(value) => {
                    let recv = self.alloc()?;
                    let (owner, self_name) = self.method_context().unwrap_or_default();
                    self.load_name(&self_name, recv, value.span)?;
                    let pair = Value::tuple(vec![Value::str(owner), Value::str(attr.name.as_str())]);
                    kind = Kind::Super(self.konst16(pair)?);
                }
                ExprKind::Attribute { value, attr } if !has_kw => {
                    let recv = self.alloc()?;
                    self.expr_to(value, recv)?;
                    kind = Kind::Method(self.str_const16(&attr.name)?);
                }
                ExprKind::Name(name) if self.resolve(name) == Binding::Global => match self.env.resolve(name) {
                    GlobalRef::Const(v) => {
                        let k = self.konst(v)?;
                        match u16::try_from(k) {
                            Ok(k16) if !has_kw => kind = Kind::Const(k16),
                            _ => {
                                self.emit(Instr::LoadK { a: f, k });
                            }
                        }
                    }
                    GlobalRef::Slot(s) => {
                        let g = self.global_index(s);
                        match u16::try_from(g) {
                            Ok(g16) if !has_kw => kind = Kind::Global(g16),
                            _ => {
                                self.emit_at(Instr::GetGlobal { a: f, g }, func.span);
                            }
                        }
                    }
                },
                _ => self.expr_to(func, f)?,
            }
            for a in args {
                if let Arg::Positional(x) = a {
                    let r = self.alloc()?;
                    self.expr_to(x, r)?;
                }
            }
            if has_kw {
                let mut names = Vec::new();
                for a in args {
                    if let Arg::Keyword(name, x) = a {
                        let r = self.alloc()?;
                        self.expr_to(x, r)?;
                        names.push(Value::str(name.name.as_str()));
                    }
                }
                let k = self.konst16(Value::tuple(names))?;
                self.emit_at(Instr::CallKw { a: f, n, k }, span);
            } else {
                let ins = match kind {
                    Kind::Plain => Instr::Call { a: f, n },
                    Kind::Global(g) => Instr::CallGlobal { a: f, g, n },
                    Kind::Method(k) => Instr::CallMethod { a: f, k, n },
                    Kind::Super(k) => Instr::CallSuper { a: f, k, n },
                    Kind::Const(k) => Instr::CallK { a: f, k, n },
                };
                self.emit_at(ins, span);
            }
        }
        if f != dst {
            self.emit(Instr::Move { a: dst, b: f });
        }
        Ok(())
    }

    pub(super) fn is_local_reg(&mut self, r: Reg) -> bool {
        self.f().locals.values().any(|&x| x == r)
    }

    /// Compile a condition; returns the jump sites taken when its truth equals `jump_if`.
    pub(super) fn cond_jump(&mut self, e: &'a Expr, jump_if: bool) -> CResult<Vec<usize>> {
        let m = self.mark();
        let r = self.cond_inner(e, jump_if);
        self.free_to(m);
        r
    }

    pub(super) fn cond_inner(&mut self, e: &'a Expr, jump_if: bool) -> CResult<Vec<usize>> {
        match &e.kind {
            ExprKind::Bool(b) => {
                if *b == jump_if {
                    Ok(vec![self.jmp_placeholder()])
                } else {
                    Ok(vec![])
                }
            }
            ExprKind::UnaryOp {
                op: UnaryOp::Not,
                operand,
            } => self.cond_jump(operand, !jump_if),
            ExprKind::BoolOp { op, left, right } => match (op, jump_if) {
                (BoolOp::And, false) | (BoolOp::Or, true) => {
                    let mut a = self.cond_jump(left, jump_if)?;
                    a.extend(self.cond_jump(right, jump_if)?);
                    Ok(a)
                }
                _ => {
                    let skip = self.cond_jump(left, !jump_if)?;
                    let a = self.cond_jump(right, jump_if)?;
                    self.patch_here(skip);
                    Ok(a)
                }
            },
            // `x is none`, `x is not none`: one test, no `none` loaded.
            ExprKind::Compare { left, ops }
                if ops.len() == 1
                    && matches!(ops[0].0, CmpOp::Is | CmpOp::IsNot)
                    && matches!(ops[0].1.kind, ExprKind::None) =>
            {
                let a = self.expr_reg(left)?;
                let jt = (ops[0].0 == CmpOp::Is) == jump_if;
                self.emit_at(Instr::CmpJmpNone { a, jt }, e.span);
                Ok(vec![self.jmp_placeholder()])
            }
            ExprKind::Compare { left, ops } if ops.len() == 1 => {
                let (op, right) = (&ops[0].0, &ops[0].1);
                let l = self.expr_reg(left)?;
                let ins = match small_int_operand(*op, right) {
                    Some(v) => Instr::CmpJmpI {
                        op: *op,
                        a: l,
                        v,
                        jt: jump_if,
                    },
                    _ => {
                        let r = self.expr_reg(right)?;
                        Instr::CmpJmp {
                            op: *op,
                            a: l,
                            b: r,
                            jt: jump_if,
                        }
                    }
                };
                self.emit_at(ins, e.span);
                Ok(vec![self.jmp_placeholder()])
            }
            _ => {
                let r = self.expr_reg(e)?;
                let ins = if jump_if {
                    Instr::JmpIf { a: r, t: 0 }
                } else {
                    Instr::JmpIfNot { a: r, t: 0 }
                };
                Ok(vec![self.emit_at(ins, e.span)])
            }
        }
    }
}
