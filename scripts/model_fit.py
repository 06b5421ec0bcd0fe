#!/usr/bin/env python3
"""Fit the model's issue-term constants to an artifact's measurements, without a GPU.

    python scripts/model_fit.py artifact/H200                    # best settings of the grid
    python scripts/model_fit.py artifact/H200 --cross-validate   # and fit 20, score the 21st
    python scripts/model_fit.py artifact/H200 --latency 1000,1200 --exposed 0.4 --spill 3

For every setting of the grid (the GPU's step latency in cycles, an5dpy.perf.model.EXPOSED_ISSUE
and an5dpy.perf.model.SPILL_INSTRUCTIONS) the model ranks each row's measured plans, each at its
best register budget as the tuner ranks them. A row scores when its fastest measured plan
is among the 5 ranked highest. Only measured plans are ranked, so a plan that no run
measured cannot decide a score (scripts/model_check.py ranks the whole space).

With --cross-validate every stencil is held out in turn: the setting that scores best on
the other stencils' rows (ties: the first of the grid) is scored on the held-out rows, and
the sum tells how the fitted model may fare on a stencil it was not fitted to.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import sys
from dataclasses import dataclass, replace

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

C_INPUTS = os.path.join(REPO, "c_inputs")


@dataclass(frozen=True)
class Setting:
    latency: float  # GpuSpec.step_latency_cycles
    exposed: float  # model.EXPOSED_ISSUE
    spill: float  # model.SPILL_INSTRUCTIONS

    def label(self) -> str:
        return f"latency {self.latency:g}, exposed {self.exposed:g}, spill {self.spill:g}"


@dataclass(frozen=True)
class Row:
    """A measured row: its stencil, run parameters, measured plans and fastest plan."""

    name: str  # stencil/dtype
    stencil: str
    info: object
    env: dict
    plans: tuple
    best: str  # the fastest plan's describe()


def load_rows(artifact_dir: str) -> tuple[str, list[Row]]:
    """The GPU name and the rows of DIR/rows.jsonl."""
    from an5dpy.perf.bench import paper_env
    from an5dpy.driver import load
    from an5dpy.perf.tune import plan_from_json

    with open(os.path.join(artifact_dir, "rows.jsonl")) as f:
        raw = [json.loads(line) for line in f if line.strip()]
    rows = []
    for r in raw:
        program, info = load(os.path.join(C_INPUTS, r["stencil"] + ".c"),
                             (("SB_TYPE", r["dtype"]),))
        env = paper_env(program, info)
        plans = {m["describe"]: m["plan"] for m in r["measured"]}
        rows.append(Row(f"{r['stencil']}/{r['dtype']}", r["stencil"], info, env,
                        tuple(plan_from_json(info, p) for p in plans.values()),
                        r["best"]["describe"]))
    return (raw[0]["gpu"] if raw else ""), rows


@contextlib.contextmanager
def constants(setting: Setting, gpu):
    """The model with ``setting``'s constants (restored after); yields the GPU spec."""
    from an5dpy.perf import model
    saved = model.EXPOSED_ISSUE, model.SPILL_INSTRUCTIONS
    model.EXPOSED_ISSUE, model.SPILL_INSTRUCTIONS = setting.exposed, setting.spill
    try:
        yield replace(gpu, step_latency_cycles=setting.latency)
    finally:
        model.EXPOSED_ISSUE, model.SPILL_INSTRUCTIONS = saved


def hits(rows: list[Row], setting: Setting, gpu) -> tuple[bool, ...]:
    """Per row: whether the model with ``setting`` ranks its fastest plan in its top 5."""
    from an5dpy.perf.model import Model
    out = []
    with constants(setting, gpu) as spec:
        for row in rows:
            ranked = Model(row.info, spec, row.env).rank(row.plans)
            out.append(row.best in [p.plan.describe() for p in ranked[:5]])
    return tuple(out)


def cross_validate(rows: list[Row], scored: list[tuple[Setting, tuple[bool, ...]]]
                   ) -> tuple[int, list[tuple[str, Setting, int, int]]]:
    """Leave one stencil out: (held-out hits in total, per stencil: the setting fitted
    without it, its held-out hits and the stencil's row count)."""
    total, folds = 0, []
    for stencil in dict.fromkeys(r.stencil for r in rows):
        held = [i for i, r in enumerate(rows) if r.stencil == stencil]
        setting, vector = max(scored, key=lambda s: sum(
            h for i, h in enumerate(s[1]) if i not in held))
        score = sum(vector[i] for i in held)
        total += score
        folds.append((stencil, setting, score, len(held)))
    return total, folds


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",")]


def main(argv=None) -> int:
    from an5dpy.perf import model
    from an5dpy.perf.gpus import get_gpu

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("artifact_dir", help="folder with rows.jsonl (e.g. artifact/H200)")
    ap.add_argument("--gpu", help="GPU of the model (default: the rows' GPU)")
    ap.add_argument("--latency", type=floats, default=[1000, 1100, 1200, 1300, 1400],
                    help="step latencies in cycles, comma-separated")
    ap.add_argument("--exposed", type=floats, default=[0.3, 0.4, 0.5],
                    help="shares of a block's issue time its latency leaves exposed")
    ap.add_argument("--spill", type=floats, default=[1.5, 2, 3, 4],
                    help="instructions per register short")
    ap.add_argument("--cross-validate", action="store_true")
    ap.add_argument("--show", type=int, default=5, help="settings to list (best first)")
    args = ap.parse_args(argv)
    name, rows = load_rows(args.artifact_dir)
    if not rows:
        print("no rows", file=sys.stderr)
        return 2
    gpu = get_gpu(args.gpu or name)
    current = Setting(gpu.step_latency_cycles, model.EXPOSED_ISSUE, model.SPILL_INSTRUCTIONS)
    grid = [Setting(*v) for v in itertools.product(args.latency, args.exposed, args.spill)]
    if current not in grid:
        grid.append(current)
    scored = [(s, hits(rows, s, gpu)) for s in grid]
    n = len(rows)
    print(f"{n} rows of {gpu.name}; the fastest measured plan in the top 5 of the measured "
          f"plans:")
    for s, v in sorted(scored, key=lambda sv: -sum(sv[1]))[:args.show]:
        print(f"  {sum(v):3d}/{n}  {s.label()}")
    print(f"  {sum(dict(scored)[current]):3d}/{n}  {current.label()} (the model's constants)")
    if args.cross_validate:
        total, folds = cross_validate(rows, scored)
        for stencil, s, score, count in folds:
            print(f"  held out {stencil:12s} {score}/{count} with {s.label()}")
        print(f"cross-validated (fit on the other stencils, score the held-out one): "
              f"{total}/{n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
