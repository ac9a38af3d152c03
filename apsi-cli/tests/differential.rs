//! Differential test against CPython: `tests/differential/gen.py` draws
//! expressions from what Apsi promises to compute as Python does (int and
//! float arithmetic, int / int, round, divmod, formatting, int()/float() of
//! strings, string methods and slicing, list built-ins), with fixed seeds;
//! CPython evaluates them, the real `apsi` binary runs the same cases, and
//! every line must agree. Skipped (with a note) when `python3` is missing.

use std::path::Path;
use std::process::Command;

const SEEDS: [u64; 4] = [1, 2, 3, 4];
const CASES_PER_SEED: usize = 1500;

fn python3() -> Option<&'static str> {
    let ok = Command::new("python3")
        .args(["-c", "import sys; sys.exit(sys.version_info < (3, 8))"])
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some("python3")
}

#[test]
fn apsi_agrees_with_cpython_on_generated_cases() {
    let Some(py) = python3() else {
        eprintln!("differential test skipped: python3 (3.8 or newer) is not installed");
        return;
    };
    let gen = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/differential/gen.py");
    let mut failures = Vec::new();
    for seed in SEEDS {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let g = Command::new(py)
            .arg(&gen)
            .args([seed.to_string(), CASES_PER_SEED.to_string()])
            .arg(out)
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
            if e != g {
                failures.push(format!("seed {seed}: {c}\n    CPython: {e}\n    Apsi:    {g}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from CPython (reproduce: python3 tests/differential/gen.py SEED {CASES_PER_SEED} DIR):\n{}",
        failures.len(),
        SEEDS.len() * CASES_PER_SEED,
        failures.iter().take(30).cloned().collect::<Vec<_>>().join("\n")
    );
}
