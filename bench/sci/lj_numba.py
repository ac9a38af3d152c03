# Lennard-Jones pair forces in a periodic cubic box (minimum image by
# rounding), all pairs, the outer loop over particles in parallel (prange).
# Same program as lj_native.apsi: prints the same checksum line, then the
# steady-state time of one force evaluation (the first, compiling call is
# not timed).  usage: NUMBA_NUM_THREADS=N python lj_numba.py [REPS] [N]
import sys
import time

import numba
import numpy as np

REPS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
N = int(sys.argv[2]) if len(sys.argv) > 2 else 4000


@numba.njit
def init(x, y, z, box):
    n = len(x)
    side = 1
    while side * side * side < n:
        side += 1
    a = box / side
    for p in range(n):
        i = p // (side * side)
        j = (p // side) % side
        k = p % side
        x[p] = (i + 0.5) * a + ((p * 7919) % 1000) * 1e-4
        y[p] = (j + 0.5) * a + ((p * 104729) % 1000) * 1e-4
        z[p] = (k + 0.5) * a + ((p * 1299709) % 1000) * 1e-4


@numba.njit(parallel=True)
def forces(x, y, z, fx, fy, fz, ep, box, rc2):
    n = len(x)
    for i in numba.prange(n):
        xi = x[i]
        yi = y[i]
        zi = z[i]
        ax = 0.0
        ay = 0.0
        az = 0.0
        e = 0.0
        for j in range(n):
            if j != i:
                dx = xi - x[j]
                dy = yi - y[j]
                dz = zi - z[j]
                dx -= box * round(dx / box)
                dy -= box * round(dy / box)
                dz -= box * round(dz / box)
                r2 = dx * dx + dy * dy + dz * dz
                if r2 < rc2:
                    ir2 = 1.0 / r2
                    ir6 = ir2 * ir2 * ir2
                    f = 24.0 * ir2 * ir6 * (2.0 * ir6 - 1.0)
                    ax += f * dx
                    ay += f * dy
                    az += f * dz
                    e += 4.0 * ir6 * (ir6 - 1.0)
        fx[i] = ax
        fy[i] = ay
        fz[i] = az
        ep[i] = e


def main():
    box = (N / 0.8) ** (1.0 / 3.0)
    rc2 = 2.5 * 2.5
    x, y, z, fx, fy, fz, ep = (np.zeros(N) for _ in range(7))
    init(x, y, z, box)
    forces(x, y, z, fx, fy, fz, ep, box, rc2)  # compile
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        forces(x, y, z, fx, fy, fz, ep, box, rc2)
        times.append(time.perf_counter() - t0)
    e = 0.0
    f2 = 0.0
    for i in range(N):
        e += ep[i]
        f2 += fx[i] * fx[i] + fy[i] * fy[i] + fz[i] * fz[i]
    print(f"result lj n={N} energy={float(0.5 * e)!r} f2={float(f2)!r}")
    print("times " + " ".join(repr(t) for t in times))


main()
