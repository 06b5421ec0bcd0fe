"""Accepted inputs: every input form the README's "What it accepts" lists, the benchmark
programs, and the details the later stages rely on (loops, arrays, parameters, scop region)."""

from __future__ import annotations

import os
import re

import pytest

from an5dpy.errors import UnsupportedInput
from an5dpy.frontend import read_program, read_program_text, read_source_text
from an5dpy.ir import Access, Affine, Cast, Coord, Param, transform
from paths import PAPER_BENCHMARKS
from frontend_support import data_files, expectation, naive_offsets, reads

FORM_FILES = data_files("forms/*.c", "frontend/*.c")
ANALYSIS_FORM_FILES = data_files("analysis_forms/*.c")
#: The paper's benchmarks (tests/test_c_inputs_programs.py reads the hand-written ones).
C_INPUTS = sorted(f"{name}.c" for name in PAPER_BENCHMARKS)


#: every test runs from the repository root (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("in_repo")


# --------------------------------------------------------------------------- data files


@pytest.mark.parametrize("path", FORM_FILES)
def test_form_matches_its_expectation(path):
    expect = expectation(path)
    program = read_program(path)
    assert program.filename == path
    if "ndim" in expect:
        assert len(program.space_loops) == expect["ndim"]
        assert len(program.array.extents) == expect["ndim"]
    if "dtype" in expect:
        assert program.array.elem_type == expect["dtype"]
        assert program.statements[0].target.ctype == expect["dtype"]
        assert program.statements[0].value.ctype == expect["dtype"]
    if "params" in expect:
        names = [p.name for p in program.params]
        if os.path.dirname(path).endswith("frontend"):
            assert names == expect["params"]  # our own files also pin the order
        else:
            assert sorted(names) == sorted(expect["params"])
    if "form" in expect:
        assert program.array.form == expect["form"]
    if "offsets" in expect:
        # the analysis' offsets are the newest level's; the frontend keeps every read, of
        # older levels too (their offsets under "arrays", per lag)
        every = {tuple(o) for o in expect["offsets"]}
        for array in expect.get("arrays", []):
            for level in array.get("reads", []):
                every |= {tuple(o) for o in level["offsets"]}
        assert naive_offsets(program) == sorted(every)


@pytest.mark.parametrize("path", ANALYSIS_FORM_FILES)
def test_analysis_forms_pass_the_frontend(path):
    """These break rules only the analysis can see: the frontend must let them through."""
    program = read_program(path)
    assert len(program.statements) == 1


def _bench_macro(text: str, name: str) -> int:
    return int(re.search(rf"#define\s+{name}\s+(\d+)", text).group(1))


@pytest.mark.parametrize("name", C_INPUTS)
@pytest.mark.parametrize("dtype", ["float", "double"])
def test_benchmark_program(name, dtype):
    path = os.path.join("c_inputs", name)
    text = read_source_text(path)
    program = read_program(path, defines=[("SB_TYPE", dtype)])
    ndim, rad = _bench_macro(text, "BENCH_DIM"), _bench_macro(text, "BENCH_RAD")
    assert len(program.space_loops) == ndim
    assert program.array.elem_type == dtype
    assert program.array.form == "vla_pointer"
    assert program.defines == (("SB_TYPE", dtype),)
    names = [p.name for p in program.params]
    assert names[:2] == ["timestep", "dimsize"] and "compsize" in names
    assert program.param("dimsize").definition == Affine.of(2 * rad, compsize=1)
    for loop in program.space_loops:
        assert loop.lower == Affine.of(rad)
        assert loop.upper == Affine.of(-rad - 1, dimsize=1)
    assert program.time_loop.upper == Affine.of(-1, timestep=1)
    region = program.scop
    start, end = region.original_span
    assert re.match(r"#pragma scop\n", text[start:end])
    assert text[start:end].endswith("#pragma endscop\n")
    assert "BENCH_RAD" not in region.preprocessed_text


# --------------------------------------------------------------------------- j2d5pt in detail

J2D5PT = os.path.join("tests", "data", "frontend", "j2d5pt.c")


def test_j2d5pt_loops_and_array():
    program = read_program(J2D5PT)
    assert program.time_loop.var == "t" and program.time_loop.declared_in_init
    assert program.time_loop.lower == Affine.of(0)
    assert program.time_loop.upper == Affine.of(-1, timestep=1)
    assert [loop.var for loop in program.space_loops] == ["i", "j"]
    assert program.space_loops[0].coord == Coord(J2D5PT, 17, 7)
    array = program.array
    assert (array.name, array.elem_type, array.time_extent, array.form) == \
        ("A", "float", None, "vla_pointer")
    assert array.extents == (Affine.var("dimsize"),) * 2
    assert array.coord == Coord(J2D5PT, 12, 13)


def test_j2d5pt_parameters():
    program = read_program(J2D5PT)
    assert program.params == (
        Param("timestep", "int"),
        Param("dimsize", "int", definition=Affine.of(2, compsize=1)),
        Param("compsize", "int"),
    )
    assert program.param("timestep").coord == Coord(J2D5PT, 8, 54)
    assert program.param("dimsize").coord == Coord(J2D5PT, 11, 7)


def test_j2d5pt_statement():
    program = read_program(J2D5PT)
    (statement,) = program.statements
    assert statement.coord == Coord(J2D5PT, 19, 11)
    assert statement.target == Access("float", array="A", time=Affine.of(1, t=1),
                                      indices=(Affine.var("i"), Affine.var("j")))
    assert [r.time for r in reads(program)] == [Affine.var("t")] * 5
    assert [r.coord for r in reads(program)][:2] == [Coord(J2D5PT, 20, 21),
                                                     Coord(J2D5PT, 20, 46)]
    # (...) / 118: float division, the int literal converted implicitly
    value = statement.value
    assert value.op == "/" and value.ctype == "float"
    assert value.rhs == Cast("float", operand=value.rhs.operand, implicit=True)
    assert value.rhs.operand.text == "118" and value.rhs.operand.ctype == "int"


def test_j2d5pt_scop_region():
    program = read_program(J2D5PT)
    text = read_source_text(J2D5PT)
    region = program.scop
    assert region.pragma_start == Coord(J2D5PT, 15, 1)
    assert region.pragma_end == Coord(J2D5PT, 22, 1)
    start, end = region.original_span
    lines = text[start:end].split("\n")
    assert lines[0] == "#pragma scop" and lines[-2] == "#pragma endscop" and lines[-1] == ""
    assert text[:start].count("\n") == 14
    assert region.preprocessed_text.splitlines() == [
        "    for (int t = 0; t < timestep; t++)",
        "      for (int i = 1; i < dimsize - 1; i++)",
        "        for (int j = 1; j < dimsize - 1; j++)",
        "          A[(t+1)%2][i][j] =",
        "            (5.1f * A[t%2][i-1][j] + 12.1f * A[t%2][i][j-1] + 15.0f * A[t%2][i][j] +",
        "             12.2f * A[t%2][i][j+1] + 5.2f * A[t%2][i+1][j]) / 118;",
    ]


def test_defines_and_include_dirs(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "sizes.h").write_text("#define RAD 2\n")
    source = tmp_path / "prog.c"
    source.write_text('#include "sizes.h"\n'
                      "void f(int n, int T, ELEM A[2][n][n])\n{\n#pragma scop\n"
                      "  for (int t = 0; t < T; t++)\n"
                      "    for (int i = RAD; i < n - RAD; i++)\n"
                      "      for (int j = RAD; j < n - RAD; j++)\n"
                      "        A[(t+1)%2][i][j] = A[t%2][i-RAD][j] * SCALE;\n"
                      "#pragma endscop\n}\n")
    program = read_program(str(source), defines=[("ELEM", "double"), ("SCALE", "0.5")],
                           include_dirs=[str(tmp_path / "inc")])
    assert program.array.elem_type == "double"
    assert program.space_loops[0].lower == Affine.of(2)
    assert naive_offsets(program) == [(-2, 0)]
    assert program.defines == (("ELEM", "double"), ("SCALE", "0.5"))
    with pytest.raises(UnsupportedInput, match="C syntax error"):
        read_program(str(source), include_dirs=[str(tmp_path / "inc")])


# --------------------------------------------------------------------------- forms by text

NEST = """void f(int n, int T, {decl})
{{
{pre}#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = {value};
#pragma endscop
}}
"""


def program_of(value="0.5f * A[t%2][i][j]", decl="float A[2][n][n]", pre="", prelude=""):
    return read_program_text(prelude + NEST.format(decl=decl, pre=pre, value=value), "x.c")


def test_parameter_form():
    array = program_of(decl="double A[2][n + 2][n]").array
    assert (array.form, array.time_extent, array.elem_type) == ("parameter", 2, "double")
    assert array.extents == (Affine.of(2, n=1), Affine.var("n"))


def test_parameter_form_with_open_time_dimension():
    array = program_of(decl="float A[][n][n]").array
    assert (array.form, array.time_extent) == ("parameter", None)


def test_pointer_parameter_is_a_vla_pointer():
    array = program_of(decl="float (*A)[n][n]").array
    assert (array.form, array.time_extent) == ("vla_pointer", None)


def test_global_form():
    program = read_program_text(
        "#define N 40\nstatic double A[2][N][N + 1];\n"
        "void f(int T)\n{\n  int t, i, j;\n#pragma scop\n"
        "  for (t = 0; t < T; t++) for (i = 1; i < N - 1; i++) for (j = 1; j < N; j++)\n"
        "    A[(t+1)%2][i][j] = A[t%2][i][j];\n#pragma endscop\n}\n", "g.c")
    array = program.array
    assert (array.form, array.time_extent, array.elem_type) == ("global", 2, "double")
    assert array.extents == (Affine.of(40), Affine.of(41))
    assert [p.name for p in program.params] == ["T"]
    assert not any(loop.declared_in_init for loop in program.space_loops)


def test_local_form():
    program = read_program_text(
        "void f(int T)\n{\n  float A[2][30][30];\n#pragma scop\n"
        "  for (int t = 0; t < T; t++) for (int i = 1; i < 29; i++)"
        " for (int j = 1; j < 29; j++)\n"
        "    A[(t+1)%2][i][j] = A[t%2][i][j];\n#pragma endscop\n}\n", "l.c")
    assert (program.array.form, program.array.extents) == ("local", (Affine.of(30),) * 2)


def test_typedef_element_type_and_typedef_array():
    program = read_program_text(
        "typedef double real;\ntypedef real grid_t[2][64][64];\ngrid_t G;\n"
        "void f(int T)\n{\n#pragma scop\n"
        "  for (int t = 0; t < T; t++) for (int i = 1; i < 63; i++)"
        " for (int j = 1; j < 63; j++)\n"
        "    G[(t+1)%2][i][j] = G[t%2][i][j] * 2;\n#pragma endscop\n}\n", "td.c")
    assert (program.array.elem_type, program.array.form) == ("double", "global")
    assert program.array.extents == (Affine.of(64),) * 2


def test_sb_type_define_selects_the_element_type():
    text = NEST.format(decl="SB_TYPE A[2][n][n]", pre="", value="A[t%2][i][j]")
    for dtype in ("float", "double"):
        program = read_program_text(text, "sb.c", defines=[("SB_TYPE", dtype)])
        assert program.array.elem_type == dtype
        assert program.defines == (("SB_TYPE", dtype),)


def test_three_dimensional_nest():
    program = read_program_text(
        "void f(int n, int T, float A[2][n][n][n])\n{\n#pragma scop\n"
        "  for (int t = 0; t < T; t++)\n for (int i = 1; i < n - 1; i++)\n"
        "  for (int j = 1; j < n - 1; j++)\n for (int k = 1; k < n - 1; k++)\n"
        "  A[(t+1)%2][i][j][k] = A[t%2][i][j][k-1] + A[t%2][i+1][j][k];\n#pragma endscop\n}\n",
        "3d.c")
    assert [loop.var for loop in program.space_loops] == ["i", "j", "k"]
    assert naive_offsets(program) == [(0, 0, -1), (1, 0, 0)]


def test_time_subscript_forms():
    program = program_of(value="A[t % 2][i][j] + A[(1 + t) % 2][i][j] + A[(t - 1) % 2][i][j]")
    assert [r.time for r in reads(program)] == [Affine.var("t"), Affine.of(1, t=1),
                                               Affine.of(-1, t=1)]


def test_subscripts_keep_parameters_and_non_identity_forms():
    """Non-constant offsets are the analysis' business: the frontend keeps the affine form."""
    program = program_of(value="A[t%2][2 * i][n - 1 - j]")
    (read,) = reads(program)
    assert read.indices == (Affine.of(i=2), Affine.of(-1, n=1, j=-1))


def test_lt_bound_is_normalised_to_inclusive():
    program = program_of()
    assert program.space_loops[0].upper == Affine.of(-2, n=1)
    text = NEST.format(decl="float A[2][n][n]", pre="", value="A[t%2][i][j]")
    program = read_program_text(text.replace("i < n - 1", "i <= n - 1"), "le.c")
    assert program.space_loops[0].upper == Affine.of(-1, n=1)


def test_constant_folding_in_bounds():
    program = read_program_text(NEST.format(decl="float A[2][n][n]", pre="",
                                            value="A[t%2][i][j]")
                                .replace("i = 1;", "i = (8 / 3) % 2 + 2 * 1 - -1;"), "cf.c")
    assert program.space_loops[0].lower == Affine.of(2 % 2 + 2 + 1)


def test_pragmas_and_blank_statements_inside_the_nest():
    program = read_program_text(
        "void f(int n, int T, float A[2][n][n])\n{\n#pragma scop\n#pragma omp parallel\n"
        "  for (int t = 0; t < T; t++) {\n#pragma omp for\n    for (int i = 1; i < n - 1; i++)"
        " {{\n      ;\n      for (int j = 1; j < n - 1; j++)\n#pragma ivdep\n"
        "        { A[(t+1)%2][i][j] = A[t%2][i][j]; ; }\n    }}\n  }\n#pragma endscop\n}\n",
        "pr.c")
    assert len(program.space_loops) == 2


def test_scop_inside_nested_blocks_sees_enclosing_declarations():
    program = read_program_text(
        "int g;\nvoid f(int n, float *buf, int reps)\n{\n  int T = reps * 2;\n"
        "  for (int r = 0; r < reps; r++) {\n    if (n > 2) {\n"
        "      float (*A)[n][n] = (float (*)[n][n])buf;\n#pragma scop\n"
        "      for (int t = 0; t < T; t++) for (int i = 1; i < n - 1; i++)"
        " for (int j = 1; j < n - 1; j++)\n"
        "        A[(t+1)%2][i][j] = A[t%2][i][j] * g;\n#pragma endscop\n    }\n  }\n}\n",
        "nested.c")
    # T = reps * 2 is never reassigned: it can be derived, so reps becomes a parameter too.
    assert [p.name for p in program.params] == ["T", "n", "g", "reps"]
    assert program.param("T").definition == Affine.of(reps=2)
    assert program.param("g").definition is None  # a global may change elsewhere
    assert program.array.form == "vla_pointer"


def test_read_program_text_names_the_given_file():
    program = program_of()
    assert program.filename == "x.c"
    assert program.scop.pragma_start == Coord("x.c", 3, 1)
    assert program.statements[0].coord == Coord("x.c", 7, 9)
    with pytest.raises(UnsupportedInput) as info:
        read_program_text("int x = ;\n", "some/dir/bad.c")
    assert info.value.coord.file == "some/dir/bad.c"


def test_crlf_source_offsets():
    text = NEST.format(decl="float A[2][n][n]", pre="  /* é */\n", value="A[t%2][i][j]")
    text = text.replace("\n", "\r\n")
    program = read_program_text(text, "crlf.c")
    start, end = program.scop.original_span
    assert text[start:end].startswith("#pragma scop\r\n")
    assert text[start:end].endswith("#pragma endscop\r\n")
    assert program.scop.pragma_start == Coord("crlf.c", 4, 1)


def test_span_at_end_of_file_without_newline():
    text = ("void f(int n, int T, float A[2][n][n])\n{\n#pragma scop\n"
            "  for (int t = 0; t < T; t++) for (int i = 1; i < n - 1; i++)"
            " for (int j = 1; j < n - 1; j++) A[(t+1)%2][i][j] = A[t%2][i][j];\n"
            "  #  pragma   endscop\n}")
    program = read_program_text(text, "eof.c")
    start, end = program.scop.original_span
    assert text[start:end].endswith("#  pragma   endscop\n")
    assert program.scop.pragma_end == Coord("eof.c", 5, 3)


def test_missing_file():
    with pytest.raises(UnsupportedInput, match="cannot read 'no/such/file.c': no such file"):
        read_program("no/such/file.c")


def test_math_constants_are_available():
    program = program_of(value="M_PI * A[t%2][i][j]", prelude="#include <math.h>\n")
    const = program.statements[0].value.operand.lhs  # (float)(M_PI * (double)A)
    assert const.text == "3.14159265358979323846" and const.ctype == "double"


def test_differential_against_hand_built_ir():
    """The renderer in tests/stencil_render.py and the IR builder in tests/ir_builders.py
    describe the same program; the frontend must agree with the builder."""
    from ir_builders import StencilSpec, box_offsets, build_program, star_offsets
    from stencil_render import render_c

    def normal(program):
        def strip(e):
            if e.__class__.__name__ == "Const":
                return e.__class__(e.ctype, None, value=0, text=e.text)
            return None
        statement = program.statements[0]
        return (program.arrays, sorted(p.name for p in program.params), program.time_loop,
                program.space_loops, statement.target, transform(statement.value, strip))

    specs = [StencilSpec(star_offsets(2, 1)), StencilSpec(box_offsets(2, 1), dtype="double",
                                                          divisor=9.0),
             StencilSpec(star_offsets(3, 2), form="vla_pointer"),
             StencilSpec(star_offsets(2, 2), size=48, form="global", steps="steps")]
    for spec in specs:
        program = read_program_text(render_c(spec), "spec.c")
        assert normal(program) == normal(build_program(spec)), spec
