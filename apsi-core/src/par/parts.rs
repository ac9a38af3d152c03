//! Run Apsi work on the pool and collect the results in order.
//!
//! Two runners:
//!
//! - [`run_chunks`] (the loops: `parallel for`, `pmap`, `parallel_reduce`,
//!   native `parallel for`): the iterations `0..n` are cut by a [`Schedule`]
//!   into guided chunks whose boundaries depend only on `n` and the thread
//!   count; the calling thread and up to `threads - 1` pool workers take
//!   chunks one at a time from an atomic counter, so a thread that gets less
//!   CPU (another process on its core) simply takes fewer chunks. Results
//!   are kept per chunk index and handed back in chunk order, never in
//!   completion order, so a reduction combined from them is bit-identical
//!   whichever thread ran which chunk.
//! - [`run_parts`]: `n` independent parts, the caller taking part 0 and every
//!   part no worker has claimed yet (static: one part per piece of work).
//!
//! In both, the caller runs whatever no worker has taken (so nested parallel
//! loops and a busy pool never deadlock, and `--threads 1` runs everything
//! in order on the caller); the other threads run on the pool, each on a
//! fresh executor that shares the caller's runtime. Every chunk or part is
//! a task of its own (`task_local`).

use super::pool;
use crate::error::ErrorKind;
use crate::value::{err, Caller, VResult, Value};
use parking_lot::{Condvar, Mutex};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
    in_order(results, "part")
}

/// The values of `results` in order, or the first error among them (a slot
/// that never ran is an internal error unless an earlier one failed).
fn in_order(results: Vec<Option<VResult<Value>>>, what: &str) -> VResult<Vec<Value>> {
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => return Err(e),
            None => {
                return Err(err(
                    ErrorKind::Error,
                    format!("internal error: a parallel {what} never ran"),
                ))
            }
        }
    }
    Ok(out)
}

/// Split `0..n` into `parts` static chunks; chunk `k` is `bounds(n, parts, k)`.
/// (The loops of this crate use [`Schedule`] instead.)
pub fn bounds(n: usize, parts: usize, k: usize) -> (usize, usize) {
    let parts = parts.max(1);
    let lo = (n as u128 * k as u128 / parts as u128) as usize;
    let hi = (n as u128 * (k as u128 + 1) / parts as u128) as usize;
    (lo, hi)
}

/// How many static chunks `n` iterations get: one per thread, never empty
/// ones. (The loops of this crate use [`Schedule`] instead.)
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

/// The smallest chunk a [`Schedule`] makes, unless the loop is so short that
/// it has fewer than `SHORT_CHUNKS × threads` such chunks. Each chunk costs
/// about one call of the loop body's function (and one step of the combine
/// code), as much as some tens of cheap iterations; with 16, a loop of 1,000
/// cheap iterations on 2 threads had 24 chunks, twice the body calls of one
/// chunk per thread, and took measurably more CPU time.
pub const MIN_CHUNK: usize = 128;
/// A short loop (under `SHORT_CHUNKS × threads × MIN_CHUNK` iterations) is
/// cut into this many equal chunks per thread (or single iterations when it
/// has fewer): its iterations may be expensive, so a slowed thread must not
/// hold a whole share, but its chunks must not be so many that a cheap body
/// pays more for them than one chunk per thread did.
pub const SHORT_CHUNKS: usize = 2;
/// A guided chunk is the iterations still unassigned divided by
/// `GUIDED_DIVISOR × threads` (OpenMP's `schedule(guided)` divides by the
/// thread count alone; the first chunks are then half the loop with two
/// threads, and a thread that gets half a core holds the loop up).
pub const GUIDED_DIVISOR: usize = 4;
/// First and largest block of iterations between two stop checks
/// ([`Chunk::blocks`]).
const FIRST_BLOCK: usize = 16;
const MAX_BLOCK: usize = 4096;
/// How long the caller spins for the last chunks before it sleeps (some
/// microseconds).
const SPIN: u32 = 1000;

/// How a loop over `0..n` is cut into chunks for a thread count: guided
/// self-scheduling with a minimum chunk. Chunk `k` covers
/// `ends[k-1]..ends[k]`; the sizes shrink geometrically from
/// `⌈n / (4·threads)⌉` to [`MIN_CHUNK`], so big loops get a few dozen chunks
/// per thread at most and the last ones are small enough to even out threads
/// that run at different speeds. A short loop is cut into
/// `min(n, SHORT_CHUNKS × threads)` chunks of equal size (the larger first).
///
/// The boundaries are a function of `n` and `threads` only (not of timing or
/// of which thread takes which chunk), which is what keeps reductions
/// reproducible. One thread (or `n ≤ 1`) gives one chunk: exactly the
/// sequential loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    threads: usize,
    ends: Vec<usize>,
}

impl Schedule {
    /// The guided schedule of `0..n` for `threads` threads (at least 1).
    pub fn guided(n: usize, threads: usize) -> Schedule {
        let threads = threads.max(1);
        let mut ends = Vec::new();
        if threads == 1 || n <= 1 {
            if n > 0 {
                ends.push(n);
            }
            return Schedule { threads, ends };
        }
        let short = threads.saturating_mul(SHORT_CHUNKS);
        if n / short < MIN_CHUNK {
            // Equal chunks, the first `n % count` one iteration longer.
            let count = short.min(n);
            let (size, longer) = (n / count, n % count);
            let mut lo = 0;
            for k in 0..count {
                lo += size + usize::from(k < longer);
                ends.push(lo);
            }
            return Schedule { threads, ends };
        }
        let div = threads.saturating_mul(GUIDED_DIVISOR);
        let mut lo = 0usize;
        while lo < n {
            let rem = n - lo;
            lo += rem.div_ceil(div).max(MIN_CHUNK).min(rem);
            ends.push(lo);
        }
        Schedule { threads, ends }
    }

    /// The guided schedule of `0..n` for the current thread count.
    pub fn for_loop(n: usize) -> Schedule {
        Schedule::guided(n, super::threads())
    }

    /// How many chunks.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The iteration count the schedule covers.
    pub fn n(&self) -> usize {
        self.ends.last().copied().unwrap_or(0)
    }

    /// The thread count it was made for.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Chunk `k`'s iterations `(lo, hi)` (empty past the last chunk).
    pub fn chunk(&self, k: usize) -> (usize, usize) {
        let hi = self.ends.get(k).copied().unwrap_or_else(|| self.n());
        let lo = if k == 0 {
            0
        } else {
            self.ends.get(k - 1).copied().unwrap_or(hi)
        };
        (lo, hi)
    }
}

/// One chunk of a loop, as [`run_chunks`] hands it to the work function.
pub struct Chunk<'a> {
    /// Its position in the schedule (0 = the loop's first iterations).
    pub index: usize,
    /// Its iterations, `lo..hi` (never empty).
    pub lo: usize,
    pub hi: usize,
    failed: &'a AtomicUsize,
    block: &'a Cell<usize>,
}

impl Chunk<'_> {
    /// Whether the chunk should stop early: an earlier chunk of the loop
    /// failed, so this chunk's results will not be used. (A failure in a
    /// *later* chunk never stops this one: see [`run_chunks`].)
    pub fn stopped(&self) -> bool {
        self.failed.load(Ordering::Relaxed) < self.index
    }

    /// Iterate the chunk in blocks, calling `f(block_lo, block_hi)` and
    /// stopping early when [`Chunk::stopped`]. Blocks grow from 16 to 4096
    /// iterations over the chunks one thread runs, so an expensive body
    /// notices a failure soon and a cheap one makes few calls.
    pub fn blocks(&self, mut f: impl FnMut(usize, usize) -> VResult<()>) -> VResult<()> {
        let mut i = self.lo;
        while i < self.hi {
            if self.stopped() {
                return Ok(());
            }
            let size = self.block.get();
            let j = self.hi.min(i.saturating_add(size));
            f(i, j)?;
            i = j;
            self.block.set((size * 2).min(MAX_BLOCK));
        }
        Ok(())
    }
}

/// The work of one chunk: `(caller, chunk)` to the chunk's result.
pub type ChunkFn = dyn Fn(&mut dyn Caller, &Chunk<'_>) -> VResult<Value> + Send + Sync;

struct Loop {
    sched: Schedule,
    work: Arc<ChunkFn>,
    /// The next chunk to hand out.
    next: AtomicUsize,
    /// The lowest chunk that failed (`usize::MAX`: none).
    failed: AtomicUsize,
    /// Per chunk index: its result (`None`: skipped or not yet run).
    results: Mutex<Vec<Option<VResult<Value>>>>,
    /// How many chunks are still to finish or be skipped (decremented after
    /// the result is stored; the last one notifies `done` under the lock).
    left: AtomicUsize,
    done: Condvar,
}

impl Loop {
    /// Take chunks until none is left.
    fn take_chunks(&self, c: &mut dyn Caller) {
        let block = Cell::new(FIRST_BLOCK);
        loop {
            let k = self.next.fetch_add(1, Ordering::Relaxed);
            if k >= self.sched.len() {
                return;
            }
            // After a failure in chunk f, the chunks after f are skipped.
            let r = if self.failed.load(Ordering::Relaxed) < k {
                None
            } else {
                Some(self.run(c, k, &block))
            };
            if matches!(r, Some(Err(_))) {
                self.failed.fetch_min(k, Ordering::Relaxed);
            }
            if let Some(slot) = self.results.lock().get_mut(k) {
                *slot = r;
            }
            if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
                let _g = self.results.lock();
                self.done.notify_all();
            }
        }
    }

    fn run(&self, c: &mut dyn Caller, k: usize, block: &Cell<usize>) -> VResult<Value> {
        let (lo, hi) = self.sched.chunk(k);
        let chunk = Chunk {
            index: k,
            lo,
            hi,
            failed: &self.failed,
            block,
        };
        // Each chunk is a task of its own (`task_local`), on whatever thread runs it.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            super::task_local::run_task(|| (self.work)(c, &chunk))
        })) {
            Ok(r) => r,
            Err(_) => Err(err(ErrorKind::Error, "internal error: a parallel worker panicked")),
        }
    }
}

/// Run `work` on every chunk of `sched` and return the results in chunk
/// order, or the error of the lowest chunk that failed.
///
/// The caller and up to `sched.threads() - 1` pool workers take chunks in
/// index order from one counter (dynamic scheduling). When chunk `f` fails,
/// chunks after it are skipped or stop at their next block, while chunks
/// before it run to their end: the error raised is therefore the one of the
/// lowest failing iteration, whatever the timing (for a body whose failures
/// do not depend on timing), and every iteration before it has run.
pub fn run_chunks(caller: &mut dyn Caller, sched: Schedule, work: Arc<ChunkFn>) -> VResult<Vec<Value>> {
    let count = sched.len();
    if count == 0 {
        return Ok(Vec::new());
    }
    let helpers = sched.threads().min(count) - 1;
    let st = Arc::new(Loop {
        sched,
        work,
        next: AtomicUsize::new(0),
        failed: AtomicUsize::new(usize::MAX),
        results: Mutex::new((0..count).map(|_| None).collect()),
        left: AtomicUsize::new(count),
        done: Condvar::new(),
    });
    for _ in 0..helpers {
        // A caller that cannot run Apsi code elsewhere runs every chunk itself.
        let Some(mut c) = caller.new_thread_caller() else { break };
        let st = st.clone();
        // A helper that starts after every chunk was taken just ends.
        pool::submit(Box::new(move || st.take_chunks(&mut *c)));
    }
    st.take_chunks(caller);
    // The chunks still running elsewhere are usually about to end: spin a
    // little before sleeping (a sleep and wake-up costs more than a short
    // loop). No `yield_now` here: on a loaded machine it can hand the core
    // to another process for a whole time slice.
    let mut spins = 0;
    while spins < SPIN && st.left.load(Ordering::Acquire) > 0 {
        std::hint::spin_loop();
        spins += 1;
    }
    if st.left.load(Ordering::Acquire) > 0 {
        pool::blocking(|| {
            let mut g = st.results.lock();
            while st.left.load(Ordering::Acquire) > 0 {
                st.done.wait(&mut g);
            }
        });
    }
    let results = std::mem::take(&mut *st.results.lock());
    in_order(results, "chunk")
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

    /// A caller that can "run Apsi code" on pool threads (the work functions
    /// below never call back into it).
    struct Threads;

    impl Caller for Threads {
        fn call(&mut self, _f: &Value, _args: &[Value], _kw: crate::value::Kwargs) -> VResult<Value> {
            Err(err(ErrorKind::Error, "not in these tests"))
        }
        fn write_out(&mut self, _text: &str) -> VResult<()> {
            Ok(())
        }
        fn new_thread_caller(&self) -> Option<Box<dyn Caller + Send>> {
            Some(Box::new(Threads))
        }
    }

    fn sizes(s: &Schedule) -> Vec<usize> {
        (0..s.len()).map(|k| s.chunk(k).1 - s.chunk(k).0).collect()
    }

    #[test]
    fn guided_chunks_cover_the_range_once_without_empty_chunks() {
        let ns = [
            0usize, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 100, 129, 1000, 4097, 65_537, 1_000_003,
        ];
        for n in ns {
            for threads in 1..=9 {
                let s = Schedule::guided(n, threads);
                assert_eq!(s.n(), n);
                assert_eq!(s.threads(), threads);
                let mut next = 0;
                for k in 0..s.len() {
                    let (lo, hi) = s.chunk(k);
                    assert_eq!(lo, next, "n={n} threads={threads} chunk {k}");
                    assert!(hi > lo, "empty chunk {k}: n={n} threads={threads}");
                    next = hi;
                }
                assert_eq!(next, n, "n={n} threads={threads}");
                assert_eq!(s.chunk(s.len()), (n, n));
                // Sizes never grow; a short loop has equal chunks (within
                // one iteration), a long one none below the minimum but the last.
                let sz = sizes(&s);
                assert!(sz.windows(2).all(|w| w[0] >= w[1]), "n={n} threads={threads}: {sz:?}");
                if threads > 1 && n > 1 {
                    if n < threads * SHORT_CHUNKS * MIN_CHUNK {
                        assert_eq!(s.len(), n.min(threads * SHORT_CHUNKS), "n={n} threads={threads}");
                        assert!(sz[0] - sz[sz.len() - 1] <= 1, "{sz:?}");
                    } else {
                        assert!(sz[..sz.len() - 1].iter().all(|&x| x >= MIN_CHUNK), "{sz:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn one_thread_is_one_chunk_and_chunk_counts_stay_small() {
        for n in [1usize, 2, 100, 1_000_000] {
            assert_eq!(sizes(&Schedule::guided(n, 1)), vec![n]);
        }
        assert!(Schedule::guided(0, 4).is_empty());
        // Short loops (their iterations may be expensive): two chunks per
        // thread, single iterations only when n <= 2 * threads.
        assert_eq!(sizes(&Schedule::guided(8, 2)), vec![2; 4]);
        assert_eq!(sizes(&Schedule::guided(10, 2)), vec![3, 3, 2, 2]);
        assert_eq!(sizes(&Schedule::guided(3, 8)), vec![1; 3]);
        assert_eq!(sizes(&Schedule::guided(511, 2)), vec![128, 128, 128, 127]);
        // Where the guided chunks begin, they begin at the minimum.
        assert_eq!(sizes(&Schedule::guided(512, 2)), vec![128; 4]);
        assert_eq!(Schedule::guided(1000, 2).len(), 8);
        for threads in [2usize, 4, 16] {
            for n in [threads, 10 * threads, 1000] {
                assert!(Schedule::guided(n, threads).len() >= threads.min(n));
            }
        }
        // Big loops: a few dozen chunks per thread, none smaller than MIN_CHUNK
        // but the last; the first is a quarter of a thread's share.
        let s = Schedule::guided(4_000_000, 2);
        assert!(s.len() < 100, "{}", s.len());
        assert_eq!(s.chunk(0), (0, 500_000));
        let s = Schedule::guided(1_000_000, 16);
        assert!(s.len() < 16 * 40, "{}", s.len());
        let sz = sizes(&s);
        assert!(sz[..sz.len() - 1].iter().all(|&x| x >= MIN_CHUNK));
    }

    /// The float sum of `x(i)` for `i` in `lo..hi`, folded in order from `init`.
    fn fold(init: f64, lo: usize, hi: usize) -> f64 {
        (lo..hi).fold(init, |s, i| s + 1.0 / (i as f64 + 1.0))
    }

    #[test]
    fn a_reduction_is_combined_in_chunk_order_whoever_runs_the_chunks() {
        let n = 20_000;
        for threads in [1usize, 2, 3, 8] {
            let sched = Schedule::guided(n, threads);
            // What the chunk-ordered combine must give, computed sequentially.
            let want = (1..sched.len()).fold(fold(0.5, 0, sched.chunk(0).1), |s, k| {
                let (lo, hi) = sched.chunk(k);
                s + fold(0.0, lo, hi)
            });
            for round in 0..5 {
                // Uneven, varying delays: chunks finish out of order.
                let work = Arc::new(move |_c: &mut dyn Caller, ch: &Chunk<'_>| -> VResult<Value> {
                    if (ch.index + round).is_multiple_of(3) {
                        std::thread::sleep(std::time::Duration::from_micros(200));
                    }
                    let mut s = if ch.index == 0 { 0.5 } else { 0.0 };
                    ch.blocks(|i, j| {
                        s = fold(s, i, j);
                        Ok(())
                    })?;
                    Ok(Value::Float(s))
                });
                let parts = run_chunks(&mut Threads, sched.clone(), work).unwrap();
                assert_eq!(parts.len(), sched.len());
                let mut it = parts.into_iter().map(|v| match v {
                    Value::Float(f) => f,
                    _ => panic!("not a float"),
                });
                let first = it.next().unwrap();
                let got = it.fold(first, |s, p| s + p);
                assert_eq!(got.to_bits(), want.to_bits(), "threads={threads} round={round}");
            }
        }
        // One thread: exactly the sequential fold.
        let seq = fold(0.5, 0, n);
        let one = Schedule::guided(n, 1);
        assert_eq!(one.len(), 1);
        assert_eq!(fold(0.5, one.chunk(0).0, one.chunk(0).1).to_bits(), seq.to_bits());
    }

    #[test]
    fn the_lowest_failing_chunk_is_reported_and_every_earlier_chunk_runs() {
        let sched = Schedule::guided(10_000, 4);
        let (bad_lo, _) = sched.chunk(5);
        let late = sched.len() - 1;
        for _ in 0..5 {
            let ran = Arc::new(AtomicUsize::new(0));
            let ran2 = ran.clone();
            let work = Arc::new(move |_c: &mut dyn Caller, ch: &Chunk<'_>| -> VResult<Value> {
                if ch.index == late {
                    // Fails first (chunk 5 waits a little before it fails).
                    return Err(err(ErrorKind::ValueError, "late"));
                }
                ch.blocks(|i, j| {
                    for it in i..j {
                        if it == bad_lo + 3 {
                            std::thread::sleep(std::time::Duration::from_millis(2));
                            return Err(err(ErrorKind::IndexError, "chunk 5"));
                        }
                        if it < bad_lo {
                            ran2.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Ok(())
                })?;
                Ok(Value::None)
            });
            let e = run_chunks(&mut Threads, sched.clone(), work).unwrap_err();
            assert_eq!(e.message, "chunk 5");
            assert_eq!(
                ran.load(Ordering::Relaxed),
                bad_lo,
                "an iteration before the failure did not run"
            );
        }
    }

    #[test]
    fn later_chunks_stop_after_a_failure() {
        let sched = Schedule::guided(1_000_000, 2);
        let work = Arc::new(|_c: &mut dyn Caller, ch: &Chunk<'_>| -> VResult<Value> {
            if ch.index == 0 {
                return Err(err(ErrorKind::ValueError, "first"));
            }
            // Would take very long if it did not stop.
            ch.blocks(|_, _| {
                std::thread::sleep(std::time::Duration::from_millis(1));
                Ok(())
            })?;
            Ok(Value::None)
        });
        let t = std::time::Instant::now();
        let e = run_chunks(&mut Threads, sched, work).unwrap_err();
        assert_eq!(e.message, "first");
        assert!(t.elapsed() < std::time::Duration::from_secs(10));
    }

    #[test]
    fn every_chunk_runs_once_with_helpers() {
        for threads in [1usize, 2, 5] {
            let sched = Schedule::guided(5000, threads);
            let seen: Arc<Vec<AtomicUsize>> = Arc::new((0..5000).map(|_| AtomicUsize::new(0)).collect());
            let s2 = seen.clone();
            let work = Arc::new(move |_c: &mut dyn Caller, ch: &Chunk<'_>| -> VResult<Value> {
                ch.blocks(|i, j| {
                    for x in &s2[i..j] {
                        x.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(())
                })?;
                Ok(Value::Int(ch.index as i64))
            });
            let out = run_chunks(&mut Threads, sched.clone(), work).unwrap();
            let idx: Vec<i64> = out
                .iter()
                .map(|v| match v {
                    Value::Int(i) => *i,
                    _ => -1,
                })
                .collect();
            assert_eq!(idx, (0..sched.len() as i64).collect::<Vec<_>>());
            assert!(seen.iter().all(|x| x.load(Ordering::Relaxed) == 1));
        }
    }
}
