"""Tests of an5dpy.perf.counts: plane and stream counts against the simulator's ThreadGrid
and a block-by-block BlockRanges walk, the op mix (eff_ALU), shared-memory reads per
thread (the paper's Table 2) and occupancy."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from an5dpy.blocking.plan import BlockingPlan, DimExtent, LaunchGeometry, Mode, make_plan
from an5dpy.check.simulate import ThreadGrid
from an5dpy.errors import UsageError
from an5dpy.perf.counts import (LevelWork, OpMix, level_work, occupancy, plane_dim_counts,
                                smem_reads_per_thread, stream_counts)
from an5dpy.perf.gpus import KNOWN_GPUS
from an5dpy.perf.model import predict

from model_support import (benchmark_grid, load_benchmark, load_multi, star_fields,
                           stream_counts_direct)

V100 = KNOWN_GPUS["V100"]


@given(st.data())
def test_plane_counts_match_thread_grid(data):
    ndim = data.draw(st.sampled_from([2, 3]))
    d = data.draw(st.integers(1, 4))
    radius = tuple(data.draw(st.integers(0, 2)) for _ in range(ndim))
    bs = tuple(2 * d * r + data.draw(st.integers(1, 7)) for r in radius[1:])
    dims = []
    for r in radius:
        lo = data.draw(st.integers(r, r + 2))
        n = data.draw(st.integers(1, 25))
        dims.append(DimExtent(lo, lo + n - 1, lo + n + data.draw(st.integers(r, r + 2))))
    plan = BlockingPlan(ndim, "float", radius, d, bs, None, Mode.NONE)
    geo = LaunchGeometry(plan, d, tuple(dims))
    tg = ThreadGrid.of(geo)
    slots = in_array = interior = 1
    window = [1] * (d + 1)
    for dim, nb, b, r in zip(geo.plane_dims, geo.plane_blocks, bs, radius[1:]):
        s, a, i, w = plane_dim_counts(dim, nb, b, r, d)
        slots, in_array, interior = slots * s, in_array * a, interior * i
        window = [x * y for x, y in zip(window, w)]
    assert slots == math.prod(tg.shape)
    assert in_array == int(tg.in_array.sum())
    assert interior == int(tg.interior.sum())
    assert window == [int(m.sum()) for m in tg.active]


@given(lo=st.integers(0, 4), n=st.integers(0, 60), d=st.integers(1, 6), r=st.integers(0, 3),
       sl=st.one_of(st.none(), st.integers(1, 20)))
def test_grouped_stream_counts_match_block_walk(lo, n, d, r, sl):
    stream = DimExtent(lo, lo + n - 1, lo + n + r)
    assert stream_counts(stream, sl, d, r) == stream_counts_direct(stream, sl, d, r)


def test_eff_alu(star2d, j2d5pt):
    # star2d1r: 5 products summed -> 4 FMA + 1 MUL: (8 + 1) / 10
    assert OpMix.of(star2d) == OpMix(fma=4, mul=1, add=0, other=0)
    assert OpMix.of(star2d).eff_alu == pytest.approx(0.9)
    # j2d5pt: the division is a multiply under fast math: 4 FMA + 2 MUL
    assert OpMix.of(j2d5pt).eff_alu == pytest.approx(10 / 12)
    box = load_benchmark("box2d1r")[1]
    # written as one dot product (mode none): 8 FMA + 1 MUL, near 1
    assert OpMix.of(box, Mode.NONE).eff_alu == pytest.approx(17 / 18)
    # mode assoc: 3 planes x (1 MUL + 2 FMA) + 2 ADD combining the partial sums
    assert OpMix.of(box, Mode.ASSOC) == OpMix(fma=6, mul=3, add=2, other=0)
    # every mix accounts for the stencil's FLOPs: 2 FMA + MUL + ADD + OTHER
    for info in (star2d, j2d5pt, box):
        for mode in (Mode.NONE, Mode.ASSOC):
            mix = OpMix.of(info, mode)
            assert 2 * mix.fma + mix.mul + mix.add + mix.other == info.flops_per_cell


def test_eff_alu_near_one_for_high_order():
    info = load_benchmark("star3d4r")[1]  # 25 products: 24 FMA + 1 MUL
    assert OpMix.of(info).eff_alu == pytest.approx(49 / 50)


@pytest.mark.parametrize("ndim, shape, r, nondiag, assoc, none", [
    # Table 2 (practical): 2D star 2r, 2D box (2r+1)-1, 3D star 4r, 3D box (2r+1)^2-1
    (2, "star", 1, 2, 2, 2), (2, "star", 3, 6, 6, 6), (3, "star", 2, 8, 8, 8),
    (2, "box", 1, None, 2, 6), (2, "box", 4, None, 8, 72), (3, "box", 1, None, 8, 24),
    (3, "box", 2, None, 24, 120),
])
def test_smem_reads_table2(ndim, shape, r, nondiag, assoc, none):
    rng = range(-r, r + 1)
    if shape == "box":
        offsets = [o for o in np.ndindex(*(2 * r + 1,) * ndim)]
        offsets = [tuple(x - r for x in o) for o in offsets]
    else:
        offsets = [(0,) * ndim]
        for dim in range(ndim):
            for k in rng:
                if k:
                    offsets.append(tuple(k if e == dim else 0 for e in range(ndim)))
    info = SimpleNamespace(offsets=tuple(sorted(set(offsets))))
    if nondiag is not None:
        assert smem_reads_per_thread(info, Mode.NONDIAG) == nondiag
    assert smem_reads_per_thread(info, Mode.ASSOC) == assoc
    assert smem_reads_per_thread(info, Mode.NONE) == none


def test_occupancy_limits(j2d5pt):
    # bT=4 float: 4*3 + 4 + 20 = 36 registers -> 40; 256 threads: threads 2048/256 = 8,
    # smem 98304 / (2*256*4) = 48, registers 65536 / (40*256) = 6.
    plan = make_plan(j2d5pt, bt=4, bs=(256,), sl=128)
    occ = occupancy(plan, V100)
    assert (occ.blocks_per_sm, occ.limited_by, occ.regs_per_thread) == (6, "regs", 40)
    assert occupancy(plan, V100, regs=32).blocks_per_sm == 8
    assert occupancy(plan, V100, regs=32).limited_by == "threads"
    big = make_plan(j2d5pt, bt=4, bs=(1024,), sl=128)
    assert occupancy(big, V100, regs=128).blocks_per_sm == 0
    with pytest.raises(UsageError, match="does not fit"):
        predict(j2d5pt, big, V100, benchmark_grid(j2d5pt, 1024), 8, regs=128)


# --------------------------------------------------------------------------- sub-steps


def test_the_one_statement_form_is_one_level_work_of_its_update(j2d5pt):
    for mode in (Mode.NONDIAG, Mode.NONE):
        plan = make_plan(j2d5pt, bt=2, bs=(64,), opt=mode)
        (work,) = level_work(j2d5pt, plan)
        assert work == LevelWork((j2d5pt.array,), j2d5pt.flops_per_cell, (OpMix.of(j2d5pt, mode),),
                                 (j2d5pt.array,), plan.smem_planes,
                                 smem_reads_per_thread(j2d5pt, mode))


def test_fdtd_levels_follow_their_sub_steps():
    info = load_multi("fdtd_2d")
    # sub-step 1: ey reads hz at (0,0), (-1,0) (registers); ex reads hz at (0,-1) (shared)
    # sub-step 2: hz reads ex at (0,1) (shared), ey at (1,0) (registers)
    nondiag = level_work(info, make_plan(info, bt=1, bs=(64,), opt="nondiag"))
    assert [(w.writes, w.flops, w.staged, w.smem_planes, w.smem_reads) for w in nondiag] == [
        (("ey", "ex"), 6, ("hz",), 1, 1), (("hz",), 5, ("ex",), 1, 1)]
    none = level_work(info, make_plan(info, bt=1, bs=(64,), opt="none"))
    assert [(w.staged, w.smem_planes, w.smem_reads) for w in none] == [
        (("hz",), 3, 1), (("ex",), 3, 1)]  # each staged field's 2r+1 planes
    # a time step's FLOPs and instructions are its sub-steps'
    assert sum(w.flops for w in nondiag) == info.flops_per_cell == 11
    assert OpMix.total(w.mix for w in nondiag) == OpMix.of(info)
    for w in nondiag:
        assert sum(2 * m.fma + m.mul + m.add + m.other for m in w.mixes) == w.flops


def test_one_barrier_per_step_stages_every_read_field_at_every_level():
    """The one SHARE of every level writes hz and ex (each sub-step's reads stay its own)."""
    info = load_multi("fdtd_2d")
    plan = make_plan(info, bt=1, bs=(64,), opt="nondiag", barriers="step")
    stepped = level_work(info, plan)
    assert [(w.staged, w.smem_planes, w.smem_reads) for w in stepped] == [
        (("ex", "hz"), 2, 1), (("ex", "hz"), 2, 1)]
    level = level_work(info, make_plan(info, bt=1, bs=(64,), opt="nondiag"))
    assert [(w.writes, w.flops, w.mixes) for w in stepped] == \
        [(w.writes, w.flops, w.mixes) for w in level]


def test_coupled_fields_of_one_sub_step_are_each_staged_and_read():
    info = load_multi("gray_scott")
    (work,) = level_work(info, make_plan(info, bt=2, bs=(64,)))
    # u and v at (0, +-1) each: 2 fields x 2 reads; the reads along the stream: registers
    assert (work.writes, work.staged, work.smem_planes, work.smem_reads) == (
        ("u", "v"), ("u", "v"), 2, 4)
    assert work.flops == info.flops_per_cell
    assert len(work.mixes) == 2 and work.mix == OpMix.of(info)


def test_read_only_arrays_are_charged_to_the_sub_step_that_reads_them():
    info = load_multi("coupled_3d_in_place")  # a's statement reads w[i]; b's none
    work = level_work(info, make_plan(info, bt=1, bs=(16, 16)))
    assert [(w.writes, w.coef_reads, w.coef_l1_bytes) for w in work] == [
        (("a",), 1, 8), (("b",), 0, 0)]


def test_identical_decoupled_fields_count_each_fields_work():
    one, two = star_fields(["u"]), star_fields(["u", "v"])
    (w1,) = level_work(one, make_plan(one, bt=2, bs=(64,)))
    (w2,) = level_work(two, make_plan(two, bt=2, bs=(64,)))
    assert (w2.flops, w2.smem_reads, w2.smem_planes) == (
        2 * w1.flops, 2 * w1.smem_reads, 2 * w1.smem_planes)
    assert w2.mix == w1.mix + w1.mix and w2.mix.eff_alu == w1.mix.eff_alu


@pytest.mark.parametrize("name, coarsen, stores, reads", [
    ("star2d1r", 1, 1, 2),
    ("star2d1r", 2, 1, 1),        # each cell: one row neighbour is the thread's register
    ("star2d1r", 4, 0.5, 0.5),    # cells 0 and 3 stored; the two row ends load
    ("star2d2r", 2, 1, 3),        # dy = +-2 always off the thread, +-1 for one cell of two
    ("star2d4r", 8, 1, 2.5),      # (1+2+3+4) * 2 / 8 loads; all 8 cells within 4 of an end
])
def test_cell_major_threads_load_only_the_row_neighbours_they_do_not_hold(
        name, coarsen, stores, reads):
    """coarsened_shared_traffic: per cell and level op, on average over a thread's cells,
    as the cell-major kernels do (render_model.Coarsening: a register where the thread
    holds the cell, a shared load else; only plan.shared_cells stored)."""
    from an5dpy.perf.counts import coarsened_shared_traffic
    info = load_benchmark(name)[1]
    plan = make_plan(info, 1, bs=(128 * coarsen,), sl=64, coarsen=coarsen)
    assert plan.cell_major == (coarsen > 1)
    assert coarsened_shared_traffic(info, plan) == (pytest.approx(stores), pytest.approx(reads))


def test_3d_and_assoc_coarsened_threads_keep_the_one_cell_counts():
    from an5dpy.perf.counts import coarsened_shared_traffic, smem_reads_per_thread
    for name, bs, opt in (("star3d1r", (32, 32), "nondiag"), ("box2d1r", (256,), "assoc")):
        info = load_benchmark(name)[1]
        plan = make_plan(info, 1, bs=bs, sl=64, opt=opt, coarsen=2)
        assert not plan.cell_major
        assert coarsened_shared_traffic(info, plan) == (
            plan.smem_planes, smem_reads_per_thread(info, plan.mode))
