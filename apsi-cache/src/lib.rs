//! Apsi's signed on-disk caches, outside the interpreter core: the per-user
//! key (`$APSI_HOME/cache.key`, [`key`]) that signs every cache entry, and
//! the compile cache ([`compile`]). The core only turns a compiled program
//! into bytes and back (`apsi_core::serial`); reading, writing, signing and
//! verifying happen here.

pub mod compile;
pub mod key;

pub use compile::{CompileCache, Entry, FileRecord, Hit, Known, Lookup};

/// Writes `bytes` to a new file in `dir` (mode 0600) named after `stem`,
/// this process and a counter, for the caller to move into place (a
/// rename or a link, so no reader ever sees a file half-written). On an
/// error nothing is left behind.
pub(crate) fn write_temp(dir: &std::path::Path, stem: &str, bytes: &[u8]) -> std::io::Result<std::path::PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".{stem}.{}.{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes));
    match written {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}
