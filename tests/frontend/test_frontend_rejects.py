"""Rejected inputs: each file under tests/data/rejects/ starts with
``/* reject: LINE:COL | message substring */`` naming where and what the error must say.
The front half refuses each: the frontend, or the analysis of what the frontend read (the
rules on time levels, :func:`an5dpy.analysis.stencil.check_time_levels`, need the
offsets isl finds)."""

from __future__ import annotations

import os
import re

import pytest

from an5dpy.analysis import analyze
from an5dpy.errors import UnsupportedInput
from an5dpy.frontend import read_program, read_program_text
from an5dpy.ir import Coord
from frontend_support import data_files

REJECTS = data_files("rejects/*.c")
_HEADER = re.compile(r"/\* reject: (\d+):(\d+) \| (.*) \*/")


#: every test runs from the repository root (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("in_repo")


def test_there_are_reject_files():
    assert len(REJECTS) >= 60


@pytest.mark.parametrize("path", REJECTS, ids=lambda p: os.path.basename(p)[:-2])
def test_reject(path):
    with open(path, encoding="utf-8") as f:
        line, column, message = _HEADER.match(f.readline()).groups()
    with pytest.raises(UnsupportedInput) as info:
        analyze(read_program(path))
    error = info.value
    assert message in error.message
    assert error.coord == Coord(path, int(line), int(column))
    assert str(error).startswith(f"{path}:{line}:{column}: error: ")


def test_reject_through_the_text_api_names_the_given_file():
    path = os.path.join("tests", "data", "rejects", "stride_two.c")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with pytest.raises(UnsupportedInput) as info:
        read_program_text(text, "user/stencil.c")
    assert info.value.coord == Coord("user/stencil.c", 7, 34)


def test_bad_define_name():
    with pytest.raises(UnsupportedInput, match="bad -D option"):
        read_program_text("int x;\n", "d.c", defines=[("1BAD", None)])


def test_error_inside_an_included_header_points_into_the_header(tmp_path):
    (tmp_path / "bad.h").write_text("int ok;\nint broken = ;\n")
    source = tmp_path / "main.c"
    source.write_text('#include "bad.h"\nint main(void) { return 0; }\n')
    with pytest.raises(UnsupportedInput) as info:
        read_program(str(source))
    assert info.value.coord.file.endswith("bad.h")
    assert (info.value.coord.line, info.value.coord.column) == (2, 14)


def test_absurdly_deep_nesting_is_reported_not_crashed():
    depth = 3000
    value = "(" * depth + "A[t%2][i][j]" + ")" * depth
    text = ("void f(int n, int T, float A[2][n][n])\n{\n#pragma scop\n"
            "  for (int t = 0; t < T; t++) for (int i = 1; i < n - 1; i++)"
            " for (int j = 1; j < n - 1; j++)\n"
            f"    A[(t+1)%2][i][j] = {value};\n#pragma endscop\n}}\n")
    try:
        read_program_text(text, "deep.c")
    except UnsupportedInput as error:
        assert "too deeply" in error.message


def test_line_directive_naming_a_missing_file():
    text = ('#line 100 "elsewhere.c"\nvoid f(int n, int T, float A[2][n][n])\n{\n'
            "#pragma scop\n  for (int t = 0; t < T; t++) for (int i = 1; i < n - 1; i++)"
            " for (int j = 1; j < n - 1; j++)\n    A[(t+1)%2][i][j] = A[t%2][i][j];\n"
            "#pragma endscop\n}\n")
    with pytest.raises(UnsupportedInput) as info:
        read_program_text(text, "line.c")
    assert "cannot read 'elsewhere.c', the file that holds the scop" in info.value.message
    assert (info.value.coord.file, info.value.coord.line) == ("elsewhere.c", 102)


@pytest.mark.parametrize("source, name, where", [
    # a loop variable, a local array, a local scalar elsewhere in the function, a global
    ("void f(int n, int T, float A[2][n])\n{\n#pragma scop\n"
     "  for (int t = 0; t < T; t++)\n    for (int an5d_i = 1; an5d_i < n - 1; an5d_i++)\n"
     "      A[(t+1)%2][an5d_i] = A[t%2][an5d_i];\n#pragma endscop\n}\n", "an5d_i", (5, 14)),
    ("void f(int n, int T)\n{\n  float An5D_A[2][64];\n#pragma scop\n"
     "  for (int t = 0; t < T; t++)\n    for (int i = 1; i < 63; i++)\n"
     "      An5D_A[(t+1)%2][i] = An5D_A[t%2][i];\n#pragma endscop\n}\n", "An5D_A", (3, 9)),
    ("float an5d_x;\nvoid f(int n, int T, float A[2][n])\n{\n#pragma scop\n"
     "  for (int t = 0; t < T; t++)\n    for (int i = 1; i < n - 1; i++)\n"
     "      A[(t+1)%2][i] = A[t%2][i];\n#pragma endscop\n}\n", "an5d_x", (1, 7)),
])
def test_reserved_prefix_is_refused_in_any_case_anywhere_in_the_file(source, name, where):
    with pytest.raises(UnsupportedInput) as info:
        read_program_text(source, "r.c")
    assert f"identifier '{name}' is reserved for the generated code" in info.value.message
    assert info.value.coord == Coord("r.c", *where)


def test_names_that_only_contain_the_prefix_are_accepted():
    source = ("void f(int n, int T, float A[2][n][n], float my_an5d_c)\n{\n#pragma scop\n"
              "  for (int t = 0; t < T; t++)\n    for (int i = 1; i < n - 1; i++)\n"
              "      for (int j = 1; j < n - 1; j++)\n"
              "        A[(t+1)%2][i][j] = my_an5d_c * A[t%2][i][j];\n#pragma endscop\n}\n")
    assert "my_an5d_c" in [p.name for p in read_program_text(source, "ok.c").params]
