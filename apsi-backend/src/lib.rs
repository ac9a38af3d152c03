//! `apsi-backend`: what stands between an installed backend package and the
//! process that loads it. A backend (the `@native` LLVM back end today, a
//! GPU device backend next) is an `apsi pkg` package of kind `backend` whose
//! `[backend]` table says which kind of backend it `provides`, which C-ABI
//! `symbol` its library exports and at which `abi` version.
//!
//! [`find`] answers "which installed package provides this kind, and may it
//! be loaded?": it re-hashes the package's files against the record written
//! when it was extracted ([`files`]), and checks target, ABI version, symbol
//! and the `requires` on the core before returning the library's path. It
//! never loads anything and never touches the network, so `apsi-native` and
//! the GPU crate can use it without pulling in the package client; the
//! client (`apsi-pkg`) writes the records this crate reads.
//!
//! A backend whose worker runs in Python (the PyTorch backend) has a
//! `[python]` table; [`python_env`] gives the interpreter of the virtual
//! environment `apsi pkg` made for it, after checking that environment was
//! finished for the installed package's requirements.
//!
//! Modules: [`digest`] (sha256), [`home`] (the `$APSI_HOME` layout),
//! [`installed`] (`installed/NAME.json`), [`files`] (the per-file record),
//! [`manifest`] (the part of `apsi-package.toml` a loader needs), [`find`],
//! [`venv`] (the Python environment of a Python backend).

pub mod digest;
pub mod error;
pub mod files;
pub mod find;
pub mod home;
pub mod installed;
pub mod manifest;
pub mod venv;

pub use error::Error;
pub use find::{find, Found, Want};
pub use venv::python_env;

/// This crate's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The triple of the machine this binary was built for, in the registry's
/// spelling (`x86_64-linux-gnu`, `aarch64-macos`, …).
pub fn host_target() -> String {
    let os = std::env::consts::OS;
    let arch = std::env::consts::ARCH;
    if os == "linux" {
        let env = if cfg!(target_env = "musl") { "musl" } else { "gnu" };
        format!("{arch}-linux-{env}")
    } else {
        format!("{arch}-{os}")
    }
}
