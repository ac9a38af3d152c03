#!/usr/bin/env python3
"""Interpreter benchmarks, one benchmark at a time, implementations taking turns.

usage: turns.py APSI ROUNDS REPS > records.jsonl

This host's single-core speed drifts by up to 1.8x over tens of seconds, and
not equally for every program (CPython's call benchmark measured 35 ns in one
run and 63 ns twenty minutes later). Running each whole suite in turn is not
enough: its benchmarks are tens of seconds apart. So each round runs every
benchmark in Apsi, CPython and Lua back to back, each in its own process, and
the report pools the rounds' samples into one median.

The programs are the unchanged anchors (../shared/bench/1_interp/interp.py,
interp.lua) and bench/interp/interp.apsi: each is cut into its definitions
and its `emit(...)` statements, and a process runs the definitions plus the
one `emit` of the benchmark at hand (timed by the program's own `timeit`:
REPS repetitions after a warm-up).
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ANCHORS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "bench", "1_interp"))
BENCHES = [
    "fib(30) recursive",
    "loop s+=i*i 10M",
    "call add(s,i) 1M",
    "string build 1M str(i)+join",
    "hashmap insert 1M int keys",
    "hashmap lookup 1M int keys",
]


def statements(lines):
    """Group lines into top-level statements (a line at column 0 and the
    indented or continuation lines after it)."""
    out = []
    for line in lines:
        if out and (line[:1] in (" ", "\t") or not line.strip()):
            out[-1].append(line)
        else:
            out.append([line])
    return ["".join(s) for s in out]


def only(source, bench):
    """The program with every `emit(...)` statement dropped except `bench`'s."""
    kept = []
    for s in statements(source.splitlines(keepends=True)):
        if s.startswith("emit(") and f'"{bench}"' not in s:
            continue
        kept.append(s)
    text = "".join(kept)
    if f'"{bench}"' not in text:
        sys.exit(f"turns.py: no emit for {bench!r} found")
    return text


def run(cmd, env=None):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"turns.py: {' '.join(cmd)} failed:\n{r.stderr}")
    return r.stdout


def main():
    apsi, rounds, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    srcs = {"apsi": open(os.path.join(HERE, "interp.apsi")).read()}
    have_anchors = os.path.exists(os.path.join(ANCHORS, "interp.py"))
    if have_anchors:
        srcs["py"] = open(os.path.join(ANCHORS, "interp.py")).read()
        srcs["lua"] = open(os.path.join(ANCHORS, "interp.lua")).read()
    with tempfile.TemporaryDirectory() as tmp:
        progs = {}
        for b_i, b in enumerate(BENCHES):
            for impl, src in srcs.items():
                ext = {"apsi": "apsi", "py": "py", "lua": "lua"}[impl]
                # (A Python program runs under the anchor's own file name, so
                # its imports resolve; see below.)
                path = os.path.join(tmp, f"b{b_i}.{ext}")
                with open(path, "w") as f:
                    f.write(only(src, b))
                progs[(b, impl)] = path
        env = dict(os.environ)
        for r in range(rounds):
            for b_i, b in enumerate(BENCHES):
                order = ["apsi", "py", "lua"] if have_anchors else ["apsi"]
                k = (r + b_i) % len(order)
                for impl in order[k:] + order[:k]:
                    p = progs[(b, impl)]
                    if impl == "apsi":
                        out = run([apsi, "run", p, str(reps)])
                    elif impl == "py":
                        env["REPS"] = str(reps)
                        code = (
                            "import sys; p, a = sys.argv[1], sys.argv[2]; "
                            "exec(compile(open(p).read(), a, 'exec'), {'__file__': a, '__name__': '__main__'})"
                        )
                        out = run([sys.executable, "-c", code, p, os.path.join(ANCHORS, "interp.py")], env)
                    else:
                        out = run(["lua5.4", p, "lua5.4", str(reps)])
                    sys.stdout.write(out)
                    sys.stdout.flush()
            print(f"round {r + 1}/{rounds} done", file=sys.stderr)


if __name__ == "__main__":
    main()
