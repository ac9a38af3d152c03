//! Small file-system helpers: atomic writes.

use crate::error::{io_err, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A sibling temporary name unique to this process and call.
pub fn temp_sibling(path: &Path, tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{tag}.{}.{n}", std::process::id()))
}

/// Writes `bytes` to a temporary sibling, syncs it, then renames it over `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| io_err("create the folder", parent, &e))?;
    }
    let tmp = temp_sibling(path, "tmp");
    let res = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = res {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_err("write", path, &e));
    }
    Ok(())
}
