//! Finding the installed backend for a kind, and deciding whether it may
//! be loaded. Every refusal names the package, what was expected, what was
//! found and the command that fixes it; nothing falls back silently.

use crate::error::Error;
use crate::files;
use crate::home::Home;
use crate::installed::{self, Installed};
use crate::manifest::{BackendManifest, PythonDecl, MANIFEST};
use std::path::PathBuf;

/// What the loading side expects of a backend.
#[derive(Debug, Clone)]
pub struct Want<'a> {
    /// The kind: `native`, `gpu`, …
    pub provides: &'a str,
    /// The C-ABI version this build speaks for that kind.
    pub abi: u32,
    /// The entry symbol of that ABI version.
    pub symbol: &'a str,
    /// The running core's version (checked against `requires`).
    pub core_version: &'a str,
    /// The package that provides this kind in the official registry (for hints).
    pub package: &'a str,
    /// This machine's target triple.
    pub target: String,
}

/// A backend that may be loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub name: String,
    pub version: String,
    /// The entry, inside the verified package: the shared library to load,
    /// or, for a Python backend, the worker module to run.
    pub library: PathBuf,
    pub symbol: String,
    /// The package's folder (`store/pkg/<sha256>/NAME-VERSION`), verified.
    pub dir: PathBuf,
    /// The `[python]` table of a backend whose worker runs in Python (its
    /// environment: [`crate::venv::python_env`]).
    pub python: Option<PythonDecl>,
}

impl Found {
    pub fn label(&self) -> String {
        format!("{} {}", self.name, self.version)
    }
}

fn reinstall(rec: &Installed) -> String {
    format!(
        "see `apsi pkg verify {}`; `apsi pkg install {}` restores the published files",
        rec.name, rec.name
    )
}

/// The installed package providing `want.provides`, checked: `Ok(None)`
/// when none is installed, an error when one is but must not be loaded (or
/// when several are, so the choice is the user's).
pub fn find(home: &Home, want: &Want<'_>) -> Result<Option<Found>, Error> {
    let mut candidates = Vec::new();
    for rec in installed::list(home)? {
        if rec.kind != "backend" {
            continue;
        }
        let tree = home.tree(&rec.cksum);
        let manifest_rel = format!("{}/{MANIFEST}", rec.prefix());
        // The manifest decides what the package provides: trust it only once
        // it has its recorded hash.
        files::check_file(&tree, &manifest_rel).map_err(|p| {
            Error::new(format!("its files changed since it was installed: {p}"))
                .package(rec.label())
                .hint(reinstall(&rec))
        })?;
        let m = BackendManifest::load(&tree.join(rec.prefix())).map_err(|e| Error {
            package: Some(rec.label()),
            ..e
        })?;
        if let Some(decl) = m.backend.clone().filter(|b| b.provides == want.provides) {
            candidates.push((rec, m, decl, tree));
        }
    }
    let (rec, m, decl, tree) = match candidates.len() {
        0 => return Ok(None),
        1 => candidates.remove(0),
        _ => {
            let names: Vec<String> = candidates.iter().map(|(r, ..)| r.label()).collect();
            return Err(Error::new(format!(
                "several installed packages provide the {} backend: {}",
                want.provides,
                names.join(", ")
            ))
            .hint("keep one: `apsi pkg remove NAME` for the others"));
        }
    };
    let label = rec.label();
    let problems = files::check(&tree);
    if !problems.is_empty() {
        return Err(Error::new(format!(
            "its files changed since it was installed ({}); it was not loaded",
            problems.join("; ")
        ))
        .package(label)
        .hint(reinstall(&rec)));
    }
    if m.target != want.target && m.target != "any" {
        return Err(Error::new(format!(
            "it is built for {}, and this machine is {}",
            m.target, want.target
        ))
        .package(label)
        .hint(format!(
            "`apsi pkg install {}` (without --target) installs the build for this machine",
            rec.name
        )));
    }
    if decl.abi != want.abi || decl.symbol != want.symbol {
        return Err(Error::new(format!(
            "it implements the {} backend ABI v{} (symbol {}); this apsi needs v{} (symbol {})",
            want.provides, decl.abi, decl.symbol, want.abi, want.symbol
        ))
        .package(label)
        .hint(format!(
            "`apsi pkg info {}` lists the published versions; install one built for this apsi with `apsi pkg install {}@VERSION`",
            rec.name, rec.name
        )));
    }
    let core = semver::Version::parse(want.core_version)
        .map_err(|e| Error::new(format!("the core's version '{}' is not semver: {e}", want.core_version)))?;
    let req = semver::VersionReq::parse(&m.requires).map_err(|e| {
        Error::new(format!(
            "its `requires = \"{}\"` is not a version requirement: {e}",
            m.requires
        ))
        .package(label.clone())
    })?;
    if !req.matches(&core) {
        return Err(Error::new(format!(
            "it requires the Apsi core {}, and this is core {}",
            m.requires, want.core_version
        ))
        .package(label)
        .hint(format!(
            "install a version made for this core (`apsi pkg info {}` lists them), or use an apsi whose core matches",
            rec.name
        )));
    }
    let Some(entry) = &m.entry else {
        return Err(Error::new("its manifest names no `entry` (its library or worker)")
            .package(label)
            .hint(reinstall(&rec)));
    };
    let pkg_dir = tree.join(rec.prefix());
    let library = pkg_dir.join(entry);
    if !inside_package(&library, &pkg_dir) {
        return Err(
            Error::new(format!("its entry '{entry}' is not a file inside the package"))
                .package(label)
                .hint(reinstall(&rec)),
        );
    }
    if let Some(py) = &m.python {
        py.validate().map_err(|e| {
            Error::new(format!("its manifest is not valid: {e}"))
                .package(label.clone())
                .hint(reinstall(&rec))
        })?;
        if !inside_package(&pkg_dir.join(&py.requirements), &pkg_dir) {
            return Err(Error::new(format!(
                "its [python] requirements '{}' is not a file inside the package",
                py.requirements
            ))
            .package(label)
            .hint(reinstall(&rec)));
        }
    }
    Ok(Some(Found {
        name: rec.name.clone(),
        version: rec.version.clone(),
        library,
        symbol: decl.symbol.clone(),
        dir: pkg_dir,
        python: m.python.clone(),
    }))
}

/// Whether `path` is a regular file inside `dir` once links are resolved.
fn inside_package(path: &std::path::Path, dir: &std::path::Path) -> bool {
    std::fs::canonicalize(path)
        .ok()
        .zip(std::fs::canonicalize(dir).ok())
        .is_some_and(|(l, d)| l.starts_with(d) && l.is_file())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::installed::Installed;

    const SYM: &str = "apsi_test_v1";

    pub(crate) fn want(target: &str) -> Want<'static> {
        Want {
            provides: "test",
            abi: 1,
            symbol: SYM,
            core_version: "2.0.0",
            package: "test-backend",
            target: target.to_string(),
        }
    }

    /// Installs a backend package by hand, as `apsi pkg` lays it out.
    fn install(home: &Home, name: &str, extra: &str) {
        install_with(home, name, "libt.so", extra, &[("libt.so", b"not really a library")]);
    }

    /// [`install`] with the entry and the files given.
    pub(crate) fn install_with(home: &Home, name: &str, entry: &str, extra: &str, files: &[(&str, &[u8])]) {
        let cksum = format!("{:0>64}", name.len());
        let tree = home.tree(&cksum);
        let dir = tree.join(format!("{name}-1.0.0"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(MANIFEST),
            format!("name = \"{name}\"\nversion = \"1.0.0\"\nkind = \"backend\"\nentry = \"{entry}\"\n{extra}"),
        )
        .unwrap();
        for (f, bytes) in files {
            std::fs::write(dir.join(f), bytes).unwrap();
        }
        std::fs::write(tree.join(files::MARKER), "").unwrap();
        files::write(&tree).unwrap();
        let rec = Installed {
            name: name.into(),
            version: "1.0.0".into(),
            target: "any".into(),
            kind: "backend".into(),
            cksum,
            registry: "file:///r".into(),
            tags: vec![],
        };
        std::fs::create_dir_all(home.installed()).unwrap();
        std::fs::write(
            home.installed().join(format!("{name}.json")),
            serde_json::to_vec(&rec).unwrap(),
        )
        .unwrap();
    }

    pub(crate) const OK: &str = "target = \"x86_64-linux-gnu\"\nrequires = \"^2.0\"\n[backend]\nprovides = \"test\"\nsymbol = \"apsi_test_v1\"\nabi = 1\n";

    fn refusal(extra: &str, target: &str) -> Error {
        let t = tempfile::tempdir().unwrap();
        let home = Home::at(t.path());
        install(&home, "tb", extra);
        find(&home, &want(target)).unwrap_err()
    }

    #[test]
    fn a_good_backend_is_found_and_others_are_ignored() {
        let t = tempfile::tempdir().unwrap();
        let home = Home::at(t.path());
        assert_eq!(find(&home, &want("x86_64-linux-gnu")).unwrap(), None);
        install(&home, "tb", OK);
        install(
            &home,
            "gpu-thing",
            &OK.replace("provides = \"test\"", "provides = \"gpu\""),
        );
        let f = find(&home, &want("x86_64-linux-gnu")).unwrap().unwrap();
        assert_eq!(f.label(), "tb 1.0.0");
        assert_eq!(f.symbol, SYM);
        assert!(f.library.ends_with("tb-1.0.0/libt.so"));
    }

    #[test]
    fn each_refusal_names_what_was_expected_and_found() {
        let e = refusal(OK, "aarch64-linux-gnu");
        assert!(
            e.message
                .contains("built for x86_64-linux-gnu, and this machine is aarch64-linux-gnu"),
            "{e}"
        );
        let e = refusal(&OK.replace("abi = 1", "abi = 2"), "x86_64-linux-gnu");
        assert!(e.message.contains("ABI v2") && e.message.contains("needs v1"), "{e}");
        let e = refusal(&OK.replace("^2.0", "^3.1"), "x86_64-linux-gnu");
        assert!(
            e.message
                .contains("requires the Apsi core ^3.1, and this is core 2.0.0"),
            "{e}"
        );
        assert_eq!(e.package.as_deref(), Some("tb 1.0.0"));
        assert!(e.hint.unwrap().contains("apsi pkg info tb"));
    }

    #[test]
    fn an_edited_file_is_refused_with_the_verify_hint() {
        let t = tempfile::tempdir().unwrap();
        let home = Home::at(t.path());
        install(&home, "tb", OK);
        let cksum = format!("{:0>64}", 2);
        std::fs::write(home.tree(&cksum).join("tb-1.0.0").join("libt.so"), b"evil").unwrap();
        let e = find(&home, &want("x86_64-linux-gnu")).unwrap_err();
        assert!(e.message.contains("tb-1.0.0/libt.so: modified"), "{e}");
        assert!(e.hint.as_deref().unwrap().contains("apsi pkg verify tb"), "{e}");
        // An edited manifest is caught before it is believed.
        std::fs::write(home.tree(&cksum).join("tb-1.0.0").join(MANIFEST), "kind = \"library\"").unwrap();
        let e = find(&home, &want("x86_64-linux-gnu")).unwrap_err();
        assert!(e.message.contains("apsi-package.toml: modified"), "{e}");
    }

    #[test]
    fn two_providers_are_not_chosen_between_silently() {
        let t = tempfile::tempdir().unwrap();
        let home = Home::at(t.path());
        install(&home, "tb", OK);
        install(&home, "tb-other", OK);
        let e = find(&home, &want("x86_64-linux-gnu")).unwrap_err();
        assert!(e.message.contains("tb 1.0.0, tb-other 1.0.0"), "{e}");
    }

    /// A fresh home with the Python backend `torch` installed from
    /// `manifest` and `files` (the folder is deleted with the guard).
    pub(crate) fn python_home(manifest: &str, files: &[(&str, &[u8])]) -> (tempfile::TempDir, Home) {
        let t = tempfile::tempdir().unwrap();
        let home = Home::at(t.path());
        install_with(&home, "torch", "apsi_torch.py", manifest, files);
        (t, home)
    }

    /// A backend whose worker is a Python module, with its `[python]` table.
    pub(crate) const PY: &str = "target = \"x86_64-linux-gnu\"\nrequires = \"^2.0\"\n[backend]\nprovides = \"test\"\nsymbol = \"apsi_test_v1\"\nabi = 1\n[python]\nrequirements = \"requirements.txt\"\nversion = \"3.11\"\n";

    #[test]
    fn a_python_backend_is_found_with_its_python_table() {
        let (_t, home) = python_home(PY, &[("apsi_torch.py", b"print(1)\n"), ("requirements.txt", b"")]);
        let f = find(&home, &want("x86_64-linux-gnu")).unwrap().unwrap();
        assert!(f.library.ends_with("torch-1.0.0/apsi_torch.py"));
        assert!(f.dir.ends_with("torch-1.0.0"));
        let py = f.python.unwrap();
        assert_eq!(
            (py.requirements.as_str(), py.version.as_str()),
            ("requirements.txt", "3.11")
        );
    }

    #[test]
    fn a_python_backend_without_its_requirements_is_refused() {
        let (_t, home) = python_home(PY, &[("apsi_torch.py", b"print(1)\n")]);
        let e = find(&home, &want("x86_64-linux-gnu")).unwrap_err();
        assert!(
            e.message
                .contains("[python] requirements 'requirements.txt' is not a file inside the package"),
            "{e}"
        );
        let (_t, home) = python_home(
            &PY.replace("\"3.11\"", "\"3\""),
            &[("apsi_torch.py", b""), ("requirements.txt", b"")],
        );
        let e = find(&home, &want("x86_64-linux-gnu")).unwrap_err();
        assert!(e.message.contains("minor version"), "{e}");
    }
}
