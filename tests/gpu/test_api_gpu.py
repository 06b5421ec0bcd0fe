"""The Python API on the GPU (pytest -m gpu; skipped without one): ``Stencil.run`` on cupy
arrays, in place and on the device, against the simulator and the gcc oracle (bit-identical
in an exact build, modes nondiag and none), the module cache, ``bench``, and the README's
cupy example."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from array_support import same_bits

import an5dpy
from an5dpy.check.verify import random_grid
from an5dpy import UsageError
from an5dpy.cuda import runtime

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]
C_INPUTS = REPO / "c_inputs"


@pytest.fixture
def cache_dir(monkeypatch, tmp_path):
    """A fresh module cache: on disk under tmp_path, nothing loaded in memory."""
    monkeypatch.setenv("AN5D_CACHE_DIR", str(tmp_path))
    runtime.clear_loaded_modules()
    yield tmp_path / "modules"
    runtime.clear_loaded_modules()


@pytest.mark.parametrize("name, dtype, opt, plan, shape, steps", [
    ("j2d5pt", "float", "nondiag", dict(bt=3, bs=64, sl=16), (2, 70, 70), 7),
    ("j2d5pt", "double", "none", dict(bt=3, bs=64, sl=16), (2, 70, 70), 7),
    ("star3d1r", "float", "nondiag", dict(bt=2, bs=(8, 16)), (2, 21, 21, 21), 5),
    ("star3d1r", "double", "none", dict(bt=2, bs=(8, 16)), (2, 21, 21, 21), 5),
])
def test_run_equals_simulate_and_gcc_on_the_device(monkeypatch, cache_dir, name, dtype, opt,
                                                   plan, shape, steps):
    import cupy
    stencil = an5dpy.compile(C_INPUTS / f"{name}.c", dtype=dtype, opt=opt, exact=True, **plan)
    host = random_grid(shape, dtype, seed=steps)
    simulated, oracle = host.copy(), host.copy()
    grid = cupy.asarray(host)
    pointer = grid.data.ptr

    def no_host_copy(*args, **kwargs):
        raise AssertionError("run() copied device data to the host")

    with monkeypatch.context() as m:  # run() must not go through the host
        m.setattr(cupy, "asnumpy", no_host_copy)
        m.setattr(runtime.CupyRunner, "run_numpy", no_host_copy)
        result = stencil.run(grid, steps)
    cupy.cuda.Device().synchronize()
    buffer = steps % 2  # j2d5pt and star3d1r start at t = 0 in buffer 0
    assert grid.data.ptr == pointer  # the same allocation, updated in place
    assert result.data.ptr == pointer + buffer * grid[0].nbytes and result.shape == shape[1:]
    on_device = cupy.asnumpy(grid)
    assert not same_bits(on_device[buffer], host[buffer])
    expected_sim = stencil.simulate(simulated, steps)
    expected_gcc = stencil.reference(oracle, steps)
    assert same_bits(on_device[buffer], expected_sim)
    assert same_bits(on_device[buffer], expected_gcc)


def test_run_takes_a_mapping_and_parameters(cache_dir):
    import cupy
    stencil = an5dpy.compile(C_INPUTS / "j2d5pt.c", dtype="float", bt=2, bs=32, exact=True)
    host = random_grid((2, 40, 40), "float", 0)
    oracle = host.copy()
    grid = cupy.asarray(host)
    result = stencil.run({"A": grid}, timestep=5, compsize=38)
    expected = stencil.reference(oracle, 5)
    assert same_bits(cupy.asnumpy(result), expected)
    with pytest.raises(UsageError, match="run\\(\\) takes a cupy array, not ndarray"):
        stencil.run(host, 5)
    with pytest.raises(UsageError, match="extent 1 \\(dimsize\\) is 12"):
        stencil.run(grid, 5, compsize=10)


def test_modules_are_cached_in_memory_and_on_disk(monkeypatch, cache_dir):
    import cupy
    path = C_INPUTS / "star3d1r.c"
    first = an5dpy.compile(path, dtype="float", bt=2, bs=(8, 16))
    runner, origin = first.load_module()
    assert origin == "built"
    stored = sorted(p.suffix for p in cache_dir.iterdir())
    assert stored == [".cubin", ".log"]
    second = an5dpy.compile(path, dtype="float", bt=2, bs=(8, 16))
    again, origin = second.load_module()
    assert origin == "memory" and again is runner
    other, origin = an5dpy.compile(path, dtype="float", bt=1, bs=(8, 16)).load_module()
    assert origin == "built" and other is not runner

    runtime.clear_loaded_modules()

    def no_nvcc(*args, **kwargs):
        raise AssertionError("nvcc ran for a cached module")

    monkeypatch.setattr(runtime, "compile_cubin", no_nvcc)
    third = an5dpy.compile(path, dtype="float", bt=2, bs=(8, 16))
    loaded, origin = third.load_module()
    assert origin == "disk" and loaded is not runner
    assert Path(loaded.cubin.path).parent == cache_dir
    assert loaded.cubin.resources == runner.cubin.resources  # ptxas' report kept
    host = random_grid((2, 12, 12, 12), "float", 0)
    grid = cupy.asarray(host)
    third.run(grid, 3)
    other_grid = cupy.asarray(host)
    first.run(other_grid, 3)  # the module third loaded (same key)
    assert same_bits(cupy.asnumpy(grid), cupy.asnumpy(other_grid))


def test_bench_times_the_run(cache_dir):
    stencil = an5dpy.compile(C_INPUTS / "j2d5pt.c", dtype="float", bt=4, bs=128, sl=128)
    result = stencil.bench(20, compsize=512, repeats=2)
    assert len(result.times) == 2 and result.seconds > 0
    cells = 512 * 512 * stencil.info.flops_per_cell * 20
    assert result.gflops == pytest.approx(cells / result.seconds / 1e9)
    assert result.plan == stencil.plan and "--use_fast_math" in result.flags


def test_the_readme_cupy_example(cache_dir, capsys):
    text = (REPO / "README.md").read_text()
    section = text.split("## Python API", 1)[1].split("\n## ", 1)[0]
    example = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        exec(compile(example, "README.md", "exec"), {})  # noqa: S102 - our own text
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "bt=4 bs=128 sl=128" in out and "GFLOP/s" in out
