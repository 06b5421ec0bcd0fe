"""The several-GPU runner's own work on the CPU (tests/fake_cupy_support.py: numpy for cupy,
the simulator for the kernels, NCCL's send/recv as copies): with and without overlap,
its result is the one-device simulation's bit for bit, for 2D and 3D benchmarks, float
and double, uneven slabs, every remainder degree, read-only arrays; with overlap it
launches the windows of blocking/slabs.overlap_windows on its second streams, keeps the
whole launch for slabs too thin for windows and for programs that cannot overlap, and
its phase timer cuts each launch into work and exchange segments."""

from __future__ import annotations

import os

import numpy as np
import pytest

from an5dpy.blocking.plan import grid_extents, launch_plan
from an5dpy.blocking.slabs import overlap_windows, slab_halo
from an5dpy.check.reference import resolve_params
from an5dpy.check.simulate import simulate
from an5dpy.check.verify import random_read_only, random_state
from an5dpy.driver import Options, translate

import fake_cupy_support
from paths import C_INPUTS


def translated(name: str, dtype: str, bt: int):
    from an5dpy.driver import load
    _, info = load(os.path.join(C_INPUTS, name + ".c"), (("SB_TYPE", dtype),))
    bs = "x".join(str(2 * bt * r + 8) for r in reversed(info.radius[1:]))
    return translate(os.path.join(C_INPUTS, name + ".c"),
                     Options(defines=(("SB_TYPE", dtype),), bt=bt, bs=bs, sl=5))


def run_both(monkeypatch, name, dtype, bt, gpus, steps, extra, overlap):
    """(the runner's result, the one-device simulation's, the runner)."""
    fake_cupy_support.install(monkeypatch, gpus)
    t = translated(name, dtype, bt)
    halo = slab_halo(t.info, t.plan)
    compsize = gpus * (halo.below + halo.above + 1) + extra
    env = resolve_params(t.program, {"compsize": compsize, "timestep": steps})
    state = random_state(t.info, env, steps)
    read_only = random_read_only(t.program, env, steps)
    runner = fake_cupy_support.runner(t.info, t.plan, t.schedule, t.model.signature, env, gpus)
    got = runner.run_host(state, env, read_only, overlap=overlap)
    return got, simulate(t.info, t.plan, state, env, t.schedule, read_only), runner, env


@pytest.mark.parametrize("overlap", [False, True], ids=["serial", "overlap"])
@pytest.mark.parametrize("name, dtype, bt", [("j2d5pt", "float", 3), ("box2d2r", "double", 2),
                                             ("star3d1r", "double", 2), ("j3d27pt", "float", 1),
                                             ("poisson2d", "double", 2),
                                             ("heat3dz", "float", 1)])
def test_the_runner_is_the_one_device_run(monkeypatch, name, dtype, bt, overlap):
    for steps in range(0, 8):  # every remainder degree and parity
        gpus = 2 + steps % 2
        got, expected, runner, env = run_both(monkeypatch, name, dtype, bt, gpus, steps,
                                              steps % 3, overlap)
        assert np.array_equal(got, expected, equal_nan=True), (name, steps, gpus, overlap)


def test_overlap_launches_the_windows_on_second_streams(monkeypatch):
    got, expected, runner, env = run_both(monkeypatch, "j2d5pt", "float", 2, 3, 7, 2, True)
    assert np.array_equal(got, expected)
    decomp = runner.decomposition(env)
    launches = launch_plan(7, 2, 0)
    for ls in runner.local:
        s = decomp.slabs[ls.index]
        w = overlap_windows(s, decomp.halo)
        sizes = [(w.interior.size,), tuple(e.size for e in w.edges)]
        # the first launch whole, every later one the interior window, then the edges
        expected_sizes = [s.planes] + [p for _ in launches[1:] for part in sizes for p in part]
        assert [size for _, size in ls.runner.launched] == expected_sizes
        xstream = runner._xstreams[ls.index]
        assert xstream.non_blocking and xstream.waits == len(launches)
        assert ls.stream.waits == len(launches)  # each exchange after the first, and the last
    # without overlap: every launch whole on the compute streams, no second stream
    got, _, runner, _ = run_both(monkeypatch, "j2d5pt", "float", 2, 3, 7, 2, False)
    assert np.array_equal(got, expected) and runner._xstreams == {}
    assert all(size == decomp.slabs[ls.index].planes for ls in runner.local
               for _, size in ls.runner.launched)


def test_slabs_too_thin_for_windows_run_whole_launches(monkeypatch):
    fake_cupy_support.install(monkeypatch, 3)
    t = translated("j2d5pt", "double", 2)
    halo = slab_halo(t.info, t.plan)  # 3 below and above: slabs owning 7, 6 and 6 planes
    env = resolve_params(t.program, {"compsize": 3 * (halo.below + halo.above) + 1,
                                     "timestep": 6})
    state = random_state(t.info, env, 1)
    runner = fake_cupy_support.runner(t.info, t.plan, t.schedule, t.model.signature, env, 3)
    decomp = runner.decomposition(env)
    assert [overlap_windows(s, halo) is None for s in decomp.slabs] == [False, True, True]
    got = runner.run_host(state, env, overlap=True)
    assert np.array_equal(got, simulate(t.info, t.plan, state, env, t.schedule))
    n = len(launch_plan(6, 2, 0))
    for thin in runner.local[1:]:
        planes = decomp.slabs[thin.index].planes
        assert [size for _, size in thin.runner.launched] == [planes] * n
    # the first launch whole, then the interior window and the one edge window (above)
    assert len(runner.local[0].runner.launched) == 1 + 2 * (n - 1)


def test_rotating_programs_run_without_overlap(monkeypatch):
    fake_cupy_support.install(monkeypatch, 2)
    t = translated("wave2d", "double", 2)
    env = resolve_params(t.program, {"compsize": 2 * slab_halo(t.info, t.plan).widest + 20,
                                     "timestep": 5})
    state = random_state(t.info, env, 2)
    runner = fake_cupy_support.runner(t.info, t.plan, t.schedule, t.model.signature, env, 2)
    got = runner.run_host(state, env, overlap=True)
    assert np.array_equal(got, simulate(t.info, t.plan, state, env, t.schedule), equal_nan=True)
    assert runner._xstreams == {}


@pytest.mark.parametrize("overlap", [False, True], ids=["serial", "overlap"])
def test_the_phase_timer_cuts_launches_into_work_and_exchange(monkeypatch, overlap):
    """Every event pair is 1 ms apart in the stand-in: without overlap a launch is its
    kernel and its exchange; with it the first launch is its work alone, later ones the
    interior window, the wait for the exchange and the edge windows, and the last adds
    the wait for its own exchange."""
    from an5dpy.cuda.multi_gpu import PhaseTimes
    fake_cupy_support.install(monkeypatch, 2)
    t = translated("star3d1r", "float", 2)
    halo = slab_halo(t.info, t.plan)
    env = resolve_params(t.program, {"compsize": 2 * (halo.below + halo.above + 1) + 4,
                                     "timestep": 9})
    runner = fake_cupy_support.runner(t.info, t.plan, t.schedule, t.model.signature, env, 2)
    slabs = runner.scatter(random_state(t.info, env, 4), env)
    timer = PhaseTimes()
    runner.run(slabs, env, timer=timer, overlap=overlap)
    per_launch = timer.launch_ms()
    n = len(launch_plan(9, 2, 0))
    assert len(per_launch) == n and all(set(launch) == {0, 1} for launch in per_launch)
    if not overlap:
        assert all(launch[0] == (1.0, 1.0) for launch in per_launch)
        assert timer.seconds() == (n * 1e-3, n * 1e-3)
    else:
        expected = [(1.0, 0.0)] + [(2.0, 1.0)] * (n - 2) + [(2.0, 2.0)]
        assert [launch[0] for launch in per_launch] == expected
        assert timer.seconds() == pytest.approx((sum(c for c, _ in expected) / 1e3,
                                                 sum(x for _, x in expected) / 1e3))
    grid = grid_extents(t.info, env)
    assert len(slabs) == 2 and slabs[0].shape[2:] == tuple(d.size for d in grid[1:])
