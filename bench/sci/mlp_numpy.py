# Held-out tensor program (issue 22): the NumPy twin of mlp.apsi, with the
# backward pass of the tanh network written by hand.
import sys
import time

import numpy as np

n, d, h = 20000, 16, 64
i = np.arange(n, dtype=np.float64).reshape(n, 1)
k = np.arange(d, dtype=np.float64).reshape(1, d)
x = np.sin(i * 0.37 + k * 1.3)
y = np.sin(x.sum(1) * 0.3)
kh = np.arange(h, dtype=np.float64)
w1 = np.sin(np.arange(d * h, dtype=np.float64) * 0.7).reshape(d, h) * 0.3
w2 = np.cos(kh * 0.9) * 0.1
t0 = time.perf_counter()
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
for _ in range(steps):
    a = np.tanh(x @ w1)
    p = a @ w2
    r = 2.0 * (p - y) / n
    g2 = a.T @ r
    ga = np.outer(r, w2) * (1.0 - a * a)
    g1 = x.T @ ga
    w1 = w1 - 0.1 * g1
    w2 = w2 - 0.1 * g2
t = time.perf_counter() - t0
a = np.tanh(x @ w1); p = a @ w2
print(f"loss {float(np.mean((p - y) ** 2)):.10f}")
print(f"time {t:.4f}")
