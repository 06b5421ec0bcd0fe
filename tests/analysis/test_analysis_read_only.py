"""Read-only (coefficient) arrays in the analysis: CoefRead nodes (grid dimensions through
the write's permutation, offsets, constants), the bounds check's counterexample, and what
they leave alone (grid offsets, radius) or turn off (the associative mode)."""

from __future__ import annotations

import pytest

from an5dpy.analysis import analyze
from an5dpy.errors import UnsupportedInput
from an5dpy.frontend import read_program_text
from an5dpy.ir import CoefIndex, CoefRead, walk


def analysed(text: str):
    return analyze(read_program_text(text, "ro.c"))


PERMUTED = """void f(int n, int m, int T, float A[2][n][m], float cz[n], float row[m],
       float k[n][m], float c[3][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int j = 1; j < m - 1; j++)
      for (int i = 1; i < n - 1; i++)
        A[(t+1)%2][i][j] = cz[i] * A[t%2][i-1][j] + row[j+1] * A[t%2][i][j]
                           + k[i-1][j] * c[2][i+1] + A[t%2][i+1][j];
#pragma endscop
}
"""


def test_reads_follow_the_written_dimensions_under_a_permuted_nest():
    """Loops ``j`` outside ``i``, the write ``A[..][i][j]``: array dimension 0 (streaming)
    is ``i``, so ``cz[i]`` follows dimension 0 and ``row[j+1]`` dimension 1."""
    info = analysed(PERMUTED)
    assert [d.var for d in info.dims] == ["i", "j"]
    reads = {(e.array, e.index) for e in walk(info.update) if isinstance(e, CoefRead)}
    assert reads == {
        ("cz", (CoefIndex(0, 0),)),
        ("row", (CoefIndex(1, 1),)),
        ("k", (CoefIndex(0, -1), CoefIndex(1, 0))),
        ("c", (CoefIndex(None, 2), CoefIndex(0, 1))),
    }
    assert [c.name for c in info.coefficients] == ["cz", "row", "k", "c"]
    assert info.coefficient("c").reads == ((CoefIndex(None, 2), CoefIndex(0, 1)),)


def test_grid_offsets_and_radius_come_from_grid_reads_only():
    info = analysed(PERMUTED)
    assert info.offsets == ((-1, 0), (0, 0), (1, 0))
    assert info.radius == (1, 0)  # k[i-1] and c[..][i+1] do not widen it
    assert info.flops_per_cell == 6  # 3 multiplies, 3 adds: a read is no FLOP


def test_an_update_with_a_read_only_array_is_not_associative():
    sum_form = """void f(int n, int T, float A[2][n][n], float w[n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = 0.5f * (A[t%2][i-1][j-1] + A[t%2][i+1][j+1] TERM);
#pragma endscop
}
"""
    without = analysed(sum_form.replace("TERM", "+ A[t%2][i][j]"))
    assert without.associative and without.opt == "assoc"
    with_coef = analysed(sum_form.replace("TERM", "+ w[i][j]"))
    assert not with_coef.associative and with_coef.assoc is None
    assert with_coef.opt == "none"


@pytest.mark.parametrize("read, column, detail", [
    ("k[i][j+2]", 28, "k[i][j+2] reads index 3 of dimension 1 (extent n = 3) when T = 1, n = 3"),
    ("cz[i+2]", 28, "cz[i+2] reads index 3 of dimension 0 (extent n = 3) when T = 1, n = 3"),
    ("c[3][j]", 28, "c[3][j] reads index 3 of dimension 0 (extent 3) when"),
])
def test_a_read_outside_a_read_only_array_is_refused_with_a_counterexample(read, column,
                                                                           detail):
    text = f"""void f(int n, int T, float A[2][n][n], float k[n][n], float cz[n], float c[3][n])
{{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = {read} * A[t%2][i][j];
#pragma endscop
}}
"""
    with pytest.raises(UnsupportedInput, match="read may fall outside the array") as exc:
        analysed(text)
    assert (exc.value.coord.line, exc.value.coord.column) == (7, column)
    assert detail in exc.value.message
