#!/usr/bin/env python3
"""Regenerate every benchmark's CUDA in batch, in parallel, with progress; optionally
compile each with nvcc and fail on any error or warning.

    python scripts/regenerate.py [--out DIR] [--config sconf|tuned] [--compile]
                                 [--stencils a,b] [--jobs N] [--arch sm_XX]

By default the paper's 21 benchmarks (c_inputs/paper_benchmarks.txt); --stencils picks
any programs of c_inputs/.
--config sconf: the paper's Sconf plan (bT 4; 2D bS 128, sl 128, no associative mode;
3D bS 32x32 without stream division; bT lowered where 4 leaves no compute region).
--config tuned: the plans of artifact/<gpu>/table5.csv (--table), register budgets too.
Each stencil x float/double goes to <out>/<stencil>-<dtype>/ with x_host.cu, x_kernel.cu,
x_kernel.hu and common.h; --compile builds host + kernel with
`nvcc -O3 --use_fast_math -arch=sm_90 -Xcompiler -fopenmp` and prints a summary table.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from artifact import table_options  # noqa: E402 (a script beside this one)
C_INPUTS = os.path.join(REPO, "c_inputs")


def tuned_configs(table: str) -> dict:
    out = {}
    with open(table) as f:
        for row in csv.DictReader(f):
            out[(row["stencil"], row["dtype"])] = row
    return out


def options_for(name: str, dtype: str, config: str, table: dict):
    from an5dpy.perf.bench import sconf_plan
    from an5dpy.driver import Options, load
    from an5dpy.blocking.plan import format_block_size
    defines = (("SB_TYPE", dtype),)
    if config == "tuned":
        return table_options(table[(name, dtype)], defines)
    _, info = load(os.path.join(C_INPUTS, name + ".c"), defines)
    plan = sconf_plan(info)
    return Options(bt=plan.bt, bs=format_block_size(plan.bs), sl=plan.sl or "off",
                   opt=plan.mode.value,
                   defines=defines)


def job(name: str, dtype: str, out: str, config: str, table: dict, compile_: bool, arch: str):
    from an5dpy.driver import translate, write_outputs
    from an5dpy.cuda.runtime import nvcc_path
    options = options_for(name, dtype, config, table)
    target = os.path.join(out, f"{name}-{dtype}")
    os.makedirs(target, exist_ok=True)
    src = os.path.join(target, f"{name}.c")
    shutil.copy(os.path.join(C_INPUTS, f"{name}.c"), src)
    shutil.copy(os.path.join(C_INPUTS, "common.h"), target)
    result = translate(src, options)
    write_outputs(result.outputs, target)
    status, log = "generated", ""
    if compile_:
        proc = subprocess.run(
            [nvcc_path(), "-O3", "--use_fast_math", f"-arch={arch}", "-Xcompiler", "-fopenmp",
             f"{name}_host.cu", f"{name}_kernel.cu", "-o", name],
            cwd=target, capture_output=True, text=True)
        log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            status = "ERROR"
        elif "warning" in log.lower():
            status = "WARNING"
        else:
            status = "ok"
    return name, dtype, result.plan.describe(), status, log


def benchmark_names() -> list[str]:
    """The programs of c_inputs/ (each NAME.c)."""
    return sorted(f[:-2] for f in os.listdir(C_INPUTS) if f.endswith(".c"))


def paper_benchmarks() -> list[str]:
    """The paper's 21 benchmarks, the default (the hand-written programs of c_inputs/
    are for --stencils)."""
    with open(os.path.join(C_INPUTS, "paper_benchmarks.txt")) as f:
        return sorted(line.strip() for line in f if line.strip())


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0].replace("\n", " "),
        epilog="Exit status: 0 every program generated (and compiled without a warning), "
               "1 some did not, 2 bad options.")
    ap.add_argument("--out", default=os.path.join("out", "generated"), metavar="DIR",
                    help="output directory (default: out/generated in the working directory)")
    ap.add_argument("--config", choices=("sconf", "tuned"), default="sconf",
                    help="sconf: the paper's Sconf plan; tuned: the plans of --table "
                         "(default sconf)")
    ap.add_argument("--table", default=os.path.join(REPO, "artifact", "H200", "table5.csv"),
                    help="table5.csv of the tuned plans (default: the repository's H200 one)")
    ap.add_argument("--compile", action="store_true",
                    help="build each with nvcc and fail on any error or warning")
    ap.add_argument("--arch", default="sm_90", help="nvcc -arch (default sm_90)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2,
                    help="programs generated at once (default: the CPU count)")
    ap.add_argument("--stencils", metavar="A,B,...",
                    help="comma-separated programs of c_inputs/ (default: the paper's 21 "
                         "benchmarks of c_inputs/paper_benchmarks.txt)")
    return ap.parse_args(argv)


class ScriptError(Exception):
    """Bad options: one line, exit status 2."""


def main(argv=None) -> int:
    try:
        return run(parse_args(argv))
    except ScriptError as e:
        print(f"regenerate.py: error: {e}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm
    known = benchmark_names()
    names = [n.strip() for n in args.stencils.split(",")] if args.stencils \
        else paper_benchmarks()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ScriptError(f"unknown stencil {', '.join(unknown)} (c_inputs/ has: "
                          f"{', '.join(known)})")
    table = {}
    if args.config == "tuned":
        if not os.path.exists(args.table):
            raise ScriptError(f"--table {args.table} does not exist")
        table = tuned_configs(args.table)
        missing = [f"{n} {d}" for n in names for d in ("float", "double")
                   if (n, d) not in table]
        if missing:
            raise ScriptError(f"--table {args.table} has no row for {', '.join(missing)}")
    work = [(n, d) for n in names for d in ("float", "double")]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(job, n, d, args.out, args.config, table, args.compile, args.arch)
                   for n, d in work]
        results = [f.result() for f in tqdm(concurrent.futures.as_completed(futures),
                                            total=len(futures), desc="regenerate")]
    results.sort()
    bad = 0
    for name, dtype, plan, status, log in results:
        print(f"{name:11s} {dtype:6s} {status:9s} {plan}")
        if status in ("ERROR", "WARNING"):
            bad += 1
            print(log)
    print(f"{len(results)} programs in {args.out}, {bad} with errors or warnings")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
