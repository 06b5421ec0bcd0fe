"""Read-only (coefficient) arrays in the generated CUDA (:mod:`an5dpy.cuda.macros`,
:mod:`an5dpy.cuda.render_model`, the templates): the kernels' and launchers' parameters,
the load printed for each subscript form (``f[i][j]``, ``k[i-1][j]``, ``cz[i]``,
``row[j+1]``, ``c[2][j]``, 2D and 3D) with its clamp, mode assoc's loads at the output
plane, the naive baseline's unclamped loads, and nvcc compiling the kernels of every
program and form with read-only arrays in every mode (no GPU needed)."""

from __future__ import annotations

import concurrent.futures
import glob
import os
import re
import shutil
import subprocess

import pytest

from an5dpy import driver
from an5dpy.cuda.kernels import generate
from an5dpy.cuda.macros import CoefLayout, coef_layouts
from an5dpy.cuda.render_model import launch_signature
from an5dpy.cuda.runtime import nvcc_path
from an5dpy.ir import Affine, CoefIndex

from cuda_support import FORMS, bench, compile_host, compile_kernels, small_block
from read_only_support import PROGRAMS, SUMS, forced_assoc, write

#: The coordinates the blocked kernels read coefficients at: the op's plane, the column.
KERNEL_COORDS = ("an5d_base + (an5d_q)", "an5d_c1", "an5d_c2")


def load(tmp_path, name: str):
    return driver.load(write(tmp_path, name))[1]


def kernel_text(info, bt: int = 2, bs=None, opt: str | None = None) -> str:
    bs = bs or ((16,) if info.ndim == 2 else (8, 8))
    plan = driver.blocking_plan(info, bt, bs=bs, opt=opt)
    return generate(info, plan, "ro").kernel_cu


def joined(text: str) -> str:
    """``text`` with the macros' backslash continuations joined."""
    return re.sub(r" ?\\\n\s*", " ", text)


def update_macro(text: str) -> str:
    return re.search(r"#define AN5D_UPDATE\(([^)]*)\) (.*)", joined(text)).group(0)


# --------------------------------------------------------------------------- one load


def test_a_cell_read_loads_the_clamped_cell_through_the_read_only_path():
    f = CoefLayout("f", "double", (Affine.var("n"), Affine.var("m")))
    read = f.read((CoefIndex(0, 0), CoefIndex(1, 0)), KERNEL_COORDS, clamp=True)
    assert read == ("__ldg(&an5d_coef_f[((size_t)(min(max(an5d_base + (an5d_q), 0), "
                    "an5d_coefn0_f - 1)) * an5d_coefn1_f + (size_t)(min(max(an5d_c1, 0), "
                    "an5d_coefn1_f - 1)))])")


def test_offsets_constants_and_constant_extents_print_as_written():
    k = CoefLayout("k", "float", (Affine.var("n"), Affine.var("n")))
    assert k.read((CoefIndex(0, -1), CoefIndex(1, 0)), KERNEL_COORDS, clamp=True) == (
        "__ldg(&an5d_coef_k[((size_t)(min(max(an5d_base + (an5d_q) - 1, 0), an5d_coefn0_k - 1))"
        " * an5d_coefn1_k + (size_t)(min(max(an5d_c1, 0), an5d_coefn1_k - 1)))])")
    row = CoefLayout("row", "float", (Affine.var("m"),))
    assert row.read((CoefIndex(1, 1),), KERNEL_COORDS, clamp=True) == (
        "__ldg(&an5d_coef_row[(size_t)(min(max(an5d_c1 + 1, 0), an5d_coefn0_row - 1))])")
    c = CoefLayout("c", "double", (Affine.of(3), Affine.var("m")))
    assert c.read((CoefIndex(None, 2), CoefIndex(1, 0)), KERNEL_COORDS, clamp=True) == (
        "__ldg(&an5d_coef_c[((size_t)(2) * an5d_coefn1_c + (size_t)(min(max(an5d_c1, 0), "
        "an5d_coefn1_c - 1)))])")
    assert c.extent_params == (1,)  # the constant extent 3 is no parameter
    v = CoefLayout("V", "double", (Affine.of(12),) * 3)
    assert v.read((CoefIndex(0, 0), CoefIndex(1, 0), CoefIndex(2, -1)), KERNEL_COORDS,
                  clamp=True) == (
        "__ldg(&an5d_coef_V[(((size_t)(min(max(an5d_base + (an5d_q), 0), 11)) * 12 + "
        "(size_t)(min(max(an5d_c1, 0), 11))) * 12 + (size_t)(min(max(an5d_c2 - 1, 0), 11)))])")
    # the naive baseline: only interior cells run, no clamp
    assert v.read((CoefIndex(0, 0), CoefIndex(1, 0), CoefIndex(2, -1)),
                  ("an5d_c0", "an5d_c1", "an5d_c2"), clamp=False) == (
        "__ldg(&an5d_coef_V[(((size_t)(an5d_c0) * 12 + (size_t)(an5d_c1)) * 12 + "
        "(size_t)(an5d_c2 - 1))])")


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_the_printed_loads_read_the_clamped_element(tmp_path):
    """The printed load, compiled by gcc (``__ldg`` a plain load) at every coordinate from
    three below the array to three above it, reads what numpy reads at the clamped index:
    a variable and a constant extent, offsets on every dimension, a constant subscript."""
    import numpy as np
    extents = {"n": 4, "m": 5}
    w = CoefLayout("w", "double", (Affine.var("n"), Affine.of(3), Affine.var("m")))
    index = (CoefIndex(0, -1), CoefIndex(None, 2), CoefIndex(2, 1))
    values = np.arange(4 * 3 * 5, dtype=np.float64).reshape(4, 3, 5) + 0.5
    read = w.read(index, ("an5d_z", "an5d_c1", "an5d_c2"), clamp=True)
    program = (
        "#include <stddef.h>\n#include <stdio.h>\n"
        "static int min(int a, int b) { return a < b ? a : b; }\n"
        "static int max(int a, int b) { return a > b ? a : b; }\n"
        "#define __ldg(p) (*(p))\n"
        f"static const double an5d_coef_w[] = {{ {', '.join(map(str, values.ravel()))} }};\n"
        "int main(void) {\n"
        f"  const int an5d_coefn0_w = {extents['n']}, an5d_coefn2_w = {extents['m']};\n"
        "  for (int an5d_z = -3; an5d_z < 7; an5d_z++)\n"
        "    for (int an5d_c2 = -3; an5d_c2 < 8; an5d_c2++)\n"
        f"      printf(\"%d %d %.17g\\n\", an5d_z, an5d_c2, {read});\n"
        "  return 0;\n}\n")
    (tmp_path / "read.c").write_text(program)
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Werror", "-o", str(tmp_path / "read"),
                    str(tmp_path / "read.c")], check=True)
    out = subprocess.run([str(tmp_path / "read")], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    seen = 0
    for line in filter(None, out):
        z, c2, got = line.split()
        z, c2 = int(z), int(c2)
        want = values[min(max(z - 1, 0), 3), 2, min(max(c2 + 1, 0), 4)]
        assert float(got) == want, line
        seen += 1
    assert seen == 10 * 11


# --------------------------------------------------------------------------- whole kernels


def test_poisson_kernels_take_and_read_f(tmp_path):
    info = load(tmp_path, "poisson")
    text = kernel_text(info)
    params = ("double h2, const double *__restrict__ an5d_coef_f, int an5d_coefn0_f, "
              "int an5d_coefn1_f)")
    assert text.count(params) == len(driver.emitted_schedule(
        info, driver.blocking_plan(info, 2, bs=(16,))).kernels) + 1  # and the naive kernel
    update = update_macro(text)
    assert update.startswith("#define AN5D_UPDATE(an5d_i0, an5d_i1, an5d_i2, an5d_b, an5d_q)")
    assert ("(h2 * __ldg(&an5d_coef_f[((size_t)(min(max(an5d_base + (an5d_q), 0), "
            "an5d_coefn0_f - 1)) * an5d_coefn1_f + (size_t)(min(max(an5d_c1, 0), "
            "an5d_coefn1_f - 1)))]))") in update
    # CALCn and STORE pass their plane to the update
    assert "AN5D_UPDATE(an5d_i0, an5d_i1, an5d_i2, an5d_b, an5d_q)" in joined(
        text.split("#define AN5D_UPDATE", 1)[1])
    launcher = ("extern \"C\" cudaError_t an5d_ro_launch(int degree, const double *src, "
                "double *dst,\n    const double *bnd_even, const double *bnd_odd, int n0, int n1, "
                "int lo0, int hi0, int lo1, int hi1, double h2, const double *an5d_coef_f, "
                "int an5d_coefn0_f, int an5d_coefn1_f)")
    assert launcher in text
    assert "bnd_odd, n0, n1, lo0, hi0, lo1, hi1, h2, an5d_coef_f, an5d_coefn0_f, an5d_coefn1_f);" \
        in text
    assert ("an5d_ro_naive<<<grid, block>>>(src, dst, n0, n1, lo0, hi0, lo1, hi1, h2, "
            "an5d_coef_f, an5d_coefn0_f, an5d_coefn1_f);") in text


def test_every_subscript_form_in_2d(tmp_path):
    update = update_macro(kernel_text(load(tmp_path, "conductivity")))
    assert "an5d_base + (an5d_q) - 1, 0), an5d_coefn0_k - 1)" in update  # k[i-1][j]
    assert "min(max(an5d_c1 - 1, 0), an5d_coefn1_k - 1)" in update  # k[i][j-1]
    update = update_macro(kernel_text(load(tmp_path, "planes_rows")))
    assert ("__ldg(&an5d_coef_cz[(size_t)(min(max(an5d_base + (an5d_q), 0), "
            "an5d_coefn0_cz - 1))])") in update  # cz[i]: streaming dimension
    assert ("__ldg(&an5d_coef_row[(size_t)(min(max(an5d_c1 + 1, 0), "
            "an5d_coefn0_row - 1))])") in update  # row[j+1]: contiguous dimension
    assert ("__ldg(&an5d_coef_c[((size_t)(2) * an5d_coefn1_c + (size_t)(min(max(an5d_c1, 0), "
            "an5d_coefn1_c - 1)))])") in update  # c[2][j]: a constant subscript


def test_every_subscript_form_in_3d(tmp_path):
    text = kernel_text(load(tmp_path, "velocity3d"))
    assert "double *__restrict__ an5d_coef_V, const double *__restrict__ an5d_coef_cz)" in text
    update = update_macro(text)
    assert ("__ldg(&an5d_coef_V[(((size_t)(min(max(an5d_base + (an5d_q), 0), 11)) * 12 + "
            "(size_t)(min(max(an5d_c1, 0), 11))) * 12 + (size_t)(min(max(an5d_c2, 0), 11)))])"
            ) in update
    assert "__ldg(&an5d_coef_cz[(size_t)(min(max(an5d_base + (an5d_q) - 1, 0), 11))])" in update
    update = update_macro(kernel_text(load(tmp_path, "local3d")))
    assert ("__ldg(&an5d_coef_w[((size_t)(min(max(an5d_c1 - 1, 0), 10)) * 10 + "
            "(size_t)(min(max(an5d_c2 + 1, 0), 9)))])") in update


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_blocked_load_is_clamped_and_every_naive_one_is_not(tmp_path, name):
    info = load(tmp_path, name)
    text = kernel_text(info)
    blocked, naive = text.split("naive baseline", 1)
    followed = sum(1 for c in info.coefficients for read in c.reads for i in read
                   if i.dim is not None)
    loads = re.findall(r"__ldg\(&an5d_coef_\w+\[.*?\]\)", joined(blocked))
    assert len(loads) >= sum(len(c.reads) for c in info.coefficients)
    assert sum(load.count("min(max(") for load in loads) >= followed
    assert all(load.count("min(max(") == len(re.findall(r"an5d_c[12]|an5d_base", load))
               for load in loads)
    naive_loads = re.findall(r"__ldg\(&an5d_coef_\w+\[.*?\]\)", naive)
    assert naive_loads and not any("min(" in load for load in naive_loads)


def test_mode_assoc_reads_each_term_at_its_output_plane(tmp_path):
    """Plane q + r - dz receives the terms of offset dz from the plane arriving at q + r:
    cz[i] * A[i-1][j] (dz = -1) reads cz at q + 2, c[2][j] * A[i][j-1] (dz = 0) reads the
    contiguous dimension only."""
    info = forced_assoc(load(tmp_path, "planes_rows"))
    text = joined(kernel_text(info, opt="assoc"))
    acc = text[text.index("#define ACC1("):text.index("#define G_ACC1(")]
    assert ("an5d_a2 = (double)(an5d_a2 + (__ldg(&an5d_coef_cz[(size_t)(min(max(an5d_base + "
            "(an5d_q) + 2, 0), an5d_coefn0_cz - 1))]) * ((double)(an5d_v0))));") in acc
    assert "an5d_coef_row[(size_t)(min(max(an5d_c1 + 1, 0), an5d_coefn0_row - 1))]" in acc
    assert "an5d_coef_c[((size_t)(2) * an5d_coefn1_c" in acc
    # 3D, r = 1: the output plane of dz = 0 is q + 1, so cz[i+1] reads q + 2, cz[i] q + 1,
    # and the term without a grid read (-0.125f * cz[i-1], dz = 0) q
    text = joined(kernel_text(forced_assoc(load(tmp_path, "sum3d")), opt="assoc"))
    acc = text[text.index("#define ACC1("):text.index("#define G_ACC1(")]
    planes = re.findall(r"an5d_coef_cz\[\(size_t\)\(min\(max\(an5d_base \+ \(an5d_q\)"
                        r"( [+-] \d+)?, 0\)", acc)
    assert sorted(planes) == sorted([" + 2", " + 1", ""])
    assert ("an5d_coef_g[(((size_t)(min(max(an5d_base + (an5d_q) + 2, 0), an5d_coefn0_g - 1))"
            in acc)  # g[i][j][k] * A[i-1][j][k]: dz = -1


def test_programs_without_read_only_arrays_keep_their_update_macro():
    text = bench("j2d5pt", bt=2, bs="64").outputs["j2d5pt_kernel.cu"]
    assert "#define AN5D_UPDATE(an5d_i0, an5d_i1, an5d_i2, an5d_b) " in text
    assert "an5d_coef" not in text and "__ldg" not in text


def test_the_signature_lists_each_array_after_the_scalars():
    f = CoefLayout("f", "float", (Affine.var("n"), Affine.of(4)))
    sig = launch_signature(2, (("float", "c"),), (f,))
    assert [(p.kind, p.ref) for p in sig.params] == [
        ("size", "n0"), ("size", "n1"), ("size", "lo0"), ("size", "hi0"), ("size", "lo1"),
        ("size", "hi1"), ("scalar", "c"), ("coef", "f"), ("coef_extent", ("f", 0))]
    assert sig.kernel_params.endswith(
        ", float c, const float *__restrict__ an5d_coef_f, int an5d_coefn0_f")
    assert sig.launch_params.endswith(", float c, const float *an5d_coef_f, int an5d_coefn0_f")
    assert sig.kernel_args.endswith(", hi1, c, an5d_coef_f, an5d_coefn0_f")
    assert sig.host_args.endswith(", an5d_hi1, c, an5d_coef_f, an5d_coefn0_f")


def test_layouts_follow_the_analysis_order(tmp_path):
    info = load(tmp_path, "planes_rows")
    assert [(c.name, c.elem_type, c.extent_params) for c in coef_layouts(info)] == [
        ("cz", "double", (0,)), ("row", "float", (0,)), ("c", "double", (1,))]


# --------------------------------------------------------------------------- nvcc


def read_only_forms() -> list[str]:
    return sorted(p for p in glob.glob(os.path.join(FORMS, "*.c"))
                  if driver.load(p)[1].coefficients)


def test_the_forms_include_read_only_arrays():
    names = [os.path.basename(p) for p in read_only_forms()]
    assert "poisson_rhs.c" in names and "varcoef_heat.c" in names


def _builds(path: str) -> list[tuple[str, object]]:
    """(label, info, plan) for every mode ``path``'s stencil allows, mode assoc where the
    update is a sum (forced, see forced_assoc), an odd degree 3 and a small odd block."""
    _, info = driver.load(path)
    bs = tuple(reversed(small_block(info, 3, (13,) if info.ndim == 2 else (7, 9))))
    out = [("none", info, driver.blocking_plan(info, 3, bs=bs, sl=5, opt="none"))]
    if info.diagonal_free:
        out.append(("nondiag", info, driver.blocking_plan(info, 3, bs=bs, opt="nondiag")))
    name = os.path.basename(path)[:-2]
    if name in SUMS:
        summed = forced_assoc(info)
        out.append(("assoc", summed, driver.blocking_plan(summed, 3, bs=bs, opt="assoc")))
    return out


def _compile(tmp, path: str, label: str, info, plan) -> tuple[str, int, str]:
    out = os.path.join(tmp, f"{os.path.basename(path)[:-2]}-{label}")
    rc, log = compile_kernels(generate(info, plan, "ro"), out, "ro")
    return f"{path} {label}", rc, log


@pytest.mark.skipif(nvcc_path() is None, reason="needs nvcc (no GPU needed)")
def test_nvcc_compiles_every_read_only_kernel(tmp_path):
    """Every program of read_only_support and every form with read-only arrays, in each
    mode: the blocked kernels and the naive baseline, without a warning or a spill."""
    paths = [write(tmp_path, name) for name in sorted(PROGRAMS)] + read_only_forms()
    jobs = [(path, *build) for path in paths for build in _builds(path)]
    assert {label for _, label, _, _ in jobs} == {"none", "nondiag", "assoc"}
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda j: _compile(str(tmp_path / "build"), *j), jobs))
    problems = [f"{what}: rc={rc}\n{log}" for what, rc, log in results
                if rc != 0 or "warning" in log.lower()]
    assert not problems, "\n".join(problems)
    assert all(re.search(r"ro_naive", log) for _, _, log in results)


@pytest.mark.skipif(nvcc_path() is None, reason="needs nvcc (no GPU needed)")
@pytest.mark.parametrize("baseline", [False, True], ids=["blocked", "baseline"])
def test_nvcc_compiles_the_host_files(tmp_path, baseline):
    """The host region copies each read-only array of every declaration form (parameter,
    VLA pointer, global, local): the host files compile with their kernels (as C where
    the user's function takes a variable-length array, C++ otherwise)."""
    paths = [write(tmp_path, name) for name in sorted(PROGRAMS)] + read_only_forms()
    problems = []
    for path in paths:
        info = driver.load(path)[1]
        sides = (16,) if info.ndim == 2 else (8, 8)
        bs = "x".join(map(str, small_block(info, 2, sides)))
        t = driver.translate(path, driver.Options(bt=2, bs=bs, baseline=baseline))
        rc, log = compile_host(t, tmp_path / f"{t.stem}-{baseline}")
        if rc != 0 or "warning" in log.lower():
            problems.append(f"{path}: {log}")
    assert not problems, "\n".join(problems)
