"""A numpy interpreter of the blocking schedule: the GPU's work, done on the CPU.

It runs a whole launch plan over the grid the way the generated kernels do: every thread
block of a launch at once (stream blocks that follow the same control flow are executed
together, all in-plane blocks and threads as array axes), registers as arrays, the two
shared-memory buffers per block, loads guarded at the array edge, halo threads, boundary
loads by buffer parity, and the stores of the compute region.

To prove that nothing reads what it must not, values nobody may consume are NaN: registers
before their first write, cells outside the array, shared memory outside the block, and
the results of halo threads (the GPU copies the centre value there; if a valid cell ever
consumed one, a NaN would reach the result). The interpreter also checks the double-buffer
discipline (no shared buffer is written while another op may still read it), that every
shared plane a level op reads was written for it (with one barrier per step, by a ``Share``
published by a barrier since: :meth:`_Group.check_published`; in a time step of several
statements, of each field read, :class:`SharedPlanes`) and that each launch stores every
interior cell exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Mapping, Sequence

import numpy as np

from an5dpy.errors import InternalError
from an5dpy.check.evaluate import compile_expr, numpy_type
from an5dpy.ir import Cast, CoefRead, Read, StencilInfo
from an5dpy.blocking.plan import (BlockingPlan, DimExtent, Launch,
                                  LaunchGeometry, LevelLaunch, Mode, grid_extents, launch_plan,
                                  level_run)
from an5dpy.blocking.build import build_schedule
from an5dpy.blocking.ops import (Accumulate, Boundary, Calc, KernelSchedule, Load, Schedule,
                                 Share, Store, Sync)
from an5dpy.blocking.trace import BlockRanges, ResolvedOp, block_trace


def simulate(info: StencilInfo, plan: BlockingPlan, grid: np.ndarray,
             env: Mapping[str, int | float], schedule: Schedule | None = None,
             read_only: tuple[np.ndarray, ...] = ()) -> np.ndarray:
    """Run the C program's time loop on ``grid`` (shape ``(k, *extents)``, k the array's
    time buffers) as the GPU would.

    ``env`` holds the scop's parameters (sizes, step count, scalar coefficients);
    ``read_only`` the values of the read-only arrays (``info.coefficients`` order). Returns
    the new grid; the input is not modified. A rotating program (several time levels,
    :class:`~an5dpy.blocking.plan.LevelLaunch`) runs over its k buffers followed by the
    work buffers, which start as NaN (nothing may read them before a launch wrote them).
    """
    dims = grid_extents(info, env)
    if info.coupled:
        return _simulate_fields(info, plan, grid, env, dims, schedule or build_schedule(plan),
                                read_only)
    expected = (info.time.buffers, *(d.size for d in dims))
    if grid.shape != expected:
        raise InternalError(f"grid shape {grid.shape} does not match the extents {expected}")
    schedule = schedule or build_schedule(plan)
    kernels = compiled_update(info, plan, env, read_only)
    out = np.array(grid, dtype=numpy_type(plan.dtype), copy=True)
    steps, start = info.time.steps(env), info.time.start_buffer(env)
    if not plan.levels.rotating:
        for launch in launch_plan(steps, plan.bt, start):
            run_launch(kernels, schedule.kernel(launch.degree), dims, out, launch)
        return out
    k = plan.levels.buffers
    pool = np.concatenate([out, np.full((plan.levels.work_buffers, *out.shape[1:]), np.nan,
                                        out.dtype)])
    run = level_run(steps, plan.bt, start, plan.levels)
    for launch in run.launches:
        run_launch(kernels, schedule.kernel(launch.degree), dims, pool, launch)
    run.place(pool, dims)
    return pool[:k].copy()


def field_shapes(info: StencilInfo, env: Mapping[str, int | float]) -> tuple[tuple[int, ...], ...]:
    """The shape of each field's buffers, ``(k, *extents)`` with k = 1 in place, in
    :attr:`~an5dpy.ir.StencilInfo.fields` order: the state of a program of several
    statements."""
    sizes = tuple(d.size for d in grid_extents(info, env))
    return tuple((f.buffers, *sizes) for f in info.fields)


def field_pool(info: StencilInfo, fields: Sequence[np.ndarray]) -> np.ndarray:
    """The device layout of a time step of several statements: shape ``(F, 2, *extents)``,
    two buffers per field, field after field (the generated host code's); a field updated
    in place (one buffer) is copied into both of its buffers."""
    pool = np.empty((len(fields), 2, *np.shape(fields[0])[1:]), np.asarray(fields[0]).dtype)
    for k, (f, values) in enumerate(zip(info.fields, fields)):
        pool[k] = values if f.buffers == 2 else values[0]
    return pool


def pool_fields(info: StencilInfo, env: Mapping[str, int | float], pool: np.ndarray
                ) -> tuple[np.ndarray, ...]:
    """The fields' arrays back from :func:`field_pool`'s layout after a run: both buffers
    of a double-buffered field, the buffer of the last time level of a field in place."""
    last = (info.time.start_buffer(env) + info.time.steps(env)) % 2
    return tuple(pool[k].copy() if f.buffers == 2 else pool[k, last][None].copy()
                 for k, f in enumerate(info.fields))


def _simulate_fields(info: StencilInfo, plan: BlockingPlan, fields, env, dims, schedule,
                     read_only) -> tuple[np.ndarray, ...]:
    """:func:`simulate` for a program of several statements. ``fields`` holds one array per
    field (:func:`field_shapes`); the run keeps two buffers of every field (a field in
    place gets a copy of itself, whose boundary cells are its own: :func:`field_pool`).
    Returns the fields' new values, in the same shapes."""
    shapes = field_shapes(info, env)
    if len(fields) != len(shapes) or any(np.shape(a) != sh for a, sh in zip(fields, shapes)):
        raise InternalError(f"field shapes {[np.shape(a) for a in fields]} do not match "
                            f"{list(shapes)}")
    kernels = compiled_update(info, plan, env, read_only)
    dtype = numpy_type(plan.dtype)
    # the generated code's layout (field, buffer, ..), run as (buffer, field, ..)
    pool = field_pool(info, [np.asarray(f, dtype) for f in fields])
    steps, start = info.time.steps(env), info.time.start_buffer(env)
    for launch in launch_plan(steps, plan.bt, start):
        run_launch(kernels, schedule.kernel(plan.kernel_degree(launch.degree)), dims,
                   pool.swapaxes(0, 1), launch)
    return pool_fields(info, env, pool)


def compiled_update(info: StencilInfo, plan: BlockingPlan, env: Mapping[str, int | float],
                    read_only: Sequence[np.ndarray] = ()) -> "_Kernels":
    """The update of ``info`` compiled for ``plan``, with the parameters of ``env`` and the
    values of the read-only arrays (``info.coefficients`` order), for :func:`run_launch`."""
    if len(read_only) != len(info.coefficients):
        raise InternalError(f"{len(read_only)} read-only arrays for "
                            f"{len(info.coefficients)} coefficients")
    return _Kernels(info, plan, dict(env),
                    {c.name: np.asarray(a, numpy_type(c.elem_type))
                     for c, a in zip(info.coefficients, read_only)})


class _Kernels:
    """The update expression compiled for each register/shared-memory mode."""

    def __init__(self, info: StencilInfo, plan: BlockingPlan, scalars: Mapping[str, float],
                 coefficients: Mapping[str, np.ndarray] | None = None):
        self.info = info
        self.plan = plan
        self.coefficients = dict(coefficients or {})
        self.dtype = numpy_type(plan.dtype)
        self.update = compile_expr(info.update, scalars)
        #: per sub-step, (field index, compiled update) of each statement
        self.substeps = [tuple((info.field_index(name), compile_expr(value, scalars))
                               for name, value in sub.updates) for sub in info.substeps]
        self.written_at = info.written_at
        if plan.mode is Mode.ASSOC:
            form = info.assoc
            self.acc_type = numpy_type(form.sum_type)
            if np.dtype(self.acc_type).itemsize < np.dtype(self.dtype).itemsize:
                self.acc_type = self.dtype
            by_plane: dict[int, list] = {}
            for dz, term in form.terms:
                by_plane.setdefault(dz, []).append(compile_expr(_as(term, form.sum_type), scalars))
            self.partials = {dz: fns for dz, fns in sorted(by_plane.items())}
            self.first_plane = min(self.partials)
            self.post = None
            if form.post is not None:
                op, k = form.post
                self.post = (op, compile_expr(k, scalars), k.ctype, form.sum_type)
            self.sum_type = numpy_type(form.sum_type)


def _as(expr, ctype):
    return expr if expr.ctype == ctype else Cast(ctype, expr.coord, expr, True)


# --------------------------------------------------------------------------- shared memory


@dataclass(frozen=True)
class SharedPlanes:
    """What one shared buffer holds: ``planes``, level T-1's planes as the mode stages
    them (the centre plane, or all 2r+1 stacked in mode none; a field axis first in a
    time step of several statements, :attr:`~an5dpy.blocking.plan.BlockingPlan.coupled`);
    ``older``, the older levels' planes staged beside them; ``fields``, in a time step of
    several statements, the (field, dz) planes written (the generated code writes no
    other, so a read of another is a wrong schedule; None: one field, all of it);
    ``share``, the (level, plane) a :class:`~an5dpy.blocking.ops.Share` wrote them for
    (None where the level op writes its own)."""

    planes: np.ndarray
    older: tuple[np.ndarray, ...] = ()
    fields: frozenset[tuple[int, int]] | None = None
    share: tuple[int, int] | None = None

    def field(self, f: int, dz: int, mode: Mode, r: int) -> np.ndarray:
        """Field ``f``'s plane ``dz`` of level T-1: an internal error where the buffer's
        writer did not write it."""
        if self.fields is not None and (f, dz) not in self.fields:
            raise InternalError(f"field {f}'s plane {dz} is read at in-plane neighbours "
                                "from a shared buffer that does not hold it")
        return self.planes[dz + r][f] if mode is Mode.NONE else self.planes[f]


# --------------------------------------------------------------------------- threads


@dataclass
class ThreadGrid:
    """In-plane coordinates and masks of every thread of every in-plane block.

    Arrays have shape ``(nb_1, .., nb_n, bs_1, .., bs_n)``: block indices, then thread
    indices, so shared-memory neighbours are shifts along the last n axes.
    """

    shape: tuple[int, ...]
    coords: list[np.ndarray]
    in_array: np.ndarray
    interior: np.ndarray
    boundary: np.ndarray
    active: list[np.ndarray]  # per level 0..d: interior and inside that level's window

    @staticmethod
    def of(geo: LaunchGeometry) -> "ThreadGrid":
        plan, d = geo.plan, geo.degree
        nblocks, bs = geo.plane_blocks, plan.bs
        n = len(bs)
        shape = (*nblocks, *bs)
        coords, tids = [], []
        for e, (dim, nb, b, c, h) in enumerate(zip(geo.plane_dims, nblocks, bs,
                                                   plan.compute_region(d), plan.halo(d))):
            bshape = [1] * (2 * n)
            bshape[e] = nb
            tshape = [1] * (2 * n)
            tshape[n + e] = b
            bi = np.arange(nb).reshape(bshape)
            ti = np.arange(b).reshape(tshape)
            coords.append(np.broadcast_to(dim.lower - h + bi * c + ti, shape))
            tids.append(np.broadcast_to(ti, shape))
        in_array = np.ones(shape, bool)
        interior = np.ones(shape, bool)
        for x, dim in zip(coords, geo.plane_dims):
            in_array &= (x >= 0) & (x < dim.size)
            interior &= (x >= dim.lower) & (x <= dim.upper)
        active = []
        for level in range(d + 1):
            m = interior.copy()
            for t, b, r in zip(tids, bs, plan.plane_radius):
                m &= (t >= level * r) & (t < b - level * r)
            active.append(m)
        return ThreadGrid(shape, coords, in_array, interior, in_array & ~interior, active)


def neighbour(values: np.ndarray, offset: tuple[int, ...]) -> np.ndarray:
    """Each thread's view of the value ``offset`` threads away in its own block (NaN outside)."""
    if not any(offset):
        return values
    n = len(offset)
    out = np.full_like(values, np.nan)
    dst = [slice(None)] * values.ndim
    src = [slice(None)] * values.ndim
    for e, o in enumerate(offset):
        axis = values.ndim - n + e
        size = values.shape[axis]
        if abs(o) >= size:
            return out
        if o >= 0:
            dst[axis], src[axis] = slice(0, size - o), slice(o, size)
        else:
            dst[axis], src[axis] = slice(-o, size), slice(0, size + o)
    out[tuple(dst)] = values[tuple(src)]
    return out


# --------------------------------------------------------------------------- launches


@lru_cache(maxsize=4096)
def _trace(kernel: KernelSchedule, key: tuple[int, ...]):
    s0, s1, lo, hi, d, r, below, above = key
    return block_trace(kernel, BlockRanges(0, s0, s1, lo, hi, d, r, below, above))


def _trace_key(rng: BlockRanges) -> tuple[int, ...]:
    """Local geometry with far-away boundaries clamped, so equal blocks share one trace."""
    top = rng.s1 + rng.d * rng.r
    return (rng.s0, rng.s1, max(rng.lo, -rng.r - 1), min(rng.hi, top), rng.d, rng.r,
            rng.below, rng.above)


def run_launch(kernels: _Kernels, kernel: KernelSchedule, dims: tuple[DimExtent, ...],
               grid: np.ndarray, launch: Launch | LevelLaunch) -> None:
    plan = kernels.plan
    geo = LaunchGeometry(plan, kernel.degree, dims)
    if geo.nblocks == 0:
        return
    threads = ThreadGrid.of(geo)
    groups: dict[tuple, list[int]] = {}
    zlo, zhi = geo.stream.lower, geo.stream.upper
    for b in range(geo.stream_blocks):
        s0, s1 = geo.stream_block_range(b)
        rng = BlockRanges.of(s0, s1, zlo, zhi, kernel.degree, plan.stream_radius, plan.reach)
        groups.setdefault(_trace_key(rng), []).append(rng.base)
    writes = np.zeros(grid.shape[2:] if plan.coupled else grid.shape[1:], np.int32)
    for key, bases in groups.items():
        _Group(kernels, kernel, threads, grid, launch, np.array(bases), writes, dims).run(
            _trace(kernel, key))
    interior = tuple(slice(d.lower, d.upper + 1) for d in dims)
    if not (writes[interior] == 1).all() or writes.sum() != writes[interior].sum():
        raise InternalError("a launch did not store every interior cell exactly once "
                            f"(degree {kernel.degree}, {plan.describe()})")


class _Group:
    """Stream blocks that run the same trace, executed together."""

    def __init__(self, kernels: _Kernels, kernel: KernelSchedule, threads: ThreadGrid,
                 grid: np.ndarray, launch: Launch | LevelLaunch, bases: np.ndarray,
                 writes: np.ndarray, dims: tuple[DimExtent, ...] = ()):
        self.k = kernels
        self.kernel = kernel
        self.t = threads
        self.grid = grid
        if isinstance(launch, LevelLaunch):
            self.reads, self.writes_to = launch.reads, launch.writes  # levels 0, -1, ..
            self.bnd = launch.boundary  # by level modulo the time buffers
        else:
            self.reads, self.writes_to = (launch.source,), (launch.source ^ 1,)
            self.bnd = (launch.boundary_even, launch.boundary_even ^ 1)  # by level parity
        self.src, self.dst = self.reads[0], self.writes_to[0]
        self.bases = bases
        self.writes = writes
        self.shape = (len(bases), *threads.shape)
        self.regs: dict = {}
        self.smem: dict[int, SharedPlanes] = {}
        self.pending_reads: set[int] = set()  # buffers read since the last barrier
        self.unpublished: set[int] = set()  # buffers a Share wrote since the last barrier
        self.r = kernel.radius
        self.nplane = len(threads.coords)
        # gather indices for one plane of every block
        self.coupled = kernels.plan.coupled
        first = 3 if self.coupled else 2  # pool axes: buffer, (field,) streaming, plane
        self.coords = [np.broadcast_to(np.clip(x, 0, grid.shape[first + e] - 1), self.shape)
                       for e, x in enumerate(threads.coords)]
        if self.coupled:
            self._field_masks(dims)

    # -- memory
    def reg(self, reg) -> np.ndarray:
        value = self.regs.get(reg)
        if value is None:
            lead = (len(self.k.info.fields),) if self.coupled else ()
            value = np.full((*lead, *self.shape), np.nan, self._reg_dtype(reg))
        return value

    def _reg_dtype(self, reg):
        if self.k.plan.mode is Mode.ASSOC and reg.level > 0:
            return self.k.acc_type
        return self.k.dtype

    def load(self, buffer: int, plane: int) -> np.ndarray:
        """Plane ``plane`` of ``buffer`` at every thread (of every field, field axis
        first, in a program of several statements)."""
        z = (self.bases + plane).reshape((-1,) + (1,) * len(self.t.shape))
        if ((z < 0) | (z >= self.grid.shape[-1 - self.nplane])).any():
            raise InternalError(f"load of plane {plane} outside the array")
        z = np.broadcast_to(z, self.shape)
        lead = (slice(None),) if self.coupled else ()
        values = self.grid[buffer][(*lead, z, *self.coords)].astype(self.k.dtype)
        values[..., ~np.broadcast_to(self.t.in_array, self.shape)] = np.nan
        return values

    # -- the fields of a time step of several statements
    def _field_masks(self, dims: tuple[DimExtent, ...]) -> None:
        """Per field, the threads' cells its statement writes (in-plane) and the planes."""
        self.field_cells, self.field_planes = [], []
        for f in self.k.info.fields:
            inside = np.ones(self.t.shape, bool)
            for x, dim, lo, hi in zip(self.t.coords, dims[1:], f.margin_lo[1:], f.margin_hi[1:]):
                inside &= (x >= dim.lower + lo) & (x <= dim.upper - hi)
            self.field_cells.append(inside)
            self.field_planes.append((dims[0].lower + f.margin_lo[0],
                                      dims[0].upper - f.margin_hi[0]))

    def time_of(self, field: int, level: int) -> int:
        """How many time steps field ``field`` has advanced at level ``level`` of the
        launch (it advances at its own sub-step of each step)."""
        return self.k.plan.field_time(level, self.k.written_at[field])

    def field_boundary(self, level: int, plane: int) -> np.ndarray:
        """Every field's value at level ``level`` at its boundary cells: the buffer of the
        parity of its own time at that level."""
        loaded = {b: self.load(self.bnd[b], plane) for b in (0, 1)}
        return np.stack([loaded[self.time_of(f, level) % 2][f]
                         for f in range(len(self.k.info.fields))])

    def field_stencil(self, level: int, ins, buf: int, plane: int, shared_before=False
                      ) -> np.ndarray:
        """Level ``level`` of every field at ``plane``: the statements of its sub-step
        evaluate their updates over level-1's planes ``ins`` (all fields; the planes read
        at in-plane neighbours through shared memory, the sub-step's as
        :meth:`~an5dpy.ir.StencilInfo.shared_reads` says, the others from the thread's
        registers); the other fields keep level-1's value; then each field's boundary
        cells take their values (:meth:`field_boundary`) and threads outside the level's
        window NaN. ``shared_before``: a :class:`Share` wrote the buffer before the step's
        barrier (:meth:`check_published`)."""
        r = self.r
        inputs = [self.reg(reg) for reg in ins]
        mode = self.k.plan.mode
        substep = (level - 1) % self.k.plan.substeps
        if shared_before:
            held = self.check_published(buf, level, plane)
        else:
            held = SharedPlanes(np.stack(inputs) if mode is Mode.NONE else inputs[r],
                                fields=frozenset(self.k.info.shared_reads(substep)))
            self.write_smem(buf, held)
            self.barrier()
        cache: dict = {}

        def read(node: Read | CoefRead) -> np.ndarray:
            if isinstance(node, CoefRead):
                return self.cached_coefficient(node, plane, cache)
            f = self.k.info.field_index(node.array)
            dz, plane_off = node.offset[0], node.offset[1:]
            key = (f, node.offset)
            if key not in cache:
                if not any(plane_off):  # the thread's own column: its register
                    cache[key] = inputs[dz + r][f]
                elif mode is not Mode.NONE and dz != 0:
                    raise InternalError("nondiag schedule used for a diagonal access")
                else:
                    cache[key] = neighbour(held.field(f, dz, mode, r), plane_off)
            return cache[key]

        out = inputs[r].copy()
        for f, update in self.k.substeps[substep]:
            out[f] = np.broadcast_to(np.asarray(update(read), self.k.dtype), self.shape)
        self.reads_done(buf)
        boundary = self.field_boundary(level, plane)
        active = np.broadcast_to(self.t.active[level], self.shape)
        in_array = np.broadcast_to(self.t.in_array, self.shape)
        for f, cells in enumerate(self.cells_of_fields(plane)):
            out[f] = np.where(cells & active, out[f], np.nan)
            out[f] = np.where(in_array & ~cells, boundary[f], out[f])
        return out

    def cells_of_fields(self, plane: int) -> list[np.ndarray]:
        """Per field, whether each thread's cell at ``plane`` is one its statement writes."""
        z = (self.bases + plane).reshape((-1,) + (1,) * len(self.t.shape))
        return [np.broadcast_to(self.field_cells[f], self.shape) & (z >= lo) & (z <= hi)
                for f, (lo, hi) in enumerate(self.field_planes)]

    def load_fields(self, plane: int, boundary: bool) -> np.ndarray:
        """Level 0 of every field: its cells from the launch's source buffer, its boundary
        cells (never written, so each buffer keeps its own values there) from the buffer
        of the launch's first time level."""
        values = self.load(self.bnd[0] if boundary else self.reads[0], plane)
        if not boundary:
            at_boundary = self.load(self.bnd[0], plane)
            in_array = np.broadcast_to(self.t.in_array, self.shape)
            for f, cells in enumerate(self.cells_of_fields(plane)):
                values[f] = np.where(in_array & ~cells, at_boundary[f], values[f])
        return values

    def load_level(self, level: int, plane: int, boundary: bool) -> np.ndarray:
        """Level ``level`` (0, -1, ..) of ``plane``: interior cells from the buffer the
        launch reads it from, boundary cells (all of a streaming-boundary plane) from the
        level's boundary buffer."""
        if boundary:
            return self.boundary_value(level, plane)
        values = self.load(self.reads[-level], plane)
        if self.bnd[level % len(self.bnd)] != self.reads[-level] and self.t.boundary.any():
            values = np.where(self.t.boundary, self.boundary_value(level, plane), values)
        return values

    def load_older(self, op: Load) -> None:
        """The older levels -1, -2, .. of a load. Read at the cell only, level -m is
        needed by the threads of its first reader's window (elsewhere NaN), and not on
        streaming-boundary planes; read at offsets, everywhere in the array."""
        levels = self.k.plan.levels
        if op.boundary and not levels.offset_reads:
            return
        for m, reg in enumerate(op.older, 1):
            values = self.load_level(-m, op.plane, op.boundary)
            if not levels.offset_reads:
                reader = levels.first_reader(m)  # beyond the degree: nobody reads it
                window = self.t.active[reader] if reader <= self.kernel.degree else False
                values = np.where(window, values, np.nan)
            self.regs[reg] = values

    def boundary_value(self, level: int, plane: int) -> np.ndarray:
        """Values of time level ``level`` at boundary cells: the buffer of that level
        modulo the time buffers (its parity in a double-buffered program)."""
        return self.load(self.bnd[level % len(self.bnd)], plane)

    def write_smem(self, buf: int, values: SharedPlanes) -> None:
        if buf in self.pending_reads:
            raise InternalError(f"shared buffer {buf} rewritten while it may still be read")
        self.smem[buf] = values

    def check_published(self, buf: int, level: int, plane: int) -> SharedPlanes:
        """What the op of level ``level`` at ``plane`` that only evaluates (one barrier per
        step) reads from shared buffer ``buf``: what a :class:`Share` wrote there for
        this very op, published by a barrier since. Checked, so that a schedule whose
        Share is missing, late, for another op, or not yet behind a barrier fails here
        instead of reading what happens to be in the buffer."""
        held = self.smem.get(buf)
        if held is None or held.share != (level, plane):
            raise InternalError(f"level {level} of plane {plane} reads shared buffer {buf}, "
                                "which no Share wrote for it")
        if buf in self.unpublished:
            raise InternalError(f"level {level} of plane {plane} reads shared buffer {buf} "
                                "before a barrier published it")
        return held

    def shared_input(self, src) -> SharedPlanes:
        """A :class:`Share`'s planes: level T-1's register (every field's in a time step of
        several statements, of which the generated ``SHARE`` writes those that any
        sub-step reads at in-plane neighbours)."""
        if not self.coupled:
            return SharedPlanes(self.reg(src))
        info = self.k.info
        return SharedPlanes(self.reg(src), fields=frozenset(
            (f, 0) for f in info.step_shared_fields))

    def barrier(self) -> None:
        self.pending_reads.clear()
        self.unpublished.clear()

    def reads_done(self, buf: int) -> None:
        self.pending_reads.add(buf)

    # -- ops
    def run(self, trace) -> None:
        with np.errstate(all="ignore"):
            for _, ops in trace:
                for rop in ops:
                    self.execute(rop)

    def execute(self, rop: ResolvedOp) -> None:
        op = rop.op
        match op:
            case None | Sync():
                if rop.barrier:
                    self.barrier()
            case Load() if self.coupled:
                self.regs[op.out] = self.load_fields(op.plane, op.boundary)
            case Load():
                self.regs[op.out] = self.load_level(0, op.plane, op.boundary)
                self.load_older(op)
            case Boundary() if self.coupled:
                self.regs[op.out] = self.field_boundary(op.level, op.plane)
                if rop.barrier:
                    self.barrier()
            case Calc() if self.coupled:
                self.regs[op.out] = self.field_stencil(op.level, op.ins, op.buf, op.plane,
                                                       op.shared)
            case Store() if self.coupled:
                value = self.field_stencil(op.level, op.ins, op.buf, op.plane, op.shared)
                self.store(op.plane, value, self.dst)
            case Share():
                self.write_smem(op.buf, replace(self.shared_input(op.src),
                                                share=(op.level, op.plane)))
                self.unpublished.add(op.buf)
            case Boundary():
                if op.prev is not None:  # the level T-2 copy: same buffer parity
                    self.regs[op.out] = self.reg(op.prev).copy()
                else:
                    self.regs[op.out] = self.boundary_value(op.level, op.plane)
                if rop.barrier:  # a guarded position keeps its barrier
                    self.barrier()
            case Calc():
                value = self.stencil(op.level, op.ins, op.buf, op.plane, op.hist, op.shared,
                                     op.shuffled)
                prev = self.reg(op.prev) if op.prev is not None else None
                self.regs[op.out] = self.finish(op.level, op.plane, value, prev)
            case Store():
                value = self.stencil(op.level, op.ins, op.buf, op.plane, op.hist, op.shared,
                                     op.shuffled)
                self.store(op.plane, value, self.dst)
                for reg, dst in zip(op.also, self.writes_to[1:]):  # levels d-1, d-2, ..
                    self.store(op.plane, self.reg(reg), dst, count=False)
            case Accumulate():
                self.accumulate(op, rop)
            case _:
                raise InternalError(f"unknown op {op!r}")

    def cached_coefficient(self, node: CoefRead, plane: int, cache: dict) -> np.ndarray:
        """:meth:`coefficient`, computed once per read in ``cache`` (one evaluation)."""
        key = (node.array, node.index)
        if key not in cache:
            cache[key] = self.coefficient(node, plane)
        return cache[key]

    def coefficient(self, node: CoefRead, plane: int) -> np.ndarray:
        """The read-only array's values at every thread's cell of streaming plane ``plane``
        plus the read's offsets; NaN where that falls outside the array (halo threads;
        the analysis proved no valid cell reads there, so a NaN in a result is our bug)."""
        values = self.k.coefficients[node.array]
        z = (self.bases + plane).reshape((-1,) + (1,) * len(self.t.shape))
        cell = [np.broadcast_to(z, self.shape)] + [np.broadcast_to(x, self.shape)
                                                   for x in self.t.coords]
        index = [np.full(self.shape, i.offset) if i.dim is None else cell[i.dim] + i.offset
                 for i in node.index]
        inside = np.ones(self.shape, bool)
        for x, size in zip(index, values.shape):
            inside &= (x >= 0) & (x < size)
        clipped = tuple(np.clip(x, 0, size - 1) for x, size in zip(index, values.shape))
        return np.where(inside, values[clipped], np.nan).astype(values.dtype)

    def stencil(self, level: int, ins, buf: int, plane: int, hist=(), shared_before=False,
                shuffled=False) -> np.ndarray:
        """Write the inputs to shared buffer ``buf``, barrier, evaluate the update at
        streaming plane ``plane`` (where read-only arrays are read); ``hist`` holds the
        registers of the older levels' planes (:attr:`TimeLevels.older` order), which
        reads of lag 2 and more take, the shared ones staged beside the inputs.
        ``shared_before``: a :class:`Share` wrote the buffer before the step's barrier;
        it must hold this level's input plane. ``shuffled``: the block is one warp whose
        lanes exchange the input plane's centre row by shuffles, so the neighbours are the
        block's own registers (NaN off the block, where a lane gets its own value: only
        cells outside the level's window read there), with no shared memory at all."""
        r = self.r
        inputs = [self.reg(reg) for reg in ins]
        levels = self.k.plan.levels
        mode = self.k.plan.mode
        older = {(o.lag, o.dz): (self.reg(reg), o.shared) for o, reg in zip(levels.older, hist)}
        staged = tuple(v for v, shared in older.values() if shared)
        if shuffled:
            if mode is not Mode.NONDIAG or staged:
                raise InternalError("warp shuffles carry only a nondiag level's centre row")
        elif shared_before:
            self.check_published(buf, level, plane)
        else:
            planes = np.stack(inputs) if mode is Mode.NONE else inputs[r]
            self.write_smem(buf, SharedPlanes(planes, staged))
            self.barrier()
        held = SharedPlanes(inputs[r]) if shuffled else self.smem[buf]
        shared, shared_older = held.planes, held.older
        staged_at = {key: k for k, key in enumerate(key for key, (_, s) in older.items() if s)}
        cache: dict = {}

        def read(node: Read | CoefRead) -> np.ndarray:
            if isinstance(node, CoefRead):
                return self.cached_coefficient(node, plane, cache)
            dz, plane_off = node.offset[0], node.offset[1:]
            if node.lag != 1:
                key = (node.lag, dz)
                if key not in older:
                    raise InternalError(f"no register holds the read {node!r}")
                if not any(plane_off):
                    return older[key][0]
                if key not in staged_at:
                    raise InternalError(f"{node!r} reads a neighbour of an unstaged plane")
                return neighbour(shared_older[staged_at[key]], plane_off)
            key = node.offset
            if key not in cache:
                if mode is Mode.NONE:
                    cache[key] = neighbour(shared[dz + r], plane_off)
                elif dz != 0:
                    if any(plane_off):
                        raise InternalError("nondiag schedule used for a diagonal access")
                    cache[key] = inputs[dz + r]
                else:
                    cache[key] = neighbour(shared, plane_off)
            return cache[key]

        value = self.k.update(read)
        if not shuffled:
            self.reads_done(buf)
        return np.broadcast_to(np.asarray(value, self.k.dtype), self.shape)

    def finish(self, level: int, plane: int, value: np.ndarray,
               prev: np.ndarray | None = None) -> np.ndarray:
        """Active threads keep their result, boundary cells take the level's buffer value
        (``prev``, the level T-2 register, when given; else a load), halo threads get NaN
        (never consumed)."""
        active, bnd = self.t.active[level], self.t.boundary
        out = np.where(active, value, np.nan).astype(value.dtype)
        if bnd.any():
            bval = prev if prev is not None else self.boundary_value(level, plane)
            out = np.where(bnd, bval, out)
        return out

    def store(self, plane: int, value: np.ndarray, dst: int, count: bool = True) -> None:
        """Store ``value`` at the cells of the launch's compute region into buffer
        ``dst``; ``count`` records the store for the exactly-once check."""
        mask = np.broadcast_to(self.t.active[self.kernel.degree], self.shape)
        z = np.broadcast_to((self.bases + plane).reshape((-1,) + (1,) * len(self.t.shape)),
                            self.shape)
        idx = (z[mask], *(c[mask] for c in self.coords))
        if self.coupled:  # each field's own cells: its boundary cells keep each buffer's
            for f, cells in enumerate(self.cells_of_fields(plane)):
                own = mask & cells
                self.grid[dst][(f, z[own], *(c[own] for c in self.coords))] = value[f][own]
        else:
            self.grid[dst][idx] = value[mask]
        if count:
            np.add.at(self.writes, idx, 1)

    def accumulate(self, op: Accumulate, rop: ResolvedOp) -> None:
        k, r = self.k, self.r
        level = op.level
        accs = [self.reg(a) for a in op.accs]
        if op.consume:
            arriving = self.reg(op.src).astype(k.dtype)
            self.write_smem(op.buf, SharedPlanes(arriving))
            self.barrier()
            shared = self.smem[op.buf].planes
            cache: dict = {}

            def read(node: Read) -> np.ndarray:
                if not isinstance(node, Read):  # the analysis gives no such update a sum form
                    raise InternalError("associative mode with a read-only array")
                if node.offset not in cache:
                    cache[node.offset] = neighbour(shared, node.offset[1:])
                return cache[node.offset]

            active = self.t.active[level]
            for dz, fns in k.partials.items():
                partial = fns[0](read)
                for fn in fns[1:]:
                    partial = partial + fn(read)
                partial = np.broadcast_to(np.asarray(partial, k.sum_type), self.shape)
                j = r - dz  # output plane op.plane + j receives offset dz from this arrival
                if dz == k.first_plane:
                    new = partial.astype(k.acc_type)
                else:
                    new = (accs[j].astype(k.sum_type) + partial).astype(k.acc_type)
                accs[j] = np.where(active, new, accs[j])
            self.reads_done(op.buf)
        elif rop.barrier:
            self.barrier()
        if op.complete == "boundary":
            accs[0] = self.boundary_value(level, op.plane).astype(k.acc_type)
        elif op.complete == "calc":
            total = accs[0].astype(k.sum_type)
            if k.post is not None:
                post_op, const, const_type, sum_type = k.post
                from an5dpy.ir import common_type
                ctype = common_type(sum_type, const_type)
                t = numpy_type(ctype)
                c = np.asarray(const(None), t)
                total = total.astype(t)
                total = total * c if post_op == "*" else total / c
            value = np.asarray(total).astype(k.dtype)
            accs[0] = self.finish(level, op.plane, value).astype(k.acc_type)
        for reg, value in zip(op.accs, accs):
            self.regs[reg] = value
        if op.store:
            self.store(op.plane, accs[0].astype(k.dtype), self.dst)
