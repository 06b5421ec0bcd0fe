"""Frozen intermediate representations shared by every stage.

Stage values (an5dpy/ARCHITECTURE.md describes the pipeline):

* :class:`StencilProgram` -- what the frontend read from the C file (syntax, with types
  and source coordinates, subscripts as affine expressions).
* :class:`StencilInfo` -- what the isl analysis proved about it (offsets, radius, shape,
  associativity, FLOP count) plus the update expression with every read resolved to an
  offset (:class:`Read`).

Expressions are typed trees that follow C's usual arithmetic conversions: every implicit
conversion the C compiler performs is an explicit :class:`Cast` node (``implicit=True``), so
every backend evaluates exactly the operations C evaluates, in C's order and C's types.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping

# --------------------------------------------------------------------------- coordinates


@dataclass(frozen=True)
class Coord:
    """A position in a user's source file (1-based line and column)."""

    file: str
    line: int
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


# --------------------------------------------------------------------------- C types

#: Floating types a stencil array or expression may have. ``long double`` is rejected
#: by the frontend: GPUs have no such type.
FLOAT_TYPES = ("float", "double")
#: Integer types after promotion, in conversion rank order (C11 6.3.1.1).
INT_TYPES = ("int", "unsigned int", "long", "unsigned long", "long long", "unsigned long long")
#: Small integer types that promote to ``int``.
PROMOTED_TO_INT = ("_Bool", "bool", "char", "signed char", "unsigned char", "short", "unsigned short")

#: Bytes per element of each floating type.
WORD_BYTES = {"float": 4, "double": 8}


def is_floating(ctype: str) -> bool:
    return ctype in FLOAT_TYPES


def is_integer(ctype: str) -> bool:
    return ctype in INT_TYPES or ctype in PROMOTED_TO_INT


def integer_promote(ctype: str) -> str:
    """C's integer promotion: small integer types become ``int``."""
    return "int" if ctype in PROMOTED_TO_INT else ctype


def common_type(a: str, b: str) -> str:
    """C's usual arithmetic conversions for a binary operator (LP64 data model)."""
    if a == "double" or b == "double":
        return "double"
    if a == "float" or b == "float":
        return "float"
    a, b = integer_promote(a), integer_promote(b)
    if a == b:
        return a
    wide, narrow = (a, b) if INT_TYPES.index(a) > INT_TYPES.index(b) else (b, a)
    # A signed type wins only if it can represent every value of the unsigned one;
    # under LP64, long and long long are both 64 bits wide.
    if not wide.startswith("unsigned") and narrow.startswith("unsigned") \
            and _INT_BITS[wide] == _INT_BITS[narrow]:
        return "unsigned " + wide
    return wide


_INT_BITS = {"int": 32, "unsigned int": 32, "long": 64, "unsigned long": 64,
             "long long": 64, "unsigned long long": 64}


@dataclass(frozen=True)
class MathFunction:
    """A <math.h> function a stencil update may call, with its C prototype.

    ``params`` are C types: the floating ones are the function's own type (``double`` for
    ``lgamma``, ``float`` for ``lgammaf``), integer ones stay integer (``ldexp``'s exponent,
    ``jn``'s order); a call converts each argument to its parameter type as C does.
    """

    name: str
    result: str
    params: tuple[str, ...]
    #: True when IEEE 754 requires a correctly rounded result (sqrt, fma, rint, fmod, ...)
    #: or the result is exact (fabs, fmin, logb, ...): CPU and GPU then agree bit for bit.
    exact: bool
    #: The double function's name (``lgamma`` for ``lgammaf``).
    base: str = ""


#: Parameter kinds of the accepted functions: ``F`` is the function's floating type.
_F = "F"
#: C99 7.12 functions of floating (and integer) arguments with a floating result, plus the
#: POSIX Bessel functions; each has a double and a float (``...f``) variant, in glibc and
#: in CUDA's device math library alike.
_MATH_SIGNATURES: Mapping[str, tuple[str, ...]] = {
    **{name: (_F,) for name in (
        # 7.12.4-7.12.9
        "acos", "asin", "atan", "cos", "sin", "tan", "acosh", "asinh", "atanh", "cosh",
        "sinh", "tanh", "exp", "exp2", "expm1", "log", "log10", "log1p", "log2", "logb",
        "cbrt", "fabs", "sqrt", "erf", "erfc", "lgamma", "tgamma", "ceil", "floor",
        "nearbyint", "rint", "round", "trunc",
        # POSIX (XSI) Bessel functions of the first and second kind, orders 0 and 1
        "j0", "j1", "y0", "y1")},
    **{name: (_F, _F) for name in (
        "atan2", "pow", "hypot", "fmod", "remainder", "copysign", "nextafter", "fdim",
        "fmax", "fmin")},
    "fma": (_F, _F, _F),
    "ldexp": (_F, "int"), "scalbn": (_F, "int"), "scalbln": (_F, "long"),
    "jn": ("int", _F), "yn": ("int", _F),  # POSIX Bessel functions of order n
}

#: Functions whose result IEEE 754 defines exactly: correctly rounded operations (sqrt, fma,
#: the roundings to integral values, fmod, remainder, the scalings) and exact ones.
_EXACT_MATH = frozenset({
    "sqrt", "fabs", "fmin", "fmax", "fdim", "floor", "ceil", "trunc", "round", "rint",
    "nearbyint", "fma", "copysign", "fmod", "remainder", "nextafter", "logb", "ldexp",
    "scalbn", "scalbln"})


def _math_table() -> dict[str, MathFunction]:
    table: dict[str, MathFunction] = {}
    for base, kinds in _MATH_SIGNATURES.items():
        for name, ftype in ((base, "double"), (base + "f", "float")):
            params = tuple(ftype if kind == _F else kind for kind in kinds)
            table[name] = MathFunction(name, ftype, params, base in _EXACT_MATH, base)
    return table


#: The <math.h> functions a stencil update may call, with their C prototypes.
MATH_FUNCTIONS: Mapping[str, MathFunction] = _math_table()

#: The accepted functions that <tgmath.h> makes type-generic (C99 7.22p4-p5: every <math.h>
#: function without suffix that has a double parameter, except modf; the POSIX Bessel
#: functions are not <math.h> functions of C and stay double-only).
TGMATH_GENERIC: frozenset[str] = frozenset(_MATH_SIGNATURES) - {"j0", "j1", "jn", "y0",
                                                                 "y1", "yn"}


def tgmath_variant(name: str, arg_types: tuple[str, ...]) -> MathFunction:
    """The function a <tgmath.h> call ``name(args)`` selects (C99 7.22p3): the float one when
    every argument of a generic (floating) parameter is float, else the double one (an
    integer argument counts as double). Arguments of integer parameters (``ldexp``'s
    exponent) take no part. ``arg_types`` are the arguments' C types, long double excluded
    (the frontend refuses it)."""
    float_variant = MATH_FUNCTIONS[name + "f"]
    generic = [ctype for ctype, kind in zip(arg_types, _MATH_SIGNATURES[name]) if kind == _F]
    return float_variant if all(ctype == "float" for ctype in generic) \
        else MATH_FUNCTIONS[name]


def _refused_math() -> dict[str, str]:
    """Every other C99 <math.h> function (and the long double variants of all of them),
    with the reason a stencil update cannot call it."""
    pointer = "takes a pointer argument"
    integer = ("returns an integer, whose value C leaves unspecified for NaN, infinite or "
               "out-of-range arguments (the CPU and the GPU differ there)")
    long_double = "takes a long double argument (GPUs have no long double)"
    classification = ("is a classification macro: its integer result is implementation-"
                      "defined (C promises only a nonzero value, or one of the FP_ constants)")
    comparison = "is a comparison macro (an update expression has no comparisons)"
    refused: dict[str, str] = {}
    for base, why in (("frexp", pointer), ("modf", pointer), ("remquo", pointer),
                      ("nan", "takes a pointer argument (a string)"),
                      ("ilogb", integer), ("lrint", integer), ("llrint", integer),
                      ("lround", integer), ("llround", integer),
                      ("nexttoward", long_double)):
        refused[base] = refused[base + "f"] = why
    for base in list(_MATH_SIGNATURES) + list(refused):
        if base.endswith("f") and base[:-1] in refused:
            continue
        refused.setdefault(base + "l", "is the long double variant (GPUs have no long double)")
    for name in ("lgamma_r", "lgammaf_r", "lgammal_r", "sincos", "sincosf", "sincosl"):
        refused[name] = pointer  # glibc extensions
    for name in ("fpclassify", "isfinite", "isinf", "isnan", "isnormal", "signbit"):
        refused[name] = classification
    for name in ("isgreater", "isgreaterequal", "isless", "islessequal", "islessgreater",
                 "isunordered"):
        refused[name] = comparison
    return refused


#: Why each <math.h> function outside :data:`MATH_FUNCTIONS` cannot be called (the message
#: reads "'NAME' REASON: ...").
REFUSED_MATH: Mapping[str, str] = _refused_math()

# --------------------------------------------------------------------------- affine forms


@dataclass(frozen=True)
class Affine:
    """An integer affine expression ``sum(coeff * name) + const``.

    Used for loop bounds, array extents (over size parameters) and subscripts (over loop
    variables and parameters). ``terms`` is sorted by name and holds no zero coefficient.
    """

    terms: tuple[tuple[str, int], ...] = ()
    const: int = 0

    @staticmethod
    def of(const: int = 0, **coeffs: int) -> "Affine":
        return Affine._make(dict(coeffs), const)

    @staticmethod
    def var(name: str) -> "Affine":
        return Affine(((name, 1),), 0)

    @staticmethod
    def _make(coeffs: Mapping[str, int], const: int) -> "Affine":
        return Affine(tuple(sorted((n, c) for n, c in coeffs.items() if c != 0)), const)

    @property
    def coeffs(self) -> dict[str, int]:
        return dict(self.terms)

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.terms)

    @property
    def is_constant(self) -> bool:
        return not self.terms

    def coeff(self, name: str) -> int:
        return self.coeffs.get(name, 0)

    def __add__(self, other: "Affine | int") -> "Affine":
        other = _as_affine(other)
        merged = self.coeffs
        for n, c in other.terms:
            merged[n] = merged.get(n, 0) + c
        return Affine._make(merged, self.const + other.const)

    def __radd__(self, other: int) -> "Affine":
        return self + other

    def __neg__(self) -> "Affine":
        return Affine(tuple((n, -c) for n, c in self.terms), -self.const)

    def __sub__(self, other: "Affine | int") -> "Affine":
        return self + (-_as_affine(other))

    def __rsub__(self, other: int) -> "Affine":
        return _as_affine(other) - self

    def scale(self, k: int) -> "Affine":
        return Affine._make({n: c * k for n, c in self.terms}, self.const * k)

    def evaluate(self, env: Mapping[str, int]) -> int:
        missing = [n for n in self.variables if n not in env]
        if missing:
            raise KeyError(missing[0])
        return self.const + sum(c * int(env[n]) for n, c in self.terms)

    def c_str(self) -> str:
        """C spelling, e.g. ``dimsize - 2`` or ``2 * n + 1``."""
        parts: list[str] = []
        for n, c in self.terms:
            mag = abs(c)
            text = n if mag == 1 else f"{mag} * {n}"
            if not parts:
                parts.append(text if c > 0 else f"-{text}")
            else:
                parts.append(("+ " if c > 0 else "- ") + text)
        if self.const or not parts:
            if not parts:
                parts.append(str(self.const))
            else:
                parts.append(("+ " if self.const > 0 else "- ") + str(abs(self.const)))
        return " ".join(parts)

    def __str__(self) -> str:
        return self.c_str()


def _as_affine(x: "Affine | int") -> Affine:
    return x if isinstance(x, Affine) else Affine((), int(x))


# --------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Expr:
    """Base of typed expression nodes. ``ctype`` is the C type of the node's value."""

    ctype: str
    coord: Coord | None = field(default=None, compare=False, repr=False)

    def children(self) -> tuple["Expr", ...]:
        return ()

    def with_children(self, kids: tuple["Expr", ...]) -> "Expr":
        return self


@dataclass(frozen=True)
class Const(Expr):
    """A literal. ``text`` is its C spelling (``0.1248f``, ``118``, ``1.0``)."""

    value: int | float = 0
    text: str = "0"


@dataclass(frozen=True)
class Scalar(Expr):
    """A read of a scalar variable that the scop does not assign (a free parameter)."""

    name: str = ""


@dataclass(frozen=True)
class Access(Expr):
    """``array[(time) % modulus][idx0][idx1]...`` as written (frontend form).

    ``time`` is the affine expression inside ``% modulus`` (e.g. ``t + 1``), ``modulus`` the
    number of time buffers the subscript rotates through (2 for ``A[(t+1)%2]``, 3 for
    ``p[(t+2)%3]``); ``indices`` are the spatial subscripts as affine forms over loop
    variables and parameters. For arrays without a time-buffer dimension (read-only
    arrays, and fields updated in place) ``time`` is None and ``modulus`` 1.
    """

    array: str = ""
    time: Affine | None = None
    indices: tuple[Affine, ...] = ()
    modulus: int = 2


@dataclass(frozen=True)
class Read(Expr):
    """A read of one of the stencil array's earlier time levels at a constant offset
    (analysed form).

    ``offset`` is in array dimension order: streaming dimension first, contiguous last.
    ``lag`` says which level: the step writing level ``t + 1`` reads level ``t + 1 - lag``,
    so 1 is the newest earlier level (the only one of a two-buffer program) and 2 the one
    before it (a three-level program's ``p[t % 3]``, or a leapfrog update reading the
    buffer it writes at its own cell).
    """

    array: str = ""
    offset: tuple[int, ...] = ()
    lag: int = 1


@dataclass(frozen=True)
class CoefIndex:
    """One subscript of a read-only array read (analysed form).

    ``dim`` is the grid dimension the subscript follows, in array order (0: the streaming
    dimension), and ``offset`` is added to the cell's coordinate there; for a constant
    subscript ``dim`` is None and ``offset`` is the index itself.
    """

    dim: int | None
    offset: int

    def index_of(self, cell: tuple[int, ...]) -> int:
        """The index this subscript reads for the grid cell ``cell`` (array order)."""
        return self.offset if self.dim is None else cell[self.dim] + self.offset


@dataclass(frozen=True)
class CoefRead(Expr):
    """A read of a read-only (coefficient) array at the cell's position plus constants
    (analysed form): one :class:`CoefIndex` per dimension of the array, outermost first."""

    array: str = ""
    index: tuple[CoefIndex, ...] = ()


@dataclass(frozen=True)
class Unary(Expr):
    op: str = "-"  # '-' or '+'
    operand: Expr | None = None

    def children(self) -> tuple[Expr, ...]:
        return (self.operand,)

    def with_children(self, kids):
        return Unary(self.ctype, self.coord, self.op, kids[0])


@dataclass(frozen=True)
class Binary(Expr):
    """``lhs op rhs``; both operands already have the node's ``ctype`` (via Cast nodes)."""

    op: str = "+"  # '+', '-', '*', '/', '%' (integers only)
    lhs: Expr | None = None
    rhs: Expr | None = None

    def children(self) -> tuple[Expr, ...]:
        return (self.lhs, self.rhs)

    def with_children(self, kids):
        return Binary(self.ctype, self.coord, self.op, kids[0], kids[1])


@dataclass(frozen=True)
class Cast(Expr):
    """Conversion of ``operand`` to ``ctype``; ``implicit`` marks C's automatic conversions."""

    operand: Expr | None = None
    implicit: bool = True

    def children(self) -> tuple[Expr, ...]:
        return (self.operand,)

    def with_children(self, kids):
        return Cast(self.ctype, self.coord, kids[0], self.implicit)


@dataclass(frozen=True)
class Call(Expr):
    """A call of a <math.h> function (see :data:`MATH_FUNCTIONS`); args already converted."""

    func: str = ""
    args: tuple[Expr, ...] = ()

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def with_children(self, kids):
        return Call(self.ctype, self.coord, self.func, tuple(kids))


def walk(expr: Expr) -> Iterator[Expr]:
    """Pre-order traversal of an expression tree.

    Iterative, so that very deep trees (a 729-term left-associated sum, box3d4r) do not
    hit Python's recursion limit.
    """
    stack = [expr]
    while stack:
        e = stack.pop()
        yield e
        stack.extend(reversed(e.children()))


def transform(expr: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
    """Bottom-up rewrite: ``fn`` returns a replacement or None to keep the (rebuilt) node.

    ``fn`` sees the nodes in post-order (children left to right, then the parent). Iterative,
    like :func:`walk`.
    """
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    done: list[Expr] = []
    while stack:
        node, expanded = stack.pop()
        kids = node.children()
        if kids and not expanded:
            stack.append((node, True))
            stack.extend((k, False) for k in reversed(kids))
            continue
        if kids:
            new_kids = tuple(done[len(done) - len(kids):])
            del done[len(done) - len(kids):]
            node = node.with_children(new_kids)
        replaced = fn(node)
        done.append(node if replaced is None else replaced)
    return done[0]


# --------------------------------------------------------------------------- programs


@dataclass(frozen=True)
class Loop:
    """``for (var = lower; var <= upper; var++)`` (``<`` bounds are normalised to ``<=``)."""

    var: str
    lower: Affine
    upper: Affine  # inclusive
    coord: Coord | None = field(default=None, compare=False)
    declared_in_init: bool = False  # ``for (int i = ...)``
    #: The loop variable's C type: ``var = lower`` converts the start to it.
    var_type: str = "int"


@dataclass(frozen=True)
class ArrayDecl:
    """The declaration that gives an array its element type and shape.

    ``extents`` are the spatial extents (array dimension order). ``time_extent`` is the size
    of the leading buffer dimension (2) or None when the declaration leaves it open (a
    pointer to arrays such as ``float (*A)[n][n]``). ``form`` is one of ``vla_pointer``,
    ``parameter``, ``global``, ``local``.

    ``read_only`` marks an array the scop only reads (a coefficient array): it has no time
    dimension, and where its declaration is a pointer its outermost extent is the extent
    of the grid dimension its first subscript follows.

    ``in_place`` marks a field (an array some statement writes) without a time-buffer
    dimension: the statement updates it in place (``ey[i][j] = ey[i][j] - ...``);
    ``time_extent`` is then None.

    ``outer_extent_inferred`` marks a field in place whose declaration leaves the outermost
    extent open (``float (*ey)[n]``) where no other field declares it either: ``extents[0]``
    is then the smallest extent that covers every cell the scop's accesses reach in
    dimension 0 (:mod:`an5dpy.frontend.extract` infers it).
    """

    name: str
    elem_type: str
    extents: tuple[Affine, ...]
    time_extent: int | None
    form: str
    coord: Coord | None = field(default=None, compare=False)
    read_only: bool = False
    in_place: bool = False
    outer_extent_inferred: bool = False


@dataclass(frozen=True)
class Param:
    """A scalar the scop reads but does not assign: sizes, step counts, coefficients.

    ``definition`` is set when the enclosing function defines an integer parameter from
    others before the scop and never reassigns it (``int dimsize = compsize + 2;``): the
    value can then be derived (``-P compsize=64`` gives dimsize). ``value`` is set when the
    declaration is ``const`` with a constant initialiser, so no ``-P`` is needed.
    """

    name: str
    ctype: str
    coord: Coord | None = field(default=None, compare=False)
    definition: Affine | None = None
    value: int | float | None = None


@dataclass(frozen=True)
class Assign:
    target: Access
    value: Expr
    coord: Coord | None = field(default=None, compare=False)


@dataclass(frozen=True)
class LoopNest:
    """One nest of spatial loops in the time loop's body and the assignments of its
    innermost body, in source order. Consecutive nests of a time step may have their own
    bounds (FDTD's nests differ by one at the edges) but have the same depth."""

    loops: tuple[Loop, ...]  # nest order, outermost first
    statements: tuple[Assign, ...]
    coord: Coord | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ScopRegion:
    """Where the scop sits.

    ``pragma_start``/``pragma_end`` are the coordinates of ``#pragma scop`` and
    ``#pragma endscop`` in the user's (unpreprocessed) file; ``original_span`` is the
    character range ``[start, end)`` in that file covering both pragma lines completely,
    which the host-code generator replaces. ``preprocessed_text`` is the loop nest after
    the C preprocessor (macros expanded), which the gcc oracle compiles; a <tgmath.h> call
    in it reads as glibc's header expands it for gcc (``__builtin_tgmath(...)``, see
    an5dpy/frontend/tgmath.py).
    """

    pragma_start: Coord
    pragma_end: Coord
    original_span: tuple[int, int]
    preprocessed_text: str


@dataclass(frozen=True)
class StencilProgram:
    """Everything the frontend read: a time loop around one or more spatial loop nests.

    ``arrays`` lists the *fields* first (the arrays some statement writes, in the order of
    their first write), then the read-only arrays in the order of their first read."""

    filename: str
    arrays: tuple[ArrayDecl, ...]
    params: tuple[Param, ...]  # in order of first use
    time_loop: Loop
    nests: tuple[LoopNest, ...]  # in source order
    scop: ScopRegion
    defines: tuple[tuple[str, str | None], ...] = ()  # the -D options it was read with

    @property
    def array(self) -> ArrayDecl:
        """The first field (the stencil array of a one-statement program)."""
        return self.arrays[0]

    @property
    def statements(self) -> tuple[Assign, ...]:
        """Every assignment of the time step, in execution order."""
        return tuple(st for nest in self.nests for st in nest.statements)

    @property
    def space_loops(self) -> tuple[Loop, ...]:
        """The loops of the first nest (the only one of a one-statement program)."""
        return self.nests[0].loops

    @property
    def fields(self) -> tuple[ArrayDecl, ...]:
        """The arrays the statements write, in the order of their first write."""
        return tuple(a for a in self.arrays if not a.read_only)

    @property
    def multi_statement(self) -> bool:
        """Several statements per time step (coupled fields, sub-steps)."""
        return len(self.statements) > 1

    def field_buffers(self, name: str) -> int:
        """How many time buffers field ``name`` rotates through: the ``k`` of its written
        access' ``(t + c) % k``, 1 for a field updated in place (the analysis checks that
        every access agrees)."""
        for st in self.statements:
            if st.target.array == name:
                return st.target.modulus
        raise KeyError(name)

    @property
    def time_buffers(self) -> int:
        """How many time buffers the first field rotates through (:meth:`field_buffers`)."""
        return self.statements[0].target.modulus

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)


# --------------------------------------------------------------------------- analysis


@dataclass(frozen=True)
class SpaceDim:
    """One spatial dimension of the stencil, in array order (streaming dimension first).

    The interior (cells the loop nest writes) is ``[lower, upper]``; ``extent`` is the array
    size in this dimension. ``reach_lo``/``reach_hi`` are the largest offsets read below and
    above a cell (>= 0); ``radius`` is their maximum.
    """

    var: str
    lower: Affine
    upper: Affine
    extent: Affine
    reach_lo: int
    reach_hi: int

    @property
    def radius(self) -> int:
        return max(self.reach_lo, self.reach_hi)


@dataclass(frozen=True)
class TimeInfo:
    """The time loop: ``for (var = lower; var <= upper; ...)`` writing buffer
    ``(var + write_shift) % buffers`` and reading the newest earlier level from
    ``(var + read_shift) % buffers``; ``buffers`` is the time extent k of the array
    (2 for the double-buffered form, k for a k-level rotation ``A[(t + c) % k]``)."""

    var: str
    lower: Affine
    upper: Affine  # inclusive
    read_shift: int
    write_shift: int
    buffers: int = 2

    def steps(self, env: Mapping[str, int]) -> int:
        return max(0, self.upper.evaluate(env) - self.lower.evaluate(env) + 1)

    def start_buffer(self, env: Mapping[str, int]) -> int:
        """Buffer (0 .. buffers-1) the first time step reads its newest level from."""
        return (self.lower.evaluate(env) + self.read_shift) % self.buffers


@dataclass(frozen=True)
class AssocForm:
    """An update ``post(sum of terms)`` in which every term reads one streaming plane.

    ``terms`` holds ``(dz, term)`` in source order; ``post`` is None or ``(op, constant)``
    with op ``'*'`` or ``'/'`` applied to the sum; ``sum_type`` is the C type of the sum.
    """

    terms: tuple[tuple[int, Expr], ...]
    post: tuple[str, Expr] | None
    sum_type: str

    def planes(self) -> tuple[int, ...]:
        return tuple(sorted({dz for dz, _ in self.terms}))


def array_shape(extents: tuple[Affine, ...], params: Mapping[str, int | float]
                ) -> tuple[int, ...]:
    """The values of an array's spatial ``extents`` for these parameter values (the
    integer ones; floating-point scalars never size an array)."""
    env = {k: int(v) for k, v in params.items() if isinstance(v, numbers.Integral)}
    return tuple(extent.evaluate(env) for extent in extents)


@dataclass(frozen=True)
class CoefArray:
    """A read-only array of the update, as the analysis resolved it: its declaration's
    type and extents (outermost first) and the distinct subscripts it is read at."""

    name: str
    elem_type: str
    extents: tuple[Affine, ...]
    form: str
    coord: Coord | None = field(default=None, compare=False)
    reads: tuple[tuple[CoefIndex, ...], ...] = ()  # sorted, unique

    @property
    def rank(self) -> int:
        return len(self.extents)


def _index_key(index: tuple[CoefIndex, ...]) -> tuple:
    return tuple((-1 if i.dim is None else i.dim, i.offset) for i in index)


def sorted_coef_reads(reads) -> tuple[tuple[CoefIndex, ...], ...]:
    """Distinct read subscripts in a stable order (constant subscripts sort first)."""
    return tuple(sorted(set(reads), key=_index_key))


@dataclass(frozen=True)
class FieldInfo:
    """One field of a program of several statements (:attr:`StencilInfo.fields`): an array
    one statement writes, once per time step.

    ``buffers`` is 1 for a field updated in place and 2 for a double-buffered one, which
    holds time level ``t`` in buffer ``(t + read_shift) % 2`` and writes level ``t + 1``
    into ``(t + write_shift) % 2``. The writing statement's loops cover the cells
    ``[lower, upper]`` per array dimension (inclusive); ``margin_lo`` / ``margin_hi`` are
    how far they stay inside the program's interior (:attr:`StencilInfo.dims`, the box
    around every statement's cells), constants. Cells of the interior outside them keep
    their value: the field's *boundary* cells there."""

    name: str
    statement: int  # index into StencilProgram.statements
    buffers: int
    read_shift: int
    write_shift: int
    lower: tuple[Affine, ...]
    upper: tuple[Affine, ...]
    margin_lo: tuple[int, ...]
    margin_hi: tuple[int, ...]
    coord: Coord | None = field(default=None, compare=False)

    @property
    def in_place(self) -> bool:
        return self.buffers == 1


@dataclass(frozen=True)
class SubStep:
    """Statements of a time step that run as one level of the blocked pipeline: none of
    them reads a value another of them writes in the same step. ``updates`` holds, per
    statement, the field it writes and its value with :class:`Read` nodes, each reading
    the newest value of a field before this sub-step (``lag`` 1): the value an earlier
    sub-step of the same time step wrote, or else the previous time step's."""

    statements: tuple[int, ...]
    updates: tuple[tuple[str, Expr], ...]
    flops: tuple[int, ...] = ()  # per statement, the FLOPs per cell (Table 3's rule)

    def reads(self) -> tuple[Read, ...]:
        return tuple(e for _, value in self.updates for e in walk(value) if isinstance(e, Read))


@dataclass(frozen=True)
class StencilInfo:
    """What the analysis established about a :class:`StencilProgram`."""

    program: StencilProgram
    array: str
    dtype: str
    dims: tuple[SpaceDim, ...]
    time: TimeInfo
    offsets: tuple[tuple[int, ...], ...]  # sorted, unique
    shape: str  # 'star' | 'box' | 'general'
    diagonal_free: bool
    associative: bool
    assoc: AssocForm | None
    opt: str  # default mode: 'nondiag' | 'assoc' | 'none'
    flops_per_cell: int
    update: Expr  # the assigned value with Read nodes, converted to dtype
    #: The read-only arrays, in the order of StencilProgram.arrays (CoefRead nodes).
    coefficients: tuple[CoefArray, ...] = ()
    #: A program of several statements (or one updating its field in place): its fields
    #: in StencilProgram.arrays order and its sub-steps in execution order. Empty for the
    #: one-statement form, whose field is :attr:`array` and whose update :attr:`update`.
    #: Then ``array`` is the first field, ``update`` the first statement's value, and
    #: ``dims`` / ``offsets`` / ``flops_per_cell`` cover every statement.
    fields: tuple[FieldInfo, ...] = ()
    substeps: tuple[SubStep, ...] = ()

    @property
    def coupled(self) -> bool:
        """Whether the program has several statements or fields in place
        (:attr:`fields`, :attr:`substeps`)."""
        return bool(self.fields)

    @property
    def updates(self) -> tuple[Expr, ...]:
        """Every update the time step evaluates: the one statement's, or each of a time
        step of several statements (sub-step order)."""
        if self.coupled:
            return tuple(value for sub in self.substeps for _, value in sub.updates)
        return (self.update,)

    @property
    def written_at(self) -> tuple[int, ...]:
        """Per field (:attr:`fields` order), the sub-step (0-based) whose statement writes
        it."""
        return tuple(next(k for k, sub in enumerate(self.substeps)
                          if any(name == f.name for name, _ in sub.updates))
                     for f in self.fields)

    def field_index(self, name: str) -> int:
        """The place of field ``name`` in :attr:`fields` (field ``k`` of the generated code
        and of the device pool)."""
        for k, f in enumerate(self.fields):
            if f.name == name:
                return k
        raise KeyError(name)

    def field_info(self, name: str) -> FieldInfo:
        return self.fields[self.field_index(name)]

    def shared_reads(self, substep: int) -> tuple[tuple[int, int], ...]:
        """(field, dz), sorted, of every plane sub-step ``substep`` reads at in-plane
        neighbours: what its level stages in shared memory (the generated code's and the
        simulator's one rule)."""
        return tuple(sorted({(self.field_index(e.array), e.offset[0])
                             for e in self.substeps[substep].reads() if any(e.offset[1:])}))

    @property
    def step_shared_fields(self) -> tuple[int, ...]:
        """The fields, sorted, that any sub-step reads at in-plane neighbours: what one
        barrier per step shares for every level (its ``SHARE`` macro is one for all
        levels, as the one-statement form's is, so it writes what any level reads)."""
        return tuple(sorted({f for k in range(len(self.substeps))
                             for f, _ in self.shared_reads(k)}))

    def coefficient(self, name: str) -> CoefArray:
        for c in self.coefficients:
            if c.name == name:
                return c
        raise KeyError(name)

    @property
    def ndim(self) -> int:
        return len(self.dims)

    @property
    def history(self) -> int:
        """How many earlier time levels the update reads back (the largest ``Read.lag``):
        1 for the double-buffered form, 2 where it also reads the level before the newest,
        and so on."""
        return max((e.lag for e in walk(self.update) if isinstance(e, Read)), default=1)

    @property
    def row_offsets(self) -> tuple[int, ...]:
        """The offsets ``dy`` (sorted) at which the update reads the newest level in the
        cell's own plane and row: ``(0, dy, 0..)``, ``dy`` != 0, along dimension 1 (the
        reads a thread holding consecutive cells of dimension 1 may find in its own
        registers)."""
        return tuple(sorted({o[1] for o in self.offsets
                             if o[0] == 0 and o[1] != 0 and not any(o[2:])}))

    def offsets_of_level(self, lag: int) -> tuple[tuple[int, ...], ...]:
        """The offsets (sorted, unique) at which the update reads the level of lag ``lag``:
        :attr:`offsets` for the newest earlier level (lag 1)."""
        if lag == 1:
            return self.offsets
        return tuple(sorted({e.offset for e in walk(self.update)
                             if isinstance(e, Read) and e.lag == lag}))

    @property
    def radius(self) -> tuple[int, ...]:
        return tuple(d.radius for d in self.dims)

    @property
    def params(self) -> tuple[Param, ...]:
        return self.program.params

    def to_json(self) -> dict:
        return {
            "file": self.program.filename,
            "array": self.array,
            "dtype": self.dtype,
            "ndim": self.ndim,
            "radius": list(self.radius),
            "reach": [[d.reach_lo, d.reach_hi] for d in self.dims],
            "offsets": [list(o) for o in self.offsets],
            "shape": self.shape,
            "diagonal_free": self.diagonal_free,
            "associative": self.associative,
            "opt": self.opt,
            "flops_per_cell": self.flops_per_cell,
            "params": [{"name": p.name, "ctype": p.ctype} for p in self.params],
            "loops": {
                "time": {"var": self.time.var, "lower": str(self.time.lower),
                         "upper": str(self.time.upper), "buffers": self.time.buffers},
                "space": [{"var": d.var, "lower": str(d.lower), "upper": str(d.upper),
                           "extent": str(d.extent)} for d in self.dims],
            },
            "arrays": self.arrays_json(),
            **(self.fields_json() if self.coupled else {}),
        }

    def fields_json(self) -> dict:
        """A time step of several statements: each statement (the field it writes, its
        sub-step, its reads per field as offsets, its reach per dimension and FLOPs per
        cell), each field (its buffers and cells) and each sub-step (its statements)."""
        substep_of = {i: k for k, sub in enumerate(self.substeps) for i in sub.statements}
        statements = []
        for sub in self.substeps:
            for index, (name, value) in zip(sub.statements, sub.updates):
                reads = [e for e in walk(value) if isinstance(e, Read)]
                by_field: dict[str, set] = {}
                for e in reads:
                    by_field.setdefault(e.array, set()).add(e.offset)
                stmt = self.program.statements[index]
                offsets = [e.offset for e in reads] or [(0,) * self.ndim]
                statements.append({
                    "index": index, "line": stmt.coord.line if stmt.coord else None,
                    "writes": name, "substep": substep_of[index],
                    "reads": {f: [list(o) for o in sorted(offs)] for f, offs in by_field.items()},
                    "reach": [[max(0, -min(o[d] for o in offsets)),
                               max(0, max(o[d] for o in offsets))] for d in range(self.ndim)],
                    "radius": [max(abs(o[d]) for o in offsets) for d in range(self.ndim)],
                    "flops_per_cell": sub.flops[sub.statements.index(index)],
                })
        fields = [{"name": f.name, "buffers": f.buffers, "in_place": f.in_place,
                   "statement": f.statement,
                   "lower": [str(a) for a in f.lower], "upper": [str(a) for a in f.upper]}
                  for f in self.fields]
        substeps = [{"statements": list(sub.statements),
                     "writes": [name for name, _ in sub.updates]} for sub in self.substeps]
        return {"statements": statements, "fields": fields, "substeps": substeps}

    def arrays_json(self) -> list[dict]:
        """Every array the scop touches: the updated grid (its time buffers, how many earlier
        levels the update reads, and its reads as offsets per level: ``offsets`` those of
        the newest earlier level, ``reads`` one entry per lag) and each read-only array (no
        time level; each read as, per subscript, the grid dimension it follows, or null for
        a constant, and the offset or constant)."""
        if self.coupled:
            grids = [{"name": f.name, "role": "updated", "elem_type": self.dtype,
                      "rank": self.ndim, "time_levels": f.buffers, "in_place": f.in_place,
                      "extents": [str(d.extent) for d in self.dims]} for f in self.fields]
        grid = {"name": self.array, "role": "updated", "elem_type": self.dtype,
                "rank": self.ndim, "time_levels": self.time.buffers,
                "history": self.history,
                "extents": [str(d.extent) for d in self.dims],
                "offsets": [list(o) for o in self.offsets],
                "reads": [{"lag": lag, "offsets": [list(o) for o in self.offsets_of_level(lag)]}
                          for lag in range(1, self.history + 1)]}
        coefs = [{"name": c.name, "role": "read_only", "elem_type": c.elem_type,
                  "rank": c.rank, "time_levels": 0,
                  "extents": [str(e) for e in c.extents],
                  "offsets": [[{"dim": i.dim, "offset": i.offset} for i in read]
                              for read in c.reads]}
                 for c in self.coefficients]
        return [*(grids if self.coupled else [grid]), *coefs]
