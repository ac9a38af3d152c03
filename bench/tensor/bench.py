#!/usr/bin/env python3
"""Apsi tensors against NumPy, in one run, on 1 and 2 threads; prints ratios.

    python3 bench/tensor/bench.py [path/to/apsi]     (default target/release/apsi)

Apsi's thread count is set with RAYON_NUM_THREADS, NumPy's BLAS with
OPENBLAS_NUM_THREADS (each measured in its own process). Times are the best
of several runs on both sides. A ratio > 1 means Apsi is faster.
"""
import os, subprocess, sys, textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
APSI = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "target", "release", "apsi")

NUMPY = textwrap.dedent('''
    import time, numpy as np
    def best(f, reps):
        f(); b = 1e9
        for _ in range(reps):
            t0 = time.perf_counter(); f(); b = min(b, time.perf_counter() - t0)
        return b
    def softmax(x):
        m = x.max(axis=1, keepdims=True); e = np.exp(x - m); return e / e.sum(axis=1, keepdims=True)
    rng = np.random.default_rng(1)
    for dt, name in ((np.float64, "f64"), (np.float32, "f32")):
        for n in (256, 1024, 2048):
            A = rng.standard_normal((n, n)).astype(dt); B = rng.standard_normal((n, n)).astype(dt)
            reps = 20 if n == 256 else (3 if n == 1024 else 2)
            print(f"matmul {name} {n}\\t{best(lambda: A @ B, reps)}")
    N = 10_000_000
    a, b, c = (rng.standard_normal(N, dtype=np.float32) for _ in range(3))
    print(f"a*b+c 10M f32\\t{best(lambda: a * b + c, 7)}")
    print(f"sum 10M f32\\t{best(lambda: a.sum(), 7)}")
    X = rng.standard_normal((4096, 1024), dtype=np.float32)
    print(f"softmax 4096x1024 f32\\t{best(lambda: softmax(X), 7)}")
    S = rng.standard_normal((1_000_000, 3))
    print(f"sum axis=1 (1M,3) f64\\t{best(lambda: S.sum(axis=1), 7)}")
''')

BARS = {"a*b+c 10M f32": 1.2, "sum 10M f32": 1.0, "softmax 4096x1024 f32": 1.5, "sum axis=1 (1M,3) f64": 5.0}


def parse(out):
    res = {}
    for line in out.splitlines():
        if "\t" in line:
            k, v = line.split("\t", 1)
            res[k] = float(v)
    return res


def run(cmd, threads, stdin=None):
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               OMP_NUM_THREADS=str(threads))
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed:\n{p.stderr}")
    return parse(p.stdout)


def main():
    print(f"{'benchmark':28} {'thr':>3} {'numpy':>10} {'apsi':>10} {'ratio':>7}  bar")
    for th in (1, 2):
        np_res = run([sys.executable, "-"], th, stdin=NUMPY)
        ap_res = run([APSI, "run", os.path.join(HERE, "bench.apsi")], th)
        for k, t_np in np_res.items():
            t_ap = ap_res.get(k)
            if t_ap is None:
                continue
            ratio = t_np / t_ap
            bar = BARS.get(k, 1.0)
            unit = ""
            if k.startswith("matmul"):
                n = int(k.split()[-1])
                unit = f"  ({2 * n ** 3 / t_np / 1e9:.0f} vs {2 * n ** 3 / t_ap / 1e9:.0f} GFLOP/s)"
            print(f"{k:28} {th:>3} {t_np * 1e3:>8.2f}ms {t_ap * 1e3:>8.2f}ms {ratio:>6.2f}x  {'ok' if ratio >= bar else 'below'} (>= {bar}){unit}")


if __name__ == "__main__":
    main()
