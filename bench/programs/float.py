"""
Artificial, floating point-heavy benchmark originally used by Factor.

pyperformance 1.14.0 bm_float without the pyperf harness:
`python3 float.py [LOOPS]` runs benchmark(POINTS) LOOPS times (default 10)
and prints the loop count and the final (maximized) point of the last loop.
"""
import sys

from math import sin, cos, sqrt


POINTS = 100000


class Point(object):
    __slots__ = ('x', 'y', 'z')

    def __init__(self, i):
        self.x = x = sin(i)
        self.y = cos(i) * 3
        self.z = (x * x) / 2

    def __repr__(self):
        return "<Point: x=%s, y=%s, z=%s>" % (self.x, self.y, self.z)

    def normalize(self):
        x = self.x
        y = self.y
        z = self.z
        norm = sqrt(x * x + y * y + z * z)
        self.x /= norm
        self.y /= norm
        self.z /= norm

    def maximize(self, other):
        self.x = self.x if self.x > other.x else other.x
        self.y = self.y if self.y > other.y else other.y
        self.z = self.z if self.z > other.z else other.z
        return self


def maximize(points):
    next = points[0]
    for p in points[1:]:
        next = next.maximize(p)
    return next


def benchmark(n):
    points = [None] * n
    for i in range(n):
        points[i] = Point(i)
    for p in points:
        p.normalize()
    return maximize(points)


if __name__ == "__main__":
    loops = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    result = None
    for _ in range(loops):
        result = benchmark(POINTS)
    print(loops, result)
