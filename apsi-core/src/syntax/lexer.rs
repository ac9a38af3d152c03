//! The lexer: source text to tokens, with INDENT/DEDENT/NEWLINE for the
//! block structure.
//!
//! - One pass over the bytes, no allocation per token; literal values are
//!   decoded later by the parser from the token's range.
//! - Inside `()`, `[]`, `{}` newlines and indentation are ignored.
//! - Errors (tab in indentation, bad dedent, unterminated string, stray
//!   character, malformed number) are recorded and lexing goes on.

use super::token::{Tok, Token};
use crate::diagnostic::{Diagnostic, FileId, Span};
use crate::error::ErrorKind;

/// The lexer's result.
#[derive(Debug, Default)]
pub struct Lexed {
    pub tokens: Vec<Token>,
    pub diags: Vec<Diagnostic>,
    /// A bracket was still open at the end of the input.
    pub open_bracket: bool,
    /// The input ended inside a triple-quoted string.
    pub open_triple: bool,
    /// The input ended with a line-continuation backslash.
    pub trailing_backslash: bool,
    /// How many indented blocks were still open at the end of the input.
    pub open_blocks: usize,
    /// Byte ranges from an unclosed bracket to where the lexer gave up on it
    /// (a reported error); parser errors inside them are consequences.
    pub unclosed: Vec<(u32, u32)>,
}

/// Lexes a whole file.
pub fn lex(file: FileId, src: &str) -> Lexed {
    // A UTF-8 byte order mark at the start is skipped.
    let start = if src.starts_with('\u{FEFF}') { 3 } else { 0 };
    Lexer::new(file, src, start, src.len(), false).run()
}

/// Lexes `src[start..end]` as the inside of brackets (newlines and
/// indentation ignored, no NEWLINE/INDENT/DEDENT tokens); used for the
/// expressions of f-string replacement fields. Offsets stay absolute.
pub fn lex_nested(file: FileId, src: &str, start: usize, end: usize) -> Lexed {
    Lexer::new(file, src, start, end.min(src.len()), true).run()
}

struct Lexer<'a> {
    file: FileId,
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    end: usize,
    nested: bool,
    out: Lexed,
    brackets: Vec<(u8, u32)>,
    indents: Vec<u32>,
    at_line_start: bool,
    reported_tab: bool,
    /// Indentation of the current logical line.
    line_indent: u32,
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

fn is_ident_continue(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

impl<'a> Lexer<'a> {
    fn new(file: FileId, src: &'a str, start: usize, end: usize, nested: bool) -> Lexer<'a> {
        let start = start.min(end);
        Lexer {
            file,
            src,
            b: src.as_bytes(),
            pos: start,
            end,
            nested,
            out: Lexed {
                tokens: Vec::with_capacity((end - start) / 3 + 4),
                ..Lexed::default()
            },
            brackets: Vec::new(),
            indents: vec![0],
            at_line_start: !nested,
            reported_tab: false,
            line_indent: 0,
        }
    }

    fn peek(&self, ahead: usize) -> u8 {
        let i = self.pos + ahead;
        if i < self.end {
            self.b[i]
        } else {
            0
        }
    }

    fn error(&mut self, start: usize, end: usize, msg: impl Into<String>, help: Option<&str>) {
        let mut d = Diagnostic::new(ErrorKind::SyntaxError, msg).at(Span::new(self.file, start as u32, end as u32));
        if let Some(h) = help {
            d = d.help(h);
        }
        self.out.diags.push(d);
    }

    fn push(&mut self, kind: Tok, start: usize, end: usize) {
        self.out.tokens.push(Token {
            kind,
            start: start as u32,
            end: end as u32,
        });
    }

    fn needs_newline(&self) -> bool {
        matches!(self.out.tokens.last(), Some(t) if t.kind != Tok::Newline)
    }

    fn run(mut self) -> Lexed {
        loop {
            if self.at_line_start {
                self.at_line_start = false;
                if !self.indentation() {
                    break;
                }
            }
            if self.pos >= self.end {
                break;
            }
            let c = self.b[self.pos];
            match c {
                b' ' | b'\t' | b'\x0c' | b'\r' => self.pos += 1,
                b'#' => {
                    while self.pos < self.end && self.b[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                b'\n' => {
                    if !self.brackets.is_empty() && !self.nested && self.next_line_is_statement() {
                        self.close_brackets(self.pos + 1);
                    }
                    if self.brackets.is_empty() && !self.nested {
                        if self.needs_newline() {
                            self.push(Tok::Newline, self.pos, self.pos + 1);
                        }
                        self.at_line_start = true;
                    }
                    self.pos += 1;
                }
                b'\\' => self.backslash(),
                b'0'..=b'9' => self.number(),
                b'.' => {
                    if self.peek(1) == b'.' {
                        self.push(Tok::DotDot, self.pos, self.pos + 2);
                        self.pos += 2;
                    } else if self.peek(1).is_ascii_digit() {
                        self.number();
                    } else {
                        self.push(Tok::Dot, self.pos, self.pos + 1);
                        self.pos += 1;
                    }
                }
                b'"' | b'\'' => {
                    let start = self.pos;
                    self.string(start, false);
                }
                c if is_ident_start(c) => self.ident(),
                _ => self.operator(),
            }
        }
        self.finish()
    }

    /// Handles the indentation at the start of a line (skipping blank and
    /// comment-only lines). Returns false at the end of the input.
    fn indentation(&mut self) -> bool {
        loop {
            let mut col: u32 = 0;
            let mut p = self.pos;
            let mut tab = None;
            while p < self.end {
                match self.b[p] {
                    b' ' => col = col.saturating_add(1),
                    b'\t' => {
                        tab.get_or_insert(p);
                        col = (col / 8).saturating_add(1).saturating_mul(8);
                    }
                    b'\x0c' => col = 0,
                    _ => break,
                }
                p += 1;
            }
            if p >= self.end {
                self.pos = p;
                return false;
            }
            match self.b[p] {
                b'\n' => {
                    self.pos = p + 1;
                    continue;
                }
                b'\r' if p + 1 < self.end && self.b[p + 1] == b'\n' => {
                    self.pos = p + 2;
                    continue;
                }
                b'#' => {
                    while p < self.end && self.b[p] != b'\n' {
                        p += 1;
                    }
                    self.pos = p;
                    continue;
                }
                _ => {}
            }
            self.pos = p;
            self.line_indent = col;
            if let Some(t) = tab {
                if !self.reported_tab {
                    self.reported_tab = true;
                    self.error(
                        t,
                        t + 1,
                        "a tab character in indentation",
                        Some("indent with spaces only (tabs in indentation are not allowed)"),
                    );
                }
            }
            let top = self.indents.last().copied().unwrap_or(0);
            if col > top {
                self.indents.push(col);
                self.push(Tok::Indent, p, p);
            } else if col < top {
                while let Some(&top) = self.indents.last() {
                    if top <= col {
                        break;
                    }
                    let below = if self.indents.len() >= 2 {
                        self.indents[self.indents.len() - 2]
                    } else {
                        0
                    };
                    if below < col {
                        let line_end = self.src[p..self.end].find('\n').map(|i| p + i).unwrap_or(self.end);
                        self.error(
                            p,
                            line_end.max(p + 1).min(self.end),
                            "unindent does not match any outer indentation level",
                            Some("indent this line exactly as far as the block it belongs to"),
                        );
                        if let Some(last) = self.indents.last_mut() {
                            *last = col;
                        }
                        break;
                    }
                    self.indents.pop();
                    self.push(Tok::Dedent, p, p);
                }
            }
            return true;
        }
    }

    fn backslash(&mut self) {
        let start = self.pos;
        if self.peek(1) == b'\n' {
            self.pos += 2;
        } else if self.peek(1) == b'\r' && self.peek(2) == b'\n' {
            self.pos += 3;
        } else if self.pos + 1 >= self.end {
            self.pos += 1;
            self.out.trailing_backslash = true;
            if !self.nested {
                self.error(
                    start,
                    start + 1,
                    "unexpected end of file after a line-continuation backslash",
                    None,
                );
            }
        } else {
            self.pos += 1;
            self.error(
                start,
                start + 1,
                "unexpected character after line continuation character '\\'",
                Some("a backslash outside a string must be the last character of its line"),
            );
            self.push(Tok::Bad, start, start + 1);
        }
    }

    fn digits(&mut self, ok: fn(u8) -> bool) -> usize {
        let from = self.pos;
        while self.pos < self.end {
            let c = self.b[self.pos];
            if ok(c) || (c == b'_' && self.pos > from && self.pos + 1 < self.end && ok(self.b[self.pos + 1])) {
                self.pos += 1;
            } else {
                break;
            }
        }
        self.pos - from
    }

    fn number(&mut self) {
        let start = self.pos;
        let mut kind = Tok::Int;
        let c0 = self.b[self.pos];
        let radix = if c0 == b'0' { self.peek(1) | 0x20 } else { 0 };
        if matches!(radix, b'x' | b'o' | b'b') {
            self.pos += 2;
            if self.peek(0) == b'_' && self.pos + 1 < self.end {
                self.pos += 1;
            }
            let (ok, name): (fn(u8) -> bool, &str) = match radix {
                b'x' => (|c: u8| c.is_ascii_hexdigit(), "hexadecimal"),
                b'o' => (|c: u8| (b'0'..=b'7').contains(&c), "octal"),
                _ => (|c: u8| c == b'0' || c == b'1', "binary"),
            };
            if self.digits(ok) == 0 {
                kind = Tok::Bad;
                while self.pos < self.end && is_ident_continue(self.b[self.pos]) {
                    self.pos += 1;
                }
                let text = &self.src[start..self.pos];
                self.error(start, self.pos, format!("invalid {name} literal '{text}'"), None);
                self.push(kind, start, self.pos);
                return;
            }
        } else {
            if c0 != b'.' {
                self.digits(|c| c.is_ascii_digit());
            }
            if self.peek(0) == b'.'
                && self.peek(1) != b'.'
                && !(is_ident_start(self.peek(1)) && self.peek(1) != b'e' && self.peek(1) != b'E')
            {
                kind = Tok::Float;
                self.pos += 1;
                self.digits(|c| c.is_ascii_digit());
            }
            let e = self.peek(0) | 0x20;
            if e == b'e'
                && (self.peek(1).is_ascii_digit()
                    || (matches!(self.peek(1), b'+' | b'-') && self.peek(2).is_ascii_digit()))
            {
                kind = Tok::Float;
                self.pos += if self.peek(1).is_ascii_digit() { 1 } else { 2 };
                self.digits(|c| c.is_ascii_digit());
            }
            if kind == Tok::Int {
                let text = &self.b[start..self.pos];
                if text.len() > 1 && text[0] == b'0' && text.iter().any(|&c| c != b'0' && c != b'_') {
                    self.error(
                        start,
                        self.pos,
                        "leading zeros in decimal integer literals are not allowed",
                        Some("write an octal number as 0o17"),
                    );
                    kind = Tok::Bad;
                }
            }
        }
        if self.pos < self.end && is_ident_continue(self.b[self.pos]) {
            let num_end = self.pos;
            while self.pos < self.end && is_ident_continue(self.b[self.pos]) {
                self.pos += 1;
            }
            // Keep whole characters: a non-ASCII suffix ends on a char boundary.
            while self.pos < self.end && !self.src.is_char_boundary(self.pos) {
                self.pos += 1;
            }
            let text = self.src[start..self.pos].to_string();
            let help = if self.b[num_end] == b'_' {
                "an underscore in a number must stand between two digits"
            } else {
                "put a space or an operator between a number and a name"
            };
            self.error(start, self.pos, format!("invalid number literal '{text}'"), Some(help));
            kind = Tok::Bad;
        }
        self.push(kind, start, self.pos);
    }

    fn ident(&mut self) {
        let start = self.pos;
        while self.pos < self.end && is_ident_continue(self.b[self.pos]) {
            if self.b[self.pos] >= 0x80 {
                // Check the character: letters and digits of any script are fine.
                let ch = self.src[self.pos..].chars().next().unwrap_or('\u{0}');
                let ok = if self.pos == start {
                    ch.is_alphabetic()
                } else {
                    ch.is_alphanumeric()
                };
                if !ok {
                    break;
                }
                self.pos += ch.len_utf8();
            } else {
                self.pos += 1;
            }
        }
        if self.pos == start {
            // A non-ASCII character that cannot start a name.
            let ch = self.src[start..].chars().next().unwrap_or('\u{0}');
            self.pos += ch.len_utf8().max(1);
            self.error(start, self.pos, format!("unexpected character '{ch}'"), None);
            self.push(Tok::Bad, start, self.pos);
            return;
        }
        let text = &self.src[start..self.pos];
        let q = self.peek(0);
        if (q == b'"' || q == b'\'') && text.len() <= 2 {
            let lower = text.as_bytes();
            let mut raw = false;
            let mut f = false;
            let mut bytes = false;
            let mut ok = true;
            for &c in lower {
                match c | 0x20 {
                    b'r' if !raw => raw = true,
                    b'f' if !f && !bytes => f = true,
                    b'b' if !bytes && !f => bytes = true,
                    _ => ok = false,
                }
            }
            if ok {
                self.string(start, f);
                if bytes {
                    if let Some(t) = self.out.tokens.last_mut().filter(|t| t.kind == Tok::Str) {
                        t.kind = Tok::Bytes;
                    }
                }
                return;
            }
        }
        let kind = Tok::keyword(text).unwrap_or(Tok::Name);
        self.push(kind, start, self.pos);
    }

    /// A string literal starting at `start` (its prefix, if any, runs up to
    /// `self.pos`, which is at the opening quote).
    fn string(&mut self, start: usize, fstring: bool) {
        let q = self.b[self.pos];
        let triple = self.peek(1) == q && self.peek(2) == q;
        let qlen = if triple { 3 } else { 1 };
        self.pos += qlen;
        // f-string state: replacement-field nesting, whether we are in a
        // field's expression (where quotes open nested strings, as in
        // Python 3.12) and its bracket depth.
        let mut level = 0u32;
        let mut in_expr = false;
        let mut brackets = 0u32;
        loop {
            if self.pos >= self.end {
                if triple {
                    self.out.open_triple = true;
                }
                self.unterminated(start, triple);
                return;
            }
            let c = self.b[self.pos];
            if in_expr {
                match c {
                    b'\'' | b'"' => {
                        let at = self.pos;
                        if !self.skip_nested_string() && c == q && !triple {
                            // No closing quote on this line: read the quote as
                            // the end of the f-string (the field is unclosed).
                            self.pos = at + 1;
                            break;
                        }
                        continue;
                    }
                    b'\n' if !triple => {
                        self.unterminated(start, triple);
                        return;
                    }
                    b'\\' => {
                        self.pos = (self.pos + 2).min(self.end);
                        continue;
                    }
                    b'(' | b'[' | b'{' => brackets += 1,
                    b')' | b']' => brackets = brackets.saturating_sub(1),
                    b'}' if brackets > 0 => brackets -= 1,
                    b'}' => {
                        level -= 1;
                        in_expr = false;
                    }
                    b':' if brackets == 0 => in_expr = false,
                    _ => {}
                }
                self.pos += 1;
                continue;
            }
            if fstring && c == b'{' {
                if level == 0 && self.peek(1) == b'{' {
                    self.pos += 2;
                } else {
                    level += 1;
                    in_expr = true;
                    brackets = 0;
                    self.pos += 1;
                }
                continue;
            }
            if fstring && c == b'}' && level > 0 {
                level -= 1;
                self.pos += 1;
                continue;
            }
            if c == b'\\' {
                self.pos = (self.pos + 2).min(self.end);
            } else if c == b'\n' && !triple {
                self.unterminated(start, triple);
                return;
            } else if c == q {
                if !triple {
                    self.pos += 1;
                    break;
                }
                if self.peek(1) == q && self.peek(2) == q {
                    self.pos += 3;
                    break;
                }
                self.pos += 1;
            } else {
                self.pos += 1;
            }
        }
        self.push(if fstring { Tok::FStr } else { Tok::Str }, start, self.pos);
    }

    /// Skips a string literal inside an f-string field, from its opening
    /// quote at `self.pos`; false when it is not closed (a newline ends a
    /// one-line string).
    fn skip_nested_string(&mut self) -> bool {
        let q = self.b[self.pos];
        let triple = self.peek(1) == q && self.peek(2) == q;
        self.pos += if triple { 3 } else { 1 };
        while self.pos < self.end {
            let c = self.b[self.pos];
            if c == b'\\' {
                self.pos = (self.pos + 2).min(self.end);
            } else if c == b'\n' && !triple {
                return false;
            } else if c == q && (!triple || (self.peek(1) == q && self.peek(2) == q)) {
                self.pos += if triple { 3 } else { 1 };
                return true;
            } else {
                self.pos += 1;
            }
        }
        false
    }

    fn unterminated(&mut self, start: usize, triple: bool) {
        let msg = if triple {
            "unterminated triple-quoted string"
        } else {
            "unterminated string"
        };
        let help = if triple {
            "close the string with the same three quotes that open it"
        } else {
            "close the string with the same quote on the same line, or use \"\"\"…\"\"\" for text over several lines"
        };
        let mut first_end = start + 1;
        while first_end < self.end && !self.src.is_char_boundary(first_end) {
            first_end += 1;
        }
        self.error(start, first_end, msg, Some(help));
        self.push(Tok::Bad, start, self.pos);
    }

    fn operator(&mut self) {
        let start = self.pos;
        let c = self.b[start];
        let c1 = self.peek(1);
        let c2 = self.peek(2);
        let (kind, len) = match c {
            b'(' => (Tok::LParen, 1),
            b')' => (Tok::RParen, 1),
            b'[' => (Tok::LBracket, 1),
            b']' => (Tok::RBracket, 1),
            b'{' => (Tok::LBrace, 1),
            b'}' => (Tok::RBrace, 1),
            b',' => (Tok::Comma, 1),
            b':' => (Tok::Colon, 1),
            b';' => (Tok::Semi, 1),
            b'~' => (Tok::Tilde, 1),
            b'+' if c1 == b'=' => (Tok::PlusEq, 2),
            b'+' => (Tok::Plus, 1),
            b'-' if c1 == b'=' => (Tok::MinusEq, 2),
            b'-' if c1 == b'>' => (Tok::Arrow, 2),
            b'-' => (Tok::Minus, 1),
            b'*' if c1 == b'*' && c2 == b'=' => (Tok::DoubleStarEq, 3),
            b'*' if c1 == b'*' => (Tok::DoubleStar, 2),
            b'*' if c1 == b'=' => (Tok::StarEq, 2),
            b'*' => (Tok::Star, 1),
            b'/' if c1 == b'/' && c2 == b'=' => (Tok::DoubleSlashEq, 3),
            b'/' if c1 == b'/' => (Tok::DoubleSlash, 2),
            b'/' if c1 == b'=' => (Tok::SlashEq, 2),
            b'/' => (Tok::Slash, 1),
            b'%' if c1 == b'=' => (Tok::PercentEq, 2),
            b'%' => (Tok::Percent, 1),
            b'@' if c1 == b'=' => (Tok::AtEq, 2),
            b'@' => (Tok::At, 1),
            b'&' if c1 == b'=' => (Tok::AmpEq, 2),
            b'&' => (Tok::Amp, 1),
            b'|' if c1 == b'=' => (Tok::PipeEq, 2),
            b'|' if c1 == b'>' => (Tok::PipeGt, 2),
            b'|' => (Tok::Pipe, 1),
            b'^' if c1 == b'=' => (Tok::CaretEq, 2),
            b'^' => (Tok::Caret, 1),
            b'<' if c1 == b'<' && c2 == b'=' => (Tok::ShlEq, 3),
            b'<' if c1 == b'<' => (Tok::Shl, 2),
            b'<' if c1 == b'=' => (Tok::LtE, 2),
            b'<' => (Tok::Lt, 1),
            b'>' if c1 == b'>' && c2 == b'=' => (Tok::ShrEq, 3),
            b'>' if c1 == b'>' => (Tok::Shr, 2),
            b'>' if c1 == b'=' => (Tok::GtE, 2),
            b'>' => (Tok::Gt, 1),
            b'=' if c1 == b'=' => (Tok::Eq, 2),
            b'=' => (Tok::Assign, 1),
            b'!' if c1 == b'=' => (Tok::NotEq, 2),
            _ => {
                let ch = self.src[start..].chars().next().unwrap_or('\u{0}');
                self.pos += ch.len_utf8().max(1);
                let help = match ch {
                    '!' => Some("use 'not' for logical negation"),
                    '?' => Some("use 'a if cond else b' for a conditional expression"),
                    '$' | '`' => None,
                    _ => None,
                };
                self.error(
                    start,
                    self.pos,
                    format!("unexpected character '{}'", ch.escape_debug()),
                    help,
                );
                self.push(Tok::Bad, start, self.pos);
                return;
            }
        };
        match kind {
            Tok::LParen | Tok::LBracket | Tok::LBrace => self.brackets.push((c, start as u32)),
            Tok::RParen | Tok::RBracket | Tok::RBrace => {
                if let Some((open, at)) = self.brackets.pop() {
                    let expected = match open {
                        b'(' => b')',
                        b'[' => b']',
                        _ => b'}',
                    };
                    if c != expected && !self.nested {
                        let open_span = Span::new(self.file, at, at + 1);
                        let d = Diagnostic::new(
                            ErrorKind::SyntaxError,
                            format!("closing '{}' does not match the opening '{}'", c as char, open as char),
                        )
                        .at(Span::new(self.file, start as u32, start as u32 + 1))
                        .label(open_span, "opened here")
                        .help(format!("close it with '{}'", expected as char));
                        self.out.diags.push(d);
                        // The parser's own complaint about this token is the same error.
                        self.out.unclosed.push((start as u32, start as u32 + 1));
                        // `f([1, 2)`: the ')' closes the '(' below as well.
                        let matches_below = |o: u8| matches!((o, c), (b'(', b')') | (b'[', b']') | (b'{', b'}'));
                        if self.brackets.last().is_some_and(|&(o, _)| matches_below(o)) {
                            self.brackets.pop();
                        }
                    }
                }
            }
            _ => {}
        }
        self.pos += len;
        self.push(kind, start, start + len);
    }

    /// Whether the line after the newline at `self.pos` starts a statement
    /// that cannot continue an expression (so an open bracket was
    /// forgotten): a statement keyword, indented no deeper than the line
    /// that opened the bracket.
    fn next_line_is_statement(&self) -> bool {
        let mut p = self.pos + 1;
        let mut col = 0u32;
        while p < self.end && self.b[p] == b' ' {
            p += 1;
            col += 1;
        }
        if col > self.line_indent {
            return false;
        }
        let w0 = p;
        while p < self.end && self.b[p].is_ascii_alphabetic() {
            p += 1;
        }
        let word = &self.src[w0..p];
        if p < self.end && is_ident_continue(self.b[p]) {
            return false;
        }
        match word {
            // Only keywords that can never continue an expression.
            "def" | "struct" | "return" | "while" | "try" | "with" | "use" | "pass" | "break" | "continue"
            | "raise" | "global" | "nonlocal" | "assert" | "except" | "finally" | "elif" | "del" => true,
            "if" | "for" | "else" => {
                // A block header: the line ends with ':'.
                let line_end = self.src[p..self.end].find('\n').map(|i| p + i).unwrap_or(self.end);
                self.src[p..line_end].trim_end().ends_with(':')
            }
            _ => false,
        }
    }

    /// Reports the outermost open bracket as never closed and forgets all
    /// open brackets; parser errors up to `upto` are suppressed.
    fn close_brackets(&mut self, upto: usize) {
        if let Some(&(c, at)) = self.brackets.first() {
            let at = at as usize;
            self.error(
                at,
                at + 1,
                format!("'{}' was never closed", c as char),
                Some(match c {
                    b'(' => "add the matching ')'",
                    b'[' => "add the matching ']'",
                    _ => "add the matching '}'",
                }),
            );
            self.out.unclosed.push((at as u32, upto as u32));
        }
        self.brackets.clear();
    }

    fn finish(mut self) -> Lexed {
        let end = self.end;
        if !self.brackets.is_empty() {
            self.out.open_bracket = true;
            if !self.nested {
                self.close_brackets(end + 1);
            }
        }
        if !self.nested {
            if self.needs_newline() {
                self.push(Tok::Newline, end, end);
            }
            self.out.open_blocks = self.indents.len() - 1;
            for _ in 1..self.indents.len() {
                self.push(Tok::Dedent, end, end);
            }
        }
        self.push(Tok::Eof, end, end);
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok> {
        lex(FileId(0), src).tokens.iter().map(|t| t.kind).collect()
    }

    fn texts(src: &str) -> Vec<String> {
        lex(FileId(0), src)
            .tokens
            .iter()
            .map(|t| t.text(src).to_string())
            .collect()
    }

    fn errors(src: &str) -> Vec<(String, u32, u32)> {
        lex(FileId(0), src)
            .diags
            .iter()
            .map(|d| {
                let s = d.primary_span().unwrap();
                (d.message.clone(), s.start, s.end)
            })
            .collect()
    }

    use Tok::*;

    #[test]
    fn simple_line() {
        assert_eq!(kinds("x = 1\n"), vec![Name, Assign, Int, Newline, Eof]);
        assert_eq!(kinds("x = 1"), vec![Name, Assign, Int, Newline, Eof]);
        assert_eq!(kinds(""), vec![Eof]);
        assert_eq!(kinds("\n\n  # hi\n"), vec![Eof]);
    }

    #[test]
    fn indentation_blocks() {
        let src = "if x:\n    y\n    if z:\n        w\n\n  # c\nv\n";
        assert_eq!(
            kinds(src),
            vec![
                If, Name, Colon, Newline, Indent, Name, Newline, If, Name, Colon, Newline, Indent, Name, Newline,
                Dedent, Dedent, Name, Newline, Eof
            ]
        );
        assert_eq!(
            kinds("if x:\n  y"),
            vec![If, Name, Colon, Newline, Indent, Name, Newline, Dedent, Eof]
        );
    }

    #[test]
    fn brackets_ignore_newlines() {
        assert_eq!(
            kinds("f(1,\n      2)\n"),
            vec![Name, LParen, Int, Comma, Int, RParen, Newline, Eof]
        );
        assert_eq!(kinds("[\n1\n]"), vec![LBracket, Int, RBracket, Newline, Eof]);
    }

    #[test]
    fn continuation_and_semicolon() {
        assert_eq!(
            kinds("x = 1 + \\\n  2; y\n"),
            vec![Name, Assign, Int, Plus, Int, Semi, Name, Newline, Eof]
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(
            kinds("42 1_000 0xff 0o17 0b1010 3.14 1e-9 2.5e3 1. .5 0 00"),
            vec![Int, Int, Int, Int, Int, Float, Float, Float, Float, Float, Int, Int, Newline, Eof]
        );
        assert_eq!(texts("2..5"), vec!["2", "..", "5", "", ""]);
        assert_eq!(kinds("2..5"), vec![Int, DotDot, Int, Newline, Eof]);
        assert_eq!(kinds("1.5..2"), vec![Float, DotDot, Int, Newline, Eof]);
        assert_eq!(kinds("x.y"), vec![Name, Dot, Name, Newline, Eof]);
        assert_eq!(kinds("1 .real"), vec![Int, Dot, Name, Newline, Eof]);
        assert_eq!(kinds("1E5 1e+5"), vec![Float, Float, Newline, Eof]);
    }

    #[test]
    fn number_errors() {
        assert_eq!(
            errors("0x"),
            vec![("invalid hexadecimal literal '0x'".to_string(), 0, 2)]
        );
        assert_eq!(
            errors("0b12"),
            vec![("invalid number literal '0b12'".to_string(), 0, 4)]
        );
        assert_eq!(errors("1_"), vec![("invalid number literal '1_'".to_string(), 0, 2)]);
        assert_eq!(
            errors("12abc"),
            vec![("invalid number literal '12abc'".to_string(), 0, 5)]
        );
        assert_eq!(
            errors("017"),
            vec![(
                "leading zeros in decimal integer literals are not allowed".to_string(),
                0,
                3
            )]
        );
        assert_eq!(kinds("1__0"), vec![Bad, Newline, Eof]);
    }

    #[test]
    fn strings() {
        assert_eq!(
            kinds(r#""a" 'b' """c""" '''d''' r"e" f"{x}" rf'g' F"h" b"i""#),
            vec![Str, Str, Str, Str, Str, FStr, FStr, FStr, Bytes, Newline, Eof]
        );
        assert_eq!(
            kinds(r#"b'' rb"x" BR'y' bf"z""#),
            vec![Bytes, Bytes, Bytes, Name, Str, Newline, Eof]
        );
        assert_eq!(kinds(r#""a\"b""#), vec![Str, Newline, Eof]);
        assert_eq!(kinds("\"\"\"a\nb\"\"\"\n"), vec![Str, Newline, Eof]);
        assert_eq!(kinds("'''a''b'''"), vec![Str, Newline, Eof]);
    }

    #[test]
    fn string_errors() {
        assert_eq!(
            errors("x = 'abc\ny = 2\n"),
            vec![("unterminated string".to_string(), 4, 5)]
        );
        let l = lex(FileId(0), "x = \"\"\"abc\n");
        assert!(l.open_triple);
        assert_eq!(l.diags[0].message, "unterminated triple-quoted string");
        assert_eq!(l.diags[0].primary_span().unwrap().start, 4);
    }

    #[test]
    fn tab_in_indentation() {
        let l = lex(FileId(0), "if x:\n\ty\n\tz\n");
        assert_eq!(l.diags.len(), 1, "reported once");
        assert_eq!(l.diags[0].message, "a tab character in indentation");
        assert!(l.diags[0].help.as_deref().unwrap().contains("spaces"));
        assert_eq!(l.diags[0].primary_span().unwrap().start, 6);
    }

    #[test]
    fn bad_dedent() {
        let src = "if x:\n    y\n  z\n";
        let l = lex(FileId(0), src);
        assert_eq!(l.diags.len(), 1);
        assert_eq!(
            l.diags[0].message,
            "unindent does not match any outer indentation level"
        );
        assert_eq!(l.diags[0].primary_span().unwrap().start, 14);
        // The line stays in the block: one INDENT, one DEDENT.
        let ks: Vec<Tok> = l.tokens.iter().map(|t| t.kind).collect();
        assert_eq!(ks.iter().filter(|k| **k == Indent).count(), 1);
        assert_eq!(ks.iter().filter(|k| **k == Dedent).count(), 1);
    }

    #[test]
    fn unexpected_characters() {
        assert_eq!(errors("a ? b"), vec![("unexpected character '?'".to_string(), 2, 3)]);
        assert_eq!(errors("!x"), vec![("unexpected character '!'".to_string(), 0, 1)]);
        assert_eq!(errors("x → y"), vec![("unexpected character '→'".to_string(), 2, 5)]);
        assert_eq!(
            errors("a \\ b"),
            vec![(
                "unexpected character after line continuation character '\\'".to_string(),
                2,
                3
            )]
        );
    }

    #[test]
    fn unicode_names() {
        assert_eq!(kinds("héllo = 1"), vec![Name, Assign, Int, Newline, Eof]);
        assert_eq!(texts("héllo")[0], "héllo");
    }

    #[test]
    fn unclosed_bracket() {
        let l = lex(FileId(0), "f(1,\n2\n");
        assert!(l.open_bracket);
        assert_eq!(l.diags[0].message, "'(' was never closed");
        assert_eq!(l.diags[0].primary_span().unwrap().start, 1);
    }

    #[test]
    fn operators() {
        assert_eq!(
            kinds("|> .. -> ** // << >> <= >= == != **= //= <<= >>= @= @"),
            vec![
                PipeGt,
                DotDot,
                Arrow,
                DoubleStar,
                DoubleSlash,
                Shl,
                Shr,
                LtE,
                GtE,
                Eq,
                NotEq,
                DoubleStarEq,
                DoubleSlashEq,
                ShlEq,
                ShrEq,
                AtEq,
                At,
                Newline,
                Eof
            ]
        );
    }

    #[test]
    fn parallel_is_a_name() {
        assert_eq!(kinds("parallel for"), vec![Name, For, Newline, Eof]);
    }

    #[test]
    fn nested_mode() {
        let src = "f\"{a +\n b}\"";
        let l = lex_nested(FileId(0), src, 3, 9);
        assert_eq!(
            l.tokens.iter().map(|t| t.kind).collect::<Vec<_>>(),
            vec![Name, Plus, Name, Eof]
        );
        assert_eq!(l.tokens[0].start, 3);
    }
}
