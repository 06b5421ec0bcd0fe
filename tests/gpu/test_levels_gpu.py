"""Rotating time levels on the GPU (pytest -m gpu; skipped without one): every program of
tests/data/forms/ whose array rotates (three-level waves, leapfrog, older levels read at
offsets, four time buffers, the oldest level read from the written buffer) built exactly
(no fast math, no FMA contraction) under several plans -- degrees 1..5, odd and tiny
blocks, stream division on and off, modes none and nondiag -- and run for 0..11 steps on
odd grids: every time buffer bit-identical to the gcc oracle's, and so is the naive
one-kernel-per-step baseline."""

from __future__ import annotations

import concurrent.futures
import glob
import os

import numpy as np
import pytest

from an5dpy import driver
from an5dpy.blocking.plan import grid_extents
from an5dpy.check.reference import build_reference, resolve_params
from an5dpy.check.verify import compare, random_grid, random_read_only
from an5dpy.cuda import runtime

from cuda_support import form_params

pytestmark = pytest.mark.gpu

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rotating_forms() -> list[str]:
    out = []
    for path in sorted(glob.glob(os.path.join(REPO, "tests", "data", "forms", "*.c"))):
        _, info = driver.load(path)
        if driver.blocking_plan(info, 1, bs=(8,) * (info.ndim - 1)).levels.rotating:
            out.append(path)
    return out


FORMS = rotating_forms()
#: (bt, bs per in-plane dimension beyond 2*bt*r, sl, cells per thread: the outermost
#: in-plane block size rounded up to a multiple of it)
PLANS = [(1, 3, None, 1), (2, 1, 3, 1), (3, 4, None, 1), (5, 2, 2, 1), (2, 1, 3, 2),
         (3, 4, None, 4)]
STEPS = (0, 1, 2, 3, 4, 7, 11)


def builds(info, kind: str) -> list:
    """The plans of :data:`PLANS`: ``cell``, one cell per thread; ``coarse``, several;
    ``step``, every one with one barrier per step (mode nondiag), where the program takes
    it (older levels read at the cell or along the streaming dimension only)."""
    plans = []
    for bt, extra, sl, coarsen in PLANS:
        if kind != "step" and (coarsen > 1) != (kind == "coarse"):
            continue
        bs = tuple(2 * bt * r + extra for r in info.radius[1:])
        bs = (-(-bs[0] // coarsen) * coarsen, *bs[1:])
        if kind == "step":
            if info.diagonal_free and not driver.blocking_plan(
                    info, bt, bs=bs, sl=sl).levels.shared_older:
                plans.append(driver.blocking_plan(info, bt, bs=bs, sl=sl, opt="nondiag",
                                                  coarsen=coarsen, barriers="step"))
            continue
        for mode in ("none", "nondiag") if info.diagonal_free else ("none",):
            plans.append(driver.blocking_plan(info, bt, bs=bs, sl=sl, opt=mode,
                                              coarsen=coarsen))
    return plans


def test_every_rotating_form_is_covered():
    names = {os.path.basename(p) for p in FORMS}
    assert {"damped_wave2d.c", "adams_bashforth3.c", "old_levels3d.c",
            "oldest_in_written_buffer.c", "leapfrog3d.c", "wave2d_3level.c"} <= names
    stepped = {os.path.basename(p) for p in FORMS if builds(driver.load(p)[1], "step")}
    assert {"leapfrog3d.c", "wave2d_3level.c", "seismic3d.c"} <= stepped


@pytest.mark.parametrize("kind", ["cell", "coarse", "step"])
@pytest.mark.parametrize("path", FORMS, ids=lambda p: os.path.basename(p)[:-2])
def test_rotating_form_every_buffer_bit_identical(path, kind):
    import cupy
    program, info = driver.load(path)
    options = runtime.BuildOptions(arch=runtime.device_arch(), exact=True)
    plans = builds(info, kind)
    if not plans:
        pytest.skip("older levels read at in-plane neighbours: no barrier per step")
    stem = os.path.basename(path)[:-2]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        built = list(pool.map(lambda plan: runtime.build_kernels(info, plan, stem, options),
                              plans))
    oracle = build_reference(program)
    sizes = (11, 6, 3) if info.ndim == 3 else (19, 7, 4)
    checked = 0
    for plan, (model, cubin) in zip(plans, built):
        runner = runtime.CupyRunner(info, plan, cubin, model.prefix, model.signature)
        for seed, steps in enumerate(STEPS):
            for size in sizes:
                env = resolve_params(program, form_params(program, size, steps, 0.05))
                shape = (info.time.buffers, *(d.size for d in grid_extents(info, env)))
                grid = random_grid(shape, info.dtype, seed)
                read_only = random_read_only(program, env, seed)
                expected = grid.copy()
                oracle.run(expected, env, read_only)
                assert np.isfinite(expected).all()
                device = cupy.asarray(grid)
                runner.run(device, env, tuple(cupy.asarray(a) for a in read_only))
                got = cupy.asnumpy(device)
                for b in range(info.time.buffers):
                    result = compare(got[b], expected[b], None)
                    assert result.passed and result.bit_identical, (
                        stem, plan.describe(), steps, size, b, result.lines())
                checked += 1
                if seed == 0 and size == sizes[0]:
                    naive = cupy.asarray(grid)
                    runner.run_naive(naive, env, tuple(cupy.asarray(a) for a in read_only))
                    b = (info.time.start_buffer(env) + info.time.steps(env)) % \
                        info.time.buffers
                    assert compare(cupy.asnumpy(naive)[b], expected[b], None).bit_identical
    assert checked == len(plans) * len(STEPS) * len(sizes)
