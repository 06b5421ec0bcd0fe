"""Command line: ``an5d-translate`` and ``an5d <subcommand>`` (DESIGN.md section 6).

Exit status: 0 success, 1 verification mismatch, 2 bad input or usage, 70 a bug in an5dpy
(with a short report; the full traceback goes to a file).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Sequence

from an5dpy import __version__
from an5dpy.errors import EXIT_INTERNAL, EXIT_MISMATCH, An5dError, UsageError

STAGES = ("program", "analysis", "plan", "schedule")


# --------------------------------------------------------------------------- options


def _define(text: str) -> tuple[str, str | None]:
    name, eq, value = text.partition("=")
    if not name.isidentifier():
        raise argparse.ArgumentTypeError(f"-D {text!r}: expected NAME or NAME=VALUE")
    return name, (value if eq else None)


def _param(text: str) -> tuple[str, str]:
    name, eq, value = text.partition("=")
    if not eq or not name.isidentifier() or not value:
        raise argparse.ArgumentTypeError(f"-P {text!r}: expected NAME=VALUE")
    return name, value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _add_input(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", help="C file with a #pragma scop ... #pragma endscop loop nest")
    p.add_argument("-D", dest="defines", action="append", type=_define, default=[],
                   metavar="NAME[=VALUE]", help="preprocessor definition (as for cc -D)")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="include directory (as for cc -I)")
    p.add_argument("--dtype", choices=("float", "double"),
                   help="element type: shorthand for -D SB_TYPE=TYPE (the benchmarks' macro)")


def _add_plan(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("blocking plan")
    g.add_argument("--bt", type=_positive, default=4, help="temporal blocking degree (default 4)")
    g.add_argument("--bs", metavar="B1[xB2]",
                   help="threads per in-plane dimension, contiguous dimension first "
                        "(default 256 in 2D, 32x32 in 3D)")
    g.add_argument("--sl", type=_positive, metavar="N",
                   help="planes stored per stream block (stream division; default: off)")
    g.add_argument("--opt", choices=("auto", "nondiag", "assoc", "none"), default="auto",
                   help="register/shared-memory mode (default: nondiag if diagonal-access "
                        "free, else assoc if associative, else none)")


def _options(args):
    from an5dpy.driver import Options
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


def _check_dtype(args, info) -> None:
    if getattr(args, "dtype", None) and info.dtype != args.dtype:
        raise UsageError(f"--dtype {args.dtype}: '{info.array}' is declared {info.dtype} "
                         "(the option only sets the SB_TYPE macro)")


# --------------------------------------------------------------------------- commands


def cmd_translate(args) -> int:
    from an5dpy import driver
    options = _options(args)
    if args.print_ir in ("program", "analysis"):
        program, info = driver.load(args.input, options.defines, options.include_dirs)
        _check_dtype(args, info)
        print(_show(args.print_ir, program=program, info=info))
        return 0
    result = driver.translate(args.input, options)
    _check_dtype(args, result.info)
    if args.print_ir:
        print(_show(args.print_ir, program=result.program, info=result.info, plan=result.plan,
                    schedule=result.schedule))
        return 0
    out_dir = Path(args.output) if args.output else Path(args.input).resolve().parent
    written = driver.write_outputs(result.outputs, out_dir)
    if not args.quiet:
        for path in written:
            print(path)
    return 0


def _show(stage: str, program=None, info=None, plan=None, schedule=None) -> str:
    from an5dpy.cli import show
    if stage == "program":
        return show.format_program(program)
    if stage == "analysis":
        return show.format_analysis(info)
    if stage == "plan":
        return show.format_plan(plan)
    from an5dpy.blocking.printing import format_schedule
    return format_schedule(schedule)


def cmd_analyze(args) -> int:
    from an5dpy import driver
    from an5dpy.cli import show
    options = _options(args)
    _, info = driver.load(args.input, options.defines, options.include_dirs)
    _check_dtype(args, info)
    if args.json:
        print(json.dumps(info.to_json(), indent=2))
    else:
        print(show.format_analysis(info))
    return 0


def cmd_verify(args) -> int:
    from an5dpy.check.verify import verify_file
    options = _options(args)
    report = verify_file(args.input, options, backend=args.backend, params=dict(args.params),
                         exact=args.exact, seed=args.seed, arch=args.arch)
    _check_dtype(args, report.info)
    print("\n".join(report.lines()))
    return 0 if report.comparison.passed else EXIT_MISMATCH


# --------------------------------------------------------------------------- parsers


def _translate_parser(p: argparse.ArgumentParser) -> None:
    _add_input(p)
    _add_plan(p)
    p.add_argument("-o", dest="output", metavar="DIR",
                   help="output directory (default: the input's directory)")
    p.add_argument("--print-ir", choices=STAGES, metavar="STAGE",
                   help=f"print a stage ({', '.join(STAGES)}) instead of writing files")
    p.add_argument("--baseline", choices=("naive",),
                   help="host code runs the naive one-kernel-per-step version instead")
    p.add_argument("--no-smem-wrap", action="store_true",
                   help="read shared memory directly instead of through a device function "
                        "(lets nvcc vectorise shared loads)")
    p.add_argument("--regs", type=_positive, metavar="N",
                   help="register budget per thread: the kernels get launch bounds that let "
                        "65536 / (N * threads) blocks share an SM (like nvcc -maxrregcount)")
    p.add_argument("-q", "--quiet", action="store_true", help="do not list the written files")
    p.set_defaults(func=cmd_translate)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="an5d", description="Temporally blocked CUDA from C stencil loops (N.5D blocking).")
    parser.add_argument("--version", action="version", version=f"an5dpy {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    _translate_parser(sub.add_parser("translate", help="write x_host.cu, x_kernel.cu, "
                                                       "x_kernel.hu (same as an5d-translate)"))

    p = sub.add_parser("analyze", help="describe the stencil the scop contains")
    _add_input(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser("verify", help="run a backend against the gcc-compiled loop nest")
    _add_input(p)
    _add_plan(p)
    p.add_argument("--backend", choices=("sim", "cuda"), required=True,
                   help="sim: the numpy simulator of the schedule; cuda: generated code on "
                        "the GPU")
    p.add_argument("-P", dest="params", action="append", type=_param, default=[],
                   metavar="NAME=VALUE", help="value of a scop parameter (sizes, steps, ...)")
    p.add_argument("--exact", action="store_true",
                   help="cuda: build without fast math and with -fmad=false (results must then "
                        "be bit-identical in modes nondiag/none)")
    p.add_argument("--seed", type=int, default=0, help="random data seed (default 0)")
    p.add_argument("--arch", help="cuda: nvcc -arch value (default: the present GPU's)")
    p.set_defaults(func=cmd_verify)

    from an5dpy.cli import commands
    commands.register(sub)
    return parser


def run(argv: Sequence[str] | None, parser: argparse.ArgumentParser) -> int:
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except An5dError as e:
        print(str(e), file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # noqa: BLE001 - anything else is our bug
        return _internal_error(e)


def _internal_error(exc: BaseException) -> int:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name}" \
        if frames else "unknown location"
    ours = [f for f in frames if "an5dpy" in Path(f.filename).parts]
    if ours and ours[-1] is not frames[-1]:  # raised in a library: say where we called it
        parts = Path(ours[-1].filename).parts
        module = "/".join(parts[len(parts) - 1 - parts[::-1].index("an5dpy"):])
        where += f" (called from {module}:{ours[-1].lineno} in {ours[-1].name})"
    try:
        with tempfile.NamedTemporaryFile("w", prefix="an5dpy-crash-", suffix=".txt",
                                         delete=False) as f:
            f.write(f"an5dpy {__version__}\n")
            f.write("".join(traceback.format_exception(exc)))
            log = f.name
    except OSError as e:
        log = f"(not saved: {e})"
    print(f"an5dpy: internal error (a bug in an5dpy): {type(exc).__name__}: {exc}\n"
          f"  at {where}\n  full traceback: {log}\n"
          f"  please report it with the input file and command line", file=sys.stderr)
    return EXIT_INTERNAL


def main(argv: Sequence[str] | None = None) -> int:
    return run(argv, build_parser())


def translate_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="an5d-translate",
        description="Translate the #pragma scop stencil of a C file into temporally blocked "
                    "CUDA: writes x_host.cu (the file with the scop replaced by GPU code), "
                    "x_kernel.cu and x_kernel.hu.")
    parser.add_argument("--version", action="version", version=f"an5dpy {__version__}")
    _translate_parser(parser)
    return run(argv, parser)
