//! Expression parsing: precedence climbing over the levels of LANGUAGE.md §4
//! (lowest first): lambda; `a if c else b`; or; and; not; comparisons; `|>`;
//! `..`; `|`; `^`; `&`; `<< >>`; `+ -`; `* / // % @`; unary `- + ~`; `**`;
//! then calls, indexing and attributes.

use super::ast::*;
use super::literal;
use super::parser::{Parser, MAX_HEIGHT};
use super::token::Tok;
use crate::diagnostic::Span;

// Binding powers, higher binds tighter.
const BP_OR: u8 = 1;
const BP_AND: u8 = 2;
const BP_NOT: u8 = 3;
const BP_CMP: u8 = 4;
const BP_PIPE: u8 = 5;
const BP_RANGE: u8 = 6;
const BP_BITOR: u8 = 7;
const BP_XOR: u8 = 8;
const BP_BITAND: u8 = 9;
const BP_SHIFT: u8 = 10;
const BP_ADD: u8 = 11;
const BP_MUL: u8 = 12;
const BP_UNARY: u8 = 13;
const BP_POW: u8 = 14;

/// A parsed comprehension as a generator expression (`(x for x in xs)`).
fn into_genexp(e: Expr) -> Expr {
    match e.kind {
        ExprKind::ListComp { elt, generators } => Expr {
            kind: ExprKind::GenExp { elt, generators },
            span: e.span,
        },
        kind => Expr { kind, span: e.span },
    }
}

fn err_expr(span: Span) -> Expr {
    Expr {
        kind: ExprKind::Error,
        span,
    }
}

fn binop_of(k: Tok) -> Option<(BinOp, u8)> {
    Some(match k {
        Tok::Pipe => (BinOp::BitOr, BP_BITOR),
        Tok::Caret => (BinOp::BitXor, BP_XOR),
        Tok::Amp => (BinOp::BitAnd, BP_BITAND),
        Tok::Shl => (BinOp::Shl, BP_SHIFT),
        Tok::Shr => (BinOp::Shr, BP_SHIFT),
        Tok::Plus => (BinOp::Add, BP_ADD),
        Tok::Minus => (BinOp::Sub, BP_ADD),
        Tok::Star => (BinOp::Mul, BP_MUL),
        Tok::Slash => (BinOp::Div, BP_MUL),
        Tok::DoubleSlash => (BinOp::FloorDiv, BP_MUL),
        Tok::Percent => (BinOp::Mod, BP_MUL),
        Tok::At => (BinOp::MatMul, BP_MUL),
        Tok::DoubleStar => (BinOp::Pow, BP_POW),
        _ => return None,
    })
}

impl<'a> Parser<'a> {
    /// Whether the current token can begin an expression.
    pub(super) fn can_start_expr(&self) -> bool {
        matches!(
            self.peek(),
            Tok::Name
                | Tok::Int
                | Tok::Float
                | Tok::Str
                | Tok::FStr
                | Tok::Bytes
                | Tok::Bad
                | Tok::True
                | Tok::False
                | Tok::None
                | Tok::LParen
                | Tok::LBracket
                | Tok::LBrace
                | Tok::Minus
                | Tok::Plus
                | Tok::Tilde
                | Tok::Not
                | Tok::Lambda
                | Tok::Star
                | Tok::Yield
        )
    }

    /// A full expression (Python's `test`): lambda, conditional, or lower.
    pub(super) fn test(&mut self) -> Expr {
        if self.peek() == Tok::Lambda {
            return self.lambda();
        }
        if self.peek() == Tok::Yield {
            return self.yield_expr();
        }
        let start = self.tok().start;
        let body = self.bp(BP_OR);
        if self.peek() != Tok::If || self.panicking {
            return body;
        }
        self.bump();
        let test = self.bp(BP_OR);
        if !self.expect(Tok::Else, "in the conditional expression 'a if condition else b'") {
            return err_expr(self.since(start));
        }
        if !self.enter() {
            self.leave();
            return err_expr(self.since(start));
        }
        let orelse = self.test();
        self.leave();
        Expr {
            kind: ExprKind::IfExp {
                test: Box::new(test),
                body: Box::new(body),
                orelse: Box::new(orelse),
            },
            span: self.since(start),
        }
    }

    /// `yield`, `yield value(s)` or `yield from iterable` (`from` is a
    /// keyword only here).
    fn yield_expr(&mut self) -> Expr {
        let start = self.bump().start;
        if self.peek() == Tok::Name && self.text(self.tok()) == "from" {
            self.bump();
            if !self.enter() {
                self.leave();
                return err_expr(self.since(start));
            }
            let v = self.test();
            self.leave();
            return Expr {
                kind: ExprKind::YieldFrom(Box::new(v)),
                span: self.since(start),
            };
        }
        if !self.can_start_expr() {
            return Expr {
                kind: ExprKind::Yield(None),
                span: self.since(start),
            };
        }
        if !self.enter() {
            self.leave();
            return err_expr(self.since(start));
        }
        let v = self.testlist_star();
        self.leave();
        Expr {
            kind: ExprKind::Yield(Some(Box::new(v))),
            span: self.since(start),
        }
    }

    fn lambda(&mut self) -> Expr {
        let start = self.bump().start;
        let params = self.params(Tok::Colon);
        if self.panicking || !self.expect(Tok::Colon, "after the lambda's parameters") {
            return err_expr(self.since(start));
        }
        if !self.enter() {
            self.leave();
            return err_expr(self.since(start));
        }
        let body = self.test();
        self.leave();
        Expr {
            kind: ExprKind::Lambda {
                params: Box::new(params),
                body: Box::new(body),
            },
            span: self.since(start),
        }
    }

    /// `*expr` or a full expression.
    pub(super) fn star_or_test(&mut self) -> Expr {
        if self.peek() == Tok::Star {
            let start = self.bump().start;
            let inner = self.bp(BP_PIPE);
            return Expr {
                kind: ExprKind::Starred(Box::new(inner)),
                span: self.since(start),
            };
        }
        self.test()
    }

    /// Comma-separated expressions (starred allowed): a Tuple when there is
    /// a comma, otherwise the single expression.
    pub(super) fn testlist_star(&mut self) -> Expr {
        let start = self.tok().start;
        let first = self.star_or_test();
        if self.peek() != Tok::Comma || self.panicking {
            return first;
        }
        let mut items = vec![first];
        while self.eat(Tok::Comma) {
            if !self.can_start_expr() {
                break;
            }
            items.push(self.star_or_test());
            if self.panicking {
                break;
            }
        }
        Expr {
            kind: ExprKind::Tuple(items),
            span: self.since(start),
        }
    }

    /// Targets of `for` (and comprehensions): expressions above the
    /// comparison level (so `in` ends them), comma-separated.
    pub(super) fn target_list(&mut self) -> Expr {
        let start = self.tok().start;
        let first = self.target_atom();
        if self.peek() != Tok::Comma || self.panicking {
            return first;
        }
        let mut items = vec![first];
        while self.eat(Tok::Comma) {
            if self.peek() == Tok::In || !self.can_start_expr() {
                break;
            }
            items.push(self.target_atom());
            if self.panicking {
                break;
            }
        }
        Expr {
            kind: ExprKind::Tuple(items),
            span: self.since(start),
        }
    }

    pub(super) fn target_atom(&mut self) -> Expr {
        if self.peek() == Tok::Star {
            let start = self.bump().start;
            let inner = self.bp(BP_PIPE);
            return Expr {
                kind: ExprKind::Starred(Box::new(inner)),
                span: self.since(start),
            };
        }
        self.bp(BP_PIPE)
    }

    /// Precedence climbing from `or` up to `**`.
    ///
    /// Tree height is tracked through `self.hw` (the greatest height of the
    /// expressions finished since it was last reset): every call of `bp`
    /// leaves max(previous, height of its result) there, so left-nested
    /// chains (`a + b + …`, `f()()…`, `a.b.c…`) cannot build a tree deeper
    /// than [`MAX_HEIGHT`] — later passes recurse over the tree.
    fn bp(&mut self, min: u8) -> Expr {
        if !self.enter() {
            self.leave();
            let span = self.tok_span(self.tok());
            return err_expr(span);
        }
        let saved = std::mem::replace(&mut self.hw, 0);
        let (e, h) = self.bp_inner(min);
        self.hw = saved.max(h);
        self.leave();
        e
    }

    /// The height of a node whose children were just parsed: one more than
    /// the tallest of `h` and what `self.hw` recorded. Reports "nested too
    /// deeply" past [`MAX_HEIGHT`].
    fn grow(&mut self, h: u32) -> u32 {
        let h = h.max(std::mem::take(&mut self.hw)).saturating_add(1);
        if h > MAX_HEIGHT && !self.panicking {
            let span = self.tok_span(self.tok());
            self.error(
                span,
                format!("nested too deeply (an expression more than {MAX_HEIGHT} operations deep)"),
                Some("split the expression into several statements with intermediate variables".to_string()),
            );
        }
        h
    }

    fn bp_inner(&mut self, min: u8) -> (Expr, u32) {
        let t = self.tok();
        let start = t.start;
        let mut h = 0u32;
        let mut lhs = match t.kind {
            Tok::Not => {
                self.bump();
                let operand = self.bp(BP_NOT);
                Expr {
                    kind: ExprKind::UnaryOp {
                        op: UnaryOp::Not,
                        operand: Box::new(operand),
                    },
                    span: self.since(start),
                }
            }
            Tok::Minus | Tok::Plus | Tok::Tilde => {
                self.bump();
                if t.kind == Tok::Minus {
                    if let Some(e) = self.fold_min_int(start) {
                        e
                    } else {
                        let operand = self.bp(BP_UNARY);
                        Expr {
                            kind: ExprKind::UnaryOp {
                                op: UnaryOp::Neg,
                                operand: Box::new(operand),
                            },
                            span: self.since(start),
                        }
                    }
                } else {
                    let op = if t.kind == Tok::Plus {
                        UnaryOp::Pos
                    } else {
                        UnaryOp::Invert
                    };
                    let operand = self.bp(BP_UNARY);
                    Expr {
                        kind: ExprKind::UnaryOp {
                            op,
                            operand: Box::new(operand),
                        },
                        span: self.since(start),
                    }
                }
            }
            _ => {
                let a = self.atom();
                h = self.grow(0);
                self.postfix(a, &mut h)
            }
        };
        if h == 0 {
            // A prefix operator: one above its operand.
            h = self.grow(0);
        }
        loop {
            if self.panicking {
                break;
            }
            let k = self.peek();
            match k {
                Tok::Or | Tok::And => {
                    let (op, bp) = if k == Tok::Or {
                        (BoolOp::Or, BP_OR)
                    } else {
                        (BoolOp::And, BP_AND)
                    };
                    if bp < min {
                        break;
                    }
                    self.bump();
                    let right = self.bp(bp + 1);
                    lhs = Expr {
                        kind: ExprKind::BoolOp {
                            op,
                            left: Box::new(lhs),
                            right: Box::new(right),
                        },
                        span: self.since(start),
                    };
                    h = self.grow(h);
                }
                Tok::Eq | Tok::NotEq | Tok::Lt | Tok::LtE | Tok::Gt | Tok::GtE | Tok::In | Tok::Is | Tok::Not => {
                    if BP_CMP < min || (k == Tok::Not && self.peek_at(1) != Tok::In) {
                        break;
                    }
                    let mut ops = Vec::new();
                    while let Some(op) = self.cmp_op() {
                        let right = self.bp(BP_CMP + 1);
                        ops.push((op, right));
                        if self.panicking {
                            break;
                        }
                    }
                    lhs = Expr {
                        kind: ExprKind::Compare {
                            left: Box::new(lhs),
                            ops,
                        },
                        span: self.since(start),
                    };
                    h = self.grow(h);
                }
                Tok::PipeGt => {
                    if BP_PIPE < min {
                        break;
                    }
                    self.bump();
                    let rhs = self.bp(BP_PIPE + 1);
                    lhs = self.pipe(lhs, rhs, start);
                    h = self.grow(h);
                }
                Tok::DotDot => {
                    if BP_RANGE < min {
                        break;
                    }
                    self.bump();
                    let end = self.bp(BP_RANGE + 1);
                    lhs = Expr {
                        kind: ExprKind::Range {
                            start: Box::new(lhs),
                            end: Box::new(end),
                        },
                        span: self.since(start),
                    };
                    h = self.grow(h);
                }
                _ => {
                    let Some((op, bp)) = binop_of(k) else { break };
                    if bp < min {
                        break;
                    }
                    self.bump();
                    // `**` is right-associative and its right operand may be unary.
                    let right = if op == BinOp::Pow {
                        self.bp(BP_UNARY)
                    } else {
                        self.bp(bp + 1)
                    };
                    lhs = Expr {
                        kind: ExprKind::BinOp {
                            op,
                            left: Box::new(lhs),
                            right: Box::new(right),
                        },
                        span: self.since(start),
                    };
                    h = self.grow(h);
                }
            }
        }
        (lhs, h)
    }

    /// `-9223372036854775808` is the literal i64::MIN (the positive literal
    /// alone does not fit).
    fn fold_min_int(&mut self, start: u32) -> Option<Expr> {
        let t = self.tok();
        if t.kind != Tok::Int
            || matches!(
                self.peek_at(1),
                Tok::DoubleStar | Tok::LParen | Tok::LBracket | Tok::Dot
            )
        {
            return None;
        }
        if literal::int_value(self.text(t)) != Some(1u64 << 63) {
            return None;
        }
        self.bump();
        Some(Expr {
            kind: ExprKind::Int(i64::MIN),
            span: self.since(start),
        })
    }

    /// Consumes a comparison operator if one is next.
    fn cmp_op(&mut self) -> Option<CmpOp> {
        let op = match self.peek() {
            Tok::Eq => CmpOp::Eq,
            Tok::NotEq => CmpOp::NotEq,
            Tok::Lt => CmpOp::Lt,
            Tok::LtE => CmpOp::LtE,
            Tok::Gt => CmpOp::Gt,
            Tok::GtE => CmpOp::GtE,
            Tok::In => CmpOp::In,
            Tok::Not if self.peek_at(1) == Tok::In => {
                self.bump();
                CmpOp::NotIn
            }
            Tok::Is => {
                if self.peek_at(1) == Tok::Not {
                    self.bump();
                    CmpOp::IsNot
                } else {
                    CmpOp::Is
                }
            }
            _ => return None,
        };
        self.bump();
        Some(op)
    }

    /// `x |> f(a)` → `f(x, a)`; `x |> f` → `f(x)`.
    fn pipe(&mut self, lhs: Expr, rhs: Expr, start: u32) -> Expr {
        let span = self.since(start);
        match rhs.kind {
            ExprKind::Call { func, mut args } => {
                args.insert(0, Arg::Positional(lhs));
                Expr {
                    kind: ExprKind::Call { func, args },
                    span,
                }
            }
            ExprKind::Error => Expr {
                kind: ExprKind::Error,
                span,
            },
            _ => Expr {
                kind: ExprKind::Call {
                    func: Box::new(rhs),
                    args: vec![Arg::Positional(lhs)],
                },
                span,
            },
        }
    }

    /// Calls, indexing and attribute access after an atom.
    fn postfix(&mut self, mut e: Expr, h: &mut u32) -> Expr {
        let start = e.span.start;
        loop {
            if self.panicking {
                break;
            }
            match self.peek() {
                Tok::LParen => {
                    self.bump();
                    let args = self.call_args();
                    e = Expr {
                        kind: ExprKind::Call {
                            func: Box::new(e),
                            args,
                        },
                        span: self.since(start),
                    };
                    *h = self.grow(*h);
                }
                Tok::LBracket => {
                    self.bump();
                    let index = self.subscript();
                    e = Expr {
                        kind: ExprKind::Index {
                            value: Box::new(e),
                            index: Box::new(index),
                        },
                        span: self.since(start),
                    };
                    *h = self.grow(*h);
                }
                Tok::Dot => {
                    self.bump();
                    match self.expect_name("an attribute name after '.'") {
                        Some(attr) => {
                            e = Expr {
                                kind: ExprKind::Attribute {
                                    value: Box::new(e),
                                    attr,
                                },
                                span: self.since(start),
                            };
                            *h = self.grow(*h);
                        }
                        None => return err_expr(self.since(start)),
                    }
                }
                _ => break,
            }
        }
        e
    }

    /// Arguments after `(`, up to and including `)`.
    fn call_args(&mut self) -> Vec<Arg> {
        let mut args = Vec::new();
        let mut seen_keyword = false;
        let mut seen_double_star = false;
        while self.peek() != Tok::RParen && !self.panicking {
            let t = self.tok();
            match t.kind {
                Tok::Star => {
                    self.bump();
                    let e = self.test();
                    if seen_double_star {
                        self.report(
                            self.since(t.start),
                            "'*' unpacking cannot follow '**' unpacking in a call",
                            None,
                        );
                    }
                    args.push(Arg::Star(e));
                }
                Tok::DoubleStar => {
                    self.bump();
                    seen_double_star = true;
                    args.push(Arg::DoubleStar(self.test()));
                }
                Tok::Name if self.peek_at(1) == Tok::Assign => {
                    let name = self.expect_name("an argument name").unwrap_or(Ident {
                        name: String::new(),
                        span: self.tok_span(t),
                    });
                    self.bump();
                    if args
                        .iter()
                        .any(|a| matches!(a, Arg::Keyword(n, _) if n.name == name.name))
                    {
                        self.report(name.span, format!("keyword argument '{}' given twice", name.name), None);
                    }
                    seen_keyword = true;
                    let v = self.test();
                    args.push(Arg::Keyword(name, v));
                }
                _ => {
                    let e = self.test();
                    if self.peek() == Tok::For && !self.panicking {
                        let comp = into_genexp(self.comprehension_of(e));
                        if !args.is_empty() || self.peek() != Tok::RParen {
                            self.report(
                                comp.span,
                                "a generator expression must be the only argument unless it is in parentheses",
                                Some("write f((x for x in xs), …)".to_string()),
                            );
                        }
                        args.push(Arg::Positional(comp));
                    } else {
                        if self.peek() == Tok::Assign && !self.panicking {
                            let span = self.tok_span(self.tok());
                            self.error(
                                span,
                                "expected an argument name before '='",
                                Some("a keyword argument is 'name=value'; use '==' to compare".to_string()),
                            );
                            break;
                        }
                        if (seen_keyword || seen_double_star) && !self.panicking {
                            let msg = if seen_double_star {
                                "a positional argument cannot follow '**' unpacking"
                            } else {
                                "a positional argument cannot follow a keyword argument"
                            };
                            self.report(
                                e.span,
                                msg,
                                Some("put positional arguments before keyword arguments".to_string()),
                            );
                        }
                        args.push(Arg::Positional(e));
                    }
                }
            }
            if self.panicking || !self.eat(Tok::Comma) {
                break;
            }
        }
        if !self.panicking && !self.eat(Tok::RParen) {
            self.expected("',' or ')' in the argument list", None);
        }
        args
    }

    /// The inside of `[…]` after a value, up to and including `]`.
    fn subscript(&mut self) -> Expr {
        let start = self.prev_end().saturating_sub(1);
        let mut items = Vec::new();
        let mut comma = false;
        while self.peek() != Tok::RBracket && !self.panicking {
            items.push(self.slice_or_test());
            if self.panicking || !self.eat(Tok::Comma) {
                break;
            }
            comma = true;
        }
        if !self.panicking && !self.eat(Tok::RBracket) {
            self.expected("',' or ']' in the index", None);
        }
        if items.is_empty() {
            if !self.panicking {
                let span = self.since(start);
                self.error(
                    span,
                    "expected an index inside '[]'",
                    Some("write x[i], x[a:b] or x[i, j]".to_string()),
                );
            }
            return err_expr(self.since(start));
        }
        if items.len() == 1 && !comma {
            return items.pop().unwrap_or_else(|| err_expr(self.since(start)));
        }
        Expr {
            kind: ExprKind::Tuple(items),
            span: self.since(start),
        }
    }

    fn slice_or_test(&mut self) -> Expr {
        let start = self.tok().start;
        let lower = if self.peek() == Tok::Colon {
            None
        } else {
            Some(Box::new(self.test()))
        };
        if self.peek() != Tok::Colon || self.panicking {
            return match lower {
                Some(e) => *e,
                None => err_expr(self.since(start)),
            };
        }
        self.bump();
        let ends = |k: Tok| matches!(k, Tok::Colon | Tok::Comma | Tok::RBracket);
        let upper = if ends(self.peek()) {
            None
        } else {
            Some(Box::new(self.test()))
        };
        let mut step = None;
        if self.peek() == Tok::Colon && !self.panicking {
            self.bump();
            if !matches!(self.peek(), Tok::Comma | Tok::RBracket) {
                step = Some(Box::new(self.test()));
            }
        }
        Expr {
            kind: ExprKind::Slice { lower, upper, step },
            span: self.since(start),
        }
    }

    fn atom(&mut self) -> Expr {
        let t = self.tok();
        let span = self.tok_span(t);
        let kind = match t.kind {
            Tok::Name => {
                self.bump();
                ExprKind::Name(self.text(t).to_string())
            }
            Tok::Int => {
                self.bump();
                let v = literal::int_value(self.text(t));
                match v.and_then(|v| i64::try_from(v).ok()) {
                    Some(v) => ExprKind::Int(v),
                    None => {
                        // Below 2^64 it is a 64-bit pattern (a hash constant):
                        // say how to write it for the wrapping operations.
                        let hint = match v {
                            Some(u) => format!(
                                "ints range from {} to {}; as a 64-bit pattern for the wrapping operations (wrapping_mul, shr_u, …) it is {}",
                                i64::MIN,
                                i64::MAX,
                                u as i64
                            ),
                            None => format!(
                                "ints range from {} to {}; write a float (like 1e20) for larger numbers",
                                i64::MIN,
                                i64::MAX
                            ),
                        };
                        self.report(span, "integer literal too large for a 64-bit int", Some(hint));
                        ExprKind::Error
                    }
                }
            }
            Tok::Float => {
                self.bump();
                match literal::float_value(self.text(t)) {
                    Some(v) => ExprKind::Float(v),
                    None => {
                        self.report(span, format!("invalid float literal '{}'", self.text(t)), None);
                        ExprKind::Error
                    }
                }
            }
            Tok::Str | Tok::FStr => return self.strings(),
            Tok::Bytes => return self.bytes_literals(),
            Tok::True | Tok::False => {
                self.bump();
                ExprKind::Bool(t.kind == Tok::True)
            }
            Tok::None => {
                self.bump();
                ExprKind::None
            }
            Tok::LParen => return self.paren(),
            Tok::LBracket => return self.list_display(),
            Tok::LBrace => return self.dict_display(),
            Tok::Lambda => return self.lambda(),
            Tok::Bad => {
                // Already reported by the lexer.
                self.bump();
                ExprKind::Error
            }
            _ => {
                let help = match t.kind {
                    Tok::Star => {
                        Some("'*' unpacking works only in calls, lists, tuples and assignment targets".to_string())
                    }
                    Tok::Newline | Tok::Eof => Some("the expression is incomplete".to_string()),
                    Tok::Indent => Some("this line is indented more than the one before it".to_string()),
                    k if k.is_keyword() => {
                        Some(format!("'{}' is a keyword and cannot be used as a name", self.text(t)))
                    }
                    _ => None,
                };
                self.expected("an expression", help);
                ExprKind::Error
            }
        };
        Expr { kind, span }
    }

    /// `( … )`: empty tuple, parenthesised expression, tuple or generator.
    fn paren(&mut self) -> Expr {
        let start = self.bump().start;
        if self.eat(Tok::RParen) {
            return Expr {
                kind: ExprKind::Tuple(Vec::new()),
                span: self.since(start),
            };
        }
        let first = self.star_or_test();
        let mut e = if self.peek() == Tok::For && !self.panicking {
            let mut c = into_genexp(self.comprehension_of(first));
            c.span.start = start;
            c
        } else if self.peek() == Tok::Comma && !self.panicking {
            let mut items = vec![first];
            while self.eat(Tok::Comma) {
                if self.peek() == Tok::RParen {
                    break;
                }
                items.push(self.star_or_test());
                if self.panicking {
                    break;
                }
            }
            Expr {
                kind: ExprKind::Tuple(items),
                span: self.span(start, start),
            }
        } else {
            if let ExprKind::Starred(_) = first.kind {
                self.report(
                    first.span,
                    "a starred expression '*x' cannot stand alone in parentheses",
                    Some("add a comma to make a tuple: (*x,)".to_string()),
                );
            }
            if self.peek() == Tok::Assign && !self.panicking {
                let span = self.tok_span(self.tok());
                self.error(
                    span,
                    "expected ')', found '='",
                    Some("assignment is a statement in Apsi; use '==' to compare".to_string()),
                );
            }
            // A parenthesised expression keeps its own span.
            if !self.panicking {
                self.expect(Tok::RParen, "to close '('");
            }
            return first;
        };
        if !self.panicking {
            self.expect(Tok::RParen, "to close '('");
        }
        let end = self.prev_end();
        e.span = self.span(start, end);
        e
    }

    /// `[ … ]`: list display or list comprehension.
    fn list_display(&mut self) -> Expr {
        let start = self.bump().start;
        let mut items = Vec::new();
        if self.peek() != Tok::RBracket {
            let first = self.star_or_test();
            if self.peek() == Tok::For && !self.panicking {
                let mut c = self.comprehension_of(first);
                if !self.panicking {
                    self.expect(Tok::RBracket, "to close the list comprehension");
                }
                c.span = self.since(start);
                return c;
            }
            items.push(first);
            while !self.panicking && self.eat(Tok::Comma) {
                if self.peek() == Tok::RBracket {
                    break;
                }
                items.push(self.star_or_test());
            }
        }
        if !self.panicking && !self.eat(Tok::RBracket) {
            self.expected("',' or ']' in the list", None);
        }
        Expr {
            kind: ExprKind::List(items),
            span: self.since(start),
        }
    }

    /// `{ … }`: dict display or dict comprehension; set display or set
    /// comprehension when the first item has no `:`.
    fn dict_display(&mut self) -> Expr {
        let start = self.bump().start;
        let mut items = Vec::new();
        let mut first = true;
        let mut first_key = None;
        if !matches!(self.peek(), Tok::RBrace | Tok::DoubleStar) {
            let key = self.test();
            if !self.panicking && matches!(self.peek(), Tok::Comma | Tok::RBrace | Tok::For) {
                return self.set_display(start, key);
            }
            first_key = Some(key);
        }
        while self.peek() != Tok::RBrace && !self.panicking {
            if first_key.is_none() && self.eat(Tok::DoubleStar) {
                items.push(DictItem::Spread(self.bp(BP_BITOR)));
            } else {
                let key = match first_key.take() {
                    Some(k) => k,
                    None => self.test(),
                };
                if self.panicking {
                    break;
                }
                if !self.eat(Tok::Colon) {
                    self.expected("':' after a dict key", None);
                    break;
                }
                let value = self.test();
                if first && self.peek() == Tok::For && !self.panicking {
                    let generators = self.comp_clauses();
                    if !self.panicking {
                        self.expect(Tok::RBrace, "to close the dict comprehension");
                    }
                    return Expr {
                        kind: ExprKind::DictComp {
                            key: Box::new(key),
                            value: Box::new(value),
                            generators,
                        },
                        span: self.since(start),
                    };
                }
                items.push(DictItem::Pair(key, value));
            }
            first = false;
            if self.panicking || !self.eat(Tok::Comma) {
                break;
            }
        }
        if !self.panicking && !self.eat(Tok::RBrace) {
            self.expected("',' or '}' in the dict", None);
        }
        Expr {
            kind: ExprKind::Dict(items),
            span: self.since(start),
        }
    }

    /// The rest of `{a, b, …}` or `{elt for …}` after its first item.
    fn set_display(&mut self, start: u32, first: Expr) -> Expr {
        if self.peek() == Tok::For {
            let generators = self.comp_clauses();
            if !self.panicking {
                self.expect(Tok::RBrace, "to close the set comprehension");
            }
            return Expr {
                kind: ExprKind::SetComp {
                    elt: Box::new(first),
                    generators,
                },
                span: self.since(start),
            };
        }
        let mut items = vec![first];
        while !self.panicking && self.eat(Tok::Comma) {
            if self.peek() == Tok::RBrace {
                break;
            }
            items.push(self.test());
        }
        if !self.panicking && !self.eat(Tok::RBrace) {
            self.expected("',' or '}' in the set", None);
        }
        Expr {
            kind: ExprKind::Set(items),
            span: self.since(start),
        }
    }

    /// `elt for … in … if …` with `elt` already parsed; `for` is next.
    pub(super) fn comprehension_of(&mut self, elt: Expr) -> Expr {
        let start = elt.span.start;
        if let ExprKind::Starred(_) = elt.kind {
            self.report(
                elt.span,
                "a starred expression cannot be the element of a comprehension",
                None,
            );
        }
        let generators = self.comp_clauses();
        Expr {
            kind: ExprKind::ListComp {
                elt: Box::new(elt),
                generators,
            },
            span: self.since(start),
        }
    }

    fn comp_clauses(&mut self) -> Vec<Comprehension> {
        let mut gens = Vec::new();
        while self.peek() == Tok::For && !self.panicking {
            self.bump();
            let target = self.target_list();
            if self.panicking {
                break;
            }
            self.check_target(&target, true);
            if !self.expect(Tok::In, "after the variable of 'for' in a comprehension") {
                break;
            }
            let iter = self.bp(BP_OR);
            let mut ifs = Vec::new();
            while self.peek() == Tok::If && !self.panicking {
                self.bump();
                ifs.push(self.bp(BP_OR));
            }
            gens.push(Comprehension { target, iter, ifs });
        }
        gens
    }

    /// One or more adjacent string literals (concatenated).
    fn strings(&mut self) -> Expr {
        let start = self.tok().start;
        let mut plain = String::new();
        let mut parts: Option<Vec<FStringPart>> = None;
        while matches!(self.peek(), Tok::Str | Tok::FStr) {
            let t = self.bump();
            let text = self.text(t);
            let (raw, _f, _q, bs, be) = literal::string_parts(text);
            let body_start = t.start as usize + bs;
            let body_end = t.start as usize + be;
            if t.kind == Tok::FStr {
                let ps = parts.get_or_insert_with(Vec::new);
                if !plain.is_empty() {
                    push_literal(ps, std::mem::take(&mut plain));
                }
                let mut new_parts = Vec::new();
                self.fstring_body(body_start, body_end, raw, &mut new_parts);
                let ps = parts.get_or_insert_with(Vec::new);
                for p in new_parts {
                    match p {
                        FStringPart::Literal(s) => push_literal(ps, s),
                        other => ps.push(other),
                    }
                }
            } else {
                self.unescape_into(body_start, body_end, raw, &mut plain);
                if let Some(ps) = parts.as_mut() {
                    if !plain.is_empty() {
                        push_literal(ps, std::mem::take(&mut plain));
                    }
                }
            }
        }
        if self.peek() == Tok::Bytes {
            let t = self.tok();
            let span = self.span(t.start, t.end);
            self.report(span, "cannot mix bytes and nonbytes literals", None);
            while matches!(self.peek(), Tok::Str | Tok::FStr | Tok::Bytes) {
                self.bump();
            }
        }
        let span = self.since(start);
        match parts {
            Some(ps) => Expr {
                kind: ExprKind::FString(ps),
                span,
            },
            None => Expr {
                kind: ExprKind::Str(plain),
                span,
            },
        }
    }

    /// Decodes `src[start..end]` (string body) into `out`, reporting bad escapes.
    pub(super) fn unescape_into(&mut self, start: usize, end: usize, raw: bool, out: &mut String) {
        let Some(body) = self.src.get(start..end) else { return };
        let mut errors = Vec::new();
        literal::unescape(body, raw, out, &mut errors);
        for e in errors {
            let span = self.span((start + e.start) as u32, (start + e.end) as u32);
            self.report(span, e.message, None);
        }
    }
}

/// Appends literal text, merging with a preceding literal part.
pub(super) fn push_literal(parts: &mut Vec<FStringPart>, s: String) {
    if s.is_empty() {
        return;
    }
    if let Some(FStringPart::Literal(prev)) = parts.last_mut() {
        prev.push_str(&s);
    } else {
        parts.push(FStringPart::Literal(s));
    }
}
