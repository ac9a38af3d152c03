//! `apsi doctor`'s `packages` check against a real registry made with the
//! registry tool (file:// here: the check itself never uses the network):
//! installed packages are listed and checked against the signed index, and
//! doctor never changes the store — a corrupt archive is reported with the
//! reinstall fix and is still there afterwards.

use std::path::Path;
use std::process::{Command, Output};

fn reg_tool(args: &[&str]) {
    let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    if let Err(e) = apsi_registry::run(&a) {
        panic!("apsi-registry {args:?}: {e}");
    }
}

fn apsi(t: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(args)
        .current_dir(t)
        .env("APSI_HOME", t.join("home"))
        .env("APSI_REGISTRY", format!("file://{}", t.join("reg").display()))
        .env("APSI_REGISTRY_ROOT", t.join("reg/1.root.json"))
        .env("NO_COLOR", "1")
        .output()
        .expect("cannot run apsi")
}

fn packages_check(o: &Output) -> serde_json::Value {
    let doc: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "packages")
        .unwrap()
        .clone()
}

#[test]
fn doctor_checks_installed_packages_read_only() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let s = |p: &str| t.join(p).display().to_string();
    reg_tool(&["keygen", "--dir", &s("keys"), "--name", "root"]);
    reg_tool(&[
        "root",
        &s("reg"),
        "--root-key",
        &s("keys/root.pub"),
        "--sign",
        &s("keys/root.key"),
    ]);
    std::fs::create_dir_all(t.join("src")).unwrap();
    std::fs::write(
        t.join("src/apsi-package.toml"),
        "name = \"mathx\"\nversion = \"1.0.0\"\nkind = \"library\"\n",
    )
    .unwrap();
    std::fs::write(t.join("src/mathx.apsi"), "def double(x):\n    return 2 * x\n").unwrap();
    reg_tool(&["build", &s("src"), "--out", &s("built")]);
    reg_tool(&["index", &s("reg"), &s("built/mathx-1.0.0-any.tar.gz")]);
    reg_tool(&["sign", &s("reg"), "--key", &s("keys/root.key")]);
    let o = apsi(t, &["pkg", "install", "mathx"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));

    let pk = packages_check(&apsi(t, &["doctor", "--offline", "--json"]));
    assert_eq!(pk["status"], "ok", "{pk}");
    assert_eq!(pk["details"]["installed"][0]["name"], "mathx");
    assert_eq!(pk["details"]["installed"][0]["kind"], "library");

    // Corrupt the archive in the store.
    let archive = std::fs::read_dir(t.join("home/store/dl"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .unwrap();
    let mut bytes = std::fs::read(&archive).unwrap();
    bytes[10] ^= 0xff;
    std::fs::write(&archive, &bytes).unwrap();
    let o = apsi(t, &["doctor", "--offline", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let pk = packages_check(&o);
    assert_eq!(pk["status"], "error", "{pk}");
    assert!(pk["summary"].as_str().unwrap().contains("corrupt"), "{pk}");
    assert!(pk["fix"].as_str().unwrap().contains("apsi pkg install mathx"), "{pk}");
    assert_eq!(std::fs::read(&archive).unwrap(), bytes, "doctor changed the store");
}
