//! The part of `apsi-package.toml` a loader reads: the `[backend]` table
//! (which kind of backend, which C-ABI symbol at which version) and the
//! fields checked before loading. `apsi-pkg` validates whole manifests when
//! packages are built and installed; this reads one that was installed.

use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The manifest's file name at the top of a package folder.
pub const MANIFEST: &str = "apsi-package.toml";

/// `[backend]`: what a backend package implements.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BackendDecl {
    /// The kind of backend: `native` (the `@native` compiler), `gpu`, …
    pub provides: String,
    /// The entry symbol the library exports.
    pub symbol: String,
    /// The version of that kind's C ABI the symbol implements.
    pub abi: u32,
}

impl BackendDecl {
    /// Checks the table's own fields (names are identifiers, abi ≥ 1).
    pub fn validate(&self) -> Result<(), String> {
        let ident = |s: &str| {
            !s.is_empty()
                && s.len() <= 64
                && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        if !ident(&self.provides) {
            return Err(format!("[backend] provides '{}' is not a name", self.provides));
        }
        if !ident(&self.symbol) || self.symbol.contains('-') {
            return Err(format!("[backend] symbol '{}' is not a C identifier", self.symbol));
        }
        if self.abi == 0 {
            return Err("[backend] abi starts at 1".into());
        }
        Ok(())
    }
}

/// What the loader needs of an installed backend's manifest.
#[derive(Debug, Clone, Deserialize)]
pub struct BackendManifest {
    pub name: String,
    pub version: String,
    pub kind: String,
    #[serde(default = "any")]
    pub target: String,
    #[serde(default = "star")]
    pub requires: String,
    #[serde(default)]
    pub entry: Option<String>,
    #[serde(default)]
    pub backend: Option<BackendDecl>,
}

fn any() -> String {
    "any".into()
}
fn star() -> String {
    "*".into()
}

impl BackendManifest {
    pub fn load(package_dir: &Path) -> Result<BackendManifest, Error> {
        let p = package_dir.join(MANIFEST);
        let text =
            std::fs::read_to_string(&p).map_err(|e| Error::new(format!("cannot read '{}': {e}", p.display())))?;
        toml::from_str(&text)
            .map_err(|e| Error::new(format!("'{}' is not a valid manifest: {}", p.display(), e.message())))
    }
}
