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
  root REG --root-key PUB… [--threshold N] [--snapshot-key PUB… [--snapshot-threshold N]]
           --sign KEY… [--expires-days D]  write the next N.root.json (a rotation is signed by
                                           the old root's keys and the new one's)
  build DIR [--out OUTDIR] [--level 0-9]  pack DIR (with apsi-package.toml) into NAME-VERSION-TARGET.tar.gz
  build --manifest FILE [--target TRIPLE|host] [--out OUTDIR] FILE…
                                          pack built artifacts (e.g. a .so) with a manifest;
                                          --target sets the manifest's target (host: this machine's)
  index REG ARCHIVE… [--skip-published]   publish archives: copy to REG/dl, append index lines
                                          (--skip-published: the same bytes already published are fine)
  yank REG NAME VERSION [--target T] [--undo]
  sign REG --key KEY… [--expires-days D | --expires-secs S]
                                          sign a new snapshot.json of the index
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

fn expires(f: &Flags, default_days: u64) -> Result<u64> {
    let now = now_secs() as i64;
    let at = if let Some(s) = f.one("expires-secs") {
        let s: i64 = s
            .parse()
            .map_err(|_| PkgError::new(ErrorKind::Usage, format!("--expires-secs needs a number, found '{s}'")))?;
        now.saturating_add(s)
    } else {
        let days = f.num("expires-days", default_days)?;
        now.saturating_add(days.saturating_mul(86_400).min(i64::MAX as u64) as i64)
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
            "give --expires-days D (default {default_days}) or --expires-secs of at least {MIN_LIFETIME_SECS}"
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
            println!("key {id}\n  secret: {dir}/{name}.key (keep it offline)\n  public: {dir}/{name}.pub");
            Ok(())
        }
        "root" => {
            let f = parse_flags(rest, &[])?;
            f.check(&[
                "root-key",
                "threshold",
                "snapshot-key",
                "snapshot-threshold",
                "sign",
                "expires-days",
                "expires-secs",
            ])?;
            let reg = f.reg()?;
            let root_keys = f
                .all("root-key")
                .iter()
                .map(|p| publish::load_public(Path::new(p)))
                .collect::<Result<Vec<_>>>()?;
            if root_keys.is_empty() {
                return err(ErrorKind::Usage, "root needs at least one --root-key PUB");
            }
            let snap_keys = match f.all("snapshot-key") {
                v if v.is_empty() => root_keys.clone(),
                v => v
                    .iter()
                    .map(|p| publish::load_public(Path::new(p)))
                    .collect::<Result<Vec<_>>>()?,
            };
            let spec = RootSpec {
                root_threshold: f.num("threshold", 1)? as u32,
                snapshot_threshold: f.num("snapshot-threshold", 1)? as u32,
                root_keys,
                snapshot_keys: snap_keys,
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
                "now sign a new snapshot: apsi-registry sign {} --key KEY",
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
                "{} {name} {vers} ({n} line(s)); now sign a new snapshot",
                if undo { "unyanked" } else { "yanked" }
            );
            Ok(())
        }
        "sign" => {
            let f = parse_flags(rest, &[])?;
            f.check(&["key", "expires-days", "expires-secs"])?;
            let reg = f.reg()?;
            let ks = keys(&f.all("key"))?;
            if ks.is_empty() {
                return err(ErrorKind::Usage, "sign needs at least one --key KEY");
            }
            let refs: Vec<&SecretKey> = ks.iter().collect();
            let s = publish::sign_snapshot(&reg, &refs, expires(&f, 30)?)?;
            println!(
                "signed snapshot version {} ({} files), expires {}",
                s.version,
                s.files.len(),
                apsi_pkg::trust::utc_date(s.expires)
            );
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
}
