#!/usr/bin/env python3
"""Whole programs against CPython (issue 15): each port of a pyperformance
benchmark (`NAME.apsi`) and its Python original without the pyperf harness
(`NAME.py`) run in turns, in separate processes (Apsi, CPython, Apsi,
CPython, ...), ROUNDS times at their default workload. Every output of a
pair must be identical; the table gives the median wall time of each side,
the ratio CPython / Apsi (above 1: Apsi is faster) and the geometric mean.

usage: bench/programs/run.py APSI [ROUNDS] [NAME ...] [--json FILE]
"""

import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = [
    "richards", "deltablue", "raytrace", "chaos", "go", "hexiom", "float",
    "unpack_sequence", "scimark", "generators",
]


def timed(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=HERE, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    return dt, p.stdout


def main():
    args = sys.argv[1:]
    json_out = None
    if "--json" in args:
        i = args.index("--json")
        json_out = args[i + 1]
        del args[i:i + 2]
    if not args:
        sys.exit(__doc__)
    apsi = os.path.abspath(args[0])
    rounds = int(args[1]) if len(args) > 1 else 3
    names = args[2:] or PROGRAMS
    python = os.environ.get("PYTHON", "python3")
    pyver = subprocess.run([python, "--version"], capture_output=True, text=True).stdout.strip()
    rows = []
    for name in names:
        a_times, p_times = [], []
        for _ in range(rounds):
            ta, out_a = timed([apsi, "run", f"{name}.apsi"])
            tp, out_p = timed([python, f"{name}.py"])
            if out_a != out_p:
                sys.exit(f"{name}: outputs differ\n--- apsi\n{out_a}\n--- {python}\n{out_p}")
            a_times.append(ta)
            p_times.append(tp)
        a, p = statistics.median(a_times), statistics.median(p_times)
        rows.append({"program": name, "cpython_s": p, "apsi_s": a, "ratio": p / a})
        print(f"{name:16} CPython {p:7.3f} s   Apsi {a:7.3f} s   {p / a:5.2f}x", file=sys.stderr)
    geo = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows))
    load = os.getloadavg()[0]
    print(f"\n{pyver} against {apsi}, {rounds} alternating rounds, medians, load average {load:.1f}\n")
    print("| program | CPython s | Apsi s | CPython / Apsi |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['program']} | {r['cpython_s']:.3f} | {r['apsi_s']:.3f} | {r['ratio']:.2f}x |")
    print(f"| **geometric mean** | | | **{geo:.2f}x** |")
    if json_out:
        with open(json_out, "w") as f:
            json.dump({"python": pyver, "rounds": rounds, "rows": rows, "geomean": geo}, f, indent=1)


if __name__ == "__main__":
    main()
