"""The frontend: a C file with a ``#pragma scop`` loop nest -> :class:`StencilProgram`.

Stages: ``preprocess`` (gcc -E with pycparser's stand-in libc headers) -> ``parse``
(pycparser) -> ``region`` (the two pragmas) -> ``extract`` (loops, arrays, parameters, the
statement; ``expr`` builds the typed update expression, ``affine`` the subscripts and
bounds, ``scope`` and ``ctype`` resolve names and types). ``source`` maps positions in the
preprocessed text back to the user's file. Everything the user's file gets wrong is
raised as :class:`~an5dpy.errors.UnsupportedInput` with a coordinate in the user's file.

Character offsets (``ScopRegion.original_span``) index the file's text as
:func:`read_source_text` returns it (UTF-8 with surrogate escapes, line ends kept).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import Iterator, Mapping, Sequence

from ..errors import UnsupportedInput
from ..ir import Coord, StencilProgram
from .extract import extract_program
from .parse import parse_c
from .preprocess import preprocess
from .source import Locator, preprocessed_lines, read_source_text

__all__ = ["read_program", "read_program_text", "read_source_text"]

Defines = Sequence[tuple[str, "str | None"]]

# pycparser parses by recursive descent and our passes recurse over expression trees, each
# nesting level costing a few Python frames. Real stencils nest a few dozen levels; this
# admits hundreds, and anything deeper is reported rather than crashing.
_RECURSION_LIMIT = 12000


def read_program(path: str, defines: Defines = (),
                 include_dirs: Sequence[str] = ()) -> StencilProgram:
    """Read the scop of the C file ``path`` (``-D``/``-I`` options as ``defines``,
    ``include_dirs``)."""
    return _read(path, {}, defines, include_dirs, quote_dirs=())


def read_program_text(text: str, filename: str = "input.c", defines: Defines = (),
                      include_dirs: Sequence[str] = ()) -> StencilProgram:
    """Like :func:`read_program` for C source given as a string; coordinates name
    ``filename``, and ``#include "..."`` also searches ``filename``'s directory."""
    directory = os.path.dirname(filename)
    quote_dirs = (directory,) if directory and os.path.isdir(directory) else ()
    with tempfile.TemporaryDirectory(prefix="an5dpy-") as tmp:
        path = os.path.join(tmp, os.path.basename(filename) or "input.c")
        with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
            f.write(text)
        return _read(path, {path: filename}, defines, include_dirs, quote_dirs)


def _read(path: str, display: Mapping[str, str], defines: Defines,
          include_dirs: Sequence[str], quote_dirs: Sequence[str]) -> StencilProgram:
    shown = display.get(path, path)
    if not os.path.isfile(path):
        reason = "no such file" if not os.path.exists(path) else "not a regular file"
        raise UnsupportedInput(f"cannot read '{shown}': {reason}")
    defines = tuple((str(name), None if value is None else str(value))
                    for name, value in defines)
    text = preprocess(path, defines, include_dirs, quote_dirs, display)
    lines = preprocessed_lines(text, path)
    locator = Locator(lines, display)
    with _recursion_limit(_RECURSION_LIMIT):
        try:
            ast = parse_c(text, path, locator)
            return extract_program(ast, locator, lines, shown, defines)
        except RecursionError:
            raise UnsupportedInput("the input nests expressions or blocks too deeply to be "
                                   "read", Coord(shown, 1, 1)) from None


@contextlib.contextmanager
def _recursion_limit(limit: int) -> Iterator[None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)
