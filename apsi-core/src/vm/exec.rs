//! The per-thread executor: a value stack of register windows, a heap stack
//! of frames, and the dispatch loop.
//!
//! Apsi → Apsi calls never recurse on the Rust stack: a call pushes a
//! `Frame` and the loop continues with the callee. Only native callbacks
//! (`Caller::call`) re-enter the loop, and their nesting is bounded.
//!
//! Invariants:
//! - Every frame's window `base .. base + nregs` lies inside `stack`, and the
//!   closure that `Frame::clo` points to is kept alive by the slot just
//!   below `base` (a `Value::Func`, or the instance of an `Init` frame), by
//!   a write-once global slot that the caller's code object holds
//!   (`CallGlobal`), for a method that never rebinds its receiver
//!   (`FuncProto::keeps_first`, called by `CallMethod`/`CallSuper`) by the
//!   instance in its register 0 (its type holds the method), or for a
//!   `GenFor` frame by the generator in its loop's iterator register;
//!   callers outlive callees.
//! - `stack` only grows; slots above the live windows are `none`.
//! - A handler belongs to one frame and is dropped when that frame ends.

use super::call;
use super::shared::Shared;
use crate::code::{Capture, Code, Instr, Leaf, ReduceOp, Reg, NO_REG};
use crate::diagnostic::TraceEntry;
use crate::error::ErrorKind;
use crate::syntax::ast::{BinOp, CmpOp, UnaryOp};
use crate::value::function::{Cell, Closure};
use crate::value::ic::Hit;
use crate::value::*;
use crate::{format, ops};
use smallvec::SmallVec;
use std::sync::Arc;

mod frames;
mod resume;
mod slow;
use slow::Flow;

pub(crate) use crate::value::CallArgs as Args;

#[derive(Clone, Copy)]
struct Frame {
    clo: *const Closure,
    code: *const Code,
    pc: u32,
    base: u32,
    cell_base: u32,
    nregs: u16,
    /// Where the returned value goes (see [`Ret`]).
    ret: Ret,
}

/// What happens to the value a frame returns. Calls the program wrote
/// are `Normal`; the others are calls the VM makes for an instruction
/// (`vm/exec/frames.rs`), pushed on this loop instead of re-entering it.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Ret {
    /// Into the slot below the frame's window (`base - 1`), where the callee was.
    Normal,
    /// An `__init__` run by a constructor call: the slot below the window
    /// holds the new instance, which is the call's value; the method must
    /// return `none`.
    Init,
    /// An operator method run for the caller's instruction just before its
    /// saved pc (`a + b` → `__add__`): the value goes to that instruction's
    /// destination register, and `NotImplemented` goes on with the rest of
    /// the operator protocol.
    Op,
    /// `Op` for `a op= b` through `__iop__`: `NotImplemented` goes on with `a op b`.
    OpInplace,
    /// A comparison method (`__eq__`, `__lt__`…) run for the caller's
    /// `Cmp` or `CmpJmp` just before its saved pc: the value goes to the
    /// `Cmp`'s destination, or its truth decides the `CmpJmp`'s jump;
    /// `NotImplemented` goes on with the rest of the protocol. Pushed like `Op`.
    Cmp,
    /// `Cmp` for `!=` run through `__eq__` (no `__ne__`): the truth is negated.
    CmpNot,
    /// A method run for an instruction with no result (`x[i] = v` through
    /// `__setitem__`): the value is dropped. Pushed like `Op`.
    Discard,
    /// An element's `__eq__` run by the caller's `x in xs` (`Cmp` or
    /// `CmpJmp` just before its saved pc) or `xs.remove(x)` (`CallMethod`)
    /// as it scans a list or tuple: a true value ends the scan, a false one
    /// goes on with the next element (`frames.rs`, `Executor::scan`; where
    /// it stands is in `scans`). Pushed like `Op`.
    Scan,
    /// A generator's frame resumed by the caller's `ForNext` or `ForLoop` (whose `Jmp`
    /// word is at the caller's saved pc); the loop's iterator register
    /// holds the generator (the callee slot stays empty). A `yield` suspends the frame into the generator and hands
    /// the value to the loop; a return ends the generator and the loop
    /// (`vm/exec/resume.rs`).
    GenFor,
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
    /// The error is held (not its address), so a later error allocated at
    /// the same address is never mistaken for it.
    reraise_skip: Option<(Exc, usize)>,
    /// This thread runs Apsi code (containers lock while others do too).
    /// `None` for the spare executors of `reentry`, which run on a thread
    /// that already is a participant.
    _participant: Option<crate::value::vlock::Participant>,
    /// Depths of the generator frames being resumed, innermost last (`resume.rs`).
    gen_frames: Vec<u32>,
    /// Set by `Instr::Yield` as it leaves `run`: the frame suspended, not returned.
    yielded: bool,
    /// For each live frame whose `ret` is not `Normal`, innermost last: the
    /// frame count with it on top. `run` returns through its fast path only
    /// from frames above the innermost one (see `Ret`), so a plain return
    /// pays no test for them.
    special: Vec<u32>,
    /// How many `Ret::GenFor` frames are live: their nesting (`yield from`
    /// chains) is bounded like native re-entry was, since every item
    /// passes through each level.
    gen_for: usize,
    /// For each live `Ret::Scan` frame, innermost last: where its scan
    /// stands.
    scans: Vec<frames::ScanAt>,
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

/// Does a call of `c` with `n` arguments plus `self` fit its parameters
/// (defaults filling the rest)?
fn fits_with_self(c: &Closure, n: usize) -> bool {
    let (np, nd) = (c.nparams as usize, c.proto.ndefaults as usize);
    n < np && n + 1 + nd >= np
}

/// For an `Instr::MulT { a: t, .. }` just before `pc`: the `Add` reading `t`
/// as (instructions to skip, its destination, its other operand's register,
/// the load that fills that register first, if any).
#[inline(always)]
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

/// Store into a register; a scalar being overwritten needs no drop.
#[inline(always)]
fn setv(slot: &mut Value, v: Value) {
    if slot.owns_nothing() {
        // SAFETY: the old value owns nothing, so skipping its drop leaks nothing.
        unsafe { std::ptr::write(slot, v) }
    } else if slot.release_solo() {
        // SAFETY: solo counting gave up the old value's reference (not its
        // last), so overwriting it without a drop is right. No call comes
        // between, so `v` stays in registers.
        unsafe { std::ptr::write(slot, v) }
    } else {
        *slot = v;
    }
}

/// Store a value held as its parts (`Value::words`) into a register, part
/// by part: nothing goes through a 16-byte temporary.
#[inline(always)]
fn set_words(slot: &mut Value, w: Words) {
    if !slot.owns_nothing() && !slot.release_solo() {
        // SAFETY: the old value is dropped here and overwritten next.
        unsafe { std::ptr::drop_in_place(slot) }
    }
    // SAFETY: the old value owns nothing any more (a scalar, released, or
    // dropped just above).
    unsafe { w.write_to(slot) }
}

/// [`set_words`] for a caller that has just seen solo mode on.
///
/// # Safety
/// Solo mode is on (`solo.rs`).
#[inline(always)]
unsafe fn set_words_solo(slot: &mut Value, w: Words) {
    // SAFETY: the caller's (solo mode).
    if !slot.owns_nothing() && !unsafe { slot.release_solo_unchecked() } {
        // SAFETY: the old value is dropped here and overwritten next.
        unsafe { std::ptr::drop_in_place(slot) }
    }
    // SAFETY: the old value owns nothing any more.
    unsafe { w.write_to(slot) }
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
            other => other.dup_words(),
        }
    }
}

/// Move the `n` (at most `N`) values at `stack[from..]` into an array for a
/// built-in's arguments (the registers keep `None`, scalars their copy);
/// the rest of the array is `None`.
#[inline(always)]
fn take_args<const N: usize>(stack: &mut [Value], from: usize, n: usize) -> [Value; N] {
    let mut args: [Value; N] = std::array::from_fn(|_| Value::None);
    for (i, a) in args.iter_mut().enumerate().take(n) {
        if let Some(s) = stack.get_mut(from + i) {
            // `a` holds `None`: overwritten without a drop call.
            std::mem::forget(std::mem::replace(a, take(s)));
        }
    }
    args
}

/// A built-in's argument array, given up when it goes out of scope: after
/// the call, which can then be the function's last expression, so that
/// its result is written where the caller wants it. Scalars need no drop,
/// and a reference that is not the last one is given up with solo
/// counting (as `setv` does); only the rest go through `drop_in_place`
/// (an atomic decrement, or the free).
/// Kept in a variable and released after, the result was copied out of
/// the callee's place whole, just after the callee wrote it by parts (a
/// store-forwarding stall: a third of `call_native_small`'s own samples
/// in `go`).
struct Released<const N: usize>(std::mem::ManuallyDrop<[Value; N]>);

impl<const N: usize> Released<N> {
    #[inline(always)]
    fn new(args: [Value; N]) -> Released<N> {
        Released(std::mem::ManuallyDrop::new(args))
    }
}

impl<const N: usize> Drop for Released<N> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: taken once, here; the field is not used again.
        for a in unsafe { std::mem::ManuallyDrop::take(&mut self.0) } {
            if a.owns_nothing() {
                std::mem::forget(a);
            } else {
                a.give_up();
            }
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

/// Store a copy of `src` into `dst`. Each scalar arm stores its own variant
/// directly, so no 16-byte temporary is built and re-read (which would stall
/// store-to-load forwarding).
#[inline(always)]
fn copy_to(dst: &mut Value, src: &Value) {
    // The payloads are read on their own (see `dup`): without that, LLVM
    // merges these arms into one 16-byte copy, which stalls on store
    // forwarding when `src` was just written as a tag plus a payload.
    // SAFETY: plain reads of valid, aligned fields.
    match src {
        Value::Int(i) => setv(dst, Value::Int(unsafe { std::ptr::read_volatile(i) })),
        Value::Float(f) => setv(dst, Value::Float(unsafe { std::ptr::read_volatile(f) })),
        Value::Bool(b) => setv(dst, Value::Bool(unsafe { std::ptr::read_volatile(b) })),
        Value::None => setv(dst, Value::None),
        // Solo mode tested once for the copy and the store (see `GetAttr`).
        other if crate::value::solo::on() => {
            // SAFETY: solo mode is on.
            let w = unsafe { other.words_solo() };
            // SAFETY: as above.
            unsafe { set_words_solo(dst, w) }
        }
        other => set_words(dst, other.words()),
    }
}

/// Store a copy of a container's item `src` into `dst`. Unlike `copy_to`,
/// a scalar is copied whole (one 16-byte move, no branch on its kind):
/// items in a container were written long before, so the wide load cannot
/// stall on store forwarding.
#[inline(always)]
fn copy_item(dst: &mut Value, src: &Value) {
    if matches!(src, Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_)) {
        if !dst.owns_nothing() {
            *dst = Value::None;
        }
        // SAFETY: `src` owns nothing (a scalar), so a bitwise copy is a
        // valid second value, and `dst` holds nothing that needs a drop.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, 1) }
    } else {
        set_words(dst, src.words());
    }
}

/// Store copies of `src` into `src.len()` registers from `dst` on, item by
/// item. (One bulk copy after checking that nothing owns a count ran
/// unpack_sequence in 431 ms against this loop's 243.) The caller makes
/// sure the registers exist and that none of them is where `src` lives.
#[inline(always)]
fn copy_row(dst: &mut Value, src: &[Value]) {
    let dst: *mut Value = dst;
    // SAFETY: the caller's promise: `src.len()` registers from `dst`, apart
    // from `src`.
    let regs = unsafe { std::slice::from_raw_parts_mut(dst, src.len()) };
    for (d, s) in regs.iter_mut().zip(src) {
        copy_item(d, s);
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

/// Where a loop's step (`ForNext` or `ForLoop` at `pc - 1`, its jump word
/// at `pc`) goes on: with an item, past `ForNext`'s jump word or along
/// `ForLoop`'s (back to the body); at the end, the other way.
fn for_step_pc(instrs: &[Instr], pc: usize, item: bool) -> usize {
    let back = matches!(instrs.get(pc.wrapping_sub(1)), Some(Instr::ForLoop { .. }));
    if item == back {
        jump_target(instrs, pc)
    } else {
        pc + 1
    }
}

/// Before a method's frame is pushed: the callee slot holds a handle on
/// the method, unless the method keeps its receiver in register 0
/// (`FuncProto::keeps_first`), which keeps it alive (instance → type →
/// methods, the parent's too for `super()`): then the slot keeps what it
/// held, as for `CallGlobal`.
#[inline(always)]
fn hold_method(slot: &mut Value, c: &Arc<Closure>) {
    if !c.keeps_first {
        setv(slot, Value::Func(crate::value::solo::clone_arc(c)));
    }
}

/// Store `w` into a struct field's slot (its lock held) by parts: the value
/// was usually just written that way, and a 16-byte copy of it would stall
/// on store forwarding. The old value is given up in place, or handed back
/// to be dropped once the lock is released.
#[inline(always)]
fn replace_field(slot: &mut Value, w: Words) -> Option<Value> {
    let old = if slot.owns_nothing() || slot.release_solo() {
        None
    } else {
        // SAFETY: overwritten just below without a drop.
        Some(unsafe { std::ptr::read(slot) })
    };
    // SAFETY: the old value was given up just above.
    unsafe { w.write_to(slot) };
    old
}

/// A method call whose body is one step (`Code::leaf`), done in the
/// caller's frame: `window` is the call's slots (the callee slot for the
/// result, the receiver, the arguments). Afterwards the receiver's and the
/// arguments' slots are unbound, as a returning frame leaves them. Returns
/// false, having changed nothing, when the step is not a plain cache hit on
/// a struct receiver (the call then runs as a frame).
#[inline(always)]
fn call_leaf(window: &mut [Value], callee: &Code) -> bool {
    let (head, args) = window.split_at_mut(2);
    let result = match (callee.leaf, &head[1]) {
        (Leaf::No, _) => return false,
        (Leaf::Returns(c), _) => c.value().take_words(),
        (Leaf::GetSelf, Value::Struct(s)) => {
            let Some(i) = callee.ic_at(0).and_then(|ic| ic.field(s.layout)) else {
                return false;
            };
            let f = s.fields.read();
            let Some(v) = f.get(i) else { return false };
            v.words()
        }
        (Leaf::SetSelf, Value::Struct(s)) if !args.is_empty() => {
            let Some(i) = callee.ic_at(0).and_then(|ic| ic.field(s.layout)) else {
                return false;
            };
            crate::value::cycles::note_store(s, &args[0]);
            let mut f = s.fields.write();
            let Some(slot) = f.get_mut(i) else { return false };
            // The argument moves into the field.
            let old = replace_field(slot, args[0].take_words());
            drop(f);
            drop(old);
            Value::None.take_words()
        }
        _ => return false,
    };
    set_words(&mut window[0], result);
    for v in &mut window[1..] {
        setv(v, Value::Unbound);
    }
    true
}

/// `x is y`; `x is none` and `x is not none` (most uses) are one tag test
/// here, anything else goes to `Value::is`.
#[inline(always)]
fn same_object(x: &Value, y: &Value) -> bool {
    match (x, y) {
        (x, Value::None) => matches!(x, Value::None),
        (Value::None, _) => false,
        (x, y) => x.is(y),
    }
}

#[inline(always)]
fn cmp_fast(op: CmpOp, a: &Value, b: &Value) -> Option<bool> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => cmp_ordered(op, *x, *y),
        (Value::Float(x), Value::Float(y)) => cmp_ordered(op, *x, *y),
        // An int and a float compare exactly (as Python does); an int of at
        // most 2^53 in magnitude converts without rounding, so the float
        // comparison is that exact one.
        (Value::Int(i), Value::Float(y)) if i.unsigned_abs() <= 1 << 53 => cmp_ordered(op, *i as f64, *y),
        (Value::Float(x), Value::Int(i)) if i.unsigned_abs() <= 1 << 53 => cmp_ordered(op, *x, *i as f64),
        // Strings compare by code points, which is UTF-8's byte order.
        // `==`/`!=` by identity, then the fixed-size inline buffers (`text_eq`).
        (Value::Str(x), Value::Str(y)) => match op {
            CmpOp::Eq | CmpOp::NotEq => Some((StrRef::ptr_eq(x, y) || x.text_eq(y)) == (op == CmpOp::Eq)),
            _ => cmp_ordered(op, x.as_str(), y.as_str()),
        },
        _ => None,
    }
}

/// `item in container` for an int among the ints of a list or tuple (the
/// scan `ops::contains` does first), without leaving the dispatch loop;
/// `None` for anything else.
#[inline]
fn int_in(item: &Value, container: &Value) -> Option<bool> {
    match container {
        Value::List(l) => ops::int_among_ints(item, &l.items.read()),
        Value::Tuple(t) => ops::int_among_ints(item, &t.0),
        // An int or a string among a dict's keys or a set's members: found
        // by hash without building a key (what `d[k]` does).
        Value::Dict(d) => key_in(item, &d.map.read()),
        Value::Set(s) => key_in(item, &s.map.read()),
        _ => None,
    }
}

#[inline(always)]
fn key_in(item: &Value, map: &DictMap) -> Option<bool> {
    match item {
        Value::Int(i) => Some(map.get_int(*i).is_some()),
        Value::Str(s) => Some(map.get_str(s).is_some()),
        _ => None,
    }
}

/// The truth of a value whose truth needs no Apsi code and no error (a
/// struct's `__bool__`/`__len__` does): `None` for the rest.
#[inline(always)]
fn plain_truth(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::None => Some(false),
        Value::Int(i) => Some(*i != 0),
        Value::Float(f) => Some(*f != 0.0),
        Value::Str(s) => Some(!s.as_str().is_empty()),
        Value::List(l) => Some(!l.items.read().is_empty()),
        Value::Tuple(t) => Some(!t.0.is_empty()),
        Value::Struct(s) if s.ty.always_true => Some(true),
        _ => None,
    }
}

/// An order comparison of two ints or two floats (`None` for `in`/`is`).
#[inline(always)]
fn cmp_ordered<T: PartialOrd>(op: CmpOp, x: T, y: T) -> Option<bool> {
    Some(match op {
        CmpOp::Lt => x < y,
        CmpOp::LtE => x <= y,
        CmpOp::Gt => x > y,
        CmpOp::GtE => x >= y,
        CmpOp::Eq => x == y,
        CmpOp::NotEq => x != y,
        _ => return None,
    })
}

#[inline(always)]
fn cmp_int(op: CmpOp, x: i64, y: i64) -> bool {
    // (A branch-free truth-mask version measured the same instruction count
    // per fib call under callgrind, so the plain match stays.)
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

/// Can a plain closure (`proto.simple`) be entered with `n` positional
/// arguments, the rest of its parameters taking their defaults?
#[inline(always)]
fn takes_positional(c: &Closure, n: usize) -> bool {
    let np = c.nparams as usize;
    c.simple && n <= np && n + c.defaults.len() >= np
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
                BinOp::Div if y != 0 && x.unsigned_abs() < (1 << 53) && y.unsigned_abs() < (1 << 53) => {
                    Some(Value::Float(x as f64 / y as f64))
                }
                BinOp::BitAnd => Some(Value::Int(x & y)),
                BinOp::BitOr => Some(Value::Int(x | y)),
                BinOp::BitXor => Some(Value::Int(x ^ y)),
                // Shifts and powers that neither overflow nor raise (the
                // rest, with their errors, in `ops::arith`).
                BinOp::Shr if y >= 0 => Some(Value::Int(x >> y.min(63))),
                BinOp::Shl if (0..64).contains(&y) && (x << y) >> y == x => Some(Value::Int(x << y)),
                BinOp::Pow if (0..64).contains(&y) => x.checked_pow(y as u32).map(Value::Int),
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
        BinOp::Pow => crate::ops::arith::float_pow(x, y).ok().map(Value::Float),
        BinOp::FloorDiv if y != 0.0 => Some(Value::Float(crate::ops::arith::float_floordiv(x, y))),
        BinOp::Mod if y != 0.0 => Some(Value::Float(crate::ops::arith::float_mod(x, y))),
        _ => None,
    }
}

impl Executor {
    pub fn new(shared: Arc<Shared>) -> Executor {
        let max_depth = shared.max_depth;
        Executor {
            max_depth,
            shared,
            stack: vec![Value::Unbound; 256],
            frames: Vec::new(),
            cells: Vec::new(),
            handlers: Vec::new(),
            native_depth: 0,
            reraise_skip: None,
            _participant: Some(crate::value::vlock::Participant::new()),
            gen_frames: Vec::new(),
            yielded: false,
            special: Vec::new(),
            gen_for: 0,
            scans: Vec::new(),
        }
    }

    /// An executor for re-entering Apsi code on a thread that already runs
    /// it (`reentry`): a stack of its own, no new participant.
    pub(crate) fn nested(shared: Arc<Shared>) -> Executor {
        let max_depth = shared.max_depth;
        Executor {
            max_depth,
            shared,
            stack: vec![Value::Unbound; 64],
            frames: Vec::new(),
            cells: Vec::new(),
            handlers: Vec::new(),
            native_depth: 0,
            reraise_skip: None,
            _participant: None,
            gen_frames: Vec::new(),
            yielded: false,
            special: Vec::new(),
            gen_for: 0,
            scans: Vec::new(),
        }
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
        super::reentry::install(&self.shared);
        self.call_value_here(f, args, kwargs)
    }

    /// [`Executor::call`] for a spare executor of `reentry`, whose runtime
    /// is this thread's already.
    pub(crate) fn call_installed(&mut self, f: &Value, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
        self.native_enter()?;
        let r = self.call_value_here(f, args, kwargs);
        self.native_leave();
        r
    }

    /// [`Executor::call_value`] once the runtime is installed.
    fn call_value_here(&mut self, f: &Value, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
        let fpos = self.frame_end();
        self.ensure(fpos + 2 + args.len());
        let depth = self.frames.len();
        // A plain function given exactly its positional parameters (an
        // operator method called by a list scan, a sort key, a `map`
        // lambda): no argument vector, no binding.
        if let (Value::Func(c), true) = (f, kwargs.is_empty()) {
            if c.simple && args.len() == c.nparams as usize {
                // The arguments go into their slots by parts and the result
                // comes back by parts (`Value::words`, `take_words`): each was
                // usually just written that way (by the caller's loop, by the
                // callee's `Return`), and a 16-byte copy of it stalls on
                // store forwarding (a third of a `filter` lambda's call).
                let c = crate::value::solo::clone_arc(c);
                let mut r = match self.enter_closure(fpos, c, args.iter().map(Value::words)) {
                    Ok(()) => self.run(depth),
                    Err(e) => return Err(e),
                };
                if let Some(s) = self.stack.get_mut(fpos) {
                    setv(s, Value::Unbound);
                }
                return match &mut r {
                    Ok(v) => Ok(v.take_words().into_value()),
                    Err(_) => r,
                };
            }
        }
        setv(&mut self.stack[fpos], f.clone());
        let pos: Args = args.iter().cloned().collect();
        let kw: Vec<(Arc<str>, Value)> = kwargs.to_vec();
        let r = match self.setup_call(fpos, f.clone(), pos, kw) {
            Ok(Some(v)) => Ok(v),
            Ok(None) => self.run(depth),
            Err(e) => Err(e),
        };
        if let Some(s) = self.stack.get_mut(fpos) {
            setv(s, Value::Unbound);
        }
        r
    }

    /// Push a frame for the closure at `stack[fpos]`, whose arguments are
    /// already in the slots above it. The common case (room on both stacks,
    /// depth below the limit) is a handful of instructions; the rest is cold.
    #[inline(always)]
    fn push_frame(&mut self, fpos: usize, clo: *const Closure) -> VResult<()> {
        // SAFETY: `clo` is owned by the Value at `stack[fpos]` (or by a write-once global).
        let code: *const Code = unsafe { &*clo }.code();
        let nregs = unsafe { &*code }.nregs as usize;
        let base = fpos + 1;
        let depth = self.frames.len();
        if depth >= self.max_depth || self.stack.len() <= base + nregs || depth == self.frames.capacity() {
            return self.push_frame_slow(fpos, clo);
        }
        let fr = Frame {
            clo,
            code,
            nregs: nregs as u16,
            pc: 0,
            base: base as u32,
            cell_base: self.cells.len() as u32,
            ret: Ret::Normal,
        };
        // SAFETY: `depth < capacity` was checked above.
        unsafe {
            self.frames.as_mut_ptr().add(depth).write(fr);
            self.frames.set_len(depth + 1);
        }
        if !unsafe { &*code }.unbound_regs.is_empty() {
            self.reset_unbound(code, base);
        }
        Ok(())
    }

    /// Put `c` in the callee slot `fpos` and its bound parameter values
    /// above it (room was `ensure`d), and push its frame; on failure no
    /// frame owns those slots, so they go back to unbound.
    fn enter_closure(&mut self, fpos: usize, c: Arc<Closure>, slots: impl Iterator<Item = Words>) -> VResult<()> {
        // Written by parts (see `set_words`), as is the callee below.
        let mut n = 0;
        for (i, w) in slots.enumerate() {
            set_words(&mut self.stack[fpos + 1 + i], w);
            n = i + 1;
        }
        let ptr = Arc::as_ptr(&c);
        // The callee value is built on the stack a byte and a word at a
        // time; a 16-byte copy of it stalled on store forwarding (half of
        // `call_value`'s time in a `filter` lambda's calls).
        let mut callee = Value::Func(c);
        set_words(&mut self.stack[fpos], callee.take_words());
        let r = self.push_frame(fpos, ptr);
        if r.is_err() {
            for s in self.stack.iter_mut().skip(fpos).take(n + 1) {
                *s = Value::Unbound;
            }
        }
        r
    }

    /// After `push_frame` for a plain closure given `given` of its
    /// positional parameters (see [`takes_positional`]): the missing ones
    /// take their defaults, written into the new window.
    #[inline]
    fn fill_defaults(&mut self, clo: *const Closure, base: usize, given: usize) {
        // SAFETY: the closure is kept alive by the callee slot below `base`.
        let c = unsafe { &*clo };
        let np = c.nparams as usize;
        let first = np - c.defaults.len();
        for i in given..np {
            let v = c.defaults[i - first].clone();
            setv(&mut self.stack[base + i], v);
        }
    }

    /// A new frame's window starts right above its arguments, where the
    /// caller may have left temporaries it no longer needs: the locals the
    /// callee may read before assigning (`Code::unbound_regs`) go back to
    /// `Unbound`, so such a read raises instead of seeing the caller's value.
    #[cold]
    #[inline(never)]
    fn reset_unbound(&mut self, code: *const Code, base: usize) {
        // SAFETY: the code object is kept alive by the closure being called.
        for &r in unsafe { &*code }.unbound_regs.iter() {
            if let Some(v) = self.stack.get_mut(base + r as usize) {
                setv(v, Value::Unbound);
            }
        }
    }

    /// `push_frame` when the depth limit is reached or a stack must grow.
    #[cold]
    #[inline(never)]
    fn push_frame_slow(&mut self, fpos: usize, clo: *const Closure) -> VResult<()> {
        if self.frames.len() >= self.max_depth {
            return Err(err(ErrorKind::RecursionError, "maximum recursion depth exceeded"));
        }
        // SAFETY: as in push_frame.
        let nregs = unsafe { &*clo }.code().nregs as usize;
        self.ensure(fpos + 1 + nregs + 1);
        self.frames.reserve(1);
        self.push_frame(fpos, clo)
    }

    /// Prepare a call of `f` placed at `stack[fpos]` with arguments taken out
    /// of the registers. Returns the value at once for natives, struct
    /// constructors and error kinds, or `None` when a frame was pushed.
    pub(crate) fn setup_call(
        &mut self,
        fpos: usize,
        f: Value,
        mut pos: Args,
        kw: Vec<(Arc<str>, Value)>,
    ) -> VResult<Option<Value>> {
        match f {
            Value::Func(c) => {
                if c.proto.generator && kw.is_empty() {
                    if let Some(g) = crate::value::generator::GenObj::call_plain(&c, &pos) {
                        return Ok(Some(g));
                    }
                }
                let slots = call::bind_args(&c, pos, kw)?;
                if c.proto.generator {
                    // A generator function runs nothing yet (value/generator.rs).
                    return Ok(Some(crate::value::generator::GenObj::new_value(c, slots)));
                }
                self.ensure(fpos + 1 + slots.len() + 1);
                let slots = slots.into_iter().map(|mut v| v.take_words());
                self.enter_closure(fpos, c, slots).map(|()| None)
            }
            Value::Native(nf) => {
                flush_before(&self.shared, &nf);
                nf.call(self, &pos, &kw).map(Some)
            }
            Value::BoundMethod(bm) => {
                pos.insert(0, bm.receiver.clone());
                self.setup_call(fpos, bm.func.clone(), pos, kw)
            }
            // `__init__` in Apsi runs as a frame on this loop (`frames.rs`).
            Value::StructType(t) => match self.push_init_frame(fpos, &t, pos, kw) {
                Ok(r) => r.map(|()| None),
                Err((pos, kw)) => crate::ops::structs::construct(self, &t, pos, kw).map(Some),
            },
            Value::Kind(k) => call::make_error(k, &pos, &kw).map(Some),
            // `obj(args)` on a struct with `__call__`.
            Value::Struct(ref s) if s.ty.method("__call__").is_some() => {
                let m = s.ty.method("__call__").cloned();
                pos.insert(0, f.clone());
                self.setup_call(fpos, m.unwrap_or(Value::None), pos, kw)
            }
            // A module that exports its own name is callable (`@precision(bf16)`).
            Value::Module(m) if m.attrs.read().contains_key(m.name.as_str()) => {
                let g = m.attrs.read().get(m.name.as_str()).cloned().unwrap_or(Value::None);
                self.setup_call(fpos, g, pos, kw)
            }
            // A module object that answers `__call__` (the dtype `bool`, which
            // shares its name with the `bool` constructor, converts like it).
            Value::Object(o) => match o.0.get_attr(&Value::Object(o.clone()), "__call__") {
                Some(Ok(h)) => self.setup_call(fpos, h, pos, kw),
                Some(Err(e)) => Err(e),
                None => Err(type_err(format!("'{}' object is not callable", o.0.type_name()))),
            },
            other => Err(type_err(format!("'{}' object is not callable", other.type_name()))),
        }
    }

    /// Record where `exc` passed and pop frames until a handler catches it
    /// (`Ok`) or the frame at depth `stop` is gone (`Err`).
    #[inline(never)]
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
            let entry = TraceEntry {
                function: code.name.to_string(),
                span: code.span_at((fr.pc as usize).saturating_sub(1)),
            };
            let is_skip = matches!(&self.reraise_skip, Some((e, f)) if Arc::ptr_eq(e, &exc) && *f == fi);
            if let Some(h) = self.handlers.last().copied() {
                if h.frame as usize == fi {
                    self.handlers.pop();
                    // Record where it passed now: if the handler re-raises,
                    // this frame is not recorded a second time.
                    flush(&exc, std::mem::take(&mut inner), std::mem::take(&mut outer));
                    if !is_skip {
                        exc.trace.lock().push(entry);
                        self.reraise_skip = Some((exc.clone(), fi));
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
            if is_skip {
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
            if fr.ret != Ret::Normal {
                self.special.pop();
            }
            // The innermost generator of a delegation raised: the one
            // above it is pushed in its place, at its `yield from`.
            if fr.ret == Ret::GenFor && self.gen_for_raised() {
                continue;
            }
            if fr.ret == Ret::Scan {
                if let Some(at) = self.scans.pop() {
                    at.give_up();
                }
            }
            if matches!(
                fr.ret,
                Ret::Op | Ret::OpInplace | Ret::Discard | Ret::Cmp | Ret::CmpNot | Ret::Scan
            ) {
                // Its callee slot lies above the caller's window.
                if let Some(s) = self.stack.get_mut((fr.base as usize).wrapping_sub(1)) {
                    *s = Value::Unbound;
                }
            }
            if self.frames.len() <= stop {
                flush(&exc, inner, outer);
                return Err(exc);
            }
        }
    }

    /// Drop the top frame and clear its registers.
    #[inline(always)]
    fn pop_frame(&mut self) {
        self.pop_frame_clearing(usize::MAX)
    }

    /// Drop the top frame and clear its first `clear` registers (all of them
    /// with `usize::MAX`); the caller knows the rest hold nothing of this call.
    #[inline(always)]
    fn pop_frame_clearing(&mut self, clear: usize) {
        let Some(depth) = self.frames.len().checked_sub(1) else {
            return;
        };
        // The frame was usually pushed just before, field by field: each
        // field is read with its own size (LLVM would read `nregs` and the
        // byte after it as one 4-byte load spanning two stores, which
        // stalls on store forwarding).
        // SAFETY: `depth` is the top frame's index.
        let fr = unsafe { self.frames.as_ptr().add(depth) };
        let (nregs, base, cell_base) = unsafe {
            (
                std::ptr::read_volatile(std::ptr::addr_of!((*fr).nregs)),
                (*fr).base,
                (*fr).cell_base,
            )
        };
        // SAFETY: a `Frame` is `Copy`; shortening forgets nothing.
        unsafe { self.frames.set_len(depth) };
        let (base, nregs) = (base as usize, (nregs as usize).min(clear));
        if let Some(w) = self.stack.get_mut(base..base + nregs) {
            // Every cleared slot goes back to unbound, dropping what it
            // owned (see "Register windows" in ARCHITECTURE.md for why the
            // slots `clear` leaves out hold nothing of this call).
            for v in w {
                setv(v, Value::Unbound);
            }
        }
        // (A handler of a frame further down, `try:` around a whole
        // program, is not this frame's: plain returns skip the call.)
        if self.cells.len() > cell_base as usize
            || self
                .handlers
                .last()
                .is_some_and(|h| h.frame as usize >= self.frames.len())
        {
            self.pop_frame_rest(cell_base as usize);
        }
    }

    /// The cells and handlers of a frame that has just been popped.
    #[cold]
    #[inline(never)]
    fn pop_frame_rest(&mut self, cell_base: usize) {
        self.cells.truncate(cell_base);
        let depth = self.frames.len() as u32;
        while matches!(self.handlers.last(), Some(h) if h.frame >= depth) {
            self.handlers.pop();
        }
    }

    /// Run until the frame count drops back to `stop`; returns the value the
    /// frame at depth `stop` returned.
    ///
    /// This is the hot half of the dispatch loop: each case here is a fast
    /// path that either finishes its instruction (`continue`) or falls
    /// through to `slow`, which runs the instruction in full.
    #[inline(never)]
    pub(crate) fn run(&mut self, stop: usize) -> VResult<Value> {
        'reload: loop {
            // The top frame's fields are read one by one: it was usually just
            // written field by field, and one wide copy would stall on
            // store-to-load forwarding.
            let Some(top) = self.frames.last() else {
                return Ok(Value::None);
            };
            // SAFETY: the code object is kept alive by its closure, which its
            // stack slot keeps alive (see module invariants).
            let mut code: &Code = unsafe { &*top.code };
            let mut base = top.base as usize;
            let mut start: *const Instr = code.instrs.as_ptr();
            // SAFETY: a saved pc is an instruction index of this code.
            let mut ip: *const Instr = unsafe { start.add(top.pc as usize) };
            let mut regs: *mut Value = unsafe { self.stack.as_mut_ptr().add(base) };
            // Frames above this count return on the fast paths: above this
            // run's bottom frame and above every frame the VM pushed for an
            // instruction (`self.special`, which only changes on the way
            // through 'reload).
            let mut floor = match self.special.last() {
                Some(&d) => (d as usize).max(stop + 1),
                None => stop + 1,
            };

            macro_rules! r {
                ($i:expr) => {
                    // SAFETY: the compiler keeps every register below `nregs`,
                    // and push_frame reserved `base + nregs` slots.
                    unsafe { &mut *regs.add($i as usize) }
                };
            }
            // Switch the loop's state to another frame without going round
            // 'reload (a call just pushed it, or a return uncovered it).
            macro_rules! enter {
                ($code:expr, $base:expr, $pc:expr) => {{
                    // SAFETY: as for the frame read at 'reload.
                    code = unsafe { &*$code };
                    base = $base;
                    start = code.instrs.as_ptr();
                    ip = unsafe { start.add($pc) };
                    regs = unsafe { self.stack.as_mut_ptr().add(base) };
                    continue;
                }};
            }
            // Enter the top frame after a call or return that may have
            // pushed or popped a frame the VM pushed for an instruction
            // (what `'reload` does, without leaving the loop).
            macro_rules! reenter_top {
                () => {{
                    floor = match self.special.last() {
                        Some(&d) => (d as usize).max(stop + 1),
                        None => stop + 1,
                    };
                    // SAFETY: the caller just pushed a frame or returned into one.
                    let top = unsafe { self.frames.last().unwrap_unchecked() };
                    enter!(top.code, top.base as usize, top.pc as usize)
                }};
            }
            // `x == y`, `x < y`… on a struct `x` with a plain Apsi method
            // for it (`__eq__`…): its frame is pushed here (`push_cmp_frame`),
            // its result lands as `slow`'s `Cmp`/`CmpJmp` would put it.
            macro_rules! cmp_frame {
                ($op:expr, $x:expr, $y:expr) => {
                    if let Value::Struct(_) = &*r!($x) {
                        save_pc!();
                        // The registers themselves: `push_cmp_frame` copies
                        // the operands before the stack can move.
                        match self.push_cmp_frame($op, &*r!($x), &*r!($y)) {
                            Some(Ok(())) => reenter_top!(),
                            Some(Err(e)) => throw!(e),
                            None => {}
                        }
                    }
                };
            }
            // `x in xs` for a struct `x` and a list or tuple `xs`: the
            // elements' `__eq__` run as frames on this loop (`Ret::Scan`).
            // `Some(found)` (the index of the element found, if any) when
            // the scan ended here without pushing one; once it has,
            // `scan_returned` finishes the instruction. `None`: not such a
            // scan, nothing done.
            macro_rules! scan_frames {
                ($x:expr, $xs:expr) => {
                    match (&*r!($x), &*r!($xs)) {
                        (Value::Struct(_), Value::List(_) | Value::Tuple(_)) => {
                            save_pc!();
                            // Copies, held by the scan until it ends: a
                            // pushed frame may move the stack.
                            let step = self.scan(dup(r!($x)), dup(r!($xs)));
                            match step {
                                Ok(frames::ScanStep::Pushed) => reenter_top!(),
                                Ok(frames::ScanStep::Done(found)) => {
                                    regs = unsafe { self.stack.as_mut_ptr().add(base) };
                                    Some(found)
                                }
                                Err(e) => throw!(e),
                            }
                        }
                        _ => None,
                    }
                };
            }
            // `x op y` on a struct `x` whose operator method the
            // instruction's cache knows: push the method's frame here.
            macro_rules! struct_op {
                ($b:expr, $c:expr) => {
                    if let Value::Struct(_) = &*r!($b) {
                        let ic = ic!();
                        save_pc!();
                        match self.push_op_frame_hit(ic, r!($b), r!($c)) {
                            Some(Ok(())) => reenter_top!(),
                            Some(Err(e)) => throw!(e),
                            None => {}
                        }
                    }
                };
            }
            // The cache of the instruction running (`Code::ic_of`).
            macro_rules! ic {
                () => {
                    // SAFETY: only the arms of instructions that have a
                    // cache use it (`GetAttr`, `SetAttr`, `CallMethod`,
                    // `CallSuper`, and `Add`, `Sub`, `Mul`, `MulT`, `Bin`
                    // through `struct_op`): `code::has_cache`.
                    {
                        let pc = pc!() - 1;
                        unsafe { code.ic_of(pc) }
                    }
                };
            }
            macro_rules! pc {
                () => {
                    // SAFETY: `ip` points into this code's instructions.
                    unsafe { ip.offset_from(start) as usize }
                };
            }
            macro_rules! goto {
                ($t:expr) => {
                    // SAFETY: jump targets are in range (the compiler emits them).
                    ip = unsafe { start.add($t as usize) }
                };
            }
            macro_rules! save_pc {
                () => {
                    let pc = pc!() as u32;
                    // SAFETY: this loop runs the top frame, so there is one.
                    unsafe { self.frames.last_mut().unwrap_unchecked() }.pc = pc;
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
            // A conditional jump is two words: the test, then `Jmp { t }`.
            macro_rules! jump_if {
                ($cond:expr) => {{
                    if $cond {
                        follow_jmp!();
                    } else {
                        skip_jmp!();
                    }
                    continue;
                }};
            }
            // A loop back-edge: a pending interrupt (`crate::interrupt`)
            // is raised here as `KeyboardInterrupt`.
            // It also runs a cycle collection the collector asked for
            // (`value/cycles.rs`): no lock is held here, and every value in
            // use is in a register.
            macro_rules! interrupt_point {
                () => {
                    if crate::interrupt::pending() {
                        if crate::interrupt::take_collection() {
                            crate::value::cycles::collect();
                        }
                        if let Some(e) = crate::interrupt::take() {
                            throw!(e);
                        }
                    }
                };
            }
            macro_rules! follow_jmp {
                () => {
                    // SAFETY: a test is always followed by its jump word.
                    match unsafe { *ip } {
                        Instr::Jmp { t } => goto!(t),
                        _ => skip_jmp!(),
                    }
                };
            }
            macro_rules! skip_jmp {
                () => {
                    ip = unsafe { ip.add(1) }
                };
            }
            macro_rules! return_fast {
                ($a:expr, $clear:expr) => {{
                    // Frames the VM pushed for an instruction (`Ret::Init`,
                    // `Ret::Op`) return through `slow`.
                    if self.frames.len() > floor && base > 0 {
                        macro_rules! ret {
                            ($store:expr) => {{
                                self.pop_frame_clearing($clear);
                                // SAFETY: `base - 1` lies in the caller's window.
                                $store(unsafe { &mut *self.stack.as_mut_ptr().add(base - 1) });
                                // SAFETY: a caller's frame is below this one (`frames.len() > floor`).
                                let top = unsafe { self.frames.last().unwrap_unchecked() };
                                enter!(top.code, top.base as usize, top.pc as usize)
                            }};
                        }
                        // (`fib`, `add`: an int needs no move.)
                        if let Value::Int(i) = *r!($a) {
                            ret!(|s: &mut Value| setv(s, Value::Int(i)))
                        }
                        // Anything else moves by parts: it was usually just
                        // written that way (see `Value::take_words`).
                        let w = r!($a).take_words();
                        ret!(|s: &mut Value| set_words(s, w))
                    }
                    // The value leaves by parts here too: a 16-byte read
                    // of a register just written by parts stalls on store
                    // forwarding (it was the busiest instruction of a
                    // `filter` lambda's call from Rust).
                    if self.frames.len() == floor && floor > stop + 1 {
                        // A list scan's `__eq__` said no: the next element,
                        // of the same type, runs in this frame again.
                        if matches!(*r!($a), Value::Bool(false)) && self.scan_again() {
                            ip = start;
                            continue;
                        }
                        let v = r!($a).take_words().into_value();
                        return_special!(v)
                    }
                    return_bottom!(r!($a).take_words().into_value(), $clear);
                }};
            }
            // A return from the bottom frame of this `run` (a call from Rust
            // into Apsi: a `map` function, a sort key, an `__eq__` of a list
            // scan) as a plain call: its value is this `run`'s, without
            // `slow` and `finish_return`.
            macro_rules! return_bottom {
                ($v:expr, $clear:expr) => {
                    // SAFETY: this loop runs the top frame, so there is one.
                    if self.frames.len() == stop + 1
                        && unsafe { self.frames.last().unwrap_unchecked() }.ret == Ret::Normal
                    {
                        let v = $v;
                        self.pop_frame_clearing($clear);
                        return Ok(v);
                    }
                };
            }
            // A built-in's result (the stack may have moved): into `a`, or raised.
            macro_rules! native_result {
                ($res:expr, $a:expr) => {{
                    regs = unsafe { self.stack.as_mut_ptr().add(base) };
                    match $res {
                        Ok(v) => {
                            setv(r!($a), v);
                            continue;
                        }
                        Err(e) => throw!(e),
                    }
                }};
            }
            // A return from the top frame when the VM pushed it for an
            // instruction (`Ret::Init`, `Ret::Op`…; never the bottom frame
            // of this `run`): `finish_return` says where the value goes.
            macro_rules! return_special {
                ($v:expr) => {{
                    // SAFETY: this loop runs the top frame, so there is one.
                    let fr = unsafe { *self.frames.last().unwrap_unchecked() };
                    self.pop_frame();
                    let v: Value = $v;
                    // A constructor's `__init__` returning `none`: the
                    // instance is in the callee slot already.
                    if fr.ret == Ret::Init && matches!(v, Value::None) {
                        self.special.pop();
                        reenter_top!()
                    }
                    match self.finish_return(fr.ret, fr.base as usize, v, stop) {
                        Flow::Next | Flow::Reload => reenter_top!(),
                        Flow::Throw(e) => throw!(e),
                        Flow::Return(v) => return Ok(v),
                        Flow::Fail(e) => return Err(e),
                    }
                }};
            }

            // Push the frame of the plain closure `clo` (the callee slot at
            // `fpos` keeps it alive), given `given` positional arguments
            // (its defaults fill the rest), and run it.
            macro_rules! push_and_enter {
                ($clo:expr, $callee:expr, $fpos:expr, $given:expr) => {{
                    let (clo, fpos, given): (*const Closure, usize, usize) = ($clo, $fpos, $given);
                    save_pc!();
                    match self.push_frame(fpos, clo) {
                        Ok(()) => {
                            // SAFETY: the callee slot keeps the closure alive.
                            if given < unsafe { &*clo }.nparams as usize {
                                self.fill_defaults(clo, fpos + 1, given);
                            }
                            enter!($callee, fpos + 1, 0)
                        }
                        Err(e) => throw!(e),
                    }
                }};
            }

            // One step of a `for` loop: `ForNext` at the loop's top (its
            // item skips the jump word, its end follows it) and `ForLoop` at
            // its bottom (the other way round) share it. `$unpack_pc` is where
            // the body's `UnpackRegs` of the row would be (the compiler
            // keeps a loop item's unpack `UnpackRegs`).
            macro_rules! for_step {
                ($a:expr, $b:expr, $item:ident, $end:ident, $unpack_pc:expr) => {{
                    let (a, b) = ($a, $b);
                    if let Value::Int(i) = *r!(a as usize + 1) {
                        if let Value::List(l) = &*r!(a) {
                            // An int item (the common case) is copied by
                            // its payload, not through a generic clone.
                            let g = l.items.read();
                            if let Some(&Value::Int(x)) = g.get(i as usize) {
                                drop(g);
                                setv(r!(b), Value::Int(x));
                                setv(r!(a as usize + 1), Value::Int(i + 1));
                                $item!();
                                continue;
                            }
                        }
                        // `ForPrep` keeps only ASCII strings, so byte i is
                        // character i (a shared one-character string).
                        // Its own arm: an item handed through the
                        // `Option` below was written to the stack and
                        // read back at other offsets, stalling each step.
                        if let Value::Str(s) = &*r!(a) {
                            match s.as_str().as_bytes().get(i as usize) {
                                Some(&c) => {
                                    setv(r!(b), Value::ascii_char(c));
                                    setv(r!(a as usize + 1), Value::Int(i + 1));
                                    $item!();
                                }
                                None => $end!(),
                            }
                            continue;
                        }
                        // The item goes from the container to the
                        // register as its parts (`Value::words`).
                        let item = match &*r!(a) {
                            Value::List(l) => {
                                let g = l.items.read();
                                Some(g.get(i as usize).map(Value::words))
                            }
                            Value::Tuple(t) => Some(t.0.get(i as usize).map(Value::words)),
                            // A range value (`[f(x) for x in range(n)]`,
                            // `for i in RANGE`).
                            Value::Range(rg) => {
                                match rg.item(i) {
                                    Some(x) => {
                                        setv(r!(b), Value::Int(x));
                                        setv(r!(a as usize + 1), Value::Int(i + 1));
                                        $item!();
                                    }
                                    None => $end!(),
                                }
                                continue;
                            }
                            _ => None,
                        };
                        match item {
                            Some(Some(w)) => {
                                set_words(r!(b), w);
                                setv(r!(a as usize + 1), Value::Int(i + 1));
                                $item!();
                                continue;
                            }
                            Some(None) => {
                                $end!();
                                continue;
                            }
                            None => {}
                        }
                    }
                    // A loop's `zip`/`enumerate` whose row the loop
                    // unpacks at once (`ForNext; Jmp; UnpackRegs` of the
                    // row, or a `ForLoop` whose body starts with that
                    // `UnpackRegs`): each value goes straight into its
                    // target, and no row tuple is built.
                    if let Value::Object(o) = &*r!(a) {
                        let unpack_pc: usize = $unpack_pc;
                        if let (Some(it), Some(&Instr::UnpackRegs { b: row, k, n })) = (
                            o.0.as_any().downcast_ref::<ops::iters::IterObj>(),
                            code.instrs.get(unpack_pc),
                        ) {
                            if let (true, Some(Value::Tuple(targets))) = (row == b, code.consts.get(k as usize)) {
                                let step = it.next_unpacked(n as usize, |j, w| match targets.0.get(j) {
                                    Some(&Value::Int(t)) => set_words(r!(t), w),
                                    _ => drop(w.into_value()),
                                });
                                match step {
                                    Some(true) => {
                                        goto!(unpack_pc + 1);
                                        continue;
                                    }
                                    Some(false) => {
                                        $end!();
                                        continue;
                                    }
                                    None => {}
                                }
                            }
                        }
                    }
                    // A generator: its frame is pushed on this loop
                    // (`resume.rs`); its `yield` comes back to the `Jmp` word.
                    if let Value::Object(o) = &*r!(a) {
                        if let Some(g) = o.0.as_generator() {
                            let g: *const crate::value::generator::GenObj = g;
                            save_pc!();
                            // SAFETY: register `a` keeps the generator alive (the
                            // register may move as the stack grows; it does not).
                            match self.push_gen_frame(unsafe { &*g }) {
                                Ok(true) => reenter_top!(),
                                Ok(false) => {
                                    setv(r!(a as usize + 1), Value::None);
                                    $end!();
                                    continue;
                                }
                                Err(e) => throw!(e),
                            }
                        }
                    }
                }};
            }

            loop {
                // SAFETY: every code object ends in a return, and jump targets are in range.
                // Operands are read from the instruction in memory by each case
                // (a by-value copy makes the compiler decode every field up
                // front, which costs registers the loop state needs).
                let ins: &Instr = unsafe { &*ip };
                ip = unsafe { ip.add(1) };
                #[cfg(feature = "opstats")]
                super::opstats::count(ins, false);
                match *ins {
                    Instr::Nop => continue,
                    Instr::Move { a, b } => {
                        if a != b {
                            copy_to(r!(a), r!(b));
                        }
                        continue;
                    }
                    Instr::LoadInt { a, v } => {
                        setv(r!(a), Value::Int(v as i64));
                        continue;
                    }
                    Instr::LoadNone { a } => {
                        setv(r!(a), Value::None);
                        continue;
                    }
                    Instr::LoadBool { a, v } => {
                        setv(r!(a), Value::Bool(v));
                        continue;
                    }
                    Instr::LoadK { a, k } => {
                        if let Some(v) = code.consts.get(k as usize) {
                            copy_to(r!(a), v);
                            continue;
                        }
                    }
                    Instr::GetGlobal { a, g } => {
                        if let Some(slot) = code.globals.get(g as usize) {
                            if slot.is_const {
                                if let Some(v) = slot.get_const() {
                                    copy_to(r!(a), v);
                                    continue;
                                }
                            } else if let Some(w) = slot.get_words() {
                                set_words(r!(a), w);
                                continue;
                            }
                        }
                    }
                    Instr::Add { a, b, c } => match (&*r!(b), &*r!(c)) {
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
                        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
                            if let Some(v) = bin_fast(BinOp::Add, r!(b), r!(c)) {
                                setv(r!(a), v);
                                continue;
                            }
                        }
                        _ => struct_op!(b, c),
                    },
                    Instr::Sub { a, b, c } => match (&*r!(b), &*r!(c)) {
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
                        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
                            if let Some(v) = bin_fast(BinOp::Sub, r!(b), r!(c)) {
                                setv(r!(a), v);
                                continue;
                            }
                        }
                        _ => struct_op!(b, c),
                    },
                    Instr::Mul { a, b, c } | Instr::MulT { a, b, c } => match (&*r!(b), &*r!(c)) {
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
                        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
                            if let Some(v) = bin_fast(BinOp::Mul, r!(b), r!(c)) {
                                setv(r!(a), v);
                                continue;
                            }
                        }
                        _ => struct_op!(b, c),
                    },
                    Instr::AddI { a, b, v } => match &*r!(b) {
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
                    },
                    Instr::Bin { op, a, b, c } => {
                        if let Some(v) = bin_fast(op, r!(b), r!(c)) {
                            setv(r!(a), v);
                            continue;
                        }
                        struct_op!(b, c);
                    }
                    Instr::CmpI { op, a, b, v } => {
                        if let Value::Int(x) = *r!(b) {
                            setv(r!(a), Value::Bool(cmp_int(op, x, v as i64)));
                            continue;
                        }
                    }
                    Instr::Cmp { op, a, b, c } => {
                        // `x is none` and friends: identity needs no protocol.
                        if let CmpOp::Is | CmpOp::IsNot = op {
                            let v = same_object(r!(b), r!(c)) == (op == CmpOp::Is);
                            setv(r!(a), Value::Bool(v));
                            continue;
                        }
                        if let Some(v) = cmp_fast(op, r!(b), r!(c)) {
                            setv(r!(a), Value::Bool(v));
                            continue;
                        }
                        cmp_frame!(op, b, c);
                        if let CmpOp::In | CmpOp::NotIn = op {
                            if let Some(found) = int_in(r!(b), r!(c)) {
                                setv(r!(a), Value::Bool(found == (op == CmpOp::In)));
                                continue;
                            }
                            if let Some(found) = scan_frames!(b, c) {
                                setv(r!(a), Value::Bool(found.is_some() == (op == CmpOp::In)));
                                continue;
                            }
                        }
                    }
                    Instr::CmpJmp { op, a, b, jt } => {
                        if let CmpOp::Is | CmpOp::IsNot = op {
                            jump_if!((same_object(r!(a), r!(b)) == (op == CmpOp::Is)) == jt)
                        }
                        if let Some(v) = cmp_fast(op, r!(a), r!(b)) {
                            jump_if!(v == jt)
                        }
                        if let CmpOp::In | CmpOp::NotIn = op {
                            if let Some(found) = int_in(r!(a), r!(b)) {
                                jump_if!((found == (op == CmpOp::In)) == jt)
                            }
                            if let Some(found) = scan_frames!(a, b) {
                                jump_if!((found.is_some() == (op == CmpOp::In)) == jt)
                            }
                        }
                        cmp_frame!(op, a, b);
                    }
                    Instr::CmpJmpNone { a, jt } => jump_if!(matches!(*r!(a), Value::None) == jt),
                    Instr::CmpJmpI { op, a, v, jt } => match &*r!(a) {
                        Value::Int(x) => jump_if!(cmp_int(op, *x, v as i64) == jt),
                        // `if t < 0:` on a float (an i16 is exact as an f64).
                        Value::Float(x) => {
                            if let Some(r) = cmp_ordered(op, *x, v as f64) {
                                jump_if!(r == jt)
                            }
                        }
                        _ => {}
                    },
                    Instr::Jmp { t } => {
                        // Every `while` and `for x in xs` loop goes back through here.
                        interrupt_point!();
                        goto!(t);
                        continue;
                    }
                    Instr::JmpIf { a, t } => match &*r!(a) {
                        Value::Bool(b) => {
                            if *b {
                                goto!(t);
                            }
                            continue;
                        }
                        Value::None => continue,
                        other => {
                            // `if xs:`, `if n:`, `if node:` (a struct with no
                            // `__bool__`/`__len__`).
                            if let Some(b) = plain_truth(other) {
                                if b {
                                    goto!(t);
                                }
                                continue;
                            }
                        }
                    },
                    Instr::JmpIfNot { a, t } => match &*r!(a) {
                        Value::Bool(b) => {
                            if !*b {
                                goto!(t);
                            }
                            continue;
                        }
                        Value::None => {
                            goto!(t);
                            continue;
                        }
                        other => {
                            if let Some(b) = plain_truth(other) {
                                if !b {
                                    goto!(t);
                                }
                                continue;
                            }
                        }
                    },
                    // `for x in xs:` over a list or tuple: walked in place by `ForNext`.
                    Instr::ForPrep { a } => {
                        if let Value::List(_) | Value::Tuple(_) | Value::Range(_) = &*r!(a) {
                            setv(r!(a as usize + 1), Value::Int(0));
                            continue;
                        }
                        // A generator (`yield from`'s `GetIter` made it) is pulled as it is.
                        if crate::value::generator::GenObj::of(r!(a)).is_some() {
                            setv(r!(a as usize + 1), Value::Int(0));
                            continue;
                        }
                    }
                    // A comprehension's append.
                    Instr::ListAppend { a, b } => {
                        if let Value::List(l) = &*r!(a) {
                            let w = r!(b).words();
                            push_words(&mut l.items.write(), w);
                            continue;
                        }
                    }
                    Instr::SetGlobal { a, g } => {
                        if let Some(slot) = code.globals.get(g as usize) {
                            slot.set(dup(r!(a)));
                            continue;
                        }
                    }
                    Instr::Unary { op, a, b } => match op {
                        UnaryOp::Not => {
                            if let Some(t) = plain_truth(r!(b)) {
                                setv(r!(a), Value::Bool(!t));
                                continue;
                            }
                        }
                        UnaryOp::Neg => match *r!(b) {
                            Value::Float(f) => {
                                setv(r!(a), Value::Float(-f));
                                continue;
                            }
                            Value::Int(i) if i != i64::MIN => {
                                setv(r!(a), Value::Int(-i));
                                continue;
                            }
                            _ => {}
                        },
                        _ => {}
                    },
                    // Captured variables (a comprehension or generator
                    // expression reading the enclosing function's names).
                    Instr::GetFree { a, c } => {
                        // SAFETY: this loop runs the top frame; its closure is alive.
                        let clo = unsafe { &*self.frames.last().unwrap_unchecked().clo };
                        if let Some(cell) = clo.free.get(c as usize) {
                            if let Some(w) = cell.bound_words() {
                                set_words(r!(a), w);
                                continue;
                            }
                        }
                    }
                    Instr::GetCell { a, c } => {
                        // SAFETY: as above.
                        let cb = unsafe { self.frames.last().unwrap_unchecked() }.cell_base as usize;
                        if let Some(cell) = self.cells.get(cb + c as usize) {
                            if let Some(w) = cell.bound_words() {
                                set_words(r!(a), w);
                                continue;
                            }
                        }
                    }
                    Instr::CheckBound { a, .. } => {
                        if !matches!(&*r!(a), Value::Unbound) {
                            continue;
                        }
                    }
                    Instr::Call { a, n } => {
                        // A closure with plain positional parameters, called with
                        // exactly that many arguments: the registers are the frame.
                        if let Value::Func(c) = &*r!(a) {
                            if c.simple && n == c.nparams {
                                let clo = Arc::as_ptr(c);
                                let callee: *const Code = c.code();
                                let fpos = base + a as usize;
                                save_pc!();
                                match self.push_frame(fpos, clo) {
                                    Ok(()) => enter!(callee, fpos + 1, 0),
                                    Err(e) => throw!(e),
                                }
                            }
                            // Fewer arguments than parameters, defaults for the rest.
                            if takes_positional(c, n as usize) {
                                let callee: *const Code = c.code();
                                push_and_enter!(Arc::as_ptr(c), callee, base + a as usize, n as usize)
                            }
                        } else if let Value::BoundMethod(bm) = &*r!(a) {
                            // `f = obj.m; f(args…)`: the arguments move up one
                            // slot and the receiver goes in as `self`. The
                            // slot above the last argument is the callee's
                            // (its window starts at `a + 1`), so nothing of
                            // this frame lives there, and it lies within this
                            // window or right above it (reserved with it). The
                            // bound method stays in the callee slot, keeping
                            // the function alive.
                            if let Value::Func(c) = &bm.func {
                                if takes_positional(c, n as usize + 1) {
                                    let clo = Arc::as_ptr(c);
                                    let callee: *const Code = c.code();
                                    let recv = bm.receiver.words();
                                    for j in (0..n as usize).rev() {
                                        let w = r!(a as usize + 1 + j).take_words();
                                        set_words(r!(a as usize + 2 + j), w);
                                    }
                                    set_words(r!(a as usize + 1), recv);
                                    push_and_enter!(clo, callee, base + a as usize, n as usize + 1)
                                }
                            }
                        }
                    }
                    // A prelude or module function with a few arguments.
                    Instr::CallK { a, k, n } => {
                        if let (Some(Value::Native(nf)), true) = (code.consts.get(k as usize), n <= 3) {
                            // The constant table (alive as long as this code) owns the function.
                            let nf: *const NativeFn = Arc::as_ptr(nf);
                            save_pc!();
                            // SAFETY: see above; natives cannot free this code's constants.
                            let res = self.call_native_small(unsafe { &*nf }, base + a as usize, n as usize);
                            native_result!(res, a)
                        }
                    }
                    Instr::CallGlobal { a, g, n } => {
                        // A write-once global function: call it without touching its
                        // refcount. The slot (kept alive by this code object, which
                        // outlives the callee's frame) owns the closure.
                        match code.globals.get(g as usize).and_then(|s| s.get_const()) {
                            Some(Value::Func(c)) if c.simple && n == c.nparams => {
                                // `stack[base + a]` keeps whatever it held until the
                                // return value replaces it.
                                save_pc!();
                                let callee: *const Code = c.code();
                                let fpos = base + a as usize;
                                match self.push_frame(fpos, Arc::as_ptr(c)) {
                                    Ok(()) => enter!(callee, fpos + 1, 0),
                                    Err(e) => throw!(e),
                                }
                            }
                            // Fewer arguments than parameters, defaults for the rest.
                            Some(Value::Func(c)) if takes_positional(c, n as usize) => {
                                let callee: *const Code = c.code();
                                push_and_enter!(Arc::as_ptr(c), callee, base + a as usize, n as usize)
                            }
                            // `T(args…)` for a struct whose `__init__` is a plain
                            // function: its frame is pushed here as an `Init` frame.
                            Some(Value::StructType(t)) => {
                                let t: *const Arc<StructType> = t;
                                save_pc!();
                                // SAFETY: the global slot (kept alive by this code) owns the type.
                                match self.construct_at(base + a as usize, n as usize, unsafe { &*t }) {
                                    Some(Ok(())) => reenter_top!(),
                                    Some(Err(e)) => throw!(e),
                                    None => {}
                                }
                                // No `__init__`: the field-wise constructor.
                                // SAFETY: as above; the result replaces the
                                // callee register, not the global slot.
                                if let Some(v) = self.construct_fields_at(base + a as usize, n as usize, unsafe { &*t })
                                {
                                    native_result!(Ok::<Value, Exc>(v), a)
                                }
                            }
                            // A built-in under a global name (`Collection = list`).
                            Some(Value::Native(nf)) if n <= 3 => {
                                let nf: *const NativeFn = Arc::as_ptr(nf);
                                save_pc!();
                                // SAFETY: as for `CallK`: the global slot, alive
                                // with this code, owns the function.
                                let res = self.call_native_small(unsafe { &*nf }, base + a as usize, n as usize);
                                native_result!(res, a)
                            }
                            _ => {}
                        }
                    }
                    // Keyword arguments to a plain Apsi function, method or
                    // constructor: bound straight into the callee's registers.
                    Instr::CallKw { a, n, k } => {
                        if let Some(Value::Tuple(names)) = code.consts.get(k as usize) {
                            let names: *const [Value] = &*names.0;
                            save_pc!();
                            // SAFETY: the constant table (alive with this code) owns the names.
                            match self.call_kw_at(base + a as usize, n as usize, unsafe { &*names }) {
                                Some(Ok(())) => reenter_top!(),
                                Some(Err(e)) => throw!(e),
                                None => {}
                            }
                        }
                    }
                    // A return into an Apsi caller on this loop. The callee's slot
                    // in the caller's window gets the value; the frame is popped
                    // first, as that slot may own the callee's closure. Scalars
                    // travel in a Rust local (no 16-byte temporary). `$clear`:
                    // how many registers the pop clears (`ReturnParams`: only the
                    // parameters can hold anything). One arm each, so the count
                    // is a constant in each.
                    Instr::Return { a } => return_fast!(a, usize::MAX),
                    Instr::ReturnNone => {
                        if self.frames.len() > floor && base > 0 {
                            self.pop_frame();
                            // SAFETY: `base - 1` lies in the caller's window.
                            setv(unsafe { &mut *self.stack.as_mut_ptr().add(base - 1) }, Value::None);
                            // SAFETY: a caller's frame is below this one.
                            let top = unsafe { self.frames.last().unwrap_unchecked() };
                            enter!(top.code, top.base as usize, top.pc as usize)
                        }
                        if self.frames.len() == floor && floor > stop + 1 {
                            return_special!(Value::None)
                        }
                        return_bottom!(Value::None, usize::MAX);
                    }
                    Instr::ReturnParams { a, n } => return_fast!(a, n as usize),
                    Instr::GetIndex { a, b, c } => match (&*r!(b), &*r!(c)) {
                        // `x[i]` with a plain Apsi `__getitem__`: its frame is
                        // pushed here; its value goes to `a` (`Ret::Op`).
                        (Value::Struct(s), _) => {
                            if let Some(m) = &s.ty.item_methods[0] {
                                save_pc!();
                                // `push_method_frame` copies the operands
                                // (and the method) before the stack can move.
                                match self.push_method_frame(m, [&*r!(b), &*r!(c)], Ret::Op) {
                                    Some(Ok(())) => reenter_top!(),
                                    Some(Err(e)) => throw!(e),
                                    None => {}
                                }
                            }
                        }
                        (Value::List(l), Value::Int(i)) => {
                            let items = l.items.read();
                            let n = items.len() as i64;
                            let j = if *i < 0 { *i + n } else { *i };
                            if j >= 0 && j < n {
                                let w = items[j as usize].words();
                                drop(items);
                                set_words(r!(a), w);
                                continue;
                            }
                        }
                        (Value::Tuple(t), Value::Int(i)) => {
                            let n = t.0.len() as i64;
                            let j = if *i < 0 { *i + n } else { *i };
                            if j >= 0 && j < n {
                                let v = dup(&t.0[j as usize]);
                                setv(r!(a), v);
                                continue;
                            }
                        }
                        // `r[i]` on a range (`input[i]` where `input = range(n)`).
                        (Value::Range(r), Value::Int(i)) => {
                            // (`len` saturates: a longer range goes to `slow`.)
                            let n = r.len();
                            let j = if *i < 0 { *i + n } else { *i };
                            if j >= 0 && j < n && n < i64::MAX {
                                if let Some(x) = r.item(j) {
                                    setv(r!(a), Value::Int(x));
                                    continue;
                                }
                            }
                        }
                        // `xs[i:j]` on a list, tuple, string or range; an
                        // error (a bad bound) is raised by `slow`'s own try.
                        (Value::List(_) | Value::Tuple(_) | Value::Str(_) | Value::Range(_), Value::Slice(_)) => {
                            if let Ok(v) = ops::get_index(r!(b), r!(c)) {
                                setv(r!(a), v);
                                continue;
                            }
                        }
                        // `d["beta"]`: the string's cached hash, no `HashKey`.
                        (Value::Dict(d), Value::Str(k)) => {
                            let g = d.map.read();
                            if let Some(v) = g.get_str(k) {
                                let w = v.words();
                                drop(g);
                                set_words(r!(a), w);
                                continue;
                            }
                        }
                        (Value::Dict(d), Value::Int(i)) => {
                            // Scalars are copied out by their payload (no
                            // generic Option<Value> shuffle); the guard is
                            // dropped before the register is written, since
                            // that register may hold the dict itself.
                            let g = d.map.read();
                            match g.get_int(*i) {
                                Some(&Value::Int(x)) => {
                                    drop(g);
                                    setv(r!(a), Value::Int(x));
                                    continue;
                                }
                                Some(&Value::Float(x)) => {
                                    drop(g);
                                    setv(r!(a), Value::Float(x));
                                    continue;
                                }
                                Some(v) => {
                                    let w = v.words();
                                    drop(g);
                                    set_words(r!(a), w);
                                    continue;
                                }
                                None => {}
                            }
                        }
                        _ => {}
                    },
                    Instr::SetIndex { a, b, c } => match (&*r!(a), &*r!(b)) {
                        // `x[i] = v` with a plain Apsi `__setitem__`: a frame
                        // whose value is dropped (`Ret::Discard`).
                        (Value::Struct(s), _) => {
                            if let Some(m) = &s.ty.item_methods[1] {
                                save_pc!();
                                // As for `GetIndex`: copied before the stack can move.
                                match self.push_method_frame(m, [&*r!(a), &*r!(b), &*r!(c)], Ret::Discard) {
                                    Some(Ok(())) => reenter_top!(),
                                    Some(Err(e)) => throw!(e),
                                    None => {}
                                }
                            }
                        }
                        (Value::List(l), Value::Int(i)) => {
                            let mut items = l.items.write();
                            let n = items.len() as i64;
                            let j = if *i < 0 { *i + n } else { *i };
                            if j >= 0 && j < n {
                                items[j as usize] = dup(r!(c));
                                continue;
                            }
                        }
                        (Value::Dict(d), Value::Int(i)) => {
                            d.map.write().insert_int(*i, dup(r!(c)));
                            continue;
                        }
                        // `d["k"] = v` for a key already there: replaced in
                        // place (a new key goes the general way).
                        (Value::Dict(d), Value::Str(k)) => {
                            let mut g = d.map.write();
                            if let Some(slot) = g.get_mut_str(k) {
                                let old = std::mem::replace(slot, dup(r!(c)));
                                drop(g);
                                drop(old);
                                continue;
                            }
                        }
                        _ => {}
                    },
                    // A tuple or list of the expected length: item by item,
                    // without a vector in between. (`b` is never one of the
                    // targets: the compiler emits `Unpack` and `UnpackRegs`
                    // only when it is not.)
                    Instr::Unpack { a, b, n } => match &*r!(b) {
                        Value::Tuple(t) if t.0.len() == n as usize && (b < a || b >= a + n) => {
                            copy_row(r!(a), &t.0);
                            continue;
                        }
                        Value::List(l) if b < a || b >= a + n => {
                            let items = l.items.read();
                            if items.len() == n as usize {
                                copy_row(r!(a), &items);
                                continue;
                            }
                        }
                        _ => {}
                    },
                    Instr::UnpackRegs { b, k, n } => {
                        if let Some(Value::Tuple(regs)) = code.consts.get(k as usize) {
                            match &*r!(b) {
                                Value::Tuple(t) if t.0.len() == n as usize => {
                                    for (v, r) in t.0.iter().zip(regs.0.iter()) {
                                        if let Value::Int(r) = *r {
                                            copy_item(r!(r), v);
                                        }
                                    }
                                    continue;
                                }
                                Value::List(l) => {
                                    let items = l.items.read();
                                    if items.len() == n as usize {
                                        for (v, r) in items.iter().zip(regs.0.iter()) {
                                            if let Value::Int(r) = *r {
                                                copy_item(r!(r), v);
                                            }
                                        }
                                        continue;
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                    // Struct attributes and methods through the instruction's
                    // inline cache (`value/ic.rs`); `slow` fills it on a miss.
                    Instr::GetAttr { a, b, .. } => match &*r!(b) {
                        Value::Struct(s) => {
                            let ic = ic!();
                            if let Some(i) = ic.field(s.layout) {
                                if crate::value::solo::on() {
                                    // Solo mode (`solo.rs`) tested once for the
                                    // read, the copy and the store: no lock, and
                                    // counts changed with plain loads and stores.
                                    // SAFETY: in solo mode no other thread touches
                                    // values, and no guard of these fields is held.
                                    // `i` is a field of the instance's layout (the
                                    // cache word for it says so).
                                    let v = unsafe { s.field_solo(i) };
                                    // SAFETY: solo mode is on.
                                    let w = unsafe { v.words_solo() };
                                    let dst = r!(a);
                                    // SAFETY: as above.
                                    unsafe { set_words_solo(dst, w) };
                                    continue;
                                }
                                let f = s.fields.read();
                                if let Some(v) = f.get(i) {
                                    let w = v.words();
                                    drop(f);
                                    set_words(r!(a), w);
                                    continue;
                                }
                            } else {
                                let v = match ic.get(s.ty.id) {
                                    // `self.RATE`: a constant of the instance's type.
                                    Some(Hit::Const(i)) => slow::type_const(&s.ty, i).map(Words::into_value),
                                    // `obj.m` as a value: a bound method.
                                    Some(Hit::Method(i)) => s.ty.methods.get_index(i).map(|(_, m)| {
                                        Value::BoundMethod(Arc::new(BoundMethod {
                                            receiver: r!(b).dup_words(),
                                            func: m.dup_words(),
                                        }))
                                    }),
                                    _ => None,
                                };
                                if let Some(v) = v {
                                    setv(r!(a), v);
                                    continue;
                                }
                            }
                        }
                        // `T.CONST` (`Strength.REQUIRED`) and `T.method`.
                        Value::StructType(t) => {
                            let hit = ic!().get(t.id);
                            // A constant (`Direction.FORWARD`, the busiest
                            // kind) here; the rest out of line.
                            if let Some(Hit::Const(i)) = hit {
                                if let Some(w) = slow::type_const(t, i) {
                                    set_words(r!(a), w);
                                    continue;
                                }
                            }
                            if let Some(w) = slow::type_attr_hit(t, hit) {
                                set_words(r!(a), w);
                                continue;
                            }
                        }
                        // `module.name` (`math.pi`, `random.random`).
                        Value::Module(m) => {
                            if let Some(w) = slow::module_attr_hit(m, Some(ic!())) {
                                set_words(r!(a), w);
                                continue;
                            }
                        }
                        _ => {}
                    },
                    Instr::SetAttr { a, c, .. } => {
                        if let Value::Struct(s) = &*r!(a) {
                            if let Some(i) = ic!().field(s.layout) {
                                let mut f = s.fields.write();
                                if let Some(slot) = f.get_mut(i) {
                                    // `replace_field`, written out: calling it here
                                    // (inlined all the same) moved the loop's
                                    // register allocation, +1–2% instructions in
                                    // deltablue and richards under callgrind.
                                    let w = r!(c).words();
                                    let old = if slot.owns_nothing() || slot.release_solo() {
                                        None
                                    } else {
                                        // SAFETY: overwritten just below without a drop.
                                        Some(unsafe { std::ptr::read(slot) })
                                    };
                                    // SAFETY: the old value was given up just above.
                                    unsafe { w.write_to(slot) };
                                    drop(f);
                                    crate::value::cycles::note_store(s, &*r!(c));
                                    drop(old);
                                    continue;
                                }
                            }
                        }
                    }
                    Instr::CallMethod { a, n, .. } => {
                        // `obj.m(args…)`: the receiver already sits where `self`
                        // goes, so the method is called like a plain closure.
                        if let Value::Struct(s) = &*r!(a as usize + 1) {
                            if let Some(i) = ic!().method(s.ty.id) {
                                if let Some((_, Value::Func(c))) = s.ty.methods.get_index(i) {
                                    if takes_positional(c, n as usize + 1) {
                                        let clo = Arc::as_ptr(c);
                                        let callee: *const Code = c.code();
                                        if c.leaf && self.frames.len() < self.max_depth {
                                            let first: *mut Value = r!(a);
                                            // SAFETY: the call's slots are registers of this frame.
                                            let window =
                                                unsafe { std::slice::from_raw_parts_mut(first, n as usize + 2) };
                                            // SAFETY: the receiver's type keeps the method, and so its body, alive.
                                            if call_leaf(window, unsafe { &*callee }) {
                                                continue;
                                            }
                                        }
                                        hold_method(r!(a), c);
                                        push_and_enter!(clo, callee, base + a as usize, n as usize + 1)
                                    }
                                }
                            }
                        } else if let Value::StructType(t) = &*r!(a as usize + 1) {
                            // `T.helper(args…)`, a static method: the arguments
                            // move down over the receiver slot, as for a plain call.
                            if let Some(Hit::Static(i)) = ic!().get(t.id) {
                                if let Some((_, Value::Func(c))) = t.statics.get_index(i) {
                                    if takes_positional(c, n as usize) {
                                        let clo = Arc::as_ptr(c);
                                        let callee: *const Code = c.code();
                                        let f = Value::Func(crate::value::solo::clone_arc(c));
                                        for j in 0..n as usize {
                                            let v = take(r!(a as usize + 2 + j));
                                            setv(r!(a as usize + 1 + j), v);
                                        }
                                        setv(r!(a), f);
                                        push_and_enter!(clo, callee, base + a as usize, n as usize)
                                    }
                                }
                            }
                        } else if let (Value::Module(m), true) = (&*r!(a as usize + 1), n <= 3) {
                            // `math.sqrt(x)`: a built-in of a module, its
                            // arguments already above the receiver slot.
                            if let Some(Value::Native(nf)) =
                                slow::module_attr_hit(m, Some(ic!())).map(Words::into_value)
                            {
                                save_pc!();
                                let res = self.call_native_small(&nf, base + a as usize + 1, n as usize);
                                native_result!(res, a)
                            }
                        } else if let Some(key) = crate::builtins::method_slots::receiver_key(&*r!(a as usize + 1)) {
                            // `xs.append(v)`, `d.get(k)`: a built-in method the
                            // site's cache names, called without its name.
                            if let Some(i) = ic!().builtin(key) {
                                if let (Value::List(l), 1) = (&*r!(a as usize + 1), n) {
                                    if (key, i) == crate::builtins::method_slots::LIST_APPEND {
                                        let w = r!(a as usize + 2).take_words();
                                        push_words(&mut l.items.write(), w);
                                        setv(r!(a), Value::None);
                                        continue;
                                    }
                                    // `xs.remove(x)` of a struct: the elements'
                                    // `__eq__` run as frames, as for `x in xs`.
                                    if (key, i) == crate::builtins::method_slots::LIST_REMOVE {
                                        if let Some(found) = scan_frames!(a as usize + 2, a as usize + 1) {
                                            match self.remove_found(base + a as usize, found) {
                                                Ok(()) => continue,
                                                Err(e) => throw!(e),
                                            }
                                        }
                                    }
                                }
                                // `d.get(k)`, `d.get(k, default)` with a string or int
                                // key: looked up in place (no Apsi code can run).
                                if let (Value::Dict(d), 1..=2) = (&*r!(a as usize + 1), n) {
                                    if (key, i) == crate::builtins::method_slots::DICT_GET {
                                        let found = d
                                            .map
                                            .read()
                                            .get_plain(r!(a as usize + 2))
                                            .map(|v| v.map(Value::dup_words));
                                        if let Some(found) = found {
                                            let v = match found {
                                                Some(v) => v,
                                                None if n == 2 => take(r!(a as usize + 3)),
                                                None => Value::None,
                                            };
                                            setv(r!(a), v);
                                            continue;
                                        }
                                    }
                                }
                                if let (Some(fp), true) = (crate::builtins::method_slots::method_at(key, i), n <= 3) {
                                    save_pc!();
                                    let res = self.call_builtin_method(fp, base + a as usize + 1, n as usize);
                                    native_result!(res, a)
                                }
                            }
                        }
                    }
                    // `for i in range(a, b, c):` over ints; a zero step, floats
                    // and objects with `__index__` go to `slow`.
                    Instr::ForRangePrep { a, b } => {
                        if let (Value::Int(start), Value::Int(stop), Value::Int(step)) =
                            (&*r!(a), &*r!(a as usize + 1), &*r!(a as usize + 2))
                        {
                            let (start, stop, step) = (*start, *stop, *step);
                            if step != 0 {
                                if (step > 0 && start < stop) || (step < 0 && start > stop) {
                                    setv(r!(b), Value::Int(start));
                                    skip_jmp!();
                                } else {
                                    follow_jmp!();
                                }
                                continue;
                            }
                        }
                    }
                    Instr::BuildList { a, b, n } => {
                        let items: Vec<Value> = (0..n as usize).map(|i| take(r!(b as usize + i))).collect();
                        setv(r!(a), Value::list(items));
                        continue;
                    }
                    Instr::BuildSlice { a, b } => {
                        let s = slice_value(r!(b), r!(b as usize + 1), r!(b as usize + 2));
                        setv(r!(a), s);
                        continue;
                    }
                    Instr::BuildTuple { a, b, n } => {
                        if n != u16::MAX {
                            let items: SmallVec<[Value; 3]> =
                                (0..n as usize).map(|i| take(r!(b as usize + i))).collect();
                            setv(r!(a), Value::tuple_small(items));
                            continue;
                        }
                    }
                    Instr::CallSuper { a, n, .. } => {
                        // `super().m(args…)`: `self` sits where the receiver
                        // goes; the site's cache names the ancestor's method.
                        if let Value::Struct(s) = &*r!(a as usize + 1) {
                            if let Some(slot) = ic!().super_slot(s.ty.id) {
                                if slot == ops::structs::SUPER_ROOT_INIT {
                                    setv(r!(a), Value::None);
                                    continue;
                                }
                                if let Some(Value::Func(c)) = ops::structs::super_target(&s.ty, slot) {
                                    if takes_positional(c, n as usize + 1) {
                                        let clo = Arc::as_ptr(c);
                                        let callee: *const Code = c.code();
                                        hold_method(r!(a), c);
                                        push_and_enter!(clo, callee, base + a as usize, n as usize + 1)
                                    }
                                }
                            }
                        }
                    }
                    Instr::AppendTo { a, b, c, mv } => {
                        if let Value::List(l) = &*r!(b) {
                            let w = if mv { r!(c).take_words() } else { r!(c).words() };
                            push_words(&mut l.items.write(), w);
                            setv(r!(a), Value::None);
                            continue;
                        }
                    }
                    Instr::Len { a, b } => {
                        let n = match &*r!(b) {
                            Value::List(l) => Some(l.items.read().len()),
                            Value::Tuple(t) => Some(t.0.len()),
                            Value::Dict(d) => Some(d.map.read().len()),
                            Value::Set(s) => Some(s.map.read().len()),
                            Value::Str(s) => Some(s.char_len()),
                            // (`len` saturates: a longer range raises in `slow`.)
                            Value::Range(r) => Some(r.len()).filter(|&n| n < i64::MAX).map(|n| n as usize),
                            _ => None,
                        };
                        if let Some(n) = n {
                            setv(r!(a), Value::Int(n as i64));
                            continue;
                        }
                    }
                    Instr::IsInstance { a, b, c } => {
                        if let (Value::Struct(s), Value::StructType(t)) = (&*r!(b), &*r!(c)) {
                            let v = s.ty.descends_from(t);
                            setv(r!(a), Value::Bool(v));
                            continue;
                        }
                    }
                    Instr::ToStr { a, b } => {
                        if let Value::Int(i) = *r!(b) {
                            setv(r!(a), Value::Str(crate::value::StrRef::new(StrObj::from_int(i))));
                            continue;
                        }
                    }
                    Instr::ForRangeLoop { a, b } => {
                        if let (Value::Int(cur), Value::Int(stop), Value::Int(step)) =
                            (&*r!(a), &*r!(a as usize + 1), &*r!(a as usize + 2))
                        {
                            let (stop, step) = (*stop, *step);
                            if let Some(next) = cur.checked_add(step) {
                                if (step > 0 && next < stop) || (step < 0 && next > stop) {
                                    interrupt_point!();
                                    setv(r!(a), Value::Int(next));
                                    setv(r!(b), Value::Int(next));
                                    follow_jmp!();
                                    continue;
                                }
                            }
                            skip_jmp!();
                            continue;
                        }
                    }
                    Instr::ForNext { a, b } => for_step!(a, b, skip_jmp, follow_jmp, pc!() + 1),
                    Instr::ForLoop { a, b } => {
                        // A back-edge: the interrupt check (see `Jmp`).
                        interrupt_point!();
                        // The body starts where the jump word goes.
                        for_step!(a, b, follow_jmp, skip_jmp, jump_target(&code.instrs, pc!()))
                    }
                    Instr::Reduce { op, a, b } => {
                        // `sum` of ints that stay in 64 bits, or of floats.
                        if op == ReduceOp::Sum {
                            match (&*r!(a), &*r!(a as usize + 1), &*r!(b)) {
                                (&Value::Int(s), &Value::Int(0), &Value::Int(x)) => {
                                    if let Some(s) = s.checked_add(x) {
                                        setv(r!(a), Value::Int(s));
                                        continue;
                                    }
                                }
                                (&Value::Float(s), Value::None, &Value::Float(x)) => {
                                    setv(r!(a), Value::Float(s + x));
                                    continue;
                                }
                                _ => {}
                            }
                        }
                    }
                    Instr::Yield { a, b } => {
                        // SAFETY: this loop runs the top frame, so there is one.
                        if unsafe { self.frames.last().unwrap_unchecked() }.ret == Ret::GenFor {
                            let v = dup(r!(a));
                            setv(r!(b), Value::None);
                            save_pc!();
                            match self.yield_to_for(v) {
                                Flow::Fail(e) => return Err(e),
                                Flow::Return(v) => return Ok(v),
                                Flow::Throw(e) => throw!(e),
                                Flow::Next | Flow::Reload => reenter_top!(),
                            }
                        }
                        // The frame `resume_gen` pushed (a generator driven by
                        // `next`, `sum(…)`, `list(…)`): suspend; it saves the frame.
                        if self.may_yield() {
                            let v = dup(r!(a));
                            setv(r!(b), Value::None);
                            save_pc!();
                            self.yielded = true;
                            return Ok(v);
                        }
                    }
                    // Every other instruction is named rather than caught by
                    // `_`: an exhaustive match gives the jump table an
                    // unreachable default, so a dispatch needs no range check
                    // (2 instructions of ~9).
                    Instr::SetCell { .. }
                    | Instr::SetFree { .. }
                    | Instr::MakeCell { .. }
                    | Instr::CallEx { .. }
                    | Instr::BuildDict { .. }
                    | Instr::ListExtend { .. }
                    | Instr::DictSet { .. }
                    | Instr::DictUpdate { .. }
                    | Instr::BuildRange { .. }
                    | Instr::UnpackEx { .. }
                    | Instr::MakeFunc { .. }
                    | Instr::DefFunc { .. }
                    | Instr::DefStruct { .. }
                    | Instr::MakeStruct { .. }
                    | Instr::StructConst { .. }
                    | Instr::Raise { .. }
                    | Instr::Reraise { .. }
                    | Instr::AssertFail { .. }
                    | Instr::PushHandler { .. }
                    | Instr::PopHandler
                    | Instr::ExcMatch { .. }
                    | Instr::ToRepr { .. }
                    | Instr::Format { .. }
                    | Instr::Concat { .. }
                    | Instr::ParFor { .. }
                    | Instr::BuildSet { .. }
                    | Instr::SetAdd { .. }
                    | Instr::DelIndex { .. }
                    | Instr::DelLocal { .. }
                    | Instr::DelGlobal { .. }
                    | Instr::DelCell { .. }
                    | Instr::DelFree { .. }
                    | Instr::GetIter { .. }
                    | Instr::IterPrep { .. }
                    | Instr::NewListFor { .. } => {}
                }
                // Everything else, and the cases above whose fast path did not apply.
                let mut pc = pc!();
                let flow = self.slow(*ins, &mut pc, stop);
                goto!(pc);
                regs = unsafe { self.stack.as_mut_ptr().add(base) };
                match flow {
                    Flow::Next => {}
                    Flow::Reload => continue 'reload,
                    Flow::Throw(e) => throw!(e),
                    Flow::Return(v) => return Ok(v),
                    Flow::Fail(e) => return Err(e),
                }
            }
        }
    }

    /// Call the value at `stack[fpos]` with the `n` arguments above it.
    #[inline(always)]
    fn call_at(&mut self, fpos: usize, n: usize) -> VResult<Option<Value>> {
        if let Some(Value::Func(c)) = self.stack.get(fpos) {
            if takes_positional(c, n) {
                let (ptr, np) = (Arc::as_ptr(c), c.nparams as usize);
                self.push_frame(fpos, ptr)?;
                if n < np {
                    self.fill_defaults(ptr, fpos + 1, n);
                }
                return Ok(None);
            }
        }
        if let Some(r) = self.call_with_self_at(fpos, n) {
            return r.map(|()| None);
        }
        if n <= 3 {
            if let Some(Value::Native(nf)) = self.stack.get(fpos) {
                // SAFETY: the callee slot keeps the function alive for the
                // call: natives that run Apsi code push frames above this
                // window, and the slot moves (the stack may grow) but its
                // `Arc` target does not.
                let nf: *const NativeFn = Arc::as_ptr(nf);
                return self.call_native_small(unsafe { &*nf }, fpos, n).map(Some);
            }
        }
        let f = std::mem::replace(&mut self.stack[fpos], Value::None);
        let pos: Args = (0..n).map(|i| take(&mut self.stack[fpos + 1 + i])).collect();
        self.setup_call(fpos, f, pos, Vec::new())
    }

    /// `call_at` for callees that take one argument more than the call
    /// passes: a bound method (its receiver) and a struct type whose
    /// `__init__` is a plain Apsi function (a new instance, run as an
    /// `Init` frame). The arguments move up one slot in place, `self` goes
    /// first, and the frame is pushed without collecting anything. `None`
    /// when the callee is neither, or its parameters do not fit the call.
    #[inline]
    fn call_with_self_at(&mut self, fpos: usize, n: usize) -> Option<VResult<()>> {
        let (clo, recv, slot, ret) = match self.stack.get(fpos)? {
            Value::BoundMethod(bm) => match &bm.func {
                Value::Func(c) if c.simple => (c.clone(), bm.receiver.clone(), bm.func.clone(), Ret::Normal),
                _ => return None,
            },
            Value::StructType(t) => {
                let t: *const Arc<StructType> = t;
                // SAFETY: the callee slot owns the type until `construct_at`
                // overwrites it, after its last use of `t`.
                return self.construct_at(fpos, n, unsafe { &*t });
            }
            _ => return None,
        };
        if !fits_with_self(&clo, n) {
            return None;
        }
        // The callee slot will hold the function, which keeps it alive.
        Some(self.push_with_self(fpos, n, Arc::as_ptr(&clo), recv, slot, ret))
    }

    /// Push `clo` for a call whose `n` arguments sit above `fpos`, with
    /// `first` (`self`) put before them and `slot` in the callee slot (what
    /// keeps `clo` alive: the function, or the instance of an `Init`
    /// frame); defaults fill the parameters left. The caller checked
    /// `fits_with_self`.
    fn push_with_self(
        &mut self,
        fpos: usize,
        n: usize,
        clo: *const Closure,
        first: Value,
        slot: Value,
        ret: Ret,
    ) -> VResult<()> {
        // SAFETY: the caller keeps `clo` alive until `slot` is stored.
        let np = unsafe { &*clo }.nparams as usize;
        self.ensure(fpos + np + 2);
        self.insert_first(fpos, n, first);
        self.fill_defaults(clo, fpos + 1, n + 1);
        self.stack[fpos] = slot;
        self.push_frame_as(fpos, clo, np, ret)
    }

    /// Move the `n` arguments above `fpos` up one slot and put `v` first.
    /// The call's registers are the top of the caller's live ones, so the
    /// slot above the last argument is free (`ensure`d by the caller).
    #[inline]
    fn insert_first(&mut self, fpos: usize, n: usize, v: Value) {
        let w = &mut self.stack[fpos + 1..fpos + n + 2];
        for i in (0..n).rev() {
            w.swap(i, i + 1);
        }
        setv(&mut w[0], v);
    }

    /// `T(args…)` for a struct type without `__init__`, with the `n`
    /// positional arguments in the slots above `fpos`: the field-wise
    /// constructor, its instance made in place (each argument moved into
    /// its field by its parts, the rest from their defaults) without the
    /// general path's argument lists. `None`, with nothing moved, when the
    /// call does not fit (more arguments than fields, a field without a
    /// value, a value its annotation refuses): the general path
    /// (`ops::structs::construct`) then reports it.
    fn construct_fields_at(&mut self, fpos: usize, n: usize, t: &Arc<StructType>) -> Option<Value> {
        if t.method("__init__").is_some() {
            return None;
        }
        let fields = &t.fields;
        let args = self.stack.get(fpos + 1..fpos + 1 + n)?;
        if n > fields.len() {
            return None;
        }
        let mut link = false;
        for (i, f) in fields.iter().enumerate() {
            let v = match args.get(i) {
                Some(v) => v,
                None => f.default.as_ref()?,
            };
            if crate::ops::structs::refused_by(f, v).is_some() {
                return None;
            }
            link |= crate::value::cycles::may_link(v);
        }
        // The call fits: from here on nothing declines.
        let stack = &mut self.stack;
        // SAFETY: every field's slot is written once: an argument's parts,
        // moved out of its register (left `none`), or `write_default`'s.
        Some(unsafe {
            crate::ops::structs::new_instance(t, |p| {
                for (i, f) in fields.iter().enumerate() {
                    if i < n {
                        stack[fpos + 1 + i].take_words().write_raw(p.add(i));
                    } else {
                        crate::ops::structs::write_default(f, p.add(i));
                    }
                }
                link
            })
        })
    }

    /// `T(args…)` with the `n` arguments in the slots above `fpos`, for a
    /// struct type whose `__init__` is a plain Apsi function (`simple_init`)
    /// that takes them: a blank instance goes in the callee slot and, as
    /// `self`, below the arguments (moved up one slot in place), and
    /// `__init__` is pushed as an `Init` frame. `None` when `T` has no such
    /// `__init__` or the call does not fit it.
    ///
    /// `t` may be owned by the callee slot: it is not used after that slot
    /// is overwritten.
    #[inline(never)]
    fn construct_at(&mut self, fpos: usize, n: usize, t: &Arc<StructType>) -> Option<VResult<()>> {
        let c = t.simple_init.as_ref()?;
        if !fits_with_self(c, n) {
            return None;
        }
        // The instance keeps its type alive, and the type its `__init__`.
        let obj = crate::ops::structs::blank(t);
        Some(self.push_with_self(fpos, n, Arc::as_ptr(c), obj.clone(), obj, Ret::Init))
    }

    /// `f(args…, name=value…)` with `f` in `stack[fpos]`, its `n` positional
    /// arguments above it and then one value per name in `names`, when `f`
    /// is a plain Apsi function (`simple`), a bound method of one, or a
    /// struct type whose `__init__` is one: every argument moves into its
    /// parameter's register, defaults fill the rest, and the frame is
    /// pushed. `None`, with nothing moved, for anything else and for a call
    /// that does not fit (an unknown or repeated name, a missing argument),
    /// so that the general path reports it.
    #[inline(never)]
    fn call_kw_at(&mut self, fpos: usize, n: usize, names: &[Value]) -> Option<VResult<()>> {
        // The callee, what goes before the arguments (`self`), and for a
        // constructor its type.
        // Counted the solo way (`solo::clone_arc`); the copy of the closure
        // is given up that way too at the end.
        let (c, recv, ty) = match self.stack.get(fpos)? {
            Value::Func(c) => (crate::value::solo::clone_arc(c), None, None),
            Value::BoundMethod(bm) => match &bm.func {
                Value::Func(c) => (crate::value::solo::clone_arc(c), Some(bm.receiver.dup_words()), None),
                _ => return None,
            },
            Value::StructType(t) => (
                crate::value::solo::clone_arc(t.simple_init.as_ref()?),
                None,
                Some(crate::value::solo::clone_arc(t)),
            ),
            _ => return None,
        };
        let p = &c.proto;
        let off = (recv.is_some() || ty.is_some()) as usize;
        let (np, nd) = (p.nparams as usize, p.ndefaults as usize);
        if !p.simple || n + off > np || np > 64 {
            return None;
        }
        // Which parameter each name fills; every parameter without a
        // default must be filled.
        let mut filled: u64 = if n + off == 64 {
            u64::MAX
        } else {
            (1u64 << (n + off)) - 1
        };
        let mut slot_of: SmallVec<[usize; 8]> = SmallVec::new();
        for name in names {
            let name = name.as_str()?;
            // The first byte first: most names differ there, and a call
            // of `memcmp` for a few bytes costs more than the compare.
            let i = p.param_names.iter().position(|pn| {
                pn.len() == name.len() && pn.as_bytes().first() == name.as_bytes().first() && **pn == *name
            })?;
            if i >= np || filled & (1 << i) != 0 {
                return None;
            }
            filled |= 1 << i;
            slot_of.push(i);
        }
        if (0..np - nd).any(|i| filled & (1 << i) == 0) {
            return None;
        }
        // The call fits: from here on nothing declines.
        let (slot, first, ret) = match ty {
            Some(t) => {
                let obj = crate::ops::structs::blank(&t);
                Value::StructType(t).give_up();
                (obj.clone(), Some(obj), Ret::Init)
            }
            None => (Value::Func(crate::value::solo::clone_arc(&c)), recv, Ret::Normal),
        };
        // The keyword values move out first (their slots and the ones they
        // go to overlap): into an array on the Rust stack when there are a
        // few, as most calls have.
        let few = names.len() <= 4;
        let mut kv4: [Value; 4] = if few {
            take_args(&mut self.stack, fpos + 1 + n, names.len())
        } else {
            std::array::from_fn(|_| Value::None)
        };
        let kv: SmallVec<[Value; 8]> = if few {
            SmallVec::new()
        } else {
            (0..names.len())
                .map(|j| take(&mut self.stack[fpos + 1 + n + j]))
                .collect()
        };
        self.ensure(fpos + np.max(n + off + names.len()) + 2);
        if let Some(v) = first {
            self.insert_first(fpos, n, v);
        }
        for i in n + off..np {
            if filled & (1 << i) == 0 {
                setv(&mut self.stack[fpos + 1 + i], c.defaults[i + nd - np].clone());
            }
        }
        if few {
            for (j, &i) in slot_of.iter().enumerate() {
                let w = kv4[j].take_words();
                set_words(&mut self.stack[fpos + 1 + i], w);
            }
        } else {
            for (v, &i) in kv.into_iter().zip(slot_of.iter()) {
                setv(&mut self.stack[fpos + 1 + i], v);
            }
        }
        // Every value of `kv4` has moved out (`take_words` left `none`s) or
        // was never there: it owns nothing. Reading its values back whole
        // to drop them stalled on store forwarding (18% of this
        // function's own samples; the call went from 47 to 39 ns).
        std::mem::forget(kv4);
        // The callee slot keeps the closure alive: the function, or the
        // instance (whose type holds its `__init__`).
        setv(&mut self.stack[fpos], slot);
        let clo = Arc::as_ptr(&c);
        Value::Func(c).give_up();
        Some(self.push_frame_as(fpos, clo, np, ret))
    }

    /// A built-in called with `n <= 3` positional arguments in the slots
    /// above `fpos`: they move into an array on the Rust stack and the
    /// function is called directly (no argument vector, no `setup_call`).
    #[inline(never)]
    fn call_native_small(&mut self, nf: &NativeFn, fpos: usize, n: usize) -> VResult<Value> {
        let args = Released::new(take_args::<3>(&mut self.stack, fpos + 1, n));
        flush_before(&self.shared, nf);
        nf.call(self, &args.0[..n.min(3)], &[])
    }

    /// A built-in method with its receiver at `recv` and `n` (at most 3)
    /// arguments above it, moved out of the registers as `slow` does.
    #[inline(never)]
    fn call_builtin_method(&mut self, fp: NativeFnPtr, recv: usize, n: usize) -> VResult<Value> {
        let args = Released::new(take_args::<4>(&mut self.stack, recv, n + 1));
        fp(self, &args.0[..(n + 1).min(4)], &[])
    }

    pub(crate) fn native_enter(&mut self) -> VResult<()> {
        if self.native_depth >= self.shared.max_native_depth {
            return Err(err(
                ErrorKind::RecursionError,
                "maximum recursion depth exceeded (through native functions)",
            ));
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
        super::reentry::install(&self.shared);
        self.call_installed(f, args, kwargs)
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

    fn tasks(&self) -> Option<Arc<crate::value::tasks::TaskRegistry>> {
        Some(self.shared.tasks.clone())
    }

    fn url_source(&self) -> Option<Arc<dyn crate::value::sources::UrlSource>> {
        self.shared.url_source.clone()
    }

    fn resume_generator(&mut self, g: &crate::value::generator::GenObj) -> VResult<crate::value::generator::Step> {
        self.resume_gen(g)
    }
}

/// `BuildSlice`'s value: the slice `start:stop:step` of three registers.
#[inline]
pub(super) fn slice_value(start: &Value, stop: &Value, step: &Value) -> Value {
    Value::Slice(Arc::new(SliceObj {
        start: dup(start),
        stop: dup(stop),
        step: dup(step),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmp_int_agrees_with_the_operators() {
        let vals = [i64::MIN, i64::MIN + 1, -3, -1, 0, 1, 2, 7, i64::MAX - 1, i64::MAX];
        for &x in &vals {
            for &y in &vals {
                for (op, want) in [
                    (CmpOp::Eq, x == y),
                    (CmpOp::NotEq, x != y),
                    (CmpOp::Lt, x < y),
                    (CmpOp::LtE, x <= y),
                    (CmpOp::Gt, x > y),
                    (CmpOp::GtE, x >= y),
                    (CmpOp::Is, x == y),
                    (CmpOp::IsNot, x != y),
                ] {
                    assert_eq!(cmp_int(op, x, y), want, "{x} {op:?} {y}");
                }
            }
        }
    }
}
