#!/usr/bin/env python3
"""The cost of one method call, struct operator (`__add__`), generator step,
set lookup, item of `sum(x for x in range(n))`, item through a 10-deep
`yield from` chain and item of `sum(gen(n))`, Apsi against CPython, taking turns in separate processes.

usage: bench/compat/run.py APSI [ROUNDS] [N]

Each round runs every benchmark in Apsi and in CPython back to back (the
order alternates), each process printing its best ns per operation over 5
repetitions; the table shows the median over the rounds and the ratio
CPython / Apsi (above 1: Apsi is faster). A benchmark, not a test.
"""
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHES = ["method call", "dunder +", "generator step", "set lookup", "sum(genexp)", "yield from 10 deep",
           "sum(generator)"]


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"{cmd[0]} failed: {out.stderr.strip()}")
    return float(out.stdout.strip().splitlines()[-1])


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    apsi = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    n = sys.argv[3] if len(sys.argv) > 3 else "1000000"
    res = {b: {"apsi": [], "cpython": []} for b in BENCHES}
    for r in range(rounds):
        for b in BENCHES:
            cmds = [("apsi", [apsi, "run", os.path.join(HERE, "compat.apsi"), b, n, "5"]),
                    ("cpython", [sys.executable, os.path.join(HERE, "compat.py"), b, n, "5"])]
            if r % 2:
                cmds.reverse()
            for name, cmd in cmds:
                res[b][name].append(run(cmd))
    print(f"| operation | CPython {sys.version.split()[0]} ns | Apsi ns | CPython / Apsi |")
    print("|---|---|---|---|")
    for b in BENCHES:
        a = statistics.median(res[b]["apsi"])
        c = statistics.median(res[b]["cpython"])
        print(f"| {b} | {c:.1f} | {a:.1f} | {c / a:.2f}x |")


if __name__ == "__main__":
    main()
