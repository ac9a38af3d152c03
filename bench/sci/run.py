#!/usr/bin/env python3
"""Scientific programs against their anchors, alternating, at 1 and 2 threads.

usage: run.py APSI [ROUNDS] [--bench cg,logreg,lsq,mlp,jacobi,lj,ising,kmeans,mc]
              [--threads 1,2] [--python PY] [--reps N]

Tensor programs run against NumPy (`X.apsi` / `X_numpy.py`): a conjugate-
gradient Poisson solver with a matrix-free Laplacian (`cg`), logistic
regression by gradient descent with `grad` against the hand-derived NumPy
gradient (`logreg`), least squares likewise (`lsq`); held out of the
tuning: a tanh network with `grad` against its hand-written backward pass
(`mlp`) and Jacobi sweeps with slices (`jacobi`). `@native` programs
run against Numba's steady state (`X_native.apsi` / `X_numba.py`): a
Lennard-Jones pair loop with a periodic minimum image (`lj`), a
checkerboard Ising sweep with a counter-based generator (`ising`), a
k-means assignment (`kmeans`), a Monte-Carlo Asian option (`mc`).

APSI is the `apsi` binary (the LLVM plugin must sit beside it for the
`@native` programs: `cargo build --release -p apsi-native-llvm`); PY is a
Python with NumPy, Numba and threadpoolctl (default: this one). Each round
runs every program once per thread count in two fresh processes,
`apsi run --threads N X.apsi` and the anchor with `NUMBA_NUM_THREADS`,
`OPENBLAS_NUM_THREADS` and `OMP_NUM_THREADS` set to N, alternating which
goes first. The anchor's process runs without `OPENBLAS_CORETYPE` and
`OPENBLAS_L2_SIZE` (set on some machines here; they slow OpenBLAS down),
and the table names the BLAS kernel it used (threadpoolctl).

A `@native` process compiles on a first call that is not timed, then times
REPS calls and prints `result ...` and `times ...`; a tensor program prints
its result lines and one `time ...` line for its timed loop. Everything but
the time lines must be equal between Apsi and the anchor.

The table gives, per program and thread count, the median over the rounds
of each process's fastest call, both runtimes and their ratio (Apsi /
anchor: below 1 is Apsi faster), then the fastest of all rounds of each and
their ratio. Progress goes to stderr. Exit status 1 when an output differs
or a run fails.
"""

import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# program -> (Apsi file, anchor file, anchor name)
PROGRAMS = {
    "cg": ("cg.apsi", "cg_numpy.py", "NumPy"),
    "logreg": ("logreg.apsi", "logreg_numpy.py", "NumPy"),
    "lsq": ("lsq.apsi", "lsq_numpy.py", "NumPy"),
    "mlp": ("mlp.apsi", "mlp_numpy.py", "NumPy"),
    "jacobi": ("jacobi.apsi", "jacobi_numpy.py", "NumPy"),
    "lj": ("lj_native.apsi", "lj_numba.py", "Numba"),
    "ising": ("ising_native.apsi", "ising_numba.py", "Numba"),
    "kmeans": ("kmeans_native.apsi", "kmeans_numba.py", "Numba"),
    "mc": ("mc_native.apsi", "mc_numba.py", "Numba"),
}
BENCHES = list(PROGRAMS)


def parse(out):
    """(the output without its timing lines, [call times])"""
    result, times = [], []
    for line in out.splitlines():
        if line.startswith("times "):
            times = [float(t) for t in line.split()[1:]]
        elif line.startswith("time "):
            times = [float(line.split()[1])]
        else:
            result.append(line)
    return "\n".join(result), times


BLAS_INFO = "import numpy; from threadpoolctl import threadpool_info as i; print(' '.join(f\"{p['internal_api']}/{p.get('architecture')}\" for p in i()))"


def anchor_env(threads):
    env = dict(os.environ)
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(k, None)
    for k in ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(threads)
    return env


def run_one(kind, bench, threads, apsi, python, reps):
    apsi_file, anchor_file, _ = PROGRAMS[bench]
    env = dict(os.environ)
    if kind == "apsi":
        cmd = [apsi, "run", "--threads", str(threads), os.path.join(HERE, apsi_file)]
    else:
        env = anchor_env(threads)
        cmd = [python, os.path.join(HERE, anchor_file)]
    if reps and apsi_file.endswith("_native.apsi"):
        cmd.append(str(reps))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    result, times = parse(p.stdout)
    if not times:
        raise RuntimeError(f"{' '.join(cmd)} printed no result/times:\n{p.stdout[-2000:]}")
    return result, times


def main(argv):
    import argparse

    ap = argparse.ArgumentParser(description="scientific programs against NumPy and Numba")
    ap.add_argument("apsi")
    ap.add_argument("rounds", nargs="?", type=int, default=3)
    ap.add_argument("--bench", default=",".join(BENCHES))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--reps", type=int, default=0, help="timed calls per process (default: each program's own)")
    a = ap.parse_args(argv)
    apsi = os.path.abspath(a.apsi)
    rounds = a.rounds
    benches = a.bench.split(",")
    for b in benches:
        if b not in PROGRAMS:
            ap.error(f"unknown program {b!r} (known: {', '.join(PROGRAMS)})")
    threads = [int(t) for t in a.threads.split(",")]
    python = a.python
    reps = a.reps
    best = {}  # (bench, threads, kind) -> [per-process fastest call]
    bad = []
    for r in range(rounds):
        for bench in benches:
            for th in threads:
                order = ["anchor", "apsi"] if (r + th) % 2 == 0 else ["apsi", "anchor"]
                got = {}
                for kind in order:
                    try:
                        got[kind] = run_one(kind, bench, th, apsi, python, reps)
                    except RuntimeError as e:
                        bad.append(str(e))
                        continue
                    best.setdefault((bench, th, kind), []).append(min(got[kind][1]))
                if len(got) == 2 and got["apsi"][0] != got["anchor"][0]:
                    bad.append(f"{bench} at {th} threads: outputs differ\n  apsi:  {got['apsi'][0]}\n  anchor: {got['anchor'][0]}")
                line = "  ".join(f"{k} {min(v[1]):.4f}s" for k, v in got.items())
                print(f"round {r + 1}/{rounds} {bench:7} {th} thread(s): {line}", file=sys.stderr)
    blas = subprocess.run([python, "-c", BLAS_INFO], capture_output=True, text=True, env=anchor_env(1))
    print()
    print(f"median of {rounds} rounds of each process's fastest call; best: the fastest call of all rounds")
    print(f"anchor BLAS (threadpoolctl): {blas.stdout.strip() or 'unknown: ' + blas.stderr.strip()[-200:]}")
    print()
    print("| program | anchor | threads | anchor s | Apsi s | Apsi / anchor | best anchor s | best Apsi s | best ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for bench in benches:
        anchor = PROGRAMS[bench][2]
        for th in threads:
            n = best.get((bench, th, "anchor"))
            a = best.get((bench, th, "apsi"))
            if not n or not a:
                print(f"| {bench} | {anchor} | {th} | - | - | - | - | - | - |")
                continue
            mn, ma = statistics.median(n), statistics.median(a)
            bn, ba = min(n), min(a)
            print(f"| {bench} | {anchor} | {th} | {mn:.4f} | {ma:.4f} | {ma / mn:.3f} | {bn:.4f} | {ba:.4f} | {ba / bn:.3f} |")
    for b in bad:
        print("ERROR:", b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
