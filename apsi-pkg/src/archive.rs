//! Package archives: `NAME-VERSION-TARGET.tar.gz`, every entry under the
//! prefix folder `NAME-VERSION/`, with `apsi-package.toml` at its top.
//!
//! Extraction is by allowlist: regular files, directories and relative
//! symlinks that stay inside the package; everything else (hard links,
//! devices, FIFOs, absolute or escaping paths or links, set-id bits, a path
//! through a symlink, the same path twice or two paths differing only in
//! case, the store's completion marker) is refused, and totals are capped.
//! Files are created with `create_new`, so nothing is ever written through
//! an existing link.

use crate::error::{err, io_err, ErrorKind, PkgError, Result};
use std::collections::HashSet;
use std::fs;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

/// The name of the store's completion marker; refused inside archives.
pub use apsi_backend::files::MARKER;
/// The manifest at the top of the package folder.
pub const MANIFEST: &str = "apsi-package.toml";

/// Caps on what one archive may unpack to.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_bytes: u64,
    pub max_entries: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 8 << 30,
            max_entries: 200_000,
        }
    }
}

/// What an extraction produced.
#[derive(Debug, Clone, Default)]
pub struct Extracted {
    pub entries: u64,
    pub bytes: u64,
}

fn refuse<T>(entry: &str, why: &str) -> Result<T> {
    err(ErrorKind::Archive, format!("archive entry '{entry}' refused: {why}"))
}

/// Splits a tar path into normal components, refusing absolute paths,
/// `..`, and anything not under `prefix`.
fn checked_components(raw: &str, prefix: &str) -> Result<Vec<String>> {
    if raw.starts_with('/') || raw.starts_with('\\') {
        return refuse(raw, "absolute path");
    }
    let mut parts = Vec::new();
    for c in Path::new(raw).components() {
        match c {
            Component::Normal(s) => match s.to_str() {
                Some(s) if !s.contains('\\') && !s.contains(':') => parts.push(s.to_string()),
                _ => return refuse(raw, "the name is not portable UTF-8"),
            },
            Component::CurDir => {}
            Component::ParentDir => return refuse(raw, "'..' in the path"),
            Component::RootDir | Component::Prefix(_) => return refuse(raw, "absolute path"),
        }
    }
    if parts.first().map(String::as_str) != Some(prefix) {
        return refuse(raw, &format!("outside the package folder '{prefix}/'"));
    }
    if parts.iter().any(|p| p == MARKER) {
        return refuse(raw, "it is named like the store's completion marker");
    }
    Ok(parts)
}

/// Does a relative symlink at `link` (components) with `target` stay inside
/// the package folder (the first component)?
fn link_stays_inside(link: &[String], target: &str) -> bool {
    if target.is_empty() || target.starts_with('/') || target.contains('\\') {
        return false;
    }
    let mut at: Vec<&str> = link[..link.len().saturating_sub(1)]
        .iter()
        .map(String::as_str)
        .collect();
    for c in Path::new(target).components() {
        match c {
            Component::Normal(s) => match s.to_str() {
                Some(s) => at.push(s),
                None => return false,
            },
            Component::CurDir => {}
            Component::ParentDir => {
                at.pop();
                if at.is_empty() {
                    return false; // left the package folder
                }
            }
            _ => return false,
        }
    }
    !at.is_empty()
}

/// Extracts a gzip'd tar (whose hash was already checked) into `dest`,
/// which must exist and be empty. `prefix` is `NAME-VERSION`.
pub fn extract(archive: &Path, dest: &Path, prefix: &str, limits: Limits) -> Result<Extracted> {
    let file = fs::File::open(archive).map_err(|e| io_err("open", archive, &e))?;
    let gz = flate2::read::GzDecoder::new(std::io::BufReader::with_capacity(1 << 20, file));
    let mut ar = tar::Archive::new(gz);
    let mut out = Extracted::default();
    let mut seen: HashSet<String> = HashSet::new();
    let mut seen_folded: HashSet<String> = HashSet::new();
    let mut links: HashSet<Vec<String>> = HashSet::new();
    let mut dirs: HashSet<Vec<String>> = HashSet::new();
    let entries = ar
        .entries()
        .map_err(|e| PkgError::new(ErrorKind::Archive, format!("not a tar archive: {e}")))?;
    let mut buf = vec![0u8; 1 << 20];
    for entry in entries {
        let mut entry = entry.map_err(|e| PkgError::new(ErrorKind::Archive, format!("corrupt tar archive: {e}")))?;
        let kind = entry.header().entry_type();
        if kind == tar::EntryType::XGlobalHeader {
            continue;
        }
        out.entries += 1;
        if out.entries > limits.max_entries {
            return err(
                ErrorKind::Archive,
                format!("archive refused: more than {} entries", limits.max_entries),
            );
        }
        let raw_bytes = entry.path_bytes().into_owned();
        let raw = String::from_utf8(raw_bytes)
            .map_err(|_| PkgError::new(ErrorKind::Archive, "archive entry with a non-UTF-8 path refused"))?;
        let parts = checked_components(&raw, prefix)?;
        let joined = parts.join("/");
        if !seen.insert(joined.clone()) {
            return refuse(&raw, "the same path appears twice");
        }
        if !seen_folded.insert(joined.to_lowercase()) {
            return refuse(&raw, "another entry has the same name up to letter case");
        }
        for i in 1..parts.len() {
            if links.contains(&parts[..i]) {
                return refuse(&raw, "its path goes through a symlink");
            }
        }
        let mode = entry
            .header()
            .mode()
            .map_err(|_| PkgError::new(ErrorKind::Archive, format!("archive entry '{raw}': bad mode field")))?;
        if mode & 0o7000 != 0 {
            return refuse(&raw, "set-user-id, set-group-id or sticky bits");
        }
        let target = parts.iter().fold(dest.to_path_buf(), |p, c| p.join(c));
        // Parent folders: implicit ones are created (never through links).
        for i in 1..parts.len() {
            let key = parts[..i].to_vec();
            if dirs.insert(key.clone()) {
                let d = key.iter().fold(dest.to_path_buf(), |p, c| p.join(c));
                make_dir(&d)?;
            }
        }
        match kind {
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let remaining = limits.max_bytes.saturating_sub(out.bytes);
                let mut f = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&target)
                    .map_err(|e| io_err("create", &target, &e))?;
                if let Ok(size) = entry.header().size() {
                    if size <= remaining {
                        crate::fsutil::reserve(&f, size);
                    }
                }
                let mut written: u64 = 0;
                loop {
                    let n = entry
                        .read(&mut buf)
                        .map_err(|e| PkgError::new(ErrorKind::Archive, format!("archive entry '{raw}': {e}")))?;
                    if n == 0 {
                        break;
                    }
                    written += n as u64;
                    if written > remaining {
                        return err(
                            ErrorKind::Archive,
                            format!(
                                "archive refused: it unpacks to more than {} bytes (decompression bomb?)",
                                limits.max_bytes
                            ),
                        );
                    }
                    f.write_all(&buf[..n]).map_err(|e| io_err("write", &target, &e))?;
                }
                out.bytes += written;
                set_mode(&target, if mode & 0o111 != 0 { 0o755 } else { 0o644 })?;
            }
            tar::EntryType::Directory => {
                if dirs.insert(parts.clone()) {
                    make_dir(&target)?;
                }
            }
            tar::EntryType::Symlink => {
                let t = entry
                    .link_name_bytes()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                if t.starts_with('/') {
                    return refuse(&raw, &format!("absolute symlink target '{t}'"));
                }
                if !link_stays_inside(&parts, &t) {
                    return refuse(&raw, &format!("symlink target '{t}' leaves the package"));
                }
                make_symlink(&t, &target)?;
                links.insert(parts.clone());
            }
            tar::EntryType::Link => return refuse(&raw, "hard links are not allowed"),
            tar::EntryType::Char | tar::EntryType::Block => return refuse(&raw, "device files are not allowed"),
            tar::EntryType::Fifo => return refuse(&raw, "FIFOs are not allowed"),
            other => return refuse(&raw, &format!("entry type {other:?} is not allowed")),
        }
    }
    Ok(out)
}

fn make_dir(d: &Path) -> Result<()> {
    match fs::symlink_metadata(d) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => err(
            ErrorKind::Archive,
            format!("archive refused: '{}' is both a file or link and a folder", d.display()),
        ),
        Err(_) => fs::create_dir(d).map_err(|e| io_err("create the folder", d, &e)),
    }
}

#[cfg(unix)]
fn make_symlink(target: &str, at: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, at).map_err(|e| io_err("create the symlink", at, &e))
}

#[cfg(not(unix))]
fn make_symlink(_target: &str, at: &Path) -> Result<()> {
    err(
        ErrorKind::Archive,
        format!("symlinks are not supported on this system ('{}')", at.display()),
    )
}

#[cfg(unix)]
fn set_mode(p: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).map_err(|e| io_err("set permissions on", p, &e))
}

#[cfg(not(unix))]
fn set_mode(_p: &Path, _mode: u32) -> Result<()> {
    Ok(())
}

/// Reads `apsi-package.toml` out of an archive without unpacking anything
/// else (for the registry tool). Caps the manifest at 64 KiB.
pub fn read_manifest_text(archive: &Path) -> Result<String> {
    let file = fs::File::open(archive).map_err(|e| io_err("open", archive, &e))?;
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let entries = ar
        .entries()
        .map_err(|e| PkgError::new(ErrorKind::Archive, format!("not a tar archive: {e}")))?;
    for entry in entries {
        let entry = entry.map_err(|e| PkgError::new(ErrorKind::Archive, format!("corrupt tar archive: {e}")))?;
        let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let mut parts = path.split('/').filter(|p| !p.is_empty() && *p != ".");
        let (_, second, third) = (parts.next(), parts.next(), parts.next());
        if second == Some(MANIFEST) && third.is_none() {
            let mut s = String::new();
            entry
                .take(64 << 10)
                .read_to_string(&mut s)
                .map_err(|e| io_err("read the manifest in", archive, &e))?;
            return Ok(s);
        }
    }
    err(
        ErrorKind::Archive,
        format!("'{}' has no {MANIFEST} in its package folder", archive.display()),
    )
}

/// Packs `dir` into a gzip'd tar at `out` with every entry under `prefix/`:
/// files sorted, owners and times zeroed, so the same input gives the same
/// bytes. Relative symlinks are kept; anything else but files and folders
/// is refused. Returns the unpacked size.
pub fn pack(dir: &Path, prefix: &str, out: &Path, level: u32) -> Result<u64> {
    let f = fs::File::create(out).map_err(|e| io_err("create", out, &e))?;
    let gz = flate2::write::GzEncoder::new(
        std::io::BufWriter::with_capacity(1 << 20, f),
        flate2::Compression::new(level),
    );
    let mut b = tar::Builder::new(gz);
    let mut total = 0u64;
    let mut files = Vec::new();
    walk(dir, PathBuf::new(), &mut files)?;
    files.sort();
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Directory);
    h.set_mode(0o755);
    h.set_size(0);
    h.set_mtime(0);
    b.append_data(&mut h, format!("{prefix}/"), std::io::empty())
        .map_err(|e| io_err("write", out, &e))?;
    for rel in files {
        let full = dir.join(&rel);
        let meta = fs::symlink_metadata(&full).map_err(|e| io_err("read", &full, &e))?;
        let name = format!("{prefix}/{}", rel.to_string_lossy().replace('\\', "/"));
        let mut h = tar::Header::new_gnu();
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        if meta.file_type().is_symlink() {
            let t = fs::read_link(&full).map_err(|e| io_err("read the link", &full, &e))?;
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_mode(0o777);
            h.set_size(0);
            b.append_link(&mut h, &name, &t).map_err(|e| io_err("write", out, &e))?;
        } else if meta.is_dir() {
            h.set_entry_type(tar::EntryType::Directory);
            h.set_mode(0o755);
            h.set_size(0);
            b.append_data(&mut h, format!("{name}/"), std::io::empty())
                .map_err(|e| io_err("write", out, &e))?;
        } else if meta.is_file() {
            h.set_entry_type(tar::EntryType::Regular);
            h.set_mode(if is_exec(&meta) { 0o755 } else { 0o644 });
            h.set_size(meta.len());
            total += meta.len();
            let src = fs::File::open(&full).map_err(|e| io_err("open", &full, &e))?;
            b.append_data(&mut h, &name, src)
                .map_err(|e| io_err("write", out, &e))?;
        } else {
            return err(
                ErrorKind::Usage,
                format!(
                    "'{}' is not a file, folder or symlink; packages hold only those",
                    full.display()
                ),
            );
        }
    }
    let gz = b.into_inner().map_err(|e| io_err("write", out, &e))?;
    let mut w = gz.finish().map_err(|e| io_err("write", out, &e))?;
    w.flush().map_err(|e| io_err("write", out, &e))?;
    Ok(total)
}

#[cfg(unix)]
fn is_exec(m: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_exec(_m: &fs::Metadata) -> bool {
    false
}

fn walk(root: &Path, rel: PathBuf, out: &mut Vec<PathBuf>) -> Result<()> {
    let here = root.join(&rel);
    let rd = fs::read_dir(&here).map_err(|e| io_err("read the folder", &here, &e))?;
    for ent in rd {
        let ent = ent.map_err(|e| io_err("read the folder", &here, &e))?;
        let r = rel.join(ent.file_name());
        let ft = ent.file_type().map_err(|e| io_err("read", &ent.path(), &e))?;
        out.push(r.clone());
        if ft.is_dir() {
            walk(root, r, out)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn component_rules() {
        assert!(checked_components("a-1.0.0/x.apsi", "a-1.0.0").is_ok());
        assert!(checked_components("./a-1.0.0/./x", "a-1.0.0").is_ok());
        assert!(checked_components("a-1.0.0/../x", "a-1.0.0").is_err());
        assert!(checked_components("/etc/passwd", "a-1.0.0").is_err());
        assert!(checked_components("b-1.0.0/x", "a-1.0.0").is_err());
        assert!(checked_components("a-1.0.0/.apsi-complete", "a-1.0.0").is_err());
    }

    #[test]
    fn link_rules() {
        assert!(link_stays_inside(&p(&["pkg", "lib", "libx.so"]), "libx.so.12"));
        assert!(link_stays_inside(&p(&["pkg", "lib", "a"]), "../b"));
        assert!(!link_stays_inside(&p(&["pkg", "a"]), ".."));
        assert!(!link_stays_inside(&p(&["pkg", "a"]), "../other"));
        assert!(!link_stays_inside(&p(&["pkg", "a"]), "/etc"));
        assert!(!link_stays_inside(&p(&["pkg", "a"]), ""));
    }
}
