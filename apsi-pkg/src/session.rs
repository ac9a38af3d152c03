//! A verified view of one registry: the trusted root (after following any
//! rotation chain), the snapshot (no rollback, no freeze), and index files
//! checked against the snapshot before they are parsed. Online, fresh
//! metadata is fetched and the highest versions are persisted under
//! `$APSI_HOME/trust/<id>/`; offline, only what was verified before is used
//! and no socket is opened.

use crate::config::RegistryConfig;
use crate::error::{err, io_err, ErrorKind, PkgError, Result};
use crate::fsutil::write_atomic;
use crate::home::Home;
use crate::index::{check_name, index_path, parse_index_file, IndexConfig, IndexLine};
use crate::transport::Transport;
use crate::trust::{self, Root, Snapshot, MAX_METADATA_BYTES};
use std::path::PathBuf;
use std::time::Duration;

/// How far a root rotation chain is followed in one go.
const MAX_ROTATIONS: u64 = 1024;

pub struct Session {
    pub home: Home,
    pub config: RegistryConfig,
    pub id: String,
    pub offline: bool,
    pub transport: Option<Transport>,
    pub root: Root,
    pub snapshot: Snapshot,
    pub index_config: IndexConfig,
    /// Things the user should know (e.g. an expired snapshot used offline).
    pub warnings: Vec<String>,
}

fn trust_file(home: &Home, id: &str, name: &str) -> PathBuf {
    home.trust_dir(id).join(name)
}

impl Session {
    /// Opens the registry: online refreshes and verifies the metadata,
    /// offline uses what was verified and persisted before.
    pub fn open(home: &Home, config: &RegistryConfig, offline: bool, timeout: Duration, now: u64) -> Result<Session> {
        let id = config.id();
        let mut warnings = Vec::new();
        let (pinned, _) = trust::parse_root("the configured root", &config.root)?;
        // The highest root seen before, if it is at least the pinned one.
        let persisted = trust_file(home, &id, "root.json");
        let mut root = pinned.clone();
        if let Ok(b) = std::fs::read(&persisted) {
            let (r, _) = trust::parse_root(&persisted.display().to_string(), &b)?;
            if r.version >= pinned.version {
                root = r;
            }
        }
        let transport = if offline {
            None
        } else {
            if config.url == crate::config::DEFAULT_REGISTRY {
                return Err(no_registry());
            }
            Some(Transport::new(&config.url, timeout)?)
        };
        if let Some(t) = &transport {
            for _ in 0..MAX_ROTATIONS {
                let next = root.version.saturating_add(1);
                let Some(bytes) = t.get_optional(&format!("{next}.root.json"), MAX_METADATA_BYTES)? else {
                    break;
                };
                let (r, _) = trust::verify_rotation(&root, &bytes)?;
                write_atomic(&persisted, &bytes)?;
                root = r;
            }
        }
        if root.expires <= now {
            let msg = format!(
                "the registry's root (version {}) expired at {}",
                root.version,
                trust::utc_date(root.expires)
            );
            if offline {
                warnings.push(msg);
            } else {
                return Err(PkgError::new(ErrorKind::Trust, msg)
                    .hint("the registry must publish a new root; tell its operator"));
            }
        }
        let snap_path = trust_file(home, &id, "snapshot.json");
        let old_bytes = std::fs::read(&snap_path).ok();
        let old = match &old_bytes {
            Some(b) => Some(trust::verify_snapshot(&root, b).map_err(|e| {
                PkgError::new(e.kind, format!("the cached snapshot no longer verifies: {}", e.message))
            })?),
            None => None,
        };
        let snapshot = match &transport {
            Some(t) => {
                let bytes = t.get("snapshot.json", MAX_METADATA_BYTES)?;
                let snap = trust::verify_snapshot(&root, &bytes)?;
                if let Some(o) = &old {
                    if snap.version < o.version {
                        return Err(PkgError::new(
                            ErrorKind::Trust,
                            format!(
                                "snapshot rollback: the registry sent version {}, but version {} was seen before",
                                snap.version, o.version
                            ),
                        )
                        .hint("someone may be replaying old metadata; do not trust this mirror or network"));
                    }
                    if snap.version == o.version && Some(&bytes) != old_bytes.as_ref() {
                        return err(
                            ErrorKind::Trust,
                            format!(
                                "snapshot version {} changed content without a new version",
                                snap.version
                            ),
                        );
                    }
                }
                if snap.expires <= now {
                    return Err(PkgError::new(
                        ErrorKind::Trust,
                        format!(
                            "the registry's snapshot (version {}) expired at {}",
                            snap.version,
                            trust::utc_date(snap.expires)
                        ),
                    )
                    .hint("the registry must re-sign its snapshot; or use --offline to work from what is cached"));
                }
                write_atomic(&snap_path, &bytes)?;
                snap
            }
            None => match old {
                Some(o) => {
                    if o.expires <= now {
                        warnings.push(format!(
                            "the cached snapshot (version {}) has expired; using it because of --offline",
                            o.version
                        ));
                    }
                    o
                }
                None => {
                    return Err(PkgError::new(
                        ErrorKind::Offline,
                        "--offline, and this registry's index was never fetched",
                    )
                    .hint("run once without --offline"));
                }
            },
        };
        let mut s = Session {
            home: home.clone(),
            config: config.clone(),
            id,
            offline,
            transport,
            root,
            snapshot,
            index_config: IndexConfig::default(),
            warnings,
        };
        let cfg = s.verified_file("config.json")?;
        s.index_config = serde_json::from_slice(&cfg)
            .map_err(|e| PkgError::new(ErrorKind::Integrity, format!("config.json: {e}")))?;
        Ok(s)
    }

    /// Reads one file that the snapshot names, from the registry (online)
    /// or the local cache (offline), checking its length and hash first.
    pub fn verified_file(&self, rel: &str) -> Result<Vec<u8>> {
        let Some(meta) = self.snapshot.files.get(rel) else {
            return Err(PkgError::new(
                ErrorKind::NotFound,
                format!("'{rel}' is not in the registry's signed snapshot"),
            ));
        };
        let cache = self.home.index_dir(&self.id).join(rel);
        if let Ok(b) = std::fs::read(&cache) {
            if trust::check_meta(rel, meta, &b).is_ok() {
                return Ok(b);
            }
        }
        let Some(t) = &self.transport else {
            return Err(
                PkgError::new(ErrorKind::Offline, format!("--offline, and '{rel}' is not cached"))
                    .hint("run once without --offline"),
            );
        };
        let bytes = t.get(rel, meta.length)?;
        trust::check_meta(rel, meta, &bytes)?;
        if let Some(parent) = cache.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_err("create the folder", parent, &e))?;
        }
        write_atomic(&cache, &bytes)?;
        Ok(bytes)
    }

    /// Every published line of a package, verified.
    pub fn lines(&self, name: &str) -> Result<Vec<IndexLine>> {
        check_name(name)?;
        let rel = format!("index/{}", index_path(name));
        let bytes = self.verified_file(&rel).map_err(|e| {
            if e.kind == ErrorKind::NotFound {
                PkgError::new(
                    ErrorKind::NotFound,
                    format!("no package named '{name}' in the registry"),
                )
                .hint("`apsi pkg search WORD` lists the registry's packages")
            } else {
                e
            }
        })?;
        let text = String::from_utf8(bytes)
            .map_err(|_| PkgError::new(ErrorKind::Integrity, format!("the index of '{name}' is not UTF-8")))?;
        parse_index_file(name, &text)
    }

    /// Every package name in the snapshot.
    pub fn names(&self) -> Vec<String> {
        self.snapshot
            .files
            .keys()
            .filter_map(|k| k.strip_prefix("index/"))
            .filter_map(|k| k.rsplit('/').next())
            .map(str::to_string)
            .collect()
    }
}

/// The built-in registry's host is under `.invalid` (RFC 6761: it never
/// resolves) until an official registry is in service, so asking it would
/// only fail with a bare connection error: say what to do instead.
pub fn no_registry() -> PkgError {
    PkgError::new(
        ErrorKind::Usage,
        format!(
            "no package registry is configured: the built-in one ({}) is not in service yet",
            crate::config::DEFAULT_REGISTRY
        ),
    )
    .hint(
        "point apsi at a registry with APSI_REGISTRY (its URL, https://, http:// or file://) and \
         APSI_REGISTRY_ROOT (its 1.root.json), or [registry] url/root in $APSI_HOME/config.toml; \
         `tools/dev-registry` in the source repository builds and serves one (docs/PACKAGES.md)",
    )
}
