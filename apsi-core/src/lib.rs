//! apsi-core: the Apsi language — diagnostics, syntax, checker + Guard,
//! bytecode compiler, VM and value model, and the Module API.
//!
//! This crate depends on no other crate of the project, does no network I/O
//! and never talks to the terminal (the CLI does).

pub mod api;
pub mod builtins;
pub mod check;
pub mod code;
pub mod compile;
pub mod diagnostic;
pub mod driver;
pub mod error;
pub mod format;
pub mod interrupt;
pub mod measure;
pub mod module;
pub mod ops;
pub mod par;
pub mod serial;
pub mod syntax;
pub mod tensor;
pub mod text;
pub mod value;
pub mod vm;

/// The version of the core, as `apsi --version` prints it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
