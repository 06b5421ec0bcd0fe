"""The one rule for names the generated code keeps to itself.

Every name an5dpy writes into the user's function and the kernels (locals, registers,
macros and their parameters, constant tables) starts with ``an5d_`` or ``AN5D_``, and the
kernels' macros contain the user's update expression, which names the user's scalars as
written. So the user's file may not use the prefix, in any case: then no generated name
can capture or shadow a user's identifier (:mod:`an5dpy.cuda.macros`).
"""

from __future__ import annotations

from pycparser import c_ast

from ..errors import UnsupportedInput
from .scope import walk

#: The prefix of every generated name; compared without regard to case.
RESERVED_PREFIX = "an5d_"


def is_reserved(name: str) -> bool:
    """Whether ``name`` starts with the generated code's prefix, in any case."""
    return name[:len(RESERVED_PREFIX)].lower() == RESERVED_PREFIX


def reserved_error(name: str, coord) -> UnsupportedInput:
    return UnsupportedInput(f"identifier '{name}' is reserved for the generated code "
                            f"(names starting with '{RESERVED_PREFIX}' in any case)", coord)


def named_nodes(root: c_ast.Node):
    """``(name, node)`` for every identifier the file uses or declares under ``root``."""
    for node in walk(root):
        if isinstance(node, c_ast.ID):
            yield node.name, node
        elif isinstance(node, (c_ast.Decl, c_ast.Typedef, c_ast.Enumerator)) and node.name:
            yield node.name, node
        elif isinstance(node, (c_ast.Label, c_ast.Goto)):
            yield node.name, node
