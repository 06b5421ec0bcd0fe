#!/usr/bin/env python3
"""Cells per thread against one cell per thread, side by side on the present GPU.

    python scripts/coarsen_compare.py --rows artifact/H200/rows.jsonl \
        --stencils star3d1r,j2d5pt --dtypes float --minutes 5 --out /tmp/coarsen

For each measured row (its tuned plan and register budget, as ``scripts/artifact.py``
wrote them), the variants are the tuned plan itself and the tuner's coarsened plans of it
(:func:`an5dpy.perf.tune.coarsened_plans`: for 2 and 4 cells per thread, the same block of
cells with fewer threads and a block of as many threads with more cells along the
outermost in-plane dimension). Each variant is built with each of the tuner's register budgets that
binds, screened with short runs, and the fastest three (the tuned plan among them, always)
are timed as reported runs, in one process, one after the other. Rows go to
``<out>/coarsen.jsonl`` as they finish; the table (``<out>/coarsen.md``) gives each row's
tuned plan, its best variant and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

def compare_row(bench, row, gpu):
    """One row's measurements: every variant's best (plan, budget, GFLOP/s), the tuned
    plan's own reported run, and the best variant."""
    import artifact
    from an5dpy.perf.tune import coarsened_plans, plan_from_json
    info, env, _model, _space, _ranked = artifact.row_context(row, gpu)
    tuned = plan_from_json(info, row["best"]["plan"])
    plans = [tuned, *coarsened_plans(info, tuned)]
    jobs = artifact.submit_jobs(bench, info, plans, row["stencil"].replace("-", "_"))
    measured = artifact.screen_and_confirm(bench, info, env, jobs, row["stencil"])
    reported = [m for m in measured if m["final"]]
    best = max(reported, key=lambda m: m["gflops"]) if reported else None
    # the tuned plan at its own budget (or none, where that budget does not bind), timed
    # as a reported run right after the variants
    builds = {(p, c): fut.result() for p, c, fut in jobs if p == tuned}
    built = builds.get((tuned, row["best"]["cap"])) or builds[(tuned, None)]
    base = bench.time(info, tuned, built, env)[0]
    return {
        "stencil": row["stencil"], "dtype": row["dtype"], "gpu": row["gpu"],
        "tuned": {"describe": tuned.describe(), "cap": row["best"]["cap"],
                  "artifact_gflops": row["best"]["gflops"],
                  "gflops": base},
        "best": ({"describe": best["plan"].describe(), "cap": best["cap"],
                  "coarsen": best["plan"].coarsen, "gflops": best["gflops"],
                  "registers": best["registers"], "spills": best["spills"]} if best else None),
        "measured": [{"describe": m["plan"].describe(), "cap": m["cap"], "gflops": m["gflops"],
                      "final": m["final"], "registers": m["registers"]} for m in measured],
    }


def render(rows) -> str:
    lines = ["| stencil | dtype | tuned plan | tuned GFLOP/s | best variant | GFLOP/s | "
             "best / tuned |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        t, b = r["tuned"], r["best"]
        base = t["gflops"] or t["artifact_gflops"]
        ratio = b["gflops"] / base if b and base else float("nan")
        lines.append(f"| {r['stencil']} | {r['dtype']} | {t['describe']} regs {t['cap'] or '-'} | "
                     f"{base:,.0f} | {b['describe'] if b else '-'} regs "
                     f"{(b['cap'] or '-') if b else '-'} | {b['gflops'] if b else 0:,.0f} | "
                     f"{ratio:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", required=True, help="an artifact's rows.jsonl")
    ap.add_argument("--stencils", default="", help="comma-separated (default: every row)")
    ap.add_argument("--dtypes", default="float,double")
    ap.add_argument("--minutes", type=float, default=30.0, help="stop starting rows after this")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    import artifact
    from an5dpy.perf.gpus import get_gpu
    from an5dpy.cuda.runtime import device_name

    wanted = set(filter(None, args.stencils.split(",")))
    dtypes = set(args.dtypes.split(","))
    with open(args.rows) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    rows = [r for r in rows if (not wanted or r["stencil"] in wanted) and r["dtype"] in dtypes]
    os.makedirs(args.out, exist_ok=True)
    gpu = get_gpu(device_name())
    bench = artifact.Bench()
    deadline = time.time() + 60 * args.minutes
    done = []
    for row in rows:
        if time.time() > deadline:
            print(f"deadline: {row['stencil']} {row['dtype']} and later rows not measured")
            break
        result = compare_row(bench, row, gpu)
        done.append(result)
        with open(os.path.join(args.out, "coarsen.jsonl"), "a") as f:
            f.write(json.dumps(result) + "\n")
        print(render([result]).splitlines()[-1], flush=True)
    table = render(done)
    with open(os.path.join(args.out, "coarsen.md"), "w") as f:
        f.write(f"# Cells per thread against the tuned plan ({device_name()})\n\n{table}")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
