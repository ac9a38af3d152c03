//! Differential tests against CPython and NumPy: `tests/differential/gen.py`
//! draws expressions from what Apsi promises to compute as they do, with
//! fixed seeds; CPython (or NumPy, with `--numpy`) evaluates them, the real
//! `apsi` binary runs the same cases, and every line must agree.
//! - CPython: int and float arithmetic, int / int, round, divmod,
//!   formatting, int()/float() of strings, string methods and slicing,
//!   list built-ins. Skipped (with a note) without `python3`.
//! - NumPy: tensor arithmetic and comparisons (NumPy 2's promotion with
//!   plain numbers), reductions, matrix products, roll, bincount,
//!   logaddexp, softplus (PyTorch's formula in NumPy) and `x.norm()`.
//!   Skipped (with a note) when NumPy is not installed.

use std::path::Path;
use std::process::Command;

const SEEDS: [u64; 4] = [1, 2, 3, 4];
const CASES_PER_SEED: usize = 1500;

fn python_with(import: &str) -> bool {
    Command::new("python3")
        .args([
            "-c",
            &format!("import sys; {import}; sys.exit(sys.version_info < (3, 8))"),
        ])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs every seed through gen.py (with `extra` arguments) and apsi;
/// returns the cases that differ.
fn differences(extra: &[&str]) -> Vec<String> {
    let gen = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/differential/gen.py");
    let mut failures = Vec::new();
    for seed in SEEDS {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let g = Command::new("python3")
            .arg(&gen)
            .args([seed.to_string(), CASES_PER_SEED.to_string()])
            .arg(out)
            .args(extra)
            .output()
            .unwrap();
        assert!(
            g.status.success(),
            "gen.py failed: {}",
            String::from_utf8_lossy(&g.stderr)
        );
        let run = Command::new(env!("CARGO_BIN_EXE_apsi"))
            .args(["run", out.join("cases.apsi").to_str().unwrap()])
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "seed {seed}: apsi failed: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let cases = std::fs::read_to_string(out.join("cases.txt")).unwrap();
        let expected = std::fs::read_to_string(out.join("expected.txt")).unwrap();
        let got = String::from_utf8_lossy(&run.stdout).into_owned();
        let (cases, expected, got): (Vec<&str>, Vec<&str>, Vec<&str>) = (
            cases.lines().collect(),
            expected.lines().collect(),
            got.lines().collect(),
        );
        assert_eq!(got.len(), expected.len(), "seed {seed}: one line per case");
        for ((c, e), g) in cases.iter().zip(&expected).zip(&got) {
            if !agrees(e, g) {
                failures.push(format!("seed {seed}: {c}\n    expected: {e}\n    Apsi:     {g}"));
            }
        }
    }
    failures
}

/// Whether Apsi's line `got` matches the expected line: exactly, or for an
/// expected line marked `~` (results through exp/log, whose last bit NumPy's
/// SIMD functions and the C library round differently), the same text with
/// every number within 1e-12 relative (NaN matching NaN).
fn agrees(expected: &str, got: &str) -> bool {
    let Some(approx) = expected.strip_prefix('~') else {
        return expected == got;
    };
    let split = |s: &str| -> Vec<String> {
        s.split(['[', ']', ',', ' ', '(', ')'])
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()
    };
    let (e, g) = (split(approx), split(got));
    let shape = |s: &str| s.chars().filter(|c| "[](),".contains(*c)).collect::<String>();
    e.len() == g.len()
        && shape(approx) == shape(got)
        && e.iter().zip(&g).all(|(a, b)| {
            a == b
                || match (a.parse::<f64>(), b.parse::<f64>()) {
                    (Ok(x), Ok(y)) => (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-12 * x.abs(),
                    _ => false,
                }
        })
}

fn report(failures: &[String], against: &str, extra: &str) {
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from {against} (reproduce: python3 tests/differential/gen.py SEED {CASES_PER_SEED} DIR{extra}):\n{}",
        failures.len(),
        SEEDS.len() * CASES_PER_SEED,
        failures.iter().take(30).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn apsi_agrees_with_cpython_on_generated_cases() {
    if !python_with("pass") {
        eprintln!("differential test skipped: python3 (3.8 or newer) is not installed");
        return;
    }
    report(&differences(&[]), "CPython", "");
}

#[test]
fn apsi_agrees_with_numpy_on_generated_tensor_cases() {
    if !python_with("import numpy") {
        eprintln!("NumPy differential test skipped: NumPy is not installed (pip install numpy)");
        return;
    }
    report(&differences(&["--numpy"]), "NumPy", " --numpy");
}
