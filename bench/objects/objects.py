# The operations object-heavy programs (deltablue, richards, go, hexiom,
# raytrace) spend their time on, one at a time: CPython's side of objects.apsi.
# usage: python3 objects.py all N REPS   (prints "name ns" per line)
class Base:

    def __init__(self, a, b):
        self.a = a
        self.b = b

    def get(self):
        return self.a

    def kind(self):
        return 0

    def __eq__(self, other):
        return self is other

class K1(Base):
    def kind(self):
        return 1

class K2(Base):
    def kind(self):
        return 2

class K3(Base):
    def kind(self):
        return 3

class Child(Base):

    def __init__(self, a, b, c):
        super().__init__(a, b)
        self.c = c

class Consts:

    def __init__(self, x):
        self.x = x


Consts.ONE = Consts(1)
Consts.TWO = Consts(2)

def b_method_inherited(n):
    p = K1(1, 2)
    s = 0
    for i in range(n):
        s += p.get()
    return s

def b_method_poly(n):
    objs = [Base(0, 0), K1(0, 0), K2(0, 0), K3(0, 0)]
    s = 0
    for i in range(n // 4):
        for o in objs:
            s += o.kind()
    return s

def b_super_init(n):
    for i in range(n):
        c = Child(i, 2, 3)
    return c.a

def b_construct(n):
    for i in range(n):
        c = Base(i, 2)
    return c.a

def b_is_None(n):
    p = Base(1, None)
    s = 0
    for i in range(n):
        if p.b is None:
            s += 1
    return s

def b_struct_const(n):
    s = 0
    for i in range(n):
        if Consts.ONE is not Consts.TWO:
            s += 1
    return s

def b_eq_struct(n):
    p = Base(1, 2)
    q = Base(1, 2)
    s = 0
    for i in range(n):
        if p == q:
            s += 1
        if p != q:
            s += 2
    return s

def b_in_list(n):
    objs = [Base(i, i) for i in range(8)]
    last = objs[7]
    s = 0
    for i in range(n // 8):
        if last in objs:
            s += 1
    return s

def b_len(n):
    xs = [1, 2, 3]
    s = 0
    for i in range(n):
        s += len(xs)
    return s

def b_list_of_lists(n):
    grid = [[i * j for j in range(8)] for i in range(8)]
    s = 0
    for i in range(n // 8):
        row = grid[i & 7]
        for j in range(8):
            s += row[j]
    return s

def b_field_chain(n):
    p = Base(Base(Base(5, 0), 0), 0)
    s = 0
    for i in range(n):
        s += p.a.a.a
    return s

def b_method_args(n):
    p = Base(1, 2)
    s = 0
    for i in range(n):
        s += p.get() + p.kind()
    return s

def b_bound_method(n):
    p = Base(1, 2)
    f = p.get
    s = 0
    for i in range(n):
        s += f()
    return s

def b_isinstance(n):
    p = K2(1, 2)
    s = 0
    for i in range(n):
        if isinstance(p, Base):
            s += 1
    return s

def b_dict_str(n):
    d = {"alpha": 1, "beta": 2, "gamma": 3}
    s = 0
    for i in range(n):
        s += d["beta"]
    return s

def b_tuple_unpack(n):
    t = (1, 2)
    s = 0
    for i in range(n):
        x, y = t
        s += x + y
    return s

def b_closure_call(n):
    k = 3
    def f(x):
        return x + k
    s = 0
    for i in range(n):
        s = f(s) - k
    return s

def b_kwargs_call(n):
    def f(a, b=2, c=3):
        return a + b + c
    s = 0
    for i in range(n):
        s += f(1, c=4)
    return s

def b_list_remove(n):
    objs = [Base(i, i) for i in range(8)]
    for i in range(n // 8):
        o = objs[i & 7]
        objs.remove(o)
        objs.append(o)
    return len(objs)

def b_while_attr(n):
    p = Base(0, n)
    while p.a < p.b:
        p.a = p.a + 1
    return p.a

BENCHES = {
    "method (inherited)": b_method_inherited, "method (4 types)": b_method_poly,
    "super().__init__": b_super_init, "construct": b_construct, "is none": b_is_None,
    "struct constant": b_struct_const, "== / != (__eq__)": b_eq_struct, "in list (__eq__)": b_in_list,
    "len": b_len, "list of lists": b_list_of_lists, "field chain": b_field_chain,
    "two methods": b_method_args, "bound method": b_bound_method, "isinstance": b_isinstance,
    "dict[str]": b_dict_str, "tuple unpack": b_tuple_unpack, "closure call": b_closure_call,
    "keyword call": b_kwargs_call, "list.remove (__eq__)": b_list_remove, "while attr": b_while_attr,
}

import sys
from time import perf_counter as time
argv = sys.argv[1:]
which = argv[0]
n = int(argv[1])
reps = int(argv[2])
for name, f in BENCHES.items():
    if which != "all" and which != name:
        continue
    f(n // 10)
    best = -1.0
    for _ in range(reps):
        t0 = time()
        f(n)
        dt = time() - t0
        if best < 0.0 or dt < best:
            best = dt
    print(f"{name}\t{best / n * 1e9:.2f}")
