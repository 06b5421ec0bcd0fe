"""The simulator on time steps of several statements (check/simulate.py, the coupled
path): FDTD-2D in place (tests/data/multi/fdtd_2d.c: three nests with their own bounds,
two sub-steps) against a numpy transcription evaluated in C's order, over many plans,
sizes and step counts."""

from __future__ import annotations

import os

import numpy as np
import pytest

from an5dpy.analysis import analyze
from an5dpy.blocking.plan import make_plan
from an5dpy.check.simulate import field_shapes, simulate
from an5dpy.frontend import read_program
from paths import DATA



def fdtd_numpy(ey, ex, hz, steps):
    ey, ex, hz = ey.copy(), ex.copy(), hz.copy()
    half, c = np.float32(0.5), np.float32(0.7)
    for _ in range(steps):
        ey[1:, :] = ey[1:, :] - half * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] = ex[:, 1:] - half * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] = hz[:-1, :-1] - c * (((ex[:-1, 1:] - ex[:-1, :-1]) + ey[1:, :-1])
                                            - ey[:-1, :-1])
    return ey, ex, hz


@pytest.fixture(scope="module")
def fdtd_info():
    return analyze(read_program(os.path.join(DATA, "multi", "fdtd_2d.c")))


def test_fdtd_has_two_substeps(fdtd_info):
    assert [sub.statements for sub in fdtd_info.substeps] == [(0, 1), (2,)]
    assert [f.name for f in fdtd_info.fields] == ["ey", "ex", "hz"]
    assert all(f.in_place for f in fdtd_info.fields)


#: (bt, bs, sl, mode, cells per thread)
PLANS = [(1, (8,), None, "nondiag", 1), (2, (16,), None, "none", 1),
         (3, (20,), 4, "nondiag", 1), (4, (24,), None, "none", 1), (2, (9,), 2, "none", 1),
         (5, (32,), 3, "nondiag", 1), (2, (10,), 3, "nondiag", 2), (3, (16,), None, "none", 4)]


@pytest.mark.parametrize("nx,ny", [(2, 2), (3, 7), (9, 5), (17, 17)])
@pytest.mark.parametrize("steps", [0, 1, 2, 3, 5, 8])
def test_fdtd_bit_identical(fdtd_info, nx, ny, steps):
    rng = np.random.default_rng([nx, ny, steps])
    env = {"tmax": steps, "nx": nx, "ny": ny}
    for bt, bs, sl, opt, cells in PLANS:
        fields = [rng.standard_normal(shape).astype(np.float32)
                  for shape in field_shapes(fdtd_info, env)]
        plan = make_plan(fdtd_info, bt=bt, bs=bs, sl=sl, opt=opt, coarsen=cells)
        got = simulate(fdtd_info, plan, fields, env)
        # fields order: ey, ex, hz (first write)
        want = fdtd_numpy(fields[0][0], fields[1][0], fields[2][0], steps)
        for name, g, w in zip("ey ex hz".split(), got, want):
            assert np.array_equal(g[0], w), (name, plan.describe())


def test_a_short_double_buffered_field_keeps_each_buffers_cells():
    """tests/data/multi/fuzz_found/short_buffered_field.c, every step count and degree:
    the simulator (and the generated code, which follows it) never writes a field's cells
    outside its statement, so every field's result equals gcc's (the other buffer of u
    holds an earlier level, which one depends on the launch plan)."""
    import os
    from an5dpy.check.reference import build_reference
    from an5dpy.check.verify import field_results, random_fields
    from an5dpy.frontend import read_program
    from paths import DATA
    program = read_program(os.path.join(DATA, "multi", "fuzz_found", "short_buffered_field.c"))
    info = analyze(program)
    oracle = build_reference(program)
    for steps in range(8):
        env = {"T": steps}
        fields = random_fields(info, env, steps)
        expected = [f.copy() for f in fields]
        oracle.run(expected, env)
        for bt in (1, 2, 3):
            got = simulate(info, make_plan(info, bt=bt, bs=(8,)), fields, env)
            assert np.array_equal(field_results(info, env, got),
                                  field_results(info, env, expected)), (steps, bt)
