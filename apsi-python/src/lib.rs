//! `use python` (LANGUAGE.md §8, needs `--allow-python`): `python.eval`,
//! `python.exec` and `python.call` run in a Python worker process, so that
//! apsi-core neither contains Python code nor links libpython. See
//! docs/PYTHON.md.
//!
//! - [`worker`]: finding the interpreter and running the worker (`worker.py`, embedded).
//! - [`frame`]: length-prefixed messages on the worker's pipes.
//! - [`wire`]: values both ways (numbers, str, list, tuple, dict, range, none, tensors as NumPy arrays).
//! - [`bridge`]: one worker per process behind a lock, and the run-time permission check.
//! - [`funcs`]: the exported functions.

pub mod bridge;
pub mod frame;
pub mod funcs;
pub mod wire;
pub mod worker;

pub use bridge::{allow, global, Bridge, WorkerInfo};

use apsi_core::api::{ModuleBuilder, ModuleDescriptor};
use std::sync::Arc;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The `python` module on this process's worker ([`global`]); Python runs
/// only after [`allow`]`(true)`.
pub fn module() -> ModuleDescriptor {
    module_for(global())
}

/// The `python` module on a given bridge (tests, embedders).
pub fn module_for(bridge: &Arc<Bridge>) -> ModuleDescriptor {
    ModuleBuilder::new("python", VERSION, "^2.1")
        .constant("eval", funcs::bound("eval", bridge, funcs::eval))
        .constant("exec", funcs::bound("exec", bridge, funcs::exec))
        .constant("call", funcs::bound("call", bridge, funcs::call))
        .capability("python")
        .build()
}
