"""What a new user meets first (issue 14 part 3): one-line option errors with exit status 2
for every command, ``--version`` on both entry points, the benchmarks' missing ``--dtype``
named in the preprocessor's error, and register budgets that launch bounds can express
(:mod:`an5dpy.cli.main`, :func:`an5dpy.cli.options.register_budget`)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import paths
import pytest

from an5dpy import __version__
from cli_support import run
from an5dpy.cli.options import register_budget

REPO = Path(paths.REPO)
J2D5PT = str(REPO / "c_inputs" / "j2d5pt.c")
#: A positive-integer option of each command.
RANGED = (("translate", "--bt"), ("verify", "--bt"), ("verify", "--steps"), ("model", "--bt"),
          ("bench", "--repeats"), ("tune", "--top"), ("tune", "--measure"))


@pytest.mark.parametrize("command, option", RANGED)
def test_a_range_error_is_one_line(capsys, command, option):
    status, out, err = run(capsys, command, J2D5PT, "--dtype", "float", option, "0")
    assert (status, out) == (2, "")
    assert err == f"an5d {command}: error: {option} 0: must be at least 1\n"


def test_option_errors_of_an5d_translate_and_of_choices_are_one_line(capsys):
    status, _, err = run(capsys, J2D5PT, "--bt", "x", translate=True)
    assert (status, err) == (2, "an5d-translate: error: --bt x: not an integer\n")
    status, _, err = run(capsys, "translate", J2D5PT, "--opt", "fast")
    assert (status, err) == (2, "an5d translate: error: --opt fast: choose one of auto, "
                                "nondiag, assoc, none\n")
    status, _, err = run(capsys, "verify", J2D5PT, "--seed", "x")
    assert (status, err) == (2, "an5d verify: error: --seed x: not a valid int\n")
    status, _, err = run(capsys, "translate")
    assert status == 2 and err.count("\n") == 1 and "required: input" in err
    status, _, err = run(capsys, "frobnicate")
    assert status == 2 and err.count("\n") == 1 and err.startswith("an5d: error: command frob")
    assert "usage:" not in err


@pytest.mark.parametrize("translate", [False, True])
def test_version_on_both_entry_points(capsys, translate):
    status, out, _ = run(capsys, "--version", translate=translate)
    assert (status, out) == (0, f"an5dpy {__version__}\n")


def test_a_benchmark_without_dtype_names_the_option(capsys):
    status, out, err = run(capsys, "analyze", J2D5PT)
    assert (status, out) == (2, "")
    assert re.fullmatch(r"\S*c_inputs/common\.h:\d+:\d+: error: preprocessor: #error "
                        r"\"SB_TYPE is not defined: give an5dpy --dtype float or --dtype "
                        r"double .*\"\n", err), err


@pytest.mark.parametrize("regs", ["7", "31", "256", "1000"])
def test_register_budgets_launch_bounds_cannot_express_are_refused(capsys, regs):
    for command in ("translate", "bench"):
        status, out, err = run(capsys, command, J2D5PT, "--dtype", "float", "--regs", regs)
        assert (status, out) == (2, "")
        assert err == (f"an5d {command}: error: --regs {regs}: must be within 32..255 "
                       "registers per thread (launch bounds cannot hold a thread below "
                       "65536 / 2048 = 32; none has more than 255)\n")


def test_register_budget_range():
    assert [register_budget(t) for t in ("32", "64", "255")] == [32, 64, 255]
    for text in ("31", "256", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            register_budget(text)


def test_accepted_budget_reaches_the_launch_bounds(capsys, tmp_path):
    status, _, err = run(capsys, J2D5PT, "--dtype", "float", "--bs", "256", "--regs", "32",
                         "-o", tmp_path, "-q", translate=True)
    assert (status, err) == (0, "")
    kernel = (tmp_path / "j2d5pt_kernel.cu").read_text()
    assert "__launch_bounds__(256, 8)" in kernel  # 65536 / (32 * 256): 2048 threads per SM


def test_tune_caps_take_the_same_range(capsys):
    status, out, err = run(capsys, "tune", J2D5PT, "--dtype", "float", "--gpu", "H100",
                           "--caps", "none,16")
    assert (status, out) == (2, "")
    assert err.startswith("error: --caps none,16: 16: must be within 32..255")


def test_model_help_describes_the_issue_term(capsys):
    status, out, _ = run(capsys, "model", "--help")
    assert status == 0
    text = " ".join(out.split())
    assert "issue term" in text and "p-norm (p = 3)" in text and "Hopper" in text
