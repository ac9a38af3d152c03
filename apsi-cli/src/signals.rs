//! Stopping `apsi run` on SIGINT (Ctrl-C) and SIGTERM without losing what
//! the program printed: the output is flushed, `KeyboardInterrupt` (or
//! `Terminated`) is said on stderr, and apsi exits with 130 (or 143), as a
//! shell expects of a program stopped by those signals.
//!
//! How: `block` is called in `main` before any other thread exists, so every
//! thread (the interpreter, the pools, tasks) inherits a mask that blocks
//! both signals; one watcher thread takes them with `sigwait`. Nothing runs
//! in signal-handler context. Child processes get an empty mask (Rust's
//! `Command` resets it), so a Python worker still dies of SIGTERM.

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
/// and starts the watcher. Call before starting any other thread.
#[cfg(unix)]
pub fn install() {
    // SAFETY: plain libc calls on a local, initialised signal set.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        set
    };
    let started = std::thread::Builder::new()
        .name("apsi-signals".into())
        .stack_size(64 * 1024)
        .spawn(move || loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is a valid signal set blocked in every thread.
            if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
                continue;
            }
            stop(sig);
        });
    if started.is_err() {
        // No watcher: take the signals back, so they still stop the program.
        // SAFETY: as above.
        unsafe {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}

#[cfg(not(unix))]
pub fn install() {}

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
