# Least squares by full-batch gradient descent, as a NumPy user writes it:
# the gradient derived by hand. The Apsi twin (lsq.apsi) gets its gradient
# from grad(); both print the same lines.
import numpy as np

from descent_numpy import descend, features, report, sizes


def main():
    n, steps = sizes()
    x, true_w = features(n, 32)
    y = x @ true_w + 0.1 * np.sin(np.arange(n, dtype=np.float64))

    def gradient(w):
        r = x @ w - y
        return x.T @ (2.0 * r) / n

    w, t = descend(gradient, 32, 0.1, steps)
    report(float(np.mean((x @ w - y) ** 2)), w, t)


main()
