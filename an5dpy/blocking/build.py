"""Construction of the schedule: the ops of every step of every phase of every kernel,
their registers (fixed rings) and shared buffers (double buffering); see
:mod:`an5dpy.blocking.ops` for what the schedule is."""

from __future__ import annotations

from dataclasses import replace

from an5dpy.blocking.ops import (PUBLISHES_STEP, Accumulate, Boundary, Calc, KernelSchedule,
                                 Load, Op, Phase, Reg, Schedule, Share, Step, Store, Sync)
from an5dpy.blocking.plan import Barriers, BlockingPlan, Mode, round_up
from an5dpy.errors import InternalError


def chunk_steps(degree: int, ring: int, barriers: Barriers = Barriers.LEVEL) -> int:
    """Steps per chunk: a multiple of the ring with an even number of level ops, or with
    one barrier per step an even number of steps (each level's buffers alternate from
    step to step)."""
    if barriers is Barriers.SHUFFLE:  # no shared buffers to alternate
        return ring
    ops = ring if barriers is Barriers.STEP else ring * degree
    return ring if ops % 2 == 0 else 2 * ring


def head_length(kind: str, degree: int, r: int, unroll: int) -> int:
    """Steps until every level is past the lower boundary / halo (rounded to a chunk)."""
    fill = (degree + 1) * r if kind == "lowermost" else 2 * degree * r
    return round_up(fill, unroll)


class _Builder:
    """Assigns shared-memory buffers along a phase's op sequence."""

    def __init__(self, plan: BlockingPlan, degree: int):
        self.mode = plan.mode
        self.d = degree
        self.r = plan.stream_radius
        self.ring = plan.slots(degree)
        self.reach_lo = plan.reach[0]
        self.levels = plan.levels
        # the fields of a time step of several statements change buffer parity at their
        # own sub-step, so each level loads its boundary values (no level T-2 copy)
        self.coupled = plan.coupled
        self.plan = plan

    def slot(self, plane: int) -> int:
        return plane % self.ring

    def reg(self, level: int, plane: int) -> Reg:
        if self.mode is Mode.ASSOC and level == 0:
            return Reg(0, 0)
        return Reg(level, self.slot(plane))

    def window(self, level: int, plane: int) -> tuple[Reg, ...]:
        return tuple(self.reg(level, plane + k) for k in range(-self.r, self.r + 1))

    def level_op(self, level: int, plane: int, kind: str) -> Op | None:
        """The op of level ``level`` (1..d) producing local plane ``plane``.

        ``kind``: 'calc' (interior), 'boundary' (streaming boundary plane), for assoc also
        the consume/complete flags through :meth:`assoc_op`. Buffers are filled in later.
        """
        d = self.d
        # the update's reads of older levels: level T-lag's ring at plane + dz (the loaded
        # levels -1, -2, .. for T < lag)
        hist = tuple(self.reg(level - o.lag, plane + o.dz) for o in self.levels.older)
        if level == d:
            # a rotating launch also stores its levels d-1, d-2, .. of the plane
            also = tuple(self.reg(d - m, plane)
                         for m in range(1, self.levels.stored_levels(d)))
            return Store(d, self.window(d - 1, plane), plane, -1, hist, also)
        # boundary cells of level T >= 2 copy level T-2's value where the two share a
        # buffer (two time buffers); with three, each level loads its own
        shares_buffer = level >= 2 and self.levels.buffers == 2 and not self.coupled
        prev = self.reg(level - 2, plane) if shares_buffer else None
        if kind == "boundary":
            return Boundary(level, self.reg(level, plane), plane, prev)
        return Calc(level, self.reg(level, plane), self.window(level - 1, plane), plane, -1,
                    prev, hist)

    def load(self, plane: int, boundary: bool = False) -> Load:
        """Level 0 of ``plane`` and the older levels -1, -2, .. where the update reads them;
        on a streaming-boundary plane only where some update reads them away from the
        cell (level 1 at a boundary plane is a boundary value, and no other read there)."""
        levels = self.levels
        older = ()
        if not boundary or levels.offset_reads:
            older = tuple(Reg(-m, self.slot(plane)) for m in range(1, levels.loaded + 1))
        return Load(self.reg(0, plane), plane, boundary, older)

    def assoc_op(self, level: int, plane: int, consume: bool, complete: str | None) -> Op | None:
        store = level == self.d and complete == "calc"
        if level == self.d and complete == "boundary":
            complete = None  # nobody reads the last level's boundary planes
        if not consume and complete is None:
            return None
        arriving = plane + self.r
        accs = tuple(self.reg(level, plane + j) for j in range(2 * self.r + 1))
        return Accumulate(level, self.reg(level - 1, arriving), accs, plane, -1,
                          consume, complete, store, level == self.d)

    def assign_buffers(self, steps: list[list[Op]], first: int, every_level_op: bool) -> tuple[Step, ...]:
        """Number barrier ops 0,1,0,1,... starting at ``first``; with one barrier per step,
        split each step's level ops instead (:meth:`share_steps`).

        ``every_level_op``: in guarded chunks each level op position owns a barrier even
        when it is skipped at run time.
        """
        if self.plan.barriers is Barriers.STEP:
            return self.share_steps(steps)
        if self.plan.barriers is Barriers.SHUFFLE:  # no buffer, no barrier
            return tuple(Step(index, tuple(replace(op, buf=0, shuffled=True)
                                           if isinstance(op, (Calc, Store)) else op
                                           for op in ops))
                         for index, ops in steps)
        parity = first
        out = []
        for index, ops in steps:
            new_ops = []
            for op in ops:
                if isinstance(op, Sync):
                    parity = first  # the chunk after the barrier starts over
                elif every_level_op and not isinstance(op, Load) or op.barrier:
                    op = _with_buf(op, parity)
                    parity ^= 1
                new_ops.append(op)
            out.append(Step(index, tuple(new_ops)))
        return tuple(out)

    def share_steps(self, steps: list[tuple[int, list[Op]]]) -> tuple[Step, ...]:
        """One barrier per step: each level op's input plane is written to the level's
        buffer of the step's parity by a :class:`Share` at the step's start, one
        :class:`Sync` publishes them all, then the ops evaluate in their order (level
        T's newest input, level T-1's plane computed in this step, is read from the
        thread's own register only). A phase's steps are counted from 0 and every phase
        has an even number of steps or ends with a barrier, so the parities continue
        across phases. A step with no level op to feed needs no barrier; such steps only
        open a head, before any shared read."""
        out, fed = [], False
        for index, ops in steps:
            parity = index % 2
            shares, new_ops = [], []
            for op in ops:
                if isinstance(op, (Calc, Store)):
                    buf = self.plan.smem_buffer(op.level, parity)
                    shares.append(Share(op.level, op.ins[self.r], op.plane, buf))
                    op = replace(op, buf=buf, shared=True)
                new_ops.append(op)
            if shares:
                new_ops = [*shares, Sync(why=PUBLISHES_STEP), *new_ops]
                fed = True
            elif fed:
                raise InternalError(f"step {index} shares no plane after a step that did")
            out.append(Step(index, tuple(new_ops)))
        return tuple(out)


def _with_buf(op: Op, buf: int) -> Op:
    return replace(op, buf=buf)


def _with_load(ops: list[Op], load: Load | None) -> list[Op]:
    """Place the load of the next plane after the last op that reads a register it
    overwrites (the oldest plane of level 0's ring, and of the loaded older levels'):
    level 1's window; level 2's boundary copy (``prev``) or its read of level 0; any
    level's read of a loaded older level. The levels after it hide the load's latency:
    each step's plane is loaded one step before its first use."""
    if load is None:
        return ops
    overwritten = set(load.registers())
    at = 0
    for i, op in enumerate(ops):
        # level 1's op reads the overwritten plane in the steady state; in a head it may be
        # a boundary op that does not, but the load stays after it all the same
        if op.level == 1 or overwritten & set(op.registers()):
            at = i + 1
    return ops[:at] + [load] + ops[at:]


def _count_barriers(steps: list[tuple[int, list[Op]]]) -> int:
    return sum(1 for _, ops in steps for op in ops if op.barrier)


def build_kernel_schedule(plan: BlockingPlan, degree: int, static_heads: bool = True
                          ) -> KernelSchedule:
    """The kernel of temporal degree ``degree``.

    ``static_heads=False`` builds a *compact* kernel: no unrolled heads (the guarded tail
    chunk fills the pipeline too) and chunks of exactly 2r+1 steps, closed by a barrier
    when their level-op count is odd. It is a fraction of the code, for remainder degrees
    and for stencils whose expression is so large that unrolled heads make nvcc slow.
    """
    b = _Builder(plan, degree)
    d, r, ring = degree, plan.stream_radius, plan.slots(degree)
    unroll = chunk_steps(d, ring, plan.barriers) if static_heads else ring
    closing_sync = not static_heads and chunk_steps(d, ring, plan.barriers) != ring
    assoc = plan.mode is Mode.ASSOC

    def head(kind: str) -> Phase:
        n = head_length(kind, d, r, unroll)
        steps: list[tuple[int, list[Op]]] = []
        # In a lowermost block local planes 0..r-1 lie below the interior; those below
        # r - reach_lo are outside the array and never read, so nothing touches them.
        first_real = r - b.reach_lo if kind == "lowermost" else 0
        for h in range(n):
            ops: list[Op] = []
            nxt = h + 1  # the plane loaded in this step, consumed from the next one
            load = b.load(nxt, kind == "lowermost" and nxt < r) if nxt >= first_real else None
            for level in range(1, d + 1):
                p = h - level * r
                if kind == "lowermost":
                    first_prev, first = first_real, (r if level == d else first_real)
                else:
                    first_prev, first = (level - 1) * r, level * r
                if assoc:
                    q = p + r
                    consume = q >= first_prev
                    if p < first or p < 0:
                        complete = None
                    elif kind == "lowermost" and p < r:
                        complete = "boundary"
                    else:
                        complete = "calc"
                    op = b.assoc_op(level, p, consume, complete)
                else:
                    if p < first or p < 0:
                        op = None
                    else:
                        boundary = kind == "lowermost" and p < r
                        op = b.level_op(level, p, "boundary" if boundary else "calc")
                if op is not None:
                    ops.append(op)
            steps.append((h, _with_load(ops, load)))
        first_buf = _count_barriers(steps) % 2
        return Phase(f"head_{kind}", b.assign_buffers(steps, first_buf, False), False, False)

    def chunk(name: str, guarded: bool) -> Phase:
        steps: list[tuple[int, list[Op]]] = []
        for k in range(unroll):
            ops: list[Op] = []
            for level in range(1, d + 1):
                p = k - level * r
                if assoc:
                    ops.append(b.assoc_op(level, p, True, "calc"))
                else:
                    ops.append(b.level_op(level, p, "calc"))
            ops = _with_load(ops, b.load(k + 1))
            if closing_sync and k == unroll - 1:
                ops.append(Sync())
            steps.append((k, ops))
        return Phase(name, b.assign_buffers(steps, 0, guarded), True, guarded)

    heads = {"lowermost": head("lowermost"), "middle": head("middle")} if static_heads else {}
    prologue = Phase("prologue", (Step(0, (b.load(0),)),), False, True)
    return KernelSchedule(d, r, ring, unroll, heads,
                          chunk("inner", False), chunk("tail", True), plan.reach, prologue)


#: Above this many expression nodes in the unrolled heads of a kernel, heads are left out
#: (the compact kernel): nvcc's front end takes minutes on box3d4r's heads otherwise.
STATIC_HEAD_BUDGET = 20000


def static_head_degrees(plan: BlockingPlan, flops_per_cell: int) -> frozenset[int]:
    """Degrees whose kernel gets unrolled heads: the plan's own degree (the launches that
    do nearly all the work) unless its heads would be huge. Remainder degrees run once or
    twice per run and get compact kernels."""
    d, r, ring = plan.depth, plan.stream_radius, plan.slots()
    unroll = chunk_steps(d, ring, plan.barriers)
    head_steps = sum(head_length(k, d, r, unroll) for k in ("lowermost", "middle"))
    size = head_steps * d * max(1, flops_per_cell)
    return frozenset({d}) if size <= STATIC_HEAD_BUDGET else frozenset()


def build_schedule(plan: BlockingPlan, degrees: tuple[int, ...] | None = None,
                   static_heads: frozenset[int] | None = None) -> Schedule:
    """Kernels for ``degrees`` (default: every degree a launch plan can need).
    ``static_heads`` lists the degrees built with unrolled heads (default: all)."""
    degrees = degrees or plan.kernel_degrees()
    heads = set(degrees) if static_heads is None else static_heads
    return Schedule(plan, tuple(build_kernel_schedule(plan, d, d in heads) for d in degrees))


