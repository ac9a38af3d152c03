//! Per-task state for modules: a registry of hooks that the task runners
//! call around every piece of Apsi work they start (a `spawn`ed task, each
//! part of a `parallel for`, `pmap`, `parallel_reduce`), so that a module
//! can give each task its own copy of some thread-local state.
//!
//! A hook's `enter` runs on the thread that is about to run the task body:
//! it moves that thread's state out (returning it) and leaves fresh state in
//! its place. `leave` runs when the body has ended, on the same thread, and
//! puts the saved state back. Tasks that run nested on one thread (a caller
//! that takes part in its own parallel loop) therefore never see each
//! other's state: `use random` gives every task a generator of its own this
//! way, whichever thread the task happens to run on.
//!
//! The core knows nothing of what the state is; hooks are registered once
//! per process (registering the same hook twice is a no-op).

use parking_lot::RwLock;
use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a hook saved on `enter`, handed back to its `leave`.
pub type Saved = Option<Box<dyn Any + Send>>;

/// One module's save / fresh / restore pair.
#[derive(Clone, Copy)]
pub struct Hook {
    /// Take the current thread's state out, leaving fresh state in its place.
    pub enter: fn() -> Saved,
    /// Put back what `enter` took (dropping the task's state).
    pub leave: fn(Saved),
}

static HOOKS: RwLock<Vec<Hook>> = RwLock::new(Vec::new());
/// Whether any hook exists (so task starts without hooks take no lock).
static ANY: AtomicBool = AtomicBool::new(false);

/// Register `hook` for every task started from now on.
pub fn register(hook: Hook) {
    let mut hooks = HOOKS.write();
    let same = |h: &Hook| std::ptr::fn_addr_eq(h.enter, hook.enter) && std::ptr::fn_addr_eq(h.leave, hook.leave);
    if !hooks.iter().any(same) {
        hooks.push(hook);
    }
    ANY.store(true, Ordering::Release);
}

/// Run `body` as a task: every hook's `enter` first, then `body`, then every
/// hook's `leave` (in reverse order), also when `body` panics.
pub fn run_task<R>(body: impl FnOnce() -> R) -> R {
    if !ANY.load(Ordering::Acquire) {
        return body();
    }
    let hooks: Vec<Hook> = HOOKS.read().clone();
    let saved: Vec<Saved> = hooks.iter().map(|h| (h.enter)()).collect();
    struct Restore(Vec<Hook>, Vec<Saved>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let saved = std::mem::take(&mut self.1);
            for (h, s) in self.0.iter().zip(saved).rev() {
                (h.leave)(s);
            }
        }
    }
    let _restore = Restore(hooks, saved);
    body()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        static STATE: Cell<u32> = const { Cell::new(0) };
    }

    fn enter() -> Saved {
        let old = STATE.with(|s| s.replace(0));
        Some(Box::new(old))
    }

    fn leave(saved: Saved) {
        if let Some(v) = saved.and_then(|b| b.downcast::<u32>().ok()) {
            STATE.with(|s| s.set(*v));
        }
    }

    #[test]
    fn a_task_gets_fresh_state_and_the_caller_keeps_its_own() {
        register(Hook { enter, leave });
        register(Hook { enter, leave });
        assert_eq!(HOOKS.read().len(), 1);
        STATE.with(|s| s.set(7));
        let inside = run_task(|| {
            let fresh = STATE.with(|s| s.get());
            STATE.with(|s| s.set(99));
            let nested = run_task(|| STATE.with(|s| s.get()));
            (fresh, nested, STATE.with(|s| s.get()))
        });
        assert_eq!(inside, (0, 0, 99));
        assert_eq!(STATE.with(|s| s.get()), 7);
    }
}
