//! "Did you mean …?" suggestions by edit distance.

/// Levenshtein distance between two strings, by characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The candidate closest to `name`, if it is close enough to be a likely typo
/// (at most a third of the name's length, at least one edit; a different
/// capitalisation always counts). Ties go to the alphabetically first.
pub fn closest<'a, I>(name: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str>,
{
    let limit = (name.chars().count() / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if c == name {
            continue;
        }
        let d = if c.eq_ignore_ascii_case(name) { 0 } else { edit_distance(name, c) };
        if d > limit {
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
    }

    #[test]
    fn picks_close_names_only() {
        assert_eq!(closest("pritn", ["print", "len"]), Some("print".into()));
        assert_eq!(closest("undefined_name", ["undefined_nam", "f"]), Some("undefined_nam".into()));
        assert_eq!(closest("x", ["y", "xy"]), Some("xy".into()));
        assert_eq!(closest("zzzz", ["print", "len"]), None);
        assert_eq!(closest("Print", ["print"]), Some("print".into()));
        assert_eq!(closest("len", ["len"]), None);
    }
}
