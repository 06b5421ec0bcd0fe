"""The schedule on several GPUs, on the simulator (check/simulate_slabs.py): every slab
run as its own grid, halos refreshed between launches, the owned planes gathered. The
gathered result must be bit-identical to the one-device simulation and, where the mode
promises it, to gcc: the 21 benchmarks in float and double on 2 to 5 slabs (uneven) for
every step count 0..9 (every remainder degree and parity), the rotating, coefficient and
multi-statement programs of c_inputs, random stencils with uneven reach; and one plane
less of halo must fail, so the halo rule is tight. The overlapped schedule (the next
launch's interior window before the pending exchange, the edge windows after it:
blocking/slabs.overlap_windows) must give the same bits, for the same range of programs
that can run it, and a window one plane off must not."""

from __future__ import annotations

import os
from dataclasses import replace
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import an5dpy.check.simulate_slabs as slabs_module
from an5dpy.blocking.plan import DimExtent, grid_extents, make_plan
from an5dpy.blocking.slabs import (SlabHalo, Window, can_overlap, max_slabs, overlap_windows,
                                   partition, slab_halo)
from an5dpy.check.reference import build_reference, resolve_params
from an5dpy.check.simulate import simulate
from an5dpy.check.simulate_slabs import decomposition, simulate_slabs
from an5dpy.check.verify import (field_results, must_be_identical, random_grid,
                                 random_read_only, random_state, result_buffer)
from an5dpy.driver import load

from paths import C_INPUTS, PAPER_BENCHMARKS


@lru_cache(maxsize=None)
def benchmark(name: str, dtype: str):
    return load(os.path.join(C_INPUTS, name + ".c"), (("SB_TYPE", dtype),))


def same(a, b) -> bool:
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


def plan_for(info, bt: int, sl: int | None = 7):
    return make_plan(info, bt=bt, bs=tuple(2 * bt * r + 4 for r in info.radius[1:]), sl=sl)


def compsize_for(info, plan, slabs: int, extra: int) -> int:
    """The benchmark harness' compsize whose interior takes ``slabs`` slabs, uneven."""
    return slabs * slab_halo(info, plan).widest + extra


def run_case(program, info, plan, compsize: int, steps: int, gpus: int, seed: int) -> None:
    env = resolve_params(program, {"compsize": compsize, "timestep": steps})
    grid = random_state(info, env, seed)
    one = simulate(info, plan, grid, env)
    many = simulate_slabs(info, plan, grid, env, gpus)
    assert same(many, one), (plan.describe(), compsize, steps, gpus)
    if must_be_identical(info, plan, True):
        expected = grid.copy()
        build_reference(program).run(expected, env)
        b = result_buffer(info, env)
        assert same(many[b], expected[b]), (plan.describe(), compsize, steps, gpus)


#: (temporal degree, largest slab count) per benchmark: the heavy 3D boxes smaller
def degree_and_slabs(info) -> tuple[int, int]:
    r = max(info.radius)
    if info.ndim == 2:
        return (3, 5) if r <= 2 else (2, 4)
    if info.flops_per_cell > 200:
        return 1, 2
    return (2, 5) if r <= 2 else (1, 4)


@pytest.mark.parametrize("dtype", ["float", "double"])
@pytest.mark.parametrize("name", sorted(PAPER_BENCHMARKS))
def test_benchmark_on_several_slabs_is_the_one_device_run(name, dtype):
    program, info = benchmark(name, dtype)
    bt, most = degree_and_slabs(info)
    plan = plan_for(info, bt)
    heavy = info.flops_per_cell > 200
    for steps in range(0, 4 if heavy else 10):
        gpus = 2 + steps % (most - 1)
        compsize = compsize_for(info, plan, gpus, 1 + steps % 3)
        run_case(program, info, plan, compsize, steps, gpus, seed=steps)


@pytest.mark.parametrize("name, mode", [("j2d5pt", "none"), ("box2d1r", "none"),
                                        ("j2d9pt-gol", "assoc"), ("star3d1r", "none")])
def test_other_modes_on_several_slabs(name, mode):
    program, info = benchmark(name, "double")
    bt = 3 if info.ndim == 2 else 2
    plan = make_plan(info, bt=bt, bs=tuple(2 * bt * r + 5 for r in info.radius[1:]), sl=None,
                     opt=mode)
    for steps in (2, 3, 7, 8):
        run_case(program, info, plan, compsize_for(info, plan, 3, 2), steps, 3, steps)


def test_slabs_one_plane_thinner_than_the_halo_rule_go_wrong(monkeypatch):
    """The halo is tight: a plane less on either side changes the result (even degrees
    take level 0 of the edge planes from the buffer the last exchange did not refresh)."""
    program, info = benchmark("j2d5pt", "float")
    plan = plan_for(info, 2, sl=5)
    rule = slab_halo
    for cut in ((1, 0), (0, 1)):
        monkeypatch.setattr(slabs_module, "slab_halo", lambda i, p: (lambda h: SlabHalo(
            h.below - cut[0], h.above - cut[1], h.edge))(rule(i, p)))
        with pytest.raises(AssertionError):
            run_case(program, info, plan, 41, 6, 3, 1)
    monkeypatch.setattr(slabs_module, "slab_halo", rule)
    run_case(program, info, plan, 41, 6, 3, 1)


# --------------------------------------------------------------------------- other forms


def run_program(name: str, dtype: str, bt: int, compsize: int, steps: int, gpus: int,
                opt: str | None = None) -> None:
    program, info = benchmark(name, dtype)
    plan = make_plan(info, bt=bt, bs=tuple(2 * plan_depth(info, bt) * r + 4
                                           for r in info.radius[1:]), sl=5, opt=opt)
    env = resolve_params(program, {"compsize": compsize, "timestep": steps})
    read_only = random_read_only(program, env, steps)
    state = random_state(info, env, steps)
    assert decomposition(info, plan, env, gpus).count == gpus
    one = simulate(info, plan, state, env, read_only=read_only)
    many = simulate_slabs(info, plan, state, env, gpus, read_only=read_only)
    expected = [np.copy(a) for a in state] if info.coupled else np.copy(state)
    build_reference(program).run(expected, env, read_only)
    where = (name, plan.describe(), compsize, steps, gpus)
    if info.coupled:
        assert all(same(g, f) for f, g in zip(one, many)), where
        # where C leaves each field's result (the other buffer holds an earlier level)
        assert same(field_results(info, env, many), field_results(info, env, expected)), where
    else:
        assert same(many, one), where
        # a rotating program leaves every buffer as C does; the others their result buffer
        b = slice(None) if plan.levels.rotating else result_buffer(info, env)
        assert same(many[b], expected[b]), where


def plan_depth(info, bt: int) -> int:
    return bt * max(1, len(info.substeps))


@pytest.mark.parametrize("dtype", ["float", "double"])
@pytest.mark.parametrize("name", ["wave2d", "dampedwave2d", "poisson2d", "varheat2d",
                                  "grayscott2d", "fdtd2d"])
def test_two_d_programs_on_several_slabs(name, dtype):
    _, info = benchmark(name, dtype)
    for steps in range(0, 10):
        bt = 2 + steps % 2
        gpus = 2 + steps % 4
        plan = make_plan(info, bt=bt, bs=tuple(2 * plan_depth(info, bt) * r + 4
                                               for r in info.radius[1:]), sl=5)
        compsize = gpus * slab_halo(info, plan).widest + 1 + steps % 3
        run_program(name, dtype, bt, compsize, steps, gpus)


@pytest.mark.parametrize("name", ["acoustic3d", "heat3dz", "acousticvp3d"])
def test_three_d_programs_on_several_slabs(name):
    _, info = benchmark(name, "double")
    for steps in (0, 1, 2, 3, 5):
        plan = make_plan(info, bt=1, bs=tuple(2 * plan_depth(info, 1) * r + 4
                                              for r in info.radius[1:]), sl=5)
        gpus = 2 + steps % 2
        run_program(name, "double", 1, gpus * slab_halo(info, plan).widest + 1, steps, gpus)


def test_every_benchmark_reaches_the_slab_counts_it_is_tested_with():
    for name in PAPER_BENCHMARKS:
        _, info = benchmark(name, "float")
        bt, most = degree_and_slabs(info)
        plan = plan_for(info, bt)
        program, _ = benchmark(name, "float")
        env = resolve_params(program, {"compsize": compsize_for(info, plan, most, 1),
                                       "timestep": 1})
        assert max_slabs(grid_extents(info, env)[0], slab_halo(info, plan)) == most


# --------------------------------------------------------------------------- random stencils


def render(offsets, dtype: str) -> str:
    """A 2D stencil reading ``offsets`` (uneven reach along the streaming dimension), with
    the interior that keeps every read inside the array."""
    suffix = "f" if dtype == "float" else ""
    terms = " + ".join(f"{0.1 + 0.05 * k!r}{suffix} * A[t%2][i{a:+d}][j{b:+d}]"
                       for k, (a, b) in enumerate(offsets))
    lo = [max([0] + [-o[d] for o in offsets]) for d in range(2)]
    hi = [max([0] + [o[d] for o in offsets]) for d in range(2)]
    return (f"void step(int n0, int n1, int T, {dtype} A[2][n0][n1])\n{{\n#pragma scop\n"
            f"  for (int t = 0; t < T; t++)\n"
            f"    for (int i = {lo[0]}; i < n0 - {hi[0]}; i++)\n"
            f"      for (int j = {lo[1]}; j < n1 - {hi[1]}; j++)\n"
            f"        A[(t+1)%2][i][j] = {terms};\n#pragma endscop\n}}\n")


#: What both random slab tests draw besides ``extra`` (random_slab_problem's arguments).
SLAB_DRAWS = dict(
    offsets=st.lists(st.tuples(st.integers(-2, 3), st.integers(-1, 1)), min_size=1,
                     max_size=6, unique=True),
    dtype=st.sampled_from(["float", "double"]), bt=st.integers(1, 4),
    sl=st.sampled_from([None, 1, 3]), steps=st.integers(0, 9), gpus=st.integers(2, 5),
    data=st.data())


def random_slab_problem(offsets, dtype, bt, sl, steps, gpus, extra, data):
    """A random stencil of ``offsets`` (render), a plan of a mode it allows, and a grid
    whose streaming dimension holds ``gpus`` slabs of the halo's width plus ``extra``
    planes: (program, info, plan, env, grid)."""
    from an5dpy.analysis import analyze
    from an5dpy.frontend import read_program_text
    program = read_program_text(render(offsets, dtype), "random.c")
    info = analyze(program)
    modes = ["none"] + (["nondiag"] if info.diagonal_free else [])
    mode = data.draw(st.sampled_from(modes))
    plan = make_plan(info, bt=bt, bs=(2 * bt * info.radius[1] + 3,), sl=sl, opt=mode)
    halo = slab_halo(info, plan)
    n0 = gpus * halo.widest + extra + info.dims[0].reach_lo + info.dims[0].reach_hi
    env = resolve_params(program, {"n0": n0, "n1": data.draw(st.integers(1, 9)) + 2,
                                   "T": steps})
    grid = random_grid((2, *(d.size for d in grid_extents(info, env))), dtype, steps)
    return program, info, plan, env, grid


@settings(deadline=None, max_examples=40)
@given(**SLAB_DRAWS, extra=st.integers(0, 7))
def test_random_stencils_on_random_slabs(offsets, dtype, bt, sl, steps, gpus, extra, data):
    program, info, plan, env, grid = random_slab_problem(offsets, dtype, bt, sl, steps,
                                                         gpus, extra, data)
    one = simulate(info, plan, grid, env)
    many = simulate_slabs(info, plan, grid, env, gpus)
    assert same(many, one)
    expected = grid.copy()
    build_reference(program).run(expected, env)
    b = result_buffer(info, env)
    assert same(many[b], expected[b])


# --------------------------------------------------------------------------- overlap


def test_overlap_windows_by_hand():
    """j2d5pt bT 2: halo 3 below and above (the edge plane and one per level), edge 1."""
    program, info = benchmark("j2d5pt", "float")
    plan = plan_for(info, 2)
    env = resolve_params(program, {"compsize": 30, "timestep": 4})
    decomp = decomposition(info, plan, env, 3)
    assert decomp.halo == SlabHalo(3, 3, 1)
    first, middle, last = decomp.slabs  # owned 10 planes each: [1, 11), [11, 21), [21, 31)
    w = overlap_windows(first, decomp.halo)  # holds [0, 14): owned [1, 11) locally
    assert w.interior == Window((0, 11), DimExtent(1, 9, 11))
    assert w.edges == (Window((5, 14), DimExtent(1, 7, 9), (8, 11)),)
    w = overlap_windows(middle, decomp.halo)  # holds [8, 24): owned [3, 13) locally
    assert w.interior == Window((3, 13), DimExtent(1, 8, 10))
    assert w.edges == (Window((0, 9), DimExtent(1, 7, 9), (3, 6)),
                       Window((7, 16), DimExtent(1, 7, 9), (10, 13)))
    w = overlap_windows(last, decomp.halo)  # holds [18, 32): owned [3, 13), plane 13 the array's
    assert w.interior == Window((3, 14), DimExtent(1, 9, 11))
    assert w.edges == (Window((0, 9), DimExtent(1, 7, 9), (3, 6)),)
    # six owned planes are no more than the halos: no windows
    thin = decomposition(info, plan, resolve_params(program, {"compsize": 18, "timestep": 4}),
                         3)
    assert [overlap_windows(s, thin.halo) for s in thin.slabs] == [None] * 3


def window_cover(slab, halo, windows) -> list[int]:
    """How often each owned plane is left exact: by the interior window (beyond its cuts'
    halos) or by an edge window's copy."""
    o0, o1 = slab.owned_local.start, slab.owned_local.stop
    i0, i1 = windows.interior.planes
    exact = set(range(i0 + halo.below if i0 > 0 else 0,
                      i1 - halo.above if i1 < slab.planes else slab.planes))
    count = [int(p in exact) for p in range(o0, o1)]
    for e in windows.edges:
        for p in range(*e.copy):
            count[p - o0] += 1
    return count


@settings(deadline=None, max_examples=200)
@given(below=st.integers(0, 12), above=st.integers(0, 12), edge=st.integers(0, 3),
       interior=st.integers(1, 200), gpus=st.integers(2, 6), lower=st.integers(1, 3))
def test_overlap_windows_cover_every_owned_plane_once(below, above, edge, interior, gpus,
                                                      lower):
    """The pure rule on its own: interior windows read no halo plane, edge windows lie in
    the slab with their copies beyond their cuts' halos, and every owned plane is left
    exact by exactly one of the interior window or a copy."""
    from hypothesis import assume
    assume(edge <= min(below, above))
    halo = SlabHalo(below, above, edge)
    extent = DimExtent(lower, lower + interior - 1, interior + 2 * lower)
    assume(max_slabs(extent, halo) >= gpus)
    decomp = partition(extent, gpus, halo)
    for s in decomp.slabs:
        w = overlap_windows(s, halo)
        owned = s.owned[1] - s.owned[0]
        assert (w is None) == (owned <= below + above)
        if w is None:
            continue
        o0, o1 = s.owned_local.start, s.owned_local.stop
        i0, i1 = w.interior.planes
        assert (i0, i1) == (o0 if s.below else 0, o1 if s.above else s.planes)
        assert w.interior.copy is None
        for e in w.edges:
            e0, e1 = e.planes
            c0, c1 = e.copy
            assert 0 <= e0 < e1 <= s.planes and e.stream.size == e1 - e0
            assert (e0 == 0 or c0 >= e0 + below) and (e1 == s.planes or c1 <= e1 - above)
        assert window_cover(s, halo, w) == [1] * owned


@pytest.mark.parametrize("dtype", ["float", "double"])
@pytest.mark.parametrize("name", ["j2d5pt", "box2d2r", "j2d9pt-gol", "star3d1r", "box3d1r",
                                  "star3d3r", "j3d27pt"])
def test_overlapped_slabs_are_the_one_device_and_plain_slab_runs(name, dtype):
    program, info = benchmark(name, dtype)
    bt, most = degree_and_slabs(info)
    plan = plan_for(info, bt)
    halo = slab_halo(info, plan)
    heavy = info.flops_per_cell > 200
    for steps in range(0, 4 if heavy else 10):  # every remainder degree and parity
        gpus = 2 + steps % (min(most, 4) - 1)
        compsize = gpus * (halo.below + halo.above + 1) + steps % 3  # windows in every slab
        env = resolve_params(program, {"compsize": compsize, "timestep": steps})
        decomp = decomposition(info, plan, env, gpus)
        assert all(overlap_windows(s, decomp.halo) for s in decomp.slabs)
        grid = random_state(info, env, steps)
        one = simulate(info, plan, grid, env)
        plain = simulate_slabs(info, plan, grid, env, gpus)
        overlapped = simulate_slabs(info, plan, grid, env, gpus, overlap=True)
        where = (name, plan.describe(), compsize, steps, gpus)
        assert same(overlapped, one) and same(overlapped, plain), where


@pytest.mark.parametrize("name, dtype", [("poisson2d", "double"), ("varheat2d", "float"),
                                         ("heat3dz", "double")])
def test_overlapped_slabs_with_read_only_arrays(name, dtype):
    program, info = benchmark(name, dtype)
    for steps in (0, 1, 2, 3, 5, 8):
        bt = 1 + steps % 3 if info.ndim == 2 else 1
        plan = make_plan(info, bt=bt, bs=tuple(2 * bt * r + 4 for r in info.radius[1:]), sl=5)
        halo = slab_halo(info, plan)
        gpus = 2 + steps % 2
        compsize = gpus * (halo.below + halo.above + 1) + 1 + steps % 3
        env = resolve_params(program, {"compsize": compsize, "timestep": steps})
        read_only = random_read_only(program, env, steps)
        state = random_state(info, env, steps)
        one = simulate(info, plan, state, env, read_only=read_only)
        overlapped = simulate_slabs(info, plan, state, env, gpus, read_only=read_only,
                                    overlap=True)
        assert same(overlapped, one), (name, plan.describe(), compsize, steps, gpus)
        expected = np.copy(state)
        build_reference(program).run(expected, env, read_only)
        b = result_buffer(info, env)
        assert same(overlapped[b], expected[b])


def test_rotating_and_multi_statement_programs_run_without_overlap():
    for name in ("wave2d", "grayscott2d"):
        program, info = benchmark(name, "double")
        plan = make_plan(info, bt=2, bs=(2 * plan_depth(info, 2) * info.radius[1] + 4,),
                         sl=5)
        assert not can_overlap(info, plan)
        env = resolve_params(program, {"compsize": 3 * slab_halo(info, plan).widest + 2,
                                       "timestep": 5})
        state = random_state(info, env, 5)
        plain = simulate_slabs(info, plan, state, env, 3)
        overlapped = simulate_slabs(info, plan, state, env, 3, overlap=True)
        if info.coupled:
            assert all(same(a, b) for a, b in zip(plain, overlapped))
        else:
            assert same(plain, overlapped)
    _, info = benchmark("j2d5pt", "float")
    assert can_overlap(info, plan_for(info, 2))


@pytest.mark.parametrize("change", ["edge window short", "copy too wide"])
def test_windows_one_plane_off_go_wrong(monkeypatch, change):
    """The edge windows are no larger than they must be: one plane shorter, the plane
    its copy takes nearest the cut lies within the cut's halo; a copy one plane wider
    takes the first plane of it. With bT 2 and launches of degree 2 those planes are
    wrong (the halo is an upper bound: elsewhere they may happen to be exact)."""
    program, info = benchmark("j2d5pt", "float")
    plan = plan_for(info, 2, sl=5)
    rule = overlap_windows

    def changed(slab, halo):
        w = rule(slab, halo)
        if w is None or not slab.below:
            return w
        lower = w.edges[0]
        if change == "edge window short":
            e0, e1 = lower.planes
            lower = Window((e0, e1 - 1), replace(lower.stream, upper=lower.stream.upper - 1,
                                                 size=lower.stream.size - 1), lower.copy)
        else:
            lower = replace(lower, copy=(lower.copy[0], lower.copy[1] + 1))
        return replace(w, edges=(lower, *w.edges[1:]))

    monkeypatch.setattr(slabs_module, "overlap_windows", changed)
    env = resolve_params(program, {"compsize": 40, "timestep": 6})
    grid = random_state(info, env, 3)
    one = simulate(info, plan, grid, env)
    assert not same(simulate_slabs(info, plan, grid, env, 3, overlap=True), one)
    monkeypatch.setattr(slabs_module, "overlap_windows", rule)
    assert same(simulate_slabs(info, plan, grid, env, 3, overlap=True), one)


@settings(deadline=None, max_examples=40)
@given(**SLAB_DRAWS, extra=st.integers(0, 30))
def test_random_stencils_on_random_overlapped_slabs(offsets, dtype, bt, sl, steps, gpus,
                                                    extra, data):
    """Uneven reach, every remainder degree, slab counts and sizes from too thin for
    windows (then the whole launch after the exchange) to several times the halos."""
    program, info, plan, env, grid = random_slab_problem(offsets, dtype, bt, sl, steps,
                                                         gpus, extra, data)
    one = simulate(info, plan, grid, env)
    overlapped = simulate_slabs(info, plan, grid, env, gpus, overlap=True)
    assert same(overlapped, one)
    assert same(overlapped, simulate_slabs(info, plan, grid, env, gpus))
