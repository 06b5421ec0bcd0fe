"""Options shared by the ``an5d`` subcommands: the input file and preprocessor flags, the
blocking plan, the problem sizes (``-P``, ``--size``, ``--steps``), and their translation
into :class:`an5dpy.driver.Options` and parameter values.

Bad values raise :class:`argparse.ArgumentTypeError` (argparse prints them, exit 2) or
:class:`~an5dpy.errors.UsageError` (the handler in :mod:`an5dpy.cli.main`, exit 2).
"""

from __future__ import annotations

import argparse
import sys
from typing import Mapping

from an5dpy.errors import UsageError
from an5dpy.ir import StencilInfo, StencilProgram, is_floating
from an5dpy.perf.bench import HARNESS_SIZE, HARNESS_STEPS, PAPER_SIZE, PAPER_STEPS


def define(text: str) -> tuple[str, str | None]:
    """``-D NAME[=VALUE]``."""
    name, eq, value = text.partition("=")
    if not name.isidentifier():
        raise argparse.ArgumentTypeError(f"-D {text!r}: expected NAME or NAME=VALUE")
    return name, (value if eq else None)


def param(text: str) -> tuple[str, str]:
    """``-P NAME=VALUE``."""
    name, eq, value = text.partition("=")
    if not eq or not name.isidentifier() or not value:
        raise argparse.ArgumentTypeError(f"-P {text!r}: expected NAME=VALUE")
    return name, value


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def register_budget(text: str) -> int:
    """``--regs N``: a register budget that ``__launch_bounds__`` can express
    (:func:`an5dpy.blocking.plan.register_budget_problem`)."""
    from an5dpy.blocking.plan import register_budget_problem

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not an integer") from None
    problem = register_budget_problem(value)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return value


def add_input(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", help="C file with a #pragma scop ... #pragma endscop loop nest")
    p.add_argument("-D", dest="defines", action="append", type=define, default=[],
                   metavar="NAME[=VALUE]", help="preprocessor definition (as for cc -D)")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="include directory (as for cc -I)")
    p.add_argument("--dtype", choices=("float", "double"),
                   help="element type: shorthand for -D SB_TYPE=TYPE (the benchmarks' macro)")


def auto_or(kind, *words: str):
    """An option's value type: ``auto``, one of ``words`` (as given), or ``kind``'s value."""
    def convert(text: str):
        if text.strip().lower() in ("auto", *words):
            return text.strip().lower()
        return kind(text)
    convert.__name__ = getattr(kind, "__name__", "value")
    return convert


PLAN_DEFAULT = ("default: the performance model's choice for the target GPU and sizes, "
                "around the options given")


def add_plan(p: argparse.ArgumentParser, quiet_help: str = "do not print the plan line") -> None:
    """The plan options (``auto`` or absent: the model's choice), ``--gpu`` and ``-q``."""
    g = p.add_argument_group(
        "blocking plan",
        "Options not given (or given as 'auto') are the performance model's choice: its best "
        "plan for --gpu and the problem's sizes (-P; the paper's 16384^2 / 512^3 x 1000 steps "
        "where not given) with the given options held. The plan is printed on stderr.")
    g.add_argument("--bt", type=auto_or(positive), metavar="N|auto",
                   help=f"temporal blocking degree ({PLAN_DEFAULT})")
    g.add_argument("--bs", metavar="B1[xB2]|auto",
                   help="threads per in-plane dimension, contiguous dimension first "
                        "(e.g. 256 in 2D, 32x32 in 3D; default: the model's choice)")
    g.add_argument("--sl", type=auto_or(positive, "off"), metavar="N|off|auto",
                   help="planes stored per stream block (stream division; off: none; default: "
                        "the model's choice)")
    g.add_argument("--coarsen", type=auto_or(positive), metavar="C|auto",
                   help="cells per thread along the outermost in-plane dimension (1, 2, 4 or "
                        "8; the block of --bs cells then has C times fewer threads). Default: "
                        "the model's choice where it chooses the plan (2 in 2D mode nondiag "
                        "where it predicts that faster, else 1), 1 where --bt, --bs and --sl "
                        "are all given")
    g.add_argument("--barriers", choices=("auto", "level", "step", "shuffle"),
                   help="level: a barrier per level op (AN5D's schedule); step: one barrier per "
                        "streaming step for all levels, each level with its own shared "
                        "buffers (mode nondiag); shuffle: no barrier and no shared memory, "
                        "the block is one warp whose lanes exchange row neighbours by warp "
                        "shuffles (2D, mode nondiag, --bs 32 x --coarsen; measured slower "
                        "than the tuned plans). Default: level (the model's search space "
                        "holds level only; 'an5d tune --measure' also times step)")
    g.add_argument("--idle", choices=("auto", "skip", "compute"),
                   help="at a level op where some warp has no cell in the level's window: "
                        "skip: the op branches and such warps jump over the evaluation; "
                        "compute: no op branches, every warp evaluates every level (its halo "
                        "threads' values are never read). Default: skip (the model's search "
                        "space holds skip only; 'an5d tune --measure' also times compute)")
    g.add_argument("--halo", choices=("auto", "threads", "loaded"),
                   help="who loads a block's in-plane halo: threads: a thread per halo cell "
                        "(AN5D's layout); loaded: bT 1, 3D, mode nondiag or assoc: the "
                        "computing threads load it, every lane computes (--bs stays the tile, "
                        "halo included). Default: the model's choice, threads or a bT 1 plan "
                        "loading the halo at one cell a thread, or two in mode nondiag "
                        "(threads where --bt, --bs and --sl are given; 'an5d tune --measure' "
                        "also times loaded plans of more cells)")
    g.add_argument("--opt", choices=("auto", "nondiag", "assoc", "none"),
                   help="register/shared-memory mode (default and auto: nondiag if "
                        "diagonal-access free, else assoc if associative, else none)")
    g.add_argument("--regs", type=auto_or(register_budget, "none"), metavar="N|none|auto",
                   help="register budget per thread: the kernels get launch bounds that let "
                        "65536 / (N * threads) blocks share an SM (like nvcc -maxrregcount; "
                        "none: no budget). Default: the model's choice where it chooses the "
                        "plan, none where --bt, --bs and --sl are all given")
    g.add_argument("--gpu", metavar="NAME|SPEC.json",
                   help="the GPU the plan is chosen (and modelled) for: P100, V100, A100, H100, "
                        "H200, a CUDA device name or a JSON spec written by 'an5d probe' "
                        "(default: this machine's GPU, else H100)")
    p.add_argument("-q", "--quiet", action="store_true", help=quiet_help)


def add_params(p: argparse.ArgumentParser, what: str = "sizes, steps") -> None:
    p.add_argument("-P", dest="params", action="append", type=param, default=[],
                   metavar="NAME=VALUE", help=f"value of a scop parameter ({what})")


def add_sizes(p: argparse.ArgumentParser, what: str = "sizes, steps") -> None:
    """``-P``, and ``--size``/``--steps`` for the benchmark harness (translate, model,
    bench, tune)."""
    add_params(p, what)
    p.add_argument("--size", type=positive, metavar="N",
                   help=f"interior cells per dimension: -P {HARNESS_SIZE}=N for the benchmark "
                        f"harness (default {PAPER_SIZE[2]} in 2D, {PAPER_SIZE[3]} in 3D, as the "
                        "paper)")
    p.add_argument("--steps", type=positive, metavar="N",
                   help=f"time steps: -P {HARNESS_STEPS}=N for the benchmark harness "
                        f"(default {PAPER_STEPS})")


def options(args: argparse.Namespace):
    """The driver's :class:`~an5dpy.driver.Options` from the parsed flags (``--dtype``
    becomes ``-D SB_TYPE``; ``-P`` the sizes the plan is chosen for)."""
    from an5dpy.driver import Options  # not at the top: ``an5d --help`` needs no pipeline

    defines = list(args.defines)
    if getattr(args, "dtype", None):
        for name, value in defines:
            if name == "SB_TYPE" and value != args.dtype:
                raise UsageError(f"--dtype {args.dtype} contradicts -D SB_TYPE={value or ''}")
        defines.append(("SB_TYPE", args.dtype))
    return Options(bt=getattr(args, "bt", None), bs=getattr(args, "bs", None),
                   sl=getattr(args, "sl", None), opt=getattr(args, "opt", None),
                   defines=tuple(defines), include_dirs=tuple(args.include_dirs),
                   smem_wrap=not getattr(args, "no_smem_wrap", False),
                   baseline=getattr(args, "baseline", None) == "naive",
                   gpus=getattr(args, "gpus", None),
                   regs=getattr(args, "regs", None), gpu=getattr(args, "gpu", None),
                   coarsen=getattr(args, "coarsen", None),
                   barriers=getattr(args, "barriers", None),
                   idle=getattr(args, "idle", None),
                   halo=getattr(args, "halo", None),
                   params=tuple(getattr(args, "params", ())))


def choose(args: argparse.Namespace, info: StencilInfo, opts, env=None):
    """The plan of the command's options (:func:`an5dpy.driver.choose_plan`), its line
    printed on stderr unless ``-q`` or every plan option was given."""
    from an5dpy.driver import choose_plan
    choice = choose_plan(info, opts, env)
    announce(args, choice)
    return choice


def announce(args: argparse.Namespace, choice) -> None:
    """Print the chosen plan's line on stderr (not with ``-q``, not for a plan the user
    gave in full)."""
    if choice.chosen and not getattr(args, "quiet", False):
        print(choice.line(), file=sys.stderr)


def load_input(args: argparse.Namespace, opts) -> tuple:
    """The command's input read and analysed (:func:`an5dpy.driver.load` with ``opts``'s
    defines and include directories), ``--dtype`` checked against its declaration."""
    from an5dpy import driver
    program, info = driver.load(args.input, opts.defines, opts.include_dirs)
    check_dtype(args, info)
    return program, info


def check_dtype(args: argparse.Namespace, info: StencilInfo) -> None:
    """``--dtype`` only sets a macro: refuse it where the array is declared otherwise."""
    if getattr(args, "dtype", None) and info.dtype != args.dtype:
        raise UsageError(f"--dtype {args.dtype}: '{info.array}' is declared {info.dtype} "
                         "(the option only sets the SB_TYPE macro)")


def model_params(program: StencilProgram, info: StencilInfo, given: Mapping[str, str],
                 size: int | None = None, steps: int | None = None) -> dict[str, int | float]:
    """Parameter values for the model, bench and tune: ``-P`` values, ``--size``/``--steps``
    as the harness' compsize/timestep (paper sizes for those not given), and a placeholder
    for floating-point parameters (:func:`an5dpy.perf.choice.problem_env`)."""
    from an5dpy.perf.choice import problem_env
    return problem_env(program, info, given, size, steps)


def integer_sizes(program: StencilProgram, env: Mapping[str, int | float]) -> dict[str, int]:
    """The integer parameters of ``env`` (what the commands print as the problem size)."""
    return {p.name: env[p.name] for p in program.params if not is_floating(p.ctype)}
