//! Every syntax error message: what it says, where it points, its help,
//! and that one file reports all its broken statements.

mod parser_common;
use apsi_core::diagnostic::FileId;
use apsi_core::error::ErrorKind;
use apsi_core::syntax::ast::StmtKind;
use apsi_core::syntax::parse;
use parser_common::*;

fn one(src: &str) -> (String, u32, u32) {
    let es = errs(src);
    assert_eq!(es.len(), 1, "expected one error for {src:?}, got {es:#?}");
    es[0].clone()
}

fn help(src: &str) -> String {
    let d = diags(src);
    assert_eq!(d.len(), 1, "{src:?}: {d:#?}");
    d[0].help.clone().unwrap_or_default()
}

fn at(m: &str, s: u32, e: u32) -> (String, u32, u32) {
    (m.to_string(), s, e)
}

#[test]
fn all_errors_are_syntax_errors() {
    for src in ["f() = 1", "x = 'abc", "if x\n  y", "\tx", "x = (1"] {
        for d in diags(src) {
            assert_eq!(d.kind, ErrorKind::SyntaxError);
            assert!(d.primary_span().is_some());
        }
    }
}

#[test]
fn invalid_assignment_targets() {
    assert_eq!(one("f() = 1"), at("cannot assign to a function call", 0, 3));
    assert!(help("f() = 1").contains("=="));
    assert_eq!(one("1 = x"), at("cannot assign to a literal", 0, 1));
    assert_eq!(one("x + 1 = 2"), at("cannot assign to an expression", 0, 5));
    assert_eq!(one("a, f() = 1, 2"), at("cannot assign to a function call", 3, 6));
    assert_eq!(one("none = 1"), at("cannot assign to a literal", 0, 4));
    assert_eq!(
        one("*a = xs"),
        at("a starred assignment target must be in a list or tuple", 0, 2)
    );
    assert_eq!(
        one("a, *b, *c = xs"),
        at("more than one starred target in an assignment", 7, 9)
    );
    assert_eq!(one("(a, b) += 1"), at("cannot use '+=' on a tuple", 0, 6));
    assert_eq!(one("f() += 1"), at("cannot use '+=' on a function call", 0, 3));
    assert_eq!(one("[1, 2]: int"), at("cannot annotate a list", 0, 6));
    assert_eq!(one("for 1 in y: pass"), at("cannot assign to a literal", 4, 5));
    assert_eq!(one("[x for f() in y]"), at("cannot assign to a function call", 7, 10));
    assert_eq!(
        one("with a as f(): pass"),
        at("cannot assign to a function call", 10, 13)
    );
}

#[test]
fn literal_errors() {
    assert_eq!(
        one("x = 99999999999999999999"),
        at("integer literal too large for a 64-bit int", 4, 24)
    );
    assert!(help("x = 9223372036854775808").contains("9223372036854775807"));
    // A hash constant past 2^63 gets its 64-bit pattern for the wrapping operations.
    assert!(help("x = 0x9E3779B97F4A7C15").contains("it is -7046029254386353131"));
    assert!(help("x = 99999999999999999999").contains("write a float"));
    assert_eq!(
        one("x = 0777"),
        at("leading zeros in decimal integer literals are not allowed", 4, 8)
    );
    assert_eq!(one("x = 1__000"), at("invalid number literal '1__000'", 4, 10));
    assert_eq!(one("x = 0x"), at("invalid hexadecimal literal '0x'", 4, 6));
    assert_eq!(one("x = 'abc"), at("unterminated string", 4, 5));
    assert_eq!(
        one("x = \"\"\"abc\n\ny = 1\n"),
        at("unterminated triple-quoted string", 4, 5)
    );
    assert_eq!(
        one("x = '\\x4'"),
        at("invalid \\x escape: expected two hex digits, as in \\x41", 5, 7)
    );
    assert_eq!(
        one("x = '\\u{110000}'"),
        at("invalid unicode escape: U+110000 is not a valid character", 5, 15)
    );
    assert_eq!(one("a ? b"), at("unexpected character '?'", 2, 3));
}

#[test]
fn layout_errors() {
    assert_eq!(one("  x = 1"), at("unexpected indent", 2, 3));
    assert_eq!(one("x = 1\n    y = 2\n"), at("unexpected indent", 10, 11));
    assert_eq!(
        one("if a:\n    b\n  c"),
        at("unindent does not match any outer indentation level", 14, 15)
    );
    assert_eq!(one("if a:\n\tb"), at("a tab character in indentation", 6, 7));
    assert!(help("if a:\n\tb").contains("spaces"));
    assert_eq!(
        one("if x:\npass"),
        at("expected an indented block after the 'if' statement", 6, 10)
    );
    assert!(help("if x:\npass").contains("pass"));
    assert_eq!(
        one("def f():\n# c\n\nx = 1"),
        at("expected an indented block after the function definition", 14, 15)
    );
    assert_eq!(
        one("if x: if y: pass"),
        at("'if' cannot follow ':' on the same line", 6, 8)
    );
    assert_eq!(
        one("if x: parallel for i in y: pass"),
        at("'parallel for' cannot follow ':' on the same line", 6, 14)
    );
    assert_eq!(one("x = 1 +\n"), at("expected an expression, found end of line", 7, 8));
    assert_eq!(
        one("x = 1 \\ 2"),
        at("unexpected character after line continuation character '\\'", 6, 7)
    );
}

#[test]
fn bracket_errors() {
    assert_eq!(one("x = (1, 2"), at("'(' was never closed", 4, 5));
    assert_eq!(one("print('hi'\nx = 1\ny = [2\n"), at("'(' was never closed", 5, 6));
    assert_eq!(one("x = [1, 2"), at("'[' was never closed", 4, 5));
    assert_eq!(one("d = {1: 2"), at("'{' was never closed", 4, 5));
    assert_eq!(one("print(1))"), at("expected end of line, found ')'", 8, 9));
    assert_eq!(
        one("x = [1, 2)"),
        at("closing ')' does not match the opening '['", 9, 10)
    );
    assert_eq!(
        one("f(1 2)"),
        at("expected ',' or ')' in the argument list, found number 2", 4, 5)
    );
    assert_eq!(one("x[]"), at("expected an index inside '[]'", 1, 3));
    assert_eq!(
        one("x[1 2]"),
        at("expected ',' or ']' in the index, found number 2", 4, 5)
    );
    assert_eq!(one("{1: 2, 3}"), at("expected ':' after a dict key, found '}'", 8, 9));
    assert_eq!(one("{1, 2: 3}"), at("expected ',' or '}' in the set, found ':'", 5, 6));
    assert_eq!(
        one("x = (*a)"),
        at("a starred expression '*x' cannot stand alone in parentheses", 5, 7)
    );
}

#[test]
fn statement_errors() {
    assert_eq!(
        one("if x = 1:\n    pass"),
        at("expected ':' after the condition, found '='", 5, 6)
    );
    assert!(help("if x = 1:\n    pass").contains("=="));
    assert_eq!(
        one("if x\n    pass"),
        at(
            "expected ':' at the end of the 'if' statement header, found end of line",
            4,
            5
        )
    );
    assert_eq!(
        one("for x in y\n    pass"),
        at(
            "expected ':' at the end of the 'for' statement header, found end of line",
            10,
            11
        )
    );
    assert_eq!(
        one("for x y: pass"),
        at("expected 'in' after the loop variable of 'for', found name 'y'", 6, 7)
    );
    assert_eq!(
        one("parallel for x in y:\n    pass\nelse:\n    pass"),
        at("a 'parallel for' loop cannot have an 'else' clause", 30, 34)
    );
    assert_eq!(
        one("while x:\n    pass\nelse\n    pass"),
        at(
            "expected ':' at the end of the 'else' clause header, found end of line",
            22,
            23
        )
    );
    assert_eq!(
        one("else:\n    pass"),
        at("'else' without a matching 'if' before it", 0, 4)
    );
    assert_eq!(
        one("elif x:\n    pass"),
        at("'elif' without a matching 'if' before it", 0, 4)
    );
    assert_eq!(
        one("except E:\n    pass"),
        at("'except' without a matching 'try' before it", 0, 6)
    );
    assert_eq!(one("x = 1 2"), at("expected end of line, found number 2", 6, 7));
    assert_eq!(one("x = = 1"), at("expected an expression, found '='", 4, 5));
    assert_eq!(one("return return"), at("expected end of line, found 'return'", 7, 13));
    assert_eq!(one("x = not"), at("expected an expression, found end of line", 7, 7));
    assert_eq!(
        one("x = 1 if y"),
        at(
            "expected 'else' in the conditional expression 'a if condition else b', found end of line",
            10,
            10
        )
    );
    assert_eq!(one("x = [1 for]"), at("expected an expression, found ']'", 10, 11));
    assert_eq!(one("lambda x: = 1"), at("expected an expression, found '='", 10, 11));
    assert_eq!(one("x = def"), at("expected an expression, found 'def'", 4, 7));
    assert!(help("x = def").contains("keyword"));
    assert_eq!(one("*a"), at("a starred expression '*x' cannot stand alone here", 0, 2));
    assert_eq!(one("a.1"), at("expected end of line, found number .1", 1, 3));
    assert_eq!(
        one("x.if"),
        at("expected an attribute name after '.', found 'if'", 2, 4)
    );
}

#[test]
fn use_errors() {
    assert_eq!(
        one("use"),
        at("expected a module name after 'use', found end of line", 3, 3)
    );
    assert_eq!(
        one("use a."),
        at("expected a module name after '.', found end of line", 6, 6)
    );
    assert_eq!(
        one("use a as"),
        at("expected a name after 'as', found end of line", 8, 8)
    );
    assert_eq!(
        one("use 'a'"),
        at("expected a module name after 'use', found a string", 4, 7)
    );
}

#[test]
fn python_statements_apsi_lacks() {
    assert_eq!(one("class A: pass"), at("Apsi has no 'class' statement", 0, 5));
    assert!(help("class A: pass").contains("struct"));
    assert_eq!(one("import os"), at("Apsi has no 'import' statement", 0, 6));
    assert!(help("import os").contains("use"));
    assert_eq!(one("from os import path"), at("Apsi has no 'import' statement", 0, 4));
    assert_eq!(
        one("del"),
        at(
            "expected a name, index or attribute after 'del', found end of line",
            3,
            3
        )
    );
    assert_eq!(one("del f(x)"), at("cannot delete a function call", 4, 8));
    assert_eq!(one("del 1"), at("cannot delete a literal", 4, 5));
    assert_eq!(one("del *a"), at("cannot delete a starred expression", 4, 6));
    assert_eq!(one("async def f(): pass"), at("Apsi has no 'async'", 0, 5));
}

#[test]
fn function_errors() {
    assert_eq!(
        one("def f(a=1, b):\n    pass"),
        at(
            "parameter 'b' without a default follows a parameter with a default",
            11,
            12
        )
    );
    assert_eq!(
        one("def f(*):\n    pass"),
        at("a bare '*' must be followed by keyword-only parameters", 6, 7)
    );
    assert_eq!(
        one("def f(**kw, a): pass"),
        at("no parameter may follow '**' parameters", 12, 13)
    );
    assert_eq!(one("def f(a, a): pass"), at("duplicate parameter 'a'", 9, 10));
    assert_eq!(
        one("def f(*a, *b): pass"),
        at("only one '*' may appear in a parameter list", 10, 11)
    );
    assert_eq!(
        one("def f(*a=1): pass"),
        at("'*a' parameters cannot have a default", 8, 9)
    );
    assert_eq!(
        one("def (x): pass"),
        at("expected a function name after 'def', found '('", 4, 5)
    );
    assert_eq!(
        one("def f(if): pass"),
        at("expected a parameter name, found 'if'", 6, 8)
    );
    assert_eq!(
        one("def f: pass"),
        at("expected '(' after the function name, found ':'", 5, 6)
    );
    assert_eq!(one("def f(x:\n  pass"), at("'(' was never closed", 5, 6));
    assert_eq!(
        one("def f() -> : pass"),
        at("expected an expression, found ':'", 11, 12)
    );
    assert_eq!(
        one("lambda x=1, y: 0"),
        at(
            "parameter 'y' without a default follows a parameter with a default",
            12,
            13
        )
    );
    assert_eq!(
        one("@dec\nx = 1"),
        at("expected 'def' or 'struct' after a decorator, found name 'x'", 5, 6)
    );
    assert_eq!(
        one("@dec x\ndef f(): pass"),
        at("expected end of line after a decorator, found name 'x'", 5, 6)
    );
}

#[test]
fn call_errors() {
    assert_eq!(
        one("f(a=1, b)"),
        at("a positional argument cannot follow a keyword argument", 7, 8)
    );
    assert_eq!(
        one("f(**k, b)"),
        at("a positional argument cannot follow '**' unpacking", 7, 8)
    );
    assert_eq!(
        one("f(**k, *b)"),
        at("'*' unpacking cannot follow '**' unpacking in a call", 7, 9)
    );
    assert_eq!(
        one("f(x for x in y, 1)"),
        at(
            "a generator expression must be the only argument unless it is in parentheses",
            2,
            14
        )
    );
    assert_eq!(one("f(a.b=1)"), at("expected an argument name before '='", 5, 6));
    assert_eq!(one("f(k=1, k=2)"), at("keyword argument 'k' given twice", 7, 8));
}

#[test]
fn struct_and_try_errors() {
    assert_eq!(
        one("struct S:\n    x + 1"),
        at("a struct body may hold only fields and methods", 14, 19)
    );
    assert_eq!(
        one("struct S(A, B):\n    pass"),
        at("a struct has at most one parent", 10, 11)
    );
    assert_eq!(
        one("struct S:\n    x = 1\n    x: int"),
        at("duplicate field 'x' in struct", 24, 25)
    );
    assert_eq!(
        one("struct S:\n    x: int\n    x: float"),
        at("duplicate field 'x' in struct", 25, 26)
    );
    assert_eq!(
        one("struct:\n    x: int"),
        at("expected a struct name after 'struct', found ':'", 6, 7)
    );
    assert_eq!(
        one("try:\n    pass\nx = 1"),
        at(
            "expected 'except' or 'finally' after the 'try' block, found name 'x'",
            14,
            15
        )
    );
    assert_eq!(
        one("try: pass"),
        at(
            "expected 'except' or 'finally' after the 'try' block, found end of file",
            9,
            9
        )
    );
    assert_eq!(
        one("try:\n    pass\nexcept:\n    pass\nexcept E:\n    pass"),
        at("a bare 'except:' must be the last except clause", 14, 20)
    );
    assert_eq!(
        one("try:\n    pass\nelse:\n    pass\nfinally:\n    pass"),
        at("'else' after 'try' needs an 'except' clause before it", 14, 18)
    );
}

#[test]
fn many_errors_in_one_file() {
    let src =
        "x = (1 +\n    2\ny = 3 4\ndef f(a=1, b):\n    return a +\nz = 'abc\nif q\n    w = 1\nclass K: pass\nok = 1\n";
    let es = errs(src);
    let msgs: Vec<&str> = es.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(
        msgs,
        vec![
            "'(' was never closed",
            "parameter 'b' without a default follows a parameter with a default",
            "expected an expression, found end of line",
            "unterminated string",
            "expected ':' at the end of the 'if' statement header, found end of line",
            "Apsi has no 'class' statement",
        ]
        .into_iter()
        .filter(|m| !m.is_empty())
        .collect::<Vec<_>>()[..],
        "{es:#?}"
    );
}

#[test]
fn recovery_keeps_good_statements() {
    let src = "a = 1\nb = = 2\nc = 3\nif x\n    d = 4\ne = 5\n";
    let (m, d) = parse(FileId(0), src);
    assert_eq!(d.len(), 2, "{d:#?}");
    let kinds: Vec<String> = m.body.iter().map(stmt).collect();
    // The broken value is an Error node; the block of the broken `if`
    // header is still parsed as its body.
    assert_eq!(
        kinds,
        vec!["(= a 1)", "(= b ERROR)", "(= c 3)", "(if x [(= d 4)] [])", "(= e 5)"]
    );
}

#[test]
fn errors_in_nested_blocks_recover() {
    let src = "def f():\n    x = )\n    y = 2\n    if z:\n        w = (\n    return y\n";
    let (m, d) = parse(FileId(0), src);
    assert!(d.len() >= 2, "{d:#?}");
    assert_eq!(d[0].message, "expected an expression, found ')'");
    let StmtKind::FuncDef(f) = &m.body[0].kind else {
        panic!("{m:#?}")
    };
    assert!(f.body.len() >= 2);
}

#[test]
fn lexer_and_parser_errors_together() {
    let es = errs("a = 'x\nb = 0x\nc = f(\n");
    let msgs: Vec<&str> = es.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(
        msgs,
        vec![
            "unterminated string",
            "invalid hexadecimal literal '0x'",
            "'(' was never closed"
        ]
    );
}

#[test]
fn unclosed_bracket_stops_at_the_next_statement() {
    // The forgotten ')' is reported once; the statements after it parse.
    let src = "x = f(1,\n     2\ndef g():\n    return 1\ny = [\nif a:\n    pass\n";
    let (m, d) = parse(FileId(0), src);
    let msgs: Vec<&str> = d.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(msgs, vec!["'(' was never closed", "'[' was never closed"], "{d:#?}");
    let kinds: Vec<String> = m.body.iter().map(stmt).collect();
    assert_eq!(kinds[1], "(def g () -> _ [(return 1)])");
    assert_eq!(kinds[3], "(if a [pass] [])");
    // A comprehension clause on its own line is not mistaken for a statement.
    ok("x = [a\nfor a in b]\ny = (1,\nif_x)\n");
}

#[test]
fn diagnostics_are_in_source_order() {
    let d = diags("a = f(\nb = 'x\n");
    let starts: Vec<u32> = d.iter().map(|d| d.primary_span().unwrap().start).collect();
    let mut sorted = starts.clone();
    sorted.sort();
    assert_eq!(starts, sorted);
}

#[test]
fn hints_for_habits_from_other_languages() {
    assert_eq!(
        one("if a:\n    pass\nelse if b:\n    pass\n"),
        at("expected ':' after 'else', found 'if'", 15, 22)
    );
    assert!(help("if a:\n    pass\nelse if b:\n    pass\n").contains("elif"));
    assert_eq!(
        one("if (n := 3) > 1: pass"),
        at("expected ')' to close '(', found ':'", 6, 7)
    );
    assert!(help("if (n := 3) > 1: pass").contains(":="));
    assert_eq!(one("x = a && b"), at("expected an expression, found '&'", 7, 8));
    assert!(help("x = a && b").contains("'and'"));
    assert!(help("x = a || b").contains("'or'"));
    assert_eq!(one("x++"), at("expected an expression, found end of line", 3, 3));
    assert!(help("x++").contains("x += 1"));
    assert!(help("x--\n").contains("x -= 1"));
}

#[test]
fn names_like_python_keywords_inside_brackets_are_fine() {
    // Only Apsi keywords that cannot continue an expression end a forgotten bracket.
    let (_, d) = parse(FileId(0), "x = f(\nimport)\ny = g(\nclass)\n");
    assert!(d.is_empty(), "{d:#?}");
}

#[test]
fn display_errors() {
    assert_eq!(
        one("d = {1: 2 3}"),
        at("expected ',' or '}' in the dict, found number 3", 10, 11)
    );
    assert_eq!(
        one("x = [*a for a in b]"),
        at("a starred expression cannot be the element of a comprehension", 5, 7)
    );
    assert_eq!(one("f((x = 1))"), at("expected ')', found '='", 5, 6));
    assert!(help("f((x = 1))").contains("=="));
    let long = format!("x = 1{}", " + 1".repeat(1_200));
    let (m, s, _) = one(&long);
    assert_eq!(m, "nested too deeply (an expression more than 1000 operations deep)");
    assert_eq!(s, 4 + 1000 * 4 + 2);
}

#[test]
fn mismatched_brackets() {
    assert_eq!(
        one("x = (1, 2]"),
        at("closing ']' does not match the opening '('", 9, 10)
    );
    assert_eq!(help("x = (1, 2]"), "close it with ')'");
    let d = diags("f([1, 2)");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].labels[1].span.start, 2);
    assert_eq!(d[0].labels[1].message.as_deref(), Some("opened here"));
    assert_eq!(
        one("y = {'a': 1)\nz = 2\n"),
        at("closing ')' does not match the opening '{'", 11, 12)
    );
}

#[test]
fn a_broken_header_or_clause_gives_one_error() {
    for src in [
        "try: x = = 1\nexcept: pass\n",
        "try\n    x\nexcept:\n    pass\n",
        "if x y:\n    a\nelse:\n    b\n",
        "if x:\n    a\nelif y z:\n    b\nelse:\n    c\n",
        "def (x):\n    pass\n",
        "for 1 in x:\n    pass\n",
        "for x y:\n    pass\n",
        "while x = 1:\n    pass\n",
        "with a as 1:\n    pass\n",
        "try:\n    a\nexcept E as:\n    b\nfinally:\n    c\n",
        "if a: b = = 1\nelse: c\n",
        "if a: if b: c\nelse: d\n",
        "if a: if b:\n    c\nelse:\n    d\n",
    ] {
        let es = errs(src);
        assert_eq!(es.len(), 1, "{src:?}: {es:#?}");
    }
    let m = ok("x = 1");
    assert_eq!(m.body.len(), 1);
    let (m, _) = parse(FileId(0), "if x y:\n    a\nelse:\n    b\n");
    assert_eq!(stmt(&m.body[0]), "(if x [a] [b])");
    let (m, _) = parse(FileId(0), "try\n    x\nexcept E:\n    pass\n");
    assert_eq!(stmt(&m.body[0]), "(try [x] [(except E _ [pass])] [] [])");
}

#[test]
fn bytes_literals() {
    assert_eq!(
        one("x = b'é'"),
        at("bytes can only contain ASCII literal characters", 6, 8)
    );
    assert_eq!(
        one("x = b'\\x4'"),
        at("invalid \\x escape: expected two hex digits, as in \\x41", 6, 8)
    );
    assert_eq!(one("x = b'a' 'b'"), at("cannot mix bytes and nonbytes literals", 9, 12));
    assert_eq!(one("x = 'a' b'b'"), at("cannot mix bytes and nonbytes literals", 8, 12));
    assert!(errs("x = b'a' b'b' + rb'\\d'").is_empty());
}
