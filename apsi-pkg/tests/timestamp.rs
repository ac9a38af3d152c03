//! The timestamp role: a short-lived `timestamp.json`, signed by its own
//! key, names the one snapshot a client may accept now. A frozen mirror is
//! caught when its timestamp expires (a day), not when its snapshot does (a
//! month); a snapshot other than the one named is refused by its hash; old
//! timestamps cannot be replayed; a rotated-out timestamp key is refused.
//! Each refusal checks that nothing was installed or written outside
//! APSI_HOME.

mod common;
use apsi_pkg::config::RegistryConfig;
use apsi_pkg::ops::Options;
use apsi_pkg::publish::{self, RootSpec};
use apsi_pkg::trust::{self, now_secs, SecretKey, MAX_TIMESTAMP_BYTES};
use apsi_pkg::ErrorKind;
use common::*;

const HOUR: u64 = 3600;
const MONTH: u64 = 30 * 86_400;

fn at(now: u64) -> Options {
    Options {
        now: Some(now),
        ..opts()
    }
}

fn trust_file(env: &Env, url: &str, reg: &Reg, name: &str) -> std::path::PathBuf {
    let id = RegistryConfig {
        url: url.to_string(),
        root: reg.root_bytes(),
    }
    .id();
    env.home.trust_dir(&id).join(name)
}

/// A registry whose snapshot lives a month and whose timestamp an hour,
/// with `mathx 1.0.0` published.
fn short_lived() -> Reg {
    let reg = Reg::new();
    reg.library("mathx", "1.0.0", "x = 1\n", &[]);
    publish::sign_snapshot(&reg.dir, &[&reg.key], now_secs() + MONTH).unwrap();
    reg.timestamp(now_secs() + HOUR);
    reg
}

#[test]
fn frozen_mirror_is_refused_once_its_timestamp_expires() {
    let reg = short_lived();
    let t0 = now_secs();
    // The mirror copies the registry now, then stops updating.
    let mirror_dir = reg.tmp.path().join("mirror");
    copy_tree(&reg.dir, &mirror_dir);
    let mirror = format!("file://{}", mirror_dir.display());
    // The real registry yanks 1.0.0 (a security fix) and publishes 1.0.1.
    publish::yank(&reg.dir, "mathx", "1.0.0", None, true).unwrap();
    reg.library("mathx", "1.0.1", "x = 2\n", &[]);
    publish::sign_snapshot(&reg.dir, &[&reg.key], now_secs() + MONTH).unwrap();
    reg.timestamp(now_secs() + 2 * HOUR);

    // Within the old timestamp's hour the mirror is believed (TUF's window).
    let env = Env::new();
    let r = env
        .ctx(&mirror, reg.root_bytes(), opts())
        .install(&["mathx".into()], None)
        .unwrap();
    assert_eq!(r.installed[0].version, "1.0.0");
    env.ctx(&mirror, reg.root_bytes(), opts())
        .remove(&["mathx".into()])
        .unwrap();
    let before = env.store_entries();

    // Past it, the mirror's snapshot (valid for a month) no longer is.
    let later = at(t0 + HOUR + 60);
    let e = env
        .ctx(&mirror, reg.root_bytes(), later.clone())
        .install(&["mathx".into()], None)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Trust, "{e}");
    assert!(e.message.contains("timestamp.json from file://"), "{e}");
    assert!(e.message.contains("expired at"), "{e}");
    assert!(e.message.contains(" UTC"), "dates, not unix seconds: {e}");
    let hint = e.hint.clone().unwrap_or_default();
    assert!(hint.contains("apsi-registry timestamp"), "{hint}");
    assert!(hint.contains("APSI_REGISTRY"), "{hint}");
    env.assert_clean_since("mathx", &before);

    // The real registry, at the same time, gives the fix.
    let env2 = Env::new();
    let r = env2
        .ctx(&reg.url(), reg.root_bytes(), later)
        .install(&["mathx".into()], None)
        .unwrap();
    assert_eq!(r.installed[0].version, "1.0.1");
}

#[test]
fn new_timestamp_with_old_snapshot_is_refused() {
    let reg = Reg::with_mathx();
    let old_snapshot = std::fs::read(reg.dir.join("snapshot.json")).unwrap();
    publish::yank(&reg.dir, "mathx", "1.0.0", None, true).unwrap();
    reg.library("mathx", "1.0.1", "x = 2\n", &[]);
    reg.sign();
    // A mirror passes the fresh timestamp through but keeps the old snapshot.
    std::fs::write(reg.dir.join("snapshot.json"), &old_snapshot).unwrap();
    let env = Env::new();
    let e = env.install_fails(&reg, "mathx");
    assert_eq!(e.kind, ErrorKind::Integrity, "{e}");
    assert!(e.message.contains("does not match timestamp version 2"), "{e}");
    assert!(e.message.contains("expected snapshot version 2"), "{e}");
    assert!(e.hint.as_deref().unwrap_or("").contains("APSI_REGISTRY"), "{e}");
    env.assert_clean("mathx");
    // Nothing of it was cached: the trust folder holds only the root.
    assert!(!trust_file(&env, &reg.url(), &reg, "snapshot.json").exists());
    assert!(!trust_file(&env, &reg.url(), &reg, "timestamp.json").exists());
}

#[test]
fn timestamp_rollback_is_refused() {
    let reg = Reg::with_mathx();
    // The daily re-sign: same snapshot, new timestamp version.
    let v1 = std::fs::read(reg.dir.join("timestamp.json")).unwrap();
    reg.timestamp(now_secs() + 86_400);
    let env = Env::new();
    env.install_from(&reg, "mathx");
    let cached = std::fs::read(trust_file(&env, &reg.url(), &reg, "timestamp.json")).unwrap();
    assert_eq!(cached, std::fs::read(reg.dir.join("timestamp.json")).unwrap());
    env.ctx(&reg.url(), reg.root_bytes(), opts())
        .remove(&["mathx".into()])
        .unwrap();
    let before = env.store_entries();
    // A mirror replays version 1 (unexpired, naming the same snapshot).
    std::fs::write(reg.dir.join("timestamp.json"), v1).unwrap();
    let e = env.install_fails(&reg, "mathx");
    assert_eq!(e.kind, ErrorKind::Trust, "{e}");
    assert!(e.message.contains("timestamp rollback"), "{e}");
    assert!(e.message.contains("is version 1"), "{e}");
    assert!(
        e.message
            .contains("version 2 (naming snapshot version 1) was verified before"),
        "{e}"
    );
    env.assert_clean_since("mathx", &before);
}

#[test]
fn timestamp_signed_by_wrong_key_is_refused() {
    let reg = Reg::with_mathx();
    let env = Env::new();
    // The snapshot (and root) key is not the timestamp key; nor a stranger's.
    for k in [&reg.key, &SecretKey::generate().unwrap()] {
        publish::sign_timestamp(&reg.dir, &[k], now_secs() + 86_400).unwrap();
        let e = env
            .ctx(&reg.url(), reg.root_bytes(), opts())
            .install(&["mathx".into()], None)
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Trust, "{e}");
        assert!(e.message.contains("timestamp.json from file://"), "{e}");
        assert!(e.message.contains("not a key of this role"), "{e}");
        env.assert_clean("mathx");
    }
}

#[test]
fn expired_timestamp_fails_online_and_offline_uses_the_cache() {
    let reg = short_lived();
    let t0 = now_secs();
    let env = Env::new();
    let before = env.cache_metadata(&reg, "mathx");
    let later = at(t0 + HOUR + 60);
    let e = env
        .ctx(&reg.url(), reg.root_bytes(), later.clone())
        .install(&["mathx".into()], None)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Trust, "{e}");
    assert!(e.message.contains("expired at"), "{e}");
    assert!(e.message.contains("naming snapshot version 1"), "{e}");
    env.assert_clean_since("mathx", &before);
    // Offline works from the cached snapshot, as before.
    let off = Options { offline: true, ..later };
    let r = env
        .ctx(&reg.url(), reg.root_bytes(), off)
        .install(&["mathx".into()], None)
        .unwrap();
    assert_eq!(r.installed[0].version, "1.0.0");
    // The operator's daily re-sign makes it work online again.
    reg.timestamp(now_secs() + 2 * HOUR);
    env.ctx(&reg.url(), reg.root_bytes(), at(t0 + HOUR + 60))
        .install(&["mathx".into()], None)
        .unwrap();
}

#[test]
fn oversize_timestamp_is_refused() {
    let reg = Reg::with_mathx();
    let srv = Server::start(&reg.dir);
    let mut big = std::fs::read(reg.dir.join("timestamp.json")).unwrap();
    big.extend(std::iter::repeat_n(b' ', MAX_TIMESTAMP_BYTES as usize));
    srv.fault("timestamp.json", Fault::Body(big.clone()));
    let env = Env::new();
    let e = env
        .ctx(&srv.url, reg.root_bytes(), opts())
        .install(&["mathx".into()], None)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Integrity, "{e}");
    assert!(
        e.message
            .contains(&format!("expected at most {MAX_TIMESTAMP_BYTES} bytes")),
        "{e}"
    );
    // Not a byte past the cap was worth fetching: the snapshot was not asked for.
    assert!(srv.requests_for("snapshot.json").is_empty());
    env.assert_clean("mathx");
    // The same over file://.
    std::fs::write(reg.dir.join("timestamp.json"), &big).unwrap();
    let e = env.install_fails(&reg, "mathx");
    assert_eq!(e.kind, ErrorKind::Integrity, "{e}");
    env.assert_clean("mathx");
}

#[test]
fn missing_timestamp_is_refused_when_the_root_requires_one() {
    let reg = Reg::new();
    reg.library("mathx", "1.0.0", "x = 1\n", &[]);
    publish::sign_snapshot(&reg.dir, &[&reg.key], now_secs() + MONTH).unwrap();
    let env = Env::new();
    let e = env.install_fails(&reg, "mathx");
    assert_eq!(e.kind, ErrorKind::Trust, "{e}");
    assert!(e.message.contains("requires a signed timestamp"), "{e}");
    env.assert_clean("mathx");
}

#[test]
fn root_without_timestamp_role_works_as_before() {
    let reg = Reg::legacy();
    reg.library("mathx", "1.0.0", "x = 1\n", &[]);
    reg.sign();
    assert!(!reg.dir.join("timestamp.json").exists());
    let env = Env::new();
    env.install_from(&reg, "mathx");
    assert!(!trust_file(&env, &reg.url(), &reg, "timestamp.json").exists());
}

#[test]
fn timestamp_key_rotation_refuses_the_old_key() {
    let reg = Reg::with_mathx();
    let old_ts = reg.ts_key.as_ref().unwrap();
    let env = Env::new();
    env.install_from(&reg, "mathx");
    // The operator rotates the timestamp key (root 2, signed by the root key).
    let new_ts = SecretKey::generate().unwrap();
    let me = (reg.key.keyid(), reg.key.public_hex());
    let spec = RootSpec {
        root_keys: vec![me.clone()],
        root_threshold: 1,
        snapshot_keys: vec![me],
        snapshot_threshold: 1,
        timestamp_keys: vec![(new_ts.keyid(), new_ts.public_hex())],
        timestamp_threshold: 1,
        expires: now_secs() + 86_400,
    };
    publish::write_root(&reg.dir, &spec, &[&reg.key]).unwrap();
    reg.library("mathy", "1.0.0", "y = 1\n", &[]);
    publish::sign_snapshot(&reg.dir, &[&reg.key], now_secs() + MONTH).unwrap();
    // Whoever still holds the old timestamp key signs a timestamp: refused.
    publish::sign_timestamp(&reg.dir, &[old_ts], now_secs() + 86_400).unwrap();
    let before = env.store_entries();
    let e = env
        .ctx(&reg.url(), reg.root_bytes(), opts())
        .install(&["mathy".into()], None)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Trust, "{e}");
    assert!(e.message.contains("not a key of this role"), "{e}");
    env.assert_clean_since("mathy", &before);
    // The client already trusts root 2 (the chain is followed first).
    let root = std::fs::read(trust_file(&env, &reg.url(), &reg, "root.json")).unwrap();
    assert_eq!(trust::parse_root("t", &root).unwrap().0.version, 2);
    // Signed with the new key, it is accepted: the cached timestamp signed
    // by the old key no longer counts as the rollback baseline.
    publish::sign_timestamp(&reg.dir, &[&new_ts], now_secs() + 86_400).unwrap();
    env.ctx(&reg.url(), reg.root_bytes(), opts())
        .install(&["mathy".into()], None)
        .unwrap();
    let cached = std::fs::read(trust_file(&env, &reg.url(), &reg, "timestamp.json")).unwrap();
    let (r2, _) = trust::parse_root("t", &root).unwrap();
    assert!(trust::verify_timestamp("t", &r2, &cached).is_ok());
}
