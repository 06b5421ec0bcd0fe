"""Running the C preprocessor.

pycparser reads preprocessed C only, and cannot read glibc's headers; ``pycparser-fake-libc``
ships stand-in headers that it can. Its directory goes first on the include path, so a
harness that includes ``stdio.h``, ``math.h``, ``getopt.h``, ... gets the stand-ins, while a
header the stand-ins lack still comes from the system. an5dpy's own ``tgmath.h`` (see
:mod:`.tgmath`) goes before them all.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Mapping, Sequence

import pycparser_fake_libc

from ..errors import UnsupportedInput
from ..ir import Coord
from . import tgmath

FAKE_LIBC_DIR: str = pycparser_fake_libc.directory

# GNU spellings that system headers outside the stand-ins (omp.h, ...) and user code use
# but pycparser does not parse. They carry nothing the stencil needs.
_GNU_NEUTRALISERS: tuple[tuple[str, str], ...] = (
    ("__attribute__(x)", ""),
    ("__extension__", ""),
    ("__restrict", "restrict"),
    ("__restrict__", "restrict"),
    ("__inline", "inline"),
    ("__inline__", "inline"),
    ("__asm__(x)", ""),
    ("__asm(x)", ""),
)

# glibc's <math.h> constants (the stand-in math.h has none); the values are glibc's
# spellings, so a stencil that uses M_PI computes exactly what gcc computes.
_MATH_CONSTANTS: tuple[tuple[str, str], ...] = (
    ("M_E", "2.7182818284590452354"),
    ("M_LOG2E", "1.4426950408889634074"),
    ("M_LOG10E", "0.43429448190325182765"),
    ("M_LN2", "0.69314718055994530942"),
    ("M_LN10", "2.30258509299404568402"),
    ("M_PI", "3.14159265358979323846"),
    ("M_PI_2", "1.57079632679489661923"),
    ("M_PI_4", "0.78539816339744830962"),
    ("M_1_PI", "0.31830988618379067154"),
    ("M_2_PI", "0.63661977236758134308"),
    ("M_2_SQRTPI", "1.12837916709551257390"),
    ("M_SQRT2", "1.41421356237309504880"),
    ("M_SQRT1_2", "0.70710678118654752440"),
)

_DIAGNOSTIC = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?:(?P<col>\d+):)? "
                         r"(?:fatal )?error: (?P<msg>.*)$")


def define_option(name: str, value: str | None) -> str:
    return f"-D{name}" if value is None else f"-D{name}={value}"


def preprocessor_command(path: str, defines: Sequence[tuple[str, str | None]] = (),
                         include_dirs: Sequence[str] = (),
                         quote_dirs: Sequence[str] = (), cc: str | None = None) -> list[str]:
    compiler = cc or shutil.which("gcc") or shutil.which("cc") or "cpp"
    command = [compiler] if os.path.basename(compiler).startswith("cpp") else [compiler, "-E"]
    command += ["-std=gnu99", "-fdiagnostics-column-unit=byte", "-fdiagnostics-plain-output",
                "-I", tgmath.INCLUDE_DIR, "-I", FAKE_LIBC_DIR]
    for d in quote_dirs:
        command += ["-iquote", d]
    for d in include_dirs:
        command += ["-I", d]
    # Our own definitions first: a user's -D of the same name (given later) wins.
    command += [define_option(n, v) for n, v in _GNU_NEUTRALISERS + _MATH_CONSTANTS]
    command += [define_option(n, v) for n, v in defines]
    command.append(path)
    return command


def preprocess(path: str, defines: Sequence[tuple[str, str | None]] = (),
               include_dirs: Sequence[str] = (), quote_dirs: Sequence[str] = (),
               display: Mapping[str, str] | None = None, cc: str | None = None) -> str:
    """The preprocessed text of ``path`` (line markers kept), or UnsupportedInput."""
    for name, _ in defines:
        if not re.fullmatch(r"[A-Za-z_]\w*(\([\w\s,.]*\))?", name or ""):
            raise UnsupportedInput(f"bad -D option: '{name}' is not a macro name")
    command = preprocessor_command(path, defines, include_dirs, quote_dirs, cc)
    try:
        done = subprocess.run(command, capture_output=True, timeout=120,
                              encoding="utf-8", errors="surrogateescape")
    except (OSError, subprocess.SubprocessError) as exc:
        raise UnsupportedInput(f"cannot run the C preprocessor ({command[0]}): {exc}") from None
    if done.returncode != 0:
        raise _preprocessor_error(done.stderr, display or {})
    return done.stdout


def _preprocessor_error(log: str, display: Mapping[str, str]) -> UnsupportedInput:
    for line in log.splitlines():
        m = _DIAGNOSTIC.match(line)
        if m:
            file = display.get(m.group("file"), m.group("file"))
            coord = Coord(file, int(m.group("line")), int(m.group("col") or 1))
            return UnsupportedInput(f"preprocessor: {m.group('msg')}", coord)
    first = next((ln for ln in log.splitlines() if ln.strip()), "failed")
    return UnsupportedInput(f"preprocessor: {first}")
