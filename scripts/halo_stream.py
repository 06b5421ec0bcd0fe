#!/usr/bin/env python3
"""A bT 1 kernel for 3D star stencils whose computing threads also load the block's halo,
tried by hand before the generator built it (``--halo loaded``, templates/halo_loaded.cu.j2,
artifact/H200/halo_loaded.md); kept as the record of the layouts it measured.

    python scripts/halo_stream.py                           # check, then time (a GPU)
    python scripts/halo_stream.py --check-only              # bit-for-bit checks alone
    python scripts/halo_stream.py --source star3d4r:32x4x4  # the CUDA source of one layout

The generated kernels (templates/kernel.cu.j2) give every cell of a block, its halo
included, a thread of its own; at bT 1 the halo threads only load and share their cell.
A 32x16 block of star3d3r (radius 3) keeps 10 of every 16 lanes in x and 10 of 16 rows
computing, and the tuned bT 1 plans of star3d3r and star3d4r (artifact/H200/table5.md)
are such blocks. The kernel written here (:func:`kernel_source`) is the classic 2.5D
streaming kernel instead:

* a block of ``bx x by`` threads computes ``bx x (by * cy)`` cells of the plane (x
  contiguous), thread ``(tx, ty)`` the cells ``(tx, ty + by j)``, j < cy; every lane
  computes;
* each cell keeps its column of 2r + 1 planes in registers; each step it loads the plane
  r ahead of the one it computes (issued a step early) and writes its centre to shared
  memory;
* the block's in-plane halo (r rows above and below, r columns left and right) is loaded
  by the block's threads in turn, a step ahead, and written to the same shared plane;
* two shared planes alternate, so one barrier per step suffices;
* the update is the C program's sum, term by term in its order (read from
  c_inputs/STENCIL.c), so exact builds compute the C program's bits.

Every launch is of degree 1, so each launch's boundary buffer is its source (an5dpy's
launch plan) and the kernel reads every cell from its source. ``--check`` builds it and
the generated kernels of the row's tuned plan exactly (``-fmad=false``, no fast math)
and compares the buffers that hold the result after 1 to 4 steps at odd sizes and short
stream blocks, bit for bit. The timing builds use the benchmarks' flags (``-O3
--use_fast_math``) and the artifact's method (scripts/plane_queue.py's ``time_it`` and
``best_of_rounds``: the paper's 512^3, runs of about 0.2 s, CUDA events), the row's tuned
plan and each layout in turn, ``--repeats`` times; the table gives the best of each and
its ratio to the tuned plan.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from plane_queue import (Built, build as build_kernel, same_run,  # noqa: E402
                         timed_against_first)

#: The rows tried and the tuned plans this kernel was measured against
#: (artifact/H200/halo_stream.md: table5.md's plans then, with halo threads; star3d3r and
#: star3d4r have since been tuned with generated kernels of this kind, ``--halo loaded``),
#: register budget apart; ``bs`` in the plan's order (dimension 1, then the contiguous
#: one: table5's "32x16" is (16, 32)).
TUNED = {
    ("star3d3r", "float"): dict(bt=1, bs=(16, 32), sl=None, coarsen=2, barriers="step"),
    ("star3d3r", "double"): dict(bt=1, bs=(32, 64), sl=64, coarsen=2, barriers="step"),
    ("star3d4r", "float"): dict(bt=1, bs=(32, 32), sl=128, coarsen=4, barriers="step"),
    ("star3d4r", "double"): dict(bt=1, bs=(32, 64), sl=86, coarsen=2, barriers="step"),
    ("star3d2r", "float"): dict(bt=3, bs=(32, 32), sl=128, coarsen=1, barriers="step"),
    ("star3d2r", "double"): dict(bt=2, bs=(32, 32), sl=86, coarsen=1, barriers="level"),
}
#: Their register budgets (None: none).
TUNED_REGS = {("star3d3r", "float"): 32, ("star3d3r", "double"): None,
              ("star3d4r", "float"): 64, ("star3d4r", "double"): None,
              ("star3d2r", "float"): 32, ("star3d2r", "double"): 32}

LAYOUT = re.compile(r"(\d+)x(\d+)x(\d+)(?::(\d+))?(u?)(c?)")
TERM = re.compile(r"([0-9.]+f?)\s*\*\s*A\[t%2\]\[i([+-]\d+)?\]\[j([+-]\d+)?\]\[k([+-]\d+)?\]")


def update_terms(stencil: str) -> list[tuple[str, int, int, int]]:
    """The C program's update as (coefficient literal, dz, dy, dx) terms in source order,
    for a star: every term moves along one dimension at most."""
    with open(os.path.join(REPO, "c_inputs", stencil + ".c")) as f:
        text = f.read()
    scop = text[text.index("#pragma scop"):text.index("#pragma endscop")]
    terms = [(c, int(dz or 0), int(dy or 0), int(dx or 0))
             for c, dz, dy, dx in TERM.findall(scop)]
    if not terms or any(sum(1 for o in t[1:] if o) > 1 for t in terms):
        raise SystemExit(f"{stencil}: not a sum of star terms")
    return terms


@dataclass(frozen=True)
class Layout:
    """``bx x by`` threads, ``cy`` cells per thread along y (rows ``by`` apart), stream
    blocks of ``sl`` planes."""

    bx: int
    by: int
    cy: int
    sl: int = 512
    #: the streaming loop unrolled by the column's 2r + 1 planes (no register moves)
    unrolled: bool = False
    #: a thread's cells on consecutive rows (ty cy + j), so that its cells' neighbours
    #: along y among them come from its own registers; else rows ``by`` apart (ty + by j)
    consecutive: bool = False

    @staticmethod
    def parse(text: str) -> "Layout":
        """``BXxBYxCY[:SL][u][c]`` (``u``: unrolled, ``c``: consecutive rows); a block of
        whole warps, 1024 threads at most."""
        m = LAYOUT.fullmatch(text)
        if not m:
            raise ValueError(f"layout {text!r}: BXxBYxCY[:SL][u][c]")
        bx, by, cy, sl, unrolled, consecutive = m.groups()
        layout = Layout(int(bx), int(by), int(cy), int(sl or 512), bool(unrolled),
                        bool(consecutive))
        if (layout.bx % 32 or layout.bx * layout.by > 1024 or min(layout.by, layout.cy) < 1
                or layout.sl < 1):
            raise ValueError(f"layout {text!r}: BX a multiple of 32, BX x BY at most 1024")
        return layout

    def __str__(self) -> str:
        return (f"{self.bx}x{self.by}x{self.cy}:{self.sl}{'u' if self.unrolled else ''}"
                f"{'c' if self.consecutive else ''}")

    def row(self, j: int, offset: int = 0) -> str:
        """The row of a thread's cell j in its block, plus ``offset``, as C over ``ty``."""
        if self.consecutive:
            return f"{offset + j} + ty * {self.cy}"
        return f"{offset + self.by * j} + ty"

    def blocks(self, dims) -> tuple[int, int, int]:
        """Blocks along x, y and z for the interior extents of ``dims`` (z, y, x)."""
        z, y, x = (d.upper - d.lower + 1 for d in dims)
        return (-(-x // self.bx), -(-y // (self.by * self.cy)), -(-z // self.sl))


def kernel_source(stencil: str, layout: Layout, dtype: str) -> str:
    """The kernel ``hs_kernel`` of ``stencil`` in ``layout``, arguments as the generated
    kernels' (source, destination, two boundary buffers, extents and interior bounds).
    Every global access goes through a pointer that moves one plane a step, so a step's
    address arithmetic is one 64-bit add per pointer."""
    terms = update_terms(stencil)
    r = max(max(abs(o) for o in t[1:]) for t in terms)
    bx, by, cy = layout.bx, layout.by, layout.cy
    t = dtype
    rows = by * cy
    width, height = bx + 2 * r, rows + 2 * r
    halo = 2 * r * bx + 2 * r * rows
    threads = bx * by
    per_thread = -(-halo // threads)
    cells = range(cy)

    def value(term, j: int) -> str:
        _, dz, dy, dx = term
        if not dy and not dx:  # the column: this thread's own registers
            return f"col{j}[{r + dz}]"
        if not dx and layout.consecutive and 0 <= j + dy < cy:  # another of its cells
            return f"col{j + dy}[{r}]"
        return f"sm[buf][{layout.row(j, r + dy)}][{r + dx} + tx]"

    def lines(template: str) -> str:
        return "\n".join(template.format(j=j, row=layout.row(j), tile_row=layout.row(j, r))
                         for j in cells)

    def update(j: int) -> str:
        return " + ".join(f"{term[0]} * {value(term, j)}" for term in terms)

    updates = "\n".join(
        f"    const {t} v{j} = ({t})({update(j)});\n"
        f"    if (store{j}) *st{j} = v{j};\n"
        f"    st{j} += P;" for j in cells)
    return f"""/* scripts/halo_stream.py: {stencil} {dtype}, layout {layout} */
extern "C" __global__ void __launch_bounds__({threads}) hs_kernel(
    const {t} *__restrict__ src, {t} *__restrict__ dst, const {t} *bnd_even,
    const {t} *bnd_odd, int n0, int n1, int n2, int lo0, int hi0, int lo1, int hi1,
    int lo2, int hi2)
{{
  __shared__ {t} sm[2][{height}][{width}];
  const long long P = (long long)n1 * n2;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * {bx} + tx;
  const int xbase = lo2 + blockIdx.x * {bx}, ybase = lo1 + blockIdx.y * {rows};
  const int z0 = lo0 + blockIdx.z * {layout.sl}, z1 = min(z0 + {layout.sl}, hi0 + 1);
  const int x = xbase + tx;
  /* each cell: whether it is in the array (else it reads zeros) and computed, and its
     column's pointer at plane z0 - {r} */
{lines("  const int y{j} = ybase + {row};")}
{lines("  const bool in{j} = x < n2 && y{j} < n1;")}
{lines("  const bool store{j} = x <= hi2 && y{j} <= hi1;")}
{lines(f"  const {t} *ld{{j}} = src + (in{{j}} ? (long long)(z0 - {r}) * P"
        " + (long long)y{j} * n2 + x : 0);")}
{lines("  " + t + " *st{j} = dst + (long long)z0 * P + (long long)y{j} * n2 + x;")}
  /* this thread's halo cells: where in the tile, their pointer at plane z0 */
  int h_tile[{per_thread}];
  bool h_on[{per_thread}];
  const {t} *h_ld[{per_thread}];
  {t} h_next[{per_thread}];
  #pragma unroll
  for (int h = 0; h < {per_thread}; h++) {{
    const int i = tid + h * {threads};
    int row = 0, c = 0;
    if (i < {2 * r * bx}) {{  /* {r} rows above the block, then {r} below */
      const int k = i % {r * bx};
      row = k / {bx} + (i < {r * bx} ? 0 : {rows + r});
      c = {r} + k % {bx};
    }} else if (i < {halo}) {{  /* {r} columns left of the block, then {r} right */
      const int k = (i - {2 * r * bx}) % {r * rows};
      row = {r} + k / {r};
      c = k % {r} + (i - {2 * r * bx} < {r * rows} ? 0 : {bx + r});
    }}
    const int gx = xbase - {r} + c, gy = ybase - {r} + row;
    h_on[h] = i < {halo} && gx < n2 && gy < n1;
    h_tile[h] = row * {width} + c;
    h_ld[h] = src + (h_on[h] ? (long long)z0 * P + (long long)gy * n2 + gx : 0);
    h_next[h] = h_on[h] ? *h_ld[h] : ({t})0;
  }}
  /* planes z0 - {r} .. z0 + {r - 1} of each column, and the next (z0 + {r}) */
{lines("  " + t + " col{j}[" + str(2 * r + 1) + "];")}
  #pragma unroll
  for (int k = 1; k < {2 * r + 1}; k++) {{
{lines("    col{j}[k] = in{j} ? *ld{j} : (" + t + ")0;  ld{j} += P;")}
  }}
{lines("  " + t + " next{j} = in{j} ? *ld{j} : (" + t + ")0;  ld{j} += P;")}
{f"  #pragma unroll {2 * r + 1}" if layout.unrolled else "  #pragma unroll 1"}
  for (int z = z0; z < z1; z++) {{
    const int buf = z & 1;
    const bool more = z + 1 < z1;
    #pragma unroll
    for (int k = 0; k < {2 * r}; k++) {{
{lines("      col{j}[k] = col{j}[k + 1];")}
    }}
{lines("    col{j}[" + str(2 * r) + "] = next{j};")}
{lines("    if (more && in{j}) next{j} = *ld{j};  ld{j} += P;")}
{lines(f"    sm[buf][{{tile_row}}][{r} + tx] = col{{j}}[{r}];")}
    #pragma unroll
    for (int h = 0; h < {per_thread}; h++) {{
      (&sm[buf][0][0])[h_tile[h]] = h_next[h];
      h_ld[h] += P;
      if (h_on[h] && more) h_next[h] = *h_ld[h];
    }}
    __syncthreads();
{updates}
  }}
}}
"""


def build(source: str, exact: bool, folder: str, name: str) -> Built:
    """nvcc -cubin of ``source`` (:func:`plane_queue.build`), its kernel ``hs_kernel``."""
    return build_kernel(source, exact, folder, name, kernel="hs_kernel")


class Row:
    """A benchmark of c_inputs/ in one element type: program, analysis, tuned plan."""

    def __init__(self, stencil: str, dtype: str):
        from an5dpy.blocking.plan import make_plan
        from an5dpy.driver import load
        self.stencil, self.dtype = stencil, dtype
        self.program, self.info = load(os.path.join(REPO, "c_inputs", stencil + ".c"),
                                       (("SB_TYPE", dtype),))
        t = dict(TUNED[(stencil, dtype)])
        self.plan = make_plan(self.info, t.pop("bt"), t.pop("bs"), dtype=dtype, **t)
        self.regs = TUNED_REGS[(stencil, dtype)]

    def env(self, size: int, steps: int) -> dict:
        from an5dpy.check.reference import resolve_params
        return resolve_params(self.program, {"compsize": size, "timestep": steps})

    def generated(self, exact: bool, folder: str):
        from an5dpy.cuda.runtime import BuildOptions, CupyRunner, build_kernels
        model, cubin = build_kernels(self.info, self.plan, self.stencil,
                                     BuildOptions(exact=exact, maxrregcount=None),
                                     directory=tempfile.mkdtemp(dir=folder), regs=self.regs)
        return CupyRunner(self.info, self.plan, cubin, model.prefix, model.signature)


class HaloRunner:
    """Runs a program with the hand-written kernel, one launch per time step."""

    def __init__(self, row: Row, layout: Layout, built: Built, signature):
        import cupy
        self.row, self.layout, self.built, self.signature = row, layout, built, signature
        self.fn = cupy.RawModule(path=built.path).get_function("hs_kernel")

    def run(self, grid, env) -> None:
        from an5dpy.blocking.plan import grid_extents, launch_plan
        from an5dpy.cuda.runtime import launch_args
        info = self.row.info
        dims = grid_extents(info, env)
        sizes = launch_args(self.signature, info, dims, env, {})
        blocks = self.layout.blocks(dims)
        for launch in launch_plan(info.time.steps(env), 1, info.time.start_buffer(env)):
            assert launch.boundary_even == launch.source
            args = (grid[launch.source], grid[launch.source ^ 1], grid[launch.source],
                    grid[launch.source], *sizes)
            self.fn(blocks, (self.layout.bx, self.layout.by), args)


#: The sizes (compsize) and stream lengths the check runs each layout at.
CHECK_SIZES = ((29, 7), (45, 16), (70, 512))


def check(rows, layouts, folder: str) -> list[str]:
    """Each layout against the row's generated kernels, both built exactly, after 1 to 4
    steps at odd sizes and short stream blocks: the failures."""
    from dataclasses import replace
    from an5dpy.check.verify import result_buffer
    failures = []
    for row in rows:
        reference = row.generated(True, folder)
        for layout in layouts:
            for size, sl in CHECK_SIZES:
                small = replace(layout, sl=sl)
                built = build(kernel_source(row.stencil, small, row.dtype), True, folder,
                              f"check_{row.stencil}_{row.dtype}_{small}".replace(":", "_"))
                mine = HaloRunner(row, small, built, reference.signature)
                for steps in range(1, 5):
                    env = row.env(size, steps)
                    # the result's buffer: the other one holds an earlier level, which
                    # depends on the launches' degrees (a bT 3 reference of 3 steps leaves
                    # it untouched, this kernel's third launch writes step 2 there)
                    b = result_buffer(row.info, env)
                    if not same_run(reference, mine, row.info, env, row.dtype, steps,
                                    lambda grid, b=b: grid[b]):
                        failures.append(f"{row.stencil} {row.dtype} {small} size {size} "
                                        f"steps {steps}")
        print(f"checked {row.stencil} {row.dtype}", flush=True)
    return failures


def measure(rows, layouts, repeats: int, folder: str) -> list[dict]:
    out = []
    for row in rows:
        tuned = row.generated(False, folder)
        candidates = {f"tuned {row.plan.describe()}": (tuned, row.plan.bt, None)}
        for layout in layouts:
            built = build(kernel_source(row.stencil, layout, row.dtype), False, folder,
                          f"time_{row.stencil}_{row.dtype}_{layout}".replace(":", "_"))
            candidates[f"layout {layout}"] = (HaloRunner(row, layout, built, tuned.signature),
                                              1, built)
        best, base = timed_against_first(candidates, row.info, row.env, row.dtype, repeats)
        for name, (_, _, built) in candidates.items():
            regs = built.registers_text() if built else "-"
            out.append({"stencil": row.stencil, "dtype": row.dtype, "case": name,
                        "gflops": best[name], "ratio": best[name] / base, "registers": regs})
            print(f"{row.stencil} {row.dtype:6s} {name:70s} {best[name]:9,.0f} "
                  f"{best[name] / base:6.3f} regs {regs}", flush=True)
    return out


def render(rows, gpu: str) -> str:
    lines = [f"| row | kernel | GFLOP/s on {gpu} | / tuned | registers |",
             "|---|---|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['stencil']} {r['dtype']} | {r['case']} | {r['gflops']:,.0f} | "
                     f"{r['ratio']:.3f} | {r['registers']} |")
    return "\n".join(lines) + "\n"


DEFAULT_ROWS = ("star3d3r:float", "star3d3r:double", "star3d4r:float", "star3d4r:double")
DEFAULT_LAYOUTS = ("32x4x4:512", "32x4x4:512u", "32x8x4:512", "32x8x4:512u", "64x4x4:512",
                   "64x4x4:512u", "32x8x2:512", "32x8x2:512u", "64x2x4:512", "32x4x4:128")


def row_argument(text: str) -> str:
    if tuple(text.split(":")) not in TUNED:
        raise argparse.ArgumentTypeError(
            f"{text!r}: one of {', '.join(':'.join(key) for key in TUNED)}")
    return text


def source_argument(text: str) -> tuple[str, Layout]:
    """``STENCIL:LAYOUT``, a star of c_inputs/ and its layout."""
    stencil, _, layout = text.partition(":")
    if not os.path.exists(os.path.join(REPO, "c_inputs", stencil + ".c")):
        raise argparse.ArgumentTypeError(f"{stencil!r}: no such benchmark in c_inputs/")
    try:
        return stencil, Layout.parse(layout)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", nargs="+", default=list(DEFAULT_ROWS), type=row_argument,
                    help="stencil:dtype of TUNED")
    ap.add_argument("--layouts", nargs="+", default=[Layout.parse(t) for t in DEFAULT_LAYOUTS],
                    type=Layout.parse)
    ap.add_argument("--check-layouts", nargs="+", type=Layout.parse,
                    help="layouts the check runs (default: --layouts)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--source", type=source_argument,
                    help="STENCIL:LAYOUT: print its CUDA source (float) and stop")
    ap.add_argument("--out", help="write the table (markdown) here")
    args = ap.parse_args(argv)
    if args.source:
        print(kernel_source(*args.source, "float"))
        return 0
    import cupy
    folder = tempfile.mkdtemp(prefix="halo-stream-")
    rows = [Row(*text.split(":")) for text in args.rows]
    if not args.no_check:
        failures = check(rows, args.check_layouts or args.layouts, folder)
        for f in failures:
            print("DIFFERS:", f)
        print(f"check: {len(failures)} failures", flush=True)
        if failures or args.check_only:
            return 1 if failures else 0
    gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    table = render(measure(rows, args.layouts, args.repeats, folder), gpu)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
