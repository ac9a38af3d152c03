//! Programs that must fail with an Apsi error (never a Rust panic).

#![allow(clippy::result_large_err)]

mod vm_common;

use vm_common::error;

#[test]
fn bad_programs_raise_errors() {
    let cases: &[(&str, &str)] = &[
        ("for x in 5:\n    pass\n", "TypeError"),
        ("a, b = 1\n", "TypeError"),
        ("def f(**k):\n    return k\nf(**5)\n", "TypeError"),
        ("x = [*5]\n", "TypeError"),
        ("x = {**[1]}\n", "TypeError"),
        ("x = [1, 2][1:2:0]\n", "ValueError"),
        ("for i in range(1, 5, 0):\n    pass\n", "ValueError"),
        ("for i in range(1.5):\n    pass\n", "TypeError"),
        ("x = 1..2.5\n", "TypeError"),
        ("x = undefined + 1\n", "NameError"),
        ("def f():\n    return g()\nf()\n", "NameError"),
        ("x = {}\nx[[1]] = 2\n", "TypeError"),
        ("raise\n", "Error"),
        ("try:\n    1 / 0\nexcept 5:\n    pass\n", "TypeError"),
        ("struct P:\n    x: int\nP('s')\n", "TypeError"),
        ("struct P:\n    x: int\nP(1).y\n", "AttributeError"),
        ("x = -9223372036854775807 - 1\ny = -x\n", "OverflowError"),
        ("x = 2 ** 64\n", "OverflowError"),
        ("ValueError('a', 'b')\n", "TypeError"),
        ("f = lambda: 1\nf(1)\n", "TypeError"),
        ("print(*1)\n", "TypeError"),
        ("assert 1 > 2, 'no'\n", "AssertionError"),
        ("x = 'a' * 'b'\n", "TypeError"),
        ("with 5:\n    pass\n", "AttributeError"),
    ];
    for (src, kind) in cases {
        let (k, m) = error(src);
        assert_eq!(&k, kind, "{src:?} gave {k}: {m}");
        assert!(!m.is_empty() || *kind == "AssertionError", "{src:?}: empty message");
    }
}
