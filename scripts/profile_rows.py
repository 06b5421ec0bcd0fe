#!/usr/bin/env python3
"""Nsight Compute counters of artifact rows' tuned kernels: why a row is short.

    python scripts/profile_rows.py artifact/H200 --below 1.2 --rows star2d1r:float
    python scripts/profile_rows.py artifact/H200 --render-only

For each row chosen (``--rows stencil:dtype,...`` and every row whose tuned GFLOP/s is
below ``--below`` x the original AN5D's), the row's tuned plan (``best`` in
``DIR/rows.jsonl``: its plan and register budget) is built with the performance flags and
run under ``ncu --clock-control none`` at the paper's grid size for 2 bT steps; the first
launch of the plan's own degree is profiled. Results go to ``DIR/profile.jsonl`` (one
record per row, replaced in place when a row is profiled again) and ``DIR/profile.md``:
time, the GFLOP/s of that launch, registers, achieved occupancy, issue activity, eligible
warps per cycle, DRAM, L1/shared and SM throughput, shared-memory bank conflicts,
instructions per cell and level (thread instructions over interior cells x bT: the
redundant halo cells and idle lanes included) and the largest warp stall reasons per
issued instruction (``scripts/profile_variants.py``'s).

``--launch DIR stencil:dtype`` is what runs under ncu (one row, one process).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from artifact import put_row  # noqa: E402
from profile_variants import SUMMARY, metrics as base_metrics, top_stalls  # noqa: E402

#: The pipe of each element type's arithmetic (its share of cycles busy).
PIPES = {"float": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
         "double": "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active"}
#: Counters beyond profile_variants' (tried first; the base set alone where ncu refuses).
EXTRA = {
    "launch__registers_per_thread": "registers",
    "smsp__warps_eligible.avg.per_cycle_active": "eligible warps / cycle",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "SM %",
    "l1tex__throughput.avg.pct_of_peak_sustained_active": "L1/shared %",
    "smsp__thread_inst_executed.sum": "thread instructions",
    PIPES["float"]: "FMA pipe %",
    PIPES["double"]: "FP64 pipe %",
}


def row_key(text: str) -> tuple[str, str]:
    stencil, dtype = text.split(":")
    return stencil, dtype


def load_rows(folder: str) -> dict:
    with open(os.path.join(folder, "rows.jsonl")) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return {(r["stencil"], r["dtype"]): r for r in rows}


def chosen(rows: dict, named, below: float | None) -> list:
    keys = list(named)
    if below is not None:
        keys += [k for k, r in rows.items() if r.get("original_h200")
                 and r["best"]["gflops"] < below * r["original_h200"] and k not in keys]
    return keys


def program_of(stencil: str, dtype: str):
    from an5dpy.driver import load
    return load(os.path.join(REPO, "c_inputs", stencil + ".c"), (("SB_TYPE", dtype),))


def launch(folder: str, key: tuple[str, str]) -> None:
    """Build the row's tuned plan and run it once for 2 bT steps (under ncu)."""
    import cupy
    from an5dpy.cuda.runtime import BuildOptions, cuda_runner, device_arch
    from an5dpy.perf.bench import device_grid, device_read_only_values, paper_env
    from an5dpy.perf.tune import plan_from_json
    best = load_rows(folder)[key]["best"]
    program, info = program_of(*key)
    plan = plan_from_json(info, best["plan"])
    env = paper_env(program, info, 2 * plan.bt)
    stem = "_".join(key).replace("-", "_")
    runner = cuda_runner(info, plan, stem, BuildOptions(arch=device_arch()), True,
                         regs=best["cap"])
    grid = device_grid(info, env, plan.dtype)
    runner.run(grid, env, device_read_only_values(info, env))
    cupy.cuda.Device().synchronize()


def ncu_csv(folder: str, key: tuple[str, str], degree: int, metric_list: str) -> str:
    command = ["ncu", "--clock-control", "none", "--kernel-name", f"regex:kernel_d{degree}$",
               "--launch-count", "1", "--csv", "--page", "raw", "--metrics", metric_list,
               sys.executable, os.path.abspath(__file__), "--launch", folder, ":".join(key)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode or '"ID",' not in done.stdout:
        raise RuntimeError(f"ncu failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def profile(folder: str, key: tuple[str, str]) -> dict:
    from an5dpy.perf.bench import gflops, interior_cells, paper_env
    from an5dpy.perf.tune import plan_from_json
    row = load_rows(folder)[key]
    program, info = program_of(*key)
    plan = plan_from_json(info, row["best"]["plan"])
    try:
        text = ncu_csv(folder, key, plan.depth, ",".join([base_metrics(), *EXTRA]))
    except RuntimeError as error:
        print(f"{key}: extended counters refused, base set only ({error})", file=sys.stderr)
        text = ncu_csv(folder, key, plan.depth, base_metrics())
    record = next(r for r in csv.DictReader(io.StringIO(text[text.index('"ID",'):]))
                  if "kernel_d" in r.get("Kernel Name", ""))  # the units row has none
    counters = {name: number(value) for name, value in record.items()
                if (name in SUMMARY or name in EXTRA) and number(value) is not None}
    env = paper_env(program, info, plan.bt)  # one launch's steps
    seconds = counters["gpu__time_duration.sum"] * 1e-9
    cells = interior_cells(info, env) * info.time.steps(env)  # interior cells x bT
    out = {"stencil": key[0], "dtype": key[1], "gpu": row["gpu"],
           "plan": row["best"]["describe"],
           "plan_json": row["best"]["plan"],
           "cap": row["best"]["cap"], "table_gflops": row["best"]["gflops"],
           "original": row["original_h200"], "launch_gflops": gflops(info, env, seconds),
           "counters": counters, "stalls": top_stalls(record, 4)}
    if "smsp__thread_inst_executed.sum" in counters:
        out["thread_instructions_per_cell_level"] = (
            counters["smsp__thread_inst_executed.sum"] / cells)
    out["warp_slots_per_cell_level"] = 32 * counters["smsp__inst_executed.sum"] / cells
    return out


def model_view(record: dict) -> tuple[float, float] | None:
    """The checkout's model of the profiled launch on the record's GPU (the record's plan
    at its register budget, its own degree, the profiled grid): its seconds and its warp
    instructions (the issue term's count: double arithmetic counted twice, for the
    half-rate FP64 pipes). None for a record without its plan's JSON."""
    if "plan_json" not in record:
        return None
    from an5dpy.perf.bench import paper_env
    from an5dpy.perf.model import Model
    from an5dpy.perf.tune import plan_from_json
    program, info = program_of(record["stencil"], record["dtype"])
    plan = plan_from_json(info, record["plan_json"])
    model = Model(info, record["gpu"], paper_env(program, info, 2 * plan.bt))
    cost = model.launch_cost(plan, plan.depth, record["cap"])
    return cost.seconds, cost.warp_instructions


def number(text: str | None) -> float | None:
    """A counter's value as ncu's CSV writes it (thousands separated by commas), None for
    ``n/a`` and the like."""
    try:
        return float((text or "").replace(",", ""))
    except ValueError:
        return None


PROFILES = "profile.jsonl"


def put_record(folder: str, record: dict) -> None:
    """FOLDER/profile.jsonl with ``record`` in place of its row's earlier one (atomically)."""
    put_row(folder, record, PROFILES)


def read_records(folder: str) -> list[dict]:
    path = os.path.join(folder, PROFILES)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def pipe_at_twice_original(record: dict) -> str:
    """How busy the element type's FP pipe (FMA for float, FP64 for double) would be at twice
    the original AN5D's speed, from the profiled launch's share at its own speed: the same
    arithmetic in half the original's time. Over 100, no kernel of that arithmetic reaches
    the issue's 2x on this GPU. Empty where the counter is not in the record."""
    metric = PIPES[record["dtype"]]
    busy = record["counters"].get(metric)
    if busy is None or not record.get("launch_gflops"):
        return ""
    return f"{busy * 2 * record['original'] / record['launch_gflops']:.0f}"


def render(folder: str) -> str:
    columns = [("gpu__time_duration.sum", "time (µs)", lambda v: f"{v / 1000:,.0f}"),
               ("launch__registers_per_thread", "regs", lambda v: f"{v:.0f}"),
               ("sm__warps_active.avg.pct_of_peak_sustained_active", "occupancy %",
                lambda v: f"{v:.0f}"),
               ("smsp__issue_active.avg.pct_of_peak_sustained_active", "issue active %",
                lambda v: f"{v:.0f}"),
               ("smsp__warps_eligible.avg.per_cycle_active", "eligible warps / cycle",
                lambda v: f"{v:.2f}"),
               ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM %",
                lambda v: f"{v:.0f}"),
               ("l1tex__throughput.avg.pct_of_peak_sustained_active", "L1/shared %",
                lambda v: f"{v:.0f}"),
               ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM %",
                lambda v: f"{v:.0f}"),
               (PIPES["float"], "FMA pipe %", lambda v: f"{v:.0f}"),
               (PIPES["double"], "FP64 pipe %", lambda v: f"{v:.0f}"),
               ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "bank conflicts",
                lambda v: f"{v:,.0f}")]
    lines = ["# Nsight Compute profiles of tuned kernels",
             "",
             "Written by `scripts/profile_rows.py`: each row's tuned plan (table5's), the first "
             "launch of its own degree at the paper's grid size, `ncu --clock-control none`. "
             "`instr / cell·level`: thread instructions (idle lanes excluded) over interior "
             "cells x bT, so the redundant halo cells count against it; `warp slots`: issued "
             "warp instructions x 32 over the same. Stalls: cycles per issued instruction "
             "by reason. `model / ncu`: the H200 model of this checkout "
             "(`an5dpy/perf/model.py`) for the same launch, its time over the profiled one "
             "and its warp instructions (the issue term's count, double arithmetic counted "
             "twice) over the executed ones. `FP pipe % at 2x orig.`: the element type's "
             "pipe (FMA for float, FP64 for double) as busy as it would be at twice the "
             "original AN5D's speed; over 100, no kernel of the same arithmetic reaches it "
             "on this GPU.", "",
             "| row | plan | tuned / orig. | launch GFLOP/s | "
             + " | ".join(c[1] for c in columns)
             + " | FP pipe % at 2x orig. | instr / cell·level | warp slots / cell·level "
             "| model / ncu: time | model / ncu: instructions | largest stalls per issue |",
             "|---|---|---|---|" + "---|" * len(columns) + "---|---|---|---|---|---|"]
    for r in sorted(read_records(folder), key=lambda r: r["table_gflops"] / r["original"]):
        c = r["counters"]
        cells = [fmt(c[m]) if m in c else "" for m, _, fmt in columns]
        per_cell = r.get("thread_instructions_per_cell_level")
        view = model_view(r)
        versus = ("| | |" if view is None else
                  f"| {view[0] / (c['gpu__time_duration.sum'] * 1e-9):.2f} | "
                  f"{view[1] / c['smsp__inst_executed.sum']:.2f} |")
        lines.append(
            f"| {r['stencil']} {r['dtype']} | {r['plan']}, regs {r['cap'] or 'none'} | "
            f"{r['table_gflops'] / r['original']:.2f} | {r['launch_gflops']:,.0f} | "
            + " | ".join(cells)
            + f" | {pipe_at_twice_original(r)} | {'' if per_cell is None else f'{per_cell:.1f}'} | "
            f"{r['warp_slots_per_cell_level']:.1f} {versus} {r['stalls']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?")
    parser.add_argument("--rows", default="", help="stencil:dtype,... to profile")
    parser.add_argument("--below", type=float, help="also every row under this x original")
    parser.add_argument("--render-only", action="store_true")
    parser.add_argument("--launch", nargs=2, metavar=("DIR", "ROW"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.launch:
        launch(args.launch[0], row_key(args.launch[1]))
        return 0
    if not args.folder:
        parser.error("give the artifact folder")
    if not args.render_only:
        rows = load_rows(args.folder)
        named = [row_key(t) for t in args.rows.split(",") if t]
        for key in chosen(rows, named, args.below):
            record = profile(args.folder, key)
            put_record(args.folder, record)
            print(f"{key[0]} {key[1]}: {record['launch_gflops']:,.0f} GFLOP/s, "
                  f"{record['warp_slots_per_cell_level']:.1f} warp slots per cell-level, "
                  f"{record['stalls']}", flush=True)
    text = render(args.folder)
    with tempfile.NamedTemporaryFile("w", dir=args.folder, delete=False) as f:
        f.write(text)
    os.replace(f.name, os.path.join(args.folder, "profile.md"))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
