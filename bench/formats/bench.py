#!/usr/bin/env python3
"""Encode (f32 -> format) and decode (format -> f32) of 10M values: Apsi's
`astype` against ml_dtypes' `astype` (numpy's for float16, int8, uint8),
in one run on this machine; prints M elements/s and the ratio.

    python3 bench/formats/bench.py [path/to/apsi] [--threads N] [--runs R]

ml_dtypes is single-threaded; Apsi runs with RAYON_NUM_THREADS threads
(default: all cores; pass --threads 1 for the single-thread figure).
Installs numpy and ml_dtypes with pip when they are missing. Within a run,
times are the best of 5 calls on both sides; both sides allocate a fresh
output array per call. With --runs R the reference and Apsi are run R
times, alternating, and the table shows per-format medians (the ratio
column is the median of the per-run ratios). A ratio > 1 means Apsi is faster.

int8 and uint8: ml_dtypes has no such types, so the anchor is numpy's own
`astype`, which is the same operation as Apsi's (truncation toward zero,
then the low bits) and gives the same codes on these inputs; it is a
compiled SIMD loop near memory speed, not an ml_dtypes conversion.
"""
import os, subprocess, sys, textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
args = [a for a in sys.argv[1:]]
threads = None
runs = 1
if "--threads" in args:
    i = args.index("--threads")
    threads = args[i + 1]
    del args[i:i + 2]
if "--runs" in args:
    i = args.index("--runs")
    runs = max(1, int(args[i + 1]))
    del args[i:i + 2]
APSI = args[0] if args else os.path.join(HERE, "..", "..", "target", "release", "apsi")

try:
    import numpy, ml_dtypes  # noqa: F401
except ImportError:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "numpy", "ml_dtypes"], check=True)

REF = textwrap.dedent('''
    import time, warnings, numpy as np, ml_dtypes
    def best(f, reps):
        f(); b = 1e9
        for _ in range(reps):
            t0 = time.perf_counter(); f(); b = min(b, time.perf_counter() - t0)
        return b
    N = 10_000_000
    rng = np.random.default_rng(4)
    x = rng.standard_normal(N, dtype=np.float32)
    xi = rng.integers(-8, 8, N).astype(np.float32)
    F = [("bf16", ml_dtypes.bfloat16), ("f16", np.float16), ("fp8_e4m3", ml_dtypes.float8_e4m3fn),
         ("fp8_e5m2", ml_dtypes.float8_e5m2), ("fp6_e3m2", getattr(ml_dtypes, "float6_e3m2fn", None)),
         ("fp6_e2m3", getattr(ml_dtypes, "float6_e2m3fn", None)), ("fp4_e2m1", getattr(ml_dtypes, "float4_e2m1fn", None)),
         ("int8", np.int8), ("int4", ml_dtypes.int4), ("uint8", np.uint8)]
    for name, dt in F:
        if dt is None:
            continue
        src = xi if name in ("int8", "int4", "uint8") else x
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = src.astype(dt)
            print(f"{name}\\t{best(lambda: src.astype(dt), 5)}\\t{best(lambda: y.astype(np.float32), 5)}")
''')

def parse(out):
    r = {}
    for line in out.splitlines():
        p = line.split("\t")
        if len(p) == 3:
            r[p[0]] = (float(p[1]), float(p[2]))
    return r

env = dict(os.environ)
if threads:
    env["RAYON_NUM_THREADS"] = threads
import statistics
refs, apsis = [], []
for _ in range(runs):
    refs.append(parse(subprocess.run([sys.executable, "-c", REF], capture_output=True, text=True, check=True).stdout))
    apsis.append(parse(subprocess.run([APSI, "run", os.path.join(HERE, "formats.apsi")], capture_output=True, text=True,
                                      check=True, env=env).stdout))
import ml_dtypes
N = 10_000_000
ANCHOR = {"f16": "numpy", "int8": "numpy", "uint8": "numpy"}
med = statistics.median
print(f"10M f32 values; ml_dtypes {ml_dtypes.__version__} (1 thread) vs apsi ({threads or os.cpu_count()} thread(s)); "
      f"M elements/s; {runs} run(s), medians")
print(f"{'format':10} {'anchor':9} {'enc ref':>9} {'enc apsi':>9} {'ratio':>6}   {'dec ref':>9} {'dec apsi':>9} {'ratio':>6}")
worst = {}
for name in apsis[0]:
    if name not in refs[0]:
        ae, ad = med(a[name][0] for a in apsis), med(a[name][1] for a in apsis)
        print(f"{name:10} (no reference)  enc {N / ae / 1e6:9.0f}  dec {N / ad / 1e6:9.0f}")
        continue
    re_, rd = med(r[name][0] for r in refs), med(r[name][1] for r in refs)
    ae, ad = med(a[name][0] for a in apsis), med(a[name][1] for a in apsis)
    ratio_e = med(r[name][0] / a[name][0] for r, a in zip(refs, apsis))
    ratio_d = med(r[name][1] / a[name][1] for r, a in zip(refs, apsis))
    anchor = ANCHOR.get(name, "ml_dtypes")
    group = "numpy's int8/uint8 casts" if name in ("int8", "uint8") else "ml_dtypes (numpy for f16)"
    worst[group] = min(worst.get(group, 1e9), ratio_e, ratio_d)
    print(f"{name:10} {anchor:9} {N / re_ / 1e6:9.0f} {N / ae / 1e6:9.0f} {ratio_e:5.1f}x   "
          f"{N / rd / 1e6:9.0f} {N / ad / 1e6:9.0f} {ratio_d:5.1f}x")
for anchor, w in sorted(worst.items()):
    print(f"lowest median ratio against {anchor}: {w:.1f}x")
print("bar: >= 5x ml_dtypes single-thread (int8/uint8 have no ml_dtypes type; see the docstring)")
