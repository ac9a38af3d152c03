//! Threads for Apsi programs: the shared worker pool, the thread count, the
//! runner behind `parallel for` (and the `parallel` module's `pmap` and
//! friends), and the registry of spawned tasks a runtime waits for at exit.
//!
//! Why not rayon's pool: `spawn`ed Apsi tasks may block (a channel, a lock,
//! another task), and a fixed pool would deadlock once every worker waits on
//! work still queued behind it (with `--threads 1` at once). This pool keeps
//! at most `threads()` workers *running*; a worker that blocks in a parallel
//! primitive (see [`blocking`]) lets another worker start, as Go's scheduler
//! does. Work that never blocks (loop chunks) keeps exactly `threads()` busy.
//!
//! - [`pool`]: the elastic worker pool (`submit`, `blocking`).
//! - [`parts`]: run N pieces of Apsi work, the caller taking part 0, results
//!   in part order, the first error stopping the rest.
//! - The registry of spawned tasks is the value model's (`value::tasks`);
//!   `parallel for`'s run-time side is the VM's (`vm::parfor`).
//! - [`kernel_pool`]: rayon's global pool, where tensor kernels split their
//!   work, and the interpreter's thread as one of its threads.
//! - [`task_local`]: hooks that give each task its own copy of a module's
//!   thread-local state (`use random`'s generator).

pub mod kernel_pool;
pub mod parts;
pub mod pool;
pub mod task_local;

use std::sync::atomic::{AtomicUsize, Ordering};

static THREADS: AtomicUsize = AtomicUsize::new(0);

/// The hooks told about a new thread count (tensor kernels, BLAS).
static HOOKS: parking_lot::Mutex<Vec<fn(usize)>> = parking_lot::Mutex::new(Vec::new());

/// How many threads `parallel for`, `pmap` and friends use: `set_threads`,
/// else `--threads`, else [`cpu_count`] (read once: kernels ask for every
/// matrix product, and reading it costs system calls and a file).
pub fn threads() -> usize {
    match THREADS.load(Ordering::Relaxed) {
        0 => {
            static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
            *CPUS.get_or_init(cpu_count)
        }
        n => n,
    }
}

/// Set the thread count (at least 1) for the whole process, and tell every
/// registered hook (so tensor kernels and BLAS follow the same bound).
pub fn set_threads(n: usize) {
    let n = n.max(1);
    THREADS.store(n, Ordering::Relaxed);
    let hooks: Vec<fn(usize)> = HOOKS.lock().clone();
    for h in hooks {
        h(n);
    }
}

/// Register a function called with the new count on every `set_threads`
/// (and once now, with the current count).
pub fn on_set_threads(hook: fn(usize)) {
    HOOKS.lock().push(hook);
    hook(threads());
}

/// CPUs this process may use: affinity and cgroup quotas (v1 and v2, as the
/// standard library reads them), further capped by a cgroup v2 `cpu.max`
/// quota when one is set.
pub fn cpu_count() -> usize {
    let mut n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    if let Ok(text) = std::fs::read_to_string("/sys/fs/cgroup/cpu.max") {
        let mut parts = text.split_whitespace();
        if let (Some(q), Some(p)) = (parts.next(), parts.next()) {
            if let (Ok(q), Ok(p)) = (q.parse::<f64>(), p.parse::<f64>()) {
                if q > 0.0 && p > 0.0 {
                    n = n.min(((q / p).ceil() as usize).max(1));
                }
            }
        }
    }
    n.max(1)
}
