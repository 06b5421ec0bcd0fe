#!/usr/bin/env python3
"""The tuner's variants of a plan against the plan itself, side by side on the present GPU.

    python scripts/variants_compare.py --rows artifact/H200/rows.jsonl \
        --stencils star3d1r,j2d5pt --dtypes float --minutes 5 --out /tmp/variants

For each measured row (its tuned plan and register budget, as ``scripts/artifact.py``
wrote them), the variants are the tuned plan itself and the tuner's variants of it
(:func:`an5dpy.perf.tune.variant_plans`: for 2 and 4 cells per thread, the same block of
cells with fewer threads and a block of as many threads with more cells along the
outermost in-plane dimension; in mode nondiag, the plan and its coarsened plans of the
same block with one barrier per step). ``--kinds`` keeps some of them: ``coarsen`` (more
cells per thread, a barrier per level), ``barriers`` (one barrier per step), ``shuffle``
(2D nondiag: blocks of one warp exchanging row neighbours by warp shuffles,
:func:`an5dpy.perf.tune.shuffle_plans`, which the tuner does not measure), ``halo`` (bT 1,
the computing threads loading the halo: :func:`an5dpy.perf.tune.halo_loaded_plans`).
``--extra``
adds plans of the user's (``"bt=8 bs=1024 coarsen=4 barriers=step"``, the options not
given the tuned plan's) to every row where they are legal, as the kind ``extra``.
``balanced`` (not among the default kinds) adds the tuned plan at the two stream lengths
that the model predicts fastest within a factor 2 of its own
(:func:`an5dpy.perf.tune.balanced_stream_plans`: lengths between the search space's
powers of two, whose blocks fill the launch's last wave). ``tiles`` (not among the default
kinds either) adds the tuned plan with one block side a quarter smaller or half larger
(:func:`an5dpy.perf.tune.tile_plans`: sides between the search space's powers of two).
Each variant
is built with each of the tuner's register budgets that binds, screened with short runs,
and the fastest three (the tuned plan among them, always) are timed as reported runs, in
one process, one after the other. Rows go to ``<out>/variants.jsonl`` as they finish; the
table (``<out>/variants.md``) gives each row's tuned plan, the best of each kind and the
best overall over the tuned plan.
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

#: The kinds of variants, each a test of a plan.
KINDS = {
    "halo": lambda p: p.halo_loaded,
    "coarsen": lambda p: p.coarsen > 1 and p.barriers.value == "level" and not p.halo_loaded,
    "barriers": lambda p: p.barriers.value == "step",
    "shuffle": lambda p: p.barriers.value == "shuffle",
}
#: The kind of the plans of ``--extra`` (:func:`extra_plans`).
EXTRA = "extra"
#: The kind of the tuned plan at the stream lengths that fill its last wave of blocks
#: (:func:`an5dpy.perf.tune.balanced_stream_plans`), which the tuner measures for its fastest
#: build (artifact/H200/balanced_stream.md: measured with this kind first).
BALANCED = "balanced"
#: The kind of the tuned plan with one block side between the powers of two
#: (:func:`an5dpy.perf.tune.tile_plans`), which the tuner does not search
#: (artifact/H200/tiles.md: measured with this kind, they gained on 3 rows of 24).
TILES = "tiles"


def settings_plan(info, given, base=None):
    """The plan of ``given`` settings (``{"bt": "8", "bs": "1024", "coarsen": "4",
    "barriers": "step", "idle": "compute"}``: bs contiguous dimension first, sl a number or
    ``off``; the spelling of ``--extra`` here and of scripts/ab_compare.py's cases), the
    settings not given ``base``'s, or without one: sl off, the stencil's default mode, one
    cell per thread, a barrier per level, idle warps skipped (bt and bs then required)."""
    from an5dpy.blocking.plan import parse_block_size
    from an5dpy.driver import blocking_plan
    sl = given.get("sl")
    return blocking_plan(
        info, int(given["bt"]) if "bt" in given else base.bt,
        bs=parse_block_size(given["bs"], info.ndim) if "bs" in given else base.bs,
        sl=(base.sl if base is not None else None) if sl is None
        else None if sl == "off" else int(sl),
        opt=given.get("opt", base.mode.value if base is not None else None),
        coarsen=int(given.get("coarsen", base.coarsen if base is not None else 1)),
        barriers=given.get("barriers", base.barriers.value if base is not None else "level"),
        idle=given.get("idle", base.idle.value if base is not None else "skip"),
        halo=given.get("halo", base.halo_cells.value if base is not None else "threads"))


def extra_plans(info, tuned, specs):
    """The plans of ``--extra`` for a row: each spec's options (``bt=8 bs=1024 coarsen=4
    barriers=step``, :func:`settings_plan`) over the tuned plan's, those legal."""
    from an5dpy.errors import UsageError
    out = []
    for spec in specs:
        try:
            out.append(settings_plan(info, dict(item.split("=", 1) for item in spec.split()),
                                     tuned))
        except UsageError:
            continue
    return out


def variants(info, tuned, kinds):
    """The tuner's variants of ``tuned`` of the given kinds, and with ``shuffle`` the
    warp-shuffle plans, which the tuner does not measure (:func:`an5dpy.perf.tune.
    shuffle_plans` says why)."""
    from an5dpy.perf.tune import shuffle_plans, variant_plans
    plans = variant_plans(info, tuned) + shuffle_plans(info, tuned)
    return [p for p in plans if any(KINDS[k](p) for k in kinds if k in KINDS)]


def kind_of(plan, extra=(), balanced=(), tiles=()) -> str:
    if plan in extra:
        return EXTRA
    if plan in balanced:  # the tuned plan but its stream length, whatever its kind
        return BALANCED
    if plan in tiles:  # the tuned plan but one block side, whatever its kind
        return TILES
    return next((k for k, test in KINDS.items() if test(plan)), "tuned")


def compare_row(bench, row, gpu, kinds, specs=()):
    """One row's measurements: every variant's best (plan, budget, GFLOP/s), the tuned
    plan's own reported run, and the best variant of each kind (None where the tuned
    plan has no variant of these kinds)."""
    import artifact
    from an5dpy.perf.tune import balanced_stream_plans, plan_from_json, tile_plans
    info, env, model, _space, _ranked = artifact.row_context(row, gpu)
    tuned = plan_from_json(info, row["best"]["plan"])
    extra = [p for p in extra_plans(info, tuned, specs) if p != tuned]
    balanced = (balanced_stream_plans(info, model, tuned, row["best"]["cap"])
                if BALANCED in kinds else [])
    tiles = tile_plans(info, tuned) if TILES in kinds else []
    plans = [tuned, *variants(info, tuned, kinds)]
    plans += [p for p in extra + balanced + tiles if p not in plans]
    if len(plans) == 1:  # none of these kinds applies (another mode)
        return None
    jobs = artifact.submit_jobs(bench, info, plans, row["stencil"].replace("-", "_"))
    measured = artifact.screen_and_confirm(bench, info, env, jobs, row["stencil"])
    # the tuned plan at its own budget (or none, where that budget does not bind), timed
    # as a reported run right after the variants
    builds = {(p, c): fut.result() for p, c, fut in jobs if p == tuned}
    built = builds.get((tuned, row["best"]["cap"])) or builds[(tuned, None)]
    base = bench.time(info, tuned, built, env)[0]
    best = {}
    for m in measured:
        k = kind_of(m["plan"], extra, balanced, tiles)
        if m["final"] and (k not in best or m["gflops"] > best[k]["gflops"]):
            best[k] = {"describe": m["plan"].describe(), "cap": m["cap"],
                       "gflops": m["gflops"], "registers": m["registers"],
                       "spills": m["spills"]}
    return {
        "stencil": row["stencil"], "dtype": row["dtype"], "gpu": row["gpu"],
        "tuned": {"describe": tuned.describe(), "cap": row["best"]["cap"],
                  "artifact_gflops": row["best"]["gflops"], "gflops": base},
        "best": best,
        "measured": [{"describe": m["plan"].describe(), "cap": m["cap"], "gflops": m["gflops"],
                      "final": m["final"], "registers": m["registers"]} for m in measured],
    }


def render(rows, kinds) -> str:
    head = "".join(f" best {k} | GFLOP/s | " for k in kinds)
    lines = [f"| stencil | dtype | tuned plan | tuned GFLOP/s |{head}best / tuned |",
             "|---|---|---|---|" + "---|---|" * len(kinds) + "---|"]
    for r in rows:
        t = r["tuned"]
        base = t["gflops"] or t["artifact_gflops"]
        cells, top = [], base
        for k in kinds:
            b = r["best"].get(k)
            cells.append(f"{b['describe']} regs {b['cap'] or '-'} | {b['gflops']:,.0f}" if b
                         else "- | -")
            top = max(top, b["gflops"] if b else 0)
        lines.append(f"| {r['stencil']} | {r['dtype']} | {t['describe']} regs "
                     f"{t['cap'] or '-'} | {base:,.0f} | {' | '.join(cells)} | "
                     f"{top / base:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", required=True, help="an artifact's rows.jsonl")
    ap.add_argument("--stencils", default="", help="comma-separated (default: every row)")
    ap.add_argument("--dtypes", default="float,double")
    ap.add_argument("--minutes", type=float, default=30.0, help="stop starting rows after this")
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help=f"comma-separated, of {', '.join(KINDS)}, {BALANCED}, {TILES} (default: "
                    f"{', '.join(KINDS)})")
    ap.add_argument("--extra", action="append", default=[],
                    help="a plan to measure beside the variants, as options over the tuned "
                    "plan's: 'bt=8 bs=1024 coarsen=4 barriers=step' (repeatable)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    import artifact
    from an5dpy.perf.gpus import get_gpu
    from an5dpy.cuda.runtime import device_name

    kinds = [k for k in args.kinds.split(",") if k]
    unknown = set(kinds) - set(KINDS) - {BALANCED, TILES}
    if unknown:
        ap.error(f"--kinds: unknown {', '.join(sorted(unknown))}")
    shown = kinds + ([EXTRA] if args.extra else [])
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
        result = compare_row(bench, row, gpu, kinds, args.extra)
        if result is None:
            continue
        done.append(result)
        with open(os.path.join(args.out, "variants.jsonl"), "a") as f:
            f.write(json.dumps(result) + "\n")
        print(render([result], shown).splitlines()[-1], flush=True)
    table = render(done, shown)
    with open(os.path.join(args.out, "variants.md"), "w") as f:
        f.write(f"# The tuner's variants against the tuned plan ({device_name()})\n\n{table}")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
