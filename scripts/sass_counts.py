#!/usr/bin/env python3
"""Instructions per cell and level in the inner loops of plans' kernels, counted in their
SASS (nvcc and cuobjdump, no GPU): what the performance model's issue term should count.

    python scripts/sass_counts.py "star2d1r float bt=4 bs=256 sl=256" \\
        "star2d1r float bt=8 bs=256 sl=256" "star3d1r float bt=4 bs=32x32 sl=128 regs=32"

A case is a stencil of c_inputs/, its element type and the plan's settings, spelled as
``scripts/variants_compare.py --extra`` spells them (bt and bs required; sl a number or
``off``, coarsen, barriers, opt; the settings not given: no stream division, the
stencil's default mode, one cell per thread, a barrier per level op) and ``regs=N``, a
register budget. The plan's kernel of its own degree is built as the benchmarks build it
(-O3 --use_fast_math, sm_90, the budget's launch bounds) and disassembled; each loop (a
backward branch and the instructions it jumps over) is counted: instructions, barriers,
shared-memory loads and stores, global loads, and FP32/FP64 adds, multiplies and FMAs.

The inner phase handles ``unroll`` planes per iteration (the kernel's render model), so
a loop's instructions over unroll x bT x cells per thread are its instructions per cell
and level op. Of the loops with a barrier, the one with the fewest instructions is
reported as the inner loop: the phase of the interior blocks where the plan has one
(2D, in-plane radius up to 2), the blocks' one inner phase otherwise.

Cases that differ only in bT are fitted (least squares) to ``a + b / bT`` instructions
per cell and level: ``a`` is paid at every level op, ``b`` once per cell and streaming
step (the plane's global load and store, addresses, loop control), spread over the bT
levels.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

#: ``/*0a80*/   @!P0 FFMA R5, R4, c[0x0][0x190], R5 ;``: address, predicate, opcode.
SASS_LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)([^;]*);")
FP_OPCODES = ("FFMA", "FADD", "FMUL", "DFMA", "DADD", "DMUL")
KINDS = {"barriers": ("BAR",), "shared loads": ("LDS",), "shared stores": ("STS",),
         "global loads": ("LDG",), "FP arithmetic": FP_OPCODES}


@dataclass(frozen=True)
class Loop:
    """A loop of a kernel's SASS: its instructions' count and the counts of each kind."""

    start: int  # index of its first instruction
    length: int
    kinds: tuple[tuple[str, int], ...]

    def count(self, kind: str) -> int:
        return dict(self.kinds)[kind]


def instructions(sass: str) -> list[tuple[int, str, str]]:
    """(address, base opcode, operands) of each instruction of a disassembly."""
    out = []
    for line in sass.splitlines():
        m = SASS_LINE.match(line)
        if m:
            out.append((int(m.group(1), 16), m.group(2).split(".")[0], m.group(3)))
    return out


def loops(sass: str) -> list[Loop]:
    """Each backward branch's loop, in the order of their branches."""
    code = instructions(sass)
    index = {address: i for i, (address, _, _) in enumerate(code)}
    found = []
    for i, (address, opcode, operands) in enumerate(code):
        target = re.search(r"0x([0-9a-f]+)", operands) if opcode == "BRA" else None
        if target is None or int(target.group(1), 16) > address:
            continue
        start = index.get(int(target.group(1), 16))
        if start is None:
            continue
        body = [op for _, op, _ in code[start:i + 1]]
        found.append(Loop(start, len(body), tuple(
            (kind, sum(op in opcodes for op in body)) for kind, opcodes in KINDS.items())))
    return found


@dataclass(frozen=True)
class Case:
    stencil: str
    dtype: str
    settings: dict
    regs: int | None

    @staticmethod
    def parse(text: str) -> "Case":
        stencil, dtype, *items = text.split()
        settings = dict(item.split("=", 1) for item in items)
        regs = settings.pop("regs", None)
        return Case(stencil, dtype, settings, None if regs in (None, "none") else int(regs))

    def key_without_bt(self) -> tuple:
        return (self.stencil, self.dtype, self.regs,
                tuple(sorted((k, v) for k, v in self.settings.items() if k != "bt")))


@dataclass(frozen=True)
class Count:
    case: Case
    plan_text: str
    unroll: int
    cells_per_iteration: int  # unroll x bT x cells per thread
    registers: int | None
    spills: bool
    loops: tuple[Loop, ...]

    @property
    def inner(self) -> Loop | None:
        synced = [loop for loop in self.loops if loop.count("barriers")]
        return min(synced, key=lambda loop: loop.length) if synced else None

    def per_cell_level(self, loop: Loop, kind: str | None = None) -> float:
        return (loop.length if kind is None else loop.count(kind)) / self.cells_per_iteration


def count(case: Case, folder: str) -> Count:
    """Build the case's kernels and count the loops of its own degree's kernel."""
    from an5dpy.cuda.runtime import BuildOptions, compile_cubin
    from an5dpy.driver import generate, load
    from an5dpy.perf.tune import own_kernel
    from variants_compare import settings_plan
    program, info = load(os.path.join(REPO, "c_inputs", case.stencil + ".c"),
                         (("SB_TYPE", case.dtype),))
    plan = settings_plan(info, case.settings)
    stem = "sass_" + re.sub(r"\W", "_", case.stencil)
    kernels = generate(info, plan, stem, regs=case.regs)
    for name, body in kernels.files().items():
        with open(os.path.join(folder, name), "w") as f:
            f.write(body)
    cubin = compile_cubin(os.path.join(folder, f"{stem}_kernel.cu"),
                          BuildOptions(arch="sm_90"))
    report = own_kernel(cubin, plan)
    own = next(k for k in kernels.model.kernels if k.name.endswith(f"_kernel_d{plan.depth}"))
    sass = subprocess.run(["cuobjdump", "-sass", "-fun", own.name, cubin.path],
                          capture_output=True, text=True, check=True).stdout
    # a kernel whose computing threads load the halo streams one plane an iteration
    unroll = 1 if plan.halo_loaded else own.unroll
    return Count(case, plan.describe(), unroll, unroll * plan.depth * plan.coarsen,
                 report.registers if report else None, bool(report and report.spills),
                 tuple(loops(sass)))


def fit_levels(counts: list[Count]) -> list[tuple[Case, tuple[int, ...], float, float]]:
    """Per group of cases that differ only in bT (two bT or more): the least-squares
    ``a + b / bT`` of their inner loops' instructions per cell and level."""
    groups: dict[tuple, list[Count]] = {}
    for c in counts:
        if c.inner is not None:
            groups.setdefault(c.case.key_without_bt(), []).append(c)
    fits = []
    for members in groups.values():
        bts = [int(c.case.settings["bt"]) for c in members]
        if len(set(bts)) < 2:
            continue
        xs = [1 / bt for bt in bts]
        ys = [c.per_cell_level(c.inner) for c in members]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = (sum((x - mx) * (y - my) for x, y in zip(xs, ys))
                 / sum((x - mx) ** 2 for x in xs))
        fits.append((members[0].case, tuple(sorted(set(bts))), my - slope * mx, slope))
    return fits


def table(counts: list[Count]) -> str:
    kinds = list(KINDS)
    lines = ["| case | plan | regs | unroll | inner loop | per cell·level | "
             + " | ".join(f"{k} / cell·level" for k in kinds) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(kinds)]
    for c in counts:
        inner = c.inner
        regs = f"{c.registers}{' (spills)' if c.spills else ''}"
        if inner is None:
            lines.append(f"| {c.case.stencil} {c.case.dtype} | {c.plan_text} | {regs} | "
                         f"{c.unroll} | no loop with a barrier | |" + " |" * len(kinds))
            continue
        lines.append(f"| {c.case.stencil} {c.case.dtype} | {c.plan_text} | {regs} | "
                     f"{c.unroll} | {inner.length} | {c.per_cell_level(inner):.2f} | "
                     + " | ".join(f"{c.per_cell_level(inner, k):.2f}" for k in kinds) + " |")
    fits = fit_levels(counts)
    if fits:
        lines += ["", "| cases (bT) | a: per level op | b: per streaming step |",
                  "|---|---|---|"]
        for case, bts, a, b in fits:
            rest = " ".join(f"{k}={v}" for k, v in sorted(case.settings.items()) if k != "bt")
            lines.append(f"| {case.stencil} {case.dtype} {rest} regs={case.regs or 'none'} "
                         f"({', '.join(map(str, bts))}) | {a:.2f} | {b:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", help='"stencil dtype bt=N bs=B [sl=..] [regs=..]"')
    args = parser.parse_args(argv)
    missing = [tool for tool in ("nvcc", "cuobjdump") if shutil.which(tool) is None]
    if missing:
        print(f"sass_counts: needs {' and '.join(missing)} on PATH", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="an5d-sass-") as folder:
        counts = [count(Case.parse(text), folder) for text in args.cases]
    print(table(counts), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
