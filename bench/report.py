#!/usr/bin/env python3
"""Turns benchmark JSON lines (stdin or files) into a table of medians and
ratios against a baseline implementation.

usage: report.py [--baseline IMPL] FILE.jsonl ...
Ratios are baseline time / this time (>1 means faster than the baseline).
"""
import json, statistics, sys

def main():
    args = sys.argv[1:]
    baseline = "cpython-3.11"
    if args[:1] == ["--baseline"]:
        baseline, args = args[1], args[2:]
    recs = []
    for path in args or ["-"]:
        f = sys.stdin if path == "-" else open(path)
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                recs.append(json.loads(line))
    benches = []
    for r in recs:
        if r["bench"] not in benches:
            benches.append(r["bench"])
    impls = []
    for r in recs:
        if r["impl"] not in impls:
            impls.append(r["impl"])
    # Records of one (bench, impl) from several rounds pool their samples.
    samples = {}
    for r in recs:
        samples.setdefault((r["bench"], r["impl"]), []).extend(r["times"])
    med = {k: statistics.median(v) for k, v in samples.items()}
    work = {r["bench"]: r["work"] for r in recs}
    unit = {r["bench"]: r["unit"] for r in recs}
    head = "| benchmark | " + " | ".join(impls) + " | " + " | ".join(f"{i} vs {baseline}" for i in impls if i != baseline) + " |"
    print(head)
    print("|" + "---|" * (1 + len(impls) + len([i for i in impls if i != baseline])))
    for b in benches:
        cells = []
        for i in impls:
            t = med.get((b, i))
            if t is None:
                cells.append("—")
            elif unit[b] == "ms":
                cells.append(f"{t * 1e3:.2f} ms")
            else:
                cells.append(f"{t / work[b] * 1e9:.1f} ns/op")
        ratios = []
        for i in impls:
            if i == baseline:
                continue
            t, base = med.get((b, i)), med.get((b, baseline))
            ratios.append(f"{base / t:.2f}x" if t and base else "—")
        print(f"| {b} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")

if __name__ == "__main__":
    main()
