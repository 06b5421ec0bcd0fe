"""<math.h> functions in generated CUDA against the gcc oracle (pytest -m gpu; skipped
without a GPU).

The generated kernels call the same names as the C program (``lgammaf``, ``j0``,
``nextafterf``, ...), so every function of the table must exist in CUDA's device math
library in both precisions and compute what glibc computes: bit for bit in an exact build
(no fast math, -fmad=false) for the correctly rounded functions, within the verifier's
tolerance for the others (CUDA's lgamma or j0 are a few ulps from glibc's).
"""

from __future__ import annotations

import pytest

from an5dpy.check.verify import verify_file
from an5dpy.driver import Options

pytestmark = pytest.mark.gpu

#: Correctly rounded or exact functions only: an exact build must match gcc bit for bit.
EXACT = """#include <math.h>
void exact(int n, int T, SB_TYPE A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = 0.05 * (rint(4.0 * A[t%2][i][j]) + nearbyintf(3.0f * A[t%2][i-1][j])
            + remainder(A[t%2][i+1][j], 0.3) + remainderf(A[t%2][i][j-1], 0.7f)
            + nextafter(A[t%2][i][j+1], 0.0) + nextafterf(A[t%2][i][j], 2.0f)
            + fdim(A[t%2][i][j], 0.75) + fdimf(A[t%2][i-1][j], 1.0f)
            + logb(A[t%2][i+1][j]) + logbf(8.0f * A[t%2][i][j-1])
            + ldexp(A[t%2][i][j+1], -1) + scalbnf(A[t%2][i][j], 1)
            + scalbln(A[t%2][i-1][j], -2L) + fmodf(A[t%2][i+1][j], 0.4f)
            + fma(A[t%2][i][j-1], 0.5, 0.25) + round(2.0 * A[t%2][i][j+1])
            + copysignf(A[t%2][i][j], -1.0f));
#pragma endscop
}
"""

#: Functions CUDA computes within a few ulps of glibc (special functions, Bessel).
APPROXIMATE = """#include <math.h>
void approximate(int n, int T, SB_TYPE A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = 0.06 * (lgamma(2.5 + A[t%2][i][j]) + lgammaf(3.0f + A[t%2][i-1][j])
            + tgamma(1.0 + A[t%2][i+1][j]) + tgammaf(1.0f + A[t%2][i][j-1])
            + j0(A[t%2][i][j+1]) + j1f(A[t%2][i][j]) + jn(2, A[t%2][i-1][j])
            + jnf(3, 4.0f * A[t%2][i+1][j]) + y0(1.0 + A[t%2][i][j-1])
            + y1f(2.0f + A[t%2][i][j+1]) + yn(2, 3.0 + A[t%2][i][j])
            + erfc(A[t%2][i-1][j]) + expm1f(A[t%2][i+1][j]) + cbrt(A[t%2][i][j-1])
            + acosh(1.5 + A[t%2][i][j+1]) + atanhf(0.5f * A[t%2][i][j] - 0.4f));
#pragma endscop
}
"""


@pytest.mark.parametrize("dtype", ["float", "double"])
@pytest.mark.parametrize("name, text, mode", [("exact", EXACT, "nondiag"), ("exact", EXACT, "none"),
                                              ("approximate", APPROXIMATE, "nondiag")])
def test_math_functions_on_the_gpu_match_gcc(tmp_path, name, text, mode, dtype):
    path = tmp_path / f"{name}.c"
    path.write_text(text)
    options = Options(bt=3, bs="64", sl=None if mode == "none" else 16, opt=mode,
                      defines=(("SB_TYPE", dtype),))
    report = verify_file(str(path), options, "cuda", {"n": "45", "T": "10"}, exact=True)
    result = report.comparison
    assert result.passed, report.lines()
    if name == "exact":
        assert result.tolerance is None and result.bit_identical, report.lines()
