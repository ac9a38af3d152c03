//! f-strings: literal parts, escaped braces, fields with conversions,
//! specs (with nested fields), debug form, spans, and errors.

mod parser_common;
use apsi_core::syntax::ast::{ExprKind, FStringPart, StmtKind};
use parser_common::*;

#[test]
fn literal_and_fields() {
    assert_eq!(e(r#"f"{x}""#), "(f {x})");
    assert_eq!(
        e(r#"f"{name} has {len(name)} letters""#),
        r#"(f {name} " has " {(call len name)} " letters")"#
    );
    assert_eq!(e(r#"f"plain""#), r#"(f "plain")"#);
    assert_eq!(e(r#"f"""#), "(f )");
    assert_eq!(e(r#"f'{a}{b}'"#), "(f {a} {b})");
    assert_eq!(e(r#"F"{a + b * 2}""#), "(f {(+ a (* b 2))})");
    assert_eq!(e(r#"f"{ x }""#), "(f {x})");
}

#[test]
fn escaped_braces_and_escapes() {
    assert_eq!(e(r#"f"{{x}}""#), r#"(f "{x}")"#);
    assert_eq!(e(r#"f"a{{{x}}}b""#), r#"(f "a{" {x} "}b")"#);
    assert_eq!(e(r#"f"tab\t{x}\n""#), r#"(f "tab\t" {x} "\n")"#);
    assert_eq!(e(r#"rf"\d{x}""#), r#"(f "\\d" {x})"#);
}

#[test]
fn conversions_and_specs() {
    assert_eq!(e(r#"f"{x!r}""#), "(f {x !r})");
    assert_eq!(e(r#"f"{x!s:>5}""#), r#"(f {x !s :">5"})"#);
    assert_eq!(
        e(r#"f"{x:.2f}|{n:5d}|{n:<5d}|{x:e}|{0.25:.1%}""#),
        r#"(f {x :".2f"} "|" {n :"5d"} "|" {n :"<5d"} "|" {x :"e"} "|" {0.25 :".1%"})"#
    );
    assert_eq!(e(r#"f"{x:{w}.{p}f}""#), r#"(f {x :{w} "." {p} "f"})"#);
    assert_eq!(e(r#"f"{total:.3f}""#), r#"(f {total :".3f"})"#);
    assert_eq!(e(r#"f"{a != b}""#), "(f {(cmp a != b)})");
    assert_eq!(e(r#"f"{a <= b}""#), "(f {(cmp a <= b)})");
    assert_eq!(e(r#"f"{d['k']}""#), r#"(f {(idx d "k")})"#);
    assert_eq!(e(r#"f"{(lambda: 1)()}""#), "(f {(call (lambda () 1))})");
    assert_eq!(e(r#"f"{ {'a': 1}['a'] }""#), r#"(f {(idx {"a":1} "a")})"#);
    assert_eq!(e(r#"f"{a, b}""#), "(f {(tuple a b)})");
    assert_eq!(e(r#"f"{x if c else y:>3}""#), r#"(f {(ifexp c x y) :">3"})"#);
}

#[test]
fn debug_form() {
    assert_eq!(e(r#"f"{x=}""#), r#"(f {x debug="x=" !r})"#);
    assert_eq!(e(r#"f"{x = }""#), r#"(f {x debug="x = " !r})"#);
    assert_eq!(e(r#"f"{x=:.2f}""#), r#"(f {x debug="x=" :".2f"})"#);
    assert_eq!(e(r#"f"{x=!s}""#), r#"(f {x debug="x=" !s})"#);
    assert_eq!(e(r#"f"{a == b}""#), "(f {(cmp a == b)})");
}

#[test]
fn concatenation_with_plain_strings() {
    assert_eq!(e(r#""a" f"{x}" "b""#), r#"(f "a" {x} "b")"#);
    assert_eq!(e(r#"f"{x}" f"{y}""#), "(f {x} {y})");
}

#[test]
fn triple_quoted_fstrings() {
    assert_eq!(e("f\"\"\"a\n{x}\"\"\""), "(f \"a\\n\" {x})");
    assert_eq!(e("f'''{x}'q'''"), "(f {x} \"'q\")");
}

#[test]
fn inner_expression_spans_are_absolute() {
    let src = "y = f\"ab{foo + 1}\"";
    let m = ok(src);
    let StmtKind::Assign { value, .. } = &m.body[0].kind else {
        panic!()
    };
    let ExprKind::FString(parts) = &value.kind else {
        panic!()
    };
    let FStringPart::Expr { expr, .. } = &parts[1] else {
        panic!()
    };
    assert_eq!(&src[expr.span.start as usize..expr.span.end as usize], "foo + 1");
    let ExprKind::BinOp { left, .. } = &expr.kind else {
        panic!()
    };
    assert_eq!((left.span.start, left.span.end), (9, 12));
}

#[test]
fn nested_spec_field_spans() {
    let src = "f\"{x:{width}}\"";
    let m = ok(src);
    let StmtKind::Expr(v) = &m.body[0].kind else { panic!() };
    let ExprKind::FString(parts) = &v.kind else { panic!() };
    let FStringPart::Expr { spec, .. } = &parts[0] else {
        panic!()
    };
    let FStringPart::Expr { expr, .. } = &spec[0] else {
        panic!()
    };
    assert_eq!(&src[expr.span.start as usize..expr.span.end as usize], "width");
}

#[test]
fn fstring_errors() {
    assert_eq!(
        errs(r#"f"{}""#),
        vec![("empty expression in an f-string field".to_string(), 2, 4)]
    );
    assert_eq!(
        errs(r#"f"a}b""#),
        vec![("single '}' is not allowed in an f-string".to_string(), 3, 4)]
    );
    assert_eq!(
        errs(r#"f"{x""#),
        vec![("f-string field is not closed: expected '}'".to_string(), 2, 3)]
    );
    assert_eq!(
        errs(r#"f"{x!z}""#),
        vec![(
            "invalid conversion in an f-string field: expected '!r', '!s' or '!a'".to_string(),
            4,
            6
        )]
    );
    assert_eq!(
        errs(r#"f"{1 +}""#),
        vec![(
            "expected an expression, found the end of the f-string field".to_string(),
            6,
            6
        )]
    );
    assert_eq!(
        errs(r#"f"{a b}""#),
        vec![(
            "expected '}' after the f-string expression, found name 'b'".to_string(),
            5,
            6
        )]
    );
    assert_eq!(errs(r#"f"{x:{}}""#)[0].0, "empty expression in an f-string field");
    // The program goes on after a bad f-string.
    let es = errs("a = f\"{}\"\nb = f\"}\"\n");
    assert_eq!(es.len(), 2);
}

#[test]
fn same_quotes_inside_fields() {
    // As in Python 3.12: a field may hold a string with the f-string's own quotes.
    assert_eq!(e(r#"f"{d["k"]}""#), r#"(f {(idx d "k")})"#);
    assert_eq!(
        e(r#"f"{", ".join(xs)} end""#),
        r#"(f {(call (. ", " join) xs)} " end")"#
    );
    assert_eq!(e(r#"f"{x:'>10}""#), r#"(f {x :"'>10"})"#);
    assert_eq!(e(r#"f"{x:{"w"}}""#), r#"(f {x :{"w"}})"#);
    assert_eq!(e(r#"f"{ {"a": 1}["a"] }""#), r#"(f {(idx {"a":1} "a")})"#);
    assert_eq!(e(r#"f"{f"{x}"}""#), "(f {(f {x})})");
    assert_eq!(e(r#"f"{{}}" "x""#), r#"(f "{}x")"#);
    assert_eq!(e(r#"f"{t:%H:%M}""#), r#"(f {t :"%H:%M"})"#);
}
