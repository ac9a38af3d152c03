//! f-strings: literal text, `{{`/`}}`, and replacement fields
//! `{expr}`, `{expr!r}`, `{expr:spec}` (the spec may hold fields itself) and
//! the debug form `{expr=}`. Field expressions are lexed and parsed by the
//! ordinary lexer and expression parser, with absolute spans.

use super::ast::*;
use super::expr::push_literal;
use super::lexer;
use super::parser::Parser;
use super::token::Tok;

impl<'a> Parser<'a> {
    /// Parses the body `src[start..end]` of one f-string literal into `out`.
    pub(super) fn fstring_body(&mut self, start: usize, end: usize, raw: bool, out: &mut Vec<FStringPart>) {
        let end = end.min(self.src.len());
        self.fstring_parts(start, end, raw, false, out);
    }

    /// Literal text and fields from `i` up to `end`; in a format spec
    /// (`in_spec`) it stops at the first single `}`. Returns where it stopped.
    fn fstring_parts(
        &mut self,
        mut i: usize,
        end: usize,
        raw: bool,
        in_spec: bool,
        out: &mut Vec<FStringPart>,
    ) -> usize {
        let b = self.src.as_bytes();
        let mut run = i;
        let mut lit = String::new();
        while i < end {
            match b[i] {
                b'{' if i + 1 < end && b[i + 1] == b'{' && !in_spec => {
                    self.unescape_into(run, i, raw, &mut lit);
                    lit.push('{');
                    i += 2;
                    run = i;
                }
                b'}' if i + 1 < end && b[i + 1] == b'}' && !in_spec => {
                    self.unescape_into(run, i, raw, &mut lit);
                    lit.push('}');
                    i += 2;
                    run = i;
                }
                b'{' => {
                    self.unescape_into(run, i, raw, &mut lit);
                    push_literal(out, std::mem::take(&mut lit));
                    i = self.field(i, end, raw, out);
                    run = i;
                }
                b'}' => {
                    if in_spec {
                        break;
                    }
                    self.unescape_into(run, i, raw, &mut lit);
                    let span = self.span(i as u32, i as u32 + 1);
                    self.report(
                        span,
                        "single '}' is not allowed in an f-string",
                        Some("write '}}' for a literal brace".to_string()),
                    );
                    i += 1;
                    run = i;
                }
                b'\\' if !raw => i = (i + 2).min(end),
                _ => i += 1,
            }
        }
        self.unescape_into(run, i.min(end), raw, &mut lit);
        push_literal(out, lit);
        i
    }

    /// A replacement field starting at the `{` at `open`; returns the offset
    /// after its closing `}`.
    fn field(&mut self, open: usize, end: usize, raw: bool, out: &mut Vec<FStringPart>) -> usize {
        // Fields nest through format specs (`{x:{w}}`): bound the recursion.
        if !self.enter() {
            self.leave();
            return end;
        }
        let next = self.field_inner(open, end, raw, out);
        self.leave();
        next
    }

    fn field_inner(&mut self, open: usize, end: usize, raw: bool, out: &mut Vec<FStringPart>) -> usize {
        let b = self.src.as_bytes();
        let expr_start = open + 1;
        let mut j = expr_start;
        let mut depth = 0u32;
        let mut debug_end: Option<usize> = None;
        // Find where the expression ends: a top-level `}`, `!`, `:` or debug `=`.
        while j < end {
            let c = b[j];
            match c {
                b'\'' | b'"' => {
                    j += 1;
                    while j < end && b[j] != c {
                        if b[j] == b'\\' {
                            j += 1;
                        }
                        j += 1;
                    }
                    j += 1;
                    continue;
                }
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' => depth = depth.saturating_sub(1),
                b'}' => {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                }
                b'!' | b'=' | b'<' | b'>' if j + 1 < end && b[j + 1] == b'=' => {
                    j += 2;
                    continue;
                }
                b'!' | b':' if depth == 0 => break,
                b'=' if depth == 0 => {
                    let mut k = j + 1;
                    while k < end && b[k] == b' ' {
                        k += 1;
                    }
                    if k < end && matches!(b[k], b'}' | b'!' | b':') {
                        debug_end = Some(k);
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        let j = j.min(end);
        let expr_end = j;
        let open_span = self.span(open as u32, open as u32 + 1);
        if self.src.get(expr_start..expr_end).is_none_or(|s| s.trim().is_empty()) {
            let span = self.span(open as u32, (expr_end + 1).min(end) as u32);
            self.report(
                span,
                "empty expression in an f-string field",
                Some("put an expression between the braces, or write '{{' for a literal brace".to_string()),
            );
            // Skip to the closing brace, if any.
            let mut k = j;
            while k < end && b[k] != b'}' {
                k += 1;
            }
            return (k + 1).min(end);
        }
        let expr = self.sub_expr(expr_start, expr_end);
        let mut k = j;
        let mut debug_text = None;
        if let Some(d) = debug_end {
            debug_text = self.src.get(expr_start..d).map(str::to_string);
            k = d;
        }
        let mut conversion = None;
        if k < end && b[k] == b'!' {
            let c = b.get(k + 1).copied().filter(|_| k + 1 < end);
            match c {
                Some(c @ (b'r' | b's' | b'a')) => {
                    conversion = Some(c as char);
                    k += 2;
                }
                _ => {
                    let span = self.span(k as u32, (k + 2).min(end) as u32);
                    self.report(
                        span,
                        "invalid conversion in an f-string field: expected '!r', '!s' or '!a'",
                        None,
                    );
                    k += 1;
                    if k < end && b[k] != b'}' && b[k] != b':' {
                        k += 1;
                    }
                }
            }
        }
        let mut spec = Vec::new();
        if k < end && b[k] == b':' {
            k = self.fstring_parts(k + 1, end, raw, true, &mut spec);
        }
        if k < end && b[k] == b'}' {
            k += 1;
        } else {
            self.report(
                open_span,
                "f-string field is not closed: expected '}'",
                Some("close the replacement field with '}' (write '{{' for a literal brace)".to_string()),
            );
            k = end;
        }
        if debug_text.is_some() && conversion.is_none() && spec.is_empty() {
            // Python: `{x=}` shows the repr unless a format spec is given.
            conversion = Some('r');
        }
        out.push(FStringPart::Expr {
            expr,
            conversion,
            spec,
            debug_text,
        });
        k
    }

    /// Parses `src[start..end]` as one expression (a tuple if commas).
    fn sub_expr(&mut self, start: usize, end: usize) -> Expr {
        let lexed = lexer::lex_nested(self.file, self.src, start, end);
        let mut sub = Parser::new(self.file, self.src, lexed);
        sub.depth = self.depth;
        sub.too_deep = self.too_deep;
        let e = if !sub.enter() {
            Expr {
                kind: ExprKind::Error,
                span: sub.span(start as u32, end as u32),
            }
        } else {
            let e = sub.testlist_star();
            if !sub.panicking && sub.peek() != Tok::Eof {
                let help = if sub.peek() == Tok::Assign {
                    Some(
                        "use '==' to compare; '=' right before '}' shows the expression's text (debug form)"
                            .to_string(),
                    )
                } else {
                    None
                };
                sub.expected("'}' after the f-string expression", help);
            }
            e
        };
        self.too_deep |= sub.too_deep;
        let diags = std::mem::take(&mut sub.diags);
        for mut d in diags {
            if let Some(m) = d.message.strip_suffix("found end of file") {
                d.message = format!("{m}found the end of the f-string field");
            }
            if !self.panicking {
                self.diags.push(d);
            }
        }
        e
    }
}
