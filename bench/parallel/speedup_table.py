"""Prints the 1- vs 2-thread table of run.sh and busy_core.sh from their raw
lines ("THREADS NAME SECONDS"): medians, speed-up, and every round's ratio."""
import collections
import statistics
import sys

t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    th, name, secs = line.split()
    t[(name, th)].append(float(secs))
names = list(dict.fromkeys(n for n, _ in t))
w = max([9] + [len(n) for n in names]) + 2
print(f"{'benchmark':{w}} {'1 thread':>9} {'2 threads':>10} {'speed-up':>9}   (medians of {len(t[(names[0], '1')])}; every round's ratio)")
for n in names:
    a, b = t[(n, '1')], t[(n, '2')]
    rs = " ".join(f"{x / y:.2f}" for x, y in zip(a, b))
    print(f"{n:{w}} {statistics.median(a):9.4f} {statistics.median(b):10.4f} {statistics.median(a) / statistics.median(b):8.2f}x   [{rs}]")
