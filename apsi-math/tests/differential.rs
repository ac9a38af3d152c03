//! `use math` against CPython's `math` (`python3` on PATH): every function
//! over a table of inputs (special values, domain edges, random floats),
//! results and error kinds/messages identical. The program text is shared;
//! only the header differs. Skipped, with a message, when python3 is absent.
//! (Int results past 64 bits, where Apsi raises and Python does not, are
//! left to the unit tests.)

use apsi_testkit::Program;
use std::io::Write;
use std::process::{Command, Stdio};

const APSI_HEAD: &str = "use math
def show(f, *a, **kw):
    try:
        r = f(*a, **kw)
    except Error as e:
        print(e.kind, e.message)
        return
    print(r)
";

const PY_HEAD: &str = "import math
def show(f, *a, **kw):
    try:
        r = f(*a, **kw)
    except Exception as e:
        print(type(e).__name__, e)
        return
    print(r)
";

const SPECIAL: &[&str] = &[
    "0.0",
    "-0.0",
    "0.5",
    "-0.5",
    "1.0",
    "-1.0",
    "2.0",
    "1e-10",
    "3.7",
    "-3.7",
    "10.0",
    "100.0",
    "1e300",
    "-1e300",
    "710.0",
    "-710.0",
    "1e-310",
    "5e-324",
    "math.inf",
    "-math.inf",
    "math.nan",
    "0.1",
    "2.5",
    "-2.5",
    "7",
    "-7",
    "0",
    "1",
    "1000",
    "0.9999999999999999",
    "1.0000000000000002",
    "math.pi",
    "-math.pi / 2",
    "1e16",
    "123456789",
];

const UNARY: &[&str] = &[
    "sqrt", "exp", "expm1", "log", "log2", "log10", "log1p", "fabs", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "degrees", "radians", "isnan", "isinf", "isfinite",
];

const BINARY: &[&str] = &["pow", "fmod", "copysign", "atan2", "log", "hypot", "isclose"];

/// splitmix64, for the random inputs.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// A finite float of a random magnitude and sign, as source text.
    fn float(&mut self) -> String {
        let mant = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        let exp = (self.next() % 40) as i32 - 20;
        let sign = if self.next().is_multiple_of(2) { 1.0 } else { -1.0 };
        format!("{:?}", sign * mant * 2f64.powi(exp))
    }
}

fn program(g: &mut Gen) -> String {
    let mut xs: Vec<String> = SPECIAL.iter().map(|s| s.to_string()).collect();
    for _ in 0..60 {
        xs.push(g.float());
    }
    let mut b = String::new();
    b.push_str(&format!("X = [{}]\n", xs.join(", ")));
    b.push_str("print(math.pi, math.e, math.tau, math.inf, math.nan)\n");
    for f in UNARY {
        b.push_str(&format!("for x in X:\n    show(math.{f}, x)\n"));
    }
    for f in ["floor", "ceil", "trunc"] {
        b.push_str(&format!(
            "for x in X:\n    if not (abs(x) >= 1e18):\n        show(math.{f}, x)\n"
        ));
    }
    // Pairs: every special value with a few, and random pairs.
    let few = [
        "0.0",
        "-0.0",
        "1.0",
        "-1.0",
        "2.0",
        "0.5",
        "3",
        "-3",
        "math.inf",
        "-math.inf",
        "math.nan",
        "1e300",
    ];
    b.push_str(&format!("Y = [{}]\n", few.join(", ")));
    for f in BINARY {
        b.push_str(&format!("for x in X:\n    for y in Y:\n        show(math.{f}, x, y)\n"));
        b.push_str(&format!(
            "for i in range(len(X) - 1):\n    show(math.{f}, X[i], X[i + 1])\n"
        ));
    }
    b.push_str("for i in range(len(X) - 2):\n    show(math.hypot, X[i], X[i + 1], X[i + 2])\n");
    b.push_str("show(math.hypot)\nshow(math.hypot, -3)\nshow(math.hypot, 5e-324, 5e-324)\nshow(math.hypot, 1e-320, 3e-320, 2e-321)\n");
    b.push_str("show(math.isclose, 1.0, 1.05, rel_tol=0.1)\nshow(math.isclose, 0.0, 1e-12, abs_tol=1e-9)\n");
    b.push_str("show(math.isclose, 1.0, 1.0, rel_tol=-1.0)\n");
    // fsum and prod over lists of random magnitudes, and CPython's classics.
    for _ in 0..40 {
        let n = 1 + g.next() % 30;
        let items: Vec<String> = (0..n).map(|_| g.float()).collect();
        b.push_str(&format!("show(math.fsum, [{}])\n", items.join(", ")));
        b.push_str(&format!(
            "show(math.prod, [{}])\n",
            items[..(n as usize).min(6)].join(", ")
        ));
    }
    for l in [
        "[0.1] * 10",
        "[1e100, 1.0, -1e100]",
        "[1e-16, 1.0, 1e16]",
        "[]",
        "[math.inf, -math.inf]",
        "[1e308, 1e308]",
        "[math.inf, 1.0]",
        "[math.nan, 1.0]",
        "[1, 2, 3]",
        "range(10)",
        "[-0.0]",
        "[1e308, -1e308, 1e308]",
    ] {
        b.push_str(&format!("show(math.fsum, {l})\n"));
    }
    b.push_str("show(math.prod, [1, 2, 3, 4])\nshow(math.prod, [])\nshow(math.prod, range(1, 6), start=2)\nshow(math.prod, [1.5, 2])\n");
    // Ints.
    b.push_str("for n in range(-2, 21):\n    show(math.factorial, n)\n    show(math.isqrt, n * n * n + 7)\n");
    b.push_str("for n in [0, 1, 5, 10, 30, 60, 61, 62]:\n    for k in [-1, 0, 1, 2, 5, 29, 30, 31, 60, 70]:\n        if n <= 60 or k <= 20 or k >= n - 3:\n            show(math.comb, n, k)\n");
    b.push_str("for n in [0, 1, 5, 10, 19]:\n    for k in [-1, 0, 1, 2, 5, 19, 20]:\n        show(math.perm, n, k)\n    show(math.perm, n)\n");
    b.push_str("show(math.isqrt, 9223372036854775807)\nshow(math.isqrt, -1)\nshow(math.isqrt, 2.0)\n");
    b.push_str("show(math.gcd)\nshow(math.gcd, 12, 18)\nshow(math.gcd, -12, 18, 8)\nshow(math.gcd, 0, 0)\nshow(math.gcd, 1.5)\n");
    b.push_str("show(math.lcm)\nshow(math.lcm, 4, 6, 10)\nshow(math.lcm, -4, 6)\nshow(math.lcm, 0, 5)\nshow(math.lcm, 3037000499, 3037000493)\n");
    b.push_str("show(math.factorial, 2.0)\nshow(math.sqrt, \"a\")\nshow(math.log, 1, 1)\nshow(math.log, 0, 10)\n");
    b.push_str("show(math.log, 1000, 10)\nshow(math.log, 8, 2)\nshow(math.log, 2, 0.5)\nshow(math.log, 7)\n");
    b
}

fn python(src: &str) -> Option<String> {
    let mut child = Command::new("python3")
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(src.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    assert!(
        out.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Apsi spells the bools `true` / `false`.
    Some(
        String::from_utf8_lossy(&out.stdout)
            .replace("True", "true")
            .replace("False", "false"),
    )
}

#[test]
fn same_results_as_cpython() {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: python3 is not on PATH, so there is no CPython to compare with");
        return;
    }
    let mut g = Gen(0x00ca_11ab);
    let body = program(&mut g);
    let o = Program::new("mathdiff", &format!("{APSI_HEAD}{body}"))
        .modules(vec![apsi_math::module()])
        .run();
    if let Some(e) = o.rendered_error() {
        panic!("the Apsi program failed:\n{e}");
    }
    let theirs = python(&format!("{PY_HEAD}{body}")).unwrap_or_default();
    let (a, b): (Vec<&str>, Vec<&str>) = (o.out.lines().collect(), theirs.lines().collect());
    let diffs: Vec<String> = a
        .iter()
        .zip(&b)
        .enumerate()
        .filter(|(_, (x, y))| x != y)
        .map(|(i, (x, y))| format!("line {}: apsi {x:?} cpython {y:?}", i + 1))
        .collect();
    assert!(diffs.is_empty(), "{} differences:\n{}", diffs.len(), diffs.join("\n"));
    assert_eq!(a.len(), b.len(), "output lengths differ");
    assert!(a.len() > 3000, "too little output: {}", a.len());
}
