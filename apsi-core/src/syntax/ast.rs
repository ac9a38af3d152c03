//! The syntax tree the parser produces and every later pass consumes.
//!
//! Invariants:
//! - Every node carries the [`Span`] of the source text it came from.
//! - The tree is always complete: where the parser met an error it inserts an
//!   `Error` node (statement or expression) and records a diagnostic, so later
//!   passes can run over a partly broken program (they skip `Error` nodes).
//! - Pipes are desugared by the parser: `x |> f(a)` is `Call(f, [x, a])` and
//!   `x |> f` is `Call(f, [x])`; the call's span covers the whole pipe.
//! - `elif` chains are nested `If` statements in `orelse`.
//! - `a..b` is `ExprKind::Range`, which evaluates like `range(a, b)`.

use crate::diagnostic::Span;

/// One parsed source file.
#[derive(Debug, Clone, PartialEq)]
pub struct Module {
    pub body: Vec<Stmt>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StmtKind {
    /// An expression evaluated for its effect (or printed by the REPL).
    Expr(Expr),
    /// `a = b = value`: one or more targets (Name, Tuple/List of targets,
    /// Attribute, Index, Starred inside a tuple/list).
    Assign {
        targets: Vec<Expr>,
        value: Expr,
    },
    /// `target op= value`; `op` is the binary operator (`+=` is `BinOp::Add`).
    AugAssign {
        target: Expr,
        op: BinOp,
        value: Expr,
    },
    /// `target: annotation` or `target: annotation = value`.
    AnnAssign {
        target: Expr,
        annotation: Expr,
        value: Option<Expr>,
    },
    If {
        test: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    /// `orelse` runs when the loop ends without `break` (its condition is false).
    While {
        test: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    /// `for target in iter:`; `parallel` is true for `parallel for`;
    /// `orelse` runs when the loop ends without `break`.
    For {
        target: Expr,
        iter: Expr,
        body: Vec<Stmt>,
        parallel: bool,
        orelse: Vec<Stmt>,
    },
    Break,
    Continue,
    Pass,
    Return(Option<Expr>),
    FuncDef(Box<FuncDef>),
    StructDef(Box<StructDef>),
    /// `use a.b.c` (path = [a, b, c]) or `use a.b as m`.
    Use {
        path: Vec<Ident>,
        alias: Option<Ident>,
    },
    Try {
        body: Vec<Stmt>,
        handlers: Vec<ExceptHandler>,
        orelse: Vec<Stmt>,
        finalbody: Vec<Stmt>,
    },
    /// `raise expr` or bare `raise` (re-raise inside `except`).
    Raise(Option<Expr>),
    Assert {
        test: Expr,
        msg: Option<Expr>,
    },
    /// `with a as x, b:`
    With {
        items: Vec<WithItem>,
        body: Vec<Stmt>,
    },
    Global(Vec<Ident>),
    Nonlocal(Vec<Ident>),
    /// `del a, b[0], c.d`: each target (Name, Index, Attribute, or a
    /// Tuple/List of targets) is deleted in turn.
    Del(Vec<Expr>),
    /// A statement that could not be parsed; a diagnostic was recorded.
    Error,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WithItem {
    pub context: Expr,
    pub target: Option<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ExceptHandler {
    /// The error kind(s) caught: a name, an attribute, or a tuple of them.
    /// `None` for a bare `except:`.
    pub kind: Option<Expr>,
    /// `as name`
    pub name: Option<Ident>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FuncDef {
    pub name: Ident,
    pub params: Params,
    pub returns: Option<Expr>,
    pub body: Vec<Stmt>,
    /// Outermost first, as written.
    pub decorators: Vec<Expr>,
    pub span: Span,
}

/// Parameters of a `def` or `lambda`:
/// `def f(a, b=1, *args, c, d=2, **kw)` gives
/// `params = [a, b]`, `vararg = args`, `kwonly = [c, d]`, `kwarg = kw`.
/// A bare `*` gives `vararg = None` with keyword-only parameters after it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Params {
    pub params: Vec<Param>,
    pub vararg: Option<Param>,
    pub kwonly: Vec<Param>,
    pub kwarg: Option<Param>,
}

impl Params {
    /// Whether a positional or keyword-only parameter has a default.
    pub fn has_default(&self) -> bool {
        self.params
            .iter()
            .chain(self.kwonly.iter())
            .any(|p| p.default.is_some())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub annotation: Option<Expr>,
    pub default: Option<Expr>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StructDef {
    pub name: Ident,
    /// `struct Child(Parent):` — the parent, a name or `module.Name`.
    pub base: Option<Expr>,
    /// Annotated names: `x: float`, `x: float = 0.0`.
    pub fields: Vec<Field>,
    /// Unannotated `NAME = expr`: struct constants (LANGUAGE.md §10.2), in order.
    pub consts: Vec<StructConst>,
    pub methods: Vec<FuncDef>,
    pub decorators: Vec<Expr>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StructConst {
    pub name: Ident,
    pub value: Expr,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: Ident,
    pub annotation: Option<Expr>,
    pub default: Option<Expr>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    Str(String),
    /// `b"…"`: a bytes literal, decoded.
    Bytes(Vec<u8>),
    /// `f"…"`: literal text and `{expr!conv:spec}` parts.
    FString(Vec<FStringPart>),
    Bool(bool),
    None,
    Name(String),
    List(Vec<Expr>),
    Tuple(Vec<Expr>),
    Dict(Vec<DictItem>),
    /// `*xs` in a list/tuple display or an assignment target.
    Starred(Box<Expr>),
    BinOp {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    UnaryOp {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    /// Short-circuit `and`/`or`; the value is an operand, as in Python.
    BoolOp {
        op: BoolOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// `a < b <= c` is `Compare { left: a, ops: [(Lt, b), (Le, c)] }`.
    Compare {
        left: Box<Expr>,
        ops: Vec<(CmpOp, Expr)>,
    },
    /// `a..b`, the same as `range(a, b)`.
    Range {
        start: Box<Expr>,
        end: Box<Expr>,
    },
    Call {
        func: Box<Expr>,
        args: Vec<Arg>,
    },
    Attribute {
        value: Box<Expr>,
        attr: Ident,
    },
    /// `value[index]`; several indices `x[i, j]` give a `Tuple` index.
    Index {
        value: Box<Expr>,
        index: Box<Expr>,
    },
    /// `lower:upper:step`, only valid as (part of) an index.
    Slice {
        lower: Option<Box<Expr>>,
        upper: Option<Box<Expr>>,
        step: Option<Box<Expr>>,
    },
    Lambda {
        params: Box<Params>,
        body: Box<Expr>,
    },
    /// `body if test else orelse`
    IfExp {
        test: Box<Expr>,
        body: Box<Expr>,
        orelse: Box<Expr>,
    },
    /// `[elt for … in … if …]`.
    ListComp {
        elt: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    DictComp {
        key: Box<Expr>,
        value: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    /// `{a, b}` (never empty: `{}` is a dict).
    Set(Vec<Expr>),
    /// `{elt for … in … if …}`
    SetComp {
        elt: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    /// `(elt for … in … if …)`: a lazy generator (also as the only
    /// argument of a call, without its own parentheses).
    GenExp {
        elt: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    /// `yield` / `yield value` (a tuple for `yield a, b`); its value is none.
    Yield(Option<Box<Expr>>),
    /// `yield from iterable`: its value is a sub-generator's return value.
    YieldFrom(Box<Expr>),
    /// An expression that could not be parsed; a diagnostic was recorded.
    Error,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DictItem {
    /// `k: v`
    Pair(Expr, Expr),
    /// `**other`
    Spread(Expr),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Comprehension {
    pub target: Expr,
    pub iter: Expr,
    pub ifs: Vec<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Positional(Expr),
    Keyword(Ident, Expr),
    /// `*xs`
    Star(Expr),
    /// `**kw`
    DoubleStar(Expr),
}

#[derive(Debug, Clone, PartialEq)]
pub enum FStringPart {
    Literal(String),
    Expr {
        expr: Expr,
        /// `!r`, `!s` → Some('r') / Some('s')
        conversion: Option<char>,
        /// The format spec after `:`; may itself hold `{…}` replacement fields.
        spec: Vec<FStringPart>,
        /// `f"{x=}"` debug form: the source text of the expression plus `=`.
        debug_text: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    MatMul,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::MatMul => "@",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Pos,
    Invert,
    Not,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BoolOp {
    And,
    Or,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtE,
    Gt,
    GtE,
    In,
    NotIn,
    Is,
    IsNot,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::NotEq => "!=",
            CmpOp::Lt => "<",
            CmpOp::LtE => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtE => ">=",
            CmpOp::In => "in",
            CmpOp::NotIn => "not in",
            CmpOp::Is => "is",
            CmpOp::IsNot => "is not",
        }
    }
}
