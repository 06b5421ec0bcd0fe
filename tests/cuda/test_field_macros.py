"""The CUDA of a time step of several statements (:mod:`an5dpy.cuda.field_macros`, the
render model and templates): per-field registers pasted onto the schedule's register
groups, what each level op does per field (update, carry, boundary values of the parity of
the field's own time), each field's boundary cells, the shared regions written, the host
code's two buffers per field, the naive per-sub-step kernels, and nvcc compiling kernels
and host files of every such program (no GPU needed; tests/gpu/test_fields_gpu.py runs
them)."""

from __future__ import annotations

import concurrent.futures
import glob
import os
import re

import pytest

from an5dpy import driver
from an5dpy.cuda.field_macros import field_level_macros, parity_pointer
from an5dpy.cuda.kernels import generate
from an5dpy.cuda.runtime import nvcc_path

from cuda_support import compile_host, compile_kernels
from paths import C_INPUTS, DATA

MULTI = sorted(glob.glob(os.path.join(DATA, "multi", "*.c")))
C_PROGRAMS = ("grayscott2d.c", "fdtd2d.c", "acousticvp3d.c")


def load(name: str):
    return driver.load(os.path.join(DATA, "multi", name))[1]


@pytest.fixture(scope="module")
def fdtd():
    return load("fdtd_2d.c")


def macro(macros, name: str):
    return next(m for m in macros if m.name == name)


def test_fdtd_levels_alternate_between_its_two_substeps(fdtd):
    """Fields ey, ex, hz: level 1 runs sub-step 0 (ey, ex), level 2 sub-step 1 (hz); the
    field a level does not update keeps its level-1 register."""
    plan = driver.blocking_plan(fdtd, 2, bs=(16,), opt="nondiag")
    macros = field_level_macros(fdtd, plan, 4)
    calc1 = "\n".join(macro(macros, "CALC1").body)
    calc2 = "\n".join(macro(macros, "CALC2").body)
    assert "AN5D_UPDATE_0(" in calc1 and "AN5D_UPDATE_1(" in calc1
    assert "an5d_out##_f2 = an5d_i1##_f2;" in calc1 and "AN5D_UPDATE_2(" not in calc1
    assert "AN5D_UPDATE_2(" in calc2
    assert "an5d_out##_f0 = an5d_i1##_f0;" in calc2
    assert "an5d_out##_f1 = an5d_i1##_f1;" in calc2
    store = "\n".join(macro(macros, "STORE").body)  # level 4: sub-step 1 again
    assert "AN5D_UPDATE_2(" in store and "an5d_p_st_f0[" in store and "an5d_p_st_f2[" in store


def test_boundary_values_follow_each_fields_own_time(fdtd):
    """ey and ex advance at level 1, hz at level 2: at level 1 ey's boundary values are the
    odd buffer's, hz's still the even one's; at level 2 all are odd."""
    plan = driver.blocking_plan(fdtd, 2, bs=(16,))
    assert [parity_pointer(plan, fdtd, k, 1) for k in range(3)] == \
        ["an5d_p_bo_f0", "an5d_p_bo_f1", "an5d_p_be_f2"]
    assert [parity_pointer(plan, fdtd, k, 2) for k in range(3)] == \
        ["an5d_p_bo_f0", "an5d_p_bo_f1", "an5d_p_bo_f2"]
    assert [parity_pointer(plan, fdtd, k, 3) for k in range(3)] == \
        ["an5d_p_be_f0", "an5d_p_be_f1", "an5d_p_bo_f2"]


def test_only_fields_read_at_in_plane_neighbours_go_to_shared_memory(fdtd):
    """ey reads hz[i-1][j] (a streaming neighbour: a register), ex reads hz[i][j-1] (in
    the plane: shared); hz reads ex[i][j+1] (shared) and ey[i+1][j] (a register)."""
    assert fdtd.shared_reads(0) == ((2, 0),)
    assert fdtd.shared_reads(1) == ((1, 0),)
    gray = load("gray_scott.c")
    assert gray.shared_reads(0) == ((0, 0), (1, 0))


def test_each_fields_boundary_cells(fdtd):
    """ey's nest starts at i = 1 (a plane test), ex's at j = 1 (a column flag), hz stops
    one short in both dimensions."""
    kernel = generate(fdtd, driver.blocking_plan(fdtd, 2, bs=(16,)), "fd").kernel_cu
    flags = {m.group(1): m.group(2) for m in
             re.finditer(r"#define (AN5D_FIELD_BND_\d)\(an5d_q\) (.*)", kernel)}
    assert flags["AN5D_FIELD_BND_0"] == \
        "(an5d_in_array && !(an5d_interior && (an5d_q) >= an5d_zl + 1 && (an5d_q) <= an5d_zh - 0))"
    assert flags["AN5D_FIELD_BND_1"] == "(an5d_in_array && !(an5d_cells_f1))"
    assert "const bool an5d_cells_f1 = an5d_interior && an5d_c1 >= an5d_lo1 + 1 && " \
           "an5d_c1 <= an5d_hi1 - 0;" in kernel
    assert "(an5d_q) <= an5d_zh - 1" in flags["AN5D_FIELD_BND_2"]


def test_registers_of_every_field_for_each_group():
    gray = load("gray_scott.c")
    plan = driver.blocking_plan(gray, 2, bs=(16,))
    kernels = generate(gray, plan, "gs")
    k = kernels.model.kernels[-1]
    names = {name for _, name in k.registers}
    groups = {name[:-3] for name in names}
    assert names == {f"{g}_f{j}" for g in groups for j in (0, 1)}
    assert kernels.model.smem_planes == 2  # nondiag: one plane per field


def test_a_coarsened_time_step_of_several_statements_runs_each_cell_of_each_field():
    """Two cells a thread: every register group once per cell and field (the op passes
    the cell's group, the field macros paste the field on), each level op in its two
    halves around the op's one barrier (the render model runs them cell by cell and
    guards them itself), the in-plane reads from shared memory (no row parameters)."""
    gray = load("gray_scott.c")
    plan = driver.blocking_plan(gray, 2, bs=(16,), coarsen=2)
    kernels = generate(gray, plan, "gs")
    k = kernels.model.kernels[-1]
    names = {name for _, name in k.registers}
    groups = {name[:-6] for name in names}
    assert names == {f"{g}_x{m}_f{j}" for g in groups for m in (0, 1) for j in (0, 1)}
    macros = {m.name: m for m in k.macros}
    for name in ("CALC1", "STORE"):
        assert {f"{name}_W", f"{name}_E"} <= set(macros) and name not in macros
        assert f"G_{name}" not in macros
        assert "__syncthreads" not in "".join(macros[f"{name}_E"].body)
        assert macros[f"{name}_W"].params == macros[f"{name}_E"].params
    assert not any(p.startswith("an5d_y") for p in macros["CALC1_E"].params)
    text = kernels.files()["gs_kernel.cu"]
    assert "AN5D_CELL1(CALC1_E(" in text and "AN5D_CELL1(STORE_W(" in text


def test_one_barrier_per_step_shares_every_read_field_and_then_only_evaluates(fdtd):
    """fdtd's sub-step 0 reads hz at in-plane neighbours, sub-step 1 ex: one SHARE for
    every level writes both regions (of the level's input plane, the op's register
    group), the step's one barrier publishes them, and each level op only evaluates (its
    guarded form meets no barrier), with the guards and flags of the plain form."""
    plain = driver.blocking_plan(fdtd, 2, bs=(16,), opt="nondiag")
    plan = driver.blocking_plan(fdtd, 2, bs=(16,), opt="nondiag", barriers="step")
    macros = {m.name: m for m in field_level_macros(fdtd, plan, 4)}
    assert macros["SHARE"].body == ("an5d_sm[an5d_b][1][an5d_t1 + 1] = an5d_i##_f1;",
                                    "an5d_sm[an5d_b][2][an5d_t1 + 1] = an5d_i##_f2;")
    assert not {"CALC1", "G_CALC1", "STORE", "G_STORE", "CALC1_W"} & set(macros)
    full = {m.name: m for m in field_level_macros(fdtd, plain, 4)}
    for name in ("CALC1", "CALC3", "STORE"):
        evaluated = macros[f"{name}_E"]
        assert evaluated.params == full[name].params
        # the full form's body after its shared writes and barrier
        assert full[name].body[-len(evaluated.body):] == evaluated.body
        guard = "\n".join(macros[f"G_{name}_E"].body)
        assert "__syncthreads" not in guard + "".join(evaluated.body)
    assert macros["G_STORE_E"].body == (
        "if (AN5D_STORES(an5d_q)) STORE_E(an5d_q, an5d_i0, an5d_i1, an5d_i2, an5d_b);",)
    assert macros["G_CALC2_E"].body == (
        "if (AN5D_BOUNDARY_PLANE(an5d_q)) { if (AN5D_EXISTS(an5d_q)) "
        "BOUNDARY2(an5d_out, an5d_q); }",
        "else CALC2_E(an5d_out, an5d_i0, an5d_i1, an5d_i2, an5d_q, an5d_b);")
    text = generate(fdtd, plan, "fd").kernel_cu
    assert "SHARE(an5d_reg_1_1, 2);" in text and "G_CALC1_E(" in text
    assert "__shared__ float an5d_sm[8][3][18];" in text  # two buffers per level


def test_a_coarsened_time_step_of_one_barrier_per_step_shares_each_cell():
    gray = load("gray_scott.c")
    plan = driver.blocking_plan(gray, 2, bs=(16,), coarsen=2, barriers="step")
    kernels = generate(gray, plan, "gs")
    macros = {m.name: m for m in kernels.model.kernels[-1].macros}
    assert {"SHARE", "CALC1_E", "STORE_E"} <= set(macros)
    assert not {"CALC1_W", "STORE_W", "G_CALC1_E", "G_STORE_E"} & set(macros)
    text = kernels.files()["gs_kernel.cu"]
    assert "AN5D_CELL0(SHARE(an5d_reg_0_2_x0, 0));" in text
    assert "AN5D_CELL1(SHARE(an5d_reg_0_2_x1, 0));" in text
    assert "AN5D_CELL1(CALC1_E(" in text and "_W(" not in text


def test_launcher_switches_on_time_steps_not_levels(fdtd):
    """A kernel of 4 levels (2 sub-steps) advances 2 time steps: the host passes steps."""
    kernels = generate(fdtd, driver.blocking_plan(fdtd, 2, bs=(16,)), "fd")
    assert [(k.degree, k.steps) for k in kernels.model.kernels] == [(2, 1), (4, 2)]
    assert "case 2: {" in kernels.kernel_cu and "case 4: {" not in kernels.kernel_cu


def test_naive_baseline_runs_one_kernel_per_substep(fdtd):
    text = generate(fdtd, driver.blocking_plan(fdtd, 1, bs=(16,)), "fd").kernel_cu
    s0 = text[text.index("fd_naive_s0("):text.index("fd_naive_s1(")]
    s1 = text[text.index("fd_naive_s1("):text.index("cudaError_t an5d_fd_launch_naive")]
    # sub-step 0 reads hz before this step; sub-step 1 reads the ex and ey it wrote
    assert "an5d_src[(size_t)2 * an5d_field" in s0 and "an5d_dst[(size_t)2" not in s0
    assert "an5d_dst[(size_t)1 * an5d_field" in s1 and "an5d_dst[(size_t)0 * an5d_field" in s1
    assert "if (an5d_c0 >= an5d_lo0 + 1 && an5d_c0 <= an5d_hi0 - 0) an5d_dst[(size_t)0" in s0


def test_host_region_keeps_two_buffers_per_field(tmp_path):
    t = driver.translate(os.path.join(DATA, "multi", "fdtd_2d.c"),
                         driver.Options(bt=2, bs="16"))
    host = next(v for k, v in t.outputs.items() if k.endswith("_host.cu"))
    assert "cudaMalloc((void **)&an5d_dev, 6 * an5d_buffer" in host
    # in place: copied into both buffers, the last level's copied back
    assert host.count("(const void *)(hz), an5d_buffer") == 2
    assert "const int an5d_last = (int)((an5d_start + an5d_steps) % 2);" in host
    assert "an5d_dev + (4 + an5d_last) * an5d_buffer" in host
    gray = driver.translate(os.path.join(DATA, "multi", "gray_scott.c"),
                            driver.Options(bt=2, bs="16"))
    ghost = next(v for k, v in gray.outputs.items() if k.endswith("_host.cu"))
    assert "(const void *)(v), 2 * an5d_buffer" in ghost and "an5d_last" not in ghost


# --------------------------------------------------------------------------- nvcc


def _programs() -> list[tuple[str, tuple]]:
    out = [(p, ()) for p in MULTI]
    for name in C_PROGRAMS:
        for dtype in ("float", "double"):
            out.append((os.path.join(C_INPUTS, name), (("SB_TYPE", dtype),)))
    return out


def _compile(tmp: str, job) -> tuple[str, int, str]:
    """nvcc's return code and log for a job: (program, mode, cells per thread, bT) and
    optionally the barriers and idle warps (default: one barrier per level, skipped)."""
    (path, defines), mode, cells, bt, *more = job
    barriers, idle = more or ("level", "skip")
    _, info = driver.load(path, defines)
    bs = (13,) if info.ndim == 2 else (9, 7)
    bs = tuple(b + 2 * bt * len(info.substeps) * r for b, r in zip(bs, info.radius[1:]))
    bs = (-(-bs[0] // cells) * cells, *bs[1:])
    plan = driver.blocking_plan(info, bt, bs=bs, sl=5 if mode == "none" else None, opt=mode,
                                coarsen=cells, barriers=barriers, idle=idle)
    out = os.path.join(tmp, f"{os.path.basename(path)[:-2]}-{mode}-{cells}-"
                            f"{len(defines) and defines[0][1]}-{barriers}-{idle}")
    rc, log = compile_kernels(generate(info, plan, "mf"), out, "mf")
    return f"{path} {defines} {plan.describe()}", rc, log


@pytest.mark.skipif(nvcc_path() is None, reason="needs nvcc (no GPU needed)")
def test_nvcc_compiles_every_multi_statement_kernel(tmp_path):
    """Every program of tests/data/multi and the coupled c_inputs programs, modes none and
    nondiag, degree 3 time steps, and two cells a thread in mode nondiag (degree 2: the
    registers of four fields in 3D): blocked and naive kernels, without a warning."""
    jobs = [(program, mode, 1, 3) for program in _programs() for mode in ("none", "nondiag")]
    jobs += [(program, "nondiag", 2, 2) for program in _programs()]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda j: _compile(str(tmp_path), j), jobs))
    problems = [f"{what}: rc={rc}\n{log}" for what, rc, log in results
                if rc != 0 or "warning" in log.lower()]
    assert not problems, "\n".join(problems)
    assert all(re.search(r"mf_naive_s0", log) for _, _, log in results)


@pytest.mark.skipif(nvcc_path() is None, reason="needs nvcc (no GPU needed)")
def test_nvcc_compiles_every_multi_statement_kernel_of_one_barrier_per_step(tmp_path):
    """The same programs with one barrier per step (mode nondiag): degree 3 time steps of
    one cell a thread, degree 2 of two cells skipping idle warps and of two computing at
    them, without a warning."""
    jobs = [(program, "nondiag", cells, bt, "step", idle) for program in _programs()
            for cells, bt, idle in ((1, 3, "skip"), (2, 2, "skip"), (2, 2, "compute"))]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda j: _compile(str(tmp_path), j), jobs))
    problems = [f"{what}: rc={rc}\n{log}" for what, rc, log in results
                if rc != 0 or "warning" in log.lower()]
    assert not problems, "\n".join(problems)
    assert all("barriers=step" in what for what, _, _ in results)


@pytest.mark.skipif(nvcc_path() is None, reason="needs nvcc (no GPU needed)")
@pytest.mark.parametrize("baseline", [False, True], ids=["blocked", "baseline"])
def test_nvcc_compiles_the_multi_statement_host_files(tmp_path, baseline):
    problems = []
    for path, defines in _programs():
        options = driver.Options(bt=2, bs="32" if "3d" not in path else "16x16",
                                 defines=defines, baseline=baseline)
        t = driver.translate(path, options)
        out = tmp_path / f"{t.stem}-{baseline}-{len(defines) and defines[0][1]}"
        rc, log = compile_host(t, out, (C_INPUTS,))
        if rc != 0 or "warning" in log.lower():
            problems.append(f"{path} {defines}: {log}")
    assert not problems, "\n".join(problems)
