"""Command line: ``an5d-translate`` and ``an5d <subcommand>``.

This module assembles the parser from the command modules (:mod:`an5dpy.cli.translate`,
``analyze``, ``verify``, ``model``, ``bench``, ``tune``, ``probe``; their shared options are
in :mod:`an5dpy.cli.options`) and turns errors into exit statuses: 0 success, 1 verification
mismatch, 2 bad input or usage (one line on stderr, :class:`Parser` for argparse's own
errors), 70 a bug in an5dpy (with a short report; the full traceback goes to a file), 130
interrupted.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Sequence

from an5dpy.version import __version__
from an5dpy.cli import analyze, bench, model, probe, translate, tune, verify
from an5dpy.errors import EXIT_INTERNAL, An5dError

#: The subcommands, in the order ``an5d --help`` lists them.
COMMANDS = (translate, analyze, verify, model, bench, tune, probe)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``an5d translate: error: --bt 0: must be at least 1``
    and exit status 2, without the usage block (``--help`` shows it). Subparsers are made
    of the same class, so every command reports the same way."""

    def _get_value(self, action: argparse.Action, arg_string: str):
        try:
            return super()._get_value(action, arg_string)
        except argparse.ArgumentError as e:
            option = action.option_strings[0] if action.option_strings else action.dest
            reason = e.message
            if isinstance(self._registry_get("type", action.type, action.type),
                          type) and reason.startswith("invalid "):
                reason = f"not a valid {action.type.__name__}"
            if reason.startswith(option):  # the type function named the option itself
                raise argparse.ArgumentError(None, reason) from None
            raise argparse.ArgumentError(None, f"{option} {arg_string}: {reason}") from None

    def _check_value(self, action: argparse.Action, value) -> None:
        if action.choices is not None and value not in action.choices:
            option = action.option_strings[0] if action.option_strings else action.dest
            raise argparse.ArgumentError(
                None, f"{option} {value}: choose one of {', '.join(map(str, action.choices))}")

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="an5d", description="Temporally blocked CUDA from C stencil loops (N.5D blocking).")
    parser.add_argument("--version", action="version", version=f"an5dpy {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for command in COMMANDS:
        command.register(sub)
    return parser


def run(argv: Sequence[str] | None, parser: argparse.ArgumentParser) -> int:
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except An5dError as e:
        print(e.for_command_line(), file=sys.stderr)
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
    parser = Parser(
        prog="an5d-translate",
        description="Translate the #pragma scop stencil of a C file into temporally blocked "
                    "CUDA: writes x_host.cu (the file with the scop replaced by GPU code), "
                    "x_kernel.cu and x_kernel.hu.")
    parser.add_argument("--version", action="version", version=f"an5dpy {__version__}")
    translate.add_arguments(parser)
    return run(argv, parser)
