//! `parallel_for`, `pmap`, `parallel_reduce`, `set_threads`: data-parallel
//! helpers over the core's guided chunks (`Schedule`: boundaries fixed by the
//! item count and the thread count), which the calling thread and the pool
//! take one at a time. Results keep the input order; reductions combine the
//! chunks' partials in chunk order, so a run is reproducible for a thread
//! count whichever thread ran which chunk.

use crate::util::int_arg;
use apsi_core::api::par::{run_chunks, Chunk, Schedule};
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, Args, Caller, Kwargs, VResult, Value};
use std::sync::Arc;

/// Run `each(caller, chunk, chunk_items)` over the chunks of `items`, one
/// result per chunk, in chunk order.
fn chunked(
    c: &mut dyn Caller,
    items: Vec<Value>,
    each: impl Fn(&mut dyn Caller, &Chunk<'_>, &[Value]) -> VResult<Value> + Send + Sync + 'static,
) -> VResult<Vec<Value>> {
    let sched = Schedule::for_loop(items.len());
    let items: Arc<[Value]> = items.into();
    run_chunks(
        c,
        sched,
        Arc::new(move |c: &mut dyn Caller, ch: &Chunk<'_>| each(c, ch, &items)),
    )
}

/// `parallel_for(items, f)`: call `f(x)` for every item; none.
pub fn parallel_for(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("parallel_for", args, kw, 2, &["items", "f"])?;
    let items = apsi_core::api::iterate(c, &args[0])?;
    let f = args[1].clone();
    chunked(c, items, move |c, ch, xs| {
        ch.blocks(|i, j| {
            for x in xs.get(i..j).unwrap_or(&[]) {
                c.call(&f, std::slice::from_ref(x), &[])?;
            }
            Ok(())
        })?;
        Ok(Value::None)
    })?;
    Ok(Value::None)
}

/// `pmap(f, xs)`: `[f(x) for x in xs]`, computed in parallel, in order.
pub fn pmap(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("pmap", args, kw, 2, &["f", "xs"])?;
    let f = args[0].clone();
    let items = apsi_core::api::iterate(c, &args[1])?;
    let parts = chunked(c, items, move |c, ch, xs| {
        let mut out = Vec::with_capacity(ch.hi - ch.lo);
        ch.blocks(|i, j| {
            for x in xs.get(i..j).unwrap_or(&[]) {
                out.push(c.call(&f, std::slice::from_ref(x), &[])?);
            }
            Ok(())
        })?;
        Ok(Value::list(out))
    })?;
    let mut all = Vec::new();
    for p in parts {
        if let Value::List(l) = p {
            all.append(&mut l.items.write());
        }
    }
    Ok(Value::list(all))
}

/// `parallel_reduce(items, f, combine, init)`: `combine` over `f(x)` of every
/// item, starting from `init`. The first chunk folds from `init`, the others
/// from their first element; the partials are combined in chunk order (so
/// with one thread, one chunk, it is exactly the sequential fold; `combine`
/// should be associative for the thread count not to matter).
pub fn parallel_reduce(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("parallel_reduce", args, kw, 4, &["items", "f", "combine", "init"])?;
    let items = apsi_core::api::iterate(c, &args[0])?;
    let (f, combine, init) = (args[1].clone(), args[2].clone(), args[3].clone());
    if items.is_empty() {
        return Ok(init);
    }
    let (comb, init0) = (combine.clone(), init.clone());
    let partials = chunked(c, items, move |c, ch, xs| {
        let mut acc: Option<Value> = if ch.index == 0 { Some(init0.clone()) } else { None };
        ch.blocks(|i, j| {
            for x in xs.get(i..j).unwrap_or(&[]) {
                let v = c.call(&f, std::slice::from_ref(x), &[])?;
                acc = Some(match acc.take() {
                    Some(a) => c.call(&comb, &[a, v], &[])?,
                    None => v,
                });
            }
            Ok(())
        })?;
        Ok(acc.unwrap_or(Value::None))
    })?;
    let mut it = partials.into_iter();
    let mut acc = it.next().unwrap_or(init);
    for p in it {
        acc = c.call(&combine, &[acc, p], &[])?;
    }
    Ok(acc)
}

/// `set_threads(n)`: the thread count of `parallel for`, `pmap`, … (and of
/// every kernel that registered with the core); at least 1.
pub fn set_threads(_c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("set_threads", args, kw, 1, &["n"])?;
    let n = int_arg("set_threads", "the thread count", &args[0])?;
    if n < 1 {
        return Err(err(
            ErrorKind::ValueError,
            format!("set_threads() needs at least 1 thread, got {n}"),
        ));
    }
    apsi_core::api::par::set_threads(n.min(apsi_core::api::par::MAX_THREADS as i64) as usize);
    Ok(Value::None)
}
