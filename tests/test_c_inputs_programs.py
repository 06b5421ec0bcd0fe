"""The hand-written programs of c_inputs/ (poisson2d, varheat2d, wave2d, acoustic3d,
heat3dz, dampedwave2d, and the multi-statement grayscott2d, fdtd2d, acousticvp3d) and the
harness macros they use (BENCH_LEVELS, BENCH_FIELDS, BENCH_IN_PLACE, BENCH_COEFS,
BENCH_COEF_LO/HI of c_inputs/common.h): each program built by gcc for float and double and
run with -c (the scop path against the OpenMP copy, bit for bit), and run for a thousand
steps without leaving the finite numbers; the harness' comparison of time buffers and
fields, its checksum buffers and its coefficient values, on small programs written here;
and an5dpy's view of the programs (analyze, and verify --backend sim: on those with
read-only arrays; wave2d, acoustic3d and dampedwave2d rotate through time levels; the
multi-statement ones, whose fields in place are pointers to rows with an outermost extent
inferred from the accesses)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess

import pytest

from cli_support import run
from paths import C_INPUTS, PAPER_BENCHMARKS

#: Every program of c_inputs/ that generate.py does not write.
HAND_WRITTEN = sorted(f[:-2] for f in os.listdir(C_INPUTS)
                      if f.endswith(".c") and f[:-2] not in PAPER_BENCHMARKS)
#: Those with read-only arrays that an5dpy reads today.
COEFFICIENT_PROGRAMS = ("poisson2d", "varheat2d", "heat3dz")
#: Those with k-level time rotation (three levels, or a leapfrog in two buffers).
LEVEL_PROGRAMS = ("wave2d", "acoustic3d", "dampedwave2d")
#: Those with several fields or statements per time step (BENCH_FIELDS): an5dpy analyses
#: them and verifies them on the simulator, but generates no CUDA for them yet (issue 16).
MULTI_STATEMENT_PROGRAMS = ("grayscott2d", "fdtd2d", "acousticvp3d")
GCC = shutil.which("gcc")
needs_gcc = pytest.mark.skipif(GCC is None, reason="gcc is not installed")


def macro(name: str, macro_name: str) -> float | None:
    """The value of ``#define MACRO_NAME value`` in c_inputs/NAME.c (None if absent)."""
    with open(os.path.join(C_INPUTS, f"{name}.c")) as f:
        m = re.search(rf"^#define {macro_name} (\S+)", f.read(), re.M)
    return None if m is None else float(m.group(1))


def build(source: str, dtype: str, exe: str) -> None:
    """Compile a program over c_inputs/common.h as check.sh does; any warning fails."""
    done = subprocess.run([GCC, "-std=gnu99", "-O2", "-Wall", "-Wextra", "-fopenmp",
                           "-D", f"SB_TYPE={dtype}", "-I", C_INPUTS, source, "-o", exe, "-lm"],
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def run_program(exe: str, *args: str) -> str:
    done = subprocess.run([exe, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OMP_NUM_THREADS": "2"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def line(out: str, prefix: str) -> str:
    return next(l for l in out.splitlines() if l.startswith(prefix))


# --------------------------------------------------------------------------- the programs


def test_the_hand_written_programs_are_these_and_check_sh_runs_them():
    assert HAND_WRITTEN == sorted(COEFFICIENT_PROGRAMS + LEVEL_PROGRAMS
                                  + MULTI_STATEMENT_PROGRAMS)
    assert len(PAPER_BENCHMARKS) == 21 and not set(PAPER_BENCHMARKS) & set(HAND_WRITTEN)
    with open(os.path.join(C_INPUTS, "check.sh")) as f:
        listed = re.search(r'^hand_written="([^"]*)"', f.read(), re.M).group(1).split()
    assert sorted(listed) == HAND_WRITTEN


@needs_gcc
@pytest.mark.parametrize("dtype", ("float", "double"))
@pytest.mark.parametrize("name", HAND_WRITTEN)
def test_program_scop_path_matches_the_openmp_copy(name, dtype, tmp_path):
    exe = str(tmp_path / name)
    build(os.path.join(C_INPUTS, f"{name}.c"), dtype, exe)
    size = "24" if macro(name, "BENCH_DIM") == 3 else "64"
    for steps in ("7", "8"):
        out = run_program(exe, "-s", size, "-t", steps, "-n", "1", "-c")
        assert line(out, "Max error:") == "Max error: 0 (relative 0)", out
        assert line(out, "Bit-identical:") == "Bit-identical: yes", out
        assert re.fullmatch(r"Average: \S+ GFLOPS, \S+ ms", line(out, "Average:")), out
        fpp = int(macro(name, "BENCH_FPP"))
        assert line(out, "Stencil:").startswith(
            f"Stencil: {int(macro(name, 'BENCH_DIM'))}D, radius "
            f"{int(macro(name, 'BENCH_RAD'))}, {fpp} FLOP/cell, SB_TYPE {dtype}")


@needs_gcc
@pytest.mark.parametrize("name", HAND_WRITTEN)
def test_program_stays_finite_for_a_thousand_steps(name, tmp_path):
    """The constants keep the values bounded from the harness' random data (the header
    comments say why); the checksum is finite only when every value it sums is."""
    exe = str(tmp_path / name)
    build(os.path.join(C_INPUTS, f"{name}.c"), "float", exe)
    size = "10" if macro(name, "BENCH_DIM") == 3 else "32"
    out = run_program(exe, "-s", size, "-t", "1000", "-n", "1", "-c")
    assert math.isfinite(float(line(out, "Checksum (CPU result):").split(":")[1])), out


# --------------------------------------------------------------------------- the harness

#: Step t sets every cell of the buffer it writes, (t + BENCH_LEVELS - 1) % BENCH_LEVELS,
#: to t + 1; the scop path then adds 0.5 to the first cell of buffer SPOIL (none if < 0).
LEVELS_PROGRAM = """#define BENCH_DIM 2
#define BENCH_FPP 1
#define BENCH_RAD 1
{levels}
#include "common.h"

double kernel_stencil(SB_TYPE *A1, int compsize, int timestep, bool scop)
{{
  double start_time = sb_time();
  size_t cells = (size_t)(compsize + 2) * (size_t)(compsize + 2);
  int spoil = {spoil};
  for (int t = 0; t < timestep; t++)
    for (size_t c = 0; c < cells; c++)
      A1[(size_t)((t + BENCH_LEVELS - 1) % BENCH_LEVELS) * cells + c] = (SB_TYPE)(t + 1);
  if (scop && spoil >= 0)
    A1[(size_t)spoil * cells] += 0.5f;
  return sb_elapsed(start_time);
}}
"""


def levels_program(tmp_path, levels: str, spoil: int) -> str:
    """LEVELS_PROGRAM built (float); run it with -s 10: 12 x 12 cells per buffer."""
    src = tmp_path / "levels.c"
    src.write_text(LEVELS_PROGRAM.format(levels=levels, spoil=spoil))
    exe = str(tmp_path / "levels")
    build(str(src), "float", exe)
    return exe


@needs_gcc
@pytest.mark.parametrize("levels, steps, spoil, identical", [
    ("", 7, 0, "yes"),  # a two-buffer iteration: the other buffer is scratch
    ("", 7, 1, "no"),  # ... the buffer the last step wrote is compared
    ("#define BENCH_LEVELS 2", 7, 0, "no"),  # a leapfrog: both buffers are compared
    ("#define BENCH_LEVELS 3", 7, 0, "no"),  # three levels: every one is compared
    ("#define BENCH_LEVELS 3", 7, 1, "no"),
    ("#define BENCH_LEVELS 3", 7, -1, "yes"),
])
def test_minus_c_compares_the_buffers_the_program_declares(tmp_path, levels, steps, spoil,
                                                           identical):
    out = run_program(levels_program(tmp_path, levels, spoil), "-s", "10", "-t", str(steps),
                      "-n", "1", "-c")
    assert line(out, "Bit-identical:") == f"Bit-identical: {identical}", out
    error = "0" if identical == "yes" else "0.5"
    assert line(out, "Max error:").startswith(f"Max error: {error} "), out
    assert ("Time buffers:" in out) == bool(levels)


@needs_gcc
@pytest.mark.parametrize("levels", ("", "#define BENCH_LEVELS 2", "#define BENCH_LEVELS 3"))
def test_the_checksum_sums_the_buffer_the_last_step_wrote(tmp_path, levels):
    exe = levels_program(tmp_path, levels, -1)
    for steps in (1, 2, 3, 4):
        out = run_program(exe, "-s", "10", "-t", str(steps), "-n", "1", "-c")
        # every cell of that buffer (halo included) holds the step count
        assert float(line(out, "Checksum (CPU result):").split(":")[1]) == steps * 12 * 12


#: Step t sets every cell of the buffer it writes in field f (the field's only buffer in
#: place, else buffer (t + BUFFERS - 1) % BUFFERS) to (f + 1) * (t + 1); the scop path
#: then adds 0.5 to the first cell of buffer SPOIL_BUFFER of field SPOIL_FIELD (none if
#: SPOIL_FIELD < 0).
FIELDS_PROGRAM = """#define BENCH_DIM 2
#define BENCH_FPP 1
#define BENCH_RAD 1
{macros}
#include "common.h"

double kernel_stencil(SB_TYPE *A1, int compsize, int timestep, bool scop)
{{
  double start_time = sb_time();
  size_t cells = (size_t)(compsize + 2) * (size_t)(compsize + 2);
  size_t buffers = {buffers};
  int spoil_field = {spoil_field};
  size_t spoil_buffer = {spoil_buffer};
  for (int t = 0; t < timestep; t++)
    for (size_t f = 0; f < BENCH_FIELDS; f++)
      for (size_t c = 0; c < cells; c++)
        A1[(f * buffers + ((size_t)t + buffers - 1) % buffers) * cells + c] =
          (SB_TYPE)((f + 1) * (size_t)(t + 1));
  if (scop && spoil_field >= 0)
    A1[((size_t)spoil_field * buffers + spoil_buffer) * cells] += 0.5f;
  return sb_elapsed(start_time);
}}
"""


def fields_program(tmp_path, macros: str, buffers: int, spoil: tuple[int, int]) -> str:
    """FIELDS_PROGRAM built (float); run it with -s 10: 12 x 12 cells per buffer."""
    src = tmp_path / "fields.c"
    src.write_text(FIELDS_PROGRAM.format(macros=macros, buffers=buffers,
                                         spoil_field=spoil[0], spoil_buffer=spoil[1]))
    exe = str(tmp_path / "fields")
    build(str(src), "float", exe)
    return exe


#: (macros, fields, buffers per field) of the layouts tried below.
TWO_FIELDS = ("#define BENCH_FIELDS 2", 2, 2)
TWO_FIELDS_THREE_LEVELS = ("#define BENCH_FIELDS 2\n#define BENCH_LEVELS 3", 2, 3)
THREE_IN_PLACE = ("#define BENCH_FIELDS 3\n#define BENCH_IN_PLACE 1", 3, 1)
ONE_IN_PLACE = ("#define BENCH_IN_PLACE 1", 1, 1)


@needs_gcc
@pytest.mark.parametrize("layout, spoil, identical", [
    (TWO_FIELDS, (-1, 0), "yes"),
    (TWO_FIELDS, (1, 1), "no"),  # 7 steps: each field's buffer 1 is compared ...
    (TWO_FIELDS, (0, 1), "no"),
    (TWO_FIELDS, (1, 0), "yes"),  # ... its buffer 0 is scratch
    (TWO_FIELDS_THREE_LEVELS, (1, 0), "no"),  # every buffer of every field
    (TWO_FIELDS_THREE_LEVELS, (0, 2), "no"),
    (THREE_IN_PLACE, (-1, 0), "yes"),
    (THREE_IN_PLACE, (2, 0), "no"),  # every field's one buffer
    (THREE_IN_PLACE, (0, 0), "no"),
    (ONE_IN_PLACE, (0, 0), "no"),
])
def test_minus_c_compares_every_field(tmp_path, layout, spoil, identical):
    macros, fields, buffers = layout
    out = run_program(fields_program(tmp_path, macros, buffers, spoil), "-s", "10", "-t", "7",
                      "-n", "1", "-c")
    assert line(out, "Bit-identical:") == f"Bit-identical: {identical}", out
    error = "0" if identical == "yes" else "0.5"
    assert line(out, "Max error:").startswith(f"Max error: {error} "), out
    each = "one buffer updated in place" if "IN_PLACE" in macros else f"{buffers} time buffers"
    assert line(out, "Fields:").startswith(f"Fields: {fields} back to back, each {each}"), out


@needs_gcc
@pytest.mark.parametrize("layout", (TWO_FIELDS, TWO_FIELDS_THREE_LEVELS, THREE_IN_PLACE,
                                    ONE_IN_PLACE))
def test_the_checksum_sums_every_field_s_last_buffer(tmp_path, layout):
    macros, fields, buffers = layout
    exe = fields_program(tmp_path, macros, buffers, (-1, 0))
    for steps in (1, 2, 3, 4):
        out = run_program(exe, "-s", "10", "-t", str(steps), "-n", "1", "-c")
        # every cell of field f's last buffer (halo included) holds (f + 1) * steps
        want = sum((f + 1) * steps for f in range(fields)) * 12 * 12
        assert float(line(out, "Checksum (CPU result):").split(":")[1]) == want, out


@needs_gcc
@pytest.mark.parametrize("macros, message", [
    ("#define BENCH_FIELDS 0", "BENCH_FIELDS must be at least 1"),
    ("#define BENCH_IN_PLACE 2", "BENCH_IN_PLACE must be 0 or 1"),
    ("#define BENCH_IN_PLACE 1\n#define BENCH_LEVELS 2",
     "BENCH_IN_PLACE 1: a field is one buffer, leave BENCH_LEVELS undefined"),
])
def test_bad_field_macros_stop_the_compiler(tmp_path, macros, message):
    src = tmp_path / "bad.c"
    src.write_text(FIELDS_PROGRAM.format(macros=macros, buffers=1, spoil_field=-1,
                                         spoil_buffer=0))
    done = subprocess.run([GCC, "-std=gnu99", "-D", "SB_TYPE=float", "-I", C_INPUTS,
                           "-fsyntax-only", str(src)], capture_output=True, text=True)
    assert done.returncode != 0 and message in done.stderr, done.stderr


#: Prints every coefficient exactly (C's %a) from the CPU run of -c.
COEFS_PROGRAM = """#define BENCH_DIM 3
#define BENCH_FPP 1
#define BENCH_RAD 1
#define BENCH_COEFS 2
#define BENCH_COEF_LO -0.25
#define BENCH_COEF_HI 0.75
#include "common.h"

double kernel_stencil(SB_TYPE *A1, SB_TYPE *C1, int compsize, int timestep, bool scop)
{
  double start_time = sb_time();
  size_t dimsize = (size_t)compsize + 2;
  size_t n = 2 * dimsize * dimsize * dimsize;
  (void)A1;
  (void)timestep;
  if (!scop)
    for (size_t e = 0; e < n; e++)
      printf("coef %a\\n", (double)C1[e]);
  return sb_elapsed(start_time);
}
"""


@needs_gcc
def test_coefficients_are_the_same_exact_values_in_float_and_double(tmp_path):
    src = tmp_path / "coefs.c"
    src.write_text(COEFS_PROGRAM)
    values = {}
    for dtype in ("float", "double"):
        exe = str(tmp_path / f"coefs-{dtype}")
        build(str(src), dtype, exe)
        out = run_program(exe, "-s", "6", "-t", "1", "-n", "1", "-c")
        assert "Coefficient arrays: 2, values in [-0.25, 0.75)" in out
        values[dtype] = [float.fromhex(l.split()[1]) for l in out.splitlines()
                         if l.startswith("coef ")]
    got = values["float"]
    assert got == values["double"] and len(got) == 2 * 8 ** 3
    assert all(-0.25 <= v < 0.75 and (v * 2 ** 23).is_integer() for v in got)
    assert min(got) < -0.2 and max(got) > 0.7 and len(set(got)) > 0.99 * len(got)
    assert got[:8 ** 3] != got[8 ** 3:]  # two arrays, not one twice


# --------------------------------------------------------------------------- an5dpy's view


@pytest.mark.parametrize("name", HAND_WRITTEN)
def test_analyze_reads_the_program(name, capsys, in_repo):
    path = f"c_inputs/{name}.c"
    status, out, err = run(capsys, "analyze", path, "--dtype", "float", "--json")
    assert status == 0, err
    info = json.loads(out)
    ndim, rad = int(macro(name, "BENCH_DIM")), int(macro(name, "BENCH_RAD"))
    assert (info["ndim"], info["radius"]) == (ndim, [rad] * ndim)
    assert info["flops_per_cell"] == macro(name, "BENCH_FPP")
    fields = int(macro(name, "BENCH_FIELDS") or 1)
    updated, read_only = info["arrays"][:fields], info["arrays"][fields:]
    levels = 1 if macro(name, "BENCH_IN_PLACE") else (macro(name, "BENCH_LEVELS") or 2)
    assert [(a["role"], a["time_levels"]) for a in updated] == [("updated", levels)] * fields
    # every grid is dimsize^ndim (the fields in place declare no outermost extent: the
    # accesses give it)
    assert all(a["extents"] == ["dimsize"] * ndim for a in updated)
    assert [a["role"] for a in read_only] == ["read_only"] * int(macro(name, "BENCH_COEFS") or 0)


@pytest.mark.parametrize("name, inferred", [("fdtd2d", True), ("acousticvp3d", True),
                                            ("grayscott2d", False)])
def test_analyze_says_which_extents_it_inferred(name, inferred, capsys, in_repo):
    status, out, err = run(capsys, "analyze", f"c_inputs/{name}.c", "--dtype", "double")
    assert status == 0, err
    field_lines = [l for l in out.splitlines() if l.startswith("  field ")]
    assert len(field_lines) == macro(name, "BENCH_FIELDS")
    note = "; extent of dimension 0 inferred from the accesses: dimsize"
    assert all(l.endswith(note) == inferred for l in field_lines), out


@pytest.mark.parametrize("name, dtype, size, steps, plan", [
    ("poisson2d", "float", 45, 11, ["--bt", "3", "--bs", "32", "--sl", "8"]),
    ("poisson2d", "double", 37, 6, ["--bt", "2", "--bs", "64", "--opt", "none"]),
    ("varheat2d", "float", 41, 9, ["--bt", "4", "--bs", "32", "--sl", "off"]),
    ("varheat2d", "double", 30, 7, ["--bt", "1", "--bs", "32", "--opt", "none"]),
    ("heat3dz", "float", 13, 5, ["--bt", "2", "--bs", "8x8", "--sl", "4"]),
    ("heat3dz", "double", 11, 7, ["--bt", "3", "--bs", "16x8", "--opt", "none"]),
    ("wave2d", "float", 43, 9, ["--bt", "4", "--bs", "32", "--sl", "8"]),
    ("wave2d", "double", 9, 5, ["--bt", "2", "--bs", "24", "--opt", "none"]),
    ("wave2d", "float", 1, 3, ["--bt", "3", "--bs", "16"]),
    ("acoustic3d", "float", 11, 4, ["--bt", "1", "--bs", "16x12", "--sl", "3"]),
    ("acoustic3d", "double", 9, 3, ["--bt", "2", "--bs", "20x20"]),
    ("acoustic3d", "float", 2, 2, ["--bt", "1", "--bs", "9x9", "--opt", "none"]),
    ("dampedwave2d", "float", 37, 11, ["--bt", "5", "--bs", "24", "--sl", "7"]),
    ("dampedwave2d", "double", 12, 6, ["--bt", "3", "--bs", "16", "--opt", "none"]),
    ("dampedwave2d", "float", 1, 4, ["--bt", "2", "--bs", "8"]),
    ("grayscott2d", "float", 30, 6, ["--bt", "2", "--bs", "32"]),
    ("grayscott2d", "double", 9, 5, ["--bt", "3", "--bs", "16", "--opt", "none"]),
    ("fdtd2d", "float", 23, 7, ["--bt", "1", "--bs", "32"]),
    ("fdtd2d", "double", 9, 5, ["--bt", "3", "--bs", "16"]),
    ("fdtd2d", "float", 1, 4, ["--bt", "1", "--bs", "8", "--opt", "none"]),
    ("acousticvp3d", "float", 11, 4, ["--bt", "1", "--bs", "16x12"]),
    ("acousticvp3d", "double", 9, 5, ["--bt", "2", "--bs", "20x20"]),
    ("acousticvp3d", "double", 2, 3, ["--bt", "1", "--bs", "9x9", "--opt", "none"]),
])
def test_verify_on_the_simulator_is_bit_identical(name, dtype, size, steps, plan, capsys,
                                                   in_repo):
    status, out, err = run(capsys, "verify", f"c_inputs/{name}.c", "--dtype", dtype,
                           "--backend", "sim", "--size", size, "--steps", steps, *plan,
                           "--json")
    assert status == 0, err
    result = json.loads(out)
    assert result["passed"] and result["comparison"]["bit_identical"], out
