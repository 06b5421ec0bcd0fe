"""Options shared by the ``an5d`` subcommands: the input file and preprocessor flags, the
blocking plan, the problem sizes (``-P``, ``--size``, ``--steps``), and their translation
into :class:`an5dpy.driver.Options` and parameter values.

Bad values raise :class:`argparse.ArgumentTypeError` (argparse prints them, exit 2) or
:class:`~an5dpy.errors.UsageError` (the handler in :mod:`an5dpy.cli.main`, exit 2).
"""

from __future__ import annotations

import argparse
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


#: Resident threads per SM on every GPU an5dpy models (P100 to H200).
MAX_THREADS_PER_SM = 2048


def register_budget(text: str) -> int:
    """``--regs N``: a register budget that ``__launch_bounds__`` can express.

    A budget reaches ptxas as the blocks per SM that must fit (65536 / (N * threads)), and
    registers are per SM: at most 2048 threads are resident, so no launch bound holds a
    thread below 65536 / 2048 = 32 registers (a smaller N asks for more threads than an SM
    holds, which ptxas ignores with a warning); no thread may use more than 255."""
    from an5dpy.blocking.plan import MAX_REGISTERS_PER_THREAD, REGISTERS_PER_SM

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not an integer") from None
    low = REGISTERS_PER_SM // MAX_THREADS_PER_SM
    if not low <= value <= MAX_REGISTERS_PER_THREAD:
        raise argparse.ArgumentTypeError(
            f"must be within {low}..{MAX_REGISTERS_PER_THREAD} registers per thread (launch "
            f"bounds cannot hold a thread below {REGISTERS_PER_SM} / {MAX_THREADS_PER_SM} = "
            f"{low}; none has more than {MAX_REGISTERS_PER_THREAD})")
    return value


def add_input(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", help="C file with a #pragma scop ... #pragma endscop loop nest")
    p.add_argument("-D", dest="defines", action="append", type=define, default=[],
                   metavar="NAME[=VALUE]", help="preprocessor definition (as for cc -D)")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="include directory (as for cc -I)")
    p.add_argument("--dtype", choices=("float", "double"),
                   help="element type: shorthand for -D SB_TYPE=TYPE (the benchmarks' macro)")


def add_plan(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("blocking plan")
    g.add_argument("--bt", type=positive, default=4, help="temporal blocking degree (default 4)")
    g.add_argument("--bs", metavar="B1[xB2]",
                   help="threads per in-plane dimension, contiguous dimension first "
                        "(default 256 in 2D, 32x32 in 3D)")
    g.add_argument("--sl", type=positive, metavar="N",
                   help="planes stored per stream block (stream division; default: off)")
    g.add_argument("--opt", choices=("auto", "nondiag", "assoc", "none"), default="auto",
                   help="register/shared-memory mode (default: nondiag if diagonal-access "
                        "free, else assoc if associative, else none)")


def add_params(p: argparse.ArgumentParser, what: str = "sizes, steps") -> None:
    p.add_argument("-P", dest="params", action="append", type=param, default=[],
                   metavar="NAME=VALUE", help=f"value of a scop parameter ({what})")


def add_sizes(p: argparse.ArgumentParser) -> None:
    """``-P``, and ``--size``/``--steps`` for the benchmark harness (model, bench, tune)."""
    add_params(p)
    p.add_argument("--size", type=positive, metavar="N",
                   help=f"interior cells per dimension: -P {HARNESS_SIZE}=N for the benchmark "
                        f"harness (default {PAPER_SIZE[2]} in 2D, {PAPER_SIZE[3]} in 3D, as the "
                        "paper)")
    p.add_argument("--steps", type=positive, metavar="N",
                   help=f"time steps: -P {HARNESS_STEPS}=N for the benchmark harness "
                        f"(default {PAPER_STEPS})")


def options(args: argparse.Namespace):
    """The driver's :class:`~an5dpy.driver.Options` from the parsed flags (``--dtype``
    becomes ``-D SB_TYPE``)."""
    from an5dpy.driver import Options  # not at the top: ``an5d --help`` needs no pipeline

    defines = list(args.defines)
    if getattr(args, "dtype", None):
        for name, value in defines:
            if name == "SB_TYPE" and value != args.dtype:
                raise UsageError(f"--dtype {args.dtype} contradicts -D SB_TYPE={value or ''}")
        defines.append(("SB_TYPE", args.dtype))
    return Options(bt=getattr(args, "bt", 4), bs=getattr(args, "bs", None),
                   sl=getattr(args, "sl", None), opt=getattr(args, "opt", None),
                   defines=tuple(defines), include_dirs=tuple(args.include_dirs),
                   smem_wrap=not getattr(args, "no_smem_wrap", False),
                   baseline=getattr(args, "baseline", None) == "naive",
                   regs=getattr(args, "regs", None) if getattr(args, "command", None)
                   in (None, "translate") else None)


def check_dtype(args: argparse.Namespace, info: StencilInfo) -> None:
    """``--dtype`` only sets a macro: refuse it where the array is declared otherwise."""
    if getattr(args, "dtype", None) and info.dtype != args.dtype:
        raise UsageError(f"--dtype {args.dtype}: '{info.array}' is declared {info.dtype} "
                         "(the option only sets the SB_TYPE macro)")


def model_params(program: StencilProgram, info: StencilInfo, given: Mapping[str, str],
                 size: int | None = None, steps: int | None = None) -> dict[str, int | float]:
    """Parameter values for the model, bench and tune: ``-P`` values, ``--size``/``--steps``
    as the harness' compsize/timestep (paper sizes for those not given), and a placeholder
    for floating-point parameters (coefficients cannot change sizes or counts)."""
    from an5dpy.check.reference import resolve_params

    names = {p.name for p in program.params}
    values = dict(given)
    harness = HARNESS_SIZE in names and HARNESS_STEPS in names
    if (size is not None or steps is not None) and not harness:
        raise UsageError(f"--size/--steps set the benchmark harness' parameters "
                         f"{HARNESS_SIZE}/{HARNESS_STEPS}, which this program does not have; "
                         f"give its sizes with -P NAME=VALUE (parameters: "
                         f"{', '.join(sorted(names)) or 'none'})")
    for flag, name, value in (("--size", HARNESS_SIZE, size), ("--steps", HARNESS_STEPS, steps)):
        if value is None:
            continue
        if name in values and str(values[name]).strip() != str(value):
            raise UsageError(f"{flag} {value} contradicts -P {name}={values[name]}")
        values[name] = str(value)
    if harness:
        values.setdefault(HARNESS_SIZE, str(PAPER_SIZE.get(info.ndim, 512)))
        values.setdefault(HARNESS_STEPS, str(PAPER_STEPS))
    for p in program.params:
        if is_floating(p.ctype) and p.name not in values and p.value is None:
            values[p.name] = "1"
    return resolve_params(program, values)


def integer_sizes(program: StencilProgram, env: Mapping[str, int | float]) -> dict[str, int]:
    """The integer parameters of ``env`` (what the commands print as the problem size)."""
    return {p.name: env[p.name] for p in program.params if not is_floating(p.ctype)}
