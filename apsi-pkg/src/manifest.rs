//! The three TOML files: `apsi-package.toml` inside an archive, and a
//! project's `apsi.toml` (its requirements) and `apsi.lock` (what they
//! resolved to).

use crate::error::{err, io_err, ErrorKind, PkgError, Result};
use crate::index::{check_name, check_target};
pub use apsi_backend::manifest::{BackendDecl, PythonDecl};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// `apsi-package.toml`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PackageManifest {
    pub name: String,
    pub version: String,
    /// `library` or `backend`.
    pub kind: String,
    /// `any` or a target triple.
    #[serde(default = "any")]
    pub target: String,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Semver requirement on the Apsi core, e.g. `^2.0`.
    #[serde(default = "star")]
    pub requires: String,
    /// For backends: the native library (relative path) or Python module to load.
    #[serde(default)]
    pub entry: Option<String>,
    /// For backends: which kind they provide, and the C-ABI symbol and version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<BackendDecl>,
    /// For backends whose worker runs in Python: the pinned, hash-checked
    /// requirements and the Python minor version they are for; `apsi pkg
    /// install` creates `$APSI_HOME/venvs/NAME` from them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<PythonDecl>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub dependencies: BTreeMap<String, String>,
}

fn any() -> String {
    "any".to_string()
}
fn star() -> String {
    "*".to_string()
}

impl PackageManifest {
    pub fn parse(text: &str) -> Result<PackageManifest> {
        let m: PackageManifest = toml::from_str(text)
            .map_err(|e| PkgError::new(ErrorKind::Usage, format!("apsi-package.toml: {}", e.message())))?;
        check_name(&m.name)?;
        semver::Version::parse(&m.version).map_err(|e| {
            PkgError::new(
                ErrorKind::Usage,
                format!("apsi-package.toml: version '{}': {e}", m.version),
            )
        })?;
        semver::VersionReq::parse(&m.requires).map_err(|e| {
            PkgError::new(
                ErrorKind::Usage,
                format!("apsi-package.toml: requires '{}': {e}", m.requires),
            )
        })?;
        if m.kind != "library" && m.kind != "backend" {
            return err(
                ErrorKind::Usage,
                format!(
                    "apsi-package.toml: kind must be 'library' or 'backend', found '{}'",
                    m.kind
                ),
            );
        }
        if m.kind == "backend" && m.entry.is_none() {
            return err(
                ErrorKind::Usage,
                "apsi-package.toml: a backend needs an `entry` (its library or worker)",
            );
        }
        match (&m.backend, m.kind.as_str()) {
            (None, "backend") => {
                return err(
                    ErrorKind::Usage,
                    "apsi-package.toml: a backend needs a [backend] table (provides, symbol, abi)",
                )
            }
            (Some(_), "library") => {
                return err(
                    ErrorKind::Usage,
                    "apsi-package.toml: a [backend] table belongs only in a package of kind 'backend'",
                )
            }
            (Some(b), _) => b
                .validate()
                .map_err(|e| PkgError::new(ErrorKind::Usage, format!("apsi-package.toml: {e}")))?,
            (None, _) => {}
        }
        if let Some(p) = &m.python {
            if m.kind != "backend" {
                return err(
                    ErrorKind::Usage,
                    "apsi-package.toml: a [python] table belongs only in a package of kind 'backend'",
                );
            }
            p.validate()
                .map_err(|e| PkgError::new(ErrorKind::Usage, format!("apsi-package.toml: {e}")))?;
        }
        if let Some(e) = &m.entry {
            let plain = apsi_backend::manifest::plain_relative(e);
            if !plain {
                return err(
                    ErrorKind::Usage,
                    format!("apsi-package.toml: entry '{e}' must be a relative path inside the package"),
                );
            }
        }
        crate::index::check_library_name(&m.name, &m.kind)?;
        check_target(&m.target)?;
        for t in &m.tags {
            check_target(t)?;
        }
        for (d, r) in &m.dependencies {
            check_name(d)?;
            semver::VersionReq::parse(r).map_err(|e| {
                PkgError::new(
                    ErrorKind::Usage,
                    format!("apsi-package.toml: dependency {d} = '{r}': {e}"),
                )
            })?;
        }
        Ok(m)
    }

    /// `NAME-VERSION`, the archive's folder.
    pub fn prefix(&self) -> String {
        format!("{}-{}", self.name, self.version)
    }

    /// `NAME-VERSION-TARGET.tar.gz`.
    pub fn archive_name(&self) -> String {
        format!("{}-{}-{}.tar.gz", self.name, self.version, self.target)
    }
}

/// A project's `apsi.toml`: `[dependencies] name = "req"`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProjectManifest {
    #[serde(default)]
    pub dependencies: BTreeMap<String, String>,
}

impl ProjectManifest {
    pub fn load(path: &Path) -> Result<ProjectManifest> {
        let text = std::fs::read_to_string(path).map_err(|e| io_err("read", path, &e))?;
        let m: ProjectManifest = toml::from_str(&text)
            .map_err(|e| PkgError::new(ErrorKind::Usage, format!("{}: {}", path.display(), e.message())))?;
        for (d, r) in &m.dependencies {
            check_name(d)?;
            semver::VersionReq::parse(r).map_err(|e| {
                PkgError::new(
                    ErrorKind::Usage,
                    format!("{}: dependency {d} = '{r}': {e}", path.display()),
                )
            })?;
        }
        Ok(m)
    }

    /// Adds or replaces one requirement, keeping every other line of the
    /// file as the user wrote it.
    pub fn add_to_file(path: &Path, name: &str, req: &str) -> Result<()> {
        let text = if path.exists() {
            std::fs::read_to_string(path).map_err(|e| io_err("read", path, &e))?
        } else {
            String::new()
        };
        let mut doc: toml::Table = toml::from_str(&text)
            .map_err(|e| PkgError::new(ErrorKind::Usage, format!("{}: {}", path.display(), e.message())))?;
        let deps = doc
            .entry("dependencies")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let Some(t) = deps.as_table_mut() else {
            return err(
                ErrorKind::Usage,
                format!("{}: [dependencies] must be a table", path.display()),
            );
        };
        t.insert(name.to_string(), toml::Value::String(req.to_string()));
        let out =
            toml::to_string(&doc).map_err(|e| PkgError::new(ErrorKind::Io, format!("cannot write apsi.toml: {e}")))?;
        crate::fsutil::write_atomic(path, out.as_bytes())
    }
}

/// One locked package.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct LockedPackage {
    pub name: String,
    pub version: String,
    pub target: String,
    pub cksum: String,
}

/// `apsi.lock`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Lockfile {
    pub version: u32,
    #[serde(default, rename = "package")]
    pub packages: Vec<LockedPackage>,
}

impl Lockfile {
    pub fn load(path: &Path) -> Result<Option<Lockfile>> {
        if !path.exists() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(path).map_err(|e| io_err("read", path, &e))?;
        let l: Lockfile = toml::from_str(&text)
            .map_err(|e| PkgError::new(ErrorKind::Usage, format!("{}: {}", path.display(), e.message())))?;
        if l.version != 1 {
            return err(
                ErrorKind::Usage,
                format!("{}: expected lockfile version 1, found {}", path.display(), l.version),
            );
        }
        Ok(Some(l))
    }

    pub fn new(mut packages: Vec<LockedPackage>) -> Lockfile {
        packages.sort();
        Lockfile { version: 1, packages }
    }

    pub fn get(&self, name: &str) -> Option<&LockedPackage> {
        self.packages.iter().find(|p| p.name == name)
    }

    pub fn to_text(&self) -> String {
        let body = toml::to_string(self).unwrap_or_default();
        format!("# This file is written by `apsi pkg`; do not edit it by hand.\n{body}")
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        crate::fsutil::write_atomic(path, self.to_text().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_parses_and_checks() {
        let m = PackageManifest::parse("name = \"mathx\"\nversion = \"1.2.0\"\nkind = \"library\"\n").unwrap();
        assert_eq!(m.archive_name(), "mathx-1.2.0-any.tar.gz");
        assert!(PackageManifest::parse("name = \"m\"\nversion = \"x\"\nkind = \"library\"\n").is_err());
        assert!(PackageManifest::parse("name = \"m\"\nversion = \"1.0.0\"\nkind = \"backend\"\n").is_err());
        assert!(PackageManifest::parse("name = \"../m\"\nversion = \"1.0.0\"\nkind = \"library\"\n").is_err());
    }

    #[test]
    fn libraries_named_like_apsi_modules_and_bad_backend_tables_are_refused() {
        let lib =
            |n: &str| PackageManifest::parse(&format!("name = \"{n}\"\nversion = \"1.0.0\"\nkind = \"library\"\n"));
        for n in ["data", "python", "parallel", "gpu"] {
            let e = lib(n).unwrap_err();
            assert!(e.message.contains("could never be used"), "{e}");
        }
        assert!(lib("datax").is_ok());
        let backend = |extra: &str| {
            PackageManifest::parse(&format!(
                "name = \"gpu\"\nversion = \"1.0.0\"\nkind = \"backend\"\nentry = \"libg.so\"\n{extra}"
            ))
        };
        // A backend may be named like a module: it is loaded, not `use`d.
        assert!(backend("[backend]\nprovides = \"gpu\"\nsymbol = \"apsi_gpu_v1\"\nabi = 1\n").is_ok());
        assert!(backend("").is_err(), "a backend needs [backend]");
        assert!(backend("[backend]\nprovides = \"gpu\"\nsymbol = \"not-c\"\nabi = 1\n").is_err());
        assert!(backend("[backend]\nprovides = \"gpu\"\nsymbol = \"s\"\nabi = 0\n").is_err());
        let escaping = PackageManifest::parse(
            "name = \"b\"\nversion = \"1.0.0\"\nkind = \"backend\"\nentry = \"../x.so\"\n[backend]\nprovides = \"gpu\"\nsymbol = \"s\"\nabi = 1\n",
        );
        assert!(escaping.is_err());
    }

    #[test]
    fn the_python_table_is_checked() {
        let m = |extra: &str| {
            PackageManifest::parse(&format!(
                "name = \"torch\"\nversion = \"1.0.0\"\nkind = \"backend\"\nentry = \"apsi_torch.py\"\n[backend]\nprovides = \"torch\"\nsymbol = \"apsi_torch_v1\"\nabi = 1\n{extra}"
            ))
        };
        let ok = m("[python]\nrequirements = \"requirements.txt\"\nversion = \"3.11\"\n").unwrap();
        assert_eq!(ok.python.as_ref().unwrap().version, "3.11");
        assert!(m("").unwrap().python.is_none());
        let e = m("[python]\nrequirements = \"../r.txt\"\nversion = \"3.11\"\n").unwrap_err();
        assert!(e.message.contains("inside the package"), "{e}");
        let e = m("[python]\nversion = \"3\"\n").unwrap_err();
        assert!(e.message.contains("minor version"), "{e}");
        assert!(m("[python]\nversion = \"3.11\"\npip = \"x\"\n").is_err());
        let e = PackageManifest::parse(
            "name = \"mathx\"\nversion = \"1.0.0\"\nkind = \"library\"\n[python]\nversion = \"3.11\"\n",
        )
        .unwrap_err();
        assert!(e.message.contains("only in a package of kind 'backend'"), "{e}");
        // The table survives a round trip (apsi-registry build --target rewrites manifests).
        let text = toml::to_string(&ok).unwrap();
        assert_eq!(PackageManifest::parse(&text).unwrap(), ok);
    }

    #[test]
    fn lockfile_round_trip() {
        let l = Lockfile::new(vec![LockedPackage {
            name: "b".into(),
            version: "1.0.0".into(),
            target: "any".into(),
            cksum: "00".into(),
        }]);
        let back: Lockfile = toml::from_str(&l.to_text()).unwrap();
        assert_eq!(back, l);
    }
}
