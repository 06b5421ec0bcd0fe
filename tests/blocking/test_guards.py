"""The guard predicates: their C text, evaluated, agrees with their Python evaluation on
every block and plane, so the kernels and the simulator run one rule."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from an5dpy.blocking.guards import (BOUNDARY_PLANE, EXISTS, LOADS, PREDICATES, STORES,
                                    PlanePredicate)

from block_support import blocks, eval_c


@given(rng=blocks(), offset=st.integers(-8, 8), index=st.integers(0, len(PREDICATES) - 1))
def test_printed_c_agrees_with_the_python_evaluation(rng, offset, index):
    predicate = PREDICATES[index]
    reach = (rng.below, rng.above)
    for plane in (rng.lo + offset, rng.s0 + offset, rng.s1 + offset, rng.hi + offset,
                  rng.last_load + offset):
        assert eval_c(predicate.c_text("(q)", reach), rng, plane) == predicate.holds(rng, plane)
        assert eval_c(predicate.c_text(str(plane), reach), rng, plane) == \
            predicate.holds(rng, plane)


@given(rng=blocks(), plane=st.integers(-10, 80))
def test_the_predicates_mean_what_block_ranges_say(rng, plane):
    """The plane tests spelled out, and LOADS = EXISTS up to last_load (which never
    exceeds the top of EXISTS)."""
    assert STORES.holds(rng, plane) == (rng.s0 <= plane < rng.s1)
    assert BOUNDARY_PLANE.holds(rng, plane) == (plane < rng.lo or plane > rng.hi)
    assert EXISTS.holds(rng, plane) == (rng.lo - rng.below <= plane <= rng.hi + rng.above)
    assert LOADS.holds(rng, plane) == (EXISTS.holds(rng, plane) and plane <= rng.last_load)
    assert (rng.exists(plane), rng.is_boundary(plane), rng.stores(plane), rng.loads(plane)) \
        == tuple(p.holds(rng, plane) for p in (EXISTS, BOUNDARY_PLANE, STORES, LOADS))


def test_c_text_prints_the_reach_as_constants():
    assert EXISTS.c_text("(q)", (2, 1)) == "(q) >= an5d_zl - 2 && (q) <= an5d_zh + 1"
    assert BOUNDARY_PLANE.c_text("q", (2, 1)) == "q < an5d_zl || q > an5d_zh"
    assert EXISTS.call("(q) + 3") == "AN5D_EXISTS((q) + 3)"


def test_a_predicate_without_macro_is_printed_inline():
    with pytest.raises(ValueError):
        LOADS.call("q")
    assert isinstance(LOADS, PlanePredicate) and LOADS.macro is None
