#!/usr/bin/env python3
"""What a barrier costs in the kernels' loop shape on the present GPU: block against cluster.

    python scripts/cluster_barrier.py [--iterations 4000] [--blocks-per-sm 32] [--repeats 3]
    python scripts/cluster_barrier.py --source    # the CUDA source it builds (no GPU needed)

Every variant runs the same loop, the shape of a generated kernel's step
(templates/kernel.cu.j2) with one cell per thread: a block of 32x32 threads writes its
cells to shared memory, waits at a barrier, reads the four in-plane neighbours and
updates the cell with a chain of 7 multiply-adds; two shared buffers in turn, so that one
barrier an iteration is enough. The variants differ in the barrier (__syncthreads or a
thread-block cluster's) and in where the neighbours of the block's edge cells come from:

* ``__syncthreads``: the block's own barrier; the edge cells read the block's zero halo.
* cluster of 2 or 4, local reads: the cluster's barrier (``barrier.cluster`` arrive and
  wait) in place of __syncthreads, the same reads; what a plan whose blocks exchange
  halos through distributed shared memory pays for the wider barrier alone.
* cluster of 2, remote: the cells of the block's x edges read their neighbours from the
  other block of the cluster (distributed shared memory, ``ld.shared::cluster``).
* cluster of 4, remote: the 4 blocks as 2x2, the cells of both x and y edges reading
  from the neighbour blocks.

The source is built with nvcc (``-O3 -cubin``, the present GPU's ``-arch``; clusters need
sm_90 or newer) and each kernel is timed with CUDA events over a grid of ``--blocks-per-sm``
blocks per SM (rounded up to a multiple of 4, whole clusters), the variants in turn, the
best of ``--repeats``. The table gives each variant's time, its cell-iterations per second
and its time over __syncthreads'. The local-read variants compute what __syncthreads'
does: a result that differs from it is marked.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

#: The benchmark's kernels: ``run<MODE>`` of each, and its cluster size as __cluster_dims__.
SOURCE = r"""// scripts/cluster_barrier.py: the cost of a barrier in the kernels' loop shape
#define SIDE 32  // a block of SIDE x SIDE threads, one cell each

__device__ __forceinline__ unsigned cluster_rank()
{
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

// the cluster's barrier: release the block's shared writes, acquire the others'
__device__ __forceinline__ void cluster_barrier()
{
  asm volatile("barrier.cluster.arrive.release.aligned;\n"
               "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// the value at `p` of this block's shared memory, read from block `rank` of the cluster
__device__ __forceinline__ float remote_load(const float *p, unsigned rank)
{
  unsigned local = (unsigned)__cvta_generic_to_shared(p), remote;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
}

// MODE 0: __syncthreads, local reads; 1: cluster barrier, local reads; 2: cluster barrier,
// the x-edge cells read the other block of a cluster of 2; 3: cluster barrier, a cluster of
// 4 as 2x2 blocks (rank bit 0: x, bit 1: y), the x- and y-edge cells read the neighbours
template <int MODE>
__device__ __forceinline__ void barrier()
{
  if (MODE == 0) __syncthreads(); else cluster_barrier();
}

template <int MODE>
__device__ void run(float *out, int iterations)
{
  __shared__ float cells[2][SIDE + 2][SIDE + 2];  // two buffers in turn, each with a halo
  const int x = threadIdx.x, y = threadIdx.y;
  float c = 1.0f + 1e-3f * (x + SIDE * y), z0 = c, z1 = 0.5f * c;
  const unsigned me = MODE >= 1 ? cluster_rank() : 0u;
  // the halo the local reads of the edge cells meet: zero, so every result is defined
  for (int b = 0; b < 2; ++b) {
    if (x == 0) cells[b][y + 1][0] = 0.0f;
    if (x == SIDE - 1) cells[b][y + 1][SIDE + 1] = 0.0f;
    if (y == 0) cells[b][0][x + 1] = 0.0f;
    if (y == SIDE - 1) cells[b][SIDE + 1][x + 1] = 0.0f;
  }
  barrier<MODE>();
  for (int i = 0; i < iterations; ++i) {
    const int b = i & 1;
    cells[b][y + 1][x + 1] = c;
    barrier<MODE>();
    float w = cells[b][y + 1][x], e = cells[b][y + 1][x + 2];
    float n = cells[b][y][x + 1], s = cells[b][y + 2][x + 1];
    if (MODE >= 2) {
      if (x == 0) w = remote_load(&cells[b][y + 1][SIDE], me ^ 1u);
      if (x == SIDE - 1) e = remote_load(&cells[b][y + 1][1], me ^ 1u);
    }
    if (MODE == 3) {
      if (y == 0) n = remote_load(&cells[b][SIDE][x + 1], me ^ 2u);
      if (y == SIDE - 1) s = remote_load(&cells[b][1][x + 1], me ^ 2u);
    }
    float v = 0.11f * z0;
    v = fmaf(0.12f, w, v);
    v = fmaf(0.13f, n, v);
    v = fmaf(0.14f, c, v);
    v = fmaf(0.15f, e, v);
    v = fmaf(0.16f, s, v);
    v = fmaf(0.17f, z1, v);
    z0 = z1;
    z1 = c;
    c = v;
  }
  // no block may leave while another of its cluster can still read its shared memory
  if (MODE >= 1) cluster_barrier();
  out[blockIdx.x * SIDE * SIDE + y * SIDE + x] = c;
}

extern "C" __global__ void __launch_bounds__(1024, 2)
sync_threads_local(float *out, int iterations) { run<0>(out, iterations); }
extern "C" __global__ void __launch_bounds__(1024, 2) __cluster_dims__(2, 1, 1)
cluster2_local(float *out, int iterations) { run<1>(out, iterations); }
extern "C" __global__ void __launch_bounds__(1024, 2) __cluster_dims__(2, 1, 1)
cluster2_remote_x(float *out, int iterations) { run<2>(out, iterations); }
extern "C" __global__ void __launch_bounds__(1024, 2) __cluster_dims__(4, 1, 1)
cluster4_local(float *out, int iterations) { run<1>(out, iterations); }
extern "C" __global__ void __launch_bounds__(1024, 2) __cluster_dims__(4, 1, 1)
cluster4_remote_xy(float *out, int iterations) { run<3>(out, iterations); }
"""

#: Threads of a block (SIDE x SIDE in the source).
SIDE = 32
#: The largest cluster: the grid is a whole number of them.
LARGEST_CLUSTER = 4


@dataclass(frozen=True)
class Variant:
    kernel: str  # its name in SOURCE
    description: str
    local: bool  # reads what __syncthreads' variant reads, so must compute the same


#: In the table's order; the first is the one the others are measured against.
VARIANTS = (
    Variant("sync_threads_local", "__syncthreads, local reads", True),
    Variant("cluster2_local", "cluster of 2 barrier, local reads", True),
    Variant("cluster2_remote_x", "cluster of 2 barrier, x edges remote", False),
    Variant("cluster4_local", "cluster of 4 barrier, local reads", True),
    Variant("cluster4_remote_xy", "cluster of 4 (2x2) barrier, x and y edges remote", False),
)


def grid_blocks(sms: int, blocks_per_sm: int) -> int:
    """``sms`` x ``blocks_per_sm`` blocks, rounded up to whole clusters of every size."""
    blocks = sms * blocks_per_sm
    return max(LARGEST_CLUSTER, -(-blocks // LARGEST_CLUSTER) * LARGEST_CLUSTER)


def build(arch: str, folder: str) -> str:
    """SOURCE built for ``arch`` (``sm_90``) in ``folder``; the cubin's path."""
    from an5dpy.cuda.runtime import run_nvcc
    source = os.path.join(folder, "cluster_barrier.cu")
    cubin = os.path.join(folder, "cluster_barrier.cubin")
    with open(source, "w") as f:
        f.write(SOURCE)
    run_nvcc([f"-arch={arch}", "-O3", "-cubin", "-o", cubin, source])
    return cubin


def measure(cubin: str, blocks: int, iterations: int, repeats: int) -> dict:
    """Each variant's best time (seconds) over ``repeats`` and whether its result is
    __syncthreads' (None: not comparable, it reads other cells)."""
    import cupy
    module = cupy.RawModule(path=cubin)
    out = cupy.zeros(blocks * SIDE * SIDE, cupy.float32)
    args = (out, cupy.int32(iterations))
    best = {v.kernel: float("inf") for v in VARIANTS}
    results = {}
    for _ in range(repeats):
        for variant in VARIANTS:  # in turn, so that a slow spell of the GPU meets them all
            kernel = module.get_function(variant.kernel)
            kernel((blocks,), (SIDE, SIDE, 1), args)  # warm: the module loaded, clocks up
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            kernel((blocks,), (SIDE, SIDE, 1), args)
            end.record()
            end.synchronize()
            best[variant.kernel] = min(best[variant.kernel],
                                       cupy.cuda.get_elapsed_time(start, end) * 1e-3)
            results[variant.kernel] = out.copy()
    reference = results[VARIANTS[0].kernel]
    same = {v.kernel: bool(cupy.array_equal(results[v.kernel], reference)) if v.local else None
            for v in VARIANTS}
    return {"seconds": best, "same": same}


def render(measured: dict, blocks: int, iterations: int) -> str:
    """The markdown table: each variant's time, cell-iterations per second and its time
    over __syncthreads'."""
    seconds, same = measured["seconds"], measured["same"]
    base = seconds[VARIANTS[0].kernel]
    cell_iterations = blocks * SIDE * SIDE * iterations
    lines = ["| variant | ms | G cell-iterations/s | time over __syncthreads |",
             "|---|---|---|---|"]
    for v in VARIANTS:
        t = seconds[v.kernel]
        mark = " (result differs from __syncthreads')" if same[v.kernel] is False else ""
        lines.append(f"| {v.description}{mark} | {t * 1e3:.2f} | "
                     f"{cell_iterations / t / 1e9:,.0f} | {t / base:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=4000,
                    help="loop iterations of every thread (default 4000)")
    ap.add_argument("--blocks-per-sm", type=int, default=32,
                    help="blocks of the grid per SM (default 32; rounded up to a multiple of 4)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="timed runs of each kernel, the best kept (default 3)")
    ap.add_argument("--source", action="store_true",
                    help="print the CUDA source and stop (no GPU needed)")
    args = ap.parse_args(argv)
    for name in ("iterations", "blocks_per_sm", "repeats"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.source:
        sys.stdout.write(SOURCE)
        return 0
    import cupy
    from an5dpy.cuda.runtime import device_arch, device_name
    arch = device_arch()
    if int(arch.removeprefix("sm_")) < 90:
        raise SystemExit(f"thread-block clusters need sm_90 or newer; this GPU is {arch}")
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    blocks = grid_blocks(int(props["multiProcessorCount"]), args.blocks_per_sm)
    with tempfile.TemporaryDirectory(prefix="cluster-barrier-") as folder:
        measured = measure(build(arch, folder), blocks, args.iterations, args.repeats)
    print(f"{device_name()} ({arch}): {blocks} blocks of {SIDE}x{SIDE} threads, "
          f"{args.iterations} iterations, best of {args.repeats}\n")
    print(render(measured, blocks, args.iterations))
    return 0 if all(s is not False for s in measured["same"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
