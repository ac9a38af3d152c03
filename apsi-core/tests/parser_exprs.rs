//! Expression parsing: precedence, associativity, pipes, ranges, literals,
//! displays, comprehensions, calls, indexing, lambdas.

mod parser_common;
use parser_common::*;

#[test]
fn arithmetic_precedence() {
    assert_eq!(e("1 + 2 * 3 - 4"), "(- (+ 1 (* 2 3)) 4)");
    assert_eq!(e("10 / 4 * 2"), "(* (/ 10 4) 2)");
    assert_eq!(e("a // b % c @ d"), "(@ (% (// a b) c) d)");
    assert_eq!(e("1 << 2 + 3"), "(<< 1 (+ 2 3))");
    assert_eq!(e("a | b ^ c & d"), "(| a (^ b (& c d)))");
    assert_eq!(e("a & b << c"), "(& a (<< b c))");
}

#[test]
fn power_and_unary() {
    assert_eq!(e("-2 ** 2"), "(neg (** 2 2))");
    assert_eq!(e("2 ** -1"), "(** 2 (neg 1))");
    assert_eq!(e("2 ** 3 ** 2"), "(** 2 (** 3 2))");
    assert_eq!(e("-x.y ** 2"), "(neg (** (. x y) 2))");
    assert_eq!(e("~0"), "(~ 0)");
    assert_eq!(e("+-x"), "(pos (neg x))");
    assert_eq!(e("a * -b"), "(* a (neg b))");
    assert_eq!(e("2 ** -x ** 2"), "(** 2 (neg (** x 2)))");
}

#[test]
fn boolean_precedence() {
    assert_eq!(e("a or b and not c"), "(or a (and b (not c)))");
    assert_eq!(e("not a == b"), "(not (cmp a == b))");
    assert_eq!(e("a and b or c and d"), "(or (and a b) (and c d))");
    assert_eq!(e("not not a"), "(not (not a))");
}

#[test]
fn chained_comparisons() {
    assert_eq!(e("0 <= i < n"), "(cmp 0 <= i < n)");
    assert_eq!(e("a == b != c"), "(cmp a == b != c)");
    assert_eq!(e("a in b"), "(cmp a in b)");
    assert_eq!(e("a not in b"), "(cmp a not in b)");
    assert_eq!(e("a is b"), "(cmp a is b)");
    assert_eq!(e("a is not none"), "(cmp a is not none)");
    assert_eq!(e("1 < 2 < 3 > 0 >= -1"), "(cmp 1 < 2 < 3 > 0 >= (neg 1))");
    assert_eq!(e("a + 1 < b * 2"), "(cmp (+ a 1) < (* b 2))");
}

#[test]
fn pipes() {
    assert_eq!(e("1 + 2 |> f"), "(call f (+ 1 2))");
    assert_eq!(e("x |> f(a, b)"), "(call f x a b)");
    assert_eq!(e("x |> m.f(a)"), "(call (. m f) x a)");
    assert_eq!(
        e("3 |> double |> add(1) |> str"),
        "(call str (call add (call double 3) 1))"
    );
    assert_eq!(e("xs |> sum > 40"), "(cmp (call sum xs) > 40)");
    assert_eq!(e("0..n |> list"), "(call list (.. 0 n))");
    assert_eq!(e("x |> f(k=1)"), "(call f x k=1)");
    assert_eq!(e("a or x |> f"), "(or a (call f x))");
    assert_eq!(e("x |> g(1)(2)"), "(call (call g 1) x 2)");
}

#[test]
fn pipe_span_covers_whole_pipe() {
    let m = ok("x |> f(a)");
    let apsi_core::syntax::ast::StmtKind::Expr(x) = &m.body[0].kind else {
        panic!()
    };
    assert_eq!((x.span.start, x.span.end), (0, 9));
}

#[test]
fn ranges() {
    assert_eq!(e("2..5"), "(.. 2 5)");
    assert_eq!(e("0..n-1"), "(.. 0 (- n 1))");
    assert_eq!(e("a..b | c"), "(.. a (| b c))");
    assert_eq!(e("1.5..2"), "(.. 1.5 2)");
    assert_eq!(e("x in 0..10"), "(cmp x in (.. 0 10))");
}

#[test]
fn numbers() {
    assert_eq!(e("42"), "42");
    assert_eq!(e("1_000_000"), "1000000");
    assert_eq!(e("0xff"), "255");
    assert_eq!(e("0o17"), "15");
    assert_eq!(e("0b1010"), "10");
    assert_eq!(e("3.14"), "3.14");
    assert_eq!(e("1e-9"), "1e-9");
    assert_eq!(e("2.5e3"), "2500.0");
    assert_eq!(e("1."), "1.0");
    assert_eq!(e(".5"), "0.5");
    assert_eq!(e("9223372036854775807"), "9223372036854775807");
    assert_eq!(e("-9223372036854775808"), "-9223372036854775808");
    assert_eq!(e("-5"), "(neg 5)");
}

#[test]
fn constants() {
    assert_eq!(e("true"), "true");
    assert_eq!(e("false"), "false");
    assert_eq!(e("none"), "none");
}

#[test]
fn strings() {
    assert_eq!(e(r#""a\tb""#), r#""a\tb""#);
    assert_eq!(e("'it\\'s'"), r#""it's""#);
    assert_eq!(
        e(r#""""x
y""""#),
        r#""x\ny""#
    );
    assert_eq!(e("'''a'b'''"), r#""a'b""#);
    assert_eq!(e(r#""\u{263A}\u263A\x41""#), r#""☺☺A""#);
    assert_eq!(e(r#""\d""#), r#""\\d""#);
    assert_eq!(e(r#"r"\d\n""#), r#""\\d\\n""#);
    assert_eq!(e(r#""a" 'b'"#), r#""ab""#);
    assert_eq!(e(r#""héllo""#), r#""héllo""#);
    assert_eq!(e(r#""""#), r#""""#);
}

#[test]
fn tuples_and_parens() {
    assert_eq!(e("()"), "(tuple )");
    assert_eq!(e("(1,)"), "(tuple 1)");
    assert_eq!(e("(1, 2)"), "(tuple 1 2)");
    assert_eq!(e("(1)"), "1");
    assert_eq!(e("((a + b)) * c"), "(* (+ a b) c)");
    assert_eq!(e("1, 2"), "(tuple 1 2)");
    assert_eq!(e("1,"), "(tuple 1)");
    assert_eq!(e("(*a, b)"), "(tuple *a b)");
    assert_eq!(e("(\n 1,\n 2,\n)"), "(tuple 1 2)");
}

#[test]
fn lists_and_dicts() {
    assert_eq!(e("[]"), "[]");
    assert_eq!(e("[1, 2, 3,]"), "[1 2 3]");
    assert_eq!(e("[*xs, 1]"), "[*xs 1]");
    assert_eq!(e("{}"), "{}");
    assert_eq!(e("{'a': 1, 'b': [none],}"), r#"{"a":1 "b":[none]}"#);
    assert_eq!(e("{**d, 'k': 2}"), r#"{**d "k":2}"#);
    assert_eq!(e("{1}"), "(set 1)");
    assert_eq!(e("{1, 'a', (2, 3),}"), r#"(set 1 "a" (tuple 2 3))"#);
    assert_eq!(e("{a if b else c, f(x)}"), "(set (ifexp b a c) (call f x))");
    assert_eq!(e("{{1}: 2}"), "{(set 1):2}");
}

#[test]
fn comprehensions() {
    assert_eq!(e("[x for x in xs]"), "(listcomp x (for x xs))");
    assert_eq!(
        e("[f(x) for x in xs if p(x)]"),
        "(listcomp (call f x) (for x xs (if (call p x))))"
    );
    assert_eq!(
        e("[(i, j) for i in a for j in b if i < j if j > 0]"),
        "(listcomp (tuple i j) (for i a) (for j b (if (cmp i < j)) (if (cmp j > 0))))"
    );
    assert_eq!(e("{k: v for k, v in items}"), "(dictcomp k:v (for (tuple k v) items))");
    assert_eq!(e("{x % 3 for x in xs if x}"), "(setcomp (% x 3) (for x xs (if x)))");
    assert_eq!(e("(x for x in xs)"), "(genexp x (for x xs))");
    assert_eq!(e("sum(x * x for x in xs)"), "(call sum (genexp (* x x) (for x xs)))");
    assert_eq!(e("f((x for x in a), b)"), "(call f (genexp x (for x a)) b)");
    assert_eq!(e("[a if c else b for x in xs]"), "(listcomp (ifexp c a b) (for x xs))");
    assert_eq!(e("[x for x in a if b if c]"), "(listcomp x (for x a (if b) (if c)))");
    assert_eq!(
        e("[lambda x, k=k: x + k for k in range(3)]"),
        "(listcomp (lambda (x k=k) (+ x k)) (for k (call range 3)))"
    );
}

#[test]
fn calls() {
    assert_eq!(e("f()"), "(call f)");
    assert_eq!(e("f(1, k=2, *xs, **kw)"), "(call f 1 k=2 *xs **kw)");
    assert_eq!(e("f(a,)"), "(call f a)");
    assert_eq!(e("f(a)(b)"), "(call (call f a) b)");
    assert_eq!(e("f(x == 1)"), "(call f (cmp x == 1))");
    assert_eq!(e("f(\n  1,\n  2\n)"), "(call f 1 2)");
}

#[test]
fn indexing_and_slices() {
    assert_eq!(e("x[1]"), "(idx x 1)");
    assert_eq!(e("x[-1]"), "(idx x (neg 1))");
    assert_eq!(e("x[i, j]"), "(idx x (tuple i j))");
    assert_eq!(e("x[1:2, ::3, 0]"), "(idx x (tuple (slice 1 2 _) (slice _ _ 3) 0))");
    assert_eq!(e("x[:, 0]"), "(idx x (tuple (slice _ _ _) 0))");
    assert_eq!(e("x[::-1]"), "(idx x (slice _ _ (neg 1)))");
    assert_eq!(e("x[1:]"), "(idx x (slice 1 _ _))");
    assert_eq!(e("x[:2]"), "(idx x (slice _ 2 _))");
    assert_eq!(e("x[a:b:c]"), "(idx x (slice a b c))");
    assert_eq!(e("x[1,]"), "(idx x (tuple 1))");
    assert_eq!(e("x[m > 0]"), "(idx x (cmp m > 0))");
    assert_eq!(e("a.b[0].c(1)"), "(call (. (idx (. a b) 0) c) 1)");
}

#[test]
fn lambdas() {
    assert_eq!(e("lambda: 0"), "(lambda () 0)");
    assert_eq!(e("lambda x, y: x + y"), "(lambda (x y) (+ x y))");
    assert_eq!(e("lambda x, k=k: x + k"), "(lambda (x k=k) (+ x k))");
    assert_eq!(e("lambda *args, **kw: args"), "(lambda (*args **kw) args)");
    assert_eq!(e("lambda x, *, k=1: k"), "(lambda (x * k=1) k)");
    assert_eq!(
        e("lambda n: n if n < 2 else f(n - 1)"),
        "(lambda (n) (ifexp (cmp n < 2) n (call f (- n 1))))"
    );
    assert_eq!(e("f(lambda v: v % 2 == 1)"), "(call f (lambda (v) (cmp (% v 2) == 1)))");
}

#[test]
fn conditional_expressions() {
    assert_eq!(e("a if c else b"), "(ifexp c a b)");
    assert_eq!(e("a if c else b if d else e"), "(ifexp c a (ifexp d b e))");
    assert_eq!(
        e("0 if n == 0 else 1 + depth(n - 1)"),
        "(ifexp (cmp n == 0) 0 (+ 1 (call depth (- n 1))))"
    );
    assert_eq!(e("(a or b) if c and d else e"), "(ifexp (and c d) (or a b) e)");
}

#[test]
fn attributes_and_keywords_as_names() {
    assert_eq!(e("parallel"), "parallel");
    assert_eq!(e("parallel.spawn(f)"), "(call (. parallel spawn) f)");
    assert_eq!(e("x.T"), "(. x T)");
}

#[test]
fn yield_expressions() {
    assert_eq!(sexp("def g():\n    yield"), "(def g () -> _ [(yield)])");
    assert_eq!(sexp("def g():\n    yield 1"), "(def g () -> _ [(yield 1)])");
    assert_eq!(
        sexp("def g():\n    yield a, b"),
        "(def g () -> _ [(yield (tuple a b))])"
    );
    assert_eq!(sexp("def g():\n    x = yield"), "(def g () -> _ [(= x (yield))])");
    assert_eq!(
        sexp("def g():\n    r = yield from h()"),
        "(def g () -> _ [(= r (yieldfrom (call h)))])"
    );
    assert_eq!(
        sexp("def g():\n    f((yield x))"),
        "(def g () -> _ [(call f (yield x))])"
    );
    // `from` is a keyword only right after `yield`.
    assert_eq!(e("from + 1"), "(+ from 1)");
    assert!(!errs("def g():\n    yield from").is_empty());
    // `yield` is a keyword: not a name any more.
    assert!(!errs("yield = 1").is_empty());
}
