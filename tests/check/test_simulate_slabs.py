"""The schedule on several GPUs, on the simulator (check/simulate_slabs.py): every slab
run as its own grid, halos refreshed between launches, the owned planes gathered. The
gathered result must be bit-identical to the one-device simulation and, where the mode
promises it, to gcc: the 21 benchmarks in float and double on 2 to 5 slabs (uneven) for
every step count 0..9 (every remainder degree and parity), the rotating, coefficient and
multi-statement programs of c_inputs, random stencils with uneven reach; and one plane
less of halo must fail, so the halo rule is tight."""

from __future__ import annotations

import os
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import an5dpy.check.simulate_slabs as slabs_module
from an5dpy.blocking.plan import grid_extents, make_plan
from an5dpy.blocking.slabs import SlabHalo, max_slabs, slab_halo
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


@settings(deadline=None, max_examples=40)
@given(offsets=st.lists(st.tuples(st.integers(-2, 3), st.integers(-1, 1)), min_size=1,
                        max_size=6, unique=True),
       dtype=st.sampled_from(["float", "double"]), bt=st.integers(1, 4),
       sl=st.sampled_from([None, 1, 3]), steps=st.integers(0, 9), gpus=st.integers(2, 5),
       extra=st.integers(0, 7), data=st.data())
def test_random_stencils_on_random_slabs(offsets, dtype, bt, sl, steps, gpus, extra, data):
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
    one = simulate(info, plan, grid, env)
    many = simulate_slabs(info, plan, grid, env, gpus)
    assert same(many, one)
    expected = grid.copy()
    build_reference(program).run(expected, env)
    b = result_buffer(info, env)
    assert same(many[b], expected[b])
