"""Rotating time levels (:class:`an5dpy.blocking.plan.TimeLevels`): the launch plan over
work buffers, followed symbolically buffer by buffer; the register slots of the rings."""

from __future__ import annotations

import pytest

from an5dpy.blocking.plan import (OlderRead, TimeLevels, degrees_needed, full_launch_steps,
                                  last_degree_limit, level_launch_degrees, level_run,
                                  run_degrees)

#: (k, history): double-buffered leapfrog, three and four levels read at most k-1 back,
#: three levels read only one back, k levels with the written buffer read at the cell
FORMS = [(2, 2), (3, 1), (3, 2), (3, 3), (4, 2), (4, 3), (4, 4), (5, 4), (6, 3)]


def test_double_buffered_programs_do_not_rotate():
    assert not TimeLevels().rotating
    assert TimeLevels(2, 2).rotating and TimeLevels(3, 1).rotating and TimeLevels(3, 2).rotating
    assert TimeLevels().work_buffers == 0 and TimeLevels().stored_levels(5) == 1


def test_tracked_levels_and_work_buffers():
    assert TimeLevels(2, 2).tracked == 2  # leapfrog: level -1 sits in the written buffer
    assert TimeLevels(3, 1).tracked == 2 and TimeLevels(4, 2).tracked == 3
    assert TimeLevels(4, 3).work_buffers == 6
    assert [TimeLevels(4, 3).stored_levels(d) for d in (1, 2, 3, 5)] == [1, 2, 3, 3]
    assert last_degree_limit(TimeLevels(2, 2)) is None
    assert last_degree_limit(TimeLevels(4, 2)) == 3


@pytest.mark.parametrize("k,history", FORMS)
@pytest.mark.parametrize("bt", [1, 2, 3, 4, 6])
def test_degrees_cover_the_steps(k, history, bt):
    levels = TimeLevels(k, history)
    needed = degrees_needed(bt, levels)
    limit = last_degree_limit(levels)
    for steps in range(0, 60):
        degrees = level_launch_degrees(steps, bt, levels)
        assert sum(degrees) == steps and all(1 <= d <= bt for d in degrees)
        assert set(degrees) <= set(needed)
        assert run_degrees(steps, bt, levels) == degrees
        if limit is not None and degrees:
            assert degrees[-1] <= limit  # levels T-k+1 .. T are all in reach at the end
        # at most one launch more than the fewest
        assert len(degrees) <= -(-steps // bt) + 1


@pytest.mark.parametrize("k,history", FORMS)
@pytest.mark.parametrize("bt", [1, 2, 3, 5])
def test_every_launch_reads_and_writes_the_right_levels(k, history, bt):
    levels = TimeLevels(k, history)
    m = levels.tracked
    pool = k + levels.work_buffers
    for start in range(k):
        for steps in range(0, 40):
            run = level_run(steps, bt, start, levels)
            # home buffer b holds the level tau in -k+1..0 with (start + tau) % k == b
            holds = {(start + tau) % k: tau for tau in range(-k + 1, 1)}
            time = 0
            for launch in run.launches:
                assert len(launch.reads) == m and len(launch.writes) == m
                for j, b in enumerate(launch.reads):
                    if time - j > -k or j < history:  # levels the C program still keeps
                        assert holds[b] == time - j, (start, steps, j)
                assert set(launch.writes).isdisjoint(launch.reads)
                assert len(set(launch.writes)) == m
                assert all(k <= b < pool for b in launch.writes)  # never a home buffer
                assert all(b < k and (start + time + j) % k == b
                           for j, b in enumerate(launch.boundary))
                time += launch.degree
                for j in range(levels.stored_levels(launch.degree)):
                    holds[launch.writes[j]] = time - j
            assert time == steps
            for src, dst in run.placements:
                assert dst < k <= src < pool  # work buffer to home buffer
                holds[dst] = holds[src]
            # the C program's buffers: level T - j in buffer (start + T - j) % k
            for j in range(k):
                assert holds[(start + steps - j) % k] == steps - j, (start, steps, j)


def test_slots_hold_every_plane_an_older_read_needs():
    """Level T reads level T-lag at plane p+dz when level T-lag has reached p + lag*r."""
    at_cell = TimeLevels(3, 2, (OlderRead(2, 0),))
    assert at_cell.slots(1, 4) == 3  # 2r+1: the load is placed after the read of level 0
    below = TimeLevels(3, 2, (OlderRead(2, -1, True),))
    assert below.slots(1, 4) == 4 and below.slots(2, 4) == 6
    assert below.slots(1, 1) == 3  # a degree-1 kernel reads only the loaded level -1
    deep = TimeLevels(5, 4, (OlderRead(4, -2),))
    assert deep.slots(2, 6) == 4 * 2 + 1 + 2 and deep.slots(2, 2) == 7
    assert TimeLevels(5, 1).slots(1, 6) == 4  # stores levels d..d-3: 3r+1


def full_only(steps: int, bt: int, levels: TimeLevels) -> bool:
    return set(run_degrees(steps, bt, levels)) == {bt}


@pytest.mark.parametrize("form", [(2, 1), *FORMS])
@pytest.mark.parametrize("bt", range(1, 9))
def test_full_launch_steps_is_the_fewest_count_of_full_launches_from_the_one_asked(form, bt):
    levels = TimeLevels(*form)
    limit = last_degree_limit(levels)
    for at_least in range(0, 6 * bt + 3):
        steps = full_launch_steps(at_least, bt, levels)
        counts = [n for n in range(max(at_least, 1), max(at_least, 1) + 4 * bt)
                  if full_only(n, bt, levels)]
        if levels.rotating and limit is not None and bt > limit:
            # the last launch of a rotating run is split below bt: no count qualifies
            assert steps is None and counts == []
            continue
        assert steps == counts[0]
        assert steps >= max(at_least, 1) and full_only(steps, bt, levels)


def test_full_launch_steps_of_the_two_buffer_plan_are_even_launch_counts():
    # 4 steps at bT 4 is launched as 3 + 1 (one launch would end in the wrong buffer)
    assert full_launch_steps(4, 4) == 8
    assert full_launch_steps(3, 3) == 3 and full_launch_steps(4, 3) == 6
    assert full_launch_steps(1000, 14) == 1008 and full_launch_steps(0, 1) == 1
    with pytest.raises(ValueError):
        full_launch_steps(10, 0)
