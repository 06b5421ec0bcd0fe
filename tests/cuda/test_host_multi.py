"""The host code of several GPUs (``an5d-translate --gpus N``, templates/host_multi.cu.j2):
what it prints (NCCL communicators, NVLink multicast off before them, the AN5D_GPUS
override, the MPI path, the halo of blocking/slabs.py), what it refuses, that the
single-GPU host code does not change, and that nvcc compiles it for 2D and 3D, float and
double, with a read-only array, with and without -DAN5D_MPI, and links it against NCCL.

NCCL's headers and library are looked up as tests/nccl_support.py says; without them the
compile tests are skipped with the reason. Without an MPI header (no mpicc) the -DAN5D_MPI
build is compiled against tests/data/mpi_stub/mpi.h, which declares the MPI calls the host
code makes (a syntax and type check, not a link)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from an5dpy.blocking.slabs import slab_halo
from an5dpy.cuda.runtime import nvcc_path
from an5dpy.driver import write_outputs
from an5dpy.errors import OptionError, UsageError

from cuda_support import bench
from nccl_support import nccl_home, nccl_library, nvcc_command


needs_nccl = pytest.mark.skipif(nvcc_path() is None or nccl_home() is None,
                                reason="needs nvcc and NCCL's headers (AN5D_NCCL_HOME, or the "
                                       "nvidia-nccl wheel unpacked in build/nccl)")


def test_the_host_region_drives_several_gpus():
    t = bench("j2d5pt", "float", bt=3, bs="64", sl="64", gpus=2)
    host = t.outputs["j2d5pt_host.cu"]
    halo = slab_halo(t.info, t.plan)
    assert "#include <nccl.h>" in host and "#ifdef AN5D_MPI\n#include <mpi.h>" in host
    nvls = host.index('setenv("NCCL_NVLS_ENABLE", "0", 0)')
    assert nvls < host.index("ncclCommInitAll(") and nvls < host.index("ncclCommInitRank(")
    assert 'getenv("AN5D_GPUS")' in host and "int an5d_gpus = 2," in host
    assert "ncclGetUniqueId(&an5d_id)" in host and "MPI_Bcast(&an5d_id" in host
    # MPI started by the region is finalized at exit (mpirun fails a rank that is not)
    init = host.index("MPI_Init(NULL, NULL);")
    assert host.index("atexit(an5d_mpi_finalize);") > init
    assert "if (!an5d_done) MPI_Finalize();" in host
    assert f"an5d_s->a - {halo.below} : 0" in host and f"an5d_s->b + {halo.above} :" in host
    assert f"halo of {halo.widest} planes" in host
    assert host.count("ncclSend(") == 2 and host.count("ncclRecv(") == 2
    assert "ncclFloat" in host and "ncclDouble" not in host
    single = bench("j2d5pt", "float", bt=3, bs="64", sl="64")
    assert single.outputs["j2d5pt_kernel.cu"] == t.outputs["j2d5pt_kernel.cu"]
    assert "nccl" not in single.outputs["j2d5pt_host.cu"]


@pytest.mark.parametrize("name, message", [
    ("wave2d", "rotating time levels"), ("grayscott2d", "several statements per time step")])
def test_forms_the_host_code_runs_on_one_gpu_only_are_refused(name, message):
    with pytest.raises(OptionError, match=message) as e:
        bench(name, "float", bt=2, gpus=2)
    assert "--gpus 2" in e.value.for_command_line() and "devices=" in str(e.value)


def test_the_baseline_runs_on_one_gpu():
    with pytest.raises(UsageError, match="naive baseline runs on one GPU"):
        bench("j2d5pt", "float", bt=2, baseline=True, gpus=2)


def build(name: str, dtype: str, out: Path, mpi: bool, link: bool, **plan) -> tuple[int, str]:
    t = bench(name, dtype, gpus=2, **plan)
    write_outputs(t.outputs, out)
    args = nvcc_command(nvcc_path(), name, out, "sm_90", "stub" if mpi else None, link)
    proc = subprocess.run(args, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


@needs_nccl
@pytest.mark.parametrize("mpi", [False, True], ids=["nccl", "mpi"])
@pytest.mark.parametrize("name, dtype, plan", [
    ("j2d5pt", "float", dict(bt=3, bs="64", sl="64")),
    ("j2d5pt", "double", dict(bt=2, bs="64", sl="off")),
    ("star3d1r", "float", dict(bt=2, bs="32x16", sl="off")),
    ("box3d2r", "double", dict(bt=1, bs="32x16", sl="8")),
    ("poisson2d", "double", dict(bt=3, bs="64", sl="64")),
    ("heat3dz", "float", dict(bt=2, bs="32x16", sl="off")),
])
def test_nvcc_compiles_the_host_code_of_several_gpus(tmp_path, name, dtype, plan, mpi):
    code, log = build(name, dtype, tmp_path, mpi, link=False, **plan)
    assert code == 0 and "warning" not in log.lower(), log


@needs_nccl
def test_the_host_code_links_against_nccl(tmp_path):
    if not nccl_library(nccl_home()):
        pytest.skip("no NCCL library beside the headers")
    code, log = build("j2d5pt", "float", tmp_path, False, link=True, bt=3, bs="64", sl="64")
    assert code == 0, log
    assert (tmp_path / "a.out").is_file()
