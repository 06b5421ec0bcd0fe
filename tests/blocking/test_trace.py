"""Block traces (:mod:`an5dpy.blocking.trace`): a symbolic execution of every stream
block's trace (what each register holds at each op), and which phases a block runs."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from an5dpy.blocking.build import build_kernel_schedule
from an5dpy.blocking.ops import Accumulate, Boundary, Calc, Load, Reg, Store, Sync
from an5dpy.blocking.trace import BlockRanges, block_trace

from block_support import MODES, plan


GARBAGE = ("garbage",)


class Symbolic:
    """Execute a block trace on symbols: each register holds (level, plane) or GARBAGE.

    Ops of a level outside the planes it must produce may run on meaningless inputs (the
    tail does not guard them); every op inside the range must find exactly its inputs,
    and every store must store a value computed from valid inputs.
    """

    def __init__(self, ks, rng: BlockRanges):
        self.ks, self.rng = ks, rng
        self.regs: dict[Reg, tuple] = {}
        self.produced: dict[int, list[int]] = {lvl: [] for lvl in range(ks.degree + 1)}
        self.stored: list[int] = []
        self.pending_read = None
        self.partial: dict[Reg, tuple] = {}

    def in_range(self, level: int, plane: int) -> bool:
        return self.rng.produces(level, plane) and self.rng.exists(plane)

    def need(self, reg: Reg, level: int, plane: int) -> None:
        held = self.regs.get(reg)
        assert held == (level, plane), f"{reg} holds {held}, op needs level {level} plane {plane}"

    def holds(self, reg: Reg, level: int, plane: int) -> bool:
        return self.regs.get(reg) == (level, plane)

    def write_smem(self, buf: int) -> None:
        assert self.pending_read != buf, "shared buffer rewritten while still being read"

    def produce(self, reg: Reg, level: int, plane: int, valid: bool) -> None:
        self.regs[reg] = (level, plane) if valid else GARBAGE
        if valid:
            self.produced[level].append(plane)

    def run(self) -> None:
        r, d = self.ks.radius, self.ks.degree
        rng = self.rng
        for _, ops in block_trace(self.ks, rng):
            for rop in ops:
                op = rop.op
                if op is None or isinstance(op, Sync):
                    if rop.barrier:
                        self.pending_read = None
                    continue
                if isinstance(op, Load):
                    assert rng.exists(op.plane) and op.plane <= rng.last_load
                    assert op.boundary == rng.is_boundary(op.plane)
                    self.produce(op.out, 0, op.plane, True)
                elif isinstance(op, Boundary):
                    assert rng.is_boundary(op.plane) and rng.exists(op.plane)
                    valid = self.in_range(op.level, op.plane)
                    if op.prev is not None:  # a copy of level T-2
                        if valid:
                            self.need(op.prev, op.level - 2, op.plane)
                        valid = valid and self.holds(op.prev, op.level - 2, op.plane)
                    self.produce(op.out, op.level, op.plane, valid)
                    if rop.barrier:
                        self.pending_read = None
                elif isinstance(op, (Calc, Store)):
                    assert not rng.is_boundary(op.plane)
                    must = self.in_range(op.level, op.plane) if isinstance(op, Calc) else True
                    ok = all(self.holds(reg, op.level - 1, op.plane - r + k)
                             for k, reg in enumerate(op.ins))
                    if isinstance(op, Calc) and op.prev is not None and must:
                        self.need(op.prev, op.level - 2, op.plane)
                    if must:
                        for k, reg in enumerate(op.ins):
                            self.need(reg, op.level - 1, op.plane - r + k)
                    self.write_smem(op.buf)
                    self.pending_read = op.buf
                    if isinstance(op, Calc):
                        self.produce(op.out, op.level, op.plane, must and ok)
                    else:
                        assert rng.s0 <= op.plane < rng.s1
                        self.stored.append(op.plane)
                        self.produced[d].append(op.plane)
                else:
                    self.accumulate(op, rop.barrier)

    def accumulate(self, op: Accumulate, barrier: bool) -> None:
        r = self.ks.radius
        q = op.plane + r
        if op.consume:
            arriving_ok = self.holds(op.src, op.level - 1, q)
            self.write_smem(op.buf)
            self.pending_read = op.buf
            for j, acc in enumerate(op.accs):
                out = op.plane + j
                if not self.in_range(op.level, out) or self.rng.is_boundary(out):
                    continue  # a sum nobody completes (the GPU adds garbage there, harmlessly)
                assert arriving_ok, f"output plane {out} takes a meaningless arrival {q}"
                level, plane, got = self.partial.get(acc, (None, None, ()))
                if j == 2 * r:  # first contribution starts the accumulator
                    self.partial[acc] = (op.level, out, (q,))
                else:
                    assert (level, plane) == (op.level, out), f"{acc} accumulates plane {plane}"
                    self.partial[acc] = (level, plane, got + (q,))
        elif barrier:  # a guarded position that takes nothing still synchronises
            self.pending_read = None
        valid = self.in_range(op.level, op.plane)
        if op.complete == "boundary":
            assert self.rng.is_boundary(op.plane)
            self.produce(op.accs[0], op.level, op.plane, valid)
        elif op.complete == "calc":
            if valid:
                level, plane, got = self.partial[op.accs[0]]
                assert (level, plane) == (op.level, op.plane)
                assert got == tuple(range(op.plane - r, op.plane + r + 1)), got
            self.produce(op.accs[0], op.level, op.plane, valid)
            if op.store:
                assert valid and self.rng.s0 <= op.plane < self.rng.s1
                self.stored.append(op.plane)


def check_block(mode, d, r, S0, S1, zlo, zhi, compact=False):
    ks = build_kernel_schedule(plan(mode, max(d, 1), r), d, static_heads=not compact)
    rng = BlockRanges.of(S0, S1, zlo, zhi, d, r)
    sym = Symbolic(ks, rng)
    sym.run()
    assert sym.stored == list(range(rng.s0, rng.s1))
    assert sym.produced[0] == [q for q in range(0, rng.last_load + 1) if rng.exists(q)]
    for level in range(1, d):
        want = [p for p in range(rng.first(level), rng.last(level) + 1) if rng.exists(p)]
        assert sym.produced[level] == want
    return rng


@given(mode=st.sampled_from(MODES), d=st.integers(1, 6), r=st.integers(0, 3),
       zlo=st.integers(0, 4), length=st.integers(1, 40), sl=st.integers(1, 20),
       block=st.integers(0, 40), compact=st.booleans())
def test_every_block_produces_exactly_its_planes_from_valid_inputs(mode, d, r, zlo, length,
                                                                    sl, block, compact):
    zlo = max(zlo, r)
    zhi = zlo + length - 1
    S0 = zlo + (block % (-(-length // sl))) * sl
    S1 = min(S0 + sl, zhi + 1)
    check_block(mode, d, r, S0, S1, zlo, zhi, compact)


@pytest.mark.parametrize("mode", MODES)
def test_compact_kernels_have_no_heads_and_a_closing_barrier(mode):
    ks = build_kernel_schedule(plan(mode, 3, 1), 3, static_heads=False)
    assert ks.compact and ks.unroll == 3
    for chunk in (ks.inner, ks.tail):
        assert isinstance(chunk.ops[-1], Sync)  # 9 level ops: odd, so a barrier closes
        bufs = [op.buf for op in chunk.ops if not isinstance(op, (Load, Sync))]
        assert bufs == [k % 2 for k in range(len(bufs))]
    rng = check_block(mode, 3, 1, 11, 111, 1, 300, compact=True)
    names = [n for n, _ in block_trace(ks, rng)]
    assert names[:2] == ["prologue", "tail"] and "inner" in names and "head_middle" not in names
    even = build_kernel_schedule(plan(mode, 2, 1), 2, static_heads=False)
    assert not any(isinstance(op, Sync) for op in even.inner.ops)


@pytest.mark.parametrize("mode", MODES)
def test_long_streams_use_head_inner_and_tail(mode):
    rng = check_block(mode, 4, 1, 1, 201, 1, 400)
    ks = build_kernel_schedule(plan(mode, 4, 1), 4)
    names = [name for name, _ in block_trace(ks, rng)]
    assert names[1] == "head_lowermost" and names.count("inner") > 20 and names[-1] == "tail"
    middle = BlockRanges.of(201, 401, 1, 400, 4, 1)
    assert [n for n, _ in block_trace(ks, middle)][1] == "head_middle"


def test_short_streams_fall_back_to_guarded_steps():
    ks = build_kernel_schedule(plan("nondiag", 4, 1), 4)
    tiny = BlockRanges.of(1, 2, 1, 1, 4, 1)  # one interior plane
    assert {n for n, _ in block_trace(ks, tiny)} == {"prologue", "tail"}
    check_block("nondiag", 4, 1, 1, 2, 1, 1)
