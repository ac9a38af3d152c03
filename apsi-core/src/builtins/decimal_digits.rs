//! Unicode decimal digits (category Nd) read as numbers, as CPython's
//! `int()` and `float()` read them: `int("١٢") == 12`. Each script's ten
//! digits are consecutive code points (a Unicode stability guarantee), so a
//! table of each run's zero is enough. Generated from Python 3.11's
//! `unicodedata` (Unicode 14.0): the code points whose decimal value is 0.

use std::borrow::Cow;

const ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66, 0xde6, 0xe50, 0xed0,
    0xf20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90, 0x1b50, 0x1bb0, 0x1c40, 0x1c50, 0xa620,
    0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0, 0xff10, 0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0,
    0x112f0, 0x11450, 0x114d0, 0x11650, 0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60,
    0x16ac0, 0x16b50, 0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0,
];

/// The value of a decimal digit of any script, `None` for anything else.
pub fn decimal_value(c: char) -> Option<u32> {
    let cp = c as u32;
    let i = ZEROS.partition_point(|&z| z <= cp);
    let zero = *ZEROS.get(i.checked_sub(1)?)?;
    (cp - zero < 10).then_some(cp - zero)
}

/// `text` with every non-ASCII decimal digit replaced by its ASCII digit
/// (borrowed when there is none).
pub fn to_ascii_digits(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| match decimal_value(c) {
                Some(d) if !c.is_ascii() => char::from(b'0' + d as u8),
                _ => c,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_of_several_scripts() {
        assert_eq!(decimal_value('7'), Some(7));
        assert_eq!(decimal_value('١'), Some(1)); // Arabic-Indic
        assert_eq!(decimal_value('९'), Some(9)); // Devanagari
        assert_eq!(decimal_value('５'), Some(5)); // fullwidth
        assert_eq!(decimal_value('𝟘'), Some(0)); // mathematical double-struck
        assert_eq!(decimal_value('a'), None);
        assert_eq!(decimal_value('½'), None); // numeric, not decimal
        assert_eq!(decimal_value('²'), None);
        assert_eq!(to_ascii_digits("١٢.٥e٣"), "12.5e3");
        assert!(matches!(to_ascii_digits("12"), Cow::Borrowed(_)));
    }
}
