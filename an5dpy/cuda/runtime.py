"""Build generated CUDA with nvcc and run it from Python with cupy.

* :class:`BuildOptions`: the performance build (``-O3 --use_fast_math``, as the paper) or
  the exact build (no fast math, ``-fmad=false``: IEEE-exact + - * / and sqrt, so results
  are bit-identical to the gcc oracle), optional ``-maxrregcount``. The generated kernels
  carry ``__launch_bounds__``, for which nvcc ignores ``-maxrregcount``: a register budget
  for them is a codegen option (``regs`` of :func:`build_kernels`, ``--regs``).
* :func:`compile_cubin` compiles ``x_kernel.cu`` to a cubin and returns ptxas's
  per-kernel report (registers, spills, shared memory); failures raise
  :class:`CudaCompileError` with the whole log.
* :func:`build_kernels` generates a plan's kernels through the driver
  (:func:`an5dpy.driver.generate`) and compiles them; :func:`cuda_runner` loads them.
* :class:`CupyRunner` launches the kernels on cupy arrays with the same launch plan and
  block counts as the generated host code (:mod:`an5dpy.blocking.plan`), the read-only
  arrays on the device beside the grid (:func:`launch_args`: the arguments in the order
  of the render model's launch signature).
* :func:`cached_runner` builds generated kernels once: loaded modules are kept in memory
  and cubins on disk (the Python API, :mod:`an5dpy.api`, keys them).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from an5dpy.cuda.render_model import NAIVE_BLOCK, PLANE_CELLS_MAX, Signature
from an5dpy.cuda.kernels import Kernels, generate
from an5dpy.check.simulate import field_pool, pool_fields
from an5dpy.errors import CudaCompileError, InternalError, UsageError
from an5dpy.ir import StencilInfo, array_shape
from an5dpy.blocking.plan import (STATIC_SMEM_LIMIT, BlockingPlan, DimExtent, Launch,
                                  LaunchGeometry, LevelLaunch, grid_extents, launch_plan,
                                  level_run)


@dataclass(frozen=True)
class BuildOptions:
    arch: str = "sm_90"
    exact: bool = False  # no fast math, no FMA contraction
    maxrregcount: int | None = None
    opt_level: str = "-O3"
    extra: tuple[str, ...] = ()

    def flags(self) -> list[str]:
        flags = [self.opt_level, f"-arch={self.arch}"]
        if self.exact:
            flags += ["-fmad=false", "-prec-div=true", "-prec-sqrt=true", "-ftz=false"]
        else:
            flags.append("--use_fast_math")
        if self.maxrregcount:
            flags.append(f"-maxrregcount={self.maxrregcount}")
        return flags + list(self.extra)

    def key(self) -> str:
        return " ".join(self.flags())


def nvcc_path() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and Path(home, "bin", "nvcc").exists():
            return str(Path(home, "bin", "nvcc"))
    return None


@dataclass(frozen=True)
class KernelResources:
    """ptxas's report for one kernel."""

    name: str
    registers: int
    spill_stores: int = 0
    spill_loads: int = 0
    stack: int = 0
    smem: int = 0

    @property
    def spills(self) -> bool:
        return self.spill_stores > 0 or self.spill_loads > 0


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPS = re.compile(r"Function properties for ([\w$]+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def parse_ptxas_report(log: str) -> tuple[KernelResources, ...]:
    """Per-kernel registers, spills and shared memory from ``nvcc -Xptxas -v`` output."""
    current: dict[str, dict] = {}
    order: list[str] = []
    name = None
    for line in log.splitlines():
        if (m := _ENTRY.search(line)) or (m := _PROPS.search(line)):
            name = m.group(1)
            if name not in current:
                current[name] = {}
                order.append(name)
        elif name and (m := _FRAME.search(line)):
            current[name].update(stack=int(m.group(1)), spill_stores=int(m.group(2)),
                                 spill_loads=int(m.group(3)))
        elif name and (m := _USED.search(line)):
            current[name].update(registers=int(m.group(1)), smem=int(m.group(2) or 0))
    return tuple(KernelResources(n, **current[n]) for n in order if "registers" in current[n])


def run_nvcc(args: Sequence[str], cwd: str | None = None) -> subprocess.CompletedProcess:
    nvcc = nvcc_path()
    if nvcc is None:
        raise UsageError("nvcc not found (put it on PATH or set CUDA_HOME)")
    cmd = (nvcc, *args)
    # nvcc runs cicc and ptxas as its own children, which a kill of nvcc alone would leave
    # running (minutes of ptxas for a large kernel): nvcc gets its own process group, and
    # whatever interrupts the wait here (Ctrl-C, a caller's time limit) ends the group
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          cwd=cwd, start_new_session=True) as child:
        try:
            stdout, stderr = child.communicate()
        except BaseException:
            with contextlib.suppress(ProcessLookupError):  # the group may be gone already
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            raise
    proc = subprocess.CompletedProcess(cmd, child.returncode, stdout, stderr)
    if proc.returncode != 0:
        raise CudaCompileError(f"nvcc failed (exit {proc.returncode}): {' '.join(cmd)}",
                               proc.stdout + proc.stderr, cmd)
    return proc


@dataclass(frozen=True)
class Cubin:
    path: str
    resources: tuple[KernelResources, ...]
    log: str

    def kernel(self, suffix: str) -> KernelResources | None:
        """ptxas' report of the kernel whose name ends with ``suffix`` (``_kernel_d4``)."""
        return next((r for r in self.resources if r.name.endswith(suffix)), None)

    def kernels(self, marker: str) -> tuple[KernelResources, ...]:
        """The reports of every kernel whose name contains ``marker``."""
        return tuple(r for r in self.resources if marker in r.name)


def compile_cubin(kernel_cu: str | Path, options: BuildOptions = BuildOptions(),
                  out_dir: str | Path | None = None) -> Cubin:
    """Compile a generated ``x_kernel.cu`` (its header beside it) to a cubin."""
    kernel_cu = Path(kernel_cu)
    out_dir = Path(out_dir or kernel_cu.parent)
    digest = hashlib.sha256((kernel_cu.read_text() + options.key()).encode()).hexdigest()[:16]
    cubin = out_dir / f"{kernel_cu.stem}.{digest}.cubin"
    proc = run_nvcc(["-cubin", *options.flags(), "-Xptxas", "-v", "-o", str(cubin),
                     str(kernel_cu)])
    log = proc.stdout + proc.stderr
    return Cubin(str(cubin), parse_ptxas_report(log), log)


# --------------------------------------------------------------------------- cupy


def cupy_available() -> tuple[bool, str]:
    """Whether cupy can run kernels here, and if not why (for pytest skip reasons)."""
    try:
        import cupy
    except ImportError as e:
        return False, f"cupy is not installed ({e})"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - any driver error means "no GPU here"
        return False, f"no usable CUDA device ({e})"
    if n < 1:
        return False, "no CUDA device"
    return True, ""


def build_workers() -> int:
    """nvcc processes to run at once: the CPUs this process may run on (its affinity, which
    ``taskset`` or a scheduler's CPU share narrow; os.cpu_count() counts the whole host)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity on this platform
        return max(1, os.cpu_count() or 2)


def device_name() -> str:
    import cupy
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def device_count() -> int:
    """GPUs this process sees (``CUDA_VISIBLE_DEVICES`` narrows them)."""
    import cupy
    return cupy.cuda.runtime.getDeviceCount()


def device_arch() -> str:
    """nvcc ``-arch`` value of the present GPU, e.g. ``sm_90``."""
    import cupy
    return f"sm_{cupy.cuda.Device().compute_capability}"


_C_SCALARS = {"float": np.float32, "double": np.float64, "int": np.int32, "long": np.int64}


def check_plane_cells(dims: Sequence[DimExtent]) -> None:
    """Refuse grids whose planes the kernels cannot offset, as the generated launch does."""
    cells = math.prod(d.size for d in dims[1:])
    if cells > PLANE_CELLS_MAX:
        raise UsageError(f"a plane of the grid has {cells} cells; the kernels offset planes "
                         f"with 32-bit products (at most {PLANE_CELLS_MAX} cells)")


def coefficient_shape(info: StencilInfo, name: str, env: Mapping[str, int | float]
                      ) -> tuple[int, ...]:
    """The shape of read-only array ``name`` for these parameter values."""
    return array_shape(info.coefficient(name).extents, env)


def check_read_only(info: StencilInfo, env: Mapping[str, int | float], read_only: Sequence,
                    backend: str) -> None:
    """Refuse read-only arrays (``info.coefficients`` order) the kernels (``backend``
    ``"cupy"``, on the current device) or the CPU paths (``"numpy"``) cannot read as
    declared: of the element type, C-contiguous, of the declared shape. The one home of
    this check: the Python API and :class:`CupyRunner` both call it."""
    expected = info.coefficients
    if len(read_only) != len(expected):
        names = ", ".join(f"'{c.name}'" for c in expected) or "none"
        raise UsageError(f"{len(read_only)} read-only arrays given; the program reads "
                         f"{len(expected)} ({names})")
    for a, c in zip(read_only, expected):
        want = np.dtype(_C_SCALARS[c.elem_type])
        shape = coefficient_shape(info, c.name, env)
        if backend == "cupy":
            import cupy
            kind, where = "cupy", " on the current device"
            ok = isinstance(a, cupy.ndarray) and a.device.id == cupy.cuda.Device().id
        else:
            kind, where = "numpy", ""
            ok = isinstance(a, np.ndarray)
        if not ok or a.dtype != want or tuple(a.shape) != shape or not a.flags.c_contiguous:
            raise UsageError(f"read-only array '{c.name}' must be a C-contiguous {kind} "
                             f"array of {c.elem_type} ({want}) and shape {shape}{where}, "
                             f"not {describe_array(a)}")


def describe_array(a) -> str:
    """``a numpy.ndarray of dtype float32, shape (4, 5)`` (what a caller passed)."""
    module = type(a).__module__.split(".")[0]
    kind = type(a).__name__ if module == "builtins" else f"{module}.{type(a).__name__}"
    if not hasattr(a, "dtype") or not hasattr(a, "shape"):
        return f"a {kind}"
    flags = getattr(a, "flags", None)
    layout = "" if getattr(flags, "c_contiguous", True) else ", not C-contiguous"
    return f"a {kind} of dtype {a.dtype}, shape {tuple(a.shape)}{layout}"


def device_read_only(info: StencilInfo, env: Mapping[str, int | float],
                     read_only: Sequence) -> dict:
    """The read-only arrays (``info.coefficients`` order) checked as the kernels read
    them (:func:`check_read_only`), by name."""
    check_read_only(info, env, read_only, "cupy")
    return {c.name: a for c, a in zip(info.coefficients, read_only)}


def launch_args(signature: Signature, info: StencilInfo, dims: Sequence[DimExtent],
                env: Mapping[str, int | float], read_only: Mapping[str, object]) -> list:
    """The kernels' arguments after the buffers, in the order of the launch signature
    (:func:`an5dpy.cuda.render_model.launch_signature`): extents and interior bounds,
    the update's scalars, each read-only array (``read_only``: device arrays by name)
    and the extents of it the kernels take."""
    sizes = {}
    for d, dim in enumerate(dims):
        sizes.update({f"n{d}": dim.size, f"lo{d}": dim.lower, f"hi{d}": dim.upper})
    args: list = []
    for p in signature.params:
        match p.kind:
            case "size":
                args.append(np.int32(sizes[p.ref]))
            case "scalar":
                args.append(_C_SCALARS[p.ctype](env[p.ref]))
            case "coef":
                args.append(read_only[p.ref])
            case "coef_extent":
                name, k = p.ref
                args.append(np.int32(coefficient_shape(info, name, env)[k]))
            case _:
                raise InternalError(f"unknown launch parameter {p!r}")
    return args


@dataclass(frozen=True)
class LaunchConfig:
    """One kernel launch's configuration: blocks (a 1D grid: stream blocks times in-plane
    blocks), threads per block as CUDA's (x, y) (contiguous dimension first) and the
    dynamic shared memory (0 where the kernel's static shared memory suffices)."""

    grid: tuple[int, ...]
    block: tuple[int, ...]
    shared_mem: int

    @property
    def empty(self) -> bool:
        return self.grid[0] == 0


def launch_config(plan: BlockingPlan, degree: int, dims: Sequence[DimExtent]) -> LaunchConfig:
    """The configuration of the launch of the kernel of ``degree`` levels over ``dims``, as
    the generated launcher computes it: the one home of a launch's grid and block
    (:class:`CupyRunner` and :mod:`an5dpy.cuda.multi_gpu` use it)."""
    geo = LaunchGeometry(plan, degree, tuple(dims))
    shared = plan.smem_bytes if plan.smem_bytes > STATIC_SMEM_LIMIT else 0
    return LaunchConfig((geo.nblocks,), plan.thread_block, shared)


@dataclass
class CupyRunner:
    """Runs a generated kernel module on cupy arrays, mirroring the generated host code;
    ``signature``: the kernels' parameters after the buffers (the render model's)."""

    info: StencilInfo
    plan: BlockingPlan
    cubin: Cubin
    prefix: str
    signature: Signature

    def __post_init__(self):
        import cupy
        self._cupy = cupy
        self.module = cupy.RawModule(path=self.cubin.path)
        self.kernels = {}
        self._work = None  # a rotating program's work buffers

    def kernel(self, degree: int):
        if degree not in self.kernels:
            fn = self.module.get_function(f"{self.prefix}_kernel_d{degree}")
            if self.smem_bytes > STATIC_SMEM_LIMIT:
                fn.max_dynamic_shared_size_bytes = self.smem_bytes
            self.kernels[degree] = fn
        return self.kernels[degree]

    @property
    def smem_bytes(self) -> int:
        return self.plan.smem_bytes

    def _args(self, dims, env: Mapping[str, int | float], read_only: Sequence) -> list:
        return launch_args(self.signature, self.info, dims, env,
                           device_read_only(self.info, env, read_only))

    def run(self, grid, env: Mapping[str, int | float], read_only: Sequence = ()) -> None:
        """Advance ``grid`` (a cupy array of shape (k, *extents), k the time buffers) as the
        scop does; ``read_only``: the read-only arrays' values on the device (cupy arrays,
        in ``info.coefficients`` order)."""
        dims = grid_extents(self.info, env)
        steps = self.info.time.steps(env)
        start = self.info.time.start_buffer(env)
        if any(d.length == 0 for d in dims):
            return
        check_plane_cells(dims)
        sizes = self._args(dims, env, read_only)
        if self.plan.levels.rotating:
            self._run_rotating(grid, dims, sizes, steps, start)
            return
        # a time step of several statements: the pool holds two buffers per field, and
        # the kernels take field 0's (:func:`field_pool`)
        buffers = grid[0] if self.info.coupled else grid
        for launch in launch_plan(steps, self.plan.bt, start):
            self.launch(launch, buffers, dims, sizes)

    def launch(self, launch: Launch | LevelLaunch, buffers, dims, sizes) -> None:
        """One launch of the launch plan on the current device and stream: ``buffers`` are
        the buffers its numbers index (the time buffers, a rotating program's work buffers
        after them; field 0's of a program of several statements), ``sizes`` the
        arguments after the buffers (:func:`launch_args`)."""
        degree = self.plan.kernel_degree(launch.degree)
        if isinstance(launch, LevelLaunch):
            args = [buffers[b] for b in (*launch.reads, *launch.writes, *launch.boundary)]
        else:
            args = [buffers[launch.source], buffers[launch.source ^ 1],
                    buffers[launch.boundary_even], buffers[launch.boundary_even ^ 1]]
        config = launch_config(self.plan, degree, dims)
        if not config.empty:
            self.kernel(degree)(config.grid, config.block, (*args, *sizes),
                                shared_mem=config.shared_mem)

    def _run_rotating(self, grid, dims, sizes, steps: int, start: int) -> None:
        """A rotating program's run (:func:`~an5dpy.blocking.plan.level_run`): the
        launches over the grid's k buffers themselves and the work buffers (kept between
        runs of one grid shape), then the placements, as the generated host code does."""
        levels = self.plan.levels
        run = level_run(steps, self.plan.bt, start, levels)
        shape = (levels.work_buffers, *grid.shape[1:])
        if self._work is None or self._work.shape != shape or self._work.dtype != grid.dtype:
            self._work = self._cupy.empty(shape, grid.dtype)
        buffers = [*grid, *self._work]
        for launch in run.launches:
            self.launch(launch, buffers, dims, sizes)
        run.place(buffers, dims)

    def run_numpy(self, grid, env: Mapping[str, int | float],
                  read_only: Sequence[np.ndarray] = (), naive: bool = False):
        """Copy ``grid`` and the read-only arrays (numpy) to the GPU, run (the naive
        kernels where ``naive``), and return the result as a new numpy array. For a time
        step of several statements ``grid`` is the fields' arrays (shapes of
        :func:`an5dpy.check.simulate.field_shapes`), and so is the result."""
        run = self.run_naive if naive else self.run
        device_ro = tuple(self._cupy.asarray(a) for a in read_only)
        if self.info.coupled:
            pool = self._cupy.asarray(field_pool(self.info, grid))
            run(pool, env, device_ro)
            return pool_fields(self.info, env, self._cupy.asnumpy(pool))
        device_grid = self._cupy.asarray(grid)
        run(device_grid, env, device_ro)
        return self._cupy.asnumpy(device_grid)

    def run_naive(self, grid, env: Mapping[str, int | float], read_only: Sequence = ()) -> None:
        dims = grid_extents(self.info, env)
        if any(d.length == 0 for d in dims):
            return
        sizes = self._args(dims, env, read_only)
        by, bx = NAIVE_BLOCK[self.info.ndim]
        block = (bx, by)
        tiled = dims[-2:]  # 2D: both dimensions; 3D: the plane, one plane per blockIdx.z
        blocks = (-(-tiled[1].length // bx), -(-tiled[0].length // by))
        if self.info.ndim == 3:
            blocks += (dims[0].length,)
        src = self.info.time.start_buffer(env)
        levels = self.plan.levels
        if self.info.coupled:  # one kernel per sub-step, in order, each time step
            substeps = [self.module.get_function(f"{self.prefix}_naive_s{j}")
                        for j in range(len(self.info.substeps))]
            for _ in range(self.info.time.steps(env)):
                for sub in substeps:
                    sub(blocks, block, (grid[0, src], grid[0, src ^ 1], *sizes))
                src ^= 1
            return
        fn = self.module.get_function(f"{self.prefix}_naive")
        if levels.rotating:  # the levels the update reads, the next buffer written
            k = levels.buffers
            for step in range(self.info.time.steps(env)):
                cur = (src + step) % k
                older = [grid[(cur - lag + 1) % k] for lag in range(2, levels.history + 1)]
                fn(blocks, block, (grid[cur], *older, grid[(cur + 1) % k], *sizes))
            return
        for _ in range(self.info.time.steps(env)):
            fn(blocks, block, (grid[src], grid[src ^ 1], *sizes))
            src ^= 1


def workdir(prefix: str = "an5dpy-") -> str:
    return tempfile.mkdtemp(prefix=prefix)


def build_kernels(info: StencilInfo, plan: BlockingPlan, stem: str,
                  options: BuildOptions = BuildOptions(), smem_wrap: bool = True,
                  directory: str | None = None, regs: int | None = None,
                  degrees: tuple[int, ...] | None = None):
    """Generate the kernels of ``plan`` (:func:`an5dpy.driver.generate`, as
    ``an5d-translate`` does; only those of ``degrees`` where given) and build them with
    nvcc (no GPU needed): returns the render model and the cubin."""
    kernels = generate(info, plan, stem, smem_wrap=smem_wrap, regs=regs, degrees=degrees)
    directory = Path(directory or workdir())
    for name, text in kernels.files().items():
        (directory / name).write_text(text)
    return kernels.model, compile_cubin(directory / f"{stem}_kernel.cu", options)


def cuda_runner(info: StencilInfo, plan: BlockingPlan, stem: str,
                options: BuildOptions = BuildOptions(), smem_wrap: bool = True,
                directory: str | None = None, regs: int | None = None) -> "CupyRunner":
    """Generate the kernels of ``plan``, build them with nvcc and load them with cupy."""
    model, cubin = build_kernels(info, plan, stem, options, smem_wrap, directory, regs)
    return CupyRunner(info, plan, cubin, model.prefix, model.signature)


# --------------------------------------------------------------------------- module cache


@lru_cache(maxsize=None)
def nvcc_version() -> str:
    """nvcc's version banner: a built module's cache key holds it, so that a new toolkit
    rebuilds."""
    return f"{nvcc_path()}\n{run_nvcc(['--version']).stdout.strip()}"


#: Loaded modules by (cache key, device): a runner holds its module on one device.
_LOADED: dict[tuple[str, int], CupyRunner] = {}


def clear_loaded_modules() -> None:
    """Forget the modules loaded in this process (the disk cache stays)."""
    _LOADED.clear()


def cached_runner(info: StencilInfo, plan: BlockingPlan, kernels: Kernels,
                  options: BuildOptions, key: str, directory: str | Path | None
                  ) -> tuple[CupyRunner, str]:
    """A runner of ``kernels`` (generated for ``plan``) built with ``options``, and where
    it came from: ``"memory"`` (loaded before in this process), ``"disk"`` (the cubin of
    an earlier build in ``directory``) or ``"built"`` (nvcc ran now; the cubin is stored
    in ``directory`` unless it is None). ``key`` must determine the cubin: the caller
    hashes what generated the kernels and the build flags. Entries are written atomically
    (a cubin appears only complete, with its ptxas log beside it); a cache that cannot
    be written only costs time."""
    import cupy
    device = cupy.cuda.Device().id
    loaded = _LOADED.get((key, device))
    if loaded is not None:
        return loaded, "memory"
    cubin, origin = _stored_cubin(key, directory), "disk"
    if cubin is None:
        build = Path(workdir())
        for name, text in kernels.files().items():
            (build / name).write_text(text)
        cubin = compile_cubin(build / f"{kernels.model.stem}_kernel.cu", options)
        cubin, origin = _store_cubin(cubin, key, directory), "built"
    runner = CupyRunner(info, plan, cubin, kernels.model.prefix, kernels.model.signature)
    _LOADED[(key, device)] = runner
    return runner, origin


def _stored_cubin(key: str, directory: str | Path | None) -> Cubin | None:
    if directory is None:
        return None
    path, log = Path(directory, f"{key}.cubin"), Path(directory, f"{key}.log")
    try:
        text = log.read_text()
    except OSError:
        return None
    return Cubin(str(path), parse_ptxas_report(text), text) if path.is_file() else None


def _store_cubin(cubin: Cubin, key: str, directory: str | Path | None) -> Cubin:
    """``cubin`` copied into the cache (the log first, then the cubin, each by rename),
    or ``cubin`` itself where the cache cannot be written."""
    if directory is None:
        return cubin
    directory = Path(directory)
    tmp = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for data, name in ((cubin.log.encode(), f"{key}.log"),
                           (Path(cubin.path).read_bytes(), f"{key}.cubin")):
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=directory)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, directory / name)
            tmp = None
    except OSError:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        return cubin
    return Cubin(str(directory / f"{key}.cubin"), cubin.resources, cubin.log)
