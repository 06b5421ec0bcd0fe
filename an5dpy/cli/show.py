"""Readable printouts of the pipeline's stages (``--print-ir``, ``an5d analyze``)."""

from __future__ import annotations

import json

from an5dpy.analysis.stencil import format_access
from an5dpy.cexpr import c_expr
from an5dpy.ir import Read, StencilInfo, StencilProgram
from an5dpy.blocking.plan import BlockingPlan


def _access(node) -> str:
    """A read of the update as its offsets (``A[-1, 0]``), an access of the program as C
    spells it (``A[(t+1)%2][i-1][j]``)."""
    if isinstance(node, Read):
        return f"{node.array}{list(node.offset)}"
    return format_access(node)


def format_program(program: StencilProgram) -> str:
    a = program.array
    extents = "".join(f"[{e}]" for e in a.extents)
    first = f"[{a.time_extent}]" if a.time_extent else "[*]"
    lines = [f"file {program.filename}, scop at {program.scop.pragma_start}",
             f"array {a.name}: {a.elem_type} {first}{extents} ({a.form.replace('_', ' ')})"]
    for p in program.params:
        extra = ""
        if p.definition is not None:
            extra = f" = {p.definition}"
        elif p.value is not None:
            extra = f" = {p.value}"
        lines.append(f"parameter {p.name}: {p.ctype}{extra}")
    indent = ""
    for loop in (program.time_loop, *program.space_loops):
        lines.append(f"{indent}for {loop.var} in [{loop.lower}, {loop.upper}]:")
        indent += "  "
    for st in program.statements:
        lines.append(f"{indent}{_access(st.target)} = {c_expr(st.value, _access)}")
    return "\n".join(lines)


def format_analysis(info: StencilInfo) -> str:
    data = info.to_json()
    lines = [f"{data['file']}: {info.ndim}D {info.shape} stencil on {info.array} ({info.dtype})"]
    for key in ("radius", "reach", "shape", "diagonal_free", "associative", "opt",
                "flops_per_cell"):
        lines.append(f"  {key}: {json.dumps(data[key])}")
    lines.append(f"  offsets ({len(info.offsets)}): {json.dumps(data['offsets'])}")
    t = info.time
    lines.append(f"  time loop: {t.var} in [{t.lower}, {t.upper}], reads buffer "
                 f"({t.var} + {t.read_shift}) % 2")
    for d in info.dims:
        lines.append(f"  dimension {d.var}: interior [{d.lower}, {d.upper}] of {d.extent}")
    lines.append(f"  parameters: {', '.join(p.name for p in info.params) or '(none)'}")
    lines.append(f"  update: {c_expr(info.update, _access)}")
    return "\n".join(lines)


def format_plan(plan: BlockingPlan) -> str:
    return json.dumps(plan.to_json(), indent=2)
