//! `apsi pkg` end to end: a registry made with the registry tool (keygen,
//! root, build, index, sign), served over HTTP on 127.0.0.1, a library
//! package installed by the real `apsi` binary and used from a program,
//! removed, and reinstalled --offline from the store.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{new_registry, reg_tool, serve, sign};

struct World {
    tmp: tempfile::TempDir,
    url: String,
}

impl World {
    fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }
    fn reg(&self) -> PathBuf {
        self.tmp.path().join("reg")
    }
    fn work(&self) -> PathBuf {
        self.tmp.path().join("work")
    }

    fn apsi(&self, args: &[&str], url: &str) -> Output {
        Command::new(env!("CARGO_BIN_EXE_apsi"))
            .args(args)
            .current_dir(self.work())
            .env("APSI_HOME", self.home())
            .env("APSI_REGISTRY", url)
            .env("APSI_REGISTRY_ROOT", self.reg().join("1.root.json"))
            .env("NO_COLOR", "1")
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .output()
            .expect("cannot run apsi")
    }
}

fn ok(o: &Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout: {out}\nstderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn package(dir: &Path, name: &str, vers: &str, body: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("apsi-package.toml"),
        format!("name = \"{name}\"\nversion = \"{vers}\"\nkind = \"library\"\n"),
    )
    .unwrap();
    std::fs::write(dir.join(format!("{name}.apsi")), body).unwrap();
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let keys = t.join("keys");
    let reg = t.join("reg");
    let built = t.join("built");
    std::fs::create_dir_all(t.join("work")).unwrap();
    new_registry(&keys, &reg);
    package(
        &t.join("src-mathx"),
        "mathx",
        "1.0.0",
        "def double(x):\n    return 2 * x\n",
    );
    reg_tool(&[
        "build",
        t.join("src-mathx").to_str().unwrap(),
        "--out",
        built.to_str().unwrap(),
    ]);
    reg_tool(&[
        "index",
        reg.to_str().unwrap(),
        built.join("mathx-1.0.0-any.tar.gz").to_str().unwrap(),
    ]);
    sign(&keys, &reg);
    World { tmp, url: serve(&reg) }
}

#[test]
fn install_use_remove_reinstall_offline() {
    let w = world();
    let prog = w.work().join("prog.apsi");
    std::fs::write(&prog, "use mathx\nprint(mathx.double(21))\n").unwrap();

    // Before installing: the error names the fix.
    let o = w.apsi(&["prog.apsi"], &w.url);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("apsi pkg install mathx"), "{err}");

    let out = ok(&w.apsi(&["pkg", "install", "mathx"], &w.url));
    assert!(out.contains("installed mathx 1.0.0"), "{out}");
    assert_eq!(ok(&w.apsi(&["prog.apsi"], &w.url)).trim(), "42");

    let list = ok(&w.apsi(&["pkg", "list", "--json"], &w.url));
    let v: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(v[0]["name"], "mathx");
    let ver = ok(&w.apsi(&["pkg", "verify", "--json"], &w.url));
    let v: serde_json::Value = serde_json::from_str(&ver).unwrap();
    assert_eq!(v[0]["ok"], true, "{ver}");
    let info = ok(&w.apsi(&["pkg", "info", "mathx", "--json"], &w.url));
    let v: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(v["versions"][0]["vers"], "1.0.0");
    assert!(ok(&w.apsi(&["pkg", "search", "math"], &w.url)).contains("mathx"));

    ok(&w.apsi(&["pkg", "remove", "mathx"], &w.url));
    assert_eq!(w.apsi(&["prog.apsi"], &w.url).status.code(), Some(1));

    // Offline, pointed at a listener that must never be contacted.
    let trap = TcpListener::bind("127.0.0.1:0").unwrap();
    trap.set_nonblocking(true).unwrap();
    let trap_url = format!("http://{}", trap.local_addr().unwrap());
    let o = Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(["pkg", "install", "--offline", "mathx"])
        .current_dir(w.work())
        .env("APSI_HOME", w.home())
        .env("APSI_REGISTRY", &w.url)
        .env("APSI_REGISTRY_ROOT", w.reg().join("1.root.json"))
        .env("HTTP_PROXY", &trap_url)
        .env("HTTPS_PROXY", &trap_url)
        .env("ALL_PROXY", &trap_url)
        .output()
        .unwrap();
    ok(&o);
    assert!(trap.accept().is_err(), "--offline made a connection");
    assert_eq!(ok(&w.apsi(&["prog.apsi"], &w.url)).trim(), "42");
}

#[test]
fn usage_and_registry_errors() {
    let w = world();
    let o = w.apsi(&["pkg", "install", "--bogus"], &w.url);
    assert_eq!(o.status.code(), Some(2));
    let o = w.apsi(&["pkg", "install", "nosuchpkg"], &w.url);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("no package named 'nosuchpkg'"), "{e}");
    let o = w.apsi(&["pkg", "install", "Bad/Name"], &w.url);
    assert_eq!(o.status.code(), Some(2));
    // --locked outside a project.
    let o = w.apsi(&["pkg", "install", "--locked", "mathx"], &w.url);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn project_lockfile_and_frozen() {
    let w = world();
    std::fs::write(w.work().join("apsi.toml"), "[dependencies]\nmathx = \"1\"\n").unwrap();
    ok(&w.apsi(&["pkg", "install"], &w.url));
    let lock = std::fs::read_to_string(w.work().join("apsi.lock")).unwrap();
    assert!(
        lock.contains("name = \"mathx\"") && lock.contains("version = \"1.0.0\""),
        "{lock}"
    );
    ok(&w.apsi(&["pkg", "install", "--frozen"], &w.url));
    // A newer version appears and the project asks for it: the lock would change.
    let t = w.tmp.path();
    package(
        &t.join("src-mathx11"),
        "mathx",
        "1.1.0",
        "def double(x):\n    return x + x\n",
    );
    reg_tool(&[
        "build",
        t.join("src-mathx11").to_str().unwrap(),
        "--out",
        t.join("built").to_str().unwrap(),
    ]);
    reg_tool(&[
        "index",
        w.reg().to_str().unwrap(),
        t.join("built/mathx-1.1.0-any.tar.gz").to_str().unwrap(),
    ]);
    reg_tool(&[
        "sign",
        w.reg().to_str().unwrap(),
        "--key",
        t.join("keys/root.key").to_str().unwrap(),
    ]);
    ok(&w.apsi(&["pkg", "install", "--locked"], &w.url));
    std::fs::write(w.work().join("apsi.toml"), "[dependencies]\nmathx = \">=1.1\"\n").unwrap();
    let o = w.apsi(&["pkg", "install", "--locked"], &w.url);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--locked"));
    assert_eq!(std::fs::read_to_string(w.work().join("apsi.lock")).unwrap(), lock);
    let out = ok(&w.apsi(&["pkg", "update"], &w.url));
    assert!(out.contains("installed mathx 1.1.0"), "{out}");
}

#[test]
fn two_processes_install_at_once() {
    let w = world();
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_apsi"))
            .args(["pkg", "install", "mathx"])
            .current_dir(w.work())
            .env("APSI_HOME", w.home())
            .env("APSI_REGISTRY", &w.url)
            .env("APSI_REGISTRY_ROOT", w.reg().join("1.root.json"))
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    for c in [a, b] {
        ok(&c.wait_with_output().unwrap());
    }
    // One extracted tree, one link, and the program runs.
    let trees: Vec<_> = std::fs::read_dir(w.home().join("store/pkg")).unwrap().collect();
    assert_eq!(trees.len(), 1);
    std::fs::write(w.work().join("p.apsi"), "use mathx\nprint(mathx.double(4))\n").unwrap();
    assert_eq!(ok(&w.apsi(&["p.apsi"], &w.url)).trim(), "8");
}
