"""The macros of a time step of several statements: coupled fields and sub-steps.

A level of such a plan holds every field (:attr:`~an5dpy.blocking.plan.BlockingPlan.fields`)
and is one sub-step of a time step (level ``T`` runs sub-step ``(T - 1) % S``). The
schedule is the one-field schedule (:mod:`an5dpy.blocking.ops`): an op's register
``an5d_reg_<level>_<slot>`` names a *group*, field ``k``'s register is
``an5d_reg_<level>_<slot>_f<k>``. The macros take the group names, as every op call
prints them, and paste the field suffix on (``an5d_out##_f0``), so the render model's
calls and the guards are those of one field.

What each op does, per field (the C form of the simulator's ``field_stencil``,
:mod:`an5dpy.check.simulate`):

* **LOAD**: every field's plane from its source buffer (level 0); a field's boundary
  cells from the buffer of the launch's first time level.
* **CALCn**: the fields the sub-step reads at in-plane neighbours go to shared memory (one
  region per field), one barrier, then the sub-step's statements evaluate their updates
  (``AN5D_UPDATE_<k>``) and every other field keeps level ``n-1``'s value (its own
  register: a field changes only at its sub-step, and keeps its boundary buffer until
  then). A field's *boundary* cells (outside its statement's cells,
  ``AN5D_FIELD_BND_<k>``) take the values of the buffer of the parity of the field's own
  time at that level (:meth:`~an5dpy.blocking.plan.BlockingPlan.field_time`).
* **SHARE** (one barrier per step, :attr:`~an5dpy.blocking.plan.Barriers.STEP`): a
  level's input plane of each field that any sub-step reads at in-plane neighbours goes
  to shared memory before the step's one barrier; the level ops are then ``CALCn_E`` and
  ``STORE_E``, the evaluations above alone.
* **BOUNDARYn**: a streaming-boundary plane, every field's boundary values.
* **STORE**: the last level of every field at its own cells. A field's boundary cells are
  never written, so each of its buffers keeps the values the C program keeps there.

Field ``k``'s buffers are the launch's buffers plus ``k`` times ``an5d_field`` elements:
the device pool holds two buffers per field, field after field (a field updated in place
gets a second buffer that starts as its copy).
"""

from __future__ import annotations

from an5dpy.blocking.guards import BOUNDARY_PLANE, EXISTS, STORES
from an5dpy.blocking.ops import Share
from an5dpy.blocking.plan import Barriers, BlockingPlan, Mode
from an5dpy.cuda.macros import (P_BUF, P_OUT, P_PLANE, P_SHARED, ConstantTable, LineMacro,
                                Macro, UpdatePrinter, continued, input_params,
                                level_op_macros, levels_with_idle_warps)
from an5dpy.errors import InternalError
from an5dpy.ir import CoefRead, Read, StencilInfo


def field_name(name: str, k: int) -> str:
    """Field ``k``'s copy of a per-field name (registers, pointers, flags)."""
    return f"{name}_f{k}"


def pasted(param: str, k: int) -> str:
    """A macro parameter holding a register group, pasted to field ``k``'s register."""
    return f"{param}##_f{k}"


def update_macro(k: int) -> str:
    return f"AN5D_UPDATE_{k}"


def boundary_flag(k: int) -> str:
    """``AN5D_FIELD_BND_<k>(q)``: the thread's cell at local plane ``q`` is one of field
    ``k``'s boundary cells inside the array."""
    return f"AN5D_FIELD_BND_{k}"


def field_pointer(kind: str, k: int) -> str:
    """The thread's pointer into field ``k``'s buffer: ``ld`` (level 0), ``be`` / ``bo``
    (boundary values of even / odd time), ``st`` (the store)."""
    return f"an5d_p_{kind}_f{k}"


def parity_pointer(plan: BlockingPlan, info: StencilInfo, k: int, level: int) -> str:
    """Field ``k``'s boundary buffer at ``level``: by the parity of its time there."""
    time = plan.field_time(level, info.written_at[k])
    return field_pointer("be" if time % 2 == 0 else "bo", k)


def in_plane_margins(info: StencilInfo, k: int) -> bool:
    f = info.fields[k]
    return any(f.margin_lo[1:]) or any(f.margin_hi[1:])


def stops_short(info: StencilInfo, k: int) -> bool:
    """Field ``k``'s statement leaves cells of the interior unwritten: its boundary cells
    there, which each buffer keeps (level 0 loads them from the boundary buffer, the store
    skips them)."""
    f = info.fields[k]
    return any(f.margin_lo) or any(f.margin_hi)


def cells_flag(k: int) -> str:
    """Per thread: its column lies inside field ``k``'s cells in every in-plane dimension."""
    return f"an5d_cells_f{k}"


# --------------------------------------------------------------------------- per thread


def field_declarations(info: StencilInfo, plan: BlockingPlan, degree: int
                       ) -> tuple[str, ...]:
    """Each thread's pointers into every field's buffers at its column (the pointers of
    the one-field kernel, once per field; the odd boundary buffer's where a level before
    the last holds the field at an odd time) and, for a field whose cells stop short of
    the interior's in-plane edges, whether its column is one of them."""
    dtype = plan.dtype
    lines = ["const size_t an5d_field = (size_t)2 * (size_t)an5d_n0 * (size_t)an5d_plane;"]
    for k in range(len(info.fields)):
        at = f"(size_t){k} * an5d_field + an5d_origin"
        odd = any(plan.field_time(level, info.written_at[k]) % 2
                  for level in range(1, degree))
        lines += [
            f"const {dtype} *const {field_pointer('ld', k)} = "
            f"(an5d_interior ? an5d_src : an5d_bnd_even) + {at};",
            f"const {dtype} *const {field_pointer('be', k)} = an5d_bnd_even + {at};",
            *([f"const {dtype} *const {field_pointer('bo', k)} = an5d_bnd_odd + {at};"]
              if odd else []),
            f"{dtype} *const {field_pointer('st', k)} = an5d_dst + {at};"]
        if in_plane_margins(info, k):
            f = info.fields[k]
            tests = " && ".join(
                f"an5d_c{e} >= an5d_lo{e} + {f.margin_lo[e]} && "
                f"an5d_c{e} <= an5d_hi{e} - {f.margin_hi[e]}" for e in range(1, info.ndim))
            lines.append(f"const bool {cells_flag(k)} = an5d_interior && {tests};")
    return tuple(lines)


# --------------------------------------------------------------------------- shared macros


def field_plane_macros(info: StencilInfo, dtype: str) -> tuple[LineMacro, ...]:
    """The level-0 loads of every field (``LOAD``, ``LOAD_BOUNDARY``; ``G_LOAD`` is the
    one-field macro) and each field's boundary-cell predicate."""
    out, q = P_OUT, P_PLANE
    fields = range(len(info.fields))

    def load(kind: str) -> str:
        def pointer(k: int) -> str:
            if kind == "ld" and stops_short(info, k):
                return (f"({boundary_flag(k)}({q}) ? {field_pointer('be', k)} : "
                        f"{field_pointer('ld', k)})")
            return field_pointer(kind, k)
        return "do { " + " ".join(
            f"{pasted(out, k)} = an5d_in_array ? {pointer(k)}[AN5D_PLANE({q})]"
            f" : ({dtype})0;" for k in fields) + " } while (0)"

    macros = [LineMacro("LOAD", (out, q), load("ld")),
              LineMacro("LOAD_BOUNDARY", (out, q), load("be"))]
    for k, f in enumerate(info.fields):
        inside = cells_flag(k) if in_plane_margins(info, k) else "an5d_interior"
        planes = ""
        if f.margin_lo[0] or f.margin_hi[0]:
            planes = (f" && ({q}) >= an5d_zl + {f.margin_lo[0]}"
                      f" && ({q}) <= an5d_zh - {f.margin_hi[0]}")
        macros.append(LineMacro(
            boundary_flag(k), (q,), f"(an5d_in_array && !({inside}{planes}))",
            f"field {f.name}: cells of the array its statement does not write"
            if k == 0 else ""))
    return tuple(macros)


def field_update_params(info: StencilInfo, plan: BlockingPlan) -> tuple[str, ...]:
    """``AN5D_UPDATE_<k>``'s parameters: level T-1's register groups, the shared buffer,
    the op's plane where an update reads a read-only array."""
    plane = (P_PLANE,) if info.coefficients else ()
    return (*input_params(plan.stream_radius), P_BUF, *plane)


def field_update_macros(info: StencilInfo, plan: BlockingPlan, constants: ConstantTable
                        ) -> tuple[LineMacro, ...]:
    """``AN5D_UPDATE_<k>``: the statement writing field ``k``, over level T-1's register
    groups (the thread's own column of any field, pasted) and the fields' shared regions
    (in-plane neighbours)."""
    if plan.mode is Mode.ASSOC:
        raise InternalError("mode assoc for a time step of several statements")
    r = plan.stream_radius
    params = field_update_params(info, plan)
    macros = {}
    for sub in info.substeps:
        for name, value in sub.updates:
            printer = UpdatePrinter(info, plan, value, constants)

            def read(node: Read | CoefRead, printer=printer) -> str:
                if isinstance(node, CoefRead):
                    return printer.coef(node)
                g, dz, inplane = info.field_index(node.array), node.offset[0], node.offset[1:]
                if not any(inplane):
                    return pasted(input_params(r)[dz + r], g)
                return printer.smem(str(shared_plane(plan, g, dz)), inplane)

            k = info.field_index(name)
            macros[k] = LineMacro(update_macro(k), params, continued(printer.expr(value, read)),
                                  f"field {name}'s statement" if k == 0 else "")
    return tuple(macros[k] for k in sorted(macros))


def shared_plane(plan: BlockingPlan, field: int, dz: int) -> int:
    """The shared-buffer plane holding field ``field``'s level T-1 plane ``dz``: each field
    has a region of :attr:`~an5dpy.blocking.plan.BlockingPlan.smem_planes` planes, all 2r+1
    in mode none, the centre alone in mode nondiag (whose in-plane reads are at dz 0)."""
    if plan.mode is Mode.NONE:
        return field * plan.smem_planes + dz + plan.stream_radius
    if dz != 0:
        raise InternalError("nondiag kernel with a diagonal access")
    return field * plan.smem_planes


# --------------------------------------------------------------------------- level ops


def field_level_macros(info: StencilInfo, plan: BlockingPlan, degree: int) -> tuple[Macro, ...]:
    """CALCn, BOUNDARYn, STORE and their guarded forms for the kernel of ``degree`` levels
    (each level op in the plan's forms, :func:`~an5dpy.cuda.macros.level_op_macros`); with
    one barrier per step first the ``SHARE`` macro (:func:`share_macro`)."""
    r, dtype = plan.stream_radius, plan.dtype
    out, q, b = P_OUT, P_PLANE, P_BUF
    ins = input_params(r)
    centre = ins[r]
    idle = levels_with_idle_warps(plan, degree)
    args = ", ".join(field_update_params(info, plan))
    macros = [share_macro(info, plan)] if plan.barriers is Barriers.STEP else []
    for level in range(1, degree + 1):
        substep = (level - 1) % plan.substeps
        updated = {info.field_index(name) for name, _ in info.substeps[substep].updates}
        writes = [_shared_write(plan, shared_plane(plan, g, dz), pasted(ins[dz + r], g))
                  for g, dz in info.shared_reads(substep)]
        bit = 1 << level
        evaluation = []  # the op after its shared writes and their barrier
        if level < degree:
            for k in range(len(info.fields)):
                target = pasted(out, k)
                if k not in updated:
                    evaluation.append(f"{target} = {pasted(centre, k)};")
                    continue
                bnd = f"{boundary_flag(k)}({q})"
                bval = f"{parity_pointer(plan, info, k, level)}[AN5D_PLANE({q})]"
                value = f"({dtype})({update_macro(k)}({args}))"
                if level in idle:  # whole warps are idle: branch around the evaluation
                    evaluation.append(
                        f"if ((an5d_act & {bit}u) && !{bnd}) {target} = {value}; "
                        f"else {target} = {bnd} ? {bval} : {pasted(centre, k)};")
                else:
                    evaluation.append(f"{{ const {dtype} an5d_v = {value}; "
                                      f"{target} = {bnd} ? {bval} : an5d_v; }}")
            boundary = Macro(f"BOUNDARY{level}", (out, q), tuple(
                f"{pasted(out, k)} = an5d_in_array ? "
                f"{parity_pointer(plan, info, k, level)}[AN5D_PLANE({q})] : ({dtype})0;"
                for k in range(len(info.fields))))

            def guard(name: str, sync: bool, level=level) -> tuple[str, ...]:
                return (f"if ({BOUNDARY_PLANE.call(q)}) {{ if ({EXISTS.call(q)}) "
                        f"BOUNDARY{level}({out}, {q});{' __syncthreads();' if sync else ''} }}",
                        f"else {name}({', '.join((out, *ins))}, {q}, {b});")

            macros += level_op_macros(plan, f"CALC{level}", (out, *ins, q, b), writes,
                                      evaluation, guard, boundary)
        else:
            for k in range(len(info.fields)):
                value = (f"({dtype})({update_macro(k)}({args}))" if k in updated
                         else pasted(centre, k))
                # the field's own cells only: its boundary cells keep each buffer's values
                where = f"an5d_act & {bit}u"
                if stops_short(info, k):
                    where = f"({where}) && !{boundary_flag(k)}({q})"
                store = f"{field_pointer('st', k)}[AN5D_PLANE({q})]"
                if level in idle or k not in updated:
                    evaluation.append(f"if ({where}) {store} = {value};")
                else:
                    evaluation.append(f"{{ const {dtype} an5d_v = {value}; "
                                      f"if ({where}) {store} = an5d_v; }}")
            params = (q, *ins, b)

            def guard(name: str, sync: bool, params=params) -> tuple[str, ...]:
                return (f"if ({STORES.call(q)}) {name}({', '.join(params)});",
                        *(("else __syncthreads();",) if sync else ()))

            macros += level_op_macros(plan, "STORE", params, writes, evaluation, guard)
    return tuple(macros)


def share_macro(info: StencilInfo, plan: BlockingPlan) -> Macro:
    """``SHARE`` (one barrier per step, mode nondiag): a level's input plane, of each field
    any sub-step reads at in-plane neighbours (:attr:`~an5dpy.ir.StencilInfo.
    step_shared_fields`), into its region of the shared buffer, for the level's op after
    the step's barrier. One macro for every level, as the op calls it
    (:class:`~an5dpy.blocking.ops.Share`), so it writes what any level reads."""
    return Macro(Share.name, (P_SHARED, P_BUF), tuple(
        _shared_write(plan, shared_plane(plan, g, 0), pasted(P_SHARED, g))
        for g in info.step_shared_fields))


def _shared_write(plan: BlockingPlan, plane: int, value: str) -> str:
    """The write of the thread's cell of ``value`` into ``plane`` of shared buffer
    ``an5d_b`` (every field's region is its block's cells padded by the in-plane radius)."""
    cell = "".join(f"[an5d_t{e} + {p}]" for e, p in enumerate(plan.plane_radius, 1))
    return f"an5d_sm[{P_BUF}][{plane}]{cell} = {value};"
