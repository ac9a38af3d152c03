#!/usr/bin/env python3
"""The @native bars from run.sh's JSON lines: for each kernel, time ratios
(medians; > 1 means Apsi is slower) of Apsi to the C anchor it is held to,
and the 2-thread speed-ups of Apsi and C.

usage: bars.py results.jsonl ...
"""
import json, statistics, sys

PAIRS = [
    ("single thread vs strict C (bar <= 1.10)", "apsi @native", "C gcc -O3 -march=native"),
    ("fastmath vs C -ffast-math (bar <= 1.10)", "apsi @native(fastmath, boundscheck=false)", "C + -ffast-math"),
]
SPEEDUPS = [
    ("parallel for, 2 threads / 1 (bar >= 1.85)", "apsi parallel for", "apsi @native"),
    ("parallel for + fastmath, 2 threads / 1", "apsi parallel for + fastmath, boundscheck=false",
     "apsi @native(fastmath, boundscheck=false)"),
    ("C OpenMP, 2 threads / 1", "C + OpenMP", "C gcc -O3 -march=native"),
    ("C OpenMP + fast-math, 2 threads / 1", "C + OpenMP + -ffast-math", "C + -ffast-math"),
]


def main():
    times = {}
    for path in sys.argv[1:] or ["-"]:
        f = sys.stdin if path == "-" else open(path)
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                r = json.loads(line)
                times.setdefault((r["bench"], r["impl"]), []).extend(r["times"])
    benches = []
    for b, _ in times:
        if b not in benches:
            benches.append(b)
    for b in benches:
        print(b)
        med = lambda impl: statistics.median(times[(b, impl)]) if (b, impl) in times else None
        for name, a, c in PAIRS:
            ta, tc = med(a), med(c)
            if ta and tc:
                print(f"  {name}: {ta / tc:.2f}  ({ta * 1e3:.1f} ms vs {tc * 1e3:.1f} ms)")
        for name, par, one in SPEEDUPS:
            tp, t1 = med(par), med(one)
            if tp and t1:
                print(f"  {name}: {t1 / tp:.2f}x  ({t1 * 1e3:.1f} ms -> {tp * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
