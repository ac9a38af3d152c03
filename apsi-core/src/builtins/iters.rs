//! `iter` and `next` (LANGUAGE.md §10.5); the protocol is `ops::iters`.

use super::args::Args;
use crate::ops::iters;
use crate::ops::iters::stop_iteration;
use crate::value::generator::Step;
use crate::value::{Caller, Kwargs, VResult, Value};

/// `iter(x)`: an iterator over any iterable; an iterator is its own.
pub(crate) fn iter(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("iter", args, kw, 1, &["x"])?;
    iters::get_iter(c, a.req(0)?)
}

/// `next(it[, default])`: the next item; at the end `default` if given,
/// else `StopIteration` (whose `value` is a generator's return value).
pub(crate) fn next(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    let a = Args::new("next", args, kw, 1, &["iterator", "default"])?;
    match iters::step(c, a.req(0)?)? {
        Step::Item(v) => Ok(v),
        Step::Done(ret) => match a.get(1) {
            Some(d) => Ok(d.clone()),
            None => Err(stop_iteration(ret)),
        },
    }
}
