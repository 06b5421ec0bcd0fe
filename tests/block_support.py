"""Test support for the blocking stage: small plans in each mode, random stream blocks,
C conditions over the kernels' plane variables evaluated in Python (tests/blocking,
tests/cuda/test_macros.py), and schedules broken on purpose (tests/check)."""

from __future__ import annotations

import re
from dataclasses import replace

from hypothesis import strategies as st

from an5dpy.blocking.guards import Range
from an5dpy.blocking.ops import Schedule, Step
from an5dpy.blocking.plan import BlockingPlan, Mode
from an5dpy.blocking.trace import BlockRanges


MODES = ("nondiag", "none", "assoc")


def plan(mode="nondiag", bt=3, r=1, ndim=2):
    """A plan of degree ``bt`` and radius ``r`` in every dimension, 64-thread rows."""
    return BlockingPlan(ndim, "float", (r,) * ndim, bt, (64,) * (ndim - 1), None, Mode(mode))


def eval_c(text: str, rng: BlockRanges, plane: int) -> bool:
    """Evaluate a C condition over the kernel's plane variables (and ``q``) in Python:
    the comparison and additive operators read the same in both languages and bind the
    same way relative to the logical ones, which are spelled out here."""
    python = re.sub(r"!(?!=)", " not ", text.replace("&&", " and ").replace("||", " or "))
    names = {r.value: getattr(rng, r.attribute) for r in Range}
    names["q"] = plane
    return bool(eval(python, {"__builtins__": {}}, names))


@st.composite
def blocks(draw) -> BlockRanges:
    """A stream block as the launch plan makes them: its stored planes inside the
    interior, the reach at most the radius."""
    r = draw(st.integers(0, 4))
    d = draw(st.integers(1, 6))
    zlo = draw(st.integers(0, 12))
    zhi = zlo + draw(st.integers(0, 40))
    S0 = draw(st.integers(zlo, zhi))
    S1 = draw(st.integers(S0 + 1, zhi + 1))
    reach = (draw(st.integers(0, r)), draw(st.integers(0, r)))
    return BlockRanges.of(S0, S1, zlo, zhi, d, r, reach)


def schedule_without(schedule: Schedule, kind: type) -> Schedule:
    """``schedule`` with every op of type ``kind`` left out of every phase: a wrong
    schedule the simulator must refuse (one barrier per step without its Shares or its
    barriers)."""
    def phase(p):
        return replace(p, steps=tuple(Step(s.index, tuple(op for op in s.ops
                                                          if not isinstance(op, kind)))
                                      for s in p.steps))
    return replace(schedule, kernels=tuple(
        replace(k, heads={name: phase(h) for name, h in k.heads.items()},
                inner=phase(k.inner), tail=phase(k.tail)) for k in schedule.kernels))
