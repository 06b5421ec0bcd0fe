"""``an5d analyze``: describe the stencil the scop contains (text or JSON)."""

from __future__ import annotations

import argparse
import json

from an5dpy.cli.options import add_input, load_input, options


def register(subparsers) -> None:
    p = subparsers.add_parser("analyze", help="describe the stencil the scop contains")
    add_input(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from an5dpy.cli import show
    opts = options(args)
    _, info = load_input(args, opts)
    if args.json:
        print(json.dumps(info.to_json(), indent=2))
    else:
        print(show.format_analysis(info))
    return 0
