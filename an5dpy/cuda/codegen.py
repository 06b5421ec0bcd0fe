"""CUDA code generation: a plain render model built from the schedule, printed by jinja2.

Every decision is made here (register names, macro bodies with the stencil expression,
the op sequences of every phase, launch geometry formulas); the templates in
``templates/`` only print. Output files follow the original tool's names:
``x_host.cu`` (the user's file with the scop replaced by GPU code), ``x_kernel.cu`` and
``x_kernel.hu``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import jinja2

from an5dpy.cexpr import c_expr
from an5dpy.errors import InternalError
from an5dpy.ir import Cast, Const, Read, StencilInfo, common_type, is_floating
from an5dpy.blocking.plan import BlockingPlan, Mode, active_warp_fraction, budget_min_blocks
from an5dpy.blocking.schedule import (Accumulate, Boundary, Calc, KernelSchedule, Load, Op,
                                      Phase, Schedule, Store, Sync, plane_text)

THREAD_AXES = ("x", "y")  # in-plane dims from the contiguous one outwards
#: Bytes of static shared memory a kernel may declare.
STATIC_SMEM_LIMIT = 48 * 1024
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
class Macro:
    name: str
    params: tuple[str, ...]
    body: tuple[str, ...]


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
    registers: tuple[tuple[str, str], ...]  # (ctype, name)
    macros: tuple[Macro, ...]
    prologue: PhaseCode
    head_lowermost: PhaseCode | None  # None in a compact kernel
    head_middle: PhaseCode | None
    inner: PhaseCode
    tail: PhaseCode
    head_steps: tuple[int, int]  # lowermost, middle
    unroll: int

    @property
    def compact(self) -> bool:
        return self.head_lowermost is None


@dataclass(frozen=True)
class RenderModel:
    stem: str
    prefix: str  # C identifier prefix of everything generated
    dtype: str
    ndim: int
    plan_text: str
    bt: int
    sl: int | None
    radius: int  # streaming
    reach: tuple[int, int]  # streaming reach below / above (planes read beyond the interior)
    plane_dims: tuple[PlaneDim, ...]  # array order (outer in-plane dim first)
    nthreads: int
    smem_planes: int
    smem_wrap: bool
    scalars: tuple[tuple[str, str], ...]  # (ctype, name) of scalar parameters
    kernels: tuple[KernelCode, ...]
    degrees: tuple[int, ...]
    baseline: "BaselineCode | None" = None
    source_name: str = ""
    header: str = ""  # file name of the generated header (x_kernel.hu)
    max_registers: int | None = None  # per-thread register budget (--regs)
    constants: tuple[str, tuple[str, ...]] = ("", ())  # constant-memory array: name, values

    @property
    def smem_bytes(self) -> int:
        words = 2 * self.smem_planes * math.prod(d.bs + 2 * d.radius for d in self.plane_dims)
        return words * (4 if self.dtype == "float" else 8)

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
    def smem_shape(self) -> str:
        dims = "".join(f"[{d.bs + 2 * d.radius}]" for d in self.plane_dims)
        return f"[2][{self.smem_planes}]{dims}"


@dataclass(frozen=True)
class BaselineCode:
    """The naive one-kernel-per-time-step version (benchmark baseline)."""

    name: str
    expr: str
    block: tuple[int, int]  # threads (y, x): 2D over dims 0 and 1, 3D over dims 1 and 2


def identifier(stem: str) -> str:
    ident = re.sub(r"\W", "_", stem)
    return ident if not ident[0].isdigit() else "_" + ident


# --------------------------------------------------------------------------- macro bodies


class ConstantTable:
    """The double literals of a kernel file, kept in constant memory.

    A double literal is an instruction operand only when its low 32 bits are zero (0.5,
    2.0); any other costs two uniform-register moves each time nvcc rematerialises it,
    which it does inside the unrolled loops: in a 9-point double stencil a quarter of
    the instructions per level were such moves. An operand from constant memory costs
    at most a constant load that nvcc keeps in a uniform register. The values are the
    literals as written, so results do not change.
    """

    def __init__(self, name: str):
        self.name = name
        self.texts: dict[str, int] = {}

    def literal(self, node: Const | Cast) -> str | None:
        """``name[i]`` for a double literal or a literal cast to double, else None."""
        if node.ctype != "double":
            return None
        if isinstance(node, Cast):
            text = f"(double)({node.operand.text.strip()})"
        else:
            text = node.text.strip()
        index = self.texts.setdefault(text, len(self.texts))
        return f"{self.name}[{index}]"

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(self.texts)


class _Printer:
    """Prints the stencil expression for one kernel with the register/shared layout."""

    def __init__(self, info: StencilInfo, plan: BlockingPlan, update,
                 constants: ConstantTable):
        self.info = info
        self.constants = constants
        self.plan = plan
        self.update = update
        self.r = plan.stream_radius
        self.n = info.ndim - 1
        self.threads = [f"an5d_t{e}" for e in range(1, info.ndim)]
        self.pad = plan.plane_radius  # shared rows are padded by the radius on each side

    def smem(self, plane: str, inplane: tuple[int, ...]) -> str:
        idx = "".join(f"[{t} + {r + o}]" for t, r, o in zip(self.threads, self.pad, inplane))
        return f"AN5D_SREF(an5d_sm[b][{plane}]{idx})"

    def stencil(self) -> str:
        mode = self.plan.mode

        def read(node: Read) -> str:
            dz, inplane = node.offset[0], node.offset[1:]
            if not any(inplane):
                return f"i{dz + self.r}"  # the thread's own column: a register
            if mode is Mode.NONE:
                return self.smem(str(dz + self.r), inplane)
            if dz != 0:
                raise InternalError("nondiag kernel with a diagonal access")
            return self.smem("0", inplane)

        return self.expr(self.update, read)

    def expr(self, expr, read) -> str:
        return c_expr(expr, read, literal=self.constants.literal)

    def partial(self, terms) -> str:
        def read(node: Read) -> str:
            inplane = node.offset[1:]
            return "src" if not any(inplane) else self.smem("0", inplane)

        return " + ".join(self.expr(t, read) for t in terms)


def _store_smem(printer: _Printer, value: str, plane: int = 0) -> str:
    idx = "".join(f"[{t} + {r}]" for t, r in zip(printer.threads, printer.pad))
    return f"an5d_sm[b][{plane}]{idx} = {value};"


def levels_with_idle_warps(plan: BlockingPlan, degree: int) -> frozenset[int]:
    """Levels (1..degree) at which some warp has no thread inside the level's window.

    A thread computes level L only if every in-plane index lies in [L*r, bs - L*r); for
    such levels the macros branch around the evaluation, so whole warps of halo threads
    skip it (3D blocks lose whole rows: up to half of all threads for radius 4). Where no
    warp is idle, the evaluation stays branch-free: every thread evaluates and only
    boundary cells select their boundary value instead.
    """
    return frozenset(level for level in range(1, degree + 1)
                     if active_warp_fraction(plan.bs, plan.plane_radius, level) < 1.0)


def _evaluate(dtype: str, expr: str, bit: int, skip: bool, boundary: str, centre: str
              ) -> tuple[str, ...]:
    """``out`` = the stencil value, or the level's value for boundary cells.

    Halo threads outside the level's window hold values no thread in the window reads
    (the simulator proves it with NaN), so the branch-free form selects on the boundary
    flag alone, which is the same for every level: one predicate for the whole kernel
    rather than a test of a level bit each time. Where whole warps are idle (``skip``)
    the evaluation is branched around and the skipped threads keep ``centre``.
    """
    if skip:
        return (f"if (an5d_act & {bit}u) out = ({dtype})({expr}); "
                f"else out = an5d_bnd ? {boundary} : {centre};",)
    return (f"const {dtype} an5d_v = ({dtype})({expr});",
            f"out = an5d_bnd ? {boundary} : an5d_v;")


def _calc_macros(printer: _Printer, plan: BlockingPlan, d: int, dtype: str) -> list[Macro]:
    r = printer.r
    idle = levels_with_idle_warps(plan, d)
    ins = tuple(f"i{k}" for k in range(2 * r + 1))
    expr = printer.stencil()
    if plan.mode is Mode.NONE:
        writes = [_store_smem(printer, f"i{k}", k) for k in range(2 * r + 1)]
    else:
        writes = [_store_smem(printer, f"i{r}")]
    macros = []
    for level in range(1, d + 1):
        if level < d:
            # boundary cells: level 1 loads the odd buffer; level T >= 2 copies level T-2
            if level == 1:
                params, bval = ("out", *ins, "q", "b"), "an5d_p_bo[AN5D_PLANE(q)]"
                bparams, bbody = ("out", "q"), (
                    f"out = an5d_in_array ? an5d_p_bo[AN5D_PLANE(q)] : ({dtype})0;",)
                gargs, bargs = ", ".join(("out", *ins)), "out, q"
            else:
                params, bval = ("out", *ins, "prev", "q", "b"), "prev"
                bparams, bbody = ("out", "prev"), ("out = prev;",)
                gargs, bargs = ", ".join(("out", *ins, "prev")), "out, prev"
            # boundary cells keep the level's boundary value; unless whole warps are idle,
            # halo threads evaluate too (reading the padding) and keep what they get
            body = (*writes, "__syncthreads();",
                    *_evaluate(dtype, expr, 1 << level, level in idle, bval, f"i{r}"))
            macros.append(Macro(f"CALC{level}", params, body))
            macros.append(Macro(f"BOUNDARY{level}", bparams, bbody))
            macros.append(Macro(f"G_CALC{level}", params, (
                f"if (AN5D_BOUNDARY_PLANE(q)) {{ if (AN5D_EXISTS(q)) BOUNDARY{level}({bargs}); "
                "__syncthreads(); }",
                f"else CALC{level}({gargs}, q, b);")))
        else:
            store = f"if (an5d_act & {1 << level}u) an5d_p_st[AN5D_PLANE(q)]"
            if level in idle:
                body = (*writes, "__syncthreads();", f"{store} = ({dtype})({expr});")
            else:
                body = (*writes, "__syncthreads();",
                        f"const {dtype} an5d_v = ({dtype})({expr});", f"{store} = an5d_v;")
            macros.append(Macro("STORE", ("q", *ins, "b"), body))
            macros.append(Macro("G_STORE", ("q", *ins, "b"), (
                f"if (AN5D_STORES(q)) STORE(q, {', '.join(ins)}, b);",
                "else __syncthreads();")))
    return macros


def _accumulate(printer: _Printer, by_plane: dict[int, list], r: int, dtype: str,
                acc_type: str) -> list[str]:
    """Statements adding an arriving plane's terms into the accumulators.

    Terms that read one cell are grouped by that cell: its value is read once (from
    shared memory, or the thread's own register) and added, scaled, into every
    accumulator it contributes to, so only the accumulators stay live -- a 729-term box
    would otherwise keep 81 values in registers or read shared memory 729 times. Each
    accumulator still adds its terms in source order. Terms reading several cells are
    added whole afterwards.
    """
    from an5dpy.ir import walk
    first = min(by_plane)
    lines = [f"  a{r - first} = ({acc_type})0;"]
    groups: dict[tuple[int, ...], list[tuple[int, object]]] = {}
    rest: list[tuple[int, object]] = []
    for dz in sorted(by_plane):
        for term in by_plane[dz]:
            reads = {n.offset[1:] for n in walk(term) if isinstance(n, Read)}
            if len(reads) == 1:
                groups.setdefault(reads.pop(), []).append((dz, term))
            else:
                rest.append((dz, term))
    for k, (offset, terms) in enumerate(groups.items()):
        value = "src" if not any(offset) else printer.smem("0", offset)
        lines.append(f"  {{ const {dtype} an5d_v{k} = {value};")
        for dz, term in terms:
            text = printer.expr(term, lambda n, v=f"an5d_v{k}": v)
            lines.append(f"    a{r - dz} = ({acc_type})(a{r - dz} + {text});")
        lines.append("  }")
    for dz, term in rest:
        lines.append(f"  a{r - dz} = ({acc_type})(a{r - dz} + {printer.partial([term])});")
    return lines


def _assoc_macros(printer: _Printer, info: StencilInfo, plan: BlockingPlan, d: int,
                  dtype: str, acc_type: str) -> list[Macro]:
    r = printer.r
    form = info.assoc
    accs = tuple(f"a{j}" for j in range(2 * r + 1))
    by_plane: dict[int, list] = {}
    for dz, term in form.terms:
        if term.ctype != form.sum_type:
            term = Cast(form.sum_type, term.coord, term, True)
        by_plane.setdefault(dz, []).append(term)
    updates = _accumulate(printer, by_plane, r, dtype, acc_type)
    idle = levels_with_idle_warps(plan, d)
    total = f"(({form.sum_type})(a0))"
    if form.post is not None:
        op, k = form.post
        ctype = common_type(form.sum_type, k.ctype)
        k_text = printer.expr(k, lambda n: "0")
        total = f"((({ctype})(a0)) {op} ({k_text}))"
    macros = []
    for level in range(1, d + 1):
        bnd = "an5d_p_be" if level % 2 == 0 else "an5d_p_bo"
        # where whole warps are idle, halo threads skip the sums; elsewhere they add
        # padding too (never used) and the finish selects
        sums = ((f"  if (an5d_act & {1 << level}u) {{", *updates, "  }") if level in idle
                else updates)
        take = ("if (TAKE) {", f"  {_store_smem(printer, f'({dtype})(src)')}", "  __syncthreads();",
                *sums, "} else if (GUARDED) __syncthreads();")
        finish = (f"if (FIN == 1) {{ const {acc_type} an5d_f = ({acc_type})(({dtype})({total})); "
                  f"a0 = an5d_bnd ? ({acc_type}){bnd}[AN5D_PLANE(q)] : an5d_f; }}",
                  f"else if (FIN == 2) a0 = an5d_in_array ? ({acc_type}){bnd}["
                  f"AN5D_PLANE(q)] : ({acc_type})0;")
        arrives = f"AN5D_EXISTS((q) + {r})"
        if level < d:
            macros.append(Macro(f"ACC{level}", ("src", *accs, "q", "b", "TAKE", "FIN", "GUARDED"),
                                (*take, *finish)))
            macros.append(Macro(f"G_ACC{level}", ("src", *accs, "q", "b"), (
                f"const int an5d_take = {arrives};",
                "const int an5d_fin = AN5D_BOUNDARY_PLANE(q) ? (AN5D_EXISTS(q) ? 2 : 0) : 1;",
                f"ACC{level}(src, {', '.join(accs)}, q, b, an5d_take, an5d_fin, 1);")))
        else:
            store = (f"if (DO_STORE) {{ if (an5d_act & {1 << level}u) a0 = ({acc_type})(({dtype})"
                     f"({total})); if (an5d_act & {1 << level}u) "
                     f"an5d_p_st[AN5D_PLANE(q)] = ({dtype})(a0); }}",)
            macros.append(Macro("ACC_STORE", ("src", *accs, "q", "b", "TAKE", "DO_STORE", "GUARDED"),
                                (*take, *store)))
            macros.append(Macro("G_ACC_STORE", ("src", *accs, "q", "b"), (
                f"const int an5d_take = {arrives};",
                "const int an5d_store = AN5D_STORES(q);",
                f"ACC_STORE(src, {', '.join(accs)}, q, b, an5d_take, an5d_store, 1);")))
    return macros


# --------------------------------------------------------------------------- phases


def _call(op: Op, relative: bool, guarded: bool) -> str:
    """The macro call of one op; a guarded phase calls the ``G_`` form of every op that
    has one (the guard decides at run time what the op does)."""
    g = "G_" if guarded else ""
    q = plane_text(op.plane, relative)
    match op:
        case Sync():
            return "SYNC();"
        case Load():
            return f"G_LOAD({op.out}, {q});" if guarded else f"{op.name}({op.out}, {q});"
        case Boundary():
            src = op.prev if op.prev is not None else q
            return f"{op.name}({op.out}, {src});"
        case Calc():
            prev = f", {op.prev}" if op.prev is not None else ""
            return f"{g}{op.name}({op.out}, {', '.join(map(str, op.ins))}{prev}, {q}, {op.buf});"
        case Store():
            return f"{g}{op.name}({q}, {', '.join(map(str, op.ins))}, {op.buf});"
        case Accumulate():
            args = f"{op.src}, {', '.join(map(str, op.accs))}, {q}, {op.buf}"
            if guarded:
                return f"G_{op.name}({args});"
            last = int(op.store) if op.final else {None: 0, "calc": 1, "boundary": 2}[op.complete]
            return f"{op.name}({args}, {int(op.consume)}, {last}, 0);"
    raise InternalError(f"no macro for {op!r}")


def _phase_code(phase: Phase) -> PhaseCode:
    return PhaseCode(phase.name, tuple(_call(op, phase.relative, phase.guarded)
                                       for op in phase.ops))


def _kernel_code(info: StencilInfo, plan: BlockingPlan, ks: KernelSchedule, prefix: str,
                 constants: ConstantTable) -> KernelCode:
    dtype = plan.dtype
    printer = _Printer(info, plan, info.update, constants)
    if plan.mode is Mode.ASSOC:
        acc_type = _acc_type(info.assoc.sum_type, dtype)
        macros = _assoc_macros(printer, info, plan, ks.degree, dtype, acc_type)
        regs = tuple((acc_type if reg.level > 0 else dtype, str(reg)) for reg in ks.registers())
    else:
        macros = _calc_macros(printer, plan, ks.degree, dtype)
        regs = tuple((dtype, str(reg)) for reg in ks.registers())
    return KernelCode(
        name=f"{prefix}_kernel_d{ks.degree}", degree=ks.degree,
        halo=plan.halo(ks.degree), compute=plan.compute_region(ks.degree),
        registers=regs, macros=tuple(macros),
        prologue=_phase_code(ks.prologue),
        head_lowermost=_phase_code(ks.heads["lowermost"]) if ks.heads else None,
        head_middle=_phase_code(ks.heads["middle"]) if ks.heads else None,
        inner=_phase_code(ks.inner), tail=_phase_code(ks.tail),
        head_steps=(len(ks.heads["lowermost"].steps), len(ks.heads["middle"].steps))
        if ks.heads else (0, 0),
        unroll=ks.unroll)


def _acc_type(sum_type: str, dtype: str) -> str:
    if is_floating(sum_type) and (sum_type == "double" or dtype == "float"):
        return sum_type
    return dtype


def render_model(info: StencilInfo, plan: BlockingPlan, schedule: Schedule, stem: str,
                 smem_wrap: bool = True, baseline: bool = True,
                 max_registers: int | None = None) -> RenderModel:
    prefix = "an5d_" + identifier(stem)
    n = info.ndim - 1
    plane_dims = tuple(
        PlaneDim(1 + e, THREAD_AXES[n - 1 - e], plan.bs[e], plan.plane_radius[e])
        for e in range(n))
    scalars = tuple((p.ctype, p.name) for p in info.params if is_floating(p.ctype)
                    and _used_in_update(info, p.name))
    constants = ConstantTable(f"{prefix}_k")
    kernels = tuple(_kernel_code(info, plan, ks, prefix, constants) for ks in schedule.kernels)
    base = _baseline_code(info, plan, prefix) if baseline else None
    return RenderModel(
        stem=stem, prefix=prefix, dtype=plan.dtype, ndim=info.ndim,
        plan_text=plan.describe(), bt=plan.bt, sl=plan.sl, radius=plan.stream_radius,
        reach=plan.reach,
        plane_dims=plane_dims, nthreads=plan.nthreads, smem_planes=plan.smem_planes,
        smem_wrap=smem_wrap, scalars=scalars, kernels=kernels,
        degrees=tuple(k.degree for k in kernels), baseline=base,
        source_name=info.program.filename if info.program is not None else stem,
        header=f"{stem}_kernel.hu", max_registers=max_registers,
        constants=(constants.name, constants.values))


def _used_in_update(info: StencilInfo, name: str) -> bool:
    from an5dpy.ir import Scalar, walk
    return any(isinstance(e, Scalar) and e.name == name for e in walk(info.update))


def _baseline_code(info: StencilInfo, plan: BlockingPlan, prefix: str) -> BaselineCode:
    update = info.update
    names = ["an5d_c0"] + [f"an5d_c{e}" for e in range(1, info.ndim)]

    def read(node: Read) -> str:
        idx = " + ".join(f"(size_t)({c} + ({o})) * an5d_stride{k}"
                         for k, (c, o) in enumerate(zip(names, node.offset)))
        return f"an5d_src[{idx}]"

    return BaselineCode(f"{prefix}_naive", c_expr(update, read), NAIVE_BLOCK[info.ndim])


# --------------------------------------------------------------------------- rendering


def template_dir() -> Path:
    """The templates: those of the source tree this module is in (the repository's
    top-level ``templates/``), else the ``an5dpy.templates`` package of an installed wheel
    (the same folder, mapped by pyproject.toml). The source tree comes first so that a
    checkout run from its own folder renders its own templates, not an installed copy's."""
    source_tree = Path(__file__).resolve().parents[2] / "templates"
    if (source_tree / "kernel.cu.j2").is_file():
        return source_tree
    from importlib.resources import files
    return Path(str(files("an5dpy.templates")))


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True)


def render_kernel(model: RenderModel) -> str:
    return environment().get_template("kernel.cu.j2").render(m=model)


def render_header(model: RenderModel) -> str:
    return environment().get_template("kernel.hu.j2").render(m=model)


@dataclass(frozen=True)
class HostCall:
    """What the host region needs from the user's program, as C expressions."""

    array: str
    extents: tuple[str, ...]
    lowers: tuple[str, ...]
    uppers: tuple[str, ...]
    steps: str
    start_buffer: str
    scalars: tuple[str, ...]


def host_call(info: StencilInfo) -> HostCall:
    t = info.time
    return HostCall(
        array=info.array,
        extents=tuple(f"({d.extent.c_str()})" for d in info.dims),
        lowers=tuple(f"({d.lower.c_str()})" for d in info.dims),
        uppers=tuple(f"({d.upper.c_str()})" for d in info.dims),
        steps=f"(({t.upper.c_str()}) - ({t.lower.c_str()}) + 1)",
        start_buffer=f"((({t.lower.c_str()}) + ({t.read_shift})) % 2 + 2) % 2",
        scalars=())


def render_host_region(model: RenderModel, info: StencilInfo, baseline: bool = False) -> str:
    call = host_call(info)
    scalars = tuple(name for _, name in model.scalars)
    return environment().get_template("host_region.cu.j2").render(
        m=model, call=call, scalars=scalars, baseline=baseline)


def render_host(model: RenderModel, info: StencilInfo, original: str, header_name: str,
                baseline: bool = False) -> str:
    """The user's file with only the scop region replaced (everything else verbatim).

    The -D definitions the code was generated with are repeated at the top (unless the
    build defines them too), so the host file compiles to what the kernels assume.
    """
    start, end = info.program.scop.original_span
    region = render_host_region(model, info, baseline)
    before, after = original[:start], original[end:]
    line_after = before.count("\n") + original[start:end].count("\n") + 1
    name = model.source_name.replace("\\", "\\\\").replace('"', '\\"')
    defines = "".join(f"#ifndef {k}\n#define {k} {'1' if v is None else v}\n#endif\n"
                      for k, v in info.program.defines)
    guard = ""
    if has_vla_parameter(info.program):
        host = f"{model.stem}_host.cu"
        guard = ("#ifdef __cplusplus\n"
                 f'#error "{host} keeps your C function, whose variable-length array parameter '
                 f'C++ rejects: compile this file as C (nvcc -x c -c {host})"\n#endif\n')
    return (f'{guard}#include "{header_name}"\n{defines}#line 1 "{name}"\n' + before + region
            + f'#line {line_after} "{name}"\n' + after)


def has_vla_parameter(program) -> bool:
    """Whether a function of the user's file takes an array whose extents are not
    constants (``float A[2][n][n]``): valid C, but nvcc compiles .cu files as C++, which
    has no variable-length arrays, so the host file must be compiled as C."""
    return any(a.form == "parameter" and not all(e.is_constant for e in a.extents)
               for a in program.arrays)
