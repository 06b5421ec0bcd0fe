"""scripts/ab_compare.py without a GPU: a case's spelling, the kernels --write has a
checkout write (this one here), the plan the timing side rebuilds from the same case, and
the table; and scripts/variants_compare.py's --extra plans."""

from __future__ import annotations

import os

import pytest

from paths import REPO
from script_support import load_script

ab_compare = load_script("ab_compare")
variants_compare = load_script("variants_compare")

CASE = "star2d1r float bt=3 bs=512 sl=64 coarsen=2 barriers=step regs=96"


def test_a_case_names_a_benchmark_its_type_and_its_plan():
    assert ab_compare.parse_case(CASE) == ("star2d1r", "float", {
        "bt": "3", "bs": "512", "sl": "64", "coarsen": "2", "barriers": "step", "regs": "96"})
    with pytest.raises(SystemExit, match="unknown settings cells"):
        ab_compare.parse_case("star2d1r float bt=3 cells=2")
    assert ab_compare.slug(CASE) == "star2d1r_float_bt_3_bs_512_sl_64_coarsen_2_barriers_step_regs_96"


def test_write_has_the_checkout_translate_the_case_and_the_plan_is_the_same(tmp_path):
    folder = ab_compare.write_case(CASE, str(tmp_path), REPO)
    assert folder == os.path.join(str(tmp_path), ab_compare.slug(CASE))
    kernel = open(os.path.join(folder, "star2d1r_kernel.cu")).read()
    assert "(bt=3 bs=512 sl=64 coarsen=2 barriers=step opt=nondiag dtype=float)" in kernel
    assert "__launch_bounds__(256, 2)" in kernel  # the budget of 96 for 256 threads
    _, info, plan, regs = ab_compare.plan_of(CASE)
    assert (plan.bt, plan.bs, plan.sl, plan.coarsen, plan.barriers.value, regs) == (
        3, (512,), 64, 2, "step", 96)
    assert plan.describe() in kernel
    # this checkout's --write and its driver write the same kernels for the case
    from an5dpy.driver import generate
    assert generate(info, plan, "star2d1r", regs=regs).files()["star2d1r_kernel.cu"] == kernel


def test_the_table_gives_each_cases_best_runs_and_their_ratio():
    row = {"case": CASE, "old": [100.0, 120.0], "new": [150.0, 140.0], "ratio": 150 / 120,
           "registers": {"old": (128, True), "new": (96, False)}}
    line = ab_compare.render([row]).splitlines()[-1]
    assert line == f"| {CASE} | 120 | 150 | 1.250 | 128 (spills), 96 |"


def test_variants_compare_extra_plans_take_the_tuned_plans_other_options():
    from an5dpy.driver import blocking_plan, load
    _, info = load(os.path.join(REPO, "c_inputs", "star2d1r.c"), (("SB_TYPE", "float"),))
    tuned = blocking_plan(info, 14, bs=(256,), sl=256, barriers="step")
    extra = variants_compare.extra_plans(
        info, tuned, ["bt=8 bs=1024 coarsen=4", "coarsen=3", "bt=200"])
    assert [p.describe() for p in extra] == [
        "bt=8 bs=1024 sl=256 coarsen=4 barriers=step opt=nondiag dtype=float"]
    assert variants_compare.kind_of(extra[0], extra) == variants_compare.EXTRA
    # without a base plan (an ab_compare case): no stream division unless given, one cell
    # per thread and a barrier per level
    alone = variants_compare.settings_plan(info, {"bt": "2", "bs": "256", "sl": "off"})
    assert (alone.sl, alone.coarsen, alone.barriers.value) == (None, 1, "level")
    assert variants_compare.settings_plan(info, {"bt": "2", "bs": "256"}).sl is None
