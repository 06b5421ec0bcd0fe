"""Run-time resolution of a kernel for one stream block: which phases it runs, and what
each guarded op does there (run, become a boundary op, or be skipped). The simulator
executes these traces and the model counts their planes; :mod:`an5dpy.cuda.macros`
builds the same decisions as C. The plane predicates of both are the objects of
:mod:`an5dpy.blocking.guards`."""

from __future__ import annotations

from dataclasses import dataclass, replace

from an5dpy.blocking.guards import BOUNDARY_PLANE, EXISTS, LOADS, STORES
from an5dpy.blocking.ops import (Accumulate, Boundary, Calc, KernelSchedule, Load, Op, Share,
                                 Store, Sync)

@dataclass(frozen=True)
class BlockRanges:
    """Local (relative to ``base``) plane ranges of one stream block for degree ``d``.

    Level T produces planes ``[first(T), last(T)]``; the interior is ``[lo, hi]``;
    the block stores ``[s0, s1)``. ``base`` is the first plane loaded, in grid planes.
    """

    base: int
    s0: int
    s1: int
    lo: int
    hi: int
    d: int
    r: int
    reach_lo: int = -1  # -1: the radius
    reach_hi: int = -1

    @staticmethod
    def of(S0: int, S1: int, zlo: int, zhi: int, d: int, r: int,
           reach: tuple[int, int] | None = None) -> "BlockRanges":
        base = max(S0 - d * r, zlo - r)
        lo_reach, hi_reach = reach if reach is not None else (r, r)
        return BlockRanges(base, S0 - base, S1 - base, zlo - base, zhi - base, d, r,
                           lo_reach, hi_reach)

    @property
    def below(self) -> int:
        return self.r if self.reach_lo < 0 else self.reach_lo

    @property
    def above(self) -> int:
        return self.r if self.reach_hi < 0 else self.reach_hi

    def exists(self, plane: int) -> bool:
        """Whether the plane is ever read: inside the interior or within the reach of it."""
        return EXISTS.holds(self, plane)

    def first(self, level: int) -> int:
        if level == self.d:
            return self.s0
        return max(self.s0 - (self.d - level) * self.r, self.lo - self.r)

    def last(self, level: int) -> int:
        if level == self.d:
            return self.s1 - 1
        return min(self.s1 - 1 + (self.d - level) * self.r, self.hi + self.r)

    def produces(self, level: int, plane: int) -> bool:
        return self.first(level) <= plane <= self.last(level)

    def is_boundary(self, plane: int) -> bool:
        """Whether the plane is a streaming-boundary plane (outside the interior)."""
        return BOUNDARY_PLANE.holds(self, plane)

    def stores(self, plane: int) -> bool:
        """Whether the block stores the plane."""
        return STORES.holds(self, plane)

    def loads(self, plane: int) -> bool:
        """Whether a guarded load of the plane runs: it exists and is not past
        ``last_load``."""
        return LOADS.holds(self, plane)

    @property
    def last_load(self) -> int:
        return min(self.last(0), self.hi + self.above)

    @property
    def plain_end(self) -> int:
        """Last plane a plain (unguarded) load may fetch: interior and within the loads;
        a step ``h`` is plain when ``h + 1 <= plain_end`` (it loads plane ``h + 1``)."""
        return min(self.last_load, self.hi)

    @property
    def steps(self) -> int:
        """Steps until the last store: last stored plane + d*r, plus one."""
        return self.s1 - 1 + self.d * self.r + 1

    def head_kind(self) -> str | None:
        """Which static head this block may run, or None for the guarded-only path."""
        if self.s0 == self.lo:
            return "lowermost"
        if self.s0 - self.d * self.r >= self.lo:
            return "middle"  # every plane it loads is interior
        return None


@dataclass(frozen=True)
class ResolvedOp:
    """An op as one block executes it: absolute local planes, run-time choices made.

    ``op`` is None for a guarded op position that is skipped (it still runs its barrier
    when ``barrier`` is set).
    """

    op: Op | None
    barrier: bool
    buf: int = -1


def block_trace(kernel: KernelSchedule, rng: BlockRanges) -> tuple[tuple[str, tuple[ResolvedOp, ...]], ...]:
    """The ops one stream block executes, in order, grouped by phase instance.

    This is the kernel's control flow: the code generator emits the same decisions as
    C control flow, the simulator executes this trace.
    """
    out: list[tuple[str, tuple[ResolvedOp, ...]]] = []
    kind = rng.head_kind()
    s = 0
    if kernel.radius and (rng.below, rng.above) != kernel.reach:
        raise ValueError("block ranges and kernel disagree on the streaming reach")
    out.append(("prologue", tuple(resolve_guarded(op, 0, rng, kernel)
                                  for op in kernel.prologue.ops)))
    if kernel.compact:
        # Fill with guarded chunks up to the first store, where every level is past the
        # lower boundary; from there the pipeline is steady until plain_end.
        fill = min(rng.s0 + kernel.degree * kernel.radius, rng.steps)
        while s < fill:
            out.append(("tail", tuple(resolve_guarded(op, s, rng, kernel)
                                      for op in kernel.tail.ops)))
            s += kernel.unroll
        kind = None
        while s + kernel.unroll <= rng.plain_end:
            out.append(("inner", tuple(_plain(op, s) for op in kernel.inner.ops)))
            s += kernel.unroll
    if kind is not None:
        head = kernel.heads[kind]
        n = len(head.steps)
        if n <= rng.plain_end:  # every op plain, the next plane's load included
            out.append((head.name, tuple(_plain(op, 0) for op in head.ops)))
            s = n
            while s + kernel.unroll <= rng.plain_end:
                out.append(("inner", tuple(_plain(op, s) for op in kernel.inner.ops)))
                s += kernel.unroll
    while s < rng.steps:
        out.append(("tail", tuple(resolve_guarded(op, s, rng, kernel) for op in kernel.tail.ops)))
        s += kernel.unroll
    return tuple(out)


def shift(op: Op, s: int) -> Op:
    return replace(op, plane=op.plane + s) if s else op


def _plain(op: Op, s: int) -> ResolvedOp:
    op = shift(op, s) if not isinstance(op, Sync) else op
    return ResolvedOp(op, op.barrier, getattr(op, "buf", -1))


def resolve_guarded(op: Op, s: int, rng: BlockRanges, kernel: KernelSchedule) -> ResolvedOp:
    """Decide a tail op for one block: run it, turn it into a boundary op, or skip it.

    :mod:`an5dpy.cuda.macros` builds the same decisions as C (the ``G_*`` macros), over
    the same plane predicates (:mod:`an5dpy.blocking.guards`: ``rng.loads``, ``exists``,
    ``is_boundary`` and ``stores`` here, their ``AN5D_*`` macros there), so the simulator
    and the model run what the kernels run. The checks are only those
    needed for correctness, because each one costs registers in every thread: loads stay
    inside the planes the stencil can read; a streaming-boundary plane gets its boundary
    values (or nothing, if no stencil reads it); stores cover exactly the block's planes.
    A level op outside its level's range otherwise just runs: its inputs may be
    meaningless, but its result is never stored, and it overwrites its ring slot at the
    same step as the in-range pipeline would (the step formula is the same), so nothing
    valid is lost. ``tests/blocking/test_trace.py`` checks this by symbolic execution.
    """
    if isinstance(op, Sync):
        return ResolvedOp(op, True)
    op = shift(op, s)
    match op:
        case Load():
            if not rng.loads(op.plane):
                return ResolvedOp(None, False)
            return ResolvedOp(replace(op, boundary=rng.is_boundary(op.plane)), False)
        case Share():  # unguarded: where its reader does not run, nobody reads it
            return ResolvedOp(op, False, op.buf)
        case Store():
            return ResolvedOp(op if rng.stores(op.plane) else None, op.barrier, op.buf)
        case Calc():
            if rng.is_boundary(op.plane):
                if not rng.exists(op.plane):
                    return ResolvedOp(None, op.barrier, op.buf)
                return ResolvedOp(Boundary(op.level, op.out, op.plane, op.prev), op.barrier,
                                  op.buf)
            return ResolvedOp(op, op.barrier, op.buf)
        case Accumulate():
            consume = rng.exists(op.plane + kernel.radius)
            if rng.is_boundary(op.plane):
                complete = "boundary" if rng.exists(op.plane) and not op.final else None
            else:
                complete = "calc"
            store = op.final and complete == "calc" and rng.stores(op.plane)
            if not consume and complete is None:
                return ResolvedOp(None, True, op.buf)
            return ResolvedOp(replace(op, consume=consume, complete=complete, store=store),
                              True, op.buf)
    raise TypeError(f"no guarded form of {op!r}")


