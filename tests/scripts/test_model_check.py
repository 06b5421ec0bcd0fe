"""scripts/model_check.py: the model's ranking against measured artifact rows, on the CPU."""

from __future__ import annotations

import json
import os

import pytest
from script_support import load_script

from an5dpy.perf.bench import paper_env
from an5dpy.driver import load
from an5dpy.perf.gpus import get_gpu
from an5dpy.perf.model import Model
from an5dpy.perf.tune import candidate_plans

from paths import REPO


@pytest.fixture(scope="module")
def model_check():
    return load_script("model_check")


def fake_row(measured_as):
    """A j2d5pt float row whose measured plans are the model's 8 best, measured at
    ``measured_as(rank, predicted)`` GFLOP/s."""
    gpu = get_gpu("H200")
    program, info = load(os.path.join(REPO, "c_inputs", "j2d5pt.c"), (("SB_TYPE", "float"),))
    env = paper_env(program, info)
    ranked = Model(info, gpu, env).rank(candidate_plans(info, gpu))[:8]
    measured = [{"describe": p.plan.describe(), "cap": p.registers, "registers": None,
                 "gflops": measured_as(k, p.gflops)} for k, p in enumerate(ranked)]
    best = max(measured, key=lambda m: m["gflops"])
    return {"stencil": "j2d5pt", "dtype": "float", "gpu": "H200", "best": best,
            "measured": measured}


def test_a_model_that_predicts_the_measurements_ranks_them_perfectly(model_check):
    row = fake_row(lambda k, predicted: predicted)
    result = model_check.check_row(row, get_gpu("H200"))
    assert result["model"] == {"top5": True, "unmeasured": 0, "measured_top5": True}
    assert result["accuracy"] == pytest.approx(1.0)
    lines = model_check.summary([result])
    assert lines[0].startswith("model: fastest in its top 5 on 1/1 rows (0 of 5")
    assert "accuracy (tuned / model), geomean: 1.000" in lines[-1]


def test_a_fastest_plan_the_model_ranks_last_is_a_miss(model_check, tmp_path, capsys):
    # the model's 8th plan measured fastest: outside its top 5 overall and among the
    # measured plans
    row = fake_row(lambda k, predicted: predicted * (3 if k == 7 else 1))
    result = model_check.check_row(row, get_gpu("H200"))
    assert not result["model"]["top5"] and not result["model"]["measured_top5"]
    assert result["accuracy"] == pytest.approx(3.0)
    (tmp_path / "rows.jsonl").write_text(json.dumps(row) + "\n")
    assert model_check.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "model: fastest in its top 5 on 0/1 rows" in out
    assert model_check.main([str(tmp_path), "--rows", "star3d1r/float"]) == 2
