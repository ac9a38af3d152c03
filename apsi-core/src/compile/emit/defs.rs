//! Definitions: functions (defaults, decorators, closures, the body's own
//! compile), structs and `super()`.

use super::*;

impl<'a, 'e> Compiler<'a, 'e> {
    // ----------------------------------------------------- functions, structs

    /// Evaluate a def (decorators, defaults, the function, decorator calls) into a new temp.
    pub(super) fn def_value(&mut self, fd: &'a FuncDef) -> CResult<Reg> {
        let mut decos = Vec::new();
        for d in &fd.decorators {
            decos.push(self.expr_tmp_keep(d)?);
        }
        let sid = self
            .table
            .of_func(fd)
            .ok_or_else(|| cerr(fd.span, "internal: function without scope"))?;
        let f = self.alloc()?;
        self.make_function(sid, &fd.name.name, &fd.params, FnBody::Stmts(&fd.body), f, fd.span)?;
        self.apply_decorators(decos, f, fd.span)
    }

    /// A module's top-level `def` of a write-once global with nothing to
    /// evaluate at the `def` (no decorators, no defaults, nothing captured):
    /// compiled to `DefFunc`, which makes the function when the global is
    /// first read. False (nothing emitted) for any other `def`.
    pub(super) fn lazy_def(&mut self, fd: &'a FuncDef) -> CResult<bool> {
        let name = &fd.name.name;
        if !self.f().is_module
            || !fd.decorators.is_empty()
            || fd.params.has_default()
            || self.resolve(name) != Binding::Global
        {
            return Ok(false);
        }
        let slot = self.env.slot_for_write(name);
        if !slot.is_const {
            return Ok(false);
        }
        let sid = self
            .table
            .of_func(fd)
            .ok_or_else(|| cerr(fd.span, "internal: function without scope"))?;
        let proto = self.compile_function(sid, name, &fd.params, FnBody::Stmts(&fd.body), fd.span)?;
        let lazy = proto.captures.is_empty();
        let p = u16::try_from(self.f().protos.len()).map_err(|_| cerr(fd.span, "too many functions in one body"))?;
        self.f().protos.push(proto);
        if lazy {
            let g = self.global_index(slot);
            self.emit_at(Instr::DefFunc { p, g }, fd.span);
        } else {
            // A module-level function captures nothing; were it to, it is
            // made now, as any other.
            let f = self.alloc()?;
            self.emit_at(Instr::MakeFunc { a: f, p, b: f }, fd.span);
            self.store_name(name, f, fd.name.span)?;
        }
        Ok(true)
    }

    pub(super) fn apply_decorators(&mut self, decos: Vec<Reg>, mut f: Reg, span: Span) -> CResult<Reg> {
        for d in decos.into_iter().rev() {
            let c = self.alloc()?;
            self.emit(Instr::Move { a: c, b: d });
            let a = self.alloc()?;
            self.emit(Instr::Move { a, b: f });
            self.emit_at(Instr::Call { a: c, n: 1 }, span);
            self.f().top = c + 1;
            f = c;
        }
        Ok(f)
    }

    /// A method's kind from its decorators, when they are only
    /// `@staticmethod` and `@property` (the last one wins); `None` when it
    /// has another.
    fn plain_method_kind(&mut self, m: &FuncDef) -> Option<MethodKind> {
        let mut kind = MethodKind::Plain;
        for d in &m.decorators {
            kind = self.kind_decorator(d)?;
        }
        Some(kind)
    }

    /// The method kind a decorator names: the built-in `@staticmethod` or
    /// `@property` (not a name that shadows them); `None` for any other.
    fn kind_decorator(&mut self, d: &Expr) -> Option<MethodKind> {
        match &d.kind {
            ExprKind::Name(n) if n == "staticmethod" && self.resolve(n) == Binding::Global => Some(MethodKind::Static),
            ExprKind::Name(n) if n == "property" && self.resolve(n) == Binding::Global => Some(MethodKind::Property),
            _ => None,
        }
    }

    /// A module's top-level struct of a write-once global with nothing to
    /// evaluate at its definition (no decorators, parent, field defaults
    /// or constants; methods without other decorators or defaults):
    /// compiled to `DefStruct`, which makes the struct when the global is
    /// first read. False (nothing emitted) for any other struct.
    fn lazy_struct(&mut self, sd: &'a StructDef) -> CResult<bool> {
        let name = &sd.name.name;
        if !self.f().is_module
            || !sd.decorators.is_empty()
            || sd.base.is_some()
            || !sd.consts.is_empty()
            || sd.fields.iter().any(|f| f.default.is_some())
            || self.resolve(name) != Binding::Global
        {
            return Ok(false);
        }
        let mut kinds = Vec::with_capacity(sd.methods.len());
        for m in &sd.methods {
            match self.plain_method_kind(m) {
                Some(k) if !m.params.has_default() => kinds.push(k),
                _ => return Ok(false),
            }
        }
        let slot = self.env.slot_for_write(name);
        if !slot.is_const {
            return Ok(false);
        }
        let methods_at = self.f().protos.len();
        for (m, kind) in sd.methods.iter().zip(&kinds) {
            let sid = self
                .table
                .of_func(m)
                .ok_or_else(|| cerr(m.span, "internal: method without scope"))?;
            self.next_method = match (kind, m.params.params.first()) {
                (MethodKind::Static, _) | (_, None) => None,
                (_, Some(s)) => Some((name.clone(), s.name.name.clone())),
            };
            let made = self.compile_function(sid, &m.name.name, &m.params, FnBody::Stmts(&m.body), m.span);
            self.next_method = None;
            self.f().protos.push(made?);
        }
        let too_many = || cerr(sd.span, "too many functions in one body");
        let n = u16::try_from(sd.methods.len()).map_err(|_| too_many())?;
        let at = u16::try_from(methods_at).map_err(|_| too_many())?;
        at.checked_add(n).ok_or_else(too_many)?;
        let captures = self.f().protos[methods_at..].iter().any(|p| !p.captures.is_empty());
        let proto = struct_proto_of(sd, kinds, at);
        let s = u16::try_from(self.f().structs.len()).map_err(|_| cerr(sd.span, "too many structs in one body"))?;
        self.f().structs.push(Arc::new(proto));
        if !captures {
            let g = self.global_index(slot);
            self.emit_at(Instr::DefStruct { s, g }, sd.span);
            return Ok(true);
        }
        // Methods of a module-level struct capture nothing; were one to,
        // the struct is made now, as any other.
        let dst = self.alloc()?;
        let b = self.alloc_n(sd.methods.len())?;
        for i in 0..n {
            self.emit(Instr::MakeFunc {
                a: b + i,
                p: at + i,
                b: b + i,
            });
        }
        self.emit_at(Instr::MakeStruct { a: dst, p: s, b }, sd.span);
        self.store_name(name, dst, sd.name.span)?;
        Ok(true)
    }

    pub(super) fn struct_def(&mut self, sd: &'a StructDef) -> CResult<()> {
        if self.lazy_struct(sd)? {
            return Ok(());
        }
        let mut decos = Vec::new();
        for d in &sd.decorators {
            decos.push(self.expr_tmp_keep(d)?);
        }
        let dst = self.alloc()?;
        let ndef = sd.fields.iter().filter(|f| f.default.is_some()).count();
        let nbase = usize::from(sd.base.is_some());
        let b = self.alloc_n(ndef + sd.methods.len() + nbase)?;
        let mut i = 0u16;
        for fld in &sd.fields {
            if let Some(d) = &fld.default {
                self.expr_to(d, b + i)?;
                i += 1;
            }
        }
        let mut kinds = Vec::with_capacity(sd.methods.len());
        for m in &sd.methods {
            let mut mdecos = Vec::new();
            let mut kind = MethodKind::Plain;
            for d in &m.decorators {
                match self.kind_decorator(d) {
                    Some(k) => kind = k,
                    None => mdecos.push(self.expr_tmp_keep(d)?),
                }
            }
            kinds.push(kind);
            let sid = self
                .table
                .of_func(m)
                .ok_or_else(|| cerr(m.span, "internal: method without scope"))?;
            let t = self.alloc()?;
            let self_name = m.params.params.first().map(|p| p.name.name.clone());
            self.next_method = match (kind, self_name) {
                (MethodKind::Static, _) | (_, None) => None,
                (_, Some(s)) => Some((sd.name.name.clone(), s)),
            };
            let made = self.make_function(sid, &m.name.name, &m.params, FnBody::Stmts(&m.body), t, m.span);
            self.next_method = None;
            made?;
            let r = self.apply_decorators(mdecos, t, m.span)?;
            self.emit(Instr::Move { a: b + i, b: r });
            self.free_to(b + (ndef + sd.methods.len() + nbase) as u16);
            i += 1;
        }
        if let Some(base) = &sd.base {
            self.expr_to(base, b + i)?;
        }
        let proto = struct_proto_of(sd, kinds, 0);
        let p = self.f().structs.len();
        let p = u16::try_from(p).map_err(|_| cerr(sd.span, "too many structs in one body"))?;
        self.f().structs.push(Arc::new(proto));
        let base_span = sd.base.as_ref().map(|b| b.span).unwrap_or(sd.span);
        self.emit_at(Instr::MakeStruct { a: dst, p, b }, base_span);
        // Without decorators the name is bound first, so constants may use
        // the struct (`ZERO = Vec(0.0, 0.0)` inside `struct Vec`).
        let plain = decos.is_empty();
        if plain {
            self.store_name(&sd.name.name, dst, sd.name.span)?;
        }
        // Constants run after the struct exists, in order.
        for c in &sd.consts {
            let m = self.mark();
            let v = self.expr_reg(&c.value)?;
            let k = self.str_const16(&c.name.name)?;
            self.emit_at(Instr::StructConst { a: dst, k, c: v }, c.span);
            self.free_to(m);
        }
        if plain {
            return Ok(());
        }
        let r = self.apply_decorators(decos, dst, sd.span)?;
        self.store_name(&sd.name.name, r, sd.name.span)
    }

    /// The struct and the name of `self` of the method being compiled (or
    /// the one a nested function is inside).
    pub(super) fn method_context(&self) -> Option<(String, String)> {
        self.fs.iter().rev().find_map(|f| f.method_of.clone())
    }

    /// Is `e` a `super()` that `super_call` would compile (inside a method)?
    pub(super) fn is_super_call(&mut self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Call { func, args } if args.is_empty() => {
                matches!(&func.kind, ExprKind::Name(n) if n == "super" && self.resolve(n) == Binding::Global)
                    && self.method_context().is_some()
            }
            _ => false,
        }
    }

    /// `super()` inside a method: `super_of(self, "Struct")`.
    pub(super) fn super_call(&mut self, dst: Reg, span: Span) -> CResult<()> {
        let Some((sname, self_name)) = self.method_context() else {
            return Err(Box::new(
                Diagnostic::new(ErrorKind::SyntaxError, "super() is only valid inside a method of a struct")
                    .at(span)
                    .help("call the parent's method through super() from a method with 'self', or name the parent: 'Parent.method(self, …)'"),
            ));
        };
        let m = self.mark();
        let a = self.alloc()?;
        let k = self.konst(crate::ops::structs::super_native())?;
        self.emit(Instr::LoadK { a, k });
        let s = self.alloc()?;
        self.load_name(&self_name, s, span)?;
        let n = self.alloc()?;
        let kn = self.konst(Value::str(sname))?;
        self.emit(Instr::LoadK { a: n, k: kn });
        self.emit_at(Instr::Call { a, n: 2 }, span);
        self.emit(Instr::Move { a: dst, b: a });
        self.free_to(m);
        Ok(())
    }

    pub(super) fn make_function(
        &mut self,
        sid: ScopeId,
        name: &str,
        params: &'a Params,
        body: FnBody<'a>,
        dst: Reg,
        span: Span,
    ) -> CResult<()> {
        // Defaults are evaluated now, in the defining scope.
        let mut seen_default = false;
        for p in &params.params {
            if p.default.is_some() {
                seen_default = true;
            } else if seen_default {
                return Err(cerr(
                    p.span,
                    format!(
                        "parameter '{}' without a default follows a parameter with one",
                        p.name.name
                    ),
                ));
            }
        }
        let defaults: Vec<&Expr> = params
            .params
            .iter()
            .filter_map(|p| p.default.as_ref())
            .chain(params.kwonly.iter().filter_map(|p| p.default.as_ref()))
            .collect();
        let b = self.alloc_n(defaults.len())?;
        for (i, d) in defaults.iter().enumerate() {
            self.expr_to(d, b + i as u16)?;
        }
        let proto = self.compile_function(sid, name, params, body, span)?;
        let p = self.f().protos.len();
        let p = u16::try_from(p).map_err(|_| cerr(span, "too many functions in one body"))?;
        self.f().protos.push(proto);
        self.emit_at(Instr::MakeFunc { a: dst, p, b }, span);
        Ok(())
    }

    pub(super) fn compile_function(
        &mut self,
        sid: ScopeId,
        name: &str,
        params: &'a Params,
        body: FnBody<'a>,
        span: Span,
    ) -> CResult<Arc<FuncProto>> {
        let table = self.table;
        let scope = table.scope(sid);
        let mut st = FnState::new(sid, name.into(), span, false);
        st.method_of = self.next_method.take();
        // Registers: parameters first (in scope order), then the other plain locals.
        for (i, p) in scope.params.iter().enumerate() {
            st.locals.insert(p.clone(), i as u16);
        }
        let mut next = scope.params.len() as u16;
        for (n, captured) in &scope.locals {
            if st.locals.contains_key(n) || *captured {
                continue;
            }
            st.locals.insert(n.clone(), next);
            next += 1;
        }
        if next >= 60000 {
            return Err(cerr(span, "function too large: too many local variables"));
        }
        st.top = next;
        st.max = next;
        let nparams = scope.params.len();
        st.defined = (0..next as usize).map(|i| i < nparams).collect();
        self.fs.push(st);
        // Prologue: move captured parameters into cells; make the other cells.
        for (c, n) in scope.cells.iter().enumerate() {
            let a = match scope.params.iter().position(|p| p == n) {
                Some(i) => i as u16,
                None => NO_REG,
            };
            self.emit(Instr::MakeCell { a, c: c as u16 });
        }
        let r = match body {
            FnBody::Stmts(b) => self.block(b).map(|_| {
                self.emit(Instr::ReturnNone);
            }),
            FnBody::Expr(e) => {
                self.f().span = e.span;
                self.expr_reg(e).map(|r| {
                    self.emit(Instr::Return { a: r });
                })
            }
            FnBody::Comp(e) => self.comprehension_body(e),
            FnBody::Reduce(e, kind) => {
                self.f().reduce = Some(kind);
                self.reduce_body(e, kind)
            }
            FnBody::ParChunk(target, body, range) => self.par_chunk_body(target, body, range),
        };
        let st = self
            .fs
            .pop()
            .ok_or_else(|| cerr(span, "internal: compiler state lost"))?;
        r?;
        let names = (
            scope.cells.iter().map(|n| Arc::from(n.as_str())).collect(),
            scope.frees.iter().map(|n| Arc::from(n.as_str())).collect(),
        );
        let code = st.finish(scope.cells.len() as u16, nparams as u16, names);
        // Where each captured name comes from in the defining scope.
        let parent = self.f().scope;
        let mut captures = Vec::new();
        for n in &scope.frees {
            match table.resolve(parent, n) {
                Binding::Cell(c) => captures.push(Capture::Cell(c)),
                Binding::Free(c) => captures.push(Capture::Free(c)),
                _ => return Err(cerr(span, format!("internal: cannot capture '{n}'"))),
            }
        }
        let mut checks = Vec::new();
        let all: Vec<&Param> = params
            .params
            .iter()
            .chain(params.vararg.iter())
            .chain(params.kwonly.iter())
            .chain(params.kwarg.iter())
            .collect();
        for (i, p) in all.iter().enumerate() {
            let is_plain = i < params.params.len()
                || (i >= params.params.len() + params.vararg.is_some() as usize
                    && i < params.params.len() + params.vararg.is_some() as usize + params.kwonly.len());
            if !is_plain {
                continue;
            }
            if let Some(ExprKind::Name(t)) = p.annotation.as_ref().map(|a| &a.kind) {
                if let Some(tc) = TypeCheck::from_name(t) {
                    checks.push((i as u16, tc));
                }
            }
            // `Tensor[N, bf16]` and the other tensor forms (tensor/annot.rs).
            if let Some(tc) = p.annotation.as_ref().and_then(crate::tensor::annot::type_check_of) {
                checks.push((i as u16, tc));
            }
        }
        // A generator expression compiled for its built-in is a plain function.
        let generator = scope.generator && !matches!(body, FnBody::Reduce(..));
        let simple = params.vararg.is_none()
            && params.kwonly.is_empty()
            && params.kwarg.is_none()
            && checks.is_empty()
            && !generator;
        // Bound by the parameter alone (no assignment, `del`, loop or
        // `except` target, `global`/`nonlocal`) and no inner function's cell.
        let keeps_first = matches!(body, FnBody::Stmts(_))
            && params.params.first().is_some_and(|p| {
                scope.bound.get(p.name.name.as_str()).is_some_and(|b| b.count == 1)
                    && scope.locals.get(p.name.name.as_str()) == Some(&false)
                    && !scope.declared_global.contains(p.name.name.as_str())
                    && !scope.declared_nonlocal.contains(p.name.name.as_str())
            });
        // (A generator's body never runs at the call.)
        let leaf = code.leaf != crate::code::Leaf::No && !generator;
        Ok(Arc::new(FuncProto {
            name: name.into(),
            code: crate::code::LazyCode::ready(code),
            nparams: if matches!(body, FnBody::ParChunk(..)) {
                scope.params.len() as u16
            } else {
                params.params.len() as u16 + matches!(body, FnBody::Comp(_) | FnBody::Reduce(..)) as u16
            },
            has_vararg: params.vararg.is_some(),
            nkwonly: params.kwonly.len() as u16,
            has_kwarg: params.kwarg.is_some(),
            param_names: scope.params.iter().map(|p| Arc::from(p.as_str())).collect(),
            ndefaults: params.params.iter().filter(|p| p.default.is_some()).count() as u16,
            kwonly_has_default: params.kwonly.iter().map(|p| p.default.is_some()).collect(),
            captures: captures.into_boxed_slice(),
            checks: checks.into_boxed_slice(),
            simple,
            generator,
            keeps_first,
            leaf,
        }))
    }

    /// `F(e for x in xs)` where `F` is the prelude's `sum`, `any` or `all`,
    /// `list`, or one of the built-ins that take every item before they do
    /// anything else (`tuple set dict sorted min max`, and `"s".join` on a
    /// string literal): the generator expression compiles into a plain
    /// function of the outermost iterator (named `<genexpr>`, so an error
    /// in an item shows the same trace) that runs the built-in's loop
    /// (`FnBody::Reduce`): `sum` adds each item as it comes, `any`/`all`
    /// stop at the first deciding item, and the others get a list of the
    /// items. No generator is made and no item is resumed.
    ///
    /// Only when `F` is the prelude's function itself (a name bound in
    /// this module or a local shadows it, and globals are slots a unit
    /// declares before it compiles: see `GlobalEnv`), with that one
    /// argument. `Ok(false)`: compiled nothing, the call is compiled as usual.
    pub(super) fn genexp_call(&mut self, func: &'a Expr, args: &'a [Arg], dst: Reg, span: Span) -> CResult<bool> {
        let [Arg::Positional(g)] = args else { return Ok(false) };
        if !matches!(g.kind, ExprKind::GenExp { .. }) {
            return Ok(false);
        }
        let (kind, then_call) = match &func.kind {
            ExprKind::Name(n) => {
                if !self.is_prelude_native(n) {
                    return Ok(false);
                }
                match n.as_str() {
                    "sum" => (GenReduce::Sum, false),
                    "any" => (GenReduce::Any, false),
                    "all" => (GenReduce::All, false),
                    "list" => (GenReduce::List, false),
                    "tuple" | "set" | "dict" | "sorted" | "min" | "max" => (GenReduce::List, true),
                    _ => return Ok(false),
                }
            }
            ExprKind::Attribute { value, attr } if attr.name == "join" && matches!(value.kind, ExprKind::Str(_)) => {
                (GenReduce::List, true)
            }
            _ => return Ok(false),
        };
        if !then_call {
            self.reduce_call(g, kind, dst, span)?;
            return Ok(true);
        }
        // The built-in (or the bound `join`) first, as the call would
        // evaluate it, then the list of the items as its argument.
        self.call1_to(
            dst,
            span,
            |c, f| match &func.kind {
                ExprKind::Attribute { value, attr } => {
                    let o = c.expr_reg(value)?;
                    let k = c.str_const16(&attr.name)?;
                    c.emit_at(Instr::GetAttr { a: f, b: o, k }, func.span);
                    Ok(())
                }
                _ => c.expr_to(func, f),
            },
            |c, a| c.reduce_call(g, kind, a, span),
        )?;
        Ok(true)
    }

    /// `dst = f(arg)`: `func_to` compiles the callee into its register, then
    /// `arg_to` the one argument into the next (in the order a call
    /// evaluates them).
    pub(super) fn call1_to(
        &mut self,
        dst: Reg,
        span: Span,
        func_to: impl FnOnce(&mut Self, Reg) -> CResult<()>,
        arg_to: impl FnOnce(&mut Self, Reg) -> CResult<()>,
    ) -> CResult<()> {
        let m = self.mark();
        let f = self.alloc()?;
        func_to(self, f)?;
        self.free_to(f + 1);
        let a = self.alloc()?;
        arg_to(self, a)?;
        self.emit_at(Instr::Call { a: f, n: 1 }, span);
        if f != dst {
            self.emit(Instr::Move { a: dst, b: f });
        }
        self.free_to(m);
        Ok(())
    }

    /// `dst = <the generator expression g compiled for kind>(iter(xs))`:
    /// the outermost iterable is evaluated and checked here, as when a
    /// generator expression is made.
    fn reduce_call(&mut self, g: &'a Expr, kind: GenReduce, dst: Reg, span: Span) -> CResult<()> {
        let ExprKind::GenExp { generators, .. } = &g.kind else {
            return Err(cerr(g.span, "internal: not a generator expression"));
        };
        let sid = self
            .table
            .of_expr(g)
            .ok_or_else(|| cerr(g.span, "internal: generator expression without scope"))?;
        let first = generators
            .first()
            .ok_or_else(|| cerr(g.span, "a generator expression needs a `for`"))?;
        let m = self.mark();
        let f = self.alloc()?;
        self.make_function(sid, "<genexpr>", &NO_PARAMS, FnBody::Reduce(g, kind), f, g.span)?;
        let a = self.alloc()?;
        self.expr_to(&first.iter, a)?;
        self.emit_at(Instr::IterPrep { a }, first.iter.span);
        self.emit_at(Instr::Call { a: f, n: 1 }, span);
        if f != dst {
            self.emit(Instr::Move { a: dst, b: f });
        }
        self.free_to(m);
        Ok(())
    }

    /// The body of a generator expression compiled for `kind` (see
    /// `genexp_call`): the comprehension's loops, each item going to the
    /// built-in's step (`comp_level`), and what the built-in returns.
    fn reduce_body(&mut self, e: &'a Expr, kind: GenReduce) -> CResult<()> {
        let ExprKind::GenExp { generators, .. } = &e.kind else {
            return Err(cerr(e.span, "internal: not a generator expression"));
        };
        match kind {
            GenReduce::Sum => {
                // The running sum: an exact int, starting at 0 (`ReduceOp::Sum`).
                let acc = self.alloc_n(2)?;
                self.emit(Instr::LoadInt { a: acc, v: 0 });
                self.emit(Instr::LoadInt { a: acc + 1, v: 0 });
                self.comp_level(e, generators, 0, acc)?;
                self.emit_at(
                    Instr::Reduce {
                        op: ReduceOp::SumEnd,
                        a: acc,
                        b: acc,
                    },
                    e.span,
                );
                self.emit(Instr::Return { a: acc });
            }
            GenReduce::Any | GenReduce::All => {
                let acc = self.alloc()?;
                self.comp_level(e, generators, 0, acc)?;
                // Every item seen: `any` is false, `all` true.
                self.emit(Instr::LoadBool {
                    a: acc,
                    v: kind == GenReduce::All,
                });
                self.emit(Instr::Return { a: acc });
                let exits = std::mem::take(&mut self.f().reduce_exits);
                self.patch_here(exits);
                self.emit(Instr::LoadBool {
                    a: acc,
                    v: kind == GenReduce::Any,
                });
                self.emit(Instr::Return { a: acc });
            }
            GenReduce::List => {
                let acc = self.alloc()?;
                self.emit(new_list_for(acc, generators));
                self.comp_level(e, generators, 0, acc)?;
                self.emit(Instr::Return { a: acc });
            }
        }
        Ok(())
    }

    pub(super) fn comprehension_body(&mut self, e: &'a Expr) -> CResult<()> {
        let (gens, is_dict) = match &e.kind {
            ExprKind::ListComp { generators, .. } => (generators, false),
            ExprKind::DictComp { generators, .. } => (generators, true),
            ExprKind::SetComp { generators, .. } => (generators, false),
            ExprKind::GenExp { generators, .. } => {
                // A generator expression yields each element; `acc` is unused.
                let acc = self.alloc()?;
                self.comp_level(e, generators, 0, acc)?;
                self.emit(Instr::ReturnNone);
                return Ok(());
            }
            _ => return Err(cerr(e.span, "internal: not a comprehension")),
        };
        let acc = self.alloc()?;
        if is_dict {
            self.emit(Instr::BuildDict { a: acc, b: acc, n: 0 });
        } else if matches!(e.kind, ExprKind::SetComp { .. }) {
            self.emit(Instr::BuildSet { a: acc, b: acc, n: 0 });
        } else {
            self.emit(new_list_for(acc, gens));
        }
        self.comp_level(e, gens, 0, acc)?;
        self.emit(Instr::Return { a: acc });
        Ok(())
    }

    pub(super) fn comp_level(&mut self, e: &'a Expr, gens: &'a [Comprehension], i: usize, acc: Reg) -> CResult<()> {
        let Some(g) = gens.get(i) else {
            let m = self.mark();
            match &e.kind {
                ExprKind::ListComp { elt, .. } => {
                    let v = self.expr_reg(elt)?;
                    self.emit(Instr::ListAppend { a: acc, b: v });
                }
                ExprKind::DictComp { key, value, .. } => {
                    let k = self.expr_reg(key)?;
                    let v = self.expr_reg(value)?;
                    self.emit_at(Instr::DictSet { a: acc, b: k, c: v }, key.span);
                }
                ExprKind::SetComp { elt, .. } => {
                    let v = self.expr_reg(elt)?;
                    self.emit_at(Instr::SetAdd { a: acc, b: v }, elt.span);
                }
                ExprKind::GenExp { elt, .. } => {
                    let v = self.expr_reg(elt)?;
                    match self.f().reduce {
                        None => {
                            self.emit_at(Instr::Yield { a: v, b: acc }, elt.span);
                        }
                        Some(GenReduce::Sum) => {
                            self.emit_at(
                                Instr::Reduce {
                                    op: ReduceOp::Sum,
                                    a: acc,
                                    b: v,
                                },
                                elt.span,
                            );
                        }
                        Some(kind @ (GenReduce::Any | GenReduce::All)) => {
                            let t = self.alloc()?;
                            self.emit_at(
                                Instr::Reduce {
                                    op: ReduceOp::Truth,
                                    a: t,
                                    b: v,
                                },
                                elt.span,
                            );
                            let site = if kind == GenReduce::Any {
                                self.emit(Instr::JmpIf { a: t, t: 0 })
                            } else {
                                self.emit(Instr::JmpIfNot { a: t, t: 0 })
                            };
                            self.f().reduce_exits.push(site);
                        }
                        Some(GenReduce::List) => {
                            self.emit_at(Instr::ListAppend { a: acc, b: v }, elt.span);
                        }
                    }
                }
                _ => {}
            }
            self.free_to(m);
            return Ok(());
        };
        let m = self.mark();
        let it = self.alloc_n(2)?;
        if i == 0 {
            self.emit(Instr::Move { a: it, b: 0 });
        } else {
            self.for_iterable_to(&g.iter, it)?;
        }
        self.emit_at(Instr::ForPrep { a: it }, g.iter.span);
        let (dst, direct) = self.loop_target_reg(&g.target)?;
        // The loop's test at its bottom (`ForLoop`), as a `for` statement's.
        let enter = self.jmp_placeholder();
        let body_start = self.here();
        if !direct {
            self.assign_loop_item(&g.target, dst)?;
        }
        let mut skips = Vec::new();
        for c in &g.ifs {
            skips.extend(self.cond_jump(c, false)?);
        }
        self.comp_level(e, gens, i + 1, acc)?;
        self.patch_here(skips);
        self.patch_here(vec![enter]);
        self.emit_at(Instr::ForLoop { a: it, b: dst }, g.iter.span);
        self.emit(Instr::Jmp { t: body_start as u32 });
        self.free_to(m);
        Ok(())
    }
}

/// The empty list a comprehension (or `list(…)` of a generator
/// expression) fills into `acc`: one `for` and no `if` append one item per
/// item of the iterable, which its body gets as parameter 0, so the list
/// is made with room for them all (`NewListFor`).
fn new_list_for(acc: Reg, gens: &[Comprehension]) -> Instr {
    match gens {
        [g] if g.ifs.is_empty() => Instr::NewListFor { a: acc, b: 0 },
        _ => Instr::BuildList { a: acc, b: acc, n: 0 },
    }
}

/// The prototype of struct `sd` with its methods' kinds, its methods'
/// prototypes from `methods_at` of its body's (a lazily made struct's; 0
/// otherwise).
fn struct_proto_of(sd: &StructDef, kinds: Vec<MethodKind>, methods_at: u16) -> StructProto {
    StructProto {
        name: Arc::from(sd.name.name.as_str()),
        fields: sd.fields.iter().map(|f| Arc::from(f.name.name.as_str())).collect(),
        has_default: sd.fields.iter().map(|f| f.default.is_some()).collect(),
        annotations: sd
            .fields
            .iter()
            .map(|f| f.annotation.as_ref().map(|a| Arc::from(annotation_text(a))))
            .collect(),
        methods: sd.methods.iter().map(|m| Arc::from(m.name.name.as_str())).collect(),
        method_kinds: kinds.into_boxed_slice(),
        has_base: sd.base.is_some(),
        methods_at,
    }
}
