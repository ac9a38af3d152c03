//! A backend package with a `[python]` table, end to end through a signed
//! registry: `install` creates `$APSI_HOME/venvs/NAME` with pip from the
//! package's hash-pinned requirements (here one tiny pure-Python wheel built
//! by the test, found through PIP_FIND_LINKS with PIP_NO_INDEX: no
//! network), a second install finds it up to date, a wheel that is not the
//! pinned one and a Python of another version are refused without leaving
//! a half environment, `verify` notices a broken environment, and `remove`
//! takes the environment with the package. Skipped when `python3` cannot
//! make a virtual environment.

mod common;
use apsi_pkg::ops::Options;
use apsi_pkg::ErrorKind;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `python3`'s minor version when it can create a venv with pip, else `None`.
fn python_minor() -> Option<String> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, venv, ensurepip; print('%d.%d' % sys.version_info[:2])",
        ])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

macro_rules! need_python {
    () => {
        match python_minor() {
            Some(v) => v,
            None => {
                eprintln!("skipped: python3 with venv and ensurepip is not available");
                return;
            }
        }
    };
}

/// Builds `apsi_hello-VERSION-py3-none-any.whl` (one module saying `GREETING`)
/// in `dir` with the standard library's zipfile; returns its path.
fn build_wheel(dir: &Path, version: &str, greeting: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let script = r#"
import base64, hashlib, sys, zipfile
out, version, greeting = sys.argv[1], sys.argv[2], sys.argv[3]
name = "apsi_hello"
di = f"{name}-{version}.dist-info"
files = {
    f"{name}.py": f"GREETING = {greeting!r}\n",
    f"{di}/METADATA": f"Metadata-Version: 2.1\nName: apsi-hello\nVersion: {version}\n",
    f"{di}/WHEEL": "Wheel-Version: 1.0\nGenerator: apsi-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
for p, t in files.items():
    d = base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b"=").decode()
    record.append(f"{p},sha256={d},{len(t.encode())}")
record.append(f"{di}/RECORD,,")
files[f"{di}/RECORD"] = "\n".join(record) + "\n"
path = f"{out}/{name}-{version}-py3-none-any.whl"
with zipfile.ZipFile(path, "w") as z:
    for p, t in files.items():
        z.writestr(zipfile.ZipInfo(p, (2020, 1, 1, 0, 0, 0)), t)
print(path)
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(dir)
        .arg(version)
        .arg(greeting)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

fn sha256_of(p: &Path) -> String {
    apsi_pkg::digest::sha256_hex(&std::fs::read(p).unwrap())
}

/// Publishes the Python backend `pyback VERS` pinning `apsi-hello==1.0`
/// with `hash`, for Python `minor`.
fn publish_pyback(reg: &Reg, vers: &str, hash: &str, minor: &str) {
    let src = reg.tmp.path().join(format!("src-pyback-{vers}"));
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("apsi-package.toml"),
        format!(
            "name = \"pyback\"\nversion = \"{vers}\"\nkind = \"backend\"\ntarget = \"any\"\nentry = \"worker.py\"\n\
             [backend]\nprovides = \"pytest\"\nsymbol = \"apsi_pytest_v1\"\nabi = 1\n\
             [python]\nrequirements = \"requirements.txt\"\nversion = \"{minor}\"\n"
        ),
    )
    .unwrap();
    std::fs::write(src.join("worker.py"), "import apsi_hello\nprint(apsi_hello.GREETING)\n").unwrap();
    std::fs::write(
        src.join("requirements.txt"),
        format!("# test\napsi-hello==1.0 \\\n    --hash=sha256:{hash}\n"),
    )
    .unwrap();
    reg.publish_dir(&src, "pyback", vers);
}

/// Options pointing pip at the wheel folder only.
fn py_opts(wheels: &Path) -> Options {
    Options {
        python_env: vec![
            ("PIP_FIND_LINKS".into(), wheels.display().to_string()),
            ("PIP_NO_INDEX".into(), "1".into()),
            ("PIP_NO_CACHE_DIR".into(), "1".into()),
            ("PIP_QUIET".into(), "1".into()),
        ],
        python: Some("python3".into()),
        ..opts()
    }
}

/// Nothing half-made in `venvs/`: no `.NAME.tmp-*` or `.NAME.old-*`.
fn no_leftovers(env: &Env) {
    let left: Vec<String> = std::fs::read_dir(env.home.venvs())
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(".tmp-") || n.contains(".old-"))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "leftovers in venvs/: {left:?}");
}

fn run_python(exe: &Path, code: &str) -> String {
    let out = Command::new(exe).args(["-c", code]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn want() -> apsi_pkg::backend::Want<'static> {
    apsi_pkg::backend::Want {
        provides: "pytest",
        abi: 1,
        symbol: "apsi_pytest_v1",
        core_version: "2.0.0",
        package: "pyback",
        target: apsi_pkg::backend::host_target(),
    }
}

#[test]
fn install_creates_the_environment_from_hash_pinned_wheels() {
    let minor = need_python!();
    let reg = Reg::new();
    let wheels = reg.tmp.path().join("wheels");
    let whl = build_wheel(&wheels, "1.0", "hello from a pinned wheel");
    publish_pyback(&reg, "1.0.0", &sha256_of(&whl), &minor);
    reg.sign();
    let env = Env::new();
    let ctx = env.ctx(&reg.url(), reg.root_bytes(), py_opts(&wheels));

    let r = ctx.install(&["pyback".into()], None).unwrap();
    assert_eq!(r.python_envs.len(), 1);
    let made = &r.python_envs[0];
    assert!(made.created && made.distributions == 1, "{made:?}");
    assert!(
        made.to_string()
            .starts_with("created the Python environment of pyback in "),
        "{made}"
    );
    let venv = env.home.venvs().join("pyback");
    assert_eq!(
        std::fs::canonicalize(&made.path).unwrap(),
        std::fs::canonicalize(&venv).unwrap()
    );
    no_leftovers(&env);

    // The loader's view: the backend is found, and its environment checks.
    let found = apsi_pkg::backend::find(&env.home, &want()).unwrap().unwrap();
    assert!(found.library.ends_with("pyback-1.0.0/worker.py"));
    let exe = apsi_pkg::backend::python_env(&env.home, &found).unwrap();
    assert_eq!(exe, venv.join("bin").join("python"));
    assert_eq!(
        run_python(&exe, "import apsi_hello; print(apsi_hello.GREETING)"),
        "hello from a pinned wheel"
    );
    let marker = std::fs::read_to_string(venv.join(".apsi-requirements.sha256")).unwrap();
    assert_eq!(marker.trim(), sha256_of(&found.dir.join("requirements.txt")));
    // Scripts name the environment's final place, not the folder it was made in.
    let activate = std::fs::read_to_string(venv.join("bin").join("activate")).unwrap();
    assert!(!activate.contains(".pyback.tmp-"), "{activate}");

    // Again: up to date, nothing remade.
    let r = ctx.install(&["pyback".into()], None).unwrap();
    assert!(!r.python_envs[0].created);
    assert!(
        r.python_envs[0].to_string().ends_with("is up to date"),
        "{}",
        r.python_envs[0]
    );

    // A broken environment is noticed by verify and remade by install.
    std::fs::write(venv.join(".apsi-requirements.sha256"), "0\n").unwrap();
    let v = apsi_pkg::ops::verify(&ctx, &[]).unwrap();
    assert!(
        !v[0].ok && v[0].problems[0].contains("made for other requirements"),
        "{v:?}"
    );
    assert!(apsi_pkg::backend::python_env(&env.home, &found).is_err());
    let r = ctx.install(&["pyback".into()], None).unwrap();
    assert!(r.python_envs[0].created);
    assert!(apsi_pkg::ops::verify(&ctx, &[]).unwrap()[0].ok);
    no_leftovers(&env);

    // remove takes the environment with it.
    let removed = ctx.remove_all(&["pyback".into()]).unwrap();
    assert_eq!(removed[0].python_env.as_deref(), Some(venv.as_path()));
    assert!(
        removed[0].to_string().contains("and its Python environment"),
        "{}",
        removed[0]
    );
    assert!(!venv.exists());
    no_leftovers(&env);
}

#[test]
fn a_wheel_that_is_not_the_pinned_one_leaves_no_half_environment() {
    let minor = need_python!();
    let reg = Reg::new();
    let wheels = reg.tmp.path().join("wheels");
    let good = build_wheel(&wheels, "1.0", "the pinned one");
    publish_pyback(&reg, "1.0.0", &sha256_of(&good), &minor);
    reg.sign();
    let env = Env::new();
    let o = py_opts(&wheels);
    env.ctx(&reg.url(), reg.root_bytes(), o.clone())
        .install(&["pyback".into()], None)
        .unwrap_or_else(|e| panic!("{e}"));
    let venv = env.home.venvs().join("pyback");
    let before = run_python(
        &venv.join("bin").join("python"),
        "import apsi_hello; print(apsi_hello.GREETING)",
    );
    // 1.0.1 pins a hash no wheel has (the wheel in the folder was swapped).
    publish_pyback(&reg, "1.0.1", &"ab".repeat(32), &minor);
    reg.sign();

    let e = env
        .ctx(&reg.url(), reg.root_bytes(), o.clone())
        .update(None)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Python, "{e}");
    assert!(
        e.message
            .contains("pip could not install the pinned requirements of pyback 1.0.1"),
        "{e}"
    );
    assert!(e.message.contains("the partial environment was removed"), "{e}");
    assert!(
        e.hint
            .as_deref()
            .unwrap()
            .contains("PIP_FIND_LINKS=WHEELS PIP_NO_INDEX=1"),
        "{e}"
    );
    no_leftovers(&env);
    // The older environment is untouched, and is not taken for the new version's.
    assert_eq!(
        run_python(
            &venv.join("bin").join("python"),
            "import apsi_hello; print(apsi_hello.GREETING)"
        ),
        before
    );
    let found = apsi_pkg::backend::find(&env.home, &want()).unwrap().unwrap();
    assert_eq!(found.version, "1.0.1");
    let e = apsi_pkg::backend::python_env(&env.home, &found).unwrap_err();
    assert!(e.message.contains("made for other requirements"), "{e}");
    assert!(e.hint.unwrap().contains("apsi pkg install pyback"));

    // --offline: the error says why pip could not do it.
    let e = env
        .ctx(&reg.url(), reg.root_bytes(), Options { offline: true, ..o })
        .install(&["pyback".into()], None)
        .unwrap_err();
    assert!(
        e.message
            .starts_with("--offline: the Python environment of pyback 1.0.1 had to be made"),
        "{e}"
    );
    no_leftovers(&env);
}

#[test]
fn a_python_of_another_version_is_refused_before_anything_is_made() {
    let minor = need_python!();
    let other = if minor == "3.99" { "3.98" } else { "3.99" };
    let reg = Reg::new();
    let wheels = reg.tmp.path().join("wheels");
    let whl = build_wheel(&wheels, "1.0", "x");
    publish_pyback(&reg, "1.0.0", &sha256_of(&whl), other);
    reg.sign();
    let env = Env::new();
    let e = env
        .ctx(&reg.url(), reg.root_bytes(), py_opts(&wheels))
        .install(&["pyback".into()], None)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Python, "{e}");
    assert!(
        e.message.contains(&format!(
            "pyback 1.0.0 needs Python {other} (its pinned wheels are built for it), and 'python3' is Python {minor}"
        )),
        "{e}"
    );
    assert!(e.hint.as_deref().unwrap().contains("APSI_PYTHON"), "{e}");
    assert!(!env.home.venvs().join("pyback").exists());
    no_leftovers(&env);
    // The package itself is installed; the environment is what is missing.
    let found = apsi_pkg::backend::find(&env.home, &want()).unwrap().unwrap();
    let e = apsi_pkg::backend::python_env(&env.home, &found).unwrap_err();
    assert!(e.message.contains("does not exist"), "{e}");
    // A Python that cannot be run is named as such.
    let e = env
        .ctx(
            &reg.url(),
            reg.root_bytes(),
            Options {
                python: Some("/nonexistent/python3".into()),
                ..py_opts(&wheels)
            },
        )
        .install(&["pyback".into()], None)
        .unwrap_err();
    assert!(e.message.contains("'/nonexistent/python3' cannot be run"), "{e}");
}

#[test]
fn publishing_refuses_requirements_without_hashes() {
    let reg = Reg::new();
    let src = reg.tmp.path().join("src-bad");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("apsi-package.toml"),
        "name = \"pyback\"\nversion = \"1.0.0\"\nkind = \"backend\"\ntarget = \"any\"\nentry = \"worker.py\"\n\
         [backend]\nprovides = \"pytest\"\nsymbol = \"apsi_pytest_v1\"\nabi = 1\n[python]\nversion = \"3.11\"\n",
    )
    .unwrap();
    std::fs::write(src.join("worker.py"), "").unwrap();
    std::fs::write(src.join("requirements.txt"), "numpy==2.4.6\n").unwrap();
    let archive = reg.tmp.path().join("bad.tar.gz");
    apsi_pkg::archive::pack(&src, "pyback-1.0.0", &archive, 6).unwrap();
    let e = apsi_pkg::publish::add(&reg.dir, &archive).unwrap_err();
    assert!(e.message.contains("not fully pinned and hash-checked"), "{e}");
    std::fs::remove_file(src.join("requirements.txt")).unwrap();
    apsi_pkg::archive::pack(&src, "pyback-1.0.0", &archive, 6).unwrap();
    let e = apsi_pkg::publish::add(&reg.dir, &archive).unwrap_err();
    assert!(e.message.contains("are not in the archive"), "{e}");
}

#[test]
fn the_torch_package_of_this_repository_is_well_formed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("apsi-torch");
    let m =
        apsi_pkg::manifest::PackageManifest::parse(&std::fs::read_to_string(dir.join("apsi-package.toml")).unwrap())
            .unwrap();
    assert_eq!((m.name.as_str(), m.kind.as_str()), ("torch", "backend"));
    let b = m.backend.unwrap();
    assert_eq!(
        (b.provides.as_str(), b.symbol.as_str(), b.abi),
        ("torch", "apsi_torch_v1", 1)
    );
    let py = m.python.unwrap();
    assert_eq!(py.version, "3.11");
    let text = std::fs::read_to_string(dir.join(&py.requirements)).unwrap();
    let pins = apsi_pkg::pyenv::check_requirements(&text).unwrap();
    assert!(pins.contains(&"torch==2.15.0".to_string()), "{pins:?}");
    for need in ["numpy==", "safetensors==", "setuptools=="] {
        assert!(pins.iter().any(|p| p.starts_with(need)), "{need} is missing: {pins:?}");
    }
    // requirements.txt is written from requirements.in: the same pins.
    let mut wanted: Vec<String> = std::fs::read_to_string(dir.join("requirements.in"))
        .unwrap()
        .lines()
        .map(|l| l.split('#').next().unwrap().trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    let mut got = pins.clone();
    wanted.sort_by_key(|p| p.to_lowercase());
    got.sort_by_key(|p| p.to_lowercase());
    assert_eq!(got, wanted, "run tools/torch-requirements");
}
