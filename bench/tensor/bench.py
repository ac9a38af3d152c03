#!/usr/bin/env python3
"""Apsi tensors against NumPy, in one run, on 1 and 2 threads; prints ratios.

    python3 bench/tensor/bench.py [path/to/apsi] [rounds]
        (default target/release/apsi, 1 round)

Each round runs, per thread count, NumPy (OPENBLAS_NUM_THREADS=N) and then
Apsi (`apsi run --threads N`), each in its own process; each side reports
the median of 5 timed runs after a warm-up. With several rounds the table
shows the median over rounds. A ratio > 1 means Apsi is faster; the bar
column is the issue's bar (matmul: >= NumPy's GFLOP/s). The load average
before and after is printed (the machine is shared: compare ratios from quiet runs).
`APSI_MATMUL=openblas` (or `gemm`) in the environment forces Apsi's matmul backend.
"""
import os, statistics, subprocess, sys, textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
APSI = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "target", "release", "apsi")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 1

NUMPY = textwrap.dedent('''
    import time, numpy as np
    def median_time(f, reps=5):
        f(); ts = []
        for _ in range(reps):
            t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
        return sorted(ts)[len(ts) // 2]
    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True)); e /= e.sum(axis=1, keepdims=True); return e
    rng = np.random.default_rng(1)
    for dt, name in ((np.float64, "f64"), (np.float32, "f32")):
        for n in (256, 1024, 2048):
            A = rng.standard_normal((n, n)).astype(dt); B = rng.standard_normal((n, n)).astype(dt)
            print(f"matmul {name} {n}\\t{median_time(lambda: A @ B)}")
    N = 10_000_000
    a, b, c = (rng.standard_normal(N, dtype=np.float32) for _ in range(3))
    print(f"a*b+c 10M f32\\t{median_time(lambda: a * b + c)}")
    print(f"sum 10M f32\\t{median_time(lambda: a.sum())}")
    X = rng.standard_normal((4096, 1024), dtype=np.float32)
    print(f"softmax 4096x1024 f32\\t{median_time(lambda: softmax(X))}")
    S = rng.standard_normal((1_000_000, 3))
    print(f"sum axis=1 (1M,3) f64\\t{median_time(lambda: S.sum(axis=1))}")
    P = rng.standard_normal((512, 512)); AP = rng.standard_normal((512, 512))
    def slice_write():
        AP[1:, :] -= P[:-1, :]
        AP[:, :-1] -= P[:, 1:]
    print(f"slice -= 512x512 f64\\t{median_time(slice_write)}")
    E = rng.standard_normal(1_000_000)
    print(f"exp 1M f64\\t{median_time(lambda: np.exp(E))}")
    print(f"log1p 1M f64\\t{median_time(lambda: np.log1p(np.abs(E)))}")
    print(f"abs 1M f64\\t{median_time(lambda: np.abs(E))}")
    E1 = rng.standard_normal(100_000)
    print(f"exp 100k f64\\t{median_time(lambda: np.exp(E1))}")
''')

BARS = {"slice -= 512x512 f64": 1.0, "a*b+c 10M f32": 1.2, "sum 10M f32": 1.0, "softmax 4096x1024 f32": 1.5, "sum axis=1 (1M,3) f64": 5.0}


def parse(out):
    res = {}
    for line in out.splitlines():
        if "\t" in line:
            k, v = line.split("\t", 1)
            res[k] = float(v)
    return res


def run(cmd, threads, stdin=None):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    # NumPy's best OpenBLAS settings: these variables (set on some machines
    # here) slow it down.
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed:\n{p.stdout}\n{p.stderr}")
    return parse(p.stdout)


def main():
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    times = {}  # (threads, side, name) -> [seconds per round]
    for _ in range(ROUNDS):
        for th in (1, 2):
            for side, cmd, stdin in (("numpy", [sys.executable, "-"], NUMPY),
                                     ("apsi", [APSI, "run", "--threads", str(th), os.path.join(HERE, "bench.apsi")], None)):
                for k, v in run(cmd, th, stdin).items():
                    times.setdefault((th, side, k), []).append(v)
    names = [k for (th, side, k) in times if th == 1 and side == "numpy"]
    print(f"{'benchmark':24} {'thr':>3} {'numpy':>10} {'apsi':>10} {'ratio':>7}  bar")
    for th in (1, 2):
        for k in names:
            if (th, "apsi", k) not in times:
                continue
            t_np = statistics.median(times[(th, "numpy", k)])
            t_ap = statistics.median(times[(th, "apsi", k)])
            ratio = t_np / t_ap
            bar = BARS.get(k, 1.0)
            unit = ""
            if k.startswith("matmul"):
                n = int(k.split()[-1])
                unit = f"  ({2 * n ** 3 / t_np / 1e9:.0f} vs {2 * n ** 3 / t_ap / 1e9:.0f} GFLOP/s)"
            ok = "ok" if ratio >= bar else "below"
            print(f"{k:24} {th:>3} {t_np * 1e3:>8.2f}ms {t_ap * 1e3:>8.2f}ms {ratio:>6.2f}x  {ok} (>= {bar}){unit}")
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
