# NumPy's pieces of one logistic-regression step (see parts.apsi), in ms.
import numpy as np, time
n,d=100000,32
i = np.arange(n, dtype=np.float64).reshape(n, 1)
k = np.arange(d, dtype=np.float64).reshape(1, d)
x = np.sin(i * 0.37 + k * 1.3) + 0.5 * np.cos(i * 0.011 * (k + 1.0))
w=np.ones(d)*0.01; r=np.ones(n)*0.5
def t(f,reps=200):
    f(); b=1e9
    for _ in range(5):
        t0=time.perf_counter()
        for _ in range(reps): f()
        b=min(b,(time.perf_counter()-t0)/reps)
    return b*1e3
print("X@w", t(lambda: x@w))
print("X.T@r", t(lambda: x.T@r))
z=x@w
print("exp", t(lambda: np.exp(-z)))
print("elem", t(lambda: 1.0/(1.0+np.exp(-z))))
print("step", t(lambda: x.T@(1.0/(1.0+np.exp(-(x@w)))-r)/n))
