//! The checker: loads a program (the main file and every module it `use`s),
//! resolves names and modules, checks what annotations allow, and runs the
//! Guard scan — all before anything runs.
//!
//! Its output, [`Program`], is what the bytecode compiler (and later the
//! native back end) consume.
//!
//! # API
//!
//! - [`load`]`(main, display_name, env, sources)` — read and parse the main
//!   file and every file module it uses, resolve every `use` (LANGUAGE.md §8),
//!   run all static checks and the Guard; `Err` holds *every* diagnostic of
//!   every file (syntax errors included), sorted by file then position, with
//!   the Guard's single `PermissionError` last.
//! - [`load_with`] — the same with an explicit parser and packages folder
//!   ([`LoadOptions`]; tests use it to avoid `$APSI_HOME`).
//! - [`check_source`]`(snippet, file, env, &mut ReplScope, sources)` — the
//!   REPL: check one parsed input against the names earlier inputs defined
//!   (kept in [`ReplScope`]); on success the scope learns the input's names.
//!   Its `Program` holds the file modules the input uses (again, even if an
//!   earlier input loaded them: a module runs once per process, so the VM
//!   skips a module unit whose `path` it has already run) and the input
//!   itself last (name `__main__`, path `<base_dir>/<repl>`; always run it).
//!   The caller reports the snippet's own syntax errors before calling.
//!   Unknown names inside a `def`/`lambda` are not errors in the REPL (a
//!   later input may define them); everything else is checked as in a file.
//! - [`file_exports`] (for a loaded unit: `unit.scopes.exports()`) — the
//!   names a file module exports (the VM binds the same ones unqualified):
//!   its top-level names except `use` bindings and `_private` ones.
//! - [`DTYPES`], [`default_packages_dir`],
//!   [`scan_capabilities`] / [`permission_error`] (the Guard, for a caller
//!   that wants to run it on its own).
//!
//! Names always known besides `env.prelude`: `argv`, `Tensor`, `native`
//! (`@native` needs no `use`), every error kind (`ValueError`, …) and every dtype
//! (`f32`, `bf16`, …). `env.allowed` may also hold `all`.
//!
//! Diagnostic kinds produced: `SyntaxError` (the parser's; misplaced
//! `break`/`continue`/`return`/`nonlocal`; `break`/`return` in `parallel
//! for`; `yield` outside a `def` body, in a lambda or comprehension, or in
//! a `parallel for`), `NameError`, `TypeError` (calls, literal arguments and defaults,
//! `Tensor[…]` annotations), `ModuleNotFoundError`, `IOError` (unreadable
//! main file or module), `Error` (a `use` cycle), `PermissionError` (Guard).
//! Files with syntax errors get no further checks (they would mislead), and
//! a file whose unqualified `use` failed gets no unknown-name errors.
//!
//! # Rules the checker enforces (see each module)
//! - names: `names` (Python scoping; a read of a name bound nowhere visible
//!   is a `NameError` with a did-you-mean hint; two `use`d modules exporting
//!   a name read unqualified is a `NameError` asking for `module.name`);
//! - calls to a known `def`/`struct`: `calls` (`TypeError`, Python wording);
//! - `Tensor[…]` dtypes: `annot`; loops and `parallel for`: `names`;
//! - the Guard: `guard`.

mod annot;
mod calls;
mod defs;
mod entry;
mod guard;
mod load;
mod names;
pub mod parfor;
mod resolve;
pub mod scopes;
mod structs;
mod suggest;
#[cfg(test)]
mod tests;
mod walk;

pub use annot::DTYPES;
pub use entry::{check_source, load};
pub use guard::{permission_error, scan_units as scan_capabilities, CapabilityUse, CAPABILITIES};
pub use load::{check_source_with, load_with, LoadOptions, ParseFn};
pub use resolve::default_packages_dir;
pub use suggest::{closest, edit_distance};

use crate::diagnostic::{FileId, SourceMap, Span};
use crate::syntax::ast;
use std::collections::BTreeSet;
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
    /// Modules of Apsi that this binary does not have, each with the help
    /// a `use` of it gets (the driver knows why: a left-out cargo feature,
    /// a module not released yet). The core names no module itself.
    pub absent_modules: Vec<AbsentModule>,
    /// Functions (of the prelude and of installed modules) whose string
    /// argument names a source to read: the Guard asks for `--allow-net`
    /// when one is given a URL literal. Modules declare them
    /// (`ModuleBuilder::reads_sources`); the checker names none itself.
    pub source_readers: Vec<String>,
}

/// A module of Apsi that this binary does not have, and what to tell a
/// program that uses it.
#[derive(Debug, Clone, Default)]
pub struct AbsentModule {
    pub name: String,
    pub help: String,
}

#[derive(Debug, Clone, Default)]
pub struct BuiltinModuleInfo {
    pub name: String,
    pub exports: Vec<String>,
    /// Capabilities needed to use this module at all (`python` for `use python`).
    pub capabilities: Vec<String>,
    /// `use NAME` binds only `NAME`; the exports never become unqualified
    /// names (`use math`, `use random`).
    pub namespace_only: bool,
}

/// A checked program: every module it needs, dependencies before dependents.
#[derive(Debug)]
pub struct Program {
    pub sources: Arc<SourceMap>,
    /// Dependency order: a module comes after every file module it uses;
    /// the main file is last.
    pub units: Vec<Unit>,
    /// Paths where a `use` looked for its module in vain before finding it
    /// elsewhere: a file that appears at one of them changes the program
    /// (the compile cache checks that none has).
    pub probes: Vec<std::path::PathBuf>,
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
    /// Its scopes with Python's rules (locals, cells, free variables,
    /// globals), analysed once here; the compiler uses this table. Keyed by
    /// the addresses of nodes of `ast`, which never changes after loading.
    pub scopes: scopes::ScopeTable,
}

impl Unit {
    /// A unit of `ast` with its resolved `uses`; analyses its scopes.
    pub fn new(name: String, path: PathBuf, file: FileId, ast: ast::Module, uses: Vec<ResolvedUse>) -> Unit {
        let bind_names: Vec<String> = uses.iter().map(|u| u.binding.clone()).collect();
        let scopes = scopes::analyze(&ast, &bind_names);
        Unit {
            name,
            path,
            file,
            ast,
            uses,
            scopes,
        }
    }
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

/// What earlier REPL inputs defined, for checking the next one.
#[derive(Debug, Clone, Default)]
pub struct ReplScope {
    /// The folder `use` looks in first (the REPL's working folder).
    pub base_dir: PathBuf,
    /// Every name earlier inputs bound at top level, plus the unqualified
    /// exports of the modules they used.
    pub names: BTreeSet<String>,
}

impl ReplScope {
    pub fn new(base_dir: impl Into<PathBuf>) -> ReplScope {
        ReplScope {
            base_dir: base_dir.into(),
            names: BTreeSet::new(),
        }
    }

    /// Learns what a successfully checked input defines.
    fn absorb(&mut self, unit: &Unit, program: &Program, env: &CheckEnv) {
        let module = unit.scopes.scope(scopes::ScopeTable::MODULE);
        self.names.extend(module.bound.keys().cloned());
        for u in &unit.uses {
            self.names.insert(u.binding.clone());
            if !u.unqualified {
                continue;
            }
            match &u.target {
                UseTarget::Builtin(name) => {
                    if let Some(m) = env.builtin_modules.iter().find(|m| &m.name == name) {
                        self.names.extend(m.exports.iter().cloned());
                    }
                }
                UseTarget::File(i) => {
                    if let Some(dep) = program.units.get(*i) {
                        self.names.extend(dep.scopes.exports());
                    }
                }
            }
        }
    }
}

/// The names a file module exports (see [`scopes::ScopeTable::exports`]),
/// for a tree that is not a loaded unit (a loaded one has its table in
/// `Unit::scopes`).
pub fn file_exports(m: &ast::Module) -> Vec<String> {
    scopes::analyze(m, &[]).exports()
}

/// The message of `del obj.field` (the checker's, and the VM's when the
/// checker could not see the struct).
pub fn del_attr_message(attr: &str) -> String {
    format!("cannot delete attribute '{attr}': struct fields are fixed")
}
