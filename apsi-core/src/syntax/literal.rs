//! Decoding literal tokens: integers, floats and string escapes.

/// The value of an integer literal (`42`, `1_000`, `0xff`, `0o17`, `0b1`),
/// as an unsigned number; `None` when it does not fit in 64 bits.
pub fn int_value(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    let (radix, digits) = if b.len() > 2 && b[0] == b'0' {
        match b[1] | 0x20 {
            b'x' => (16, &b[2..]),
            b'o' => (8, &b[2..]),
            b'b' => (2, &b[2..]),
            _ => (10, b),
        }
    } else {
        (10, b)
    };
    let mut v: u64 = 0;
    let mut any = false;
    for &c in digits {
        if c == b'_' {
            continue;
        }
        let d = (c as char).to_digit(radix)?;
        v = v.checked_mul(radix as u64)?.checked_add(d as u64)?;
        any = true;
    }
    if any {
        Some(v)
    } else {
        None
    }
}

/// The value of a float literal (`3.14`, `1e-9`, `1.`, `.5`, `1_0.5`).
pub fn float_value(text: &str) -> Option<f64> {
    if text.contains('_') {
        let cleaned: String = text.chars().filter(|&c| c != '_').collect();
        parse_float(&cleaned)
    } else {
        parse_float(text)
    }
}

fn parse_float(text: &str) -> Option<f64> {
    if let Ok(v) = text.parse::<f64>() {
        return Some(v);
    }
    // Forms Rust may not take: "1." and ".5" with exponents.
    let mut s = String::with_capacity(text.len() + 2);
    if text.starts_with('.') {
        s.push('0');
    }
    for c in text.chars() {
        if (c == 'e' || c == 'E') && s.ends_with('.') {
            s.push('0');
        }
        s.push(c);
    }
    if s.ends_with('.') {
        s.push('0');
    }
    s.parse::<f64>().ok()
}

/// A problem found while decoding escapes: byte range (relative to the
/// decoded slice) and message.
#[derive(Debug, Clone, PartialEq)]
pub struct EscapeError {
    pub start: usize,
    pub end: usize,
    pub message: String,
}

/// Decodes the body of a string literal (between the quotes). With `raw`,
/// backslashes are kept as written. Unknown escapes keep their backslash,
/// as Python does. Errors are reported with offsets relative to `body`.
pub fn unescape(body: &str, raw: bool, out: &mut String, errors: &mut Vec<EscapeError>) {
    if raw || !body.contains('\\') {
        out.push_str(body);
        return;
    }
    let b = body.as_bytes();
    let mut i = 0;
    let mut run = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        out.push_str(&body[run..i]);
        let esc = i;
        i += 1;
        let Some(&c) = b.get(i) else {
            out.push('\\');
            run = i;
            break;
        };
        i += 1;
        match c {
            b'n' => out.push('\n'),
            b't' => out.push('\t'),
            b'r' => out.push('\r'),
            b'\\' => out.push('\\'),
            b'"' => out.push('"'),
            b'\'' => out.push('\''),
            b'a' => out.push('\u{7}'),
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'v' => out.push('\u{b}'),
            b'\n' => {}
            b'\r' if b.get(i) == Some(&b'\n') => i += 1,
            b'0'..=b'7' => {
                let mut v = (c - b'0') as u32;
                let mut n = 1;
                while n < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                    v = v * 8 + (b[i] - b'0') as u32;
                    i += 1;
                    n += 1;
                }
                out.push(char::from_u32(v).unwrap_or('\u{FFFD}'));
            }
            b'x' => {
                let hex = body.get(i..i + 2).filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()));
                match hex.and_then(|h| u32::from_str_radix(h, 16).ok()) {
                    Some(v) => {
                        out.push(char::from_u32(v).unwrap_or('\u{FFFD}'));
                        i += 2;
                    }
                    None => errors.push(EscapeError {
                        start: esc,
                        end: i,
                        message: "invalid \\x escape: expected two hex digits, as in \\x41".to_string(),
                    }),
                }
            }
            b'u' | b'U' => {
                let (digits, next) = if c == b'u' && b.get(i) == Some(&b'{') {
                    match body[i + 1..].find('}') {
                        Some(close) if (1..=6).contains(&close) => (body.get(i + 1..i + 1 + close), i + 2 + close),
                        _ => (None, i),
                    }
                } else {
                    let n = if c == b'u' { 4 } else { 8 };
                    (body.get(i..i + n), i + n)
                };
                let value = digits
                    .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
                    .and_then(|h| u32::from_str_radix(h, 16).ok());
                match value {
                    Some(v) => match char::from_u32(v) {
                        Some(ch) => {
                            out.push(ch);
                            i = next;
                        }
                        None => {
                            errors.push(EscapeError {
                                start: esc,
                                end: next.min(b.len()),
                                message: format!("invalid unicode escape: U+{v:X} is not a valid character"),
                            });
                            i = next.min(b.len());
                        }
                    },
                    None => errors.push(EscapeError {
                        start: esc,
                        end: i,
                        message: if c == b'u' {
                            "invalid \\u escape: expected \\u{1-6 hex digits} or \\uXXXX".to_string()
                        } else {
                            "invalid \\U escape: expected \\UXXXXXXXX".to_string()
                        },
                    }),
                }
            }
            _ => {
                // Unknown escape: keep the backslash and the character.
                out.push('\\');
                i = esc + 1;
            }
        }
        run = i;
    }
    if run < b.len() {
        out.push_str(&body[run..]);
    }
}

/// Splits a string token's text into (prefix-is-raw, prefix-is-f, quote
/// length, body start, body end) — offsets relative to the token text.
pub fn string_parts(text: &str) -> (bool, bool, usize, usize, usize) {
    let b = text.as_bytes();
    let mut raw = false;
    let mut f = false;
    let mut i = 0;
    while i < b.len() && b[i] != b'"' && b[i] != b'\'' {
        match b[i] | 0x20 {
            b'r' => raw = true,
            b'f' => f = true,
            _ => {}
        }
        i += 1;
    }
    let q = b.get(i).copied().unwrap_or(b'"');
    let qlen = if b.len() >= i + 6 && b[i + 1] == q && b[i + 2] == q {
        3
    } else {
        1
    };
    let start = (i + qlen).min(b.len());
    let end = b.len().saturating_sub(qlen).max(start);
    (raw, f, qlen, start, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn un(s: &str) -> (String, Vec<EscapeError>) {
        let mut out = String::new();
        let mut errs = Vec::new();
        unescape(s, false, &mut out, &mut errs);
        (out, errs)
    }

    #[test]
    fn ints() {
        assert_eq!(int_value("42"), Some(42));
        assert_eq!(int_value("1_000_000"), Some(1_000_000));
        assert_eq!(int_value("0xff"), Some(255));
        assert_eq!(int_value("0XFF"), Some(255));
        assert_eq!(int_value("0o17"), Some(15));
        assert_eq!(int_value("0b1010"), Some(10));
        assert_eq!(int_value("0x_ff"), Some(255));
        assert_eq!(int_value("9223372036854775808"), Some(1 << 63));
        assert_eq!(int_value("18446744073709551615"), Some(u64::MAX));
        assert_eq!(int_value("18446744073709551616"), None);
        assert_eq!(int_value("0"), Some(0));
    }

    #[test]
    fn floats() {
        assert_eq!(float_value("2.75"), Some(2.75));
        assert_eq!(float_value("1e-9"), Some(1e-9));
        assert_eq!(float_value("2.5e3"), Some(2500.0));
        assert_eq!(float_value("1."), Some(1.0));
        assert_eq!(float_value(".5"), Some(0.5));
        assert_eq!(float_value("1.e3"), Some(1000.0));
        assert_eq!(float_value("1_0.2_5"), Some(10.25));
        assert_eq!(float_value("1e999"), Some(f64::INFINITY));
    }

    #[test]
    fn escapes() {
        assert_eq!(un(r#"a\nb\tc\r\0\\\'\""#).0, "a\nb\tc\r\0\\'\"");
        assert_eq!(un(r"\x41\u{263A}\u263A\U0001F600").0, "A☺☺😀");
        assert_eq!(un(r"\d\q").0, r"\d\q");
        assert_eq!(un("a\\\nb").0, "ab");
        assert_eq!(un(r"\101").0, "A");
        assert_eq!(un("héllo\\n").0, "héllo\n");
        assert_eq!(un("trailing\\").0, "trailing\\");
    }

    #[test]
    fn escape_errors() {
        let (_, e) = un(r"ab\xZZ");
        assert_eq!(e.len(), 1);
        assert_eq!((e[0].start, e[0].end), (2, 4));
        assert!(e[0].message.contains("\\x"));
        let (_, e) = un(r"\u{}");
        assert!(e[0].message.contains("\\u{1-6 hex digits}"));
        let (_, e) = un(r"\u{1234567}");
        assert_eq!(e.len(), 1);
        let (_, e) = un(r"\u{D800}");
        assert!(e[0].message.contains("U+D800"));
        let (_, e) = un(r"\u12");
        assert_eq!(e.len(), 1);
    }

    #[test]
    fn raw() {
        let mut out = String::new();
        unescape(r"a\nb", true, &mut out, &mut Vec::new());
        assert_eq!(out, r"a\nb");
    }

    #[test]
    fn parts() {
        assert_eq!(string_parts("\"ab\""), (false, false, 1, 1, 3));
        assert_eq!(string_parts("rf'ab'"), (true, true, 1, 3, 5));
        assert_eq!(string_parts("\"\"\"ab\"\"\""), (false, false, 3, 3, 5));
        assert_eq!(string_parts("\"\""), (false, false, 1, 1, 1));
        assert_eq!(string_parts("''"), (false, false, 1, 1, 1));
    }
}
