//! Differential test: set operations whose results do not depend on
//! iteration order (sorted members, lengths, membership, relations) give
//! the same answers in Apsi and CPython. Skipped when no `python3` runs.

use std::fmt::Write as _;
use std::process::Command;

/// xorshift64*: deterministic cases without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A set display of small ints, sometimes with floats and bools that
/// equal ints (`2.0`, `true`), sometimes empty (`set()`).
fn set_literal(rng: &mut Rng) -> String {
    let n = rng.below(7);
    if n == 0 {
        return "set()".into();
    }
    let items: Vec<String> = (0..n)
        .map(|_| {
            let v = rng.below(9) as i64 - 2;
            match rng.below(8) {
                0 => format!("{v}.0"),
                1 if v == 1 => "true".into(),
                1 if v == 0 => "false".into(),
                _ => v.to_string(),
            }
        })
        .collect();
    format!("{{{}}}", items.join(", "))
}

/// The program body (in the common subset of Apsi and Python, with
/// `true`/`false` bound as names for Python).
fn program(cases: usize, seed: u64) -> String {
    let mut rng = Rng(seed);
    // Equal members (`2`, `2.0`) may be represented by either one, which
    // depends on order; `norm` compares the values only.
    let mut src = String::from("def norm(s):\n    return sorted([int(v) for v in s])\n");
    for _ in 0..cases {
        let a = set_literal(&mut rng);
        let b = set_literal(&mut rng);
        let x = rng.below(9) as i64 - 2;
        let _ = writeln!(src, "a = {a}");
        let _ = writeln!(src, "b = {b}");
        let _ = writeln!(
            src,
            "print(norm(a | b), norm(a & b), norm(a - b), norm(b - a), norm(a ^ b))"
        );
        let _ = writeln!(
            src,
            "print(len(a), len(b), len(a | b), 1 if {x} in a else 0, 1 if {x} not in b else 0)"
        );
        let _ = writeln!(
            src,
            "print([1 if r else 0 for r in [a <= b, a < b, a >= b, a > b, a == b, a != b, a.isdisjoint(b), a.issubset(b), a.issuperset(b)]])"
        );
        let _ = writeln!(
            src,
            "print(norm(a.union(b, [{x}])), norm(a.intersection(b)), norm(a.difference(b, [{x}])), norm(a.symmetric_difference(b)))"
        );
        let _ = writeln!(src, "c = set(a)");
        let _ = writeln!(src, "c.update(b)");
        let _ = writeln!(src, "c.discard({x})");
        let _ = writeln!(src, "c.add({x} * 2)");
        let _ = writeln!(
            src,
            "print(norm(c), norm({{v * v for v in c}}), int(sum(c)), 1 if c else 0)"
        );
    }
    src
}

fn python() -> Option<String> {
    let py = std::env::var("APSI_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&py)
        .arg("-c")
        .arg("pass")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    ok.then_some(py)
}

#[test]
fn order_free_set_results_match_cpython() {
    let Some(py) = python() else {
        eprintln!("skipped: no python3");
        return;
    };
    let body = program(150, 0x5EED_5E75);
    let dir = std::env::temp_dir().join(format!("apsi_sets_diff_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let apsi_file = dir.join("sets.apsi");
    let py_file = dir.join("sets.py");
    std::fs::write(&apsi_file, &body).unwrap();
    std::fs::write(&py_file, format!("true, false = True, False\n{body}")).unwrap();
    let apsi = Command::new(env!("CARGO_BIN_EXE_apsi"))
        .arg("run")
        .arg(&apsi_file)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let cpy = Command::new(py).arg(&py_file).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        apsi.status.success(),
        "apsi failed: {}",
        String::from_utf8_lossy(&apsi.stderr)
    );
    assert!(
        cpy.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&cpy.stderr)
    );
    let got = String::from_utf8_lossy(&apsi.stdout);
    // Python spells the bools it prints `True`/`False`.
    let want = String::from_utf8_lossy(&cpy.stdout)
        .replace("True", "true")
        .replace("False", "false");
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "line {} differs", i + 1);
    }
    assert_eq!(got.lines().count(), want.lines().count());
}
