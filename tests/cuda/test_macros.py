"""The macros of the kernels (:mod:`an5dpy.cuda.macros`): the plane predicates as
printed, the idle-warp branches, the constant table of double literals."""

from __future__ import annotations

import re

from hypothesis import given, strategies as st

from an5dpy.blocking.trace import BlockRanges
from an5dpy.cuda.macros import plane_macros

from guard_support import blocks, eval_c


def expand(macros, name: str, plane: str) -> str:
    """The text of the one-parameter macro ``name`` applied to ``plane``."""
    macro = next(m for m in macros if m.name == name)
    return macro.text.replace("(q)", f"({plane})")


@given(rng=blocks(), plane=st.integers(-10, 80))
def test_printed_plane_macros_decide_as_the_block_ranges(rng: BlockRanges, plane: int):
    """AN5D_STORES, AN5D_BOUNDARY_PLANE, AN5D_EXISTS and G_LOAD's condition, as the
    kernels print them, evaluated for a block, agree with what resolve_guarded asks."""
    macros = plane_macros("float", (rng.below, rng.above))
    assert eval_c(expand(macros, "AN5D_STORES", str(plane)), rng, plane) == rng.stores(plane)
    assert eval_c(expand(macros, "AN5D_BOUNDARY_PLANE", str(plane)), rng, plane) == \
        rng.is_boundary(plane)
    assert eval_c(expand(macros, "AN5D_EXISTS", str(plane)), rng, plane) == rng.exists(plane)
    g_load = next(m for m in macros if m.name == "G_LOAD").text
    condition = re.match(r"do \{ if \((.*?)\) \{", g_load).group(1)
    assert eval_c(condition.replace("(q)", f"({plane})"), rng, plane) == rng.loads(plane)
