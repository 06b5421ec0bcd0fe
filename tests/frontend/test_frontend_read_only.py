"""Read-only (coefficient) arrays in the frontend: every declaration form, every subscript
form, and their order in ``StencilProgram.arrays`` (the refusals are files under
tests/data/rejects/read_only_*.c)."""

from __future__ import annotations

import pytest

from an5dpy.errors import UnsupportedInput
from an5dpy.frontend import read_program_text
from an5dpy.ir import Access, Affine, walk

LOOPS = """#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < m - 1; j++)
        A[(t+1)%2][i][j] = {update};
#pragma endscop"""


def program(head: str, update: str, body: str = "", tail: str = "}"):
    text = f"{head}\n{{\n{body}\n{LOOPS.format(update=update)}\n{tail}\n"
    return read_program_text(text, "ro.c")


def coef(prog, name: str):
    (decl,) = [a for a in prog.arrays if a.name == name]
    return decl


N, M = Affine.var("n"), Affine.var("m")


@pytest.mark.parametrize("head, body, name, form, extents", [
    ("void f(int n, int m, int T, float A[2][n][m], double f[n][m])", "", "f",
     "parameter", (N, M)),
    ("void f(int n, int m, int T, float A[2][n][m], double f[][m])", "", "f",
     "parameter", (N, M)),
    ("void f(int n, int m, int T, float A[2][n][m], double *fbuf)",
     "  double (*f)[m] = (double (*)[m]) fbuf;", "f", "vla_pointer", (N, M)),
    ("double f[40][50];\nvoid g(int n, int m, int T, float A[2][n][m])", "", "f", "global",
     (Affine.of(40), Affine.of(50))),
    ("void g(int n, int m, int T, float A[2][n][m])", "  float f[n][m + 1];", "f", "local",
     (N, M + 1)),
])
def test_declaration_forms(head, body, name, form, extents):
    prog = program(head, f"{name}[i][j] * A[t%2][i][j]", body)
    decl = coef(prog, name)
    assert decl.read_only and decl.form == form and decl.extents == extents
    assert decl.time_extent is None
    assert not prog.array.read_only and prog.arrays[0] is prog.array


def test_a_pointer_takes_its_outer_extent_from_the_dimension_its_subscript_follows():
    """``float *row`` read as ``row[j]``: the extent of the grid dimension of ``j`` (m);
    ``float *cz`` read first as ``cz[2]`` then ``cz[i]``: that of ``i`` (n)."""
    prog = program("void f(int n, int m, int T, float A[2][n][m], float *row, float *cz)",
                   "row[j] * A[t%2][i][j] + cz[2] + cz[i]")
    assert coef(prog, "row").extents == (M,)
    assert coef(prog, "cz").extents == (N,)
    assert coef(prog, "row").form == "vla_pointer"


def test_subscript_forms_are_kept_as_affine_forms():
    prog = program("void f(int n, int m, int T, float A[2][n][m], float c[3][m], float k[n][m])",
                   "c[2][j+1] * k[i-1][j] + k[1 + i][-1 + j + 2]")
    accesses = {(e.array, e.indices) for e in walk(prog.statements[0].value)
                if isinstance(e, Access) and e.array != "A"}
    i, j = Affine.var("i"), Affine.var("j")
    assert accesses == {("c", (Affine.of(2), j + 1)), ("k", (i - 1, j)), ("k", (i + 1, j + 1))}
    for e in walk(prog.statements[0].value):
        if isinstance(e, Access) and e.array != "A":
            assert e.time is None and e.ctype == "float"


def test_read_only_arrays_follow_the_grid_in_order_of_first_read():
    prog = program("void f(int n, int m, int T, float A[2][n][m], float a[n], double b[m], "
                   "float c[n][m])", "b[j] * c[i][j] + a[i] * b[j - 1] + c[i][j]")
    assert [a.name for a in prog.arrays] == ["A", "b", "c", "a"]
    assert coef(prog, "b").elem_type == "double"


def test_an_integer_read_only_array_is_refused_at_its_declaration():
    with pytest.raises(UnsupportedInput, match="element type int") as exc:
        program("void f(int n, int m, int T, float A[2][n][m], int w[n][m])",
                "w[i][j] * A[t%2][i][j]")
    assert (exc.value.coord.line, exc.value.coord.column) == (1, 51)
