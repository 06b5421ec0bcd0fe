"""The performance model of a run over several GPUs (slabs of the streaming dimension,
:mod:`an5dpy.blocking.slabs`; run by :mod:`an5dpy.cuda.multi_gpu`).

Each GPU runs the unchanged kernels on its slab as its own grid, so a slab's time is the
one-GPU model (:class:`an5dpy.perf.model.Model`) of the planes it computes: its owned
planes and its halo planes, computed again (the redundant work of the decomposition).
The GPUs run at once and wait for each other at every halo exchange, so the run's compute
time is the slowest slab's. The default runner does not overlap the two: after every
launch the halos of the buffers the next launch reads are refreshed
(:func:`~an5dpy.check.simulate_slabs.refreshed_buffers`; every buffer once before the
first launch), and one refresh takes NCCL's latency per exchange plus the bytes the
busiest GPU sends or receives (its halo planes x a plane's bytes x the buffers, and
fields, exchanged) over its link bandwidth (:attr:`~an5dpy.perf.gpus.GpuSpec.link_gbs`:
one GPU's bandwidth per direction, shared by its peers on an NVSwitch;
:attr:`~an5dpy.perf.gpus.GpuSpec.link_latency_us`).

The link figures are *measured* where the GPU spec comes from ``an5d probe`` on a machine
with two or more GPUs (NCCL send/recv between two devices, both directions at once:
:func:`an5dpy.perf.gpus.probe_link`; ``link_measured``), else *nominal*: the known GPUs'
NVLink figure per direction and no latency, which NCCL's send/recv does not reach.
:attr:`SlabPrediction.link_measured` says which, and so does ``an5d model --gpus N``.

So ``serial = compute (slowest slab) + refreshes x (latency + the busiest GPU's bytes /
link_gbs)``.

**Overlap** (:func:`~an5dpy.blocking.slabs.overlap_windows`; programs of one statement and
two buffers): every launch after the first runs each slab's interior window while the
previous launch's refresh is under way, then its edge windows and their copies. Per
launch, a slab takes ``max(interior window, refresh) + edge windows + copies`` (a slab
too thin for windows ``refresh + its launch``), the slowest slab the launch's time; the
first launch, the refresh before it and the last one's refresh are not overlapped. A
window's time is the one-GPU model's launch of its planes (:class:`~an5dpy.perf.model.
Model` per degree); a copy moves its planes' interior cells (read and written) at the
device-memory bandwidth. ``overlap`` is the model's choice where it runs faster (the
default of ``Stencil.run(devices=...)``), and ``seconds`` is then the overlapped time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping

from an5dpy.blocking.plan import BlockingPlan, grid_extents, launch_plan, level_run
from an5dpy.blocking.slabs import (Decomposition, can_overlap, overlap_windows, partition,
                                   slab_halo)
from an5dpy.check.simulate_slabs import refreshed_buffers
from an5dpy.ir import StencilInfo
from an5dpy.perf.gpus import GpuSpec
from an5dpy.perf.model import Model, Prediction, Registers

WORD_BYTES = {"float": 4, "double": 8}


@dataclass(frozen=True)
class SlabPrediction:
    """The model of a run over ``gpus`` GPUs: ``compute`` is the one-GPU prediction of the
    slowest slab's planes; the exchange, ``refreshes`` halo refreshes that move
    ``buffers_moved`` buffers in all, ``buffer_bytes`` each on the busiest GPU (what it
    sends, or receives), at ``link_gbs`` with ``link_latency_s`` per refresh (measured by
    ``an5d probe`` where ``link_measured``, else nominal)."""

    gpus: int
    decomposition: Decomposition
    compute: Prediction
    slowest: int  # the index of the slowest slab
    refreshes: int
    buffers_moved: int
    buffer_bytes: int
    link_gbs: float
    useful_flops: int  # the whole grid's: interior cells x FLOP/cell x steps
    link_latency_s: float = 0.0
    link_measured: bool = False
    #: The run with the exchange overlapped (module docstring); None where it cannot be
    #: (one GPU, a program of several statements or rotating levels, no link bandwidth).
    overlap_seconds: float | None = None
    overlap: bool = False  # whether the run overlaps (``seconds`` is overlap_seconds)

    @property
    def exchange_bytes(self) -> int:
        """Bytes the busiest GPU sends (or receives) over the run."""
        return self.buffers_moved * self.buffer_bytes

    @property
    def exchange_seconds(self) -> float | None:
        """None where the GPU's link bandwidth is not known."""
        if self.gpus == 1:
            return 0.0
        if self.link_gbs <= 0:
            return None
        return self.refreshes * self.link_latency_s + self.exchange_bytes / (self.link_gbs * 1e9)

    @property
    def serial_seconds(self) -> float:
        """Compute and exchange one after the other (the exchange as 0 where unknown)."""
        return self.compute.seconds + (self.exchange_seconds or 0.0)

    @property
    def seconds(self) -> float:
        """The run's time: overlapped where :attr:`overlap`, else serial."""
        return self.overlap_seconds if self.overlap else self.serial_seconds

    @property
    def gflops(self) -> float:
        return self.useful_flops / self.seconds / 1e9 if self.seconds > 0 else 0.0

    def to_json(self) -> dict:
        d = self.decomposition
        return {"gpus": self.gpus, "halo_below": d.halo.below, "halo_above": d.halo.above,
                "owned": [list(s.owned) for s in d.slabs],
                "held": [list(s.held) for s in d.slabs], "slowest_slab": self.slowest,
                "compute_seconds": self.compute.seconds, "refreshes": self.refreshes,
                "buffers_moved": self.buffers_moved, "buffer_bytes": self.buffer_bytes,
                "exchange_bytes": self.exchange_bytes, "link_gbs": self.link_gbs,
                "link_latency_s": self.link_latency_s, "link_measured": self.link_measured,
                "exchange_seconds": self.exchange_seconds,
                "serial_seconds": self.serial_seconds,
                "overlap_seconds": self.overlap_seconds, "overlap": self.overlap,
                "seconds": self.seconds,
                "gflops": self.gflops}


def refreshes(info: StencilInfo, plan: BlockingPlan, steps: int, start: int
              ) -> tuple[int, ...]:
    """The buffers each halo refresh of a run moves (per field), in order: every buffer the
    first launch reads, then those each launch leaves stale (as the runner does)."""
    levels = plan.levels
    if levels.rotating:
        run = level_run(steps, plan.bt, start, levels)
        first, launches = levels.buffers, run.launches
    else:
        first, launches = 2, launch_plan(steps, plan.bt, start)
    if not launches:
        return ()
    return (first, *(len(refreshed_buffers(plan, launch)) for launch in launches))


def busiest_bytes(decomp: Decomposition, plane_bytes: int) -> int:
    """Bytes of one buffer's refresh that the busiest GPU sends, or receives."""
    sent: dict[int, int] = {}
    received: dict[int, int] = {}
    for t in decomp.transfers:
        sent[t.source] = sent.get(t.source, 0) + t.count * plane_bytes
        received[t.dest] = received.get(t.dest, 0) + t.count * plane_bytes
    return max([*sent.values(), *received.values()], default=0)


def refresh_seconds(sp: "SlabPrediction", moved: tuple[int, ...]) -> tuple[float, ...]:
    """Each refresh's time (``moved``: its buffers, :func:`refreshes`): the latency plus
    the busiest GPU's bytes over the link."""
    return tuple(sp.link_latency_s + m * sp.buffer_bytes / (sp.link_gbs * 1e9) for m in moved)


def overlapped_seconds(info: StencilInfo, plan: BlockingPlan, gpu: GpuSpec, dims: tuple,
                       steps: int, start: int, decomp: Decomposition, refresh: tuple,
                       regs: Registers = None, halo_computes: bool = False) -> float:
    """The run with each refresh overlapping the next launch's interior windows (module
    docstring); ``refresh``: every refresh's seconds, the one before the first launch
    first (:func:`refresh_seconds`)."""
    costs: dict[tuple, dict[int, float]] = {}

    def launch_seconds(grid: tuple) -> dict[int, float]:
        """Seconds of one launch over ``grid`` per kernel degree (the one-GPU model)."""
        if grid not in costs:
            p = Model(info, gpu, grid, steps, halo_computes).predict(plan, regs)
            costs[grid] = {c.degree: c.seconds for c in p.launches}
        return costs[grid]

    word = WORD_BYTES[plan.dtype]
    cells = math.prod(d.length for d in dims[1:])
    slabs = []
    for s in decomp.slabs:
        w = overlap_windows(s, decomp.halo)
        full = launch_seconds(decomp.dims(dims, s))
        if w is None:
            slabs.append((full, None, (), 0.0))
            continue
        copied = sum(e.copy[1] - e.copy[0] for e in w.edges)
        slabs.append((full, launch_seconds((w.interior.stream, *dims[1:])),
                      [launch_seconds((e.stream, *dims[1:])) for e in w.edges],
                      2 * copied * cells * word / (gpu.gmem_gbs(plan.dtype) * 1e9)))
    total = refresh[0] + refresh[-1]
    for k, launch in enumerate(launch_plan(steps, plan.bt, start)):
        d = plan.kernel_degree(launch.degree)
        if k == 0:
            total += max(full[d] for full, _, _, _ in slabs)
            continue
        total += max(refresh[k] + full[d] if interior is None
                     else max(interior[d], refresh[k]) + sum(e[d] for e in edges) + copy
                     for full, interior, edges, copy in slabs)
    return total


def predict_slabs(info: StencilInfo, plan: BlockingPlan, gpu: GpuSpec,
                  env: Mapping[str, int | float], gpus: int, regs: Registers = None,
                  halo_computes: bool = False, overlap: bool | None = None
                  ) -> SlabPrediction:
    """The model of ``plan`` over ``gpus`` GPUs at the sizes and steps of ``env`` (raises
    :class:`~an5dpy.errors.UsageError` where the slabs would be thinner than the halo:
    :func:`~an5dpy.blocking.slabs.slab_count` says how many GPUs fit). ``overlap``: None
    for the model's choice of whether the exchange overlaps the launches (where it can),
    True or False to predict the one asked for (True where it cannot: not overlapped)."""
    dims = grid_extents(info, env)
    steps, start = info.time.steps(env), info.time.start_buffer(env)
    decomp = partition(dims[0], gpus, slab_halo(info, plan))
    by_dims: dict[tuple, Prediction] = {}
    slab_times = []
    for s in decomp.slabs:
        key = decomp.dims(dims, s)
        if key not in by_dims:
            by_dims[key] = Model(info, gpu, key, steps, halo_computes).predict(plan, regs)
        slab_times.append(by_dims[key])
    slowest = max(range(decomp.count), key=lambda g: slab_times[g].seconds)
    fields = len(info.fields) if info.coupled else 1
    plane_bytes = math.prod(d.size for d in dims[1:]) * WORD_BYTES[plan.dtype] * fields
    moved = refreshes(info, plan, steps, start) if gpus > 1 else ()
    cells = math.prod(d.length for d in dims)
    sp = SlabPrediction(gpus, decomp, slab_times[slowest], slowest, len(moved), sum(moved),
                        busiest_bytes(decomp, plane_bytes), gpu.link_gbs,
                        cells * info.flops_per_cell * steps,
                        link_latency_s=gpu.link_latency_us * 1e-6,
                        link_measured=gpu.link_measured)
    if gpus == 1 or not moved or gpu.link_gbs <= 0 or not can_overlap(info, plan):
        return sp
    both = overlapped_seconds(info, plan, gpu, dims, steps, start, decomp,
                              refresh_seconds(sp, moved), regs, halo_computes)
    chosen = both < sp.serial_seconds if overlap is None else overlap
    return replace(sp, overlap_seconds=both, overlap=chosen)
