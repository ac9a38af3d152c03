# Python-compatibility features at the cost of one operation: CPython's side.
# usage: python3 compat.py BENCH N REPS   (prints the best ns per operation)
import sys
import time


class P:
    def __init__(self, x):
        self.x = x

    def get(self):
        return self.x


class V:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __add__(self, o):
        return V(self.x + o.x, self.y + o.y)


def gen(n):
    i = 0
    while i < n:
        yield i
        i += 1


def b_method(n):
    p = P(1)
    s = 0
    for i in range(n):
        s += p.get()
    return s


def b_dunder(n):
    v = V(0, 0)
    one = V(1, 1)
    for i in range(n):
        v = v + one
    return v.x


def b_generator(n):
    s = 0
    for x in gen(n):
        s += x
    return s


def b_set(n):
    st = set(range(1000))
    c = 0
    for i in range(n):
        if (i & 2047) in st:
            c += 1
    return c


def b_genexp_sum(n):
    return sum(x for x in range(n))

def chain(d, n):
    if d == 0:
        yield from gen(n)
    else:
        yield from chain(d - 1, n)

def b_yield_from(n):
    s = 0
    for x in chain(10, n):
        s += x
    return s

def b_sum_gen(n):
    return sum(gen(n))

BENCHES = {"method call": b_method, "dunder +": b_dunder, "generator step": b_generator, "set lookup": b_set,
           "sum(genexp)": b_genexp_sum, "yield from 10 deep": b_yield_from, "sum(generator)": b_sum_gen}
bench, n, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
f = BENCHES[bench]
f(n // 10)
best = None
for _ in range(reps):
    t0 = time.perf_counter()
    f(n)
    dt = time.perf_counter() - t0
    best = dt if best is None or dt < best else best
print(f"{best / n * 1e9:.2f}")
