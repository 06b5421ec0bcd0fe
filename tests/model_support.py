"""Helpers the model's tests share: a benchmark's program and analysis, the benchmark
harness' grid, a prediction from plan parameters, and a block-by-block reference for the
grouped stream counts."""

from __future__ import annotations

import os
from typing import Sequence

from an5dpy.blocking.plan import DimExtent, make_plan
from an5dpy.blocking.trace import BlockRanges
from an5dpy.driver import load
from an5dpy.ir import StencilInfo
from an5dpy.perf.counts import level_planes
from an5dpy.perf.gpus import GpuSpec, get_gpu
from an5dpy.perf.model import Prediction, Registers, predict

from paths import C_INPUTS, DATA


def load_benchmark(name: str, dtype: str = "float"):
    """The program and analysis of ``c_inputs/NAME.c`` with ``SB_TYPE`` = ``dtype``."""
    return load(os.path.join(C_INPUTS, f"{name}.c"), defines=(("SB_TYPE", dtype),))


def load_multi(name: str) -> StencilInfo:
    """The analysis of ``tests/data/multi/NAME.c`` (a time step of several statements)."""
    return load(os.path.join(DATA, "multi", f"{name}.c"))[1]


def benchmark_grid(info: StencilInfo, n: int) -> tuple[DimExtent, ...]:
    """An interior of ``n`` cells per dimension with the stencil's reach as boundary
    (the benchmark harness' layout: ``dimsize = compsize + 2 * rad``)."""
    return tuple(DimExtent(d.reach_lo, d.reach_lo + n - 1, n + d.reach_lo + d.reach_hi)
                 for d in info.dims)


def predict_config(info: StencilInfo, gpu: GpuSpec | str, sizes, steps: int | None = None,
                   *, bt: int = 4, bs: Sequence[int] | None = None, sl: int | None = None,
                   opt: str | None = None, dtype: str | None = None,
                   regs: Registers = None, halo_computes: bool = False) -> Prediction:
    """:func:`predict` for a plan given by its parameters (``bs`` in array order),
    checked against the GPU's limits."""
    spec = get_gpu(gpu)
    plan = make_plan(info, bt=bt, bs=tuple(bs) if bs is not None else None, sl=sl, opt=opt,
                     dtype=dtype, limits=spec.limits())
    return predict(info, plan, spec, sizes, steps, regs, halo_computes)


def stream_counts_direct(stream: DimExtent, sl: int | None, degree: int, r: int
                         ) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """:func:`stream_counts` block by block, without grouping (a reference for tests)."""
    length = stream.length
    if length == 0:
        return 0, (0,) * (degree + 1), (0,) * (degree + 1)
    sl_eff = sl if sl is not None else length
    n = -(-length // sl_eff)
    interior = [0] * (degree + 1)
    boundary = [0] * (degree + 1)
    for b in range(n):
        S0 = stream.lower + b * sl_eff
        S1 = min(S0 + sl_eff, stream.upper + 1)
        rng = BlockRanges.of(S0, S1, stream.lower, stream.upper, degree, r)
        for T in range(degree + 1):
            inner, outer = level_planes(rng, T)
            interior[T] += inner
            boundary[T] += outer
    return n, tuple(interior), tuple(boundary)




def star_fields(names: Sequence[str], dtype: str = "float") -> StencilInfo:
    """A 2D 5-point star (radius 1) on each field of ``names``, double-buffered, one
    statement per field in one nest and no field reading another: one name gives the
    one-statement form, several the same stencil once per field (sizes: ``n``, ``T``)."""
    k = "0.2f" if dtype == "float" else "0.2"
    decls = ", ".join(f"{dtype} {f}[2][n][n]" for f in names)
    body = "\n".join(
        f"        {f}[(t+1)%2][i][j] = {k} * ({f}[t%2][i-1][j] + {f}[t%2][i+1][j]"
        f" + {f}[t%2][i][j] + {f}[t%2][i][j-1] + {f}[t%2][i][j+1]);" for f in names)
    text = (f"void fields(int n, int T, {decls})\n{{\n  int t, i, j;\n#pragma scop\n"
            f"  for (t = 0; t < T; t++)\n    for (i = 1; i < n - 1; i++)\n"
            f"      for (j = 1; j < n - 1; j++) {{\n{body}\n      }}\n#pragma endscop\n}}\n")
    return load(f"star_fields_{len(names)}.c", text=text)[1]
