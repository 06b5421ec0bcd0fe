"""scripts/artifact.py without a GPU: what the table says about the model's top 5."""

from __future__ import annotations

import pytest
from script_support import load_script


@pytest.fixture(scope="module")
def artifact():
    return load_script("artifact")


def row(best, measured, top5):
    return {"best": {"describe": best, "gflops": dict(measured)[best]},
            "measured": [{"describe": d, "gflops": g} for d, g in measured],
            "model_top5": top5}


def test_top5_fraction_is_the_fastest_measured_plan_of_the_top5_over_the_tuned_one(artifact):
    # "b" was measured twice (two register budgets): its faster run counts
    measured = [("a", 100.0), ("b", 80.0), ("b", 90.0), ("c", 50.0)]
    assert artifact.model_top5_fraction(row("a", measured, ["b", "c", "x"])) == 0.9
    assert artifact.model_top5_fraction(row("a", measured, ["c", "a"])) == 1.0


def test_top5_fraction_is_unknown_where_no_plan_of_the_top5_was_measured(artifact):
    measured = [("a", 100.0)]
    assert artifact.model_top5_fraction(row("a", measured, ["x", "y"])) is None
    assert artifact.model_top5_fraction({"best": {"describe": "a", "gflops": 1.0},
                                         "measured": []}) is None
