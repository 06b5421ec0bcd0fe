"""A symbolic proof, with isl, that a launch stores every interior cell exactly once.

For a plan and a temporal degree, the store instances of a launch are the tuples
(stream block, in-plane block per dimension, thread per dimension, plane) that the
kernel stores: the stream block stores planes ``[S0, min(S0 + sl, hi0 + 1))``, a thread
stores when it lies in the level-d window ``[d*r, bS - d*r)`` of its block and its cell is
interior. With the interior bounds as isl *parameters* (any grid size), we check that
the map from instances to cells is injective (no cell stored twice) and that its range
is exactly the interior (every cell stored) -- for all sizes at once, or, given the
interior bounds of a grid (``an5d verify --backend isl``), for that grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import islpy as isl

from an5dpy.blocking.plan import BlockingPlan, DimExtent


@dataclass(frozen=True)
class CoverageProof:
    degree: int
    injective: bool
    covers_interior: bool
    stays_inside: bool

    @property
    def holds(self) -> bool:
        return self.injective and self.covers_interior and self.stays_inside

    def verdict(self) -> str:
        """What the proof shows, in words."""
        if self.holds:
            return "every interior cell stored exactly once"
        wrong = [text for ok, text in ((self.injective, "a cell is stored twice"),
                                       (self.covers_interior, "an interior cell is not stored"),
                                       (self.stays_inside, "a store falls outside the interior"))
                 if not ok]
        return "; ".join(wrong)


def store_map(plan: BlockingPlan, degree: int, stream_length: int | None = None) -> isl.Map:
    """``[lo0, hi0, lo1, hi1, ...] -> { [sb, b1.., t1.., z] -> [z, x1, ..] }``."""
    n = plan.ndim - 1
    params = ", ".join(f"lo{k}, hi{k}" for k in range(plan.ndim))
    blocks = ", ".join(f"b{e}" for e in range(1, n + 1))
    threads = ", ".join(f"t{e}" for e in range(1, n + 1))
    cells = ", ".join(f"x{e}" for e in range(1, n + 1))
    sl = stream_length or plan.sl
    cons = ["lo0 <= hi0"]
    if sl is None:
        # no stream division: one block stores the whole stream
        cons += ["sb = 0", "lo0 <= z <= hi0"]
    else:
        cons += ["sb >= 0", f"{sl} * sb <= hi0 - lo0",
                 f"lo0 + {sl} * sb <= z < lo0 + {sl} * sb + {sl}", "z <= hi0"]
    for e, (bs, r, c, h) in enumerate(zip(plan.bs, plan.plane_radius,
                                          plan.compute_region(degree), plan.halo(degree)), 1):
        cons += [f"lo{e} <= hi{e}", f"b{e} >= 0", f"{c} * b{e} <= hi{e} - lo{e}",
                 f"{degree * r} <= t{e} < {bs - degree * r}",
                 f"x{e} = lo{e} - {h} + {c} * b{e} + t{e}", f"lo{e} <= x{e} <= hi{e}"]
    text = (f"[{params}] -> {{ [sb, {blocks}, {threads}, z] -> [z, {cells}] : "
            + " and ".join(cons) + " }")
    return isl.Map(text)


def interior(plan: BlockingPlan) -> isl.Set:
    n = plan.ndim - 1
    params = ", ".join(f"lo{k}, hi{k}" for k in range(plan.ndim))
    cells = ", ".join(f"x{e}" for e in range(1, n + 1))
    cons = " and ".join(["lo0 <= z <= hi0"] + [f"lo{e} <= x{e} <= hi{e}" for e in range(1, n + 1)])
    return isl.Set(f"[{params}] -> {{ [z, {cells}] : {cons} }}")


def grid_bounds(plan: BlockingPlan, dims: Sequence[DimExtent]) -> isl.Set:
    """The parameter values of one grid: ``lo``/``hi`` are its interior bounds."""
    params = ", ".join(f"lo{k}, hi{k}" for k in range(plan.ndim))
    cons = " and ".join(f"lo{k} = {d.lower} and hi{k} = {d.upper}" for k, d in enumerate(dims))
    return isl.Set(f"[{params}] -> {{ : {cons} }}")


def prove_coverage(plan: BlockingPlan, degree: int | None = None,
                   dims: Sequence[DimExtent] | None = None) -> CoverageProof:
    """The proof for a launch of temporal degree ``degree`` (default ``plan.bt``): for
    every grid, or for the grid of interior bounds ``dims`` (array dimension order)."""
    d = plan.depth if degree is None else degree
    stores = store_map(plan, d)
    inside = interior(plan)
    if dims is not None:
        sizes = grid_bounds(plan, dims)
        stores, inside = stores.intersect_params(sizes), inside.intersect_params(sizes)
    cells = stores.range()
    return CoverageProof(
        degree=d,
        injective=stores.is_injective(),
        covers_interior=inside.is_subset(cells),
        stays_inside=cells.is_subset(inside),
    )
