"""The simulator against the gcc oracle (the user's own loop compiled by gcc).

Every c_input in every mode it qualifies for, float and double, bT from 1 to the largest
legal value for the block size, with and without stream division, grids that are not
multiples of the compute region, grids smaller than one block, streams shorter than
2*bT*r, and step counts 0, 1, bT-1, bT, bT+1, 2*bT+1. Modes nondiag and none must be
bit-identical to gcc; assoc reorders sums and gets the tolerance of an5dpy.check.verify.
"""

from __future__ import annotations

import glob
import itertools
import os
import random
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

from an5dpy.driver import load
from an5dpy.errors import UsageError
from an5dpy.blocking.plan import BlockingPlan, Mode, check_plan, grid_extents, make_plan
from an5dpy.check.reference import build_reference, resolve_params
from an5dpy.blocking.build import build_schedule
from an5dpy.check.simulate import simulate
from an5dpy.check.verify import (compare, must_be_identical, random_grid, random_read_only,
                                 result_buffer, tolerance)

from paths import C_INPUTS, PAPER_BENCHMARKS, TESTS_DIR
BENCHMARKS = sorted(PAPER_BENCHMARKS)  # the hand-written ones: tests/test_c_inputs_programs.py


@lru_cache(maxsize=None)
def benchmark(name: str, dtype: str):
    return load(os.path.join(C_INPUTS, name + ".c"), (("SB_TYPE", dtype),))


def modes_of(info) -> list[str]:
    modes = ["none"]
    if info.diagonal_free:
        modes.append("nondiag")
    if info.associative:
        modes.append("assoc")
    return modes


@dataclass(frozen=True)
class Config:
    bt: int
    bs: tuple[int, ...]
    sl: int | None
    compsize: int
    steps: int

    def __str__(self):
        return f"bt={self.bt} bs={self.bs} sl={self.sl} compsize={self.compsize} T={self.steps}"


def configs_for(info, mode: str, seed: int) -> list[Config]:
    """bT 1..max legal for two small block sizes, each with a spread of grid sizes (tiny,
    not a multiple of the compute region, shorter streams than the pipeline), stream
    lengths and the step counts 0, 1, bT-1, bT, bT+1, 2bT+1."""
    rnd = random.Random(seed)
    r = info.radius
    ndim = info.ndim
    heavy = info.flops_per_cell > 200  # box3d3r/4r: keep the expression evaluations few
    widths = ((2, 5) if ndim == 3 else (5, 12)) if not heavy else (3,)
    out = []
    for width in widths:
        bs = tuple(2 * (1 if heavy else 3) * rr + width for rr in r[1:])
        while np.prod(bs) > 1024:
            bs = tuple(b - 1 for b in bs)
        bt = 1
        while True:
            plan = BlockingPlan(ndim, info.dtype, r, bt, bs, None, Mode(mode))
            try:
                check_plan(plan, info)
            except UsageError:
                break
            step_counts = sorted({0, 1, bt - 1, bt, bt + 1, 2 * bt + 1})
            rnd.shuffle(step_counts)
            reps = 2 if heavy else 7
            compute = min(plan.compute_region())
            sizes = (1, compute + 2, 2 * compute + 1, 3) if ndim == 2 else \
                (1, compute + 1, 2, 4)
            short = max(1, 2 * bt * r[0] - 1)
            for k in range(reps):
                sl = (None, 1, short, 3)[(k + bt) % 4]
                out.append(Config(bt, bs, sl, sizes[(k + width) % len(sizes)],
                                  step_counts[k % len(step_counts)]))
            bt += 1
            if heavy and bt > 2:
                break
    return out


CASES = [(name, dtype, mode)
         for name in BENCHMARKS for dtype in ("float", "double")
         for mode in modes_of(benchmark(name, dtype)[1])]
ALL_CONFIGS = {case: configs_for(benchmark(case[0], case[1])[1], case[2], i)
               for i, case in enumerate(CASES)}


def test_the_suite_covers_thousands_of_configurations():
    total = sum(len(v) for v in ALL_CONFIGS.values())
    assert len(BENCHMARKS) == 21
    assert total >= 3000, total
    # every benchmark in both precisions, 2D and 3D, every mode
    assert {c[2] for c in CASES} == {"nondiag", "assoc", "none"}


def run_config(program, info, mode: str, cfg: Config, seed: int):
    plan = make_plan(info, bt=cfg.bt, bs=cfg.bs, sl=cfg.sl, opt=mode)
    # alternate between kernels with unrolled heads and compact ones
    schedule = build_schedule(plan, static_heads=None if seed % 2 else frozenset())
    env = resolve_params(program, {"compsize": cfg.compsize, "timestep": cfg.steps})
    shape = (2, *(d.size for d in grid_extents(info, env)))
    grid = random_grid(shape, info.dtype, seed)
    expected = grid.copy()
    build_reference(program).run(expected, env)
    got = simulate(info, plan, grid, env, schedule)
    b = result_buffer(info, env)
    tol = None if must_be_identical(info, plan, True) else tolerance(info, plan, cfg.steps)
    return compare(got[b], expected[b], tol)


@pytest.mark.parametrize("name, dtype, mode", CASES)
def test_benchmark_matches_gcc(name, dtype, mode):
    program, info = benchmark(name, dtype)
    failures = []
    for k, cfg in enumerate(ALL_CONFIGS[(name, dtype, mode)]):
        result = run_config(program, info, mode, cfg, seed=k)
        if not result.passed:
            failures.append(f"{cfg}: max rel {result.max_rel:.3g}, tol {result.tolerance}")
    assert not failures, "\n".join(failures)


def test_nondiag_is_bit_identical_and_assoc_within_tolerance_on_a_long_run():
    program, info = benchmark("j2d9pt-gol", "float")
    cfg = Config(4, (40,), 7, 37, 41)
    assert run_config(program, info, "none", cfg, 1).bit_identical
    assoc = run_config(program, info, "assoc", cfg, 1)
    assert assoc.passed and assoc.tolerance is not None
    program, info = benchmark("star2d2r", "double")
    assert run_config(program, info, "nondiag", Config(3, (20,), 5, 29, 23), 2).bit_identical


# --------------------------------------------------------------------------- other inputs


FORMS = sorted(glob.glob(os.path.join(TESTS_DIR, "data", "forms", "*.c")))


def form_params(program) -> dict:
    values = {}
    for p in program.params:
        if p.value is not None or p.definition is not None:
            continue
        low = p.name.lower()
        if p.ctype in ("float", "double"):
            values[p.name] = 0.25
        elif low in ("t", "steps", "nsteps", "timestep", "timesteps", "nt", "iters", "tmax"):
            values[p.name] = 7
        else:
            values[p.name] = 13 + len(values)
    return values


@pytest.mark.parametrize("path", FORMS, ids=os.path.basename)
def test_inputs_written_in_other_forms(path):
    program, info = load(path)
    params = form_params(program)
    env = resolve_params(program, params)
    for mode in modes_of(info):
        for bt, sl in ((1, None), (2, 3), (3, 1)):
            bs = tuple(2 * bt * r + 4 for r in info.radius[1:])
            plan = make_plan(info, bt=bt, bs=bs, sl=sl, opt=mode)
            shape = (info.time.buffers, *(d.size for d in grid_extents(info, env)))
            grid = random_grid(shape, info.dtype, bt)
            read_only = random_read_only(program, env, bt)
            expected = grid.copy()
            build_reference(program).run(expected, env, read_only)
            got = simulate(info, plan, grid, env, read_only=read_only)
            b = result_buffer(info, env)
            tol = None if must_be_identical(info, plan, True) else \
                tolerance(info, plan, info.time.steps(env))
            result = compare(got[b], expected[b], tol)
            assert result.passed, (mode, bt, sl, result)


# --------------------------------------------------------------------------- random stencils


def render(offsets, coefs, dtype, sizes, divisor):
    """A C function with per-dimension sizes n0.. and interior bounds that fit the reach."""
    ndim = len(sizes)
    names = "ijk"[:ndim]
    suffix = "f" if dtype == "float" else ""
    dims = "".join(f"[n{d}]" for d in range(ndim))
    terms = []
    for off, c in zip(offsets, coefs):
        idx = "".join(f"[{v}{o:+d}]" if o else f"[{v}]" for v, o in zip(names, off))
        terms.append(f"{c!r}{suffix} * A[t%2]{idx}")
    expr = " + ".join(terms)
    if divisor:
        expr = f"({expr}) / {divisor!r}{suffix}"
    lines = [f"void step(int n0, int n1, int n2, int T, {dtype} A[2]{dims})", "{", "#pragma scop",
             "  for (int t = 0; t < T; t++)"]
    for d, v in enumerate(names):
        lo = max([0] + [-o[d] for o in offsets])
        hi = max([0] + [o[d] for o in offsets])
        lines.append(f"  {'  ' * d}for (int {v} = {lo}; {v} < n{d} - {hi}; {v}++)")
    target = "".join(f"[{v}]" for v in names)
    lines.append(f"  {'  ' * ndim}A[(t+1)%2]{target} = {expr};")
    lines += ["#pragma endscop", "}"]
    return "\n".join(lines) + "\n"


@st.composite
def stencils(draw):
    ndim = draw(st.sampled_from((2, 3)))
    radius = [draw(st.integers(0, 4 if ndim == 2 else 2)) for _ in range(ndim)]
    box = list(itertools.product(*[range(-r, r + 1) for r in radius]))
    shape = draw(st.sampled_from(("star", "box", "general")))
    if shape == "box":
        offsets = box
    elif shape == "star":
        offsets = [o for o in box if sum(1 for x in o if x) <= 1]
    else:
        offsets = draw(st.lists(st.sampled_from(box), min_size=1, max_size=10, unique=True))
    coefs = [round(0.05 + 0.9 * draw(st.floats(0, 1)) / len(offsets), 4) for _ in offsets]
    dtype = draw(st.sampled_from(("float", "double")))
    divisor = draw(st.sampled_from((None, 1.1)))
    sizes = [draw(st.integers(2 * r + 1, 2 * r + (14 if ndim == 2 else 6))) for r in radius]
    return offsets, coefs, dtype, sizes, divisor


@given(stencil=stencils(), bt=st.integers(1, 5), sl=st.sampled_from((None, 1, 2, 5)),
       steps=st.integers(0, 12), data=st.data())
def test_random_stencils_and_plans_match_gcc(stencil, bt, sl, steps, data):
    from an5dpy.analysis import analyze
    from an5dpy.frontend import read_program_text
    offsets, coefs, dtype, sizes, divisor = stencil
    program = read_program_text(render(offsets, coefs, dtype, sizes, divisor), "random.c")
    info = analyze(program)
    assert sorted(info.offsets) == sorted(set(map(tuple, offsets)))
    mode = data.draw(st.sampled_from(modes_of(info)))
    bs = tuple(2 * bt * r + data.draw(st.integers(1, 6)) for r in info.radius[1:])
    # one barrier per step: mode nondiag with reads along the streaming dimension; warp
    # shuffles: 2D nondiag, a block of one warp of 2, 4 or 8 cells per thread
    can_step = mode == "nondiag" and info.radius[0] > 0
    can_shuffle = mode == "nondiag" and info.ndim == 2
    barriers = data.draw(st.sampled_from(("level", "step", "shuffle")[:2 + can_shuffle]
                                         if can_step else ("level", "shuffle")[:1 + can_shuffle]))
    if barriers == "shuffle":
        # the cells per thread whose register rings fit the 255 registers a thread has (a
        # radius-3 stencil at bT 5 with 8 cells needs about 305)
        fitting = []
        for cells in (2, 4, 8):
            try:
                fitting.append(make_plan(info, bt=bt, bs=(32 * cells,), sl=sl, opt=mode,
                                         barriers=barriers, coarsen=cells))
            except UsageError:
                continue
        assume(fitting)
        plan = data.draw(st.sampled_from(fitting))
    else:
        plan = make_plan(info, bt=bt, bs=bs, sl=sl, opt=mode, barriers=barriers)
    given = {f"n{d}": n for d, n in enumerate(sizes)}
    env = resolve_params(program, {**given, "T": steps})
    grid = random_grid((2, *sizes), dtype, steps)
    expected = grid.copy()
    build_reference(program).run(expected, env)
    got = simulate(info, plan, grid, env)
    b = result_buffer(info, env)
    tol = None if must_be_identical(info, plan, True) else tolerance(info, plan, steps)
    assert compare(got[b], expected[b], tol).passed


STEP_CASES = [(name, dtype) for name, dtype, mode in CASES if mode == "nondiag"]


@pytest.mark.parametrize("name, dtype", STEP_CASES)
def test_one_barrier_per_step_matches_gcc(name, dtype):
    """barriers=step over the configurations of mode nondiag (every bT, stream division,
    tiny and uneven grids, every step count), kernels with unrolled heads and compact
    ones: the simulator also checks that every shared read sees its level's plane,
    published by the step's barrier, and that no buffer is rewritten before one."""
    program, info = benchmark(name, dtype)
    failures = []
    for k, cfg in enumerate(ALL_CONFIGS[(name, dtype, "nondiag")][::2]):
        plan = make_plan(info, bt=cfg.bt, bs=cfg.bs, sl=cfg.sl, opt="nondiag",
                         barriers="step")
        schedule = build_schedule(plan, static_heads=None if k % 2 else frozenset())
        env = resolve_params(program, {"compsize": cfg.compsize, "timestep": cfg.steps})
        grid = random_grid((2, *(d.size for d in grid_extents(info, env))), info.dtype, k)
        expected = grid.copy()
        build_reference(program).run(expected, env)
        got = simulate(info, plan, grid, env, schedule)
        b = result_buffer(info, env)
        if not compare(got[b], expected[b], None).bit_identical:
            failures.append(str(cfg))
    assert not failures, "\n".join(failures)


SHUFFLE_CASES = [(name, dtype) for name, dtype, mode in CASES
                 if mode == "nondiag" and benchmark(name, dtype)[1].ndim == 2]


@pytest.mark.parametrize("name, dtype", SHUFFLE_CASES)
def test_warp_shuffles_match_gcc(name, dtype):
    """barriers=shuffle (a block of one warp, no shared memory) for 2, 4 and 8 cells per
    thread at every legal bT, stream division, tiny and uneven grids and step counts
    0 .. 2bT+1, kernels with unrolled heads and compact ones: the neighbours come from
    the block's own registers, NaN off the block, which no cell in a window may read."""
    program, info = benchmark(name, dtype)
    rnd = random.Random(f"{name}-{dtype}")
    failures, tried = [], 0
    for coarsen in (2, 4, 8):
        for bt in range(1, 17):
            try:
                plan = make_plan(info, bt=bt, bs=(32 * coarsen,), sl=rnd.choice((None, 1, 5)),
                                 opt="nondiag", coarsen=coarsen, barriers="shuffle")
            except UsageError:
                break
            compute = plan.compute_region()[0]
            for k, steps in enumerate((0, 1, bt, 2 * bt + 1)[rnd.randrange(2):][:2]):
                size = (1, compute + 2, 2 * compute + 1, 3)[(bt + k) % 4]
                schedule = build_schedule(plan, static_heads=None if k % 2 else frozenset())
                env = resolve_params(program, {"compsize": size, "timestep": steps})
                grid = random_grid((2, *(d.size for d in grid_extents(info, env))),
                                   info.dtype, bt + k)
                expected = grid.copy()
                build_reference(program).run(expected, env)
                got = simulate(info, plan, grid, env, schedule)
                b = result_buffer(info, env)
                tried += 1
                if not compare(got[b], expected[b], None).bit_identical:
                    failures.append(f"{plan.describe()} n={size} T={steps}")
    assert tried >= 6 and not failures, "\n".join(failures)


def test_one_barrier_per_step_reads_only_what_a_published_share_wrote():
    """The simulator checks, not assumes, the one-statement schedule of one barrier per
    step: without its Shares, or without the barriers that publish them, it refuses."""
    from block_support import schedule_without
    from an5dpy.blocking.ops import Share, Sync
    from an5dpy.errors import InternalError
    program, info = benchmark("star2d1r", "float")
    plan = make_plan(info, 3, bs=(32,), sl=8, opt="nondiag", barriers="step")
    env = resolve_params(program, {"compsize": "40", "timestep": "4"})
    grid = random_grid((2, *(d.size for d in grid_extents(info, env))), "float", 1)
    simulate(info, plan, grid, env, build_schedule(plan))
    for kind, why in ((Share, "which no Share wrote for it"),
                      (Sync, "before a barrier published it")):
        with pytest.raises(InternalError, match=why):
            simulate(info, plan, grid, env, schedule_without(build_schedule(plan), kind))
