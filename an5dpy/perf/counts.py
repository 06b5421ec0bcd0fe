"""What the model counts: thread classes, the update's instruction mix, shared-memory
reads, reads of read-only arrays, what one level op of each sub-step does
(:class:`LevelWork`), SM occupancy, and the thread slots of a launch along each dimension
(see the thread classes of :mod:`an5dpy.perf.model`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Iterable

import numpy as np

from an5dpy.analysis.stencil import op_mix
from an5dpy.blocking.plan import (REGISTER_GRANULE, Barriers, BlockingPlan, DimExtent, Mode,
                                  default_mode, round_up)
from an5dpy.blocking.trace import BlockRanges
from an5dpy.ir import (WORD_BYTES, AssocForm, Binary, Cast, CoefRead, Expr, Read, StencilInfo,
                       SubStep, Unary, common_type, walk)
from an5dpy.perf.gpus import GpuSpec
from an5dpy.perf.model_constants import ASSOC_TEMPORARIES, SPILL_FREE_BASE


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


def sum_counts(counts: Iterable[ThreadCounts]) -> ThreadCounts:
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
    #: of the double divisions: those by a divisor fixed for the launch (FIXED_DIVISOR_*)
    fixed_double_divisions: int = 0

    @staticmethod
    def of(info: StencilInfo, mode: Mode | None = None) -> "OpMix":
        """The mix of the update as mode ``mode`` (default: the info's) evaluates it.

        Modes nondiag/none evaluate the update as written. Mode assoc evaluates, per
        arriving plane, the partial sum of that plane's terms and adds it to the output's
        accumulator (:func:`assoc_expression`): a plane of k products costs 1 MUL +
        (k-1) FMA, and each partial sum after the first one ADD (an FMA when the partial
        is a single product). A time step of several statements (which has no mode
        assoc) evaluates every statement once: the sum of their mixes (per sub-step:
        :attr:`LevelWork.mix`).
        """
        mode = mode or default_mode(info)
        if info.coupled:
            return OpMix.total(OpMix.of_expr(value) for sub in info.substeps
                               for _, value in sub.updates)
        if mode is Mode.ASSOC and info.assoc is not None:
            return OpMix.of_expr(assoc_expression(info.assoc))
        return OpMix.of_expr(info.update)

    @staticmethod
    def of_expr(expr: Expr) -> "OpMix":
        """The mix of one expression as written."""
        m = op_mix(expr)
        calls = sum(m["calls"].values())
        # fast math: x / y becomes x * (1/y) with a hoisted constant reciprocal -> a MUL
        return OpMix(fma=m["fma"], mul=m["mul"] - m["fma"] + m["div"],
                     add=m["add"] - m["fma"], other=calls, double_divisions=m["double_div"],
                     fixed_double_divisions=m["fixed_double_div"])

    def __add__(self, other: "OpMix") -> "OpMix":
        return OpMix(self.fma + other.fma, self.mul + other.mul, self.add + other.add,
                     self.other + other.other, self.double_divisions + other.double_divisions,
                     self.fixed_double_divisions + other.fixed_double_divisions)

    @staticmethod
    def total(mixes: Iterable["OpMix"]) -> "OpMix":
        """The mix of evaluating each of ``mixes`` once."""
        out = OpMix(0, 0, 0, 0)
        for m in mixes:
            out = out + m
        return out

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
                "double_divisions": self.double_divisions,
                "fixed_double_divisions": self.fixed_double_divisions, "eff_alu": self.eff_alu}


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
    """Shared-memory reads per computing thread and level op (see :data:`an5dpy.perf.model_constants.MODEL_NOTES`).

    Reproduces Table 2's practical column: 2D star ``2r``, 2D box ``(2r+1)-1``, 3D star
    ``4r``, 3D box ``(2r+1)^2-1``.
    """
    return shared_reads(info.offsets, mode)


def shared_reads(offsets, mode: Mode) -> int:
    """Shared-memory reads per computing thread of one array read at ``offsets`` (the rule
    of :func:`smem_reads_per_thread`, which applies it to the one-statement update)."""
    match mode:
        case Mode.NONDIAG:
            return len({o[1:] for o in offsets if o[0] == 0 and any(o[1:])})
        case Mode.ASSOC:
            return len({o[1:] for o in offsets if any(o[1:])})
        case Mode.NONE:
            return len({o for o in offsets if any(o[1:])})
    raise TypeError(f"not a Mode: {mode!r}")


@dataclass(frozen=True)
class CoefficientReads:
    """What the update's reads of read-only arrays cost (see :data:`MODEL_NOTES`).

    ``reads``: distinct (array, subscript) reads of one evaluation, each a load through
    the read-only data path by every computing thread at every level; ``l1_bytes``: their
    bytes (on-chip traffic: neighbouring offsets of one array hit L1/L2). ``arrays``: per
    read-only array, its element bytes and the grid dimensions its subscripts follow; a
    launch reads each element it needs from device memory once (the interior's extent
    along those dimensions), whatever the levels and offsets.
    """

    reads: int = 0
    l1_bytes: int = 0
    arrays: tuple[tuple[int, tuple[int, ...]], ...] = ()

    @staticmethod
    def of(info: StencilInfo) -> "CoefficientReads":
        return CoefficientReads(
            reads=sum(len(c.reads) for c in info.coefficients),
            l1_bytes=sum(len(c.reads) * WORD_BYTES[c.elem_type] for c in info.coefficients),
            arrays=tuple((WORD_BYTES[c.elem_type],
                          tuple(sorted({i.dim for read in c.reads for i in read
                                        if i.dim is not None})))
                         for c in info.coefficients))

    def gm_bytes(self, lengths: tuple[int, ...]) -> int:
        """Device-memory bytes of one launch over an interior of ``lengths`` cells per
        dimension (array order): each array's elements along the dimensions it follows."""
        return sum(word * math.prod(lengths[d] for d in dims) for word, dims in self.arrays)


@dataclass(frozen=True)
class LevelWork:
    """What a thread does in one level op of a sub-step (a time step of ``S`` sub-steps
    runs them as ``S`` consecutive levels; level ``T`` is sub-step ``(T - 1) % S``).

    ``writes``: the fields the sub-step's statements compute (every other field carries
    its register to the level); ``flops`` the sub-step's FLOPs per cell and ``mixes`` its
    statements' instruction mixes; ``staged``: the fields written to shared memory
    (those the sub-step reads at in-plane offsets), ``smem_planes`` the planes each cell
    stores (each field's window planes; a coarsened thread stores only its cells that
    other threads read, :func:`coarsened_shared_traffic`) and ``smem_reads`` the reads of
    them per computing cell (:func:`shared_reads`, per field; the row neighbours a
    coarsened thread holds are its registers); ``coef_reads`` / ``coef_l1_bytes``:
    the distinct reads of read-only arrays and their bytes. The one-statement form has one
    LevelWork, the update's (:func:`level_work`).
    """

    writes: tuple[str, ...]
    flops: int
    mixes: tuple[OpMix, ...]
    staged: tuple[str, ...]
    smem_planes: float
    smem_reads: float
    coef_reads: int = 0
    coef_l1_bytes: int = 0

    @property
    def mix(self) -> OpMix:
        """The level's instructions: every statement of the sub-step."""
        return OpMix.total(self.mixes)


def level_work(info: StencilInfo, plan: BlockingPlan) -> tuple[LevelWork, ...]:
    """One :class:`LevelWork` per sub-step, in execution order.

    The one-statement form: its update in the plan's mode (:meth:`OpMix.of`), its
    shared-memory reads (:func:`smem_reads_per_thread`) and the plan's shared planes (its
    window, and the older levels read at in-plane neighbours). A time step of several
    statements: per sub-step, what :func:`substep_work` counts; with one barrier per step,
    every level stages the fields any sub-step reads at in-plane neighbours (the one
    ``SHARE`` of every level, :attr:`~an5dpy.ir.StencilInfo.step_shared_fields`)."""
    if info.coupled:
        works = tuple(substep_work(info, sub, plan) for sub in info.substeps)
        if plan.barriers is not Barriers.STEP:
            return works
        staged = tuple(info.fields[f].name for f in info.step_shared_fields)
        return tuple(replace(w, staged=staged,
                             smem_planes=len(staged) * plan.window_smem_planes)
                     for w in works)
    coefs = CoefficientReads.of(info)
    stores, reads = coarsened_shared_traffic(info, plan)
    return (LevelWork((info.array,), info.flops_per_cell, (OpMix.of(info, plan.mode),),
                      (info.array,), stores, reads, coefs.reads, coefs.l1_bytes),)


def holds_row_neighbours(plan: BlockingPlan) -> bool:
    """Whether the model counts a coarsened thread's row neighbours that it holds as its
    registers (:func:`coarsened_shared_traffic`): in a cell-major plane
    (:attr:`~an5dpy.blocking.plan.BlockingPlan.cell_major`) and with warp shuffles, both
    2D nondiag, where every other row neighbour is one load or one shuffle."""
    return plan.cell_major or plan.barriers is Barriers.SHUFFLE


def coarsened_shared_traffic(info: StencilInfo, plan: BlockingPlan) -> tuple[float, float]:
    """Shared-memory stores and reads per cell and level op of the one-statement update
    (:func:`smem_reads_per_thread`, the plan's shared planes), on average over a thread's
    cells. A thread of ``C`` cells that :func:`holds_row_neighbours` reads a row
    neighbour ``dy`` cells away from its own register where it holds that cell, so of its
    cells ``min(|dy|, C)`` load (or shuffle) it, and it stores only the cells other
    threads read (:attr:`~an5dpy.blocking.plan.BlockingPlan.shared_cells`; shuffles store
    none, :func:`an5dpy.perf.model.shared_stores`). Elsewhere one load per distinct
    offset and a store per plane: a coarsened 3D thread holds its row neighbours along
    dimension 1 too, but counted so, the model ranks 3D coarsened plans above the
    one-cell plans that measure faster (their registers cost more than it charges;
    artifact/H200/coarsen.md), so the fitted counts stay."""
    reads = smem_reads_per_thread(info, plan.mode)
    c = plan.coarsen
    if not holds_row_neighbours(plan):
        return plan.smem_planes, reads
    rows = info.row_offsets
    reads += sum(min(abs(dy), c) for dy in rows) / c - len(rows)
    return plan.smem_planes * len(plan.shared_cells) / c, reads


def substep_work(info: StencilInfo, sub: SubStep, plan: BlockingPlan) -> LevelWork:
    """A level op of sub-step ``sub`` (as the kernels and the simulator run it): each field
    the sub-step reads at an in-plane offset is staged in shared memory (its centre plane,
    or all 2r+1 in mode none) and read there at each distinct offset (:func:`shared_reads`);
    its statements' values are evaluated once each (reads of one field at one offset are
    shared between them); each distinct read of a read-only array is one load."""
    offsets: dict[str, set[tuple[int, ...]]] = {f.name: set() for f in info.fields}
    coefs: set[tuple[str, tuple]] = set()
    for _, value in sub.updates:
        for e in walk(value):
            if isinstance(e, Read):
                offsets[e.array].add(e.offset)
            elif isinstance(e, CoefRead):
                coefs.add((e.array, e.index))
    reads = {name: shared_reads(sorted(offs), plan.mode) for name, offs in offsets.items()}
    staged = tuple(name for name in offsets if reads[name])
    return LevelWork(
        writes=tuple(name for name, _ in sub.updates), flops=sum(sub.flops),
        mixes=tuple(OpMix.of_expr(value) for _, value in sub.updates), staged=staged,
        smem_planes=len(staged) * plan.window_smem_planes, smem_reads=sum(reads.values()),
        coef_reads=len(coefs),
        coef_l1_bytes=sum(WORD_BYTES[info.coefficient(name).elem_type] for name, _ in coefs))


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


def occupancy(plan: BlockingPlan, gpu: GpuSpec, degree: int | None = None,
              regs: int | None = None) -> Occupancy:
    """Blocks per SM: min of the thread, shared-memory, register and block limits.

    ``regs`` (per thread) defaults to :meth:`BlockingPlan.register_estimate` of ``degree``;
    either is rounded up to a multiple of 8 (the allocation granularity; a thread of the
    most registers, 255, takes 256). 0 blocks per SM means the plan cannot run on this GPU.
    """
    d = plan.depth if degree is None else degree
    count = regs if regs is not None else plan.register_estimate(d)
    r = round_up(count, REGISTER_GRANULE)
    nthr = plan.nthreads
    smem = plan.smem_bytes
    limits = {
        "threads": gpu.max_threads_per_sm // nthr,
        # warp shuffles: no shared memory to share out
        **({"smem": gpu.smem_per_sm // smem if smem <= gpu.smem_per_block else 0}
           if smem else {}),
        "regs": (gpu.regs_per_sm // (r * nthr)
                 if count <= gpu.max_regs_per_thread and r * nthr <= gpu.regs_per_block
                 else 0),
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
            inner, outer = level_planes(rng, T)
            interior[T] += m * inner
            boundary[T] += m * outer
    return n, tuple(interior), tuple(boundary)


def level_planes(rng: BlockRanges, level: int) -> tuple[int, int]:
    """(interior, streaming-boundary) planes level ``level`` produces in one block."""
    first, last = rng.first(level), rng.last(level)
    if last < first:
        return 0, 0
    inner = max(0, min(last, rng.hi) - max(first, rng.lo) + 1)
    return inner, last - first + 1 - inner
