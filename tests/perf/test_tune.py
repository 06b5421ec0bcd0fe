"""The tuner's CPU side: the search space, pruning, model ranking, step counts, cache."""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from an5dpy.driver import load
from an5dpy.errors import UsageError
from an5dpy.perf.gpus import get_gpu
from an5dpy.check.reference import resolve_params
from an5dpy.perf.tune import (SPACE, Measured, TuneResult, cache_key, candidate_plans, rank,
                         result_from_json, tune, with_steps)

from model_support import load_multi, star_fields
from paths import C_INPUTS, DATA
H200 = get_gpu("H200")


def bench(name, dtype="float"):
    program, info = load(os.path.join(C_INPUTS, name + ".c"), (("SB_TYPE", dtype),))
    size = 16384 if info.ndim == 2 else 512
    return program, info, resolve_params(program, {"compsize": size, "timestep": 1000})


def test_space_is_the_papers_extended_for_hopper():
    _, info, _ = bench("j2d5pt")
    plans = candidate_plans(info, H200)
    assert {p.bt for p in plans} == set(range(1, 17))
    assert {p.bs for p in plans} <= set(SPACE[2]["bs"])
    _, info3, _ = bench("star3d1r")
    plans3 = candidate_plans(info3, H200)
    assert max(p.bt for p in plans3) <= 8 and (16, 64) in {p.bs for p in plans3}


def test_pruning_removes_plans_over_the_limits():
    _, info, _ = bench("box3d4r", "double")
    plans = candidate_plans(info, H200)
    assert plans and all(p.bt == 1 for p in plans)  # bS - 2*bT*4 > 0 and registers
    for p in plans:
        assert p.register_estimate() <= 255
        assert p.register_estimate() * p.nthreads <= H200.regs_per_sm
        assert p.smem_bytes <= H200.smem_per_block


def test_ranking_is_by_the_model():
    _, info, env = bench("j2d5pt")
    ranked = rank(info, H200, env)
    values = [g for _, g in ranked]
    assert values == sorted(values, reverse=True) and len(ranked) > 100


def test_model_only_tuning_and_result_round_trip():
    _, info, env = bench("star2d1r")
    result = tune(info, H200, env, "star2d1r", measure=False)
    assert result.best is None and result.candidates > 0 and len(result.ranking) >= 5
    plan = result.ranking[0][0]
    measured = Measured(plan, 64, 1234.0, 0.5, 60, False, result.ranking[0][1])
    full = TuneResult(result.gpu, result.sizes, result.steps, result.ranking, (measured,),
                      result.candidates, 100)
    back = result_from_json(info, json.loads(json.dumps(full.to_json())))
    assert back.best.plan == plan and back.best.cap == 64 and back.measure_steps == 100


def test_with_steps_sets_the_step_parameter():
    _, info, env = bench("j2d5pt")
    short = with_steps(info, env, 37)
    assert info.time.steps(short) == 37 and short["dimsize"] == env["dimsize"]


def test_cache_key_depends_on_what_matters():
    _, info, env = bench("j2d5pt")
    k = cache_key(info, "float", "H200", env, 5, (None, 32), None)
    assert k == cache_key(info, "float", "H200", env, 5, (None, 32), None)
    assert k != cache_key(info, "float", "H100", env, 5, (None, 32), None)
    assert k != cache_key(info, "float", "H200", {**env, "timestep": 10}, 5, (None, 32), None)


def test_cache_key_changes_with_the_code_generator(monkeypatch):
    import an5dpy.perf.tune as tune
    _, info, env = bench("j2d5pt")
    key = cache_key(info, "float", "H200", env, 5, (None, 32), None)
    assert len(tune.generator_fingerprint()) == 64
    monkeypatch.setattr(tune, "generator_fingerprint", lambda: "other kernels")
    assert cache_key(info, "float", "H200", env, 5, (None, 32), None) != key


def test_gpu_commands_explain_what_they_need(capsys):
    from an5dpy.cli.main import main
    from an5dpy.cuda.runtime import cupy_available
    if cupy_available()[0]:
        pytest.skip("a GPU is present")
    j2d = os.path.join(C_INPUTS, "j2d5pt.c")
    assert main(["bench", j2d, "--dtype", "float"]) == 2
    assert "needs a GPU" in capsys.readouterr().err
    assert main(["tune", j2d, "--dtype", "float", "--measure", "3", "--gpu", "H200"]) == 2
    assert main(["tune", j2d, "--dtype", "float"]) == 2
    assert "--gpu" in capsys.readouterr().err
    assert main(["probe"]) == 2
    assert main(["tune", j2d, "--dtype", "float", "--gpu", "H200", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "model ranking" in out and out.count("bt=") == 3
    assert main(["tune", j2d, "--dtype", "float", "--gpu", "H200", "--caps", "7"]) == 2


def test_diverse_candidates_add_the_models_best_per_bt_and_bs():
    from an5dpy.perf.tune import diverse_candidates
    program, info, env = bench("j2d5pt")
    ranking = rank(info, H200, env)
    chosen = diverse_candidates(ranking, top=3)
    assert chosen[:3] == [p for p, _ in ranking[:3]]
    assert len(chosen) == len(set(chosen))
    best = ranking[0][1]
    eligible = [(p, g) for p, g in ranking if g >= 0.5 * best]
    # every bT and bS with a plan within the floor is represented by its best plan
    for key in (lambda p: p.bt, lambda p: p.bs):
        for value in {key(p) for p, _ in eligible}:
            first = next(p for p, _ in eligible if key(p) == value)
            assert first in chosen
    # nothing below the floor is added beyond the top plans
    assert all(g >= 0.5 * best for p, g in ranking if p in chosen[3:])
    narrow = diverse_candidates(ranking, top=3, per_bt=False, per_bs=False)
    assert narrow == [p for p, _ in ranking[:3]]
    sconf = ranking[-1][0]
    assert diverse_candidates(ranking, top=3, extra=(sconf,), per_bt=False,
                              per_bs=False)[-1] == sconf


def test_a_register_budget_binds_only_below_what_ptxas_gave():
    from an5dpy.blocking.plan import make_plan
    from an5dpy.cuda.runtime import Cubin, parse_ptxas_report
    from an5dpy.perf.tune import budget_binds, own_registers
    _, info, _ = bench("j2d5pt")
    plan = make_plan(info, bt=10, bs=(256,), sl=256)
    log = ("ptxas info    : Compiling entry function 'an5d_j2d5pt_kernel_d10' for 'sm_90'\n"
           "ptxas info    : Used 64 registers, used 1 barriers, 2064 bytes smem\n"
           "ptxas info    : Compiling entry function 'an5d_j2d5pt_kernel_d1' for 'sm_90'\n"
           "ptxas info    : Used 28 registers, used 1 barriers, 2064 bytes smem\n")
    cubin = Cubin("k.cubin", parse_ptxas_report(log), log)
    assert own_registers(cubin, plan) == 64  # the plan's own degree, not d1
    assert budget_binds(64, 32) and budget_binds(64, 63)
    assert not budget_binds(64, 64) and not budget_binds(64, 96)
    # no report for the plan's degree: measure rather than guess
    assert own_registers(cubin, make_plan(info, bt=4, bs=(256,))) is None
    assert budget_binds(None, 96)


def _cubin(name: str, degree: int, registers: int):
    from an5dpy.cuda.runtime import Cubin, parse_ptxas_report
    log = (f"ptxas info    : Compiling entry function 'an5d_{name}_kernel_d{degree}' for "
           f"'sm_90'\nptxas info    : Used {registers} registers, used 1 barriers\n")
    return Cubin("k.cubin", parse_ptxas_report(log), log)


def test_budgeted_builds_are_submitted_after_the_unbudgeted_and_only_where_they_bind(
        monkeypatch):
    import concurrent.futures

    import an5dpy.cuda.runtime
    from an5dpy.blocking.plan import make_plan
    from an5dpy.perf.tune import submit_builds
    _, info, _ = bench("j2d5pt")
    plans = [make_plan(info, bt=bt, bs=(256,), sl=256) for bt in (2, 8)]
    natural = {2: 40, 8: 100}  # registers ptxas gives each plan without a budget
    built = []

    def fake_build(info_, plan, stem, options, smem_wrap=True, directory=None, regs=None,
                   degrees=None):
        assert degrees is None  # not timing builds: every degree
        built.append((plan.bt, regs))
        return ("model", _cubin("j2d5pt", plan.bt, regs or natural[plan.bt]))

    monkeypatch.setattr(an5dpy.cuda.runtime, "build_kernels", fake_build)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # one worker: submission order
        jobs = submit_builds(pool, info, plans, (None, 32, 64, 96), "j2d5pt", None)
        results = [(p.bt, cap, f.result()) for p, cap, f in jobs]
    assert [(bt, cap) for bt, cap, _ in results] == [
        (2, None), (8, None), (2, 32), (8, 32), (2, 64), (8, 64), (2, 96), (8, 96)]
    # bT 2 has 40 registers without a budget: only 32 binds; bT 8 (100): all three do
    assert {(bt, cap) for bt, cap, r in results if r is None} == {(2, 64), (2, 96)}
    assert built == [(2, None), (8, None), (2, 32), (8, 32), (8, 64), (8, 96)]


def test_the_model_budget_is_the_best_scored_of_those_that_bind_the_first_of_equals():
    from an5dpy.perf.tune import model_budget
    assert model_budget([32, 64, 96], {32: 2.0, 64: 1.0, 96: 3.0}.get) == 96
    assert model_budget([32, 64], {32: 1.0, 64: 1.0}.get) == 32
    assert model_budget([64, 32], {32: 1.0, 64: 1.0}.get) == 64
    assert model_budget([], {}.get) is None


def test_with_a_budget_score_only_the_best_scored_budget_that_binds_is_built(monkeypatch):
    import concurrent.futures

    import an5dpy.cuda.runtime
    from an5dpy.blocking.plan import make_plan
    from an5dpy.perf.tune import submit_builds
    _, info, _ = bench("j2d5pt")
    plans = [make_plan(info, bt=bt, bs=(256,), sl=256) for bt in (2, 8, 12)]
    natural = {2: 40, 8: 100, 12: 70}  # registers ptxas gives each plan without a budget
    # the model's GFLOP/s per budget: 96 is best for every plan, then 32, then 64
    score = {32: 2.0, 64: 1.0, 96: 3.0}
    built = []

    def fake_build(info_, plan, stem, options, smem_wrap=True, directory=None, regs=None,
                   degrees=None):
        built.append((plan.bt, regs))
        return ("model", _cubin("j2d5pt", plan.bt, regs or natural[plan.bt]))

    monkeypatch.setattr(an5dpy.cuda.runtime, "build_kernels", fake_build)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        jobs = submit_builds(pool, info, plans, (None, 32, 64, 96), "j2d5pt", None,
                             budget_score=lambda plan, cap: score[cap])
        results = {(p.bt, cap): f.result() for p, cap, f in jobs}
    # bT 2 (40 registers): only 32 binds; bT 8 (100): 96 binds and scores best;
    # bT 12 (70): 96 does not bind, 32 scores above 64
    assert set(built) == {(2, None), (2, 32), (8, None), (8, 96), (12, None), (12, 32)}
    assert len(built) == 6
    assert {k for k, r in results.items() if r is not None} == set(built)
    assert len(results) == 12  # a job for every plan and budget, the skipped ones None


def test_the_guessed_budget_starts_beside_the_unbudgeted_build_and_keeps_the_same_builds(
        monkeypatch):
    import concurrent.futures
    import threading

    import an5dpy.cuda.runtime
    from an5dpy.blocking.plan import make_plan
    from an5dpy.perf.tune import submit_builds
    _, info, _ = bench("j2d5pt")
    plans = [make_plan(info, bt=bt, bs=(256,), sl=256) for bt in (2, 8, 12)]
    natural = {2: 40, 8: 100, 12: 70}  # registers ptxas gives each plan without a budget
    score = {32: 2.0, 64: 1.0, 96: 3.0}  # wanted: bT 2 -> 32, bT 8 -> 96, bT 12 -> 32
    # the guess: right for bT 2 and 8; for bT 12 it says 100 registers, so 96 (dropped)
    guess = {2: 45, 8: 120, 12: 100}
    started: list = []
    release = threading.Event()

    def fake_build(info_, plan, stem, options, smem_wrap=True, directory=None, regs=None,
                   degrees=None):
        started.append((plan.bt, regs))
        if regs is None and plan.bt == 8:  # the long unbudgeted build
            assert release.wait(10)
        return ("model", _cubin("j2d5pt", plan.bt, regs or natural[plan.bt]))

    monkeypatch.setattr(an5dpy.cuda.runtime, "build_kernels", fake_build)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        jobs = submit_builds(pool, info, plans, (None, 32, 64, 96), "j2d5pt", None,
                             budget_score=lambda plan, cap: score[cap],
                             registers_guess=lambda plan: guess[plan.bt])
        # bT 8's budgeted build runs while its unbudgeted build is still going; the jobs
        # of its other budgets, queued before it, did not hold the second worker
        for _ in range(1000):
            if (8, 96) in started:
                break
            threading.Event().wait(0.01)
        assert (8, 96) in started and not jobs[1][2].done()
        release.set()
        results = {(p.bt, cap): f.result() for p, cap, f in jobs}
    kept = {k for k, r in results.items() if r is not None}
    assert kept == {(2, None), (2, 32), (8, None), (8, 96), (12, None), (12, 32)}
    assert len(results) == 12  # a job for every plan and budget, the skipped ones None
    assert results[(8, 96)][1].resources[0].registers == 96
    assert results[(12, 96)] is None  # guessed, then dropped: 96 does not bind at 70


def test_a_guessed_budget_fails_with_its_unbudgeted_build(monkeypatch):
    import concurrent.futures

    import an5dpy.cuda.runtime
    from an5dpy.blocking.plan import make_plan
    from an5dpy.perf.tune import submit_builds
    _, info, _ = bench("j2d5pt")
    plan = make_plan(info, bt=8, bs=(256,), sl=256)

    def fake_build(info_, plan, stem, options, smem_wrap=True, directory=None, regs=None,
                   degrees=None):
        if regs is None:
            raise RuntimeError("nvcc failed")
        return ("model", _cubin("j2d5pt", plan.bt, regs))

    monkeypatch.setattr(an5dpy.cuda.runtime, "build_kernels", fake_build)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        jobs = submit_builds(pool, info, [plan], (None, 64), "j2d5pt", None,
                             budget_score=lambda plan, cap: 1.0,
                             registers_guess=lambda plan: 100)
        for _, _, f in jobs:
            with pytest.raises(RuntimeError, match="nvcc failed"):
                f.result()


def test_budgeted_jobs_of_a_pool_shut_down_are_cancelled_not_left_waiting(monkeypatch):
    import concurrent.futures
    import threading

    import an5dpy.cuda.runtime
    from an5dpy.blocking.plan import make_plan
    from an5dpy.perf.tune import submit_builds
    _, info, _ = bench("j2d5pt")
    plans = [make_plan(info, bt=bt, bs=(256,), sl=256) for bt in (2, 8)]
    running, release = threading.Event(), threading.Event()

    def fake_build(info_, plan, stem, options, smem_wrap=True, directory=None, regs=None,
                   degrees=None):
        if regs is None and plan.bt == 2:
            running.set()
            assert release.wait(10)
        return ("model", _cubin("j2d5pt", plan.bt, regs or 100))

    monkeypatch.setattr(an5dpy.cuda.runtime, "build_kernels", fake_build)
    pool = concurrent.futures.ThreadPoolExecutor(1)
    jobs = submit_builds(pool, info, plans, (None, 32, 64), "j2d5pt", None,
                         registers_guess=lambda plan: 100 if plan.bt == 2 else 40)
    assert running.wait(10)
    pool.shutdown(wait=False, cancel_futures=True)  # a deadline passed (scripts/artifact.py)
    release.set()
    pool.shutdown(wait=True)
    assert jobs[0][2].result()[1].resources[0].registers == 100  # it was running
    assert jobs[1][2].cancelled()  # it was queued
    budgeted = [f for _, cap, f in jobs if cap is not None]
    done, waiting = concurrent.futures.wait(budgeted, timeout=10)
    assert not waiting and all(f.cancelled() for f in budgeted)


def test_timing_builds_hold_the_full_degree_and_timing_runs_launch_only_it(monkeypatch):
    import concurrent.futures

    import an5dpy.cuda.runtime
    from an5dpy.blocking.plan import make_plan, run_degrees
    from an5dpy.perf.tune import submit_builds, timing_degrees, timing_steps
    _, info, _ = bench("j2d5pt")
    plans = [make_plan(info, bt=bt, bs=(256,), sl=256) for bt in (1, 3, 14)]
    requested = []

    def fake_build(info_, plan, stem, options, smem_wrap=True, directory=None, regs=None,
                   degrees=None):
        requested.append((plan.bt, regs, degrees))
        return ("model", _cubin("j2d5pt", plan.bt, regs or 100))

    monkeypatch.setattr(an5dpy.cuda.runtime, "build_kernels", fake_build)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        jobs = submit_builds(pool, info, plans, (None, 64), "j2d5pt", None, timing=True)
        [f.result() for _, _, f in jobs]
    assert requested == [(1, None, (1,)), (3, None, (3,)), (14, None, (14,)),
                         (1, 64, (1,)), (3, 64, (3,)), (14, 64, (14,))]
    for plan in plans:
        assert timing_degrees(plan) == (plan.depth,)
        for wanted in (1, 19, 20, 333, 999, 1000):
            steps = timing_steps(plan, wanted, at_most=1000)
            assert set(run_degrees(steps, plan.bt, plan.levels)) == {plan.bt}
            assert steps <= 1000 and (steps >= wanted or steps > 1000 - 2 * plan.bt)
            assert timing_steps(plan, wanted) >= wanted
    # the fewest from the count wanted; the most up to at_most where that passes it
    assert timing_steps(plans[2], 20) == 28 and timing_steps(plans[2], 1000) == 1008
    assert timing_steps(plans[2], 1000, at_most=1000) == 980
    assert timing_steps(plans[1], 1000, at_most=1000) == 996


def test_a_rotating_plan_whose_last_launch_is_split_times_every_degree():
    from types import SimpleNamespace

    from an5dpy.blocking.plan import TimeLevels
    from an5dpy.perf.tune import timing_degrees, timing_steps
    # three time levels read one back: a last launch longer than 2 levels is split
    plan = SimpleNamespace(bt=3, depth=3, levels=TimeLevels(3, 1))
    assert timing_degrees(plan) is None and timing_steps(plan, 20) == 20
    short = SimpleNamespace(bt=2, depth=2, levels=TimeLevels(3, 1))
    assert timing_degrees(short) == (2,) and timing_steps(short, 21) == 22


def test_screen_times_each_build_once_and_the_fastest_again():
    import concurrent.futures
    from an5dpy.perf.tune import screen

    def done(value):
        f = concurrent.futures.Future()
        f.set_result(value) if not isinstance(value, Exception) else f.set_exception(value)
        return f

    rates = {"a": 10.0, "b": 30.0, "c": 20.0, "d": 5.0}
    jobs = [("a", None, done("A")), ("b", None, done("B")), ("b", 32, done(None)),
            ("c", 64, done("C")), ("d", None, done("D"))]
    once, final = [], []
    out = screen(jobs, lambda p, b: once.append(p) or rates[p],
                 lambda p, b: final.append(p) or f"{p} reported", finalists=2)
    assert once == ["a", "b", "c", "d"]  # the budget that changes nothing is not timed
    assert [(s.plan, s.cap, s.built, s.gflops) for s in out] == [
        ("b", None, "B", 30.0), ("c", 64, "C", 20.0), ("a", None, "A", 10.0),
        ("d", None, "D", 5.0)]
    assert final == ["b", "c"] and [s.final for s in out] == ["b reported", "c reported",
                                                                None, None]
    # a failed build raises, or is reported and left out
    broken = jobs[:1] + [("e", 96, done(RuntimeError("nvcc failed")))]
    with pytest.raises(RuntimeError):
        screen(broken, lambda p, b: 1.0, lambda p, b: None)
    errors = []
    out = screen(broken, lambda p, b: 1.0, lambda p, b: None,
                 on_error=lambda p, cap, e: errors.append((p, cap, str(e))))
    assert [s.plan for s in out] == ["a"] and errors == [("e", 96, "nvcc failed")]


def test_screens_stopwatch_splits_waiting_for_builds_from_timing_runs():
    import concurrent.futures
    import time
    from an5dpy.perf.tune import Stopwatch, screen

    def slow_build(name):
        time.sleep(0.05)
        return name.upper()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        jobs = [(p, None, pool.submit(slow_build, p)) for p in ("a", "b")]
        stopwatch = Stopwatch()
        out = screen(jobs, lambda p, b: time.sleep(0.02) or 1.0,
                     lambda p, b: time.sleep(0.03), finalists=1, stopwatch=stopwatch)
    assert [s.built for s in out] == ["A", "B"]
    # two builds of 0.05 s one after the other, waited for in turn; two runs of 0.02 s and
    # one reported run of 0.03 s
    assert set(stopwatch.seconds) == {"builds", "runs"}
    assert stopwatch.seconds["builds"] >= 0.05 and stopwatch.seconds["runs"] >= 0.07
    # the same seconds by phase: the first round's, the finalists'
    assert list(stopwatch.phases) == ["first round", "finalists"]
    assert sum(stopwatch.phases.values()) == pytest.approx(sum(stopwatch.seconds.values()))
    assert stopwatch.phases["finalists"] >= 0.03
    # a call that raises still counts; outside a phase, to its kind alone
    watch = Stopwatch()
    with pytest.raises(ZeroDivisionError):
        watch.timed("runs", lambda: 1 / 0)
    assert watch.seconds["runs"] >= 0 and watch.phases == {}
    with watch.phase("outer"):
        with watch.phase("inner"):
            watch.timed("runs", lambda: None)
        watch.timed("builds", lambda: None)
    phases = dict(watch.phases)
    watch.timed("runs", lambda: None)  # outside again: no phase
    assert set(phases) == {"outer", "inner"} and watch.phases == phases


def test_screen_with_a_neighbourhood_times_the_neighbours_of_the_fastest_plans_too():
    import concurrent.futures
    from an5dpy.perf.tune import Neighbourhood, screen

    def done(value):
        f = concurrent.futures.Future()
        f.set_result(value)
        return f

    rates = {"a": 10.0, "b": 30.0, "c": 20.0, "b1": 40.0, "b2": 1.0, "c1": 25.0, "a1": 99.0}
    neighbours = {"a": ["a1"], "b": ["b1", "a", "b2"], "c": ["c1", "b1"]}
    submitted = []

    def submit(plans):
        submitted.append(list(plans))
        return [(p, cap, done(None if cap else p.upper())) for p in plans
                for cap in (None, 32)]

    jobs = [("a", None, done("A")), ("b", None, done("B")), ("b", 32, done("B32")),
            ("c", None, done("C"))]
    once, final = [], []
    out = screen(jobs, lambda p, b: once.append(b) or rates[p],
                 lambda p, b: final.append(b) or b, finalists=2,
                 neighbourhood=Neighbourhood(neighbours.__getitem__, submit, roots=2,
                                             rounds=1, shape=str))
    # the two fastest plans (b, then c; b once although timed twice) are the roots: their
    # neighbours not timed yet are submitted once, in order, and timed after the first
    # round; one round only, so b1 (now the fastest) is not a root of another
    assert submitted == [["b1", "b2", "c1"]]
    assert once == ["A", "B", "B32", "C", "B1", "B2", "C1"]
    assert [s.built for s in out] == ["B1", "B", "B32", "C1", "C", "A", "B2"]
    assert final == ["B1", "B"]  # the finalists are chosen over both rounds
    # no neighbour left to time: nothing is submitted
    submitted.clear()
    out = screen(jobs[:1], lambda p, b: rates[p], lambda p, b: b, finalists=1,
                 neighbourhood=Neighbourhood(lambda p: ["b", "a"], submit, roots=1,
                                             shape=str))
    assert submitted == [["b"]] and [s.built for s in out] == ["B", "A"]
    out = screen(jobs[:1], lambda p, b: rates[p], lambda p, b: b, finalists=1,
                 neighbourhood=Neighbourhood(lambda p: ["a"], submit, roots=1, shape=str))
    assert submitted == [["b"]] and [s.built for s in out] == ["A"]


def test_the_rounds_of_neighbours_climb_while_a_new_plan_becomes_a_root():
    import concurrent.futures
    from an5dpy.perf.tune import Neighbourhood, screen

    def done(value):
        f = concurrent.futures.Future()
        f.set_result(value)
        return f

    # a plan is "<shape>/<stream length>"; each shape's neighbours keep the length
    rates = {"a/1": 30.0, "a/2": 29.0, "b/1": 20.0, "c/1": 25.0, "d/1": 35.0, "e/1": 50.0,
             "f/1": 10.0, "g/1": 60.0}
    neighbours = {"a": ["c"], "b": ["d"], "c": ["a"], "d": ["e", "b"], "e": ["g", "f"],
                  "g": ["a"]}
    submitted = []

    def submit(plans):
        submitted.append(list(plans))
        return [(p, None, done(p)) for p in plans]

    def plans_of(plan):
        shape, sl = plan.split("/")
        return [f"{n}/{sl}" for n in neighbours[shape]]

    def run(rounds, climb_roots=1):
        submitted.clear()
        jobs = [(p, None, done(p)) for p in ("a/1", "a/2", "b/1")]
        return screen(jobs, lambda p, b: rates[p], lambda p, b: b, finalists=1,
                      neighbourhood=Neighbourhood(plans_of, submit, roots=2, rounds=rounds,
                                                  shape=lambda p: p.split("/")[0],
                                                  climb_roots=climb_roots))

    out = run(rounds=3)
    # the roots are the fastest plan of the two fastest shapes: a/1 and b/1, not a/2;
    # then d/1 (35) is the fastest and a root, then e/1 (50); a shape is a root once
    assert submitted == [["c/1", "d/1"], ["e/1"], ["g/1", "f/1"]]
    assert [s.plan for s in out][:3] == ["g/1", "e/1", "d/1"] and out[0].final == "g/1"
    # each screened build records its round
    assert {s.plan: s.round for s in out} == {"a/1": 0, "a/2": 0, "b/1": 0, "c/1": 1,
                                              "d/1": 1, "e/1": 2, "g/1": 3, "f/1": 3}
    # the rounds stop at ``rounds``, and where no root is new
    out = run(rounds=2)
    assert submitted == [["c/1", "d/1"], ["e/1"]] and out[0].plan == "e/1"
    # d/1 second to a/1: the climb goes on from the fastest alone, or from two shapes
    rates["d/1"] = 27.0
    run(rounds=3)
    assert submitted == [["c/1", "d/1"]]
    run(rounds=3, climb_roots=2)
    assert submitted == [["c/1", "d/1"], ["e/1"], ["g/1", "f/1"]]
    rates["c/1"], rates["d/1"] = 5.0, 5.0
    out = run(rounds=3, climb_roots=2)
    assert submitted == [["c/1", "d/1"]] and out[0].plan == "a/1"


def test_after_the_rounds_the_fastest_builds_other_stream_lengths_are_timed_once():
    import concurrent.futures
    from an5dpy.perf.tune import Neighbourhood, screen

    def done(value):
        f = concurrent.futures.Future()
        f.set_result(value)
        return f

    # "<shape>/<stream length>"; b/1's neighbour c/1 is the fastest after one round
    rates = {"a/1": 10.0, "b/1": 30.0, "c/1": 40.0, "c/2": 45.0, "c/3": 5.0, "a/2": 99.0}
    submitted, asked = [], []

    def submit(plans):
        submitted.append(list(plans))
        return [(p, 32, done(p)) for p in plans]

    def balance(plan, cap):
        asked.append((plan, cap))
        return [f"{plan[0]}/2", f"{plan[0]}/3", "a/1", f"{plan[0]}/2"]

    def run(rounds, balance):
        submitted.clear(), asked.clear()
        return screen([("a/1", None, done("a/1")), ("b/1", 32, done("b/1"))],
                      lambda p, b: rates[p], lambda p, b: b, finalists=2,
                      neighbourhood=Neighbourhood(lambda p: ["c/1"] if p == "b/1" else [],
                                                  submit, roots=1, rounds=rounds,
                                                  shape=lambda p: p[0], balance=balance))

    out = run(1, balance)
    # asked once, for the fastest build after the rounds, with its budget; the lengths
    # measured already (a/1) or listed twice are submitted once
    assert asked == [("c/1", 32)]
    assert submitted == [["c/1"], ["c/2", "c/3"]]
    assert [s.plan for s in out] == ["c/2", "c/1", "b/1", "a/1", "c/3"]
    assert [s.balanced for s in out] == [True, False, False, False, True]
    assert out[0].round == 1 and out[0].final == "c/2"  # a finalist like any build
    # without ``balance`` the rounds end the search
    out = run(1, None)
    assert submitted == [["c/1"]] and [s.plan for s in out] == ["c/1", "b/1", "a/1"]
    # no length left to measure: nothing more is submitted
    out = run(1, lambda plan, cap: ["c/1", "b/1"])
    assert submitted == [["c/1"]] and not any(s.balanced for s in out)


def test_a_screening_submits_its_second_round_and_waits_for_it_only_when_finished():
    import concurrent.futures
    import threading
    from an5dpy.perf.tune import Neighbourhood, Screening, Stopwatch

    def done(value):
        f = concurrent.futures.Future()
        f.set_result(value)
        return f

    pending = []

    def submit(plans):  # builds that finish only when the test says so
        jobs = [(p, None, concurrent.futures.Future()) for p in plans]
        pending.extend(f for _, _, f in jobs)
        return jobs

    rates = {"a": 10.0, "b": 30.0, "b1": 40.0}
    once = []
    screening = Screening([("a", None, done("A")), ("b", None, done("B"))],
                          lambda p, b: once.append(p) or rates[p], lambda p, b: b,
                          finalists=1, stopwatch=Stopwatch(),
                          neighbourhood=Neighbourhood(lambda p: [p + "1"], submit, roots=1,
                                                      rounds=1, shape=str))
    screening.first_round()
    # the first round is timed and the neighbour of the fastest submitted, not built yet
    assert once == ["a", "b"] and len(pending) == 1 and not pending[0].done()
    threading.Timer(0.05, pending[0].set_result, ("B1",)).start()
    out = screening.finish()
    assert once == ["a", "b", "b1"] and [s.built for s in out] == ["B1", "B", "A"]
    assert out[0].final == "B1"
    assert screening.clock.seconds["builds"] >= 0.04  # the wait for the neighbour's build
    assert list(screening.clock.phases) == ["first round", "round 1", "finalists"]
    assert screening.clock.phases["round 1"] >= 0.04


def test_a_neighbourhood_of_no_rounds_times_the_fastest_builds_stream_lengths_alone():
    import concurrent.futures
    from an5dpy.perf.tune import Neighbourhood, Screening

    def done(value):
        f = concurrent.futures.Future()
        f.set_result(value)
        return f

    rates = {"a/1": 10.0, "b/1": 30.0, "b/2": 35.0}
    submitted = []

    def submit(plans):
        submitted.append(list(plans))
        return [(p, None, done(p)) for p in plans]

    screening = Screening([("a/1", None, done("a/1")), ("b/1", None, done("b/1"))],
                          lambda p, b: rates[p], lambda p, b: b, finalists=1,
                          neighbourhood=Neighbourhood(lambda p: [p[0] + "x/1"], submit,
                                                      rounds=0, shape=lambda p: p[0],
                                                      balance=lambda p, cap: ["b/2"]))
    screening.first_round()
    assert submitted == [] and screening.more == []  # no neighbour is built
    out = screening.finish()
    assert submitted == [["b/2"]] and screening.rounds == 0
    assert [s.plan for s in out] == ["b/2", "b/1", "a/1"] and out[0].balanced
    assert list(screening.clock.phases) == ["first round", "stream lengths", "finalists"]


@pytest.mark.parametrize("name, heavy", [
    ("star2d1r", False), ("box2d4r", False), ("j3d27pt", False), ("box3d2r", True),
    ("box3d3r", True), ("box3d4r", True)])
def test_heavy_stencils_are_searched_narrower(name, heavy):
    from an5dpy.perf.tune import (HEAVY_TOP, NEIGHBOURHOOD_ROUNDS, SearchBreadth,
                                  search_breadth)
    _, info, _ = bench(name)
    assert (info.flops_per_cell > 200) == heavy
    breadth = search_breadth(info, 5)
    if heavy:
        assert breadth == SearchBreadth(HEAVY_TOP, False, True, 0)
    else:
        assert breadth == SearchBreadth(5, True, True, NEIGHBOURHOOD_ROUNDS)
    # without the diverse picks: the model's top plans alone (a heavy stencil's fewer)
    assert search_breadth(info, 7, diverse=False) == SearchBreadth(
        HEAVY_TOP if heavy else 7, False, False, 0)
    # fewer than HEAVY_TOP asked for: as many
    assert search_breadth(info, 2).top == 2


@pytest.mark.parametrize("name", ["box3d3r", "star3d1r"])
def test_an5d_tune_measures_with_the_stencils_breadth(monkeypatch, name):
    import an5dpy.perf.tune as tune_module
    from an5dpy.perf.tune import search_breadth, tune, tuning_candidates
    _, info, env = bench(name)
    asked = {}

    def fake_measure(info_, chosen, caps, run_env, stem, predicted, repeats, progress,
                     neighbours, budget_score, balance, guess, rounds):
        asked.update(chosen=chosen, rounds=rounds)
        return []

    def fake_candidates(ranking, paper, top, extra, per_bt, per_bs):
        asked.update(top=top, per_bt=per_bt, per_bs=per_bs)
        return tuning_candidates(ranking, paper, top, extra, per_bt, per_bs)

    monkeypatch.setattr(tune_module, "measure_plans", fake_measure)
    monkeypatch.setattr(tune_module, "tuning_candidates", fake_candidates)
    tune(info, H200, env, name, top=5, use_cache=False, progress=False)
    breadth = search_breadth(info, 5)
    assert (asked["top"], asked["per_bt"], asked["per_bs"], asked["rounds"]) == (
        breadth.top, breadth.per_bt, breadth.per_bs, breadth.neighbour_rounds)
    assert (breadth.neighbour_rounds == 0) == (name == "box3d3r")


def test_the_tuner_times_the_naive_baseline_from_its_fastest_plans_module(monkeypatch):
    """After the plans, the naive baseline (what --baseline naive runs) is timed once with
    the finalists' repeats, from the module of the fastest measured plan, and kept in the
    result and its JSON (a result cached without one reads back as None); nothing is
    measured, nothing is timed."""
    import an5dpy.perf.bench as bench_module
    import an5dpy.perf.tune as tune_module
    from an5dpy.perf.bench import BenchResult
    from an5dpy.perf.tune import NaiveTiming, tune
    _, info, env = bench("star3d1r")
    plans = [plan for plan, _ in rank(info, H200, env, candidate_plans(info, H200))[:2]]
    measured = [Measured(plans[0], None, 900.0, 2.0, 60, False, 1000.0),
                Measured(plans[1], 64, 1100.0, 1.6, 64, False, 1000.0)]
    timed = []

    def fake_measure(*args, **kwargs):
        return list(measured)

    def fake_bench(info_, plan, env_, stem, maxrregcount=None, repeats=5, label=None,
                   smem_wrap=True, naive=False, arch=None):
        timed.append((plan, env_, stem, repeats, naive))
        return BenchResult("naive", None, 26, False, (1.3, 1.2, 1.25), 1200.0)

    monkeypatch.setattr(tune_module, "measure_plans", fake_measure)
    monkeypatch.setattr(bench_module, "bench_plan", fake_bench)
    result = tune(info, H200, env, "star3d1r", top=2, use_cache=False, progress=False,
                  diverse=False, repeats=4)
    assert timed == [(plans[1], env, "star3d1r", 4, True)]
    assert result.naive == NaiveTiming(1200.0, 1.25)
    back = result_from_json(info, json.loads(json.dumps(result.to_json())))
    assert back.naive == result.naive
    old = result.to_json()
    del old["naive"]
    assert result_from_json(info, old).naive is None
    monkeypatch.setattr(tune_module, "measure_plans", lambda *a, **k: [])
    assert tune(info, H200, env, "star3d1r", top=2, use_cache=False, progress=False,
                diverse=False).naive is None
    assert len(timed) == 1


@pytest.mark.parametrize("name, dtype, bt, bs, kw", [
    ("box3d1r", "float", 2, (16, 64), {"opt": "assoc"}),
    ("star2d1r", "float", 7, (512,), {"coarsen": 2, "barriers": "step"}),
    ("star3d1r", "double", 1, (32, 32), {}),
    ("j2d5pt", "float", 16, (256,), {}),
])
def test_neighbour_plans_are_the_variants_one_degree_either_side_and_the_block_halved_and_doubled(
        name, dtype, bt, bs, kw):
    from an5dpy.driver import blocking_plan
    from an5dpy.perf.tune import (block_sides, halo_loaded_plans, legal_plans,
                                  neighbour_plans, variant_plans)
    _, info, _ = bench(name, dtype)
    plan = blocking_plan(info, bt, bs=bs, sl=128, **kw)
    out = neighbour_plans(info, plan)
    assert plan not in out and len(out) == len(set(out))
    # the plans loading the halo of the plan at bT 1 (3D; at bT 1 the plan's variants)
    loaded = {p for p in out if p.halo_loaded}
    at_one = legal_plans(info, plan, [{"bt": 1}]) if bt > 1 else [plan]
    assert loaded == {p for shallow in at_one for p in halo_loaded_plans(info, shallow)}
    assert bool(loaded) == (plan.ndim == 3 and plan.mode.value != "none")
    degrees = {p for p in out if p.bt != plan.bt} - loaded
    blocks = {p for p in out if p.bt == plan.bt and p.coarsen == plan.coarsen
              and p.barriers == plan.barriers and p.bs != plan.bs}
    assert set(out) == set(variant_plans(info, plan)) - {plan} | degrees | blocks | loaded

    def legal(b, block):
        try:
            return blocking_plan(info, b, bs=block, sl=128, **kw)
        except UsageError:
            return None
    # beyond the model's space too (bT 17 or 32 in 2D): a neighbour is measured, not ranked
    # (where the stencil's halo leaves the block a compute region)
    sides = {p.bt for p in degrees}
    assert sides == {b for b in (bt - 1, bt + 1, 2 * bt) if legal(b, bs)}
    assert {bt + 1, 2 * bt} & sides
    for p in degrees:  # the same plan one degree either side
        assert (p.bs, p.sl, p.mode, p.coarsen, p.barriers) == (
            plan.bs, plan.sl, plan.mode, plan.coarsen, plan.barriers)
    # each side halved and doubled, one at a time, where the plan is legal there
    expected = {legal(bt, block) for block in block_sides(bs)} - {None}
    assert {p for p in blocks if p.sl == plan.sl and p.mode == plan.mode} >= expected
    assert all(sum(a != b for a, b in zip(p.bs, bs)) == 1 for p in expected)
    assert expected, "every case has a legal block next to its own"
    if plan.ndim == 3 or plan.mode.value == "nondiag":
        assert any(p.coarsen != plan.coarsen for p in out)


@given(data=st.data())
def test_every_neighbour_is_a_legal_plan_one_step_from_its_root(data):
    """Over drawn stencils, dtypes and root plans (any the planner accepts): each
    neighbour is a plan the planner builds from its own options, other than the root;
    a neighbour of the root's degree, cells per thread, barriers and idle warps differs in
    its block alone, by one side halved or doubled; one of another degree keeps everything else."""
    from an5dpy.driver import blocking_plan
    from an5dpy.perf.tune import neighbour_plans
    name = data.draw(st.sampled_from(("j2d5pt", "star2d2r", "box2d1r", "star3d1r",
                                      "box3d1r", "j3d27pt")))
    dtype = data.draw(st.sampled_from(("float", "double")))
    _, info, _ = bench(name, dtype)
    sides = (st.sampled_from((32, 64, 128, 256, 512, 1024)),) if info.ndim == 2 else (
        st.sampled_from((8, 16, 32, 64)), st.sampled_from((8, 16, 32, 64)))
    try:
        plan = blocking_plan(info, data.draw(st.integers(1, 8)),
                             bs=tuple(data.draw(side) for side in sides),
                             sl=data.draw(st.sampled_from((64, 128, 256))),
                             coarsen=data.draw(st.sampled_from((1, 2))),
                             barriers=data.draw(st.sampled_from(("level", "step"))))
    except UsageError:
        assume(False)  # a root the planner refuses: draw another
    for p in neighbour_plans(info, plan):
        assert p != plan
        again = blocking_plan(info, p.bt, bs=p.bs, sl=p.sl, opt=p.mode.value,
                              coarsen=p.coarsen, barriers=p.barriers, idle=p.idle,
                              halo=p.halo_cells)
        assert again == p
        if p.halo_loaded:  # the root at bT 1, its computing threads loading the halo
            assert p.bt == 1 <= plan.bt and (p.sl, p.mode) == (plan.sl, plan.mode)
        elif p.bt != plan.bt:
            assert (p.bs, p.sl, p.mode, p.coarsen, p.barriers, p.idle, p.halo_cells) == (
                plan.bs, plan.sl, plan.mode, plan.coarsen, plan.barriers, plan.idle,
                plan.halo_cells)
        elif (p.coarsen, p.barriers, p.idle, p.halo_cells) == (
                plan.coarsen, plan.barriers, plan.idle, plan.halo_cells):
            changed = [(a, b) for a, b in zip(p.bs, plan.bs) if a != b]
            assert len(changed) == 1 and changed[0][0] in (changed[0][1] // 2,
                                                           changed[0][1] * 2)
            assert (p.sl, p.mode) == (plan.sl, plan.mode)


def test_block_sides_halve_and_double_one_side_at_a_time():
    from an5dpy.perf.tune import block_sides
    assert block_sides((512,)) == [(256,), (1024,)]
    assert block_sides((32, 16)) == [(16, 16), (64, 16), (32, 8), (32, 32)]
    assert block_sides((1, 2)) == [(2, 2), (1, 1), (1, 4)]


def test_tuning_candidates_add_the_papers_diverse_picks_to_the_models_top_plans():
    from an5dpy.perf.tune import diverse_candidates, paper_ranking, tuning_candidates
    _, info, env = bench("j2d5pt")
    space = candidate_plans(info, H200)
    ranking = rank(info, H200, env, space)  # with the issue term (Hopper)
    paper = paper_ranking(info, H200, env, space, ranking)
    assert [p for p, _ in ranking[:5]] != [p for p, _ in paper[:5]]
    sconf = paper[-1][0]
    chosen = tuning_candidates(ranking, paper, 5, (sconf,))
    assert chosen[:5] == [p for p, _ in ranking[:5]]
    assert set(diverse_candidates(paper, 5)) <= set(chosen) and chosen[-1] == sconf
    assert len(chosen) == len(set(chosen))
    # narrow: the model's top plans and the extras only
    narrow = tuning_candidates(ranking, paper, 5, (sconf,), per_bt=False, per_bs=False)
    assert narrow == [p for p, _ in ranking[:5]] + [sconf]
    # GPUs without the issue term: the paper's ranking is the model's
    v100 = get_gpu("V100")
    space = candidate_plans(info, v100)
    plain = rank(info, v100, env, space)
    assert paper_ranking(info, v100, env, space, plain) == plain
    assert tuning_candidates(plain, plain, 5) == diverse_candidates(plain, 5)


def test_coupled_programs_rank_plans_of_their_levels_and_key_every_statement():
    fdtd = load_multi("fdtd_2d")
    env = {"nx": 1026, "ny": 1026, "tmax": 100}
    result = tune(fdtd, H200, env, "fdtd_2d", measure=False)
    assert result.ranking and all(p.depth <= 16 for p, _ in result.ranking)
    # two programs alike in their first statement only are two stencils to the cache (v's
    # statement takes u's value in the other)
    two = star_fields(["u", "v"])
    other = replace(two, substeps=(replace(two.substeps[0], updates=(
        two.substeps[0].updates[0], ("v", two.substeps[0].updates[0][1]))),))
    sizes = {"n": 66, "T": 10}
    assert cache_key(two, "float", "H200", sizes, 5, (None,), None) != cache_key(
        other, "float", "H200", sizes, 5, (None,), None)


def test_tune_prints_the_fields_and_sub_steps_of_its_top_plan(capsys):
    from an5dpy.cli.main import main
    fdtd = os.path.join(DATA, "multi", "fdtd_2d.c")
    assert main(["tune", fdtd, "--gpu", "H200", "-P", "nx=1026", "-P", "ny=1026", "-P",
                 "tmax=100", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "model's top plan bt=" in out and "3 fields (ey, ex, hz; each " in out
    assert "sub-step 2 (level 2 of each step): computes hz" in out
    ranking = [line for line in out.splitlines() if re.match(r"\s+[\d,]+\s+bt=", line)]
    assert len(ranking) == 3 and all("opt=nondiag" in line for line in ranking)


def test_the_tuner_measures_the_best_plan_coarsened():
    from an5dpy.perf.tune import coarsened_plans
    _, info, _ = bench("star3d1r")
    plan = candidate_plans(info, H200)[0]
    plans = coarsened_plans(info, plan)
    assert plans and all(p.coarsen in (2, 4) and p.bt == plan.bt and p.sl == plan.sl
                         for p in plans)
    # the same cells with fewer threads, and as many threads with more cells
    assert {(p.bs, p.nthreads * p.coarsen) for p in plans if p.bs == plan.bs} == \
        {(plan.bs, plan.nthreads)}
    assert all(p.nthreads == plan.nthreads for p in plans if p.bs != plan.bs)


def test_the_tuner_measures_the_best_plan_with_one_barrier_per_step():
    from an5dpy.blocking.plan import Barriers
    from an5dpy.perf.tune import coarsened_plans, variant_plans
    _, info, _ = bench("star3d1r")
    plan = candidate_plans(info, H200)[0]
    variants = variant_plans(info, plan)
    step = [p for p in variants if p.barriers is Barriers.STEP]
    assert variants[:len(coarsened_plans(info, plan))] == coarsened_plans(info, plan)
    # the plan itself and its coarsened plans of the same block of cells
    assert {(p.bs, p.coarsen) for p in step} == \
        {(plan.bs, 1)} | {(p.bs, p.coarsen) for p in coarsened_plans(info, plan)
                          if p.bs == plan.bs}
    _, box, _ = bench("box3d1r")  # mode assoc: no barrier-per-step form
    assert all(p.barriers is Barriers.LEVEL
               for p in variant_plans(box, candidate_plans(box, H200)[0]))


def test_the_tuner_measures_a_time_step_of_several_statements_with_one_barrier_per_step():
    """fdtd's plans in mode nondiag get their one-barrier-per-step variants (the plan and
    its coarsened plan of the same cells), which the model predicts; mode none none."""
    from an5dpy.blocking.plan import Barriers
    from an5dpy.driver import blocking_plan
    from an5dpy.perf.model import predict
    from an5dpy.perf.tune import variant_plans
    fdtd = load_multi("fdtd_2d")
    plan = blocking_plan(fdtd, 4, bs=(256,), sl=128, opt="nondiag")
    step = [p for p in variant_plans(fdtd, plan) if p.barriers is Barriers.STEP]
    assert {(p.bs, p.coarsen) for p in step} == {((256,), 1), ((256,), 2)}
    env = {"nx": 1026, "ny": 1026, "tmax": 100}
    assert all(predict(fdtd, p, H200, env).seconds > 0 for p in step)
    none = blocking_plan(fdtd, 4, bs=(256,), sl=128, opt="none")
    assert all(p.barriers is Barriers.LEVEL for p in variant_plans(fdtd, none))


def test_the_tuner_measures_the_plan_computing_at_idle_warps_where_its_ops_branch():
    from dataclasses import replace
    from an5dpy.blocking.plan import Barriers, IdleWarps
    from an5dpy.cuda.macros import levels_with_idle_warps
    from an5dpy.driver import blocking_plan
    from an5dpy.perf.tune import idle_compute_plans, variant_plans
    _, info, _ = bench("star3d1r")
    plan = blocking_plan(info, 4, bs=(32, 32), sl=128)
    variants = variant_plans(info, plan)
    computing = [p for p in variants if p.idle is IdleWarps.COMPUTE]
    # the plan itself and its own block's plan with one barrier per step, else unchanged
    assert {replace(p, idle=IdleWarps.SKIP) for p in computing} == {
        plan, replace(plan, barriers=Barriers.STEP)}
    assert all(levels_with_idle_warps(p, p.depth) == frozenset() for p in computing)
    assert idle_compute_plans(info, computing) == []  # already computing
    # 16x16 at bT 1: two rows a warp, none idle at level 1: the kernels would not change
    assert idle_compute_plans(info, [blocking_plan(info, 1, bs=(16, 16), sl=128)]) == []
    # 2D blocks of 1D rows: no warp idles at the model's plan, so no such variant
    _, star2, _ = bench("star2d1r")
    plan2 = candidate_plans(star2, H200)[0]
    assert not levels_with_idle_warps(plan2, plan2.depth)
    assert all(p.idle is IdleWarps.SKIP for p in variant_plans(star2, plan2))


def test_shuffle_plans_are_2d_nondiag_one_warp_blocks_and_not_among_the_variants():
    from an5dpy.blocking.plan import Barriers
    from an5dpy.perf.tune import (SHUFFLE_MAX_REGISTERS, SHUFFLE_MIN_COMPUTE, shuffle_plans,
                                  variant_plans)
    _, info, _ = bench("star2d1r")
    plan = candidate_plans(info, H200)[0]
    plans = shuffle_plans(info, plan)
    assert {p.coarsen for p in plans} == {2, 4, 8}
    for p in plans:
        assert p.barriers is Barriers.SHUFFLE and p.threads == (32,) and p.sl == plan.sl
        assert p.compute_region()[0] >= SHUFFLE_MIN_COMPUTE * p.bs[0]
        assert p.register_estimate() <= SHUFFLE_MAX_REGISTERS
    # bT 8 keeps 48 of 64 cells (0.75), bT 10 only 44 (0.69)
    assert max(p.bt for p in plans if p.coarsen == 2) == 8
    assert not any(p.barriers is Barriers.SHUFFLE for p in variant_plans(info, plan))
    for name in ("star3d1r", "box2d1r"):  # 3D, mode assoc: none
        _, other, _ = bench(name)
        assert shuffle_plans(other, candidate_plans(other, H200)[0]) == []


@pytest.mark.parametrize("step_s, screened", [
    # 1e-4 s a step: the fewest steps are short, so 20 more tell the step time; the 0.05 s
    # a screening run wants is past the run's 37 steps, so it runs the most of full
    # launches up to them (33 and 30 steps)
    (1e-4, {3: 33, 5: 30}),
    # 0.015 s a step (a heavy 3D stencil): the fewest steps tell it; 4 steps make 0.05 s,
    # 6 and 5 of full launches
    (0.015, {3: 6, 5: 5}),
])
def test_the_tuner_times_timing_builds_in_runs_of_full_launches(monkeypatch, step_s,
                                                                screened):
    # an5d tune --measure builds each plan's full degree alone; it screens each build with
    # a run of about SCREEN_S seconds and times the finalists for the fewest steps from the
    # run's own count on that are full launches; every run is of full launches, and the
    # seconds it reports are the run's own, in proportion
    from types import SimpleNamespace

    import an5dpy.cuda.runtime as runtime
    import an5dpy.perf.bench as bench_module
    from an5dpy.blocking.plan import make_plan, run_degrees
    from an5dpy.perf.bench import gflops
    from an5dpy.perf.tune import FINALISTS, measure_plans, timing_steps
    _, info, env = bench("j2d5pt")
    env = with_steps(info, env, 37)
    plans = [make_plan(info, bt=bt, bs=(256,), sl=256) for bt in (3, 5)]
    built, ran, timed = [], [], []

    def fake_build(info_, plan, stem, options, smem_wrap=True, directory=None, regs=None,
                   degrees=None):
        built.append((plan.bt, regs, degrees))
        return (SimpleNamespace(prefix="an5d_j2d5pt", signature=None),
                _cubin("j2d5pt", plan.bt, 40))

    class FakeRunner:
        def __init__(self, info_, plan, cubin, prefix, signature):
            self.plan = plan

        def run(self, grid, run_env, read_only):
            ran.append((self.plan.bt, info.time.steps(run_env)))

    def fake_time_runs(run, count, warmup=1):
        for _ in range(warmup):
            run()
        out = []
        for _ in range(count):
            run()
            timed.append(ran[-1])
            out.append(ran[-1][1] * step_s)
        return out

    monkeypatch.setattr(runtime, "build_kernels", fake_build)
    monkeypatch.setattr(runtime, "device_arch", lambda: "sm_90")
    monkeypatch.setattr(runtime, "CupyRunner", FakeRunner)
    monkeypatch.setattr(bench_module, "device_grid", lambda info_, env_, dtype: "grid")
    monkeypatch.setattr(bench_module, "device_read_only_values", lambda info_, env_: ())
    monkeypatch.setattr(bench_module, "time_runs", fake_time_runs)
    measured = measure_plans(info, plans, (None,), env, "j2d5pt", repeats=3, progress=False)
    assert sorted(built) == [(3, None, (3,)), (5, None, (5,))]
    by_bt = {p.bt: p for p in plans}
    for bt, steps in ran:
        assert set(run_degrees(steps, bt, by_bt[bt].levels)) == {bt}
    # each build's screening run, then the finalists' three repeats of the whole run
    full = {bt: timing_steps(by_bt[bt], 37) for bt in by_bt}
    assert full == {3: 39, 5: 40} and len(plans) <= FINALISTS
    for bt in by_bt:
        mine = [steps for b, steps in timed if b == bt]
        assert mine[-3:] == [full[bt]] * 3 and screened[bt] in mine[:-3]
    for m in measured:
        assert m.seconds == pytest.approx(37 * step_s)
        assert m.gflops == pytest.approx(gflops(info, env, 37 * step_s))


@pytest.mark.parametrize("name, dtype, bt, bs, sl, kw, cap", [
    ("star2d1r", "float", 15, (512,), 256, {"coarsen": 2, "barriers": "step"}, 96),
    ("star3d1r", "float", 4, (32, 32), 128, {}, None),
    ("box3d3r", "double", 1, (64, 16), 128, {"opt": "assoc"}, 32),
    ("j2d5pt", "double", 4, (256,), 128, {}, 64),
])
def test_balanced_stream_plans_fill_the_last_wave_at_lengths_the_model_predicts_faster(
        name, dtype, bt, bs, sl, kw, cap):
    import math
    from an5dpy.driver import blocking_plan
    from an5dpy.perf.model import Model
    from an5dpy.perf.tune import BALANCE_FACTOR, balanced_stream_plans, predicted_gflops
    _, info, env = bench(name, dtype)
    model = Model(info, H200, env)
    plan = blocking_plan(info, bt, bs=bs, sl=sl, **kw)
    out = balanced_stream_plans(info, model, plan, cap)
    assert 1 <= len(out) <= 2  # each of these plans' last wave is part empty
    own = predicted_gflops(model, plan, cap)
    predicted = [predicted_gflops(model, p, cap) for p in out]
    assert predicted == sorted(predicted, reverse=True) and min(predicted) > own
    blocks = {model.launch_cost(p, bt, cap).stream_blocks for p in (plan, *out)}
    assert len(blocks) == len(out) + 1  # each a count of stream blocks of its own
    for p in out:
        assert p == replace(plan, sl=p.sl)  # the plan but its stream length
        assert sl // BALANCE_FACTOR <= p.sl <= sl * BALANCE_FACTOR
        # the shortest length of its count of stream blocks: one plane less adds a block
        shorter = replace(plan, sl=p.sl - 1)
        assert (model.launch_cost(shorter, bt, cap).stream_blocks
                > model.launch_cost(p, bt, cap).stream_blocks)
    # the fastest fills its last wave better than the plan does
    def fill(p):
        waves = model.launch_cost(p, bt, cap).waves
        return waves / math.ceil(waves)
    assert fill(out[0]) > fill(plan)


@pytest.mark.parametrize("name, dtype, bt, describe_bs, kw", [
    ("star3d1r", "double", 4, "64x32", {"sl": 128, "coarsen": 2, "barriers": "step"}),
    ("star3d1r", "float", 4, "32x32", {"sl": 128}),
    ("box3d3r", "float", 1, "64x16", {"sl": 64, "opt": "assoc"}),
    ("star2d1r", "float", 15, "512", {"sl": 256, "coarsen": 2, "barriers": "step"}),
    ("j2d5pt", "double", 7, "128", {"sl": 128, "barriers": "step"}),
])
def test_tile_plans_scale_one_block_side_by_three_quarters_or_three_halves(
        name, dtype, bt, describe_bs, kw):
    from fractions import Fraction
    from an5dpy.blocking.plan import parse_block_size
    from an5dpy.driver import blocking_plan
    from an5dpy.perf.tune import tile_plans
    _, info, _ = bench(name, dtype)
    plan = blocking_plan(info, bt, bs=parse_block_size(describe_bs, info.ndim), **kw)
    out = tile_plans(info, plan)
    assert out and plan not in out and len(out) == len(set(out))
    for p in out:
        assert (p.bt, p.sl, p.mode, p.coarsen, p.barriers) == (
            plan.bt, plan.sl, plan.mode, plan.coarsen, plan.barriers)
        changed = [(a, b) for a, b in zip(p.bs, plan.bs) if a != b]
        assert len(changed) == 1 and Fraction(*changed[0]) in (Fraction(3, 4), Fraction(3, 2))
    # every such side that makes a legal plan, and no other
    expected = set()
    for d, side in enumerate(plan.bs):
        for scale in (Fraction(3, 4), Fraction(3, 2)):
            if (side * scale).denominator == 1:
                try:
                    expected.add(blocking_plan(
                        info, bt, bs=plan.bs[:d] + (int(side * scale),) + plan.bs[d + 1:],
                        **kw))
                except UsageError:
                    pass
    assert set(out) == expected


def test_tile_plans_of_star3d1r_doubles_tuned_plan_have_fewer_threads():
    # 64x32 cells of 2 per thread are 1,024 threads; a side a half larger would be 1,536
    from an5dpy.blocking.plan import parse_block_size
    from an5dpy.driver import blocking_plan
    from an5dpy.perf.tune import tile_plans
    _, info, _ = bench("star3d1r", "double")
    plan = blocking_plan(info, 4, bs=parse_block_size("64x32", 3), sl=128, coarsen=2,
                         barriers="step")
    assert sorted(p.describe().split()[1] for p in tile_plans(info, plan)) == [
        "bs=48x32", "bs=64x24"]
    assert {p.nthreads for p in tile_plans(info, plan)} == {768}


def test_a_plan_without_stream_division_has_no_balanced_lengths():
    from an5dpy.driver import blocking_plan
    from an5dpy.perf.model import Model
    from an5dpy.perf.tune import balanced_stream_plans
    _, info, env = bench("star3d3r")
    plan = blocking_plan(info, 1, bs=(32, 16), sl=None, coarsen=2)
    assert balanced_stream_plans(info, Model(info, H200, env), plan, 32) == []


def test_a_plan_the_model_cannot_place_at_its_budget_has_no_balanced_lengths():
    # 1024 threads of 96 registers are more than an SM holds: the search's last step
    # must not stop a tuning run on such a build
    from an5dpy.driver import blocking_plan
    from an5dpy.perf.model import Model
    from an5dpy.perf.tune import balanced_stream_plans, predicted_gflops
    _, info, env = bench("star3d1r")
    model = Model(info, H200, env)
    plan = blocking_plan(info, 1, bs=(32, 32), sl=64)
    assert predicted_gflops(model, plan, 96) == 0.0
    assert balanced_stream_plans(info, model, plan, 96) == []
    assert balanced_stream_plans(info, model, plan, None)  # placed without the budget


def test_a_probes_step_time_is_one_run_of_that_many_steps_after_the_warm_up(monkeypatch):
    """run_step_seconds, which the tuner's screening and the artifact's timings give
    probed_steps: run_for(steps) makes the run, bench.time_runs times it once after
    ``warmup`` untimed runs, and its seconds are spread over its steps."""
    import an5dpy.perf.bench as perf_bench
    from an5dpy.perf.tune import run_step_seconds
    calls, made = [], []

    def time_runs(run, repeats, warmup):
        calls.append((repeats, warmup))
        run()
        return [0.5]

    monkeypatch.setattr(perf_bench, "time_runs", time_runs)
    step_seconds = run_step_seconds(lambda steps: lambda: made.append(steps))
    assert step_seconds(20, 1) == pytest.approx(0.5 / 20)
    assert step_seconds(4, 0) == pytest.approx(0.5 / 4)
    assert calls == [(1, 1), (1, 0)] and made == [20, 4]


def test_bt_1_plans_get_their_loaded_halo_variants_at_the_hand_written_layouts():
    from an5dpy.blocking.plan import make_plan
    from an5dpy.perf.tune import HALO_LOADED_LAYOUTS, halo_loaded_plans, variant_plans
    _, info, _ = bench("star3d4r")
    plan = make_plan(info, 1, bs=(32, 32), sl=128, coarsen=4, barriers="step")
    loaded = halo_loaded_plans(info, plan)
    # each layout's compute region and cells, the tile adding the halo of 4, the stream kept
    assert [(p.compute_region(), p.coarsen) for p in loaded] == list(HALO_LOADED_LAYOUTS)
    assert [p.bs for p in loaded] == [(24, 72), (40, 40), (16, 72), (24, 72), (16, 72)]
    assert all(p.halo_loaded and p.sl == 128 and p.bt == 1 for p in loaded)
    assert all(p in variant_plans(info, plan) for p in loaded)
    # none for bT 2 or more, none of a loaded plan, and none in a mode without them
    assert halo_loaded_plans(info, make_plan(info, 2, bs=(32, 32))) == []
    assert halo_loaded_plans(info, loaded[0]) == [] and variant_plans(info, loaded[0]) == []
    _, box, _ = bench("box3d1r")
    assert halo_loaded_plans(box, make_plan(box, 1, bs=(32, 32), opt="none")) == []
    # mode assoc has them, in its mode
    sums = halo_loaded_plans(box, make_plan(box, 1, bs=(32, 32), opt="assoc"))
    assert [p.bs for p in sums] == [(18, 66), (34, 34), (10, 66), (18, 66), (10, 66)]
    assert all(p.mode.value == "assoc" and p.halo_loaded for p in sums)


def test_a_loaded_halo_survives_the_tuners_json():
    from an5dpy.blocking.plan import make_plan
    from an5dpy.perf.tune import plan_from_json
    _, info, _ = bench("star3d3r", "double")
    plan = make_plan(info, 1, bs=(22, 70), sl=64, coarsen=4, halo="loaded")
    measured = Measured(plan, None, 6000.0, 0.2, 120, False, 5000.0)
    assert measured.to_json()["halo_cells"] == "loaded"
    assert plan_from_json(info, measured.to_json()) == plan
    assert plan_from_json(info, plan.to_json()) == plan
    # rows written before the option have a thread per halo cell
    old = {k: v for k, v in make_plan(info, 1, bs=(32, 32)).to_json().items()
           if k != "halo_cells"}
    assert not plan_from_json(info, old).halo_loaded
