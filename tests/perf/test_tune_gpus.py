"""``an5d tune --gpus N`` on the CPU: the ranking is the model of a run over N GPUs
(perf/multi.py) over the one-GPU model's best plans, as the default plan of
``an5d-translate --gpus N`` is chosen; the result and cache know the GPU count; the
command's errors (fewer GPUs visible than asked for a measurement, a grid too thin for
any plan's slabs) and its reproducing line."""

from __future__ import annotations

import json
import os

import pytest

from an5dpy.check.reference import resolve_params
from an5dpy.driver import load
from an5dpy.errors import UsageError
from an5dpy.perf.choice import SLAB_CANDIDATES, default_plan
from an5dpy.perf.gpus import get_gpu
from an5dpy.perf.model import Model
from an5dpy.perf.multi import predict_slabs
from an5dpy.perf.tune import (TuneResult, cache_key, candidate_plans, rank_over_gpus,
                              result_from_json, tune)

from cli_support import run
from paths import C_INPUTS

H200 = get_gpu("H200")


def bench(name: str, size: int, steps: int, dtype: str = "float"):
    program, info = load(os.path.join(C_INPUTS, name + ".c"), (("SB_TYPE", dtype),))
    return info, resolve_params(program, {"compsize": size, "timestep": steps})


@pytest.mark.parametrize("name, size", [("j2d5pt", 8192), ("star3d1r", 384)])
def test_the_ranking_over_gpus_is_the_slab_model_of_the_one_gpu_best(name, size):
    info, env = bench(name, size, 200)
    plans = candidate_plans(info, H200)
    ranking = rank_over_gpus(info, H200, env, 2, plans)
    one = Model(info, H200, env).rank(plans)[:SLAB_CANDIDATES]
    assert {p for p, _ in ranking} == {p.plan for p in one}
    rates = [g for _, g in ranking]
    assert rates == sorted(rates, reverse=True)
    by_plan = {p.plan: p for p in one}
    for plan, rate in ranking:
        slabs = predict_slabs(info, plan, H200, env, 2, by_plan[plan].registers)
        assert rate == pytest.approx(slabs.gflops)
    # the plan an5d-translate --gpus 2 chooses is the ranking's first
    assert default_plan(info, H200, env, gpus=2).plan == ranking[0][0]
    # halos grow with bT: the exchange and the halo work rank the plans differently
    assert [p for p, _ in ranking] != [p.plan for p in one]


def test_plans_whose_slabs_are_too_thin_are_left_out():
    info, env = bench("j2d5pt", 64, 20)  # 64 interior planes: 4 slabs need halos <= 16
    plans = candidate_plans(info, H200)
    four = rank_over_gpus(info, H200, env, 4, plans)
    assert four and all(p.bt + 1 <= 16 for p, _ in four)  # halo: the edge plane + bT
    assert len(four) < len(rank_over_gpus(info, H200, env, 2, plans)) == SLAB_CANDIDATES
    with pytest.raises(UsageError, match="cannot be cut into 32 slabs"):
        tune(info, H200, env, "j2d5pt", measure=False, gpus=32)


def test_model_only_tuning_over_gpus_and_its_json():
    info, env = bench("star2d1r", 4096, 100)
    result = tune(info, H200, env, "star2d1r", measure=False, gpus=2, ranked=8)
    assert result.gpus == 2 and len(result.ranking) == 8
    assert result.ranking == tuple(rank_over_gpus(info, H200, env, 2,
                                                  candidate_plans(info, H200))[:8])
    back = result_from_json(info, json.loads(json.dumps(result.to_json())))
    assert back.gpus == 2 and back.ranking == result.ranking
    older = result.to_json()
    del older["gpus"]  # a cache entry written before the field existed: one GPU
    assert result_from_json(info, older).gpus == 1
    assert TuneResult("H200", {}, 1, ()).gpus == 1


def test_the_cache_key_depends_on_the_gpu_count():
    info, env = bench("j2d5pt", 1024, 10)
    one = cache_key(info, "float", "H200", env, 5, (None,), None)
    assert one == cache_key(info, "float", "H200", env, 5, (None,), None, gpus=1)
    assert one != cache_key(info, "float", "H200", env, 5, (None,), None, gpus=2)
    assert cache_key(info, "float", "H200", env, 5, (None,), None, gpus=2) != \
        cache_key(info, "float", "H200", env, 5, (None,), None, gpus=4)


# --------------------------------------------------------------------------- command line

J2D5PT = os.path.join(C_INPUTS, "j2d5pt.c")
BASE = ["tune", J2D5PT, "--dtype", "float", "--gpu", "H200", "--size", "8192", "--steps",
        "200"]


def test_cli_tune_gpus_model_only(capsys):
    status, out, err = run(capsys, *BASE, "--gpus", "2", "--top", "3")
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"{J2D5PT} on 2 x H200: ")
    assert lines[1].startswith("model ranking on 2 GPUs (predicted GFLOP/s of the whole run")
    info, env = bench("j2d5pt", 8192, 200)
    best = default_plan(info, H200, env, gpus=2).plan
    assert f"bt={best.bt} " in lines[2]
    assert lines[-1].startswith("best predicted:") and lines[-1].endswith(" --gpus 2")
    status, out, _ = run(capsys, *BASE, "--gpus", "2", "--top", "3", "--json")
    data = json.loads(out)
    assert status == 0 and data["gpus"] == 2 and data["ranking"][0]["bt"] == best.bt


def test_cli_tune_gpus_reproduces_without_gpus_where_the_host_code_runs_one(capsys):
    wave = os.path.join(C_INPUTS, "wave2d.c")
    status, out, err = run(capsys, "tune", wave, "--dtype", "double", "--gpu", "H200",
                           "--size", "2048", "--steps", "50", "--gpus", "2", "--top", "2")
    assert status == 0, err
    assert out.splitlines()[-1].startswith("best predicted:") and "--gpus" not in out.splitlines()[-1]


def test_cli_tune_gpus_errors(capsys, monkeypatch):
    from an5dpy.cli import tune as tune_cli
    from an5dpy.cuda import runtime
    status, _, err = run(capsys, *BASE, "--gpus", "2", "--measure", "2")
    ok, _ = runtime.cupy_available()
    if not ok:  # no GPU here: the measurement needs one first
        assert status == 2 and "--measure needs a GPU with cupy" in err
    monkeypatch.setattr(runtime, "cupy_available", lambda: (True, ""))
    monkeypatch.setattr(tune_cli, "visible_devices", lambda: 1)
    status, out, err = run(capsys, *BASE, "--gpus", "2", "--measure", "2")
    assert status == 2 and out == ""
    assert "--gpus 2 --measure: 1 GPU(s) visible" in err
    status, _, err = run(capsys, *BASE, "--gpus", "0")
    assert status == 2 and "--gpus" in err
    status, out, err = run(capsys, "tune", J2D5PT, "--dtype", "float", "--gpu", "H200",
                           "--size", "12", "--steps", "10", "--gpus", "12")
    assert status == 2 and "cannot be cut into 12 slabs" in err
