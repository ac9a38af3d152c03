//! The compile cache: `$APSI_HOME/cache/compile/<name>.apsic`, one file per
//! program (its main file with every module it uses), holding the compiled
//! program that `apsi_core::serial` encodes.
//!
//! An entry file is
//!
//! ```text
//! magic "APSICC\0\x01"   tag (32 bytes)   body
//! body:  name, apsi version, files, probes, payload
//! ```
//!
//! where the tag is HMAC-SHA256 under the per-user key (`key.rs`) of the
//! entry's name and the BLAKE3 digest of its body (`key::content_digest`:
//! hashing the body once with BLAKE3 and signing the digest is a quarter of
//! the work of HMAC over the whole body, which a cached start waited for):
//! a changed, truncated, renamed (swapped) or foreign-keyed file fails it.
//! `files` are the program's source files (canonical path, name as shown,
//! BLAKE3 digest of the text), each read and
//! compared on load; `probes` are paths where a `use` looked before finding
//! its module, which must still not exist (a new file there would change
//! which module the program uses). Anything that does not hold makes the
//! entry a miss; the caller then compiles and stores a new one.
//!
//! Writers write a temporary file in the same folder and rename it over the
//! entry, so a reader sees a whole entry or none, and concurrent writers of
//! the same program each leave a whole one. The folder is bounded in size:
//! after a write, the least recently used entries (by modification time,
//! which a hit refreshes at most hourly) go first.

use crate::key::{self, KEY_LEN};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const MAGIC: &[u8; 8] = b"APSICC\0\x02";
const TAG_DOMAIN: &[u8] = b"apsi compile cache entry";
/// The default size bound (`APSI_CACHE_MAX_MB` changes it).
pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;

/// A source file of a cached program.
#[derive(Debug, Clone, PartialEq)]
pub struct FileRecord {
    /// Canonical path: where the file is read again on load.
    pub path: PathBuf,
    /// The name diagnostics show for it.
    pub display: String,
    /// `key::content_digest` of the text.
    pub digest: [u8; 32],
}

/// What an entry holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// In the order of the program's source map (file 0 first).
    pub files: Vec<FileRecord>,
    /// Paths that must still not exist.
    pub probes: Vec<PathBuf>,
    /// The encoded compiled program.
    pub payload: Vec<u8>,
}

/// What a lookup found.
#[derive(Debug)]
pub enum Lookup {
    /// A verified entry whose sources are unchanged.
    Hit(Hit),
    /// No entry, or one for sources that have changed since (not an error).
    Miss,
    /// An entry that must not be trusted (say so, then recompile).
    Rejected(String),
}

/// A verified entry whose sources are unchanged.
#[derive(Debug)]
pub struct Hit {
    /// (name as shown, text) of each source file, in the entry's order, as
    /// read just now.
    pub texts: Vec<(String, Arc<str>)>,
    data: Vec<u8>,
    payload: std::ops::Range<usize>,
}

impl Hit {
    /// The encoded compiled program.
    pub fn payload(&self) -> &[u8] {
        &self.data[self.payload.clone()]
    }

    /// The entry's bytes and where the encoded program lies in them, for a
    /// decoder that keeps the bytes instead of copying the payload.
    pub fn into_payload(self) -> (Vec<u8>, std::ops::Range<usize>) {
        (self.data, self.payload)
    }
}

/// A file's text, read straight into the shared string that the source
/// map and diagnostics keep: no second copy of a large program (each
/// 4 KiB of fresh memory costs a page fault, about 2.5 µs on the VMs
/// measured). The file is read once at the size it has when opened; one
/// that changes size meanwhile is read again the ordinary way.
pub fn read_text(path: &Path) -> std::io::Result<Arc<str>> {
    let mut f = std::fs::File::open(path)?;
    let meta = f.metadata()?;
    let len = match usize::try_from(meta.len()) {
        Ok(len) if meta.is_file() => len,
        // A pipe or device has no size to go by (and cannot be read twice).
        _ => {
            let mut s = String::new();
            f.read_to_string(&mut s)?;
            return Ok(Arc::from(s));
        }
    };
    // SAFETY: zeroed bytes are valid `u8`s.
    let mut buf = unsafe { Arc::<[u8]>::new_zeroed_slice(len).assume_init() };
    let Some(whole) = Arc::get_mut(&mut buf) else {
        return std::fs::read_to_string(path).map(Arc::from);
    };
    let as_opened = f.read_exact(whole).is_ok() && f.read(&mut [0u8; 1]).is_ok_and(|n| n == 0);
    if !as_opened {
        return std::fs::read_to_string(path).map(Arc::from);
    }
    if std::str::from_utf8(&buf).is_err() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ));
    }
    // SAFETY: the bytes were just checked to be UTF-8, and `str` has the
    // layout of `[u8]`, so the pointer is a valid `Arc<str>`'s.
    Ok(unsafe { Arc::from_raw(Arc::into_raw(buf) as *const str) })
}

/// A source file the caller has already read: canonical path, text, and
/// its `key::content_digest`.
pub struct Known {
    pub path: PathBuf,
    pub text: Arc<str>,
    pub digest: [u8; 32],
}

/// The compile cache of this user.
pub struct CompileCache {
    dir: PathBuf,
    key: [u8; KEY_LEN],
    /// The version of the `apsi` that reads and writes it.
    version: String,
    max_bytes: u64,
}

/// `$APSI_HOME/cache/compile`.
pub fn default_dir() -> Option<PathBuf> {
    key::apsi_home().map(|h| h.join("cache").join("compile"))
}

/// Whether `APSI_NO_CACHE` asks for no cache (set, and neither empty nor `0`).
pub fn disabled_by_env() -> bool {
    std::env::var_os("APSI_NO_CACHE").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The size bound: `APSI_CACHE_MAX_MB` (MiB) or [`DEFAULT_MAX_BYTES`].
pub fn max_bytes_from_env() -> u64 {
    std::env::var("APSI_CACHE_MAX_MB")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|mb| mb.saturating_mul(1 << 20))
        .unwrap_or(DEFAULT_MAX_BYTES)
}

/// An entry's name: the hex SHA-256 of everything that identifies it.
pub fn entry_name(parts: &[&[u8]]) -> String {
    key::hex(&key::digest_parts(parts))
}

fn put_len(b: &mut Vec<u8>, n: usize) {
    b.extend_from_slice(&(n as u64).to_le_bytes());
}

fn put_bytes(b: &mut Vec<u8>, s: &[u8]) {
    put_len(b, s.len());
    b.extend_from_slice(s);
}

fn path_bytes(p: &Path) -> &[u8] {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes()
}

struct Cur<'a>(&'a [u8]);

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn len(&mut self) -> Option<usize> {
        let b: [u8; 8] = self.take(8)?.try_into().ok()?;
        usize::try_from(u64::from_le_bytes(b)).ok()
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.len()?;
        self.take(n)
    }
    fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }
    fn path(&mut self) -> Option<PathBuf> {
        use std::os::unix::ffi::OsStrExt;
        Some(PathBuf::from(std::ffi::OsStr::from_bytes(self.bytes()?)))
    }
}

/// The body of an entry file (what the tag covers, after the name).
fn encode_body(name: &str, version: &str, e: &Entry) -> Vec<u8> {
    let mut b = Vec::with_capacity(e.payload.len() + 256);
    put_bytes(&mut b, name.as_bytes());
    put_bytes(&mut b, version.as_bytes());
    put_len(&mut b, e.files.len());
    for f in &e.files {
        put_bytes(&mut b, path_bytes(&f.path));
        put_bytes(&mut b, f.display.as_bytes());
        b.extend_from_slice(&f.digest);
    }
    put_len(&mut b, e.probes.len());
    for p in &e.probes {
        put_bytes(&mut b, path_bytes(p));
    }
    put_bytes(&mut b, &e.payload);
    b
}

/// (name, version, entry without its payload, the payload's range in `b`)
/// of a body; `None` when malformed.
fn decode_body(b: &[u8]) -> Option<(String, String, Entry, std::ops::Range<usize>)> {
    let mut c = Cur(b);
    let name = c.str()?.to_string();
    let version = c.str()?.to_string();
    let n = c.len()?;
    let mut files = Vec::new();
    for _ in 0..n {
        let path = c.path()?;
        let display = c.str()?.to_string();
        let digest: [u8; 32] = c.take(32)?.try_into().ok()?;
        files.push(FileRecord { path, display, digest });
    }
    let n = c.len()?;
    let mut probes = Vec::new();
    for _ in 0..n {
        probes.push(c.path()?);
    }
    let n = c.len()?;
    let start = b.len() - c.0.len();
    c.take(n)?;
    if !c.0.is_empty() {
        return None;
    }
    let e = Entry {
        files,
        probes,
        payload: Vec::new(),
    };
    Some((name, version, e, start..start + n))
}

/// A whole entry file as written (magic, tag, body).
pub fn encode_file(key: &[u8; KEY_LEN], name: &str, version: &str, e: &Entry) -> Vec<u8> {
    let body = encode_body(name, version, e);
    let t = key::tag(key, &[TAG_DOMAIN, name.as_bytes(), &key::content_digest(&body)]);
    let mut out = Vec::with_capacity(MAGIC.len() + t.len() + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&t);
    out.extend_from_slice(&body);
    out
}

/// Verifies and decodes an entry file read from the place of `name`.
pub fn decode_file(key: &[u8; KEY_LEN], name: &str, version: &str, data: &[u8]) -> Result<Entry, String> {
    let (mut e, range) = verify_file(key, name, version, data)?;
    e.payload = data[range].to_vec();
    Ok(e)
}

/// Verifies an entry file: the entry without its payload, and the payload's
/// range in `data`.
fn verify_file(
    key: &[u8; KEY_LEN],
    name: &str,
    version: &str,
    data: &[u8],
) -> Result<(Entry, std::ops::Range<usize>), String> {
    let rest = data
        .strip_prefix(MAGIC.as_slice())
        .ok_or_else(|| "it is not a compile-cache entry of this format".to_string())?;
    if rest.len() < 32 {
        return Err("it is truncated".into());
    }
    let (t, body) = rest.split_at(32);
    if !key::verify(key, &[TAG_DOMAIN, name.as_bytes(), &key::content_digest(body)], t) {
        return Err(
            "it does not verify with this user's cache key (changed, truncated, moved, or written with another key)"
                .into(),
        );
    }
    let (n, v, e, r) = decode_body(body).ok_or_else(|| "it is malformed".to_string())?;
    if n != name {
        return Err("it belongs to another program".into());
    }
    if v != version {
        return Err(format!("it was written by apsi {v}, this is apsi {version}"));
    }
    let off = data.len() - body.len();
    Ok((e, r.start + off..r.end + off))
}

impl CompileCache {
    /// The cache in `dir`, signed with `key`, for this `version` of apsi.
    pub fn new(dir: PathBuf, key: [u8; KEY_LEN], version: &str, max_bytes: u64) -> CompileCache {
        CompileCache {
            dir,
            key,
            version: version.to_string(),
            max_bytes,
        }
    }

    /// This user's cache (`$APSI_HOME/cache/compile`, the key made on
    /// first use); the error says why there is none.
    pub fn open(version: &str) -> Result<CompileCache, String> {
        let dir = default_dir().ok_or_else(|| "the compile cache needs APSI_HOME or HOME".to_string())?;
        let key = key::cache_key()?;
        Ok(CompileCache::new(dir, key, version, max_bytes_from_env()))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where entry `name` lives.
    pub fn path_of(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.apsic"))
    }

    /// Looks entry `name` up. `known` holds files the caller has already
    /// read, so they are neither read nor hashed twice.
    pub fn load(&self, name: &str, mut known: Vec<Known>) -> Lookup {
        let path = self.path_of(name);
        let (data, file) = match read_no_follow(&path) {
            Ok(Some(d)) => d,
            Ok(None) => return Lookup::Miss,
            Err(why) => return Lookup::Rejected(format!("{}: {why}", path.display())),
        };
        let (entry, payload) = match verify_file(&self.key, name, &self.version, &data) {
            Ok(e) => e,
            Err(why) => return Lookup::Rejected(format!("{}: {why}", path.display())),
        };
        for p in &entry.probes {
            if p.exists() {
                return Lookup::Miss;
            }
        }
        let mut texts = Vec::with_capacity(entry.files.len());
        for f in entry.files {
            let (text, sha) = match known.iter().position(|k| k.path == f.path) {
                Some(i) => {
                    let k = known.swap_remove(i);
                    (k.text, k.digest)
                }
                // A module found through a link (an installed package's
                // folder) must still be reached the way the program found it:
                // removing the package removes the link, not its target.
                None if std::fs::canonicalize(&f.display).ok().as_ref() != Some(&f.path) => return Lookup::Miss,
                None => match read_text(&f.path) {
                    Ok(t) => {
                        let h = key::content_digest(t.as_bytes());
                        (t, h)
                    }
                    Err(_) => return Lookup::Miss,
                },
            };
            if sha != f.digest {
                return Lookup::Miss;
            }
            texts.push((f.display, text));
        }
        touch(&file);
        Lookup::Hit(Hit { texts, data, payload })
    }

    /// Stores entry `name` (atomically), then keeps the folder within its bound.
    pub fn store(&self, name: &str, entry: &Entry) -> Result<(), String> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        let bytes = encode_file(&self.key, name, &self.version, entry);
        let cannot = |e: std::io::Error| format!("cannot write {}: {e}", self.path_of(name).display());
        let tmp = crate::write_temp(&self.dir, name, &bytes).map_err(cannot)?;
        if let Err(e) = std::fs::rename(&tmp, self.path_of(name)) {
            let _ = std::fs::remove_file(&tmp);
            return Err(cannot(e));
        }
        self.evict();
        Ok(())
    }

    /// Removes least recently used entries until the folder is within its
    /// bound, and temporary files a stopped writer left (older than an hour).
    pub fn evict(&self) {
        let Ok(rd) = std::fs::read_dir(&self.dir) else { return };
        let now = SystemTime::now();
        let mut entries = Vec::new();
        let mut total = 0u64;
        for e in rd.flatten() {
            let Ok(m) = e.path().symlink_metadata() else { continue };
            let name = e.file_name();
            let name = name.to_string_lossy();
            let mtime = m.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            if name.ends_with(".tmp") {
                if now.duration_since(mtime).unwrap_or_default() > Duration::from_secs(3600) {
                    let _ = std::fs::remove_file(e.path());
                }
                continue;
            }
            if !name.ends_with(".apsic") {
                continue;
            }
            total = total.saturating_add(m.len());
            entries.push((mtime, m.len(), e.path()));
        }
        if total <= self.max_bytes {
            return;
        }
        entries.sort_by_key(|e| e.0);
        for (_, len, p) in entries {
            if total <= self.max_bytes {
                break;
            }
            if std::fs::remove_file(&p).is_ok() {
                total = total.saturating_sub(len);
            }
        }
    }
}

/// A hit marks the entry used (its modification time), at most hourly.
fn touch(f: &std::fs::File) {
    let now = SystemTime::now();
    let old = f.metadata().and_then(|m| m.modified()).unwrap_or(now);
    if now.duration_since(old).unwrap_or_default() > Duration::from_secs(3600) {
        let _ = f.set_modified(now);
    }
}

/// The file's bytes (and the open file); `None` when it does not exist; an error for a
/// symbolic link or anything else that is not a regular file.
fn read_no_follow(path: &Path) -> Result<Option<(Vec<u8>, std::fs::File)>, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let mut f = match f {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err("it is a symbolic link".into()),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    let m = f.metadata().map_err(|e| format!("cannot read it: {e}"))?;
    if !m.is_file() {
        return Err("it is not a regular file".into());
    }
    let mut data = Vec::with_capacity(m.len() as usize);
    f.read_to_end(&mut data).map_err(|e| format!("cannot read it: {e}"))?;
    Ok(Some((data, f)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(dir: &Path) -> CompileCache {
        CompileCache::new(dir.to_path_buf(), [3u8; KEY_LEN], "9.9.9", DEFAULT_MAX_BYTES)
    }

    fn program(dir: &Path) -> (PathBuf, String, Entry) {
        let src = dir.join("p.apsi");
        let text = "print(1)\n".to_string();
        std::fs::write(&src, &text).unwrap();
        let src = std::fs::canonicalize(&src).unwrap();
        let e = Entry {
            files: vec![FileRecord {
                path: src.clone(),
                display: src.display().to_string(),
                digest: key::content_digest(text.as_bytes()),
            }],
            probes: vec![dir.join("nothing-here.apsi")],
            payload: b"compiled bytes".to_vec(),
        };
        (src, text, e)
    }

    #[test]
    fn read_text_reads_what_read_to_string_reads() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("t.apsi");
        for text in ["", "x", "print(\"é\")\n", &"long line\n".repeat(100_000)] {
            std::fs::write(&p, text).unwrap();
            assert_eq!(&*read_text(&p).unwrap(), text);
        }
        std::fs::write(&p, b"ok \xff\xfe").unwrap();
        let e = read_text(&p).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert_eq!(
            read_text(&t.path().join("missing")).unwrap_err().kind(),
            std::io::ErrorKind::NotFound
        );
        // A pipe is read to its end, once.
        let fifo = t.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let writer = {
                let fifo = fifo.clone();
                std::thread::spawn(move || std::fs::write(&fifo, "print(1)\n").unwrap())
            };
            assert_eq!(&*read_text(&fifo).unwrap(), "print(1)\n");
            writer.join().unwrap();
        }
    }

    fn hit(l: &Lookup) -> bool {
        matches!(l, Lookup::Hit(_))
    }

    #[test]
    fn round_trip_and_stale_sources() {
        let t = tempfile::tempdir().unwrap();
        let c = cache(&t.path().join("cc"));
        let (src, _, e) = program(t.path());
        assert!(matches!(c.load("n1", vec![]), Lookup::Miss));
        c.store("n1", &e).unwrap();
        match c.load("n1", vec![]) {
            Lookup::Hit(h) => {
                assert_eq!(h.payload(), b"compiled bytes");
                assert_eq!(h.texts, vec![(src.display().to_string(), Arc::from("print(1)\n"))]);
            }
            other => panic!("{other:?}"),
        }
        // A changed source is a plain miss (not an error).
        std::fs::write(&src, "print(2)\n").unwrap();
        assert!(matches!(c.load("n1", vec![]), Lookup::Miss));
        std::fs::write(&src, "print(1)\n").unwrap();
        assert!(hit(&c.load("n1", vec![])));
        // A module reached through a link that is gone (a removed package): a miss.
        let link = t.path().join("link.apsi");
        std::os::unix::fs::symlink(&src, &link).unwrap();
        let mut linked = e.clone();
        linked.files[0].display = link.display().to_string();
        c.store("n2", &linked).unwrap();
        assert!(hit(&c.load("n2", vec![])));
        std::fs::remove_file(&link).unwrap();
        assert!(matches!(c.load("n2", vec![]), Lookup::Miss));
        // A file appearing where a `use` looked first: a miss.
        std::fs::write(t.path().join("nothing-here.apsi"), "").unwrap();
        assert!(matches!(c.load("n1", vec![]), Lookup::Miss));
    }

    #[test]
    fn every_byte_flipped_or_truncation_is_rejected() {
        let t = tempfile::tempdir().unwrap();
        let c = cache(&t.path().join("cc"));
        let (_, _, e) = program(t.path());
        c.store("n1", &e).unwrap();
        let p = c.path_of("n1");
        let good = std::fs::read(&p).unwrap();
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x01;
            std::fs::write(&p, &bad).unwrap();
            assert!(matches!(c.load("n1", vec![]), Lookup::Rejected(_)), "flip at {i}");
        }
        for n in 0..good.len() {
            std::fs::write(&p, &good[..n]).unwrap();
            assert!(matches!(c.load("n1", vec![]), Lookup::Rejected(_)), "truncated to {n}");
        }
        std::fs::write(&p, &good).unwrap();
        assert!(hit(&c.load("n1", vec![])));
        // A known text is used as given (not read again).
        let known = Known {
            path: t.path().join("p.apsi"),
            text: "print(1)\n".into(),
            digest: key::content_digest(b"print(1)\n"),
        };
        assert!(hit(&c.load("n1", vec![known])));
    }

    #[test]
    fn swapped_foreign_key_other_version_symlink() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("cc");
        let c = cache(&dir);
        let (_, _, e) = program(t.path());
        c.store("n1", &e).unwrap();
        let mut e2 = e.clone();
        e2.payload = b"other program".to_vec();
        c.store("n2", &e2).unwrap();
        // Swapped: each file in the other's place.
        let (a, b) = (c.path_of("n1"), c.path_of("n2"));
        let (da, db) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        std::fs::write(&a, &db).unwrap();
        std::fs::write(&b, &da).unwrap();
        assert!(matches!(c.load("n1", vec![]), Lookup::Rejected(_)));
        assert!(matches!(c.load("n2", vec![]), Lookup::Rejected(_)));
        // Written with another key.
        let other = CompileCache::new(dir.clone(), [4u8; KEY_LEN], "9.9.9", DEFAULT_MAX_BYTES);
        other.store("n1", &e).unwrap();
        assert!(matches!(c.load("n1", vec![]), Lookup::Rejected(_)));
        // Signed with the right key by another version of apsi.
        std::fs::write(&a, encode_file(&[3u8; KEY_LEN], "n1", "9.9.8", &e)).unwrap();
        match c.load("n1", vec![]) {
            Lookup::Rejected(why) => assert!(why.contains("apsi 9.9.8"), "{why}"),
            other => panic!("{other:?}"),
        }
        // A symbolic link in place of an entry (to a valid one, even).
        c.store("n3", &e).unwrap();
        std::fs::remove_file(&a).unwrap();
        std::os::unix::fs::symlink(c.path_of("n3"), &a).unwrap();
        match c.load("n1", vec![]) {
            Lookup::Rejected(why) => assert!(why.contains("symbolic link"), "{why}"),
            other => panic!("{other:?}"),
        }
        // Storing replaces the link itself, not its target.
        c.store("n1", &e).unwrap();
        assert!(!a.symlink_metadata().unwrap().file_type().is_symlink());
        assert!(hit(&c.load("n1", vec![])));
        assert!(hit(&c.load("n3", vec![])));
    }

    #[test]
    fn concurrent_writers_leave_a_whole_entry() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("cc");
        let (_, _, e) = program(t.path());
        std::thread::scope(|s| {
            for i in 0..8u8 {
                let dir = dir.clone();
                let mut e = e.clone();
                s.spawn(move || {
                    let c = cache(&dir);
                    e.payload = vec![i; 100_000];
                    for _ in 0..20 {
                        c.store("same", &e).unwrap();
                        match c.load("same", vec![]) {
                            Lookup::Hit(h) => {
                                let payload = h.payload();
                                assert_eq!(payload.len(), 100_000);
                                assert!(payload.iter().all(|&b| b == payload[0]));
                            }
                            other => panic!("{other:?}"),
                        }
                    }
                });
            }
        });
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }

    #[test]
    fn least_recently_used_go_first() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("cc");
        let (_, _, mut e) = program(t.path());
        e.payload = vec![0; 10_000];
        let one = encode_file(&[3; 32], "a", "9.9.9", &e).len() as u64;
        let c = CompileCache::new(dir.clone(), [3u8; KEY_LEN], "9.9.9", one * 2 + one / 2);
        c.store("a", &e).unwrap();
        c.store("b", &e).unwrap();
        // `a` used long ago, `b` recently.
        let old = SystemTime::now() - Duration::from_secs(7200);
        std::fs::File::options()
            .write(true)
            .open(c.path_of("a"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        c.store("c", &e).unwrap();
        assert!(!c.path_of("a").exists());
        assert!(c.path_of("b").exists() && c.path_of("c").exists());
    }

    #[test]
    fn names_and_env() {
        assert_eq!(entry_name(&[b"a"]).len(), 64);
        assert_ne!(entry_name(&[b"a", b"b"]), entry_name(&[b"ab"]));
    }
}
