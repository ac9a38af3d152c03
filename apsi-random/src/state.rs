//! Where the generator lives: one per OS thread, and one per task.
//!
//! Each thread has its own generator (a `thread_local`), created from the
//! operating system's entropy at its first use unless `random.seed(n)` came
//! first. A task (`spawn`, each part of a `parallel for`, `pmap`,
//! `parallel_reduce`) runs with a generator of its own, never its
//! spawner's, even when it runs on the spawner's thread: the task runners
//! call the hooks of `apsi_core::api::par::task_local` around every task body,
//! and ours moves the thread's generator aside (the task then starts with
//! none, so from fresh entropy at its first draw) and puts it back when the
//! task ends. `random.seed` inside a task therefore never changes what the
//! spawner draws next.

use crate::mt::Mt;
use apsi_core::api::par::task_local::{self, Hook, Saved};
use std::cell::Cell;

/// A generator with CPython's cached second normal deviate for `gauss`.
pub struct Gen {
    pub mt: Mt,
    pub gauss_next: Option<f64>,
}

impl Gen {
    pub fn new(mt: Mt) -> Gen {
        Gen { mt, gauss_next: None }
    }
}

thread_local! {
    static GEN: Cell<Option<Box<Gen>>> = const { Cell::new(None) };
}

/// Run `f` on the current thread's (or task's) generator. The generator is
/// out of its slot while `f` runs (nothing can observe it half-used).
pub fn with_gen<R>(f: impl FnOnce(&mut Gen) -> R) -> R {
    let mut g = GEN
        .try_with(Cell::take)
        .ok()
        .flatten()
        .unwrap_or_else(|| Box::new(Gen::new(Mt::from_os())));
    let r = f(&mut g);
    // (Fails only while the thread ends: the generator is then dropped.)
    let _ = GEN.try_with(|c| c.set(Some(g)));
    r
}

/// Replace the current generator (`seed`).
pub fn set_gen(g: Gen) {
    let _ = GEN.try_with(|c| c.set(Some(Box::new(g))));
}

fn enter() -> Saved {
    GEN.try_with(Cell::take)
        .ok()
        .flatten()
        .map(|g| g as Box<dyn std::any::Any + Send>)
}

fn leave(saved: Saved) {
    let g = saved.and_then(|b| b.downcast::<Gen>().ok());
    let _ = GEN.try_with(|c| c.set(g));
}

/// Give every task a generator of its own (idempotent).
pub fn install_task_hook() {
    task_local::register(Hook { enter, leave });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_does_not_touch_its_spawners_generator() {
        install_task_hook();
        set_gen(Gen::new(Mt::from_int(1)));
        let first = with_gen(|g| g.mt.random());
        let mut reference = Mt::from_int(1);
        assert_eq!(first, reference.random());
        let in_task = task_local::run_task(|| {
            set_gen(Gen::new(Mt::from_int(7)));
            with_gen(|g| g.mt.random())
        });
        assert_eq!(in_task, Mt::from_int(7).random());
        assert_eq!(with_gen(|g| g.mt.random()), reference.random());
    }

    #[test]
    fn an_unseeded_task_starts_from_entropy() {
        install_task_hook();
        set_gen(Gen::new(Mt::from_int(3)));
        let a = task_local::run_task(|| with_gen(|g| g.mt.random()));
        let b = task_local::run_task(|| with_gen(|g| g.mt.random()));
        assert_ne!(a, b);
        assert_ne!(a, Mt::from_int(3).random());
    }
}
