"""Blocking plans: the user's options checked against the stencil and the GPU.

A :class:`BlockingPlan` fixes everything about the N.5D blocking that does not depend on
the run-time grid size: temporal degree ``bt``, threads per in-plane dimension ``bs``,
stream-block length ``sl``, the optimisation mode, and what follows from them (halo,
compute region, registers, shared memory; AN5D paper section 4.1 and Table 1).
:class:`LaunchGeometry` adds the run-time sizes: blocks per dimension and stream blocks.

Dimension order everywhere is the array's: streaming dimension first, contiguous last.
The command line writes ``--bs`` contiguous dimension first (``--bs 64x16`` = 64 threads
along x), as the paper's tables do; :func:`parse_block_size` and :func:`format_block_size`
convert. Errors name options as keywords (``bt=0``, :class:`~an5dpy.errors.OptionError`);
the command line words them as its flags.
"""

from __future__ import annotations

import enum
import itertools
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Mapping

from an5dpy.errors import OptionError, UsageError
from an5dpy.ir import WORD_BYTES, StencilInfo

class Mode(enum.Enum):
    """How a kernel keeps the planes of a time level (AN5D paper section 4.2).

    ``NONDIAG``: registers for the column of every plane, shared memory for the centre
    plane only (diagonal-access-free stencils). ``ASSOC``: each arriving plane is added
    into per-plane accumulators (associative stencils). ``NONE``: all 2r+1 planes in
    shared memory. The values are the command line's spelling (``--opt``), which
    :meth:`BlockingPlan.describe` and :meth:`BlockingPlan.to_json` print.
    """

    NONDIAG = "nondiag"
    ASSOC = "assoc"
    NONE = "none"


class Barriers(enum.Enum):
    """Where a kernel's barriers publish the planes the levels share (mode nondiag).

    ``LEVEL``: every level op writes its input plane to shared memory and waits at its
    own barrier (two buffers in all, alternating along the op sequence: AN5D's
    schedule). ``STEP``: every level op of a streaming step writes its input plane first
    (each level its own buffer of the step's parity), one barrier for the whole step,
    then the levels evaluate. Level T reads its input plane's in-plane neighbours at
    plane ``h - T*r``, computed ``r`` steps earlier, so nothing a level computes in the
    step is needed in shared memory within it: ``d`` barriers per step become one, and
    the levels' evaluations are independent of each other's barriers. ``SHUFFLE``
    (2D): the block is one warp, so level T-1's row neighbours move between its lanes
    by warp shuffles; no shared memory and no barrier at all. Lanes at the warp's ends
    receive their own values where a neighbour would be off the block, which only cells
    outside the level's window read (the same cells that read the shared padding). The
    values are the command line's spelling (``--barriers``)."""

    LEVEL = "level"
    STEP = "step"
    SHUFFLE = "shuffle"


class IdleWarps(enum.Enum):
    """What the warps with no cell in a level's window do at that level's op (the level's
    window shrinks by the radius at each level, so halo rows of a block idle).

    ``SKIP``: where some warp of the block idles at a level, every level op there branches
    on the thread's bit of that level and idle warps jump over the evaluation (the
    branch's reconvergence and its tests cost every other warp instructions). ``COMPUTE``:
    no level op branches; every warp evaluates every level, its halo threads reading the
    shared padding and keeping values no thread in the window reads, and only boundary
    cells select their boundary value. Measured on the H200, COMPUTE ran star3d1r double's
    tuned plan (bT 4, 64x32 cells of 2 per thread, one barrier per step) 14% faster and
    star3d1r float's under a budget of 32 registers 8% faster than its tuned plan before,
    but star3d2r's plans and star3d1r float's without a budget (its registers grow from 31
    to 54) slower, so it is a plan option the tuner measures
    (:func:`an5dpy.perf.tune.variant_plans`). The values are the command line's spelling
    (``--idle``)."""

    SKIP = "skip"
    COMPUTE = "compute"


class HaloCells(enum.Enum):
    """Who loads a block's in-plane halo cells (bT 1 only).

    ``THREADS``: every cell of the block, its halo included, has a thread (AN5D's
    layout): at bT 1 the halo threads only load their cell and share it, so a 3D block of
    radius r keeps ``(b - 2r) / b`` of its lanes computing along each in-plane dimension.
    ``LOADED``: the block's threads are its compute region, each computing its cells, and
    they load the halo cells of each plane in turn, a step ahead, into the same shared
    plane; every lane computes. The plan's ``bs`` stays the block's tile, halo included,
    so the cells a block stores, the blocks of a launch, the schedule and the simulator
    are those of ``THREADS``; only the threads (:attr:`BlockingPlan.threads`) and the
    CUDA (templates/halo_loaded.cu.j2) differ. Hand-written first (scripts/halo_stream.py,
    artifact/H200/halo_stream.md): 1.2-1.6x the tuned bT 1 plans of star3d3r and star3d4r
    on the H200; generated in modes nondiag and assoc, 1.1-1.8x those of box3d2r-4r too
    (artifact/H200/halo_loaded.md). The values are the command line's spelling
    (``--halo``)."""

    THREADS = "threads"
    LOADED = "loaded"


#: What ``--opt`` accepts besides the modes: the analysis' default.
AUTO = "auto"


def default_mode(info: StencilInfo) -> Mode:
    """The mode the analysis chose for the stencil (nondiag, else assoc, else none)."""
    return Mode(info.opt)


def resolve_mode(opt: Mode | str | None, info: StencilInfo) -> Mode:
    """``opt`` as a :class:`Mode`; ``None`` and ``"auto"`` give the analysis' default."""
    if isinstance(opt, Mode):
        return opt
    if not opt or opt == AUTO:
        return default_mode(info)
    try:
        return Mode(opt)
    except ValueError:
        choices = ", ".join(m.value for m in Mode)
        raise OptionError([("opt", opt)], f"choose one of {choices}") from None


@dataclass(frozen=True)
class DeviceLimits:
    """The per-block and per-thread limits a plan must respect (Hopper by default)."""

    max_threads_per_block: int = 1024
    max_smem_per_block: int = 227 * 1024
    max_regs_per_thread: int = 255
    max_regs_per_block: int = 65536


HOPPER_LIMITS = DeviceLimits()


@dataclass(frozen=True, order=True)
class OlderRead:
    """Where the update reads a level older than the newest: level ``T - lag`` (lag >= 2)
    at streaming offset ``dz`` from the plane it computes, at the thread's own column and,
    where ``shared``, at in-plane neighbours too (so the plane is staged in shared memory
    beside level T-1's)."""

    lag: int
    dz: int
    shared: bool = False


@dataclass(frozen=True)
class TimeLevels:
    """How the updated array keeps its time levels, as the schedule needs to know it.

    ``buffers`` is the array's time extent k (``A[(t + c) % k]``), ``history`` how many
    earlier levels the update reads (its largest lag) and ``older`` the planes of levels
    before the newest that it reads (one entry per lag and streaming offset). The
    double-buffered form (2, 1) runs in two buffers, each launch reading one and writing
    the other (:class:`Launch`). Every other form is *rotating*: the data moves through
    work buffers, each launch reading the :attr:`tracked` newest levels and writing its
    last ones (:class:`LevelLaunch`).
    """

    buffers: int = 2
    history: int = 1
    older: tuple[OlderRead, ...] = ()

    @property
    def rotating(self) -> bool:
        return self.buffers != 2 or self.history != 1

    @property
    def tracked(self) -> int:
        """Levels a launch hands to the next (M): the k-1 before the newest that the C
        program keeps besides it, or more where the update reads further back (leapfrog
        reads level t-1 from the buffer it writes)."""
        return max(self.buffers - 1, self.history)

    @property
    def work_buffers(self) -> int:
        """Work buffers of a rotating run besides the program's own k: a launch reads M
        and writes M others (none for the double-buffered form)."""
        return 2 * self.tracked if self.rotating else 0

    def stored_levels(self, degree: int) -> int:
        """Levels a launch of ``degree`` stores, newest first: a rotating launch its last
        ``min(degree, M)`` (the older ones the next launch needs stay where this launch
        read them), a double-buffered launch its last."""
        return min(degree, self.tracked) if self.rotating else 1

    @property
    def loaded(self) -> int:
        """Levels before level 0 the loads bring along (levels -1 .. -loaded)."""
        return self.history - 1

    @property
    def offset_reads(self) -> bool:
        """Whether some older level is read away from the cell: its loads then cover
        boundary cells and streaming-boundary planes, from those levels' buffers."""
        return any(o.dz or o.shared for o in self.older)

    @property
    def shared_older(self) -> tuple[OlderRead, ...]:
        """The older planes staged in shared memory, in :attr:`older` order."""
        return tuple(o for o in self.older if o.shared)

    def first_reader(self, loaded: int) -> int:
        """The lowest level whose update reads the loaded level ``-loaded``."""
        return min(o.lag - loaded for o in self.older if o.lag > loaded)

    def slots(self, radius: int, degree: int) -> int:
        """Register slots per level ring in a kernel of ``degree``: 2r+1 for level T's
        window, more where level T reads level T-j at plane offset dz (level T-j is j*r
        planes ahead then) or a launch stores level d-m (m*r planes ahead)."""
        need = [2 * radius + 1, (self.stored_levels(degree) - 1) * radius + 1]
        need += [min(o.lag, degree) * radius + 1 - o.dz for o in self.older]
        return max(need)

    @staticmethod
    def of(info: StencilInfo) -> "TimeLevels":
        older: dict[tuple[int, int], bool] = {}
        for lag in range(2, info.history + 1):
            for offset in info.offsets_of_level(lag):
                key = (lag, offset[0])
                older[key] = older.get(key, False) or any(offset[1:])
        return TimeLevels(info.time.buffers, info.history,
                          tuple(OlderRead(lag, dz, shared)
                                for (lag, dz), shared in sorted(older.items())))


@dataclass(frozen=True)
class BlockingPlan:
    ndim: int
    dtype: str
    radius: tuple[int, ...]  # per array dimension, streaming first
    bt: int
    bs: tuple[int, ...]  # threads per in-plane dimension (array order)
    sl: int | None  # stored planes per stream block; None = no stream division
    mode: Mode
    #: Largest offsets read below / above along the streaming dimension (<= radius). The
    #: pipeline is timed with the symmetric radius; planes beyond the reach are never read.
    stream_reach: tuple[int, int] | None = None
    levels: TimeLevels = TimeLevels()
    #: A time step of several statements (:attr:`~an5dpy.ir.StencilInfo.substeps`): each
    #: time step is ``substeps`` levels of the pipeline, each level holds all ``fields``.
    substeps: int = 1
    fields: int = 1
    #: Cells each thread computes along the outermost in-plane dimension (thread
    #: coarsening): thread ``t`` of that dimension holds the consecutive cells
    #: ``t * coarsen + m``, m = 0 .. coarsen-1. The cells a block computes, and so its
    #: schedule and results, do not change; the block has ``coarsen`` times fewer threads,
    #: each with ``coarsen`` register rings, one barrier per level op for all its cells, as
    #: many independent evaluations between barriers, and (mode nondiag) its cells' row
    #: neighbours in its own registers (:data:`COARSENINGS`).
    coarsen: int = 1
    #: Barriers per level op or per streaming step (:class:`Barriers`).
    barriers: Barriers = Barriers.LEVEL
    #: Whether warps idle at a level skip its evaluation (:class:`IdleWarps`).
    idle: IdleWarps = IdleWarps.SKIP
    #: Who loads the block's in-plane halo (:class:`HaloCells`).
    halo_cells: HaloCells = HaloCells.THREADS

    @property
    def coupled(self) -> bool:
        return self.substeps > 1 or self.fields > 1

    @property
    def depth(self) -> int:
        """Levels of a full launch: ``bt`` time steps of :attr:`substeps` levels each.
        Every method below that takes a ``degree`` counts it in levels, the kernel's."""
        return self.bt * self.substeps

    def kernel_degree(self, steps: int) -> int:
        """The levels of the kernel a launch of ``steps`` time steps runs."""
        return steps * self.substeps

    def field_time(self, level: int, substep: int) -> int:
        """The time steps a field written at sub-step ``substep`` (0-based) has advanced at
        level ``level`` of a launch: one per full step, plus one once its own sub-step of
        the current step is done. Its boundary values at that level are those of the
        buffer of that parity."""
        if level <= 0:
            return 0
        return (level - 1) // self.substeps + ((level - 1) % self.substeps >= substep)

    def kernel_degrees(self) -> tuple[int, ...]:
        """The kernels' degrees (levels) a launch plan can need (:func:`degrees_needed`)."""
        return tuple(self.kernel_degree(d) for d in degrees_needed(self.bt, self.levels))

    @property
    def reach(self) -> tuple[int, int]:
        r = self.radius[0]
        return self.stream_reach if self.stream_reach is not None else (r, r)

    @property
    def stream_radius(self) -> int:
        return self.radius[0]

    @property
    def plane_radius(self) -> tuple[int, ...]:
        return self.radius[1:]

    @property
    def word_bytes(self) -> int:
        return WORD_BYTES[self.dtype]

    @property
    def threads(self) -> tuple[int, ...]:
        """Threads per in-plane dimension (array order): ``bs`` (with the halo loaded by
        the computing threads, :attr:`HaloCells.LOADED`, the compute region) with the
        outermost in-plane dimension divided by :attr:`coarsen`."""
        cells = self.compute_region() if self.halo_loaded else self.bs
        return (cells[0] // self.coarsen, *cells[1:])

    @property
    def halo_loaded(self) -> bool:
        """Whether the computing threads load the block's halo (:class:`HaloCells`)."""
        return self.halo_cells is HaloCells.LOADED

    @property
    def halo_loads_per_thread(self) -> int:
        """With the halo loaded (:attr:`HaloCells.LOADED`): the halo cells a computing
        thread loads each step, the tile's halo over the block's threads rounded up (the
        last round leaves some threads without one); 0 with halo threads."""
        if not self.halo_loaded:
            return 0
        halo = math.prod(self.bs) - math.prod(self.compute_region(1))
        return -(-halo // self.nthreads)

    @property
    def thread_block(self) -> tuple[int, ...]:
        """The launch's ``dim3`` block: :attr:`threads`, contiguous dimension (x) first."""
        return tuple(reversed(self.threads))

    @property
    def nthreads(self) -> int:
        return math.prod(self.threads)

    def halo(self, degree: int | None = None) -> tuple[int, ...]:
        d = self.depth if degree is None else degree
        return tuple(d * r for r in self.plane_radius)

    def compute_region(self, degree: int | None = None) -> tuple[int, ...]:
        """Columns per in-plane dimension a block stores (bS - 2 * degree * r)."""
        return tuple(b - 2 * h for b, h in zip(self.bs, self.halo(degree)))

    @property
    def ring(self) -> int:
        """Planes of a level's window: 2r + 1 (a level's ring has that many register slots
        unless the update reads older levels away from their newest plane, :meth:`slots`)."""
        return 2 * self.stream_radius + 1

    def slots(self, degree: int | None = None) -> int:
        """Register slots per level ring in the kernel of ``degree`` (:meth:`TimeLevels.slots`)."""
        return self.levels.slots(self.stream_radius, self.depth if degree is None else degree)

    def registers_per_thread(self, degree: int | None = None) -> int:
        """Plane registers the schedule allocates (not counting nvcc's temporaries)."""
        d = self.depth if degree is None else degree
        if self.halo_loaded:
            # each cell's column of 2r + 1 planes and its plane loaded a step ahead, and the
            # halo cells' values loaded a step ahead (templates/halo_loaded.cu.j2)
            return (self.ring + 1) * self.coarsen + self.halo_loads_per_thread
        if self.mode is Mode.ASSOC:
            # one loaded plane, an accumulator ring per level, for each of the thread's cells
            return (1 + d * self.ring) * self.coarsen
        # rings of levels 0 .. d-1 (level d is stored directly), and of the older levels
        # the loads bring along where the update reads them; one ring per field and cell
        return (d + self.levels.loaded) * self.slots(d) * self.fields * self.coarsen

    @property
    def window_smem_planes(self) -> int:
        """Shared planes of level T-1's window: the centre plane, or all 2r+1 in mode none."""
        return self.ring if self.mode is Mode.NONE else 1

    @property
    def smem_planes(self) -> int:
        """Planes per shared buffer: level T-1's (:attr:`window_smem_planes`), then the
        older levels' planes that the update reads at in-plane neighbours."""
        return self.window_smem_planes + len(self.levels.shared_older)

    @property
    def smem_row_shape(self) -> tuple[int, ...]:
        """One buffer plane: the block's cells padded by the in-plane radius on each side,
        so halo threads may read their neighbours without a bounds check; cell-major
        (:attr:`cell_major`), one row per shared cell of :attr:`cell_row_width` threads."""
        if self.cell_major:
            return (len(self.shared_cells) * self.cell_row_width,)
        return tuple(b + 2 * r for b, r in zip(self.bs, self.plane_radius))

    @property
    def interior_phase(self) -> bool:
        """Whether blocks whose cells are all interior run an inner phase of their own, in
        which the boundary flags are constants (the kernels' other blocks, and every
        block's head and tail, keep the shared code). Each level op of a boundary-aware
        block selects a boundary cell's value (``an5d_bnd ? prev : v``) and so keeps
        level T-2's plane alive past its ring slot: a select and a move per cell and
        level, and registers. Only 2D stencils of in-plane radius up to
        :data:`INTERIOR_PHASE_MAX_RADIUS` get it: measured side by side on the H200
        (scripts/ab_compare.py, artifact/H200/interior.md) the tuned plans gain 1.057 in
        geomean there (up to 1.195), while the 3D kernels (0.857) and the larger radii
        (0.924) lose: more registers, and a second copy of a long inner loop, cost more
        than the selects."""
        return self.ndim == 2 and max(self.plane_radius) <= INTERIOR_PHASE_MAX_RADIUS

    @property
    def cell_major(self) -> bool:
        """Whether shared memory holds a coarsened thread's cells cell-major: in 2D mode
        nondiag every shared read is a row read of level T-1's plane along dimension 1,
        the dimension the lanes of a warp run along. Thread t's C consecutive cells
        stored at ``t * C + m`` would put a warp's accesses C words apart, C lanes to a
        bank (C-way conflicts, as many shared-memory cycles per cell as one cell per
        thread and no saving at all); cell m of every thread in a row of its own keeps
        each warp access on 32 consecutive words. Only the cells within the radius of the
        thread's ends are read by other threads (:attr:`shared_cells`), so only they
        are stored, and their rows are the only ones there are."""
        return (self.ndim == 2 and self.coarsen > 1 and self.mode is Mode.NONDIAG
                and self.barriers is not Barriers.SHUFFLE and not self.coupled
                and not self.levels.shared_older and self.plane_radius[0] > 0)

    @property
    def shared_cells(self) -> tuple[int, ...]:
        """The cells m of a coarsened thread whose values it writes to shared memory:
        where the layout is :attr:`cell_major`, those that another thread reads (within
        the in-plane radius of the thread's first or last cell), else every cell."""
        c = self.coarsen
        if not self.cell_major:
            return tuple(range(c))
        r = self.plane_radius[0]
        return tuple(m for m in range(c) if m < r or m >= c - r)

    @property
    def cell_row_pad(self) -> int:
        """Threads of padding at each end of a cell-major row: a thread at the block's
        edge reads cells up to the radius beyond it, ceil(r / C) threads away."""
        return -(-self.plane_radius[0] // self.coarsen)

    @property
    def cell_row_width(self) -> int:
        """Words of one cell-major row: a word per thread plus the padding at both ends."""
        return self.threads[0] + 2 * self.cell_row_pad

    def cell_major_slot(self, cell: int, dy: int) -> int:
        """Where the cell ``dy`` cells from a thread's cell ``cell`` lies in a cell-major
        plane, less the thread's index: the row of that cell (of the thread ``(cell + dy)
        // C`` threads away) and its word there. The one home of the layout: the cell's
        own write (``dy`` = 0) and every row read of another thread's cell use it."""
        threads_away, other = divmod(cell + dy, self.coarsen)
        row = self.shared_cells.index(other)
        return row * self.cell_row_width + self.cell_row_pad + threads_away

    @property
    def smem_buffers(self) -> int:
        """Shared buffers: two (double buffering, Table 1 of the paper), with one barrier
        per step two per level (:meth:`smem_buffer`), none with warp shuffles."""
        if self.barriers is Barriers.SHUFFLE:
            return 0
        return 2 * self.depth if self.barriers is Barriers.STEP else 2

    def smem_buffer(self, level: int, step_parity: int) -> int:
        """With one barrier per step, the buffer level ``level`` (1..depth) reads in a
        step of parity ``step_parity``: a step's writes never meet the previous step's
        reads of the same level, which a slower thread may still be doing."""
        return 2 * (level - 1) + step_parity

    @property
    def smem_words(self) -> int:
        """:attr:`smem_buffers` buffers of a word per thread per plane (plus the padding
        of :attr:`smem_row_shape`); with the halo loaded, two planes of the block's tile."""
        if self.halo_loaded:
            return 2 * math.prod(self.bs)
        return self.smem_buffers * self.smem_planes * self.fields * math.prod(self.smem_row_shape)

    @property
    def smem_bytes(self) -> int:
        return self.smem_words * self.word_bytes

    def register_estimate(self, degree: int | None = None) -> int:
        """The paper's empirical lower bound on registers per thread (section 6.3)."""
        d = self.depth if degree is None else degree
        # with the loaded older levels', one ring per field and cell
        rings = (d + self.levels.loaded) * self.slots(d) * self.fields * self.coarsen
        if self.dtype == "double":
            return 2 * rings + d + 30
        return rings + d + 20

    def option_text(self) -> str:
        """The plan's options as the command line spells them, those at their defaults left
        out: ``bt=4 bs=32x32 sl=128 barriers=step opt=nondiag``."""
        sl = "off" if self.sl is None else str(self.sl)
        coarsen = f" coarsen={self.coarsen}" if self.coarsen > 1 else ""
        barriers = (f" barriers={self.barriers.value}" if self.barriers is not Barriers.LEVEL
                    else "")
        idle = f" idle={self.idle.value}" if self.idle is not IdleWarps.SKIP else ""
        halo = f" halo={self.halo_cells.value}" if self.halo_loaded else ""
        return (f"bt={self.bt} bs={format_block_size(self.bs)} sl={sl}{coarsen}{barriers}"
                f"{idle}{halo} opt={self.mode.value}")

    def describe(self) -> str:
        return f"{self.option_text()} dtype={self.dtype}"

    def to_json(self) -> dict:
        return {
            "bt": self.bt, "bs": list(self.bs), "bs_text": format_block_size(self.bs),
            "sl": self.sl, "opt": self.mode.value, "dtype": self.dtype, "radius": list(self.radius),
            "halo": list(self.halo()), "compute_region": list(self.compute_region()),
            "coarsen": self.coarsen, "barriers": self.barriers.value, "idle": self.idle.value,
            "halo_cells": self.halo_cells.value,
            "threads": list(self.threads), "nthreads": self.nthreads,
            "registers_per_thread": self.registers_per_thread(),
            "register_estimate": self.register_estimate(), "smem_bytes": self.smem_bytes,
        }


def parse_block_size(text: str, ndim: int) -> tuple[int, ...]:
    """``"128"`` (2D) or ``"32x16"`` (3D, contiguous dimension first) to array order."""
    try:
        parts = [int(p) for p in text.lower().split("x")]
    except ValueError:
        raise OptionError([("bs", text)], "expected B1 or B1xB2 with positive integers") \
            from None
    if len(parts) != ndim - 1:
        want = "one size (B1)" if ndim == 2 else "two sizes (B1xB2, contiguous dimension first)"
        raise OptionError([("bs", text)], f"a {ndim}D stencil needs {want}")
    if any(p < 1 for p in parts):
        raise OptionError([("bs", text)], "sizes must be positive")
    return tuple(reversed(parts))


def format_block_size(bs: tuple[int, ...]) -> str:
    return "x".join(str(b) for b in reversed(bs))


def block_size_value(bs: tuple[int, ...]) -> int | str:
    """A block size as an option value in errors: ``128``, or ``"64x16"``."""
    return bs[0] if len(bs) == 1 else format_block_size(bs)


def default_block_size(ndim: int) -> tuple[int, ...]:
    return (256,) if ndim == 2 else (32, 32)


def stream_reach_of(info: StencilInfo) -> tuple[int, int]:
    """The planes below and above the interior a block loads: the reads' reach along the
    streaming dimension. The interior of a time step of several statements is the box
    around their cells, and a statement whose cells stop short of the box's edge reads
    no further than the array: the reach is cut at the array's edge there (the box's
    planes that some field does not write are its boundary values, whatever the update
    would compute from planes beyond the array)."""
    dim = info.dims[0]
    below, above = dim.reach_lo, dim.reach_hi
    if info.coupled:
        room_below, room_above = dim.lower, dim.extent - 1 - dim.upper
        if room_below.is_constant:
            below = min(below, max(0, room_below.const))
        if room_above.is_constant:
            above = min(above, max(0, room_above.const))
    return below, above


def make_plan(info: StencilInfo, bt: int = 4, bs: tuple[int, ...] | None = None,
              sl: int | None = None, opt: Mode | str | None = None, dtype: str | None = None,
              limits: DeviceLimits = HOPPER_LIMITS, coarsen: int = 1,
              barriers: Barriers | str = Barriers.LEVEL,
              idle: IdleWarps | str = IdleWarps.SKIP,
              halo: HaloCells | str = HaloCells.THREADS) -> BlockingPlan:
    """Build and validate a plan; raises UsageError naming what is impossible.

    ``opt``: a :class:`Mode`, its name, or ``None``/``"auto"`` for the analysis' default;
    the plan holds the settled :class:`Mode`. ``barriers``: a :class:`Barriers` or its
    name; ``idle``: an :class:`IdleWarps` or its name; ``halo``: a :class:`HaloCells` or
    its name."""
    if dtype is not None and dtype != info.dtype:
        raise UsageError(f"the plan's element type {dtype} differs from the array's "
                         f"({info.dtype}): the type comes from the C source and its "
                         "preprocessor definitions")
    dtype = info.dtype
    mode = resolve_mode(opt, info)
    bs = tuple(bs) if bs is not None else default_block_size(info.ndim)
    if dtype not in WORD_BYTES:
        raise OptionError([("dtype", dtype)], "choose float or double")
    plan = BlockingPlan(info.ndim, dtype, info.radius, int(bt), bs, sl, mode,
                        stream_reach_of(info), TimeLevels.of(info),
                        max(1, len(info.substeps)), max(1, len(info.fields)), int(coarsen),
                        resolve_barriers(barriers), resolve_idle(idle), resolve_halo(halo))
    check_plan(plan, info, limits)
    return plan


#: Why a plan option below 1 cannot work, by option name: :func:`check_plan` and the
#: driver's option parsing (:func:`an5dpy.driver.fixed_options`) give the same reason.
BELOW_ONE = {"bt": "the temporal degree must be at least 1",
             "sl": "the stream-block length must be at least 1"}

def _resolve_choice(kind: type[enum.Enum], value, option: str):
    """``value`` as a member of the enum ``kind`` (its value, the command line's spelling,
    accepted); an OptionError naming ``option`` otherwise."""
    if isinstance(value, kind):
        return value
    try:
        return kind(value)
    except ValueError:
        choices = ", ".join(member.value for member in kind)
        raise OptionError([(option, value)], f"choose one of {choices}") from None


def resolve_barriers(barriers: Barriers | str) -> Barriers:
    """``barriers`` as a :class:`Barriers` (its name accepted)."""
    return _resolve_choice(Barriers, barriers, "barriers")


def resolve_idle(idle: IdleWarps | str) -> IdleWarps:
    """``idle`` as an :class:`IdleWarps` (its name accepted)."""
    return _resolve_choice(IdleWarps, idle, "idle")


def resolve_halo(halo: HaloCells | str) -> HaloCells:
    """``halo`` as a :class:`HaloCells` (its name accepted)."""
    return _resolve_choice(HaloCells, halo, "halo")


#: The largest in-plane radius whose 2D kernels get an inner phase for blocks of interior
#: cells (:attr:`BlockingPlan.interior_phase`).
INTERIOR_PHASE_MAX_RADIUS = 2

#: Cells per thread a plan may give (:attr:`BlockingPlan.coarsen`).
COARSENINGS = (1, 2, 4, 8)


def check_plan(plan: BlockingPlan, info: StencilInfo,
               limits: DeviceLimits = HOPPER_LIMITS) -> None:
    if plan.bt < 1:
        raise OptionError([("bt", plan.bt)], BELOW_ONE["bt"])
    if len(plan.bs) != info.ndim - 1:
        raise OptionError([("bs", block_size_value(plan.bs))],
                          f"a {info.ndim}D stencil needs {info.ndim - 1} block size(s)")
    if plan.sl is not None and plan.sl < 1:
        raise OptionError([("sl", plan.sl)], BELOW_ONE["sl"])
    if plan.coarsen not in COARSENINGS:
        raise OptionError([("coarsen", plan.coarsen)],
                          f"cells per thread must be one of {', '.join(map(str, COARSENINGS))}")
    if plan.halo_loaded:
        check_halo_loaded(plan, info)
    elif plan.bs[0] % plan.coarsen:
        raise OptionError([("bs", block_size_value(plan.bs)), ("coarsen", plan.coarsen)],
                          f"the outermost in-plane block size {plan.bs[0]} must be a multiple "
                          f"of the cells per thread")
    if plan.barriers is Barriers.STEP:
        check_step_barriers(plan)
    if plan.barriers is Barriers.SHUFFLE:
        check_shuffle(plan)
    for b, r, c in zip(plan.bs, plan.plane_radius, plan.compute_region()):
        if c < 1:
            raise OptionError(
                [("bs", block_size_value(plan.bs)), ("bt", plan.bt)],
                f"a block of {b} threads has no compute region left after the halo of "
                f"2*bT*r = {2 * plan.depth * r} (need bS > 2*bT*r"
                + (f", bT counting {plan.substeps} sub-steps per time step)" if plan.coupled
                   else ")"))
    if plan.nthreads > limits.max_threads_per_block:
        raise OptionError([("bs", block_size_value(plan.bs))],
                          f"{plan.nthreads} threads per block exceed the limit of "
                          f"{limits.max_threads_per_block}")
    if plan.mode is Mode.NONDIAG and not info.diagonal_free:
        raise OptionError([("opt", "nondiag")],
                          "needs a diagonal-access-free stencil (reads off the centre column "
                          "of other planes need shared memory): use assoc or none")
    if plan.coupled and plan.mode is Mode.ASSOC:
        raise OptionError([("opt", "assoc")],
                          "a time step of several statements has no associative mode: use "
                          "nondiag or none")
    if plan.mode is Mode.ASSOC and not info.associative:
        raise OptionError([("opt", "assoc")],
                          "needs an associative stencil (a sum of terms that each read one "
                          "streaming plane): use none")
    if plan.smem_bytes > limits.max_smem_per_block:
        raise UsageError(f"plan {plan.describe()} needs {plan.smem_bytes} bytes of shared memory "
                         f"per block, over the limit of {limits.max_smem_per_block}")
    if plan.register_estimate() > limits.max_regs_per_thread:
        raise UsageError(f"plan {plan.describe()} needs about {plan.register_estimate()} "
                         f"registers per thread, over the limit of {limits.max_regs_per_thread}")


def check_halo_loaded(plan: BlockingPlan, info: StencilInfo) -> None:
    """The computing threads load the halo (:class:`HaloCells`) in the kernel of
    templates/halo_loaded.cu.j2: one level (bT 1, so every launch is of degree 1 and
    reads its boundary cells from its source), a 3D stencil that reads in-plane
    neighbours (else there is no halo to load), mode nondiag (the column in registers,
    the plane in shared memory) or assoc (each arriving plane in shared memory, added
    into the cell's sums, from r planes below a stream block's first one or from the
    array's first plane where that lies below it), one statement, level t-1 read at the
    cell only (no older level); in mode assoc two time buffers (the launch's source and
    destination; an associative update reads no read-only array); the other options at
    their defaults (the kernel has one barrier per step and no idle warps of its own);
    its compute region's outermost side a multiple of the cells per thread, and its two
    tile planes within the static shared memory of a block."""
    compute = plan.compute_region()
    why = ("needs bT 1 (at bT 2 or more the halo's cells compute levels of their own)"
           if plan.bt != 1
           else "needs a 3D stencil" if plan.ndim != 3
           else "needs an in-plane halo (with none, every thread computes already)"
           if not any(plan.plane_radius)
           else "needs mode nondiag or assoc"
           if plan.mode not in (Mode.NONDIAG, Mode.ASSOC)
           else "is not built for a time step of several statements yet" if plan.coupled
           else "is not built for updates that read an older time level away from the "
           "cell yet" if plan.levels.offset_reads
           # level t-1 only: its pointer is the one every rotating launch takes
           # (tests/gpu/test_halo_loaded_gpu.py); t-2 and older are not checked on a GPU
           else "is not built for updates that read levels before t-1 yet"
           if plan.levels.history > 2
           # the assoc branch reads every cell from the launch's source (no update the
           # analysis finds associative rotates its buffers today)
           else "in mode assoc is not built for more than two time buffers or older "
           "levels yet" if plan.mode is Mode.ASSOC and plan.levels.rotating
           else "keeps its own barrier per step: leave barriers and idle at their defaults"
           if plan.barriers is not Barriers.LEVEL or plan.idle is not IdleWarps.SKIP
           else f"needs the compute region's outermost side ({compute[0]}) to be a "
           f"multiple of the cells per thread" if compute[0] % plan.coarsen
           else f"needs its two planes of the tile ({plan.smem_bytes} bytes) within the "
           f"{STATIC_SMEM_LIMIT} bytes of static shared memory"
           if plan.smem_bytes > STATIC_SMEM_LIMIT else None)
    if why:
        raise OptionError([("halo", HaloCells.LOADED.value)],
                          f"loading the halo by the computing threads {why}: use "
                          f"halo=threads")


def loaded_halo_plans(info: StencilInfo, plan: BlockingPlan,
                      layouts: Iterable[tuple[tuple[int, ...], int]],
                      limits: DeviceLimits = HOPPER_LIMITS) -> list[BlockingPlan]:
    """For a bT 1 ``plan`` with halo threads, the plans of its stream length and mode whose
    computing threads load the halo (:class:`HaloCells`), one per ``(compute region, cells
    per thread)`` of ``layouts`` (each block's tile: the region and the plan's halo), with
    one barrier a level and idle warps skipped (the kernel's own), those legal under
    ``limits``; none for another plan."""
    if plan.bt != 1 or plan.halo_loaded:
        return []
    halo = plan.halo(1)
    out = []
    for compute, cells in layouts:
        if len(compute) != len(halo):
            continue
        try:
            out.append(make_plan(info, 1, bs=tuple(c + 2 * h for c, h in zip(compute, halo)),
                                 sl=plan.sl, opt=plan.mode, dtype=plan.dtype, limits=limits,
                                 coarsen=cells, halo=HaloCells.LOADED))
        except UsageError:  # a mode, radius or option the kernel does not take
            continue
    return out


def check_step_barriers(plan: BlockingPlan) -> None:
    """One barrier per step needs every level's shared input to be a plane computed in an
    earlier step: mode nondiag (the other modes share the planes the step computes), a
    streaming radius (level T's plane is level T-1's of r steps earlier) and no older
    levels read at in-plane neighbours (their staged planes are not split yet). A time
    step of several statements takes it: each level is one sub-step, and its input is
    level T-1's plane of every field, shared at the step's start as one field's is
    (:func:`an5dpy.cuda.field_macros.share_macro`)."""
    why = ("needs mode nondiag (modes none and assoc read in-plane neighbours of the plane "
           "the previous level computes in the same step)" if plan.mode is not Mode.NONDIAG
           else "needs reads along the streaming dimension (with none, every level of a "
           "plane is computed in the same step)" if plan.stream_radius == 0
           else "is not built for updates that read older time levels at in-plane "
           "neighbours yet" if plan.levels.shared_older else None)
    if why:
        raise OptionError([("barriers", Barriers.STEP.value)],
                          f"one barrier per step {why}: use barriers=level")


def check_shuffle(plan: BlockingPlan) -> None:
    """Warp shuffles replace shared memory where every in-plane read is a row read of
    level T-1's plane in one warp: a 2D stencil (3D planes need the other dimension's
    rows), mode nondiag (the other modes read the planes around the centre plane at
    in-plane offsets), no older levels read at in-plane neighbours, one statement, and a
    block of exactly one warp of threads holding 2 or more cells each (the coarsened
    kernel's row neighbours are what the shuffles carry)."""
    why = ("need a 2D stencil (a 3D plane's second dimension crosses warps)"
           if plan.ndim != 2
           else "need mode nondiag (modes none and assoc read other planes at in-plane "
           "offsets)" if plan.mode is not Mode.NONDIAG
           else "are not built for a time step of several statements yet" if plan.coupled
           else "are not built for updates that read older levels at in-plane neighbours yet"
           if plan.levels.shared_older
           else "need 2 or more cells per thread (coarsen)" if plan.coarsen == 1
           else f"need a block of one warp: bs = {WARP_SIZE} x coarsen = "
           f"{WARP_SIZE * plan.coarsen}" if plan.threads != (WARP_SIZE,) else None)
    if why:
        raise OptionError([("barriers", Barriers.SHUFFLE.value)],
                          f"warp shuffles {why}: use barriers=level")


# --------------------------------------------------------------------------- run-time geometry


@dataclass(frozen=True)
class DimExtent:
    """Interior ``[lower, upper]`` and array size of one dimension for concrete sizes."""

    lower: int
    upper: int
    size: int

    @property
    def length(self) -> int:
        return max(0, self.upper - self.lower + 1)


@dataclass(frozen=True)
class LaunchGeometry:
    """Blocks of one launch of temporal degree ``degree`` over a concrete grid."""

    plan: BlockingPlan
    degree: int
    dims: tuple[DimExtent, ...]  # array order

    @property
    def stream(self) -> DimExtent:
        return self.dims[0]

    @property
    def plane_dims(self) -> tuple[DimExtent, ...]:
        return self.dims[1:]

    @property
    def plane_blocks(self) -> tuple[int, ...]:
        return tuple(-(-d.length // c) if d.length else 0
                     for d, c in zip(self.plane_dims, self.plan.compute_region(self.degree)))

    @property
    def stream_length(self) -> int:
        """Stored planes per stream block (the whole stream without stream division)."""
        return self.plan.sl if self.plan.sl is not None else max(1, self.stream.length)

    @property
    def stream_blocks(self) -> int:
        n = self.stream.length
        return -(-n // self.stream_length) if n else 0

    @property
    def nblocks(self) -> int:
        return math.prod(self.plane_blocks) * self.stream_blocks

    def stream_block_range(self, index: int) -> tuple[int, int]:
        """Planes ``[S0, S1)`` that stream block ``index`` stores."""
        s0 = self.stream.lower + index * self.stream_length
        return s0, min(s0 + self.stream_length, self.stream.upper + 1)


def grid_extents(info: StencilInfo, env: Mapping[str, int]) -> tuple[DimExtent, ...]:
    return tuple(DimExtent(d.lower.evaluate(env), d.upper.evaluate(env), d.extent.evaluate(env))
                 for d in info.dims)


# --------------------------------------------------------------------------- launch plan


@dataclass(frozen=True)
class Launch:
    """One kernel launch: ``degree`` time steps from buffer ``source`` into the other.

    ``boundary_even`` is the buffer the C program reads at this launch's first time step.
    Boundary cells are never written, so each buffer keeps its own boundary values, and
    the C program's time ``t`` sees those of buffer ``(start + t) % 2``. After a launch of
    even degree the data no longer sits in that buffer, so the kernel takes boundary
    values of even levels from ``boundary_even`` and of odd levels from the other buffer,
    wherever the data is.
    """

    degree: int
    source: int  # buffer read (0 or 1); the other buffer is written
    boundary_even: int


def launch_degrees(steps: int, bt: int) -> tuple[int, ...]:
    """Temporal degrees of the launches that advance ``steps`` time steps.

    Every launch reads one buffer and writes the other, so after n launches the result
    sits in buffer ``start ^ (n % 2)``, while the C program leaves it in
    ``start ^ (steps % 2)``: n must have the parity of ``steps`` (paper section 4.3).
    Fewest launches: ``ceil(steps / bt)``, plus one when the parity is off; full-degree
    launches first, then the remainder. The emitted C host code computes the same
    sequence (templates/kernel.hu.j2, ``_plan_launches`` and ``_plan_degree``) and tests check
    that they agree.
    """
    if steps < 0 or bt < 1:
        raise ValueError("steps must be >= 0 and bt >= 1")
    n = -(-steps // bt)
    if n % 2 != steps % 2:
        n += 1
    degrees = []
    remaining = steps
    for i in range(n):
        later = n - i - 1
        d = min(bt, remaining - later)
        degrees.append(d)
        remaining -= d
    return tuple(degrees)


def launch_plan(steps: int, bt: int, start_buffer: int = 0) -> tuple[Launch, ...]:
    launches = []
    src, time = start_buffer, 0
    for d in launch_degrees(steps, bt):
        launches.append(Launch(d, src, (start_buffer + time) % 2))
        src ^= 1
        time += d
    return tuple(launches)


def run_degrees(steps: int, bt: int, levels: "TimeLevels") -> tuple[int, ...]:
    """The degrees of the launches of ``steps`` time steps, in order, for either kind of
    program (:func:`launch_degrees`, :func:`level_launch_degrees`)."""
    if levels.rotating:
        return level_launch_degrees(steps, bt, levels)
    return launch_degrees(steps, bt)


def degrees_needed(bt: int, levels: TimeLevels = TimeLevels()) -> tuple[int, ...]:
    """Every degree some step count's launch plan uses (the kernels the host needs)."""
    seen: set[int] = set()
    for steps in range(0, 4 * bt + 4):
        seen.update(run_degrees(steps, bt, levels))
    return tuple(sorted(seen))


def full_launch_steps(at_least: int, bt: int, levels: TimeLevels = TimeLevels()
                      ) -> int | None:
    """The fewest time steps, at least ``max(at_least, 1)``, whose launch plan is made of
    launches of degree ``bt`` alone, or None where no step count is (a rotating program
    whose last launch must be shorter than ``bt``: :func:`last_degree_limit`).

    A run of such a count needs the kernel of the full degree and no other: timing runs
    use it, so that their builds compile one kernel instead of one per degree (a plan of
    bT 16 has 16, and the full one is the smallest share of the compile time). The
    counts repeat with a period of at most ``2 bt`` (two launches keep the parity of the
    two-buffer plan), so the search ends there."""
    if bt < 1:
        raise ValueError("bt must be >= 1")
    start = max(at_least, 1)
    for steps in range(start, start + 2 * bt):
        if set(run_degrees(steps, bt, levels)) == {bt}:
            return steps
    return None


# --------------------------------------------------------------------------- rotating levels


@dataclass(frozen=True)
class LevelLaunch:
    """One launch of a rotating program (:attr:`TimeLevels.rotating`): ``degree`` steps.

    Buffers are numbered over the program's own k time buffers (0 .. k-1, the *home*
    buffers, as the C program has them) followed by :attr:`TimeLevels.work_buffers` work
    buffers. ``reads[j]`` holds the launch's level ``-j`` (M = :attr:`TimeLevels.tracked`
    of them, level 0 the newest); the kernel loads those the update reads. The launch
    stores its level ``degree - j`` into ``writes[j]`` for j below
    :meth:`TimeLevels.stored_levels` (interior cells only); the next launch reads them,
    and the older levels it needs where this launch read them. Writing to other buffers
    than the launch reads keeps other blocks' reads race-free. ``boundary[j]`` is the
    home buffer holding the boundary values of the launch's levels T with ``T % k == j``:
    boundary cells are never written, so the C program's time level ``tau`` sees those of
    buffer ``(start + tau) % k``.
    """

    degree: int
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    boundary: tuple[int, ...]


@dataclass(frozen=True)
class LevelRun:
    """The launches of a rotating program's run and where its results go afterwards:
    ``placements`` copies the interior of work buffer ``src`` into home buffer ``dst``, so
    that each home buffer ends holding the level the C program leaves in it."""

    launches: tuple[LevelLaunch, ...]
    placements: tuple[tuple[int, int], ...]

    def place(self, buffers, dims: tuple[DimExtent, ...]) -> None:
        """Carry out the placements on ``buffers`` (numpy or cupy arrays, indexed by buffer
        number: a pool array, or a list of the home and work buffers), copying the
        interior cells of ``dims``."""
        interior = tuple(slice(d.lower, d.upper + 1) for d in dims)
        for src, dst in self.placements:
            buffers[dst][interior] = buffers[src][interior]


def last_degree_limit(levels: TimeLevels) -> int | None:
    """The largest degree of a rotating run's last launch, or None (any).

    After the run the C program's k buffers hold the last k levels. A launch of degree d
    leaves its last ``min(d, M)`` levels in its writes and its levels 0 .. -(M-1) in its
    reads: all k are in reach for d <= M, or for any d where M >= k (leapfrog)."""
    return levels.tracked if levels.buffers > levels.tracked else None


def level_launch_degrees(steps: int, bt: int, levels: TimeLevels) -> tuple[int, ...]:
    """Temporal degrees of a rotating program's launches: full launches of degree ``bt``,
    then the remainder (no parity constraint: the data moves through work buffers). A
    last launch longer than :func:`last_degree_limit` is split into one of degree
    ``d - 1`` and one of degree 1."""
    if steps < 0 or bt < 1:
        raise ValueError("steps must be >= 0 and bt >= 1")
    degrees = [bt] * (steps // bt) + ([steps % bt] if steps % bt else [])
    limit = last_degree_limit(levels)
    if limit is not None and degrees and degrees[-1] > limit:
        last = degrees.pop()
        degrees += [last - 1, 1]
    return tuple(degrees)


def level_run(steps: int, bt: int, start: int, levels: TimeLevels) -> LevelRun:
    """The launches of ``steps`` time steps of a rotating program whose first step reads
    its newest level from home buffer ``start``, and the placements after them. Each
    launch writes into the first M work buffers it does not read (the generated host
    code picks them the same way)."""
    k, m = levels.buffers, levels.tracked
    # the first launch reads the home buffers themselves (leapfrog: level -1 is in the
    # buffer it writes, k = 2 < M + 1)
    reads = tuple((start - j) % k for j in range(m))
    launches, time = [], 0
    for d in level_launch_degrees(steps, bt, levels):
        writes = tuple([b for b in range(k, k + levels.work_buffers) if b not in reads][:m])
        launches.append(LevelLaunch(d, reads, writes, tuple((start + time + j) % k
                                                              for j in range(k))))
        stored = levels.stored_levels(d)
        reads = writes[:stored] + reads[:m - stored]
        time += d
    if not launches:
        return LevelRun((), ())
    last = launches[-1]
    # where level T - j is at the end: the last launch's writes hold levels T .. T-s+1,
    # its reads levels T-d .. T-d-M+1
    stored = levels.stored_levels(last.degree)
    holder = {j: last.writes[j] for j in range(stored)}
    holder.update({last.degree + j: b for j, b in enumerate(last.reads)})
    placements = []
    for j in range(k):
        dst = (start + steps - j) % k
        if holder[j] != dst:  # a home buffer holding a level holds it where C does
            placements.append((holder[j], dst))
    return LevelRun(tuple(launches), tuple(placements))


WARP_SIZE = 32
#: Bytes of static shared memory a kernel may declare.
STATIC_SMEM_LIMIT = 48 * 1024


@lru_cache(maxsize=None)
def active_warp_fraction(bs: tuple[int, ...], radius: tuple[int, ...], level: int,
                         coarsen: int = 1) -> float:
    """The share of a block's warps (per cell of its threads) with a cell inside level
    ``level``'s window.

    A cell is computed at level L only if every in-plane index lies in [L*r, bS - L*r);
    warps are runs of 32 threads in linear order, the contiguous dimension fastest (``bs``
    in array order). With ``coarsen`` cells per thread, thread t of the outermost in-plane
    dimension holds its cells t*coarsen .. t*coarsen+coarsen-1, and each (warp, cell)
    counts once. Where some warp is idle, the kernels of :attr:`IdleWarps.SKIP` branch
    around the evaluation (:func:`computing_warp_fraction`). The same for every degree, so
    computed once per level.
    """
    threads = (bs[0] // coarsen, *bs[1:])
    window = [range(level * r, b - level * r) for b, r in zip(bs, radius)]
    active = set()
    for index in itertools.product(*window):
        linear, cell = divmod(index[0], coarsen)
        for i, b in zip(index[1:], threads[1:]):
            linear = linear * b + i
        active.add((cell, linear // WARP_SIZE))
    return len(active) / (coarsen * math.ceil(math.prod(threads) / WARP_SIZE))


def round_up(n: int, k: int) -> int:
    """``n`` rounded up to a multiple of ``k``."""
    return -(-n // k) * k


#: 32-bit registers of an SM (every GPU from P100 to H200 has 64K).
REGISTERS_PER_SM = 65536
#: ptxas allocates a thread's registers in steps of this many.
REGISTER_GRANULE = 8
MAX_REGISTERS_PER_THREAD = 255
#: Resident threads per SM on every GPU an5dpy models (P100 to H200).
MAX_THREADS_PER_SM = 2048
#: Resident blocks per SM on every GPU an5dpy models (P100 to H200).
MAX_BLOCKS_PER_SM = 32


def register_budget_problem(budget: int) -> str | None:
    """Why ``budget`` is no register budget that ``__launch_bounds__`` can express, or None.

    A budget reaches ptxas as the blocks per SM that must fit (:func:`budget_min_blocks`),
    and registers are per SM: at most :data:`MAX_THREADS_PER_SM` threads are resident, so no
    launch bound holds a thread below 65536 / 2048 = 32 registers (a smaller budget asks for
    more threads than an SM holds, which ptxas ignores with a warning); no thread may use
    more than :data:`MAX_REGISTERS_PER_THREAD`."""
    low = REGISTERS_PER_SM // MAX_THREADS_PER_SM
    if low <= budget <= MAX_REGISTERS_PER_THREAD:
        return None
    return (f"must be within {low}..{MAX_REGISTERS_PER_THREAD} registers per thread (launch "
            f"bounds cannot hold a thread below {REGISTERS_PER_SM} / {MAX_THREADS_PER_SM} = "
            f"{low}; none has more than {MAX_REGISTERS_PER_THREAD})")


def budget_min_blocks(budget: int, nthreads: int) -> int:
    """The blocks per SM that ``__launch_bounds__`` asks for to hold each of ``nthreads``
    threads to ``budget`` registers (how a register budget reaches ptxas), at most the
    blocks an SM holds: ptxas ignores a larger request (a block of 32 threads, as few
    as a coarsened plan may have, under a budget of 32 would ask for 64), so small blocks
    get the registers that many blocks leave (:func:`budget_register_limit`)."""
    return max(1, min(MAX_BLOCKS_PER_SM, REGISTERS_PER_SM // (budget * nthreads)))


def budget_register_limit(budget: int | None, nthreads: int) -> int:
    """Registers per thread ptxas may use under a budget's launch bounds: what
    :func:`budget_min_blocks` blocks leave each thread, down to the allocation granule.
    It can exceed the budget (a budget of 96 with 512 threads asks for 1 block, which may
    use 128). Without a budget (None) the launch bounds name the block's threads alone:
    one block must fit, so a block of 1024 threads gets 64 registers a thread, one of 512
    gets 128, and ptxas spills what a kernel needs beyond that."""
    blocks = 1 if budget is None else budget_min_blocks(budget, nthreads)
    per_thread = REGISTERS_PER_SM // (blocks * nthreads)
    if per_thread >= MAX_REGISTERS_PER_THREAD:
        return MAX_REGISTERS_PER_THREAD
    return per_thread // REGISTER_GRANULE * REGISTER_GRANULE


def computing_warp_fraction(plan: BlockingPlan, level: int) -> float:
    """The share of the plan's warps (per cell of its threads) that evaluate level
    ``level``: every warp where no level op branches (:attr:`IdleWarps.COMPUTE`, and warp
    shuffles, where every lane must reach every shuffle), else those with a cell in the
    level's window (:func:`active_warp_fraction`). Below 1, the level ops branch around
    the evaluation (:func:`an5dpy.cuda.macros.levels_with_idle_warps`), and the model
    charges the warps that evaluate."""
    if plan.idle is IdleWarps.COMPUTE or plan.barriers is Barriers.SHUFFLE:
        return 1.0
    return active_warp_fraction(plan.bs, plan.plane_radius, level, plan.coarsen)
