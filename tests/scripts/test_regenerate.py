"""scripts/regenerate.py: its help, its errors, and where it writes."""

from __future__ import annotations

import os

import pytest
from script_support import load_script


@pytest.fixture(scope="module")
def regenerate():
    return load_script("regenerate")


def test_help_has_the_whole_description(regenerate, capsys):
    with pytest.raises(SystemExit) as e:
        regenerate.main(["--help"])
    assert e.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert ("Regenerate every benchmark's CUDA in batch, in parallel, with progress; optionally "
            "compile each with nvcc and fail on any error or warning.") in out
    for option in ("--out DIR", "--config", "--compile", "--stencils", "--jobs", "--arch"):
        assert option in out


def test_an_unknown_stencil_is_one_line_with_the_list(regenerate, capsys):
    assert regenerate.main(["--stencils", "j2d5pt,nosuch"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("regenerate.py: error: unknown stencil nosuch (c_inputs/ "
                                   "has: acoustic3d, acousticvp3d, box2d1r,")
    assert "j2d5pt" in captured.err and captured.err.count("\n") == 1


def test_a_missing_table_is_one_line(regenerate, capsys, tmp_path):
    table = tmp_path / "none.csv"
    assert regenerate.main(["--config", "tuned", "--table", str(table)]) == 2
    assert capsys.readouterr().err == f"regenerate.py: error: --table {table} does not exist\n"


def test_output_goes_under_the_working_directory(regenerate, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert regenerate.main(["--stencils", "j2d5pt", "--jobs", "2"]) == 0
    for dtype in ("float", "double"):
        target = tmp_path / "out" / "generated" / f"j2d5pt-{dtype}"
        assert sorted(os.listdir(target)) == ["common.h", "j2d5pt.c", "j2d5pt_host.cu",
                                              "j2d5pt_kernel.cu", "j2d5pt_kernel.hu"]
    assert "2 programs in out/generated, 0 with errors or warnings" in capsys.readouterr().out
