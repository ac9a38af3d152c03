#!/usr/bin/env python3
"""The operations object-heavy programs spend their time on (method calls
on one and on four struct types, `super().__init__`, construction, struct
constants, `__eq__` through `==` and through list scans, field chains,
bound methods, `isinstance`, keyword calls, ...), one at a time, Apsi
against CPython, taking turns in separate processes (issue 15).

usage: bench/objects/run.py APSI [ROUNDS] [N] [REPS]

Each round runs objects.apsi and objects.py once each (the order alternates
between rounds); each process times every operation inside itself, best of
REPS repetitions, and prints ns per operation. The table shows the median
over the rounds and the ratio CPython / Apsi (above 1: Apsi is faster). A
benchmark, not a test: nothing fails on a slow machine.
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
    apsi = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    n = sys.argv[3] if len(sys.argv) > 3 else "200000"
    reps = sys.argv[4] if len(sys.argv) > 4 else "3"
    a_runs, p_runs = [], []
    for r in range(rounds):
        cmds = [("apsi", [apsi, "run", os.path.join(HERE, "objects.apsi"), "all", n, reps]),
                ("cpython", [sys.executable, os.path.join(HERE, "objects.py"), "all", n, reps])]
        if r % 2:
            cmds.reverse()
        for who, cmd in cmds:
            (a_runs if who == "apsi" else p_runs).append(run(cmd))
    pyver = subprocess.run([sys.executable, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"{pyver} against {apsi}, {rounds} alternating rounds, N={n}, best of {reps}, medians\n")
    print("| operation | CPython ns | Apsi ns | CPython / Apsi |")
    print("|---|---|---|---|")
    for name in a_runs[0]:
        a = statistics.median(r[name] for r in a_runs)
        p = statistics.median(r[name] for r in p_runs)
        print(f"| {name} | {p:.1f} | {a:.1f} | {p / a:.2f}x |")


if __name__ == "__main__":
    main()
