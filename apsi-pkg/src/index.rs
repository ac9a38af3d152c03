//! The sparse index, in Cargo's shape: `config.json` at the root and one file
//! per package name (at `1/a`, `2/ab`, `3/a/abc`, `ab/cd/abcd…`), holding one
//! JSON line per (version, target). Only `yanked` may change once published.

use crate::error::{err, ErrorKind, PkgError, Result};
use serde::{Deserialize, Serialize};

/// The index format version this client writes and understands.
pub const INDEX_FORMAT: u32 = 1;

/// `config.json`: where archives are downloaded from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IndexConfig {
    /// Download URL template: `{name}`, `{vers}`, `{target}`, `{cksum}` are
    /// replaced; a relative template is joined to the registry's base URL.
    pub dl: String,
}

impl Default for IndexConfig {
    fn default() -> Self {
        IndexConfig {
            dl: "dl/{name}-{vers}-{target}.tar.gz".to_string(),
        }
    }
}

/// A dependency of one published version.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Dep {
    pub name: String,
    /// A semver requirement, Cargo's operators (`^1.2`, `~1.2.3`, `>=1, <2`, `=1.0.0`, `*`).
    pub req: String,
}

/// One line of an index file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IndexLine {
    pub name: String,
    pub vers: String,
    /// `any`, a target triple such as `x86_64-linux-gnu`.
    pub target: String,
    /// Extra capabilities the archive needs, such as `cuda`.
    #[serde(default)]
    pub tags: Vec<String>,
    /// `library` or `backend`.
    #[serde(default = "default_kind")]
    pub kind: String,
    #[serde(default)]
    pub deps: Vec<Dep>,
    /// SHA-256 of the archive, lower-case hex.
    pub cksum: String,
    /// Length of the archive in bytes.
    pub size: u64,
    /// Total bytes of the files once unpacked.
    pub unpacked_size: u64,
    #[serde(default)]
    pub yanked: bool,
    pub v: u32,
}

fn default_kind() -> String {
    "library".to_string()
}

/// Valid package names: 1–64 of `[a-z0-9_-]`, starting with a letter. Names
/// become file and folder names, so nothing else is accepted.
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.as_bytes()[0].is_ascii_lowercase()
        && name
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-');
    if ok {
        Ok(())
    } else {
        err(ErrorKind::Usage, format!("'{name}' is not a valid package name"))
            .map_err(|e: PkgError| e.hint("a package name is 1 to 64 of a-z, 0-9, '_' and '-', starting with a letter"))
    }
}

/// Apsi's own modules (compiled into `apsi`, or named by its design). A
/// `use NAME` finds a compiled-in module before any package, so a library
/// package with one of these names could never be used: such names are
/// refused for libraries when publishing and installing. Backends may take
/// them (the GPU backend package is `gpu`): they are loaded, not `use`d.
pub const MODULE_NAMES: &[&str] = &[
    "parallel",
    "precision",
    "data",
    "python",
    "native",
    "math",
    "random",
    "gpu",
    "layers",
    "plot",
];

/// Refuses a library package named like one of Apsi's modules.
pub fn check_library_name(name: &str, kind: &str) -> Result<()> {
    if kind == "library" && MODULE_NAMES.contains(&name) {
        return Err(PkgError::new(
            ErrorKind::Usage,
            format!("a library package may not be named '{name}': `use {name}` finds Apsi's own module first, so the package could never be used"),
        )
        .hint(format!("choose another name, such as '{name}x' or 'my-{name}'")));
    }
    Ok(())
}

/// Valid targets and tags: 1–64 of `[a-z0-9_.-]`.
pub fn check_target(t: &str) -> Result<()> {
    let ok = !t.is_empty()
        && t.len() <= 64
        && t.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-' || c == b'.');
    if ok {
        Ok(())
    } else {
        err(
            ErrorKind::Usage,
            format!("'{t}' is not a valid target or tag (expected a-z, 0-9, '_', '-', '.')"),
        )
    }
}

/// The index file's path for a package name, Cargo's layout (names are
/// checked ASCII; any other text still gets a path, never a panic).
pub fn index_path(name: &str) -> String {
    let c: Vec<char> = name.chars().collect();
    let part = |a: usize, b: usize| -> String { c.get(a..b).map(|s| s.iter().collect()).unwrap_or_default() };
    match c.len() {
        1 => format!("1/{name}"),
        2 => format!("2/{name}"),
        3 => format!("3/{}/{name}", part(0, 1)),
        _ => format!("{}/{}/{name}", part(0, 2), part(2, 4)),
    }
}

/// Parses an index file (already hash-checked), checking every line belongs
/// to `name` and is well formed.
pub fn parse_index_file(name: &str, text: &str) -> Result<Vec<IndexLine>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let l: IndexLine = serde_json::from_str(line).map_err(|e| {
            PkgError::new(
                ErrorKind::Integrity,
                format!("index file for '{name}', line {}: not a valid index line: {e}", i + 1),
            )
        })?;
        if l.name != name {
            return err(
                ErrorKind::Integrity,
                format!(
                    "index file for '{name}', line {}: expected package '{name}', found '{}'",
                    i + 1,
                    l.name
                ),
            );
        }
        semver::Version::parse(&l.vers).map_err(|e| {
            PkgError::new(
                ErrorKind::Integrity,
                format!("index file for '{name}', line {}: bad version '{}': {e}", i + 1, l.vers),
            )
        })?;
        check_target(&l.target)?;
        if !crate::digest::is_sha256_hex(&l.cksum) {
            return err(
                ErrorKind::Integrity,
                format!("index file for '{name}', line {}: cksum is not a sha256", i + 1),
            );
        }
        if l.v > INDEX_FORMAT {
            continue; // a newer format: skipped, as Cargo does
        }
        out.push(l);
    }
    Ok(out)
}

/// Expands the download template for one line.
pub fn download_path(config: &IndexConfig, line: &IndexLine) -> String {
    config
        .dl
        .replace("{name}", &line.name)
        .replace("{vers}", &line.vers)
        .replace("{target}", &line.target)
        .replace("{cksum}", &line.cksum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_cargo() {
        assert_eq!(index_path("a"), "1/a");
        assert_eq!(index_path("ab"), "2/ab");
        assert_eq!(index_path("abc"), "3/a/abc");
        assert_eq!(index_path("serde"), "se/rd/serde");
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("mathx").is_ok());
        assert!(check_name("../x").is_err());
        assert!(check_name("X").is_err());
        assert!(check_name("").is_err());
        assert!(check_name("1abc").is_err());
    }

    #[test]
    fn lines_for_other_packages_are_refused() {
        let l = r#"{"name":"b","vers":"1.0.0","target":"any","cksum":"0000000000000000000000000000000000000000000000000000000000000000","size":1,"unpacked_size":1,"v":1}"#;
        assert!(parse_index_file("a", l).is_err());
        let ok = parse_index_file("b", l).unwrap();
        assert_eq!(ok[0].kind, "library");
        assert!(!ok[0].yanked);
    }
}
