"""Test support: a dry run of the GPU scripts (scripts/scaling.py, scripts/big_grid.py) on
the CPU. ``cupy`` becomes numpy with a stand-in ``cupy.cuda`` (devices, events that each
take 1 ms, memory figures), and a stencil's kernels the simulator: ``Stencil.build`` runs
the whole grid through :func:`an5dpy.check.simulate.simulate`, and the several-GPU runner
gathers the slabs' owned planes, simulates the grid and puts every held plane back (the
halo exchange's result), calling the phase timer as the NCCL runner does. So the scripts'
own work (sizes, slabs, timing, checks, outputs) runs without a GPU; what the GPUs do is
tests/gpu's subject."""

from __future__ import annotations

import sys
import types

import numpy as np

from an5dpy import api
from an5dpy.blocking.plan import grid_extents
from an5dpy.check.simulate import simulate
from an5dpy.check.verify import result_buffer

DEVICES = 2
MEMORY = 80 * 10 ** 9


class _Device:
    current = 0

    def __init__(self, device=None):
        self.id = _Device.current if device is None else device

    def __enter__(self):
        self._saved, _Device.current = _Device.current, self.id
        return self

    def __exit__(self, *exc):
        _Device.current = self._saved

    def synchronize(self):
        pass


class _Event:
    def record(self, stream=None):
        pass

    def synchronize(self):
        pass


class _Pool:
    def free_all_blocks(self):
        pass

    def used_bytes(self):
        return 0


def numpy_cupy() -> types.ModuleType:
    """numpy as ``cupy``, with the parts of ``cupy.cuda`` the scripts use."""
    module = types.ModuleType("cupy")
    module.__getattr__ = lambda name: getattr(np, name)
    runtime = types.SimpleNamespace(
        getDeviceCount=lambda: DEVICES, memGetInfo=lambda: (MEMORY // 2, MEMORY),
        getDeviceProperties=lambda d: {"name": b"NVIDIA H200"})
    module.cuda = types.SimpleNamespace(Device=_Device, Event=_Event, runtime=runtime,
                                        get_elapsed_time=lambda a, b: 1.0)
    module.asnumpy = np.asarray
    module.get_default_memory_pool = _Pool
    return module


class _Single:
    def __init__(self, stencil):
        self.stencil = stencil

    def run(self, grid, env, read_only=()):
        grid[...] = simulate(self.stencil.info, self.stencil.plan, grid, env)


class _Slabs:
    """The several-GPU runner's effect on per-device slabs of a grid of ``planes`` planes
    along the streaming dimension, through the simulator."""

    def __init__(self, stencil, devices, planes: int):
        self.stencil, self.devices, self.planes = stencil, list(devices), planes

    def run(self, slabs, env, read_only=(), timer=None, overlap=False):
        shape = (slabs[0].shape[0], self.planes, *slabs[0].shape[2:])
        decomp = self.stencil.decompose(shape, self.devices)
        whole = np.full(shape, np.nan, slabs[0].dtype)
        for s, part in zip(decomp.slabs, slabs):
            whole[:, slice(*s.owned)] = part[:, s.owned_local]
        whole[:, 0], whole[:, -1] = slabs[0][:, 0], slabs[-1][:, -1]  # the streaming boundary
        whole[...] = simulate(self.stencil.info, self.stencil.plan, whole, env)
        for s, part in zip(decomp.slabs, slabs):
            part[...] = whole[:, slice(*s.held)]
        if timer is not None:
            for s in decomp.slabs:
                timer.begin(s.index, None)
                timer.computed(s.index, None)
                timer.exchanged(s.index, None)


def install(monkeypatch) -> types.ModuleType:
    """Make ``cupy`` numpy and the stencil's runs the simulator's, for this test."""
    cupy = numpy_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(api.Stencil, "build", lambda self: _Single(self))

    def multi_gpu(self, devices, env):
        return _Slabs(self, devices, grid_extents(self.info, env)[0].size)

    def run_slabs(self, slabs, grid_shape, steps=None, *, devices, **params):
        env = api.bind(self.info, tuple(grid_shape), steps, params)
        _Slabs(self, devices, grid_shape[1]).run(slabs, env)
        return [part[result_buffer(self.info, env)] for part in slabs]

    monkeypatch.setattr(api.Stencil, "multi_gpu", multi_gpu)
    monkeypatch.setattr(api.Stencil, "run_slabs", run_slabs)
    return cupy
