"""an5dpy.check.verify: the simulator runs what an5d-translate emits; the comparison with
the gcc oracle (NaNs, tolerances)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from paths import C_INPUTS

from an5dpy import driver
from an5dpy.blocking.plan import launch_plan
from an5dpy.check import verify

FLOAT, DOUBLE = (("SB_TYPE", "float"),), (("SB_TYPE", "double"),)


# --------------------------------------------------------------------------- what is simulated


@pytest.mark.parametrize("name, defines, options, params", [
    # 6 steps of bT 4: a launch of degree 4 (unrolled heads), then a remainder degree
    ("j2d5pt", FLOAT, dict(bt=4, bs="64", sl=16), {"compsize": "70", "timestep": "6"}),
    # 1,457 FLOP per cell: even the plan's own degree is a compact kernel
    ("box3d4r", FLOAT, dict(bt=1, bs="16x16", opt="none"), {"compsize": "10", "timestep": "2"}),
])
def test_the_simulator_runs_the_emitted_schedule(monkeypatch, name, defines, options, params):
    import an5dpy.check.simulate as simulate
    path = os.path.join(C_INPUTS, f"{name}.c")
    opts = driver.Options(defines=defines, **options)
    emitted = driver.translate(path, opts).schedule
    real, simulated = simulate.simulate, []

    def recording(info, plan, grid, env, schedule=None):
        simulated.append(schedule)
        return real(info, plan, grid, env, schedule)

    monkeypatch.setattr(simulate, "simulate", recording)
    report = verify.verify_file(path, opts, "sim", params)
    assert report.passed and report.comparison.tolerance is None  # bit-identical
    assert simulated == [emitted]
    launched = {launch.degree for launch in launch_plan(int(params["timestep"]), opts.bt)}
    compact = {k.degree for k in emitted.kernels if not k.heads}
    assert launched & compact, "the case must run a compact kernel"
