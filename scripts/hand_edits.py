#!/usr/bin/env python3
"""Hand edits of the generated kernels, checked and timed against the unedited ones on the GPU.

    # the cases' kernels and each edit's copy of them (no GPU needed)
    python scripts/hand_edits.py --write DIR --edit prefetch-registers:1 \
        --edit prefetch-l2:2 CASE...
    # on the GPU: every case's kernels and their edits, checked bit for bit, timed in turn
    python scripts/hand_edits.py --run DIR [--repeats 3] [--out FILE.jsonl]

A kernel idea is tried here as an edit of the text the generator writes before it is
built into the generator (an5dpy/cuda/, templates/kernel.cu.j2). A case is
scripts/ab_compare.py's: a benchmark of c_inputs/, its element type and its plan with the
register budget, ``"star3d1r float bt=4 bs=32x32 sl=128 regs=32"``. ``--write`` has this
checkout's ``an5d-translate`` write each case's kernels into ``DIR/base/<slug>/`` (as
``ab_compare.py --write`` does) and each edit's copy of them into
``DIR/<edit folder>/<slug>/`` (``prefetch-registers:1`` -> ``prefetch-registers-1``); the
cases and edits go to ``DIR/hand_edits.json``, which ``--run`` reads. ``--run`` builds
every kernel file (the benchmarks' nvcc flags, scripts/artifact.py's build pool), runs
the base and each edit once for 9 steps from the same seeded grid and compares the
results bit for bit (an edit whose result differs is marked WRONG), then times them in
turn ``--repeats`` times with scripts/artifact.py's harness (the paper's problem size,
runs of about 0.2 s); the launches of every variant are the base's, from this checkout's
render model. The table gives the base's best GFLOP/s and each edit's best over it, with
the registers ptxas gave each (``s``: it spills).

The loads' edits (D: how many streaming steps ahead, an integer of at least 1) change every
inner-phase loop (``for (; an5d_step + N <= an5d_plain_end; an5d_step += N) {``), the
level-0 loads in it (``LOAD(an5d_reg_0_.., an5d_step + k)``, in ``AN5D_CELLm(...)`` for a
coarsened plan), and nothing else:

* ``prefetch-registers:D``: each cell's loads are served from a queue of D registers, filled
  before the loop with the D planes from the loop's first load on; a load takes the
  queue's head and loads plane k + D into its tail.
* ``prefetch-l2:D``: each load is followed by a ``prefetch.global.L2`` of plane k + D
  (one per field where a time step has several statements).
* ``prefetch-async:D``: each cell's loads are served from a queue in shared memory (D + 1
  slots per thread and cell, static ``__shared__``, so at most 48 KiB with the kernel's own
  static arrays: a larger one does not build) that ``cp.async`` fills: a load waits for its
  plane's copy, reads it and copies plane k + D into the queue, no register held for it.

Each clamps the plane ahead with ``min(.., an5d_last_load)``: no load or prefetch goes past
the planes the block may read (what is loaded past the loop's end is never used).

One edit changes the blocks instead, each blocked kernel's whole body:

* ``persistent:D``: D blocks per SM stay resident and take the launch's block indices in
  turn; the others leave at once (:func:`persistent`).

And one changes the barriers of a plan with one barrier per step (``barriers=step``):

* ``shared-steps:2``: two streaming steps per barrier in every inner loop, each pair's
  planes written to a slab of shared memory of its own (:func:`shared_steps`; measured in
  artifact/H200/shared_steps.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

import ab_compare  # noqa: E402 (a script beside this one: after the path above)

#: What --write leaves in DIR for --run: the cases and the edits.
MANIFEST = "hand_edits.json"
#: The unedited kernels' folder and variant name.
BASE = "base"


class EditError(ValueError):
    """A kernel text the edit cannot apply to."""


# --------------------------------------------------------------------------- the kernel text

#: The inner phase's loop (templates/kernel.cu.j2's ``plain_loop``): N steps an iteration,
#: every op plain (no range checks).
INNER_LOOP = re.compile(
    r"for \(; an5d_step \+ (?P<stride>\d+) <= an5d_plain_end; an5d_step \+= (?P=stride)\) \{\n")
#: A level-0 load, a statement of its own line, in the cell's macro on a coarsened plan.
LEVEL0_LOAD = re.compile(
    r"^(?P<indent>[ \t]*)(?:AN5D_CELL(?P<macro>\d+)\()?"
    r"LOAD\((?P<reg>an5d_reg_0_\d+(?:_x(?P<cell>\d+))?), an5d_step \+ (?P<offset>\d+)\)"
    r"(?(macro)\));[ \t]*$", re.M)
#: Any level-0 load, to tell one of another shape (which the edits would miss) from none.
ANY_LEVEL0_LOAD = re.compile(r"(?<!\w)LOAD\(an5d_reg_0_")
#: A blocked kernel (the naive one has no inner phase).
BLOCKED_KERNEL = re.compile(r"__global__ void (?:__launch_bounds__\([^)]*\) )?(\w+_kernel_d\d+)\(")


@dataclass(frozen=True)
class Load:
    """One level-0 load of an inner loop: ``reg`` gets plane ``an5d_step + offset``."""

    match: re.Match
    cell: str | None  # the cell's index on a coarsened plan (the ``_x<cell>`` suffix)

    @property
    def reg(self) -> str:
        return self.match.group("reg")

    @property
    def offset(self) -> int:
        return int(self.match.group("offset"))

    def wrap(self, statements: list[str]) -> str:
        """``statements`` in the load's place: in its cell's macro where it was in one."""
        text = "; ".join(statements)
        if self.match.group("macro") is not None:
            text = f"AN5D_CELL{self.cell}({text})"
        return f"{self.match.group('indent')}{text};"


@dataclass(frozen=True)
class InnerLoop:
    """An inner-phase loop: ``text[start:body]`` is its ``for`` line, ``text[body:end]``
    its body and closing brace."""

    start: int
    body: int
    end: int
    stride: int
    indent: str
    loads: tuple[Load, ...]


def closing_brace(text: str, start: int, what: str) -> int:
    """The offset just past the brace that closes the one opened right before ``start`` (no
    brace of a kernel is in a string); ``what`` names the opening in the error."""
    depth, i = 1, start
    while depth:
        if i == len(text):
            raise EditError(f"{what} is not closed")
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return i


def inner_loops(text: str) -> list[InnerLoop]:
    """The inner-phase loops of a kernel file, with their level-0 loads."""
    loops = []
    for m in INNER_LOOP.finditer(text):
        i = closing_brace(text, m.end(), f"the inner loop at offset {m.start()}")
        body = text[m.end():i]
        loads = tuple(Load(lm, cell_of(lm)) for lm in LEVEL0_LOAD.finditer(body))
        if len(ANY_LEVEL0_LOAD.findall(body)) != len(loads):
            raise EditError(f"an inner loop at offset {m.start()} has a level-0 load of a "
                            "shape the edits do not know (not a LOAD statement of its own line "
                            "of plane an5d_step + k)")
        line_start = text.rfind("\n", 0, m.start()) + 1
        loops.append(InnerLoop(m.start(), m.end(), i, int(m.group("stride")),
                               text[line_start:m.start()], loads))
    return loops


def cell_of(load: re.Match) -> str | None:
    """The cell a load is of; its macro and its register must name the same one."""
    macro, cell = load.group("macro"), load.group("cell")
    if macro is not None and macro != cell:
        raise EditError(f"{load.group(0).strip()}: AN5D_CELL{macro} loads cell {cell}'s "
                        "register")
    return cell


def element_type(text: str, before: int, reg: str) -> str:
    """The C type of ``reg`` as its declaration before offset ``before`` gives it."""
    decls = re.findall(rf"^[ \t]*(\w+) {re.escape(reg)}\b[^;\n]*;", text[:before], re.M)
    if not decls:
        raise EditError(f"no declaration of {reg} before its inner loop")
    return decls[-1]


def edit_inner_loops(text: str, edit_loop) -> str:
    """``text`` with every inner loop that has level-0 loads replaced by what
    ``edit_loop(text, loop)`` makes of it; every blocked kernel must have one."""
    loops = [loop for loop in inner_loops(text) if loop.loads]
    kernels = [(m.group(1), m.start()) for m in BLOCKED_KERNEL.finditer(text)]
    if not loops:
        raise EditError("no inner-phase loop with a level-0 load "
                        "(for (; an5d_step + N <= an5d_plain_end; ...) { .. LOAD(an5d_reg_0_..")
    starts = [start for _, start in kernels] + [len(text)]
    bare = [name for (name, _), start, end in zip(kernels, starts, starts[1:])
            if not any(start <= loop.start < end for loop in loops)]
    if bare:
        raise EditError(f"kernel {', '.join(bare)}: no inner-phase loop with a level-0 load")
    out, pos = [], 0
    for loop in loops:
        out += [text[pos:loop.start], edit_loop(text, loop)]
        pos = loop.end
    return "".join(out + [text[pos:]])


def by_cell(loop: InnerLoop) -> dict[str | None, list[Load]]:
    cells: dict[str | None, list[Load]] = {}
    for load in loop.loads:
        cells.setdefault(load.cell, []).append(load)
    return cells


def queued_cells(loop: InnerLoop, queue: str) -> dict[str | None, list[Load]]:
    """:func:`by_cell`, where each cell's loads take the planes in turn, one each, the next
    iteration going on where this one stops: only then can a queue (``queue`` names it in
    the error) hold the planes ahead."""
    cells = by_cell(loop)
    for cell, loads in cells.items():
        offsets = [load.offset for load in loads]
        if offsets != list(range(offsets[0], offsets[0] + loop.stride)):
            raise EditError(f"the inner loop at offset {loop.start} loads planes "
                            f"an5d_step + {offsets} of cell {cell}, not {loop.stride} in "
                            f"turn: {queue} cannot serve them")
    return cells


def rewritten(text: str, loop: InnerLoop, replace) -> str:
    """The loop's text with each of its loads replaced by ``replace(load)``."""
    body, out, pos = text[loop.body:loop.end], [text[loop.start:loop.body]], 0
    for load in loop.loads:
        out += [body[pos:load.match.start()], replace(load)]
        pos = load.match.end()
    return "".join(out + [body[pos:]])


def ahead(offset: int) -> str:
    """Plane ``an5d_step + offset``, never past the planes the block may read."""
    return f"min(an5d_step + {offset}, an5d_last_load)"


def prefetch_registers(text: str, depth: int) -> str:
    """Every inner loop's level-0 loads served from a queue of ``depth`` registers per cell,
    so that a load is issued ``depth`` steps before its plane is used, its latency hidden
    behind that many steps of work."""
    def edit_loop(text: str, loop: InnerLoop) -> str:
        fill = [f"/* hand edit prefetch-registers:{depth}: level-0 loads {depth} planes "
                "ahead */"]
        queues = {}
        for cell, loads in queued_cells(loop, "a queue of registers").items():
            first = loads[0].offset
            types = {element_type(text, loop.start, load.reg) for load in loads}
            if len(types) != 1:
                raise EditError(f"the level-0 registers of cell {cell} are of several types: "
                                f"{', '.join(sorted(types))}")
            (elem,) = types
            queues[cell] = [f"an5d_prefetch_{d}{'' if cell is None else '_x' + cell}"
                            for d in range(depth)]
            for d, reg in enumerate(queues[cell]):
                fill += [f"{elem} {reg};",
                         loads[0].wrap([f"LOAD({reg}, {ahead(first + d)})"]).lstrip()]

        def take(load: Load) -> str:
            """The load's register from the queue's head; the plane ``depth`` ahead into
            its tail."""
            queue = queues[load.cell]
            moves = [f"{load.reg} = {queue[0]}"]
            moves += [f"{queue[d]} = {queue[d + 1]}" for d in range(depth - 1)]
            return load.wrap(moves + [f"LOAD({queue[-1]}, {ahead(load.offset + depth)})"])

        # the queues in a block of their own, so that no two loops' declarations meet
        return ("{\n" + "".join(f"{loop.indent}{line}\n" for line in fill)
                + f"{loop.indent}{rewritten(text, loop, take)}\n{loop.indent}}}")
    return edit_inner_loops(text, edit_loop)


#: The level-0 load pointer of each field of a time step of several statements.
FIELD_LOAD_POINTER = re.compile(r"\b(an5d_p_ld_f\d+)\b")


def prefetch_l2(text: str, depth: int) -> str:
    """Every inner loop's level-0 load followed by an L2 prefetch of the plane ``depth``
    steps ahead, so that the load of that plane, when it comes, is served from L2."""
    # a time step of several statements loads each field through a pointer of its own
    pointers = sorted(set(FIELD_LOAD_POINTER.findall(text))) or ["an5d_p_ld"]

    def edit_loop(text: str, loop: InnerLoop) -> str:
        def prefetch(load: Load) -> str:
            plane = f"AN5D_PLANE({ahead(load.offset + depth)})"
            # within the cell's macro an5d_in_array and an5d_p_ld are the cell's
            return load.wrap([f"LOAD({load.reg}, an5d_step + {load.offset})"] + [
                f'if (an5d_in_array) asm volatile("prefetch.global.L2 [%0];" :: '
                f'"l"({pointer} + {plane}))' for pointer in pointers])
        return rewritten(text, loop, prefetch)
    return edit_inner_loops(text, edit_loop)



#: A blocked kernel's launch bounds: its block's threads, which size a queue per thread.
LAUNCH_BOUNDS = re.compile(r"__global__ void __launch_bounds__\((\d+)")


def block_threads(text: str, before: int) -> int:
    """The threads of the block of the kernel that offset ``before`` is in."""
    bounds = LAUNCH_BOUNDS.findall(text[:before])
    if not bounds:
        raise EditError(f"no __launch_bounds__ before offset {before}: the block's threads, "
                        "which size the shared-memory queue, are not known")
    return int(bounds[-1])


def prefetch_async(text: str, depth: int) -> str:
    """Every inner loop's level-0 loads served from a queue in shared memory that
    ``cp.async`` fills ``depth`` planes ahead: the copy goes from global memory to shared
    memory without a register, so unlike the register queue it costs no occupancy.

    The copies are CUDA's pipeline primitives (``cuda_pipeline.h``): each thread reads back
    only the words it copied itself, so no barrier is needed, only a wait
    (``__pipeline_wait_prior``, ``cp.async.wait_group``): every load commits one group (its
    copy of the plane ``depth`` ahead), and before it reads its own plane it waits until at
    most the groups committed after that plane's copy are pending, a count that is the same
    in every iteration (the loads come in the same order). Before the loop the groups of
    the iterations before the first are committed in that order (empty where such a load's
    plane is before the loop's first), so the counts hold from the first load on; after it
    every copy is waited for. A thread outside the array copies no byte and gets zeros (the
    copy's zero fill), what ``LOAD`` gives it. The queue has ``depth + 1`` slots per cell,
    so a copy never writes the slot of the plane just read."""
    def edit_loop(text: str, loop: InnerLoop) -> str:
        cells = queued_cells(loop, "a queue")
        firsts = {cell: loads[0].offset for cell, loads in cells.items()}
        types = {element_type(text, loop.start, load.reg) for load in loop.loads}
        if len(types) != 1:
            raise EditError(f"the level-0 registers are of several types: "
                            f"{', '.join(sorted(types))}")
        (elem,) = types
        threads, slots = block_threads(text, loop.start), depth + 1
        column = {cell: k for k, cell in enumerate(cells)}
        order = list(loop.loads)  # one iteration's loads, each committing one group
        position = {(load.cell, load.offset): k for k, load in enumerate(order)}

        def issued_at(cell: str | None, plane: int) -> int:
            """The position (iteration x loads + index) of the load that copies ``plane``
            (relative to the first iteration's an5d_step) of ``cell``: its own load of the
            plane ``depth`` before it."""
            t, k = divmod(plane - depth - firsts[cell], loop.stride)
            return t * len(order) + position[(cell, firsts[cell] + k)]

        def slot(plane: str) -> str:
            return f"an5d_aq[(unsigned)({plane}) % {slots}u][{{c}}][an5d_tid]"

        def copy(load: Load, plane: str) -> str:
            """The load's cell's copy of ``plane`` into its slot."""
            destination = slot(plane).format(c=column[load.cell])
            source = f"an5d_p_ld + AN5D_PLANE(min({plane}, an5d_last_load))"
            return (f"__pipeline_memcpy_async(&{destination}, {source}, sizeof({elem}), "
                    f"an5d_in_array ? 0 : sizeof({elem}))")

        commit = "__pipeline_commit();"
        fill = [f"/* hand edit prefetch-async:{depth}: level-0 loads {depth} planes ahead "
                "through shared memory */",
                f"__shared__ {elem} an5d_aq[{slots}][{len(cells)}][{threads}];",
                "const int an5d_tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y "
                "* threadIdx.z);"]
        for at in range(min(issued_at(c, firsts[c]) for c in cells), 0):
            t, k = divmod(at, len(order))
            load = order[k]
            plane = load.offset + t * loop.stride + depth
            if plane >= firsts[load.cell]:
                fill.append(load.wrap([copy(load, f"an5d_step + {plane}")]).lstrip())
            fill.append(commit)

        def take(load: Load) -> str:
            waits = position[(load.cell, load.offset)] - issued_at(load.cell, load.offset) - 1
            plane = f"an5d_step + {load.offset}"
            return load.wrap([
                f"__pipeline_wait_prior({waits})",
                f"{load.reg} = {slot(plane).format(c=column[load.cell])}",
                copy(load, f"an5d_step + {load.offset + depth}"), "__pipeline_commit()"])

        # the queue in a block of its own, so that no two loops' declarations meet
        return ("{\n" + "".join(f"{loop.indent}{line}\n" for line in fill)
                + f"{loop.indent}{rewritten(text, loop, take)}\n"
                + f"{loop.indent}__pipeline_wait_prior(0);\n"
                + f"{loop.indent}}}")
    # the pipeline primitives (__pipeline_memcpy_async, __pipeline_commit,
    # __pipeline_wait_prior): cp.async as CUDA's headers spell it
    return "#include <cuda_pipeline.h>\n" + edit_inner_loops(text, edit_loop)


#: The line of a blocked kernel that reads its block's index (templates/kernel.cu.j2).
BLOCK_INDEX = "int an5d_bid = blockIdx.x;"


def kernel_bodies(text: str) -> list[tuple[str, int, int]]:
    """Each blocked kernel's name and its body's span: ``text[start:end]`` lies between the
    body's braces (no brace of a kernel is in a string)."""
    bodies = []
    for m in BLOCKED_KERNEL.finditer(text):
        start = text.index("\n{\n", m.end()) + 3
        bodies.append((m.group(1), start,
                       closing_brace(text, start, f"kernel {m.group(1)}") - 1))
    return bodies


def persistent(text: str, depth: int) -> str:
    """Every blocked kernel made persistent: the launch's first ``depth`` blocks per SM (the
    SMs as ``%nsmid`` counts them) stay resident and take the launch's block indices in
    turn (their own, then that many further on, ...), and every other block leaves at once;
    the launches are unchanged. Blocks of a launch are independent, so each index is
    computed as it was; a barrier ends each one, so that the next index's first writes to
    shared memory wait for this one's last reads. ``depth`` should be the blocks per SM
    that the kernel's registers and shared memory allow (a larger one leaves some of the
    staying blocks waiting for an SM). What it can save is each block's start; the last
    wave's idle SMs stay, as every block index is as long as before."""
    bodies = kernel_bodies(text)
    if not bodies:
        raise EditError("no blocked kernel")
    out, pos = [], 0
    for name, start, end in bodies:
        body = text[start:end]
        if body.count(BLOCK_INDEX) != 1:
            raise EditError(f"kernel {name}: not one {BLOCK_INDEX!r} in its body")
        if re.search(r"\breturn\b", body):
            raise EditError(f"kernel {name}: a return in its body would leave the block's "
                            "loop")
        head = (f"  /* hand edit persistent:{depth}: {depth} blocks per SM stay and take the "
                "launch's blocks in turn */\n"
                "  unsigned an5d_sms;\n"
                '  asm("mov.u32 %0, %%nsmid;" : "=r"(an5d_sms));\n'
                f"  const unsigned an5d_resident = {depth}u * an5d_sms;\n"
                "  if (blockIdx.x >= an5d_resident) return;\n"
                "  for (unsigned an5d_pb = blockIdx.x; an5d_pb < gridDim.x; "
                "an5d_pb += an5d_resident) {\n")
        tail = "  __syncthreads();\n  }\n"
        out += [text[pos:start], head,
                body.replace(BLOCK_INDEX, "int an5d_bid = (int)an5d_pb;"), tail]
        pos = end
    return "".join(out + [text[pos:]])


#: A statement of the inner loop that writes a plane to shared memory (in its cell's macro
#: on a coarsened plan), and the barrier that publishes a step's planes.
SHARE_LINE = re.compile(r"^[ \t]*(?:AN5D_CELL\d+\()?SHARE\(")
SYNC_LINE = re.compile(r"^[ \t]*SYNC\(\);[ \t]*$")
#: The shared planes' array, declared once per kernel: ``__shared__ T an5d_sm[N]...;``.
SMEM_DECLARATION = re.compile(r"__shared__ (\w+) an5d_sm\[")
NOT_PER_STEP = " (not a plan of one barrier per step, barriers=step)"


def loop_steps(body: str, where: str) -> tuple[list[tuple[list[str], list[str]]], str]:
    """The streaming steps of an inner loop's body (one barrier per step: its planes'
    ``SHARE`` lines, one ``SYNC();``, then its ops, none of which shares or waits), and the
    closing brace's line. A barrier that closes the body (a loop of an odd number of
    steps keeps its buffers' parities so) is left out: the edit closes its own."""
    lines = body.rstrip("\n").split("\n")
    closing, lines = lines[-1], lines[:-1]
    steps: list[tuple[list[str], list[str]]] = []
    shares: list[str] = []
    for i, line in enumerate(lines):
        if SHARE_LINE.match(line):
            shares.append(line)
        elif SYNC_LINE.match(line):
            if not shares and steps and i == len(lines) - 1:
                continue  # a loop of an odd number of steps closes with a barrier
            if not shares:
                raise EditError(f"{where}: a barrier that publishes no shared plane"
                                f"{NOT_PER_STEP}")
            steps.append((shares, []))
            shares = []
        elif shares:
            raise EditError(f"{where}: an op between a step's SHAREs and its barrier"
                            f"{NOT_PER_STEP}")
        elif not steps:
            raise EditError(f"{where}: an op before the loop's first barrier{NOT_PER_STEP}")
        else:
            steps[-1][1].append(line)
    if shares:
        raise EditError(f"{where}: SHAREs after the loop's last barrier")
    return steps, closing


def shared_steps(text: str, steps_per_barrier: int) -> str:
    """Two streaming steps per barrier in every inner loop of a plan with one barrier per
    step (``barriers=step``): each pair of steps writes both steps' planes to shared
    memory, waits at one barrier, then runs both steps' ops. The shared array gets a second
    slab of buffers: pair g of an iteration uses slab g % 2, so a pair never writes the
    buffers the pair before it reads (the two steps of a pair use the two parities of
    their slab); a barrier before and after each loop keeps the heads and tails, which use
    slab 0, apart from it, and one closes an iteration of an odd number of pairs. Valid
    where every plane a step shares was computed before its pair began: level T >= 2 reads
    level T-1's plane of r steps before, level 1 the plane loaded r + 1 steps before, so
    a pair needs r >= 2, or r >= 1 with one level (bT 1); the run's check says whether
    the edited kernel computes what the base does."""
    if steps_per_barrier != 2:
        raise EditError("shared-steps takes 2 steps per barrier (shared-steps:2)")
    if not SMEM_DECLARATION.search(text):
        raise EditError("no shared-memory planes (an5d_sm) to share")

    def edit_loop(text: str, loop: InnerLoop) -> str:
        where = f"the inner loop at offset {loop.start}"
        steps, closing = loop_steps(text[loop.body:loop.end], where)
        if len(steps) != loop.stride:
            raise EditError(f"{where}: {len(steps)} barriers for {loop.stride} steps"
                            f"{NOT_PER_STEP}")
        inner = loop.indent + "  "
        out = [f"__syncthreads();  /* hand edit shared-steps:2 */\n{loop.indent}",
               text[loop.start:loop.body]]
        pairs = [steps[i:i + 2] for i in range(0, len(steps), 2)]
        for g, pair in enumerate(pairs):
            out.append(f"#undef AN5D_SLAB\n#define AN5D_SLAB {g % 2}\n")
            for shares, _ in pair:
                out += [line + "\n" for line in shares]
            out.append(f"{inner}SYNC();\n")
            for _, ops in pair:
                out += [line + "\n" for line in ops]
        if len(pairs) % 2:
            out.append(f"{inner}SYNC();  /* the next iteration's first pair uses slab 0 */\n")
        out += [closing, "\n#undef AN5D_SLAB\n#define AN5D_SLAB 0\n",
                f"{loop.indent}__syncthreads();"]
        return "".join(out)

    edited = edit_inner_loops(text, edit_loop)
    declared = SMEM_DECLARATION.sub(r"__shared__ \1 an5d_sm_slabs[2][", edited)
    declared = re.sub(r"(?<!\w)an5d_sm\[", "an5d_sm_slabs[AN5D_SLAB][", declared)
    return "#define AN5D_SLAB 0\n" + declared


# --------------------------------------------------------------------------- the edits

#: The edits by kind: each makes an edited kernel file of a kernel file's text and D.
EDITS = {"prefetch-registers": prefetch_registers, "prefetch-l2": prefetch_l2,
         "prefetch-async": prefetch_async, "persistent": persistent,
         "shared-steps": shared_steps}


@dataclass(frozen=True)
class Edit:
    """An edit of EDITS and its D: how many streaming steps ahead it loads (the loads'
    edits), how many blocks per SM stay (``persistent``) or how many steps share a barrier
    (``shared-steps``)."""

    kind: str
    depth: int

    @classmethod
    def parse(cls, text: str) -> Edit:
        """``"prefetch-l2:2"`` -> Edit("prefetch-l2", 2)."""
        kind, _, depth = text.partition(":")
        if kind not in EDITS:
            raise ValueError(f"unknown edit {text!r} (the edits: "
                             f"{', '.join(f'{k}:D' for k in EDITS)})")
        if not depth.isdigit() or int(depth) < 1:
            raise ValueError(f"edit {text!r}: D (steps ahead, blocks per SM or steps per "
                             f"barrier) must be an integer of at least 1 ({kind}:D)")
        return cls(kind, int(depth))

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.depth}"

    @property
    def folder(self) -> str:
        """The edit's folder of DIR (no colon: the name is safe on every file system)."""
        return f"{self.kind}-{self.depth}"

    def apply(self, text: str) -> str:
        return EDITS[self.kind](text, self.depth)


# --------------------------------------------------------------------------- --write


def kernel_file(folder: str, case: str) -> str:
    """The case's kernel file in a variant's folder of DIR."""
    stencil, _, _ = ab_compare.parse_case(case)
    return os.path.join(folder, ab_compare.slug(case), f"{stencil}_kernel.cu")


def write(out: str, cases: list[str], edits: list[Edit]) -> list[str]:
    """Each case's kernels (this checkout's ``an5d-translate``) in ``out/base/<slug>`` and
    each edit's copy in ``out/<edit folder>/<slug>``; the cases and edits in the manifest.
    Returns the folders written."""
    written = []
    for case in cases:
        base = ab_compare.write_case(case, os.path.join(out, BASE), REPO)
        written.append(base)
        for edit in edits:
            folder = os.path.join(out, edit.folder, ab_compare.slug(case))
            # an earlier --run's cubins stay behind in base; they are no copy's
            shutil.copytree(base, folder, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.cubin"))
            path = kernel_file(os.path.join(out, edit.folder), case)
            with open(path) as f:
                text = f.read()
            try:
                edited = edit.apply(text)
            except EditError as e:
                raise EditError(f"{edit.name} of {path}: {e}") from None
            with open(path, "w") as f:
                f.write(edited)
            written.append(folder)
    with open(os.path.join(out, MANIFEST), "w") as f:
        json.dump({"cases": list(cases), "edits": [e.name for e in edits]}, f, indent=1)
        f.write("\n")
    return written


def read_manifest(out: str) -> tuple[list[str], list[Edit]]:
    path = os.path.join(out, MANIFEST)
    if not os.path.exists(path):
        raise SystemExit(f"{path} not found: write DIR with --write first")
    with open(path) as f:
        manifest = json.load(f)
    return manifest["cases"], [Edit.parse(name) for name in manifest["edits"]]


# --------------------------------------------------------------------------- --run


def submit(bench, out: str, case: str, edits: list[Edit]) -> dict:
    """Start building a case's base and edited kernels on the bench's pool; the launches
    of them all are the base's, from this checkout's render model of the case."""
    from an5dpy.cuda.runtime import compile_cubin
    from an5dpy.driver import generate
    from an5dpy.perf.bench import paper_env
    program, info, plan, regs = ab_compare.plan_of(case)
    stencil, _, _ = ab_compare.parse_case(case)
    kernels = generate(info, plan, stencil, regs=regs)
    base = kernel_file(os.path.join(out, BASE), case)
    with open(base) as f:
        if f.read() != kernels.files()[f"{stencil}_kernel.cu"]:
            # the edits are of DIR's kernels; their launches, of this checkout's model
            print(f"note: {base} is not what this checkout generates for {case!r} (written "
                  "by another checkout?); the launches are this checkout's", file=sys.stderr)
    sources = {BASE: base}
    sources.update((e.name, kernel_file(os.path.join(out, e.folder), case)) for e in edits)
    return {"case": case, "info": info, "plan": plan, "env": paper_env(program, info),
            "model": kernels.model,
            "builds": {name: bench.pool.submit(compile_cubin, path, bench.options)
                       for name, path in sources.items()}}


def same_bits(a, b) -> bool:
    """Whether two arrays (cupy or numpy) hold the same bits: compared as unsigned integers,
    so that NaNs of the same payload are equal and a different payload, or -0.0 against
    0.0, is not (an edit changes no arithmetic, so its result must be the base's bit for
    bit)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    bits = f"u{a.dtype.itemsize}"
    return bool((a.view(bits) == b.view(bits)).all())


def measure(bench, job: dict, repeats: int) -> dict:
    """One case: each variant's result after ab_compare.CHECK_STEPS steps against the base's,
    then the variants timed in turn ``repeats`` times (GFLOP/s); a variant that does not
    build is left out, with why, under ``failed``."""
    info, plan, env, model = job["info"], job["plan"], job["env"], job["model"]
    built, failed = {}, {}
    for name, future in job["builds"].items():
        try:
            built[name] = (model, future.result())
        except Exception as e:  # noqa: BLE001 - a variant that does not build is reported
            print(f"{job['case']}: {name} does not build:\n{e}", file=sys.stderr, flush=True)
            failed[name] = str(e).splitlines()[0]
    row = {"case": job["case"], "gflops": {}, "same": {}, "registers": {}, "failed": failed}
    if BASE not in built:
        return row
    def result(name: str):
        # every variant from the same seeded grid (before a timing run changes it)
        return ab_compare.checked_result(bench, info, plan, built[name], env)

    expected = result(BASE)
    for name in built:
        if name != BASE:
            row["same"][name] = same_bits(result(name), expected)
    del expected
    row["gflops"] = {name: [] for name in built}
    for _ in range(repeats):
        for name in built:
            gflops, _, _, registers, spills = bench.time(info, plan, built[name], env)
            row["gflops"][name].append(gflops)
            row["registers"][name] = [registers, spills]
    return row


def registers(row: dict, name: str) -> str:
    count, spills = row["registers"][name]
    return f"{count}{'s' if spills else ''}"


def render(rows: list[dict], edits: list[Edit]) -> str:
    """The base's best GFLOP/s and each edit's best over it, with the registers of each
    (``s``: spills); WRONG where an edit's result differs from the base's."""
    names = [e.name for e in edits]
    lines = ["| case | base GFLOP/s (registers) | "
             + " | ".join(f"{name} / base (registers)" for name in names) + " |",
             "|---|---|" + "---|" * len(names)]
    for row in rows:
        if BASE not in row["gflops"]:
            lines.append(f"| {row['case']} | does not build | "
                         + " | ".join("-" for _ in names) + " |")
            continue
        base = max(row["gflops"][BASE])
        cells = []
        for name in names:
            if name not in row["gflops"]:
                cells.append("does not build")
                continue
            wrong = "" if row["same"][name] else " WRONG"
            cells.append(f"{max(row['gflops'][name]) / base:.3f}{wrong} "
                         f"({registers(row, name)})")
        lines.append(f"| {row['case']} | {base:,.0f} ({registers(row, BASE)}) | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def run(out: str, repeats: int, jsonl: str | None) -> int:
    """--run: 0 where every edit builds and gives the base's result, else 1."""
    cases, edits = read_manifest(out)
    import artifact
    from an5dpy.cuda.runtime import device_name
    bench = artifact.Bench()
    # every build queued first: nvcc works on the CPUs while the GPU checks and times
    jobs = [submit(bench, out, case, edits) for case in cases]
    rows = []
    for job in jobs:
        row = measure(bench, job, repeats)
        rows.append(row)
        if jsonl:
            with open(jsonl, "a") as f:
                f.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)
    print(f"\n{device_name()}\n")
    print(render(rows, edits))
    bad = any(row["failed"] or not all(row["same"].values()) for row in rows)
    return 1 if bad else 0


# --------------------------------------------------------------------------- command line


def edit_argument(text: str) -> Edit:
    try:
        return Edit.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def case_argument(text: str) -> str:
    """A case as scripts/ab_compare.py spells it, checked before anything is written."""
    try:
        ab_compare.parse_case(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"case {text!r} is not 'stencil dtype setting=value ...'") from None
    except SystemExit as e:  # ab_compare's word on a setting it does not know
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer of at least 1")
    return int(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", type=case_argument, metavar="CASE",
                    help="with --write: 'stencil dtype bt=.. bs=.. [sl=..] ...'")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="DIR",
                      help="write the cases' kernels and each edit's copy of them into DIR")
    mode.add_argument("--run", metavar="DIR",
                      help="check and time DIR's kernels (as --write left them) on the GPU")
    ap.add_argument("--edit", dest="edits", action="append", default=[], type=edit_argument,
                    metavar="EDIT", help="with --write, once per edit: "
                    + " or ".join(f"{kind}:D" for kind in EDITS) + " (D >= 1)")
    ap.add_argument("--repeats", type=positive, default=3,
                    help="with --run: how many times each kernel is timed (default 3)")
    ap.add_argument("--out", metavar="FILE.jsonl",
                    help="with --run: append each case's result to this JSON lines file")
    args = ap.parse_args(argv)
    if args.write:
        if not args.cases:
            ap.error("--write needs at least one CASE")
        if not args.edits:
            ap.error("--write needs at least one --edit")
        names = [e.name for e in args.edits]
        if len(set(names)) < len(names):
            ap.error(f"an edit is given twice: {', '.join(names)}")
        try:
            for folder in write(args.write, args.cases, args.edits):
                print(folder)
        except EditError as e:
            raise SystemExit(f"hand_edits.py: {e}") from None
        return 0
    if args.cases or args.edits:
        ap.error(f"--run takes its cases and edits from DIR/{MANIFEST} (--write's)")
    return run(args.run, args.repeats, args.out)


if __name__ == "__main__":
    sys.exit(main())
