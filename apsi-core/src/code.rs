//! The lowered form: register bytecode, code objects and function/struct
//! prototypes. Code objects are immutable after compilation and shared by
//! every thread that runs them.
//!
//! Register conventions: a frame's registers are numbered from 0; the
//! parameters occupy the first registers (positional, then `*args`, then the
//! keyword-only ones, then `**kwargs`). A call `Call { a, n }` has the callee
//! in `a` and its `n` arguments in `a+1 ..= a+n`; the result lands in `a`.
//! Conditional instructions marked "+J" are followed by a `Jmp` whose target
//! is taken when the condition holds (otherwise the `Jmp` is skipped).

use crate::diagnostic::Span;
use crate::syntax::ast::{BinOp, CmpOp, UnaryOp};
use crate::value::globals::GlobalSlot;
use crate::value::ic::AttrCache;
use crate::value::Value;
use std::sync::Arc;

pub type Reg = u16;

/// "No register" marker (e.g. `AssertFail` without a message).
pub const NO_REG: Reg = u16::MAX;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Instr {
    Nop,
    Move {
        a: Reg,
        b: Reg,
    },
    LoadK {
        a: Reg,
        k: u32,
    },
    LoadInt {
        a: Reg,
        v: i32,
    },
    LoadNone {
        a: Reg,
    },
    LoadBool {
        a: Reg,
        v: bool,
    },
    /// `a = globals[g]` (NameError when unbound).
    GetGlobal {
        a: Reg,
        g: u32,
    },
    SetGlobal {
        a: Reg,
        g: u32,
    },
    /// Own cell `c` (this frame's captured locals).
    GetCell {
        a: Reg,
        c: u16,
    },
    SetCell {
        a: Reg,
        c: u16,
    },
    /// Captured cell `c` of the running closure.
    GetFree {
        a: Reg,
        c: u16,
    },
    SetFree {
        a: Reg,
        c: u16,
    },
    /// Create own cell `c` holding register `a` (or none when `a == NO_REG`).
    MakeCell {
        a: Reg,
        c: u16,
    },
    Add {
        a: Reg,
        b: Reg,
        c: Reg,
    },
    Sub {
        a: Reg,
        b: Reg,
        c: Reg,
    },
    Mul {
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// `a = b * c` where `a` is a temporary read only by the `Add { b: a }`
    /// that follows (after at most one `GetGlobal`/`LoadK` of its other
    /// operand): `x * y + z`. The VM may run the pair as one fused tensor
    /// kernel (`tensor::fused::mul_add`) and skip to after the `Add`.
    MulT {
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// `a = b + v`
    AddI {
        a: Reg,
        b: Reg,
        v: i16,
    },
    Bin {
        op: BinOp,
        a: Reg,
        b: Reg,
        c: Reg,
    },
    Unary {
        op: UnaryOp,
        a: Reg,
        b: Reg,
    },
    Cmp {
        op: CmpOp,
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// +J: jump when `(a op b) == jt`.
    CmpJmp {
        op: CmpOp,
        a: Reg,
        b: Reg,
        jt: bool,
    },
    /// `a = b op v` for a small int constant `v` (`len(xs) == 1`,
    /// `n % 2 != 0`); never `in`, `not in`, `is`, `is not`.
    CmpI {
        op: CmpOp,
        a: Reg,
        b: Reg,
        v: i16,
    },
    /// +J: jump when `(a op v) == jt`.
    CmpJmpI {
        op: CmpOp,
        a: Reg,
        v: i16,
        jt: bool,
    },
    /// +J: jump when `(a is none) == jt` (`if x is none:`, `while n is not none:`).
    CmpJmpNone {
        a: Reg,
        jt: bool,
    },
    Jmp {
        t: u32,
    },
    JmpIf {
        a: Reg,
        t: u32,
    },
    JmpIfNot {
        a: Reg,
        t: u32,
    },
    Call {
        a: Reg,
        n: u16,
    },
    /// Positional args in `a+1 ..= a+n`, then one value per name in the
    /// constant tuple `k`.
    CallKw {
        a: Reg,
        n: u16,
        k: u16,
    },
    /// `a(*a+1, **a+2)`: `a+1` a list/tuple, `a+2` a dict or none.
    CallEx {
        a: Reg,
    },
    /// Call the constant `k` (a prelude or module function) with `a+1 ..= a+n`; result in `a`.
    CallK {
        a: Reg,
        k: u16,
        n: u16,
    },
    /// Load global `g` into `a`, then `Call { a, n }`.
    CallGlobal {
        a: Reg,
        g: u16,
        n: u16,
    },
    /// `a = b.append(c)`: in place for a list in the local `b`, otherwise the
    /// general method call. With `mv`, `c` is a temporary and is moved.
    AppendTo {
        a: Reg,
        b: Reg,
        c: Reg,
        mv: bool,
    },
    /// `a = (a+1).name(a+2 ..= a+1+n)` where `name` is constant `k`.
    CallMethod {
        a: Reg,
        k: u16,
        n: u16,
    },
    /// `a = super().name(a+2 ..= a+1+n)` in a method of a struct, with that
    /// method's `self` in `a+1`; constant `k` is the pair `(struct, name)`.
    /// Cached by the receiver's type (`Hit::Super`): no `super` object is made.
    CallSuper {
        a: Reg,
        k: u16,
        n: u16,
    },
    Return {
        a: Reg,
    },
    /// `Return { a }` that the compiler proved is reached from the entry
    /// only through instructions that write no register or only `a`
    /// (`emit/passes.rs`, `mark_early_returns`): apart from `a`, whose value the
    /// return takes, only the `n` parameter registers can hold anything of
    /// this call, so popping the frame clears just those (`return a + b`, a
    /// recursion's base case `if n < 2: return n`).
    ReturnParams {
        a: Reg,
        n: u16,
    },
    ReturnNone,
    GetAttr {
        a: Reg,
        b: Reg,
        k: u16,
    },
    /// `a.name = c`
    SetAttr {
        a: Reg,
        k: u16,
        c: Reg,
    },
    GetIndex {
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// `a[b] = c`
    SetIndex {
        a: Reg,
        b: Reg,
        c: Reg,
    },
    BuildList {
        a: Reg,
        b: Reg,
        n: u16,
    },
    /// `a = []` with room for as many items as `b` holds when `b` is a
    /// list, tuple, str, range, dict, set or bytes, or a loop's
    /// `zip`/`enumerate`/`d.items()` over such (`ops::known_len`): the
    /// list a comprehension with one `for` and no `if` fills, which
    /// appends one item per item (no growth copies on the way). Nothing
    /// else of `b` is read; any other `b` gets a plain empty list.
    NewListFor {
        a: Reg,
        b: Reg,
    },
    BuildTuple {
        a: Reg,
        b: Reg,
        n: u16,
    },
    /// `n` key/value pairs in `b ..`.
    BuildDict {
        a: Reg,
        b: Reg,
        n: u16,
    },
    /// `a.append(b)` for the list in `a`.
    ListAppend {
        a: Reg,
        b: Reg,
    },
    /// Extend the list in `a` with the iterable `b`.
    ListExtend {
        a: Reg,
        b: Reg,
    },
    /// `a[b] = c` for the dict in `a`.
    DictSet {
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// Merge the mapping `b` into the dict `a` (`**b`).
    DictUpdate {
        a: Reg,
        b: Reg,
    },
    /// `a = slice(b, b+1, b+2)`
    BuildSlice {
        a: Reg,
        b: Reg,
    },
    /// `a = range(b, c)` (the `..` operator).
    BuildRange {
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// Prepare `a` (an iterable) for `ForNext`; `a+1` becomes the position.
    ForPrep {
        a: Reg,
    },
    /// +J (exit): jump when the iteration in `a` is exhausted; otherwise `b = next item`.
    ForNext {
        a: Reg,
        b: Reg,
    },
    /// +J (body): the bottom of a `for` loop or comprehension, `ForNext`
    /// turned around: `b = next item` and jump back to the body; when the
    /// iteration in `a` is exhausted, go on past the jump word. The loop is
    /// entered by a `Jmp` to this instruction, so each item costs one
    /// dispatch less than `ForNext` at the top and a `Jmp` at the bottom.
    ForLoop {
        a: Reg,
        b: Reg,
    },
    /// +J (exit): `a, a+1, a+2` = start, stop, step (ints, checked); jump when empty, else `b = start`.
    ForRangePrep {
        a: Reg,
        b: Reg,
    },
    /// +J (loop): advance `a`; jump back while in range, with `b = a`.
    ForRangeLoop {
        a: Reg,
        b: Reg,
    },
    /// Unpack the iterable `b` into `a ..< a+n` (ValueError on a count
    /// mismatch, before anything is written). The registers are fresh
    /// temporaries, or the targets themselves when they are consecutive
    /// locals (`b` then never one of them); nothing is written before every
    /// item is known.
    Unpack {
        a: Reg,
        b: Reg,
        n: u16,
    },
    /// Unpack the tuple or list `b` (of exactly `n` items) straight into
    /// the local registers listed by the constant `k` (a tuple of ints),
    /// in order. Emitted for `x, y = src` when every target is a local in
    /// a register and `b` is none of them; anything else (another
    /// iterable, a count mismatch) runs like `Unpack` then moves.
    UnpackRegs {
        b: Reg,
        k: u16,
        n: u16,
    },
    /// Starred unpack: `before` values, a list, `after` values into `a ..`.
    UnpackEx {
        a: Reg,
        b: Reg,
        before: u8,
        after: u8,
    },
    /// `a = function(protos[p])` with its defaults in `b ..`.
    MakeFunc {
        a: Reg,
        p: u16,
        b: Reg,
    },
    /// `a = struct(structs[p])` with field defaults then methods in `b ..`.
    MakeStruct {
        a: Reg,
        p: u16,
        b: Reg,
    },
    Raise {
        a: Reg,
    },
    /// Re-raise the error value in `a` (bare `raise`, end of unmatched `except`).
    Reraise {
        a: Reg,
    },
    /// Raise AssertionError with message `a` (or none when `NO_REG`).
    AssertFail {
        a: Reg,
    },
    /// Raise `NameError` if local `a` (named by string constant `k`) has not
    /// been assigned yet. Emitted only where assignment is not certain.
    CheckBound {
        a: Reg,
        k: u16,
    },
    /// Errors raised until the matching `PopHandler` jump to `t` with the error in `a`.
    PushHandler {
        a: Reg,
        t: u32,
    },
    PopHandler,
    /// `a = error b matches kind(s) c`.
    ExcMatch {
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// `a = len(b)` with the prelude's `len`.
    Len {
        a: Reg,
        b: Reg,
    },
    /// `a = isinstance(b, c)` with the prelude's `isinstance`.
    IsInstance {
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// `a = str(b)`
    ToStr {
        a: Reg,
        b: Reg,
    },
    /// `a = repr(b)`
    ToRepr {
        a: Reg,
        b: Reg,
    },
    /// `a = format(b, spec c)`
    Format {
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// `a = concatenation of the n strings in b ..`
    Concat {
        a: Reg,
        b: Reg,
        n: u16,
    },
    /// `parallel for` (see `check::parfor`): run the chunk function in `a`
    /// over `range(a+1, a+2, a+3)` (`range`) or over the iterable `a+1`, with
    /// `n` reductions whose first-worker and other-worker initial values are
    /// the pairs in `a+4 ..`. Afterwards `a` = the first worker's partials
    /// (a tuple, or none without reductions) and `a+1` = a list of the other
    /// workers' partial tuples, in worker order.
    ParFor {
        a: Reg,
        n: u16,
        range: bool,
    },
    /// Define constant `k` (a name) of the struct type in `a` as `c`.
    StructConst {
        a: Reg,
        k: u16,
        c: Reg,
    },
    /// `a = {b, b+1, …}` (`n` members; a set display).
    BuildSet {
        a: Reg,
        b: Reg,
        n: u16,
    },
    /// Add `b` to the set in `a` (set comprehensions).
    SetAdd {
        a: Reg,
        b: Reg,
    },
    /// `del a[b]` (`ops::del_index`).
    DelIndex {
        a: Reg,
        b: Reg,
    },
    /// `del x` for the local in register `a` (named by string constant `k`):
    /// `NameError` if it is unassigned, else it becomes unassigned.
    DelLocal {
        a: Reg,
        k: u16,
    },
    /// `del x` for module-level name `globals[g]` (`NameError` if unbound).
    DelGlobal {
        g: u32,
    },
    /// `del x` for own cell `c` (named by string constant `k`).
    DelCell {
        c: u16,
        k: u16,
    },
    /// `del x` for captured cell `c` (named by string constant `k`).
    DelFree {
        c: u16,
        k: u16,
    },
    /// Generators only (`vm/exec/resume.rs`): suspend the frame, handing
    /// the value in `a` to whoever resumed it; when resumed, `b = none`
    /// (the value of the `yield` expression) and the next instruction runs.
    Yield {
        a: Reg,
        b: Reg,
    },
    /// `a = iter(b)`: an iterator over any iterable (`yield from`, the
    /// outermost iterable of a generator expression).
    GetIter {
        a: Reg,
        b: Reg,
    },
    /// `a = iter(a)`, except that lists, tuples, ranges and strings stay
    /// as they are (`ForPrep` walks them on its fast paths): the outermost
    /// iterable of a generator expression, checked when it is made.
    IterPrep {
        a: Reg,
    },
    /// One step of a built-in that a generator expression is given to,
    /// compiled into the expression's loop (`sum(f(x) for x in xs)`, see
    /// `compile/emit/defs.rs`); `op` says which. An error raised here is
    /// the built-in's: this frame's trace entry is left out, as a
    /// generator's is in Python (suspended while the built-in works).
    Reduce {
        op: ReduceOp,
        a: Reg,
        b: Reg,
    },
    /// `globals[g] = function(protos[p])`, made when the global is first
    /// read: a module's top-level `def` of a write-once global, without
    /// decorators, defaults or captured variables (nothing to evaluate at
    /// the `def`, so making it later changes nothing a program can see).
    /// A cached start then decodes and makes only the functions its run
    /// uses ([`GlobalSlot`]'s lazy binding).
    DefFunc {
        p: u16,
        g: u32,
    },
    /// `globals[g] = struct(structs[s])`, made when the global is first
    /// read, as `DefFunc` does for functions: a module's top-level struct of
    /// a write-once global without decorators, parent, field defaults or
    /// constants, whose methods are plain functions (`@staticmethod` and
    /// `@property` aside) made from `protos[structs[s].methods_at ..]`.
    DefStruct {
        s: u16,
        g: u32,
    },
}

const _: () = assert!(std::mem::size_of::<Instr>() == 8);

/// What an `Instr::Reduce` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ReduceOp {
    /// `sum`: add `b` to the running sum in `a` and `a + 1` (an int sum is
    /// exact in 128 bits, as the built-in's: `a` holds its low 64 bits as a
    /// signed int and `a + 1` the rest, `int(hi)` meaning `hi * 2**64 + a`;
    /// any other sum is in `a`, with `none` in `a + 1`). Start: `0`, `0`.
    Sum,
    /// `sum`'s result: the running sum in `a`, `a + 1` goes to `a`
    /// (`OverflowError` when an int sum does not fit in 64 bits).
    SumEnd,
    /// `any`/`all`: `a = bool(b)` (a struct's `__bool__`/`__len__` may run).
    Truth,
}

/// A compiled body (function, lambda, comprehension or module top level).
pub struct Code {
    pub name: Arc<str>,
    pub instrs: Box<[Instr]>,
    /// The source span of each instruction (as many as `instrs`).
    pub spans: SpanTable,
    pub consts: Box<[Value]>,
    pub globals: Box<[Arc<GlobalSlot>]>,
    /// The functions defined in this body, each decoded when first made
    /// (see [`ProtoSlot`]).
    pub protos: Arc<[ProtoSlot]>,
    /// The structs defined in this body, each decoded when first made
    /// (see [`StructSlot`]).
    pub structs: Arc<[StructSlot]>,
    pub nregs: u16,
    pub ncells: u16,
    /// The registers this code reads through `CheckBound` (locals that may
    /// be read before assignment). A new frame's window can overlap its
    /// caller's dead temporaries, so these are reset to `Unbound` when the
    /// frame is pushed; every other register is written before it is read.
    pub unbound_regs: Box<[Reg]>,
    /// The span of the whole body.
    pub span: Span,
    /// The pcs (sorted) of binary operations written by augmented
    /// assignments: on a struct they try `__iadd__` & co first.
    pub inplace: Box<[u32]>,
    /// The pcs (sorted) of `AddI` instructions that stand for `x - k`.
    pub sub_addi: Box<[u32]>,
    /// The names of this code's own cells and of its captured cells, in
    /// cell order (for the `NameError` of reading a cell after `del`).
    pub cell_names: Box<[Arc<str>]>,
    pub free_names: Box<[Arc<str>]>,
    /// The inline caches (`value::ic`) of the instructions that look names
    /// up on structs (attributes, method calls, operators), by pc. Always
    /// `InlineCaches::for_instrs(&instrs)` of this code's own instructions,
    /// which never change afterwards: [`Code::ic_of`] relies on it.
    pub ic: InlineCaches,
    /// Some pc is a `yield from`'s resume point (`yield_from_site`): a
    /// generator of this code may delegate (`vm/exec/resume.rs`).
    pub has_yield_from: bool,
    /// What the body does when it is a single step ([`leaf_of`]).
    pub leaf: Leaf,
}

/// A body that is a single step: `return self.name`, `self.name = value`,
/// `return` of a constant scalar, or nothing (`pass`). A method call of such
/// a body (`CallMethod` on a struct, `vm/exec.rs`) is done in the caller's
/// frame, without a frame of its own, when the step is a plain hit (the
/// body's own attribute cache knows the receiver's layout); otherwise, and
/// for every other kind of call, the body runs as a frame as usual. The
/// result is the same either way: none of these steps can raise once its
/// cache hits, and a frame that cannot raise and calls nothing leaves no
/// trace. (The depth limit is kept: at the limit the call goes the frame
/// way and raises `RecursionError`.)
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Leaf {
    /// Anything else.
    No,
    /// `GetAttr { a: r, b: 0 }; Return { a: r }` (`return self.name`).
    GetSelf,
    /// `SetAttr { a: 0, c: 1 }; ReturnNone` (`self.name = value`, the
    /// method's second parameter).
    SetSelf,
    /// Returns this constant (`return false`, `return 0`, `pass`).
    Returns(Scalar),
}

/// A constant that owns nothing, for [`Leaf::Returns`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    pub fn value(self) -> Value {
        match self {
            Scalar::None => Value::None,
            Scalar::Bool(b) => Value::Bool(b),
            Scalar::Int(i) => Value::Int(i),
            Scalar::Float(f) => Value::Float(f),
        }
    }
}

/// Which [`Leaf`] a body with these instructions and constants is.
pub fn leaf_of(instrs: &[Instr], consts: &[Value]) -> Leaf {
    let returns = |r: Reg| match instrs.get(1) {
        Some(&Instr::Return { a } | &Instr::ReturnParams { a, .. }) => a == r,
        _ => false,
    };
    match instrs.first() {
        Some(Instr::ReturnNone) => Leaf::Returns(Scalar::None),
        Some(&Instr::GetAttr { a, b: 0, .. }) if returns(a) => Leaf::GetSelf,
        Some(&Instr::SetAttr { a: 0, c: 1, .. }) if matches!(instrs.get(1), Some(Instr::ReturnNone)) => Leaf::SetSelf,
        Some(&Instr::LoadNone { a }) if returns(a) => Leaf::Returns(Scalar::None),
        Some(&Instr::LoadBool { a, v }) if returns(a) => Leaf::Returns(Scalar::Bool(v)),
        Some(&Instr::LoadInt { a, v }) if returns(a) => Leaf::Returns(Scalar::Int(v as i64)),
        Some(&Instr::LoadK { a, k }) if returns(a) => match consts.get(k as usize) {
            Some(Value::None) => Leaf::Returns(Scalar::None),
            Some(&Value::Bool(b)) => Leaf::Returns(Scalar::Bool(b)),
            Some(&Value::Int(i)) => Leaf::Returns(Scalar::Int(i)),
            Some(&Value::Float(f)) => Leaf::Returns(Scalar::Float(f)),
            _ => Leaf::No,
        },
        _ => Leaf::No,
    }
}

impl Code {
    /// Was the binary operation at `pc` written as `a op= b`?
    pub fn is_inplace(&self, pc: usize) -> bool {
        self.inplace.binary_search(&(pc as u32)).is_ok()
    }
    /// Does the `AddI` at `pc` stand for `x - k` (its `v` is `-k`)?
    pub fn is_sub_addi(&self, pc: usize) -> bool {
        self.sub_addi.binary_search(&(pc as u32)).is_ok()
    }
    /// The inline-cache word of the instruction at `pc`.
    #[inline(always)]
    pub fn ic_at(&self, pc: usize) -> Option<&AttrCache> {
        self.ic.0.get(pc)
    }
    /// [`Code::ic_at`] without the bounds check, for the dispatch loop's
    /// arms of the instructions that have a cache: the check and the
    /// `Option` it makes cost about 5% of an object-heavy program's
    /// machine instructions (deltablue).
    ///
    /// # Safety
    /// `pc` is the index of an instruction of this code for which
    /// `has_cache` holds (the arm running it proves its kind); then the
    /// table has one cache per instruction (`InlineCaches::for_instrs`).
    #[inline(always)]
    pub unsafe fn ic_of(&self, pc: usize) -> &AttrCache {
        debug_assert!(pc < self.instrs.len() && has_cache(&self.instrs[pc]) && pc < self.ic.0.len());
        // SAFETY: see above.
        unsafe { self.ic.0.get_unchecked(pc) }
    }
    pub fn span_at(&self, pc: usize) -> Span {
        self.spans.get(pc).unwrap_or(self.span)
    }

    /// Is `pc` the resume point of a `yield from`'s `Yield` (the loop the
    /// compiler emits for it, `compile/emit/exprs.rs`)? That loop is
    ///
    /// ```text
    /// top:     ForNext { a: it, b: x }
    /// top + 1: Jmp { t: exit }
    /// top + 2: Yield { a: x, b: x }
    /// top + 3: Jmp { t: top }          <- pc
    /// ```
    ///
    /// and a frame suspended at `pc` does nothing but pull the next item of
    /// register `it` and yield it, so resuming it may resume the generator
    /// in `it` instead (`vm/exec/resume.rs`). Any code of exactly this shape
    /// behaves so, whoever wrote it.
    #[inline]
    pub fn yield_from_site(&self, pc: usize) -> Option<YieldFromSite> {
        let Some(&Instr::Yield { a: x, b }) = self.instrs.get(pc.wrapping_sub(1)) else {
            return None;
        };
        if x != b {
            return None;
        }
        let Some(&Instr::Jmp { t }) = self.instrs.get(pc) else {
            return None;
        };
        let top = t as usize;
        match (self.instrs.get(top), self.instrs.get(top + 1)) {
            (Some(&Instr::ForNext { a: it, b: bx }), Some(&Instr::Jmp { t: exit })) if bx == x && top + 3 == pc => {
                Some(YieldFromSite {
                    it,
                    x,
                    for_next: top as u32,
                    exit,
                })
            }
            _ => None,
        }
    }
}

/// A `yield from` loop's registers and places (see [`Code::yield_from_site`]).
#[derive(Clone, Copy, Debug)]
pub struct YieldFromSite {
    /// The iterator register (`it + 1` gets a finished generator's return value).
    pub it: Reg,
    /// The item register.
    pub x: Reg,
    /// The loop's `ForNext`.
    pub for_next: u32,
    /// Where the loop goes when the iterator is exhausted.
    pub exit: u32,
}

impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "code {} (regs {}, cells {})", self.name, self.nregs, self.ncells)?;
        for (i, ins) in self.instrs.iter().enumerate() {
            writeln!(f, "  {i:4} {ins:?}")?;
        }
        Ok(())
    }
}

/// Where a closure's captured cell comes from in the defining frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Capture {
    /// The defining frame's own cell.
    Cell(u16),
    /// A cell the defining closure itself captured.
    Free(u16),
}

/// A run-time check of an annotated parameter or field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TypeCheck {
    Int,
    /// `float` accepts ints too.
    Float,
    Str,
    Bool,
    List,
    Dict,
    Tuple,
    NoneType,
    /// `Tensor[...]`: an id into `tensor::annot`'s table (checks shape, binds names, converts dtype).
    Tensor(u32),
}

impl TypeCheck {
    pub fn from_name(name: &str) -> Option<TypeCheck> {
        Some(match name {
            "int" => TypeCheck::Int,
            "float" => TypeCheck::Float,
            "str" => TypeCheck::Str,
            "bool" => TypeCheck::Bool,
            "list" => TypeCheck::List,
            "dict" => TypeCheck::Dict,
            "tuple" => TypeCheck::Tuple,
            "none" => TypeCheck::NoneType,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            TypeCheck::Int => "int",
            TypeCheck::Float => "float",
            TypeCheck::Str => "str",
            TypeCheck::Bool => "bool",
            TypeCheck::List => "list",
            TypeCheck::Dict => "dict",
            TypeCheck::Tuple => "tuple",
            TypeCheck::NoneType => "none",
            TypeCheck::Tensor(_) => "Tensor",
        }
    }
}

/// Everything about a `def`/`lambda`/comprehension known at compile time.
#[derive(Debug)]
pub struct FuncProto {
    pub name: Arc<str>,
    /// The body: compiled, or read from a compiled program's bytes when it
    /// first runs (see [`LazyCode`]).
    pub code: LazyCode,
    /// Positional parameters (may be passed by keyword too).
    pub nparams: u16,
    pub has_vararg: bool,
    pub nkwonly: u16,
    pub has_kwarg: bool,
    /// All parameter names in register order.
    pub param_names: Box<[Arc<str>]>,
    /// How many of the positional parameters have defaults (the last ones).
    pub ndefaults: u16,
    /// Which keyword-only parameters have defaults.
    pub kwonly_has_default: Box<[bool]>,
    pub captures: Box<[Capture]>,
    /// Annotated parameters checked on every call: (register, check).
    pub checks: Box<[(u16, TypeCheck)]>,
    /// Plain positional parameters only, no checks: the fast call path.
    /// Never true for a generator.
    pub simple: bool,
    /// A generator function (its body holds `yield`) or generator
    /// expression: a call binds the arguments and returns a generator.
    pub generator: bool,
    /// The first positional parameter is bound only by the call: no
    /// statement of the body assigns, deletes or captures it, so register
    /// 0 holds what the call passed until the frame ends. A method call
    /// then needs no handle on the method in its callee slot: the receiver
    /// keeps its type, which keeps its methods (`vm/exec.rs`).
    pub keeps_first: bool,
    /// The body is one step ([`Leaf`], not [`Leaf::No`]): a method call may
    /// be done without a frame. Copied into each closure, so a call reads
    /// it beside the parameter count; the body's own `leaf` decides.
    pub leaf: bool,
}

impl FuncProto {
    /// Total number of parameter registers.
    pub fn nslots(&self) -> usize {
        self.nparams as usize + self.has_vararg as usize + self.nkwonly as usize + self.has_kwarg as usize
    }
}

/// A function's body. The compiler makes it ready; a program read back
/// from its compiled form (the compile cache, a built executable) leaves
/// each body as a range of the program's bytes until the function is first
/// run, so a cache hit pays only for the functions the run calls
/// (`serial.rs`). Reading it is then one load and a branch that always goes
/// the same way: a body, once there, never changes.
///
/// A body that cannot be read (a compiled program this `apsi` wrote, signed
/// and checked, does not decode: a bug) becomes one that raises an `Error`
/// saying so when called, never a panic.
pub struct LazyCode {
    cell: std::sync::OnceLock<Arc<Code>>,
    pending: Option<PendingBody>,
}

/// A decoded program's bytes, which its bodies not read yet are read from
/// (`serial::Image` is the one there is; this layer only calls it).
pub(crate) trait BodyImage: Send + Sync {
    /// Reads the body `at` points to; why not, when it does not decode.
    fn read_body(&self, at: &PendingBody) -> Result<Arc<Code>, String>;
    /// Reads the prototype `at` points to; why not, when it does not decode.
    fn read_proto(&self, at: &PendingProto) -> Result<Arc<FuncProto>, String>;
    /// Reads the struct `at` points to; why not, when it does not decode.
    fn read_struct(&self, at: &PendingProto) -> Result<Arc<StructProto>, String>;
    /// Reads the span table `at` points to; why not, when it does not decode.
    fn read_spans(&self, at: &PendingSpans) -> Result<Box<[Span]>, String>;
}

/// A body left in a program's bytes: `len` bytes from `start` of `image`
/// (a program's bytes are under 4 GiB: the decoder refuses larger ones),
/// nested `depth` functions deep, with `nregs` registers (the prototype's
/// parameters were checked against it when the prototype was read).
/// Every prototype of a loaded program holds one: kept small.
pub(crate) struct PendingBody {
    pub(crate) image: Arc<dyn BodyImage>,
    pub(crate) start: u32,
    pub(crate) len: u32,
    pub(crate) depth: u16,
    pub(crate) nregs: u16,
}

impl PendingBody {
    /// Where the body is in the image's bytes.
    pub(crate) fn range(&self) -> std::ops::Range<usize> {
        self.start as usize..self.start as usize + self.len as usize
    }

    pub(crate) fn read(&self) -> Result<Arc<Code>, String> {
        self.image.read_body(self)
    }
}

impl LazyCode {
    /// A compiled body.
    pub fn ready(code: Arc<Code>) -> LazyCode {
        LazyCode {
            cell: std::sync::OnceLock::from(code),
            pending: None,
        }
    }

    /// A body still in a compiled program's bytes.
    pub(crate) fn pending(p: PendingBody) -> LazyCode {
        LazyCode {
            cell: std::sync::OnceLock::new(),
            pending: Some(p),
        }
    }

    /// The body, read first if it has not been.
    #[inline(always)]
    pub fn arc(&self) -> &Arc<Code> {
        match self.cell.get() {
            Some(c) => c,
            None => self.read(),
        }
    }

    /// The bytes the body is still to be read from, if it came from them.
    pub(crate) fn pending_body(&self) -> Option<&PendingBody> {
        self.pending.as_ref()
    }

    /// Has the body been compiled or read yet?
    pub fn is_read(&self) -> bool {
        self.cell.get().is_some()
    }

    #[cold]
    #[inline(never)]
    fn read(&self) -> &Arc<Code> {
        self.cell.get_or_init(|| {
            let (nregs, why) = match &self.pending {
                Some(p) => match p.read() {
                    Ok(c) => return c,
                    Err(e) => (p.nregs, e),
                },
                None => (1, "no body".to_string()),
            };
            Arc::new(Code::unreadable(nregs, &why))
        })
    }
}

/// A function's prototype as a body holds it: compiled, or still in a
/// compiled program's bytes until a `MakeFunc` or a global defined by
/// `DefFunc` first needs it, so a cached start decodes only the
/// prototypes its run makes functions of. Like [`LazyCode`], one that
/// cannot be read becomes a function that raises an `Error` saying so
/// when called, never a panic.
pub struct ProtoSlot {
    cell: std::sync::OnceLock<Arc<FuncProto>>,
    pending: Option<PendingProto>,
}

/// A prototype left in a program's bytes: `len` bytes from `start` of
/// `image`, nested `depth` functions deep.
pub(crate) struct PendingProto {
    pub(crate) image: Arc<dyn BodyImage>,
    pub(crate) start: u32,
    pub(crate) len: u32,
    pub(crate) depth: u16,
}

impl PendingProto {
    /// Where the prototype (or struct) is in the image's bytes.
    pub(crate) fn range(&self) -> std::ops::Range<usize> {
        self.start as usize..self.start as usize + self.len as usize
    }
}

impl ProtoSlot {
    /// A compiled prototype.
    pub fn ready(p: Arc<FuncProto>) -> ProtoSlot {
        ProtoSlot {
            cell: std::sync::OnceLock::from(p),
            pending: None,
        }
    }

    /// A prototype still in a compiled program's bytes.
    pub(crate) fn pending(p: PendingProto) -> ProtoSlot {
        ProtoSlot {
            cell: std::sync::OnceLock::new(),
            pending: Some(p),
        }
    }

    /// The prototype, read first if it has not been.
    #[inline(always)]
    pub fn get(&self) -> &Arc<FuncProto> {
        match self.cell.get() {
            Some(p) => p,
            None => self.read(),
        }
    }

    /// The bytes the prototype is still to be read from, if it came from them.
    pub(crate) fn pending_proto(&self) -> Option<&PendingProto> {
        self.pending.as_ref()
    }

    /// The prototype if it has been compiled or read (walks that count
    /// what a run read use it: they read nothing themselves).
    pub fn peek(&self) -> Option<&Arc<FuncProto>> {
        self.cell.get()
    }

    #[cold]
    #[inline(never)]
    fn read(&self) -> &Arc<FuncProto> {
        self.cell.get_or_init(|| {
            let why = match &self.pending {
                Some(p) => match p.image.read_proto(p) {
                    Ok(proto) => return proto,
                    Err(e) => e,
                },
                None => "no prototype".to_string(),
            };
            Arc::new(FuncProto::unreadable(&why))
        })
    }
}

/// A struct of a body: compiled, or left in a decoded program's bytes
/// until a `DefStruct` global is first read or a `MakeStruct` runs, so a
/// cached start decodes only the structs its run makes (as [`ProtoSlot`]
/// does for functions). One that cannot be read says why when it is made.
pub struct StructSlot {
    cell: std::sync::OnceLock<Result<Arc<StructProto>, Arc<str>>>,
    pending: Option<PendingProto>,
}

impl StructSlot {
    /// A compiled struct.
    pub fn ready(p: Arc<StructProto>) -> StructSlot {
        StructSlot {
            cell: std::sync::OnceLock::from(Ok(p)),
            pending: None,
        }
    }

    /// A struct still in a compiled program's bytes (its range as a
    /// prototype's is given).
    pub(crate) fn pending(p: PendingProto) -> StructSlot {
        StructSlot {
            cell: std::sync::OnceLock::new(),
            pending: Some(p),
        }
    }

    /// The struct, read first if it has not been; why it cannot be read.
    #[inline]
    pub fn get(&self) -> Result<&Arc<StructProto>, &str> {
        let r = match self.cell.get() {
            Some(r) => r,
            None => self.read(),
        };
        r.as_ref().map_err(|why| &**why)
    }

    /// The bytes the struct is still to be read from, if it came from them.
    pub(crate) fn pending_struct(&self) -> Option<&PendingProto> {
        self.pending.as_ref()
    }

    /// The struct if it has been compiled or read.
    pub fn peek(&self) -> Option<&Arc<StructProto>> {
        self.cell.get().and_then(|r| r.as_ref().ok())
    }

    #[cold]
    #[inline(never)]
    fn read(&self) -> &Result<Arc<StructProto>, Arc<str>> {
        self.cell.get_or_init(|| match &self.pending {
            Some(p) => p.image.read_struct(p).map_err(Arc::from),
            None => Err(Arc::from("no struct")),
        })
    }
}

impl std::ops::Deref for ProtoSlot {
    type Target = FuncProto;
    #[inline(always)]
    fn deref(&self) -> &FuncProto {
        self.get()
    }
}

impl FuncProto {
    /// A function taking any arguments whose body raises an `Error`
    /// saying why its prototype could not be read.
    pub(crate) fn unreadable(why: &str) -> FuncProto {
        FuncProto {
            name: Arc::from("<unreadable>"),
            code: LazyCode::ready(Arc::new(Code::unreadable(2, why))),
            nparams: 0,
            has_vararg: true,
            nkwonly: 0,
            has_kwarg: true,
            param_names: Box::new([Arc::from("args"), Arc::from("kwargs")]),
            ndefaults: 0,
            kwonly_has_default: Box::new([]),
            captures: Box::new([]),
            checks: Box::new([]),
            simple: false,
            generator: false,
            keeps_first: false,
            leaf: false,
        }
    }
}

impl std::ops::Deref for LazyCode {
    type Target = Code;
    #[inline(always)]
    fn deref(&self) -> &Code {
        self.arc()
    }
}

impl std::fmt::Debug for LazyCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.cell.get() {
            Some(c) => c.fmt(f),
            None => f.write_str("<body not read yet>"),
        }
    }
}

impl Code {
    /// A body that raises an `Error` saying why the real one could not be
    /// read, with `nregs` registers (at least the parameters').
    fn unreadable(nregs: u16, why: &str) -> Code {
        let e = crate::value::err(
            crate::error::ErrorKind::Error,
            format!(
                "this function's compiled code cannot be read ({why}); compile the program again \
                 (`apsi run --no-cache`, or `apsi build` for an executable)"
            ),
        );
        let instrs: Box<[Instr]> = Box::new([Instr::LoadK { a: 0, k: 0 }, Instr::Raise { a: 0 }]);
        let ic = InlineCaches::for_instrs(&instrs);
        Code {
            name: Arc::from("<unreadable>"),
            spans: SpanTable::ready(vec![Span::default(); instrs.len()].into_boxed_slice()),
            instrs,
            consts: Box::new([Value::Error(e)]),
            globals: Box::new([]),
            protos: Arc::new([]),
            structs: Arc::new([]),
            nregs: nregs.max(1),
            ncells: 0,
            unbound_regs: Box::new([]),
            span: Span::default(),
            inplace: Box::new([]),
            sub_addi: Box::new([]),
            cell_names: Box::new([]),
            free_names: Box::new([]),
            ic,
            has_yield_from: false,
            leaf: Leaf::No,
        }
    }
}

/// Does `i` have an inline cache (`Code::ic`)? The instructions that look
/// names up on structs: attributes, method calls, and arithmetic (on a
/// struct it calls an operator method, cached like one).
pub(crate) fn has_cache(i: &Instr) -> bool {
    matches!(
        i,
        Instr::GetAttr { .. }
            | Instr::SetAttr { .. }
            | Instr::CallMethod { .. }
            | Instr::CallSuper { .. }
            | Instr::Add { .. }
            | Instr::Sub { .. }
            | Instr::Mul { .. }
            | Instr::MulT { .. }
            | Instr::Bin { .. }
            | Instr::AddI { .. }
    )
}

/// The inline caches of a body, one per instruction, found by pc with one
/// indexed load (the dispatch loop reads one on every attribute read,
/// attribute write and method call). A body without an instruction that
/// has one (`has_cache`) has none at all. A function of the instructions
/// alone, so the compiled form (`serial.rs`) does not store it.
///
/// One per instruction, not one per instruction that needs it: a table of
/// the latter found through a second table of indices by pc cost two more
/// dependent loads and bounds checks on every lookup (about 8 of a field
/// read's 60 machine instructions), for 32 bytes an instruction saved.
pub struct InlineCaches(Box<[AttrCache]>);

impl InlineCaches {
    /// Empty caches for `instrs`.
    pub fn for_instrs(instrs: &[Instr]) -> InlineCaches {
        if !instrs.iter().any(has_cache) {
            return InlineCaches(Box::new([]));
        }
        InlineCaches((0..instrs.len()).map(|_| AttrCache::default()).collect())
    }

    /// How many caches there are: as many as instructions, or none.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The source span of each instruction of a body. The compiler makes the
/// table; a body read back from a compiled program leaves it in the
/// program's bytes (about 3 bytes an instruction there, 12 here) until
/// something asks for a span: an error's traceback, `--opstats`, the
/// native compiler. Most bodies of a cache hit never do.
///
/// A table that cannot be read (a bug: the program was signed and
/// checked) gives every instruction the body's own span, never a panic.
pub struct SpanTable {
    cell: std::sync::OnceLock<Box<[Span]>>,
    pending: Option<PendingSpans>,
}

/// A span table left in a program's bytes: `n` spans in `start..end` of
/// `image`, stored relative to `body` (the body's own span).
pub(crate) struct PendingSpans {
    pub(crate) image: Arc<dyn BodyImage>,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) n: usize,
    pub(crate) body: Span,
}

impl SpanTable {
    /// A table made by the compiler.
    pub fn ready(spans: Box<[Span]>) -> SpanTable {
        SpanTable {
            cell: std::sync::OnceLock::from(spans),
            pending: None,
        }
    }

    /// A table still in a compiled program's bytes.
    pub(crate) fn pending(p: PendingSpans) -> SpanTable {
        SpanTable {
            cell: std::sync::OnceLock::new(),
            pending: Some(p),
        }
    }

    /// Every span, in pc order (read first if they were not).
    pub fn all(&self) -> &[Span] {
        self.cell.get_or_init(|| match &self.pending {
            Some(p) => p
                .image
                .read_spans(p)
                .unwrap_or_else(|_| vec![p.body; p.n].into_boxed_slice()),
            None => Box::new([]),
        })
    }

    /// The span of the instruction at `pc`.
    pub fn get(&self, pc: usize) -> Option<Span> {
        self.all().get(pc).copied()
    }

    /// How many spans there are (without reading them).
    pub fn len(&self) -> usize {
        match (self.cell.get(), &self.pending) {
            (Some(v), _) => v.len(),
            (None, Some(p)) => p.n,
            (None, None) => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Have the spans been made or read yet?
    pub fn is_read(&self) -> bool {
        self.cell.get().is_some()
    }
}

/// A `struct` declaration known at compile time.
#[derive(Debug)]
pub struct StructProto {
    pub name: Arc<str>,
    pub fields: Box<[Arc<str>]>,
    pub has_default: Box<[bool]>,
    /// The annotations as written.
    pub annotations: Box<[Option<Arc<str>>]>,
    pub methods: Box<[Arc<str>]>,
    pub method_kinds: Box<[MethodKind]>,
    /// The parent (a struct or an error kind) follows the methods' registers.
    pub has_base: bool,
    /// For a struct defined lazily (`Instr::DefStruct`): where its methods'
    /// prototypes start in its body's `protos`, one per method, in order.
    pub methods_at: u16,
}

/// How a struct's method is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodKind {
    Plain,
    /// `@staticmethod`
    Static,
    /// `@property`
    Property,
}
