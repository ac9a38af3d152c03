//! Trust: signatures, thresholds, unknown keys, rollback, expiry, files
//! missing from the snapshot, root rotation. Each failing case checks that
//! nothing was installed or written outside APSI_HOME.

mod common;
use apsi_pkg::publish::{self, RootSpec};
use apsi_pkg::trust::{self, now_secs, SecretKey};
use apsi_pkg::ErrorKind;
use common::*;

fn install_err(env: &Env, reg: &Reg, root: Vec<u8>, name: &str) -> apsi_pkg::PkgError {
    let ctx = env.ctx(&reg.url(), root, opts());
    let e = ctx.install(&[name.to_string()], None).expect_err("install must fail");
    env.assert_clean(name);
    e
}

#[test]
fn good_registry_installs() {
    let reg = Reg::new();
    reg.library("mathx", "1.0.0", "def double(x):\n    return 2 * x\n", &[]);
    reg.sign();
    let env = Env::new();
    let r = env
        .ctx(&reg.url(), reg.root_bytes(), opts())
        .install(&["mathx".into()], None)
        .unwrap();
    assert_eq!(r.installed[0].version, "1.0.0");
    assert!(env.home.packages().join("mathx").join("mathx.apsi").is_file());
}

#[test]
fn bad_signature_is_refused() {
    let reg = Reg::with_mathx();
    // Tamper with the signed content after signing: change a length.
    let p = reg.dir.join("snapshot.json");
    let mut env_doc: trust::Envelope = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    env_doc.signed["version"] = serde_json::Value::from(99);
    std::fs::write(&p, trust::envelope_bytes(&env_doc)).unwrap();
    // A timestamp naming the tampered bytes, so the snapshot's own
    // signature is what is judged.
    reg.timestamp(now_secs() + 1000);
    let env = Env::new();
    let e = install_err(&env, &reg, reg.root_bytes(), "mathx");
    assert_eq!(e.kind, ErrorKind::Trust, "{e}");
    assert!(e.message.contains("bad signature"), "{e}");
}

#[test]
fn unknown_key_is_refused() {
    let reg = Reg::new();
    reg.library("mathx", "1.0.0", "x = 1\n", &[]);
    let stranger = SecretKey::generate().unwrap();
    publish::sign_snapshot(&reg.dir, &[&stranger], now_secs() + 1000).unwrap();
    reg.timestamp(now_secs() + 1000);
    let env = Env::new();
    let e = install_err(&env, &reg, reg.root_bytes(), "mathx");
    assert_eq!(e.kind, ErrorKind::Trust);
    assert!(e.message.contains("not a key of this role"), "{e}");
}

#[test]
fn threshold_not_met_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("reg");
    let (a, b) = (SecretKey::generate().unwrap(), SecretKey::generate().unwrap());
    let keys = vec![(a.keyid(), a.public_hex()), (b.keyid(), b.public_hex())];
    let spec = RootSpec {
        root_keys: keys.clone(),
        root_threshold: 2,
        snapshot_keys: keys,
        snapshot_threshold: 2,
        timestamp_keys: vec![],
        timestamp_threshold: 1,
        expires: now_secs() + 1000,
    };
    publish::write_root(&dir, &spec, &[&a, &b]).unwrap();
    let reg = Reg {
        tmp,
        dir,
        key: a,
        ts_key: None,
    };
    reg.library("mathx", "1.0.0", "x = 1\n", &[]);
    reg.sign(); // only key a: 1 of 2
    let env = Env::new();
    let e = install_err(&env, &reg, reg.root_bytes(), "mathx");
    assert!(e.message.contains("expected 2 valid signature(s), found 1"), "{e}");
}

#[test]
fn snapshot_rollback_is_refused() {
    // Without a timestamp role the snapshot's version is the check; with
    // one, replaying the old pair is caught at the timestamp's version.
    for (reg, files, what) in [
        (Reg::legacy(), &["snapshot.json"][..], "snapshot rollback"),
        (
            Reg::new(),
            &["snapshot.json", "timestamp.json"][..],
            "timestamp rollback",
        ),
    ] {
        reg.library("mathx", "1.0.0", "x = 1\n", &[]);
        reg.sign();
        let old: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(reg.dir.join(f)).unwrap()).collect();
        reg.library("mathy", "1.0.0", "y = 1\n", &[]);
        reg.sign();
        let env = Env::new();
        env.ctx(&reg.url(), reg.root_bytes(), opts())
            .install(&["mathx".into()], None)
            .unwrap();
        let before = env.store_entries();
        // A mirror replays the older (validly signed) metadata.
        for (f, b) in files.iter().zip(old) {
            std::fs::write(reg.dir.join(f), b).unwrap();
        }
        let e = env
            .ctx(&reg.url(), reg.root_bytes(), opts())
            .install(&["mathy".into()], None)
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Trust);
        assert!(e.message.contains(what), "{e}");
        env.assert_clean_since("mathy", &before);
    }
}

#[test]
fn expired_snapshot_fails_online_and_warns_offline() {
    let reg = Reg::new();
    reg.library("mathx", "1.0.0", "x = 1\n", &[]);
    let expires = now_secs() + 3600;
    publish::sign_snapshot(&reg.dir, &[&reg.key], expires).unwrap();
    // The timestamp outlives the snapshot: the snapshot's own expiry is judged.
    reg.timestamp(now_secs() + 86_400);
    let env = Env::new();
    let before = env.cache_metadata(&reg, "mathx");
    // Judged one second after the snapshot's expiry.
    let later = apsi_pkg::ops::Options {
        now: Some(expires + 1),
        ..opts()
    };
    let e = env
        .ctx(&reg.url(), reg.root_bytes(), later.clone())
        .install(&["mathx".into()], None)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Trust);
    assert!(e.message.contains("expired"), "{e}");
    env.assert_clean_since("mathx", &before);
    let off = apsi_pkg::ops::Options { offline: true, ..later };
    let r = env
        .ctx(&reg.url(), reg.root_bytes(), off)
        .install(&["mathx".into()], None)
        .unwrap();
    assert!(r.warnings.iter().any(|w| w.contains("expired")), "{:?}", r.warnings);
}

#[test]
fn index_file_not_in_snapshot_is_refused() {
    let reg = Reg::with_mathx();
    // Published after signing: its index file is on the server, unsigned.
    reg.library("sneaky", "1.0.0", "x = 1\n", &[]);
    let env = Env::new();
    let e = install_err(&env, &reg, reg.root_bytes(), "sneaky");
    assert_eq!(e.kind, ErrorKind::NotFound);
    assert!(e.message.contains("no package named 'sneaky'"), "{e}");
}

#[test]
fn root_rotation_chain_is_followed() {
    let reg = Reg::new();
    let pinned = reg.root_bytes();
    let b = SecretKey::generate().unwrap();
    let spec = RootSpec {
        root_keys: vec![(b.keyid(), b.public_hex())],
        root_threshold: 1,
        snapshot_keys: vec![(b.keyid(), b.public_hex())],
        snapshot_threshold: 1,
        timestamp_keys: vec![],
        timestamp_threshold: 1,
        expires: now_secs() + 1000,
    };
    publish::write_root(&reg.dir, &spec, &[&reg.key, &b]).unwrap();
    reg.library("mathx", "1.0.0", "x = 1\n", &[]);
    publish::sign_snapshot(&reg.dir, &[&b], now_secs() + 1000).unwrap();
    let env = Env::new();
    env.ctx(&reg.url(), pinned.clone(), opts())
        .install(&["mathx".into()], None)
        .unwrap();
    // The rotated root is now trusted and persisted.
    let id = apsi_pkg::config::RegistryConfig {
        url: reg.url(),
        root: pinned,
    }
    .id();
    let persisted = std::fs::read(env.home.trust_dir(&id).join("root.json")).unwrap();
    assert_eq!(trust::parse_root("t", &persisted).unwrap().0.version, 2);
}

#[test]
fn skipped_root_is_refused() {
    let reg = Reg::new();
    let pinned = reg.root_bytes();
    let b = SecretKey::generate().unwrap();
    // A version-3 root, served as 2.root.json, signed by old and new keys.
    let (r1, _) = trust::parse_root("r1", &pinned).unwrap();
    let mut r3 = r1.clone();
    r3.version = 3;
    r3.keys.insert(b.keyid(), b.public_hex());
    r3.root.keyids = vec![b.keyid()];
    r3.snapshot.keyids = vec![b.keyid()];
    let env_doc = trust::sign(&r3, &[&reg.key, &b]).unwrap();
    std::fs::write(reg.dir.join("2.root.json"), trust::envelope_bytes(&env_doc)).unwrap();
    reg.library("mathx", "1.0.0", "x = 1\n", &[]);
    publish::sign_snapshot(&reg.dir, &[&b], now_secs() + 1000).unwrap();
    let env = Env::new();
    let e = install_err(&env, &reg, pinned, "mathx");
    assert!(e.message.contains("must not be skipped"), "{e}");
}

#[test]
fn rotation_not_signed_by_old_keys_is_refused() {
    let reg = Reg::new();
    let pinned = reg.root_bytes();
    let b = SecretKey::generate().unwrap();
    let spec = RootSpec {
        root_keys: vec![(b.keyid(), b.public_hex())],
        root_threshold: 1,
        snapshot_keys: vec![(b.keyid(), b.public_hex())],
        snapshot_threshold: 1,
        timestamp_keys: vec![],
        timestamp_threshold: 1,
        expires: now_secs() + 1000,
    };
    // Write version 2 signed by the new key only (bypassing the tool's check).
    let (r1, _) = trust::parse_root("r1", &pinned).unwrap();
    let mut r2 = r1.clone();
    r2.version = 2;
    r2.keys = [(b.keyid(), b.public_hex())].into_iter().collect();
    r2.root.keyids = vec![b.keyid()];
    r2.snapshot.keyids = vec![b.keyid()];
    let _ = spec;
    std::fs::write(
        reg.dir.join("2.root.json"),
        trust::envelope_bytes(&trust::sign(&r2, &[&b]).unwrap()),
    )
    .unwrap();
    reg.library("mathx", "1.0.0", "x = 1\n", &[]);
    publish::sign_snapshot(&reg.dir, &[&b], now_secs() + 1000).unwrap();
    let env = Env::new();
    let e = install_err(&env, &reg, pinned, "mathx");
    assert!(e.message.contains("signed by version 1"), "{e}");
}

#[test]
fn snapshot_key_rotation_drops_the_cached_snapshot() {
    // A client that cached a snapshot signed by the old snapshot key keeps
    // working after the root rotates the snapshot key.
    let reg = Reg::with_mathx();
    let env = Env::new();
    env.install_from(&reg, "mathx");
    let b = SecretKey::generate().unwrap();
    let ts = reg.ts_key.as_ref().unwrap();
    let spec = RootSpec {
        root_keys: vec![(reg.key.keyid(), reg.key.public_hex())],
        root_threshold: 1,
        snapshot_keys: vec![(b.keyid(), b.public_hex())],
        snapshot_threshold: 1,
        timestamp_keys: vec![(ts.keyid(), ts.public_hex())],
        timestamp_threshold: 1,
        expires: now_secs() + 1000,
    };
    publish::write_root(&reg.dir, &spec, &[&reg.key]).unwrap();
    reg.library("mathy", "1.0.0", "y = 1\n", &[]);
    publish::sign_snapshot(&reg.dir, &[&b], now_secs() + 1000).unwrap();
    reg.timestamp(now_secs() + 1000);
    env.ctx(&reg.url(), reg.root_bytes(), opts())
        .install(&["mathy".into()], None)
        .unwrap();
    // A snapshot still signed by the old key is refused.
    publish::sign_snapshot(&reg.dir, &[&reg.key], now_secs() + 1000).unwrap();
    reg.timestamp(now_secs() + 1000);
    let e = env
        .ctx(&reg.url(), reg.root_bytes(), opts())
        .install(&["mathy".into()], None)
        .unwrap_err();
    assert!(e.message.contains("not a key of this role"), "{e}");
}
