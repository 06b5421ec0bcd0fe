"""The plane predicates of the tail's guards, each written once, as data.

A guarded op of the tail runs, becomes a boundary op, or is skipped depending on where its
plane lies relative to the stream block's ranges. Each predicate below compares the plane
with symbolic bounds of the block (``s0``, ``s1``, ``zl``, ``zh``, ``last_load``, shifted by
the stencil's reach below or above the interior). It has two interpretations, both read
off the same object:

* :meth:`PlanePredicate.holds` evaluates it on a :class:`an5dpy.blocking.trace.BlockRanges`:
  the simulator and the model, through :func:`an5dpy.blocking.trace.resolve_guarded`;
* :meth:`PlanePredicate.c_text` prints it as C over the kernel's local plane variables
  (``an5d_s0``, ``an5d_s1``, ``an5d_zl``, ``an5d_zh``, ``an5d_last_load``), with the reach
  printed as constants: the ``AN5D_*`` macros and ``G_LOAD`` of :mod:`an5dpy.cuda.macros`.

So the kernels and the simulator cannot drift apart; ``tests/blocking/test_guards.py``
evaluates the printed C against :meth:`holds` for random blocks and planes.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from an5dpy.blocking.trace import BlockRanges


class Range(Enum):
    """A range of the block, as the kernel names it (local planes, relative to the block's
    first loaded plane). ``attribute`` is the same range on a ``BlockRanges``."""

    S0 = "an5d_s0"  # first stored plane
    S1 = "an5d_s1"  # one past the last stored plane
    ZL = "an5d_zl"  # first interior plane
    ZH = "an5d_zh"  # last interior plane
    LAST_LOAD = "an5d_last_load"  # last plane the block loads

    @property
    def attribute(self) -> str:
        return _ATTRIBUTES[self]


_ATTRIBUTES = {Range.S0: "s0", Range.S1: "s1", Range.ZL: "lo", Range.ZH: "hi",
               Range.LAST_LOAD: "last_load"}


class Reach(Enum):
    """The stencil's reach along the streaming dimension, as a shift of a bound: planes
    below the interior are read by up to ``below`` planes, above it by ``above``."""

    BELOW = "-"
    ABOVE = "+"


@dataclass(frozen=True)
class Bound:
    """A symbolic plane: a block range, optionally shifted by the reach."""

    range: Range
    reach: Reach | None = None

    def value(self, rng: "BlockRanges") -> int:
        base = getattr(rng, self.range.attribute)
        if self.reach is Reach.BELOW:
            return base - rng.below
        if self.reach is Reach.ABOVE:
            return base + rng.above
        return base

    def c_text(self, reach: tuple[int, int]) -> str:
        if self.reach is None:
            return self.range.value
        amount = reach[0] if self.reach is Reach.BELOW else reach[1]
        return f"{self.range.value} {self.reach.value} {amount}"


_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


@dataclass(frozen=True)
class Compare:
    """``plane OP bound``."""

    op: str  # one of <, <=, >, >=
    bound: Bound

    def holds(self, rng: "BlockRanges", plane: int) -> bool:
        return _COMPARE[self.op](plane, self.bound.value(rng))

    def c_text(self, plane: str, reach: tuple[int, int]) -> str:
        return f"{plane} {self.op} {self.bound.c_text(reach)}"


@dataclass(frozen=True)
class PlanePredicate:
    """All (or, with ``any_of``, any) of the comparisons, in the order C prints them.

    ``macro`` names the kernels' macro for it (None: printed inline where used).
    """

    macro: str | None
    terms: tuple[Compare, ...]
    any_of: bool = False

    def holds(self, rng: "BlockRanges", plane: int) -> bool:
        results = (term.holds(rng, plane) for term in self.terms)
        return any(results) if self.any_of else all(results)

    def c_text(self, plane: str, reach: tuple[int, int]) -> str:
        """The condition as C, without enclosing parentheses; ``plane`` is C text
        (parenthesised by the caller where it is a macro parameter)."""
        join = " || " if self.any_of else " && "
        return join.join(term.c_text(plane, reach) for term in self.terms)

    def call(self, plane: str) -> str:
        """The predicate's macro applied to ``plane`` (C text)."""
        if self.macro is None:
            raise ValueError("the predicate has no macro: print it with c_text")
        return f"{self.macro}({plane})"


#: The block stores the plane: ``s0 <= q < s1``.
STORES = PlanePredicate("AN5D_STORES", (Compare(">=", Bound(Range.S0)),
                                        Compare("<", Bound(Range.S1))))

#: A streaming-boundary plane: outside the interior ``[zl, zh]``; its cells keep their
#: boundary values.
BOUNDARY_PLANE = PlanePredicate("AN5D_BOUNDARY_PLANE", (Compare("<", Bound(Range.ZL)),
                                                        Compare(">", Bound(Range.ZH))),
                                any_of=True)

#: The plane is ever read: inside the interior or within the stencil's reach of it.
EXISTS = PlanePredicate("AN5D_EXISTS", (Compare(">=", Bound(Range.ZL, Reach.BELOW)),
                                        Compare("<=", Bound(Range.ZH, Reach.ABOVE))))

#: A load of the plane runs: the plane exists and the block loads that far. ``last_load``
#: never exceeds ``zh + above`` (the top of EXISTS), so the lower bound is EXISTS' only
#: other check.
LOADS = PlanePredicate(None, (Compare("<=", Bound(Range.LAST_LOAD)),
                              Compare(">=", Bound(Range.ZL, Reach.BELOW))))

#: Every predicate, for tests and printing.
PREDICATES = (STORES, BOUNDARY_PLANE, EXISTS, LOADS)
