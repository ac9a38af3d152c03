#!/usr/bin/env python3
"""Runs commands in turn, N times each after 3 warm-up rounds, and prints
each one's median, 25th percentile and minimum wall time in ms: for
comparing two builds on a shared, noisy machine (a slow spell falls on
all of them alike). Output goes to /dev/null.

    python3 bench/startup/alternate.py N "CMD1 ARGS" "CMD2 ARGS" ...

Commands are split like a shell would (no shell runs): give environment
variables through `/usr/bin/env NAME=value cmd ...`.
"""
import os
import shlex
import statistics
import sys
import time


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    n = int(sys.argv[1])
    cmds = [shlex.split(c) for c in sys.argv[2:]]
    devnull = os.open(os.devnull, os.O_WRONLY)
    times = [[] for _ in cmds]
    for i in range(n + 3):
        for j, c in enumerate(cmds):
            t = time.perf_counter()
            pid = os.posix_spawn(c[0], c, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
            os.waitpid(pid, 0)
            if i >= 3:
                times[j].append(time.perf_counter() - t)
    for c, t in zip(sys.argv[2:], times):
        t.sort()
        print(f"{c[-60:]:60} median {statistics.median(t) * 1e3:7.3f}  "
              f"p25 {t[len(t) // 4] * 1e3:7.3f}  min {t[0] * 1e3:7.3f}")


if __name__ == "__main__":
    main()
