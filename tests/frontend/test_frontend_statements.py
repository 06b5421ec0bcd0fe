"""Several statements per time step: one spatial nest whose innermost body is a block of
assignments (Gray-Scott's two fields), or several consecutive nests with their own bounds
and loop variables (FDTD's sub-steps). Fields are the arrays some statement writes: each
time-buffered (``u[(t+1)%2][i][j]``) or updated in place (``ey[i][j]``), written by one
statement, all of the same extents. The example programs are tests/data/multi/*.c."""

from __future__ import annotations

import os

import pytest

from an5dpy.errors import UnsupportedInput
from an5dpy.frontend import read_program, read_program_text
from an5dpy.ir import Access, Affine, Coord, walk

MULTI = os.path.join("tests", "data", "multi")
GRAY_SCOTT = os.path.join(MULTI, "gray_scott.c")
FDTD_2D = os.path.join(MULTI, "fdtd_2d.c")
COUPLED_3D = os.path.join(MULTI, "coupled_3d_in_place.c")
MIXED = os.path.join(MULTI, "mixed_fields.c")

N, NX, NY = Affine.var("n"), Affine.var("nx"), Affine.var("ny")
T = Affine.var("t")

#: every test runs from the repository root (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("in_repo")


def where(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """The (line, column) of the ``nth`` occurrence of ``needle`` in ``text`` (1-based)."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    line = text.count("\n", 0, at) + 1
    return line, at - (text.rfind("\n", 0, at) + 1) + 1


def accesses(program, name: str) -> list[Access]:
    """Every access of array ``name``, written or read, in statement order."""
    found = []
    for statement in program.statements:
        found += [e for e in (statement.target, *walk(statement.value))
                  if isinstance(e, Access) and e.array == name]
    return found


def rejected(text: str, filename: str = "m.c") -> UnsupportedInput:
    with pytest.raises(UnsupportedInput) as info:
        read_program_text(text, filename)
    return info.value


# --------------------------------------------------------------------------- accepted


def test_gray_scott_one_nest_two_statements():
    program = read_program(GRAY_SCOTT)
    (nest,) = program.nests
    assert [loop.var for loop in nest.loops] == ["i", "j"]
    assert nest.coord == Coord(GRAY_SCOTT, 7, 5) == nest.loops[0].coord
    assert [s.coord for s in nest.statements] == [Coord(GRAY_SCOTT, 9, 9),
                                                   Coord(GRAY_SCOTT, 13, 9)]
    assert program.multi_statement and program.space_loops == nest.loops
    assert [a.name for a in program.arrays] == ["u", "v"] == [f.name for f in program.fields]
    for field in program.fields:
        assert (field.extents, field.time_extent, field.in_place, field.read_only) == \
            ((N, N), 2, False, False)
        assert program.field_buffers(field.name) == 2
    ij = (Affine.var("i"), Affine.var("j"))
    assert [s.target for s in program.statements] == [
        Access("float", array="u", time=T + 1, indices=ij, modulus=2),
        Access("float", array="v", time=T + 1, indices=ij, modulus=2)]
    # the first statement reads v before the second writes it: v is a field all the same
    assert {(a.time, a.modulus) for a in accesses(program, "v")} == {(T, 2), (T + 1, 2)}
    assert [p.name for p in program.params] == ["T", "n"]


def test_fdtd_three_nests_with_their_own_bounds_update_fields_in_place():
    program = read_program(FDTD_2D)
    assert [[(loop.var, loop.lower, loop.upper) for loop in nest.loops]
            for nest in program.nests] == [
        [("i", Affine.of(1), NX - 1), ("j", Affine.of(0), NY - 1)],
        [("i", Affine.of(0), NX - 1), ("j", Affine.of(1), NY - 1)],
        [("i", Affine.of(0), NX - 2), ("j", Affine.of(0), NY - 2)]]
    assert [nest.coord for nest in program.nests] == [
        Coord(FDTD_2D, 8, 5), Coord(FDTD_2D, 11, 5), Coord(FDTD_2D, 14, 5)]
    assert [len(nest.statements) for nest in program.nests] == [1, 1, 1]
    # hz is read (by the first nest) before it is written: fields follow their writes
    assert [a.name for a in program.arrays] == ["ey", "ex", "hz"]
    for field in program.fields:
        assert (field.extents, field.time_extent, field.in_place, field.form) == \
            ((NX, NY), None, True, "parameter")
        assert program.field_buffers(field.name) == 1
        assert all(a.time is None and a.modulus == 1 and len(a.indices) == 2
                   for a in accesses(program, field.name))
    assert [s.target.array for s in program.statements] == ["ey", "ex", "hz"]
    assert program.statements[2].coord == Coord(FDTD_2D, 16, 9)
    assert program.time_loop.var == "t" and program.time_loop.upper == Affine.of(-1, tmax=1)
    assert [p.name for p in program.params] == ["tmax", "nx", "ny"]


def test_coupled_3d_fields_in_place_with_a_pointer_and_a_read_only_array():
    program = read_program(COUPLED_3D)
    assert [[loop.var for loop in nest.loops] for nest in program.nests] == [
        ["i", "j", "k"], ["x", "y", "z"]]
    assert all(loop.declared_in_init for nest in program.nests for loop in nest.loops)
    a, b, w = program.arrays
    # 'double (*a)[n][n]' is a 3D field in place: its outermost extent is b's
    assert (a.name, a.form, a.in_place, a.extents, a.elem_type) == \
        ("a", "vla_pointer", True, (N, N, N), "double")
    assert (b.name, b.in_place, b.extents) == ("b", True, (N, N, N))
    assert (w.name, w.read_only, w.extents) == ("w", True, (N,))
    assert program.fields == (a, b)
    assert program.statements[1].target.indices == tuple(Affine.var(v) for v in "xyz")


def test_a_time_buffered_field_beside_one_in_place():
    program = read_program(MIXED)
    u, s = program.arrays
    assert (u.name, u.in_place, u.time_extent) == ("u", False, 2)
    # 'float (*s)[n]' in a 2D program: in place, its outermost extent is u's
    assert (s.name, s.in_place, s.form, s.extents) == ("s", True, "vla_pointer", (N, N))
    assert (program.field_buffers("u"), program.field_buffers("s")) == (2, 1)
    reads_of_u = [a for a in walk(program.statements[1].value)
                  if isinstance(a, Access) and a.array == "u"]
    assert [(a.time, a.modulus) for a in reads_of_u] == [(T + 1, 2)]


HEAD = "void f(int n, int T, {decls})\n{{\n#pragma scop\n  for (int t = 0; t < T; t++) {{\n"
TAIL = "  }\n#pragma endscop\n}\n"


def two_nests(decls: str, first: str, second: str, first_loops: str = "i", second_loops: str = "i"
              ) -> str:
    """A time step of two 2D nests over the interior, each with one statement."""
    def nest(var: str, statement: str) -> str:
        return (f"    for (int {var} = 1; {var} < n - 1; {var}++)\n"
                f"      for (int j = 1; j < n - 1; j++)\n        {statement}\n")
    return HEAD.format(decls=decls) + nest(first_loops, first) + nest(second_loops, second) \
        + TAIL


@pytest.mark.parametrize("decl, form, extents", [
    ("float (*u)[n][n]", "vla_pointer", (N, N)),  # the pointer is the time dimension
    ("float u[][n][n]", "parameter", (N, N)),
    ("float u[2][n][n]", "parameter", (N, N)),
])
def test_time_buffered_field_forms(decl, form, extents):
    program = read_program_text(two_nests(
        f"{decl}, float e[n][n]", "u[(t+1)%2][i][j] = u[t%2][i][j] + e[i][j];",
        "e[i][j] = 0.5f * u[(t+1)%2][i][j];"), "tb.c")
    u, e = program.fields
    assert (u.form, u.extents, u.in_place) == (form, extents, False)
    assert (e.form, e.extents, e.in_place, e.time_extent) == ("parameter", (N, N), True, None)


@pytest.mark.parametrize("decl, form", [
    ("float (*e)[n]", "vla_pointer"),  # a pointer counts as one dimension
    ("float e[][n]", "parameter"),
    ("float e[n][n]", "parameter"),
])
def test_in_place_field_forms(decl, form):
    program = read_program_text(two_nests(
        f"{decl}, float g[n][n]", "e[i][j] = e[i][j] + g[i][j];", "g[i][j] = e[i][j];"), "ip.c")
    e, g = program.fields
    assert (e.form, e.extents, e.in_place, e.time_extent) == (form, (N, N), True, None)


def test_nests_may_reuse_or_rename_their_loop_variables():
    reused = read_program_text(two_nests("float a[n][n], float b[n][n]",
                                         "a[i][j] = b[i][j];", "b[i][j] = a[i][j];"), "r.c")
    assert [[loop.var for loop in nest.loops] for nest in reused.nests] == [["i", "j"]] * 2
    renamed = read_program_text(two_nests("float a[n][n], float b[n][n]",
                                          "a[i][j] = b[i][j];", "b[q][j] = a[q][j];",
                                          second_loops="q"), "q.c")
    assert [[loop.var for loop in nest.loops] for nest in renamed.nests] == [["i", "j"],
                                                                            ["q", "j"]]
    assert renamed.statements[1].target.indices == (Affine.var("q"), Affine.var("j"))


def test_a_braced_time_body_with_one_nest_reads_as_without_braces():
    body = ("    for (int i = 1; i < n - 1; i++)\n      for (int j = 1; j < n - 1; j++)\n"
            "        A[(t+1)%2][i][j] = A[t%2][i][j];\n")
    braced = read_program_text(HEAD.format(decls="float A[2][n][n]") + body + TAIL, "b.c")
    plain = read_program_text(HEAD.format(decls="float A[2][n][n]").replace(" {\n", "\n")
                              + body + TAIL.replace("  }\n", ""), "b.c")
    assert braced.nests == plain.nests and braced.arrays == plain.arrays
    assert not braced.multi_statement


def test_several_statements_in_one_innermost_block_of_each_nest():
    text = (HEAD.format(decls="float a[2][n][n], float b[2][n][n], float c[n][n]")
            + "    for (int i = 1; i < n - 1; i++)\n      for (int j = 1; j < n - 1; j++) {\n"
            "        a[(t+1)%2][i][j] = b[t%2][i][j];\n        b[(t+1)%2][i][j] = a[t%2][i][j];\n"
            "      }\n    for (int i = 1; i < n - 1; i++)\n      for (int j = 1; j < n - 1; j++)\n"
            "        c[i][j] = a[(t+1)%2][i][j] + b[(t+1)%2][i][j];\n" + TAIL)
    program = read_program_text(text, "s.c")
    assert [[s.target.array for s in nest.statements] for nest in program.nests] == [
        ["a", "b"], ["c"]]
    assert [a.name for a in program.arrays] == ["a", "b", "c"]


def test_read_only_arrays_follow_the_fields_in_order_of_first_read():
    """A pointer read only by the second nest takes its outermost extent from the field that
    nest writes; one read first at a constant subscript is decided by a later read."""
    text = two_nests("float a[n][n], float b[n][n], float *cx, float (*k)[n], float *cz",
                     "a[i][j] = b[i][j] * k[0][j] + cz[3];",
                     "b[i][j] = a[i][j] * cx[i] + k[i][j] + cz[j];")
    program = read_program_text(text, "ro.c")
    names = [(a.name, a.read_only, a.extents) for a in program.arrays]
    assert names == [("a", False, (N, N)), ("b", False, (N, N)), ("k", True, (N, N)),
                     ("cz", True, (N,)), ("cx", True, (N,))]


def test_an_open_read_only_extent_no_read_decides_is_refused_at_its_first_read():
    text = two_nests("float a[n][n], float b[n][n], float *cz",
                     "a[i][j] = b[i][j] + cz[1];", "b[i][j] = a[i][j] + cz[2];")
    error = rejected(text)
    assert "the outermost extent of read-only array 'cz' is not declared" in error.message
    assert error.coord == Coord("m.c", *where(text, "cz[1]"))


# --------------------------------------------------------------------------- refused


def test_a_statement_beside_the_nests_of_the_time_loop():
    text = (HEAD.format(decls="float ey[n][n], float x")
            + "    ey[0][0] = x;\n    for (int i = 1; i < n - 1; i++)\n"
            "      for (int j = 1; j < n - 1; j++)\n        ey[i][j] = ey[i-1][j];\n" + TAIL)
    error = rejected(text)
    assert error.message.startswith("imperfect loop nest: 'ey[0][0] = x' beside the spatial "
                                    "loop nest over 'i' in the body of time loop 't'")
    assert error.coord == Coord("m.c", *where(text, "ey[0][0]"))


def test_a_one_row_nest_beside_two_deep_nests():
    """PolyBench's FDTD sets a boundary row each step: a 1-deep nest beside 2-deep ones."""
    text = (HEAD.format(decls="float ey[n][n], float hz[n][n], float *fict")
            + "    for (int j = 0; j < n; j++)\n      ey[0][j] = fict[t];\n"
            "    for (int i = 1; i < n; i++)\n      for (int j = 0; j < n; j++)\n"
            "        ey[i][j] = ey[i][j] - 0.5f * (hz[i][j] - hz[i-1][j]);\n" + TAIL)
    error = rejected(text)
    assert error.message.startswith(
        "the loop nest over 'j' has 1 spatial loop but the nest over 'i' (line 7) has 2: "
        "every nest of a time step must have the same depth")
    assert error.coord == Coord("m.c", *where(text, "for (int j"))


def test_nests_of_two_and_three_loops():
    text = (HEAD.format(decls="float a[n][n][n], float b[n][n][n]")
            + "    for (int i = 1; i < n - 1; i++)\n      for (int j = 1; j < n - 1; j++)\n"
            "        for (int k = 1; k < n - 1; k++)\n          a[i][j][k] = b[i][j][k];\n"
            "    for (int i = 1; i < n - 1; i++)\n      for (int j = 1; j < n - 1; j++)\n"
            "        b[i][j][0] = a[i][j][0];\n" + TAIL)
    error = rejected(text)
    assert "the loop nest over 'i' has 2 spatial loops but the nest over 'i' (line 5) has 3" \
        in error.message
    assert error.coord == Coord("m.c", *where(text, "for (int i", 1))


def test_only_one_deep_nests():
    text = (HEAD.format(decls="float a[2][n]")
            + "    for (int i = 1; i < n - 1; i++)\n      a[(t+1)%2][i] = a[t%2][i];\n"
            "    for (int i = 1; i < n - 1; i++)\n      a[t%2][i] = a[(t+1)%2][i];\n" + TAIL)
    error = rejected(text)
    assert error.message.startswith("only 1 spatial loop inside the time loop")
    assert error.coord == Coord("m.c", *where(text, "for (int t"))


@pytest.mark.parametrize("second, needle, message", [
    # imperfect nests inside a spatial nest
    ("for (int i = 1; i < n - 1; i++) { b[i][0] = 0.0f;\n"
     "      for (int j = 1; j < n - 1; j++) b[i][j] = a[i][j]; }", "b[i][0]",
     "imperfect loop nest: 'b[i][0] = 0.0f' beside the loop over 'j'"),
    ("for (int i = 1; i < n - 1; i++) {\n      for (int j = 1; j < n - 1; j++) b[i][j] = 1;\n"
     "      for (int j = 1; j < n - 1; j++) b[i][j] = 2; }", "for (int j = 1; j < n - 1; j++) b[i][j] = 2",
     "imperfect loop nest: a second loop beside the loop over 'j'"),
    # empty nests
    ("for (int i = 1; i < n - 1; i++) for (int j = 1; j < n - 1; j++) ;",
     "for (int j = 1; j < n - 1; j++) ;", "empty body of loop 'j'"),
    ("for (int i = 1; i < n - 1; i++) { }", "for (int i = 1; i < n - 1; i++) { }",
     "empty body of loop 'i'"),
    # more than 3 spatial loops
    ("for (int i = 1; i < n - 1; i++) for (int j = 1; j < n - 1; j++)\n"
     "      for (int k = 0; k < 1; k++) for (int l = 0; l < 1; l++) b[i][j] = 1;",
     "for (int l", "more than 3 spatial loops"),
    # statements that are not plain assignments to an array element
    ("for (int i = 1; i < n - 1; i++) for (int j = 1; j < n - 1; j++) {\n"
     "      b[i][j] = a[i][j]; if (n > 3) a[i][j] = 0; }", "if (n > 3)",
     "unsupported statement 'if (n > 3) a[i][j] = 0;' in the loop body"),
    ("for (int i = 1; i < n - 1; i++) for (int j = 1; j < n - 1; j++) {\n"
     "      b[i][j] = a[i][j]; a[i][j] += 1.0f; }", "a[i][j] +=", "compound assignment '+='"),
    ("for (int i = 1; i < n - 1; i++) for (int j = 1; j < n - 1; j++) {\n"
     "      b[i][j] = a[i][j]; n = 4; }", "n = 4", "the statement writes 'n'"),
    # the time loop's variable, and another nest's, are not this nest's loop variables
    ("for (int t = 1; t < n - 1; t++) for (int j = 1; j < n - 1; j++) b[t][j] = 1;",
     "for (int t = 1", "loop variable 't' is already the variable of an enclosing loop"),
])
def test_refusals_in_the_second_nest(second, needle, message):
    text = (HEAD.format(decls="float a[n][n], float b[n][n]")
            + "    for (int i = 1; i < n - 1; i++)\n      for (int j = 1; j < n - 1; j++)\n"
            f"        a[i][j] = 0.5f * a[i][j];\n    {second}\n" + TAIL)
    error = rejected(text)
    assert message in error.message
    assert error.coord == Coord("m.c", *where(text, needle))


@pytest.mark.parametrize("use, needle", [
    ("b[x][y] = a[i][y];", "i][y]"),  # a subscript
    ("b[x][y] = a[x][y] * q;", None),  # (control: no other nest's variable)
])
def test_another_nests_loop_variable_is_refused(use, needle):
    text = ("void f(int n, int T, float a[n][n], float b[n][n], float q)\n{\n  int i, j, x, y;\n"
            "#pragma scop\n  for (int t = 0; t < T; t++) {\n"
            "    for (i = 1; i < n - 1; i++)\n      for (j = 1; j < n - 1; j++)\n"
            "        a[i][j] = 0.5f * a[i][j];\n"
            "    for (x = 1; x < n - 1; x++)\n      for (y = 1; y < n - 1; y++)\n"
            f"        {use}\n" + TAIL)
    if needle is None:
        program = read_program_text(text, "m.c")
        assert [loop.var for loop in program.nests[1].loops] == ["x", "y"]
        return
    error = rejected(text)
    assert error.message.startswith("'i' is the variable of the loop at line 6, in another "
                                    "loop nest of the time step")
    assert error.coord == Coord("m.c", *where(text, needle))


def test_another_nests_loop_variable_in_a_bound_is_refused():
    text = ("void f(int n, int T, float a[n][n], float b[n][n])\n{\n  int i, j;\n"
            "#pragma scop\n  for (int t = 0; t < T; t++) {\n"
            "    for (i = 1; i < n - 1; i++)\n      for (j = 1; j < n - 1; j++)\n"
            "        a[i][j] = 0.5f * a[i][j];\n"
            "    for (int x = 1; x < n - 1; x++)\n      for (int y = 1; y < j; y++)\n"
            "        b[x][y] = a[x][y];\n" + TAIL)
    error = rejected(text)
    assert "'j' is the variable of the loop at line 7" in error.message
    assert error.coord == Coord("m.c", *where(text, "j; y++"))


@pytest.mark.parametrize("first, second, nth", [
    # in one nest
    ("{ a[i][j] = 1.0f; b[i][j] = a[i][j]; a[i][j] = b[i][j]; }", None, 1),
    # in two nests
    ("a[i][j] = 1.0f;", "a[i][j] = 2.0f;", 1),
])
def test_a_field_written_by_two_statements(first, second, nth):
    text = HEAD.format(decls="float a[n][n], float b[n][n]") \
        + "    for (int i = 1; i < n - 1; i++)\n      for (int j = 1; j < n - 1; j++)\n" \
        + f"        {first}\n"
    if second is not None:
        text += ("    for (int i = 1; i < n - 1; i++)\n      for (int j = 1; j < n - 1; j++)\n"
                 f"        {second}\n")
    text += TAIL
    error = rejected(text)
    assert error.message == ("'a' is written by two statements (the first at line 7); each "
                             "field must be written by exactly one statement per time step")
    assert error.coord == Coord("m.c", *where(text, "a[i][j] =", nth))


@pytest.mark.parametrize("decls, message, needle", [
    ("float a[n][n], float b[n][n + 1]",
     "fields 'a' and 'b' have different extents ([n][n] and [n][n + 1])", "b[n][n + 1]"),
    ("float a[2][n][n], float (*b)[n + 1]",
     "fields 'a' and 'b' have different extents ([n][n] and [][n + 1])", "b)[n + 1]"),
])
def test_field_extents(decls, message, needle):
    text = two_nests(decls, "a[i][j] = b[i][j];", "b[i][j] = a[i][j];")
    if decls.startswith("float a[2]"):
        text = text.replace("a[i][j] = b", "a[(t+1)%2][i][j] = b").replace(
            "= a[i][j]", "= a[(t+1)%2][i][j]")
    error = rejected(text)
    assert message in error.message
    assert error.coord == Coord("m.c", *where(text, needle))


@pytest.mark.parametrize("decl, statement, needle, message", [
    ("float e[n][n]", "e[i] = 1.0f;", "e[i]",
     "'e' has 2 dimensions (updated in place: 2 spatial, no time buffer) but is subscripted "
     "with 1 index"),
    ("float e[n][n]", "e[(t+1)%2][i][j] = 1.0f;", "e[(t+1)",
     "'e' has 2 dimensions (updated in place: 2 spatial, no time buffer) but is subscripted "
     "with 3 indices"),
    ("float e[2][n][n]", "e[i][j] = 1.0f;", "e[i][j]",
     "'e' has 3 dimensions (a time buffer and 2 spatial) but is subscripted with 2 indices"),
    ("float e[n]", "e[i] = 1.0f;", "e[n]",
     "array 'e' has 1 dimension but the loop nest has 2 spatial loops (an array the scop "
     "writes needs a time-buffer dimension plus one per spatial loop, or one per spatial "
     "loop where it is updated in place)"),
    ("float *e", "e[i] = 1.0f;", "e, float",
     "array 'e' has 1 dimension but the loop nest has 2 spatial loops"),
])
def test_field_rank_and_subscript_count(decl, statement, needle, message):
    text = two_nests(f"{decl}, float g[n][n]", statement, "g[i][j] = 2.0f;")
    error = rejected(text)
    assert message in error.message
    assert error.coord == Coord("m.c", *where(text, needle))


# --------------------------------------------------------------------------- pointers to rows
#
# Fields declared as pointers to rows (``float (*ey)[n]``) leave the outermost extent open;
# where no field declares it, it is inferred from the accesses: 1 + the highest index any
# access of a field reaches in dimension 0, over the loops of its nest.

FDTD_ROWS = """void fdtd(int tmax, int nx, int ny, float *buffer)
{
  float (*ex)[ny] = (float (*)[ny])buffer;
  float (*ey)[ny] = (float (*)[ny])(buffer + nx * ny);
  float (*hz)[ny] = (float (*)[ny])(buffer + 2 * nx * ny);
#pragma scop
  for (int t = 0; t < tmax; t++) {
    for (int i = 1; i < nx; i++)
      for (int j = 0; j < ny; j++)
        ey[i][j] = ey[i][j] - 0.5f * (hz[i][j] - hz[i-1][j]);
    for (int i = 0; i < nx; i++)
      for (int j = 1; j < ny; j++)
        ex[i][j] = ex[i][j] - 0.5f * (hz[i][j] - hz[i][j-1]);
    for (int i = 0; i < nx - 1; i++)
      for (int j = 0; j < ny - 1; j++)
        hz[i][j] = hz[i][j] - 0.7f * (ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j]);
  }
#pragma endscop
}
"""


def test_fdtd_with_pointers_to_rows_infers_the_outermost_extent():
    program = read_program_text(FDTD_ROWS, "rows.c")
    assert [a.name for a in program.fields] == ["ey", "ex", "hz"]
    for field in program.fields:
        # the first two nests reach nx - 1 (i < nx), the third nx - 2 + 1 (ey[i+1])
        assert (field.extents, field.form, field.in_place, field.outer_extent_inferred) == \
            ((NX, NY), "vla_pointer", True, True)
    assert all(len(a.indices) == 2 for f in program.fields for a in accesses(program, f.name))


def test_a_declared_outermost_extent_is_not_inferred():
    text = FDTD_ROWS.replace("float (*ex)[ny] = (float (*)[ny])buffer;",
                             "float ex[nx + 5][ny];")
    program = read_program_text(text, "rows.c")
    assert [(f.name, f.extents, f.outer_extent_inferred) for f in program.fields] == [
        ("ey", (NX + 5, NY), False), ("ex", (NX + 5, NY), False), ("hz", (NX + 5, NY), False)]


def test_three_dimensional_fields_infer_their_outermost_extent():
    text = ("void f(int T, int n, double *buf)\n{\n"
            "  double (*p)[n][n] = (double (*)[n][n])buf;\n"
            "  double (*v)[n][n] = (double (*)[n][n])(buf + n * n * n);\n"
            "#pragma scop\n  for (int t = 0; t < T; t++) {\n"
            "    for (int i = 1; i < n - 1; i++)\n      for (int j = 1; j < n - 1; j++)\n"
            "        for (int k = 1; k < n - 1; k++)\n"
            "          v[i][j][k] = v[i][j][k] - (p[i+1][j][k] - p[i][j][k]);\n"
            "    for (int i = 1; i < n - 1; i++)\n      for (int j = 1; j < n - 1; j++)\n"
            "        for (int k = 1; k < n - 1; k++)\n"
            "          p[i][j][k] = p[i][j][k] - (v[i][j][k] - v[i-1][j][k]);\n" + TAIL)
    program = read_program_text(text, "v3.c")
    assert [(f.name, f.extents, f.outer_extent_inferred) for f in program.fields] == [
        ("v", (N, N, N), True), ("p", (N, N, N), True)]


def nests(decls: str, *bodies: tuple[str, str]) -> str:
    """A time step of 2D nests, each ``(header of the loop over i, statement)``."""
    return HEAD.format(decls=decls) + "".join(
        f"    for (int i = {header})\n      for (int j = 0; j < n; j++)\n        {statement}\n"
        for header, statement in bodies) + TAIL


@pytest.mark.parametrize("bodies, extent", [
    # the smallest extent that covers the accesses: n - 2 reached, n - 1 cells
    ([("1; i < n - 1; i++", "a[i][j] = b[i][j];"), ("1; i < n - 1; i++", "b[i][j] = a[i][j];")],
     N - 1),
    # a read's offset reaches further than its nest's loop
    ([("1; i < n - 1; i++", "a[i][j] = b[i][j];"), ("1; i < n - 1; i++", "b[i][j] = a[i+2][j];")],
     N + 1),
    # nests with different bounds: the largest is taken, wherever it comes
    ([("0; i < n - 3; i++", "a[i][j] = b[i][j];"), ("2; i <= n; i++", "b[i][j] = a[i-2][j];"),
      ("0; i < n - 1; i++", "c[i][j] = a[i+1][j];")], N + 1),
    ([("0; i <= n + 4; i++", "a[i][j] = b[i][j];"), ("0; i < n; i++", "b[i][j] = a[i][j];")],
     N + 5),
    # a subscript that is no loop variable plus a constant is the analysis' to refuse
    ([("0; i < n; i++", "a[i][j] = b[i][j] + b[0][j] + a[n + i][j] + b[2 * i][j];"),
      ("0; i < n; i++", "b[i][j] = a[i][j] + a[t][j];")], N),
])
def test_nests_with_different_bounds_take_the_largest_extent(bodies, extent):
    program = read_program_text(nests("float (*a)[n], float (*b)[n], float (*c)[n]",
                                      *bodies), "b.c")
    assert [(f.name, f.extents, f.outer_extent_inferred) for f in program.fields] == [
        (s.target.array, (extent, N), True) for s in program.statements]


def test_a_read_only_pointer_follows_an_inferred_extent():
    text = nests("float (*a)[n], float (*b)[n], float *c",
                 ("0; i < n; i++", "a[i][j] = b[i][j] * c[i];"),
                 ("0; i < n; i++", "b[i][j] = a[i][j];"))
    program = read_program_text(text, "c.c")
    assert [(a.name, a.extents) for a in program.arrays] == [("a", (N, N)), ("b", (N, N)),
                                                             ("c", (N,))]
    assert not program.arrays[2].outer_extent_inferred


def test_nests_whose_reach_differs_by_a_parameter_cannot_infer_the_extent():
    text = ("void f(int n, int m, int T, float (*a)[n], float (*b)[n])\n{\n#pragma scop\n"
            "  for (int t = 0; t < T; t++) {\n"
            "    for (int i = 0; i < n; i++)\n      for (int j = 0; j < n; j++)\n"
            "        a[i][j] = b[i][j];\n"
            "    for (int i = 0; i < m; i++)\n      for (int j = 0; j < n; j++)\n"
            "        b[i][j] = a[i][j];\n" + TAIL)
    error = rejected(text)
    assert error.message == (
        "the outermost extent of field 'a' is not declared, nor that of any other field the "
        "scop writes, and the accesses do not decide it: a[i][j] (line 7) reaches index n - 1 "
        "of dimension 0 and b[i][j] (line 10) index m - 1, which differ by an amount that "
        "depends on the parameters, so which is the larger is unknown (an extent inferred "
        "from the accesses covers the highest index any of them reaches): declare 'a' with "
        "its extent (such as 'float a[n][n]')")
    assert error.coord == Coord("m.c", *where(text, "a)[n]"))


def test_no_access_along_a_loop_cannot_infer_the_extent():
    text = nests("float (*a)[n], float (*b)[n]", ("0; i < n; i++", "a[0][j] = b[1][j];"),
                 ("0; i < n; i++", "b[2][j] = a[0][j];"))
    error = rejected(text)
    assert error.message == (
        "the outermost extent of field 'a' is not declared, nor that of any other field the "
        "scop writes, and no access of a field subscripts dimension 0 with a spatial loop "
        "variable plus a constant, so it cannot be inferred: declare 'a' with its extent (such as "
        "'float a[n][n]')")
    assert error.coord == Coord("m.c", *where(text, "a)[n]"))


def test_an_extent_that_cannot_be_inferred_exits_2_through_the_cli(tmp_path, capsys):
    from cli_support import run
    text = nests("float (*a)[n], float (*b)[n], int m",
                 ("0; i < n; i++", "a[i][j] = b[i][j];"), ("0; i < m; i++", "b[i][j] = a[i][j];"))
    path = tmp_path / "open.c"
    path.write_text(text)
    status, out, err = run(capsys, "analyze", path)
    line, col = where(text, "a)[n]")
    assert (status, out) == (2, "")
    assert err.startswith(f"{path}:{line}:{col}: error: the outermost extent of field 'a' is "
                          f"not declared"), err
    assert "b[i][j] (line 10) index m - 1" in err and "Traceback" not in err


@pytest.mark.parametrize("size, steps, plan", [
    ("nx=13", "5", ("--bt", "2", "--bs", "16")),
    ("nx=7", "3", ("--bt", "1", "--bs", "8", "--opt", "none")),
    ("nx=20", "7", ("--bt", "3", "--bs", "32")),
])
def test_pointer_to_rows_fdtd_verifies_on_the_simulator_against_gcc(size, steps, plan,
                                                                     tmp_path, capsys):
    from cli_support import run
    path = tmp_path / "rows.c"
    path.write_text(FDTD_ROWS)
    status, out, err = run(capsys, "verify", path, "--backend", "sim", "-P", size,
                           "-P", "ny=11", "-P", f"tmax={steps}", *plan)
    assert status == 0, err
    assert out.splitlines()[0] == "PASS" and "bit-identical: yes" in out, out
