//! Running a generator one step (`value/generator.rs`): its saved frame goes
//! onto this executor's stacks, the dispatch loop runs it until it yields
//! or ends, and a yielded frame goes back into the generator.
//!
//! Two ways to run a step:
//! - `resume_gen` (a generator driven by `next`, or by a built-in pulling
//!   from it): the frame is pushed at `frame_end()` like any callee, with
//!   the closure in the slot below its window (so `Frame::clo` stays
//!   valid), and run by a nested `run(depth)`, so the generator's frame is
//!   always the one right above `stop`: its returns take the slow path,
//!   which clears the whole window (a `ReturnParams` there clears
//!   everything too), and `Instr::Yield` can hand its value straight out of
//!   `run`.
//! - `push_gen_frame` (`for x in g`, and the `ForNext` of a `yield from`):
//!   the frame is pushed on the running loop as a `Ret::GenFor` frame; its
//!   `yield` hands the value to that `ForNext` (`yield_to_for`).
//!
//! Delegation. A generator suspended in a `yield from` over another
//! generator (`Code::yield_from_site`: its frame would only pull the next
//! item of that generator and yield it) need not run at all: a step of it
//! is a step of the generator it waits on, and so on down to the innermost
//! one, whose frame is the only one that runs. The outermost generator
//! (the one the step was asked of, the *root*) keeps that chain
//! (`GenState::chain`), so a step costs the same however deep the
//! `yield from` nesting is:
//! - the innermost generator yields: that is the root's item; nothing
//!   above it moves;
//! - it returns `v`: the one above it continues after its `yield from`
//!   loop with `v` as the loop's value (`Entry::Finished`), and is the
//!   innermost one from then on;
//! - it raises: the error is raised in the one above at its loop's
//!   `ForNext` (`Entry::Raised`), so its handlers, `finally` blocks and
//!   trace entry come in the order they would without delegation.
//!
//! The chain is a cache: each generator's own saved frame says whom it
//! waits on. A link above the innermost generator can only change after
//! that generator has finished (the one above it runs only then), so the
//! chain is right as long as its last generator is not finished; when it
//! is, the one above is checked under its lock to still wait on it
//! (`Entry::Finished` carries the finished generator for that). Whenever
//! the chain cannot be trusted, the root's own frame is resumed, which is
//! always right (its `ForNext` pulls from the next level as it would
//! without delegation), only slower. While any generator of a chain runs,
//! resuming any generator above it raises `generator already executing`,
//! as in Python: following the chain ends at a running generator.
//!
//! Invariants kept:
//! - "Register windows": a suspended frame's registers are swapped out
//!   into the generator, leaving `Unbound` behind, so nothing of it stays
//!   above the caller's live registers; `unbound_regs` are *not* reset on
//!   resume (they hold the generator's own locals), and a new generator's
//!   registers start as its arguments followed by `Unbound`.
//! - Handlers and cells of the frame leave with it and come back in order.
//! - The generator whose frame runs for a root is the last of the root's
//!   chain, or the root itself when the chain is empty; a generator's own
//!   chain is emptied whenever its frame is entered.
//! - The nesting of resumes counts as native depth (each is a nested loop
//!   on the Rust stack).

use super::*;
use crate::value::generator::{already_executing, GenObj, GenState, GenStatus, Step};

/// How the frame of the generator a step runs is entered.
pub(super) enum Entry {
    /// At its saved pc.
    Resume,
    /// It waits in a `yield from` over `sub`, which has finished with
    /// value `v`: after the loop, with `v` as the loop's value. Only if it
    /// still waits on `sub` (checked under its lock).
    Finished { sub: Value, v: Value },
    /// As `Finished`, but `sub` raised: at the loop's `ForNext`, where the
    /// caller raises the error.
    Raised { sub: Value },
}

/// What `enter_gen` did.
#[derive(PartialEq, Eq)]
pub(super) enum Entered {
    /// The frame is pushed.
    Yes,
    /// The generator has finished: nothing pushed.
    Done,
    /// `Finished`/`Raised`, but the generator does not wait on that `sub`
    /// (a stale chain): nothing pushed.
    Stale,
}

/// The generator a step of a root runs, and how.
enum Target {
    /// The root has finished.
    Done,
    Run(*const GenObj, Entry),
}

/// The generator that `g` (suspended, state `st`) waits on in a `yield
/// from`, if it waits on one.
#[inline]
fn delegate<'s>(g: &GenObj, st: &'s GenState) -> Option<&'s Value> {
    if !g.may_delegate || st.status != GenStatus::Suspended {
        return None;
    }
    let site = g.func.proto.code.yield_from_site(st.frame.pc as usize)?;
    let v = st.frame.regs.get(site.it as usize)?;
    GenObj::of(v).map(|_| v)
}

/// The generator inside a chain entry.
#[inline]
fn gen_ptr(v: &Value) -> *const GenObj {
    GenObj::of(v).map_or(std::ptr::null(), |g| g as *const GenObj)
}

/// Which generator a step of `root` runs (see "Delegation"), extending
/// the root's chain as far as the generators wait on each other.
fn target(root: &GenObj) -> VResult<Target> {
    let rp: *const GenObj = root;
    let mut st = root.state.write();
    match st.status {
        GenStatus::Running => return Err(already_executing()),
        GenStatus::Done => return Ok(Target::Done),
        GenStatus::Created => return Ok(Target::Run(rp, Entry::Resume)),
        GenStatus::Suspended => {}
    }
    if st.chain.is_empty() {
        match delegate(root, &st) {
            Some(d) => {
                let d = d.clone();
                st.chain.push(d);
            }
            None => return Ok(Target::Run(rp, Entry::Resume)),
        }
    }
    loop {
        let leaf = st.chain.last().map_or(std::ptr::null(), gen_ptr);
        if leaf.is_null() || std::ptr::eq(leaf, rp) || st.chain.len() > 1 << 20 {
            // Not a chain this module builds: the root's own frame decides.
            st.chain.clear();
            return Ok(Target::Run(rp, Entry::Resume));
        }
        // SAFETY: the chain holds the generator.
        let lg = unsafe { &*leaf };
        let ls = lg.state.read();
        match ls.status {
            GenStatus::Running => return Err(already_executing()),
            GenStatus::Created => return Ok(Target::Run(leaf, Entry::Resume)),
            GenStatus::Suspended => match delegate(lg, &ls) {
                Some(d) => {
                    let d = d.clone();
                    drop(ls);
                    st.chain.push(d);
                }
                None => return Ok(Target::Run(leaf, Entry::Resume)),
            },
            GenStatus::Done => {
                // Finished by a step that did not come through this root:
                // the one above goes on after its loop (value none, as a
                // `yield from` over an exhausted generator gets).
                drop(ls);
                let sub = st.chain.pop().unwrap_or(Value::None);
                let parent = st.chain.last().map_or(rp, gen_ptr);
                return Ok(Target::Run(parent, Entry::Finished { sub, v: Value::None }));
            }
        }
    }
}

/// The innermost generator of `root`'s chain has ended: drop it from the
/// chain and give the one now running for the root (`None`: the root
/// itself ended), with the finished generator.
fn pop_chain(root: &GenObj) -> Option<(*const GenObj, Value)> {
    let mut st = root.state.write();
    let sub = st.chain.pop()?;
    let parent = st.chain.last().map_or(root as *const GenObj, gen_ptr);
    Some((parent, sub))
}

/// Forget `root`'s chain (its own frame is resumed instead).
fn clear_chain(root: &GenObj) {
    let old = std::mem::take(&mut root.state.write().chain);
    drop(old);
}

impl Executor {
    /// Run `g` to its next `yield` (`Step::Item`) or to its end
    /// (`Step::Done` with its return value); errors propagate, and end it.
    pub(crate) fn resume_gen(&mut self, g: &GenObj) -> VResult<Step> {
        self.native_enter()?;
        let r = self.resume_inner(g);
        self.native_leave();
        r
    }

    fn resume_inner(&mut self, root: &GenObj) -> VResult<Step> {
        let depth = self.frames.len();
        let fpos = self.frame_end();
        // The usual step: the root delegates nothing and runs its own frame.
        match self.enter_plain(root, fpos)? {
            Some(false) => Ok(Step::Done(Value::None)),
            Some(true) => {
                setv(&mut self.stack[fpos], Value::Func(root.func.clone()));
                let r = self.run_gen_frame(depth);
                let yielded = std::mem::take(&mut self.yielded);
                if let Some(s) = self.stack.get_mut(fpos) {
                    setv(s, Value::Unbound);
                }
                match r {
                    Ok(v) if yielded && self.frames.len() == depth + 1 => {
                        self.leave_gen(root);
                        Ok(Step::Item(v))
                    }
                    // Returned or raised: the frame is gone (popped by its
                    // return or by the unwinding); finished for good.
                    r => {
                        finish_gen(root);
                        r.map(Step::Done)
                    }
                }
            }
            None => self.resume_delegating(root, depth, fpos),
        }
    }

    /// `resume_inner` for a root that delegates (see "Delegation").
    #[inline(never)]
    fn resume_delegating(&mut self, root: &GenObj, depth: usize, fpos: usize) -> VResult<Step> {
        let rp: *const GenObj = root;
        let (mut gp, mut entry) = match target(root)? {
            Target::Done => return Ok(Step::Done(Value::None)),
            Target::Run(g, e) => (g, e),
        };
        // An error that the generator running now must raise as it enters.
        let mut raise: Option<Exc> = None;
        loop {
            // SAFETY: `gp` is the root, or a generator of its chain, which
            // holds it; the chain does not change while this step runs
            // (stepping the root from inside raises).
            let g = unsafe { &*gp };
            match self.enter_gen(g, fpos, entry)? {
                Entered::Yes => {}
                Entered::Done if std::ptr::eq(gp, rp) => {
                    return match raise {
                        Some(e) => Err(e),
                        None => Ok(Step::Done(Value::None)),
                    }
                }
                // The chain was stale (or its generator ended meanwhile,
                // on another thread): the root's own frame goes on, and an
                // error on its way up goes on up.
                Entered::Done | Entered::Stale => {
                    clear_chain(root);
                    if let Some(e) = raise {
                        return Err(e);
                    }
                    gp = rp;
                    entry = Entry::Resume;
                    continue;
                }
            }
            setv(&mut self.stack[fpos], Value::Func(g.func.clone()));
            let r = match raise.take() {
                Some(e) => match self.unwind(e, depth) {
                    Ok(()) => self.run_gen_frame(depth),
                    Err(e) => Err(e),
                },
                None => self.run_gen_frame(depth),
            };
            let yielded = std::mem::take(&mut self.yielded);
            let out = match r {
                Ok(v) if yielded && self.frames.len() == depth + 1 => {
                    self.leave_gen(g);
                    setv(&mut self.stack[fpos], Value::Unbound);
                    return Ok(Step::Item(v));
                }
                Ok(v) => Ok(v),
                Err(e) => Err(e),
            };
            // Returned or raised: the frame is gone (popped by its return or by
            // the unwinding); the generator is finished for good.
            if let Some(s) = self.stack.get_mut(fpos) {
                setv(s, Value::Unbound);
            }
            finish_gen(g);
            if std::ptr::eq(gp, rp) {
                return out.map(Step::Done);
            }
            // The innermost generator of a delegation ended: the one above
            // it goes on with its value or its error.
            let Some((parent, sub)) = pop_chain(root) else {
                return out.map(Step::Done);
            };
            gp = parent;
            entry = match out {
                Ok(v) => Entry::Finished { sub, v },
                Err(e) => {
                    raise = Some(e);
                    Entry::Raised { sub }
                }
            };
        }
    }

    /// `run(depth)` for a generator frame `resume_inner` pushed.
    #[inline]
    fn run_gen_frame(&mut self, depth: usize) -> VResult<Value> {
        self.gen_frames.push(depth as u32);
        let r = self.run(depth);
        self.gen_frames.pop();
        r
    }

    /// Push `g`'s frame with its callee slot at `fpos` (left to the caller
    /// to fill): its registers, cells and handlers move from the generator
    /// onto this executor's stacks, and it is marked running; `entry` says
    /// where it goes on (see `Entry`).
    pub(super) fn enter_gen(&mut self, g: &GenObj, fpos: usize, entry: Entry) -> VResult<Entered> {
        let code: &Code = &g.func.proto.code;
        let mut st = g.state.write();
        match st.status {
            GenStatus::Running => return Err(already_executing()),
            GenStatus::Done => return Ok(Entered::Done),
            GenStatus::Created | GenStatus::Suspended => {}
        }
        // Where it goes on: its saved pc, or after / at a `yield from` loop.
        let (pc, site) = match &entry {
            Entry::Resume => (st.frame.pc, None),
            Entry::Finished { sub, .. } | Entry::Raised { sub } => {
                let waits_on_sub = delegate(g, &st).is_some_and(|d| std::ptr::eq(gen_ptr(d), gen_ptr(sub)));
                match code.yield_from_site(st.frame.pc as usize) {
                    Some(site) if waits_on_sub => {
                        let pc = match entry {
                            Entry::Finished { .. } => site.exit,
                            _ => site.for_next + 1,
                        };
                        (pc, Some(site))
                    }
                    _ => return Ok(Entered::Stale),
                }
            }
        };
        if !st.chain.is_empty() {
            let chain = std::mem::take(&mut st.chain);
            drop(st);
            drop(chain);
            st = g.state.write();
        }
        let base = self.enter_locked(g, &mut st, fpos, pc)?;
        drop(st);
        if let Some(site) = site {
            // The loop's item register would hold `none` after its `yield`;
            // a finished loop leaves its value in `it + 1`.
            setv(&mut self.stack[base + site.x as usize], Value::None);
            if let Entry::Finished { v, .. } = entry {
                setv(&mut self.stack[base + site.it as usize + 1], v);
            }
        }
        Ok(Entered::Yes)
    }

    /// `enter_gen(g, fpos, Entry::Resume)` for a generator that delegates
    /// nothing (the usual step): `None`, with nothing done, when a step of
    /// `g` must go through `target` (it waits in a `yield from` over a
    /// generator, keeps a chain, or is running); `Some(false)` when it is
    /// finished.
    #[inline]
    fn enter_plain(&mut self, g: &GenObj, fpos: usize) -> VResult<Option<bool>> {
        let mut st = g.state.write();
        match st.status {
            GenStatus::Done => return Ok(Some(false)),
            GenStatus::Running => return Ok(None),
            GenStatus::Created | GenStatus::Suspended => {}
        }
        if !st.chain.is_empty() || delegate(g, &st).is_some() {
            return Ok(None);
        }
        let pc = st.frame.pc;
        self.enter_locked(g, &mut st, fpos, pc)?;
        Ok(Some(true))
    }

    /// The common half of entering `g` (not running nor finished; its
    /// state `st` locked) at `pc`: returns the frame's base.
    #[inline(always)]
    fn enter_locked(&mut self, g: &GenObj, st: &mut GenState, fpos: usize, pc: u32) -> VResult<usize> {
        let clo = &g.func;
        let code: &Code = &clo.proto.code;
        let nregs = code.nregs as usize;
        let depth = self.frames.len();
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
        self.frames.push(Frame {
            clo: Arc::as_ptr(clo),
            code,
            nregs: nregs as u16,
            pc,
            base: base as u32,
            cell_base: cell_base as u32,
            ret: Ret::Normal,
        });
        Ok(base)
    }

    /// The top frame is `g`'s and has just yielded (its resume pc saved):
    /// pop it, moving its registers, cells and handlers back into `g`,
    /// which is suspended.
    fn leave_gen(&mut self, g: &GenObj) {
        let mut st = g.state.write();
        self.leave_locked(&mut st);
    }

    /// `leave_gen` for a `Ret::GenFor` frame whose loop's generator is
    /// `root`: the frame is the root's, or the last of its chain's. (Kept
    /// out of `run`: inlined there it slows the loop's generator steps.)
    #[inline(never)]
    fn leave_for(&mut self, root: &GenObj) {
        let mut st = root.state.write();
        if st.chain.is_empty() {
            self.leave_locked(&mut st);
            return;
        }
        let running = st.chain.last().map_or(std::ptr::null(), gen_ptr);
        drop(st);
        if !running.is_null() {
            // SAFETY: the root's chain holds it.
            self.leave_gen(unsafe { &*running });
        }
    }

    /// `leave_gen` with the generator's state locked.
    #[inline(always)]
    fn leave_locked(&mut self, st: &mut GenState) {
        let Some(fr) = self.frames.pop() else { return };
        let depth = self.frames.len();
        let base = fr.base as usize;
        let nregs = fr.nregs as usize;
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
    /// at the saved pc): push the frame of the generator a step of `g`
    /// runs (`g`'s own, or the innermost one of its delegation chain) on
    /// this loop as a `Ret::GenFor` frame. `Ok(false)` when `g` is
    /// finished already.
    ///
    /// The callee slot stays empty: the loop's iterator register holds
    /// `g` (and through its chain and saved frames the generator that
    /// runs, and so the frame's closure) for as long as the `ForNext`
    /// waits, which is as long as the frame lives; nothing but that
    /// `ForNext` can change the register meanwhile.
    pub(super) fn push_gen_frame(&mut self, g: &GenObj) -> VResult<bool> {
        if self.gen_for + self.native_depth >= self.shared.max_native_depth {
            return Err(err(
                ErrorKind::RecursionError,
                "maximum recursion depth exceeded (generators nested too deep)",
            ));
        }
        if let Some(entered) = self.enter_plain(g, self.frame_end())? {
            if entered {
                self.mark_top(Ret::GenFor);
                self.gen_for += 1;
            }
            return Ok(entered);
        }
        let (gp, entry) = match target(g)? {
            Target::Done => return Ok(false),
            Target::Run(gp, entry) => (gp, entry),
        };
        // SAFETY: `g`, or a generator of its chain, which holds it.
        match self.push_for_frame(unsafe { &*gp }, entry)? {
            Entered::Yes => Ok(true),
            Entered::Done if std::ptr::eq(gp, g) => Ok(false),
            Entered::Done | Entered::Stale => {
                clear_chain(g);
                Ok(self.push_for_frame(g, Entry::Resume)? == Entered::Yes)
            }
        }
    }

    /// Enter `g`'s frame above the top frame as a `Ret::GenFor` frame.
    fn push_for_frame(&mut self, g: &GenObj, entry: Entry) -> VResult<Entered> {
        let fpos = self.frame_end();
        let r = self.enter_gen(g, fpos, entry)?;
        if r == Entered::Yes {
            self.mark_top(Ret::GenFor);
            self.gen_for += 1;
        }
        Ok(r)
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
        // (see `push_gen_frame`), and it the one that runs; `leave_gen`
        // does not touch that register.
        self.leave_for(unsafe { &*g });
        self.special.pop();
        self.gen_for = self.gen_for.saturating_sub(1);
        // The loop's `ForNext` or `ForLoop` is just before its saved pc,
        // its `Jmp` word at it.
        let Some(caller) = self.frames.last_mut() else {
            return Flow::Return(v);
        };
        // SAFETY: the caller's code is alive (its closure is on the stack).
        let code = unsafe { &*caller.code };
        let pc = caller.pc as usize;
        if let Some(&(Instr::ForNext { b, .. } | Instr::ForLoop { b, .. })) = code.instrs.get(pc.wrapping_sub(1)) {
            caller.pc = for_step_pc(&code.instrs, pc, true) as u32;
            let slot = caller.base as usize + b as usize;
            if let Some(s) = self.stack.get_mut(slot) {
                setv(s, v);
            }
            return Flow::Reload;
        }
        Flow::Fail(err(ErrorKind::Error, "internal error: a generator yielded to no loop"))
    }

    /// A `Ret::GenFor` frame returned `v` (popped already, so its loop's
    /// frame is on top): its generator is finished for good. `Some(v)`
    /// when the loop ends with `v`; `None` when the generator was the
    /// innermost of a delegation and the one above it now runs (pushed).
    pub(super) fn gen_for_returned(&mut self, v: Value) -> VResult<Option<Value>> {
        let Some(root) = self.end_gen_for() else {
            return Ok(Some(v));
        };
        // SAFETY: as in `yield_to_for`.
        let root = unsafe { &*root };
        let Some((parent, sub)) = pop_chain(root) else {
            return Ok(Some(v));
        };
        // SAFETY: the chain holds `parent` (or it is the root).
        match self.push_for_frame(unsafe { &*parent }, Entry::Finished { sub, v })? {
            Entered::Yes => Ok(None),
            Entered::Done | Entered::Stale => {
                clear_chain(root);
                match self.push_for_frame(root, Entry::Resume)? {
                    Entered::Yes => Ok(None),
                    _ => Ok(Some(Value::None)),
                }
            }
        }
    }

    /// The loop whose generator ended (its frame on top) ends, with `v`
    /// in its iterator's second register (`yield from` reads it).
    pub(super) fn gen_for_done(&mut self, v: Value) {
        let Some(caller) = self.frames.last_mut() else { return };
        // SAFETY: as in `yield_to_for`.
        let code = unsafe { &*caller.code };
        let pc = caller.pc as usize;
        if let Some(&(Instr::ForNext { a, .. } | Instr::ForLoop { a, .. })) = code.instrs.get(pc.wrapping_sub(1)) {
            caller.pc = for_step_pc(&code.instrs, pc, false) as u32;
            let slot = caller.base as usize + a as usize + 1;
            if let Some(s) = self.stack.get_mut(slot) {
                setv(s, v);
            }
        }
    }

    /// A `Ret::GenFor` frame raised (popped already, so its loop's frame is
    /// on top): its generator is finished for good. `true` when it was the
    /// innermost of a delegation and the one above it is pushed, to raise
    /// the error at its `yield from` loop.
    pub(super) fn gen_for_raised(&mut self) -> bool {
        let Some(root) = self.end_gen_for() else { return false };
        // SAFETY: as in `yield_to_for`.
        let root = unsafe { &*root };
        let Some((parent, sub)) = pop_chain(root) else {
            return false;
        };
        // SAFETY: the chain holds `parent` (or it is the root).
        match self.push_for_frame(unsafe { &*parent }, Entry::Raised { sub }) {
            Ok(Entered::Yes) => true,
            _ => {
                clear_chain(root);
                false
            }
        }
    }

    /// A `Ret::GenFor` frame ended (returned or raised; popped already,
    /// so its loop's frame is on top): the generator that ran is finished
    /// for good. Gives the root (the loop's generator).
    fn end_gen_for(&mut self) -> Option<*const GenObj> {
        self.gen_for = self.gen_for.saturating_sub(1);
        let root = self.loop_generator(self.frames.len().wrapping_sub(1))?;
        // SAFETY: as in `yield_to_for`.
        let r = unsafe { &*root };
        let mut st = r.state.write();
        if st.chain.is_empty() {
            // (See `finish_gen`.)
            st.status = GenStatus::Done;
        } else {
            let running = st.chain.last().map_or(std::ptr::null(), gen_ptr);
            drop(st);
            if !running.is_null() {
                // SAFETY: the root's chain holds it.
                finish_gen(unsafe { &*running });
            }
        }
        Some(root)
    }

    /// The generator in the iterator register of the `ForNext` (or
    /// `ForLoop`) that frame
    /// `i` waits at (its saved pc is just after it).
    fn loop_generator(&self, i: usize) -> Option<*const GenObj> {
        let fr = self.frames.get(i)?;
        // SAFETY: a live frame's code is alive (its closure is).
        let code = unsafe { &*fr.code };
        match code.instrs.get((fr.pc as usize).wrapping_sub(1))? {
            Instr::ForNext { a, .. } | Instr::ForLoop { a, .. } => {
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

/// `g` returned or raised: it is finished for good. (Its saved frame
/// holds nothing of its own: the frame ran on the executor's stack, which
/// got the registers, cells and handlers, and it stays as it is until the
/// generator is dropped. A running generator's chain is empty.)
fn finish_gen(g: &GenObj) {
    let mut st = g.state.write();
    st.status = GenStatus::Done;
    if !st.chain.is_empty() {
        let chain = std::mem::take(&mut st.chain);
        drop(st);
        drop(chain);
    }
}
