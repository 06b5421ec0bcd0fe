"""scripts/default_plans.py without a GPU: the table's tuned plan becomes fully given
options, and the default plan is the model's choice."""

from __future__ import annotations

import os

from paths import C_INPUTS
from script_support import load_script

from an5dpy import driver
from an5dpy.perf.bench import paper_env

default_plans = load_script("default_plans")


def test_a_tuned_row_is_a_fully_given_plan():
    defines = (("SB_TYPE", "float"),)
    program, info = driver.load(os.path.join(C_INPUTS, "j2d5pt.c"), defines)
    env = paper_env(program, info)
    row = {"bt": "6", "bs": "256", "sl": "-", "opt": "nondiag", "regs": "-"}
    choice = driver.choose_plan(info, default_plans.tuned_options(row, defines), env)
    assert (choice.plan.bt, choice.plan.bs, choice.plan.sl, choice.regs) == (6, (256,), None,
                                                                              None)
    assert not choice.chosen
    row = {"bt": "14", "bs": "512", "sl": "1,024", "opt": "nondiag", "regs": "64"}
    choice = driver.choose_plan(info, default_plans.tuned_options(row, defines), env)
    assert (choice.plan.sl, choice.regs) == (1024, 64)
    assert (choice.plan.coarsen, choice.plan.barriers.value) == (1, "level")
    row.update(cells="2", barriers="step")
    choice = driver.choose_plan(info, default_plans.tuned_options(row, defines), env)
    assert (choice.plan.coarsen, choice.plan.barriers.value) == (2, "step")
    assert not choice.chosen


def test_the_default_is_the_models_choice():
    defines = (("SB_TYPE", "float"),)
    program, info = driver.load(os.path.join(C_INPUTS, "j2d5pt.c"), defines)
    choice = driver.choose_plan(info, driver.Options(defines=defines, gpu="H200"),
                                paper_env(program, info))
    assert set(choice.chosen) >= {"bt", "bs", "sl"} and choice.predicted > 0
