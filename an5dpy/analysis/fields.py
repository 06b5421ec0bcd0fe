"""The analysis of a time step of several statements: coupled fields and sub-steps.

A program whose time loop holds several assignments (in one loop nest or in consecutive
nests, each with its own bounds), or one that updates its field in place, is analysed
here; :func:`an5dpy.analysis.analyze` sends it. Each statement first passes the
one-statement checks of :class:`~an5dpy.analysis.stencil._Analysis` (write at the loop
point, reads at constant offsets, accesses inside the arrays). Then isl computes the exact
flow dependences of the whole scop: for every read, which statement instance last wrote
the value it reads. A read takes either the value a statement wrote earlier in the same
time step (*new*) or the one of the previous step (*old*), the same for every instance;
statements are grouped into *sub-steps*, consecutive statements none of which reads a new
value another of them writes. The blocked schedule runs one sub-step per level, every
level holding the newest value of every field, so a read must take the newest value
before its sub-step. Everything else is refused, naming the dependence
(:func:`_classify_read`): Gauss-Seidel in place, a read of a neighbour that the same nest
writes later in the step, a read of a field's previous level after a sub-step replaced
it.

The result is an :class:`~an5dpy.ir.StencilInfo` with :attr:`~an5dpy.ir.StencilInfo.fields`
and :attr:`~an5dpy.ir.StencilInfo.substeps`; its ``dims`` are the box around every
statement's cells, with reach over every read.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from an5dpy.analysis import stencil
from an5dpy.analysis.stencil import (classify_shape, coefficient_arrays, count_flops,
                                     format_access, is_diagonal_free)
from an5dpy.errors import UnsupportedInput
from an5dpy.ir import (Access, Affine, CoefRead, Expr, FieldInfo, Read, SpaceDim,
                       StencilInfo, StencilProgram, SubStep, TimeInfo, transform)

#: Time buffers a field of a program of several statements may have: 1 (in place) or 2.
COUPLED_BUFFERS = (1, 2)


@dataclass(frozen=True)
class _Statement:
    """One statement after the one-statement checks: its analysis (isl names and maps),
    where it sits, the array dimension each loop writes, and its reads."""

    index: int
    nest: int
    position: int  # in its nest's body
    analysis: object  # stencil._Analysis
    perm: tuple[int, ...]  # array dim d -> nest loop index
    field_reads: tuple[tuple[Access, tuple[int, ...]], ...]  # with offsets
    coef_index: dict

    @property
    def stmt(self):
        return self.analysis.stmt

    @property
    def field(self) -> str:
        return self.stmt.target.array


def analyze_fields(program: StencilProgram) -> StencilInfo:
    fields = {a.name: a for a in program.fields}
    statements: list[_Statement] = []
    index = 0
    writer: dict[str, int] = {}
    for n, nest in enumerate(program.nests):
        for pos, stmt in enumerate(nest.statements):
            if stmt.target.array in writer:
                raise UnsupportedInput(
                    f"'{stmt.target.array}' is written by two statements (the first at line "
                    f"{program.statements[writer[stmt.target.array]].coord.line}); each field "
                    f"must be written by exactly one statement per time step", stmt.coord)
            writer[stmt.target.array] = index
            statements.append(_check_statement(stencil, program, index, n, pos, nest, stmt))
            index += 1
    dtype = program.array.elem_type
    for name, decl in fields.items():
        if decl.elem_type != dtype:
            raise UnsupportedInput(
                f"field '{name}' has element type {decl.elem_type} but '{program.array.name}' "
                f"{dtype}: the fields of a time step must share one element type",
                decl.coord or program.statements[writer[name]].coord)
        if decl.extents != program.array.extents:
            raise UnsupportedInput(
                f"field '{name}' has other extents than '{program.array.name}': the fields of "
                f"a time step must have the same shape", decl.coord)
    buffers = {name: program.field_buffers(name) for name in fields}
    for name, k in buffers.items():
        if k not in COUPLED_BUFFERS:
            raise UnsupportedInput(
                f"field '{name}' rotates through {k} time buffers: in a time step of several "
                f"statements a field is updated in place or double-buffered ([2], "
                f"'{name}[(t+1)%2]' from '{name}[t%2]'); more levels are supported for a "
                f"single statement only", program.statements[writer[name]].target.coord)
    for st in statements:
        for acc, _ in st.field_reads:
            if acc.modulus != buffers[acc.array]:
                raise UnsupportedInput(
                    f"{format_access(acc)} selects its time buffer modulo "
                    f"{acc.modulus} but '{acc.array}' is written modulo {buffers[acc.array]}: "
                    f"every access of a field must rotate through the same buffers", acc.coord)
            if acc.array == st.field and buffers[acc.array] == 1 and any(_offset_of(st, acc)):
                raise UnsupportedInput(
                    f"in-place update: {format_access(acc)} reads a neighbour of the "
                    f"cell {format_access(st.stmt.target)} writes, which the loop may "
                    f"already have updated (Gauss-Seidel) or not, depending on the order cells "
                    f"are updated in; a statement updating its field in place may read it only "
                    f"at the cell it writes", acc.coord)
    versions = _dataflow(statements, writer, buffers)
    sigma = _substeps(statements, writer, versions)
    return _info(program, statements, writer, buffers, versions, sigma)


def _offset_of(st: _Statement, acc: Access) -> tuple[int, ...]:
    for a, off in st.field_reads:
        if a is acc:
            return off
    raise KeyError(acc)


def _check_statement(stencil, program, index, n, pos, nest, stmt) -> _Statement:
    """The one-statement checks for statement ``stmt``, and its reads' offsets."""
    a = stencil._Analysis(program, nest, stmt)
    target = stmt.target
    perm, field_reads, coef_reads = a.check_statement()
    for acc in [target] + field_reads:
        if acc.time is not None:
            a._time_shift(acc)
    a._build_isl()
    if a.domain.is_empty():
        raise UnsupportedInput(
            "this loop nest never executes: its iteration domain is empty for every "
            "parameter value", nest.coord or nest.loops[0].coord)
    a._check_start_conversions()
    a.write_map = a._access_map(target)
    offset_of = {}
    for acc in field_reads:
        if acc.indices not in offset_of:
            offset_of[acc.indices] = a._offset(acc)
    timed = [acc for acc in [target] + field_reads if acc.time is not None]
    if timed:
        a._check_time_bounds(timed[0], timed[1:])
    a._check_bounds(target, "write")
    seen = set()
    for acc in field_reads + coef_reads:
        if (acc.array, acc.indices) not in seen:
            seen.add((acc.array, acc.indices))
            a._check_bounds(acc, "read")
    coef_index = {(acc.array, acc.indices): a._coef_index(acc, perm) for acc in coef_reads}
    return _Statement(index, n, pos, a, tuple(perm),
                      tuple((acc, offset_of[acc.indices]) for acc in field_reads), coef_index)


# --------------------------------------------------------------------------- dependences


def _tuple(st: _Statement) -> str:
    return f"S{st.index}"


def _iterators(st: _Statement, prefix: str) -> list[str]:
    return [f"{prefix}t"] + [f"{prefix}{k}" for k in range(st.analysis.ndim)]


def _retuple(obj, st: _Statement):
    """``obj`` (a set or a map from the statement's domain) with the statement's own tuple
    name, so that the statements of a scop are told apart."""
    if isinstance(obj, isl.Set):
        return obj.set_tuple_name(_tuple(st))
    return obj.set_tuple_name(isl.dim_type.in_, _tuple(st))


def _memory_map(st: _Statement, acc: Access) -> "isl.Map":
    """The cells ``acc`` touches, the time buffer included: ``S_k[t, ..] -> u[b, a0, ..]``
    with ``b = (t + c) mod k`` for a double-buffered field."""
    a = st.analysis
    nm = a.names
    cells = [nm.aff(i) for i in acc.indices]
    if acc.time is not None:
        cells.insert(0, f"({nm.aff(acc.time)}) mod {acc.modulus}")
    m = isl.Map(f"{nm.param_header}{{ {a.s_tuple} -> M_{acc.array}[{', '.join(cells)}] }}")
    return _retuple(m.intersect_domain(a.domain), st)


def _schedule_map(st: _Statement) -> "isl.Map":
    """Execution order: time step, nest, the nest's loops in order, position in the body."""
    a = st.analysis
    loops = [f"s{k}" for k in range(a.ndim)]
    m = isl.Map(f"{a.names.param_header}{{ {a.s_tuple} -> "
                f"[t_, {st.nest}, {', '.join(loops)}, {st.position}] }}")
    return _retuple(m.intersect_domain(a.domain), st)


def _version_key(st: _Statement, acc: Access) -> tuple:
    """What decides the value a read of statement ``st`` takes: the field, its time
    subscript (``u[t%2][i][j]`` and ``u[(t+1)%2][i][j]`` read different buffers) and the
    spatial subscripts."""
    return (st.index, acc.array, acc.time, acc.indices)


def _time_distance(source: _Statement, sink: _Statement, relation: str) -> str:
    """The isl map from ``source``'s instances to ``sink``'s whose time steps satisfy
    ``relation`` (a constraint on ``dt`` = sink step - source step)."""
    a = sink.analysis
    src, dst = _iterators(source, "w"), _iterators(sink, "r")
    return (f"{a.names.param_header}{{ {_tuple(source)}[{', '.join(src)}] -> "
            f"{_tuple(sink)}[{', '.join(dst)}] : {relation.replace('dt', f'(rt - wt)')} }}")


def _dataflow(statements: list[_Statement], writer: dict[str, int],
              buffers: dict[str, int]) -> dict[tuple, str]:
    """For each read, by :func:`_version_key` (statement, field, time and spatial
    subscripts): ``"new"`` where every value it reads was written earlier in the same time
    step, ``"old"`` where every value comes from the previous step or from before the loop;
    refuses the rest, naming the dependence."""
    schedule = isl.UnionMap.from_map(_schedule_map(statements[0]))
    for st in statements[1:]:
        schedule = schedule.union(isl.UnionMap.from_map(_schedule_map(st)))
    versions: dict[tuple, str] = {}
    for st in statements:
        for acc, _ in st.field_reads:
            key = _version_key(st, acc)
            if key in versions:
                continue
            w = statements[writer[acc.array]]
            sink = isl.UnionMap.from_map(_memory_map(st, acc))
            source = isl.UnionMap.from_map(_memory_map(w, w.stmt.target))
            flow = (isl.UnionAccessInfo.from_sink(sink).set_must_source(source)
                    .set_schedule_map(schedule).compute_flow())
            dep = flow.get_must_dependence()
            same = dep.intersect(isl.UnionMap(_time_distance(w, st, "dt = 0")))
            previous = dep.intersect(isl.UnionMap(_time_distance(w, st, "dt = 1")))
            older = dep.intersect(isl.UnionMap(_time_distance(w, st, "dt >= 2")))
            where = f"{format_access(acc)} (statement at line {st.stmt.coord.line})" \
                if st.stmt.coord else format_access(acc)
            wline = f"line {w.stmt.coord.line}" if w.stmt.coord else "its statement"
            if not older.is_empty():
                raise UnsupportedInput(
                    f"{where} reads the value '{acc.array}' had two or more time steps "
                    f"earlier (a flow dependence from the statement at {wline} over two "
                    f"steps): a time step of several statements may read only the newest "
                    f"values of its fields", acc.coord)
            if not same.is_empty() and not previous.is_empty():
                raise UnsupportedInput(
                    f"{where} reads some cells after and some before the statement at {wline} "
                    f"writes them in the same time step (flow and anti dependences on "
                    f"'{acc.array}' carried by the spatial loops), so its value depends on the "
                    f"order cells are visited in, which a blocked schedule cannot keep", acc.coord)
            versions[key] = "new" if not same.is_empty() else "old"
    return versions


def _substeps(statements: list[_Statement], writer: dict[str, int],
              versions: dict) -> list[int]:
    """The sub-step of each statement: consecutive statements share one until a statement
    reads a new value (written in the same step) from a statement of the current one. A
    read of an old value of a field an earlier sub-step replaced is refused."""
    sigma: list[int] = []
    for st in statements:
        level = sigma[-1] if sigma else 0
        for acc, _ in st.field_reads:
            w = writer[acc.array]
            if versions[_version_key(st, acc)] == "new":
                if w >= st.index:
                    wst = statements[w].stmt
                    raise UnsupportedInput(
                        f"{format_access(acc)} reads cells that "
                        f"{'this statement' if w == st.index else 'the statement at line ' + str(wst.coord.line if wst.coord else '?')} "
                        f"wrote at an earlier iteration of the same loop nest in this time "
                        f"step (a flow dependence carried by the spatial loops), so its value "
                        f"depends on the order cells are visited in, which a blocked schedule "
                        f"cannot keep", acc.coord)
                level = max(level, sigma[w] + 1)
        sigma.append(level)
    for st in statements:
        for acc, _ in st.field_reads:
            w = writer[acc.array]
            if versions[_version_key(st, acc)] == "old" and w < st.index \
                    and sigma[w] < sigma[st.index]:
                wst = statements[w].stmt
                raise UnsupportedInput(
                    f"{format_access(acc)} reads the previous time level of '{acc.array}' "
                    f"after the statement at line {wst.coord.line if wst.coord else '?'} "
                    f"replaced it in an earlier sub-step of the same time step; the blocked "
                    f"schedule keeps only the newest value of each field: read the new level, "
                    f"or compute this statement before that one", acc.coord)
    return sigma


# --------------------------------------------------------------------------- the result


def _box(bounds: list[Affine], pick_low: bool, what: str, coord) -> tuple[Affine, list[int]]:
    """The lowest (or highest) of ``bounds`` and each bound's constant distance from it."""
    for cand in bounds:
        diffs = [(b - cand) if pick_low else (cand - b) for b in bounds]
        if all(d.is_constant and d.const >= 0 for d in diffs):
            return cand, [d.const for d in diffs]
    raise UnsupportedInput(
        f"the loop nests' {what} bounds ({', '.join(b.c_str() for b in bounds)}) differ by "
        f"amounts that depend on the parameters; the nests of a time step must cover the "
        f"same cells up to constant margins", coord)


def _info(program: StencilProgram, statements: list[_Statement], writer: dict[str, int],
          buffers: dict[str, int], versions: dict, sigma: list[int]) -> StencilInfo:
    ndim = statements[0].analysis.ndim
    tloop = program.time_loop
    # each field's cells, in array dimension order
    lower = {st.field: tuple(st.analysis.loops[st.perm[d]].lower for d in range(ndim))
             for st in statements}
    upper = {st.field: tuple(st.analysis.loops[st.perm[d]].upper for d in range(ndim))
             for st in statements}
    names = [st.field for st in statements]
    coord = program.nests[0].coord
    box_lo, box_hi, margin_lo, margin_hi = [], [], [], []
    for d in range(ndim):
        lo, m_lo = _box([lower[f][d] for f in names], True, "lower", coord)
        hi, m_hi = _box([upper[f][d] for f in names], False, "upper", coord)
        box_lo.append(lo)
        box_hi.append(hi)
        margin_lo.append(m_lo)
        margin_hi.append(m_hi)
    every = [off for st in statements for _, off in st.field_reads]
    reach_lo = [max([0] + [-o[d] for o in every]) for d in range(ndim)]
    reach_hi = [max([0] + [o[d] for o in every]) for d in range(ndim)]
    first = statements[0]
    dims = tuple(SpaceDim(var=first.analysis.loops[first.perm[d]].var, lower=box_lo[d],
                          upper=box_hi[d], extent=program.array.extents[d],
                          reach_lo=reach_lo[d], reach_hi=reach_hi[d]) for d in range(ndim))
    shifts = {}
    for st in statements:
        target = st.stmt.target
        if target.time is not None:
            w = target.time.const
            reads = [acc.time.const for s2 in statements for acc, _ in s2.field_reads
                     if acc.array == target.array and versions[_version_key(s2, acc)] == "old"]
            shifts[target.array] = ((w - 1) % 2 if not reads else reads[0] % 2, w % 2)
    if len(set(shifts.values())) > 1:
        a, b = list(shifts)[:2]
        raise UnsupportedInput(
            f"fields '{a}' and '{b}' keep time level t in different buffers "
            f"({a}[(t+{shifts[a][0]})%2], {b}[(t+{shifts[b][0]})%2]): the double-buffered "
            f"fields of a time step must rotate together", statements[writer[b]].stmt.coord)
    read_shift, write_shift = next(iter(shifts.values()), (0, 1))
    time = TimeInfo(var=tloop.var, lower=tloop.lower, upper=tloop.upper,
                    read_shift=read_shift, write_shift=write_shift, buffers=2)
    field_infos = tuple(
        FieldInfo(name=f, statement=writer[f], buffers=buffers[f],
                  read_shift=shifts.get(f, (0, 1))[0], write_shift=shifts.get(f, (0, 1))[1],
                  lower=lower[f], upper=upper[f],
                  margin_lo=tuple(margin_lo[d][names.index(f)] for d in range(ndim)),
                  margin_hi=tuple(margin_hi[d][names.index(f)] for d in range(ndim)),
                  coord=statements[writer[f]].stmt.coord)
        for f in (a.name for a in program.fields))
    read_only = {a.name for a in program.arrays if a.read_only}

    def analysed(st: _Statement) -> Expr:
        offset = {acc.indices: off for acc, off in st.field_reads}

        def to_read(e: Expr) -> Expr | None:
            if isinstance(e, Access) and e.array in read_only:
                return CoefRead(e.ctype, e.coord, array=e.array,
                                index=st.coef_index[(e.array, e.indices)])
            if isinstance(e, Access):
                return Read(e.ctype, e.coord, array=e.array, offset=offset[e.indices], lag=1)
            return None
        return transform(st.stmt.value, to_read)

    values = [analysed(st) for st in statements]
    members = {level: [st for st in statements if sigma[st.index] == level]
               for level in sorted(set(sigma))}
    substeps = tuple(
        SubStep(statements=tuple(st.index for st in group),
                updates=tuple((st.field, values[st.index]) for st in group),
                flops=tuple(count_flops(values[st.index]) for st in group))
        for group in members.values())
    coef_index = {}
    for st in statements:
        coef_index.update(st.coef_index)
    coefficients = coefficient_arrays(program, coef_index)
    offsets = tuple(sorted(set(every)))
    radius = tuple(max(lo, hi) for lo, hi in zip(reach_lo, reach_hi))
    diag_free = is_diagonal_free(offsets)
    return StencilInfo(
        program=program, array=program.array.name, dtype=program.array.elem_type, dims=dims,
        time=time, offsets=offsets, shape=classify_shape(offsets, radius),
        diagonal_free=diag_free, associative=False, assoc=None,
        opt="nondiag" if diag_free else "none",
        flops_per_cell=sum(count_flops(v) for v in values), update=values[0],
        coefficients=coefficients, fields=field_infos, substeps=substeps)
