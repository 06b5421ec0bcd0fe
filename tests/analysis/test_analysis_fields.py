"""The analysis of time steps of several statements (analysis/fields.py): sub-steps from
isl's flow dependences, and the refusals that name the dependence."""

from __future__ import annotations

import os

import pytest

from an5dpy.analysis import analyze
from an5dpy.errors import UnsupportedInput
from an5dpy.frontend import read_program, read_program_text
from paths import DATA

HEAD = "void f(int T, int n, float u[2][n][n], float v[2][n][n], float a[n][n], " \
       "float b[n][n], double d[n][n])\n{\n#pragma scop\n  for (int t = 0; t < T; t++) {\n"
TAIL = "  }\n#pragma endscop\n}\n"
NEST = "    for (int i = 1; i < n - 1; i++)\n      for (int j = 1; j < n - 1; j++) {\n"


def program(*nests: str) -> str:
    return HEAD + "".join(NEST + body + "      }\n" for body in nests) + TAIL


def info_of(text: str):
    return analyze(read_program_text(text, "x.c"))


def substeps(text: str):
    return [sub.statements for sub in info_of(text).substeps]


def test_gray_scott_is_one_substep():
    text = program("u[(t+1)%2][i][j] = u[t%2][i][j] + 0.1f * v[t%2][i+1][j];\n"
                   "v[(t+1)%2][i][j] = v[t%2][i][j] - u[t%2][i][j-1] * v[t%2][i][j];\n")
    info = info_of(text)
    assert [sub.statements for sub in info.substeps] == [(0, 1)]
    assert [f.buffers for f in info.fields] == [2, 2]
    assert info.time.read_shift == 0 and info.time.write_shift == 1
    assert info.flops_per_cell == 2 + 2


def test_reading_a_new_value_starts_a_substep():
    text = program("u[(t+1)%2][i][j] = u[t%2][i][j] + u[t%2][i+1][j];\n",
                   "v[(t+1)%2][i][j] = v[t%2][i][j] + u[(t+1)%2][i-1][j];\n")
    assert substeps(text) == [(0,), (1,)]


def test_in_place_fields_read_new_and_old_values():
    # a reads the old b (written later), b reads the new a: two sub-steps
    text = program("a[i][j] = a[i][j] + b[i-1][j];\n", "b[i][j] = b[i][j] + a[i+1][j];\n")
    info = info_of(text)
    assert [sub.statements for sub in info.substeps] == [(0,), (1,)]
    assert [f.in_place for f in info.fields] == [True, True]


def test_one_nest_reading_the_cell_written_before():
    text = program("a[i][j] = a[i][j] + b[i][j];\n        b[i][j] = b[i][j] * a[i][j];\n")
    assert substeps(text) == [(0,), (1,)]


def refusal(text: str) -> UnsupportedInput:
    with pytest.raises(UnsupportedInput) as err:
        info_of(text)
    return err.value


def test_gauss_seidel_in_place_is_refused():
    err = refusal(program("a[i][j] = a[i-1][j] + b[i][j];\n"))
    assert "in-place update" in str(err) and err.coord.line == 7


def test_read_of_a_cell_written_at_an_earlier_iteration_is_refused():
    # in one nest, a[i][j] reads b[i-1][j], which b's statement wrote one iteration before
    err = refusal(program("a[i][j] = a[i][j] + b[i-1][j];\n        b[i][j] = b[i][j] + a[i][j];\n"))
    assert "earlier iteration" in str(err)


def test_read_of_a_neighbour_written_later_in_the_step_is_refused():
    # b[i][j] reads the new a at the cell but the old a at i+1 (written later in the nest)
    err = refusal(program("a[i][j] = a[i][j] + b[i][j];\n        b[i][j] = a[i][j] + a[i+1][j];\n"))
    assert "previous time level" in str(err)


def test_values_two_steps_back_are_refused():
    # v reads u's written buffer before u's statement wrote it this step: level t-1
    err = refusal(program("v[(t+1)%2][i][j] = v[t%2][i][j] + u[(t+1)%2][i][j];\n",
                          "u[(t+1)%2][i][j] = u[t%2][i][j] + v[t%2][i][j];\n"))
    assert "two or more time steps" in str(err)


def test_mixed_element_types_are_refused():
    err = refusal(program("a[i][j] = a[i][j] + 1.0f;\n", "d[i][j] = d[i][j] + 1.0;\n"))
    assert "one element type" in str(err)


def test_a_field_written_twice_is_refused():
    err = refusal(program("a[i][j] = b[i][j];\n", "a[i][j] = a[i][j] + 1.0f;\n"))
    assert "written by two statements" in str(err)


ROWS = ("void f(int T, int n, float (*a)[n], float (*b)[n])\n{\n#pragma scop\n"
        "  for (int t = 0; t < T; t++) {\n")


def test_an_inferred_extent_still_refuses_an_index_below_zero():
    """Fields declared as pointers to rows take their outermost extent from the highest
    index the accesses reach (the frontend); the lowest must be 0 or more, as for any
    array: the bounds check names the inferred extent."""
    text = (ROWS + "    for (int i = 0; i < n; i++)\n      for (int j = 0; j < n; j++)\n"
            "        a[i][j] = a[i][j] + b[i][j];\n"
            "    for (int i = 0; i < n; i++)\n      for (int j = 0; j < n; j++)\n"
            "        b[i][j] = b[i][j] + a[i-1][j];\n" + TAIL)
    err = refusal(text)
    assert str(err).startswith(
        "x.c:10:29: error: read may fall outside the array: a[i-1][j] reads index -1 of "
        "dimension 0 (extent n = "), str(err)
    assert ", inferred from the accesses) when " in str(err)


def test_an_inferred_extent_covers_every_access():
    text = (ROWS + "    for (int i = 0; i < n; i++)\n      for (int j = 0; j < n; j++)\n"
            "        a[i][j] = a[i][j] + b[i+1][j];\n"
            "    for (int i = 0; i < n; i++)\n      for (int j = 0; j < n; j++)\n"
            "        b[i][j] = b[i][j] + a[i][j];\n" + TAIL)
    info = info_of(text)
    assert [str(d.extent) for d in info.dims] == ["n + 1", "n"]
    assert [(a.name, a.outer_extent_inferred) for a in info.program.fields] == [
        ("a", True), ("b", True)]


@pytest.mark.parametrize("name,line,column,why", [
    ("leapfrog_after_old_read.c", 13, 62, "two or more time steps"),
    ("stale_after_new_read.c", 14, 64, "previous time level"),
])
def test_two_buffers_of_one_cell_read_by_one_statement_are_told_apart(name, line, column, why):
    # found by scripts/fuzz.py (tests/data/multi/fuzz_found/*.c say how): a statement
    # reading u[t%2][i][j] and u[(t+1)%2][i][j] reads two values, each its own verdict
    path = os.path.join(DATA, "multi", "fuzz_found", name)
    with pytest.raises(UnsupportedInput) as err:
        analyze(read_program(path))
    assert (err.value.coord.line, err.value.coord.column) == (line, column)
    assert why in str(err.value)
