"""The AN5D performance model (paper section 5), for any blocking plan.

A roofline over three resources -- compute, shared memory, device memory -- fed by exact
counts of what every thread of every launch does, divided by the SM utilisation of the
launch's grid of thread blocks::

    time(launch) = max(time_comp, time_sm, time_gm) / eff_SM
    GFLOP/s      = interior cells x FLOP/cell x steps / sum of time(launch)

**Thread classes.** Each thread slot (thread x time level x plane) of a launch of degree
``d`` falls in one class (section 5):

* *out-of-bound*: its cell is outside the array (the last in-plane blocks overhang it);
* *boundary*: inside the array but not interior (in-plane boundary cells, and every cell of
  a streaming-boundary plane: a level's planes below/above the interior);
* *redundant*: interior, but outside the level's window ``[T*r, bS - T*r)`` in some
  in-plane dimension (the block's halo at level T, recomputed by the neighbour block);
* *valid*: the rest. At level ``d`` the valid threads are exactly the stored cells.

Classes factor: the in-plane class of a thread depends on its (block, thread) position per
in-plane dimension, and the set of positions is a product over dimensions, so each count
is a product of 1D counts (enumerated with numpy, as :class:`an5dpy.check.simulate.ThreadGrid`
enumerates the whole plane; a test checks the two agree). The planes each level produces
come from :class:`an5dpy.blocking.trace.BlockRanges`, stream block by stream block.

**Traffic and work** (per launch; ``levels`` holds the counts of level 0..d):

* ``th_gm_read``: level 0, in-array threads of every loaded plane (boundary planes too;
  twice where a rotating program loads level -1 along);
  ``th_gm_write``: level d valid threads; bytes = (reads + writes) x word size.
* shared-memory writes: every level op (levels 1..d, streaming-boundary planes included)
  writes once per thread -- all threads, out-of-bound ones too, as the kernels avoid
  branching -- and ``2r+1`` times in mode ``none`` (Table 1);
* shared-memory reads: per computing thread, :func:`smem_reads_per_thread`; a thread of
  several cells in a cell-major plane loads only the row neighbours it does not hold and
  stores only its shared cells (:func:`~an5dpy.perf.counts.coarsened_shared_traffic`,
  per cell on average);
* computing threads ``th_comp``: the valid slots of levels 1..d (threads inside their
  level's window; the kernels leave the others idle, and this reproduces the paper's Model
  column of Table 5, see :data:`MODEL_NOTES`), or redundant + valid slots with
  ``halo_computes=True``; executed FLOPs = ``th_comp x flops_per_cell``.

**Times.** ``time_comp = flops / (peak(dtype) x eff_ALU)`` with
``eff_ALU = (2 FMA + MUL + ADD + OTHER) / (2 (FMA + MUL + ADD + OTHER))`` over the
update's instruction mix (:class:`OpMix`); ``time_sm``/``time_gm`` = bytes / the GPU's
practical bandwidth for the data type. ``eff_SM = waves / ceil(waves)`` with
``waves = n_tb / (blocks per SM x SMs)``; blocks per SM are limited by threads, shared
memory, registers (the paper's section 6.3 estimate, rounded up to a multiple of 8, or a
given count) and the hardware's block limit (:func:`occupancy`).

**Issue term (Hopper, beyond the paper).** On Hopper the kernels are bound by issuing
instructions and by latency, not by FLOPs or bandwidth alone. For GPUs whose spec has a
``step_latency_cycles`` (H100, H200), a fourth time joins the other three: every warp with
a thread in a level's window issues :meth:`Model.level_instructions` per level op (update
arithmetic, doubled in FP64; double divisions; shared loads and stores; the barrier --
one per level op, or one per step with ``barriers=step``, shared by a thread's cells with
``coarsen``, none with ``barriers=shuffle``, whose shuffles count as the shared loads they
replace and which stores nothing to shared memory; :data:`LEVEL_OVERHEAD` and the level's
share of :data:`STEP_OVERHEAD`; spill instructions where a register budget's limit is
below what the kernel needs), and an SM spends ``max(latency + e*W/S, B*W/S)`` cycles per
step of its ``B`` resident blocks (``W`` warp-instructions per block and step, ``S``
schedulers; ``latency`` = the step latency + :data:`CHAIN_SHARE` of bT x each level's
dependency chain (:meth:`Model.level_latency`) + :data:`BARRIER_STALL` per barrier and
warp of the block + :data:`WARP_CPI` x each warp's share of ``W`` (fewer, busier warps --
cells per thread -- take longer); ``e`` = :data:`EXPOSED_ISSUE`, or
:data:`LONE_BLOCK_EXPOSED` for a block alone on its SM, whose barriers no other block's
issue fills). A launch then takes the p-norm
(:data:`NORM_EXPONENT`) of the four times rather than their maximum (the resources of one
instruction stream do not overlap fully). :meth:`Model.rank` predicts each plan at its
best register budget too (fewer registers: more resident blocks, but spills). A plan whose
computing threads load the halo is issued by its compute region's warps, plus
:data:`HALO_LOAD_INSTRUCTIONS` per round of halo loads (:func:`issuing_share`; its
efficiency and registers are keyed apart: :func:`efficiency_key`, :func:`ratio_key`).

The counts a launch's time is made of are :class:`LaunchTerms`; the constants
(:class:`IssueConstants`) apply in :func:`launch_seconds` alone, which takes numpy arrays
too: ``scripts/model_fit.py`` fits the constants with that very function over every
measured plan at once. Fitted to ``artifact/H200/previous`` (its 42 rows' measured plans)
and the 19 rows of ``artifact/H200/variants.jsonl``, the fastest measured plan is among the
5 measured plans the
model ranks highest on 32 of 42 rows in-sample and on 27 when each stencil's constants are
fitted without it (leave one stencil out; a plan within 3% of the fastest: 34 and 31; the
paper's terms alone: 11). The tuned plans run 1.077x the prediction in geomean (1.072
cross-validated; 1.078 on the H100 rows of ``artifact/H100-80GB-HBM3`` with the H200's
constants); with the Euclidean norm and the earlier constants 23 of 42 and 1.45x. On the
re-measurement of ``artifact/H200``, which the fit has not seen (new candidates, the variant
plans among them), the fitted constants find the fastest plan among their top 5 measured
plans on 22 of 42 rows (the earlier constants: 16) and predict 1.059x in geomean.

**Several statements per time step.** A time step of ``S`` sub-steps is ``S`` levels of the
pipeline, each holding every field (``F``): a launch of ``bt`` steps has ``bt x S`` levels,
level T runs sub-step ``(T - 1) % S`` (:class:`an5dpy.perf.counts.LevelWork`: its FLOPs,
instruction mix, the fields it stages in shared memory and their reads; ``time_comp`` sums
each sub-step's executed FLOPs over its own eff_ALU), and level 0 and level d load and
store every field (``F`` words per cell each).

Choices where the paper is vague are listed in :data:`MODEL_NOTES`. The constants and notes
live in :mod:`an5dpy.perf.model_constants`, the counts and occupancy in
:mod:`an5dpy.perf.counts`, the printed report in :mod:`an5dpy.perf.report`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Iterable, Mapping

import numpy as np

from an5dpy.blocking.plan import (WARP_SIZE, Barriers, BlockingPlan, DimExtent, IdleWarps,
                                  LaunchGeometry, Mode, budget_register_limit,
                                  computing_warp_fraction, grid_extents, run_degrees)
from an5dpy.errors import UsageError
from an5dpy.perf.counts import (CoefficientReads, LevelWork, Occupancy, OpMix, ThreadCounts,
                                holds_row_neighbours, level_work, occupancy, plane_dim_counts,
                                spill_free_registers, stream_counts, sum_counts)
from an5dpy.perf.gpus import GpuSpec, get_gpu
from an5dpy.perf.model_constants import (BARRIER_STALL, BOTTLENECKS, BRANCH_INSTRUCTIONS,
                                         CELL_EFFICIENCY,
                                         CHAIN_SHARE, COEF_READ_INSTRUCTIONS,
                                         DEPENDENT_LATENCY,
                                         DOUBLE_DIVISION_INSTRUCTIONS,
                                         DOUBLE_DIVISION_LATENCY, EXPOSED_ISSUE,
                                         FIXED_DIVISOR_DIVISION_INSTRUCTIONS,
                                         FIXED_DIVISOR_DIVISION_LATENCY,
                                         FIELD_SELECT_INSTRUCTIONS, HALO_LOAD_INSTRUCTIONS,
                                         INTERIOR_LEVEL_OVERHEAD,
                                         LEVEL_OVERHEAD, LONE_BLOCK_EXPOSED, NORM_EXPONENT,
                                         REGISTER_BUDGETS,
                                         SPILL_GROWTH_CELLS, SPILL_GROWTH_CELLS_LOADED,
                                         SPILL_INSTRUCTIONS, STEP_OVERHEAD,
                                         UNBOUNDED_RATIO, WARP_CPI, WAVE_TAIL)
from an5dpy.ir import StencilInfo


# --------------------------------------------------------------------------- per launch


def division_instructions(mix: OpMix) -> float:
    """Issue slots of a mix's double divisions beyond the multiply the mix counts: those
    by a divisor fixed for the launch take the hoisted reciprocal's sequence, the others
    the whole Newton-Raphson one."""
    fixed = mix.fixed_double_divisions
    return (DOUBLE_DIVISION_INSTRUCTIONS * (mix.double_divisions - fixed)
            + FIXED_DIVISOR_DIVISION_INSTRUCTIONS * fixed)


def division_latency(mix: OpMix) -> float:
    """Cycles a mix's double divisions add to its dependency chain (as
    :func:`division_instructions` splits them)."""
    fixed = mix.fixed_double_divisions
    return (DOUBLE_DIVISION_LATENCY * (mix.double_divisions - fixed)
            + FIXED_DIVISOR_DIVISION_LATENCY * fixed)


def barriers_per_level(plan: BlockingPlan, degree: int) -> float:
    """Barrier instructions a thread issues per level op: one per op, shared by a
    coarsened thread's cells; with one barrier per step, one per step of ``degree`` level
    ops; none with warp shuffles."""
    if plan.barriers is Barriers.SHUFFLE:
        return 0.0
    per_op = 1 / degree if plan.barriers is Barriers.STEP else 1.0
    return per_op / plan.coarsen


def level_overhead(plan: BlockingPlan) -> float:
    """:data:`LEVEL_OVERHEAD` of the plan's dimensions, or
    :data:`INTERIOR_LEVEL_OVERHEAD` where its interior blocks run a phase of their own."""
    return INTERIOR_LEVEL_OVERHEAD if plan.interior_phase else LEVEL_OVERHEAD[plan.ndim]


def ratio_key(mode: str, dtype: str, ndim: int, cells: int, halo_loaded: bool) -> tuple:
    """:data:`UNBOUNDED_RATIO`'s key: a kernel whose computing threads load the halo
    (:attr:`~an5dpy.blocking.plan.HaloCells.LOADED`) is another kernel than its mode's,
    keyed ``"<mode>/loaded"``."""
    return (f"{mode}/loaded" if halo_loaded else mode, dtype, ndim, cells)


def unbounded_ratio(plan: BlockingPlan, cells: int | None = None) -> float:
    """:data:`UNBOUNDED_RATIO` of the plan's kernel (:func:`ratio_key`), at its cells per
    thread or ``cells`` (1 where the table has none)."""
    key = ratio_key(plan.mode.value, plan.dtype, plan.ndim,
                    plan.coarsen if cells is None else cells, plan.halo_loaded)
    return UNBOUNDED_RATIO.get(key, 1.0)


def issuing_share(plan: BlockingPlan, level: int) -> float:
    """The share of a level's thread slots (one per cell of the block's tile and plane)
    that warps evaluating the level hold: :func:`computing_warp_fraction`; where the
    computing threads load the halo, the compute region's share of the tile (those threads
    are the block's, and every one computes)."""
    if plan.halo_loaded:
        return math.prod(plan.compute_region(1)) / math.prod(plan.bs)
    return computing_warp_fraction(plan, level)


def cell_efficiency(plan: BlockingPlan) -> float:
    """:data:`CELL_EFFICIENCY` of the plan's kernel at its cells per thread
    (:func:`efficiency_key`, :func:`efficiency_at`)."""
    return efficiency_at(efficiency_key(plan.ndim, plan.coarsen, plan.halo_loaded))


def efficiency_key(ndim: int, cells: int, halo_loaded: bool) -> tuple:
    """:data:`CELL_EFFICIENCY`'s key: (dimensions, cells per thread), and ``"loaded"``
    for a kernel whose computing threads load the halo
    (:attr:`~an5dpy.blocking.plan.HaloCells.LOADED`), another kernel."""
    return (ndim, cells, "loaded") if halo_loaded else (ndim, cells)


def efficiency_at(key: tuple, table: dict | None = None) -> float:
    """``table`` (default :data:`CELL_EFFICIENCY`) at ``key`` (:func:`efficiency_key`):
    beyond the largest cells per thread of its kernel and dimensions the largest's, 1
    where it has no entry of them."""
    table = CELL_EFFICIENCY if table is None else table
    ndim, cells, kind = key[0], key[1], key[2:]
    known = [k[1] for k in table if k[0] == ndim and k[2:] == kind and k[1] <= cells]
    return table[(ndim, max(known), *kind)] if known else 1.0


def shared_stores(plan: BlockingPlan, work: LevelWork) -> int:
    """Shared-memory stores a thread issues per level op and cell: the planes the
    level's input shares (``work``, a :class:`~an5dpy.perf.counts.LevelWork`), none where
    the lanes shuffle them."""
    return 0 if plan.barriers is Barriers.SHUFFLE else work.smem_planes


# --------------------------------------------------------------------------- combining times
#
# A launch's time in two parts: :class:`LaunchTerms`, the counts that do not depend on the
# fitted constants (computed once per plan, budget and degree), and the few functions below
# that apply :class:`IssueConstants` to them. The functions take floats or numpy arrays
# alike, so that scripts/model_fit.py applies the very same formula to thousands of plans at
# once when it fits the constants.


@dataclass(frozen=True)
class IssueConstants:
    """The constants a launch's time takes beyond its counts (model_constants documents
    each): where the GPU has no step latency, the paper's roofline (:data:`PAPER_TERMS`:
    no wave tail, the largest time); on Hopper the issue term's fitted values
    (:data:`FITTED`)."""

    exposed: float = EXPOSED_ISSUE
    lone: float = LONE_BLOCK_EXPOSED
    spill: float = SPILL_INSTRUCTIONS
    wave_tail: float = WAVE_TAIL
    barrier_stall: float = BARRIER_STALL
    norm: float = NORM_EXPONENT
    warp_cpi: float = WARP_CPI
    chain: float = CHAIN_SHARE


#: The issue term's constants as fitted (an5dpy.perf.model_constants).
FITTED = IssueConstants()
#: The paper's terms: eff_SM = waves / ceil(waves) and the largest of the times.
PAPER_TERMS = IssueConstants(wave_tail=0.0, norm=math.inf)


@dataclass(frozen=True)
class LaunchTerms:
    """What one launch's time is made of before the constants of :class:`IssueConstants`
    apply (each field a float, or an array of them for many launches: :meth:`stack`).

    ``issue_instructions``: warp-instructions the launch issues without spills;
    ``spill_warps``: warp-level ops x registers a budget falls short (each costs
    ``spill`` instructions); ``barrier_warps``: per block and streaming step, barriers x
    warps of the block (each unit stalls ``barrier_stall`` cycles); ``block_warps``: the
    warps of a block, over which its instructions spread; ``chain_cycles``: the
    dependency chains of a step's levels; ``efficiency``: the share of the modelled speed
    kernels like the plan's reach (:func:`cell_efficiency`). The issue fields are 0 (the
    efficiency 1) where the GPU has no step latency.
    """

    time_comp: float
    time_sm: float
    time_gm: float
    waves: float
    step_latency: float = 0.0
    chain_cycles: float = 0.0
    block_steps: float = 0.0
    issue_instructions: float = 0.0
    spill_warps: float = 0.0
    barrier_warps: float = 0.0
    block_warps: float = 1.0
    resident: float = 1.0
    schedulers: float = 1.0
    sm_count: float = 1.0
    clock_hz: float = 1.0
    efficiency: float = 1.0

    @staticmethod
    def stack(terms: "Iterable[LaunchTerms]") -> "LaunchTerms":
        """One LaunchTerms of arrays, a field per launch (for scripts/model_fit.py)."""
        terms = list(terms)
        return LaunchTerms(**{f.name: np.array([getattr(t, f.name) for t in terms], float)
                              for f in fields(LaunchTerms)})


def warp_instructions(t: LaunchTerms, k: IssueConstants):
    """Warp-instructions the launch issues, spill instructions included."""
    return t.issue_instructions + k.spill * t.spill_warps


def step_cycles(t: LaunchTerms, k: IssueConstants):
    """SM cycles per streaming step of its ``B`` resident blocks:
    ``max(latency + e*W/S, B*W/S)`` (``W`` warp-instructions per block and step, ``S``
    schedulers; ``latency`` = the GPU's step latency + the levels' dependency chains +
    the barriers' stalls + each warp's own instructions at ``warp_cpi`` cycles each (a
    warp issues in order, so fewer warps per block, as with cells per thread, each take
    longer); ``e`` = exposed issue share, ``lone`` where ``B`` is 1)."""
    per_block = warp_instructions(t, k) / np.maximum(t.block_steps, 1)
    per_step = per_block / t.schedulers
    latency = (t.step_latency + k.chain * t.chain_cycles + k.barrier_stall * t.barrier_warps
               + k.warp_cpi * per_block / t.block_warps)
    exposed = np.where(t.resident <= 1, k.lone, k.exposed)
    return np.maximum(latency + exposed * per_step, t.resident * per_step)


def issue_seconds(t: LaunchTerms, k: IssueConstants):
    """The issue term: the launch's block steps spread over its resident blocks."""
    return np.where(t.step_latency > 0, t.block_steps / (t.sm_count * t.resident)
                    * step_cycles(t, k) / t.clock_hz, 0.0)


def wave_efficiency(waves, tail: float):
    """eff_SM: waves / (ceil(waves) + tail); the paper's waves / ceil(waves) at tail 0,
    and 1 for an empty launch."""
    waves = np.asarray(waves, float)
    return np.where(waves > 0, waves / (np.ceil(waves) + tail), 1.0)


def combine_times(times, norm: float):
    """The p-norm (``p = norm``) of a launch's component times: their largest one at
    ``p = inf`` (the paper's roofline), their sum at ``p = 1``. The resources of one
    instruction stream overlap, but not fully, and a p between tells how much."""
    times = np.asarray(times, float)
    top = times.max(axis=0)
    if math.isinf(norm):
        return top
    scale = np.where(top > 0, top, 1.0)  # relative to the largest: no overflow
    return np.where(top > 0, scale * np.power(np.power(times / scale, norm).sum(axis=0),
                                              1 / norm), 0.0)


def launch_seconds(t: LaunchTerms, k: IssueConstants):
    """A launch's seconds: its times' combination (:func:`combine_times`) over eff_SM and
    the plan's efficiency."""
    times = (t.time_comp, t.time_sm, t.time_gm, issue_seconds(t, k))
    return combine_times(times, k.norm) / (wave_efficiency(t.waves, k.wave_tail)
                                           * t.efficiency)


@dataclass(frozen=True)
class LaunchCost:
    """The model of one launch of degree ``degree``; ``count`` launches of the plan have it.

    Counts and times are per launch. ``levels[T]`` holds the thread classes of level T
    (level 0: the loads, whose "valid" threads loaded an interior cell).
    """

    degree: int
    count: int
    blocks: int
    plane_blocks: tuple[int, ...]
    stream_blocks: int
    occupancy: Occupancy
    waves: float
    eff_sm: float
    levels: tuple[ThreadCounts, ...]
    gm_reads: int
    gm_writes: int
    sm_reads: int
    sm_writes: int
    comp_threads: int  # th_comp: slots that compute (and read shared memory)
    flops: int
    gm_bytes: int
    sm_bytes: int
    time_comp: float
    time_sm: float
    time_gm: float
    # issue term (0 where the GPU spec has no step latency)
    block_steps: float = 0.0  # (block, streaming step) pairs: planes loaded per block
    warp_instructions: float = 0.0  # issued by all blocks over the launch
    step_cycles: float = 0.0  # SM cycles per step of its resident blocks
    time_issue: float = 0.0
    # read-only arrays (0 without): device-memory bytes (in gm_bytes) and on-chip bytes
    # through L1 (in sm_bytes: shared memory and L1 are one memory on NVIDIA GPUs)
    coef_gm_bytes: int = 0
    coef_l1_bytes: int = 0
    #: how the times combine (:func:`launch_seconds`): the paper's largest time, or on
    #: Hopper the fitted p-norm and wave tail
    constants: IssueConstants = PAPER_TERMS
    terms: LaunchTerms | None = None  # what the times are made of (None: no blocks)

    @property
    def threads(self) -> ThreadCounts:
        """Classes over the computing levels 1..d."""
        return sum_counts(self.levels[1:])

    @property
    def times(self) -> tuple[float, float, float, float]:
        return (self.time_comp, self.time_sm, self.time_gm, self.time_issue)

    @property
    def raw_seconds(self) -> float:
        """The paper's roofline: the largest time. With the issue term (Hopper) the
        p-norm of the four (:data:`NORM_EXPONENT`): a block issues, loads and waits on
        shared memory in one instruction stream, so resources that are all busy do not
        overlap fully."""
        return float(combine_times(self.times, self.constants.norm))

    @property
    def seconds(self) -> float:
        """:func:`launch_seconds` of the launch's terms: the formula the fit applies."""
        if not self.blocks or self.terms is None:
            return 0.0
        return float(launch_seconds(self.terms, self.constants))

    @property
    def bottleneck(self) -> str:
        return BOTTLENECKS[self.times.index(max(self.times))]

    def to_json(self) -> dict:
        return {
            "degree": self.degree, "count": self.count, "blocks": self.blocks,
            "plane_blocks": list(self.plane_blocks), "stream_blocks": self.stream_blocks,
            "occupancy": self.occupancy.to_json(), "waves": self.waves,
            "eff_sm": self.eff_sm, "threads": self.threads.to_json(),
            "levels": [c.to_json() for c in self.levels],
            "gm_reads": self.gm_reads, "gm_writes": self.gm_writes,
            "sm_reads": self.sm_reads, "sm_writes": self.sm_writes,
            "comp_threads": self.comp_threads, "flops": self.flops,
            "gm_bytes": self.gm_bytes, "sm_bytes": self.sm_bytes,
            "time_comp": self.time_comp, "time_sm": self.time_sm, "time_gm": self.time_gm,
            "block_steps": self.block_steps, "warp_instructions": self.warp_instructions,
            "step_cycles": self.step_cycles, "time_issue": self.time_issue,
            "coef_gm_bytes": self.coef_gm_bytes, "coef_l1_bytes": self.coef_l1_bytes,
            "seconds": self.seconds, "bottleneck": self.bottleneck,
        }


@dataclass(frozen=True)
class Prediction:
    """The model's prediction for a whole run (all launches of the launch plan).

    ``time_comp``/``time_sm``/``time_gm`` are the run's time were that resource the only
    limit (each launch's component time divided by its eff_SM, summed), so ``seconds`` is at
    least their maximum, and equal when every launch has the same bottleneck.
    """

    plan: BlockingPlan
    gpu: str
    steps: int
    cells: int  # interior cells per time step
    flops_per_cell: int
    gflops: float
    seconds: float
    bottleneck: str
    time_comp: float
    time_sm: float
    time_gm: float
    time_issue: float
    eff_alu: float
    eff_sm: float
    blocks_per_sm: int
    threads: ThreadCounts  # levels 1..d, all launches
    gm_bytes: int
    sm_bytes: int
    flops: int  # executed (redundant included)
    mix: OpMix
    smem_reads_per_thread: int
    halo_computes: bool
    launches: tuple[LaunchCost, ...]  # one per distinct degree, in launch-plan order
    registers: int | None = None  # the register budget predicted for (None: the estimate)
    #: The fields (one for the one-statement form) and what a level op of each sub-step
    #: does; ``smem_reads_per_thread`` and ``mix`` are then per time step (all sub-steps).
    fields: tuple[str, ...] = ()
    work: tuple[LevelWork, ...] = ()

    @property
    def useful_flops(self) -> int:
        return self.cells * self.flops_per_cell * self.steps

    @property
    def launch_count(self) -> int:
        return sum(c.count for c in self.launches)

    @property
    def efficiency(self) -> float:
        """The share of the modelled speed that kernels of the plan's cells per thread
        reach (:func:`cell_efficiency`, in ``seconds`` already; 1 under the paper's
        terms)."""
        return next((c.terms.efficiency for c in self.launches if c.terms is not None), 1.0)

    def to_json(self) -> dict:
        return {
            "plan": self.plan.to_json(), "gpu": self.gpu, "steps": self.steps,
            "cells": self.cells, "flops_per_cell": self.flops_per_cell,
            "gflops": self.gflops, "seconds": self.seconds, "bottleneck": self.bottleneck,
            "time_comp": self.time_comp, "time_sm": self.time_sm, "time_gm": self.time_gm,
            "time_issue": self.time_issue, "registers": self.registers,
            "efficiency": self.efficiency,
            "eff_alu": self.eff_alu, "eff_sm": self.eff_sm,
            "blocks_per_sm": self.blocks_per_sm, "threads": self.threads.to_json(),
            "gm_bytes": self.gm_bytes, "sm_bytes": self.sm_bytes, "flops": self.flops,
            "useful_flops": self.useful_flops, "mix": self.mix.to_json(),
            "smem_reads_per_thread": self.smem_reads_per_thread,
            "halo_computes": self.halo_computes, "launch_count": self.launch_count,
            "launches": [c.to_json() for c in self.launches],
            "fields": list(self.fields),
            "substeps": [{"writes": list(w.writes), "flops_per_cell": w.flops,
                          "mix": w.mix.to_json(), "staged": list(w.staged),
                          "smem_planes": w.smem_planes,
                          "smem_reads_per_thread": w.smem_reads,
                          "coef_reads": w.coef_reads} for w in self.work],
        }

    @property
    def field_gm_bytes(self) -> int:
        """Device-memory bytes of each field (every field is loaded and stored alike; the
        read-only arrays' bytes not included)."""
        coef = sum(c.count * c.coef_gm_bytes for c in self.launches)
        return (self.gm_bytes - coef) // max(1, len(self.fields))


# --------------------------------------------------------------------------- the model


def resolve_sizes(info: StencilInfo, sizes, steps: int | None
                  ) -> tuple[tuple[DimExtent, ...], int]:
    """``sizes`` as DimExtents (array order) and the step count.

    ``sizes`` is a tuple of :class:`DimExtent` or a parameter environment (the scop's
    parameters, e.g. ``{"compsize": 16384, "timestep": 1000, "dimsize": 16386}``); with an
    environment ``steps`` defaults to the time loop's trip count.
    """
    if isinstance(sizes, Mapping):
        try:
            dims = grid_extents(info, sizes)
            if steps is None:
                steps = info.time.steps(sizes)
        except KeyError as e:
            raise UsageError(f"missing value for parameter {e.args[0]!r}") from None
    else:
        dims = tuple(sizes)
        if len(dims) != info.ndim or not all(isinstance(d, DimExtent) for d in dims):
            raise UsageError(f"sizes: expected {info.ndim} DimExtent values (array order)")
    if steps is None:
        raise UsageError("the number of time steps is needed")
    if steps < 0:
        raise UsageError(f"steps = {steps}: must be >= 0")
    return dims, int(steps)


#: Registers per thread: None (the paper's estimate), one count, or ``{degree: count}``.
Registers = int | Mapping[int, int] | None


def _regs_for(regs, degree: int) -> int | None:
    if regs is None or isinstance(regs, int):
        return regs
    return regs.get(degree)


class Model:
    """The performance model of one stencil on one GPU and grid, for many plans.

    Launch costs are cached per (plan, degree, registers): a launch plan repeats the same
    degree, and a tuner ranking plans reuses in-plane and stream counts
    (:func:`plane_dim_counts`, :func:`stream_counts` are cached too).

    ``halo_computes``: charge compute and shared-memory reads to redundant threads too
    (see :data:`MODEL_NOTES`; default: valid threads only, as the paper's numbers do).

    ``constants``: how a launch's times combine (:class:`IssueConstants`); default
    :data:`FITTED` where the GPU has a step latency (Hopper), else :data:`PAPER_TERMS`.
    """

    def __init__(self, info: StencilInfo, gpu: GpuSpec | str, sizes, steps: int | None = None,
                 halo_computes: bool = False, constants: IssueConstants | None = None):
        self.info = info
        self.halo_computes = halo_computes
        self.gpu = get_gpu(gpu)
        self.constants = constants or (FITTED if self.gpu.step_latency_cycles > 0
                                       else PAPER_TERMS)
        self.dims, self.steps = resolve_sizes(info, sizes, steps)
        self._mix = {m: OpMix.of(info, m) for m in Mode}
        self.cells = math.prod(d.length for d in self.dims)
        self._coefs = CoefficientReads.of(info)
        self._costs: dict[tuple, LaunchCost] = {}
        self._work: dict[tuple, tuple[LevelWork, ...]] = {}
        self.fields = (tuple(f.name for f in info.fields) if info.coupled
                       else (info.array,))

    def mix(self, mode: Mode) -> OpMix:
        """The instruction mix of a time step (every statement) in mode ``mode``."""
        return self._mix[mode]

    def work(self, plan: BlockingPlan) -> tuple[LevelWork, ...]:
        """What a level op of each sub-step does under ``plan`` (:func:`level_work`):
        level T of a launch is sub-step ``(T - 1) % len(work)``."""
        # a coarsened thread's row neighbours and stores (counts.coarsened_shared_traffic)
        key = (plan.mode, plan.smem_planes, plan.window_smem_planes, plan.coarsen,
               holds_row_neighbours(plan), plan.shared_cells)
        work = self._work.get(key)
        if work is None:
            work = self._work[key] = level_work(self.info, plan)
        return work

    def occupancy(self, plan: BlockingPlan, degree: int | None = None,
                  regs: int | None = None) -> Occupancy:
        return occupancy(plan, self.gpu, degree, self.thread_registers(plan, degree, regs))

    def thread_registers(self, plan: BlockingPlan, degree: int | None,
                         regs: int | None) -> int | None:
        """Registers per thread that occupancy is taken at: the budget where one is given;
        without one, where the model weighs instruction issue, what ptxas gives an unbounded
        kernel (:data:`UNBOUNDED_RATIO` times the paper's estimate, at most what the
        kernel's launch bounds leave a thread: :func:`budget_register_limit`, which ptxas
        holds to and spills beyond), else (the paper's terms) the paper's estimate (None)."""
        if regs is not None or self.gpu.step_latency_cycles <= 0:
            return regs
        return min(math.ceil(plan.register_estimate(degree) * unbounded_ratio(plan)),
                   budget_register_limit(None, plan.nthreads))

    def wave_efficiency(self, waves: float) -> float:
        """eff_SM: the paper's waves / ceil(waves); where the model weighs instruction
        issue, the last wave also loses :data:`WAVE_TAIL` of a wave to uneven blocks."""
        return float(wave_efficiency(waves, self.constants.wave_tail))

    def launch_cost(self, plan: BlockingPlan, degree: int, regs: int | None = None
                    ) -> LaunchCost:
        key = (plan, degree, regs)
        cost = self._costs.get(key)
        if cost is None:
            cost = self._launch_cost(plan, degree, regs)
            self._costs[key] = cost
        return cost

    def _launch_cost(self, plan: BlockingPlan, d: int, regs: int | None) -> LaunchCost:
        gpu, dtype = self.gpu, plan.dtype
        geo = LaunchGeometry(plan, d, self.dims)
        occ = self.occupancy(plan, d, regs)
        if occ.blocks_per_sm == 0:
            raise UsageError(
                f"plan {plan.describe()} (degree {d}) does not fit on an SM of {gpu.name}: "
                f"{plan.nthreads} threads, {occ.smem_per_block} bytes of shared memory, "
                f"{occ.regs_per_thread} registers per thread (limited by {occ.limited_by})")
        # in-plane: products of 1D counts
        slots = in_array = interior = 1
        window = [1] * (d + 1)
        for dim, nb, b, r in zip(geo.plane_dims, geo.plane_blocks, plan.bs, plan.plane_radius):
            s, a, i, w = plane_dim_counts(dim, nb, b, r, d)
            slots, in_array, interior = slots * s, in_array * a, interior * i
            window = [x * y for x, y in zip(window, w)]
        # streaming dimension: planes per level
        nstream, inner, outer = stream_counts(geo.stream, plan.sl, d, plan.stream_radius)
        levels = tuple(
            ThreadCounts(out_of_bound=(inner[T] + outer[T]) * (slots - in_array),
                         boundary=inner[T] * (in_array - interior) + outer[T] * in_array,
                         redundant=inner[T] * (interior - window[T]),
                         valid=inner[T] * window[T])
            for T in range(d + 1))
        # a rotating program's loads bring the older levels along where the update reads
        # them, and its stores write the launch's last levels; level 0 loads every field
        # and level d stores every field
        gm_reads = levels[0].in_array * plan.levels.history * plan.fields
        gm_writes = levels[d].valid * plan.levels.stored_levels(d) * plan.fields
        # per sub-step: its levels' computing threads and all their threads
        work = self.work(plan)
        comp = [0] * len(work)
        slots = [0] * len(work)
        for T in range(1, d + 1):
            c = levels[T]
            comp[(T - 1) % len(work)] += c.computing if self.halo_computes else c.valid
            slots[(T - 1) % len(work)] += c.total
        sm_writes = sum(n * w.smem_planes for n, w in zip(slots, work))
        sm_reads = sum(n * w.smem_reads for n, w in zip(comp, work))
        step_flops = [n * w.flops for n, w in zip(comp, work)]
        flops = sum(step_flops)
        word = plan.word_bytes
        lengths = tuple(d.length for d in self.dims)
        coef_gm = self._coefs.gm_bytes(lengths) if levels[0].total else 0
        coef_l1 = sum(n * w.coef_l1_bytes for n, w in zip(comp, work))
        gm_bytes = (gm_reads + gm_writes) * word + coef_gm
        sm_bytes = (sm_reads + sm_writes) * word + coef_l1
        time_comp = sum(f / (gpu.peak_gflops(dtype) * 1e9 * w.mix.eff_alu)
                        for f, w in zip(step_flops, work))
        time_sm = sm_bytes / (gpu.smem_gbs(dtype) * 1e9)
        time_gm = gm_bytes / (gpu.gmem_gbs(dtype) * 1e9)
        nblocks = geo.nblocks
        waves = nblocks / (occ.blocks_per_sm * gpu.sm_count)
        eff_sm = self.wave_efficiency(waves) if nblocks else 1.0
        terms = LaunchTerms(time_comp, time_sm, time_gm, waves)
        if gpu.step_latency_cycles > 0 and levels[0].total:
            terms = self._issue_terms(terms, plan, d, levels, occ, regs)
        k = self.constants
        return LaunchCost(d, 1, nblocks, geo.plane_blocks, nstream, occ, waves, eff_sm, levels,
                          gm_reads, gm_writes, sm_reads, sm_writes, sum(comp), flops, gm_bytes,
                          sm_bytes, time_comp, time_sm, time_gm,
                          block_steps=terms.block_steps,
                          warp_instructions=float(warp_instructions(terms, k)),
                          step_cycles=(float(step_cycles(terms, k)) if terms.step_latency > 0
                                       else 0.0),
                          time_issue=float(issue_seconds(terms, k)),
                          coef_gm_bytes=coef_gm, coef_l1_bytes=coef_l1, constants=k,
                          terms=terms)

    def level_instructions(self, plan: BlockingPlan, degree: int,
                           regs: int | None = None, substep: int = 0) -> float:
        """Instructions a thread issues per level op of sub-step ``substep`` (see
        :meth:`_issue_terms`): its statements' arithmetic, its shared-memory reads and the
        stores of its staged planes (:class:`LevelWork`).

        ``regs``: a register budget; its limit (:func:`budget_register_limit`) below
        :func:`spill_free_registers` costs :data:`SPILL_INSTRUCTIONS` per register. Each
        distinct read of a read-only array costs :data:`COEF_READ_INSTRUCTIONS`.
        """
        return (self.spill_free_instructions(plan, degree, substep)
                + self.constants.spill * self.registers_short(plan, degree, regs))

    def registers_short(self, plan: BlockingPlan, degree: int, regs: int | None) -> int:
        """Registers a budget's limit falls short of what the kernel needs unspilled
        (:func:`spill_free_registers`; from :data:`SPILL_GROWTH_CELLS` cells per thread on,
        from :data:`SPILL_GROWTH_CELLS_LOADED` where the threads load the halo, grown as
        ptxas grows an unbounded kernel's registers with its cells:
        :data:`UNBOUNDED_RATIO` of the plan over that of one cell per thread). Without a
        budget, where the model weighs instruction issue, the limit is the launch bounds'
        (:func:`budget_register_limit` of None); under the paper's terms nothing spills."""
        if regs is None and self.gpu.step_latency_cycles <= 0:
            return 0
        need = spill_free_registers(plan, degree)
        if plan.coarsen >= (SPILL_GROWTH_CELLS_LOADED if plan.halo_loaded
                            else SPILL_GROWTH_CELLS):
            need = math.ceil(need * unbounded_ratio(plan) / unbounded_ratio(plan, cells=1))
        return max(0, need - budget_register_limit(regs, plan.nthreads))

    def spill_free_instructions(self, plan: BlockingPlan, degree: int,
                                substep: int = 0) -> float:
        """:meth:`level_instructions` without spills."""
        work = self.work(plan)[substep]
        mix = work.mix
        return (mix.instructions * (2 if plan.dtype == "double" else 1)
                + division_instructions(mix)
                # a shuffle per shared read; no shared stores with shuffles
                + work.smem_reads + shared_stores(plan, work) + barriers_per_level(plan, degree)
                + level_overhead(plan) + STEP_OVERHEAD[plan.ndim] / degree
                + COEF_READ_INSTRUCTIONS * work.coef_reads
                + FIELD_SELECT_INSTRUCTIONS * (len(work.writes) - 1))

    def unbranched_saving(self, plan: BlockingPlan, level: int) -> float:
        """Instructions per cell that level ``level``'s op saves against
        :meth:`spill_free_instructions`: :data:`BRANCH_INSTRUCTIONS` where the plan computes
        at idle warps (:attr:`~an5dpy.blocking.plan.IdleWarps.COMPUTE`) and the op would
        otherwise branch around them, which the counts' LEVEL_OVERHEAD holds."""
        if plan.idle is not IdleWarps.COMPUTE:
            return 0.0
        skipping = replace(plan, idle=IdleWarps.SKIP)
        return BRANCH_INSTRUCTIONS if computing_warp_fraction(skipping, level) < 1 else 0.0

    def level_latency(self, plan: BlockingPlan, substep: int = 0) -> float:
        """Cycles of a level op's dependency chain: the update's arithmetic one
        instruction after another (nvcc keeps the written order of the sums), and each
        double division's Newton-Raphson sequence. The statements of a sub-step are
        independent of each other, so their chains overlap: the longest one counts."""
        return max(DEPENDENT_LATENCY[plan.dtype] * mix.instructions
                   + division_latency(mix)
                   for mix in self.work(plan)[substep].mixes)

    def _issue_terms(self, terms: LaunchTerms, plan: BlockingPlan, d: int,
                     levels: tuple[ThreadCounts, ...], occ: Occupancy, regs: int | None
                     ) -> LaunchTerms:
        """The issue term's counts (Hopper, beyond the paper): the kernels are bound by
        issuing instructions, and a block's streaming step cannot take less than its
        latency (:func:`step_cycles` combines them).

        Every thread of a warp that evaluates a level executes the level op
        (:func:`an5dpy.blocking.plan.computing_warp_fraction`: those with a thread in the
        level's window, or all where no op branches): :meth:`level_instructions` each, less
        :meth:`unbranched_saving`, the
        update's arithmetic counted twice in double (half-rate FP64 pipes), plus double
        divisions, shared loads, stores, the barrier, :data:`LEVEL_OVERHEAD`, the level's
        share of :data:`STEP_OVERHEAD` and spill
        instructions. The step's latency: the GPU's step latency (a global load's round
        trip) + ``d`` x :meth:`level_latency` (each level's chain ends at a barrier) + the
        stalls of the step's barriers (:data:`BARRIER_STALL` x the block's warps each: a
        barrier waits for the block's slowest warp). Level T is sub-step ``(T - 1) % S``
        of a time step: its instructions and chain are that sub-step's. The launch's
        efficiency is :func:`cell_efficiency`'s.
        """
        gpu = self.gpu
        substeps = len(self.work(plan))
        short = self.registers_short(plan, d, regs)
        instructions = spill_warps = chains = 0.0
        for s in range(substeps):
            steps = range(s + 1, d + 1, substeps)
            level_warps = {T: levels[T].total / WARP_SIZE * issuing_share(plan, T)
                           for T in steps}
            warps = sum(level_warps.values())
            instructions += (warps * self.spill_free_instructions(plan, d, s)
                             - sum(w * self.unbranched_saving(plan, T)
                                   for T, w in level_warps.items()))
            spill_warps += warps * short
            chains += len(steps) * self.level_latency(plan, s)
        block_steps = levels[0].total / math.prod(plan.bs)  # cells per block and plane
        # a coarsened thread's barrier serves its cells: per block, d barriers a step (one
        # with one barrier per step)
        barriers = d * barriers_per_level(plan, d) * plan.coarsen
        block_warps = math.ceil(plan.nthreads / WARP_SIZE)
        # every warp of a block that loads its halo issues each of its rounds a step
        instructions += (block_steps * block_warps * plan.halo_loads_per_thread
                         * HALO_LOAD_INSTRUCTIONS)
        return replace(terms, step_latency=gpu.step_latency_cycles, chain_cycles=chains,
                       block_steps=block_steps, issue_instructions=instructions,
                       spill_warps=spill_warps, barrier_warps=barriers * block_warps,
                       block_warps=block_warps,
                       resident=occ.blocks_per_sm, schedulers=gpu.schedulers_per_sm,
                       sm_count=gpu.sm_count, clock_hz=gpu.clock_mhz * 1e6,
                       efficiency=cell_efficiency(plan))

    def launch_degrees(self, plan: BlockingPlan) -> dict[int, int]:
        """The kernels' degrees of the run's launch plan and how many launches each,
        in launch-plan order."""
        counts: dict[int, int] = {}
        for deg in run_degrees(self.steps, plan.bt, plan.levels):
            deg = plan.kernel_degree(deg)
            counts[deg] = counts.get(deg, 0) + 1
        return counts

    def predict(self, plan: BlockingPlan, regs: Registers = None) -> Prediction:
        """The prediction for ``plan``; raises UsageError when it cannot run on the GPU.

        ``regs``: a register budget per thread (``--regs``: the kernels' launch bounds),
        one for every kernel or ``{degree: budget}``; occupancy takes it as each thread's
        registers, and the issue term charges spills where its launch-bound limit is
        below :func:`spill_free_registers`. Degrees not given use the paper's estimate
        and no spills.
        """
        if plan.ndim != self.info.ndim:
            raise UsageError(f"plan is {plan.ndim}D, the stencil {self.info.ndim}D")
        launches = []
        for deg, k in self.launch_degrees(plan).items():
            c = self.launch_cost(plan, deg, _regs_for(regs, deg))
            launches.append(replace(c, count=k))
        seconds = sum(c.count * c.seconds for c in launches)
        raw = sum(c.count * c.raw_seconds for c in launches)

        def total(attr: str) -> float:
            return sum(c.count * getattr(c, attr) / c.eff_sm for c in launches if c.blocks)

        times = (total("time_comp"), total("time_sm"), total("time_gm"), total("time_issue"))
        useful = self.cells * self.info.flops_per_cell * self.steps
        return Prediction(
            plan=plan, gpu=self.gpu.name, steps=self.steps, cells=self.cells,
            flops_per_cell=self.info.flops_per_cell,
            gflops=useful / seconds / 1e9 if seconds > 0 else 0.0,
            seconds=seconds, bottleneck=BOTTLENECKS[times.index(max(times))],
            time_comp=times[0], time_sm=times[1], time_gm=times[2], time_issue=times[3],
            eff_alu=self._mix[plan.mode].eff_alu, eff_sm=raw / seconds if seconds > 0 else 1.0,
            blocks_per_sm=launches[0].occupancy.blocks_per_sm if launches
            else self.occupancy(plan, None, _regs_for(regs, plan.depth)).blocks_per_sm,
            threads=sum_counts(c.threads.scale(c.count) for c in launches),
            gm_bytes=sum(c.count * c.gm_bytes for c in launches),
            sm_bytes=sum(c.count * c.sm_bytes for c in launches),
            flops=sum(c.count * c.flops for c in launches),
            mix=self._mix[plan.mode],
            smem_reads_per_thread=sum(w.smem_reads for w in self.work(plan)),
            halo_computes=self.halo_computes, launches=tuple(launches),
            registers=regs if isinstance(regs, int) else None, fields=self.fields,
            work=self.work(plan))

    def budgets(self, plan: BlockingPlan) -> tuple[int | None, ...]:
        """Register budgets worth predicting for ``plan``: none (the estimate), and where
        the model weighs instruction issue, each of :data:`REGISTER_BUDGETS` below the
        estimate (more resident blocks against spill instructions)."""
        if self.gpu.step_latency_cycles <= 0:
            return (None,)
        estimate = plan.register_estimate()
        return (None, *(b for b in REGISTER_BUDGETS if b < estimate))

    def rank(self, plans: Iterable[BlockingPlan], regs: Registers = None
             ) -> list[Prediction]:
        """Predictions of the plans that fit on the GPU, fastest first: each plan at
        ``regs``, or by default at its best budget of :meth:`budgets`."""
        out = []
        for plan in plans:
            best = None
            for budget in ((regs,) if regs is not None else self.budgets(plan)):
                try:
                    p = self.predict(plan, budget)
                except UsageError:
                    continue
                if best is None or p.seconds < best.seconds:
                    best = p
            if best is not None:
                out.append(best)
        out.sort(key=lambda p: p.seconds)
        return out


def predict(info: StencilInfo, plan: BlockingPlan, gpu: GpuSpec | str, sizes,
            steps: int | None = None, regs: Registers = None,
            halo_computes: bool = False) -> Prediction:
    """Predict the run of ``steps`` time steps of ``info`` with ``plan`` on ``gpu``.

    ``sizes``: DimExtents (array order) or the scop's parameter values (then ``steps``
    defaults to the time loop's trip count). ``regs``: a register budget for all kernels
    or ``{degree: budget}`` (default: none, the paper's estimate for each degree; see
    :meth:`Model.predict`). ``halo_computes``: see :class:`Model`.
    """
    return Model(info, gpu, sizes, steps, halo_computes).predict(plan, regs)
