"""Time levels in the analysis: each read's lag (which earlier level it takes), the number
of time buffers, the buffer the first step reads, and what older levels leave alone
(offsets, radius, shape: those of the newest level) or turn off (the associative mode).
The refusals, each with its coordinate, are files under tests/data/rejects/
(leapfrog_neighbour.c, gauss_seidel*.c, mixed_moduli.c, time_extent_below_modulus.c, ...)."""

from __future__ import annotations

import pytest

from an5dpy.analysis import analyze
from an5dpy.analysis.stencil import MAX_TIME_BUFFERS, format_access, read_lag
from an5dpy.errors import UnsupportedInput
from an5dpy.frontend import read_program_text
from an5dpy.ir import Access, Read, walk

from levels_support import level_source


def analysed(written: str, update: str, buffers: int = 3, ndim: int = 2, start: str = "0",
             extra: str = ""):
    """``A[written][i][j] = update`` in a time loop from ``start``, ``A`` declared
    ``[buffers]``; ``extra``: more parameters."""
    return analyze(read_program_text(level_source(written, update, buffers, ndim, start, extra),
                                     "levels.c"))


def reads(info) -> list[tuple[tuple[int, ...], int]]:
    """(offset, lag) of each read, in source order."""
    return [(e.offset, e.lag) for e in walk(info.update) if isinstance(e, Read)]


WAVE_2D = ("2.0f * A[(t+1)%3][i][j] - A[t%3][i][j] + 0.1f * (A[(t+1)%3][i-1][j]"
           " + A[(t+1)%3][i+1][j] + A[(t+1)%3][i][j-1] + A[(t+1)%3][i][j+1])")
WAVE_3D = ("2.0f * A[(t+1)%3][i][j][k] - A[t%3][i][j][k] + 0.1f * (A[(t+1)%3][i-1][j][k]"
           " + A[(t+1)%3][i+1][j][k] + A[(t+1)%3][i][j-1][k] + A[(t+1)%3][i][j+1][k]"
           " + A[(t+1)%3][i][j][k-1] + A[(t+1)%3][i][j][k+1])")
LEAPFROG_2D = ("2.0f * A[t%2][i][j] - A[(t+1)%2][i][j] + 0.1f * (A[t%2][i-1][j]"
               " + A[t%2][i+1][j] + A[t%2][i][j-1] + A[t%2][i][j+1] - 4.0f * A[t%2][i][j])")
LEAPFROG_3D = ("2.0f * A[t%2][i][j][k] - A[(t+1)%2][i][j][k] + 0.1f * (A[t%2][i-1][j][k]"
               " + A[t%2][i+1][j][k] + A[t%2][i][j-1][k] + A[t%2][i][j+1][k]"
               " + A[t%2][i][j][k-1] + A[t%2][i][j][k+1])")


def test_the_lag_of_a_read():
    assert read_lag(1, 0, 2, at_cell=False) == 1
    assert read_lag(1, 1, 2, at_cell=True) == 2  # leapfrog: the written buffer, the cell
    assert read_lag(1, 1, 2, at_cell=False) is None  # in place
    assert read_lag(2, 1, 3, at_cell=False) == 1 and read_lag(2, 0, 3, at_cell=True) == 2
    assert read_lag(2, 2, 3, at_cell=True) == 3
    assert read_lag(5, 3, 3, at_cell=True) == 2 and read_lag(0, -1, 3, at_cell=False) == 1
    assert MAX_TIME_BUFFERS == 8


def test_a_three_level_wave_in_2d():
    info = analysed("(t+2)%3", WAVE_2D)
    assert reads(info) == [((0, 0), 1), ((0, 0), 2), ((-1, 0), 1), ((1, 0), 1), ((0, -1), 1),
                           ((0, 1), 1)]
    assert info.history == 2 and info.time.buffers == 3
    assert (info.time.write_shift, info.time.read_shift) == (2, 1)
    # the shape is the newest level's: older levels are read at the cell only
    assert info.offsets == ((-1, 0), (0, -1), (0, 0), (0, 1), (1, 0))
    assert info.offsets_of_level(2) == ((0, 0),)
    assert info.radius == (1, 1) and info.shape == "star" and info.diagonal_free
    assert info.flops_per_cell == 7 and info.opt == "nondiag"
    assert not info.associative and info.assoc is None


def test_a_three_level_wave_in_3d():
    info = analysed("(t+2)%3", WAVE_3D, ndim=3)
    assert sorted(o for o, lag in reads(info) if lag == 2) == [(0, 0, 0)]
    assert info.history == 2 and info.time.buffers == 3
    assert info.radius == (1, 1, 1) and info.shape == "star"
    assert len(info.offsets) == 7 and info.flops_per_cell == 9


@pytest.mark.parametrize("update, ndim", [(LEAPFROG_2D, 2), (LEAPFROG_3D, 3)])
def test_a_leapfrog_update_reads_the_level_before_from_the_written_buffer(update, ndim):
    info = analysed("(t+1)%2", update, buffers=2, ndim=ndim)
    older = [(o, lag) for o, lag in reads(info) if lag != 1]
    assert older == [((0,) * ndim, 2)]
    assert info.history == 2 and info.time.buffers == 2
    assert (info.time.write_shift, info.time.read_shift) == (1, 0)
    assert info.offsets_of_level(2) == ((0,) * ndim,)
    assert (0,) * ndim in info.offsets  # the newest level's own read at the cell
    assert not info.associative and info.radius == (1,) * ndim


def test_a_read_of_the_newest_and_one_of_the_older_level_at_the_cell_stay_apart():
    """Same offset, different levels: two different Read nodes (and not one read)."""
    info = analysed("(t+1)%2", "A[t%2][i][j] - A[(t+1)%2][i][j]", buffers=2)
    first, second = [e for e in walk(info.update) if isinstance(e, Read)]
    assert first.offset == second.offset and first != second
    assert (first.lag, second.lag) == (1, 2)
    assert info.offsets == ((0, 0),) and info.flops_per_cell == 1


@pytest.mark.parametrize("written, newest, older, shifts", [
    ("(t+5)%3", "(t+4)%3", "(t+3)%3", (5, 4)),  # constants taken modulo 3
    ("t%3", "(t+2)%3", "(t+1)%3", (0, 2)),
    ("(t+1)%3", "t%3", "(t+2)%3", (1, 0)),
    ("(t+2)%3", "(t+1)%3", "(t+3)%3", (2, 1)),
])
def test_time_constants_are_taken_modulo_the_buffers(written, newest, older, shifts):
    info = analysed(written, f"A[{newest}][i-1][j] + A[{older}][i][j]")
    assert reads(info) == [((-1, 0), 1), ((0, 0), 2)]
    assert (info.time.write_shift, info.time.read_shift) == shifts


@pytest.mark.parametrize("start, first_buffer", [("0", 1), ("1", 2), ("2", 0), ("7", 2)])
def test_the_first_step_reads_the_newest_level_from_the_buffer_of_its_start(start,
                                                                             first_buffer):
    info = analysed("(t+2)%3", WAVE_2D, start=start)
    assert info.time.start_buffer({"T": 20, "n": 9}) == first_buffer
    assert info.time.steps({"T": 20, "n": 9}) == 20 - int(start)


def test_three_buffers_read_at_the_newest_level_only():
    info = analysed("(t+1)%3", "0.5f * (A[t%3][i-1][j] + A[t%3][i+1][j])")
    assert info.history == 1 and info.time.buffers == 3
    # a sum over the newest level's planes, but a rotating launch stores its level d-1
    # too, which mode assoc's finished sums no longer hold
    assert not info.associative and info.assoc is None


def test_an_update_reading_only_the_older_level():
    info = analysed("(t+2)%3", "0.5f * A[t%3][i][j]")
    assert reads(info) == [((0, 0), 2)]
    assert info.offsets == () and info.radius == (0, 0)
    assert info.time.read_shift == 1  # where the newest level is, though nothing reads it


def test_an_associative_update_is_not_one_once_it_reads_an_older_level():
    star = ("A[t%2][i-1][j][k] + A[t%2][i+1][j][k] + A[t%2][i][j-1][k] + A[t%2][i][j+1][k]"
            " + A[t%2][i][j][k-1] + A[t%2][i][j][k+1]")
    assert analysed("(t+1)%2", star, buffers=2, ndim=3).associative
    info = analysed("(t+1)%2", f"{star} - A[(t+1)%2][i][j][k]", buffers=2, ndim=3)
    assert not info.associative and info.assoc is None and info.opt == "nondiag"


def test_read_only_arrays_beside_three_time_buffers():
    info = analysed("(t+2)%3", "c[i][j] * A[(t+1)%3][i][j] - A[t%3][i][j]",
                    extra=", float c[n][n]")
    assert [c.name for c in info.coefficients] == ["c"]
    assert info.history == 2 and info.time.buffers == 3


def test_the_analysis_json_reports_the_levels():
    info = analysed("(t+2)%3", WAVE_2D)
    (grid,) = info.arrays_json()
    assert grid["time_levels"] == 3 and grid["history"] == 2
    assert grid["reads"] == [{"lag": 1, "offsets": [list(o) for o in info.offsets]},
                             {"lag": 2, "offsets": [[0, 0]]}]
    assert grid["offsets"] == grid["reads"][0]["offsets"]
    assert info.to_json()["loops"]["time"]["buffers"] == 3


def test_accesses_are_spelled_with_their_modulus():
    info = analysed("(t+2)%3", WAVE_2D)
    assert format_access(info.program.statements[0].target) == "A[(t+2)%3][i][j]"
    older = [e for e in walk(info.program.statements[0].value) if isinstance(e, Access)][1]
    assert format_access(older) == "A[t%3][i][j]"


def test_older_levels_read_at_offsets_widen_the_reach_not_the_shape():
    """A damped wave reads level t-1 at its neighbours: the radius covers those reads, the
    shape and the default mode stay the newest level's."""
    info = analysed("(t+2)%3", "A[(t+1)%3][i][j-1] + A[(t+1)%3][i][j+1]"
                    " - 0.5f * (A[t%3][i-1][j] + A[t%3][i+1][j])")
    assert info.offsets == ((0, -1), (0, 1)) and info.offsets_of_level(2) == ((-1, 0), (1, 0))
    assert info.radius == (1, 1) and [(d.reach_lo, d.reach_hi) for d in info.dims] == [
        (1, 1), (1, 1)]
    assert info.opt == "nondiag" and not info.associative


@pytest.mark.parametrize("written, update, buffers, lags", [
    # every level the buffers keep: t-1 .. t-2 in four buffers (third-order Adams-Bashforth)
    ("(t+3)%4", "A[(t+2)%4][i][j-1] - A[(t+1)%4][i][j+1] + A[t%4][i-1][j]", 4, [1, 2, 3]),
    # three buffers, the written one read at the cell: level t-2
    ("(t+2)%3", "A[(t+1)%3][i][j] - A[(t+2)%3][i][j]", 3, [1, 3]),
    ("(t+7)%8", "A[(t+6)%8][i][j] + A[t%8][i][j+1]", 8, [1, 7]),
])
def test_every_level_the_buffers_keep_may_be_read(written, update, buffers, lags):
    info = analysed(written, update, buffers=buffers)
    assert [lag for _, lag in reads(info)] == lags
    assert info.history == max(lags) and info.time.buffers == buffers


@pytest.mark.parametrize("written, update, buffers, message", [
    ("(t+1)%2", "A[t%2][i][j] - A[(t+1)%2][i][j+1]", 2, "in-place update"),
    ("(t+2)%3", "A[(t+1)%3][i][j] - A[(t+2)%3][i-1][j]", 3, "in-place update"),
    ("(t+8)%9", "A[(t+7)%9][i][j] - A[(t+1)%9][i][j]", 9,
     "an5dpy supports at most 8 (each launch keeps every older level in registers)"),
])
def test_the_limits_of_this_release(written, update, buffers, message):
    with pytest.raises(UnsupportedInput) as info:
        analysed(written, update, buffers=buffers)
    assert message in info.value.message
    assert info.value.coord.line == 7


def test_the_first_offending_read_in_source_order_is_named():
    with pytest.raises(UnsupportedInput) as info:
        analysed("(t+2)%3", "A[(t+1)%3][i][j] - A[t%3][i+1][j] + A[(t+2)%3][i][j-1]"
                 " + A[(t+2)%3][i+1][j]")
    assert "A[(t+2)%3][i][j-1]" in info.value.message
    assert info.value.coord.column == 62
