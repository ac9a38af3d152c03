//! The process-wide worker pool.
//!
//! Invariants (all counters under one mutex):
//! - `total` threads exist; `idle` of them wait for work; `blocked` of them
//!   run a job that waits inside a parallel primitive ([`blocking`]).
//! - A thread is started only while `total - idle - blocked` (the running
//!   workers) is below [`super::threads()`] and jobs wait that the idle
//!   workers will not take, so CPU-bound work never oversubscribes the
//!   cores while blocked tasks can never starve the queue.
//! - A worker idle for [`IDLE_EXIT`] while more than `threads()` exist ends.
//! - Jobs never unwind into the pool: a panicking job is caught and dropped
//!   (the job wrappers of this crate report it as an internal error first).

use parking_lot::{Condvar, Mutex};
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

pub type Job = Box<dyn FnOnce() + Send + 'static>;

/// Never more threads than this, whatever blocks (each reserves a stack).
pub const MAX_THREADS: usize = 2048;
const IDLE_EXIT: Duration = Duration::from_secs(2);
/// Stack of a worker: Apsi calls do not nest on it, native callbacks do
/// (bounded by the runtime's native depth).
const STACK: usize = 64 << 20;

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    total: usize,
    idle: usize,
    blocked: usize,
    /// Workers spinning briefly for new work before they sleep.
    searching: usize,
}

struct Pool {
    st: Mutex<State>,
    cond: Condvar,
    /// `queue.len()`, readable without the lock (spinning workers peek at it).
    queued: AtomicUsize,
}

/// How long a worker out of work spins before it sleeps: a stream of small
/// jobs then costs no sleep/wake system calls.
const SPIN: u32 = 2000;

thread_local! {
    static IS_WORKER: Cell<bool> = const { Cell::new(false) };
}

fn pool() -> &'static Pool {
    static P: OnceLock<Pool> = OnceLock::new();
    P.get_or_init(|| Pool {
        st: Mutex::new(State::default()),
        cond: Condvar::new(),
        queued: AtomicUsize::new(0),
    })
}

impl State {
    fn running(&self) -> usize {
        self.total.saturating_sub(self.idle + self.blocked + self.searching)
    }
    /// Whether queued jobs need one more thread than the idle ones.
    fn wants_thread(&self) -> bool {
        self.queue.len() > self.idle + self.searching && self.running() < super::threads() && self.total < MAX_THREADS
    }
}

/// Run `job` on a pool thread.
pub fn submit(job: Job) {
    let p = pool();
    let mut st = p.st.lock();
    st.queue.push_back(job);
    p.queued.store(st.queue.len(), Ordering::Release);
    if st.idle > 0 && st.searching == 0 {
        p.cond.notify_one();
    }
    if st.wants_thread() {
        let _ = start_worker(&mut st);
    }
}

/// Mark the current thread as waiting while `f` runs, so that, on a pool
/// worker, another worker may run meanwhile. Wrap only the waiting itself.
pub fn blocking<R>(f: impl FnOnce() -> R) -> R {
    blocking_with(false, f)
}

/// [`blocking`] for a wait that holds no lock a queued job could need (a
/// task's `wait`): when queued work has nobody to run it — every worker
/// waits and no thread can be started (the system refused one, or the cap
/// is reached) — the waiting thread runs the queued jobs itself first, so
/// nested waits finish instead of hanging (`spawn(f, n - 1).wait()` under
/// `ulimit -v`).
pub fn blocking_helping<R>(f: impl FnOnce() -> R) -> R {
    blocking_with(true, f)
}

fn blocking_with<R>(may_help: bool, f: impl FnOnce() -> R) -> R {
    let worker = IS_WORKER.with(|w| w.get());
    if !worker && !may_help {
        return f();
    }
    let p = pool();
    let help = {
        let mut st = p.st.lock();
        if worker {
            st.blocked += 1;
        }
        if st.queue.is_empty() {
            false
        } else if st.idle > 0 {
            p.cond.notify_one();
            false
        } else {
            let started = st.wants_thread() && start_worker(&mut st);
            // Nobody idle, searching or running: the queue would wait forever.
            // (A thread that is already running queued jobs while it waits
            // counts once per nested wait, so `blocked` may pass `total`.)
            may_help && !started && st.blocked >= st.total
        }
    };
    if help {
        run_queued_here(p);
    }
    let r = f();
    if worker {
        p.st.lock().blocked -= 1;
    }
    r
}

/// Runs queued jobs on the calling thread until the queue is empty.
fn run_queued_here(p: &Pool) {
    loop {
        let job = {
            let mut st = p.st.lock();
            let job = st.queue.pop_front();
            p.queued.store(st.queue.len(), Ordering::Release);
            job
        };
        let Some(job) = job else { break };
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

/// Whether the current thread is a pool worker.
pub fn on_worker() -> bool {
    IS_WORKER.with(|w| w.get())
}

/// Threads the pool has now (for tests and diagnostics).
pub fn thread_total() -> usize {
    pool().st.lock().total
}

/// Starts one more worker; `false` when the system refused the thread (the
/// queued work then waits for a running worker, or a waiting thread runs
/// it: see [`blocking`]).
fn start_worker(st: &mut State) -> bool {
    let b = std::thread::Builder::new().name("apsi-worker".into()).stack_size(STACK);
    st.total += 1;
    if b.spawn(worker_loop).is_err() {
        st.total -= 1;
        return false;
    }
    true
}

fn worker_loop() {
    IS_WORKER.with(|w| w.set(true));
    let p = pool();
    let mut st = p.st.lock();
    loop {
        if let Some(job) = st.queue.pop_front() {
            p.queued.store(st.queue.len(), Ordering::Release);
            drop(st);
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            st = p.st.lock();
            continue;
        }
        // Out of work: spin a little (counted as searching, so submitters
        // need not wake anyone), then sleep.
        st.searching += 1;
        drop(st);
        let mut spins = 0;
        while spins < SPIN && p.queued.load(Ordering::Acquire) == 0 {
            if spins % 64 == 63 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
            spins += 1;
        }
        st = p.st.lock();
        st.searching -= 1;
        if !st.queue.is_empty() {
            continue;
        }
        st.idle += 1;
        let timed_out = p.cond.wait_for(&mut st, IDLE_EXIT).timed_out();
        st.idle -= 1;
        if timed_out && st.queue.is_empty() && st.total > super::threads() {
            st.total -= 1;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn runs_every_job() {
        let n = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..200 {
            let n = n.clone();
            let tx = tx.clone();
            submit(Box::new(move || {
                n.fetch_add(1, Ordering::SeqCst);
                let _ = tx.send(());
            }));
        }
        for _ in 0..200 {
            rx.recv_timeout(Duration::from_secs(20)).expect("a job never ran");
        }
        assert_eq!(n.load(Ordering::SeqCst), 200);
    }

    #[test]
    fn blocked_jobs_do_not_starve_the_queue() {
        // More jobs wait on each other than there are threads: job k waits
        // for job k+1 to have run. Without compensation this deadlocks.
        let k = 3 * super::super::threads() + 4;
        let flags: Arc<Vec<(std::sync::Mutex<bool>, std::sync::Condvar)>> = Arc::new(
            (0..=k)
                .map(|_| (std::sync::Mutex::new(false), std::sync::Condvar::new()))
                .collect(),
        );
        let (tx, rx) = std::sync::mpsc::channel();
        for i in 0..k {
            let flags = flags.clone();
            let tx = tx.clone();
            submit(Box::new(move || {
                blocking(|| {
                    let (m, c) = &flags[i + 1];
                    let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
                    while !*g && i + 1 < k {
                        g = c.wait(g).unwrap_or_else(|e| e.into_inner());
                    }
                });
                let (m, c) = &flags[i];
                *m.lock().unwrap_or_else(|e| e.into_inner()) = true;
                c.notify_all();
                let _ = tx.send(());
            }));
        }
        for _ in 0..k {
            rx.recv_timeout(Duration::from_secs(20))
                .expect("deadlock: a blocked job starved the queue");
        }
    }
}
