"""The inner phase of blocks whose cells are all interior (BlockingPlan.interior_phase):
which plans get it, the C condition that picks those blocks against a direct count of the
block's cells, and the constants and declarations its copy of the inner phase runs under.
The kernels' results are checked on the GPU against gcc (tests/gpu)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from an5dpy.blocking.plan import INTERIOR_PHASE_MAX_RADIUS, make_plan
from an5dpy.cuda.kernels import generate
from an5dpy.cuda.render_model import KernelDim, _interior_block
from an5dpy.driver import load

from paths import C_INPUTS


def benchmark(name: str, dtype: str = "float"):
    return load(f"{C_INPUTS}/{name}.c", (("SB_TYPE", dtype),))[1]


def kernel_text(info, plan) -> str:
    return generate(info, plan, "x").files()["x_kernel.cu"]


MARK = "every cell of the block is interior"


@pytest.mark.parametrize("name, bt, bs, coarsen, expected", [
    ("star2d1r", 4, (256,), 1, True),
    ("j2d9pt", 2, (256,), 1, True),       # radius 2
    ("box2d1r", 3, (128,), 2, True),      # mode assoc, coarsened
    ("star2d3r", 2, (256,), 1, False),    # radius 3: the second copy costs more
    ("star3d1r", 2, (32, 32), 1, False),  # 3D: more registers than the selects save
])
def test_which_plans_get_an_inner_phase_for_interior_blocks(name, bt, bs, coarsen, expected):
    info = benchmark(name)
    plan = make_plan(info, bt, bs=bs, sl=64, coarsen=coarsen)
    assert plan.interior_phase == expected
    assert expected == (plan.ndim == 2 and plan.plane_radius[0] <= INTERIOR_PHASE_MAX_RADIUS)
    text = kernel_text(info, plan)
    # one per kernel (degree) where it applies
    assert text.count(MARK) == (len(plan.kernel_degrees()) if expected else 0)


def test_the_interior_copy_runs_under_constant_flags_and_its_own_pointers():
    info = benchmark("star2d1r")
    plan = make_plan(info, 3, bs=(256,), sl=64, coarsen=2)
    text = kernel_text(info, plan)
    branch = text.split(MARK, 1)[1].split("for (", 1)[0]
    for m in range(2):
        assert f"const bool an5d_in_array_x{m} = true;" in branch
        assert f"const bool an5d_interior_x{m} = true;" in branch
        assert f"const bool an5d_bnd_x{m} = false;" in branch
        # the offsets again, under the constants (a coarsened cell's pointers are its macro's)
        assert re.search(rf"const size_t an5d_origin_x{m} = .*an5d_in_array_x{m}", branch)
    one_cell = kernel_text(info, make_plan(info, 3, bs=(256,), sl=64))
    branch = one_cell.split(MARK, 1)[1].split("for (", 1)[0]
    assert "const bool an5d_bnd = false;" in branch
    assert "an5d_p_ld = (an5d_interior ? an5d_src : an5d_bnd_even) + an5d_origin;" in branch


def c_condition(text: str, values: dict[str, int]) -> bool:
    """Evaluate the printed C condition (``&&``, ``*``, ``+``, ``-``, comparisons)."""
    expr = text.replace("&&", " and ")
    return bool(eval(expr, {}, values))  # the expression is ours: names and integers only


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 3000), margin_lo=st.integers(0, 3), margin_hi=st.integers(0, 3),
       radius=st.integers(1, 2), degree=st.integers(1, 8), extra=st.integers(1, 300),
       block=st.integers(0, 40))
def test_the_condition_holds_exactly_for_blocks_of_interior_cells(
        n, margin_lo, margin_hi, radius, degree, extra, block):
    """A block of ``bs`` cells whose first is at lo - halo + b * compute: the printed
    condition is true exactly where each of its cells c has lo <= c <= hi."""
    halo = degree * radius
    bs = 2 * halo + extra
    compute = bs - 2 * halo
    lo, hi = margin_lo, n - 1 - margin_hi
    dim = KernelDim(1, "x", halo, compute)

    class Plan:  # the one attribute the condition reads
        pass

    plan = Plan()
    plan.bs = (bs,)
    condition = _interior_block(plan, (dim,))
    first = lo - halo + block * compute
    direct = all(lo <= c <= hi for c in range(first, first + bs))
    assert c_condition(condition, {"an5d_b1": block, "an5d_lo1": lo, "an5d_hi1": hi}) == direct


def test_the_gpu_suite_runs_interior_blocks_of_every_such_kernel():
    """tests/gpu/test_cuda.py checks the kernels against gcc: for every 2D benchmark whose
    plans get the interior phase, one and two cells per thread, some case's full launch
    (the kernel of the plan's degree) has a block whose cells are all interior, so that
    copy of the inner phase runs there too (the grids are small)."""
    import importlib
    import os
    import sys

    from paths import TESTS_DIR
    sys.path.insert(0, os.path.join(TESTS_DIR, "gpu"))
    gpu_cases = importlib.import_module("test_cuda")
    covered, wanted = set(), set()
    for case in gpu_cases.CASES:
        info = gpu_cases.program(case.name, case.dtype)[1]
        plan = make_plan(info, bt=case.bt, bs=case.bs, sl=case.sl, opt=case.mode,
                         coarsen=case.coarsen, barriers=case.barriers, halo=case.halo)
        if not plan.interior_phase or plan.barriers.value == "shuffle":
            continue
        key = (case.name, case.dtype, case.coarsen > 1)
        wanted.add(key)
        r = plan.plane_radius[0]
        lo, hi = r, case.compsize + r - 1  # the benchmarks' loops: i in [r, n + r)
        degree = plan.depth  # the full launches' kernel
        halo = degree * r
        compute = plan.bs[0] - 2 * halo
        blocks = (hi - lo + compute) // compute
        condition = _interior_block(plan, (KernelDim(1, "x", halo, compute),))
        if any(c_condition(condition, {"an5d_b1": b, "an5d_lo1": lo, "an5d_hi1": hi})
               for b in range(blocks)):
            covered.add(key)
    assert wanted and wanted == covered, sorted(wanted - covered)
