# The assignment step of k-means: each of N points (D coordinates) goes to
# its nearest of K centres (squared distance, first centre on ties); the
# loop over points in parallel (prange). Same program as kmeans_native.apsi:
# prints the same result line (the sum of labels and of the distances,
# added in order), then the steady-state time of one assignment pass (the
# first, compiling call is not timed).
# usage: NUMBA_NUM_THREADS=N python kmeans_numba.py [REPS] [N] [K] [D]
import sys
import time

import numba
import numpy as np

REPS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
N = int(sys.argv[2]) if len(sys.argv) > 2 else 1000000
K = int(sys.argv[3]) if len(sys.argv) > 3 else 16
D = int(sys.argv[4]) if len(sys.argv) > 4 else 4


@numba.njit
def init(x, c):
    for i in range(x.shape[0]):
        for t in range(x.shape[1]):
            x[i, t] = ((i * 7919 + t * 104729) % 10007) / 10007.0
    for j in range(c.shape[0]):
        for t in range(c.shape[1]):
            c[j, t] = ((j * 31 + t * 17) % 101) / 101.0


@numba.njit(parallel=True)
def assign(x, c, labels, dist):
    n = x.shape[0]
    k = c.shape[0]
    d = x.shape[1]
    for i in numba.prange(n):
        best = 0
        bd = np.inf
        for j in range(k):
            s = 0.0
            for t in range(d):
                diff = x[i, t] - c[j, t]
                s += diff * diff
            if s < bd:
                bd = s
                best = j
        labels[i] = best
        dist[i] = bd


def main():
    x = np.zeros((N, D))
    c = np.zeros((K, D))
    labels = np.zeros(N, dtype=np.int64)
    dist = np.zeros(N)
    init(x, c)
    assign(x, c, labels, dist)  # compile
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        assign(x, c, labels, dist)
        times.append(time.perf_counter() - t0)
    total = 0
    inertia = 0.0
    for i in range(N):
        total += int(labels[i])
        inertia += float(dist[i])
    print(f"result kmeans n={N} k={K} d={D} labels={total} inertia={inertia!r}")
    print("times " + " ".join(repr(t) for t in times))


main()
