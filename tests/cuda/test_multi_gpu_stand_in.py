"""The several-GPU runner (cuda/multi_gpu.py) without a GPU: cupy and its NCCL bindings
replaced by a stand-in that keeps arrays in host memory (with each array's device and
pointer, so that the runner's sends and receives move real bytes between the slabs'
arrays), and each kernel launch by the simulator's launch (check/simulate.py). So the
runner's own work is checked on the CPU: the scatter, the launch plan on every slab, the
halo exchange (paired sends and receives of contiguous planes, every buffer the next
launch reads, every field's), the placements of a rotating program, the gather, the
NVLink multicast setting; the result must be the one-device simulation's, bit for bit.
tests/gpu/test_multi_gpu.py runs the same runner on GPUs."""

from __future__ import annotations

import ctypes
import os
import sys
import types
from functools import lru_cache

import numpy as np
import pytest

from an5dpy.blocking.build import build_schedule
from an5dpy.blocking.plan import make_plan
from an5dpy.check.reference import resolve_params
from an5dpy.check.simulate import compiled_update, run_launch, simulate
from an5dpy.check.verify import random_grid, random_read_only, random_state
from an5dpy.cuda import multi_gpu
from an5dpy.driver import generate, load
from an5dpy.errors import UsageError

from paths import C_INPUTS


# --------------------------------------------------------------------------- a stand-in cupy


class _State:
    device = 0
    pending: list = []  # (rank, 'send'|'recv', pointer, bytes, peer)
    groups = 0


class FakeArray(np.ndarray):
    """A host array that says which device it is on and where its data starts."""

    def __array_finalize__(self, obj):
        self.device_id = getattr(obj, "device_id", _State.device)

    @property
    def device(self):
        return types.SimpleNamespace(id=self.device_id)

    @property
    def data(self):
        assert self.flags.c_contiguous, "NCCL moves contiguous planes only"
        return types.SimpleNamespace(ptr=self.ctypes.data)


def _fake(values) -> FakeArray:
    out = np.array(values, copy=True).view(FakeArray)
    out.device_id = _State.device
    return out


class Device:
    def __init__(self, device=None):
        self.id = _State.device if device is None else device

    def __enter__(self):
        self._saved, _State.device = _State.device, self.id
        return self

    def __exit__(self, *exc):
        _State.device = self._saved

    def synchronize(self):
        pass


class Stream:
    def __init__(self, non_blocking=False):
        self.ptr = id(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def synchronize(self):
        pass


class Event:
    def record(self, stream=None):
        pass

    def synchronize(self):
        pass


_SIZES = {7: 4, 8: 8}


class Communicator:
    def __init__(self, rank):
        self.rank = rank

    @staticmethod
    def initAll(devices):
        assert isinstance(devices, list)
        assert os.environ.get("NCCL_NVLS_ENABLE") == "0", "multicast must be off before init"
        return [Communicator(r) for r in range(len(devices))]

    def send(self, ptr, count, dtype, peer, stream):
        assert _State.groups == 1
        _State.pending.append((self.rank, "send", ptr, count * _SIZES[dtype], peer))

    def recv(self, ptr, count, dtype, peer, stream):
        assert _State.groups == 1
        _State.pending.append((self.rank, "recv", ptr, count * _SIZES[dtype], peer))


def group_start():
    _State.groups += 1


def group_end():
    """Pair the k-th send from a to b with the k-th receive on b from a, then copy."""
    _State.groups -= 1
    sends, recvs = {}, {}
    for rank, kind, ptr, nbytes, peer in _State.pending:
        key = (rank, peer) if kind == "send" else (peer, rank)
        (sends if kind == "send" else recvs).setdefault(key, []).append((ptr, nbytes))
    assert sends.keys() == recvs.keys()
    for key in sends:
        assert [n for _, n in sends[key]] == [n for _, n in recvs[key]], key
        for (src, n), (dst, _) in zip(sends[key], recvs[key]):
            ctypes.memmove(dst, src, n)
    _State.pending = []


def fake_cupy(devices: int = 5):
    nccl = types.SimpleNamespace(NCCL_FLOAT32=7, NCCL_FLOAT64=8, groupStart=group_start,
                                 groupEnd=group_end, NcclCommunicator=Communicator)
    runtime = types.SimpleNamespace(getDeviceCount=lambda: devices)
    cuda = types.SimpleNamespace(Device=Device, Stream=Stream, Event=Event, nccl=nccl,
                                 runtime=runtime, get_elapsed_time=lambda a, b: 0.0)
    cupy = types.SimpleNamespace(cuda=cuda, asarray=_fake, ndarray=FakeArray,
                                 asnumpy=lambda a: np.array(a, copy=True).view(np.ndarray),
                                 empty=lambda shape, dtype: _fake(np.full(shape, np.nan, dtype)))
    return cupy, cuda, nccl


class SimulatedRunner:
    """CupyRunner's launch, executed by the simulator on the slab's buffers."""

    def __init__(self, info, plan, cubin, prefix, signature):
        self.info, self.plan, self.signature = info, plan, signature
        self.schedule = build_schedule(plan)
        self.device = _State.device

    def launch(self, launch, buffers, dims, sizes):
        assert _State.device == self.device, "launched on another device"
        scalars, coefs = {}, []
        for p, value in zip(self.signature.params, sizes):
            if p.kind == "scalar":
                scalars[p.ref] = value.item()
            elif p.kind == "coef":
                assert value.device.id == self.device
                coefs.append(np.asarray(value))
        kernels = compiled_update(self.info, self.plan, scalars, coefs)
        kernel = self.schedule.kernel(self.plan.kernel_degree(launch.degree))
        if self.info.coupled:  # the kernels take field 0's buffers; the pool is behind them
            grid = buffers.base.swapaxes(0, 1)
        elif isinstance(buffers, list):
            grid = _Pool(buffers)
        else:
            grid = buffers
        run_launch(kernels, kernel, dims, grid, launch)


class _Pool:
    """A list of buffers as the simulator indexes a pool."""

    def __init__(self, buffers):
        self.buffers = buffers
        self.shape = (len(buffers), *buffers[0].shape)

    def __getitem__(self, b):
        return self.buffers[b]


@pytest.fixture
def gpus(monkeypatch):
    cupy, cuda, nccl = fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.nccl", nccl)
    monkeypatch.setattr(multi_gpu, "CupyRunner", SimulatedRunner)
    monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)
    monkeypatch.setattr(multi_gpu, "_RUNNERS", {})
    return cupy


@lru_cache(maxsize=None)
def program(name: str, dtype: str):
    return load(os.path.join(C_INPUTS, name + ".c"), (("SB_TYPE", dtype),))


def runner_for(info, plan, devices):
    model = generate(info, plan, "x").model
    return multi_gpu.multi_gpu_runner(info, plan, types.SimpleNamespace(path="x.cubin"),
                                      model.prefix, model.signature, devices)


CASES = [("j2d5pt", "float", 3, [0, 1, 2]), ("star3d1r", "double", 2, [1, 0]),
         ("box2d2r", "double", 2, [0, 1, 2, 3]), ("wave2d", "float", 3, [0, 1, 2]),
         ("poisson2d", "double", 2, [2, 0, 1]), ("grayscott2d", "float", 2, [0, 1]),
         ("fdtd2d", "double", 1, [0, 1, 2])]


@pytest.mark.parametrize("name, dtype, bt, devices", CASES)
def test_the_runner_on_stand_in_gpus_is_the_one_device_run(gpus, name, dtype, bt, devices):
    prog, info = program(name, dtype)
    depth = bt * max(1, len(info.substeps))
    plan = make_plan(info, bt=bt, bs=tuple(2 * depth * r + 4 for r in info.radius[1:]), sl=5)
    runner = runner_for(info, plan, devices)
    assert os.environ["NCCL_NVLS_ENABLE"] == "0"
    for steps in (0, 1, bt, bt + 1, 2 * bt + 1):
        compsize = len(devices) * multi_gpu.slab_halo(info, plan).widest + 2
        env = resolve_params(prog, {"compsize": compsize, "timestep": steps})
        read_only = random_read_only(prog, env, steps)
        state = random_state(info, env, steps)
        want = simulate(info, plan, state, env, read_only=read_only)
        got = runner.run_host(state, env, read_only)
        if info.coupled:
            assert all(np.array_equal(g, w, equal_nan=True) for g, w in zip(got, want))
        else:
            assert np.array_equal(got, want, equal_nan=True), (name, steps)


def test_slabs_on_the_devices_stay_there_and_are_checked(gpus):
    prog, info = program("j2d5pt", "float")
    plan = make_plan(info, bt=2, bs=(16,), sl=None)
    runner = runner_for(info, plan, [1, 0])
    env = resolve_params(prog, {"compsize": 30, "timestep": 5})
    grid = random_grid((2, 32, 32), "float", 3)
    slabs = runner.scatter(grid, env)
    assert [s.device.id for s in slabs] == [1, 0]
    assert [s.shape for s in slabs] == [runner.slab_shape(env, 0), runner.slab_shape(env, 1)]
    # only the owned planes need the data: the halos are exchanged before the first launch
    decomp = runner.decomposition(env)
    for s, part in zip(decomp.slabs, slabs):
        if s.below:
            part[:, :s.owned_local.start] = np.nan
        if s.above:
            part[:, s.owned_local.stop:] = np.nan
    runner.run(slabs, env)
    pool = grid.copy()
    runner.gather(slabs, env, pool)
    assert np.array_equal(pool, simulate(info, plan, grid, env))
    with pytest.raises(UsageError, match="shape"):
        runner.run([slabs[1], slabs[0]], env)
    with pytest.raises(UsageError, match="thinner than the halo"):
        runner.decomposition(resolve_params(prog, {"compsize": 5, "timestep": 5}))


def test_devices_are_checked(gpus):
    assert multi_gpu.check_devices([3, 1]) == (3, 1)
    for bad, message in (([], "at least one"), ([0, 0], "at most once"), ([9], "does not exist")):
        with pytest.raises(UsageError, match=message):
            multi_gpu.check_devices(bad)


def test_a_multicast_setting_of_the_user_is_kept(monkeypatch):
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    multi_gpu.keep_nvlink_multicast_off()
    assert os.environ["NCCL_NVLS_ENABLE"] == "1"
    monkeypatch.delenv("NCCL_NVLS_ENABLE")
    multi_gpu.keep_nvlink_multicast_off()
    assert os.environ["NCCL_NVLS_ENABLE"] == "0"


def test_critical_phases_take_the_slowest_kernel_and_the_longest_span():
    launches = [{0: (4.0, 1.0), 1: (3.0, 1.5)},  # slab 1 waited 1 ms for slab 0's halo
                {0: (2.0, 3.0), 1: (4.5, 0.25)}]
    assert multi_gpu.critical_phases(launches) == (4.0 + 4.5, (5.0 - 4.0) + (5.0 - 4.5))
    assert multi_gpu.critical_phases([]) == (0.0, 0.0)


class _Clock:
    now = 0.0


class TimedEvent(Event):
    """An event that takes the stand-in clock's time, which every record advances."""

    def record(self, stream=None):
        self.time = _Clock.now
        _Clock.now += 1.0


def test_the_phase_timer_records_every_slab_and_launch(gpus, monkeypatch):
    from an5dpy.blocking.plan import launch_plan
    monkeypatch.setattr(gpus.cuda, "Event", TimedEvent)
    monkeypatch.setattr(gpus.cuda, "get_elapsed_time", lambda a, b: b.time - a.time)
    prog, info = program("j2d5pt", "float")
    plan = make_plan(info, bt=2, bs=(16,), sl=None)
    runner = runner_for(info, plan, [0, 1, 2])
    env = resolve_params(prog, {"compsize": 30, "timestep": 5})
    slabs = runner.scatter(random_grid((2, 32, 32), "float", 3), env)
    timer = multi_gpu.PhaseTimes()
    runner.run(slabs, env, timer=timer)
    launches = len(launch_plan(5, 2, 0))
    per_launch = timer.launch_ms()
    assert len(per_launch) == launches and all(set(t) == {0, 1, 2} for t in per_launch)
    # per launch: the three kernels one record apart, then the three exchanges' ends
    assert per_launch[0] == {0: (1.0, 5.0), 1: (1.0, 4.0), 2: (1.0, 3.0)}
    assert timer.seconds() == pytest.approx((launches / 1e3, 5 * launches / 1e3))
    assert timer.slab_seconds()[2] == pytest.approx((launches / 1e3, 3 * launches / 1e3))
