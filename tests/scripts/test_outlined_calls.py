"""scripts/outlined_calls.py without a GPU: its programs make the calls they name, and the
cases on either side of the threshold translate with the calls inlined or out of line."""

from __future__ import annotations

import pytest

from an5dpy import driver
from an5dpy.cuda import macros
from an5dpy.ir import Call, walk

from script_support import load_script

outlined_calls = load_script("outlined_calls")


@pytest.mark.parametrize("calls", [1, 8, 16])
def test_each_case_makes_its_calls_of_inexact_functions(tmp_path, calls):
    path = tmp_path / "c.c"
    path.write_text(outlined_calls.source(calls))
    info = driver.load(str(path), (("SB_TYPE", "double"),))[1]
    made = [e.func for e in walk(info.update) if isinstance(e, Call)
            and not macros.MATH_FUNCTIONS[e.func].exact]
    assert len(made) == calls
    assert macros.outlines_calls(info) == (calls >= macros.OUTLINED_CALLS_FROM)


def test_the_cases_are_below_the_threshold_on_it_and_above():
    counts = {calls for calls, _, _ in outlined_calls.CASES}
    assert macros.OUTLINED_CALLS_FROM in counts
    assert min(counts) < macros.OUTLINED_CALLS_FROM < max(counts)


def test_a_case_names_its_calls_type_and_plan():
    assert outlined_calls.parse_case("6:double:bt=3,bs=64x16,sl=64,coarsen=2") == (
        6, "double", {"bt": 3, "bs": "64x16", "sl": 64, "coarsen": 2})
    assert outlined_calls.parse_case("4:float") == (4, "float", {})
