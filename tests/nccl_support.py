"""Test support for the host code of several GPUs (``an5d-translate --gpus N``): where NCCL's
headers and library are, MPI's compile flags (or the stub's), how to start ``mpirun``, and
the nvcc command that builds a translation (tests/cuda/test_host_multi.py compiles it,
tests/gpu/test_host_multi_gpu.py runs it).

NCCL is looked up in $AN5D_NCCL_HOME, then in build/nccl/nvidia/nccl of the checkout (the
nvidia-nccl wheel unpacked there), then in the installed ``nvidia.nccl`` package (the wheel
pip installed), then beside CUDA's headers."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

from paths import C_INPUTS, DATA, REPO


def visible_devices() -> int:
    """CUDA devices cupy sees (0 without cupy or a driver): the several-GPU tests skip
    below two."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - no cupy or no driver: no device
        return 0


def _installed_nccl() -> list[str]:
    try:
        spec = importlib.util.find_spec("nvidia.nccl")
    except (ImportError, ValueError):
        return []
    return list(spec.submodule_search_locations or []) if spec else []


def nccl_home() -> Path | None:
    candidates = [os.environ.get("AN5D_NCCL_HOME"), REPO + "/build/nccl/nvidia/nccl",
                  *_installed_nccl(), "/usr/local/cuda", "/usr"]
    for c in candidates:
        if c and Path(c, "include", "nccl.h").is_file():
            return Path(c)
    return None


def nccl_library(home: Path) -> list[str]:
    """nvcc's flags that link NCCL from ``home`` (with a run-time path to it), or []."""
    for lib in ("lib", "lib64", "lib/x86_64-linux-gnu"):
        for name in ("libnccl.so", "libnccl.so.2"):
            if Path(home, lib, name).exists():
                folder = str(Path(home, lib))
                return ["-L", folder, f"-l:{name}", "-Xlinker", f"-rpath={folder}"]
    return []


def mpi_includes() -> list[str]:
    """A real MPI's include folders (from mpicc), else the stub's (declarations only)."""
    mpicc = shutil.which("mpicc")
    if mpicc:
        flags = subprocess.run([mpicc, "--showme:compile"], capture_output=True, text=True)
        if flags.returncode == 0 and flags.stdout.strip():
            return flags.stdout.split()
    return ["-I", os.path.join(DATA, "mpi_stub")]


def nvcc_command(nvcc: str, name: str, folder: Path, arch: str, mpi: str | None,
                 link: bool, opt: str = "-O1", extra: tuple[str, ...] = ()) -> list[str]:
    """The nvcc command line that builds ``name``'s host and kernel files in ``folder``
    (written by ``an5d-translate --gpus N``) against NCCL, without FMA contraction (so
    that ``-c`` can find the result bit-identical): ``mpi`` None for one process;
    ``"stub"`` compiles with -DAN5D_MPI against MPI's headers or the stub (no link);
    ``"mpicxx"`` builds with -DAN5D_MPI and ``-ccbin mpicxx`` (MPI's compiler wrapper
    adds its headers and libraries). ``link``: the program ``a.out``, else ``h.o`` of
    the host file alone."""
    home = nccl_home()
    args = [nvcc, opt, "-fmad=false", f"-arch={arch}", "-Xcompiler", "-fopenmp",
            "-I", C_INPUTS, "-I", str(home / "include"), *extra]
    if mpi == "stub":
        args += ["-DAN5D_MPI", *mpi_includes()]
    elif mpi == "mpicxx":
        args += ["-ccbin", "mpicxx", "-DAN5D_MPI"]
    host, kernel = folder / f"{name}_host.cu", folder / f"{name}_kernel.cu"
    if link:
        return [*args, str(host), str(kernel), *nccl_library(home), "-o",
                str(folder / "a.out")]
    return [*args, "-c", str(host), "-o", str(folder / "h.o")]


def mpirun_flavour(mpirun: str) -> str | None:
    """``"openmpi"`` or ``"mpich"`` from ``mpirun --version`` (None: neither)."""
    proc = subprocess.run([mpirun, "--version"], capture_output=True, text=True)
    text = (proc.stdout + proc.stderr).lower()
    if "open mpi" in text or "open-mpi" in text or "openrte" in text:
        return "openmpi"
    if "hydra" in text or "mpich" in text or "intel(r) mpi" in text:
        return "mpich"
    return None


def mpirun_command(mpirun: str, flavour: str, ranks: int) -> list[str]:
    """``mpirun -n RANKS`` with NVLink multicast off in every rank (``NCCL_NVLS_ENABLE=0``;
    the host code sets it too, unless the environment does): Open MPI exports it with
    ``-x`` (and runs as root only with ``--allow-run-as-root``), MPICH with ``-genv``."""
    if flavour == "openmpi":
        return [mpirun, "--allow-run-as-root", "--oversubscribe", "-x", "NCCL_NVLS_ENABLE=0",
                "-n", str(ranks)]
    return [mpirun, "-genv", "NCCL_NVLS_ENABLE", "0", "-n", str(ranks)]


#: A rank's output, each into its own file (the ranks' lines would interleave): the rank
#: from Open MPI's or MPICH's environment.
RANK_OUTPUT = 'exec "$0" "$@" > "rank${OMPI_COMM_WORLD_RANK:-$PMI_RANK}.out" 2>&1'
