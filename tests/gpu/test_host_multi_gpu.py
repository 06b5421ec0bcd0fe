"""The generated host code of several GPUs run on two GPUs (pytest -m gpu): ``an5d-translate
--gpus 2`` of a benchmark, built with NCCL and without FMA contraction, run with the
harness' ``-c``, must find the result bit-identical to the C program's loop, in one
process (``ncclCommInitAll``; also with ``AN5D_GPUS=1``) and built with ``-DAN5D_MPI``
(``nvcc -ccbin mpicxx``) in one process per GPU under ``mpirun -n 2``, where rank 0 holds
the gathered result. Skipped with the reason without two GPUs, nvcc or NCCL, and the MPI
test without mpirun or mpicxx. NVLink multicast stays off (``NCCL_NVLS_ENABLE=0``) in
everything started here."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from an5dpy.cuda.runtime import nvcc_path
from an5dpy.driver import write_outputs

from cuda_support import bench
from nccl_support import (RANK_OUTPUT, mpirun_command, mpirun_flavour, nccl_home,
                          nccl_library, nvcc_command, visible_devices)

pytestmark = pytest.mark.gpu

#: (benchmark, dtype, plan, harness arguments): 2D and 3D, float and double; the step
#: counts leave a remainder degree and an odd number of launches.
CASES = [
    ("j2d5pt", "float", dict(bt=4, bs="128", sl="128"), ["-s", "1001", "-t", "37"]),
    ("star3d1r", "double", dict(bt=2, bs="32x16", sl="off"), ["-s", "129", "-t", "23"]),
    # computing threads that load the halo: a slab's boundary buffer is its source
    ("star3d2r", "float", dict(bt=1, bs="68x12", sl="9", coarsen=2, halo="loaded"),
     ["-s", "67", "-t", "13"]),
]
IDS = [f"{name}-{dtype}" for name, dtype, _, _ in CASES]


@pytest.fixture(autouse=True)
def two_devices_and_nccl():
    if visible_devices() < 2:
        pytest.skip(f"several-GPU test: {visible_devices()} device(s) visible, 2 needed")
    if nvcc_path() is None:
        pytest.skip("needs nvcc")
    home = nccl_home()
    if home is None or not nccl_library(home):
        pytest.skip("needs NCCL's headers and library (AN5D_NCCL_HOME, the nvidia-nccl "
                    "wheel installed or unpacked in build/nccl)")


def environment(**extra: str) -> dict[str, str]:
    return {**os.environ, "NCCL_NVLS_ENABLE": "0", **extra}


def device_arch() -> str:
    from an5dpy.cuda.runtime import device_arch as arch
    return arch()


def build(folder: Path, name: str, dtype: str, plan: dict, mpi: str | None) -> Path:
    """Translate ``name`` for 2 GPUs into ``folder`` and build ``a.out`` (``mpi``: as
    :func:`nccl_support.nvcc_command` takes it)."""
    t = bench(name, dtype, gpus=2, **plan)
    write_outputs(t.outputs, folder)
    args = nvcc_command(nvcc_path(), name, folder, device_arch(), mpi, link=True, opt="-O3")
    proc = subprocess.run(args, capture_output=True, text=True, env=environment())
    assert proc.returncode == 0, " ".join(args) + "\n" + proc.stdout + proc.stderr
    return folder / "a.out"


def verdict(out: str) -> None:
    assert "Bit-identical: yes" in out and "Max error: 0 (relative 0)" in out, out


@pytest.mark.parametrize("name, dtype, plan, run_args", CASES, ids=IDS)
def test_host_code_on_two_gpus_in_one_process(tmp_path, name, dtype, plan, run_args):
    exe = build(tmp_path, name, dtype, plan, None)
    for gpus in ("2", "1"):
        proc = subprocess.run([str(exe), *run_args, "-c", "-n", "1"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=180,
                              env=environment(AN5D_GPUS=gpus))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        verdict(proc.stdout)


def mpi_tools() -> tuple[str, str]:
    """mpirun and its flavour; skips without mpirun, mpicxx or a known flavour."""
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("MPI host code: no mpirun")
    if shutil.which("mpicxx") is None:
        pytest.skip("MPI host code: no mpicxx")
    flavour = mpirun_flavour(mpirun)
    if flavour is None:
        pytest.skip(f"MPI host code: '{mpirun} --version' is neither Open MPI nor MPICH")
    return mpirun, flavour


@pytest.mark.parametrize("name, dtype, plan, run_args", CASES, ids=IDS)
def test_mpi_host_code_one_process_per_gpu(tmp_path, name, dtype, plan, run_args):
    """nvcc -ccbin mpicxx -DAN5D_MPI; mpirun -n 2: rank 0 gathers every slab's planes and
    its -c compares them all (the other rank holds only its own)."""
    mpirun, flavour = mpi_tools()
    exe = build(tmp_path, name, dtype, plan, "mpicxx")
    command = [*mpirun_command(mpirun, flavour, 2), "sh", "-c", RANK_OUTPUT, str(exe),
               *run_args, "-c", "-n", "1"]
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True,
                          timeout=240, env=environment())
    outputs = {p.name: p.read_text() for p in tmp_path.glob("rank*.out")}
    assert proc.returncode == 0, (" ".join(command), proc.stdout, proc.stderr, outputs)
    assert set(outputs) == {"rank0.out", "rank1.out"}, (proc.stdout, proc.stderr, outputs)
    verdict(outputs["rank0.out"])
