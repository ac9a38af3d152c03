//! The value model (LANGUAGE.md §3).
//!
//! Invariants:
//! - `Value` is 16 bytes (asserted below) and `Send + Sync`: scalars inline,
//!   everything else behind an `Arc`.
//! - Mutable containers (list, dict, struct fields) guard their contents with
//!   a lock, so concurrent use from several threads can never corrupt them.
//!   Locks are held only for the duration of one primitive operation and never
//!   while calling back into Apsi code (no lock-order deadlocks).
//! - Immutable values (str, tuple, range) need no lock.

use crate::diagnostic::TraceEntry;
use crate::error::ErrorKind;
use crate::syntax::ast::BinOp;
use indexmap::IndexMap;
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::AtomicPtr;
use std::sync::Arc;

pub mod cycles;
pub mod dict;
pub mod dunder;
pub mod function;
pub mod generator;
pub mod globals;
pub mod ic;
pub mod reentry;
pub mod solo;
pub mod sources;
mod strref;
pub mod tasks;
pub(crate) mod trashcan;
pub mod vlock;

pub use crate::value::dict::DictMap;
pub use crate::value::function::Closure;
pub use crate::value::vlock::VLock;

pub type FxBuild = BuildHasherDefault<rustc_hash::FxHasher>;

/// Keyword arguments as passed to a native function.
pub type Kwargs<'a> = &'a [(Arc<str>, Value)];

/// The result of anything that can raise an Apsi error.
pub type VResult<T> = Result<T, Exc>;

/// A raised error travelling up the Rust stack.
pub type Exc = Arc<ErrorObj>;

/// `repr(u8)`: the tag is the first byte and equals the variant's index,
/// and each variant's data follows as in a `repr(C)` struct (a `bool` or an
/// error kind at byte 1, a number or a pointer at offset 8): the layout
/// `Value::words` and `Value::count` read.
#[repr(u8)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// What a local variable's register holds before its first assignment.
    /// It never leaves a register: every read the compiler cannot prove
    /// assigned goes through `CheckBound`, which raises instead.
    ///
    /// It comes right after the scalars on purpose: the variants that own
    /// nothing are then the first six tags (with `Kind`), and "does this
    /// register need a drop" (asked on every register write and for every
    /// register a returning frame clears) is one compare instead of a range
    /// test.
    Unbound,
    /// An error kind as a value: `ValueError` (callable, usable in `except`).
    /// Sixth, with the other variants that own nothing: every later variant
    /// holds one pointer to a count (see [`Value::count`]).
    Kind(ErrorKind),
    Str(StrRef),
    List(Arc<ListObj>),
    Tuple(Arc<TupleObj>),
    Dict(Arc<DictObj>),
    Range(Arc<RangeObj>),
    /// `a:b:s` inside an index (`x[1:3]`); parts are `none` when omitted.
    Slice(Arc<SliceObj>),
    /// A function defined in Apsi (def or lambda) with its captured cells.
    Func(Arc<Closure>),
    /// A function implemented in Rust.
    Native(Arc<NativeFn>),
    /// `obj.method` bound to its receiver.
    BoundMethod(Arc<BoundMethod>),
    StructType(Arc<StructType>),
    Struct(Arc<StructObj>),
    /// An error value: `ValueError("bad")`, or the `e` of `except … as e`.
    Error(Arc<ErrorObj>),
    Module(Arc<ModuleObj>),
    /// A value of a type defined outside the core value model (tensors,
    /// tasks, channels, …), supplied by a module.
    Object(Arc<ObjBox>),
    /// An immutable byte string (`b"GIF\x89"`, LANGUAGE.md §10.13).
    Bytes(Arc<BytesObj>),
    /// A set: members in insertion order (LANGUAGE.md §10.6).
    Set(Arc<SetObj>),
}

const _: () = assert!(
    std::mem::size_of::<Value>() == 16
        && std::mem::size_of::<Option<Value>>() == 16
        && std::mem::align_of::<Value>() == 8
        && std::mem::size_of::<crate::error::ErrorKind>() == 1
);
// A string's count and cached hash share what a `usize` count took.
const _: () = assert!(std::mem::size_of::<StrObj>() <= std::mem::size_of::<StrData>() + std::mem::size_of::<usize>());

fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Value>();
}

impl Clone for Value {
    /// In solo mode (`solo.rs`) the count is raised with a plain load and
    /// store, as [`Value::retain`] raises it, after one tag test; otherwise
    /// atomically, kind by kind. A derived `clone` took a locked increment
    /// for every copy a built-in made (a list's items, a dict's values, a
    /// method's arguments) even while only one thread runs Apsi code.
    #[inline]
    fn clone(&self) -> Value {
        if solo::on() {
            // SAFETY: solo mode is on.
            unsafe { self.retain_solo() };
            // SAFETY: the count was raised for this second owner, a
            // bitwise copy (what each kind's own `clone` makes). Copied
            // whole: a copy built by parts and returned whole stalls on
            // store forwarding where the caller reads it back (go ran 20%
            // slower that way).
            unsafe { std::ptr::read(self) }
        } else {
            self.clone_atomic()
        }
    }
}

impl Value {
    /// `clone` outside solo mode: each kind's own handle is cloned.
    #[inline(never)]
    fn clone_atomic(&self) -> Value {
        match self {
            Value::None => Value::None,
            Value::Bool(b) => Value::Bool(*b),
            Value::Int(i) => Value::Int(*i),
            Value::Float(f) => Value::Float(*f),
            Value::Unbound => Value::Unbound,
            Value::Kind(k) => Value::Kind(*k),
            Value::Str(s) => Value::Str(s.clone()),
            Value::List(a) => Value::List(a.clone()),
            Value::Tuple(a) => Value::Tuple(a.clone()),
            Value::Dict(a) => Value::Dict(a.clone()),
            Value::Range(a) => Value::Range(a.clone()),
            Value::Slice(a) => Value::Slice(a.clone()),
            Value::Func(a) => Value::Func(a.clone()),
            Value::Native(a) => Value::Native(a.clone()),
            Value::BoundMethod(a) => Value::BoundMethod(a.clone()),
            Value::StructType(a) => Value::StructType(a.clone()),
            Value::Struct(a) => Value::Struct(a.clone()),
            Value::Error(a) => Value::Error(a.clone()),
            Value::Module(a) => Value::Module(a.clone()),
            Value::Object(a) => Value::Object(a.clone()),
            Value::Bytes(a) => Value::Bytes(a.clone()),
            Value::Set(a) => Value::Set(a.clone()),
        }
    }

    /// Add one reference to what this value owns (nothing for a scalar),
    /// as `clone` does, without building the copy: the caller copies the
    /// value's parts itself (`words`). In solo mode (`solo.rs`) with a
    /// plain load and store; otherwise through `clone`, whose copy is
    /// never read back.
    #[inline(always)]
    pub fn retain(&self) {
        if solo::on() {
            // SAFETY: solo mode is on.
            unsafe { self.retain_solo() }
        } else {
            std::mem::forget(self.clone_atomic());
        }
    }

    /// [`Value::retain`] for a caller that has just seen solo mode on:
    /// a plain increment, without testing the mode again.
    ///
    /// # Safety
    /// Solo mode is on (`solo.rs`).
    #[inline(always)]
    unsafe fn retain_solo(&self) {
        if let Some(c) = self.count() {
            solo::inc(c);
        }
    }

    /// The reference count of what this value owns, if it owns something.
    ///
    /// Every variant that owns something holds, at offset 8, one pointer
    /// to memory that starts with its count (an `Arc`'s `ArcInner`, a
    /// string's `strref::Inner`), so the count is found with one tag
    /// comparison and one load, whatever the kind: a match over the kinds
    /// was a chain of branches that mispredicted whenever a register's
    /// kind changed (18% of deltablue's mispredicted branches under
    /// callgrind's model). `key_tests::count_is_every_kinds_own` checks
    /// each kind against its `Arc`.
    #[inline(always)]
    fn count(&self) -> Option<&std::sync::atomic::AtomicUsize> {
        if self.owns_nothing() {
            return None;
        }
        // SAFETY: `Value` is `repr(u8)`, 16 bytes, 8-aligned (asserted
        // above), so a variant that owns something keeps its one pointer
        // at offset 8; that pointer's
        // memory starts with the strong count (`solo::arc_count`, checked
        // by `arc_layout_holds` before solo mode starts; `strref::Inner`
        // is `repr(C)` with its count first) and lives while this value does.
        unsafe {
            let p = (self as *const Value as *const u8).add(8) as *const *const std::sync::atomic::AtomicUsize;
            Some(&**p)
        }
    }

    /// Does this value own nothing (a scalar, `unbound` or an error kind)?
    /// These are the first six variants, so this is one comparison of the tag.
    #[inline(always)]
    pub(crate) fn owns_nothing(&self) -> bool {
        matches!(
            self,
            Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Unbound | Value::Kind(_)
        )
    }

    /// In solo mode (`solo.rs`), give up this value's reference with a
    /// plain store when it is not the last one, and say so: the caller then
    /// overwrites the value without dropping it. `false` (nothing changed)
    /// otherwise: the caller drops the value the usual way.
    #[inline(always)]
    pub fn release_solo(&self) -> bool {
        // SAFETY: tested just before.
        solo::on() && unsafe { self.release_solo_unchecked() }
    }

    /// Drop this value, giving up a reference that is not the last one the
    /// solo way ([`Value::release_solo`]) rather than with an atomic
    /// decrement.
    #[inline(always)]
    pub fn give_up(self) {
        if self.release_solo() {
            std::mem::forget(self);
        }
    }

    /// A copy of this value as its parts ([`Words`]: the tag byte, the
    /// byte after it, which holds a `bool` or an error kind, and the word
    /// at offset 8, which holds a number or a pointer): the count is raised
    /// in place (`retain`) and each part is read on its own, with at most
    /// the size it was written with (volatile, so LLVM does not merge them
    /// into one 16-byte load, which stalls on store forwarding when the
    /// value was just written by parts). `clone` is out of line and returns
    /// its copy through memory written by parts, which a store into a
    /// register then read back whole: a stall on every `Move`, field read
    /// or global read in the dispatch loop (`vm/exec.rs`, which stores the
    /// parts with `set_words`).
    #[inline(always)]
    pub fn words(&self) -> Words {
        self.retain();
        self.read_parts()
    }

    /// [`Value::words`] for a caller that has just seen solo mode on
    /// (`solo::on()`): the count is raised with a plain load and store
    /// without testing the mode again (each test is a load of a global, a
    /// test and a branch on the hottest paths of the dispatch loop).
    ///
    /// # Safety
    /// Solo mode is on (`solo.rs`).
    #[inline(always)]
    pub unsafe fn words_solo(&self) -> Words {
        // SAFETY: the caller's.
        unsafe { self.retain_solo() };
        self.read_parts()
    }

    /// [`Value::release_solo`] for a caller that has just seen solo mode on.
    ///
    /// # Safety
    /// Solo mode is on (`solo.rs`).
    #[inline(always)]
    pub unsafe fn release_solo_unchecked(&self) -> bool {
        self.count().is_some_and(solo::dec)
    }

    /// Item `i` of a list (as it is now) or a tuple, as its parts
    /// ([`Value::words`]: the count raised); `None` past the end and for
    /// any other value. Always inlined: its result, returned through
    /// memory by parts and read back whole, stalled `filter`'s loop (5%).
    #[inline(always)]
    pub(crate) fn seq_item_words(&self, i: usize) -> Option<Words> {
        match self {
            Value::List(l) => l.items.read().get(i).map(Value::words),
            Value::Tuple(t) => t.0.get(i).map(Value::words),
            _ => None,
        }
    }

    /// The parts of this value, read one by one (no count changes).
    #[inline(always)]
    fn read_parts(&self) -> Words {
        // SAFETY: `Value` is 16 bytes, 8-aligned (asserted above), every
        // variant's data lies in byte 1 or in the word at offset 8
        // (`key_tests::words_copy_every_kind_of_value`), and parts that
        // are padding are read as `MaybeUninit`.
        unsafe {
            let p = self as *const Value as *const u8;
            Words {
                tag: std::ptr::read_volatile(p),
                b1: std::ptr::read_volatile(p.add(1) as *const std::mem::MaybeUninit<u8>),
                ptr: std::ptr::read_volatile(p.add(8) as *const std::mem::MaybeUninit<u64>),
            }
        }
    }

    /// A copy made through `words`, for callers that need a `Value`.
    #[inline(always)]
    pub fn dup_words(&self) -> Value {
        self.words().into_value()
    }

    /// Move this value out as its parts ([`Words`], read as `words` reads
    /// them), leaving `none`; no count changes hands. A returned value or a
    /// moved argument was usually just written by parts, and a 16-byte
    /// `mem::replace` of it would stall on store forwarding.
    #[inline(always)]
    pub fn take_words(&mut self) -> Words {
        let w = self.read_parts();
        // SAFETY: the value's ownership moved into the parts; the slot is
        // overwritten with a `none`, which owns nothing, without dropping
        // what it held.
        unsafe { std::ptr::write(self, Value::None) };
        w
    }
}

/// The most items [`room_for`] makes room for at once (256 MiB of values):
/// past it (`[f(x) for x in range(10**12)]`) the rest is left to the
/// list's own growth.
const MOST_ROOM: usize = 1 << 24;

/// An empty vector with room for `n` values when that much memory is
/// there to be had (a size hint, capped at [`MOST_ROOM`]); a plain empty
/// one otherwise.
pub fn room_for(n: usize) -> Vec<Value> {
    let mut v = Vec::new();
    let _ = v.try_reserve_exact(n.min(MOST_ROOM));
    v
}

/// Copies of `items` (what `items.to_vec()` makes): each count is raised
/// with `retain` (a plain increment in solo mode, not an atomic one) and
/// the values are then copied whole, which a slice of ints turns into one
/// `memcpy` after a scan of the tags.
pub fn clone_all(items: &[Value]) -> Vec<Value> {
    if !solo::on() {
        return items.to_vec();
    }
    for v in items {
        v.retain();
    }
    let mut out = Vec::with_capacity(items.len());
    // SAFETY: every value's count was raised above, so the bitwise copies
    // own their references, as clones would; `out` has room for them.
    unsafe {
        std::ptr::copy_nonoverlapping(items.as_ptr(), out.as_mut_ptr(), items.len());
        out.set_len(items.len());
    }
    out
}

/// An owned value held as its parts (`Value::words`): the count for it
/// has been raised, so it must become a `Value` again (`into_value`, or
/// `write_to` a slot) or the reference leaks.
pub struct Words {
    tag: u8,
    b1: std::mem::MaybeUninit<u8>,
    ptr: std::mem::MaybeUninit<u64>,
}

impl Words {
    #[inline(always)]
    pub fn into_value(self) -> Value {
        let mut v = std::mem::MaybeUninit::<Value>::uninit();
        // SAFETY: the parts are a whole `Value`'s (the other bytes are
        // padding), and the count raised for them makes this a second
        // owner, as `clone` would.
        unsafe {
            let p = v.as_mut_ptr() as *mut u8;
            p.write(self.tag);
            (p.add(1) as *mut std::mem::MaybeUninit<u8>).write(self.b1);
            (p.add(8) as *mut std::mem::MaybeUninit<u64>).write(self.ptr);
            v.assume_init()
        }
    }

    /// Write the parts into `slot`, whose old value the caller has already
    /// given up (dropped, released by solo counting, or a scalar): two
    /// byte stores and an 8-byte store.
    ///
    /// # Safety
    /// `slot`'s old value must own nothing any more.
    #[inline(always)]
    pub unsafe fn write_to(self, slot: &mut Value) {
        // SAFETY: as for `write_raw`; the caller gave up the old value.
        unsafe { self.write_raw(slot) }
    }

    /// Write the parts into the (possibly uninitialised) value at `p`, as
    /// `write_to` does.
    ///
    /// # Safety
    /// `p` is valid for writes and aligned; what it held is overwritten
    /// without a drop.
    #[inline(always)]
    pub unsafe fn write_raw(self, p: *mut Value) {
        // SAFETY: as for `into_value`: the parts are a whole value's.
        unsafe {
            let p = p as *mut u8;
            std::ptr::write_volatile(p, self.tag);
            std::ptr::write_volatile(p.add(1) as *mut std::mem::MaybeUninit<u8>, self.b1);
            std::ptr::write_volatile(p.add(8) as *mut std::mem::MaybeUninit<u64>, self.ptr);
        }
    }
}

/// Append `w` to `items` by parts: a value just built by parts (a register
/// read by [`Value::words`]) copied whole into the vector would stall on
/// store forwarding (two fifths of `[c for c in s]`).
#[inline(always)]
pub fn push_words(items: &mut Vec<Value>, w: Words) {
    items.reserve(1);
    let len = items.len();
    // SAFETY: `reserve` made room for one more; the slot is written whole
    // before the length covers it.
    unsafe {
        w.write_raw(items.as_mut_ptr().add(len));
        items.set_len(len + 1);
    }
}

impl Value {
    /// A string value from a `String` or a `&str`: a one-character
    /// Latin-1 string is the shared one, and borrowed text short enough to
    /// be stored inline is copied there without an intermediate `String`.
    pub fn str(s: impl StrSource) -> Value {
        let t = s.text();
        if t.len() <= 2 {
            let mut it = t.chars();
            if let (Some(ch), None) = (it.next(), it.next()) {
                if let Some(v) = Value::char_shared(ch) {
                    return v;
                }
            }
        }
        Value::Str(StrRef::new(s.into_obj()))
    }
    /// A one-character string; the ASCII/Latin-1 ones (U+0000–U+00FF) are
    /// shared, as CPython's are (`list(s)`, `for c in s` allocate nothing).
    #[inline]
    pub fn char(ch: char) -> Value {
        match Value::char_shared(ch) {
            Some(v) => v,
            None => Value::Str(StrRef::new(StrObj::from_text(ch.encode_utf8(&mut [0u8; 4])))),
        }
    }
    /// Every character a string operation yields in U+0000..U+00FF is one
    /// shared, immortal string (strref.rs).
    #[inline]
    fn char_shared(ch: char) -> Option<Value> {
        u8::try_from(u32::from(ch)).ok().map(Value::ascii_char)
    }
    /// The one-character string of an ASCII byte (or of U+0000..U+00FF
    /// for any byte): shared and immortal.
    #[inline(always)]
    pub fn ascii_char(b: u8) -> Value {
        Value::Str(StrRef::latin1(b))
    }
    /// The characters of `s` as one-character strings, in order; those of
    /// U+0000..U+00FF shared (`list(s)`, `tuple(s)`, a comprehension's
    /// source).
    pub fn chars_of(s: &StrObj) -> Vec<Value> {
        let text = s.as_str();
        if s.is_ascii() {
            let mut out = Vec::with_capacity(text.len());
            out.extend(text.bytes().map(Value::ascii_char));
            return out;
        }
        let mut out = Vec::with_capacity(s.char_len());
        out.extend(text.chars().map(Value::char));
        out
    }
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Arc::new(ListObj::new(items)))
    }
    pub fn tuple(items: Vec<Value>) -> Value {
        Value::Tuple(Arc::new(TupleObj(SmallVec::from_vec(items))))
    }
    /// A tuple of items collected without a `Vec` in between.
    pub fn tuple_small(items: SmallVec<[Value; 3]>) -> Value {
        Value::Tuple(Arc::new(TupleObj(items)))
    }
    pub fn dict(map: DictMap) -> Value {
        Value::Dict(Arc::new(DictObj { map: VLock::new(map) }))
    }
    pub fn empty_dict() -> Value {
        Value::dict(DictMap::new())
    }
    pub fn bytes(data: Vec<u8>) -> Value {
        Value::Bytes(Arc::new(BytesObj(data.into_boxed_slice())))
    }
    /// A set of the keys of `members` (their values are unused; `none`).
    pub fn set(members: DictMap) -> Value {
        Value::Set(Arc::new(SetObj {
            map: VLock::new(members),
        }))
    }

    /// The name of the value's type, as `type(x)` and error messages say it.
    pub fn type_name(&self) -> &str {
        match self {
            Value::None => "none",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::List(_) => "list",
            Value::Tuple(_) => "tuple",
            Value::Dict(_) => "dict",
            Value::Range(_) => "range",
            Value::Slice(_) => "slice",
            Value::Func(_) | Value::Native(_) | Value::BoundMethod(_) => "function",
            Value::StructType(_) => "type",
            Value::Struct(s) => &s.ty.name,
            Value::Kind(_) => "type",
            Value::Error(_) => "error",
            Value::Module(_) => "module",
            Value::Object(o) => o.0.type_name(),
            Value::Unbound => "unbound",
            Value::Bytes(_) => "bytes",
            Value::Set(_) => "set",
        }
    }

    /// Truthiness (LANGUAGE.md §3). Objects may raise (a tensor of more than one element).
    pub fn truthy(&self) -> VResult<bool> {
        Ok(match self {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.as_str().is_empty(),
            Value::List(l) => !l.items.read().is_empty(),
            Value::Tuple(t) => !t.0.is_empty(),
            Value::Dict(d) => !d.map.read().is_empty(),
            Value::Range(r) => !r.is_empty(),
            Value::Bytes(b) => !b.0.is_empty(),
            Value::Set(s) => !s.map.read().is_empty(),
            Value::Object(o) => return o.0.truthy(),
            Value::Struct(s) => return crate::value::dunder::truthy(s),
            _ => true,
        })
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s.as_str()),
            _ => None,
        }
    }

    /// Identity comparison (`is`).
    pub fn is(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::None, Value::None) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a.to_bits() == b.to_bits(),
            (Value::Str(a), Value::Str(b)) => StrRef::ptr_eq(a, b),
            (Value::List(a), Value::List(b)) => Arc::ptr_eq(a, b),
            (Value::Tuple(a), Value::Tuple(b)) => Arc::ptr_eq(a, b),
            (Value::Dict(a), Value::Dict(b)) => Arc::ptr_eq(a, b),
            (Value::Range(a), Value::Range(b)) => Arc::ptr_eq(a, b),
            (Value::Func(a), Value::Func(b)) => Arc::ptr_eq(a, b),
            (Value::Native(a), Value::Native(b)) => Arc::ptr_eq(a, b),
            (Value::BoundMethod(a), Value::BoundMethod(b)) => Arc::ptr_eq(a, b),
            (Value::StructType(a), Value::StructType(b)) => Arc::ptr_eq(a, b),
            (Value::Struct(a), Value::Struct(b)) => Arc::ptr_eq(a, b),
            (Value::Kind(a), Value::Kind(b)) => a == b,
            (Value::Error(a), Value::Error(b)) => Arc::ptr_eq(a, b),
            (Value::Module(a), Value::Module(b)) => Arc::ptr_eq(a, b),
            (Value::Object(a), Value::Object(b)) => Arc::ptr_eq(a, b),
            (Value::Bytes(a), Value::Bytes(b)) => Arc::ptr_eq(a, b),
            (Value::Set(a), Value::Set(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::None => write!(f, "none"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x:?}"),
            Value::Str(s) => write!(f, "{:?}", s.as_str()),
            other => write!(f, "<{}>", other.type_name()),
        }
    }
}

pub use strref::StrRef;

/// An immutable Unicode string, indexed by character.
///
/// Short strings (up to [`StrObj::INLINE`] bytes) live inside the object, so
/// a `StrRef` is one allocation for them.
pub struct StrObj {
    data: StrData,
    /// Number of characters (`len`); equals the byte length for ASCII text.
    /// `u32::MAX` for a string that long or longer: counted when asked.
    nchars: u32,
    /// The string's hash for dict keys and sets, computed on first use
    /// (0: not yet), as CPython caches it. With `nchars` it fits the
    /// padding a `usize` count had: a string is no bigger than before.
    hash: std::sync::atomic::AtomicU32,
}

/// A character count as stored (saturated: see `StrObj::nchars`).
#[inline]
fn count32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Invariants: a string of at most `StrObj::INLINE` bytes is `Inline` and
/// a longer one `Heap`; the inline buffer's bytes past the length are 0.
/// So two strings are equal exactly when both are inline with equal
/// buffers and lengths, or both are on the heap with equal text
/// (`StrObj::text_eq`).
enum StrData {
    Inline(u8, [u8; StrObj::INLINE]),
    Heap(String),
}

impl StrObj {
    /// The longest string (in bytes) stored inline.
    pub const INLINE: usize = 22;

    pub fn new(s: String) -> StrObj {
        if s.len() <= Self::INLINE {
            return StrObj::from_text(&s);
        }
        let nchars = count32(if s.is_ascii() { s.len() } else { s.chars().count() });
        StrObj {
            data: StrData::Heap(s),
            nchars,
            hash: Default::default(),
        }
    }

    /// Build from a borrowed string (no intermediate `String` for short text).
    pub fn from_text(s: &str) -> StrObj {
        let nchars = count32(if s.is_ascii() { s.len() } else { s.chars().count() });
        if s.len() <= Self::INLINE {
            let mut buf = [0u8; Self::INLINE];
            buf[..s.len()].copy_from_slice(s.as_bytes());
            StrObj {
                data: StrData::Inline(s.len() as u8, buf),
                nchars,
                hash: Default::default(),
            }
        } else {
            StrObj {
                data: StrData::Heap(s.to_string()),
                nchars,
                hash: Default::default(),
            }
        }
    }

    /// The decimal text of an int, written straight into the inline buffer
    /// (at most 20 digits and a sign, all ASCII: no validation, no copy),
    /// two digits at a time from the end.
    pub fn from_int(i: i64) -> StrObj {
        const PAIRS: [u8; 200] = {
            let mut t = [0u8; 200];
            let mut k = 0;
            while k < 100 {
                t[2 * k] = b'0' + (k / 10) as u8;
                t[2 * k + 1] = b'0' + (k % 10) as u8;
                k += 1;
            }
            t
        };
        let mut n = i.unsigned_abs();
        let digits = n.checked_ilog10().unwrap_or(0) as usize + 1;
        let len = digits + (i < 0) as usize;
        let mut buf = [0u8; Self::INLINE];
        let mut pos = len;
        while n >= 100 {
            let r = (n % 100) as usize * 2;
            n /= 100;
            pos -= 2;
            buf[pos] = PAIRS[r];
            buf[pos + 1] = PAIRS[r + 1];
        }
        if n >= 10 {
            let r = n as usize * 2;
            buf[pos - 2] = PAIRS[r];
            buf[pos - 1] = PAIRS[r + 1];
        } else {
            buf[pos - 1] = b'0' + n as u8;
        }
        if i < 0 {
            buf[0] = b'-';
        }
        StrObj {
            data: StrData::Inline(len as u8, buf),
            nchars: len as u32,
            hash: Default::default(),
        }
    }

    /// Whether two strings hold the same text: short strings compare their
    /// fixed-size inline buffers (a few word compares, no `memcmp` call),
    /// which the `StrData` invariants make exact.
    #[inline]
    pub fn text_eq(&self, other: &StrObj) -> bool {
        match (&self.data, &other.data) {
            (StrData::Inline(n, a), StrData::Inline(m, b)) => n == m && a == b,
            (StrData::Heap(x), StrData::Heap(y)) => x == y,
            _ => false,
        }
    }

    /// Append `t` (`s += t` on a string no one else holds: `StrRef::get_mut`).
    /// A heap string grows by doubling, so a loop of appends is linear.
    pub fn append(&mut self, t: &StrObj) {
        let add = t.as_str();
        if add.is_empty() {
            return;
        }
        let nchars = if self.nchars == u32::MAX || t.nchars == u32::MAX {
            u32::MAX
        } else {
            count32(self.nchars as usize + t.nchars as usize)
        };
        match &mut self.data {
            StrData::Inline(n, buf) if *n as usize + add.len() <= Self::INLINE => {
                let at = *n as usize;
                buf[at..at + add.len()].copy_from_slice(add.as_bytes());
                *n += add.len() as u8;
            }
            StrData::Inline(..) => {
                let mut s = String::with_capacity((2 * (self.as_str().len() + add.len())).max(64));
                s.push_str(self.as_str());
                s.push_str(add);
                self.data = StrData::Heap(s);
            }
            StrData::Heap(s) => s.push_str(add),
        }
        self.nchars = nchars;
        *self.hash.get_mut() = 0;
    }

    /// For an inline string: its byte length and the whole inline buffer
    /// (bytes past the length are unspecified but initialized), so callers
    /// can copy a fixed-size block instead of calling `memcpy`.
    #[inline]
    pub fn inline_block(&self) -> Option<(usize, &[u8; StrObj::INLINE])> {
        match &self.data {
            StrData::Inline(n, buf) => Some((*n as usize, buf)),
            StrData::Heap(_) => None,
        }
    }

    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.data {
            StrData::Inline(n, buf) => {
                let bytes = buf.get(..*n as usize).unwrap_or(&[]);
                // SAFETY: the bytes were copied from a `&str` whole, so they are UTF-8.
                unsafe { std::str::from_utf8_unchecked(bytes) }
            }
            StrData::Heap(s) => s,
        }
    }
    #[inline]
    pub fn is_ascii(&self) -> bool {
        self.char_len() == self.as_str().len()
    }
    /// Length in characters.
    #[inline]
    pub fn char_len(&self) -> usize {
        if self.nchars == u32::MAX {
            return self.as_str().chars().count();
        }
        self.nchars as usize
    }
    /// The hash of the text (never 0), computed once and cached; dict keys
    /// and set members hash a string through it.
    #[inline]
    pub fn hash32(&self) -> u32 {
        use std::sync::atomic::Ordering::Relaxed;
        let h = self.hash.load(Relaxed);
        if h != 0 {
            return h;
        }
        let mut st = rustc_hash::FxHasher::default();
        self.as_str().hash(&mut st);
        let m = st.finish().wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let h = ((m >> 32) as u32).max(1);
        self.hash.store(h, Relaxed);
        h
    }
    /// The `i`-th character (0-based, non-negative, in range).
    pub fn char_at(&self, i: usize) -> Option<char> {
        if self.is_ascii() {
            self.as_str().as_bytes().get(i).map(|&b| b as char)
        } else {
            self.as_str().chars().nth(i)
        }
    }
}

#[cfg(test)]
mod str_tests {
    use super::StrObj;

    #[test]
    fn ints_print_as_rust_formats_them() {
        let mut cases = vec![
            0i64,
            1,
            -1,
            9,
            10,
            11,
            99,
            100,
            101,
            999,
            1000,
            -10,
            -99,
            -100,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ];
        for p in 0..19 {
            let x = 10i64.pow(p);
            cases.extend([x - 1, x, x + 1, -x, -(x - 1), -(x + 1)]);
        }
        let mut v = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..10_000 {
            v ^= v << 13;
            v ^= v >> 7;
            v ^= v << 17;
            cases.push(v as i64);
            cases.push((v >> (v % 64)) as i64);
        }
        for i in cases {
            let o = StrObj::from_int(i);
            assert_eq!(o.as_str(), i.to_string(), "{i}");
            assert_eq!(o.char_len(), i.to_string().len());
        }
    }

    #[test]
    fn short_and_long_strings_round_trip() {
        for s in [
            "",
            "a",
            "héllo wörld",
            "0123456789012345678901",
            "01234567890123456789012",
            "ünïcödé ünïcödé ünïcödé",
        ] {
            let o = StrObj::new(s.to_string());
            assert_eq!(o.as_str(), s);
            assert_eq!(o.char_len(), s.chars().count());
            assert_eq!(StrObj::from_text(s).as_str(), s);
            assert_eq!(o.char_at(1), s.chars().nth(1));
        }
    }

    #[test]
    fn appending_keeps_the_layout_invariants() {
        let mut o = StrObj::from_text("ab");
        let piece = StrObj::from_text("cdé");
        let mut want = String::from("ab");
        for _ in 0..20 {
            o.append(&piece);
            want.push_str("cdé");
            assert_eq!(o.as_str(), want);
            assert_eq!(o.char_len(), want.chars().count());
            // Equal to a string built in one go, inline or on the heap alike.
            assert!(o.text_eq(&StrObj::new(want.clone())));
            assert_eq!(o.hash32(), StrObj::new(want.clone()).hash32());
        }
        assert!(!StrObj::from_text("ab").text_eq(&StrObj::from_text("abc")));
        assert!(StrObj::from_int(42).text_eq(&StrObj::from_text("42")));
    }

    #[test]
    fn ints_format_inline() {
        for i in [0, 5, -5, 42, -1_000_000, i64::MAX, i64::MIN] {
            let o = StrObj::from_int(i);
            assert_eq!(o.as_str(), i.to_string());
            assert_eq!(o.char_len(), i.to_string().len());
        }
    }
}

/// What `Value::str` takes: owned text (moved into the string when it is
/// long) or borrowed text (copied once, inline when short).
pub trait StrSource {
    fn text(&self) -> &str;
    fn into_obj(self) -> StrObj;
}

impl StrSource for String {
    fn text(&self) -> &str {
        self
    }
    fn into_obj(self) -> StrObj {
        StrObj::new(self)
    }
}

impl StrSource for &str {
    fn text(&self) -> &str {
        self
    }
    fn into_obj(self) -> StrObj {
        StrObj::from_text(self)
    }
}

impl StrSource for &String {
    fn text(&self) -> &str {
        self
    }
    fn into_obj(self) -> StrObj {
        StrObj::from_text(self)
    }
}

/// A growable list, shared by reference.
pub struct ListObj {
    pub items: VLock<Vec<Value>>,
}

impl ListObj {
    /// The items of `v` when it is a list that only this reference holds
    /// (a temporary handed straight to a built-in: `list(reversed(xs))`,
    /// `sorted([…])`), taken out and leaving it empty; `None` otherwise.
    /// Nothing else can see such a list, so taking its items is the same
    /// as copying them, without the copy.
    pub(crate) fn take_sole(v: &Value) -> Option<Vec<Value>> {
        match v {
            Value::List(l) if Arc::strong_count(l) == 1 => Some(std::mem::take(&mut *l.items.write())),
            _ => None,
        }
    }

    /// Is `v` a list that only this reference holds (see [`Self::take_sole`])?
    pub(crate) fn is_sole(v: &Value) -> bool {
        matches!(v, Value::List(l) if Arc::strong_count(l) == 1)
    }
}

impl Drop for ListObj {
    /// A list of numbers or one-character strings (the common large lists)
    /// is freed without a drop call per item: one scan says no item owns
    /// anything (the shared one-character strings are immortal).
    /// Items that may free containers in turn (nested lists, instances) go
    /// through the trashcan (`trashcan.rs`), so deep nesting is not freed
    /// recursively.
    fn drop(&mut self) {
        let items = self.items.get_mut();
        match trashcan::holdings(items) {
            trashcan::Holds::Nothing => {
                // SAFETY: these values own nothing, so not dropping them
                // leaks nothing; the buffer itself is freed by `Vec`'s drop.
                unsafe { items.set_len(0) }
            }
            trashcan::Holds::Containers => trashcan::release_list(items),
            trashcan::Holds::Leaves => {}
        }
    }
}

impl ListObj {
    pub fn new(items: Vec<Value>) -> ListObj {
        ListObj {
            items: VLock::new(items),
        }
    }
}

/// An immutable tuple. Up to three items sit in the tuple's own
/// allocation (pairs and triples are most tuples a program builds).
pub struct TupleObj(pub SmallVec<[Value; 3]>);

impl Drop for TupleObj {
    /// Nested tuples (`(head, rest)` cells) are freed through the trashcan
    /// (`trashcan.rs`), not recursively.
    #[inline]
    fn drop(&mut self) {
        trashcan::drop_items(&mut self.0);
    }
}

/// An immutable byte string.
pub struct BytesObj(pub Box<[u8]>);

/// A slice `start:stop:step` as an index value; omitted parts are `Value::None`.
pub struct SliceObj {
    pub start: Value,
    pub stop: Value,
    pub step: Value,
}

/// A dict keeping insertion order.
pub struct DictObj {
    pub map: VLock<DictMap>,
}

impl Drop for DictObj {
    /// Keys and values go through the trashcan (`trashcan.rs`): nested
    /// dicts are not freed recursively.
    fn drop(&mut self) {
        trashcan::release_map(self.map.get_mut());
    }
}

/// A set keeping insertion order: its members are the keys of `map`
/// (values unused, `none`), so hashing and equality are the dict's.
pub struct SetObj {
    pub map: VLock<DictMap>,
}

impl Drop for SetObj {
    fn drop(&mut self) {
        trashcan::release_map(self.map.get_mut());
    }
}

/// `range(start, stop, step)`; `step != 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeObj {
    pub start: i64,
    pub stop: i64,
    pub step: i64,
}

impl RangeObj {
    /// The `i`-th element (`i >= 0`) while it has not reached `stop`, for a
    /// loop stepping through the range (no length division per step;
    /// overflow ends the range).
    #[inline(always)]
    pub fn item(&self, i: i64) -> Option<i64> {
        let x = i.checked_mul(self.step).and_then(|d| self.start.checked_add(d))?;
        ((self.step > 0 && x < self.stop) || (self.step < 0 && x > self.stop)).then_some(x)
    }
    /// The number of items, saturated at `i64::MAX` (a range over more
    /// than half the 64-bit ints has more; `len_wide` is exact).
    pub fn len(&self) -> i64 {
        // `range(n)` and `range(a, b)`: no 128-bit division (a library
        // call of about 60 instructions) when the span fits in 64 bits.
        if self.step == 1 {
            if let Some(d) = self.stop.checked_sub(self.start) {
                return d.max(0);
            }
        }
        i64::try_from(self.len_wide()).unwrap_or(i64::MAX)
    }
    /// The exact number of items.
    pub fn len_wide(&self) -> i128 {
        let (start, stop, step) = (self.start as i128, self.stop as i128, self.step as i128);
        if step > 0 {
            if stop > start {
                (stop - start + step - 1) / step
            } else {
                0
            }
        } else if start > stop {
            (start - stop - step - 1) / (-step)
        } else {
            0
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A dict key: a hashable value with Python's equality (`1 == 1.0 == true`
/// hash alike). Construct with [`HashKey::new`], which refuses unhashable values.
#[derive(Clone)]
pub struct HashKey(Value);

impl HashKey {
    pub fn new(v: Value) -> VResult<HashKey> {
        // A struct's `__hash__` is called once here, so its errors surface.
        if let Value::Struct(s) = &v {
            if matches!(s.ty.hash_mode, HashMode::Method) {
                if let Some(r) = crate::value::dunder::hash(&v) {
                    r?;
                }
            }
        }
        if key_hashable(&v) {
            Ok(HashKey(v))
        } else {
            Err(ErrorObj::new(
                ErrorKind::TypeError,
                format!("unhashable type: '{}'", unhashable_part(&v).type_name()),
            ))
        }
    }
    /// An int key (always hashable).
    #[inline]
    pub fn int(i: i64) -> HashKey {
        HashKey(Value::Int(i))
    }
    pub fn value(&self) -> &Value {
        &self.0
    }
    pub fn into_value(self) -> Value {
        self.0
    }
}

/// The value that makes `v` unhashable (a list inside a tuple is named as
/// Python names it: `unhashable type: 'list'`).
fn unhashable_part(v: &Value) -> &Value {
    match v {
        Value::Tuple(t) => t.0.iter().find(|x| !key_hashable(x)).map_or(v, unhashable_part),
        _ => v,
    }
}

fn key_hashable(v: &Value) -> bool {
    match v {
        Value::List(_) | Value::Dict(_) | Value::Set(_) => false,
        Value::Struct(s) => !matches!(s.ty.hash_mode, HashMode::Unhashable),
        Value::Tuple(t) => t.0.iter().all(key_hashable),
        Value::Object(o) => o.0.hashable(),
        _ => true,
    }
}

impl Hash for HashKey {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Int keys (the common case) hash inline; `hash_value` agrees.
        if let Value::Int(i) = &self.0 {
            i.hash(state)
        } else {
            hash_value(&self.0, state)
        }
    }
}

fn hash_value<H: Hasher>(v: &Value, state: &mut H) {
    match v {
        Value::None => 0u8.hash(state),
        Value::Bool(b) => (*b as i64).hash(state),
        Value::Int(i) => i.hash(state),
        Value::Float(f) => {
            if f.fract() == 0.0 && *f >= -9.2e18 && *f <= 9.2e18 {
                (*f as i64).hash(state)
            } else {
                f.to_bits().hash(state)
            }
        }
        Value::Str(s) => state.write_u32(s.hash32()),
        Value::Bytes(b) => {
            // Apart from str's hash: bytes never equal a str.
            1u8.hash(state);
            b.0.hash(state)
        }
        Value::Tuple(t) => {
            t.0.len().hash(state);
            for x in t.0.iter() {
                hash_value(x, state)
            }
        }
        Value::Kind(k) => k.hash(state),
        Value::Struct(s) if matches!(s.ty.hash_mode, HashMode::Method) => {
            let h = crate::value::dunder::hash(v).and_then(|r| r.ok()).unwrap_or(0);
            h.hash(state)
        }
        other => {
            // Identity hash for reference types compared with `is`.
            let p: *const u8 = match other {
                Value::Func(a) => Arc::as_ptr(a) as *const u8,
                Value::Native(a) => Arc::as_ptr(a) as *const u8,
                Value::StructType(a) => Arc::as_ptr(a) as *const u8,
                Value::Struct(a) => Arc::as_ptr(a) as *const u8,
                Value::Module(a) => Arc::as_ptr(a) as *const u8,
                Value::Object(a) => Arc::as_ptr(a) as *const u8,
                Value::Range(a) => Arc::as_ptr(a) as *const u8,
                _ => std::ptr::null(),
            };
            (p as usize).hash(state)
        }
    }
}

impl PartialEq for HashKey {
    #[inline]
    fn eq(&self, other: &HashKey) -> bool {
        if let (Value::Int(a), Value::Int(b)) = (&self.0, &other.0) {
            return a == b;
        }
        key_eq(&self.0, &other.0)
    }
}
impl Eq for HashKey {}

/// Equality for hashable values (used by dict keys).
pub fn key_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::None, Value::None) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Int(x), Value::Float(y)) | (Value::Float(y), Value::Int(x)) => {
            (*x as f64) == *y && y.fract() == 0.0 && (*y as i64) == *x
        }
        (Value::Bool(x), Value::Int(y)) | (Value::Int(y), Value::Bool(x)) => (*x as i64) == *y,
        (Value::Bool(x), Value::Float(y)) | (Value::Float(y), Value::Bool(x)) => (*x as i64 as f64) == *y,
        (Value::Str(x), Value::Str(y)) => StrRef::ptr_eq(x, y) || x.text_eq(y),
        (Value::Bytes(x), Value::Bytes(y)) => x.0 == y.0,
        (Value::Tuple(x), Value::Tuple(y)) => {
            x.0.len() == y.0.len() && x.0.iter().zip(y.0.iter()).all(|(p, q)| key_eq(p, q))
        }
        (Value::Struct(x), _) | (_, Value::Struct(x)) if !matches!(x.ty.hash_mode, HashMode::Identity) => {
            a.is(b) || crate::value::dunder::eq(a, b).and_then(|r| r.ok()).unwrap_or(false)
        }
        _ => a.is(b),
    }
}

/// A Rust function callable from Apsi.
pub type NativeFnPtr = fn(&mut dyn Caller, &[Value], Kwargs) -> VResult<Value>;

/// A Rust closure callable from Apsi (for functions that carry state).
pub type NativeClosure = dyn Fn(&mut dyn Caller, &[Value], Kwargs) -> VResult<Value> + Send + Sync;

pub enum NativeImpl {
    Ptr(NativeFnPtr),
    Closure(Box<NativeClosure>),
}

pub struct NativeFn {
    pub name: Arc<str>,
    pub imp: NativeImpl,
}

impl NativeFn {
    pub fn new(name: &str, f: NativeFnPtr) -> NativeFn {
        NativeFn {
            name: name.into(),
            imp: NativeImpl::Ptr(f),
        }
    }
    pub fn closure(name: &str, f: Box<NativeClosure>) -> NativeFn {
        NativeFn {
            name: name.into(),
            imp: NativeImpl::Closure(f),
        }
    }
    #[inline]
    pub fn call(&self, caller: &mut dyn Caller, args: &[Value], kwargs: Kwargs) -> VResult<Value> {
        match &self.imp {
            NativeImpl::Ptr(f) => f(caller, args, kwargs),
            NativeImpl::Closure(f) => f(caller, args, kwargs),
        }
    }
}

/// What a native function may ask of the interpreter that called it.
pub trait Caller {
    /// Call any callable Apsi value.
    fn call(&mut self, f: &Value, args: &[Value], kwargs: Kwargs) -> VResult<Value>;
    /// Write program output (stdout; captured by tests and the REPL).
    fn write_out(&mut self, text: &str) -> VResult<()>;
    /// Flush buffered program output (before reading input, for example).
    fn flush_out(&mut self) -> VResult<()> {
        Ok(())
    }
    /// A caller for running Apsi code on another OS thread (thread pools),
    /// sharing this interpreter's globals and output. `None` where not supported.
    fn new_thread_caller(&self) -> Option<Box<dyn Caller + Send>> {
        None
    }
    /// The registry of spawned tasks of this interpreter (the runtime waits
    /// for them at exit and reports failures nobody waited for). `None`
    /// where there is no interpreter.
    fn tasks(&self) -> Option<Arc<crate::value::tasks::TaskRegistry>> {
        None
    }
    /// What fetches `http(s)://` sources for this program
    /// ([`sources::local_source`]); `None` when it may not read the network.
    fn url_source(&self) -> Option<Arc<dyn sources::UrlSource>> {
        None
    }
    /// Run a generator to its next `yield` (`value::generator`). Only an
    /// interpreter can; other callers refuse.
    fn resume_generator(&mut self, g: &crate::value::generator::GenObj) -> VResult<crate::value::generator::Step> {
        Err(ErrorObj::new(
            ErrorKind::TypeError,
            format!("generator '{}' cannot run inside this operation", g.name()),
        ))
    }
}

/// A method bound to its receiver: calling it calls `func(receiver, *args)`.
pub struct BoundMethod {
    pub receiver: Value,
    pub func: Value,
}

impl Drop for BoundMethod {
    fn drop(&mut self) {
        if trashcan::frees_nested(&self.receiver) || trashcan::frees_nested(&self.func) {
            let r = std::mem::replace(&mut self.receiver, Value::None);
            let f = std::mem::replace(&mut self.func, Value::None);
            trashcan::release([r, f]);
        }
    }
}

/// A struct declaration (LANGUAGE.md §6, §10).
///
/// Invariants: everything inherited is flattened in at creation, so a
/// lookup never walks the parent chain: `fields` holds the parent's fields
/// first; `methods`, `statics`, `properties` and `consts` hold the
/// inherited entries overridden by this struct's own. `parent` is kept for
/// `isinstance`, `super()` and error matching only.
pub struct StructType {
    /// A number no other struct type of this process has, or 0 once 2^32
    /// numbers are used up: what inline caches are keyed by (`value::ic`);
    /// 0 matches no cache entry.
    pub id: u32,
    /// The id of the struct type that gave this one its field list: its
    /// own, or its parent's layout when it declares no fields of its own.
    /// Field caches are keyed by it (a field's index is the same in every
    /// type of one layout, and a name that is a field in one is a field in
    /// all), so `self.x` in an inherited method stays a hit across the
    /// subtypes; method caches are keyed by `id`.
    pub layout: u32,
    pub name: Arc<str>,
    pub fields: Vec<StructField>,
    /// Methods by name (functions taking `self` first), inherited ones included.
    pub methods: IndexMap<Arc<str>, Value, FxBuild>,
    /// `@staticmethod`s: called without `self`, through the struct or an instance.
    pub statics: IndexMap<Arc<str>, Value, FxBuild>,
    /// `@property` getters (functions of `self`).
    pub properties: IndexMap<Arc<str>, Value, FxBuild>,
    /// Struct constants (`RATE = 0.5` in the body), inherited ones included;
    /// filled in order while the `struct` statement runs, read-only after.
    pub consts: VLock<IndexMap<Arc<str>, Value, FxBuild>>,
    pub parent: Option<Arc<StructType>>,
    /// `Some(k)` when this struct is an error kind: `k` is the built-in kind
    /// it descends from (`Error` for `struct AppError(Error)`).
    pub error_kind: Option<ErrorKind>,
    /// How instances hash as dict keys and set members.
    pub hash_mode: HashMode,
    /// `methods["__init__"]` when it is an Apsi function of plain
    /// positional parameters (not a generator): what a constructor call
    /// runs as a frame (`vm/exec/frames.rs`) without a name lookup.
    pub simple_init: Option<Arc<crate::value::function::Closure>>,
    /// The comparison methods `__eq__ __ne__ __lt__ __le__ __gt__ __ge__`
    /// (in that order, own or inherited), found once: a comparison on an
    /// instance looks no name up.
    pub cmp_methods: [Option<Value>; 6],
    /// `__getitem__` and `__setitem__` (own or inherited), found once for
    /// `x[i]` and `x[i] = v` on an instance.
    pub item_methods: [Option<Value>; 2],
    /// `__iter__` (own or inherited), found once for `for x in obj` and
    /// `iter(obj)` on an instance.
    pub iter_method: Option<Value>,
    /// Neither `__bool__` nor `__len__` (own or inherited): every instance
    /// is true, known without a name lookup (`if node.left:`).
    pub always_true: bool,
}

/// The index of `op`'s method in [`StructType::cmp_methods`] (its name is
/// `CMP_METHODS[i]`); `None` for `is`, `in` and their negations.
pub fn cmp_method_index(op: crate::syntax::ast::CmpOp) -> Option<usize> {
    use crate::syntax::ast::CmpOp;
    Some(match op {
        CmpOp::Eq => 0,
        CmpOp::NotEq => 1,
        CmpOp::Lt => 2,
        CmpOp::LtE => 3,
        CmpOp::Gt => 4,
        CmpOp::GtE => 5,
        _ => return None,
    })
}

/// [`StructType::always_true`] for a method table.
pub fn always_true(methods: &IndexMap<Arc<str>, Value, FxBuild>) -> bool {
    !methods.contains_key("__bool__") && !methods.contains_key("__len__")
}

/// The names of [`StructType::item_methods`], in order.
pub const ITEM_METHODS: [&str; 2] = ["__getitem__", "__setitem__"];

/// The names of [`StructType::cmp_methods`], in order.
pub const CMP_METHODS: [&str; 6] = ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"];

/// How a struct's instances hash (LANGUAGE.md §10.3).
#[derive(Clone)]
pub enum HashMode {
    /// Neither `__eq__` nor `__hash__` anywhere: each instance is its own key.
    Identity,
    /// `__eq__` defined without `__hash__`: `hash` raises TypeError.
    Unhashable,
    /// `__hash__` defined: keys hash by it and compare with `__eq__`.
    Method,
}

pub struct StructField {
    pub name: Arc<str>,
    pub default: Option<Value>,
    /// The annotation as written (`float`, `Tensor[N, f32]`), for checks and messages.
    pub annotation: Option<Arc<str>>,
}

impl StructType {
    /// A struct type without parent, constants, statics or properties (the
    /// result structs that modules and the prelude return).
    pub fn plain(
        name: impl Into<Arc<str>>,
        fields: Vec<StructField>,
        methods: IndexMap<Arc<str>, Value, FxBuild>,
    ) -> StructType {
        let id = StructType::new_id();
        let cmp_methods = CMP_METHODS.map(|n| methods.get(n).cloned());
        let item_methods = ITEM_METHODS.map(|n| methods.get(n).cloned());
        let iter_method = methods.get("__iter__").cloned();
        let always_true = always_true(&methods);
        StructType {
            id,
            layout: id,
            name: name.into(),
            fields,
            methods,
            statics: IndexMap::default(),
            properties: IndexMap::default(),
            consts: VLock::new(IndexMap::default()),
            parent: None,
            error_kind: None,
            hash_mode: HashMode::Identity,
            simple_init: None,
            cmp_methods,
            item_methods,
            iter_method,
            always_true,
        }
    }
    /// A fresh [`StructType::id`].
    pub fn new_id() -> u32 {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // The top of the range keys built-in receivers' method caches.
        u32::try_from(n)
            .ok()
            .filter(|&i| i < ic::FIRST_RECEIVER_KEY)
            .unwrap_or(0)
    }
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| &*f.name == name)
    }
    /// Is `self` the struct `other` or one of its descendants?
    pub fn descends_from(&self, other: &StructType) -> bool {
        let mut t: &StructType = self;
        loop {
            if std::ptr::eq(t, other) {
                return true;
            }
            match &t.parent {
                Some(p) => t = p,
                None => return false,
            }
        }
    }
    /// A dunder or other method by name.
    #[inline]
    pub fn method(&self, name: &str) -> Option<&Value> {
        self.methods.get(name)
    }
    /// A constant by name.
    pub fn constant(&self, name: &str) -> Option<Value> {
        self.consts.read().get(name).cloned()
    }
}

/// A struct instance. Fields are in declaration order.
///
/// Invariants: an instance has exactly its type's fields
/// (`ty.fields.len()` values, checked where one is made), and its field
/// vector is never grown, shrunk or replaced while it lives (fields are
/// overwritten in place), so `first` stays the address of field 0.
pub struct StructObj {
    pub ty: Arc<StructType>,
    pub fields: VLock<FieldVec>,
    /// Its place among the instances the cycle collector watches
    /// (`cycles.rs`); untracked unless a field may lead back to an instance.
    pub gc: cycles::GcLink,
    /// The address of field 0, inside this instance (up to three fields)
    /// or in the vector's own block, set once the instance is in its `Arc`
    /// (`StructObj::placed`): a field read in solo mode is one load from
    /// it, without the vector's test of where its items live and a bounds
    /// check (`StructObj::field_solo`).
    first: AtomicPtr<Value>,
    /// Its type's `layout` (`StructType::layout`), kept here so that a
    /// field's cache test reads the instance only, not its type too: one
    /// dependent load fewer on every field read and write. It sits in the
    /// room `gc` leaves before `first` (the instance is no larger).
    pub(crate) layout: u32,
}

impl StructObj {
    /// An instance of `ty` with these fields, tracked by the cycle collector
    /// when one of them may lead back to an instance.
    ///
    /// # Panics
    /// When `fields` are not as many as the type's (a bug of the caller).
    pub fn new(ty: Arc<StructType>, fields: FieldVec) -> Arc<StructObj> {
        let obj = StructObj::placed(ty, fields);
        cycles::adopt(&obj);
        obj
    }

    /// The instance in its `Arc`, its `first` set; not yet seen by the
    /// cycle collector (`new` adopts it, `ops::structs::new_instance` links
    /// it when it must).
    #[inline(always)]
    pub(crate) fn placed(ty: Arc<StructType>, fields: FieldVec) -> Arc<StructObj> {
        assert_eq!(
            fields.len(),
            ty.fields.len(),
            "an instance of {} with the wrong number of fields",
            ty.name
        );
        let obj = Arc::new(StructObj {
            layout: ty.layout,
            ty,
            fields: VLock::new(fields),
            gc: cycles::GcLink::new(),
            first: AtomicPtr::new(std::ptr::null_mut()),
        });
        // SAFETY: nothing else can reach the new instance yet, so nothing
        // writes its fields. The items do not move from here on (the
        // invariants above).
        let first = unsafe { obj.fields.peek() }.as_ptr() as *mut Value;
        obj.first.store(first, std::sync::atomic::Ordering::Relaxed);
        obj
    }

    /// Field `i`, read without the lock.
    ///
    /// # Safety
    /// As for `VLock::peek` (solo mode at a safe point of the dispatch
    /// loop: nothing writes the fields while the reference lives), and `i`
    /// is below the type's field count (a cache word for the type's
    /// layout says so: every type of one layout has its fields).
    #[inline(always)]
    pub(crate) unsafe fn field_solo(&self, i: usize) -> &Value {
        debug_assert!(i < self.ty.fields.len());
        // SAFETY: the caller's; `first` points at `ty.fields.len()` values.
        unsafe { &*self.first.load(std::sync::atomic::Ordering::Relaxed).add(i) }
    }
}

impl Drop for StructObj {
    #[inline]
    fn drop(&mut self) {
        if self.gc.is_tracked() {
            cycles::untrack(self);
        }
        // A field that only this instance holds and that may free
        // containers in turn goes through the trashcan, so a long chain of
        // instances is not freed recursively.
        trashcan::drop_items(self.fields.get_mut());
    }
}

/// A struct instance's field values: up to three live inside the instance
/// (one allocation per `T(…)`), more in a vector of their own.
pub type FieldVec = smallvec::SmallVec<[Value; 3]>;

/// An error value. Created by `ValueError("…")` or by the runtime; the
/// interpreter appends the Apsi call stack as the error unwinds.
pub struct ErrorObj {
    pub kind: ErrorKind,
    pub message: String,
    /// An optional hint for the person reading the error.
    pub hint: Option<String>,
    /// The call stack, outermost first (filled while unwinding).
    pub trace: Mutex<Vec<TraceEntry>>,
    /// `Some(code)` for the unwinding started by `exit(code)`: not an error,
    /// never caught by `except`, ends the program with that status.
    pub exit: Option<i32>,
    /// The instance of a user error kind (a struct descending from `Error`)
    /// that was raised; `kind` is then its nearest built-in kind and
    /// `message` its message when raised.
    pub payload: Option<Value>,
    /// A `StopIteration`'s `value` (a finished generator's return value).
    pub value: Option<Value>,
}

impl ErrorObj {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Exc {
        Arc::new(ErrorObj {
            kind,
            message: message.into(),
            hint: None,
            trace: Mutex::new(Vec::new()),
            exit: None,
            payload: None,
            value: None,
        })
    }
    pub fn with_hint(kind: ErrorKind, message: impl Into<String>, hint: impl Into<String>) -> Exc {
        Arc::new(ErrorObj {
            kind,
            message: message.into(),
            hint: Some(hint.into()),
            trace: Mutex::new(Vec::new()),
            exit: None,
            payload: None,
            value: None,
        })
    }
    /// A raised instance of a user error kind.
    pub fn user(kind: ErrorKind, message: String, payload: Value) -> Exc {
        Arc::new(ErrorObj {
            kind,
            message,
            hint: None,
            trace: Mutex::new(Vec::new()),
            exit: None,
            payload: Some(payload),
            value: None,
        })
    }
    /// The name of the error's kind: the user kind's struct name, or the built-in kind's.
    pub fn kind_name(&self) -> String {
        match &self.payload {
            Some(Value::Struct(s)) => s.ty.name.to_string(),
            _ => self.kind.name().to_string(),
        }
    }
    /// The unwinding that `exit(code)` starts.
    pub fn exit(code: i32) -> Exc {
        Arc::new(ErrorObj {
            kind: ErrorKind::Error,
            message: String::new(),
            hint: None,
            trace: Mutex::new(Vec::new()),
            exit: Some(code),
            payload: None,
            value: None,
        })
    }
}

impl fmt::Debug for ErrorObj {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.exit {
            Some(code) => write!(f, "exit({code})"),
            None => write!(f, "{}: {}", self.kind, self.message),
        }
    }
}

/// The arguments of one call, inline up to eight.
pub type CallArgs = smallvec::SmallVec<[Value; 8]>;

/// Shorthand for building an error result: `return Err(err(TypeError, "…"))`.
pub fn err(kind: ErrorKind, message: impl Into<String>) -> Exc {
    ErrorObj::new(kind, message)
}

/// A loaded module: its exported names.
pub struct ModuleObj {
    /// Never reused, from the counter of [`StructType::id`]: the key of
    /// inline-cache entries for `module.name` (`value/ic.rs`). Attributes
    /// are only ever added, so an entry's index stays that name's.
    pub id: u32,
    pub name: String,
    /// The file it was loaded from, for file modules.
    pub path: Option<String>,
    /// A `VLock`, as every container of values: free of locked
    /// instructions while one thread runs Apsi code (`module.name` on the
    /// dispatch loop's hot path: `slow::module_attr_hit`).
    pub attrs: VLock<IndexMap<Arc<str>, Value, FxBuild>>,
}

/// Behaviour of values whose types live outside the core value model.
pub trait ApsiObject: Send + Sync + 'static {
    fn type_name(&self) -> &str;
    /// `str(x)` / `print(x)`.
    fn to_str(&self) -> String;
    /// `repr(x)`, used inside containers; defaults to `to_str`.
    fn repr(&self) -> String {
        self.to_str()
    }
    fn truthy(&self) -> VResult<bool> {
        Ok(true)
    }
    fn hashable(&self) -> bool {
        false
    }
    /// `x.name`: attributes and methods (a method comes back bound).
    fn get_attr(&self, this: &Value, name: &str) -> Option<VResult<Value>> {
        let _ = (this, name);
        None
    }
    fn as_any(&self) -> &dyn std::any::Any;
    /// The generator this object is, if it is one: one virtual call where
    /// `as_any().downcast_ref()` makes two (`for` over a generator asks on
    /// every step). Only the core's generators answer; the default is right
    /// for every other object.
    #[doc(hidden)]
    fn as_generator(&self) -> Option<&generator::GenObj> {
        None
    }

    // ---- Typed protocol hooks (the Module API's operator hooks). The core
    // asks `protocols()` and calls the hook; it never looks a module
    // object's protocol up by a dunder name. `x.__iter__` & co. are
    // answered from these hooks too (`ops::attr`), so a with-statement or a
    // Python-style explicit call works on every object that has them.

    /// Which of the hooks below this object implements.
    fn protocols(&self) -> Protocols {
        Protocols::NONE
    }
    /// `iter(x)`, `for v in x`, `list(x)`: an iterator over `x` (a value
    /// whose `next` hook gives the items), or any iterable (a list).
    /// The default: an iterator (one with `next`) is its own iterator.
    fn iter(&self, this: &Value, c: &mut dyn Caller) -> VResult<Value> {
        let _ = c;
        if self.protocols().next {
            return Ok(this.clone());
        }
        Err(protocol_missing(this, "is not iterable"))
    }
    /// The next item of an iterator, or `None` once it has ended.
    fn next(&self, this: &Value, c: &mut dyn Caller) -> VResult<Option<Value>> {
        let _ = c;
        Err(protocol_missing(this, "is not an iterator"))
    }
    /// `len(x)`.
    fn len(&self, this: &Value) -> VResult<i64> {
        Err(protocol_missing(this, "has no len()"))
    }
    /// `with x as v:` on entry: the value bound to `v`.
    fn enter(&self, this: &Value, c: &mut dyn Caller) -> VResult<Value> {
        let _ = c;
        Err(protocol_missing(this, "is not a context manager"))
    }
    /// `with x:` on exit, with the error that ends the block (if any):
    /// `true` swallows it.
    fn exit(&self, this: &Value, c: &mut dyn Caller, error: Option<&Value>) -> VResult<bool> {
        let _ = (c, error);
        Err(protocol_missing(this, "is not a context manager"))
    }
    /// `this OP other` (or, with `reflected`, `other OP this`): `None` when
    /// this object does not handle the operand (Python's `NotImplemented`),
    /// so the other operand gets its turn.
    fn binary(&self, this: &Value, op: BinOp, other: &Value, reflected: bool) -> VResult<Option<Value>> {
        let _ = (this, op, other, reflected);
        Ok(None)
    }
    /// `this[key]`.
    fn get_item(&self, this: &Value, key: &Value) -> VResult<Value> {
        let _ = key;
        Err(protocol_missing(this, "is not subscriptable"))
    }
    /// `this[key] = value`.
    fn set_item(&self, this: &Value, key: &Value, value: Value) -> VResult<()> {
        let _ = (key, value);
        Err(protocol_missing(this, "does not support item assignment"))
    }
}

/// The typed protocol hooks an [`ApsiObject`] implements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Protocols {
    /// [`ApsiObject::iter`]
    pub iter: bool,
    /// [`ApsiObject::next`]: the object is an iterator.
    pub next: bool,
    /// [`ApsiObject::len`]
    pub len: bool,
    /// [`ApsiObject::enter`] and [`ApsiObject::exit`]
    pub context: bool,
    /// [`ApsiObject::binary`]: arithmetic, bitwise and `@` operators.
    pub arith: bool,
    /// [`ApsiObject::get_item`] and [`ApsiObject::set_item`]
    pub item: bool,
}

impl Protocols {
    pub const NONE: Protocols = Protocols {
        iter: false,
        next: false,
        len: false,
        context: false,
        arith: false,
        item: false,
    };
}

fn protocol_missing(this: &Value, what: &str) -> Exc {
    err(ErrorKind::TypeError, format!("'{}' object {what}", this.type_name()))
}

/// Keeps `Value` at 16 bytes: a thin pointer to the fat trait object.
pub struct ObjBox(pub Box<dyn ApsiObject>);

#[cfg(test)]
mod key_tests {
    #[test]
    fn an_instance_keeps_its_types_layout_in_no_extra_room() {
        use super::{FieldVec, StructObj, StructType, VLock};
        use std::mem::size_of;
        use std::sync::Arc;
        // `layout` and `gc` (4 bytes each) share one 8-byte word.
        let parts = size_of::<Arc<StructType>>() + size_of::<VLock<FieldVec>>() + 8 + size_of::<usize>();
        assert_eq!(size_of::<StructObj>(), parts);
    }

    #[test]
    fn only_a_list_no_one_else_holds_gives_up_its_items() {
        use super::ListObj;
        let v = Value::list(vec![Value::Int(1), Value::Int(2)]);
        let alias = v.clone();
        assert!(!ListObj::is_sole(&v));
        assert!(ListObj::take_sole(&v).is_none());
        assert!(matches!(&alias, Value::List(l) if l.items.read().len() == 2));
        drop(alias);
        assert!(ListObj::is_sole(&v));
        assert_eq!(ListObj::take_sole(&v).map(|items| items.len()), Some(2));
        assert!(matches!(&v, Value::List(l) if l.items.read().is_empty()));
        assert!(!ListObj::is_sole(&Value::tuple(vec![Value::Int(1)])));
    }

    #[test]
    fn words_copy_every_kind_of_value() {
        // `Value::words` reads a counted value's pointer at offset 8.
        let l = std::sync::Arc::new(super::ListObj::new(vec![Value::Int(7)]));
        let v = Value::List(l.clone());
        // SAFETY: reading the second word of a 16-byte value.
        let ptr = unsafe { *((&v as *const Value as *const u64).add(1)) };
        assert_eq!(ptr, unsafe {
            *(&l as *const std::sync::Arc<super::ListObj> as *const u64)
        });
        let w = v.words();
        assert_eq!(std::sync::Arc::strong_count(&l), 3);
        let v2 = w.into_value();
        assert!(matches!(&v2, Value::List(x) if std::sync::Arc::ptr_eq(x, &l)));
        let text = |v: &Value| match v {
            Value::Str(s) => s.as_str().to_string(),
            _ => panic!("not a string"),
        };
        let s = Value::str("a longer string than inline");
        let s2 = s.dup_words();
        assert_eq!(text(&s), text(&s2));
        let mut slot = Value::Int(3);
        // SAFETY: the slot holds a scalar, which owns nothing.
        unsafe { s.words().write_to(&mut slot) };
        assert_eq!(text(&slot), text(&s));
        drop((v, v2, slot, s, s2));
        assert_eq!(std::sync::Arc::strong_count(&l), 1);
        // Every variant whose data sits in byte 1 or at offset 8.
        let samples = [
            Value::None,
            Value::Bool(true),
            Value::Bool(false),
            Value::Int(-5),
            Value::Float(2.5),
            Value::Kind(crate::error::ErrorKind::ValueError),
            Value::Kind(crate::error::ErrorKind::KeyError),
            Value::Tuple(std::sync::Arc::new(super::TupleObj(smallvec::smallvec![Value::Int(1)]))),
        ];
        for v in &samples {
            let c = v.dup_words();
            assert_eq!(format!("{c:?}"), format!("{v:?}"));
            let mut slot = Value::None;
            // SAFETY: `none` owns nothing.
            unsafe { v.words().write_to(&mut slot) };
            assert_eq!(format!("{slot:?}"), format!("{v:?}"));
        }
    }

    #[test]
    fn count_is_every_kinds_own() {
        use std::sync::atomic::AtomicUsize;
        use std::sync::Arc;
        // What `Value::count` computed before it read offset 8: each kind's
        // own count, found through its handle.
        fn by_kind(v: &Value) -> Option<*const AtomicUsize> {
            use super::solo::arc_count;
            Some(match v {
                Value::None | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Unbound | Value::Kind(_) => {
                    return None
                }
                Value::Str(s) => s.count(),
                Value::List(a) => arc_count(a),
                Value::Tuple(a) => arc_count(a),
                Value::Dict(a) => arc_count(a),
                Value::Range(a) => arc_count(a),
                Value::Slice(a) => arc_count(a),
                Value::Func(a) => arc_count(a),
                Value::Native(a) => arc_count(a),
                Value::BoundMethod(a) => arc_count(a),
                Value::StructType(a) => arc_count(a),
                Value::Struct(a) => arc_count(a),
                Value::Error(a) => arc_count(a),
                Value::Module(a) => arc_count(a),
                Value::Object(a) => arc_count(a),
                Value::Bytes(a) => arc_count(a),
                Value::Set(a) => arc_count(a),
            })
        }
        let samples = [
            Value::None,
            Value::Bool(true),
            Value::Int(-5),
            Value::Float(2.5),
            Value::Unbound,
            Value::Kind(crate::error::ErrorKind::KeyError),
            Value::str("a longer string than inline, on the heap"),
            Value::str("x"),
            Value::Str(super::StrRef::latin1(b'q')),
            Value::list(vec![Value::Int(1)]),
            Value::tuple(vec![Value::Int(1), Value::Int(2)]),
            Value::dict(DictMap::new()),
            Value::set(DictMap::new()),
            Value::bytes(vec![1, 2, 3]),
            Value::Range(Arc::new(super::RangeObj {
                start: 0,
                stop: 3,
                step: 1,
            })),
            Value::Error(super::err(crate::error::ErrorKind::ValueError, "bad")),
        ];
        for v in &samples {
            assert_eq!(v.count().map(|c| c as *const AtomicUsize), by_kind(v), "{v:?}");
            assert_eq!(v.owns_nothing(), by_kind(v).is_none(), "{v:?}");
        }
        // The count read at offset 8 is the live one: a copy raises it.
        let l = Value::list(vec![]);
        let before = l.count().map(|c| c.load(std::sync::atomic::Ordering::Relaxed));
        let copy = l.clone();
        let after = l.count().map(|c| c.load(std::sync::atomic::Ordering::Relaxed));
        assert_eq!(before.map(|n| n + 1), after);
        drop(copy);
    }

    use super::{DictMap, HashKey, Value};

    #[test]
    fn int_float_bool_keys_hash_and_compare_alike() {
        let mut m = DictMap::new();
        m.insert(HashKey::int(1), Value::Int(10));
        m.insert(HashKey::int(-7), Value::Int(70));
        let one_f = HashKey::new(Value::Float(1.0)).unwrap_or_else(|_| HashKey::int(0));
        let true_k = HashKey::new(Value::Bool(true)).unwrap_or_else(|_| HashKey::int(0));
        let neg_f = HashKey::new(Value::Float(-7.0)).unwrap_or_else(|_| HashKey::int(0));
        assert!(matches!(m.get(&one_f), Some(Value::Int(10))));
        assert!(matches!(m.get(&true_k), Some(Value::Int(10))));
        assert!(matches!(m.get(&neg_f), Some(Value::Int(70))));
        assert!(m.get(&HashKey::int(2)).is_none());
        let half = HashKey::new(Value::Float(1.5)).unwrap_or_else(|_| HashKey::int(0));
        assert!(m.get(&half).is_none());
    }
}
