//! The parser: tokens to [`ast::Module`], statements and blocks.
//! Expressions are in `expr.rs`, f-strings in `fstring.rs`.
//!
//! Error handling: the first error in a statement is recorded and the parser
//! enters "panic mode" — it unwinds to the statement level, skips to the end
//! of the logical line (and over any block that follows it) and goes on, so
//! every broken statement gives one diagnostic and the tree stays complete
//! (`Error` nodes). Every loop consumes a token or stops; recursion is
//! bounded by [`MAX_DEPTH`].

use super::ast::*;
use super::lexer::Lexed;
use super::token::{Tok, Token};
use crate::diagnostic::{Diagnostic, FileId, Span};
use crate::error::ErrorKind;

/// How deeply blocks and expressions may nest before "nested too deeply".
pub const MAX_DEPTH: u32 = 200;

/// How tall an expression tree may grow (long left-nested chains such as
/// `a + b + …` are built by loops, not recursion, so they are counted apart).
pub const MAX_HEIGHT: u32 = 1000;

pub struct Parser<'a> {
    pub(super) file: FileId,
    pub(super) src: &'a str,
    toks: Vec<Token>,
    pos: usize,
    /// End offset of the last consumed token (not counting layout tokens).
    prev_end: u32,
    pub(super) diags: Vec<Diagnostic>,
    pub(super) depth: u32,
    /// In panic mode: errors are not recorded until the statement resyncs.
    pub(super) panicking: bool,
    pub(super) too_deep: bool,
    /// Height bookkeeping for expression trees (see `expr.rs`).
    pub(super) hw: u32,
    /// Parser errors in these ranges are dropped (an unclosed bracket was
    /// reported at the start of each).
    suppress: Vec<(u32, u32)>,
}

impl<'a> Parser<'a> {
    pub fn new(file: FileId, src: &'a str, lexed: Lexed) -> Parser<'a> {
        let suppress = lexed.unclosed;
        let mut toks = lexed.tokens;
        if toks.last().map(|t| t.kind) != Some(Tok::Eof) {
            let end = src.len() as u32;
            toks.push(Token {
                kind: Tok::Eof,
                start: end,
                end,
            });
        }
        let prev_end = toks.first().map(|t| t.start).unwrap_or(0);
        Parser {
            file,
            src,
            toks,
            pos: 0,
            prev_end,
            diags: lexed.diags,
            depth: 0,
            panicking: false,
            too_deep: false,
            hw: 0,
            suppress,
        }
    }

    // ----- token cursor -------------------------------------------------

    pub(super) fn tok(&self) -> Token {
        self.toks[self.pos.min(self.toks.len() - 1)]
    }

    pub(super) fn peek(&self) -> Tok {
        self.tok().kind
    }

    pub(super) fn peek_at(&self, n: usize) -> Tok {
        self.toks[(self.pos + n).min(self.toks.len() - 1)].kind
    }

    pub(super) fn bump(&mut self) -> Token {
        let t = self.tok();
        if t.kind != Tok::Eof {
            self.pos += 1;
        }
        if !matches!(t.kind, Tok::Newline | Tok::Indent | Tok::Dedent | Tok::Eof) {
            self.prev_end = t.end;
        }
        t
    }

    pub(super) fn eat(&mut self, k: Tok) -> bool {
        if self.peek() == k {
            self.bump();
            true
        } else {
            false
        }
    }

    pub(super) fn span(&self, start: u32, end: u32) -> Span {
        Span::new(self.file, start, end.max(start))
    }

    pub(super) fn tok_span(&self, t: Token) -> Span {
        self.span(t.start, t.end)
    }

    /// The span from `start` to the end of the last consumed token.
    pub(super) fn since(&self, start: u32) -> Span {
        self.span(start, self.prev_end)
    }

    pub(super) fn prev_end(&self) -> u32 {
        self.prev_end
    }

    pub(super) fn text(&self, t: Token) -> &'a str {
        t.text(self.src)
    }

    pub(super) fn is_name(&self, word: &str) -> bool {
        let t = self.tok();
        t.kind == Tok::Name && self.text(t) == word
    }

    // ----- errors -------------------------------------------------------

    /// Records a syntax error (unless already panicking) and enters panic mode.
    pub(super) fn error(&mut self, span: Span, msg: impl Into<String>, help: Option<String>) {
        if !self.panicking {
            self.report(span, msg, help);
        }
        self.panicking = true;
    }

    /// Records a syntax error without entering panic mode (the statement
    /// parsed; only a rule about it was broken).
    pub(super) fn report(&mut self, span: Span, msg: impl Into<String>, help: Option<String>) {
        if self.suppress.iter().any(|&(a, b)| span.start >= a && span.start < b) {
            return;
        }
        let mut d = Diagnostic::new(ErrorKind::SyntaxError, msg).at(span);
        d.help = help;
        self.diags.push(d);
    }

    /// "expected X, found Y" at the current token.
    pub(super) fn expected(&mut self, what: &str, help: Option<String>) {
        let t = self.tok();
        if t.kind == Tok::Bad {
            // The lexer already reported this token.
            self.panicking = true;
            return;
        }
        let found = t.describe(self.src);
        let span = self.tok_span(t);
        let help = self.python_habit_hint().or(help);
        self.error(span, format!("expected {what}, found {found}"), help);
    }

    /// The token before the current one, if it ends where `at` starts.
    fn touching_prev(&self, at: u32) -> Option<Tok> {
        let p = self.pos.checked_sub(1)?;
        let t = self.toks.get(p)?;
        (t.end == at).then_some(t.kind)
    }

    /// A hint for habits from other languages, seen at the current token.
    fn python_habit_hint(&self) -> Option<String> {
        let t = self.tok();
        let next = self.toks.get(self.pos + 1).copied();
        let next_touches = |k: Tok| matches!(next, Some(n) if n.kind == k && n.start == t.end);
        match t.kind {
            Tok::Colon if next_touches(Tok::Assign) => {
                Some("Apsi has no ':=' assignment expression; assign on a line of its own first".to_string())
            }
            Tok::Amp if self.touching_prev(t.start) == Some(Tok::Amp) => Some("use 'and' for logical and".to_string()),
            Tok::Pipe if self.touching_prev(t.start) == Some(Tok::Pipe) => Some("use 'or' for logical or".to_string()),
            Tok::Newline | Tok::Eof | Tok::RParen | Tok::RBracket | Tok::Semi => {
                let p = self.pos.checked_sub(2)?;
                let (a, b) = (self.toks.get(p)?, self.toks.get(p + 1)?);
                if a.end == b.start && a.kind == b.kind && matches!(a.kind, Tok::Plus | Tok::Minus) {
                    let op = if a.kind == Tok::Plus { "+" } else { "-" };
                    Some(format!("Apsi has no '{op}{op}'; write x {op}= 1"))
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// Consumes `k` or reports "expected 'k' WHERE, found …".
    pub(super) fn expect(&mut self, k: Tok, context: &str) -> bool {
        if self.eat(k) {
            return true;
        }
        let name = match k {
            Tok::Newline => "end of line".to_string(),
            _ => k.text().map(|t| format!("'{t}'")).unwrap_or_else(|| format!("{k:?}")),
        };
        let what = if context.is_empty() {
            name
        } else {
            format!("{name} {context}")
        };
        let help = match (k, self.peek()) {
            (Tok::Colon, Tok::Assign) => Some("use '==' to compare values".to_string()),
            (Tok::Colon, Tok::Newline) => Some("a line that opens a block ends with ':'".to_string()),
            _ => None,
        };
        self.expected(&what, help);
        false
    }

    pub(super) fn expect_name(&mut self, what: &str) -> Option<Ident> {
        let t = self.tok();
        if t.kind == Tok::Name {
            self.bump();
            return Some(Ident {
                name: self.text(t).to_string(),
                span: self.tok_span(t),
            });
        }
        let help = if t.kind.is_keyword() {
            Some(format!("'{}' is a keyword and cannot be used as a name", self.text(t)))
        } else {
            None
        };
        self.expected(what, help);
        None
    }

    /// Enters one level of nesting; false (after reporting once) when too deep.
    pub(super) fn enter(&mut self) -> bool {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            if !self.too_deep {
                self.too_deep = true;
                let span = self.tok_span(self.tok());
                // Reported even inside an unclosed bracket's range: it is a
                // problem of its own.
                let d = Diagnostic::new(
                    ErrorKind::SyntaxError,
                    format!("nested too deeply (more than {MAX_DEPTH} levels of brackets, expressions or blocks)"),
                )
                .at(span)
                .help("split the expression or block into smaller parts");
                self.diags.push(d);
            }
            self.panicking = true;
            return false;
        }
        true
    }

    pub(super) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Skips to the end of the logical line (consuming its NEWLINE), and
    /// leaves panic mode.
    fn sync(&mut self) {
        while !matches!(self.peek(), Tok::Newline | Tok::Eof | Tok::Dedent | Tok::Indent) {
            self.bump();
        }
        self.eat(Tok::Newline);
        self.panicking = false;
    }

    // ----- module and blocks -------------------------------------------

    pub fn parse_module(mut self) -> (Module, Vec<Diagnostic>) {
        let mut body = Vec::new();
        loop {
            match self.peek() {
                Tok::Eof => break,
                Tok::Dedent | Tok::Newline => {
                    self.bump();
                }
                _ => self.statement(&mut body),
            }
        }
        let end = self.src.len() as u32;
        let mut diags = self.diags;
        diags.sort_by_key(|d| d.primary_span().map(|s| s.start).unwrap_or(0));
        (
            Module {
                body,
                span: Span::new(self.file, 0, end),
            },
            diags,
        )
    }

    /// Statements up to the DEDENT (or end of file) that closes a block.
    fn statements(&mut self, out: &mut Vec<Stmt>) {
        loop {
            match self.peek() {
                Tok::Eof => break,
                Tok::Dedent => {
                    self.bump();
                    break;
                }
                Tok::Newline => {
                    self.bump();
                }
                _ => self.statement(out),
            }
        }
    }

    /// An unexpected INDENT: report it, then parse the block's statements
    /// into `out` so nothing inside is lost.
    fn stray_block(&mut self, out: &mut Vec<Stmt>, report: bool) {
        self.bump();
        if report {
            let span = self.tok_span(self.tok());
            self.report(
                span,
                "unexpected indent",
                Some("indent a line only to open a block after a line ending in ':'".to_string()),
            );
        }
        if self.enter() {
            self.statements(out);
        } else {
            self.skip_block();
        }
        self.leave();
    }

    /// Skips tokens up to and including the DEDENT matching an INDENT just consumed.
    fn skip_block(&mut self) {
        let mut level = 1usize;
        loop {
            match self.bump().kind {
                Tok::Indent => level += 1,
                Tok::Dedent => {
                    level -= 1;
                    if level == 0 {
                        break;
                    }
                }
                Tok::Eof => break,
                _ => {}
            }
        }
        self.panicking = false;
    }

    fn statement(&mut self, out: &mut Vec<Stmt>) {
        if self.peek() == Tok::Indent {
            self.stray_block(out, true);
            return;
        }
        let stmt = match self.peek() {
            Tok::Def | Tok::Struct | Tok::At => Some(self.decorated()),
            Tok::If => Some(self.if_stmt()),
            Tok::While => Some(self.while_stmt()),
            Tok::For => Some(self.for_stmt(false)),
            Tok::Name if self.peek_at(1) == Tok::For && self.is_name("parallel") => Some(self.for_stmt(true)),
            Tok::Try => Some(self.try_stmt()),
            Tok::With => Some(self.with_stmt()),
            Tok::Elif | Tok::Else | Tok::Except | Tok::Finally => Some(self.orphan_clause()),
            _ => None,
        };
        match stmt {
            Some(s) => out.push(s),
            None => self.simple_line(out),
        }
        if self.panicking {
            self.sync();
            // A failed block header: its block belongs to it; keep parsing it.
            if self.peek() == Tok::Indent {
                self.stray_block(out, false);
            }
        }
    }

    /// `elif`/`else`/`except`/`finally` with nothing to attach to.
    fn orphan_clause(&mut self) -> Stmt {
        let t = self.tok();
        let kw = self.text(t).to_string();
        let owner = match t.kind {
            Tok::Elif | Tok::Else => "'if'",
            _ => "'try'",
        };
        let span = self.tok_span(t);
        self.error(
            span,
            format!("'{kw}' without a matching {owner} before it"),
            Some(format!(
                "'{kw}' must follow the block of its {owner} at the same indentation"
            )),
        );
        Stmt {
            kind: StmtKind::Error,
            span,
        }
    }

    /// The block after a header's `:` — an indented block on the next lines
    /// or simple statements on the same line. `what` names the header for
    /// messages ("'if' statement").
    fn block(&mut self, what: &str, header_start: u32) -> Vec<Stmt> {
        let mut body = Vec::new();
        if !self.panicking {
            self.expect(Tok::Colon, &format!("at the end of the {what} header"));
        }
        if self.panicking {
            // The header is broken (already reported): skip the rest of its
            // line; an indented block after it still belongs to it.
            while !matches!(self.peek(), Tok::Newline | Tok::Eof | Tok::Indent | Tok::Dedent) {
                self.bump();
            }
            self.panicking = false;
            if !(self.peek() == Tok::Newline && self.peek_at(1) == Tok::Indent) {
                return body;
            }
        }
        if self.eat(Tok::Newline) {
            if self.peek() != Tok::Indent {
                let span = self.tok_span(self.tok());
                let header = self.span(header_start, header_start);
                self.error(
                    span,
                    format!("expected an indented block after the {what}"),
                    Some("indent the lines of the block (with spaces), or write 'pass' for an empty block".to_string()),
                );
                if let Some(d) = self.diags.last_mut() {
                    if d.primary_span() == Some(span) {
                        d.labels.push(crate::diagnostic::Label {
                            span: header,
                            message: Some(format!("the {what} starts here")),
                        });
                    }
                }
                // Error already points here; do not skip the next statement.
                self.panicking = false;
                return body;
            }
            self.bump();
            if self.enter() {
                self.statements(&mut body);
            } else {
                self.skip_block();
            }
            self.leave();
        } else {
            let parallel_for = self.peek() == Tok::Name && self.peek_at(1) == Tok::For && self.is_name("parallel");
            match self.peek() {
                Tok::If | Tok::While | Tok::For | Tok::Def | Tok::Struct | Tok::Try | Tok::With | Tok::At => {
                    let t = self.tok();
                    let span = self.tok_span(t);
                    let kw = self.text(t).to_string();
                    self.error(
                        span,
                        format!("'{kw}' cannot follow ':' on the same line"),
                        Some("start a new, indented line for a block inside a block".to_string()),
                    );
                }
                _ if parallel_for => {
                    let span = self.tok_span(self.tok());
                    self.error(
                        span,
                        "'parallel for' cannot follow ':' on the same line",
                        Some("start a new, indented line for a block inside a block".to_string()),
                    );
                }
                _ => self.simple_line(&mut body),
            }
            if self.panicking {
                // Recover here so the clauses after this one (`else:`,
                // `except:`) still attach to their statement.
                self.sync();
                if self.peek() == Tok::Indent {
                    self.stray_block(&mut body, false);
                }
            }
        }
        body
    }

    /// Simple statements separated by `;` up to the end of the line.
    fn simple_line(&mut self, out: &mut Vec<Stmt>) {
        loop {
            let s = self.simple_statement();
            out.push(s);
            if self.panicking {
                return;
            }
            if self.eat(Tok::Semi) {
                if matches!(self.peek(), Tok::Newline | Tok::Eof) {
                    break;
                }
                continue;
            }
            break;
        }
        match self.peek() {
            Tok::Newline => {
                self.bump();
            }
            Tok::Eof | Tok::Dedent => {}
            _ => {
                let help = match self.peek() {
                    Tok::Name
                    | Tok::Int
                    | Tok::Float
                    | Tok::Str
                    | Tok::FStr
                    | Tok::Bytes
                    | Tok::LParen
                    | Tok::LBracket => Some(
                        "put ';' or a new line between two statements, or an operator between two values".to_string(),
                    ),
                    Tok::Assign => {
                        Some("only names, attributes, indexing and tuples/lists of them can be assigned to".to_string())
                    }
                    _ => None,
                };
                self.expected("end of line", help);
            }
        }
    }

    fn simple_statement(&mut self) -> Stmt {
        let t = self.tok();
        let start = t.start;
        let kind = match t.kind {
            Tok::Pass => {
                self.bump();
                StmtKind::Pass
            }
            Tok::Break => {
                self.bump();
                StmtKind::Break
            }
            Tok::Continue => {
                self.bump();
                StmtKind::Continue
            }
            Tok::Return => {
                self.bump();
                if self.can_start_expr() {
                    StmtKind::Return(Some(self.testlist_star()))
                } else {
                    StmtKind::Return(None)
                }
            }
            Tok::Raise => {
                self.bump();
                if self.can_start_expr() {
                    StmtKind::Raise(Some(self.test()))
                } else {
                    StmtKind::Raise(None)
                }
            }
            Tok::Assert => {
                self.bump();
                let test = self.test();
                let msg = if self.eat(Tok::Comma) { Some(self.test()) } else { None };
                StmtKind::Assert { test, msg }
            }
            Tok::Global | Tok::Nonlocal => {
                self.bump();
                let mut names = Vec::new();
                while let Some(n) = self.expect_name(&format!("a name after '{}'", self.text(t))) {
                    names.push(n);
                    if !self.eat(Tok::Comma) {
                        break;
                    }
                }
                if t.kind == Tok::Global {
                    StmtKind::Global(names)
                } else {
                    StmtKind::Nonlocal(names)
                }
            }
            Tok::Del => {
                self.bump();
                StmtKind::Del(self.del_targets())
            }
            Tok::Use => self.use_stmt(),
            _ => return self.expr_statement(),
        };
        Stmt {
            kind,
            span: self.since(start),
        }
    }

    fn use_stmt(&mut self) -> StmtKind {
        self.bump();
        let mut path = Vec::new();
        match self.expect_name("a module name after 'use'") {
            Some(n) => path.push(n),
            None => return StmtKind::Error,
        }
        while self.eat(Tok::Dot) {
            match self.expect_name("a module name after '.'") {
                Some(n) => path.push(n),
                None => return StmtKind::Error,
            }
        }
        let alias = if self.eat(Tok::As) {
            match self.expect_name("a name after 'as'") {
                Some(n) => Some(n),
                None => return StmtKind::Error,
            }
        } else {
            None
        };
        StmtKind::Use { path, alias }
    }

    fn expr_statement(&mut self) -> Stmt {
        let start = self.tok().start;
        if self.peek() == Tok::Name && matches!(self.peek_at(1), Tok::Name | Tok::Def) {
            let t = self.tok();
            let other = match self.text(t) {
                "class" => Some((
                    "Apsi has no 'class' statement",
                    "declare a record type with 'struct Name:' and its fields",
                )),
                "import" | "from" => Some((
                    "Apsi has no 'import' statement",
                    "load a module with 'use name' or 'use a.b as m'",
                )),
                "async" => Some((
                    "Apsi has no 'async'",
                    "run work concurrently with 'use parallel' (spawn, channels)",
                )),
                _ => None,
            };
            if let Some((msg, help)) = other {
                let span = self.tok_span(t);
                self.error(span, msg, Some(help.to_string()));
                return Stmt {
                    kind: StmtKind::Error,
                    span,
                };
            }
        }
        let first = self.testlist_star();
        let aug = match self.peek() {
            Tok::PlusEq => Some(BinOp::Add),
            Tok::MinusEq => Some(BinOp::Sub),
            Tok::StarEq => Some(BinOp::Mul),
            Tok::SlashEq => Some(BinOp::Div),
            Tok::DoubleSlashEq => Some(BinOp::FloorDiv),
            Tok::PercentEq => Some(BinOp::Mod),
            Tok::AtEq => Some(BinOp::MatMul),
            Tok::DoubleStarEq => Some(BinOp::Pow),
            Tok::AmpEq => Some(BinOp::BitAnd),
            Tok::PipeEq => Some(BinOp::BitOr),
            Tok::CaretEq => Some(BinOp::BitXor),
            Tok::ShlEq => Some(BinOp::Shl),
            Tok::ShrEq => Some(BinOp::Shr),
            _ => None,
        };
        let kind = if self.panicking {
            StmtKind::Expr(first)
        } else if let Some(op) = aug {
            let op_tok = self.bump();
            if !matches!(
                first.kind,
                ExprKind::Name(_) | ExprKind::Attribute { .. } | ExprKind::Index { .. } | ExprKind::Error
            ) {
                let sym = self.text(op_tok).to_string();
                self.report(
                    first.span,
                    format!("cannot use '{sym}' on {}", describe_expr(&first)),
                    Some("augmented assignment needs a single name, attribute or index on its left".to_string()),
                );
            }
            let value = self.testlist_star();
            StmtKind::AugAssign {
                target: first,
                op,
                value,
            }
        } else if self.peek() == Tok::Assign {
            let mut targets = vec![first];
            let value = loop {
                self.bump();
                let v = self.testlist_star();
                if self.peek() == Tok::Assign && !self.panicking {
                    targets.push(v);
                } else {
                    break v;
                }
            };
            for t in &targets {
                self.check_target(t, true);
            }
            StmtKind::Assign { targets, value }
        } else if self.peek() == Tok::Colon {
            self.bump();
            if !matches!(
                first.kind,
                ExprKind::Name(_) | ExprKind::Attribute { .. } | ExprKind::Index { .. } | ExprKind::Error
            ) {
                self.report(
                    first.span,
                    format!("cannot annotate {}", describe_expr(&first)),
                    Some("only a single name, attribute or index can have a type annotation".to_string()),
                );
            }
            let annotation = self.test();
            let value = if self.eat(Tok::Assign) {
                Some(self.testlist_star())
            } else {
                None
            };
            StmtKind::AnnAssign {
                target: first,
                annotation,
                value,
            }
        } else {
            if let ExprKind::Starred(_) = first.kind {
                self.report(
                    first.span,
                    "a starred expression '*x' cannot stand alone here",
                    Some("'*' unpacks into a list, tuple, call or assignment target".to_string()),
                );
            }
            StmtKind::Expr(first)
        };
        Stmt {
            kind,
            span: self.since(start),
        }
    }

    /// Reports an invalid assignment target (Name, Attribute, Index, and
    /// Tuple/List of targets with at most one Starred are valid).
    pub(super) fn check_target(&mut self, e: &Expr, top: bool) {
        match &e.kind {
            ExprKind::Name(_) | ExprKind::Attribute { .. } | ExprKind::Index { .. } | ExprKind::Error => {}
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                let mut starred = 0;
                for item in items {
                    if let ExprKind::Starred(inner) = &item.kind {
                        starred += 1;
                        if starred == 2 {
                            self.report(
                                item.span,
                                "more than one starred target in an assignment",
                                Some("only one '*name' may collect the rest".to_string()),
                            );
                        }
                        self.check_target(inner, false);
                    } else {
                        self.check_target(item, false);
                    }
                }
            }
            ExprKind::Starred(_) if top => {
                self.report(
                    e.span,
                    "a starred assignment target must be in a list or tuple",
                    Some("write '*a, = …' or '[*a] = …'".to_string()),
                );
            }
            _ => {
                let help = match &e.kind {
                    ExprKind::Compare { .. } | ExprKind::Call { .. } | ExprKind::BinOp { .. } => {
                        Some("did you mean '==' to compare?".to_string())
                    }
                    _ => None,
                };
                self.report(e.span, format!("cannot assign to {}", describe_expr(e)), help);
            }
        }
    }

    /// The targets of `del`: `a, b[0], c.d` (a trailing comma is allowed).
    fn del_targets(&mut self) -> Vec<Expr> {
        let mut out = Vec::new();
        if !self.can_start_expr() {
            self.expected("a name, index or attribute after 'del'", None);
            return out;
        }
        loop {
            let e = self.target_atom();
            if !self.panicking {
                self.check_del_target(&e);
            }
            out.push(e);
            if self.panicking || !self.eat(Tok::Comma) || !self.can_start_expr() {
                break;
            }
        }
        out
    }

    fn check_del_target(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Name(_) | ExprKind::Attribute { .. } | ExprKind::Index { .. } | ExprKind::Error => {}
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                for item in items {
                    self.check_del_target(item);
                }
            }
            _ => self.report(
                e.span,
                format!("cannot delete {}", describe_expr(e)),
                Some("'del' removes a name, an index or slice (xs[i], d[k]), or a tuple of them".to_string()),
            ),
        }
    }

    // ----- compound statements -----------------------------------------

    fn if_stmt(&mut self) -> Stmt {
        let start = self.bump().start;
        let test = self.named_test();
        let body = self.block("'if' statement", start);
        // `elif` clauses are read in a loop (a long chain must not recurse)
        // and nested into `orelse` afterwards.
        let mut chain: Vec<(u32, Expr, Vec<Stmt>)> = Vec::new();
        let mut orelse = Vec::new();
        while !self.panicking {
            match self.peek() {
                Tok::Elif => {
                    let too_many = chain.len() as u32 >= MAX_HEIGHT;
                    if too_many && chain.len() as u32 == MAX_HEIGHT {
                        let span = self.tok_span(self.tok());
                        self.report(
                            span,
                            format!("nested too deeply (more than {MAX_HEIGHT} 'elif' clauses in one 'if')"),
                            Some("use a dict of cases, or split the chain".to_string()),
                        );
                    }
                    let s = self.bump().start;
                    let t = self.named_test();
                    let b = self.block("'elif' clause", s);
                    if too_many {
                        // Parsed (for its errors) but not kept: the tree stays shallow.
                        if chain.len() as u32 == MAX_HEIGHT {
                            chain.push((
                                s,
                                Expr {
                                    kind: ExprKind::Error,
                                    span: t.span,
                                },
                                Vec::new(),
                            ));
                        }
                    } else {
                        chain.push((s, t, b));
                    }
                }
                Tok::Else => {
                    let s = self.bump().start;
                    if self.peek() == Tok::If {
                        let span = self.span(s, self.tok().end);
                        self.error(
                            span,
                            "expected ':' after 'else', found 'if'",
                            Some("write 'elif condition:' instead of 'else if'".to_string()),
                        );
                    }
                    orelse = self.block("'else' clause", s);
                    break;
                }
                _ => break,
            }
        }
        let end = self.prev_end();
        for (s, t, b) in chain.into_iter().rev() {
            orelse = vec![Stmt {
                kind: StmtKind::If {
                    test: t,
                    body: b,
                    orelse,
                },
                span: self.span(s, end),
            }];
        }
        Stmt {
            kind: StmtKind::If { test, body, orelse },
            span: self.since(start),
        }
    }

    /// A condition; reports `if x = 1:` nicely.
    fn named_test(&mut self) -> Expr {
        let e = self.test();
        if self.peek() == Tok::Assign && !self.panicking {
            let span = self.tok_span(self.tok());
            self.error(
                span,
                "expected ':' after the condition, found '='",
                Some("use '==' to compare values".to_string()),
            );
        }
        e
    }

    fn while_stmt(&mut self) -> Stmt {
        let start = self.bump().start;
        let test = self.named_test();
        let body = self.block("'while' statement", start);
        let orelse = self.loop_else(false);
        Stmt {
            kind: StmtKind::While { test, body, orelse },
            span: self.since(start),
        }
    }

    /// The `else:` block of a loop (empty when there is none). `parallel
    /// for` has no `else` (its iterations have no order and no `break`).
    fn loop_else(&mut self, parallel: bool) -> Vec<Stmt> {
        if self.peek() != Tok::Else || self.panicking {
            return Vec::new();
        }
        let t = self.bump();
        if parallel {
            let span = self.tok_span(t);
            self.report(
                span,
                "a 'parallel for' loop cannot have an 'else' clause",
                Some("put the code after the loop: a 'parallel for' cannot 'break'".to_string()),
            );
        }
        self.block("'else' clause", t.start)
    }

    fn for_stmt(&mut self, parallel: bool) -> Stmt {
        let start = self.tok().start;
        if parallel {
            self.bump();
        }
        self.bump();
        let target = self.target_list();
        if !self.panicking {
            self.check_target(&target, true);
        }
        let iter = if !self.panicking && self.expect(Tok::In, "after the loop variable of 'for'") {
            self.testlist_star()
        } else {
            Expr {
                kind: ExprKind::Error,
                span: self.tok_span(self.tok()),
            }
        };
        let what = if parallel {
            "'parallel for' statement"
        } else {
            "'for' statement"
        };
        let body = self.block(what, start);
        let orelse = self.loop_else(parallel);
        Stmt {
            kind: StmtKind::For {
                target,
                iter,
                body,
                parallel,
                orelse,
            },
            span: self.since(start),
        }
    }

    fn try_stmt(&mut self) -> Stmt {
        let start = self.bump().start;
        let body = self.block("'try' statement", start);
        let mut handlers: Vec<ExceptHandler> = Vec::new();
        let mut orelse = Vec::new();
        let mut finalbody = Vec::new();
        let mut bare_at: Option<Span> = None;
        while self.peek() == Tok::Except && !self.panicking {
            let t = self.bump();
            if let Some(b) = bare_at {
                self.report(
                    b,
                    "a bare 'except:' must be the last except clause",
                    Some("move it after the other except clauses".to_string()),
                );
                bare_at = None;
            }
            let (kind, name) = if self.peek() == Tok::Colon {
                bare_at = Some(self.tok_span(t));
                (None, None)
            } else {
                let k = self.test();
                let n = if !self.panicking && self.eat(Tok::As) {
                    self.expect_name("a name after 'as'")
                } else {
                    None
                };
                (Some(k), n)
            };
            let hbody = self.block("'except' clause", t.start);
            handlers.push(ExceptHandler {
                kind,
                name,
                body: hbody,
                span: self.since(t.start),
            });
        }
        if self.peek() == Tok::Else && !self.panicking {
            let t = self.bump();
            if handlers.is_empty() {
                let span = self.tok_span(t);
                self.report(span, "'else' after 'try' needs an 'except' clause before it", None);
            }
            orelse = self.block("'else' clause", t.start);
        }
        let has_finally = self.peek() == Tok::Finally && !self.panicking;
        if has_finally {
            let t = self.bump();
            finalbody = self.block("'finally' clause", t.start);
        }
        if handlers.is_empty() && !has_finally && !self.panicking {
            let span = self.tok_span(self.tok());
            let found = self.tok().describe(self.src);
            self.report(
                span,
                format!("expected 'except' or 'finally' after the 'try' block, found {found}"),
                Some("a 'try' needs at least one 'except' or a 'finally' clause at the same indentation".to_string()),
            );
        }
        Stmt {
            kind: StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            },
            span: self.since(start),
        }
    }

    fn with_stmt(&mut self) -> Stmt {
        let start = self.bump().start;
        let mut items = Vec::new();
        loop {
            let context = self.test();
            let target = if !self.panicking && self.eat(Tok::As) {
                let t = self.target_atom();
                if !self.panicking {
                    self.check_target(&t, true);
                }
                Some(t)
            } else {
                None
            };
            items.push(WithItem { context, target });
            if self.panicking || !self.eat(Tok::Comma) {
                break;
            }
        }
        let body = self.block("'with' statement", start);
        Stmt {
            kind: StmtKind::With { items, body },
            span: self.since(start),
        }
    }

    /// Decorators (if any) then a `def` or `struct`.
    fn decorated(&mut self) -> Stmt {
        let start = self.tok().start;
        let mut decorators = Vec::new();
        while self.peek() == Tok::At {
            self.bump();
            let d = self.test();
            decorators.push(d);
            if self.panicking {
                return Stmt {
                    kind: StmtKind::Error,
                    span: self.since(start),
                };
            }
            if !self.expect(Tok::Newline, "after a decorator") {
                return Stmt {
                    kind: StmtKind::Error,
                    span: self.since(start),
                };
            }
        }
        match self.peek() {
            Tok::Def => {
                let f = self.funcdef(decorators, start);
                let span = f.span;
                Stmt {
                    kind: StmtKind::FuncDef(Box::new(f)),
                    span,
                }
            }
            Tok::Struct => self.structdef(decorators, start),
            _ => {
                self.expected("'def' or 'struct' after a decorator", None);
                Stmt {
                    kind: StmtKind::Error,
                    span: self.since(start),
                }
            }
        }
    }

    fn funcdef(&mut self, decorators: Vec<Expr>, start: u32) -> FuncDef {
        let def_tok = self.bump();
        let name = self
            .expect_name("a function name after 'def'")
            .unwrap_or_else(|| Ident {
                name: String::new(),
                span: self.tok_span(def_tok),
            });
        let mut params = Params::default();
        let mut returns = None;
        if !self.panicking && self.expect(Tok::LParen, "after the function name") {
            params = self.params(Tok::RParen);
            if !self.panicking {
                self.expect(Tok::RParen, "to close the parameter list");
            }
            if !self.panicking && self.eat(Tok::Arrow) {
                returns = Some(self.test());
            }
        }
        let body = self.block("function definition", def_tok.start);
        FuncDef {
            name,
            params,
            returns,
            body,
            decorators,
            span: self.since(start),
        }
    }

    /// A parameter list up to (not including) `end`: `)` for `def`
    /// (annotations allowed), `:` for `lambda`.
    pub(super) fn params(&mut self, end: Tok) -> Params {
        let annotations = end == Tok::RParen;
        let mut ps = Params::default();
        let mut seen_star: Option<Span> = None;
        let mut seen_default = false;
        let mut names: Vec<String> = Vec::new();
        while self.peek() != end && !self.panicking {
            let t = self.tok();
            match t.kind {
                Tok::Star => {
                    self.bump();
                    if seen_star.is_some() {
                        let span = self.tok_span(t);
                        self.report(span, "only one '*' may appear in a parameter list", None);
                    }
                    seen_star = Some(self.tok_span(t));
                    if self.peek() == Tok::Name {
                        if let Some(p) = self.param(annotations, false, &mut names) {
                            ps.vararg = Some(p);
                        }
                    }
                }
                Tok::DoubleStar => {
                    self.bump();
                    if let Some(p) = self.param(annotations, false, &mut names) {
                        ps.kwarg = Some(p);
                    }
                    self.eat(Tok::Comma);
                    if self.peek() != end && !self.panicking {
                        let span = self.tok_span(self.tok());
                        self.error(
                            span,
                            "no parameter may follow '**' parameters",
                            Some("put '**kwargs' last".to_string()),
                        );
                    }
                    break;
                }
                Tok::Name => {
                    if let Some(p) = self.param(annotations, true, &mut names) {
                        if seen_star.is_some() {
                            ps.kwonly.push(p);
                        } else {
                            if p.default.is_some() {
                                seen_default = true;
                            } else if seen_default {
                                self.report(
                                    p.span,
                                    format!(
                                        "parameter '{}' without a default follows a parameter with a default",
                                        p.name.name
                                    ),
                                    Some(
                                        "give it a default value, or move it before the parameters that have defaults"
                                            .to_string(),
                                    ),
                                );
                            }
                            ps.params.push(p);
                        }
                    }
                }
                _ => {
                    let help = if t.kind.is_keyword() {
                        Some(format!(
                            "'{}' is a keyword and cannot be a parameter name",
                            self.text(t)
                        ))
                    } else {
                        None
                    };
                    self.expected("a parameter name", help);
                    break;
                }
            }
            if !self.eat(Tok::Comma) {
                break;
            }
        }
        if let Some(star) = seen_star {
            if ps.vararg.is_none() && ps.kwonly.is_empty() && !self.panicking {
                self.report(
                    star,
                    "a bare '*' must be followed by keyword-only parameters",
                    Some("remove the '*', or add parameters after it".to_string()),
                );
            }
        }
        ps
    }

    fn param(&mut self, annotations: bool, defaults: bool, names: &mut Vec<String>) -> Option<Param> {
        let name = self.expect_name("a parameter name")?;
        if names.contains(&name.name) {
            self.report(name.span, format!("duplicate parameter '{}'", name.name), None);
        } else {
            names.push(name.name.clone());
        }
        let start = name.span.start;
        let annotation = if annotations && self.eat(Tok::Colon) {
            Some(self.test())
        } else {
            None
        };
        let default = if self.peek() == Tok::Assign {
            let t = self.bump();
            if !defaults {
                let span = self.tok_span(t);
                self.report(span, format!("'*{}' parameters cannot have a default", name.name), None);
            }
            Some(self.test())
        } else {
            None
        };
        Some(Param {
            name,
            annotation,
            default,
            span: self.since(start),
        })
    }

    fn structdef(&mut self, decorators: Vec<Expr>, start: u32) -> Stmt {
        let kw = self.bump();
        let Some(name) = self.expect_name("a struct name after 'struct'") else {
            return Stmt {
                kind: StmtKind::Error,
                span: self.since(start),
            };
        };
        let base = if self.eat(Tok::LParen) {
            let b = self.test();
            if self.peek() == Tok::Comma {
                let span = self.tok_span(self.tok());
                self.report(
                    span,
                    "a struct has at most one parent",
                    Some("Apsi structs use single inheritance: 'struct Child(Parent):'".to_string()),
                );
                while !matches!(self.peek(), Tok::RParen | Tok::Newline | Tok::Eof) {
                    self.bump();
                }
            }
            self.expect(Tok::RParen, "')' after the struct's parent");
            Some(b)
        } else {
            None
        };
        let body = self.block("struct definition", kw.start);
        let mut fields: Vec<Field> = Vec::new();
        let mut consts: Vec<StructConst> = Vec::new();
        let mut methods = Vec::new();
        for s in body {
            match s.kind {
                StmtKind::AnnAssign { target: Expr { kind: ExprKind::Name(n), span }, annotation, value } => {
                    if consts.iter().any(|c| c.name.name == n) {
                        self.report(span, format!("duplicate field '{n}' in struct"), Some(format!("'{n}' is already a constant of this struct")));
                        continue;
                    }
                    self.add_field(&mut fields, Field { name: Ident { name: n, span }, annotation: Some(annotation), default: value, span: s.span });
                }
                StmtKind::Assign { mut targets, value } if targets.len() == 1 && matches!(targets[0].kind, ExprKind::Name(_)) => {
                    let t = targets.remove(0);
                    if let ExprKind::Name(n) = t.kind {
                        if consts.iter().any(|c| c.name.name == n) || fields.iter().any(|f| f.name.name == n) {
                            self.report(t.span, format!("duplicate name '{n}' in struct"), None);
                        } else {
                            consts.push(StructConst { name: Ident { name: n, span: t.span }, value, span: s.span });
                        }
                    }
                }
                StmtKind::FuncDef(f) => methods.push(*f),
                StmtKind::Pass | StmtKind::Error => {}
                StmtKind::Expr(Expr { kind: ExprKind::Str(_), .. }) => {}
                _ => self.report(
                    s.span,
                    "a struct body may hold only fields and methods",
                    Some("write fields as 'name: type' or 'name: type = default', constants as 'NAME = value', and methods with 'def'".to_string()),
                ),
            }
        }
        let def = StructDef {
            name,
            base,
            fields,
            consts,
            methods,
            decorators,
            span: self.since(start),
        };
        let span = def.span;
        Stmt {
            kind: StmtKind::StructDef(Box::new(def)),
            span,
        }
    }

    fn add_field(&mut self, fields: &mut Vec<Field>, f: Field) {
        if fields.iter().any(|g| g.name.name == f.name.name) {
            self.report(
                f.name.span,
                format!("duplicate field '{}' in struct", f.name.name),
                None,
            );
        } else {
            fields.push(f);
        }
    }
}

/// A phrase naming what an expression is, for "cannot assign to …".
pub(super) fn describe_expr(e: &Expr) -> &'static str {
    match &e.kind {
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Bytes(_)
        | ExprKind::Bool(_)
        | ExprKind::None => "a literal",
        ExprKind::FString(_) => "an f-string",
        ExprKind::Call { .. } => "a function call",
        ExprKind::Compare { .. } => "a comparison",
        ExprKind::BoolOp { .. } => "a boolean expression",
        ExprKind::Lambda { .. } => "a lambda",
        ExprKind::IfExp { .. } => "a conditional expression",
        ExprKind::ListComp { .. } | ExprKind::DictComp { .. } | ExprKind::SetComp { .. } => "a comprehension",
        ExprKind::GenExp { .. } => "a generator expression",
        ExprKind::Yield(_) | ExprKind::YieldFrom(_) => "a yield expression",
        ExprKind::Dict(_) => "a dict display",
        ExprKind::Set(_) => "a set display",
        ExprKind::Range { .. } => "a range",
        ExprKind::Tuple(_) => "a tuple",
        ExprKind::List(_) => "a list",
        ExprKind::Starred(_) => "a starred expression",
        ExprKind::Slice { .. } => "a slice",
        _ => "an expression",
    }
}
