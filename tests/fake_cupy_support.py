"""Test support: the several-GPU runner (an5dpy/cuda/multi_gpu.py) run on the CPU as it is,
with stand-ins for what it calls below it: ``cupy`` arrays are numpy arrays that know their
device, streams and events do nothing (every step runs at once, in program order), NCCL's
send and receive are paired at the end of a group and copied, and each slab's kernels are
the simulator's launch (an5dpy/check/simulate.py) over the buffers the runner passes, the
read-only arrays taken from the arguments it passes after them. So the runner's own work
(slabs, halo refreshes, windows, scratch buffers and copies, views of the buffers'
planes, the read-only arrays shifted per window, the phase timer's events) runs and is
checked bit for bit without a GPU; the order the streams impose on the GPU is
tests/gpu's subject."""

from __future__ import annotations

import sys
import types

import numpy as np

from an5dpy.blocking.plan import LevelLaunch
from an5dpy.check.simulate import compiled_update, run_launch
from numpy_gpus_support import _Device, _Event  # the same device and event stand-ins


class DeviceArray(np.ndarray):
    """A numpy array on a device: ``.device.id``, and ``.data.ptr`` the array itself (what
    the stand-in NCCL copies)."""

    def __array_finalize__(self, obj):
        self._device = getattr(obj, "_device", _Device.current)

    @property
    def device(self):
        return types.SimpleNamespace(id=self._device)

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self)


def on_device(values, dtype=None) -> DeviceArray:
    out = np.array(values, dtype=dtype, copy=True).view(DeviceArray)
    out._device = _Device.current
    return out


class _Stream:
    """A stream: its work ran when it was queued; ``waits`` counts the events it waited
    for (the tests check that overlap used its second streams)."""

    made: list = []

    def __init__(self, null=False, non_blocking=False):
        self.ptr = len(_Stream.made) + 1
        self.non_blocking = non_blocking
        self.waits = 0
        _Stream.made.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def record(self, event=None):
        return event or _Event()

    def wait_event(self, event):
        self.waits += 1

    def synchronize(self):
        pass


class _Nccl:
    """Sends and receives queued in a group, paired (in order per source and destination)
    and copied at its end."""

    NCCL_FLOAT32, NCCL_FLOAT64 = 7, 8

    def __init__(self):
        self.depth = 0
        self.sends: dict[tuple[int, int], list] = {}
        self.recvs: dict[tuple[int, int], list] = {}
        self.groups = 0

    def groupStart(self):
        self.depth += 1

    def groupEnd(self):
        self.depth -= 1
        if self.depth:
            return
        self.groups += 1
        assert self.sends.keys() == self.recvs.keys()
        for key, sent in self.sends.items():
            got = self.recvs[key]
            assert len(sent) == len(got)
            for (a, n), (b, m) in zip(sent, got):
                assert n == m == a.size == b.size and a.dtype == b.dtype
                b[...] = a
        self.sends.clear()
        self.recvs.clear()


class _Comm:
    def __init__(self, nccl: _Nccl, rank: int):
        self.nccl, self.rank = nccl, rank

    def send(self, array, count, dtype, peer, stream):
        assert self.nccl.depth > 0, "a send outside a group"
        self.nccl.sends.setdefault((self.rank, peer), []).append((np.array(array), count))

    def recv(self, array, count, dtype, peer, stream):
        assert self.nccl.depth > 0, "a receive outside a group"
        self.nccl.recvs.setdefault((peer, self.rank), []).append((array, count))


def fake_cupy(devices: int = 2) -> types.ModuleType:
    """numpy as ``cupy`` (arrays of :class:`DeviceArray`), with ``cupy.cuda`` and its NCCL."""
    module = types.ModuleType("cupy")
    module.__getattr__ = lambda name: getattr(np, name)
    module.asarray = lambda a, dtype=None: on_device(a, dtype)
    module.empty = lambda shape, dtype=np.float64: on_device(np.full(shape, np.nan, dtype))
    module.asnumpy = lambda a: np.array(a)
    nccl = _Nccl()
    runtime = types.SimpleNamespace(getDeviceCount=lambda: devices)
    module.cuda = types.SimpleNamespace(
        Device=_Device, Event=_Event, Stream=_Stream, runtime=runtime, nccl=nccl,
        get_elapsed_time=lambda a, b: 1.0, get_current_stream=lambda: _Stream())
    return module


class SimulatedKernels:
    """A slab's kernels as the simulator's launch: ``signature`` and ``launch`` as
    :class:`an5dpy.cuda.runtime.CupyRunner` has them. The read-only arrays are the ones
    the runner passes (shifted to the slab's or window's first plane); a list of
    buffers (views) is stacked for the launch and its destination written back."""

    def __init__(self, info, plan, schedule, signature, env):
        self.info, self.plan, self.schedule = info, plan, schedule
        self.signature, self.env = signature, env
        self.launched: list[tuple] = []  # (degree, planes) of every launch

    def launch(self, launch, buffers, dims, sizes) -> None:
        coefs = tuple(np.asarray(a) for p, a in zip(self.signature.params, sizes)
                      if p.kind == "coef")
        update = compiled_update(self.info, self.plan, self.env, coefs)
        kernel = self.schedule.kernel(self.plan.kernel_degree(launch.degree))
        self.launched.append((launch.degree, dims[0].size))
        if isinstance(buffers, np.ndarray):
            run_launch(update, kernel, tuple(dims), buffers, launch)
            return
        stacked = np.stack([np.asarray(b) for b in buffers])
        run_launch(update, kernel, tuple(dims), stacked, launch)
        written = launch.writes if isinstance(launch, LevelLaunch) else (launch.source ^ 1,)
        for b in written:
            buffers[b][...] = stacked[b]


def install(monkeypatch, devices: int = 2) -> types.ModuleType:
    """Make ``cupy`` and ``cupy.cuda.nccl`` the stand-ins for this test."""
    cupy = fake_cupy(devices)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    cuda = types.ModuleType("cupy.cuda")
    for name, value in vars(cupy.cuda).items():
        setattr(cuda, name, value)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.nccl", cupy.cuda.nccl)
    cupy.cuda = cuda
    _Stream.made = []
    return cupy


def runner(info, plan, schedule, signature, env, devices: int):
    """A :class:`~an5dpy.cuda.multi_gpu.MultiGpuRunner` over ``devices`` stand-in devices of
    one process, each slab's kernels :class:`SimulatedKernels`."""
    import cupy
    from an5dpy.cuda.multi_gpu import LocalSlab, MultiGpuRunner
    nccl = cupy.cuda.nccl
    slabs = []
    for g in range(devices):
        with cupy.cuda.Device(g):
            slabs.append(LocalSlab(g, g, SimulatedKernels(info, plan, schedule, signature, env),
                                   _Comm(nccl, g), cupy.cuda.Stream()))
    return MultiGpuRunner(info, plan, devices, slabs)
