"""
Benchmark recursive generators implemented in python
by traversing a binary tree.

Author: Kumar Aditya

pyperformance 1.14.0 bm_generators without the pyperf harness:
`python3 generators.py [LOOPS]` runs bench_generators(LOOPS) (LOOPS full
traversals of a 100,000-node tree; default 20) and prints the loop count
and the sum of all the values the traversals yielded (the original returns
the elapsed time and adds nothing up).
"""

from __future__ import annotations

from collections.abc import Iterator

import sys


class Tree:
    def __init__(self, left: Tree | None, value: int, right: Tree | None) -> None:
        self.left = left
        self.value = value
        self.right = right

    def __iter__(self) -> Iterator[int]:
        if self.left:
            yield from self.left
        yield self.value
        if self.right:
            yield from self.right


def tree(input: range) -> Tree | None:
    n = len(input)
    if n == 0:
        return None
    i = n // 2
    return Tree(tree(input[:i]), input[i], tree(input[i + 1:]))

def bench_generators(loops: int) -> int:
    assert list(tree(range(10))) == list(range(10))
    range_it = range(loops)
    iterable = tree(range(100000))
    total = 0
    for _ in range_it:
        for value in iterable:
            total += value
    return total

if __name__ == "__main__":
    loops = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    print(loops, bench_generators(loops))
