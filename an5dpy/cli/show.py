"""Readable printouts of the pipeline's stages (``--print-ir``, ``an5d analyze``)."""

from __future__ import annotations

import json

from an5dpy.analysis.stencil import format_access
from an5dpy.cexpr import c_expr
from an5dpy.ir import ArrayDecl, CoefIndex, CoefRead, Read, StencilInfo, StencilProgram
from an5dpy.blocking.plan import BlockingPlan


def _access(node) -> str:
    """A read of the update as its offsets (``A[-1, 0]``; one of an older level than the
    newest with its lag, ``A@t-1[0, 0]``), an access of the program as C spells it
    (``A[(t+1)%2][i-1][j]``)."""
    if isinstance(node, Read):
        level = "" if node.lag == 1 else f"@t-{node.lag - 1}"
        return f"{node.array}{level}{list(node.offset)}"
    if isinstance(node, CoefRead):  # without the loop names: dimension d as ``@d``
        return _coef_text(node, tuple(f"@{d}" for d in range(max(
            (i.dim for i in node.index if i.dim is not None), default=-1) + 1)))
    return format_access(node)


def _coef_text(node: CoefRead, dim_vars: tuple[str, ...]) -> str:
    """A read-only read as C would spell it at the cell: ``k[i-1][j]``, ``c[2][j]``."""
    def one(index: CoefIndex) -> str:
        if index.dim is None:
            return str(index.offset)
        if index.offset == 0:
            return dim_vars[index.dim]
        return f"{dim_vars[index.dim]}{index.offset:+d}"
    return node.array + "".join(f"[{one(i)}]" for i in node.index)


def _inferred(array: ArrayDecl) -> str:
    """The note on a field whose outermost extent no declaration gives."""
    return f"extent of dimension 0 inferred from the accesses: {array.extents[0]}"


def format_program(program: StencilProgram) -> str:
    lines = [f"file {program.filename}, scop at {program.scop.pragma_start}"]
    for a in program.fields:
        extents = "".join(f"[{e}]" for e in a.extents)
        first = "" if a.in_place else f"[{a.time_extent}]" if a.time_extent else "[*]"
        lines.append(f"array {a.name}: {a.elem_type} {first}{extents} "
                     f"({a.form.replace('_', ' ')}{', in place' if a.in_place else ''}"
                     f"{', ' + _inferred(a) if a.outer_extent_inferred else ''})")
    for c in program.arrays:
        if not c.read_only:
            continue
        extents = "".join(f"[{e}]" for e in c.extents)
        lines.append(f"read-only array {c.name}: {c.elem_type} {extents} "
                     f"({c.form.replace('_', ' ')})")
    for p in program.params:
        extra = ""
        if p.definition is not None:
            extra = f" = {p.definition}"
        elif p.value is not None:
            extra = f" = {p.value}"
        lines.append(f"parameter {p.name}: {p.ctype}{extra}")
    lines.append(f"for {program.time_loop.var} in [{program.time_loop.lower}, "
                 f"{program.time_loop.upper}]:")
    for nest in program.nests:
        indent = "  "
        for loop in nest.loops:
            lines.append(f"{indent}for {loop.var} in [{loop.lower}, {loop.upper}]:")
            indent += "  "
        for st in nest.statements:
            lines.append(f"{indent}{_access(st.target)} = {c_expr(st.value, _access)}")
    return "\n".join(lines)


def format_analysis(info: StencilInfo) -> str:
    data = info.to_json()
    on = (f"fields {', '.join(f.name for f in info.fields)}" if info.coupled else info.array)
    lines = [f"{data['file']}: {info.ndim}D {info.shape} stencil on {on} ({info.dtype})"]
    for key in ("radius", "reach", "shape", "diagonal_free", "associative", "opt",
                "flops_per_cell"):
        lines.append(f"  {key}: {json.dumps(data[key])}")
    lines.append(f"  offsets ({len(info.offsets)}): {json.dumps(data['offsets'])}")
    lines.append(f"  time loop: {_time_levels(info)}")
    for d in info.dims:
        lines.append(f"  dimension {d.var}: interior [{d.lower}, {d.upper}] of {d.extent}")
    lines.append(f"  parameters: {', '.join(p.name for p in info.params) or '(none)'}")
    dim_vars = tuple(d.var for d in info.dims)
    for c in info.coefficients:
        extents = "".join(f"[{e}]" for e in c.extents)
        reads = ", ".join(_coef_text(CoefRead(c.elem_type, array=c.name, index=r), dim_vars)
                          for r in c.reads)
        lines.append(f"  read-only array {c.name}: {c.elem_type} {extents}, read at {reads}")

    def access(node) -> str:
        return _coef_text(node, dim_vars) if isinstance(node, CoefRead) else _access(node)

    if not info.coupled:
        lines.append(f"  update: {c_expr(info.update, access)}")
        return "\n".join(lines)
    declared = {a.name: a for a in info.program.arrays}
    for f in info.fields:
        form = "in place" if f.in_place else "2 time buffers"
        cells = ", ".join(f"[{lo}, {hi}]" for lo, hi in zip(f.lower, f.upper))
        array = declared[f.name]
        inferred = f"; {_inferred(array)}" if array.outer_extent_inferred else ""
        lines.append(f"  field {f.name}: {form}, written at {cells}{inferred}")
    for k, sub in enumerate(info.substeps):
        lines.append(f"  sub-step {k + 1} of {len(info.substeps)}:")
        for name, value in sub.updates:
            lines.append(f"    {name} = {c_expr(value, access)}")
    return "\n".join(lines)


def _subscript(var: str, shift: int, buffers: int) -> str:
    """A time subscript as C spells it: ``(t + 2) % 3``, ``t % 2``, ``(t - 1) % 2``."""
    if shift == 0:
        return f"{var} % {buffers}"
    return f"({var} {'+' if shift > 0 else '-'} {abs(shift)}) % {buffers}"


def _time_levels(info: StencilInfo) -> str:
    """``t in [0, T - 1], 3 time buffers: writes (t + 2) % 3, reads level t from
    (t + 1) % 3 and level t-1 from t % 3`` (the double-buffered form: ``reads buffer
    (t + 0) % 2``, as it always said)."""
    t = info.time
    head = f"{t.var} in [{t.lower}, {t.upper}]"
    if t.buffers == 2 and info.history == 1:
        return f"{head}, reads buffer ({t.var} + {t.read_shift}) % 2"
    levels = [f"level {t.var} from {_subscript(t.var, t.read_shift, t.buffers)}"]
    for lag in range(2, info.history + 1):  # level t+1-lag: the write's buffer minus lag
        offsets = info.offsets_of_level(lag)
        if not offsets:
            continue
        older = _subscript(t.var, (t.write_shift - lag) % t.buffers, t.buffers)
        where = ("at the cell itself" if offsets == ((0,) * info.ndim,)
                 else f"at {len(offsets)} offset{'s' * (len(offsets) > 1)}")
        levels.append(f"level {t.var}-{lag - 1} from {older} ({where})")
    return (f"{head}, {t.buffers} time buffers: writes "
            f"{_subscript(t.var, t.write_shift, t.buffers)}, reads {' and '.join(levels)}")


def format_plan(plan: BlockingPlan) -> str:
    return json.dumps(plan.to_json(), indent=2)
