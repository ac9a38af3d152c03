//! What `apsi pkg` does: install, remove, list, info, search, update, verify,
//! fetch. Each operation opens a verified [`Session`], resolves, and works on
//! the store under its lock. Nothing is unpacked before its length and
//! sha256 match the signed index, and nothing is linked into
//! `$APSI_HOME/packages` before its extraction completed. A package with a
//! `[python]` table gets its Python environment once it is linked
//! ([`crate::pyenv`]).

use crate::archive::{Limits, MARKER};
use crate::config::RegistryConfig;
use crate::error::{err, io_err, ErrorKind, PkgError, Result};
use crate::fsutil::{temp_sibling, write_atomic};
use crate::home::Home;
use crate::index::{download_path, IndexLine};
use crate::manifest::{Lockfile, ProjectManifest};
use crate::pyenv::{self, PythonEnv, Removed};
use crate::resolve::{self, parse_req, Platform, Want};
use crate::session::Session;
use crate::store::Store;
use crate::transport::DownloadStart;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Whether one package was extracted by this call, and how its download began.
type Outcome = (bool, Option<DownloadStart>);

/// Tries per download when the connection drops or stalls.
const DOWNLOAD_ATTEMPTS: u32 = 3;

/// How an operation runs.
#[derive(Debug, Clone)]
pub struct Options {
    pub offline: bool,
    /// Refuse any change to `apsi.lock`.
    pub locked: bool,
    pub platform: Platform,
    /// Parallel downloads.
    pub jobs: usize,
    pub lock_timeout: Duration,
    /// How long to wait for a connection or the next bytes.
    pub net_timeout: Duration,
    pub limits: Limits,
    /// The time (unix seconds) expiry is judged at; `None` is the clock's.
    pub now: Option<u64>,
    /// The Python that creates packages' environments; `None`:
    /// `$APSI_PYTHON`, else `python3`.
    pub python: Option<PathBuf>,
    /// Extra environment variables for `venv` and pip (on top of this
    /// process's, e.g. `PIP_FIND_LINKS`), for callers that cannot set them
    /// process-wide.
    pub python_env: Vec<(String, String)>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            offline: false,
            locked: false,
            platform: Platform::host(),
            jobs: 8,
            lock_timeout: crate::store::lock_timeout_from_env(),
            net_timeout: crate::transport::timeout_from_env(),
            limits: Limits::default(),
            now: None,
            python: None,
            python_env: Vec::new(),
        }
    }
}

/// Progress callbacks (the CLI draws bars with them; tests ignore them).
pub trait Reporter: Sync {
    fn begin(&self, _name: &str, _total: u64) {}
    fn advance(&self, _name: &str, _done: u64) {}
    fn end(&self, _name: &str) {}
    /// A line of news about a long step that is about to start (creating a
    /// package's Python environment: pip then writes its own progress on
    /// stderr).
    fn note(&self, _line: &str) {}
}

/// A reporter that says nothing.
pub struct Quiet;
impl Reporter for Quiet {}

/// What is installed: `$APSI_HOME/installed/NAME.json`.
pub use apsi_backend::installed::Installed;

/// What an install did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub installed: Vec<Installed>,
    /// Names whose archives this call extracted (others were already in the store).
    pub extracted: Vec<String>,
    /// Names downloaded by this call, and how each download began.
    pub downloaded: Vec<(String, DownloadStart)>,
    pub warnings: Vec<String>,
    /// Whether `apsi.lock` was written.
    pub lock_written: bool,
    /// The Python environments of installed packages with a `[python]`
    /// table: created, or found up to date (each `Display`s as one line).
    pub python_envs: Vec<PythonEnv>,
}

/// A project: the folder with `apsi.toml` (and `apsi.lock`).
#[derive(Debug, Clone)]
pub struct Project {
    pub dir: PathBuf,
}

impl Project {
    pub fn manifest(&self) -> PathBuf {
        self.dir.join("apsi.toml")
    }
    pub fn lockfile(&self) -> PathBuf {
        self.dir.join("apsi.lock")
    }
    /// The project around `start`: the nearest folder upwards with `apsi.toml`.
    pub fn find(start: &Path) -> Option<Project> {
        let mut at = Some(start);
        while let Some(d) = at {
            if d.join("apsi.toml").is_file() {
                return Some(Project { dir: d.to_path_buf() });
            }
            at = d.parent();
        }
        None
    }
}

pub struct Ctx<'a> {
    pub home: Home,
    pub registry: RegistryConfig,
    pub opts: Options,
    pub reporter: &'a dyn Reporter,
}

impl<'a> Ctx<'a> {
    pub fn new(home: Home, registry: RegistryConfig, opts: Options, reporter: &'a dyn Reporter) -> Ctx<'a> {
        Ctx {
            home,
            registry,
            opts,
            reporter,
        }
    }

    pub fn open(&self) -> Result<Session> {
        let now = self.opts.now.unwrap_or_else(crate::trust::now_secs);
        Session::open(
            &self.home,
            &self.registry,
            self.opts.offline,
            self.opts.net_timeout,
            now,
        )
    }

    fn store(&self) -> Store {
        Store::new(self.home.store())
    }

    /// Resolves and installs. In a project, `specs` are added to `apsi.toml`
    /// and the whole manifest is resolved (honouring and writing `apsi.lock`);
    /// outside one, the specs are installed on their own.
    pub fn install(&self, specs: &[String], project: Option<&Project>) -> Result<Report> {
        self.install_with(specs, project, true)
    }

    /// [`install`](Self::install); `use_lock: false` resolves afresh (update).
    fn install_with(&self, specs: &[String], project: Option<&Project>, use_lock: bool) -> Result<Report> {
        let session = self.open()?;
        let mut wants: Vec<Want> = specs.iter().map(|s| resolve::parse_spec(s)).collect::<Result<_>>()?;
        let mut lock = None;
        if let Some(p) = project {
            lock = Lockfile::load(&p.lockfile())?;
            if self.opts.locked && lock.is_none() {
                return Err(
                    PkgError::new(ErrorKind::Resolve, "--locked, but the project has no apsi.lock")
                        .hint("run `apsi pkg install` once without --locked to write it"),
                );
            }
            let m = ProjectManifest::load(&p.manifest())?;
            let mut all: BTreeMap<String, String> = m.dependencies.clone();
            for (spec, w) in specs.iter().zip(&wants) {
                let req = spec
                    .split_once('@')
                    .map(|(_, r)| r.to_string())
                    .unwrap_or_else(|| "*".to_string());
                if all.get(&w.name) != Some(&req) {
                    if self.opts.locked {
                        return err(
                            ErrorKind::Resolve,
                            format!("--locked, but adding {spec} would change apsi.toml and apsi.lock"),
                        );
                    }
                    all.insert(w.name.clone(), req);
                }
            }
            wants = all
                .iter()
                .map(|(n, r)| {
                    Ok(Want {
                        name: n.clone(),
                        req: parse_req(n, r)?,
                    })
                })
                .collect::<Result<_>>()?;
        } else if self.opts.locked {
            return err(
                ErrorKind::Usage,
                "--locked needs a project (a folder with apsi.toml and apsi.lock)",
            );
        }
        if wants.is_empty() {
            return err(
                ErrorKind::Usage,
                "nothing to install: name a package (apsi pkg install NAME) or run it in a project with apsi.toml",
            );
        }
        let prefer = if use_lock { lock.as_ref() } else { None };
        let lines = resolve::resolve(&wants, &mut |n| session.lines(n), &self.opts.platform, prefer)?;
        // Published versions never change: the same version under other
        // bytes than apsi.lock or an installed copy records is drift, for
        // `update` as for `install`.
        let mut known: Vec<(String, String, String, String, &str)> = list(&self.home)?
            .into_iter()
            .map(|r| (r.name, r.version, r.target, r.cksum, "the installed copy"))
            .collect();
        if let Some(l) = &lock {
            known.extend(l.packages.iter().map(|p| {
                (
                    p.name.clone(),
                    p.version.clone(),
                    p.target.clone(),
                    p.cksum.clone(),
                    "apsi.lock",
                )
            }));
        }
        check_no_drift(&lines, &known)?;
        let new_lock = resolve::to_lock(&lines);
        if project.is_some() && self.opts.locked && lock.as_ref() != Some(&new_lock) {
            return Err(PkgError::new(
                ErrorKind::Resolve,
                "--locked, but the resolution differs from apsi.lock",
            )
            .hint("run without --locked to update apsi.lock, and review the change"));
        }
        let mut report = self.materialise(&session, &lines, true)?;
        if let Some(p) = project {
            for spec in specs {
                let w = resolve::parse_spec(spec)?;
                let req = spec
                    .split_once('@')
                    .map(|(_, r)| r.to_string())
                    .unwrap_or_else(|| "*".to_string());
                ProjectManifest::add_to_file(&p.manifest(), &w.name, &req)?;
            }
            if lock.as_ref() != Some(&new_lock) {
                new_lock.save(&p.lockfile())?;
                report.lock_written = true;
            }
        }
        report.warnings.extend(session.warnings.iter().cloned());
        // Last: the packages are installed whatever happens here, and a
        // failed environment is reported as such (the next install retries).
        for rec in report.installed.clone() {
            let env = pyenv::ensure(&self.home, &self.opts, self.reporter, &rec).map_err(|mut e| {
                let again = format!(
                    "{} itself is installed; `apsi pkg install {}` makes its environment again",
                    rec.label(),
                    rec.name
                );
                e.hint = Some(match e.hint.take() {
                    Some(h) => format!("{h}\n  = note: {again}"),
                    None => again,
                });
                e
            })?;
            report.python_envs.extend(env);
        }
        Ok(report)
    }

    /// Downloads (in parallel), verifies, extracts and (when `link`) links
    /// every line, under the store lock.
    fn materialise(&self, session: &Session, lines: &[IndexLine], link: bool) -> Result<Report> {
        let store = self.store();
        let _guard = store.lock(self.opts.lock_timeout)?;
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<(usize, Result<Outcome>)>> = Mutex::new(Vec::new());
        let jobs = self.opts.jobs.clamp(1, 64).min(lines.len().max(1));
        std::thread::scope(|s| {
            for _ in 0..jobs {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(l) = lines.get(i) else { break };
                    let r = self.one(session, &store, l, link);
                    if let Ok(mut v) = results.lock() {
                        v.push((i, r));
                    }
                });
            }
        });
        let mut results = results.into_inner().unwrap_or_default();
        results.sort_by_key(|(i, _)| *i);
        let mut report = Report::default();
        let mut first_err = None;
        for (i, r) in results {
            let Some(l) = lines.get(i) else { continue };
            match r {
                Ok((extracted, dl)) => {
                    if extracted {
                        report.extracted.push(l.name.clone());
                    }
                    if let Some(d) = dl {
                        report.downloaded.push((l.name.clone(), d));
                    }
                    report.installed.push(self.installed_of(l, &session.config.url));
                }
                Err(e) => {
                    if first_err.is_none() {
                        first_err = Some(e);
                    }
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        Ok(report)
    }

    /// One package: a verified archive in the store, its tree, its link.
    fn one(
        &self,
        session: &Session,
        store: &Store,
        l: &IndexLine,
        link: bool,
    ) -> Result<(bool, Option<DownloadStart>)> {
        if link {
            // Published before registries refused such names: never installed.
            crate::index::check_library_name(&l.name, &l.kind)?;
        }
        let mut how = None;
        let archive = match store.verified_archive(&l.cksum, l.size)? {
            Some(p) => p,
            None => {
                let Some(t) = &session.transport else {
                    return Err(PkgError::new(
                        ErrorKind::Offline,
                        format!("--offline, and {} {} is not in the store", l.name, l.vers),
                    )
                    .hint(format!("run `apsi pkg fetch {}` while online first", l.name)));
                };
                let rel = download_path(&session.index_config, l);
                let partial = store.partial_path(&l.cksum);
                self.reporter.begin(&l.name, l.size);
                // A dropped connection or a stall is retried (resuming from
                // what arrived); HTTP errors and integrity failures are not.
                let mut attempt = 0;
                let (h, sha) = loop {
                    attempt += 1;
                    match t.download(&rel, &partial, l.size, &mut |n| self.reporter.advance(&l.name, n)) {
                        Ok(x) => break x,
                        Err(e) if attempt < DOWNLOAD_ATTEMPTS && crate::transport::is_transient(&e) => continue,
                        Err(e) => {
                            self.reporter.end(&l.name);
                            return Err(e);
                        }
                    }
                };
                self.reporter.end(&l.name);
                how = Some(h);
                store.commit_download(&l.cksum, l.size, &sha)?
            }
        };
        if !link {
            return Ok((false, how));
        }
        let limits = Limits {
            max_bytes: self.opts.limits.max_bytes.min(l.unpacked_size),
            max_entries: self.opts.limits.max_entries,
        };
        let prefix = format!("{}-{}", l.name, l.vers);
        let (tree, extracted) = store.ensure_tree(&l.cksum, &archive, &prefix, limits)?;
        let _ = tree;
        self.link(l, &session.config.url)?;
        Ok((extracted, how))
    }

    /// Points `packages/NAME` at the tree (atomically) and records it.
    fn link(&self, l: &IndexLine, registry: &str) -> Result<()> {
        let pkgs = self.home.packages();
        std::fs::create_dir_all(&pkgs).map_err(|e| io_err("create the folder", &pkgs, &e))?;
        let dest = pkgs.join(&l.name);
        let target = PathBuf::from("..")
            .join("store")
            .join("pkg")
            .join(&l.cksum)
            .join(format!("{}-{}", l.name, l.vers));
        let tmp = temp_sibling(&dest, "link");
        make_link(&target, &tmp)?;
        if let Ok(m) = std::fs::symlink_metadata(&dest) {
            if m.is_dir() {
                // An old layout or a hand-made folder: move it aside.
                let _ = std::fs::remove_dir_all(&dest);
            }
        }
        std::fs::rename(&tmp, &dest).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io_err("link the package at", &dest, &e)
        })?;
        let rec = self.installed_of(l, registry);
        let bytes = serde_json::to_vec_pretty(&rec).unwrap_or_default();
        write_atomic(&self.home.installed().join(format!("{}.json", l.name)), &bytes)
    }

    /// Downloads (and verifies) without installing, e.g. for another target.
    pub fn fetch(&self, specs: &[String]) -> Result<Report> {
        let session = self.open()?;
        let wants: Vec<Want> = specs.iter().map(|s| resolve::parse_spec(s)).collect::<Result<_>>()?;
        let lines = resolve::resolve(&wants, &mut |n| session.lines(n), &self.opts.platform, None)?;
        let mut r = self.materialise(&session, &lines, false)?;
        r.warnings.extend(session.warnings.iter().cloned());
        Ok(r)
    }

    /// Removes installed packages (the store keeps them for offline
    /// reinstall), and their Python environments; the names removed.
    pub fn remove(&self, names: &[String]) -> Result<Vec<String>> {
        Ok(self.remove_all(names)?.into_iter().map(|r| r.name).collect())
    }

    /// [`remove`](Self::remove), saying for each package whether a Python
    /// environment (`$APSI_HOME/venvs/NAME`) went with it.
    pub fn remove_all(&self, names: &[String]) -> Result<Vec<Removed>> {
        let store = self.store();
        let _guard = store.lock(self.opts.lock_timeout)?;
        let mut out = Vec::new();
        for n in names {
            crate::index::check_name(n)?;
            let rec = self.home.installed().join(format!("{n}.json"));
            let link = self.home.packages().join(n);
            let env = apsi_backend::venv::dir(&self.home, n);
            if !rec.exists() && std::fs::symlink_metadata(&link).is_err() && !env.exists() {
                return Err(PkgError::new(ErrorKind::NotFound, format!("{n} is not installed"))
                    .hint("`apsi pkg list` shows what is"));
            }
            if let Ok(m) = std::fs::symlink_metadata(&link) {
                let r = if m.is_dir() {
                    std::fs::remove_dir_all(&link)
                } else {
                    std::fs::remove_file(&link)
                };
                r.map_err(|e| io_err("remove", &link, &e))?;
            }
            if rec.exists() {
                std::fs::remove_file(&rec).map_err(|e| io_err("remove", &rec, &e))?;
            }
            let python_env = pyenv::remove(&self.home, n, self.reporter)?;
            out.push(Removed {
                name: n.clone(),
                python_env,
            });
        }
        Ok(out)
    }

    /// Newest versions: in a project, resolve apsi.toml afresh and rewrite
    /// apsi.lock; otherwise reinstall every installed package at its newest.
    /// Each package keeps the `--tag`s it was installed with (added to any
    /// given now), so a `cuda` build is not swapped for a plain one.
    pub fn update(&self, project: Option<&Project>) -> Result<Report> {
        if self.opts.locked {
            return err(
                ErrorKind::Usage,
                "`apsi pkg update` changes versions; it cannot run with --locked",
            );
        }
        let installed = list(&self.home)?;
        match project {
            Some(p) => {
                let m = ProjectManifest::load(&p.manifest())?;
                let mut tags = self.opts.platform.tags.clone();
                for rec in installed.iter().filter(|r| m.dependencies.contains_key(&r.name)) {
                    tags.extend(rec.tags.iter().cloned());
                }
                self.with_tags(tags).install_with(&[], Some(p), false)
            }
            None => {
                // One resolution per set of tags the packages were installed with.
                let mut groups: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
                for rec in installed {
                    let mut tags = self.opts.platform.tags.clone();
                    tags.extend(rec.tags.iter().cloned());
                    tags.sort();
                    tags.dedup();
                    groups.entry(tags).or_default().push(rec.name);
                }
                let mut report = Report::default();
                for (tags, names) in groups {
                    let r = self.with_tags(tags).install(&names, None)?;
                    report.installed.extend(r.installed);
                    report.extracted.extend(r.extracted);
                    report.downloaded.extend(r.downloaded);
                    report.warnings.extend(r.warnings);
                    report.python_envs.extend(r.python_envs);
                }
                report.warnings.dedup();
                Ok(report)
            }
        }
    }

    /// The same context with these tags enabled.
    fn with_tags(&self, mut tags: Vec<String>) -> Ctx<'a> {
        tags.sort();
        tags.dedup();
        let mut opts = self.opts.clone();
        opts.platform.tags = tags;
        Ctx::new(self.home.clone(), self.registry.clone(), opts, self.reporter)
    }

    /// The record of an installed line, with the tags this install enabled.
    fn installed_of(&self, l: &IndexLine, registry: &str) -> Installed {
        Installed {
            name: l.name.clone(),
            version: l.vers.clone(),
            target: l.target.clone(),
            kind: l.kind.clone(),
            cksum: l.cksum.clone(),
            registry: registry.to_string(),
            tags: self.opts.platform.tags.clone(),
        }
    }
}

/// An error when a resolved line has the name, version and target of a
/// known one (installed, or in apsi.lock) but another sha256.
fn check_no_drift(lines: &[IndexLine], known: &[(String, String, String, String, &str)]) -> Result<()> {
    for l in lines {
        if let Some((_, _, _, cksum, whose)) = known
            .iter()
            .find(|(n, v, t, c, _)| *n == l.name && *v == l.vers && *t == l.target && *c != l.cksum)
        {
            return Err(PkgError::new(
                ErrorKind::Resolve,
                format!(
                    "lock drift: {whose} of {} {} ({}) has sha256 {cksum}, but the registry's signed index now says {}",
                    l.name, l.vers, l.target, l.cksum
                ),
            )
            .hint("a published version must never change: the registry republished it or was tampered with; ask its operator, and keep what you have"));
        }
    }
    Ok(())
}

#[cfg(unix)]
fn make_link(target: &Path, at: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, at).map_err(|e| io_err("create the link", at, &e))
}

#[cfg(not(unix))]
fn make_link(_target: &Path, at: &Path) -> Result<()> {
    err(
        ErrorKind::Io,
        format!("package links need a Unix system ('{}')", at.display()),
    )
}

/// Every installed package, sorted by name.
pub fn list(home: &Home) -> Result<Vec<Installed>> {
    apsi_backend::installed::list(home).map_err(PkgError::from)
}

/// The result of verifying one installed package.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Verified {
    pub name: String,
    pub version: String,
    pub ok: bool,
    /// What failed, when not ok.
    pub problems: Vec<String>,
}

/// Re-checks installed packages: the archive in the store still has the
/// signed index's hash, that hash is still the one the verified index gives
/// for the version, the extraction completed, and every extracted file
/// still has the hash recorded when it was extracted.
pub fn verify(ctx: &Ctx<'_>, names: &[String]) -> Result<Vec<Verified>> {
    let session = ctx.open()?;
    let store = Store::new(ctx.home.store());
    let mut out = Vec::new();
    for rec in list(&ctx.home)? {
        if !names.is_empty() && !names.contains(&rec.name) {
            continue;
        }
        let mut problems = Vec::new();
        match session.lines(&rec.name) {
            Ok(lines) => match lines.iter().find(|l| l.vers == rec.version && l.target == rec.target) {
                Some(l) if l.cksum == rec.cksum => match store.verified_archive(&l.cksum, l.size) {
                    Ok(Some(_)) => {}
                    Ok(None) => problems
                        .push("the archive is missing from the store or was corrupt (removed); reinstall".into()),
                    Err(e) => problems.push(e.to_string()),
                },
                Some(l) => problems.push(format!(
                    "the signed index now gives sha256 {}, installed is {}",
                    l.cksum, rec.cksum
                )),
                None => problems.push("the signed index no longer lists this version".into()),
            },
            Err(e) => problems.push(e.message),
        }
        let tree = store.tree_path(&rec.cksum);
        if !tree.join(MARKER).is_file() {
            problems.push("the extracted files are incomplete".into());
        } else {
            let changed = apsi_backend::files::check(&tree);
            if !changed.is_empty() {
                problems.push(format!(
                    "installed files changed since extraction: {}; `apsi pkg install {}` restores them",
                    changed.join(", "),
                    rec.name
                ));
            } else if let Some(p) = pyenv::problem(&ctx.home, &rec) {
                problems.push(p);
            }
        }
        out.push(Verified {
            name: rec.name,
            version: rec.version,
            ok: problems.is_empty(),
            problems,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_is_found_upwards() {
        let t = tempfile::tempdir().unwrap();
        let deep = t.path().join("a").join("b");
        std::fs::create_dir_all(&deep).unwrap();
        assert!(Project::find(&deep).is_none_or(|p| !p.dir.starts_with(t.path())));
        std::fs::write(t.path().join("a").join("apsi.toml"), "").unwrap();
        assert_eq!(Project::find(&deep).unwrap().dir, t.path().join("a"));
    }

    #[test]
    fn list_of_a_fresh_home_is_empty_and_remove_says_not_installed() {
        let t = tempfile::tempdir().unwrap();
        let home = Home::at(t.path());
        assert!(list(&home).unwrap().is_empty());
        let cfg = RegistryConfig {
            url: "file:///nowhere".into(),
            root: Vec::new(),
        };
        let ctx = Ctx::new(home, cfg, Options::default(), &Quiet);
        let e = ctx.remove(&["mathx".into()]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::NotFound);
        assert!(ctx.remove(&["../x".into()]).is_err());
    }
}
