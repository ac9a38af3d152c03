//! The Python environment of a backend whose worker runs in Python (a
//! package with a `[python]` table): `$APSI_HOME/venvs/NAME`, a virtual
//! environment `apsi pkg install` creates from the package's pinned,
//! hash-checked requirements. It is complete only once it holds the marker
//! [`MARKER`] with the sha256 of the requirements file it was made from
//! (written last, before it is renamed into place); [`python_env`] checks
//! that marker against the installed package's (already re-hashed)
//! requirements before anyone runs its interpreter.
//!
//! The chain: the signed index gives the archive's sha256, the archive's
//! record gives every file's sha256 (the requirements among them), the
//! requirements give every wheel's sha256 (pip `--require-hashes`), and the
//! marker ties the environment to those requirements.

use crate::digest::sha256_file;
use crate::error::Error;
use crate::find::Found;
use crate::home::Home;
use crate::manifest::{python_minor, PythonDecl};
use std::path::{Path, PathBuf};

/// The marker at the top of a finished environment: the sha256 (hex) of the
/// requirements file it was made from, on one line.
pub const MARKER: &str = ".apsi-requirements.sha256";

/// `$APSI_HOME/venvs/NAME`, the environment of package NAME.
pub fn dir(home: &Home, name: &str) -> PathBuf {
    home.venvs().join(name)
}

/// The interpreter inside an environment folder (`bin/python`; on Windows
/// `Scripts/python.exe`).
pub fn interpreter(venv: &Path) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    }
}

/// The sha256 of a requirements file, as [`MARKER`] holds it.
pub fn requirements_sha256(requirements: &Path) -> Result<String, Error> {
    sha256_file(requirements)
        .map(|(h, _)| h)
        .map_err(|e| Error::new(format!("cannot read '{}': {e}", requirements.display())))
}

/// The Python version an environment was made with, from its `pyvenv.cfg`
/// (`version` or `version_info`, e.g. `3.11.7`); `None` when not recorded.
pub fn made_with(venv: &Path) -> Option<String> {
    let text = std::fs::read_to_string(venv.join("pyvenv.cfg")).ok()?;
    let mut found = None;
    for line in text.lines() {
        if let Some((k, v)) = line.split_once('=') {
            let k = k.trim();
            if k == "version" || k == "version_info" {
                found = Some(v.trim().to_string());
                if k == "version" {
                    break;
                }
            }
        }
    }
    found
}

/// The interpreter of the environment of package `name` (`label`, `NAME
/// VERSION`, names it in errors), after checking that the environment
/// exists, was finished for the requirements file `requirements` (its
/// marker holds that file's sha256), was made with the Python minor version
/// `python.version`, and that its interpreter is there. Every error names
/// what is wrong and the command that fixes it. `apsi pkg` calls this to
/// decide whether an environment is up to date.
pub fn check(home: &Home, name: &str, label: &str, requirements: &Path, python: &PythonDecl) -> Result<PathBuf, Error> {
    let venv = dir(home, name);
    let fix = format!(
        "`apsi pkg install {name}` makes it (again) from the package's pinned, hash-checked requirements (pip downloads its wheels; set APSI_PYTHON to a Python {} when python3 is another version)",
        python.version
    );
    let refuse = |message: String| Error::new(message).package(label).hint(fix.clone());
    if !venv.is_dir() {
        return Err(refuse(format!(
            "its Python environment '{}' does not exist",
            venv.display()
        )));
    }
    let marker = venv.join(MARKER);
    let recorded = match std::fs::read_to_string(&marker) {
        Ok(t) => t.trim().to_string(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(refuse(format!(
                "its Python environment '{}' was not finished by `apsi pkg` (it has no {MARKER})",
                venv.display()
            )))
        }
        Err(e) => return Err(refuse(format!("cannot read '{}': {e}", marker.display()))),
    };
    let want = requirements_sha256(requirements).map_err(|e| e.package(label))?;
    if recorded != want {
        return Err(refuse(format!(
            "its Python environment '{}' was made for other requirements (sha256 {}), not for the installed package's {} (sha256 {})",
            venv.display(),
            short(&recorded),
            python.requirements,
            short(&want)
        )));
    }
    if let (Some(made), Some(need)) = (made_with(&venv), python_minor(&python.version)) {
        let minor = made
            .split('.')
            .take(2)
            .map(|p| p.parse::<u32>().ok())
            .collect::<Option<Vec<u32>>>();
        if minor.as_deref() != Some(&[need.0, need.1][..]) {
            return Err(refuse(format!(
                "its Python environment '{}' was made with Python {made}, and the package needs Python {}",
                venv.display(),
                python.version
            )));
        }
    }
    let exe = interpreter(&venv);
    // `metadata` follows links: a venv's interpreter links to the Python it
    // was made from, which may have been removed since.
    if !std::fs::metadata(&exe).is_ok_and(|m| m.is_file()) {
        return Err(refuse(format!(
            "its Python environment's interpreter '{}' is missing or a broken link (was the Python it was made from removed?)",
            exe.display()
        )));
    }
    Ok(exe)
}

/// `$APSI_HOME/venvs/<package name>/bin/python` of a found Python backend,
/// after checking (see [`check`]) that the environment exists and that its
/// marker holds the sha256 of the installed package's requirements file
/// (which `find` re-hashed against the package's record). An error names
/// what is wrong and the fix (`apsi pkg install NAME`).
pub fn python_env(home: &Home, found: &Found) -> Result<PathBuf, Error> {
    let Some(py) = &found.python else {
        return Err(
            Error::new("it has no [python] table: it is not a backend whose worker runs in Python")
                .package(found.label()),
        );
    };
    check(home, &found.name, &found.label(), &found.dir.join(&py.requirements), py)
}

fn short(h: &str) -> &str {
    h.get(..12).unwrap_or(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::find::find;
    use crate::find::tests::{python_home, want, PY};

    /// A home with the Python backend `torch` installed; the found package.
    fn installed(reqs: &[u8]) -> (tempfile::TempDir, Home, Found) {
        let (t, home) = python_home(PY, &[("apsi_torch.py", b"print(1)\n"), ("requirements.txt", reqs)]);
        let f = find(&home, &want("x86_64-linux-gnu")).unwrap().unwrap();
        (t, home, f)
    }

    /// A fake environment as `apsi pkg` leaves it: `bin/python`, `pyvenv.cfg`, the marker.
    fn make_env(home: &Home, marker: Option<&str>, version: &str) -> PathBuf {
        let v = dir(home, "torch");
        let exe = interpreter(&v);
        std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::write(
            v.join("pyvenv.cfg"),
            format!("home = /usr/bin\ninclude-system-site-packages = false\nversion = {version}\n"),
        )
        .unwrap();
        if let Some(m) = marker {
            std::fs::write(v.join(MARKER), format!("{m}\n")).unwrap();
        }
        v
    }

    const REQS: &[u8] = b"numpy==2.4.6 \\\n    --hash=sha256:00\n";

    #[test]
    fn a_finished_environment_gives_its_interpreter() {
        let (_t, home, f) = installed(REQS);
        let sha = crate::digest::sha256_hex(REQS);
        let v = make_env(&home, Some(&sha), "3.11.7");
        assert_eq!(python_env(&home, &f).unwrap(), v.join("bin").join("python"));
        assert!(python_env(&home, &f).unwrap().ends_with("venvs/torch/bin/python"));
    }

    #[test]
    fn each_problem_is_named_with_the_install_command() {
        let (_t, home, f) = installed(REQS);
        let e = python_env(&home, &f).unwrap_err();
        assert!(e.message.contains("venvs/torch' does not exist"), "{e}");
        assert_eq!(e.package.as_deref(), Some("torch 1.0.0"));
        assert!(e.hint.as_deref().unwrap().contains("apsi pkg install torch"), "{e}");

        let v = make_env(&home, None, "3.11.7");
        let e = python_env(&home, &f).unwrap_err();
        assert!(e.message.contains("has no .apsi-requirements.sha256"), "{e}");

        std::fs::write(v.join(MARKER), format!("{}\n", "ab".repeat(32))).unwrap();
        let e = python_env(&home, &f).unwrap_err();
        assert!(
            e.message.contains("made for other requirements (sha256 abababababab)"),
            "{e}"
        );
        assert!(e.hint.as_deref().unwrap().contains("apsi pkg install torch"), "{e}");

        let sha = crate::digest::sha256_hex(REQS);
        make_env(&home, Some(&sha), "3.12.1");
        let e = python_env(&home, &f).unwrap_err();
        assert!(
            e.message
                .contains("made with Python 3.12.1, and the package needs Python 3.11"),
            "{e}"
        );

        make_env(&home, Some(&sha), "3.11.2");
        std::fs::remove_file(interpreter(&v)).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("/nonexistent/python3.11", interpreter(&v)).unwrap();
        let e = python_env(&home, &f).unwrap_err();
        assert!(e.message.contains("missing or a broken link"), "{e}");
    }

    #[test]
    fn a_native_backend_has_no_python_environment() {
        let (_t, home, mut f) = installed(REQS);
        f.python = None;
        let e = python_env(&home, &f).unwrap_err();
        assert!(e.message.contains("no [python] table"), "{e}");
    }

    #[test]
    fn made_with_reads_either_key() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(
            t.path().join("pyvenv.cfg"),
            "home = /x\nversion_info = 3.13.0.final.0\n",
        )
        .unwrap();
        assert_eq!(made_with(t.path()).as_deref(), Some("3.13.0.final.0"));
        std::fs::write(
            t.path().join("pyvenv.cfg"),
            "version = 3.11.7\nversion_info = 3.11.7.final.0\n",
        )
        .unwrap();
        assert_eq!(made_with(t.path()).as_deref(), Some("3.11.7"));
    }
}
