//! Interrupting a running program from another thread: a Jupyter kernel's
//! interrupt (SIGINT, or an `interrupt_request`) calls [`request`], and the
//! thread running Apsi code raises `KeyboardInterrupt` at the next loop
//! back-edge (`Jmp`, `ForRangeLoop`, `ForLoop`) it runs. A single native operation
//! already under way (a large `matmul`) finishes first.
//!
//! The flag is process-wide (one interpreter runs per process); the first
//! thread that sees it clears it, so one request raises one error. (So it
//! has no unit test here, where tests run programs on parallel threads:
//! `apsi-cli/tests/kernel_e2e.rs` interrupts `while` and `for` loops of a
//! real kernel.)
//!
//! The same check at the back-edge starts a cycle collection when the
//! collector has asked for one (`value/cycles.rs`): a back-edge is where no
//! container lock is held and every value in use sits in a register.

use std::sync::atomic::{AtomicU8, Ordering};

/// What the thread running Apsi code is to attend to at its next loop
/// back-edge: an interrupt ([`INTERRUPT`]), a cycle collection
/// ([`COLLECT`], `value/cycles.rs`). One byte, so the dispatch loop checks
/// both with one relaxed load.
static ATTENTION: AtomicU8 = AtomicU8::new(0);
const INTERRUPT: u8 = 1;
const COLLECT: u8 = 2;

/// Asks the running program to stop with `KeyboardInterrupt`. Safe to call
/// from any thread (not from a signal handler's context: use a watcher
/// thread, as `apsi` does).
pub fn request() {
    ATTENTION.fetch_or(INTERRUPT, Ordering::Relaxed);
}

/// Forgets a request that no code saw (call before running the next input).
pub fn clear() {
    ATTENTION.fetch_and(!INTERRUPT, Ordering::Relaxed);
}

/// Whether an interrupt or a collection waits (one relaxed load: the VM
/// reads it at every loop back-edge).
#[inline(always)]
pub fn pending() -> bool {
    ATTENTION.load(Ordering::Relaxed) != 0
}

/// Takes the pending request: the `KeyboardInterrupt` to raise, or `None`
/// when there is none (another thread took it first, or only a collection
/// was asked for).
#[cold]
pub(crate) fn take() -> Option<crate::value::Exc> {
    (ATTENTION.fetch_and(!INTERRUPT, Ordering::Relaxed) & INTERRUPT != 0)
        .then(|| crate::value::err(crate::error::ErrorKind::KeyboardInterrupt, "the run was interrupted"))
}

/// Asks for a cycle collection at the next loop back-edge.
pub(crate) fn request_collection() {
    ATTENTION.fetch_or(COLLECT, Ordering::Relaxed);
}

/// Takes a pending collection request.
#[cold]
pub(crate) fn take_collection() -> bool {
    ATTENTION.fetch_and(!COLLECT, Ordering::Relaxed) & COLLECT != 0
}
