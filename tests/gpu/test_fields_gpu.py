"""Time steps of several statements on the GPU (pytest -m gpu; skipped without one): every
program of tests/data/multi/ (Gray-Scott's two double-buffered fields, FDTD-2D's three
fields in place over nests of their own bounds and two sub-steps, mixed and 3D forms) and
the multi-statement programs of c_inputs/, built exactly (no fast math, no FMA
contraction) under several plans -- degrees 1..5, odd and tiny blocks, one, two and four
cells per thread, stream division on and off, modes none and nondiag, and in mode nondiag
one barrier per step (skipping idle warps and computing at them) -- and run for 0..9
steps on odd grids: every field bit-identical to the gcc oracle's, and so is the naive
one-kernel-per-sub-step baseline."""

from __future__ import annotations

import concurrent.futures
import glob
import os

import pytest

from an5dpy import driver
from an5dpy.check.reference import build_reference, resolve_params
from an5dpy.check.verify import compare, field_results, random_fields, random_read_only
from an5dpy.cuda import runtime
from an5dpy.errors import UsageError

from cuda_support import form_params

pytestmark = pytest.mark.gpu

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAMS = sorted(glob.glob(os.path.join(REPO, "tests", "data", "multi", "*.c")))
#: (bt, bs per in-plane dimension beyond 2*levels*r, sl, cells per thread: the outermost
#: in-plane block size rounded up to a multiple of it; and optionally the barriers and
#: idle warps, one barrier per level skipping them where not given; one barrier per step
#: runs in mode nondiag alone)
PLANS = [(1, 3, None, 1), (2, 1, 3, 1), (3, 4, None, 1), (5, 2, 2, 1), (1, 3, None, 2),
         (2, 5, 2, 4), (2, 1, 3, 2), (1, 2, None, 1, "step", "skip"),
         (3, 3, 2, 1, "step", "skip"), (2, 4, None, 2, "step", "skip"),
         (4, 1, 3, 2, "step", "compute"), (2, 3, 2, 4, "step", "compute")]
STEPS = (0, 1, 2, 3, 5, 9)


def builds(info) -> list:
    plans = []
    for bt, extra, sl, cells, *more in PLANS:
        barriers, idle = more or ("level", "skip")
        levels = bt * len(info.substeps)
        bs = tuple(2 * levels * r + extra for r in info.radius[1:])
        bs = (-(-bs[0] // cells) * cells, *bs[1:])
        modes = ("none", "nondiag") if info.diagonal_free else ("none",)
        for mode in modes if barriers == "level" else ("nondiag",)[:info.diagonal_free]:
            try:
                plans.append(driver.blocking_plan(info, bt, bs=bs, sl=sl, opt=mode,
                                                  coarsen=cells, barriers=barriers,
                                                  idle=idle))
            except UsageError as e:  # more registers or shared memory than a block has
                assert "registers" in str(e) or "shared memory" in str(e), e  # (4 fields)
    return plans


def check_program(program, info, stem: str, sizes, params) -> int:
    options = runtime.BuildOptions(arch=runtime.device_arch(), exact=True)
    plans = builds(info)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        built = list(pool.map(lambda plan: runtime.build_kernels(info, plan, stem, options),
                              plans))
    oracle = build_reference(program)
    checked = 0
    for plan, (model, cubin) in zip(plans, built):
        runner = runtime.CupyRunner(info, plan, cubin, model.prefix, model.signature)
        for seed, steps in enumerate(STEPS):
            for size in sizes:
                env = resolve_params(program, params(size, steps))
                fields = random_fields(info, env, seed)
                read_only = random_read_only(program, env, seed)
                expected = [f.copy() for f in fields]
                oracle.run(expected, env, read_only)
                want = field_results(info, env, expected)
                got = field_results(info, env, runner.run_numpy(fields, env, read_only))
                result = compare(got, want, None)
                assert result.passed and result.bit_identical, (
                    stem, plan.describe(), steps, size, result.lines())
                checked += 1
                if seed == 1 and size == sizes[0]:
                    naive = runner.run_numpy(fields, env, read_only, naive=True)
                    assert compare(field_results(info, env, naive), want, None).bit_identical
    return checked


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: os.path.basename(p)[:-2])
def test_multi_statement_program_bit_identical(path):
    program, info = driver.load(path)
    assert info.coupled
    sizes = (11, 6, 3) if info.ndim == 3 else (19, 7, 4)
    checked = check_program(program, info, os.path.basename(path)[:-2], sizes,
                            lambda size, steps: form_params(program, size, steps, 0.05))
    assert checked == len(builds(info)) * len(STEPS) * len(sizes)


@pytest.mark.parametrize("dtype", ["float", "double"])
@pytest.mark.parametrize("name", ["grayscott2d", "fdtd2d", "acousticvp3d"])
def test_c_inputs_multi_statement_program_bit_identical(name, dtype):
    path = os.path.join(REPO, "c_inputs", f"{name}.c")
    program, info = driver.load(path, (("SB_TYPE", dtype),))
    sizes = (13, 4) if info.ndim == 3 else (21, 5)
    checked = check_program(program, info, name, sizes,
                            lambda size, steps: form_params(program, size, steps))
    assert checked == len(builds(info)) * len(STEPS) * len(sizes)
