"""The schedule on several GPUs, simulated: one slab per GPU (:mod:`an5dpy.blocking.slabs`),
each run by the CPU simulator as its own grid, halos refreshed from the neighbours
between launches as the NCCL exchange does, the owned planes gathered at the end.

This is how the decomposition is checked without GPUs: the gathered result must be
bit-identical to the one-device simulation (:func:`an5dpy.check.simulate.simulate`) and
to gcc, for every program form the blocked schedule runs. The cupy runner
(:mod:`an5dpy.cuda.multi_gpu`) and the generated host code do what this module does, with
kernels instead of :func:`~an5dpy.check.simulate.run_launch` and NCCL instead of copies.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from an5dpy.blocking.build import build_schedule
from an5dpy.blocking.ops import Schedule
from an5dpy.blocking.plan import (BlockingPlan, Launch, LevelLaunch, grid_extents, launch_plan,
                                  level_run)
from an5dpy.blocking.slabs import Decomposition, partition, shifted_coefficient, slab_halo
from an5dpy.check.evaluate import numpy_type
from an5dpy.check.simulate import (compiled_update, field_pool, field_shapes, pool_fields,
                                   run_launch)
from an5dpy.errors import InternalError
from an5dpy.ir import StencilInfo


def decomposition(info: StencilInfo, plan: BlockingPlan, env: Mapping[str, int | float],
                  gpus: int) -> Decomposition:
    """The slabs of a run of ``plan`` on ``gpus`` GPUs at the sizes of ``env``."""
    return partition(grid_extents(info, env)[0], gpus, slab_halo(info, plan))


def refreshed_buffers(plan: BlockingPlan, launch: Launch | LevelLaunch) -> tuple[int, ...]:
    """The buffers whose halos a launch leaves stale and the next launch reads: the one a
    double-buffered launch writes, the levels a rotating launch stores (its other reads
    stay as they were). In a program of several statements, that buffer of every field."""
    if isinstance(launch, LevelLaunch):
        return launch.writes[:plan.levels.stored_levels(launch.degree)]
    return (launch.source ^ 1,)


def exchange(decomp: Decomposition, pools: Sequence[np.ndarray], buffers: Sequence[int],
             coupled: bool) -> None:
    """Refresh the halos of ``buffers`` of every slab from its neighbours' owned planes.
    ``pools[g]``: slab g's buffers, ``(buffers, planes, ..)``, or ``(fields, buffers,
    planes, ..)`` where ``coupled``."""
    for t in decomp.transfers:
        src, dst = decomp.slabs[t.source], decomp.slabs[t.dest]
        for b in buffers:
            if coupled:
                pools[t.dest][:, b, dst.local(t.planes)] = \
                    pools[t.source][:, b, src.local(t.planes)]
            else:
                pools[t.dest][b, dst.local(t.planes)] = pools[t.source][b, src.local(t.planes)]


def simulate_slabs(info: StencilInfo, plan: BlockingPlan, state, env: Mapping[str, int | float],
                   gpus: int, schedule: Schedule | None = None,
                   read_only: tuple[np.ndarray, ...] = ()):
    """:func:`~an5dpy.check.simulate.simulate` on ``gpus`` slabs: the same arguments and
    result (``state`` is the grid, or a program of several statements' fields)."""
    schedule = schedule or build_schedule(plan)
    dims = grid_extents(info, env)
    decomp = decomposition(info, plan, env, gpus)
    dtype = numpy_type(plan.dtype)
    coupled = info.coupled
    if coupled:
        shapes = field_shapes(info, env)
        if len(state) != len(shapes) or any(np.shape(a) != s for a, s in zip(state, shapes)):
            raise InternalError(f"field shapes {[np.shape(a) for a in state]} do not match "
                                f"{list(shapes)}")
        whole = field_pool(info, [np.asarray(f, dtype) for f in state])
        held = [whole[:, :, slice(*s.held)].copy() for s in decomp.slabs]
    else:
        whole = np.array(state, dtype=dtype, copy=True)
        if whole.shape != (info.time.buffers, *(d.size for d in dims)):
            raise InternalError(f"grid shape {whole.shape} does not match the extents")
        work = plan.levels.work_buffers
        held = [np.concatenate([whole[:, slice(*s.held)],
                                np.full((work, s.planes, *whole.shape[2:]), np.nan, dtype)])
                for s in decomp.slabs]
    kernels = [compiled_update(info, plan, env, tuple(
        shifted_coefficient(np.asarray(a, numpy_type(c.elem_type)), c.reads, s.start, np.nan)
        for c, a in zip(info.coefficients, read_only))) for s in decomp.slabs]
    slab_dims = [decomp.dims(dims, s) for s in decomp.slabs]
    steps, start = info.time.steps(env), info.time.start_buffer(env)
    run = level_run(steps, plan.bt, start, plan.levels) if plan.levels.rotating else None
    launches = run.launches if run is not None else launch_plan(steps, plan.bt, start)
    for launch in launches:
        kernel = schedule.kernel(plan.kernel_degree(launch.degree))
        for g, s in enumerate(decomp.slabs):
            pool = held[g].swapaxes(0, 1) if coupled else held[g]
            run_launch(kernels[g], kernel, slab_dims[g], pool, launch)
        exchange(decomp, held, refreshed_buffers(plan, launch), coupled)
    if run is not None:
        for g in range(decomp.count):
            run.place(held[g], slab_dims[g])
    for s, pool in zip(decomp.slabs, held):
        if coupled:
            whole[:, :, slice(*s.owned)] = pool[:, :, s.owned_local]
        else:
            whole[:, slice(*s.owned)] = pool[:whole.shape[0], s.owned_local]
    return pool_fields(info, env, whole) if coupled else whole
