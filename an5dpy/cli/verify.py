"""``an5d verify``: run a backend against the gcc-compiled loop nest, or prove the launches'
stores with isl (:mod:`an5dpy.check.verify`); exit 1 on a mismatch or a failed proof."""

from __future__ import annotations

import argparse

from an5dpy.cli.options import add_input, add_params, add_plan, announce, check_dtype, options
from an5dpy.check.verify import BACKENDS, verify_file
from an5dpy.errors import EXIT_MISMATCH


def register(subparsers) -> None:
    p = subparsers.add_parser("verify", help="run a backend against the gcc-compiled loop nest")
    add_input(p)
    add_plan(p)
    p.add_argument("--backend", choices=BACKENDS, required=True,
                   help="sim: the numpy simulator of the schedule; cuda: generated code on "
                        "the GPU; isl: prove, for the given sizes, that the launches' blocks "
                        "store every interior cell exactly once")
    add_params(p, "sizes, steps, ...")
    p.add_argument("--exact", action="store_true",
                   help="cuda: build without fast math and with -fmad=false (results must then "
                        "be bit-identical in modes nondiag/none)")
    p.add_argument("--seed", type=int, default=0, help="random data seed (default 0)")
    p.add_argument("--arch", help="cuda: nvcc -arch value (default: the present GPU's)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = verify_file(args.input, options(args), backend=args.backend,
                         params=dict(args.params), exact=args.exact, seed=args.seed,
                         arch=args.arch, announce=lambda choice: announce(args, choice))
    check_dtype(args, report.info)
    print("\n".join(report.lines()))
    return 0 if report.passed else EXIT_MISMATCH
