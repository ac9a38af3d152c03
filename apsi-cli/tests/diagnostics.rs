//! The full rendered text of every runtime error kind, as a user sees it on
//! stderr (NO_COLOR), pinned by snapshots. Static diagnostics (syntax, check,
//! Guard) have their own snapshots in apsi-core/tests/check_snapshots.rs.

use std::process::Command;

fn stderr_of(name: &str, program: &str) -> String {
    let dir = std::env::temp_dir().join(format!("apsi-diag-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = format!("{name}.apsi");
    std::fs::write(dir.join(&file), program).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_apsi"))
        .args(["run", &file])
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{name} should fail with status 1");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

macro_rules! runtime_snapshot {
    ($test:ident, $program:expr) => {
        #[test]
        fn $test() {
            insta::assert_snapshot!(stderr_of(stringify!($test), $program));
        }
    };
}

runtime_snapshot!(
    index_error,
    "def get(xs, i):\n    return xs[i]\n\nprint(get([1, 2, 3], 7))\n"
);
runtime_snapshot!(key_error, "ages = {\"ada\": 36}\nprint(ages[\"bob\"])\n");
runtime_snapshot!(type_error_operands, "x = 1 + \"one\"\n");
runtime_snapshot!(
    type_error_call_arity,
    "def f(a, b):\n    return a\n\ng = f\ng(1, 2, 3)\n"
);
runtime_snapshot!(
    type_error_annotation,
    "def g(n: int):\n    return n\n\nv = \"a\"\ng(v)\n"
);
runtime_snapshot!(
    value_error,
    "def check(n):\n    if n < 0:\n        raise ValueError(f\"negative: {n}\")\n\ncheck(-1)\n"
);
runtime_snapshot!(
    zero_division,
    "def ratio(a, b):\n    return a / b\n\nprint(ratio(1.0, 0.0))\n"
);
runtime_snapshot!(overflow, "x = 9223372036854775807\ny = x + 1\n");
runtime_snapshot!(recursion, "def down(n):\n    return down(n + 1)\n\ndown(0)\n");
runtime_snapshot!(attribute_error, "struct P:\n    x: int\n\np = P(1)\nprint(p.y)\n");
runtime_snapshot!(assertion_error, "assert 1 + 1 == 3, \"arithmetic is broken\"\n");
runtime_snapshot!(io_error, "print(read_text(\"/nonexistent/file.txt\"))\n");
runtime_snapshot!(not_implemented, "raise NotImplementedError(\"coming later\")\n");
runtime_snapshot!(value_error_unpack, "a, b = [1]\n");
runtime_snapshot!(
    unbound_local,
    "def last(xs):\n    for x in xs:\n        found = x\n    return found\n\nprint(last([]))\n"
);
runtime_snapshot!(shape_error, "a = zeros((2, 3))\nb = ones((4,))\nc = a + b\n");
runtime_snapshot!(
    generic_error,
    "def fail():\n    raise Error(\"something went wrong\")\n\nfail()\n"
);
runtime_snapshot!(
    native_error,
    "@native\ndef f(x: float) -> float:\n    return print(x)\n\nprint(f(1.0))\n"
);
