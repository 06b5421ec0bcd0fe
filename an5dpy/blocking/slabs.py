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

**Overlap** (:func:`overlap_windows`): the next launch can start while the exchange runs,
on the planes of each slab that read no halo plane; the rest of it runs after the
exchange, in windows whose result only where exact is taken (the function's docstring
proves that every owned plane ends exact).

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


def can_overlap(info: StencilInfo, plan: BlockingPlan) -> bool:
    """Whether a run can overlap the halo exchange with the next launch
    (:func:`overlap_windows`): programs of one statement and two time buffers (each launch
    a :class:`~an5dpy.blocking.plan.Launch` that reads one buffer and writes the other).
    A rotating program's launch reads several buffers the exchange refreshes, and a
    program of several statements exchanges every field; they run without overlap."""
    return not info.coupled and not plan.levels.rotating


@dataclass(frozen=True)
class Window:
    """A launch over the planes ``planes`` = [w0, w1) of a slab's buffers (local numbers,
    as :attr:`Slab.stream`'s): its kernels see dimension 0 as ``stream`` (its interior
    reaching ``edge`` planes from a side that cuts the slab). ``copy``: None where the
    window writes the launch's destination buffer itself; else the local planes [c0, c1)
    whose interior cells are taken from the window's own destination (a scratch buffer
    of ``w1 - w0`` planes) into the launch's destination."""

    planes: tuple[int, int]
    stream: DimExtent
    copy: tuple[int, int] | None = None

    @property
    def start(self) -> int:
        return self.planes[0]

    @property
    def size(self) -> int:
        return self.planes[1] - self.planes[0]


@dataclass(frozen=True)
class OverlapWindows:
    """One slab's overlapped launch: ``interior``, run while the exchange refreshes the
    halos of the buffer it reads, then ``edges`` (below first), after the exchange."""

    interior: Window
    edges: tuple[Window, ...]


def _window(slab: Slab, halo: SlabHalo, w0: int, w1: int, copy=None) -> Window:
    """Planes [w0, w1) of ``slab`` as a grid: at a side that is the slab's own end its
    streaming interior is the slab's, at a side that cuts the slab it stops ``edge``
    planes short, as at a slab's side with a neighbour."""
    lo = slab.stream.lower if w0 == 0 else halo.edge
    hi = slab.stream.upper - w0 if w1 == slab.planes else w1 - w0 - 1 - halo.edge
    return Window((w0, w1), DimExtent(lo, hi, w1 - w0), copy)


def overlap_windows(slab: Slab, halo: SlabHalo) -> OverlapWindows | None:
    """The windows of ``slab``'s launches when the halo exchange overlaps them, or None
    where the slab is too thin, owning no more than ``halo.below + halo.above`` planes
    (so that an edge window's cut lies among the owned planes): it then runs each launch
    whole after the exchange. With ``[o0, o1)`` the owned planes (local):

    * interior ``I = [o0, o1)``, or from the slab's first plane (last) at a side without
      a neighbour;
    * below, where a neighbour is: ``E = [0, o0 + halo.below + halo.above)``, copying
      ``[o0, o0 + halo.below)``;
    * above, where a neighbour is: ``E = [o1 - halo.above - halo.below, planes)``,
      copying ``[o1 - halo.above, o1)``.

    Why every owned plane of the destination ends exact, as after the whole launch:

    1. *A window computes what a slab of its planes would.* Its kernels run the slab's
       launch on the planes ``[w0, w1)`` (the buffers' views), and load, and read
       boundary values, only there (the ``edge`` rule of :class:`SlabHalo`). A side
       where it cuts the slab is a side with a neighbour to it, so the argument of
       :func:`slab_halo` holds as for a slab: given exact source planes in the window,
       its wrong planes lie within ``halo.below`` of a cut below and ``halo.above`` of a
       cut above (the read-only arrays shifted to the window's first plane, so that
       the clamped reads are those the halo counts), and at the array's end it has none.
       The slab's own ends are cuts where a neighbour is (its halo planes), else the
       array's ends.
    2. *I reads no halo plane.* Its planes are owned planes, and the array's boundary
       planes at a side without a neighbour, which no exchange writes. So I may run
       while the exchange writes the halo planes of the buffer it reads (the exchange
       reads owned planes of that buffer and writes nothing I reads or writes: I writes
       the other buffer). By 1, I leaves the owned planes ``[o0 + below, o1 - above)``
       exact (``below``/``above``: ``halo.below``/``halo.above`` at a side with a
       neighbour, 0 at a side without, where I reaches the array's end).
    3. *Each E runs after the exchange*, when every plane of the source is exact. The
       lower E's bottom is the slab's bottom: wrong planes below ``halo.below`` = ``o0``
       (the slab holds ``halo.below`` planes below its owned ones); its top is a cut
       at ``o0 + halo.below + halo.above``, an owned plane (below ``o1``: the slab owns
       more than ``halo.below + halo.above`` planes): exact below ``o0 + halo.below``.
       So ``[o0, o0 + halo.below)`` is exact; likewise ``[o1 - halo.above, o1)`` in the
       upper E, whose bottom cut lies above ``o0``.
    4. *Order.* E writes a scratch buffer, never the destination: a kernel stores every
       interior plane of its window, the wrong ones near a cut too, which would clobber
       I's exact planes. Only E's exact planes above are copied (interior cells only:
       the scratch holds no boundary cells), after I, over I's wrong planes. The three
       ranges cover the owned planes. The destination's halo planes are left as they
       were (the exchange after the launch refreshes them, as after a whole launch) and
       its boundary planes, as ever, unwritten.
    """
    o0, o1 = slab.owned_local.start, slab.owned_local.stop
    if o1 - o0 <= halo.below + halo.above:
        return None
    interior = _window(slab, halo, o0 if slab.below else 0, o1 if slab.above else slab.planes)
    edges = []
    if slab.below and halo.below:
        edges.append(_window(slab, halo, 0, o0 + halo.below + halo.above,
                             (o0, o0 + halo.below)))
    if slab.above and halo.above:
        edges.append(_window(slab, halo, o1 - halo.above - halo.below, slab.planes,
                             (o1 - halo.above, o1)))
    return OverlapWindows(interior, tuple(edges))


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
