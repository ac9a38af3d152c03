//! The synchronisation primitives the channel and atomic cores are built on:
//! the standard library's, or loom's when built with `--cfg loom` so the
//! model tests in `tests/loom.rs` can explore every interleaving.

#[cfg(loom)]
pub use loom::sync::atomic::{AtomicI64, AtomicU64, Ordering};
#[cfg(loom)]
pub use loom::sync::{Condvar, Mutex, MutexGuard};

#[cfg(not(loom))]
pub use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
#[cfg(not(loom))]
pub use std::sync::{Condvar, Mutex, MutexGuard};

/// Lock, ignoring poisoning (a panic while holding these locks cannot leave
/// the protected state inconsistent: every update is a single assignment).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Wait on `c`, marking the thread as blocked for the worker pool.
pub fn wait<'a, T>(c: &Condvar, g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    apsi_core::api::par::blocking(|| c.wait(g).unwrap_or_else(|e| e.into_inner()))
}
