//! Disk: free space on the file system that holds the Apsi home (or would:
//! its nearest existing parent), and whether the home is writable.

use crate::check::Check;
use crate::env::Env;
use crate::fmt::bytes;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Below this much free space doctor warns.
pub const LOW: u64 = 1 << 30;

pub fn probe(env: &Env) -> Check {
    let Some(home) = env.home.as_deref() else {
        return Check::error("disk", "no Apsi home: neither APSI_HOME nor HOME is set")
            .fix("set APSI_HOME to a folder apsi may write to (packages, caches, the cache key live there)");
    };
    let exists = home.is_dir();
    let Some(at) = home.ancestors().find(|p| p.exists()) else {
        return Check::error("disk", format!("no part of '{}' exists", home.display()))
            .fix("set APSI_HOME to a folder on a mounted file system");
    };
    if !at.is_dir() {
        let what = if at == home {
            format!("the Apsi home '{}' is a file, not a folder", home.display())
        } else {
            format!(
                "the Apsi home '{}' cannot be created: '{}' is a file",
                home.display(),
                at.display()
            )
        };
        return Check::error("disk", what)
            .detail("home", home.display().to_string())
            .fix("set APSI_HOME to a folder (or a path whose existing part is a folder), or move that file away");
    }
    let Some((free, total)) = statvfs(at) else {
        return Check::warn("disk", format!("cannot read the free space of '{}'", at.display()))
            .detail("home", home.display().to_string())
            .fix("check that the file system is mounted and readable");
    };
    let writable = writable(at);
    let summary = format!(
        "{} free of {} at {}{}",
        bytes(free),
        bytes(total),
        home.display(),
        if exists { "" } else { " (not created yet)" }
    );
    let c = Check::ok("disk", summary)
        .detail("home", home.display().to_string())
        .detail("home_exists", exists)
        .detail("free_bytes", free)
        .detail("total_bytes", total)
        .detail("writable", writable);
    if !writable {
        return Check {
            status: crate::Status::Error,
            ..c
        }
        .fix(format!(
            "apsi cannot write to '{}': fix its owner or permissions, or set APSI_HOME to a folder you own",
            at.display()
        ));
    }
    if free < LOW {
        return Check { status: crate::Status::Warn, ..c }
            .fix("less than 1 GiB is free there: package installs and caches may fail; free some space or set APSI_HOME elsewhere");
    }
    c
}

fn statvfs(p: &Path) -> Option<(u64, u64)> {
    let c = CString::new(p.as_os_str().as_bytes()).ok()?;
    // SAFETY: an all-zero statvfs is a valid value to be filled in.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid C string and `s` a valid out-pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    let unit = s.f_frsize as u64;
    Some((
        (s.f_bavail as u64).saturating_mul(unit),
        (s.f_blocks as u64).saturating_mul(unit),
    ))
}

fn writable(p: &Path) -> bool {
    let Ok(c) = CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid C string; access only checks permissions.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_home_not_yet_created_is_measured_at_its_parent() {
        let t = tempfile::tempdir().unwrap();
        let mut env = Env::system(true);
        env.home = Some(t.path().join("not-yet/.apsi"));
        let c = probe(&env);
        assert_ne!(c.status, crate::Status::Error, "{c:?}");
        assert_eq!(c.details["home_exists"], false);
        assert!(c.details["total_bytes"].as_u64().unwrap() > 0);
        env.home = None;
        assert_eq!(probe(&env).status, crate::Status::Error);
    }

    #[test]
    fn a_home_that_is_a_file_is_an_error() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("home-file");
        std::fs::write(&file, "x").unwrap();
        let mut env = Env::system(true);
        env.home = Some(file.clone());
        let c = probe(&env);
        assert_eq!(c.status, crate::Status::Error, "{c:?}");
        assert!(c.summary.contains("is a file, not a folder"), "{c:?}");
        env.home = Some(file.join("below"));
        let c = probe(&env);
        assert_eq!(c.status, crate::Status::Error, "{c:?}");
        assert!(c.summary.contains("cannot be created"), "{c:?}");
    }
}
