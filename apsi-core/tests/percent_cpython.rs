//! Differential test of printf-style `%` against CPython: a generated table
//! of (format, arguments) cases is formatted by Apsi and by `python3`, and
//! every result (text, or error kind and message) must agree.
//!
//! Skipped, with a message, when `python3` is not on the PATH. Values whose
//! text differs between the languages on purpose (`true`/`none` under `%s`
//! and `%r`) are not in the table.

use apsi_core::format::percent::percent_format;
use apsi_core::format::{float_repr, quote_str};
use apsi_core::value::dict::DictMap;
use apsi_core::value::{HashKey, Value};
use std::io::Write;
use std::process::{Command, Stdio};

/// `v` as Python source.
fn py(v: &Value) -> String {
    match v {
        Value::None => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) if f.is_nan() => "float('nan')".into(),
        Value::Float(f) if f.is_infinite() => if *f > 0.0 { "float('inf')" } else { "float('-inf')" }.into(),
        Value::Float(f) => float_repr(*f),
        Value::Str(s) => quote_str(s.as_str()),
        Value::Tuple(t) => {
            let parts: Vec<String> = t.0.iter().map(py).collect();
            if parts.is_empty() {
                "()".into()
            } else {
                format!("({},)", parts.join(", "))
            }
        }
        Value::List(l) => {
            let parts: Vec<String> = l.items.read().iter().map(py).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Dict(d) => {
            let parts: Vec<String> = d
                .map
                .read()
                .iter()
                .map(|(k, v)| format!("{}: {}", py(k.value()), py(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        other => panic!("no Python form for {}", other.type_name()),
    }
}

/// One result line: `OK text` or `ERR Kind: message`, with `\` and
/// newlines escaped so each result is one line.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\n', "\\n").replace('\r', "\\r")
}

fn apsi(fmt: &str, args: &Value) -> String {
    match percent_format(fmt, args) {
        Ok(Value::Str(s)) => format!("OK {}", escape(s.as_str())),
        Ok(other) => format!("OK? {}", other.type_name()),
        Err(e) => format!("ERR {}: {}", e.kind.name(), escape(&e.message)),
    }
}

const PY_DRIVER: &str = r#"
import sys
def esc(s):
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
out = []
for fmt, args in CASES:
    try:
        out.append("OK " + esc(fmt % args))
    except (TypeError, ValueError, OverflowError, KeyError) as e:
        msg = str(e)
        out.append("ERR %s: %s" % (type(e).__name__, esc(msg)))
sys.stdout.write("\n".join(out) + "\n")
"#;

fn cases() -> Vec<(String, Value)> {
    let ints = [0i64, 1, -1, 7, 42, -42, 255, 123456789, i64::MAX, i64::MIN];
    #[allow(clippy::approx_constant)] // 3.14159 is an input to format, not π
    let floats = [
        0.0,
        -0.0,
        0.5,
        1.5,
        -2.5,
        2.675,
        3.14159,
        1.0 / 3.0,
        0.000123,
        1e-10,
        123456789.0,
        1e16,
        1e100,
        -1.005,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    let strs = ["", "a", "héllo", "it's", "tab\there"];
    let flags = ["", "-", "+", " ", "0", "#", "-0", "+0", "#0", "- ", "+#", "-#0"];
    let widths = ["", "1", "8"];
    let precs = ["", ".0", ".1", ".3", ".12"];
    let mut out = Vec::new();
    for f in flags {
        for w in widths {
            for p in precs {
                let spec = |c: char| format!("[%{f}{w}{p}{c}]");
                for c in ['d', 'i', 'u', 'o', 'x', 'X'] {
                    for i in ints {
                        out.push((spec(c), Value::Int(i)));
                    }
                    out.push((spec(c), Value::Bool(true)));
                    for x in [3.99, -3.99, 0.5] {
                        out.push((spec(c), Value::Float(x)));
                    }
                }
                for c in ['e', 'E', 'f', 'F', 'g', 'G'] {
                    for x in floats {
                        out.push((spec(c), Value::Float(x)));
                    }
                    out.push((spec(c), Value::Int(42)));
                    out.push((spec(c), Value::Int(-7)));
                }
                for c in ['s', 'r', 'a'] {
                    for s in strs {
                        out.push((spec(c), Value::str(s)));
                    }
                    out.push((spec(c), Value::Int(-5)));
                    out.push((spec(c), Value::Float(2.5)));
                    out.push((spec(c), Value::Float(1e16)));
                    out.push((
                        spec(c),
                        Value::tuple(vec![Value::tuple(vec![Value::Int(1), Value::str("x")])]),
                    ));
                    out.push((spec(c), Value::list(vec![Value::Float(0.1), Value::str("q")])));
                }
                for v in [Value::Int(72), Value::Int(0x263A), Value::str("i")] {
                    out.push((spec('c'), v));
                }
            }
        }
    }
    let mut m = DictMap::new();
    m.insert(HashKey::new(Value::str("name")).unwrap(), Value::str("Ann"));
    m.insert(HashKey::new(Value::str("n")).unwrap(), Value::Int(7));
    let d = Value::dict(m);
    let t = |v: Vec<Value>| Value::tuple(v);
    let fixed: Vec<(&str, Value)> = vec![
        ("%(name)s is %(n)05d", d.clone()),
        ("%(name)-6s|%(n)x", d.clone()),
        ("%(missing)s", d.clone()),
        ("%s", d.clone()),
        ("no fields", d.clone()),
        ("%(name", d),
        ("%(a)s", Value::Int(1)),
        ("%d %d", t(vec![Value::Int(1)])),
        ("%d", t(vec![Value::Int(1), Value::Int(2)])),
        ("x", Value::Int(1)),
        ("x", t(vec![])),
        ("x", Value::list(vec![])),
        ("%s %s", Value::Int(1)),
        ("%d", Value::str("x")),
        ("%i", Value::list(vec![])),
        ("%x", Value::Float(1.5)),
        ("%o", Value::str("8")),
        ("%f", Value::str("x")),
        ("%e", t(vec![t(vec![])])),
        ("%c", Value::str("ab")),
        ("%c", Value::Float(65.0)),
        ("%c", Value::Int(-1)),
        ("%c", Value::Int(0x110000)),
        ("%y", Value::Int(1)),
        ("ab%Z", Value::Int(1)),
        ("%y", t(vec![])),
        ("%", t(vec![])),
        ("abc %5", Value::Int(1)),
        ("%%", t(vec![])),
        ("%5%", Value::Int(1)),
        ("%-%", t(vec![])),
        ("100%% of %s", Value::str("it")),
        ("%ld|%hd|%Lf", t(vec![Value::Int(1), Value::Int(2), Value::Float(3.0)])),
        ("%d", Value::Float(f64::NAN)),
        ("%d", Value::Float(f64::INFINITY)),
        ("%s", t(vec![])),
        ("%s", t(vec![Value::Int(1)])),
        ("%s|%r", t(vec![Value::str("é\n"), Value::str("é\n")])),
        ("%.2s|%.0r", t(vec![Value::str("héllo"), Value::str("x")])),
        ("%-+6d|%+-6d", t(vec![Value::Int(3), Value::Int(-3)])),
    ];
    out.extend(fixed.into_iter().map(|(f, v)| (f.to_string(), v)));
    out
}

#[test]
fn percent_formatting_matches_cpython() {
    let cases = cases();
    let mut script = String::from("CASES = [\n");
    for (fmt, args) in &cases {
        script.push_str(&format!("    ({}, {}),\n", quote_str(fmt), py(args)));
    }
    script.push_str("]\n");
    script.push_str(PY_DRIVER);
    let child = Command::new("python3")
        .arg("-")
        .env("PYTHONIOENCODING", "utf-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            eprintln!("skipping the CPython comparison of % formatting: cannot run python3 ({e})");
            return;
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .expect("cannot write the case table to python3");
    }
    let out = child.wait_with_output().expect("python3 did not finish");
    assert!(
        out.status.success(),
        "python3 failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("python3 wrote invalid UTF-8");
    let expected: Vec<&str> = text.lines().collect();
    assert_eq!(
        expected.len(),
        cases.len(),
        "python3 gave {} results for {} cases",
        expected.len(),
        cases.len()
    );
    let mut bad = Vec::new();
    for ((fmt, args), want) in cases.iter().zip(&expected) {
        let got = apsi(fmt, args);
        if got != *want {
            bad.push(format!(
                "{} % {}\n  python: {want}\n  apsi:   {got}",
                quote_str(fmt),
                py(args)
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} cases differ from CPython:\n{}",
        bad.len(),
        cases.len(),
        bad.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn arg() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::None),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::Int),
            any::<f64>().prop_map(Value::Float),
            "[a-zé%]{0,3}".prop_map(Value::str),
            proptest::collection::vec(any::<u8>(), 0..3).prop_map(Value::bytes),
        ];
        leaf.prop_recursive(2, 8, 4, |inner| {
            proptest::collection::vec(inner, 0..4).prop_map(Value::tuple)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// Any format string with any arguments formats or raises; it never panics.
        #[test]
        fn percent_never_panics(fmt in "[%()a-z0-9.#+ -]{0,12}", args in arg()) {
            let _ = percent_format(&fmt, &args);
        }
    }
}
