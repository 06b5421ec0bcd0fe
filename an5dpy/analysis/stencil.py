"""Polyhedral analysis of a stencil program (an5dpy/ARCHITECTURE.md: the analysis stage).

:func:`analyze_statement` turns the frontend's :class:`~an5dpy.ir.StencilProgram` into a
:class:`~an5dpy.ir.StencilInfo`.  It proves, with isl (islpy), that the loop nest can be
blocked and derives what the later stages need:

1. The iteration domain ``[params] -> { S[t, v1, v2(, v3)] : bounds }`` and one access
   relation ``S[...] -> A[spatial subscripts]`` per access.  Integer parameters defined
   before the scop (``int dimsize = compsize + 2;``) or ``const`` with a value add their
   equalities to the parameter context.
2. Time levels: every access's time subscript is ``(t + c) % k`` with one ``k`` for the
   array; each read takes an earlier level (its *lag*), within the limits of this release
   (:func:`check_time_levels`, the one home of those rules).
3. The write is the identity on the spatial dimensions up to a permutation of the loop
   variables.  Array dimension order is *the* order from here on: dimension 0 is the
   streaming dimension, the last one the contiguous one.
4. Every read sits at a constant offset from the written cell: ``deltas`` of
   ``read o write^-1`` over the domain is one point that does not depend on the parameters.
5. Every access stays inside the array for every parameter value for which the domain is
   non-empty (time subscripts included: C's ``%`` keeps the sign of a negative operand).
6. Offsets, reach per dimension, shape (``star`` / ``box`` / ``general``), whether the
   stencil is diagonal-access free and associative (paper section 4.1), the FLOP count per
   cell (Table 3's rule) and the default optimisation mode.

Every isl object stays inside this module: the result holds plain values and IR nodes.
Errors the user causes raise :class:`~an5dpy.errors.UnsupportedInput` with the coordinate
of the offending access (or statement / loop).
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Iterable

import islpy as isl

from an5dpy.errors import InternalError, UnsupportedInput
from an5dpy.frontend.literals import int_range
from an5dpy.ir import (
    Access,
    Affine,
    Assign,
    AssocForm,
    Binary,
    Call,
    Cast,
    CoefArray,
    CoefIndex,
    CoefRead,
    Expr,
    LoopNest,
    Read,
    Scalar,
    SpaceDim,
    StencilInfo,
    StencilProgram,
    TimeInfo,
    Unary,
    is_floating,
    is_integer,
    sorted_coef_reads,
    transform,
    walk,
)

__all__ = [
    "analyze_statement",
    "op_mix",
    "count_flops",
    "classify_shape",
    "is_diagonal_free",
    "assoc_form",
    "format_access",
]

SUPPORTED_NDIMS = (2, 3)


# =========================================================================== entry point


def analyze_statement(program: StencilProgram) -> StencilInfo:
    """Analyse a program of one statement on a time-buffered array (the entry point for
    every program is :func:`an5dpy.analysis.analyze`)."""
    return _Analysis(program).run()


# =========================================================================== C spelling


def _affine_text(aff: Affine) -> str:
    """Compact C spelling of an affine form: ``i+1``, ``2*i``, ``n-2``, ``0`` (the spelling
    of :meth:`Affine.c_str`, without its spaces)."""
    return aff.c_str().replace(" ", "")


def _time_text(aff: Affine | None, modulus: int = 2) -> str:
    if aff is None:
        return ""
    text = _affine_text(aff)
    return f"[{text}%{modulus}]" if (aff.is_constant or len(aff.terms) == 1 and aff.const == 0
                                     and aff.terms[0][1] == 1) else f"[({text})%{modulus}]"


def format_access(acc: Access) -> str:
    """C-like spelling of an access, e.g. ``A[(t+1)%2][i-1][j]``."""
    return acc.array + _time_text(acc.time, acc.modulus) + "".join(
        f"[{_affine_text(i)}]" for i in acc.indices)


# =========================================================================== time levels
#
# The one home of the rules on which earlier time levels an update may read. The statement
# writes level t+1 of the array into buffer (t + c_w) % k. A read of buffer (t + c_r) % k
# holds level t+1-lag with lag = (c_w - c_r) mod k: lag 1 is level t, the newest earlier
# level (the double-buffered form's only one), lag 2 level t-1. A read of the written buffer
# itself holds, at the cell being written, the oldest level the buffers keep, t+1-k (C reads
# the right-hand side before it stores: lag k, a leapfrog update in two buffers), and at any
# other cell a value the loop may already have replaced by level t+1 (in place: refused).
#
# Every earlier level the buffers keep may be read at constant offsets: the blocked schedule
# keeps each level's recent planes in its register ring and stages the planes read at
# in-plane neighbours in shared memory (an5dpy/blocking/plan.TimeLevels). The one limit is
# MAX_TIME_BUFFERS, checked in check_time_levels.

#: The most time buffers an array may rotate through (``k`` of ``A[(t + c) % k]``): a launch
#: keeps k-1 older levels in registers and the run 2(k-1) work buffers on the device, so
#: more would leave no plan with useful degrees.
MAX_TIME_BUFFERS = 8


def level_name(time_var: str, lag: int) -> str:
    """The level a read of lag ``lag`` takes, as the step writing level ``t+1`` sees it:
    ``t``, ``t-1``, ..."""
    return time_var if lag == 1 else f"{time_var}-{lag - 1}"


def read_lag(write_shift: int, read_shift: int, buffers: int, at_cell: bool) -> int | None:
    """The lag of a read of buffer ``(t + read_shift) % buffers`` by the statement writing
    ``(t + write_shift) % buffers``: 1 to ``buffers`` (the written buffer read at the cell
    itself holds the oldest level), or None for the written buffer read at another cell."""
    lag = (write_shift - read_shift) % buffers
    if lag:
        return lag
    return buffers if at_cell else None


def check_time_levels(target: Access, reads: list[tuple[Access, tuple[int, ...]]],
                      write_shift: int, time_var: str) -> None:
    """Refuse, at the first read (source order) that breaks one, the reads the blocked
    schedule cannot respect: a read of the written buffer at a neighbour (in place); then
    an array rotating through more than :data:`MAX_TIME_BUFFERS` buffers. ``reads``: each
    read of the array with its offset from the written cell."""
    k = target.modulus
    written, array = format_access(target), target.array
    for acc, offset in reads:
        lag = read_lag(write_shift, acc.time.const, k, not any(offset))
        if lag is None:
            raise UnsupportedInput(
                f"in-place update: {format_access(acc)} reads the buffer it writes "
                f"({written}) at offset {list(offset)}, a neighbour that the loop may "
                f"already have given level {time_var}+1, so a cell's new value would depend "
                f"on the order cells are updated in; a read of the written buffer is allowed "
                f"only at the cell itself (it holds the oldest level there), every other read "
                f"must use an earlier level's buffer", acc.coord)
    if k > MAX_TIME_BUFFERS:
        raise UnsupportedInput(
            f"{written} rotates '{array}' through {k} time buffers: an5dpy supports at most "
            f"{MAX_TIME_BUFFERS} (each launch keeps every older level in registers)",
            target.coord)


# =========================================================================== isl helpers


class _IslNames:
    """Maps user names to isl-safe names (``t_``, ``s0``.., ``p0``..) and back.

    User identifiers could collide with isl keywords (``min``, ``div``, ``and``, ...), so
    isl never sees them.
    """

    def __init__(self, time_var: str, space_vars: Iterable[str], params: Iterable[str]):
        self.to_isl: dict[str, str] = {time_var: "t_"}
        for k, v in enumerate(space_vars):
            self.to_isl[v] = f"s{k}"
        self.params = list(params)
        for k, p in enumerate(self.params):
            self.to_isl[p] = f"p{k}"
        self.to_user = {v: k for k, v in self.to_isl.items()}
        self.param_header = "[" + ", ".join(self.to_isl[p] for p in self.params) + "] -> "

    def aff(self, aff: Affine) -> str:
        parts = [f"{c}*{self.to_isl[n]}" for n, c in aff.terms]
        if aff.const or not parts:
            parts.append(str(aff.const))
        return " + ".join(parts)


def _point_values(point: "isl.Point", dt: "isl.dim_type", n: int) -> list[int]:
    return [point.get_coordinate_val(dt, k).to_python() for k in range(n)]


# =========================================================================== the analysis


def coefficient_arrays(program: StencilProgram, coef_index: dict) -> tuple[CoefArray, ...]:
    """The read-only arrays of ``program`` (declaration order) with the distinct reads of
    each that ``coef_index`` (``(array, indices)`` -> index form) holds."""
    return tuple(
        CoefArray(name=a.name, elem_type=a.elem_type, extents=a.extents, form=a.form,
                  coord=a.coord,
                  reads=sorted_coef_reads(index for (name, _), index in coef_index.items()
                                          if name == a.name))
        for a in program.arrays if a.read_only)


class _Analysis:
    """The analysis of one statement: the program's only one (:meth:`run`), or one of
    several (``nest`` and ``stmt`` given; :mod:`an5dpy.analysis.fields` drives those)."""

    def __init__(self, program: StencilProgram, nest: LoopNest | None = None,
                 stmt: Assign | None = None):
        self.prog = program
        self.tloop = program.time_loop
        self.loops = (nest or program.nests[0]).loops
        self.ndim = len(self.loops)
        self.loop_vars = [lp.var for lp in self.loops]
        self.stmt = stmt
        #: the array the statement writes (the first field of a one-statement program)
        self.field = program.array if stmt is None else \
            self._declaration(stmt.target.array) or program.array

    # ------------------------------------------------------------------ driver

    def run(self) -> StencilInfo:
        prog = self.prog
        stmt = self._statement()
        self.stmt = stmt
        target = stmt.target
        perm, reads, coef_reads = self.check_statement()
        w_shift = self._time_shifts(target, reads)

        self._build_isl()
        if self.domain.is_empty():
            raise UnsupportedInput(
                "the loop nest never executes: its iteration domain is empty for every "
                "parameter value, so there is nothing to block", self.tloop.coord)
        self._check_start_conversions()
        self.write_map = self._access_map(target)
        offset_of: dict[tuple[Affine, ...], tuple[int, ...]] = {}
        for acc in reads:
            if acc.indices not in offset_of:
                offset_of[acc.indices] = self._offset(acc)
        check_time_levels(target, [(acc, offset_of[acc.indices]) for acc in reads], w_shift,
                          self.tloop.var)
        buffers = target.modulus

        def lag_of(acc: Access) -> int:
            return read_lag(w_shift, acc.time.const, buffers, not any(offset_of[acc.indices]))

        newest = [acc for acc in reads if lag_of(acc) == 1]
        # the buffer the newest earlier level is in (the raw shift, as written); without
        # such a read, the one it would be read from
        r_shift = newest[0].time.const if newest else w_shift - 1
        self._check_time_bounds(target, reads)
        self._check_bounds(target, "write")
        seen: set[tuple[str, tuple[Affine, ...]]] = set()
        for acc in reads + coef_reads:
            if (acc.array, acc.indices) not in seen:
                seen.add((acc.array, acc.indices))
                self._check_bounds(acc, "read")
        coef_index = {(acc.array, acc.indices): self._coef_index(acc, perm)
                      for acc in coef_reads}

        # the shape of the stencil is that of its reads of the newest level; its reach and
        # radius cover the older levels' reads too (the blocks' halos hold them)
        offsets = tuple(sorted({offset_of[acc.indices] for acc in newest}))
        every = offsets + tuple(offset_of[acc.indices] for acc in reads)
        reach_lo = [max([0] + [-o[d] for o in every]) for d in range(self.ndim)]
        reach_hi = [max([0] + [o[d] for o in every]) for d in range(self.ndim)]
        dims = tuple(
            SpaceDim(var=self.loops[perm[d]].var, lower=self.loops[perm[d]].lower,
                     upper=self.loops[perm[d]].upper, extent=prog.array.extents[d],
                     reach_lo=reach_lo[d], reach_hi=reach_hi[d])
            for d in range(self.ndim))
        time = TimeInfo(var=self.tloop.var, lower=self.tloop.lower, upper=self.tloop.upper,
                        read_shift=r_shift, write_shift=w_shift, buffers=buffers)

        def to_read(e: Expr) -> Expr | None:
            if isinstance(e, Access) and (e.array, e.indices) in coef_index:
                return CoefRead(e.ctype, e.coord, array=e.array,
                                index=coef_index[(e.array, e.indices)])
            if isinstance(e, Access):
                return Read(e.ctype, e.coord, array=e.array, offset=offset_of[e.indices],
                            lag=lag_of(e))
            return None

        update = transform(stmt.value, to_read)
        coefficients = coefficient_arrays(prog, coef_index)
        radius = tuple(max(lo, hi) for lo, hi in zip(reach_lo, reach_hi))
        shape = classify_shape(offsets, radius)
        diag_free = is_diagonal_free(offsets)
        # An update that reads a read-only array is not treated as associative for now:
        # the associative mode's partial sums would need the coefficient of each input
        # plane's output cell, which neither the schedule nor the simulator provides yet.
        # Nor is one whose array rotates (reads an older level than the newest, or more
        # than two time buffers): the partial sums run over the newest level's planes
        # only, and a rotating launch also stores its level d-1, which the finished sums
        # no longer hold (an5dpy/blocking/plan.TimeLevels).
        rotating = buffers != 2 or any(lag_of(acc) > 1 for acc in reads)
        assoc = None if coefficients or rotating else assoc_form(update, prog.array.elem_type)
        associative = assoc is not None
        opt = "nondiag" if diag_free else ("assoc" if associative else "none")
        return StencilInfo(
            program=prog, array=prog.array.name, dtype=prog.array.elem_type, dims=dims,
            time=time, offsets=offsets, shape=shape, diagonal_free=diag_free,
            associative=associative, assoc=assoc, opt=opt,
            flops_per_cell=count_flops(update), update=update, coefficients=coefficients)

    def check_statement(self) -> tuple[list[int], list[Access], list[Access]]:
        """The checks of the statement's form (structure, write at the loop point, scalars
        and read forms); returns the write's permutation (array dim d -> nest index), the
        reads of fields and the reads of read-only arrays, in source order."""
        stmt = self.stmt
        self._check_structure(stmt)
        perm = self._write_permutation(stmt.target)
        accesses = [e for e in walk(stmt.value) if isinstance(e, Access)]
        self._check_value_scalars(stmt.value)
        for acc in accesses:
            self._check_read_form(acc)
        read_only = {a.name for a in self.prog.arrays if a.read_only}
        return (perm, [acc for acc in accesses if acc.array not in read_only],
                [acc for acc in accesses if acc.array in read_only])

    # ------------------------------------------------------------------ structure

    def _statement(self):
        prog = self.prog
        if len(prog.statements) != 1:
            coord = prog.statements[1].coord if len(prog.statements) > 1 else prog.time_loop.coord
            raise UnsupportedInput(
                f"{len(prog.statements)} statements in the loop nest: an5dpy blocks exactly one "
                "assignment per time step", coord)
        return prog.statements[0]

    def _check_structure(self, stmt) -> None:
        arr = self.field
        if self.ndim not in SUPPORTED_NDIMS:
            raise UnsupportedInput(
                f"{self.ndim} spatial loops: an5dpy blocks 2D and 3D stencils "
                "(a time loop around 2 or 3 spatial loops)",
                self.loops[0].coord if self.loops else self.tloop.coord)
        if len(arr.extents) != self.ndim:
            raise UnsupportedInput(
                f"array {arr.name} has {len(arr.extents)} spatial dimensions but the loop nest "
                f"has {self.ndim} spatial loops: each spatial loop must index one dimension",
                arr.coord or stmt.coord)
        if not arr.in_place and arr.time_extent is not None and arr.time_extent < 2:
            raise UnsupportedInput(
                f"array {arr.name} has a time dimension of extent {arr.time_extent}: the update "
                "needs two time buffers ([2])", arr.coord or stmt.coord)
        if not is_floating(arr.elem_type):
            raise UnsupportedInput(
                f"array {arr.name} has element type {arr.elem_type}: an5dpy blocks float and "
                "double stencils", arr.coord or stmt.coord)
        names = [self.tloop.var] + [lp.var for lp in self.loops]
        dup = [n for n, k in Counter(names).items() if k > 1]
        if dup:
            raise UnsupportedInput(
                f"loop variable {dup[0]} is used by two loops of the nest", self.tloop.coord)
        for lp in (self.tloop,) + tuple(self.loops):
            for which, bound in (("lower", lp.lower), ("upper", lp.upper)):
                bad = [v for v in bound.variables if v in names]
                if bad:
                    raise UnsupportedInput(
                        f"{which} bound {_affine_text(bound)} of loop {lp.var} depends on loop "
                        f"variable {bad[0]} (non-rectangular iteration space): bounds may use "
                        "only parameters and constants", lp.coord)

    def _write_permutation(self, target: Access) -> list[int]:
        """Array dim d -> index into the nest of the loop variable written at dim d."""
        arr = self.field
        text = format_access(target)
        if target.array != arr.name:
            raise UnsupportedInput(
                f"the statement writes {target.array}, not the stencil array {arr.name}",
                target.coord)
        if len(target.indices) != self.ndim:
            raise UnsupportedInput(
                f"write not at the loop point: {text} has {len(target.indices)} spatial "
                f"subscripts, the loop nest {self.ndim} spatial loops", target.coord)
        perm: list[int] = []
        for d, idx in enumerate(target.indices):
            ok = (len(idx.terms) == 1 and idx.const == 0 and idx.terms[0][1] == 1
                  and idx.terms[0][0] in self.loop_vars)
            if not ok:
                raise UnsupportedInput(
                    f"write not at the loop point: {text} has subscript {_affine_text(idx)} in "
                    f"dimension {d}; each spatial subscript of the written cell must be one "
                    f"spatial loop variable ({', '.join(self.loop_vars)}) alone, so that every "
                    "loop point writes its own cell", target.coord)
            k = self.loop_vars.index(idx.terms[0][0])
            if k in perm:
                raise UnsupportedInput(
                    f"write not at the loop point: {text} uses loop variable "
                    f"{self.loop_vars[k]} in two subscripts, so different loop points write the "
                    "same cell; each spatial loop variable must index its own dimension",
                    target.coord)
            perm.append(k)
        return perm

    def _check_value_scalars(self, value: Expr) -> None:
        loop_names = [self.tloop.var] + self.loop_vars
        for e in walk(value):
            if isinstance(e, Scalar) and e.name in loop_names:
                raise UnsupportedInput(
                    f"the update uses the loop variable {e.name} as a value: a blocked stencil "
                    "applies the same update at every cell and time step", e.coord or self.stmt.coord)

    def _declaration(self, name: str):
        return next((a for a in self.prog.arrays if a.name == name), None)

    def _check_read_form(self, acc: Access) -> None:
        decl = self._declaration(acc.array)
        if acc.array != self.field.name and (decl is None or decl.read_only):
            self._check_read_only_form(acc)
            return
        if len(acc.indices) != self.ndim:
            raise UnsupportedInput(
                f"read {format_access(acc)} has {len(acc.indices)} spatial subscripts, the "
                f"array {acc.array} {self.ndim}", acc.coord)

    def _check_read_only_form(self, acc: Access) -> None:
        """A read-only array: no time subscript, each subscript a spatial loop variable
        plus a constant or a constant, each loop variable at most once (the frontend reads
        only such accesses; this keeps the analysis' own promise)."""
        decl = self._declaration(acc.array)
        if decl is None or not decl.read_only:
            raise UnsupportedInput(
                f"read of array {acc.array} in {format_access(acc)}: only the stencil array "
                f"{self.field.name} and read-only arrays may be read", acc.coord)
        if acc.time is not None or len(acc.indices) != len(decl.extents):
            raise UnsupportedInput(
                f"read-only array {acc.array} is read as {format_access(acc)}: it has "
                f"{len(decl.extents)} dimensions and no time buffer", acc.coord)
        used: list[str] = []
        for idx in acc.indices:
            if idx.is_constant:
                continue
            ok = (len(idx.terms) == 1 and idx.terms[0][1] == 1
                  and idx.terms[0][0] in self.loop_vars and idx.terms[0][0] not in used)
            if not ok:
                raise UnsupportedInput(
                    f"read-only access {format_access(acc)} has subscript "
                    f"{_affine_text(idx)}: each subscript of a read-only array must be a "
                    "spatial loop variable plus a constant, or a constant, and each loop "
                    "variable may appear once", acc.coord)
            used.append(idx.terms[0][0])

    def _coef_index(self, acc: Access, perm: list[int]) -> tuple[CoefIndex, ...]:
        """The subscripts of a read-only access as grid dimensions (array order, through
        the write's loop-variable permutation) plus offsets."""
        dim_of = {self.loop_vars[k]: d for d, k in enumerate(perm)}
        return tuple(CoefIndex(None, idx.const) if idx.is_constant
                     else CoefIndex(dim_of[idx.terms[0][0]], idx.const)
                     for idx in acc.indices)

    def _time_shift(self, acc: Access) -> int:
        t = self.tloop.var
        tm = acc.time
        if tm is None or tm.terms != ((t, 1),):
            what = ("no time subscript" if tm is None
                    else f"time subscript ({_affine_text(tm)})%{acc.modulus}")
            raise UnsupportedInput(
                f"{format_access(acc)} has {what}: every access of {acc.array} must select its "
                f"time buffer as ({t} + constant) % k so that the buffers rotate with the time "
                "loop", acc.coord)
        return tm.const

    def _time_shifts(self, target: Access, reads: list[Access]) -> int:
        """The written buffer's shift (as written); every access rotates through the same
        buffers, which the array's declaration holds."""
        w = self._time_shift(target)
        k = target.modulus
        for acc in reads:
            self._time_shift(acc)
            if acc.modulus != k:
                raise UnsupportedInput(
                    f"{format_access(acc)} selects its time buffer modulo {acc.modulus} but the "
                    f"statement writes {format_access(target)} modulo {k}: every access of "
                    f"{acc.array} must rotate through the same buffers "
                    f"(({self.tloop.var} + c) % {k})", acc.coord)
        arr = self._declaration(target.array) or self.field
        if arr.time_extent is not None and arr.time_extent < k:
            raise UnsupportedInput(
                f"array {arr.name} has a time dimension of extent {arr.time_extent} but its "
                f"accesses rotate through {k} buffers ({format_access(target)}): declare it "
                f"with {k} time buffers ([{k}])", arr.coord or target.coord)
        return w

    # ------------------------------------------------------------------ isl

    def _build_isl(self) -> None:
        prog = self.prog
        loop_names = {self.tloop.var, *self.loop_vars}
        affines: list[Affine] = [self.tloop.lower, self.tloop.upper]
        # every nest's and statement's names, so that each statement of a program sees
        # the same parameters in the same order (the dependence analysis joins them)
        for nest in prog.nests:
            for lp in nest.loops:
                affines += [lp.lower, lp.upper]
        for array in prog.arrays:
            affines += list(array.extents)
        accesses = [acc for st in prog.statements
                    for acc in (st.target, *(e for e in walk(st.value) if isinstance(e, Access)))]
        for acc in accesses:
            affines += list(acc.indices)
            if acc.time is not None:
                affines.append(acc.time)
        every_loop_var = {lp.var for nest in prog.nests for lp in nest.loops}
        names: list[str] = []
        for aff in affines:
            for n in aff.variables:
                if n not in loop_names and n not in every_loop_var and n not in names:
                    names.append(n)
        # Close over the definitions of derived integer parameters.
        defs: dict[str, Affine] = {}
        k = 0
        while k < len(names):
            try:
                p = prog.param(names[k])
            except KeyError:
                p = None
            if p is not None and is_integer(p.ctype):
                if p.definition is not None:
                    defs[p.name] = p.definition
                elif isinstance(p.value, int) and not isinstance(p.value, bool):
                    defs[p.name] = Affine.of(p.value)
                for n in defs.get(p.name, Affine()).variables:
                    if n in loop_names:
                        raise InternalError(f"parameter {p.name} defined from loop variable {n}")
                    if n not in names:
                        names.append(n)
            k += 1
        self.names = _IslNames(self.tloop.var, self.loop_vars, names)
        nm = self.names
        self.s_tuple = "S[" + ", ".join(["t_"] + [f"s{k}" for k in range(self.ndim)]) + "]"
        cons = []
        for var, lp in [(self.tloop.var, self.tloop)] + [(lp.var, lp) for lp in self.loops]:
            cons.append(f"{nm.aff(lp.lower)} <= {nm.to_isl[var]} <= {nm.aff(lp.upper)}")
        for name, aff in defs.items():
            cons.append(f"{nm.to_isl[name]} = {nm.aff(aff)}")
        cons += self._type_ranges(names)
        self.domain = self._set(f"{{ {self.s_tuple} : {' and '.join(cons)} }}")

    def _type_ranges(self, names: list[str]) -> list[str]:
        """Each integer parameter holds only values of its C type (an ``unsigned`` one is
        never negative), so no counterexample names a value the program cannot pass."""
        cons = []
        for name in names:
            try:
                param = self.prog.param(name)
            except KeyError:
                continue
            if is_integer(param.ctype):
                low, high = int_range(param.ctype)
                cons.append(f"{low} <= {self.names.to_isl[name]} <= {high}")
        return cons

    def _set(self, body: str) -> "isl.Set":
        return isl.Set(self.names.param_header + body)

    def _access_map(self, acc: Access) -> "isl.Map":
        nm = self.names
        out = ", ".join(nm.aff(i) for i in acc.indices)
        m = isl.Map(f"{nm.param_header}{{ {self.s_tuple} -> A[{out}] }}")
        return m.intersect_domain(self.domain)

    def _offset(self, acc: Access) -> tuple[int, ...]:
        rmap = self._access_map(acc)
        deltas = self.write_map.reverse().apply_range(rmap).deltas()
        point = deltas.sample_point()
        if point.is_void():  # pragma: no cover - the domain was checked non-empty
            raise InternalError(f"no offset sample for {format_access(acc)}")
        off = _point_values(point, isl.dim_type.set, self.ndim)
        a_tuple = ", ".join(f"a{d}" for d in range(self.ndim))
        const = self._set(f"{{ A[{a_tuple}] : " + " and ".join(
            f"a{d} = {o}" for d, o in enumerate(off)) + " }")
        if not deltas.is_subset(const):
            varying = [d for d in range(self.ndim)
                       if not deltas.intersect(self._set(
                           f"{{ A[{a_tuple}] : a{d} != {off[d]} }}")).is_empty()]
            dims = ", ".join(str(d) for d in varying)
            raise UnsupportedInput(
                f"non-constant offset: {format_access(acc)} is not at a constant distance from "
                f"the written cell {format_access(self.stmt.target)} (the distance in dimension"
                f"{'s' if len(varying) > 1 else ''} {dims} varies with the loop point or the "
                "parameters); blocking needs every read at a constant offset", acc.coord)
        return tuple(off)

    def _small_sample(self, bad: "isl.Set") -> "isl.Point":
        """A point of ``bad`` with parameters as small as possible in magnitude (isl's own
        sample sits at the types' limits, ``n = 2147483647``, which reads poorly)."""
        params = self.names.params
        for bound in (16, 256, 65536):
            box = " and ".join(f"-{bound} <= {self.names.to_isl[p]} <= {bound}" for p in params)
            small = bad.intersect(self._set(f"{{ {self.s_tuple} : {box or 'true'} }}"))
            if not small.is_empty():
                return small.sample_point()
        return bad.sample_point()

    def _describe_point(self, point: "isl.Point") -> tuple[str, dict[str, int]]:
        """``"n = 4, t = 0, i = 3"`` and the same as a dict, for a point of the domain."""
        nm = self.names
        pvals = _point_values(point, isl.dim_type.param, len(nm.params))
        svals = _point_values(point, isl.dim_type.set, self.ndim + 1)
        parts = [f"{p} = {v}" for p, v in zip(nm.params, pvals)]
        parts += [f"{v} = {x}" for v, x in zip([self.tloop.var] + self.loop_vars, svals)]
        return ", ".join(parts), dict(zip(nm.params, pvals)) | dict(
            zip([self.tloop.var] + self.loop_vars, svals))

    def _check_start_conversions(self) -> None:
        """``for (unsigned t = t0; ...)`` starts ``t`` at ``t0`` converted to ``unsigned``:
        an ``int`` ``t0 = -1`` becomes 4294967295. The domain (and every later stage) runs
        the loop from the bound's own value, so a start its variable's type cannot hold,
        for parameter values that run the loop, would be blocked as a loop C never runs;
        refuse it with such values. Where the type holds every start that runs the loop,
        the conversion changes nothing."""
        nm = self.names
        for lp in (self.tloop,) + tuple(self.loops):
            low, high = int_range(lp.var_type)
            start = nm.aff(lp.lower)
            bad = self._set(f"{{ {self.s_tuple} : {start} < {low} or {start} > {high} }}")
            bad = bad.intersect(self.domain)
            if bad.is_empty():
                continue
            point = self._small_sample(bad)
            pvals = dict(zip(nm.params, _point_values(point, isl.dim_type.param,
                                                      len(nm.params))))
            value = lp.lower.evaluate(pvals)
            converted = (value - low) % (high - low + 1) + low
            given = ", ".join(f"{p} = {pvals[p]}" for p in nm.params)
            raise UnsupportedInput(
                f"loop '{lp.var}' of type {lp.var_type} starts at {_affine_text(lp.lower)}, "
                f"a value its type cannot always hold: when {given}, the bounds say "
                f"'{lp.var}' runs from {value} to {lp.upper.evaluate(pvals)}, but C converts "
                f"the start to {converted}, so the loop does not run as its bounds say; "
                f"declare '{lp.var}' with a type that holds every start value",
                lp.coord)

    def _check_bounds(self, acc: Access, kind: str) -> None:
        nm = self.names
        arr = self._declaration(acc.array)
        conds = []
        for d, (idx, ext) in enumerate(zip(acc.indices, arr.extents)):
            conds.append((d, f"{nm.aff(idx)} < 0 or {nm.aff(idx)} > {nm.aff(ext)} - 1"))
        whole = self._set(f"{{ {self.s_tuple} : " + " or ".join(c for _, c in conds) + " }")
        if whole.intersect(self.domain).is_empty():
            return
        for d, cond in conds:
            bad = self._set(f"{{ {self.s_tuple} : {cond} }}").intersect(self.domain)
            if bad.is_empty():
                continue
            text, env = self._describe_point(self._small_sample(bad))
            idx, ext = acc.indices[d], arr.extents[d]
            ival, eval_ = idx.evaluate(env), ext.evaluate(env)
            ext_text = _affine_text(ext)
            ext_desc = ext_text if ext.is_constant else f"{ext_text} = {eval_}"
            if d == 0 and arr.outer_extent_inferred:
                ext_desc += ", inferred from the accesses"
            raise UnsupportedInput(
                f"{kind} may fall outside the array: {format_access(acc)} {kind}s index {ival} "
                f"of dimension {d} (extent {ext_desc}) when {text}; every access must stay "
                f"inside {arr.name} for all parameter values that run the loop", acc.coord)
        raise InternalError(f"bounds check of {format_access(acc)} found no dimension")

    def _check_time_bounds(self, target: Access, reads: list[Access]) -> None:
        done: set[int] = set()
        for acc in [target] + reads:
            c = acc.time.const
            if c in done:
                continue
            done.add(c)
            bad = self._set(f"{{ {self.s_tuple} : t_ + {c} < 0 }}").intersect(self.domain)
            if not bad.is_empty():
                text, _ = self._describe_point(self._small_sample(bad))
                raise UnsupportedInput(
                    f"time subscript of {format_access(acc)} may be negative (when {text}): "
                    "C's % keeps the sign, so the access falls outside the time buffers",
                    acc.coord)


# =========================================================================== classification


def classify_shape(offsets: Iterable[tuple[int, ...]], radius: tuple[int, ...]) -> str:
    """``star`` if every offset has at most one non-zero component; ``box`` if the offsets
    are exactly ``prod([-r_d, r_d])``; ``general`` otherwise.  Star is checked first (so a
    1-point stencil, or a line, is a star)."""
    offs = set(offsets)
    if all(sum(1 for c in o if c) <= 1 for o in offs):
        return "star"
    box = set(itertools.product(*(range(-r, r + 1) for r in radius)))
    return "box" if offs == box else "general"


def is_diagonal_free(offsets: Iterable[tuple[int, ...]]) -> bool:
    """Paper section 4.1: every offset off the streaming plane lies on the streaming axis."""
    return all(not any(o[1:]) for o in offsets if o[0] != 0)


def reads_an_array(e: Expr) -> bool:
    """Whether ``e`` reads an array (the grid or a read-only array), so that its value may
    change from cell to cell; one that reads none is fixed for the launch (the kernels
    divide by such a divisor through its reciprocal, computed once:
    :meth:`an5dpy.cuda.macros.ConstantTable.divide`)."""
    return any(isinstance(x, (Read, CoefRead, Access)) for x in walk(e))


def _planes(e: Expr) -> set[int]:
    return {x.offset[0] for x in walk(e) if isinstance(x, Read)}


def _flatten_sum(expr: Expr) -> list[Expr]:
    """Terms of a sum in source order (iterative: sums may be hundreds of terms deep)."""
    out: list[Expr] = []
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    while stack:
        e, negate = stack.pop()
        if isinstance(e, Binary) and e.op in ("+", "-"):
            stack.append((e.rhs, negate != (e.op == "-")))
            stack.append((e.lhs, negate))
        elif isinstance(e, Unary) and e.op in ("+", "-") and e.operand.ctype == e.ctype:
            stack.append((e.operand, negate != (e.op == "-")))
        else:
            out.append(Unary(e.ctype, e.coord, "-", e) if negate else e)
    return out


def assoc_form(update: Expr, dtype: str) -> AssocForm | None:
    """The associative form of an analysed update (Read nodes), or None.

    Rule: strip one top-level conversion to ``dtype`` (the assignment's implicit conversion,
    or an explicit cast to the same type, which means the same); if the top node is then
    ``x * c``, ``c * x`` or ``x / c`` with ``c`` free of reads, ``c`` is the post-scaling
    (``post = (op, c)``) and ``x`` the sum.  The sum is flattened over binary ``+``/``-`` and
    unary ``+``/``-`` (a subtracted or negated term becomes ``Unary('-', term)``; double
    negation cancels; both are exact in IEEE arithmetic); any other node (casts included) is
    a term.  The update is associative iff every term reads at most one streaming plane
    (``dz`` = that plane's offset; read-free terms join ``dz = 0``).  ``sum_type`` is the C
    type of the sum's top node.
    """
    e = update
    if isinstance(e, Cast) and e.ctype == dtype:
        e = e.operand
    post = None
    if isinstance(e, Binary) and e.op in ("*", "/"):
        if not reads_an_array(e.rhs):
            post, e = (e.op, e.rhs), e.lhs
        elif e.op == "*" and not reads_an_array(e.lhs):
            post, e = ("*", e.lhs), e.rhs
    terms = _flatten_sum(e)
    out = []
    for term in terms:
        planes = _planes(term)
        if len(planes) > 1:
            return None
        out.append((planes.pop() if planes else 0, term))
    return AssocForm(terms=tuple(out), post=post, sum_type=e.ctype)


# =========================================================================== operation counts


def count_flops(expr: Expr) -> int:
    """FLOPs per cell (the paper's Table 3 rule): each binary ``+ - * /`` of floating type
    and each math call counts 1; unary minus, casts and integer arithmetic count 0."""
    n = 0
    for e in walk(expr):
        if isinstance(e, Binary) and e.op in "+-*/" and is_floating(e.ctype):
            n += 1
        elif isinstance(e, Call):
            n += 1
    return n


def op_mix(info: StencilInfo | Expr) -> dict:
    """Operation mix of the update, for the performance model.

    Returns ``{"add", "mul", "div", "double_div", "fixed_double_div", "calls", "fma",
    "flops"}``:

    * ``add``: floating binary ``+`` and ``-`` nodes; ``mul``: floating ``*``; ``div``:
      floating ``/`` (``double_div`` of them in double: no fast-math reciprocal, a
      Newton-Raphson sequence on the GPU; ``fixed_double_div`` of those by a divisor that
      reads no array, whose reciprocal the kernels compute once: :func:`reads_an_array`);
      ``calls``: ``{function name: count}``;
      ``flops`` = add + mul + div + number of calls (equals
      :attr:`StencilInfo.flops_per_cell`).
    * ``fma``: an estimate of the multiply-adds nvcc contracts.  A floating ``+``/``-``
      node with at least one operand that is *directly* (no cast in between) a ``*`` node of
      the same type can be fused into one FMA.  Each add/sub absorbs at most one multiply
      (``a*b + c*d`` becomes ``fma(a, b, c*d)``: one FMA plus one multiply) and each multiply
      has one parent, so ``fma`` = number of such add/sub nodes.  The instruction count after
      contraction is then ``add + mul + div - fma`` (plus the calls).
    """
    expr = info.update if isinstance(info, StencilInfo) else info
    add = mul = div = double_div = fixed_double_div = fma = 0
    calls: Counter[str] = Counter()
    for e in walk(expr):
        if isinstance(e, Binary) and is_floating(e.ctype):
            if e.op in ("+", "-"):
                add += 1
                if any(isinstance(k, Binary) and k.op == "*" and k.ctype == e.ctype
                       for k in (e.lhs, e.rhs)):
                    fma += 1
            elif e.op == "*":
                mul += 1
            elif e.op == "/":
                div += 1
                double_div += e.ctype == "double"
                fixed_double_div += e.ctype == "double" and not reads_an_array(e.rhs)
        elif isinstance(e, Call):
            calls[e.func] += 1
    return {"add": add, "mul": mul, "div": div, "double_div": double_div,
            "fixed_double_div": fixed_double_div, "calls": dict(calls), "fma": fma,
            "flops": add + mul + div + sum(calls.values())}
