"""Errors, split by who is at fault.

* :class:`UnsupportedInput` -- the user's C file cannot be blocked (exit status 2).
  It carries the source coordinate so the CLI prints ``FILE:LINE:COL: error: ...``.
* :class:`UsageError` -- bad options or an impossible blocking plan (exit 2);
  :class:`OptionError` names the options as keywords (``bt=0``), which the command line
  words as its flags (``--bt 0``, :meth:`An5dError.for_command_line`).
* :class:`CudaCompileError` -- nvcc rejected generated code; carries the compiler log.
  Generated code that does not compile is our bug, so the CLI reports it as exit 70.
* :class:`InternalError` -- a bug in an5dpy (exit 70).

A backend that disagrees with the gcc oracle is no error: ``an5d verify`` reports FAIL and
exits with :data:`EXIT_MISMATCH` (1).
"""

from __future__ import annotations

from typing import Sequence

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 70


class An5dError(Exception):
    """Base class of every error an5dpy raises on purpose."""

    exit_status = EXIT_INTERNAL

    def for_command_line(self) -> str:
        """The error as the command line prints it (the same text unless it names options,
        which the command line spells as its flags)."""
        return str(self)


class UnsupportedInput(An5dError):
    """The input program is outside what an5dpy can block.

    ``coord`` is an :class:`an5dpy.ir.Coord` (or None when no position applies,
    e.g. an unreadable file); ``message`` names the construct and why.
    """

    exit_status = EXIT_BAD_INPUT

    def __init__(self, message: str, coord=None):
        super().__init__(message)
        self.message = message
        self.coord = coord

    def __str__(self) -> str:
        if self.coord is None:
            return f"error: {self.message}"
        return f"{self.coord}: error: {self.message}"


class UndefinedBehaviour(UnsupportedInput):
    """The input program, compiled by gcc and run, was stopped by a signal (an integer
    division by zero, an out-of-bounds access): its result is undefined, so there is no
    oracle to check a plan against."""


class UsageError(An5dError):
    """Options that cannot work together (bad plan, missing -P value, ...)."""

    exit_status = EXIT_BAD_INPUT

    def __str__(self) -> str:
        return f"error: {self.args[0]}"


class OptionError(UsageError):
    """Option values that cannot work. ``settings`` holds the offending ``(name, value)``
    pairs, named as :func:`an5dpy.compile` and :class:`an5dpy.driver.Options` name them;
    ``reason`` says why without saying how they were given. ``str()`` words them as
    keywords (``bt=0: ...``, the Python API's spelling); :meth:`for_command_line` as the
    command line's flags (``--bt 0: ...``)."""

    def __init__(self, settings: Sequence[tuple[str, object]], reason: str):
        self.settings = tuple(settings)
        self.reason = reason
        super().__init__(self._text(_keyword))

    def _text(self, spell) -> str:
        return f"{' with '.join(spell(n, v) for n, v in self.settings)}: {self.reason}"

    def for_command_line(self) -> str:
        return f"error: {self._text(_flag)}"


def _keyword(name: str, value: object) -> str:
    return f"{name}={value!r}" if isinstance(value, str) else f"{name}={value}"


def _flag(name: str, value: object) -> str:
    return f"--{name} {value}"


class CudaCompileError(An5dError):
    """nvcc (or NVRTC) failed; ``log`` holds its complete output."""

    exit_status = EXIT_INTERNAL

    def __init__(self, message: str, log: str = "", command: tuple[str, ...] = ()):
        super().__init__(message)
        self.log = log
        self.command = command

    def __str__(self) -> str:
        return f"{self.args[0]}\n{self.log}".rstrip()


class InternalError(An5dError):
    exit_status = EXIT_INTERNAL
