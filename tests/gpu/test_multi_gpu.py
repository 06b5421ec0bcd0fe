"""One stencil on several GPUs (pytest -m gpu; skipped with the reason without cupy or
with fewer than two devices): the cupy/NCCL runner (cuda/multi_gpu.py) and the Python API
(Stencil.run(devices=), run_slabs), exact builds bit-identical to the one-GPU run and to
gcc: the 21 benchmarks in float and double on two GPUs with uneven slabs and every
remainder degree, a rotating, a coefficient and a multi-statement program, per-device
cupy slabs, and a grid too thin for the GPUs asked for; the halo exchange overlapped
with the next launch and not (blocking/slabs.overlap_windows), and ``an5d tune --gpus 2
--measure``."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

import an5dpy
from an5dpy.blocking.plan import grid_extents
from an5dpy.blocking.slabs import slab_halo
from an5dpy.check.reference import build_reference, resolve_params
from nccl_support import visible_devices
from an5dpy.check.verify import (field_results, random_fields, random_grid, random_read_only,
                                 result_buffer)
from an5dpy.driver import load

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]
C_INPUTS = REPO / "c_inputs"
BENCHMARKS = sorted((C_INPUTS / "paper_benchmarks.txt").read_text().split())


@pytest.fixture(autouse=True)
def two_devices():
    if visible_devices() < 2:
        pytest.skip(f"several-GPU test: {visible_devices()} device(s) visible, 2 needed")


@lru_cache(maxsize=None)
def compiled(name: str, dtype: str, bt: int):
    _, info = load(str(C_INPUTS / f"{name}.c"), (("SB_TYPE", dtype),))
    depth = bt * max(1, len(info.substeps))
    bs = tuple(2 * depth * r + 16 for r in info.radius[1:])
    if len(bs) == 2:
        bs = (bs[0], max(bs[1], 32))
    return an5dpy.compile(C_INPUTS / f"{name}.c", dtype=dtype, bt=bt,
                          bs=bs if len(bs) > 1 else bs[0], sl=None if len(bs) > 1 else 32,
                          exact=True)


def one_gpu(stencil, host, steps, read_only):
    import cupy
    grid = cupy.asarray(host)
    stencil.run(grid, steps, **{k: cupy.asarray(v) for k, v in read_only.items()})
    return cupy.asnumpy(grid)


@pytest.mark.parametrize("dtype", ["float", "double"])
@pytest.mark.parametrize("name", BENCHMARKS)
def test_benchmark_on_two_gpus_is_the_one_gpu_run_and_gcc(name, dtype):
    _, info = load(str(C_INPUTS / f"{name}.c"), (("SB_TYPE", dtype),))
    bt = 3 if info.ndim == 2 else 2 if max(info.radius) <= 2 else 1
    stencil = compiled(name, dtype, bt)
    halo = slab_halo(stencil.info, stencil.plan)
    for steps in (0, 1, 2, 3, 4, 5, 7):  # every remainder degree and launch parity
        compsize = 2 * halo.widest + 1 + steps % 3 + (40 if stencil.info.ndim == 2 else 5)
        env = resolve_params(stencil.program, {"compsize": compsize, "timestep": steps})
        shape = (2, *(d.size for d in grid_extents(stencil.info, env)))
        host = random_grid(shape, dtype, steps)
        expected = one_gpu(stencil, host, steps, {})
        oracle = host.copy()
        build_reference(stencil.program).run(oracle, env)
        grid = host.copy()
        stencil.run(grid, steps, devices=[0, 1])
        b = result_buffer(stencil.info, env)
        assert np.array_equal(grid, expected, equal_nan=True), (name, steps)
        assert np.array_equal(grid[b], oracle[b], equal_nan=True), (name, steps)


@pytest.mark.parametrize("name", ["wave2d", "poisson2d", "acoustic3d", "heat3dz"])
def test_rotating_and_coefficient_programs_on_two_gpus(name):
    stencil = compiled(name, "double", 2)
    halo = slab_halo(stencil.info, stencil.plan)
    for steps in (0, 1, 2, 3, 6):
        compsize = 2 * halo.widest + 3 + (30 if stencil.info.ndim == 2 else 0)
        env = resolve_params(stencil.program, {"compsize": compsize, "timestep": steps})
        shape = (stencil.info.time.buffers, *(d.size for d in grid_extents(stencil.info, env)))
        host = random_grid(shape, "double", steps)
        coefs = dict(zip((c.name for c in stencil.info.coefficients),
                         random_read_only(stencil.program, env, steps)))
        expected = one_gpu(stencil, host, steps, coefs)
        grid = host.copy()
        stencil.run(grid, steps, devices=[0, 1], **coefs)
        assert np.array_equal(grid, expected, equal_nan=True), (name, steps)
        oracle = host.copy()
        build_reference(stencil.program).run(oracle, env, tuple(coefs.values()))
        b = slice(None) if stencil.plan.levels.rotating else result_buffer(stencil.info, env)
        assert np.array_equal(grid[b], oracle[b], equal_nan=True), (name, steps)


@pytest.mark.parametrize("name", ["grayscott2d", "fdtd2d"])
def test_multi_statement_programs_on_two_gpus(name):
    from an5dpy.cuda.multi_gpu import multi_gpu_runner
    stencil = compiled(name, "float", 2)
    info, plan = stencil.info, stencil.plan
    single = stencil.build()
    runner = multi_gpu_runner(info, plan, single.cubin, single.prefix, single.signature, [0, 1])
    for steps in (0, 1, 2, 3, 5):
        compsize = 2 * slab_halo(info, plan).widest + 35
        env = resolve_params(stencil.program, {"compsize": compsize, "timestep": steps})
        fields = random_fields(info, env, steps)
        expected = single.run_numpy(fields, env)
        got = runner.run_host(fields, env)
        assert all(np.array_equal(g, e, equal_nan=True) for g, e in zip(got, expected))
        oracle = [f.copy() for f in fields]
        build_reference(stencil.program).run(oracle, env)
        assert np.array_equal(field_results(info, env, got), field_results(info, env, oracle))


def test_per_device_slabs_stay_on_their_devices():
    import cupy
    stencil = compiled("star3d1r", "float", 2)
    shape, steps = (2, 41, 41, 41), 5
    host = random_grid(shape, "float", 1)
    expected = one_gpu(stencil, host, steps, {})
    decomp = stencil.decompose(shape, [0, 1])
    slabs = []
    for g, s in enumerate(decomp.slabs):
        with cupy.cuda.Device(g):
            slabs.append(cupy.asarray(host[:, slice(*s.held)]))
    pointers = [s.data.ptr for s in slabs]
    results = stencil.run_slabs(slabs, shape, steps, devices=[0, 1])
    for g, s in enumerate(decomp.slabs):
        with cupy.cuda.Device(g):
            cupy.cuda.Device(g).synchronize()
            assert slabs[g].data.ptr == pointers[g] and results[g].device.id == g
            got = cupy.asnumpy(slabs[g])[:, s.owned_local]
        assert np.array_equal(got, expected[:, slice(*s.owned)])


def test_a_grid_too_thin_for_two_gpus_runs_on_one(capsys):
    stencil = compiled("j2d5pt", "float", 3)
    host = random_grid((2, 9, 9), "float", 0)  # 7 interior planes, a halo of 4
    grid = host.copy()
    stencil.run(grid, 3, devices=[0, 1])
    assert "running on 1" in capsys.readouterr().err
    oracle = host.copy()
    stencil.reference(oracle, 3)
    assert np.array_equal(grid[1], oracle[1])
    with pytest.raises(an5dpy.UsageError, match="at most once"):
        stencil.run(grid, 3, devices=[0, 0])


def timed_run(overlap: bool):
    """star3d1r float over 64^3 cells, 9 steps, on devices 0 and 1 with a PhaseTimes:
    (stencil, shape, steps, host grid, one-GPU result, env, runner, slabs, timer)."""
    from an5dpy.cuda.multi_gpu import PhaseTimes
    stencil = compiled("star3d1r", "float", 2)
    shape, steps = (2, 66, 66, 66), 9
    host = random_grid(shape, "float", 2)
    expected = one_gpu(stencil, host, steps, {})
    env = resolve_params(stencil.program, {"compsize": 64, "timestep": steps})
    runner = stencil.multi_gpu([0, 1], env)
    slabs = runner.scatter(host, env)
    timer = PhaseTimes()
    runner.run(slabs, env, timer=timer, overlap=overlap)
    runner.synchronize()
    return stencil, shape, steps, host, expected, env, runner, slabs, timer


def test_the_phase_timer_on_two_gpus():
    """PhaseTimes: events of every launch on both devices; the run's result unchanged."""
    from an5dpy.blocking.plan import launch_plan
    stencil, shape, steps, host, expected, env, runner, slabs, timer = timed_run(False)
    per_launch = timer.launch_ms()
    assert len(per_launch) == len(launch_plan(steps, 2, 0))
    assert all(set(t) == {0, 1} and all(c > 0 and x >= 0 for c, x in t.values())
               for t in per_launch)
    compute, exchange = timer.seconds()
    assert compute > 0 and exchange >= 0
    assert compute <= sum(c for c, _ in timer.slab_seconds().values())
    pool = host.copy()
    runner.gather(slabs, env, pool)
    b = result_buffer(stencil.info, env)
    assert np.array_equal(pool[b], expected[b])


@pytest.mark.skipif(os.environ.get("AN5D_MPI_TEST") != "1",
                    reason="one process per GPU: run under mpirun with AN5D_MPI_TEST=1")
def test_one_process_per_gpu_with_mpi():
    """mpirun -n 2 python -m pytest -q -m gpu tests/gpu/test_multi_gpu.py -k mpi"""
    from mpi4py import MPI
    from an5dpy.cuda.multi_gpu import mpi_run_host, mpi_runner
    stencil = compiled("j2d5pt", "double", 3)
    single = stencil.build()
    runner = mpi_runner(stencil.info, stencil.plan, single.cubin, single.prefix,
                        single.signature)
    env = resolve_params(stencil.program, {"compsize": 61, "timestep": 7})
    host = random_grid((2, 63, 63), "double", 5)
    got = mpi_run_host(runner, host, env)
    if MPI.COMM_WORLD.Get_rank() == 0:
        oracle = host.copy()
        build_reference(stencil.program).run(oracle, env)
        assert np.array_equal(got[1], oracle[1])


def test_tune_measures_the_candidates_on_two_gpus(capsys, tmp_path, monkeypatch):
    """an5d tune --gpus 2 --measure: the N-GPU ranking's candidates timed with the NCCL
    runner, GFLOP/s of the whole grid; more GPUs than visible is the user's error."""
    import json
    from an5dpy.cli.main import main
    monkeypatch.setenv("AN5D_CACHE_DIR", str(tmp_path / "cache"))
    j2d = str(C_INPUTS / "j2d5pt.c")
    args = ["tune", j2d, "--dtype", "float", "--size", "2000", "--steps", "24",
            "--measure", "2", "--narrow", "--caps", "none,64", "--json"]
    assert main([*args, "--gpus", "2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gpus"] == 2 and data["measured"]
    ranked = [(r["bt"], r["bs"], r["sl"]) for r in data["ranking"]]
    for m in data["measured"]:
        assert (m["bt"], m["bs"], m["sl"]) in ranked[:2] and m["gflops"] > 0
        assert m["gflops"] == pytest.approx(2000 * 2000 * 10 * 24 / m["seconds"] / 1e9)
        assert m["predicted"] > 0
    assert data["best"]["gflops"] == max(m["gflops"] for m in data["measured"])
    visible = visible_devices()
    assert main([*args, "--gpus", str(visible + 1)]) == 2
    assert f"{visible} GPU(s) visible" in capsys.readouterr().err


@pytest.mark.parametrize("dtype", ["float", "double"])
@pytest.mark.parametrize("name, bt", [("j2d5pt", 3), ("box2d2r", 2), ("j2d9pt-gol", 3),
                                      ("star3d1r", 2), ("j3d27pt", 1), ("poisson2d", 2),
                                      ("heat3dz", 1)])
def test_overlap_on_and_off_are_the_one_gpu_run_and_gcc(name, bt, dtype):
    """The exchange overlapped with the interior windows, and not, and as the model
    chooses, on uneven slabs wide enough for windows, every remainder degree: the same
    bits as one GPU and gcc."""
    stencil = compiled(name, dtype, bt)
    halo = slab_halo(stencil.info, stencil.plan)
    for steps in (0, 1, 2, 3, 4, 5, 7):
        compsize = 2 * (halo.below + halo.above + 1) + steps % 3 + \
            (40 if stencil.info.ndim == 2 else 3)
        env = resolve_params(stencil.program, {"compsize": compsize, "timestep": steps})
        shape = (2, *(d.size for d in grid_extents(stencil.info, env)))
        host = random_grid(shape, dtype, steps)
        coefs = dict(zip((c.name for c in stencil.info.coefficients),
                         random_read_only(stencil.program, env, steps)))
        expected = one_gpu(stencil, host, steps, coefs)
        results = {}
        for overlap in (False, True, None):
            grid = host.copy()
            stencil.run(grid, steps, devices=[0, 1], overlap=overlap, **coefs)
            results[overlap] = grid
            assert np.array_equal(grid, expected, equal_nan=True), (name, steps, overlap)
        oracle = host.copy()
        build_reference(stencil.program).run(oracle, env, tuple(coefs.values()))
        b = result_buffer(stencil.info, env)
        assert np.array_equal(results[True][b], oracle[b], equal_nan=True), (name, steps)



def test_overlap_on_per_device_slabs_and_with_the_phase_timer():
    """run_slabs(overlap=True) in place, and PhaseTimes with overlap: the first launch its
    work alone, later ones work, exposed exchange, work; the result unchanged."""
    import cupy
    from an5dpy.blocking.plan import launch_plan
    stencil, shape, steps, host, expected, env, runner, slabs, timer = timed_run(True)
    per_launch = timer.launch_ms()
    assert len(per_launch) == len(launch_plan(steps, 2, 0))
    assert all(len(marks) == (2 if k == 0 else 5 if k == len(per_launch) - 1 else 4)
               for triples in timer.events.values() for k, marks in enumerate(triples))
    assert all(c > 0 and x >= 0 for launch in per_launch for c, x in launch.values())
    pool = host.copy()
    runner.gather(slabs, env, pool)
    b = result_buffer(stencil.info, env)
    assert np.array_equal(pool[b], expected[b])
    decomp = stencil.decompose(shape, [0, 1])
    parts = []
    for g, s in enumerate(decomp.slabs):
        with cupy.cuda.Device(g):
            parts.append(cupy.asarray(host[:, slice(*s.held)]))
    results = stencil.run_slabs(parts, shape, steps, devices=[0, 1], overlap=True)
    for g, s in enumerate(decomp.slabs):
        with cupy.cuda.Device(g):
            cupy.cuda.Device(g).synchronize()
            got = cupy.asnumpy(parts[g])[:, s.owned_local]
        assert np.array_equal(got[b], expected[b][slice(*s.owned)])
        assert results[g].device.id == g


@pytest.mark.parametrize("name, dtype, bs, coarsen", [
    ("star3d2r", "float", "68x12", 2), ("box3d2r", "double", "36x12", 1),
    ("star3d1r", "double", "34x18", 4), ("acoustic3d", "double", "40x16", 2)])
def test_loaded_halo_plans_on_two_gpus(name, dtype, bs, coarsen):
    """The kernel whose computing threads load the halo (mode nondiag and assoc, a
    rotating program with a read-only array) on two GPUs, the exchange overlapped and not,
    every launch count: the same bits as one GPU and gcc."""
    stencil = an5dpy.compile(C_INPUTS / f"{name}.c", dtype=dtype, bt=1, bs=bs, sl=5,
                             coarsen=coarsen, halo="loaded", exact=True)
    assert stencil.plan.halo_loaded
    halo = slab_halo(stencil.info, stencil.plan)
    for steps in (0, 1, 2, 3, 5):
        compsize = 2 * (halo.below + halo.above + 1) + steps % 3 + 3
        env = resolve_params(stencil.program, {"compsize": compsize, "timestep": steps})
        shape = (stencil.info.time.buffers, *(d.size for d in grid_extents(stencil.info, env)))
        host = random_grid(shape, dtype, steps)
        coefs = dict(zip((c.name for c in stencil.info.coefficients),
                         random_read_only(stencil.program, env, steps)))
        expected = one_gpu(stencil, host, steps, coefs)
        oracle = host.copy()
        build_reference(stencil.program).run(oracle, env, tuple(coefs.values()))
        b = slice(None) if stencil.plan.levels.rotating else result_buffer(stencil.info, env)
        for overlap in (False, True):
            grid = host.copy()
            stencil.run(grid, steps, devices=[0, 1], overlap=overlap, **coefs)
            assert np.array_equal(grid, expected, equal_nan=True), (name, steps, overlap)
            assert np.array_equal(grid[b], oracle[b], equal_nan=True), (name, steps, overlap)
