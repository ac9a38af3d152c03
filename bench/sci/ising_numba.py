# Checkerboard Metropolis sweeps of the 2-D Ising model (periodic L x L
# lattice, int32 spins) with a counter-based random number: splitmix64 of
# the (seed, sweep, colour, site) counter, its high 53 bits as a float in
# [0, 1). Rows of one colour are updated in parallel (prange). Same program
# as ising_native.apsi: prints the same result line, then the steady-state
# time of SWEEPS sweeps (the first, compiling call is not timed).
# usage: NUMBA_NUM_THREADS=N python ising_numba.py [REPS] [L] [SWEEPS]
import math
import sys
import time

import numba
import numpy as np

REPS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
L = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
SWEEPS = int(sys.argv[3]) if len(sys.argv) > 3 else 20

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
M1 = np.uint64(0xBF58476D1CE4E5B9)
M2 = np.uint64(0x94D049BB133111EB)


@numba.njit(inline="always")
def uniform(key):
    z = np.uint64(key) + GOLDEN
    z = (z ^ (z >> np.uint64(30))) * M1
    z = (z ^ (z >> np.uint64(27))) * M2
    z = z ^ (z >> np.uint64(31))
    return np.float64(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@numba.njit
def init(s):
    n = s.shape[0]
    for i in range(n):
        for j in range(n):
            s[i, j] = 1 if uniform(i * n + j) < 0.5 else -1


@numba.njit(parallel=True)
def sweeps(s, beta, seed, first, count):
    n = s.shape[0]
    w4 = math.exp(-4.0 * beta)
    w8 = math.exp(-8.0 * beta)
    for t in range(first, first + count):
        for c in range(2):
            base = seed + (2 * t + c) * n * n
            for i in numba.prange(n):
                up = (i + n - 1) % n
                dn = (i + 1) % n
                for j in range((i + c) % 2, n, 2):
                    nb = s[up, j] + s[dn, j] + s[i, (j + n - 1) % n] + s[i, (j + 1) % n]
                    de = 2 * s[i, j] * nb
                    if de <= 0:
                        s[i, j] = -s[i, j]
                    else:
                        u = uniform(base + i * n + j)
                        if u < (w4 if de == 4 else w8):
                            s[i, j] = -s[i, j]


@numba.njit
def observe(s):
    n = s.shape[0]
    m = 0
    e = 0
    for i in range(n):
        for j in range(n):
            m += s[i, j]
            e -= s[i, j] * (s[(i + 1) % n, j] + s[i, (j + 1) % n])
    return m, e


def main():
    beta = 0.44
    seed = 12345
    s = np.zeros((L, L), dtype=np.int32)
    init(s)
    sweeps(s, beta, seed, 0, SWEEPS)  # compile (and the first SWEEPS sweeps)
    times = []
    for r in range(REPS):
        t0 = time.perf_counter()
        sweeps(s, beta, seed, (r + 1) * SWEEPS, SWEEPS)
        times.append(time.perf_counter() - t0)
    m, e = observe(s)
    print(f"result ising L={L} sweeps={SWEEPS * (REPS + 1)} m={m} e={e}")
    print("times " + " ".join(repr(t) for t in times))


main()
