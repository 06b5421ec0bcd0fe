"""The numpy evaluator's math functions against glibc as gcc calls them.

Every function of ir.MATH_FUNCTIONS, float and double, on special values (signed zeros,
infinities, NaN, subnormals, halfway cases, huge integers) and on random values of every
magnitude: the evaluator must return gcc's results bit for bit, except where C leaves
the bits open (which NaN; the sign of fmin/fmax of two zeros). The oracle is a shared
library compiled with the gcc oracle's own flags (check/reference.py), which also proves
that those flags see a prototype of every function (the POSIX Bessel functions included).
"""

from __future__ import annotations

import ctypes
import math
import os
import subprocess
import sys
from functools import lru_cache

import numpy as np
import pytest

from an5dpy.check import evaluate
from an5dpy.check.evaluate import compile_expr, is_exact, numpy_type
from an5dpy.check.reference import REFERENCE_CFLAGS
from an5dpy.errors import InternalError
from an5dpy.ir import MATH_FUNCTIONS, Call, Read
from paths import REPO

NAMES = sorted(MATH_FUNCTIONS)
SAMPLES = 4000


def _oracle_source() -> str:
    lines = ["#include <math.h>", ""]
    for name in NAMES:
        fn = MATH_FUNCTIONS[name]
        params = "".join(f", const {p} *a{k}" for k, p in enumerate(fn.params))
        args = ", ".join(f"a{k}[i]" for k in range(len(fn.params)))
        lines += [f"void call_{name}(int n, {fn.result} *out{params})",
                  f"{{ for (int i = 0; i < n; i++) out[i] = {name}({args}); }}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    folder = tmp_path_factory.mktemp("math-oracle")
    source, library = folder / "oracle.c", folder / "oracle.so"
    source.write_text(_oracle_source())
    done = subprocess.run(["gcc", *REFERENCE_CFLAGS, "-Werror=implicit-function-declaration",
                           "-o", str(library), str(source), "-lm"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return ctypes.CDLL(str(library))


def _special(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, 0.75, 2.0, 10.0,
              -10.0, 100.5, np.inf, -np.inf, np.nan, -np.nan, float(info.tiny),
              float(info.tiny) / 8, -float(info.tiny) / 3, float(info.max), -float(info.max),
              float(info.eps), 1 - float(info.epsneg), 0.5 - float(info.epsneg) / 2,
              2.0 ** (info.nmant + 1) - 1, -(2.0 ** info.nmant + 1), 2.0 ** info.nmant + 0.5]
    return np.array(values, dtype=dtype)


def _floating(rng: np.random.Generator, dtype, n: int) -> np.ndarray:
    """Specials, then values of every magnitude and both signs, some near integers."""
    special = _special(dtype)
    exponents = rng.uniform(-40 if dtype == np.float32 else -300,
                            38 if dtype == np.float32 else 300, n)
    wide = np.sign(rng.uniform(-1, 1, n)) * 10.0 ** exponents
    small = rng.uniform(-8, 8, n)
    halves = np.round(rng.uniform(-50, 50, n)) / 2
    pool = np.concatenate([wide, small, halves]).astype(dtype)
    return np.concatenate([special, rng.choice(pool, n - len(special))]).astype(dtype)


def _integer(rng: np.random.Generator, ctype: str, n: int) -> np.ndarray:
    near = rng.integers(-6, 7, n)
    far = rng.integers(-1200, 1200, n)
    return np.where(rng.uniform(size=n) < 0.5, near, far).astype(numpy_type(ctype))


def _arguments(name: str) -> list[np.ndarray]:
    fn = MATH_FUNCTIONS[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    args = []
    for k, ctype in enumerate(fn.params):
        if ctype in ("float", "double"):
            values = _floating(rng, numpy_type(ctype), SAMPLES)
            if k > 0:  # pair every special value with every other one, then shuffle the rest
                special = _special(numpy_type(ctype))
                values[:len(special) ** 2] = np.tile(special, len(special))
            args.append(values)
        else:
            args.append(_integer(rng, ctype, SAMPLES))
    if len(args) > 1 and fn.params[0] in ("float", "double"):
        special = _special(numpy_type(fn.params[0]))
        args[0][:len(special) ** 2] = np.repeat(special, len(special))
    return args


def _gcc(oracle, name: str, args: list[np.ndarray]) -> np.ndarray:
    fn = MATH_FUNCTIONS[name]
    out = np.empty(SAMPLES, dtype=numpy_type(fn.result))
    pointers = [ctypes.c_void_p(a.ctypes.data) for a in args]
    getattr(oracle, f"call_{name}")(ctypes.c_int(SAMPLES), ctypes.c_void_p(out.ctypes.data),
                                    *pointers)
    return out


def _evaluator(name: str, args: list[np.ndarray]) -> np.ndarray:
    fn = MATH_FUNCTIONS[name]
    reads = tuple(Read(ctype, None, array="A", offset=(k,)) for k, ctype in enumerate(fn.params))
    evaluate = compile_expr(Call(fn.result, None, func=name, args=reads))
    with np.errstate(all="ignore"):  # overflow and invalid are part of the test
        return np.asarray(evaluate(lambda read: args[read.offset[0]]))


@lru_cache(maxsize=None)
def _bits_type(dtype) -> type:
    return np.uint32 if np.dtype(dtype).itemsize == 4 else np.uint64


def _unspecified(name: str, args: list[np.ndarray], got: np.ndarray, want: np.ndarray
                 ) -> np.ndarray:
    """Where C leaves the result's bits open, so gcc's own choice varies with how it
    orders a commutative call's operands: which NaN (any NaN is a NaN), and fmin/fmax of
    two zeros of opposite signs (C99 F.9.9.2: either zero)."""
    free = np.isnan(got) & np.isnan(want)
    if MATH_FUNCTIONS[name].base in ("fmin", "fmax"):
        free |= (args[0] == 0) & (args[1] == 0)
    return free


@pytest.mark.parametrize("name", NAMES)
def test_math_function_matches_gcc_bit_for_bit(oracle, name):
    args = _arguments(name)
    want = _gcc(oracle, name, args)
    got = _evaluator(name, args)
    assert got.dtype == want.dtype
    differ = got.view(_bits_type(got.dtype)) != want.view(_bits_type(want.dtype))
    differ &= ~_unspecified(name, args, got, want)
    if differ.any():
        k = int(np.flatnonzero(differ)[0])
        raise AssertionError(f"{name}{tuple(a[k] for a in args)}: evaluator {got[k]!r}, gcc "
                             f"{want[k]!r} ({int(differ.sum())} of {SAMPLES} differ)")


def test_table_covers_float_and_double_of_every_function():
    for name, fn in MATH_FUNCTIONS.items():
        twin = MATH_FUNCTIONS[fn.base if name != fn.base else name + "f"]
        assert {fn.result, twin.result} == {"float", "double"}
        assert fn.exact == twin.exact and fn.base == twin.base
        assert fn.params.count(fn.result) == twin.params.count(twin.result)


@pytest.mark.parametrize("name, exact", [("sqrt", True), ("fma", True), ("rint", True),
                                         ("remainder", True), ("nextafter", True),
                                         ("logb", True), ("fdim", True), ("lgamma", False),
                                         ("j0", False), ("exp", False), ("pow", False),
                                         ("tgammaf", False), ("erfc", False)])
def test_exactness_marks_correctly_rounded_functions_only(name, exact):
    fn = MATH_FUNCTIONS[name]
    call = Call(fn.result, None, func=name,
                args=tuple(Read(p, None, array="A", offset=(0,)) for p in fn.params))
    assert fn.exact is exact
    assert is_exact(call) is exact


BESSEL_GAMMA = """#include <math.h>
void bessel(int n, int T, SB_TYPE A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = 0.3 * lgamma(1.5 + A[t%2][i][j]) + 0.4f * j0(A[t%2][i-1][j])
            + 0.1 * jn(2, A[t%2][i+1][j]) + 0.1f * tgammaf(1.0f + A[t%2][i][j-1])
            + 0.05 * y1(1.0 + fabs(A[t%2][i][j+1])) + 0.05f * erfcf(A[t%2][i][j]);
#pragma endscop
}
"""


@pytest.mark.parametrize("dtype", ["float", "double"])
@pytest.mark.parametrize("mode", ["nondiag", "none"])
def test_lgamma_and_j0_program_simulates_equal_to_gcc(tmp_path, dtype, mode):
    """Issue 12's case: lgamma (C99) and j0 (POSIX) were refused as non-math functions."""
    from an5dpy.check.verify import verify_file
    from an5dpy.driver import Options
    path = tmp_path / "bessel.c"
    path.write_text(BESSEL_GAMMA)
    options = Options(bt=3, bs="32", sl=None if mode == "none" else 8, opt=mode,
                      defines=(("SB_TYPE", dtype),))
    report = verify_file(str(path), options, "sim", {"n": "37", "T": "8"})
    assert report.comparison.passed and report.comparison.bit_identical, report.lines()
    assert report.info.flops_per_cell == 21  # 14 floating operators + 7 calls (fabs too)


# --------------------------------------------------------------------------- the libm loops


def _libm_call(name: str):
    return evaluate._libm_function(MATH_FUNCTIONS[name])


def test_libm_loops_broadcast_scalars_and_strided_inputs_and_keep_the_result_type():
    base = np.linspace(0.1, 3.0, 24, dtype=np.float64).reshape(4, 6)
    strided = base[:, ::2]  # not contiguous
    got = _libm_call("pow")(strided, np.float64(0.75))
    assert got.shape == (4, 3) and got.dtype == np.float64
    assert got.tolist() == [[math.pow(x, 0.75) for x in row] for row in strided.tolist()]
    scalar = _libm_call("jnf")(np.asarray(np.int32(2)), np.asarray(np.float32(1.5)))
    assert scalar.shape == () and scalar.dtype == np.float32
    column = _libm_call("ldexp")(np.arange(3.0).reshape(3, 1), np.arange(4, dtype=np.int32))
    assert column.tolist() == [[x * 2.0 ** k for k in range(4)] for x in range(3)]
    assert _libm_call("exp")(np.empty((0, 5))).shape == (0, 5)


def test_libm_loops_are_compiled_once_and_then_reused(tmp_path, monkeypatch):
    first = evaluate.build_vector_library(tmp_path)
    monkeypatch.setattr(evaluate, "compile_library",
                        lambda *args: pytest.fail("compiled a cached library again"))
    assert evaluate.build_vector_library(tmp_path) == first
    assert [p.name for p in tmp_path.iterdir()] == [first.name]


def test_libm_loops_of_a_different_source_get_a_different_library(tmp_path, monkeypatch):
    first = evaluate.build_vector_library(tmp_path)
    monkeypatch.setattr(evaluate, "vector_source",
                        lambda: "double an5d_other(double x) { return x; }\n")
    second = evaluate.build_vector_library(tmp_path)
    assert second != first and sorted(tmp_path.iterdir()) == sorted([first, second])


def test_libm_loop_build_failure_is_an_internal_error_with_gccs_message(tmp_path, monkeypatch):
    monkeypatch.setattr(evaluate, "vector_source", lambda: "void broken(void) { return 1 +; }\n")
    with pytest.raises(InternalError, match="gcc failed to compile the math loops") as caught:
        evaluate.build_vector_library(tmp_path)
    assert "error:" in str(caught.value) and "broken" in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # the failed build left nothing behind


CONCURRENT_BUILD = """
import numpy as np
from an5dpy.check.evaluate import _libm_function
from an5dpy.ir import MATH_FUNCTIONS
x = np.linspace(-3, 3, 1001)
print(_libm_function(MATH_FUNCTIONS["tanh"])(x).view(np.uint64).sum())
"""


def test_processes_building_the_cache_at_once_all_get_a_whole_library(tmp_path):
    cache = tmp_path / "cache"
    env = {**os.environ, "AN5D_CACHE_DIR": str(cache), "PYTHONPATH": REPO}
    workers = [subprocess.Popen([sys.executable, "-c", CONCURRENT_BUILD], env=env, cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(4)]
    results = [worker.communicate(timeout=300) for worker in workers]
    assert all(worker.returncode == 0 for worker in workers), [err for _, err in results]
    assert len({out for out, _ in results}) == 1
    assert [p.name for p in (cache / "libm").iterdir()] == \
        [evaluate.build_vector_library(cache / "libm").name]  # one library, no leftovers


def test_an_unwritable_cache_folder_only_costs_a_compilation(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("AN5D_CACHE_DIR", str(blocker))
    evaluate._vector_library.cache_clear()
    try:
        library = evaluate._vector_library()
        assert hasattr(library, "an5d_vec_lgamma")
    finally:
        evaluate._vector_library.cache_clear()


# --------------------------------------------------------------------------- gcc's folds

CONSTANT_CALLS = """#include <math.h>
SB_TYPE A[2][24][6];

void kernel(void)
{
  int t, i, j;
#pragma scop
  for (t = 0; t < 3; t++)
    for (i = 1; i < 23; i++)
      for (j = 1; j < 5; j++)
        A[(t+1)%2][i][j] = (A[t%2][i-1][j] + A[t%2][i+1][j] + A[t%2][i][j]) * cbrt(2.0)
          * 0.26 + exp(cbrt(3.0) - 1.0) * 1e-3 + sqrt(2.0) * 1e-4;
#pragma endscop
}
"""


def _correctly_rounded_cbrt(x: int) -> float:
    """The double nearest the cube root of ``x`` (what gcc's MPFR fold gives)."""
    from decimal import Decimal, getcontext
    getcontext().prec = 60
    root = Decimal(x) ** (Decimal(1) / Decimal(3))
    low = float(root)
    candidates = (np.nextafter(low, -np.inf), low, np.nextafter(low, np.inf))
    return float(min(candidates, key=lambda c: abs(Decimal(float(c)) - root)))


@pytest.mark.parametrize("name, ctype", [("cbrt", "double"), ("cbrtf", "float")])
def test_a_call_of_constants_takes_the_value_gcc_folds_it_to(name, ctype):
    """gcc folds cbrt(2.0) while it compiles, correctly rounded; glibc's cbrt at run time is
    an ulp above it on x86-64. The simulator follows the oracle, gcc."""
    from an5dpy.ir import Const
    literal = "2.0f" if ctype == "float" else "2.0"
    two = Const(ctype, None, value=2.0, text=literal)
    value = compile_expr(Call(ctype, None, func=name, args=(two,)))(None)
    want = numpy_type(ctype)(_correctly_rounded_cbrt(2)) if ctype == "double" else (
        np.float32(np.cbrt(np.float64(2.0))))  # float: the double root rounded once more
    assert value.dtype == numpy_type(ctype) and value.tobytes() == want.tobytes()


def test_a_call_of_a_read_is_the_c_librarys_at_run_time(oracle):
    cell = np.array([2.0])
    of_cell = Read("double", None, array="A", offset=(0,))
    value = compile_expr(Call("double", func="cbrt", args=(of_cell,)))(lambda read: cell)
    want = np.empty(1)
    oracle.call_cbrt(ctypes.c_int(1), ctypes.c_void_p(want.ctypes.data),
                     ctypes.c_void_p(cell.ctypes.data))
    assert value.tobytes() == want.tobytes()


def test_calls_of_nan_or_infinity_are_not_folded():
    assert evaluate.constant_call("cbrt", [np.float64(np.nan)]) is None
    assert evaluate.constant_call("exp", [np.float64(-np.inf)]) is None
    assert evaluate.constant_call("ldexp", [np.float64(1.5), np.int32(3)]) == 12.0


@pytest.mark.parametrize("mode", ["nondiag", "none"])
def test_a_program_with_constant_calls_simulates_equal_to_gcc(tmp_path, mode):
    """The fuzzer's finding: cbrt(2.0) in an update made the simulator an ulp off gcc."""
    from an5dpy.check.verify import verify_file
    from an5dpy.driver import Options
    path = tmp_path / "folded.c"
    path.write_text(CONSTANT_CALLS)
    options = Options(bt=2, bs="16", sl=None if mode == "none" else 8, opt=mode,
                      defines=(("SB_TYPE", "double"),))
    report = verify_file(str(path), options, "sim", {})
    assert report.comparison.passed and report.comparison.bit_identical, report.lines()
