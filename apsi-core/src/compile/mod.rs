//! The bytecode compiler: a checked syntax tree, with the checker's scope
//! table (`check::scopes`), to register bytecode (`crate::code`: the lowered
//! form, instructions, code objects, prototypes).
//!
//! - [`fold`]: constant folding that never hides a run-time error.
//! - [`emit`]: code generation.

pub mod emit;
pub mod fold;
pub use crate::check::parfor;

pub use crate::check::scopes::{analyze, Binding, ScopeTable};
pub use crate::code::{Code, FuncProto, Instr, StructProto};
pub use emit::{compile_module, GlobalEnv, GlobalRef};
