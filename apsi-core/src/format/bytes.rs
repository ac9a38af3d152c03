//! Python's repr of a byte string: `b'GIF\x89a\x00'`.

/// `repr(b)`: single quotes unless the bytes contain `'` and no `"`;
/// `\t \n \r \\` and the quote escaped, other bytes outside printable
/// ASCII as `\xNN` (lowercase hex).
pub fn bytes_repr(data: &[u8]) -> String {
    let quote = if data.contains(&b'\'') && !data.contains(&b'"') {
        b'"'
    } else {
        b'\''
    };
    let mut out = String::with_capacity(data.len() + 3);
    out.push('b');
    out.push(quote as char);
    for &c in data {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c as char);
            }
            0x20..=0x7e => out.push(c as char),
            c => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push(quote as char);
    out
}

#[cfg(test)]
mod tests {
    use super::bytes_repr;

    #[test]
    fn python_repr() {
        assert_eq!(bytes_repr(b"GIF\x89a\x00\xff"), r"b'GIF\x89a\x00\xff'");
        assert_eq!(bytes_repr(b""), "b''");
        assert_eq!(bytes_repr(b"it's"), "b\"it's\"");
        assert_eq!(bytes_repr(b"it's \"q\""), r#"b'it\'s "q"'"#);
        assert_eq!(bytes_repr(b"\t\n\r\\"), r"b'\t\n\r\\'");
        assert_eq!(bytes_repr(b"\"q\""), r#"b'"q"'"#);
        assert_eq!(bytes_repr(b"\x7f~ "), r"b'\x7f~ '");
    }
}
