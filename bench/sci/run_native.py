#!/usr/bin/env python3
"""@native against Numba's steady state, at 1 and 2 threads.

usage: run_native.py APSI [ROUNDS] [--bench lj,ising,kmeans,mc] [--threads 1,2]
                     [--python PY] [--reps N]

APSI is the `apsi` binary (the LLVM plugin must sit beside it: build it with
`cargo build --profile fastrel -p apsi-native-llvm`); PY is a Python with
Numba and NumPy (default: this one). Each round runs every benchmark once
per thread count in two fresh processes, `apsi run --threads N X_native.apsi`
and `NUMBA_NUM_THREADS=N PY X_numba.py`, alternating which goes first. Each
process compiles on a first call that is not timed, then times REPS calls
and prints `result …` and `times …`; the two result lines must be equal
(the programs are written so that every thread count gives the same bits).

The table gives, per benchmark and thread count, the median over the rounds
of each process's fastest call (the steady state, robust to a machine shared
with other work), both runtimes and their ratio (Apsi / Numba: below 1 is
Apsi faster), then the fastest call of all rounds of each and their ratio.
Progress goes to stderr. Exit status 1 when an output differs or a run fails.
"""

import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHES = ["lj", "ising", "kmeans", "mc"]


def parse(out):
    result, times = None, None
    for line in out.splitlines():
        if line.startswith("result "):
            result = line
        elif line.startswith("times "):
            times = [float(t) for t in line.split()[1:]]
    return result, times


def run_one(kind, bench, threads, apsi, python, reps):
    env = dict(os.environ)
    if kind == "apsi":
        cmd = [apsi, "run", "--threads", str(threads), os.path.join(HERE, f"{bench}_native.apsi")]
    else:
        env["NUMBA_NUM_THREADS"] = str(threads)
        cmd = [python, os.path.join(HERE, f"{bench}_numba.py")]
    if reps:
        cmd.append(str(reps))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    result, times = parse(p.stdout)
    if result is None or not times:
        raise RuntimeError(f"{' '.join(cmd)} printed no result/times:\n{p.stdout[-2000:]}")
    return result, times


def main(argv):
    import argparse

    ap = argparse.ArgumentParser(description="@native against Numba's steady state")
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
    threads = [int(t) for t in a.threads.split(",")]
    python = a.python
    reps = a.reps
    best = {}  # (bench, threads, kind) -> [per-process fastest call]
    bad = []
    for r in range(rounds):
        for bench in benches:
            for th in threads:
                order = ["numba", "apsi"] if (r + th) % 2 == 0 else ["apsi", "numba"]
                got = {}
                for kind in order:
                    try:
                        got[kind] = run_one(kind, bench, th, apsi, python, reps)
                    except RuntimeError as e:
                        bad.append(str(e))
                        continue
                    best.setdefault((bench, th, kind), []).append(min(got[kind][1]))
                if len(got) == 2 and got["apsi"][0] != got["numba"][0]:
                    bad.append(f"{bench} at {th} threads: outputs differ\n  apsi:  {got['apsi'][0]}\n  numba: {got['numba'][0]}")
                line = "  ".join(f"{k} {min(v[1]):.4f}s" for k, v in got.items())
                print(f"round {r + 1}/{rounds} {bench:7} {th} thread(s): {line}", file=sys.stderr)
    print()
    print(f"median of {rounds} rounds of each process's fastest call; best: the fastest call of all rounds")
    print(f"{'benchmark':10} {'threads':>7} {'Numba s':>10} {'Apsi s':>10} {'Apsi/Numba':>11} {'best Numba':>11} {'best Apsi':>10} {'ratio':>7}")
    for bench in benches:
        for th in threads:
            n = best.get((bench, th, "numba"))
            a = best.get((bench, th, "apsi"))
            if not n or not a:
                print(f"{bench:10} {th:>7} {'-':>10} {'-':>10} {'-':>11}")
                continue
            mn, ma = statistics.median(n), statistics.median(a)
            bn, ba = min(n), min(a)
            print(f"{bench:10} {th:>7} {mn:>10.4f} {ma:>10.4f} {ma / mn:>11.3f} {bn:>11.4f} {ba:>10.4f} {ba / bn:>7.3f}")
    for b in bad:
        print("ERROR:", b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
