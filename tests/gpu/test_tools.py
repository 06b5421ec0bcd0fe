"""`an5d bench` and `an5d tune --measure` on the GPU (pytest -m gpu; skipped without one).

Only what the tools report is checked, never how fast anything is: speeds belong to the
benchmarks in scripts/ and artifact/.
"""

from __future__ import annotations

import json
import os

import pytest

from an5dpy.cli.main import main

pytestmark = pytest.mark.gpu

C_INPUTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "c_inputs")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AN5D_CACHE_DIR", str(tmp_path / "cache"))


def test_bench_times_the_plan_sconf_and_the_naive_baseline(capsys):
    j2d = os.path.join(C_INPUTS, "j2d5pt.c")
    assert main(["bench", j2d, "--dtype", "float", "--bt", "3", "--bs", "128", "--sl", "128",
                 "--size", "1000", "--steps", "37", "--regs", "32", "--sconf", "--naive",
                 "--repeats", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    labels = [r["label"] for r in report["results"]]
    assert labels[0].startswith("bt=3 bs=128 sl=128") and labels[1].startswith("Sconf")
    assert labels[2] == "naive"
    assert report["params"]["compsize"] == 1000 and report["params"]["timestep"] == 37
    for r in report["results"]:
        assert len(r["times"]) == 3 and r["median_s"] == sorted(r["times"])[1]
        # GFLOP/s as the harness counts: cells x FLOP/cell x steps / time
        assert r["gflops"] == pytest.approx(1000 * 1000 * 10 * 37 / r["median_s"] / 1e9)
    assert report["results"][0]["regs"] <= 32


def test_tune_measures_the_diverse_candidates_and_caches_the_result(capsys):
    from an5dpy.driver import load
    from an5dpy.perf.gpus import get_gpu
    from an5dpy.check.reference import resolve_params
    from an5dpy.cuda.runtime import device_name
    from an5dpy.blocking.plan import budget_register_limit
    from an5dpy.perf.model import Model
    from an5dpy.perf.tune import (FINALISTS, balanced_stream_plans, candidate_plans,
                                  neighbour_plans, paper_ranking, rank, tune,
                                  tuning_candidates, variant_plans)

    program, info = load(os.path.join(C_INPUTS, "star2d1r.c"), (("SB_TYPE", "float"),))
    env = resolve_params(program, {"compsize": 2000, "timestep": 40})
    gpu = get_gpu(device_name())
    result = tune(info, gpu, env, "star2d1r", top=2, caps=(None, 32), measure_steps=12,
                  repeats=3, progress=False)
    plans = candidate_plans(info, gpu)
    ranking = rank(info, gpu, env, plans)
    expected = tuning_candidates(ranking, paper_ranking(info, gpu, env, plans, ranking), 2,
                                 variant_plans(info, ranking[0][0]))
    plans = {m.plan for m in result.measured}
    assert plans >= set(expected)  # every candidate was built and timed
    # and the neighbours of some of the fastest, and the fastest build's other stream
    # lengths: each extra plan is one of them
    model = Model(info, gpu, env)
    nearby = {n for m in result.measured for n in neighbour_plans(info, m.plan)}
    nearby |= {n for m in result.measured
               for n in balanced_stream_plans(info, model, m.plan, m.cap)}
    assert plans - set(expected) <= nearby, [p.describe() for p in plans - set(expected)
                                             - nearby]
    # the model's best plan coarsened too, and with one barrier per step
    assert any(p.coarsen > 1 for p in plans)
    assert any(p.barriers.value == "step" for p in plans)
    for m in result.measured:
        assert m.gflops > 0 and m.registers is not None
        if m.cap is not None:  # a budget is only tried where it binds
            assert m.registers <= budget_register_limit(m.cap, m.plan.nthreads)
            uncapped = next(u for u in result.measured if u.plan == m.plan and u.cap is None)
            assert uncapped.registers > m.cap
    assert result.best == max(result.measured, key=lambda m: m.gflops)
    assert result.measure_steps == 12 and result.steps == 40
    # the cache answers the same question without measuring again
    again = tune(info, gpu, env, "star2d1r", top=2, caps=(None, 32), measure_steps=12,
                 repeats=3, progress=False)
    assert again.to_json() == result.to_json()
    assert len(result.measured) > FINALISTS


def test_tune_builds_each_plan_with_the_models_best_budget_that_binds_alone():
    from an5dpy.driver import load
    from an5dpy.perf.gpus import get_gpu
    from an5dpy.perf.model import Model
    from an5dpy.check.reference import resolve_params
    from an5dpy.cuda.runtime import device_name
    from an5dpy.perf.tune import CAPS, predicted_gflops, tune

    program, info = load(os.path.join(C_INPUTS, "star2d2r.c"), (("SB_TYPE", "float"),))
    env = resolve_params(program, {"compsize": 2000, "timestep": 40})
    gpu = get_gpu(device_name())
    result = tune(info, gpu, env, "star2d2r", top=4, caps=CAPS, measure_steps=12,
                  repeats=1, progress=False, diverse=False, use_cache=False)
    model = Model(info, gpu, env)
    budgeted = 0
    for plan in {m.plan for m in result.measured}:
        natural = next(m.registers for m in result.measured
                       if m.plan == plan and m.cap is None)
        caps = [m.cap for m in result.measured if m.plan == plan and m.cap is not None]
        binding = [c for c in CAPS if c is not None and natural > c]
        assert len(caps) == (1 if binding else 0)
        if binding:
            budgeted += 1
            assert caps[0] == max(binding, key=lambda c: predicted_gflops(model, plan, c))
    assert budgeted  # some plan of star2d2r needs more than 32 registers without a budget


def test_tune_command_reports_how_to_reproduce_the_best(capsys):
    j2d = os.path.join(C_INPUTS, "j2d5pt.c")
    assert main(["tune", j2d, "--dtype", "float", "--size", "1500", "--steps", "20",
                 "--measure", "2", "--narrow", "--caps", "none,32", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "measured (GFLOP/s):" in out and "best: bt=" in out
    assert "an5d-translate" in out and "--bt" in out
