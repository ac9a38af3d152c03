//! Text for the notebook: colour codes taken out, program output cut into
//! `stream` messages at whole characters.

use std::io::Write;

/// `s` without ANSI escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL`
/// or `ESC \`, and two-byte `ESC x`), which a notebook would show as junk.
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                // Parameters and intermediates, then one final byte in @..~.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// A `Write` that hands what it is given to `sink` as text, at whole UTF-8
/// characters (a character cut between two writes waits for its rest).
/// Invalid bytes come out as U+FFFD.
pub struct StreamWriter<F: FnMut(String)> {
    sink: F,
    pending: Vec<u8>,
}

impl<F: FnMut(String)> StreamWriter<F> {
    pub fn new(sink: F) -> Self {
        StreamWriter {
            sink,
            pending: Vec::new(),
        }
    }
}

impl<F: FnMut(String)> Write for StreamWriter<F> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        // Keep back at most 3 bytes of a character that is not complete yet.
        let mut cut = self.pending.len();
        if let Err(e) = std::str::from_utf8(&self.pending) {
            if e.error_len().is_none() {
                cut = e.valid_up_to();
            }
        }
        if cut > 0 {
            let rest = self.pending.split_off(cut);
            let text = String::from_utf8_lossy(&self.pending).into_owned();
            self.pending = rest;
            (self.sink)(text);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_codes_are_taken_out() {
        assert_eq!(strip_ansi("\u{1b}[1;31merror\u{1b}[0m: bad"), "error: bad");
        assert_eq!(strip_ansi("a\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\b"), "alinkb");
        assert_eq!(strip_ansi("plain ✓"), "plain ✓");
        // A lone escape at the end, or a cut sequence, does not panic.
        assert_eq!(strip_ansi("x\u{1b}"), "x");
        assert_eq!(strip_ansi("x\u{1b}[12"), "x");
    }

    #[test]
    fn characters_cut_between_writes_come_out_whole() {
        let mut got = Vec::new();
        {
            let mut w = StreamWriter::new(|s| got.push(s));
            let bytes = "é=1\n".as_bytes();
            w.write_all(&bytes[..1]).unwrap();
            w.write_all(&bytes[1..]).unwrap();
            w.write_all(b"\xff\n").unwrap();
        }
        assert_eq!(got, vec!["é=1\n".to_string(), "\u{fffd}\n".to_string()]);
    }
}
