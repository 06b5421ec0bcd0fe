"""Test support: build :class:`~an5dpy.ir.StencilProgram` values directly, without C.

Two levels:

* :class:`StencilSpec` + :func:`build_program` -- a weighted-sum stencil
  ``A[(t+1)%2][i][j] = (c0*A[t%2][i+o0..] + c1*A[...] + ...) [/ divisor]`` over given
  offsets, with loop bounds that keep every read inside the array.  The same spec renders
  to C text with :func:`tests.stencil_render.render_c`, so a frontend can be checked
  against the hand-built IR.
* Small node constructors (:func:`access`, :func:`const`, :func:`binary`, :func:`loop`,
  :func:`make_program`) for programs that break a rule on purpose.

Each Access built here gets its own coordinate (line = 100 + its position in the
expression, column 1 for the target), so tests can check which access an error names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from an5dpy.ir import (
    Access,
    Affine,
    ArrayDecl,
    LoopNest,
    Assign,
    Binary,
    Cast,
    Const,
    Coord,
    Expr,
    Loop,
    Param,
    ScopRegion,
    StencilProgram,
    common_type,
)

FILE = "built.c"
#: Default loop variable names per dimensionality (nest order = array order).
LOOP_VARS = {1: ("i",), 2: ("i", "j"), 3: ("i", "j", "k")}


def coord(line: int, column: int = 1, file: str = FILE) -> Coord:
    return Coord(file, line, column)


# --------------------------------------------------------------------------- nodes


def access(array: str, time: Affine | None, indices: Sequence[Affine], ctype: str = "float",
           at: Coord | None = None) -> Access:
    return Access(ctype, at, array=array, time=time, indices=tuple(indices))


def read_at(offset: Sequence[int], ctype: str = "float", array: str = "A",
            loop_vars: Sequence[str] | None = None, time_var: str = "t", shift: int = 0,
            at: Coord | None = None) -> Access:
    """``A[(t+shift)%2][i+o0][j+o1]...`` (loop_vars in array order)."""
    vs = loop_vars or LOOP_VARS[len(offset)]
    return access(array, Affine.var(time_var) + shift,
                  [Affine.var(v) + o for v, o in zip(vs, offset)], ctype, at)


def const(value: float | int, ctype: str = "float") -> Const:
    if ctype == "float":
        text = f"{float(value)!r}f"
    elif ctype == "double":
        text = repr(float(value))
    else:
        text = str(int(value))
    return Const(ctype, None, value=value, text=text)


def convert(e: Expr, ctype: str) -> Expr:
    """Implicit conversion as C would insert it (no node when the type already matches)."""
    return e if e.ctype == ctype else Cast(ctype, e.coord, e, True)


def binary(op: str, lhs: Expr, rhs: Expr) -> Binary:
    """``lhs op rhs`` with C's usual arithmetic conversions made explicit."""
    t = common_type(lhs.ctype, rhs.ctype)
    return Binary(t, None, op, convert(lhs, t), convert(rhs, t))


def loop(var: str, lower: Affine | int, upper: Affine | int, line: int = 10) -> Loop:
    """``for (var = lower; var <= upper; var++)`` (inclusive upper bound)."""
    lo = lower if isinstance(lower, Affine) else Affine.of(lower)
    hi = upper if isinstance(upper, Affine) else Affine.of(upper)
    return Loop(var, lo, hi, coord(line), True)


def make_program(target: Access, value: Expr, space_loops: Sequence[Loop], *,
                 dtype: str = "float", array: str = "A",
                 extents: Sequence[Affine] | None = None, time_loop: Loop | None = None,
                 params: Sequence[Param] | None = None, form: str = "parameter",
                 time_extent: int | None = 2, extra_statements: Sequence[Assign] = ()
                 ) -> StencilProgram:
    """Assemble a program; the value gets C's implicit conversion to ``dtype``."""
    n = Affine.var("n")
    ext = tuple(extents) if extents is not None else (n,) * len(space_loops)
    tl = time_loop or loop("t", 0, Affine.var("T") - 1, line=9)
    if params is None:
        params = (Param("T", "int"), Param("n", "int"))
    decl = ArrayDecl(array, dtype, ext, time_extent if form != "vla_pointer" else None, form,
                     coord(3, 5))
    stmt = Assign(target, convert(value, dtype), coord(20, 3))
    scop = ScopRegion(coord(8), coord(30), (0, 0), "")
    nest = LoopNest(tuple(space_loops), (stmt,) + tuple(extra_statements))
    return StencilProgram(FILE, (decl,), tuple(params), tl, (nest,), scop)


# --------------------------------------------------------------------------- stencil specs


@dataclass(frozen=True)
class StencilSpec:
    """A weighted-sum stencil: ``sum(coeffs[k] * A[offsets[k]])``, optionally ``/ divisor``.

    ``offsets`` are in array order (streaming dimension first) and in source order.
    ``coeffs`` default to distinct values ``0.1, 0.2, ...``.  ``size`` is the name of the
    (square/cubic) extent parameter, or an int for constant sizes; ``steps`` the name of the
    step-count parameter.
    """

    offsets: tuple[tuple[int, ...], ...]
    coeffs: tuple[float, ...] | None = None
    dtype: str = "float"
    divisor: float | None = None
    array: str = "A"
    size: str | int = "n"
    steps: str = "T"
    form: str = "parameter"  # 'parameter' | 'vla_pointer' | 'global'
    loop_vars: tuple[str, ...] | None = None
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def ndim(self) -> int:
        return len(self.offsets[0])

    @property
    def vars(self) -> tuple[str, ...]:
        return self.loop_vars or LOOP_VARS[self.ndim]

    @property
    def weights(self) -> tuple[float, ...]:
        if self.coeffs is not None:
            return tuple(self.coeffs)
        return tuple(round(0.1 * (k + 1), 6) for k in range(len(self.offsets)))

    @property
    def reach(self) -> tuple[tuple[int, int], ...]:
        """(reach_lo, reach_hi) per dimension."""
        return tuple((max([0] + [-o[d] for o in self.offsets]),
                      max([0] + [o[d] for o in self.offsets])) for d in range(self.ndim))

    @property
    def radius(self) -> tuple[int, ...]:
        return tuple(max(lo, hi) for lo, hi in self.reach)

    @property
    def unique_offsets(self) -> tuple[tuple[int, ...], ...]:
        return tuple(sorted(set(self.offsets)))

    def extent(self) -> Affine:
        return Affine.of(self.size) if isinstance(self.size, int) else Affine.var(self.size)


def build_program(spec: StencilSpec) -> StencilProgram:
    """The IR the frontend should produce for ``render_c(spec)``."""
    dt = spec.dtype
    terms = []
    for k, (off, c) in enumerate(zip(spec.offsets, spec.weights)):
        rd = read_at(off, dt, spec.array, spec.vars, at=coord(100 + k))
        terms.append(binary("*", const(c, dt), rd))
    value: Expr = terms[0]
    for t in terms[1:]:
        value = binary("+", value, t)
    if spec.divisor is not None:
        value = binary("/", value, const(spec.divisor, dt))
    ext = spec.extent()
    loops = [loop(v, lo, ext - 1 - hi, line=11 + d)
             for d, (v, (lo, hi)) in enumerate(zip(spec.vars, spec.reach))]
    target = access(spec.array, Affine.var("t") + 1, [Affine.var(v) for v in spec.vars], dt,
                    coord(20, 3))
    params = [Param(spec.steps, "int")]  # in order of first use, as the frontend lists them
    if isinstance(spec.size, str):
        params.append(Param(spec.size, "int"))
    return make_program(target, value, loops, dtype=dt, array=spec.array,
                        extents=[ext] * spec.ndim,
                        time_loop=loop("t", 0, Affine.var(spec.steps) - 1, line=9),
                        params=params, form=spec.form)


def star_offsets(ndim: int, radius: int) -> tuple[tuple[int, ...], ...]:
    offs = {(0,) * ndim}
    for d in range(ndim):
        for r in range(1, radius + 1):
            for s in (-r, r):
                o = [0] * ndim
                o[d] = s
                offs.add(tuple(o))
    return tuple(sorted(offs))


def box_offsets(ndim: int, radius: int) -> tuple[tuple[int, ...], ...]:
    import itertools

    return tuple(itertools.product(range(-radius, radius + 1), repeat=ndim))
