#!/usr/bin/env python3
"""How well the performance model ranks plans that were measured, without a GPU.

    python scripts/model_check.py artifact/H200            # the model as it is now
    python scripts/model_check.py artifact/H200 --rows j2d5pt/float,star3d1r/double
    python scripts/model_check.py artifact/H200 --budgets   # the builds the tuner keeps

Reads an artifact's rows.jsonl (every candidate's measured GFLOP/s, see
scripts/artifact.py) and ranks each row's search space, with the row's measured variant
plans (cells per thread, one barrier per step, which the tuner measures beside the model's
plans), with the model of this checkout and with the paper's terms alone. Per row and in
total it reports:

* ``top5``: the row's fastest measured plan is in the model's top 5 (the issue 5 target);
* ``unmeasured``: plans of that top 5 that the artifact never measured (a miss there may
  only mean "not measured": run the artifact again to know);
* ``measured top5``: the fastest plan is among the 5 measured plans the model ranks
  highest (how well it orders what was measured);
* ``accuracy``: tuned / model for the tuned plan at the register budget it was built with.

With ``--budgets`` it asks instead whether the tuner's rule for register budgets would
have found each row's fastest build: a plan is built without a budget and with the one
budget that binds that the model predicts fastest (an5dpy.perf.tune.submit_builds), where
the rows were measured with every budget that binds (rows marked ``budgets: model`` were
measured with the rule already and hold nothing else to compare).

Use it to judge a model change against existing measurements before spending GPU time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

C_INPUTS = os.path.join(REPO, "c_inputs")


def row_model(row: dict, gpu):
    """The stencil of a measured row, its run's parameters and the model of it on ``gpu``."""
    from an5dpy.perf.bench import paper_env
    from an5dpy.driver import load
    from an5dpy.perf.model import Model

    program, info = load(os.path.join(C_INPUTS, row["stencil"] + ".c"),
                         (("SB_TYPE", row["dtype"]),))
    env = paper_env(program, info)
    return info, env, Model(info, gpu, env)


def check_row(row: dict, gpu) -> dict:
    """The model's and the paper's terms' view of one measured row."""
    from an5dpy.perf.tune import paper_ranking, space_with_measured

    info, env, model = row_model(row, gpu)
    space = space_with_measured(info, gpu, row["measured"])
    measured: dict[str, float] = {}
    for m in row["measured"]:
        measured[m["describe"]] = max(measured.get(m["describe"], 0.0), m["gflops"])
    best = row["best"]
    out = {"row": f"{row['stencil']}/{row['dtype']}", "best": best["describe"]}
    ranking = [(p.plan, p.gflops) for p in model.rank(space)]
    for label, ranked in (("model", ranking),
                          ("paper", paper_ranking(info, gpu, env, space, ranking))):
        order = [p.describe() for p, _ in ranked]
        top5 = order[:5]
        out[label] = {
            "top5": best["describe"] in top5,
            "unmeasured": sum(d not in measured for d in top5),
            "measured_top5": best["describe"] in [d for d in order if d in measured][:5],
        }
    plan = next((p for p in space if p.describe() == best["describe"]), None)
    try:
        predicted = model.predict(plan, best.get("cap")).gflops if plan else 0.0
    except Exception:  # noqa: BLE001 - a plan the model cannot place has no accuracy
        predicted = 0.0
    out["accuracy"] = best["gflops"] / predicted if predicted > 0 else None
    return out


def check_budgets(row: dict, gpu) -> dict:
    """The builds of a row that the tuner's budget rule keeps: per plan the unbudgeted one
    and the budget (of those measured, which are those that bound) the model predicts
    fastest. ``fastest_kept``: the row's fastest build is among them; ``kept`` and
    ``builds``: how many builds there are; ``plan_ratios``: per plan, its best kept build
    over its best build."""
    from an5dpy.perf.tune import model_budget, plan_from_json, predicted_gflops

    info, _, model = row_model(row, gpu)
    builds: dict[str, dict] = {}  # describe -> cap -> best GFLOP/s
    plans = {}
    for m in row["measured"]:
        caps = builds.setdefault(m["describe"], {})
        caps[m["cap"]] = max(caps.get(m["cap"], 0.0), m["gflops"])
        plans.setdefault(m["describe"], m["plan"])
    fastest = max(g for caps in builds.values() for g in caps.values())
    kept_best, kept, ratios = 0.0, 0, []
    for describe, caps in builds.items():
        plan = plan_from_json(info, plans[describe])
        budget = model_budget([c for c in caps if c is not None],
                              lambda c: predicted_gflops(model, plan, c))
        chosen = ([None] if None in caps else []) + ([budget] if budget is not None else [])
        best_kept = max(caps[c] for c in chosen)
        kept += len(chosen)
        kept_best = max(kept_best, best_kept)
        ratios.append(best_kept / max(caps.values()))
    return {"row": f"{row['stencil']}/{row['dtype']}", "fastest_kept": kept_best >= fastest,
            "kept_over_fastest": kept_best / fastest, "kept": kept,
            "builds": sum(map(len, builds.values())), "plan_ratios": ratios}


def budget_summary(results: list[dict]) -> str:
    ratios = [r for result in results for r in result["plan_ratios"]]
    return (f"the unbudgeted build and the model's best budget that binds hold the fastest "
            f"build on {sum(r['fastest_kept'] for r in results)}/{len(results)} rows, with "
            f"{sum(r['kept'] for r in results)} of {sum(r['builds'] for r in results)} "
            f"builds; per plan, its best kept build over its best build: "
            f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f} in geomean, "
            f"{sum(r < 0.97 for r in ratios)} of {len(ratios)} plans below 0.97")


def summary(results: list[dict]) -> list[str]:
    n = len(results)
    lines = []
    for label, name in (("model", "model"), ("paper", "paper's terms alone")):
        hits = sum(r[label]["top5"] for r in results)
        inside = sum(r[label]["measured_top5"] for r in results)
        unmeasured = sum(r[label]["unmeasured"] for r in results)
        lines.append(f"{name}: fastest in its top 5 on {hits}/{n} rows "
                     f"({unmeasured} of {5 * n} top-5 plans never measured); among the "
                     f"measured plans on {inside}/{n}")
    acc = [r["accuracy"] for r in results if r["accuracy"]]
    if acc:
        lines.append(f"model accuracy (tuned / model), geomean: "
                     f"{math.exp(sum(map(math.log, acc)) / len(acc)):.3f}")
    return lines


def main(argv=None) -> int:
    from an5dpy.perf.gpus import get_gpu
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("artifact_dir", help="folder with rows.jsonl (e.g. artifact/H200)")
    ap.add_argument("--gpu", help="GPU of the model (default: the rows' GPU)")
    ap.add_argument("--rows", help="comma-separated stencil/dtype subset")
    ap.add_argument("--budgets", action="store_true", help="whether the tuner's budget "
                    "rule keeps each row's fastest build")
    args = ap.parse_args(argv)
    with open(os.path.join(args.artifact_dir, "rows.jsonl")) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    if args.rows:
        wanted = set(args.rows.split(","))
        rows = [r for r in rows if f"{r['stencil']}/{r['dtype']}" in wanted]
    if not rows:
        print("no rows", file=sys.stderr)
        return 2
    gpu = get_gpu(args.gpu or rows[0]["gpu"])
    if args.budgets:
        results = [check_budgets(r, gpu) for r in rows]
        print(f"{'row':20s} {'fastest kept':>12s} {'kept / fastest':>14s} builds kept")
        for r in results:
            print(f"{r['row']:20s} {str(r['fastest_kept']):>12s} "
                  f"{r['kept_over_fastest']:14.3f} {r['kept']} of {r['builds']}")
        print(budget_summary(results))
        return 0
    results = [check_row(r, gpu) for r in rows]
    print(f"{'row':20s} {'model top5':>10s} {'paper top5':>10s} {'measured':>9s} accuracy")
    for r in results:
        acc = f"{r['accuracy']:.3f}" if r["accuracy"] else "-"
        print(f"{r['row']:20s} {str(r['model']['top5']):>10s} {str(r['paper']['top5']):>10s} "
              f"{str(r['model']['measured_top5']):>9s} {acc}")
    print("\n".join(summary(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
