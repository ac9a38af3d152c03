//! `apsi-pkg`: Apsi's package client, and the registry-side helpers the
//! `apsi-registry` tool is built on. See `docs/PACKAGES.md`.
//!
//! Layers, bottom up: [`digest`], [`index`] (the sparse index format),
//! [`trust`] (keys, roots, snapshots), [`archive`] (safe extraction and
//! packing), [`transport`] (file:// and HTTP), [`session`] (a verified view
//! of a registry), [`resolve`], [`manifest`] (apsi-package.toml, apsi.toml,
//! apsi.lock), [`store`], [`ops`] (what `apsi pkg` does) and [`pyenv`] (the
//! Python environment of a package with a `[python]` table). This crate does
//! not talk to the terminal; the CLI does (pip, run to fill a Python
//! environment, writes its own progress on stderr).

pub mod archive;
pub mod config;
pub mod digest;
pub mod error;
pub mod fsutil;
pub mod home;
pub mod index;
pub mod manifest;
pub mod ops;
pub mod publish;
pub mod pyenv;
pub mod resolve;
pub mod session;
pub mod store;
pub mod transport;
pub mod trust;

pub use error::{ErrorKind, PkgError, Result};

/// The installed-package layout and checks shared with backend loaders.
pub use apsi_backend as backend;

/// This crate's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
