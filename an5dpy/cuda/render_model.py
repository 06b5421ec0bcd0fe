"""The render model: everything the CUDA templates print, decided here.

:func:`render_model` turns a schedule into plain values: register names and types, the
macros (built by :mod:`an5dpy.cuda.macros`), the macro calls of every phase, the launch
geometry's numbers and the launch signature. The templates in ``templates/`` only print
them (loops and conditionals over these fields, no arithmetic). Output files follow the
original tool's names: ``x_host.cu`` (the user's file with the scop replaced by GPU code),
``x_kernel.cu`` and ``x_kernel.hu``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from an5dpy.blocking.plan import Barriers, BlockingPlan, Mode, budget_min_blocks
from an5dpy.blocking.ops import (Accumulate, Boundary, Calc, KernelSchedule, Load, Op, Phase,
                                 Schedule, Share, Store, Sync)
from an5dpy.blocking.printing import plane_text
from an5dpy.cexpr import c_expr
from an5dpy.blocking.plan import STATIC_SMEM_LIMIT, WARP_SIZE, TimeLevels, last_degree_limit
from an5dpy.cuda.field_macros import (field_declarations, field_level_macros, field_name,
                                      field_plane_macros, field_update_macros)
from an5dpy.blocking.guards import BOUNDARY_PLANE, EXISTS, STORES
from an5dpy.cuda.macros import (ASSOC_LAST, ASSOC_TAKE, EVALUATE_HALF, FINISH_PART,
                                SYNC_MACRO, WRITE_HALF, CoefLayout, ConstantTable, LineMacro,
                                Macro, OutlinedCall, accumulator_type, assoc_guard_flags,
                                boundary_pointer, outlines_calls,
                                CELL_MAJOR_INDEX, cell_major_index, cell_major_read,
                                WARP_ACT, coef_layouts, level_macros, loaded_assoc_macros,
                                warp_branch_levels, loads_boundary, older_name,
                                plane_macros, row_neighbours, smem_read, update_macros,
                                UPDATE_MACRO, P_BUF, P_PLANE, history_params, input_params,
                                neighbour_param, update_params)
from an5dpy.errors import InternalError
from an5dpy.ir import CoefRead, Read, StencilInfo

THREAD_AXES = ("x", "y")  # in-plane dims from the contiguous one outwards
#: Most cells in one plane (the dimensions after the streamed one): kernels offset planes
#: with a 32x32->64-bit multiply, and the launch refuses larger planes.
PLANE_CELLS_MAX = 2 ** 31 - 1
#: Threads per in-plane dimension (array order) of the naive baseline kernel.
NAIVE_BLOCK = {2: (8, 32), 3: (8, 32)}


@dataclass(frozen=True)
class PlaneDim:
    """One in-plane dimension as the kernel sees it (``index`` in array order)."""

    index: int
    thread: str  # threadIdx component
    bs: int
    radius: int


@dataclass(frozen=True)
class KernelDim:
    """One in-plane dimension in the kernel of one degree: thread ``an5d_t<index>`` of
    block ``an5d_b<index>`` sits at ``an5d_lo<index> - halo + block * compute + thread``."""

    index: int
    thread: str
    halo: int
    compute: int


@dataclass(frozen=True)
class Window:
    """Level ``level``'s window: thread ``an5d_t<index>`` in ``[lo, hi)`` for each
    ``(index, lo, hi)`` of ``bounds``; threads inside set ``bit`` of ``an5d_act``."""

    level: int
    bit: int
    bounds: tuple[tuple[int, int, int], ...]


@dataclass(frozen=True)
class PhaseCode:
    name: str
    calls: tuple[str, ...]


@dataclass(frozen=True)
class KernelCode:
    name: str
    degree: int
    halo: tuple[int, ...]  # per in-plane dim (array order)
    compute: tuple[int, ...]
    dims: tuple[KernelDim, ...]  # array order
    block_order: tuple[KernelDim, ...]  # contiguous dimension first (block index order)
    depth: int  # degree * r: planes between a block's first load and its first store
    reads_odd_boundary: bool  # a passed-on level is odd (level 1 when degree > 1)
    registers: tuple[tuple[str, str], ...]  # (ctype, name)
    macros: tuple[Macro, ...]
    undefs: tuple[str, ...]  # every macro the kernel defines, in order
    prologue: PhaseCode
    head_lowermost: PhaseCode | None  # None in a compact kernel
    head_middle: PhaseCode | None
    inner: PhaseCode
    tail: PhaseCode
    head_steps: tuple[int, int]  # lowermost, middle
    unroll: int
    #: The per-thread pointers into the buffers, as C declarations, where they are not
    #: the template's own lines for one double-buffered array: a rotating program's, or
    #: every field's of a time step of several statements (with their cell flags).
    pointers: tuple[str, ...] = ()
    #: The time steps a launch of this kernel advances (the launcher's ``degree``): the
    #: degree, or the levels over the sub-steps per time step.
    steps: int = 0
    #: The thread's cells' declarations (positions, flags, level bits), and each cell's
    #: buffer offset (``an5d_origin``; ``an5d_origin_x<m>`` for cell m of a coarsened
    #: thread).
    cell_lines: tuple[str, ...] = ()
    cell_origins: tuple[str, ...] = ()
    #: Whether every cell of the block is interior (a C condition; empty where the plan
    #: has no inner phase of its own for such blocks,
    #: :attr:`~an5dpy.blocking.plan.BlockingPlan.interior_phase`), and the declarations
    #: that then hold in its inner phase (:func:`_interior_lines`).
    interior_block: str = ""
    interior_lines: tuple[str, ...] = ()
    #: Whether its level ops branch on the warp's level bits (some level has idle warps,
    #: :func:`~an5dpy.cuda.macros.warp_computes`): its cells declare them.
    warp_or: bool = False

    @property
    def compact(self) -> bool:
        return self.head_lowermost is None


@dataclass(frozen=True)
class LaunchParam:
    """One parameter every launch takes after the buffers: its C type and its names in the
    kernel, in the launcher (``<prefix>_launch``, ``<prefix>_launch_naive``) and in the host
    region, and what it holds (``kind``, ``ref``): ``size`` (``ref`` ``"n0"``, ``"lo0"``,
    ``"hi0"``, ...), ``scalar`` (the user's scalar), ``coef`` (a read-only array's device
    pointer; ``ref`` its name) or ``coef_extent`` (``ref`` ``(name, k)``)."""

    kind: str
    ref: str | tuple[str, int]
    ctype: str  # in the launcher and the host region
    kernel: str  # the kernel's name
    launch: str  # the launcher's name
    host: str  # the host region's name
    kernel_ctype: str = ""  # where the kernel's type differs (restrict-qualified pointers)

    @property
    def kernel_decl(self) -> str:
        return _declaration(self.kernel_ctype or self.ctype, self.kernel)

    @property
    def launch_decl(self) -> str:
        return _declaration(self.ctype, self.launch)


def _declaration(ctype: str, name: str) -> str:
    """``int n0``, ``const float *f``, ``const float *__restrict__ f`` (a pointer's star
    beside the name, a qualifier apart)."""
    return f"{ctype}{name}" if ctype.endswith("*") else f"{ctype} {name}"


@dataclass(frozen=True)
class Signature:
    """The parameters every launch takes after the buffers, in order, as the templates
    spell them and the CUDA runtime passes them (:func:`launch_signature`)."""

    params: tuple[LaunchParam, ...]

    @property
    def kernel_params(self) -> str:
        """``, int an5d_n0, ..., float c``"""
        return _join(p.kernel_decl for p in self.params)

    @property
    def kernel_args(self) -> str:
        """``, n0, ..., c`` (the launcher's names)"""
        return _join(p.launch for p in self.params)

    @property
    def launch_params(self) -> str:
        """``, int n0, ..., float c``"""
        return _join(p.launch_decl for p in self.params)

    @property
    def host_args(self) -> str:
        """``, an5d_n0, ..., c`` (the host region's names)"""
        return _join(p.host for p in self.params)


def _join(items) -> str:
    return "".join(f", {item}" for item in items)


def launch_signature(ndim: int, scalars: tuple[tuple[str, str], ...],
                     coefs: tuple[CoefLayout, ...] = ()) -> Signature:
    """The launch parameters: the extents ``n0..`` and interior bounds ``lo0, hi0, ..``,
    the update's scalars, then each read-only array's pointer and variable extents
    (:class:`an5dpy.cuda.macros.CoefLayout`)."""
    sizes = ([f"n{d}" for d in range(ndim)]
             + [name for d in range(ndim) for name in (f"lo{d}", f"hi{d}")])
    params = [LaunchParam("size", s, "int", f"an5d_{s}", s, f"an5d_{s}") for s in sizes]
    params += [LaunchParam("scalar", name, ct, name, name, name) for ct, name in scalars]
    for c in coefs:
        params.append(LaunchParam("coef", c.name, f"const {c.elem_type} *", c.pointer,
                                  c.pointer, c.pointer,
                                  kernel_ctype=f"const {c.elem_type} *__restrict__"))
        params += [LaunchParam("coef_extent", (c.name, k), "int", c.extent_param(k),
                               c.extent_param(k), c.extent_param(k))
                   for k in c.extent_params]
    return Signature(tuple(params))


@dataclass(frozen=True)
class RotatingBuffers:
    """The buffers a rotating program's launch takes (:class:`~an5dpy.blocking.plan.
    LevelLaunch`): its levels 0, -1, .. to read (``src``, ``src_old``, ``src_old2``, ..),
    as many to write its last levels into (``dst``, ``dst_old``, ..) and one boundary
    buffer per level modulo the time buffers; as the kernel, the launcher and the host
    name them, in one order."""

    boundary: tuple[str, ...]  # the launcher's names of the boundary buffers, by residue
    tracked: int  # levels a launch reads and writes (TimeLevels.tracked)
    history: int  # levels the update reads (the naive kernel takes that many)
    last_degree_max: int | None  # the last launch's largest degree (None: any)

    @staticmethod
    def of(levels: TimeLevels) -> "RotatingBuffers":
        if levels.buffers == 2:
            names = ("bnd_even", "bnd_odd")
        else:
            names = tuple(f"bnd_{j}" for j in range(levels.buffers))
        return RotatingBuffers(names, levels.tracked, levels.history,
                               last_degree_limit(levels))

    # The numbers the host code and the launch plan print (the templates do no arithmetic).
    @property
    def k(self) -> int:
        """The program's time buffers (the first buffers of the device pool)."""
        return len(self.boundary)

    @property
    def pool(self) -> int:
        """Buffers on the device: the program's k, then the work buffers."""
        return self.k + 2 * self.tracked

    @property
    def first_work(self) -> int:
        """The first work buffer (after the program's k)."""
        return self.k

    @property
    def first_reads(self) -> tuple[tuple[int, int], ...]:
        """(j, s): the first launch reads its level -j from home buffer (start + s) % k."""
        return tuple((j, self.back(j)) for j in range(self.tracked))

    def back(self, levels: int) -> int:
        """Added modulo k to the buffer of a level, the buffer of the level ``levels``
        before it (the host code adds, since C's % keeps a negative operand's sign)."""
        return -levels % self.k

    @property
    def naive_older(self) -> tuple[tuple[str, int], ...]:
        """The naive kernel's older levels (lag 2, 3, ..): its parameter, and the shift
        that, added modulo k to the buffer of level t, gives the level's buffer."""
        return tuple((older_name("src_old", lag - 1), self.back(lag - 1))
                     for lag in range(2, self.history + 1))

    @property
    def residues(self) -> tuple[int, ...]:
        return tuple(range(self.k))

    @property
    def reads(self) -> tuple[str, ...]:
        return tuple("src" if j == 0 else older_name("src_old", j)
                     for j in range(self.tracked))

    @property
    def writes(self) -> tuple[str, ...]:
        return tuple("dst" if j == 0 else older_name("dst_old", j)
                     for j in range(self.tracked))

    @property
    def names(self) -> tuple[str, ...]:
        return (*self.reads, *self.writes, *self.boundary)

    def kernel_params(self, dtype: str) -> str:
        """The kernel's buffer parameters; the reads and writes never overlap (the boundary
        buffers are read at boundary cells only, which no launch writes)."""
        return (", ".join([*(f"const {dtype} *__restrict__ an5d_{b}" for b in self.reads),
                           *(f"{dtype} *__restrict__ an5d_{b}" for b in self.writes)])
                + ",\n    " + ", ".join(f"const {dtype} *an5d_{b}" for b in self.boundary))

    def launch_params(self, dtype: str) -> str:
        return (", ".join([*(f"const {dtype} *{b}" for b in self.reads),
                           *(f"{dtype} *{b}" for b in self.writes)])
                + ",\n    " + ", ".join(f"const {dtype} *{b}" for b in self.boundary))

    @property
    def launch_args(self) -> str:
        return ", ".join(self.names)

    def naive_params(self, dtype: str, prefix: str = "") -> str:
        """The naive launcher's (or, with ``prefix`` ``an5d_``, kernel's) older-level
        parameters, after ``src``."""
        return "".join(f", const {dtype} *{prefix}{name}" for name, _ in self.naive_older)

    @property
    def naive_args(self) -> str:
        return "".join(f", {name}" for name, _ in self.naive_older)


@dataclass(frozen=True)
class RenderModel:
    stem: str
    prefix: str  # C identifier prefix of everything generated
    include_guard: str  # of the header
    dtype: str
    ndim: int
    plan_text: str
    bt: int
    sl: int | None
    stream_length: str  # planes per stream block, a C expression
    radius: int  # streaming
    reach_above: int  # planes read above the interior
    plane_dims: tuple[PlaneDim, ...]  # array order (outer in-plane dim first)
    thread_block: tuple[int, ...]  # dim3 block: x (contiguous) first
    coarsen: int  # cells per thread along dimension 1
    nthreads: int
    smem_planes: int  # per buffer
    smem_buffers: int  # two, two per level with one barrier per step, none with shuffles
    smem_bytes: int  # all buffers (:attr:`~an5dpy.blocking.plan.BlockingPlan.smem_bytes`)
    smem_row_shape: tuple[int, ...]  # one plane (:attr:`~.BlockingPlan.smem_row_shape`)
    smem_wrap: bool
    scalars: tuple[tuple[str, str], ...]  # (ctype, name) of scalar parameters
    signature: Signature
    shared_macros: tuple[LineMacro, ...]  # every kernel defines them (and undefines them)
    sync_macro: LineMacro | None  # None where no kernel has a barrier (warp shuffles)
    kernels: tuple[KernelCode, ...]
    degrees: tuple[int, ...]
    baseline: "BaselineCode | None" = None
    source_name: str = ""
    header: str = ""  # file name of the generated header (x_kernel.hu)
    max_registers: int | None = None  # per-thread register budget (--regs)
    #: How the plan was chosen, for the files' header comment: empty where the user gave
    #: every option (the output then stays as it always was), else the model's choice.
    plan_note: str = ""

    @property
    def warp_or(self) -> bool:
        """Whether a kernel needs ``an5d_warp_or`` (templates/kernel.cu.j2)."""
        return any(k.warp_or for k in self.kernels)

    @property
    def full_warps(self) -> bool:
        """Whether every warp of a block has 32 threads (``an5d_warp_or``'s lane mask is
        then a constant)."""
        return self.nthreads % WARP_SIZE == 0

    @property
    def plan_note_lines(self) -> str:
        """The plan note as the continuation of a one-line header comment (or nothing)."""
        return f"\n   {self.plan_note}" if self.plan_note else ""
    constants: tuple[str, tuple[str, ...]] = ("", ())  # constant-memory array: name, values
    #: every kernel's first lines: the reciprocals of the update's divisors
    #: (:meth:`~an5dpy.cuda.macros.ConstantTable.divide`)
    divisors: tuple[str, ...] = ()
    #: the library functions the update calls out of line
    #: (:meth:`~an5dpy.cuda.macros.ConstantTable.call`)
    outlined: tuple[OutlinedCall, ...] = ()
    levels: TimeLevels = TimeLevels()
    rotating: RotatingBuffers | None = None  # None: the double-buffered launch
    fields: int = 0  # a time step of several statements: its fields (two buffers each)
    #: the kernel of a plan whose computing threads load the halo (templates/
    #: halo_loaded.cu.j2), None for the schedule's kernels
    halo_loaded: "HaloLoadedCode | None" = None

    @property
    def device_buffers(self) -> int:
        """Grid buffers the host code allocates on the device: the program's time buffers,
        and a rotating program's work buffers after them."""
        if self.fields:
            return 2 * self.fields
        return self.rotating.pool if self.rotating else self.levels.buffers

    @property
    def size_signature(self) -> Signature:
        """The sizes alone (the placement copy of a rotating program takes no scalars)."""
        return launch_signature(self.ndim, ())

    @property
    def launch_bounds(self) -> str:
        """``__launch_bounds__`` arguments: with a register budget, the blocks per SM that
        fit in it, so ptxas holds each thread to it (``-maxrregcount`` is ignored for
        kernels that have launch bounds)."""
        if not self.max_registers:
            return str(self.nthreads)
        return f"{self.nthreads}, {budget_min_blocks(self.max_registers, self.nthreads)}"

    @property
    def dynamic_smem(self) -> bool:
        """Static __shared__ arrays are limited to 48 KB; above that the kernel takes
        dynamic shared memory and the launcher raises the kernel's limit."""
        return self.smem_bytes > STATIC_SMEM_LIMIT

    @property
    def smem_buffer_shape(self) -> str:
        """One shared buffer: planes, then the padded plane."""
        dims = "".join(f"[{n}]" for n in self.smem_row_shape)
        return f"[{self.smem_planes}]{dims}"

    @property
    def smem_shape(self) -> str:
        return f"[{self.smem_buffers}]{self.smem_buffer_shape}"


@dataclass(frozen=True)
class BaselineCode:
    """The naive one-kernel-per-time-step version (benchmark baseline)."""

    name: str
    expr: str
    block: tuple[int, int]  # threads (y, x): 2D over dims 0 and 1, 3D over dims 1 and 2
    #: A time step of several statements: one kernel per sub-step (``<name>_s<j>``), run in
    #: order by the naive launcher; each holds its statements as C statements over the
    #: cell ``an5d_at`` (``expr`` is then unused).
    substeps: tuple[tuple[str, ...], ...] = ()

    @property
    def threads_x(self) -> int:
        return self.block[1]

    @property
    def threads_y(self) -> int:
        return self.block[0]


def identifier(stem: str) -> str:
    ident = re.sub(r"\W", "_", stem)
    return ident if not ident[0].isdigit() else "_" + ident


# --------------------------------------------------------------------------- phases


def _arguments(op: Op, q: str, reg=str) -> str:
    """The arguments of an op's macro (its plain form's), each register printed by
    ``reg`` (a coarsened kernel's cell names its own registers)."""
    match op:
        case Load():
            return f"{', '.join(map(reg, op.registers()))}, {q}"
        case Boundary():
            return f"{reg(op.out)}, {reg(op.prev) if op.prev is not None else q}"
        case Calc():
            prev = "".join(f", {reg(r)}" for r in ((op.prev,) if op.prev else ()) + op.hist)
            return f"{reg(op.out)}, {', '.join(map(reg, op.ins))}{prev}, {q}, {op.buf}"
        case Store():
            hist = "".join(f", {reg(r)}" for r in op.hist + op.also)
            return f"{q}, {', '.join(map(reg, op.ins))}{hist}, {op.buf}"
        case Accumulate():
            return f"{reg(op.src)}, {', '.join(map(reg, op.accs))}, {q}, {op.buf}"
        case Share():
            return f"{reg(op.src)}, {op.buf}"
    raise InternalError(f"no macro for {op!r}")


def _assoc_last(op: Accumulate) -> int:
    """``AN5D_FIN`` (0 running, 1 finish, 2 boundary value) or, at the last level,
    ``AN5D_DO_STORE`` of a plain Accumulate."""
    return int(op.store) if op.final else {None: 0, "calc": 1, "boundary": 2}[op.complete]


def _call(op: Op, relative: bool, guarded: bool) -> str:
    """The macro call of one op; a guarded phase calls the ``G_`` form of every op that
    has one (the guard decides at run time what the op does)."""
    g = "G_" if guarded else ""
    q = plane_text(op.plane, relative)
    match op:
        case Sync():
            return "SYNC();"
        case Load():
            return f"{'G_LOAD' if guarded else op.name}({_arguments(op, q)});"
        case Boundary() | Share():  # a Share runs unguarded (nobody reads a skipped one)
            return f"{op.name}({_arguments(op, q)});"
        case Calc() | Store():
            return f"{g}{op.name}({_arguments(op, q)});"
        case Accumulate():
            if guarded:
                return f"G_{op.name}({_arguments(op, q)});"
            return f"{op.name}({_arguments(op, q)}, {int(op.consume)}, {_assoc_last(op)}, 0);"
    raise InternalError(f"no macro for {op!r}")


#: A coarsened kernel's macro that runs a statement for one of the thread's cells:
#: ``AN5D_CELL<m>(statement)`` (:func:`_cell_macros`).
CELL_MACRO = "AN5D_CELL"


def cell_register(reg, m: int) -> str:
    """Cell ``m``'s copy of a schedule register in a coarsened kernel
    (:func:`cell_suffixes`)."""
    return f"{reg}_x{m}"


@dataclass(frozen=True)
class Coarsening:
    """How a coarsened kernel's ops treat the thread's cells: ``rows``, the offsets along
    dimension 1 at which the update reads level T-1's plane in the cell's row
    (:func:`an5dpy.cuda.macros.row_neighbours`), passed to each cell as its neighbour's
    register where the thread holds that cell, else as a shared-memory load; ``shared``,
    the cells whose values other threads read (the others skip the shared-memory
    write: in 2D nondiag every shared read is a row read, so only the cells within the
    reach of the run's ends are read by the neighbouring threads, and the plane is
    cell-major, :attr:`~an5dpy.blocking.plan.BlockingPlan.cell_major`)."""

    plan: BlockingPlan
    rows: tuple[int, ...]
    shared: tuple[int, ...]

    @staticmethod
    def of(info: StencilInfo, plan: BlockingPlan) -> "Coarsening":
        rows = row_neighbours(info, plan)
        if plan.cell_major and max(map(abs, rows), default=0) != plan.plane_radius[0]:
            # every in-plane read of a cell-major kernel is a row read within the radius
            raise InternalError(f"row reads {rows} of a cell-major plan of radius "
                                f"{plan.plane_radius[0]}")
        return Coarsening(plan, rows, plan.shared_cells)

    def neighbours(self, op: Calc | Store, m: int) -> str:
        """Cell ``m``'s row-neighbour arguments of a level op."""
        centre, c = op.ins[self.plan.stream_radius], self.plan.coarsen
        inplane = lambda dy: (dy, *(0,) * (self.plan.ndim - 2))  # noqa: E731

        def other_thread(dy: int) -> str:
            if op.shuffled:
                lanes, cell = divmod(m + dy, c)
                return shuffle_read(cell_register(centre, cell), lanes)
            if self.plan.cell_major:
                return cell_major_read(self.plan, m, dy, str(op.buf))
            return smem_read(self.plan, '0', inplane(dy), str(op.buf))

        return "".join(f", {cell_register(centre, m + dy)}" if 0 <= m + dy < c
                       else f", {other_thread(dy)}" for dy in self.rows)


def has_barriers(plan: BlockingPlan) -> bool:
    """Whether the plan's kernels wait at barriers at all (not with warp shuffles)."""
    return plan.barriers is not Barriers.SHUFFLE


def shuffle_read(register: str, lanes: int) -> str:
    """The value of ``register`` in the lane ``lanes`` away in the warp (the one spelling
    of a warp shuffle): every lane of the warp executes it (the level ops stay
    branch-free, :func:`an5dpy.cuda.macros.levels_with_idle_warps`); a lane whose source
    is off the warp gets its own value, read only by cells outside the level's window."""
    if lanes < 0:
        return f"__shfl_up_sync(0xffffffffu, {register}, {-lanes})"
    return f"__shfl_down_sync(0xffffffffu, {register}, {lanes})"


def _coarse_calls(op: Op, relative: bool, guarded: bool, how: Coarsening
                  ) -> tuple[str, ...]:
    """The lines of one op in a coarsened kernel: each cell of the thread runs the op's
    macro (its ``_W`` half for every cell whose values are shared, the op's one barrier,
    then its ``_E`` half for every cell, where the op has a barrier); the guards of a
    tail op are decided once, on the plane, for all cells."""
    plan = how.plan
    q = plane_text(op.plane, relative)

    def each(name: str, extra=lambda m: "", cells=range(plan.coarsen)) -> tuple[str, ...]:
        return tuple(f"{CELL_MACRO}{m}({name}({_arguments(op, q, lambda r, m=m: cell_register(r, m))}"
                     f"{extra(m)}));" for m in cells)

    match op:
        case Sync():
            return ("SYNC();",)
        case Load():
            return each("G_LOAD" if guarded else op.name)
        case Boundary():
            return each(op.name)
        case Share():
            return each(op.name, cells=how.shared)
        case Calc() | Store():
            rows = lambda m: how.neighbours(op, m)  # noqa: E731
            # one barrier per step: Share ops wrote the inputs, the step's Sync published
            # them, and the op only evaluates (its macro is the evaluation half already);
            # with warp shuffles the op only evaluates too
            sync = () if op.evaluates_only else ("__syncthreads();",)
            writes = () if op.evaluates_only else each(op.name + WRITE_HALF, rows, how.shared)
            plain = (*writes, *sync,
                     *each(op.name if op.evaluates_only else op.name + EVALUATE_HALF, rows))
            if not guarded:
                return plain
            if isinstance(op, Store):
                return (f"if ({STORES.call(q)}) {{", *plain,
                        "} else __syncthreads();" if sync else "}")
            boundary = Boundary(op.level, op.out, op.plane, op.prev)
            return (f"if ({BOUNDARY_PLANE.call(q)}) {{", f"if ({EXISTS.call(q)}) {{",
                    *_coarse_calls(boundary, relative, False, how), "}", *sync,
                    "} else {", *plain, "}")
        case Accumulate():
            take = (*each(op.name + WRITE_HALF), "__syncthreads();",
                    *each(op.name + EVALUATE_HALF))
            if not guarded:
                last = _assoc_last(op)
                return ((take if op.consume else ())
                        + (each(op.name + FINISH_PART, lambda m: f", {last}") if last else ()))
            take_flag, last_flag = assoc_guard_flags(q, plan.stream_radius, op.final)
            return ("{", take_flag, last_flag, f"if ({ASSOC_TAKE}) {{", *take,
                    "} else __syncthreads();",
                    *each(op.name + FINISH_PART, lambda m: f", {ASSOC_LAST[op.final]}"), "}")
    raise InternalError(f"no macro for {op!r}")


def _phase_code(phase: Phase, how: Coarsening | None) -> PhaseCode:
    if how is not None:
        return PhaseCode(phase.name, tuple(
            line for op in phase.ops
            for line in _coarse_calls(op, phase.relative, phase.guarded, how)))
    return PhaseCode(phase.name, tuple(_call(op, phase.relative, phase.guarded)
                                       for op in phase.ops))


def _windows(plan: BlockingPlan, dims: tuple[KernelDim, ...], degree: int
             ) -> tuple[Window, ...]:
    """Each level's window ``[T*r, bS - T*r)`` per in-plane dimension."""
    return tuple(
        Window(level, 1 << level,
               tuple((d.index, level * r, b - level * r)
                     for d, b, r in zip(dims, plan.bs, plan.plane_radius)))
        for level in range(degree + 1))


def _kernel_code(info: StencilInfo, plan: BlockingPlan, ks: KernelSchedule, prefix: str,
                 constants: ConstantTable, plane_dims: tuple[PlaneDim, ...],
                 shared: tuple[LineMacro, ...]) -> KernelCode:
    dtype = plan.dtype
    d = ks.degree
    if plan.coupled:  # the field ops; a register of every field for each of the schedule's
        macros = field_level_macros(info, plan, d)
        regs = tuple((dtype, field_name(str(reg), k)) for reg in ks.registers()
                     for k in range(plan.fields))
    else:
        macros = level_macros(info, plan, d, constants)
        if plan.mode is Mode.ASSOC:
            acc_type = accumulator_type(info.assoc.sum_type, dtype)
            regs = tuple((acc_type if reg.level > 0 else dtype, str(reg))
                         for reg in ks.registers())
        else:
            regs = tuple((dtype, str(reg)) for reg in ks.registers())
    dims = tuple(KernelDim(pd.index, pd.thread, h, c)
                 for pd, h, c in zip(plane_dims, plan.halo(d), plan.compute_region(d)))
    reads_odd = d > 1 and not plan.coupled
    pointers = (_rotating_pointers(plan, d) if plan.levels.rotating
                else field_declarations(info, plan, d) if plan.coupled
                else _double_buffer_pointers(plan, reads_odd))
    windows = _windows(plan, dims, d)
    warp_or = bool(warp_branch_levels(plan, d))
    how = Coarsening.of(info, plan) if plan.coarsen > 1 else None
    origins = _cell_origins(plan, info.ndim)
    # a coarsened cell's pointers are its macro's (below), under the cell's flags
    interior = (_interior_lines(plan, (*origins, *(pointers if plan.coarsen == 1 else ())))
                if plan.interior_phase else ())
    if plan.coarsen > 1:  # every value of a cell, the registers too, once per cell
        macros = (*_cell_macros(plan, pointers, warp_or), *macros)
        if plan.coupled:  # the ops pass a cell's register group, the macros paste the field
            regs = tuple((dtype, field_name(cell_register(reg, m), k))
                         for m in range(plan.coarsen) for reg in ks.registers()
                         for k in range(plan.fields))
        else:
            regs = tuple((ctype, cell_register(name, m)) for m in range(plan.coarsen)
                         for ctype, name in regs)
        pointers = ()
    return KernelCode(
        name=f"{prefix}_kernel_d{d}", degree=d,
        halo=plan.halo(d), compute=plan.compute_region(d),
        dims=dims, block_order=tuple(reversed(dims)),
        depth=d * plan.stream_radius, reads_odd_boundary=reads_odd,
        pointers=pointers, cell_lines=_cell_lines(plan, dims, windows, reads_odd, warp_or),
        cell_origins=origins,
        interior_block=_interior_block(plan, dims) if plan.interior_phase else "",
        interior_lines=interior, warp_or=warp_or,
        steps=d // plan.substeps,
        registers=regs, macros=macros,
        undefs=(*(m.name for m in shared), *([SYNC_MACRO.name] if has_barriers(plan) else []),
                *(m.name for m in macros)),
        prologue=_phase_code(ks.prologue, how),
        head_lowermost=_phase_code(ks.heads["lowermost"], how) if ks.heads else None,
        head_middle=_phase_code(ks.heads["middle"], how) if ks.heads else None,
        inner=_phase_code(ks.inner, how), tail=_phase_code(ks.tail, how),
        head_steps=(len(ks.heads["lowermost"].steps), len(ks.heads["middle"].steps))
        if ks.heads else (0, 0),
        unroll=ks.unroll)


def _double_buffer_pointers(plan: BlockingPlan, reads_odd_boundary: bool
                            ) -> tuple[str, ...]:
    """Each thread's pointers into a double-buffered launch's buffers at its column: the
    loads (boundary cells from the even boundary buffer), the boundary buffers, the
    store."""
    t = plan.dtype
    return (f"const {t} *const an5d_p_ld = (an5d_interior ? an5d_src : an5d_bnd_even) "
            "+ an5d_origin;",
            f"const {t} *const an5d_p_be = an5d_bnd_even + an5d_origin;",
            *((f"const {t} *const an5d_p_bo = an5d_bnd_odd + an5d_origin;",)
              if reads_odd_boundary else ()),
            f"{t} *const an5d_p_st = an5d_dst + an5d_origin;")


#: The names a coarsened kernel keeps per cell (``<name>_x<m>``) and each cell's macro
#: aliases to the one-cell name (:func:`_cell_macros`), with their C types.
CELL_VALUES = (("const int", "an5d_t1"), ("const int", "an5d_c1"),
               ("const bool", "an5d_in_array"), ("const bool", "an5d_interior"),
               ("const bool", "an5d_bnd"), ("const unsigned", "an5d_act"),
               ("const size_t", "an5d_origin"))


def has_cell_major_index(plan: BlockingPlan, m: int) -> bool:
    """Whether cell ``m`` writes its value into a row of a cell-major plane (and so keeps
    its index there, :data:`~an5dpy.cuda.macros.CELL_MAJOR_INDEX`)."""
    return plan.cell_major and m in plan.shared_cells


def cell_values(plan: BlockingPlan, m: int, warp_or: bool) -> tuple[tuple[str, str], ...]:
    """The names cell ``m`` keeps (:data:`CELL_VALUES`), its warp's level bits where the
    kernel branches on them (``warp_or``, :func:`~an5dpy.cuda.macros.warp_computes`), and
    where the cell's value is shared in a cell-major plane, its index there
    (:func:`has_cell_major_index`)."""
    names = (*CELL_VALUES, *((("const unsigned", WARP_ACT),) if warp_or else ()))
    if has_cell_major_index(plan, m):
        return (*names, ("const int", CELL_MAJOR_INDEX))
    return names


def cell_suffixes(plan: BlockingPlan) -> tuple[str, ...]:
    """The suffix of each cell's names: none with one cell per thread, ``_x<m>`` for cell
    m of a coarsened thread (:func:`cell_register`)."""
    return ("",) if plan.coarsen == 1 else tuple(f"_x{m}" for m in range(plan.coarsen))


def _cell_lines(plan: BlockingPlan, dims: tuple["KernelDim", ...], windows: tuple[Window, ...],
                reads_odd_boundary: bool, warp_or: bool) -> tuple[str, ...]:
    """The thread's position and flags: for each cell (:func:`cell_suffixes`) its column
    (``an5d_t<d>``, ``an5d_c<d>``), whether it is in the array and interior, a boundary
    cell, and its level bits (``an5d_act``: bit T, the cell computes level T, an interior
    cell inside that level's window), and with ``warp_or`` their OR over the warp
    (:func:`~an5dpy.cuda.macros.warp_computes`). A coarsened thread holds the consecutive
    cells ``t * coarsen + m`` of dimension 1 (a cell's row neighbours are then mostly the
    thread's own); the other dimensions' columns are the thread's."""
    outer, *rest = dims
    o, suffixes, coarse = outer.index, cell_suffixes(plan), plan.coarsen > 1

    def column(d: KernelDim, x: str, thread: str) -> list[str]:
        return [f"const int an5d_t{d.index}{x} = {thread};",
                f"const int an5d_c{d.index}{x} = an5d_lo{d.index} - {d.halo} + "
                f"an5d_b{d.index} * {d.compute} + an5d_t{d.index}{x};"]

    lines = []
    for m, x in enumerate(suffixes):
        lines += column(outer, x, f"threadIdx.{outer.thread} * {plan.coarsen} + {m}" if coarse
                        else f"threadIdx.{outer.thread}")
        if has_cell_major_index(plan, m):
            lines.append(f"const int {CELL_MAJOR_INDEX}{x} = {cell_major_index(plan, m)};")
    for d in rest:
        lines += column(d, "", f"threadIdx.{d.thread}")
    for x in suffixes:
        c = {d.index: f"an5d_c{d.index}{x if d.index == o else ''}" for d in dims}
        t = {d.index: f"an5d_t{d.index}{x if d.index == o else ''}" for d in dims}
        in_array = " && ".join(f"{c[d.index]} >= 0 && {c[d.index]} < an5d_n{d.index}"
                               for d in dims)
        interior = " && ".join(f"{c[d.index]} >= an5d_lo{d.index} && "
                               f"{c[d.index]} <= an5d_hi{d.index}" for d in dims)
        lines += [f"const bool an5d_in_array{x} = {in_array};",
                  f"const bool an5d_interior{x} = {interior};"]
        if reads_odd_boundary or coarse:  # a coarsened cell's macro aliases it
            lines.append(f"const bool an5d_bnd{x} = an5d_in_array{x} && !an5d_interior{x};")
        lines += ["/* bit T: the thread computes level T (interior cell inside that level's "
                  "window) */", f"unsigned an5d_act{x} = 0u;", f"if (an5d_interior{x}) {{"]
        lines += [f"  if ({' && '.join(f'{t[i]} >= {lo} && {t[i]} < {hi}' for i, lo, hi in w.bounds)})"
                  f" an5d_act{x} |= {w.bit}u;" for w in windows]
        lines.append("}")
        if warp_or:
            lines.append(f"const unsigned {WARP_ACT}{x} = an5d_warp_or(an5d_act{x});")
    return tuple(lines)


def _interior_block(plan: BlockingPlan, dims: tuple["KernelDim", ...]) -> str:
    """The C condition that every cell of the block, its halo included, is interior (in
    every in-plane dimension its first cell is at or past ``an5d_lo`` and its last at or
    before ``an5d_hi``): most blocks of a large grid, whose inner phase then selects no
    boundary value (:func:`_interior_lines`)."""
    return " && ".join(
        f"an5d_b{d.index} * {d.compute} >= {d.halo} && an5d_lo{d.index} - {d.halo} + "
        f"an5d_b{d.index} * {d.compute} + {b - 1} <= an5d_hi{d.index}"
        for d, b in zip(dims, plan.bs))


def _interior_lines(plan: BlockingPlan, declarations: tuple[str, ...]) -> tuple[str, ...]:
    """What holds in the inner phase of a block of interior cells (:func:`_interior_block`):
    every cell in the array, interior and no boundary cell, as constants that shadow the
    thread's flags, and the declarations that depend on them (each cell's offset, the
    pointers) again under them. With them nvcc folds every boundary selection of the
    level ops (``an5d_bnd ? ...``) and the loads' range tests away, and no level's value
    is kept alive for a boundary cell to copy (a select and about one move per cell and
    level otherwise, in the star2d1r kernels' SASS)."""
    lines = []
    for x in cell_suffixes(plan):
        lines += [f"[[maybe_unused]] const bool an5d_in_array{x} = true;",
                  f"[[maybe_unused]] const bool an5d_interior{x} = true;",
                  f"[[maybe_unused]] const bool an5d_bnd{x} = false;"]
    # a pointer the inner phase does not use (the boundary buffers' of the head and the
    # tail) is declared all the same
    return (*lines, *(f"[[maybe_unused]] {line}" for line in declarations))


def _cell_origins(plan: BlockingPlan, ndim: int) -> tuple[str, ...]:
    """Each cell's offset of its column in a buffer (``an5d_origin``, per cell)."""
    lines = []
    for x in cell_suffixes(plan):
        c1 = f"an5d_c1{x}"
        column = f"(size_t){c1} * an5d_n2 + an5d_c2" if ndim == 3 else f"(size_t){c1}"
        lines.append(f"const size_t an5d_origin{x} = (size_t)an5d_base * (size_t)an5d_plane"
                     f" + (an5d_in_array{x} ? {column} : 0);")
    return tuple(lines)


def _cell_macros(plan: BlockingPlan, pointers: tuple[str, ...], warp_or: bool
                 ) -> tuple[Macro, ...]:
    """``AN5D_CELL<m>(statement)``: the statement (an op's macro) for cell ``m``, every
    per-cell value under its one-cell name, and the cell's buffer pointers, so that the
    one-cell macros run unchanged. nvcc folds the aliases; those a statement does not use
    are marked so."""
    macros = []
    for m in range(plan.coarsen):
        body = [f"[[maybe_unused]] {ctype} {base} = {base}_x{m};"
                for ctype, base in cell_values(plan, m, warp_or)]
        body += [f"[[maybe_unused]] {line}" for line in pointers]
        macros.append(Macro(f"{CELL_MACRO}{m}", ("an5d_stmt",), (*body, "an5d_stmt;")))
    return tuple(macros)


def _rotating_pointers(plan: BlockingPlan, degree: int) -> tuple[str, ...]:
    """Each thread's pointers into a rotating launch's buffers at its column: the loads
    (boundary cells of level 0 from its boundary buffer), the older levels where the
    update reads them (their boundary cells from theirs, where read away from the cell),
    the boundary buffers of the levels that load their boundary values, the stores."""
    t, levels = plan.dtype, plan.levels
    buffers = RotatingBuffers.of(levels)
    k = levels.buffers
    residues = {0} | {level % k for level in range(1, degree)
                      if loads_boundary(level, levels)}
    lines = [f"const {t} *const an5d_p_ld = (an5d_interior ? an5d_src : "
             f"an5d_{buffers.boundary[0]}) + an5d_origin;"]
    for m in range(1, levels.loaded + 1):
        src = f"an5d_{buffers.reads[m]}"
        if levels.offset_reads:
            residues.add(-m % k)
            src = f"(an5d_interior ? {src} : an5d_{buffers.boundary[-m % k]})"
        lines.append(f"const {t} *const {older_name('an5d_p_old', m)} = {src}"
                     " + an5d_origin;")
    lines += [f"const {t} *const {boundary_pointer(j, levels)} = an5d_{buffers.boundary[j]}"
              " + an5d_origin;" for j in sorted(residues)]
    lines.append(f"{t} *const an5d_p_st = an5d_dst + an5d_origin;")
    for m in range(1, levels.stored_levels(degree)):
        lines.append(f"{t} *const {older_name('an5d_p_st_old', m)} = "
                     f"an5d_{buffers.writes[m]} + an5d_origin;")
    return tuple(lines)


def accumulator_names(cell: int, ring: int) -> tuple[str, ...]:
    """A cell's sums in the kernel whose computing threads load the halo, mode assoc
    (:class:`HaloLoadedCode`), the one finishing next first."""
    return tuple(f"an5d_acc_x{cell}_{k}" for k in range(ring))


def column_registers(cell: int, ring: int) -> tuple[str, ...]:
    """A cell's column registers in the kernel whose computing threads load the halo,
    plane ``z - r`` first (:class:`HaloLoadedCode`)."""
    return tuple(f"an5d_col_x{cell}_{k}" for k in range(ring))


@dataclass(frozen=True)
class HaloRegion:
    """A rectangle of a block's tile that its computing threads load: halo indices
    ``[start, start + count)``, row-major over ``width`` columns from tile cell
    ``(row, col)``."""

    start: int
    count: int
    row: int
    col: int
    width: int

    @property
    def end(self) -> int:
        return self.start + self.count


@dataclass(frozen=True)
class HaloLoadedCode:
    """The degree-1 kernel of a plan whose computing threads load the halo
    (:attr:`~an5dpy.blocking.plan.HaloCells.LOADED`, templates/halo_loaded.cu.j2).

    Thread ``(an5d_t2, ty)`` computes the cells ``an5d_t1_x<m> = ty * cells + m`` of the
    compute region; shared memory holds two planes of the tile (``tile``: the compute
    region and ``plane_radius`` on each side) and the threads load the tile's halo,
    index ``tid + h * nthreads`` for ``h < per_thread``, from the ``regions`` (corners
    too: a nondiag stencil may read in-plane diagonals). ``updates[m]``: cell m's value,
    :data:`~an5dpy.cuda.macros.UPDATE_MACRO` over its column's registers
    ``an5d_col_x<m>_<k>`` (planes ``z - radius + k``), the shared buffer ``an5d_buf`` and,
    with several cells, each row neighbour along dimension 1 (the thread's own register
    where it holds that cell). In mode assoc the cells keep their sums instead of a column
    (:attr:`assoc`): each arriving plane's halo is loaded too, ``accumulations[m]`` adds
    the plane into cell m's sums and ``updates[m]`` is its finished sum. ``reach``: the
    planes below and above the interior that exist to be loaded. A rotating program's
    update (mode nondiag) reads level t-1 at the cell from the launch's source of it, and
    the launch's work buffers hold the interior only: cells outside it and
    streaming-boundary planes come from level 0's boundary buffer
    (:attr:`boundary_source`)."""

    tile: tuple[int, ...]
    compute: tuple[int, ...]
    plane_radius: tuple[int, ...]
    radius: int
    reach: tuple[int, int]
    cells: int
    nthreads: int
    regions: tuple[HaloRegion, ...]
    halo_count: int
    per_thread: int
    updates: tuple[str, ...]
    macros: tuple[LineMacro, ...]  # the update's (of the render model's shared macros)
    #: mode assoc: the sums' type, each cell's call adding the arriving plane into its
    #: sums (``updates[m]`` is then the finished sum of the cell's ``_0`` accumulator),
    #: the statement macro they call
    acc_type: str = ""
    accumulations: tuple[str, ...] = ()
    statement_macros: tuple[Macro, ...] = ()
    #: a rotating program's (mode nondiag): its launch's boundary buffer of level 0, from
    #: which cells outside the interior and streaming-boundary planes are read (its work
    #: buffers hold the interior only); empty where the source holds both
    boundary_source: str = ""
    #: whether the update reads read-only arrays: at the cell's plane ``an5d_z`` (the
    #: update's plane parameter, over ``an5d_base`` 0) and row ``an5d_c1``
    reads_coefficients: bool = False

    @property
    def assoc(self) -> bool:
        """Whether each arriving plane is added into the cells' sums (mode assoc) rather
        than kept in a column of registers (mode nondiag)."""
        return bool(self.accumulations)

    @property
    def kernel_lines(self) -> tuple[str, ...]:
        """Declarations before the cells' loop: the plane origin of the update's reads of
        read-only arrays (the kernel's planes are the grid's)."""
        return ("const int an5d_base = 0;",) if self.reads_coefficients else ()

    def cell_lines(self, cell: int) -> tuple[str, ...]:
        """The names the update reads, declared in cell ``cell``'s block: its row in the
        compute region, and its grid row where read-only arrays are read there."""
        lines = [f"const int an5d_t1 = an5d_t1_x{cell};"]
        if self.reads_coefficients:
            lines.append(f"const int an5d_c1 = an5d_c1_x{cell};")
        return tuple(lines)

    def cell_source(self, cell: int) -> str:
        """The buffer cell ``cell``'s column is read from: the source, or where boundary
        cells are elsewhere (:attr:`boundary_source`) the boundary buffer for a cell
        outside the interior (it stores nothing, but its neighbours read it)."""
        if not self.boundary_source:
            return "an5d_src"
        return f"(an5d_stores_x{cell} ? an5d_src : {self.boundary_source})"

    @property
    def halo_source(self) -> str:
        """The buffer a halo cell at ``an5d_gy``, ``an5d_gx`` is read from (as
        :meth:`cell_source`: its plane is always an interior one)."""
        if not self.boundary_source:
            return "an5d_src"
        inside = " && ".join(f"an5d_g{a} >= an5d_lo{d} && an5d_g{a} <= an5d_hi{d}"
                             for a, d in (("y", 1), ("x", 2)))
        return f"({inside} ? an5d_src : {self.boundary_source})"

    def column_value(self, cell: int, plane: str) -> str:
        """Cell ``cell``'s value at grid plane ``plane``, where its pointers are: from the
        boundary buffer's pointer ``an5d_be_x<m>`` on a streaming-boundary plane where
        boundary cells are elsewhere."""
        if not self.boundary_source:
            return f"*an5d_ld_x{cell}"
        return (f"*({plane} < an5d_lo0 || {plane} > an5d_hi0 ? an5d_be_x{cell} "
                f": an5d_ld_x{cell})")

    @property
    def macro_names(self) -> tuple[str, ...]:
        """The macros the kernel defines (and undefines after it)."""
        return tuple(mac.name for mac in (*self.macros, *self.statement_macros))

    @property
    def halo_lag(self) -> int:
        """Planes below the first plane a stream block computes from which its halo is
        loaded: mode assoc reads each arriving plane's halo, from plane S0 - r on; mode
        nondiag only the computed plane's."""
        return self.radius if self.assoc else 0

    def halo_start_plane(self, first: str) -> str:
        """The plane a stream block's halo loads start at, from its first plane ``first``:
        that plane (mode nondiag), or in mode assoc ``an5d_p0``, :attr:`halo_lag` below it
        or the array's first plane, whichever is higher (the comment's spelling where
        ``first`` is not the kernel's ``an5d_S0``)."""
        if not self.halo_lag:
            return first
        return "an5d_p0" if first == "an5d_S0" else f"max({first} - {self.halo_lag}, first)"

    @property
    def first_arrival(self) -> str:
        """Mode assoc: the declaration of ``an5d_p0``, the first plane that arrives: the
        stream block's first less :attr:`halo_lag`, or the array's first plane where that
        lies below it (a stencil reading fewer planes below a cell than its radius); the
        stream block's first where the stencil reads no other plane (radius 0)."""
        return (f"const int an5d_p0 = max(an5d_S0 - {self.halo_lag}, an5d_first);"
                if self.assoc else "")

    def accumulators(self, cell: int) -> tuple[str, ...]:
        """Mode assoc: cell ``cell``'s sums, ``_0`` (plane ``p - r`` of the plane ``p``
        arriving) finishing next."""
        return accumulator_names(cell, self.ring)

    def rotation(self, cell: int) -> tuple[tuple[str, str], ...]:
        """Mode assoc: the sums' moves one plane down after ``_0`` is finished, ``(to,
        from)``; the top one is started anew by the next plane's terms."""
        names = self.accumulators(cell)
        return tuple(zip(names[:-1], names[1:]))

    @property
    def ring(self) -> int:
        """Planes of a cell's column: 2r + 1."""
        return 2 * self.radius + 1

    @property
    def ahead(self) -> int:
        """How far above the plane computed a step loads: the column's top plane, r, and
        the next one's, r + 1."""
        return self.radius + 1

    @property
    def next_plane(self) -> str:
        """Mode nondiag: the plane a step loads for the next one, :attr:`ahead` above the
        plane ``an5d_z`` it computes."""
        return f"an5d_z + {self.ahead}"

    def column(self, cell: int) -> tuple[str, ...]:
        """Cell ``cell``'s column registers, plane ``z - r`` first."""
        return column_registers(cell, self.ring)

    def shifts(self, cell: int, lowest: bool) -> tuple[tuple[str, str], ...]:
        """The column's moves one plane down, ``(to, from)``: from the top register to
        the lowest, or (``lowest`` False, in the prologue, where the lowest register is
        not yet read) to the second lowest."""
        names = self.column(cell)
        return tuple(zip(names[0 if lowest else 1:-1], names[1 if lowest else 2:]))

    @staticmethod
    def of(info: StencilInfo, plan: BlockingPlan, shared: tuple[LineMacro, ...],
           constants: ConstantTable) -> "HaloLoadedCode":
        tile, compute = plan.bs, plan.compute_region(1)
        r1, r2 = plan.plane_radius
        rects = ((0, 0, tile[1], r1 * tile[1]), (r1 + compute[0], 0, tile[1], r1 * tile[1]),
                 (r1, 0, r2, r2 * compute[0]), (r1, r2 + compute[1], r2, r2 * compute[0]))
        regions, start = [], 0
        for row, col, width, count in rects:
            if count:
                regions.append(HaloRegion(start, count, row, col, width))
                start += count
        r, cells = plan.stream_radius, plan.coarsen

        def row_value(m: int, dy: int) -> str:
            if 0 <= m + dy < cells:  # the centre of another of the thread's columns
                return column_registers(m + dy, plan.ring)[r]
            return smem_read(plan, "0", (dy, 0), "an5d_buf")

        def older_value(m: int, lag: int) -> str:
            # level T - lag at the cell (check_halo_loaded: older levels are read there
            # only), always in the array: a cell outside it reads the plane's first
            return (f"an5d_{older_name('src_old', lag - 1)}"
                    f"[(long long)an5d_z * an5d_plane + an5d_at_x{m}]")

        def update(m: int) -> str:
            # each of the update's parameters (update_params, which orders them) as this
            # kernel has it: the cell's column, level t-1 at the cell, the shared buffer,
            # the plane of the read-only arrays' reads, the row neighbours
            args = {**dict(zip(input_params(r), column_registers(m, plan.ring))),
                    **{name: older_value(m, o.lag)
                       for name, o in zip(history_params(plan), plan.levels.older)},
                    P_BUF: "an5d_buf", P_PLANE: "an5d_z",
                    **{neighbour_param(dy): row_value(m, dy)
                       for dy in row_neighbours(info, plan)}}
            return f"{UPDATE_MACRO}({', '.join(args[p] for p in update_params(info, plan))})"

        common = (tile, compute, plan.plane_radius, r, plan.reach, cells, plan.nthreads,
                  tuple(regions), start, plan.halo_loads_per_thread)
        if plan.mode is Mode.ASSOC:
            accumulate, finish = loaded_assoc_macros(info, plan, constants)
            sums = [accumulator_names(m, plan.ring) for m in range(cells)]
            return HaloLoadedCode(
                *common, tuple(f"{finish.name}({acc[0]})" for acc in sums), (finish,),
                accumulator_type(info.assoc.sum_type, plan.dtype),
                tuple(f"{accumulate.name}({', '.join((f'an5d_v_x{m}', *acc, 'an5d_buf'))})"
                      for m, acc in enumerate(sums)), (accumulate,))
        boundary = (f"an5d_{RotatingBuffers.of(plan.levels).boundary[0]}"
                    if plan.levels.rotating else "")
        return HaloLoadedCode(*common, tuple(map(update, range(cells))),
                              tuple(mac for mac in shared if mac.name == UPDATE_MACRO),
                              boundary_source=boundary,
                              reads_coefficients=bool(info.coefficients))


def render_model(info: StencilInfo, plan: BlockingPlan, schedule: Schedule, stem: str,
                 smem_wrap: bool = True, baseline: bool = True,
                 max_registers: int | None = None, plan_note: str = "") -> RenderModel:
    prefix = "an5d_" + identifier(stem)
    n = info.ndim - 1
    plane_dims = tuple(
        PlaneDim(1 + e, THREAD_AXES[n - 1 - e], plan.bs[e], plan.plane_radius[e])
        for e in range(n))
    # every parameter the update reads, integer ones too (sizes reach the kernels separately)
    scalars = tuple((p.ctype, p.name) for p in info.params if _used_in_update(info, p.name))
    constants = ConstantTable(f"{prefix}_k", outlines_calls(info))
    # built before the kernels, so the update numbers the constant table's literals
    if plan.coupled:
        shared = (*plane_macros(plan.dtype, plan.reach, plan.levels,
                                field_plane_macros(info, plan.dtype)),
                  *field_update_macros(info, plan, constants))
    else:
        shared = (*plane_macros(plan.dtype, plan.reach, plan.levels),
                  *update_macros(info, plan, constants))
    kernels = tuple(_kernel_code(info, plan, ks, prefix, constants, plane_dims, shared)
                    for ks in schedule.kernels)
    # before the constant table is read: the loaded kernel's sums print terms through it
    halo_loaded = (HaloLoadedCode.of(info, plan, shared, constants) if plan.halo_loaded
                   else None)
    base = _baseline_code(info, plan, prefix) if baseline else None
    return RenderModel(
        stem=stem, prefix=prefix, include_guard=f"{prefix}_KERNEL_HU".upper(),
        dtype=plan.dtype, ndim=info.ndim,
        plan_text=plan.describe(), bt=plan.bt, sl=plan.sl,
        stream_length=str(plan.sl) if plan.sl else "an5d_hi0 - an5d_lo0 + 1",
        radius=plan.stream_radius, reach_above=plan.reach[1],
        plane_dims=plane_dims, thread_block=plan.thread_block, coarsen=plan.coarsen,
        nthreads=plan.nthreads, smem_planes=plan.smem_planes * plan.fields,
        smem_buffers=plan.smem_buffers, smem_bytes=plan.smem_bytes,
        smem_row_shape=plan.smem_row_shape, smem_wrap=smem_wrap, scalars=scalars,
        signature=launch_signature(info.ndim, scalars, coef_layouts(info)),
        shared_macros=shared, sync_macro=SYNC_MACRO if has_barriers(plan) else None,
        kernels=kernels,
        degrees=tuple(k.degree for k in kernels), baseline=base,
        source_name=info.program.filename if info.program is not None else stem,
        header=f"{stem}_kernel.hu", max_registers=max_registers, plan_note=plan_note,
        constants=(constants.name, constants.values),
        divisors=constants.divisor_declarations, outlined=tuple(constants.outlined.values()),
        levels=plan.levels,
        rotating=RotatingBuffers.of(plan.levels) if plan.levels.rotating else None,
        fields=plan.fields if plan.coupled else 0,
        halo_loaded=halo_loaded)


def _used_in_update(info: StencilInfo, name: str) -> bool:
    from an5dpy.ir import Scalar, walk
    return any(isinstance(e, Scalar) and e.name == name
               for update in info.updates for e in walk(update))


def _baseline_code(info: StencilInfo, plan: BlockingPlan, prefix: str) -> BaselineCode:
    names = ["an5d_c0"] + [f"an5d_c{e}" for e in range(1, info.ndim)]
    coefs = {c.name: c for c in coef_layouts(info)}

    def cell(offset) -> str:
        return " + ".join(f"(size_t)({c} + ({o})) * an5d_stride{k}"
                          for k, (c, o) in enumerate(zip(names, offset)))

    def read(node: Read | CoefRead) -> str:
        if isinstance(node, CoefRead):  # only interior cells run: every read is in range
            return coefs[node.array].read(node.index, names, clamp=False)
        name = "src" if node.lag == 1 else older_name("src_old", node.lag - 1)
        return f"an5d_{name}[{cell(node.offset)}]"

    if not info.coupled:
        return BaselineCode(f"{prefix}_naive", c_expr(info.update, read), NAIVE_BLOCK[info.ndim])
    substeps = []
    for j, sub in enumerate(info.substeps):
        def field_read(node: Read | CoefRead, j=j) -> str:
            if isinstance(node, CoefRead):
                return read(node)
            g = info.field_index(node.array)
            # a field an earlier sub-step of this time step wrote is in the buffer written
            buffer = "dst" if info.written_at[g] < j else "src"
            return f"an5d_{buffer}[(size_t){g} * an5d_field + {cell(node.offset)}]"

        statements = []
        for name, value in sub.updates:
            k, f = info.field_index(name), info.field_info(name)
            inside = " && ".join(f"an5d_c{e} >= an5d_lo{e} + {f.margin_lo[e]} && "
                                 f"an5d_c{e} <= an5d_hi{e} - {f.margin_hi[e]}"
                                 for e in range(info.ndim)
                                 if f.margin_lo[e] or f.margin_hi[e])
            store = (f"an5d_dst[(size_t){k} * an5d_field + an5d_at] = "
                     f"({plan.dtype})({c_expr(value, field_read)});")
            statements.append(f"if ({inside}) {store}" if inside else store)
        substeps.append(tuple(statements))
    return BaselineCode(f"{prefix}_naive", "", NAIVE_BLOCK[info.ndim], tuple(substeps))
