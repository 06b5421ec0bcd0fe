"""The plan options of translate, verify, bench and model: absent or ``auto`` means the
model's choice (printed on stderr in one line, not with ``-q``), ``--gpu`` the target."""

from __future__ import annotations

import re
from pathlib import Path

import paths
import pytest

from an5dpy.cli import main as cli
from an5dpy.perf import choice as choice_module

REPO = Path(paths.REPO)
J2D5PT = REPO / "c_inputs" / "j2d5pt.c"
FLOAT = ("--dtype", "float")
PLAN_LINE = re.compile(r"^an5d: plan bt=\d+ bs=\d+(x\d+)? sl=(\d+|off)( coarsen=\d+)?"
                       r"( barriers=\w+)? opt=\w+ regs=(\d+|none) "
                       r"\(model's best for (H100|H200)[^)]*\) at .* steps.*GFLOP/s predicted\)$",
                       re.M)


@pytest.fixture(autouse=True)
def _repo_root_and_no_gpu(monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(choice_module, "local_device_name", lambda: None)


def run(capsys, *argv):
    try:
        status = cli.main([str(a) for a in argv])
    except SystemExit as e:
        status = e.code
    out, err = capsys.readouterr()
    return status, out, err


def test_translate_prints_the_chosen_plan_and_writes_it_in_the_headers(capsys, tmp_path):
    status, out, err = run(capsys, "translate", J2D5PT, *FLOAT, "-o", tmp_path)
    assert status == 0, err
    assert len(PLAN_LINE.findall(err)) == 1 and "H100 (no GPU visible)" in err
    assert len(out.splitlines()) == 3  # the written files
    summary = err.split("an5d: plan ", 1)[1].split(" (", 1)[0]
    for name in ("j2d5pt_kernel.cu", "j2d5pt_kernel.hu", "j2d5pt_host.cu"):
        assert f"Plan {summary}: the performance model's best for H100" in \
            (tmp_path / name).read_text()


def test_quiet_prints_nothing(capsys, tmp_path):
    status, out, err = run(capsys, "translate", J2D5PT, *FLOAT, "-o", tmp_path, "-q")
    assert (status, out, err) == (0, "", "")
    assert "the performance model's best" in (tmp_path / "j2d5pt_kernel.cu").read_text()


def test_a_fully_given_plan_prints_no_line_and_no_note(capsys, tmp_path):
    status, _, err = run(capsys, "translate", J2D5PT, *FLOAT, "-o", tmp_path, "--bt", 4,
                         "--bs", 128, "--sl", 128)
    assert status == 0 and err == ""
    for path in tmp_path.iterdir():
        assert "performance model" not in path.read_text()
    # no register budget: launch bounds name the block size alone
    assert not re.search(r"__launch_bounds__\(\d+, \d+\)",
                         (tmp_path / "j2d5pt_kernel.cu").read_text())


@pytest.mark.parametrize("flag", ["--bt", "--bs", "--sl", "--opt", "--regs"])
def test_auto_is_accepted_by_every_plan_option(capsys, tmp_path, flag):
    given = {"--bt": 4, "--bs": 128, "--sl": 128, "--opt": "nondiag", "--regs": "none"}
    given[flag] = "auto"
    argv = [a for k, v in given.items() for a in (k, v)]
    status, _, err = run(capsys, "translate", J2D5PT, *FLOAT, "-o", tmp_path, *argv)
    assert status == 0, err
    if flag == "--opt":  # the analysis' default mode: the plan is the user's, as given
        assert err == "" and "opt=nondiag" in (tmp_path / "j2d5pt_kernel.cu").read_text()
        return
    assert PLAN_LINE.search(err), err
    held = {k: v for k, v in given.items() if v != "auto"}
    for k, v in held.items():  # the others stay as given
        assert f"{k[2:]}={v}" in err.split(" (")[0]


def test_off_none_and_gpu(capsys, tmp_path):
    status, _, err = run(capsys, "translate", J2D5PT, *FLOAT, "-o", tmp_path, "--sl", "off",
                         "--regs", "none", "--gpu", "H200")
    assert status == 0, err
    assert "sl=off" in err and "regs=none" in err and "best for H200 at" in err


def test_sizes_reach_the_choice(capsys, tmp_path):
    status, _, err = run(capsys, "translate", J2D5PT, *FLOAT, "-o", tmp_path,
                         "-P", "compsize=1000", "-P", "timestep=20")
    assert status == 0 and "at 1000^2 x 20 steps" in err
    status, _, err = run(capsys, "translate", J2D5PT, *FLOAT, "-o", tmp_path, "--size", 2000,
                         "--steps", 30)
    assert status == 0 and "at 2000^2 x 30 steps" in err


@pytest.mark.parametrize("argv", [("--bt", "0"), ("--sl", "x"), ("--regs", "off"),
                                  ("--gpu", "Z9000")])
def test_bad_plan_options_exit_2(capsys, tmp_path, argv):
    status, _, err = run(capsys, "translate", J2D5PT, *FLOAT, "-o", tmp_path, *argv)
    assert status == 2 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_verify_chooses_for_its_sizes_and_says_so(capsys):
    status, out, err = run(capsys, "verify", J2D5PT, *FLOAT, "--backend", "sim",
                           "-P", "compsize=40", "-P", "timestep=3")
    assert status == 0 and out.startswith("PASS"), out + err
    assert PLAN_LINE.search(err) and "at 40^2 x 3 steps" in err
    summary = err.split("an5d: plan ", 1)[1].split(" regs", 1)[0]
    assert f"config: {summary} dtype=float" in out
    status, _, err = run(capsys, "verify", J2D5PT, *FLOAT, "--backend", "isl", "-q",
                         "-P", "compsize=40", "-P", "timestep=3")
    assert status == 0 and err == ""


def test_model_defaults_to_the_models_choice(capsys):
    status, out, err = run(capsys, "model", J2D5PT, *FLOAT, "--json")
    assert status == 0, err
    assert "best for H100" in err
    import json
    data = json.loads(out)
    predicted = float(err.rsplit("; ", 1)[1].split(" GFLOP/s")[0].replace(",", ""))
    assert data["gflops"] == pytest.approx(predicted, rel=1e-3)
    assert data["gpu"] == "H100"
    # the plan of the issue: ten times slower than the choice, by the model's own numbers
    status, out, _ = run(capsys, "model", J2D5PT, *FLOAT, "--json", "--gpu", "H100",
                         "--bt", 4, "--bs", 256, "--sl", "off", "--opt", "nondiag")
    assert status == 0 and json.loads(out)["gflops"] * 10 < data["gflops"]
