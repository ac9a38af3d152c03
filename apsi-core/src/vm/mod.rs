//! The register VM: the interpreter loop and what runs around it. (The
//! value model is `crate::value`; the entry points that check, compile and
//! run programs are `crate::driver`.)
//!
//! - [`shared`]: what all threads of a runtime share while code runs (the
//!   prelude, installed modules, limits, the task registry, output).
//! - [`exec`]: the per-thread `Executor`: one value stack of register
//!   windows, a heap stack of frames (Apsi calls never recurse on the Rust
//!   stack; 200,000 frames deep by default, then `RecursionError`), and the
//!   dispatch loop with inline int/float fast paths.
//! - `call`: argument binding with Python's rules and messages,
//!   unpacking, `except` matching.
//! - [`parfor`]: `parallel for`'s run-time side (chunks on the pool).
//! - [`reentry`]: the executor's side of `value::reentry` (spare executors).
//!
//! The module globals (`value::globals`), inline caches (`value::ic`) and
//! closures (`value::function`) it works on belong to the value model.
//!
//! Threads: code objects are immutable and shared; each OS thread runs its
//! own `Executor` (`Runtime::executor`, or `Caller::new_thread_caller` from a
//! native function); containers, cells and global slots lock per operation.

pub(crate) mod call;
pub mod exec;
#[cfg(feature = "opstats")]
pub(crate) mod opstats;
pub mod parfor;
pub mod reentry;
pub mod shared;

pub use exec::Executor;
