#!/usr/bin/env python3
"""A 3D plane queue in shared memory, tried by hand on star3d1r before the generator builds it.

    python scripts/plane_queue.py                       # check, then time (a GPU)
    python scripts/plane_queue.py --check-only          # bit-for-bit checks alone
    python scripts/plane_queue.py --source 64x32:32:4   # the CUDA source of one layout

Today's 3D kernels (templates/kernel.cu.j2) keep each level's planes in registers, a ring of
2r + 1 per cell and level, and pass only the current plane through shared memory. The
register file then bounds the cells an SM holds (star3d1r float at bT 4: 31 registers a
cell, two 32x32 blocks an SM), so a block is small and its redundant halo large (a 32x32
block at bT 4 keeps 56% of its cells). Issue 17's second item: keep the planes in the
228 KB of shared memory instead, so that a block can be larger.

The kernel written here (:func:`kernel_source`, star3d1r, float or double) is that layout:

* a block covers ``TX x TY`` cells of the plane (x contiguous) with ``32 x NTY`` threads,
  each thread the cells ``tx + 32 i, ty + NTY j``;
* every level below the launch's last keeps a ring of 4 planes in shared memory (padded by
  one cell each side); level L works 2L planes behind level 0's load, so every plane a
  level reads was written in an earlier step and one barrier a step suffices (a ring of 4:
  the plane written this step and the three the next level reads);
* the last level stores to global memory; boundary cells and planes take the boundary
  buffers' values as the generated kernels do (bnd_even at even levels, bnd_odd at odd).

A launch of the plan's full degree runs this kernel; shorter launches (the step count's
remainder) run the generated kernels of a 32x32 plan of the same bT, so a run is the
program's whole run. ``--check`` builds both exactly (``-fmad=false``, no fast math) and
compares the grid after every step count from 1 to 3 bT + 1, at odd sizes and stream
lengths, bit for bit. The timing builds use the benchmarks' flags (``-O3
--use_fast_math``) and the artifact's method (scripts/artifact.py: the paper's 512^3, runs
of about 0.2 s of full launches, CUDA events), the tuned plan of artifact/H200/table5.md
and each layout in turn, ``--repeats`` times; the table gives the best of each and its
ratio to the tuned plan.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

#: star3d1r's coefficients, in its update's order (c_inputs/star3d1r.c): z-1, y-1, x-1,
#: centre, x+1, y+1, z+1. Float literals, promoted in double as the C program does.
COEFFICIENTS = ("0.1144f", "0.1239f", "0.1334f", "0.1429f", "0.1524f", "0.1619f", "0.1714f")
RING = 4  # planes per level's ring: the one written this step and the three read
SMEM_LIMIT = 227 * 1024  # the largest dynamic shared memory a block may have (sm_90)
SM_SHARED = 228 * 1024  # shared memory of an SM (sm_90)


@dataclass(frozen=True)
class Layout:
    """A block of ``tx x ty`` cells, ``32 x nty`` threads, ``bt`` levels, stream blocks of
    ``sl`` planes."""

    tx: int
    ty: int
    nty: int
    bt: int
    sl: int = 128

    def __post_init__(self):
        if self.tx % 32 or self.ty % self.nty or self.tx <= 2 * self.bt or self.ty <= 2 * self.bt:
            raise ValueError(f"no such layout: {self}")

    @classmethod
    def parse(cls, text: str) -> "Layout":
        """``64x32:32:4`` (cells, thread rows, bT) or ``64x32:32:4:64`` (and sl)."""
        cells, nty, bt, *sl = text.split(":")
        tx, ty = (int(v) for v in cells.split("x"))
        return cls(tx, ty, int(nty), int(bt), *(int(v) for v in sl))

    def __str__(self) -> str:
        return f"{self.tx}x{self.ty}:{self.nty}:{self.bt}:{self.sl}"

    def smem_bytes(self, dtype: str) -> int:
        size = 4 if dtype == "float" else 8
        return self.bt * RING * (self.tx + 2) * (self.ty + 2) * size

    def blocks_per_sm(self, dtype: str) -> int:
        """Blocks an SM can hold by their shared memory (228 KB, 1 KB of it reserved per
        block) and threads (2048): the kernel's launch bounds ask ptxas for as many."""
        return max(1, min(SM_SHARED // (self.smem_bytes(dtype) + 1024),
                          2048 // (32 * self.nty)))

    @property
    def kept(self) -> float:
        """The share of the block's cells it stores."""
        return (self.tx - 2 * self.bt) * (self.ty - 2 * self.bt) / (self.tx * self.ty)

    def blocks(self, dims) -> int:
        (z, y, x) = dims
        return (-(-(z.upper - z.lower + 1) // self.sl) * -(-(y.upper - y.lower + 1)
                // (self.ty - 2 * self.bt)) * -(-(x.upper - x.lower + 1) // (self.tx - 2 * self.bt)))


def kernel_source(layout: Layout, dtype: str) -> str:
    """The plane-queue kernel ``pq_kernel`` of ``layout``, with the generated kernels'
    parameters (the buffers, then n0..n2 and each dimension's interior bounds)."""
    c = [f"(real){v}" for v in COEFFICIENTS]
    return f"""// scripts/plane_queue.py: star3d1r with each level's planes in shared memory
typedef {dtype} real;
#define TX {layout.tx}
#define TY {layout.ty}
#define NTY {layout.nty}
#define BT {layout.bt}
#define MIN_BLOCKS {layout.blocks_per_sm(dtype)}
#define SL {layout.sl}
#define RING {RING}
#define CX (TX / 32)
#define CY (TY / NTY)
#define PX (TX + 2)
#define PLANE_CELLS (PX * (TY + 2))

// the update in the C program's order (a sum of products from the left)
__device__ __forceinline__ real update(real zm, real ym, real xm, real cc, real xp, real yp, real zp)
{{
  return (((((({c[0]} * zm + {c[1]} * ym) + {c[2]} * xm) + {c[3]} * cc) + {c[4]} * xp)
          + {c[5]} * yp) + {c[6]} * zp);
}}

struct Cells {{
  int at[CY][CX];   // the cell's index in a ring plane
  int off[CY][CX];  // its offset in a grid plane (0 outside the array)
  bool in_array[CY][CX], interior[CY][CX], stores[CY][CX];
}};

// ring plane of level L (0 .. BT - 1) holding plane p: its slot is p & 3, so with the
// step's plane s = base + K (base a multiple of RING) every slot is a constant
#define RING_PLANE(L, K) (sm + ((L) * RING + ((K) & (RING - 1))) * PLANE_CELLS)

// RING steps from plane base: level 0 loads plane s, level L computes plane s - 2L from
// level L - 1's ring, the last level stores plane s - 2 BT; one barrier a step. ZPLAIN:
// every plane of the steps is inside its level's range and interior (no range checks);
// XYPLAIN: every cell of the block is interior (no per-cell selects).
template <bool ZPLAIN, bool XYPLAIN>
__device__ __forceinline__ void iteration(
    int base, real *sm, const real *__restrict__ src, real *__restrict__ dst,
    const real *bnd_even, const real *bnd_odd, const Cells &c, long long plane, int S0, int S1,
    int ld_lo, int ld_hi, int lo0, int hi0, int n0)
{{
#pragma unroll
  for (int k = 0; k < RING; ++k) {{
    const int s = base + k;
    if (ZPLAIN || (s >= ld_lo && s <= ld_hi)) {{
      const bool edge = !ZPLAIN && (s < lo0 || s > hi0);
      const long long pb = (long long)s * plane;
      real *const out = RING_PLANE(0, k);
#pragma unroll
      for (int j = 0; j < CY; ++j)
#pragma unroll
        for (int i = 0; i < CX; ++i) {{
          if (XYPLAIN && ZPLAIN)
            out[c.at[j][i]] = src[pb + c.off[j][i]];
          else
            out[c.at[j][i]] = c.in_array[j][i]
                ? ((edge || !c.interior[j][i]) ? bnd_even : src)[pb + c.off[j][i]] : (real)0;
        }}
    }}
#pragma unroll
    for (int L = 1; L < BT; ++L) {{
      const int p = s - 2 * L;
      if (ZPLAIN || (p >= max(S0 - BT + L, 0) && p <= min(S1 - 1 + BT - L, n0 - 1))) {{
        const bool edge = !ZPLAIN && (p < lo0 || p > hi0);
        const long long pb = (long long)p * plane;
        const real *const bnd = (L & 1) ? bnd_odd : bnd_even;
        const real *const zm = RING_PLANE(L - 1, k - 2 * L - 1);
        const real *const in = RING_PLANE(L - 1, k - 2 * L);
        const real *const zp = RING_PLANE(L - 1, k - 2 * L + 1);
        real *const out = RING_PLANE(L, k - 2 * L);
#pragma unroll
        for (int j = 0; j < CY; ++j)
#pragma unroll
          for (int i = 0; i < CX; ++i) {{
            const int a = c.at[j][i];
            real v;
            if ((XYPLAIN || c.interior[j][i]) && !edge)
              v = update(zm[a], in[a - PX], in[a - 1], in[a], in[a + 1], in[a + PX], zp[a]);
            else
              v = c.in_array[j][i] ? bnd[pb + c.off[j][i]] : (real)0;
            out[a] = v;
          }}
      }}
    }}
    const int p = s - 2 * BT;
    if (ZPLAIN || (p >= S0 && p < S1)) {{
      const long long pb = (long long)p * plane;
      const real *const zm = RING_PLANE(BT - 1, k - 2 * BT - 1);
      const real *const in = RING_PLANE(BT - 1, k - 2 * BT);
      const real *const zp = RING_PLANE(BT - 1, k - 2 * BT + 1);
#pragma unroll
      for (int j = 0; j < CY; ++j)
#pragma unroll
        for (int i = 0; i < CX; ++i) {{
          const int a = c.at[j][i];
          if (c.stores[j][i])
            dst[pb + c.off[j][i]] = update(zm[a], in[a - PX], in[a - 1], in[a], in[a + 1],
                                           in[a + PX], zp[a]);
        }}
    }}
    __syncthreads();
  }}
}}

extern "C" __global__ void __launch_bounds__(32 * NTY, MIN_BLOCKS) pq_kernel(
    const real *__restrict__ src, real *__restrict__ dst, const real *bnd_even,
    const real *bnd_odd, int n0, int n1, int n2, int lo0, int hi0, int lo1, int hi1,
    int lo2, int hi2)
{{
  extern __shared__ __align__(16) unsigned char pq_smem[];
  real *const sm = (real *)pq_smem;  // [BT][RING][TY + 2][PX]
  const int OX = TX - 2 * BT, OY = TY - 2 * BT;
  int bid = blockIdx.x;
  const int nb2 = (hi2 - lo2 + OX) / OX;
  const int b2 = bid % nb2;
  bid /= nb2;
  const int nb1 = (hi1 - lo1 + OY) / OY;
  const int b1 = bid % nb1;
  const int sb = bid / nb1;
  const int S0 = lo0 + sb * SL, S1 = min(S0 + SL, hi0 + 1);
  const int ld_lo = max(S0 - BT, 0), ld_hi = min(S1 - 1 + BT, n0 - 1);
  const long long plane = (long long)n1 * n2;
  // the block's first cell and last cell in the plane: is every cell interior?
  const int y0 = lo1 - BT + b1 * OY, x0 = lo2 - BT + b2 * OX;
  const bool block_interior = y0 >= lo1 && y0 + TY - 1 <= hi1 && x0 >= lo2 && x0 + TX - 1 <= hi2;

  Cells c;
#pragma unroll
  for (int j = 0; j < CY; ++j)
#pragma unroll
    for (int i = 0; i < CX; ++i) {{
      const int y = threadIdx.y + NTY * j, x = threadIdx.x + 32 * i;
      const int c1 = y0 + y, c2 = x0 + x;
      c.in_array[j][i] = c1 >= 0 && c1 < n1 && c2 >= 0 && c2 < n2;
      c.interior[j][i] = c1 >= lo1 && c1 <= hi1 && c2 >= lo2 && c2 <= hi2;
      c.stores[j][i] = c.interior[j][i] && y >= BT && y < TY - BT && x >= BT && x < TX - BT;
      c.at[j][i] = (y + 1) * PX + x + 1;
      c.off[j][i] = c.in_array[j][i] ? c1 * n2 + c2 : 0;
    }}

  // steps from level 0's first plane (rounded down to a multiple of RING) to the last
  // level's last; the middle ones with every plane inside its level's range
  int base = (S0 - BT) & ~(RING - 1);
  const int last = S1 - 1 + 2 * BT;
  const int plain_lo = S0 + 2 * BT, plain_hi = min(S1 - 1 + BT, hi0) - (RING - 1);
#define PQ_ARGS base, sm, src, dst, bnd_even, bnd_odd, c, plane, S0, S1, ld_lo, ld_hi, lo0, hi0, n0
  for (; base < plain_lo && base <= last; base += RING)
    iteration<false, false>(PQ_ARGS);
  if (block_interior)
    for (; base <= plain_hi; base += RING)
      iteration<true, true>(PQ_ARGS);
  else
    for (; base <= plain_hi; base += RING)
      iteration<true, false>(PQ_ARGS);
  for (; base <= last; base += RING)
    iteration<false, false>(PQ_ARGS);
#undef PQ_ARGS
}}
"""


@dataclass
class Built:
    path: str
    registers: int
    spills: bool

    def registers_text(self) -> str:
        """The registers as the tables give them: ``64``, or ``64 (spills)``."""
        return f"{self.registers}{' (spills)' if self.spills else ''}"


def build(source: str, exact: bool, folder: str, name: str, kernel: str = "pq_kernel") -> Built:
    """nvcc -cubin of ``source`` with the benchmarks' flags (or the exact ones), as the
    generated kernels are built (:func:`an5dpy.cuda.runtime.compile_cubin`); the registers
    and spills of its ``kernel``."""
    from an5dpy.cuda.runtime import BuildOptions, compile_cubin
    cu = os.path.join(folder, f"{name}.cu")
    with open(cu, "w") as f:
        f.write(source)
    cubin = compile_cubin(cu, BuildOptions(exact=exact))
    res = cubin.kernel(kernel)
    return Built(cubin.path, res.registers, bool(res.spills))


class Stencil:
    """star3d1r of c_inputs/ in one element type: its program and analysis."""

    def __init__(self, dtype: str):
        from an5dpy.driver import load
        self.dtype = dtype
        self.program, self.info = load(os.path.join(REPO, "c_inputs", "star3d1r.c"),
                                       (("SB_TYPE", dtype),))

    def env(self, size: int, steps: int) -> dict:
        from an5dpy.check.reference import resolve_params
        return resolve_params(self.program, {"compsize": size, "timestep": steps})

    def generated(self, plan, exact: bool, folder: str):
        """``plan``'s generated kernels built: their render model and cubin."""
        from an5dpy.cuda.runtime import BuildOptions, build_kernels
        return build_kernels(self.info, plan, "star3d1r", BuildOptions(exact=exact),
                             directory=tempfile.mkdtemp(dir=folder))


class QueueRunner:
    """Runs a program with the plane-queue kernel for its full launches and ``rest``'s
    generated kernels (a CupyRunner of a plan of the same bT) for the others."""

    def __init__(self, layout: Layout, built: Built, rest, dtype: str):
        import cupy
        self.layout, self.rest, self.built = layout, rest, built
        self.fn = cupy.RawModule(path=built.path).get_function("pq_kernel")
        self.smem = layout.smem_bytes(dtype)
        self.fn.max_dynamic_shared_size_bytes = self.smem

    def run(self, grid, env) -> None:
        from an5dpy.blocking.plan import launch_plan
        from an5dpy.cuda.runtime import grid_extents, launch_args
        info = self.rest.info
        dims = grid_extents(info, env)
        sizes = launch_args(self.rest.signature, info, dims, env, {})
        blocks = self.layout.blocks(dims)
        for launch in launch_plan(info.time.steps(env), self.layout.bt,
                                  info.time.start_buffer(env)):
            if launch.degree != self.layout.bt:
                self.rest.launch(launch, grid, dims, sizes)
                continue
            args = (grid[launch.source], grid[launch.source ^ 1], grid[launch.boundary_even],
                    grid[launch.boundary_even ^ 1], *sizes)
            self.fn((blocks,), (32, self.layout.nty), args, shared_mem=self.smem)


def same_bits(a, b) -> bool:
    """Equal bit for bit, NaNs equal whatever their sign or payload
    (:func:`an5dpy.check.verify.same_values`, the rule ``an5d verify`` applies)."""
    from an5dpy.check.verify import same_values
    return a.shape == b.shape and a.dtype == b.dtype and bool(same_values(a, b).all())


def same_run(reference, candidate, info, env, dtype: str, seed: int, pick=lambda g: g) -> bool:
    """Whether ``candidate`` leaves the same bits as ``reference`` after both run ``env``
    from the same random grid (seeded ``seed``), compared where ``pick`` says (default:
    the whole grid)."""
    import cupy
    from an5dpy.perf.bench import device_grid
    start = device_grid(info, env, dtype, seed=seed)
    want, got = start.copy(), start.copy()
    reference.run(want, env)
    candidate.run(got, env)
    return same_bits(cupy.asnumpy(pick(want)), cupy.asnumpy(pick(got)))


class Builds:
    """The check's and the timing's builds, made in parallel on the CPUs before any run:
    the plane-queue kernels (:func:`build`) and the generated kernels of 32x32 plans of
    each bT (one per element type, bT and exactness)."""

    def __init__(self, folder: str):
        import concurrent.futures
        self.folder = folder
        self.pool = concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 4)
        self.stencils: dict[str, Stencil] = {}
        self.futures: dict = {}
        self.runners: dict = {}

    def stencil(self, dtype: str) -> Stencil:
        if dtype not in self.stencils:
            self.stencils[dtype] = Stencil(dtype)
        return self.stencils[dtype]

    def queue(self, layout: Layout, dtype: str, exact: bool):
        key = ("queue", layout, dtype, exact)
        if key not in self.futures:
            name = f"pq{len(self.futures)}"
            self.futures[key] = self.pool.submit(build, kernel_source(layout, dtype), exact,
                                                 self.folder, name)
        return self.futures[key]

    def generated(self, plan, exact: bool):
        """Start building ``plan``'s generated kernels (once); ``plan`` back."""
        key = ("generated", plan, exact)
        if key not in self.futures:
            st = self.stencil(plan.dtype)
            self.futures[key] = self.pool.submit(st.generated, plan, exact, self.folder)
        return plan

    def runner(self, plan, exact: bool):
        """A CupyRunner of ``plan``'s generated kernels, made here (not in a build thread)
        once their build is done."""
        from an5dpy.cuda.runtime import CupyRunner
        key = ("generated", self.generated(plan, exact), exact)
        if key not in self.runners:
            model, cubin = self.futures[key].result()
            self.runners[key] = CupyRunner(self.stencil(plan.dtype).info, plan, cubin,
                                           model.prefix, model.signature)
        return self.runners[key]

    def rest(self, bt: int, dtype: str, exact: bool):
        """The 32x32 plan of ``bt`` whose kernels run a layout's shorter launches, its
        build started."""
        from an5dpy.blocking.plan import make_plan
        return self.generated(make_plan(self.stencil(dtype).info, bt, bs=(32, 32),
                                        dtype=dtype), exact)


#: The sizes (compsize) and stream lengths the check runs each layout at.
CHECK_SIZES = ((29, 7), (45, 16), (70, None))


def check(layouts, dtypes, builds: Builds) -> list[str]:
    """Each layout against the generated kernels, built exactly, after every step count
    from 1 to 3 bT + 1 at odd sizes and short stream blocks: the failures."""
    from dataclasses import replace
    cases = [(dtype, replace(layout, sl=sl or layout.sl), size) for dtype in dtypes
             for layout in layouts if layout.smem_bytes(dtype) <= SMEM_LIMIT
             for size, sl in CHECK_SIZES]
    jobs = [(dtype, small, size, builds.queue(small, dtype, True),
             builds.rest(small.bt, dtype, True)) for dtype, small, size in cases]
    failures = []
    for dtype, small, size, queue_build, rest in jobs:
        st = builds.stencil(dtype)
        reference = builds.runner(rest, True)
        queue = QueueRunner(small, queue_build.result(), reference, dtype)
        for steps in range(1, 3 * small.bt + 2):
            if not same_run(reference, queue, st.info, st.env(size, steps), dtype, steps):
                failures.append(f"{dtype} {small} size {size} steps {steps}")
        print(f"checked {dtype} {small} at size {size}", flush=True)
    return failures


#: The tuned plans of artifact/H200/table5.md these layouts are timed against.
TUNED = {"float": dict(bt=4, bs=(32, 32), sl=128, coarsen=1, barriers="level"),
         "double": dict(bt=4, bs=(32, 64), sl=128, coarsen=2, barriers="step")}


def time_it(run, info, env_of):
    """GFLOP/s of ``run`` as the artifact times a plan: a probe, then a run of about 0.2 s
    of ``env_of(steps)``'s steps (full launches), the median of two after a warm-up."""
    from an5dpy.perf.bench import gflops, median, time_runs
    probe = env_of(20)
    t = time_runs(lambda: run(probe), 1, 1)[0] / 20
    steps = max(20, min(1000, math.ceil(0.2 / max(t, 1e-9))))
    env = env_of(steps)
    return gflops(info, env, median(time_runs(lambda: run(env), 2, 1)))


def best_of_rounds(candidates: dict, grid, info, env, repeats: int) -> dict[str, float]:
    """Each candidate's best GFLOP/s (:func:`time_it`) over ``repeats`` rounds that time
    every candidate in turn: ``candidates`` maps a name to (runner, bT, ...), whose runs
    are of a step count of whole launches of that bT (``env(steps)``)."""
    import cupy
    best = {name: 0.0 for name in candidates}
    for _ in range(repeats):
        for name, (runner, bt, *_) in candidates.items():
            def env_of(steps, bt=bt):
                return env(bt * math.ceil(steps / bt))
            best[name] = max(best[name], time_it(lambda e, r=runner: r.run(grid, e), info,
                                                 env_of))
        cupy.cuda.Device().synchronize()
    return best


def timed_against_first(candidates: dict, info, env, dtype: str, repeats: int
                        ) -> tuple[dict[str, float], float]:
    """:func:`best_of_rounds` of ``candidates`` on one random grid of the paper's 512 cells
    a side (``env(size, steps)``), and the first candidate's GFLOP/s, which the tables
    divide the others by."""
    from an5dpy.perf.bench import device_grid
    grid = device_grid(info, env(512, 20), dtype)
    best = best_of_rounds(candidates, grid, info, lambda steps: env(512, steps), repeats)
    return best, best[next(iter(candidates))]


def measure(layouts, dtypes, repeats: int, builds: Builds) -> list[dict]:
    from an5dpy.blocking.plan import make_plan
    plans = {}
    for dtype in dtypes:
        st = builds.stencil(dtype)
        t = dict(TUNED[dtype])
        plans[dtype] = make_plan(st.info, t.pop("bt"), t.pop("bs"), dtype=dtype, **t)
        builds.generated(plans[dtype], False)
        for layout in layouts:
            if layout.smem_bytes(dtype) <= SMEM_LIMIT:
                builds.queue(layout, dtype, False)
                builds.rest(layout.bt, dtype, False)
    rows = []
    for dtype in dtypes:
        st = builds.stencil(dtype)
        tuned_plan = plans[dtype]
        candidates = {"tuned " + tuned_plan.describe():
                      (builds.runner(tuned_plan, False), tuned_plan.bt, None)}
        for layout in layouts:
            if layout.smem_bytes(dtype) > SMEM_LIMIT:
                print(f"skipped {dtype} {layout}: {layout.smem_bytes(dtype)} bytes of shared "
                      f"memory")
                continue
            built = builds.queue(layout, dtype, False).result()
            rest = builds.runner(builds.rest(layout.bt, dtype, False), False)
            candidates[f"queue {layout}"] = (QueueRunner(layout, built, rest, dtype),
                                             layout.bt, built)
        best, base = timed_against_first(candidates, st.info, st.env, dtype, repeats)
        for name, (runner, bt, built) in candidates.items():
            regs_text = built.registers_text() if built else "-"
            kept = Layout.parse(name.split()[1]).kept if built else None
            rows.append({"dtype": dtype, "case": name, "gflops": best[name],
                         "ratio": best[name] / base, "registers": regs_text,
                         "kept": kept})
            print(f"{dtype:6s} {name:70s} {best[name]:9,.0f} {best[name] / base:6.3f} "
                  f"regs {regs_text}", flush=True)
    return rows


def render(rows, gpu: str) -> str:
    lines = [f"| dtype | kernel | GFLOP/s on {gpu} | / tuned | cells kept | registers |",
             "|---|---|---:|---:|---:|---|"]
    for r in rows:
        kept = f"{r['kept']:.0%}" if r["kept"] is not None else "-"
        lines.append(f"| {r['dtype']} | {r['case']} | {r['gflops']:,.0f} | {r['ratio']:.3f} | "
                     f"{kept} | {r['registers']} |")
    return "\n".join(lines) + "\n"


DEFAULT_LAYOUTS = ("64x32:32:4", "64x32:16:4", "64x48:16:4", "96x32:32:4", "64x64:32:3",
                   "64x32:32:5", "32x32:16:4", "128x32:32:3")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layouts", nargs="+", default=[Layout.parse(t) for t in DEFAULT_LAYOUTS],
                    type=Layout.parse)
    ap.add_argument("--dtypes", nargs="+", default=["float", "double"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--source", type=Layout.parse, help="print one layout's CUDA source and stop")
    ap.add_argument("--out", help="write the table (markdown) here")
    args = ap.parse_args(argv)
    if args.source:
        print(kernel_source(args.source, args.dtypes[0]))
        return 0
    import cupy
    builds = Builds(tempfile.mkdtemp(prefix="plane-queue-"))
    if not args.no_check:
        failures = check(args.layouts, args.dtypes, builds)
        for f in failures:
            print("DIFFERS:", f)
        print(f"check: {len(failures)} failures", flush=True)
        if failures or args.check_only:
            return 1 if failures else 0
    gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    table = render(measure(args.layouts, args.dtypes, args.repeats, builds), gpu)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
