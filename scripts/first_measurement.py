#!/usr/bin/env python3
"""First measurement (issue 4): j2d5pt and star3d1r, float, the paper's Sconf plan against
the naive one-kernel-per-step baseline, 16384^2 / 512^3, 1000 steps, on the present GPU.

    python scripts/first_measurement.py [--out artifact]

Writes <out>/<gpu>/first_measurement.csv and .md and prints the table.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from an5dpy.perf.bench import PAPER_SIZE, PAPER_STEPS, bench_plan, paper_env, sconf_plan  # noqa: E402
from an5dpy.driver import load  # noqa: E402
from an5dpy.cuda.runtime import device_name  # noqa: E402

C_INPUTS = os.path.join(os.path.dirname(HERE), "c_inputs")


def gpu_slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name.replace("NVIDIA", "")).strip("-")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(HERE), "artifact"))
    ap.add_argument("--steps", type=int, default=PAPER_STEPS)
    args = ap.parse_args()
    gpu = device_name()
    rows = []
    for name in ("j2d5pt", "star3d1r"):
        program, info = load(os.path.join(C_INPUTS, name + ".c"), (("SB_TYPE", "float"),))
        env = paper_env(program, info, args.steps)
        plan = sconf_plan(info)
        blocked = bench_plan(info, plan, env, name)
        naive = bench_plan(info, plan, env, name, naive=True)
        rows.append({"stencil": name, "dtype": "float", "size": PAPER_SIZE[info.ndim],
                     "steps": args.steps, "plan": plan.describe(),
                     "sconf_gflops": round(blocked.gflops), "sconf_ms": blocked.seconds * 1e3,
                     "sconf_regs": blocked.regs, "naive_gflops": round(naive.gflops),
                     "naive_ms": naive.seconds * 1e3, "speedup": blocked.gflops / naive.gflops})
    out = os.path.join(args.out, gpu_slug(gpu))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "first_measurement.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = [f"# First measurement on {gpu}", "",
             "Sconf (bT 4; 2D bS 128, sl 128; 3D bS 32x32, no stream division) vs the naive "
             "one-kernel-per-step CUDA, float, built with `-O3 --use_fast_math -arch=sm_90`, "
             "CUDA events around the whole run, median of 5 after a warm-up, transfers "
             "excluded. GFLOP/s = interior cells x FLOP/cell x steps / time.", "",
             "| stencil | size | steps | Sconf GFLOP/s | regs | naive GFLOP/s | speed-up |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['stencil']} | {r['size']} | {r['steps']} | {r['sconf_gflops']:,} | "
                     f"{r['sconf_regs']} | {r['naive_gflops']:,} | {r['speedup']:.2f}x |")
    with open(os.path.join(out, "first_measurement.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
