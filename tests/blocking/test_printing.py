"""The schedule printer (:mod:`an5dpy.blocking.printing`)."""

from __future__ import annotations

from an5dpy.blocking.build import build_schedule
from an5dpy.blocking.printing import format_schedule

from block_support import plan


def test_print_is_readable():
    text = format_schedule(build_schedule(plan("nondiag", 2, 1)))
    assert "kernel degree 2" in text and "prologue (guarded, local planes):" in text
    assert "step 0: LOAD(an5d_reg_0_0, 0)" in text
    assert "CALC1(an5d_reg_1_1, an5d_reg_0_0, an5d_reg_0_1, an5d_reg_0_2, 1, buf" in text
    assert "head_lowermost" in text and "tail (guarded" in text
