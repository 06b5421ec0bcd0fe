"""The Python API (an5dpy.api) without a GPU: compile from a path or source text, the
stencil's attributes and files, simulate against the gcc oracle, parameters bound from
shapes and steps, errors with coordinates and without command-line wording, and the
README's example. tests/gpu/test_api_gpu.py runs the same stencils on cupy arrays."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
from array_support import same_bits

from an5dpy.check.verify import random_grid
import pytest

import an5dpy
from an5dpy import OptionError, Stencil, UnsupportedInput, UsageError
from an5dpy.api import bind
from an5dpy.cuda.runtime import BuildOptions, nvcc_path
from an5dpy.driver import Options, translate

from paths import C_INPUTS, REPO

J2D5PT = os.path.join(C_INPUTS, "j2d5pt.c")
STAR3D1R = os.path.join(C_INPUTS, "star3d1r.c")

# A program with its own parameter names, a coefficient and a definition chain.
COEFF_SOURCE = """\
void step(int m, int T, float c, float *buf)
{
  int n = 2 * m + 1;
  float (*A)[n][n] = (float (*)[n][n])buf;
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = c * (A[t%2][i-1][j] + A[t%2][i+1][j] + A[t%2][i][j-1]
                                + A[t%2][i][j+1]) + A[t%2][i][j];
#pragma endscop
}
"""


# --------------------------------------------------------------------------- compile


def test_compile_from_a_path_is_what_an5d_translate_writes():
    stencil = an5dpy.compile(J2D5PT, dtype="float", bt=2, bs=64, sl=16)
    assert isinstance(stencil, Stencil)
    expected = translate(J2D5PT, Options(bt=2, bs="64", sl=16,
                                         defines=(("SB_TYPE", "float"),)))
    assert stencil.files == expected.outputs
    assert sorted(stencil.files) == ["j2d5pt_host.cu", "j2d5pt_kernel.cu", "j2d5pt_kernel.hu"]
    assert stencil.info.dtype == "float" and stencil.info.ndim == 2
    assert (stencil.plan.bt, stencil.plan.bs, stencil.plan.sl) == (2, (64,), 16)
    assert stencil.plan.mode.value == stencil.info.opt == "nondiag"
    assert stencil.params == ("timestep", "dimsize", "compsize")
    assert stencil.name == J2D5PT and "bt=2 bs=64 sl=16" in repr(stencil)
    stencil.files.clear()  # a copy: the stencil keeps its files
    assert len(stencil.files) == 3


def test_compile_from_source_text_and_path_like_agree():
    text = Path(J2D5PT).read_text()
    from_text = an5dpy.compile(text, dtype="double", include_dirs=[C_INPUTS], bt=3,
                               name="j2d5pt.c")
    from_path = an5dpy.compile(Path(J2D5PT), dtype="double", bt=3)
    assert from_text.name == "j2d5pt.c" and from_path.name == J2D5PT
    for name in ("j2d5pt_kernel.cu", "j2d5pt_kernel.hu"):  # the same but for the name
        assert from_text.files[name] == from_path.files[name].replace(J2D5PT, "j2d5pt.c")
    assert from_text.plan == from_path.plan and from_text.info.dtype == "double"
    default = an5dpy.compile(COEFF_SOURCE)
    assert sorted(default.files) == ["stencil_host.cu", "stencil_kernel.cu",
                                     "stencil_kernel.hu"]


def test_source_or_path_is_decided_by_the_argument():
    one_line = "#pragma scop for (t = 0; t < T; t++) x; #pragma endscop"
    with pytest.raises(UnsupportedInput) as err:  # source text: read, then refused
        an5dpy.compile(one_line)
    assert err.value.coord is not None and err.value.coord.file == "stencil.c"
    with pytest.raises(UnsupportedInput, match="cannot read 'no_such.c': no such file"):
        an5dpy.compile("no_such.c")
    with pytest.raises(UsageError, match="path or C source text, not bytes"):
        an5dpy.compile(b"#pragma scop\n")


def test_defines_and_dtype():
    mapping = an5dpy.compile(J2D5PT, defines={"SB_TYPE": "double"})
    pairs = an5dpy.compile(J2D5PT, defines=[("SB_TYPE", "double")], dtype="double")
    assert mapping.files == pairs.files and mapping.info.dtype == "double"
    with pytest.raises(OptionError, match="dtype='float': contradicts defines SB_TYPE='double'"):
        an5dpy.compile(J2D5PT, defines={"SB_TYPE": "double"}, dtype="float")
    with pytest.raises(OptionError, match="dtype='double': 'A' is declared float"):
        an5dpy.compile(COEFF_SOURCE, dtype="double")
    with pytest.raises(UsageError, match="not a \\(NAME, VALUE\\) pair"):
        an5dpy.compile(J2D5PT, defines=[("SB TYPE", "float")])


def test_block_sizes_in_every_spelling_give_one_plan():
    plans = {an5dpy.compile(STAR3D1R, dtype="float", bt=1, bs=bs).plan
             for bs in ((8, 32), "32x8", [8, 32])}
    assert len(plans) == 1 and plans.pop().bs == (8, 32)
    assert an5dpy.compile(J2D5PT, dtype="float", bs=96).plan.bs == (96,)


def test_write_is_atomic(tmp_path):
    stencil = an5dpy.compile(J2D5PT, dtype="float", bt=2)
    written = stencil.write(tmp_path / "out")
    assert sorted(p.name for p in written) == sorted(stencil.files)
    for path in written:
        assert path.read_text() == stencil.files[path.name]
    blocked = tmp_path / "blocked"
    (blocked / "j2d5pt_kernel.cu").mkdir(parents=True)
    with pytest.raises(UnsupportedInput, match="is a directory"):
        stencil.write(blocked)
    assert sorted(p.name for p in blocked.iterdir()) == ["j2d5pt_kernel.cu"]


# --------------------------------------------------------------------------- running


@pytest.mark.parametrize("path, dtype, opt, shape, steps", [
    (J2D5PT, "float", "nondiag", (2, 37, 37), 7),
    (J2D5PT, "double", "none", (2, 37, 37), 7),
    (STAR3D1R, "float", "nondiag", (2, 13, 13, 13), 5),
    (STAR3D1R, "double", "none", (2, 13, 13, 13), 5),
])
def test_simulate_equals_reference_bit_for_bit(path, dtype, opt, shape, steps):
    bs = 32 if len(shape) == 3 else (8, 16)
    stencil = an5dpy.compile(path, dtype=dtype, bt=3, bs=bs, opt=opt)
    grid = random_grid(shape, dtype, seed=steps)
    before = grid.copy()
    oracle = grid.copy()
    result = stencil.simulate(grid, steps)
    expected = stencil.reference(oracle, steps)
    assert np.shares_memory(result, grid) and np.shares_memory(expected, oracle)
    assert not same_bits(result, before[steps % 2])  # in place: the grid moved on
    assert same_bits(result, expected)
    assert result.shape == shape[1:]


def test_mapping_and_parameters_by_name():
    stencil = an5dpy.compile(COEFF_SOURCE)
    grid = random_grid((2, 11, 11), "float", 0)  # n = 2m + 1 = 11: m = 5
    oracle = grid.copy()
    result = stencil.simulate({"A": grid}, 4, c=0.125)
    expected = stencil.reference(oracle, T=4, c=0.125, m=5)
    assert same_bits(result, expected)
    env = bind(stencil.info, (2, 11, 11), 4, {"c": 0.125})
    assert env == {"T": 4, "n": 11, "m": 5, "c": 0.125}


def test_parameters_come_from_the_shape_and_steps():
    stencil = an5dpy.compile(J2D5PT, dtype="float", bt=2, bs=32)
    env = bind(stencil.info, (2, 20, 20), 6, {})
    assert (env["dimsize"], env["compsize"], env["timestep"]) == (20, 18, 6)
    assert bind(stencil.info, (2, 20, 20), None, {"timestep": 6}) == env
    assert bind(stencil.info, (2, 20, 20), 6, {"compsize": 18, "dimsize": 20}) == env
    assert bind(stencil.info, (2, 20, 20), 0, {})["timestep"] == 0


@pytest.mark.parametrize("grid, steps, params, message", [
    (np.zeros((2, 20, 21), np.float32), 1, {}, r"shape \(2, 20, 21\) does not fit "
                                                r"A\[2\]\[dimsize\]\[dimsize\]"),
    (np.zeros((2, 20, 20), np.float32), 1, {"compsize": 10},
     r"extent 1 \(dimsize\) is 12 with dimsize=12, not 20"),
    (np.zeros((2, 20, 20), np.float32), 3, {"timestep": 4}, "steps=3 contradicts"),
    (np.zeros((2, 20, 20), np.float32), None, {}, r"missing value for parameter timestep "
                                                  r"\(int\): pass timestep=VALUE \(steps=N"),
    (np.zeros((2, 20, 20), np.float32), 1, {"size": 3}, "unknown parameter 'size'"),
    (np.zeros((2, 20, 20), np.float32), 1, {"compsize": 2.5}, "'compsize' is an int"),
    (np.zeros((2, 20, 20), np.float32), -1, {}, r"steps=-1: expected an integer >= 0"),
    (np.zeros((20, 20), np.float32), 1, {}, r"shape \(20, 20\); 'A' is A\[2\]\[dimsize\]"),
    (np.zeros((3, 20, 20), np.float32), 1, {}, "2 time buffers"),
    (np.zeros((2, 20, 20), np.float64), 1, {}, "dtype float64; 'A' holds float"),
    (np.zeros((2, 20, 40), np.float32)[:, :, ::2], 1, {}, "C-contiguous"),
    ([[0.0]], 1, {}, "take a numpy array, not list"),
    ({"B": np.zeros((2, 20, 20), np.float32)}, 1, {}, r"expected \{'A': ...\}"),
])
def test_wrong_arrays_and_parameters_are_refused(grid, steps, params, message):
    stencil = an5dpy.compile(J2D5PT, dtype="float", bt=2, bs=32)
    with pytest.raises(UsageError, match=message) as err:
        stencil.simulate(grid, steps, **params)
    assert not re.search(r"(^|\s)-P\b|--\w", str(err.value))


def test_missing_coefficients_are_named():
    stencil = an5dpy.compile(COEFF_SOURCE)
    with pytest.raises(UsageError, match=r"missing value for parameter c \(float\): pass c="):
        stencil.simulate(random_grid((2, 11, 11), "float", 0), 2)
    with pytest.raises(UsageError, match=r"defines n = 2 \* m \+ 1: no integer m gives it "
                                         r"with n=10"):
        stencil.simulate(random_grid((2, 10, 10), "float", 0), 2, c=1.0)  # n = 2m + 1 is odd
    with pytest.raises(UsageError, match=r"extent 1 \(n\) is 9 with n=9, not 11"):
        stencil.simulate(random_grid((2, 11, 11), "float", 0), 2, c=1.0, m=4)
    with pytest.raises(UsageError, match=r"defines n = 2 \* m \+ 1, which is 11, but n=9"):
        stencil.simulate(random_grid((2, 9, 9), "float", 0), 2, c=1.0, m=5, n=9)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("kwargs, message", [
    (dict(bt=0), "bt=0: the temporal degree must be at least 1"),
    (dict(bs=4, bt=4), "bs=4 with bt=4: a block of 4 threads has no compute region"),
    (dict(bs="32x32"), "bs='32x32': a 2D stencil needs one size"),
    (dict(bs="abc"), "bs='abc': expected B1 or B1xB2"),
    (dict(bs=2048, bt=1), "bs=2048: 2048 threads per block exceed"),
    (dict(sl=0), "sl=0: the stream-block length must be at least 1"),
    (dict(opt="fast"), "opt='fast': choose one of nondiag, assoc, none"),
    (dict(bt=1.5), "bt=1.5: expected an integer"),
    (dict(regs=0), "regs=0: must be within 32..255 registers per thread"),
    (dict(regs=7, bt=2, bs=128, sl=128), "regs=7: must be within 32..255"),
    (dict(regs=1000), "regs=1000: must be within 32..255"),
    (dict(dtype="half"), "dtype='half': choose float or double"),
    (dict(barriers="block"), "barriers='block': choose one of level, step"),
    (dict(barriers="step", opt="none", bt=2, bs=128, sl=64),
     "barriers='step': one barrier per step needs mode nondiag"),
])
def test_option_errors_name_keywords_not_flags(kwargs, message):
    with pytest.raises(OptionError) as err:
        an5dpy.compile(J2D5PT, **{"dtype": "float", **kwargs})
    assert str(err.value) == f"error: {message}" or message in str(err.value)
    assert "--" not in str(err.value)
    assert err.value.for_command_line().startswith("error: --")


def test_one_barrier_per_step_is_a_plan_option():
    stencil = an5dpy.compile(J2D5PT, dtype="float", bt=3, bs=128, sl=64, barriers="step")
    assert "barriers=step" in stencil.plan.describe()


def test_computing_at_idle_warps_is_a_plan_option():
    stencil = an5dpy.compile(os.path.join(C_INPUTS, "star3d1r.c"), dtype="double", bt=2,
                             bs="32x32", sl=64, idle="compute")
    assert "idle=compute" in stencil.plan.describe()
    with pytest.raises(OptionError, match="idle='never': choose one of skip, compute"):
        an5dpy.compile(J2D5PT, dtype="float", idle="never")


def test_mode_errors_name_the_mode():
    with pytest.raises(OptionError, match="opt='nondiag': needs a diagonal-access-free"):
        an5dpy.compile(os.path.join(C_INPUTS, "box2d1r.c"), dtype="float", opt="nondiag")


def test_input_errors_carry_the_source_coordinate():
    bad = COEFF_SOURCE.replace("A[t%2][i-1][j]", "A[t%2][i-2][j-1] * A[(t+1)%2][i][j]")
    with pytest.raises(UnsupportedInput) as err:
        an5dpy.compile(bad, name="bad.c")
    coord = err.value.coord
    assert coord is not None and coord.file == "bad.c"
    assert coord.line == 9 and coord.column > 1
    assert str(err.value).startswith(f"bad.c:9:{coord.column}: error: ")


def test_a_leapfrog_update_simulates_as_gcc_runs_it():
    leapfrog = COEFF_SOURCE.replace("A[t%2][i-1][j]", "A[t%2][i-1][j] - A[(t+1)%2][i][j]")
    stencil = an5dpy.compile(leapfrog, name="leapfrog.c", bt=3, bs=(16,))
    assert stencil.plan.levels.rotating
    rng = np.random.default_rng(5)
    for steps in (0, 1, 2, 5, 7):
        grid = rng.random((2, 13, 13)).astype(np.float32)
        want, got = grid.copy(), grid.copy()
        stencil.reference(want, steps=steps, c=0.125)
        stencil.simulate(got, steps=steps, c=0.125)
        assert np.array_equal(got, want), steps  # every buffer: both are levels of the run


# --------------------------------------------------------------------------- module cache key


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed")
def test_module_key_follows_the_source_plan_and_build():
    options = BuildOptions(arch="sm_90")
    one = an5dpy.compile(J2D5PT, dtype="float", bt=2)
    assert one.module_key(options) == an5dpy.compile(J2D5PT, dtype="float",
                                                      bt=2).module_key(options)
    others = {an5dpy.compile(J2D5PT, dtype="float", bt=3).module_key(options),
              an5dpy.compile(J2D5PT, dtype="double", bt=2).module_key(options),
              an5dpy.compile(J2D5PT, dtype="float", bt=2, regs=64).module_key(options),
              one.module_key(BuildOptions(arch="sm_90", exact=True)),
              one.module_key(BuildOptions(arch="sm_80")),
              one.module_key(options)}
    assert len(others) == 6


def test_module_cache_dir_follows_an5d_cache_dir(monkeypatch, tmp_path):
    from an5dpy.api import module_cache_dir
    monkeypatch.setenv("AN5D_CACHE_DIR", str(tmp_path))
    assert module_cache_dir() == tmp_path / "modules"


# --------------------------------------------------------------------------- the package


def test_the_package_exports_the_api():
    for name in ("compile", "Stencil", "UnsupportedInput", "UsageError", "OptionError",
                 "An5dError", "CudaCompileError", "InternalError", "__version__"):
        assert name in an5dpy.__all__ and hasattr(an5dpy, name)
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", an5dpy.__version__)
    assert (Path(an5dpy.__file__).parent / "py.typed").is_file()
    assert '"an5dpy" = ["py.typed"]' in (Path(REPO) / "pyproject.toml").read_text()


def readme_api_examples() -> list[str]:
    text = (Path(REPO) / "README.md").read_text()
    section = text.split("## Python API", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_readme_examples():
    """The README's CPU example runs as printed (from the repository root); the cupy
    one at least compiles and uses only what the API has (tests/gpu runs it)."""
    examples = readme_api_examples()
    assert len(examples) == 2 and "cupy" in examples[0] and "cupy" not in examples[1]
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        exec(compile(examples[1], "README.md", "exec"), {})  # noqa: S102 - our own text
    finally:
        os.chdir(cwd)
    compile(examples[0], "README.md", "exec")
    for method in re.findall(r"stencil\.(\w+)", examples[0]):
        assert hasattr(Stencil, method), method
