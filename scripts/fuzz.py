"""Random differential testing of an5dpy: generated C stencils against gcc.

Valid cases are programs drawn from the whole accepted language (README "What it accepts":
2D/3D, float/double, asymmetric radii 0-4, star/box/sparse shapes, long expressions with
literals in every C spelling, casts, scalar parameters and <math.h> calls, the three array
forms plus local arrays, affine bounds, time loops starting anywhere, tiny grids, 0-25
steps; in about 30% of the programs each, independently: 1-3 read-only arrays of rank 1 to
ndim, subscripts following any grid dimensions or constant, in every declaration form; a
rotation through 3 time buffers; level t-1 read at the cell, a leapfrog update with 2
buffers), each run with several random blocking plans (every legal mode, bT 1-10, tiny block
and stream sizes, so remainder degrees and compact kernels run) through
``an5d verify --backend sim|cuda`` (which fills every time buffer and read-only array with
random values) and ``an5d-translate``; ``--backend build`` builds each plan's kernels
with nvcc as ``--backend cuda`` would (no GPU needed) and takes the values from the
simulator. Malformed cases are valid programs with one
structured mutation that makes them invalid (among them a read-only array read out of
bounds or at an unaccepted subscript, level t-1 away from the cell, level t-2, four time
buffers); each must be refused with ``FILE:LINE:COL: error:`` and exit status 2, writing
nothing. On the simulator, results in modes nondiag and none must be bit-identical.

Coupled cases (``--coupled``) are time steps of several statements: 2-4 fields, each
double-buffered or in place, in one nest or in consecutive nests with their own bounds,
reading each other's previous or (sub-steps) newly written values at constant offsets,
read-only arrays and scalars, tiny grids, 0-7 steps; each is verified with plans of bT 1-3
and 8-32 threads per in-plane dimension, now and then of several cells a thread, one
barrier per step or idle warps computing (the simulator today; ``--backend cuda`` runs the
same programs on a GPU once their CUDA is generated). Coupled malformed cases
(``--coupled-malformed``) add one read the analysis must refuse (Gauss-Seidel in place, a
neighbour a later statement writes, a value two steps old, a level a sub-step replaced),
checked with ``an5d analyze``. For a caller, :func:`coupled_programs` draws a program,
:func:`render` writes it and :meth:`CoupledProgram.params` gives its ``-P`` values;
:func:`coupled_cases` adds plans, and :func:`run_valid` verifies such a case.

Programs are hypothesis strategies (:func:`valid_cases`, :func:`malformed_cases`,
:func:`coupled_cases`, :func:`coupled_malformed_cases`), so a finding shrinks to a small
program. New input forms extend the generator by adding a strategy (an expression factor,
an array form, a mutation kind).

    python scripts/fuzz.py --valid 300 --malformed 100 --seed 1 --jobs 2 [--backend cuda|build]
        [--minutes X] [--out DIR] [--wild] [--log FILE]
        [--coupled N --coupled-malformed M [--no-short-buffered]]

prints one line per finding and a summary table last; ``--out DIR`` keeps each finding as
a .c file with the command line that reproduces it. Exit status 1 if anything was found.
``--log FILE`` appends each finished chunk to FILE (JSON lines) and skips the chunks FILE
already holds, so a campaign longer than one sitting runs in several invocations of the same
command and the last one's summary covers all of it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import io
import json
import itertools
import math
import multiprocessing
import os
import re
import shlex
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable

from hypothesis import HealthCheck, Phase, assume, given, seed as hypothesis_seed, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # a run as `python scripts/fuzz.py` imports this checkout
    sys.path.insert(0, str(REPO))

from an5dpy.ir import MATH_FUNCTIONS  # noqa: E402 (after the path above)

# =========================================================================== expressions
#
# The update is generated as a small tree of its own (not the package's IR, so the fuzzer
# does not share the frontend's view of C), rendered with C's precedence: a child gets
# parentheses when it binds less tightly than its parent, or equally on the right (C's
# + - * / associate to the left, and the rendered text must keep the generated tree).

PREC_SUM, PREC_PRODUCT, PREC_UNARY, PREC_PRIMARY = 1, 2, 3, 4


@dataclass(frozen=True)
class Read:
    offset: tuple[int, ...]
    shift: int  # the time subscript is (t + shift) % k, k the program's time buffers

    def prec(self) -> int:
        return PREC_PRIMARY


@dataclass(frozen=True)
class CoefRead:
    """A read of the read-only array ``array``: per subscript (array order) the grid
    dimension it follows and the constant added (``f[i-1]``), or None and the constant
    itself (``c[2]``)."""

    array: str
    subscripts: tuple[tuple[int | None, int], ...]

    def prec(self) -> int:
        return PREC_PRIMARY


@dataclass(frozen=True)
class FieldRead:
    """A read of field ``field`` in a time step of several statements (:class:`Coupled`):
    at ``offset`` (array order), of the value a statement earlier in the time step wrote
    (``new``) or of the previous step's. ``shift`` is the constant c of a double-buffered
    field's time subscript ``(t + c) % 2``, None for a field updated in place."""

    field: str
    offset: tuple[int, ...]
    new: bool
    shift: int | None

    def prec(self) -> int:
        return PREC_PRIMARY


@dataclass(frozen=True)
class Lit:
    text: str  # exactly as written in C

    def prec(self) -> int:
        return PREC_UNARY if self.text.startswith("-") else PREC_PRIMARY


@dataclass(frozen=True)
class Var:
    name: str  # a scalar parameter of the function

    def prec(self) -> int:
        return PREC_PRIMARY


@dataclass(frozen=True)
class Neg:
    operand: object

    def prec(self) -> int:
        return PREC_UNARY


@dataclass(frozen=True)
class Cast:
    ctype: str
    operand: object

    def prec(self) -> int:
        return PREC_UNARY


@dataclass(frozen=True)
class Bin:
    op: str
    lhs: object
    rhs: object

    def prec(self) -> int:
        return PREC_SUM if self.op in "+-" else PREC_PRODUCT


@dataclass(frozen=True)
class Call:
    func: str
    args: tuple

    def prec(self) -> int:
        return PREC_PRIMARY


def leaves_of(e) -> list:
    """The array reads of ``e`` (grid, field and read-only), in source order."""
    out, stack = [], [e]
    while stack:
        n = stack.pop()
        if isinstance(n, (Read, CoefRead, FieldRead)):
            out.append(n)
        elif isinstance(n, (Neg, Cast)):
            stack.append(n.operand)
        elif isinstance(n, Bin):
            stack += [n.rhs, n.lhs]
        elif isinstance(n, Call):
            stack += reversed(n.args)
    return out


def reads_of(e) -> list[Read]:
    """The reads of the updated array, in source order."""
    return [n for n in leaves_of(e) if isinstance(n, Read)]


def coef_reads_of(e) -> list[CoefRead]:
    """The reads of read-only arrays, in source order."""
    return [n for n in leaves_of(e) if isinstance(n, CoefRead)]


def calls_of(e) -> list[str]:
    out, stack = [], [e]
    while stack:
        n = stack.pop()
        if isinstance(n, Call):
            out.append(n.func)
            stack += n.args
        elif isinstance(n, (Neg, Cast)):
            stack.append(n.operand)
        elif isinstance(n, Bin):
            stack += [n.lhs, n.rhs]
    return out


def sum_of(terms: list) -> object:
    """A left-deep sum; a negated term is subtracted (``a - b`` rather than ``a + -b``)."""
    e = terms[0]
    for term in terms[1:]:
        e = Bin("-", e, term.operand) if isinstance(term, Neg) else Bin("+", e, term)
    return e


# =========================================================================== programs


@dataclass(frozen=True)
class Dim:
    """One spatial dimension: ``for (var = lower; var < extent - margin; var++)``."""

    var: str
    extent_param: str | None  # size parameter, or None for a constant extent
    extent_const: int  # added to the parameter (the whole extent when there is none)
    lower: int  # first interior index (>= the reach below)
    margin: int  # cells after the last interior one (>= the reach above)
    inclusive: bool  # `var <= extent - margin - 1` instead of `var < extent - margin`
    increment: str  # "++", "pre++" or "+=1"


@dataclass(frozen=True)
class Scalar:
    name: str
    ctype: str
    value: str  # the -P value


@dataclass(frozen=True)
class Coef:
    """A read-only (coefficient) array. ``dims`` holds, per array dimension (outermost
    first), the grid dimension its subscripts follow (the extent is that dimension's) or
    None for a dimension subscripted by constants, whose extent is ``sizes``' entry."""

    name: str
    dtype: str
    dims: tuple[int | None, ...]
    sizes: tuple[int, ...]  # per array dimension: the constant extent (dims[k] is None)
    form: str  # one of COEF_FORMS

    @property
    def rank(self) -> int:
        return len(self.dims)


def verify_params(program) -> dict[str, str]:
    """The -P values verify needs to run a generated program, one-statement or several
    (sizes, steps, scalar coefficients)."""
    out = dict((k, str(v)) for k, v in program.size_values)
    if program.steps_param:
        out[program.steps_param] = str(program.steps)
    for s in program.scalars:
        out[s.name] = s.value
    return out


@dataclass(frozen=True)
class Program:
    """A valid stencil program; :func:`render` writes it as C."""

    ndim: int
    dtype: str
    form: str  # vla_pointer, parameter, pointer_parameter, global, local
    dims: tuple[Dim, ...]  # array order: streaming dimension first
    loop_order: tuple[int, ...]  # nest position -> array dimension
    update: object  # expression tree
    write_shift: int
    time_var: str
    time_start: int
    time_inclusive: bool
    steps_param: str | None  # None: the step count is a constant of the loop bound
    steps: int
    scalars: tuple[Scalar, ...]
    size_values: tuple[tuple[str, int], ...]  # -P values of the size parameters
    derived: tuple[tuple[str, str, int], ...] = ()  # (name, base parameter, added constant)
    declare_in_for: bool = True
    dtype_macro: bool = False  # the element type is SB_TYPE, given with -D
    spaced: bool = False  # spaces inside subscripts: A[(t + 1) % 2][i - 1]
    math_header: bool = True
    buffers: int = 2  # k of A[(t + c) % k]: the time buffers the array rotates through
    coefs: tuple[Coef, ...] = ()  # read-only arrays, in the order they are declared
    commuted: bool = False  # time subscripts spelled (1 + t) % k

    @property
    def defines(self) -> tuple[tuple[str, str], ...]:
        return (("SB_TYPE", self.dtype),) if self.dtype_macro else ()

    def params(self) -> dict[str, str]:
        """The -P values verify needs (:func:`verify_params`)."""
        return verify_params(self)

    def lag(self, read: Read) -> int:
        """The earlier level ``read`` takes (1: the newest, level t; 2: the one before),
        as the fuzzer sees it: buffers back from the written one, the written buffer
        itself (read at the cell) holding the oldest level, ``buffers`` back."""
        return (self.write_shift - read.shift) % self.buffers or self.buffers

    def history(self) -> int:
        """How many earlier levels the update reads."""
        return max(self.lag(r) for r in reads_of(self.update))

    def offsets(self) -> list[tuple[int, ...]]:
        """The offsets at which the update reads the newest earlier level (what the
        stencil's shape is made of; the generator reads older levels at some of them, so
        they also make its reach)."""
        return sorted({r.offset for r in reads_of(self.update) if self.lag(r) == 1})

    def interior(self) -> tuple[int, ...]:
        values = dict(self.size_values) | {n: dict(self.size_values)[b] + c
                                           for n, b, c in self.derived}
        return tuple((values[d.extent_param] if d.extent_param else 0) + d.extent_const
                     - d.lower - d.margin for d in self.dims)


def affine_text(name: str | None, const: int) -> str:
    if name is None:
        return str(const)
    if const == 0:
        return name
    return f"{name} + {const}" if const > 0 else f"{name} - {-const}"


def time_subscript(p: Program, shift: int, buffers: int | None = None) -> str:
    """``(t + shift) % k`` in the program's spelling: ``t%2``, ``(t + 1) % 3``, and with
    ``commuted`` ``(1 + t) % 3`` (the frontend takes any affine ``t + c``)."""
    t, k = p.time_var, buffers or p.buffers
    if shift == 0:
        return f"{t} % {k}" if p.spaced else f"{t}%{k}"
    if p.commuted and shift > 0:
        return f"({shift} + {t}) % {k}" if p.spaced else f"({shift}+{t})%{k}"
    sign = "+" if shift > 0 else "-"
    return f"({t} {sign} {abs(shift)}) % {k}" if p.spaced else f"({t}{sign}{abs(shift)})%{k}"


def space_subscript(p: Program, var: str, off: int) -> str:
    if off == 0:
        return var
    sign = "+" if off > 0 else "-"
    return f"{var} {sign} {abs(off)}" if p.spaced else f"{var}{sign}{abs(off)}"


def access_text(p: Program, shift: int, offset: tuple[int, ...], array: str = "A") -> str:
    return f"{array}[{time_subscript(p, shift)}]" + "".join(
        f"[{space_subscript(p, d.var, o)}]" for d, o in zip(p.dims, offset))


def field_access_text(p, field: str, shift: int | None, offset: tuple[int, ...]) -> str:
    """``u[(t+1)%2][i-1][j]``, or ``ey[i][j-1]`` for a field updated in place (``shift``
    None), with the loop variables of ``p.dims`` (a :class:`NestSpelling`)."""
    time = "" if shift is None else f"[{time_subscript(p, shift)}]"
    return field + time + "".join(f"[{space_subscript(p, d.var, o)}]"
                                  for d, o in zip(p.dims, offset))


def coef_text(p: Program, e: CoefRead) -> str:
    return e.array + "".join(
        f"[{c}]" if d is None else f"[{space_subscript(p, p.dims[d].var, c)}]"
        for d, c in e.subscripts)


def expr_text(p: Program, e, parent: int = 0, right: bool = False) -> str:
    if isinstance(e, Read):
        text = access_text(p, e.shift, e.offset)
    elif isinstance(e, CoefRead):
        text = coef_text(p, e)
    elif isinstance(e, FieldRead):
        text = field_access_text(p, e.field, e.shift, e.offset)
    elif isinstance(e, Lit):
        text = e.text
    elif isinstance(e, Var):
        text = e.name
    elif isinstance(e, Neg):
        inner = expr_text(p, e.operand, PREC_UNARY)
        text = f"-{inner}" if not inner.startswith("-") else f"-({inner})"
    elif isinstance(e, Cast):
        text = f"({e.ctype}){expr_text(p, e.operand, PREC_UNARY)}"
    elif isinstance(e, Bin):
        lhs = expr_text(p, e.lhs, e.prec())
        rhs = expr_text(p, e.rhs, e.prec(), right=True)
        text = f"{lhs} {e.op} {rhs}"
    elif isinstance(e, Call):
        text = f"{e.func}({', '.join(expr_text(p, a) for a in e.args)})"
    else:
        raise TypeError(e)
    prec = e.prec()
    if prec < parent or (right and prec == parent and prec < PREC_UNARY):
        return f"({text})"
    return text


def wrap_sum(text: str, indent: str, width: int = 96) -> str:
    """Break a long right-hand side after + and - at the top level (keeps lines short)."""
    out, line, depth = [], "", 0
    for ch in text:
        line += ch
        depth += (ch in "([") - (ch in ")]")
        if depth == 0 and len(line) > width and line.endswith((" +", " -")):
            out.append(line)
            line = ""
    out.append(line)
    return ("\n" + indent + "  ").join(s.strip() for s in out)


@dataclass(frozen=True)
class Rendered:
    text: str
    #: line numbers (1-based) of the loop header per nest position ("t" for the time loop),
    #: the statement, the pragmas
    lines: dict


def render(p: "Program | CoupledProgram", edit: Callable[["Layout"], None] | None = None
           ) -> Rendered:
    """The program as a C file. ``edit`` may change the layout first (malformed cases of a
    one-statement program)."""
    if isinstance(p, CoupledProgram):
        return render_coupled(p)
    layout = layout_of(p)
    if edit is not None:
        edit(layout)
    return layout.render()


@dataclass
class Layout:
    """The C file as editable pieces: what mutations change before the text is joined."""

    program: Program
    prelude: list[str]
    signature: str
    body_head: list[str]
    loops: list[str]  # time loop first
    target: str
    value: str
    body_tail: list[str]
    scop_open: str = "#pragma scop"
    scop_close: str = "#pragma endscop"
    assign: str = "="
    extra_statement: str | None = None  # a second statement in the innermost body
    wrap_body: tuple[str, str] | None = None  # text around the statement (if (...) {, })

    def render(self) -> Rendered:
        lines = list(self.prelude) + [self.signature, "{"] + [f"  {s}" for s in self.body_head]
        marks: dict = {}
        marks["scop"] = len(lines) + 1
        lines.append(self.scop_open)
        indent = "  "
        for k, loop in enumerate(self.loops):
            marks[k] = len(lines) + 1
            lines.append(indent + loop)
            indent += "  "
        statement = f"{self.target} {self.assign} {self.value};"
        body = [statement] if self.extra_statement is None else [statement,
                                                                  self.extra_statement]
        if self.wrap_body or len(body) > 1:
            head, tail = self.wrap_body or ("{", "}")
            lines.append(indent + head)
            marks["statement"] = len(lines) + 1
            lines += [indent + "  " + wrap_sum(s, indent + "  ") for s in body]
            lines.append(indent + tail)
        else:
            marks["statement"] = len(lines) + 1
            lines.append(indent + wrap_sum(statement, indent))
        marks["endscop"] = len(lines) + 1
        if self.scop_close:
            lines.append(self.scop_close)
        lines += [f"  {s}" for s in self.body_tail] + ["}"]
        return Rendered("\n".join(lines) + "\n", marks)


#: How a read-only array may be declared: parameters ``float f[n][m]``, ``float f[][m]``
#: (outermost extent open), ``float (*f)[m]`` (``float *f`` in rank 1), a VLA pointer cast
#: from a flat parameter (``float (*f)[m] = (float (*)[m])f_buf;``), a global or a local.
COEF_FORMS = ("parameter", "open_parameter", "pointer_parameter", "vla_pointer", "global",
              "local")
COEF_PARAMETER_FORMS = ("parameter", "open_parameter", "pointer_parameter")
#: Forms that leave the outermost extent to the grid dimension the first subscript follows.
COEF_OPEN_FORMS = ("open_parameter", "pointer_parameter", "vla_pointer")
#: Forms that need every extent a constant (C has no variably sized globals; the locals
#: are kept constant as the grid's are).
COEF_CONSTANT_FORMS = ("global", "local")


def coef_extent(p: Program, c: Coef, k: int) -> str:
    d = c.dims[k]
    if d is None:
        return str(c.sizes[k])
    return affine_text(p.dims[d].extent_param, p.dims[d].extent_const)


def coef_declaration(p: Program, c: Coef, where: str = "") -> str:
    """The declaration of ``c`` (:func:`array_declaration`)."""
    return array_declaration(c.form, c.dtype, c.name,
                             [coef_extent(p, c, k) for k in range(c.rank)], where)


def array_declaration(form: str, t: str, name: str, extents: list[str], where: str = "") -> str:
    """The declaration of an array of ``form`` (a read-only array's or a field's), element
    type ``t``: a parameter (in the signature), a global (``;``), or in the body the local
    array or the VLA-pointer cast of its flat ``<name>_buf``; for ``vla_pointer`` in the
    signature (``where`` empty) the flat parameter itself."""
    inner = "".join(f"[{e}]" for e in extents[1:])
    whole = "".join(f"[{e}]" for e in extents)
    if form == "parameter":
        return f"{t} {name}{whole}"
    if form == "open_parameter":
        return f"{t} {name}[]{inner}"
    if form == "pointer_parameter":
        return f"{t} (*{name}){inner}" if inner else f"{t} *{name}"
    if form == "vla_pointer":
        if not where:
            return f"{t} *{name}_buf"
        return f"{t} (*{name}){inner} = ({t} (*){inner}){name}_buf;" if inner else \
            f"{t} *{name} = {name}_buf;"
    return f"{t} {name}{whole};"  # global, local


def loop_header(p: Program, var: str, lower: str, upper: str, inclusive: bool,
                increment: str, declared: bool) -> str:
    op = "<=" if inclusive else "<"
    step = {"++": f"{var}++", "pre++": f"++{var}", "+=1": f"{var} += 1"}[increment]
    decl = "int " if declared else ""
    return f"for ({decl}{var} = {lower}; {var} {op} {upper}; {step})"


def layout_of(p: Program) -> Layout:
    elem = "SB_TYPE" if p.dtype_macro else p.dtype
    extents = [affine_text(d.extent_param, d.extent_const) for d in p.dims]
    dims = "".join(f"[{e}]" for e in extents)
    size_params = [name for name, _ in p.size_values]
    int_params = size_params + ([p.steps_param] if p.steps_param else [])
    scalar_params = [f"{s.ctype} {s.name}" for s in p.scalars]
    k = p.buffers
    prelude = []
    if p.math_header:
        prelude.append("#include <math.h>")
    body_head: list[str] = []
    if p.form == "global":
        prelude.append(f"{elem} A[{k}]{dims};")
    prelude += [coef_declaration(p, c) for c in p.coefs if c.form == "global"]
    prelude.append("")
    args = [f"int {n}" for n in int_params] + scalar_params
    if p.form == "vla_pointer":
        args.append(f"{elem} *buf")
    elif p.form == "parameter":
        args.append(f"{elem} A[{k}]{dims}")
    elif p.form == "pointer_parameter":
        args.append(f"{elem} (*A){dims}")
    args += [coef_declaration(p, c) for c in p.coefs
             if c.form in COEF_PARAMETER_FORMS + ("vla_pointer",)]
    for name, base, const in p.derived:
        body_head.append(f"int {name} = {affine_text(base, const)};")
    if p.form == "vla_pointer":
        body_head.append(f"{elem} (*A){dims} = ({elem} (*){dims})buf;")
    elif p.form == "local":
        body_head.append(f"{elem} A[{k}]{dims};")
    body_head += [coef_declaration(p, c, "body") for c in p.coefs
                  if c.form in ("vla_pointer", "local")]
    loop_vars = [p.time_var] + [p.dims[a].var for a in p.loop_order]
    if not p.declare_in_for:
        body_head.append(f"int {', '.join(loop_vars)};")
    signature = f"void kernel({', '.join(args) or 'void'})"
    t0 = p.time_start
    if p.steps_param:
        upper = affine_text(p.steps_param, t0 - 1 if p.time_inclusive else t0)
    else:
        upper = str(t0 + p.steps - 1 if p.time_inclusive else t0 + p.steps)
    loops = [loop_header(p, p.time_var, str(t0), upper, p.time_inclusive, "++",
                         p.declare_in_for)]
    for a in p.loop_order:
        d = p.dims[a]
        end = d.extent_const - d.margin - (1 if d.inclusive else 0)
        loops.append(loop_header(p, d.var, str(d.lower), affine_text(d.extent_param, end),
                                 d.inclusive, d.increment, p.declare_in_for))
    target = access_text(p, p.write_shift, (0,) * p.ndim)
    tail = []
    if p.form == "local":  # keep the local array alive for a compiler that would drop it
        tail = ["(void)A;"]
    tail += [f"(void){c.name};" for c in p.coefs if c.form == "local"]
    return Layout(p, prelude, signature, body_head, loops, target, expr_text(p, p.update),
                  tail)


# =========================================================================== strategies

#: Functions that turn the sign of a NaN into a number: copysign(x, y) takes y's sign bit.
#: C leaves the sign of a NaN that arithmetic makes open (x86 keeps one operand's NaN, and
#: gcc and numpy order the operands of a sum of two NaNs differently; a GPU makes its own),
#: so a wild update's copysign of a NaN has no one right result. Generated in tame updates,
#: which make no NaN.
NAN_SIGN_READERS = ("copysign",)
#: The <math.h> functions the frontend accepts, by floating argument count, as the double
#: names (float: name + "f"): taken from the package's table, so every function it accepts
#: is generated (in --wild updates, but for NAN_SIGN_READERS).
UNARY_MATH = tuple(sorted(n for n, f in MATH_FUNCTIONS.items()
                          if f.result == "double" and f.params == ("double",)))
BINARY_MATH = tuple(sorted(n for n, f in MATH_FUNCTIONS.items()
                           if f.result == "double" and f.params == ("double", "double")
                           and n not in NAN_SIGN_READERS))
#: Functions whose value stays within a few units for any argument of moderate size: a
#: tame update built from them cannot overflow or produce NaN.
TAME_UNARY = ("fabs", "sin", "cos", "tanh", "atan", "cbrt", "erf")
TAME_BINARY = ("fmax", "fmin", "hypot", *NAN_SIGN_READERS)

VAR_NAMES = (("i", "j", "k"), ("x", "y", "z"), ("i0", "i1", "i2"), ("row", "col", "dep"))
FORMS = ("vla_pointer", "parameter", "pointer_parameter", "global", "local")


def math_name(draw, base: str, dtype: str) -> str:
    """``sqrtf`` or ``sqrt`` in a float program (the latter computes in double)."""
    if dtype == "float" and draw(st.integers(0, 3)) > 0:
        return base + "f"
    return base


def literal(draw, value: float, dtype: str) -> Lit:
    """``value`` in one of C's spellings: 0.25f, .25, 2.5e-1, 0x1p-2, 25e-2F, (int) 2."""
    style = draw(st.sampled_from(("plain", "plain", "exp", "hex", "dot", "int")))
    suffix = draw(st.sampled_from(("", "f", "F"))) if dtype == "float" else \
        draw(st.sampled_from(("", "", "f")))
    if style == "int" and float(value).is_integer():
        return Lit(str(int(value)))
    if style == "hex":
        text = float.hex(float(value))
        return Lit(text + suffix)
    if style == "exp":
        return Lit(f"{value:.6e}".replace("e-0", "e-").replace("e+0", "e+") + suffix)
    text = repr(float(value))
    if "e" in text:
        return Lit(text + suffix)
    if style == "dot" and text.startswith("0."):
        text = text[1:]
    return Lit(text + suffix)


@st.composite
def shapes(draw, ndim: int, big: bool = False) -> list[tuple[int, ...]]:
    """Read offsets: a star, a box or a sparse set, with reach 0-4 below and above per
    dimension chosen independently (asymmetric radii)."""
    kind = draw(st.sampled_from(("star", "box", "sparse")))
    lo = [draw(st.integers(0, 4)) for _ in range(ndim)]
    hi = [draw(st.integers(0, 4)) for _ in range(ndim)]
    if kind == "box":
        cap = 730 if big else (150 if ndim == 2 else 64)
        while math.prod(a + b + 1 for a, b in zip(lo, hi)) > cap:
            k = max(range(ndim), key=lambda d: lo[d] + hi[d])
            if lo[k] >= hi[k]:
                lo[k] -= 1
            else:
                hi[k] -= 1
        import itertools
        return [tuple(o) for o in itertools.product(*(range(-a, b + 1)
                                                      for a, b in zip(lo, hi)))]
    if kind == "star":
        points = {(0,) * ndim}
        for d in range(ndim):
            for o in range(-lo[d], hi[d] + 1):
                if o and (o in (-lo[d], hi[d]) or draw(st.booleans())):
                    points.add(tuple(o if k == d else 0 for k in range(ndim)))
        return sorted(points)
    count = draw(st.integers(1, 12))
    points = set()
    for _ in range(count):
        points.add(tuple(draw(st.integers(-lo[d], hi[d])) for d in range(ndim)))
    return sorted(points)


@st.composite
def tame_factor(draw, reads: list[Read], dtype: str, depth: int = 0):
    """A term whose value stays within about [0, 2] when its reads do, and never NaN."""
    read = lambda: draw(st.sampled_from(reads))  # noqa: E731
    sub = (lambda: draw(tame_factor(reads, dtype, depth + 1))) if depth < 2 else read
    other = "double" if dtype == "float" else "float"
    kind = draw(st.sampled_from(("read", "read", "read", "cast", "unary", "sqrt", "log",
                                 "exp", "binary", "mean", "ratio", "geomean", "fma", "neg2",
                                 "diff", "pow")))
    one = literal(draw, 1.0, dtype)
    half = literal(draw, 0.5, dtype)
    if kind == "read":
        return read()
    if kind == "cast":
        return Cast(draw(st.sampled_from((other, dtype))), sub())
    if kind == "unary":
        return Call(math_name(draw, draw(st.sampled_from(TAME_UNARY)), dtype), (sub(),))
    if kind == "sqrt":
        fabs = math_name(draw, "fabs", dtype)
        return Call(math_name(draw, "sqrt", dtype), (Call(fabs, (sub(),)),))
    if kind == "log":
        fabs = math_name(draw, "fabs", dtype)
        f = draw(st.sampled_from(("log", "log1p", "log2", "log10")))
        arg = Call(fabs, (sub(),))
        return Call(math_name(draw, f, dtype), (Bin("+", one, arg) if f != "log1p" else arg,))
    if kind == "exp":
        fabs = math_name(draw, "fabs", dtype)
        f = draw(st.sampled_from(("exp", "exp2", "expm1")))
        return Call(math_name(draw, f, dtype), (Neg(Call(fabs, (sub(),))),))
    if kind == "binary":
        return Call(math_name(draw, draw(st.sampled_from(TAME_BINARY)), dtype), (sub(), sub()))
    if kind == "pow":
        fabs = math_name(draw, "fabs", dtype)
        exponent = literal(draw, draw(st.sampled_from((0.5, 0.25, 0.75, 1.0))), dtype)
        return Call(math_name(draw, "pow", dtype), (Call(fabs, (sub(),)), exponent))
    if kind == "mean":
        return Bin("*", Bin("+", sub(), sub()), half)
    if kind == "ratio":
        fabs = math_name(draw, "fabs", dtype)
        return Bin("/", sub(), Bin("+", one, Call(fabs, (sub(),))))
    if kind == "geomean":
        fabs = math_name(draw, "fabs", dtype)
        return Call(math_name(draw, "sqrt", dtype), (Call(fabs, (Bin("*", sub(), sub()),)),))
    if kind == "fma":
        return Bin("*", Call(math_name(draw, "fma", dtype), (sub(), half, sub())), half)
    if kind == "neg2":
        return Neg(Neg(sub()))
    return Bin("-", sub(), sub())  # diff: stays within [-2, 2]


def integer_typed(expr) -> bool:
    """Whether C gives ``expr`` an integer type: an ``(int)`` cast, an integer literal, or
    an operation on nothing else."""
    if isinstance(expr, Cast):
        return expr.ctype == "int"
    if isinstance(expr, Lit):
        return re.fullmatch(r"-?\d+", expr.text) is not None
    if isinstance(expr, Neg):
        return integer_typed(expr.operand)
    if isinstance(expr, Bin):
        return integer_typed(expr.lhs) and integer_typed(expr.rhs)
    return False


def integer_divisor(expr) -> bool:
    """Whether dividing by ``expr`` is an integer division that may divide by 0 (an
    integer-typed expression but a non-zero literal)."""
    if isinstance(expr, Lit) and integer_typed(expr):
        return int(expr.text) == 0
    return integer_typed(expr)


@st.composite
def wild_factor(draw, reads: list[Read], dtype: str, depth: int = 0):
    """Anything: products and quotients of reads, unguarded math calls (inf and NaN)."""
    read = lambda: draw(st.sampled_from(reads))  # noqa: E731
    sub = (lambda: draw(wild_factor(reads, dtype, depth + 1))) if depth < 3 else read
    kind = draw(st.sampled_from(("read", "read", "bin", "bin", "unary", "binary", "neg",
                                 "cast", "lit")))
    if kind == "read":
        return read()
    if kind == "bin":
        op, lhs, rhs = draw(st.sampled_from("+-*/")), sub(), sub()
        if op == "/" and integer_divisor(rhs):
            # an integer divisor may be 0: undefined in C, and gcc folds x / x to 1 where
            # the simulator divides; the division happens in the program's type instead
            rhs = Cast(dtype, rhs)
        return Bin(op, lhs, rhs)
    if kind == "unary":
        return Call(math_name(draw, draw(st.sampled_from(UNARY_MATH)), dtype), (sub(),))
    if kind == "binary":
        return Call(math_name(draw, draw(st.sampled_from(BINARY_MATH)), dtype), (sub(), sub()))
    if kind == "neg":
        return Neg(sub())
    if kind == "cast":
        return Cast(draw(st.sampled_from(("float", "double", "int"))), sub())
    return literal(draw, draw(st.sampled_from((0.5, 2.0, 3.0, 0.1, 1e-3, 7.0))), dtype)


@st.composite
def updates(draw, offsets: list[tuple[int, ...]], read_shift: int, dtype: str,
            scalars: list[Scalar], wild: bool, buffers: int = 2,
            older: tuple[Read, ...] = (), coef_reads: tuple[CoefRead, ...] = ()) -> object:
    """A weighted sum over the reads: every offset of the newest level (``read_shift``,
    spelled also ``read_shift + buffers``) is read at least once, and so is every read of
    ``older`` (earlier levels) and ``coef_reads`` (read-only arrays); each term is a
    coefficient times a factor. Tame weights sum to about 1 (an averaging stencil), as
    decimals or as integers over their sum (``(2*a + b) / 3``). A read-only array's value
    (in [0.5, 1.5) as verify fills them) is a term of its own, or scales one term by at
    most 0.9 (``0.6 * f[i][j] * term``), so the update stays an average."""
    all_reads = [Read(o, read_shift + draw(st.sampled_from((0, 0, 0, buffers)))
                      if read_shift >= 0 else read_shift) for o in offsets]
    all_reads += older
    scaling = []
    for c in coef_reads:
        if not wild and draw(st.booleans()):
            scaling.append(c)
        else:
            all_reads.append(c)
    order = draw(st.permutations(range(len(all_reads))))
    pending = [all_reads[k] for k in order]
    factor = wild_factor if wild else tame_factor
    factors = []
    while pending:
        group = pending[:draw(st.integers(1, 3))]
        pending = pending[len(group):]
        f = group[0] if len(group) == 1 or draw(st.booleans()) else None
        if f is None or len(group) > 1:
            f = draw(factor(group, dtype))
            missing = [r for r in group if r not in leaves_of(f)]
            if missing:  # the factor skipped some of its reads: add them as plain terms
                factors += missing
        factors.append(f)
    for c in scaling:
        q = draw(st.integers(0, len(factors) - 1))
        scale = Bin("*", literal(draw, 0.6, dtype), c) if draw(st.booleans()) else \
            Bin("*", c, literal(draw, 0.6, dtype))
        factors[q] = Bin("*", scale, factors[q]) if draw(st.booleans()) else \
            Bin("*", factors[q], scale)
    integer_weights = draw(st.booleans()) and len(factors) > 1
    raw = [draw(st.integers(1, 9)) for _ in factors]
    negative = [draw(st.integers(0, 9)) == 0 for _ in factors]
    total = sum(raw)
    terms = []
    scalar_pool = list(scalars)
    for f, w, neg in zip(factors, raw, negative):
        if integer_weights:
            coef = Lit(str(w)) if w > 1 or draw(st.booleans()) else None
        elif scalar_pool and draw(st.booleans()):
            s = scalar_pool.pop(0)
            coef = Var(s.name)
        else:
            coef = literal(draw, round(w / total * (0.2 if neg else 1), 4), dtype)
        if coef is None:
            term = f
        elif draw(st.booleans()):
            term = Bin("*", coef, f)
        else:
            term = Bin("*", f, coef)
        terms.append(Neg(term) if neg and not integer_weights else term)
    if integer_weights:
        divisor = literal(draw, float(total), dtype)
        return Bin("/", sum_of(terms), divisor)
    body = sum_of(terms)
    if draw(st.integers(0, 5)) == 0:  # post-scaling: (..) * c or .. / c around the sum
        if draw(st.booleans()):
            return Bin("/", Bin("*", body, literal(draw, 2.0, dtype)), literal(draw, 2.0, dtype))
        return Cast(dtype, body)
    return body


def scalar_coefficients(n: int) -> tuple[Scalar, ...]:
    return tuple(Scalar(f"c{k}", ("float", "double")[k % 2], ("0.25", "0.125", "0.5")[k % 3])
                 for k in range(n))


@st.composite
def programs(draw, wild: bool = False, big: bool = False) -> Program:
    ndim = draw(st.sampled_from((2, 3)))
    dtype = draw(st.sampled_from(("float", "double")))
    form = draw(st.sampled_from(FORMS))
    names = draw(st.sampled_from(VAR_NAMES))[:ndim]
    time_var = draw(st.sampled_from(("t", "t", "step", "it")))
    offsets = draw(shapes(ndim, big))
    reach_lo = [max([0] + [-o[d] for o in offsets]) for d in range(ndim)]
    reach_hi = [max([0] + [o[d] for o in offsets]) for d in range(ndim)]
    constant_sizes = form in ("global", "local") or draw(st.integers(0, 5)) == 0
    limit = (40, 12) if ndim == 2 else (12, 8)
    interior = [draw(st.integers(1, limit[0] if d == 0 else limit[1])) if draw(st.integers(0, 4))
                else draw(st.integers(1, 2)) for d in range(ndim)]
    lower = [reach_lo[d] + draw(st.integers(0, 2)) for d in range(ndim)]
    margin = [reach_hi[d] + draw(st.integers(0, 2)) for d in range(ndim)]
    extents = [interior[d] + lower[d] + margin[d] for d in range(ndim)]
    size_style = "constant" if constant_sizes else draw(st.sampled_from(
        ("shared", "per_dim", "offset", "derived")))
    size_values: list[tuple[str, int]] = []
    derived: list[tuple[str, str, int]] = []
    dims = []
    if size_style in ("shared", "derived"):  # one size for every dimension
        n = max(extents)
        extents = [n] * ndim
        if size_style == "shared":
            size_values = [("n", n)]
        else:  # int dimsize = compsize + c before the scop: the benchmarks' harness form
            c = min(2, n - 1)
            size_values = [("compsize", n - c)]
            derived = [("dimsize", "compsize", c)]
    for d in range(ndim):
        inclusive = draw(st.booleans())
        increment = draw(st.sampled_from(("++", "++", "pre++", "+=1")))
        if size_style == "constant":
            param, const = None, extents[d]
        elif size_style == "shared":
            param, const = "n", 0
        elif size_style == "derived":
            param, const = "dimsize", 0
        elif size_style == "per_dim":
            param, const = f"n{names[d]}", 0
            size_values.append((param, extents[d]))
        else:  # A[2][m + 3][...]: an extent that is a parameter plus a constant
            extra = draw(st.integers(1, 4))
            param, const = f"m{names[d]}", extra
            size_values.append((param, extents[d] - extra))
        dims.append(Dim(names[d], param, const, lower[d], margin[d], inclusive, increment))
    time_start = draw(st.sampled_from((0, 0, 0, 1, 2, 3, 5)))
    # k = 3 time buffers (a three-level rotation) in 20% of the programs, k = 4 in 10%.
    # Write (t + w) % k and read level t as (t + r) % k with r = w - 1 (mod k); every time
    # subscript >= 0 for t >= t0 (C's % keeps the sign).
    buffers = {7: 3, 8: 3, 9: 4}.get(draw(st.integers(0, 9)), 2)
    write_shift = draw(st.sampled_from([w for w in (1, 1, 0, 2, 3, -1) if w >= -time_start]))
    read_shift = draw(st.sampled_from([r for r in (write_shift - 1, write_shift - 1 + buffers,
                                                   write_shift - 1 - buffers)
                                       if r >= -time_start]))
    older: list[Read] = []
    # Older levels: with k = 2 level t-1 at the cell, from the written buffer itself (a
    # leapfrog update), in 30% of the programs. With k >= 3 (what more buffers are mostly
    # for) each level t-1 .. t-k+2 in 60% of them, at one to three of the newest level's
    # offsets (so the reach stays), and the oldest, t-k+1, from the written buffer at the
    # cell in 30%.
    def older_shift(lag: int) -> int:
        return draw(st.sampled_from([s for s in (write_shift - lag + buffers,
                                                 write_shift - lag,
                                                 write_shift - lag + 2 * buffers)
                                     if s >= -time_start]))
    for lag in range(2, buffers):
        if draw(st.integers(0, 9)) >= 4:
            cells = draw(st.lists(st.sampled_from(offsets), min_size=1, max_size=3,
                                  unique=True))
            older += [Read(o, older_shift(lag)) for o in cells]
    if draw(st.integers(0, 9)) >= 7:
        older.append(Read((0,) * ndim, older_shift(buffers)))
    coefs: tuple[Coef, ...] = ()
    coef_reads: tuple[CoefRead, ...] = ()
    if draw(st.integers(0, 9)) >= 7:  # 30%: 1-3 read-only arrays
        coefs, coef_reads = draw(coefficient_arrays(dims, size_style == "constant"))
    scalars = scalar_coefficients(draw(st.integers(0, 2)) if draw(st.booleans()) else 0)
    update = draw(updates(offsets, read_shift, dtype, list(scalars), wild, buffers,
                          tuple(older), coef_reads))
    used = {n for n in _vars_of(update)}
    scalars = tuple(s for s in scalars if s.name in used)
    if draw(st.integers(0, 7)) == 0:  # an int parameter: (u * ik) / ik
        update = Bin("/", Bin("*", update, Var("ik")), Var("ik"))
        scalars = scalars + (Scalar("ik", "int", str(draw(st.integers(1, 4)))),)
    loop_order = tuple(range(ndim)) if draw(st.integers(0, 7)) else \
        tuple(draw(st.permutations(range(ndim))))
    steps = draw(st.integers(0, 25))
    return Program(
        ndim=ndim, dtype=dtype, form=form, dims=tuple(dims), loop_order=loop_order,
        update=update, write_shift=write_shift, time_var=time_var, time_start=time_start,
        time_inclusive=draw(st.booleans()),
        # A constant step count of 0 would be an empty loop nest (refused, rightly).
        steps_param=None if steps and draw(st.integers(0, 5)) == 0 else "T", steps=steps,
        scalars=scalars, size_values=tuple(size_values), derived=tuple(derived),
        declare_in_for=draw(st.booleans()), dtype_macro=draw(st.integers(0, 3)) == 0,
        spaced=draw(st.booleans()),
        math_header=bool(calls_of(update)) or draw(st.booleans()),
        buffers=buffers, coefs=coefs, commuted=draw(st.integers(0, 3)) == 3)


#: Names of read-only arrays: none is a loop variable (VAR_NAMES), a parameter or a name
#: a mutation adds.
COEF_NAMES = ("f", "kap", "cz", "wgt", "rhs", "vel")


@st.composite
def coefficient_arrays(draw, dims: list[Dim], constant_sizes: bool
                       ) -> tuple[tuple[Coef, ...], tuple[CoefRead, ...]]:
    """1-3 read-only arrays and their reads: each of rank 1 to ndim, float or double, its
    dimensions following distinct grid dimensions in any order (``f[j][i]``) or, one in
    four, subscripted by constants (``c[2][j]``, extent 1-4); each read 1-2 times at offsets
    that stay inside the array for every interior cell (-lower .. margin, at most 2)."""
    ndim = len(dims)
    names = draw(st.permutations(COEF_NAMES))[:draw(st.integers(1, 3))]
    coefs, reads = [], []
    for name in names:
        rank = draw(st.integers(1, ndim))
        followed = tuple(None if draw(st.integers(0, 3)) == 3 else d
                         for d in draw(st.permutations(range(ndim)))[:rank])
        sizes = tuple(0 if d is not None else draw(st.integers(1, 4)) for d in followed)
        # an open outermost extent is taken from the grid dimension the first subscript
        # follows; globals and locals need constant extents
        forms = [f for f in COEF_FORMS
                 if (f not in COEF_OPEN_FORMS or followed[0] is not None)
                 and (f not in COEF_CONSTANT_FORMS or constant_sizes)]
        coefs.append(Coef(name, draw(st.sampled_from(("float", "double"))), followed, sizes,
                          draw(st.sampled_from(forms))))
        for _ in range(draw(st.integers(1, 2))):
            reads.append(CoefRead(name, tuple(
                (None, draw(st.integers(0, size - 1))) if d is None else
                (d, draw(st.integers(-min(2, dims[d].lower), min(2, dims[d].margin))))
                for d, size in zip(followed, sizes))))
    return tuple(coefs), tuple(reads)


def _vars_of(e) -> list[str]:
    out, stack = [], [e]
    while stack:
        n = stack.pop()
        if isinstance(n, Var):
            out.append(n.name)
        elif isinstance(n, (Neg, Cast)):
            stack.append(n.operand)
        elif isinstance(n, Bin):
            stack += [n.lhs, n.rhs]
        elif isinstance(n, Call):
            stack += n.args
    return out


# =========================================================================== plans


@dataclass(frozen=True)
class PlanDraw:
    """A plan before it meets the stencil: :func:`resolve_plan` clamps it to what is legal
    (the mode among the legal ones, bT to what fits the block limits)."""

    bt: int
    bs_extra: tuple[int, ...]  # threads beyond the halo's minimum, per in-plane dimension
    sl: int | None
    mode: int | None  # None: --opt auto; else an index into the legal modes
    #: threads per in-plane dimension (array order) as drawn, instead of the halo's minimum
    #: plus ``bs_extra``; a block too small for bT is replaced as :func:`resolve_plan` says
    bs: tuple[int, ...] | None = None
    #: cells per thread (``--coarsen``), where the program allows it
    coarsen: int = 1
    #: one barrier per step (``--barriers step``), where the plan allows it
    step: bool = False
    #: warp shuffles (``--barriers shuffle``: a block of one warp of the drawn cells per
    #: thread, 2 where one was drawn), where the plan allows it; before one barrier per step
    shuffle: bool = False
    #: computing at idle warps (``--idle compute``): no level op branches
    compute_idle: bool = False
    #: the computing threads loading the halo (``--halo loaded``: bT 1, the drawn block's
    #: extra threads as the compute region), where the plan allows it; before the rest
    load_halo: bool = False


@st.composite
def plan_draws(draw) -> PlanDraw:
    bt = draw(st.integers(1, 10))
    extra = tuple(draw(st.sampled_from((0, 0, 1, 2, 3, 5, 8, 13, 30, 64))) for _ in range(2))
    sl = None if draw(st.integers(0, 2)) == 0 else draw(st.integers(1, 12))
    mode = None if draw(st.integers(0, 3)) == 0 else draw(st.integers(0, 2))
    coarsen = draw(st.sampled_from((1, 1, 2, 4)))
    return PlanDraw(bt, extra, sl, mode, coarsen=coarsen, step=draw(st.booleans()),
                    shuffle=draw(st.integers(0, 3)) == 0,
                    compute_idle=draw(st.integers(0, 2)) == 0,
                    load_halo=draw(st.integers(0, 3)) == 0)


def legal_modes(info) -> list[str]:
    """Modes the plan rules allow (an5dpy/blocking/plan.py check_plan)."""
    modes = ["none"]
    if info.associative:
        modes.insert(0, "assoc")
    if info.diagonal_free:
        modes.insert(0, "nondiag")
    return modes


def resolve_plan(draw: PlanDraw, info) -> "PlanOptions":
    """Concrete options for ``info``: the largest bT <= the drawn one whose drawn block
    (``draw.bs``, or 2 bT r + 1 + extra threads per dimension) or else its smallest one
    fits the GPU's limits. A time step of s sub-steps counts each of its bT steps s times
    in the halo (2 bT s r + 1). The drawn cells per thread round the outermost block size
    up to a multiple; where no block takes them (the registers), one cell per thread.
    One barrier per step where drawn and the plan takes it (mode nondiag), else one per
    level. Warp shuffles where drawn and the plan takes them (2D nondiag): a block of 32
    threads of the drawn cells (2 where one was drawn) at the largest bT that fits, before
    anything else. Idle warps computed where drawn (any plan takes it). The halo loaded by
    the computing threads where drawn and the plan takes it (3D nondiag or assoc, bT 1;
    :func:`halo_loaded_options`), before anything else."""
    from an5dpy.blocking.plan import WARP_SIZE, make_plan
    from an5dpy.errors import UsageError
    modes = legal_modes(info)
    opt = None if draw.mode is None else modes[draw.mode % len(modes)]
    loaded = halo_loaded_options(draw, info, opt) if draw.load_halo else None
    if loaded is not None:
        return loaded
    plane_radius = info.radius[1:]
    substeps = max(1, len(info.substeps))
    tries = []
    for bt in range(draw.bt, 0, -1):
        smallest = tuple(2 * bt * substeps * r + 1 for r in plane_radius)
        drawn = draw.bs if draw.bs is not None else tuple(
            b + e for b, e in zip(smallest, draw.bs_extra))
        # The drawn extra threads may not fit (threads per block, or shared memory in mode
        # none with a large radius); the smallest block of this bT is tried next.
        tries += [(bt, bs) for bs in dict.fromkeys((drawn, smallest))]
    if draw.bs is not None:  # a drawn block is kept with the largest bT it fits, if any
        tries.sort(key=lambda t: t[1] != draw.bs)
    coarsened = [(bt, (-(-bs[0] // draw.coarsen) * draw.coarsen, *bs[1:]), draw.coarsen)
                 for bt, bs in tries] if draw.coarsen > 1 else []
    barriers = ("step", "level") if draw.step else ("level",)
    idle = "compute" if draw.compute_idle else "skip"
    cells = max(2, draw.coarsen)
    warps = [((bt, (WARP_SIZE * cells,), cells), "shuffle")
             for bt in range(draw.bt, 0, -1)] if draw.shuffle and info.ndim == 2 else []
    for (bt, bs, coarsen), barrier in warps + list(itertools.product(
            coarsened + [(bt, bs, 1) for bt, bs in tries], barriers)):
        try:
            make_plan(info, bt=bt, bs=bs, sl=draw.sl, opt=opt, coarsen=coarsen,
                      barriers=barrier, idle=idle)
        except UsageError:
            continue
        return PlanOptions(bt, "x".join(str(b) for b in reversed(bs)), draw.sl, opt, coarsen,
                           barrier, idle)
    raise AssertionError(f"no plan fits radius {info.radius}")  # bT 1 always fits


def halo_loaded_options(draw: PlanDraw, info, opt: str | None) -> "PlanOptions | None":
    """The plan of bT 1 whose computing threads load the halo (``--halo loaded``): a compute
    region of the drawn extra threads plus one (the outermost side rounded up to the drawn
    cells per thread), the drawn cells per thread or one, the tile adding the halo; None
    where the program or that plan does not take it."""
    from an5dpy.blocking.plan import make_plan
    from an5dpy.errors import UsageError
    if info.ndim != 3:
        return None
    radius = info.radius[1:]
    for coarsen in dict.fromkeys((draw.coarsen, 1)):
        compute = (-(-(draw.bs_extra[0] + 1) // coarsen) * coarsen, draw.bs_extra[1] + 1)
        bs = tuple(c + 2 * r for c, r in zip(compute, radius))
        try:
            make_plan(info, bt=1, bs=bs, sl=draw.sl, opt=opt, coarsen=coarsen, halo="loaded")
        except UsageError:
            continue
        return PlanOptions(1, "x".join(str(b) for b in reversed(bs)), draw.sl, opt, coarsen,
                           halo="loaded")
    return None


@dataclass(frozen=True)
class PlanOptions:
    bt: int
    bs: str  # contiguous dimension first, as --bs
    sl: int | None
    opt: str | None
    coarsen: int = 1
    barriers: str = "level"
    idle: str = "skip"
    halo: str = "threads"

    def options(self, defines=()) -> "object":
        from an5dpy.driver import Options
        return Options(bt=self.bt, bs=self.bs, sl=self.sl or "off", opt=self.opt,
                       coarsen=self.coarsen, barriers=self.barriers, idle=self.idle,
                       halo=self.halo, defines=defines)

    def flags(self) -> list[str]:
        out = ["--bt", str(self.bt), "--bs", self.bs]
        if self.sl is not None:
            out += ["--sl", str(self.sl)]
        if self.opt is not None:
            out += ["--opt", self.opt]
        if self.coarsen > 1:
            out += ["--coarsen", str(self.coarsen)]
        if self.barriers != "level":
            out += ["--barriers", self.barriers]
        if self.idle != "skip":
            out += ["--idle", self.idle]
        if self.halo != "threads":
            out += ["--halo", self.halo]
        return out


@dataclass(frozen=True)
class ValidCase:
    program: "Program | CoupledProgram"
    plans: tuple[PlanDraw, ...]
    data_seed: int


@st.composite
def valid_cases(draw, wild: bool = False, big: bool = False) -> ValidCase:
    program = draw(programs(wild=wild, big=big))
    plans = tuple(draw(st.lists(plan_draws(), min_size=1, max_size=3)))
    return ValidCase(program, plans, draw(st.integers(0, 2 ** 16)))


# =========================================================================== malformed inputs
#
# A mutation takes a valid program's layout and makes it invalid in one known way. Each
# returns the layout mark of the line it changed ("statement", "scop", "endscop", or a
# nest position: 0 = the time loop), or None when the program lacks what it needs.


def _vars(p: Program) -> list[str]:
    return [d.var for d in p.dims]


def _read_shift(p: Program) -> int:
    """The time subscript's constant of a read of the newest level (level t)."""
    return next(r.shift for r in reads_of(p.update) if p.lag(r) == 1)


def _level_shift(p: Program, lag: int, buffers: int | None = None) -> int:
    """The smallest constant ``c >= w - lag`` of ``(t + c) % k`` that selects the buffer of
    level ``t + 1 - lag`` and is never negative (``c >= -t0``)."""
    k = buffers or p.buffers
    c = p.write_shift - lag
    while c < -p.time_start:
        c += k
    return c


def rotated(p: Program, buffers: int) -> Program:
    """``p`` rotating through ``buffers`` time buffers, each read taking the level it took."""
    return replace(p, buffers=buffers, update=_map_reads(
        p.update, lambda r: replace(r, shift=_level_shift(p, p.lag(r), buffers))))


def _add_term(layout: Layout, text: str) -> str:
    layout.value = f"{layout.value} + {text}"
    return "text:" + text  # the line that holds the added term


def _add_param(layout: Layout, decl: str) -> None:
    head, _, rest = layout.signature.partition("(")
    rest = rest[len("void"):] if rest.startswith("void)") else rest
    layout.signature = f"{head}({decl}{', ' if rest != ')' else ''}{rest}"


def _centre_read(p: Program, subscripts: list[str], shift: int | None = None,
                 array: str = "A") -> str:
    ts = time_subscript(p, _read_shift(p) if shift is None else shift)
    return f"{array}[{ts}]" + "".join(f"[{s}]" for s in subscripts)


def m_write_neighbour(layout, p, draw):
    d = draw(st.integers(0, p.ndim - 1))
    off = tuple(draw(st.sampled_from((-1, 1))) if k == d else 0 for k in range(p.ndim))
    layout.target = access_text(p, p.write_shift, off)
    return "statement"


def m_nonaffine_subscript(layout, p, draw):
    v = _vars(p)
    subs = list(v)
    subs[draw(st.integers(0, p.ndim - 1))] = draw(st.sampled_from(
        (f"{v[0]} * {v[1]}", f"{v[-1]} * {v[-1]}", f"{v[0]} / 2", f"{v[1]} % 3")))
    return _add_term(layout, _centre_read(p, subs))


def m_indirect_subscript(layout, p, draw):
    _add_param(layout, "int *idx")
    v = _vars(p)
    subs = list(v)
    subs[draw(st.integers(0, p.ndim - 1))] = f"idx[{v[0]}]"
    return _add_term(layout, _centre_read(p, subs))


def bad_time_subscripts(p: Program) -> list[str]:
    """Time subscripts that name no level of ``p``'s rotation through its buffers."""
    t, v = p.time_var, _vars(p)
    other = 3 if p.buffers == 2 else 2  # a modulus the other accesses do not use
    # (t + 1) % k with the program's own k is a time level like any other (read at the
    # cell, the written buffer holds the oldest one): not malformed where k is 4
    return [s for s in (f"{t} % {other}", f"{t}", f"(2 * {t}) % 2", f"({t} + {v[0]}) % 2",
                        f"({t} + 1) % 4", "0", f"{t} / 2")
            if s != f"({t} + 1) % {p.buffers}"]


def m_time_subscript(layout, p, draw):
    bad = draw(st.sampled_from(bad_time_subscripts(p)))
    return _add_term(layout, f"A[{bad}]" + "".join(f"[{x}]" for x in _vars(p)))


def m_second_statement(layout, p, draw):
    layout.extra_statement = f"{layout.target} = {_centre_read(p, _vars(p))};"
    return "text:" + layout.extra_statement


def m_missing_endscop(layout, p, draw):
    layout.scop_close = ""
    return "scop"


def m_missing_scop(layout, p, draw):
    layout.scop_open = ""
    return "endscop"


def m_nonmath_call(layout, p, draw):
    name = draw(st.sampled_from(("g", "smooth", "my_sqrt", "lgammaish")))
    layout.prelude.insert(0, f"{p.dtype} {name}({p.dtype});")
    return _add_term(layout, f"{name}({_centre_read(p, _vars(p))})")


def m_out_of_bounds(layout, p, draw):
    d = draw(st.integers(0, p.ndim - 1))
    dim = p.dims[d]
    off = dim.margin + 1 if draw(st.booleans()) else -(dim.lower + 1)
    subs = [space_subscript(p, x.var, off if k == d else 0) for k, x in enumerate(p.dims)]
    return _add_term(layout, _centre_read(p, subs))


def m_in_place(layout, p, draw):
    """Gauss-Seidel: every read uses the buffer the statement writes. Some read must be
    at a neighbour: the written buffer read at the cell itself holds the level before the
    newest (a leapfrog update, which the analysis accepts)."""
    if not any(any(r.offset) for r in reads_of(p.update)):
        return None
    q = replace(p, update=_map_reads(p.update, lambda r: replace(r, shift=p.write_shift)))
    layout.value = expr_text(q, q.update)
    return "statement"


def m_mixed_parity(layout, p, draw):
    """A read of the buffer the statement writes, at a neighbour (which the loop may
    already have updated), beside the reads of the other buffer; at the cell itself it
    would be a leapfrog read of the level before the newest."""
    d = draw(st.integers(0, p.ndim - 1))
    step = draw(st.sampled_from((-1, 1)))
    subs = [space_subscript(p, x.var, step if k == d else 0) for k, x in enumerate(p.dims)]
    return _add_term(layout, _centre_read(p, subs, shift=p.write_shift))


def m_stride(layout, p, draw):
    k = draw(st.integers(1, p.ndim))
    var = layout.loops[k].split("=")[0].split()[-1]
    step = draw(st.sampled_from((f"{var} += 2", f"{var}--", f"{var} = {var} + 2", f"{var} -= 1")))
    layout.loops[k] = re.sub(r";[^;]*\)$", f"; {step})", layout.loops[k])
    return k


def m_while(layout, p, draw):
    t = p.time_var
    upper = layout.loops[0].split(";")[1].strip()
    layout.loops[0] = f"while ({upper})"
    if p.declare_in_for:
        layout.body_head.append(f"int {t} = {p.time_start};")
    return 0


def m_if_body(layout, p, draw):
    layout.wrap_body = (f"if ({_vars(p)[0]} > 1) {{", "}")
    return "text:if ("


def m_compound_assign(layout, p, draw):
    layout.assign = draw(st.sampled_from(("+=", "-=", "*=")))
    return "statement"


def m_loop_var_value(layout, p, draw):
    v = draw(st.sampled_from([p.time_var] + _vars(p)))
    return _add_term(layout, f"{v}")


def m_outer_var_bound(layout, p, draw):
    k = draw(st.integers(2, p.ndim))
    outer = layout.loops[k - 1].split("=")[0].split()[-1]
    layout.loops[k] = re.sub(r"(<=?) [^;]*;", rf"\1 {outer};", layout.loops[k], count=1)
    return k


def m_nonaffine_bound(layout, p, draw):
    if not p.steps_param:
        return None
    layout.loops[0] = re.sub(r"(<=?) [^;]*;", rf"\1 {p.steps_param} * {p.steps_param};",
                             layout.loops[0], count=1)
    return 0


def m_negative_time(layout, p, draw):
    r = _read_shift(p)
    low = -p.time_start - 1
    shift = low - (low - r) % p.buffers  # level t's buffer, but -1 or less at t = t0
    return _add_term(layout, _centre_read(p, _vars(p), shift=shift))


def m_transposed_read(layout, p, draw):
    """A[j][i]: the offset varies with the loop point, unless the first and last dimensions
    hold one cell each for every parameter value (then it is a valid constant offset)."""
    if all(d.extent_param is None for d in p.dims) and p.interior()[0] == p.interior()[-1] == 1:
        return None
    v = _vars(p)
    return _add_term(layout, _centre_read(p, list(reversed(v))))


def m_int_array(layout, p, draw):
    elem = "SB_TYPE" if p.dtype_macro else p.dtype
    new = draw(st.sampled_from(("int", "long", "short")))

    def fix(text: str) -> str:
        return text.replace(f"{elem} A[", f"{new} A[").replace(f"{elem} (*A)", f"{new} (*A)") \
            .replace(f"({elem} (*)", f"({new} (*)")
    layout.prelude = [fix(x) for x in layout.prelude]
    layout.body_head = [fix(x) for x in layout.body_head]
    layout.signature = fix(layout.signature)
    return f"text:{new} "


def m_empty_domain(layout, p, draw):
    layout.loops[0] = re.sub(r"(<=?) [^;]*;", rf"< {p.time_start};", layout.loops[0], count=1)
    return 0


def m_drop_loop(layout, p, draw):
    k = draw(st.integers(1, p.ndim))
    var = layout.loops[k].split("=")[0].split()[-1]
    del layout.loops[k]
    layout.body_head.append(f"int {var} = 1;")
    return "statement"


def m_operator(layout, p, draw):
    a = _centre_read(p, _vars(p))
    text = draw(st.sampled_from((f"((int){a} & 1)", f"({a} > 1 ? 1 : 0)", f"({a} < 0.5)",
                                 f"sizeof({a})", f"!{a}", f"((int){a} << 1)")))
    return _add_term(layout, text)


def m_second_array(layout, p, draw):
    """A second time-buffered array read (``B[t%2][i][j]``): B is never written, so it is
    a read-only array, whose time dimension makes it one rank too many (refused at its
    declaration)."""
    decl = f"{p.dtype} B[2]" + "".join("[64]" for _ in range(p.ndim)) + ";"
    layout.prelude.insert(0, decl)
    _add_term(layout, _centre_read(p, _vars(p), array="B"))
    return "text:" + decl


# ---------------------------------------------------------------- read-only arrays and levels


def _coef_param(layout: Layout, p: Program, draw, name: str, followed: int | None
                ) -> str:
    """Declare a rank-1 read-only array ``name`` (a parameter of the element type of
    ``p``'s grid or the other one): ``float *name`` when its subscript follows a grid
    dimension (the extent is that dimension's), ``float name[3]`` when it is a constant.
    Returns the declaration."""
    dtype = draw(st.sampled_from(("float", "double")))
    decl = f"{dtype} *{name}" if followed is not None else f"{dtype} {name}[3]"
    _add_param(layout, decl)
    return decl


def m_coef_out_of_bounds(layout, p, draw):
    """A read-only array read outside its extent at some interior cell: one past the
    grid dimension its subscript follows (or before it), or a constant subscript past a
    constant extent; an existing read-only array of the program, or a new one."""
    followed = [(c, k) for c in p.coefs for k, d in enumerate(c.dims) if d is not None]
    if followed and draw(st.booleans()):
        c, k = draw(st.sampled_from(followed))
        d = c.dims[k]
        dim = p.dims[d]
        off = dim.margin + 1 if draw(st.booleans()) else -(dim.lower + 1)
        subs = tuple((d_, 0) if d_ is not None else (None, 0) for d_ in c.dims)
        read = CoefRead(c.name, subs[:k] + ((d, off),) + subs[k + 1:])
        return _add_term(layout, coef_text(p, read))
    if draw(st.integers(0, 2)):
        d = draw(st.integers(0, p.ndim - 1))
        dim = p.dims[d]
        _coef_param(layout, p, draw, "fo", d)
        off = dim.margin + 1 if draw(st.booleans()) else -(dim.lower + 1)
        return _add_term(layout, f"fo[{space_subscript(p, dim.var, off)}]")
    _coef_param(layout, p, draw, "fo", None)
    return _add_term(layout, f"fo[{draw(st.sampled_from((3, 4, 7)))}]")


def m_coef_indirect(layout, p, draw):
    """A read-only array subscripted by the value of another array: ``fi[idx[i]]``."""
    _add_param(layout, "int *idx")
    _coef_param(layout, p, draw, "fi", 0)
    v = draw(st.sampled_from(_vars(p)))
    return _add_term(layout, f"fi[idx[{v}]]")


def m_coef_subscript(layout, p, draw):
    """A read-only array subscript outside the accepted forms (a loop variable plus a
    constant, or a constant): the time variable, a parameter, two loop variables, a scaled
    variable, or one variable indexing two dimensions."""
    v, t = _vars(p), p.time_var
    size = next(iter(dict(p.size_values)), None)
    choices = [f"fs[{t}]", f"fs[{v[0]} + {v[-1]}]", f"fs[2 * {v[-1]}]",
               f"fs[{v[0]}][{v[0]}]" if p.ndim > 1 else None,
               f"fs[{v[0]} + {size}]" if size else None]
    text = draw(st.sampled_from([c for c in choices if c]))
    rank = text.count("[")
    _add_param(layout, f"{p.dtype} (*fs){'[4]' * (rank - 1)}" if rank > 1 else
               f"{p.dtype} *fs")
    return _add_term(layout, text)


def m_too_many_levels(layout, p, draw):
    """Nine time buffers (``A[(t + 1) % 9]``, declared ``A[9]``; an5dpy keeps at most 8),
    reading the levels the program read: refused at the statement's target."""
    return "statement"


#: Mutations that need another valid program first (Program -> Program, drawn).
PREPARE: dict[str, Callable] = {
    "too_many_levels": lambda p, draw: rotated(p, 9),
}


MUTATIONS: dict[str, Callable] = {
    "write_neighbour": m_write_neighbour,
    "nonaffine_subscript": m_nonaffine_subscript,
    "indirect_subscript": m_indirect_subscript,
    "time_subscript": m_time_subscript,
    "second_statement": m_second_statement,
    "missing_endscop": m_missing_endscop,
    "missing_scop": m_missing_scop,
    "nonmath_call": m_nonmath_call,
    "out_of_bounds": m_out_of_bounds,
    "in_place": m_in_place,
    "mixed_parity": m_mixed_parity,
    "stride": m_stride,
    "while_loop": m_while,
    "if_body": m_if_body,
    "compound_assign": m_compound_assign,
    "loop_var_value": m_loop_var_value,
    "outer_var_bound": m_outer_var_bound,
    "nonaffine_bound": m_nonaffine_bound,
    "negative_time": m_negative_time,
    "transposed_read": m_transposed_read,
    "int_array": m_int_array,
    "empty_domain": m_empty_domain,
    "drop_loop": m_drop_loop,
    "operator": m_operator,
    "second_array": m_second_array,
    "coef_out_of_bounds": m_coef_out_of_bounds,
    "coef_indirect": m_coef_indirect,
    "coef_subscript": m_coef_subscript,
    "too_many_levels": m_too_many_levels,
}


def _map_reads(e, fn):
    if isinstance(e, Read):
        return fn(e)
    if isinstance(e, (Neg, Cast)):
        return replace(e, operand=_map_reads(e.operand, fn))
    if isinstance(e, Bin):
        return replace(e, lhs=_map_reads(e.lhs, fn), rhs=_map_reads(e.rhs, fn))
    if isinstance(e, Call):
        return replace(e, args=tuple(_map_reads(a, fn) for a in e.args))
    return e


@dataclass(frozen=True)
class MalformedCase:
    program: Program | CoupledProgram
    kind: str
    text: str  # the mutated C file
    mutated_line: int | None
    #: the command that must refuse it: an5d-translate, or (a coupled program, whose CUDA
    #: an5d-translate does not generate yet) an5d analyze
    command: str = "translate"


@st.composite
def malformed_cases(draw, kinds: tuple[str, ...] | None = None) -> MalformedCase:
    program = draw(programs())
    kind = draw(st.sampled_from(kinds or tuple(MUTATIONS)))
    if kind in PREPARE:
        program = PREPARE[kind](program, draw)
    layout = layout_of(program)
    mark = MUTATIONS[kind](layout, program, draw)
    if mark is None:  # the program lacks what the mutation needs: another program
        assume(False)
    rendered = layout.render()
    return MalformedCase(program, kind, rendered.text, mutated_line(rendered, mark))


def mutated_line(rendered: Rendered, mark) -> int | None:
    if isinstance(mark, str) and mark.startswith("text:"):
        lines = rendered.text.splitlines()  # the last line that holds it: it was appended
        return next((k + 1 for k in reversed(range(len(lines))) if mark[5:] in lines[k]), None)
    return rendered.lines.get(mark)


# =========================================================================== coupled programs
#
# A time step of several statements (README: "A time step may also hold several
# statements"): 2-4 fields, each written by one statement, double-buffered
# (``u[(t+1)%2][i][j] = ... u[t%2][i-1][j] ...``) or in place (``ey[i][j] = ey[i][j] - ...``);
# the statements sit in one nest or in consecutive nests whose bounds differ by 0-2 cells
# at each edge. Each read is drawn knowing which value it takes, the one a statement
# earlier in the time step wrote (*new*) or the previous step's (*old*), and only reads
# an5dpy/analysis/fields.py must accept are drawn:
#
# * a new read is of a field an earlier statement writes (its buffer ``(t+1)%2``, or the
#   array in place): at any offset where the writer's nest came before, at offsets up to
#   the cell in loop order (lexicographically <= 0: cells it has written this step) where
#   it is the same nest; the reader then belongs to a sub-step after the writer's;
# * an old read is of a field the reader itself or a later statement writes, or an
#   earlier statement of the reader's sub-step: a double-buffered field's other buffer at
#   any offset; a field in place only at the cell by its own statement, at any offset by
#   an earlier nest, at offsets lexicographically >= 0 (> 0 for an earlier statement) by a
#   statement of the writer's nest (cells the writer updates later in the step).
#
# A new read needs the writer to have written one of the cells it reads in some run: with
# constant sizes the generator checks that the boxes meet (with parameters they always do
# for large values, which is what the analysis proves for).

#: Field names: none is a loop variable (VAR_NAMES), a read-only array (COEF_NAMES), a
#: parameter or a scalar.
FIELD_NAMES = ("u", "v", "w", "ex", "ey", "hz", "p", "q")
#: How a field is declared: a parameter ``float u[2][n][n]``, a pointer parameter
#: ``float (*u)[n][n]``, a VLA pointer cast from a flat parameter, a global or a local
#: (the last two with constant sizes).
FIELD_FORMS = ("parameter", "pointer_parameter", "vla_pointer", "global", "local")
#: Forms that leave a field's outermost extent open (a double-buffered field's is its 2).
OPEN_FIELD_FORMS = ("pointer_parameter", "vla_pointer")


@dataclass(frozen=True)
class CoupledField:
    name: str
    buffered: bool  # double-buffered (u[2][n][n]); else updated in place (u[n][n])
    form: str  # one of FIELD_FORMS


@dataclass(frozen=True)
class Assignment:
    field: str  # the field it writes (at the loop point)
    update: object  # expression tree of FieldRead, CoefRead, Lit, Var, ...


@dataclass(frozen=True)
class Nest:
    """A spatial loop nest of the time step: its own loop variables and bounds (``dims``,
    array order, every extent the program's) and the assignments of its innermost body."""

    dims: tuple[Dim, ...]
    body: tuple[Assignment, ...]
    braces: bool = False  # braces around a body of one assignment


@dataclass(frozen=True)
class NestSpelling:
    """What :func:`expr_text` needs to write an assignment of a nest: the nest's loop
    variables (``dims``) and the program's time subscript spelling."""

    dims: tuple[Dim, ...]
    time_var: str
    spaced: bool
    commuted: bool
    buffers: int = 2


@dataclass(frozen=True)
class CoupledProgram:
    """A valid time step of several statements; :func:`render` writes it as C and
    :meth:`params` gives the ``-P`` values to run it with (``an5d verify FILE --backend sim
    -P ...``, the same for ``--backend cuda --exact``)."""

    ndim: int
    dtype: str
    fields: tuple[CoupledField, ...]  # declaration order
    nests: tuple[Nest, ...]
    write_shift: int  # c of every double-buffered write (t + c) % 2
    time_var: str
    time_start: int
    time_inclusive: bool
    steps_param: str | None  # None: the step count is a constant of the loop bound
    steps: int
    scalars: tuple[Scalar, ...]
    size_values: tuple[tuple[str, int], ...]  # -P values of the size parameters
    coefs: tuple[Coef, ...] = ()
    declare_in_for: bool = True
    spaced: bool = False
    commuted: bool = False
    math_header: bool = False
    time_braces: bool = True  # braces around the time loop's body of one nest

    buffers = 2  # of a double-buffered field (time_subscript)
    defines: tuple[tuple[str, str], ...] = ()  # no -D needed

    def params(self) -> dict[str, str]:
        """The -P values verify needs (:func:`verify_params`)."""
        return verify_params(self)

    @property
    def dims(self) -> tuple[Dim, ...]:
        """The first nest's dimensions: the extents every field and nest shares."""
        return self.nests[0].dims

    def assignments(self) -> list[tuple[int, Assignment]]:
        """Every assignment in execution order within a step, with its nest's index."""
        return [(n, a) for n, nest in enumerate(self.nests) for a in nest.body]

    def field(self, name: str) -> CoupledField:
        return next(f for f in self.fields if f.name == name)

    def spelling(self, nest: int) -> NestSpelling:
        return NestSpelling(self.nests[nest].dims, self.time_var, self.spaced, self.commuted)

    def substeps(self) -> tuple[tuple[int, ...], ...]:
        """The statements of each sub-step, as the generator drew them: a statement starts
        a later sub-step than every statement whose new value it reads
        (:attr:`an5dpy.ir.StencilInfo.substeps` must agree)."""
        writer = {a.field: k for k, (_, a) in enumerate(self.assignments())}
        sigma: list[int] = []
        for _, a in self.assignments():
            level = sigma[-1] if sigma else 0
            for r in leaves_of(a.update):
                if isinstance(r, FieldRead) and r.new:
                    level = max(level, sigma[writer[r.field]] + 1)
            sigma.append(level)
        return tuple(tuple(k for k, s in enumerate(sigma) if s == level)
                     for level in sorted(set(sigma)))

    def offsets(self) -> list[tuple[int, ...]]:
        """Every offset a field is read at (what the analysis' ``offsets`` holds)."""
        return sorted({r.offset for _, a in self.assignments() for r in leaves_of(a.update)
                       if isinstance(r, FieldRead)})


def _field_extents(p: CoupledProgram, f: CoupledField) -> list[str]:
    return (["2"] if f.buffered else []) + [affine_text(d.extent_param, d.extent_const)
                                            for d in p.dims]


def field_declaration(p: CoupledProgram, f: CoupledField, where: str = "") -> str:
    """The declaration of ``f`` (:func:`array_declaration`; a field has two dimensions or
    more, so its pointer forms always have an inner extent)."""
    return array_declaration(f.form, p.dtype, f.name, _field_extents(p, f), where)


def render_coupled(p: CoupledProgram) -> Rendered:
    """The program as a C file; ``lines`` holds ``("statement", k)``: the first and last
    line of assignment k (execution order), and the lines of the pragmas."""
    prelude = ["#include <math.h>"] if p.math_header else []
    prelude += [field_declaration(p, f) for f in p.fields if f.form == "global"]
    prelude += [coef_declaration(p, c) for c in p.coefs if c.form == "global"]
    prelude.append("")
    int_params = [name for name, _ in p.size_values] + ([p.steps_param] if p.steps_param
                                                        else [])
    args = [f"int {n}" for n in int_params] + [f"{s.ctype} {s.name}" for s in p.scalars]
    args += [field_declaration(p, f) for f in p.fields
             if f.form in ("parameter", "pointer_parameter", "vla_pointer")]
    args += [coef_declaration(p, c) for c in p.coefs
             if c.form in COEF_PARAMETER_FORMS + ("vla_pointer",)]
    head = [field_declaration(p, f, "body") for f in p.fields
            if f.form in ("vla_pointer", "local")]
    head += [coef_declaration(p, c, "body") for c in p.coefs
             if c.form in ("vla_pointer", "local")]
    if not p.declare_in_for:
        loop_vars = [p.time_var] + list(dict.fromkeys(d.var for n in p.nests for d in n.dims))
        head.append(f"int {', '.join(loop_vars)};")
    lines = prelude + [f"void kernel({', '.join(args)})", "{"] + [f"  {s}" for s in head]
    marks: dict = {"scop": len(lines) + 1}
    lines.append("#pragma scop")
    t0 = p.time_start
    if p.steps_param:
        upper = affine_text(p.steps_param, t0 - 1 if p.time_inclusive else t0)
    else:
        upper = str(t0 + p.steps - 1 if p.time_inclusive else t0 + p.steps)
    time_braces = p.time_braces or len(p.nests) > 1
    lines.append("  " + loop_header(p, p.time_var, str(t0), upper, p.time_inclusive, "++",
                                    p.declare_in_for) + (" {" if time_braces else ""))
    k = 0
    for n, nest in enumerate(p.nests):
        indent = "    "
        for d in nest.dims:
            end = d.extent_const - d.margin - (1 if d.inclusive else 0)
            lines.append(indent + loop_header(p, d.var, str(d.lower),
                                              affine_text(d.extent_param, end), d.inclusive,
                                              d.increment, p.declare_in_for))
            indent += "  "
        braces = nest.braces or len(nest.body) > 1
        if braces:
            lines[-1] += " {"
        spelling = p.spelling(n)
        for a in nest.body:
            f = p.field(a.field)
            target = field_access_text(spelling, f.name, p.write_shift if f.buffered else None,
                                       (0,) * p.ndim)
            first = len(lines) + 1
            lines += (indent + wrap_sum(f"{target} = {expr_text(spelling, a.update)};",
                                        indent)).split("\n")
            marks[("statement", k)] = (first, len(lines))
            k += 1
        if braces:
            lines.append(indent[:-2] + "}")
    if time_braces:
        lines.append("  }")
    marks["endscop"] = len(lines) + 1
    lines.append("#pragma endscop")
    lines += [f"  (void){f.name};" for f in p.fields if f.form == "local"]
    lines += [f"  (void){c.name};" for c in p.coefs if c.form == "local"]
    lines.append("}")
    return Rendered("\n".join(lines) + "\n", marks)


def _lex_sign(offset: tuple[int, ...]) -> int:
    """-1, 0 or 1: where ``offset`` lies from the cell in the loops' (array) order."""
    first = next((o for o in offset if o), 0)
    return (first > 0) - (first < 0)


def _meets(reader: tuple[Dim, ...], writer: tuple[Dim, ...], offset: tuple[int, ...],
           extents: tuple[int, ...]) -> bool:
    """Whether some cell of ``reader``'s nest, moved by ``offset``, is a cell ``writer``'s
    nest writes (extents as given; both nests are boxes)."""
    for r, w, o, n in zip(reader, writer, offset, extents):
        if max(r.lower, w.lower - o) >= min(n - r.margin, n - w.margin - o):
            return False
    return True


def _box_offsets(dims: tuple[Dim, ...], star: bool) -> list[tuple[int, ...]]:
    """Offsets of radius <= 2 that keep every cell of the nest inside the arrays; ``star``:
    only those off the cell along one dimension (and the cell)."""
    import itertools
    ranges = [range(-min(2, d.lower), min(2, d.margin) + 1) for d in dims]
    every = [tuple(o) for o in itertools.product(*ranges)]
    return [o for o in every if sum(1 for c in o if c) <= 1] if star else every


@dataclass(frozen=True)
class StepShape:
    """The layout a coupled program's reads are drawn for, per statement (execution
    order): the field it writes, whether double-buffered, its nest; the nests' dimensions,
    the grid's extents, and whether they are constants (the analysis then proves for these
    values only, else for every value of the parameters)."""

    fields: tuple[str, ...]
    buffered: tuple[bool, ...]
    nest_of: tuple[int, ...]
    nests: tuple[tuple[Dim, ...], ...]
    extents: tuple[int, ...]
    constant_sizes: bool

    def dims(self, s: int) -> tuple[Dim, ...]:
        return self.nests[self.nest_of[s]]

    def meets(self, s: int, w: int, offset: tuple[int, ...]) -> bool:
        """Whether some cell statement ``s`` visits, moved by ``offset``, is one statement
        ``w`` writes (for some parameter values: always, for large ones)."""
        return not self.constant_sizes or _meets(self.dims(s), self.dims(w), offset,
                                                 self.extents)

    def new_read_ok(self, s: int, w: int, offset: tuple[int, ...]) -> bool:
        """Whether statement ``s`` may read at ``offset`` the value statement ``w`` wrote in
        this time step: ``w`` comes earlier, in an earlier nest or (same nest) at a cell not
        after the reader's in loop order, and writes some cell read."""
        return w < s and (self.nest_of[w] < self.nest_of[s] or _lex_sign(offset) <= 0) \
            and self.meets(s, w, offset)

    def old_read_ok(self, s: int, w: int, offset: tuple[int, ...], same_substep: bool
                    ) -> bool:
        """Whether statement ``s`` may read at ``offset`` the previous step's value of the
        field statement ``w`` writes: from ``w``'s other buffer if double-buffered (``w``
        not in an earlier sub-step, which replaced it); in place, before ``w`` writes the
        cell: at the cell itself for ``w`` = ``s``, anywhere for a later nest, at or after
        the cell in loop order for a later statement of the nest, after it for an earlier
        one of the same sub-step."""
        if w < s and not same_substep:
            return False
        if self.buffered[w]:
            return True
        if w == s:
            return not any(offset)
        if self.nest_of[w] != self.nest_of[s]:
            return w > s
        return _lex_sign(offset) >= 0 if w > s else _lex_sign(offset) > 0


@st.composite
def step_shapes(draw, one_nest: bool | None, in_place: tuple[int, ...],
                buffered: tuple[int, ...], buffered_short: bool) -> StepShape:
    """2-4 statements in one nest or consecutive nests, each nest's bounds 0-2 cells in
    from the grid's edges (what it reads within them), the grid's extents (tiny ones
    too) as constants or parameters."""
    ndim = draw(st.sampled_from((2, 3)))
    count = draw(st.integers(2, 4))
    is_buffered = [k in buffered or (k not in in_place and draw(st.booleans()))
                   for k in range(count)]
    if one_nest is None:
        one_nest = draw(st.integers(0, 2)) == 0
    cuts = [] if one_nest else sorted(draw(st.sets(st.integers(1, count - 1), min_size=1)))
    groups = [range(a, b) for a, b in zip([0] + cuts, cuts + [count])]
    edge = st.sampled_from((0, 1, 1, 2, 2))
    bounds = [[(draw(edge), draw(edge)) for _ in range(ndim)] for _ in groups]
    if not buffered_short:
        box = [(min(b[d][0] for b in bounds), min(b[d][1] for b in bounds))
               for d in range(ndim)]
        bounds = [box if any(is_buffered[s] for s in g) else b for g, b in zip(groups, bounds)]
    limit = (18, 12) if ndim == 2 else (8, 6)
    extents = []
    for d in range(ndim):
        least = max(lo + hi for nest in bounds for lo, hi in [nest[d]]) + 1
        tiny = draw(st.integers(0, 4)) == 0
        extents.append(least + draw(st.integers(0, 1 if tiny else limit[min(d, 1)])))
    size_style = draw(st.sampled_from(("constant", "shared", "per_dim", "per_dim")))
    if size_style == "shared":
        extents = [max(extents)] * ndim
    shared_names = draw(st.sampled_from(VAR_NAMES))[:ndim]
    own_names = draw(st.booleans())
    nests = []
    for nest in bounds:
        names = draw(st.sampled_from(VAR_NAMES))[:ndim] if own_names else shared_names
        nests.append(tuple(
            Dim(names[d], None if size_style == "constant" else
                "n" if size_style == "shared" else f"n{shared_names[d]}",
                extents[d] if size_style == "constant" else 0, lo, hi, draw(st.booleans()),
                draw(st.sampled_from(("++", "++", "pre++", "+=1"))))
            for d, (lo, hi) in enumerate(nest)))
    fields = draw(st.permutations(FIELD_NAMES))[:count]
    return StepShape(tuple(fields), tuple(is_buffered),
                     tuple(n for n, g in enumerate(groups) for _ in g), tuple(nests),
                     tuple(extents), size_style == "constant")


@st.composite
def coupled_reads(draw, shape: StepShape, shift: Callable[[bool], int], substep: bool
                  ) -> list[list[FieldRead]]:
    """The field reads of each statement, valid by :meth:`StepShape.new_read_ok` and
    :meth:`StepShape.old_read_ok`: first 0-2 new values of earlier statements (which
    decide the statement's sub-step), then usually its own old value at the cell and 0-4
    more old values. ``shift(new)`` draws a double-buffered read's time constant; with
    ``substep`` the last statement reads the first one's new value (two sub-steps)."""
    count = len(shape.fields)

    def read(w: int, offset: tuple[int, ...], new: bool) -> FieldRead:
        return FieldRead(shape.fields[w], offset, new, shift(new) if shape.buffered[w] else None)

    def offset_where(s: int, allowed: Callable) -> tuple[int, ...] | None:
        star = draw(st.integers(0, 3)) > 0  # mostly along one dimension
        choices = [o for o in _box_offsets(shape.dims(s), star) if allowed(o)] or \
            [o for o in _box_offsets(shape.dims(s), False) if allowed(o)]
        return draw(st.sampled_from(choices)) if choices else None

    sigma: list[int] = []  # each statement's sub-step, as fields.py computes it
    reads: list[list[FieldRead]] = []
    for s in range(count):
        here: list[FieldRead] = []
        writers = [draw(st.integers(0, s - 1)) for _ in range(
            draw(st.sampled_from((0, 0, 1, 1, 2))) if s else 0)]
        if substep and s == count - 1:
            writers.append(0)
        for w in writers:
            o = offset_where(s, lambda o, w=w: shape.new_read_ok(s, w, o))
            if o is not None:
                here.append(read(w, o, True))
        assume(not substep or s < count - 1 or here)
        sigma.append(max([sigma[-1] if sigma else 0] + [
            sigma[shape.fields.index(r.field)] + 1 for r in here]))
        if draw(st.integers(0, 4)) or not here:
            here.insert(0, read(s, (0,) * len(shape.extents), False))
        for _ in range(draw(st.integers(0, 4))):
            w = draw(st.integers(0, count - 1))
            o = offset_where(s, lambda o, w=w: shape.old_read_ok(s, w, o, sigma[w] == sigma[s]
                                                                  if w < s else True))
            if o is not None:
                here.append(read(w, o, False))
        reads.append(here)
    return reads


@st.composite
def coupled_programs(draw, one_nest: bool | None = None, in_place: tuple[int, ...] = (),
                     buffered: tuple[int, ...] = (), substep: bool = False,
                     buffered_short: bool = True) -> CoupledProgram:
    """A valid time step of several statements (:class:`StepShape`, :func:`coupled_reads`),
    its updates averaging their reads (:func:`updates`) or in FDTD's difference form, 30%
    with read-only arrays, some with scalar parameters, every field in any declaration
    form, 0-7 steps. The arguments force a form (for the malformed cases): ``one_nest``,
    the statements (by index) whose field is ``in_place`` or ``buffered``, and with
    ``substep`` the last statement reading the first one's new value (two sub-steps at
    least). ``buffered_short`` False keeps the nest of every double-buffered field as wide
    as the box around all nests (no cells inside the box such a field's statement never
    writes)."""
    shape = draw(step_shapes(one_nest, in_place, buffered, buffered_short))
    ndim, count = len(shape.extents), len(shape.fields)
    dtype = draw(st.sampled_from(("float", "double")))
    time_start = draw(st.sampled_from((0, 0, 0, 1, 2, 3)))
    write_shift = draw(st.sampled_from([w for w in (1, 1, 0, 2, -1) if w >= -time_start]))

    def shift(new: bool) -> int:
        """The time constant of a read of the written buffer (new) or of the other one,
        any constant of its parity that is never negative."""
        base = write_shift if new else write_shift - 1
        return draw(st.sampled_from([c for c in (base, base, base + 2, base - 2)
                                     if c >= -time_start]))
    reads = draw(coupled_reads(shape, shift, substep))
    coefs: tuple[Coef, ...] = ()
    coef_reads: list[list[CoefRead]] = [[] for _ in range(count)]
    if draw(st.integers(0, 9)) >= 7:  # 30%: read-only arrays, in bounds for every nest
        tight = [replace(shape.nests[0][d], lower=min(n[d].lower for n in shape.nests),
                         margin=min(n[d].margin for n in shape.nests)) for d in range(ndim)]
        coefs, drawn = draw(coefficient_arrays(tight, shape.constant_sizes))
        for c in drawn:
            coef_reads[draw(st.integers(0, count - 1))].append(c)
    scalars = scalar_coefficients(draw(st.integers(0, 2)) if draw(st.booleans()) else 0)
    values = [draw(difference_updates(reads[s], coef_reads[s], dtype))
              if len(reads[s]) >= 2 and draw(st.integers(0, 3)) == 0 else
              draw(updates([], 0, dtype, list(scalars), False, 2, tuple(reads[s]),
                           tuple(coef_reads[s])))
              for s in range(count)]
    used = {v for u in values for v in _vars_of(u)}
    nests = tuple(Nest(dims, tuple(Assignment(shape.fields[s], values[s])
                                   for s in range(count) if shape.nest_of[s] == n),
                       draw(st.integers(0, 3)) == 0) for n, dims in enumerate(shape.nests))
    forms = [f for f in FIELD_FORMS if shape.constant_sizes or f not in COEF_CONSTANT_FORMS]
    fields = [CoupledField(shape.fields[k], shape.buffered[k], draw(st.sampled_from(forms)))
              for k in draw(st.permutations(range(count)))]  # declared in any order
    if all(not f.buffered and f.form in OPEN_FIELD_FORMS for f in fields):
        # some field must declare the outermost extent (the others take it from there)
        fields[0] = replace(fields[0], form="parameter")
    # 0-7 steps, mostly 2 or more (two steps run every launch degree of bT 2)
    steps = draw(st.integers(0, 7)) if draw(st.integers(0, 3)) == 0 else draw(st.integers(2, 7))
    sizes = {d.extent_param: n for d, n in zip(shape.nests[0], shape.extents)
             if d.extent_param}
    return CoupledProgram(
        ndim=ndim, dtype=dtype, fields=tuple(fields), nests=nests, write_shift=write_shift,
        time_var=draw(st.sampled_from(("t", "t", "step", "it"))), time_start=time_start,
        time_inclusive=draw(st.booleans()),
        # A constant step count of 0 would be an empty loop nest (refused, rightly).
        steps_param=None if steps and draw(st.integers(0, 5)) == 0 else "T", steps=steps,
        scalars=tuple(sc for sc in scalars if sc.name in used),
        size_values=tuple(sizes.items()), coefs=coefs, declare_in_for=draw(st.booleans()),
        spaced=draw(st.booleans()), commuted=draw(st.integers(0, 3)) == 3,
        math_header=any(calls_of(u) for u in values) or draw(st.booleans()),
        time_braces=draw(st.booleans()))


@st.composite
def difference_updates(draw, reads: list[FieldRead], coef_reads: list[CoefRead],
                       dtype: str) -> object:
    """FDTD's form: the first read minus a small multiple of a signed sum of the others
    (``ey[i][j] - 0.5f * (hz[i][j] - hz[i-1][j])``), read-only arrays as terms of the sum."""
    first, rest = reads[0], list(reads[1:]) + list(coef_reads)  # reads[0]: usually own cell
    terms = [r if k % 2 == 0 else Neg(r) for k, r in enumerate(rest)]
    scale = literal(draw, round(0.5 / len(terms), 4), dtype)
    return Bin("-", first, Bin("*", scale, sum_of(terms)))


@st.composite
def coupled_cases(draw, buffered_short: bool = True) -> "ValidCase":
    """A coupled program (:func:`coupled_programs`) with 1-3 plans (bT 1-3, 8-32 threads
    per in-plane dimension, nondiag or none, a stream-block length now and then, two or
    four cells a thread, one barrier per step and computing at idle warps now and then)
    and a data seed: what :func:`run_valid` verifies."""
    program = draw(coupled_programs(buffered_short=buffered_short))
    plans = tuple(draw(st.lists(coupled_plan_draws(program.ndim), min_size=1, max_size=3)))
    return ValidCase(program, plans, draw(st.integers(0, 2 ** 16)))


@st.composite
def coupled_plan_draws(draw, ndim: int) -> PlanDraw:
    bs = tuple(draw(st.integers(8, 32)) for _ in range(ndim - 1))
    sl = None if draw(st.integers(0, 2)) else draw(st.integers(1, 8))
    # legal modes of a coupled step: [nondiag, none] or [none]; None: --opt auto. One
    # barrier per step where drawn and the plan takes it (mode nondiag: resolve_plan)
    return PlanDraw(draw(st.integers(1, 3)), (0,) * (ndim - 1), sl,
                    draw(st.sampled_from((None, 0, 1))), bs,
                    coarsen=draw(st.sampled_from((1, 1, 2, 4))),
                    step=draw(st.integers(0, 2)) == 0,
                    compute_idle=draw(st.integers(0, 2)) == 0)


# ---------------------------------------------------------------- coupled: malformed
#
# Each kind draws a valid coupled program of the form it needs and adds to one statement a
# read the analysis must refuse, at that read (FILE:LINE:COL of the read), with a message
# holding the kind's phrase.


def _extent_values(p: CoupledProgram) -> tuple[tuple[int, ...], bool]:
    """Each dimension's extent, and whether they are constants (the analysis then
    proves for these values only)."""
    values = dict(p.size_values)
    return (tuple((values[d.extent_param] if d.extent_param else 0) + d.extent_const
                  for d in p.dims), all(d.extent_param is None for d in p.dims))


def _statement_nest(p: CoupledProgram, s: int) -> int:
    return p.assignments()[s][0]


def cm_gauss_seidel(p: CoupledProgram, draw):
    """A statement updating its field in place reads it at a neighbour (Gauss-Seidel)."""
    s = next(k for k, (_, a) in enumerate(p.assignments()) if not p.field(a.field).buffered)
    dims = p.nests[_statement_nest(p, s)].dims
    choices = [o for o in _box_offsets(dims, False) if any(o)]
    if not choices:
        return None
    return s, FieldRead(p.assignments()[s][1].field, draw(st.sampled_from(choices)), False,
                        None)


def cm_later_neighbour(p: CoupledProgram, draw):
    """The first statement of a nest reads, at a neighbour before the cell in loop order,
    the field (in place) the nest's second statement writes: cells written at an earlier
    iteration in this step."""
    dims = p.nests[0].dims
    extents, constant = _extent_values(p)
    choices = [o for o in _box_offsets(dims, False) if _lex_sign(o) < 0
               and (not constant or _meets(dims, dims, o, extents))]
    if not choices:
        return None
    return 0, FieldRead(p.assignments()[1][1].field, draw(st.sampled_from(choices)), True,
                        None)


def cm_two_steps_back(p: CoupledProgram, draw):
    """A double-buffered field's statement reads the buffer it writes, at the cell, before
    writing it: the value of two steps earlier (from the third step on)."""
    if p.steps_param is None and p.steps < 3:
        return None
    s = next(k for k, (_, a) in enumerate(p.assignments()) if p.field(a.field).buffered)
    return s, FieldRead(p.assignments()[s][1].field, (0,) * p.ndim, True, p.write_shift)


def cm_stale_level(p: CoupledProgram, draw):
    """The last statement (a later sub-step) reads the previous level of the first one's
    double-buffered field, which the first sub-step replaced."""
    s = len(p.assignments()) - 1
    dims = p.nests[_statement_nest(p, s)].dims
    o = draw(st.sampled_from(_box_offsets(dims, True)))
    return s, FieldRead(p.assignments()[0][1].field, o, False, p.write_shift - 1
                        if p.write_shift - 1 >= -p.time_start else p.write_shift + 1)


@dataclass(frozen=True)
class CoupledMutation:
    form: Callable  # draw -> the keyword arguments of coupled_programs
    mutate: Callable  # (program, draw) -> (statement index, added read) or None
    phrase: str  # what the refusal's message says


COUPLED_MUTATIONS: dict[str, CoupledMutation] = {
    "coupled_gauss_seidel": CoupledMutation(
        lambda draw: {"in_place": (draw(st.integers(0, 1)),)}, cm_gauss_seidel,
        "in-place update"),
    "coupled_later_neighbour": CoupledMutation(
        lambda draw: {"one_nest": True, "in_place": (1,)}, cm_later_neighbour,
        "earlier iteration"),
    "coupled_two_steps_back": CoupledMutation(
        lambda draw: {"buffered": (draw(st.integers(0, 1)),)}, cm_two_steps_back,
        "two or more time steps"),
    "coupled_stale_level": CoupledMutation(
        lambda draw: {"buffered": (0,), "substep": True}, cm_stale_level,
        "previous time level"),
}


def with_read(p: CoupledProgram, s: int, extra: FieldRead) -> CoupledProgram:
    """``p`` with ``+ 0.125 * extra`` at the end of statement ``s``'s update."""
    k, nests = 0, []
    for nest in p.nests:
        body = []
        for a in nest.body:
            if k == s:
                a = replace(a, update=Bin("+", a.update, Bin("*", Lit("0.125"), extra)))
            body.append(a)
            k += 1
        nests.append(replace(nest, body=tuple(body)))
    return replace(p, nests=tuple(nests))


@st.composite
def coupled_malformed_cases(draw, kinds: tuple[str, ...] | None = None) -> MalformedCase:
    kind = draw(st.sampled_from(kinds or tuple(COUPLED_MUTATIONS)))
    mutation = COUPLED_MUTATIONS[kind]
    program = draw(coupled_programs(**mutation.form(draw)))
    found = mutation.mutate(program, draw)
    assume(found is not None)  # the program lacks what the mutation needs: another one
    s, extra = found
    program = with_read(program, s, extra)
    rendered = render_coupled(program)
    first, last = rendered.lines[("statement", s)]
    text = field_access_text(program.spelling(_statement_nest(program, s)), extra.field,
                             extra.shift, extra.offset)
    lines = rendered.text.splitlines()
    line = next(k + 1 for k in range(last - 1, first - 2, -1) if text in lines[k])
    return MalformedCase(program, kind, rendered.text, line, command="analyze")


# =========================================================================== running cases

PASS, REFUSED = "PASS", "REFUSED"  # the good outcomes (valid / malformed)
FAIL, CRASH, TIMEOUT = "FAIL", "CRASH", "TIMEOUT"
REFUSED_VALID, ACCEPTED_MALFORMED = "REFUSED-VALID", "ACCEPTED-MALFORMED"
IMPRECISE = "IMPRECISE-REFUSAL"  # refused, but not FILE:LINE:COL: error: with exit 2
#: a wild program whose own run, compiled by gcc, traps (an integer division by zero): its
#: behaviour is undefined, an5dpy says so (errors.UndefinedBehaviour), and there is nothing
#: to compare; no finding
UNDEFINED = "UNDEFINED"
OUTCOMES = (PASS, REFUSED, FAIL, CRASH, REFUSED_VALID, ACCEPTED_MALFORMED, IMPRECISE, TIMEOUT,
            UNDEFINED)
FINDINGS = (FAIL, CRASH, REFUSED_VALID, ACCEPTED_MALFORMED, IMPRECISE, TIMEOUT)


@dataclass(frozen=True)
class Result:
    kind: str  # "valid" or "malformed" (with the mutation: "malformed:stride")
    outcome: str
    detail: str
    seconds: float
    source: str  # the C file
    commands: tuple[str, ...] = ()  # what reproduces it (the file is written as case.c)
    checks: int = 0  # plans verified (valid) / refusals (malformed)
    on_mutated_line: bool | None = None  # malformed: the error points at the changed line
    #: valid: the plan options of each plan verified (what a campaign covered)
    plans: tuple[str, ...] = ()

    @property
    def is_finding(self) -> bool:
        return self.outcome in FINDINGS


class CaseTimeout(BaseException):
    """A case over its time limit, raised from the alarm signal wherever the case is. A
    BaseException, like KeyboardInterrupt: the code under test catches Exception in places
    (pycparser's internal failures on malformed C become syntax errors), which must not
    turn a timeout into a verdict on the input."""


@contextlib.contextmanager
def time_limit(seconds: float):
    if not seconds or not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum, frame):
        raise CaseTimeout(f"over {seconds:g} s")
    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _short_traceback(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    where = "; ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in frames)
    return f"{type(exc).__name__}: {str(exc)[:300]} (at {where})"


def _flag_text(name: str, values) -> list[str]:
    return [x for k, v in values for x in (name, f"{k}={v}" if v is not None else k)]


def verify_command(p: Program, plan: PlanOptions, backend: str, exact: bool, seed: int) -> str:
    argv = ["an5d", "verify", "case.c", "--backend", backend,
            *_flag_text("-P", p.params().items()), *_flag_text("-D", p.defines),
            *plan.flags(), "--seed", str(seed)] + (["--exact"] if exact else [])
    return shlex.join(argv)


def translate_command(p: Program, plan: PlanOptions) -> str:
    return shlex.join(["an5d-translate", "case.c", *_flag_text("-D", p.defines),
                       *plan.flags(), "-o", "out"])


def past_the_simplest(body: Callable[[object], None]) -> Callable[[object], None]:
    """``body`` for a hypothesis test, left out of its first call: hypothesis draws the
    strategy's simplest value first, whatever the seed, so that chunks of one case
    (``--chunk 1``) would all run that one program and plan. A test so wrapped asks for
    one example more."""
    called = False

    def wrapped(value) -> None:
        nonlocal called
        if called:
            body(value)
        called = True
    return wrapped


def examples(strategy, count: int, seed: int) -> list:
    """Up to ``count`` values of ``strategy``, the same ones for the same ``seed``: for a
    caller outside hypothesis, such as a GPU test running a fixed list of programs
    (``for case in examples(coupled_cases(), 20, seed=1): run_valid(case, "cuda", True)``),
    past the simplest (:func:`past_the_simplest`)."""
    out: list = []

    @hypothesis_seed(seed)
    @settings(max_examples=count + 1, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    @past_the_simplest
    def collect(value) -> None:
        out.append(value)
    collect()
    return out[:count]


def run_valid(case: ValidCase, backend: str = "sim", exact: bool = False,
              timeout: float = 120.0, workdir: str | None = None) -> Result:
    """Verify every plan of the case against gcc and translate it to files."""
    text = render(case.program).text
    kind = "coupled" if isinstance(case.program, CoupledProgram) else "valid"
    start = time.perf_counter()
    commands: list[str] = []
    verified: list[str] = []
    with tempfile.TemporaryDirectory(prefix="an5d-fuzz-", dir=workdir) as tmp:
        path = os.path.join(tmp, "case.c")
        Path(path).write_text(text)

        def result(outcome: str, detail: str, checks: int) -> Result:
            return Result(kind, outcome, detail, time.perf_counter() - start, text,
                          tuple(commands), checks, plans=tuple(verified))
        try:
            with time_limit(timeout):
                outcome, detail, checks = _check_valid(case, path, backend, exact, tmp,
                                                       commands, verified)
        except CaseTimeout as e:
            return result(TIMEOUT, str(e), 0)
        except Exception as e:  # noqa: BLE001 - the fuzzer's own bug, recorded like any
            return result(CRASH, f"fuzzer: {_short_traceback(e)}", 0)  # other finding
        return result(outcome, detail, checks)


#: The backend that builds every plan's kernels with nvcc (no GPU needed) and takes the
#: values from the simulator: the generated CUDA must compile wherever a plan is legal.
BUILD = "build"
#: The architecture ``--backend build`` compiles for.
BUILD_ARCH = "sm_90"


def build_kernels_of(path: str, options, params: dict[str, str], exact: bool) -> None:
    """``--backend build``: the kernels ``an5d verify --backend cuda`` would run, with the
    plan and register budget it chooses for these sizes, built with nvcc for
    :data:`BUILD_ARCH` (raises CudaCompileError where nvcc fails)."""
    from an5dpy import driver
    from an5dpy.check.reference import resolve_params
    from an5dpy.cuda.runtime import BuildOptions, build_kernels
    program, info = driver.load(path, options.defines, options.include_dirs)
    choice = driver.choose_plan(info, options, resolve_params(program, params))
    with tempfile.TemporaryDirectory(prefix="an5d-build-") as tmp:
        build_kernels(info, choice.plan, Path(path).stem,
                      BuildOptions(arch=BUILD_ARCH, exact=exact), options.smem_wrap,
                      directory=tmp, regs=choice.regs)


def _check_valid(case: ValidCase, path: str, backend: str, exact: bool, tmp: str,
                 commands: list[str], verified: list[str]) -> tuple[str, str, int]:
    from an5dpy import driver
    from an5dpy.errors import An5dError, UndefinedBehaviour
    p = case.program
    try:
        _, info = driver.load(path, p.defines)
    except CaseTimeout:
        raise
    except An5dError as e:
        commands.append(shlex.join(["an5d", "analyze", "case.c", *_flag_text("-D", p.defines)]))
        return REFUSED_VALID, str(e), 0
    except Exception as e:  # noqa: BLE001 - anything else is a bug of the package
        commands.append(shlex.join(["an5d", "analyze", "case.c", *_flag_text("-D", p.defines)]))
        return CRASH, _short_traceback(e), 0
    simulates = backend in ("sim", BUILD)
    verify_backend = "sim" if simulates else backend
    for k, draw in enumerate(case.plans):
        plan = resolve_plan(draw, info)
        seed = case.data_seed + k
        commands[:] = [verify_command(p, plan, verify_backend, exact, seed),
                       translate_command(p, plan)]
        stage = "verify"
        try:
            from an5dpy.check.verify import verify_file
            if backend == BUILD:
                stage = "build"
                build_kernels_of(path, plan.options(p.defines), p.params(), exact)
                stage = "verify"
            report = verify_file(path, plan.options(p.defines), verify_backend, p.params(),
                                 exact=exact, seed=seed)
            if not report.comparison.passed:
                return FAIL, " | ".join(report.lines()), k
            if simulates and report.plan.mode.value != "assoc" \
                    and not report.comparison.bit_identical:
                return FAIL, ("within the tolerance, but the simulator must be bit-identical "
                              "in modes nondiag and none | " + " | ".join(report.lines())), k
            stage = "translate"
            translation = driver.translate(path, plan.options(p.defines))
            # verify simulated driver.emitted_schedule; translate must have emitted it
            if translation.schedule != driver.emitted_schedule(translation.info,
                                                               translation.plan):
                return FAIL, "translate emitted another schedule than verify simulated", k
            stage = "write"
            out = os.path.join(tmp, f"out{k}")
            written = driver.write_outputs(translation.outputs, out)
            if len(written) != 3 or not all(f.stat().st_size for f in written):
                return CRASH, f"write_outputs wrote {written}", k
            verified.append(shlex.join(plan.flags()))
        except UndefinedBehaviour as e:
            return UNDEFINED, f"{stage}: {e}", k
        except An5dError as e:
            if e.exit_status == 2:
                return REFUSED_VALID, f"{stage}: {e}", k
            return CRASH, f"{stage}: {type(e).__name__}: {e}", k
        except CaseTimeout:
            raise
        except Exception as e:  # noqa: BLE001
            return CRASH, f"{stage}: {_short_traceback(e)}", k
    return PASS, "", len(case.plans)


ERROR_LINE = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): error: ")


def run_malformed(case: MalformedCase, timeout: float = 60.0,
                  workdir: str | None = None) -> Result:
    """``an5d-translate`` (or ``case.command``) must refuse: exit 2,
    ``FILE:LINE:COL: error:``, nothing written."""
    from an5dpy.cli.main import main
    p = case.program
    kind = f"{'coupled-' if isinstance(p, CoupledProgram) else ''}malformed:{case.kind}"
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="an5d-fuzz-", dir=workdir) as tmp:
        path = os.path.join(tmp, "case.c")
        Path(path).write_text(case.text)
        out = os.path.join(tmp, "out")
        if case.command == "translate":
            argv = ["translate", path, *_flag_text("-D", p.defines), "-o", out, "-q"]
            command = shlex.join(["an5d-translate", "case.c", *_flag_text("-D", p.defines),
                                  "-o", "out"])
        else:
            argv = [case.command, path, *_flag_text("-D", p.defines)]
            command = shlex.join(["an5d", case.command, "case.c",
                                  *_flag_text("-D", p.defines)])
        stdout, stderr = io.StringIO(), io.StringIO()
        try:
            with time_limit(timeout), contextlib.redirect_stdout(stdout), \
                    contextlib.redirect_stderr(stderr):
                status = main(argv)
        except CaseTimeout as e:
            return Result(kind, TIMEOUT, str(e), time.perf_counter() - start, case.text,
                          (command,))
        seconds = time.perf_counter() - start
        message = stderr.getvalue().strip()
        wrote = os.path.exists(out) and bool(os.listdir(out))
    first = message.splitlines()[0] if message else ""
    match = ERROR_LINE.match(first)
    if status == 0:
        outcome, detail = ACCEPTED_MALFORMED, "translated without an error"
    elif status == 70:
        outcome, detail = CRASH, message[:500]
    elif status != 2 or not match or match.group("file") != path or wrote:
        outcome = IMPRECISE
        detail = f"exit {status}, wrote files: {wrote}, message: {first[:300]}"
    else:
        outcome, detail = REFUSED, first.replace(path, "case.c")
    on_line = None
    if match and case.mutated_line is not None:
        on_line = int(match.group("line")) == case.mutated_line
    return Result(kind, outcome, detail, seconds, case.text, (command,), 1, on_line)


# =========================================================================== streams
#
# A stream runs ``count`` cases of one kind from one seed inside a hypothesis test: every
# generated case is run once and recorded; the first finding stops generation and hypothesis
# shrinks it (each candidate run for real, within ``shrink_seconds``), then a new round
# with the next seed goes on with the remaining cases. Results are cached per case, so the
# replays hypothesis makes are deterministic.


class Finding(Exception):
    def __init__(self, result: Result):
        super().__init__(result.outcome)
        self.result = result


#: One exception type per outcome class: hypothesis shrinks a failure towards a smaller
#: case of the same class (its origin is the exception type), not towards any finding.
FINDING_TYPES = {o: type(f"Finding{o.title().replace('-', '')}", (Finding,), {})
                 for o in FINDINGS}


@dataclass
class StreamReport:
    results: list[Result] = field(default_factory=list)
    #: (the finding as generated, the same class after shrinking)
    findings: list[tuple[Result, Result]] = field(default_factory=list)


@dataclass(frozen=True)
class StreamConfig:
    kind: str  # one of STREAM_KINDS
    count: int
    seed: int
    backend: str = "sim"
    exact: bool = False
    wild: bool = False
    big: bool = False
    buffered_short: bool = True  # coupled: see coupled_programs
    deadline: float | None = None  # time.time() after which no case starts
    shrink_seconds: float = 60.0
    timeout: float = 120.0
    max_findings: int | None = None  # stop the stream after this many


#: What a stream generates: one-statement programs (valid, malformed) or time steps of
#: several statements (coupled, coupled-malformed).
STREAM_KINDS = ("valid", "malformed", "coupled", "coupled-malformed")


def stream_strategy(config: StreamConfig):
    if config.kind == "valid":
        return valid_cases(config.wild, config.big)
    if config.kind == "coupled":
        return coupled_cases(config.buffered_short)
    # Each stream lists the mutations from another one: hypothesis draws the first of a
    # list more often than the others.
    kinds = tuple(MUTATIONS if config.kind == "malformed" else COUPLED_MUTATIONS)
    turn = config.seed % len(kinds)
    rotated_kinds = kinds[turn:] + kinds[:turn]
    if config.kind == "malformed":
        return malformed_cases(rotated_kinds)
    return coupled_malformed_cases(rotated_kinds)


def run_stream(config: StreamConfig) -> StreamReport:
    from hypothesis import Verbosity
    report = StreamReport()
    strategy = stream_strategy(config)

    def run(case, timeout: float) -> Result:
        if config.kind in ("valid", "coupled"):
            return run_valid(case, config.backend, config.exact, timeout)
        return run_malformed(case, timeout)

    def over() -> bool:
        return len(report.results) >= config.count or (
            config.deadline is not None and time.time() > config.deadline) or (
            config.max_findings is not None and len(report.findings) >= config.max_findings)

    for round_ in range(config.count + 10):
        if over():
            break
        state: dict = {"shrinking": False, "since": 0.0, "first": None}
        cache: dict[str, Result] = {}
        cut: set[str] = set()  # candidates stopped by the end of the shrinking time

        def body(case) -> None:
            key = repr(case)
            res = cache.get(key)
            if res is None:
                timeout = config.timeout
                if state["shrinking"]:  # a candidate may not outlast the shrinking time
                    timeout = config.shrink_seconds - (time.perf_counter() - state["since"])
                    if timeout <= 0:
                        return  # out of shrinking time: no more candidates are run
                    if timeout < config.timeout:
                        cut.add(key)
                    timeout = min(timeout, config.timeout)
                elif over():
                    return
                res = cache[key] = run(case, timeout)
                if not state["shrinking"]:
                    report.results.append(res)
            if res.outcome == TIMEOUT and key in cut:
                return  # the shrinking time ran out, not the case's own: no finding
            if res.is_finding:
                if not state["shrinking"]:
                    state.update(shrinking=True, since=time.perf_counter(), first=res)
                raise FINDING_TYPES[res.outcome](res)

        test = settings(max_examples=max(1, config.count - len(report.results)) + 1,
                        database=None, deadline=None, derandomize=False,
                        suppress_health_check=list(HealthCheck),
                        phases=[Phase.generate, Phase.shrink], report_multiple_bugs=False,
                        verbosity=Verbosity.quiet, print_blob=False)(
            hypothesis_seed(config.seed * 1_000_003 + round_)(
                given(strategy)(past_the_simplest(body))))
        try:
            test()
        except Finding as f:
            report.findings.append((state["first"], f.result))
        except Exception as e:  # noqa: BLE001 - the fuzzer's own trouble (flaky, ...)
            res = Result(config.kind, CRASH, f"fuzzer: {_short_traceback(e)}", 0.0, "")
            report.findings.append((state["first"] or res, res))
    return report


# =========================================================================== campaigns


def stream_configs(valid: int, malformed: int, seed: int, chunk: int, coupled: int = 0,
                   coupled_malformed: int = 0, **common) -> list[StreamConfig]:
    """Chunks of at most ``chunk`` cases, each its own seed (so a chunk reruns alone)."""
    placed = []
    for order, (kind, total, base) in enumerate((
            ("valid", valid, 0), ("malformed", malformed, 500_000),
            ("coupled", coupled, 250_000), ("coupled-malformed", coupled_malformed, 750_000))):
        chunks = -(-total // chunk) if total else 0
        for k in range(chunks):
            n = min(chunk, total - k * chunk)
            config = StreamConfig(kind, n, seed * 1_000 + base + k, **common)
            placed.append(((k + 0.5) / chunks, order, config))
    # Interleave the kinds' chunks evenly so a time limit leaves a sample of each.
    return [config for _, _, config in sorted(placed, key=lambda x: x[:2])]


def _strip(report: StreamReport) -> StreamReport:
    """Drop the sources of unremarkable results (only the counts travel back)."""
    report.results = [r if r.is_finding else replace(r, source="", commands=())
                      for r in report.results]
    return report


def _run_config(config: StreamConfig) -> tuple[StreamConfig, StreamReport]:
    return config, _strip(run_stream(config))


#: Chunks a campaign's worker runs before its pool ends (and gives its memory back).
CHUNKS_PER_WORKER = 4


def died(config: StreamConfig) -> StreamReport:
    """The report of a chunk that a dead worker process took down (a signal no case's
    code could catch, under this chunk or another of its pool's): a CRASH finding that
    says how to run the chunk alone."""
    result = Result(config.kind, CRASH, f"a worker process died while the pool ran "
                    f"{config.kind} chunk seed {config.seed} ({config.count} cases): this "
                    f"chunk or another of its batch", 0.0, "",
                    (f"python scripts/fuzz.py: StreamConfig({config.kind!r}, {config.count}, "
                     f"{config.seed}, wild={config.wild}, big={config.big}) through "
                     f"run_campaign with one job",))
    return StreamReport(results=[result], findings=[(result, result)])


def chunk_key(config: StreamConfig) -> str:
    """What makes two chunks the same work (not their deadline)."""
    return json.dumps(asdict(replace(config, deadline=None)), sort_keys=True)


def _result_of(fields: dict) -> Result:
    return Result(**{**fields, "commands": tuple(fields["commands"]),
                     "plans": tuple(fields.get("plans", ()))})


def read_log(path: Path) -> dict[str, StreamReport]:
    """The finished chunks a ``--log`` file holds, by :func:`chunk_key`."""
    done: dict[str, StreamReport] = {}
    if not path.exists():
        return done
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        done[entry["chunk"]] = StreamReport(
            [_result_of(r) for r in entry["results"]],
            [(_result_of(a), _result_of(b)) for a, b in entry["findings"]])
    return done


def append_log(path: Path, config: StreamConfig, report: StreamReport) -> None:
    entry = {"chunk": chunk_key(config), "results": [asdict(r) for r in report.results],
             "findings": [[asdict(a), asdict(b)] for a, b in report.findings]}
    with path.open("a") as f:
        f.write(json.dumps(entry) + "\n")


def run_campaign(configs: list[StreamConfig], jobs: int,
                 progress: Callable[[StreamConfig, StreamReport], None] | None = None,
                 log: Path | None = None) -> StreamReport:
    """Run the chunks (those ``log`` already holds are taken from it, unrun) and merge
    their reports. A chunk the deadline cut short is not logged: a later run redoes it."""
    total = StreamReport()
    done = read_log(log) if log else {}
    to_run = []
    for config in configs:
        logged = done.get(chunk_key(config))
        if logged is None:
            to_run.append(config)
        else:
            total.results += logged.results
            total.findings += logged.findings
    configs = to_run

    def merge(config, report):
        total.results += report.results
        total.findings += report.findings
        if log and len(report.results) == config.count:
            append_log(log, config, report)
        if progress:
            progress(config, report)
    try:  # Ctrl-C ends the campaign early: the summary covers the chunks done
        if jobs <= 1:
            for config in configs:
                merge(*_run_config(config))
            return total
        ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
        # a pool per batch of chunks: its workers' memory goes back at its end; a worker
        # that dies (a signal) breaks the pool, which names the chunks it took down
        batch = jobs * CHUNKS_PER_WORKER
        for first in range(0, len(configs), batch):
            with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=ctx) as pool:
                running = {pool.submit(_run_config, c): c for c in configs[first:first + batch]}
                for future in concurrent.futures.as_completed(running):
                    try:
                        merge(*future.result())
                    except concurrent.futures.process.BrokenProcessPool:
                        merge(running[future], died(running[future]))
    except KeyboardInterrupt:
        print("interrupted: the summary covers the finished chunks", flush=True)
    return total


def write_findings(report: StreamReport, out: Path) -> list[tuple[Path, Result, Result]]:
    """Each finding (shrunk) as ``NN_OUTCOME.c`` and its commands in ``NN_OUTCOME.sh``."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for n, (first, shrunk) in enumerate(report.findings):
        stem = f"{n:02d}_{shrunk.outcome.lower()}"
        c_file = out / f"{stem}.c"
        c_file.write_text(shrunk.source)
        if first is not None and first.source and first.source != shrunk.source:
            (out / f"{stem}_unshrunk.c").write_text(first.source)
        commands = [c.replace("case.c", str(c_file)) for c in shrunk.commands]
        (out / f"{stem}.sh").write_text(
            f"# {shrunk.kind}: {shrunk.outcome}: {shrunk.detail}\n" + "\n".join(commands) + "\n")
        written.append((c_file, first, shrunk))
    return written


#: The plan options whose values :func:`plan_dimensions` counts (the plan dimensions
#: beyond bT, bS and sl that a campaign should reach).
COUNTED_OPTIONS = ("--opt", "--coarsen", "--barriers", "--idle", "--halo")


def plan_dimensions(results) -> list[tuple[str, int]]:
    """How many verified plans of ``results`` took each value of :data:`COUNTED_OPTIONS`
    (``coarsen=2 40``), in the options' order, then by value."""
    counts: dict[tuple[int, str], int] = {}
    for r in results:
        for plan in r.plans:
            words = shlex.split(plan)
            for name, value in zip(words, words[1:]):
                if name in COUNTED_OPTIONS:
                    key = (COUNTED_OPTIONS.index(name), f"{name[2:]}={value}")
                    counts[key] = counts.get(key, 0) + 1
    return [(label, counts[(i, label)]) for i, label in sorted(counts)]


def summary(report: StreamReport, seconds: float, written) -> str:
    lines = []
    header = ["kind", "cases", *OUTCOMES, "checks", "s/case"]
    rows = []
    for kind in STREAM_KINDS:
        rs = [r for r in report.results if r.kind.split(":")[0] == kind]
        if not rs:
            continue
        counts = [sum(r.outcome == o for r in rs) for o in OUTCOMES]
        rows.append([kind, len(rs), *counts, sum(r.checks for r in rs),
                     f"{sum(r.seconds for r in rs) / len(rs):.2f}"])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    lines.append("  ".join(str(h).rjust(w) for h, w in zip(header, widths)))
    lines += ["  ".join(str(x).rjust(w) for x, w in zip(row, widths)) for row in rows]
    kinds = sorted({r.kind.split(":", 1)[1] for r in report.results if ":" in r.kind})
    if kinds:
        parts = []
        for k in kinds:
            rs = [r for r in report.results if ":" in r.kind and r.kind.split(":", 1)[1] == k]
            ok = sum(r.outcome == REFUSED for r in rs)
            here = sum(bool(r.on_mutated_line) for r in rs)
            parts.append(f"{k} {ok}/{len(rs)} ({here} at the line)")
        lines.append("malformed kinds (refused/cases, refusals pointing at the mutated line): "
                     + ", ".join(parts))
    valid = [r for r in report.results if r.kind in ("valid", "coupled")]
    covered = plan_dimensions(valid)
    if covered:
        lines.append("plans verified with: " + ", ".join(f"{k} {n}" for k, n in covered))
    lines.append(f"{len(report.results)} cases in {seconds:.0f} s; "
                 f"{sum(r.checks for r in valid)} plans verified; "
                 f"{len(report.findings)} finding(s)")
    for c_file, first, shrunk in written:
        lines.append(f"FINDING {shrunk.outcome} ({shrunk.kind}): {shrunk.detail[:400]}")
        lines.append(f"  file: {c_file}")
        lines += [f"  $ {c.replace('case.c', str(c_file))}" for c in shrunk.commands]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--valid", type=int, default=100, help="valid programs (default 100)")
    ap.add_argument("--malformed", type=int, default=50, help="malformed programs (default 50)")
    ap.add_argument("--coupled", type=int, default=0,
                    help="valid time steps of several statements (default 0)")
    ap.add_argument("--coupled-malformed", type=int, default=0,
                    help="time steps of several statements with one read the analysis "
                         "must refuse (default 0)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--backend", choices=("sim", "cuda", BUILD), default="sim",
                    help="sim: the simulator; cuda: the GPU; build: every plan's kernels "
                         "built with nvcc (no GPU), the values from the simulator")
    ap.add_argument("--exact", action="store_true",
                    help="cuda: no fast math, -fmad=false (the default with --backend cuda "
                         "and build)")
    ap.add_argument("--fast-math", action="store_true", help="cuda: the fast-math build")
    ap.add_argument("--minutes", type=float, help="start no case after this many minutes")
    ap.add_argument("--out", help="directory for the findings (default: a new temporary one)")
    ap.add_argument("--wild", action="store_true",
                    help="unguarded updates (division by reads, pow, exp: inf and NaN)")
    ap.add_argument("--big", action="store_true", help="boxes up to 9x9x9 points")
    ap.add_argument("--no-short-buffered", action="store_true",
                    help="coupled: every double-buffered field's nest as wide as the box "
                         "around all nests")
    ap.add_argument("--chunk", type=int, default=20, help="cases per seeded stream")
    ap.add_argument("--shrink-seconds", type=float, default=120.0)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per case")
    ap.add_argument("--log", help="append finished chunks here; skip those it holds")
    args = ap.parse_args(argv)
    start = time.time()
    exact = args.backend in ("cuda", BUILD) and not args.fast_math
    deadline = start + 60 * args.minutes if args.minutes else None
    configs = stream_configs(args.valid, args.malformed, args.seed, args.chunk,
                             coupled=args.coupled, coupled_malformed=args.coupled_malformed,
                             backend=args.backend, exact=exact, wild=args.wild, big=args.big,
                             buffered_short=not args.no_short_buffered,
                             deadline=deadline, shrink_seconds=args.shrink_seconds,
                             timeout=args.timeout)

    def progress(config: StreamConfig, report: StreamReport) -> None:
        counts = {o: sum(r.outcome == o for r in report.results) for o in OUTCOMES}
        shown = ", ".join(f"{o} {n}" for o, n in counts.items() if n)
        print(f"[{time.time() - start:6.0f} s] {config.kind} seed {config.seed}: "
              f"{len(report.results)} cases: {shown}", flush=True)
        for _, shrunk in report.findings:
            print(f"  finding {shrunk.outcome}: {shrunk.detail[:200]}", flush=True)
    report = run_campaign(configs, args.jobs, progress, Path(args.log) if args.log else None)
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="an5d-fuzz-findings-"))
    written = write_findings(report, out) if report.findings else []
    print(summary(report, time.time() - start, written))
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
