"""The schedule on several GPUs, simulated: one slab per GPU (:mod:`an5dpy.blocking.slabs`),
each run by the CPU simulator as its own grid, halos refreshed from the neighbours
between launches as the NCCL exchange does, the owned planes gathered at the end.

This is how the decomposition is checked without GPUs: the gathered result must be
bit-identical to the one-device simulation (:func:`an5dpy.check.simulate.simulate`) and
to gcc, for every program form the blocked schedule runs. The cupy runner
(:mod:`an5dpy.cuda.multi_gpu`) and the generated host code do what this module does, with
kernels instead of :func:`~an5dpy.check.simulate.run_launch` and NCCL instead of copies.

With ``overlap`` it runs the runner's overlapped schedule (:func:`~an5dpy.blocking.slabs.
overlap_windows`) in the order the streams allow it, one step after the other: every
launch after the first runs each slab's interior window *before* the exchange that the
previous launch left pending, with the halo planes that exchange writes set to NaN (so a
window that read one would poison the result), then the exchange, then the edge windows
into scratch buffers of NaN and the copies of their exact planes (slabs too thin for
windows run the whole launch there).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from an5dpy.blocking.build import build_schedule
from an5dpy.blocking.ops import Schedule
from an5dpy.blocking.plan import (BlockingPlan, Launch, LevelLaunch, grid_extents, launch_plan,
                                  level_run)
from an5dpy.blocking.slabs import (Decomposition, Window, can_overlap, overlap_windows,
                                   partition, shifted_coefficient, slab_halo)
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


def run_window(kernels, kernel, dims: tuple, pool: np.ndarray, launch: Launch,
               window: Window) -> None:
    """``launch`` over the planes of ``window`` of a slab's buffers ``pool`` (``dims``: the
    slab's, whose dimension 0 the window's replaces; ``kernels``: the update with the
    read-only arrays shifted to the window's first plane). A window without ``copy``
    writes the destination itself; one with writes a scratch buffer of NaN, read as
    nothing else (buffers 0 and 1 stay the levels' boundary values, the source is read
    from a copy), whose planes ``copy`` then go into the destination, interior cells
    only."""
    view = pool[:, slice(*window.planes)]
    local = (window.stream, *dims[1:])
    if window.copy is None:
        run_launch(kernels, kernel, local, view, launch)
        return
    scratch = np.concatenate([view[:2], view[launch.source][None], np.full_like(view[:1], np.nan)])
    run_launch(kernels, kernel, local, scratch, Launch(launch.degree, 2, launch.boundary_even))
    cells = tuple(slice(d.lower, d.upper + 1) for d in dims[1:])
    c0, c1 = window.copy
    pool[(launch.source ^ 1, slice(c0, c1), *cells)] = \
        scratch[(3, slice(c0 - window.start, c1 - window.start), *cells)]


def poison_halos(decomp: Decomposition, pools: Sequence[np.ndarray], buffer: int) -> None:
    """NaN in the halo planes of ``buffer`` of every slab: what the pending exchange
    writes, so that no window that runs before it may read them."""
    for t in decomp.transfers:
        pools[t.dest][buffer, decomp.slabs[t.dest].local(t.planes)] = np.nan


def simulate_slabs(info: StencilInfo, plan: BlockingPlan, state, env: Mapping[str, int | float],
                   gpus: int, schedule: Schedule | None = None,
                   read_only: tuple[np.ndarray, ...] = (), overlap: bool = False):
    """:func:`~an5dpy.check.simulate.simulate` on ``gpus`` slabs: the same arguments and
    result (``state`` is the grid, or a program of several statements' fields). With
    ``overlap``, the overlapped schedule (module docstring), for the programs that can
    run it (:func:`~an5dpy.blocking.slabs.can_overlap`; the others as without)."""
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
    updates: dict[int, object] = {}

    def update(start: int):
        """The update with the read-only arrays shifted to global plane ``start``."""
        if start not in updates:
            updates[start] = compiled_update(info, plan, env, tuple(
                shifted_coefficient(np.asarray(a, numpy_type(c.elem_type)), c.reads, start,
                                    np.nan)
                for c, a in zip(info.coefficients, read_only)))
        return updates[start]

    slab_dims = [decomp.dims(dims, s) for s in decomp.slabs]
    steps, start = info.time.steps(env), info.time.start_buffer(env)
    run = level_run(steps, plan.bt, start, plan.levels) if plan.levels.rotating else None
    launches = run.launches if run is not None else launch_plan(steps, plan.bt, start)
    overlap = overlap and can_overlap(info, plan)
    windows = [overlap_windows(s, decomp.halo) if overlap else None for s in decomp.slabs]
    pending: tuple[int, ...] = ()  # buffers whose refresh the next launch overlaps
    for k, launch in enumerate(launches):
        kernel = schedule.kernel(plan.kernel_degree(launch.degree))
        if overlap and k > 0:
            poison_halos(decomp, held, launch.source)
            for g, s in enumerate(decomp.slabs):
                if windows[g] is not None:
                    w = windows[g].interior
                    run_window(update(s.start + w.start), kernel, slab_dims[g], held[g],
                               launch, w)
            exchange(decomp, held, pending, coupled)
            for g, s in enumerate(decomp.slabs):
                if windows[g] is None:
                    run_launch(update(s.start), kernel, slab_dims[g], held[g], launch)
                    continue
                for w in windows[g].edges:
                    run_window(update(s.start + w.start), kernel, slab_dims[g], held[g],
                               launch, w)
        else:
            for g, s in enumerate(decomp.slabs):
                pool = held[g].swapaxes(0, 1) if coupled else held[g]
                run_launch(update(s.start), kernel, slab_dims[g], pool, launch)
        pending = refreshed_buffers(plan, launch)
        if not overlap:
            exchange(decomp, held, pending, coupled)
    if overlap and launches:  # the last launch's refresh, as the runner makes it
        exchange(decomp, held, pending, coupled)
    if run is not None:
        for g in range(decomp.count):
            run.place(held[g], slab_dims[g])
    for s, pool in zip(decomp.slabs, held):
        if coupled:
            whole[:, :, slice(*s.owned)] = pool[:, :, s.owned_local]
        else:
            whole[:, slice(*s.owned)] = pool[:whole.shape[0], s.owned_local]
    return pool_fields(info, env, whole) if coupled else whole
