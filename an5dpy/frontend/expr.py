"""Typed expression trees following C's usual arithmetic conversions.

Every conversion the C compiler performs implicitly becomes a ``Cast(implicit=True)`` node,
so a backend that evaluates the tree node by node in the node's type computes exactly what
the C program computes (``0.25 * x`` with a float ``x`` is a double multiplication).
"""

from __future__ import annotations

from typing import Protocol

from pycparser import c_ast

from .. import ir
from ..errors import UnsupportedInput
from ..ir import Binary, Call, Cast, Const, Coord, Expr, Unary
from . import literals, tgmath
from .text import c_text

_ARITHMETIC = ir.FLOAT_TYPES + ir.INT_TYPES + ir.PROMOTED_TO_INT

_WHAT_IT_IS = {
    "!": "logical operator '!'", "~": "bitwise operator '~'",
    "&": "address-of operator '&'", "*": "pointer dereference '*'",
    "sizeof": "'sizeof'", "_Alignof": "'_Alignof'",
    "++": "increment '++'", "p++": "increment '++'",
    "--": "decrement '--'", "p--": "decrement '--'",
}

#: What a call may be (every function of ir.MATH_FUNCTIONS).
_MATH_RULE = ("a stencil update may call the C99 <math.h> functions of floating arguments "
              "with a floating result (ldexp, scalbn and scalbln with their integer exponent), "
              "in their double and float variants, and the POSIX Bessel functions j0, j1, jn, "
              "y0, y1, yn")

_SUPPORTED = "only + - * / (% on integers), unary - and +, casts and <math.h> calls"


class ExprContext(Protocol):
    """What the builder needs from the surrounding program."""

    def coord(self, node: c_ast.Node) -> Coord | None: ...

    def scalar(self, node: c_ast.ID) -> Expr: ...

    def access(self, node: c_ast.ArrayRef) -> Expr: ...

    def cast_type(self, node: c_ast.Cast) -> str: ...


def convert(expr: Expr, ctype: str) -> Expr:
    """``expr`` as C converts it to ``ctype`` (an implicit Cast unless it already is one)."""
    if expr.ctype == ctype:
        return expr
    return Cast(ctype, expr.coord, operand=expr, implicit=True)


def build_expr(node: c_ast.Node, ctx: ExprContext) -> Expr:
    if isinstance(node, c_ast.Constant):
        return _constant(node, ctx)
    if isinstance(node, c_ast.ID):
        return ctx.scalar(node)
    if isinstance(node, c_ast.ArrayRef):
        return ctx.access(node)
    if isinstance(node, c_ast.BinaryOp):
        return _binary(node, ctx)
    if isinstance(node, c_ast.UnaryOp):
        return _unary(node, ctx)
    if isinstance(node, c_ast.Cast):
        target = ctx.cast_type(node)
        operand = build_expr(node.expr, ctx)
        return Cast(target, ctx.coord(node), operand=operand, implicit=False)
    if isinstance(node, c_ast.FuncCall):
        return _call(node, ctx)
    raise UnsupportedInput(f"{_describe_node(node)} in the update expression is not "
                           f"supported ({_SUPPORTED} can be blocked)", ctx.coord(node))


def _describe_node(node: c_ast.Node) -> str:
    if isinstance(node, c_ast.TernaryOp):
        return "conditional operator '?:'"
    if isinstance(node, c_ast.Assignment):
        return f"assignment '{node.op}'"
    if isinstance(node, c_ast.ExprList):
        return "comma operator ','"
    if isinstance(node, c_ast.StructRef):
        return f"member access '{node.type}'"
    if isinstance(node, c_ast.CompoundLiteral):
        return "compound literal"
    return f"'{c_text(node)}'"


def _constant(node: c_ast.Constant, ctx: ExprContext) -> Expr:
    text = node.value
    coord = ctx.coord(node)
    if node.type == "string":
        raise UnsupportedInput(f"string literal {text} in the update expression is not "
                               f"supported", coord)
    if node.type == "char" or text.startswith(("'", "L'", "u'", "U'", "u8'")):
        raise UnsupportedInput(f"character constant {text} in the update expression "
                               f"is not supported (write its numeric value)", coord)
    try:
        if literals.is_floating_spelling(text):
            lit = literals.floating_literal(text)
        else:
            lit = literals.integer_literal(text)
    except literals.LiteralError as exc:
        raise UnsupportedInput(str(exc), coord) from None
    return Const(lit.ctype, coord, value=lit.value, text=text)


def _require_arithmetic(expr: Expr, node: c_ast.Node, ctx: ExprContext) -> None:
    if expr.ctype not in _ARITHMETIC:
        raise UnsupportedInput(f"operand '{c_text(node)}' has type {expr.ctype}, "
                               f"not an arithmetic type", ctx.coord(node))


def _binary(node: c_ast.BinaryOp, ctx: ExprContext) -> Expr:
    op = node.op
    if op not in ("+", "-", "*", "/", "%"):
        raise UnsupportedInput(f"operator '{op}' in the update expression is not supported "
                               f"({_SUPPORTED} can be blocked)", ctx.coord(node))
    lhs = build_expr(node.left, ctx)
    rhs = build_expr(node.right, ctx)
    _require_arithmetic(lhs, node.left, ctx)
    _require_arithmetic(rhs, node.right, ctx)
    if op == "%" and (ir.is_floating(lhs.ctype) or ir.is_floating(rhs.ctype)):
        raise UnsupportedInput("operator '%' needs integer operands (use fmod for "
                               "floating values)", ctx.coord(node))
    ctype = ir.common_type(lhs.ctype, rhs.ctype)
    return Binary(ctype, ctx.coord(node), op=op, lhs=convert(lhs, ctype),
                  rhs=convert(rhs, ctype))


def _unary(node: c_ast.UnaryOp, ctx: ExprContext) -> Expr:
    if node.op not in ("-", "+"):
        what = _WHAT_IT_IS.get(node.op, f"operator '{node.op}'")
        raise UnsupportedInput(f"{what} in the update expression is not supported "
                               f"({_SUPPORTED} can be blocked)", ctx.coord(node))
    operand = build_expr(node.expr, ctx)
    _require_arithmetic(operand, node.expr, ctx)
    ctype = ir.integer_promote(operand.ctype)
    return Unary(ctype, ctx.coord(node), op=node.op, operand=convert(operand, ctype))


def _call(node: c_ast.FuncCall, ctx: ExprContext) -> Expr:
    coord = ctx.coord(node)
    if not isinstance(node.name, c_ast.ID):
        raise UnsupportedInput(f"call through an expression '{c_text(node.name)}' is not "
                               f"supported", coord)
    generic = tgmath.generic_name(node.name.name)
    name = generic or node.name.name  # as the user wrote it
    function = ir.MATH_FUNCTIONS.get(name)
    if function is None:
        if name in ir.REFUSED_MATH:
            raise UnsupportedInput(f"'{name}' {ir.REFUSED_MATH[name]}: {_MATH_RULE}", coord)
        raise UnsupportedInput(f"call of '{name}', which is not a <math.h> function that "
                               f"can be blocked: {_MATH_RULE}", coord)
    arg_nodes = list(node.args.exprs) if node.args is not None else []
    if len(arg_nodes) != len(function.params):
        count = len(function.params)
        raise UnsupportedInput(f"'{name}' takes {count} argument{'s' * (count != 1)}, "
                               f"{len(arg_nodes)} given", coord)
    args = []
    for arg_node in arg_nodes:
        arg = build_expr(arg_node, ctx)
        _require_arithmetic(arg, arg_node, ctx)
        args.append(arg)
    if generic is not None:
        # <tgmath.h>'s macro: the arguments' own types choose the function (C99 7.22p3)
        function = ir.tgmath_variant(generic, tuple(arg.ctype for arg in args))
    args = [convert(arg, param_type) for arg, param_type in zip(args, function.params)]
    return Call(function.result, coord, func=function.name, args=tuple(args))
