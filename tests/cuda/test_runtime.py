"""Build helpers that need no GPU: nvcc flags, ptxas' resource report, its lookups, the
module cache."""

from __future__ import annotations

import os

import pytest

from an5dpy.cuda.runtime import BuildOptions, Cubin, nvcc_path, parse_ptxas_report

from paths import C_INPUTS

LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'an5d_j2d5pt_naive' for 'sm_90'
ptxas info    : Function properties for an5d_j2d5pt_naive
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 18 registers, used 0 barriers
ptxas info    : Compiling entry function 'an5d_j2d5pt_kernel_d10' for 'sm_90'
ptxas info    : Function properties for an5d_j2d5pt_kernel_d10
    8 bytes stack frame, 8 bytes spill stores, 24 bytes spill loads
ptxas info    : Used 64 registers, used 1 barriers, 2064 bytes smem
ptxas info    : Compiling entry function 'an5d_j2d5pt_kernel_d1' for 'sm_90'
ptxas info    : Function properties for an5d_j2d5pt_kernel_d1
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 28 registers, used 1 barriers, 2064 bytes smem
"""


def test_ptxas_report_per_kernel():
    res = parse_ptxas_report(LOG)
    assert [r.name for r in res] == ["an5d_j2d5pt_naive", "an5d_j2d5pt_kernel_d10",
                                     "an5d_j2d5pt_kernel_d1"]
    d10 = res[1]
    assert (d10.registers, d10.stack, d10.spill_stores, d10.spill_loads, d10.smem) == \
        (64, 8, 8, 24, 2064) and d10.spills
    assert not res[2].spills and res[0].registers == 18


def test_cubin_lookups_match_whole_names():
    cubin = Cubin("k.cubin", parse_ptxas_report(LOG), LOG)
    assert cubin.kernel("_kernel_d1").registers == 28  # not the d10 kernel
    assert cubin.kernel("_kernel_d10").registers == 64
    assert cubin.kernel("_kernel_d4") is None
    assert [r.registers for r in cubin.kernels("_kernel_d")] == [64, 28]


def test_build_flags():
    assert BuildOptions().flags() == ["-O3", "-arch=sm_90", "--use_fast_math"]
    exact = BuildOptions(arch="sm_80", exact=True, maxrregcount=64).flags()
    assert "-fmad=false" in exact and "--use_fast_math" not in exact
    assert "-arch=sm_80" in exact and "-maxrregcount=64" in exact


def test_grids_whose_planes_overflow_32_bit_offsets_are_refused_like_the_launch_does():
    from an5dpy.errors import UsageError
    from an5dpy.blocking.plan import DimExtent
    from an5dpy.cuda.runtime import check_plane_cells

    def dims(*sizes):
        return tuple(DimExtent(1, n - 2, n) for n in sizes)

    check_plane_cells(dims(3, 46340, 46340))       # 2,147,395,600 cells: fits
    check_plane_cells(dims(2 ** 31 - 1, 2 ** 31 - 1))  # 2D: the plane is one row
    with pytest.raises(UsageError, match="2147488281 cells"):
        check_plane_cells(dims(3, 46341, 46341))


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed")
def test_cached_runner_builds_once_then_reuses_memory_and_disk(monkeypatch, tmp_path):
    """The cache's bookkeeping without a GPU: a stand-in for cupy's device and for the
    runner (which would load the module), nvcc for real."""
    import sys
    import types

    from an5dpy import driver
    from an5dpy.cuda import runtime

    device = types.SimpleNamespace(id=0)
    fake_cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(Device=lambda: device))
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    monkeypatch.setattr(runtime, "CupyRunner", lambda *args: types.SimpleNamespace(args=args))
    runtime.clear_loaded_modules()
    _, info = driver.load(os.path.join(C_INPUTS, "j2d5pt.c"), (("SB_TYPE", "float"),))
    plan = driver.blocking_plan(info, 2, bs=(64,))
    kernels = driver.generate(info, plan, "j2d5pt")
    options = BuildOptions(arch="sm_90")
    try:
        built, origin = runtime.cached_runner(info, plan, kernels, options, "k1", tmp_path)
        assert origin == "built"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["k1.cubin", "k1.log"]
        cubin = built.args[2]
        assert cubin.path == str(tmp_path / "k1.cubin") and cubin.kernel("_kernel_d2")
        assert runtime.cached_runner(info, plan, kernels, options, "k1", tmp_path) == (
            built, "memory")
        device.id = 1  # another device loads its own module, from the disk
        on_disk, origin = runtime.cached_runner(info, plan, kernels, options, "k1", tmp_path)
        assert origin == "disk" and on_disk is not built
        assert on_disk.args[2].resources == cubin.resources
        assert on_disk.args[3:] == built.args[3:] == (kernels.model.prefix,
                                                      kernels.model.signature)
        _, origin = runtime.cached_runner(info, plan, kernels, options, "k2", None)
        assert origin == "built" and sorted(p.name for p in tmp_path.iterdir()) == [
            "k1.cubin", "k1.log"]  # no directory: nothing stored
    finally:
        runtime.clear_loaded_modules()


def test_launch_args_follow_the_kernels_parameters(tmp_path):
    """The runtime passes sizes, scalars, then each read-only array and the extents the
    kernels take, in the order and C types of the kernels' parameter list."""
    import re

    import numpy as np

    from an5dpy import driver
    from an5dpy.blocking.plan import grid_extents
    from an5dpy.check.reference import resolve_params
    from an5dpy.cuda.runtime import coefficient_shape, launch_args

    from read_only_support import write

    program, info = driver.load(write(tmp_path, "planes_rows"))
    env = resolve_params(program, {"n": 11, "m": 13, "T": 3})
    kernels = driver.generate(info, driver.blocking_plan(info, 2, bs=(16,)), "pr")
    arrays = {c.name: object() for c in info.coefficients}
    args = launch_args(kernels.model.signature, info, grid_extents(info, env), env, arrays)
    assert [type(a) for a in args[:6]] == [np.int32] * 6
    assert [int(a) for a in args[:6]] == [11, 13, 1, 9, 1, 11]
    assert args[6:] == [arrays["cz"], 11, arrays["row"], 13, arrays["c"], 13]
    assert all(type(a) is np.int32 for a in args[7::2])
    assert coefficient_shape(info, "c", env) == (3, 13)
    kernel = re.search(r"an5d_pr_kernel_d2\((.*?)\)\n\{", kernels.kernel_cu, re.S).group(1)
    params = [p.strip() for p in kernel.split(",")][4:]  # after the four buffers
    assert len(params) == len(args)
    assert [p.split()[0] for p in params[:6]] == ["int"] * 6
    assert params[6:] == ["const double *__restrict__ an5d_coef_cz", "int an5d_coefn0_cz",
                          "const float *__restrict__ an5d_coef_row", "int an5d_coefn0_row",
                          "const double *__restrict__ an5d_coef_c", "int an5d_coefn1_c"]


def kernel_functions(text: str) -> dict[int, str]:
    """Each ``..._kernel_d<degree>`` function of a kernel file, by degree: its text from
    the section comment before it to the next one, the host launcher after the last one
    left out (it names the file's degrees, not the kernel)."""
    import re
    parts = re.split(r"(?=/\* ---- temporal degree )", text.split("/* ---- naive")[0])
    out = {}
    for part in parts[1:]:
        degree = int(re.match(r"/\* ---- temporal degree (\d+)", part).group(1))
        out[degree] = part.split("\nextern \"C\" cudaError_t")[0]
    return out


@pytest.mark.parametrize("case", [
    ("j2d5pt", "float", dict(bt=6, bs=(256,), sl=128)),
    ("star2d1r", "float", dict(bt=5, bs=(512,), sl=256, coarsen=2, barriers="step")),
    ("box3d1r", "double", dict(bt=3, bs=(32, 32), sl=64, opt="assoc")),
    ("star3d2r", "float", dict(bt=2, bs=(16, 32), sl=None)),
])
def test_a_timing_build_holds_the_full_kernel_of_the_whole_build_alone(case):
    """The kernels of a timing build (an5dpy.perf.tune.timing_degrees): the full degree's
    kernel, the same text as in the file an5d-translate writes, and no other degree."""
    from an5dpy import driver
    from an5dpy.cuda.kernels import generate
    from an5dpy.perf.tune import timing_degrees

    stencil, dtype, settings = case
    _, info = driver.load(os.path.join(C_INPUTS, f"{stencil}.c"), (("SB_TYPE", dtype),))
    plan = driver.blocking_plan(info, **settings)
    whole = generate(info, plan, stencil, regs=64)
    timing = generate(info, plan, stencil, regs=64, degrees=timing_degrees(plan))
    every, alone = kernel_functions(whole.kernel_cu), kernel_functions(timing.kernel_cu)
    assert sorted(every) == list(plan.kernel_degrees()) and sorted(alone) == [plan.depth]
    assert alone[plan.depth] == every[plan.depth]
    assert timing.kernel_hu == whole.kernel_hu
    assert [k.degree for k in timing.schedule.kernels] == [plan.depth]


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed")
def test_a_timing_build_compiles_to_the_full_kernel_and_the_baseline(tmp_path):
    from an5dpy import driver
    from an5dpy.cuda import runtime
    from an5dpy.perf.tune import timing_degrees

    _, info = driver.load(os.path.join(C_INPUTS, "j2d5pt.c"), (("SB_TYPE", "float"),))
    plan = driver.blocking_plan(info, 4, bs=(128,))
    _, cubin = runtime.build_kernels(info, plan, "j2d5pt", BuildOptions(arch="sm_90"),
                                     directory=str(tmp_path), degrees=timing_degrees(plan))
    assert sorted(r.name for r in cubin.resources) == ["an5d_j2d5pt_kernel_d4",
                                                       "an5d_j2d5pt_naive"]


def test_an_interrupted_nvcc_leaves_none_of_its_children_running(monkeypatch, tmp_path):
    """run_nvcc: nvcc's children (cicc, ptxas) go with it where the wait is interrupted (a
    caller's time limit, Ctrl-C), instead of compiling on for minutes. A stand-in nvcc
    starts a child that would sleep a minute and waits for it; an alarm interrupts."""
    import signal
    import subprocess
    import time
    from an5dpy.cuda import runtime
    pid_file = tmp_path / "child.pid"
    fake = tmp_path / "nvcc"
    fake.write_text(f"#!/bin/sh\nsleep 60 &\necho $! > {pid_file}\nwait\n")
    fake.chmod(0o755)
    monkeypatch.setattr(runtime, "nvcc_path", lambda: str(fake))

    class Interrupted(Exception):
        pass

    def interrupt(signum, frame):
        raise Interrupted
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(Interrupted):
            runtime.run_nvcc(["-cubin"])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    child = int(pid_file.read_text())
    for _ in range(50):  # the kill is sent; the child may take a moment to go
        if subprocess.run(["ps", "-o", "stat=", "-p", str(child)], capture_output=True,
                          text=True).stdout.strip() in ("", "Z"):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"nvcc's child {child} still runs")
