"""One stencil on several GPUs with cupy and NCCL: the grid cut into slabs of planes along
the streaming dimension (:mod:`an5dpy.blocking.slabs`), one per device, each advanced by
the unchanged kernels as its own grid, the halos refreshed between launches with NCCL
send/recv in one group on the devices' streams (what :mod:`an5dpy.check.simulate_slabs`
does on the CPU, and the generated host code of ``an5d-translate --gpus N`` in C).

* :func:`multi_gpu_runner`: one process drives every device (``ncclCommInitAll``).
* :func:`mpi_runner`: one process per device (mpi4py; rank 0 makes the NCCL unique id
  and broadcasts it), so the same code runs across nodes.

A :class:`MultiGpuRunner` takes the grid as one host array (:meth:`~MultiGpuRunner.run_host`:
scattered, run, gathered back where the C program leaves the result) or as per-device
cupy slabs (:meth:`~MultiGpuRunner.run`, in place: nothing goes through the host), laid
out as the single-device runner's pool: ``(k, planes, ..)`` for the stencil array's k
time buffers (a rotating program's work buffers are kept by the runner), ``(F, 2,
planes, ..)`` for the fields of a program of several statements, ``planes`` the slab's
:attr:`~an5dpy.blocking.slabs.Slab.held` planes. Read-only arrays are given whole (host or
device arrays); each device keeps a copy shifted to its slab
(:func:`~an5dpy.blocking.slabs.shifted_coefficient`).

cupy is imported only when a runner is built (see :func:`an5dpy.cuda.runtime.cupy_available`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from an5dpy.blocking.plan import (BlockingPlan, Launch, grid_extents, launch_plan,
                                  level_run)
from an5dpy.blocking.slabs import (Decomposition, Window, can_overlap, overlap_windows,
                                   partition, shifted_coefficient, slab_halo)
from an5dpy.check.simulate import field_pool, pool_fields
from an5dpy.check.simulate_slabs import refreshed_buffers
from an5dpy.cuda.runtime import CupyRunner, Cubin, check_plane_cells, launch_args
from an5dpy.cuda.render_model import Signature
from an5dpy.errors import UsageError
from an5dpy.ir import StencilInfo


def keep_nvlink_multicast_off() -> None:
    """Set ``NCCL_NVLS_ENABLE=0`` unless the user set it, before any communicator exists.
    NVLink SHARP (multicast) makes NCCL map multicast objects on the NVSwitches; on a
    shared host a failure there can take the host's GPUs out of service for everyone, and
    a halo exchange (point-to-point send/recv) gains nothing from it."""
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")


def nccl_type(dtype: str) -> int:
    from cupy.cuda import nccl
    return nccl.NCCL_FLOAT32 if dtype == "float" else nccl.NCCL_FLOAT64


@dataclass
class PhaseTimes:
    """CUDA events per launch on every local slab's compute stream, which cut the launch's
    span into segments that are alternately the slab's work and a wait for the halo
    exchange (``events[slab index]``: one list of events per launch).

    Without overlap a launch records ``(start, computed, exchanged)``: its kernel, then
    the exchange that follows it on the same stream (an exchange ends on a stream once its
    receives are complete, so a slab whose neighbour is still computing waits there).
    With overlap (:meth:`MultiGpuRunner.run`) a launch after the first records ``(start,
    interior done, exchange waited for, computed)``: the interior window, the time the
    compute stream stood waiting for the previous launch's exchange beyond the window (its
    exposed part; the rest ran under the window), then the edge windows and copies; the
    last launch adds the wait for its own exchange. So the work segments are the kernels
    and copies, and the others the exchange time that was not hidden."""

    events: dict = field(default_factory=dict)  # slab index -> [[event, ..] per launch]

    def begin(self, index: int, stream) -> None:
        """Record the start of a launch of slab ``index`` (on the current device, the
        stream's)."""
        self.events.setdefault(index, []).append([])
        self.mark(index, stream)

    def mark(self, index: int, stream) -> None:
        """Record the end of the launch's current segment."""
        import cupy
        event = cupy.cuda.Event()
        event.record(stream)
        self.events[index][-1].append(event)

    def computed(self, index: int, stream) -> None:
        """Record the end of the launch's work (without overlap: its kernel)."""
        self.mark(index, stream)

    def exchanged(self, index: int, stream) -> None:
        """Record the end of a wait for the exchange (without overlap: the exchange)."""
        self.mark(index, stream)

    def launch_ms(self) -> list[dict[int, tuple[float, float]]]:
        """Per launch, each slab's (work, exchange) milliseconds: the sums of its
        alternate segments."""
        import cupy
        for launches in self.events.values():
            launches[-1][-1].synchronize()
        count = max((len(t) for t in self.events.values()), default=0)
        out = []
        for k in range(count):
            launch = {}
            for g, launches in self.events.items():
                marks = launches[k]
                spans = [cupy.cuda.get_elapsed_time(a, b) for a, b in zip(marks, marks[1:])]
                launch[g] = (sum(spans[0::2]), sum(spans[1::2]))
            out.append(launch)
        return out

    def slab_seconds(self) -> dict[int, tuple[float, float]]:
        """Each local slab's kernel and exchange seconds, summed over the launches."""
        out: dict[int, tuple[float, float]] = {}
        for launch in self.launch_ms():
            for g, (c, x) in launch.items():
                c0, x0 = out.get(g, (0.0, 0.0))
                out[g] = (c0 + c / 1e3, x0 + x / 1e3)
        return out

    def seconds(self) -> tuple[float, float]:
        """(compute, exchange) seconds of the run (:func:`critical_phases`)."""
        compute, exchange = critical_phases(self.launch_ms())
        return compute / 1e3, exchange / 1e3


def critical_phases(launches: Sequence[Mapping[int, tuple[float, float]]]
                    ) -> tuple[float, float]:
    """(compute, exchange) summed over ``launches`` (each slab's (kernel, exchange)
    times): per launch, compute is the slowest slab's kernel and exchange the rest of the
    longest span from a kernel's start to its exchange's end (the transfer, and a wait for
    a slower neighbour). Only each slab's own events are subtracted from each other:
    the clocks of two devices are never compared."""
    compute = exchange = 0.0
    for launch in launches:
        slowest = max(c for c, _ in launch.values())
        compute += slowest
        exchange += max(c + x for c, x in launch.values()) - slowest
    return compute, exchange


@dataclass(frozen=True)
class _WindowLaunch:
    """A window of a slab's overlapped launches, ready to launch: the window, dimension 0
    replaced by its own (``dims``), the kernels' arguments after the buffers (the
    read-only arrays shifted to its first plane) and, for an edge window, its scratch
    destination."""

    window: Window
    dims: tuple
    sizes: list
    scratch: object = None


@dataclass
class LocalSlab:
    """A slab this process runs: its device, the kernels loaded there, its NCCL
    communicator (rank = the slab's index) and its stream."""

    index: int
    device: int
    runner: CupyRunner
    comm: object
    stream: object


class MultiGpuRunner:
    """Runs a plan's kernels over ``count`` slabs, those of ``local`` in this process."""

    def __init__(self, info: StencilInfo, plan: BlockingPlan, count: int,
                 local: Sequence[LocalSlab]):
        import cupy
        self._cupy = cupy
        self.info, self.plan, self.count = info, plan, count
        self.local = list(local)
        self._work: dict[int, object] = {}  # a rotating program's work buffers, per slab
        self._scratch: dict[tuple, object] = {}  # edge windows' destinations (overlap)
        self._xstreams: dict[int, object] = {}  # exchange streams, per slab (overlap)

    # ------------------------------------------------------------------ geometry

    def decomposition(self, env: Mapping[str, int | float]) -> Decomposition:
        """The slabs at the sizes of ``env`` (:func:`~an5dpy.blocking.slabs.partition`:
        refuses slabs thinner than the halo)."""
        return partition(grid_extents(self.info, env)[0], self.count,
                         slab_halo(self.info, self.plan))

    def slab_shape(self, env: Mapping[str, int | float], index: int) -> tuple[int, ...]:
        """The shape of slab ``index``'s array in :meth:`run`'s layout."""
        dims = grid_extents(self.info, env)
        planes = self.decomposition(env).slabs[index].planes
        inner = (planes, *(d.size for d in dims[1:]))
        if self.info.coupled:
            return (len(self.info.fields), 2, *inner)
        return (self.info.time.buffers, *inner)

    # ------------------------------------------------------------------ host arrays

    def scatter(self, state, env: Mapping[str, int | float]) -> list:
        """Each local slab's part of the host state (the grid, or the fields of a program
        of several statements) as a device array of :meth:`slab_shape`."""
        cupy = self._cupy
        pool = field_pool(self.info, state) if self.info.coupled else np.asarray(state)
        decomp = self.decomposition(env)
        out = []
        for ls in self.local:
            held = slice(*decomp.slabs[ls.index].held)
            part = pool[:, :, held] if self.info.coupled else pool[:, held]
            with cupy.cuda.Device(ls.device):
                out.append(cupy.asarray(np.ascontiguousarray(part)))
        return out

    def gather(self, slabs: Sequence, env: Mapping[str, int | float], pool: np.ndarray) -> None:
        """Copy each local slab's owned planes into the host ``pool`` (the layout of
        :meth:`scatter`'s input: the grid, or :func:`field_pool` of the fields)."""
        decomp = self.decomposition(env)
        for ls, part in zip(self.local, slabs):
            s = decomp.slabs[ls.index]
            with self._cupy.cuda.Device(ls.device):
                if self.info.coupled:
                    pool[:, :, slice(*s.owned)] = self._cupy.asnumpy(part[:, :, s.owned_local])
                else:
                    pool[:, slice(*s.owned)] = self._cupy.asnumpy(part[:, s.owned_local])

    def run_host(self, state, env: Mapping[str, int | float], read_only: Sequence = (),
                 overlap: bool = False):
        """Scatter the host ``state``, run, gather: the new state (a new array, or the
        fields' arrays), as :meth:`an5dpy.cuda.runtime.CupyRunner.run_numpy` returns it.
        With several processes, each one fills in the owned planes of its own slabs
        (:func:`mpi_run_host` collects them on rank 0). ``overlap`` as :meth:`run`."""
        pool = self.run_pool(state, env, read_only, overlap)
        return pool_fields(self.info, env, pool) if self.info.coupled else pool

    def run_pool(self, state, env: Mapping[str, int | float], read_only: Sequence = (),
                 overlap: bool = False) -> np.ndarray:
        """:meth:`run_host`'s result in the device layout (:func:`field_pool` for a program
        of several statements), the local slabs' owned planes updated."""
        slabs = self.scatter(state, env)
        self.run(slabs, env, read_only, overlap=overlap)
        self.synchronize()
        pool = field_pool(self.info, state) if self.info.coupled else np.array(state, copy=True)
        self.gather(slabs, env, pool)
        return pool

    # ------------------------------------------------------------------ the run

    def run(self, slabs: Sequence, env: Mapping[str, int | float], read_only: Sequence = (),
            timer: PhaseTimes | None = None, overlap: bool = False) -> None:
        """Advance the per-device ``slabs`` (one cupy array per local slab, on its device,
        of :meth:`slab_shape`) in place by the scop's steps; ``read_only``: the whole
        read-only arrays (``info.coefficients`` order). Halos are refreshed before the first
        launch too, so only the owned planes (and the array's streaming boundary planes,
        in the first and last slab) must hold the data. ``timer`` records the phases of
        every local slab (:class:`PhaseTimes`). Returns once every device's work is queued.

        ``overlap``: each exchange after the first launch runs on a second stream per
        slab while the next launch's interior window runs, the edge windows after it
        (:func:`~an5dpy.blocking.slabs.overlap_windows`; the kernels unchanged, over views
        of the buffers' planes, the edge windows into scratch buffers kept by the runner
        whose exact planes are copied). Only programs of one statement and two buffers
        overlap (:func:`~an5dpy.blocking.slabs.can_overlap`); the others, and slabs too
        thin for windows, run each launch after the exchange. The result is the same bits
        either way. Whether it pays is the model's call (:mod:`an5dpy.perf.multi`), made
        by the callers of a later stage (``Stencil.run(devices=..)``); here the default
        is off."""
        cupy = self._cupy
        decomp = self.decomposition(env)
        dims = grid_extents(self.info, env)
        if any(d.length == 0 for d in dims):
            return
        check_plane_cells(dims)
        if len(read_only) != len(self.info.coefficients):
            raise UsageError(f"{len(read_only)} read-only arrays given; the program reads "
                             f"{len(self.info.coefficients)}")
        if len(slabs) != len(self.local):
            raise UsageError(f"{len(slabs)} slabs given for {len(self.local)} devices")
        for ls, part in zip(self.local, slabs):
            want = self.slab_shape(env, ls.index)
            if tuple(part.shape) != want or part.device.id != ls.device:
                raise UsageError(f"slab {ls.index} must be a cupy array of shape {want} on "
                                 f"device {ls.device}, not of shape {tuple(part.shape)} on "
                                 f"device {part.device.id}")
        steps, start = self.info.time.steps(env), self.info.time.start_buffer(env)
        levels = self.plan.levels
        run = level_run(steps, self.plan.bt, start, levels) if levels.rotating else None
        launches = run.launches if run is not None else launch_plan(steps, self.plan.bt, start)
        pools, sizes, slab_dims = [], [], []
        for ls, part in zip(self.local, slabs):
            s = decomp.slabs[ls.index]
            with cupy.cuda.Device(ls.device), ls.stream:
                buffers = self._buffers(ls.index, part)
            coefs = self._coefficients(ls, s.start, read_only)
            local_dims = decomp.dims(dims, s)
            pools.append(buffers)
            slab_dims.append(local_dims)
            sizes.append(launch_args(ls.runner.signature, self.info, local_dims, env, coefs))
        first = tuple(range(levels.buffers)) if levels.rotating else (0, 1)
        self._exchange(decomp, pools, first)
        if overlap and self.count > 1 and launches and can_overlap(self.info, self.plan):
            windows = [self._windows(decomp, dims, env, read_only, ls, part)
                       for ls, part in zip(self.local, slabs)]
            self._run_overlapped(launches, pools, slab_dims, sizes, windows, decomp, timer)
            return
        for launch in launches:
            for k, (ls, buffers) in enumerate(zip(self.local, pools)):
                with cupy.cuda.Device(ls.device), ls.stream:
                    if timer is not None:
                        timer.begin(ls.index, ls.stream)
                    kernel_buffers = buffers[0] if self.info.coupled else buffers
                    ls.runner.launch(launch, kernel_buffers, slab_dims[k], sizes[k])
                    if timer is not None:
                        timer.computed(ls.index, ls.stream)
            self._exchange(decomp, pools, refreshed_buffers(self.plan, launch))
            if timer is not None:
                for ls in self.local:
                    with cupy.cuda.Device(ls.device):
                        timer.exchanged(ls.index, ls.stream)
        if run is not None:
            for ls, buffers, local_dims in zip(self.local, pools, slab_dims):
                with cupy.cuda.Device(ls.device), ls.stream:
                    run.place(buffers, local_dims)

    def _coefficients(self, ls: LocalSlab, start: int, read_only: Sequence) -> dict:
        """The read-only arrays on ``ls``'s device as kernels whose buffers start at global
        plane ``start`` read them (:func:`~an5dpy.blocking.slabs.shifted_coefficient`)."""
        cupy = self._cupy
        with cupy.cuda.Device(ls.device), ls.stream:
            # through the host: a device array given may sit on another device
            return {c.name: cupy.asarray(shifted_coefficient(
                a if isinstance(a, np.ndarray) else cupy.asnumpy(a), c.reads, start, 0))
                for c, a in zip(self.info.coefficients, read_only)}

    def _windows(self, decomp: Decomposition, dims, env, read_only: Sequence, ls: LocalSlab,
                 part) -> tuple | None:
        """``ls``'s windows ready to launch: (interior, edges), each a
        :class:`_WindowLaunch`; None where the slab is too thin for windows."""
        s = decomp.slabs[ls.index]
        windows = overlap_windows(s, decomp.halo)
        if windows is None:
            return None
        out = []
        for w in (windows.interior, *windows.edges):
            local = (w.stream, *dims[1:])
            coefs = self._coefficients(ls, s.start + w.start, read_only)
            scratch = None
            if w.copy is not None:
                key = (ls.index, w.planes, part.dtype.str, part.shape[2:])
                scratch = self._scratch.get(key)
                if scratch is None:
                    with self._cupy.cuda.Device(ls.device):
                        scratch = self._cupy.empty((w.size, *part.shape[2:]), part.dtype)
                    self._scratch[key] = scratch
            out.append(_WindowLaunch(w, local, launch_args(ls.runner.signature, self.info,
                                                           local, env, coefs), scratch))
        return out[0], tuple(out[1:])

    def _exchange_stream(self, ls: LocalSlab):
        """The slab's second stream, for the exchange while its compute stream runs the
        interior window (kept by the runner)."""
        stream = self._xstreams.get(ls.index)
        if stream is None:
            with self._cupy.cuda.Device(ls.device):
                stream = self._cupy.cuda.Stream(non_blocking=True)
            self._xstreams[ls.index] = stream
        return stream

    def _launch_window(self, ls: LocalSlab, launch: Launch, buffers, w: "_WindowLaunch"
                       ) -> None:
        """``launch`` over the planes of window ``w`` of the slab's ``buffers``, on the
        current stream: into the destination buffer, or into ``w``'s scratch buffer
        (buffers 0 and 1 stay the levels' boundary values, the source is passed again as
        buffer 2) and then its exact planes, interior cells only, into the destination."""
        p0, p1 = w.window.planes
        view = [buffers[0][p0:p1], buffers[1][p0:p1]]
        if w.scratch is None:
            ls.runner.launch(launch, view, w.dims, w.sizes)
            return
        ls.runner.launch(Launch(launch.degree, 2, launch.boundary_even),
                         [*view, view[launch.source], w.scratch], w.dims, w.sizes)
        c0, c1 = w.window.copy
        cells = tuple(slice(d.lower, d.upper + 1) for d in w.dims[1:])
        buffers[launch.source ^ 1][(slice(c0, c1), *cells)] = \
            w.scratch[(slice(c0 - p0, c1 - p0), *cells)]

    def _run_overlapped(self, launches, pools, slab_dims, sizes, windows, decomp, timer
                        ) -> None:
        """The launches with each exchange on the exchange streams (:meth:`run`): the
        first launch whole; every later one, per slab, the interior window, a wait for
        the previous launch's exchange, then the edge windows (or the whole launch, for a
        slab too thin for windows); each launch's exchange once its work is done; at the
        end the compute streams wait for the last exchange, so that they hold the run."""
        cupy = self._cupy
        xstreams = [self._exchange_stream(ls) for ls in self.local]
        exchanged: list = [None] * len(self.local)  # events: each slab's pending exchange done
        for k, launch in enumerate(launches):
            for i, (ls, buffers) in enumerate(zip(self.local, pools)):
                with cupy.cuda.Device(ls.device), ls.stream:
                    if timer is not None:
                        timer.begin(ls.index, ls.stream)
                    if k > 0:
                        if windows[i] is not None:
                            self._launch_window(ls, launch, buffers, windows[i][0])
                        if timer is not None:
                            timer.computed(ls.index, ls.stream)
                        ls.stream.wait_event(exchanged[i])
                        if timer is not None:
                            timer.exchanged(ls.index, ls.stream)
                    if k == 0 or windows[i] is None:
                        ls.runner.launch(launch, buffers, slab_dims[i], sizes[i])
                    else:
                        for w in windows[i][1]:
                            self._launch_window(ls, launch, buffers, w)
                    if timer is not None:
                        timer.computed(ls.index, ls.stream)
                    xstreams[i].wait_event(ls.stream.record())
            self._exchange(decomp, pools, refreshed_buffers(self.plan, launch), xstreams)
            for i, ls in enumerate(self.local):
                with cupy.cuda.Device(ls.device):
                    exchanged[i] = xstreams[i].record()
        for i, ls in enumerate(self.local):
            with cupy.cuda.Device(ls.device):
                ls.stream.wait_event(exchanged[i])
                if timer is not None:
                    timer.exchanged(ls.index, ls.stream)

    def synchronize(self) -> None:
        for ls in self.local:
            ls.stream.synchronize()

    def join(self) -> None:
        """Make the current stream of the current device wait for the work queued on every
        local slab's stream, so that an event recorded there next marks the run's end on
        every device (a timing of the whole run from one device)."""
        cupy = self._cupy
        current = cupy.cuda.get_current_stream()
        for ls in self.local:
            with cupy.cuda.Device(ls.device):
                done = cupy.cuda.Event()
                done.record(ls.stream)
            current.wait_event(done)

    def _buffers(self, index: int, part):
        """The buffers a launch's numbers index: the slab's time buffers and, for a
        rotating program, the work buffers after them (kept per slab); the coupled pool
        as given (the kernels take field 0's buffers, the exchange every field's)."""
        levels = self.plan.levels
        if not levels.rotating:
            return part
        shape = (levels.work_buffers, *part.shape[1:])
        work = self._work.get(index)
        if work is None or work.shape != shape or work.dtype != part.dtype:
            work = self._cupy.empty(shape, part.dtype)
            self._work[index] = work
        return [*part, *work]

    def _exchange(self, decomp: Decomposition, pools: Sequence, buffers: Sequence[int],
                  streams: Sequence | None = None) -> None:
        """The halo planes of ``buffers`` (every field's, in a program of several
        statements) from the neighbours' owned planes: one NCCL group of every send and
        receive that involves a local slab, each on its slab's stream (``streams``, one
        per local slab; default: the compute streams)."""
        from cupy.cuda import nccl
        streams = streams or [ls.stream for ls in self.local]
        here = {ls.index: (ls, pool, stream)
                for ls, pool, stream in zip(self.local, pools, streams)}
        dtype = nccl_type(self.plan.dtype)
        fields = range(len(self.info.fields)) if self.info.coupled else (None,)
        nccl.groupStart()
        try:
            for t in decomp.transfers:
                for end, peer, send in ((t.source, t.dest, True), (t.dest, t.source, False)):
                    if end not in here:
                        continue
                    ls, pool, stream = here[end]
                    planes = decomp.slabs[end].local(t.planes)
                    for f in fields:
                        for b in buffers:
                            part = pool[f][b][planes] if f is not None else pool[b][planes]
                            count = part.size
                            if send:
                                ls.comm.send(part.data.ptr, count, dtype, peer, stream.ptr)
                            else:
                                ls.comm.recv(part.data.ptr, count, dtype, peer, stream.ptr)
        finally:
            nccl.groupEnd()


def _local_slab(info, plan, cubin: Cubin, prefix: str, signature: Signature, index: int,
                device: int, comm) -> LocalSlab:
    import cupy
    with cupy.cuda.Device(device):
        return LocalSlab(index, device, CupyRunner(info, plan, cubin, prefix, signature), comm,
                         # a blocking stream: it waits for the legacy default stream's
                         # work (the copies that filled the slab) and that stream for it
                         cupy.cuda.Stream())


#: Runners by (cubin, devices): communicators and loaded modules are made once per process.
_RUNNERS: dict[tuple[str, tuple[int, ...]], MultiGpuRunner] = {}


def multi_gpu_runner(info: StencilInfo, plan: BlockingPlan, cubin: Cubin, prefix: str,
                     signature: Signature, devices: Sequence[int]) -> MultiGpuRunner:
    """A runner of one process over ``devices`` (slab g on ``devices[g]``), the module
    loaded on each, the communicators made by ``ncclCommInitAll``; kept for the process."""
    from cupy.cuda import nccl
    devices = check_devices(devices)
    key = (cubin.path, devices)
    if key not in _RUNNERS:
        keep_nvlink_multicast_off()
        comms = nccl.NcclCommunicator.initAll(list(devices))
        _RUNNERS[key] = runner_over(info, plan, cubin, prefix, signature, devices, comms)
    return _RUNNERS[key]


def runner_over(info: StencilInfo, plan: BlockingPlan, cubin: Cubin, prefix: str,
                signature: Signature, devices: Sequence[int], comms: Sequence
                ) -> MultiGpuRunner:
    """A runner of one process over ``devices`` with the communicators ``comms`` (one per
    device, ``ncclCommInitAll``'s: :func:`communicators`), the module loaded on each."""
    return MultiGpuRunner(info, plan, len(devices), [
        _local_slab(info, plan, cubin, prefix, signature, g, d, comm)
        for g, (d, comm) in enumerate(zip(devices, comms))])


#: Communicators by devices, shared by the runners of :func:`communicators`' callers.
_COMMS: dict[tuple[int, ...], list] = {}


def communicators(devices: Sequence[int]) -> list:
    """NCCL communicators over ``devices`` (``ncclCommInitAll``), made once per process,
    for runners of several builds (the tuner's, :func:`runner_over`): operations on one
    communicator queued on different streams must not run at once (they can deadlock),
    so the runners that share them run one after the other, each run finished before
    the next starts."""
    from cupy.cuda import nccl
    devices = check_devices(devices)
    if devices not in _COMMS:
        keep_nvlink_multicast_off()
        _COMMS[devices] = nccl.NcclCommunicator.initAll(list(devices))
    return _COMMS[devices]


def mpi_runner(info: StencilInfo, plan: BlockingPlan, cubin: Cubin, prefix: str,
               signature: Signature, mpi_comm=None, device: int | None = None
               ) -> MultiGpuRunner:
    """A runner of one slab per MPI process (mpi4py; ``mpi_comm`` defaults to
    ``COMM_WORLD``): the slab of the process' rank, on ``device`` (default: the rank
    modulo the devices visible), the NCCL communicator made by ``ncclCommInitRank`` with
    the unique id rank 0 made and broadcast."""
    import cupy
    from cupy.cuda import nccl
    from mpi4py import MPI
    comm = mpi_comm or MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if device is None:
        device = rank % cupy.cuda.runtime.getDeviceCount()
    keep_nvlink_multicast_off()
    uid = comm.bcast(nccl.get_unique_id() if rank == 0 else None, root=0)
    with cupy.cuda.Device(device):
        nccl_comm = nccl.NcclCommunicator(size, uid, rank)
    return MultiGpuRunner(info, plan, size, [
        _local_slab(info, plan, cubin, prefix, signature, rank, device, nccl_comm)])


def mpi_run_host(runner: MultiGpuRunner, state, env: Mapping[str, int | float],
                 read_only: Sequence = (), mpi_comm=None):
    """:meth:`MultiGpuRunner.run_host` over the ranks of an :func:`mpi_runner`: every rank
    passes the same initial ``state`` and runs its slab, then rank 0 collects the owned
    planes of every slab and returns the new state; the other ranks return None."""
    from mpi4py import MPI
    comm = mpi_comm or MPI.COMM_WORLD
    pool = runner.run_pool(state, env, read_only)
    rank = comm.Get_rank()
    for s in runner.decomposition(env).slabs[1:]:
        owned = (slice(None), slice(None), slice(*s.owned)) if runner.info.coupled else \
            (slice(None), slice(*s.owned))
        if rank == s.index:
            comm.Send(np.ascontiguousarray(pool[owned]), dest=0, tag=s.index)
        elif rank == 0:
            part = np.empty_like(pool[owned])
            comm.Recv(part, source=s.index, tag=s.index)
            pool[owned] = part
    if rank != 0:
        return None
    return pool_fields(runner.info, env, pool) if runner.info.coupled else pool


def check_devices(devices: Sequence[int]) -> tuple[int, ...]:
    """``devices`` as distinct visible device numbers, at least one."""
    import cupy
    devices = tuple(int(d) for d in devices)
    visible = cupy.cuda.runtime.getDeviceCount()
    if not devices:
        raise UsageError("devices=[]: give at least one device")
    if len(set(devices)) != len(devices):
        raise UsageError(f"devices={list(devices)}: each device at most once")
    bad = [d for d in devices if not 0 <= d < visible]
    if bad:
        raise UsageError(f"device {bad[0]} does not exist ({visible} visible)")
    return devices

