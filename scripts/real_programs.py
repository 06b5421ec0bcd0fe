#!/usr/bin/env python3
"""Measure the hand-written programs of c_inputs/ (read-only arrays, rotating time levels,
time steps of several statements) on the present GPU, the way scripts/artifact.py measures
the paper's benchmarks.

    python scripts/real_programs.py                   # measure, then render
    python scripts/real_programs.py --resume          # go on with rows not measured yet
    python scripts/real_programs.py --render-only DIR # the table from DIR/hand_written.jsonl

For each program x float/double at the paper's size for its dimension (16384^2 / 512^3,
1000 steps): the tuner's candidates (the model's top plans and its best per bT and per bS,
and Sconf) are built and timed, the fastest are timed again, and the best is "tuned"; the
naive one-kernel-per-step version of the same program (an5d-translate --baseline's
kernel; one kernel per sub-step for a time step of several statements) is timed too.
GFLOP/s count the program's BENCH_FPP FLOPs per cell (the paper's counting; an5d analyze
gives the same number). Rows go to <out>/<gpu>/hand_written.jsonl;
the table to hand_written.md and hand_written.csv: tuned and naive GFLOP/s and their
ratio, the model's prediction of the tuned plan, and whether the model's top 5 holds it.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import artifact  # noqa: E402  (the measuring machinery of the paper's table)

#: The hand-written programs, in the order of c_inputs/check.sh.
PROGRAMS = ("poisson2d", "varheat2d", "wave2d", "acoustic3d", "heat3dz", "dampedwave2d",
            "grayscott2d", "fdtd2d", "acousticvp3d")
ROWS = "hand_written.jsonl"
#: The memory-bound programs' bar (issue 15): tuned at least twice the naive kernel.
BAR = 2.0


def table_rows(rows: list[dict]) -> list[dict]:
    """One line per measured row, in PROGRAMS order."""
    order = {name: k for k, name in enumerate(PROGRAMS)}
    out = []
    for row in sorted(rows, key=lambda r: (order.get(r["stencil"], 99), r["dtype"])):
        best = row["best"]
        top5 = artifact.model_top5_fraction(row)
        out.append({
            "program": row["stencil"], "dtype": row["dtype"],
            "tuned_gflops": round(best["gflops"]), "tuned_plan": best["describe"],
            "registers_cap": best["cap"] or "",
            "naive_gflops": round(row["naive_gflops"]),
            "tuned_over_naive": round(best["gflops"] / row["naive_gflops"], 2),
            "model_gflops": round(best["predicted"]),
            "in_model_top5": "yes" if row["best_in_model_top5"] else "no",
            "top5_over_tuned": "" if top5 is None else round(top5, 3),
            "sconf_gflops": round(row["sconf"]["gflops"]),
            "plans_measured": row["plans_measured"]})
    return out


def render(out_dir: str) -> None:
    path = os.path.join(out_dir, ROWS)
    rows = [json.loads(line) for line in open(path)]
    lines = table_rows(rows)
    if not lines:
        raise artifact.ScriptError(f"{path} holds no rows")
    with open(os.path.join(out_dir, "hand_written.csv.tmp"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(lines[0]))
        writer.writeheader()
        writer.writerows(lines)
    os.replace(os.path.join(out_dir, "hand_written.csv.tmp"),
               os.path.join(out_dir, "hand_written.csv"))
    gpu = rows[0]["gpu"]
    md = [f"# Hand-written programs on {gpu}", "",
          "Paper sizes (16384^2, 512^3), GFLOP/s with the programs' BENCH_FPP. Tuned: the "
          "fastest of the tuner's candidates; naive: one kernel per time step (per sub-step "
          "where a step has several statements), one thread per cell; model: the prediction for the tuned plan; top 5: whether the model's "
          "first five plans hold it, and the fastest of them over tuned.", "",
          "| program | dtype | tuned | plan | naive | tuned/naive | model | top 5 | top5/tuned |",
          "|---|---|---:|---|---:|---:|---:|---|---:|"]
    for r in lines:
        md.append(f"| {r['program']} | {r['dtype']} | {r['tuned_gflops']:,} | "
                  f"{r['tuned_plan']} | {r['naive_gflops']:,} | {r['tuned_over_naive']:.2f} | "
                  f"{r['model_gflops']:,} | {r['in_model_top5']} | {r['top5_over_tuned']} |")
    ratios = [r["tuned_over_naive"] for r in lines]
    md += ["", f"Geomean tuned/naive {artifact.geomean(ratios):.2f}; "
           f"{sum(x >= BAR for x in ratios)} of {len(ratios)} rows at least {BAR:g}x; "
           f"model top 5 holds the tuned plan in "
           f"{sum(r['in_model_top5'] == 'yes' for r in lines)} of {len(lines)}."]
    with open(os.path.join(out_dir, "hand_written.md.tmp"), "w") as f:
        f.write("\n".join(md) + "\n")
    os.replace(os.path.join(out_dir, "hand_written.md.tmp"),
               os.path.join(out_dir, "hand_written.md"))
    print("\n".join(md))


def run(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(artifact.REPO, "artifact"))
    ap.add_argument("--render-only", metavar="DIR", help="render DIR/hand_written.jsonl")
    ap.add_argument("--programs", help="comma-separated subset (default: all)")
    ap.add_argument("--dtypes", default="float,double")
    ap.add_argument("--top", type=int, default=5, help="model-ranked plans measured per row")
    ap.add_argument("--minutes", type=float, default=60.0, help="stop starting rows after this")
    ap.add_argument("--resume", action="store_true", help="skip rows already measured")
    args = ap.parse_args(argv)
    if args.render_only:
        render(args.render_only)
        return 0
    names = args.programs.split(",") if args.programs else list(PROGRAMS)
    unknown = sorted(set(names) - set(PROGRAMS))
    if unknown:
        raise artifact.ScriptError(f"not a hand-written program: {', '.join(unknown)}")
    from an5dpy.cuda.runtime import device_name
    out_dir = os.path.join(args.out, artifact.gpu_slug(device_name()))
    os.makedirs(out_dir, exist_ok=True)
    rows_file = os.path.join(out_dir, ROWS)
    done = set()
    if args.resume and os.path.exists(rows_file):
        done = {(r["stencil"], r["dtype"]) for r in map(json.loads, open(rows_file))}
    elif os.path.exists(rows_file):
        os.remove(rows_file)
    artifact.measure_rows(out_dir, names, args.dtypes.split(","), args.top,
                          time.time() + 60 * args.minutes, done, rows_name=ROWS)
    render(out_dir)
    return 0


def main(argv=None) -> int:
    try:
        return run(argv)
    except artifact.ScriptError as e:
        print(f"real_programs.py: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
