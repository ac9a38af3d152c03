//! Calls the VM makes for an instruction, pushed as frames on the running
//! loop instead of re-entering it: a constructor's `__init__` (`Ret::Init`)
//! a struct's operator methods (`Ret::Op`, `Ret::OpInplace`), comparison
//! methods (`Ret::Cmp`) and the `__eq__` of each element of a list that
//! `x in xs` or `xs.remove(x)` scans (`Ret::Scan`).
//!
//! Re-entering the loop (`Caller::call`) costs a Rust call chain, argument
//! vectors and a nested `run` per call; a pushed frame costs what a call
//! the program wrote costs. What differs is only where the returned value
//! goes, which the frame's `ret` says and `finish_return` carries out.
//!
//! Invariants (besides `exec.rs`'s):
//! - An `Init` frame's callee slot holds the new instance, not the
//!   closure; the instance keeps its type alive, and the type its
//!   `__init__`, so the frame's closure pointer stays valid.
//! - An `Op` frame sits right above its caller's window (`frame_end`), is
//!   pushed only by an instruction of the frame below it (so it is never
//!   the bottom frame of a `run`), and that instruction is the one just
//!   before the caller's saved pc: its destination register gets the value.

use super::*;
use crate::ops::dunder;
use crate::value::ic::AttrCache;

/// Where a list scan (`x in xs`, [`Executor::scan`]) stands while an
/// element's `__eq__` runs as a `Scan` frame: the element's index and a
/// handle on the element (the `NotImplemented` protocol needs it, and the
/// list may change meanwhile). One per scan under way, innermost last:
/// pushed when the scan starts, popped when it ends or its frame unwinds.
pub(super) struct ScanAt {
    at: u32,
    el: Value,
    /// The item looked for and the list or tuple scanned, held for the
    /// whole scan (taken once, not at each element).
    x: Value,
    xs: Value,
}

impl ScanAt {
    /// Give up the handles (the scan ended).
    pub(super) fn give_up(self) {
        self.el.give_up();
        self.x.give_up();
        self.xs.give_up();
    }
}

/// What [`Executor::scan`] did: pushed an element's `__eq__`, or finished
/// (with the index of the element found, if one was).
pub(super) enum ScanStep {
    Pushed,
    Done(Option<usize>),
}

impl Executor {
    /// `x op y` (`inplace`: `x op= y`) where `x` is a struct whose method
    /// for it is a plain Apsi function of two parameters: push that method
    /// as an `Op` frame. `None` when the operation needs the general path
    /// (`y`'s reflected method goes first, a method of another shape, `x`
    /// not a struct).
    /// `ic` is the instruction's cache word: it remembers which method
    /// `x`'s type uses here, so a hit looks up no name.
    pub(super) fn push_op_frame(
        &mut self,
        op: BinOp,
        x: &Value,
        y: &Value,
        inplace: bool,
        ic: Option<&AttrCache>,
    ) -> Option<VResult<()>> {
        let Value::Struct(s) = x else { return None };
        let (fwd, rev, iname) = dunder::binary_names(op);
        let (i, ret) = match ic.and_then(|c| c.get(s.ty.id)) {
            Some(Hit::Method(i)) => (i, Ret::Op),
            Some(Hit::MethodInplace(i)) => (i, Ret::OpInplace),
            _ => {
                let (i, ret) = match inplace.then(|| s.ty.methods.get_index_of(iname)).flatten() {
                    Some(i) => (i, Ret::OpInplace),
                    None => (s.ty.methods.get_index_of(fwd)?, Ret::Op),
                };
                if let Some(c) = ic {
                    c.set(
                        s.ty.id,
                        if ret == Ret::Op {
                            Hit::Method(i)
                        } else {
                            Hit::MethodInplace(i)
                        },
                    );
                }
                (i, ret)
            }
        };
        let (_, m) = s.ty.methods.get_index(i)?;
        if ret == Ret::Op && dunder::reflected_first(x, y, rev) {
            return None;
        }
        self.push_method_frame(m, [x, y], ret)
    }

    /// `run`'s shortcut for `x op y` when `x` is a struct whose type the
    /// instruction's cache knows (`push_op_frame` filled it): push the
    /// method's frame. `None` sends the operation down the general path;
    /// so does a `y` that is a struct of another type, whose reflected
    /// method might have to go first.
    ///
    /// `x` and `y` may point into this executor's stack: they are copied
    /// first.
    #[inline(never)]
    pub(super) fn push_op_frame_hit(
        &mut self,
        ic: &AttrCache,
        x: *const Value,
        y: *const Value,
    ) -> Option<VResult<()>> {
        // SAFETY: the caller's registers are live until the stack grows;
        // they are only read, and the copies are taken (by parts, below)
        // before `push_closure_frame` can grow it.
        let (x, y) = unsafe { (&*x, &*y) };
        let Value::Struct(s) = x else { return None };
        let (i, ret) = match ic.get(s.ty.id)? {
            Hit::Method(i) => (i, Ret::Op),
            Hit::MethodInplace(i) => (i, Ret::OpInplace),
            _ => return None,
        };
        if let Value::Struct(t) = y {
            if t.ty.id != s.ty.id {
                return None;
            }
        }
        let Some((_, Value::Func(c))) = s.ty.methods.get_index(i) else {
            return None;
        };
        if !c.simple || c.nparams != 2 {
            return None;
        }
        Some(self.push_closure_frame(crate::value::solo::clone_arc(c), [x.words(), y.words()], ret))
    }

    /// `x op y`, a comparison, where `x` is a struct whose method for it
    /// (`__eq__`, `__lt__`…) is a plain Apsi function: push that method as
    /// a `Cmp` frame. `!=` without `__ne__` on either side runs `__eq__`
    /// and negates it (`CmpNot`). `None` when `y`'s reflected method goes
    /// first or `x` has no such method.
    pub(super) fn push_cmp_frame(&mut self, op: CmpOp, x: &Value, y: &Value) -> Option<VResult<()>> {
        let Value::Struct(s) = x else { return None };
        let i = cmp_method_index(op)?;
        let (m, ret, ri) = match &s.ty.cmp_methods[i] {
            Some(m) => (m, Ret::Cmp, cmp_method_index(dunder::reflect(op))?),
            None if op == CmpOp::NotEq => {
                if let Value::Struct(t) = y {
                    if t.ty.cmp_methods[1].is_some() {
                        return None;
                    }
                }
                (s.ty.cmp_methods[0].as_ref()?, Ret::CmpNot, 0)
            }
            None => return None,
        };
        // `y`'s reflected method first: only a subtype of `x`'s type can.
        if let Value::Struct(t) = y {
            if t.ty.id != s.ty.id && dunder::reflected_first(x, y, CMP_METHODS[ri]) {
                return None;
            }
        }
        self.push_method_frame(m, [x, y], ret)
    }

    /// `x in xs` (or `not in`) for a list or tuple `xs`, as CPython's
    /// `list_contains` does it: an element that is `x` itself matches; an
    /// element whose type has a plain Apsi `__eq__` gets it pushed as a
    /// `Scan` frame (`Pushed`: the scan goes on from `scan_returned` when
    /// it returns); any other element is compared here (`ops::eq`, which
    /// calls Apsi code from Rust where it must). The list is read at
    /// each step, so a list that changes during the scan is seen as
    /// CPython sees it.
    pub(super) fn scan(&mut self, x: Value, xs: Value) -> VResult<ScanStep> {
        self.scans.push(ScanAt {
            at: 0,
            el: Value::None,
            x,
            xs,
        });
        self.scan_on(0)
    }

    /// Go on with the innermost scan (`self.scans`' last) from element
    /// `from`; its entry is popped when the scan ends.
    fn scan_on(&mut self, from: usize) -> VResult<ScanStep> {
        let Some(st) = self.scans.last_mut() else {
            return Ok(ScanStep::Done(None));
        };
        let st: *mut ScanAt = st;
        let mut i = from;
        // SAFETY: `st` stays valid for the loop: nothing here pushes or
        // pops `self.scans` (`push_method_frame` changes frames and the
        // stack; `ops::eq` runs Apsi code on a spare executor, never
        // on this one: `vm/reentry.rs`).
        let found = loop {
            let (el, x, xs) = unsafe { (&mut (*st).el, &(*st).x, &(*st).xs) };
            let Some(w) = xs.seq_item_words(i) else { break Ok(None) };
            // The element stays held in the entry (by parts: see `Words`).
            set_words(el, w);
            let same = match (&*el, x) {
                (Value::Struct(a), Value::Struct(b)) => Arc::ptr_eq(a, b),
                (Value::Float(_), _) => false,
                (e, x) => e.is(x),
            };
            if same {
                break Ok(Some(i));
            }
            if let Value::Struct(s) = &*el {
                // `x`'s reflected `__eq__` goes first when its type is a
                // subtype of the element's that redefines it: `ops::eq`
                // below does that.
                let own = matches!(x, Value::Struct(t) if Arc::ptr_eq(&t.ty, &s.ty));
                let eq = s.ty.cmp_methods[0]
                    .as_ref()
                    .filter(|_| own || !dunder::reflected_first(el, x, "__eq__"));
                if let Some(m) = eq {
                    match self.push_method_frame(m, [&*el, x], Ret::Scan) {
                        Some(Ok(())) => {
                            unsafe { (*st).at = i as u32 };
                            return Ok(ScanStep::Pushed);
                        }
                        Some(Err(e)) => break Err(e),
                        None => {}
                    }
                }
            }
            // Identity was tested above.
            match ops::eq(el, x) {
                Ok(true) => break Ok(Some(i)),
                Ok(false) => i += 1,
                Err(e) => break Err(e),
            }
        };
        if let Some(st) = self.scans.pop() {
            st.give_up();
        }
        found.map(ScanStep::Done)
    }

    /// The top frame, a `Scan` frame that is the innermost special one,
    /// returned `false`: when the scan's next element is a struct of the
    /// same type as the one just compared (so the same `__eq__`, which the
    /// first push of that type found to go first), and is not `x` itself,
    /// run that `__eq__` again in the same frame instead of popping it,
    /// going through `finish_return` and pushing the next one. Its window
    /// is cleared as a pop would clear it, the two arguments are written
    /// into it, and true tells `run` to start the frame's code again.
    /// False (nothing changed) sends the return down the general path.
    ///
    /// The frame must own no cells or handlers (a pop would drop them) and
    /// its closure must still be the type's `__eq__` (a method replaced
    /// meanwhile is looked up again by that path).
    #[inline(never)]
    pub(super) fn scan_again(&mut self) -> bool {
        let depth = self.frames.len();
        let Some(&fr) = self.frames.last() else { return false };
        let (base, nregs) = (fr.base as usize, (fr.nregs as usize).max(2));
        if fr.ret != Ret::Scan
            || self.stack.len() < base + nregs
            || self.cells.len() > fr.cell_base as usize
            || self.handlers.last().is_some_and(|h| h.frame as usize + 1 >= depth)
        {
            return false;
        }
        let Some(st) = self.scans.last_mut() else { return false };
        let i = st.at as usize + 1;
        let (Value::Struct(cur), Value::Struct(x)) = (&st.el, &st.x) else {
            return false;
        };
        let same = |v: &Value| match v {
            Value::Struct(n) => Arc::ptr_eq(&n.ty, &cur.ty) && !Arc::ptr_eq(n, x),
            _ => false,
        };
        let w = match &st.xs {
            Value::List(l) => match l.items.read().get(i) {
                Some(v) if same(v) => v.words(),
                _ => return false,
            },
            Value::Tuple(t) => match t.0.get(i) {
                Some(v) if same(v) => v.words(),
                _ => return false,
            },
            _ => return false,
        };
        let unchanged = matches!(&cur.ty.cmp_methods[0], Some(Value::Func(c)) if std::ptr::eq(Arc::as_ptr(c), fr.clo));
        if !unchanged {
            drop(w.into_value());
            return false;
        }
        set_words(&mut st.el, w);
        st.at = i as u32;
        let win = &mut self.stack[base..base + nregs];
        for v in win.iter_mut() {
            setv(v, Value::Unbound);
        }
        set_words(&mut win[0], st.el.words());
        set_words(&mut win[1], st.x.words());
        true
    }

    /// An element's `__eq__` pushed by [`Executor::scan`] returned `v`
    /// (its frame popped, so the scanning frame is on top, its `Cmp` or
    /// `CmpJmp` just before its saved pc): a true `v` ends the scan, a
    /// false one goes on with the next element, and `NotImplemented` goes
    /// on with the rest of the protocol for this element (`x`'s reflected
    /// `__eq__`, then identity, which was tested already).
    fn scan_returned(&mut self, v: Value) -> VResult<()> {
        let Some(st) = self.scans.last() else {
            return Err(err(ErrorKind::Error, "internal error: a scan frame without its scan"));
        };
        let at = st.at as usize;
        let found = if dunder::is_not_implemented(&v) {
            // Copies: the reflected method runs on this executor.
            let (el, x) = (st.el.clone(), st.x.clone());
            dunder::compare_after_forward(self, CmpOp::Eq, &el, &x).and_then(|r| r.truthy())
        } else {
            match v {
                Value::Bool(b) => Ok(b),
                other => other.truthy(),
            }
        };
        let found = match found {
            Ok(false) => match self.scan_on(at + 1)? {
                ScanStep::Pushed => return Ok(()),
                ScanStep::Done(f) => f,
            },
            other => {
                if let Some(st) = self.scans.pop() {
                    st.give_up();
                }
                other?.then_some(at)
            }
        };
        let Some(&fr) = self.frames.last() else { return Ok(()) };
        // SAFETY: the frame is live.
        let code = unsafe { &*fr.code };
        let base = fr.base as usize;
        let pc = fr.pc as usize;
        match code.instrs.get(pc.wrapping_sub(1)).copied() {
            Some(Instr::Cmp { op, a, .. }) => {
                if let Some(s) = self.stack.get_mut(base + a as usize) {
                    setv(s, Value::Bool(found.is_some() == (op == CmpOp::In)));
                }
            }
            Some(Instr::CallMethod { a, .. }) => {
                // `xs.remove(x)`: its receiver and argument are still in
                // the call's registers.
                let slot = base + a as usize;
                return self.remove_found(slot, found);
            }
            Some(Instr::CmpJmp { op, jt, .. }) => {
                self.jump_top_if(&code.instrs, pc, (found.is_some() == (op == CmpOp::In)) == jt);
            }
            _ => {
                return Err(err(
                    ErrorKind::Error,
                    "internal error: a scan's __eq__ returned to no comparison",
                ))
            }
        }
        Ok(())
    }

    /// `xs.remove(x)` (the list in register `slot + 1`, `x` in `slot + 2`)
    /// after its scan found index `found` (`builtins::remove_found`). The
    /// call's value, `none`, goes to `slot`, and the receiver and argument
    /// registers are let go.
    pub(super) fn remove_found(&mut self, slot: usize, found: Option<usize>) -> VResult<()> {
        let mut take = |r: usize| match self.stack.get_mut(r) {
            Some(v) => std::mem::replace(v, Value::None),
            None => Value::None,
        };
        let (xs, x) = (take(slot + 1), take(slot + 2));
        if let Value::List(l) = &xs {
            crate::builtins::remove_found(l, &x, found)?;
        }
        if let Some(s) = self.stack.get_mut(slot) {
            setv(s, Value::None);
        }
        Ok(())
    }

    /// `-x`, `+x`, `~x` on a struct whose method is a plain function of one parameter.
    pub(super) fn push_unary_frame(&mut self, op: UnaryOp, x: &Value) -> Option<VResult<()>> {
        let Value::Struct(s) = x else { return None };
        let name = match op {
            UnaryOp::Neg => "__neg__",
            UnaryOp::Pos => "__pos__",
            UnaryOp::Invert => "__invert__",
            UnaryOp::Not => return None,
        };
        let m = s.ty.method(name)?;
        self.push_method_frame(m, [x], Ret::Op)
    }

    /// Push `m(args…)` above the top frame's window with the given `ret`;
    /// `None` unless `m` is a plain Apsi function of exactly that many
    /// parameters.
    pub(super) fn push_method_frame<const N: usize>(
        &mut self,
        m: &Value,
        args: [&Value; N],
        ret: Ret,
    ) -> Option<VResult<()>> {
        let Value::Func(c) = m else { return None };
        if !c.simple || c.nparams as usize != N {
            return None;
        }
        // The copies are taken by parts before the stack can move.
        Some(self.push_closure_frame(crate::value::solo::clone_arc(c), args.map(Value::words), ret))
    }

    /// Push `c` (checked by the caller to be plain and to take `N`
    /// parameters) above the top frame's window, the arguments moved in.
    fn push_closure_frame<const N: usize>(&mut self, c: Arc<Closure>, args: [Words; N], ret: Ret) -> VResult<()> {
        let fpos = self.frame_end();
        self.ensure(fpos + 2 + N);
        // The callee and its arguments go in by parts, as for any call
        // (`enter_closure`); what the slots held (the last call's, usually)
        // is given up the solo way.
        self.enter_closure(fpos, c, args.into_iter())?;
        self.mark_top(ret);
        Ok(())
    }

    /// Push a frame of kind `ret` for `clo`, whose callee slot `fpos` keeps
    /// it alive (the function itself, or for `Init` the instance, whose
    /// type holds its `__init__`) and whose `n` arguments are in place; on
    /// failure those slots go back to `Unbound`.
    pub(super) fn push_frame_as(&mut self, fpos: usize, clo: *const Closure, n: usize, ret: Ret) -> VResult<()> {
        match self.push_frame(fpos, clo) {
            Ok(()) => {
                self.mark_top(ret);
                Ok(())
            }
            Err(e) => {
                for s in self.stack.iter_mut().skip(fpos).take(n + 1) {
                    *s = Value::Unbound;
                }
                Err(e)
            }
        }
    }

    /// `T(args…)` for a struct type whose `__init__` is an Apsi function
    /// (not a generator): a blank instance goes in the callee slot `fpos`,
    /// `__init__` runs as an `Init` frame with the instance as `self`.
    /// `Err(pos, kw)` hands the arguments back when `T` has no such `__init__`.
    // The `Err` hands the arguments back by value (no allocation) for the
    // field-wise constructor, which takes them next.
    #[allow(clippy::type_complexity, clippy::result_large_err)]
    pub(super) fn push_init_frame(
        &mut self,
        fpos: usize,
        t: &Arc<StructType>,
        mut pos: Args,
        kw: Vec<(Arc<str>, Value)>,
    ) -> Result<VResult<()>, (Args, Vec<(Arc<str>, Value)>)> {
        let c = match t.methods.get("__init__") {
            Some(Value::Func(c)) if !c.proto.generator => c.clone(),
            _ => return Err((pos, kw)),
        };
        let obj = crate::ops::structs::blank(t);
        pos.insert(0, obj.clone());
        let slots = match call::bind_args(&c, pos, kw) {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        let n = slots.len();
        self.ensure(fpos + 2 + n);
        setv(&mut self.stack[fpos], obj);
        for (i, v) in slots.into_iter().enumerate() {
            setv(&mut self.stack[fpos + 1 + i], v);
        }
        Ok(self.push_frame_as(fpos, Arc::as_ptr(&c), n, Ret::Init))
    }

    /// Give the frame just pushed its `ret` (recorded in `special` unless `Normal`).
    pub(super) fn mark_top(&mut self, ret: Ret) {
        if ret == Ret::Normal {
            return;
        }
        if let Some(f) = self.frames.last_mut() {
            f.ret = ret;
            self.special.push(self.frames.len() as u32);
        }
    }

    /// A frame of kind `ret` whose window began at `base` has been popped,
    /// returning `v`; `stop` is the depth `run` returns at. Carries out
    /// where the value goes (every return off `run`'s fast paths: the
    /// bottom frame of a `run`, and the frames of `Ret`'s other kinds).
    pub(super) fn finish_return(&mut self, ret: Ret, base: usize, v: Value, stop: usize) -> Flow {
        if ret != Ret::Normal {
            self.special.pop();
        }
        let bottom = self.frames.len() <= stop;
        let fpos = base.saturating_sub(1);
        let r = match ret {
            Ret::Normal => {
                if bottom {
                    return Flow::Return(v);
                }
                if let Some(s) = self.stack.get_mut(fpos) {
                    setv(s, v);
                }
                Ok(())
            }
            Ret::Init => {
                if !matches!(v, Value::None) {
                    Err(err(
                        ErrorKind::TypeError,
                        format!("__init__() should return none, not '{}'", v.type_name()),
                    ))
                } else if bottom {
                    return Flow::Return(self.stack.get(fpos).cloned().unwrap_or(Value::None));
                } else {
                    Ok(())
                }
            }
            Ret::GenFor => match self.gen_for_returned(v) {
                // The generator above it in a delegation goes on.
                Ok(None) => Ok(()),
                Ok(Some(v)) => {
                    if bottom {
                        return Flow::Return(v);
                    }
                    self.gen_for_done(v);
                    Ok(())
                }
                Err(e) => Err(e),
            },
            Ret::Cmp | Ret::CmpNot => {
                if let Some(s) = self.stack.get_mut(fpos) {
                    setv(s, Value::Unbound);
                }
                if bottom {
                    return Flow::Return(v);
                }
                self.deliver_cmp(ret, v)
            }
            Ret::Scan => {
                if let Some(s) = self.stack.get_mut(fpos) {
                    setv(s, Value::Unbound);
                }
                if bottom {
                    return Flow::Return(v);
                }
                self.scan_returned(v)
            }
            Ret::Discard => {
                if let Some(s) = self.stack.get_mut(fpos) {
                    setv(s, Value::Unbound);
                }
                if bottom {
                    return Flow::Return(v);
                }
                Ok(())
            }
            Ret::Op | Ret::OpInplace => {
                if let Some(s) = self.stack.get_mut(fpos) {
                    setv(s, Value::Unbound);
                }
                if bottom {
                    return Flow::Return(v);
                }
                self.deliver_op(ret, v)
            }
        };
        match r {
            Ok(()) => Flow::Reload,
            // The caller is the top frame now: the error is raised there.
            Err(e) if bottom => Flow::Fail(e),
            Err(e) => match self.unwind(e, stop) {
                Ok(()) => Flow::Reload,
                Err(e) => Flow::Fail(e),
            },
        }
    }

    /// A comparison method pushed for the top frame's last instruction
    /// (`Cmp`, or `CmpJmp`, whose jump word is at the saved pc) returned
    /// `v`: finish the comparison (the rest of the protocol when `v` is
    /// `NotImplemented`), then store the value or take the jump.
    fn deliver_cmp(&mut self, ret: Ret, v: Value) -> VResult<()> {
        let Some(&fr) = self.frames.last() else { return Ok(()) };
        // SAFETY: the frame is live.
        let code = unsafe { &*fr.code };
        let base = fr.base as usize;
        let pc = fr.pc as usize;
        let reg = |ex: &Executor, r: Reg| ex.stack.get(base + r as usize).cloned().unwrap_or(Value::None);
        let (op, dest, xr, yr) = match code.instrs.get(pc.wrapping_sub(1)).copied() {
            Some(Instr::Cmp { op, a, b, c }) => (op, Some(a), b, c),
            Some(Instr::CmpJmp { op, a, b, .. }) => (op, None, a, b),
            _ => {
                return Err(err(
                    ErrorKind::Error,
                    "internal error: a comparison method returned to no comparison",
                ))
            }
        };
        let v = match (dunder::is_not_implemented(&v), ret) {
            (true, _) => {
                // The operands are copied out only when the other side's method is needed.
                let (x, y) = (reg(self, xr), reg(self, yr));
                if ret == Ret::CmpNot {
                    Value::Bool(!dunder::compare_after_forward(self, CmpOp::Eq, &x, &y)?.truthy()?)
                } else {
                    dunder::compare_after_forward(self, op, &x, &y)?
                }
            }
            (false, Ret::CmpNot) => Value::Bool(!v.truthy()?),
            (false, _) => v,
        };
        match dest {
            Some(a) => {
                if let Some(s) = self.stack.get_mut(base + a as usize) {
                    setv(s, v);
                }
            }
            None => {
                let jt = matches!(code.instrs.get(pc - 1), Some(Instr::CmpJmp { jt: true, .. }));
                self.jump_top_if(&code.instrs, pc, v.truthy()? == jt);
            }
        }
        Ok(())
    }

    /// A two-word test of the top frame (its jump word at the saved pc
    /// `pc`) decided by a frame the VM pushed: follow the jump word when
    /// `take`, else go past it.
    fn jump_top_if(&mut self, instrs: &[Instr], pc: usize, take: bool) {
        let next = if take { jump_target(instrs, pc) } else { pc + 1 };
        if let Some(f) = self.frames.last_mut() {
            f.pc = next as u32;
        }
    }

    /// An operator method pushed for the top frame's last instruction
    /// returned `v`: finish that instruction (the reflected method when
    /// `v` is `NotImplemented`) and store its result.
    fn deliver_op(&mut self, ret: Ret, v: Value) -> VResult<()> {
        let Some(&fr) = self.frames.last() else { return Ok(()) };
        // SAFETY: the frame is live.
        let code = unsafe { &*fr.code };
        let base = fr.base as usize;
        let pc = (fr.pc as usize).saturating_sub(1);
        let ins = code.instrs.get(pc).copied();
        let dest = match ins {
            Some(
                Instr::Add { a, .. }
                | Instr::Sub { a, .. }
                | Instr::Mul { a, .. }
                | Instr::MulT { a, .. }
                | Instr::Bin { a, .. }
                | Instr::AddI { a, .. }
                | Instr::Unary { a, .. }
                | Instr::GetIndex { a, .. },
            ) => a,
            _ => {
                return Err(err(
                    ErrorKind::Error,
                    "internal error: an operator method returned to no operator",
                ))
            }
        };
        let v = if dunder::is_not_implemented(&v) {
            let reg = |ex: &Executor, r: Reg| ex.stack.get(base + r as usize).cloned().unwrap_or(Value::None);
            let operands = match ins {
                Some(Instr::Add { b, c, .. }) => Some((BinOp::Add, reg(self, b), reg(self, c))),
                Some(Instr::Sub { b, c, .. }) => Some((BinOp::Sub, reg(self, b), reg(self, c))),
                Some(Instr::Mul { b, c, .. } | Instr::MulT { b, c, .. }) => {
                    Some((BinOp::Mul, reg(self, b), reg(self, c)))
                }
                Some(Instr::Bin { op, b, c, .. }) => Some((op, reg(self, b), reg(self, c))),
                Some(Instr::AddI { b, v, .. }) => {
                    let (op, k) = if code.is_sub_addi(pc) {
                        (BinOp::Sub, -(v as i64))
                    } else {
                        (BinOp::Add, v as i64)
                    };
                    Some((op, reg(self, b), Value::Int(k)))
                }
                _ => None,
            };
            match (operands, ret) {
                (Some((op, x, y)), Ret::OpInplace) => match dunder::binary_with(self, op, &x, &y) {
                    Some(r) => r?,
                    None => ops::binary(op, &x, &y)?,
                },
                (Some((op, x, y)), _) => dunder::binary_after_forward(self, op, &x, &y)?,
                // A unary method's value is the result, whatever it is.
                (None, _) => v,
            }
        } else {
            v
        };
        if let Some(s) = self.stack.get_mut(base + dest as usize) {
            setv(s, v);
        }
        Ok(())
    }
}
