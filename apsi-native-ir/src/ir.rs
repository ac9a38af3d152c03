//! The typed IR: one list of operations per function over typed variable
//! slots. Control flow uses labels: `Label(n)` starts a block, `Jmp`/`Br`/
//! `Ret`/`Raise` end one. Every function returns a status (0 ok, 1 an error
//! is in the context) and writes its results through out-pointers, so errors
//! propagate without unwinding.

use serde::{Deserialize, Serialize};

pub type Var = u32;
pub type Label = u32;

/// Element type of a tensor.
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Dt {
    F64,
    F32,
    I64,
    I32,
    Bool,
}

impl Dt {
    pub fn code(self) -> i32 {
        match self {
            Dt::F64 => 0,
            Dt::F32 => 1,
            Dt::I64 => 2,
            Dt::I32 => 3,
            Dt::Bool => 4,
        }
    }
    pub fn from_code(c: i32) -> Option<Dt> {
        Some(match c {
            0 => Dt::F64,
            1 => Dt::F32,
            2 => Dt::I64,
            3 => Dt::I32,
            4 => Dt::Bool,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Dt::F64 => "f64",
            Dt::F32 => "f32",
            Dt::I64 => "i64",
            Dt::I32 => "i32",
            Dt::Bool => "bool",
        }
    }
    pub fn is_float(self) -> bool {
        matches!(self, Dt::F64 | Dt::F32)
    }
    pub fn is_int(self) -> bool {
        matches!(self, Dt::I64 | Dt::I32)
    }
}

/// The type of a variable slot.
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Ty {
    Int,
    Float,
    Bool,
    /// A tensor of `ndim` axes; `contig`: row-major with unit inner stride.
    Tensor {
        dt: Dt,
        ndim: u8,
        contig: bool,
    },
    /// A pointer to 8-byte words (the other workers' reduction partials).
    Ptr,
}

#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Debug)]
pub enum Const {
    Int(i64),
    /// The bits of an f64 (so NaN payloads and -0.0 survive JSON).
    Float(u64),
    Bool(bool),
}

#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub enum IntOp {
    Add,
    Sub,
    Mul,
    FloorDiv,
    Mod,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    /// Exponent known to be non-negative.
    Pow,
    /// The wrapping operations (`wrapping_add` …): the low 64 bits, never an error.
    WrapAdd,
    WrapSub,
    WrapMul,
    /// `wrapping_shl(x, k)`: 0 from `k >= 64`; a negative `k` raises.
    WrapShl,
    /// `shr_u(x, k)`: logical right shift; 0 from `k >= 64`; a negative `k` raises.
    ShrU,
}

#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub enum FloatOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
}

#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Math functions on floats (ints are converted first by the front end).
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub enum MathFn {
    Sqrt,
    Exp,
    Log,
    Log2,
    Log10,
    Log1p,
    Sin,
    Cos,
    Tan,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Abs,
    /// float -> int (ValueError on NaN, OverflowError on inf)
    Floor,
    Ceil,
    IsNan,
    IsInf,
    Atan2,
    Hypot,
    /// Python's `min`/`max` of two floats (first wins on ties and NaN).
    Min,
    Max,
    /// NumPy's `minimum`/`maximum` (NaN propagates).
    Minimum,
    Maximum,
    /// float -> int, ties to even (`round(x)`; errors as `Floor`).
    Round,
}

#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
pub enum Op {
    Label(Label),
    Const {
        dst: Var,
        c: Const,
    },
    Move {
        dst: Var,
        src: Var,
    },
    /// Numeric conversion between Int, Float and Bool (Float -> Int is not one).
    Cast {
        dst: Var,
        src: Var,
    },
    IntBin {
        op: IntOp,
        dst: Var,
        a: Var,
        b: Var,
        line: u32,
    },
    /// Float division by zero is an error (as in the interpreter).
    FloatBin {
        op: FloatOp,
        dst: Var,
        a: Var,
        b: Var,
        line: u32,
    },
    /// Operands of the same type (Int, Float or Bool).
    Cmp {
        op: CmpOp,
        dst: Var,
        a: Var,
        b: Var,
    },
    Not {
        dst: Var,
        src: Var,
    },
    /// Int (checked) or Float negation.
    Neg {
        dst: Var,
        src: Var,
        line: u32,
    },
    /// Int `~x`.
    Invert {
        dst: Var,
        src: Var,
    },
    /// Truth of an Int or Float.
    Truthy {
        dst: Var,
        src: Var,
    },
    Math {
        f: MathFn,
        dst: Var,
        args: Vec<Var>,
        line: u32,
    },
    /// Int min/max of two ints (`min(a, b)`).
    IntMinMax {
        max: bool,
        dst: Var,
        a: Var,
        b: Var,
    },
    IntAbs {
        dst: Var,
        src: Var,
        line: u32,
    },
    Dim {
        dst: Var,
        t: Var,
        axis: u8,
    },
    /// Element count.
    Size {
        dst: Var,
        t: Var,
    },
    /// `nonneg`: bit `d` set when index `d` is known not to be negative (so
    /// the negative-index wrap can be left out); set by the host's analysis.
    Load {
        dst: Var,
        t: Var,
        idx: Vec<Var>,
        line: u32,
        #[serde(default)]
        nonneg: u8,
    },
    /// `val` already has the tensor's element kind (Float for f32/f64, Int for i32/i64, Bool).
    Store {
        t: Var,
        idx: Vec<Var>,
        val: Var,
        line: u32,
        #[serde(default)]
        nonneg: u8,
    },
    NewTensor {
        dst: Var,
        dims: Vec<Var>,
        ones: bool,
        line: u32,
    },
    CopyTensor {
        dst: Var,
        src: Var,
        line: u32,
    },
    /// Call function `func` of the module; `dsts` receive its results.
    Call {
        func: u32,
        args: Vec<Var>,
        dsts: Vec<Var>,
    },
    /// `parallel for` over `range(lo, hi, step)`: chunk function `chunk`
    /// (params: lo, hi, step, then `env`, then the reductions; results: the
    /// reductions). Writes the first worker's partials to `first`, and a
    /// buffer of the other workers' partials (`reds.len()` words each) and
    /// their count to `rest`, `nrest`.
    ParFor {
        chunk: u32,
        lo: Var,
        hi: Var,
        step: Var,
        env: Vec<Var>,
        init_first: Vec<Var>,
        init_rest: Vec<Var>,
        first: Vec<Var>,
        rest: Var,
        nrest: Var,
        line: u32,
    },
    /// `dst` = word `slot` of row `row` (rows of `width` words) of the buffer `buf`.
    LoadPartial {
        dst: Var,
        buf: Var,
        row: Var,
        width: u32,
        slot: u32,
    },
    Jmp(Label),
    Br {
        cond: Var,
        then: Label,
        els: Label,
    },
    Ret(Vec<Var>),
    /// Raise error `code` (see `abi::err`) at `line`.
    Raise {
        code: i32,
        line: u32,
        a: Var,
    },
    /// The range loop test: `dst = step > 0 ? a < stop : a > stop` and raise
    /// ValueError when `step == 0`.
    RangeTest {
        dst: Var,
        a: Var,
        stop: Var,
        step: Var,
        line: u32,
    },
    /// `a += step`, and `dst` = whether the result is still in range (false on overflow).
    RangeNext {
        dst: Var,
        a: Var,
        stop: Var,
        step: Var,
    },
}

#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
pub struct Func {
    /// A unique symbol name.
    pub name: String,
    pub params: Vec<Var>,
    pub rets: Vec<Ty>,
    pub vars: Vec<Ty>,
    pub ops: Vec<Op>,
    /// Emitted with an entry trampoline the host calls (see `abi::EntryFn`).
    pub entry: bool,
    /// A `parallel for` chunk: also emitted with a chunk trampoline (see `abi::ChunkFn`).
    pub chunk: bool,
}

#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
pub struct Module {
    pub funcs: Vec<Func>,
    pub fastmath: bool,
    pub boundscheck: bool,
    /// Addresses of the host callbacks (see `abi::Host`).
    pub host: crate::abi::Host,
}

impl Func {
    pub fn ty(&self, v: Var) -> Option<Ty> {
        self.vars.get(v as usize).copied()
    }
}
