# Logistic regression by full-batch gradient descent, as a NumPy user
# writes it: the gradient derived by hand. The Apsi twin (logreg.apsi)
# gets its gradient from grad(); both print the same lines.
import numpy as np

from descent_numpy import descend, features, report, sizes


def data(n, d):
    x, true_w = features(n, d)
    y = (np.sin(x @ true_w * 3.0) + x @ true_w > 0.0).astype(np.float64)
    return x, y


def loss(w, x, y):
    z = x @ w
    return float(np.mean(np.maximum(z, 0.0) - z * y + np.log1p(np.exp(-np.abs(z)))))


def main():
    n, steps = sizes()
    x, y = data(n, 32)

    def gradient(w):
        z = x @ w
        p = 1.0 / (1.0 + np.exp(-z))
        return x.T @ (p - y) / n

    w, t = descend(gradient, 32, 0.5, steps)
    report(loss(w, x, y), w, t)


main()
