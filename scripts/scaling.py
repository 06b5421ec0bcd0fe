#!/usr/bin/env python3
"""Strong and weak scaling of one stencil over the GPUs of a host (NCCL), with the time of
each phase of a launch (the kernels, the halo exchange).

    python scripts/scaling.py [--cases j2d5pt-strong,star3d1r-strong,j2d5pt-weak,star3d1r-weak]
                              [--gpus 1,2,4] [--steps N] [--repeats 3] [--minutes 6]
                              [--bt N] [--bs B] [--sl N|off] [--coarsen C] [--halo H]
                              [--out DIR]

Cases (float; the grids are the interiors, plus one boundary cell on each side):

* ``j2d5pt-strong``: a 32768 x 32768 grid over 1, 2, .. GPUs;
* ``star3d1r-strong``: 1024^3 over 1, 2, .. GPUs;
* ``j2d5pt-weak``: 16384 rows of 32768 cells per GPU (the grid grows along the streaming
  dimension, the one the slabs cut);
* ``star3d1r-weak``: 512 planes of 1024 x 1024 per GPU.

Each is half the strong problem per GPU for the weak cases, so that every run fits an
80 GB GPU with room to spare. The stencils are the benchmarks' update expressions
(``c_inputs/j2d5pt.c``, ``c_inputs/star3d1r.c``) over rectangular grids (:data:`SOURCES`;
the benchmarks' grids are cubes). Both cases of a stencil run one plan: the performance
model's choice for the strong case's one-GPU problem (as ``an5d-translate`` chooses it for
this GPU), or the ``--bt/--bs/--sl`` given. The step count (``--steps``, else calibrated
per case so that the one-GPU run lasts about :data:`TARGET_SECONDS`) is a multiple of
2 bT: every launch is a full one.

The grids are made on the devices (every cell a hash of its global index,
:func:`cell_values`), each GPU's slab on its own device; nothing is copied to or from the
host in the timed region. One GPU runs the one-GPU runner (``Stencil.build().run``), N
GPUs the NCCL runner (:mod:`an5dpy.cuda.multi_gpu`) over per-device slabs. A run is timed
between device synchronisations (wall clock), the median of ``--repeats`` after a short
warm-up run; its phases are the runner's CUDA events (:class:`~an5dpy.cuda.multi_gpu.PhaseTimes`:
per launch the slowest slab's kernel, and the rest up to the end of the halo exchange).
Efficiency is t(1) / (N t(N)) for strong scaling, t(1) / t(N) for weak scaling, printed
beside the targets of :func:`target`.

On N > 1 GPUs every case is measured twice in the same run, the halo exchange not
overlapped (the ``seconds`` columns, as before) and overlapped with the next launch's
interior windows (``MultiGpuRunner.run(overlap=True)``; the ``overlap_*`` columns: time,
GFLOP/s, efficiency, and the exchange time the windows did not hide), beside the
model's choice (``model_overlap``, :attr:`an5dpy.perf.multi.SlabPrediction.overlap`).

Writes ``<out>/scaling.csv``, ``scaling.md`` and ``scaling.png`` (efficiency against GPUs,
one line per case; needs matplotlib), ``<out>`` by default ``artifact/<GPU>x<N>`` (e.g.
``artifact/H200x2``, N the most GPUs measured). A measurement that would start after
``--minutes`` is skipped and listed as such. Needs GPUs, cupy and its NCCL bindings.
"""

from __future__ import annotations

import os

# before cupy's NCCL makes any communicator (the runner sets it too): NVLink multicast
# gains a halo exchange nothing and a failure of it can take a shared host's GPUs down
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import argparse  # noqa: E402
import csv  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, dataclass, fields, replace  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

#: The benchmarks' updates (c_inputs/j2d5pt.c, c_inputs/star3d1r.c, copied verbatim) over
#: grids of any extents; ``SB_TYPE`` is the element type, as in the benchmarks.
SOURCES = {
    "j2d5pt": """\
void j2d5pt(int ny, int nx, int timestep, SB_TYPE A[2][ny][nx])
{
#pragma scop
  for (int t = 0; t < timestep; t++)
    for (int i = 1; i < ny - 1; i++)
      for (int j = 1; j < nx - 1; j++)
        A[(t+1)%2][i][j] =
          (1.04f * A[t%2][i-1][j] + 1.17f * A[t%2][i][j-1] + 1.3f * A[t%2][i][j]
           + 1.43f * A[t%2][i][j+1] + 1.56f * A[t%2][i+1][j]) / 6.5f;
#pragma endscop
}
""",
    "star3d1r": """\
void star3d1r(int nz, int ny, int nx, int timestep, SB_TYPE A[2][nz][ny][nx])
{
#pragma scop
  for (int t = 0; t < timestep; t++)
    for (int i = 1; i < nz - 1; i++)
      for (int j = 1; j < ny - 1; j++)
        for (int k = 1; k < nx - 1; k++)
          A[(t+1)%2][i][j][k] =
            0.1144f * A[t%2][i-1][j][k] + 0.1239f * A[t%2][i][j-1][k] + 0.1334f * A[t%2][i][j][k-1]
            + 0.1429f * A[t%2][i][j][k] + 0.1524f * A[t%2][i][j][k+1] + 0.1619f * A[t%2][i][j+1][k]
            + 0.1714f * A[t%2][i+1][j][k];
#pragma endscop
}
""",
}
#: Boundary cells on each side of every dimension (the sources' loops start at 1).
BOUNDARY = 1
DTYPE = "float"
#: Seconds a one-GPU run of a case lasts with the calibrated step count.
TARGET_SECONDS = 1.5
#: Steps the model's plan is chosen for (the paper's count; the plan hardly depends on it).
PLAN_STEPS = 1000


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """A scaling experiment: ``interior`` is the whole grid's (strong) or one GPU's (weak,
    the grid growing along the streaming dimension with the GPUs)."""

    name: str
    stencil: str
    kind: str  # "strong" or "weak"
    interior: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.interior)

    def grid_interior(self, gpus: int) -> tuple[int, ...]:
        if self.kind == "strong":
            return self.interior
        return (self.interior[0] * gpus, *self.interior[1:])

    def grid_shape(self, gpus: int) -> tuple[int, ...]:
        """The array's shape on ``gpus`` GPUs: two time buffers, then the extents."""
        return (2, *(n + 2 * BOUNDARY for n in self.grid_interior(gpus)))


CASES = (
    Case("j2d5pt-strong", "j2d5pt", "strong", (32768, 32768)),
    Case("star3d1r-strong", "star3d1r", "strong", (1024, 1024, 1024)),
    Case("j2d5pt-weak", "j2d5pt", "weak", (16384, 32768)),
    Case("star3d1r-weak", "star3d1r", "weak", (512, 1024, 1024)),
)
CASE_NAMES = tuple(c.name for c in CASES)


def strong_case(stencil: str) -> Case:
    """The strong case of ``stencil``: the plan of both its cases is chosen for its one-GPU
    problem."""
    return next(c for c in CASES if c.stencil == stencil and c.kind == "strong")


def efficiency(kind: str, t1: float, tn: float, gpus: int) -> float:
    """Strong scaling: t(1) / (N t(N)); weak scaling: t(1) / t(N)."""
    return t1 / (gpus * tn) if kind == "strong" else t1 / tn


def target(kind: str, ndim: int, gpus: int) -> float | None:
    """The efficiency aimed at: strong >= 0.90 on 2 GPUs in 2D and >= 0.80 in 3D (0.80 and
    0.70 on up to 4 GPUs), weak >= 0.95; None for one GPU and beyond 4 in strong scaling."""
    if gpus <= 1:
        return None
    if kind == "weak":
        return 0.95
    if gpus <= 2:
        return 0.90 if ndim == 2 else 0.80
    if gpus <= 4:
        return 0.80 if ndim == 2 else 0.70
    return None


def steps_for(seconds_per_step: float, seconds: float, bt: int) -> int:
    """The multiple of 2 bT (full launches, an even count) closest to ``seconds`` of run."""
    unit = 2 * bt
    return unit * max(1, round(seconds / (seconds_per_step * unit)))


def calibration_steps(bt: int, at_least: int = 64) -> int:
    """Steps of the calibration run: a multiple of 2 bT, at least ``at_least``."""
    return 2 * bt * math.ceil(at_least / (2 * bt))


def default_gpu_counts(visible: int) -> tuple[int, ...]:
    """1, 2, 4, .. up to the GPUs visible."""
    counts, n = [], 1
    while n <= visible:
        counts.append(n)
        n *= 2
    return tuple(counts)


def gpu_short_name(device_name: str) -> str:
    """``H200`` for ``NVIDIA H200`` (a known GPU's key, :func:`an5dpy.perf.gpus.match_known`),
    else the name's letters and digits."""
    from an5dpy.perf.gpus import match_known
    known = match_known(device_name)
    if known:
        return known
    return re.sub(r"[^A-Za-z0-9]+", "", device_name.replace("NVIDIA", "")) or "GPU"


def artifact_dir(device_name: str, gpus: int) -> str:
    """``artifact/H200x2``: the GPU and how many."""
    return os.path.join(REPO, "artifact", f"{gpu_short_name(device_name)}x{gpus}")


# --------------------------------------------------------------------------- grid values

#: Multipliers of the hash of a cell's index (odd constants of common integer hashes).
_MULTIPLIERS = (0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F)
#: Cells per chunk when a grid is filled (bounds the temporaries: 4 bytes each).
CHUNK_CELLS = 1 << 26


def cell_values(xp, index: tuple, dtype):
    """Values in [0.5, 1.5) of the cells at ``index`` (broadcastable integer arrays: the
    time buffer, then one per dimension, global numbers): a hash of the index alone, in
    uint32 arithmetic that wraps alike in numpy and cupy (``xp``), so that a GPU's slab and
    the CPU's sub-grid hold the same values; ``0.5 + m 2^-23`` with m < 2^23 is exact in
    float and double."""
    u32 = xp.uint32
    h = None
    for axis, mult in zip(index, _MULTIPLIERS):
        term = xp.atleast_1d(xp.asarray(axis)).astype(u32) * u32(mult)  # arrays wrap silently
        h = term if h is None else (h ^ term) * u32(0x01000193)
        h = h ^ (h >> u32(15))
    h = h ^ (h >> u32(16))
    h = h * u32(0x85EBCA6B)
    h = h ^ (h >> u32(13))
    h = h * u32(0xC2B2AE35)
    h = h ^ (h >> u32(16))
    return (h >> u32(9)).astype(dtype) * dtype(2.0 ** -23) + dtype(0.5)


def fill_planes(xp, out, start: int) -> None:
    """Fill ``out`` (time buffers, planes, *extents) with :func:`cell_values`, its planes
    being the global planes ``start, start + 1, ..`` of the streaming dimension; a chunk of
    planes at a time (at most :data:`CHUNK_CELLS` cells)."""
    dtype = out.dtype.type
    plane = math.prod(out.shape[2:])
    step = max(1, CHUNK_CELLS // max(1, plane))
    inner = [xp.arange(n).reshape((n,) + (1,) * (len(out.shape) - 3 - k))
             for k, n in enumerate(out.shape[2:])]
    for b in range(out.shape[0]):
        for q in range(0, out.shape[1], step):
            count = min(step, out.shape[1] - q)
            planes = xp.arange(start + q, start + q + count).reshape(
                (count,) + (1,) * (len(out.shape) - 2))
            out[b, q:q + count] = cell_values(xp, (xp.asarray(b), planes, *inner), dtype)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Row:
    """One measurement: ``case`` on ``gpus`` GPUs."""

    case: str
    kind: str
    stencil: str
    dtype: str
    gpus: int
    interior: str  # the whole grid's interior, e.g. "32768x32768"
    plan: str
    steps: int
    launches: int
    halo: int  # planes each slab keeps of a neighbour (0 on one GPU)
    seconds: float  # median of the repeats
    gflops: float
    compute_s: float  # the phases of the median run (one GPU: all compute)
    exchange_s: float
    efficiency: float | None = None
    target: float | None = None
    model_efficiency: float | None = None  # the performance model's, where it has one
    # the same run with the exchange overlapped (N > 1 GPUs): time, rate, the exchange's
    # exposed part, efficiency, and whether the model would overlap
    overlap_seconds: float | None = None
    overlap_gflops: float | None = None
    overlap_exchange_s: float | None = None
    overlap_efficiency: float | None = None
    model_overlap: bool | None = None

    @property
    def exchange_share(self) -> float:
        total = self.compute_s + self.exchange_s
        return self.exchange_s / total if total > 0 else 0.0

    @property
    def verdict(self) -> str:
        if self.target is None or self.efficiency is None:
            return ""
        return "met" if self.efficiency >= self.target else "MISSED"


def with_efficiencies(rows: list[Row]) -> list[Row]:
    """Each row's efficiency against the one-GPU row of its case (None without one), and
    its target."""
    ones = {r.case: r.seconds for r in rows if r.gpus == 1}
    out = []
    for r in rows:
        ndim = len(r.interior.split("x"))
        eff = (efficiency(r.kind, ones[r.case], r.seconds, r.gpus)
               if r.case in ones and r.seconds > 0 else None)
        over = (efficiency(r.kind, ones[r.case], r.overlap_seconds, r.gpus)
                if r.case in ones and r.overlap_seconds else None)
        out.append(replace(r, efficiency=eff, target=target(r.kind, ndim, r.gpus),
                           overlap_efficiency=over))
    return out


CSV_FIELDS = tuple(f.name for f in fields(Row)) + ("exchange_share", "verdict")


def write_csv(rows: list[Row], path: str) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({**asdict(r), "exchange_share": r.exchange_share, "verdict": r.verdict})


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def markdown(rows: list[Row], device: str, visible: int, notes: list[str]) -> str:
    """scaling.md: the table, then the notes (skipped measurements, the plan's origin)."""
    lines = [f"# Scaling over {visible} x {device}", "",
             "Float; one plan per stencil (the model's choice for the strong case's one-GPU "
             "problem unless given); grids made on the devices, no host copy in the timed "
             "region; time: median of the repeats between device synchronisations; "
             "efficiency t(1)/(N t(N)) strong, t(1)/t(N) weak; compute: per launch the "
             "slowest GPU's kernel, exchange: the rest of the launch up to the end of its "
             "NCCL halo exchange (CUDA events); model: the performance model's efficiency "
             "(`an5d model --gpus N`). Overlapped: the same run with each exchange under the "
             "next launch's interior windows (its exchange: the part the windows did not "
             "hide); model overlaps: whether the model chooses it.", "",
             "| case | GPUs | grid (interior) | plan | steps | time (s) | GFLOP/s | "
             "efficiency | target | model | compute (s) | exchange (s) | exchange share | "
             "halo planes | overlapped (s) | overlapped GFLOP/s | overlapped efficiency | "
             "overlapped exchange (s) | model overlaps |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        goal = "-" if r.target is None else f">= {r.target:.2f} ({r.verdict})"
        lines.append(
            f"| {r.case} | {r.gpus} | {r.interior} | {r.plan} | {r.steps} | {r.seconds:.3f} | "
            f"{r.gflops:,.0f} | {_fmt(r.efficiency, '.3f')} | {goal} | "
            f"{_fmt(r.model_efficiency, '.3f')} | {r.compute_s:.3f} | {r.exchange_s:.3f} | "
            f"{r.exchange_share:.1%} | {r.halo} | {_fmt(r.overlap_seconds, '.3f')} | "
            f"{_fmt(r.overlap_gflops, ',.0f')} | {_fmt(r.overlap_efficiency, '.3f')} | "
            f"{_fmt(r.overlap_exchange_s, '.3f')} | "
            f"{'-' if r.model_overlap is None else ('yes' if r.model_overlap else 'no')} |")
    if notes:
        lines += [""] + [f"* {n}" for n in notes]
    return "\n".join(lines) + "\n"


def plot(rows: list[Row], path: str, device: str) -> str | None:
    """scaling.png: efficiency against GPUs, one line per case, the targets dashed.
    Returns why it was not written, or None."""
    try:
        import matplotlib
    except ImportError:
        return "scaling.png not written: matplotlib is not installed"
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for case in dict.fromkeys(r.case for r in rows):
        pts = sorted((r.gpus, r.efficiency) for r in rows
                     if r.case == case and r.efficiency is not None)
        if pts:
            line, = ax.plot(*zip(*pts), marker="o", label=case)
            goals = sorted((r.gpus, r.target) for r in rows
                           if r.case == case and r.target is not None)
            if goals:
                ax.plot(*zip(*goals), linestyle="--", color=line.get_color(), alpha=0.6)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("efficiency (dashed: target)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted({r.gpus for r in rows}))
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_ylim(0, 1.1)
    ax.set_title(f"Scaling on {device}")
    ax.grid(alpha=0.3)
    if ax.get_lines():
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


# --------------------------------------------------------------------------- compiling


def translate(stencil: str, options, env_shape: tuple[int, ...], exact: bool = False):
    """The rectangular source of ``stencil`` as an :class:`an5dpy.api.Stencil`, its open
    plan options the model's choice for a grid of ``env_shape`` (:data:`PLAN_STEPS` steps)."""
    from an5dpy.api import Stencil, bind
    from an5dpy.driver import load, translate as driver_translate
    name = f"{stencil}.c"
    options = replace(options, defines=(("SB_TYPE", DTYPE),))
    loaded = load(name, options.defines, text=SOURCES[stencil])
    env = bind(loaded[1], env_shape, PLAN_STEPS, {})
    t = driver_translate(name, options, env=env, loaded=loaded, text=SOURCES[stencil])
    return Stencil(t, SOURCES[stencil], exact=exact)


def plan_options(bt, bs, sl, coarsen=None, halo=None):
    from an5dpy.driver import Options
    return Options(bt=bt, bs=bs, sl=sl, coarsen=coarsen, halo=halo)


def model_efficiency(stencil, case: Case, gpus: int, steps: int) -> float | None:
    """The performance model's efficiency of ``case`` on ``gpus`` GPUs (None where the
    model has no link bandwidth for this GPU, or for one GPU)."""
    if gpus == 1:
        return None
    from an5dpy.api import bind
    from an5dpy.perf.choice import target_gpu
    from an5dpy.perf.multi import predict_slabs
    gpu, _ = target_gpu(None)
    if gpu.link_gbs <= 0:
        return None
    regs = stencil.translation.choice.regs if stencil.translation.choice else None
    one = predict_slabs(stencil.info, stencil.plan, gpu,
                        bind(stencil.info, case.grid_shape(1), steps, {}), 1, regs)
    many = predict_slabs(stencil.info, stencil.plan, gpu,
                         bind(stencil.info, case.grid_shape(gpus), steps, {}), gpus, regs)
    return efficiency(case.kind, one.seconds, many.seconds, gpus)


def model_overlap(stencil, case: Case, gpus: int, steps: int) -> bool | None:
    """Whether the model overlaps the exchange of ``case`` on ``gpus`` GPUs (None for one
    GPU; ``Stencil.overlaps``, the default of ``Stencil.run(devices=..)``)."""
    if gpus == 1:
        return None
    from an5dpy.api import bind
    return stencil.overlaps(bind(stencil.info, case.grid_shape(gpus), steps, {}), gpus)


# --------------------------------------------------------------------------- on the GPUs


class Gpus:
    """The devices' side: grids made on them, runs timed between synchronisations."""

    def __init__(self, visible: int):
        import cupy
        self.cupy = cupy
        self.visible = visible

    def synchronize(self, count: int) -> None:
        for d in range(count):
            self.cupy.cuda.Device(d).synchronize()

    def release(self, count: int) -> None:
        for d in range(count):
            with self.cupy.cuda.Device(d):
                self.cupy.get_default_memory_pool().free_all_blocks()

    def grids(self, stencil, shape: tuple[int, ...], gpus: int) -> tuple[list, object]:
        """The grid on one GPU, or its slabs on ``gpus`` (device g holds slab g's planes),
        made on the devices; and the decomposition (None on one GPU)."""
        cupy = self.cupy
        if gpus == 1:
            with cupy.cuda.Device(0):
                grid = cupy.empty(shape, np.float32)
                fill_planes(cupy, grid, 0)
            return [grid], None
        decomp = stencil.decompose(shape, list(range(gpus)))
        if decomp.count != gpus:
            raise SystemExit(f"scaling.py: the grid {shape[1:]} takes only {decomp.count} "
                             f"slabs (none thinner than the halo), not {gpus}")
        slabs = []
        for g, s in enumerate(decomp.slabs):
            with cupy.cuda.Device(g):
                part = cupy.empty((shape[0], s.planes, *shape[2:]), np.float32)
                fill_planes(cupy, part, s.start)
                slabs.append(part)
        return slabs, decomp

    def runner(self, stencil, grids: list, shape: tuple[int, ...], gpus: int):
        """``run(steps, timer)``: one run of ``steps`` steps, queued (one GPU: no timer).
        The module, the runner and each step count's parameters are made before, out of
        the timed region."""
        from an5dpy.api import bind
        envs: dict[int, dict] = {}

        def env(steps: int) -> dict:
            if steps not in envs:
                envs[steps] = bind(stencil.info, shape, steps, {})
            return envs[steps]

        if gpus == 1:
            single = stencil.build()

            def run(steps, timer=None):
                with self.cupy.cuda.Device(0):
                    single.run(grids[0], env(steps))
            return run, env
        multi = stencil.multi_gpu(list(range(gpus)), env(0))

        def run(steps, timer=None, overlap=False):
            multi.run(grids, env(steps), (), timer=timer, overlap=overlap)
        return run, env

    def seconds(self, run, steps: int, gpus: int, timer=None, overlap: bool = False) -> float:
        self.synchronize(gpus)
        t0 = time.perf_counter()
        if overlap:
            run(steps, timer, overlap=True)
        else:
            run(steps, timer)
        self.synchronize(gpus)
        return time.perf_counter() - t0


def measure(gpus_side: Gpus, stencil, case: Case, gpus: int, steps: int | None,
            repeats: int) -> tuple[Row, int]:
    """``case`` on ``gpus`` GPUs: the row, and the step count (calibrated on one GPU where
    ``steps`` is None)."""
    from an5dpy.blocking.plan import launch_plan
    from an5dpy.cuda.multi_gpu import PhaseTimes
    from an5dpy.perf.bench import gflops
    shape = case.grid_shape(gpus)
    bt = stencil.plan.bt
    grids, decomp = gpus_side.grids(stencil, shape, gpus)
    run, env = gpus_side.runner(stencil, grids, shape, gpus)
    gpus_side.seconds(run, 2 * bt, gpus)  # warm-up: modules loaded, NCCL connected
    if steps is None:
        cal = calibration_steps(bt)
        env(cal)
        steps = steps_for(gpus_side.seconds(run, cal, gpus) / cal, TARGET_SECONDS, bt)
    env(steps)

    def median_run(run, overlap: bool) -> tuple[float, object]:
        runs = []
        for _ in range(repeats):
            timer = PhaseTimes() if gpus > 1 else None
            runs.append((gpus_side.seconds(run, steps, gpus, timer, overlap), timer))
        runs.sort(key=lambda r: r[0])
        return runs[len(runs) // 2]

    seconds, timer = median_run(run, False)
    compute, exchange = timer.seconds() if timer is not None else (seconds, 0.0)
    overlapped = {}
    if gpus > 1:  # the same run with the exchange overlapped, side by side
        gpus_side.seconds(run, 2 * bt, gpus, None, True)  # warm-up: the windows' buffers
        o_seconds, o_timer = median_run(run, True)
        overlapped = dict(overlap_seconds=o_seconds,
                          overlap_gflops=gflops(stencil.info, env(steps), o_seconds),
                          overlap_exchange_s=o_timer.seconds()[1],
                          model_overlap=model_overlap(stencil, case, gpus, steps))
    row = Row(case=case.name, kind=case.kind, stencil=case.stencil, dtype=DTYPE, gpus=gpus,
              interior="x".join(map(str, case.grid_interior(gpus))),
              plan=plan_summary(stencil), steps=steps,
              launches=len(launch_plan(steps, bt, 0)),
              halo=0 if decomp is None else max(decomp.halo.below, decomp.halo.above),
              seconds=seconds, gflops=gflops(stencil.info, env(steps), seconds),
              compute_s=compute, exchange_s=exchange,
              model_efficiency=model_efficiency(stencil, case, gpus, steps), **overlapped)
    del grids, run, env, timer, overlapped
    gpus_side.release(gpus)
    return row, steps


def plan_summary(stencil) -> str:
    choice = stencil.translation.choice
    return choice.summary() if choice is not None else stencil.plan.describe()


def parse_list(text: str, choices=None, kind=str) -> tuple:
    items = tuple(kind(x) for x in text.split(",") if x.strip())
    if choices is not None:
        bad = [x for x in items if x not in choices]
        if bad:
            raise SystemExit(f"scaling.py: unknown case {bad[0]!r} (cases: {', '.join(choices)})")
    return items


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASE_NAMES),
                    help=f"comma-separated, of {', '.join(CASE_NAMES)}")
    ap.add_argument("--gpus", default=None,
                    help="comma-separated GPU counts (default 1, 2, 4, .. up to those visible)")
    ap.add_argument("--steps", type=int, default=None,
                    help=f"time steps of every run (default: ~{TARGET_SECONDS} s on one GPU)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--minutes", type=float, default=6.0,
                    help="skip the measurements that would start after this")
    ap.add_argument("--bt", type=int, default=None)
    ap.add_argument("--bs", default=None, help="as an5d-translate's --bs (e.g. 256, 32x32)")
    ap.add_argument("--sl", default=None, help="planes per stream block, or off")
    ap.add_argument("--coarsen", type=int, default=None, help="cells per thread")
    ap.add_argument("--halo", default=None, choices=("threads", "loaded"),
                    help="who loads the halo (bT 1 in 3D: the computing threads)")
    ap.add_argument("--out", default=None, help="default artifact/<GPU>x<N>")
    args = ap.parse_args(argv)
    started = time.perf_counter()

    import cupy
    from an5dpy.cuda.runtime import device_name
    visible = cupy.cuda.runtime.getDeviceCount()
    counts = (parse_list(args.gpus, kind=int) if args.gpus else default_gpu_counts(visible))
    if not counts or min(counts) < 1 or max(counts) > visible:
        print(f"scaling.py: --gpus {args.gpus}: {visible} GPU(s) visible", file=sys.stderr)
        return 2
    if 1 not in counts:
        counts = (1, *counts)  # every efficiency is against the one-GPU run
    cases = [c for c in CASES if c.name in parse_list(args.cases, CASE_NAMES)]
    with cupy.cuda.Device(0):
        device = device_name()
    out = args.out or artifact_dir(device, max(counts))
    os.makedirs(out, exist_ok=True)
    options = plan_options(args.bt, args.bs, args.sl, args.coarsen, args.halo)
    print(f"{visible} x {device}; GPU counts {list(counts)}; writing {out}", flush=True)

    gpus_side = Gpus(visible)
    stencils, rows, notes = {}, [], []
    for case in cases:
        if case.stencil not in stencils:
            t0 = time.perf_counter()
            st = translate(case.stencil, options, strong_case(case.stencil).grid_shape(1))
            st.build()
            stencils[case.stencil] = st
            print(f"{case.stencil}: plan {plan_summary(st)} (built in "
                  f"{time.perf_counter() - t0:.0f} s)", flush=True)
        stencil = stencils[case.stencil]
        steps = args.steps
        for n in sorted(counts):
            if time.perf_counter() - started > args.minutes * 60:
                notes.append(f"{case.name} on {n} GPU(s) skipped: past --minutes {args.minutes}")
                print(notes[-1], flush=True)
                continue
            row, steps = measure(gpus_side, stencil, case, n, steps, args.repeats)
            rows.append(row)
            over = ("" if row.overlap_seconds is None else
                    f"; overlapped {row.overlap_seconds:.3f} s {row.overlap_gflops:,.0f} GFLOP/s,"
                    f" exchange {row.overlap_exchange_s:.3f} s (model: "
                    f"{'overlap' if row.model_overlap else 'serial'})")
            print(f"{case.name:16s} {n} GPU(s) {row.interior:>16s} {row.steps:6d} steps "
                  f"{row.seconds:8.3f} s {row.gflops:9,.0f} GFLOP/s  compute {row.compute_s:.3f}"
                  f" s, exchange {row.exchange_s:.3f} s{over}", flush=True)
    rows = with_efficiencies(rows)
    for st in stencils.values():
        choice = st.translation.choice
        if choice is not None and choice.chosen:
            notes.append(f"{st.name}: plan {choice.summary()}, the model's {choice.reason()}")
    notes.append(f"{time.perf_counter() - started:.0f} s in all, compiling included")
    print()
    for r in rows:
        if r.target is not None:
            print(f"{r.case:16s} {r.gpus} GPUs: efficiency {_fmt(r.efficiency, '.3f')} "
                  f"(target >= {r.target:.2f}: {r.verdict}; model {_fmt(r.model_efficiency, '.3f')}"
                  f"); overlapped {_fmt(r.overlap_efficiency, '.3f')}")
    write_csv(rows, os.path.join(out, "scaling.csv"))
    with open(os.path.join(out, "scaling.md"), "w") as f:
        f.write(markdown(rows, device, max(counts), notes))
    why = plot(rows, os.path.join(out, "scaling.png"), f"{max(counts)} x {device}")
    if why:
        print(why, file=sys.stderr)
    print(f"wrote {out}/scaling.csv, scaling.md" + ("" if why else ", scaling.png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
