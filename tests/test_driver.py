"""The pipeline driver: translate, the CUDA runner's build and the tuner's plans all come
from the same stage calls."""

from __future__ import annotations

import os

from paths import C_INPUTS

from an5dpy import driver
from an5dpy.blocking.plan import OlderRead, TimeLevels

FLOAT = (("SB_TYPE", "float"),)


def test_translate_writes_what_generate_prints():
    path = os.path.join(C_INPUTS, "star2d3r.c")
    options = driver.Options(bt=5, bs="128", sl=64, defines=FLOAT, smem_wrap=False, regs=64)
    result = driver.translate(path, options)
    kernels = driver.generate(result.info, result.plan, "star2d3r", smem_wrap=False, regs=64)
    assert list(result.outputs) == ["star2d3r_host.cu", "star2d3r_kernel.cu",
                                    "star2d3r_kernel.hu"]
    assert {k: result.outputs[k] for k in kernels.files()} == kernels.files()
    assert kernels.schedule == result.schedule == driver.emitted_schedule(result.info,
                                                                          result.plan)
    assert "__launch_bounds__" in kernels.kernel_cu


def test_options_reach_the_kernels():
    _, info = driver.load(os.path.join(C_INPUTS, "j2d5pt.c"), FLOAT)
    plan = driver.blocking_plan(info, 3, bs=(128,), sl=128)
    plain = driver.generate(info, plan, "j2d5pt")
    budget = driver.generate(info, plan, "j2d5pt", regs=32)
    assert budget.kernel_cu != plain.kernel_cu and budget.schedule == plain.schedule
    assert driver.generate(info, plan, "j2d5pt", smem_wrap=False).kernel_cu != plain.kernel_cu


def test_the_cuda_runner_builds_the_generated_files(monkeypatch, tmp_path):
    import an5dpy.cuda.runtime as runtime
    _, info = driver.load(os.path.join(C_INPUTS, "j2d5pt.c"), FLOAT)
    plan = driver.blocking_plan(info, 2, bs=(256,), sl=256)
    compiled = []
    monkeypatch.setattr(runtime, "compile_cubin",
                        lambda path, options: compiled.append(path) or "cubin")
    model, cubin = runtime.build_kernels(info, plan, "j2d5pt", directory=str(tmp_path), regs=48)
    expected = driver.generate(info, plan, "j2d5pt", regs=48)
    assert cubin == "cubin" and compiled == [tmp_path / "j2d5pt_kernel.cu"]
    assert model == expected.model
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == expected.files()


# --------------------------------------------------------------------------- time levels

LEVELS = """void f(int n, int T, float A[{k}][n][n])
{{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[{written}][i][j] = {update};
#pragma endscop
}}
"""


def levels(k: int, written: str, update: str):
    return driver.load("levels.c", text=LEVELS.format(k=k, written=written, update=update))[1]


def test_rotating_programs_get_a_rotating_plan():
    plain = levels(2, "(t+1)%2", "A[t%2][i-1][j] + A[t%2][i+1][j]")
    leapfrog = levels(2, "(t+1)%2", "A[t%2][i-1][j] - A[(t+1)%2][i][j]")
    three = levels(3, "(t+2)%3", "A[(t+1)%3][i-1][j] + A[(t+1)%3][i+1][j]")
    assert not driver.blocking_plan(plain, 2, bs=(32,)).levels.rotating
    assert driver.blocking_plan(leapfrog, 2, bs=(32,)).levels == TimeLevels(
        2, 2, (OlderRead(2, 0),))
    assert driver.blocking_plan(three, 2, bs=(32,)).levels == TimeLevels(3, 1)
