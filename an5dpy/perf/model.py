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
come from :class:`an5dpy.blocking.schedule.BlockRanges`, stream block by stream block.

**Traffic and work** (per launch; ``levels`` holds the counts of level 0..d):

* ``th_gm_read``: level 0, in-array threads of every loaded plane (boundary planes too);
  ``th_gm_write``: level d valid threads; bytes = (reads + writes) x word size.
* shared-memory writes: every level op (levels 1..d, streaming-boundary planes included)
  writes once per thread -- all threads, out-of-bound ones too, as the kernels avoid
  branching -- and ``2r+1`` times in mode ``none`` (Table 1);
* shared-memory reads: per computing thread, :func:`smem_reads_per_thread`;
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
arithmetic, doubled in FP64; double divisions; shared loads and stores; the barrier;
:data:`LEVEL_OVERHEAD`; spill instructions where a register budget's limit is below what
the kernel needs), and an SM spends ``max(latency + e*W/S, B*W/S)`` cycles per step of its
``B`` resident blocks (``W`` warp-instructions per block and step, ``S`` schedulers;
``latency`` = the step latency + bT x each level's dependency chain,
:meth:`Model.level_latency`; ``e`` = :data:`EXPOSED_ISSUE`). A launch then takes the
Euclidean norm of the four times rather than their maximum (the resources of one
instruction stream do not overlap fully). :meth:`Model.rank` predicts each plan at its
best register budget too (fewer registers: more resident blocks, but spills).

The constants of the issue term were fitted to the H200 measurements of ``artifact/H200``
(every measured candidate of the 42 rows): there its top 5 holds the fastest measured plan
on 35 of 42 rows (the paper's terms alone: 13; in-sample, as the constants were fitted
there; ``scripts/model_fit.py`` refits them and cross-validates the fit). It is
pessimistic: the tuned plans run 1.39x its prediction in geomean (the norm charges partly
overlapping resources in full).

Choices where the paper is vague are listed in :data:`MODEL_NOTES`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

import numpy as np

from an5dpy.analysis.stencil import op_mix
from an5dpy.errors import UsageError
from an5dpy.perf.gpus import GpuSpec, get_gpu
from an5dpy.ir import AssocForm, Binary, Cast, Expr, StencilInfo, Unary, common_type
from an5dpy.blocking.plan import (REGISTER_GRANULE, WARP_SIZE, BlockingPlan, DimExtent,
                                  LaunchGeometry, Mode, active_warp_fraction,
                                  budget_register_limit, default_mode, grid_extents,
                                  launch_degrees, make_plan)
from an5dpy.blocking.schedule import BlockRanges

BOTTLENECKS = ("compute", "shared", "global", "issue")

#: Instructions per thread and level besides the update's arithmetic, shared-memory reads
#: and stores and the barrier: the boundary select, address arithmetic and loop control,
#: as counted in the inner loops' SASS on sm_90 (about 7-9 in 2D and 15-22 in 3D kernels).
LEVEL_OVERHEAD = {2: 8, 3: 14}
#: Instructions per level added for each register a budget's limit falls short of the
#: registers the kernel needs without spilling (spill loads and stores).
SPILL_INSTRUCTIONS = 3.0
#: Registers a kernel needs without spilling, besides its plane registers (one 32-bit
#: register per float value, two per double): nvcc's temporaries, addresses and loop state,
#: and in mode assoc ASSOC_TEMPORARIES more for the partial sums. Lower than the paper's
#: estimate, which has one more register per level: the kernels of a budget below it
#: often build without a spill (ptxas, sm_90).
SPILL_FREE_BASE = {"float": 20, "double": 30}
ASSOC_TEMPORARIES = 10
#: A division in double (fast math gives float divisions a reciprocal, not double ones):
#: issue slots of its Newton-Raphson sequence (a reciprocal estimate and about six FP64
#: operations, counted twice as FP64 issues at half rate; sm_90 SASS), and the cycles it
#: adds to a level's dependency chain.
DOUBLE_DIVISION_INSTRUCTIONS = 20
DOUBLE_DIVISION_LATENCY = 100
#: Cycles from one dependent arithmetic instruction to the next (FFMA / DFMA latency).
DEPENDENT_LATENCY = {"float": 4, "double": 8}
#: Share of a block's own issue time per step that its step latency does not cover: the
#: next plane's loads are in flight while the block computes, so most of it overlaps.
EXPOSED_ISSUE = 0.4
#: Register budgets besides none that the tuner builds, and that the model weighs where it
#: models instruction issue (GpuSpec.step_latency_cycles > 0).
REGISTER_BUDGETS = (32, 64, 96)

MODEL_NOTES = (
    "Computing threads (FLOPs and shared-memory reads) are the valid slots of levels 1..d: "
    "interior threads inside their level's window [T*r, bS - T*r); threads outside it "
    "(redundant) copy their input and are idle. With the other choices below this "
    "reproduces the paper's Model column of Table 5 (V100 and P100, float and double, 84 "
    "entries: median ratio 0.99, 72 within 10%, range 0.67-1.25). Charging redundant "
    "threads too (halo_computes=True: an idle lane of a busy warp costs as much as a "
    "working one) gives 49 within 10%, range 0.27-1.20.",
    "Shared-memory reads are charged to computing threads only; boundary, redundant and "
    "out-of-bound threads only write.",
    "Shared-memory reads per computing thread (Table 2, practical column, generalised): "
    "nondiag = distinct non-zero in-plane offsets of the centre plane; assoc = distinct "
    "non-zero in-plane offsets over all planes (each arriving plane is read once per "
    "column and feeds all partial sums); none = offsets with a non-zero in-plane part "
    "(all 2r+1 planes come from shared memory). Repeated reads of one offset count once.",
    "Shared-memory writes: one per thread and level op (2r+1 in mode none), streaming-"
    "boundary planes included.",
    "Global reads: level-0 loads of in-array threads (boundary planes included). The "
    "kernels also re-load boundary cells at levels >= 1 (by buffer parity); those few, "
    "cache-resident loads are not charged.",
    "Instruction mix: nvcc's FMA contraction as estimated by analysis.op_mix, over the "
    "update as written (nondiag, none) or as per-plane partial sums added to accumulators "
    "(assoc: 1 MUL + (k-1) FMA per plane of k products, 1 ADD per further plane; this "
    "matches the paper's box-stencil numbers). Division counts as a multiply (fast math, "
    "section 5), math calls as OTHER, for float and double alike in the paper's terms "
    "(which also ignore slow double division; the issue term charges it, "
    "DOUBLE_DIVISION_INSTRUCTIONS and _LATENCY). Common subexpressions are not merged "
    "(gradient2d is predicted ~25% below the paper, which counts nvcc's CSE).",
    "Registers: the paper's empirical lower bound (section 6.3) rounded up to 8, unless "
    "given (a budget, one or per degree). The paper's terms model neither "
    "spilling nor latency at low occupancy; the issue term (GPUs with a step latency) "
    "charges both, spills against spill_free_registers (below the paper's estimate) at "
    "the limit a budget's launch bounds give ptxas (plan.budget_register_limit). Shared "
    "memory per block is Table 1's footprint (no per-block reservation).",
    "eff_SM = waves / ceil(waves), waves = blocks / (blocks per SM x SMs); each launch of "
    "the launch plan is costed by its own degree.",
)


# --------------------------------------------------------------------------- small values


@dataclass(frozen=True)
class ThreadCounts:
    """Thread slots (thread x level x plane) per class."""

    out_of_bound: int = 0
    boundary: int = 0
    redundant: int = 0
    valid: int = 0

    @property
    def total(self) -> int:
        return self.out_of_bound + self.boundary + self.redundant + self.valid

    @property
    def computing(self) -> int:
        return self.redundant + self.valid

    @property
    def in_array(self) -> int:
        return self.boundary + self.redundant + self.valid

    def __add__(self, other: "ThreadCounts") -> "ThreadCounts":
        return ThreadCounts(self.out_of_bound + other.out_of_bound,
                            self.boundary + other.boundary,
                            self.redundant + other.redundant, self.valid + other.valid)

    def scale(self, k: int) -> "ThreadCounts":
        return ThreadCounts(k * self.out_of_bound, k * self.boundary, k * self.redundant,
                            k * self.valid)

    def to_json(self) -> dict:
        return {"out_of_bound": self.out_of_bound, "boundary": self.boundary,
                "redundant": self.redundant, "valid": self.valid, "total": self.total}


def _sum(counts: Iterable[ThreadCounts]) -> ThreadCounts:
    out = ThreadCounts()
    for c in counts:
        out = out + c
    return out


@dataclass(frozen=True)
class OpMix:
    """Instructions per cell update after FMA contraction (paper section 5)."""

    fma: int
    mul: int
    add: int
    other: int
    double_divisions: int = 0  # of the MULs: divisions in double (see DOUBLE_DIVISION_*)

    @staticmethod
    def of(info: StencilInfo, mode: Mode | None = None) -> "OpMix":
        """The mix of the update as mode ``mode`` (default: the info's) evaluates it.

        Modes nondiag/none evaluate the update as written. Mode assoc evaluates, per
        arriving plane, the partial sum of that plane's terms and adds it to the output's
        accumulator (:func:`assoc_expression`): a plane of k products costs 1 MUL +
        (k-1) FMA, and each partial sum after the first one ADD (an FMA when the partial
        is a single product).
        """
        mode = mode or default_mode(info)
        if mode is Mode.ASSOC and info.assoc is not None:
            m = op_mix(assoc_expression(info.assoc))
        else:
            m = op_mix(info)
        calls = sum(m["calls"].values())
        # fast math: x / y becomes x * (1/y) with a hoisted constant reciprocal -> a MUL
        return OpMix(fma=m["fma"], mul=m["mul"] - m["fma"] + m["div"],
                     add=m["add"] - m["fma"], other=calls, double_divisions=m["double_div"])

    @property
    def instructions(self) -> int:
        return self.fma + self.mul + self.add + self.other

    @property
    def eff_alu(self) -> float:
        n = self.instructions
        if n == 0:
            return 1.0
        return (2 * self.fma + self.mul + self.add + self.other) / (2 * n)

    def to_json(self) -> dict:
        return {"fma": self.fma, "mul": self.mul, "add": self.add, "other": self.other,
                "double_divisions": self.double_divisions, "eff_alu": self.eff_alu}


def assoc_expression(form: AssocForm) -> Expr:
    """The update as mode assoc evaluates it, as one expression (for :func:`op_mix`).

    ``post((P_1 + P_2) + ... + P_n)`` where ``P_k`` is the left-to-right sum of the terms
    reading plane k (planes in arrival order); a plane with one term is added to the
    accumulator directly (``acc + c*x`` contracts to an FMA), a subtracted term with ``-``.
    """
    st = form.sum_type

    def item(term: Expr) -> tuple[bool, Expr]:
        neg = isinstance(term, Unary) and term.op == "-"
        x = term.operand if neg else term
        return neg, (x if x.ctype == st else Cast(st, None, x, True))

    def add(acc: Expr | None, neg: bool, x: Expr) -> Expr:
        if acc is None:
            return Unary(st, None, "-", x) if neg else x
        return Binary(st, None, "-" if neg else "+", acc, x)

    planes: dict[int, list[tuple[bool, Expr]]] = {}
    for dz, term in form.terms:
        planes.setdefault(dz, []).append(item(term))
    total: Expr | None = None
    for dz in sorted(planes):
        items = planes[dz]
        if total is None:  # the first plane starts the accumulator
            for neg, x in items:
                total = add(total, neg, x)
        elif len(items) == 1:  # acc + c*x contracts to one FMA
            total = add(total, *items[0])
        else:
            partial = None
            for neg, x in items:
                partial = add(partial, neg, x)
            total = Binary(st, None, "+", total, partial)
    assert total is not None
    if form.post is not None:
        op, k = form.post
        ctype = common_type(st, k.ctype)
        lhs = total if total.ctype == ctype else Cast(ctype, None, total, True)
        rhs = k if k.ctype == ctype else Cast(ctype, None, k, True)
        total = Binary(ctype, None, op, lhs, rhs)
    return total


def smem_reads_per_thread(info: StencilInfo, mode: Mode) -> int:
    """Shared-memory reads per computing thread and level op (see :data:`MODEL_NOTES`).

    Reproduces Table 2's practical column: 2D star ``2r``, 2D box ``(2r+1)-1``, 3D star
    ``4r``, 3D box ``(2r+1)^2-1``.
    """
    offsets = info.offsets
    match mode:
        case Mode.NONDIAG:
            return len({o[1:] for o in offsets if o[0] == 0 and any(o[1:])})
        case Mode.ASSOC:
            return len({o[1:] for o in offsets if any(o[1:])})
        case Mode.NONE:
            return len({o for o in offsets if any(o[1:])})
    raise TypeError(f"not a Mode: {mode!r}")


@dataclass(frozen=True)
class Occupancy:
    """Thread blocks resident per SM and the resource that limits them."""

    blocks_per_sm: int
    limited_by: str  # 'threads' | 'smem' | 'regs' | 'blocks'
    regs_per_thread: int
    smem_per_block: int

    def to_json(self) -> dict:
        return {"blocks_per_sm": self.blocks_per_sm, "limited_by": self.limited_by,
                "regs_per_thread": self.regs_per_thread, "smem_per_block": self.smem_per_block}


def spill_free_registers(plan: BlockingPlan, degree: int | None = None) -> int:
    """Registers per thread the kernel of ``degree`` needs without spilling (see
    :data:`SPILL_FREE_BASE`)."""
    words = plan.word_bytes // 4
    extra = ASSOC_TEMPORARIES if plan.mode is Mode.ASSOC else 0
    return words * plan.registers_per_thread(degree) + SPILL_FREE_BASE[plan.dtype] + extra


def round_up(n: int, k: int) -> int:
    return -(-n // k) * k


def occupancy(plan: BlockingPlan, gpu: GpuSpec, degree: int | None = None,
              regs: int | None = None) -> Occupancy:
    """Blocks per SM: min of the thread, shared-memory, register and block limits.

    ``regs`` (per thread) defaults to :meth:`BlockingPlan.register_estimate` of ``degree``;
    either is rounded up to a multiple of 8 (the allocation granularity). 0 blocks per SM
    means the plan cannot run on this GPU.
    """
    d = plan.bt if degree is None else degree
    r = round_up(regs if regs is not None else plan.register_estimate(d), REGISTER_GRANULE)
    nthr = plan.nthreads
    smem = plan.smem_bytes
    limits = {
        "threads": gpu.max_threads_per_sm // nthr,
        "smem": gpu.smem_per_sm // smem if smem <= gpu.smem_per_block else 0,
        "regs": (gpu.regs_per_sm // (r * nthr)
                 if r <= gpu.max_regs_per_thread and r * nthr <= gpu.regs_per_block else 0),
        "blocks": gpu.max_blocks_per_sm,
    }
    which = min(limits, key=lambda k: limits[k])
    return Occupancy(limits[which], which, r, smem)


# --------------------------------------------------------------------------- counting


@lru_cache(maxsize=4096)
def plane_dim_counts(dim: DimExtent, nblocks: int, b: int, r: int, degree: int
                     ) -> tuple[int, int, int, tuple[int, ...]]:
    """Counts along one in-plane dimension over ``nblocks`` blocks x ``b`` threads.

    Returns ``(slots, in_array, interior, window)`` where ``window[T]`` (T = 0..degree)
    counts interior positions inside level T's window ``[T*r, b - T*r)``. Thread ``t`` of
    block ``k`` sits at ``lower - degree*r + k*(b - 2*degree*r) + t`` (as the kernels and
    :class:`an5dpy.check.simulate.ThreadGrid` place it).
    """
    c = b - 2 * degree * r
    t = np.arange(b)
    x = dim.lower - degree * r + np.arange(nblocks)[:, None] * c + t[None, :]
    in_array = int(((x >= 0) & (x < dim.size)).sum())
    inside = (x >= dim.lower) & (x <= dim.upper)
    per_thread = inside.sum(axis=0)  # interior positions per thread index
    window = tuple(int(per_thread[T * r:b - T * r].sum()) for T in range(degree + 1))
    return nblocks * b, in_array, window[0], window


@lru_cache(maxsize=4096)
def stream_counts(stream: DimExtent, sl: int | None, degree: int, r: int
                  ) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """Planes each level produces, over all stream blocks of a launch.

    Returns ``(stream_blocks, interior, boundary)``: ``interior[T]``/``boundary[T]``
    (T = 0..degree) count the interior and streaming-boundary planes level T produces
    (level 0: loads) summed over stream blocks, from :class:`BlockRanges`.

    Stream blocks whose local geometry is the same (the far grid boundaries clamped; see
    ``_block_key``) are evaluated once and counted with their multiplicity.
    """
    length = stream.length
    if length == 0:
        return 0, (0,) * (degree + 1), (0,) * (degree + 1)
    sl_eff = sl if sl is not None else length
    n = -(-length // sl_eff)
    s0 = stream.lower + np.arange(n) * sl_eff
    s1 = np.minimum(s0 + sl_eff, stream.upper + 1)
    clamp = 2 * (degree + 1) * r + 2
    keys = np.stack([np.minimum(s0 - stream.lower, clamp),
                     np.minimum(stream.upper + 1 - s1, clamp), s1 - s0], axis=1)
    _, first_index, multiplicity = np.unique(keys, axis=0, return_index=True,
                                             return_counts=True)
    interior = [0] * (degree + 1)
    boundary = [0] * (degree + 1)
    for i, m in zip(first_index.tolist(), multiplicity.tolist()):
        rng = BlockRanges.of(int(s0[i]), int(s1[i]), stream.lower, stream.upper, degree, r)
        for T in range(degree + 1):
            inner, outer = _level_planes(rng, T)
            interior[T] += m * inner
            boundary[T] += m * outer
    return n, tuple(interior), tuple(boundary)


def _level_planes(rng: BlockRanges, level: int) -> tuple[int, int]:
    """(interior, streaming-boundary) planes level ``level`` produces in one block."""
    first, last = rng.first(level), rng.last(level)
    if last < first:
        return 0, 0
    inner = max(0, min(last, rng.hi) - max(first, rng.lo) + 1)
    return inner, last - first + 1 - inner


def stream_counts_direct(stream: DimExtent, sl: int | None, degree: int, r: int
                         ) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """:func:`stream_counts` block by block, without grouping (a reference for tests)."""
    length = stream.length
    if length == 0:
        return 0, (0,) * (degree + 1), (0,) * (degree + 1)
    sl_eff = sl if sl is not None else length
    n = -(-length // sl_eff)
    interior = [0] * (degree + 1)
    boundary = [0] * (degree + 1)
    for b in range(n):
        S0 = stream.lower + b * sl_eff
        S1 = min(S0 + sl_eff, stream.upper + 1)
        rng = BlockRanges.of(S0, S1, stream.lower, stream.upper, degree, r)
        for T in range(degree + 1):
            inner, outer = _level_planes(rng, T)
            interior[T] += inner
            boundary[T] += outer
    return n, tuple(interior), tuple(boundary)


# --------------------------------------------------------------------------- per launch


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

    @property
    def threads(self) -> ThreadCounts:
        """Classes over the computing levels 1..d."""
        return _sum(self.levels[1:])

    @property
    def times(self) -> tuple[float, float, float, float]:
        return (self.time_comp, self.time_sm, self.time_gm, self.time_issue)

    @property
    def raw_seconds(self) -> float:
        """The paper's roofline: the largest time. With the issue term (Hopper) the
        Euclidean norm of the four: a block issues, loads and waits on shared memory in
        one instruction stream, so resources that are all busy do not overlap fully."""
        if self.time_issue > 0:
            return math.hypot(*self.times)
        return max(self.times)

    @property
    def seconds(self) -> float:
        return self.raw_seconds / self.eff_sm if self.blocks else 0.0

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

    @property
    def useful_flops(self) -> int:
        return self.cells * self.flops_per_cell * self.steps

    @property
    def launch_count(self) -> int:
        return sum(c.count for c in self.launches)

    def to_json(self) -> dict:
        return {
            "plan": self.plan.to_json(), "gpu": self.gpu, "steps": self.steps,
            "cells": self.cells, "flops_per_cell": self.flops_per_cell,
            "gflops": self.gflops, "seconds": self.seconds, "bottleneck": self.bottleneck,
            "time_comp": self.time_comp, "time_sm": self.time_sm, "time_gm": self.time_gm,
            "time_issue": self.time_issue, "registers": self.registers,
            "eff_alu": self.eff_alu, "eff_sm": self.eff_sm,
            "blocks_per_sm": self.blocks_per_sm, "threads": self.threads.to_json(),
            "gm_bytes": self.gm_bytes, "sm_bytes": self.sm_bytes, "flops": self.flops,
            "useful_flops": self.useful_flops, "mix": self.mix.to_json(),
            "smem_reads_per_thread": self.smem_reads_per_thread,
            "halo_computes": self.halo_computes, "launch_count": self.launch_count,
            "launches": [c.to_json() for c in self.launches],
        }


# --------------------------------------------------------------------------- the model


def benchmark_grid(info: StencilInfo, n: int) -> tuple[DimExtent, ...]:
    """An interior of ``n`` cells per dimension with the stencil's reach as boundary
    (the benchmark harness' layout: ``dimsize = compsize + 2 * rad``)."""
    return tuple(DimExtent(d.reach_lo, d.reach_lo + n - 1, n + d.reach_lo + d.reach_hi)
                 for d in info.dims)


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
    """

    def __init__(self, info: StencilInfo, gpu: GpuSpec | str, sizes, steps: int | None = None,
                 halo_computes: bool = False):
        self.info = info
        self.halo_computes = halo_computes
        self.gpu = get_gpu(gpu)
        self.dims, self.steps = resolve_sizes(info, sizes, steps)
        self._mix = {m: OpMix.of(info, m) for m in Mode}
        self.cells = math.prod(d.length for d in self.dims)
        self._reads = {m: smem_reads_per_thread(info, m) for m in Mode}
        self._costs: dict[tuple, LaunchCost] = {}

    def mix(self, mode: Mode) -> OpMix:
        return self._mix[mode]

    def occupancy(self, plan: BlockingPlan, degree: int | None = None,
                  regs: int | None = None) -> Occupancy:
        return occupancy(plan, self.gpu, degree, regs)

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
        occ = occupancy(plan, gpu, d, regs)
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
        gm_reads = levels[0].in_array
        gm_writes = levels[d].valid
        if self.halo_computes:
            comp = sum(c.computing for c in levels[1:])
        else:
            comp = sum(c.valid for c in levels[1:])
        sm_writes = sum(c.total for c in levels[1:]) * plan.smem_planes
        sm_reads = comp * self._reads[plan.mode]
        flops = comp * self.info.flops_per_cell
        word = plan.word_bytes
        gm_bytes = (gm_reads + gm_writes) * word
        sm_bytes = (sm_reads + sm_writes) * word
        time_comp = flops / (gpu.peak_gflops(dtype) * 1e9 * self._mix[plan.mode].eff_alu)
        time_sm = sm_bytes / (gpu.smem_gbs(dtype) * 1e9)
        time_gm = gm_bytes / (gpu.gmem_gbs(dtype) * 1e9)
        nblocks = geo.nblocks
        waves = nblocks / (occ.blocks_per_sm * gpu.sm_count)
        eff_sm = waves / math.ceil(waves) if nblocks else 1.0
        cost = LaunchCost(d, 1, nblocks, geo.plane_blocks, nstream, occ, waves, eff_sm, levels,
                          gm_reads, gm_writes, sm_reads, sm_writes, comp, flops, gm_bytes,
                          sm_bytes, time_comp, time_sm, time_gm)
        if gpu.step_latency_cycles > 0 and levels[0].total:
            cost = self._with_issue(cost, plan, regs)
        return cost

    def level_instructions(self, plan: BlockingPlan, degree: int,
                           regs: int | None = None) -> float:
        """Instructions a thread issues per level op (see :meth:`_with_issue`).

        ``regs``: a register budget; its limit (:func:`budget_register_limit`) below
        :func:`spill_free_registers` costs :data:`SPILL_INSTRUCTIONS` per register.
        """
        mix = self._mix[plan.mode]
        short = 0
        if regs is not None:
            short = max(0, spill_free_registers(plan, degree)
                        - budget_register_limit(regs, plan.nthreads))
        return (mix.instructions * (2 if plan.dtype == "double" else 1)
                + DOUBLE_DIVISION_INSTRUCTIONS * mix.double_divisions
                + self._reads[plan.mode] + plan.smem_planes + 1
                + LEVEL_OVERHEAD[plan.ndim] + SPILL_INSTRUCTIONS * short)

    def level_latency(self, plan: BlockingPlan) -> float:
        """Cycles of a level op's dependency chain: the update's arithmetic one
        instruction after another (nvcc keeps the written order of the sums), and each
        double division's Newton-Raphson sequence."""
        mix = self._mix[plan.mode]
        return (DEPENDENT_LATENCY[plan.dtype] * mix.instructions
                + DOUBLE_DIVISION_LATENCY * mix.double_divisions)

    def _with_issue(self, cost: LaunchCost, plan: BlockingPlan, regs: int | None
                    ) -> LaunchCost:
        """The issue term (Hopper, beyond the paper): the kernels are bound by issuing
        instructions, and a block's streaming step cannot take less than its latency.

        Every thread of a warp with a thread in a level's window executes the level op
        (:func:`an5dpy.blocking.plan.active_warp_fraction`): :meth:`level_instructions` each, the
        update's arithmetic counted twice in double (half-rate FP64 pipes), plus double
        divisions, shared loads, stores, the barrier, :data:`LEVEL_OVERHEAD` and spill
        instructions. With ``W`` warp-instructions per block and step, ``S`` schedulers
        and ``B`` resident blocks, an SM takes ``max(latency + e*W/S, B*W/S)`` cycles per
        step of its blocks: ``latency`` = the GPU's step latency (a global load's round
        trip) + ``d`` x :meth:`level_latency` (each level's chain ends at a barrier), and
        ``e`` = :data:`EXPOSED_ISSUE` (the block computes while its next loads fly).
        """
        gpu, d = self.gpu, cost.degree
        per_level = self.level_instructions(plan, d, regs)
        warps = sum(cost.levels[T].total / WARP_SIZE
                    * active_warp_fraction(plan.bs, plan.plane_radius, T)
                    for T in range(1, d + 1))
        instructions = warps * per_level
        block_steps = cost.levels[0].total / plan.nthreads
        per_step = instructions / block_steps / gpu.schedulers_per_sm
        resident = cost.occupancy.blocks_per_sm
        latency = gpu.step_latency_cycles + d * self.level_latency(plan)
        cycles = max(latency + EXPOSED_ISSUE * per_step, resident * per_step)
        time_issue = (block_steps / (gpu.sm_count * resident) * cycles
                      / (gpu.clock_mhz * 1e6))
        return replace(cost, block_steps=block_steps, warp_instructions=instructions,
                       step_cycles=cycles, time_issue=time_issue)

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
        counts: dict[int, int] = {}
        for deg in launch_degrees(self.steps, plan.bt):
            counts[deg] = counts.get(deg, 0) + 1
        launches = []
        for deg, k in counts.items():
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
            else occupancy(plan, self.gpu, None, _regs_for(regs, plan.bt)).blocks_per_sm,
            threads=_sum(c.threads.scale(c.count) for c in launches),
            gm_bytes=sum(c.count * c.gm_bytes for c in launches),
            sm_bytes=sum(c.count * c.sm_bytes for c in launches),
            flops=sum(c.count * c.flops for c in launches),
            mix=self._mix[plan.mode], smem_reads_per_thread=self._reads[plan.mode],
            halo_computes=self.halo_computes, launches=tuple(launches),
            registers=regs if isinstance(regs, int) else None)

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


def predict_config(info: StencilInfo, gpu: GpuSpec | str, sizes, steps: int | None = None,
                   *, bt: int = 4, bs: Sequence[int] | None = None, sl: int | None = None,
                   opt: str | None = None, dtype: str | None = None,
                   regs: Registers = None, halo_computes: bool = False) -> Prediction:
    """:func:`predict` for a plan given by its parameters (``bs`` in array order),
    checked against the GPU's limits."""
    spec = get_gpu(gpu)
    plan = make_plan(info, bt=bt, bs=tuple(bs) if bs is not None else None, sl=sl, opt=opt,
                     dtype=dtype, limits=spec.limits())
    return predict(info, plan, spec, sizes, steps, regs, halo_computes)


# --------------------------------------------------------------------------- printing


def _fmt_bytes(n: float) -> str:
    for unit, k in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= k:
            return f"{n / k:.2f} {unit}"
    return f"{n:.0f} B"


def format_prediction(p: Prediction, gpu: GpuSpec | None = None) -> str:
    """A readable report of a prediction (``an5d model``)."""
    plan = p.plan
    lines = [f"plan {plan.describe()} on {p.gpu}"]
    degrees = ", ".join(f"{c.count} x degree {c.degree}" for c in p.launches) or "none"
    lines.append(f"{p.cells} interior cells, {p.steps} steps, {p.launch_count} launches "
                 f"({degrees})")
    lines.append(f"predicted {p.gflops:,.1f} GFLOP/s, {p.seconds * 1e3:.3f} ms, bottleneck: "
                 f"{p.bottleneck}")
    if p.time_issue:
        lines.append("  (each launch takes the Euclidean norm of its four times, not the largest)")
    bw_sm = f" at {gpu.smem_gbs(plan.dtype):,.0f} GB/s" if gpu else ""
    bw_gm = f" at {gpu.gmem_gbs(plan.dtype):,.0f} GB/s" if gpu else ""
    peak = f" of {gpu.peak_gflops(plan.dtype):,.0f} GFLOP/s peak" if gpu else ""
    lines.append(f"  compute  {p.time_comp * 1e3:10.3f} ms  ({p.flops / 1e9:,.1f} GFLOP "
                 f"executed{peak}, eff_ALU {p.eff_alu:.3f})")
    lines.append(f"  shared   {p.time_sm * 1e3:10.3f} ms  ({_fmt_bytes(p.sm_bytes)}{bw_sm}, "
                 f"{p.smem_reads_per_thread} reads per computing thread)")
    lines.append(f"  global   {p.time_gm * 1e3:10.3f} ms  ({_fmt_bytes(p.gm_bytes)}{bw_gm})")
    if p.time_issue:
        instructions = sum(c.count * c.warp_instructions for c in p.launches)
        latency = f", step latency {gpu.step_latency_cycles:,.0f} cycles" if gpu else ""
        lines.append(f"  issue    {p.time_issue * 1e3:10.3f} ms  ({instructions / 1e9:,.2f} G "
                     f"warp-instructions{latency})")
    if p.registers is not None:
        lines.append(f"  register budget {p.registers} per thread")
    for c in p.launches:
        o = c.occupancy
        lines.append(f"  degree {c.degree}: {c.blocks} blocks, {o.blocks_per_sm} per SM "
                     f"(limited by {o.limited_by}; {o.regs_per_thread} registers, "
                     f"{o.smem_per_block} B shared), {c.waves:.2f} waves, "
                     f"eff_SM {c.eff_sm:.3f}, bottleneck {c.bottleneck}")
    t = p.threads
    lines.append("thread slots (thread x level 1..bT x plane, all launches):")
    for label, v in (("valid", t.valid), ("redundant", t.redundant),
                     ("boundary", t.boundary), ("out-of-bound", t.out_of_bound)):
        share = v / t.total if t.total else 0.0
        lines.append(f"  {label:<13}{v:>20,}  {share:6.1%}")
    return "\n".join(lines)
