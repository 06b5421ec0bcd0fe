"""The schedule as text (``--print-ir schedule``), and the spelling of planes that the
generated code shares."""

from __future__ import annotations

from an5dpy.blocking.ops import (Accumulate, Boundary, Calc, Load, Op, Schedule, Share, Store,
                                 Sync)

#: The kernels' step counter, the start of the chunk of steps a loop iteration runs
#: (prefixed like every name of the generated code, which the frontend reserves).
STEP = "an5d_step"


def plane_text(plane: int, relative: bool) -> str:
    """A plane as C: the number, or ``an5d_step``, ``an5d_step + k``, ``an5d_step - k``
    relative to the chunk start :data:`STEP` (the generated code and the schedule printer
    spell planes alike)."""
    if not relative:
        return str(plane)
    return STEP if plane == 0 else (f"{STEP} + {plane}" if plane > 0 else f"{STEP} - {-plane}")


def format_op(op: Op, relative: bool = False) -> str:
    q = plane_text(op.plane, relative)
    match op:
        case Sync():
            return f"SYNC()  # {op.why}"
        case Share():
            return f"{op.name}({op.src}, buf {op.buf})  # level {op.level}'s input, plane {q}"
        case Load():
            older = "".join(f", {reg}" for reg in op.older)
            return f"{op.name}({op.out}{older}, {q})"
        case Boundary():
            return f"{op.name}({op.out}, {op.prev if op.prev else q})"
        case Calc():
            ins = ", ".join(map(str, op.ins))
            prev = f", boundary from {op.prev}" if op.prev else ""
            return f"{op.name}({op.out}, {ins}{_older(op.hist)}, {q}, buf {op.buf}{prev})"
        case Store():
            also = f", also {', '.join(map(str, op.also))}" if op.also else ""
            return (f"{op.name}({q}, {', '.join(map(str, op.ins))}{_older(op.hist)}, "
                    f"buf {op.buf}{also})")
        case Accumulate():
            flags = []
            if op.consume:
                flags.append(f"take {op.src}")
            if op.complete:
                flags.append(f"finish {op.accs[0]} ({op.complete})")
            if op.store:
                flags.append("store")
            accs = ", ".join(map(str, op.accs))
            return f"{op.name}({q}; accs {accs}; {'; '.join(flags)}; buf {op.buf})"
    raise TypeError(f"not an op: {op!r}")


def _older(hist) -> str:
    return f"; older {', '.join(map(str, hist))}" if hist else ""


def format_schedule(schedule: Schedule) -> str:
    plan = schedule.plan
    lines = [f"schedule for {plan.describe()}, streaming radius {plan.stream_radius}"]
    for k in schedule.kernels:
        lines.append("")
        lines.append(f"kernel degree {k.degree}{' (compact)' if k.compact else ''}: "
                     f"unroll {k.unroll} steps, "
                     f"registers {', '.join(map(str, k.registers()))}")
        for phase in (k.prologue, *k.heads.values(), k.inner, k.tail):
            tag = "guarded, " if phase.guarded else ""
            where = f"planes relative to chunk start {STEP}" if phase.relative else "local planes"
            lines.append(f"  {phase.name} ({tag}{where}):")
            for st in phase.steps:
                body = "; ".join(format_op(op, phase.relative) for op in st.ops)
                label = f"{STEP}+{st.index}" if phase.relative else str(st.index)
                lines.append(f"    step {label}: {body}")
    return "\n".join(lines)
