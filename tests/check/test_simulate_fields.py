"""The simulator on time steps of several statements (check/simulate.py, the coupled
path): FDTD-2D in place (tests/data/multi/fdtd_2d.c: three nests with their own bounds,
two sub-steps) against a numpy transcription evaluated in C's order, over many plans,
sizes and step counts; every such program of tests/data/multi/ and c_inputs/ with one
barrier per step against gcc, and the simulator's check that each shared plane a level op
reads was written for it and published by a barrier."""

from __future__ import annotations

import os

import numpy as np
import pytest

from an5dpy import driver, ir
from an5dpy.analysis import analyze
from an5dpy.blocking.build import build_schedule
from an5dpy.blocking.ops import Share, Sync
from an5dpy.blocking.plan import make_plan
from an5dpy.check.reference import build_reference, resolve_params
from an5dpy.check.simulate import field_shapes, simulate
from an5dpy.check.verify import compare, field_results, random_fields, random_read_only
from an5dpy.errors import InternalError, UsageError
from an5dpy.frontend import read_program
from block_support import schedule_without
from cuda_support import form_params
from paths import C_INPUTS, DATA



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


# --------------------------------------------------------------------------- one barrier per step

#: Every time step of several statements the tests hold: tests/data/multi/ and the
#: multi-statement programs of c_inputs/ in float and double.
COUPLED_PROGRAMS = (
    [(os.path.join(DATA, "multi", f), ()) for f in sorted(os.listdir(os.path.join(DATA, "multi")))
     if f.endswith(".c")]
    + [(os.path.join(C_INPUTS, f"{name}.c"), (("SB_TYPE", dtype),))
       for name in ("grayscott2d", "fdtd2d", "acousticvp3d") for dtype in ("float", "double")])

#: (bt, threads beyond the halo of 2 * levels * r, sl, cells per thread, idle warps): bT
#: 1..4 of one and two cells a thread, skipping idle warps and computing at them, odd and
#: even blocks, stream division on and off.
STEP_PLANS = [(bt, (bt + cells + k) % 4 + 1, (None, 2, 3)[(bt + k) % 3], cells, idle)
              for bt in (1, 2, 3, 4) for cells in (1, 2)
              for k, idle in enumerate(("skip", "compute"))]
#: The sizes of a grid's in-plane and streaming extents, in the order the program names
#: its size parameters (a program of one size parameter takes the first): tiny, odd,
#: a grid of no interior at all.
GRIDS = ((2, 2), (5, 3), (3, 7), (13, 6))
STEP_COUNTS = range(10)


def step_plan(info, bt: int, extra: int, sl, cells: int, idle: str):
    bs = tuple(2 * bt * len(info.substeps) * r + extra for r in info.radius[1:])
    bs = (-(-bs[0] // cells) * cells, *bs[1:])
    return make_plan(info, bt, bs=bs, sl=sl, opt="nondiag", coarsen=cells,
                     barriers="step", idle=idle)


def grid_env(program, grid: tuple[int, ...], steps: int) -> dict:
    """The program's parameters for ``grid`` (its size parameters in order) and ``steps``."""
    params = form_params(program, -1, steps, 0.05)  # -1 marks the size parameters
    sizes = iter(grid)
    return resolve_params(program, {name: str(next(sizes, grid[0])) if value == "-1" else value
                                    for name, value in params.items()})


@pytest.mark.parametrize("path, defines", COUPLED_PROGRAMS,
                         ids=lambda v: os.path.basename(v)[:-2] if isinstance(v, str)
                         else (v[0][1] if v else ""))
def test_one_barrier_per_step_bit_identical_to_gcc(path, defines):
    """Every plan, every step count 0..9, each on a grid of its own in turn: every
    field's result bit-identical to gcc's (the simulator checks each shared read was
    published by the step's barrier)."""
    program, info = driver.load(path, defines)
    oracle = build_reference(program)
    plans = {}
    for k, options in enumerate(STEP_PLANS):
        try:
            plans[k] = step_plan(info, *options)
        except UsageError as e:  # four fields of doubles at bT 3 and 4, 2 cells a thread
            assert "registers per thread" in str(e) or "shared memory" in str(e), e
    assert {plan.bt for plan in plans.values()} == {1, 2, 3, 4}
    expected: dict = {}
    checked = 0
    for k, plan in plans.items():
        for steps in STEP_COUNTS:
            grid = GRIDS[(k + steps) % len(GRIDS)]
            env = grid_env(program, grid, steps)
            fields = random_fields(info, env, steps)
            read_only = random_read_only(program, env, steps)
            if (grid, steps) not in expected:
                run = [f.copy() for f in fields]
                oracle.run(run, env, read_only)
                expected[grid, steps] = field_results(info, env, run)
            got = field_results(info, env, simulate(info, plan, fields, env,
                                                    read_only=read_only))
            result = compare(got, expected[grid, steps], None)
            assert result.bit_identical, (plan.describe(), steps, grid, result.lines())
            checked += 1
    assert checked == len(plans) * len(STEP_COUNTS)


@pytest.fixture(scope="module")
def stepped_fdtd(fdtd_info):
    plan = make_plan(fdtd_info, 2, bs=(16,), opt="nondiag", barriers="step")
    env = {"tmax": 5, "nx": 19, "ny": 7}
    rng = np.random.default_rng(5)
    fields = [rng.standard_normal(shape).astype(np.float32)
              for shape in field_shapes(fdtd_info, env)]
    return plan, env, fields


def test_the_simulator_catches_a_schedule_without_its_shares(fdtd_info, stepped_fdtd):
    plan, env, fields = stepped_fdtd
    simulate(fdtd_info, plan, fields, env, build_schedule(plan))  # as built: fine
    with pytest.raises(InternalError, match="which no Share wrote for it"):
        simulate(fdtd_info, plan, fields, env, schedule_without(build_schedule(plan), Share))


def test_the_simulator_catches_a_share_no_barrier_published(fdtd_info, stepped_fdtd):
    plan, env, fields = stepped_fdtd
    with pytest.raises(InternalError, match="before a barrier published it"):
        simulate(fdtd_info, plan, fields, env, schedule_without(build_schedule(plan), Sync))


def test_the_simulator_catches_a_share_of_too_few_fields(fdtd_info, stepped_fdtd,
                                                          monkeypatch):
    """Sub-step 0 reads hz at in-plane neighbours and sub-step 1 ex: a SHARE of hz alone
    leaves sub-step 1's read of ex without its plane."""
    plan, env, fields = stepped_fdtd
    assert fdtd_info.step_shared_fields == (1, 2)
    monkeypatch.setattr(ir.StencilInfo, "step_shared_fields", property(lambda self: (2,)))
    with pytest.raises(InternalError, match="field 1's plane 0 is read at in-plane"):
        simulate(fdtd_info, plan, fields, env)
