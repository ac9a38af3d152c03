//! Python's title case: the titlecase mapping of a letter (`ǆ` → `ǅ`,
//! `ß` → `Ss`, `ﬁ` → `Fi`, which differ from upper case), which letters are
//! cased, and lower case with Greek final sigma, for `str.title()` and
//! `str.capitalize()`. The table holds the characters whose titlecase is not
//! their uppercase, generated from Python 3.11's `str.title` (Unicode 14.0).

#[rustfmt::skip]
const TITLECASE: [(char, &str); 135] = [
    ('\u{df}', "\u{53}\u{73}"),
    ('\u{1c4}', "\u{1c5}"),
    ('\u{1c5}', "\u{1c5}"),
    ('\u{1c6}', "\u{1c5}"),
    ('\u{1c7}', "\u{1c8}"),
    ('\u{1c8}', "\u{1c8}"),
    ('\u{1c9}', "\u{1c8}"),
    ('\u{1ca}', "\u{1cb}"),
    ('\u{1cb}', "\u{1cb}"),
    ('\u{1cc}', "\u{1cb}"),
    ('\u{1f1}', "\u{1f2}"),
    ('\u{1f2}', "\u{1f2}"),
    ('\u{1f3}', "\u{1f2}"),
    ('\u{587}', "\u{535}\u{582}"),
    ('\u{10d0}', "\u{10d0}"),
    ('\u{10d1}', "\u{10d1}"),
    ('\u{10d2}', "\u{10d2}"),
    ('\u{10d3}', "\u{10d3}"),
    ('\u{10d4}', "\u{10d4}"),
    ('\u{10d5}', "\u{10d5}"),
    ('\u{10d6}', "\u{10d6}"),
    ('\u{10d7}', "\u{10d7}"),
    ('\u{10d8}', "\u{10d8}"),
    ('\u{10d9}', "\u{10d9}"),
    ('\u{10da}', "\u{10da}"),
    ('\u{10db}', "\u{10db}"),
    ('\u{10dc}', "\u{10dc}"),
    ('\u{10dd}', "\u{10dd}"),
    ('\u{10de}', "\u{10de}"),
    ('\u{10df}', "\u{10df}"),
    ('\u{10e0}', "\u{10e0}"),
    ('\u{10e1}', "\u{10e1}"),
    ('\u{10e2}', "\u{10e2}"),
    ('\u{10e3}', "\u{10e3}"),
    ('\u{10e4}', "\u{10e4}"),
    ('\u{10e5}', "\u{10e5}"),
    ('\u{10e6}', "\u{10e6}"),
    ('\u{10e7}', "\u{10e7}"),
    ('\u{10e8}', "\u{10e8}"),
    ('\u{10e9}', "\u{10e9}"),
    ('\u{10ea}', "\u{10ea}"),
    ('\u{10eb}', "\u{10eb}"),
    ('\u{10ec}', "\u{10ec}"),
    ('\u{10ed}', "\u{10ed}"),
    ('\u{10ee}', "\u{10ee}"),
    ('\u{10ef}', "\u{10ef}"),
    ('\u{10f0}', "\u{10f0}"),
    ('\u{10f1}', "\u{10f1}"),
    ('\u{10f2}', "\u{10f2}"),
    ('\u{10f3}', "\u{10f3}"),
    ('\u{10f4}', "\u{10f4}"),
    ('\u{10f5}', "\u{10f5}"),
    ('\u{10f6}', "\u{10f6}"),
    ('\u{10f7}', "\u{10f7}"),
    ('\u{10f8}', "\u{10f8}"),
    ('\u{10f9}', "\u{10f9}"),
    ('\u{10fa}', "\u{10fa}"),
    ('\u{10fd}', "\u{10fd}"),
    ('\u{10fe}', "\u{10fe}"),
    ('\u{10ff}', "\u{10ff}"),
    ('\u{1f80}', "\u{1f88}"),
    ('\u{1f81}', "\u{1f89}"),
    ('\u{1f82}', "\u{1f8a}"),
    ('\u{1f83}', "\u{1f8b}"),
    ('\u{1f84}', "\u{1f8c}"),
    ('\u{1f85}', "\u{1f8d}"),
    ('\u{1f86}', "\u{1f8e}"),
    ('\u{1f87}', "\u{1f8f}"),
    ('\u{1f88}', "\u{1f88}"),
    ('\u{1f89}', "\u{1f89}"),
    ('\u{1f8a}', "\u{1f8a}"),
    ('\u{1f8b}', "\u{1f8b}"),
    ('\u{1f8c}', "\u{1f8c}"),
    ('\u{1f8d}', "\u{1f8d}"),
    ('\u{1f8e}', "\u{1f8e}"),
    ('\u{1f8f}', "\u{1f8f}"),
    ('\u{1f90}', "\u{1f98}"),
    ('\u{1f91}', "\u{1f99}"),
    ('\u{1f92}', "\u{1f9a}"),
    ('\u{1f93}', "\u{1f9b}"),
    ('\u{1f94}', "\u{1f9c}"),
    ('\u{1f95}', "\u{1f9d}"),
    ('\u{1f96}', "\u{1f9e}"),
    ('\u{1f97}', "\u{1f9f}"),
    ('\u{1f98}', "\u{1f98}"),
    ('\u{1f99}', "\u{1f99}"),
    ('\u{1f9a}', "\u{1f9a}"),
    ('\u{1f9b}', "\u{1f9b}"),
    ('\u{1f9c}', "\u{1f9c}"),
    ('\u{1f9d}', "\u{1f9d}"),
    ('\u{1f9e}', "\u{1f9e}"),
    ('\u{1f9f}', "\u{1f9f}"),
    ('\u{1fa0}', "\u{1fa8}"),
    ('\u{1fa1}', "\u{1fa9}"),
    ('\u{1fa2}', "\u{1faa}"),
    ('\u{1fa3}', "\u{1fab}"),
    ('\u{1fa4}', "\u{1fac}"),
    ('\u{1fa5}', "\u{1fad}"),
    ('\u{1fa6}', "\u{1fae}"),
    ('\u{1fa7}', "\u{1faf}"),
    ('\u{1fa8}', "\u{1fa8}"),
    ('\u{1fa9}', "\u{1fa9}"),
    ('\u{1faa}', "\u{1faa}"),
    ('\u{1fab}', "\u{1fab}"),
    ('\u{1fac}', "\u{1fac}"),
    ('\u{1fad}', "\u{1fad}"),
    ('\u{1fae}', "\u{1fae}"),
    ('\u{1faf}', "\u{1faf}"),
    ('\u{1fb2}', "\u{1fba}\u{345}"),
    ('\u{1fb3}', "\u{1fbc}"),
    ('\u{1fb4}', "\u{386}\u{345}"),
    ('\u{1fb7}', "\u{391}\u{342}\u{345}"),
    ('\u{1fbc}', "\u{1fbc}"),
    ('\u{1fc2}', "\u{1fca}\u{345}"),
    ('\u{1fc3}', "\u{1fcc}"),
    ('\u{1fc4}', "\u{389}\u{345}"),
    ('\u{1fc7}', "\u{397}\u{342}\u{345}"),
    ('\u{1fcc}', "\u{1fcc}"),
    ('\u{1ff2}', "\u{1ffa}\u{345}"),
    ('\u{1ff3}', "\u{1ffc}"),
    ('\u{1ff4}', "\u{38f}\u{345}"),
    ('\u{1ff7}', "\u{3a9}\u{342}\u{345}"),
    ('\u{1ffc}', "\u{1ffc}"),
    ('\u{fb00}', "\u{46}\u{66}"),
    ('\u{fb01}', "\u{46}\u{69}"),
    ('\u{fb02}', "\u{46}\u{6c}"),
    ('\u{fb03}', "\u{46}\u{66}\u{69}"),
    ('\u{fb04}', "\u{46}\u{66}\u{6c}"),
    ('\u{fb05}', "\u{53}\u{74}"),
    ('\u{fb06}', "\u{53}\u{74}"),
    ('\u{fb13}', "\u{544}\u{576}"),
    ('\u{fb14}', "\u{544}\u{565}"),
    ('\u{fb15}', "\u{544}\u{56b}"),
    ('\u{fb16}', "\u{54e}\u{576}"),
    ('\u{fb17}', "\u{544}\u{56d}"),
];

/// Appends the titlecase of `c`.
pub fn push_title(c: char, out: &mut String) {
    match TITLECASE.binary_search_by_key(&c, |&(k, _)| k) {
        Ok(i) => out.push_str(TITLECASE[i].1),
        Err(_) => out.extend(c.to_uppercase()),
    }
}

/// Python's "cased": upper, lower or title case (the titlecase letters,
/// category Lt, are in the table mapping to themselves).
pub fn is_cased(c: char) -> bool {
    c.is_lowercase()
        || c.is_uppercase()
        || TITLECASE
            .binary_search_by_key(&c, |&(k, _)| k)
            .is_ok_and(|i| TITLECASE[i].1.chars().eq(std::iter::once(c)))
}

/// Characters a word's case looks through (apostrophes, dots, combining
/// marks): an approximation of Unicode's Case_Ignorable.
fn case_ignorable(c: char) -> bool {
    matches!(c, '\'' | '.' | ':' | '\u{b7}' | '\u{2019}' | '\u{ad}') || ('\u{300}'..='\u{36f}').contains(&c)
}

/// Appends the lower case of `chars[i]`; a capital sigma at the end of a
/// word (a cased letter before it, none after) becomes `ς`, as Python's
/// `str.lower()` does.
pub fn push_lower_at(chars: &[char], i: usize, out: &mut String) {
    let c = chars[i];
    if c == 'Σ' {
        let before = chars[..i]
            .iter()
            .rev()
            .find(|&&p| !case_ignorable(p))
            .is_some_and(|&p| is_cased(p));
        let after = chars[i + 1..]
            .iter()
            .find(|&&n| !case_ignorable(n))
            .is_some_and(|&n| is_cased(n));
        if before && !after {
            out.push('ς');
            return;
        }
    }
    out.extend(c.to_lowercase());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_for_binary_search() {
        assert!(TITLECASE.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn titlecase_differs_from_uppercase_where_python_says() {
        let t = |c| {
            let mut s = String::new();
            push_title(c, &mut s);
            s
        };
        assert_eq!(t('ß'), "Ss");
        assert_eq!(t('ﬁ'), "Fi");
        assert_eq!(t('ǆ'), "ǅ");
        assert_eq!(t('a'), "A");
        assert!(is_cased('ǅ') && is_cased('a') && !is_cased('本') && !is_cased('-'));
    }
}
