"""The schedule IR: fixed register allocation, step order, double buffering, and a
symbolic execution of every stream block's trace (what each register holds at each op)."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from an5dpy.plan import BlockingPlan
from an5dpy.schedule import (Accumulate, BlockRanges, Boundary, Calc, Load, Reg, Store, Sync,
                             block_trace, build_kernel_schedule, chunk_steps, format_schedule,
                             build_schedule, uses_barrier)


def plan(mode="nondiag", bt=3, r=1, ndim=2):
    return BlockingPlan(ndim, "float", (r,) * ndim, bt, (64,) * (ndim - 1), None, mode)


MODES = ("nondiag", "none", "assoc")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("d, r", [(1, 1), (2, 1), (3, 2), (4, 1), (5, 3), (2, 0), (16, 1)])
def test_phases_have_load_then_levels_in_order(mode, d, r):
    ks = build_kernel_schedule(plan(mode, d, r), d)
    assert ks.unroll % (2 * r + 1) == 0
    assert (ks.unroll * d) % 2 == 0
    for phase in (*ks.heads.values(), ks.inner, ks.tail):
        for st_ in phase.steps:
            assert isinstance(st_.ops[0], Load)
            levels = [op.level for op in st_.ops[1:]]
            assert levels == sorted(levels) and len(set(levels)) == len(levels)
    # chunks hold every level at every step
    for phase in (ks.inner, ks.tail):
        assert all(len(s.ops) == d + 1 for s in phase.steps)


@pytest.mark.parametrize("mode", ("nondiag", "none"))
@pytest.mark.parametrize("d, r", [(1, 1), (3, 1), (4, 2), (2, 3)])
def test_fixed_register_allocation(mode, d, r):
    """Level T keeps plane q in slot q mod (2r+1); inputs are level T-1's window."""
    ks = build_kernel_schedule(plan(mode, d, r), d)
    ring = 2 * r + 1
    for phase in (*ks.heads.values(), ks.inner, ks.tail):
        for op in phase.ops:
            if isinstance(op, Load):
                assert op.out == Reg(0, op.plane % ring)
            if isinstance(op, (Calc, Boundary)):
                assert op.out == Reg(op.level, op.plane % ring)
            if isinstance(op, (Calc, Store)):
                assert op.ins == tuple(Reg(op.level - 1, (op.plane + k) % ring)
                                       for k in range(-r, r + 1))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("d, r", [(1, 1), (2, 1), (3, 2), (5, 1)])
def test_shared_buffers_alternate(mode, d, r):
    ks = build_kernel_schedule(plan(mode, d, r), d)
    for head in ks.heads.values():
        bufs = [op.buf for op in head.ops if uses_barrier(op)]
        assert all(a != b for a, b in zip(bufs, bufs[1:]))
        if bufs:
            assert bufs[-1] == 1  # so the first chunk starts on buffer 0
    for chunk in (ks.inner, ks.tail):
        bufs = [op.buf for op in chunk.ops if not isinstance(op, Load)]
        assert bufs == [k % 2 for k in range(len(bufs))]


def test_registers_match_the_plan():
    for mode in MODES:
        p = plan(mode, 4, 2)
        ks = build_kernel_schedule(p, 4)
        assert len(ks.registers()) == p.registers_per_thread(4)


def test_print_is_readable():
    text = format_schedule(build_schedule(plan("nondiag", 2, 1)))
    assert "kernel degree 2" in text and "LOAD_BOUNDARY(reg_0_0, 0)" in text
    assert "CALC1(reg_1_1, reg_0_0, reg_0_1, reg_0_2, 1, buf" in text
    assert "head_lowermost" in text and "tail (guarded" in text


# --------------------------------------------------------------------------- symbolic runs


class Symbolic:
    """Execute a block trace on symbols: each register holds (level, plane)."""

    def __init__(self, ks, rng: BlockRanges):
        self.ks, self.rng = ks, rng
        self.regs: dict[Reg, tuple] = {}
        self.produced: dict[int, list[int]] = {lvl: [] for lvl in range(ks.degree + 1)}
        self.stored: list[int] = []
        self.pending_read = None
        self.partial: dict[Reg, tuple] = {}

    def need(self, reg: Reg, level: int, plane: int) -> None:
        held = self.regs.get(reg)
        assert held == (level, plane), f"{reg} holds {held}, op needs level {level} plane {plane}"

    def write_smem(self, buf: int) -> None:
        assert self.pending_read != buf, "shared buffer rewritten while still being read"

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
                    assert op.boundary == rng.is_boundary(op.plane)
                    self.regs[op.out] = (0, op.plane)
                    self.produced[0].append(op.plane)
                elif isinstance(op, Boundary):
                    assert rng.is_boundary(op.plane)
                    self.regs[op.out] = (op.level, op.plane)
                    self.produced[op.level].append(op.plane)
                    if rop.barrier:
                        self.pending_read = None
                elif isinstance(op, (Calc, Store)):
                    assert not rng.is_boundary(op.plane)
                    for k, reg in enumerate(op.ins):
                        self.need(reg, op.level - 1, op.plane - r + k)
                    self.write_smem(op.buf)
                    self.pending_read = op.buf
                    if isinstance(op, Calc):
                        self.regs[op.out] = (op.level, op.plane)
                        self.produced[op.level].append(op.plane)
                    else:
                        self.stored.append(op.plane)
                        self.produced[d].append(op.plane)
                else:
                    self.accumulate(op, rop.barrier)

    def accumulate(self, op: Accumulate, barrier: bool) -> None:
        r = self.ks.radius
        q = op.plane + r
        if op.consume:
            self.need(op.src, op.level - 1, q)
            self.write_smem(op.buf)
            self.pending_read = op.buf
            for j, acc in enumerate(op.accs):
                out = op.plane + j
                if not self.rng.produces(op.level, out) or self.rng.is_boundary(out):
                    continue  # a sum nobody completes (the GPU adds garbage there, harmlessly)
                level, plane, got = self.partial.get(acc, (None, None, ()))
                if j == 2 * r:  # first contribution starts the accumulator
                    self.partial[acc] = (op.level, out, (q,))
                else:
                    assert (level, plane) == (op.level, out), f"{acc} accumulates plane {plane}"
                    self.partial[acc] = (level, plane, got + (q,))
        elif barrier:  # a guarded position that takes nothing still synchronises
            self.pending_read = None
        if op.complete == "boundary":
            assert self.rng.is_boundary(op.plane)
            self.regs[op.accs[0]] = (op.level, op.plane)
            self.produced[op.level].append(op.plane)
        elif op.complete == "calc":
            level, plane, got = self.partial[op.accs[0]]
            assert (level, plane) == (op.level, op.plane)
            assert got == tuple(range(op.plane - r, op.plane + r + 1)), got
            self.regs[op.accs[0]] = (op.level, op.plane)
            self.produced[op.level].append(op.plane)
            if op.store:
                self.stored.append(op.plane)


def check_block(mode, d, r, S0, S1, zlo, zhi, compact=False):
    ks = build_kernel_schedule(plan(mode, max(d, 1), r), d, static_heads=not compact)
    rng = BlockRanges.of(S0, S1, zlo, zhi, d, r)
    sym = Symbolic(ks, rng)
    sym.run()
    assert sym.stored == list(range(rng.s0, rng.s1))
    assert sym.produced[0] == list(range(0, rng.last_load + 1))
    for level in range(1, d):
        want = list(range(rng.first(level), rng.last(level) + 1))
        if mode == "assoc":
            # the last level's boundary planes are nobody's input
            assert sym.produced[level] == want
        else:
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
    assert names[0] == "tail" and "inner" in names and "head_middle" not in names
    even = build_kernel_schedule(plan(mode, 2, 1), 2, static_heads=False)
    assert not any(isinstance(op, Sync) for op in even.inner.ops)


@pytest.mark.parametrize("mode", MODES)
def test_long_streams_use_head_inner_and_tail(mode):
    rng = check_block(mode, 4, 1, 1, 201, 1, 400)
    ks = build_kernel_schedule(plan(mode, 4, 1), 4)
    names = [name for name, _ in block_trace(ks, rng)]
    assert names[0] == "head_lowermost" and names.count("inner") > 20 and names[-1] == "tail"
    middle = BlockRanges.of(201, 401, 1, 400, 4, 1)
    assert [n for n, _ in block_trace(ks, middle)][0] == "head_middle"


def test_short_streams_fall_back_to_guarded_steps():
    ks = build_kernel_schedule(plan("nondiag", 4, 1), 4)
    tiny = BlockRanges.of(1, 2, 1, 1, 4, 1)  # one interior plane
    assert {n for n, _ in block_trace(ks, tiny)} == {"tail"}
    check_block("nondiag", 4, 1, 1, 2, 1, 1)
