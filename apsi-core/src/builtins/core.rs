//! The general prelude functions: printing, sequences, reductions, the
//! functional helpers (data-first `map`, `filter`, `reduce`).
//!
//! Decisions (for docs/LANGUAGE.md): `enumerate`, `zip`, `reversed`, `map`
//! and `filter` return lists (eagerly) for lists, tuples, ranges, strings
//! and dicts; given a generator, an iterator or a struct (for `zip`, as any
//! argument) `enumerate`/`zip`/`map`/`filter` return a lazy iterator that
//! pulls one item at a time (`ops::iters`); `any`/`all` stop at the first
//! deciding item. `map`, `filter` and
//! `reduce` take the data first (`xs |> map(f)`); Python's order
//! (`map(f, xs)`) is accepted too when the first argument is callable and
//! the second is not. Given a module object (a dataset), `map` and
//! `filter` call its own `map`/`filter` method, keeping it lazy.

use super::args::{expect_int, is_callable, Args};
use super::sort::sort_values;
use crate::error::ErrorKind;
use crate::format::format_value;
use crate::ops;
use crate::syntax::ast::BinOp;
use crate::value::{err, Caller, Kwargs, ListObj, NativeFn, VResult, Value};
use std::cmp::Ordering;
use std::sync::Arc;

pub(crate) fn print(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let mut sep = " ".to_string();
    let mut end = "\n".to_string();
    let mut flush = false;
    for (k, v) in kw {
        let slot = match &**k {
            "sep" => &mut sep,
            "end" => &mut end,
            "flush" => {
                flush = v.truthy()?;
                continue;
            }
            other => {
                return Err(err(
                    ErrorKind::TypeError,
                    format!("print() got an unexpected keyword argument '{other}'"),
                ))
            }
        };
        match v {
            Value::None => {}
            Value::Str(s) => *slot = s.as_str().to_string(),
            other => {
                return Err(err(
                    ErrorKind::TypeError,
                    format!(
                        "print() argument '{k}' must be a str or none, not {}",
                        other.type_name()
                    ),
                ))
            }
        }
    }
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push_str(&sep);
        }
        out.push_str(&crate::format::str_checked(a)?);
    }
    out.push_str(&end);
    c.write_out(&out)?;
    if flush {
        c.flush_out()?;
    }
    Ok(Value::None)
}

pub(crate) fn len(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    // A list or tuple by position: no argument parsing.
    if let ([v], true) = (args, kw.is_empty()) {
        match v {
            Value::List(l) => return Ok(Value::Int(l.items.read().len() as i64)),
            Value::Tuple(t) => return Ok(Value::Int(t.0.len() as i64)),
            _ => {}
        }
    }
    let a = Args::new("len", args, kw, 1, &["x"])?;
    Ok(Value::Int(ops::len_with(c, a.req(0)?)?))
}

pub(crate) fn repr(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("repr", args, kw, 1, &["x"])?;
    Ok(Value::str(crate::format::repr_checked(a.req(0)?)?))
}

pub(crate) fn format(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("format", args, kw, 1, &["x", "spec"])?;
    let spec = match a.opt(1) {
        Some(_) => a.str(1)?,
        None => "",
    };
    Ok(Value::str(format_value(a.req(0)?, spec)?))
}

pub(crate) fn enumerate(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("enumerate", args, kw, 1, &["xs", "start"])?;
    let start = a.int_or(1, 0)?;
    if ops::iters::is_lazy(a.req(0)?) {
        return ops::iters::lazy_enumerate(c, a.req(0)?, start);
    }
    // No Apsi code runs while the pairs are built: a list is read in
    // place, under its read lock, without a copy.
    let pairs = |items: &[Value]| -> VResult<Value> {
        if !items.is_empty() && start.checked_add(items.len() as i64 - 1).is_none() {
            return Err(ops::iters::count_overflow());
        }
        let out = items
            .iter()
            .enumerate()
            .map(|(i, x)| Value::tuple(vec![Value::Int(start + i as i64), x.clone()]))
            .collect();
        Ok(Value::list(out))
    };
    match a.req(0)? {
        Value::List(l) => pairs(&l.items.read()),
        Value::Tuple(t) => pairs(&t.0),
        other => pairs(&ops::iterate(c, other)?),
    }
}

pub(crate) fn zip(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    if let Some((k, _)) = kw.first() {
        return Err(err(
            ErrorKind::TypeError,
            format!("zip() got an unexpected keyword argument '{k}'"),
        ));
    }
    if args.iter().any(ops::iters::is_lazy) {
        return ops::iters::lazy_zip(c, args);
    }
    let mut cols = Vec::with_capacity(args.len());
    for a in args {
        cols.push(ops::iterate(c, a)?);
    }
    let n = cols.iter().map(|c| c.len()).min().unwrap_or(0);
    let rows = match &cols[..] {
        // The common pair: each row's vector built at its exact size.
        [xs, ys] => xs[..n]
            .iter()
            .zip(&ys[..n])
            .map(|(x, y)| Value::tuple(vec![x.clone(), y.clone()]))
            .collect(),
        _ => (0..n)
            .map(|i| Value::tuple(cols.iter().map(|col| col[i].clone()).collect()))
            .collect(),
    };
    Ok(Value::list(rows))
}

/// `zip(…)` as the iterable of a `for` loop or comprehension (the compiler
/// calls this in place of the prelude's `zip`, `compile/emit/loops.rs`):
/// the same rows, as an iterator instead of a list of tuples, so a loop that
/// unpacks each row builds none. Lists are walked as Python's `zip` walks
/// them (live: what the body appends is reached). Lazy arguments and errors
/// go to `zip` itself.
pub(crate) fn zip_for(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    if !kw.is_empty() || args.iter().any(ops::iters::is_lazy) {
        return zip(c, args, kw);
    }
    let mut cols = Vec::with_capacity(args.len());
    for a in args {
        cols.push(ops::iters::Column::of(c, a)?);
    }
    Ok(ops::iters::zip_rows(cols))
}

/// `enumerate(…)` as the iterable of a `for` loop or comprehension, as
/// [`zip_for`] is for `zip`.
pub(crate) fn enumerate_for(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("enumerate", args, kw, 1, &["xs", "start"])?;
    let start = a.int_or(1, 0)?;
    let xs = a.req(0)?;
    if ops::iters::is_lazy(xs) {
        return ops::iters::lazy_enumerate(c, xs, start);
    }
    let col = ops::iters::Column::of(c, xs)?;
    let n = col.len();
    if n > 0 && start.checked_add(n as i64 - 1).is_none() {
        return Err(ops::iters::count_overflow());
    }
    Ok(ops::iters::counted(col, start))
}

/// A native the compiler puts into code itself: one value per process,
/// named as the built-in it stands for (for its error messages).
macro_rules! compiler_native {
    ($(#[$doc:meta])* $fname:ident, $name:literal, $f:path) => {
        $(#[$doc])*
        pub fn $fname() -> Value {
            static F: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
            F.get_or_init(|| Value::Native(Arc::new(NativeFn::new($name, $f)))).clone()
        }
    };
}

compiler_native!(
    /// In place of `zip` as a loop's iterable.
    loop_zip, "zip", zip_for
);
compiler_native!(
    /// In place of `enumerate` as a loop's iterable.
    loop_enumerate, "enumerate", enumerate_for
);

// The natives the compiler calls in place of the prelude's `list`,
// `sorted` and `reversed` when their one argument is an expression that
// makes a new list (`Compiler::new_list_call`: `list(reversed(xs))`,
// `sorted([f(x) for x in xs])`). Such a list, if its count is still 1
// when the call reads it, is held by that argument alone: nothing else
// can see it, so it is used in place (`list` returns it, `sorted` and
// `reversed` take its items) instead of copied. Anything else goes the
// plain built-in's way. (The plain built-ins cannot do this: a caller
// from Rust may pass a value it still holds.)
compiler_native!(
    /// `list(E)` with `E` a new list.
    list_of_new, "list", list_new
);
compiler_native!(
    /// `sorted(E)` with `E` a new list.
    sorted_of_new, "sorted", sorted_new
);
compiler_native!(
    /// `reversed(E)` with `E` a new list.
    reversed_of_new, "reversed", reversed_new
);

/// The one argument of a call the compiler made with a new list.
fn new_list_arg<'v>(args: &'v [Value], kw: &Kwargs) -> Option<&'v Value> {
    match args {
        [v] if kw.is_empty() && ListObj::is_sole(v) => Some(v),
        _ => None,
    }
}

fn list_new(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    match new_list_arg(args, &kw) {
        Some(v) => Ok(v.clone()),
        None => super::types::list_ctor(c, args, kw),
    }
}

fn sorted_new(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    match new_list_arg(args, &kw).and_then(ListObj::take_sole) {
        Some(items) => Ok(Value::list(sort_values(c, items, None, false)?)),
        None => sorted(c, args, kw),
    }
}

fn reversed_new(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    match new_list_arg(args, &kw).and_then(ListObj::take_sole) {
        Some(mut items) => {
            items.reverse();
            Ok(Value::list(items))
        }
        None => reversed(c, args, kw),
    }
}

pub(crate) fn reversed(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("reversed", args, kw, 1, &["xs"])?;
    // A list or tuple is copied back to front in one pass.
    let direct = match a.req(0)? {
        Value::List(l) => Some(l.items.read().iter().rev().cloned().collect()),
        Value::Tuple(t) => Some(t.0.iter().rev().cloned().collect()),
        _ => None,
    };
    let items = match direct {
        Some(items) => items,
        None => {
            let mut items = ops::iterate(c, a.req(0)?)?;
            items.reverse();
            items
        }
    };
    Ok(Value::list(items))
}

pub(crate) fn sorted(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("sorted", args, kw, 1, &["xs", "key", "reverse"])?;
    let items = ops::iterate(c, a.req(0)?)?;
    let reverse = a.bool_or(2, false)?;
    Ok(Value::list(sort_values(c, items, a.opt(1), reverse)?))
}

pub(crate) fn sum(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("sum", args, kw, 1, &["xs", "start"])?;
    let start = a.opt(1).cloned().unwrap_or(Value::Int(0));
    if matches!(start, Value::Str(_)) {
        return Err(err(
            ErrorKind::TypeError,
            "sum() can't sum strings (use ''.join(xs) instead)",
        ));
    }
    if ops::iters::is_lazy(a.req(0)?) {
        let mut src = ops::iters::Pull::new(c, a.req(0)?)?;
        let mut acc = SumAcc::new(start);
        while let Some(x) = src.next(c)? {
            acc.add(&x)?;
        }
        return acc.finish();
    }
    let mut acc = start;
    // Lists and tuples: a loop on unboxed ints (checked) or floats while
    // the items allow it, under the list's read lock (no Apsi code runs
    // there); the rest, if any, is added one value at a time below.
    let rest = match a.req(0)? {
        Value::List(l) => {
            let g = l.items.read();
            let done = sum_fast(&mut acc, &g)?;
            if done == g.len() {
                return Ok(acc);
            }
            g[done..].to_vec()
        }
        Value::Tuple(t) => {
            let done = sum_fast(&mut acc, &t.0)?;
            t.0[done..].to_vec()
        }
        other => ops::iterate(c, other)?,
    };
    let items = rest;
    for x in &items {
        // Plain left-to-right addition: ints stay exact (checked), floats
        // round at each step as CPython 3.11's sum does.
        acc = match (&acc, x) {
            (Value::Float(p), Value::Float(q)) => Value::Float(p + q),
            _ => ops::binary(BinOp::Add, &acc, x)?,
        };
    }
    Ok(acc)
}

/// The running sum of `sum` over items that come one at a time (a
/// generator; and `sum(e for x in xs)` compiled into its loop, whose
/// `ReduceOp::Sum` keeps this state in two registers): while the sum is an
/// int it is kept exactly in 128 bits (`wide`; `acc` is stale then).
pub(crate) struct SumAcc {
    pub acc: Value,
    pub wide: Option<i128>,
}

impl SumAcc {
    pub fn new(start: Value) -> SumAcc {
        let wide = match start {
            Value::Int(i) => Some(i as i128),
            _ => None,
        };
        SumAcc { acc: start, wide }
    }

    /// Add the next item.
    #[inline]
    pub fn add(&mut self, x: &Value) -> VResult<()> {
        if let (Some(w), Value::Int(q)) = (self.wide, x) {
            self.wide = Some(w + *q as i128);
            return Ok(());
        }
        if let Some(w) = self.wide.take() {
            self.acc = settle_int_sum(w, Some(x))?;
        }
        self.acc = match (&self.acc, x) {
            (Value::Float(p), Value::Float(q)) => Value::Float(p + q),
            _ => ops::binary(BinOp::Add, &self.acc, x)?,
        };
        if let Value::Int(i) = self.acc {
            self.wide = Some(i as i128);
        }
        Ok(())
    }

    /// The sum (an int sum must fit in 64 bits).
    pub fn finish(self) -> VResult<Value> {
        match self.wide {
            Some(w) => settle_int_sum(w, None),
            None => Ok(self.acc),
        }
    }
}

/// The value of an exact int sum `s` before adding `next`: at a float the
/// sum goes on in floats (int + float, as `ops::binary` adds them; `sum(fs)`
/// starts from the int 0); anywhere else it must fit in 64 bits.
fn settle_int_sum(s: i128, next: Option<&Value>) -> VResult<Value> {
    match (i64::try_from(s), next) {
        (_, Some(Value::Float(_))) => Ok(Value::Float(s as f64)),
        (Ok(v), _) => Ok(Value::Int(v)),
        (Err(_), _) => Err(err(
            ErrorKind::OverflowError,
            format!("sum() is {s}, which does not fit in a 64-bit int"),
        )),
    }
}

/// Adds the leading ints or floats of `xs` to `acc` with no per-element
/// dispatch; returns how many it added. Ints add exactly in 128 bits, as
/// CPython's unbounded ints do: a sum may pass the 64-bit range on the way
/// (`sum([2**63 - 1, 3, -9])`) as long as where it stops fits, or a float
/// follows (int + float converts the exact int, as in CPython).
fn sum_fast(acc: &mut Value, xs: &[Value]) -> VResult<usize> {
    let mut i = 0;
    if let Value::Int(a) = acc {
        let mut s = *a as i128;
        while let Some(Value::Int(x)) = xs.get(i) {
            s += *x as i128;
            i += 1;
        }
        *acc = settle_int_sum(s, xs.get(i))?;
    }
    if let Value::Float(a) = acc {
        let mut s = *a;
        while let Some(Value::Float(x)) = xs.get(i) {
            s += *x;
            i += 1;
        }
        *a = s;
    }
    Ok(i)
}

/// `min`/`max` of a list or tuple of only ints or only floats, without a
/// key: one unboxed loop (the same choices as the general loop: the first
/// of equal extremes, NaN never replaces nor is replaced by a comparison).
fn extreme_fast(xs: &[Value], keep: Ordering) -> Option<Value> {
    match xs.first()? {
        Value::Int(first) => {
            let mut best = *first;
            for x in &xs[1..] {
                let Value::Int(x) = x else { return None };
                if (keep == Ordering::Less && *x < best) || (keep == Ordering::Greater && *x > best) {
                    best = *x;
                }
            }
            Some(Value::Int(best))
        }
        Value::Float(first) => {
            let mut best = *first;
            if keep == Ordering::Less {
                for x in &xs[1..] {
                    let Value::Float(x) = x else { return None };
                    if *x < best {
                        best = *x;
                    }
                }
            } else {
                for x in &xs[1..] {
                    let Value::Float(x) = x else { return None };
                    if *x > best {
                        best = *x;
                    }
                }
            }
            Some(Value::Float(best))
        }
        _ => None,
    }
}

fn extreme(c: &mut dyn Caller, name: &'static str, args: &[Value], kw: Kwargs, keep: Ordering) -> VResult<Value> {
    let mut key = None;
    let mut default = None;
    for (k, v) in kw {
        match &**k {
            "key" => key = Some(v).filter(|v| !matches!(v, Value::None)),
            "default" => default = Some(v),
            other => {
                return Err(err(
                    ErrorKind::TypeError,
                    format!("{name}() got an unexpected keyword argument '{other}'"),
                ))
            }
        }
    }
    let items = match args {
        [] => {
            return Err(err(
                ErrorKind::TypeError,
                format!("{name}() expected at least 1 argument, got 0"),
            ))
        }
        [one] => {
            if key.is_none() {
                let fast = match one {
                    Value::List(l) => extreme_fast(&l.items.read(), keep),
                    Value::Tuple(t) => extreme_fast(&t.0, keep),
                    _ => None,
                };
                if let Some(v) = fast {
                    return Ok(v);
                }
            }
            ops::iterate(c, one)?
        }
        many => {
            if default.is_some() {
                return Err(err(
                    ErrorKind::TypeError,
                    format!("cannot specify a default for {name}() with multiple positional arguments"),
                ));
            }
            many.to_vec()
        }
    };
    let mut best: Option<(Value, Value)> = None;
    for x in items {
        let k = match key {
            Some(f) => c.call(f, std::slice::from_ref(&x), &[])?,
            None => x.clone(),
        };
        match &best {
            None => best = Some((k, x)),
            Some((bk, _)) => {
                if ops::order(&k, bk)? == keep {
                    best = Some((k, x));
                }
            }
        }
    }
    match (best, default) {
        (Some((_, x)), _) => Ok(x),
        (None, Some(d)) => Ok(d.clone()),
        (None, None) => Err(err(ErrorKind::ValueError, format!("{name}() of an empty sequence"))),
    }
}

pub(crate) fn min(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    extreme(c, "min", args, kw, Ordering::Less)
}

pub(crate) fn max(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    extreme(c, "max", args, kw, Ordering::Greater)
}

/// The truth of a value that needs no Apsi code to decide it (`None` for
/// a struct, whose `__bool__`/`__len__` may run).
#[inline]
fn plain_truth(v: &Value) -> Option<bool> {
    Some(match v {
        Value::None => false,
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Float(f) => *f != 0.0,
        Value::Str(s) => !s.as_str().is_empty(),
        _ => return None,
    })
}

/// `any` (`stop` true) / `all` (`stop` false): the first item whose truth
/// is `stop` decides. Lists and tuples are scanned in place while their
/// items are plain values; the rest is pulled one item at a time.
fn any_all(c: &mut dyn Caller, xs: &Value, stop: bool) -> VResult<Value> {
    let scan = |items: &[Value]| -> Result<bool, usize> {
        for (i, x) in items.iter().enumerate() {
            match plain_truth(x) {
                Some(t) if t == stop => return Ok(true),
                Some(_) => {}
                None => return Err(i),
            }
        }
        Ok(false)
    };
    let rest = match xs {
        Value::List(l) => {
            let g = l.items.read();
            match scan(&g) {
                Ok(hit) => return Ok(Value::Bool(hit == stop)),
                Err(i) => g[i..].to_vec(),
            }
        }
        Value::Tuple(t) => match scan(&t.0) {
            Ok(hit) => return Ok(Value::Bool(hit == stop)),
            Err(i) => t.0[i..].to_vec(),
        },
        other => {
            // Pulled one at a time: a generator stops at the first deciding item.
            let mut src = ops::iters::Pull::new(c, other)?;
            while let Some(x) = src.next(c)? {
                if x.truthy()? == stop {
                    return Ok(Value::Bool(stop));
                }
            }
            return Ok(Value::Bool(!stop));
        }
    };
    for x in rest {
        if x.truthy()? == stop {
            return Ok(Value::Bool(stop));
        }
    }
    Ok(Value::Bool(!stop))
}

pub(crate) fn any(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("any", args, kw, 1, &["xs"])?;
    any_all(c, a.req(0)?, true)
}

pub(crate) fn all(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("all", args, kw, 1, &["xs"])?;
    any_all(c, a.req(0)?, false)
}

pub(crate) fn chr(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("chr", args, kw, 1, &["code"])?;
    let i = a.int(0)?;
    let ch = u32::try_from(i).ok().and_then(char::from_u32).ok_or_else(|| {
        err(
            ErrorKind::ValueError,
            format!("chr() arg {i} is not a valid Unicode code point"),
        )
    })?;
    Ok(Value::str(ch.to_string()))
}

pub(crate) fn ord(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("ord", args, kw, 1, &["ch"])?;
    let s = a.str(0)?;
    let mut it = s.chars();
    match (it.next(), it.next()) {
        (Some(ch), None) => Ok(Value::Int(ch as i64)),
        _ => Err(err(
            ErrorKind::TypeError,
            format!(
                "ord() expected a string of one character, but a string of length {} was found",
                s.chars().count()
            ),
        )),
    }
}

pub(crate) fn divmod(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("divmod", args, kw, 2, &["a", "b"])?;
    let (x, y) = (a.req(0)?, a.req(1)?);
    Ok(Value::tuple(vec![
        ops::binary(BinOp::FloorDiv, x, y)?,
        ops::binary(BinOp::Mod, x, y)?,
    ]))
}

/// Splits `(xs, f, …)` / `(f, xs, …)` into data and function.
fn data_and_fn<'v>(name: &str, a: &'v Value, b: &'v Value) -> VResult<(&'v Value, &'v Value)> {
    if is_callable(b) {
        Ok((a, b))
    } else if is_callable(a) {
        Ok((b, a))
    } else if matches!(b, Value::None) && name == "filter" {
        Ok((a, b))
    } else if matches!(a, Value::None) && name == "filter" {
        // Python's `filter(None, xs)`: the truthy items.
        Ok((b, a))
    } else {
        Err(err(
            ErrorKind::TypeError,
            format!(
                "{name}() needs a function, got a {} and a {}",
                a.type_name(),
                b.type_name()
            ),
        ))
    }
}

/// Calls a module object's own lazy `name` step (datasets).
fn lazy_step(c: &mut dyn Caller, xs: &Value, name: &str, f: &Value, kw: Kwargs) -> VResult<Value> {
    let step = ops::get_attr(xs, name)?;
    c.call(&step, std::slice::from_ref(f), kw)
}

pub(crate) fn map(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    if args.len() < 2 {
        return Err(err(
            ErrorKind::TypeError,
            format!("map() takes a sequence and a function ({} given)", args.len()),
        ));
    }
    // Python's form with several sequences: map(f, xs, ys).
    if args.len() > 2 {
        if !is_callable(&args[0]) {
            return Err(err(
                ErrorKind::TypeError,
                "map() with several sequences takes the function first",
            ));
        }
        let zipped = zip(c, &args[1..], &[])?;
        let mut out = Vec::new();
        for row in ops::iterate(c, &zipped)? {
            let parts = ops::iterate(c, &row)?;
            out.push(c.call(&args[0], &parts, &[])?);
        }
        return Ok(Value::list(out));
    }
    let (xs, f) = data_and_fn("map", &args[0], &args[1])?;
    if ops::iters::is_lazy(xs) && kw.is_empty() {
        return ops::iters::lazy_map(c, xs, f);
    }
    if matches!(xs, Value::Object(_)) {
        return lazy_step(c, xs, "map", f, kw);
    }
    if let Some((k, _)) = kw.first() {
        return Err(err(
            ErrorKind::TypeError,
            format!("map() got an unexpected keyword argument '{k}'"),
        ));
    }
    // Each result replaces its item in the snapshot, by parts: the callee
    // wrote it that way, and a whole-value move of it (or of an item moved
    // out of the vector) stalled on store forwarding every element.
    let mut items = ops::iterate(c, xs)?;
    for slot in items.iter_mut() {
        let mut r = c.call(f, std::slice::from_ref(slot), &[])?;
        let old = std::mem::replace(slot, Value::None);
        // SAFETY: the slot holds a `none`, which owns nothing.
        unsafe { r.take_words().write_to(slot) };
        drop(old);
    }
    Ok(Value::list(items))
}

pub(crate) fn filter(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    if args.len() != 2 {
        return Err(err(
            ErrorKind::TypeError,
            format!("filter() takes a sequence and a function ({} given)", args.len()),
        ));
    }
    let (xs, f) = data_and_fn("filter", &args[0], &args[1])?;
    if ops::iters::is_lazy(xs) && kw.is_empty() {
        return ops::iters::lazy_filter(c, xs, f);
    }
    if matches!(xs, Value::Object(_)) {
        return lazy_step(c, xs, "filter", f, kw);
    }
    if let Some((k, _)) = kw.first() {
        return Err(err(
            ErrorKind::TypeError,
            format!("filter() got an unexpected keyword argument '{k}'"),
        ));
    }
    // A list or tuple is walked as Python's iterator walks it, by index
    // (a list that `f` changes is seen changed): no snapshot of it is made.
    if matches!(xs, Value::List(_) | Value::Tuple(_)) {
        let mut out = Vec::new();
        for i in 0.. {
            let Some(item) = xs.seq_item_words(i) else { break };
            let item = item.into_value();
            // A function that keeps growing the list never lets this loop
            // end (as in Python): Ctrl-C still stops it. (The function's
            // own code may have no loop whose back-edge would look.)
            if i % 1024 == 1023 && crate::interrupt::pending() {
                if let Some(e) = crate::interrupt::take() {
                    return Err(e);
                }
            }
            if keeps(c, f, &item)? {
                out.push(item);
            }
        }
        return Ok(Value::list(out));
    }
    // The kept items are gathered at the front of the snapshot (no item is
    // moved out of it whole: see `map`).
    let mut items = ops::iterate(c, xs)?;
    let mut kept = 0;
    for i in 0..items.len() {
        if keeps(c, f, &items[i])? {
            items.swap(kept, i);
            kept += 1;
        }
    }
    items.truncate(kept);
    Ok(Value::list(items))
}

/// Does `filter` keep `x`: `f(x)` is true (`x` itself when `f` is none).
/// A bool or int answer, what predicates return, is tested here.
#[inline]
fn keeps(c: &mut dyn Caller, f: &Value, x: &Value) -> VResult<bool> {
    let r = match f {
        Value::None => return x.truthy(),
        f => c.call(f, std::slice::from_ref(x), &[])?,
    };
    match r {
        Value::Bool(b) => Ok(b),
        Value::Int(i) => Ok(i != 0),
        r => r.truthy(),
    }
}

pub(crate) fn reduce(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("reduce", args, kw, 2, &["xs", "f", "init"])?;
    let (xs, f) = data_and_fn("reduce", a.req(0)?, a.req(1)?)?;
    let mut items = ops::iterate(c, xs)?.into_iter();
    let mut acc = match a.get(2) {
        Some(init) => init.clone(),
        None => items.next().ok_or_else(|| {
            err(
                ErrorKind::TypeError,
                "reduce() of an empty sequence with no initial value",
            )
        })?,
    };
    for x in items {
        acc = c.call(f, &[acc, x], &[])?;
    }
    Ok(acc)
}

pub(crate) fn abs(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("abs", args, kw, 1, &["x"])?;
    match a.req(0)? {
        Value::Int(i) => i.checked_abs().map(Value::Int).ok_or_else(|| {
            err(
                ErrorKind::OverflowError,
                format!("abs({i}) does not fit in a 64-bit int"),
            )
        }),
        Value::Bool(b) => Ok(Value::Int(*b as i64)),
        Value::Float(f) => Ok(Value::Float(f.abs())),
        obj @ Value::Object(_) => super::math::call_method(c, obj, "abs", &[]),
        s @ Value::Struct(_) => match crate::ops::dunder::abs(s) {
            Some(r) => r,
            None => Err(err(
                ErrorKind::TypeError,
                format!("bad operand type for abs(): '{}'", s.type_name()),
            )),
        },
        other => Err(err(
            ErrorKind::TypeError,
            format!("bad operand type for abs(): '{}'", other.type_name()),
        )),
    }
}

pub(crate) fn round(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("round", args, kw, 1, &["x", "ndigits"])?;
    let x = a.req(0)?;
    if let Value::Object(_) = x {
        let rest: Vec<Value> = a.opt(1).cloned().into_iter().collect();
        return super::math::call_method(c, x, "round", &rest);
    }
    match a.opt(1) {
        None => match x {
            Value::Int(i) => Ok(Value::Int(*i)),
            Value::Bool(b) => Ok(Value::Int(*b as i64)),
            Value::Float(f) => Ok(Value::Int(super::types::float_to_int(f.round_ties_even())?)),
            other => Err(err(
                ErrorKind::TypeError,
                format!("type {} doesn't define round()", other.type_name()),
            )),
        },
        Some(nd) => {
            let n = expect_int(nd, "round", "ndigits")?;
            match x {
                // LANGUAGE.md §7: `round(x, n)` returns a float, for ints too.
                Value::Int(i) => Ok(Value::Float(round_int(*i, n) as f64)),
                Value::Bool(b) => Ok(Value::Float(round_int(*b as i64, n) as f64)),
                Value::Float(f) => Ok(Value::Float(round_float(*f, n)?)),
                other => Err(err(
                    ErrorKind::TypeError,
                    format!("type {} doesn't define round()", other.type_name()),
                )),
            }
        }
    }
}

/// `round(i, n)` for an int: unchanged for `n >= 0`, else to a multiple of
/// `10**-n`, ties to even. Exact in 128 bits (the multiple may pass the
/// 64-bit range: `round(2**63 - 2, -1)`); the caller makes it the float.
fn round_int(i: i64, n: i64) -> i128 {
    if n >= 0 {
        return i as i128;
    }
    if n < -19 {
        return 0;
    }
    let m = 10i128.pow((-n) as u32);
    let x = i as i128;
    let q = x.div_euclid(m);
    let r = x.rem_euclid(m);
    let q = match (2 * r).cmp(&m) {
        Ordering::Greater => q + 1,
        Ordering::Equal if q % 2 != 0 => q + 1,
        _ => q,
    };
    q * m
}

/// Python's `round(x, n)` for a float: round half to even on the exact
/// binary value at the `n`-th decimal, then the nearest float to that.
pub(crate) fn round_float(x: f64, n: i64) -> VResult<f64> {
    if !x.is_finite() || x == 0.0 {
        return Ok(x);
    }
    if n > 330 {
        return Ok(x);
    }
    let r = if n >= 0 {
        let text = format!("{:.*}", n as usize, x);
        text.parse::<f64>().unwrap_or(x)
    } else {
        let k = usize::try_from(n.unsigned_abs()).unwrap_or(usize::MAX);
        // The exact integer part and the (exact) fraction.
        let int_text = format!("{:.0}", x.abs().trunc());
        if k > int_text.len() {
            // |x| < 10^(k-1), less than half of 10^k: rounds to a signed zero.
            return Ok(0.0_f64.copysign(x));
        }
        let frac = x.abs() - x.abs().trunc();
        let (high, low) = if k >= int_text.len() {
            ("0".to_string(), format!("{int_text:0>k$}"))
        } else {
            let (h, l) = int_text.split_at(int_text.len() - k);
            (h.to_string(), l.to_string())
        };
        let half = format!("5{}", "0".repeat(k - 1));
        let up = match low.cmp(&half) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => frac > 0.0 || high.bytes().last().is_some_and(|d| (d - b'0') % 2 == 1),
        };
        let high = if up { increment_decimal(&high) } else { high };
        let text = format!("{high}e{k}");
        let v = text.parse::<f64>().unwrap_or(f64::INFINITY);
        if x < 0.0 {
            -v
        } else {
            v
        }
    };
    if r.is_infinite() {
        return Err(err(ErrorKind::OverflowError, "rounded value too large to represent"));
    }
    Ok(if r == 0.0 { 0.0f64.copysign(x) } else { r })
}

fn increment_decimal(s: &str) -> String {
    let mut digits: Vec<u8> = s.bytes().collect();
    let mut i = digits.len();
    loop {
        if i == 0 {
            digits.insert(0, b'1');
            break;
        }
        i -= 1;
        if digits[i] == b'9' {
            digits[i] = b'0';
        } else {
            digits[i] += 1;
            break;
        }
    }
    String::from_utf8(digits).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::ops::Must;

    #[test]
    fn rounding_like_python() {
        assert_eq!(round_float(1.23456, 2).must(), 1.23);
        assert_eq!(round_float(2.675, 2).must(), 2.67);
        assert_eq!(round_float(0.125, 2).must(), 0.12);
        assert_eq!(round_float(0.375, 2).must(), 0.38);
        assert_eq!(round_float(1250.0, -2).must(), 1200.0);
        assert_eq!(round_float(1350.0, -2).must(), 1400.0);
        assert_eq!(round_float(1250.0001, -2).must(), 1300.0);
        assert_eq!(round_float(-1250.0, -2).must(), -1200.0);
        // Far past the number's digits: a signed zero, as Python (once a panic).
        assert_eq!(round_float(8.047436149006938e74, -65536).must(), 0.0);
        assert!(round_float(-123.0, -5).must().is_sign_negative());
        assert_eq!(round_float(123.0, i64::MIN).must(), 0.0);
        assert_eq!(round_float(500.0, -3).must(), 0.0);
        assert_eq!(round_float(501.0, -3).must(), 1000.0);
        assert_eq!(round_float(49.0, -2).must(), 0.0);
        assert_eq!(round_float(51.0, -2).must(), 100.0);
        assert_eq!(round_float(960.0, -2).must(), 1000.0);
        assert_eq!(round_float(1.5, -400).must(), 0.0);
        assert!(round_float(1.7e308, -308).is_err());
        assert_eq!(round_int(1250, -2), 1200);
        assert_eq!(round_int(-1350, -2), -1400);
        assert_eq!(round_int(15, -1), 20);
        // Past the 64-bit range: CPython's 9223372036854775810, as the float Apsi returns.
        assert_eq!(round_int(i64::MAX - 1, -1), 9_223_372_036_854_775_810);
        assert_eq!(round_int(i64::MAX - 1, -1) as f64, 9.223372036854776e18);
        assert_eq!(round_int(i64::MIN, -1) as f64, -9.223372036854776e18);
        assert_eq!(increment_decimal("199"), "200");
        assert_eq!(increment_decimal("99"), "100");
    }
}
