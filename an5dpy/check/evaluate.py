"""Evaluate typed IR expressions on numpy arrays with C's semantics.

Every node computes in its own C type (``float`` as float32, ``double`` as float64, ``int``
as int32, ...) and every conversion is an explicit node, so numpy rounds exactly where the
C compiler does (no contraction, no excess precision: what gcc -O2 -ffp-contract=off does
on x86-64). Integer division and remainder truncate toward zero as in C.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from an5dpy.cache import cache_dir
from an5dpy.check.reference import CTYPES, REFERENCE_CFLAGS, compile_library, compiler_version
from an5dpy.errors import InternalError
from an5dpy.ir import (MATH_FUNCTIONS, Binary, Call, Cast, Const, CoefRead, Expr, MathFunction,
                       Read, Scalar, Unary, walk)

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

def _round_half_away(x):
    """C's round: halfway cases away from zero, the sign of zero kept (x - trunc(x) is
    exact, and so is trunc(x) +- 1 wherever x has a fraction)."""
    whole = np.trunc(x)
    away = np.abs(x - whole) >= 0.5
    return np.copysign(np.where(away, whole + np.sign(x), whole), x).astype(x.dtype)


#: Exact functions numpy computes exactly as glibc does, bit for bit (signed zeros and
#: NaN payloads included); tests/check/test_evaluate.py holds every function of the table
#: to gcc's results. fmin and fmax are not here: on two zeros of opposite signs numpy's
#: answer depends on whether it takes its scalar or its vectorised path.
_NUMPY_EXACT: Mapping[str, Callable] = {
    "sqrt": np.sqrt, "fabs": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "round": _round_half_away, "rint": np.rint, "nearbyint": np.rint,
    "copysign": np.copysign, "fmod": np.fmod,
}


def _math(name: str) -> Callable:
    """Element-wise C math function. Exact ones numpy computes bit-identically to glibc go
    through numpy (vectorised); every other one through the C library itself, so results
    match a program compiled with gcc on this machine bit for bit (numpy's vectorised exp
    or pow can differ from glibc's by an ulp)."""
    fn = MATH_FUNCTIONS[name]
    if fn.exact and fn.base in _NUMPY_EXACT:
        return _NUMPY_EXACT[fn.base]
    return _libm_function(fn)


# --------------------------------------------------------------------------- libm loops
#
# A call of glibc per element through ctypes costs about a microsecond, which made a
# program with a few math calls simulate for minutes. Instead gcc compiles, once per
# machine, one loop per function of the table over whole arrays, with the oracle's own
# flags, so each element is computed by the very call the oracle's code makes.

_VECTOR_PREFIX = "an5d_vec_"


def vector_source() -> str:
    """The C file of the array loops: ``void an5d_vec_NAME(long n, const T1 *a0, ...,
    T *out)`` computes ``out[i] = NAME(a0[i], ...)`` for every function of the table."""
    lines = ["#include <math.h>", ""]
    for name in sorted(MATH_FUNCTIONS):
        fn = MATH_FUNCTIONS[name]
        params = "".join(f", const {p} *a{k}" for k, p in enumerate(fn.params))
        args = ", ".join(f"a{k}[i]" for k in range(len(fn.params)))
        lines += [f"void {_VECTOR_PREFIX}{name}(long n{params}, {fn.result} *out)",
                  f"{{ for (long i = 0; i < n; i++) out[i] = {name}({args}); }}"]
    return "\n".join(lines) + "\n"


def libm_cache_dir() -> Path:
    """Where the compiled loops are kept across processes (:mod:`an5dpy.cache`)."""
    return cache_dir("libm")


def _library_key(source: str, cc: str) -> str:
    text = "\0".join([source, compiler_version(cc), *REFERENCE_CFLAGS])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def build_vector_library(directory: Path, cc: str = "gcc") -> Path:
    """The loops of :func:`vector_source` as a shared library in ``directory``, compiled
    unless a library of the same source and compiler is there. Each process compiles in a
    folder of its own and renames the library into place, so processes building at once
    each see a whole library (the last rename wins; all are the same)."""
    source = vector_source()
    final = directory / f"vec-{_library_key(source, cc)}.so"
    if final.is_file():
        return final
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".build-", dir=directory) as work:
        built = compile_library(source, work, "vec", "the math loops", cc)
        os.replace(built, final)
    return final


#: The folder of a library compiled outside the cache; it lives as long as the process,
#: which has the library mapped.
_private_folder: tempfile.TemporaryDirectory | None = None


@lru_cache(maxsize=None)
def _vector_library() -> ctypes.CDLL:
    global _private_folder
    try:
        return ctypes.CDLL(str(build_vector_library(libm_cache_dir())))
    except OSError:
        # a cache that cannot be written, or a library there that does not load, only
        # costs a compilation per process
        _private_folder = tempfile.TemporaryDirectory(prefix="an5d-libm-")
        return ctypes.CDLL(str(build_vector_library(Path(_private_folder.name))))


@lru_cache(maxsize=None)
def _libm_function(fn: MathFunction) -> Callable:
    cfunc = getattr(_vector_library(), _VECTOR_PREFIX + fn.name)
    cfunc.restype = None
    cfunc.argtypes = [ctypes.c_long] + [ctypes.c_void_p] * (len(fn.params) + 1)
    params = [numpy_type(p) for p in fn.params]
    result = numpy_type(fn.result)

    def call(*args):
        # the arguments are already of the parameters' types (the IR converts them)
        broadcast = np.broadcast_arrays(*args)
        inputs = [np.ascontiguousarray(a, dtype=t) for a, t in zip(broadcast, params)]
        out = np.empty(broadcast[0].shape, dtype=result)  # 0-d where every input is
        cfunc(out.size, *[a.ctypes.data for a in inputs], out.ctypes.data)
        return out
    return call


# --------------------------------------------------------------------------- gcc's folds
#
# gcc evaluates a math call whose arguments are constants while it compiles (with MPFR,
# correctly rounded, at every optimisation level), where the C library would round its
# own way at run time: glibc's cbrt(2.0) is an ulp above gcc's folded value. The oracle is
# the user's loop compiled by gcc, so the simulator asks gcc for such a call's value.

def _c_literal(value, ctype: str) -> str | None:
    """``value`` spelt as a C constant of ``ctype`` (hexadecimal, exact); None for a NaN or
    an infinity, which has no literal."""
    if ctype in ("int", "long"):
        return str(int(value))
    if not np.isfinite(value):
        return None
    return float(value).hex() + ("f" if ctype == "float" else "")


@lru_cache(maxsize=None)
def _gcc_call(name: str, literals: tuple[str, ...]):
    """What the oracle's code computes for ``name(literals)``: the call compiled with the
    oracle's flags into a function and called (gcc's folded constant, or the C library's
    result where gcc leaves the call to run time)."""
    fn = MATH_FUNCTIONS[name]
    source = (f"#include <math.h>\n{fn.result} an5d_folded(void) "
              f"{{ return {name}({', '.join(literals)}); }}\n")
    with tempfile.TemporaryDirectory(prefix="an5d-fold-") as work:
        library = ctypes.CDLL(compile_library(source, work, "fold", f"the constant {name}"))
        function = library.an5d_folded
        function.restype = CTYPES[fn.result]
        return numpy_type(fn.result)(function())


def constant_call(name: str, values) -> np.generic | None:
    """The value gcc's code gives the call of ``name`` on the constants ``values`` (of its
    parameters' types); None where an argument has no literal (NaN, infinity), whose call
    then runs as any other."""
    fn = MATH_FUNCTIONS[name]
    literals = tuple(_c_literal(v, t) for v, t in zip(values, fn.params))
    if None in literals:
        return None
    return _gcc_call(name, literals)


def _is_constant(expr: Expr) -> bool:
    """No read and no scalar parameter: gcc sees constants only."""
    return not any(isinstance(n, (Read, CoefRead, Scalar)) for n in walk(expr))


def is_exact(expr: Expr) -> bool:
    """True when CPU and GPU (exact build) must agree bit for bit: only + - * /, casts and
    correctly rounded or exact math functions."""
    return all(MATH_FUNCTIONS[n.func].exact for n in walk(expr) if isinstance(n, Call))


#: The values of an array read (of the grid or of a read-only array) at every cell evaluated.
Reader = Callable[[Read | CoefRead], np.ndarray]


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
        if isinstance(e, (Read, CoefRead)):
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
            if all(_is_constant(a) for a in e.args):
                values = [a(None) for a in args]  # constants read nothing
                folded = constant_call(e.func, values)
                value = fn(*map(np.asarray, values)) if folded is None else folded
                return lambda read: value
            return lambda read: fn(*[np.asarray(a(read)) for a in args])
        raise InternalError(f"cannot evaluate {type(e).__name__}")

    return build(expr)
