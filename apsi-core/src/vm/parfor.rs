//! The run-time half of `parallel for` (the compiler's half is
//! `check::parfor`): static chunks of the iteration space, one per thread,
//! each run in growing blocks by the outlined chunk function, which carries
//! the worker's reduction partials from block to block.

use crate::error::ErrorKind;
use crate::par::parts::{bounds, chunk_count, in_blocks, run_parts};
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

/// Run the chunk function `f` over `iter`; `inits` are the (first worker,
/// other workers) initial values of each reduction. Returns the first
/// worker's partials (a tuple, or none without reductions) and the list of
/// the other workers' partial tuples, in worker order.
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
    let parts = chunk_count(n);
    if parts == 0 {
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
    let work = Arc::new(
        move |c: &mut dyn Caller, k: usize, stop_flag: &std::sync::atomic::AtomicBool| -> VResult<Value> {
            let (lo, hi) = bounds(n, parts, k);
            let mut partials: Vec<Value> = if k == 0 { firsts.clone() } else { rests.clone() };
            let mut args: Vec<Value> = Vec::with_capacity(4 + m);
            in_blocks(lo, hi, stop_flag, |i, j| {
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
        },
    );
    let mut results = run_parts(caller, parts, work)?.into_iter();
    let first = results.next().unwrap_or(Value::None);
    Ok((first, Value::list(results.collect())))
}
