//! The registry side: keys, roots, the index and the signed snapshot, kept in
//! a registry folder that any static file server can serve:
//!
//! ```text
//! REG/config.json  REG/1.root.json  REG/2.root.json …  REG/snapshot.json
//! REG/timestamp.json                 (re-signed daily; names snapshot.json)
//! REG/index/<cargo-style path>       REG/dl/NAME-VERSION-TARGET.tar.gz
//! ```
//! Index files live under `index/` so the root stays tidy; the snapshot names
//! them by that path.

use crate::archive;
use crate::digest::{sha256_file, sha256_hex};
use crate::error::{err, io_err, ErrorKind, PkgError, Result};
use crate::fsutil::write_atomic;
use crate::index::{index_path, parse_index_file, Dep, IndexConfig, IndexLine, INDEX_FORMAT};
use crate::manifest::PackageManifest;
use crate::trust::{
    self, envelope_bytes, keyid_of, FileMeta, Role, Root, SecretKey, Snapshot, SnapshotMeta, Timestamp,
};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Writes `DIR/NAME.key` (secret, mode 0600) and `DIR/NAME.pub`; returns the key id.
pub fn keygen(dir: &Path, name: &str) -> Result<String> {
    fs::create_dir_all(dir).map_err(|e| io_err("create the folder", dir, &e))?;
    let key = SecretKey::generate()?;
    let secret = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    if secret.exists() {
        return err(
            ErrorKind::Usage,
            format!("'{}' exists; refusing to overwrite a key", secret.display()),
        );
    }
    {
        use std::io::Write;
        let mut o = fs::OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o600);
        }
        let mut f = o.open(&secret).map_err(|e| io_err("create", &secret, &e))?;
        writeln!(f, "{}", key.to_hex()).map_err(|e| io_err("write", &secret, &e))?;
    }
    write_atomic(&public, format!("{}\n", key.public_hex()).as_bytes())?;
    Ok(key.keyid())
}

pub fn load_secret(path: &Path) -> Result<SecretKey> {
    let text = fs::read_to_string(path).map_err(|e| io_err("read the key", path, &e))?;
    SecretKey::from_hex(&text).map_err(|e| PkgError::new(e.kind, format!("{}: {}", path.display(), e.message)))
}

pub fn load_public(path: &Path) -> Result<(String, String)> {
    let text = fs::read_to_string(path).map_err(|e| io_err("read the key", path, &e))?;
    let pk = text.trim().to_string();
    let id = keyid_of(&pk).ok_or_else(|| {
        PkgError::new(
            ErrorKind::Usage,
            format!("{}: not a public key (64 hex digits)", path.display()),
        )
    })?;
    Ok((id, pk))
}

fn read_root(reg: &Path, version: u64) -> Result<Option<Root>> {
    let p = reg.join(format!("{version}.root.json"));
    match fs::read(&p) {
        Ok(b) => Ok(Some(trust::parse_root(&p.display().to_string(), &b)?.0)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("read", &p, &e)),
    }
}

/// The newest root in a registry folder.
pub fn latest_root(reg: &Path) -> Result<Option<Root>> {
    let mut v = 1;
    let mut last = None;
    while let Some(r) = read_root(reg, v)? {
        last = Some(r);
        v += 1;
    }
    Ok(last)
}

/// What a new root should hold.
pub struct RootSpec {
    pub root_keys: Vec<(String, String)>,
    pub root_threshold: u32,
    pub snapshot_keys: Vec<(String, String)>,
    pub snapshot_threshold: u32,
    /// Who signs `timestamp.json`; empty: the root declares no timestamp
    /// role (clients then work as before the role existed).
    pub timestamp_keys: Vec<(String, String)>,
    pub timestamp_threshold: u32,
    pub expires: u64,
}

/// Writes the next `N.root.json` (1 for a new registry), signed by `signers`
/// (which must include the previous root's threshold and the new one's).
pub fn write_root(reg: &Path, spec: &RootSpec, signers: &[&SecretKey]) -> Result<Root> {
    fs::create_dir_all(reg).map_err(|e| io_err("create the folder", reg, &e))?;
    let prev = latest_root(reg)?;
    let version = prev.as_ref().map(|r| r.version + 1).unwrap_or(1);
    let mut keys = BTreeMap::new();
    for (id, pk) in spec
        .root_keys
        .iter()
        .chain(spec.snapshot_keys.iter())
        .chain(spec.timestamp_keys.iter())
    {
        keys.insert(id.clone(), pk.clone());
    }
    let root = Root {
        kind: "root".into(),
        version,
        expires: spec.expires,
        keys,
        root: Role {
            keyids: spec.root_keys.iter().map(|k| k.0.clone()).collect(),
            threshold: spec.root_threshold,
        },
        snapshot: Role {
            keyids: spec.snapshot_keys.iter().map(|k| k.0.clone()).collect(),
            threshold: spec.snapshot_threshold,
        },
        timestamp: (!spec.timestamp_keys.is_empty()).then(|| Role {
            keyids: spec.timestamp_keys.iter().map(|k| k.0.clone()).collect(),
            threshold: spec.timestamp_threshold,
        }),
    };
    let env = trust::sign(&root, signers)?;
    let bytes = envelope_bytes(&env);
    // Check what we wrote is acceptable to a client before publishing it.
    match &prev {
        Some(p) => {
            trust::verify_rotation(p, &bytes)?;
        }
        None => {
            trust::parse_root("new root", &bytes)?;
        }
    }
    write_atomic(&reg.join(format!("{version}.root.json")), &bytes)?;
    Ok(root)
}

fn index_file(reg: &Path, name: &str) -> PathBuf {
    reg.join("index").join(index_path(name))
}

/// Adds a built archive to the registry: copies it to `dl/` and appends its
/// index line. A (name, version, target) already published is refused.
pub fn add(reg: &Path, archive_path: &Path) -> Result<IndexLine> {
    add_unless_published(reg, archive_path, false).map(|(l, _)| l)
}

/// [`add`]; with `same_is_fine`, an archive already published with the
/// very same sha256 is not an error but returns its line and `false`.
/// Different bytes under a published version are always an error.
pub fn add_unless_published(reg: &Path, archive_path: &Path, same_is_fine: bool) -> Result<(IndexLine, bool)> {
    let text = archive::read_manifest_text(archive_path)?;
    let m = PackageManifest::parse(&text)?;
    let (cksum, size) = sha256_file(archive_path).map_err(|e| io_err("read", archive_path, &e))?;
    // Unpacked size: extract into a scratch folder with the client's rules,
    // so nothing the client would refuse gets published.
    let scratch = reg.join(format!(".scratch-{}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    fs::create_dir_all(&scratch).map_err(|e| io_err("create the folder", &scratch, &e))?;
    let res = archive::extract(archive_path, &scratch, &m.prefix(), archive::Limits::default()).and_then(|got| {
        check_python_requirements(&m, &scratch.join(m.prefix()))?;
        Ok(got)
    });
    let _ = fs::remove_dir_all(&scratch);
    let unpacked = res?.bytes;
    let line = IndexLine {
        name: m.name.clone(),
        vers: m.version.clone(),
        target: m.target.clone(),
        tags: m.tags.clone(),
        kind: m.kind.clone(),
        deps: m
            .dependencies
            .iter()
            .map(|(n, r)| Dep {
                name: n.clone(),
                req: r.clone(),
            })
            .collect(),
        cksum,
        size,
        unpacked_size: unpacked,
        yanked: false,
        v: INDEX_FORMAT,
    };
    let ip = index_file(reg, &m.name);
    let existing = match fs::read_to_string(&ip) {
        Ok(t) => parse_index_file(&m.name, &t)?,
        Err(_) => Vec::new(),
    };
    if let Some(old) = existing.iter().find(|l| l.vers == line.vers && l.target == line.target) {
        if same_is_fine && old.cksum == line.cksum {
            return Ok((old.clone(), false));
        }
        return err(
            ErrorKind::Usage,
            format!(
                "{} {} for {} is already published with other bytes; published versions never change (only yanking may): raise the version to publish this build",
                m.name, m.version, m.target
            ),
        );
    }
    let dl = reg.join("dl");
    fs::create_dir_all(&dl).map_err(|e| io_err("create the folder", &dl, &e))?;
    let dest = dl.join(m.archive_name());
    fs::copy(archive_path, &dest).map_err(|e| io_err("copy the archive to", &dest, &e))?;
    let mut lines = existing;
    lines.push(line.clone());
    write_index(&ip, &lines)?;
    if !reg.join("config.json").exists() {
        let cfg = serde_json::to_vec_pretty(&IndexConfig::default()).unwrap_or_default();
        write_atomic(&reg.join("config.json"), &cfg)?;
    }
    Ok((line, true))
}

/// A package with a `[python]` table must hold its requirements file, every
/// distribution pinned with its wheels' sha256 (what `apsi pkg install`
/// hands to pip `--require-hashes`): refused here rather than at install.
fn check_python_requirements(m: &PackageManifest, pkg_dir: &Path) -> Result<()> {
    let Some(py) = &m.python else { return Ok(()) };
    let p = pkg_dir.join(&py.requirements);
    let text = fs::read_to_string(&p).map_err(|e| {
        PkgError::new(
            ErrorKind::Usage,
            format!(
                "{} {}: its [python] requirements '{}' are not in the archive: {e}",
                m.name, m.version, py.requirements
            ),
        )
    })?;
    crate::pyenv::check_requirements(&text).map_err(|e| {
        PkgError::new(
            ErrorKind::Usage,
            format!(
                "{} {}: its requirements '{}' are not fully pinned and hash-checked: {e}",
                m.name, m.version, py.requirements
            ),
        )
        .hint("pin every distribution NAME==VERSION with --hash=sha256:HEX lines (tools/torch-requirements writes such a file)")
    })?;
    Ok(())
}

fn write_index(path: &Path, lines: &[IndexLine]) -> Result<()> {
    let mut out = String::new();
    for l in lines {
        out.push_str(&serde_json::to_string(l).unwrap_or_default());
        out.push('\n');
    }
    write_atomic(path, out.as_bytes())
}

/// Sets or clears `yanked` on one version (all its targets unless given).
pub fn yank(reg: &Path, name: &str, vers: &str, target: Option<&str>, yanked: bool) -> Result<usize> {
    crate::index::check_name(name)?;
    let ip = index_file(reg, name);
    let text = fs::read_to_string(&ip).map_err(|e| io_err("read the index of", &ip, &e))?;
    let mut lines = parse_index_file(name, &text)?;
    let mut n = 0;
    for l in &mut lines {
        if l.vers == vers && target.is_none_or(|t| t == l.target) {
            l.yanked = yanked;
            n += 1;
        }
    }
    if n == 0 {
        return err(ErrorKind::NotFound, format!("{name} {vers} is not in the index"));
    }
    write_index(&ip, &lines)?;
    Ok(n)
}

/// Signs a new snapshot of every file under `index/` plus `config.json`, one
/// version above the current one.
pub fn sign_snapshot(reg: &Path, keys: &[&SecretKey], expires: u64) -> Result<Snapshot> {
    let mut files = BTreeMap::new();
    let cfgp = reg.join("config.json");
    if !cfgp.exists() {
        let cfg = serde_json::to_vec_pretty(&IndexConfig::default()).unwrap_or_default();
        write_atomic(&cfgp, &cfg)?;
    }
    let mut rels = Vec::new();
    collect_files(&reg.join("index"), "index", &mut rels)?;
    rels.push("config.json".to_string());
    for rel in rels {
        let b = fs::read(reg.join(&rel)).map_err(|e| io_err("read", &reg.join(&rel), &e))?;
        files.insert(
            rel,
            FileMeta {
                sha256: sha256_hex(&b),
                length: b.len() as u64,
            },
        );
    }
    let prev = match fs::read(reg.join("snapshot.json")) {
        Ok(b) => envelope_version("snapshot.json", &b)?.unwrap_or(0),
        Err(_) => 0,
    };
    let snap = Snapshot {
        kind: "snapshot".into(),
        version: prev + 1,
        expires,
        files,
    };
    let env = trust::sign(&snap, keys)?;
    write_atomic(&reg.join("snapshot.json"), &envelope_bytes(&env))?;
    Ok(snap)
}

/// Whether `keys` hold at least the threshold of distinct keys of `role`.
pub fn covers(role: &Role, keys: &[&SecretKey]) -> bool {
    let mut ids: Vec<String> = keys
        .iter()
        .map(|k| k.keyid())
        .filter(|id| role.keyids.contains(id))
        .collect();
    ids.sort();
    ids.dedup();
    role.threshold > 0 && ids.len() as u64 >= u64::from(role.threshold)
}

/// Signs a new `timestamp.json` naming the registry's current
/// `snapshot.json` (its version, length and sha256), one version above the
/// current timestamp. The snapshot is not touched, so this is what a daily
/// cron job runs with the online timestamp key.
pub fn sign_timestamp(reg: &Path, keys: &[&SecretKey], expires: u64) -> Result<Timestamp> {
    let sp = reg.join("snapshot.json");
    let bytes = match fs::read(&sp) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(PkgError::new(
                ErrorKind::Usage,
                format!(
                    "'{}' does not exist: a timestamp names the current snapshot",
                    sp.display()
                ),
            )
            .hint(format!(
                "sign a snapshot first: apsi-registry sign {} --key KEY",
                reg.display()
            )))
        }
        Err(e) => return Err(io_err("read", &sp, &e)),
    };
    let snap_version = envelope_version(&sp.display().to_string(), &bytes)?.ok_or_else(|| {
        PkgError::new(
            ErrorKind::Usage,
            format!("'{}' has no version in its signed content", sp.display()),
        )
    })?;
    let tp = reg.join("timestamp.json");
    let prev = match fs::read(&tp) {
        Ok(b) => envelope_version(&tp.display().to_string(), &b)?.unwrap_or(0),
        Err(_) => 0,
    };
    let ts = Timestamp {
        kind: "timestamp".into(),
        version: prev + 1,
        expires,
        snapshot: SnapshotMeta {
            version: snap_version,
            length: bytes.len() as u64,
            sha256: sha256_hex(&bytes),
        },
    };
    let env = trust::sign(&ts, keys)?;
    write_atomic(&tp, &envelope_bytes(&env))?;
    Ok(ts)
}

/// The `version` of a signed document, unverified (for numbering the next one).
fn envelope_version(what: &str, bytes: &[u8]) -> Result<Option<u64>> {
    Ok(trust::parse_envelope(what, bytes)?
        .signed
        .get("version")
        .and_then(|v| v.as_u64()))
}

fn collect_files(dir: &Path, rel: &str, out: &mut Vec<String>) -> Result<()> {
    let rd = match fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err("read the folder", dir, &e)),
    };
    for ent in rd {
        let ent = ent.map_err(|e| io_err("read the folder", dir, &e))?;
        let name = ent.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let r = format!("{rel}/{name}");
        if ent.path().is_dir() {
            collect_files(&ent.path(), &r, out)?;
        } else {
            out.push(r);
        }
    }
    Ok(())
}
