//! Running a generator one step (`vm/generator.rs`): its saved frame goes
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
use crate::vm::generator::{already_executing, GenObj, GenStatus, SavedFrame, Step};

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
        let (mut saved, was) = {
            let mut st = g.state.lock();
            let was = st.status;
            match was {
                GenStatus::Running => return Err(already_executing()),
                GenStatus::Done => return Ok(Step::Done(Value::None)),
                GenStatus::Created | GenStatus::Suspended => {}
            }
            st.status = GenStatus::Running;
            (std::mem::take(&mut st.frame), was)
        };
        let clo = &g.func;
        let code: &Code = &clo.proto.code;
        let nregs = code.nregs as usize;
        let depth = self.frames.len();
        if depth >= self.max_depth || saved.regs.len() != nregs {
            let bad = saved.regs.len() != nregs;
            let mut st = g.state.lock();
            st.status = was;
            st.frame = saved;
            return Err(if bad {
                err(ErrorKind::Error, "internal error: a generator's saved frame does not fit its code")
            } else {
                err(ErrorKind::RecursionError, "maximum recursion depth exceeded")
            });
        }
        let fpos = self.frame_end();
        self.ensure(fpos + 1 + nregs + 1);
        self.frames.reserve(1);
        let base = fpos + 1;
        setv(&mut self.stack[fpos], Value::Func(clo.clone()));
        for (i, v) in saved.regs.iter_mut().enumerate() {
            std::mem::swap(&mut self.stack[base + i], v);
            // Whatever the slot held (nothing, by the invariants) is dropped.
            setv(v, Value::Unbound);
        }
        let cell_base = self.cells.len();
        if !saved.cells.is_empty() {
            self.cells.append(&mut saved.cells);
        }
        if !saved.handlers.is_empty() {
            for &(target, reg) in &saved.handlers {
                self.handlers.push(Handler { frame: depth as u32, target, reg });
            }
            saved.handlers.clear();
        }
        self.frames.push(Frame { clo: Arc::as_ptr(clo), code, nregs: nregs as u32, pc: saved.pc, base: base as u32, cell_base: cell_base as u32 });
        self.gen_frames.push(depth as u32);
        let r = self.run(depth);
        self.gen_frames.pop();
        let yielded = std::mem::take(&mut self.yielded);
        let out = match r {
            Ok(v) if yielded && self.frames.len() == depth + 1 => {
                self.suspend_top(&mut saved, depth, base, nregs);
                let mut st = g.state.lock();
                st.status = GenStatus::Suspended;
                st.frame = saved;
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
        let mut st = g.state.lock();
        st.status = GenStatus::Done;
        st.frame = SavedFrame::default();
        out
    }

    /// Move the yielded top frame (at depth `depth`) into `saved` and pop it.
    fn suspend_top(&mut self, saved: &mut SavedFrame, depth: usize, base: usize, nregs: usize) {
        let Some(fr) = self.frames.pop() else { return };
        saved.pc = fr.pc;
        // `saved.regs` holds `Unbound`s: the window gets them back.
        for (i, v) in saved.regs.iter_mut().enumerate().take(nregs) {
            if let Some(s) = self.stack.get_mut(base + i) {
                std::mem::swap(s, v);
            }
        }
        let cb = fr.cell_base as usize;
        if self.cells.len() > cb {
            saved.cells.extend(self.cells.drain(cb..));
        }
        if self.handlers.last().is_some_and(|h| h.frame as usize >= depth) {
            let first = self.handlers.iter().position(|h| h.frame as usize >= depth).unwrap_or(self.handlers.len());
            saved.handlers.extend(self.handlers.drain(first..).map(|h| (h.target, h.reg)));
        }
    }

    /// `Instr::Yield` in the frame of a generator being resumed: is the
    /// top frame the one `resume_gen` pushed?
    #[inline]
    pub(super) fn may_yield(&self) -> bool {
        self.gen_frames.last().is_some_and(|&d| d as usize + 1 == self.frames.len())
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
