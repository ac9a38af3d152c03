//! Where the probes look: the `/proc` and `/sys` roots (replaced by fixture
//! folders in tests), the Apsi home, and whether the network may be used.

use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Env {
    /// What `/proc` is (`--proc-root`, `APSI_DOCTOR_PROC`).
    pub proc_root: PathBuf,
    /// What `/sys` is (`--sys-root`, `APSI_DOCTOR_SYS`).
    pub sys_root: PathBuf,
    /// `$APSI_HOME`, else `~/.apsi`; `None` when neither is known.
    pub home: Option<PathBuf>,
    /// `--offline`: no probe opens a network connection.
    pub offline: bool,
    /// Whether the probes look at this machine itself: true unless a root was
    /// replaced. With fixture roots, the probes that would ask the live
    /// machine another way (CPUID, the NVIDIA driver library, `nvidia-smi`)
    /// read only the files under the roots, so a test sees only its fixtures.
    pub live: bool,
}

impl Env {
    /// The real machine: `/proc`, `/sys`, the home from the environment.
    pub fn system(offline: bool) -> Env {
        Env {
            proc_root: "/proc".into(),
            sys_root: "/sys".into(),
            home: home_from_env(),
            offline,
            live: true,
        }
    }

    /// Replaces the roots; `live` becomes false when either differs from the real one.
    pub fn with_roots(mut self, proc_root: Option<PathBuf>, sys_root: Option<PathBuf>) -> Env {
        if let Some(p) = proc_root {
            self.proc_root = p;
        }
        if let Some(s) = sys_root {
            self.sys_root = s;
        }
        self.live = self.proc_root == Path::new("/proc") && self.sys_root == Path::new("/sys");
        self
    }

    /// A path under the `/proc` root: `proc("cpuinfo")`.
    pub fn proc(&self, rel: &str) -> PathBuf {
        self.proc_root.join(rel)
    }

    /// A path under the `/sys` root.
    pub fn sys(&self, rel: &str) -> PathBuf {
        self.sys_root.join(rel)
    }

    /// Reads a small text file (at most 1 MiB), `None` when it cannot be read.
    pub fn read(&self, path: &Path) -> Option<String> {
        read_small(path)
    }
}

/// `$APSI_HOME`, else `$HOME/.apsi`.
pub fn home_from_env() -> Option<PathBuf> {
    if let Some(h) = std::env::var_os("APSI_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(h));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".apsi"))
}

/// Reads at most 1 MiB of a text file (files under `/proc` and `/sys` report
/// no length, so this reads until the end or the cap).
pub fn read_small(path: &Path) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    let mut buf = Vec::new();
    f.take(1 << 20).read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// `key: value` lines (as in `/proc/cpuinfo`, `/proc/meminfo`, the NVIDIA
/// driver's `information` files): the first value for `key`, trimmed.
pub fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_trimmed_and_first_wins() {
        let t = "model name\t: AMD EPYC\nflags\t\t: a b\nmodel name\t: other\nMemTotal:       16 kB\n";
        assert_eq!(field(t, "model name"), Some("AMD EPYC"));
        assert_eq!(field(t, "flags"), Some("a b"));
        assert_eq!(field(t, "MemTotal"), Some("16 kB"));
        assert_eq!(field(t, "nope"), None);
    }

    #[test]
    fn replaced_roots_are_not_live() {
        let e = Env::system(true);
        assert!(e.live);
        let f = e.clone().with_roots(Some("/tmp/x".into()), None);
        assert!(!f.live);
        assert_eq!(f.proc("cpuinfo"), Path::new("/tmp/x/cpuinfo"));
        assert_eq!(f.sys("bus"), Path::new("/sys/bus"));
        assert!(e.with_roots(Some("/proc".into()), Some("/sys".into())).live);
    }
}
