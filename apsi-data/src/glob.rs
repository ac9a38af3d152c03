//! `from_files(pattern)`: shell-style patterns over the file system.
//! `*` matches any run of characters within a name, `?` one character,
//! `[abc]`/`[a-z]`/`[!a]` a class, `{a,b}` either; `**` as a whole
//! component matches any number of directories. As in Python's `glob`,
//! wildcards do not match a leading `.`, and a `[` without its `]` is a
//! literal `[`. Each component is compiled once with `globset`; the walk
//! lists only the directories the pattern can reach. Results are sorted.

use apsi_core::api::ErrorKind;
use apsi_core::api::{err, VResult};
use std::path::{Path, PathBuf};

/// One component of a pattern, compiled once for the whole walk.
enum Part {
    /// No wildcard: the name itself.
    Literal(String),
    /// `**`: any number of directories.
    AnyDepth,
    /// A shell pattern (`globset`), and whether it starts with a `.` (only
    /// such a pattern matches a hidden name, as in Python's `glob`).
    Pattern(globset::GlobMatcher, bool),
}

impl Part {
    fn new(component: &str) -> VResult<Part> {
        if component == "**" {
            return Ok(Part::AnyDepth);
        }
        if !has_magic(component) {
            return Ok(Part::Literal(component.to_string()));
        }
        // A `[` without its `]` is a literal `[`, as in Python's `fnmatch`.
        let glob = globset::GlobBuilder::new(component)
            .literal_separator(true)
            .backslash_escape(true)
            .allow_unclosed_class(true)
            .build()
            .map_err(|e| {
                err(
                    ErrorKind::ValueError,
                    format!("from_files(): the pattern part '{component}' is not a valid pattern: {e}"),
                )
            })?;
        Ok(Part::Pattern(glob.compile_matcher(), component.starts_with('.')))
    }

    fn matches(&self, name: &str) -> bool {
        match self {
            Part::Literal(s) => s == name,
            Part::AnyDepth => true,
            Part::Pattern(m, dot) => (*dot || !name.starts_with('.')) && m.is_match(name),
        }
    }
}

/// Whether `name` matches the single-component pattern `pat`.
pub fn matches(pat: &str, name: &str) -> bool {
    Part::new(pat).is_ok_and(|p| p.matches(name))
}

fn has_magic(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// Every existing path matching `pattern`, sorted.
pub fn glob(pattern: &str) -> VResult<Vec<String>> {
    if pattern.is_empty() {
        return Err(err(
            ErrorKind::ValueError,
            "from_files() needs a pattern, found an empty string",
        ));
    }
    let absolute = pattern.starts_with('/');
    let parts: Vec<Part> = pattern
        .split('/')
        .filter(|s| !s.is_empty())
        .map(Part::new)
        .collect::<VResult<_>>()?;
    let root = if absolute { PathBuf::from("/") } else { PathBuf::new() };
    let mut out = Vec::new();
    walk(&root, &parts, &mut out);
    let mut names: Vec<String> = out.into_iter().map(|p| p.to_string_lossy().into_owned()).collect();
    names.sort();
    names.dedup();
    Ok(names)
}

fn list_dir(dir: &Path) -> Vec<(String, bool)> {
    let d = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(rd) = std::fs::read_dir(d) else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path().is_dir()))
        .collect()
}

fn walk(base: &Path, parts: &[Part], out: &mut Vec<PathBuf>) {
    let Some((first, rest)) = parts.split_first() else {
        if !base.as_os_str().is_empty() {
            out.push(base.to_path_buf());
        }
        return;
    };
    match first {
        Part::AnyDepth => {
            // Zero directories…
            walk(base, rest, out);
            // …or one more, then `**` again.
            for (name, is_dir) in list_dir(base) {
                if is_dir && !name.starts_with('.') {
                    walk(&base.join(&name), parts, out);
                }
            }
        }
        Part::Literal(name) => {
            let p = base.join(name);
            if rest.is_empty() {
                if p.exists() {
                    out.push(p);
                }
            } else if p.is_dir() {
                walk(&p, rest, out);
            }
        }
        Part::Pattern(..) => {
            for (name, is_dir) in list_dir(base) {
                if first.matches(&name) && (rest.is_empty() || is_dir) {
                    walk(&base.join(&name), rest, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert!(matches("*.npy", "a.npy"));
        assert!(!matches("*.npy", "a.npz"));
        assert!(!matches("*", ".hidden"));
        assert!(matches("f?le[0-9].*", "file7.txt"));
        assert!(!matches("f[!i]le", "file"));
        assert!(matches("a*b*c", "axxbyyc"));
        assert!(!matches("a*b*c", "axxbyy"));
        assert!(matches("[", "["));
        assert!(matches("a[b", "a[b"));
        assert!(!matches("[ab]", "["));
        assert!(matches("[!a]x", "bx"));
        assert!(matches("[]a]", "]"));
        assert!(matches(".*", ".hidden"));
        assert!(matches("a[", "a["));
        assert!(matches("a[[]", "a["));
        assert!(matches("*.{csv,tsv}", "t.tsv"));
        assert!(!matches("*.{csv,tsv}", "t.txt"));
    }

    #[test]
    fn finds_files_sorted_and_recursive() {
        let d = std::env::temp_dir().join(format!("apsi-data-glob-{}", std::process::id()));
        let _ = std::fs::create_dir_all(d.join("sub/deeper"));
        for f in ["b.csv", "a.csv", "sub/c.csv", "sub/deeper/d.csv", "x.txt"] {
            std::fs::write(d.join(f), "1").expect("write");
        }
        let base = d.to_string_lossy().into_owned();
        let top = glob(&format!("{base}/*.csv")).expect("glob");
        assert_eq!(top, vec![format!("{base}/a.csv"), format!("{base}/b.csv")]);
        let all = glob(&format!("{base}/**/*.csv")).expect("glob");
        assert_eq!(all.len(), 4, "{all:?}");
        assert!(glob(&format!("{base}/nothing*")).expect("glob").is_empty());
    }
}
