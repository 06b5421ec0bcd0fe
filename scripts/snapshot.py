#!/usr/bin/env python3
"""A fingerprint of what an5dpy produces, to prove that a refactoring changed nothing.

    python scripts/snapshot.py --write tests/data/snapshot.json   # record
    python scripts/snapshot.py --check tests/data/snapshot.json   # compare (exit 1 on change)

It covers the generated CUDA of the 21 benchmarks x float/double, at the Sconf plan and at the
tuned plans of ``artifact/H200/table5.csv``, and of the hand-written programs at the tuned
plans of ``artifact/H200/hand_written.csv`` (SHA-256 of each file, with the input's path
replaced by its name, since the files quote where they were generated from), and the
performance model's prediction for every plan measured in
``artifact/H200/previous/rows.jsonl`` (the measurements the model was fitted to)
(GFLOP/s and bottleneck, at the register budget of each measurement, and the model's top 5
of each row's candidate space). A change of generated code or of the model shows up as the
list of what differs.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import hashlib
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from artifact import table_options  # noqa: E402 (a script beside this one)
C_INPUTS = os.path.join(REPO, "c_inputs")
ARTIFACT = os.path.join(REPO, "artifact", "H200")


def benchmark_names() -> list[str]:
    """The paper's 21 benchmarks (c_inputs/ also holds hand-written programs)."""
    with open(os.path.join(C_INPUTS, "paper_benchmarks.txt")) as f:
        return sorted(line.strip() for line in f if line.strip())


def sconf_options(path: str, defines):
    from an5dpy.driver import Options, load
    from an5dpy.perf.bench import sconf_plan
    from an5dpy.blocking.plan import format_block_size
    _, info = load(path, defines)
    plan = sconf_plan(info)
    return Options(bt=plan.bt, bs=format_block_size(plan.bs), sl=plan.sl or "off",
                   opt=plan.mode.value,
                   defines=defines)


def hand_written_row(row: dict) -> dict:
    """A row of hand_written.csv as a table5.csv row of the same plan (its ``tuned_plan``,
    ``an5d-translate``'s option spelling, and its register budget), for
    :func:`table_options`."""
    settings = dict(item.split("=", 1) for item in row["tuned_plan"].split())
    return {"bt": settings["bt"], "bs": settings["bs"], "sl": settings["sl"].replace("off", "-"),
            "opt": settings["opt"], "regs": row["registers_cap"] or "-",
            "cells": settings.get("coarsen", "1"), "barriers": settings.get("barriers"),
            "idle": settings.get("idle"), "halo": settings.get("halo")}


def code_fingerprint(name: str, dtype: str, config: str, table: dict) -> dict[str, str]:
    """SHA-256 of each generated file of one program, dtype and plan (``sconf``, or the
    ``tuned`` or ``hand_written`` plan of ``table``)."""
    from an5dpy.driver import translate
    defines = (("SB_TYPE", dtype),)
    path = os.path.join(C_INPUTS, f"{name}.c")
    options = (sconf_options(path, defines) if config == "sconf"
               else table_options(table[(name, dtype)], defines))
    result = translate(path, options)
    return {f"{config}/{name}-{dtype}/{file}":
            hashlib.sha256(text.replace(path, f"{name}.c").encode()).hexdigest()
            for file, text in sorted(result.outputs.items())}


def model_fingerprint(row: dict) -> dict[str, str]:
    """The model's prediction of each measured plan of one artifact row, and its top 5."""
    from an5dpy.driver import load
    from an5dpy.errors import UsageError
    from an5dpy.perf.bench import paper_env
    from an5dpy.perf.gpus import get_gpu
    from an5dpy.perf.model import Model
    from an5dpy.perf.tune import candidate_plans, plan_from_json
    program, info = load(os.path.join(C_INPUTS, row["stencil"] + ".c"),
                         (("SB_TYPE", row["dtype"]),))
    gpu = get_gpu(row["gpu"])
    model = Model(info, gpu, paper_env(program, info))
    key = f"model/{row['stencil']}-{row['dtype']}"
    out = {}
    for m in row["measured"]:
        plan = plan_from_json(info, m["plan"])
        try:
            p = model.predict(plan, m.get("cap"))
            value = f"{p.gflops!r} {p.bottleneck}"
        except UsageError as e:  # a measured budget the model says cannot launch
            value = str(e)
        out[f"{key}/{m['describe']} cap={m.get('cap')}"] = value
    ranked = model.rank(candidate_plans(info, gpu))[:5]
    out[f"{key}/top5"] = " | ".join(f"{p.plan.describe()} {p.gflops!r}" for p in ranked)
    return out


def fingerprint(jobs: int) -> dict[str, str]:
    with open(os.path.join(ARTIFACT, "table5.csv")) as f:
        table = {(r["stencil"], r["dtype"]): r for r in csv.DictReader(f)}
    with open(os.path.join(ARTIFACT, "hand_written.csv")) as f:
        hand = {(r["program"], r["dtype"]): hand_written_row(r) for r in csv.DictReader(f)}
    with open(os.path.join(ARTIFACT, "previous", "rows.jsonl")) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    out: dict[str, str] = {}
    with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
        futures = [pool.submit(code_fingerprint, n, d, c, table)
                   for c in ("sconf", "tuned") for n in benchmark_names()
                   for d in ("float", "double")]
        futures += [pool.submit(code_fingerprint, n, d, "hand_written", hand)
                    for n, d in sorted(hand)]
        futures += [pool.submit(model_fingerprint, row) for row in rows]
        for f in futures:
            out.update(f.result())
    return dict(sorted(out.items()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="FILE", help="record the fingerprint in FILE")
    group.add_argument("--check", metavar="FILE", help="compare with the one in FILE")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args(argv)
    now = fingerprint(args.jobs)
    if args.write:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(args.write)))
        with os.fdopen(fd, "w") as f:
            json.dump(now, f, indent=0, sort_keys=True)
            f.write("\n")
        os.replace(tmp, args.write)
        print(f"{len(now)} entries written to {args.write}")
        return 0
    with open(args.check) as f:
        recorded = json.load(f)
    changed = [k for k in recorded if k in now and recorded[k] != now[k]]
    missing = [k for k in recorded if k not in now]
    added = [k for k in now if k not in recorded]
    for label, keys in (("changed", changed), ("missing", missing), ("new", added)):
        for k in keys:
            print(f"{label}: {k}")
    print(f"{len(recorded)} recorded, {len(changed)} changed, {len(missing)} missing, "
          f"{len(added)} new")
    return 1 if changed or missing or added else 0


if __name__ == "__main__":
    raise SystemExit(main())
