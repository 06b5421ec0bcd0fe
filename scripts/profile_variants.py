#!/usr/bin/env python3
"""Nsight Compute counters of a plan's kernel with a barrier per level op, with one barrier
per step, and with the level ops' barriers deleted (a timing bound only: its results are
wrong), side by side.

    ncu --clock-control none --kernel-name regex:kernel_d --csv --page raw \\
        --metrics $(python scripts/profile_variants.py metrics) \\
        python scripts/profile_variants.py run star2d1r:float:14:512:256:64 > ncu.csv
    python scripts/profile_variants.py report ncu.csv > profile.md

A row is ``stencil:dtype:bt:bs:sl:regs`` (``bs`` as ``--bs`` writes it, ``sl`` or
``off``, ``regs`` a register budget or ``none``), in mode nondiag. ``run`` builds the three
kernels of each row (performance flags) and runs each row's launch plan once over 8192^2 or
384^3 cells for 2 bT steps (two launches of the plan's own degree); ``report`` turns
ncu's CSV into a table: time, instructions, achieved occupancy, issue activity, DRAM
throughput, shared-memory bank conflicts and the largest warp stall reasons per issued
instruction.
"""

from __future__ import annotations

import csv
import io
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

VARIANTS = ("level", "step", "unsynchronised")
SUMMARY = {
    "gpu__time_duration.sum": "time (ns)",
    "smsp__inst_executed.sum": "instructions",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy %",
    "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue active %",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "DRAM %",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum": "smem bank conflicts",
}
STALLS = ("barrier", "long_scoreboard", "short_scoreboard", "mio_throttle", "wait",
          "math_pipe_throttle", "not_selected", "selected", "lg_throttle", "dispatch_stall",
          "no_instruction", "branch_resolving", "imc_miss")
STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"


def metrics() -> str:
    return ",".join([*SUMMARY, *(STALL_METRIC.format(s) for s in STALLS)])


def parse_row(text: str):
    stencil, dtype, bt, bs, sl, regs = text.split(":")
    return (stencil, dtype, int(bt), bs, None if sl == "off" else int(sl),
            None if regs == "none" else int(regs))


def variant_kernel(text: str, variant: str) -> str:
    """The kernel text of a variant: the level ops' barriers deleted for the bound."""
    if variant != "unsynchronised":
        return text
    return re.sub(r"\n    __syncthreads\(\); \\", "", text)


def run(rows) -> None:
    import cupy
    from an5dpy.blocking.plan import make_plan, parse_block_size
    from an5dpy.check.reference import resolve_params
    from an5dpy.cuda.runtime import BuildOptions, CupyRunner, compile_cubin, device_arch
    from an5dpy.driver import generate, load
    from an5dpy.perf.bench import device_grid
    for text in rows:
        stencil, dtype, bt, bs, sl, regs = parse_row(text)
        program, info = load(os.path.join(os.path.dirname(HERE), "c_inputs", stencil + ".c"),
                             (("SB_TYPE", dtype),))
        env = resolve_params(program, {"compsize": 8192 if info.ndim == 2 else 384,
                                       "timestep": 2 * bt})
        for variant in VARIANTS:
            plan = make_plan(info, bt, bs=parse_block_size(bs, info.ndim), sl=sl,
                             opt="nondiag", barriers="step" if variant == "step" else "level")
            stem = f"{stencil}_{variant}"
            kernels = generate(info, plan, stem, regs=regs)
            folder = tempfile.mkdtemp(prefix="an5d-profile-")
            for name, body in kernels.files().items():
                with open(os.path.join(folder, name), "w") as f:
                    f.write(variant_kernel(body, variant) if name.endswith(".cu") else body)
            cubin = compile_cubin(os.path.join(folder, f"{stem}_kernel.cu"),
                                  BuildOptions(arch=device_arch()))
            runner = CupyRunner(info, plan, cubin, kernels.model.prefix,
                                kernels.model.signature)
            grid = device_grid(info, env, dtype)
            runner.run(grid, env)
            cupy.cuda.Device().synchronize()
            print(f"{stencil} {dtype} {variant}: {plan.describe()} ran", file=sys.stderr)


def top_stalls(record: dict, count: int) -> str:
    """The ``count`` largest warp stall reasons of an ncu CSV record, in cycles per issued
    instruction, and the sum over every reason of :data:`STALLS`."""
    stalls = sorted(((s, float(record[STALL_METRIC.format(s)].replace(",", "")))
                     for s in STALLS), key=lambda s: -s[1])
    top = ", ".join(f"{s} {v:.2f}" for s, v in stalls[:count])
    return f"{top} (all {sum(v for _, v in stalls):.1f})"


def report(path: str) -> str:
    text = open(path).read()
    start = text.index('"ID",')
    rows = [r for r in csv.DictReader(io.StringIO(text[start:]))
            if "kernel_d" in r.get("Kernel Name", "")]
    lines = ["| kernel | " + " | ".join(SUMMARY.values()) + " | largest stalls per issue |",
             "|---|" + "---|" * (len(SUMMARY) + 1)]
    seen = set()
    for r in rows:  # the first launch of each kernel
        name = r["Kernel Name"]
        if name in seen:
            continue
        seen.add(name)
        lines.append(f"| {name.removeprefix('an5d_')} | "
                     + " | ".join(r[m] for m in SUMMARY) + f" | {top_stalls(r, 4)} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("metrics", "run", "report"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "metrics":
        print(metrics())
    elif argv[0] == "run":
        run(argv[1:])
    else:
        print(report(argv[1]), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
