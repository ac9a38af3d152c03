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

/// Asks the file system to reserve `len` bytes for `f` without changing its
/// length (Linux `fallocate` with `FALLOC_FL_KEEP_SIZE`), so that the writes
/// that follow skip per-page block allocation. Best effort: a file system
/// that cannot reserve is simply written the ordinary way.
pub fn reserve(f: &std::fs::File, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        if let Ok(len) = libc::off_t::try_from(len) {
            if len > 0 {
                // SAFETY: a valid open descriptor; fallocate only reads its arguments.
                let _ = unsafe { libc::fallocate(f.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, len) };
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (f, len);
    }
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
