//! `use parallel`: tasks, channels, locks, atomics and parallel map/reduce
//! for Apsi programs, on real OS threads (the core's shared worker pool,
//! `apsi_core::api::par`). See docs/PARALLEL.md for the memory model.
//!
//! - [`chan`]: the bounded MPMC channel core (loom-checked).
//! - [`atomic`]: the int/float atomic core (loom-checked).
//! - [`task`]: `spawn`, `Task`, `wait_all`, `wait_any`.
//! - [`objects`]: the Apsi objects `Channel`, `Lock`, `Atomic`.
//! - [`funcs`]: `parallel_for`, `pmap`, `parallel_reduce`, `set_threads`.

pub mod atomic;
pub mod chan;
pub mod funcs;
pub mod objects;
mod sync;
pub mod task;
mod util;

use apsi_core::api::{ModuleBuilder, ModuleDescriptor};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The `parallel` module, ready to install into a runtime.
pub fn module() -> ModuleDescriptor {
    let mut m = ModuleBuilder::new("parallel", VERSION, "^2.3")
        .function("spawn", task::spawn)
        .function("wait_all", task::wait_all)
        .function("wait_any", task::wait_any)
        .function("channel", objects::channel)
        .function("lock", objects::lock)
        .function("atomic", objects::atomic)
        .function("parallel_for", funcs::parallel_for)
        .function("parallel_reduce", funcs::parallel_reduce)
        .function("pmap", funcs::pmap)
        .function("set_threads", funcs::set_threads);
    // The same functions as the prelude's (so no name collision).
    for name in ["cpu_count", "bench"] {
        if let Some(v) = apsi_core::api::prelude_function(name) {
            m = m.constant(name, v);
        }
    }
    m.build()
}
