"""<tgmath.h>: type-generic math calls, made visible through the preprocessor.

A program that includes <tgmath.h> calls ``lgammaf`` when it writes ``lgamma(x)`` with a
float ``x`` (C99 7.22). Whether a call is generic is the preprocessor's decision (the macro
must be defined at that point, not #undef'd, and the name not parenthesised), so the
frontend lets the preprocessor make it: ``include/tgmath.h``, found before the stand-in libc
headers, defines each generic name as a macro that renames the call to ``MARKER + name``.
The expression builder resolves a marked call with :func:`an5dpy.ir.tgmath_variant`.
"""

from __future__ import annotations

import os
import re

#: Where an5dpy's own <tgmath.h> lives (searched before pycparser-fake-libc's headers).
INCLUDE_DIR: str = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")

#: The prefix of a call that C's <tgmath.h> macro would expand (a reserved identifier, so
#: no valid program spells it).
MARKER = "__an5dpy_tgmath_"

_MARKED = re.compile(rf"\b{MARKER}(\w+)")
_MARKED_CALL = re.compile(rf"\b{MARKER}(\w+)\(")


def generic_name(identifier: str) -> str | None:
    """``lgamma`` for the marked call name ``__an5dpy_tgmath_lgamma``, else None."""
    return identifier[len(MARKER):] if identifier.startswith(MARKER) else None


def as_written(text: str) -> str:
    """``text`` with each marked name spelled as the user wrote it (for messages)."""
    return _MARKED.sub(r"\1", text)


def as_gcc_expands(text: str) -> str:
    """Preprocessed ``text`` with each marked call spelled as glibc's <tgmath.h> expands it
    under gcc 8 and later (``__builtin_tgmath (lgammaf, lgamma, lgammal, x)``), so that gcc,
    given only <math.h>, still selects the variant by C's rule on its own: the oracle checks
    the frontend's selection rather than repeating it."""
    return _MARKED_CALL.sub(lambda m: f"__builtin_tgmath({m[1]}f, {m[1]}, {m[1]}l, ", text)
