#!/usr/bin/env python3
"""Reproduce the paper's Table 5, Fig. 8 and Fig. 9 on the present GPU.

    python scripts/artifact.py                      # measure everything, then render
    python scripts/artifact.py --render-only DIR    # tables and plots from DIR/rows.jsonl
    python scripts/artifact.py --gpus 4             # the rows dealt to 4 GPUs of this host

For each of the 21 benchmarks x float/double at the paper's sizes (16384^2 / 512^3, 1000
steps): the tuner ranks the search space with the performance model; the model's top
plans, its best plan per bT and per bS (an5dpy.perf.tune.diverse_candidates) and the paper's
Sconf plan are built without a register budget and with the budget that binds and that
the model predicts fastest (an5dpy.perf.tune.submit_builds), timed once with a short run,
and the fastest three timed again; the best is the "tuned" result. Sconf and the naive
one-kernel-per-step baseline are timed too. Reported runs are timed with CUDA events
(warm-up, then the median of the repeats), with the step count (at most 1000) that makes
a run last about 0.2 s (it is in the table; GFLOP/s is a rate, and a 20-step probe picks
it). Both counts are made of launches of the plan's full degree alone
(an5dpy.perf.tune.timing_steps), so every build is a timing build of that one kernel
(an5dpy.perf.tune.timing_degrees): a plan of bT 16 compiles one kernel, not 16. Every row's
builds start with the run (nvcc on the CPUs while the GPU times earlier
rows); a row's second round (the neighbours of its fastest plans) builds while the GPU
times the next row's first round (its later rounds, the neighbours of plans that became
the fastest, build while the GPU waits). Rows are appended to <out>/<gpu>/rows.jsonl as they
finish, so a run cut short (or split over several sessions with --minutes) goes on with
--resume.

Outputs in <out>/<gpu>/: table5.csv, table5.md, fig8.png (GFLOP/s vs bT, radius-1
stencils, float), fig9.png (star/box, orders 1-4), rows.jsonl, fig8.jsonl; with --gpus,
parts/<k>/ holds each GPU's own measurement and its log (:func:`run_parts`).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import math
import os
import re
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

C_INPUTS = os.path.join(REPO, "c_inputs")
NAMES = ["star2d1r", "star2d2r", "star2d3r", "star2d4r", "box2d1r", "box2d2r", "box2d3r",
         "box2d4r", "j2d5pt", "j2d9pt", "j2d9pt-gol", "gradient2d", "star3d1r", "star3d2r",
         "star3d3r", "star3d4r", "box3d1r", "box3d2r", "box3d3r", "box3d4r", "j3d27pt"]
#: GFLOP/s of the original AN5D tool's kernels (its V100-tuned configurations, built for
#: sm_90 with --use_fast_math) on an H200, float / double (given with issue 5).
ORIGINAL_H200 = {
    "star2d1r": (13248, 5560), "star2d2r": (13545, 3973), "star2d3r": (15236, 5684),
    "star2d4r": (15918, 6620), "box2d1r": (12176, 3942), "box2d2r": (23827, 13180),
    "box2d3r": (27827, 15365), "box2d4r": (24419, 14667), "j2d5pt": (14048, 2713),
    "j2d9pt": (15816, 6593), "j2d9pt-gol": (12755, 1614), "gradient2d": (19826, 6489),
    "star3d1r": (3720, 4170), "star3d2r": (6317, 3092), "star3d3r": (7135, 3281),
    "star3d4r": (6004, 4401), "box3d1r": (14624, 6934), "box3d2r": (19532, 12150),
    "box3d3r": (28098, 7905), "box3d4r": (29638, 10203), "j3d27pt": (14764, 4508)}
RAD1 = ["star2d1r", "box2d1r", "j2d5pt", "j2d9pt-gol", "gradient2d", "star3d1r", "box3d1r",
        "j3d27pt"]
MIN_RUN_S = 0.2
#: The generation of the kernels a row is measured with (its field ``kernels``; rows
#: without one are of generation 1): 2 adds the inner phase of blocks of interior cells
#: (2D, in-plane radius up to 2) and cell-major shared rows (2D nondiag cells per thread);
#: 3 divides in double by a divisor that reads no array through its reciprocal, computed
#: once per thread (an5dpy.cuda.macros.ConstantTable.divide); 4 branches mode assoc's sums
#: on the warp's level bits where whole warps are idle (an5dpy.cuda.macros.
#: warp_branch_levels: every 3D assoc plan). Rows of an older generation still hold for
#: the plans whose kernels did not change (:func:`kernels_outdated`).
KERNELS = 4


def kernels_outdated(row: dict) -> bool:
    """Whether a row was measured with kernels that a later generation changed: those of
    generation 1; of generation 2 where the stencil divides in double by a divisor that
    reads no array; of generations 2 and 3 where the row's plan branches on the warp's
    level bits (generations 3 and 4 changed nothing else)."""
    generation = row.get("kernels", 1)
    if generation >= KERNELS:
        return False
    if generation < 2:
        return True
    from an5dpy.analysis.stencil import op_mix
    from an5dpy.cuda.macros import warp_branch_levels
    from an5dpy.driver import load
    from an5dpy.perf.tune import plan_from_json
    info = load(os.path.join(C_INPUTS, row["stencil"] + ".c"), (("SB_TYPE", row["dtype"]),))[1]
    plan = plan_from_json(info, row["best"]["plan"])
    divides = any(op_mix(update)["fixed_double_div"] for update in info.updates)
    return (generation < 3 and divides) or bool(warp_branch_levels(plan, plan.bt))


#: The tuner's second round a row is measured with (its field ``neighbourhood``; 0 or none:
#: no second round): 1 timed the variants of the two fastest plans and the same plans at
#: bT - 1 and bT + 1; 2 also at twice their bT; 3 also with each block side halved and
#: doubled (an5dpy.perf.tune.neighbour_plans); 4 takes the roots among distinct shapes
#: (an5dpy.perf.tune.plan_shape: not two stream lengths of one plan) and measures the
#: neighbours of each plan that becomes a root in up to NEIGHBOURHOOD_ROUNDS rounds
#: (an5dpy.perf.tune.Neighbourhood; the row's field ``neighbour_rounds``: how many ran);
#: 5 climbs from the fastest plan alone after the first round (an5dpy.perf.tune.CLIMB_ROOTS;
#: 4 climbed from both roots), and each measured plan records its round (``round``: 0 the
#: first round's jobs, k the k-th round of neighbours); 6 then measures the fastest build's
#: other stream lengths (an5dpy.perf.tune.balanced_stream_plans; ``balanced`` true); 7 gives
#: heavy stencils no rounds of neighbours, their stream lengths alone
#: (an5dpy.perf.tune.search_breadth).
NEIGHBOURHOOD = 7


def gpu_slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name.replace("NVIDIA", "")).strip("-")


def geomean(values) -> float:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def model_top5_fraction(row: dict) -> float | None:
    """The fastest measured plan of the model's top 5 over the tuned plan: what a tuner that
    measures only the model's top 5 (the paper's section 6.3) would keep. None where the
    row does not list its top 5 or none of it was measured."""
    top = set(row.get("model_top5", ()))
    speeds = [m["gflops"] for m in row.get("measured", ()) if m["describe"] in top]
    return min(1.0, max(speeds) / row["best"]["gflops"]) if speeds else None


def measured_variants(row: dict) -> bool:
    """Whether the row was measured by a version that knew cells per thread and barrier
    modes (its plans' JSON has them), and so had the variant plans among its candidates."""
    return all("coarsen" in m["plan"] for m in row.get("measured", ()))


# --------------------------------------------------------------------------- measuring


#: Rows whose device grids the bench keeps: the row being finished and the next one.
GRIDS_KEPT = 2


class Bench:
    """Builds in a thread pool (nvcc runs on the CPUs while the GPU times earlier rows)."""

    def __init__(self):
        from an5dpy.cuda.runtime import BuildOptions, build_workers, device_arch
        self.options = BuildOptions(arch=device_arch())
        self.pool = concurrent.futures.ThreadPoolExecutor(build_workers())
        # the neighbours of a row's fastest plans are built while the row waits for them:
        # a pool of their own, not behind the later rows' builds
        self.neighbour_pool = concurrent.futures.ThreadPoolExecutor(build_workers())
        self._grids: dict = {}

    def shutdown(self):
        """Stop building: the builds not started are dropped (rows past the deadline)."""
        for pool in (self.pool, self.neighbour_pool):
            pool.shutdown(wait=False, cancel_futures=True)

    def grid(self, info, env, dtype):
        """The device grid of a row and its read-only arrays, made once per row, not per
        plan (the same seeded values every time); the two rows in flight
        (:func:`measure_rows`) keep theirs, an older row's are freed first."""
        from an5dpy.perf.bench import device_grid, device_read_only_values
        key = (id(info), dtype)
        if key not in self._grids:
            while len(self._grids) >= GRIDS_KEPT:
                del self._grids[next(iter(self._grids))]
            self._grids[key] = (device_grid(info, env, dtype),
                                device_read_only_values(info, env))
        return self._grids[key]

    def time(self, info, plan, built, env, naive=False, repeats=2, min_run_s=MIN_RUN_S):
        """GFLOP/s, seconds per run, steps used, registers, spills."""
        from an5dpy.perf.bench import gflops, median, time_runs
        from an5dpy.cuda.runtime import CupyRunner
        from an5dpy.perf.tune import own_kernel, probed_steps, run_step_seconds, with_steps
        model, cubin = built
        runner = CupyRunner(info, plan, cubin, model.prefix, model.signature)
        grid, read_only = self.grid(info, env, plan.dtype)
        step = runner.run_naive if naive else runner.run

        def run_for(steps):
            # runs of full launches only: a timing build holds that kernel alone
            run_env = with_steps(info, env, steps)
            return lambda: step(grid, run_env, read_only)

        steps = probed_steps(plan, info.time.steps(env), run_step_seconds(run_for), min_run_s)
        times = time_runs(run_for(steps), repeats, 0)
        run_env = with_steps(info, env, steps)
        seconds = median(times)
        own = cubin.kernel("naive") if naive else own_kernel(cubin, plan)
        return (gflops(info, run_env, seconds), seconds, steps, own.registers if own else None,
                bool(own and own.spills))


def submit_jobs(bench, info, plans, stem, pool=None, model=None):
    """(plan, budget, future build) for every plan without a budget and with the tuner's
    budget (of CAPS) that binds and that ``model`` predicts fastest (every one that binds
    without a model; with one, the budget its register estimate points to is started
    beside the unbudgeted build), on the bench's pool or ``pool``
    (an5dpy.perf.tune.submit_builds)."""
    from functools import partial

    from an5dpy.perf.tune import CAPS, guessed_registers, predicted_gflops, submit_builds
    return submit_builds(pool or bench.pool, info, plans, CAPS, stem, bench.options,
                         timing=True,
                         budget_score=partial(predicted_gflops, model) if model else None,
                         registers_guess=guessed_registers(model) if model else None)


def neighbourhood(bench, info, stem, model, rounds):
    """The tuner's rounds of neighbours for a row (an5dpy.perf.tune.Neighbourhood): the
    neighbours of its fastest plans in up to ``rounds`` rounds, then the fastest build's
    other stream lengths that ``model`` predicts faster, built on the bench's neighbour
    pool (budgets as :func:`submit_jobs`)."""
    from functools import partial

    from an5dpy.perf.tune import Neighbourhood, balanced_stream_plans, neighbour_plans
    return Neighbourhood(lambda plan: neighbour_plans(info, plan),
                         lambda plans: submit_jobs(bench, info, plans, stem,
                                                   bench.neighbour_pool, model),
                         rounds=rounds, balance=partial(balanced_stream_plans, info, model))


def start_screening(bench, info, env, jobs, label, finalists=None, neighbours=None,
                    stopwatch=None):
    """The first half of :func:`screen_and_confirm`: every build screened with a short run
    and, with ``neighbours`` (a Neighbourhood), their builds submitted; the Screening
    (an5dpy.perf.tune.Screening) goes on with :func:`confirmed`."""
    from an5dpy.perf.tune import FINALISTS, SCREEN_S, Screening

    def failed(plan, cap, e):
        print(f"  {label} {plan.describe()} cap {cap}: {type(e).__name__}: {e}", flush=True)

    screening = Screening(
        jobs, lambda p, b: bench.time(info, p, b, env, repeats=1, min_run_s=SCREEN_S)[0],
        lambda p, b: bench.time(info, p, b, env),
        FINALISTS if finalists is None else finalists, on_error=failed,
        neighbourhood=neighbours, stopwatch=stopwatch)
    screening.first_round()
    return screening


def confirmed(screening) -> list[dict]:
    """The second half of :func:`screen_and_confirm`: the neighbours screened, then the
    finalists timed as reported runs; the measured entries, fastest first (finalists carry
    their reported numbers)."""
    from an5dpy.perf.tune import own_kernel
    out = []
    for s in screening.finish():
        if s.final is not None:
            g, sec, steps, regs, spills = s.final
        else:
            g, sec, steps = s.gflops, None, None
            own = own_kernel(s.built[1], s.plan)
            regs, spills = (own.registers, own.spills) if own else (None, False)
        out.append({"plan": s.plan, "cap": s.cap, "gflops": g, "seconds": sec,
                    "steps": steps, "registers": regs, "spills": bool(spills),
                    "final": s.final is not None, "round": s.round,
                    **({"balanced": True} if s.balanced else {})})
    return out


def screen_and_confirm(bench, info, env, jobs, label, finalists=None, neighbours=None,
                       stopwatch=None):
    """Screen every build with short runs (with ``neighbours``, a Neighbourhood, then
    its jobs too), then time the finalists (default: the tuner's FINALISTS) as reported
    runs (an5dpy.perf.tune.screen; ``stopwatch`` sums its waits for builds and its
    timings). Returns the measured entries, fastest first (finalists carry their reported
    numbers)."""
    return confirmed(start_screening(bench, info, env, jobs, label, finalists, neighbours,
                                     stopwatch))


def row_context(row, gpu):
    """The stencil of a measured row, its run parameters, the current model and its
    ranking of the search space and of the row's measured variant plans."""
    from an5dpy.perf.bench import paper_env
    from an5dpy.driver import load
    from an5dpy.perf.model import Model
    from an5dpy.perf.tune import space_with_measured

    program, info = load(os.path.join(C_INPUTS, row["stencil"] + ".c"),
                         (("SB_TYPE", row["dtype"]),))
    env = paper_env(program, info)
    model = Model(info, gpu, env)
    space = space_with_measured(info, gpu, row.get("measured", ()))
    return info, env, model, space, model.rank(space)


def split_redo(rows: list[dict], redo: set[str], dtypes) -> tuple[set, dict]:
    """The (stencil, dtype) pairs of ``rows`` done (all but the rows of the stencils in
    ``redo`` in one of ``dtypes``) and, for each row to measure again, its tuned plan's JSON
    by (stencil, dtype): a candidate again (``measure_rows``). The rows to measure again
    stay in the file until their new measurement replaces them (:func:`put_row`), so a
    run cut short by its deadline loses none."""
    again = {(r["stencil"], r["dtype"]) for r in rows
             if r["stencil"] in redo and r["dtype"] in dtypes}
    done = {(r["stencil"], r["dtype"]) for r in rows} - again
    previous = {(r["stencil"], r["dtype"]): r["best"]["plan"] for r in rows
                if (r["stencil"], r["dtype"]) in again}
    return done, previous


def measure_rows(out_dir: str, names, dtypes, top: int, deadline: float, resume: set,
                 narrow: bool = False, rows_name: str = "rows.jsonl",
                 previous: dict | None = None) -> None:
    """Measure each (stencil, dtype) row not in ``resume`` and put it in
    ``out_dir/rows_name`` (:func:`put_row`: in place of an earlier row of the pair);
    ``original_h200`` is the original tool's GFLOP/s where it has the stencil (the paper's
    21), else None. Two rows are in flight: each row's first round is timed while the row
    before it waits for its second round's builds, then that row is finished (rows are
    written in order). ``previous``: the tuned plan (its JSON) of a
    row measured before (``--redo``), which is measured again among the candidates, so
    that a re-measurement after a change of the kernels or the model keeps the earlier
    best plan in the running."""
    from an5dpy.perf.bench import sconf_plan
    from an5dpy.perf.gpus import get_gpu
    from an5dpy.cuda.runtime import device_name
    from an5dpy.perf.tune import (Stopwatch, paper_ranking, plan_from_json, search_breadth,
                                  space_with_measured, tuning_candidates, variant_plans)

    gpu = get_gpu(device_name())
    bench = Bench()
    rows = []
    for name in names:
        for dtype in dtypes:
            if (name, dtype) in resume:
                continue
            info, env, model, space, ranked = row_context(
                {"stencil": name, "dtype": dtype}, gpu)
            sconf = sconf_plan(info)
            breadth = search_breadth(info, top, not narrow)
            ranking = [(p.plan, p.gflops) for p in ranked]
            paper = paper_ranking(info, gpu, env, space, ranking)
            # the model's best plan in the forms the model does not rank (as the tuner)
            extra = (sconf, *(() if narrow else variant_plans(info, ranking[0][0])))
            if previous and (name, dtype) in previous:
                extra += (plan_from_json(info, previous[(name, dtype)]),)
            plans = tuning_candidates(ranking, paper, breadth.top, extra,
                                      per_bt=breadth.per_bt, per_bs=breadth.per_bs)
            jobs = submit_jobs(bench, info, plans, name.replace("-", "_"), model=model)
            rows.append((name, dtype, info, env, model, sconf, plans, jobs, breadth))

    def finish(name, dtype, info, env, model, sconf, plans, jobs, screening, around,
               stopwatch):
        """The row's second round, finalists, Sconf and naive runs; the row written."""
        measured = []
        for m in confirmed(screening):
            plan = m.pop("plan")
            measured.append({"plan": plan.to_json(), "describe": plan.describe(), **m,
                             "sconf": plan == sconf})
        sconf_built = stopwatch.timed("builds", lambda: next(
            f.result() for p, c, f in jobs if p == sconf and c is None))
        # Sconf is reported as built without a budget, from a reported run: a finalist's
        # run where it was one, else one more
        sconf_run = next((m for m in measured
                          if m["sconf"] and m["cap"] is None and m["final"]), None)
        if sconf_run is None:
            sconf_g, sconf_s, sconf_steps, sconf_regs, sconf_spills = stopwatch.timed(
                "runs", bench.time, info, sconf, sconf_built, env)
            sconf_run = {"plan": sconf.to_json(), "describe": sconf.describe(), "cap": None,
                         "gflops": sconf_g, "seconds": sconf_s, "steps": sconf_steps,
                         "registers": sconf_regs, "spills": sconf_spills, "final": True,
                         "sconf": True}
        naive_g, _, naive_steps, _, _ = stopwatch.timed(
            "runs", bench.time, info, sconf, sconf_built, env, naive=True)
        # the row's share of the run: its waits for builds not done (its first round's,
        # its second round's and Sconf's: each row's builds start with the run's) and its
        # timings on the GPU; the next row's first round, timed while this row's second
        # round built, is that row's
        wall = sum(stopwatch.seconds.values())
        # the model's fields (the tuned plan: the best finalist or Sconf, both timed as
        # reported runs; predictions; the model's and the paper's terms' top 5, of the
        # space and the measured variant plans)
        row = {"stencil": name, "dtype": dtype, "gpu": gpu.name, "kernels": KERNELS,
               "neighbourhood": NEIGHBOURHOOD if around is not None else 0,
               "neighbour_rounds": screening.rounds,
               "sconf": sconf_run,
               "naive_gflops": naive_g, "naive_steps": naive_steps,
               "original_h200": (ORIGINAL_H200[name][0 if dtype == "float" else 1]
                                 if name in ORIGINAL_H200 else None),
               "measured": measured,
               "plans_measured": len({m["describe"] for m in measured}
                                     | {p.describe() for p in plans}),
               # its timings launch the full degree alone (tune.timing_steps)
               "full_launches": True,
               # the budgeted builds: the model's best budget that binds (submit_jobs)
               "budgets": "model",
               "wall_s": round(wall, 1),
               "wall_parts": {kind: round(seconds, 1)
                              for kind, seconds in sorted(stopwatch.seconds.items())},
               # the same seconds by phase of the search (Sconf and naive outside them)
               "wall_phases": {phase: round(seconds, 1)
                               for phase, seconds in stopwatch.phases.items()}}
        space = space_with_measured(info, gpu, measured)
        row = rescore(row, model, model.rank(space), space, gpu, env)
        best = row["best"]
        put_row(out_dir, row, rows_name)
        original = row["original_h200"]
        versus = (f"original {original:7,} x{best['gflops'] / original:.3f}" if original
                  else f"x{best['gflops'] / naive_g:.2f} naive")
        print(f"{name:10s} {dtype:6s} tuned {best['gflops']:9,.0f} ({best['describe']}, regs "
              f"{best['cap'] or '-'}) Sconf {sconf_run['gflops']:9,.0f} naive {naive_g:8,.0f} "
              f"{versus} [{len(measured)} runs, {wall:.0f}s]", flush=True)

    # two rows in flight: a row's first round is timed while the row before it waits for
    # its second round's builds, so the GPU does not idle while nvcc builds them
    pending = None
    for name, dtype, info, env, model, sconf, plans, jobs, breadth in rows:
        if time.time() > deadline:
            print(f"deadline: skipping {name} {dtype}", flush=True)
            continue
        stopwatch = Stopwatch()
        # the tuner's second round, but for --narrow (the model's top plans alone)
        around = None if narrow else neighbourhood(bench, info, name.replace("-", "_"),
                                                   model, breadth.neighbour_rounds)
        screening = start_screening(bench, info, env, jobs, f"{name} {dtype}",
                                    neighbours=around, stopwatch=stopwatch)
        if pending is not None:
            finish(*pending)
        pending = (name, dtype, info, env, model, sconf, plans, jobs, screening, around,
                   stopwatch)
    if pending is not None:
        finish(*pending)
    bench.shutdown()  # builds of rows past the deadline


def rescore(row: dict, model, ranked, space=None, gpu=None, env=None) -> dict:
    """``row`` with the model's fields redone by ``model`` (its ranking ``ranked``): each
    measured entry's prediction, the tuned plan (the fastest reported run, Sconf's
    included), the model's top 5 and whether it holds the tuned plan; with ``space``,
    ``gpu`` and ``env`` also the paper's terms' top 5. The measurements stay as they are."""
    from an5dpy.perf.tune import paper_ranking, plan_from_json, predicted_gflops

    def predicted_for(entry, cap):
        return predicted_gflops(model, plan_from_json(model.info, entry["plan"]), cap)

    out = dict(row)
    out["measured"] = [{**m, "predicted": predicted_for(m, m["cap"])} for m in row["measured"]]
    sconf = dict(row["sconf"], predicted=predicted_for(row["sconf"], None))
    out["sconf"] = sconf
    out["best"] = max([m for m in out["measured"] if m["final"]] + [sconf],
                      key=lambda m: m["gflops"])
    out["model_top5"] = [p.plan.describe() for p in ranked[:5]]
    out["best_in_model_top5"] = out["best"]["describe"] in out["model_top5"]
    out["candidates"] = len(ranked)
    if space is not None:
        ranking = [(p.plan, p.gflops) for p in ranked]
        out["paper_top5"] = [p.describe() for p, _ in
                             paper_ranking(model.info, gpu, env, space, ranking)[:5]]
        out["best_in_paper_top5"] = out["best"]["describe"] in out["paper_top5"]
    return out


def write_rows(out_dir: str, rows, name: str = "rows.jsonl") -> None:
    """Replace DIR/``name`` (atomically)."""
    path = os.path.join(out_dir, name)
    with open(path + ".tmp", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    os.replace(path + ".tmp", path)


def read_jsonl(path: str) -> list[dict]:
    """The records of a .jsonl file, or none where there is no such file."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(map(json.loads, f))


def put_row(out_dir: str, row: dict, name: str = "rows.jsonl") -> None:
    """DIR/``name`` with ``row`` in place of the row of its (stencil, dtype), or after the
    others where it has none (atomically)."""
    path = os.path.join(out_dir, name)
    rows = read_jsonl(path)
    key = (row["stencil"], row["dtype"])
    at = next((k for k, r in enumerate(rows) if (r["stencil"], r["dtype"]) == key), None)
    if at is None:
        rows.append(row)
    else:
        rows[at] = row
    write_rows(out_dir, rows, name)


def supplement_rows(out_dir: str, deadline: float, measure: bool = True) -> None:
    """After a change of the model: rescore every row of DIR/rows.jsonl with it and, with
    ``measure``, first time the plans of its top 5 that the row never measured (each with
    every register budget that binds; the fastest three of them as reported runs), so
    that the table's top-5 column speaks of measured plans only. Rows past the deadline
    are rescored without new runs."""
    from an5dpy.perf.gpus import get_gpu

    rows = [json.loads(line) for line in open(os.path.join(out_dir, "rows.jsonl"))]
    gpu = get_gpu(rows[0]["gpu"])
    bench = Bench() if measure else None
    out = []
    for row in rows:
        info, env, model, space, ranked = row_context(row, gpu)
        seen = {m["describe"] for m in row["measured"]}
        fresh = [p.plan for p in ranked[:5] if p.plan.describe() not in seen]
        if fresh and measure and time.time() < deadline:
            jobs = submit_jobs(bench, info, fresh, row["stencil"].replace("-", "_"))
            added = []
            for m in screen_and_confirm(bench, info, env, jobs,
                                        f"{row['stencil']} {row['dtype']}"):
                plan = m.pop("plan")
                added.append({"plan": plan.to_json(), "describe": plan.describe(), **m,
                              "sconf": False, "supplement": True})
            row = dict(row, measured=row["measured"] + added,
                       plans_measured=row.get("plans_measured", 0) + len(fresh))
            print(f"{row['stencil']:10s} {row['dtype']:6s} measured {len(fresh)} more plans "
                  f"({len(added)} builds)", flush=True)
        out.append(rescore(row, model, ranked, space, gpu, env))
    if bench is not None:
        bench.shutdown()
    write_rows(out_dir, out)


FIG8_DEGREES = {2: (1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16), 3: (1, 2, 3, 4, 5, 6, 7, 8)}


def measure_fig8(out_dir: str, deadline: float, stencils=RAD1) -> None:
    """GFLOP/s vs bT for radius-1 stencils (float), the tuned plan's other options fixed
    (bS, sl, mode, cells per thread, barriers, idle warps), the register budget tuned per
    bT (paper section 7.3). A stencil's points in fig8.jsonl give way to new ones only where
    this run swept all its degrees (:func:`merge_fig8`): a curve is of one run. Nothing is built
    where the deadline has passed already, and the builds of points the deadline cuts are
    dropped (a call of a run split with --resume ends without waiting for them)."""
    from an5dpy.perf.bench import paper_env
    from an5dpy.perf.tune import plan_from_json, plan_with
    from an5dpy.driver import load
    from an5dpy.errors import UsageError

    if time.time() > deadline:
        print("fig8: the deadline has passed; no point swept", flush=True)
        return
    rows = [json.loads(line) for line in open(os.path.join(out_dir, "rows.jsonl"))]
    tuned = {(r["stencil"], r["dtype"]): r["best"] for r in rows}
    bench = Bench()
    work = []
    for name in stencils:
        if (name, "float") not in tuned:
            continue
        best = tuned[(name, "float")]["plan"]
        program, info = load(os.path.join(C_INPUTS, name + ".c"), (("SB_TYPE", "float"),))
        env = paper_env(program, info)
        tuned_plan = plan_from_json(info, best)
        for bt in FIG8_DEGREES[info.ndim]:
            try:
                plan = plan_with(info, tuned_plan, bt=bt)
            except UsageError:
                continue
            work.append((name, info, env, plan,
                         submit_jobs(bench, info, [plan], name.replace("-", "_"))))
    results: dict = {}
    stop = len(work)  # the first point the deadline left out
    for k, (name, info, env, plan, jobs) in enumerate(work):
        if time.time() > deadline:
            stop = k
            break
        measured = screen_and_confirm(bench, info, env, jobs, f"fig8 {name}", finalists=1)
        if measured:
            results[(name, plan.bt)] = measured[0]["gflops"]
    bench.shutdown()  # builds of points past the deadline
    left = {name for name, *_ in work[stop:]}  # stencils with a point not swept
    for name in sorted(left & {name for name, _ in results}):
        print(f"fig8 {name}: the deadline cut its sweep; its earlier points are kept",
              flush=True)
    path = os.path.join(out_dir, "fig8.jsonl")
    earlier = read_jsonl(path)
    write_rows(out_dir, merge_fig8(earlier, results, left), "fig8.jsonl")


def merge_fig8(earlier: list[dict], results: dict, cut: set) -> list[dict]:
    """fig8.jsonl's points: ``earlier`` ones of the stencils without new points or whose
    sweep was ``cut`` short, then the new ``results`` ({(stencil, bT): GFLOP/s}) of the
    stencils swept in full."""
    fresh = {name for name, _ in results} - cut
    return ([d for d in earlier if d["stencil"] not in fresh]
            + [{"stencil": name, "bt": bt, "gflops": g}
               for (name, bt), g in sorted(results.items()) if name in fresh])


# --------------------------------------------------------------------------- several GPUs


#: A row's seconds where no earlier run of it says (its ``wall_s``): dealing rows to GPUs.
ROW_SECONDS_GUESS = 90.0


def deal_stencils(names, weight: dict, parts: int) -> list[list[str]]:
    """``names`` dealt to ``parts`` GPUs, each stencil whole (its rows of both types stay
    in flight together), heaviest first to the least loaded part (``weight``: seconds per
    stencil); each part keeps the order of ``names``."""
    loads = [0.0] * parts
    dealt: list[list[str]] = [[] for _ in range(parts)]
    for name in sorted(names, key=lambda n: -weight[n]):
        k = loads.index(min(loads))
        dealt[k].append(name)
        loads[k] += weight[name]
    order = {n: i for i, n in enumerate(names)}
    return [sorted(d, key=order.get) for d in dealt if d]


def stencil_weights(names, dtypes, rows: list[dict], reference: list[dict] = ()) -> dict:
    """Seconds each stencil's rows of ``dtypes`` took in ``rows`` (an earlier run into the
    same folder), else in ``reference`` (this repository's table of the same GPU), else
    :data:`ROW_SECONDS_GUESS` per row."""
    spent = {(r["stencil"], r["dtype"]): r.get("wall_s") for r in reference}
    spent.update({(r["stencil"], r["dtype"]): r["wall_s"] for r in rows if r.get("wall_s")})
    return {n: sum(spent.get((n, d)) or ROW_SECONDS_GUESS for d in dtypes) for n in names}


def reference_rows(out_dir: str) -> list[dict]:
    """The rows of this repository's table of the GPU ``out_dir`` is named after
    (artifact/<gpu>/rows.jsonl), or none."""
    return read_jsonl(os.path.join(REPO, "artifact", os.path.basename(out_dir), "rows.jsonl"))


def merge_part(out_dir: str, part_out: str) -> None:
    """Put what the part of :func:`run_parts` in ``part_out`` measured into ``out_dir``:
    its rows that are not as its ``seed.jsonl`` (the rows it started with) has them, and
    the Fig. 8 points of the stencils whose points are not as its ``seed_fig8.jsonl`` has
    them (:func:`merge_fig8`). The seeds are removed then: a part is merged once, so a
    later measurement in ``out_dir`` is never replaced by an older part's."""
    seed_file = os.path.join(part_out, "seed.jsonl")
    if not os.path.exists(seed_file):
        return
    part_dir = os.path.join(part_out, os.path.basename(out_dir))
    seed = {(r["stencil"], r["dtype"]): r for r in read_jsonl(seed_file)}
    for row in read_jsonl(os.path.join(part_dir, "rows.jsonl")):
        if seed.get((row["stencil"], row["dtype"])) != row:
            put_row(out_dir, row)
    seed_fig8 = os.path.join(part_out, "seed_fig8.jsonl")
    points = read_jsonl(os.path.join(part_dir, "fig8.jsonl"))
    before = read_jsonl(seed_fig8)

    def curve(records, name):
        return [d for d in records if d["stencil"] == name]

    swept = {d["stencil"] for d in points if curve(points, d["stencil"]) !=
             curve(before, d["stencil"])}
    if swept:
        results = {(d["stencil"], d["bt"]): d["gflops"] for d in points
                   if d["stencil"] in swept}
        earlier = read_jsonl(os.path.join(out_dir, "fig8.jsonl"))
        write_rows(out_dir, merge_fig8(earlier, results, set()), "fig8.jsonl")
    os.remove(seed_file)
    if os.path.exists(seed_fig8):
        os.remove(seed_fig8)


def merge_parts_left(out_dir: str) -> None:
    """Merge the parts an earlier run left unmerged (it was stopped before its parts
    ended) into ``out_dir`` (:func:`merge_part`)."""
    import glob
    for part_out in sorted(glob.glob(os.path.join(out_dir, "parts", "*"))):
        merge_part(out_dir, part_out)


@contextlib.contextmanager
def stopped_by_sigterm():
    """SIGTERM (``timeout``, a job's end) raises KeyboardInterrupt within the block, as
    Ctrl-C does, so that the block can put away what it has before the process ends."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt
    earlier = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, earlier)


def run_parts(args, out_dir: str, gpus: int) -> None:
    """Measure on ``gpus`` GPUs of this host at once: the stencils are dealt to as many
    processes of this script (:func:`deal_stencils`), each with one GPU
    (``CUDA_VISIBLE_DEVICES``) and an equal share of the CPUs (its builds' nvcc processes,
    :func:`an5dpy.cuda.runtime.build_workers`), each measuring into ``out_dir/parts/<k>``,
    seeded with ``out_dir``'s rows and Fig. 8 points (so ``--resume`` and ``--redo`` mean
    what they mean on one GPU). Each part is merged into ``out_dir`` when it ends
    (:func:`merge_part`); stopped (Ctrl-C or SIGTERM), the run stops its parts and merges
    the rows they finished; the parts of a run killed before that are merged by the next
    run with ``--resume`` (:func:`merge_parts_left`). Each part prints its wall time;
    their sum is about what one GPU of such a host takes for the same rows (each part has
    the CPUs a one-GPU machine of the same cores per GPU has)."""
    import shutil
    import subprocess

    from an5dpy.cuda.runtime import device_count
    have = device_count()
    if gpus > have:
        raise ScriptError(f"--gpus {gpus}: this host has {have} GPU(s)")
    rows_file = os.path.join(out_dir, "rows.jsonl")
    if args.resume or args.no_rows:
        merge_parts_left(out_dir)
    elif os.path.exists(rows_file):
        os.remove(rows_file)  # a fresh run, as on one GPU
    rows = read_jsonl(rows_file)
    names = args.stencils.split(",") if args.stencils else NAMES
    dtypes = args.dtypes.split(",")
    done, _ = split_redo(rows, set(args.redo.split(",")) if args.redo else set(), dtypes)
    todo = [n for n in names if args.no_rows or any((n, d) not in done for d in dtypes)]
    dealt = deal_stencils(todo, stencil_weights(todo, dtypes, rows, reference_rows(out_dir)),
                          gpus)
    cpus = sorted(os.sched_getaffinity(0))
    share = max(1, len(cpus) // gpus)
    procs = []
    for k, part in enumerate(dealt):
        part_out = os.path.join(out_dir, "parts", str(k))
        part_dir = os.path.join(part_out, os.path.basename(out_dir))
        shutil.rmtree(part_out, ignore_errors=True)
        os.makedirs(part_dir)
        # what the part starts with, and what it measured is told from (merge_part)
        for folder, name in ((part_dir, "rows.jsonl"), (part_out, "seed.jsonl")):
            write_rows(folder, rows, name)
        if os.path.exists(os.path.join(out_dir, "fig8.jsonl")):
            shutil.copy(os.path.join(out_dir, "fig8.jsonl"), part_dir)
            shutil.copy(os.path.join(out_dir, "fig8.jsonl"),
                        os.path.join(part_out, "seed_fig8.jsonl"))
        fig8 = [n for n in part if n in (args.fig8_stencils.split(",") if args.fig8_stencils
                                        else RAD1)]
        argv = [sys.executable, os.path.abspath(__file__), "--out", part_out, "--resume",
                "--stencils", ",".join(part), "--dtypes", args.dtypes,
                "--top", str(args.top), "--minutes", str(args.minutes)]
        argv += ["--redo", args.redo] if args.redo else []
        argv += ["--narrow"] if args.narrow else []
        argv += ["--no-rows"] if args.no_rows else []
        argv += ["--fig8-stencils", ",".join(fig8)] if fig8 and not args.no_fig8 else [
            "--no-fig8"]
        mine = set(cpus[k * share:(k + 1) * share]) or set(cpus)
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(k))
        log = open(os.path.join(part_out, "log.txt"), "w")
        print(f"part {k} (GPU {k}, {len(mine)} CPUs): {' '.join(part)}", flush=True)
        procs.append((k, part_out, log, time.time(), subprocess.Popen(
            argv, env=env, stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=lambda cpus=mine: os.sched_setaffinity(0, cpus))))
    spent = []
    with stopped_by_sigterm():
        try:
            for k, part_out, log, started, proc in procs:
                status = proc.wait()
                log.close()
                spent.append(time.time() - started)
                print(f"part {k}: exit {status} after {spent[-1]:.0f} s "
                      f"(log: {os.path.join(part_out, 'log.txt')})", flush=True)
                merge_part(out_dir, part_out)
        except KeyboardInterrupt:
            # the parts' finished rows are in their folders: stop the parts and merge them,
            # so that what a stopped run measured is in out_dir's rows.jsonl
            for *_, proc in procs:
                proc.terminate()
            for *_, proc in procs:
                proc.wait()
            merge_parts_left(out_dir)
            raise ScriptError(f"stopped; the rows the parts finished are merged into "
                              f"{os.path.join(out_dir, 'rows.jsonl')}") from None
    print(f"{len(procs)} parts: longest {max(spent, default=0):.0f} s, all together "
          f"{sum(spent):.0f} s (about what one GPU would take)", flush=True)
    failed = [k for k, *_, proc in procs if proc.returncode]
    if failed:
        raise ScriptError(f"part(s) {', '.join(map(str, failed))} failed; see their log.txt")


# --------------------------------------------------------------------------- rendering


class ScriptError(Exception):
    """A mistake or a missing package on the user's side: one line, exit status 2."""


def table_options(row: dict, defines):
    """A row of table5.csv (:func:`render`) as :class:`an5dpy.driver.Options`: its tuned
    plan with every option given (cells per thread, barriers, idle warps and who loads the
    halo too: 1, one per level, skipped and a thread per halo cell where a table has no
    such columns) and its register budget."""
    from an5dpy.driver import Options
    sl = "off" if row["sl"] in ("-", "") else int(row["sl"].replace(",", ""))
    regs = "none" if row["regs"] in ("-", "") else int(row["regs"])
    return Options(bt=int(row["bt"]), bs=row["bs"], sl=sl, opt=row["opt"], regs=regs,
                   coarsen=int(row.get("cells") or 1), barriers=row.get("barriers") or "level",
                   idle=row.get("idle") or "skip", halo=row.get("halo") or "threads",
                   defines=defines)


def render(out_dir: str) -> None:
    import csv
    rows_file = os.path.join(out_dir, "rows.jsonl")
    if not os.path.exists(rows_file):
        raise ScriptError(f"{rows_file} does not exist (measure first, or name a directory "
                          "that holds rows.jsonl)")
    rows = [json.loads(line) for line in open(rows_file)]
    order = {(n, d): i for i, (n, d) in enumerate((n, d) for n in NAMES
                                                 for d in ("float", "double"))}
    rows.sort(key=lambda r: order[(r["stencil"], r["dtype"])])
    gpu = rows[0]["gpu"] if rows else "?"
    fields = ["stencil", "dtype", "bt", "bs", "sl", "opt", "cells", "barriers", "idle", "halo",
              "regs",
              "tuned_gflops",
              "model_gflops", "model_accuracy", "sconf_gflops", "naive_gflops",
              "original_an5d_gflops", "tuned_over_original", "tuned_over_naive",
              "best_in_model_top5", "model_top5_over_tuned", "steps"]
    table = []
    for r in rows:
        b = r["best"]
        p = b["plan"]
        top5_share = model_top5_fraction(r)
        table.append({
            "stencil": r["stencil"], "dtype": r["dtype"], "bt": p["bt"], "bs": p["bs_text"],
            "sl": p["sl"] or "-", "opt": p["opt"], "cells": p.get("coarsen", 1),
            "barriers": p.get("barriers", "level"), "idle": p.get("idle", "skip"),
            "halo": p.get("halo_cells", "threads"), "regs": b["cap"] or "-",
            "tuned_gflops": round(b["gflops"]), "model_gflops": round(b["predicted"]),
            "model_accuracy": round(b["gflops"] / b["predicted"], 3) if b["predicted"] else "",
            "sconf_gflops": round(r["sconf"]["gflops"]) if r["sconf"] else "",
            "naive_gflops": round(r["naive_gflops"]),
            "original_an5d_gflops": r["original_h200"],
            "tuned_over_original": round(b["gflops"] / r["original_h200"], 3),
            "tuned_over_naive": round(b["gflops"] / r["naive_gflops"], 3),
            "best_in_model_top5": r["best_in_model_top5"],
            "model_top5_over_tuned": "" if top5_share is None else round(top5_share, 3),
            "steps": b["steps"]})
    with open(os.path.join(out_dir, "table5.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(table)
    lines = [f"# Table 5 on {gpu}", "",
             "Tuned: the fastest measured plan. Candidates: the model's top 5 plans (on "
             "Hopper with its issue term, each plan at its best register budget; where the "
             "model changed after a row was measured, `--supplement` measured the current "
             "model's top-5 plans the row lacked, marked `supplement` in rows.jsonl), the best "
             "plan for every bT and every bS that the paper's terms alone predict within "
             "half of their best (top 3 and no bT sweep for stencils of more than 200 "
             "FLOP/cell), the model's best plan with 2 and 4 cells per thread and, in mode "
             "nondiag, with one barrier per step (`an5dpy/perf/tune.py`, `variant_plans`), "
             "and Sconf; then the neighbours of the two fastest of these (their variants "
             "and their bT - 1, bT + 1 and 2 bT, and their blocks with one side halved or "
             "doubled: `neighbour_plans`; `neighbourhood` in rows.jsonl: 2 where the "
             "blocks were not among them, 1 where 2 bT was not either); "
             "each built with no register budget and with those of 32, 64 and 96 that bind "
             "(ptxas gave the plan more registers without it): the one the model predicts "
             "fastest (`budgets: model` in rows.jsonl), or in rows measured before that "
             "rule each one. Every build is timed "
             "once with a short run (about 0.05 s); the three fastest and Sconf are timed "
             "again as reported runs. Model: the performance model's prediction for the "
             "tuned plan at the register budget it was built with. Accuracy = tuned / model. Original AN5D: its kernels on an H200 "
             "(reference numbers of issue 5). GFLOP/s = interior cells x FLOP/cell x steps "
             "/ time (CUDA events, median of 2 after a warm-up, transfers excluded); sizes "
             "16384^2 / 512^3; each reported run has the step count (at most 1000) that "
             "makes it last about 0.2 s (column `steps`; GFLOP/s is a rate; rows measured "
             "since builds hold the full degree's kernel alone round it to launches of "
             "that degree: `full_launches` in rows.jsonl). `best in "
             "model top 5`: whether the tuned plan is among the model's 5 highest-ranked "
             "plans (column `measured` in rows.jsonl lists every candidate); `top 5 / tuned`: "
             "the fastest measured plan of the model's top 5 over the tuned plan (what "
             "measuring only the model's top 5 would keep).", "",
             "| stencil | dtype | bT | bS | sl | opt | cells/thread | barriers | idle warps "
             "| halo | regs | tuned "
             "| model | acc. | Sconf | naive | original AN5D | tuned/orig. | tuned/naive "
             "| best in model top 5 | top 5 / tuned | steps |",
             "|" + "---|" * len(fields)]
    for t in table:
        lines.append("| " + " | ".join(
            f"{t[k]:,}" if isinstance(t[k], int) and not isinstance(t[k], bool) else str(t[k])
            for k in fields) + " |")
    lines.append("")
    summary = len(lines)
    for dtype in ("float", "double"):
        sel = [t for t in table if t["dtype"] == dtype]
        if not sel:
            continue
        lines.append(f"- {dtype}: geomean tuned / original AN5D = "
                     f"{geomean(t['tuned_over_original'] for t in sel):.3f}, tuned / naive = "
                     f"{geomean(t['tuned_over_naive'] for t in sel):.3f}, rows at or above the "
                     f"original: {sum(t['tuned_over_original'] >= 1 for t in sel)}/{len(sel)}, "
                     f"tuned >= Sconf: "
                     f"{sum(t['tuned_gflops'] >= (t['sconf_gflops'] or 0) for t in sel)}/{len(sel)}")
    hits = sum(t["best_in_model_top5"] for t in table)
    lines.append(f"- best measured plan within the model's top 5: {hits}/{len(table)} rows")
    shares = [t["model_top5_over_tuned"] for t in table if t["model_top5_over_tuned"] != ""]
    if shares:
        lines.append(f"- the model's top 5 holds a plan within 3% of the tuned one on "
                     f"{sum(k >= 0.97 for k in shares)}/{len(shares)} rows (within 10%: "
                     f"{sum(k >= 0.9 for k in shares)}); geomean top 5 / tuned: "
                     f"{geomean(shares):.3f}")
    paper = [r["best_in_paper_top5"] for r in rows if "best_in_paper_top5" in r]
    if paper:
        lines.append(f"- within the top 5 of the paper's terms alone: {sum(paper)}/"
                     f"{len(paper)} rows")
    earlier = [f"{r['stencil']} {r['dtype']}" for r in rows if kernels_outdated(r)]
    if earlier:
        lines.append(f"- measured with kernels of an earlier generation (the kernels' "
                     f"generation {KERNELS} is not measured there; see KERNELS in "
                     f"scripts/artifact.py): {', '.join(earlier)}")
    alone = [f"{r['stencil']} {r['dtype']}" for r in rows if not r.get("neighbourhood")]
    if alone:
        lines.append(f"- measured without the neighbours of the fastest plans (before the "
                     f"tuner's second round): {', '.join(alone)}")
    for level, how in ((1, "a second round without 2 bT, the halved and doubled blocks and "
                           "the later rounds"),
                       (2, "a second round without the halved and doubled blocks and the "
                           "later rounds"),
                       (3, "a second round without the later rounds (the neighbours of "
                           "plans that became the fastest; roots of distinct shapes)"),
                       (4, "later rounds that climbed from the two fastest shapes, not "
                           "from the fastest alone (and did not record each plan's round)")):
        near = [f"{r['stencil']} {r['dtype']}" for r in rows
                if r.get("neighbourhood", 0) == level]
        if near:
            lines.append(f"- measured with {how} (NEIGHBOURHOOD {level}; "
                         f"{NEIGHBOURHOOD} in scripts/artifact.py now): {', '.join(near)}")
    timed = [r["wall_s"] for r in rows if "wall_s" in r]
    if timed:
        lines.append(f"- time of the rows that recorded it (builds they waited for, timings, "
                     f"second round): {len(timed)} rows, {sum(timed):,.0f} s, "
                     f"{sum(timed) / len(timed):.0f} s a row (from {min(timed):.0f} to "
                     f"{max(timed):.0f})")
    parts = [r["wall_parts"] for r in rows if "wall_parts" in r]
    if parts:
        waits, runs = (sum(p.get(kind, 0.0) for p in parts) for kind in ("builds", "runs"))
        lines.append(f"- of the time of the {len(parts)} rows that split it: waiting for "
                     f"builds {waits:,.0f} s, timed runs {runs:,.0f} s")
    phased = [r["wall_phases"] for r in rows if "wall_phases" in r]
    if phased:
        lines.append(f"- by phase of the search, the {len(phased)} rows that recorded it: "
                     + ", ".join(f"{name} {seconds:,.0f} s"
                                 for name, seconds in phase_totals(phased).items()))
    older = [f"{r['stencil']} {r['dtype']}" for r in rows if not measured_variants(r)]
    if older:
        lines.append(f"- measured before plans had cells per thread and barrier modes (no "
                     f"variants among the candidates): {', '.join(older)}")
    lines.append(f"- model accuracy (tuned / model), geomean: "
                 f"{geomean(t['model_accuracy'] for t in table if t['model_accuracy']):.3f}")
    with open(os.path.join(out_dir, "table5.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[summary:]))
    plot(out_dir, rows, gpu)


def phase_totals(phased: list[dict]) -> dict[str, float]:
    """Seconds per phase of the search summed over rows (``wall_phases``), the first round
    first, the rounds of neighbours summed as one, then the stream lengths, the finalists
    and any other phase."""
    totals: dict[str, float] = {}
    for phases in phased:
        for name, seconds in phases.items():
            key = "neighbour rounds" if name.startswith("round ") else name
            totals[key] = totals.get(key, 0.0) + seconds
    order = ["first round", "neighbour rounds", "stream lengths", "finalists"]
    return {k: totals[k] for k in order + sorted(set(totals) - set(order)) if k in totals}


def plot(out_dir: str, rows, gpu: str) -> None:
    try:
        import matplotlib
    except ImportError:
        raise ScriptError(f"the tables are written to {out_dir}; the plots need matplotlib: "
                          "pip install '.[plot]' (or pip install matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig8 = os.path.join(out_dir, "fig8.jsonl")
    if os.path.exists(fig8):
        data = [json.loads(line) for line in open(fig8)]
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for ax, nd in zip(axes, ("2d", "3d")):
            for name in RAD1:
                pts = sorted((d["bt"], d["gflops"]) for d in data
                             if d["stencil"] == name and nd in name)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
            ax.set_xlabel("temporal blocking degree bT")
            ax.set_ylabel("GFLOP/s")
            ax.set_title(f"{nd.upper()}, radius 1, float ({gpu})")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "fig8.png"), dpi=120)
        plt.close(fig)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    best = {(r["stencil"], r["dtype"]): r["best"]["gflops"] for r in rows}
    for ax, dtype in zip(axes, ("float", "double")):
        for shape in ("star2d", "box2d", "star3d", "box3d"):
            ys = [best.get((f"{shape}{x}r", dtype)) for x in range(1, 5)]
            if any(y is not None for y in ys):
                ax.plot(range(1, 5), [y or float("nan") for y in ys], marker="o", label=shape)
        ax.set_xticks(range(1, 5))
        ax.set_xlabel("stencil order (radius)")
        ax.set_ylabel("tuned GFLOP/s")
        ax.set_title(f"star/box stencils, {dtype} ({gpu})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "fig9.png"), dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    try:
        return run(argv)
    except ScriptError as e:
        print(f"artifact.py: error: {e}", file=sys.stderr)
        return 2


def run(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(REPO, "artifact"))
    ap.add_argument("--render-only", metavar="DIR", help="render DIR/rows.jsonl and stop")
    ap.add_argument("--supplement", metavar="DIR", help="after a model change: measure the "
                    "plans of the model's top 5 that DIR/rows.jsonl lacks, rescore every "
                    "row with the model and render")
    ap.add_argument("--rescore", metavar="DIR", help="rescore DIR/rows.jsonl with the "
                    "current model (no GPU, no new runs) and render")
    ap.add_argument("--stencils", help="comma-separated subset (default: all 21)")
    ap.add_argument("--dtypes", default="float,double")
    ap.add_argument("--top", type=int, default=5, help="model-ranked plans measured per row "
                    "(besides the model's best plan per bT and per bS, and Sconf)")
    ap.add_argument("--minutes", type=float, default=60.0, help="stop starting rows after this")
    ap.add_argument("--resume", action="store_true", help="skip rows already in rows.jsonl")
    ap.add_argument("--narrow", action="store_true", help="measure only the model's top "
                    "plans and Sconf (no sweep over bT and bS; for a short device budget)")
    ap.add_argument("--no-fig8", action="store_true")
    ap.add_argument("--no-rows", action="store_true", help="only Fig. 8 (needs rows.jsonl)")
    ap.add_argument("--fig8-stencils", help="comma-separated subset of the radius-1 stencils")
    ap.add_argument("--gpus", type=int, default=1, help="measure on this many GPUs of "
                    "this host at once, the stencils dealt to one process per GPU")
    ap.add_argument("--redo", help="comma-separated stencils to measure again (with --resume; "
                    "their rows of --dtypes; each row's earlier tuned plan is among the "
                    "candidates again, and the row stays until its new one replaces it)")
    args = ap.parse_args(argv)
    if args.render_only:
        render(args.render_only)
        return 0
    if args.supplement or args.rescore:
        out_dir = args.supplement or args.rescore
        supplement_rows(out_dir, time.time() + 60 * args.minutes, measure=bool(args.supplement))
        render(out_dir)
        return 0
    from an5dpy.cuda.runtime import device_name
    out_dir = os.path.join(args.out, gpu_slug(device_name()))
    os.makedirs(out_dir, exist_ok=True)
    if args.gpus > 1:
        run_parts(args, out_dir, args.gpus)
        render(out_dir)
        return 0
    rows_file = os.path.join(out_dir, "rows.jsonl")
    done, previous = set(), {}
    if (args.resume or args.no_rows) and os.path.exists(rows_file):
        redo = set(args.redo.split(",")) if args.redo else set()
        done, previous = split_redo(read_jsonl(rows_file), redo, args.dtypes.split(","))
    elif os.path.exists(rows_file):
        os.remove(rows_file)
    deadline = time.time() + 60 * args.minutes
    names = args.stencils.split(",") if args.stencils else NAMES
    if not args.no_rows:
        measure_rows(out_dir, names, args.dtypes.split(","), args.top, deadline, done,
                     args.narrow, previous=previous)
    if not args.no_fig8:
        stencils = args.fig8_stencils.split(",") if args.fig8_stencils else RAD1
        measure_fig8(out_dir, deadline, stencils)
    render(out_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
