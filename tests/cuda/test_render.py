"""The rendered files (:mod:`an5dpy.cuda.render`): the host file around the scop, the C
launch plan against the Python one, nvcc compiles of a representative subset, templates
found from an installed wheel, and templates that only print."""

from __future__ import annotations

import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from an5dpy.blocking.plan import launch_degrees
from an5dpy.driver import Options, translate

from cuda_support import FORMS, bench
from paths import C_INPUTS, REPO


def test_host_file_keeps_everything_outside_the_scop(tmp_path):
    src = os.path.join(C_INPUTS, "j2d5pt.c")
    t = bench("j2d5pt", bt=4, bs="128", sl=128)
    host = t.outputs["j2d5pt_host.cu"]
    original = open(src).read()
    start, end = t.program.scop.original_span
    assert original[:start] in host and original[end:] in host
    assert "#pragma scop" not in host and "an5d_j2d5pt_launch(" in host
    assert host.startswith('#include "j2d5pt_kernel.hu"\n#ifndef SB_TYPE\n#define SB_TYPE float')
    naive = bench("j2d5pt", bt=4, bs="128", baseline=True).outputs["j2d5pt_host.cu"]
    assert "an5d_j2d5pt_launch_naive(" in naive


def gcc() -> str | None:
    return shutil.which("gcc")


@pytest.mark.skipif(gcc() is None, reason="needs gcc")
@pytest.mark.parametrize("bt", [1, 2, 3, 4, 7, 10, 16])
def test_c_launch_plan_matches_python(tmp_path, bt):
    t = bench("j2d5pt", bt=bt, bs="256")
    (tmp_path / "plan.hu").write_text(t.outputs["j2d5pt_kernel.hu"])
    (tmp_path / "main.c").write_text(
        '#define AN5D_PLAN_ONLY\n#include <stdio.h>\n#include "plan.hu"\n'
        "int main(void) { for (long T = 0; T <= 300; T++) {\n"
        "  long n = an5d_j2d5pt_plan_launches(T), rem = T; printf(\"%ld:\", T);\n"
        "  for (long i = 0; i < n; i++) { int d = an5d_j2d5pt_plan_degree(n, i, rem);\n"
        "    printf(\" %d\", d); rem -= d; }\n  printf(\"\\n\"); } return 0; }\n")
    exe = tmp_path / "plan"
    subprocess.run([gcc(), "-std=c99", "-Wall", "-Werror", "-o", str(exe),
                    str(tmp_path / "main.c")], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        steps, _, degrees = line.partition(":")
        assert tuple(int(d) for d in degrees.split()) == launch_degrees(int(steps), bt), line


SUBSET = [("j2d5pt", dict(bt=4, bs="128", sl=128)),
          ("j2d9pt-gol", dict(bt=4, bs="128", sl=128, opt="none")),
          ("box2d2r", dict(bt=4, bs="128", sl=128, opt="assoc")),
          ("gradient2d", dict(bt=4, bs="128", sl=128)),
          ("star3d1r", dict(bt=4, bs="32x32")),
          ("j3d27pt", dict(bt=4, bs="32x32"))]


def nvcc() -> str | None:
    from an5dpy.cuda.runtime import nvcc_path
    return nvcc_path()


def compile_one(tmp, name, dtype, kw):
    t = bench(name, dtype, **kw)
    out = os.path.join(tmp, f"{name}-{dtype}")
    os.makedirs(out)
    for fname, text in t.outputs.items():
        with open(os.path.join(out, fname), "w") as f:
            f.write(text)
    logs = []
    for fname in (f"{name}_kernel.cu", f"{name}_host.cu"):
        proc = subprocess.run([nvcc(), "-arch=sm_90", "-O3", "--use_fast_math", "-I", C_INPUTS,
                               "-Xcompiler", "-fopenmp", "-c", os.path.join(out, fname),
                               "-o", os.path.join(out, fname + ".o")],
                              capture_output=True, text=True)
        logs.append((fname, proc.returncode, proc.stdout + proc.stderr))
    return name, dtype, logs


@pytest.mark.skipif(nvcc() is None, reason="needs nvcc (CI has it; no GPU needed)")
def test_nvcc_compiles_sconf_subset_without_warnings(tmp_path):
    jobs = [(name, dtype, kw) for name, kw in SUBSET for dtype in ("float", "double")]
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda j: compile_one(str(tmp_path), *j), jobs))
    problems = [f"{name} {dtype} {fname}: rc={rc}\n{log}"
                for name, dtype, logs in results for fname, rc, log in logs
                if rc != 0 or "warning" in log.lower()]
    assert not problems, "\n".join(problems)


@pytest.mark.skipif(nvcc() is None, reason="needs nvcc (CI has it; no GPU needed)")
def test_host_file_of_a_vla_parameter_compiles_as_c_and_says_so_to_cxx(tmp_path):
    t = translate(os.path.join(FORMS, "vla_param.c"), Options(bt=2, bs="128"))
    for fname, text in t.outputs.items():
        (tmp_path / fname).write_text(text)
    host = str(tmp_path / "vla_param_host.cu")
    as_c = subprocess.run([nvcc(), "-x", "c", "-c", host, "-o", str(tmp_path / "h.o")],
                          capture_output=True, text=True)
    assert as_c.returncode == 0, as_c.stderr
    as_cxx = subprocess.run([nvcc(), "-arch=sm_90", "-c", host, "-o", str(tmp_path / "x.o")],
                            capture_output=True, text=True)
    assert as_cxx.returncode != 0
    assert "compile this file as C (nvcc -x c -c vla_param_host.cu)" in as_cxx.stderr
    # array parameters of constant extents (and the benchmarks' VLA pointers) stay C++-clean
    assert "__cplusplus" not in bench("j2d5pt").outputs["j2d5pt_host.cu"]


@pytest.mark.skipif(nvcc() is None, reason="needs nvcc (CI has it; no GPU needed)")
def test_launch_refuses_planes_past_32_bit_offsets_before_touching_the_gpu(tmp_path):
    # the refusal comes before any CUDA call, so the program runs on a machine without a GPU
    t = bench("star3d1r", bt=2, bs="32x32")
    for fname, text in t.outputs.items():
        (tmp_path / fname).write_text(text)
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "star3d1r_kernel.hu"\n'
        "int main(int argc, char **argv) {\n"
        "  int n = atoi(argv[1]);\n"
        "  cudaError_t e = an5d_star3d1r_launch(1, 0, 0, 0, 0, 1, n, n, 1, 1, 1, n - 2, 1, n - 2);\n"
        '  printf("%d\\n", (int)e);\n  return 0;\n}\n')
    build = subprocess.run([nvcc(), "-arch=sm_90", "-o", str(tmp_path / "probe"), str(tmp_path / "main.c"),
                            str(tmp_path / "star3d1r_kernel.cu")], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    # 46341^2 cells per plane is just over 2^31 - 1 (46340^2 is under, and there the launch
    # goes on to CUDA, which fails differently without a GPU); the stream has one interior
    # plane because an empty one returns before the check
    probe = subprocess.run([str(tmp_path / "probe"), "46341"], capture_output=True, text=True)
    assert probe.stdout.strip() == "9", probe.stdout + probe.stderr  # cudaErrorInvalidConfiguration
    assert "an5d_plane_offset" in t.outputs["star3d1r_kernel.cu"]
    assert "plane offsets are 32-bit" not in bench("j2d5pt").outputs["j2d5pt_kernel.cu"]


def test_templates_ship_in_the_wheel_and_load_from_an_install(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                    "-q", "-w", str(tmp_path / "dist"), REPO], check=True)
    wheel = next((tmp_path / "dist").glob("an5dpy-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for t in ("kernel.cu.j2", "kernel.hu.j2", "host_region.cu.j2"):
        assert f"an5dpy/templates/{t}" in names
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(target), str(wheel)], check=True)
    code = ("import an5dpy.cuda.render as c; print(c.template_dir()); "
            "from an5dpy.driver import translate, Options; "
            f"t = translate({os.path.join(C_INPUTS, 'j2d5pt.c')!r}, "
            "Options(defines=(('SB_TYPE', 'float'),))); print(len(t.outputs))")
    env = dict(os.environ, PYTHONPATH=str(target))
    out = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out[0].startswith(str(target)) and out[1] == "3"


TEMPLATE_TAG = re.compile(r"\{\{(.*?)\}\}|\{%(.*?)%\}", re.S)
STRING_LITERAL = re.compile(r"\"[^\"]*\"|'[^']*'")
#: Arithmetic (``+ - * / // % **``), string concatenation (``~``) and slicing (``[a:b]``).
TEMPLATE_LOGIC = re.compile(r"[-+*/%~]|\[[^\]]*:[^\]]*\]")


def template_logic(text: str) -> list[str]:
    """Tags of a jinja2 template that compute (arithmetic, concatenation, slicing)."""
    found = []
    for match in TEMPLATE_TAG.finditer(text):
        code = STRING_LITERAL.sub('""', match.group(1) or match.group(2) or "")
        if TEMPLATE_LOGIC.search(code):
            found.append(match.group(0))
    return found


def test_templates_only_print():
    from an5dpy.cuda.render import template_dir
    templates = sorted(template_dir().glob("*.j2"))
    assert len(templates) == 6
    for path in templates:
        assert template_logic(path.read_text()) == [], path.name


def test_the_template_scan_finds_arithmetic_and_slicing():
    assert template_logic('{{ k.degree * R }} {{ 2 ** level }} {{ a - b }}') == [
        "{{ k.degree * R }}", "{{ 2 ** level }}", "{{ a - b }}"]
    assert template_logic('{% for l in range(k.degree + 1) %}{{ m.shape[3:] }}') == [
        "{% for l in range(k.degree + 1) %}", "{{ m.shape[3:] }}"]
    assert template_logic('{% set g = (P ~ "_HU")|upper %}') == ['{% set g = (P ~ "_HU")|upper %}']
    assert template_logic('{{ m.names|join(", ") }} {% if m.ndim == 3 %}x{% endif %} - + *') == []


def test_host_region_copies_each_read_only_array_in_and_frees_it(tmp_path):
    """Each read-only array: its element count from the user's extents, a device copy made
    before the timed launches, passed to every launch (blocked and baseline) with the
    extents the kernels take, freed at the end."""
    from read_only_support import write
    path = write(tmp_path, "planes_rows")
    for baseline in (False, True):
        host = translate(path, Options(bt=2, bs="16", baseline=baseline)) \
            .outputs["planes_rows_host.cu"]
        region = host[host.index("an5dpy: the scop"):]
        for name, ctype, count, extents in (
                ("cz", "double", "(size_t)(n)", [("an5d_coefn0_cz", "n")]),
                ("row", "float", "(size_t)(m)", [("an5d_coefn0_row", "m")]),
                ("c", "double", "(size_t)(3) * (size_t)(m)", [("an5d_coefn1_c", "m")])):
            assert f"const size_t an5d_coefsize_{name} = {count};" in region
            for param, value in extents:
                assert f"const int {param} = (int)({value});" in region
            assert (f"AN5D_CHECK(cudaMalloc((void **)&an5d_coef_{name}, an5d_coefsize_{name} "
                    f"* sizeof({ctype})));") in region
            copy = (f"AN5D_CHECK(cudaMemcpy(an5d_coef_{name}, (const void *)({name}), "
                    f"an5d_coefsize_{name} * sizeof({ctype}), cudaMemcpyHostToDevice));")
            assert region.index(copy) < region.index("cudaEventRecord(an5d_ev_start")
            assert region.index(f"AN5D_CHECK(cudaFree(an5d_coef_{name}));") > region.index(
                "cudaMemcpyDeviceToHost")
        args = (", an5d_coef_cz, an5d_coefn0_cz, an5d_coef_row, an5d_coefn0_row, an5d_coef_c, "
                "an5d_coefn1_c));")
        launch = "planes_rows_launch_naive(" if baseline else "planes_rows_launch("
        call = region[region.index(launch):]
        assert call[:call.index(";") + 1].endswith(args)
    plain = bench("j2d5pt", bt=2, bs="64").outputs["j2d5pt_host.cu"]
    assert "an5d_coef" not in plain
