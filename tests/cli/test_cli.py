"""The command line: ``an5d-translate`` and ``an5d``.

Exit status: 0 success, 1 verification mismatch, 2 bad input or usage (``FILE:LINE:COL:
error: ...`` on stderr, nothing written, no traceback), 70 a bug in an5dpy (a short report
and the path of a saved traceback). The commands run in-process through
:func:`an5dpy.cli.main.main` / :func:`an5dpy.cli.main.translate_main`; one test runs the installed
console scripts.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import paths

import pytest

from cli_support import run

REPO = Path(paths.REPO)
C_INPUTS = REPO / "c_inputs"
REJECTS = sorted(glob.glob(str(REPO / "tests" / "data" / "rejects" / "*.c")))
_REJECT_HEADER = re.compile(r"/\* reject: (\d+):(\d+) \| (.*) \*/")


#: every test runs from the repository root (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("in_repo")


@pytest.fixture
def crash_dir(tmp_path, monkeypatch):
    """Saved crash reports go here instead of the system's temporary directory."""
    d = tmp_path / "crash"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def plan_line_only(err: str) -> bool:
    """Whether stderr holds nothing but the line of a plan the model chose (printed where
    plan options are open, tests/cli/test_plan_options.py)."""
    return err == "" or (err.startswith("an5d: plan bt=") and err.count("\n") == 1)


def listing(root: Path) -> list[str]:
    """Every file and directory under ``root`` (hidden ones included), relative."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def copy_input(tmp_path: Path, name: str = "j2d5pt.c") -> Path:
    d = tmp_path / "src"
    d.mkdir(exist_ok=True)
    shutil.copy(C_INPUTS / name, d / name)
    return d / name


FLOAT = ("--dtype", "float")
OUTPUTS = ["j2d5pt_host.cu", "j2d5pt_kernel.cu", "j2d5pt_kernel.hu"]


# --------------------------------------------------------------------------- help, analyze


def test_help(capsys):
    status, out, _ = run(capsys, "--help", translate=True)
    assert status == 0
    assert out.startswith("usage: an5d-translate")
    for flag in ("--bt", "--bs", "--sl", "--opt", "-D", "-I", "-o", "--print-ir"):
        assert flag in out
    status, out, _ = run(capsys, "--help")
    assert status == 0
    assert out.startswith("usage: an5d")
    for command in ("translate", "analyze", "verify"):
        assert command in out


def test_analyze_json(capsys):
    status, out, err = run(capsys, "analyze", C_INPUTS / "box3d2r.c", "--json",
                           "-D", "SB_TYPE=double")
    assert (status, err) == (0, "")
    data = json.loads(out)
    for key in ("array", "dtype", "ndim", "radius", "offsets", "shape", "diagonal_free",
                "associative", "opt", "flops_per_cell"):
        assert key in data, key
    assert data["array"] == "A"
    assert data["dtype"] == "double"
    assert data["ndim"] == 3
    assert data["radius"] == [2, 2, 2]
    assert data["shape"] == "box"
    assert data["flops_per_cell"] == 249
    assert data["opt"] == "assoc"
    assert data["associative"] is True
    assert data["diagonal_free"] is False
    assert len(data["offsets"]) == 125


def test_analyze_text_and_dtype_mismatch(capsys):
    status, out, _ = run(capsys, "analyze", C_INPUTS / "j2d5pt.c", *FLOAT)
    assert status == 0 and "2D star stencil on A (float)" in out
    status, out, err = run(capsys, "analyze", "tests/data/forms/vla_param.c", "--dtype", "double")
    assert status == 2 and out == ""
    assert err.startswith("error: --dtype double")


# --------------------------------------------------------------------------- translate


def test_translate_writes_three_files_into_output_dir(capsys, tmp_path):
    out_dir = tmp_path / "out"
    status, out, err = run(capsys, C_INPUTS / "j2d5pt.c", *FLOAT, "-o", out_dir,
                           translate=True)
    assert status == 0 and plan_line_only(err)
    assert listing(out_dir) == OUTPUTS
    assert out.split() == [str(out_dir / name) for name in OUTPUTS]
    status, out, _ = run(capsys, "translate", C_INPUTS / "j2d5pt.c", *FLOAT, "-o", out_dir,
                         "-q")  # again (overwrites), through `an5d translate`
    assert (status, out) == (0, "")
    assert listing(out_dir) == OUTPUTS


def test_translate_writes_next_to_the_input_by_default(capsys, tmp_path):
    src = copy_input(tmp_path)
    status, _, err = run(capsys, src, *FLOAT, "-I", C_INPUTS, translate=True)
    assert status == 0 and plan_line_only(err)
    assert listing(src.parent) == sorted(["j2d5pt.c", *OUTPUTS])


def _prologue_and_body(host: str, stem: str, defines: list[tuple[str, str]]) -> str:
    """Check and strip the lines translate adds before the user's text."""
    lines = host.splitlines(keepends=True)
    assert lines[0] == f'#include "{stem}_kernel.hu"\n'
    n = 1
    for name, value in defines:
        assert lines[n:n + 3] == [f"#ifndef {name}\n", f"#define {name} {value}\n", "#endif\n"]
        n += 3
    assert re.fullmatch(r'#line 1 ".*"\n', lines[n])
    return "".join(lines[n + 1:])


@pytest.mark.parametrize("variant", ["plain", "crlf", "latin1"])
def test_host_file_is_the_original_outside_the_scop(capsys, tmp_path, variant):
    original = (C_INPUTS / "j2d5pt.c").read_bytes()
    if variant == "crlf":
        original = original.replace(b"\n", b"\r\n")
    elif variant == "latin1":
        original = b"/* caf\xe9 -- not UTF-8 */\n" + original
    src = tmp_path / "j2d5pt.c"
    src.write_bytes(original)
    status, _, err = run(capsys, src, *FLOAT, "-I", C_INPUTS, "-D", "BENCH_EXTRA=1", "-q",
                         translate=True)
    assert (status, err) == (0, "")
    orig = original.decode("utf-8", "surrogateescape")
    host = (tmp_path / "j2d5pt_host.cu").read_bytes().decode("utf-8", "surrogateescape")
    assert "#pragma scop" not in host and "#pragma endscop" not in host
    body = _prologue_and_body(host, "j2d5pt", [("BENCH_EXTRA", "1"), ("SB_TYPE", "float")])
    closing = list(re.finditer(r'^#line (\d+) ".*"\r?\n', body, re.M))[-1]
    region, after = body[:closing.start()], body[closing.end():]
    scop = orig.index("#pragma scop")
    scop_line = orig.rfind("\n", 0, scop) + 1
    end_line = orig.index("\n", orig.index("#pragma endscop")) + 1
    assert region.startswith(orig[:scop_line])  # before the scop: byte for byte
    assert after == orig[end_line:]  # after it too
    assert int(closing.group(1)) == orig[:end_line].count("\n") + 1  # and line numbers agree
    assert "an5d_j2d5pt_launch" in region[scop_line:]


@pytest.mark.parametrize("stage", ["program", "analysis", "plan", "schedule"])
def test_print_ir_prints_and_writes_nothing(capsys, tmp_path, monkeypatch, stage):
    src = copy_input(tmp_path)
    monkeypatch.chdir(tmp_path)
    before = listing(tmp_path)
    status, out, err = run(capsys, src, *FLOAT, "-I", C_INPUTS, "--print-ir", stage,
                           translate=True)
    assert status == 0 and plan_line_only(err)
    assert out.strip()
    assert listing(tmp_path) == before
    if stage == "plan":
        assert json.loads(out)


@pytest.mark.parametrize("input_name, options, needle", [
    ("j2d5pt.c", ["--bt", "0"], "--bt"),
    ("j2d5pt.c", ["--bt", "x"], "--bt"),
    ("j2d5pt.c", ["--bs", "4", "--bt", "4"], "--bs 4"),  # too small for bt 4: no compute region
    ("j2d5pt.c", ["--bs", "32x32"], "--bs"),  # 2D takes one size
    ("j2d5pt.c", ["--bs", "abc"], "--bs"),
    ("j2d5pt.c", ["--bs", "2048"], "--bs"),  # over 1024 threads per block
    ("j2d5pt.c", ["--sl", "0"], "--sl"),
    ("j2d5pt.c", ["--opt", "fast"], "--opt"),
    ("box2d1r.c", ["--opt", "nondiag"], "--opt nondiag"),  # a box stencil has diagonals
    ("box3d1r.c", ["--bs", "32"], "--bs"),  # 3D takes B1xB2
    ("j2d5pt.c", ["--bt", "1000"], "--bt 1000"),  # no compute region either
    ("j2d5pt.c", ["--bt", "100", "--bs", "1024"], "registers"),  # too many registers
    ("j2d5pt.c", ["--bt", "2", "--bs", "100", "--sl", "8", "--coarsen", "3"], "--coarsen 3"),
    ("j2d5pt.c", ["--bt", "2", "--bs", "100", "--sl", "8", "--coarsen", "8"], "--coarsen 8"),
    ("j2d5pt.c", ["--coarsen", "0"], "--coarsen"),
    ("grayscott2d.c", ["--bt", "2", "--bs", "128", "--sl", "8", "--opt", "assoc"],
     "several statements"),
    ("j2d9pt.c", ["--bt", "2", "--bs", "128", "--sl", "8", "--opt", "none", "--barriers",
                  "step"], "--barriers step"),
    ("j2d5pt.c", ["--barriers", "block"], "--barriers"),
    ("star3d1r.c", ["--idle", "never"], "--idle"),
])
def test_option_errors_exit_2_and_write_nothing(capsys, tmp_path, input_name, options, needle):
    src = copy_input(tmp_path, input_name)
    before = listing(tmp_path)
    status, out, err = run(capsys, src, *FLOAT, "-I", C_INPUTS, *options, translate=True)
    assert status == 2
    assert needle in err
    assert "Traceback" not in err and out == ""
    assert listing(tmp_path) == before


def translated_kernel(capsys, tmp_path, name: str, *options) -> str:
    """``an5d-translate`` of c_inputs' ``name`` in float with ``options``, which must
    succeed silently: the kernel file it writes."""
    out_dir = tmp_path / "out"
    status, _, err = run(capsys, C_INPUTS / f"{name}.c", *FLOAT, *options, "-o", out_dir,
                         translate=True)
    assert status == 0 and err == ""
    return (out_dir / f"{name}_kernel.cu").read_text()


def test_translate_coarsened_plan(capsys, tmp_path):
    kernel = translated_kernel(capsys, tmp_path, "star3d1r", "--bt", "2", "--bs", "32x64",
                               "--sl", "64", "--coarsen", "2")
    assert "coarsen=2" in kernel and "const dim3 block(32, 32);" in kernel
    assert "AN5D_CELL1(" in kernel


def test_translate_one_barrier_per_step(capsys, tmp_path):
    kernel = translated_kernel(capsys, tmp_path, "star2d1r", "--bt", "4", "--bs", "128",
                               "--sl", "64", "--barriers", "step")
    assert "barriers=step" in kernel and "__shared__ float an5d_sm[8][1][130];" in kernel
    assert "SHARE(an5d_reg_" in kernel and "CALC3_E(" in kernel


def test_translate_computing_at_idle_warps(capsys, tmp_path):
    kernel = translated_kernel(capsys, tmp_path, "star3d1r", "--bt", "3", "--bs", "32x32",
                               "--sl", "64", "--idle", "compute")
    assert "idle=compute" in kernel and "const float an5d_v = (float)(" in kernel
    # the stores keep their guard; no level op tests a level bit
    assert {m for m in re.findall(r"if \(an5d_act & (\d+)u\)", kernel)} <= {"2", "4", "8"}
    assert "an5d_out = (float)(" not in kernel


def test_dtype_contradicting_the_declaration(capsys, tmp_path):
    src = tmp_path / "vla_param.c"
    shutil.copy(REPO / "tests" / "data" / "forms" / "vla_param.c", src)
    status, _, err = run(capsys, src, "--dtype", "double", translate=True)
    assert status == 2
    assert err.startswith("error: --dtype double") and "float" in err
    assert listing(tmp_path) == ["vla_param.c"]


def test_dtype_contradicting_a_define(capsys, tmp_path):
    status, _, err = run(capsys, C_INPUTS / "j2d5pt.c", "-D", "SB_TYPE=float", "--dtype",
                         "double", "-o", tmp_path / "out", translate=True)
    assert status == 2
    assert err == "error: --dtype double contradicts -D SB_TYPE=float\n"
    assert listing(tmp_path) == []


def test_repeated_define_keeps_the_last_value(capsys, tmp_path):
    """As for the C compiler: the kernels and the host file's prologue agree on double
    (the prologue used to define the first value, float, around double kernels)."""
    status, _, err = run(capsys, C_INPUTS / "j2d5pt.c", "-D", "SB_TYPE=float", "-D",
                         "SB_TYPE=double", "-o", tmp_path, "-q", translate=True)
    assert (status, err) == (0, "")
    host = (tmp_path / "j2d5pt_host.cu").read_text()
    assert "#define SB_TYPE double\n" in host and "#define SB_TYPE float" not in host
    assert "const double *src" in (tmp_path / "j2d5pt_kernel.hu").read_text()


def test_output_dir_that_cannot_be_created(capsys, tmp_path):
    (tmp_path / "file").write_text("not a directory\n")
    status, _, err = run(capsys, C_INPUTS / "j2d5pt.c", *FLOAT, "-o", tmp_path / "file" / "out",
                         translate=True)
    assert status == 2
    assert err.startswith("error: cannot create output directory")
    assert listing(tmp_path) == ["file"]


def test_read_only_output_dir(capsys, tmp_path):
    out_dir = tmp_path / "ro"
    out_dir.mkdir()
    out_dir.chmod(0o555)
    try:
        probe = out_dir / "probe"
        try:
            probe.write_text("")
        except OSError:
            pass
        else:
            probe.unlink()
            pytest.skip("permissions do not bind this user (root): see the injected-failure test")
        status, _, err = run(capsys, C_INPUTS / "j2d5pt.c", *FLOAT, "-o", out_dir,
                             translate=True)
        assert status == 2
        assert err.startswith(f"error: cannot write to '{out_dir}'")
        assert listing(out_dir) == []
    finally:
        out_dir.chmod(0o755)


def test_failure_while_writing_leaves_nothing(capsys, tmp_path, monkeypatch):
    """The disk fills up (ENOSPC) while the second file is written: no file is left, not
    the first, not a temporary, not the output directory translate created."""
    import errno
    import io

    real_fdopen = os.fdopen
    calls = []

    class Full(io.StringIO):
        def write(self, text):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def fdopen(fd, *args, **kwargs):
        calls.append(fd)
        if len(calls) == 2:
            os.close(fd)
            return Full()
        return real_fdopen(fd, *args, **kwargs)

    monkeypatch.setattr(os, "fdopen", fdopen)
    out_dir = tmp_path / "new" / "out"
    status, _, err = run(capsys, C_INPUTS / "j2d5pt.c", *FLOAT, "-o", out_dir, translate=True)
    assert status == 2
    assert err.startswith(f"error: cannot write to '{out_dir}': No space left on device")
    assert len(calls) == 2
    assert listing(tmp_path) == []


def test_output_name_taken_by_a_directory(capsys, tmp_path):
    out_dir = tmp_path / "out"
    (out_dir / "j2d5pt_kernel.cu").mkdir(parents=True)
    status, _, err = run(capsys, C_INPUTS / "j2d5pt.c", *FLOAT, "-o", out_dir, translate=True)
    assert status == 2
    assert "j2d5pt_kernel.cu" in err and "is a directory" in err
    assert listing(out_dir) == ["j2d5pt_kernel.cu"]


def test_missing_input_file(capsys, tmp_path):
    status, _, err = run(capsys, tmp_path / "nope.c", "-o", tmp_path / "out", translate=True)
    assert status == 2
    assert "nope.c" in err and "no such file" in err
    assert listing(tmp_path) == []


# --------------------------------------------------------------------------- rejected inputs


def test_there_are_rejects():
    assert len(REJECTS) >= 60


@pytest.mark.parametrize("path", REJECTS, ids=lambda p: os.path.basename(p)[:-2])
def test_reject_through_the_cli(capsys, tmp_path, path):
    rel = os.path.relpath(path, REPO)
    with open(path, encoding="utf-8") as f:
        line, column, _ = _REJECT_HEADER.match(f.readline()).groups()
    out_dir = tmp_path / "out"
    status, out, err = run(capsys, rel, "-o", out_dir, translate=True)
    assert status == 2, err
    assert err.startswith(f"{rel}:{line}:{column}: error: "), err
    assert "Traceback" not in err and "internal error" not in err
    assert len(err.strip().splitlines()) <= 3, err
    assert out == ""
    assert not out_dir.exists()


# --------------------------------------------------------------------------- verify


SIZES = ("-P", "compsize=40", "-P", "timestep=5")


def test_verify_sim_bit_identical(capsys):
    status, out, err = run(capsys, "verify", C_INPUTS / "j2d5pt.c", *FLOAT, "--backend", "sim",
                           *SIZES)
    assert status == 0 and plan_line_only(err)
    lines = out.splitlines()
    assert lines[0] == "PASS"
    assert "bit-identical: yes" in lines
    assert "required: bit-identical results" in out


def test_verify_sim_assoc_within_tolerance(capsys):
    status, out, err = run(capsys, "verify", C_INPUTS / "box2d1r.c", *FLOAT, "--opt", "assoc",
                           "--backend", "sim", *SIZES, "--bt", "3")
    assert status == 0 and plan_line_only(err)
    assert out.splitlines()[0] == "PASS"
    assert "required: relative error <=" in out
    assert "opt=assoc" in out


LAPLACIAN = """void lap(int n, int T, float A[2][n][n])
{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = 0.2f * (A[t%2][i-1][j] + A[t%2][i+1][j] + A[t%2][i][j-1]
                                   + A[t%2][i][j+1] - 4.0f * A[t%2][i][j]);
#pragma endscop
}
"""


@pytest.mark.parametrize("steps", [1, 5])
def test_verify_assoc_with_cancelling_terms(capsys, tmp_path, steps):
    """A Laplacian's cells are differences of O(1) terms, often near zero: a reordered sum
    differs there by an ulp of the terms, which is no mismatch (was: FAIL, exit 1)."""
    src = tmp_path / "lap.c"
    src.write_text(LAPLACIAN)
    for seed in range(3):
        status, out, err = run(capsys, "verify", src, "--opt", "assoc", "--backend", "sim",
                               "-P", "n=64", "-P", f"T={steps}", "--seed", seed)
        assert status == 0 and plan_line_only(err), out
        assert out.startswith("PASS\n") and "bit-identical: no" in out


@pytest.mark.parametrize("size, needle", [("-5", "negative array extent"),
                                          ("99999999", "GiB")])
def test_verify_sizes_without_a_grid(capsys, size, needle):
    status, _, err = run(capsys, "verify", C_INPUTS / "j2d5pt.c", *FLOAT, "--backend", "sim",
                         "-P", f"compsize={size}", "-P", "timestep=2")
    assert status == 2
    assert err.startswith("error: ") and needle in err and "compsize" in err


def test_verify_cuda_without_a_gpu(capsys):
    from an5dpy.cuda.runtime import cupy_available
    if cupy_available()[0]:
        pytest.skip("a GPU is present")
    status, _, err = run(capsys, "verify", C_INPUTS / "j2d5pt.c", *FLOAT, "--backend", "cuda",
                         *SIZES)
    assert status == 2
    assert err.startswith("error: --backend cuda needs a CUDA GPU and cupy")


def test_verify_of_a_loop_that_traps_exits_2_at_the_scop(capsys, tmp_path):
    # an integer division by zero in the user's own loop: undefined, reported, no crash
    source = tmp_path / "trap.c"
    source.write_text(
        "void kernel(int T, int N, float A[2][N][N])\n{\n  int t, i, j;\n#pragma scop\n"
        "  for (t = 0; t < T; t++)\n    for (i = 1; i < N - 1; i++)\n"
        "      for (j = 1; j < N - 1; j++)\n"
        "        A[(t+1)%2][i][j] = A[t%2][i][j]\n"
        "          / (float)((int)A[t%2][i-1][j] / (int)(A[t%2][i][j+1] * 0.0f));\n"
        "#pragma endscop\n}\n")
    status, out, err = run(capsys, "verify", source, "-P", "T=2", "-P", "N=12", "--backend",
                           "sim", "--bt", "1", "--bs", "8", "--sl", "off")
    assert status == 2
    assert f"{source}:4:1: error: the loop nest, compiled by gcc and run with T=2, N=12, was " \
           "stopped by SIGFPE" in err
    assert "Traceback" not in err and out == ""


def test_verify_mismatch_exits_1(capsys, monkeypatch):
    import an5dpy.check.simulate

    real = an5dpy.check.simulate.simulate

    def perturbed(info, plan, grid, env, *args, **kwargs):
        result = real(info, plan, grid, env, *args, **kwargs)
        result[(slice(None), *(d // 2 for d in result.shape[1:]))] += 0.25
        return result

    monkeypatch.setattr(an5dpy.check.simulate, "simulate", perturbed)
    status, out, err = run(capsys, "verify", C_INPUTS / "j2d5pt.c", *FLOAT, "--backend", "sim",
                           *SIZES)
    assert status == 1
    assert out.splitlines()[0] == "FAIL"
    assert "bit-identical: no" in out
    assert "Traceback" not in err


@pytest.mark.parametrize("name, dtype, plan, degrees, dimsize", [
    ("j2d5pt", "float", ("--bt", "4", "--bs", "64", "--sl", "16"), "degree 3 (1 launch)", 42),
    ("star3d2r", "double", ("--bt", "2", "--bs", "16x16", "--sl", "8"), "degree 1 (3 launches)",
     44),
])
def test_verify_isl_proves_the_launches_for_the_given_sizes(capsys, name, dtype, plan,
                                                            degrees, dimsize):
    status, out, err = run(capsys, "verify", C_INPUTS / f"{name}.c", "--dtype", dtype,
                           "--backend", "isl", "-P", "compsize=40", "-P", "timestep=11", *plan)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "PASS"
    assert f"{degrees}: every interior cell stored exactly once" in lines
    assert any(line.startswith("config: bt=") and "backend isl" in line for line in lines)
    assert f"parameters: timestep=11, dimsize={dimsize}, compsize=40" in lines


def test_verify_isl_fails_on_a_wrong_block_stride(capsys, monkeypatch):
    from an5dpy.blocking.plan import BlockingPlan
    real = BlockingPlan.compute_region
    monkeypatch.setattr(BlockingPlan, "compute_region",
                        lambda self, degree=None: tuple(c - 1 for c in real(self, degree)))
    status, out, err = run(capsys, "verify", C_INPUTS / "j2d5pt.c", *FLOAT, "--backend", "isl",
                           "-P", "compsize=200", "-P", "timestep=4", "--bs", "64", "--sl", "16")
    assert status == 1 and plan_line_only(err)
    assert out.splitlines()[0] == "FAIL"
    assert "a cell is stored twice" in out


def test_verify_isl_refuses_sizes_without_a_grid(capsys):
    status, out, err = run(capsys, "verify", C_INPUTS / "j2d5pt.c", *FLOAT, "--backend", "isl",
                           "-P", "compsize=-5", "-P", "timestep=2")
    assert status == 2 and "negative array extent" in err and out == ""


def test_verify_missing_parameter_is_named(capsys):
    # (the benchmark harness' compsize/timestep have defaults: a program without them)
    status, out, err = run(capsys, "verify", "tests/data/forms/vla_param.c", "--backend", "sim",
                           "-P", "n=20")
    assert status == 2
    assert err == ("error: missing value for parameter 'T' (give -P T=VALUE; the program's "
                   "parameters: T, n)\n")
    assert out == ""


def test_verify_unknown_parameter(capsys):
    status, _, err = run(capsys, "verify", C_INPUTS / "j2d5pt.c", *FLOAT, "--backend", "sim",
                         *SIZES, "-P", "nsteps=3")
    assert status == 2
    assert "unknown parameter 'nsteps'" in err


@pytest.mark.parametrize("param", ["compsize", "compsize=", "=3", "compsize=abc"])
def test_verify_malformed_parameter(capsys, param):
    status, _, err = run(capsys, "verify", C_INPUTS / "j2d5pt.c", *FLOAT, "--backend", "sim",
                         "-P", param, "-P", "timestep=2")
    assert status == 2
    assert "compsize" in err or "-P" in err
    assert "Traceback" not in err


# --------------------------------------------------------------------------- internal errors


def test_internal_error_exits_70_with_a_saved_traceback(capsys, tmp_path, monkeypatch,
                                                        crash_dir):
    from an5dpy.cuda import kernels

    def broken(*args, **kwargs):
        raise KeyError("launch-geometry")

    monkeypatch.setattr(kernels, "build_schedule", broken)
    out_dir = tmp_path / "out"
    status, out, err = run(capsys, C_INPUTS / "j2d5pt.c", *FLOAT, "-o", out_dir, translate=True)
    assert status == 70
    assert "internal error" in err and "KeyError" in err
    assert "test_cli.py" in err  # the location: where it was raised
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 5
    saved = re.search(r"full traceback: (\S+)", err).group(1)
    assert Path(saved).parent == crash_dir
    text = Path(saved).read_text()
    assert "Traceback (most recent call last)" in text and "launch-geometry" in text
    assert not out_dir.exists() and out == ""


def test_internal_error_in_verify(capsys, monkeypatch, crash_dir):
    import an5dpy.check.simulate

    def broken(*args, **kwargs):
        raise ZeroDivisionError("schedule step")

    monkeypatch.setattr(an5dpy.check.simulate, "simulate", broken)
    status, _, err = run(capsys, "verify", C_INPUTS / "j2d5pt.c", *FLOAT, "--backend", "sim",
                         *SIZES)
    assert status == 70
    assert "internal error" in err
    assert Path(re.search(r"full traceback: (\S+)", err).group(1)).is_file()


# --------------------------------------------------------------------------- console scripts


def test_console_scripts(tmp_path):
    """The installed entry points, as a user runs them."""
    bindir = Path(sys.executable).parent
    translate = shutil.which("an5d-translate", path=f"{bindir}{os.pathsep}{os.environ['PATH']}")
    an5d = shutil.which("an5d", path=f"{bindir}{os.pathsep}{os.environ['PATH']}")
    assert translate and an5d, "console scripts not installed (pip install -e .)"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([translate, "tests/data/rejects/stride_two.c", "-o", str(tmp_path / "o")],
                          cwd=REPO, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("tests/data/rejects/stride_two.c:7:34: error: ")
    assert "Traceback" not in done.stderr and not (tmp_path / "o").exists()
    done = subprocess.run([an5d, "analyze", "c_inputs/j2d5pt.c", "--json", "--dtype", "float"],
                          cwd=REPO, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["flops_per_cell"] == 10
