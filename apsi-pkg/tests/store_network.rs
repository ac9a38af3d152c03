//! Downloads and the store over a real loopback HTTP server: declared
//! lengths, checksums, resume (206) and restart (200), HTTP errors, slow
//! servers, crash recovery, corrupt entries, concurrency, the lock, offline.

mod common;
use apsi_pkg::ops::Options;
use apsi_pkg::store::Store;
use apsi_pkg::transport::DownloadStart;
use apsi_pkg::ErrorKind;
use common::*;
use std::sync::atomic::Ordering;
use std::time::Duration;

fn published() -> (Reg, apsi_pkg::index::IndexLine) {
    let reg = Reg::new();
    // Some incompressible bytes so the archive is big enough to split.
    let src = reg.tmp.path().join("src-big");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("apsi-package.toml"),
        "name = \"big\"\nversion = \"1.0.0\"\nkind = \"library\"\n",
    )
    .unwrap();
    let mut x: u64 = 0x9E3779B97F4A7C15;
    let data: Vec<u8> = (0..300_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(src.join("data.bin"), data).unwrap();
    std::fs::write(src.join("big.apsi"), "n = 1\n").unwrap();
    let line = reg.publish_dir(&src, "big", "1.0.0");
    reg.sign();
    (reg, line)
}

const DL: &str = "dl/big-1.0.0-any.tar.gz";

fn ctx_for<'a>(env: &Env, srv: &Server, reg: &Reg, o: Options) -> apsi_pkg::ops::Ctx<'a> {
    env.ctx(&srv.url, reg.root_bytes(), o)
}

#[test]
fn body_longer_than_declared() {
    let (reg, _) = published();
    let srv = Server::start(&reg.dir);
    let env = Env::new();
    srv.fault(DL, Fault::Longer(1000));
    let e = ctx_for(&env, &srv, &reg, opts())
        .install(&["big".into()], None)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Integrity, "{e}");
    assert!(e.message.contains("longer than declared"), "{e}");
    env.assert_clean("big");
    // Without a Content-Length, the extra bytes are caught while reading.
    srv.fault(DL, Fault::LongerChunkless(10));
    let e = ctx_for(&env, &srv, &reg, opts())
        .install(&["big".into()], None)
        .unwrap_err();
    assert!(e.message.contains("longer than declared"), "{e}");
    env.assert_clean("big");
    let dl: Vec<_> = std::fs::read_dir(env.home.store().join("dl"))
        .map(|r| r.collect())
        .unwrap_or_default();
    assert!(dl.is_empty(), "a bad download was kept: {dl:?}");
}

#[test]
fn index_body_longer_than_snapshot_says() {
    let (reg, _) = published();
    let srv = Server::start(&reg.dir);
    srv.fault("index/3/b/big", Fault::Longer(10));
    let env = Env::new();
    let e = ctx_for(&env, &srv, &reg, opts())
        .install(&["big".into()], None)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Integrity, "{e}");
    env.assert_clean("big");
}

#[test]
fn checksum_mismatch_is_never_unpacked() {
    let (reg, line) = published();
    let srv = Server::start(&reg.dir);
    let mut bytes = std::fs::read(reg.dir.join(DL)).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff; // same length, different content
    srv.fault(DL, Fault::Body(bytes));
    let env = Env::new();
    let e = ctx_for(&env, &srv, &reg, opts())
        .install(&["big".into()], None)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Integrity, "{e}");
    assert!(e.message.contains("checksum mismatch"), "{e}");
    env.assert_clean("big");
    assert!(!Store::new(env.home.store()).archive_path(&line.cksum).exists());
    assert!(!Store::new(env.home.store()).partial_path(&line.cksum).exists());
}

#[test]
fn download_resumes_on_206_and_restarts_on_200() {
    let (reg, line) = published();
    let srv = Server::start(&reg.dir);
    let full = std::fs::read(reg.dir.join(DL)).unwrap();
    let store = Store::new(Env::new().home.store());
    let _ = store;
    // Resume: half of the file is already in .partial.
    let env = Env::new();
    let s = Store::new(env.home.store());
    std::fs::create_dir_all(s.dir.join("dl")).unwrap();
    let half = full.len() / 2;
    std::fs::write(s.partial_path(&line.cksum), &full[..half]).unwrap();
    let r = ctx_for(&env, &srv, &reg, opts())
        .install(&["big".into()], None)
        .unwrap();
    assert_eq!(
        r.downloaded,
        vec![("big".to_string(), DownloadStart::Resumed(half as u64))]
    );
    assert_eq!(srv.requests_for(DL), vec![Some(format!("bytes={half}-"))]);
    assert_eq!(std::fs::read(s.archive_path(&line.cksum)).unwrap(), full);
    // Restart: the server ignores the range and sends everything (200).
    let env = Env::new();
    let s = Store::new(env.home.store());
    std::fs::create_dir_all(s.dir.join("dl")).unwrap();
    std::fs::write(s.partial_path(&line.cksum), &full[..half]).unwrap();
    srv.fault(DL, Fault::NoRanges);
    let r = ctx_for(&env, &srv, &reg, opts())
        .install(&["big".into()], None)
        .unwrap();
    assert_eq!(r.downloaded, vec![("big".to_string(), DownloadStart::Restarted)]);
    assert_eq!(std::fs::read(s.archive_path(&line.cksum)).unwrap(), full);
}

#[test]
fn http_errors_are_clear() {
    let (reg, _) = published();
    let srv = Server::start(&reg.dir);
    for (code, word) in [(404, "not found"), (410, "gone"), (451, "legal reasons")] {
        srv.fault(DL, Fault::Status(code));
        let env = Env::new();
        let e = ctx_for(&env, &srv, &reg, opts())
            .install(&["big".into()], None)
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Network, "{e}");
        assert!(
            e.message.contains(word) && e.message.contains(&code.to_string()),
            "{code}: {e}"
        );
        assert!(e.hint.is_some());
        env.assert_clean("big");
    }
}

/// A server that trickles (a byte every 200 ms: each byte resets the idle
/// timeout) is cut off by the minimum rate once the network wait has passed,
/// for metadata and for archives, instead of holding the store forever.
#[test]
fn a_trickling_server_is_cut_off_by_the_minimum_rate() {
    for (path, spec) in [("snapshot.json", None), ("dl/", Some("big"))] {
        let (reg, _) = published();
        let srv = Server::start(&reg.dir);
        let env = Env::new();
        let o = Options {
            net_timeout: Duration::from_millis(500),
            ..opts()
        };
        if let Some(s) = spec {
            // The metadata is served normally; the archive trickles.
            let archive = std::fs::read_dir(reg.dir.join("dl")).unwrap().next().unwrap().unwrap();
            let name = format!("dl/{}", archive.file_name().to_string_lossy());
            srv.fault(&name, Fault::Trickle(Duration::from_millis(200)));
            let t = std::time::Instant::now();
            let e = ctx_for(&env, &srv, &reg, o.clone())
                .install(&[s.into()], None)
                .unwrap_err();
            assert!(t.elapsed() < Duration::from_secs(20), "{path}: took {:?}", t.elapsed());
            assert!(e.message.contains("too slowly"), "{path}: {e}");
        } else {
            srv.fault(path, Fault::Trickle(Duration::from_millis(200)));
            let t = std::time::Instant::now();
            let e = ctx_for(&env, &srv, &reg, o).install(&["big".into()], None).unwrap_err();
            assert!(t.elapsed() < Duration::from_secs(20), "{path}: took {:?}", t.elapsed());
            assert!(e.message.contains("too slowly"), "{path}: {e}");
        }
        env.assert_clean("big");
    }
}

#[test]
fn slow_server_times_out() {
    let (reg, _) = published();
    let srv = Server::start(&reg.dir);
    srv.fault("snapshot.json", Fault::Delay(Duration::from_secs(60)));
    let env = Env::new();
    let o = Options {
        net_timeout: Duration::from_millis(300),
        ..opts()
    };
    let t = std::time::Instant::now();
    let e = ctx_for(&env, &srv, &reg, o).install(&["big".into()], None).unwrap_err();
    assert!(
        t.elapsed() < Duration::from_secs(50),
        "not cut at the timeout: took {:?}",
        t.elapsed()
    );
    assert_eq!(e.kind, ErrorKind::Network, "{e}");
    assert!(e.message.contains("timed out"), "{e}");
    env.assert_clean("big");
}

#[test]
fn crash_mid_extract_is_recovered() {
    let (reg, line) = published();
    let env = Env::new();
    let s = Store::new(env.home.store());
    // A crash left a half-extracted tmp folder and a tree without marker.
    std::fs::create_dir_all(s.dir.join("tmp").join("junk.x.1.0").join("big-1.0.0")).unwrap();
    std::fs::create_dir_all(s.tree_path(&line.cksum).join("big-1.0.0")).unwrap();
    std::fs::write(s.tree_path(&line.cksum).join("big-1.0.0").join("big.apsi"), "half").unwrap();
    let r = env
        .ctx(&reg.url(), reg.root_bytes(), opts())
        .install(&["big".into()], None)
        .unwrap();
    assert_eq!(r.extracted, vec!["big".to_string()]);
    assert_eq!(
        std::fs::read_to_string(env.home.packages().join("big").join("big.apsi")).unwrap(),
        "n = 1\n"
    );
    assert_eq!(std::fs::read_dir(s.dir.join("tmp")).unwrap().count(), 0);
}

#[test]
fn corrupt_store_entry_is_refetched() {
    let (reg, line) = published();
    let srv = Server::start(&reg.dir);
    let env = Env::new();
    ctx_for(&env, &srv, &reg, opts())
        .install(&["big".into()], None)
        .unwrap();
    let s = Store::new(env.home.store());
    let mut b = std::fs::read(s.archive_path(&line.cksum)).unwrap();
    b[100] ^= 1;
    std::fs::write(s.archive_path(&line.cksum), b).unwrap();
    std::fs::remove_dir_all(s.tree_path(&line.cksum)).unwrap();
    let r = ctx_for(&env, &srv, &reg, opts())
        .install(&["big".into()], None)
        .unwrap();
    assert_eq!(r.downloaded.len(), 1, "the corrupt archive was not refetched");
    assert_eq!(r.extracted, vec!["big".to_string()]);
    assert_eq!(
        apsi_pkg::digest::sha256_file(&s.archive_path(&line.cksum)).unwrap().0,
        line.cksum
    );
}

#[test]
fn concurrent_installs_both_succeed_and_extract_once() {
    let (reg, _) = published();
    let srv = Server::start(&reg.dir);
    let env = Env::new();
    let results: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|_| s.spawn(|| ctx_for(&env, &srv, &reg, opts()).install(&["big".into()], None)))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut extracted = 0;
    for r in results {
        extracted += r.unwrap().extracted.len();
    }
    assert_eq!(extracted, 1);
    assert!(env.home.packages().join("big").join("big.apsi").is_file());
}

#[test]
fn offline_opens_no_socket() {
    let (reg, _) = published();
    let srv = Server::start(&reg.dir);
    let env = Env::new();
    ctx_for(&env, &srv, &reg, opts())
        .install(&["big".into()], None)
        .unwrap();
    ctx_for(&env, &srv, &reg, opts()).remove(&["big".into()]).unwrap();
    let before = srv.connections.load(Ordering::SeqCst);
    assert!(before > 0);
    let off = Options {
        offline: true,
        ..opts()
    };
    let r = ctx_for(&env, &srv, &reg, off.clone())
        .install(&["big".into()], None)
        .unwrap();
    assert!(r.downloaded.is_empty());
    assert!(env.home.packages().join("big").join("big.apsi").is_file());
    // Something never fetched fails offline, still without a connection.
    let e = ctx_for(&env, &srv, &reg, off)
        .install(&["nothere".into()], None)
        .unwrap_err();
    assert!(matches!(e.kind, ErrorKind::NotFound | ErrorKind::Offline), "{e}");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        srv.connections.load(Ordering::SeqCst),
        before,
        "--offline opened a connection"
    );
}

/// Helper process for the stale-lock test: holds the store lock until killed.
#[test]
fn lock_holder_helper() {
    let Ok(dir) = std::env::var("APSI_TEST_HOLD_LOCK") else {
        return;
    };
    let _l = Store::new(dir).lock(Duration::from_secs(5)).unwrap();
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn lock_names_its_holder_and_a_dead_holder_releases_it() {
    let env = Env::new();
    let dir = env.home.store();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "lock_holder_helper", "--nocapture", "--test-threads=1"])
        .env("APSI_TEST_HOLD_LOCK", &dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let lockfile = dir.join(".lock");
    let t = std::time::Instant::now();
    while std::fs::read_to_string(&lockfile).unwrap_or_default() != pid {
        assert!(t.elapsed() < Duration::from_secs(30), "the helper never took the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    let e = match Store::new(&dir).lock(Duration::from_millis(200)) {
        Err(e) => e,
        Ok(_) => panic!("the lock was not exclusive"),
    };
    assert_eq!(e.kind, ErrorKind::Lock);
    assert!(e.message.contains(&format!("process {pid}")), "{e}");
    child.kill().unwrap();
    child.wait().unwrap();
    // The dead process's lock (its pid still in the file) is free.
    assert!(Store::new(&dir).lock(Duration::from_secs(5)).is_ok());
}

#[test]
fn dropped_connection_is_retried_and_resumed() {
    let (reg, line) = published();
    let srv = Server::start(&reg.dir);
    srv.fault(DL, Fault::TruncateOnce(100_000));
    let env = Env::new();
    let r = ctx_for(&env, &srv, &reg, opts())
        .install(&["big".into()], None)
        .unwrap();
    assert_eq!(r.downloaded, vec![("big".to_string(), DownloadStart::Resumed(100_000))]);
    assert_eq!(srv.requests_for(DL), vec![None, Some("bytes=100000-".to_string())]);
    let s = Store::new(env.home.store());
    assert_eq!(
        apsi_pkg::digest::sha256_file(&s.archive_path(&line.cksum)).unwrap().0,
        line.cksum
    );
}

#[test]
fn plain_http_registry_refuses_a_redirect_to_https() {
    // A plain-HTTP registry gets a client without CA roots; a redirect to
    // https must say so instead of failing the TLS handshake obscurely.
    use std::io::{Read, Write};
    let (reg, _) = published();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().take(4) {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 301 Moved Permanently\r\nLocation: https://127.0.0.1:9/snapshot.json\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    let env = Env::new();
    let e = env
        .ctx(&format!("http://127.0.0.1:{port}"), reg.root_bytes(), opts())
        .install(&["big".into()], None)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Network, "{e}");
    assert!(e.message.contains("redirected to https://127.0.0.1:9/"), "{e}");
    env.assert_clean("big");
}
