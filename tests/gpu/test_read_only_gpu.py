"""Read-only (coefficient) arrays on the GPU (pytest -m gpu; skipped without one): the
generated kernels of every program of tests/read_only_support.py against the gcc oracle,
bit-identical in an exact build (modes none and nondiag) under several plans (degrees
1..5, odd and tiny blocks, stream division on and off), odd and tiny grids and 0, 1, 2,
3 and 7 steps; the naive baseline; mode assoc where the update is a sum (forced, see
``forced_assoc``; within the verifier's tolerance); ``an5d verify --backend cuda``; and
the Python API taking the arrays by keyword and in the mapping."""

from __future__ import annotations

import concurrent.futures

import numpy as np
import pytest

from an5dpy import UsageError, driver
from an5dpy.blocking.plan import grid_extents
from an5dpy.check.reference import build_reference, resolve_params
from an5dpy.check.verify import (amplification, compare, must_be_identical, random_grid,
                                 random_read_only, result_buffer, tolerance, verify_file)
from an5dpy.cuda import runtime

from read_only_support import PROGRAMS, SUMS, forced_assoc, write

pytestmark = pytest.mark.gpu

#: (bt, bs, sl): degrees 1..5, tiny and odd blocks, stream division on and off.
PLANS_2D = [(1, (8,), None), (2, (9,), 3), (3, (13,), None), (5, (21,), 2)]
PLANS_3D = [(1, (6, 5), None), (2, (7, 9), 2), (3, (11, 8), None)]
STEPS = (0, 1, 2, 3, 7)
#: Grid parameters per program: odd sizes, a grid smaller than a block, a single row.
SIZES = {"sum3d": [{"n": "9"}, {"n": "3"}, {"n": "14"}],
         "velocity3d": [{}], "local3d": [{}]}
SIZES_2D = [{"n": "11", "m": "13"}, {"n": "5", "m": "3"}, {"n": "4", "m": "19"},
            {"n": "37", "m": "6"}]


def sizes(name: str) -> list[dict[str, str]]:
    return SIZES.get(name, SIZES_2D)


def builds(name: str, info, coarse: bool = False) -> list[tuple[str, object, object]]:
    """(mode, info, plan): modes none and nondiag (where legal) under every plan, and mode
    assoc (forced) under two plans where the update is a sum; with ``coarse``, two and
    four cells per thread in the default mode under two plans (the outermost block size
    rounded up to a multiple) instead."""
    plans = PLANS_3D if info.ndim == 3 else PLANS_2D
    if coarse:
        return [("coarse", info, driver.blocking_plan(
            info, bt, bs=(-(-bs[0] // c) * c, *bs[1:]), sl=sl, coarsen=c))
            for (bt, bs, sl), c in ((plans[1], 2), (plans[2], 4))]
    out = []
    for bt, bs, sl in plans:
        out.append(("none", info, driver.blocking_plan(info, bt, bs=bs, sl=sl, opt="none")))
        if info.diagonal_free:
            out.append(("nondiag", info,
                        driver.blocking_plan(info, bt, bs=bs, sl=sl, opt="nondiag")))
    if name in SUMS:
        summed = forced_assoc(info)
        out += [("assoc", summed, driver.blocking_plan(summed, bt, bs=bs, sl=sl, opt="assoc"))
                for bt, bs, sl in plans[1:3]]
    return out


def runners(name: str, info, coarse: bool = False
            ) -> list[tuple[str, object, runtime.CupyRunner]]:
    """Every build of :func:`builds`, compiled in parallel (exact: no fast math, no FMA
    contraction), then loaded."""
    options = runtime.BuildOptions(arch=runtime.device_arch(), exact=True)
    jobs = builds(name, info, coarse)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        built = list(pool.map(lambda j: runtime.build_kernels(j[1], j[2], name, options), jobs))
    return [(mode, summed, runtime.CupyRunner(summed, plan, cubin, model.prefix,
                                              model.signature))
            for (mode, summed, plan), (model, cubin) in zip(jobs, built)]


def check(name: str, program, info, runner, params: dict, seed: int, naive: bool = False):
    """Run ``runner`` (or its naive kernel) and the oracle on the same random grid and
    read-only arrays; bit-identical where the build promises it, else within the
    verifier's tolerance."""
    import cupy
    env = resolve_params(program, params)
    shape = (2, *(d.size for d in grid_extents(info, env)))
    grid = random_grid(shape, info.dtype, seed)
    read_only = random_read_only(program, env, seed)
    oracle = build_reference(program)
    expected = grid.copy()
    oracle.run(expected, env, read_only)
    device = cupy.asarray(grid)
    arrays = tuple(cupy.asarray(a) for a in read_only)
    if naive:
        runner.run_naive(device, env, arrays)
    else:
        runner.run(device, env, arrays)
    got = cupy.asnumpy(device)
    b = result_buffer(info, env)
    steps = info.time.steps(env)
    if must_be_identical(info, runner.plan, True):
        result = compare(got[b], expected[b], None)
    else:
        def oracle_result(moved):
            oracle.run(moved, env, read_only)
            return moved[b]
        amp = amplification(oracle_result, grid, expected[b], info.dtype, seed)
        result = compare(got[b], expected[b], tolerance(info, runner.plan, steps, amp), amp)
    assert result.passed, (name, runner.plan.describe(), params, naive, result.lines())
    return result


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_read_only_kernels_match_gcc(tmp_path, name):
    program, info = driver.load(write(tmp_path, name))
    checked = {"none": 0, "nondiag": 0, "assoc": 0}
    for mode, summed, runner in runners(name, info):
        for k, steps in enumerate(STEPS):
            for params in sizes(name):
                full = {**PROGRAMS[name][1], **params, "T": str(steps)}
                result = check(name, program, summed, runner, full, seed=k)
                if mode != "assoc":
                    assert result.bit_identical
                checked[mode] += 1
    assert checked["none"] >= len(STEPS) * 3
    assert (checked["assoc"] > 0) == (name in SUMS)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_coarsened_read_only_kernels_match_gcc(tmp_path, name):
    program, info = driver.load(write(tmp_path, name))
    checked = 0
    for mode, summed, runner in runners(name, info, coarse=True):
        for k, steps in enumerate(STEPS):
            for params in sizes(name):
                full = {**PROGRAMS[name][1], **params, "T": str(steps)}
                assert check(name, program, summed, runner, full, seed=k).bit_identical
                checked += 1
    assert checked == 2 * len(STEPS) * len(sizes(name))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_naive_baseline_with_read_only_arrays_matches_gcc(tmp_path, name):
    program, info = driver.load(write(tmp_path, name))
    plan = driver.blocking_plan(info, 2, bs=(16,) if info.ndim == 2 else (8, 8))
    options = runtime.BuildOptions(arch=runtime.device_arch(), exact=True)
    runner = runtime.cuda_runner(info, plan, name, options)
    for k, steps in enumerate((0, 1, 4)):
        for params in sizes(name):
            result = check(name, program, info, runner,
                           {**PROGRAMS[name][1], **params, "T": str(steps)}, k, naive=True)
            assert result.bit_identical


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_verify_cuda_passes_on_read_only_programs(tmp_path, name):
    path = write(tmp_path, name)
    _, info = driver.load(path)
    bs = "13" if info.ndim == 2 else "9x7"
    params = {**PROGRAMS[name][1], **sizes(name)[0], "T": "5"}
    report = verify_file(path, driver.Options(bt=3, bs=bs, sl="4"), "cuda", params,
                         exact=True, seed=2)
    assert report.passed and report.comparison.bit_identical, report.lines()


def test_api_runs_with_read_only_arrays_by_keyword_and_mapping(tmp_path, monkeypatch):
    import cupy

    import an5dpy
    monkeypatch.setenv("AN5D_CACHE_DIR", str(tmp_path / "cache"))
    runtime.clear_loaded_modules()
    stencil = an5dpy.compile(write(tmp_path, "planes_rows"), bt=3, bs=16, sl=5, exact=True)
    n, m, steps = 23, 17, 6
    host = random_grid((2, n, m), "float", 4)
    cz, row, c = (np.random.default_rng(k).random(shape) + 0.5
                  for k, shape in enumerate([(n,), (m,), (3, m)]))
    row = row.astype(np.float32)
    expected = stencil.reference(host.copy(), steps, cz=cz, row=row, c=c).copy()
    on_device = {"cz": cupy.asarray(cz), "row": cupy.asarray(row), "c": cupy.asarray(c)}
    grid = cupy.asarray(host)
    by_keyword = cupy.asnumpy(stencil.run(grid, steps, **on_device))
    assert np.array_equal(by_keyword, expected)
    grid = cupy.asarray(host)
    by_mapping = cupy.asnumpy(stencil.run({"A": grid, **on_device}, steps))
    assert np.array_equal(by_mapping, expected)
    with pytest.raises(UsageError, match="read-only array 'cz' must be a C-contiguous cupy"):
        stencil.run(cupy.asarray(host), steps, cz=cz, row=on_device["row"], c=on_device["c"])
    with pytest.raises(UsageError, match="missing read-only array 'row'"):
        stencil.run(cupy.asarray(host), steps, cz=on_device["cz"], c=on_device["c"])
    timing = stencil.bench(steps=3, n=n, m=m, repeats=2)
    assert timing.gflops > 0
    runtime.clear_loaded_modules()
