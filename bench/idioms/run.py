#!/usr/bin/env python3
"""Everyday Python idioms against CPython (issue 15): each case is a small
function written the way Python programs write it, timed inside the program
(the loop around it, not start-up), as an Apsi program and as a Python one
generated from the same text. The two run in turns in separate processes
(Apsi, CPython, Apsi, ...), ROUNDS times; their results must agree. The table
gives the median time of each side and the ratio CPython / Apsi (above 1:
Apsi is faster), then the geometric mean.

usage: bench/idioms/run.py APSI [ROUNDS] [CASE ...]

Python's `class P:` becomes an Apsi struct with the same two fields; nothing
else is changed.
"""

import math
import os
import statistics
import subprocess
import sys
import tempfile

CASES = {
"enumerate": ("xs = list(range(1000))\ndef f():\n    s = 0\n    for i, x in enumerate(xs):\n        s += i * x\n    return s\n", 2000),
"zip": ("xs = list(range(1000))\nys = list(range(1000))\ndef f():\n    s = 0\n    for a, b in zip(xs, ys):\n        s += a * b\n    return s\n", 2000),
"items": ("d = {str(i): i for i in range(1000)}\ndef f():\n    s = 0\n    for k, v in d.items():\n        s += v\n    return s\n", 2000),
"sorted_key": ("xs = [(i * 7919) % 1000 for i in range(1000)]\ndef f():\n    return sorted(xs, key=lambda v: -v)[0]\n", 300),
"join_split": ("words = ['w' + str(i) for i in range(200)]\ndef f():\n    t = ' '.join(words)\n    return len(t.split())\n", 3000),
"fstring": ("def f():\n    out = []\n    for i in range(200):\n        out.append(f'{i}:{i * 2.5:.2f}')\n    return len(out)\n", 2000),
"listcomp": ("xs = list(range(1000))\ndef f():\n    return len([x * 2 for x in xs if x % 3])\n", 3000),
"dictcount": ("words = [str(i % 50) for i in range(1000)]\ndef f():\n    c = {}\n    for w in words:\n        c[w] = c.get(w, 0) + 1\n    return len(c)\n", 2000),
"strbuild": ("def f():\n    s = ''\n    for i in range(500):\n        s += 'ab'\n    return len(s)\n", 3000),
"minmax_key": ("xs = [(i * 7919) % 1000 for i in range(1000)]\ndef f():\n    return max(xs, key=lambda v: v % 17) + min(xs)\n", 1000),
"any_gen": ("xs = list(range(1000))\ndef f():\n    return any(x > 998 for x in xs)\n", 2000),
"sum_gen": ("xs = list(range(1000))\ndef f():\n    return sum(x * x for x in xs)\n", 2000),
"set_ops": ("a = set(range(0, 1000, 2))\nb = set(range(0, 1000, 3))\ndef f():\n    return len(a & b) + len(a | b) + len(a - b)\n", 2000),
"slice_loop": ("xs = list(range(100))\ndef f():\n    s = 0\n    for i in range(100):\n        s += len(xs[i:])\n    return s\n", 3000),
"str_methods": ("line = '  Hello, World! 123  '\ndef f():\n    n = 0\n    for i in range(200):\n        n += len(line.strip().lower().replace('l', 'L'))\n    return n\n", 2000),
"tuple_sort": ("xs = [((i * 31) % 97, i) for i in range(1000)]\ndef f():\n    return sorted(xs)[0][1]\n", 500),
"class_instances": ("class P:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\ndef f():\n    ps = [P(i, i) for i in range(500)]\n    return sum(p.x + p.y for p in ps)\n", 1000),
"while_loop": ("def f():\n    i = 0\n    s = 0\n    while i < 2000:\n        s += i\n        i += 1\n    return s\n", 2000),
"nested_list": ("g = [[i * j for j in range(30)] for i in range(30)]\ndef f():\n    s = 0\n    for row in g:\n        for v in row:\n            s += v\n    return s\n", 3000),
"exceptions": ("def g(i):\n    if i % 2:\n        raise ValueError('x')\n    return i\ndef f():\n    n = 0\n    for i in range(200):\n        try:\n            n += g(i)\n        except ValueError:\n            n -= 1\n    return n\n", 1000),
}


def programs(name, body, n):
    py = body + f"import time\nt = time.perf_counter()\nfor _ in range({n}):\n    r = f()\nprint(r, time.perf_counter() - t)\n"
    ap = body.replace("class P:", "struct P:\n    x: any = none\n    y: any = none")
    ap += f"t = time()\nfor _ in range({n}):\n    r = f()\nprint(r, time() - t)\n"
    return ap, py


def timed(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    result, seconds = p.stdout.split()
    return result, float(seconds)


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    apsi = os.path.abspath(args[0])
    rounds = int(args[1]) if len(args) > 1 else 3
    names = args[2:] or list(CASES)
    python = os.environ.get("PYTHON", "python3")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            body, n = CASES[name]
            ap, py = programs(name, body, n)
            pa, pp = os.path.join(tmp, name + ".apsi"), os.path.join(tmp, name + ".py")
            open(pa, "w").write(ap)
            open(pp, "w").write(py)
            a_times, p_times = [], []
            for _ in range(rounds):
                ra, ta = timed([apsi, "run", pa])
                rp, tp = timed([python, pp])
                if ra.lower() != rp.lower():  # Apsi prints true, Python True
                    sys.exit(f"{name}: results differ: apsi {ra}, python {rp}")
                a_times.append(ta)
                p_times.append(tp)
            a, p = statistics.median(a_times), statistics.median(p_times)
            rows.append((name, p, a, p / a))
            print(f"{name:16s} CPython {p * 1e3:8.1f} ms   Apsi {a * 1e3:8.1f} ms   {p / a:5.2f}x", flush=True)
    geo = math.exp(sum(math.log(r[3]) for r in rows) / len(rows))
    print(f"geometric mean: {geo:.2f}x CPython ({len(rows)} idioms, {rounds} rounds)")


if __name__ == "__main__":
    main()
