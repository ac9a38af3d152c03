//! The iteration protocol (LANGUAGE.md §10.5): `iter(x)`, one step of any
//! iterator, the iterator objects `iter` makes, the lazy adapters that
//! `enumerate`/`zip`/`map`/`filter` return for lazy input, and [`Pull`],
//! the one-item-at-a-time source the builtins read.
//!
//! What counts as an iterator: a generator (`value::generator`), an
//! [`IterObj`], a struct with a `__next__` method (it ends by raising
//! `StopIteration`), and a module object with a `__next__` hook (a channel
//! stream: `(item,)` or none). `iter` of an iterator is itself.
//!
//! Lazy values are generators, iterator objects and structs; everything
//! else (lists, tuples, ranges, strings, dicts, tensors, datasets, and
//! whatever `ops::iterate` learns later) keeps its eager fast path, and
//! `iter` of it walks the materialised items (lists and ranges are walked
//! in place). A new built-in iterable needs no change here as long as
//! `ops::iterate` knows it.
//!
//! Iterator objects print as `<list_iterator>`, `<tuple_iterator>`,
//! `<str_iterator>`, `<range_iterator>`, `<dict_keyiterator>`,
//! `<iterator>` (anything else), `<enumerate>`, `<zip>`, `<map>`,
//! `<filter>`. Their lock is never held while Apsi code runs: an adapter
//! takes its state out while it pulls, so re-entering the same adapter
//! from inside that pull raises `ValueError` instead of deadlocking.

use crate::error::ErrorKind;
use crate::value::generator::{GenObj, Step};
use crate::value::VLock;
use crate::value::{err, ApsiObject, Caller, Exc, ListObj, ObjBox, TupleObj, VResult, Value, Words};
use std::sync::Arc;

/// An iterator made by `iter(x)` or by a lazy `enumerate`/`zip`/`map`/`filter`.
pub struct IterObj {
    kind: &'static str,
    state: VLock<IterState>,
}

enum IterState {
    /// A list walked in place (sees appends, as Python's iterator does).
    List(Arc<ListObj>, usize),
    Tuple(Arc<TupleObj>, usize),
    Items(std::vec::IntoIter<Value>),
    /// The next value, the stop, the step.
    Range(i64, i64, i64),
    Enumerate(Box<Pull>, i64),
    Zip(Vec<Pull>),
    /// A `for` loop's `zip` over eager iterables (`zip_rows`): the next row
    /// is `i` of every column, while they all have one.
    Rows {
        cols: Vec<Column>,
        i: usize,
    },
    /// A loop's `d.items()` (`pairs`): a snapshot of the keys and values,
    /// interleaved (`flat[2i]`, `flat[2i + 1]`), row `i` next.
    Pairs {
        flat: Vec<Value>,
        i: usize,
    },
    /// A `for` loop's `enumerate` over an eager iterable (`counted`): item
    /// `i` numbered `start + i`.
    Counted {
        col: Column,
        start: i64,
        i: usize,
    },
    Map(Box<Pull>, Value),
    Filter(Box<Pull>, Value),
    /// An adapter whose state is out while it pulls.
    Busy,
    Done,
}

/// What a loop's `zip`/`enumerate` walks: a list or tuple in place (a list
/// is read live, as Python's iterators read it, so items appended by the
/// loop's body are reached), or the items of any other eager iterable,
/// taken when the loop starts.
pub enum Column {
    List(Arc<ListObj>),
    Tuple(Arc<TupleObj>),
    Items(Vec<Value>),
}

impl Column {
    /// The items of `v` to walk (`v` is not lazy).
    pub fn of(c: &mut dyn Caller, v: &Value) -> VResult<Column> {
        Ok(match v {
            Value::List(l) => Column::List(l.clone()),
            Value::Tuple(t) => Column::Tuple(t.clone()),
            other => Column::Items(crate::ops::iterate(c, other)?),
        })
    }

    /// How many items it has now.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Column::List(l) => l.items.read().len(),
            Column::Tuple(t) => t.0.len(),
            Column::Items(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Item `i`, which the iterator hands out once: a snapshot the
    /// iterator owns (`Items`) gives it up (moved out, `None` left behind),
    /// a list or tuple still in use is copied.
    #[inline]
    fn take(&mut self, i: usize) -> Option<Value> {
        match self {
            Column::List(l) => l.items.read().get(i).cloned(),
            Column::Tuple(t) => t.0.get(i).cloned(),
            Column::Items(v) => v.get_mut(i).map(|x| std::mem::replace(x, Value::None)),
        }
    }
}

/// `v` as its parts, for a target written by parts.
#[inline(always)]
fn words_of(mut v: Value) -> Words {
    v.take_words()
}

/// Row `i` of a `Pairs` snapshot, moved out by parts (each item was
/// written long before, so the parts are read from memory, not forwarded).
#[inline(always)]
fn take_pair(flat: &mut [Value], i: usize) -> Option<(Words, Words)> {
    let [k, v] = flat.get_mut(2 * i..2 * i + 2)? else {
        return None;
    };
    Some((k.take_words(), v.take_words()))
}

/// Does a loop's `zip` over `cols` have row `i` (every column item `i`)?
fn has_row(cols: &[Column], i: usize) -> bool {
    !cols.is_empty() && cols.iter().all(|c| i < c.len())
}

/// `enumerate`'s count past the largest int.
pub(crate) fn count_overflow() -> Exc {
    err(
        ErrorKind::OverflowError,
        "enumerate() count does not fit in a 64-bit int",
    )
}

impl ApsiObject for IterObj {
    fn type_name(&self) -> &str {
        self.kind
    }
    fn to_str(&self) -> String {
        format!("<{}>", self.kind)
    }
    fn hashable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn obj(kind: &'static str, st: IterState) -> Value {
    Value::Object(Arc::new(ObjBox(Box::new(IterObj {
        kind,
        state: VLock::new(st),
    }))))
}

fn range_next(next: &mut i64, stop: i64, step: i64) -> Option<Value> {
    let x = *next;
    if (step > 0 && x < stop) || (step < 0 && x > stop) {
        // Overflow past i64 ends the range.
        *next = x.checked_add(step).unwrap_or(stop);
        Some(Value::Int(x))
    } else {
        None
    }
}

impl IterObj {
    /// How many rows a row iterator (`zip_rows`, `pairs`, `counted`) has left now;
    /// `None` for any other kind. A size hint: a list column may still
    /// change while the rows are read.
    pub fn rows_left(&self) -> Option<usize> {
        match &*self.state.read() {
            IterState::Rows { cols, i } => cols.iter().map(|c| c.len().saturating_sub(*i)).min(),
            IterState::Pairs { flat, i } => Some((flat.len() / 2).saturating_sub(*i)),
            IterState::Counted { col, i, .. } => Some(col.len().saturating_sub(*i)),
            _ => None,
        }
    }

    /// The next item, or `None` at the end.
    pub fn next(&self, c: &mut dyn Caller) -> VResult<Option<Value>> {
        let mut g = self.state.write();
        let out = match &mut *g {
            IterState::List(l, i) => {
                let v = l.items.read().get(*i).cloned();
                *i += 1;
                v
            }
            IterState::Tuple(t, i) => {
                let v = t.0.get(*i).cloned();
                *i += 1;
                v
            }
            IterState::Items(it) => it.next(),
            IterState::Range(next, stop, step) => range_next(next, *stop, *step),
            IterState::Rows { cols, i } => has_row(cols, *i).then(|| {
                let row = cols.iter_mut().map(|c| c.take(*i).unwrap_or(Value::None)).collect();
                *i += 1;
                Value::tuple(row)
            }),
            IterState::Pairs { flat, i } => match take_pair(flat, *i) {
                Some((k, v)) => {
                    *i += 1;
                    Some(Value::tuple(vec![k.into_value(), v.into_value()]))
                }
                None => None,
            },
            IterState::Counted { col, start, i } => match col.take(*i) {
                Some(x) => {
                    let Some(k) = start.checked_add(*i as i64) else {
                        *g = IterState::Done;
                        return Err(count_overflow());
                    };
                    *i += 1;
                    Some(Value::tuple(vec![Value::Int(k), x]))
                }
                None => None,
            },
            IterState::Done => None,
            IterState::Busy => {
                return Err(err(
                    ErrorKind::ValueError,
                    format!("{} iterator already executing", self.kind),
                ))
            }
            _ => {
                // An adapter: pull without holding the lock.
                let mut st = std::mem::replace(&mut *g, IterState::Busy);
                drop(g);
                let r = adapter_next(c, &mut st);
                let mut g = self.state.write();
                *g = match r {
                    Ok(Some(_)) => st,
                    _ => IterState::Done,
                };
                return r;
            }
        };
        if out.is_none() {
            *g = IterState::Done;
        }
        Ok(out)
    }

    /// One row of a loop's `zip`/`enumerate` (`zip_rows`, `counted`) handed
    /// out as `n` separate values (`put(j, parts)`), for a loop that unpacks
    /// each row at once (`for a, b in zip(xs, ys)`) and so needs no tuple:
    /// `Some(true)` after a row, `Some(false)` at the end, `None` when this
    /// iterator is not of that kind or its rows do not have `n` values (the
    /// caller then steps it as usual). No Apsi code runs meanwhile.
    pub fn next_unpacked(&self, n: usize, mut put: impl FnMut(usize, Words)) -> Option<bool> {
        let mut g = self.state.write();
        match &mut *g {
            IterState::Rows { cols, i } if cols.len() == n => {
                // Every column is checked before any target is written: at
                // the end the loop's names keep the last row, as in Python.
                if let [xs, ys] = &mut cols[..] {
                    // The common pair: each column read once.
                    let (Some(x), Some(y)) = (xs.take(*i), ys.take(*i)) else {
                        *g = IterState::Done;
                        return Some(false);
                    };
                    *i += 1;
                    put(0, words_of(x));
                    put(1, words_of(y));
                    return Some(true);
                }
                if !has_row(cols, *i) {
                    *g = IterState::Done;
                    return Some(false);
                }
                for (j, c) in cols.iter_mut().enumerate() {
                    put(j, words_of(c.take(*i).unwrap_or(Value::None)));
                }
                *i += 1;
                Some(true)
            }
            IterState::Pairs { flat, i } if n == 2 => {
                let Some((k, v)) = take_pair(flat, *i) else {
                    *g = IterState::Done;
                    return Some(false);
                };
                *i += 1;
                put(0, k);
                put(1, v);
                Some(true)
            }
            IterState::Counted { col, start, i } if n == 2 => {
                let Some(x) = col.take(*i) else {
                    *g = IterState::Done;
                    return Some(false);
                };
                // An overflowing count raises from the plain step.
                let k = start.checked_add(*i as i64)?;
                *i += 1;
                put(0, words_of(Value::Int(k)));
                put(1, words_of(x));
                Some(true)
            }
            _ => None,
        }
    }
}

fn adapter_next(c: &mut dyn Caller, st: &mut IterState) -> VResult<Option<Value>> {
    match st {
        IterState::Enumerate(src, n) => {
            let Some(x) = src.next(c)? else { return Ok(None) };
            let i = *n;
            *n = n.checked_add(1).ok_or_else(count_overflow)?;
            Ok(Some(Value::tuple(vec![Value::Int(i), x])))
        }
        IterState::Zip(srcs) => {
            if srcs.is_empty() {
                return Ok(None);
            }
            let mut row = Vec::with_capacity(srcs.len());
            for s in srcs.iter_mut() {
                match s.next(c)? {
                    Some(x) => row.push(x),
                    None => return Ok(None),
                }
            }
            Ok(Some(Value::tuple(row)))
        }
        IterState::Map(src, f) => match src.next(c)? {
            Some(x) => Ok(Some(c.call(f, std::slice::from_ref(&x), &[])?)),
            None => Ok(None),
        },
        IterState::Filter(src, f) => loop {
            let Some(x) = src.next(c)? else { return Ok(None) };
            let keep = match &*f {
                Value::None => x.truthy()?,
                f => c.call(f, std::slice::from_ref(&x), &[])?.truthy()?,
            };
            if keep {
                return Ok(Some(x));
            }
        },
        _ => Ok(None),
    }
}

fn struct_has(v: &Value, name: &str) -> bool {
    matches!(v, Value::Struct(s) if s.ty.methods.contains_key(name))
}

/// Is `v` an iterator (something [`step`] advances)?
pub fn is_iterator(v: &Value) -> bool {
    match v {
        Value::Object(o) => {
            let any = o.0.as_any();
            any.is::<GenObj>() || any.is::<IterObj>() || o.0.protocols().next
        }
        Value::Struct(_) => struct_has(v, "__next__"),
        _ => false,
    }
}

/// Values iterated one item at a time rather than materialised:
/// generators, iterator objects (the core's and module objects with a
/// `next` hook) and structs (through `__iter__`/`__next__`).
#[inline]
pub fn is_lazy(v: &Value) -> bool {
    match v {
        Value::Object(o) => {
            let any = o.0.as_any();
            any.is::<GenObj>() || any.is::<IterObj>() || o.0.protocols().next
        }
        Value::Struct(_) => true,
        _ => false,
    }
}

/// `iter(v)`: an iterator over any iterable; an iterator is its own.
pub fn get_iter(c: &mut dyn Caller, v: &Value) -> VResult<Value> {
    Ok(match v {
        Value::List(l) => obj("list_iterator", IterState::List(l.clone(), 0)),
        Value::Tuple(t) => obj("tuple_iterator", IterState::Tuple(t.clone(), 0)),
        Value::Range(r) => obj("range_iterator", IterState::Range(r.start, r.stop, r.step)),
        Value::Str(_) => obj("str_iterator", IterState::Items(super::iterate(c, v)?.into_iter())),
        Value::Dict(_) => obj("dict_keyiterator", IterState::Items(super::iterate(c, v)?.into_iter())),
        Value::Struct(s) => {
            // Looked up on the type, as Python does, and called with the
            // instance (no bound method is made).
            if let Some(f) = &s.ty.iter_method {
                // A generator method (the usual `__iter__`): calling it
                // runs nothing, so no call is needed to make the generator.
                if let Value::Func(clo) = f {
                    if let Some(g) = GenObj::call_plain(clo, std::slice::from_ref(v)) {
                        return Ok(g);
                    }
                }
                let it = c.call(f, std::slice::from_ref(v), &[])?;
                if is_iterator(&it) {
                    return Ok(it);
                }
                if matches!(it, Value::Struct(_)) {
                    return Err(err(
                        ErrorKind::TypeError,
                        format!("iter() returned non-iterator of type '{}'", it.type_name()),
                    ));
                }
                // Lenient: `__iter__` may return any iterable (a list).
                return get_iter(c, &it);
            }
            return Err(err(
                ErrorKind::TypeError,
                format!("'{}' object is not iterable", s.ty.name),
            ));
        }
        _ if is_iterator(v) => v.clone(),
        // A module object's `iter` hook: an iterator, or any iterable.
        Value::Object(o) if o.0.protocols().iter => {
            let it = o.0.iter(v, c)?;
            if is_iterator(&it) {
                return Ok(it);
            }
            if matches!(it, Value::Object(_)) {
                return Err(err(
                    ErrorKind::TypeError,
                    format!("iter() returned non-iterator of type '{}'", it.type_name()),
                ));
            }
            return get_iter(c, &it);
        }
        // Tensors (first axis), datasets, and any iterable `ops::iterate` knows.
        other => obj("iterator", IterState::Items(super::iterate(c, other)?.into_iter())),
    })
}

/// One step of the iterator `it`: the next item, or the end with a
/// generator's return value.
pub fn step(c: &mut dyn Caller, it: &Value) -> VResult<Step> {
    match it {
        Value::Object(o) => {
            if let Some(g) = o.0.as_generator() {
                return c.resume_generator(g);
            }
            let any = o.0.as_any();
            if let Some(i) = any.downcast_ref::<IterObj>() {
                return Ok(match i.next(c)? {
                    Some(v) => Step::Item(v),
                    None => Step::Done(Value::None),
                });
            }
            // A module object's typed `next` hook (a channel, a dataset pass).
            if o.0.protocols().next {
                return Ok(match o.0.next(it, c)? {
                    Some(v) => Step::Item(v),
                    None => Step::Done(Value::None),
                });
            }
            Err(not_an_iterator(it))
        }
        Value::Struct(s) => {
            let Some(f) = s.ty.methods.get("__next__") else {
                return Err(not_an_iterator(it));
            };
            match c.call(f, std::slice::from_ref(it), &[]) {
                Ok(v) => Ok(Step::Item(v)),
                Err(e) if e.kind == ErrorKind::StopIteration && e.exit.is_none() => {
                    Ok(Step::Done(e.value.clone().unwrap_or(Value::None)))
                }
                Err(e) => Err(e),
            }
        }
        other => Err(not_an_iterator(other)),
    }
}

fn not_an_iterator(v: &Value) -> Exc {
    err(
        ErrorKind::TypeError,
        format!("'{}' object is not an iterator", v.type_name()),
    )
}

/// `next(it)`: the next item or `None` at the end.
#[inline]
pub fn next_item(c: &mut dyn Caller, it: &Value) -> VResult<Option<Value>> {
    Ok(match step(c, it)? {
        Step::Item(v) => Some(v),
        Step::Done(_) => None,
    })
}

/// Every item of a lazy iterable (see [`is_lazy`]), pulled to the end.
pub fn collect_lazy(c: &mut dyn Caller, v: &Value) -> VResult<Vec<Value>> {
    let it = get_iter(c, v)?;
    let mut out = Vec::new();
    while let Some(x) = next_item(c, &it)? {
        out.push(x);
    }
    Ok(out)
}

/// A source of items for the builtins: materialised items for the eager
/// iterables (their fast path), a range counted in place, or an iterator
/// pulled one item at a time.
pub enum Pull {
    Items(std::vec::IntoIter<Value>),
    Range(i64, i64, i64),
    Iter(Value),
}

impl Pull {
    pub fn new(c: &mut dyn Caller, v: &Value) -> VResult<Pull> {
        Ok(match v {
            Value::Range(r) => Pull::Range(r.start, r.stop, r.step),
            v if is_lazy(v) => Pull::Iter(get_iter(c, v)?),
            v => Pull::Items(super::iterate(c, v)?.into_iter()),
        })
    }

    #[inline]
    pub fn next(&mut self, c: &mut dyn Caller) -> VResult<Option<Value>> {
        match self {
            Pull::Items(it) => Ok(it.next()),
            Pull::Range(next, stop, step) => Ok(range_next(next, *stop, *step)),
            Pull::Iter(it) => next_item(c, it),
        }
    }
}

/// `enumerate(xs, start)` over a lazy `xs`: a lazy `<enumerate>`.
pub fn lazy_enumerate(c: &mut dyn Caller, xs: &Value, start: i64) -> VResult<Value> {
    Ok(obj(
        "enumerate",
        IterState::Enumerate(Box::new(Pull::new(c, xs)?), start),
    ))
}

/// `zip(*xss)` when one of them is lazy: a lazy `<zip>`.
pub fn lazy_zip(c: &mut dyn Caller, xss: &[Value]) -> VResult<Value> {
    let mut srcs = Vec::with_capacity(xss.len());
    for x in xss {
        srcs.push(Pull::new(c, x)?);
    }
    Ok(obj("zip", IterState::Zip(srcs)))
}

/// A `for` loop's `zip` over eager iterables: a `<zip>` iterator over
/// their rows, made without building the row tuples `zip` would return
/// (see `builtins::zip_for`).
pub fn zip_rows(cols: Vec<Column>) -> Value {
    obj("zip", IterState::Rows { cols, i: 0 })
}

/// A loop's `d.items()`: the rows of `flat` (keys and values interleaved),
/// an iterator of `(key, value)` tuples that a loop unpacking each row
/// (`for k, v in d.items()`) takes apart without building them.
pub fn pairs(flat: Vec<Value>) -> Value {
    obj("dict_itemiterator", IterState::Pairs { flat, i: 0 })
}

/// A `for` loop's `enumerate` over an eager iterable: an `<enumerate>`
/// iterator numbering its items from `start`.
pub fn counted(col: Column, start: i64) -> Value {
    obj("enumerate", IterState::Counted { col, start, i: 0 })
}

/// `map(xs, f)` over a lazy `xs`: a lazy `<map>`.
pub fn lazy_map(c: &mut dyn Caller, xs: &Value, f: &Value) -> VResult<Value> {
    Ok(obj("map", IterState::Map(Box::new(Pull::new(c, xs)?), f.clone())))
}

/// `filter(xs, f)` over a lazy `xs`: a lazy `<filter>` (`f` none keeps truthy items).
pub fn lazy_filter(c: &mut dyn Caller, xs: &Value, f: &Value) -> VResult<Value> {
    Ok(obj("filter", IterState::Filter(Box::new(Pull::new(c, xs)?), f.clone())))
}

/// The `StopIteration` that `next(g)` raises when `g` ends; `value` is the
/// generator's return value (`e.value`; `str(e)` shows it as Python does).
pub fn stop_iteration(value: Value) -> Exc {
    let msg = match &value {
        Value::None => String::new(),
        v => crate::format::str_of(v),
    };
    let e = crate::value::ErrorObj::new(ErrorKind::StopIteration, msg);
    match Arc::try_unwrap(e) {
        Ok(mut o) => {
            o.value = Some(value);
            Arc::new(o)
        }
        Err(e) => e,
    }
}
