//! `apsi-registry`: build, sign, index and serve an Apsi package registry.
//! The binary is a thin wrapper around [`run`]; tests drive the same code.
//! See `docs/PACKAGES.md` (for registry operators).

pub mod serve;

use apsi_pkg::error::{err, ErrorKind, PkgError, Result};
use apsi_pkg::manifest::PackageManifest;
use apsi_pkg::publish::{self, RootSpec};
use apsi_pkg::trust::{now_secs, SecretKey};
use std::path::{Path, PathBuf};

pub const USAGE: &str = "\
usage: apsi-registry COMMAND …

  keygen --dir DIR --name NAME            new ed25519 key: DIR/NAME.key (secret), DIR/NAME.pub
                                          (one per role: root keys offline, snapshot and
                                          timestamp keys where they sign, e.g. --name timestamp)
  root REG --root-key PUB… [--threshold N] [--snapshot-key PUB… [--snapshot-threshold N]]
           [--timestamp-key PUB… [--timestamp-threshold N]]
           --sign KEY… [--expires-days D]  write the next N.root.json (a rotation is signed by
                                           the old root's keys and the new one's); snapshot keys
                                           default to the root keys, timestamp keys to the
                                           snapshot keys
  build DIR [--out OUTDIR] [--level 0-9]  pack DIR (with apsi-package.toml) into NAME-VERSION-TARGET.tar.gz
  build --manifest FILE [--target TRIPLE|host] [--out OUTDIR] FILE…
                                          pack built artifacts (e.g. a .so) with a manifest;
                                          --target sets the manifest's target (host: this machine's)
  index REG ARCHIVE… [--skip-published]   publish archives: copy to REG/dl, append index lines
                                          (--skip-published: the same bytes already published are fine)
  yank REG NAME VERSION [--target T] [--undo]
  sign REG --key KEY… [--expires-days D | --expires-secs S]
           [--timestamp-key KEY… [--timestamp-expires-secs S] | --no-timestamp]
                                          sign a new snapshot.json of the index (30 days), then
                                          timestamp.json naming it (1 day) with --timestamp-key
                                          (default: --key) when the root has a timestamp role
  timestamp REG --key KEY… [--expires-secs S | --expires-days D]
                                          re-sign timestamp.json for the current snapshot
                                          (default 1 day; run it daily from cron)
  serve REG [--addr 127.0.0.1:PORT] [--connections N]
                                          serve REG over HTTP (Range supported)
";

/// Flags of the form `--name VALUE` (repeatable) and positional arguments.
struct Flags {
    pos: Vec<String>,
    named: Vec<(String, String)>,
    switches: Vec<String>,
}

fn parse_flags(args: &[String], switches: &[&str]) -> Result<Flags> {
    let mut f = Flags {
        pos: Vec::new(),
        named: Vec::new(),
        switches: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if let Some(name) = a.strip_prefix("--") {
            if switches.contains(&name) {
                f.switches.push(name.to_string());
            } else {
                let Some(v) = args.get(i + 1) else {
                    return err(ErrorKind::Usage, format!("'{a}' needs a value"));
                };
                f.named.push((name.to_string(), v.clone()));
                i += 1;
            }
        } else {
            f.pos.push(a.clone());
        }
        i += 1;
    }
    Ok(f)
}

impl Flags {
    fn all(&self, name: &str) -> Vec<&str> {
        self.named
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
    fn one(&self, name: &str) -> Option<&str> {
        self.all(name).last().copied()
    }
    fn num(&self, name: &str, default: u64) -> Result<u64> {
        match self.one(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| PkgError::new(ErrorKind::Usage, format!("--{name} needs a whole number, found '{v}'"))),
        }
    }
    fn check(&self, allowed: &[&str]) -> Result<()> {
        for (n, _) in &self.named {
            if !allowed.contains(&n.as_str()) {
                return err(ErrorKind::Usage, format!("unknown option '--{n}'"));
            }
        }
        Ok(())
    }
    fn reg(&self) -> Result<PathBuf> {
        self.pos
            .first()
            .map(PathBuf::from)
            .ok_or_else(|| PkgError::new(ErrorKind::Usage, "missing the registry folder REG"))
    }
}

/// Signed metadata must outlive its publication by at least this long.
const MIN_LIFETIME_SECS: i64 = 60;

/// How long a timestamp lives unless told otherwise: a frozen mirror is
/// caught within this long.
const TIMESTAMP_SECS: u64 = 86_400;

fn expires(f: &Flags, default_days: u64) -> Result<u64> {
    expires_from(f, "expires-days", "expires-secs", default_days * 86_400)
}

/// The expiry from `--DAYS_FLAG D` or `--SECS_FLAG S` (default
/// `default_secs` from now); refused when in the past or under a minute away.
fn expires_from(f: &Flags, days_flag: &str, secs_flag: &str, default_secs: u64) -> Result<u64> {
    let now = now_secs() as i64;
    let at = if let Some(s) = f.one(secs_flag) {
        let s: i64 = s
            .parse()
            .map_err(|_| PkgError::new(ErrorKind::Usage, format!("--{secs_flag} needs a number, found '{s}'")))?;
        now.saturating_add(s)
    } else if f.one(days_flag).is_some() {
        let days = f.num(days_flag, 0)?;
        now.saturating_add(days.saturating_mul(86_400).min(i64::MAX as u64) as i64)
    } else {
        now.saturating_add(default_secs.min(i64::MAX as u64) as i64)
    };
    if at < now + MIN_LIFETIME_SECS {
        return Err(PkgError::new(
            ErrorKind::Usage,
            format!(
                "an expiry at {} is {}: clients would refuse this metadata at once",
                apsi_pkg::trust::utc_date(at.max(0) as u64),
                if at <= now {
                    "not in the future"
                } else {
                    "less than a minute away"
                }
            ),
        )
        .hint(format!(
            "give {}--{secs_flag} of at least {MIN_LIFETIME_SECS} (default: {})",
            if days_flag.is_empty() {
                String::new()
            } else {
                format!("--{days_flag} D or ")
            },
            if default_secs.is_multiple_of(86_400) {
                format!("{} day(s)", default_secs / 86_400)
            } else {
                format!("{default_secs} s")
            }
        )));
    }
    Ok(at as u64)
}

fn keys(paths: &[&str]) -> Result<Vec<SecretKey>> {
    paths.iter().map(|p| publish::load_secret(Path::new(p))).collect()
}

/// Runs one `apsi-registry` command line (without the program name).
pub fn run(args: &[String]) -> Result<()> {
    let Some(cmd) = args.first() else {
        eprint!("{USAGE}");
        return err(ErrorKind::Usage, "missing COMMAND");
    };
    let rest = &args[1..];
    match cmd.as_str() {
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            Ok(())
        }
        "keygen" => {
            let f = parse_flags(rest, &[])?;
            f.check(&["dir", "name"])?;
            let dir = f.one("dir").unwrap_or(".");
            let name = f
                .one("name")
                .ok_or_else(|| PkgError::new(ErrorKind::Usage, "keygen needs --name NAME"))?;
            let id = publish::keygen(Path::new(dir), name)?;
            println!("key {id}\n  secret: {dir}/{name}.key (keep it secret; offline for root keys)\n  public: {dir}/{name}.pub");
            Ok(())
        }
        "root" => {
            let f = parse_flags(rest, &[])?;
            f.check(&[
                "root-key",
                "threshold",
                "snapshot-key",
                "snapshot-threshold",
                "timestamp-key",
                "timestamp-threshold",
                "sign",
                "expires-days",
                "expires-secs",
            ])?;
            let reg = f.reg()?;
            // The public keys named by `--NAME` (several allowed).
            let keys_of = |name: &str| -> Result<Vec<_>> {
                f.all(name).iter().map(|p| publish::load_public(Path::new(p))).collect()
            };
            let root_keys = keys_of("root-key")?;
            if root_keys.is_empty() {
                return err(ErrorKind::Usage, "root needs at least one --root-key PUB");
            }
            // Without their own keys, the snapshot role takes the root's and
            // the timestamp role the snapshot's.
            let snap_keys = Some(keys_of("snapshot-key")?)
                .filter(|k| !k.is_empty())
                .unwrap_or_else(|| root_keys.clone());
            let ts_keys = Some(keys_of("timestamp-key")?)
                .filter(|k| !k.is_empty())
                .unwrap_or_else(|| snap_keys.clone());
            let spec = RootSpec {
                root_threshold: f.num("threshold", 1)? as u32,
                snapshot_threshold: f.num("snapshot-threshold", 1)? as u32,
                timestamp_threshold: f.num("timestamp-threshold", 1)? as u32,
                root_keys,
                snapshot_keys: snap_keys,
                timestamp_keys: ts_keys,
                expires: expires(&f, 365)?,
            };
            let signers = keys(&f.all("sign"))?;
            let refs: Vec<&SecretKey> = signers.iter().collect();
            let r = publish::write_root(&reg, &spec, &refs)?;
            println!("wrote {}/{}.root.json", reg.display(), r.version);
            Ok(())
        }
        "build" => {
            let f = parse_flags(rest, &[])?;
            f.check(&["out", "level", "manifest", "target"])?;
            if f.one("target").is_some() && f.one("manifest").is_none() {
                return err(
                    ErrorKind::Usage,
                    "build --target goes with --manifest FILE (a folder is packed as it is)",
                );
            }
            let out = PathBuf::from(f.one("out").unwrap_or("."));
            let level = f.num("level", 6)?.min(9) as u32;
            let dir_owned;
            let (dir, scratch) = match f.one("manifest") {
                Some(m) => {
                    // Stage the manifest and the artifacts in a scratch folder.
                    // Unique per call: builds may run side by side in one process.
                    let s = apsi_pkg::fsutil::temp_sibling(&std::env::temp_dir().join("apsi-registry-build"), "stage");
                    std::fs::create_dir_all(&s).map_err(|e| apsi_pkg::error::io_err("create", &s, &e))?;
                    stage_manifest(Path::new(m), &s.join("apsi-package.toml"), f.one("target"))?;
                    for a in &f.pos {
                        let p = Path::new(a);
                        let name = p
                            .file_name()
                            .ok_or_else(|| PkgError::new(ErrorKind::Usage, format!("'{a}' is not a file")))?;
                        std::fs::copy(p, s.join(name)).map_err(|e| apsi_pkg::error::io_err("copy", p, &e))?;
                    }
                    dir_owned = s.clone();
                    (dir_owned.as_path(), Some(s))
                }
                None => {
                    let d = f
                        .pos
                        .first()
                        .ok_or_else(|| PkgError::new(ErrorKind::Usage, "build needs a folder DIR"))?;
                    dir_owned = PathBuf::from(d);
                    (dir_owned.as_path(), None)
                }
            };
            let res = build(dir, &out, level);
            if let Some(s) = scratch {
                let _ = std::fs::remove_dir_all(s);
            }
            let (path, m) = res?;
            println!("built {} ({} {} for {})", path.display(), m.name, m.version, m.target);
            Ok(())
        }
        "index" => {
            let f = parse_flags(rest, &["skip-published"])?;
            f.check(&[])?;
            let reg = f.reg()?;
            if f.pos.len() < 2 {
                return err(ErrorKind::Usage, "index needs REG and at least one ARCHIVE");
            }
            let skip = f.switches.iter().any(|s| s == "skip-published");
            for a in &f.pos[1..] {
                let (l, added) = publish::add_unless_published(&reg, Path::new(a), skip)?;
                let what = if added {
                    "indexed"
                } else {
                    "already published, unchanged:"
                };
                println!("{what} {} {} ({}) sha256 {}", l.name, l.vers, l.target, l.cksum);
            }
            println!(
                "now sign a new snapshot and timestamp: apsi-registry sign {} --key KEY [--timestamp-key KEY]",
                reg.display()
            );
            Ok(())
        }
        "yank" => {
            let f = parse_flags(rest, &["undo"])?;
            f.check(&["target"])?;
            let reg = f.reg()?;
            let (Some(name), Some(vers)) = (f.pos.get(1), f.pos.get(2)) else {
                return err(ErrorKind::Usage, "yank needs REG NAME VERSION");
            };
            let undo = f.switches.iter().any(|s| s == "undo");
            let n = publish::yank(&reg, name, vers, f.one("target"), !undo)?;
            println!(
                "{} {name} {vers} ({n} line(s)); now sign a new snapshot and timestamp (apsi-registry sign)",
                if undo { "unyanked" } else { "yanked" }
            );
            Ok(())
        }
        "sign" => {
            let f = parse_flags(rest, &["no-timestamp"])?;
            f.check(&[
                "key",
                "expires-days",
                "expires-secs",
                "timestamp-key",
                "timestamp-expires-secs",
            ])?;
            let reg = f.reg()?;
            let ks = keys(&f.all("key"))?;
            if ks.is_empty() {
                return err(ErrorKind::Usage, "sign needs at least one --key KEY");
            }
            let refs: Vec<&SecretKey> = ks.iter().collect();
            let no_ts = f.switches.iter().any(|s| s == "no-timestamp");
            if no_ts && (f.one("timestamp-key").is_some() || f.one("timestamp-expires-secs").is_some()) {
                return err(
                    ErrorKind::Usage,
                    "--no-timestamp goes without --timestamp-key and --timestamp-expires-secs",
                );
            }
            // Everything is checked before the snapshot is written: a new
            // snapshot without a timestamp naming it is refused by clients.
            let ts_keys = keys(&f.all("timestamp-key"))?;
            let ts_refs: Vec<&SecretKey> = if ts_keys.is_empty() {
                refs.clone()
            } else {
                ts_keys.iter().collect()
            };
            let root = publish::latest_root(&reg)?;
            let ts_role = root.as_ref().and_then(|r| r.timestamp.clone());
            let stamp = match (&ts_role, no_ts) {
                (_, true) => None,
                (None, false) => {
                    if !ts_keys.is_empty() {
                        return Err(no_timestamp_role(&reg, root.as_ref()));
                    }
                    None
                }
                (Some(role), false) => {
                    let from = if ts_keys.is_empty() {
                        KeysFrom::SignFlag
                    } else {
                        KeysFrom::SignTimestampFlag
                    };
                    check_covers(&reg, root.as_ref(), role, &ts_refs, from)?;
                    Some(expires_from(&f, "", "timestamp-expires-secs", TIMESTAMP_SECS)?)
                }
            };
            let s = publish::sign_snapshot(&reg, &refs, expires(&f, 30)?)?;
            println!(
                "signed snapshot version {} ({} files), expires {}",
                s.version,
                s.files.len(),
                apsi_pkg::trust::utc_date(s.expires)
            );
            match stamp {
                Some(at) => print_timestamp(&publish::sign_timestamp(&reg, &ts_refs, at)?),
                None if no_ts && ts_role.is_some() => println!(
                    "timestamp.json not signed (--no-timestamp): clients refuse this snapshot until \
                     `apsi-registry timestamp {} --key TIMESTAMP.key` runs",
                    reg.display()
                ),
                None => {}
            }
            Ok(())
        }
        "timestamp" => {
            let f = parse_flags(rest, &[])?;
            f.check(&["key", "expires-days", "expires-secs"])?;
            let reg = f.reg()?;
            let ks = keys(&f.all("key"))?;
            if ks.is_empty() {
                return err(ErrorKind::Usage, "timestamp needs at least one --key KEY");
            }
            let refs: Vec<&SecretKey> = ks.iter().collect();
            let root = publish::latest_root(&reg)?;
            let Some(role) = root.as_ref().and_then(|r| r.timestamp.clone()) else {
                return Err(no_timestamp_role(&reg, root.as_ref()));
            };
            check_covers(&reg, root.as_ref(), &role, &refs, KeysFrom::TimestampCommand)?;
            let at = expires_from(&f, "expires-days", "expires-secs", TIMESTAMP_SECS)?;
            let ts = publish::sign_timestamp(&reg, &refs, at)?;
            print_timestamp(&ts);
            // A fresh timestamp over an expired (or soon expired) snapshot
            // still leaves clients refusing it: say so while it can be fixed.
            if let Some(r) = &root {
                let snap = std::fs::read(reg.join("snapshot.json"))
                    .ok()
                    .and_then(|b| apsi_pkg::trust::verify_snapshot(r, &b).ok());
                if let Some(s) = snap.filter(|s| s.expires < ts.expires) {
                    eprintln!(
                        "warning: snapshot version {} expires at {}, before this timestamp; \
                         re-sign it: apsi-registry sign {} --key SNAPSHOT.key",
                        s.version,
                        apsi_pkg::trust::utc_date(s.expires),
                        reg.display()
                    );
                }
            }
            Ok(())
        }
        "serve" => {
            let f = parse_flags(rest, &[])?;
            f.check(&["addr", "connections"])?;
            let reg = f.reg()?;
            let addr = f.one("addr").unwrap_or("127.0.0.1:8787");
            serve::serve(&reg, addr, f.num("connections", 256)?.clamp(1, 4096) as usize)
        }
        other => {
            eprint!("{USAGE}");
            err(ErrorKind::Usage, format!("unknown command '{other}'"))
        }
    }
}

fn print_timestamp(ts: &apsi_pkg::trust::Timestamp) {
    println!(
        "signed timestamp version {} (snapshot version {}), expires {}",
        ts.version,
        ts.snapshot.version,
        apsi_pkg::trust::utc_date(ts.expires)
    );
}

fn no_timestamp_role(reg: &Path, root: Option<&apsi_pkg::trust::Root>) -> PkgError {
    let which = match root {
        Some(r) => format!("{}/{}.root.json", reg.display(), r.version),
        None => format!("{} (no root yet)", reg.display()),
    };
    PkgError::new(
        ErrorKind::Usage,
        format!("{which} declares no timestamp role, so a timestamp would not be trusted"),
    )
    .hint(format!(
        "write the next root with one: apsi-registry root {} --root-key PUB… --snapshot-key PUB… \
         --timestamp-key keys/timestamp.pub --sign ROOT.key… (old and new root keys)",
        reg.display()
    ))
}

/// Which flag gave the keys checked by [`check_covers`].
#[derive(Clone, Copy, PartialEq)]
enum KeysFrom {
    /// `sign --key` (no `--timestamp-key`).
    SignFlag,
    /// `sign --timestamp-key`.
    SignTimestampFlag,
    /// `timestamp --key`.
    TimestampCommand,
}

/// Refuses, before anything is written, keys that cannot meet the latest
/// root's timestamp role.
fn check_covers(
    reg: &Path,
    root: Option<&apsi_pkg::trust::Root>,
    role: &apsi_pkg::trust::Role,
    keys: &[&SecretKey],
    from: KeysFrom,
) -> Result<()> {
    if publish::covers(role, keys) {
        return Ok(());
    }
    let short = |id: &str| id.get(..12).unwrap_or(id).to_string();
    let wanted: Vec<String> = role.keyids.iter().map(|k| short(k)).collect();
    let found: Vec<String> = keys.iter().map(|k| short(&k.keyid())).collect();
    let version = root.map(|r| r.version).unwrap_or(0);
    let (flag, hint) = match from {
        KeysFrom::TimestampCommand => (
            "--key",
            format!(
                "give the timestamp key: apsi-registry timestamp {} --key keys/timestamp.key",
                reg.display()
            ),
        ),
        KeysFrom::SignFlag | KeysFrom::SignTimestampFlag => (
            if from == KeysFrom::SignFlag {
                "--key"
            } else {
                "--timestamp-key"
            },
            format!(
                "give the timestamp key: --timestamp-key keys/timestamp.key (or sign --no-timestamp here and run \
                 `apsi-registry timestamp {} --key keys/timestamp.key` where that key lives)",
                reg.display()
            ),
        ),
    };
    Err(PkgError::new(
        ErrorKind::Usage,
        format!(
            "{}/{version}.root.json's timestamp role needs {} of the keys [{}]; the {flag} keys given are [{}]",
            reg.display(),
            role.threshold,
            wanted.join(", "),
            found.join(", ")
        ),
    )
    .hint(hint))
}

/// Copies a manifest into the staging folder, with its `target` replaced
/// when one is given (`host` is this machine's triple).
fn stage_manifest(from: &Path, to: &Path, target: Option<&str>) -> Result<()> {
    let text = std::fs::read_to_string(from).map_err(|e| apsi_pkg::error::io_err("read", from, &e))?;
    let text = match target {
        None => text,
        Some(t) => {
            let t = if t == "host" {
                apsi_pkg::resolve::host_target()
            } else {
                t.to_string()
            };
            apsi_pkg::index::check_target(&t)?;
            let mut table: toml::Table = toml::from_str(&text)
                .map_err(|e| PkgError::new(ErrorKind::Usage, format!("{}: {}", from.display(), e.message())))?;
            table.insert("target".into(), toml::Value::String(t));
            toml::to_string(&table).map_err(|e| PkgError::new(ErrorKind::Usage, format!("{}: {e}", from.display())))?
        }
    };
    std::fs::write(to, text).map_err(|e| apsi_pkg::error::io_err("write", to, &e))
}

pub fn build(dir: &Path, out: &Path, level: u32) -> Result<(PathBuf, PackageManifest)> {
    let mp = dir.join("apsi-package.toml");
    let text = std::fs::read_to_string(&mp).map_err(|e| apsi_pkg::error::io_err("read", &mp, &e))?;
    let m = PackageManifest::parse(&text)?;
    std::fs::create_dir_all(out).map_err(|e| apsi_pkg::error::io_err("create", out, &e))?;
    let dest = out.join(m.archive_name());
    apsi_pkg::archive::pack(dir, &m.prefix(), &dest, level)?;
    Ok((dest, m))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn expiries_in_the_past_or_too_soon_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let keys = t.path().join("keys");
        let reg = t.path().join("reg");
        let (k, r) = (keys.to_str().unwrap(), reg.to_str().unwrap());
        run(&args(&["keygen", "--dir", k, "--name", "root"])).unwrap();
        let key = keys.join("root.key");
        let pubk = keys.join("root.pub");
        for bad in [
            &["--expires-secs", "0"][..],
            &["--expires-secs", "-5"],
            &["--expires-secs", "30"],
            &["--expires-days", "0"],
        ] {
            let mut a = args(&[
                "root",
                r,
                "--root-key",
                pubk.to_str().unwrap(),
                "--sign",
                key.to_str().unwrap(),
            ]);
            a.extend(args(bad));
            let e = run(&a).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Usage, "{bad:?}: {e}");
            assert!(e.message.contains(" UTC is "), "{bad:?}: a date, not unix seconds: {e}");
        }
        run(&args(&[
            "root",
            r,
            "--root-key",
            pubk.to_str().unwrap(),
            "--sign",
            key.to_str().unwrap(),
        ]))
        .unwrap();
        let e = run(&args(&[
            "sign",
            r,
            "--key",
            key.to_str().unwrap(),
            "--expires-secs",
            "0",
        ]))
        .unwrap_err();
        assert!(e.message.contains("not in the future"), "{e}");
        run(&args(&[
            "sign",
            r,
            "--key",
            key.to_str().unwrap(),
            "--expires-secs",
            "120",
        ]))
        .unwrap();
    }

    fn read_signed(p: &Path) -> serde_json::Value {
        let b = std::fs::read(p).unwrap();
        apsi_pkg::trust::parse_envelope("t", &b).unwrap().signed
    }

    #[test]
    fn timestamp_key_signs_timestamps_daily() {
        let t = tempfile::tempdir().unwrap();
        let keys = t.path().join("keys");
        let reg = t.path().join("reg");
        let s = |p: &Path| p.to_str().unwrap().to_string();
        let (k, r) = (s(&keys), s(&reg));
        for name in ["root", "timestamp"] {
            run(&args(&["keygen", "--dir", &k, "--name", name])).unwrap();
        }
        let key = |n: &str| s(&keys.join(n));
        run(&args(&[
            "root",
            &r,
            "--root-key",
            &key("root.pub"),
            "--timestamp-key",
            &key("timestamp.pub"),
            "--sign",
            &key("root.key"),
        ]))
        .unwrap();
        let root = apsi_pkg::publish::latest_root(&reg).unwrap().unwrap();
        let ts_role = root.timestamp.clone().expect("the root declares a timestamp role");
        assert_eq!(
            ts_role.keyids,
            vec![publish::load_public(&keys.join("timestamp.pub")).unwrap().0]
        );

        // The snapshot key alone cannot sign the timestamp: refused before
        // anything is written.
        let e = run(&args(&["sign", &r, "--key", &key("root.key")])).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Usage);
        assert!(e.message.contains("timestamp role needs 1 of the keys"), "{e}");
        assert!(e.hint.as_deref().unwrap_or("").contains("--timestamp-key"), "{e}");
        assert!(!reg.join("snapshot.json").exists());

        run(&args(&[
            "sign",
            &r,
            "--key",
            &key("root.key"),
            "--timestamp-key",
            &key("timestamp.key"),
        ]))
        .unwrap();
        let snap_bytes = std::fs::read(reg.join("snapshot.json")).unwrap();
        let ts =
            apsi_pkg::trust::verify_timestamp("t", &root, &std::fs::read(reg.join("timestamp.json")).unwrap()).unwrap();
        assert_eq!(ts.version, 1);
        assert_eq!(ts.snapshot.version, 1);
        assert_eq!(ts.snapshot.sha256, apsi_pkg::digest::sha256_hex(&snap_bytes));
        // A day by default.
        let left = ts.expires - now_secs();
        assert!((86_000..=86_400).contains(&left), "{left}");

        // The daily re-sign: only the timestamp changes.
        run(&args(&["timestamp", &r, "--key", &key("timestamp.key")])).unwrap();
        assert_eq!(std::fs::read(reg.join("snapshot.json")).unwrap(), snap_bytes);
        let ts2 = read_signed(&reg.join("timestamp.json"));
        assert_eq!(ts2["version"], 2);
        assert_eq!(ts2["snapshot"]["version"], 1);

        // Past or too-soon expiries, and the wrong key, are refused.
        for bad in ["0", "-5", "30"] {
            let e = run(&args(&[
                "timestamp",
                &r,
                "--key",
                &key("timestamp.key"),
                "--expires-secs",
                bad,
            ]))
            .unwrap_err();
            assert!(e.message.contains(" UTC is "), "{bad}: {e}");
        }
        let e = run(&args(&[
            "sign",
            &r,
            "--key",
            &key("root.key"),
            "--timestamp-key",
            &key("timestamp.key"),
            "--timestamp-expires-secs",
            "10",
        ]))
        .unwrap_err();
        assert!(e.message.contains("less than a minute away"), "{e}");
        assert!(
            e.hint.as_deref().unwrap_or("").contains("--timestamp-expires-secs"),
            "{e}"
        );
        let e = run(&args(&["timestamp", &r, "--key", &key("root.key")])).unwrap_err();
        assert!(e.message.contains("timestamp role needs 1 of the keys"), "{e}");
        assert!(e.message.contains("the --key keys given are ["), "{e}");
        assert!(
            e.hint.as_deref().unwrap_or("").contains("apsi-registry timestamp"),
            "{e}"
        );
        assert_eq!(read_signed(&reg.join("timestamp.json"))["version"], 2);

        // --no-timestamp leaves the timestamp to the machine holding its key.
        run(&args(&["sign", &r, "--key", &key("root.key"), "--no-timestamp"])).unwrap();
        assert_eq!(read_signed(&reg.join("timestamp.json"))["snapshot"]["version"], 1);
        run(&args(&[
            "timestamp",
            &r,
            "--key",
            &key("timestamp.key"),
            "--expires-secs",
            "120",
        ]))
        .unwrap();
        let ts3 = read_signed(&reg.join("timestamp.json"));
        assert_eq!(
            (ts3["version"].as_u64(), ts3["snapshot"]["version"].as_u64()),
            (Some(3), Some(2))
        );
    }

    #[test]
    fn single_key_layout_signs_both_and_old_roots_need_no_timestamp() {
        let t = tempfile::tempdir().unwrap();
        let keys = t.path().join("keys");
        let s = |p: &Path| p.to_str().unwrap().to_string();
        let k = s(&keys);
        run(&args(&["keygen", "--dir", &k, "--name", "root"])).unwrap();
        let (pubk, key) = (s(&keys.join("root.pub")), s(&keys.join("root.key")));
        // The layout of the existing docs and tests: one key for everything.
        let reg = t.path().join("reg");
        let r = s(&reg);
        run(&args(&["root", &r, "--root-key", &pubk, "--sign", &key])).unwrap();
        run(&args(&["sign", &r, "--key", &key])).unwrap();
        let root = apsi_pkg::publish::latest_root(&reg).unwrap().unwrap();
        assert!(root.timestamp.is_some());
        apsi_pkg::trust::verify_timestamp("t", &root, &std::fs::read(reg.join("timestamp.json")).unwrap()).unwrap();

        // A root made before the role existed: sign works as before, and
        // the timestamp command says how to add the role.
        let old = t.path().join("old");
        let me = publish::load_public(&keys.join("root.pub")).unwrap();
        let spec = RootSpec {
            root_keys: vec![me.clone()],
            root_threshold: 1,
            snapshot_keys: vec![me],
            snapshot_threshold: 1,
            timestamp_keys: vec![],
            timestamp_threshold: 1,
            expires: now_secs() + 1000,
        };
        let sk = publish::load_secret(&keys.join("root.key")).unwrap();
        publish::write_root(&old, &spec, &[&sk]).unwrap();
        let o = s(&old);
        run(&args(&["sign", &o, "--key", &key])).unwrap();
        assert!(!old.join("timestamp.json").exists());
        let e = run(&args(&["timestamp", &o, "--key", &key])).unwrap_err();
        assert!(e.message.contains("1.root.json declares no timestamp role"), "{e}");
        assert!(e.hint.as_deref().unwrap_or("").contains("--timestamp-key"), "{e}");
        // Adding it is a root rotation.
        run(&args(&["root", &o, "--root-key", &pubk, "--sign", &key])).unwrap();
        run(&args(&["timestamp", &o, "--key", &key])).unwrap();
        assert!(old.join("timestamp.json").exists());
    }
}
