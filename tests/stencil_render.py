"""Test support: render a :class:`tests.ir_builders.StencilSpec` as a C translation unit.

``render_c(spec)`` gives a complete C file with one function whose ``#pragma scop``
region holds the time loop, the spatial loops and the update
``A[(t+1)%2][i][j] = c0 * A[t%2][i+o..][j+o..] + ...``, in the same shape as the
benchmark programs in ``c_inputs/``.  Feeding it to the frontend must give the program
that :func:`tests.ir_builders.build_program` builds from the same spec (up to coordinates
and the scop bookkeeping).

Array forms (``spec.form``):

* ``parameter``:   ``void stencil(int n, int T, float A[2][n][n])``
* ``vla_pointer``: ``void stencil(int n, int T, float *A_flat)`` with
  ``float (*A)[n][n] = (float (*)[n][n])A_flat;``
* ``global``:      ``float A[2][64][64];`` (``spec.size`` must be an int) and
  ``void stencil(int T)``
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only for annotations: works whether tests/ is a package or not
    from ir_builders import StencilSpec


def c_literal(value: float, dtype: str) -> str:
    """A floating literal of ``dtype``: ``0.5f`` for float, ``0.5`` for double."""
    text = repr(float(value))
    if "e" not in text and "." not in text and "inf" not in text and "nan" not in text:
        text += ".0"
    return text + ("f" if dtype == "float" else "")


def c_index(var: str, off: int) -> str:
    return var if off == 0 else f"{var}{off:+d}"


def render_access(spec: StencilSpec, time: str, offset: tuple[int, ...]) -> str:
    return spec.array + f"[{time}]" + "".join(
        f"[{c_index(v, o)}]" for v, o in zip(spec.vars, offset))


def render_expr(spec: StencilSpec, time_var: str = "t") -> str:
    """The right-hand side, one term per line after the first."""
    terms = [f"{c_literal(c, spec.dtype)} * {render_access(spec, f'{time_var}%2', off)}"
             for off, c in zip(spec.offsets, spec.weights)]
    body = "\n            + ".join(terms)
    if spec.divisor is not None:
        body = f"({body}) / {c_literal(spec.divisor, spec.dtype)}"
    return body


def render_c(spec: StencilSpec, function: str = "stencil", time_var: str = "t") -> str:
    """A complete C file for ``spec`` (see the module docstring for the forms)."""
    dt, A, T = spec.dtype, spec.array, spec.steps
    size = str(spec.size)
    dims = "".join(f"[{size}]" for _ in range(spec.ndim))
    lines: list[str] = []
    if spec.form == "global":
        if not isinstance(spec.size, int):
            raise ValueError("the global form needs a constant size")
        lines.append(f"{dt} {A}[2]{dims};")
        lines.append("")
        lines.append(f"void {function}(int {T})")
        lines.append("{")
    elif spec.form == "parameter":
        size_param = "" if isinstance(spec.size, int) else f"int {size}, "
        lines.append(f"void {function}({size_param}int {T}, {dt} {A}[2]{dims})")
        lines.append("{")
    elif spec.form == "vla_pointer":
        size_param = "" if isinstance(spec.size, int) else f"int {size}, "
        lines.append(f"void {function}({size_param}int {T}, {dt} *{A}_flat)")
        lines.append("{")
        lines.append(f"  {dt} (*{A}){dims} = ({dt} (*){dims}){A}_flat;")
    else:
        raise ValueError(f"unknown form {spec.form!r}")
    lines.append("#pragma scop")
    lines.append(f"  for (int {time_var} = 0; {time_var} < {T}; {time_var}++)")
    indent = "    "
    for v, (lo, hi) in zip(spec.vars, spec.reach):
        upper = size if hi == 0 else f"{size} - {hi}"
        lines.append(f"{indent}for (int {v} = {lo}; {v} < {upper}; {v}++)")
        indent += "  "
    target = render_access(spec, f"({time_var}+1)%2", (0,) * spec.ndim)
    lines.append(f"{indent}{target} =")
    lines.append(f"{indent}  {render_expr(spec, time_var)};")
    lines.append("#pragma endscop")
    lines.append("}")
    return "\n".join(lines) + "\n"
