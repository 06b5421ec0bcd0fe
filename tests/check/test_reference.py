"""The gcc oracle (an5dpy.check.reference): it must run the user's loop nest exactly."""

from __future__ import annotations

import os

import numpy as np
import pytest

from an5dpy.errors import UsageError
from an5dpy.frontend import read_program, read_program_text
from an5dpy.ir import Affine, Param
from an5dpy.check.reference import (ReferenceKernel, build_reference, reference_source,
                              resolve_params)

from paths import REPO

FIVE_POINT = """
void step(int nx, int ny, int T, {t} A[2][nx][ny], {t} c)
{{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < nx - 1; i++)
      for (int j = 1; j < ny - 1; j++)
        A[(t+1)%2][i][j] = c * A[t%2][i][j]
            + {w} * (A[t%2][i-1][j] + A[t%2][i+1][j] + A[t%2][i][j-1] + A[t%2][i][j+1]);
#pragma endscop
}}
"""


def five_point(dtype: str):
    weight = "0.1f" if dtype == "float" else "0.1"
    return read_program_text(FIVE_POINT.format(t=dtype, w=weight), f"five_{dtype}.c")


def five_point_numpy(grid: np.ndarray, steps: int, c: float) -> None:
    """The same loop nest in numpy scalars: same operations, same order, same types."""
    np_type = grid.dtype.type
    c, w = np_type(c), np_type(0.1)
    nx, ny = grid.shape[1:]
    for t in range(steps):
        old, new = grid[t % 2], grid[(t + 1) % 2]
        for i in range(1, nx - 1):
            for j in range(1, ny - 1):
                new[i, j] = c * old[i, j] + w * (((old[i - 1, j] + old[i + 1, j])
                                                  + old[i, j - 1]) + old[i, j + 1])


@pytest.mark.parametrize("dtype,np_dtype", [("float", np.float32), ("double", np.float64)])
@pytest.mark.parametrize("steps", [0, 1, 4])
def test_five_point_matches_numpy_bit_for_bit(dtype, np_dtype, steps):
    program = five_point(dtype)
    kernel = build_reference(program)
    grid = np.random.default_rng(7).random((2, 7, 9)).astype(np_dtype)
    expected = grid.copy()
    kernel.run(grid, {"nx": 7, "ny": 9, "T": steps, "c": 0.6})
    five_point_numpy(expected, steps, float(np_dtype(0.6)))
    assert grid.tobytes() == expected.tobytes()


def test_build_reference_is_cached():
    assert build_reference(five_point("float")) is build_reference(five_point("float"))


def test_reference_source_wraps_the_scop_text():
    program = five_point("double")
    source = reference_source(program)
    assert "void an5d_reference(void *an5d_buf, int T, int nx, int ny, double c)" in source
    assert "double (*A)[nx][ny] = (double (*)[nx][ny])an5d_buf;" in source
    assert program.scop.preprocessed_text.rstrip("\n") in source


def test_loop_variables_declared_outside_the_nest():
    program = read_program(os.path.join(REPO, "tests", "data", "frontend", "loop_variants.c"))
    assert "  int t, i, j;" in reference_source(program)
    kernel = build_reference(program)
    n, steps = 6, 3
    grid = np.random.default_rng(1).random((2, n, n))
    expected = grid.copy()
    kernel.run(grid, {"steps": steps, "n": n})
    for t in range(1, steps + 1):  # (1 + t) % 2 is the old buffer, like (t - 1) % 2
        new, old = expected[t % 2], expected[(t - 1) % 2]
        for i in range(1, n - 1):
            for j in range(0, n - 1):
                new[i, j] = 0.5 * old[i - 1, j] + 0.25 * (old[i, j] + old[i, j + 1])
    assert grid.tobytes() == expected.tobytes()


def test_j2d5pt_with_derived_dimsize():
    program = read_program(os.path.join(REPO, "tests", "data", "frontend", "j2d5pt.c"))
    kernel = build_reference(program)
    params = resolve_params(program, {"compsize": "5", "timestep": "3"})
    assert params == {"timestep": 3, "dimsize": 7, "compsize": 5}
    grid = np.random.default_rng(3).random((2, 7, 7)).astype(np.float32)
    expected = grid.copy()
    kernel.run(grid, params)
    f = np.float32
    for t in range(3):
        a, b = expected[t % 2], expected[(t + 1) % 2]
        for i in range(1, 6):
            for j in range(1, 6):
                b[i, j] = ((((f(5.1) * a[i - 1, j] + f(12.1) * a[i, j - 1]) + f(15.0) * a[i, j])
                            + f(12.2) * a[i, j + 1]) + f(5.2) * a[i + 1, j]) / f(118)
    assert grid.tobytes() == expected.tobytes()


def test_global_array_program():
    program = read_program_text(
        "#define N 12\nstatic double u[2][N][N];\nvoid run(int T)\n{\n  int t, i, j;\n"
        "#pragma scop\n  for (t = 0; t < T; t++) for (i = 1; i < N - 1; i++)"
        " for (j = 1; j < N - 1; j++)\n"
        "    u[(t+1)%2][i][j] = sqrt(fabs(u[t%2][i][j-1] * u[t%2][i+1][j]));\n"
        "#pragma endscop\n}\n", "glob.c")
    kernel = build_reference(program)
    grid = np.random.default_rng(5).random((2, 12, 12))
    expected = grid.copy()
    kernel.run(grid, {"T": 2})
    for t in range(2):
        a, b = expected[t % 2], expected[(t + 1) % 2]
        b[1:-1, 1:-1] = np.sqrt(np.abs(a[1:-1, :-2] * a[2:, 1:-1]))
    assert grid.tobytes() == expected.tobytes()


def test_grid_validation():
    program = five_point("float")
    kernel = build_reference(program)
    params = {"nx": 7, "ny": 9, "T": 1, "c": 0.5}
    with pytest.raises(UsageError, match=r"grid has shape \(2, 9, 7\); with these parameters "
                                         r"'A' needs \(2, 7, 9\)"):
        kernel.run(np.zeros((2, 9, 7), np.float32), params)
    with pytest.raises(UsageError, match="grid has dtype float64; 'A' holds float"):
        kernel.run(np.zeros((2, 7, 9)), params)
    with pytest.raises(UsageError, match="C-contiguous"):
        kernel.run(np.zeros((2, 9, 7), np.float32).transpose(0, 2, 1), params)
    with pytest.raises(UsageError, match="missing value for parameter 'c' \\(give -P c=VALUE;"):
        kernel.run(np.zeros((2, 7, 9), np.float32), {"nx": 7, "ny": 9, "T": 1})


TRAPPING = """void kernel(int T, int N, float A[2][N][N])
{
  int t, i, j;
#pragma scop
  for (t = 0; t < T; t++)
    for (i = 1; i < N - 1; i++)
      for (j = 1; j < N - 1; j++)
        A[(t+1)%2][i][j] = A[t%2][i][j] / (float)((int)A[t%2][i][j+1] / (int)A[t%2][i+1][j]);
#pragma endscop
}
"""


@pytest.mark.parametrize("zero, trap", [(True, True), (False, False)])
def test_a_trapping_loop_is_undefined_behaviour_at_the_scop_and_leaves_the_grid(zero, trap):
    """The user's code runs in a child process: an integer division by zero (SIGFPE) stops
    the child, not the caller, and is reported at the scop with the run's parameters; a
    run without the trap updates the grid in place as before."""
    from an5dpy.errors import UndefinedBehaviour

    program = read_program_text(TRAPPING, "trap.c")
    kernel = build_reference(program)
    grid = np.full((2, 6, 6), 3.0, np.float32)
    if zero:
        grid[0, 2, 1] = 0.5  # (int)0.5 == 0: the divisor of cell (1, 1)
    before = grid.copy()
    if trap:
        with pytest.raises(UndefinedBehaviour) as caught:
            kernel.run(grid, {"T": 1, "N": 6})
        assert str(caught.value).startswith("trap.c:4:1: error: the loop nest, compiled by gcc "
                                            "and run with T=1, N=6, was stopped by SIGFPE, an "
                                            "arithmetic trap")
        assert caught.value.exit_status == 2
        assert np.array_equal(grid, before)
    else:
        kernel.run(grid, {"T": 1, "N": 6})
        assert np.array_equal(grid[1, 1:5, 1:5], np.full((4, 4), 3.0, np.float32))
        assert np.array_equal(grid[0], before[0])


# --------------------------------------------------------------------------- time levels
#
# k-level rotations and leapfrog updates: the oracle runs the user's loop on all k buffers.
# Each program is checked against the same loop in numpy scalars (same operations, same
# order, same types) from a time loop starting at ``lower``.

WAVE = """
void wave(int nx, int ny, int T, float p[3][nx][ny], float c2)
{{
#pragma scop
  for (int t = {lower}; t < T; t++)
    for (int i = 1; i < nx - 1; i++)
      for (int j = 1; j < ny - 1; j++)
        p[(t + 2) % 3][i][j] = 2.0f * p[(t + 1) % 3][i][j] - p[t % 3][i][j]
            + c2 * (p[(t+1)%3][i-1][j] + p[(t+1)%3][i+1][j] + p[(t+1)%3][i][j-1]
                    + p[(t+1)%3][i][j+1] - 4.0f * p[(t+1)%3][i][j]);
#pragma endscop
}}
"""

LEAPFROG = """
void leapfrog(int n, int T, double u[2][n][n][n], double vel[n][n][n])
{{
#pragma scop
  for (int t = {lower}; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        for (int k = 1; k < n - 1; k++)
          u[(t+1)%2][i][j][k] = 2.0 * u[t%2][i][j][k] - u[(t+1)%2][i][j][k]
              + vel[i][j][k] * (u[t%2][i-1][j][k] + u[t%2][i+1][j][k] + u[t%2][i][j-1][k]
                                + u[t%2][i][j+1][k] + u[t%2][i][j][k-1] + u[t%2][i][j][k+1]
                                - 6.0 * u[t%2][i][j][k]);
#pragma endscop
}}
"""


def wave_numpy(grid: np.ndarray, lower: int, upper: int, c2: float) -> None:
    f = np.float32
    c2, two, four = f(c2), f(2.0), f(4.0)
    nx, ny = grid.shape[1:]
    for t in range(lower, upper):
        new, cur, old = grid[(t + 2) % 3], grid[(t + 1) % 3], grid[t % 3]
        for i in range(1, nx - 1):
            for j in range(1, ny - 1):
                lap = (((cur[i - 1, j] + cur[i + 1, j]) + cur[i, j - 1]) + cur[i, j + 1]) \
                    - four * cur[i, j]
                new[i, j] = (two * cur[i, j] - old[i, j]) + c2 * lap


def leapfrog_numpy(grid: np.ndarray, vel: np.ndarray, lower: int, upper: int) -> None:
    two, six = np.float64(2.0), np.float64(6.0)
    n = grid.shape[1]
    for t in range(lower, upper):
        new, cur = grid[(t + 1) % 2], grid[t % 2]
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    lap = (((((cur[i - 1, j, k] + cur[i + 1, j, k]) + cur[i, j - 1, k])
                             + cur[i, j + 1, k]) + cur[i, j, k - 1]) + cur[i, j, k + 1]) \
                        - six * cur[i, j, k]
                    new[i, j, k] = (two * cur[i, j, k] - new[i, j, k]) + vel[i, j, k] * lap


@pytest.mark.parametrize("lower", [0, 1, 2])
@pytest.mark.parametrize("steps", [0, 1, 2, 3, 7])
def test_a_three_level_wave_on_three_buffers_matches_numpy(steps, lower):
    program = read_program_text(WAVE.format(lower=lower), f"wave{lower}.c")
    kernel = build_reference(program)
    params = {"nx": 7, "ny": 9, "T": lower + steps, "c2": 0.3}
    assert kernel.grid_shape(params) == (3, 7, 9)
    grid = np.random.default_rng([3, steps]).random((3, 7, 9)).astype(np.float32) + 0.5
    expected = grid.copy()
    kernel.run(grid, params)
    wave_numpy(expected, lower, lower + steps, float(np.float32(0.3)))
    assert grid.tobytes() == expected.tobytes()


@pytest.mark.parametrize("lower", [0, 1])
@pytest.mark.parametrize("steps", [0, 1, 2, 3, 7])
def test_a_leapfrog_update_with_a_read_only_array_matches_numpy(steps, lower):
    program = read_program_text(LEAPFROG.format(lower=lower), f"leapfrog{lower}.c")
    kernel = build_reference(program)
    params = {"n": 5, "T": lower + steps}
    rng = np.random.default_rng([4, steps])
    grid = rng.random((2, 5, 5, 5)) + 0.5
    vel = rng.random((5, 5, 5)) * 0.1
    expected = grid.copy()
    kernel.run(grid, params, (vel,))
    leapfrog_numpy(expected, vel, lower, lower + steps)
    assert grid.tobytes() == expected.tobytes()


def test_the_result_buffer_of_a_rotation_holds_the_newest_level():
    """``verify.result_buffer``: the buffer the last step wrote, for every start and step
    count (the newest level, where the step count is 0: the one the first step reads)."""
    from an5dpy.analysis import analyze
    from an5dpy.check.verify import result_buffer
    for lower in (0, 1, 2):
        program = read_program_text(WAVE.format(lower=lower), f"wave{lower}.c")
        info = analyze(program)
        for steps in range(6):
            env = {"nx": 5, "ny": 5, "T": lower + steps, "c2": 0.3}
            last = lower + steps - 1
            newest = (last + 2) % 3 if steps else info.time.start_buffer(env)
            assert result_buffer(info, env) == newest


def test_three_buffer_grid_validation():
    kernel = build_reference(read_program_text(WAVE.format(lower=0), "wave0.c"))
    with pytest.raises(UsageError, match=r"grid has shape \(2, 7, 9\); with these parameters "
                                         r"'p' needs \(3, 7, 9\) \(3 time buffers x extents\)"):
        kernel.run(np.zeros((2, 7, 9), np.float32), {"nx": 7, "ny": 9, "T": 1, "c2": 0.5})


# --------------------------------------------------------------------------- parameters


def test_resolve_params_converts_strings_by_type():
    program = five_point("float")
    values = resolve_params(program, {"T": "10", "nx": "0x10", "ny": 8, "c": "0.1"})
    assert values == {"T": 10, "nx": 16, "ny": 8, "c": float(np.float32(0.1))}
    assert list(values) == ["T", "nx", "ny", "c"]


def test_resolve_params_derives_definitions_to_a_fixed_point():
    program = read_program(os.path.join(REPO, "tests", "data", "frontend", "params_defs.c"))
    values = resolve_params(program, {"T": 5, "base": 4, "nx": 20})
    # ny = 2*base + 1 = 9; nz = ny - half + 4 = 10 (half = 3, a global constant)
    assert values == {"T": 5, "nz": 10, "ny": 9, "half": 3, "nx": 20,
                      "cz": 0.1, "w": float(np.float32(0.1)), "base": 4}


def test_resolve_params_names_the_root_of_a_missing_definition():
    program = read_program(os.path.join(REPO, "tests", "data", "frontend", "params_defs.c"))
    with pytest.raises(UsageError, match="missing value for parameter 'base' "
                                         r"\(give -P base=VALUE; the program's parameters: "
                                         r"T, nz = -half \+ ny \+ 4, ny = 2 \* base \+ 1, "
                                         r"nx, base\)"):
        resolve_params(program, {"T": 5, "nx": 20})
    with pytest.raises(UsageError, match="missing value for parameter 'T'"):
        resolve_params(program, {"base": 1, "nx": 20})


def test_resolve_params_solves_definitions_backwards():
    """Any variable of a definition chain determines the others: nz = ny - half + 4 and
    ny = 2 * base + 1 (half = 3) give ny 9 and base 4 from nz 10."""
    program = read_program(os.path.join(REPO, "tests", "data", "frontend", "params_defs.c"))
    values = resolve_params(program, {"T": 5, "nz": 10, "nx": 20})
    assert (values["ny"], values["base"]) == (9, 4)
    assert values == resolve_params(program, {"T": 5, "base": 4, "nx": 20})
    assert resolve_params(program, {"T": 5, "ny": 9, "nx": 20})["nz"] == 10
    with pytest.raises(UsageError, match="'ny' is defined as 2 \\* base \\+ 1 in the program; "
                                         "no integer base gives 10"):
        resolve_params(program, {"T": 5, "ny": 10, "nx": 20})
    with pytest.raises(UsageError, match="'nz' is defined as -half \\+ ny \\+ 4 = 10 but -P "
                                         "gives 11"):
        resolve_params(program, {"T": 5, "nz": 11, "base": 4, "nx": 20})


def test_resolve_params_errors():
    program = five_point("float")
    with pytest.raises(UsageError, match="unknown parameter 'm' \\(the program's parameters "
                                         "are: T, nx, ny, c\\)"):
        resolve_params(program, {"m": 1})
    with pytest.raises(UsageError, match="parameter 'T' is an int; '1.5' is not an integer"):
        resolve_params(program, {"T": "1.5", "nx": 1, "ny": 1, "c": 1})
    with pytest.raises(UsageError, match="does not fit its C type int"):
        resolve_params(program, {"T": 2 ** 31, "nx": 1, "ny": 1, "c": 1})
    with pytest.raises(UsageError, match="parameter 'c' is a float; 'x' is not a number"):
        resolve_params(program, {"T": 1, "nx": 1, "ny": 1, "c": "x"})


def test_resolve_params_checks_given_derived_and_constant_values():
    program = read_program(os.path.join(REPO, "tests", "data", "frontend", "j2d5pt.c"))
    assert resolve_params(program, {"compsize": 4, "dimsize": 6, "timestep": 1})["dimsize"] == 6
    with pytest.raises(UsageError, match="'dimsize' is defined as compsize \\+ 2 = 6 but -P "
                                         "gives 9"):
        resolve_params(program, {"compsize": 4, "dimsize": 9, "timestep": 1})
    # compsize is solved from dimsize = compsize + 2
    assert resolve_params(program, {"dimsize": 45, "timestep": 1})["compsize"] == 43
    with pytest.raises(UsageError, match="missing value for parameter 'compsize' \\(give -P "
                                         "compsize=VALUE; the program's parameters: timestep, "
                                         "dimsize = compsize \\+ 2, compsize\\)"):
        resolve_params(program, {"timestep": 1})
    constant = read_program(os.path.join(REPO, "tests", "data", "frontend", "params_defs.c"))
    with pytest.raises(UsageError, match="'half' is a constant \\(3\\)"):
        resolve_params(constant, {"T": 5, "base": 4, "nx": 20, "half": 4})


def test_hand_built_program_params():
    program = five_point("double")
    assert program.params == (Param("T", "int"), Param("nx", "int"), Param("ny", "int"),
                              Param("c", "double"))
    assert program.array.extents == (Affine.var("nx"), Affine.var("ny"))


def test_gcc_failure_is_an_internal_error(tmp_path):
    from an5dpy.errors import InternalError

    program = five_point("float")
    with pytest.raises(InternalError, match="reference"):
        ReferenceKernel(program, cc=str(tmp_path / "no-such-compiler"))


# --------------------------------------------------------------------------- several fields
#
# Programs of several statements (tests/data/multi): one array per field, in
# program.fields order, each (k, *extents), k = 1 for a field updated in place. Each is
# checked against numpy on float32 / float64 arrays with the C expression's operations in
# C's order (each nest reads only cells its own statement does not write, or the cell it
# writes, so whole-array operations are exact).

MULTI = os.path.join(REPO, "tests", "data", "multi")


def multi_program(name: str):
    return read_program(os.path.join(MULTI, f"{name}.c"))


def gray_scott_numpy(u: np.ndarray, v: np.ndarray, steps: int) -> None:
    f = np.float32
    for t in range(steps):
        uo, vo = u[t % 2], v[t % 2]
        un, vn = u[(t + 1) % 2], v[(t + 1) % 2]
        c = (slice(1, -1), slice(1, -1))
        up, vp = uo[c], vo[c]

        def lap(a):
            return (((a[:-2, 1:-1] + a[2:, 1:-1]) - f(4.0) * a[1:-1, 1:-1])
                    + a[1:-1, :-2]) + a[1:-1, 2:]
        un[c] = ((up + f(0.2) * lap(uo)) - (up * vp) * vp) + f(0.03) * (f(1.0) - up)
        vn[c] = ((vp + f(0.1) * lap(vo)) + (up * vp) * vp) - f(0.09) * vp


def fdtd_numpy(ex: np.ndarray, ey: np.ndarray, hz: np.ndarray, steps: int) -> None:
    f = np.float32
    ex, ey, hz = ex[0], ey[0], hz[0]
    for _ in range(steps):
        ey[1:, :] = ey[1:, :] - f(0.5) * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] = ex[:, 1:] - f(0.5) * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] = hz[:-1, :-1] - f(0.7) * (((ex[:-1, 1:] - ex[:-1, :-1]) + ey[1:, :-1])
                                                 - ey[:-1, :-1])


def coupled_numpy(a: np.ndarray, b: np.ndarray, w: np.ndarray, steps: int) -> None:
    a, b = a[0], b[0]
    c = (slice(1, -1),) * 3
    for _ in range(steps):
        a[c] = a[c] + w[1:-1, None, None] * ((b[2:, 1:-1, 1:-1] - b[c]) + b[1:-1, 1:-1, 2:])
        b[c] = 0.25 * (((b[c] + a[:-2, 1:-1, 1:-1]) + a[1:-1, :-2, 1:-1]) + a[1:-1, 1:-1, :-2])


def mixed_numpy(u: np.ndarray, s: np.ndarray, steps: int, c: float) -> None:
    f = np.float32
    s = s[0]
    inner = (slice(1, -1), slice(1, -1))
    for t in range(steps):
        old, new = u[t % 2], u[(t + 1) % 2]
        lap = ((((old[:-2, 1:-1] + old[2:, 1:-1]) + old[1:-1, :-2]) + old[1:-1, 2:])
               - f(4.0) * old[inner])
        new[inner] = old[inner] + f(c) * lap
        s[inner] = f(0.5) * s[inner] + new[inner]


def random_fields(kernel, params, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [rng.random(shape).astype(dtype) for shape in kernel.field_shapes(params)]


@pytest.mark.parametrize("steps", [0, 1, 4])
def test_gray_scott_two_double_buffered_fields_match_numpy(steps):
    program = multi_program("gray_scott")
    kernel = build_reference(program)
    params = {"n": 9, "T": steps}
    assert kernel.field_shapes(params) == ((2, 9, 9), (2, 9, 9))
    u, v = random_fields(kernel, params, [11, steps])
    expected = [u.copy(), v.copy()]
    kernel.run((u, v), params)
    gray_scott_numpy(*expected, steps)
    assert u.tobytes() == expected[0].tobytes() and v.tobytes() == expected[1].tobytes()
    if steps:
        assert not np.array_equal(u, v)


@pytest.mark.parametrize("steps", [0, 1, 3])
def test_fdtd_three_fields_in_place_match_numpy(steps):
    program = multi_program("fdtd_2d")
    kernel = build_reference(program)
    params = {"nx": 7, "ny": 10, "tmax": steps}
    assert kernel.field_shapes(params) == ((1, 7, 10),) * 3
    assert kernel.grid_shape(params) == (1, 7, 10)
    ey, ex, hz = random_fields(kernel, params, [12, steps])  # program.fields order
    expected = {"ex": ex.copy(), "ey": ey.copy(), "hz": hz.copy()}
    kernel.run([ey, ex, hz], params)
    fdtd_numpy(expected["ex"], expected["ey"], expected["hz"], steps)
    for name, got in (("ey", ey), ("ex", ex), ("hz", hz)):
        assert got.tobytes() == expected[name].tobytes(), name


@pytest.mark.parametrize("steps", [0, 2])
def test_coupled_3d_fields_in_place_with_a_read_only_array_match_numpy(steps):
    program = multi_program("coupled_3d_in_place")
    kernel = build_reference(program)
    params = {"n": 6, "T": steps}
    assert kernel.field_shapes(params) == ((1, 6, 6, 6),) * 2
    a, b = random_fields(kernel, params, [13, steps], np.float64)
    w = np.random.default_rng(14).random(6)
    expected = [a.copy(), b.copy()]
    kernel.run((a, b), params, (w,))
    coupled_numpy(*expected, w, steps)
    assert a.tobytes() == expected[0].tobytes() and b.tobytes() == expected[1].tobytes()


@pytest.mark.parametrize("steps", [0, 1, 2, 5])
def test_a_double_buffered_field_beside_one_in_place_matches_numpy(steps):
    program = multi_program("mixed_fields")
    kernel = build_reference(program)
    params = {"n": 8, "T": steps, "c": 0.15}
    assert kernel.field_shapes(params) == ((2, 8, 8), (1, 8, 8))
    u, s = random_fields(kernel, params, [15, steps])
    expected = [u.copy(), s.copy()]
    kernel.run((u, s), params)
    mixed_numpy(*expected, steps, float(np.float32(0.15)))
    assert u.tobytes() == expected[0].tobytes() and s.tobytes() == expected[1].tobytes()


def test_reference_source_of_several_fields():
    source = reference_source(multi_program("fdtd_2d"))
    assert ("void an5d_reference(void *an5d_buf, void *an5d_buf1, void *an5d_buf2, "
            "int tmax, int nx, int ny)") in source
    # fields in place point to their rows, like read-only arrays
    for name, buffer in (("ey", "an5d_buf"), ("ex", "an5d_buf1"), ("hz", "an5d_buf2")):
        assert f"  float (*{name})[ny] = (float (*)[ny]){buffer};" in source
    assert "  int t, i, j;" in source  # every nest's variables, each once
    mixed = reference_source(multi_program("mixed_fields"))
    assert "float (*u)[n][n] = (float (*)[n][n])an5d_buf;" in mixed
    assert "float (*s)[n] = (float (*)[n])an5d_buf1;" in mixed
    coupled = reference_source(multi_program("coupled_3d_in_place"))
    assert "void *an5d_buf, void *an5d_buf1, void *an5d_ro0, int T, int n)" in coupled
    assert "double *w = (double *)an5d_ro0;" in coupled
    assert "  int " not in coupled  # every loop declares its variable


def test_several_fields_validation():
    kernel = build_reference(multi_program("mixed_fields"))
    params = {"n": 8, "T": 1, "c": 0.5}
    u, s = np.zeros((2, 8, 8), np.float32), np.zeros((1, 8, 8), np.float32)
    with pytest.raises(UsageError, match=r"one array is given; the program writes 2 fields "
                                         r"\('u', 's'\): give one numpy array per field"):
        kernel.run(u, params)
    with pytest.raises(UsageError, match="3 arrays are given; the program writes 2 fields"):
        kernel.run((u, s, s), params)
    with pytest.raises(UsageError, match=r"the grid of 's' has shape \(8, 8\); with these "
                                         r"parameters 's' needs \(1, 8, 8\) \(one buffer x "
                                         r"extents: it is updated in place\)"):
        kernel.run((u, s[0]), params)
    with pytest.raises(UsageError, match=r"the grid of 'u' has dtype float64"):
        kernel.run((u.astype(np.float64), s), params)
    with pytest.raises(UsageError, match="the grid of 's' must be a numpy array, not list"):
        kernel.run((u, s.tolist()), params)
    with pytest.raises(UsageError, match="the grid of 'u' must be a writeable C-contiguous"):
        kernel.run((u.transpose(0, 2, 1), s), params)


def test_the_cache_tells_fields_apart():
    import dataclasses
    program = multi_program("mixed_fields")
    assert build_reference(program) is build_reference(multi_program("mixed_fields"))
    u, s = program.fields
    wider = dataclasses.replace(program, arrays=(u, dataclasses.replace(s, extents=(
        s.extents[0], s.extents[1] + 1))))
    assert build_reference(wider) is not build_reference(program)
