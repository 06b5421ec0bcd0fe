"""C spelling of AST fragments, for messages."""

from __future__ import annotations

from pycparser import c_ast, c_generator

from .tgmath import as_written

_MAX_SHOWN = 60


def c_text(node: c_ast.Node) -> str:
    """The fragment as C (shortened when long), e.g. ``i * j`` or ``t += 2``."""
    try:
        text = c_generator.CGenerator(reduce_parentheses=True).visit(node)
    except RecursionError:
        raise
    except Exception:  # a generator gap must not hide the real diagnosis
        text = type(node).__name__
    text = as_written(" ".join(text.split()))
    if len(text) > _MAX_SHOWN:
        text = text[:_MAX_SHOWN - 3] + "..."
    return text
