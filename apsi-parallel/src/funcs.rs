//! `parallel_for`, `pmap`, `parallel_reduce`, `set_threads`: data-parallel
//! helpers over static chunks (one per thread), the calling thread taking
//! the first. Results keep the input order; reductions combine the chunks'
//! partials in chunk order, so a run is reproducible for a thread count.

use crate::util::int_arg;
use apsi_core::api::par::{bounds, chunk_count, in_blocks, run_parts};
use apsi_core::api::ErrorKind;
use apsi_core::api::{err, Args, Caller, Kwargs, VResult, Value};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Run `each(caller, chunk_items)` over static chunks of `items`.
fn chunked(
    c: &mut dyn Caller,
    items: Vec<Value>,
    each: impl Fn(&mut dyn Caller, &[Value], &AtomicBool) -> VResult<Value> + Send + Sync + 'static,
) -> VResult<Vec<Value>> {
    let n = items.len();
    let parts = chunk_count(n);
    let items: Arc<[Value]> = items.into();
    run_parts(
        c,
        parts,
        Arc::new(move |c: &mut dyn Caller, k: usize, stop: &AtomicBool| {
            let (lo, hi) = bounds(n, parts, k);
            each(c, items.get(lo..hi).unwrap_or(&[]), stop)
        }),
    )
}

/// `parallel_for(items, f)`: call `f(x)` for every item; none.
pub fn parallel_for(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("parallel_for", args, kw, 2, &["items", "f"])?;
    let items = apsi_core::api::iterate(c, &args[0])?;
    let f = args[1].clone();
    chunked(c, items, move |c, xs, stop| {
        in_blocks(0, xs.len(), stop, |i, j| {
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
    let parts = chunked(c, items, move |c, xs, stop| {
        let mut out = Vec::with_capacity(xs.len());
        in_blocks(0, xs.len(), stop, |i, j| {
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
/// with one thread it is exactly the sequential fold; `combine` should be
/// associative for the thread count not to matter).
pub fn parallel_reduce(c: &mut dyn Caller, args: &[Value], kw: Kwargs) -> VResult<Value> {
    Args::new("parallel_reduce", args, kw, 4, &["items", "f", "combine", "init"])?;
    let items = apsi_core::api::iterate(c, &args[0])?;
    let (f, combine, init) = (args[1].clone(), args[2].clone(), args[3].clone());
    if items.is_empty() {
        return Ok(init);
    }
    let (comb, init0) = (combine.clone(), init.clone());
    let n = items.len();
    let parts = chunk_count(n);
    let items: Arc<[Value]> = items.into();
    let partials = run_parts(
        c,
        parts,
        Arc::new(move |c: &mut dyn Caller, k: usize, stop: &AtomicBool| {
            let (lo, hi) = bounds(n, parts, k);
            let xs = items.get(lo..hi).unwrap_or(&[]);
            let mut acc: Option<Value> = if k == 0 { Some(init0.clone()) } else { None };
            in_blocks(0, xs.len(), stop, |i, j| {
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
        }),
    )?;
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
