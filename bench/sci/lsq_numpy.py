# Least squares by full-batch gradient descent, as a NumPy user writes it:
# the gradient derived by hand. The Apsi twin (lsq.apsi) gets its gradient
# from grad(); both print the same lines.
import sys
import time

import numpy as np


def data(n, d):
    i = np.arange(n, dtype=np.float64).reshape(n, 1)
    k = np.arange(d, dtype=np.float64).reshape(1, d)
    x = np.sin(i * 0.37 + k * 1.3) + 0.5 * np.cos(i * 0.011 * (k + 1.0))
    true_w = np.cos(np.arange(d, dtype=np.float64) * 0.7)
    y = x @ true_w + 0.1 * np.sin(np.arange(n, dtype=np.float64))
    return x, y


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    d = 32
    x, y = data(n, d)
    w = np.zeros(d)
    lr = 0.1
    t0 = time.perf_counter()
    for _ in range(steps):
        r = x @ w - y
        g = x.T @ (2.0 * r) / n
        w = w - lr * g
    t = time.perf_counter() - t0
    print(f"loss {float(np.mean((x @ w - y) ** 2)):.10f}")
    print(f"w0 {w[0]:.10f} w31 {w[d - 1]:.10f}")
    print(f"time {t:.4f}")


main()
