"""The command line on k-level rotations and leapfrog updates: ``an5d analyze`` (and
``--print-ir program/analysis``) describes their time levels, and every command that plans
a blocked schedule runs them: translate writes rotating host and kernel code, verify passes
on the simulator and the isl proof holds, the model and the tuner rank their plans."""

from __future__ import annotations

import json

import pytest

from cli_support import run

WAVE = "tests/data/forms/wave2d_3level.c"
LEAPFROG = "tests/data/forms/leapfrog3d.c"
#: every test runs from the repository root (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("in_repo")


def test_analyze_names_the_time_subscripts_and_levels(capsys):
    status, out, err = run(capsys, "analyze", WAVE)
    assert status == 0, err
    assert ("time loop: t in [1, T], 3 time buffers: writes (t + 1) % 3, reads level t from "
            "t % 3 and level t-1 from (t + 2) % 3 (at the cell itself)") in out
    assert "(2.0f * p[0, 0]) - p@t-1[0, 0]" in out


def test_analyze_of_a_leapfrog_update(capsys):
    status, out, _ = run(capsys, "analyze", LEAPFROG)
    assert status == 0
    assert ("2 time buffers: writes (t + 1) % 2, reads level t from t % 2 and level t-1 "
            "from (t + 1) % 2 (at the cell itself)") in out


def test_analyze_of_the_double_buffered_form_is_unchanged(capsys):
    status, out, _ = run(capsys, "analyze", "tests/data/forms/vla_param.c")
    assert status == 0 and "reads buffer (t + 0) % 2" in out


def test_analyze_json_gives_the_levels_and_their_offsets(capsys):
    status, out, _ = run(capsys, "analyze", WAVE, "--json")
    assert status == 0
    data = json.loads(out)
    grid = data["arrays"][0]
    assert (grid["time_levels"], grid["history"]) == (3, 2)
    assert grid["reads"] == [
        {"lag": 1, "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]]},
        {"lag": 2, "offsets": [[0, 0]]}]
    assert data["loops"]["time"]["buffers"] == 3


def test_print_ir_shows_the_program_and_its_analysis(capsys):
    status, out, _ = run(capsys, WAVE, "--print-ir", "program", translate=True)
    assert status == 0 and "p[(t+1)%3][i][j] = " in out and "p[(t+2)%3][i][j]" in out
    status, out, _ = run(capsys, WAVE, "--print-ir", "analysis", translate=True)
    assert status == 0 and "3 time buffers" in out


@pytest.mark.parametrize("path", [WAVE, LEAPFROG])
def test_translate_writes_rotating_code(capsys, tmp_path, path):
    out_dir = tmp_path / "out"
    status, out, err = run(capsys, path, "-o", out_dir, "--bt", "3", translate=True)
    assert status == 0, err
    stem = path.split("/")[-1][:-2]
    kernel = (out_dir / f"{stem}_kernel.cu").read_text()
    host = (out_dir / f"{stem}_host.cu").read_text()
    # (a coarsened kernel, the default where cells two to a thread are predicted faster,
    # calls the store's halves, STORE_LEVELS_W / _E)
    assert "STORE_LEVELS" in kernel and "LOAD_LEVELS(" in kernel and "an5d_h" in kernel
    assert "_copy_interior(" in host and "_plan_launches(" in host


@pytest.mark.parametrize("argv", [
    ("verify", WAVE, "--backend", "sim", "-P", "n=12", "-P", "T=5", "--bt", "3"),
    ("verify", LEAPFROG, "--backend", "sim", "-P", "n=9", "-P", "T=4", "-P", "dt2=0.1",
     "--bt", "2", "--bs", "8x8"),
    ("verify", WAVE, "--backend", "isl", "-P", "n=12", "-P", "T=5"),
    ("model", WAVE, "--gpu", "H100", "-P", "n=4096", "-P", "T=100"),
    ("tune", WAVE, "--gpu", "H100", "-P", "n=4096", "-P", "T=100"),
    ("translate", WAVE, "--print-ir", "schedule", "--bt", "2"),
])
def test_every_command_that_plans_runs(capsys, argv):
    status, out, err = run(capsys, *argv)
    assert status == 0, err
    assert out
