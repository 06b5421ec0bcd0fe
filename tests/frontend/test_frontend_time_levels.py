"""Time subscripts ``(t + c) % k`` in the frontend: every spelling of the double-buffered
form it read before, k-level rotations (``p[(t + 2) % 3]``) and leapfrog reads of the
written buffer are kept as ``Access.time`` (``t + c``) and ``Access.modulus`` (``k``); which
of them an update may combine is the analysis' rule (the refusals are files under
tests/data/rejects/: time_subscript_*.c, mixed_moduli.c, lag*.c, four_buffers.c, ...)."""

from __future__ import annotations

import pytest

from an5dpy.errors import UnsupportedInput
from an5dpy.frontend import read_program_text
from an5dpy.ir import Access, Affine, walk

from levels_support import level_source

T = Affine.var("t")


def program(written: str, update: str, buffers: int = 3, ndim: int = 2,
            start: str = "0", extra: str = ""):
    """A scop writing ``A[written][i][j](...)``, with the array declared ``[buffers]``."""
    return read_program_text(level_source(written, update, buffers, ndim, start, extra),
                             "levels.c")


def grid_accesses(prog) -> list[Access]:
    return [e for e in walk(prog.statements[0].value)
            if isinstance(e, Access) and e.array == prog.array.name]


@pytest.mark.parametrize("written, read, shifts", [
    ("(t+1)%2", "t%2", (1, 0)),
    ("(t + 1) % 2", "(t) % 2", (1, 0)),
    ("(1+t)%2", "(t+2)%2", (1, 2)),
    ("(t+3)%2", "(t-1+1)%2", (3, 0)),
])
def test_every_double_buffered_spelling_is_kept(written, read, shifts):
    prog = program(written, f"A[{read}][i][j]", buffers=2)
    target = prog.statements[0].target
    (access,) = grid_accesses(prog)
    assert (target.time, access.time) == (T + shifts[0], T + shifts[1])
    assert target.modulus == access.modulus == 2
    assert prog.time_buffers == 2


def test_a_three_level_wave_keeps_each_subscript_and_its_modulus():
    prog = program("(t + 2) % 3", "2.0f * A[(t + 1) % 3][i][j] - A[t % 3][i][j]"
                   " + A[(t+1)%3][i-1][j]")
    assert prog.statements[0].target.time == T + 2
    assert [(a.time, a.modulus) for a in grid_accesses(prog)] == \
        [(T + 1, 3), (T, 3), (T + 1, 3)]
    assert prog.time_buffers == 3 and prog.array.time_extent == 3


@pytest.mark.parametrize("written, modulus", [("(t+5)%3", 3), ("t%3", 3), ("(t+1)%0x3", 3),
                                              ("(t + 3) % 4", 4), ("(t+1)%3u", 3)])
def test_constants_and_moduli_are_read_as_written(written, modulus):
    """``c`` is kept as written (the analysis takes it modulo k); any integer literal
    k >= 2 is read (the analysis says which k this release blocks)."""
    prog = program(written, "A[(t+4)%3][i][j]", buffers=4)
    assert prog.statements[0].target.modulus == modulus


def test_a_leapfrog_read_of_the_written_buffer_reaches_the_analysis():
    prog = program("(t+1)%2", "2.0f * A[t%2][i][j][k] - A[(t+1)%2][i][j][k]", buffers=2,
                   ndim=3)
    assert [a.time for a in grid_accesses(prog)] == [T, T + 1]


def test_read_only_arrays_beside_three_time_buffers():
    prog = program("(t+2)%3", "c[i][j] * A[(t+1)%3][i][j] - A[t%3][i][j]",
                   extra=", float c[n][n]")
    assert [a.name for a in prog.arrays] == ["A", "c"]
    assert prog.arrays[1].read_only and prog.time_buffers == 3


@pytest.mark.parametrize("written", ["(t+1)%1", "(t+1)%0", "t%-2", "(t+1)%2.0", "(t+1)%n"])
def test_a_modulus_below_two_or_not_an_integer_literal_is_refused(written):
    with pytest.raises(UnsupportedInput) as info:
        program(written, "A[t%2][i][j]", buffers=2)
    assert "must be (t + c) % k with constants c and k >= 2" in info.value.message
    # at the subscript's first operand (pycparser's position of a binary operation)
    column = 9 + written.startswith("(")
    assert (info.value.coord.line, info.value.coord.column) == (7, column)
