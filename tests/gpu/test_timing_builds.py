"""Timing builds on the GPU (pytest -m gpu; skipped without a GPU): a build of the plan's
full degree alone (an5dpy.perf.tune.timing_degrees), run for a step count of full
launches (timing_steps), is bit-identical to gcc in an exact build, as the whole build is."""

from __future__ import annotations

import os

import pytest

from an5dpy.blocking.plan import grid_extents, make_plan
from an5dpy.check.reference import build_reference, resolve_params
from an5dpy.check.verify import compare, random_grid, result_buffer
from an5dpy.driver import load
from paths import C_INPUTS

pytestmark = pytest.mark.gpu

CASES = [("j2d5pt", "float", dict(bt=4, bs=(128,), sl=64), 37),
         ("star2d1r", "double", dict(bt=5, bs=(256,), sl=128, coarsen=2, barriers="step"), 41),
         ("star3d1r", "float", dict(bt=3, bs=(32, 32), sl=16), 19),
         ("star3d2r", "double", dict(bt=2, bs=(16, 32), sl=None), 21)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_a_timing_build_runs_its_step_counts_exactly(case, tmp_path):
    from an5dpy.cuda.runtime import BuildOptions, CupyRunner, build_kernels, device_arch
    from an5dpy.perf.tune import timing_degrees, timing_steps
    name, dtype, settings, size = case
    program, info = load(os.path.join(C_INPUTS, f"{name}.c"), (("SB_TYPE", dtype),))
    plan = make_plan(info, **settings)
    model, cubin = build_kernels(info, plan, name, BuildOptions(arch=device_arch(), exact=True),
                                 directory=str(tmp_path), degrees=timing_degrees(plan))
    assert [r.name for r in cubin.resources if "_kernel_d" in r.name] == [
        f"{model.prefix}_kernel_d{plan.depth}"]
    runner = CupyRunner(info, plan, cubin, model.prefix, model.signature)
    for wanted in (1, 7):
        steps = timing_steps(plan, wanted)
        env = resolve_params(program, {"compsize": size, "timestep": steps})
        grid = random_grid((2, *(d.size for d in grid_extents(info, env))), dtype, seed=steps)
        expected = grid.copy()
        build_reference(program).run(expected, env)
        got = runner.run_numpy(grid, env)
        b = result_buffer(info, env)
        result = compare(got[b], expected[b], None)
        assert result.passed and result.bit_identical, result.lines()
