"""Evaluate typed IR expressions on numpy arrays with C's semantics.

Every node computes in its own C type (``float`` as float32, ``double`` as float64, ``int``
as int32, ...) and every conversion is an explicit node, so numpy rounds exactly where the
C compiler does (no contraction, no excess precision: what gcc -O2 -ffp-contract=off does
on x86-64). Integer division and remainder truncate toward zero as in C.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Mapping

import numpy as np

from an5dpy.errors import InternalError
from an5dpy.ir import (MATH_FUNCTIONS, Binary, Call, Cast, Const, Expr, MathFunction, Read,
                       Scalar, Unary, walk)

NUMPY_TYPES: Mapping[str, type] = {
    "float": np.float32, "double": np.float64,
    "int": np.int32, "unsigned int": np.uint32, "long": np.int64, "unsigned long": np.uint64,
    "long long": np.int64, "unsigned long long": np.uint64,
    "_Bool": np.int32, "bool": np.int32, "char": np.int32, "signed char": np.int32,
    "unsigned char": np.int32, "short": np.int32, "unsigned short": np.int32,
}


def numpy_type(ctype: str) -> type:
    try:
        return NUMPY_TYPES[ctype]
    except KeyError:
        raise InternalError(f"no numpy type for C type {ctype!r}") from None


def _c_div(a, b):
    if np.issubdtype(np.asarray(a).dtype, np.integer):
        q = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -q, q).astype(np.asarray(a).dtype)
    return a / b


def _c_mod(a, b):
    return a - _c_div(a, b) * b


_BINARY = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": _c_div, "%": _c_mod}

_MATH = {
    "sqrt": np.sqrt, "fabs": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "round": lambda x: np.where(x < 0, -np.floor(-x + 0.5), np.floor(x + 0.5)).astype(x.dtype),
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "cbrt": np.cbrt, "pow": np.power, "fmin": np.fmin, "fmax": np.fmax,
    "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign, "fmod": np.fmod,
}


def _math(name: str) -> Callable:
    """Element-wise C math function. Exact ones (sqrt, fabs, ...) through numpy, which
    rounds them correctly as IEEE 754 requires; the others through the C library itself,
    so results match a program compiled with gcc on this machine bit for bit (numpy's
    vectorised exp or pow can differ from glibc's by an ulp)."""
    fn = MATH_FUNCTIONS[name]
    base = name[:-1] if name.endswith("f") and name[:-1] in MATH_FUNCTIONS else name
    if fn.exact and base in _MATH:
        return _MATH[base]
    return _libm_function(fn)


@lru_cache(maxsize=None)
def _libm_function(fn: MathFunction) -> Callable:
    import ctypes
    import ctypes.util
    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    ctype = ctypes.c_float if fn.result == "float" else ctypes.c_double
    cfunc = getattr(libm, fn.name)
    cfunc.restype = ctype
    cfunc.argtypes = [ctype] * len(fn.params)
    result = numpy_type(fn.result)
    ufunc = np.frompyfunc(cfunc, len(fn.params), 1)

    def call(*args):
        return np.asarray(ufunc(*args), dtype=result)
    return call


def is_exact(expr: Expr) -> bool:
    """True when CPU and GPU (exact build) must agree bit for bit: only + - * /, casts and
    correctly rounded or exact math functions."""
    return all(MATH_FUNCTIONS[n.func].exact for n in walk(expr) if isinstance(n, Call))


Reader = Callable[[Read], np.ndarray]


def compile_expr(expr: Expr, scalars: Mapping[str, int | float] | None = None
                 ) -> Callable[[Reader], np.ndarray]:
    """Turn an expression into a function of a read callback, evaluated with numpy."""
    scalars = dict(scalars or {})

    def build(e: Expr) -> Callable[[Reader], np.ndarray]:
        t = numpy_type(e.ctype)
        if isinstance(e, Const):
            value = t(e.value)
            return lambda read: value
        if isinstance(e, Scalar):
            if e.name not in scalars:
                raise InternalError(f"no value for scalar {e.name!r}")
            value = t(scalars[e.name])
            return lambda read: value
        if isinstance(e, Read):
            return lambda read: read(e)
        if isinstance(e, Cast):
            inner = build(e.operand)
            src_float = e.operand.ctype in ("float", "double")
            if src_float and np.issubdtype(t, np.integer):
                return lambda read: np.trunc(inner(read)).astype(t)

            def cast(read):
                value = inner(read)
                return value.astype(t) if isinstance(value, np.ndarray) else t(value)
            return cast
        if isinstance(e, Unary):
            inner = build(e.operand)
            if e.op == "-":
                return lambda read: -inner(read)
            return inner
        if isinstance(e, Binary):
            # Fold left-deep chains (a sum of 729 terms) in a loop, not 729 nested calls.
            chain = []
            node = e
            while isinstance(node, Binary):
                chain.append((_BINARY[node.op], node.rhs))
                node = node.lhs
            first = build(node)
            rest = [(fn, build(rhs)) for fn, rhs in reversed(chain)]

            def fold(read):
                value = first(read)
                for fn, rhs in rest:
                    value = fn(value, rhs(read))
                return value
            return fold
        if isinstance(e, Call):
            fn = _math(e.func)
            args = [build(a) for a in e.args]
            return lambda read: fn(*[np.asarray(a(read)) for a in args])
        raise InternalError(f"cannot evaluate {type(e).__name__}")

    return build(expr)
