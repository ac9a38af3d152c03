//! Test helpers: registries made with the real publishing code, a loopback
//! HTTP server whose faults can be switched on per path, hand-made tar
//! archives for attacks, and checks that nothing leaked.
#![allow(dead_code)]

use apsi_pkg::config::RegistryConfig;
use apsi_pkg::digest::sha256_hex;
use apsi_pkg::home::Home;
use apsi_pkg::index::{index_path, IndexLine};
use apsi_pkg::ops::{Ctx, Options, Quiet};
use apsi_pkg::publish::{self, RootSpec};
use apsi_pkg::trust::{now_secs, SecretKey};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct Reg {
    pub tmp: tempfile::TempDir,
    pub dir: PathBuf,
    /// The root and snapshot key.
    pub key: SecretKey,
    /// The timestamp key; `None` for a registry whose root has no
    /// timestamp role (made before the role existed).
    pub ts_key: Option<SecretKey>,
}

impl Reg {
    /// A registry with one root and snapshot key (threshold 1) and its own
    /// timestamp key.
    pub fn new() -> Reg {
        Reg::make(true)
    }

    /// A registry whose root declares no timestamp role.
    pub fn legacy() -> Reg {
        Reg::make(false)
    }

    fn make(with_timestamp: bool) -> Reg {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("reg");
        let key = SecretKey::generate().unwrap();
        let ts_key = with_timestamp.then(|| SecretKey::generate().unwrap());
        let spec = RootSpec {
            root_keys: vec![(key.keyid(), key.public_hex())],
            root_threshold: 1,
            snapshot_keys: vec![(key.keyid(), key.public_hex())],
            snapshot_threshold: 1,
            timestamp_keys: ts_key.iter().map(|k| (k.keyid(), k.public_hex())).collect(),
            timestamp_threshold: 1,
            expires: now_secs() + 86_400,
        };
        publish::write_root(&dir, &spec, &[&key]).unwrap();
        Reg { tmp, dir, key, ts_key }
    }

    pub fn root_bytes(&self) -> Vec<u8> {
        std::fs::read(self.dir.join("1.root.json")).unwrap()
    }

    /// Builds and publishes a library package whose main file holds `code`.
    pub fn library(&self, name: &str, vers: &str, code: &str, deps: &[(&str, &str)]) -> IndexLine {
        let src = self.tmp.path().join(format!("src-{name}-{vers}"));
        std::fs::create_dir_all(&src).unwrap();
        let mut m = format!("name = \"{name}\"\nversion = \"{vers}\"\nkind = \"library\"\n");
        if !deps.is_empty() {
            m.push_str("[dependencies]\n");
            for (d, r) in deps {
                m.push_str(&format!("{d} = \"{r}\"\n"));
            }
        }
        std::fs::write(src.join("apsi-package.toml"), m).unwrap();
        std::fs::write(src.join(format!("{name}.apsi")), code).unwrap();
        self.publish_dir(&src, name, vers)
    }

    pub fn publish_dir(&self, src: &Path, name: &str, vers: &str) -> IndexLine {
        let out = self.tmp.path().join("built");
        std::fs::create_dir_all(&out).unwrap();
        let archive = out.join(format!("{name}-{vers}-any.tar.gz"));
        apsi_pkg::archive::pack(src, &format!("{name}-{vers}"), &archive, 6).unwrap();
        publish::add(&self.dir, &archive).unwrap()
    }

    /// Publishes raw archive bytes with a hand-written index line (for
    /// archives the publishing tool itself would refuse).
    pub fn publish_raw(&self, name: &str, vers: &str, bytes: &[u8], unpacked: u64) -> IndexLine {
        let line = IndexLine {
            name: name.into(),
            vers: vers.into(),
            target: "any".into(),
            tags: vec![],
            kind: "library".into(),
            deps: vec![],
            cksum: sha256_hex(bytes),
            size: bytes.len() as u64,
            unpacked_size: unpacked,
            yanked: false,
            v: 1,
        };
        let dl = self.dir.join("dl");
        std::fs::create_dir_all(&dl).unwrap();
        std::fs::write(dl.join(format!("{name}-{vers}-any.tar.gz")), bytes).unwrap();
        let ip = self.dir.join("index").join(index_path(name));
        std::fs::create_dir_all(ip.parent().unwrap()).unwrap();
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&ip).unwrap();
        writeln!(f, "{}", serde_json::to_string(&line).unwrap()).unwrap();
        if !self.dir.join("config.json").exists() {
            std::fs::write(
                self.dir.join("config.json"),
                r#"{"dl":"dl/{name}-{vers}-{target}.tar.gz"}"#,
            )
            .unwrap();
        }
        line
    }

    /// Signs a snapshot (a day) and, with a timestamp role, a timestamp
    /// naming it (a day).
    pub fn sign(&self) {
        publish::sign_snapshot(&self.dir, &[&self.key], now_secs() + 86_400).unwrap();
        self.timestamp(now_secs() + 86_400);
    }

    /// Re-signs `timestamp.json` for the current snapshot (nothing without a
    /// timestamp role).
    pub fn timestamp(&self, expires: u64) {
        if let Some(k) = &self.ts_key {
            publish::sign_timestamp(&self.dir, &[k], expires).unwrap();
        }
    }

    pub fn url(&self) -> String {
        format!("file://{}", self.dir.display())
    }

    /// A registry (with a timestamp role) holding `mathx 1.0.0`, signed.
    pub fn with_mathx() -> Reg {
        let reg = Reg::new();
        reg.library("mathx", "1.0.0", "x = 1\n", &[]);
        reg.sign();
        reg
    }
}

/// An APSI_HOME in its own temporary folder, with a sibling `outside/`
/// folder that attacks aim at and that must stay empty.
pub struct Env {
    pub tmp: tempfile::TempDir,
    pub home: Home,
}

impl Env {
    pub fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("home")).unwrap();
        std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
        let home = Home::at(tmp.path().join("home"));
        Env { tmp, home }
    }

    pub fn ctx<'a>(&self, url: &str, root: Vec<u8>, opts: Options) -> Ctx<'a> {
        Ctx::new(
            self.home.clone(),
            RegistryConfig {
                url: url.to_string(),
                root,
            },
            opts,
            &Quiet,
        )
    }

    /// Installs `name` from `reg` (online, now); it must work.
    pub fn install_from(&self, reg: &Reg, name: &str) {
        self.ctx(&reg.url(), reg.root_bytes(), opts())
            .install(&[name.into()], None)
            .unwrap();
    }

    /// Installs `name` from `reg` (online, now); it must fail: the error.
    pub fn install_fails(&self, reg: &Reg, name: &str) -> apsi_pkg::error::PkgError {
        self.ctx(&reg.url(), reg.root_bytes(), opts())
            .install(&[name.into()], None)
            .unwrap_err()
    }

    /// Installs and removes `name`, so the registry's metadata is cached
    /// and the store is as before; returns the store's entries.
    pub fn cache_metadata(&self, reg: &Reg, name: &str) -> Vec<String> {
        self.install_from(reg, name);
        self.ctx(&reg.url(), reg.root_bytes(), opts())
            .remove(&[name.into()])
            .unwrap();
        self.store_entries()
    }

    pub fn outside(&self) -> PathBuf {
        self.tmp.path().join("outside")
    }

    /// Nothing was written outside APSI_HOME, nothing is installed, linked
    /// or extracted, and no archive with the given checksum was kept.
    pub fn assert_clean(&self, name: &str) {
        self.assert_clean_since(name, &[]);
    }

    /// The extracted trees in the store now.
    pub fn store_entries(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.home.store().join("pkg"))
            .map(|r| {
                r.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// [`assert_clean`], allowing the store trees that existed `before`.
    pub fn assert_clean_since(&self, name: &str, before: &[String]) {
        let outside: Vec<_> = std::fs::read_dir(self.outside()).unwrap().collect();
        assert!(
            outside.is_empty(),
            "something was written outside the target: {outside:?}"
        );
        let top: Vec<String> = std::fs::read_dir(self.tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let mut top = top;
        top.sort();
        assert_eq!(
            top,
            vec!["home".to_string(), "outside".to_string()],
            "unexpected files beside APSI_HOME"
        );
        assert!(
            std::fs::symlink_metadata(self.home.packages().join(name)).is_err(),
            "{name} was linked"
        );
        assert!(
            !self.home.installed().join(format!("{name}.json")).exists(),
            "{name} was recorded as installed"
        );
        assert_eq!(self.store_entries(), before, "something was extracted into the store");
        let tmp = self.home.store().join("tmp");
        if tmp.exists() {
            let entries: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
            assert!(entries.is_empty(), "extraction leftovers: {entries:?}");
        }
    }
}

pub fn opts() -> Options {
    Options {
        lock_timeout: Duration::from_secs(20),
        net_timeout: Duration::from_secs(10),
        ..Options::default()
    }
}

/// What the fault server does for one path.
#[derive(Clone, Debug)]
pub enum Fault {
    /// Answer with this status and an empty body.
    Status(u16),
    /// Send the file plus this many extra bytes (Content-Length included).
    Longer(usize),
    /// Send the file but claim and send extra bytes without Content-Length.
    LongerChunkless(usize),
    /// Ignore Range headers (always 200 with the whole file).
    NoRanges,
    /// Wait this long before answering.
    Delay(Duration),
    /// Serve these bytes instead of the file.
    Body(Vec<u8>),
    /// Once: announce the whole file, send this many bytes, drop the connection.
    TruncateOnce(usize),
    /// Announce the whole file, then send it one byte per interval.
    Trickle(Duration),
}

/// (path, Range header) of each request served.
pub type Log = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A small HTTP/1.1 server on 127.0.0.1 over a registry folder, with faults.
pub struct Server {
    pub url: String,
    pub faults: Arc<Mutex<HashMap<String, Fault>>>,
    /// Connections accepted.
    pub connections: Arc<AtomicUsize>,
    /// (path, range header) of each request.
    pub log: Log,
}

impl Server {
    pub fn start(dir: &Path) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let faults: Arc<Mutex<HashMap<String, Fault>>> = Arc::default();
        let connections = Arc::new(AtomicUsize::new(0));
        let log: Log = Arc::default();
        let (f2, c2, l2, d2) = (faults.clone(), connections.clone(), log.clone(), dir.to_path_buf());
        std::thread::spawn(move || {
            for s in listener.incoming() {
                let Ok(s) = s else { continue };
                c2.fetch_add(1, Ordering::SeqCst);
                let (f3, l3, d3) = (f2.clone(), l2.clone(), d2.clone());
                std::thread::spawn(move || {
                    let _ = handle(s, &d3, &f3, &l3);
                });
            }
        });
        Server {
            url,
            faults,
            connections,
            log,
        }
    }

    pub fn fault(&self, path: &str, f: Fault) {
        self.faults.lock().unwrap().insert(path.to_string(), f);
    }

    pub fn clear(&self) {
        self.faults.lock().unwrap().clear();
    }

    pub fn requests_for(&self, suffix: &str) -> Vec<Option<String>> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p.ends_with(suffix))
            .map(|(_, r)| r.clone())
            .collect()
    }
}

fn handle(
    s: TcpStream,
    dir: &Path,
    faults: &Mutex<HashMap<String, Fault>>,
    log: &Mutex<Vec<(String, Option<String>)>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(s.try_clone()?);
    let mut w = s;
    loop {
        let mut first = String::new();
        if reader.read_line(&mut first)? == 0 {
            return Ok(());
        }
        let path = first
            .split_whitespace()
            .nth(1)
            .unwrap_or("/")
            .trim_start_matches('/')
            .to_string();
        let mut range = None;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h)?;
            let t = h.trim_end();
            if t.is_empty() {
                break;
            }
            if let Some((k, v)) = t.split_once(':') {
                if k.eq_ignore_ascii_case("range") {
                    range = Some(v.trim().to_string());
                }
            }
        }
        log.lock().unwrap().push((path.clone(), range.clone()));
        let fault = {
            let mut f = faults.lock().unwrap();
            let got = f.get(&path).cloned();
            if matches!(got, Some(Fault::TruncateOnce(_))) {
                f.remove(&path);
            }
            got
        };
        let file = std::fs::read(dir.join(&path)).ok();
        let mut body = match (&fault, file) {
            (Some(Fault::Body(b)), _) => b.clone(),
            (_, Some(b)) => b,
            (_, None) => {
                write!(w, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")?;
                continue;
            }
        };
        match fault {
            Some(Fault::Status(c)) => {
                write!(w, "HTTP/1.1 {c} Fault\r\nContent-Length: 0\r\n\r\n")?;
                continue;
            }
            Some(Fault::Delay(d)) => std::thread::sleep(d),
            Some(Fault::Trickle(every)) => {
                write!(w, "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len())?;
                for b in &body {
                    w.write_all(std::slice::from_ref(b))?;
                    w.flush()?;
                    std::thread::sleep(every);
                }
                return Ok(());
            }
            Some(Fault::TruncateOnce(n)) => {
                write!(w, "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len())?;
                w.write_all(&body[..n.min(body.len())])?;
                return Ok(());
            }
            Some(Fault::Longer(n)) => body.extend(std::iter::repeat_n(b'x', n)),
            Some(Fault::LongerChunkless(n)) => {
                body.extend(std::iter::repeat_n(b'x', n));
                write!(w, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")?;
                w.write_all(&body)?;
                return Ok(());
            }
            _ => {}
        }
        let ranges = !matches!(fault, Some(Fault::NoRanges));
        let start = range.filter(|_| ranges).and_then(|r| {
            r.strip_prefix("bytes=")
                .and_then(|x| x.strip_suffix('-'))
                .and_then(|x| x.parse::<usize>().ok())
        });
        match start {
            Some(st) if st < body.len() => {
                let part = &body[st..];
                write!(
                    w,
                    "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {st}-{}/{}\r\n\r\n",
                    part.len(),
                    body.len() - 1,
                    body.len()
                )?;
                w.write_all(part)?;
            }
            _ => {
                write!(w, "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len())?;
                w.write_all(&body)?;
            }
        }
        w.flush()?;
    }
}

/// A tar archive written header by header, so that any path, link or type
/// can be put in (the `tar` crate's builder refuses `..`).
pub struct RawTar {
    pub data: Vec<u8>,
}

impl RawTar {
    pub fn new() -> RawTar {
        RawTar { data: Vec::new() }
    }

    pub fn entry(&mut self, path: &str, kind: tar::EntryType, mode: u32, link: &str, body: &[u8]) -> &mut Self {
        let mut h = tar::Header::new_ustar();
        {
            let old = h.as_old_mut();
            let pb = path.as_bytes();
            old.name[..pb.len()].copy_from_slice(pb);
            let lb = link.as_bytes();
            old.linkname[..lb.len()].copy_from_slice(lb);
        }
        h.set_entry_type(kind);
        h.set_mode(mode);
        h.set_size(body.len() as u64);
        h.set_mtime(0);
        h.set_cksum();
        self.data.extend_from_slice(h.as_bytes());
        self.data.extend_from_slice(body);
        let pad = (512 - body.len() % 512) % 512;
        self.data.extend(std::iter::repeat_n(0u8, pad));
        self
    }

    pub fn file(&mut self, path: &str, body: &[u8]) -> &mut Self {
        self.entry(path, tar::EntryType::Regular, 0o644, "", body)
    }

    /// The manifest every package needs.
    pub fn manifest(&mut self, name: &str, vers: &str) -> &mut Self {
        let m = format!("name = \"{name}\"\nversion = \"{vers}\"\nkind = \"library\"\n");
        self.file(&format!("{name}-{vers}/apsi-package.toml"), m.as_bytes())
    }

    pub fn gz(&self) -> Vec<u8> {
        let mut d = self.data.clone();
        d.extend(std::iter::repeat_n(0u8, 1024));
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&d).unwrap();
        e.finish().unwrap()
    }
}

/// Copies a folder tree (a mirror of a registry as it is now).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// Reads all of a reader (helper for tests).
pub fn read_all(mut r: impl Read) -> Vec<u8> {
    let mut v = Vec::new();
    r.read_to_end(&mut v).unwrap();
    v
}
