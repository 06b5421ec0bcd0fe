"""Generated CUDA on the GPU against the gcc oracle (pytest -m gpu; skipped without a GPU).

Every paper benchmark x float/double x three configurations: odd grid sizes, step counts not
divisible by bT, stream division, a grid smaller than one block, and every mode the
stencil qualifies for across the three. Exact builds (no fast math, -fmad=false) must be
bit-identical to gcc in modes nondiag/none; assoc and fast-math builds get the tolerance
of an5dpy.check.verify. All modules are compiled up front in parallel.
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
from dataclasses import dataclass
from functools import lru_cache

import pytest

from an5dpy.driver import load
from an5dpy.blocking.plan import grid_extents, make_plan
from an5dpy.check.reference import build_reference, resolve_params
from an5dpy.check.verify import compare, must_be_identical, random_grid, result_buffer, tolerance
from paths import PAPER_BENCHMARKS

pytestmark = pytest.mark.gpu

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
C_INPUTS = os.path.join(REPO, "c_inputs")
NAMES = sorted(PAPER_BENCHMARKS)


@dataclass(frozen=True)
class Case:
    name: str
    dtype: str
    mode: str
    bt: int
    bs: tuple[int, ...]
    sl: int | None
    compsize: int
    steps: int
    exact: bool = True
    coarsen: int = 1
    barriers: str = "level"
    idle: str = "skip"
    halo: str = "threads"

    @property
    def id(self) -> str:
        return (f"{self.name}-{self.dtype}-{self.mode}-bt{self.bt}-sl{self.sl}-n{self.compsize}"
                f"-T{self.steps}{'' if self.exact else '-fast'}"
                f"{f'-c{self.coarsen}' if self.coarsen > 1 else ''}"
                f"{'' if self.barriers == 'level' else '-' + self.barriers}"
                f"{'' if self.idle == 'skip' else '-idle-' + self.idle}"
                f"{'' if self.halo == 'threads' else '-halo-' + self.halo}")


@lru_cache(maxsize=None)
def program(name: str, dtype: str):
    return load(os.path.join(C_INPUTS, name + ".c"), (("SB_TYPE", dtype),))


def largest_bt(info, want: int, bs: tuple[int, ...], mode: str) -> int:
    from an5dpy.errors import UsageError
    for bt in range(want, 0, -1):
        try:
            make_plan(info, bt=bt, bs=bs, opt=mode)
            return bt
        except UsageError:
            continue
    raise AssertionError("no legal plan")


def cases() -> list[Case]:
    out = []
    for name in NAMES:
        for dtype in ("float", "double"):
            info = program(name, dtype)[1]
            modes = [info.opt] + [m for m in ("none", "assoc", "nondiag")
                                  if m != info.opt and (m == "none" or (m == "assoc" and info.associative)
                                                        or (m == "nondiag" and info.diagonal_free))]
            heavy = info.flops_per_cell > 200
            if info.ndim == 2:
                bs = (128,)
                sizes = (301, 37, 5)
            else:
                bs = (16, 32) if not heavy else (16, 16)
                sizes = (45, 19, 3)
            want = (4, 3, 5) if not heavy else (1, 1, 2)
            for k in range(3):
                mode = modes[k % len(modes)]
                bt = largest_bt(info, want[k], bs, mode)
                sl = (None, 13, 5)[k] if info.ndim == 3 else (128, 17, None)[k]
                steps = (4 * bt + 3, 2 * bt + 1, bt + 2)[k]
                out.append(Case(name, dtype, mode, bt, bs, sl, sizes[k], steps))
            if not heavy:
                bt = largest_bt(info, 3, bs, info.opt)
                out.append(Case(name, dtype, info.opt, bt, bs, 9, sizes[1], 4 * bt - 1,
                                exact=False))
            # coarsened: 2 and 4 cells per thread, every mode across the two
            for k, coarsen in enumerate((2, 4)):
                mode = modes[(k + 1) % len(modes)]
                bt = largest_bt(info, want[k], bs, mode)
                sl = (7, None)[k] if info.ndim == 3 else (None, 19)[k]
                out.append(Case(name, dtype, mode, bt, bs, sl, sizes[k], (3 * bt + 2, bt + 1)[k],
                                coarsen=coarsen))
            # one barrier per step (mode nondiag): one and two cells per thread
            if info.diagonal_free:
                for k, coarsen in enumerate((1, 2)):
                    bt = largest_bt(info, (5, 3)[k], bs, "nondiag")
                    sl = (None, 11)[k] if info.ndim == 3 else (23, None)[k]
                    out.append(Case(name, dtype, "nondiag", bt, bs, sl, sizes[k],
                                    (4 * bt + 1, 2 * bt + 3)[k], coarsen=coarsen,
                                    barriers="step"))
            # warp shuffles (2D nondiag): a block of one warp of 2, 4 and 8 cells per thread
            if info.diagonal_free and info.ndim == 2:
                for k, coarsen in enumerate((2, 4, 8)):
                    bt = largest_shuffle_bt(info, (4, 5, 2)[k], coarsen)
                    out.append(Case(name, dtype, "nondiag", bt, (32 * coarsen,),
                                    (None, 13, 64)[k], sizes[k], (3 * bt + 2, bt + 1, 2 * bt)[k],
                                    coarsen=coarsen, barriers="shuffle"))
            # computing at idle warps (3D, whose halo rows are whole warps): the default
            # mode, and (mode nondiag) two cells per thread with one barrier per step
            if info.ndim == 3:
                bt = largest_bt(info, want[0], bs, info.opt)
                out.append(Case(name, dtype, info.opt, bt, bs, 7, sizes[0], 3 * bt + 2,
                                idle="compute"))
                if info.diagonal_free:
                    bt = largest_bt(info, want[1], bs, "nondiag")
                    out.append(Case(name, dtype, "nondiag", bt, bs, None, sizes[1],
                                    2 * bt + 1, coarsen=2, barriers="step", idle="compute"))
            # the computing threads loading the halo (bT 1, 3D nondiag): tiles around
            # compute regions of 8x32 (1 cell per thread), 16x32 (4) and 8x64 (2), at odd
            # sizes, a grid smaller than a block and short stream blocks
            if info.ndim == 3 and info.diagonal_free and not info.coefficients:
                r = info.radius[1]
                for k, (compute, coarsen) in enumerate((((8, 32), 1), ((16, 32), 4),
                                                        ((8, 64), 2))):
                    out.append(Case(name, dtype, "nondiag", 1,
                                    (compute[0] + 2 * r, compute[1] + 2 * r), (None, 7, 13)[k],
                                    (45, 19, 3)[k], (5, 3, 2)[k], coarsen=coarsen,
                                    halo="loaded"))
            # and in mode assoc (each arriving plane added into the cells' sums): compute
            # regions of 8x32 (1 cell per thread) and 8x64 (2; 1 for the heavy boxes)
            if info.ndim == 3 and info.associative and not info.coefficients:
                r = info.radius[1]
                for k, (compute, coarsen) in enumerate((((8, 32), 1),
                                                        ((8, 64), 1 if heavy else 2))):
                    out.append(Case(name, dtype, "assoc", 1,
                                    (compute[0] + 2 * r, compute[1] + 2 * r), (None, 7)[k],
                                    (45, 19)[k], (4, 3)[k], coarsen=coarsen, halo="loaded"))
    # mode assoc branches on its warps' level bits (macros.warp_computes): 3D blocks of 240
    # threads (the last warp short) and of 320, and a 2D block of 240 with idle warps
    for name, dtype, bs, want, sl, size in (("box3d1r", "float", (12, 20), 3, 7, 19),
                                            ("j3d27pt", "double", (20, 16), 2, None, 45),
                                            ("star2d4r", "float", (240,), 9, 17, 301)):
        bt = largest_bt(program(name, dtype)[1], want, bs, "assoc")
        out.append(Case(name, dtype, "assoc", bt, bs, sl, size, 3 * bt + 1))
    return out


def largest_shuffle_bt(info, want: int, coarsen: int) -> int:
    from an5dpy.errors import UsageError
    for bt in range(want, 0, -1):
        try:
            make_plan(info, bt=bt, bs=(32 * coarsen,), opt="nondiag", coarsen=coarsen,
                      barriers="shuffle")
            return bt
        except UsageError:
            continue
    raise AssertionError("no legal shuffle plan")


CASES = cases()


def build(case: Case):
    from an5dpy.cuda.runtime import BuildOptions, build_kernels, device_arch
    prog, info = program(case.name, case.dtype)
    plan = make_plan(info, bt=case.bt, bs=case.bs, sl=case.sl, opt=case.mode,
                     coarsen=case.coarsen, barriers=case.barriers, idle=case.idle,
                     halo=case.halo)
    model, cubin = build_kernels(info, plan, case.name.replace("-", "_"),
                                 BuildOptions(arch=device_arch(), exact=case.exact))
    return plan, model, cubin


def _try_build(case: Case):
    try:
        return build(case)
    except Exception as e:  # noqa: BLE001 - reported by the case's own test
        return e


class Modules(dict):
    """Built modules by case; a failed build fails only its case. Cases not built up
    front are built when first asked for."""

    def __missing__(self, case):
        self[case] = value = _try_build(case)
        return value

    def __getitem__(self, case):
        value = super().__getitem__(case)
        if isinstance(value, Exception):
            raise value
        return value


@pytest.fixture(scope="session")
def modules():
    """Every case's module, compiled in parallel up front in a single pytest process.
    Under pytest-xdist each worker runs only some cases, so it builds those on demand
    (building all of them in every worker multiplies the compile time by the workers)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return Modules()
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 4) as pool:
        return Modules(zip(CASES, pool.map(_try_build, CASES)))


def test_case_count():
    assert len({(c.name, c.dtype) for c in CASES}) == 42
    assert len(CASES) >= 42 * 3


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_generated_cuda_matches_gcc(case, modules):
    from an5dpy.cuda.runtime import CupyRunner
    prog, info = program(case.name, case.dtype)
    plan, model, cubin = modules[case]
    runner = CupyRunner(info, plan, cubin, model.prefix, model.signature)
    env = resolve_params(prog, {"compsize": case.compsize, "timestep": case.steps})
    shape = (2, *(d.size for d in grid_extents(info, env)))
    grid = random_grid(shape, case.dtype, seed=case.steps)
    expected = grid.copy()
    build_reference(prog).run(expected, env)
    got = runner.run_numpy(grid, env)
    b = result_buffer(info, env)
    tol = None if must_be_identical(info, plan, case.exact) else tolerance(info, plan, case.steps)
    result = compare(got[b], expected[b], tol)
    assert result.passed, result.lines()
    if tol is None:
        assert result.bit_identical


@pytest.mark.parametrize("name, dtype, compute, coarsen", [
    ("box3d2r", "float", (8, 64), 2), ("box3d2r", "double", (8, 32), 1),
    ("j3d27pt", "float", (16, 32), 4), ("box3d4r", "double", (8, 32), 1)])
def test_loaded_assoc_sums_are_the_threads_kernels_bit_for_bit(name, dtype, compute, coarsen):
    # mode assoc reorders the update's sum, so it is compared with gcc to a tolerance; the
    # kernel whose computing threads load the halo adds each plane's terms with the level
    # ops' own statements, so in exact builds it gives the halo threads' kernel's bits
    from an5dpy.cuda.runtime import BuildOptions, CupyRunner, build_kernels, device_arch
    prog, info = program(name, dtype)
    r = info.radius[1]
    tile = (compute[0] + 2 * r, compute[1] + 2 * r)
    env = resolve_params(prog, {"compsize": 37, "timestep": 3})
    shape = (2, *(d.size for d in grid_extents(info, env)))
    grid = random_grid(shape, dtype, seed=11)
    results = []
    for halo, cells in (("threads", 1), ("loaded", coarsen)):
        plan = make_plan(info, bt=1, bs=tile, sl=11, opt="assoc", coarsen=cells, halo=halo)
        model, cubin = build_kernels(info, plan, f"{name}_{halo}",
                                     BuildOptions(arch=device_arch(), exact=True))
        runner = CupyRunner(info, plan, cubin, model.prefix, model.signature)
        results.append(runner.run_numpy(grid.copy(), env)[result_buffer(info, env)])
    assert compare(results[1], results[0], None).bit_identical


def test_naive_baseline_matches_gcc(modules):
    from an5dpy.cuda.runtime import CupyRunner
    for case in [c for c in CASES if c.name in ("j2d5pt", "star3d1r")][:4]:
        prog, info = program(case.name, case.dtype)
        plan, model, cubin = modules[case]
        runner = CupyRunner(info, plan, cubin, model.prefix, model.signature)
        env = resolve_params(prog, {"compsize": 33, "timestep": 7})
        shape = (2, *(d.size for d in grid_extents(info, env)))
        grid = random_grid(shape, case.dtype, seed=3)
        expected = grid.copy()
        build_reference(prog).run(expected, env)
        import cupy
        g = cupy.asarray(grid)
        runner.run_naive(g, env)
        got = cupy.asnumpy(g)
        b = result_buffer(info, env)
        tol = None if must_be_identical(info, plan, case.exact) else tolerance(info, plan, 7)
        assert compare(got[b], expected[b], tol).passed


@pytest.mark.parametrize("name, args", [("j2d5pt", ["-s", "4096", "-t", "101", "-c", "-n", "2"]),
                                        ("star3d1r", ["-s", "200", "-t", "21", "-c", "-n", "2"])])
def test_generated_program_with_the_harness(tmp_path, name, args):
    """The acceptance command: translate, nvcc host + kernel with common.h, run with -c."""
    from an5dpy.cli.main import translate_main
    from an5dpy.cuda.runtime import nvcc_path
    src = tmp_path / f"{name}.c"
    src.write_text(open(os.path.join(C_INPUTS, f"{name}.c")).read())
    (tmp_path / "common.h").write_text(open(os.path.join(C_INPUTS, "common.h")).read())
    bs = "128" if name == "j2d5pt" else "32x32"
    sl = ["--sl", "128"] if name == "j2d5pt" else []
    assert translate_main([str(src), "--dtype", "float", "--bt", "4", "--bs", bs, *sl, "-q"]) == 0
    exe = tmp_path / "a.out"
    subprocess.run([nvcc_path(), "-O3", "--use_fast_math", "-arch=sm_90", "-Xcompiler",
                    "-fopenmp", f"{name}_host.cu", f"{name}_kernel.cu", "-o", str(exe)],
                   cwd=tmp_path, check=True, capture_output=True)
    out = subprocess.run([str(exe), *args], cwd=tmp_path, capture_output=True, text=True,
                         check=True).stdout
    assert "Average:" in out and "GFLOPS" in out
    line = next(l for l in out.splitlines() if l.startswith("Max error:"))
    rel = float(line.split("relative")[1].strip(" )"))
    prog, info = program(name, "float")
    plan = make_plan(info, bt=4, bs=(128,) if name == "j2d5pt" else (32, 32))
    steps = int(args[args.index("-t") + 1])
    assert rel <= tolerance(info, plan, steps), out


#: The hand-written programs of c_inputs/ (read-only arrays, rotating time levels, time
#: steps of several statements) with a plan each and the harness' size (3D smaller).
HAND_WRITTEN = [("poisson2d", "float", ["--bt", "4", "--bs", "128", "--sl", "64"], "300"),
                ("varheat2d", "double", ["--bt", "3", "--bs", "128"], "257"),
                ("heat3dz", "float", ["--bt", "3", "--bs", "32x16"], "61"),
                ("wave2d", "float", ["--bt", "4", "--bs", "256", "--sl", "96"], "301"),
                ("wave2d", "double", ["--bt", "3", "--bs", "128", "--opt", "none"], "130"),
                ("acoustic3d", "float", ["--bt", "2", "--bs", "32x32"], "45"),
                ("acoustic3d", "double", ["--bt", "1", "--bs", "32x16"], "37"),
                ("dampedwave2d", "float", ["--bt", "5", "--bs", "128", "--sl", "40"], "211"),
                ("dampedwave2d", "double", ["--bt", "2", "--bs", "64", "--opt", "none"], "97"),
                ("grayscott2d", "float", ["--bt", "4", "--bs", "128", "--sl", "64"], "300"),
                ("grayscott2d", "double", ["--bt", "3", "--bs", "128", "--opt", "none"], "131"),
                ("fdtd2d", "float", ["--bt", "3", "--bs", "128", "--sl", "50"], "257"),
                ("fdtd2d", "double", ["--bt", "2", "--bs", "64", "--opt", "none"], "99"),
                ("acousticvp3d", "float", ["--bt", "2", "--bs", "32x32"], "45"),
                ("acousticvp3d", "double", ["--bt", "1", "--bs", "16x16", "--opt", "none"],
                 "29"),
                # computing at idle warps: a read-only array, and several fields
                ("heat3dz", "double", ["--bt", "3", "--bs", "32x32", "--idle", "compute"],
                 "61"),
                ("acousticvp3d", "float", ["--bt", "2", "--bs", "32x32", "--idle", "compute"],
                 "45")]


@pytest.mark.parametrize("name, dtype, plan, size", HAND_WRITTEN,
                         ids=[f"{n}-{d}-{'-'.join(p[1::2])}" for n, d, p, _ in HAND_WRITTEN])
@pytest.mark.parametrize("steps", ["1", "2", "7", "40"])
def test_hand_written_program_with_the_harness_is_bit_identical(tmp_path, name, dtype, plan,
                                                                 size, steps):
    """translate, nvcc without fast math or FMA contraction, run with -c: every buffer the
    harness compares (all of them for the rotating programs) equals the CPU loop's."""
    from an5dpy.cli.main import translate_main
    from an5dpy.cuda.runtime import nvcc_path
    src = tmp_path / f"{name}.c"
    src.write_text(open(os.path.join(C_INPUTS, f"{name}.c")).read())
    (tmp_path / "common.h").write_text(open(os.path.join(C_INPUTS, "common.h")).read())
    assert translate_main([str(src), "--dtype", dtype, *plan, "-q"]) == 0
    exe = tmp_path / "a.out"
    subprocess.run([nvcc_path(), "-O3", "-fmad=false", "-arch=sm_90", "-Xcompiler",
                    "-fopenmp", f"{name}_host.cu", f"{name}_kernel.cu", "-o", str(exe)],
                   cwd=tmp_path, check=True, capture_output=True)
    out = subprocess.run([str(exe), "-s", size, "-t", steps, "-c", "-n", "1"], cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout
    assert "Bit-identical: yes" in out and "Max error: 0 (relative 0)" in out, out
