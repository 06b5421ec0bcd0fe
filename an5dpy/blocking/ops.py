"""The N.5D blocking schedule as data: registers, ops, phases, kernels (AN5D paper
sections 4.1-4.3). :mod:`an5dpy.blocking.build` constructs it, :mod:`an5dpy.blocking.trace`
resolves it for one stream block, :mod:`an5dpy.blocking.printing` prints it.

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
Where the update reads an older level below its plane, or a launch stores several levels,
rings are longer (:meth:`~an5dpy.blocking.plan.TimeLevels.slots`).

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
stays static. With one barrier per step (:class:`~an5dpy.blocking.plan.Barriers`), each
level has two buffers of its own instead, alternating from step to step, and a step opens
with a :class:`Share` per level op and one :class:`Sync` (:mod:`an5dpy.blocking.build`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from an5dpy.blocking.plan import BlockingPlan

@dataclass(frozen=True, order=True)
class Reg:
    level: int
    slot: int

    def __str__(self) -> str:
        # prefixed like every name of the generated code, which the frontend reserves;
        # levels -1, -2, .. are the older levels a rotating program's loads bring along
        level = "old" if self.level == -1 else f"old{-self.level}" if self.level < 0 \
            else self.level
        return f"an5d_reg_{level}_{self.slot}"


@dataclass(frozen=True)
class Load:
    """Level 0: load local plane ``plane`` into ``out``.

    Interior cells come from the source buffer, boundary cells from the buffer that holds
    the boundary values of even levels; ``boundary`` marks a streaming-boundary plane
    (all its cells are boundary cells). ``older``: where the update reads levels before
    the newest (:attr:`~an5dpy.blocking.plan.TimeLevels.older`), the registers that
    receive levels -1, -2, .. of the same plane, which the first levels read (on
    boundary planes only where some level reads them away from the cell).
    """

    out: Reg
    plane: int
    boundary: bool = False
    older: tuple[Reg, ...] = ()

    level = 0
    barrier = False

    @property
    def name(self) -> str:
        if self.boundary:
            return "LOAD_BOUNDARY_LEVELS" if self.older else "LOAD_BOUNDARY"
        return "LOAD_LEVELS" if self.older else "LOAD"

    def registers(self) -> tuple[Reg, ...]:
        return (self.out, *self.older)


@dataclass(frozen=True)
class Calc:
    """Level ``level`` plane ``plane`` from level-1 planes ``plane-r .. plane+r`` (``ins``).

    Boundary cells take the level's boundary value instead: for level 1 a load from the
    odd buffer, for level T >= 2 the level T-2 value of the same cell (same buffer parity,
    boundary cells never change), still in ``prev``: level T-2 overwrites that slot only
    at step plane + 2r + 1 + (T-2)r, after this op at step plane + Tr. With three time
    buffers levels T and T-2 have different buffers, so ``prev`` is None and every
    level's boundary values are loaded from the buffer of its level modulo 3.

    ``hist`` holds, for each entry of :attr:`~an5dpy.blocking.plan.TimeLevels.older`
    (lag, dz), the register of level T-lag at plane ``plane + dz`` that the update
    reads: that level's ring, or a loaded older level's for T < lag.
    """

    level: int
    out: Reg
    ins: tuple[Reg, ...]
    plane: int
    buf: int
    prev: Reg | None = None  # level T-2's register of the same plane (T >= 2)
    hist: tuple[Reg, ...] = ()  # the older levels' registers the update reads
    #: Its input plane is already in shared buffer ``buf`` (a :class:`Share` before the
    #: step's barrier, :attr:`~an5dpy.blocking.plan.Barriers.STEP`): the op only evaluates.
    shared: bool = False
    #: Its input plane's row neighbours come from the warp's other lanes by shuffles
    #: (:attr:`~an5dpy.blocking.plan.Barriers.SHUFFLE`): no shared memory, no barrier.
    shuffled: bool = False

    @property
    def barrier(self) -> bool:
        return not self.evaluates_only

    @property
    def evaluates_only(self) -> bool:
        """The op writes no shared memory and waits at no barrier of its own."""
        return self.shared or self.shuffled

    @property
    def name(self) -> str:
        return f"CALC{self.level}" + (EVALUATE_ONLY if self.evaluates_only else "")

    def registers(self) -> tuple[Reg, ...]:
        return (self.out, *self.ins, *((self.prev,) if self.prev else ()), *self.hist)


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
    """Compute the launch's last level at ``plane`` from ``ins`` and store it.

    ``hist`` as for :class:`Calc`. ``also``: a rotating program's launch also stores its
    levels ``degree - 1``, ``degree - 2``, .. of the plane, from these registers (the
    first is ``ins``' centre), as many as the next launch reads
    (:meth:`~an5dpy.blocking.plan.TimeLevels.stored_levels`)."""

    level: int
    ins: tuple[Reg, ...]
    plane: int
    buf: int
    hist: tuple[Reg, ...] = ()
    also: tuple[Reg, ...] = ()
    shared: bool = False  # as for :class:`Calc`
    shuffled: bool = False  # as for :class:`Calc`

    @property
    def barrier(self) -> bool:
        return not self.evaluates_only

    @property
    def evaluates_only(self) -> bool:
        return self.shared or self.shuffled

    @property
    def name(self) -> str:
        return (("STORE_LEVELS" if self.also else "STORE")
                + (EVALUATE_ONLY if self.evaluates_only else ""))

    def registers(self) -> tuple[Reg, ...]:
        return (*self.ins, *self.hist, *self.also)


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
class Share:
    """With one barrier per step (:attr:`~an5dpy.blocking.plan.Barriers.STEP`): write
    level ``level``'s input plane ``plane`` (level ``level - 1``'s, in ``src``) to shared
    buffer ``buf`` for the in-plane reads of the level's op after the step's barrier.
    It runs unguarded in a tail: where the op turns out a boundary op or is skipped,
    nobody reads what it wrote."""

    level: int
    src: Reg
    plane: int
    buf: int

    barrier = False
    name = "SHARE"

    def registers(self) -> tuple[Reg, ...]:
        return (self.src,)


#: Why a lone barrier is there (:attr:`Sync.why`).
CLOSES_CHUNK = "closes a chunk of odd length, so the next may start on buffer 0"
PUBLISHES_STEP = "publishes the step's shared planes to every level"


@dataclass(frozen=True)
class Sync:
    """A lone barrier, ``why`` says what for: compact chunks whose buffers would not
    alternate across their end close with one (:data:`CLOSES_CHUNK`); with one barrier
    per step, each step's comes between its :class:`Share` ops and the level ops that
    read them (:data:`PUBLISHES_STEP`)."""

    plane: int = 0  # unused; keeps the op interface uniform
    why: str = CLOSES_CHUNK
    level = -1
    barrier = True
    name = "SYNC"

    def registers(self) -> tuple[Reg, ...]:
        return ()


#: The macro suffix of a level op that only evaluates (its input plane already shared, or
#: its neighbours shuffled).
EVALUATE_ONLY = "_E"

#: Every op has ``level``, ``plane``, ``name`` (its macro's name), ``barrier`` (whether it
#: runs a barrier when executed as built) and ``registers()``; consumers that do more than
#: that (printer, code generator, simulator, guard resolution) each ``match`` on the union.
Op = Load | Calc | Boundary | Store | Accumulate | Share | Sync


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


