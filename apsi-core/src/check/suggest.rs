//! "Did you mean …?" suggestions by edit distance.

/// Edit distance between two strings, by characters: insertions,
/// deletions, substitutions and swaps of two neighbours each cost one
/// (optimal string alignment).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        d[i * w] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(w) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * w + j - 1] + cost)
                .min(d[(i - 1) * w + j] + 1)
                .min(d[i * w + j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = v;
        }
    }
    d[a.len() * w + b.len()]
}

/// The candidate closest to `name`, if it is close enough to be a likely typo
/// (names of three or more characters may be a third of their length off,
/// at least one edit; a different capitalisation always counts). Ties go to
/// the alphabetically first.
pub fn closest<'a, I>(name: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str>,
{
    let len = name.chars().count();
    let limit = if len < 3 { 0 } else { ((len + 1) / 3).max(1) };
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if c == name {
            continue;
        }
        let d = if c.eq_ignore_ascii_case(name) {
            0
        } else {
            edit_distance(name, c)
        };
        if d > limit || (d == 0 && !c.eq_ignore_ascii_case(name)) {
            continue;
        }
        let better = match best {
            None => true,
            Some((bd, bc)) => d < bd || (d == bd && c < bc),
        };
        if better {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("πx", "πy"), 1);
        assert_eq!(edit_distance("pritn", "print"), 1);
    }

    #[test]
    fn picks_close_names_only() {
        assert_eq!(closest("pritn", ["print", "len"]), Some("print".into()));
        assert_eq!(
            closest("undefined_name", ["undefined_nam", "f"]),
            Some("undefined_nam".into())
        );
        assert_eq!(closest("x", ["y", "xy", "e"]), None);
        assert_eq!(closest("X", ["x"]), Some("x".into()));
        assert_eq!(closest("lenn", ["len", "lens"]), Some("len".into()));
        assert_eq!(closest("zzzz", ["print", "len"]), None);
        assert_eq!(closest("Print", ["print"]), Some("print".into()));
        assert_eq!(closest("len", ["len"]), None);
    }
}
