"""scripts/model_fit.py: scoring the model's constants on measured rows, on the CPU."""

from __future__ import annotations

import json
import os

import pytest
from script_support import load_script

from an5dpy.perf import model as M
from an5dpy.perf.gpus import get_gpu

from paths import REPO
ROWS = os.path.join(REPO, "artifact", "H200", "rows.jsonl")


@pytest.fixture(scope="module")
def model_fit():
    return load_script("model_fit")


@pytest.fixture(scope="module")
def few_rows(tmp_path_factory):
    """Four rows of the H200 artifact (2D and 3D, float and double)."""
    keep = {("j2d5pt", "float"), ("box2d2r", "double"), ("star3d1r", "double"),
            ("box3d1r", "float")}
    rows = [r for r in map(json.loads, open(ROWS)) if (r["stencil"], r["dtype"]) in keep]
    folder = tmp_path_factory.mktemp("artifact")
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(folder)


def test_the_model_constants_score_as_model_check_ranks_the_measured_plans(model_fit,
                                                                          few_rows):
    model_check = load_script("model_check")
    gpu_name, rows = model_fit.load_rows(few_rows)
    gpu = get_gpu(gpu_name)
    current = model_fit.Setting(gpu.step_latency_cycles, M.EXPOSED_ISSUE,
                                M.SPILL_INSTRUCTIONS)
    expected = tuple(model_check.check_row(r, gpu)["model"]["measured_top5"]
                     for r in map(json.loads, open(os.path.join(few_rows, "rows.jsonl"))))
    assert model_fit.hits(rows, current, gpu) == expected


def test_settings_apply_while_scoring_and_are_restored(model_fit, few_rows):
    gpu_name, rows = model_fit.load_rows(few_rows)
    gpu = get_gpu(gpu_name)
    saved = M.EXPOSED_ISSUE, M.SPILL_INSTRUCTIONS
    odd = model_fit.Setting(50.0, 0.9, 11.0)
    with model_fit.constants(odd, gpu) as spec:
        assert (M.EXPOSED_ISSUE, M.SPILL_INSTRUCTIONS) == (0.9, 11.0)
        assert spec.step_latency_cycles == 50.0 and gpu.step_latency_cycles != 50.0
    assert (M.EXPOSED_ISSUE, M.SPILL_INSTRUCTIONS) == saved
    model_fit.hits(rows, odd, gpu)
    assert (M.EXPOSED_ISSUE, M.SPILL_INSTRUCTIONS) == saved


def test_cross_validation_fits_without_the_held_out_stencil(model_fit):
    def row(stencil):
        return model_fit.Row(stencil, stencil, None, {}, (), "")
    rows = [row("a"), row("a"), row("b"), row("c")]
    s1, s2 = model_fit.Setting(1, 0, 0), model_fit.Setting(2, 0, 0)
    # s1 hits a's two rows, s2 the rows of b and c. Held out, a is scored with s2 (best on
    # b + c: 0 hits on a); b and c with s1 (2 hits on a's rows against 1): 0 hits each
    scored = [(s1, (True, True, False, False)), (s2, (False, False, True, True))]
    total, folds = model_fit.cross_validate(rows, scored)
    assert folds == [("a", s2, 0, 2), ("b", s1, 0, 1), ("c", s1, 0, 1)]
    assert total == 0


def test_the_command_lists_settings_and_cross_validates(model_fit, few_rows, capsys):
    assert model_fit.main([few_rows, "--latency", "1200", "--exposed", "0.4",
                           "--spill", "3", "--cross-validate"]) == 0
    out = capsys.readouterr().out
    assert "4 rows of H200" in out and "(the model's constants)" in out
    assert "cross-validated" in out and out.count("held out") == 4


def test_an_empty_artifact_is_refused(model_fit, tmp_path):
    (tmp_path / "rows.jsonl").write_text("")
    assert model_fit.main([str(tmp_path)]) == 2
