#!/usr/bin/env python3
"""The collection built-ins (sum, min, max, sorted, zip, enumerate, map,
filter, any/all, the constructors, comprehensions, join, `in`, strings of
one character, dicts with str keys) per element, Apsi against CPython,
taking turns in separate processes (issue 15).

usage: bench/builtins/run.py APSI [ROUNDS] [N] [REPS] [BENCH...]

Each round runs builtins.apsi and builtins.py once each (the order
alternates between rounds); each process times every operation inside
itself, best of REPS repetitions, and prints ns per element. The table
shows the median over the rounds and the ratio CPython / Apsi (above 1:
Apsi is faster). A benchmark, not a test: nothing fails on a slow machine.
"""
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        sys.exit(f"{cmd[0]} failed: {out.stderr.strip()}")
    res = {}
    for line in out.stdout.splitlines():
        name, _, ns = line.rpartition("\t")
        if name:
            res[name] = float(ns)
    return res


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    apsi = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    n = sys.argv[3] if len(sys.argv) > 3 else "1000000"
    reps = sys.argv[4] if len(sys.argv) > 4 else "3"
    only = sys.argv[5:]
    res = {"apsi": {}, "cpython": {}}
    order = []
    for r in range(rounds):
        cmds = [("apsi", [apsi, "run", os.path.join(HERE, "builtins.apsi"), n, reps, *only]),
                ("cpython", [sys.executable, os.path.join(HERE, "builtins.py"), n, reps, *only])]
        if r % 2:
            cmds.reverse()
        for name, cmd in cmds:
            for b, ns in run(cmd).items():
                if b not in order:
                    order.append(b)
                res[name].setdefault(b, []).append(ns)
    print(f"| operation | CPython {sys.version.split()[0]} ns/element | Apsi ns/element | CPython / Apsi |")
    print("|---|---|---|---|")
    for b in order:
        if b not in res["apsi"] or b not in res["cpython"]:
            continue
        a = statistics.median(res["apsi"][b])
        c = statistics.median(res["cpython"][b])
        print(f"| {b} | {c:.2f} | {a:.2f} | {c / a:.2f}x |" if a > 0 else f"| {b} | {c:.2f} | {a:.2f} | - |")


if __name__ == "__main__":
    main()
