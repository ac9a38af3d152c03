//! Lexer and parser: source text to [`ast::Module`] plus every syntax error.

pub mod ast;
