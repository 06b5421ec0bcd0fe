"""The command line on a program with read-only arrays: ``an5d analyze`` describes every
array, ``an5d verify --backend sim`` runs it, ``an5d-translate`` writes kernels that load
them, ``an5d model`` counts their traffic, and ``verify --backend cuda`` goes as far as
looking for a GPU (tests/gpu/test_read_only_gpu.py runs it on one)."""

from __future__ import annotations

import json

import pytest

from cli_support import run

VARCOEF = "tests/data/forms/varcoef_heat.c"
POISSON = "tests/data/forms/poisson_rhs.c"


#: every test runs from the repository root (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("in_repo")


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


def test_translate_writes_kernels_that_load_the_read_only_array(capsys, tmp_path):
    out_dir = tmp_path / "out"
    status, _, err = run(capsys, VARCOEF, "-o", out_dir, "--bt", "2", "--bs", "32",
                         "--sl", "off", translate=True)
    assert status == 0, err
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "varcoef_heat_host.cu", "varcoef_heat_kernel.cu", "varcoef_heat_kernel.hu"]
    kernel = (out_dir / "varcoef_heat_kernel.cu").read_text()
    assert "const float *__restrict__ an5d_coef_k" in kernel and "__ldg(&an5d_coef_k[" in kernel
    host = (out_dir / "varcoef_heat_host.cu").read_text()
    assert "cudaMemcpy(an5d_coef_k, (const void *)(k)" in host


def test_model_counts_the_read_only_traffic(capsys):
    status, out, err = run(capsys, "model", VARCOEF, "-P", "n=1026", "-P", "T=10",
                           "-P", "dt=0.1", "--bt", "2", "--bs", "128", "--sl", "128")
    assert status == 0, err
    assert "(read-only arrays: " in out and " through L1 in the shared bytes)" in out


def test_verify_cuda_without_a_gpu_says_so(capsys):
    from an5dpy.cuda.runtime import cupy_available
    if cupy_available()[0]:
        pytest.skip("a GPU is here: tests/gpu runs the CUDA backend")
    status, _, err = run(capsys, "verify", VARCOEF, "--backend", "cuda", "-P", "n=12",
                         "-P", "T=2", "-P", "dt=0.1", "--bt", "2", "--bs", "8", "--sl", "off")
    assert status == 2
    assert "--backend cuda needs a CUDA GPU and cupy" in err and "read-only" not in err


def test_verify_sim_passes_bit_identically(capsys):
    status, out, err = run(capsys, "verify", POISSON, "--backend", "sim", "-P", "n=17",
                           "-P", "T=3", "-P", "h2=0.5", "--bt", "2", "--bs", "8", "--sl", "5")
    assert status == 0, err
    assert out.splitlines()[0] == "PASS" and "bit-identical: yes" in out
