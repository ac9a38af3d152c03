# Logistic regression by full-batch gradient descent, as a NumPy user
# writes it: the gradient derived by hand. The Apsi twin (logreg.apsi)
# gets its gradient from grad(); both print the same lines.
import sys
import time

import numpy as np


def data(n, d):
    i = np.arange(n, dtype=np.float64).reshape(n, 1)
    k = np.arange(d, dtype=np.float64).reshape(1, d)
    x = np.sin(i * 0.37 + k * 1.3) + 0.5 * np.cos(i * 0.011 * (k + 1.0))
    true_w = np.cos(np.arange(d, dtype=np.float64) * 0.7)
    y = (np.sin(x @ true_w * 3.0) + x @ true_w > 0.0).astype(np.float64)
    return x, y


def loss(w, x, y):
    z = x @ w
    return float(np.mean(np.maximum(z, 0.0) - z * y + np.log1p(np.exp(-np.abs(z)))))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    d = 32
    x, y = data(n, d)
    w = np.zeros(d)
    lr = 0.5
    t0 = time.perf_counter()
    for _ in range(steps):
        z = x @ w
        p = 1.0 / (1.0 + np.exp(-z))
        g = x.T @ (p - y) / n
        w = w - lr * g
    t = time.perf_counter() - t0
    print(f"loss {loss(w, x, y):.10f}")
    print(f"w0 {w[0]:.10f} w31 {w[d - 1]:.10f}")
    print(f"time {t:.4f}")


main()
