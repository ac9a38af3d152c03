# What the NumPy twins of the gradient-descent programs share
# (logreg_numpy.py, lsq_numpy.py): the feature matrix, the sizes from the
# command line, the timed loop and the printed lines.
import sys
import time

import numpy as np


def features(n, d):
    """The n x d data matrix and the true weights (as the Apsi twins build them)."""
    i = np.arange(n, dtype=np.float64).reshape(n, 1)
    k = np.arange(d, dtype=np.float64).reshape(1, d)
    x = np.sin(i * 0.37 + k * 1.3) + 0.5 * np.cos(i * 0.011 * (k + 1.0))
    true_w = np.cos(np.arange(d, dtype=np.float64) * 0.7)
    return x, true_w


def sizes():
    """(rows, steps) from argv, default 100,000 and 100."""
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    return n, steps


def descend(gradient, d, lr, steps):
    """`steps` steps of full-batch descent from zero weights: (w, seconds)."""
    w = np.zeros(d)
    t0 = time.perf_counter()
    for _ in range(steps):
        w = w - lr * gradient(w)
    return w, time.perf_counter() - t0


def report(loss, w, t):
    d = len(w)
    print(f"loss {loss:.10f}")
    print(f"w0 {w[0]:.10f} w31 {w[d - 1]:.10f}")
    print(f"time {t:.4f}")
