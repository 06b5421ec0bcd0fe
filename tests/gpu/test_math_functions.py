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


#: A time step of two statements whose updates make ten inexact calls between them
#: (an5dpy.cuda.macros.OUTLINED_CALLS_FROM counts every statement's): the blocked kernels
#: call each function out of line. Arguments stay in each function's domain for any value.
COUPLED_CALLS = """#include <math.h>
void coupled_calls(int n, int T, double u[2][n][n], double v[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++) {
        u[(t+1)%2][i][j] = 0.3 * u[t%2][i][j] + 0.01 * exp(-fabs(v[t%2][i-1][j]))
            + 0.01 * sin(u[t%2][i+1][j]) + 0.01 * atan(v[t%2][i][j-1])
            + 0.01 * log1p(fabs(u[t%2][i][j+1])) + 0.01 * tanh(v[t%2][i][j])
            + 0.1 * (u[t%2][i-1][j] + u[t%2][i+1][j] + u[t%2][i][j-1] + u[t%2][i][j+1]);
        v[(t+1)%2][i][j] = 0.3 * v[t%2][i][j] + 0.01 * cos(u[t%2][i-1][j])
            + 0.01 * pow(fabs(v[t%2][i+1][j]), 0.75) + 0.01 * erf(u[t%2][i][j-1])
            + 0.01 * cbrt(v[t%2][i][j+1]) + 0.01 * exp2(-fabs(u[t%2][i][j]))
            + 0.1 * (v[t%2][i-1][j] + v[t%2][i+1][j] + v[t%2][i][j-1] + v[t%2][i][j+1]);
      }
#pragma endscop
}
"""


@pytest.mark.parametrize("plan", [dict(bt=2, bs="48", sl="16"),
                                  dict(bt=3, bs="64", sl="16", opt="none"),
                                  dict(bt=1, bs="35", sl=None)])
def test_a_coupled_update_of_many_calls_out_of_line_on_the_gpu(tmp_path, monkeypatch, plan):
    """The wrappers of a time step of several statements: within the tolerance of gcc's
    (CUDA's transcendental functions are not glibc's), and bit for bit the kernels that
    call the same functions inline (OUTLINED_CALLS_FROM out of reach)."""
    import numpy as np

    from an5dpy import driver
    from an5dpy.check.reference import resolve_params
    from an5dpy.check.verify import compare, field_results, random_fields
    from an5dpy.cuda import macros, runtime

    path = tmp_path / "coupled_calls.c"
    path.write_text(COUPLED_CALLS)
    options = Options(**plan)
    params = {"n": "41", "T": "7"}
    report = verify_file(str(path), options, "cuda", params, exact=True)
    assert report.passed, report.lines()

    program, info = driver.load(str(path))
    assert info.coupled
    env = resolve_params(program, params)
    build = runtime.BuildOptions(arch=runtime.device_arch(), exact=True)
    chosen = driver.choose_plan(info, options, env).plan
    results, texts = [], []
    for threshold in (macros.OUTLINED_CALLS_FROM, 10 ** 6):
        monkeypatch.setattr(macros, "OUTLINED_CALLS_FROM", threshold)
        directory = tmp_path / str(threshold)
        directory.mkdir()
        model, cubin = runtime.build_kernels(info, chosen, "cc", build, directory=str(directory))
        texts.append((directory / "cc_kernel.cu").read_text())
        runner = runtime.CupyRunner(info, chosen, cubin, model.prefix, model.signature)
        fields = random_fields(info, env, seed=3)
        results.append(field_results(info, env, runner.run_numpy(fields, env)))
    assert "an5d_call_pow(" in texts[0] and "an5d_call_" not in texts[1]
    assert np.isfinite(results[0]).all()
    assert compare(results[0], results[1], None).bit_identical
