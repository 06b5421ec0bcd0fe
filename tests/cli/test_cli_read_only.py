"""The command line on a program with read-only arrays: ``an5d analyze`` describes every
array, ``an5d verify --backend sim`` runs it, and the CUDA commands refuse it cleanly (exit
2, ``FILE:LINE:COL``, nothing written) until the CUDA generator handles such arrays."""

from __future__ import annotations

import json

import pytest

from cli_support import run

VARCOEF = "tests/data/forms/varcoef_heat.c"
POISSON = "tests/data/forms/poisson_rhs.c"
REFUSAL = ("read-only array 'k': the CUDA generator does not handle read-only arrays yet "
           "(an5d analyze and an5d verify --backend sim do)")


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch):
    from paths import REPO
    monkeypatch.chdir(REPO)


def test_analyze_json_describes_every_array(capsys):
    status, out, err = run(capsys, "analyze", VARCOEF, "--json")
    assert status == 0, err
    arrays = json.loads(out)["arrays"]
    assert arrays == [
        {"name": "A", "role": "updated", "elem_type": "float", "rank": 2, "time_levels": 2,
         "history": 1, "extents": ["n", "n"],
         "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]],
         "reads": [{"lag": 1, "offsets": [[-1, 0], [0, -1], [0, 0], [0, 1], [1, 0]]}]},
        {"name": "k", "role": "read_only", "elem_type": "float", "rank": 2, "time_levels": 0,
         "extents": ["n", "n"],
         "offsets": [[{"dim": 0, "offset": -1}, {"dim": 1, "offset": 0}],
                     [{"dim": 0, "offset": 0}, {"dim": 1, "offset": -1}],
                     [{"dim": 0, "offset": 0}, {"dim": 1, "offset": 0}]]},
    ]


def test_analyze_text_lists_the_read_only_arrays(capsys):
    status, out, _ = run(capsys, "analyze", POISSON)
    assert status == 0
    assert "read-only array f: double [n][n], read at f[i][j]" in out
    assert "(h2 * f[i][j])" in out


def test_translate_refuses_read_only_arrays_and_writes_nothing(capsys, tmp_path):
    out_dir = tmp_path / "out"
    status, out, err = run(capsys, VARCOEF, "-o", out_dir, translate=True)
    assert status == 2 and out == ""
    assert err.strip() == f"{VARCOEF}:15:21: error: {REFUSAL}"
    assert not out_dir.exists()


def test_verify_cuda_refuses_before_looking_for_a_gpu(capsys):
    status, _, err = run(capsys, "verify", VARCOEF, "--backend", "cuda", "-P", "n=12",
                         "-P", "T=2", "-P", "dt=0.1", "--bt", "2", "--bs", "8", "--sl", "off")
    assert status == 2
    assert f"{VARCOEF}:15:21: error: {REFUSAL}" in err


def test_verify_sim_passes_bit_identically(capsys):
    status, out, err = run(capsys, "verify", POISSON, "--backend", "sim", "-P", "n=17",
                           "-P", "T=3", "-P", "h2=0.5", "--bt", "2", "--bs", "8", "--sl", "5")
    assert status == 0, err
    assert out.splitlines()[0] == "PASS" and "bit-identical: yes" in out
