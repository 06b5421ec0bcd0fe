"""Print typed IR expressions as C/CUDA source with C's exact semantics.

Every implicit conversion is printed as an explicit cast. That matters for CUDA, which is
C++: ``sqrt(x)`` with a float ``x`` calls the float overload in C++ but converts to double
in C; printing ``sqrt((double)(x))`` keeps the C meaning. Literals keep their source
spelling, so the compiler sees the same values the user wrote.
"""

from __future__ import annotations

from typing import Callable

from an5dpy.errors import InternalError
from an5dpy.ir import Access, Binary, Call, Cast, Const, CoefRead, Expr, Read, Scalar, Unary

#: Prints an array read: of the grid (Read), of a read-only array (CoefRead), or as the
#: frontend read it (Access).
ReadPrinter = Callable[[Read | CoefRead | Access], str]


#: Prints a division ``node`` whose operands are already spelled (``lhs``, ``rhs``) another
#: way, or returns None for C's ``(lhs / rhs)``.
DivisionPrinter = Callable[[Binary, str, str], str | None]

#: Prints a call ``node`` whose arguments are already spelled another way, or returns None
#: for C's ``func(args)``.
CallPrinter = Callable[[Call, tuple[str, ...]], str | None]


def c_expr(expr: Expr, read: ReadPrinter, scalar: Callable[[str], str] = lambda n: n,
           literal: Callable[[Const | Cast], str | None] | None = None,
           divide: DivisionPrinter | None = None, call: CallPrinter | None = None) -> str:
    """C spelling of ``expr``; ``read`` prints each array read, ``scalar`` each parameter,
    ``literal`` (optional) each literal, or cast of a literal, it wants to spell otherwise
    (None: as written), ``divide`` and ``call`` (optional) each division and each call it
    wants to spell otherwise."""
    # Iterative over left-deep chains (a sum of 729 terms must not hit the recursion limit).
    def go(e: Expr) -> str:
        if isinstance(e, Const):
            return (literal and literal(e)) or _literal(e)
        if isinstance(e, Scalar):
            return scalar(e.name)
        if isinstance(e, (Read, CoefRead, Access)):
            return read(e)
        if isinstance(e, Cast):
            if literal and isinstance(e.operand, Const) and (text := literal(e)):
                return text
            return f"(({e.ctype})({go(e.operand)}))"
        if isinstance(e, Unary):
            return f"({e.op}{go(e.operand)})"
        if isinstance(e, Call):
            args = tuple(go(a) for a in e.args)
            return (call and call(e, args)) or f"{e.func}({', '.join(args)})"
        if isinstance(e, Binary):
            chain = []
            node = e
            while isinstance(node, Binary) and node.ctype == e.ctype:
                chain.append(node)
                node = node.lhs
            text = go(node)
            for b in reversed(chain):
                rhs = go(b.rhs)
                text = ((b.op == "/" and divide and divide(b, text, rhs))
                        or f"({text} {b.op} {rhs})")
            return text
        raise InternalError(f"cannot print {type(e).__name__}")

    return go(expr)


def _literal(c: Const) -> str:
    text = c.text.strip()
    if not text:
        raise InternalError("literal without spelling")
    return f"({text})" if text.startswith("-") else text
