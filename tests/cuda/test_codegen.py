"""Generated CUDA: structure (kernels per degree, macro sequences equal the schedule's),
C semantics in printed expressions, the C launch plan against the Python one, nvcc
compiles of a representative subset, and templates found from an installed wheel."""

from __future__ import annotations

import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from an5dpy.driver import Options, translate
from an5dpy.blocking.plan import degrees_needed, launch_degrees

from paths import REPO
C_INPUTS = os.path.join(REPO, "c_inputs")
FORMS = os.path.join(REPO, "tests", "data", "forms")
MACRO = re.compile(r"^\s*(G_)?([A-Z][A-Z0-9_]*)\(")


def macro_sequence(phase) -> tuple[str, ...]:
    """The macro names a phase's ops call, in order (guards aside)."""
    return tuple(op.name for op in phase.ops)


def bench(name: str, dtype: str = "float", **kw):
    return translate(os.path.join(C_INPUTS, name + ".c"),
                     Options(defines=(("SB_TYPE", dtype),), **kw))


def kernel_sections(text: str, name: str) -> dict[str, list[str]]:
    """Macro calls of each phase of kernel ``name``, as printed."""
    body = text.split(f" {name}(", 1)[1].split("\n}\n", 1)[0]
    markers = {"head, lowermost block": "head_lowermost", "head, block whose halo": "head_middle",
               "compact kernel: guarded steps": "fill", "inner phase": "inner",
               "tail: the same ops": "tail"}
    sections: dict[str, list[str]] = {}
    current = None
    for line in body.splitlines():
        for marker, key in markers.items():
            if marker in line:
                current = key
                sections[key] = []
        m = MACRO.match(line)
        if current and m and not line.strip().startswith("#"):
            sections[current].append((m.group(1) or "") + m.group(2))
    return sections


@pytest.mark.parametrize("name, kw", [
    ("j2d5pt", dict(bt=4, bs="128", sl=128)),
    ("box2d1r", dict(bt=3, bs="64", opt="assoc")),
    ("j2d9pt-gol", dict(bt=4, bs="128", sl=128, opt="none")),
    ("star3d2r", dict(bt=2, bs="32x16")),
    ("box3d2r", dict(bt=1, bs="16x16")),
])
def test_kernels_and_macro_sequences_follow_the_schedule(name, kw):
    t = bench(name, **kw)
    text = t.outputs[f"{name}_kernel.cu"]
    assert [k.degree for k in t.schedule.kernels] == list(degrees_needed(t.plan.bt))
    for ks in t.schedule.kernels:
        kname = f"{t.model.prefix}_kernel_d{ks.degree}"
        assert f'extern "C" __global__ void __launch_bounds__({t.plan.nthreads}) {kname}(' in text
        sections = kernel_sections(text, kname)
        assert sections["inner"] == list(macro_sequence(ks.inner))
        tail = ["SYNC" if n == "SYNC" else ("G_" + n if n != "LOAD_BOUNDARY" else "G_LOAD")
                for n in macro_sequence(ks.tail)]
        tail = [("G_LOAD" if n == "G_LOAD" else n) for n in tail]
        assert sections["tail"] == tail
        if ks.compact:
            assert sections["fill"] == tail and "head_lowermost" not in sections
        else:
            for kind in ("lowermost", "middle"):
                assert sections[f"head_{kind}"] == list(macro_sequence(ks.heads[kind]))
    assert f"cudaError_t {t.model.prefix}_launch(int degree" in t.outputs[f"{name}_kernel.hu"]


def test_only_the_main_degree_gets_unrolled_heads():
    t = bench("j2d5pt", bt=4, bs="128", sl=128)
    assert [k.compact for k in t.schedule.kernels] == [True, True, True, False]
    heavy = bench("box3d4r", bt=1, bs="16x16")
    assert heavy.schedule.kernels[0].compact  # 729-term expression: heads left out


def test_register_ring_is_declared_and_rotated():
    t = bench("star2d1r", bt=2, bs="64")
    text = t.outputs["star2d1r_kernel.cu"]
    d2 = text.split("an5d_star2d1r_kernel_d2(", 1)[1]
    for reg in ("reg_0_0", "reg_0_1", "reg_0_2", "reg_1_0", "reg_1_1", "reg_1_2"):
        assert f"float {reg} = 0;" in d2
    assert "CALC1(reg_1_1, reg_0_0, reg_0_1, reg_0_2, 1, " in d2


def test_expressions_keep_c_semantics():
    gradient = bench("gradient2d").outputs["gradient2d_kernel.cu"]
    assert "sqrtf(" in gradient
    mixed = translate(os.path.join(FORMS, "mixed_precision.c"), Options(bt=2, bs="32"))
    text = mixed.outputs["mixed_precision_kernel.cu"]
    assert "((double)(" in text  # a float read in a double operation is converted explicitly
    assert "an5d_sref(" in text or "AN5D_SREF" in text


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


def test_levels_with_idle_warps():
    from an5dpy.cuda.macros import levels_with_idle_warps
    from an5dpy.driver import load
    from an5dpy.blocking.plan import make_plan

    def plan(name, bt, bs):
        _, info = load(os.path.join(C_INPUTS, name + ".c"), (("SB_TYPE", "float"),))
        return make_plan(info, bt=bt, bs=bs)

    # 1D blocks lose only a few lanes of the outer warps until bT*r reaches a warp
    assert levels_with_idle_warps(plan("j2d5pt", 6, (512,)), 6) == frozenset()
    assert levels_with_idle_warps(plan("star2d4r", 8, (512,)), 8) == {8}
    # 3D blocks lose whole rows: with 32 threads per row every level has idle warps
    assert levels_with_idle_warps(plan("star3d1r", 4, (32, 32)), 4) == {1, 2, 3, 4}
    # 16-thread rows pair up in a warp: both rows must be outside the window
    assert levels_with_idle_warps(plan("star3d1r", 2, (16, 16)), 2) == {2}
    assert levels_with_idle_warps(plan("box3d4r", 1, (16, 64)), 1) == {1}


def test_idle_levels_branch_around_the_evaluation():
    from an5dpy.cuda.render import render_kernel
    from an5dpy.cuda.render_model import render_model
    from an5dpy.driver import load
    from an5dpy.blocking.plan import make_plan
    from an5dpy.blocking.build import build_schedule
    _, info = load(os.path.join(C_INPUTS, "star3d1r.c"), (("SB_TYPE", "float"),))

    def macros(bs):
        plan = make_plan(info, bt=2, bs=bs)
        text = render_kernel(render_model(info, plan, build_schedule(plan), "s"))
        kernel = text.split("_kernel_d2(")[1]
        return {m.group(1): m.group(2) for m in re.finditer(
            r"#define (CALC1|STORE)\(.*?\) do \{ \\\n(.*?)\} while \(0\)", kernel, re.S)}

    # 16x16: no warp is idle at level 1 (every thread evaluates; only boundary cells
    # select), some are at level 2 (branch)
    small = macros((16, 16))
    assert "out = an5d_bnd ? an5d_p_bo[AN5D_PLANE(q)] : an5d_v;" in small["CALC1"]
    assert "an5d_act" not in small["CALC1"]
    assert "if (an5d_act & 4u) an5d_p_st[AN5D_PLANE(q)] = (float)(" in small["STORE"]
    assert "an5d_v" not in small["STORE"]
    # 32x32: halo rows are whole warps at both levels
    large = macros((32, 32))
    assert "if (an5d_act & 2u) out = (float)(" in large["CALC1"]
    assert "an5d_v" not in large["CALC1"]


def test_double_literals_live_in_constant_memory():
    # j2d9pt: float literals that the double build converts, (double)(1.04f) ... / 11.7f
    t = bench("j2d9pt", "double")
    text = t.outputs["j2d9pt_kernel.cu"]
    name, values = t.model.constants
    assert name == "an5d_j2d9pt_k"
    assert values == tuple(f"(double)({v})" for v in (
        "1.04f", "1.105f", "1.17f", "1.235f", "1.3f", "1.365f", "1.43f", "1.495f", "1.56f",
        "11.7f"))
    assert (f"static __constant__ double an5d_j2d9pt_k[10] = {{ {', '.join(values)} }};"
            in text)
    blocked = text.split("an5d_j2d9pt_kernel_d1(", 1)[1].split("an5d_j2d9pt_naive", 1)[0]
    assert "(double)(1.04f)" not in blocked and "an5d_j2d9pt_k[9]" in blocked
    # each literal once however many kernels and levels use it; float builds keep them inline
    assert text.count("(double)(1.04f)") == 1 + text.split("an5d_j2d9pt_naive", 1)[1].count(
        "(double)(1.04f)")
    single = bench("j2d9pt", "float")
    assert single.model.constants[1] == ()
    assert "__constant__" not in single.outputs["j2d9pt_kernel.cu"]


def test_constant_table_spells_double_literals_only():
    from an5dpy.cexpr import c_expr
    from an5dpy.cuda.macros import ConstantTable
    from an5dpy.ir import Binary, Cast, Const
    table = ConstantTable("k")
    half = Const("double", value=0.5, text="0.5")
    tenth = Cast("double", operand=Cast("float", operand=Const("float", value=0.1,
                                                                   text="0.1f")))
    expr = Binary("double", op="+", lhs=Binary("double", op="*", lhs=half, rhs=half),
                  rhs=Binary("double", op="*", lhs=tenth, rhs=Cast(
                      "double", operand=Const("float", value=0.25, text="0.25f"))))
    text = c_expr(expr, lambda n: "x", literal=table.literal)
    # the inner float cast is not a literal: it stays, inside the outer cast
    assert text == "((k[0] * k[0]) + (((double)(((float)(0.1f)))) * k[1]))"
    assert table.values == ("0.5", "(double)(0.25f)")
    assert table.literal(Const("float", value=1.0, text="1.0f")) is None


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
    assert len(templates) == 3
    for path in templates:
        assert template_logic(path.read_text()) == [], path.name


def test_the_template_scan_finds_arithmetic_and_slicing():
    assert template_logic('{{ k.degree * R }} {{ 2 ** level }} {{ a - b }}') == [
        "{{ k.degree * R }}", "{{ 2 ** level }}", "{{ a - b }}"]
    assert template_logic('{% for l in range(k.degree + 1) %}{{ m.shape[3:] }}') == [
        "{% for l in range(k.degree + 1) %}", "{{ m.shape[3:] }}"]
    assert template_logic('{% set g = (P ~ "_HU")|upper %}') == ['{% set g = (P ~ "_HU")|upper %}']
    assert template_logic('{{ m.names|join(", ") }} {% if m.ndim == 3 %}x{% endif %} - + *') == []
