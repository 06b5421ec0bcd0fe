"""``an5d bench``: time the generated kernels on the GPU (:mod:`an5dpy.perf.bench`) and
print GFLOP/s as the paper counts them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from an5dpy.cli.options import (add_input, add_plan, add_sizes, choose,
                                integer_sizes, load_input, model_params, options, positive)
from an5dpy.errors import UsageError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "bench", help="time the generated kernels on the GPU (GFLOP/s as the paper counts)",
        description="Builds the plan's kernels with nvcc (-O3 --use_fast_math) and times the "
                    "whole launch plan with CUDA events (warm-up, median of the repeats, "
                    "transfers excluded). GFLOP/s = interior cells x FLOP/cell x steps / time.")
    add_input(p)
    add_plan(p)
    add_sizes(p)
    p.add_argument("--naive", action="store_true", help="also time the naive baseline")
    p.add_argument("--sconf", action="store_true", help="also time the paper's Sconf plan")
    p.add_argument("--repeats", type=positive, default=5, help="timed runs (default 5)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from an5dpy.cuda.runtime import cupy_available, device_name
    from an5dpy.perf.bench import bench_plan, sconf_plan

    ok, why = cupy_available()
    if not ok:
        raise UsageError(f"an5d bench needs a GPU with cupy: {why}")
    opts = options(args)
    program, info = load_input(args, opts)
    env = model_params(program, info, dict(args.params), args.size, args.steps)
    choice = choose(args, info, opts, env)  # for --gpu, else this machine's GPU
    plan = choice.plan
    stem = Path(args.input).stem
    results = [bench_plan(info, plan, env, stem, choice.regs, args.repeats,
                          smem_wrap=opts.smem_wrap)]
    if args.sconf:
        sconf = sconf_plan(info)
        results.append(bench_plan(info, sconf, env, stem, None, args.repeats,
                                  label="Sconf " + sconf.describe()))
    if args.naive:
        results.append(bench_plan(info, plan, env, stem, None, args.repeats, naive=True))
    gpu = device_name()
    sizes = integer_sizes(program, env)
    if args.json:
        print(json.dumps({"input": args.input, "gpu": gpu, "params": sizes,
                          "results": [r.to_json() for r in results]}, indent=2))
        return 0
    shown = " ".join(f"{k}={v}" for k, v in sizes.items())
    print(f"{args.input} on {gpu}: {shown}")
    for r in results:
        spill = ", spills" if r.spills else ""
        print(f"  {r.label}: {r.gflops:,.0f} GFLOP/s, {r.seconds * 1e3:.2f} ms "
              f"(median of {len(r.times)}; {r.regs} registers{spill})")
    return 0
