"""Several GPUs: the grid cut into slabs of planes along the streaming dimension.

Each GPU owns the interior planes ``[a, b)`` of dimension 0 (a partition of the interior,
sizes differing by at most one) and keeps ``[a - below, b + above)`` in its buffers (the
array's first and last planes for the first and last slab, whose outer planes are the
array's streaming boundary). The unchanged kernels run on a slab as if it were the whole
grid, with the sizes of the slab: where a neighbour holds the planes beyond a side, the
slab's interior reaches to :attr:`SlabHalo.edge` planes from its buffers' end, the halo
planes are computed too and the outermost ``edge`` planes play the streaming boundary.

Why every owned plane is exact (:func:`slab_halo`): at a launch's level 0 only the planes
the kernel takes as boundary there may be wrong (``stale`` planes from the edge: the
``edge`` boundary planes, a field's planes its statement does not write, coefficient reads
clamped at the buffer's edge); level T reads level T-1 at most ``reach`` planes away, so
the wrong planes reach ``reach`` further per level. After the launch's at most
:attr:`~an5dpy.blocking.plan.BlockingPlan.depth` levels, ``halo = stale + depth * reach``
planes from the edge still hold every wrong value, and the owned planes beyond are what a
one-GPU run computes. Between launches, the halo planes of the buffers the next launch
reads are refreshed from the neighbours' owned planes (:attr:`Decomposition.transfers`).

This module is pure: the CPU simulator (:mod:`an5dpy.check.simulate_slabs`), the cupy
runner (:mod:`an5dpy.cuda.multi_gpu`) and the generated host code (which prints the halo
numbers of :func:`slab_halo` and computes the same partition in C) follow it.
"""

from __future__ import annotations

from dataclasses import dataclass

from an5dpy.blocking.plan import BlockingPlan, DimExtent
from an5dpy.errors import UsageError
from an5dpy.ir import StencilInfo


@dataclass(frozen=True)
class SlabHalo:
    """Planes a slab keeps of each neighbour (``below``, ``above``), and ``edge``: the
    planes at a side with a neighbour that the kernel takes as streaming boundary (the
    stencil's streaming radius, so that every plane a kernel loads lies in the buffer)."""

    below: int
    above: int
    edge: int

    @property
    def widest(self) -> int:
        """The thinnest slab that can feed its neighbours' halos."""
        return max(self.below, self.above, 1)


def slab_halo(info: StencilInfo, plan: BlockingPlan) -> SlabHalo:
    """The halos of ``plan``'s launches (module docstring): ``stale + depth * reach`` per
    side, ``reach`` the reads' reach along dimension 0 (every level and statement), and
    ``stale`` the planes from the edge that may be wrong at level 0: the ``edge`` planes,
    plus a field's margin (its statement's cells stop short of the interior's edge: the
    planes between are its boundary in the slab too), or below, the coefficient reads at
    negative offsets along dimension 0 (clamped at the buffer's first plane)."""
    edge = plan.stream_radius
    dim = info.dims[0]
    margin_lo = max((f.margin_lo[0] for f in info.fields), default=0)
    margin_hi = max((f.margin_hi[0] for f in info.fields), default=0)
    coef_below = max((-i.offset for c in info.coefficients for read in c.reads for i in read
                      if i.dim == 0 and i.offset < 0), default=0)
    stale_below = max(edge + margin_lo, coef_below)
    stale_above = edge + margin_hi
    return SlabHalo(stale_below + plan.depth * dim.reach_lo,
                    stale_above + plan.depth * dim.reach_hi, edge)


@dataclass(frozen=True)
class Slab:
    """One GPU's part: it owns the interior planes ``owned`` = [a, b) and holds the planes
    ``held`` = [start, stop) (global plane numbers of dimension 0). ``stream`` is
    dimension 0 as its kernels see it: local interior bounds and the held planes."""

    index: int
    owned: tuple[int, int]
    held: tuple[int, int]
    stream: DimExtent
    below: bool  # a neighbour holds the planes below
    above: bool

    @property
    def start(self) -> int:
        return self.held[0]

    @property
    def planes(self) -> int:
        """Planes in the slab's buffers."""
        return self.held[1] - self.held[0]

    def local(self, planes: tuple[int, int]) -> slice:
        """Global planes ``[p0, p1)`` as a slice of the slab's buffers."""
        return slice(planes[0] - self.start, planes[1] - self.start)

    @property
    def owned_local(self) -> slice:
        return self.local(self.owned)


@dataclass(frozen=True)
class Transfer:
    """Planes ``[p0, p1)`` (global) that slab ``source`` owns and slab ``dest`` holds as halo."""

    source: int
    dest: int
    planes: tuple[int, int]

    @property
    def count(self) -> int:
        return self.planes[1] - self.planes[0]


@dataclass(frozen=True)
class Decomposition:
    """The slabs of dimension 0 (``extent``: its interior and size) for ``halo``."""

    extent: DimExtent
    halo: SlabHalo
    slabs: tuple[Slab, ...]

    @property
    def count(self) -> int:
        return len(self.slabs)

    def dims(self, dims: tuple[DimExtent, ...], slab: Slab) -> tuple[DimExtent, ...]:
        """The grid's dimensions as ``slab``'s kernels see them."""
        return (slab.stream, *dims[1:])

    @property
    def transfers(self) -> tuple[Transfer, ...]:
        """Every halo refresh: each slab's halo below from the owned planes of the slab
        under it, its halo above from the one over it."""
        out = []
        for lower, upper in zip(self.slabs, self.slabs[1:]):
            out.append(Transfer(lower.index, upper.index, (upper.start, upper.owned[0])))
            out.append(Transfer(upper.index, lower.index, (lower.owned[1], lower.held[1])))
        return tuple(out)

    def halo_planes(self) -> int:
        """Planes one refresh moves (each buffer), for the performance model."""
        return sum(t.count for t in self.transfers)


def max_slabs(extent: DimExtent, halo: SlabHalo) -> int:
    """The most slabs the interior of ``extent`` can be cut into: each must own at least
    :attr:`SlabHalo.widest` planes, since its neighbours' halos are its owned planes (the
    one rule for slabs thinner than the halo)."""
    return max(1, extent.length // halo.widest)


def slab_count(requested: int, extent: DimExtent, halo: SlabHalo) -> tuple[int, str | None]:
    """How many GPUs a run of ``requested`` uses: fewer where the slabs would be thinner
    than the halo, with the note that says so (for stderr), else None."""
    if requested < 1:
        raise UsageError(f"{requested} GPUs: need at least one")
    most = max_slabs(extent, halo)
    if requested <= most:
        return requested, None
    return most, (f"an5d: {requested} GPUs would cut the {extent.length} interior planes "
                  f"of the streaming dimension into slabs thinner than the halo of "
                  f"{halo.widest} planes; running on {most}")


def partition(extent: DimExtent, count: int, halo: SlabHalo) -> Decomposition:
    """``count`` slabs of the interior of ``extent`` (the first ``length % count`` one
    plane thicker). Raises :class:`UsageError` where a slab would be thinner than the
    halo (:func:`slab_count` says how many fit)."""
    if count < 1:
        raise UsageError(f"{count} GPUs: need at least one")
    if count > max_slabs(extent, halo):
        raise UsageError(f"{count} slabs of the {extent.length} interior planes of the "
                         f"streaming dimension would be thinner than the halo of "
                         f"{halo.widest} planes: use at most {max_slabs(extent, halo)} GPUs")
    size, extra = divmod(extent.length, count)
    slabs, a = [], extent.lower
    for g in range(count):
        b = a + size + (g < extra)
        below, above = g > 0, g < count - 1
        start = a - halo.below if below else 0
        stop = b + halo.above if above else extent.size
        lo = halo.edge if below else extent.lower - start
        hi = stop - start - 1 - halo.edge if above else extent.upper - start
        slabs.append(Slab(g, (a, b), (start, stop), DimExtent(lo, hi, stop - start),
                          below, above))
        a = b
    return Decomposition(extent, halo, tuple(slabs))


def shifted_coefficient(values, reads, start: int, fill):
    """A read-only array as the kernels of a slab whose buffers start at global plane
    ``start`` read it: every axis that some read's subscript follows dimension 0 on is
    shifted down by ``start`` (local plane q reads global plane start + q), the shape kept
    (the kernels' extents and clamps are the whole array's) and the cells shifted in from
    beyond the end set to ``fill`` (only reads the analysis never proved in range, of
    cells whose results nobody consumes, see them). ``values``: a numpy or cupy array;
    ``reads``: the array's :attr:`~an5dpy.ir.CoefArray.reads`."""
    axes = sorted({k for read in reads for k, i in enumerate(read) if i.dim == 0})
    if not axes or start == 0:
        return values
    out = values.copy()
    for axis in axes:
        keep = [slice(None)] * values.ndim
        keep[axis] = slice(start, None)
        moved = out[tuple(keep)].copy()
        dst = [slice(None)] * values.ndim
        dst[axis] = slice(0, moved.shape[axis])
        out[tuple(dst)] = moved
        dst[axis] = slice(moved.shape[axis], None)
        out[tuple(dst)] = fill
    return out
