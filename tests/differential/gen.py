"""Differential cases against CPython (and NumPy when it is installed).

    python3 gen.py SEED N OUTDIR

writes OUTDIR/cases.apsi (the Apsi program), OUTDIR/expected.txt (what
CPython computes for the same expressions, one line per case) and
OUTDIR/cases.txt (the expressions, for messages). Each case prints its value
(`repr` for strings) or `error:<Kind>`; ints outside 64 bits count as
`error:OverflowError`, as Apsi's ints are 64-bit (LANGUAGE.md).

The generator is seeded, so a failure names a seed that reproduces it. It
draws from what Apsi promises to do as Python does: int and float
arithmetic, comparisons, `round`, `abs`, `divmod`, `min`/`max`, `int()` and
`float()` of strings, string methods and slicing, list built-ins, `%` and
f-string formatting. Known, documented differences are not generated
(bools print as true/false, ints are 64-bit, `x in [x]` with nan).
"""

import math
import os
import random
import sys

I64 = (-(2**63), 2**63 - 1)


def small_int(r):
    return r.choice([0, 1, -1, 2, -2, 3, 7, -7, 10, 255, -256, 1000, 12345, -99999, 2**31, -(2**31), 2**53 + 1, 2**62, -(2**62), 2**63 - 1, -(2**63) + 1, r.randint(-10**6, 10**6), r.randint(-2**62, 2**62)])


def small_float(r):
    return r.choice([0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 0.1, 1e-7, 1e16, -1e300, 3.14159, 2.675, 1/3, r.uniform(-1000, 1000), r.uniform(-1, 1), float(r.randint(-100, 100))])


def lit(v):
    if isinstance(v, float):
        if math.isinf(v):
            return "inf" if v > 0 else "(-inf)"
        if math.isnan(v):
            return "nan"
        return "(" + repr(v) + ")"
    if isinstance(v, int):
        return "(" + repr(v) + ")"
    return repr(v)


WORDS = ["", "a", "abc", "Hello World", "  padded  ", "x,y,,z", "MiXeD cAsE", "123", "-42", "3.5", "a-b_c d", "tab\tsep", "ünïcödé", "straße",
         "本c", "ß", "ﬁx ﬂy", "ZΣ-", "ǅ", "ΣΑΣ ΟΔΟΣ", "ǆa ǉb", "o'neil mc-d", "ﬀ Ǉ", "İstanbul", "ŉ", "x²y"]


def case(r):
    kind = r.randrange(9)
    if kind == 0:
        a, b = small_int(r), small_int(r)
        op = r.choice(["+", "-", "*", "//", "%", "/", "<", "<=", "==", "!=", "&", "|", "^"])
        return f"{lit(a)} {op} {lit(b)}"
    if kind == 1:
        a = r.choice([small_int(r), small_float(r)])
        b = r.choice([small_int(r), small_float(r)])
        op = r.choice(["+", "-", "*", "/", "//", "%", "<", "=="])
        return f"{lit(a)} {op} {lit(b)}"
    if kind == 2:
        a = r.randint(-20, 20)
        e = r.randint(0, 70)
        return f"{lit(a)} ** {e}"
    if kind == 3:
        f = r.choice(["abs", "round", "int", "float", "str"])
        x = r.choice([small_int(r), small_float(r)])
        if f == "round" and r.random() < 0.6:
            n = r.randint(-5, 6)
            if isinstance(x, int):
                # LANGUAGE.md: round(int, n) is a float in Apsi.
                return (f"round({lit(x)}, {n})", f"float(round({lit(x)}, {n}))")
            return f"round({lit(x)}, {n})"
        if f == "int" and isinstance(x, float) and abs(x) > 1e18:
            x = 1.5
        return f"{f}({lit(x)})"
    if kind == 4:
        s = r.choice(WORDS + ["  17 ", "-0", "1_000", "0x1f", "1e3", "inf", "-nan", " 2.5e-3 ", "abc", "١٢", "１２"])
        f = r.choice(["int", "float"])
        return f"{f}({lit(s)})"
    if kind == 5:
        s = r.choice(WORDS)
        m = r.choice(["upper()", "lower()", "strip()", "split()", "split(',')", "replace('a', 'X')", "find('b')", "startswith('a')", "count('a')", "isdigit()", "isalpha()", "title()", "capitalize()", "swapcase()", "islower()", "isupper()", "isalnum()", "isspace()", "lower().title()", "upper().capitalize()", "zfill(6)", "center(9, '*')", "ljust(5)", "rjust(5, '.')", "partition(' ')", "rstrip('d ')"])
        return f"{lit(s)}.{m}"
    if kind == 6:
        s = r.choice(WORDS)
        i, j = r.randint(-6, 6), r.randint(-6, 6)
        st = r.choice([1, 2, -1, -2])
        return r.choice([f"{lit(s)}[{i}:{j}]", f"{lit(s)}[::{st}]", f"len({lit(s)})", f"{lit(s)} * {r.randint(0, 3)}", f"{lit(s)} + {lit(r.choice(WORDS))}"])
    if kind == 7:
        xs = [r.choice([small_int(r), r.randint(-9, 9)]) for _ in range(r.randint(0, 6))]
        f = r.choice(["sorted", "sum", "min", "max", "len", "list(reversed", "divmod"])
        if f == "divmod":
            return f"divmod({lit(small_int(r))}, {lit(r.choice([3, -3, 7, -7, 0, 1000]))})"
        if f == "list(reversed":
            return f"list(reversed({xs!r}))"
        if f == "sorted" and r.random() < 0.5:
            return f"sorted({xs!r}, reverse=True)"
        return f"{f}({xs!r})"
    x = r.choice([small_int(r), small_float(r)])
    spec = r.choice(["d", ".2f", "10.3f", "<8", ">8", "^9", "+d", ",", "e", ".3e", "g", ".4g", "x", "o", "b", "08.2f", "%"])
    if spec in ("d", "+d", "x", "o", "b", ",") and isinstance(x, float):
        x = int(x) if math.isfinite(x) and abs(x) < 1e18 else 7
    return f"format({lit(x)}, {spec!r})"


def py_value(expr):
    if isinstance(expr, tuple):
        expr = expr[1]
    try:
        v = eval(expr.replace("true", "True").replace("false", "False"), {"inf": math.inf, "nan": math.nan})
    except Exception as e:  # noqa: BLE001 - the kind is the answer
        return "error:" + type(e).__name__
    return shown(v)


def fits(v):
    if isinstance(v, bool):
        return True
    if isinstance(v, int):
        return I64[0] <= v <= I64[1]
    if isinstance(v, (list, tuple)):
        return all(fits(x) for x in v)
    return True


def shown(v):
    if not fits(v):
        return "error:OverflowError"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, tuple):
        return "(" + ", ".join(shown(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, list):
        return "[" + ", ".join(shown(x) for x in v) + "]"
    return repr(v)


def case_lines(exprs, out):
    """One function per case, each printed through `show`, an error as its kind."""
    for i, e in enumerate(exprs):
        apsi = e.replace("True", "true").replace("False", "false")
        out.append(f"def case_{i}():")
        out.append(f"    return {apsi}")
        out.append("try:")
        out.append(f"    print(show(case_{i}()))")
        out.append("except Error as err:")
        out.append("    print('error:' + err.kind)")
    return "\n".join(out) + "\n"


def write_cases(outdir, program, expected, texts):
    """cases.apsi, expected.txt (one line per case) and cases.txt."""
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "cases.apsi"), "w") as f:
        f.write(program)
    with open(os.path.join(outdir, "expected.txt"), "w") as f:
        f.write("".join(x + "\n" for x in expected))
    with open(os.path.join(outdir, "cases.txt"), "w") as f:
        f.write("".join(t + "\n" for t in texts))


def apsi_program(exprs):
    out = [
        "# Generated by tests/differential/gen.py: each case prints its value or error:<Kind>.",
        "def show(v):",
        "    if type(v) == str:",
        "        return repr(v)",
        "    if type(v) == list:",
        "        return '[' + ', '.join([show(x) for x in v]) + ']'",
        "    if type(v) == tuple:",
        "        inner = ', '.join([show(x) for x in v])",
        "        return '(' + inner + (',' if len(v) == 1 else '') + ')'",
        "    return str(v)",
    ]
    return case_lines([e[0] if isinstance(e, tuple) else e for e in exprs], out)


def main():
    seed, n, outdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    r = random.Random(seed)
    exprs = [case(r) for _ in range(n)]
    texts = [e[0] if isinstance(e, tuple) else e for e in exprs]
    write_cases(outdir, apsi_program(exprs), [py_value(e) for e in exprs], texts)




# ------------------------------------------------------------------ NumPy
# `python3 gen.py SEED N OUTDIR --numpy` writes the same three files for
# tensor cases, evaluated by NumPy: elementwise arithmetic and comparisons
# between tensors and with plain numbers (NumPy 2's promotion), reductions
# and matrix products. Each case prints `tolist()` of a tensor, or the
# plain number a reduction gives.


def np_case(r):
    kind = r.randrange(5)
    n = r.randint(1, 5)
    dt = r.choice(["f", "i", "b"])

    # Reductions draw no -0.0: which of two equal zeros NumPy's min/max
    # return depends on its SIMD kernel, and its sums start from +0.0
    # (a known difference: Apsi's tensor sums start from the first element).
    def arr(dt, n, neg_zero=True):
        if dt == "f":
            zs = [0.0, -0.0] if neg_zero else [0.0]
            return [r.choice(zs + [0.5, -1.5, 2.0, 3.25, -7.0, 1e-3, 100.0]) for _ in range(n)]
        if dt == "i":
            return [r.randint(-9, 9) for _ in range(n)]
        return [r.choice([True, False]) for _ in range(n)]

    a = arr(dt, n)
    if kind == 0:
        op = r.choice(["+", "-", "*", "/", "//", "%", "<", "==", ">="])
        if dt == "b" and op == "-":
            op = "+"
        b = arr(r.choice([dt, "f", "i"]), n)
        return ("T(%r) %s T(%r)" % (a, op, b))
    if kind == 1:
        op = r.choice(["+", "-", "*", "/", "//", "%", "<"])
        if dt == "b" and op == "-":
            op = "*"
        s = r.choice([2, -3, 0.5, 1.5, 7])
        return ("T(%r) %s %r" % (a, op, s)) if r.random() < 0.5 else ("%r %s T(%r)" % (s, op, a))
    if kind == 2:
        a = arr("i" if dt == "b" else dt, n, neg_zero=False)
        m = r.choice(["sum()", "max()", "min()", "argmax()", "argmin()", "prod()", "mean()"])
        return "T(%r).%s" % (a, m)
    if kind == 3:
        rows, cols = r.randint(1, 3), r.randint(1, 3)
        mat = [arr("i" if dt != "f" else "f", cols, neg_zero=False) for _ in range(rows)]
        m = r.choice(["sum(0)", "sum(1)", "max(0)", "min(1)", "mean(0)", "T"])
        return "T(%r).%s" % (mat, m)
    k, m = r.randint(1, 3), r.randint(1, 3)
    x = [arr("i", k) for _ in range(r.randint(1, 3))]
    y = [arr("i", m) for _ in range(k if r.random() < 0.9 else k + 1)]
    return "T(%r) @ T(%r)" % (x, y)


def np_value(expr):
    import numpy as np

    approx = expr.startswith("~")
    expr = expr.lstrip("~")

    class A(np.ndarray):
        """An array with Apsi's `norm` method: sqrt(sum(x * x))."""

        def norm(self, axis=None, keepdims=False):
            x = np.asarray(self).astype(np.float64)
            return np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))

    def T(x):
        return np.array(x).view(A)

    def softplus(x, beta=1.0, threshold=20.0):
        # PyTorch's softplus, in the stable form Apsi computes.
        x = np.asarray(x).astype(np.float64)
        z = beta * x
        return np.where(z > threshold, x, (np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z)))) / beta)

    def bincount(x, weights=None, minlength=0):
        return np.bincount(np.asarray(x), weights=None if weights is None else np.asarray(weights), minlength=minlength)

    env = {"T": T, "inf": math.inf, "nan": math.nan, "roll": np.roll, "bincount": bincount,
           "logaddexp": np.logaddexp, "softplus": softplus}
    with np.errstate(all="ignore"):
        try:
            v = eval(expr, env)
        except np.exceptions.AxisError:
            return "error:IndexError"
        except ValueError as e:
            msg = str(e)
            if "negative" in msg:
                return "error:ValueError"
            # NumPy's shape mismatches; Apsi names them ShapeError (LANGUAGE.md).
            return "error:ShapeError"
        except Exception as e:  # noqa: BLE001 - the kind is the answer
            return "error:" + type(e).__name__
    if isinstance(v, np.ndarray):
        v = v.tolist()
    elif isinstance(v, np.generic):
        v = v.item()
    return ("~" if approx else "") + shown(v)


# The newer tensor operations (issue 22): roll, bincount, logaddexp,
# softplus and x.norm(). Drawn from their own stream, after the cases above,
# so those stay as they were. roll and bincount move or add numbers in
# NumPy's order and must agree exactly; logaddexp, softplus and norm go
# through exp/log1p (NumPy's SIMD versions differ from the C library's in
# the last bit) or a summation order of NumPy's own, so their expected
# lines start with "~": within 1e-12, relative (apsi-cli/tests/differential.rs).
def np_more_case(r):
    kind = r.choice(["roll", "roll", "bincount", "bincount", "logaddexp", "softplus", "norm"])
    if kind == "roll":
        rows, cols = r.randint(1, 3), r.randint(1, 4)
        dt = r.choice(["f", "i", "b"])

        def el():
            if dt == "f":
                return r.choice([0.5, -1.5, 2.0, 3.25, -7.0, 1e-3, 100.0, -0.0])
            if dt == "i":
                return r.randint(-9, 9)
            return r.choice([True, False])
        if r.random() < 0.4:
            x = [el() for _ in range(cols)]
            nd = 1
        else:
            x = [[el() for _ in range(cols)] for _ in range(rows)]
            nd = 2
        shift = r.randint(-9, 9)
        axis = r.choice([None, 0, -1, 1, (0, 1), 2])
        if axis is None:
            return "roll(T(%r), %d)" % (x, shift)
        if isinstance(axis, tuple):
            return "roll(T(%r), (%d, %d), axis=(0, %d))" % (x, shift, r.randint(-5, 5), nd - 1)
        return "roll(T(%r), %d, axis=%d)" % (x, shift, axis)
    if kind == "bincount":
        n = r.randint(1, 6)
        xs = [r.randint(0, 6) for _ in range(n)]
        if r.random() < 0.08:
            xs[r.randrange(n)] = -1
        if r.random() < 0.1:
            xs = [bool(v % 2) for v in xs]
        args = "T(%r)" % (xs,)
        if r.random() < 0.5:
            w = [r.choice([0.5, -1.5, 2.0, 3.25, 1e-3, 100.0, 1, -2]) for _ in range(n + (r.random() < 0.05))]
            args += ", weights=T(%r)" % (w,)
        if r.random() < 0.5:
            args += ", minlength=%d" % r.randint(0, 9)
        return "bincount(%s)" % args
    vals = [0.0, -0.0, 1.0, -1.5, 2.0, 30.0, 700.0, 1000.0, -1000.0, 1e-3, math.inf, -math.inf, math.nan]
    n = r.randint(1, 5)
    if kind == "logaddexp":
        a = [r.choice(vals) for _ in range(n)]
        b = [x if r.random() < 0.3 else r.choice(vals) for x in a]
        form = r.randrange(3)
        if form == 0:
            return "~logaddexp(T(%r), T(%r))" % (a, b)
        if form == 1:
            return "~logaddexp(T(%r), %r)" % (a, r.choice(vals[:10]))
        return "~logaddexp(%r, %r)" % (r.choice(vals[:10]), r.choice(vals[:10]))
    if kind == "softplus":
        x = [r.choice(vals + [19.5, 20.0, 20.5, -30.0, 5.0, 10.0]) for _ in range(n)]
        if r.random() < 0.2:
            x = [r.randint(-9, 25) for _ in range(n)]
        opts = r.choice(["", ", beta=2.0", ", beta=0.5, threshold=5.0", ", threshold=1.0"])
        return "~softplus(T(%r)%s)" % (x, opts)
    rows, cols = r.randint(1, 3), r.randint(1, 3)
    el = r.choice([lambda: r.choice([0.0, 3.0, -4.0, 0.5, 1e-3, 12.0]), lambda: r.randint(-5, 5)])
    mat = [[el() for _ in range(cols)] for _ in range(rows)]
    m = r.choice(["norm()", "norm(axis=0)", "norm(axis=1)", "norm(axis=1, keepdims=True)", "norm(axis=(0, 1))"])
    if r.random() < 0.3:
        return "~T(%r).norm()" % (mat[0],)
    return "~T(%r).%s" % (mat, m)


def np_program(exprs):
    out = [
        "# Generated by tests/differential/gen.py --numpy: each case prints tolist() or a number.",
        "def T(x):",
        "    return tensor(x)",
        "def show(v):",
        "    if isinstance(v, Tensor):",
        "        return show(v.tolist())",
        "    if type(v) == list:",
        "        return '[' + ', '.join([show(x) for x in v]) + ']'",
        "    return str(v)",
    ]
    return case_lines(exprs, out)


def main_numpy():
    seed, n, outdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    r = random.Random(seed)
    exprs = [np_case(r) for _ in range(n)]
    r2 = random.Random(seed * 7919 + 22)
    exprs += [np_more_case(r2) for _ in range(n // 5)]
    code = [e.lstrip("~") for e in exprs]
    write_cases(outdir, np_program(code), [np_value(e) for e in exprs], code)


if __name__ == "__main__":
    if "--numpy" in sys.argv:
        sys.argv.remove("--numpy")
        main_numpy()
    else:
        main()
