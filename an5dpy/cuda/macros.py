"""Every macro of the generated kernels, bodies and guards, built as C text.

The kernels are written as macro calls, one per op of the schedule (LOAD, CALCn, STORE,
ACCn, ...; :mod:`an5dpy.blocking.ops`). This module builds every macro: the stencil
expression once per kernel (``AN5D_UPDATE``, over lines of readable length), the plain
ops that evaluate it, and the guarded forms (``G_*``) and plane predicates
(``AN5D_STORES``, ``AN5D_BOUNDARY_PLANE``, ``AN5D_EXISTS``) that the tail runs under.
The guards are the C form of :func:`an5dpy.blocking.trace.resolve_guarded`, which the
simulator and the model run, and their plane predicates are printed from the same objects
that function evaluates (:mod:`an5dpy.blocking.guards`: ``STORES``, ``BOUNDARY_PLANE``,
``EXISTS``, ``LOADS``), over the kernel's local plane variables ``an5d_s0``, ``an5d_s1``,
``an5d_zl``, ``an5d_zh``, ``an5d_last_load``. The templates only
print the macros (``templates/kernel.cu.j2``).

Reads of read-only (coefficient) arrays print as loads through the read-only data path
(:class:`CoefLayout`): at the thread's cell ``an5d_c1``, ``an5d_c2`` and the op's plane
``an5d_base + an5d_q``, every subscript that follows a grid dimension clamped into the
array, since halo threads and streaming-boundary planes evaluate the update too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

from an5dpy.analysis.stencil import reads_an_array
from an5dpy.blocking.guards import BOUNDARY_PLANE, EXISTS, LOADS, STORES, PlanePredicate
from an5dpy.blocking.plan import (Barriers, BlockingPlan, Mode, TimeLevels,
                                  computing_warp_fraction)
from an5dpy.blocking.ops import EVALUATE_ONLY, Share
from an5dpy.cexpr import c_expr
from an5dpy.errors import InternalError
from an5dpy.ir import (MATH_FUNCTIONS, Affine, Binary, Call, Cast, CoefArray, CoefIndex,
                       CoefRead, Const, Read, StencilInfo, common_type, is_floating, walk)


@dataclass(frozen=True)
class Macro:
    """A statement macro, printed as ``#define NAME(params) do { body } while (0)``."""

    name: str
    params: tuple[str, ...]
    body: tuple[str, ...]


@dataclass(frozen=True)
class LineMacro:
    """A macro ``#define NAME(params) text``, with a comment line above it; ``text`` is one
    line, or several joined by backslash continuations (:func:`continued`)."""

    name: str
    params: tuple[str, ...]
    text: str
    comment: str = ""


# --------------------------------------------------------------------------- parameter names

#: The macros' parameter names. The bodies contain the user's update expression, which
#: names the user's scalars as written, so a parameter named like one (a scalar ``b``
#: against the buffer index ``b``) would capture it; the frontend refuses user identifiers
#: with this prefix (:data:`an5dpy.frontend.reserved.RESERVED_PREFIX`), so these cannot.
P_OUT = "an5d_out"  # the register a level op writes
P_PLANE = "an5d_q"  # the local plane of the op
P_BUF = "an5d_b"  # the shared buffer the op reads (0 or 1; per level with one barrier per step)
P_SHARED = "an5d_i"  # SHARE: the value a thread writes to the shared buffer
P_PREV = "an5d_prev"  # level T-2's register of the same plane (boundary cells of level T)
P_SRC = "an5d_arriving"  # mode assoc: the register of the plane arriving at the level
P_TAKE = "AN5D_TAKE"  # mode assoc: the arriving plane exists, add its terms
P_FIN = "AN5D_FIN"  # mode assoc: 0 running, 1 finish the sum, 2 boundary value
P_STORE = "AN5D_DO_STORE"  # mode assoc, last level: store the finished sum
P_GUARDED = "AN5D_GUARDED"  # mode assoc: a skipped take still meets the barrier
P_HIST = "an5d_h"  # an5d_h0, ..: the older levels' planes the update reads (TimeLevels.older)
P_OLD = "an5d_old"  # an5d_old, an5d_old2, ..: the registers a load of levels -1, -2, .. writes


def input_params(r: int) -> tuple[str, ...]:
    """The level's input registers ``an5d_i0 .. an5d_i<2r>``, lowest plane first."""
    return tuple(f"an5d_i{k}" for k in range(2 * r + 1))


def accumulator_params(r: int) -> tuple[str, ...]:
    """Mode assoc's accumulators ``an5d_a0 .. an5d_a<2r>``; ``an5d_a0`` finishes next."""
    return tuple(f"an5d_a{j}" for j in range(2 * r + 1))


#: Every macro parameter name that is not numbered.
PARAMETER_NAMES = (P_OUT, P_PLANE, P_BUF, P_PREV, P_SRC, P_TAKE, P_FIN, P_STORE, P_GUARDED,
                   P_HIST, P_OLD)


def older_load_params(levels: TimeLevels) -> tuple[str, ...]:
    """The registers a load of the older levels -1, -2, .. writes (where the update reads
    them)."""
    return tuple(older_name(P_OLD, m) for m in range(1, levels.loaded + 1))


def older_name(name: str, m: int) -> str:
    """``name`` for level -1 (or a launch's second-newest stored level, or the naive
    kernel's level t-1), ``name<m>`` for level -m: the one spelling of the older levels'
    names (registers, pointers, buffers)."""
    return name if m == 1 else f"{name}{m}"


def boundary_pointer(level: int, levels: TimeLevels) -> str:
    """The kernel's pointer to the boundary values of time level ``level``: the buffer of
    the level's parity with two time buffers (``an5d_p_be``, ``an5d_p_bo``), of the level
    modulo k with k buffers (``an5d_p_b0`` ..)."""
    if levels.buffers == 2:
        return "an5d_p_be" if level % 2 == 0 else "an5d_p_bo"
    return f"an5d_p_b{level % levels.buffers}"


def loads_boundary(level: int, levels: TimeLevels) -> bool:
    """Whether level ``level`` (>= 1) loads its boundary values: level 1 always, later
    levels where they do not share level T-2's buffer (then they copy its register)."""
    return level == 1 or levels.buffers != 2


# --------------------------------------------------------------------------- planes and guards


def predicate_macro(predicate: PlanePredicate, reach: tuple[int, int], comment: str = ""
                    ) -> LineMacro:
    """``#define NAME(an5d_q) (...)``: the predicate printed over the macro parameter."""
    return LineMacro(predicate.macro, (P_PLANE,), f"({predicate.c_text(f'({P_PLANE})', reach)})",
                     comment)


def plane_macros(dtype: str, reach: tuple[int, int], levels: TimeLevels = TimeLevels(),
                 field_loads: tuple[LineMacro, ...] = ()) -> tuple[LineMacro, ...]:
    """The plane predicates and level-0 loads every kernel of a file shares.

    ``AN5D_STORES``, ``AN5D_BOUNDARY_PLANE`` and ``AN5D_EXISTS`` print the predicates of
    :mod:`an5dpy.blocking.guards` (``reach``: planes below / above the interior that the
    stencil reads); ``G_LOAD`` loads what ``resolve_guarded`` keeps of a Load: the planes
    of ``LOADS``, from the boundary buffer on a streaming-boundary plane. Where the
    update reads older levels (:attr:`TimeLevels.older`), ``LOAD_LEVELS`` also loads
    levels -1, -2, .. of the plane into ``an5d_old``, ``an5d_old2``, .. (pointers
    ``an5d_p_old``, ``an5d_p_old2``, ..) and ``G_LOAD`` takes those registers too; read
    away from the cell, they are loaded on boundary planes as well
    (``LOAD_BOUNDARY_LEVELS``, from each level's boundary buffer). ``field_loads``: a time
    step of several statements' ``LOAD`` and ``LOAD_BOUNDARY`` (of every field,
    :func:`an5dpy.cuda.field_macros.field_plane_macros`) instead of the one array's.
    """
    out, q = P_OUT, P_PLANE
    be = boundary_pointer(0, levels)
    loads = field_loads or (
        LineMacro("LOAD", (out, q),
                  f"{out} = an5d_in_array ? an5d_p_ld[AN5D_PLANE({q})] : ({dtype})0"),
        LineMacro("LOAD_BOUNDARY", (out, q),
                  f"{out} = an5d_in_array ? {be}[AN5D_PLANE({q})] : ({dtype})0"))
    olds = older_load_params(levels)
    name, boundary_name, regs = "LOAD", "LOAD_BOUNDARY", (out,)
    if olds:
        # an interior plane's load: level 0 and the older levels. Read at the cell only,
        # level -m is needed in the window of its first reader (the halo loads nothing);
        # read away from it, by every thread in the array
        def older(m: int, pointer: str) -> str:
            where = ("an5d_in_array" if levels.offset_reads
                     else f"(an5d_act & {1 << levels.first_reader(m)}u)")
            return (f"{olds[m - 1]} = {where} ? {pointer}[AN5D_PLANE({q})] : ({dtype})0;")

        loads += (LineMacro("LOAD_LEVELS", (out, *olds, q), "do { " + " ".join(
            (f"LOAD({out}, {q});", *(older(m, older_name("an5d_p_old", m))
                                     for m in range(1, len(olds) + 1)))) + " } while (0)"),)
        name, regs = "LOAD_LEVELS", (out, *olds)
        if levels.offset_reads:
            loads += (LineMacro("LOAD_BOUNDARY_LEVELS", (out, *olds, q), "do { " + " ".join(
                (f"LOAD_BOUNDARY({out}, {q});",
                 *(older(m, boundary_pointer(-m, levels)) for m in range(1, len(olds) + 1))))
                + " } while (0)"),)
            boundary_name = "LOAD_BOUNDARY_LEVELS"
    boundary_regs = regs if boundary_name != "LOAD_BOUNDARY" else (out,)
    loads += (LineMacro("G_LOAD", (*regs, q),
                        f"do {{ if ({LOADS.c_text(f'({q})', reach)}) "
                        f"{{ if ({BOUNDARY_PLANE.call(q)}) "
                        f"{boundary_name}({', '.join(boundary_regs)}, {q}); "
                        f"else {name}({', '.join(regs)}, {q}); }} "
                        "} while (0)"),)
    return (
        predicate_macro(STORES, reach, "planes the block stores, and streaming-boundary "
                                       "planes (guards of the tail)"),
        predicate_macro(BOUNDARY_PLANE, reach),
        predicate_macro(EXISTS, reach, "planes within the stencil's reach of the interior; "
                                       "others are never read"),
        LineMacro("AN5D_PLANE", (q,), f"an5d_plane_offset(({q}), an5d_plane)"),
        *loads,
    )


#: The stencil update's macro; CALCn and STORE evaluate ``AN5D_UPDATE(an5d_i0, ..., an5d_b)``.
UPDATE_MACRO = "AN5D_UPDATE"

#: Longest line of a wrapped macro text (the update can be a thousand characters).
WRAP_WIDTH = 96


def update_macros(info: StencilInfo, plan: BlockingPlan, constants: "ConstantTable"
                  ) -> tuple[LineMacro, ...]:
    """``AN5D_UPDATE(an5d_i0, ..., an5d_i<2r>, an5d_b)``: the stencil expression over the
    level's input registers and shared buffer ``an5d_b`` (and plane ``an5d_q`` where it
    reads read-only arrays, :func:`update_params`), written once per kernel instead of in every CALCn
    and STORE, over lines of at most ``WRAP_WIDTH`` characters. Empty in mode assoc,
    whose macros add the update's terms one plane at a time."""
    if plan.mode is Mode.ASSOC:
        return ()
    printer = UpdatePrinter(info, plan, info.update, constants)
    return (LineMacro(UPDATE_MACRO, update_params(info, plan), continued(printer.stencil()),
                      "the stencil update, which CALCn and STORE evaluate"),)


def history_params(plan: BlockingPlan) -> tuple[str, ...]:
    """The update's parameters for the older levels' planes it reads, one per entry of
    :attr:`TimeLevels.older` (lag, dz): ``an5d_h0``, ``an5d_h1``, .."""
    return tuple(f"{P_HIST}{k}" for k in range(len(plan.levels.older)))


def update_params(info: StencilInfo, plan: BlockingPlan) -> tuple[str, ...]:
    """``AN5D_UPDATE``'s parameters: the input registers, the older levels' planes where
    the update reads them, the shared buffer, where the update reads a read-only
    array, the op's plane (whose coefficients it reads), and in a coarsened kernel the
    neighbours along dimension 1 (:func:`row_neighbours`)."""
    plane = (P_PLANE,) if info.coefficients else ()
    rows = tuple(map(neighbour_param, row_neighbours(info, plan)))
    return (*input_params(plan.stream_radius), *history_params(plan), P_BUF, *plane, *rows)


def row_neighbours(info: StencilInfo, plan: BlockingPlan) -> tuple[int, ...]:
    """The offsets ``dy`` along dimension 1 at which a coarsened nondiag kernel's update
    reads level T-1's plane off the cell's column but in its row of the other in-plane
    dimensions (``(0, dy, 0)``): a thread holds ``coarsen`` consecutive cells along
    dimension 1, so where cell ``m + dy`` is the thread's own, the value is that cell's
    register, not a shared-memory load (the render model passes each cell either,
    :func:`smem_read`). Empty for one cell per thread, the other modes and a time step of
    several statements (its field macros read every in-plane neighbour from shared memory,
    an5dpy.cuda.field_macros)."""
    if plan.coarsen == 1 or plan.mode is not Mode.NONDIAG or plan.coupled:
        return ()
    return info.row_offsets


def neighbour_param(dy: int) -> str:
    """The update's parameter for the neighbour ``dy`` cells away along dimension 1."""
    return f"an5d_y{'m' if dy < 0 else 'p'}{abs(dy)}"


def smem_read(plan: BlockingPlan, plane: str, inplane: tuple[int, ...], buf: str = P_BUF
              ) -> str:
    """A read of shared buffer ``buf``'s ``plane`` at the thread's cell (``an5d_t1``,
    ``an5d_t2``) plus ``inplane``: the one spelling of a shared-memory load."""
    idx = "".join(f"[an5d_t{e} + {r + o}]"
                  for e, (r, o) in enumerate(zip(plan.plane_radius, inplane), 1))
    return f"AN5D_SREF(an5d_sm[{buf}][{plane}]{idx})"


#: A cell-major kernel's index of the thread's cell in its shared row (``an5d_spos_x<m>``,
#: :func:`cell_major_index`), under its one-cell name in the cell's macro.
CELL_MAJOR_INDEX = "an5d_spos"


def cell_major_index(plan: BlockingPlan, cell: int, dy: int = 0) -> str:
    """The index, in a :attr:`~an5dpy.blocking.plan.BlockingPlan.cell_major` shared plane,
    of the cell ``dy`` cells from the thread's cell ``cell`` (the thread's own index plus
    :meth:`~an5dpy.blocking.plan.BlockingPlan.cell_major_slot`)."""
    return f"threadIdx.x + {plan.cell_major_slot(cell, dy)}"


def cell_major_read(plan: BlockingPlan, cell: int, dy: int, buf: str) -> str:
    """A cell-major kernel's read of level T-1's plane ``dy`` cells from the thread's cell
    ``cell`` in another thread's run (:func:`cell_major_index`)."""
    return f"AN5D_SREF(an5d_sm[{buf}][0][{cell_major_index(plan, cell, dy)}])"


def continued(text: str, width: int = WRAP_WIDTH, indent: str = "    ") -> str:
    """``text`` as a macro's replacement over several lines, starting on the line after
    the macro's name: broken at spaces outside character and string literals, so that
    the tokens do not change, into lines of at most ``width`` characters where the spaces
    allow; every line but the last ends in a backslash continuation."""
    lines = [""]
    for word in _words(text):
        if lines[-1] and len(indent) + len(lines[-1]) + 1 + len(word) + 2 > width:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}" if lines[-1] else word
    return "".join(f"\\\n{indent}{line}" + (" " if k < len(lines) - 1 else "")
                   for k, line in enumerate(lines))


def _words(text: str) -> list[str]:
    """``text`` split at the spaces outside character and string literals."""
    words, start, quote, escaped = [], 0, None, False
    for k, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == " ":
            words.append(text[start:k])
            start = k + 1
    words.append(text[start:])
    return words


#: A lone barrier (the Sync op).
SYNC_MACRO = LineMacro("SYNC", (), "__syncthreads()")


def level_macros(info: StencilInfo, plan: BlockingPlan, degree: int,
                 constants: "ConstantTable") -> tuple[Macro, ...]:
    """The level ops of the kernel of ``degree`` (CALCn, BOUNDARYn, STORE or ACCn,
    ACC_STORE) and their guarded forms, for the plan's mode."""
    printer = UpdatePrinter(info, plan, info.update, constants)
    if plan.mode is Mode.ASSOC:
        acc_type = accumulator_type(info.assoc.sum_type, plan.dtype)
        return tuple(_assoc_macros(printer, info, plan, degree, plan.dtype, acc_type))
    return tuple(_calc_macros(printer, plan, degree, plan.dtype))


# --------------------------------------------------------------------------- the update as C


#: An update of this many calls of library functions whose results are not exact (the
#: transcendental ones: ``pow``, ``exp``, ``sin``, ...) calls them out of line
#: (:meth:`ConstantTable.call`). Inlined, each is a sequence of tens to hundreds of
#: instructions, and a kernel file expands the update at every level op of every phase,
#: cell and plane of the unrolled loop: nvcc took 138 s and 17 MB of PTX for a fuzzed
#: update of 30 such calls (bT 3, one cell a thread), 42 s out of line. On an H200
#: (artifact/H200/outlined_calls.md) a 3D star of 8 calls built in 4 s instead of 15 and
#: ran 1-3% faster out of line, one of 16 calls 10-28% faster; one of 6 calls 1-19% faster
#: and built 2-3x faster, one of 4 calls 11% slower at bT 2 (artifact/H200/outlined_below.md).
OUTLINED_CALLS_FROM = 6


def outlines_calls(info: StencilInfo) -> bool:
    """Whether the kernels call the update's inexact library functions out of line
    (:data:`OUTLINED_CALLS_FROM`), counting the calls of every statement's update."""
    return sum(isinstance(e, Call) and not MATH_FUNCTIONS[e.func].exact
               for update in info.updates for e in walk(update)) >= OUTLINED_CALLS_FROM


@dataclass(frozen=True)
class OutlinedCall:
    """A library function the kernels call out of line: ``name(params)`` returns
    ``func(args)``, compiled once (``__noinline__``) instead of at every expansion."""

    name: str
    ctype: str
    params: str
    func: str
    args: str


class ConstantTable:
    """The double literals of a kernel file, kept in constant memory, the divisors of
    its double divisions that no array read changes (:meth:`divide`) and, where the
    update makes many calls of inexact library functions (:func:`outlines_calls`), the
    functions it calls out of line (:meth:`call`).

    A double literal is an instruction operand only when its low 32 bits are zero (0.5,
    2.0); any other costs two uniform-register moves each time nvcc rematerialises it,
    which it does inside the unrolled loops: in a 9-point double stencil a quarter of
    the instructions per level were such moves. An operand from constant memory costs
    at most a constant load that nvcc keeps in a uniform register. The values are the
    literals as written, so results do not change.
    """

    def __init__(self, name: str, outline_calls: bool = False):
        self.name = name
        self.outline_calls = outline_calls
        self.texts: dict[str, int] = {}
        #: the functions called out of line, by their C names (:meth:`call`)
        self.outlined: dict[str, OutlinedCall] = {}
        #: a divisor's C text: its index, and the reciprocal and quotient floor its kernels
        #: declare it with (C texts)
        self.divisors: dict[str, tuple[int, tuple[str, str]]] = {}

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

    def divide(self, node: Binary, lhs: str, rhs: str) -> str | None:
        """``an5d_ddiv(lhs, an5d_div<i>)`` for a double division whose divisor reads no
        array, so that its value is fixed for the launch; else None (C's ``/``).

        ptxas expands each correctly rounded double division into about seventeen
        instructions: the divisor's reciprocal (a seed and five FMAs), the quotient with
        one correction (a multiply and two FMAs), and a range check that sends the
        operands this fast path does not serve to a slow path. The reciprocal depends on
        the divisor alone, yet is computed at every division; each kernel computes it once
        per thread instead (``an5d_divisor_of``, :attr:`divisor_declarations`) with the
        same instructions, and ``an5d_ddiv`` the rest, so that a division costs about eight
        (templates/division.cu.j2 says why its result is the division's, bit for bit). For
        a literal divisor the table also holds its reciprocal rounded to nearest, which the
        kernel takes where it is the same bits as ptxas's, and the check's bound is a
        literal: operands from constant memory and the instruction instead of four
        registers held through the kernel.
        """
        if node.ctype != "double" or reads_an_array(node.rhs):
            return None
        if rhs not in self.divisors:
            value = literal_value(node.rhs)
            reciprocal = nearest_reciprocal(value)
            terms = ((f"{self.name}[{self.texts.setdefault(reciprocal, len(self.texts))}]",
                      f"{quotient_floor(value):#010x}u") if reciprocal else
                     (f"an5d_reciprocal({rhs})", f"an5d_quotient_floor({rhs})"))
            self.divisors[rhs] = (len(self.divisors), terms)
        return f"an5d_ddiv({lhs}, {DIVISOR_PREFIX}{self.divisors[rhs][0]})"

    def call(self, node: Call, args: tuple[str, ...]) -> str | None:
        """``an5d_call_<func>(args)`` for a call of an inexact library function where the
        file calls them out of line, else None (C's ``func(args)``). The function out of
        line calls the same library function with the same arguments and flags, so its
        result is the inlined call's, bit for bit."""
        function = MATH_FUNCTIONS[node.func]
        if not self.outline_calls or function.exact:
            return None
        if node.func not in self.outlined:
            names = [f"an5d_a{k}" for k in range(len(function.params))]
            self.outlined[node.func] = OutlinedCall(
                f"an5d_call_{node.func}", function.result,
                ", ".join(f"{ctype} {name}" for ctype, name in zip(function.params, names)),
                node.func, ", ".join(names))
        return f"{self.outlined[node.func].name}({', '.join(args)})"

    @property
    def divisor_declarations(self) -> tuple[str, ...]:
        """Each kernel's first lines: its divisors, their reciprocals and quotient floors
        (:meth:`divide`)."""
        return tuple(f"const an5d_divisor {DIVISOR_PREFIX}{i} = "
                     f"an5d_divisor_of({text}, {', '.join(terms)});"
                     for text, (i, terms) in self.divisors.items())


def literal_value(node) -> float | None:
    """The value of a divisor that is a float, double or int literal, or such a literal
    converted, as a double (None for any other divisor). A float literal is rounded to float
    through double, which may differ from the compiler's rounding in the last place; the
    kernel then finds the reciprocal not its own and divides (slower, never inexact)."""
    if isinstance(node, Cast):
        node = node.operand
    if not isinstance(node, Const) or node.ctype not in ("float", "double", "int"):
        return None
    value = float(node.value)
    return float(np.float32(value)) if node.ctype == "float" else value


def nearest_reciprocal(value: float | None) -> str | None:
    """C spelling of 1 / ``value`` rounded to nearest (Python's repr reads back exactly),
    or None where there is none to spell (no value, zero, not finite, overflow)."""
    if value is None or value == 0 or not math.isfinite(value):
        return None
    try:
        reciprocal = float(Fraction(1) / Fraction(value))
    except OverflowError:
        return None
    return repr(reciprocal)


def quotient_floor(value: float) -> int:
    """``an5d_quotient_floor`` of templates/division.cu.j2 for a divisor of this value."""
    biased = math.frexp(value)[1] + 1022  # frexp: |value| = m 2^e with m in [0.5, 1)
    return (max(1080 - biased, 1) << 20) | 1


#: The kernels' divisors: ``an5d_div<i>`` is the ``i``-th of :meth:`ConstantTable.divide`.
DIVISOR_PREFIX = "an5d_div"


class UpdatePrinter:
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
        self.coefs = {c.name: CoefLayout.of(c) for c in info.coefficients}
        # the cell whose coefficients a level op reads: the op's plane, the thread's column
        self.coords = (f"an5d_base + ({P_PLANE})",
                       *(f"an5d_c{e}" for e in range(1, info.ndim)))

    def coef(self, node: CoefRead, shift: int = 0) -> str:
        """A read of a read-only array at the op's plane plus ``shift`` (mode assoc: the
        output plane of a term of an arriving plane), clamped (:meth:`CoefLayout.read`)."""
        index = tuple(CoefIndex(i.dim, i.offset + shift) if i.dim == 0 else i
                      for i in node.index)
        return self.coefs[node.array].read(index, self.coords, clamp=True)

    def smem(self, plane: str, inplane: tuple[int, ...]) -> str:
        return smem_read(self.plan, plane, inplane)

    def stencil(self) -> str:
        mode = self.plan.mode

        older = self.plan.levels.older
        staged = {(o.lag, o.dz): self.older_plane(k) for k, o in
                  enumerate(self.plan.levels.shared_older)}
        hist = {(o.lag, o.dz): name for o, name in zip(older, history_params(self.plan))}
        rows = row_neighbours(self.info, self.plan)

        def read(node: Read | CoefRead) -> str:
            if isinstance(node, CoefRead):
                return self.coef(node)
            dz, inplane = node.offset[0], node.offset[1:]
            if node.lag != 1:  # an older level: its register, or staged in shared memory
                key = (node.lag, dz)
                return self.smem(str(staged[key]), inplane) if any(inplane) else hist[key]
            if not any(inplane):
                return input_params(self.r)[dz + self.r]  # the thread's own column: a register
            if mode is Mode.NONE:
                return self.smem(str(dz + self.r), inplane)
            if dz != 0:
                raise InternalError("nondiag kernel with a diagonal access")
            if inplane[0] in rows and not any(inplane[1:]):
                return neighbour_param(inplane[0])  # a register where the thread holds it
            return self.smem("0", inplane)

        return self.expr(self.update, read)

    def older_plane(self, k: int) -> int:
        """The shared-buffer plane of the ``k``-th staged older plane: after level T-1's."""
        return self.plan.window_smem_planes + k

    def expr(self, expr, read) -> str:
        return c_expr(expr, read, literal=self.constants.literal,
                      divide=self.constants.divide, call=self.constants.call)

    def partial(self, term, shift: int) -> str:
        """Mode assoc: ``term`` of an arriving plane, its grid reads from that plane (the
        arriving register or shared memory), its coefficients at the output plane, the
        op's plane plus ``shift``."""
        def read(node: Read | CoefRead) -> str:
            if isinstance(node, CoefRead):
                return self.coef(node, shift)
            inplane = node.offset[1:]
            return P_SRC if not any(inplane) else self.smem("0", inplane)

        return self.expr(term, read)


# --------------------------------------------------------------------------- read-only arrays


@dataclass(frozen=True)
class CoefLayout:
    """A read-only array as the kernels take it: a pointer ``an5d_coef_<name>`` to its
    elements in C order, read through the read-only data path (``__ldg``), and an ``int``
    parameter ``an5d_coefn<k>_<name>`` for each extent ``k`` that is not a constant
    (strides and clamps need them; constant extents print as literals). The one home of
    these names: the launch signature (:func:`an5dpy.cuda.render_model.launch_signature`),
    the host region and the CUDA runtime take them from here."""

    name: str
    elem_type: str
    extents: tuple[Affine, ...]

    @staticmethod
    def of(array: CoefArray) -> "CoefLayout":
        return CoefLayout(array.name, array.elem_type, array.extents)

    @property
    def pointer(self) -> str:
        return f"an5d_coef_{self.name}"

    def extent_param(self, k: int) -> str:
        return f"an5d_coefn{k}_{self.name}"

    @property
    def extent_params(self) -> tuple[int, ...]:
        """The extents (``k``) that are kernel parameters: those that are not constants."""
        return tuple(k for k, e in enumerate(self.extents) if not e.is_constant)

    def extent(self, k: int) -> str:
        e = self.extents[k]
        return str(e.const) if e.is_constant else self.extent_param(k)

    def last(self, k: int) -> str:
        """The largest index of dimension ``k``."""
        e = self.extents[k]
        return str(e.const - 1) if e.is_constant else f"{self.extent_param(k)} - 1"

    def read(self, index: Sequence[CoefIndex], coords: Sequence[str], clamp: bool) -> str:
        """``__ldg(&an5d_coef_<name>[offset])`` of the element ``index`` names for the cell
        whose grid coordinates (array order) are the C expressions ``coords``; the offset
        is computed in 64 bits. ``clamp``: every subscript that follows a grid dimension
        is clamped into the array. Threads evaluate the update on cells the analysis never
        proved in range (halo threads outside the array, streaming-boundary planes; their
        results are never consumed), and a clamp (two integer min/max, hoisted out of the
        plane loop for in-plane dimensions) is cheaper than a guarded load, which would
        need the same comparisons plus a predicate and a select; interior cells read in
        range, where the clamp changes nothing."""
        subscripts = []
        for k, i in enumerate(index):
            if i.dim is None:
                subscripts.append(str(i.offset))
                continue
            x = _plus(coords[i.dim], i.offset)
            subscripts.append(f"min(max({x}, 0), {self.last(k)})" if clamp else x)
        offset = f"(size_t)({subscripts[0]})"
        for k, s in enumerate(subscripts[1:], 1):
            offset = f"({offset} * {self.extent(k)} + (size_t)({s}))"
        return f"__ldg(&{self.pointer}[{offset}])"


def _plus(text: str, k: int) -> str:
    return text if k == 0 else f"{text} + {k}" if k > 0 else f"{text} - {-k}"


def coef_layouts(info: StencilInfo) -> tuple[CoefLayout, ...]:
    """The read-only arrays of ``info`` as the kernels take them, in ``info.coefficients``
    order (the order of the kernels' parameters)."""
    return tuple(CoefLayout.of(c) for c in info.coefficients)


# --------------------------------------------------------------------------- level ops


def _store_smem(printer: UpdatePrinter, value: str, plane: int = 0) -> str:
    """The write of the thread's cell into shared plane ``plane`` (a cell-major kernel's
    at the cell's index in its row, :data:`CELL_MAJOR_INDEX`)."""
    if printer.plan.cell_major:
        return f"an5d_sm[{P_BUF}][{plane}][{CELL_MAJOR_INDEX}] = {value};"
    idx = "".join(f"[{t} + {r}]" for t, r in zip(printer.threads, printer.pad))
    return f"an5d_sm[{P_BUF}][{plane}]{idx} = {value};"


def levels_with_idle_warps(plan: BlockingPlan, degree: int) -> frozenset[int]:
    """Levels (1..degree) whose ops branch around the evaluation: where some warp has no
    thread inside the level's window and the plan skips such warps
    (:func:`~an5dpy.blocking.plan.computing_warp_fraction` below 1).

    A thread computes level L only if every in-plane index lies in [L*r, bs - L*r); for
    such levels the macros branch around the evaluation, so whole warps of halo threads
    skip it (3D blocks lose whole rows: up to half of all threads for radius 4). Where no
    warp is idle, or the plan computes at idle warps too
    (:attr:`~an5dpy.blocking.plan.IdleWarps.COMPUTE`), the evaluation stays branch-free:
    every thread evaluates and only boundary cells select their boundary value instead.
    """
    return frozenset(level for level in range(1, degree + 1)
                     if computing_warp_fraction(plan, level) < 1.0)


#: The OR of the level bits (``an5d_act``) over the thread's warp (``an5d_warp_or`` of
#: templates/kernel.cu.j2): the same in every lane, which nvcc knows.
WARP_ACT = "an5d_wact"


def warp_computes(level: int) -> str:
    """The C condition that some thread of the warp computes ``level``: the same in every
    lane of a warp, so a branch on it never diverges and needs no reconvergence barrier,
    while a branch on the thread's own bit diverges in every warp holding a window edge
    (every warp of a 3D block: its rows' ends are halo) and runs both sides. Its halo
    threads then evaluate too, as every thread of a level without idle warps does, and
    keep what they get (values no thread in the window reads)."""
    return f"({WARP_ACT} & {1 << level}u)"


def warp_branch_levels(plan: BlockingPlan, degree: int) -> frozenset[int]:
    """The levels whose ops branch on :func:`warp_computes` rather than on the thread's
    bit: mode assoc's levels with idle warps (their sums).

    Measured side by side on the H200 (scripts/ab_compare.py, artifact/H200/warp_branch.md):
    the assoc sums gain about 6% (box3d1r, j3d27pt float). The other modes' level ops,
    which select a value where the assoc sums only add, lost 1-39% branching on the warp:
    the selected value must stay alive over the branch (star3d1r float: 55 registers
    instead of 31), so they keep the thread's bit."""
    return levels_with_idle_warps(plan, degree) if plan.mode is Mode.ASSOC else frozenset()


def _evaluate(dtype: str, expr: str, bit: int, skip: bool, boundary: str, centre: str
              ) -> tuple[str, ...]:
    """``an5d_out`` = the stencil value, or the level's value for boundary cells.

    Halo threads outside the level's window hold values no thread in the window reads
    (the simulator proves it with NaN), so the branch-free form selects on the boundary
    flag alone, which is the same for every level: one predicate for the whole kernel
    rather than a test of a level bit each time. Where whole warps are idle (``skip``)
    the evaluation is branched around and the skipped threads keep ``centre``.
    """
    if skip:
        return (f"if (an5d_act & {bit}u) {P_OUT} = ({dtype})({expr}); "
                f"else {P_OUT} = an5d_bnd ? {boundary} : {centre};",)
    return (f"const {dtype} an5d_v = ({dtype})({expr});",
            f"{P_OUT} = an5d_bnd ? {boundary} : an5d_v;")


def stored_level_params(levels: TimeLevels, degree: int) -> tuple[str, ...]:
    """STORE_LEVELS' registers of the launch's levels degree-1, degree-2, .. that it stores
    besides its last (``an5d_s1``, ..; none for a launch storing one level)."""
    return tuple(f"an5d_s{m}" for m in range(1, levels.stored_levels(degree)))


def _calc_macros(printer: UpdatePrinter, plan: BlockingPlan, d: int, dtype: str) -> list[Macro]:
    r = printer.r
    idle = levels_with_idle_warps(plan, d)
    levels = plan.levels
    out, q, b, prev = P_OUT, P_PLANE, P_BUF, P_PREV
    ins = input_params(r)
    hist = history_params(plan)  # the older levels' planes the update reads
    expr = f"{UPDATE_MACRO}({', '.join(update_params(printer.info, plan))})"
    # a coarsened kernel's row neighbours, after the op's own parameters
    rows = tuple(map(neighbour_param, row_neighbours(printer.info, plan)))
    if plan.mode is Mode.NONE:
        writes = [_store_smem(printer, ins[k], k) for k in range(2 * r + 1)]
    else:
        writes = [_store_smem(printer, ins[r])]
    # the older planes read at in-plane neighbours go to the shared buffer too
    writes += [_store_smem(printer, name, printer.older_plane(k)) for k, name in
               enumerate(h for h, o in zip(hist, levels.older) if o.shared)]
    macros = []
    # one barrier per step: the Share ops write the input planes, the level ops only
    # evaluate (level_op_macros)
    if plan.barriers is Barriers.STEP:
        macros.append(Macro(Share.name, (P_SHARED, b), (_store_smem(printer, P_SHARED),)))
    for level in range(1, d + 1):
        if level < d:
            if loads_boundary(level, levels):
                # boundary cells: the level's boundary values from their buffer
                pointer = boundary_pointer(level, levels)
                params, bval = (out, *ins, *hist, q, b), f"{pointer}[AN5D_PLANE({q})]"
                bparams, bbody = (out, q), (
                    f"{out} = an5d_in_array ? {pointer}[AN5D_PLANE({q})] : ({dtype})0;",)
                gargs, bargs = ", ".join((out, *ins, *hist)), f"{out}, {q}"
            else:
                # level T >= 2 of two time buffers: level T-2's value (same buffer)
                params, bval = (out, *ins, prev, *hist, q, b), prev
                bparams, bbody = (out, prev), (f"{out} = {prev};",)
                gargs, bargs = ", ".join((out, *ins, prev, *hist)), f"{out}, {prev}"
            # boundary cells keep the level's boundary value; unless whole warps are idle,
            # halo threads evaluate too (reading the padding) and keep what they get
            evaluation = _evaluate(dtype, expr, 1 << level, level in idle, bval, ins[r])

            def guard(name: str, sync: bool, level=level, gargs=gargs, bargs=bargs
                      ) -> tuple[str, ...]:
                return (f"if ({BOUNDARY_PLANE.call(q)}) {{ if ({EXISTS.call(q)}) "
                        f"BOUNDARY{level}({bargs});{' __syncthreads();' if sync else ''} }}",
                        f"else {name}({gargs}, {q}, {b});")

            macros += level_op_macros(plan, f"CALC{level}", params, writes, evaluation, guard,
                                      Macro(f"BOUNDARY{level}", bparams, bbody), rows)
        else:
            also = stored_level_params(levels, d)
            name = "STORE_LEVELS" if also else "STORE"
            active = f"if (an5d_act & {1 << level}u) "
            store = f"{active}an5d_p_st[AN5D_PLANE({q})]"
            # a rotating program's next launch reads levels d-1, d-2, .. too
            older = tuple(f"{active}{older_name('an5d_p_st_old', m)}"
                          f"[AN5D_PLANE({q})] = {reg};" for m, reg in enumerate(also, 1))
            if level in idle:
                evaluation = (f"{store} = ({dtype})({expr});", *older)
            else:
                evaluation = (f"const {dtype} an5d_v = ({dtype})({expr});",
                              f"{store} = an5d_v;", *older)
            params = (q, *ins, *hist, *also, b)

            def guard(name: str, sync: bool, params=params) -> tuple[str, ...]:
                return (f"if ({STORES.call(q)}) {name}({', '.join(params)});",
                        *(("else __syncthreads();",) if sync else ()))

            macros += level_op_macros(plan, name, params, writes, evaluation, guard,
                                      rows=rows)
    return macros


#: The suffixes of a level op's two halves in a coarsened kernel (:attr:`~an5dpy.blocking.
#: plan.BlockingPlan.coarsen`): every cell of the thread writes its shared-memory values
#: (``_W``), the op's one barrier follows, then every cell evaluates (``_E``); the render
#: model calls them cell by cell around the barrier (:mod:`an5dpy.cuda.render_model`).
WRITE_HALF, EVALUATE_HALF = "_W", EVALUATE_ONLY
#: Mode assoc's third part in a coarsened kernel: the finish of a level's sum (``ACCn_F``,
#: taking ``AN5D_FIN``) or the last level's store (``ACC_STORE_F``, ``AN5D_DO_STORE``).
FINISH_PART = "_F"


def level_op_halves(name: str, params: tuple[str, ...], writes, evaluation
                    ) -> tuple[Macro, Macro]:
    """A level op's two halves, each taking the op's parameters."""
    return (Macro(name + WRITE_HALF, params, tuple(writes)),
            Macro(name + EVALUATE_HALF, params, tuple(evaluation)))


def level_op_macros(plan: BlockingPlan, name: str, params: tuple[str, ...], writes,
                    evaluation, guard: Callable[[str, bool], tuple[str, ...]],
                    boundary: Macro | None = None, rows: tuple[str, ...] = ()
                    ) -> tuple[Macro, ...]:
    """A level op's macros in the plan's form (the one place that picks it, for one
    statement and for the field macros of several): the op (its shared ``writes``, its
    barrier, its ``evaluation``), ``boundary`` (the op on a streaming-boundary plane) and
    the guarded form, whose lines ``guard(macro, sync)`` gives (``sync``: a skipped op
    still meets the op's barrier). A coarsened kernel takes the op's two halves instead
    (``_W``, ``_E``, :data:`WRITE_HALF`), which the render model runs cell by cell around
    the op's one barrier and guards itself; its ops also take the cells' row neighbours
    ``rows`` (:func:`row_neighbours`). With one barrier per step or warp shuffles the op
    only evaluates (``_E``): the step's ``SHARE`` wrote its shared planes before the step's
    barrier, or the shuffles pass its neighbours in, so neither it nor its guarded form
    waits at one."""
    forms: tuple[Macro, ...]
    guarded: tuple[Macro, ...] = ()
    if plan.barriers in (Barriers.STEP, Barriers.SHUFFLE):
        name += EVALUATE_ONLY
        forms = (Macro(name, params + rows, tuple(evaluation)),)
        if plan.coarsen == 1:  # a coarsened kernel decides once for all its cells
            guarded = (Macro(f"G_{name}", params, guard(name, False)),)
    elif plan.coarsen > 1:
        forms = level_op_halves(name, params + rows, writes, evaluation)
    else:
        forms = (Macro(name, params, (*writes, "__syncthreads();", *evaluation)),)
        guarded = (Macro(f"G_{name}", params, guard(name, True)),)
    return (*forms, *((boundary,) if boundary else ()), *guarded)


def _accumulate(printer: UpdatePrinter, by_plane: dict[int, list], r: int, dtype: str,
                acc_type: str) -> list[str]:
    """Statements adding an arriving plane's terms into the accumulators.

    Terms that read one cell are grouped by that cell: its value is read once (from
    shared memory, or the thread's own register) and added, scaled, into every
    accumulator it contributes to, so only the accumulators stay live -- a 729-term box
    would otherwise keep 81 values in registers or read shared memory 729 times. Each
    accumulator still adds its terms in source order. Terms reading several cells, or no
    cell, are added whole afterwards. A read-only array read in a term is read at the
    term's output plane: plane ``an5d_q + r - dz`` receives the terms of offset ``dz``
    from the plane arriving at ``an5d_q + r``.
    """
    from an5dpy.ir import walk
    first = min(by_plane)
    acc = accumulator_params(r)
    lines = [f"  {acc[r - first]} = ({acc_type})0;"]
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
        value = P_SRC if not any(offset) else printer.smem("0", offset)
        lines.append(f"  {{ const {dtype} an5d_v{k} = {value};")
        for dz, term in terms:
            def read(n, v=f"an5d_v{k}", shift=r - dz):
                return v if isinstance(n, Read) else printer.coef(n, shift)
            text = printer.expr(term, read)
            lines.append(f"    {acc[r - dz]} = ({acc_type})({acc[r - dz]} + {text});")
        lines.append("  }")
    for dz, term in rest:
        lines.append(f"  {acc[r - dz]} = ({acc_type})({acc[r - dz]} + "
                     f"{printer.partial(term, r - dz)});")
    return lines


def _assoc_sum(printer: UpdatePrinter, info: StencilInfo, dtype: str, acc_type: str
               ) -> tuple[list[str], str]:
    """Mode assoc's statements adding an arriving plane's terms into the accumulators
    (:func:`_accumulate`) and the finished sum's expression over ``an5d_a0`` (the sum, or
    the sum and the update's trailing operation)."""
    form = info.assoc
    a0 = accumulator_params(printer.r)[0]
    by_plane: dict[int, list] = {}
    for dz, term in form.terms:
        if term.ctype != form.sum_type:
            term = Cast(form.sum_type, term.coord, term, True)
        by_plane.setdefault(dz, []).append(term)
    updates = _accumulate(printer, by_plane, printer.r, dtype, acc_type)
    total = f"(({form.sum_type})({a0}))"
    if form.post is not None:
        op, k = form.post
        ctype = common_type(form.sum_type, k.ctype)
        k_text = printer.expr(k, lambda n: "0")
        lhs = f"(({ctype})({a0}))"
        total = ((op == "/" and printer.constants.divide(
            Binary(ctype, None, op, None, k), lhs, f"(({ctype})({k_text}))"))
            or f"({lhs} {op} ({k_text}))")
    return updates, total


#: A kernel whose computing threads load the halo, mode assoc: the macro adding an arriving
#: plane's terms into a cell's accumulators, and the finished sum of its ``an5d_a0``.
ACCUMULATE_MACRO, FINISH_MACRO = "AN5D_ACCUMULATE", "AN5D_FINISH"


def loaded_assoc_macros(info: StencilInfo, plan: BlockingPlan, constants: "ConstantTable"
                        ) -> tuple[Macro, LineMacro]:
    """Mode assoc in a kernel whose computing threads load the halo
    (templates/halo_loaded.cu.j2): ``AN5D_ACCUMULATE(an5d_arriving, an5d_a0, ..,
    an5d_a<2r>, an5d_b)`` adds the terms of the plane arriving in shared buffer ``an5d_b``
    (the cell's own value ``an5d_arriving``) to the accumulators, the newest one started
    from zero, as the level ops of mode assoc do (the same statements, so the same sums);
    ``AN5D_FINISH(an5d_a0)`` is the value stored, as the last level stores it."""
    printer = UpdatePrinter(info, plan, info.update, constants)
    dtype = plan.dtype
    acc_type = accumulator_type(info.assoc.sum_type, dtype)
    updates, total = _assoc_sum(printer, info, dtype, acc_type)
    accs = accumulator_params(printer.r)
    return (Macro(ACCUMULATE_MACRO, (P_SRC, *accs, P_BUF), tuple(updates)),
            LineMacro(FINISH_MACRO, (accs[0],),
                      f"(({dtype})(({acc_type})(({dtype})({total}))))"))


def _assoc_macros(printer: UpdatePrinter, info: StencilInfo, plan: BlockingPlan, d: int,
                  dtype: str, acc_type: str) -> list[Macro]:
    r = printer.r
    src, q, b = P_SRC, P_PLANE, P_BUF
    take_, fin, guarded, do_store = P_TAKE, P_FIN, P_GUARDED, P_STORE
    accs = accumulator_params(r)
    a0 = accs[0]
    updates, total = _assoc_sum(printer, info, dtype, acc_type)
    idle = warp_branch_levels(plan, d)
    def store_lines(level: int) -> tuple[str, ...]:
        return (f"if ({do_store}) {{ if (an5d_act & {1 << level}u) {a0} = ({acc_type})"
                f"(({dtype})({total})); if (an5d_act & {1 << level}u) "
                f"an5d_p_st[AN5D_PLANE({q})] = ({dtype})({a0}); }}",)

    macros = []
    for level in range(1, d + 1):
        bnd = boundary_pointer(level, plan.levels)
        # where whole warps are idle, they skip the sums; the other halo threads add
        # padding too (never used) and the finish selects
        sums = ((f"  if {warp_computes(level)} {{", *updates, "  }") if level in idle
                else updates)
        take = (f"if ({take_}) {{", f"  {_store_smem(printer, f'({dtype})({src})')}",
                "  __syncthreads();", *sums, f"}} else if ({guarded}) __syncthreads();")
        finish = (f"if ({fin} == 1) {{ const {acc_type} an5d_f = ({acc_type})(({dtype})({total})); "
                  f"{a0} = an5d_bnd ? ({acc_type}){bnd}[AN5D_PLANE({q})] : an5d_f; }}",
                  f"else if ({fin} == 2) {a0} = an5d_in_array ? ({acc_type}){bnd}["
                  f"AN5D_PLANE({q})] : ({acc_type})0;")
        if plan.coarsen > 1:
            # the halves of the take and the finish (or store): the render model calls
            # them cell by cell, deciding the take and the finish once for all cells
            name = f"ACC{level}" if level < d else "ACC_STORE"
            last = (fin, finish) if level < d else (do_store, store_lines(level))
            macros += (*level_op_halves(name, (src, *accs, q, b),
                                        (_store_smem(printer, f"({dtype})({src})"),), sums),
                       Macro(name + FINISH_PART, (src, *accs, q, b, last[0]), last[1]))
            continue
        if level < d:
            macros.append(Macro(f"ACC{level}", (src, *accs, q, b, take_, fin, guarded),
                                (*take, *finish)))
            macros.append(Macro(f"G_ACC{level}", (src, *accs, q, b), (
                *assoc_guard_flags(q, r, False),
                f"ACC{level}({src}, {', '.join(accs)}, {q}, {b}, an5d_take, an5d_fin, 1);")))
        else:
            store = store_lines(level)
            macros.append(Macro("ACC_STORE", (src, *accs, q, b, take_, do_store, guarded),
                                (*take, *store)))
            macros.append(Macro("G_ACC_STORE", (src, *accs, q, b), (
                *assoc_guard_flags(q, r, True),
                f"ACC_STORE({src}, {', '.join(accs)}, {q}, {b}, an5d_take, an5d_store, 1);")))
    return macros


#: The flags a guarded Accumulate decides on its plane: whether the plane arriving at the
#: level exists (its terms are added), and, by :attr:`~an5dpy.blocking.ops.Accumulate.
#: final`, the finish (``AN5D_FIN``: 0 running, 1 finish, 2 boundary value) or the store.
ASSOC_TAKE = "an5d_take"
ASSOC_LAST = {False: "an5d_fin", True: "an5d_store"}


def assoc_guard_flags(q: str, r: int, final: bool) -> tuple[str, str]:
    """The declarations of a guarded Accumulate's flags on plane ``q`` (radius ``r``)."""
    take = f"const int {ASSOC_TAKE} = {EXISTS.call(f'({q}) + {r}')};"
    if final:
        return take, f"const int {ASSOC_LAST[True]} = {STORES.call(q)};"
    return take, (f"const int {ASSOC_LAST[False]} = {BOUNDARY_PLANE.call(q)} ? "
                  f"({EXISTS.call(q)} ? 2 : 0) : 1;")


def accumulator_type(sum_type: str, dtype: str) -> str:
    """The type of mode assoc's accumulators: the sum's type, unless it is narrower than
    the element type or not floating."""
    if is_floating(sum_type) and (sum_type == "double" or dtype == "float"):
        return sum_type
    return dtype


