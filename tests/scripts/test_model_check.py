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


def test_budgets_keeps_the_unbudgeted_build_and_the_models_best_budget(model_check, tmp_path,
                                                                       capsys):
    from an5dpy.blocking.plan import make_plan
    from an5dpy.perf.tune import predicted_gflops
    gpu = get_gpu("H200")
    program, info = load(os.path.join(REPO, "c_inputs", "j2d5pt.c"), (("SB_TYPE", "float"),))
    model = Model(info, gpu, paper_env(program, info))
    plan = make_plan(info, bt=8, bs=(512,), sl=256)
    preferred = max((32, 64, 96), key=lambda c: predicted_gflops(model, plan, c))
    other = next(c for c in (32, 64, 96) if c != preferred)

    def row(fastest_cap):
        measured = [{"describe": plan.describe(), "plan": plan.to_json(), "cap": cap,
                     "gflops": 2000.0 if cap == fastest_cap else 1000.0}
                    for cap in (None, 32, 64, 96)]
        return {"stencil": "j2d5pt", "dtype": "float", "gpu": "H200", "measured": measured}

    kept = model_check.check_budgets(row(preferred), gpu)
    assert kept["fastest_kept"] and (kept["kept"], kept["builds"]) == (2, 4)
    missed = model_check.check_budgets(row(other), gpu)
    assert not missed["fastest_kept"] and missed["kept_over_fastest"] == 0.5
    assert missed["plan_ratios"] == [0.5]
    (tmp_path / "rows.jsonl").write_text(json.dumps(row(None)) + "\n")
    assert model_check.main([str(tmp_path), "--budgets"]) == 0
    assert ("hold the fastest build on 1/1 rows, with 2 of 4 builds"
            in capsys.readouterr().out)
