//! Lexer and parser: source text to [`ast::Module`] plus every syntax error.
//!
//! - [`parse`] never panics and always returns a complete tree (with `Error`
//!   nodes where parsing failed) and every `SyntaxError` found, one per
//!   broken statement.
//! - [`is_incomplete`] tells the REPL whether an input needs more lines.
//!
//! Decisions where LANGUAGE.md is silent (Python's behaviour unless noted):
//! - No `:=`, `class`, `import`, `async`, `...`: each is a
//!   SyntaxError with a hint. Set
//!   displays `{a, b}`, `del`, and `else` on `for`/`while` are parsed (not on
//!   `parallel for`).
//! - `yield` is a keyword and an expression (lowest precedence, like
//!   `lambda`): `yield`, `yield a, b` (a tuple), `yield from it` (`from` is
//!   a keyword only right after `yield`). `(x for x in xs)` and the only
//!   argument `f(x for x in xs)` are `GenExp`; `[…]` stays `ListComp`.
//! - `{x=}` in an f-string gets conversion `'r'` unless a conversion or a
//!   format spec is given (Python's rule), so later passes need no special case.
//! - A string inside an f-string field may use the f-string's own quotes
//!   (`f"{d["k"]}"`, as in Python 3.12); a format spec's quotes are literal.
//! - `-9223372036854775808` is folded to `Int(i64::MIN)`; any other int literal
//!   beyond i64 is a SyntaxError. Other negative literals stay `UnaryOp(Neg)`.
//! - A docstring in a struct body is dropped; in a function it stays an
//!   expression statement.
//! - Brackets, expressions and blocks nest at most [`MAX_DEPTH`] levels and an
//!   expression tree is at most about [`MAX_HEIGHT`] nodes tall (a chain of more
//!   than 1000 operators is an error), so passes that recurse over the tree
//!   stay within ordinary stack sizes.
//! - A forgotten closing bracket is reported once, at the bracket; the lexer
//!   gives up on it at the next line that starts with a statement keyword
//!   (`def`, `return`, …) indented no deeper than the line that opened it.
//! - A UTF-8 byte order mark at the start of a file is ignored.

pub mod ast;
pub mod bytes_lit;
mod expr;
mod fstring;
pub mod lexer;
pub mod literal;
mod parser;
pub mod token;

pub use parser::{MAX_DEPTH, MAX_HEIGHT};

use crate::diagnostic::{Diagnostic, FileId};
use token::Tok;

/// Parses one source file. Never panics; never stops at the first error.
pub fn parse(file: FileId, src: &str) -> (ast::Module, Vec<Diagnostic>) {
    let lexed = lexer::lex(file, src);
    parser::Parser::new(file, src, lexed).parse_module()
}

/// Whether `src` (what the REPL has read so far) needs more lines: an open
/// bracket, an unterminated triple-quoted string, a trailing backslash, a
/// line ending in `:` or a decorator, or an indented block not yet closed by
/// an empty line.
pub fn is_incomplete(src: &str) -> bool {
    let lexed = lexer::lex(FileId(0), src);
    if lexed.open_bracket || lexed.open_triple || lexed.trailing_backslash {
        return true;
    }
    let toks = &lexed.tokens;
    let significant = |t: &&token::Token| !matches!(t.kind, Tok::Newline | Tok::Dedent | Tok::Eof);
    let Some(last) = toks.iter().rev().find(significant) else {
        return false;
    };
    if last.kind == Tok::Colon {
        return true;
    }
    // The first token of the last logical line.
    let last_idx = toks.iter().rposition(|t| std::ptr::eq(t, last)).unwrap_or(0);
    let line_start = toks[..last_idx]
        .iter()
        .rposition(|t| t.kind == Tok::Newline)
        .map(|i| i + 1)
        .unwrap_or(0);
    let first = toks[line_start..]
        .iter()
        .find(|t| !matches!(t.kind, Tok::Indent | Tok::Dedent));
    if matches!(first, Some(t) if t.kind == Tok::At) {
        return true;
    }
    if lexed.open_blocks > 0 {
        // A block is open: it ends with an empty line.
        let body = src.strip_suffix('\n').unwrap_or(src);
        let last_line = body.rsplit('\n').next().unwrap_or("");
        let ends_blank = body.contains('\n') && last_line.trim().is_empty();
        return !ends_blank;
    }
    false
}
