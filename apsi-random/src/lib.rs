//! `use random` (LANGUAGE.md §10.11): CPython 3.11's `random` module, the
//! same numbers for the same integer seed. `use random` binds only `random`
//! (`namespace_only`), so the prelude's tensor `seed` keeps its meaning.
//!
//! - [`mt`]: MT19937 with CPython's seeding, floats, `getrandbits`, `_randbelow`.
//! - [`funcs`]: the exported functions, step by step as `Lib/random.py`.
//! - [`state`]: one generator per thread and per task (see there).
//! - [`entropy`]: seeds from the operating system.

pub mod entropy;
pub mod funcs;
pub mod mt;
pub mod state;

use apsi_core::api::{ModuleBuilder, ModuleDescriptor};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The `random` module, ready to install into a runtime. Building it also
/// registers the hook that gives every task a generator of its own.
pub fn module() -> ModuleDescriptor {
    state::install_task_hook();
    ModuleBuilder::new("random", VERSION, "^2.1")
        .namespace_only()
        .function("seed", funcs::seed)
        .function("random", funcs::random)
        .function("getrandbits", funcs::getrandbits)
        .function("randrange", funcs::randrange)
        .function("randint", funcs::randint)
        .function("choice", funcs::choice)
        .function("shuffle", funcs::shuffle)
        .function("sample", funcs::sample)
        .function("uniform", funcs::uniform)
        .function("gauss", funcs::gauss)
        .build()
}
