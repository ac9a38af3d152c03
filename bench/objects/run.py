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
import importlib.util
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _builtins_runner():
    """`run` of bench/builtins/run.py: one process, its "name<TAB>ns" lines."""
    path = os.path.join(HERE, "..", "builtins", "run.py")
    spec = importlib.util.spec_from_file_location("builtins_run", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.run


run = _builtins_runner()


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
