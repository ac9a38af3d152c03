# Collection built-ins per element: CPython's side (the same programs as
# builtins.apsi).
# usage: python3 builtins.py N REPS [BENCH...]   (prints "name<TAB>best ns per element")
import sys
import time

n = int(sys.argv[1])
reps = int(sys.argv[2])
only = sys.argv[3:]

x = 12345
xs = []
for i in range(n):
    x = (x * 1103515245 + 12345) % 2147483648
    xs.append(x)
fs = [v / 2147483648.0 for v in xs]
asc = list(range(n))
desc = list(range(n, 0, -1))
ys = list(range(n))
t = tuple(xs)
ones = [1] * n
zeros = [0] * n
s = "abcdefghij" * (n // 10)
chars = list(s)
skeys = [str(v) for v in xs]


def b_sum_int():
    return sum(xs)


def b_sum_float():
    return sum(fs)


def b_min_int():
    return min(xs)


def b_max_int():
    return max(xs)


def b_min_float():
    return min(fs)


def b_max_float():
    return max(fs)


def b_sorted_random():
    return sorted(xs)


def b_sorted_sorted():
    return sorted(asc)


def b_sorted_reversed():
    return sorted(desc)


def b_sorted_rev_true():
    return sorted(asc, reverse=True)


def b_sorted_key():
    return sorted(fs, key=lambda f: -f)


def b_list_sort():
    zs = xs[:]
    zs.sort()
    return zs


def b_reversed():
    return list(reversed(xs))


def b_zip_for():
    c = 0
    for a, b in zip(xs, ys):
        c += b
    return c


def b_zip_comp():
    return [a + b for a, b in zip(xs, ys)]


def b_enumerate_for():
    c = 0
    for i, a in enumerate(xs):
        c += i
    return c


def b_enumerate_comp():
    return [i + a for i, a in enumerate(xs)]


def b_map_for():
    c = 0
    for a in map(lambda v: v + 1, ys):
        c += a
    return c


def b_map_comp():
    return [a for a in map(lambda v: v + 1, ys)]


def b_filter_for():
    c = 0
    for a in filter(lambda v: v & 1, ys):
        c += a
    return c


def b_filter_comp():
    return [a for a in filter(lambda v: v & 1, ys)]


def b_any():
    return any(zeros)


def b_all():
    return all(ones)


def b_list_of():
    return list(t)


def b_tuple_of():
    return tuple(xs)


def b_set_of():
    return set(xs)


def b_dict_zip():
    return dict(zip(xs, ys))


def b_list_comp():
    return [a * 2 for a in xs]


def b_dict_comp():
    return {a: a for a in ys}


def b_set_comp():
    return {a for a in xs}


def b_join():
    return "".join(chars)


def b_in_list():
    return -1 in xs


def b_list_str():
    return list(s)


def b_comp_str():
    return [c for c in s]


def b_dict_set_str():
    d = {}
    for k in skeys:
        d[k] = 1
    return d


def b_dict_get_str():
    d = DSTR
    c = 0
    for k in skeys:
        c += d[k]
    return c


def b_dict_get_int():
    d = DINT
    c = 0
    for k in xs:
        c += d[k]
    return c


DSTR = {k: 1 for k in skeys}
DINT = {k: 1 for k in xs}

BENCHES = [
    ("sum ints", b_sum_int), ("sum floats", b_sum_float),
    ("min ints", b_min_int), ("max ints", b_max_int),
    ("min floats", b_min_float), ("max floats", b_max_float),
    ("sorted random ints", b_sorted_random), ("sorted sorted ints", b_sorted_sorted),
    ("sorted reversed ints", b_sorted_reversed), ("sorted(reverse) sorted ints", b_sorted_rev_true),
    ("sorted(key=lambda) floats", b_sorted_key), ("list.sort random ints", b_list_sort),
    ("list(reversed(xs))", b_reversed),
    ("zip for", b_zip_for), ("zip comprehension", b_zip_comp),
    ("enumerate for", b_enumerate_for), ("enumerate comprehension", b_enumerate_comp),
    ("map for", b_map_for), ("map comprehension", b_map_comp),
    ("filter for", b_filter_for), ("filter comprehension", b_filter_comp),
    ("any", b_any), ("all", b_all),
    ("list(tuple)", b_list_of), ("tuple(list)", b_tuple_of), ("set(list)", b_set_of),
    ("dict(zip)", b_dict_zip),
    ("list comprehension", b_list_comp), ("dict comprehension", b_dict_comp),
    ("set comprehension", b_set_comp),
    ("str.join 1-char", b_join), ("in list (miss)", b_in_list),
    ("list(str)", b_list_str), ("[c for c in str]", b_comp_str),
    ("dict set str keys", b_dict_set_str), ("dict get str keys", b_dict_get_str),
    ("dict get int keys", b_dict_get_int),
]

for name, f in BENCHES:
    if only and name not in only:
        continue
    best = -1.0
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        dt = time.perf_counter() - t0
        if best < 0.0 or dt < best:
            best = dt
    print(f"{name}\t{best / n * 1e9:.3f}", flush=True)
