"""What the commands print (issue 14 part 3): ``an5d tune --top N`` and its model-only
lines, ``an5d verify``'s size and backend defaults and ``--json``, ``an5d probe --json``
(:mod:`an5dpy.cli.tune`, :mod:`an5dpy.cli.verify`, :mod:`an5dpy.cli.probe`)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from dataclasses import replace
from pathlib import Path

import paths
import pytest

from an5dpy import driver
from an5dpy.cli import main as cli
from cli_support import run
from an5dpy.cli import verify as verify_cli
from an5dpy.errors import UsageError

REPO = Path(paths.REPO)
J2D5PT = str(REPO / "c_inputs" / "j2d5pt.c")
STAR3D1R = str(REPO / "c_inputs" / "star3d1r.c")
FLOAT = ("--dtype", "float")


# --------------------------------------------------------------------------- tune


RANKED = re.compile(r"  +[\d,]+  bt=(\d+) bs=(\S+) sl=(\S+) opt=(nondiag|assoc|none)")


@pytest.fixture(scope="module")
def tuned_j2d5pt():
    """``an5d tune --top 20`` model-only: (exit status, stdout)."""
    out = io.StringIO()  # capsys is function-scoped: capture by hand
    with contextlib.redirect_stdout(out):
        status = cli.main(["tune", J2D5PT, *FLOAT, "--gpu", "H100", "--top", "20",
                           "--no-cache"])
    return status, out.getvalue()


def test_tune_top_prints_that_many_plans_with_their_modes(tuned_j2d5pt):
    status, out = tuned_j2d5pt
    assert status == 0
    ranked = [m for m in map(RANKED.match, out.splitlines()) if m]
    assert len(ranked) == 20
    assert {m.group(4) for m in ranked} == {"nondiag"}


def test_model_only_tune_prints_a_translate_line_that_reproduces_its_best(tuned_j2d5pt,
                                                                         capsys):
    _, out = tuned_j2d5pt
    line = next(ln for ln in out.splitlines() if ln.startswith("best predicted:"))
    command = shlex.split(line.split("reproduce with ", 1)[1])
    assert command[:2] == ["an5d-translate", J2D5PT] and "--dtype" in command
    bt, bs, sl, opt = RANKED.match(next(ln for ln in out.splitlines()
                                        if RANKED.match(ln))).groups()
    assert command[2:] == ["--dtype", "float", "--bt", bt, "--bs", bs]  \
        + ([] if sl == "off" else ["--sl", sl]) + ["--opt", opt]
    status, shown, err = run(capsys, *command[1:], "--print-ir", "plan", translate=True)
    assert (status, err) == (0, "")
    plan = json.loads(shown)
    assert (plan["bt"], plan["bs_text"], plan["sl"] or "off", plan["opt"], plan["dtype"]) == \
        (int(bt), bs, sl if sl == "off" else int(sl), opt, "float")


def test_the_reproduce_line_writes_a_measured_variant_plan(capsys):
    """A plan of the tuner's variants (cells per thread, one barrier per step, computing at
    idle warps) and a budget: the printed command line translates that very plan."""
    import argparse
    from an5dpy.cli.tune import reproduce_command
    program, info = driver.load(STAR3D1R, (("SB_TYPE", "double"),))
    plan = driver.blocking_plan(info, 4, bs=(32, 64), sl=171, coarsen=2, barriers="step",
                                idle="compute")
    args = argparse.Namespace(input=STAR3D1R, defines=[("SB_TYPE", "double")],
                              include_dirs=[], dtype=None)
    command = shlex.split(reproduce_command(args, plan, 64))
    assert " ".join(command[2:]) == ("-DSB_TYPE=double --bt 4 --bs 64x32 --sl 171 --coarsen 2 "
                                     "--barriers step --idle compute --opt nondiag --regs 64")
    status, shown, err = run(capsys, *command[1:], "--print-ir", "plan", translate=True)
    assert (status, err) == (0, "")
    shown = json.loads(shown)
    assert (shown["coarsen"], shown["barriers"], shown["idle"], shown["bs_text"]) == \
        (2, "step", "compute", "64x32")


@pytest.mark.parametrize("naive_gflops", [700.0, 900.0])
def test_the_naive_baseline_line_and_its_command_where_it_is_faster(capsys, tmp_path,
                                                                    naive_gflops):
    """With the naive baseline timed, the tuner prints its rate and the best plan's ratio
    to it; where the baseline is the faster, the command that writes it, which translates
    (--baseline naive with the best plan's options)."""
    import argparse
    from an5dpy.cli.tune import naive_lines
    from an5dpy.perf.tune import Measured, NaiveTiming
    program, info = driver.load(STAR3D1R, (("SB_TYPE", "double"),))
    plan = driver.blocking_plan(info, 2, bs=(32, 32), sl=64)
    best = Measured(plan, 64, 800.0, 1.0, 64, False, 750.0)
    args = argparse.Namespace(input=STAR3D1R, defines=[("SB_TYPE", "double")],
                              include_dirs=[], dtype=None)
    lines = naive_lines(args, NaiveTiming(naive_gflops, 2.0), best).splitlines()
    assert lines[0] == (f"naive baseline (one kernel per time step or sub-step): "
                        f"{naive_gflops:,.0f} GFLOP/s; the best plan runs "
                        f"{800 / naive_gflops:.2f}x of it")
    if naive_gflops < 800:
        assert len(lines) == 1
        return
    command = shlex.split(lines[1].split("write it with ", 1)[1])
    assert command[:4] == ["an5d-translate", STAR3D1R, "--baseline", "naive"]
    status, shown, err = run(capsys, *command[1:], "-o", str(tmp_path / "out"),
                             translate=True)
    assert (status, err) == (0, "")
    host = (tmp_path / "out" / "star3d1r_host.cu").read_text()
    assert "an5d_star3d1r_launch_naive(" in host  # the host code runs the baseline


def test_tune_json_ranking_has_top_entries(capsys):
    status, out, _ = run(capsys, "tune", STAR3D1R, *FLOAT, "--gpu", "H200", "--top", "12",
                         "--json", "--no-cache")
    assert status == 0
    data = json.loads(out)
    assert len(data["ranking"]) == 12 and data["best"] is None
    assert set(data["ranking"][0]) == {"bt", "bs", "sl", "coarsen", "barriers", "idle",
                                       "halo_cells", "opt", "dtype", "predicted"}


# --------------------------------------------------------------------------- verify


@pytest.fixture(scope="module")
def j2d5pt_program():
    return driver.load(J2D5PT, (("SB_TYPE", "float"),))[0]


def test_verify_sizes_default_for_the_harness(j2d5pt_program):
    params = verify_cli.verify_params(j2d5pt_program, 2, {}, None, None)
    assert params == {"compsize": "500", "timestep": "37"}
    assert verify_cli.verify_params(j2d5pt_program, 3, {}, 20, None) == \
        {"compsize": "20", "timestep": "37"}
    # a variable of compsize's definition chain takes its place
    assert verify_cli.verify_params(j2d5pt_program, 2, {"dimsize": "45"}, None, 5) == \
        {"dimsize": "45", "timestep": "5"}
    with pytest.raises(UsageError, match="--size 30 contradicts -P compsize=40"):
        verify_cli.verify_params(j2d5pt_program, 2, {"compsize": "40"}, 30, None)


def test_verify_size_flags_need_the_harness():
    program = driver.load(str(REPO / "tests" / "data" / "forms" / "vla_param.c"))[0]
    assert verify_cli.verify_params(program, 2, {"n": "9"}, None, None) == {"n": "9"}
    with pytest.raises(UsageError, match="--size/--steps set the benchmark harness"):
        verify_cli.verify_params(program, 2, {}, 10, None)


def test_verify_backend_defaults_to_cuda_only_with_a_gpu(monkeypatch):
    from an5dpy.cuda import runtime
    monkeypatch.setattr(runtime, "cupy_available", lambda: (False, "no cupy"))
    assert verify_cli.default_backend() == "sim"
    monkeypatch.setattr(runtime, "cupy_available", lambda: (True, ""))
    assert verify_cli.default_backend() == "cuda"


def test_verify_json_with_a_chain_variable(capsys, monkeypatch):
    from an5dpy.cuda import runtime
    monkeypatch.setattr(runtime, "cupy_available", lambda: (False, "no cupy"))
    status, out, err = run(capsys, "verify", J2D5PT, *FLOAT, "-P", "dimsize=45", "--steps",
                           "5", "--json")
    assert status == 0
    data = json.loads(out)
    # the open options are the model's choice for the sizes verified, announced on stderr
    plan = data["plan"]
    assert err.startswith(f"an5d: plan bt={plan['bt']} ") and err.count("\n") == 1
    assert "at 43^2 x 5 steps" in err
    assert data["passed"] is True and data["backend"] == "sim"
    assert data["params"] == {"timestep": 5, "dimsize": 45, "compsize": 43}
    assert data["plan"]["opt"] == "nondiag" and data["plan"]["dtype"] == "float"
    c = data["comparison"]
    assert c["bit_identical"] is True and c["tolerance"] is None
    assert c["max_abs"] == 0.0 and c["cells"] == 45 * 45
    assert {"device", "build"} <= data.keys()


def test_verify_text_reports_the_default_sizes(capsys, monkeypatch):
    from an5dpy.cuda import runtime
    monkeypatch.setattr(runtime, "cupy_available", lambda: (False, "no cupy"))
    monkeypatch.setattr(verify_cli, "VERIFY_SIZE", {2: 60, 3: 20})  # a fast default
    status, out, err = run(capsys, "verify", J2D5PT, *FLOAT)
    assert status == 0
    assert err.startswith("an5d: plan ") and "at 60^2 x 37 steps" in err  # the model's plan
    assert out.startswith("PASS\n")
    assert "backend sim" in out and "timestep=37, dimsize=62, compsize=60" in out


def test_verify_isl_json(capsys):
    # bt=4 given: 9 steps are two launches of degree 4 and one of degree 1
    status, out, _ = run(capsys, "verify", J2D5PT, *FLOAT, "--backend", "isl", "--size", "40",
                         "--steps", "9", "--bt", "4", "--json")
    assert status == 0
    data = json.loads(out)
    assert data["passed"] is True and data["backend"] == "isl"
    assert [(x["degree"], x["count"], x["holds"]) for x in data["launches"]] == \
        [(4, 2, True), (1, 1, True)]


def test_report_json_writes_non_finite_errors_as_strings():
    assert verify_cli._number(float("inf")) == "inf"
    assert verify_cli._number(float("nan")) == "nan"
    assert verify_cli._number(0.5) == 0.5 and verify_cli._number(None) is None


# --------------------------------------------------------------------------- probe


def test_probe_json_and_summary(capsys, monkeypatch, tmp_path):
    from an5dpy.perf import gpus
    spec = gpus.get_gpu("H200")
    monkeypatch.setattr(gpus, "probe", lambda: spec)
    status, out, _ = run(capsys, "probe", "--json")
    assert status == 0 and json.loads(out) == spec.to_json()
    target = tmp_path / "spec.json"
    status, out, _ = run(capsys, "probe", "-o", target)
    assert status == 0
    assert out.splitlines()[0] == "H200: 132 SMs at 1,980 MHz"
    assert out.splitlines()[-2] == ("  link to a peer: 450 GB/s per direction, nominal (not "
                                    "measured: an5d probe measures it where two GPUs are "
                                    "visible)")
    assert out.splitlines()[-1] == f"wrote {target} (use it as --gpu {target})"
    assert json.loads(target.read_text()) == spec.to_json()
    measured = replace(spec, link_gbs=151.26, link_latency_us=18.04, link_measured=True)
    monkeypatch.setattr(gpus, "probe", lambda: measured)
    status, out, _ = run(capsys, "probe")
    assert out.splitlines()[-1] == ("  link to a peer: 151.3 GB/s per direction, 18.0 us per "
                                    "exchange (NCCL send/recv between devices 0 and 1, "
                                    "measured)")
    monkeypatch.setattr(gpus, "probe", lambda: replace(spec, link_gbs=0.0))
    status, out, _ = run(capsys, "probe")
    assert out.splitlines()[-1].startswith("  link to a peer: not known (not measured")
