//! Checks float repr, f32 repr and the format mini-language against the
//! outputs CPython produced (tests/fixtures/format/cases.tsv, made by
//! gen_format_cases.py in the same folder). Runs without Python.

use apsi_core::format::{f32_repr, float_repr, format_value};
use apsi_core::value::Value;

fn decode(v: &str) -> Value {
    if let Some(i) = v.strip_prefix("i:") {
        return Value::Int(i.parse().expect("int in fixture"));
    }
    if let Some(h) = v.strip_prefix("f:") {
        return Value::Float(f64::from_bits(u64::from_str_radix(h, 16).expect("hex in fixture")));
    }
    Value::str(v.strip_prefix("s:").expect("value kind in fixture"))
}

#[test]
fn every_fixture_row_matches_python() {
    let text = include_str!("fixtures/format/cases.tsv");
    let mut failures = Vec::new();
    let mut counts = [0usize; 3];
    for (n, line) in text.lines().enumerate() {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 4, "line {} is malformed", n + 1);
        let (kind, value, spec, want) = (cols[0], cols[1], cols[2], cols[3]);
        let got = match kind {
            "repr" => {
                counts[0] += 1;
                float_repr(f64::from_bits(u64::from_str_radix(value, 16).expect("hex")))
            }
            "f32" => {
                counts[1] += 1;
                f32_repr(f32::from_bits(u32::from_str_radix(value, 16).expect("hex")))
            }
            "fmt" => {
                counts[2] += 1;
                match format_value(&decode(value), spec) {
                    Ok(s) => s,
                    Err(e) => format!("!{}", e.kind.name()),
                }
            }
            other => panic!("unknown row kind {other}"),
        };
        if got != want {
            failures.push(format!(
                "line {}: {kind} {value} {spec:?}: got {got:?}, want {want:?}",
                n + 1
            ));
        }
    }
    assert!(counts.iter().all(|c| *c > 1000), "fixture too small: {counts:?}");
    if !failures.is_empty() {
        let shown: Vec<&String> = failures.iter().take(40).collect();
        panic!(
            "{} of {} rows differ from Python:\n{:#?}",
            failures.len(),
            text.lines().count(),
            shown
        );
    }
}
