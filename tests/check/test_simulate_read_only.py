"""Read-only (coefficient) arrays on the simulator, against the gcc oracle: fixed programs
(2D and 3D, float and double, every accepted subscript form) under many plans, a check
that the coefficients really reach the result, and random programs with 1 to 3 read-only
arrays through ``verify_file`` with the simulator backend."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from an5dpy import driver
from an5dpy.blocking.plan import grid_extents
from an5dpy.check import verify
from an5dpy.check.reference import build_reference, resolve_params
from an5dpy.check.simulate import simulate

from read_only_support import PROGRAMS, write

# --------------------------------------------------------------------------- fixed programs

#: (bt, bs, sl) plans: degrees 1..5, tiny and odd blocks, stream division on and off.
PLANS_2D = [(1, "8", "off"), (2, "9", "3"), (3, "13", "off"), (4, "17", "5"), (5, "21", "2")]
PLANS_3D = [(1, "6x5", "off"), (2, "7x9", "2"), (3, "11x8", "off")]
SIZES_2D = [{"n": "11", "m": "13"}, {"n": "5", "m": "3"}, {"n": "4", "m": "19"}]


def modes(path: str) -> list[str]:
    _, info = driver.load(path)
    return ["none"] + (["nondiag"] if info.diagonal_free else [])


def plan_cases(name: str):
    three_d = name.endswith("3d")
    for bt, bs, sl in PLANS_3D if three_d else PLANS_2D:
        for steps in (0, 1, 2, 3, 7):
            for sizes in [{}] if three_d else SIZES_2D[(bt + steps) % 3:][:1]:
                yield bt, bs, sl, steps, sizes


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_read_only_arrays_match_gcc_bit_for_bit(tmp_path, name):
    path = write(tmp_path, name)
    checked = 0
    for mode in modes(path):
        for bt, bs, sl, steps, sizes in plan_cases(name):
            params = {"T": str(steps), **sizes, **PROGRAMS[name][1]}
            options = driver.Options(bt=bt, bs=bs, sl=sl, opt=mode)
            report = verify.verify_file(path, options, "sim", params, seed=bt + steps)
            assert report.passed and report.comparison.tolerance is None, \
                (mode, bt, bs, sl, steps, sizes, report.lines())
            checked += 1
    assert checked >= 15


def test_analysis_keeps_the_read_only_arrays_in_order(tmp_path):
    _, info = driver.load(write(tmp_path, "planes_rows"))
    assert [c.name for c in info.coefficients] == ["cz", "row", "c"]
    assert [c.elem_type for c in info.coefficients] == ["double", "float", "double"]
    assert info.program.arrays[0].name == "A"


@pytest.mark.parametrize("name", ["conductivity", "planes_rows", "velocity3d"])
def test_each_coefficient_reaches_the_result(tmp_path, name):
    """Changing one read-only array's values changes the simulated result as it changes
    gcc's: the simulator reads the arrays it is given, where the oracle reads them."""
    path = write(tmp_path, name)
    program, info = driver.load(path)
    sizes = {} if name.endswith("3d") else SIZES_2D[0]
    env = resolve_params(program, {"T": "3", **sizes, **PROGRAMS[name][1]})
    plan = driver.blocking_plan(info, 2, sl=None,
                                bs=(7, 9) if info.ndim == 3 else (9,))
    shape = (2, *(d.size for d in grid_extents(info, env)))
    grid = verify.random_grid(shape, info.dtype, 1)
    read_only = verify.random_read_only(program, env, 1)
    b = verify.result_buffer(info, env)
    base = simulate(info, plan, grid, env, driver.emitted_schedule(info, plan), read_only)
    for k in range(len(read_only)):
        changed = list(read_only)
        changed[k] = (read_only[k] * 1.5).astype(read_only[k].dtype)
        got = simulate(info, plan, grid, env, driver.emitted_schedule(info, plan),
                       tuple(changed))
        expected = grid.copy()
        build_reference(program).run(expected, env, tuple(changed))
        assert not np.array_equal(got[b], base[b]), info.coefficients[k].name
        assert verify.compare(got[b], expected[b], None).passed


def test_a_wrong_coefficient_array_fails_verification(tmp_path):
    """The oracle gets the arrays, the simulator a shifted copy of one: the comparison
    fails (so a simulator reading a wrong coefficient cell could not pass)."""
    path = write(tmp_path, "conductivity")
    program, info = driver.load(path)
    env = resolve_params(program, {"T": "2", **SIZES_2D[0]})
    plan = driver.blocking_plan(info, 2, bs=(9,))
    shape = (2, *(d.size for d in grid_extents(info, env)))
    grid = verify.random_grid(shape, info.dtype, 3)
    (k,) = verify.random_read_only(program, env, 3)
    expected = grid.copy()
    build_reference(program).run(expected, env, (k,))
    got = simulate(info, plan, grid, env, None, (np.roll(k, 1, axis=0),))
    b = verify.result_buffer(info, env)
    assert not verify.compare(got[b], expected[b], None).passed


# --------------------------------------------------------------------------- random programs


@st.composite
def coefficient_programs(draw):
    """A random stencil with 1-3 read-only arrays: each of rank 1..ndim, each subscript a
    distinct grid dimension plus -1..1 or a constant 0..2, declared as a parameter array
    or a pointer (outermost extent from the grid), float or double."""
    ndim = draw(st.sampled_from([2, 3]))
    dtype = draw(st.sampled_from(["float", "double"]))
    names = "ijk"[:ndim]
    sizes = [f"n{d}" for d in range(ndim)]
    suffix = "f" if dtype == "float" else ""
    params = [f"int {s}" for s in sizes] + ["int T", f"{dtype} A[2]" +
                                            "".join(f"[{s}]" for s in sizes)]
    casts, terms = [], [f"0.5{suffix} * A[t%2]" + "".join(f"[{v}]" for v in names)]
    for a in range(draw(st.integers(1, 3))):
        name = f"c{a}"
        etype = draw(st.sampled_from(["float", "double"]))
        rank = draw(st.integers(1, ndim))
        dims = draw(st.permutations(range(ndim)))[:rank]
        subs, extents = [], []
        for d in dims:
            if draw(st.booleans()) or rank == 1:
                off = draw(st.integers(-1, 1))
                subs.append(names[d] + (f"{off:+d}" if off else ""))
                extents.append(sizes[d])
            else:
                subs.append(str(draw(st.integers(0, 2))))
                extents.append("3")
        pointer = subs[0][0] in names and draw(st.booleans())
        if pointer:
            params.append(f"{etype} *{name}_buf")
            inner = "".join(f"[{e}]" for e in extents[1:])
            casts.append(f"  {etype} (*{name}){inner} = ({etype} (*){inner}) {name}_buf;"
                         if inner else f"  {etype} *{name} = {name}_buf;")
        else:
            params.append(f"{etype} {name}" + "".join(f"[{e}]" for e in extents))
        shift = draw(st.sampled_from([(0,) * ndim] + [tuple(int(e == d) * s for e in range(ndim))
                                                        for d in range(ndim) for s in (-1, 1)]))
        neighbour = "".join(f"[{v}{o:+d}]" if o else f"[{v}]" for v, o in zip(names, shift))
        weight = draw(st.sampled_from(["0.125", "0.25", "0.0625"])) + suffix
        terms.append(f"{weight} * {name}" + "".join(f"[{s}]" for s in subs)
                     + f" * A[t%2]{neighbour}")
    loops = "".join(f"{'  ' * (d + 1)}for (int {v} = 1; {v} < {s} - 1; {v}++)\n"
                    for d, (v, s) in enumerate(zip(names, sizes)))
    target = "A[(t+1)%2]" + "".join(f"[{v}]" for v in names)
    text = (f"void kernel({', '.join(params)})\n{{\n" + "\n".join(casts) + "\n#pragma scop\n"
            f"  for (int t = 0; t < T; t++)\n{loops}{'  ' * (ndim + 1)}{target} = "
            + " + ".join(terms) + ";\n#pragma endscop\n}\n")
    return ndim, text


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(program=coefficient_programs(), data=st.data())
def test_random_programs_with_read_only_arrays(tmp_path, program, data):
    ndim, text = program
    path = tmp_path / "random_coef.c"
    path.write_text(text)
    _, info = driver.load(str(path))
    assert info.coefficients
    bt = data.draw(st.integers(1, 3), "bt")
    width = [data.draw(st.integers(2 * bt + 1, 2 * bt + 6), "bs") for _ in range(ndim - 1)]
    sl = data.draw(st.sampled_from(["off", "1", "2", "4"]), "sl")
    mode = data.draw(st.sampled_from(["none"] + (["nondiag"] if info.diagonal_free else [])),
                     "mode")
    params = {f"n{d}": str(data.draw(st.integers(3, 14), f"n{d}")) for d in range(ndim)}
    params["T"] = str(data.draw(st.integers(0, 5), "T"))
    options = driver.Options(bt=bt, bs="x".join(map(str, width)), sl=sl, opt=mode)
    report = verify.verify_file(str(path), options, "sim", params, seed=bt)
    assert report.passed and report.comparison.tolerance is None, (text, report.lines())
