"""Rotating time levels (:class:`an5dpy.blocking.plan.TimeLevels`): the launch plan over
work buffers, followed symbolically buffer by buffer."""

from __future__ import annotations

import pytest

from an5dpy.blocking.plan import (WORK_BUFFERS, TimeLevels, degrees_needed,
                                  level_launch_degrees, level_run, run_degrees)


def test_double_buffered_programs_do_not_rotate():
    assert not TimeLevels().rotating
    assert TimeLevels(2, 2).rotating and TimeLevels(3, 1).rotating and TimeLevels(3, 2).rotating


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("bt", [1, 2, 3, 4, 6])
def test_degrees_cover_the_steps(k, bt):
    needed = degrees_needed(bt, TimeLevels(k, 2))
    for steps in range(0, 60):
        degrees = level_launch_degrees(steps, bt, k)
        assert sum(degrees) == steps and all(1 <= d <= bt for d in degrees)
        assert set(degrees) <= set(needed)
        assert run_degrees(steps, bt, TimeLevels(k, 2)) == degrees
        if k == 3 and degrees:
            assert degrees[-1] <= 2  # levels T-2 .. T are all in reach at the end
        # at most one launch more than the fewest
        assert len(degrees) <= -(-steps // bt) + 1


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("bt", [1, 2, 3, 5])
def test_every_launch_reads_and_writes_the_right_levels(k, bt):
    for start in range(k):
        for steps in range(0, 40):
            run = level_run(steps, bt, start, TimeLevels(k, 2))
            # home buffer b holds the level tau in -k+1..0 with (start + tau) % k == b
            holds = {(start + tau) % k: tau for tau in range(-k + 1, 1)}
            time = 0
            for launch in run.launches:
                assert holds[launch.reads[0]] == time and holds[launch.reads[1]] == time - 1
                assert set(launch.writes).isdisjoint(launch.reads)
                assert all(w >= k for w in launch.writes)  # never a home buffer
                assert len(set(launch.writes)) == 2
                assert all(k <= b < k + WORK_BUFFERS for b in launch.writes)
                assert all(b < k and (start + time + j) % k == b
                           for j, b in enumerate(launch.boundary))
                time += launch.degree
                holds[launch.writes[0]] = time
                if launch.degree >= 2:  # degree 1: level 0 stays in the buffer read
                    holds[launch.writes[1]] = time - 1
            assert time == steps
            for src, dst in run.placements:
                assert dst < k <= src < k + WORK_BUFFERS  # work buffer to home buffer
                holds[dst] = holds[src]
            # the C program's buffers: level T - j in buffer (start + T - j) % k
            for j in range(k):
                assert holds[(start + steps - j) % k] == steps - j, (start, steps, j)
