//! The per-thread executor: a value stack of register windows, a heap stack
//! of frames, and the dispatch loop.
//!
//! Apsi → Apsi calls never recurse on the Rust stack: a call pushes a
//! `Frame` and the loop continues with the callee. Only native callbacks
//! (`Caller::call`) re-enter the loop, and their nesting is bounded.
//!
//! Invariants:
//! - Every frame's window `base .. base + nregs` lies inside `stack`, and the
//!   closure that `Frame::clo` points to is kept alive either by the slot just
//!   below `base` (a `Value::Func`) or by a write-once global slot that the
//!   caller's code object holds (`CallGlobal`); callers outlive callees.
//! - `stack` only grows; slots above the live windows are `none`.
//! - A handler belongs to one frame and is dropped when that frame ends.

use super::call;
use super::function::{Cell, Closure};
use super::runtime::Shared;
use super::value::*;
use crate::compile::code::{Capture, Code, Instr, Reg, NO_REG};
use crate::diagnostic::TraceEntry;
use crate::error::ErrorKind;
use crate::syntax::ast::{BinOp, CmpOp, UnaryOp};
use crate::{format, ops};
use smallvec::SmallVec;
use std::sync::Arc;

pub(crate) type Args = SmallVec<[Value; 8]>;

#[derive(Clone, Copy)]
struct Frame {
    clo: *const Closure,
    code: *const Code,
    nregs: u32,
    pc: u32,
    base: u32,
    cell_base: u32,
}

#[derive(Clone, Copy)]
struct Handler {
    frame: u32,
    target: u32,
    reg: u16,
}

/// Runs Apsi code on one thread. Cheap to create; one per OS thread.
pub struct Executor {
    pub(crate) shared: Arc<Shared>,
    stack: Vec<Value>,
    frames: Vec<Frame>,
    cells: Vec<Arc<Cell>>,
    handlers: Vec<Handler>,
    native_depth: usize,
    max_depth: usize,
    /// (error, frame) whose trace entry was recorded when a handler caught it.
    reraise_skip: Option<(usize, usize)>,
    /// This thread runs Apsi code (containers lock while others do too).
    _participant: super::vlock::Participant,
}

// SAFETY: the only non-Send fields are the raw closure pointers in `frames`;
// each points into an `Arc<Closure>` owned by a `Value` in this executor's own
// `stack`, so moving the executor moves the owners along with the pointers.
unsafe impl Send for Executor {}

const TRACE_INNER: usize = 40;
const TRACE_OUTER: usize = 20;

fn type_err(msg: String) -> Exc {
    err(ErrorKind::TypeError, msg)
}

/// Store into a register; a scalar being overwritten needs no drop.
#[inline(always)]
/// For an `Instr::MulT { a: t, .. }` just before `pc`: the `Add` reading `t`
/// as (instructions to skip, its destination, its other operand's register,
/// the load that fills that register first, if any).
fn mul_add_partner(instrs: &[Instr], pc: usize, t: Reg) -> Option<(usize, Reg, Reg, Option<Instr>)> {
    match *instrs.get(pc)? {
        Instr::Add { a, b, c } if b == t && c != t => Some((1, a, c, None)),
        ld @ (Instr::GetGlobal { a: rz, .. } | Instr::LoadK { a: rz, .. }) if rz != t => match *instrs.get(pc + 1)? {
            Instr::Add { a, b, c } if b == t && c == rz => Some((2, a, c, Some(ld))),
            _ => None,
        },
        _ => None,
    }
}

fn setv(slot: &mut Value, v: Value) {
    if matches!(slot, Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Unbound) {
        // SAFETY: the old value owns nothing, so skipping its drop leaks nothing.
        unsafe { std::ptr::write(slot, v) }
    } else {
        *slot = v;
    }
}

/// Copy a register; scalars are copied without touching a refcount.
///
/// The payload is read on its own (volatile, so the compiler cannot merge it
/// into one 16-byte load): a register was usually just written as a tag byte
/// plus an 8-byte payload, and a 16-byte load of that would stall on
/// store-to-load forwarding.
#[inline(always)]
fn dup(v: &Value) -> Value {
    // SAFETY: plain reads of valid, aligned fields.
    unsafe {
        match v {
            Value::Int(i) => Value::Int(std::ptr::read_volatile(i)),
            Value::Float(f) => Value::Float(std::ptr::read_volatile(f)),
            Value::Bool(b) => Value::Bool(std::ptr::read_volatile(b)),
            Value::None => Value::None,
            other => other.clone(),
        }
    }
}

/// Program output is flushed before `input()` reads, so its prompt shows.
#[inline(always)]
fn flush_before(shared: &Shared, nf: &NativeFn) {
    if &*nf.name == "input" {
        let _ = shared.flush_out();
    }
}

/// A returned value on its way to the caller's register.
enum Ret {
    Int(i64),
    Float(f64),
    Bool(bool),
    Val(Value),
}

/// Store a copy of `src` into `dst`. Each scalar arm stores its own variant
/// directly, so no 16-byte temporary is built and re-read (which would stall
/// store-to-load forwarding).
#[inline(always)]
fn copy_to(dst: &mut Value, src: &Value) {
    match *src {
        Value::Int(i) => setv(dst, Value::Int(i)),
        Value::Float(f) => setv(dst, Value::Float(f)),
        Value::Bool(b) => setv(dst, Value::Bool(b)),
        Value::None => setv(dst, Value::None),
        ref other => {
            let v = other.clone();
            setv(dst, v)
        }
    }
}

/// Move a value out of a register (scalars are copied and left in place).
#[inline(always)]
fn take(v: &mut Value) -> Value {
    if matches!(v, Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_)) {
        dup(v)
    } else {
        std::mem::replace(v, Value::None)
    }
}

#[inline(always)]
fn jump_target(instrs: &[Instr], pc: usize) -> usize {
    match instrs.get(pc) {
        Some(Instr::Jmp { t }) => *t as usize,
        _ => pc + 1,
    }
}

#[inline(always)]
fn cmp_fast(op: CmpOp, a: &Value, b: &Value) -> Option<bool> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(match op {
            CmpOp::Lt => x < y,
            CmpOp::LtE => x <= y,
            CmpOp::Gt => x > y,
            CmpOp::GtE => x >= y,
            CmpOp::Eq => x == y,
            CmpOp::NotEq => x != y,
            _ => return None,
        }),
        (Value::Float(x), Value::Float(y)) => Some(match op {
            CmpOp::Lt => x < y,
            CmpOp::LtE => x <= y,
            CmpOp::Gt => x > y,
            CmpOp::GtE => x >= y,
            CmpOp::Eq => x == y,
            CmpOp::NotEq => x != y,
            _ => return None,
        }),
        _ => None,
    }
}

#[inline(always)]
fn cmp_int(op: CmpOp, x: i64, y: i64) -> bool {
    match op {
        CmpOp::Lt => x < y,
        CmpOp::LtE => x <= y,
        CmpOp::Gt => x > y,
        CmpOp::GtE => x >= y,
        CmpOp::Eq | CmpOp::Is => x == y,
        _ => x != y,
    }
}

fn compare(op: CmpOp, a: &Value, b: &Value) -> VResult<bool> {
    match op {
        CmpOp::Is => Ok(a.is(b)),
        CmpOp::IsNot => Ok(!a.is(b)),
        _ => ops::compare(op, a, b),
    }
}

#[inline(always)]
fn bin_fast(op: BinOp, a: &Value, b: &Value) -> Option<Value> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => {
            let (x, y) = (*x, *y);
            match op {
                BinOp::Add => x.checked_add(y).map(Value::Int),
                BinOp::Sub => x.checked_sub(y).map(Value::Int),
                BinOp::Mul => x.checked_mul(y).map(Value::Int),
                BinOp::FloorDiv if y > 0 => Some(Value::Int(x.div_euclid(y))),
                BinOp::Mod if y > 0 => Some(Value::Int(x.rem_euclid(y))),
                BinOp::Div if y != 0 && x.unsigned_abs() < (1 << 53) && y.unsigned_abs() < (1 << 53) => Some(Value::Float(x as f64 / y as f64)),
                BinOp::BitAnd => Some(Value::Int(x & y)),
                BinOp::BitOr => Some(Value::Int(x | y)),
                BinOp::BitXor => Some(Value::Int(x ^ y)),
                _ => None,
            }
        }
        (Value::Float(x), Value::Float(y)) => float_op(op, *x, *y),
        (Value::Float(x), Value::Int(y)) => float_op(op, *x, *y as f64),
        (Value::Int(x), Value::Float(y)) => float_op(op, *x as f64, *y),
        _ => None,
    }
}

#[inline(always)]
fn float_op(op: BinOp, x: f64, y: f64) -> Option<Value> {
    match op {
        BinOp::Add => Some(Value::Float(x + y)),
        BinOp::Sub => Some(Value::Float(x - y)),
        BinOp::Mul => Some(Value::Float(x * y)),
        BinOp::Div if y != 0.0 => Some(Value::Float(x / y)),
        _ => None,
    }
}

impl Executor {
    pub fn new(shared: Arc<Shared>) -> Executor {
        let max_depth = shared.max_depth;
        Executor {
            max_depth, shared, stack: vec![Value::Unbound; 256], frames: Vec::new(), cells: Vec::new(), handlers: Vec::new(), native_depth: 0, reraise_skip: None, _participant: super::vlock::Participant::new() }
    }

    /// The first stack slot above every live register window.
    fn frame_end(&self) -> usize {
        match self.frames.last() {
            Some(f) => f.base as usize + f.nregs as usize,
            None => 0,
        }
    }

    #[inline(always)]
    fn ensure(&mut self, n: usize) {
        if self.stack.len() < n {
            let new = n.max(self.stack.len() * 2);
            self.stack.resize(new, Value::Unbound);
        }
    }

    /// Call any callable with the given arguments, running Apsi code to completion.
    pub fn call_value(&mut self, f: &Value, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
        let fpos = self.frame_end();
        self.ensure(fpos + 2 + args.len());
        self.stack[fpos] = f.clone();
        let pos: Args = args.iter().cloned().collect();
        let kw: Vec<(Arc<str>, Value)> = kwargs.to_vec();
        let depth = self.frames.len();
        let r = match self.setup_call(fpos, f.clone(), pos, kw) {
            Ok(Some(v)) => Ok(v),
            Ok(None) => self.run(depth),
            Err(e) => Err(e),
        };
        if let Some(s) = self.stack.get_mut(fpos) {
            *s = Value::Unbound;
        }
        r
    }

    fn push_frame(&mut self, fpos: usize, clo: *const Closure) -> VResult<()> {
        if self.frames.len() >= self.max_depth {
            return Err(err(ErrorKind::RecursionError, "maximum recursion depth exceeded"));
        }
        // SAFETY: `clo` is owned by the Value at `stack[fpos]` (or by a write-once global).
        let code: *const Code = &*unsafe { &*clo }.proto.code;
        let nregs = unsafe { &*code }.nregs as usize;
        let base = fpos + 1;
        self.ensure(base + nregs + 1);
        self.frames.push(Frame { clo, code, nregs: nregs as u32, pc: 0, base: base as u32, cell_base: self.cells.len() as u32 });
        Ok(())
    }

    /// Prepare a call of `f` placed at `stack[fpos]` with arguments taken out
    /// of the registers. Returns the value at once for natives, struct
    /// constructors and error kinds, or `None` when a frame was pushed.
    pub(crate) fn setup_call(&mut self, fpos: usize, f: Value, mut pos: Args, kw: Vec<(Arc<str>, Value)>) -> VResult<Option<Value>> {
        match f {
            Value::Func(c) => {
                let slots = call::bind_args(&c, pos, kw)?;
                let slots_len = slots.len();
                self.ensure(fpos + 1 + slots.len() + 1);
                for (i, v) in slots.into_iter().enumerate() {
                    self.stack[fpos + 1 + i] = v;
                }
                let n = slots_len;
                let ptr = Arc::as_ptr(&c);
                self.stack[fpos] = Value::Func(c);
                if let Err(e) = self.push_frame(fpos, ptr) {
                    // No frame owns these slots: leave them unbound again.
                    for s in self.stack.iter_mut().skip(fpos).take(n + 1) {
                        *s = Value::Unbound;
                    }
                    return Err(e);
                }
                Ok(None)
            }
            Value::Native(nf) => {
                flush_before(&self.shared, &nf);
                nf.call(self, &pos, &kw).map(Some)
            }
            Value::BoundMethod(bm) => {
                pos.insert(0, bm.receiver.clone());
                self.setup_call(fpos, bm.func.clone(), pos, kw)
            }
            Value::StructType(t) => call::construct_struct(&t, pos, kw).map(Some),
            Value::Kind(k) => call::make_error(k, &pos, &kw).map(Some),
            // A module that exports its own name is callable (`@precision(bf16)`).
            Value::Module(m) if m.attrs.read().contains_key(m.name.as_str()) => {
                let g = m.attrs.read().get(m.name.as_str()).cloned().unwrap_or(Value::None);
                self.setup_call(fpos, g, pos, kw)
            }
            other => Err(type_err(format!("'{}' object is not callable", other.type_name()))),
        }
    }

    /// Record where `exc` passed and pop frames until a handler catches it
    /// (`Ok`) or the frame at depth `stop` is gone (`Err`).
    fn unwind(&mut self, exc: Exc, stop: usize) -> Result<(), Exc> {
        let mut inner: Vec<TraceEntry> = Vec::new();
        let mut outer: std::collections::VecDeque<TraceEntry> = std::collections::VecDeque::new();
        let flush = |exc: &Exc, inner: Vec<TraceEntry>, outer: std::collections::VecDeque<TraceEntry>| {
            let mut t = exc.trace.lock();
            t.extend(inner);
            t.extend(outer);
        };
        loop {
            let Some(&fr) = self.frames.last() else {
                flush(&exc, inner, outer);
                return Err(exc);
            };
            let fi = self.frames.len() - 1;
            // SAFETY: the frame is live.
            let clo = unsafe { &*fr.clo };
            let code = &clo.proto.code;
            let entry = TraceEntry { function: code.name.to_string(), span: code.span_at((fr.pc as usize).saturating_sub(1)) };
            let key = (Arc::as_ptr(&exc) as usize, fi);
            if let Some(h) = self.handlers.last().copied() {
                if h.frame as usize == fi {
                    self.handlers.pop();
                    // Record where it passed now: if the handler re-raises,
                    // this frame is not recorded a second time.
                    flush(&exc, std::mem::take(&mut inner), std::mem::take(&mut outer));
                    if self.reraise_skip != Some(key) {
                        exc.trace.lock().push(entry);
                        self.reraise_skip = Some(key);
                    }
                    let slot = fr.base as usize + h.reg as usize;
                    if let Some(s) = self.stack.get_mut(slot) {
                        *s = Value::Error(exc);
                    }
                    if let Some(f) = self.frames.last_mut() {
                        f.pc = h.target;
                    }
                    return Ok(());
                }
            }
            if self.reraise_skip == Some(key) {
                self.reraise_skip = None;
            } else if inner.len() < TRACE_INNER {
                inner.push(entry);
            } else {
                if outer.len() >= TRACE_OUTER {
                    outer.pop_front();
                }
                outer.push_back(entry);
            }
            self.pop_frame();
            if self.frames.len() <= stop {
                flush(&exc, inner, outer);
                return Err(exc);
            }
        }
    }

    /// Drop the top frame and clear its registers.
    #[inline(always)]
    fn pop_frame(&mut self) {
        if let Some(fr) = self.frames.pop() {
            let nregs = fr.nregs as usize;
            let base = fr.base as usize;
            if let Some(w) = self.stack.get_mut(base..base + nregs) {
                // Every slot goes back to unbound: a later frame's locals must
                // never see a value left over from an earlier call.
                for v in w {
                    setv(v, Value::Unbound);
                }
            }
            self.cells.truncate(fr.cell_base as usize);
            let depth = self.frames.len() as u32;
            while matches!(self.handlers.last(), Some(h) if h.frame >= depth) {
                self.handlers.pop();
            }
        }
    }

    /// Run until the frame count drops back to `stop`; returns the value the
    /// frame at depth `stop` returned.
    pub(crate) fn run(&mut self, stop: usize) -> VResult<Value> {
        'reload: loop {
            let Some(&fr) = self.frames.last() else {
                return Ok(Value::None);
            };
            // SAFETY: the closure is kept alive by its stack slot (see module invariants).
            let clo: &Closure = unsafe { &*fr.clo };
            let code: &Code = unsafe { &*fr.code };
            let instrs: &[Instr] = &code.instrs;
            let mut pc = fr.pc as usize;
            let base = fr.base as usize;
            let mut regs: *mut Value = unsafe { self.stack.as_mut_ptr().add(base) };

            macro_rules! r {
                ($i:expr) => {
                    // SAFETY: the compiler keeps every register below `nregs`,
                    // and push_frame reserved `base + nregs` slots.
                    unsafe { &mut *regs.add($i as usize) }
                };
            }
            macro_rules! save_pc {
                () => {
                    if let Some(f) = self.frames.last_mut() {
                        f.pc = pc as u32;
                    }
                };
            }
            macro_rules! throw {
                ($e:expr) => {{
                    let e: Exc = $e;
                    save_pc!();
                    match self.unwind(e, stop) {
                        Ok(()) => continue 'reload,
                        Err(e) => return Err(e),
                    }
                }};
            }
            macro_rules! tri {
                ($x:expr) => {
                    match $x {
                        Ok(v) => v,
                        Err(e) => throw!(e),
                    }
                };
            }
            macro_rules! refresh {
                () => {
                    regs = unsafe { self.stack.as_mut_ptr().add(base) };
                };
            }
            macro_rules! do_call {
                ($a:expr, $n:expr) => {{
                    save_pc!();
                    let fpos = base + $a as usize;
                    match self.call_at(fpos, $n as usize) {
                        Ok(None) => continue 'reload,
                        Ok(Some(v)) => {
                            refresh!();
                            setv(r!($a), v);
                        }
                        Err(e) => {
                            refresh!();
                            throw!(e)
                        }
                    }
                }};
            }

            loop {
                // SAFETY: every code object ends in a return, and jump targets are in range.
                let ins = unsafe { *instrs.get_unchecked(pc) };
                pc += 1;
                match ins {
                    Instr::Nop => {}
                    Instr::Move { a, b } => {
                        if a != b {
                            copy_to(r!(a), r!(b));
                        }
                    }
                    Instr::LoadK { a, k } => {
                        setv(r!(a), code.consts.get(k as usize).cloned().unwrap_or(Value::None));
                    }
                    Instr::LoadInt { a, v } => setv(r!(a), Value::Int(v as i64)),
                    Instr::LoadNone { a } => setv(r!(a), Value::None),
                    Instr::LoadBool { a, v } => setv(r!(a), Value::Bool(v)),
                    Instr::GetGlobal { a, g } => {
                        let Some(slot) = code.globals.get(g as usize) else { throw!(err(ErrorKind::Error, "internal error: bad global")) };
                        let v = if slot.is_const { slot.get_const().cloned() } else { slot.get() };
                        match v {
                            Some(v) => setv(r!(a), v),
                            None => throw!(err(ErrorKind::NameError, format!("name '{}' is not defined", slot.name))),
                        }
                    }
                    Instr::SetGlobal { a, g } => {
                        let Some(slot) = code.globals.get(g as usize) else { throw!(err(ErrorKind::Error, "internal error: bad global")) };
                        slot.set(dup(r!(a)));
                    }
                    Instr::GetCell { a, c } => {
                        let v = match self.cells.get(fr.cell_base as usize + c as usize) {
                            Some(cell) => cell.get(),
                            None => throw!(err(ErrorKind::Error, "internal error: bad cell")),
                        };
                        setv(r!(a), v);
                    }
                    Instr::SetCell { a, c } => {
                        let v = dup(r!(a));
                        match self.cells.get(fr.cell_base as usize + c as usize) {
                            Some(cell) => cell.set(v),
                            None => throw!(err(ErrorKind::Error, "internal error: bad cell")),
                        }
                    }
                    Instr::GetFree { a, c } => match clo.free.get(c as usize) {
                        Some(cell) => setv(r!(a), cell.get()),
                        None => throw!(err(ErrorKind::Error, "internal error: bad free variable")),
                    },
                    Instr::SetFree { a, c } => match clo.free.get(c as usize) {
                        Some(cell) => cell.set(dup(r!(a))),
                        None => throw!(err(ErrorKind::Error, "internal error: bad free variable")),
                    },
                    Instr::MakeCell { a, c: _ } => {
                        let v = if a == NO_REG { Value::None } else { dup(r!(a)) };
                        self.cells.push(Arc::new(Cell::new(v)));
                    }
                    Instr::Add { a, b, c } => {
                        match (&*r!(b), &*r!(c)) {
                            (Value::Int(x), Value::Int(y)) => {
                                if let Some(s) = x.checked_add(*y) {
                                    setv(r!(a), Value::Int(s));
                                    continue;
                                }
                            }
                            (Value::Float(x), Value::Float(y)) => {
                                let f = x + y;
                                setv(r!(a), Value::Float(f));
                                continue;
                            }
                            _ => {}
                        }
                        let v = match bin_fast(BinOp::Add, r!(b), r!(c)) {
                            Some(v) => v,
                            None => tri!(ops::binary(BinOp::Add, r!(b), r!(c))),
                        };
                        setv(r!(a), v);
                    }
                    Instr::Sub { a, b, c } => {
                        match (&*r!(b), &*r!(c)) {
                            (Value::Int(x), Value::Int(y)) => {
                                if let Some(s) = x.checked_sub(*y) {
                                    setv(r!(a), Value::Int(s));
                                    continue;
                                }
                            }
                            (Value::Float(x), Value::Float(y)) => {
                                let f = x - y;
                                setv(r!(a), Value::Float(f));
                                continue;
                            }
                            _ => {}
                        }
                        let v = match bin_fast(BinOp::Sub, r!(b), r!(c)) {
                            Some(v) => v,
                            None => tri!(ops::binary(BinOp::Sub, r!(b), r!(c))),
                        };
                        setv(r!(a), v);
                    }
                    Instr::Mul { a, b, c } | Instr::MulT { a, b, c } => {
                        match (&*r!(b), &*r!(c)) {
                            (Value::Int(x), Value::Int(y)) => {
                                if let Some(s) = x.checked_mul(*y) {
                                    setv(r!(a), Value::Int(s));
                                    continue;
                                }
                            }
                            (Value::Float(x), Value::Float(y)) => {
                                let f = x * y;
                                setv(r!(a), Value::Float(f));
                                continue;
                            }
                            _ => {}
                        }
                        let has_object = matches!(&*r!(b), Value::Object(_)) || matches!(&*r!(c), Value::Object(_));
                        if let (Instr::MulT { .. }, true) = (ins, has_object) {
                            // `x * y + z` on tensors: one fused pass (see Instr::MulT).
                            // Scalars never look ahead (mixed int/float products stay cheap).
                            if let Some((skip, d, rz, load)) = mul_add_partner(instrs, pc, a) {
                                let z = match load {
                                    Some(Instr::GetGlobal { g, .. }) => code.globals.get(g as usize).and_then(|s| if s.is_const { s.get_const().cloned() } else { s.get() }),
                                    Some(Instr::LoadK { k, .. }) => code.consts.get(k as usize).cloned(),
                                    _ => Some(dup(r!(rz))),
                                };
                                if let Some(v) = z.as_ref().and_then(|z| crate::tensor::fused::mul_add(r!(b), r!(c), z)) {
                                    if let (Some(_), Some(z)) = (load, z) {
                                        setv(r!(rz), z);
                                    }
                                    setv(r!(d), v);
                                    pc += skip;
                                    continue;
                                }
                            }
                        }
                        let v = match bin_fast(BinOp::Mul, r!(b), r!(c)) {
                            Some(v) => v,
                            None => tri!(ops::binary(BinOp::Mul, r!(b), r!(c))),
                        };
                        setv(r!(a), v);
                    }
                    Instr::AddI { a, b, v } => {
                        match &*r!(b) {
                            Value::Int(x) => {
                                if let Some(s) = x.checked_add(v as i64) {
                                    setv(r!(a), Value::Int(s));
                                    continue;
                                }
                            }
                            Value::Float(x) => {
                                let f = x + v as f64;
                                setv(r!(a), Value::Float(f));
                                continue;
                            }
                            _ => {}
                        }
                        let res = tri!(ops::binary(BinOp::Add, r!(b), &Value::Int(v as i64)));
                        setv(r!(a), res);
                    }
                    Instr::Bin { op, a, b, c } => {
                        let v = match bin_fast(op, r!(b), r!(c)) {
                            Some(v) => v,
                            None => tri!(ops::binary(op, r!(b), r!(c))),
                        };
                        setv(r!(a), v);
                    }
                    Instr::Unary { op, a, b } => {
                        let v = match (op, &*r!(b)) {
                            (UnaryOp::Not, x) => Value::Bool(!tri!(x.truthy())),
                            (UnaryOp::Neg, Value::Int(x)) if *x != i64::MIN => Value::Int(-*x),
                            (UnaryOp::Neg, Value::Float(x)) => Value::Float(-*x),
                            (op, x) => tri!(ops::unary(op, x)),
                        };
                        setv(r!(a), v);
                    }
                    Instr::Cmp { op, a, b, c } => {
                        let v = match cmp_fast(op, r!(b), r!(c)) {
                            Some(v) => Value::Bool(v),
                            // Objects (tensors) may compare elementwise.
                            None if matches!(op, CmpOp::Is | CmpOp::IsNot) => Value::Bool(tri!(compare(op, r!(b), r!(c)))),
                            None => tri!(ops::compare_value(op, r!(b), r!(c))),
                        };
                        setv(r!(a), v);
                    }
                    Instr::CmpJmp { op, a, b, jt } => {
                        let v = match cmp_fast(op, r!(a), r!(b)) {
                            Some(v) => v,
                            None => tri!(compare(op, r!(a), r!(b))),
                        };
                        if v == jt {
                            pc = jump_target(instrs, pc);
                        } else {
                            pc += 1;
                        }
                    }
                    Instr::CmpJmpI { op, a, v, jt } => {
                        let res = match &*r!(a) {
                            Value::Int(x) => cmp_int(op, *x, v as i64),
                            other => tri!(compare(op, other, &Value::Int(v as i64))),
                        };
                        if res == jt {
                            pc = jump_target(instrs, pc);
                        } else {
                            pc += 1;
                        }
                    }
                    Instr::Jmp { t } => pc = t as usize,
                    Instr::JmpIf { a, t } => {
                        let b = match &*r!(a) {
                            Value::Bool(b) => *b,
                            other => tri!(other.truthy()),
                        };
                        if b {
                            pc = t as usize;
                        }
                    }
                    Instr::JmpIfNot { a, t } => {
                        let b = match &*r!(a) {
                            Value::Bool(b) => *b,
                            other => tri!(other.truthy()),
                        };
                        if !b {
                            pc = t as usize;
                        }
                    }
                    Instr::Call { a, n } => do_call!(a, n),
                    Instr::CallK { a, k, n } => {
                        let Some(f) = code.consts.get(k as usize) else { throw!(err(ErrorKind::Error, "internal error: bad constant")) };
                        if let Value::Native(nf) = f {
                            // The constant table (alive as long as this code) owns the function.
                            let nf: *const NativeFn = Arc::as_ptr(nf);
                            save_pc!();
                            let args: Args = (1..=n as usize).map(|i| take(r!(a as usize + i))).collect();
                            // SAFETY: see above; natives cannot free this code's constants.
                            let nf = unsafe { &*nf };
                            flush_before(&self.shared, nf);
                            let res = nf.call(self, &args, &[]);
                            refresh!();
                            match res {
                                Ok(v) => setv(r!(a), v),
                                Err(e) => throw!(e),
                            }
                        } else {
                            setv(r!(a), dup(f));
                            do_call!(a, n)
                        }
                    }
                    Instr::CallGlobal { a, g, n } => {
                        let Some(slot) = code.globals.get(g as usize) else { throw!(err(ErrorKind::Error, "internal error: bad global")) };
                        // A write-once global function: call it without touching its
                        // refcount. The slot (kept alive by this code object, which
                        // outlives the callee's frame) owns the closure.
                        if let Some(Value::Func(c)) = slot.get_const() {
                            if c.proto.simple && n == c.proto.nparams {
                                save_pc!();
                                setv(r!(a), Value::None);
                                tri!(self.push_frame(base + a as usize, Arc::as_ptr(c)));
                                continue 'reload;
                            }
                        }
                        let v = if slot.is_const { slot.get_const().cloned() } else { slot.get() };
                        match v {
                            Some(v) => setv(r!(a), v),
                            None => throw!(err(ErrorKind::NameError, format!("name '{}' is not defined", slot.name))),
                        }
                        do_call!(a, n)
                    }
                    Instr::CallKw { a, n, k } => {
                        save_pc!();
                        let names = match code.consts.get(k as usize) {
                            Some(Value::Tuple(t)) => t.clone(),
                            _ => throw!(err(ErrorKind::Error, "internal error: bad keyword names")),
                        };
                        let n = n as usize;
                        let f = take(r!(a));
                        let pos: Args = (0..n).map(|i| take(r!(a as usize + 1 + i))).collect();
                        let mut kw = Vec::with_capacity(names.0.len());
                        for (j, name) in names.0.iter().enumerate() {
                            let v = take(r!(a as usize + 1 + n + j));
                            kw.push((Arc::<str>::from(name.as_str().unwrap_or("")), v));
                        }
                        let fpos = base + a as usize;
                        let res = self.setup_call(fpos, f, pos, kw);
                        refresh!();
                        match res {
                            Ok(None) => continue 'reload,
                            Ok(Some(v)) => setv(r!(a), v),
                            Err(e) => throw!(e),
                        }
                    }
                    Instr::CallEx { a } => {
                        save_pc!();
                        let f = take(r!(a));
                        let pos: Args = match take(r!(a as usize + 1)) {
                            Value::List(l) => l.items.read().iter().cloned().collect(),
                            Value::Tuple(t) => t.0.iter().cloned().collect(),
                            other => tri!(ops::iterate(self, &other)).into_iter().collect(),
                        };
                        refresh!();
                        let kw = match take(r!(a as usize + 2)) {
                            Value::None => Vec::new(),
                            Value::Dict(d) => {
                                let mut kw = Vec::new();
                                for (k, v) in d.map.read().iter() {
                                    match k.value() {
                                        Value::Str(s) => kw.push((Arc::<str>::from(s.as_str()), v.clone())),
                                        other => throw!(type_err(format!("keywords must be strings, not {}", other.type_name()))),
                                    }
                                }
                                kw
                            }
                            other => throw!(type_err(format!("argument after ** must be a dict, not {}", other.type_name()))),
                        };
                        let fpos = base + a as usize;
                        let res = self.setup_call(fpos, f, pos, kw);
                        refresh!();
                        match res {
                            Ok(None) => continue 'reload,
                            Ok(Some(v)) => setv(r!(a), v),
                            Err(e) => throw!(e),
                        }
                    }
                    Instr::AppendTo { a, b, c, mv } => {
                        if let Value::List(l) = &*r!(b) {
                            let v = if mv { take(r!(c)) } else { dup(r!(c)) };
                            l.items.write().push(v);
                            setv(r!(a), Value::None);
                            continue;
                        }
                        // Not a list: the general method call, through the caller interface.
                        save_pc!();
                        let recv = dup(r!(b));
                        let arg = dup(r!(c));
                        let res = match ops::get_attr(&recv, "append") {
                            Ok(f) => Caller::call(self, &f, &[arg], &[]),
                            Err(e) => Err(e),
                        };
                        refresh!();
                        match res {
                            Ok(v) => setv(r!(a), v),
                            Err(e) => throw!(e),
                        }
                    }
                    Instr::CallMethod { a, k, n } => {
                        let name = match code.consts.get(k as usize) {
                            Some(Value::Str(s)) => s.as_str(),
                            _ => throw!(err(ErrorKind::Error, "internal error: bad method name")),
                        };
                        let recv_reg = a as usize + 1;
                        // `xs.append(v)`: the hottest list method, done in place.
                        if n == 1 && name == "append" {
                            if let Value::List(l) = &*r!(recv_reg) {
                                let v = take(r!(recv_reg + 1));
                                l.items.write().push(v);
                                setv(r!(a), Value::None);
                                continue;
                            }
                        }
                        // A struct's own method: call it with the receiver as `self`.
                        if let Value::Struct(s) = &*r!(recv_reg) {
                            if s.ty.field_index(name).is_none() {
                                if let Some(m) = s.ty.methods.get(name) {
                                    setv(r!(a), m.clone());
                                    do_call!(a, n + 1);
                                    continue;
                                }
                            }
                        }
                        if !matches!(&*r!(recv_reg), Value::Struct(_) | Value::Object(_) | Value::Module(_)) {
                            if let Some(fp) = crate::builtins::method(r!(recv_reg), name) {
                                save_pc!();
                                let args: Args = (0..=n as usize).map(|i| take(r!(recv_reg + i))).collect();
                                let res = fp(self, &args, &[]);
                                refresh!();
                                match res {
                                    Ok(v) => setv(r!(a), v),
                                    Err(e) => throw!(e),
                                }
                                continue;
                            }
                        }
                        let f = tri!(ops::get_attr(r!(recv_reg), name));
                        setv(r!(a), f);
                        for i in 0..n as usize {
                            let v = take(r!(recv_reg + 1 + i));
                            setv(r!(recv_reg + i), v);
                        }
                        do_call!(a, n)
                    }
                    Instr::Return { a } => {
                        if self.frames.len() > stop + 1 && base > 0 {
                            // Scalars travel in a Rust local (no 16-byte temporary).
                            let ret = match *r!(a) {
                                Value::Int(i) => Ret::Int(i),
                                Value::Float(f) => Ret::Float(f),
                                Value::Bool(b) => Ret::Bool(b),
                                _ => Ret::Val(std::mem::replace(r!(a), Value::None)),
                            };
                            // Pop first: the slot below `base` may own the callee's closure.
                            self.pop_frame();
                            if let Some(dst) = self.stack.get_mut(base - 1) {
                                match ret {
                                    Ret::Int(i) => setv(dst, Value::Int(i)),
                                    Ret::Float(f) => setv(dst, Value::Float(f)),
                                    Ret::Bool(b) => setv(dst, Value::Bool(b)),
                                    Ret::Val(v) => setv(dst, v),
                                }
                            }
                            continue 'reload;
                        }
                        let v = take(r!(a));
                        self.pop_frame();
                        return Ok(v);
                    }
                    Instr::ReturnNone => {
                        self.pop_frame();
                        if self.frames.len() <= stop {
                            return Ok(Value::None);
                        }
                        if let Some(s) = self.stack.get_mut(base - 1) {
                            *s = Value::None;
                        }
                        continue 'reload;
                    }
                    Instr::GetAttr { a, b, k } => {
                        let name = match code.consts.get(k as usize) {
                            Some(Value::Str(s)) => s.as_str(),
                            _ => throw!(err(ErrorKind::Error, "internal error: bad attribute name")),
                        };
                        let v = match &*r!(b) {
                            Value::Struct(s) => match s.ty.field_index(name) {
                                Some(i) => s.fields.read().get(i).cloned().unwrap_or(Value::None),
                                None => tri!(ops::get_attr(r!(b), name)),
                            },
                            other => tri!(ops::get_attr(other, name)),
                        };
                        setv(r!(a), v);
                    }
                    Instr::SetAttr { a, k, c } => {
                        let name = match code.consts.get(k as usize) {
                            Some(Value::Str(s)) => s.as_str(),
                            _ => throw!(err(ErrorKind::Error, "internal error: bad attribute name")),
                        };
                        let v = dup(r!(c));
                        tri!(ops::set_attr(r!(a), name, v));
                    }
                    Instr::GetIndex { a, b, c } => {
                        let v = match (&*r!(b), &*r!(c)) {
                            (Value::List(l), Value::Int(i)) => {
                                let items = l.items.read();
                                let n = items.len() as i64;
                                let j = if *i < 0 { *i + n } else { *i };
                                if j >= 0 && j < n {
                                    items[j as usize].clone()
                                } else {
                                    drop(items);
                                    tri!(ops::get_index(r!(b), r!(c)))
                                }
                            }
                            (Value::Dict(d), Value::Int(i)) => {
                                let found = d.map.read().get_int(*i).map(dup);
                                match found {
                                    Some(v) => v,
                                    None => tri!(ops::get_index(r!(b), r!(c))),
                                }
                            }
                            (x, i) => tri!(ops::get_index(x, i)),
                        };
                        setv(r!(a), v);
                    }
                    Instr::SetIndex { a, b, c } => {
                        let v = dup(r!(c));
                        if let (Value::List(l), Value::Int(i)) = (&*r!(a), &*r!(b)) {
                            let mut items = l.items.write();
                            let n = items.len() as i64;
                            let j = if *i < 0 { *i + n } else { *i };
                            if j >= 0 && j < n {
                                items[j as usize] = v;
                                continue;
                            }
                        }
                        if let (Value::Dict(d), Value::Int(i)) = (&*r!(a), &*r!(b)) {
                            d.map.write().insert_int(*i, v);
                            continue;
                        }
                        tri!(ops::set_index(r!(a), r!(b), v));
                    }
                    Instr::BuildList { a, b, n } => {
                        let items: Vec<Value> = (0..n as usize).map(|i| take(r!(b as usize + i))).collect();
                        setv(r!(a), Value::list(items));
                    }
                    Instr::BuildTuple { a, b, n } => {
                        if n == u16::MAX {
                            let v = match &*r!(b) {
                                Value::List(l) => Value::tuple(l.items.read().clone()),
                                other => other.clone(),
                            };
                            setv(r!(a), v);
                        } else {
                            let items: Vec<Value> = (0..n as usize).map(|i| take(r!(b as usize + i))).collect();
                            setv(r!(a), Value::tuple(items));
                        }
                    }
                    Instr::BuildDict { a, b, n } => {
                        let mut map = DictMap::with_capacity(n as usize);
                        for i in 0..n as usize {
                            let k = take(r!(b as usize + 2 * i));
                            let v = take(r!(b as usize + 2 * i + 1));
                            map.insert(tri!(ops::hash_key(&k)), v);
                        }
                        setv(r!(a), Value::dict(map));
                    }
                    Instr::ListAppend { a, b } => {
                        let v = dup(r!(b));
                        match &*r!(a) {
                            Value::List(l) => l.items.write().push(v),
                            other => throw!(type_err(format!("cannot append to {}", other.type_name()))),
                        }
                    }
                    Instr::ListExtend { a, b } => {
                        let src = dup(r!(b));
                        save_pc!();
                        let items = match &src {
                            Value::List(l) => l.items.read().clone(),
                            Value::Tuple(t) => t.0.to_vec(),
                            other => {
                                let r = ops::iterate(self, other);
                                refresh!();
                                tri!(r)
                            }
                        };
                        match &*r!(a) {
                            Value::List(l) => l.items.write().extend(items),
                            other => throw!(type_err(format!("cannot extend {}", other.type_name()))),
                        }
                    }
                    Instr::DictSet { a, b, c } => {
                        let key = tri!(ops::hash_key(r!(b)));
                        let v = dup(r!(c));
                        match &*r!(a) {
                            Value::Dict(d) => {
                                d.map.write().insert(key, v);
                            }
                            other => throw!(type_err(format!("cannot set a key of {}", other.type_name()))),
                        }
                    }
                    Instr::DictUpdate { a, b } => {
                        let entries: Vec<(HashKey, Value)> = match &*r!(b) {
                            Value::Dict(d) => d.map.read().iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                            other => throw!(type_err(format!("argument after ** must be a dict, not {}", other.type_name()))),
                        };
                        match &*r!(a) {
                            Value::Dict(d) => d.map.write().extend(entries),
                            other => throw!(type_err(format!("cannot update {}", other.type_name()))),
                        }
                    }
                    Instr::BuildSlice { a, b } => {
                        let s = SliceObj { start: dup(r!(b)), stop: dup(r!(b as usize + 1)), step: dup(r!(b as usize + 2)) };
                        setv(r!(a), Value::Slice(Arc::new(s)));
                    }
                    Instr::BuildRange { a, b, c } => {
                        let start = tri!(call::range_int(r!(b)));
                        let stop = tri!(call::range_int(r!(c)));
                        setv(r!(a), Value::Range(Arc::new(RangeObj { start, stop, step: 1 })));
                    }
                    Instr::ForPrep { a } => {
                        let v = take(r!(a));
                        // A stream (a channel): items are pulled one at a time by
                        // calling its `__next__` hook (`(item,)` or `none`).
                        let stream = match &v {
                            Value::Object(o) => o.0.get_attr(&v, "__next__"),
                            _ => None,
                        };
                        let prepared = match v {
                            Value::List(_) | Value::Tuple(_) | Value::Range(_) => v,
                            Value::Str(ref s) if s.is_ascii() => v,
                            Value::Dict(d) => Value::tuple(d.map.read().keys().map(|k| k.value().clone()).collect()),
                            Value::Object(_) if stream.is_some() => match stream {
                                Some(hook) => tri!(hook),
                                None => v,
                            },
                            other => {
                                save_pc!();
                                let items = ops::iterate(self, &other);
                                refresh!();
                                Value::tuple(tri!(items))
                            }
                        };
                        setv(r!(a), prepared);
                        setv(r!(a as usize + 1), Value::Int(0));
                    }
                    Instr::ForNext { a, b } => {
                        if matches!(&*r!(a), Value::Native(_) | Value::BoundMethod(_) | Value::Func(_)) {
                            let hook = dup(r!(a));
                            save_pc!();
                            let res = self.call_value(&hook, &[], &[]);
                            refresh!();
                            match tri!(res) {
                                Value::Tuple(t) if t.0.len() == 1 => {
                                    let v = t.0[0].clone();
                                    setv(r!(b), v);
                                    pc += 1;
                                }
                                Value::None => pc = jump_target(instrs, pc),
                                other => throw!(type_err(format!(
                                    "__next__ must return a 1-tuple or none, not '{}'",
                                    other.type_name()
                                ))),
                            }
                            continue;
                        }
                        let i = match &*r!(a as usize + 1) {
                            Value::Int(i) => *i,
                            _ => 0,
                        };
                        let item = match &*r!(a) {
                            Value::List(l) => l.items.read().get(i as usize).cloned(),
                            Value::Tuple(t) => t.0.get(i as usize).cloned(),
                            Value::Range(rg) => {
                                // The i-th element, in range while it has not reached `stop`
                                // (no length division per step; overflow ends the range).
                                match i.checked_mul(rg.step).and_then(|d| rg.start.checked_add(d)) {
                                    Some(x) if (rg.step > 0 && x < rg.stop) || (rg.step < 0 && x > rg.stop) => Some(Value::Int(x)),
                                    _ => None,
                                }
                            }
                            Value::Str(s) => s.as_str().as_bytes().get(i as usize).map(|&c| Value::str((c as char).to_string())),
                            _ => None,
                        };
                        match item {
                            Some(v) => {
                                setv(r!(b), v);
                                setv(r!(a as usize + 1), Value::Int(i + 1));
                                pc += 1;
                            }
                            None => pc = jump_target(instrs, pc),
                        }
                    }
                    Instr::ForRangePrep { a, b } => {
                        let start = tri!(call::range_int(r!(a)));
                        let stop = tri!(call::range_int(r!(a as usize + 1)));
                        let step = tri!(call::range_int(r!(a as usize + 2)));
                        if step == 0 {
                            throw!(err(ErrorKind::ValueError, "range() arg 3 must not be zero"));
                        }
                        setv(r!(a), Value::Int(start));
                        setv(r!(a as usize + 1), Value::Int(stop));
                        setv(r!(a as usize + 2), Value::Int(step));
                        if (step > 0 && start < stop) || (step < 0 && start > stop) {
                            setv(r!(b), Value::Int(start));
                            pc += 1;
                        } else {
                            pc = jump_target(instrs, pc);
                        }
                    }
                    Instr::ForRangeLoop { a, b } => {
                        if let (Value::Int(cur), Value::Int(stop), Value::Int(step)) = (&*r!(a), &*r!(a as usize + 1), &*r!(a as usize + 2)) {
                            let (stop, step) = (*stop, *step);
                            if let Some(next) = cur.checked_add(step) {
                                if (step > 0 && next < stop) || (step < 0 && next > stop) {
                                    setv(r!(a), Value::Int(next));
                                    setv(r!(b), Value::Int(next));
                                    pc = jump_target(instrs, pc);
                                    continue;
                                }
                            }
                        }
                        pc += 1;
                    }
                    Instr::Unpack { a, b, n } => {
                        let src = dup(r!(b));
                        save_pc!();
                        let res = call::unpack(self, &src, n as usize, None);
                        refresh!();
                        let items = tri!(res);
                        for (i, v) in items.into_iter().enumerate() {
                            setv(r!(a as usize + i), v);
                        }
                    }
                    Instr::UnpackEx { a, b, before, after } => {
                        let src = dup(r!(b));
                        save_pc!();
                        let res = call::unpack(self, &src, before as usize, Some(after as usize));
                        refresh!();
                        let items = tri!(res);
                        for (i, v) in items.into_iter().enumerate() {
                            setv(r!(a as usize + i), v);
                        }
                    }
                    Instr::MakeFunc { a, p, b } => {
                        let Some(proto) = code.protos.get(p as usize) else { throw!(err(ErrorKind::Error, "internal error: bad function")) };
                        let nd = proto.ndefaults as usize;
                        let defaults: Box<[Value]> = (0..nd).map(|i| dup(r!(b as usize + i))).collect();
                        let mut j = nd;
                        let kwdefaults: Box<[Option<Value>]> = proto
                            .kwonly_has_default
                            .iter()
                            .map(|&has| {
                                if has {
                                    j += 1;
                                    Some(dup(r!(b as usize + j - 1)))
                                } else {
                                    None
                                }
                            })
                            .collect();
                        let mut free = Vec::with_capacity(proto.captures.len());
                        for cap in proto.captures.iter() {
                            let cell = match cap {
                                Capture::Cell(c) => self.cells.get(fr.cell_base as usize + *c as usize).cloned(),
                                Capture::Free(c) => clo.free.get(*c as usize).cloned(),
                            };
                            match cell {
                                Some(c) => free.push(c),
                                None => throw!(err(ErrorKind::Error, "internal error: bad capture")),
                            }
                        }
                        let f = Closure { name: proto.name.to_string(), proto: proto.clone(), defaults, kwdefaults, free: free.into_boxed_slice() };
                        setv(r!(a), Value::Func(Arc::new(f)));
                    }
                    Instr::MakeStruct { a, p, b } => {
                        let Some(sp) = code.structs.get(p as usize) else { throw!(err(ErrorKind::Error, "internal error: bad struct")) };
                        let ndef = sp.has_default.iter().filter(|d| **d).count();
                        let vals: Vec<Value> = (0..ndef + sp.methods.len()).map(|i| dup(r!(b as usize + i))).collect();
                        setv(r!(a), call::make_struct_type(sp, vals));
                    }
                    Instr::Raise { a } => {
                        let e = match &*r!(a) {
                            Value::Error(e) => {
                                e.trace.lock().clear();
                                e.clone()
                            }
                            Value::Kind(k) => err(*k, ""),
                            other => type_err(format!("raise needs an error value such as ValueError(\"…\"), not {}", other.type_name())),
                        };
                        throw!(e)
                    }
                    Instr::Reraise { a } => {
                        let e = if a == NO_REG {
                            err(ErrorKind::Error, "a bare 'raise' is only allowed inside an except block")
                        } else {
                            match &*r!(a) {
                                Value::Error(e) => e.clone(),
                                _ => err(ErrorKind::Error, "internal error: nothing to re-raise"),
                            }
                        };
                        throw!(e)
                    }
                    Instr::CheckBound { a, k } => {
                        if matches!(&*r!(a), Value::Unbound) {
                            let name = match code.consts.get(k as usize) {
                                Some(Value::Str(s)) => s.as_str().to_string(),
                                _ => "?".to_string(),
                            };
                            throw!(err(
                                ErrorKind::NameError,
                                format!("cannot access local variable '{name}' where it is not associated with a value")
                            ));
                        }
                    }
                    Instr::AssertFail { a } => {
                        let msg = if a == NO_REG { String::new() } else { format::str_of(r!(a)) };
                        throw!(err(ErrorKind::AssertionError, msg))
                    }
                    Instr::PushHandler { a, t } => {
                        self.handlers.push(Handler { frame: (self.frames.len() - 1) as u32, target: t, reg: a });
                    }
                    Instr::PopHandler => {
                        self.handlers.pop();
                    }
                    Instr::ExcMatch { a, b, c } => {
                        let m = match &*r!(b) {
                            Value::Error(e) if c == NO_REG => e.exit.is_none(),
                            Value::Error(e) => tri!(call::error_matches(e, r!(c))),
                            _ => false,
                        };
                        setv(r!(a), Value::Bool(m));
                    }
                    Instr::ToStr { a, b } => {
                        let v = match &*r!(b) {
                            Value::Str(_) => dup(r!(b)),
                            Value::Int(i) => Value::Str(Arc::new(StrObj::from_int(*i))),
                            other => Value::str(format::str_of(other)),
                        };
                        setv(r!(a), v);
                    }
                    Instr::ToRepr { a, b } => {
                        let v = Value::str(format::repr_of(r!(b)));
                        setv(r!(a), v);
                    }
                    Instr::Format { a, b, c } => {
                        let spec = r!(c).as_str().unwrap_or("").to_string();
                        let s = tri!(format::format_value(r!(b), &spec));
                        setv(r!(a), Value::str(s));
                    }
                    Instr::ParFor { a, n, range } => {
                        // `parallel for`: the chunks run on the pool (crate::par::parfor);
                        // this thread runs the first and waits for the rest.
                        let a = a as usize;
                        let f = take(r!(a));
                        let iter = if range {
                            crate::par::parfor::LoopIter::Range(dup(r!(a + 1)), dup(r!(a + 2)), dup(r!(a + 3)))
                        } else {
                            crate::par::parfor::LoopIter::Items(take(r!(a + 1)))
                        };
                        let inits: Vec<(Value, Value)> = (0..n as usize).map(|j| (take(r!(a + 4 + 2 * j)), take(r!(a + 5 + 2 * j)))).collect();
                        save_pc!();
                        let res = crate::par::parfor::run_loop(self, &f, iter, inits);
                        refresh!();
                        match res {
                            Ok((first, rest)) => {
                                setv(r!(a), first);
                                setv(r!(a + 1), rest);
                            }
                            Err(e) => throw!(e),
                        }
                    }
                    Instr::Concat { a, b, n } => {
                        let mut s = String::new();
                        for i in 0..n as usize {
                            match &*r!(b as usize + i) {
                                Value::Str(x) => s.push_str(x.as_str()),
                                other => s.push_str(&format::str_of(other)),
                            }
                        }
                        setv(r!(a), Value::str(s));
                    }
                }
            }
        }
    }

    /// Call the value at `stack[fpos]` with the `n` arguments above it.
    #[inline(always)]
    fn call_at(&mut self, fpos: usize, n: usize) -> VResult<Option<Value>> {
        if let Some(Value::Func(c)) = self.stack.get(fpos) {
            let proto = &c.proto;
            if proto.simple {
                let np = proto.nparams as usize;
                let ptr = Arc::as_ptr(c);
                if n == np {
                    self.push_frame(fpos, ptr)?;
                    return Ok(None);
                }
                let nd = proto.ndefaults as usize;
                if n < np && n + nd >= np {
                    let c = c.clone();
                    self.ensure(fpos + 1 + np + 1);
                    for i in n..np {
                        self.stack[fpos + 1 + i] = c.defaults[i + nd - np].clone();
                    }
                    self.push_frame(fpos, ptr)?;
                    return Ok(None);
                }
            }
        }
        let f = std::mem::replace(&mut self.stack[fpos], Value::None);
        let pos: Args = (0..n).map(|i| take(&mut self.stack[fpos + 1 + i])).collect();
        self.setup_call(fpos, f, pos, Vec::new())
    }

    pub(crate) fn native_enter(&mut self) -> VResult<()> {
        if self.native_depth >= self.shared.max_native_depth {
            return Err(err(ErrorKind::RecursionError, "maximum recursion depth exceeded (through native functions)"));
        }
        self.native_depth += 1;
        Ok(())
    }

    pub(crate) fn native_leave(&mut self) {
        self.native_depth = self.native_depth.saturating_sub(1);
    }

    /// Run a module body (a closure without parameters) to completion.
    pub fn run_closure(&mut self, clo: Arc<Closure>) -> VResult<Value> {
        self.call_value(&Value::Func(clo), &[], &[])
    }
}

impl Caller for Executor {
    fn call(&mut self, f: &Value, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
        self.native_enter()?;
        let r = self.call_value(f, args, kwargs);
        self.native_leave();
        r
    }

    fn write_out(&mut self, text: &str) -> VResult<()> {
        self.shared.write_out(text)
    }

    fn flush_out(&mut self) -> VResult<()> {
        self.shared.flush_out()
    }

    fn new_thread_caller(&self) -> Option<Box<dyn Caller + Send>> {
        Some(Box::new(Executor::new(self.shared.clone())))
    }

    fn tasks(&self) -> Option<Arc<crate::par::tasks::TaskRegistry>> {
        Some(self.shared.tasks.clone())
    }
}
