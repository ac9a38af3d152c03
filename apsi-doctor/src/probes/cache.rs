//! The per-user cache key (`$APSI_HOME/cache.key`, which signs compile- and
//! data-cache entries: it must be readable by its owner only) and the size
//! of the compile cache (`$APSI_HOME/cache/compile/`).

use crate::check::Check;
use crate::env::Env;
use crate::fmt::bytes;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

pub fn key_probe(env: &Env) -> Check {
    let Some(home) = env.home.as_deref() else {
        return Check::skip("cache-key", "no Apsi home (APSI_HOME and HOME unset)");
    };
    let path = home.join("cache.key");
    let shown = path.display().to_string();
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Check::ok(
                "cache-key",
                format!("{shown} does not exist yet (apsi creates it, mode 0600, on first use)"),
            )
            .detail("path", shown)
            .detail("exists", false);
        }
        Err(e) => {
            return Check::error("cache-key", format!("cannot read {shown}: {e}"))
                .detail("path", shown)
                .fix("check the permissions of the Apsi home folder");
        }
    };
    let mode = meta.mode() & 0o7777;
    // SAFETY: geteuid has no failure mode.
    let me = unsafe { libc::geteuid() };
    let c = Check::ok("cache-key", format!("{shown}: mode {mode:04o}, {} bytes", meta.len()))
        .detail("path", shown.clone())
        .detail("exists", true)
        .detail("mode", format!("{mode:04o}"))
        .detail("size", meta.len())
        .detail("owner_uid", meta.uid());
    if meta.file_type().is_symlink() || !meta.is_file() {
        return Check {
            status: crate::Status::Error,
            summary: format!("{shown} is not a regular file"),
            ..c
        }
        .fix(format!(
            "remove {shown}; apsi makes a new key (cached entries are then rebuilt)"
        ));
    }
    if meta.uid() != me {
        return Check {
            status: crate::Status::Error,
            summary: format!("{shown} belongs to another user (uid {})", meta.uid()),
            ..c
        }
        .fix(format!(
            "remove {shown} (apsi makes a new one), or `chown $(id -u) {shown}`"
        ));
    }
    if mode & 0o077 != 0 {
        return Check { status: crate::Status::Error, summary: format!("{shown} is open to others (mode {mode:04o})"), ..c }
            .fix(format!("chmod 600 {shown}   (anyone who can read the key can forge cache entries; consider removing it so a new one is made)"));
    }
    if meta.len() == 0 {
        return Check {
            status: crate::Status::Error,
            summary: format!("{shown} is empty"),
            ..c
        }
        .fix(format!("remove {shown}; apsi makes a new key"));
    }
    c
}

/// Most files counted before the size is reported as a lower bound.
const MAX_FILES: usize = 200_000;

pub fn compile_cache_probe(env: &Env) -> Check {
    let Some(home) = env.home.as_deref() else {
        return Check::skip("compile-cache", "no Apsi home (APSI_HOME and HOME unset)");
    };
    let dir = home.join("cache").join("compile");
    let shown = dir.display().to_string();
    if !dir.is_dir() {
        return Check::ok("compile-cache", format!("empty ({shown} does not exist)"))
            .detail("path", shown)
            .detail("bytes", 0)
            .detail("files", 0);
    }
    let (size, files, complete) = du(&dir);
    Check::ok(
        "compile-cache",
        format!(
            "{}{} in {files} files at {shown}",
            if complete { "" } else { "at least " },
            bytes(size)
        ),
    )
    .detail("path", shown)
    .detail("bytes", size)
    .detail("files", files)
    .detail("complete", complete)
}

/// Total size and count of regular files under `dir` (links not followed).
fn du(dir: &Path) -> (u64, usize, bool) {
    let mut stack = vec![dir.to_path_buf()];
    let (mut size, mut files) = (0u64, 0usize);
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let Ok(m) = e.path().symlink_metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            } else if m.is_file() {
                size = size.saturating_add(m.len());
                files += 1;
                if files >= MAX_FILES {
                    return (size, files, false);
                }
            }
        }
    }
    (size, files, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Status;
    use std::os::unix::fs::PermissionsExt;

    fn env(home: &Path) -> Env {
        let mut e = Env::system(true);
        e.home = Some(home.to_path_buf());
        e
    }

    #[test]
    fn cache_key_states() {
        let t = tempfile::tempdir().unwrap();
        let e = env(t.path());
        let c = key_probe(&e);
        assert_eq!((c.status, c.details["exists"].clone()), (Status::Ok, false.into()));
        let k = t.path().join("cache.key");
        std::fs::write(&k, [7u8; 32]).unwrap();
        std::fs::set_permissions(&k, std::fs::Permissions::from_mode(0o600)).unwrap();
        let c = key_probe(&e);
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert_eq!(c.details["mode"], "0600");
        std::fs::set_permissions(&k, std::fs::Permissions::from_mode(0o644)).unwrap();
        let c = key_probe(&e);
        assert_eq!(c.status, Status::Error);
        assert!(c.fix.unwrap().contains("chmod 600"));
        std::fs::remove_file(&k).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &k).unwrap();
        assert_eq!(key_probe(&e).status, Status::Error);
    }

    #[test]
    fn compile_cache_is_summed() {
        let t = tempfile::tempdir().unwrap();
        let e = env(t.path());
        assert_eq!(compile_cache_probe(&e).details["bytes"], 0);
        let d = t.path().join("cache/compile/ab");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("1"), [0u8; 1000]).unwrap();
        std::fs::write(t.path().join("cache/compile/2"), [0u8; 24]).unwrap();
        let c = compile_cache_probe(&e);
        assert_eq!(
            (c.details["bytes"].clone(), c.details["files"].clone()),
            (1024.into(), 2.into())
        );
    }
}
