#!/usr/bin/env python3
"""Apsi's matmul against NumPy's, square f32/f64 products from 32 to 2048, on
1 and 2 threads, in one run (issue 18).

    python3 bench/tensor/matmul.py [--apsi PATH] [--python PY] [--rounds R]
                                   [--sizes 32,64,...] [--threads 1,2] [--reps N]

For each round and thread count, NumPy (run by PY, default this Python; it
needs numpy, and threadpoolctl to name its kernel) and Apsi
(`apsi run --threads N bench/tensor/matmul.apsi`) take turns, each in its own
process, on the same list of products. Each product is timed as a loop of
ITERS back-to-back `C = A @ B` (ITERS chosen so one measurement does about
`FLOP_PER_MEASURE` floating-point operations: 3,000 products at 32, one at
1024 and up), REPS measurements after a warm-up loop; each side reports the
best and the median time per product. The table shows GFLOP/s (2 n^3 / time)
from the best per-product time (the median over rounds of each round's best),
and the ratio NumPy time / Apsi time (> 1: Apsi is faster). Nothing is
subtracted: the loop's own cost per iteration is measured in both languages
(`C = A` in the same loop) and printed.

NumPy's process gets OPENBLAS_NUM_THREADS=N (OMP_NUM_THREADS=N) and neither
OPENBLAS_CORETYPE nor OPENBLAS_L2_SIZE (set on some machines here, they slow
NumPy's OpenBLAS down); Apsi's gets the same environment. The kernels each
side runs are printed: NumPy's from threadpoolctl's threadpool_info()
(internal_api, version, architecture), Apsi's from `apsi doctor`'s gemm line.
"""
import argparse, os, statistics, subprocess, sys, textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
FLOP_PER_MEASURE = 2e8

NUMPY = textwrap.dedent('''
    import sys, time, numpy as np
    try:
        from threadpoolctl import threadpool_info
        for p in threadpool_info():
            if p.get("user_api") == "blas":
                print("kernel\\t%s %s %s, %s threads (%s)" % (p.get("internal_api"), p.get("version"),
                      p.get("architecture"), p.get("num_threads"), os.path.basename(p.get("filepath", ""))))
    except ImportError:
        print("kernel\\tunknown (no threadpoolctl in this Python)")
    rng = np.random.default_rng(1)
    reps = int(sys.argv[1])
    def measure(f, iters):
        f(iters); ts = []
        for _ in range(reps):
            t0 = time.perf_counter(); f(iters); ts.append((time.perf_counter() - t0) / iters)
        ts.sort()
        return ts[0], ts[len(ts) // 2]
    for spec in sys.argv[2:]:
        name, n, iters = spec.split(":"); n = int(n); iters = int(iters)
        dt = np.float64 if name == "f64" else np.float32
        A = rng.standard_normal((n, n)).astype(dt); B = rng.standard_normal((n, n)).astype(dt)
        def products(k):
            for _ in range(k):
                C = A @ B
        def empty(k):
            for _ in range(k):
                C = A
        b, m = measure(products, iters)
        print(f"matmul {name} {n}\\t{b}\\t{m}")
        if n <= 64:
            b, m = measure(empty, iters)
            print(f"loop {name} {n}\\t{b}\\t{m}")
''').replace("import sys, time", "import os, sys, time")


def env_for(threads):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    return env


def run(cmd, threads, stdin=None):
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env_for(threads))
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed:\n{p.stdout}\n{p.stderr}")
    res, kernel = {}, None
    for line in p.stdout.splitlines():
        parts = line.split("\t")
        if parts[0] == "kernel":
            kernel = parts[1]
        elif len(parts) == 3:
            res[parts[0]] = (float(parts[1]), float(parts[2]))
    return res, kernel


def apsi_kernel(apsi, threads):
    p = subprocess.run([apsi, "doctor"], capture_output=True, text=True, env=env_for(threads))
    for line in p.stdout.splitlines():
        if "] gemm" in line:
            return line.split("gemm", 1)[1].strip()
    return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--apsi", default=os.path.join(ROOT, "target", "release", "apsi"))
    ap.add_argument("--python", default=sys.executable, help="the Python that runs NumPy's side")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="32,64,128,256,512,1024,2048")
    ap.add_argument("--dtypes", default="f64,f32")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=5, help="measurements per product in each process")
    a = ap.parse_args()
    if subprocess.run([a.python, "-c", "import numpy"], capture_output=True).returncode != 0:
        sys.exit(f"{a.python} cannot import numpy: install it, or pass --python a Python that has it")
    sizes = [int(s) for s in a.sizes.split(",")]
    threads = [int(t) for t in a.threads.split(",")]
    dtypes = a.dtypes.split(",")
    specs = [f"{d}:{n}:{max(1, round(FLOP_PER_MEASURE / (2 * n ** 3)))}" for d in dtypes for n in sizes]
    args = [str(a.reps)] + specs
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    best, loops, kernels = {}, {}, {}
    for r in range(a.rounds):
        for th in threads:
            sides = [("numpy", [a.python, "-"] + args, NUMPY),
                     ("apsi", [a.apsi, "run", "--threads", str(th), os.path.join(HERE, "matmul.apsi")] + args, None)]
            if r % 2:  # alternate which side goes first
                sides.reverse()
            for side, cmd, stdin in sides:
                res, kernel = run(cmd, th, stdin)
                if kernel:
                    kernels[(side, th)] = kernel
                for k, (b, _m) in res.items():
                    (loops if k.startswith("loop") else best).setdefault((th, side, k), []).append(b)
    for th in threads:
        kernels[("apsi", th)] = apsi_kernel(a.apsi, th)
    for th in threads:
        print(f"{th} thread(s): NumPy runs {kernels.get(('numpy', th))}; Apsi runs {kernels.get(('apsi', th))}")
    for th in threads:
        for d in dtypes:
            for n in sizes:
                k = f"loop {d} {n}"
                if (th, "apsi", k) in loops:
                    print(f"loop cost per iteration ({d} {n}, {th} thr): NumPy "
                          f"{statistics.median(loops[(th, 'numpy', k)]) * 1e9:.0f} ns, Apsi "
                          f"{statistics.median(loops[(th, 'apsi', k)]) * 1e9:.0f} ns")
                    break
    print()
    print("| dtype | n | threads | NumPy GFLOP/s | Apsi GFLOP/s | ratio (NumPy time / Apsi time) |")
    print("|---|---|---|---|---|---|")
    for d in dtypes:
        for n in sizes:
            for th in threads:
                k = f"matmul {d} {n}"
                t_np = statistics.median(best[(th, "numpy", k)])
                t_ap = statistics.median(best[(th, "apsi", k)])
                flop = 2 * n ** 3
                mark = "" if t_np / t_ap >= 1 else " (below)"
                print(f"| {d} | {n} | {th} | {flop / t_np / 1e9:.1f} | {flop / t_ap / 1e9:.1f} | {t_np / t_ap:.2f}x{mark} |")
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
