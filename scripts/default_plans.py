#!/usr/bin/env python3
"""Measure the plan an5dpy picks by default against the tuned plan of an artifact table.

    python scripts/default_plans.py [--table artifact/H200/table5.csv]
                                    [--rows j2d5pt/float,star3d1r/double,...] [--repeats 5]

For each row it builds and times, in one process and alternately, the default plan (every
plan option open: the model's choice for the GPU present, as ``an5d-translate`` without
``--bt/--bs/--sl/--regs`` makes it) and the row's tuned plan from the table (with its
register budget), at the paper's sizes (16384^2 or 512^3, 1000 steps), and prints a table
of GFLOP/s and their ratio last. Needs a GPU and cupy.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
C_INPUTS = os.path.join(REPO, "c_inputs")
DEFAULT_ROWS = ("j2d5pt/float,j2d5pt/double,star3d1r/float,star3d1r/double,"
                "box2d2r/float,box2d2r/double")


# the table row's plan as Options, every option given (a script beside this one)
from artifact import table_options as tuned_options  # noqa: E402


def measure_row(row: dict, repeats: int) -> dict:
    from an5dpy import driver
    from an5dpy.perf.bench import bench_plan, paper_env
    defines = (("SB_TYPE", row["dtype"]),)
    path = os.path.join(C_INPUTS, row["stencil"] + ".c")
    program, info = driver.load(path, defines)
    env = paper_env(program, info)
    default = driver.choose_plan(info, driver.Options(defines=defines), env)
    tuned = driver.choose_plan(info, tuned_options(row, defines), env)
    results = {}
    for label, choice in (("default", default), ("tuned", tuned)):
        results[label] = bench_plan(info, choice.plan, env, row["stencil"],
                                    maxrregcount=choice.regs, repeats=repeats,
                                    label=choice.summary())
    return {"row": f"{row['stencil']}/{row['dtype']}", "default": results["default"],
            "tuned": results["tuned"], "table": float(row["tuned_gflops"])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", default=os.path.join(REPO, "artifact", "H200", "table5.csv"))
    ap.add_argument("--rows", default=DEFAULT_ROWS, help="comma-separated stencil/dtype")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    from an5dpy.cuda.runtime import device_name
    with open(args.table) as f:
        table = {f"{r['stencil']}/{r['dtype']}": r for r in csv.DictReader(f)}
    wanted = args.rows.split(",")
    unknown = [w for w in wanted if w not in table]
    if unknown:
        print(f"default_plans.py: no row {unknown[0]} in {args.table}", file=sys.stderr)
        return 2
    results = [measure_row(table[w], args.repeats) for w in wanted]
    print(f"GPU: {device_name()}; GFLOP/s at the paper's sizes, 1000 steps")
    print(f"{'row':18s} {'default plan':44s} {'default':>9s} {'tuned':>9s} {'ratio':>6s} "
          f"{'table':>7s}")
    for r in results:
        d, t = r["default"], r["tuned"]
        print(f"{r['row']:18s} {d.label:44s} {d.gflops:9,.0f} {t.gflops:9,.0f} "
              f"{d.gflops / t.gflops:6.3f} {r['table']:7,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
