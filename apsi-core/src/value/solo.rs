//! Reference counts without locked instructions while one thread runs
//! Apsi code ("solo" counting).
//!
//! Every heap value a `Value` holds is counted: an `Arc` (lists, tuples,
//! structs, closures, …) or a `StrRef`. Their counts are atomic, and on
//! x86 each `lock` instruction costs more than the work around it and stops
//! later loads from starting early: on object programs (deltablue,
//! richards) a tenth of the run went to counting. While only one thread
//! runs Apsi code nobody else can touch a count, so the dispatch loop's
//! copies (`Value::retain`, through `Value::words`) and overwrites
//! (`Value::release_solo`, through `setv` and `set_words`) change counts
//! with a plain load and store instead.
//!
//! Why this is sound:
//! - Solo counting is only ever switched on by a program's entry point
//!   (`allow`, called by `apsi run` before its one runtime exists), never by
//!   a library or a test harness that may run several runtimes on several
//!   threads at once (they share static values such as the prelude's).
//! - It is switched off for good the moment a second [`Participant`]
//!   exists (`vlock.rs`): a second participant is only ever created by the
//!   thread that already is one, before the new thread starts, so the
//!   switch happens-before anything the new thread does, and every plain
//!   update made before it happens-before the new thread's first atomic
//!   one. It is never switched back on, so no thread that is winding down
//!   (dropping what it held after its participant is gone) can race with
//!   a plain update.
//! - Threads that are not participants never hold `Value`s: tensor kernels
//!   on worker threads read and write element buffers, not values.
//! - A count at 1 is never decremented here: the last reference is dropped
//!   the usual way (`drop_in_place`), which frees the object.
//! - Immortal strings (`strref.rs`) keep their marker count untouched.
//!
//! [`Participant`]: super::vlock::Participant

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

static SOLO: AtomicBool = AtomicBool::new(false);
/// Set when a second participant has ever existed; solo counting then
/// never comes back.
static EVER_SHARED: AtomicBool = AtomicBool::new(false);

/// A count at or above this is an immortal string's (`strref.rs`).
pub(crate) const IMMORTAL: usize = 1 << (usize::BITS - 2);
/// The most references a counted object may have (a clone past it aborts,
/// as `Arc`'s does).
pub(crate) const MAX_COUNT: usize = IMMORTAL >> 1;

/// Let this process count references without locked instructions while
/// one thread runs Apsi code. Call it from a program's entry point before
/// any runtime exists, and only where one runtime runs at a time (the
/// `apsi run` command); it does nothing once a second participant has
/// existed, or when `Arc`'s count is not where `arc_count` finds it.
pub fn allow() {
    if !EVER_SHARED.load(Ordering::Relaxed) && super::vlock::participants() <= 1 && arc_layout_holds() {
        SOLO.store(true, Ordering::Relaxed);
    }
}

/// A second participant exists (`Participant::new`, on the thread that
/// already is one, before the new thread starts): count atomically from
/// now on, for the rest of the process.
pub(crate) fn end() {
    EVER_SHARED.store(true, Ordering::Relaxed);
    SOLO.store(false, Ordering::Relaxed);
}

/// Are counts changed with plain loads and stores now?
#[inline(always)]
pub fn on() -> bool {
    SOLO.load(Ordering::Relaxed)
}

/// The strong count of an `Arc`: std's `Arc<T>` is one pointer to its
/// `ArcInner`, a `repr(C)` struct whose first field is that count.
/// `arc_layout_holds` checks this before solo counting is allowed.
#[inline(always)]
pub(crate) fn arc_count<T>(a: &Arc<T>) -> &AtomicUsize {
    // SAFETY: `Arc<T>` (sized `T`, the global allocator) is a single
    // non-null pointer to its allocation, which starts with the strong
    // count (checked at run time by `arc_layout_holds` before any caller
    // relies on it in solo mode).
    unsafe { &*(*(a as *const Arc<T> as *const *const AtomicUsize)) }
}

/// Does `arc_count` read `Arc`'s strong count on this build of std?
fn arc_layout_holds() -> bool {
    const MARK: u64 = 0x5a5a_1234_dead_0007;
    if std::mem::size_of::<Arc<u64>>() != std::mem::size_of::<usize>() {
        return false;
    }
    let a = Arc::new(MARK);
    let b = a.clone();
    let first = arc_count(&a).load(Ordering::Relaxed);
    drop(b);
    let second = arc_count(&a).load(Ordering::Relaxed);
    first == 2 && second == 1 && Arc::strong_count(&a) == 1 && *a == MARK
}

/// A new handle to `a`'s object: in solo mode the count is raised with a
/// plain load and store, otherwise as `Arc::clone` does.
#[inline(always)]
pub fn clone_arc<T>(a: &Arc<T>) -> Arc<T> {
    if on() {
        inc(arc_count(a));
        // SAFETY: the count was raised for this second handle, which is a
        // bitwise copy of the first (what `Arc::clone` returns).
        unsafe { std::ptr::read(a) }
    } else {
        a.clone()
    }
}

/// One more reference, counted with a plain load and store (solo mode).
#[inline(always)]
pub(crate) fn inc(c: &AtomicUsize) {
    let n = c.load(Ordering::Relaxed);
    if n < MAX_COUNT {
        c.store(n + 1, Ordering::Relaxed);
    } else if n < IMMORTAL {
        std::process::abort();
    }
}

/// One reference fewer, counted with a plain load and store (solo mode);
/// `false` when this was the last one, which the caller drops the usual way.
#[inline(always)]
pub(crate) fn dec(c: &AtomicUsize) -> bool {
    let n = c.load(Ordering::Relaxed);
    if n >= IMMORTAL {
        true
    } else if n > 1 {
        c.store(n - 1, Ordering::Relaxed);
        true
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arc_count_reads_the_strong_count() {
        assert!(arc_layout_holds());
        let a = Arc::new(vec![1u8, 2, 3]);
        let b = a.clone();
        assert_eq!(arc_count(&a).load(Ordering::Relaxed), 2);
        inc(arc_count(&a));
        assert_eq!(Arc::strong_count(&a), 3);
        assert!(dec(arc_count(&a)));
        assert_eq!(Arc::strong_count(&b), 2);
        drop(b);
        assert!(!dec(arc_count(&a)), "the last reference is left to drop");
        assert_eq!(Arc::strong_count(&a), 1);
    }

    #[test]
    fn immortal_counts_stay() {
        let c = AtomicUsize::new(IMMORTAL);
        inc(&c);
        assert!(dec(&c));
        assert_eq!(c.load(Ordering::Relaxed), IMMORTAL);
    }
}
