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

So ``seconds = compute (slowest slab) + refreshes x (latency + the busiest GPU's bytes /
link_gbs)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from an5dpy.blocking.plan import BlockingPlan, grid_extents, launch_plan, level_run
from an5dpy.blocking.slabs import Decomposition, partition, slab_halo
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
    def seconds(self) -> float:
        """Compute and exchange one after the other (the exchange as 0 where unknown)."""
        return self.compute.seconds + (self.exchange_seconds or 0.0)

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
                "exchange_seconds": self.exchange_seconds, "seconds": self.seconds,
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


def predict_slabs(info: StencilInfo, plan: BlockingPlan, gpu: GpuSpec,
                  env: Mapping[str, int | float], gpus: int, regs: Registers = None,
                  halo_computes: bool = False) -> SlabPrediction:
    """The model of ``plan`` over ``gpus`` GPUs at the sizes and steps of ``env`` (raises
    :class:`~an5dpy.errors.UsageError` where the slabs would be thinner than the halo:
    :func:`~an5dpy.blocking.slabs.slab_count` says how many GPUs fit)."""
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
    return SlabPrediction(gpus, decomp, slab_times[slowest], slowest, len(moved), sum(moved),
                          busiest_bytes(decomp, plane_bytes), gpu.link_gbs,
                          cells * info.flops_per_cell * steps,
                          link_latency_s=gpu.link_latency_us * 1e-6,
                          link_measured=gpu.link_measured)
