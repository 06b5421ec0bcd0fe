"""The kernels' double division by a launch-fixed divisor (templates/division.cu.j2) against
CUDA's own ``/`` on the GPU, bit for bit (pytest -m gpu; skipped without a GPU).

``an5d_ddiv(x, an5d_divisor_of(c))`` must be ``x / c`` for every x and c: it reuses the
fast path of ptxas's division and divides wherever its narrower check fails. The operands
are the edge of every check (the exponents around 2^-969, 2^-1022, 2^1017 and 2^1024, for
divisors of every magnitude), zeros, subnormals, infinities, NaNs, and a few million random
bit patterns and random normal numbers, against divisors that are served (a float literal
widened to double as the benchmarks divide by, 3, 0.1, powers of two, the extremes of the
normal range, significands of all ones) and divisors that are not (zero, subnormal, above
2^1017, infinite, NaN).
"""

from __future__ import annotations

import struct
from functools import lru_cache

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

TEST_KERNELS = r"""
/* y, lo: the translator's reciprocal and quotient floor of a literal divisor, or for a
   divisor fixed only at run time (lo == 0) the kernel's own */
extern "C" __global__ void an5d_test_ddiv(const double *x, double *fast, double *plain,
                                          double c, double y, unsigned lo, long long n,
                                          int *served)
{
  const an5d_divisor d = lo ? an5d_divisor_of(c, y, lo)
                            : an5d_divisor_of(c, an5d_reciprocal(c), an5d_quotient_floor(c));
  if (blockIdx.x == 0 && threadIdx.x == 0) *served = d.served;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    fast[i] = an5d_ddiv(x[i], d);
    plain[i] = x[i] / c;
  }
}
"""


def division_source() -> str:
    from an5dpy.cuda.render import environment
    return environment().get_template("division.cu.j2").render() + TEST_KERNELS


def float_literal(text: str) -> float:
    """A float literal widened to double (``11.7f`` in a double stencil)."""
    return struct.unpack("f", struct.pack("f", float(text)))[0]


SERVED = [float_literal("11.7"), float_literal("5.1"), 3.0, 0.1, -7.25, 1.0, 2.0, 0.5,
          1.0 / 3.0, 2.0 ** -1000, 2.0 ** 1000, 2.0 ** -1022, 1.7e308 / 2 ** 9,
          2.0 ** 1016 * 1.99, np.nextafter(2.0, 0.0), np.nextafter(1.0, 2.0),
          float_literal("118.0"), 6.02214076e23, -1e-300]
NOT_SERVED = [0.0, -0.0, 5e-324, 2.0 ** -1070, 2.0 ** 1017, 1.7976931348623157e308,
              float("inf"), float("-inf"), float("nan")]


def operands(rng: np.random.Generator) -> np.ndarray:
    """Dividends: every exponent with a few significands, both signs; the specials; random
    bit patterns and random normal numbers."""
    exponents = np.arange(0, 2048, dtype=np.uint64) << np.uint64(52)
    significands = np.array([0, 1, 2 ** 51, 2 ** 52 - 1, 0x9999999999999, 0x5555555555555],
                            dtype=np.uint64)
    grid = (exponents[:, None] | significands[None, :]).ravel()
    structured = np.concatenate([grid, grid | np.uint64(1 << 63)])
    bits = rng.integers(0, 2 ** 64, size=1 << 22, dtype=np.uint64)
    normal = rng.standard_normal(1 << 21) * 10.0 ** rng.integers(-300, 300, size=1 << 21)
    return np.concatenate([structured.view(np.float64), bits.view(np.float64), normal])


def same_bits_or_both_nan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a.view(np.uint64) == b.view(np.uint64)) | (np.isnan(a) & np.isnan(b))


@lru_cache(maxsize=1)
def division_kernel():
    import cupy as cp
    # nvcc, as the kernels are built (its ptxas expands the division compared with)
    return cp.RawModule(code=division_source(), backend="nvcc").get_function("an5d_test_ddiv")


def divide(divisor: float, x, literal: bool):
    """(an5d_ddiv's quotients, the division's, whether the divisor was served)."""
    import cupy as cp
    from an5dpy.cuda.macros import nearest_reciprocal, quotient_floor
    reciprocal = nearest_reciprocal(divisor) if literal else None
    y, lo = ((float(reciprocal), quotient_floor(divisor)) if reciprocal else (0.0, 0))
    fast, plain = cp.empty_like(x), cp.empty_like(x)
    served = cp.zeros(1, dtype=cp.int32)
    division_kernel()((264,), (256,), (x, fast, plain, np.float64(divisor), np.float64(y),
                                   np.uint32(lo), np.int64(x.size), served))
    return cp.asnumpy(fast), cp.asnumpy(plain), bool(served.get()[0])


@pytest.mark.parametrize("literal", [True, False], ids=["literal", "run-time"])
@pytest.mark.parametrize("divisor", SERVED + NOT_SERVED, ids=repr)
def test_the_hoisted_division_is_the_division_bit_for_bit(divisor, literal):
    import cupy as cp
    x = cp.asarray(operands(np.random.default_rng(17)))
    fast, plain, served = divide(divisor, x, literal)
    same = same_bits_or_both_nan(fast, plain)
    bad = np.flatnonzero(~same)[:5]
    assert same.all(), [(float(x[i]), fast[i], plain[i]) for i in bad]
    assert served == (divisor in SERVED)


def test_the_translators_reciprocal_is_ptxass_for_the_benchmarks_and_nearly_every_divisor():
    """Where the translator's reciprocal differs, the kernel divides: exact, but slower."""
    import cupy as cp
    x = cp.ones(1, dtype=cp.float64)
    for text in ("11.7", "6.5", "5.1", "118.0", "2.0", "0.3"):
        assert divide(float_literal(text), x, True)[2], text
    rng = np.random.default_rng(5)
    draws = rng.uniform(1.0, 2.0, 300) * 2.0 ** rng.integers(-300, 300, 300)
    served = sum(divide(float(c), x, True)[2] for c in draws)
    assert served >= 0.98 * len(draws)


#: Divisions by literals, by a scalar and by expressions of both, in one update; and the
#: associative form's division of the whole sum by a scalar.
DIVIDING = """
void dividing(int n, int T, double h, double A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = (A[t%2][i-1][j] + A[t%2][i+1][j]) / (h * 7.0) + A[t%2][i][j] / 3.0f
            + (A[t%2][i][j-1] - A[t%2][i][j+1]) / h / 11.7f;
#pragma endscop
}
"""
AVERAGING = """
void averaging(int n, int T, double h, double A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = (A[t%2][i-1][j] + A[t%2][i][j-1] + A[t%2][i][j]
                            + A[t%2][i][j+1] + A[t%2][i+1][j]) / h;
#pragma endscop
}
"""


#: Two fields, each divided by expressions of a scalar and a literal; and three time levels.
FIELDS = """
void fields(int n, int T, double h, double U[2][n][n], double V[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++) {
        U[(t+1)%2][i][j] = U[t%2][i][j] + (V[t%2][i-1][j] - V[t%2][i+1][j]) / (2.0 * h);
        V[(t+1)%2][i][j] = V[t%2][i][j] + (U[t%2][i][j-1] - U[t%2][i][j+1]) / h / 3.0f;
      }
#pragma endscop
}
"""
WAVE = """
void wave(int n, int T, double h, double A[3][n][n])
{
#pragma scop
  for (int t = 1; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%3][i][j] = 2.0 * A[t%3][i][j] - A[(t-1)%3][i][j]
            + (A[t%3][i-1][j] + A[t%3][i+1][j] + A[t%3][i][j-1] + A[t%3][i][j+1]
               - 4.0 * A[t%3][i][j]) / h;
#pragma endscop
}
"""


@pytest.mark.parametrize("name, text, mode, h", [
    ("fields", FIELDS, "nondiag", "0.3"), ("wave", WAVE, "nondiag", "5.0"),
    ("dividing", DIVIDING, "nondiag", "0.3"), ("dividing", DIVIDING, "none", "0.3"),
    ("averaging", AVERAGING, "assoc", "5.1"), ("averaging", AVERAGING, "nondiag", "5.1"),
    ("averaging", AVERAGING, "nondiag", "0.0")])
def test_stencils_dividing_by_literals_and_scalars_match_gcc(tmp_path, name, text, mode, h):
    from an5dpy.check.verify import verify_file
    from an5dpy.driver import Options
    path = tmp_path / f"{name}.c"
    path.write_text(text)
    options = Options(bt=3, bs="64", sl=16, opt=mode)
    report = verify_file(str(path), options, "cuda", {"n": "45", "T": "10", "h": h},
                         exact=True)
    assert report.comparison.passed, report.lines()
    if mode != "assoc":
        assert report.comparison.bit_identical, report.lines()
