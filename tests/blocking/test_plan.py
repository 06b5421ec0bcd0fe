"""Blocking plans: validation, geometry, and the launch plan (paper section 4.3)."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, strategies as st

from an5dpy.errors import OptionError, UsageError
from an5dpy.blocking.plan import (DimExtent, LaunchGeometry, Mode, budget_min_blocks,
                         budget_register_limit, degrees_needed, format_block_size,
                         launch_degrees, launch_plan, make_plan, parse_block_size)
from ir_builders import StencilSpec, box_offsets, build_program, star_offsets
from an5dpy.analysis import analyze


def info_of(offsets, dtype="float"):
    return analyze(build_program(StencilSpec(offsets=offsets, dtype=dtype)))


STAR2 = info_of(star_offsets(2, 1))
BOX2 = info_of(box_offsets(2, 1))
STAR3 = info_of(star_offsets(3, 1))


@given(steps=st.integers(0, 400), bt=st.integers(1, 16))
def test_launch_degrees_advance_every_step_and_land_in_the_c_buffer(steps, bt):
    degrees = launch_degrees(steps, bt)
    assert sum(degrees) == steps
    assert all(1 <= d <= bt for d in degrees)
    assert len(degrees) % 2 == steps % 2  # one buffer flip per launch
    fewest = -(-steps // bt)
    assert len(degrees) in (fewest, fewest + 1)
    assert list(degrees) == sorted(degrees, reverse=True)  # full launches first


@given(steps=st.integers(0, 300), bt=st.integers(1, 16), start=st.integers(0, 1))
def test_launch_sources_alternate_and_boundary_parity_follows_time(steps, bt, start):
    time = 0
    src = start
    for launch in launch_plan(steps, bt, start):
        assert launch.source == src
        assert launch.boundary_even == (start + time) % 2
        src ^= 1
        time += launch.degree
    assert src == start ^ (steps % 2)


def test_launch_plan_examples():
    assert launch_degrees(1000, 4) == (4,) * 250
    assert launch_degrees(1000, 3) == (3,) * 333 + (1,)
    assert launch_degrees(4, 4) == (3, 1)  # one launch of 4 would leave it in the wrong buffer
    assert launch_degrees(5, 3) == (3, 1, 1)
    assert launch_degrees(0, 7) == ()
    assert degrees_needed(4) == (1, 2, 3, 4)
    assert degrees_needed(1) == (1,)


def test_block_size_text_is_contiguous_dimension_first():
    assert parse_block_size("64x16", 3) == (16, 64)
    assert format_block_size((16, 64)) == "64x16"
    assert parse_block_size("128", 2) == (128,)
    for bad, nd in (("32", 3), ("32x32", 2), ("0", 2), ("ax3", 3)):
        with pytest.raises(UsageError):
            parse_block_size(bad, nd)


def test_plan_quantities_follow_table_1():
    plan = make_plan(STAR2, bt=4, bs=(128,), sl=128)
    assert plan.mode is Mode.NONDIAG
    assert plan.halo() == (4,)
    assert plan.compute_region() == (120,)
    assert plan.compute_region(1) == (126,)
    assert plan.ring == 3
    assert plan.registers_per_thread() == 12
    assert plan.smem_words == 2 * (128 + 2)  # double buffer of n_thr words (+ padding r)
    none = make_plan(STAR2, bt=4, bs=(128,), opt="none")
    assert none.smem_words == 2 * (128 + 2) * 3  # 2 * n_thr * (2r + 1)
    assoc = make_plan(BOX2, bt=2, bs=(64,))
    assert assoc.mode is Mode.ASSOC and assoc.registers_per_thread() == 1 + 2 * 3
    dbl = make_plan(info_of(star_offsets(2, 1), "double"), bt=4, bs=(128,))
    assert dbl.register_estimate() == 2 * 4 * 3 + 4 + 30
    assert plan.register_estimate() == 4 * 3 + 4 + 20


@pytest.mark.parametrize("kwargs, message", [
    (dict(bt=4, bs=(8,)), "no compute region"),
    (dict(bt=0, bs=(8,)), "at least 1"),
    (dict(bt=1, bs=(2048,)), "threads per block"),
    (dict(bt=1, bs=(64, 64)), "needs 1 block size"),
    (dict(bt=1, bs=(64,), sl=0), "at least 1"),
    (dict(bt=1, bs=(64,), opt="fast"), "choose one of"),
])
def test_impossible_plans_are_rejected(kwargs, message):
    with pytest.raises(UsageError, match=message):
        make_plan(STAR2, **kwargs)


def test_modes_must_fit_the_stencil():
    with pytest.raises(UsageError, match="diagonal-access-free"):
        make_plan(BOX2, bt=1, bs=(64,), opt="nondiag")
    gradient = analyze(build_program(StencilSpec(offsets=star_offsets(2, 1))))
    assert make_plan(gradient, bt=1, bs=(64,), opt="none").mode is Mode.NONE


def test_resource_limits_are_enforced():
    wide = info_of(star_offsets(2, 7), "double")
    with pytest.raises(UsageError, match="shared memory"):
        make_plan(wide, bt=1, bs=(1024,), opt="none")  # 2 * 15 planes * 1024 * 8 bytes
    with pytest.raises(UsageError, match="registers"):
        make_plan(info_of(star_offsets(2, 4), "double"), bt=16, bs=(512,))


def test_launch_geometry_counts_blocks():
    plan = make_plan(STAR3, bt=2, bs=(8, 16), sl=5)
    dims = (DimExtent(1, 12, 14), DimExtent(1, 20, 22), DimExtent(1, 30, 32))
    geo = LaunchGeometry(plan, 2, dims)
    assert plan.compute_region(2) == (4, 12)
    assert geo.plane_blocks == (5, 3)
    assert geo.stream_blocks == 3
    assert geo.nblocks == 45
    assert geo.stream_block_range(2) == (11, 13)


@given(st.sampled_from([(128,), (256,), (16, 16), (16, 32), (32, 32), (16, 64), (8, 24)]),
       st.integers(1, 4), st.integers(1, 8))
def test_active_warp_fraction_counts_warps_with_a_thread_in_the_window(bs, r, level):
    import math
    from an5dpy.blocking.plan import active_warp_fraction
    radius = (r,) * len(bs)
    nthreads = math.prod(bs)
    active = set()
    for linear in range(nthreads):  # thread -> in-plane index, contiguous dimension last
        index, rest = [], linear
        for b in reversed(bs):
            index.append(rest % b)
            rest //= b
        index.reverse()
        if all(level * r <= i < b - level * r for i, b in zip(index, bs)):
            active.add(linear // 32)
    assert active_warp_fraction(bs, radius, level) == len(active) / math.ceil(nthreads / 32)


def test_active_warp_fraction_examples():
    from an5dpy.blocking.plan import active_warp_fraction
    # 32x32, radius 1: rows 0 and 31 are whole idle warps at level 1
    assert active_warp_fraction((32, 32), (1, 1), 1) == 30 / 32
    # 2D blocks: one window of contiguous threads; 256 threads, level 1 leaves none idle
    assert active_warp_fraction((256,), (1,), 1) == 1.0
    # a window that is empty: no warp computes
    assert active_warp_fraction((16, 16), (4, 4), 2) == 0.0


def test_budget_register_limit_follows_launch_bounds():
    # a budget becomes __launch_bounds__(threads, blocks): ptxas may then use what the
    # blocks leave a thread, in steps of 8 (96 with 512 threads asks for 1 block: 128)
    assert budget_register_limit(64, 512) == 64 and budget_register_limit(96, 512) == 128
    assert budget_register_limit(96, 128) == 96  # 5 blocks: 102 -> 96
    assert budget_register_limit(255, 128) == 255  # 2 blocks would leave 256: capped
    assert budget_min_blocks(96, 512) == 1 and budget_min_blocks(32, 256) == 8
    # a block of 32 threads (a coarsened plan) cannot ask for the 64 blocks a budget of
    # 32 would need: an SM holds 32, which leave each thread 64 registers
    assert budget_min_blocks(32, 32) == 32 and budget_register_limit(32, 32) == 64
    # without a budget the launch bounds name the threads alone: one block must fit (the
    # unbounded kernels of artifact/H200 never exceed 64 registers with 1024 threads, 128
    # with 512)
    assert budget_register_limit(None, 1024) == 64 and budget_register_limit(None, 512) == 128
    assert budget_register_limit(None, 384) == 168  # 170 -> 168
    assert budget_register_limit(None, 256) == budget_register_limit(None, 32) == 255


def test_mode_is_settled_once_when_the_plan_is_made():
    for opt in (None, "auto", "", Mode.NONDIAG, "nondiag"):
        assert make_plan(STAR2, bt=1, bs=(64,), opt=opt).mode is Mode.NONDIAG
    assert make_plan(BOX2, bt=1, bs=(64,)).mode is Mode.ASSOC
    plan = make_plan(STAR2, bt=2, bs=(64,), opt="none")
    assert "opt=none" in plan.describe() and plan.to_json()["opt"] == "none"
    with pytest.raises(UsageError, match="choose one of nondiag, assoc, none"):
        make_plan(STAR2, bt=1, bs=(64,), opt="diag")


def test_coarsening_divides_threads_and_multiplies_registers():
    one = make_plan(STAR3, 3, bs=(32, 32), opt="nondiag")
    four = make_plan(STAR3, 3, bs=(32, 32), opt="nondiag", coarsen=4)
    assert four.threads == (8, 32) and four.thread_block == (32, 8)
    assert four.nthreads * 4 == one.nthreads
    assert four.registers_per_thread() == 4 * one.registers_per_thread()
    assert four.smem_bytes == one.smem_bytes  # the block's cells are the same
    assert four.compute_region() == one.compute_region() and four.halo() == one.halo()
    assert "coarsen=4" in four.describe() and "coarsen" not in one.describe()
    assert four.to_json()["coarsen"] == 4 and four.to_json()["threads"] == [8, 32]


def test_coarsening_lets_a_block_hold_more_cells_than_threads():
    plan = make_plan(STAR3, 2, bs=(64, 32), opt="nondiag", coarsen=2)
    assert plan.nthreads == 1024 and plan.compute_region() == (60, 28)
    with pytest.raises(UsageError, match="1024"):
        make_plan(STAR3, 2, bs=(64, 32), opt="nondiag")


@pytest.mark.parametrize("coarsen, bs, match", [(3, (30, 32), "one of 1, 2, 4, 8"),
                                                (4, (30, 32), "multiple of the cells"),
                                                (0, (32, 32), "one of")])
def test_coarsening_is_refused_where_it_cannot_divide_the_block(coarsen, bs, match):
    with pytest.raises(UsageError, match=match):
        make_plan(STAR3, 2, bs=bs, opt="nondiag", coarsen=coarsen)


@given(level=st.integers(1, 4), coarsen=st.sampled_from((1, 2, 4, 8)),
       rows=st.integers(1, 8), cols=st.sampled_from((8, 16, 32, 48)))
def test_active_warp_fraction_counts_each_threads_cells(level, coarsen, rows, cols):
    """Against the kernel's mapping written out: thread t of dimension 1 holds rows
    t*c .. t*c+c-1; a (warp, cell) is active where one of its cells is in the window."""
    from an5dpy.blocking.plan import active_warp_fraction
    bs, radius = (rows * coarsen * 2, cols), (1, 1)
    threads = (bs[0] // coarsen, cols)
    active, total = set(), set()
    for t1 in range(threads[0]):
        for t2 in range(cols):
            warp = (t1 * cols + t2) // 32
            for m in range(coarsen):
                y = t1 * coarsen + m
                total.add((m, warp))
                if level <= y < bs[0] - level and level <= t2 < cols - level:
                    active.add((m, warp))
    assert active_warp_fraction(bs, radius, level, coarsen) == len(active) / len(total)


@pytest.mark.parametrize("path, opt, match", [
    ("box2d1r.c", "none", "needs mode nondiag"),
    ("star2d1r.c", "assoc", "needs mode nondiag"),
])
def test_one_barrier_per_step_is_refused_outside_mode_nondiag(path, opt, match):
    from an5dpy.driver import load
    from paths import C_INPUTS
    info = load(os.path.join(C_INPUTS, path), (("SB_TYPE", "float"),))[1]
    with pytest.raises(OptionError, match=match) as e:
        make_plan(info, 2, bs=(64,), opt=opt, barriers="step")
    assert ("barriers", "step") in e.value.settings
    with pytest.raises(OptionError, match="choose one of level, step"):
        make_plan(info, 2, bs=(64,), opt=opt, barriers="block")


def test_one_barrier_per_step_is_refused_for_older_levels_shared():
    from an5dpy.driver import load
    from paths import C_INPUTS
    info = load(os.path.join(C_INPUTS, "dampedwave2d.c"), (("SB_TYPE", "float"),))[1]
    with pytest.raises(OptionError, match="older time levels at in-plane neighbours"):
        make_plan(info, 2, bs=(64,), opt="nondiag", barriers="step")


def test_one_barrier_per_step_takes_a_time_step_of_several_statements_in_mode_nondiag():
    """fdtd2d's two sub-steps are two levels a step: each level has its two buffers (of
    every field's region); mode none still shares the planes a step computes."""
    from an5dpy.driver import load
    from paths import C_INPUTS
    info = load(os.path.join(C_INPUTS, "fdtd2d.c"), (("SB_TYPE", "float"),))[1]
    plan = make_plan(info, 2, bs=(64,), opt="nondiag", barriers="step")
    assert plan.coupled and plan.smem_buffers == 2 * plan.depth == 8
    with pytest.raises(OptionError, match="needs mode nondiag") as e:
        make_plan(info, 2, bs=(64,), opt="none", barriers="step")
    assert ("barriers", "step") in e.value.settings


def test_one_barrier_per_step_takes_older_levels_read_at_the_cell():
    # wave2d reads level t-1 at the cell only: a register of the thread, no shared plane
    from an5dpy.driver import load
    from paths import C_INPUTS
    info = load(os.path.join(C_INPUTS, "wave2d.c"), (("SB_TYPE", "float"),))[1]
    plan = make_plan(info, 2, bs=(64,), opt="nondiag", barriers="step")
    assert plan.levels.older and not plan.levels.shared_older


def test_one_barrier_per_step_shows_in_the_plan():
    plan = make_plan(STAR3, 2, bs=(32, 32), opt="nondiag", barriers="step")
    assert "barriers=step" in plan.describe() and plan.to_json()["barriers"] == "step"
    assert "barriers" not in make_plan(STAR3, 2, bs=(32, 32), opt="nondiag").describe()


def test_computing_at_idle_warps_shows_in_the_plan_and_lets_every_warp_evaluate():
    from an5dpy.blocking.plan import IdleWarps, active_warp_fraction, computing_warp_fraction
    skip = make_plan(STAR3, 3, bs=(32, 32), opt="nondiag")
    compute = make_plan(STAR3, 3, bs=(32, 32), opt="nondiag", idle="compute")
    assert skip.idle is IdleWarps.SKIP and compute.idle is IdleWarps.COMPUTE
    assert "idle" not in skip.describe() and skip.to_json()["idle"] == "skip"
    assert "idle=compute" in compute.describe() and compute.to_json()["idle"] == "compute"
    for level in (1, 2, 3):
        active = active_warp_fraction(skip.bs, skip.plane_radius, level, skip.coarsen)
        assert computing_warp_fraction(skip, level) == active < 1
        assert computing_warp_fraction(compute, level) == 1.0
    # warp shuffles never branch, whatever the option says
    shuffle = make_plan(STAR2, 3, bs=(128,), opt="nondiag", coarsen=4, barriers="shuffle")
    assert all(computing_warp_fraction(shuffle, level) == 1.0 for level in (1, 2, 3))
    with pytest.raises(OptionError, match="choose one of skip, compute") as e:
        make_plan(STAR3, 3, bs=(32, 32), idle="never")
    assert ("idle", "never") in e.value.settings


@pytest.mark.parametrize("name, bt, bs, opt, coarsen, match", [
    ("star3d1r.c", 2, (64, 8), "nondiag", 2, "need a 2D stencil"),
    ("box2d1r.c", 2, (64,), "assoc", 2, "need mode nondiag"),
    ("star2d1r.c", 2, (32,), "nondiag", 1, "need 2 or more cells per thread"),
    ("star2d1r.c", 2, (128,), "nondiag", 2, "need a block of one warp: bs = 32 x coarsen = 64"),
    ("dampedwave2d.c", 2, (64,), "nondiag", 2, "older levels at in-plane neighbours"),
    ("fdtd2d.c", 2, (64,), "nondiag", 1, "several statements"),
])
def test_warp_shuffles_are_refused_where_shared_memory_is_needed(name, bt, bs, opt, coarsen,
                                                                 match):
    from an5dpy.driver import load
    from paths import C_INPUTS
    info = load(os.path.join(C_INPUTS, name), (("SB_TYPE", "float"),))[1]
    with pytest.raises(OptionError, match=match) as e:
        make_plan(info, bt, bs=bs, opt=opt, coarsen=coarsen, barriers="shuffle")
    assert ("barriers", "shuffle") in e.value.settings


def test_warp_shuffles_show_in_the_plan_and_need_no_shared_memory():
    plan = make_plan(STAR2, 3, bs=(128,), opt="nondiag", coarsen=4, barriers="shuffle")
    assert "barriers=shuffle" in plan.describe() and plan.to_json()["barriers"] == "shuffle"
    assert plan.threads == (32,) and plan.smem_buffers == 0 and plan.smem_bytes == 0


STAR3R4 = info_of(star_offsets(3, 4))


def test_a_loaded_halo_keeps_the_tile_and_gives_threads_only_to_the_compute_region():
    from an5dpy.blocking.plan import HaloCells
    threads = make_plan(STAR3R4, 1, bs=(24, 72), opt="nondiag", coarsen=4)
    loaded = make_plan(STAR3R4, 1, bs=(24, 72), opt="nondiag", coarsen=4, halo="loaded")
    assert loaded.halo_cells is HaloCells.LOADED and loaded.halo_loaded
    assert not threads.halo_loaded and "halo" not in threads.describe()
    # the same tile, blocks and compute region; threads: the compute region, 4 rows each
    assert loaded.compute_region() == threads.compute_region() == (16, 64)
    assert threads.threads == (6, 72) and loaded.threads == (4, 64)
    assert loaded.thread_block == (64, 4) and loaded.nthreads == 256
    # two planes of the tile
    assert loaded.smem_bytes == 2 * 24 * 72 * 4
    assert loaded.describe() == ("bt=1 bs=72x24 sl=off coarsen=4 halo=loaded opt=nondiag "
                                 "dtype=float")
    assert loaded.to_json()["halo_cells"] == "loaded"
    assert threads.to_json()["halo_cells"] == "threads"
    dims = (DimExtent(4, 515, 520),) * 3
    assert (LaunchGeometry(loaded, 1, dims).nblocks
            == LaunchGeometry(threads, 1, dims).nblocks == 8 * 32 * 1)
    # the halo (24 x 72 - 16 x 64 = 704 cells) in rounds of the 256 threads: 3 each; the
    # registers: each cell's column of 9 planes and its next plane, and a value per round
    assert loaded.halo_loads_per_thread == 3 and threads.halo_loads_per_thread == 0
    assert loaded.registers_per_thread() == 10 * 4 + 3
    exact = make_plan(STAR3R4, 1, bs=(16, 40), opt="nondiag", coarsen=2, halo="loaded")
    assert exact.nthreads == 4 * 32 and exact.halo_loads_per_thread == (640 - 256) // 128


@pytest.mark.parametrize("name, changes, match", [
    ("star3d4r.c", {"bt": 2, "bs": (32, 80)}, "needs bT 1"),
    ("star2d1r.c", {"bs": (128,)}, "needs a 3D stencil"),
    ("box3d1r.c", {"opt": "none"}, "needs mode nondiag or assoc"),
    ("acousticvp3d.c", {}, "several statements"),
    ("star3d1r.c", {"barriers": "step"}, "leave barriers and idle at their defaults"),
    ("star3d1r.c", {"idle": "compute"}, "leave barriers and idle at their defaults"),
    ("star3d1r.c", {"coarsen": 4, "bs": (16, 32)}, r"compute region's outermost side \(14\)"),
    ("star3d1r.c", {"bs": (34, 200)}, "static shared memory"),
])
def test_a_loaded_halo_is_refused_where_its_kernel_does_not_hold(name, changes, match):
    from an5dpy.driver import load
    from paths import C_INPUTS
    info = load(os.path.join(C_INPUTS, name), (("SB_TYPE", "float"),))[1]
    settings = {"bt": 1, "bs": (18, 34) if info.ndim == 3 else (128,), "opt": info.opt,
                **changes}
    with pytest.raises(OptionError, match=match) as e:
        make_plan(info, settings.pop("bt"), halo="loaded", **settings)
    assert ("halo", "loaded") in e.value.settings
    with pytest.raises(OptionError, match="choose one of threads, loaded"):
        make_plan(info, 1, halo="both")


def test_a_loaded_halo_takes_rotating_programs_in_mode_nondiag(tmp_path):
    """A rotation through three buffers, and older levels and read-only arrays read at the
    cell (the seismic form): mode nondiag's kernel reads their boundary cells from the
    boundary buffer; an older level read off the cell, or a level before t-1, is
    refused."""
    from an5dpy.driver import load
    from paths import REPO
    forms = os.path.join(REPO, "tests", "data", "forms")
    seismic = load(os.path.join(forms, "seismic3d.c"), ())[1]
    assert seismic.coefficients and seismic.history == 2
    assert make_plan(seismic, 1, bs=(14, 36), coarsen=2, halo="loaded").halo_loaded
    with pytest.raises(OptionError, match="older time level away from the cell"):
        make_plan(load(os.path.join(forms, "old_levels3d.c"), ())[1], 1, bs=(10, 34),
                  halo="loaded")
    path = tmp_path / "rot3d.c"
    path.write_text(
        "#define N 20\n"
        "void f(float A[3][N][N][N], int T)\n{\n#pragma scop\n"
        "  for (int t = 0; t < T; t++)\n"
        "    for (int i = 1; i < N - 1; i++)\n"
        "      for (int j = 1; j < N - 1; j++)\n"
        "        for (int k = 1; k < N - 1; k++)\n"
        "          A[(t + 1) % 3][i][j][k] = 0.2f * (A[t % 3][i - 1][j][k]\n"
        "            + A[t % 3][i + 1][j][k] + A[t % 3][i][j - 1][k] + A[t % 3][i][j + 1][k]\n"
        "            + A[t % 3][i][j][k]);\n"
        "#pragma endscop\n}\n")
    info = load(str(path), ())[1]
    assert make_plan(info, 1, bs=(10, 34)).levels.rotating
    assert make_plan(info, 1, bs=(10, 34), halo="loaded").halo_loaded
    # level t-2 at the cell (four buffers): refused, its pointer not checked on a GPU
    older = tmp_path / "ab3d.c"
    older.write_text(path.read_text().replace("float A[3]", "float A[4]").replace(
        "% 3][i][j][k] = 0.2f * (", "% 4][i][j][k] = 0.1f * A[(t + 2) % 4][i][j][k] + 0.2f * (")
        .replace("% 3]", "% 4]"))
    with pytest.raises(OptionError, match="levels before t-1"):
        make_plan(load(str(older), ())[1], 1, bs=(10, 34), halo="loaded")


def test_a_loaded_halo_is_refused_where_the_stencil_reads_no_in_plane_neighbour():
    """Reads along the streaming dimension only: no halo to load (and no halo threads)."""
    only_z = info_of(((-1, 0, 0), (0, 0, 0), (1, 0, 0)))
    assert make_plan(only_z, 1, bs=(8, 32)).compute_region() == (8, 32)
    with pytest.raises(OptionError, match="needs an in-plane halo"):
        make_plan(only_z, 1, bs=(8, 32), halo="loaded")


def test_a_loaded_halo_in_mode_assoc_takes_one_sided_stencils():
    """Mode assoc's loaded kernel adds planes from r below a stream block's first one, or
    from the array's first plane where that lies below it: a stencil reading fewer planes
    below a cell than above (downwind along the stream) is taken, as an upwind one."""
    diagonal = ((0, -1, -1), (0, 1, 1), (0, 0, 0))
    downwind = info_of(((1, 0, 0), (2, 0, 1), *diagonal))
    upwind = info_of(((-1, 0, 0), (-2, 0, 1), *diagonal))
    assert downwind.dims[0].reach_lo == 0 and upwind.dims[0].reach_lo == 2
    for info in (downwind, upwind):
        assert make_plan(info, 1, bs=(10, 66), opt="assoc", halo="loaded").halo_loaded
