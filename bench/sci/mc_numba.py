# Monte-Carlo price of an arithmetic-average Asian call (geometric Brownian
# motion, STEPS steps per path) with counter-based normals: splitmix64 of
# the (path, step) counter, two 53-bit uniforms in (0, 1), Box-Muller.
# Paths are summed in blocks of 256 in parallel (prange over blocks), the
# block sums then added in order, so any thread count gives the same bits.
# Same program as mc_native.apsi: prints the same result line, then the
# steady-state time of one pricing (the first, compiling call is not timed).
# usage: NUMBA_NUM_THREADS=N python mc_numba.py [REPS] [PATHS] [STEPS]
import math
import sys
import time

import numba
import numpy as np

REPS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
PATHS = int(sys.argv[2]) if len(sys.argv) > 2 else 262144
STEPS = int(sys.argv[3]) if len(sys.argv) > 3 else 32
BLOCK = 256

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
M1 = np.uint64(0xBF58476D1CE4E5B9)
M2 = np.uint64(0x94D049BB133111EB)


@numba.njit(inline="always")
def bits(key):
    z = np.uint64(key) * GOLDEN
    z = (z ^ (z >> np.uint64(30))) * M1
    z = (z ^ (z >> np.uint64(27))) * M2
    return z ^ (z >> np.uint64(31))


@numba.njit(inline="always")
def unit(z):
    return (np.float64(z >> np.uint64(11)) + 0.5) * (1.0 / 9007199254740992.0)


@numba.njit(parallel=True)
def price(sums, s0, strike, rate, sigma, expiry, steps):
    nb = len(sums)
    dt = expiry / steps
    drift = (rate - 0.5 * sigma * sigma) * dt
    vol = sigma * math.sqrt(dt)
    for b in numba.prange(nb):
        acc = 0.0
        for p in range(b * 256, b * 256 + 256):
            s = s0
            avg = 0.0
            for k in range(0, steps, 2):
                key = (p * steps + k) * 2 + 1
                u1 = unit(bits(key))
                u2 = unit(bits(key + 1))
                r = math.sqrt(-2.0 * math.log(u1))
                z1 = r * math.cos(2.0 * math.pi * u2)
                z2 = r * math.sin(2.0 * math.pi * u2)
                s = s * math.exp(drift + vol * z1)
                avg += s
                s = s * math.exp(drift + vol * z2)
                avg += s
            avg = avg / steps
            acc += max(avg - strike, 0.0)
        sums[b] = acc


def main():
    sums = np.zeros(PATHS // BLOCK)
    args = (100.0, 100.0, 0.05, 0.2, 1.0, STEPS)
    price(sums, *args)  # compile
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        price(sums, *args)
        times.append(time.perf_counter() - t0)
    total = 0.0
    for b in range(len(sums)):
        total += float(sums[b])
    value = math.exp(-0.05 * 1.0) * total / PATHS
    print(f"result mc paths={PATHS} steps={STEPS} price={value!r}")
    print("times " + " ".join(repr(t) for t in times))


main()
