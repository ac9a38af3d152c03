//! The register VM: value model, function objects and the interpreter loop.
//!
//! - [`runtime`]: `Runtime` (shared by all threads), programs, REPL inputs.
//! - [`exec`]: the per-thread executor and its dispatch loop.
//! - [`call`]: argument binding, struct construction, unpacking.
//! - [`globals`]: lock-free-read module globals.

pub(crate) mod call;
pub mod exec;
pub mod function;
pub mod globals;
pub mod runtime;
pub mod value;

pub use exec::Executor;
pub use runtime::{error_to_run_error, RunError, Runtime, RuntimeConfig};
