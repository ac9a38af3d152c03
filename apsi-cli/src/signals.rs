//! Stopping `apsi run` on SIGINT (Ctrl-C) and SIGTERM without losing what
//! the program printed: the output is flushed, `KeyboardInterrupt` (or
//! `Terminated`) is said on stderr, and apsi exits with 130 (or 143), as a
//! shell expects of a program stopped by those signals.
//!
//! How: `block` is called in `main` before any other thread exists, so every
//! thread (the interpreter, the pools, tasks) inherits a mask that blocks
//! both signals; the process's first thread, once it has handed the
//! interpreter's thread what it needs, takes them with `sigwait` (`watch`). Nothing runs
//! in signal-handler context. Child processes get an empty mask (Rust's
//! `Command` resets it), so a Python worker still dies of SIGTERM.
//!
//! SIGBUS cannot be waited for: it is delivered to the thread that touched
//! a page of a memory-mapped file that another program cut short
//! (`load_tensor(mmap=true)`, `open_tensor`). Its handler flushes the
//! output (waiting at most a moment for a thread that is writing it), says
//! what happened on stderr and exits with 135 (128 + SIGBUS, what a shell
//! expects). It is the last thing the process does, so it does not return.

use std::sync::OnceLock;
use std::time::Duration;

type Flusher = Box<dyn Fn(Duration) -> bool + Send + Sync>;

/// What the watcher flushes; set once the runtime exists.
static FLUSH: OnceLock<Flusher> = OnceLock::new();

/// How long the watcher waits for a thread that is writing output.
const FLUSH_WAIT: Duration = Duration::from_millis(500);

/// Registers the program output to flush when a signal stops the program.
pub fn on_stop_flush(f: impl Fn(Duration) -> bool + Send + Sync + 'static) {
    let _ = FLUSH.set(Box::new(f));
}

/// Blocks SIGINT and SIGTERM in this thread (and every thread it starts)
/// and installs the SIGBUS handler; the set to [`watch`] for, or `None`
/// when they could not be blocked (they then stop the process as usual).
/// Call before starting any other thread.
#[cfg(unix)]
pub fn block() -> Option<libc::sigset_t> {
    // SAFETY: plain libc calls on a local, initialised signal set.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return None;
        }
        set
    };
    install_bus_handler();
    Some(set)
}

/// Takes the signals [`block`] blocked, for good: the first one stops the
/// program. `apsi run` calls it on the process's first thread once that
/// thread has nothing else to do (the interpreter runs on its own thread
/// and ends the process), which spares starting a watcher thread while
/// the interpreter's is starting (the two competed for the second core:
/// the interpreter's thread began 0.1 ms later in a cached start). A
/// signal that comes while that thread still reads and hashes the
/// program for the cache is taken when it is done: the interpreter's
/// thread waits for the same read, so nothing of the program has run.
#[cfg(unix)]
pub fn watch(set: libc::sigset_t) -> ! {
    loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: `set` is a valid signal set blocked in every thread.
        if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
            continue;
        }
        stop(sig);
    }
}

/// For `apsi kernel`: blocks SIGINT in this thread (and every thread it
/// starts) and starts a watcher that calls `on_interrupt` at each SIGINT,
/// so an interrupt stops the running cell, not the process. SIGTERM keeps
/// its default (Jupyter ends a kernel with it when a shutdown fails). Call
/// before starting any other thread.
#[cfg(unix)]
#[cfg_attr(not(feature = "kernel"), allow(dead_code))]
pub fn install_interrupt(on_interrupt: fn()) {
    // SAFETY: plain libc calls on a local, initialised signal set.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        set
    };
    let started = std::thread::Builder::new()
        .name("apsi-interrupt".into())
        .stack_size(64 * 1024)
        .spawn(move || loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is a valid signal set blocked in every thread.
            if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
                on_interrupt();
            }
        });
    if started.is_err() {
        // SAFETY: as above.
        unsafe {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}
#[cfg(not(unix))]
pub fn install_interrupt(_on_interrupt: fn()) {}

/// What stderr says when a SIGBUS stops the program.
const BUS_MESSAGE: &[u8] = b"BusError: the program read memory that is no longer there (SIGBUS): a memory-mapped file \
(load_tensor(mmap=true), open_tensor) was most likely cut short by another program while it was mapped; \
the output printed so far was kept\n";

/// Installs the SIGBUS handler (see the module documentation). Rust's own
/// handler (for stack overflows, which Linux reports as SIGSEGV) is not
/// needed for SIGBUS.
#[cfg(unix)]
fn install_bus_handler() {
    // SAFETY: a zeroed sigaction with a valid handler and an empty mask;
    // `on_bus` only does what a last act of the process may.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_bus as *const () as libc::sighandler_t;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
    }
}

#[cfg(unix)]
extern "C" fn on_bus(_sig: libc::c_int, _info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    use std::sync::atomic::{AtomicI64, Ordering};
    /// The thread handling the first fault (0: none yet).
    static HANDLER: AtomicI64 = AtomicI64::new(0);
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::syscall(libc::SYS_gettid) } as i64;
    match HANDLER.compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => {
            if let Some(f) = FLUSH.get() {
                f(Duration::from_millis(200));
            }
            // SAFETY: write(2) of a static buffer to stderr.
            unsafe {
                libc::write(2, BUS_MESSAGE.as_ptr().cast(), BUS_MESSAGE.len());
            }
        }
        // The flush itself faulted: end at once.
        Err(first) if first == me => {}
        // Another thread faulted too (a parallel loop over the same file):
        // the first one flushes and exits; wait for it, a while at most.
        Err(_) => {
            for _ in 0..200 {
                // SAFETY: usleep has no preconditions.
                unsafe { libc::usleep(10_000) };
            }
        }
    }
    // SAFETY: _exit ends the process without running anything else.
    unsafe { libc::_exit(135) }
}
#[cfg(unix)]
fn stop(sig: libc::c_int) -> ! {
    if let Some(f) = FLUSH.get() {
        f(FLUSH_WAIT);
    }
    let (name, code) = if sig == libc::SIGINT {
        ("KeyboardInterrupt", 130)
    } else {
        ("Terminated", 143)
    };
    eprintln!("{name}");
    std::process::exit(code)
}
