//! The lock inside every mutable Apsi container (list items, dict tables,
//! struct fields, closure cells, module globals).
//!
//! A reader/writer lock that costs nothing while only one thread runs Apsi
//! code. Every thread that touches Apsi values holds a [`Participant`]
//! (each `Executor` owns one); while at most one exists, `read`/`write` hand
//! out the data without any atomic read-modify-write. Locked instructions
//! are not only slow in themselves: on x86 they stop later loads from
//! starting early, so a loop over a large dict pays every cache miss in
//! full. With two or more participants every access takes the real lock.
//!
//! Why this is sound:
//! - A second participant is only ever created by a thread that already is
//!   one (`Caller::new_thread_caller`, called by the spawning thread before
//!   the new thread starts), so the spawning thread sees the count rise before
//!   any other thread can touch a value, and it starts locking at its next
//!   access.
//! - A participant is dropped on its own thread after its last access, with
//!   `Release`; the survivor reads the count with `Acquire` before going
//!   lock-free, so it sees every write the others made.
//! - No guard is held across a call into Apsi code (the invariant of
//!   `value.rs`), so the mode cannot change while a lock-free guard is alive,
//!   and one thread never holds two guards of one container (that would
//!   already deadlock a real lock).

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicUsize, Ordering};

static PARTICIPANTS: AtomicUsize = AtomicUsize::new(0);

/// Proof that this thread may touch Apsi values; see the module docs.
pub struct Participant(());

impl Participant {
    /// Register one more thread that runs Apsi code. Call it on the thread
    /// that starts the new one, before the new thread starts.
    pub fn new() -> Participant {
        if PARTICIPANTS.fetch_add(1, Ordering::AcqRel) >= 1 {
            super::solo::end();
        }
        Participant(())
    }
}

impl Default for Participant {
    fn default() -> Self {
        Participant::new()
    }
}

impl Drop for Participant {
    fn drop(&mut self) {
        PARTICIPANTS.fetch_sub(1, Ordering::Release);
    }
}

/// How many threads hold a participant now.
pub(crate) fn participants() -> usize {
    PARTICIPANTS.load(Ordering::Acquire)
}

/// Are other threads running Apsi code now?
#[inline(always)]
pub fn shared_mode() -> bool {
    PARTICIPANTS.load(Ordering::Acquire) > 1
}

#[derive(Default)]
pub struct VLock<T>(RwLock<T>);

pub enum ReadGuard<'a, T> {
    Locked(RwLockReadGuard<'a, T>),
    Alone(&'a T),
}

pub enum WriteGuard<'a, T> {
    Locked(RwLockWriteGuard<'a, T>),
    Alone(&'a mut T),
}

impl<T> VLock<T> {
    pub const fn new(v: T) -> VLock<T> {
        VLock(RwLock::new(v))
    }

    #[inline(always)]
    pub fn read(&self) -> ReadGuard<'_, T> {
        if shared_mode() {
            ReadGuard::Locked(self.0.read())
        } else {
            // SAFETY: only this thread runs Apsi code, and it holds no other
            // guard of this container (module docs).
            ReadGuard::Alone(unsafe { &*self.0.data_ptr() })
        }
    }

    #[inline(always)]
    pub fn write(&self) -> WriteGuard<'_, T> {
        if shared_mode() {
            WriteGuard::Locked(self.0.write())
        } else {
            // SAFETY: as in `read`; no other reference to the data is alive.
            WriteGuard::Alone(unsafe { &mut *self.0.data_ptr() })
        }
    }

    pub fn get_mut(&mut self) -> &mut T {
        self.0.get_mut()
    }

    /// The data, read without the lock, for the cycle collector and for
    /// taking a new struct instance's field address (`StructObj::placed`).
    ///
    /// # Safety
    /// Nothing writes the data while the reference lives (solo mode at a
    /// safe point of the dispatch loop: no guard is held, no other thread
    /// runs Apsi code).
    pub(crate) unsafe fn peek(&self) -> &T {
        // SAFETY: the caller's.
        unsafe { &*self.0.data_ptr() }
    }

    pub fn into_inner(self) -> T {
        self.0.into_inner()
    }
}

impl<T> Deref for ReadGuard<'_, T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        match self {
            ReadGuard::Locked(g) => g,
            ReadGuard::Alone(r) => r,
        }
    }
}

impl<T> Deref for WriteGuard<'_, T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        match self {
            WriteGuard::Locked(g) => g,
            WriteGuard::Alone(r) => r,
        }
    }
}

impl<T> DerefMut for WriteGuard<'_, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        match self {
            WriteGuard::Locked(g) => &mut *g,
            WriteGuard::Alone(r) => r,
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for VLock<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("VLock").field(&*self.read()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_read_and_write_in_both_modes() {
        let l = VLock::new(vec![1, 2]);
        let _me = Participant::new();
        l.write().push(3);
        assert_eq!(*l.read(), vec![1, 2, 3]);
        let other = Participant::new();
        assert!(shared_mode());
        l.write().push(4);
        assert!(matches!(l.read(), ReadGuard::Locked(_)));
        drop(other);
        assert_eq!(l.read().len(), 4);
    }
}
