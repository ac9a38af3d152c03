//! Generators on the VM (LANGUAGE.md §10.5): the invariants of suspended
//! frames (registers, cells, handlers), re-entry, nesting limits and the
//! iteration protocol through native callbacks.

mod vm_common;

use vm_common::{error, output};

#[test]
fn locals_assigned_before_a_yield_survive_it() {
    // `x` may be unassigned (read through CheckBound): resuming must not
    // reset it as a fresh call would.
    let src = "def g(flag):\n    if flag:\n        x = 1\n    yield 0\n    yield x\nprint(list(g(true)))\n";
    assert_eq!(output(src), "[0, 1]\n");
    let src = "def g(flag):\n    if flag:\n        x = 1\n    yield 0\n    yield x\nprint(list(g(false)))\n";
    let (kind, msg) = error(src);
    assert_eq!(kind, "NameError");
    assert_eq!(
        msg,
        "cannot access local variable 'x' where it is not associated with a value"
    );
}

#[test]
fn generators_of_one_function_keep_their_own_state() {
    let src = "def count(n):\n    while true:\n        yield n\n        n += 1\na = count(0)\nb = count(100)\nprint(next(a), next(b), next(a), next(b), next(a))\n";
    assert_eq!(output(src), "0 100 1 101 2\n");
}

#[test]
fn handlers_travel_with_the_frame() {
    // The `try` is open across the yield; the caller's own `try` must not
    // catch the generator's error, and the generator's must not catch the caller's.
    let src = "\
def g():
    try:
        yield 1
        raise ValueError(\"inner\")
    except ValueError as e:
        yield \"caught \" + e.message
it = g()
try:
    print(next(it))
    print(next(it))
    raise KeyError(\"outer\")
except KeyError as e:
    print(\"outer caught\", e.message)
print(next(it, \"end\"))
";
    assert_eq!(output(src), "1\ncaught inner\nouter caught outer\nend\n");
}

#[test]
fn finally_runs_when_the_generator_returns() {
    let src = "def g():\n    try:\n        yield 1\n        return 5\n    finally:\n        print(\"fin\")\nit = g()\nprint(next(it))\ntry:\n    next(it)\nexcept StopIteration as e:\n    print(\"value\", e.value)\n";
    assert_eq!(output(src), "1\nfin\nvalue 5\n");
}

#[test]
fn cells_of_a_generator_frame_survive_suspension() {
    let src = "\
def g():
    n = 0
    def bump():
        nonlocal n
        n += 1
        return n
    while n < 3:
        yield bump()
print(list(g()))
";
    assert_eq!(output(src), "[1, 2, 3]\n");
}

#[test]
fn generators_run_inside_native_callbacks() {
    let src = "def g():\n    yield 3\n    yield 1\n    yield 2\nit = g()\nprint(sorted([\"a\", \"b\", \"c\"], key=lambda v: next(it)))\n";
    assert_eq!(output(src), "['b', 'c', 'a']\n");
    let src = "def g():\n    for i in range(3):\n        yield i\nprint(list(map([10, 20], lambda x: x + sum(g()))))\n";
    assert_eq!(output(src), "[13, 23]\n");
}

#[test]
fn resuming_a_running_generator_is_an_error() {
    let src = "def g():\n    yield next(it)\nit = g()\nnext(it)\n";
    assert_eq!(
        error(src),
        ("ValueError".to_string(), "generator already executing".to_string())
    );
}

#[test]
fn deep_nesting_raises_instead_of_crashing() {
    let src = "def deep(n):\n    if n > 0:\n        yield from deep(n - 1)\n    yield n\nprint(sum(deep(100000)))\n";
    assert_eq!(error(src).0, "RecursionError");
    let src = "def deep(n):\n    if n > 0:\n        yield from deep(n - 1)\n    yield n\nprint(sum(deep(300)))\n";
    assert_eq!(output(src), "45150\n");
}

#[test]
fn generator_expressions_bind_their_outer_iterable_at_once() {
    // Python evaluates (and iterates) the outermost iterable when the
    // generator is made; the rest lazily.
    assert_eq!(
        error("g = (x for x in 5)\n"),
        ("TypeError".to_string(), "'int' object is not iterable".to_string())
    );
    let src = "xs = [1, 2]\ng = (x * k for x in xs)\nk = 10\nxs = [7]\nprint(list(g))\n";
    assert_eq!(output(src), "[10, 20]\n");
}

#[test]
fn a_struct_iterator_ends_with_stop_iteration() {
    let src = "\
struct Walker:
    i: int
    def __next__(self):
        if self.i >= 3:
            raise StopIteration(\"done\")
        self.i += 1
        return self.i
    def __iter__(self):
        return self
w = Walker(0)
print(list(w), next(w, \"end\"))
for x in Walker(1):
    print(x)
print(list(zip(Walker(0), \"ab\")), dict(enumerate(Walker(1))))
";
    assert_eq!(output(src), "[1, 2, 3] end\n2\n3\n[(1, 'a'), (2, 'b')] {0: 2, 1: 3}\n");
}

#[test]
fn lazy_adapters_pull_one_item_at_a_time() {
    let src = "\
def noisy():
    for i in range(3):
        print(\"make\", i)
        yield i
m = map(noisy(), lambda x: x * 10)
print(\"before\")
print(next(m))
print(any(x > 0 for x in noisy()))
";
    assert_eq!(output(src), "before\nmake 0\n0\nmake 0\nmake 1\ntrue\n");
}
