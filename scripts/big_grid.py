#!/usr/bin/env python3
"""A grid that does not fit one GPU, run over several and spot-checked against gcc.

    python scripts/big_grid.py [--size 2900] [--steps T] [--gpus N] [--planes P1,P2,..]
                               [--bt N] [--bs B] [--sl N|off] [--out DIR]

star3d1r in float (the benchmark's update over a grid of any extents,
:data:`scaling.SOURCES`) on a cube of ``--size``^3 interior cells: at the default 2900,
its two buffers of 2902^3 floats take 195.5 GB, more than one 141 GB H200 holds, and
each of two GPUs holds half of it. The kernels are built exact (no fast math,
``-fmad=false``: bit-identical to gcc), the plan is the model's choice for the problem
(or ``--bt/--bs/--sl``), ``T`` is ``2 bT + 1`` steps by default (two full launches and a
remainder launch).

Each GPU's slab is made on its device (every cell a hash of its global index,
:func:`scaling.cell_values`: halo and boundary planes too), the run goes through
``Stencil.run_slabs`` (per-device slabs, NCCL halo exchange, no host copy of the grid).
Then sampled planes p (near the start, both sides of every slab boundary, near the end;
or ``--planes``) are checked: the CPU builds the sub-grid of planes
``[p - T r, p + T r]`` (the whole cross-section, clipped at the array's ends) from the
same hash, runs the gcc oracle on it for T steps and compares its plane p with the GPU's,
bit for bit. The sub-grid gives plane p exactly: its edge planes are held fixed as
boundary, so they are wrong from step 1 on (unless they are the array's own boundary),
and a wrong value moves r planes per step, so after T steps it has reached the planes
within (T - 1) r + 1 of the edge only, short of p.

Prints a PASS/FAIL table and the memory used on each GPU, writes ``<out>/big_grid.md``
(``<out>`` as ``scripts/scaling.py`` derives it: ``artifact/H200x2``). Exit status 0 when
every plane matches, 1 otherwise. Try ``--size 301`` first (seconds).
"""

from __future__ import annotations

import os

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # before any NCCL communicator (scaling.py)

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import scaling  # noqa: E402

STENCIL = "star3d1r"
GB = 1e9


def grid_shape(size: int) -> tuple[int, ...]:
    """Two time buffers of (size + 2)^3 (one boundary cell on each side)."""
    return (2, *(size + 2 * scaling.BOUNDARY,) * 3)


def grid_bytes(shape: tuple[int, ...], itemsize: int = 4) -> int:
    n = itemsize
    for e in shape:
        n *= e
    return n


def sample_planes(decomp, extent) -> tuple[int, ...]:
    """Planes worth checking: near the start and the end of the interior, and both sides
    of every slab boundary (the last plane one slab owns, the first of the next)."""
    near = min(2, extent.length - 1)
    planes = {extent.lower + near, extent.upper - near}
    for lower, upper in zip(decomp.slabs, decomp.slabs[1:]):
        planes |= {lower.owned[1] - 1, upper.owned[0]}
    return tuple(sorted(p for p in planes if extent.lower <= p <= extent.upper))


def sub_grid_planes(p: int, steps: int, reach: int, planes: int) -> tuple[int, int]:
    """[lo, hi) of the planes whose values at time 0 decide plane ``p`` after ``steps``
    steps: ``p - steps*reach .. p + steps*reach``, clipped to the array's ``planes``."""
    return max(0, p - steps * reach), min(planes, p + steps * reach + 1)


def owner(decomp, p: int):
    """The slab that owns plane ``p``."""
    return next(s for s in decomp.slabs if s.owned[0] <= p < s.owned[1])


@dataclass(frozen=True)
class PlaneCheck:
    plane: int
    slab: int
    sub_grid: tuple[int, int]
    mismatches: int
    max_abs_diff: float
    cells: int

    @property
    def passed(self) -> bool:
        return self.mismatches == 0


def compare(plane: int, slab: int, sub: tuple[int, int], gpu: np.ndarray, cpu: np.ndarray
            ) -> PlaneCheck:
    """Bit for bit (NaNs equal only as NaN at the same cells)."""
    same = (gpu == cpu) | (np.isnan(gpu) & np.isnan(cpu))
    diff = np.abs(gpu.astype(np.float64) - cpu.astype(np.float64))
    worst = float(np.nanmax(diff)) if diff.size and not np.all(np.isnan(diff)) else 0.0
    return PlaneCheck(plane, slab, sub, int(same.size - same.sum()), worst, int(same.size))


def report(checks, lines_before: list[str]) -> str:
    lines = list(lines_before) + ["", "| plane | slab | sub-grid planes | cells | mismatches | "
                                  "max abs diff | result |", "|---|---|---|---|---|---|---|"]
    for c in checks:
        lines.append(f"| {c.plane} | {c.slab} | {c.sub_grid[0]}..{c.sub_grid[1] - 1} | "
                     f"{c.cells:,} | {c.mismatches:,} | {c.max_abs_diff:.3g} | "
                     f"{'PASS' if c.passed else 'FAIL'} |")
    verdict = "PASS" if checks and all(c.passed for c in checks) else "FAIL"
    lines += ["", f"**{verdict}**: {sum(c.passed for c in checks)} of {len(checks)} planes "
              "bit-identical to gcc."]
    return "\n".join(lines) + "\n"


def memory_lines(cupy, count: int) -> list[str]:
    out = []
    for d in range(count):
        with cupy.cuda.Device(d):
            free, total = cupy.cuda.runtime.memGetInfo()
            pool = cupy.get_default_memory_pool().used_bytes()
        out.append(f"GPU {d}: {(total - free) / GB:.1f} GB used of {total / GB:.1f} GB "
                   f"(arrays {pool / GB:.1f} GB)")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=2900, help="interior cells per dimension")
    ap.add_argument("--steps", type=int, default=None, help="time steps (default 2 bT + 1)")
    ap.add_argument("--gpus", type=int, default=None, help="GPUs (default: all visible)")
    ap.add_argument("--planes", default=None, help="comma-separated planes to check")
    ap.add_argument("--bt", type=int, default=None)
    ap.add_argument("--bs", default=None)
    ap.add_argument("--sl", default=None)
    ap.add_argument("--out", default=None, help="default artifact/<GPU>x<N>")
    args = ap.parse_args(argv)
    started = time.perf_counter()

    import cupy
    from an5dpy.blocking.plan import grid_extents
    from an5dpy.cuda.runtime import device_name
    visible = cupy.cuda.runtime.getDeviceCount()
    count = args.gpus or visible
    if not 1 <= count <= visible:
        print(f"big_grid.py: --gpus {count}: {visible} GPU(s) visible", file=sys.stderr)
        return 2
    with cupy.cuda.Device(0):
        device = device_name()
        one_gpu = cupy.cuda.runtime.memGetInfo()[1]
    shape = grid_shape(args.size)
    stencil = scaling.translate(STENCIL, scaling.plan_options(args.bt, args.bs, args.sl),
                                shape, exact=True)
    steps = args.steps if args.steps is not None else 2 * stencil.plan.bt + 1
    devices = list(range(count))
    decomp = stencil.decompose(shape, devices)
    devices = devices[:decomp.count]
    from an5dpy.api import bind
    env = bind(stencil.info, shape, steps, {})
    extent = grid_extents(stencil.info, env)[0]
    reach = stencil.info.dims[0].radius
    planes = (tuple(int(p) for p in args.planes.split(",")) if args.planes
              else sample_planes(decomp, extent))
    head = [f"# A grid larger than one GPU: {STENCIL} float {args.size}^3 on "
            f"{len(devices)} x {device}", "",
            f"* grid: 2 buffers of {shape[1]}^3 floats = {grid_bytes(shape) / GB:.1f} GB; one "
            f"GPU has {one_gpu / GB:.1f} GB ("
            f"{'does not fit' if grid_bytes(shape) > one_gpu else 'fits'} on one)",
            f"* plan: {scaling.plan_summary(stencil)}, exact build (no fast math, "
            f"-fmad=false); {steps} steps; halo {decomp.halo.below} planes below, "
            f"{decomp.halo.above} above",
            "* slabs (owned / held planes): " + "; ".join(
                f"GPU {s.index}: [{s.owned[0]}, {s.owned[1]}) / [{s.held[0]}, {s.held[1]}) = "
                f"{grid_bytes((shape[0], s.planes, *shape[2:])) / GB:.1f} GB"
                for s in decomp.slabs)]
    for line in head[2:]:
        print(line.lstrip("* "), flush=True)

    t0 = time.perf_counter()
    stencil.build()
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    slabs = []
    for s, d in zip(decomp.slabs, devices):
        with cupy.cuda.Device(d):
            part = cupy.empty((shape[0], s.planes, *shape[2:]), np.float32)
            scaling.fill_planes(cupy, part, s.start)
            slabs.append(part)
    for d in devices:
        cupy.cuda.Device(d).synchronize()
    t_init = time.perf_counter() - t0
    t0 = time.perf_counter()
    results = stencil.run_slabs(slabs, shape, steps, devices=devices)
    for d in devices:
        cupy.cuda.Device(d).synchronize()
    t_run = time.perf_counter() - t0
    memory = memory_lines(cupy, len(devices))
    print(f"built in {t_build:.0f} s, slabs made on the GPUs in {t_init:.1f} s, run in "
          f"{t_run:.2f} s (NCCL set-up and module loads included)", flush=True)
    for line in memory:
        print(line, flush=True)

    checks = []
    for p in planes:
        s = owner(decomp, p)
        with cupy.cuda.Device(devices[s.index]):
            gpu_plane = cupy.asnumpy(results[s.index][p - s.start])
        lo, hi = sub_grid_planes(p, steps, reach, shape[1])
        sub = np.empty((shape[0], hi - lo, *shape[2:]), np.float32)
        scaling.fill_planes(np, sub, lo)
        cpu = stencil.reference(sub, steps)  # the gcc oracle; the result buffer
        checks.append(compare(p, s.index, (lo, hi), gpu_plane, cpu[p - lo]))
        c = checks[-1]
        print(f"plane {p:5d} (slab {s.index}, sub-grid {lo}..{hi - 1}): "
              f"{'PASS' if c.passed else 'FAIL'} ({c.mismatches} of {c.cells} cells differ, "
              f"max abs diff {c.max_abs_diff:.3g})", flush=True)
    head += [f"* made on the GPUs in {t_init:.1f} s, run in {t_run:.2f} s (first run: NCCL "
             f"set-up and module loads included); build {t_build:.0f} s; "
             f"{time.perf_counter() - started:.0f} s in all",
             "* memory after the run: " + "; ".join(memory),
             "* check: each plane p of the GPU's result against gcc's run of the sub-grid of "
             f"planes [p - {steps}*{reach}, p + {steps}*{reach}] (clipped) made by the same "
             "hash of the global index"]
    text = report(checks, head)
    out = args.out or scaling.artifact_dir(device, len(devices))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "big_grid.md"), "w") as f:
        f.write(text)
    print(text.splitlines()[-1])
    print(f"wrote {out}/big_grid.md")
    return 0 if checks and all(c.passed for c in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
