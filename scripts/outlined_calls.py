#!/usr/bin/env python3
"""Library calls inlined against out of line (an5dpy.cuda.macros.OUTLINED_CALLS_FROM), on a GPU.

    python scripts/outlined_calls.py [--out artifact/H200] [--repeats 5]
    python scripts/outlined_calls.py --case 4:double --case 6:double:bt=3,bs=64x16,sl=64 \
        --name outlined_below.md       # other cases, another file

Each case is a 3D star (radius 1, 384^3 cells, 40 steps) whose update adds N calls of
inexact library functions (pow, exp, sin, log, atan, cos, expm1, cbrt in turn) to the
seven-point sum, built with the plan given (or the default plan) twice: every call inlined
(the threshold set out of reach) and every such function out of line (the threshold 1). The
two builds alternate, twice each, in one process (``Stencil.bench``: the fast-math build,
CUDA events, the median of the repeats); the table holds each build's GFLOP/s and the
seconds its first build took (nvcc, cold cache). Writes ``OUT/outlined_calls.md`` (or
``--name``); ``--case CALLS:DTYPE[:PLAN]`` replaces :data:`CASES` (PLAN: ``key=value``
options joined by commas, as ``an5dpy.compile`` takes them).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

CALLS = ("pow(fabs(A[t%2][i-1][j][k]), 0.{q})", "exp(-fabs(A[t%2][i+1][j][k]))",
         "sin(A[t%2][i][j-1][k])", "log(1.0 + fabs(A[t%2][i][j+1][k]))",
         "atan(A[t%2][i][j][k-1])", "cos(A[t%2][i][j][k+1])", "expm1(-fabs(A[t%2][i][j][k]))",
         "cbrt(A[t%2][i-1][j][k])")
NEIGHBOURS = ("A[t%2][i-1][j][k]", "A[t%2][i+1][j][k]", "A[t%2][i][j-1][k]",
              "A[t%2][i][j+1][k]", "A[t%2][i][j][k-1]", "A[t%2][i][j][k+1]")
#: (calls, dtype, plan): the default plan, and a plan of bT 3 and two cells a thread; below
#: the threshold (4), at it (6) and above (8, 16)
DEEP = dict(bt=3, bs="64x16", sl=64, coarsen=2)
CASES = ((4, "double", {}), (6, "double", {}), (8, "double", {}), (16, "double", {}),
         (4, "double", DEEP), (6, "double", DEEP), (8, "double", DEEP), (16, "double", DEEP),
         (6, "float", DEEP), (8, "float", DEEP))
SIZE, STEPS = 384, 40


def source(calls: int) -> str:
    """The case's C program (``SB_TYPE`` its element type)."""
    terms = ["0.1 * A[t%2][i][j][k]",
             *(f"0.01 * {CALLS[q % len(CALLS)].format(q=75 + q)}" for q in range(calls)),
             *(f"0.1 * {n}" for n in NEIGHBOURS)]
    return f"""#include <math.h>
void kernel(int T, int N, SB_TYPE A[2][N][N][N])
{{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < N - 1; i++)
      for (int j = 1; j < N - 1; j++)
        for (int k = 1; k < N - 1; k++)
          A[(t+1)%2][i][j][k] = {' + '.join(terms)};
#pragma endscop
}}
"""


def parse_case(text: str) -> tuple[int, str, dict]:
    """``CALLS:DTYPE[:key=value,...]`` as a case of :data:`CASES`."""
    calls, dtype, *rest = text.split(":")
    plan = {}
    for item in (rest[0].split(",") if rest and rest[0] else []):
        key, value = item.split("=")
        plan[key] = int(value) if value.isdigit() else value
    return int(calls), dtype, plan


def measure(path: str, dtype: str, plan: dict, outline: bool, repeats: int):
    """GFLOP/s and seconds of compile + run of one build."""
    import an5dpy
    import an5dpy.cuda.macros as macros
    macros.OUTLINED_CALLS_FROM = 1 if outline else 10 ** 9
    start = time.perf_counter()
    stencil = an5dpy.compile(path, dtype=dtype, **plan)
    result = stencil.bench(STEPS, N=SIZE, T=STEPS, repeats=repeats)
    return stencil, result.gflops, time.perf_counter() - start


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="default artifact/<GPU>")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--case", action="append", type=parse_case,
                    help="CALLS:DTYPE[:PLAN] (repeatable; default: CASES)")
    ap.add_argument("--name", default="outlined_calls.md", help="the file written in OUT")
    args = ap.parse_args(argv)
    from an5dpy.cuda.runtime import device_name
    device = device_name()
    out = args.out or os.path.join(os.path.dirname(HERE), "artifact", device.split()[-1])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for calls, dtype, plan in args.case or CASES:
            path = os.path.join(tmp, f"calls{calls}.c")
            with open(path, "w") as f:
                f.write(source(calls))
            gflops = {False: [], True: []}
            built = {}
            for outline in (False, True, False, True):
                stencil, rate, seconds = measure(path, dtype, plan, outline, args.repeats)
                gflops[outline].append(rate)
                built.setdefault(outline, seconds)
            inline, outlined = max(gflops[False]), max(gflops[True])
            rows.append((calls, dtype, stencil.plan.describe(), inline, outlined,
                         built[False], built[True]))
            print(f"{calls:3d} {dtype:6s} {stencil.plan.describe():55s} inline {inline:7,.0f} "
                  f"out of line {outlined:7,.0f} ({outlined / inline:.3f}x); built in "
                  f"{built[False]:.0f} s / {built[True]:.0f} s", flush=True)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, args.name), "w") as f:
        f.write(f"# Library calls inlined and out of line ({device})\n\n")
        f.write(f"Written by `python scripts/outlined_calls.py` (see its docstring): a 3D "
                f"star of radius 1 plus N inexact library calls, {SIZE}^3 cells, {STEPS} "
                f"steps, each build timed twice alternately (the better kept), fast math. "
                f"`built`: nvcc's first build and the first run, seconds.\n\n")
        f.write("| calls | dtype | plan | inline GFLOP/s | out of line GFLOP/s | ratio | "
                "built inline (s) | built out of line (s) |\n"
                "|---|---|---|---:|---:|---:|---:|---:|\n")
        for calls, dtype, plan, inline, outlined, b_in, b_out in rows:
            f.write(f"| {calls} | {dtype} | {plan} | {inline:,.0f} | {outlined:,.0f} | "
                    f"{outlined / inline:.3f} | {b_in:.0f} | {b_out:.0f} |\n")
    print(f"wrote {os.path.join(out, args.name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
