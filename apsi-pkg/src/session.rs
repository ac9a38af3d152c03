//! A verified view of one registry: the trusted root (after following any
//! rotation chain), the timestamp (short-lived: no freeze) when the root
//! declares a timestamp role, the snapshot the timestamp names (no
//! rollback), and index files checked against the snapshot before they are
//! parsed. Online, fresh metadata is fetched and the highest versions are
//! persisted under `$APSI_HOME/trust/<id>/`; offline, only what was verified
//! before is used and no socket is opened.

use crate::config::RegistryConfig;
use crate::error::{err, io_err, ErrorKind, PkgError, Result};
use crate::fsutil::write_atomic;
use crate::home::Home;
use crate::index::{check_name, index_path, parse_index_file, IndexConfig, IndexLine};
use crate::transport::Transport;
use crate::trust::{self, Root, Snapshot, Timestamp, MAX_METADATA_BYTES, MAX_TIMESTAMP_BYTES};
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
            Some(b) => match trust::verify_snapshot(&root, b) {
                Ok(o) => Some(o),
                // Online, a cached snapshot signed by a key the current root
                // no longer lists (the snapshot key was rotated) stops being
                // the rollback baseline, as in TUF; the timestamp (when the
                // root has one) and the fresh snapshot are still checked.
                Err(_) if !offline => None,
                Err(e) => {
                    return Err(
                        PkgError::new(e.kind, format!("the cached snapshot no longer verifies: {}", e.message))
                            .hint("run once without --offline to fetch the registry's current metadata"),
                    )
                }
            },
            None => None,
        };
        let snapshot = match &transport {
            Some(t) => {
                // The timestamp first (when the root has the role): it names
                // the one snapshot that may be accepted now.
                let stamped = match root.timestamp {
                    Some(_) => Some(fetch_timestamp(t, home, &id, &config.url, &root, now)?),
                    None => None,
                };
                let bytes = match &stamped {
                    Some((ts, _)) => {
                        let what = format!("snapshot.json from {}", config.url);
                        let b = t
                            .get("snapshot.json", ts.snapshot.length.min(MAX_METADATA_BYTES))
                            .map_err(|e| {
                                if e.kind == ErrorKind::Integrity {
                                    PkgError::new(
                                        e.kind,
                                        format!(
                                            "{what} does not match timestamp version {}: expected snapshot version {} ({} bytes), but {}",
                                            ts.version, ts.snapshot.version, ts.snapshot.length, e.message
                                        ),
                                    )
                                    .hint(mismatch_hint(&config.url))
                                } else {
                                    e
                                }
                            })?;
                        trust::check_snapshot_meta(&what, ts, &b).map_err(|e| e.hint(mismatch_hint(&config.url)))?;
                        b
                    }
                    None => t.get("snapshot.json", MAX_METADATA_BYTES)?,
                };
                let snap = trust::verify_snapshot(&root, &bytes)?;
                if let Some((ts, _)) = &stamped {
                    if snap.version != ts.snapshot.version {
                        return Err(PkgError::new(
                            ErrorKind::Trust,
                            format!(
                                "snapshot.json from {}: timestamp version {} names snapshot version {}, found version {}",
                                config.url, ts.version, ts.snapshot.version, snap.version
                            ),
                        )
                        .hint("the registry's operator must re-sign the timestamp: apsi-registry timestamp REG --key TIMESTAMP.key"));
                    }
                }
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
                if let Some((_, ts_bytes)) = &stamped {
                    write_atomic(&trust_file(home, &id, "timestamp.json"), ts_bytes)?;
                }
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

/// What to do when a snapshot does not match its timestamp.
fn mismatch_hint(url: &str) -> String {
    format!(
        "{url} serves a snapshot other than the one its signed timestamp names: a mirror caught between \
         updates, or one withholding them; try again later or point APSI_REGISTRY at another mirror. \
         Its operator must put snapshot.json and timestamp.json in place together (`apsi-registry sign` \
         writes both)"
    )
}

/// Fetches `timestamp.json` (at most [`MAX_TIMESTAMP_BYTES`]), verifies it
/// against the root's timestamp role, and refuses a rollback (a version below
/// the one verified before, or the same version with other bytes) and an
/// expired one. The cached timestamp is the rollback baseline; one that no
/// longer verifies under the current root (its key was rotated away) is
/// dropped, as TUF does, so a new timestamp key can start afresh. Returns the
/// timestamp and its bytes; the caller persists them once the snapshot they
/// name has been accepted.
fn fetch_timestamp(
    t: &Transport,
    home: &Home,
    id: &str,
    url: &str,
    root: &Root,
    now: u64,
) -> Result<(Timestamp, Vec<u8>)> {
    let what = format!("timestamp.json from {url}");
    let cached_path = trust_file(home, id, "timestamp.json");
    let cached = std::fs::read(&cached_path).ok().and_then(|b| {
        trust::verify_timestamp("the cached timestamp", root, &b)
            .ok()
            .map(|ts| (ts, b))
    });
    let bytes = match t.get_optional("timestamp.json", MAX_TIMESTAMP_BYTES) {
        Ok(Some(b)) => b,
        Ok(None) => {
            return Err(PkgError::new(
                ErrorKind::Trust,
                format!(
                    "{what}: not found, but the registry's root (version {}) requires a signed timestamp",
                    root.version
                ),
            )
            .hint(
                "the registry's operator must publish one (apsi-registry timestamp REG --key TIMESTAMP.key); \
                 if this is a mirror, point APSI_REGISTRY at another one",
            ))
        }
        Err(e) if e.kind == ErrorKind::Integrity => {
            return Err(PkgError::new(
                e.kind,
                format!("{what}: expected at most {MAX_TIMESTAMP_BYTES} bytes ({})", e.message),
            )
            .hint("a timestamp is a few hundred bytes; do not use this registry or mirror, and tell its operator"))
        }
        Err(e) => return Err(e),
    };
    let ts = trust::verify_timestamp(&what, root, &bytes)?;
    if let Some((old, old_bytes)) = &cached {
        if ts.version < old.version {
            return Err(PkgError::new(
                ErrorKind::Trust,
                format!(
                    "timestamp rollback: {what} is version {} (naming snapshot version {}), but version {} \
                     (naming snapshot version {}) was verified before",
                    ts.version, ts.snapshot.version, old.version, old.snapshot.version
                ),
            )
            .hint(
                "someone may be replaying old metadata (a stale or malicious mirror); \
                 point APSI_REGISTRY at another mirror, or tell the registry's operator",
            ));
        }
        if ts.version == old.version && &bytes != old_bytes {
            return err(
                ErrorKind::Trust,
                format!(
                    "{what}: version {} changed content without a new version (expected the bytes verified before)",
                    ts.version
                ),
            );
        }
    }
    if ts.expires <= now {
        return Err(PkgError::new(
            ErrorKind::Trust,
            format!(
                "{what} (version {}, naming snapshot version {}) expired at {}; it is now {}",
                ts.version,
                ts.snapshot.version,
                trust::utc_date(ts.expires),
                trust::utc_date(now)
            ),
        )
        .hint(
            "the registry's operator must re-sign it (apsi-registry timestamp REG --key TIMESTAMP.key, \
             daily from cron); a mirror serving it may have stopped updating or be withholding updates: \
             point APSI_REGISTRY at another mirror, or use --offline to work from what is cached",
        ));
    }
    Ok((ts, bytes))
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
