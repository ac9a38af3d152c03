"""Matmul against NumPy over oblong and stacked shapes, 1 and 2 threads.

    python3 bench/tensor/matmul_shapes.py [--apsi PATH] [--python PY] [--rounds R]

The square sizes are `matmul.py`'s; this covers the shapes between them that
layers and scientific code produce: oblong products from 16^3 to past 100^3
multiply-adds (where Apsi hands products to OpenBLAS's small-matrix kernels
or to the `gemm` crate) and stacks of small products. Apsi
(`apsi run --threads N bench/tensor/matmul_shapes.apsi`) and NumPy (its twin
below, `OPENBLAS_NUM_THREADS=N`, without `OPENBLAS_CORETYPE` or
`OPENBLAS_L2_SIZE`; its kernel named by threadpoolctl, Apsi's by `apsi
doctor`) take turns, each in its own process, for R rounds; the
table shows GFLOP/s from the best time over all rounds and the ratio NumPy
time / Apsi time (> 1: Apsi is faster). A benchmark, not a test.
"""
import argparse, collections, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
NUMPY_SIDE = r'''
import sys, time, numpy as np
reps = int(sys.argv[1]); rng = np.random.default_rng(1)
for spec in sys.argv[2:]:
    p = spec.split(":"); dt = np.float64 if p[0] == "f64" else np.float32
    b, m, k, n = map(int, p[1:]); iters = max(1, int(4e7 / (2 * max(b, 1) * m * k * n)))
    sa, sb = ((b, m, k), (b, k, n)) if b > 0 else ((m, k), (k, n))
    A = rng.standard_normal(sa).astype(dt); B = rng.standard_normal(sb).astype(dt)
    def f(c):
        for i in range(c): C = A @ B
    f(iters); best = 1e9
    for r in range(reps):
        t0 = time.perf_counter(); f(iters); best = min(best, (time.perf_counter() - t0) / iters)
    print(f"{spec}\t{best}")
'''

SHAPES = [(0, s, s, s) for s in (16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 100, 112, 128)] + [
    (0, 64, 64, 128), (0, 128, 64, 64), (0, 64, 128, 64), (0, 32, 256, 32), (0, 128, 128, 32),
    (0, 32, 64, 64), (0, 64, 32, 64), (0, 256, 64, 32), (0, 50, 200, 70), (0, 32, 64, 128),
    (8, 64, 64, 64), (16, 32, 32, 32), (128, 64, 32, 64), (4, 100, 100, 100), (32, 16, 16, 16),
    (8, 96, 96, 96), (2, 128, 128, 128)]


KERNEL = r'''
import numpy
try:
    from threadpoolctl import threadpool_info
    print("; ".join(f"{p['internal_api']} {p['version']} {p.get('architecture')}, {p['num_threads']} threads"
                    for p in threadpool_info() if p.get("user_api") == "blas") or "no BLAS found")
except ImportError:
    print("unknown (no threadpoolctl in this Python)")
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--apsi", default="target/release/apsi")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    a = ap.parse_args()
    specs = [f"{d}:{b}:{m}:{k}:{n}" for d in ("f64", "f32") for (b, m, k, n) in SHAPES]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS")}
    best = collections.defaultdict(lambda: float("inf"))
    threads = [int(t) for t in a.threads.split(",")]
    print("load average before:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    doctor = subprocess.run([a.apsi, "doctor"], env=env, capture_output=True, text=True).stdout
    gemm = next((line.split("gemm", 1)[1].strip() for line in doctor.splitlines() if " gemm " in line), "?")
    print(f"Apsi: {gemm}")
    for t in threads:
        e = dict(env, OPENBLAS_NUM_THREADS=str(t))
        kernel = subprocess.run([a.python, "-c", KERNEL], env=e, capture_output=True, text=True).stdout.strip()
        print(f"{t} thread(s): NumPy runs {kernel}")
    for _ in range(a.rounds):
        for t in threads:
            runs = {
                "apsi": [a.apsi, "run", "--threads", str(t), os.path.join(HERE, "matmul_shapes.apsi"), "5"],
                "numpy": [a.python, "-c", NUMPY_SIDE, "5"],
            }
            for side, cmd in runs.items():
                e = dict(env, OPENBLAS_NUM_THREADS=str(t)) if side == "numpy" else env
                out = subprocess.run(cmd + specs, env=e, capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit(f"{side} failed:\n{out.stderr}")
                for line in out.stdout.splitlines():
                    s, secs = line.split("\t")
                    best[(side, t, s)] = min(best[(side, t, s)], float(secs))
    print("\n| dtype | stack | m x k x n | threads | NumPy GFLOP/s | Apsi GFLOP/s | ratio |")
    print("|---|---|---|---|---|---|---|")
    for s in specs:
        d, b, m, k, n = s.split(":")
        flop = 2 * max(int(b), 1) * int(m) * int(k) * int(n)
        for t in threads:
            npt, apt = best[("numpy", t, s)], best[("apsi", t, s)]
            print(f"| {d} | {b if b != '0' else '-'} | {m}x{k}x{n} | {t} | {flop / npt / 1e9:.1f} | "
                  f"{flop / apt / 1e9:.1f} | {npt / apt:.2f}x |")
    print("load average after:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
