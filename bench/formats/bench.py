#!/usr/bin/env python3
"""Encode (f32 -> format) and decode (format -> f32) of 10M values: Apsi's
`astype` against ml_dtypes' `astype` (numpy's for float16, int8, uint8),
in one run on this machine; prints M elements/s and the ratio.

    python3 bench/formats/bench.py [path/to/apsi] [--threads N]

ml_dtypes is single-threaded; Apsi runs with RAYON_NUM_THREADS threads
(default: all cores; pass --threads 1 for the single-thread figure).
Installs numpy and ml_dtypes with pip when they are missing. Times are the
best of 5 runs on both sides. A ratio > 1 means Apsi is faster.
"""
import os, subprocess, sys, textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
args = [a for a in sys.argv[1:]]
threads = None
if "--threads" in args:
    i = args.index("--threads")
    threads = args[i + 1]
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
ref = parse(subprocess.run([sys.executable, "-c", REF], capture_output=True, text=True, check=True).stdout)
apsi = parse(subprocess.run([APSI, "run", os.path.join(HERE, "formats.apsi")], capture_output=True, text=True, check=True, env=env).stdout)
import ml_dtypes
N = 10_000_000
print(f"10M f32 values; ml_dtypes {ml_dtypes.__version__} (1 thread) vs apsi ({threads or os.cpu_count()} thread(s)); M elements/s")
print(f"{'format':10} {'enc ref':>9} {'enc apsi':>9} {'ratio':>6}   {'dec ref':>9} {'dec apsi':>9} {'ratio':>6}")
worst = None
for name, (ae, ad) in apsi.items():
    if name not in ref:
        print(f"{name:10} (no reference)  enc {N / ae / 1e6:9.0f}  dec {N / ad / 1e6:9.0f}")
        continue
    re_, rd = ref[name]
    ratio_e, ratio_d = re_ / ae, rd / ad
    worst = min(filter(None, [worst, ratio_e, ratio_d]))
    print(f"{name:10} {N / re_ / 1e6:9.0f} {N / ae / 1e6:9.0f} {ratio_e:5.1f}x   {N / rd / 1e6:9.0f} {N / ad / 1e6:9.0f} {ratio_d:5.1f}x")
print(f"lowest ratio: {worst:.1f}x (bar: >= 5x ml_dtypes single-thread)")
