"""The render model (:mod:`an5dpy.cuda.render_model`): kernels per degree, the macro
calls of every phase equal the schedule's ops, register rings declared and rotated."""

from __future__ import annotations

import re

import pytest

from an5dpy.blocking.plan import degrees_needed

from cuda_support import bench

MACRO = re.compile(r"^\s*(G_)?([A-Z][A-Z0-9_]*)\(")


def macro_sequence(phase) -> tuple[str, ...]:
    """The macro names a phase's ops call, in order (guards aside)."""
    return tuple(op.name for op in phase.ops)


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
        # blocks of interior cells run the inner phase's own copy (BlockingPlan.interior_phase)
        copies = 2 if t.plan.interior_phase else 1
        assert sections["inner"] == list(macro_sequence(ks.inner)) * copies
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
    for reg in ("an5d_reg_0_0", "an5d_reg_0_1", "an5d_reg_0_2", "an5d_reg_1_0", "an5d_reg_1_1",
                "an5d_reg_1_2"):
        assert f"float {reg} = 0;" in d2
    assert "CALC1(an5d_reg_1_1, an5d_reg_0_0, an5d_reg_0_1, an5d_reg_0_2, 1, " in d2


INTEGER_SCALAR = """
void f(int n, int T, int k, long m, float A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t + 1) % 2][i][j] = 0.25f * (A[t % 2][i - 1][j] + A[t % 2][i + 1][j])
                             + (A[t % 2][i][j - 1] + A[t % 2][i][j + 1]) / (float)(k + m);
#pragma endscop
}
"""


def test_integer_scalars_the_update_reads_reach_the_kernels(tmp_path):
    """Found by scripts/fuzz.py on the GPU: an int parameter read by the update was not a
    kernel parameter, so nvcc refused the kernels ('identifier "k" is undefined')."""
    import subprocess

    from an5dpy import driver
    from an5dpy.cuda.runtime import nvcc_path

    path = tmp_path / "intscalar.c"
    path.write_text(INTEGER_SCALAR)
    t = driver.translate(str(path), driver.Options(bt=2, bs="32", sl="off"))
    assert ("int", "k") in t.model.scalars and ("long", "m") in t.model.scalars
    driver.write_outputs(t.outputs, tmp_path)
    build = subprocess.run([nvcc_path(), "-cubin", "-arch=sm_90", "-O3", "-o",
                            str(tmp_path / "k.cubin"), str(tmp_path / "intscalar_kernel.cu")],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
