"""Integer affine forms of C expressions (loop bounds, subscripts, extents, definitions)."""

from __future__ import annotations

from typing import Callable

from pycparser import c_ast

from ..ir import Affine
from . import literals
from .ctype import ScalarType, TypeResolver


class NotAffine(Exception):
    """``node`` keeps the expression from being affine; ``reason`` says how.

    reason: 'indirect' (reads an array), 'nonlinear' (product of variables, division by a
    variable, a call...), 'not integer' (a floating value).
    """

    def __init__(self, node: c_ast.Node, reason: str):
        super().__init__(reason)
        self.node = node
        self.reason = reason


#: Resolves an identifier to an affine form (usually ``Affine.var(name)``) or raises.
NameToAffine = Callable[[c_ast.ID], Affine]


def affine_of(node: c_ast.Node, name_to_affine: NameToAffine,
              types: TypeResolver | None = None) -> Affine:
    """The affine form of an integer C expression, or NotAffine.

    An array read anywhere inside is reported first ('indirect'): it is the more useful
    diagnosis than whatever else is wrong around it.
    """
    _find_indirect(node)
    return _affine(node, name_to_affine, types)


def _affine(node: c_ast.Node, name_to_affine: NameToAffine,
            types: TypeResolver | None) -> Affine:
    if isinstance(node, c_ast.Constant):
        if node.type in ("char", "string") or literals.is_floating_spelling(node.value):
            raise NotAffine(node, "not integer")
        try:
            return Affine(const=literals.integer_literal(node.value).value)
        except literals.LiteralError:
            raise NotAffine(node, "nonlinear") from None
    if isinstance(node, c_ast.ID):
        return name_to_affine(node)
    if isinstance(node, c_ast.UnaryOp) and node.op in ("-", "+"):
        inner = _affine(node.expr, name_to_affine, types)
        return -inner if node.op == "-" else inner
    if isinstance(node, c_ast.Cast):
        # An integer cast of an integer affine value keeps it (overflow aside).
        target = types.resolve(node.to_type) if types else None
        if not (isinstance(target, ScalarType) and target.name in _INTEGER_NAMES):
            raise NotAffine(node, "not integer")
        return _affine(node.expr, name_to_affine, types)
    if isinstance(node, c_ast.BinaryOp):
        return _binary(node, name_to_affine, types)
    if isinstance(node, c_ast.ArrayRef):
        raise NotAffine(node, "indirect")
    raise NotAffine(node, "nonlinear")


_INTEGER_NAMES = frozenset({"int", "unsigned int", "long", "unsigned long", "long long",
                            "unsigned long long", "char", "signed char", "unsigned char",
                            "short", "unsigned short"})


def _binary(node: c_ast.BinaryOp, name_to_affine: NameToAffine,
            types: TypeResolver | None) -> Affine:
    if node.op not in ("+", "-", "*", "/", "%"):
        raise NotAffine(node, "nonlinear")
    left = _affine(node.left, name_to_affine, types)
    right = _affine(node.right, name_to_affine, types)
    if node.op == "+":
        return left + right
    if node.op == "-":
        return left - right
    if node.op == "*":
        if left.is_constant:
            return right.scale(left.const)
        if right.is_constant:
            return left.scale(right.const)
        raise NotAffine(node, "nonlinear")
    # '/' and '%' of constants fold (C truncates toward zero); of variables they are not
    # affine.
    if left.is_constant and right.is_constant and right.const != 0:
        quotient = abs(left.const) // abs(right.const)
        if (left.const < 0) != (right.const < 0):
            quotient = -quotient
        if node.op == "/":
            return Affine(const=quotient)
        return Affine(const=left.const - quotient * right.const)
    raise NotAffine(node, "nonlinear")


def _find_indirect(node: c_ast.Node) -> None:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, c_ast.ArrayRef):
            raise NotAffine(n, "indirect")
        stack.extend(child for _, child in n.children())
