"""Tests of an5dpy.perf.model (the paper's section 5 performance model) and ``an5d model``.

Hand-computed thread classes on tiny grids, conservation laws (class totals = thread x
level x plane slots, valid stores = interior cells per launch), scaling, the paper's V100
numbers, and the command line. The counts it builds on: tests/perf/test_counts.py.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from an5dpy.blocking.plan import (BlockingPlan, DimExtent, LaunchGeometry, Mode,
                                  budget_register_limit, default_mode, launch_degrees,
                                  make_plan)
from an5dpy.cli import main as cli
from an5dpy.errors import UsageError
from an5dpy.perf.counts import OpMix, ThreadCounts, spill_free_registers, stream_counts
from an5dpy.perf.gpus import KNOWN_GPUS
from an5dpy.perf.model import (FITTED, PAPER_TERMS, IssueConstants, LaunchTerms, Model,
                               cell_efficiency, combine_times, division_instructions,
                               division_latency, issue_seconds, launch_seconds, predict,
                               step_cycles, unbounded_ratio)
from an5dpy.perf.model_constants import (BOTTLENECKS, CELL_EFFICIENCY, DEPENDENT_LATENCY,
                                         FIELD_SELECT_INSTRUCTIONS, INTERIOR_LEVEL_OVERHEAD,
                                         LEVEL_OVERHEAD, LONE_BLOCK_EXPOSED, REGISTER_BUDGETS,
                                         SPILL_GROWTH_CELLS, STEP_OVERHEAD, UNBOUNDED_RATIO)

from model_support import (benchmark_grid, load_benchmark, load_multi, predict_config,
                           star_fields, stream_counts_direct)
from paths import C_INPUTS, TESTS_DIR as HERE

V100 = KNOWN_GPUS["V100"]


def plan2d(bt: int, b: int, sl: int | None = None, r: int = 1, opt: str = "nondiag",
           dtype: str = "float") -> BlockingPlan:
    return BlockingPlan(2, dtype, (r, r), bt, (b,), sl, Mode(opt))


# --------------------------------------------------------------------------- by hand


def test_hand_case_bt1_one_row(star2d):
    # 2D star r=1, bt=1, bS=8 threads, interior 1 x 6 (array 3 x 8), no stream division.
    # In-plane: compute region 8 - 2*1*1 = 6 -> 1 block; thread t sits at x = 1 - 1 + t =
    # 0..7, all inside the array (8 in-array), interior x = 1..6 (6), boundary x = 0, 7 (2),
    # out-of-bound 0. Level 1 window t in [1, 7) -> x = 1..6: 6 valid, 0 redundant.
    # Stream: one block storing plane 1; BlockRanges.of(1, 2, 1, 1, 1, 1): base 0, loads
    # local planes 0..2 (plane 1 interior, 0 and 2 boundary); level 1 = d produces plane 1.
    dims = (DimExtent(1, 1, 3), DimExtent(1, 6, 8))
    p = predict(star2d, plan2d(1, 8), V100, dims, 1)
    (c,) = p.launches
    assert c.levels[0] == ThreadCounts(out_of_bound=0, boundary=1 * 2 + 2 * 8, redundant=0,
                                       valid=6)
    assert c.levels[1] == ThreadCounts(out_of_bound=0, boundary=2, redundant=0, valid=6)
    assert c.gm_reads == 3 * 8  # three loaded planes, 8 in-array threads each
    assert c.gm_writes == 6
    assert c.comp_threads == 6
    assert c.sm_writes == 8  # one level op, all 8 threads write
    assert c.sm_reads == 6 * 2  # 2D star: 2r reads per computing thread
    assert c.gm_bytes == (24 + 6) * 4 and c.sm_bytes == (12 + 8) * 4
    assert c.flops == 6 * 9  # star2d1r: 9 FLOP/cell
    assert c.blocks == 1 and c.plane_blocks == (1,) and c.stream_blocks == 1


def test_hand_case_bt2_three_blocks(star2d):
    # 2D star r=1, bt=2, bS=8, interior 3 x 10 (array 5 x 12), no stream division.
    # Halo 2, compute region 4 -> ceil(10/4) = 3 blocks; thread t of block k sits at
    # x = 1 - 2 + 4k + t:   k=0: -1..6   k=1: 3..10   k=2: 7..14   (array 0..11)
    #   in-array  7 + 8 + 5 = 20 (of 24 slots: 4 out-of-bound: x=-1, 12, 13, 14)
    #   interior  6 + 8 + 4 = 18 (x in 1..10)      -> boundary 20 - 18 = 2 (x = 0, 11)
    #   level 1 window t in [1,7): x 0..5 -> 5, 4..9 -> 6, 8..13 -> 3   = 14 valid
    #   level 2 window t in [2,6): x 1..4 -> 4, 5..8 -> 4, 9..12 -> 2  = 10 valid (= 10 cells)
    # Stream: one block, BlockRanges.of(1, 4, 1, 3, 2, 1): base 0, loads planes 0..4
    # (3 interior + 2 boundary), level 1 produces 0..4 (3 + 2), level 2 planes 1..3.
    # 4 steps = 2 launches of degree 2 (2 steps would be 2 launches of degree 1: parity)
    dims = (DimExtent(1, 3, 5), DimExtent(1, 10, 12))
    p = predict(star2d, plan2d(2, 8), V100, dims, 4)
    (c,) = p.launches
    assert (c.degree, c.count) == (2, 2)
    assert c.levels[0] == ThreadCounts(5 * 4, 3 * 2 + 2 * 20, 0, 3 * 18)
    assert c.levels[1] == ThreadCounts(out_of_bound=5 * 4, boundary=3 * 2 + 2 * 20,
                                       redundant=3 * (18 - 14), valid=3 * 14)
    assert c.levels[2] == ThreadCounts(out_of_bound=3 * 4, boundary=3 * 2,
                                       redundant=3 * (18 - 10), valid=3 * 10)
    assert c.levels[1].total == 5 * 24 and c.levels[2].total == 3 * 24
    assert c.gm_reads == 100 and c.gm_writes == 30
    assert c.comp_threads == 42 + 30  # valid slots of levels 1 and 2
    assert c.sm_writes == 120 + 72
    assert c.sm_reads == 72 * 2
    # charging the halo: redundant slots compute too
    h = predict(star2d, plan2d(2, 8), V100, dims, 4, halo_computes=True).launches[0]
    assert h.comp_threads == (12 + 42) + (24 + 30) and h.sm_reads == 108 * 2
    assert h.gm_bytes == c.gm_bytes and h.sm_writes == c.sm_writes
    # occupancy on V100: 8 threads, 2*8*4 = 64 B shared, 2*3+2+20 = 28 -> 32 registers:
    # threads 2048/8 = 256, smem 98304/64 = 1536, regs 65536/(32*8) = 256, blocks 32.
    assert c.occupancy.blocks_per_sm == 32 and c.occupancy.limited_by == "blocks"
    assert c.occupancy.regs_per_thread == 32
    assert c.waves == pytest.approx(3 / (32 * 80))
    assert c.eff_sm == pytest.approx(3 / (32 * 80))
    # times: bytes / bandwidth, FLOPs / (peak x eff_ALU); star2d1r is 4 FMA + 1 MUL
    assert c.time_gm == pytest.approx((100 + 30) * 4 / 791e9)
    assert c.time_sm == pytest.approx((144 + 192) * 4 / 10650e9)
    assert c.time_comp == pytest.approx(72 * 9 / (15700e9 * 0.9))
    assert c.seconds == pytest.approx(max(c.time_gm, c.time_sm, c.time_comp) / c.eff_sm)
    assert p.seconds == pytest.approx(2 * c.seconds)
    assert p.gflops == pytest.approx(30 * 9 * 4 / p.seconds / 1e9)


def test_hand_case_issue_term(star2d):
    # The bt=2 case above on a V100 given a step latency of 1000 cycles (the term is on for
    # Hopper only). star2d1r: 4 FMA + 1 MUL = 5 instructions, + 2 shared reads + 1 store +
    # 1 barrier + 0 (a 2D plan with an interior phase has no level overhead) + 12 / 2 (the
    # streaming step's overhead over its 2 levels) = 15 per thread and level. bS = 8 is one
    # warp, active at both levels; warps over the launch: (120 + 72) / 32 = 6 -> 6 * 15 = 90
    # warp-instructions; block steps: 120 level-0 slots / 8 threads = 15 (3 blocks x 5
    # planes); per step 90 / 15 / 4 schedulers = 1.5 cycles. Latency: 1000 + 2 levels x
    # (5 dependent FP32 instructions x 4 cycles) = 1040; 32 resident blocks:
    # max(1040 + 0.4 * 1.5, 32 * 1.5) = 1040.6 cycles;
    # time = 15 / (80 SMs * 32) * 1040.6 / 1530 MHz
    # (constants given: exposed issue 0.4, 2 spill instructions per register, the
    # Euclidean norm, no barrier stall or per-warp issue; the fitted ones: the next test)
    from dataclasses import replace as with_
    gpu = with_(V100, step_latency_cycles=1000)
    dims = (DimExtent(1, 3, 5), DimExtent(1, 10, 12))
    m = Model(star2d, gpu, dims, 4, constants=IssueConstants(
        exposed=0.4, spill=2.0, wave_tail=0.25, barrier_stall=0.0, norm=2.0, warp_cpi=0.0))
    c = m.launch_cost(plan2d(2, 8), 2)
    assert plan2d(2, 8).interior_phase
    assert m.level_instructions(plan2d(2, 8), 2) == 15
    assert c.warp_instructions == pytest.approx(90)
    assert c.block_steps == 15
    assert m.level_latency(plan2d(2, 8)) == 20
    assert c.step_cycles == pytest.approx(1040.6)
    assert c.time_issue == pytest.approx(15 / (80 * 32) * 1040.6 / 1530e6)
    # the launch takes the Euclidean norm of its four times (the largest one names it)
    assert c.bottleneck == "issue"
    assert c.seconds == pytest.approx(math.hypot(c.time_comp, c.time_sm, c.time_gm,
                                                 c.time_issue) / c.eff_sm)
    # the other terms are the paper's, unchanged
    paper = Model(star2d, V100, dims, 4).launch_cost(plan2d(2, 8), 2)
    assert (c.time_comp, c.time_sm, c.time_gm) == (paper.time_comp, paper.time_sm,
                                                   paper.time_gm)
    assert paper.time_issue == 0 and paper.bottleneck != "issue"
    # a budget of 16 registers cannot bind a block of 8 threads: its launch bounds ask for
    # at most the 32 blocks an SM holds (ptxas ignores more), which leave each thread 256
    # registers, over the 2*3 plane registers + 20 the kernel needs: no spills
    assert spill_free_registers(plan2d(2, 8), 2) == 26
    assert m.launch_cost(plan2d(2, 8), 2, 16).step_cycles == pytest.approx(c.step_cycles)
    # with 128 threads it binds: 65536 / (16 * 128) = 32 blocks leave each thread 16, 10
    # below what it needs: 2 spill instructions per register -> 20 more per warp-level
    wide = plan2d(2, 128)
    assert m.level_instructions(wide, 2, 16) == m.level_instructions(wide, 2) + 20
    # so little work per step that even 32 resident blocks leave the latency exposed
    assert c.step_cycles > 32 * 90 / 15 / 4


def test_fitted_issue_term_charges_barriers_and_each_warps_issue(star2d):
    # the fitted constants on the hand case above: the step's latency adds the barriers'
    # stall (2 levels x 1 barrier x 1 warp x BARRIER_STALL) and the block's one warp
    # issuing its 90 / 15 warp-instructions per step at WARP_CPI each
    from dataclasses import replace as with_
    gpu = with_(V100, step_latency_cycles=1000)
    dims = (DimExtent(1, 3, 5), DimExtent(1, 10, 12))
    m = Model(star2d, gpu, dims, 4, constants=FITTED)
    c = m.launch_cost(plan2d(2, 8), 2)
    k = FITTED
    per_block = 15 * 6 / 15
    latency = 1000 + 40 + k.barrier_stall * 2 * 1 + k.warp_cpi * per_block / 1
    assert c.step_cycles == pytest.approx(max(latency + k.exposed * per_block / 4,
                                              32 * per_block / 4))
    assert c.seconds == pytest.approx(float(combine_times(c.times, k.norm)) / c.eff_sm)
    # one barrier per step: one barrier a step instead of one per level
    step = make_plan(star2d, bt=2, bs=(8,), barriers="step")
    assert m.launch_cost(step, 2).terms.barrier_warps == 1
    assert c.terms.barrier_warps == 2
    # a GPU without a step latency keeps the paper's terms
    assert Model(star2d, V100, dims, 4).constants == PAPER_TERMS


def test_a_block_alone_on_its_sm_exposes_its_issue():
    # per block and step: 400 warp-instructions over 4 schedulers = 100 cycles, latency
    # 1000 + 0 chains + 2 x 8 barrier warps + 0.5 x 400 / 8 warps = 1041 cycles. Two
    # resident blocks overlap one's issue with the other's latency in full
    # (EXPOSED_ISSUE 0); one alone adds LONE_BLOCK_EXPOSED of its issue to its latency
    k = replace(FITTED, exposed=0.0, lone=0.5, barrier_stall=2.0, warp_cpi=0.5)
    terms = LaunchTerms(0, 0, 0, 1, step_latency=1000, block_steps=10,
                        issue_instructions=4000, barrier_warps=8, block_warps=8,
                        schedulers=4, sm_count=1, clock_hz=1e9)
    assert step_cycles(replace(terms, resident=2), k) == pytest.approx(1041)
    assert step_cycles(replace(terms, resident=1), k) == pytest.approx(1041 + 50)
    # many resident blocks: their issue bounds the step, not the latency
    assert step_cycles(replace(terms, resident=16), k) == pytest.approx(1600)
    # the levels' chains join the latency by CHAIN_SHARE: 300 cycles, half of them
    chained = replace(terms, resident=2, chain_cycles=300)
    assert step_cycles(chained, k) == pytest.approx(1041 + 300 * k.chain)
    assert step_cycles(chained, replace(k, chain=0.5)) == pytest.approx(1041 + 150)
    # a launch whose blocks sit one to an SM takes longer than with two to an SM
    alone = issue_seconds(replace(terms, resident=1), k)
    shared = issue_seconds(replace(terms, resident=2), k)
    assert alone > shared
    assert FITTED.lone == LONE_BLOCK_EXPOSED > FITTED.exposed


def test_fewer_warps_per_block_issue_longer_steps(star2d):
    # two cells per thread: the same cells, half the warps, each issuing the instructions
    # of two cells (a cell's own: one row neighbour of the two is the thread's register)
    grid = benchmark_grid(star2d, 4096)
    m = Model(star2d, "H200", grid, 100)
    plans = [make_plan(star2d, bt=4, bs=(256,), sl=256, barriers="step", coarsen=c)
             for c in (1, 2)]
    one, two = (m.launch_cost(p, 4, 64) for p in plans)
    assert two.terms.block_warps * 2 == one.terms.block_warps
    per_warp = [t.issue_instructions / t.block_steps / t.block_warps
                for t in (one.terms, two.terms)]
    per_cell = [m.spill_free_instructions(p, 4) for p in plans]
    # a shared load fewer, and the step's one barrier (1/4 per level op) halved per cell
    assert per_cell[1] == pytest.approx(per_cell[0] - 1 - (1 / 4 - 1 / 8))
    assert per_warp[1] == pytest.approx(2 * per_warp[0] * per_cell[1] / per_cell[0])


def test_the_p_norm_lies_between_the_largest_time_and_their_sum():
    times = (3.0, 1.0, 2.0, 0.5)
    assert combine_times(times, math.inf) == 3.0
    assert combine_times(times, 1.0) == pytest.approx(6.5)
    assert combine_times(times, 2.0) == pytest.approx(math.hypot(*times))
    values = [float(combine_times(times, p)) for p in (1.0, 1.5, 2.0, 3.0, 8.0, 64.0)]
    assert values == sorted(values, reverse=True) and 3.0 < values[-1] < 3.01
    assert combine_times((0.0, 0.0, 0.0, 0.0), 3.0) == 0.0
    # arrays: one norm per column, as each launch alone
    batch = combine_times(np.array([times, (1e-300, 0.0, 0.0, 0.0)]).T, 3.0)
    assert batch[0] == pytest.approx(float(combine_times(times, 3.0)))
    assert batch[1] == pytest.approx(1e-300)


def test_stacked_terms_give_each_launchs_seconds(j2d5pt):
    # scripts/model_fit.py applies launch_seconds to many launches' terms at once: the
    # same seconds as each launch's own
    m = Model(j2d5pt, "H200", benchmark_grid(j2d5pt, 4096), 100)
    costs = [m.launch_cost(make_plan(j2d5pt, bt=bt, bs=(b,), sl=256), bt, regs)
             for bt in (2, 8) for b in (128, 512) for regs in (None, 32, 64)]
    batch = launch_seconds(LaunchTerms.stack(c.terms for c in costs), m.constants)
    assert batch == pytest.approx([c.seconds for c in costs], rel=1e-12)
    cycles = step_cycles(LaunchTerms.stack(c.terms for c in costs), m.constants)
    assert cycles == pytest.approx([c.step_cycles for c in costs], rel=1e-12)


def test_double_division_costs_issue_and_latency(j2d5pt):
    # j2d5pt: (5 weighted terms) / 6.5 -> 4 FMA + 1 MUL + the division (1 MUL in the mix)
    double = load_benchmark("j2d5pt", "double")[1]
    grid = benchmark_grid(j2d5pt, 64)
    single, twice = Model(j2d5pt, "H200", grid, 4), Model(double, "H200", grid, 4)
    assert single.mix(Mode.NONDIAG).double_divisions == 0
    assert twice.mix(Mode.NONDIAG).double_divisions == 1
    p32 = make_plan(j2d5pt, bt=2, bs=(128,), sl=128)
    p64 = make_plan(double, bt=2, bs=(128,), sl=128)
    assert twice.mix(Mode.NONDIAG).fixed_double_divisions == 1  # by 6.5f: fixed
    # float: 6 + 2 reads + 1 store + 1 barrier + 0 (interior phase) + 12 / 2 (the step's
    # overhead over 2 levels); double: FP64 counted twice, + 10 for the division by a
    # divisor the kernels take the reciprocal of once
    assert single.level_instructions(p32, 2) == 16
    assert twice.level_instructions(p64, 2) == 2 * 6 + 10 + 2 + 1 + 1 + 6
    # chains: 6 x 4 cycles in float; 6 x 8 + 40 for the division in double
    assert single.level_latency(p32) == 24 and twice.level_latency(p64) == 88
    # a divisor that reads the grid: the whole Newton-Raphson sequence, 20 and 100
    by_cell = OpMix(fma=4, mul=2, add=0, other=0, double_divisions=1)
    assert (division_instructions(by_cell), division_latency(by_cell)) == (20, 100)


def test_level_and_step_overheads_follow_the_kernels_sass(j2d5pt):
    # artifact/H200/sass_counts.md: a 2D block with an interior phase issues only the
    # essential instructions per level op; without one (in-plane radius 3) and in 3D each
    # level op pays LEVEL_OVERHEAD more; every plan pays STEP_OVERHEAD per cell and
    # streaming step, spread over its levels, so a deeper plan issues fewer per level op
    grid = benchmark_grid(j2d5pt, 4096)
    m = Model(j2d5pt, "H200", grid, 100)
    shallow, deep = (make_plan(j2d5pt, bt=bt, bs=(256,), sl=256) for bt in (4, 14))
    assert shallow.interior_phase and deep.interior_phase
    assert (m.spill_free_instructions(shallow, 4) - m.spill_free_instructions(deep, 14)
            == pytest.approx(STEP_OVERHEAD[2] * (1 / 4 - 1 / 14)))
    assert m.spill_free_instructions(shallow, 2) - m.spill_free_instructions(shallow, 4) == (
        pytest.approx(STEP_OVERHEAD[2] / 4))
    # without an interior phase: the update, its shared reads, 1 store, 1 barrier and both
    # overheads
    for name, bs, n in (("star2d3r", (256,), 4096), ("star3d1r", (32, 32), 256)):
        info = load_benchmark(name)[1]
        plan = make_plan(info, bt=2, bs=bs, sl=64)
        assert not plan.interior_phase
        model = Model(info, "H200", benchmark_grid(info, n), 100)
        work = model.work(plan)[0]
        assert model.spill_free_instructions(plan, 2) == (
            work.mix.instructions + work.smem_reads + 1 + 1 + LEVEL_OVERHEAD[plan.ndim]
            + STEP_OVERHEAD[plan.ndim] / 2)


def test_a_budget_spills_four_cells_a_thread_as_ptxas_grows_their_registers(j2d5pt):
    # from SPILL_GROWTH_CELLS cells per thread on, the registers a budget falls short of
    # are counted against spill_free_registers grown by UNBOUNDED_RATIO over one cell's;
    # fewer cells keep the plain count, and without a budget nothing spills
    m = Model(j2d5pt, "H200", benchmark_grid(j2d5pt, 4096), 100)
    key = ("nondiag", "float", 2)
    growth = UNBOUNDED_RATIO[(*key, 4)] / UNBOUNDED_RATIO[(*key, 1)]
    assert growth > 1 and SPILL_GROWTH_CELLS == 4
    for cells in (1, 2, 4):
        plan = make_plan(j2d5pt, bt=4, bs=(512,), sl=256, coarsen=cells)
        limit = budget_register_limit(64, plan.nthreads)
        need = spill_free_registers(plan, 4)
        if cells >= SPILL_GROWTH_CELLS:
            need = math.ceil(need * growth)
        assert m.registers_short(plan, 4, 64) == max(0, need - limit)
        assert m.registers_short(plan, 4, None) == 0
    four = make_plan(j2d5pt, bt=4, bs=(512,), sl=256, coarsen=4)
    plain = spill_free_registers(four, 4) - budget_register_limit(64, four.nthreads)
    assert m.registers_short(four, 4, 64) > plain > 0


def test_a_plans_cells_per_thread_take_their_share_of_the_modelled_speed(j2d5pt):
    # CELL_EFFICIENCY by dimensions and cells per thread, relative to one cell; beyond the
    # table the largest cells per thread in it; dimensions it lacks: 1
    assert CELL_EFFICIENCY[(2, 1)] == CELL_EFFICIENCY[(3, 1)] == 1.0
    assert CELL_EFFICIENCY[(2, 4)] < CELL_EFFICIENCY[(2, 2)] < 1.0
    for cells in (1, 2, 4, 8):
        plan = make_plan(j2d5pt, bt=4, bs=(512,), sl=256, coarsen=cells)
        assert cell_efficiency(plan) == CELL_EFFICIENCY[(2, min(cells, 4))]
    one_d = BlockingPlan(1, "float", (), 2, (), None, Mode.NONDIAG)
    assert cell_efficiency(one_d) == 1.0
    # a launch takes its plan's share where the issue term applies: the time over it
    m = Model(j2d5pt, "H200", benchmark_grid(j2d5pt, 4096), 100)
    plan = make_plan(j2d5pt, bt=4, bs=(512,), sl=256, coarsen=2)
    cost = m.launch_cost(plan, 4)
    assert cost.terms.efficiency == CELL_EFFICIENCY[(2, 2)]
    plain = launch_seconds(replace(cost.terms, efficiency=1.0), cost.constants)
    assert cost.seconds == pytest.approx(plain / CELL_EFFICIENCY[(2, 2)])
    # the paper's terms (no step latency) know nothing of it
    assert Model(j2d5pt, "P100", benchmark_grid(j2d5pt, 4096), 100).launch_cost(
        plan, 4).terms.efficiency == 1.0


def test_a_loaded_halo_is_issued_by_the_compute_region_and_its_halo_rounds():
    # the computing threads load the halo (HaloCells.LOADED): a level's warps are the
    # compute region's, each round of halo loads costs HALO_LOAD_INSTRUCTIONS a warp, and
    # the kernel has its own efficiency and registers
    from an5dpy.perf.model_constants import HALO_LOAD_INSTRUCTIONS, UNBOUNDED_RATIO
    info = load_benchmark("star3d3r")[1]
    m = Model(info, "H200", benchmark_grid(info, 128), 10)
    threads = make_plan(info, 1, bs=(14, 70), opt="nondiag", coarsen=2)
    loaded = make_plan(info, 1, bs=(14, 70), opt="nondiag", coarsen=2, halo="loaded")
    assert loaded.halo_loads_per_thread == 2 and loaded.nthreads == 256
    lc, tc = m.launch_cost(loaded, 1), m.launch_cost(threads, 1)
    # the same tiles, loads, stores and computed cells; fewer warps issue
    assert (lc.gm_bytes, lc.sm_bytes, lc.flops) == (tc.gm_bytes, tc.sm_bytes, tc.flops)
    assert lc.terms.block_warps == 8 and tc.terms.block_warps == 16
    per_cell = m.spill_free_instructions(loaded, 1)
    cells = lc.levels[1].total * (8 * 64) / (14 * 70)
    halo = lc.block_steps * 8 * 2 * HALO_LOAD_INSTRUCTIONS
    assert lc.terms.issue_instructions == pytest.approx(cells / 32 * per_cell + halo)
    assert lc.terms.efficiency == CELL_EFFICIENCY[(3, 2, "loaded")]
    assert tc.terms.efficiency == CELL_EFFICIENCY[(3, 2)]
    assert unbounded_ratio(loaded) == UNBOUNDED_RATIO[("nondiag/loaded", "float", 3, 2)]
    assert unbounded_ratio(threads) == UNBOUNDED_RATIO[("nondiag", "float", 3, 2)]
    # beyond the table's cells per thread the largest of the same kernel
    eight = make_plan(info, 1, bs=(22, 70), opt="nondiag", coarsen=8, halo="loaded")
    assert cell_efficiency(eight) == CELL_EFFICIENCY[(3, 4, "loaded")]


def test_an_unbounded_kernel_takes_the_registers_its_launch_bounds_leave(j2d5pt):
    # ptxas holds an unbounded kernel to what __launch_bounds__(threads) leaves a thread
    # and spills the rest: the model takes occupancy at that limit and counts the spills,
    # where it used to refuse such a plan (255 registers round to 256, which fits)
    from an5dpy.perf.counts import occupancy
    m = Model(j2d5pt, "H200", benchmark_grid(j2d5pt, 4096), 100)
    deep = make_plan(j2d5pt, bt=14, bs=(512,), sl=256, coarsen=4)  # 128 threads
    assert math.ceil(deep.register_estimate(14) * unbounded_ratio(deep)) > 255
    assert m.thread_registers(deep, 14, None) == 255
    assert m.occupancy(deep, 14, None).blocks_per_sm == 2  # 256 x 128 threads each
    need = math.ceil(spill_free_registers(deep, 14) * unbounded_ratio(deep)
                     / unbounded_ratio(deep, cells=1))
    assert m.registers_short(deep, 14, None) == max(0, need - 255)
    assert m.predict(deep).gflops > 0
    # 1024 threads: 64 registers, and bT 16 needs more unspilled (3 x 16 + 20 = 68)
    wide = make_plan(j2d5pt, bt=16, bs=(1024,), sl=256)
    assert m.thread_registers(wide, 16, None) == 64
    assert occupancy(wide, m.gpu, 16, 255).blocks_per_sm == 0  # 255 x 1024 > 64K
    assert m.registers_short(wide, 16, None) == spill_free_registers(wide, 16) - 64 > 0
    assert m.registers_short(wide, 16, None) == m.registers_short(wide, 16, 64)
    # the paper's terms know no spills and take the estimate
    paper = Model(j2d5pt, "P100", benchmark_grid(j2d5pt, 4096), 100)
    assert paper.registers_short(deep, 14, None) == 0
    assert paper.thread_registers(deep, 14, None) is None


def test_rank_weighs_register_budgets_where_issue_is_modelled(j2d5pt):
    grid = benchmark_grid(j2d5pt, 4096)
    plans = [make_plan(j2d5pt, bt=bt, bs=(256,), sl=256) for bt in (2, 8, 14)]
    hopper = Model(j2d5pt, "H200", grid, 100)
    assert hopper.budgets(plans[0]) == (None,)  # estimate 2*3 + 2 + 20 = 28: nothing below
    assert hopper.budgets(plans[2]) == (None, 32, 64)  # 14*3 + 14 + 20 = 76
    for p in hopper.rank(plans):
        alternatives = [hopper.predict(p.plan, b).seconds for b in hopper.budgets(p.plan)]
        assert p.seconds == min(alternatives)
        assert p.registers in hopper.budgets(p.plan)
    assert all(p.registers is None for p in Model(j2d5pt, "P100", grid, 100).rank(plans))
    assert Model(j2d5pt, "P100", grid, 100).budgets(plans[2]) == (None,)


def test_hand_case_stream_division(star2d):
    # As above with sl=2: stream blocks store planes [1,3) and [3,4).
    #   block 0: BlockRanges.of(1, 3, 1, 3, 2, 1): base 0, lo 1, hi 3; loads local 0..4
    #     (3 interior, 2 boundary); level 1: 0..3 (3 + 1); level 2: 1..2.
    #   block 1: BlockRanges.of(3, 4, 1, 3, 2, 1): base 1, lo 0, hi 2; loads local 0..3
    #     (3 interior, local 3 = plane 4 boundary); level 1: 1..3 (2 + 1); level 2: 2.
    dims = (DimExtent(1, 3, 5), DimExtent(1, 10, 12))
    assert stream_counts(dims[0], 2, 2, 1) == (2, (6, 5, 3), (3, 2, 0))
    c = predict(star2d, plan2d(2, 8, sl=2), V100, dims, 4).launches[0]
    assert c.levels[1] == ThreadCounts(out_of_bound=7 * 4, boundary=5 * 2 + 2 * 20,
                                       redundant=5 * 4, valid=5 * 14)
    assert c.levels[2] == ThreadCounts(12, 6, 24, 30)
    assert c.gm_reads == 9 * 20 and c.gm_writes == 30
    assert c.blocks == 3 * 2 and c.stream_blocks == 2


# --------------------------------------------------------------------------- cross-checks


@given(data=st.data())
def test_no_unbounded_plan_is_refused_for_its_registers_on_hopper(data, j2d5pt):
    """ptxas builds any plan within its launch bounds (spilling the rest), so where the
    model weighs instruction issue an unbounded plan's registers never keep it off an SM:
    at most the launch bounds' limit, and placed whenever its threads and shared memory
    fit; the spills it is charged are those of a budget at that limit."""
    from an5dpy.perf.counts import occupancy
    bt = data.draw(st.integers(1, 16))
    cells = data.draw(st.sampled_from((1, 2, 4)))
    b = data.draw(st.sampled_from((64, 128, 256, 512, 1024, 2048)))
    dtype = data.draw(st.sampled_from(("float", "double")))
    try:
        plan = make_plan(j2d5pt, bt=bt, bs=(b,), sl=256, coarsen=cells, dtype=dtype)
    except UsageError:
        return  # a plan make_plan refuses (too many registers by the estimate, or bs)
    m = Model(j2d5pt, "H200", benchmark_grid(j2d5pt, 2048), 10)
    limit = budget_register_limit(None, plan.nthreads)
    regs = m.thread_registers(plan, bt, None)
    assert regs <= limit
    occ = occupancy(plan, m.gpu, bt, regs)
    assert occ.blocks_per_sm > 0 or occ.limited_by != "regs"
    for budget in REGISTER_BUDGETS:  # a budget of the same limit spills the same
        if budget_register_limit(budget, plan.nthreads) == limit:
            assert m.registers_short(plan, bt, None) == m.registers_short(plan, bt, budget)


@given(data=st.data())
def test_conservation(data, star2d):
    """Class totals fill every thread x level x plane slot; valid stores are the interior
    cells of every launch; level d produces only interior planes."""
    bt = data.draw(st.integers(1, 5))
    b = 2 * bt + data.draw(st.integers(1, 20))
    ny, nx = data.draw(st.integers(1, 30)), data.draw(st.integers(1, 70))
    sl = data.draw(st.one_of(st.none(), st.integers(1, 12)))
    steps = data.draw(st.integers(0, 13))
    dims = (DimExtent(1, ny, ny + 2), DimExtent(1, nx, nx + 2))
    plan = plan2d(bt, b, sl)
    p = predict(star2d, plan, V100, dims, steps)
    assert p.launch_count == len(launch_degrees(steps, bt))
    for c in p.launches:
        geo = LaunchGeometry(plan, c.degree, dims)
        n, inner, outer = stream_counts_direct(dims[0], sl, c.degree, 1)
        per_plane = math.prod(geo.plane_blocks) * b
        for T in range(c.degree + 1):
            assert c.levels[T].total == (inner[T] + outer[T]) * per_plane
        assert outer[c.degree] == 0
        assert c.gm_writes == c.levels[c.degree].valid == ny * nx
        assert c.gm_reads >= ny * nx
        assert c.blocks == geo.nblocks
    assert sum(c.count * c.gm_writes for c in p.launches) == ny * nx * p.launch_count
    assert p.threads.total == sum(c.count * sum(l.total for l in c.levels[1:])
                                  for c in p.launches)


def test_tiny_grids_and_no_steps(star2d):
    # grids smaller than one block, streams shorter than the pipeline
    dims = (DimExtent(1, 2, 4), DimExtent(1, 3, 5))
    p = predict(star2d, plan2d(4, 32, sl=1), V100, dims, 9)
    assert p.seconds > 0 and p.gflops > 0
    assert all(c.gm_writes == 6 for c in p.launches)
    empty = predict(star2d, plan2d(4, 32), V100, dims, 0)
    assert empty.seconds == 0 and empty.gflops == 0 and empty.launches == ()


# --------------------------------------------------------------------------- model values


def test_steps_scale_time(j2d5pt):
    plan = make_plan(j2d5pt, bt=4, bs=(256,), sl=128)
    grid = benchmark_grid(j2d5pt, 4096)
    a = predict(j2d5pt, plan, "V100", grid, 400)
    b = predict(j2d5pt, plan, "V100", grid, 800)
    assert [(c.degree, c.count) for c in a.launches] == [(4, 100)]
    assert b.seconds == pytest.approx(2 * a.seconds)
    assert b.gflops == pytest.approx(a.gflops)
    assert b.threads == a.threads.scale(2)


def test_launch_costs_cached_per_degree(j2d5pt):
    plan = make_plan(j2d5pt, bt=4, bs=(256,), sl=128)
    m = Model(j2d5pt, "H200", benchmark_grid(j2d5pt, 16384), 1001)
    p = m.predict(plan)
    assert [(c.degree, c.count) for c in p.launches] == [(4, 250), (1, 1)]
    assert m.launch_cost(plan, 4) is m.launch_cost(plan, 4)


def test_j2d5pt_v100_paper_ballpark(j2d5pt):
    # Table 5: j2d5pt float on V100, Tuned bT=10, bS=256, hSN=256: Model 8,144 GFLOP/s
    # (measured 6,160); shared memory is the bottleneck.
    grid = benchmark_grid(j2d5pt, 16384)
    p = predict_config(j2d5pt, "V100", grid, 1000, bt=10, bs=(256,), sl=256)
    assert 0.85 * 8144 < p.gflops < 1.15 * 8144
    assert p.bottleneck == "shared"
    # Sconf-like (bT=4, 128 threads, hSN=128): device memory bound, well below Tuned
    s = predict_config(j2d5pt, "V100", grid, 1000, bt=4, bs=(128,), sl=128)
    assert s.bottleneck == "global"
    assert 2000 < s.gflops < p.gflops
    # the halo-charging variant can only be slower
    h = predict_config(j2d5pt, "V100", grid, 1000, bt=10, bs=(256,), sl=256,
                       halo_computes=True)
    assert h.seconds >= p.seconds


@pytest.mark.parametrize("name, dtype, gpu, bt, bs, sl, paper", [
    # Table 5, Model column (GFLOP/s) for the Tuned configurations
    ("star2d1r", "float", "V100", 10, (256,), 256, 7330),
    ("box2d1r", "float", "V100", 10, (256,), 256, 11327),  # assoc partial sums
    ("star3d1r", "float", "V100", 4, (32, 32), 128, 3498),
    ("box3d1r", "float", "V100", 3, (32, 32), 256, 12811),
    ("j3d27pt", "float", "P100", 3, (32, 32), 256, 7476),
    ("star2d3r", "double", "P100", 7, (256,), 256, 3857),
])
def test_paper_model_column(name, dtype, gpu, bt, bs, sl, paper):
    info = load_benchmark(name, dtype)[1]
    grid = benchmark_grid(info, 16384 if info.ndim == 2 else 512)
    p = predict(info, BlockingPlan(info.ndim, dtype, info.radius, bt, bs, sl, default_mode(info)), gpu,
                grid, 1000)
    assert 0.9 * paper < p.gflops < 1.1 * paper


def test_double_uses_double_peaks():
    info = load_benchmark("j2d5pt", "double")[1]
    grid = benchmark_grid(info, 16384)
    # Table 5: double on V100 with the same Tuned configuration: Model 4,642 GFLOP/s
    p = predict_config(info, "V100", grid, 1000, bt=10, bs=(256,), sl=256)
    assert p.plan.word_bytes == 8
    assert 0.9 * 4642 < p.gflops < 1.1 * 4642


def test_registers_per_degree(j2d5pt):
    # ptxas' counts per kernel, e.g. {4: 56, 1: 32}: 256 threads x 56 -> 4 blocks per SM
    plan = make_plan(j2d5pt, bt=4, bs=(256,), sl=128)
    m = Model(j2d5pt, V100, benchmark_grid(j2d5pt, 2048), 9)  # launches: 4, 4, 1
    p = m.predict(plan, {4: 56, 1: 32})
    occ = {c.degree: c.occupancy for c in p.launches}
    assert occ[4].regs_per_thread == 56 and occ[4].blocks_per_sm == 4
    assert occ[1].regs_per_thread == 32 and occ[1].blocks_per_sm == 8
    # a degree left out keeps the paper's estimate: 1*3 + 1 + 20 = 24 registers
    assert m.predict(plan, {4: 56}).launches[1].occupancy.regs_per_thread == 24


def test_sizes_from_parameters(j2d5pt):
    plan = make_plan(j2d5pt, bt=4, bs=(256,), sl=128)
    env = {"compsize": 512, "dimsize": 514, "timestep": 40}
    a = predict(j2d5pt, plan, "H100", env)
    b = predict(j2d5pt, plan, "H100", benchmark_grid(j2d5pt, 512), 40)
    assert a == b and a.steps == 40 and a.cells == 512 * 512
    with pytest.raises(UsageError, match="missing value"):
        predict(j2d5pt, plan, "H100", {"timestep": 3})


def test_json_is_serialisable(j2d5pt):
    p = predict_config(j2d5pt, "H200", benchmark_grid(j2d5pt, 1024), 10, bt=4, bs=(256,))
    data = json.loads(json.dumps(p.to_json()))
    assert data["bottleneck"] in BOTTLENECKS
    assert data["launches"][0]["levels"][0]["redundant"] == 0


def test_rank_orders_and_skips(j2d5pt):
    m = Model(j2d5pt, "P100", benchmark_grid(j2d5pt, 4096), 100)
    plans = [make_plan(j2d5pt, bt=bt, bs=(b,), sl=256) for bt in (2, 4, 8) for b in (128, 256)]
    plans.append(make_plan(j2d5pt, bt=4, bs=(1024,)))
    ranked = m.rank(plans, regs=128)  # 1024 threads x 128 registers cannot fit
    assert len(ranked) == len(plans) - 1
    assert [p.seconds for p in ranked] == sorted(p.seconds for p in ranked)


# --------------------------------------------------------------------------- command line


def _run(argv, capsys):
    code = cli.run(argv, cli.build_parser())
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_model_json(capsys):
    path = os.path.join(C_INPUTS, "j2d5pt.c")
    code, out, err = _run(["model", path, "--gpu", "V100", "--dtype", "float", "--bt", "10",
                           "--bs", "256", "--sl", "256", "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    for key in ("gflops", "seconds", "bottleneck", "time_comp", "time_sm", "time_gm",
                "eff_alu", "eff_sm", "blocks_per_sm", "threads", "launches", "plan",
                "gpu_spec", "params"):
        assert key in data
    assert data["params"] == {"timestep": 1000, "dimsize": 16386, "compsize": 16384}
    assert data["gpu_spec"]["name"] == "V100"
    assert 0.85 * 8144 < data["gflops"] < 1.15 * 8144


def test_cli_model_text_and_sizes(capsys):
    path = os.path.join(C_INPUTS, "star3d1r.c")
    code, out, _ = _run(["model", path, "--gpu", "NVIDIA H200", "--dtype", "double",
                         "--size", "64", "--steps", "8", "--bs", "32x16"], capsys)
    assert code == 0
    assert "GFLOP/s" in out and "bottleneck" in out and "compsize=64" in out
    assert "valid" in out and "out-of-bound" in out
    code, out, _ = _run(["model", path, "--gpu", "H200", "--dtype", "float", "-P",
                         "compsize=64", "-P", "timestep=8", "--json"], capsys)
    assert code == 0 and json.loads(out)["steps"] == 8


def test_cli_model_shows_the_share_of_cells_per_thread(capsys):
    # CELL_EFFICIENCY is in the predicted time; the report and the JSON say so where it
    # applies (Hopper, more than one cell per thread)
    path = os.path.join(C_INPUTS, "star2d1r.c")
    plan = ["--dtype", "float", "--bt", "7", "--bs", "512", "--sl", "256", "--regs", "96"]
    code, out, _ = _run(["model", path, "--gpu", "H200", *plan, "--coarsen", "2"], capsys)
    assert code == 0
    assert (f"kernels of 2 cells per thread reach {CELL_EFFICIENCY[(2, 2)]:.2f} of the speed"
            in out)
    code, out, _ = _run(["model", path, "--gpu", "H200", *plan, "--coarsen", "2", "--json"],
                        capsys)
    assert json.loads(out)["efficiency"] == CELL_EFFICIENCY[(2, 2)]
    for gpu, cells in (("H200", "1"), ("V100", "2")):
        code, out, _ = _run(["model", path, "--gpu", gpu, *plan, "--coarsen", cells], capsys)
        assert code == 0 and "cells per thread reach" not in out


def test_cli_model_errors(capsys):
    j2d = os.path.join(C_INPUTS, "j2d5pt.c")
    code, _, err = _run(["model", j2d, "--gpu", "GTX480", "--dtype", "float"], capsys)
    assert code == 2 and "H200" in err
    code, _, err = _run(["model", j2d, "--gpu", "V100", "--dtype", "float", "--size", "64",
                         "-P", "compsize=65"], capsys)
    assert code == 2 and "contradicts" in err
    other = os.path.join(HERE, "data", "forms", "scalar_coeffs.c")
    code, _, err = _run(["model", other, "--gpu", "V100", "--size", "64"], capsys)
    assert code == 2 and "-P" in err
    # its coefficients (double a, b) need no values; the sizes do
    code, _, err = _run(["model", other, "--gpu", "V100"], capsys)
    assert code == 2 and "missing value" in err
    code, out, _ = _run(["model", other, "--gpu", "V100", "-P", "n=100", "-P", "T=5",
                         "--bs", "64", "--json"], capsys)
    assert code == 0 and json.loads(out)["cells"] == 98 * 98
    # a plan over the GPU's per-block shared memory (P100: 48 KB)
    box = os.path.join(C_INPUTS, "box3d1r.c")
    code, _, err = _run(["model", box, "--gpu", "P100", "--dtype", "double", "--opt", "none",
                         "--bs", "30x30", "--bt", "1"], capsys)
    # 2 buffers * 3 planes * (30 + 2)^2 padded cells * 8 bytes = 48 KB: fits exactly
    assert code == 0, err
    box2 = os.path.join(C_INPUTS, "box3d2r.c")  # 2 * 5 planes * 1024 * 8 = 80 KB
    code, _, err = _run(["model", box2, "--gpu", "P100", "--dtype", "double", "--opt", "none",
                         "--bs", "32x32", "--bt", "1"], capsys)
    assert code == 2 and "shared memory" in err


# --------------------------------------------------------------------------- several statements


def two_field_grid(n: int) -> tuple[DimExtent, ...]:
    return (DimExtent(1, n, n + 2), DimExtent(1, n, n + 2))


@pytest.mark.parametrize("gpu", ("V100", "H200"))
@pytest.mark.parametrize("opt", ("nondiag", "none"))
def test_two_identical_decoupled_fields_count_twice_the_work_of_one(gpu, opt):
    one, two = star_fields(["u"]), star_fields(["u", "v"])
    dims = two_field_grid(300)
    p1 = predict(one, make_plan(one, bt=3, bs=(128,), sl=64, opt=opt), gpu, dims, 7, regs=64)
    p2 = predict(two, make_plan(two, bt=3, bs=(128,), sl=64, opt=opt), gpu, dims, 7, regs=64)
    assert p2.threads == p1.threads and p2.steps == p1.steps
    for a, b in zip(p1.launches, p2.launches):
        assert (b.degree, b.count, b.levels) == (a.degree, a.count, a.levels)
        assert (b.gm_reads, b.gm_writes) == (2 * a.gm_reads, 2 * a.gm_writes)
        assert (b.sm_reads, b.sm_writes) == (2 * a.sm_reads, 2 * a.sm_writes)
        assert (b.gm_bytes, b.sm_bytes, b.flops) == (2 * a.gm_bytes, 2 * a.sm_bytes,
                                                     2 * a.flops)
        assert b.time_comp == pytest.approx(2 * a.time_comp)
        assert b.time_gm == pytest.approx(2 * a.time_gm)
    assert p2.useful_flops == 2 * p1.useful_flops
    assert p2.field_gm_bytes == p1.gm_bytes
    # each field's plane registers: the second field's ring doubles them
    assert p2.plan.registers_per_thread() == 2 * p1.plan.registers_per_thread()


def test_each_level_charges_its_own_sub_step():
    info = load_multi("fdtd_2d")  # sub-step 1: ey, ex (6 FLOPs); sub-step 2: hz (5)
    dims = (DimExtent(1, 40, 42), DimExtent(1, 50, 52))
    plan = make_plan(info, bt=2, bs=(32,), sl=16)  # 4 levels: sub-steps 1, 2, 1, 2
    model = Model(info, "V100", dims, 4)
    (c,) = model.predict(plan).launches
    assert (c.degree, c.count) == (4, 2)
    valid = [lv.valid for lv in c.levels]
    assert c.flops == 6 * (valid[1] + valid[3]) + 5 * (valid[2] + valid[4])
    assert c.sm_reads == 1 * sum(valid[1:])  # one shared read in either sub-step
    assert c.sm_writes == sum(lv.total for lv in c.levels[1:])  # one staged plane each
    # level 0 loads and level d stores all three fields
    assert c.gm_reads == 3 * c.levels[0].in_array and c.gm_writes == 3 * valid[4]
    work, peak = model.work(plan), V100.peak_gflops("float") * 1e9
    assert work[0].mix.eff_alu != work[1].mix.eff_alu  # each sub-step at its own
    assert c.time_comp == pytest.approx(
        (6 * (valid[1] + valid[3])) / (peak * work[0].mix.eff_alu)
        + (5 * (valid[2] + valid[4])) / (peak * work[1].mix.eff_alu))
    # halo threads compute their sub-step too where they are charged
    halo = Model(info, "V100", dims, 4, halo_computes=True).predict(plan).launches[0]
    comp = [lv.computing for lv in halo.levels]
    assert halo.flops == 6 * (comp[1] + comp[3]) + 5 * (comp[2] + comp[4])
    # the time step's useful FLOPs: both sub-steps
    assert model.predict(plan).useful_flops == 40 * 50 * 4 * 11


def test_issue_term_per_sub_step():
    info = load_multi("fdtd_2d")
    dims = (DimExtent(1, 40, 42), DimExtent(1, 50, 52))
    plan = make_plan(info, bt=2, bs=(32,), sl=16)
    m = Model(info, "H200", dims, 4)
    first, second = m.work(plan)
    # the sub-step's statements' mixes, 1 shared read, 1 staged plane, the barrier, the
    # overheads (none per level with the interior phase; the streaming step's over the
    # launch's 4 levels) and, for the second field it computes, its boundary select
    assert plan.interior_phase
    overhead = INTERIOR_LEVEL_OVERHEAD + STEP_OVERHEAD[2] / 4
    assert m.level_instructions(plan, 4, None, 0) == (
        first.mix.instructions + 1 + 1 + 1 + overhead + FIELD_SELECT_INSTRUCTIONS)
    assert m.level_instructions(plan, 4, None, 1) == (
        second.mix.instructions + 1 + 1 + 1 + overhead)
    # the statements of a sub-step are independent: the longest chain counts
    assert m.level_latency(plan, 0) == DEPENDENT_LATENCY["float"] * max(
        mix.instructions for mix in first.mixes)
    assert m.level_latency(plan, 0) < DEPENDENT_LATENCY["float"] * first.mix.instructions


def test_cli_model_reports_fields_and_sub_steps(capsys):
    path = os.path.join(HERE, "data", "multi", "fdtd_2d.c")
    args = ["model", path, "--gpu", "H100", "-P", "nx=1026", "-P", "ny=1026", "-P", "tmax=100",
            "--bt", "3", "--bs", "256", "--sl", "128"]
    code, out, err = _run(args, capsys)
    assert code == 0, err
    assert "3 fields (ey, ex, hz; each " in out
    assert "2 sub-steps per time step (bt=3 steps = 6 levels per launch)" in out
    assert "sub-step 1 (level 1 of each step): computes ey, ex; 6 FLOP/cell" in out
    assert "sub-step 2 (level 2 of each step): computes hz; 5 FLOP/cell" in out
    assert "in shared memory: hz (1 plane)" in out
    code, out, err = _run([*args, "--json"], capsys)
    data = json.loads(out)
    assert data["fields"] == ["ey", "ex", "hz"]
    assert [(s["writes"], s["flops_per_cell"], s["staged"]) for s in data["substeps"]] == [
        (["ey", "ex"], 6, ["hz"]), (["hz"], 5, ["ex"])]
    # 100 steps in launches of bt = 3 steps (33, then 1 for the parity): kernels of 6 and
    # 2 levels
    assert [(c["degree"], c["count"]) for c in data["launches"]] == [(6, 33), (2, 1)]
    # the one-statement form's report has no such lines
    code, out, _ = _run(["model", os.path.join(C_INPUTS, "j2d5pt.c"), "--gpu", "H100",
                         "--dtype", "float", "--size", "64", "--steps", "4"], capsys)
    assert code == 0 and "sub-step" not in out and "fields" not in out


def test_warp_shuffles_charge_no_barrier_and_no_shared_store(star2d):
    from an5dpy.perf.counts import occupancy
    from an5dpy.perf.gpus import get_gpu
    from an5dpy.perf.model import barriers_per_level
    grid = benchmark_grid(star2d, 4096)
    m = Model(star2d, "H200", grid, 100)
    level = make_plan(star2d, bt=4, bs=(64,), sl=256, coarsen=2)
    shuffle = make_plan(star2d, bt=4, bs=(64,), sl=256, coarsen=2, barriers="shuffle")
    assert barriers_per_level(shuffle, 4) == 0 and barriers_per_level(level, 4) == 0.5
    assert m.launch_cost(shuffle, 4, 64).terms.barrier_warps == 0
    # per level op, the barrier and the shared store fewer
    assert (m.spill_free_instructions(level, 4) - m.spill_free_instructions(shuffle, 4)
            == pytest.approx(0.5 + m.work(level)[0].smem_planes))
    # no shared memory: blocks per SM are capped by threads, registers or blocks only
    occ = occupancy(shuffle, get_gpu("H200"), 4, 32)
    assert occ.smem_per_block == 0 and occ.limited_by != "smem" and occ.blocks_per_sm == 32


def test_a_coarsened_plans_work_is_the_same_whatever_was_asked_before(star2d):
    """Model.work is cached per kind of plan: a warp-shuffle plan and a cell-major plan
    of the same cells count their row neighbours alike (those the thread holds are
    registers), and neither borrows the other's count from the cache."""
    from an5dpy.perf.counts import coarsened_shared_traffic
    grid = benchmark_grid(star2d, 4096)
    level = make_plan(star2d, bt=4, bs=(64,), sl=256, coarsen=2)
    shuffle = make_plan(star2d, bt=4, bs=(64,), sl=256, coarsen=2, barriers="shuffle")
    one = make_plan(star2d, bt=4, bs=(64,), sl=256)
    first = Model(star2d, "H200", grid, 100)
    works = {p: first.work(p) for p in (level, shuffle, one)}
    second = Model(star2d, "H200", grid, 100)
    assert {p: second.work(p) for p in (one, shuffle, level)} == works
    for p in (level, shuffle, one):
        assert (works[p][0].smem_planes, works[p][0].smem_reads) == \
            coarsened_shared_traffic(star2d, p)
    # 2 cells of radius 1: each loads one row neighbour and holds the other
    assert works[shuffle][0].smem_reads == works[level][0].smem_reads \
        == works[one][0].smem_reads - 1
