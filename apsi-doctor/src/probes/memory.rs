//! Memory: total and available (`/proc/meminfo`), and a cgroup limit (v2
//! `memory.max`, v1 `memory.limit_in_bytes`) when one is lower.

use crate::check::Check;
use crate::env::{field, Env};
use crate::fmt::bytes;

/// Below this much available memory doctor warns.
pub const LOW: u64 = 512 << 20;

pub fn probe(env: &Env) -> Check {
    let text = env.read(&env.proc("meminfo")).unwrap_or_default();
    let kb = |k: &str| {
        field(&text, k)
            .and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|v| v.saturating_mul(1024))
    };
    let (Some(total), available) = (kb("MemTotal"), kb("MemAvailable")) else {
        return Check::warn("memory", "cannot read the memory size")
            .fix("doctor reads /proc/meminfo; check that /proc is mounted");
    };
    let limit = cgroup_limit(env).filter(|l| *l < total);
    let usable = limit.unwrap_or(total);
    let mut summary = format!("{} total", bytes(total));
    if let Some(a) = available {
        summary.push_str(&format!(", {} available", bytes(a)));
    }
    if let Some(l) = limit {
        summary.push_str(&format!(", cgroup limit {}", bytes(l)));
    }
    let c = Check::ok("memory", summary)
        .detail("total_bytes", total)
        .detail_opt("available_bytes", available)
        .detail_opt("cgroup_limit_bytes", limit)
        .detail("usable_bytes", usable);
    match available {
        Some(a) if a.min(usable) < LOW => Check { status: crate::Status::Warn, ..c }
            .fix("less than 512 MiB is free: large tensors will fail to allocate; close other programs or raise the container's memory limit"),
        _ => c,
    }
}

fn cgroup_limit(env: &Env) -> Option<u64> {
    let cg = env.read(&env.proc("self/cgroup")).unwrap_or_default();
    for line in cg.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim().trim_start_matches('/');
        let files: Vec<std::path::PathBuf> = if ctrls.is_empty() {
            [path, ""]
                .iter()
                .map(|d| env.sys("fs/cgroup").join(d).join("memory.max"))
                .collect()
        } else if ctrls.split(',').any(|c| c == "memory") {
            [path, ""]
                .iter()
                .map(|d| env.sys("fs/cgroup/memory").join(d).join("memory.limit_in_bytes"))
                .collect()
        } else {
            continue;
        };
        for f in files {
            if let Some(t) = env.read(&f) {
                // "max", or v1's "unlimited" (a number near 2^63).
                return t.trim().parse::<u64>().ok().filter(|v| *v < (1 << 60));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn meminfo_and_a_v2_limit() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("proc");
        fs::create_dir_all(p.join("self")).unwrap();
        fs::write(
            p.join("meminfo"),
            "MemTotal:       16384000 kB\nMemFree:  1 kB\nMemAvailable:   8192000 kB\n",
        )
        .unwrap();
        fs::write(p.join("self/cgroup"), "0::/\n").unwrap();
        let env = Env::system(true).with_roots(Some(p.clone()), Some(t.path().join("sys")));
        let c = probe(&env);
        assert_eq!(c.details["total_bytes"], 16384000u64 * 1024);
        assert_eq!(c.details["available_bytes"], 8192000u64 * 1024);
        assert!(c.details.get("cgroup_limit_bytes").is_none());
        assert_eq!(c.status, crate::Status::Ok);
        fs::create_dir_all(t.path().join("sys/fs/cgroup")).unwrap();
        fs::write(t.path().join("sys/fs/cgroup/memory.max"), "268435456\n").unwrap();
        let c = probe(&env);
        assert_eq!(c.details["cgroup_limit_bytes"], 268435456u64);
        assert_eq!(c.status, crate::Status::Warn);
        assert!(c.fix.is_some());
        fs::write(t.path().join("sys/fs/cgroup/memory.max"), "max\n").unwrap();
        assert!(probe(&env).details.get("cgroup_limit_bytes").is_none());
    }
}
