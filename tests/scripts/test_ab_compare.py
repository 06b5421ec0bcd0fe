"""scripts/ab_compare.py without a GPU: a case's spelling, the kernels --write has a
checkout write (this one here), the plan the timing side rebuilds from the same case, the
comparison of the two generations' results, the table, and --old's run with a faked GPU;
and scripts/variants_compare.py's --extra plans and its run with a faked GPU."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from paths import REPO
from script_support import fake_gpu, load_script

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


def test_a_case_whose_computing_threads_load_the_halo(tmp_path):
    case = "star3d4r float bt=1 bs=72x24 sl=off coarsen=4 halo=loaded"
    folder = ab_compare.write_case(case, str(tmp_path), REPO)
    kernel = open(os.path.join(folder, "star3d4r_kernel.cu")).read()
    _, info, plan, regs = ab_compare.plan_of(case)
    assert plan.halo_loaded and regs is None and plan.describe() in kernel
    from an5dpy.driver import generate
    assert generate(info, plan, "star3d4r").files()["star3d4r_kernel.cu"] == kernel


def test_the_table_gives_each_cases_best_runs_their_ratio_and_whether_the_results_agree():
    row = {"case": CASE, "old": [100.0, 120.0], "new": [150.0, 140.0], "ratio": 150 / 120,
           "registers": {"old": (128, True), "new": (96, False)}, "results": "close"}
    line = ab_compare.render([row]).splitlines()[-1]
    assert line == f"| {CASE} | 120 | 150 | 1.250 | 128 (spills), 96 | close |"


def test_two_generations_results_agree_bit_for_bit_or_within_rounding():
    rng = np.random.default_rng(7)
    for dtype, tolerance in (("float", 1e-4), ("double", 1e-10)):
        a = rng.random((3, 5, 7)).astype(np.float32 if dtype == "float" else np.float64)
        a[1, 2, 3] = np.nan
        assert ab_compare.agreement(a, a.copy(), dtype) == "same"
        rounded = a.copy()
        rounded[0, 0, 0] += tolerance / 4  # within rounding of the values (< 1)
        assert ab_compare.agreement(a, rounded, dtype) == "close"
        far = a.copy()
        far[2, 4, 6] += tolerance * 4
        assert ab_compare.agreement(a, far, dtype) == "WRONG"
        moved = a.copy()
        moved[1, 2, 3], moved[0, 1, 1] = 0.5, np.nan  # a NaN at another cell
        assert ab_compare.agreement(a, moved, dtype) == "WRONG"
        assert ab_compare.agreement(a, a[:2], dtype) == "WRONG"
    # the tolerance is relative (to the cell's value, or the grid's mean magnitude)
    big = np.full(4, 1e6, np.float32)
    assert ab_compare.agreement(big, big + np.float32(64), "float") == "close"


def test_the_comparison_runs_checks_and_times_both_generations_with_a_fake_gpu(
        tmp_path, monkeypatch, capsys):
    """--old's own work without a GPU: both generations built by nvcc for real, the runner
    and the timing faked; an old generation whose result differs is WRONG, exit status 1."""
    import an5dpy.cuda.runtime as runtime
    if runtime.nvcc_path() is None:
        pytest.skip("nvcc is not installed")
    artifact = load_script("artifact")  # the module --old imports
    case = "star2d1r float bt=2 bs=256 sl=64"
    old = str(tmp_path / "old")
    assert ab_compare.main(["--write", old, case]) == 0

    def fake_runner(perturb):
        class FakeRunner:
            def __init__(self, info, plan, cubin, prefix, signature):
                self.old = cubin.path.startswith(old)

            def run(self, grid, env, read_only):
                grid += 1
                if self.old and perturb:
                    grid[0, 0] += 1
        return FakeRunner

    def fake_time(bench, info, plan, built, env):
        return (90.0 if built[1].path.startswith(old) else 100.0), 0.1, 20, 32, False

    monkeypatch.setattr(runtime, "device_arch", lambda: "sm_90")
    monkeypatch.setattr(runtime, "device_name", lambda: "NVIDIA H200")
    monkeypatch.setattr(artifact.Bench, "grid",
                        lambda bench, info, env, dtype: (np.ones((4, 4), np.float32), ()))
    monkeypatch.setattr(artifact.Bench, "time", fake_time)
    for perturb, results, status in ((False, "same", 0), (True, "WRONG", 1)):
        monkeypatch.setattr(runtime, "CupyRunner", fake_runner(perturb))
        jsonl = str(tmp_path / f"rows-{perturb}.jsonl")
        capsys.readouterr()
        assert ab_compare.main(["--old", old, case, "--repeats", "2", "--out", jsonl]) == status
        with open(jsonl) as f:
            (row,) = [json.loads(line) for line in f]
        assert (row["old"], row["new"], row["results"]) == ([90.0] * 2, [100.0] * 2, results)
        assert capsys.readouterr().out.rstrip().splitlines()[-1] == (
            f"| {case} | 90 | 100 | 1.111 | 32, 32 | {results} |")


def test_variants_compare_extra_and_balanced_plans_take_the_tuned_plans_other_options():
    from an5dpy.driver import blocking_plan, load
    _, info = load(os.path.join(REPO, "c_inputs", "star2d1r.c"), (("SB_TYPE", "float"),))
    tuned = blocking_plan(info, 14, bs=(256,), sl=256, barriers="step")
    extra = variants_compare.extra_plans(
        info, tuned, ["bt=8 bs=1024 coarsen=4", "coarsen=3", "bt=200"])
    assert [p.describe() for p in extra] == [
        "bt=8 bs=1024 sl=256 coarsen=4 barriers=step opt=nondiag dtype=float"]
    assert variants_compare.kind_of(extra[0], extra) == variants_compare.EXTRA
    # the tuned plan at another stream length is balanced, whatever the plan's own kind
    # (this one has one barrier per step)
    balanced = blocking_plan(info, 14, bs=(256,), sl=309, barriers="step")
    assert variants_compare.kind_of(tuned) == "barriers"
    assert variants_compare.kind_of(balanced, extra, [balanced]) == variants_compare.BALANCED
    assert variants_compare.variants(info, tuned, ["balanced"]) == []  # not a tuner variant
    # and with one block side between the powers of two, of the kind tiles
    tile = blocking_plan(info, 14, bs=(384,), sl=256, barriers="step")
    assert variants_compare.kind_of(tile, extra, [balanced], [tile]) == variants_compare.TILES
    assert variants_compare.variants(info, tuned, ["tiles"]) == []
    # without a base plan (an ab_compare case): no stream division unless given, one cell
    # per thread and a barrier per level
    alone = variants_compare.settings_plan(info, {"bt": "2", "bs": "256", "sl": "off"})
    assert (alone.sl, alone.coarsen, alone.barriers.value) == (None, 1, "level")
    assert variants_compare.settings_plan(info, {"bt": "2", "bs": "256"}).sl is None


def test_variants_compare_measures_the_balanced_lengths_and_tiles_of_a_row_with_a_fake_gpu(
        tmp_path, monkeypatch, capsys):
    import sys
    from an5dpy.perf.gpus import get_gpu
    from an5dpy.perf.tune import balanced_stream_plans, plan_from_json, tile_plans
    artifact = sys.modules.get("artifact") or load_script("artifact")
    with open(os.path.join(REPO, "artifact", "H200", "rows.jsonl")) as f:
        row = next(r for r in map(json.loads, f)
                   if (r["stencil"], r["dtype"]) == ("star3d1r", "double"))
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(row) + "\n")

    def rate(plan):  # the tiles fastest, then the balanced lengths, then the tuned plan
        return 1000.0 + 200 * (plan.bs != tuned.bs) + 100 * (plan.sl != tuned.sl)

    fake_gpu(monkeypatch, artifact, lambda self, info, plan, *a, **k: (
        rate(plan), 0.2, 100, 40, False))
    info, _, model, _, _ = artifact.row_context(row, get_gpu("H200"))
    tuned = plan_from_json(info, row["best"]["plan"])
    out = tmp_path / "out"
    assert variants_compare.main(["--rows", str(rows), "--kinds", "balanced,tiles",
                                  "--out", str(out)]) == 0
    (result,) = [json.loads(line) for line in (out / "variants.jsonl").read_text().splitlines()]
    measured = {m["describe"] for m in result["measured"]}
    lengths = balanced_stream_plans(info, model, tuned, row["best"]["cap"])
    tiles = tile_plans(info, tuned)
    assert lengths and tiles
    assert measured == {p.describe() for p in (tuned, *lengths, *tiles)}
    # each screened at its rate; the finalists (the three fastest builds) are tiles
    assert {m["gflops"] for m in result["measured"]
            if m["describe"] in {p.describe() for p in lengths}} == {1100.0}
    assert set(result["best"]) == {"tiles"} and result["best"]["tiles"]["gflops"] == 1200.0
    assert result["tuned"]["gflops"] == 1000.0  # its own reported run
    table = (out / "variants.md").read_text()
    assert table.splitlines()[-1].endswith("| 1.200 |")
