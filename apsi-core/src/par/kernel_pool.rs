//! The pool tensor kernels split their work on: rayon's global pool.
//!
//! Kernels never run Apsi code and never wait on anything but each other, so
//! a fixed pool is right for them (Apsi's own code runs on [`super::pool`]).
//!
//! **The interpreter's thread as one of the pool's threads.** A kernel called
//! from a thread outside the pool hands its whole job to the pool and sleeps
//! until it is done: two wake-ups and a sleep per operation, and the caller's
//! core idles meanwhile. A model's training step makes hundreds of such
//! operations of a few dozen microseconds each, so on 2 threads that hand-off
//! cost about what the second core saved (issue 18: the CNN took longer an
//! epoch on 2 threads than on 1). When the interpreter's thread is the
//! pool's thread 0 instead, a kernel's split leaves one share on that
//! thread's own queue and computes the other at once; an idle worker steals
//! the share, or the thread takes it back itself when nobody did.
//!
//! Invariants:
//! - The calling thread joins only a pool of more than one thread: with one,
//!   a wait of the interpreter's (on a task, a channel, `parallel for`'s
//!   parts) would leave no thread for the kernels those others run.
//! - With `n` threads, `n - 1` are the pool's own, so however long the
//!   interpreter's thread waits on Apsi work, kernels called from elsewhere
//!   still have a thread; and kernels never wait on Apsi work, so the
//!   interpreter's thread is never waited for inside the pool.
//! - A kernel's jobs take no tensor lock: they get slices from the kernel
//!   that took the locks before splitting. (While it waits inside a split,
//!   the interpreter's thread may run a job of a task's kernel, and it may
//!   be holding a tensor's write lock then.)
//! - The thread that joins must live as long as the process (the CLI's
//!   interpreter thread): the pool is global and keeps it as thread 0.
//! - Which thread computes a share never changes a result: kernels fix their
//!   chunks by size, not by who runs them (LAYERS.md: same bits on 1 and 2
//!   threads).

use std::cell::Cell;

thread_local! {
    /// Whether this thread asked to join the pool when it is first needed.
    static JOIN_WHEN_NEEDED: Cell<bool> = const { Cell::new(false) };
}

/// Sizes the pool to `n` threads now, once per process (a no-op when it
/// exists, as it does after any kernel ran).
pub fn build(n: usize) {
    let _ = rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build_global();
}

/// Makes the calling thread the pool's thread 0 once a tensor is first read
/// or made on it: the pool is built then, with [`super::threads()`] threads
/// (so a `set_threads` before the first tensor counts), and not at all by a
/// program without tensors (building it cost `apsi run` of a one-line
/// program 0.2-0.7 ms of its 2.5 in a `prof` build). With one thread, the
/// pool is built as usual (see the module's invariants). Nothing happens
/// when the pool exists by then (a kernel ran on another thread first):
/// kernels then hand their work over as before.
pub fn join_when_needed() {
    JOIN_WHEN_NEEDED.with(|j| j.set(true));
}

/// Called before a kernel reads, writes or makes elements: builds the pool
/// when this thread asked to join it ([`join_when_needed`]).
#[inline]
pub fn ready() {
    if JOIN_WHEN_NEEDED.with(|j| j.get()) {
        join_now();
    }
}

#[cold]
fn join_now() {
    JOIN_WHEN_NEEDED.with(|j| j.set(false));
    let n = super::threads();
    if n > 1 {
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .use_current_thread()
            .build_global();
    } else {
        build(1);
    }
}

/// Whether the calling thread is one of the pool's threads (a split then
/// costs it no sleep).
#[inline]
pub fn on_pool_thread() -> bool {
    rayon::current_thread_index().is_some()
}

/// Threads kernels may split work among (rayon's count, after [`ready`]).
#[inline]
pub fn threads() -> usize {
    ready();
    rayon::current_num_threads()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_thread_that_joins_a_pool_computes_its_shares_and_gets_the_same_sums() {
        // A pool of its own (the global one is the process's): thread 0 is
        // this test's thread, as the interpreter's is in the CLI.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .use_current_thread()
            .build()
            .unwrap();
        assert_eq!(rayon::current_thread_index(), Some(0));
        use rayon::prelude::*;
        let xs: Vec<f64> = (0..1_000_000).map(|i| (i as f64).sqrt()).collect();
        let chunked = |v: &[f64]| v.par_chunks(1 << 16).map(|c| c.iter().sum::<f64>()).collect::<Vec<_>>();
        let here = chunked(&xs);
        let elsewhere = std::thread::scope(|s| s.spawn(|| pool.install(|| chunked(&xs))).join().unwrap());
        assert_eq!(here, elsewhere);
        // A wait of thread 0 outside the pool leaves the other thread to
        // kernels called from elsewhere.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let sum: f64 = pool.install(|| xs.par_iter().sum());
                tx.send(sum).unwrap();
            });
            let got = rx.recv().unwrap();
            assert!(got > 0.0);
        });
        drop(pool);
    }
}
