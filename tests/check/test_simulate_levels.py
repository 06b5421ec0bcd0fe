"""Rotating time levels on the simulator, against the gcc oracle: random programs.

Each program rotates its array through k = 2 to 5 time buffers and reads level t (the
newest earlier one) at a random star of offsets, radius 0-2 per dimension, and older
levels (lags 2 .. k-1) at random offsets, diagonal ones too, and in some the oldest level
at the cell from the buffer it writes (with k = 2 a leapfrog update); some read a
read-only array too. Random plans (mode nondiag or none, bT 1-5,
small blocks, stream division on or off), grid extents that fit no block evenly, 0-9
steps. ``an5d verify --backend sim``'s function (:func:`an5dpy.check.verify.verify_file`)
must pass bit-identical, and the simulated run, made with check/verify.py's data, matches
gcc's on every time buffer where the C program keeps a level in each (every rotating
form); the double-buffered form leaves an earlier level of the plan's choosing in its
other buffer, so there only the result buffer is compared.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from an5dpy import driver
from an5dpy.blocking.plan import TimeLevels, grid_extents
from an5dpy.check import verify
from an5dpy.check.reference import build_reference, resolve_params
from an5dpy.check.simulate import simulate

NAMES = "ijk"


def _sub(var: str, off: int) -> str:
    return f"{var}{off:+d}" if off else var


def _time(t: str, shift: int, k: int) -> str:
    return f"({t}{shift:+d})%{k}" if shift else f"{t}%{k}"


def _shift(want: int, k: int, t0: int) -> int:
    """The smallest shift >= -t0 congruent to ``want`` modulo k (C's % keeps the sign)."""
    while want < -t0:
        want += k
    return want


@st.composite
def level_programs(draw):
    """(C text, parameters, buffers, history): an update of the given form whose values
    stay finite (an averaging stencil, or a wave-like ``2 a - b + c * (sum - n a)``)."""
    ndim = draw(st.sampled_from((2, 3)))
    dtype = draw(st.sampled_from(("float", "double")))
    k = draw(st.sampled_from((2, 3, 3, 4, 5)))
    radius = [draw(st.integers(0, 2)) for _ in range(ndim)]
    # the newest level: a star, the centre and, per dimension, a random nonempty subset of
    # the arm cells that keeps the radius (the outermost one on at least one side)
    offsets = {(0,) * ndim}
    for d, r in enumerate(radius):
        for o in range(-r, r + 1):
            if o and (abs(o) == r and (o > 0 or draw(st.booleans())) or draw(st.booleans())):
                offsets.add(tuple(o if e == d else 0 for e in range(ndim)))
    offsets = sorted(offsets)
    # older levels: lags 2 .. k-1 at random offsets (diagonal ones too, radius 0-2), the
    # written buffer (lag k) at the cell; two buffers allow only the latter (leapfrog)
    older: dict[int, list[tuple[int, ...]]] = {}
    for lag in range(2, k):
        if draw(st.booleans()):
            cells = draw(st.lists(st.tuples(*[st.integers(-2, 2)] * ndim), min_size=1,
                                  max_size=3, unique=True))
            older[lag] = sorted(cells)
    if draw(st.booleans()) if k > 2 else draw(st.sampled_from((True, False))):
        older[k] = [(0,) * ndim]
    history = max(older, default=1)
    every = offsets + [o for cells in older.values() for o in cells]
    lower = [max([0] + [-o[d] for o in every]) for d in range(ndim)]
    upper = [max([0] + [o[d] for o in every]) for d in range(ndim)]
    cap = 13 if ndim == 2 else 7
    sizes = [lower[d] + upper[d] + draw(st.integers(1, cap)) for d in range(ndim)]
    t0 = draw(st.integers(0, 3))
    w = draw(st.sampled_from((1, 2, 0)))
    t = "t"
    suffix = "f" if dtype == "float" else ""
    dims = "".join(f"[n{d}]" for d in range(ndim))
    params = [f"int n{d}" for d in range(ndim)] + ["int T", f"{dtype} A[{k}]{dims}"]
    cell = "".join(f"[{v}]" for v in NAMES[:ndim])

    def level(lag: int, off) -> str:
        return f"A[{_time(t, _shift(w - lag, k, t0), k)}]" + "".join(
            f"[{_sub(v, o)}]" for v, o in zip(NAMES, off))

    coef = ""
    if draw(st.booleans()):
        ctype = draw(st.sampled_from(("float", "double")))
        rank = draw(st.integers(1, ndim))
        followed = draw(st.permutations(range(ndim)))[:rank]
        subs = [_sub(NAMES[d], draw(st.integers(-lower[d], upper[d]))) for d in followed]
        params.append(f"{ctype} c" + "".join(f"[n{d}]" for d in followed))
        coef = "c" + "".join(f"[{s}]" for s in subs)

    centre = (0,) * ndim
    if older in ({2: [centre]}, {3: [centre]} if k == 3 else None) and draw(st.booleans()):
        # wave-like: 2 a - b + q (sum - n a)
        q = f"{draw(st.sampled_from(('0.05', '0.1', '0.125')))}{suffix}"
        q = f"{q} * {coef}" if coef else q
        arms = [o for o in offsets if any(o)]
        lap = " + ".join(level(1, o) for o in arms) or "0"
        update = (f"2.0{suffix} * {level(1, centre)} - {level(history, centre)} + {q} * "
                  f"({lap} - {len(arms)}.0{suffix} * {level(1, centre)})")
    else:  # an average of the reads, weights summing to 1
        terms = [level(1, o) for o in offsets] + [level(lag, o) for lag, cells in
                                                   sorted(older.items()) for o in cells]
        if coef:
            terms[draw(st.integers(0, len(terms) - 1))] += f" * {coef} * 0.5{suffix}"
        weight = f"{1.0 / len(terms):.6f}{suffix}"
        update = f"{weight} * ({' + '.join(terms)})"
    lines = [f"void levels({', '.join(params)})", "{", "#pragma scop",
             f"  for (int {t} = {t0}; {t} < T + {t0}; {t}++)"]
    for d, v in enumerate(NAMES[:ndim]):
        lines.append(f"  {'  ' * d}for (int {v} = {lower[d]}; {v} < n{d} - {upper[d]}; {v}++)")
    lines.append(f"  {'  ' * ndim}A[{_time(t, w, k)}]{cell} = {update};")
    lines += ["#pragma endscop", "}"]
    values = {f"n{d}": str(n) for d, n in enumerate(sizes)}
    return "\n".join(lines) + "\n", values, k, history


@st.composite
def plans(draw, info):
    """Options for ``info``: mode nondiag (where the stencil is diagonal-free) or none,
    bT 1-5, the smallest block of that bT plus 0-6 threads per in-plane dimension,
    stream division off or 1-5 planes."""
    modes = ["none"] + (["nondiag"] if info.diagonal_free else [])
    bt = draw(st.integers(1, 5))
    bs = [2 * bt * r + 1 + draw(st.integers(0, 6)) for r in info.radius[1:]]
    sl = draw(st.sampled_from((None, None, 1, 2, 3, 5)))
    return driver.Options(bt=bt, bs="x".join(str(b) for b in reversed(bs)),
                          sl=sl or "off", opt=draw(st.sampled_from(modes)))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=level_programs(), steps=st.integers(0, 9), seed=st.integers(0, 2 ** 16),
       data=st.data())
def test_random_level_programs_match_gcc_on_every_buffer(tmp_path_factory, case, steps,
                                                          seed, data):
    text, sizes, k, history = case
    path = tmp_path_factory.mktemp("levels") / "levels.c"
    path.write_text(text)
    program, info = driver.load(str(path))
    assert (info.time.buffers, info.history) == (k, history), text
    options = data.draw(plans(info))
    params = {**sizes, "T": str(steps)}
    report = verify.verify_file(str(path), options, "sim", params, seed=seed)
    assert report.passed and report.comparison.tolerance is None, (text, report.lines())

    # the same run by hand, every buffer compared
    plan = report.plan
    assert plan.levels == TimeLevels.of(info)
    assert (plan.levels.buffers, plan.levels.history) == (k, history)
    env = resolve_params(program, params)
    shape = (k, *(d.size for d in grid_extents(info, env)))
    grid = verify.random_grid(shape, info.dtype, seed)
    read_only = verify.random_read_only(program, env, seed)
    expected = grid.copy()
    build_reference(program).run(expected, env, read_only)
    got = simulate(info, plan, grid, env, driver.emitted_schedule(info, plan), read_only)
    assert np.isfinite(expected).all()
    compared = range(k) if plan.levels.rotating else [verify.result_buffer(info, env)]
    for b in compared:
        result = verify.compare(got[b], expected[b], None)
        assert result.passed, (text, options, steps, b, result)
