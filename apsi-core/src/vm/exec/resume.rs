//! Running a generator one step (`value/generator.rs`): its saved frame goes
//! onto this executor's stacks, the dispatch loop runs it until it yields
//! or ends, and a yielded frame goes back into the generator.
//!
//! The frame is pushed at `frame_end()` like any callee, with the closure
//! in the slot below its window (so `Frame::clo` stays valid), and run by
//! a nested `run(depth)`, so the generator's frame is always the one right
//! above `stop`: its returns take the slow path, which clears the whole
//! window (a `ReturnParams` there clears everything too), and
//! `Instr::Yield` can hand its value straight out of `run`.
//!
//! Invariants kept:
//! - "Register windows": a suspended frame's registers are swapped out
//!   into the generator, leaving `Unbound` behind, so nothing of it stays
//!   above the caller's live registers; `unbound_regs` are *not* reset on
//!   resume (they hold the generator's own locals), and a new generator's
//!   registers start as its arguments followed by `Unbound`.
//! - Handlers and cells of the frame leave with it and come back in order.
//! - The nesting of resumes counts as native depth (each is a nested loop
//!   on the Rust stack).

use super::*;
use crate::value::generator::{already_executing, GenObj, GenStatus, SavedFrame, Step};

impl Executor {
    /// Run `g` to its next `yield` (`Step::Item`) or to its end
    /// (`Step::Done` with its return value); errors propagate, and end it.
    pub(crate) fn resume_gen(&mut self, g: &GenObj) -> VResult<Step> {
        self.native_enter()?;
        let r = self.resume_inner(g);
        self.native_leave();
        r
    }

    fn resume_inner(&mut self, g: &GenObj) -> VResult<Step> {
        let depth = self.frames.len();
        let fpos = self.frame_end();
        if !self.enter_gen(g, fpos)? {
            return Ok(Step::Done(Value::None));
        }
        setv(&mut self.stack[fpos], Value::Func(g.func.clone()));
        self.gen_frames.push(depth as u32);
        let r = self.run(depth);
        self.gen_frames.pop();
        let yielded = std::mem::take(&mut self.yielded);
        let out = match r {
            Ok(v) if yielded && self.frames.len() == depth + 1 => {
                self.leave_gen(g);
                setv(&mut self.stack[fpos], Value::Unbound);
                return Ok(Step::Item(v));
            }
            Ok(v) => Ok(Step::Done(v)),
            Err(e) => Err(e),
        };
        // Returned or raised: the frame is gone (popped by its return or by
        // the unwinding); the generator is finished for good.
        if let Some(s) = self.stack.get_mut(fpos) {
            setv(s, Value::Unbound);
        }
        finish_gen(g);
        out
    }

    /// Push `g`'s frame with its callee slot at `fpos` (left to the caller
    /// to fill): its registers, cells and handlers move from the generator
    /// onto this executor's stacks, and it is marked running. `Ok(false)`
    /// when it is finished already.
    fn enter_gen(&mut self, g: &GenObj, fpos: usize) -> VResult<bool> {
        let clo = &g.func;
        let code: &Code = &clo.proto.code;
        let nregs = code.nregs as usize;
        let depth = self.frames.len();
        let mut st = g.state.write();
        match st.status {
            GenStatus::Running => return Err(already_executing()),
            GenStatus::Done => return Ok(false),
            GenStatus::Created | GenStatus::Suspended => {}
        }
        if st.frame.regs.len() != nregs {
            return Err(err(
                ErrorKind::Error,
                "internal error: a generator's saved frame does not fit its code",
            ));
        }
        if depth >= self.max_depth {
            return Err(err(ErrorKind::RecursionError, "maximum recursion depth exceeded"));
        }
        st.status = GenStatus::Running;
        self.ensure(fpos + 1 + nregs + 1);
        let base = fpos + 1;
        // The window's slots hold nothing (see "Register windows"), so the
        // generator keeps `Unbound`s (or scalars) in the registers' place.
        self.stack[base..base + nregs].swap_with_slice(&mut st.frame.regs);
        let cell_base = self.cells.len();
        if !st.frame.cells.is_empty() {
            self.cells.append(&mut st.frame.cells);
        }
        if !st.frame.handlers.is_empty() {
            for &(target, reg) in &st.frame.handlers {
                self.handlers.push(Handler {
                    frame: depth as u32,
                    target,
                    reg,
                });
            }
            st.frame.handlers.clear();
        }
        let pc = st.frame.pc;
        drop(st);
        self.frames.push(Frame {
            clo: Arc::as_ptr(clo),
            code,
            nregs: nregs as u16,
            pc,
            base: base as u32,
            cell_base: cell_base as u32,
            ret: Ret::Normal,
        });
        Ok(true)
    }

    /// The top frame is `g`'s and has just yielded (its resume pc saved):
    /// pop it, moving its registers, cells and handlers back into `g`,
    /// which is suspended.
    fn leave_gen(&mut self, g: &GenObj) {
        let Some(fr) = self.frames.pop() else { return };
        let depth = self.frames.len();
        let base = fr.base as usize;
        let nregs = fr.nregs as usize;
        let mut st = g.state.write();
        st.frame.pc = fr.pc;
        // The generator held `Unbound`s: the window gets them back.
        if let (Some(w), true) = (self.stack.get_mut(base..base + nregs), st.frame.regs.len() == nregs) {
            w.swap_with_slice(&mut st.frame.regs);
        }
        let cb = fr.cell_base as usize;
        if self.cells.len() > cb {
            st.frame.cells.extend(self.cells.drain(cb..));
        }
        if self.handlers.last().is_some_and(|h| h.frame as usize >= depth) {
            let first = self
                .handlers
                .iter()
                .position(|h| h.frame as usize >= depth)
                .unwrap_or(self.handlers.len());
            st.frame
                .handlers
                .extend(self.handlers.drain(first..).map(|h| (h.target, h.reg)));
        }
        st.status = GenStatus::Suspended;
    }

    /// `for x in g` (`ForNext` on the generator `g`, whose `Jmp` word is
    /// at the saved pc): push its frame on this loop as a `Ret::GenFor`
    /// frame. `Ok(false)` when the generator is finished already.
    ///
    /// The callee slot stays empty: the loop's iterator register holds
    /// the generator (and so the frame's closure) for as long as the
    /// `ForNext` waits, which is as long as the frame lives; nothing but
    /// that `ForNext` can change the register meanwhile.
    pub(super) fn push_gen_frame(&mut self, g: &GenObj) -> VResult<bool> {
        if self.gen_for + self.native_depth >= self.shared.max_native_depth {
            return Err(err(
                ErrorKind::RecursionError,
                "maximum recursion depth exceeded (generators nested too deep)",
            ));
        }
        let fpos = self.frame_end();
        if !self.enter_gen(g, fpos)? {
            return Ok(false);
        }
        self.mark_top(Ret::GenFor);
        self.gen_for += 1;
        Ok(true)
    }

    /// `yield v` in a `Ret::GenFor` frame (its resume pc saved): suspend
    /// the frame into its generator and give `v` to the loop below.
    pub(super) fn yield_to_for(&mut self, v: Value) -> Flow {
        let Some(g) = self.loop_generator(self.frames.len().wrapping_sub(2)) else {
            return Flow::Fail(err(
                ErrorKind::Error,
                "internal error: a generator frame without its generator",
            ));
        };
        // SAFETY: the loop's iterator register keeps the generator alive
        // (see `push_gen_frame`); `leave_gen` does not touch that register.
        self.leave_gen(unsafe { &*g });
        self.special.pop();
        self.gen_for = self.gen_for.saturating_sub(1);
        // The loop's `ForNext` is just before its saved pc, its `Jmp` word at it.
        let Some(caller) = self.frames.last_mut() else {
            return Flow::Return(v);
        };
        // SAFETY: the caller's code is alive (its closure is on the stack).
        let code = unsafe { &*caller.code };
        if let Some(&Instr::ForNext { b, .. }) = code.instrs.get((caller.pc as usize).wrapping_sub(1)) {
            caller.pc += 1;
            let slot = caller.base as usize + b as usize;
            if let Some(s) = self.stack.get_mut(slot) {
                setv(s, v);
            }
            return Flow::Reload;
        }
        Flow::Fail(err(ErrorKind::Error, "internal error: a generator yielded to no loop"))
    }

    /// A `Ret::GenFor` frame returned `v` (popped already): the loop below
    /// ends, with `v` in its iterator's second register (`yield from`).
    pub(super) fn gen_for_done(&mut self, v: Value) {
        let Some(caller) = self.frames.last_mut() else { return };
        // SAFETY: as in `yield_to_for`.
        let code = unsafe { &*caller.code };
        let pc = caller.pc as usize;
        if let Some(&Instr::ForNext { a, .. }) = code.instrs.get(pc.wrapping_sub(1)) {
            caller.pc = jump_target(&code.instrs, pc) as u32;
            let slot = caller.base as usize + a as usize + 1;
            if let Some(s) = self.stack.get_mut(slot) {
                setv(s, v);
            }
        }
    }

    /// A `Ret::GenFor` frame ended (returned or raised; popped already,
    /// so its loop's frame is on top): its generator is finished for good.
    pub(super) fn end_gen_for(&mut self) {
        self.gen_for = self.gen_for.saturating_sub(1);
        if let Some(g) = self.loop_generator(self.frames.len().wrapping_sub(1)) {
            // SAFETY: as in `yield_to_for`.
            finish_gen(unsafe { &*g });
        }
    }

    /// The generator in the iterator register of the `ForNext` that frame
    /// `i` waits at (its saved pc is just after it).
    fn loop_generator(&self, i: usize) -> Option<*const GenObj> {
        let fr = self.frames.get(i)?;
        // SAFETY: a live frame's code is alive (its closure is).
        let code = unsafe { &*fr.code };
        match code.instrs.get((fr.pc as usize).wrapping_sub(1))? {
            Instr::ForNext { a, .. } => {
                let g = GenObj::of(self.stack.get(fr.base as usize + *a as usize)?)?;
                Some(g as *const GenObj)
            }
            _ => None,
        }
    }

    /// `Instr::Yield` in the frame of a generator being resumed: is the
    /// top frame the one `resume_gen` pushed?
    #[inline]
    pub(super) fn may_yield(&self) -> bool {
        self.gen_frames
            .last()
            .is_some_and(|&d| d as usize + 1 == self.frames.len())
    }

    /// `ForNext` over a lazy iterator in register `slot`: the next item, or
    /// `None` at the end, when `slot + 1` gets a finished generator's
    /// return value (none for other iterators; `yield from` reads it).
    pub(super) fn for_next_lazy(&mut self, slot: usize) -> VResult<Option<Value>> {
        let it = match self.stack.get(slot) {
            Some(v) => v,
            None => return Ok(None),
        };
        let step = if let Some(g) = GenObj::of(it) {
            // SAFETY: the register keeps the generator alive for this call:
            // the generator's frame runs above this window and cannot
            // write it; if the stack grows, the `Value` moves but the
            // object it points to does not.
            let g: *const GenObj = g;
            self.resume_gen(unsafe { &*g })?
        } else {
            let it = it.clone();
            crate::ops::iters::step(self, &it)?
        };
        match step {
            Step::Item(v) => Ok(Some(v)),
            Step::Done(ret) => {
                if let Some(s) = self.stack.get_mut(slot + 1) {
                    setv(s, ret);
                }
                Ok(None)
            }
        }
    }
}

/// `g` returned or raised: it is finished for good.
fn finish_gen(g: &GenObj) {
    let mut st = g.state.write();
    st.status = GenStatus::Done;
    st.frame = SavedFrame::default();
}
