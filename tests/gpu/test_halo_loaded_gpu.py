"""The kernel whose computing threads load the halo (``--halo loaded``) on the GPU against
the gcc oracle, over drawn problems (pytest -m gpu; skipped without one): odd and tiny
extents, different per dimension, every step count from 0, stream blocks of one plane up,
one, two and four cells a thread, compute regions that do not divide the grid. Each form
stands for a program kind the kernel takes: a double-buffered star (mode nondiag), a box
(mode assoc, reading as many or fewer planes below a cell than above), a leapfrog and a
seismic update with read-only arrays (rotating work buffers, boundary cells from the
boundary buffer) and a rotation through three buffers. Exact builds: bit for bit.
``AN5D_GPU_EXAMPLES`` sets the problems drawn per kind (default :data:`EXAMPLES`) for a
longer search on a GPU than the suite's."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from an5dpy import driver
from an5dpy.check.verify import verify_file

from cuda_support import FORMS, form_params

pytestmark = pytest.mark.gpu

#: The forms, one per program kind (tests/data/forms/).
KINDS = ("vla3d_star", "upwind_box3d", "downwind_box3d", "leapfrog3d", "seismic3d",
         "rotate3_star3d")
#: Problems drawn per kind: each builds its kernels with nvcc.
EXAMPLES = int(os.environ.get("AN5D_GPU_EXAMPLES", "6"))


@pytest.mark.parametrize("name", KINDS)
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(data=st.data())
def test_drawn_problems_match_the_oracle(name, data):
    path = os.path.join(FORMS, name + ".c")
    program, info = driver.load(path)
    r1, r2 = info.radius[1:]
    cells = data.draw(st.sampled_from((1, 2, 4)), "cells")
    rows = cells * data.draw(st.integers(1, 4), "rows per cell")
    cols = data.draw(st.integers(1, 40), "columns")
    sl = data.draw(st.sampled_from(("1", "2", "5", "off")), "sl")
    steps = data.draw(st.integers(0, 4), "steps")
    params = form_params(program, 0, steps)
    for name_ in params:
        if params[name_] == "0":  # an extent: tiny to a few blocks, each its own
            params[name_] = str(data.draw(st.integers(5, 29), name_))
    options = driver.Options(bt=1, bs=f"{cols + 2 * r2}x{rows + 2 * r1}", sl=sl,
                             coarsen=cells, halo="loaded")
    report = verify_file(path, options, "cuda", params, exact=True, loaded=(program, info))
    assert report.passed, "\n".join(report.lines())
