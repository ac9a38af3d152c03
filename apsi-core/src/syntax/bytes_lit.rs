//! Bytes literals: `b"GIF\x89"`, `rb'\d'` (LANGUAGE.md §2, §10.13).
//!
//! The body holds ASCII characters only (anything else is a SyntaxError:
//! "bytes can only contain ASCII literal characters", Python's message)
//! and Python's bytes escapes: `\xNN`, octal `\NNN` (so `\0`), `\n \t \r
//! \\ \" \'`, `\a \b \f \v` and a backslash-newline continuation. Any other
//! backslash is kept with the character after it, as Python does (`\u` is
//! not an escape in bytes). Adjacent bytes literals concatenate; a bytes
//! literal next to a str literal is a SyntaxError ("cannot mix bytes and
//! nonbytes literals").

use super::ast::{Expr, ExprKind};
use super::literal::{string_parts, EscapeError};
use super::parser::Parser;
use super::token::Tok;

/// Decodes the body of a bytes literal (between the quotes) into `out`.
/// Errors carry byte offsets relative to `body`.
pub fn unescape_bytes(body: &str, raw: bool, out: &mut Vec<u8>, errors: &mut Vec<EscapeError>) {
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c >= 0x80 {
            let len = body[i..].chars().next().map(char::len_utf8).unwrap_or(1);
            errors.push(EscapeError {
                start: i,
                end: i + len,
                message: "bytes can only contain ASCII literal characters".to_string(),
            });
            i += len;
            continue;
        }
        if c != b'\\' || raw {
            out.push(c);
            i += 1;
            continue;
        }
        let esc = i;
        i += 1;
        let Some(&e) = b.get(i) else {
            out.push(b'\\');
            break;
        };
        if e >= 0x80 {
            // `\é`: the backslash stays; the character is reported next round.
            out.push(b'\\');
            continue;
        }
        i += 1;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'\\' => out.push(b'\\'),
            b'"' => out.push(b'"'),
            b'\'' => out.push(b'\''),
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'v' => out.push(0x0b),
            b'\n' => {}
            b'\r' if b.get(i) == Some(&b'\n') => i += 1,
            b'0'..=b'7' => {
                let mut v = (e - b'0') as u32;
                let mut n = 1;
                while n < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                    v = v * 8 + (b[i] - b'0') as u32;
                    i += 1;
                    n += 1;
                }
                // Python keeps the low byte of `\400`–`\777` (with a warning).
                out.push((v & 0xff) as u8);
            }
            b'x' => {
                let hex = body.get(i..i + 2).filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()));
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => errors.push(EscapeError {
                        start: esc,
                        end: i,
                        message: "invalid \\x escape: expected two hex digits, as in \\x41".to_string(),
                    }),
                }
            }
            other => {
                out.push(b'\\');
                out.push(other);
            }
        }
    }
}

impl Parser<'_> {
    /// One or more adjacent bytes literals (concatenated).
    pub(super) fn bytes_literals(&mut self) -> Expr {
        let start = self.tok().start;
        let mut data = Vec::new();
        while self.peek() == Tok::Bytes {
            let t = self.bump();
            let text = self.text(t);
            let (raw, _f, _q, bs, be) = string_parts(text);
            let body_start = t.start as usize + bs;
            let body_end = t.start as usize + be;
            let Some(body) = self.src.get(body_start..body_end) else {
                continue;
            };
            let mut errors = Vec::new();
            unescape_bytes(body, raw, &mut data, &mut errors);
            for e in errors {
                let span = self.span((body_start + e.start) as u32, (body_start + e.end) as u32);
                self.report(
                    span,
                    e.message,
                    Some("write other bytes as \\xNN escapes, as in b\"\\xc3\\xa9\"".to_string()),
                );
            }
        }
        if matches!(self.peek(), Tok::Str | Tok::FStr) {
            let t = self.tok();
            let span = self.span(t.start, t.end);
            self.report(span, "cannot mix bytes and nonbytes literals", None);
            while matches!(self.peek(), Tok::Str | Tok::FStr | Tok::Bytes) {
                self.bump();
            }
        }
        Expr {
            kind: ExprKind::Bytes(data),
            span: self.since(start),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn un(body: &str) -> (Vec<u8>, Vec<String>) {
        let mut out = Vec::new();
        let mut errs = Vec::new();
        unescape_bytes(body, false, &mut out, &mut errs);
        (out, errs.into_iter().map(|e| e.message).collect())
    }

    #[test]
    fn escapes() {
        assert_eq!(un(r"GIF\x89a\x00\xff").0, b"GIF\x89a\x00\xff");
        assert_eq!(un(r#"\t\n\r\\\"\'\0"#).0, b"\t\n\r\\\"'\0");
        assert_eq!(un(r"\101\u0041\q").0, b"A\\u0041\\q");
        assert_eq!(un("a\\\nb").0, b"ab");
        let mut out = Vec::new();
        unescape_bytes(r"\x00", true, &mut out, &mut Vec::new());
        assert_eq!(out, b"\\x00");
    }

    #[test]
    fn errors() {
        assert_eq!(un("é").1, vec!["bytes can only contain ASCII literal characters"]);
        assert_eq!(
            un(r"\xZ1").1,
            vec!["invalid \\x escape: expected two hex digits, as in \\x41"]
        );
        assert_eq!(un(r"\x4").1.len(), 1);
    }
}
