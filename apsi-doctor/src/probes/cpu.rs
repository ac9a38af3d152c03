//! The processor: model, logical cores, the cores this process may use
//! (affinity from `/proc/self/status`, a cgroup v1 or v2 CPU quota), and the
//! thread count Apsi will pick.

use crate::check::Check;
use crate::env::{field, Env};

pub fn probe(env: &Env) -> Check {
    let cpuinfo = env.read(&env.proc("cpuinfo")).unwrap_or_default();
    let model = ["model name", "Hardware", "Model", "cpu model", "uarch"]
        .iter()
        .find_map(|k| field(&cpuinfo, k))
        .map(str::to_string)
        .or_else(|| arm_part(&cpuinfo));
    let logical = cpuinfo
        .lines()
        .filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor"))
        .count();
    let online = env
        .read(&env.sys("devices/system/cpu/online"))
        .and_then(|s| count_list(s.trim()));
    let logical = if logical > 0 { Some(logical) } else { online };
    let status = env.read(&env.proc("self/status")).unwrap_or_default();
    let allowed_list = field(&status, "Cpus_allowed_list").map(str::to_string);
    let allowed = allowed_list.as_deref().and_then(count_list);
    let quota = cgroup_quota(env);
    let base = match (allowed, logical) {
        (Some(a), Some(l)) => a.min(l),
        (a, l) => a.or(l).unwrap_or(1),
    }
    .max(1);
    let usable = match quota {
        Some(q) if q > 0.0 => base.min((q.ceil() as usize).max(1)),
        _ => base,
    };
    let Some(logical_n) = logical else {
        return Check::warn("cpu", "cannot read the processor's description")
            .detail("cpuinfo", env.proc("cpuinfo").display().to_string())
            .fix("doctor reads /proc/cpuinfo; check that /proc is mounted");
    };
    let mut summary = format!(
        "{}: {usable} usable of {logical_n} logical cores",
        model.as_deref().unwrap_or("unknown model")
    );
    match (quota, &allowed_list) {
        (Some(q), _) => summary.push_str(&format!(" (cgroup quota {q:.2} CPUs)")),
        (None, Some(l)) if allowed.is_some_and(|a| a < logical_n) => summary.push_str(&format!(" (affinity {l})")),
        _ => {}
    }
    Check::ok("cpu", summary)
        .detail_opt("model", model)
        .detail("logical_cores", logical_n)
        .detail_opt("allowed_cpus", allowed_list)
        .detail_opt("allowed_count", allowed)
        .detail_opt("cgroup_quota_cpus", quota)
        .detail("usable_cores", usable)
}

/// Arm's `/proc/cpuinfo` often names only the implementer and part.
fn arm_part(cpuinfo: &str) -> Option<String> {
    let imp = field(cpuinfo, "CPU implementer")?;
    let part = field(cpuinfo, "CPU part")?;
    Some(format!("Arm CPU (implementer {imp}, part {part})"))
}

/// How many CPUs a list like `0-3,8,10-11` names.
pub fn count_list(s: &str) -> Option<usize> {
    let mut n = 0usize;
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.trim().parse::<usize>().ok()?, b.trim().parse::<usize>().ok()?);
                n = n.checked_add(b.checked_sub(a)?.checked_add(1)?)?;
            }
            None => {
                part.parse::<usize>().ok()?;
                n = n.checked_add(1)?;
            }
        }
    }
    (n > 0).then_some(n)
}

/// The CPU quota of this process's cgroup in CPUs (`quota / period`), when
/// one is set: cgroup v2 `cpu.max`, else v1 `cpu.cfs_quota_us`.
pub fn cgroup_quota(env: &Env) -> Option<f64> {
    let cg = env.read(&env.proc("self/cgroup")).unwrap_or_default();
    for line in cg.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim().trim_start_matches('/');
        if ctrls.is_empty() {
            // v2: the path's own folder, else the namespace's root.
            for dir in [path, ""] {
                let f = env.sys("fs/cgroup").join(dir).join("cpu.max");
                if let Some(t) = env.read(&f) {
                    let mut it = t.split_whitespace();
                    let (q, p) = (it.next()?, it.next().unwrap_or("100000"));
                    return match (q.parse::<f64>(), p.parse::<f64>()) {
                        (Ok(q), Ok(p)) if q > 0.0 && p > 0.0 => Some(q / p),
                        _ => None,
                    };
                }
            }
        } else if ctrls.split(',').any(|c| c == "cpu") {
            for mount in ["cpu,cpuacct", "cpu", "cpuacct,cpu"] {
                for dir in [path, ""] {
                    let base = env.sys("fs/cgroup").join(mount).join(dir);
                    let (Some(q), Some(p)) = (
                        env.read(&base.join("cpu.cfs_quota_us")),
                        env.read(&base.join("cpu.cfs_period_us")),
                    ) else {
                        continue;
                    };
                    return match (q.trim().parse::<f64>(), p.trim().parse::<f64>()) {
                        (Ok(q), Ok(p)) if q > 0.0 && p > 0.0 => Some(q / p),
                        _ => None,
                    };
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn fixture() -> (tempfile::TempDir, Env) {
        let t = tempfile::tempdir().unwrap();
        let env = Env::system(true).with_roots(Some(t.path().join("proc")), Some(t.path().join("sys")));
        fs::create_dir_all(t.path().join("proc/self")).unwrap();
        let mut cpuinfo = String::new();
        for i in 0..8 {
            cpuinfo.push_str(&format!(
                "processor\t: {i}\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n\n"
            ));
        }
        fs::write(t.path().join("proc/cpuinfo"), cpuinfo).unwrap();
        fs::write(
            t.path().join("proc/self/status"),
            "Name:\tapsi\nCpus_allowed_list:\t0-5\n",
        )
        .unwrap();
        (t, env)
    }

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(count_list("0-3,8,10-11"), Some(7));
        assert_eq!(count_list("0"), Some(1));
        assert_eq!(count_list(""), None);
        assert_eq!(count_list("3-1"), None);
        assert_eq!(count_list("x"), None);
    }

    #[test]
    fn affinity_and_a_v2_quota_cap_the_usable_cores() {
        let (t, env) = fixture();
        fs::write(t.path().join("proc/self/cgroup"), "0::/user.slice/apsi\n").unwrap();
        fs::create_dir_all(t.path().join("sys/fs/cgroup/user.slice/apsi")).unwrap();
        fs::write(
            t.path().join("sys/fs/cgroup/user.slice/apsi/cpu.max"),
            "250000 100000\n",
        )
        .unwrap();
        let c = probe(&env);
        assert_eq!(c.details["model"], "Intel(R) Xeon(R) Platinum 8480+");
        assert_eq!(c.details["logical_cores"], 8);
        assert_eq!(c.details["allowed_count"], 6);
        assert_eq!(c.details["cgroup_quota_cpus"], 2.5);
        assert_eq!(c.details["usable_cores"], 3);
    }

    #[test]
    fn a_v1_quota_is_read_and_unlimited_is_none() {
        let (t, env) = fixture();
        fs::write(
            t.path().join("proc/self/cgroup"),
            "4:memory:/x\n1:cpu,cpuacct:/docker/abc\n",
        )
        .unwrap();
        let d = t.path().join("sys/fs/cgroup/cpu,cpuacct/docker/abc");
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("cpu.cfs_quota_us"), "100000\n").unwrap();
        fs::write(d.join("cpu.cfs_period_us"), "100000\n").unwrap();
        assert_eq!(probe(&env).details["usable_cores"], 1);
        fs::write(d.join("cpu.cfs_quota_us"), "-1\n").unwrap();
        let c = probe(&env);
        assert!(c.details.get("cgroup_quota_cpus").is_none());
        assert_eq!(c.details["usable_cores"], 6);
    }

    #[test]
    fn no_cpuinfo_is_a_warning() {
        let t = tempfile::tempdir().unwrap();
        let env = Env::system(true).with_roots(Some(t.path().into()), Some(t.path().into()));
        assert_eq!(probe(&env).status, crate::Status::Warn);
    }
}
