"""Coordinates: line markers, token alignment (columns after gcc -E), line splitting."""

from __future__ import annotations

import pytest

from an5dpy.errors import UnsupportedInput
from an5dpy.frontend import read_program_text
from an5dpy.frontend.source import (align_columns, line_starts, preprocessed_lines,
                                    split_lines, tokenize_line)
from an5dpy.ir import Coord


def test_tokenize_line_skips_comments_and_keeps_columns():
    assert tokenize_line("a+=1.5e-3f /* c */ ->b // rest") == [
        ("a", 1), ("+=", 2), ("1.5e-3f", 4), ("->", 20), ("b", 22)]
    assert tokenize_line('s = "x y" \'c\';') == [("s", 1), ("=", 3), ('"x y"', 5),
                                                 ("'c'", 11), (";", 14)]


def test_align_identical_tokens_with_different_spacing():
    assert align_columns("a = b + c;", "a   =\tb + /* x */ c;") == \
        {1: 1, 3: 5, 5: 7, 7: 9, 9: 19, 10: 20}


def test_align_macro_expansions_to_the_macro_name():
    mapping = align_columns("x = 0.25f * g(A[i]);", "x = W * CALL(A[i]);")
    assert mapping[5] == 5          # 0.25f -> W
    assert mapping[11] == 7         # *
    assert mapping[13] == 9         # g -> CALL
    assert mapping[15] == 14        # A


def test_align_multi_token_expansion():
    # X expands to "a + b": the second '+' and y must still map exactly
    assert align_columns("a + b + y", "X + y") == {1: 1, 3: 1, 5: 1, 7: 3, 9: 5}


def test_align_empty_expansion():
    assert align_columns("int x;", "int RESTRICT x;") == {1: 1, 5: 14, 6: 15}


def test_align_is_linear_on_long_lines():
    original = " + ".join(["W * A[i]"] * 20000)
    expanded = original.replace("W", "0.5f")
    mapping = align_columns(expanded, original)
    assert len(mapping) == 20000 * 7 - 1


def test_preprocessed_lines_follow_markers():
    text = '# 1 "a.c"\nint x;\n# 5 "b.h" 1\nint y;\n\nint z;\n# 3 "a.c" 2\nint w;\n'
    lines = preprocessed_lines(text, "a.c")
    assert [(pl.file, pl.line, pl.text) for pl in lines if pl.text] == [
        ("a.c", 1, "int x;"), ("b.h", 5, "int y;"), ("b.h", 7, "int z;"),
        ("a.c", 3, "int w;")]


def test_line_splitting_matches_the_c_preprocessor():
    text = "a\r\nb\rc\nd\x0ce\n"
    assert split_lines(text) == ["a", "b", "c", "d\x0ce", ""]
    assert line_starts(text) == [0, 3, 5, 7, 11]


def test_columns_in_error_messages_survive_macros_and_tabs():
    text = ("#define N 100\n#define COEF 0.5f\n"
            "void f(int n, int T, float A[2][N][N])\n{\n#pragma scop\n"
            "\tfor (int t = 0; t < T; t++)\n\t\tfor (int i = 1; i < N - 1; i++)\n"
            "\t\t\tfor (int j = 1; j < N - 1; j++)\n"
            "\t\t\t\tA[(t+1)%2][i][j] = COEF  *  /*w*/ A[t%2][i][j] + foo;\n"
            "#pragma endscop\n}\n")
    with pytest.raises(UnsupportedInput) as info:
        read_program_text(text, "tabs.c")
    assert info.value.coord == Coord("tabs.c", 9, 54)
    assert "undeclared identifier 'foo'" in info.value.message
