//! The Python environment of a package with a `[python]` table (a backend
//! whose worker runs in Python, such as `torch`): after the package is
//! installed, `apsi pkg` creates `$APSI_HOME/venvs/NAME` with
//!
//! ```text
//! PYTHON -m venv $APSI_HOME/venvs/.NAME.tmp-PID       (PYTHON: $APSI_PYTHON, else python3,
//!                                                      of the manifest's python.version)
//! TMP/bin/python -m pip install --require-hashes --no-deps --only-binary=:all: \
//!     --disable-pip-version-check --no-input -r PACKAGE/requirements.txt
//! TMP/.apsi-requirements.sha256                       (the requirements' sha256, written last)
//! rename TMP -> venvs/NAME                             (an older one is renamed aside, then deleted)
//! ```
//!
//! pip's own settings (`PIP_FIND_LINKS`, `PIP_NO_INDEX`, `PIP_CACHE_DIR`,
//! `PIP_INDEX_URL`, its config files) are honoured, so CI can install from
//! a local folder of wheels; the settings that would install somewhere else
//! than the environment (`PIP_USER`, `PIP_TARGET`, `PIP_PREFIX`, `PIP_ROOT`)
//! and `PYTHONHOME`/`PYTHONPATH` are not passed on. pip's output goes to
//! stderr (it is the progress of a download of several GB).
//!
//! The chain of trust: the signed index gives the archive's sha256; the
//! archive's record gives the requirements file's sha256 (it was checked
//! when the tree was extracted or reused); the requirements pin every
//! distribution with the sha256 of its wheels, which pip checks
//! (`--require-hashes`, `--no-deps`: nothing unpinned comes in); the marker
//! ties the finished environment to those requirements, and
//! [`apsi_backend::venv::python_env`] checks it before the worker runs.

use crate::error::{io_err, ErrorKind, PkgError, Result};
use crate::home::Home;
use crate::manifest::{PackageManifest, PythonDecl};
use crate::ops::{Installed, Options, Reporter};
use apsi_backend::venv;
use fs4::fs_std::FileExt;
use std::fmt;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Settings not passed on to `venv` and pip: they would install outside
/// the environment or make its interpreter load something else.
const SCRUBBED: &[&str] = &[
    "PYTHONHOME",
    "PYTHONPATH",
    "PIP_USER",
    "PIP_TARGET",
    "PIP_PREFIX",
    "PIP_ROOT",
];

/// What happened to one package's Python environment.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PythonEnv {
    pub name: String,
    /// `$APSI_HOME/venvs/NAME`.
    pub path: PathBuf,
    /// `true`: created (or remade) by this call; `false`: it was up to date.
    pub created: bool,
    /// The distributions its requirements pin.
    pub distributions: usize,
}

impl fmt::Display for PythonEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.created {
            write!(
                f,
                "created the Python environment of {} in {} ({} pinned distributions, hashes checked)",
                self.name,
                self.path.display(),
                self.distributions
            )
        } else {
            write!(
                f,
                "the Python environment of {} in {} is up to date",
                self.name,
                self.path.display()
            )
        }
    }
}

/// What `remove` did to one package's environment.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Removed {
    pub name: String,
    /// The Python environment removed with it, if it had one.
    pub python_env: Option<PathBuf>,
}

impl fmt::Display for Removed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.python_env {
            None => write!(f, "removed {}", self.name),
            Some(p) => write!(f, "removed {} and its Python environment {}", self.name, p.display()),
        }
    }
}

/// Checks that a requirements file pins every distribution `NAME==VERSION`
/// with at least one `--hash=sha256:HEX`, and holds nothing else (no
/// options such as `--index-url`, no includes, URLs, extras or markers);
/// returns the `NAME==VERSION` pins. An empty file pins nothing.
pub fn check_requirements(text: &str) -> std::result::Result<Vec<String>, String> {
    let mut pins = Vec::new();
    let mut logical = String::new();
    let mut first_line = 0;
    let lines: Vec<&str> = text.lines().collect();
    for (i, raw) in lines.iter().enumerate() {
        if logical.is_empty() {
            first_line = i + 1;
        }
        let (body, continued) = match raw.trim_end().strip_suffix('\\') {
            Some(b) => (b, true),
            None => (*raw, false),
        };
        logical.push_str(body);
        logical.push(' ');
        if continued && i + 1 < lines.len() {
            continue;
        }
        let line = std::mem::take(&mut logical);
        // pip's comments: '#' at the start or after whitespace.
        let line = match line
            .char_indices()
            .find(|&(j, c)| c == '#' && (j == 0 || line[..j].ends_with(char::is_whitespace)))
        {
            Some((j, _)) => &line[..j],
            None => &line[..],
        };
        let mut words = line.split_whitespace();
        let Some(pin) = words.next() else { continue };
        let at = |what: String| format!("line {first_line}: {what}");
        let Some((name, version)) = pin.split_once("==") else {
            return Err(at(format!("'{pin}' is not pinned as NAME==VERSION")));
        };
        let name_ok = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        let version_ok = !version.is_empty()
            && version
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '!' | '-' | '_'));
        if !name_ok || !version_ok {
            return Err(at(format!("'{pin}' is not pinned as NAME==VERSION")));
        }
        let mut hashes = 0;
        for w in words {
            match w.strip_prefix("--hash=sha256:") {
                Some(h) if crate::digest::is_sha256_hex(h) => hashes += 1,
                _ => {
                    return Err(at(format!(
                        "'{w}' after {pin}: only --hash=sha256:HEX (64 lower-case digits) may follow a pin"
                    )))
                }
            }
        }
        if hashes == 0 {
            return Err(at(format!("{pin} has no --hash=sha256:HEX")));
        }
        pins.push(pin.to_string());
    }
    Ok(pins)
}

/// The interpreter environments are made with: `opts.python`, else
/// `$APSI_PYTHON`, else `python3`; and how to say where it came from.
fn base_python(opts: &Options) -> (PathBuf, String) {
    if let Some(p) = &opts.python {
        return (p.clone(), format!("'{}'", p.display()));
    }
    match std::env::var_os("APSI_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            let said = format!("APSI_PYTHON ('{}')", p.display());
            (p, said)
        }
        None => (PathBuf::from("python3"), "python3 (APSI_PYTHON is not set)".to_string()),
    }
}

/// A command for the Python steps: pip's output on stderr, no stdin, and
/// the settings that would install elsewhere left out.
fn command(program: &Path, opts: &Options) -> Command {
    let mut c = Command::new(program);
    for k in SCRUBBED {
        c.env_remove(k);
    }
    for (k, v) in &opts.python_env {
        c.env(k, v);
    }
    c.stdin(Stdio::null()).stdout(Stdio::from(std::io::stderr()));
    c
}

/// The manifest of an installed package, read from its verified tree.
pub fn installed_manifest(home: &Home, rec: &Installed) -> Result<(PathBuf, PackageManifest)> {
    let dir = home.tree(&rec.cksum).join(rec.prefix());
    let mp = dir.join(crate::archive::MANIFEST);
    let text = std::fs::read_to_string(&mp).map_err(|e| io_err("read", &mp, &e))?;
    Ok((dir, PackageManifest::parse(&text)?))
}

/// The lock of one environment, held while it is created or removed.
struct EnvLock {
    file: std::fs::File,
}

impl Drop for EnvLock {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
        let _ = FileExt::unlock(&self.file);
    }
}

/// Takes `venvs/.NAME.lock`. `wait`: block (saying so) while another
/// process holds it; otherwise an error naming that process.
fn lock(home: &Home, name: &str, wait: bool, reporter: &dyn Reporter) -> Result<EnvLock> {
    let dir = home.venvs();
    std::fs::create_dir_all(&dir).map_err(|e| io_err("create the folder", &dir, &e))?;
    let path = dir.join(format!(".{name}.lock"));
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| io_err("open the lock", &path, &e))?;
    let got = matches!(FileExt::try_lock_exclusive(&file), Ok(true));
    if !got {
        let mut holder = String::new();
        let _ = file.read_to_string(&mut holder);
        let who = match holder.trim() {
            "" => "another process".to_string(),
            pid => format!("process {pid}"),
        };
        if !wait {
            return Err(PkgError::new(
                ErrorKind::Lock,
                format!("the Python environment of {name} is being created by {who}"),
            )
            .hint("wait for that `apsi pkg` to finish, then try again"));
        }
        reporter.note(&format!(
            "waiting for {who}, which is creating the Python environment of {name}"
        ));
        FileExt::lock_exclusive(&file).map_err(|e| io_err("lock", &path, &e))?;
    }
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = write!(file, "{}", std::process::id());
    let _ = file.flush();
    Ok(EnvLock { file })
}

/// Removes `.NAME.tmp-*` and `.NAME.old-*` left by a process that died
/// (only called with the environment's lock held).
fn clear_leftovers(home: &Home, name: &str) {
    let Ok(rd) = std::fs::read_dir(home.venvs()) else {
        return;
    };
    let tmp = format!(".{name}.tmp-");
    let old = format!(".{name}.old-");
    for e in rd.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with(&tmp) || n.starts_with(&old) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Creates (or finds up to date) the Python environment of an installed
/// package that has a `[python]` table; `Ok(None)` for one without.
pub fn ensure(home: &Home, opts: &Options, reporter: &dyn Reporter, rec: &Installed) -> Result<Option<PythonEnv>> {
    let (pkg_dir, m) = installed_manifest(home, rec)?;
    let Some(py) = m.python.clone() else { return Ok(None) };
    let label = rec.label();
    let requirements = pkg_dir.join(&py.requirements);
    // The file pip is given still has the hash recorded at extraction.
    apsi_backend::files::check_file(&home.tree(&rec.cksum), &format!("{}/{}", rec.prefix(), py.requirements)).map_err(
        |p| {
            PkgError::new(
                ErrorKind::Integrity,
                format!("{label}: its files changed since it was installed: {p}"),
            )
            .hint(format!(
                "see `apsi pkg verify {0}`; `apsi pkg install {0}` restores them",
                rec.name
            ))
        },
    )?;
    let text = std::fs::read_to_string(&requirements).map_err(|e| {
        PkgError::new(
            ErrorKind::Io,
            format!(
                "{label}: cannot read its [python] requirements '{}': {e}",
                requirements.display()
            ),
        )
    })?;
    let pins = check_requirements(&text).map_err(|e| {
        PkgError::new(
            ErrorKind::Integrity,
            format!(
                "{label}: its requirements '{}' are not fully pinned and hash-checked: {e}",
                py.requirements
            ),
        )
        .hint("the package is broken; ask its publisher for a fixed version")
    })?;
    let _guard = lock(home, &rec.name, true, reporter)?;
    let final_dir = venv::dir(home, &rec.name);
    let up_to_date = |distributions| PythonEnv {
        name: rec.name.clone(),
        path: final_dir.clone(),
        created: false,
        distributions,
    };
    if venv::check(home, &rec.name, &label, &requirements, &py).is_ok() {
        return Ok(Some(up_to_date(pins.len())));
    }
    clear_leftovers(home, &rec.name);
    let (python, said) = base_python(opts);
    check_python_version(&python, &said, &py, &label, opts)?;
    // Absolute paths: they are written into the environment's scripts.
    let venvs = std::fs::canonicalize(home.venvs()).map_err(|e| io_err("find the folder", &home.venvs(), &e))?;
    let final_dir = venvs.join(&rec.name);
    let tmp = venvs.join(format!(".{}.tmp-{}", rec.name, std::process::id()));
    reporter.note(&format!(
        "creating the Python environment of {label} in {}: pip installs {} pinned, hash-checked distributions{}",
        final_dir.display(),
        pins.len(),
        if opts.offline {
            " (--offline: pip still needs their wheels, from its cache or PIP_FIND_LINKS)"
        } else {
            " (this can take minutes)"
        }
    ));
    let made = (|| -> Result<()> {
        create_venv(&python, &said, &tmp, &py, &label, opts)?;
        pip_install(&tmp, &requirements, &rec.name, &label, opts)?;
        relocate(&tmp, &final_dir)?;
        let sha = venv::requirements_sha256(&requirements).map_err(PkgError::from)?;
        let marker = tmp.join(venv::MARKER);
        let mut f = std::fs::File::create(&marker).map_err(|e| io_err("create", &marker, &e))?;
        f.write_all(format!("{sha}\n").as_bytes())
            .and_then(|_| f.sync_all())
            .map_err(|e| io_err("write", &marker, &e))?;
        swap_into_place(&tmp, &final_dir, &rec.name, reporter)
    })();
    if let Err(e) = made {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    Ok(Some(PythonEnv {
        name: rec.name.clone(),
        path: final_dir,
        created: true,
        distributions: pins.len(),
    }))
}

/// The base interpreter runs and is of the manifest's minor version.
fn check_python_version(python: &Path, said: &str, py: &PythonDecl, label: &str, opts: &Options) -> Result<()> {
    let want = &py.version;
    let install_hint = format!(
        "install Python {want} with its venv module (Debian/Ubuntu: apt install python{want} python{want}-venv) and set APSI_PYTHON to it (e.g. APSI_PYTHON=/usr/bin/python{want}), then run `apsi pkg install {}` again",
        label.split(' ').next().unwrap_or(label)
    );
    let out = command(python, opts)
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .stdout(Stdio::piped())
        .output()
        .map_err(|e| {
            PkgError::new(
                ErrorKind::Python,
                format!("{label} needs Python {want} for its environment, and {said} cannot be run: {e}"),
            )
            .hint(install_hint.clone())
        })?;
    let got = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || got.is_empty() {
        return Err(PkgError::new(
            ErrorKind::Python,
            format!(
                "{label} needs Python {want} for its environment, and {said} failed to report its version ({})",
                out.status
            ),
        )
        .hint(install_hint));
    }
    if &got != want {
        return Err(PkgError::new(
            ErrorKind::Python,
            format!("{label} needs Python {want} (its pinned wheels are built for it), and {said} is Python {got}"),
        )
        .hint(install_hint));
    }
    Ok(())
}

fn create_venv(python: &Path, said: &str, tmp: &Path, py: &PythonDecl, label: &str, opts: &Options) -> Result<()> {
    let name = label.split(' ').next().unwrap_or(label);
    let status = command(python, opts)
        .args(["-m", "venv", "--prompt", name])
        .arg(tmp)
        .status()
        .map_err(|e| PkgError::new(ErrorKind::Python, format!("cannot run {said}: {e}")))?;
    if !status.success() {
        let v = &py.version;
        return Err(PkgError::new(
            ErrorKind::Python,
            format!("{said} -m venv could not create the Python environment of {label} ({status}); nothing was changed"),
        )
        .hint(format!(
            "its venv module (with ensurepip) may be missing: Debian/Ubuntu: apt install python{v}-venv; read its message above"
        )));
    }
    Ok(())
}

fn pip_install(tmp: &Path, requirements: &Path, name: &str, label: &str, opts: &Options) -> Result<()> {
    let exe = venv::interpreter(tmp);
    let status = command(&exe, opts)
        .args([
            "-m",
            "pip",
            "install",
            "--require-hashes",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "--no-input",
            "-r",
        ])
        .arg(requirements)
        .status()
        .map_err(|e| PkgError::new(ErrorKind::Python, format!("cannot run '{}': {e}", exe.display())))?;
    if status.success() {
        return Ok(());
    }
    let why = if opts.offline {
        format!(
            "--offline: the Python environment of {label} had to be made, and pip needs its wheels, which it finds only on the network (its index), in its cache or in a folder named by PIP_FIND_LINKS"
        )
    } else {
        format!("pip could not install the pinned requirements of {label}")
    };
    Err(PkgError::new(
        ErrorKind::Python,
        format!("{why} (pip's {status}); nothing was changed: the partial environment was removed"),
    )
    .hint(format!(
        "read pip's message above: a hash mismatch means a wheel is not the one the package pinned (never install it); for a network problem try again, or fill a folder with the wheels where the network is reachable (`pip download --require-hashes --no-deps --only-binary=:all: -r {} -d WHEELS`, with a Python of the same version) and run `PIP_FIND_LINKS=WHEELS PIP_NO_INDEX=1 apsi pkg install {name}`",
        requirements.display()
    )))
}

/// Rewrites the environment's own path inside its scripts and `pyvenv.cfg`
/// (pip and `venv` write the absolute path of the folder they work in, and
/// the folder is renamed once complete). Only files directly in `bin/` (or
/// `Scripts/`) and `pyvenv.cfg`; links are left alone.
fn relocate(tmp: &Path, final_dir: &Path) -> Result<()> {
    let from = tmp.as_os_str().as_encoded_bytes();
    let to = final_dir.as_os_str().as_encoded_bytes();
    let bin = venv::interpreter(tmp)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| tmp.to_path_buf());
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&bin)
        .map_err(|e| io_err("read the folder", &bin, &e))?
        .flatten()
        .map(|e| e.path())
        .collect();
    paths.push(tmp.join("pyvenv.cfg"));
    for p in paths {
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if !meta.is_file() || meta.len() > 4 << 20 {
            continue;
        }
        let bytes = std::fs::read(&p).map_err(|e| io_err("read", &p, &e))?;
        if !bytes.windows(from.len()).any(|w| w == from) {
            continue;
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i..].starts_with(from) {
                out.extend_from_slice(to);
                i += from.len();
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        // Written in place: the file keeps its mode (scripts stay executable).
        std::fs::write(&p, out).map_err(|e| io_err("write", &p, &e))?;
    }
    Ok(())
}

/// Renames the finished environment into place; an older one is renamed
/// aside first and deleted after.
fn swap_into_place(tmp: &Path, final_dir: &Path, name: &str, reporter: &dyn Reporter) -> Result<()> {
    let old = final_dir.with_file_name(format!(".{name}.old-{}", std::process::id()));
    let had_old = std::fs::symlink_metadata(final_dir).is_ok();
    if had_old {
        std::fs::rename(final_dir, &old).map_err(|e| io_err("move aside the old environment", final_dir, &e))?;
    }
    if let Err(e) = std::fs::rename(tmp, final_dir) {
        if had_old {
            let _ = std::fs::rename(&old, final_dir);
        }
        return Err(io_err("move the new environment into", final_dir, &e));
    }
    if had_old {
        reporter.note(&format!("removing the previous Python environment of {name}"));
        let _ = std::fs::remove_dir_all(&old);
    }
    Ok(())
}

/// Removes the Python environment of package `name`, if there is one
/// (renamed aside first, so no half-deleted environment is ever at its
/// place); returns its path when one was removed.
pub fn remove(home: &Home, name: &str, reporter: &dyn Reporter) -> Result<Option<PathBuf>> {
    let final_dir = venv::dir(home, name);
    if !home.venvs().is_dir() {
        return Ok(None);
    }
    let _guard = lock(home, name, false, reporter)?;
    clear_leftovers(home, name);
    let had = std::fs::symlink_metadata(&final_dir).is_ok();
    if had {
        reporter.note(&format!(
            "removing the Python environment of {name} in {}",
            final_dir.display()
        ));
        let old = final_dir.with_file_name(format!(".{name}.old-{}", std::process::id()));
        std::fs::rename(&final_dir, &old).map_err(|e| io_err("remove", &final_dir, &e))?;
        std::fs::remove_dir_all(&old).map_err(|e| io_err("remove", &old, &e))?;
    }
    Ok(had.then_some(final_dir))
}

/// What is wrong with the Python environment of an installed package (for
/// `apsi pkg verify`); `None` when it has none to have or it is fine.
pub fn problem(home: &Home, rec: &Installed) -> Option<String> {
    let (dir, m) = installed_manifest(home, rec).ok()?;
    let py = m.python?;
    venv::check(home, &rec.name, &rec.label(), &dir.join(&py.requirements), &py)
        .err()
        .map(|e| match e.hint {
            Some(h) => format!("{}; {h}", e.message),
            None => e.message,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn requirements_must_be_pinned_and_hashed() {
        let good = format!("# a comment\nnumpy==2.4.6 \\\n    --hash=sha256:{H} \\\n    --hash=sha256:{H}\n\ntorch==2.15.0 --hash=sha256:{H}  # why\n");
        assert_eq!(
            check_requirements(&good).unwrap(),
            vec!["numpy==2.4.6", "torch==2.15.0"]
        );
        assert!(check_requirements("").unwrap().is_empty());
        assert!(check_requirements("# nothing\n\n").unwrap().is_empty());
        let bad = |t: &str| check_requirements(t).unwrap_err();
        assert!(bad("numpy==2.4.6\n").contains("no --hash"), "{}", bad("numpy==2.4.6\n"));
        assert!(bad(&format!("numpy>=2 --hash=sha256:{H}\n")).contains("not pinned"));
        assert!(bad(&format!("--index-url https://evil\nnumpy==2 --hash=sha256:{H}\n")).contains("line 1"));
        assert!(bad(&format!("numpy==2 --hash=md5:{H}\n")).contains("only --hash=sha256"));
        assert!(bad(&format!("-r other.txt\nnumpy==2 --hash=sha256:{H}\n")).contains("not pinned"));
        assert!(bad(&format!("x==1 --hash=sha256:{H}\nnumpy[extra]==2 --hash=sha256:{H}\n")).contains("line 2"));
    }

    #[test]
    fn relocate_rewrites_the_folder_in_scripts() {
        let t = tempfile::tempdir().unwrap();
        let tmp = t.path().join(".torch.tmp-1");
        let fin = t.path().join("torch");
        let bin = venv::interpreter(&tmp).parent().unwrap().to_path_buf();
        std::fs::create_dir_all(&bin).unwrap();
        let script = bin.join("torchrun");
        std::fs::write(&script, format!("#!{}/bin/python\nimport x\n", tmp.display())).unwrap();
        std::fs::write(
            tmp.join("pyvenv.cfg"),
            format!("command = /usr/bin/python3 -m venv {}\n", tmp.display()),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::os::unix::fs::symlink("/usr/bin/python3", bin.join("python")).unwrap();
        }
        relocate(&tmp, &fin).unwrap();
        assert_eq!(
            std::fs::read_to_string(&script).unwrap(),
            format!("#!{}/bin/python\nimport x\n", fin.display())
        );
        assert!(std::fs::read_to_string(tmp.join("pyvenv.cfg"))
            .unwrap()
            .ends_with(&format!("venv {}\n", fin.display())));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o755);
            assert_eq!(
                std::fs::read_link(bin.join("python")).unwrap(),
                PathBuf::from("/usr/bin/python3")
            );
        }
    }

    #[test]
    fn swap_replaces_an_older_environment() {
        let t = tempfile::tempdir().unwrap();
        let tmp = t.path().join(".x.tmp-1");
        let fin = t.path().join("x");
        std::fs::create_dir_all(&tmp).unwrap();
        std::fs::write(tmp.join("new"), "").unwrap();
        std::fs::create_dir_all(&fin).unwrap();
        std::fs::write(fin.join("old"), "").unwrap();
        swap_into_place(&tmp, &fin, "x", &crate::ops::Quiet).unwrap();
        assert!(fin.join("new").exists() && !fin.join("old").exists());
        let left: Vec<_> = std::fs::read_dir(t.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("x")]);
    }
}
