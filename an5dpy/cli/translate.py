"""``an5d translate`` / ``an5d-translate``: write x_host.cu, x_kernel.cu and x_kernel.hu, or
print a stage of the pipeline (``--print-ir``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from an5dpy.cli.options import (add_input, add_plan, add_sizes, announce, load_input, options,
                                 positive)

STAGES = ("program", "analysis", "plan", "schedule")
HELP = "write x_host.cu, x_kernel.cu, x_kernel.hu (same as an5d-translate)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The translate options (shared by ``an5d translate`` and ``an5d-translate``)."""
    add_input(p)
    add_plan(p, quiet_help="print neither the chosen plan nor the written files")
    add_sizes(p, "sizes, steps: the problem the plan is chosen for")
    p.add_argument("-o", dest="output", metavar="DIR",
                   help="output directory (default: the input's directory)")
    p.add_argument("--print-ir", choices=STAGES, metavar="STAGE",
                   help=f"print a stage ({', '.join(STAGES)}) instead of writing files")
    p.add_argument("--baseline", choices=("naive",),
                   help="host code runs the naive one-kernel-per-step version instead")
    p.add_argument("--gpus", type=positive, metavar="N",
                   help="host code drives N GPUs with NCCL (slabs of planes along the "
                        "streaming dimension; AN5D_GPUS=N overrides it at run time; built "
                        "with -DAN5D_MPI: one MPI process per GPU)")
    p.add_argument("--no-smem-wrap", action="store_true",
                   help="read shared memory directly instead of through a device function "
                        "(lets nvcc vectorise shared loads)")
    p.set_defaults(func=run)


def register(subparsers) -> None:
    add_arguments(subparsers.add_parser("translate", help=HELP))


def run(args: argparse.Namespace) -> int:
    from an5dpy import driver
    opts = options(args)
    if args.print_ir in ("program", "analysis"):
        program, info = load_input(args, opts)
        print(show_stage(args.print_ir, program=program, info=info))
        return 0
    loaded = load_input(args, opts)
    env = None
    if args.size is not None or args.steps is not None:
        from an5dpy.perf.choice import problem_env
        env = problem_env(*loaded, dict(args.params), args.size, args.steps, complete=True)
    result = driver.translate(args.input, opts, env, loaded=loaded)
    if args.print_ir:
        announce(args, result.choice)
        print(show_stage(args.print_ir, program=result.program, info=result.info,
                         plan=result.plan, schedule=result.schedule))
        return 0
    out_dir = Path(args.output) if args.output else Path(args.input).resolve().parent
    written = driver.write_outputs(result.outputs, out_dir)
    announce(args, result.choice)  # once written: an error is then the only message
    if not args.quiet:
        for path in written:
            print(path)
    return 0


def show_stage(stage: str, program=None, info=None, plan=None, schedule=None) -> str:
    from an5dpy.cli import show
    if stage == "program":
        return show.format_program(program)
    if stage == "analysis":
        return show.format_analysis(info)
    if stage == "plan":
        return show.format_plan(plan)
    from an5dpy.blocking.printing import format_schedule
    return format_schedule(schedule)
