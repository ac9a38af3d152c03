//! Tokens: what the lexer produces and the parser consumes.
//!
//! A token is a kind plus a byte range of the source; literal values (numbers,
//! string contents) are decoded by the parser from that range, so lexing does
//! not allocate per token.

/// The kind of a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tok {
    Name,
    Int,
    Float,
    /// A string literal, any quoting, possibly with an `r` prefix.
    Str,
    /// An f-string literal (`f"…"`, `rf'…'`, …).
    FStr,
    /// A literal that could not be lexed (an error was recorded).
    Bad,
    /// A bytes literal (`b"…"`, `rb'…'`, …).
    Bytes,
    Newline,
    Indent,
    Dedent,
    Eof,
    // keywords
    Def,
    Return,
    If,
    Elif,
    Else,
    While,
    For,
    In,
    Break,
    Continue,
    Pass,
    Use,
    As,
    Struct,
    And,
    Or,
    Not,
    Is,
    True,
    False,
    None,
    Lambda,
    Try,
    Except,
    Finally,
    Raise,
    With,
    Assert,
    Global,
    Nonlocal,
    Del,
    Yield,
    // brackets
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    // punctuation
    Comma,
    Colon,
    Semi,
    Dot,
    DotDot,
    Arrow,
    At,
    Assign,
    // operators
    Plus,
    Minus,
    Star,
    DoubleStar,
    Slash,
    DoubleSlash,
    Percent,
    Amp,
    Pipe,
    Caret,
    Tilde,
    Shl,
    Shr,
    PipeGt,
    Eq,
    NotEq,
    Lt,
    LtE,
    Gt,
    GtE,
    // augmented assignment
    PlusEq,
    MinusEq,
    StarEq,
    SlashEq,
    DoubleSlashEq,
    PercentEq,
    AtEq,
    DoubleStarEq,
    AmpEq,
    PipeEq,
    CaretEq,
    ShlEq,
    ShrEq,
}

impl Tok {
    /// The keyword token for an identifier, if it is one. `parallel` is not
    /// a keyword here: the parser recognises it directly before `for`.
    pub fn keyword(word: &str) -> Option<Tok> {
        Some(match word {
            "def" => Tok::Def,
            "return" => Tok::Return,
            "if" => Tok::If,
            "elif" => Tok::Elif,
            "else" => Tok::Else,
            "while" => Tok::While,
            "for" => Tok::For,
            "in" => Tok::In,
            "break" => Tok::Break,
            "continue" => Tok::Continue,
            "pass" => Tok::Pass,
            "use" => Tok::Use,
            "as" => Tok::As,
            "struct" => Tok::Struct,
            "and" => Tok::And,
            "or" => Tok::Or,
            "not" => Tok::Not,
            "is" => Tok::Is,
            "true" => Tok::True,
            "false" => Tok::False,
            "none" => Tok::None,
            "lambda" => Tok::Lambda,
            "try" => Tok::Try,
            "except" => Tok::Except,
            "finally" => Tok::Finally,
            "raise" => Tok::Raise,
            "with" => Tok::With,
            "assert" => Tok::Assert,
            "global" => Tok::Global,
            "nonlocal" => Tok::Nonlocal,
            "del" => Tok::Del,
            "yield" => Tok::Yield,
            _ => return None,
        })
    }

    /// The fixed text of a keyword or punctuation token; `None` for tokens
    /// whose text varies (names, literals) or that have no text.
    pub fn text(self) -> Option<&'static str> {
        Some(match self {
            Tok::Def => "def",
            Tok::Return => "return",
            Tok::If => "if",
            Tok::Elif => "elif",
            Tok::Else => "else",
            Tok::While => "while",
            Tok::For => "for",
            Tok::In => "in",
            Tok::Break => "break",
            Tok::Continue => "continue",
            Tok::Pass => "pass",
            Tok::Use => "use",
            Tok::As => "as",
            Tok::Struct => "struct",
            Tok::And => "and",
            Tok::Or => "or",
            Tok::Not => "not",
            Tok::Is => "is",
            Tok::True => "true",
            Tok::False => "false",
            Tok::None => "none",
            Tok::Lambda => "lambda",
            Tok::Try => "try",
            Tok::Except => "except",
            Tok::Finally => "finally",
            Tok::Raise => "raise",
            Tok::With => "with",
            Tok::Assert => "assert",
            Tok::Global => "global",
            Tok::Nonlocal => "nonlocal",
            Tok::Del => "del",
            Tok::Yield => "yield",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Comma => ",",
            Tok::Colon => ":",
            Tok::Semi => ";",
            Tok::Dot => ".",
            Tok::DotDot => "..",
            Tok::Arrow => "->",
            Tok::At => "@",
            Tok::Assign => "=",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::DoubleStar => "**",
            Tok::Slash => "/",
            Tok::DoubleSlash => "//",
            Tok::Percent => "%",
            Tok::Amp => "&",
            Tok::Pipe => "|",
            Tok::Caret => "^",
            Tok::Tilde => "~",
            Tok::Shl => "<<",
            Tok::Shr => ">>",
            Tok::PipeGt => "|>",
            Tok::Eq => "==",
            Tok::NotEq => "!=",
            Tok::Lt => "<",
            Tok::LtE => "<=",
            Tok::Gt => ">",
            Tok::GtE => ">=",
            Tok::PlusEq => "+=",
            Tok::MinusEq => "-=",
            Tok::StarEq => "*=",
            Tok::SlashEq => "/=",
            Tok::DoubleSlashEq => "//=",
            Tok::PercentEq => "%=",
            Tok::AtEq => "@=",
            Tok::DoubleStarEq => "**=",
            Tok::AmpEq => "&=",
            Tok::PipeEq => "|=",
            Tok::CaretEq => "^=",
            Tok::ShlEq => "<<=",
            Tok::ShrEq => ">>=",
            _ => return None,
        })
    }

    pub fn is_keyword(self) -> bool {
        matches!(self.text(), Some(t) if t.as_bytes()[0].is_ascii_alphabetic())
    }
}

/// One token: its kind and the byte range `start..end` of its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub kind: Tok,
    pub start: u32,
    pub end: u32,
}

impl Token {
    /// Its text in `src` (empty for INDENT/DEDENT/EOF or a bad range).
    pub fn text(self, src: &str) -> &str {
        src.get(self.start as usize..self.end as usize).unwrap_or("")
    }

    /// A short description for error messages: `'def'`, `name 'x'`,
    /// `end of line`, …
    pub fn describe(self, src: &str) -> String {
        match self.kind {
            Tok::Name => format!("name '{}'", clip(self.text(src))),
            Tok::Int | Tok::Float => format!("number {}", clip(self.text(src))),
            Tok::Str => "a string".to_string(),
            Tok::FStr => "an f-string".to_string(),
            Tok::Bytes => "a bytes literal".to_string(),
            Tok::Bad => format!("'{}'", clip(self.text(src))),
            Tok::Newline => "end of line".to_string(),
            Tok::Indent => "an indented block".to_string(),
            Tok::Dedent => "the end of the indented block".to_string(),
            Tok::Eof => "end of file".to_string(),
            k => match k.text() {
                Some(t) => format!("'{t}'"),
                None => format!("{k:?}"),
            },
        }
    }
}

/// At most 30 characters of `s`, with `…` when cut.
fn clip(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == 30 {
            out.push('…');
            break;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_round_trip() {
        for w in ["def", "lambda", "nonlocal", "none", "true", "struct", "use"] {
            let k = Tok::keyword(w).unwrap();
            assert_eq!(k.text(), Some(w));
            assert!(k.is_keyword());
        }
        assert_eq!(Tok::keyword("parallel"), None);
        assert_eq!(Tok::keyword("None"), None);
        assert!(!Tok::Plus.is_keyword());
    }

    #[test]
    fn describe_tokens() {
        let src = "foo 12";
        assert_eq!(
            Token {
                kind: Tok::Name,
                start: 0,
                end: 3
            }
            .describe(src),
            "name 'foo'"
        );
        assert_eq!(
            Token {
                kind: Tok::Int,
                start: 4,
                end: 6
            }
            .describe(src),
            "number 12"
        );
        assert_eq!(
            Token {
                kind: Tok::Newline,
                start: 6,
                end: 6
            }
            .describe(src),
            "end of line"
        );
        assert_eq!(
            Token {
                kind: Tok::Colon,
                start: 0,
                end: 1
            }
            .describe(src),
            "':'"
        );
        let long = "a".repeat(40);
        assert_eq!(
            Token {
                kind: Tok::Name,
                start: 0,
                end: 40
            }
            .describe(&long),
            format!("name '{}…'", "a".repeat(30))
        );
    }
}
