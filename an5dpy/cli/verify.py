"""``an5d verify``: run a backend against the gcc-compiled loop nest, or prove the launches'
stores with isl (:mod:`an5dpy.check.verify`); exit 1 on a mismatch or a failed proof.

Sizes: ``-P`` as for every command; for the benchmark harness' compsize/timestep,
``--size``/``--steps`` with defaults small enough for the simulator yet larger than a
block and a pass (:data:`VERIFY_SIZE`, :data:`VERIFY_STEPS`).
"""

from __future__ import annotations

import argparse
import json
import math

from an5dpy.cli.options import (add_input, add_params, add_plan, announce, load_input,
                                options, positive)
from an5dpy.check.verify import BACKENDS, verify_file
from an5dpy.errors import EXIT_MISMATCH, UsageError
from an5dpy.perf.bench import HARNESS_SIZE, HARNESS_STEPS

#: Default interior cells per dimension for the harness' compsize: several thread blocks
#: and stream blocks of any plan, a partial block at the edge, seconds on the simulator.
VERIFY_SIZE = {2: 500, 3: 64}
#: Default time steps: full passes of every bT up to 16 and a remainder degree.
VERIFY_STEPS = 37


def register(subparsers) -> None:
    p = subparsers.add_parser("verify", help="run a backend against the gcc-compiled loop nest")
    add_input(p)
    add_plan(p)
    p.add_argument("--backend", choices=BACKENDS,
                   help="sim: the numpy simulator of the schedule; cuda: generated code on "
                        "the GPU; isl: prove, for the given sizes, that the launches' blocks "
                        "store every interior cell exactly once (default: cuda where a GPU "
                        "and cupy are present, else sim)")
    add_params(p, "sizes, steps, ...")
    p.add_argument("--size", type=positive, metavar="N",
                   help=f"interior cells per dimension: -P {HARNESS_SIZE}=N for the benchmark "
                        f"harness (default {VERIFY_SIZE[2]} in 2D, {VERIFY_SIZE[3]} in 3D)")
    p.add_argument("--steps", type=positive, metavar="N",
                   help=f"time steps: -P {HARNESS_STEPS}=N for the benchmark harness "
                        f"(default {VERIFY_STEPS})")
    p.add_argument("--exact", action="store_true",
                   help="cuda: build without fast math and with -fmad=false (results must then "
                        "be bit-identical in modes nondiag/none)")
    p.add_argument("--seed", type=int, default=0, help="random data seed (default 0)")
    p.add_argument("--arch", help="cuda: nvcc -arch value (default: the present GPU's)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def default_backend() -> str:
    """cuda where a GPU and cupy are present, else sim."""
    from an5dpy.cuda.runtime import cupy_available
    return "cuda" if cupy_available()[0] else "sim"


def verify_params(program, ndim: int, given: dict[str, str], size: int | None,
                  steps: int | None) -> dict[str, str]:
    """``-P`` values with ``--size``/``--steps`` (or their defaults) as the harness'
    compsize/timestep where the program has them and ``-P`` does not give them (or a
    variable they are defined from or define)."""
    names = {p.name for p in program.params}
    if HARNESS_SIZE not in names or HARNESS_STEPS not in names:
        if size is not None or steps is not None:
            raise UsageError(f"--size/--steps set the benchmark harness' parameters "
                             f"{HARNESS_SIZE}/{HARNESS_STEPS}, which this program does not "
                             f"have; give its sizes with -P NAME=VALUE")
        return dict(given)
    values = dict(given)
    related = {name: {name} for name in (HARNESS_SIZE, HARNESS_STEPS)}
    for p in program.params:  # dimsize = compsize + 2 gives compsize too
        if p.definition is not None:
            for name, group in related.items():
                if name in p.definition.variables:
                    group.add(p.name)
    for flag, name, value, default in (("--size", HARNESS_SIZE, size, VERIFY_SIZE[ndim]),
                                       ("--steps", HARNESS_STEPS, steps, VERIFY_STEPS)):
        if value is not None:
            if name in values and str(values[name]).strip() != str(value):
                raise UsageError(f"{flag} {value} contradicts -P {name}={values[name]}")
            values[name] = str(value)
        elif not related[name] & values.keys():
            values[name] = str(default)
    return values


def run(args: argparse.Namespace) -> int:

    opts = options(args)
    program, info = load_input(args, opts)
    params = verify_params(program, info.ndim, dict(args.params), args.size, args.steps)
    backend = args.backend or default_backend()
    report = verify_file(args.input, opts, backend=backend, params=params,
                         exact=args.exact, seed=args.seed, arch=args.arch,
                         announce=lambda choice: announce(args, choice),
                         loaded=(program, info))
    if args.json:
        print(json.dumps({"input": args.input, **report_json(report)}, indent=2))
    else:
        print("\n".join(report.lines()))
    return 0 if report.passed else EXIT_MISMATCH


def report_json(report) -> dict:
    """The README's schema of ``an5d verify --json``: ``passed``, ``backend``, ``plan``
    (the plan's JSON), ``params``, and per backend ``comparison`` (sim, cuda) or
    ``launches`` (isl). Errors that are not finite numbers are the strings "inf"/"nan"."""
    out = {"passed": report.passed, "backend": report.backend,
           "plan": report.plan.to_json(), "params": dict(report.env)}
    if report.backend == "isl":
        out["launches"] = [{"degree": d, "count": n, "holds": p.holds, "verdict": p.verdict()}
                           for (d, n), p in zip(report.launches, report.proofs)]
        return out
    c = report.comparison
    out["device"] = report.device
    out["build"] = report.build
    out["comparison"] = {"bit_identical": c.bit_identical, "max_abs": _number(c.max_abs),
                         "max_rel": _number(c.max_rel), "tolerance": _number(c.tolerance),
                         "cells": c.cells, "nan_cells": c.nan_cells,
                         "amplification": _number(c.amplification)}
    return out


def _number(x: float | None) -> float | str | None:
    """A float for JSON, which has no inf or NaN."""
    return x if x is None or math.isfinite(x) else str(x)
