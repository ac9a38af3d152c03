//! Nesting limits, huge inputs, and the REPL's `is_incomplete`.

mod parser_common;

use apsi_core::diagnostic::FileId;
use apsi_core::syntax::{is_incomplete, parse};
use std::time::Instant;

fn nested_too_deeply(src: &str) {
    let (_, d) = parse(FileId(0), src);
    assert!(!d.is_empty(), "no error");
    assert!(
        d.iter().any(|d| d.message.starts_with("nested too deeply")),
        "{:?}",
        &d[..d.len().min(3)]
    );
    assert!(d.len() <= 3, "too many errors: {}", d.len());
}

#[test]
fn deep_brackets_are_an_error_not_a_crash() {
    nested_too_deeply(&"(".repeat(100_000));
    nested_too_deeply(&format!("x = {}1{}", "(".repeat(100_000), ")".repeat(100_000)));
    nested_too_deeply(&format!("x = {}1{}", "[".repeat(5_000), "]".repeat(5_000)));
    nested_too_deeply(&format!("x = {}", "{1: ".repeat(5_000)));
    nested_too_deeply(&format!("x = {}1", "-".repeat(100_000)));
    nested_too_deeply(&format!("x = {}1", "not ".repeat(50_000)));
    nested_too_deeply(&format!("x = {}1", "lambda: ".repeat(20_000)));
    nested_too_deeply(&format!("x = 2{}", " ** 2".repeat(50_000)));
    nested_too_deeply(&format!("x = 1{}", " if c else 1".repeat(50_000)));
    nested_too_deeply(&format!("x = {}", "f(".repeat(50_000)));
    nested_too_deeply(&format!("x = a{}", "[0".repeat(50_000)));
}

#[test]
fn long_chains_are_an_error_not_a_crash() {
    nested_too_deeply(&format!("x = 1{}", " + 1".repeat(100_000)));
    nested_too_deeply(&format!("x = a{}", ".b".repeat(100_000)));
    nested_too_deeply(&format!("x = f{}", "()".repeat(100_000)));
    nested_too_deeply(&format!("x = a{}", " < a".repeat(100_000)).replace("< a < a", "< a and a"));
    nested_too_deeply(&format!("x = 1{}", " |> f".repeat(100_000)));
    // Nested chains: each part is short but together they are deep.
    let mut s = String::from("1");
    for _ in 0..300 {
        s = format!("({s}{})", " + 1".repeat(50));
    }
    nested_too_deeply(&format!("x = {s}"));
}

#[test]
fn deep_blocks_are_an_error_not_a_crash() {
    let mut src = String::new();
    for i in 0..1000 {
        src.push_str(&" ".repeat(i));
        src.push_str("if x:\n");
    }
    src.push_str(&" ".repeat(1000));
    src.push_str("pass\n");
    nested_too_deeply(&src);
}

#[test]
fn moderate_nesting_is_fine() {
    let src = format!("x = {}1{}", "(".repeat(100), ")".repeat(100));
    assert!(parse(FileId(0), &src).1.is_empty());
    let src = format!("x = 1{}", " + 1".repeat(500));
    assert!(parse(FileId(0), &src).1.is_empty());
    let mut src = String::new();
    for i in 0..50 {
        src.push_str(&"    ".repeat(i));
        src.push_str("if x:\n");
    }
    src.push_str(&"    ".repeat(50));
    src.push_str("pass\n");
    assert!(parse(FileId(0), &src).1.is_empty());
}

#[test]
fn work_after_a_too_deep_statement_goes_on() {
    let src = format!("x = {}1{}\ny = 1 +\nz = 2\n", "(".repeat(1000), ")".repeat(1000));
    let (m, d) = parse(FileId(0), &src);
    let msgs: Vec<&str> = d.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert!(msgs[0].starts_with("nested too deeply"));
    assert_eq!(msgs[1], "expected an expression, found end of line");
    assert_eq!(m.body.len(), 3);
    assert_eq!(parser_common::stmt(&m.body[2]), "(= z 2)");
}

#[test]
fn huge_inputs_parse() {
    // (Timing is a benchmark's business, not a test's: a loaded machine must
    // not fail the suite. These inputs finish in well under a second.)
    // ~1 MB of ordinary code.
    let unit = "def f(a, b=1):\n    x = [i * 2 for i in range(a) if i % 3 == 0]\n    return x, {\"k\": b}\n\nprint(f\"{f(10)}\")\n";
    let big: String = unit.repeat(10_000);
    assert!(big.len() > 900_000);
    let (m, d) = parse(FileId(0), &big);
    assert!(d.is_empty());
    assert_eq!(m.body.len(), 20_000);
    // ~1 MB of errors is linear too.
    let bad: String = "x = = (\nif y\n".repeat(50_000);
    let (_, d) = parse(FileId(0), &bad);
    assert!(!d.is_empty());
    // Blocks without bodies, each reported.
    let headers: String = "if x:\n".repeat(100_000);
    let (_, d) = parse(FileId(0), &headers);
    assert!(!d.is_empty());
    // One enormous line.
    let line = format!("x = [{}]", "1, ".repeat(300_000));
    assert!(parse(FileId(0), &line).1.is_empty());
}

#[test]
fn repl_incomplete_inputs() {
    for src in [
        "if x:",
        "if x:\n",
        "if x:\n    y = 1",
        "if x:\n    y = 1\n",
        "def f():\n    return 1\n",
        "for i in range(3):\n    print(i)\n",
        "x = (1,",
        "x = [\n1, 2",
        "f(a,\n",
        "s = \"\"\"abc",
        "s = '''abc\n",
        "x = 1 + \\",
        "@timed",
        "@timed\n",
        "struct P:\n    x: int\n",
        "try:\n    a\nexcept E:\n",
        "d = {'a': 1,",
    ] {
        assert!(is_incomplete(src), "should need more: {src:?}");
    }
    for src in [
        "",
        "x = 1",
        "x = 1\n",
        "print(1)",
        "if x:\n    y = 1\n\n",
        "if x:\n    y = 1\n    \n",
        "if x:\n    y = 1\n\r\n",
        "if x:\n    y = 1\n\n\n",
        "def f():\n    return 1\n\n",
        "if x: y = 1",
        "x = 'abc",
        "x = )",
        "s = \"\"\"abc\"\"\"",
        "x = {}",
        "if x:\n    y\nz = 1\n",
        "# just a comment",
    ] {
        assert!(!is_incomplete(src), "should be complete: {src:?}");
    }
}

#[test]
fn byte_order_mark_is_skipped() {
    let (m, d) = parse(FileId(0), "\u{FEFF}x = 1\n");
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(parser_common::stmt(&m.body[0]), "(= x 1)");
}

/// `cargo test --release -p apsi-core --test parser_robust -- --ignored --nocapture`
#[test]
#[ignore]
fn parse_speed() {
    let unit = "def f(a, b=1):\n    x = [i * 2 for i in range(a) if i % 3 == 0]\n    return x, {\"k\": b}\n\nprint(f\"{f(10)}\")\n";
    let big: String = unit.repeat(10_000);
    let hello = "print(\"hello, world\")\n";
    let t = Instant::now();
    for _ in 0..1000 {
        let _ = parse(FileId(0), hello);
    }
    let per_hello = t.elapsed().as_secs_f64() / 1000.0;
    let t = Instant::now();
    let _ = parse(FileId(0), &big);
    let secs = t.elapsed().as_secs_f64();
    println!(
        "parse_speed: hello.apsi {:.1} µs; {:.2} MB in {:.1} ms ({:.0} MB/s)",
        per_hello * 1e6,
        big.len() as f64 / 1e6,
        secs * 1e3,
        big.len() as f64 / 1e6 / secs
    );
}

#[test]
#[ignore]
fn parse_speed_parts() {
    for (name, unit) in [
        ("assign", "x = 1\n"),
        ("call", "print(a, b)\n"),
        ("fstr", "f\"{x}\"\n"),
        ("def", "def f(a):\n    return a\n"),
        ("comp", "[i for i in y]\n"),
    ] {
        let big = unit.repeat(1_000_000 / unit.len());
        let t = Instant::now();
        let l = apsi_core::syntax::lexer::lex(FileId(0), &big);
        let lt = t.elapsed().as_secs_f64();
        drop(l);
        let t = Instant::now();
        let _ = parse(FileId(0), &big);
        let pt = t.elapsed().as_secs_f64();
        println!("{name}: lex {:.1} ms, parse {:.1} ms", lt * 1e3, pt * 1e3);
    }
}

#[test]
#[ignore]
fn parse_speed_assign() {
    let big = "x = 1\n".repeat(166_000);
    for _ in 0..5 {
        let t = Instant::now();
        let r = parse(FileId(0), &big);
        let pt = t.elapsed().as_secs_f64();
        let t = Instant::now();
        drop(r);
        println!(
            "assign: parse {:.1} ms, drop {:.1} ms",
            pt * 1e3,
            t.elapsed().as_secs_f64() * 1e3
        );
    }
}

#[test]
fn deeply_nested_fstrings_do_not_crash() {
    for q in ["\"", "'"] {
        let src = format!(
            "x = {}x{}",
            format!("f{q}{{").repeat(3_000),
            format!("}}{q}").repeat(3_000)
        );
        let _ = parse(FileId(0), &src);
        let _ = is_incomplete(&src);
    }
    let src = format!("x = f\"{}\"", "{x:{".repeat(100_000));
    nested_too_deeply(&src);
    let nested = "f\"{f'{f\"{f'{x}'}\"}'}\"";
    assert!(parse(FileId(0), nested).1.is_empty());
}

#[test]
fn long_elif_chains() {
    let mut src = String::from("if a:\n    pass\n");
    src.push_str(&"elif b:\n    pass\n".repeat(500));
    src.push_str("else:\n    pass\n");
    let (m, d) = parse(FileId(0), &src);
    assert!(d.is_empty());
    assert_eq!(m.body.len(), 1);
    let mut src = String::from("if a:\n    pass\n");
    src.push_str(&"elif b:\n    pass\n".repeat(100_000));
    nested_too_deeply(&src);
}
