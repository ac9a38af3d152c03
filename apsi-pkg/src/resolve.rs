//! Choosing versions: Cargo's semver requirements, the newest matching
//! version for this platform, yanked versions skipped unless the lockfile
//! pins them, and the lockfile honoured (and checked for drift).

use crate::error::{err, ErrorKind, PkgError, Result};
use crate::index::IndexLine;
use crate::manifest::{LockedPackage, Lockfile};
use semver::{Version, VersionReq};
use std::collections::BTreeMap;

/// What this machine (or `--target`/`--tag`) can use.
#[derive(Debug, Clone)]
pub struct Platform {
    pub target: String,
    pub tags: Vec<String>,
}

pub use apsi_backend::host_target;

impl Platform {
    pub fn host() -> Platform {
        Platform {
            target: host_target(),
            tags: Vec::new(),
        }
    }

    /// How well a line fits: `None` when it cannot be used here, else higher is better.
    pub fn fit(&self, l: &IndexLine) -> Option<u32> {
        if !l.tags.iter().all(|t| self.tags.contains(t)) {
            return None;
        }
        let base = if l.target == self.target {
            2
        } else if l.target == "any" {
            1
        } else {
            return None;
        };
        Some(base * 100 + l.tags.len() as u32)
    }
}

/// A root requirement.
#[derive(Debug, Clone)]
pub struct Want {
    pub name: String,
    pub req: VersionReq,
}

pub fn parse_req(name: &str, req: &str) -> Result<VersionReq> {
    VersionReq::parse(req).map_err(|e| {
        PkgError::new(
            ErrorKind::Usage,
            format!("'{req}' is not a version requirement for {name}: {e}"),
        )
        .hint("use Cargo's forms: 1.2, ^1.2, ~1.2.3, =1.2.3, >=1, <2, *")
    })
}

/// Parses `NAME`, `NAME@REQ` into a want.
pub fn parse_spec(spec: &str) -> Result<Want> {
    let (name, req) = match spec.split_once('@') {
        Some((n, r)) => (n, r),
        None => (spec, "*"),
    };
    crate::index::check_name(name)?;
    Ok(Want {
        name: name.to_string(),
        req: parse_req(name, req)?,
    })
}

fn version(l: &IndexLine) -> Version {
    Version::parse(&l.vers).unwrap_or(Version::new(0, 0, 0))
}

/// Checks a locked entry against the signed index: the same version and
/// target must still have the same checksum (only `yanked` may change).
fn locked_line<'a>(lines: &'a [IndexLine], lp: &LockedPackage) -> Result<&'a IndexLine> {
    let Some(l) = lines.iter().find(|l| l.vers == lp.version && l.target == lp.target) else {
        return Err(PkgError::new(
            ErrorKind::Resolve,
            format!(
                "apsi.lock pins {} {} ({}), which the registry does not have",
                lp.name, lp.version, lp.target
            ),
        )
        .hint("run `apsi pkg update` to resolve again"));
    };
    if l.cksum != lp.cksum {
        return Err(PkgError::new(
            ErrorKind::Resolve,
            format!(
                "lock drift: apsi.lock pins {} {} with sha256 {}, but the registry's signed index says {}",
                lp.name, lp.version, lp.cksum, l.cksum
            ),
        )
        .hint("a published version must never change; the registry or the lockfile was tampered with"));
    }
    Ok(l)
}

/// Resolves `wants` and their dependencies. `index` gives the verified lines
/// of a package. With a lockfile, a locked version that satisfies every
/// requirement is kept (even when yanked). Greedy: each name gets the newest
/// version fitting the requirements known when it is first reached; a later
/// requirement it does not meet is reported as a conflict.
pub fn resolve(
    wants: &[Want],
    index: &mut dyn FnMut(&str) -> Result<Vec<IndexLine>>,
    platform: &Platform,
    lock: Option<&Lockfile>,
) -> Result<Vec<IndexLine>> {
    let mut chosen: BTreeMap<String, IndexLine> = BTreeMap::new();
    let mut reqs: BTreeMap<String, Vec<(VersionReq, String)>> = BTreeMap::new();
    let mut queue: Vec<(String, VersionReq, String)> = wants
        .iter()
        .map(|w| {
            (
                w.name.clone(),
                w.req.clone(),
                "the command line or apsi.toml".to_string(),
            )
        })
        .collect();
    queue.reverse();
    let mut steps = 0usize;
    while let Some((name, req, from)) = queue.pop() {
        steps += 1;
        if steps > 100_000 {
            return err(
                ErrorKind::Resolve,
                "dependency resolution did not finish (a dependency loop?)",
            );
        }
        reqs.entry(name.clone()).or_default().push((req.clone(), from.clone()));
        if let Some(c) = chosen.get(&name) {
            if !req.matches(&version(c)) {
                return err(
                    ErrorKind::Resolve,
                    format!(
                        "version conflict: {name} {} was chosen, but {from} requires {name} {req}",
                        c.vers
                    ),
                );
            }
            continue;
        }
        let lines = index(&name)?;
        let all: &Vec<(VersionReq, String)> = &reqs[&name];
        let fits = |l: &IndexLine| all.iter().all(|(r, _)| r.matches(&version(l)));
        let mut pick: Option<IndexLine> = None;
        if let Some(lp) = lock.and_then(|lk| lk.get(&name)) {
            let l = locked_line(&lines, lp)?;
            if fits(l) && platform.fit(l).is_some() {
                pick = Some(l.clone());
            }
        }
        if pick.is_none() {
            let best = lines
                .iter()
                .filter(|l| !l.yanked && fits(l))
                .filter_map(|l| platform.fit(l).map(|f| (version(l), f, l)))
                .max_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
            pick = best.map(|(_, _, l)| l.clone());
        }
        let Some(l) = pick else {
            let yanked_only = lines.iter().any(|l| l.yanked && fits(l) && platform.fit(l).is_some());
            let here = |l: &IndexLine| l.target == platform.target || l.target == "any";
            // Builds for this very target that need a tag not enabled.
            let need_tags: Vec<String> = lines
                .iter()
                .filter(|l| !l.yanked && fits(l) && here(l) && platform.fit(l).is_none())
                .map(|l| {
                    let missing: Vec<&str> = l
                        .tags
                        .iter()
                        .filter(|t| !platform.tags.contains(t))
                        .map(String::as_str)
                        .collect();
                    format!(
                        "{} needs {}",
                        l.vers,
                        missing
                            .iter()
                            .map(|t| format!("--tag {t}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    )
                })
                .collect();
            let other_targets: Vec<String> = lines
                .iter()
                .filter(|l| fits(l) && !here(l))
                .map(|l| format!("{} ({})", l.vers, l.target))
                .collect();
            let mut e = PkgError::new(
                ErrorKind::Resolve,
                format!("no version of {name} matches {} for target {}", req, platform.target),
            );
            e = if yanked_only {
                e.hint("the matching versions were yanked; only a project whose apsi.lock already pins one may use it")
            } else if !need_tags.is_empty() {
                e.hint(format!(
                    "published for {} with tags this install did not enable: {}; add them (e.g. `apsi pkg install {name} {}`)",
                    platform.target,
                    need_tags.join(", "),
                    need_tags[0].split_once(" needs ").map(|x| x.1).unwrap_or_default()
                ))
            } else if !other_targets.is_empty() {
                e.hint(format!(
                    "published for other targets: {}; choose one with --target/--tag",
                    other_targets.join(", ")
                ))
            } else {
                e.hint(format!("`apsi pkg info {name}` lists the published versions"))
            };
            return Err(e);
        };
        for d in &l.deps {
            let r = parse_req(&d.name, &d.req)?;
            queue.push((d.name.clone(), r, format!("{} {}", l.name, l.vers)));
        }
        chosen.insert(name, l);
    }
    Ok(chosen.into_values().collect())
}

/// The lockfile for a resolution.
pub fn to_lock(lines: &[IndexLine]) -> Lockfile {
    Lockfile::new(
        lines
            .iter()
            .map(|l| LockedPackage {
                name: l.name.clone(),
                version: l.vers.clone(),
                target: l.target.clone(),
                cksum: l.cksum.clone(),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Dep;

    fn line(name: &str, vers: &str, target: &str, yanked: bool, deps: &[(&str, &str)]) -> IndexLine {
        IndexLine {
            name: name.into(),
            vers: vers.into(),
            target: target.into(),
            tags: vec![],
            kind: "library".into(),
            deps: deps
                .iter()
                .map(|(n, r)| Dep {
                    name: n.to_string(),
                    req: r.to_string(),
                })
                .collect(),
            cksum: crate::digest::sha256_hex(format!("{name}{vers}{target}").as_bytes()),
            size: 1,
            unpacked_size: 1,
            yanked,
            v: 1,
        }
    }

    fn idx() -> Vec<IndexLine> {
        vec![
            line("a", "1.0.0", "any", false, &[("b", "^1")]),
            line("a", "1.1.0", "any", true, &[("b", "^1")]),
            line("a", "2.0.0", "other-os", false, &[]),
            line("b", "1.0.0", "any", false, &[]),
            line("b", "1.5.0", "any", false, &[]),
        ]
    }

    fn run(wants: &[Want], lock: Option<&Lockfile>) -> Result<Vec<IndexLine>> {
        let all = idx();
        let p = Platform {
            target: "x86_64-linux-gnu".into(),
            tags: vec![],
        };
        resolve(
            wants,
            &mut |n| Ok(all.iter().filter(|l| l.name == n).cloned().collect()),
            &p,
            lock,
        )
    }

    #[test]
    fn newest_unyanked_for_this_target() {
        let got = run(&[parse_spec("a").unwrap()], None).unwrap();
        let v: Vec<(String, String)> = got.iter().map(|l| (l.name.clone(), l.vers.clone())).collect();
        assert_eq!(v, vec![("a".into(), "1.0.0".into()), ("b".into(), "1.5.0".into())]);
    }

    #[test]
    fn yanked_allowed_when_locked() {
        let mut lines = idx();
        lines.retain(|l| l.vers == "1.1.0" || l.name == "b");
        let lock = to_lock(&[
            line("a", "1.1.0", "any", true, &[]),
            line("b", "1.0.0", "any", false, &[]),
        ]);
        let got = run(&[parse_spec("a").unwrap()], Some(&lock)).unwrap();
        assert_eq!(got[0].vers, "1.1.0");
        assert_eq!(got[1].vers, "1.0.0");
    }

    #[test]
    fn drift_is_an_error() {
        let mut lock = to_lock(&[line("a", "1.0.0", "any", false, &[])]);
        lock.packages[0].cksum = "0".repeat(64);
        let e = run(&[parse_spec("a").unwrap()], Some(&lock)).unwrap_err();
        assert!(e.message.contains("lock drift"), "{e}");
    }

    #[test]
    fn no_match_explains() {
        let e = run(&[parse_spec("a@^2").unwrap()], None).unwrap_err();
        assert!(e.hint.unwrap().contains("other-os"));
        let e = run(&[parse_spec("a@=1.1.0").unwrap()], None).unwrap_err();
        assert!(e.hint.unwrap().contains("yanked"));
    }

    #[test]
    fn conflicts_are_reported() {
        let e = run(&[parse_spec("b@=1.0.0").unwrap(), parse_spec("a").unwrap()], None);
        // b 1.0.0 satisfies a's ^1: no conflict.
        assert!(e.is_ok());
        let e = run(&[parse_spec("b@=1.5.0").unwrap(), parse_spec("b@<1.5").unwrap()], None).unwrap_err();
        assert!(e.message.contains("version conflict"), "{e}");
    }

    #[test]
    fn a_missing_tag_on_this_target_is_named_as_such() {
        let mut gpu = line("gpu", "1.0.0", "x86_64-linux-gnu", false, &[]);
        gpu.tags = vec!["cuda".into()];
        let all = [gpu];
        let p = Platform {
            target: "x86_64-linux-gnu".into(),
            tags: vec![],
        };
        let e = resolve(
            &[parse_spec("gpu").unwrap()],
            &mut |n| Ok(all.iter().filter(|l| l.name == n).cloned().collect()),
            &p,
            None,
        )
        .unwrap_err();
        let h = e.hint.unwrap();
        assert!(!h.contains("other targets"), "{h}");
        assert!(h.contains("1.0.0 needs --tag cuda"), "{h}");
        assert!(h.contains("apsi pkg install gpu --tag cuda"), "{h}");
    }
}
