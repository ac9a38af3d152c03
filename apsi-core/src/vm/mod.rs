//! The register VM: value model, function objects and the interpreter loop.
//!
//! - [`runtime`]: `Runtime` (shared by all threads: code, module globals,
//!   the prelude, output), `Runtime::run` for programs, `eval_snippet` /
//!   `eval_program` for REPL inputs, and how an uncaught error becomes a
//!   `Diagnostic` with the Apsi call stack.
//! - [`exec`]: the per-thread `Executor`: one value stack of register
//!   windows, a heap stack of frames (Apsi calls never recurse on the Rust
//!   stack; 200,000 frames deep by default, then `RecursionError`), and the
//!   dispatch loop with inline int/float fast paths.
//! - `call`: argument binding with Python's rules and messages, struct
//!   construction, unpacking, `except` matching.
//! - [`globals`]: module globals, one slot each, readable from any thread
//!   without a global lock; write-once slots (top-level `def`/`struct`/`use`)
//!   are a single atomic load.
//! - [`ic`]: inline caches for struct attributes and method calls.
//! - [`function`]: closures and the cells captured variables live in.
//!
//! Threads: code objects are immutable and shared; each OS thread runs its
//! own `Executor` (`Runtime::executor`, or `Caller::new_thread_caller` from a
//! native function); containers, cells and global slots lock per operation.

pub(crate) mod call;
pub mod exec;
pub mod parfor;
pub mod reentry;
pub mod shared;

pub use exec::Executor;
