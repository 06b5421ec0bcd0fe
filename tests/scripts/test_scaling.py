"""scripts/scaling.py without a GPU: the cases and their sizes, efficiencies and targets,
step counts, the artifact folder, the grid values (the same in any chunking, from any
first plane, exact in float), the rectangular sources against the benchmarks (gcc), the
plan choice, and the outputs (csv, markdown, png)."""

from __future__ import annotations

import csv
import os

import numpy as np
import pytest

from paths import C_INPUTS
from script_support import load_script

from an5dpy.api import bind
from an5dpy.check.reference import build_reference, resolve_params
from an5dpy.driver import load

scaling = load_script("scaling")

GB = 1e9


def test_cases_and_their_grids():
    by = {c.name: c for c in scaling.CASES}
    assert by["j2d5pt-strong"].grid_shape(4) == (2, 32770, 32770)
    assert by["star3d1r-strong"].grid_shape(2) == (2, 1026, 1026, 1026)
    assert by["j2d5pt-weak"].grid_shape(2) == (2, 32770, 32770)  # 16384 rows per GPU
    assert by["star3d1r-weak"].grid_shape(4) == (2, 2050, 1026, 1026)
    assert scaling.strong_case("star3d1r") is by["star3d1r-strong"]
    # every run fits an 80 GB GPU with room to spare: the largest one-GPU share
    for case in scaling.CASES:
        for gpus in (1, 2, 4):
            shape = case.grid_shape(gpus)
            assert 4 * np.prod(shape, dtype=np.int64) / gpus < 0.15 * 80 * GB


def test_efficiency_and_targets():
    assert scaling.efficiency("strong", 2.0, 1.25, 2) == pytest.approx(0.8)
    assert scaling.efficiency("weak", 2.0, 2.5, 4) == pytest.approx(0.8)
    assert scaling.target("strong", 2, 2) == 0.90 and scaling.target("strong", 3, 2) == 0.80
    assert scaling.target("strong", 2, 4) == 0.80 and scaling.target("strong", 3, 4) == 0.70
    assert scaling.target("weak", 3, 4) == 0.95 == scaling.target("weak", 2, 2)
    assert scaling.target("strong", 2, 1) is None and scaling.target("strong", 2, 8) is None


def test_step_counts_are_even_numbers_of_full_launches():
    assert scaling.steps_for(0.6e-3, 1.5, 14) == 2492  # 89 x 28, about 1.5 s
    assert scaling.steps_for(1.0, 1.5, 4) == 8  # at least two launches
    assert scaling.calibration_steps(14) == 84 and scaling.calibration_steps(4) == 64
    for bt in (1, 3, 4, 14):
        assert scaling.steps_for(2e-3, 1.5, bt) % (2 * bt) == 0


def test_gpu_counts_and_artifact_folder():
    assert scaling.default_gpu_counts(1) == (1,)
    assert scaling.default_gpu_counts(3) == (1, 2)
    assert scaling.default_gpu_counts(8) == (1, 2, 4, 8)
    assert scaling.artifact_dir("NVIDIA H200", 2).endswith(os.path.join("artifact", "H200x2"))
    assert scaling.artifact_dir("NVIDIA H100 80GB HBM3", 4).endswith("H100x4")
    assert scaling.artifact_dir("NVIDIA GeForce RTX 4090", 1).endswith("GeForceRTX4090x1")


def test_cell_values_are_a_function_of_the_global_index():
    whole = np.empty((2, 9, 5, 7), np.float32)
    scaling.fill_planes(np, whole, 0)
    assert whole.min() >= 0.5 and whole.max() < 1.5
    assert len(np.unique(whole)) == whole.size  # no two cells alike here
    assert np.all((whole.astype(np.float64) - 0.5) * 2 ** 23 % 1 == 0)  # exact in float
    part = np.empty((2, 4, 5, 7), np.float32)
    scaling.fill_planes(np, part, 3)  # a slab starting at plane 3
    assert np.array_equal(part, whole[:, 3:7])
    double = np.empty(whole.shape, np.float64)
    scaling.fill_planes(np, double, 0)
    assert np.array_equal(double, whole)


def test_filling_in_chunks_changes_nothing(monkeypatch):
    whole = np.empty((2, 9, 6, 5), np.float32)
    scaling.fill_planes(np, whole, 11)
    monkeypatch.setattr(scaling, "CHUNK_CELLS", 45)  # one plane and a half per chunk
    chunked = np.empty_like(whole)
    scaling.fill_planes(np, chunked, 11)
    assert np.array_equal(chunked, whole)
    flat = np.empty((2, 9, 6), np.float32)  # 2D: the buffers differ, the planes too
    scaling.fill_planes(np, flat, 0)
    assert not np.array_equal(flat[0], flat[1]) and len(np.unique(flat)) == flat.size


@pytest.mark.parametrize("name, size", [("j2d5pt", 11), ("star3d1r", 6)])
def test_the_sources_compute_what_the_benchmarks_compute(name, size):
    """The rectangular sources hold the benchmarks' updates: gcc gives the same bits."""
    defines = (("SB_TYPE", "float"),)
    bench_program, bench_info = load(os.path.join(C_INPUTS, f"{name}.c"), defines)
    rect_program, rect_info = load(f"{name}.c", defines, text=scaling.SOURCES[name])
    assert rect_info.flops_per_cell == bench_info.flops_per_cell
    shape = (2, *(size + 2,) * bench_info.ndim)
    grid = np.empty(shape, np.float32)
    scaling.fill_planes(np, grid, 0)
    want, got = grid.copy(), grid.copy()
    build_reference(bench_program).run(
        want, resolve_params(bench_program, {"compsize": size, "timestep": 5}))
    build_reference(rect_program).run(got, bind(rect_info, shape, 5, {}))
    assert np.array_equal(got, want)


def test_the_plan_is_the_models_for_the_one_gpu_problem_or_the_options():
    stencil = scaling.translate("j2d5pt", scaling.plan_options(None, None, None),
                                scaling.strong_case("j2d5pt").grid_shape(1))
    assert "32768^2" in stencil.translation.choice.sizes
    given = scaling.translate("star3d1r", scaling.plan_options(2, "32x32", "off"),
                              (2, 66, 66, 66))
    assert (given.plan.bt, given.plan.bs, given.plan.sl) == (2, (32, 32), None)
    assert scaling.plan_summary(given).startswith("bt=2 bs=32x32 sl=off")


def test_the_models_efficiency():
    case = scaling.strong_case("star3d1r")
    stencil = scaling.translate("star3d1r", scaling.plan_options(4, "32x32", 128),
                                case.grid_shape(1))
    assert scaling.model_efficiency(stencil, case, 1, 64) is None
    assert 0.5 < scaling.model_efficiency(stencil, case, 2, 64) < 1.0


def rows():
    r = scaling.Row
    base = dict(stencil="j2d5pt", dtype="float", plan="bt=4", steps=8, launches=2)
    return [r(case="a-strong", kind="strong", gpus=1, interior="64x64", halo=0, seconds=2.0,
              gflops=1.0, compute_s=2.0, exchange_s=0.0, **base),
            r(case="a-strong", kind="strong", gpus=2, interior="64x64", halo=5, seconds=1.0,
              gflops=2.0, compute_s=0.9, exchange_s=0.1, model_efficiency=0.97, **base),
            r(case="b-weak", kind="weak", gpus=1, interior="32x32x32", halo=0, seconds=2.0,
              gflops=1.0, compute_s=2.0, exchange_s=0.0, **base),
            r(case="b-weak", kind="weak", gpus=2, interior="64x32x32", halo=5, seconds=2.5,
              gflops=1.6, compute_s=2.0, exchange_s=0.5, **base)]


def test_outputs(tmp_path):
    out = scaling.with_efficiencies(rows())
    assert [r.efficiency for r in out] == [1.0, 1.0, 1.0, 0.8]
    assert [r.target for r in out] == [None, 0.90, None, 0.95]
    assert [r.verdict for r in out] == ["", "met", "", "MISSED"]
    assert out[3].exchange_share == pytest.approx(0.2)
    scaling.write_csv(out, tmp_path / "scaling.csv")
    with open(tmp_path / "scaling.csv") as f:
        read = list(csv.DictReader(f))
    assert [r["verdict"] for r in read] == ["", "met", "", "MISSED"]
    assert read[1]["model_efficiency"] == "0.97" and read[0]["efficiency"] == "1.0"
    text = scaling.markdown(out, "NVIDIA H200", 2, ["a note"])
    assert text.startswith("# Scaling over 2 x NVIDIA H200")
    assert "| b-weak | 2 | 64x32x32 | bt=4 | 8 | 2.500 | 2 | 0.800 | >= 0.95 (MISSED) | - | " \
           "2.000 | 0.500 | 20.0% | 5 |" in text
    assert text.rstrip().endswith("* a note")
    pytest.importorskip("matplotlib")
    assert scaling.plot(out, str(tmp_path / "scaling.png"), "2 x H200") is None
    assert (tmp_path / "scaling.png").read_bytes()[:4] == b"\x89PNG"


def test_a_case_list_is_checked():
    assert scaling.parse_list("j2d5pt-weak", scaling.CASE_NAMES) == ("j2d5pt-weak",)
    assert scaling.parse_list("1,2", kind=int) == (1, 2)
    with pytest.raises(SystemExit, match="unknown case 'j2d5pt'"):
        scaling.parse_list("j2d5pt", scaling.CASE_NAMES)


TINY = (scaling.Case("j2d5pt-strong", "j2d5pt", "strong", (40, 24)),
        scaling.Case("star3d1r-weak", "star3d1r", "weak", (12, 10, 9)),
        scaling.Case("star3d1r-strong", "star3d1r", "strong", (24, 10, 9)))


def test_a_dry_run_on_the_cpu(monkeypatch, tmp_path, capsys):
    """main() end to end with numpy as cupy and the simulator as the kernels
    (tests/numpy_gpus_support.py): every case on 1 and 2 GPUs, the outputs written."""
    import numpy_gpus_support
    numpy_gpus_support.install(monkeypatch)
    monkeypatch.setattr(scaling, "CASES", TINY)
    code = scaling.main(["--cases", "j2d5pt-strong,star3d1r-weak", "--steps", "4",
                         "--repeats", "2", "--bt", "2", "--out", str(tmp_path)])
    assert code == 0
    with open(tmp_path / "scaling.csv") as f:
        read = list(csv.DictReader(f))
    assert [(r["case"], r["gpus"], r["interior"]) for r in read] == [
        ("j2d5pt-strong", "1", "40x24"), ("j2d5pt-strong", "2", "40x24"),
        ("star3d1r-weak", "1", "12x10x9"), ("star3d1r-weak", "2", "24x10x9")]
    assert all(r["steps"] == "4" and r["launches"] == "2" for r in read)
    assert [r["halo"] for r in read] == ["0", "3", "0", "3"]
    # the stand-in runner times one "launch" per run, each event pair 1 ms apart
    assert float(read[1]["compute_s"]) == pytest.approx(1e-3)
    assert float(read[1]["exchange_s"]) == pytest.approx(1e-3)
    assert float(read[0]["exchange_s"]) == 0 and read[0]["compute_s"] == read[0]["seconds"]
    # the overlapped run beside it on two GPUs, with the model's choice; none on one
    assert read[0]["overlap_seconds"] == "" and read[0]["model_overlap"] == ""
    assert float(read[1]["overlap_seconds"]) > 0 and read[1]["model_overlap"] in ("True", "False")
    assert float(read[1]["overlap_exchange_s"]) == pytest.approx(1e-3)
    assert float(read[1]["overlap_efficiency"]) > 0
    assert read[1]["target"] == "0.9" and read[3]["target"] == "0.95"
    assert (tmp_path / "scaling.md").read_text().startswith("# Scaling over 2 x NVIDIA H200")
    assert (tmp_path / "scaling.png").exists() or "matplotlib" in capsys.readouterr().err


def test_a_dry_run_calibrates_and_keeps_to_its_minutes(monkeypatch, tmp_path):
    import numpy_gpus_support
    numpy_gpus_support.install(monkeypatch)
    monkeypatch.setattr(scaling, "CASES", TINY)
    monkeypatch.setattr(scaling, "TARGET_SECONDS", 1e-9)  # the shortest: one pair of launches
    assert scaling.main(["--cases", "star3d1r-strong", "--gpus", "2", "--bt", "3",
                         "--out", str(tmp_path)]) == 0
    with open(tmp_path / "scaling.csv") as f:
        assert [r["steps"] for r in csv.DictReader(f)] == ["6", "6"]  # 1 GPU added
    assert scaling.main(["--cases", "star3d1r-strong", "--minutes", "0",
                         "--out", str(tmp_path)]) == 0
    assert "skipped: past --minutes 0" in (tmp_path / "scaling.md").read_text()
    assert scaling.main(["--gpus", "4", "--out", str(tmp_path)]) == 2  # 2 visible
