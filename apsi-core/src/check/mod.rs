//! The checker: loads a program (the main file and every module it `use`s),
//! resolves names and modules, checks what annotations allow, and runs the
//! Guard scan — all before anything runs.
//!
//! Its output, [`Program`], is what the bytecode compiler (and later the
//! native back end) consume.

use crate::diagnostic::{FileId, SourceMap, Span};
use crate::syntax::ast;
use std::path::PathBuf;
use std::sync::Arc;

/// What the checker needs to know about the interpreter it checks for.
#[derive(Debug, Clone, Default)]
pub struct CheckEnv {
    /// Names the prelude binds (print, len, …).
    pub prelude: Vec<String>,
    /// Modules compiled into this binary.
    pub builtin_modules: Vec<BuiltinModuleInfo>,
    /// Capabilities granted on the command line (`python`, `net`).
    pub allowed: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct BuiltinModuleInfo {
    pub name: String,
    pub exports: Vec<String>,
    /// Capabilities needed to use this module at all (`python` for `use python`).
    pub capabilities: Vec<String>,
}

/// A checked program: every module it needs, dependencies before dependents.
#[derive(Debug)]
pub struct Program {
    pub sources: Arc<SourceMap>,
    /// Dependency order: a module comes after every file module it uses;
    /// the main file is last.
    pub units: Vec<Unit>,
}

/// One source file of the program.
#[derive(Debug)]
pub struct Unit {
    /// The name it binds by default (`geometry` for `use lib.geometry`; `__main__` for the main file).
    pub name: String,
    /// Canonical path on disk (one unit per file, however it was reached).
    pub path: PathBuf,
    pub file: FileId,
    pub ast: ast::Module,
    /// This unit's `use` statements, resolved.
    pub uses: Vec<ResolvedUse>,
}

#[derive(Debug, Clone)]
pub struct ResolvedUse {
    pub span: Span,
    /// The name the statement binds (`b` for `use a.b`, `M` for `use a.b as M`).
    pub binding: String,
    /// Whether the exports are also usable unqualified (false for `use X as M`).
    pub unqualified: bool,
    pub target: UseTarget,
}

#[derive(Debug, Clone, PartialEq)]
pub enum UseTarget {
    /// A module compiled into this binary, by name.
    Builtin(String),
    /// A file module: index into `Program::units`.
    File(usize),
}
