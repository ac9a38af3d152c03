//! The record of every file of an extracted package, written beside the
//! completion marker when the archive is extracted and checked before a
//! backend is loaded and by `apsi pkg verify`: an edited, removed, added or
//! retyped file is found, not loaded.
//!
//! The record lives at the root of the store tree (`store/pkg/<sha256>/`),
//! outside the package folder, so no archive entry can be named like it.

use crate::digest::sha256_file;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The record's file name at the root of a store tree.
pub const RECORD: &str = ".apsi-files.json";
/// The completion marker at the root of a store tree (written by the client).
pub const MARKER: &str = ".apsi-complete";

/// One path of the package.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Entry {
    File { sha256: String, size: u64 },
    Link { target: String },
    Dir,
}

/// Every path under the tree (relative, `/`-separated), but the marker and the record.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Record {
    pub version: u32,
    pub files: BTreeMap<String, Entry>,
}

/// Hashes everything under `tree` (symlinks are recorded, never followed).
pub fn scan(tree: &Path) -> std::io::Result<Record> {
    let mut rec = Record {
        version: 1,
        files: BTreeMap::new(),
    };
    walk(tree, "", &mut rec.files)?;
    Ok(rec)
}

fn walk(dir: &Path, rel: &str, out: &mut BTreeMap<String, Entry>) -> std::io::Result<()> {
    let mut names: Vec<_> = std::fs::read_dir(dir)?.collect::<std::io::Result<Vec<_>>>()?;
    names.sort_by_key(|e| e.file_name());
    for e in names {
        let name = e.file_name().to_string_lossy().into_owned();
        if rel.is_empty() && (name == RECORD || name == MARKER) {
            continue;
        }
        let path = e.path();
        let key = if rel.is_empty() { name } else { format!("{rel}/{name}") };
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path)?.to_string_lossy().into_owned();
            out.insert(key, Entry::Link { target });
        } else if meta.is_dir() {
            out.insert(key.clone(), Entry::Dir);
            walk(&path, &key, out)?;
        } else {
            let (sha256, size) = sha256_file(&path)?;
            out.insert(key, Entry::File { sha256, size });
        }
    }
    Ok(())
}

/// Writes the record of `tree` (called once, when it is extracted).
pub fn write(tree: &Path) -> std::io::Result<()> {
    let rec = scan(tree)?;
    let bytes = serde_json::to_vec_pretty(&rec).map_err(std::io::Error::other)?;
    std::fs::write(tree.join(RECORD), bytes)
}

/// Whether the tree has a record at all (trees extracted by an older
/// client have none; installing the package again writes it).
pub fn has_record(tree: &Path) -> bool {
    tree.join(RECORD).is_file()
}

/// What differs between the tree and its record, one line per path
/// (empty when everything matches).
pub fn check(tree: &Path) -> Vec<String> {
    let text = match std::fs::read(tree.join(RECORD)) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return vec!["no record of its files (extracted by an older apsi)".into()]
        }
        Err(e) => return vec![format!("cannot read the record of its files: {e}")],
    };
    let want: Record = match serde_json::from_slice(&text) {
        Ok(r) => r,
        Err(e) => return vec![format!("the record of its files is damaged: {e}")],
    };
    let have = match scan(tree) {
        Ok(r) => r,
        Err(e) => return vec![format!("cannot read its files: {e}")],
    };
    let mut problems = Vec::new();
    for (path, w) in &want.files {
        match have.files.get(path) {
            None => problems.push(format!("{path}: removed")),
            Some(h) if h == w => {}
            Some(h) => problems.push(match (w, h) {
                (Entry::File { .. }, Entry::File { .. }) => format!("{path}: modified"),
                (Entry::Link { target: a }, Entry::Link { target: b }) => {
                    format!("{path}: link changed from '{a}' to '{b}'")
                }
                _ => format!("{path}: replaced by a {}", kind_name(h)),
            }),
        }
    }
    for (path, h) in &have.files {
        if !want.files.contains_key(path) {
            problems.push(format!("{path}: added ({})", kind_name(h)));
        }
    }
    problems
}

/// Whether one file (relative to the tree) still has its recorded hash;
/// cheaper than [`check`] when only that file is about to be read.
pub fn check_file(tree: &Path, rel: &str) -> Result<(), String> {
    let text = std::fs::read(tree.join(RECORD))
        .map_err(|_| "no record of its files (extracted by an older apsi)".to_string())?;
    let want: Record = serde_json::from_slice(&text).map_err(|e| format!("the record of its files is damaged: {e}"))?;
    let Some(Entry::File { sha256, size }) = want.files.get(rel) else {
        return Err(format!("{rel}: not in the record of its files"));
    };
    match sha256_file(&tree.join(rel)) {
        Ok((h, n)) if &h == sha256 && n == *size => Ok(()),
        Ok(_) => Err(format!("{rel}: modified")),
        Err(e) => Err(format!("{rel}: cannot be read: {e}")),
    }
}

fn kind_name(e: &Entry) -> &'static str {
    match e {
        Entry::File { .. } => "file",
        Entry::Link { .. } => "link",
        Entry::Dir => "folder",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x-1.0.0");
        std::fs::create_dir_all(p.join("lib")).unwrap();
        std::fs::write(p.join("apsi-package.toml"), "name = \"x\"\n").unwrap();
        std::fs::write(p.join("lib").join("a.so"), b"\x7fELF....").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("a.so", p.join("lib").join("a.so.1")).unwrap();
        std::fs::write(t.path().join(MARKER), "done").unwrap();
        write(t.path()).unwrap();
        t
    }

    #[test]
    fn an_untouched_tree_checks_clean() {
        let t = tree();
        assert!(check(t.path()).is_empty(), "{:?}", check(t.path()));
        // The marker and the record are not part of the package.
        assert!(!scan(t.path()).unwrap().files.keys().any(|k| k.contains(".apsi")));
    }

    #[test]
    fn each_kind_of_change_is_named() {
        let t = tree();
        let p = t.path().join("x-1.0.0");
        std::fs::write(p.join("lib").join("a.so"), b"\x7fELF...!").unwrap();
        std::fs::write(p.join("extra.py"), b"print(1)").unwrap();
        std::fs::remove_file(p.join("apsi-package.toml")).unwrap();
        let got = check(t.path());
        assert!(got.contains(&"x-1.0.0/lib/a.so: modified".to_string()), "{got:?}");
        assert!(got.contains(&"x-1.0.0/extra.py: added (file)".to_string()), "{got:?}");
        assert!(
            got.contains(&"x-1.0.0/apsi-package.toml: removed".to_string()),
            "{got:?}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_redirected_link_is_named() {
        let t = tree();
        let l = t.path().join("x-1.0.0").join("lib").join("a.so.1");
        std::fs::remove_file(&l).unwrap();
        std::os::unix::fs::symlink("/tmp/evil.so", &l).unwrap();
        assert_eq!(
            check(t.path()),
            vec!["x-1.0.0/lib/a.so.1: link changed from 'a.so' to '/tmp/evil.so'".to_string()]
        );
    }

    #[test]
    fn a_missing_or_damaged_record_is_a_problem() {
        let t = tree();
        std::fs::write(t.path().join(RECORD), "{").unwrap();
        assert!(check(t.path())[0].contains("damaged"));
        std::fs::remove_file(t.path().join(RECORD)).unwrap();
        assert!(check(t.path())[0].contains("no record"));
    }
}
