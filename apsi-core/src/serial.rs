//! A compact, versioned binary form of a compiled program (the bytecode of
//! every unit with its constants, global slots, prototypes and spans), for
//! the compile cache that lives outside the core (apsi-cache). Pure: no file,
//! clock or crypto I/O here; the caller stores, signs and verifies the bytes.
//!
//! Layout (all integers LEB128 varints unless said otherwise; strings are a
//! length then UTF-8 bytes):
//!
//! ```text
//! magic "APSIBC"  FORMAT (u16 LE)  core version (str)
//! strings: n, then each string once (names and string constants refer to
//!          them by index)
//! named:   n, then per constant stored by name: tag, name(s) (see below)
//! slots:   n, then per slot: name, is_const (u8), initial (Option<Const>)
//! units:   n, then per unit: name, path (bytes), uses, own slots, exports,
//!          inherited slot pairs, module prototype
//! ```
//!
//! A prototype is its header (name, register count, parameters, captures,
//! checks, flags) then its body (a code object, nested prototypes inside)
//! with the body's length first: [`decode_units`] reads the tables and the
//! units' own headers and leaves each body to be read when its function
//! first runs (`code::LazyCode`). The prototypes a body defines are stored
//! with their lengths first too, and read only when a function is made of
//! them (`code::ProtoSlot`): a module's `def`s are mostly bound lazily
//! (`Instr::DefFunc`), so a start reads the headers of the functions it
//! calls, not of every function the program has.
//!
//! A code object's spans are stored as differences from the previous
//! span's start, with their length and (rarely) another file, behind the
//! table's length in bytes: a body's table is read only when one of its
//! spans is asked for (`code::SpanTable`). The inline caches are not
//! stored; they follow from the instructions (`code::InlineCaches`).
//!
//! Constants that are plain data (none, bools, ints, floats, strings, bytes,
//! tuples of those, error kinds) are stored by value; a constant the
//! compiler took from the prelude or a compiled-in module (a built-in
//! function, a module) is stored by name, once, in the `named` table, which
//! the decoding runtime looks up before any body; the few natives the compiler itself inserts
//! (`compiler_natives`) are stored by their own names. A program holding any other constant cannot be
//! encoded ([`EncodeError`]); it is then simply not cached.
//!
//! Decoding never panics: a truncated or malformed input is an error, and
//! every index an instruction carries (constant, global, prototype, struct,
//! jump target, register) is checked against what the code holds.

use crate::check::{ResolvedUse, UseTarget};
use crate::code::{
    BodyImage, Capture, Code, FuncProto, Instr, LazyCode, MethodKind, PendingBody, PendingProto, PendingSpans,
    ProtoSlot, ReduceOp, SpanTable, StructProto, StructSlot, TypeCheck,
};
use crate::diagnostic::{FileId, Span};
use crate::error::ErrorKind;
use crate::syntax::ast::{BinOp, CmpOp, UnaryOp};
use crate::tensor::annot::{Dim, TensorAnnot};
use crate::tensor::dtype::DType;
use crate::value::globals::GlobalSlot;
use crate::value::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// The format's version: bumped whenever the layout or the meaning of any
/// instruction changes (an entry of another format is never decoded).
pub const FORMAT: u16 = 11;

/// The natives the compiler itself puts into code, which no program can
/// name (`super()`'s helper, the iterators of a loop's `zip`/`enumerate`/
/// `.items()`, the `list`/`sorted`/`reversed` of a new list): stored by
/// these names.
fn compiler_natives() -> [(&'static str, Value); 7] {
    [
        ("super", crate::ops::structs::super_native()),
        ("loop zip", crate::builtins::loop_zip()),
        ("loop enumerate", crate::builtins::loop_enumerate()),
        ("loop items", crate::builtins::loop_items()),
        ("new list", crate::builtins::list_of_new()),
        ("new sorted", crate::builtins::sorted_of_new()),
        ("new reversed", crate::builtins::reversed_of_new()),
    ]
}

/// The name `v` is stored by when it is one of [`compiler_natives`].
fn compiler_native_name(v: &Value) -> Option<&'static str> {
    let Value::Native(f) = v else { return None };
    compiler_natives()
        .into_iter()
        .find(|(_, c)| matches!(c, Value::Native(g) if Arc::ptr_eq(f, g)))
        .map(|(n, _)| n)
}

const MAGIC: &[u8; 6] = b"APSIBC";

/// Why a program could not be encoded.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodeError(pub String);

/// Why bytes could not be decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeError(pub String);

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

type DResult<T> = Result<T, DecodeError>;

fn bad(what: &str) -> DecodeError {
    DecodeError(format!("malformed compiled program: {what}"))
}

// ------------------------------------------------------------ bytes

#[derive(Default)]
pub(crate) struct Writer {
    pub(crate) buf: Vec<u8>,
}

impl Writer {
    fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    fn var(&mut self, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.buf.push(b);
                return;
            }
            self.buf.push(b | 0x80);
        }
    }
    fn ivar(&mut self, v: i64) {
        self.var(((v << 1) ^ (v >> 63)) as u64);
    }
    fn len(&mut self, n: usize) {
        self.var(n as u64);
    }
    fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.buf.extend_from_slice(b);
    }
    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
    fn bool(&mut self, b: bool) {
        self.u8(u8::from(b));
    }
    fn span(&mut self, s: Span) {
        self.var(u64::from(s.file.0));
        self.var(u64::from(s.start));
        self.var(u64::from(s.end));
    }
}

pub(crate) struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    #[inline(always)]
    fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, pos: 0 }
    }
    #[inline(always)]
    fn u8(&mut self) -> DResult<u8> {
        let b = *self.data.get(self.pos).ok_or_else(|| bad("truncated"))?;
        self.pos += 1;
        Ok(b)
    }
    #[inline(always)]
    fn take(&mut self, n: usize) -> DResult<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or_else(|| bad("length overflow"))?;
        let s = self.data.get(self.pos..end).ok_or_else(|| bad("truncated"))?;
        self.pos = end;
        Ok(s)
    }
    /// A varint: most are one or two bytes (register numbers, counts,
    /// indexes), read here without a loop; longer ones (and the last byte
    /// of the input) in [`Self::var_long`].
    #[inline(always)]
    fn var(&mut self) -> DResult<u64> {
        match self.data.get(self.pos..self.pos + 2) {
            Some(&[b, _]) if b < 0x80 => {
                self.pos += 1;
                Ok(u64::from(b))
            }
            Some(&[b, c]) if c < 0x80 => {
                self.pos += 2;
                Ok(u64::from(b & 0x7f) | u64::from(c) << 7)
            }
            _ => self.var_long(),
        }
    }
    #[inline(never)]
    fn var_long(&mut self) -> DResult<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(bad("varint too long"))
    }
    #[inline(always)]
    fn ivar(&mut self) -> DResult<i64> {
        let u = self.var()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }
    #[inline(always)]
    fn num<T: TryFrom<u64>>(&mut self) -> DResult<T> {
        T::try_from(self.var()?).map_err(|_| bad("number out of range"))
    }
    /// A count of items that each take at least one byte (bounds allocations).
    #[inline(always)]
    fn len(&mut self) -> DResult<usize> {
        let n: usize = self.num()?;
        if n > self.data.len() - self.pos {
            return Err(bad("count larger than the input"));
        }
        Ok(n)
    }
    #[inline(always)]
    fn bytes(&mut self) -> DResult<&'a [u8]> {
        let n = self.len()?;
        self.take(n)
    }
    #[inline(always)]
    fn str(&mut self) -> DResult<&'a str> {
        std::str::from_utf8(self.bytes()?).map_err(|_| bad("string is not UTF-8"))
    }
    #[inline(always)]
    fn arc_str(&mut self) -> DResult<Arc<str>> {
        Ok(Arc::from(self.str()?))
    }
    #[inline(always)]
    fn bool(&mut self) -> DResult<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(bad("bool")),
        }
    }
    #[inline(always)]
    fn span(&mut self) -> DResult<Span> {
        Ok(Span::new(FileId(self.num()?), self.num()?, self.num()?))
    }
    #[inline(always)]
    fn list<T>(&mut self, mut f: impl FnMut(&mut Self) -> DResult<T>) -> DResult<Vec<T>> {
        let n = self.len()?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(f(self)?);
        }
        Ok(v)
    }
}

// ------------------------------------------------------------ instructions

/// One field of an instruction.
trait Field: Sized {
    fn put(&self, w: &mut Writer);
    fn get(r: &mut Reader) -> DResult<Self>;
}

macro_rules! int_field {
    ($($t:ty),*) => {$(
        impl Field for $t {
            fn put(&self, w: &mut Writer) {
                w.ivar(i64::from(*self));
            }
            #[inline(always)]
            fn get(r: &mut Reader) -> DResult<Self> {
                <$t>::try_from(r.ivar()?).map_err(|_| bad("instruction field out of range"))
            }
        }
    )*};
}
int_field!(u8, u16, u32, i16, i32);

impl Field for bool {
    fn put(&self, w: &mut Writer) {
        w.bool(*self);
    }
    fn get(r: &mut Reader) -> DResult<Self> {
        r.bool()
    }
}

macro_rules! enum_field {
    ($t:ident, [$($v:ident),* $(,)?]) => {
        impl Field for $t {
            fn put(&self, w: &mut Writer) {
                const ALL: &[$t] = &[$($t::$v),*];
                // Every variant is listed (the match below is exhaustive).
                match self { $($t::$v => {})* }
                w.u8(ALL.iter().position(|x| x == self).unwrap_or(0) as u8);
            }
            fn get(r: &mut Reader) -> DResult<Self> {
                const ALL: &[$t] = &[$($t::$v),*];
                ALL.get(r.u8()? as usize).copied().ok_or_else(|| bad(stringify!($t)))
            }
        }
    };
}
enum_field!(
    BinOp,
    [Add, Sub, Mul, Div, FloorDiv, Mod, Pow, MatMul, BitAnd, BitOr, BitXor, Shl, Shr]
);
enum_field!(UnaryOp, [Neg, Pos, Invert, Not]);
enum_field!(CmpOp, [Eq, NotEq, Lt, LtE, Gt, GtE, In, NotIn, Is, IsNot]);
enum_field!(ReduceOp, [Sum, SumEnd, Truth]);

macro_rules! instr_codec {
    ($($v:ident { $($f:ident),* }),* $(,)?) => {
        #[allow(clippy::upper_case_acronyms)]
        #[repr(u8)]
        enum Tag { $($v),* }

        fn put_instr(w: &mut Writer, i: &Instr) {
            match *i {
                $(Instr::$v { $($f),* } => {
                    w.u8(Tag::$v as u8);
                    $(Field::put(&$f, w);)*
                })*
            }
        }

        /// Each tag as a constant, so decoding is one jump table.
        #[allow(non_upper_case_globals)]
        mod tags {
            $(pub(super) const $v: u8 = super::Tag::$v as u8;)*
        }

        fn get_instr(r: &mut Reader) -> DResult<Instr> {
            Ok(match r.u8()? {
                $(tags::$v => Instr::$v { $($f: Field::get(r)?),* },)*
                _ => return Err(bad("unknown instruction")),
            })
        }
    };
}

instr_codec! {
    Nop {},
    Move { a, b },
    LoadK { a, k },
    LoadInt { a, v },
    LoadNone { a },
    LoadBool { a, v },
    GetGlobal { a, g },
    SetGlobal { a, g },
    GetCell { a, c },
    SetCell { a, c },
    GetFree { a, c },
    SetFree { a, c },
    MakeCell { a, c },
    Add { a, b, c },
    Sub { a, b, c },
    Mul { a, b, c },
    MulT { a, b, c },
    AddI { a, b, v },
    Bin { op, a, b, c },
    Unary { op, a, b },
    Cmp { op, a, b, c },
    CmpJmp { op, a, b, jt },
    CmpJmpI { op, a, v, jt },
    CmpJmpNone { a, jt },
    Jmp { t },
    JmpIf { a, t },
    JmpIfNot { a, t },
    Call { a, n },
    CallKw { a, n, k },
    CallEx { a },
    CallK { a, k, n },
    CallGlobal { a, g, n },
    AppendTo { a, b, c, mv },
    CallMethod { a, k, n },
    CallSuper { a, k, n },
    Len { a, b },
    IsInstance { a, b, c },
    Return { a },
    ReturnParams { a, n },
    ReturnNone {},
    GetAttr { a, b, k },
    SetAttr { a, k, c },
    GetIndex { a, b, c },
    SetIndex { a, b, c },
    BuildList { a, b, n },
    NewListFor { a, b },
    BuildTuple { a, b, n },
    BuildDict { a, b, n },
    ListAppend { a, b },
    ListExtend { a, b },
    DictSet { a, b, c },
    DictUpdate { a, b },
    BuildSlice { a, b },
    BuildRange { a, b, c },
    ForPrep { a },
    ForNext { a, b },
    ForLoop { a, b },
    ForRangePrep { a, b },
    ForRangeLoop { a, b },
    Unpack { a, b, n },
    UnpackRegs { b, k, n },
    UnpackEx { a, b, before, after },
    MakeFunc { a, p, b },
    DefFunc { p, g },
    DefStruct { s, g },
    MakeStruct { a, p, b },
    Raise { a },
    Reraise { a },
    AssertFail { a },
    CheckBound { a, k },
    PushHandler { a, t },
    PopHandler {},
    ExcMatch { a, b, c },
    ToStr { a, b },
    ToRepr { a, b },
    Format { a, b, c },
    Concat { a, b, n },
    ParFor { a, n, range },
    StructConst { a, k, c },
    BuildSet { a, b, n },
    SetAdd { a, b },
    DelIndex { a, b },
    DelLocal { a, k },
    DelGlobal { g },
    DelCell { c, k },
    DelFree { c, k },
    Yield { a, b },
    GetIter { a, b },
    IterPrep { a },
    Reduce { op, a, b },
    CmpI { op, a, b, v },
}

/// Checks the indices an instruction carries against its code object.
fn check_instr(i: &Instr, c: &Code) -> DResult<()> {
    let nk = c.consts.len();
    let ng = c.globals.len();
    let n = c.instrs.len();
    let k_ok = |k: usize| k < nk;
    let ok = match *i {
        Instr::LoadK { k, .. } => k_ok(k as usize),
        Instr::CallK { k, .. }
        | Instr::CallKw { k, .. }
        | Instr::CallMethod { k, .. }
        | Instr::CallSuper { k, .. }
        | Instr::GetAttr { k, .. }
        | Instr::SetAttr { k, .. }
        | Instr::UnpackRegs { k, .. }
        | Instr::CheckBound { k, .. }
        | Instr::StructConst { k, .. }
        | Instr::DelLocal { k, .. }
        | Instr::DelCell { k, .. }
        | Instr::DelFree { k, .. } => k_ok(k as usize),
        Instr::GetGlobal { g, .. } | Instr::SetGlobal { g, .. } | Instr::DelGlobal { g } => (g as usize) < ng,
        Instr::CallGlobal { g, .. } => (g as usize) < ng,
        Instr::MakeFunc { p, .. } => (p as usize) < c.protos.len(),
        Instr::DefFunc { p, g } => (p as usize) < c.protos.len() && (g as usize) < ng,
        // The struct itself is checked when it is made (`def_struct`).
        Instr::DefStruct { s, g } => (g as usize) < ng && (s as usize) < c.structs.len(),
        Instr::MakeStruct { p, .. } => (p as usize) < c.structs.len(),
        Instr::Jmp { t } | Instr::JmpIf { t, .. } | Instr::JmpIfNot { t, .. } | Instr::PushHandler { t, .. } => {
            (t as usize) <= n
        }
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(bad("instruction index out of range"))
    }
}

// ------------------------------------------------------------ constants

/// Where a named constant comes from.
#[derive(Clone)]
enum Named {
    Prelude(String),
    Export(String, String),
    Module(String),
}

fn value_ptr(v: &Value) -> Option<usize> {
    Some(match v {
        Value::List(a) => Arc::as_ptr(a) as usize,
        Value::Dict(a) => Arc::as_ptr(a) as usize,
        Value::Range(a) => Arc::as_ptr(a) as usize,
        Value::Slice(a) => Arc::as_ptr(a) as usize,
        Value::Func(a) => Arc::as_ptr(a) as usize,
        Value::Native(a) => Arc::as_ptr(a) as usize,
        Value::BoundMethod(a) => Arc::as_ptr(a) as usize,
        Value::StructType(a) => Arc::as_ptr(a) as usize,
        Value::Struct(a) => Arc::as_ptr(a) as usize,
        Value::Error(a) => Arc::as_ptr(a) as usize,
        Value::Module(a) => Arc::as_ptr(a) as usize,
        Value::Object(a) => Arc::as_ptr(a) as usize,
        Value::Set(a) => Arc::as_ptr(a) as usize,
        Value::Tuple(a) => Arc::as_ptr(a) as usize,
        Value::Bytes(a) => Arc::as_ptr(a) as usize,
        _ => return None,
    })
}

/// What the compiler can bake into code from outside the program: the
/// prelude's and the compiled-in modules' values.
pub(crate) struct Outside<'a> {
    pub(crate) prelude: &'a HashMap<Arc<str>, Value>,
    pub(crate) modules: &'a crate::module::InstalledModules,
}

struct Enc<'a> {
    w: Writer,
    outside: &'a Outside<'a>,
    /// Built on the first constant that is not plain data.
    names: Option<HashMap<usize, Named>>,
    slots: Vec<Arc<GlobalSlot>>,
    slot_idx: HashMap<usize, usize>,
    /// Names and string constants, each stored once.
    strings: Vec<Arc<str>>,
    str_idx: HashMap<Arc<str>, usize>,
    /// Constants stored by name (tag, names), each once: the decoder looks
    /// them all up before any body, so a body read later needs nothing
    /// from outside and a name this runtime lacks fails the whole load.
    named: Vec<(u8, String, String)>,
    named_idx: HashMap<(u8, String, String), usize>,
}

impl Enc<'_> {
    /// A constant stored by name: its index in the table of named constants.
    fn named_ref(&mut self, tag: u8, a: &str, b: &str) {
        let key = (tag, a.to_string(), b.to_string());
        let i = match self.named_idx.get(&key) {
            Some(&i) => i,
            None => {
                self.named.push(key.clone());
                self.named_idx.insert(key, self.named.len() - 1);
                self.named.len() - 1
            }
        };
        self.w.u8(8);
        self.w.len(i);
    }

    fn name(&mut self, s: &str) {
        let i = match self.str_idx.get(s) {
            Some(&i) => i,
            None => {
                let a: Arc<str> = Arc::from(s);
                self.strings.push(a.clone());
                self.str_idx.insert(a, self.strings.len() - 1);
                self.strings.len() - 1
            }
        };
        self.w.len(i);
    }

    fn names(&mut self) -> &HashMap<usize, Named> {
        let outside = self.outside;
        self.names.get_or_insert_with(|| {
            let mut m = HashMap::new();
            // Sorted, so the same name is chosen for a value reachable twice.
            let mut mods: Vec<_> = outside.modules.iter().collect();
            mods.sort_by(|a, b| a.0.cmp(b.0));
            for (mname, obj) in mods {
                m.entry(Arc::as_ptr(obj) as usize)
                    .or_insert(Named::Module(mname.to_string()));
                for (n, v) in obj.attrs.read().iter() {
                    if let Some(p) = value_ptr(v) {
                        m.entry(p)
                            .or_insert_with(|| Named::Export(mname.to_string(), n.to_string()));
                    }
                }
            }
            let mut pre: Vec<_> = outside.prelude.iter().collect();
            pre.sort_by(|a, b| a.0.cmp(b.0));
            for (n, v) in pre {
                if let Some(p) = value_ptr(v) {
                    // The prelude wins: it needs no `use`.
                    m.insert(p, Named::Prelude(n.to_string()));
                }
            }
            m
        })
    }

    fn konst(&mut self, v: &Value) -> Result<(), EncodeError> {
        match v {
            Value::None => self.w.u8(0),
            Value::Bool(b) => {
                self.w.u8(1);
                self.w.bool(*b);
            }
            Value::Int(i) => {
                self.w.u8(2);
                self.w.ivar(*i);
            }
            Value::Float(x) => {
                self.w.u8(3);
                self.w.buf.extend_from_slice(&x.to_bits().to_le_bytes());
            }
            Value::Str(_) => {
                self.w.u8(4);
                self.name(v.as_str().unwrap_or_default());
            }
            Value::Kind(k) => {
                self.w.u8(7);
                self.w.str(k.name());
            }
            _ => {
                if let Some(name) = compiler_native_name(v) {
                    self.named_ref(11, name, "");
                    return Ok(());
                }
                let named = value_ptr(v).and_then(|p| self.names().get(&p).cloned());
                match (named, v) {
                    (Some(Named::Prelude(n)), _) => self.named_ref(8, &n, ""),
                    (Some(Named::Export(m, n)), _) => self.named_ref(9, &m, &n),
                    (Some(Named::Module(m)), _) => self.named_ref(10, &m, ""),
                    (None, Value::Bytes(b)) => {
                        self.w.u8(5);
                        self.w.bytes(&b.0);
                    }
                    (None, Value::Tuple(t)) => {
                        self.w.u8(6);
                        self.w.len(t.0.len());
                        for x in t.0.iter() {
                            self.konst(x)?;
                        }
                    }
                    (None, other) => {
                        return Err(EncodeError(format!(
                            "a constant of type {} that is neither plain data nor a built-in",
                            other.type_name()
                        )))
                    }
                }
            }
        }
        Ok(())
    }

    fn slot(&mut self, s: &Arc<GlobalSlot>) -> usize {
        let key = Arc::as_ptr(s) as usize;
        if let Some(&i) = self.slot_idx.get(&key) {
            return i;
        }
        let i = self.slots.len();
        self.slots.push(s.clone());
        self.slot_idx.insert(key, i);
        i
    }

    fn strs(&mut self, v: &[Arc<str>]) {
        self.w.len(v.len());
        for s in v {
            self.name(s);
        }
    }

    fn u32s(&mut self, v: impl ExactSizeIterator<Item = u64>) {
        self.w.len(v.len());
        for x in v {
            self.w.var(x);
        }
    }

    fn code(&mut self, c: &Code) -> Result<(), EncodeError> {
        self.name(&c.name);
        self.w.len(c.instrs.len());
        for i in c.instrs.iter() {
            put_instr(&mut self.w, i);
        }
        // Spans: the body's first, then each as (start - previous start,
        // length, in the body's file or not), which is a byte or two each.
        // Their bytes' length comes first, so a reader can leave them for
        // later (`code::SpanTable`).
        self.w.span(c.span);
        let spans = c.spans.all();
        self.w.len(spans.len());
        let mut table = Writer::default();
        let mut prev = c.span.start;
        for s in spans {
            table.ivar(i64::from(s.start) - i64::from(prev));
            let other = s.file != c.span.file;
            table.var((u64::from(s.end.saturating_sub(s.start)) << 1) | u64::from(other));
            if other {
                table.var(u64::from(s.file.0));
            }
            prev = s.start;
        }
        self.w.bytes(&table.buf);
        self.w.len(c.consts.len());
        for k in c.consts.iter() {
            self.konst(k)?;
        }
        self.w.len(c.globals.len());
        for g in c.globals.iter() {
            let i = self.slot(g);
            self.w.len(i);
        }
        // Each prototype behind its length, so a reader can leave it in
        // the bytes until a function is made of it.
        self.w.len(c.protos.len());
        for p in c.protos.iter() {
            let outer = std::mem::take(&mut self.w.buf);
            let done = self.proto(p.get());
            let proto = std::mem::replace(&mut self.w.buf, outer);
            done?;
            self.w.bytes(&proto);
        }
        // Each struct behind its length too, read when it is first made.
        self.w.len(c.structs.len());
        for s in c.structs.iter() {
            let sp = s
                .get()
                .map_err(|why| EncodeError(format!("a struct of '{}' cannot be read: {why}", c.name)))?;
            let outer = std::mem::take(&mut self.w.buf);
            self.struct_proto(sp);
            let bytes = std::mem::replace(&mut self.w.buf, outer);
            self.w.bytes(&bytes);
        }
        self.w.var(u64::from(c.nregs));
        self.w.var(u64::from(c.ncells));
        self.u32s(c.unbound_regs.iter().map(|&r| u64::from(r)));
        self.u32s(c.inplace.iter().map(|&r| u64::from(r)));
        self.u32s(c.sub_addi.iter().map(|&r| u64::from(r)));
        self.strs(&c.cell_names);
        self.strs(&c.free_names);
        // The inline caches are not stored: `code::InlineCaches::for_instrs`
        // makes them from the instructions.
        self.w.bool(c.has_yield_from);
        Ok(())
    }

    fn proto(&mut self, p: &FuncProto) -> Result<(), EncodeError> {
        if p.param_names.len() != p.nslots() {
            return Err(EncodeError(format!("function '{}': parameter names", p.name)));
        }
        let has_kwonly = p.nkwonly > 0 || !p.kwonly_has_default.is_empty();
        let flags = u8::from(p.has_vararg)
            | u8::from(p.has_kwarg) << 1
            | u8::from(p.simple) << 2
            | u8::from(p.generator) << 3
            | u8::from(p.keeps_first) << 4
            | u8::from(has_kwonly) << 5
            | u8::from(!p.captures.is_empty()) << 6
            | u8::from(!p.checks.is_empty()) << 7;
        self.w.u8(flags);
        self.w.u8(u8::from(p.leaf));
        self.name(&p.name);
        self.w.var(u64::from(p.code.nregs));
        self.w.var(u64::from(p.nparams));
        self.w.var(u64::from(p.ndefaults));
        if has_kwonly {
            self.w.var(u64::from(p.nkwonly));
            self.w.len(p.kwonly_has_default.len());
            for b in p.kwonly_has_default.iter() {
                self.w.bool(*b);
            }
        }
        // As many names as parameters (`nslots`): no count.
        for n in p.param_names.iter() {
            self.name(n);
        }
        if !p.captures.is_empty() {
            self.w.len(p.captures.len());
            for c in p.captures.iter() {
                match c {
                    Capture::Cell(i) => {
                        self.w.u8(0);
                        self.w.var(u64::from(*i));
                    }
                    Capture::Free(i) => {
                        self.w.u8(1);
                        self.w.var(u64::from(*i));
                    }
                }
            }
        }
        if !p.checks.is_empty() {
            self.w.len(p.checks.len());
            for (r, tc) in p.checks.iter() {
                self.w.var(u64::from(*r));
                self.type_check(*tc)?;
            }
        }
        // The body last, its length first, so a decoder can leave it in
        // the bytes until the function runs.
        let outer = std::mem::take(&mut self.w.buf);
        let done = self.code(&p.code);
        let body = std::mem::replace(&mut self.w.buf, outer);
        done?;
        self.w.bytes(&body);
        Ok(())
    }

    fn type_check(&mut self, tc: TypeCheck) -> Result<(), EncodeError> {
        let tag = match tc {
            TypeCheck::Int => 0,
            TypeCheck::Float => 1,
            TypeCheck::Str => 2,
            TypeCheck::Bool => 3,
            TypeCheck::List => 4,
            TypeCheck::Dict => 5,
            TypeCheck::Tuple => 6,
            TypeCheck::NoneType => 7,
            TypeCheck::Tensor(id) => {
                let a = crate::tensor::annot::annotation(id)
                    .ok_or_else(|| EncodeError("an unknown tensor annotation".into()))?;
                self.w.u8(8);
                match &a.dims {
                    None => self.w.u8(0),
                    Some(d) => {
                        self.w.u8(1);
                        self.w.len(d.len());
                        for x in d {
                            match x {
                                Dim::Named(n) => {
                                    self.w.u8(0);
                                    self.w.str(n);
                                }
                                Dim::Fixed(k) => {
                                    self.w.u8(1);
                                    self.w.var(*k as u64);
                                }
                            }
                        }
                    }
                }
                self.w.str(a.dtype.map(DType::name).unwrap_or(""));
                return Ok(());
            }
        };
        self.w.u8(tag);
        Ok(())
    }

    fn struct_proto(&mut self, s: &StructProto) {
        self.name(&s.name);
        self.strs(&s.fields);
        self.w.len(s.has_default.len());
        for b in s.has_default.iter() {
            self.w.bool(*b);
        }
        self.w.len(s.annotations.len());
        for a in s.annotations.iter() {
            match a {
                None => self.w.u8(0),
                Some(t) => {
                    self.w.u8(1);
                    self.name(t);
                }
            }
        }
        self.strs(&s.methods);
        self.w.len(s.method_kinds.len());
        for k in s.method_kinds.iter() {
            self.w.u8(match k {
                MethodKind::Plain => 0,
                MethodKind::Static => 1,
                MethodKind::Property => 2,
            });
        }
        self.w.bool(s.has_base);
        self.w.var(u64::from(s.methods_at));
    }
}

/// A decoded program's tables and bytes, shared by its function bodies
/// that are read only when first run ([`PendingBody`]).
pub(crate) struct Image {
    bytes: Vec<u8>,
    strings: Box<[Arc<str>]>,
    named: Box<[Value]>,
    slots: Box<[Arc<GlobalSlot>]>,
    /// String constants made so far, by string index (shared, as literals are).
    str_vals: parking_lot::Mutex<Vec<Option<Value>>>,
}

impl BodyImage for Image {
    fn read_body(&self, at: &PendingBody) -> Result<Arc<Code>, String> {
        decode_body(self, at).map_err(|e| e.0)
    }

    fn read_proto(&self, at: &PendingProto) -> Result<Arc<FuncProto>, String> {
        decode_proto(self, at).map_err(|e| e.0)
    }

    fn read_struct(&self, at: &PendingProto) -> Result<Arc<StructProto>, String> {
        decode_struct(self, at).map_err(|e| e.0)
    }

    fn read_spans(&self, at: &PendingSpans) -> Result<Box<[Span]>, String> {
        let bytes = self
            .bytes
            .get(at.start..at.end)
            .ok_or_else(|| "span table range".to_string())?;
        span_entries(bytes, at.n, at.body).map_err(|e| e.0)
    }
}

/// A span table's `n` entries (each relative to the one before, the first
/// to `body`'s start), which must fill `bytes` exactly.
fn span_entries(bytes: &[u8], n: usize, body: Span) -> DResult<Box<[Span]>> {
    let mut r = Reader::new(bytes);
    let mut v = Vec::with_capacity(n);
    let mut prev = i64::from(body.start);
    for _ in 0..n {
        // Checked: damaged bytes are an error, never an overflow.
        let start = prev.checked_add(r.ivar()?).ok_or_else(|| bad("span"))?;
        let lf = r.var()?;
        let file = if lf & 1 == 1 { FileId(r.num()?) } else { body.file };
        let start32 = u32::try_from(start).map_err(|_| bad("span"))?;
        let len = u32::try_from(lf >> 1).map_err(|_| bad("span"))?;
        let end = start32.checked_add(len).ok_or_else(|| bad("span"))?;
        v.push(Span::new(file, start32, end));
        prev = start;
    }
    if r.pos != bytes.len() {
        return Err(bad("trailing bytes in a span table"));
    }
    Ok(v.into_boxed_slice())
}

/// Reads a part of `img` left for later (`range` of the image's bytes)
/// with `read`, which must take all of it; `image` is what the bodies it
/// holds are read from later, where it holds any.
fn decode_part<T>(
    img: &Image,
    range: std::ops::Range<usize>,
    image: Option<&Arc<dyn BodyImage>>,
    what: &str,
    read: impl FnOnce(&mut Dec<'_>) -> DResult<T>,
) -> DResult<T> {
    let bytes = img
        .bytes
        .get(range.clone())
        .ok_or_else(|| bad(&format!("{what} range")))?;
    let mut str_vals = img.str_vals.lock();
    let mut d = Dec {
        r: Reader::new(bytes),
        strings: &img.strings,
        named: &img.named,
        slots: &img.slots,
        str_vals: &mut str_vals,
        image,
        base: range.start,
    };
    let part = read(&mut d)?;
    if d.r.pos != bytes.len() {
        return Err(bad(&format!("trailing bytes in a {what}")));
    }
    Ok(part)
}

/// Reads a body left for later; the same checks as any other.
fn decode_body(img: &Image, p: &PendingBody) -> DResult<Arc<Code>> {
    let code = decode_part(img, p.range(), Some(&p.image), "body", |d| d.code(usize::from(p.depth)))?;
    if code.nregs != p.nregs.max(1) {
        return Err(bad("a body's registers"));
    }
    Ok(code)
}

/// Reads a struct left for later; the same checks as any other.
fn decode_struct(img: &Image, p: &PendingProto) -> DResult<Arc<StructProto>> {
    decode_part(img, p.range(), None, "struct", |d| d.struct_proto()).map(Arc::new)
}

/// Reads a prototype left for later; the same checks as any other.
fn decode_proto(img: &Image, p: &PendingProto) -> DResult<Arc<FuncProto>> {
    decode_part(img, p.range(), Some(&p.image), "prototype", |d| {
        d.proto(usize::from(p.depth))
    })
}

/// Reads `p`'s body and every body nested in it, without keeping those not
/// read yet (see `CompiledProgram::read_all_bodies`).
pub(crate) fn read_bodies(p: &FuncProto, depth: usize) -> DResult<()> {
    if depth > 256 {
        return Err(bad("functions nested too deeply"));
    }
    let code = match p.code.pending_body() {
        Some(b) if !p.code.is_read() => b.read().map_err(DecodeError)?,
        _ => p.code.arc().clone(),
    };
    // A span table that does not read gives the body's span, never an error.
    let _ = code.spans.all();
    for st in code.structs.iter() {
        if let (None, Some(at)) = (st.peek(), st.pending_struct()) {
            at.image.read_struct(at).map_err(DecodeError)?;
        }
    }
    code.protos
        .iter()
        .try_for_each(|q| match (q.peek(), q.pending_proto()) {
            (None, Some(at)) => read_bodies(&*at.image.read_proto(at).map_err(DecodeError)?, depth + 1),
            _ => read_bodies(q.get(), depth + 1),
        })
}

struct Dec<'a> {
    r: Reader<'a>,
    strings: &'a [Arc<str>],
    named: &'a [Value],
    slots: &'a [Arc<GlobalSlot>],
    str_vals: &'a mut [Option<Value>],
    /// The program's image, which bodies left for later refer to (`None`
    /// while the image's own tables are read: no prototype is there).
    image: Option<&'a Arc<dyn BodyImage>>,
    /// Where `r`'s bytes start in the image's.
    base: usize,
}

impl Dec<'_> {
    fn name(&mut self) -> DResult<Arc<str>> {
        let i: usize = self.r.num()?;
        self.strings.get(i).cloned().ok_or_else(|| bad("string index"))
    }

    fn str_value(&mut self) -> DResult<Value> {
        let i: usize = self.r.num()?;
        let s = self.strings.get(i).ok_or_else(|| bad("string index"))?;
        let slot = self.str_vals.get_mut(i).ok_or_else(|| bad("string index"))?;
        Ok(slot.get_or_insert_with(|| Value::str(&**s)).clone())
    }

    fn konst(&mut self, depth: usize) -> DResult<Value> {
        if depth > 64 {
            return Err(bad("constants nested too deeply"));
        }
        Ok(match self.r.u8()? {
            0 => Value::None,
            1 => Value::Bool(self.r.bool()?),
            2 => Value::Int(self.r.ivar()?),
            3 => {
                let b = self.r.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Value::Float(f64::from_bits(u64::from_le_bytes(a)))
            }
            4 => self.str_value()?,
            5 => Value::bytes(self.r.bytes()?.to_vec()),
            6 => {
                let n = self.r.len()?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.konst(depth + 1)?);
                }
                Value::tuple(items)
            }
            7 => {
                let n = self.r.str()?;
                let k = ErrorKind::ALL
                    .iter()
                    .find(|k| k.name() == n)
                    .ok_or_else(|| bad("unknown error kind"))?;
                Value::Kind(*k)
            }
            8 => {
                let i: usize = self.r.num()?;
                self.named.get(i).cloned().ok_or_else(|| bad("named constant index"))?
            }
            _ => return Err(bad("unknown constant")),
        })
    }

    fn strs(&mut self) -> DResult<Box<[Arc<str>]>> {
        let n = self.r.len()?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.name()?);
        }
        Ok(v.into_boxed_slice())
    }

    fn nums<T: TryFrom<u64>>(&mut self) -> DResult<Box<[T]>> {
        Ok(self.r.list(|r| r.num::<T>())?.into_boxed_slice())
    }

    /// A prototype or struct stored behind its length, skipped and left
    /// in the image to be read when first made, `depth` functions deep.
    fn pending_part(&mut self, depth: u16) -> DResult<PendingProto> {
        let len = self.r.len()?;
        let start = self.base + self.r.pos;
        self.r.take(len)?;
        let Some(image) = self.image else {
            return Err(bad("a prototype or struct outside the units"));
        };
        Ok(PendingProto {
            image: image.clone(),
            start: u32::try_from(start).map_err(|_| bad("a compiled program over 4 GiB"))?,
            len: u32::try_from(len).map_err(|_| bad("a compiled program over 4 GiB"))?,
            depth,
        })
    }

    fn code(&mut self, depth: usize) -> DResult<Arc<Code>> {
        if depth > 256 {
            return Err(bad("functions nested too deeply"));
        }
        let name = self.name()?;
        let instrs = self.r.list(get_instr)?.into_boxed_slice();
        let span = self.r.span()?;
        let nspans = self.r.len()?;
        if nspans != instrs.len() {
            return Err(bad("spans do not match instructions"));
        }
        let table = self.r.bytes()?;
        let spans = match self.image {
            // Left for later: most bodies of a run never report an error.
            Some(image) => {
                let end = self.base + self.r.pos;
                SpanTable::pending(PendingSpans {
                    image: image.clone(),
                    start: end - table.len(),
                    end,
                    n: nspans,
                    body: span,
                })
            }
            None => SpanTable::ready(span_entries(table, nspans, span)?),
        };
        let n = self.r.len()?;
        let mut consts = Vec::with_capacity(n);
        for _ in 0..n {
            consts.push(self.konst(0)?);
        }
        let n = self.r.len()?;
        let mut globals = Vec::with_capacity(n);
        for _ in 0..n {
            let i: usize = self.r.num()?;
            globals.push(self.slots.get(i).cloned().ok_or_else(|| bad("global slot"))?);
        }
        let n = self.r.len()?;
        let mut protos = Vec::with_capacity(n);
        let inner = u16::try_from(depth + 1).map_err(|_| bad("functions nested too deeply"))?;
        for _ in 0..n {
            protos.push(ProtoSlot::pending(self.pending_part(inner)?));
        }
        let n = self.r.len()?;
        let mut structs = Vec::with_capacity(n);
        for _ in 0..n {
            structs.push(StructSlot::pending(self.pending_part(0)?));
        }
        let nregs: u16 = self.r.num()?;
        let ncells: u16 = self.r.num()?;
        let unbound_regs = self.nums()?;
        let inplace = self.nums()?;
        let sub_addi = self.nums()?;
        let cell_names = self.strs()?;
        let free_names = self.strs()?;
        let has_yield_from = self.r.bool()?;
        let ic = crate::code::InlineCaches::for_instrs(&instrs);
        let leaf = crate::code::leaf_of(&instrs, &consts);
        let code = Code {
            name,
            instrs,
            spans,
            consts: consts.into_boxed_slice(),
            globals: globals.into_boxed_slice(),
            protos: protos.into(),
            structs: structs.into(),
            nregs: nregs.max(1),
            ncells,
            unbound_regs,
            span,
            inplace,
            sub_addi,
            cell_names,
            free_names,
            ic,
            has_yield_from,
            leaf,
        };
        if code.unbound_regs.iter().any(|&r| r >= code.nregs) {
            return Err(bad("register out of range"));
        }
        for i in code.instrs.iter() {
            check_instr(i, &code)?;
        }
        Ok(Arc::new(code))
    }

    /// A prototype's header (see `Enc::proto`: a flags byte, the leaf byte, then only the
    /// parts a function has); its body stays in the bytes ([`PendingBody`]).
    fn proto(&mut self, depth: usize) -> DResult<Arc<FuncProto>> {
        let flags = self.r.u8()?;
        // A hint only: a call checks the body's own `Code::leaf`.
        let leaf = self.r.u8()? != 0;
        let name = self.name()?;
        let nregs: u16 = self.r.num()?;
        let nparams: u16 = self.r.num()?;
        let ndefaults: u16 = self.r.num()?;
        let (nkwonly, kwonly_has_default) = if flags & 1 << 5 != 0 {
            let nkwonly: u16 = self.r.num()?;
            (nkwonly, self.r.list(|r| r.bool())?.into_boxed_slice())
        } else {
            (0, Box::default())
        };
        let (has_vararg, has_kwarg) = (flags & 1 != 0, flags & 1 << 1 != 0);
        let nslots = usize::from(nparams) + usize::from(has_vararg) + usize::from(nkwonly) + usize::from(has_kwarg);
        // What calls rely on: every parameter has a register, defaults
        // are for parameters there are, one flag per keyword-only one.
        if nslots > usize::from(nregs.max(1)) || ndefaults > nparams || kwonly_has_default.len() != usize::from(nkwonly)
        {
            return Err(bad("parameters"));
        }
        let mut param_names = Vec::with_capacity(nslots);
        for _ in 0..nslots {
            param_names.push(self.name()?);
        }
        let captures = if flags & 1 << 6 != 0 {
            self.r
                .list(|r| match r.u8()? {
                    0 => Ok(Capture::Cell(r.num()?)),
                    1 => Ok(Capture::Free(r.num()?)),
                    _ => Err(bad("capture")),
                })?
                .into_boxed_slice()
        } else {
            Box::default()
        };
        let checks = if flags & 1 << 7 != 0 {
            let n = self.r.len()?;
            let mut checks = Vec::with_capacity(n);
            for _ in 0..n {
                let reg: u16 = self.r.num()?;
                if usize::from(reg) >= nslots {
                    return Err(bad("a parameter check"));
                }
                checks.push((reg, self.type_check()?));
            }
            checks.into_boxed_slice()
        } else {
            Box::default()
        };
        let n = self.r.len()?;
        let start = self.base + self.r.pos;
        self.r.take(n)?;
        let code = match self.image {
            Some(image) => LazyCode::pending(PendingBody {
                image: image.clone(),
                start: u32::try_from(start).map_err(|_| bad("a compiled program over 4 GiB"))?,
                len: u32::try_from(n).map_err(|_| bad("a compiled program over 4 GiB"))?,
                depth: u16::try_from(depth).map_err(|_| bad("functions nested too deeply"))?,
                nregs,
            }),
            None => return Err(bad("a prototype outside the units")),
        };
        Ok(Arc::new(FuncProto {
            name,
            code,
            nparams,
            has_vararg,
            nkwonly,
            has_kwarg,
            param_names: param_names.into_boxed_slice(),
            ndefaults,
            kwonly_has_default,
            captures,
            checks,
            simple: flags & 1 << 2 != 0,
            generator: flags & 1 << 3 != 0,
            keeps_first: flags & 1 << 4 != 0,
            leaf,
        }))
    }

    fn type_check(&mut self) -> DResult<TypeCheck> {
        Ok(match self.r.u8()? {
            0 => TypeCheck::Int,
            1 => TypeCheck::Float,
            2 => TypeCheck::Str,
            3 => TypeCheck::Bool,
            4 => TypeCheck::List,
            5 => TypeCheck::Dict,
            6 => TypeCheck::Tuple,
            7 => TypeCheck::NoneType,
            8 => {
                let dims = match self.r.u8()? {
                    0 => None,
                    1 => Some(self.r.list(|r| match r.u8()? {
                        0 => Ok(Dim::Named(r.str()?.to_string())),
                        1 => Ok(Dim::Fixed(r.num()?)),
                        _ => Err(bad("tensor dimension")),
                    })?),
                    _ => return Err(bad("tensor annotation")),
                };
                let dt = self.r.str()?;
                let dtype = if dt.is_empty() {
                    None
                } else {
                    Some(DType::from_name(dt).ok_or_else(|| bad("dtype"))?)
                };
                TypeCheck::Tensor(crate::tensor::annot::intern(TensorAnnot { dims, dtype }))
            }
            _ => return Err(bad("type check")),
        })
    }

    fn struct_proto(&mut self) -> DResult<StructProto> {
        let name = self.name()?;
        let fields = self.strs()?;
        let has_default = self.r.list(|r| r.bool())?.into_boxed_slice();
        let n = self.r.len()?;
        let mut annotations = Vec::with_capacity(n);
        for _ in 0..n {
            annotations.push(match self.r.u8()? {
                0 => None,
                1 => Some(self.name()?),
                _ => return Err(bad("annotation")),
            });
        }
        let annotations = annotations.into_boxed_slice();
        let methods = self.strs()?;
        let method_kinds = self
            .r
            .list(|r| match r.u8()? {
                0 => Ok(MethodKind::Plain),
                1 => Ok(MethodKind::Static),
                2 => Ok(MethodKind::Property),
                _ => Err(bad("method kind")),
            })?
            .into_boxed_slice();
        let has_base = self.r.bool()?;
        let methods_at: u16 = self.r.num()?;
        if has_default.len() != fields.len() || annotations.len() != fields.len() || method_kinds.len() != methods.len()
        {
            return Err(bad("struct"));
        }
        Ok(StructProto {
            name,
            fields,
            has_default,
            annotations,
            methods,
            method_kinds,
            has_base,
            methods_at,
        })
    }
}

// ------------------------------------------------------------ units

/// One unit's parts, as the driver keeps them (`driver::CompiledUnit`).
pub(crate) struct UnitParts {
    pub(crate) name: String,
    pub(crate) path: std::path::PathBuf,
    pub(crate) uses: Vec<ResolvedUse>,
    pub(crate) own: Vec<(Arc<str>, Arc<GlobalSlot>)>,
    pub(crate) inherit: Vec<(Arc<GlobalSlot>, Arc<GlobalSlot>)>,
    pub(crate) exports: Vec<(Arc<str>, Arc<GlobalSlot>)>,
    pub(crate) proto: Arc<FuncProto>,
}

fn path_bytes(p: &std::path::Path) -> &[u8] {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes()
}

fn path_from(b: &[u8]) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStrExt;
    std::path::PathBuf::from(std::ffi::OsStr::from_bytes(b))
}

pub(crate) fn encode_units(units: &[UnitParts], outside: &Outside<'_>) -> Result<Vec<u8>, EncodeError> {
    let mut e = Enc {
        w: Writer::default(),
        outside,
        names: None,
        slots: Vec::new(),
        slot_idx: HashMap::new(),
        strings: Vec::new(),
        str_idx: HashMap::new(),
        named: Vec::new(),
        named_idx: HashMap::new(),
    };
    e.w.len(units.len());
    for u in units {
        e.w.str(&u.name);
        e.w.bytes(path_bytes(&u.path));
        e.w.len(u.uses.len());
        for x in &u.uses {
            e.w.span(x.span);
            e.w.str(&x.binding);
            e.w.bool(x.unqualified);
            match &x.target {
                UseTarget::Builtin(n) => {
                    e.w.u8(0);
                    e.w.str(n);
                }
                UseTarget::File(j) => {
                    e.w.u8(1);
                    e.w.len(*j);
                }
            }
        }
        for list in [&u.own, &u.exports] {
            e.w.len(list.len());
            for (n, s) in list {
                e.name(n);
                let i = e.slot(s);
                e.w.len(i);
            }
        }
        e.w.len(u.inherit.len());
        for (a, b) in &u.inherit {
            let i = e.slot(a);
            e.w.len(i);
            let j = e.slot(b);
            e.w.len(j);
        }
        e.proto(&u.proto)?;
    }
    // Then the slots' table (its names go into the string table too), the
    // named constants', and the output: header, strings, named constants,
    // slots, body.
    let body = std::mem::take(&mut e.w.buf);
    let slots = std::mem::take(&mut e.slots);
    e.w.len(slots.len());
    for s in &slots {
        e.name(&s.name);
        e.w.bool(s.is_const);
        match s.get() {
            None => e.w.u8(0),
            Some(v) => {
                e.w.u8(1);
                e.konst(&v)?;
            }
        }
    }
    let slot_table = std::mem::take(&mut e.w.buf);
    let named = std::mem::take(&mut e.named);
    e.w.len(named.len());
    for (tag, a, b) in &named {
        e.w.u8(*tag);
        e.w.str(a);
        if *tag == 9 {
            e.w.str(b);
        }
    }
    let named_table = std::mem::take(&mut e.w.buf);
    e.w.buf.extend_from_slice(MAGIC);
    e.w.buf.extend_from_slice(&FORMAT.to_le_bytes());
    e.w.str(crate::VERSION);
    let strings = std::mem::take(&mut e.strings);
    e.w.len(strings.len());
    for st in &strings {
        e.w.str(st);
    }
    e.w.buf.extend_from_slice(&named_table);
    e.w.buf.extend_from_slice(&slot_table);
    e.w.buf.extend_from_slice(&body);
    Ok(e.w.buf)
}

/// One named constant of the table, looked up in the runtime that decodes.
fn named_const(r: &mut Reader, outside: &Outside<'_>) -> DResult<Value> {
    Ok(match r.u8()? {
        8 => {
            let n = r.str()?;
            outside
                .prelude
                .get(n)
                .cloned()
                .ok_or_else(|| DecodeError(format!("the prelude has no '{n}'")))?
        }
        9 => {
            let m = r.str()?;
            let n = r.str()?;
            let obj = outside
                .modules
                .get(m)
                .ok_or_else(|| DecodeError(format!("no module '{m}' is compiled in")))?;
            let v = obj.attrs.read().get(n).cloned();
            v.ok_or_else(|| DecodeError(format!("module '{m}' has no '{n}'")))?
        }
        10 => {
            let m = r.str()?;
            let obj = outside
                .modules
                .get(m)
                .ok_or_else(|| DecodeError(format!("no module '{m}' is compiled in")))?;
            Value::Module(obj.clone())
        }
        11 => {
            let n = r.str()?;
            compiler_natives()
                .into_iter()
                .find(|(name, _)| *name == n)
                .map(|(_, v)| v)
                .ok_or_else(|| DecodeError(format!("no compiler native '{n}'")))?
        }
        _ => return Err(bad("unknown named constant")),
    })
}

/// Reads a compiled program: its tables, its units and their prototypes
/// now; each function's body when that function first runs
/// ([`LazyCode`]), from `data`, which the program keeps.
pub(crate) fn decode_units(
    mut data: Vec<u8>,
    range: std::ops::Range<usize>,
    outside: &Outside<'_>,
) -> DResult<Vec<UnitParts>> {
    if range.start > range.end || range.end > data.len() {
        return Err(bad("range"));
    }
    // Positions are the whole buffer's; what follows the range is not ours.
    data.truncate(range.end);
    let mut r = Reader {
        data: &data,
        pos: range.start,
    };
    if r.take(MAGIC.len())? != MAGIC {
        return Err(bad("not a compiled program"));
    }
    let f = r.take(2)?;
    let format = u16::from_le_bytes([f[0], f[1]]);
    if format != FORMAT {
        return Err(DecodeError(format!(
            "compiled-program format {format}, this core reads {FORMAT}"
        )));
    }
    let v = r.str()?;
    if v != crate::VERSION {
        return Err(DecodeError(format!("compiled by core {v}, this is {}", crate::VERSION)));
    }
    let n = r.len()?;
    let mut strings = Vec::with_capacity(n);
    for _ in 0..n {
        strings.push(r.arc_str()?);
    }
    let mut str_vals = vec![None; n];
    let n = r.len()?;
    let mut named = Vec::with_capacity(n);
    for _ in 0..n {
        named.push(named_const(&mut r, outside)?);
    }
    let mut slots = Vec::new();
    let pos = {
        let mut d = Dec {
            r,
            strings: &strings,
            named: &named,
            slots: &[],
            str_vals: &mut str_vals,
            image: None,
            base: 0,
        };
        let n = d.r.len()?;
        slots.reserve(n);
        for _ in 0..n {
            let name = d.name()?;
            let is_const = d.r.bool()?;
            let initial = match d.r.u8()? {
                0 => None,
                1 => Some(d.konst(0)?),
                _ => return Err(bad("slot")),
            };
            slots.push(Arc::new(GlobalSlot::new(name, is_const, initial)));
        }
        d.r.pos
    };
    let image = Arc::new(Image {
        bytes: data,
        strings: strings.into_boxed_slice(),
        named: named.into_boxed_slice(),
        slots: slots.into_boxed_slice(),
        str_vals: parking_lot::Mutex::new(str_vals),
    });
    let shared: Arc<dyn BodyImage> = image.clone();
    let mut str_vals = image.str_vals.lock();
    let mut d = Dec {
        r: Reader {
            data: &image.bytes,
            pos,
        },
        strings: &image.strings,
        named: &image.named,
        slots: &image.slots,
        str_vals: &mut str_vals,
        image: Some(&shared),
        base: 0,
    };
    let nunits = d.r.len()?;
    let mut units = Vec::with_capacity(nunits);
    for ui in 0..nunits {
        let name = d.r.str()?.to_string();
        let path = path_from(d.r.bytes()?);
        let uses = d.r.list(|r| {
            let span = r.span()?;
            let binding = r.str()?.to_string();
            let unqualified = r.bool()?;
            let target = match r.u8()? {
                0 => UseTarget::Builtin(r.str()?.to_string()),
                1 => {
                    let j: usize = r.num()?;
                    if j >= ui {
                        return Err(bad("a unit uses one after it"));
                    }
                    UseTarget::File(j)
                }
                _ => return Err(bad("use target")),
            };
            Ok(ResolvedUse {
                span,
                binding,
                unqualified,
                target,
            })
        })?;
        let mut lists = [Vec::new(), Vec::new()];
        for l in &mut lists {
            let n = d.r.len()?;
            l.reserve(n);
            for _ in 0..n {
                let name = d.name()?;
                let i: usize = d.r.num()?;
                l.push((name, d.slots.get(i).cloned().ok_or_else(|| bad("slot index"))?));
            }
        }
        let [own, exports] = lists;
        let n = d.r.len()?;
        let mut inherit = Vec::with_capacity(n);
        for _ in 0..n {
            let i: usize = d.r.num()?;
            let j: usize = d.r.num()?;
            let a = d.slots.get(i).cloned().ok_or_else(|| bad("slot index"))?;
            let b = d.slots.get(j).cloned().ok_or_else(|| bad("slot index"))?;
            inherit.push((a, b));
        }
        let proto = d.proto(0)?;
        units.push(UnitParts {
            name,
            path,
            uses,
            own,
            inherit,
            exports,
            proto,
        });
    }
    if d.r.pos != d.r.data.len() {
        return Err(bad("trailing bytes"));
    }
    Ok(units)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body() -> Span {
        Span::new(FileId(0), 5, 40)
    }

    #[test]
    fn span_tables_read_what_was_written_and_reject_damage() {
        // (start - previous start) zigzagged, then (length << 1 | other file).
        let spans = span_entries(&[2, 6, 3, 5, 2], 2, body()).unwrap();
        assert_eq!(&*spans, &[Span::new(FileId(0), 6, 9), Span::new(FileId(2), 4, 6)]);
        // A start moved past i64's range, a length past u32's, a start
        // before the file, too few or too many bytes: errors, never a panic.
        let far = [0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0];
        assert!(span_entries(&far, 1, body()).is_err());
        let long = [0, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01];
        assert!(span_entries(&long, 1, body()).is_err());
        assert!(span_entries(&[11, 0], 1, body()).is_err());
        assert!(span_entries(&[2, 6], 2, body()).is_err());
        assert!(span_entries(&[2, 6, 0], 1, body()).is_err());
    }
}
