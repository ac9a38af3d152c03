//! Statement parsing: assignments, blocks, definitions, structs, use,
//! try/except, with, one-line blocks, spans.

mod parser_common;
use apsi_core::syntax::ast::StmtKind;
use parser_common::*;

#[test]
fn assignments() {
    assert_eq!(sexp("x = 1"), "(= x 1)");
    assert_eq!(sexp("a = b = 0"), "(= a b 0)");
    assert_eq!(sexp("a, b = b, a"), "(= (tuple a b) (tuple b a))");
    assert_eq!(sexp("x = 1,"), "(= x (tuple 1))");
    assert_eq!(sexp("[a, *rest] = xs"), "(= [a *rest] xs)");
    assert_eq!(sexp("a, *rest = xs"), "(= (tuple a *rest) xs)");
    assert_eq!(sexp("x[i] = v"), "(= (idx x i) v)");
    assert_eq!(sexp("x[:, 0] = 1.0"), "(= (idx x (tuple (slice _ _ _) 0)) 1.0)");
    assert_eq!(sexp("p.mass = 2.0"), "(= (. p mass) 2.0)");
    assert_eq!(sexp("(a, b) = 1, 2"), "(= (tuple a b) (tuple 1 2))");
    assert_eq!(sexp("x: int = 1"), "(: x int 1)");
    assert_eq!(sexp("x: Tensor[N, f32]"), "(: x (idx Tensor (tuple N f32)) _)");
    assert_eq!(sexp("self.x: float = 0.0"), "(: (. self x) float 0.0)");
}

#[test]
fn augmented_assignments() {
    let ops = [
        "+=", "-=", "*=", "/=", "//=", "%=", "@=", "**=", "&=", "|=", "^=", "<<=", ">>=",
    ];
    for op in ops {
        assert_eq!(sexp(&format!("x {op} 2")), format!("({op} x 2)"));
    }
    assert_eq!(sexp("acc.total += v"), "(+= (. acc total) v)");
    assert_eq!(sexp("w -= 0.1 * g(w)"), "(-= w (* 0.1 (call g w)))");
}

#[test]
fn simple_statements() {
    assert_eq!(sexp("pass"), "pass");
    assert_eq!(sexp("return"), "(return _)");
    assert_eq!(sexp("return a, b"), "(return (tuple a b))");
    assert_eq!(sexp("raise"), "(raise _)");
    assert_eq!(sexp("raise ValueError(\"bad\")"), "(raise (call ValueError \"bad\"))");
    assert_eq!(sexp("assert x"), "(assert x _)");
    assert_eq!(
        sexp("assert 1 == 2, \"math broke\""),
        "(assert (cmp 1 == 2) \"math broke\")"
    );
    assert_eq!(sexp("global a, b"), "(global a b)");
    assert_eq!(sexp("nonlocal count"), "(nonlocal count)");
    assert_eq!(sexp("x = 1; y = 2;"), "(= x 1)\n(= y 2)");
    assert_eq!(sexp("x = 1 + \\\n    2"), "(= x (+ 1 2))");
}

#[test]
fn use_statements() {
    assert_eq!(sexp("use parallel"), "(use parallel)");
    assert_eq!(sexp("use lib.geometry"), "(use lib.geometry)");
    assert_eq!(sexp("use a.b.c as m"), "(use a.b.c as m)");
    let m = ok("use a.b as m");
    let StmtKind::Use { path, alias } = &m.body[0].kind else {
        panic!()
    };
    assert_eq!((path[1].span.start, path[1].span.end), (6, 7));
    assert_eq!(alias.as_ref().unwrap().span.start, 11);
}

#[test]
fn if_elif_else() {
    let src = "if a:\n    x = 1\nelif b:\n    x = 2\nelse:\n    x = 3\n";
    assert_eq!(sexp(src), "(if a [(= x 1)] [(if b [(= x 2)] [(= x 3)])])");
    assert_eq!(sexp("if x: return 1"), "(if x [(return 1)] [])");
    assert_eq!(sexp("if x: a; b\nelse: c"), "(if x [a b] [c])");
    assert_eq!(
        sexp("if a:\n    if b:\n        pass\n    c\nd"),
        "(if a [(if b [pass] []) c] [])\nd"
    );
}

#[test]
fn loops() {
    assert_eq!(
        sexp("while true:\n    k += 1\n    if k >= 5:\n        break\n"),
        "(while true [(+= k 1) (if (cmp k >= 5) [break] [])])"
    );
    assert_eq!(
        sexp("for i in range(10):\n    continue"),
        "(for i (call range 10) [continue])"
    );
    assert_eq!(
        sexp("for i, c in enumerate(s):\n    pass"),
        "(for (tuple i c) (call enumerate s) [pass])"
    );
    assert_eq!(sexp("for x in 1, 2:\n    pass"), "(for x (tuple 1 2) [pass])");
    assert_eq!(
        sexp("for i in 2..5:\n    print(i)"),
        "(for i (.. 2 5) [(call print i)])"
    );
    assert_eq!(
        sexp("parallel for i in range(n):\n    s += x[i]"),
        "(pfor i (call range n) [(+= s (idx x i))])"
    );
    assert_eq!(sexp("for (a, b) in xs: pass"), "(for (tuple a b) xs [pass])");
}

#[test]
fn loop_else() {
    assert_eq!(
        sexp("while x:\n    break\nelse:\n    y = 1\nz"),
        "(while x [break] else [(= y 1)])\nz"
    );
    assert_eq!(
        sexp("for i in xs:\n    pass\nelse:\n    a\n    b"),
        "(for i xs [pass] else [a b])"
    );
    assert_eq!(sexp("for i in xs: pass\nelse: a"), "(for i xs [pass] else [a])");
    // `else` after an `if` inside the loop body stays the `if`'s.
    assert_eq!(
        sexp("for i in xs:\n    if i:\n        a\n    else:\n        b\nelse:\n    c"),
        "(for i xs [(if i [a] [b])] else [c])"
    );
    assert_eq!(
        sexp("for i in xs:\n    for j in ys:\n        pass\n    else:\n        break\n"),
        "(for i xs [(for j ys [pass] else [break])])"
    );
}

#[test]
fn del_statements() {
    assert_eq!(sexp("del x"), "(del x)");
    assert_eq!(sexp("del x, y[0], z.w,"), "(del x (idx y 0) (. z w))");
    assert_eq!(
        sexp("del xs[1:2], (a, b), [c]"),
        "(del (idx xs (slice 1 2 _)) (tuple a b) [c])"
    );
    assert_eq!(sexp("if a: del a; del b"), "(if a [(del a) (del b)] [])");
    // `del` is a keyword now: not a name.
    assert!(!apsi_core::syntax::parse(apsi_core::diagnostic::FileId(0), "del = 1")
        .1
        .is_empty());
}

#[test]
fn parallel_as_a_name() {
    assert_eq!(sexp("parallel = 1\nparallel(x)"), "(= parallel 1)\n(call parallel x)");
    assert_eq!(sexp("parallel.spawn(f)"), "(call (. parallel spawn) f)");
}

#[test]
fn functions() {
    assert_eq!(sexp("def f():\n    pass"), "(def f () -> _ [pass])");
    assert_eq!(
        sexp("def f(a, b=10, *rest, scale=1, **opts):\n    return a"),
        "(def f (a b=10 *rest scale=1 **opts) -> _ [(return a)])"
    );
    assert_eq!(
        sexp("def step(x: Tensor[N, f32], dt: float = 0.01, *, damping=0.0) -> Tensor[N, f32]:\n    return x"),
        "(def step (x:(idx Tensor (tuple N f32)) dt:float=0.01 * damping=0.0) -> (idx Tensor (tuple N f32)) [(return x)])"
    );
    assert_eq!(
        sexp("def f(*args: int, **kw: str): pass"),
        "(def f (*args:int **kw:str) -> _ [pass])"
    );
    assert_eq!(sexp("def f(a,): pass"), "(def f (a) -> _ [pass])");
    assert_eq!(
        sexp("def f(\n    a,\n    b,\n):\n    pass"),
        "(def f (a b) -> _ [pass])"
    );
}

#[test]
fn decorators() {
    assert_eq!(sexp("@timed\ndef f(): pass"), "(def @timed f () -> _ [pass])");
    assert_eq!(
        sexp("@times(3)\ndef f(): pass"),
        "(def @(call times 3) f () -> _ [pass])"
    );
    assert_eq!(
        sexp("@a.b(x)\n@c\ndef f(): pass"),
        "(def @(call (. a b) x) @c f () -> _ [pass])"
    );
    assert_eq!(
        sexp("@native(fastmath=true)\ndef f(): pass"),
        "(def @(call native fastmath=true) f () -> _ [pass])"
    );
    assert_eq!(
        sexp("@dataclassy\nstruct P:\n    x: int"),
        "(struct @dataclassy P [(x int _)] [])"
    );
}

#[test]
fn structs() {
    let src = "struct Vec2:\n    \"\"\"A vector.\"\"\"\n    x: float\n    y: float = 0.0\n    z = 1\n\n    def norm2(self) -> float:\n        return self.x\n";
    assert_eq!(
        sexp(src),
        "(struct Vec2 (const z 1) [(x float _) (y float 0.0)] [(def norm2 (self) -> float [(return (. self x))])])"
    );
    assert_eq!(sexp("struct E:\n    pass"), "(struct E [] [])");
    assert_eq!(
        sexp("struct C(geo.Shape):\n    r: float"),
        "(struct C((. geo Shape)) [(r float _)] [])"
    );
    assert_eq!(sexp("struct E: pass"), "(struct E [] [])");
    assert_eq!(
        sexp("struct S:\n    @staticish\n    def m(self): pass"),
        "(struct S [] [(def @staticish m (self) -> _ [pass])])"
    );
}

#[test]
fn try_statements() {
    let src = "try:\n    a\nexcept ValueError as e:\n    b\nexcept (A, B) as e:\n    c\nexcept K:\n    d\nexcept:\n    f\nelse:\n    g\nfinally:\n    h\n";
    assert_eq!(
        sexp(src),
        "(try [a] [(except ValueError e [b]) (except (tuple A B) e [c]) (except K _ [d]) (except _ _ [f])] [g] [h])"
    );
    assert_eq!(sexp("try:\n    a\nfinally:\n    b"), "(try [a] [] [] [b])");
    assert_eq!(sexp("try: a\nexcept: b"), "(try [a] [(except _ _ [b])] [] [])");
}

#[test]
fn with_statements() {
    assert_eq!(sexp("with l:\n    pass"), "(with [(l _)] [pass])");
    assert_eq!(sexp("with a as x, b:\n    pass"), "(with [(a x) (b _)] [pass])");
    assert_eq!(
        sexp("with open(p) as (a, b): pass"),
        "(with [((call open p) (tuple a b))] [pass])"
    );
}

#[test]
fn comments_blank_lines_and_crlf() {
    assert_eq!(sexp("# c\n\nx = 1  # trailing\n\n\n# end"), "(= x 1)");
    assert_eq!(sexp("if a:\r\n    b\r\n\r\nc\r\n"), "(if a [b] [])\nc");
    assert_eq!(sexp("if a:\n    b\n# comment at col 0\n    c\n"), "(if a [b c] [])");
    assert_eq!(sexp("x = [\n  1,  # one\n  2,\n]"), "(= x [1 2])");
}

#[test]
fn statement_spans() {
    let src = "x = 1\ndef f(a):\n    return a\n\ny = 2";
    let m = ok(src);
    let spans: Vec<(u32, u32)> = m.body.iter().map(|s| (s.span.start, s.span.end)).collect();
    assert_eq!(spans, vec![(0, 5), (6, 28), (30, 35)]);
    assert_eq!((m.span.start, m.span.end), (0, src.len() as u32));
}

#[test]
fn expression_spans() {
    let m = ok("print(a + b, c)");
    let StmtKind::Expr(x) = &m.body[0].kind else { panic!() };
    assert_eq!((x.span.start, x.span.end), (0, 15));
    let apsi_core::syntax::ast::ExprKind::Call { args, .. } = &x.kind else {
        panic!()
    };
    let apsi_core::syntax::ast::Arg::Positional(a) = &args[0] else {
        panic!()
    };
    assert_eq!((a.span.start, a.span.end), (6, 11));
}
