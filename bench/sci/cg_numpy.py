# Conjugate gradients for the 2-D Poisson equation (5-point Laplacian,
# zero Dirichlet boundary) with a matrix-free operator, as a NumPy user
# writes it. The Apsi twin is cg.apsi; both print the same lines.
import sys
import time

import numpy as np


def laplacian(p):
    ap = 4.0 * p
    ap[1:, :] -= p[:-1, :]
    ap[:-1, :] -= p[1:, :]
    ap[:, 1:] -= p[:, :-1]
    ap[:, :-1] -= p[:, 1:]
    return ap


def solve(b, iters):
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rs = float((r * r).sum())
    for _ in range(iters):
        ap = laplacian(p)
        alpha = rs / float((p * ap).sum())
        x += alpha * p
        r -= alpha * ap
        rs_new = float((r * r).sum())
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x, rs


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 512
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    i = np.arange(n, dtype=np.float64).reshape(n, 1)
    j = np.arange(n, dtype=np.float64).reshape(1, n)
    b = np.sin(i * 0.05) * np.cos(j * 0.03) + 0.001 * (i + j)
    t0 = time.perf_counter()
    x, rs = solve(b, iters)
    t = time.perf_counter() - t0
    print(f"residual {rs:.6e}")
    print(f"checksum {float(x.sum()):.8e}")
    print(f"time {t:.4f}")


main()
