//! The register VM: value model, function objects and the interpreter loop.

pub mod function;
pub mod value;
