"""The cut of the streaming dimension into slabs, one per GPU (blocking/slabs.py): the
owned ranges partition the interior (sizes differing by at most one), each slab holds its
halos, the kernels' interior reaches its edge planes where a neighbour is, the transfers
fill every halo plane from the neighbour that owns it, and slabs thinner than the halo
are refused (partition) or the GPU count reduced with a note (slab_count)."""

from __future__ import annotations

import os
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, strategies as st

from an5dpy.blocking.plan import DimExtent, make_plan
from an5dpy.blocking.slabs import (SlabHalo, max_slabs, partition, shifted_coefficient,
                                   slab_count, slab_halo)
from an5dpy.driver import load
from an5dpy.errors import UsageError
from an5dpy.ir import CoefIndex

from paths import C_INPUTS


@lru_cache(maxsize=None)
def program(name: str, dtype: str = "float"):
    return load(os.path.join(C_INPUTS, name + ".c"), (("SB_TYPE", dtype),))


def check_decomposition(extent: DimExtent, count: int, halo: SlabHalo) -> None:
    d = partition(extent, count, halo)
    assert d.count == count
    owned = [s.owned for s in d.slabs]
    assert owned[0][0] == extent.lower and owned[-1][1] == extent.upper + 1
    assert all(a[1] == b[0] for a, b in zip(owned, owned[1:]))
    sizes = [b - a for a, b in owned]
    assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)
    assert min(sizes) >= halo.widest or count == 1
    for s in d.slabs:
        assert s.below == (s.index > 0) and s.above == (s.index < count - 1)
        start, stop = s.held
        assert start == (s.owned[0] - halo.below if s.below else 0)
        assert stop == (s.owned[1] + halo.above if s.above else extent.size)
        assert 0 <= start and stop <= extent.size and s.planes == s.stream.size
        # the kernels' interior: the global one where no neighbour is, to the edge planes
        lo = halo.edge if s.below else extent.lower
        hi = s.planes - 1 - halo.edge if s.above else extent.upper - start
        assert (s.stream.lower, s.stream.upper) == (lo, hi)
        assert s.stream.lower <= s.owned_local.start and s.owned_local.stop - 1 <= s.stream.upper
    # every halo plane (held, not owned, interior) comes from the one slab that owns it
    filled = {g: set() for g in range(count)}
    for t in d.transfers:
        src, dst = d.slabs[t.source], d.slabs[t.dest]
        assert abs(t.source - t.dest) == 1
        assert src.owned[0] <= t.planes[0] <= t.planes[1] <= src.owned[1]
        assert dst.held[0] <= t.planes[0] <= t.planes[1] <= dst.held[1]
        filled[t.dest].update(range(*t.planes))
    for s in d.slabs:
        halo_planes = {p for p in range(*s.held) if not s.owned[0] <= p < s.owned[1]
                       and extent.lower <= p <= extent.upper}
        assert filled[s.index] == halo_planes
    assert d.halo_planes() == sum(len(v) for v in filled.values())


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5])
def test_uneven_interior_partitions_exactly(count):
    check_decomposition(DimExtent(1, 41, 43), count, SlabHalo(4, 4, 1))
    check_decomposition(DimExtent(3, 60, 64), count, SlabHalo(5, 7, 2))


@given(lower=st.integers(0, 5), length=st.integers(0, 200), top=st.integers(0, 5),
       below=st.integers(0, 20), above=st.integers(0, 20), data=st.data())
def test_any_extent_and_halo_partitions_exactly(lower, length, top, below, above, data):
    edge = data.draw(st.integers(0, min(below, above)))
    halo = SlabHalo(below, above, edge)
    extent = DimExtent(lower, lower + length - 1, lower + length + top)
    most = max_slabs(extent, halo)
    count = data.draw(st.integers(1, most))
    check_decomposition(extent, count, halo)
    with pytest.raises(UsageError, match="thinner than the halo"):
        partition(extent, most + 1, halo)


def test_thin_slabs_reduce_the_gpu_count_with_a_note():
    extent, halo = DimExtent(1, 20, 22), SlabHalo(4, 6, 1)
    assert max_slabs(extent, halo) == 3
    assert slab_count(3, extent, halo) == (3, None)
    count, note = slab_count(8, extent, halo)
    assert count == 3
    assert "8 GPUs" in note and "20 interior planes" in note and "halo of 6" in note
    assert "running on 3" in note
    assert slab_count(4, DimExtent(1, 0, 2), halo)[0] == 1  # no interior: one GPU
    with pytest.raises(UsageError, match="at least one"):
        slab_count(0, extent, halo)
    with pytest.raises(UsageError, match="use at most 3 GPUs"):
        partition(extent, 4, halo)


def test_the_halo_of_one_statement_is_the_edge_and_a_plane_per_level_and_reach():
    _, info = program("j2d5pt")
    plan = make_plan(info, bt=3, bs=(16,))
    assert slab_halo(info, plan) == SlabHalo(4, 4, 1)  # (bT + 1) r
    _, info = program("star2d3r")
    assert slab_halo(info, make_plan(info, bt=2, bs=(32,))) == SlabHalo(9, 9, 3)


def test_the_halo_of_several_statements_counts_sub_steps_and_field_margins():
    _, info = program("fdtd2d")  # ey from row 1, hz to row n-2: margins 1 below and above
    plan = make_plan(info, bt=2, bs=(16,))
    assert plan.depth == 4 and info.dims[0].reach_lo == info.dims[0].reach_hi == 1
    assert slab_halo(info, plan) == SlabHalo(1 + 1 + 4, 1 + 1 + 4, 1)


def test_the_halo_covers_coefficient_reads_below_the_edge():
    _, info = program("varheat2d")  # ky[i-1][j]: one plane below, within the radius
    plan = make_plan(info, bt=2, bs=(16,))
    assert slab_halo(info, plan) == SlabHalo(3, 3, 1)
    far = info.coefficients[0]
    far = type(far)(far.name, far.elem_type, far.extents, far.form, None,
                    ((CoefIndex(0, -5), CoefIndex(1, 0)),))
    wider = type(info)(**{**info.__dict__, "coefficients": (far,)})
    assert slab_halo(wider, plan) == SlabHalo(5 + 2, 3, 1)


def test_shifted_coefficients_follow_the_streaming_dimension_only():
    values = np.arange(30.0).reshape(5, 6)
    by_row = ((CoefIndex(0, 0), CoefIndex(1, 1)),)
    shifted = shifted_coefficient(values, by_row, 2, np.nan)
    assert shifted.shape == values.shape
    assert np.array_equal(shifted[:3], values[2:]) and np.isnan(shifted[3:]).all()
    by_column = ((CoefIndex(1, 0), CoefIndex(0, -1)),)  # c[j][i-1]: axis 1 follows plane i
    shifted = shifted_coefficient(values, by_column, 2, -1.0)
    assert np.array_equal(shifted[:, :4], values[:, 2:]) and (shifted[:, 4:] == -1).all()
    constant = ((CoefIndex(None, 2), CoefIndex(1, 0)),)
    assert shifted_coefficient(values, constant, 2, np.nan) is values
    assert shifted_coefficient(values, by_row, 0, np.nan) is values
