"""The N.5D blocking schedule as data (AN5D paper sections 4.1-4.3, DESIGN.md section 4).

A thread block streams over the outermost (streaming) dimension. Local plane ``q`` is
plane ``base + q`` of the grid, where ``base`` is the first plane the block loads. Step
``h`` has level ``T`` (1..d) produce plane ``h - T*r`` from level ``T-1``'s planes
``h - T*r - r .. h - T*r + r``; level ``d`` (the launch's temporal degree) is stored
straight to global memory. Level 0 is the plane loaded from global memory: plane ``h`` is
available in step ``h`` because it is loaded in step ``h - 1``, right after level 1's op
(the last reader of the ring slot it overwrites), so the later levels hide the load's
latency; a prologue loads plane 0. Within a step the order is level 1, LOAD of the next
plane (after level 2 when level 2 reads level 0's boundary copy), ..., level d, so a
ring of ``2r+1`` registers per level is exactly
enough: level T keeps plane ``q`` in slot ``q mod (2r+1)`` (fixed register allocation;
the ring never shifts, the loop body is unrolled so every register name is a constant).

Time levels have buffer parities: level T holds the values of time ``t0 + T``, which the C
program reads from buffer ``(src + T) % 2``. Boundary cells (never written by the loop
nest) keep each buffer's own values, so a boundary value at level T is loaded from that
buffer: the *source* buffer for even T and the *destination* buffer for odd T (boundary
cells of the destination are never written, so reading them during the launch is safe).
Streaming-boundary planes below and above the interior are therefore produced by
:class:`Boundary` ops (a load of that parity) in the level's own ring; in-plane boundary
cells are handled the same way inside every CALC. The paper holds the bottom boundary in
level bT-1's slots and reuses one copy for all levels, which is only right when both
buffers hold the same boundary values; we do not assume that.

A kernel (one per temporal degree) runs, per stream block:

* a **head** (static, unguarded) that fills the pipeline -- ``lowermost`` for a block that
  starts at the grid's first interior plane (levels begin with the boundary planes),
  ``middle`` for a block whose halo planes are all interior;
* an **inner** chunk of ``unroll`` steps, repeated while every op of the chunk is plain;
* a **tail**: a guarded chunk (same ops, each under a run-time range check) repeated until
  the last store; it drains the pipeline, handles the uppermost boundary, and any
  remainder. Blocks too short for their head, or whose halo planes straddle the lower
  boundary, run the guarded chunk from step 0. This is what makes streams shorter than the
  pipeline and grids smaller than one block work.

Every level op uses one of two shared-memory buffers and one barrier. Buffers alternate
along the executed sequence (double buffering): the head starts on the parity that makes
the first chunk start on buffer 0, and each chunk holds an even number of level ops.
Guarded ops that are skipped at run time still execute their barrier, so the alternation
stays static.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from an5dpy.blocking.plan import BlockingPlan, Mode

# --------------------------------------------------------------------------- registers and ops


@dataclass(frozen=True, order=True)
class Reg:
    level: int
    slot: int

    def __str__(self) -> str:
        return f"reg_{self.level}_{self.slot}"


@dataclass(frozen=True)
class Load:
    """Level 0: load local plane ``plane`` into ``out``.

    Interior cells come from the source buffer, boundary cells from the buffer that holds
    the boundary values of even levels; ``boundary`` marks a streaming-boundary plane
    (all its cells are boundary cells).
    """

    out: Reg
    plane: int
    boundary: bool = False

    level = 0
    barrier = False

    @property
    def name(self) -> str:
        return "LOAD_BOUNDARY" if self.boundary else "LOAD"

    def registers(self) -> tuple[Reg, ...]:
        return (self.out,)


@dataclass(frozen=True)
class Calc:
    """Level ``level`` plane ``plane`` from level-1 planes ``plane-r .. plane+r`` (``ins``).

    Boundary cells take the level's boundary value instead: for level 1 a load from the
    odd buffer, for level T >= 2 the level T-2 value of the same cell (same buffer parity,
    boundary cells never change), still in ``prev``: level T-2 overwrites that slot only
    at step plane + 2r + 1 + (T-2)r, after this op at step plane + Tr.
    """

    level: int
    out: Reg
    ins: tuple[Reg, ...]
    plane: int
    buf: int
    prev: Reg | None = None  # level T-2's register of the same plane (T >= 2)

    barrier = True

    @property
    def name(self) -> str:
        return f"CALC{self.level}"

    def registers(self) -> tuple[Reg, ...]:
        return (self.out, *self.ins) + ((self.prev,) if self.prev else ())


@dataclass(frozen=True)
class Boundary:
    """Level ``level`` at a streaming-boundary plane: the values of the buffer of parity
    level % 2 -- a load for level 1, a copy of level T-2's register (``prev``) above."""

    level: int
    out: Reg
    plane: int
    prev: Reg | None = None

    barrier = False

    @property
    def name(self) -> str:
        return f"BOUNDARY{self.level}"

    def registers(self) -> tuple[Reg, ...]:
        return (self.out,) + ((self.prev,) if self.prev else ())


@dataclass(frozen=True)
class Store:
    """Compute the launch's last level at ``plane`` from ``ins`` and store it."""

    level: int
    ins: tuple[Reg, ...]
    plane: int
    buf: int

    barrier = True
    name = "STORE"

    def registers(self) -> tuple[Reg, ...]:
        return self.ins


@dataclass(frozen=True)
class Accumulate:
    """Associative mode: level ``level`` consumes level-1 plane ``plane + r`` (in ``src``).

    The arriving plane goes to shared memory once; its in-plane partial sums are added to
    the accumulators ``accs`` of output planes ``plane .. plane + 2r`` (``accs[j]`` holds
    plane ``plane + j``; ``accs[2r]`` is started, ``accs[0]`` gets its last term).
    ``consume`` says whether the arrival happens, ``complete`` whether plane ``plane``
    is finished now (``"calc"``: apply the final scaling; ``"boundary"``: it is a
    streaming-boundary plane, load it), and ``store`` whether it is then stored.
    """

    level: int
    src: Reg
    accs: tuple[Reg, ...]
    plane: int
    buf: int
    consume: bool = True
    complete: str | None = "calc"
    store: bool = False
    final: bool = False  # the launch's last level (its results are stored, never passed on)

    @property
    def barrier(self) -> bool:
        return self.consume

    @property
    def name(self) -> str:
        return "ACC_STORE" if self.final else f"ACC{self.level}"

    def registers(self) -> tuple[Reg, ...]:
        return (self.src, *self.accs)


@dataclass(frozen=True)
class Sync:
    """A lone barrier. Compact chunks with an odd number of level ops end with one, so the
    next chunk may start on the same shared buffer the chunk ended with."""

    plane: int = 0  # unused; keeps the op interface uniform
    level = -1
    barrier = True
    name = "SYNC"

    def registers(self) -> tuple[Reg, ...]:
        return ()


#: Every op has ``level``, ``plane``, ``name`` (its macro's name), ``barrier`` (whether it
#: runs a barrier when executed as built) and ``registers()``; consumers that do more than
#: that (printer, code generator, simulator, guard resolution) each ``match`` on the union.
Op = Load | Calc | Boundary | Store | Accumulate | Sync


@dataclass(frozen=True)
class Step:
    """The ops of one step. ``index`` is the step number (absolute local step in heads,
    offset from the chunk start ``s`` in chunks); op planes follow the same convention."""

    index: int
    ops: tuple[Op, ...]


@dataclass(frozen=True)
class Phase:
    name: str
    steps: tuple[Step, ...]
    relative: bool  # planes are offsets from the chunk start s
    guarded: bool  # every op runs under a run-time range check

    @property
    def ops(self) -> tuple[Op, ...]:
        return tuple(op for st in self.steps for op in st.ops)

    def macro_sequence(self) -> tuple[str, ...]:
        return tuple(op.name for op in self.ops)


@dataclass(frozen=True)
class KernelSchedule:
    """The schedule of the kernel for temporal degree ``degree``."""

    degree: int
    radius: int  # streaming radius r
    ring: int  # 2r + 1
    unroll: int  # steps per chunk (a multiple of the ring, even op count)
    heads: dict[str, Phase] = field(hash=False)  # 'lowermost', 'middle'
    inner: Phase = None
    tail: Phase = None
    reach: tuple[int, int] = (0, 0)  # streaming reach below / above
    prologue: Phase | None = None  # guarded load of local plane 0, before any phase

    @property
    def head_steps(self) -> dict[str, int]:
        return {k: len(p.steps) for k, p in self.heads.items()}

    def registers(self) -> tuple[Reg, ...]:
        regs: set[Reg] = set()
        for phase in (*self.heads.values(), self.inner, self.tail):
            for op in phase.ops:
                regs.update(op.registers())
        return tuple(sorted(regs))

    @property
    def compact(self) -> bool:
        return not self.heads

    def kinds(self) -> dict[str, tuple[Phase | None, Phase, Phase]]:
        """Head, inner body and tail per stream-block kind.

        The tail is one guarded chunk for every kind: its range checks resolve to the
        uppermost boundary planes in a block that reaches the top of the grid. A compact
        kernel has no static head: the guarded chunk fills the pipeline.
        """
        if self.compact:
            return {kind: (None, self.inner, self.tail)
                    for kind in ("lowermost", "middle", "uppermost", "single")}
        return {
            "lowermost": (self.heads["lowermost"], self.inner, self.tail),
            "middle": (self.heads["middle"], self.inner, self.tail),
            "uppermost": (self.heads["middle"], self.inner, self.tail),
            "single": (self.heads["lowermost"], self.inner, self.tail),
        }


# --------------------------------------------------------------------------- construction


def round_up(n: int, k: int) -> int:
    return -(-n // k) * k


def chunk_steps(degree: int, ring: int) -> int:
    """Steps per chunk: a multiple of the ring with an even number of level ops."""
    return ring if (ring * degree) % 2 == 0 else 2 * ring


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
        self.ring = plan.ring
        self.reach_lo = plan.reach[0]

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
        if level == d:
            return Store(d, self.window(d - 1, plane), plane, -1)
        prev = self.reg(level - 2, plane) if level >= 2 else None
        if kind == "boundary":
            return Boundary(level, self.reg(level, plane), plane, prev)
        return Calc(level, self.reg(level, plane), self.window(level - 1, plane), plane, -1, prev)

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
        """Number barrier ops 0,1,0,1,... starting at ``first``.

        ``every_level_op``: in guarded chunks each level op position owns a barrier even
        when it is skipped at run time.
        """
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


def _with_buf(op: Op, buf: int) -> Op:
    return replace(op, buf=buf)


def _with_load(ops: list[Op], load: Load | None) -> list[Op]:
    """Place the load of the next plane after the last op that reads the ring slot it
    overwrites (level 0's plane h - 2r): level 1's window, and level 2's boundary copy
    (``prev``) when it has one. The levels after it hide the load's latency: each step's
    plane is loaded one step before its first use."""
    if load is None:
        return ops
    at = 0
    for i, op in enumerate(ops):
        if op.level == 1 or (op.level == 2 and getattr(op, "prev", None) is not None):
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
    d, r, ring = degree, plan.stream_radius, plan.ring
    unroll = chunk_steps(d, ring) if static_heads else ring
    closing_sync = not static_heads and (ring * d) % 2 == 1
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
            load = Load(b.reg(0, nxt), nxt, kind == "lowermost" and nxt < r) \
                if nxt >= first_real else None
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
            ops = _with_load(ops, Load(b.reg(0, k + 1), k + 1))
            if closing_sync and k == unroll - 1:
                ops.append(Sync())
            steps.append((k, ops))
        return Phase(name, b.assign_buffers(steps, 0, guarded), True, guarded)

    heads = {"lowermost": head("lowermost"), "middle": head("middle")} if static_heads else {}
    prologue = Phase("prologue", (Step(0, (Load(b.reg(0, 0), 0),)),), False, True)
    return KernelSchedule(d, r, ring, unroll, heads,
                          chunk("inner", False), chunk("tail", True), plan.reach, prologue)


@dataclass(frozen=True)
class Schedule:
    """All kernels of a plan: one per temporal degree the launch plan can need."""

    plan: BlockingPlan
    kernels: tuple[KernelSchedule, ...]

    def kernel(self, degree: int) -> KernelSchedule:
        for k in self.kernels:
            if k.degree == degree:
                return k
        raise KeyError(degree)


#: Above this many expression nodes in the unrolled heads of a kernel, heads are left out
#: (the compact kernel): nvcc's front end takes minutes on box3d4r's heads otherwise.
STATIC_HEAD_BUDGET = 20000


def static_head_degrees(plan: BlockingPlan, flops_per_cell: int) -> frozenset[int]:
    """Degrees whose kernel gets unrolled heads: the plan's own degree (the launches that
    do nearly all the work) unless its heads would be huge. Remainder degrees run once or
    twice per run and get compact kernels."""
    d, r, ring = plan.bt, plan.stream_radius, plan.ring
    unroll = chunk_steps(d, ring)
    head_steps = sum(head_length(k, d, r, unroll) for k in ("lowermost", "middle"))
    size = head_steps * d * max(1, flops_per_cell)
    return frozenset({d}) if size <= STATIC_HEAD_BUDGET else frozenset()


def build_schedule(plan: BlockingPlan, degrees: tuple[int, ...] | None = None,
                   static_heads: frozenset[int] | None = None) -> Schedule:
    """Kernels for ``degrees`` (default: every degree a launch plan can need).
    ``static_heads`` lists the degrees built with unrolled heads (default: all)."""
    from an5dpy.blocking.plan import degrees_needed
    degrees = degrees or degrees_needed(plan.bt)
    heads = set(degrees) if static_heads is None else static_heads
    return Schedule(plan, tuple(build_kernel_schedule(plan, d, d in heads) for d in degrees))


# --------------------------------------------------------------------------- run-time control


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
        return self.lo - self.below <= plane <= self.hi + self.above

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
        return plane < self.lo or plane > self.hi

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

    :mod:`an5dpy.cuda.macros` builds the same decisions as C (the ``G_*`` macros and the
    ``AN5D_*`` plane predicates), so the simulator and the model run what the kernels
    run. The checks are only those
    needed for correctness, because each one costs registers in every thread: loads stay
    inside the planes the stencil can read; a streaming-boundary plane gets its boundary
    values (or nothing, if no stencil reads it); stores cover exactly the block's planes.
    A level op outside its level's range otherwise just runs: its inputs may be
    meaningless, but its result is never stored, and it overwrites its ring slot at the
    same step as the in-range pipeline would (the step formula is the same), so nothing
    valid is lost. ``tests/blocking/test_schedule.py`` checks this by symbolic execution.
    """
    if isinstance(op, Sync):
        return ResolvedOp(op, True)
    op = shift(op, s)
    match op:
        case Load():
            if op.plane > rng.last_load or not rng.exists(op.plane):
                return ResolvedOp(None, False)
            return ResolvedOp(replace(op, boundary=rng.is_boundary(op.plane)), False)
        case Store():
            return ResolvedOp(op if rng.s0 <= op.plane < rng.s1 else None, True, op.buf)
        case Calc():
            if rng.is_boundary(op.plane):
                if not rng.exists(op.plane):
                    return ResolvedOp(None, True, op.buf)
                return ResolvedOp(Boundary(op.level, op.out, op.plane, op.prev), True, op.buf)
            return ResolvedOp(op, True, op.buf)
        case Accumulate():
            consume = rng.exists(op.plane + kernel.radius)
            if rng.is_boundary(op.plane):
                complete = "boundary" if rng.exists(op.plane) and not op.final else None
            else:
                complete = "calc"
            store = op.final and complete == "calc" and rng.s0 <= op.plane < rng.s1
            if not consume and complete is None:
                return ResolvedOp(None, True, op.buf)
            return ResolvedOp(replace(op, consume=consume, complete=complete, store=store),
                              True, op.buf)
    raise TypeError(f"no guarded form of {op!r}")


# --------------------------------------------------------------------------- printing


def plane_text(plane: int, relative: bool) -> str:
    """A plane as C: the number, or ``s``, ``s + k``, ``s - k`` relative to the chunk
    start ``s`` (the generated code and the schedule printer spell planes alike)."""
    if not relative:
        return str(plane)
    return "s" if plane == 0 else (f"s + {plane}" if plane > 0 else f"s - {-plane}")


def format_op(op: Op, relative: bool = False) -> str:
    q = plane_text(op.plane, relative)
    match op:
        case Sync():
            return "SYNC()"
        case Load():
            return f"{op.name}({op.out}, {q})"
        case Boundary():
            return f"{op.name}({op.out}, {op.prev if op.prev else q})"
        case Calc():
            ins = ", ".join(map(str, op.ins))
            prev = f", boundary from {op.prev}" if op.prev else ""
            return f"{op.name}({op.out}, {ins}, {q}, buf {op.buf}{prev})"
        case Store():
            return f"{op.name}({q}, {', '.join(map(str, op.ins))}, buf {op.buf})"
        case Accumulate():
            flags = []
            if op.consume:
                flags.append(f"take {op.src}")
            if op.complete:
                flags.append(f"finish {op.accs[0]} ({op.complete})")
            if op.store:
                flags.append("store")
            accs = ", ".join(map(str, op.accs))
            return f"{op.name}({q}; accs {accs}; {'; '.join(flags)}; buf {op.buf})"
    raise TypeError(f"not an op: {op!r}")


def format_schedule(schedule: Schedule) -> str:
    plan = schedule.plan
    lines = [f"schedule for {plan.describe()}, streaming radius {plan.stream_radius}"]
    for k in schedule.kernels:
        lines.append("")
        lines.append(f"kernel degree {k.degree}{' (compact)' if k.compact else ''}: "
                     f"unroll {k.unroll} steps, "
                     f"registers {', '.join(map(str, k.registers()))}")
        for phase in (k.prologue, *k.heads.values(), k.inner, k.tail):
            tag = "guarded, " if phase.guarded else ""
            where = "planes relative to chunk start s" if phase.relative else "local planes"
            lines.append(f"  {phase.name} ({tag}{where}):")
            for st in phase.steps:
                body = "; ".join(format_op(op, phase.relative) for op in st.ops)
                label = f"s+{st.index}" if phase.relative else str(st.index)
                lines.append(f"    step {label}: {body}")
    return "\n".join(lines)
