//! The content-addressed store under `$APSI_HOME/store/`: downloads named by
//! their sha256, extracted trees beside them, and the lock that serialises
//! processes. Every step leaves the store usable if the process dies there:
//! `.partial` downloads resume, extraction happens in `tmp/` and becomes
//! visible only by an atomic rename after its completion marker is written,
//! and leftovers are cleared by the next holder of the lock.

use crate::archive::{self, Limits, MARKER};
use crate::digest::sha256_file;
use crate::error::{err, io_err, ErrorKind, PkgError, Result};
use fs4::fs_std::FileExt;
use std::fs;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct Store {
    pub dir: PathBuf,
}

/// The held store lock; released on drop (and by the kernel if the process dies).
pub struct StoreLock {
    file: fs::File,
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
        let _ = FileExt::unlock(&self.file);
    }
}

/// The lock wait, from `APSI_LOCK_TIMEOUT` (seconds) or 60 s.
pub fn lock_timeout_from_env() -> Duration {
    std::env::var("APSI_LOCK_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e6)
        .map(Duration::from_secs_f64)
        .unwrap_or(Duration::from_secs(60))
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Store {
        Store { dir: dir.into() }
    }

    pub fn archive_path(&self, cksum: &str) -> PathBuf {
        self.dir.join("dl").join(format!("{cksum}.tar.gz"))
    }
    pub fn partial_path(&self, cksum: &str) -> PathBuf {
        self.dir.join("dl").join(format!("{cksum}.partial"))
    }
    pub fn tree_path(&self, cksum: &str) -> PathBuf {
        self.dir.join("pkg").join(cksum)
    }

    /// Takes the store lock, waiting up to `timeout`. A lock left by a dead
    /// process is free (advisory locks die with their process). The error
    /// names the holder's pid, which the holder writes into the lock file.
    pub fn lock(&self, timeout: Duration) -> Result<StoreLock> {
        fs::create_dir_all(&self.dir).map_err(|e| io_err("create the folder", &self.dir, &e))?;
        let path = self.dir.join(".lock");
        let mut file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io_err("open the store lock", &path, &e))?;
        let start = Instant::now();
        loop {
            match FileExt::try_lock_exclusive(&file) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(io_err("lock", &path, &e)),
            }
            if start.elapsed() >= timeout {
                let mut holder = String::new();
                let _ = fs::File::open(&path).and_then(|mut f| f.read_to_string(&mut holder));
                let who = match holder.trim() {
                    "" => "another process".to_string(),
                    pid => format!("process {pid}"),
                };
                return Err(PkgError::new(
                    ErrorKind::Lock,
                    format!(
                        "the package store '{}' is locked by {who}; waited {:.1} s",
                        self.dir.display(),
                        timeout.as_secs_f64()
                    ),
                )
                .hint(
                    "wait for that `apsi pkg` to finish, or stop it; set APSI_LOCK_TIMEOUT (seconds) to wait longer",
                ));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = write!(file, "{}", std::process::id());
        let _ = file.flush();
        let lock = StoreLock { file };
        self.clear_leftovers();
        Ok(lock)
    }

    /// Removes extraction folders left by a crash (only called with the lock held).
    fn clear_leftovers(&self) {
        if let Ok(rd) = fs::read_dir(self.dir.join("tmp")) {
            for e in rd.flatten() {
                let _ = fs::remove_dir_all(e.path());
            }
        }
    }

    /// The verified archive for `cksum`, if present; a corrupt one is removed.
    pub fn verified_archive(&self, cksum: &str, size: u64) -> Result<Option<PathBuf>> {
        let p = self.archive_path(cksum);
        match fs::metadata(&p) {
            Err(_) => return Ok(None),
            Ok(m) if m.len() != size => {}
            Ok(_) => {
                let (h, _) = sha256_file(&p).map_err(|e| io_err("read", &p, &e))?;
                if h == cksum {
                    return Ok(Some(p));
                }
            }
        }
        fs::remove_file(&p).map_err(|e| io_err("remove the corrupt store entry", &p, &e))?;
        Ok(None)
    }

    /// Moves a finished `.partial` download into place after its length and
    /// hash (computed while downloading) match the signed index.
    pub fn commit_download(&self, cksum: &str, size: u64, got_sha: &str) -> Result<PathBuf> {
        let partial = self.partial_path(cksum);
        let len = fs::metadata(&partial).map(|m| m.len()).unwrap_or(0);
        if len != size || got_sha != cksum {
            let _ = fs::remove_file(&partial);
            return err(
                ErrorKind::Integrity,
                format!("checksum mismatch: expected {size} bytes with sha256 {cksum}, found {len} bytes with sha256 {got_sha}; nothing was unpacked"),
            );
        }
        let dest = self.archive_path(cksum);
        fs::rename(&partial, &dest).map_err(|e| io_err("move the download into", &dest, &e))?;
        Ok(dest)
    }

    /// The extracted tree for `cksum` (archive already verified), extracting
    /// it if needed. Returns the tree and whether this call extracted it. A
    /// tree whose files no longer match their record (edited after install,
    /// or extracted by a client that kept none) is extracted afresh.
    pub fn ensure_tree(&self, cksum: &str, archive: &Path, prefix: &str, limits: Limits) -> Result<(PathBuf, bool)> {
        let tree = self.tree_path(cksum);
        if tree.join(MARKER).is_file() && apsi_backend::files::check(&tree).is_empty() {
            return Ok((tree, false));
        }
        if tree.exists() {
            fs::remove_dir_all(&tree).map_err(|e| io_err("remove the incomplete store entry", &tree, &e))?;
        }
        let tmp_root = self.dir.join("tmp");
        fs::create_dir_all(&tmp_root).map_err(|e| io_err("create the folder", &tmp_root, &e))?;
        let tmp = crate::fsutil::temp_sibling(&tmp_root.join(cksum), "x");
        fs::create_dir(&tmp).map_err(|e| io_err("create the folder", &tmp, &e))?;
        let result = (|| -> Result<()> {
            let got = archive::extract(archive, &tmp, prefix, limits)?;
            if !tmp.join(prefix).join(archive::MANIFEST).is_file() {
                return err(
                    ErrorKind::Archive,
                    format!("the archive has no {prefix}/{}", archive::MANIFEST),
                );
            }
            apsi_backend::files::write(&tmp).map_err(|e| io_err("record the files of", &tmp, &e))?;
            let marker = tmp.join(MARKER);
            fs::write(&marker, format!("{cksum}\n{prefix}\n{}\n{}\n", got.entries, got.bytes))
                .map_err(|e| io_err("write", &marker, &e))?;
            if let Some(parent) = tree.parent() {
                fs::create_dir_all(parent).map_err(|e| io_err("create the folder", parent, &e))?;
            }
            fs::rename(&tmp, &tree).map_err(|e| io_err("move the extracted package into", &tree, &e))
        })();
        if let Err(e) = result {
            let _ = fs::remove_dir_all(&tmp);
            return Err(e);
        }
        Ok((tree, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_times_out_naming_the_holder() {
        let t = tempfile::tempdir().unwrap();
        let s = Store::new(t.path());
        let held = s.lock(Duration::from_secs(1)).unwrap();
        let e = match s.lock(Duration::from_millis(50)) {
            Err(e) => e,
            Ok(_) => panic!("lock was not exclusive"),
        };
        assert!(e.message.contains(&format!("process {}", std::process::id())), "{e}");
        drop(held);
        assert!(s.lock(Duration::from_millis(50)).is_ok());
    }

    #[test]
    fn corrupt_archives_are_removed() {
        let t = tempfile::tempdir().unwrap();
        let s = Store::new(t.path());
        let sum = crate::digest::sha256_hex(b"good");
        std::fs::create_dir_all(t.path().join("dl")).unwrap();
        std::fs::write(s.archive_path(&sum), b"evil").unwrap();
        assert!(s.verified_archive(&sum, 4).unwrap().is_none());
        assert!(!s.archive_path(&sum).exists());
        std::fs::write(s.archive_path(&sum), b"good").unwrap();
        assert!(s.verified_archive(&sum, 4).unwrap().is_some());
    }

    #[test]
    fn commit_refuses_a_mismatch() {
        let t = tempfile::tempdir().unwrap();
        let s = Store::new(t.path());
        let sum = crate::digest::sha256_hex(b"good");
        std::fs::create_dir_all(t.path().join("dl")).unwrap();
        std::fs::write(s.partial_path(&sum), b"evil").unwrap();
        let e = s
            .commit_download(&sum, 4, &crate::digest::sha256_hex(b"evil"))
            .unwrap_err();
        assert!(e.message.contains("checksum mismatch"));
        assert!(!s.partial_path(&sum).exists() && !s.archive_path(&sum).exists());
    }
}
