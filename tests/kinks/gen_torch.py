#!/usr/bin/env python3
"""PyTorch's gradients at kinks and ties, for every differentiable Apsi op.

Writes tests/kinks/torch_kinks.json: one case per kink or tie (abs at 0,
maximum(x, x), clip at its bounds, max over [1, 3, 3], norm of zeros, ...),
each with the same function written for PyTorch and for Apsi, its inputs and
PyTorch's gradients. apsi-cli/tests/kinks.rs runs the Apsi side through
`grad` and requires the same values (exactly, or within 1e-12); it needs no
PyTorch. Regenerate after adding an op:

    /root/.cache/apsi-torch-venv/bin/python tests/kinks/gen_torch.py

Every function returns a tensor; the loss is its sum. Inputs are f64.
Non-finite numbers are written as the strings "inf", "-inf" and "nan".
A case with "apsi_error" is a deliberate difference: Apsi raises that error
kind where PyTorch returns the gradients shown (its "note" says why).
"""

import json
import math
import os
import sys

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)

NAN, INF = math.nan, math.inf

# (name, torch expression, Apsi expression, inputs {name: nested list}, note)
# The expressions see their inputs by name; `W(...)` is a constant tensor
# (weights that tell apart which slot a gradient lands in).
CASES = [
    # ---- elementwise arithmetic
    ("add", "x + y", "x + y", {"x": [0.0, 1.0], "y": [0.0, -1.0]}, ""),
    ("sub broadcast", "x - y", "x - y", {"x": [[1.0, 2.0], [3.0, 4.0]], "y": [0.5]}, ""),
    ("mul tie", "x * y", "x * y", {"x": [0.0, 2.0], "y": [0.0, 2.0]}, ""),
    ("div by zero", "x / y", "x / y", {"x": [1.0, 0.0, -1.0], "y": [0.0, 0.0, 2.0]}, "0/0 gives nan, as IEEE does"),
    ("pow x**2 at 0", "x ** 2.0", "x ** 2.0", {"x": [0.0, -1.5, 3.0]}, ""),
    ("pow x**0 at 0", "x ** 0.0", "x ** 0.0", {"x": [0.0, 2.0]}, "d/dx is 0 where the exponent is 0"),
    ("pow x**0.5 at 0", "x ** 0.5", "x ** 0.5", {"x": [0.0, 4.0]}, "infinite slope at 0"),
    ("pow x**y at 0", "x ** y", "x ** y", {"x": [0.0, 0.0, 0.0, 2.0, -2.0], "y": [2.0, 0.0, 0.5, 0.0, 2.0]},
     "d/dy is 0 where x == 0 and y >= 0; log of a negative base is nan"),
    ("pow 0**y", "torch.tensor(0.0) ** y", "0.0 ** y", {"y": [2.0, 0.0, 1.0]}, ""),
    ("pow 2**y", "2.0 ** y", "2.0 ** y", {"y": [0.0, -1.0]}, ""),
    ("neg", "-x", "-x", {"x": [0.0, 1.0]}, ""),
    # ---- unary functions
    ("abs at 0", "x.abs()", "abs(x)", {"x": [0.0, -2.0, 3.0]}, "the sign: 0 at 0"),
    ("abs at -0.0", "x.abs()", "abs(x)", {"x": [-0.0]}, ""),
    ("sqrt at 0", "x.sqrt()", "sqrt(x)", {"x": [0.0, 4.0]}, "a bare sqrt keeps its infinite slope at 0"),
    ("exp at -inf", "x.exp()", "exp(x)", {"x": [-INF, 0.0, -1000.0]}, ""),
    ("log at 0", "x.log()", "log(x)", {"x": [0.0, 1.0]}, ""),
    ("log1p at -1", "x.log1p()", "log1p(x)", {"x": [-1.0, 0.0]}, ""),
    ("sin cos tan at 0", "x.sin() + x.cos() + x.tan()", "sin(x) + cos(x) + tan(x)", {"x": [0.0]}, ""),
    ("tanh saturated", "x.tanh()", "tanh(x)", {"x": [0.0, 400.0, -400.0]}, ""),
    ("sigmoid saturated", "x.sigmoid()", "sigmoid(x)", {"x": [0.0, 800.0, -800.0]}, ""),
    # ---- maximum / minimum / clip / where (relu and its relatives)
    ("maximum tie", "torch.maximum(x, y)", "maximum(x, y)", {"x": [1.0, 2.0, 0.0], "y": [1.0, 1.0, 3.0]},
     "a tie splits the gradient evenly"),
    ("maximum(x, x)", "torch.maximum(x, x)", "maximum(x, x)", {"x": [1.0, -2.0]}, "both halves reach x"),
    ("minimum tie", "torch.minimum(x, y)", "minimum(x, y)", {"x": [1.0, 2.0, 0.0], "y": [1.0, 1.0, 3.0]}, ""),
    ("maximum(x, 0) at 0", "torch.maximum(x, torch.tensor(0.0))", "maximum(x, 0.0)", {"x": [0.0, 1.0, -1.0]},
     "a tie with the constant: 0.5 (torch.relu gives 0 at 0; in Apsi write clip(x, 0.0) or where(x > 0, x, 0.0))"),
    ("relu as clip at 0", "torch.relu(x)", "clip(x, 0.0)", {"x": [0.0, 1.0, -1.0]}, "relu'(0) = 0"),
    ("relu as where at 0", "torch.relu(x)", "where(x > 0, x, 0.0)", {"x": [0.0, 1.0, -1.0]}, ""),
    ("clip at both bounds", "torch.clamp(x, 0.0, 1.0)", "clip(x, 0.0, 1.0)", {"x": [0.0, 1.0, 0.5, -1.0, 2.0]},
     "strictly inside only: 0 at a bound"),
    ("clip lower bound only", "torch.clamp(x, min=0.0)", "clip(x, 0.0)", {"x": [0.0, 5.0, -INF, INF]}, ""),
    ("clip upper bound only", "torch.clamp(x, max=1.0)", "clip(x, none, 1.0)", {"x": [1.0, -5.0, -INF]}, ""),
    ("clip lo == hi", "torch.clamp(x, 1.0, 1.0)", "clip(x, 1.0, 1.0)", {"x": [1.0, 0.0, 2.0]}, ""),
    ("where at the boundary", "torch.where(x > 0, x, -x)", "where(x > 0, x, -x)", {"x": [0.0, 1.0, -1.0]}, ""),
    # ---- reductions
    ("sum", "x.sum(0)", "x.sum(axis=0)", {"x": [[1.0, 2.0], [3.0, 4.0]]}, ""),
    ("mean", "x.mean(1)", "x.mean(axis=1)", {"x": [[1.0, 2.0], [3.0, 4.0]]}, ""),
    ("max ties (all)", "x.max()", "x.max()", {"x": [1.0, 3.0, 3.0]}, "ties share the gradient evenly"),
    ("min ties (all)", "x.min()", "x.min()", {"x": [1.0, 1.0, 3.0]}, ""),
    ("max ties along an axis", "x.amax(1) * W([1.0, 2.0])", "x.max(axis=1) * W([1.0, 2.0])",
     {"x": [[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]},
     "Apsi's max(axis) is amax: ties share evenly (torch.max(x, dim) instead sends it all to the returned index)"),
    ("min ties along an axis", "x.amin(0)", "x.min(axis=0)", {"x": [[1.0, 0.0], [1.0, 5.0]]}, ""),
    ("max keepdims", "x.amax(0, keepdim=True)", "x.max(axis=0, keepdims=true)", {"x": [[4.0, 1.0], [4.0, 2.0]]}, ""),
    ("prod with one zero", "x.prod()", "x.prod()", {"x": [2.0, 0.0, 3.0]}, "the zero's slot gets the product of the others"),
    ("prod with two zeros", "x.prod()", "x.prod()", {"x": [2.0, 0.0, 0.0]}, ""),
    ("prod along an axis with zeros", "x.prod(1)", "x.prod(axis=1)", {"x": [[2.0, 0.0, 3.0], [0.0, 0.0, 1.0], [1.0, 2.0, 4.0]]}, ""),
    ("var of a constant", "x.var()", "x.var(ddof=1)", {"x": [1.0, 1.0, 1.0]}, ""),
    ("std of a constant", "x.std(correction=0)", "x.std()", {"x": [2.0, 2.0, 2.0]}, "0 where the std is 0"),
    ("std along an axis", "x.std(1, correction=1)", "x.std(axis=1, ddof=1)", {"x": [[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]]}, ""),
    ("cumsum", "x.cumsum(0) * W([1.0, 2.0, 3.0])", "x.cumsum() * W([1.0, 2.0, 3.0])", {"x": [0.0, 0.0, 0.0]}, ""),
    ("norm of zeros", "torch.linalg.vector_norm(x)", "norm(x)", {"x": [0.0, 0.0, 0.0]}, "0 at the origin"),
    ("norm method of zeros", "x.norm()", "x.norm()", {"x": [[0.0, 0.0], [0.0, 0.0]]}, ""),
    ("norm along an axis, a zero row", "torch.linalg.vector_norm(x, dim=1)", "x.norm(axis=1)",
     {"x": [[0.0, 0.0], [3.0, 4.0]]}, ""),
    ("norm keepdims", "torch.linalg.vector_norm(x, dim=0, keepdim=True)", "norm(x, axis=0, keepdims=true)",
     {"x": [[0.0, 3.0], [0.0, 4.0]]}, ""),
    ("softmax ties", "torch.softmax(x, 0) * W([1.0, 2.0, 3.0])", "softmax(x) * W([1.0, 2.0, 3.0])",
     {"x": [1.0, 1.0, 1.0]}, ""),
    ("sort ties (stable)", "torch.sort(x, stable=True).values * W([1.0, 2.0, 3.0])", "sort(x) * W([1.0, 2.0, 3.0])",
     {"x": [1.0, 1.0, 0.0]}, "equal elements keep their order"),
    # ---- shapes and indexing
    ("reshape and transpose", "x.reshape(3, 2).T * W([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])",
     "x.reshape(3, 2).T * W([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])", {"x": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]}, ""),
    ("repeated index", "x[[0, 0, 1]]", "x[[0, 0, 1]]", {"x": [1.0, 2.0, 3.0]}, "repeats accumulate"),
    ("index of a transposed tensor", "x.T[0] * W([1.0, 2.0])", "x.T[0] * W([1.0, 2.0])",
     {"x": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]}, ""),
    ("slice with a negative step", "x.flip(0)[::2] * W([1.0, 2.0])", "x[::-2] * W([1.0, 2.0])", {"x": [1.0, 2.0, 3.0, 4.0]}, ""),
    ("mask", "x[x > 1.0]", "x[x > 1.0]", {"x": [1.0, 2.0, 3.0]}, ""),
    ("concat", "torch.cat([x, x * x]) * W([1.0, 2.0, 3.0, 4.0])", "concat([x, x * x]) * W([1.0, 2.0, 3.0, 4.0])",
     {"x": [0.0, 3.0]}, ""),
    ("stack", "torch.stack([x, y], 1)", "stack([x, y], axis=1)", {"x": [1.0, 2.0], "y": [3.0, 4.0]}, ""),
    ("astype f32 and back", "x.float().double() * W([2.0])", "x.astype(f32).astype(f64) * W([2.0])", {"x": [0.1]}, ""),
    ("matmul", "x @ y", "x @ y", {"x": [[1.0, 0.0], [0.0, 0.0]], "y": [[0.0, 2.0], [3.0, 0.0]]}, ""),
    ("dot", "torch.dot(x, y)", "dot(x, y)", {"x": [0.0, 1.0], "y": [2.0, 0.0]}, ""),
    ("outer", "torch.outer(x, y)", "outer(x, y)", {"x": [0.0, 1.0], "y": [2.0, 0.0, 1.0]}, ""),
    # ---- the newer operations
    ("softplus at the threshold", "F.softplus(x)", "softplus(x)", {"x": [20.0, 20.000001, 19.999999, 0.0, -30.0]},
     "sigmoid(beta*x) up to beta*x == threshold, 1 above it"),
    ("softplus beta threshold", "F.softplus(x, beta=2.0, threshold=10.0)", "softplus(x, beta=2.0, threshold=10.0)",
     {"x": [5.0, 5.1, 0.0, -1.0]}, ""),
    ("logaddexp ties", "torch.logaddexp(x, y)", "logaddexp(x, y)",
     {"x": [1.0, 1000.0, -1000.0, 0.0], "y": [1.0, 1000.0, -1000.0, 0.0]}, "a tie gives 0.5 to each side"),
    ("logaddexp infinities", "torch.logaddexp(x, y)", "logaddexp(x, y)",
     {"x": [-INF, INF, INF, 0.0], "y": [-INF, INF, 1.0, -INF]},
     "equal infinities: nan (inf - inf inside 1/(1 + exp(y - x))); one infinite side takes all"),
    ("logaddexp broadcast", "torch.logaddexp(x, y)", "logaddexp(x, y)", {"x": [[0.0], [1.0]], "y": [0.0, 1.0]}, ""),
    ("roll", "torch.roll(x, 1, 1) * W([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])",
     "roll(x, 1, axis=1) * W([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])", {"x": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]}, ""),
    ("roll flat", "torch.roll(x, -1) * W([[1.0, 2.0], [3.0, 4.0]])", "roll(x, -1) * W([[1.0, 2.0], [3.0, 4.0]])",
     {"x": [[1.0, 2.0], [3.0, 4.0]]}, ""),
    ("index_add repeated", "torch.index_add(x, 0, torch.tensor([0, 0, 2]), y) * W([1.0, 2.0, 3.0])",
     "index_add(x, 0, [0, 0, 2], y) * W([1.0, 2.0, 3.0])", {"x": [0.0, 0.0, 0.0], "y": [1.0, 2.0, 3.0]},
     "each source slot gets the gradient of the slot it was added into"),
    ("index_add along axis 1", "torch.index_add(x, 1, torch.tensor([1, 1]), y) * W([[1.0, 2.0], [3.0, 4.0]])",
     "index_add(x, 1, [1, 1], y) * W([[1.0, 2.0], [3.0, 4.0]])", {"x": [[0.0, 0.0], [0.0, 0.0]], "y": [[1.0, 2.0], [3.0, 4.0]]}, ""),
    ("bincount weights", "torch.zeros(4).index_add(0, torch.tensor([0, 2, 2, 3]), y) * W([1.0, 2.0, 3.0, 4.0])",
     "bincount([0, 2, 2, 3], weights=y) * W([1.0, 2.0, 3.0, 4.0])", {"y": [1.0, 1.0, 1.0, 1.0]},
     "torch.bincount has no gradient; the same sum written as index_add"),
    # ---- deliberate differences
    ("floor", "x.floor()", "floor(x)", {"x": [0.5, 1.0]},
     "deliberate: Apsi raises ValueError (floor/ceil/round/sign are not differentiable) instead of a silent 0"),
    ("round", "x.round()", "x.round()", {"x": [0.5, 1.5]}, "deliberate, as floor"),
    ("sign", "x.sign()", "sign(x)", {"x": [0.0, 2.0]}, "deliberate, as floor"),
]

ERRORS = {"floor": "ValueError", "round": "ValueError", "sign": "ValueError"}


def enc(v):
    if isinstance(v, list):
        return [enc(x) for x in v]
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def grads(expr, inputs):
    xs = {k: torch.tensor(v, requires_grad=True) for k, v in inputs.items()}
    env = {"torch": torch, "F": F, "W": lambda v: torch.tensor(v)}
    env.update(xs)
    out = eval(expr, env)
    out.sum().backward()
    return {k: (x.grad if x.grad is not None else torch.zeros_like(x)).tolist() for k, x in xs.items()}


def main():
    cases = []
    for name, texpr, aexpr, inputs, note in CASES:
        c = {
            "name": name,
            "torch": texpr,
            "apsi": aexpr,
            "inputs": {k: enc(v) for k, v in inputs.items()},
            "grads": {k: enc(v) for k, v in grads(texpr, inputs).items()},
        }
        if name in ERRORS:
            c["apsi_error"] = ERRORS[name]
        if note:
            c["note"] = note
        cases.append(c)
    doc = {
        "generator": "tests/kinks/gen_torch.py",
        "torch_version": torch.__version__,
        "dtype": "float64",
        "loss": "sum of the function's result",
        "notes": [
            "Apsi computes the same gradients as PyTorch at every kink and tie here, except where a case has apsi_error.",
            "floor, ceil, round and sign: PyTorch returns 0 everywhere; Apsi raises ValueError when grad traces them (deliberate: a silent zero gradient hides a mistake).",
            "NaN inputs to maximum/minimum are not covered (PyTorch passes the full gradient to both sides there).",
            "torch.max(x, dim) sends a tie's gradient to the one index it returns; Apsi's max(axis=...) is amax, which shares it evenly.",
        ],
        "cases": cases,
    }
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "torch_kinks.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{len(cases)} cases -> {path}")


if __name__ == "__main__":
    main()
