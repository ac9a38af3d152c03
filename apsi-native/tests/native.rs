//! End-to-end tests of `@native` through the LLVM plugin.

mod common;
use common::{run_file, run_src};

#[test]
fn differential_corpus_agrees_bit_for_bit() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/native/differential.apsi");
    let (out, err) = run_file(&path, 2);
    assert!(err.is_none(), "the corpus failed: {err:?}\n{out}");
    let last = out.lines().last().unwrap_or("");
    assert!(out.lines().all(|l| !l.starts_with("MISMATCH")), "{out}");
    assert!(last.ends_with(" 0 mismatches"), "{last}");
    let nfuncs: usize = last.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(nfuncs >= 30, "only {nfuncs} functions in the corpus");
}

#[test]
fn conformance_17_native() {
    let (out, err) = run_src(
        "c17",
        "@native\ndef sum_half(n: int) -> float:\n    s = 0.0\n    for i in range(n):\n        s += i * 0.5\n    return s\n\nprint(sum_half(1000))\n\n@native\ndef saxpy(a: float, x: Tensor[N, f64], y: Tensor[N, f64]) -> Tensor[N, f64]:\n    out = zeros((len(x),))\n    parallel for i in range(len(x)):\n        out[i] = a * x[i] + y[i]\n    return out\n\nprint(saxpy(2.0, tensor([1.0, 2.0]), tensor([0.5, 0.5])))\n",
    );
    assert_eq!(err, None);
    assert_eq!(out, "249750.0\ntensor([2.5, 4.5])\n");
}

#[test]
fn unsupported_construct_is_a_native_error_naming_it_and_its_line() {
    let (out, err) = run_src("c29", "@native\ndef bad(n: int) -> int:\n    d = {\"a\": n}\n    return d[\"a\"]\n\nprint(\"before\")\nprint(bad(1))\n");
    assert_eq!(out, "before\n");
    let err = err.unwrap_or_default();
    assert!(err.contains("NativeError") && err.contains("dict"), "{err}");
    assert!(err.contains(":3:"), "the error should point at line 3: {err}");
}

#[test]
fn index_errors_carry_the_apsi_line_and_no_check_is_silently_dropped() {
    let (_, err) = run_src(
        "idx",
        "@native\ndef at(x, i):\n    s = 0.0\n    s += x[i]\n    return s\n\nprint(at(zeros((3,)), 5))\n",
    );
    let err = err.unwrap_or_default();
    assert!(
        err.contains("IndexError") && err.contains("index 5 is out of bounds for axis 0 with size 3"),
        "{err}"
    );
    assert!(err.contains(":4:"), "{err}");
}

#[test]
fn int_overflow_and_division_by_zero_raise_as_in_the_interpreter() {
    let (_, err) = run_src("ovf", "@native\ndef f(a):\n    return a * a\n\nprint(f(4000000000))\n");
    assert!(err.unwrap_or_default().contains("OverflowError"));
    let (_, err) = run_src("zde", "@native\ndef f(a, b):\n    return a / b\n\nprint(f(1.0, 0.0))\n");
    assert!(err.unwrap_or_default().contains("ZeroDivisionError"));
}

#[test]
fn type_changes_between_paths_are_named() {
    let (_, err) = run_src(
        "conflict",
        "@native\ndef f(n):\n    s = 0\n    for i in range(n):\n        s = s + 0.5\n    return s\n\nprint(f(3))\n",
    );
    let err = err.unwrap_or_default();
    assert!(err.contains("NativeError") && err.contains("different types"), "{err}");
}

#[test]
fn tuples_recursion_and_native_calls() {
    let (out, err) = run_src(
        "rec",
        "@native\ndef fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\n@native\ndef both(n):\n    return fib(n), fib(n + 1) * 1.5\n\nprint(both(20))\n",
    );
    assert_eq!(err, None);
    assert_eq!(out, "(6765, 16419.0)\n");
}

#[test]
fn fastmath_and_boundscheck_options() {
    let (out, err) = run_src(
        "opts",
        "@native(fastmath=true, boundscheck=false)\ndef s(x):\n    t = 0.0\n    for i in range(len(x)):\n        t += x[i]\n    return t\n\nprint(s(ones((1000,))))\n",
    );
    assert_eq!(err, None);
    assert_eq!(out, "1000.0\n");
    let (_, err) = run_src("badopt", "@native(fast=true)\ndef s(x):\n    return x\n\nprint(s(1))\n");
    assert!(err.unwrap_or_default().contains("TypeError"));
}

#[test]
fn runaway_native_recursion_is_a_recursion_error_not_a_crash() {
    let (_, err) = run_src("deep", "@native\ndef down(n):\n    if n == 0:\n        return 0\n    return down(n - 1) + 1\n\nprint(down(10000000))\n");
    assert!(err.unwrap_or_default().contains("RecursionError"));
    let (out, err) = run_src(
        "ok",
        "@native\ndef down(n):\n    if n == 0:\n        return 0\n    return down(n - 1) + 1\n\nprint(down(1000))\n",
    );
    assert_eq!((out.as_str(), err), ("1000\n", None));
}
