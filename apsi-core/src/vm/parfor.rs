//! The run-time half of `parallel for` (the compiler's half is
//! `check::parfor`): the iteration space is cut into guided chunks
//! (`par::parts::Schedule`) that the threads take one at a time; each chunk
//! runs in growing blocks by the outlined chunk function, which carries the
//! chunk's reduction partials from block to block. The partials come back
//! per chunk, in chunk order, for the compiled combine code.

use crate::error::ErrorKind;
use crate::par::parts::{run_chunks, Chunk, Schedule};
use crate::value::{err, Caller, RangeObj, VResult, Value};
use std::sync::Arc;

/// What a `parallel for` iterates over.
pub enum LoopIter {
    /// `range(start, stop, step)` as evaluated (checked to be ints here).
    Range(Value, Value, Value),
    /// Any other iterable (materialised first).
    Items(Value),
}

fn int_of(v: &Value, what: &str) -> VResult<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(*b as i64),
        other => Err(err(
            ErrorKind::TypeError,
            format!("range() {what} must be an int, found {}", other.type_name()),
        )),
    }
}

/// The value a reduction starts from in a chunk other than the first:
/// `rest` (0 for `+=`, 1 for `*=`, the variable itself for `min`/`max`),
/// except that a `+=` on a list, string or tuple starts from an empty one
/// of its own (`acc += [i]` collects in every chunk, and `+=` extends a
/// list in place, so no two chunks may share one).
fn chunk_start(rest: &Value, first: &Value) -> Value {
    match (rest, first) {
        (Value::Int(0), Value::List(_)) => Value::list(Vec::new()),
        (Value::Int(0), Value::Str(_)) => Value::str(""),
        (Value::Int(0), Value::Tuple(_)) => Value::tuple(Vec::new()),
        _ => rest.clone(),
    }
}

/// Run the chunk function `f` over `iter`; `inits` are the (first chunk,
/// other chunks) initial values of each reduction. Returns the first
/// chunk's partials (a tuple, or none without reductions) and the list of
/// the other chunks' partial tuples, in chunk order.
pub fn run_loop(
    caller: &mut dyn Caller,
    f: &Value,
    iter: LoopIter,
    inits: Vec<(Value, Value)>,
) -> VResult<(Value, Value)> {
    let m = inits.len();
    // (n, value of iteration i as a chunk bound, step, seq)
    let (n, start, step, stop, seq) = match iter {
        LoopIter::Range(a, b, c) => {
            let (start, stop, step) = (int_of(&a, "start")?, int_of(&b, "stop")?, int_of(&c, "step")?);
            if step == 0 {
                return Err(err(ErrorKind::ValueError, "range() arg 3 must not be zero"));
            }
            let n = RangeObj { start, stop, step }.len().max(0) as usize;
            (n, start, step, stop, Value::None)
        }
        LoopIter::Items(v) => {
            let items = crate::ops::iterate(caller, &v)?;
            let n = items.len();
            (n, 0, 1, n as i64, Value::tuple(items))
        }
    };
    let firsts: Vec<Value> = inits.iter().map(|p| p.0.clone()).collect();
    let sched = Schedule::for_loop(n);
    if sched.is_empty() {
        let first = if m == 0 { Value::None } else { Value::tuple(firsts) };
        return Ok((first, Value::list(Vec::new())));
    }
    let rests: Vec<Value> = inits.into_iter().map(|p| p.1).collect();
    let f = f.clone();
    // The loop value of iteration i (i < n fits: it lies between start and stop).
    let at = move |i: usize| -> Value {
        if i >= n {
            Value::Int(stop)
        } else {
            Value::Int((start as i128 + i as i128 * step as i128) as i64)
        }
    };
    let work = Arc::new(move |c: &mut dyn Caller, chunk: &Chunk<'_>| -> VResult<Value> {
        let mut partials: Vec<Value> = if chunk.index == 0 {
            firsts.clone()
        } else {
            rests.iter().zip(&firsts).map(|(r, f)| chunk_start(r, f)).collect()
        };
        let mut args: Vec<Value> = Vec::with_capacity(4 + m);
        chunk.blocks(|i, j| {
            args.clear();
            args.extend([at(i), at(j), Value::Int(step), seq.clone()]);
            args.append(&mut partials);
            let r = c.call(&f, &args, &[])?;
            if m > 0 {
                match r {
                    Value::Tuple(t) if t.0.len() == m => partials = t.0.to_vec(),
                    _ => {
                        return Err(err(
                            ErrorKind::Error,
                            "internal error: a parallel for chunk returned no partials",
                        ))
                    }
                }
            }
            Ok(())
        })?;
        Ok(if m == 0 { Value::None } else { Value::tuple(partials) })
    });
    let mut results = run_chunks(caller, sched, work)?.into_iter();
    let first = results.next().unwrap_or(Value::None);
    Ok((first, Value::list(results.collect())))
}
