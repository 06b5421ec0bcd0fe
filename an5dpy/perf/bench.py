"""Timing generated code on the GPU (``an5d bench``), as the paper measures (section 6).

The grid and the read-only arrays stay on the device: host<->device transfers are
excluded. Each timed run is the
whole launch plan of the scop's step count, bracketed by CUDA events, after warm-up runs;
the median of the repeats is reported. GFLOP/s counts as the paper's harness does:
interior cells x FLOP/cell x steps / time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from an5dpy.errors import UsageError
from an5dpy.ir import StencilInfo
from an5dpy.blocking.plan import BlockingPlan, Mode, default_mode, grid_extents, make_plan

#: The paper's sizes (section 6.1): 16384^2 in 2D, 512^3 in 3D, 1000 steps.
PAPER_SIZE = {2: 16384, 3: 512}
PAPER_STEPS = 1000
#: The benchmark harness' parameters (c_inputs/common.h).
HARNESS_SIZE, HARNESS_STEPS = "compsize", "timestep"


def paper_env(program, info: StencilInfo, steps: int = PAPER_STEPS) -> dict:
    """A benchmark's scop parameters at the paper's size for its dimension, ``steps``
    time steps (the harness' compsize and timestep; the others derived as the file
    defines them)."""
    from an5dpy.check.reference import resolve_params
    return resolve_params(program, {HARNESS_SIZE: PAPER_SIZE[info.ndim], HARNESS_STEPS: steps})


def sconf_plan(info: StencilInfo) -> BlockingPlan:
    """The paper's Sconf (section 6.3): bT 4, 2D bS 128 with sl 128 and no associative
    mode, 3D bS 32x32 without stream division. Where bT 4 leaves a 32x32 block no compute
    region (radius-4 3D stencils), the largest legal bT is used."""
    mode = default_mode(info)
    if info.ndim == 2 and mode is Mode.ASSOC:
        mode = Mode.NONE
    bs, sl = ((128,), 128) if info.ndim == 2 else ((32, 32), None)
    for bt in range(4, 0, -1):
        try:
            return make_plan(info, bt, bs=bs, sl=sl, opt=mode)
        except UsageError:
            continue
    raise UsageError("no Sconf plan fits this stencil")


def interior_cells(info: StencilInfo, env: Mapping[str, int]) -> int:
    return math.prod(d.length for d in grid_extents(info, env))


def gflops(info: StencilInfo, env: Mapping[str, int], seconds: float) -> float:
    steps = info.time.steps(env)
    return interior_cells(info, env) * info.flops_per_cell * steps / seconds / 1e9


@dataclass(frozen=True)
class BenchResult:
    label: str
    plan: BlockingPlan | None
    regs: int | None  # max registers per thread over the kernels (ptxas)
    spills: bool
    times: tuple[float, ...]  # seconds per run
    gflops: float
    flags: str = ""

    @property
    def seconds(self) -> float:
        return median(self.times)

    def to_json(self) -> dict:
        return {"label": self.label, "plan": self.plan.to_json() if self.plan else None,
                "regs": self.regs, "spills": self.spills, "times": list(self.times),
                "median_s": self.seconds, "gflops": self.gflops, "flags": self.flags}


def device_grid(info: StencilInfo, env: Mapping[str, int], dtype: str, seed: int = 0):
    """Random values in [0.5, 1.5) in every time buffer, made on the device; for a time
    step of several statements, both buffers of every field (the runner's layout,
    :func:`an5dpy.check.simulate.field_pool`)."""
    import cupy
    extents = tuple(d.size for d in grid_extents(info, env))
    shape = (len(info.fields), 2, *extents) if info.coupled else (info.time.buffers, *extents)
    rng = cupy.random.default_rng(seed)
    grid = rng.random(shape, dtype=cupy.float64) + 0.5
    return grid.astype(cupy.float32 if dtype == "float" else cupy.float64)


def device_read_only_values(info: StencilInfo, env: Mapping[str, int], seed: int = 0) -> tuple:
    """Random values in [0.5, 1.5) for each read-only array (``info.coefficients`` order),
    made on the device, each from a seed of its own."""
    import cupy
    from an5dpy.cuda.runtime import coefficient_shape
    arrays = []
    for k, c in enumerate(info.coefficients, 1):
        rng = cupy.random.default_rng((seed, k))
        values = rng.random(coefficient_shape(info, c.name, env), dtype=cupy.float64) + 0.5
        arrays.append(values.astype(cupy.float32 if c.elem_type == "float" else cupy.float64))
    return tuple(arrays)


def time_runs(run: Callable[[], None], repeats: int = 5, warmup: int = 1) -> tuple[float, ...]:
    """Seconds of each of ``repeats`` calls of ``run``, each bracketed by CUDA events on
    the current stream, after ``warmup`` untimed calls (the one timing loop of an5dpy:
    ``an5d bench``, the tuner and ``an5d probe`` use it)."""
    import cupy
    for _ in range(warmup):
        run()
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(repeats):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / 1000.0)
    return tuple(times)


def median(times: Sequence[float]) -> float:
    """The median run time as reported: the middle run (the upper one of an even count)."""
    ordered = sorted(times)
    return ordered[len(ordered) // 2]


def bench_plan(info: StencilInfo, plan: BlockingPlan, env: Mapping[str, int], stem: str,
               maxrregcount: int | None = None, repeats: int = 5, label: str | None = None,
               smem_wrap: bool = True, naive: bool = False, arch: str | None = None
               ) -> BenchResult:
    """Build the kernels of ``plan`` (performance flags) and time them, or the naive
    baseline from the same module with ``naive=True``."""
    from an5dpy.cuda.runtime import BuildOptions, cuda_runner, device_arch

    options = BuildOptions(arch=arch or device_arch())
    runner = cuda_runner(info, plan, stem, options, smem_wrap, regs=maxrregcount)
    grid = device_grid(info, env, plan.dtype)
    read_only = device_read_only_values(info, env)
    run = ((lambda: runner.run_naive(grid, env, read_only)) if naive
           else (lambda: runner.run(grid, env, read_only)))
    times = time_runs(run, repeats)
    mine = runner.cubin.kernels("naive" if naive else "kernel")
    regs = max((r.registers for r in mine), default=None)
    name = label or ("naive" if naive else plan.describe())
    return BenchResult(name, None if naive else plan, regs, any(r.spills for r in mine),
                       times, gflops(info, env, median(times)), " ".join(options.flags()))
