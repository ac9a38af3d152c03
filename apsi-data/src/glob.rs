//! `from_files(pattern)`: shell-style patterns over the file system.
//! `*` matches any run of characters within a name, `?` one character,
//! `[abc]`/`[a-z]`/`[!a]` a class; `**` as a whole component matches any
//! number of directories. As in Python's `glob`, wildcards do not match a
//! leading `.`. Results are sorted.

use apsi_core::api::ErrorKind;
use apsi_core::api::{err, VResult};
use std::path::{Path, PathBuf};

/// Whether `name` matches the single-component pattern `pat`.
pub fn matches(pat: &str, name: &str) -> bool {
    if name.starts_with('.') && !pat.starts_with('.') {
        return false;
    }
    let p: Vec<char> = pat.chars().collect();
    let n: Vec<char> = name.chars().collect();
    match_at(&p, &n)
}

fn match_at(p: &[char], n: &[char]) -> bool {
    // Iterative wildcard matching with backtracking to the last `*`.
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        let step = match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
                continue;
            }
            Some('?') => Some(pi + 1),
            Some('[') if closes(p, pi) => class(p, pi, n[ni]),
            Some(&c) if c == n[ni] => Some(pi + 1),
            _ => None,
        };
        match step {
            Some(next) => {
                pi = next;
                ni += 1;
            }
            None => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p.get(pi..).is_some_and(|rest| rest.iter().all(|c| *c == '*'))
}

/// Whether the `[` at `p[i]` opens a class (has its `]`); if not, it is a literal `[`.
fn closes(p: &[char], i: usize) -> bool {
    let mut j = i + 1;
    if matches!(p.get(j), Some('!') | Some('^')) {
        j += 1;
    }
    // A `]` right after the opening (or its negation) is a member, not the end.
    j += 1;
    p.get(j..).is_some_and(|rest| rest.contains(&']'))
}

/// Matches `c` against the class starting at `p[i] == '['`; the index after it.
fn class(p: &[char], i: usize, c: char) -> Option<usize> {
    let mut j = i + 1;
    let negate = matches!(p.get(j), Some('!') | Some('^'));
    if negate {
        j += 1;
    }
    let mut hit = false;
    let mut first = true;
    loop {
        let ch = *p.get(j)?;
        if ch == ']' && !first {
            break;
        }
        first = false;
        if p.get(j + 1) == Some(&'-') && p.get(j + 2).is_some_and(|e| *e != ']') {
            let hi = *p.get(j + 2)?;
            hit |= ch <= c && c <= hi;
            j += 3;
        } else {
            hit |= ch == c;
            j += 1;
        }
    }
    (hit != negate).then_some(j + 1)
}

fn has_magic(s: &str) -> bool {
    s.contains(['*', '?', '['])
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
    let parts: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
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

fn walk(base: &Path, parts: &[&str], out: &mut Vec<PathBuf>) {
    let Some((first, rest)) = parts.split_first() else {
        if !base.as_os_str().is_empty() {
            out.push(base.to_path_buf());
        }
        return;
    };
    if *first == "**" {
        // Zero directories…
        walk(base, rest, out);
        // …or one more, then `**` again.
        for (name, is_dir) in list_dir(base) {
            if is_dir && !name.starts_with('.') {
                walk(&base.join(&name), parts, out);
            }
        }
        return;
    }
    if !has_magic(first) {
        let p = base.join(first);
        if rest.is_empty() {
            if p.exists() {
                out.push(p);
            }
        } else if p.is_dir() {
            walk(&p, rest, out);
        }
        return;
    }
    for (name, is_dir) in list_dir(base) {
        if matches(first, &name) && (rest.is_empty() || is_dir) {
            walk(&base.join(&name), rest, out);
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
