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

#[test]
fn wrapping_operations_compile_to_the_interpreters_numbers() {
    let (out, err) = run_src(
        "wrap",
        "@native\ndef h(z: int) -> int:\n    z = wrapping_add(z, -7046029254386353131)\n    z = wrapping_mul(z ^ shr_u(z, 30), -4658895280553007687)\n    z = wrapping_mul(z ^ shr_u(z, 27), -7723592293110705685)\n    return z ^ shr_u(z, 31)\n\n@native\ndef sh(x: int, k: int):\n    return wrapping_shl(x, k), shr_u(x, k), wrapping_sub(x, k)\n\nprint(h(0), h(-7046029254386353131))\nprint(sh(-1, 63), sh(-1, 64), sh(3, 1000), sh(-9223372036854775807 - 1, 1))\n",
    );
    assert_eq!(err, None);
    // splitmix64's first two outputs from state 0: 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4.
    assert_eq!(
        out,
        "-2152535657050944081 7960286522194355700\n(-9223372036854775808, 1, -64) (0, 0, -65) (0, 0, -997) (0, 4611686018427387904, 9223372036854775807)\n"
    );
}

#[test]
fn wrapping_operations_reject_floats_and_tensors_naming_the_argument() {
    let (_, err) = run_src(
        "wf",
        "@native\ndef f(x):\n    return wrapping_add(1, x)\n\nprint(f(1.5))\n",
    );
    let err = err.unwrap_or_default();
    assert!(
        err.contains("NativeError") && err.contains("wrapping_add() of a float (argument 'b' must be an int)"),
        "{err}"
    );
    assert!(err.contains(":3:"), "{err}");
    let (_, err) = run_src(
        "wt",
        "@native\ndef f(x):\n    return shr_u(x, 3)\n\nprint(f(zeros((2,), dtype=i64)))\n",
    );
    let err = err.unwrap_or_default();
    assert!(
        err.contains("NativeError") && err.contains("shr_u() of a 1-d i64 tensor"),
        "{err}"
    );
    let (_, err) = run_src(
        "wn",
        "@native\ndef f(x, k):\n    return shr_u(x, k)\n\nprint(f(8, -1))\n",
    );
    let err = err.unwrap_or_default();
    assert!(err.contains("ValueError: negative shift count"), "{err}");
}

#[test]
fn round_is_pythons_half_to_even_int() {
    let (out, err) = run_src(
        "round",
        "@native\ndef r(x):\n    return round(x)\n\nprint([r(v) for v in [0.5, 1.5, 2.5, -0.5, -1.5, 2.4999999999999996, 1e15 + 0.5, 7, true]])\n",
    );
    assert_eq!(err, None);
    assert_eq!(out, "[0, 2, 2, 0, -2, 2, 1000000000000000, 7, 1]\n");
    let (_, err) = run_src("rnan", "@native\ndef r(x):\n    return round(x)\n\nprint(r(nan))\n");
    assert!(err.unwrap_or_default().contains("ValueError"));
    let (_, err) = run_src("rinf", "@native\ndef r(x):\n    return round(x)\n\nprint(r(-inf))\n");
    assert!(err.unwrap_or_default().contains("OverflowError"));
    let (_, err) = run_src("rnd", "@native\ndef r(x):\n    return round(x, 2)\n\nprint(r(1.5))\n");
    let err = err.unwrap_or_default();
    assert!(
        err.contains("NativeError") && err.contains("round() with ndigits"),
        "{err}"
    );
}

#[test]
fn a_loop_without_its_checks_still_stops_at_the_first_bad_index() {
    // The main loop runs without bounds checks (IRCE); the writes before the
    // bad index happen, the ones after do not, sequentially and in parallel.
    let (out, err) = run_src(
        "irce",
        "@native\ndef fill(out, n: int):\n    for i in range(n):\n        out[i] = i * 2.0\n\n@native\ndef pfill(out, n: int):\n    parallel for i in range(n):\n        for j in range(n):\n            out[i, j] = 1.0 * j\n\nx = zeros((1000,))\ntry:\n    fill(x, 1003)\nexcept IndexError as e:\n    print(e)\nprint(x[0], x[998], x[999])\ny = zeros((4, 997))\ntry:\n    pfill(y, 4)\n    pfill(y, 998)\nexcept IndexError as e:\n    print(e)\nprint(y[0, 996], y[3, 3])\n",
    );
    assert_eq!(err, None);
    assert_eq!(
        out,
        "IndexError: index 1000 is out of bounds for axis 0 with size 1000\n0.0 1996.0 1998.0\nIndexError: index 997 is out of bounds for axis 1 with size 997\n996.0 3.0\n"
    );
}

#[test]
fn only_calls_that_can_recurse_count_towards_the_depth_limit() {
    // f2 calls itself (counted: a RecursionError, not a crash) and a helper
    // (not counted, as the helper called in a loop is not).
    let src = "@native\ndef sq(x):\n    return x * x\n\n@native\ndef total(n):\n    s = 0\n    for i in range(n):\n        s += sq(i)\n    return s\n\n@native\ndef f2(n):\n    if n == 0:\n        return 0\n    return f2(n - 1) + sq(n)\n\nprint(total(100000), f2(3))\nprint(f2(N))\n";
    let (out, err) = run_src("helper", &src.replace("N)", "2000)"));
    assert_eq!(err, None);
    assert_eq!(out, "333328333350000 14\n2668667000\n");
    let (_, err) = run_src("deep", &src.replace("N)", "10000000)"));
    assert!(err.unwrap_or_default().contains("RecursionError"));
}
