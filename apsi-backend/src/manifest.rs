//! The part of `apsi-package.toml` a loader reads: the `[backend]` table
//! (which kind of backend, which C-ABI symbol at which version), the
//! optional `[python]` table of a backend whose worker runs in Python, and
//! the fields checked before loading. `apsi-pkg` validates whole manifests when
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

/// `[python]`: a backend whose worker runs in Python, in a virtual
/// environment `apsi pkg` creates at install from the package's pinned,
/// hash-checked requirements (`$APSI_HOME/venvs/NAME`, see [`crate::venv`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PythonDecl {
    /// The requirements file inside the package: every distribution pinned
    /// `==` with `--hash=sha256:` lines (pip's `--require-hashes` format).
    #[serde(default = "requirements_txt")]
    pub requirements: String,
    /// The Python minor version the pinned wheels are for, e.g. `3.11`.
    pub version: String,
}

fn requirements_txt() -> String {
    "requirements.txt".into()
}

impl PythonDecl {
    /// Checks the table's own fields: `requirements` a relative path inside
    /// the package, `version` of the form `3.N`.
    pub fn validate(&self) -> Result<(), String> {
        if !plain_relative(&self.requirements) {
            return Err(format!(
                "[python] requirements '{}' must be a relative path inside the package",
                self.requirements
            ));
        }
        if python_minor(&self.version).is_none() {
            return Err(format!(
                "[python] version '{}' must be a Python minor version such as \"3.11\"",
                self.version
            ));
        }
        Ok(())
    }
}

/// `(major, minor)` of a version written `MAJOR.MINOR` (digits only).
pub fn python_minor(v: &str) -> Option<(u32, u32)> {
    let (a, b) = v.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.len() <= 4 && s.bytes().all(|c| c.is_ascii_digit());
    if !digits(a) || !digits(b) {
        return None;
    }
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// A non-empty relative path of plain components (no `..`, no root, no backslash).
pub fn plain_relative(p: &str) -> bool {
    !p.is_empty()
        && !p.contains('\\')
        && Path::new(p)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
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
    #[serde(default)]
    pub python: Option<PythonDecl>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_python_table_is_read_and_checked() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(
            t.path().join(MANIFEST),
            "name = \"torch\"\nversion = \"1.0.0\"\nkind = \"backend\"\nentry = \"w.py\"\n[python]\nversion = \"3.11\"\n",
        )
        .unwrap();
        let m = BackendManifest::load(t.path()).unwrap();
        let p = m.python.unwrap();
        assert_eq!(p.requirements, "requirements.txt");
        assert!(p.validate().is_ok());
        let bad = |r: &str, v: &str| {
            PythonDecl {
                requirements: r.into(),
                version: v.into(),
            }
            .validate()
            .unwrap_err()
        };
        assert!(bad("../r.txt", "3.11").contains("inside the package"));
        assert!(bad("/etc/r.txt", "3.11").contains("inside the package"));
        assert!(bad("r.txt", "3").contains("minor version"));
        assert!(bad("r.txt", "3.11.2").contains("minor version"));
        assert_eq!(python_minor("3.11"), Some((3, 11)));
        std::fs::write(
            t.path().join(MANIFEST),
            "name = \"t\"\nversion = \"1.0.0\"\nkind = \"backend\"\n[python]\nversion = \"3.11\"\nextra = 1\n",
        )
        .unwrap();
        assert!(
            BackendManifest::load(t.path()).is_err(),
            "unknown fields of [python] are refused"
        );
    }
}
