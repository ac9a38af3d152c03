# Held-out tensor program (issue 22): the NumPy twin of jacobi.apsi.
import time

import numpy as np

n = 512
u = np.zeros((n, n))
u[0, :] = 1.0
t0 = time.perf_counter()
for it in range(200):
    u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
t = time.perf_counter() - t0
print(f"{float(u.sum()):.10f}")
print(f"time {t:.4f}")
