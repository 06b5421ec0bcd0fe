"""The typed tree means what C means: evaluate random mixed-type update expressions from
the frontend's IR (node by node, in each node's C type) and compare bit for bit with gcc
running the same C (through the reference oracle)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from an5dpy import ir
from an5dpy.frontend import read_program_text
from an5dpy.frontend.literals import int_range
from an5dpy.check.reference import build_reference

SCALARS = {"x": ("float", 1.75), "d": ("double", -0.3), "n": ("int", 3), "s": ("short", 7),
           "u": ("unsigned int", 5), "l": ("long", -4), "c": ("signed char", -2)}
LITERALS = ("2", "3u", "0.5", "0.25f", "1.5e1f", "7L", "0x10", "1e-3", "100000")
CASTS = ("float", "double", "int", "long", "unsigned int", "short")
CALLS = ("sqrt", "sqrtf", "fabs", "fabsf", "fmin", "fmaxf", "floor", "ceilf", "trunc")

TEMPLATE = """
void f(int N, int T, {elem} A[2][N][N], float x, double d, int n, short s, unsigned u,
       long l, signed char c)
{{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++)
        A[(t+1)%2][i][j] = {value};
#pragma endscop
}}
"""


class Skip(Exception):
    """The expression has undefined or platform-dependent behaviour: draw another."""


def random_expression(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random() if depth else 0.5  # the top is always an operator
    if depth >= 4 or roll < 0.3:
        return rng.choice(["A[t%2][i][j]", "A[t%2][i-1][j]", "A[t%2][i][j+1]",
                           *SCALARS, *LITERALS])
    if roll < 0.75:
        op = rng.choice("+-*/")
        return f"({random_expression(rng, depth + 1)} {op} {random_expression(rng, depth + 1)})"
    if roll < 0.83:
        return f"-({random_expression(rng, depth + 1)})"
    if roll < 0.91:
        return f"({rng.choice(CASTS)}){random_expression(rng, depth + 1)}"
    name = rng.choice(CALLS)
    arity = len(ir.MATH_FUNCTIONS[name].params)
    return f"{name}({', '.join(random_expression(rng, depth + 1) for _ in range(arity))})"


def _np_float(ctype):
    return np.float32 if ctype == "float" else np.float64


def _wrap(value: int, ctype: str) -> int:
    low, high = int_range(ctype)
    if ctype.startswith("unsigned"):
        return value % (high + 1)
    if not low <= value <= high:
        raise Skip("signed overflow")
    return value


def evaluate(expr: ir.Expr, env: dict) -> object:
    """C semantics, one node at a time in the node's type."""
    t = expr.ctype
    if isinstance(expr, ir.Const):
        return _np_float(t)(expr.value) if ir.is_floating(t) else int(expr.value)
    if isinstance(expr, ir.Scalar):
        ctype, value = SCALARS[expr.name]
        return _np_float(ctype)(value) if ir.is_floating(ctype) else value
    if isinstance(expr, ir.Access):
        offset = tuple(index - ir.Affine.var(v) for index, v in zip(expr.indices, "ij"))
        return env["grid"][1 + offset[0].const, 1 + offset[1].const]
    if isinstance(expr, ir.Cast):
        value = evaluate(expr.operand, env)
        if ir.is_floating(t):
            return _np_float(t)(value)
        if isinstance(value, np.floating):
            if not math.isfinite(value) or abs(value) >= 2 ** 31:
                raise Skip("float to int out of range")
            value = int(value)  # truncates toward zero, like C
        return _wrap(value, t)
    if isinstance(expr, ir.Unary):
        value = evaluate(expr.operand, env)
        if expr.op == "+":
            return value
        return -value if ir.is_floating(t) else _wrap(-value, t)
    if isinstance(expr, ir.Binary):
        a, b = evaluate(expr.lhs, env), evaluate(expr.rhs, env)
        if ir.is_floating(t):
            with np.errstate(all="ignore"):
                return {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[expr.op]
        if expr.op in "/%" and b == 0:
            raise Skip("integer division by zero")
        if expr.op == "/":
            quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
            return _wrap(quotient, t)
        return _wrap({"+": a + b, "-": a - b, "*": a * b}[expr.op], t)
    if isinstance(expr, ir.Call):
        args = [evaluate(a, env) for a in expr.args]
        table = {"sqrt": np.sqrt, "fabs": np.fabs, "fmin": np.fmin, "fmax": np.fmax,
              "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc}
        fn = table.get(expr.func) or table[expr.func[:-1]]  # sqrtf -> sqrt
        with np.errstate(all="ignore"):
            return _np_float(t)(fn(*args))
    raise AssertionError(type(expr))


@pytest.mark.parametrize("seed", range(24))
def test_random_expression_matches_gcc(seed):
    rng = random.Random(seed)
    elem = "float" if seed % 2 == 0 else "double"
    for _ in range(200):
        value = random_expression(rng)
        program = read_program_text(TEMPLATE.format(elem=elem, value=value), "sem.c")
        grid = np.random.default_rng(seed).uniform(0.5, 2.0, (2, 3, 3)).astype(_np_float(elem))
        try:
            expected = evaluate(program.statements[0].value, {"grid": grid[0]})
        except Skip:
            continue
        if not math.isfinite(expected):
            continue
        break
    else:
        pytest.skip("no well-defined expression drawn")
    values = {"N": 3, "T": 1, **{name: v for name, (_, v) in SCALARS.items()}}
    params = {p.name: values[p.name] for p in program.params}
    build_reference(program).run(grid, params)
    got = grid[1, 1, 1]
    assert np.asarray(got).tobytes() == np.asarray(expected, dtype=grid.dtype).tobytes(), \
        f"{value}: gcc {got!r}, IR {expected!r}"
