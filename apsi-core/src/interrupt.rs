//! Interrupting a running program from another thread: a Jupyter kernel's
//! interrupt (SIGINT, or an `interrupt_request`) calls [`request`], and the
//! thread running Apsi code raises `KeyboardInterrupt` at the next loop
//! back-edge (`Jmp`, `ForRangeLoop`) it runs. A single native operation
//! already under way (a large `matmul`) finishes first.
//!
//! The flag is process-wide (one interpreter runs per process); the first
//! thread that sees it clears it, so one request raises one error. (So it
//! has no unit test here, where tests run programs on parallel threads:
//! `apsi-cli/tests/kernel_e2e.rs` interrupts `while` and `for` loops of a
//! real kernel.)

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Asks the running program to stop with `KeyboardInterrupt`. Safe to call
/// from any thread (not from a signal handler's context: use a watcher
/// thread, as `apsi` does).
pub fn request() {
    REQUESTED.store(true, Ordering::Relaxed);
}

/// Forgets a request that no code saw (call before running the next input).
pub fn clear() {
    REQUESTED.store(false, Ordering::Relaxed);
}

/// Whether a request waits to be raised (one relaxed load: the VM reads it
/// at every loop back-edge).
#[inline(always)]
pub fn pending() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// Takes the pending request: the `KeyboardInterrupt` to raise, or `None`
/// when another thread took it first.
#[cold]
pub(crate) fn take() -> Option<crate::value::Exc> {
    REQUESTED
        .swap(false, Ordering::Relaxed)
        .then(|| crate::value::err(crate::error::ErrorKind::KeyboardInterrupt, "the run was interrupted"))
}
