//! Run `n` pieces of Apsi work at once and collect their results in order.
//!
//! The calling thread runs part 0 itself, then every part no worker has
//! claimed yet (so nested parallel loops and a busy pool never deadlock and
//! `--threads 1` runs everything in order on the caller); the other parts
//! run on the pool, each on a fresh executor that shares the caller's
//! runtime. A failing part raises the shared `stop` flag, which the other
//! parts poll between blocks of iterations, and the error of the lowest
//! failing part is returned.

use super::pool;
use crate::error::ErrorKind;
use crate::value::{err, Caller, Exc, VResult, Value};
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One piece of work: `(caller, part index, stop flag)`.
pub type PartFn = dyn Fn(&mut dyn Caller, usize, &AtomicBool) -> VResult<Value> + Send + Sync;

struct State {
    work: Arc<PartFn>,
    claimed: Box<[AtomicBool]>,
    stop: AtomicBool,
    results: Mutex<(Vec<Option<VResult<Value>>>, usize)>,
    done: Condvar,
}

impl State {
    fn run(&self, c: &mut dyn Caller, k: usize) {
        // Each part is a task of its own (`task_local`), on whatever thread runs it.
        let r = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            super::task_local::run_task(|| (self.work)(c, k, &self.stop))
        })) {
            Ok(r) => r,
            Err(_) => Err(err(ErrorKind::Error, "internal error: a parallel worker panicked")),
        };
        if r.is_err() {
            self.stop.store(true, Ordering::Relaxed);
        }
        let mut g = self.results.lock();
        if let Some(slot) = g.0.get_mut(k) {
            *slot = Some(r);
        }
        g.1 -= 1;
        if g.1 == 0 {
            self.done.notify_all();
        }
    }
}

/// Run parts `0..n` and return their results in part order, or the error of
/// the lowest part that failed.
pub fn run_parts(caller: &mut dyn Caller, n: usize, work: Arc<PartFn>) -> VResult<Vec<Value>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let st = Arc::new(State {
        work,
        claimed: (0..n).map(|_| AtomicBool::new(false)).collect(),
        stop: AtomicBool::new(false),
        results: Mutex::new(((0..n).map(|_| None).collect(), n)),
        done: Condvar::new(),
    });
    for k in 1..n {
        // A caller that cannot run Apsi code elsewhere runs every part itself.
        let Some(mut c) = caller.new_thread_caller() else { break };
        let st = st.clone();
        pool::submit(Box::new(move || {
            if !st.claimed[k].swap(true, Ordering::AcqRel) {
                st.run(&mut *c, k);
            }
        }));
    }
    for k in 0..n {
        if !st.claimed[k].swap(true, Ordering::AcqRel) {
            st.run(caller, k);
        }
    }
    pool::blocking(|| {
        let mut g = st.results.lock();
        while g.1 > 0 {
            st.done.wait(&mut g);
        }
    });
    let results = std::mem::take(&mut st.results.lock().0);
    let mut out = Vec::with_capacity(n);
    let mut first_err: Option<Exc> = None;
    for r in results {
        match r {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => {
                if first_err.is_none() {
                    first_err = Some(e);
                }
            }
            None => {
                if first_err.is_none() {
                    first_err = Some(err(ErrorKind::Error, "internal error: a parallel part never ran"));
                }
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Split `0..n` into `parts` static chunks; chunk `k` is `bounds(n, parts, k)`.
pub fn bounds(n: usize, parts: usize, k: usize) -> (usize, usize) {
    let parts = parts.max(1);
    let lo = (n as u128 * k as u128 / parts as u128) as usize;
    let hi = (n as u128 * (k as u128 + 1) / parts as u128) as usize;
    (lo, hi)
}

/// How many chunks `n` iterations get: one per thread, never empty ones.
pub fn chunk_count(n: usize) -> usize {
    super::threads().min(n)
}

/// Iterate `lo..hi` in blocks that grow from 16 to 4096 iterations, calling
/// `f(block_lo, block_hi)` and stopping early when `stop` is raised.
pub fn in_blocks(
    lo: usize,
    hi: usize,
    stop: &AtomicBool,
    mut f: impl FnMut(usize, usize) -> VResult<()>,
) -> VResult<()> {
    let mut i = lo;
    let mut size = 16usize;
    while i < hi {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let j = hi.min(i.saturating_add(size));
        f(i, j)?;
        i = j;
        size = (size * 2).min(4096);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_range_without_overlap() {
        for n in [0usize, 1, 2, 7, 100, 1001] {
            for parts in 1..6 {
                let mut next = 0;
                for k in 0..parts {
                    let (lo, hi) = bounds(n, parts, k);
                    assert_eq!(lo, next);
                    assert!(hi >= lo);
                    next = hi;
                }
                assert_eq!(next, n);
            }
        }
    }

    #[test]
    fn blocks_stop_when_asked() {
        let stop = AtomicBool::new(false);
        let mut seen = 0;
        in_blocks(0, 100_000, &stop, |a, b| {
            seen += b - a;
            if seen > 100 {
                stop.store(true, Ordering::Relaxed);
            }
            Ok(())
        })
        .ok();
        assert!(seen > 100 && seen < 100_000, "{seen}");
    }
}
