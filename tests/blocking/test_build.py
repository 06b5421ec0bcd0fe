"""Schedule construction (:mod:`an5dpy.blocking.build`): step order, fixed register
allocation, double-buffered shared memory, register counts."""

from __future__ import annotations

import pytest

from an5dpy.blocking.build import build_kernel_schedule
from an5dpy.blocking.ops import Boundary, Calc, Load, Reg, Store

from block_support import MODES, plan


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("d, r", [(1, 1), (2, 1), (3, 2), (4, 1), (5, 3), (2, 0), (16, 1)])
def test_steps_run_levels_in_order_and_load_the_next_plane_after_level_1(mode, d, r):
    ks = build_kernel_schedule(plan(mode, d, r), d)
    assert ks.unroll % (2 * r + 1) == 0
    assert (ks.unroll * d) % 2 == 0
    for phase in (*ks.heads.values(), ks.inner, ks.tail):
        for st_ in phase.steps:
            loads = [i for i, op in enumerate(st_.ops) if isinstance(op, Load)]
            assert len(loads) <= 1
            levels = [op.level for op in st_.ops if not isinstance(op, Load)]
            assert levels == sorted(levels) and len(set(levels)) == len(levels)
            if loads:
                load = st_.ops[loads[0]]
                assert load.plane == st_.index + 1  # one step ahead of its first use
                before = [op.level for op in st_.ops[:loads[0]]]
                readers = [op.level for op in st_.ops if op.level == 1 or
                           (op.level == 2 and getattr(op, "prev", None) is not None)]
                assert before == sorted(set(before)) and set(readers) <= set(before)
                assert before == [lv for lv in levels if lv <= max(readers, default=0)]
    assert ks.prologue.ops == (Load(Reg(0, 0), 0),)
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
        bufs = [op.buf for op in head.ops if op.barrier]
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


@pytest.mark.parametrize("d, r", [(1, 1), (2, 1), (3, 2), (4, 1), (5, 3), (16, 1)])
@pytest.mark.parametrize("static_heads", (True, False))
def test_one_barrier_per_step_shares_every_input_before_it(d, r, static_heads):
    """barriers=step: a step that feeds any level op writes every level op's input plane
    (its centre register) to the level's buffer of the step's parity, then one barrier,
    then the level ops, which have none of their own; chunks keep the parities static."""
    from dataclasses import replace as with_
    from an5dpy.blocking.ops import PUBLISHES_STEP, Share, Sync
    from an5dpy.blocking.plan import Barriers
    p = with_(plan("nondiag", d, r), barriers=Barriers.STEP)
    ks = build_kernel_schedule(p, d, static_heads)
    assert ks.unroll % 2 == 0 or ks.compact
    for phase in (*ks.heads.values(), ks.inner, ks.tail):
        fed = False
        for st_ in phase.steps:
            levels = [op for op in st_.ops if isinstance(op, (Calc, Store))]
            syncs = [i for i, op in enumerate(st_.ops) if isinstance(op, Sync)]
            if not levels:
                assert not fed and not syncs
                continue
            fed = True
            step_sync = [i for i in syncs if st_.ops[i].why == PUBLISHES_STEP]
            assert len(step_sync) == 1
            shares, rest = st_.ops[:step_sync[0]], st_.ops[step_sync[0] + 1:]
            assert all(isinstance(op, Share) for op in shares)
            assert not any(isinstance(op, Share) for op in rest)
            assert [(s.level, s.src, s.plane, s.buf) for s in shares] == [
                (op.level, op.ins[r], op.plane, 2 * (op.level - 1) + st_.index % 2)
                for op in levels]
            assert all(op.shared and not op.barrier and op.buf == s.buf
                       for op, s in zip(levels, shares))
            # a compact chunk of odd length closes with its own barrier
            closing = [i for i in syncs if i not in step_sync]
            assert closing == ([len(st_.ops) - 1] if ks.compact and ks.unroll % 2
                               and st_.index == ks.unroll - 1 else [])


def test_one_barrier_per_step_gives_each_level_two_buffers():
    from dataclasses import replace as with_
    from an5dpy.blocking.plan import Barriers
    level, step = plan("nondiag", 5, 1), with_(plan("nondiag", 5, 1), barriers=Barriers.STEP)
    assert (level.smem_buffers, step.smem_buffers) == (2, 10)
    assert step.smem_bytes == 5 * level.smem_bytes


@pytest.mark.parametrize("d, r", [(1, 1), (2, 1), (3, 2), (5, 3), (16, 1)])
@pytest.mark.parametrize("static_heads", (True, False))
def test_warp_shuffles_leave_no_barrier_and_no_shared_write(d, r, static_heads):
    """barriers=shuffle: the level ops only evaluate (their row neighbours are shuffled
    in), so a phase has no Sync and no Share, and chunks are one ring long (no buffer
    parity to keep)."""
    from dataclasses import replace as with_
    from an5dpy.blocking.ops import Share, Sync
    from an5dpy.blocking.plan import Barriers
    p = with_(plan("nondiag", d, r), barriers=Barriers.SHUFFLE)
    ks = build_kernel_schedule(p, d, static_heads)
    assert ks.unroll == p.slots(d)
    level_ops = 0
    for phase in (*ks.heads.values(), ks.inner, ks.tail):
        for st_ in phase.steps:
            assert not any(isinstance(op, (Share, Sync)) or op.barrier for op in st_.ops)
            for op in st_.ops:
                if isinstance(op, (Calc, Store)):
                    assert op.shuffled and not op.shared and op.evaluates_only
                    assert op.name.endswith("_E")
                    level_ops += 1
    assert level_ops >= d
    assert p.smem_buffers == 0
