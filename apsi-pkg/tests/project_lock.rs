//! Projects: apsi.toml + apsi.lock, --locked, lock drift, yanked versions,
//! dependencies.

mod common;
use apsi_pkg::manifest::Lockfile;
use apsi_pkg::ops::{Options, Project};
use apsi_pkg::ErrorKind;
use common::*;

fn project(env: &Env, deps: &str) -> Project {
    let dir = env.home.root.join("proj");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("apsi.toml"), format!("[dependencies]\n{deps}")).unwrap();
    Project { dir }
}

#[test]
fn project_install_writes_the_lock_and_follows_deps() {
    let reg = Reg::new();
    reg.library("base", "1.0.0", "b = 1\n", &[]);
    reg.library("base", "1.2.0", "b = 2\n", &[]);
    reg.library("top", "0.3.0", "t = 1\n", &[("base", "^1.1")]);
    reg.sign();
    let env = Env::new();
    let p = project(&env, "top = \"0.3\"\n");
    let r = env
        .ctx(&reg.url(), reg.root_bytes(), opts())
        .install(&[], Some(&p))
        .unwrap();
    assert!(r.lock_written);
    let lock = Lockfile::load(&p.lockfile()).unwrap().unwrap();
    let got: Vec<(&str, &str)> = lock
        .packages
        .iter()
        .map(|l| (l.name.as_str(), l.version.as_str()))
        .collect();
    assert_eq!(got, vec![("base", "1.2.0"), ("top", "0.3.0")]);
    // Adding a package by name records it in apsi.toml.
    reg.library("extra", "2.0.0", "e = 1\n", &[]);
    reg.sign();
    env.ctx(&reg.url(), reg.root_bytes(), opts())
        .install(&["extra@^2".into()], Some(&p))
        .unwrap();
    let text = std::fs::read_to_string(p.manifest()).unwrap();
    assert!(text.contains("extra = \"^2\""), "{text}");
}

#[test]
fn locked_refuses_a_changed_resolution() {
    let reg = Reg::new();
    reg.library("a", "1.0.0", "x = 1\n", &[]);
    reg.library("a", "2.0.0", "x = 2\n", &[]);
    reg.sign();
    let env = Env::new();
    let p = project(&env, "a = \"1\"\n");
    env.ctx(&reg.url(), reg.root_bytes(), opts())
        .install(&[], Some(&p))
        .unwrap();
    let lock_before = std::fs::read(p.lockfile()).unwrap();
    std::fs::write(p.manifest(), "[dependencies]\na = \"2\"\n").unwrap();
    let locked = Options { locked: true, ..opts() };
    let e = env
        .ctx(&reg.url(), reg.root_bytes(), locked.clone())
        .install(&[], Some(&p))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Resolve, "{e}");
    assert!(e.message.contains("--locked"), "{e}");
    assert_eq!(
        std::fs::read(p.lockfile()).unwrap(),
        lock_before,
        "--locked changed apsi.lock"
    );
    // Adding a package under --locked is refused too.
    let e = env
        .ctx(&reg.url(), reg.root_bytes(), locked)
        .install(&["a@1".into()], Some(&p));
    assert!(e.is_err());
}

#[test]
fn lock_drift_is_an_error() {
    let reg = Reg::new();
    reg.library("a", "1.0.0", "x = 1\n", &[]);
    reg.sign();
    let env = Env::new();
    let p = project(&env, "a = \"1\"\n");
    env.ctx(&reg.url(), reg.root_bytes(), opts())
        .install(&[], Some(&p))
        .unwrap();
    env.ctx(&reg.url(), reg.root_bytes(), opts())
        .remove(&["a".into()])
        .unwrap();
    let text = std::fs::read_to_string(p.lockfile()).unwrap();
    let lock = Lockfile::load(&p.lockfile()).unwrap().unwrap();
    let drifted = text.replace(&lock.packages[0].cksum, &"ab".repeat(32));
    std::fs::write(p.lockfile(), drifted).unwrap();
    let e = env
        .ctx(&reg.url(), reg.root_bytes(), opts())
        .install(&[], Some(&p))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Resolve);
    assert!(e.message.contains("lock drift"), "{e}");
    assert!(std::fs::symlink_metadata(env.home.packages().join("a")).is_err());
}

#[test]
fn yanked_is_skipped_unless_locked() {
    let reg = Reg::new();
    reg.library("a", "1.0.0", "x = 1\n", &[]);
    reg.library("a", "1.1.0", "x = 2\n", &[]);
    reg.sign();
    let env = Env::new();
    let p = project(&env, "a = \"1\"\n");
    env.ctx(&reg.url(), reg.root_bytes(), opts())
        .install(&[], Some(&p))
        .unwrap();
    apsi_pkg::publish::yank(&reg.dir, "a", "1.1.0", None, true).unwrap();
    reg.sign();
    // The project keeps its locked (now yanked) version…
    let locked = Options { locked: true, ..opts() };
    let r = env
        .ctx(&reg.url(), reg.root_bytes(), locked)
        .install(&[], Some(&p))
        .unwrap();
    assert_eq!(r.installed[0].version, "1.1.0");
    // …a fresh resolution skips it.
    let env2 = Env::new();
    let r = env2
        .ctx(&reg.url(), reg.root_bytes(), opts())
        .install(&["a".into()], None)
        .unwrap();
    assert_eq!(r.installed[0].version, "1.0.0");
    let e = env2
        .ctx(&reg.url(), reg.root_bytes(), opts())
        .install(&["a@=1.1.0".into()], None)
        .unwrap_err();
    assert!(e.hint.unwrap_or_default().contains("yanked"));
}

#[test]
fn twenty_packages_in_parallel() {
    let reg = Reg::new();
    let names: Vec<String> = (0..20).map(|i| format!("small{i:02}")).collect();
    for n in &names {
        reg.library(n, "1.0.0", "v = 1\n", &[]);
    }
    reg.sign();
    let srv = Server::start(&reg.dir);
    let env = Env::new();
    let r = env
        .ctx(&srv.url, reg.root_bytes(), opts())
        .install(&names, None)
        .unwrap();
    assert_eq!(r.installed.len(), 20);
    assert_eq!(apsi_pkg::ops::list(&env.home).unwrap().len(), 20);
}

/// A version republished with other bytes (here: what was installed or
/// locked records other bytes than the registry now gives) is drift for
/// `install` outside a project and for `update` in one, never a silent swap.
#[test]
fn a_republished_version_is_drift_for_install_and_update() {
    let reg = Reg::new();
    reg.library("a", "1.0.0", "x = 1\n", &[]);
    reg.sign();
    let env = Env::new();
    let ctx = || env.ctx(&reg.url(), reg.root_bytes(), opts());
    ctx().install(&["a".into()], None).unwrap();
    let rec = env.home.installed().join("a.json");
    let text = std::fs::read_to_string(&rec).unwrap();
    let installed: apsi_pkg::ops::Installed = serde_json::from_str(&text).unwrap();
    std::fs::write(&rec, text.replace(&installed.cksum, &"ab".repeat(32))).unwrap();
    for e in [
        ctx().install(&["a".into()], None).unwrap_err(),
        ctx().update(None).unwrap_err(),
    ] {
        assert_eq!(e.kind, ErrorKind::Resolve);
        assert!(e.message.contains("lock drift: the installed copy of a 1.0.0"), "{e}");
    }
    std::fs::write(&rec, text).unwrap();

    let p = project(&env, "a = \"1\"\n");
    ctx().install(&[], Some(&p)).unwrap();
    let lock_text = std::fs::read_to_string(p.lockfile()).unwrap();
    std::fs::write(p.lockfile(), lock_text.replace(&installed.cksum, &"cd".repeat(32))).unwrap();
    let e = ctx().update(Some(&p)).unwrap_err();
    assert!(e.message.contains("lock drift: apsi.lock of a 1.0.0"), "{e}");
    // apsi.lock was not rewritten over the drift.
    assert!(std::fs::read_to_string(p.lockfile())
        .unwrap()
        .contains(&"cd".repeat(32)));
}
