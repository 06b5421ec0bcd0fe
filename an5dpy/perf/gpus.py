"""GPU descriptions for the performance model (AN5D paper section 5 and Table 4).

A :class:`GpuSpec` holds what the model needs: peak compute per data type, the *practical*
device-memory and shared-memory bandwidths per data type (GB/s, 1 GB = 1e9 bytes), and the
per-SM resources that decide how many thread blocks reside on an SM at once.

Known entries (:data:`KNOWN_GPUS`, looked up by :func:`get_gpu`):

* ``P100``, ``V100``: Table 4 of the paper (SXM2 boards; bandwidths measured there with
  BabelStream and gpumembench).
* ``A100`` (SXM4 40GB), ``H100`` (SXM5 80GB), ``H200``: datasheet peaks (fp32/fp64
  without tensor cores) and practical device-memory bandwidths as measured by a large
  device-to-device copy counting bytes read plus written (H100 and H200: measured on the
  machines this project uses; A100: the usual BabelStream figure).

Shared-memory bandwidth of the A100/H100/H200 entries is an **estimate**, not a reading:
``sm_count x clock x 128 bytes/cycle`` (32 banks of 4 bytes per SM per cycle), see
:func:`estimated_smem_gbs`. It is an upper bound: the paper's gpumembench values for V100
are 68% (float) and 81% (double) of it, while :func:`probe`'s plain conflict-free read
kernel reached 33.3 TB/s, float and double, on an H200 here (99.6% of the 33.45 TB/s
estimate; its copy measured 4228 GB/s). Run :func:`probe` on the machine and pass the
saved JSON (``--gpu spec.json``) to use measured numbers.

``link_gbs`` (the halo exchange of a run over several GPUs, :mod:`an5dpy.perf.multi`) is
the nominal NVLink bandwidth per direction of the known entries (:data:`NVLINK_GBS`), not
a measurement, and their ``link_latency_us`` is 0; a spec file may leave both out (0: the
exchange is not modelled). Where two GPUs are visible, :func:`probe` measures both with
NCCL send/recv between devices 0 and 1 (:func:`probe_link`) and marks the spec
``link_measured``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from dataclasses import dataclass
from typing import Any, Mapping

from an5dpy.errors import OptionError, UsageError
from an5dpy.blocking.plan import DeviceLimits

#: Bytes per cycle one SM's shared memory delivers (32 banks x 4 bytes).
SMEM_BYTES_PER_CYCLE = 128


def estimated_smem_gbs(sm_count: int, clock_mhz: float) -> float:
    """Theoretical shared-memory bandwidth in GB/s: SMs x clock x 128 bytes per cycle.

    An upper bound: measured kernels reach 70-90% of it (Table 4 of the paper).
    """
    return sm_count * clock_mhz * 1e6 * SMEM_BYTES_PER_CYCLE / 1e9


#: Spec fields where 0 means "not modelled".
OPTIONAL_TERMS = ("step_latency_cycles", "link_gbs", "link_latency_us")


@dataclass(frozen=True)
class GpuSpec:
    """One GPU as the performance model sees it.

    Bandwidths are practical peaks in GB/s (1e9 bytes per second); ``gmem_*`` counts bytes
    read plus bytes written. Resources follow CUDA's ``cudaDeviceProp`` names in spirit:
    ``smem_per_block`` is the opt-in maximum a block may request.
    """

    name: str
    sm_count: int
    clock_mhz: float
    fp32_gflops: float
    fp64_gflops: float
    gmem_gbs_float: float
    gmem_gbs_double: float
    smem_gbs_float: float
    smem_gbs_double: float
    smem_per_sm: int
    smem_per_block: int
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    max_regs_per_thread: int = 255
    max_threads_per_sm: int = 2048
    max_threads_per_block: int = 1024
    max_blocks_per_sm: int = 32
    #: Warp schedulers per SM: warp-instructions it can issue per cycle.
    schedulers_per_sm: int = 4
    #: Cycles a thread block needs per streaming step however few instructions it issues
    #: (the global load's round trip and the levels' barriers) for the model's issue term
    #: (:mod:`an5dpy.perf.model`); 0 leaves the term out, as the paper's model does.
    step_latency_cycles: float = 0.0
    #: GB/s one GPU sends (and, at once, receives) to its peers over NVLink: the halo
    #: exchange of a run over several GPUs (:mod:`an5dpy.perf.multi`). The known entries
    #: hold the nominal NVLink figure per direction, not a measurement (NCCL's send/recv
    #: reaches less); 0: not known, the exchange is not modelled.
    link_gbs: float = 0.0
    #: Microseconds one halo exchange (an NCCL group of sends and receives) takes however
    #: few bytes it moves; 0 (the known entries): not charged.
    link_latency_us: float = 0.0
    #: Whether ``link_gbs`` and ``link_latency_us`` were measured (:func:`probe_link`)
    #: rather than nominal.
    link_measured: bool = False
    #: Where the numbers come from (free text, kept in the JSON file).
    source: str = ""

    # -- per data type
    def peak_gflops(self, dtype: str) -> float:
        return self.fp32_gflops if _dtype(dtype) == "float" else self.fp64_gflops

    def gmem_gbs(self, dtype: str) -> float:
        return self.gmem_gbs_float if _dtype(dtype) == "float" else self.gmem_gbs_double

    def smem_gbs(self, dtype: str) -> float:
        return self.smem_gbs_float if _dtype(dtype) == "float" else self.smem_gbs_double

    def limits(self) -> DeviceLimits:
        """The per-block limits :func:`an5dpy.blocking.plan.check_plan` checks plans against."""
        return DeviceLimits(max_threads_per_block=self.max_threads_per_block,
                            max_smem_per_block=self.smem_per_block,
                            max_regs_per_thread=self.max_regs_per_thread,
                            max_regs_per_block=self.regs_per_block)

    # -- JSON
    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def from_json(data: Mapping[str, Any] | str) -> "GpuSpec":
        """A spec from :meth:`to_json`'s dict (or its JSON text).

        ``smem_gbs_float``/``smem_gbs_double`` may be left out: they are then estimated
        (:func:`estimated_smem_gbs`). Unknown or missing keys raise :class:`UsageError`.
        """
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except json.JSONDecodeError as e:
                raise UsageError(f"GPU spec is not valid JSON: {e}") from None
        if not isinstance(data, Mapping):
            raise UsageError("GPU spec must be a JSON object")
        fields = {f.name: f for f in dataclasses.fields(GpuSpec)}
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise UsageError(f"GPU spec: unknown key(s) {', '.join(unknown)} "
                             f"(known: {', '.join(fields)})")
        values = dict(data)
        for key in ("smem_gbs_float", "smem_gbs_double"):
            if values.get(key) is None and "sm_count" in values and "clock_mhz" in values:
                values[key] = estimated_smem_gbs(values["sm_count"], values["clock_mhz"])
        required = [n for n, f in fields.items()
                    if f.default is dataclasses.MISSING and n not in values]
        if required:
            raise UsageError(f"GPU spec: missing key(s) {', '.join(required)}")
        for n, v in values.items():
            if n in ("name", "source"):
                if not isinstance(v, str):
                    raise UsageError(f"GPU spec: '{n}' must be a string")
            elif fields[n].type in ("bool", bool):
                if not isinstance(v, bool):
                    raise UsageError(f"GPU spec: '{n}' must be true or false, not {v!r}")
            elif isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                    or not (v >= 0 if n in OPTIONAL_TERMS else v > 0):
                kind = "a number >= 0" if n in OPTIONAL_TERMS else "a positive number"
                raise UsageError(f"GPU spec: '{n}' must be {kind}, not {v!r}")
            elif fields[n].type in ("int", int) and float(v) != int(v):
                raise UsageError(f"GPU spec: '{n}' must be an integer, not {v!r}")
        for n, f in fields.items():
            if f.type in ("int", int) and n in values:
                values[n] = int(values[n])
        return GpuSpec(**values)

    def save(self, path: str | os.PathLike) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, indent=2)
            f.write("\n")


def _dtype(dtype: str) -> str:
    if dtype not in ("float", "double"):
        raise UsageError(f"data type {dtype!r}: choose float or double")
    return dtype


# --------------------------------------------------------------------------- known GPUs

KiB = 1024


#: A Hopper block's cycles per streaming step at least, before its levels' dependency
#: chains (GpuSpec.step_latency_cycles; an5dpy.perf.model's issue term): about a global load's
#: round trip, less what the other blocks' loads overlap. Fitted with the issue term's other
#: constants (an5dpy.perf.model_constants; scripts/model_fit.py) to H200 measurements (every
#: measured plan of the 42 rows of artifact/H200/previous, and the variant rows); 1200 before the
#: term charged barriers and each warp's own issue.
HOPPER_STEP_LATENCY = 500


#: Nominal NVLink bandwidth per direction per GPU, GB/s (datasheets: NVLink 4 on Hopper
#: 900 GB/s both directions, NVLink 3 on A100 600, NVLink 2 on V100 300, NVLink 1 on P100
#: 160): :attr:`GpuSpec.link_gbs` of the known entries.
NVLINK_GBS = {"P100": 80, "V100": 150, "A100": 300, "H100": 450, "H200": 450}


def _hopper(name: str, gmem: float, source: str) -> GpuSpec:
    smem = estimated_smem_gbs(132, 1980)
    return GpuSpec(name=name, sm_count=132, clock_mhz=1980, fp32_gflops=66900,
                   fp64_gflops=33500, gmem_gbs_float=gmem, gmem_gbs_double=gmem,
                   smem_gbs_float=smem, smem_gbs_double=smem, smem_per_sm=228 * KiB,
                   smem_per_block=227 * KiB, step_latency_cycles=HOPPER_STEP_LATENCY,
                   link_gbs=NVLINK_GBS[name], source=source)


KNOWN_GPUS: dict[str, GpuSpec] = {
    "P100": GpuSpec(
        name="P100", sm_count=56, clock_mhz=1480, fp32_gflops=10600, fp64_gflops=5300,
        gmem_gbs_float=535, gmem_gbs_double=540, smem_gbs_float=9700, smem_gbs_double=10150,
        smem_per_sm=64 * KiB, smem_per_block=48 * KiB, link_gbs=NVLINK_GBS["P100"],
        source="Tesla P100 SXM2; AN5D paper Table 4 (measured bandwidths)"),
    "V100": GpuSpec(
        name="V100", sm_count=80, clock_mhz=1530, fp32_gflops=15700, fp64_gflops=7850,
        gmem_gbs_float=791, gmem_gbs_double=805, smem_gbs_float=10650, smem_gbs_double=12750,
        smem_per_sm=96 * KiB, smem_per_block=96 * KiB, link_gbs=NVLINK_GBS["V100"],
        source="Tesla V100 SXM2; AN5D paper Table 4 (measured bandwidths)"),
    "A100": GpuSpec(
        name="A100", sm_count=108, clock_mhz=1410, fp32_gflops=19500, fp64_gflops=9700,
        gmem_gbs_float=1450, gmem_gbs_double=1450,
        smem_gbs_float=estimated_smem_gbs(108, 1410),
        smem_gbs_double=estimated_smem_gbs(108, 1410),
        smem_per_sm=164 * KiB, smem_per_block=163 * KiB, link_gbs=NVLINK_GBS["A100"],
        source="A100 SXM4 40GB; datasheet peaks, typical BabelStream copy bandwidth, "
               "shared-memory bandwidth estimated (SMs x clock x 128 B)"),
    "H100": _hopper("H100", 3000,
                    "H100 SXM5 80GB; datasheet peaks at 1980 MHz boost (no tensor cores), "
                    "device-to-device copy ~3.0 TB/s measured here (read + write), "
                    "shared-memory bandwidth estimated (SMs x clock x 128 B)"),
    "H200": _hopper("H200", 4300,
                    "H200 (H100 chip, HBM3e, 4.8 TB/s datasheet); device-to-device copy "
                    "~4.3 TB/s measured here (read + write), shared-memory bandwidth "
                    "estimated (SMs x clock x 128 B)"),
}

#: Full device names (as CUDA reports them) that map to a known entry.
DEVICE_NAMES = {
    "NVIDIA H100 80GB HBM3": "H100",
    "NVIDIA H200": "H200",
    "NVIDIA A100-SXM4-40GB": "A100",
    "Tesla V100-SXM2-16GB": "V100",
    "Tesla V100-SXM2-32GB": "V100",
    "Tesla P100-SXM2-16GB": "P100",
}

#: Extra name tokens a device name may carry and still mean the known entry's board.
_BOARD_TOKENS = {
    "P100": {"SXM2", "16GB"},
    "V100": {"SXM2", "16GB", "32GB"},
    "A100": {"SXM4", "40GB"},
    "H100": {"SXM5", "80GB", "HBM3"},
    "H200": {"SXM", "141GB", "HBM3E"},
}


def _tokens(text: str) -> list[str]:
    return [t for t in re.split(r"[^A-Z0-9]+", text.upper()) if t]


def match_known(name: str) -> str | None:
    """The key of :data:`KNOWN_GPUS` that ``name`` names, or None.

    Accepts the short names (any case) and CUDA device names such as ``NVIDIA H200`` or
    ``NVIDIA H100 80GB HBM3``. A device name naming another board of the same chip
    (``NVIDIA H100 PCIe``, ``NVIDIA A100-SXM4-80GB``) does not match: its numbers differ.
    """
    key = name.strip().upper()
    if key in KNOWN_GPUS:
        return key
    for full, short in DEVICE_NAMES.items():
        if full.upper() == key:
            return short
    tokens = _tokens(name)
    hits = {t for t in tokens if t in KNOWN_GPUS}
    if len(hits) != 1:
        return None
    hit = hits.pop()
    rest = set(tokens) - {hit, "NVIDIA", "TESLA"} - _BOARD_TOKENS[hit]
    return None if rest else hit


def get_gpu(name_or_path: str | GpuSpec) -> GpuSpec:
    """A known GPU by name (see :func:`match_known`) or a spec from a JSON file."""
    if isinstance(name_or_path, GpuSpec):
        return name_or_path
    text = str(name_or_path)
    if text.lower().endswith(".json") or os.path.sep in text or os.path.isfile(text):
        try:
            with open(text, encoding="utf-8") as f:
                data = f.read()
        except OSError as e:
            raise OptionError([("gpu", text)],
                              f"cannot read the GPU spec file ({e.strerror})") from None
        try:
            return GpuSpec.from_json(data)
        except UsageError as e:
            raise OptionError([("gpu", text)], e.args[0]) from None
    key = match_known(text)
    if key is None:
        raise OptionError([("gpu", text)], f"unknown GPU (known: {', '.join(KNOWN_GPUS)}; or "
                          "give a JSON spec file written by 'an5d probe')")
    return KNOWN_GPUS[key]


# --------------------------------------------------------------------------- probe

_SMEM_SOURCE = r"""
#define UNROLL 8
template <typename T>
__device__ void smem_read(T *out, int iters) {
    // Each thread reads the word at (its lane + 32 k) of a warp-private window: a warp
    // always reads 32 consecutive words, which is conflict-free. volatile keeps every
    // read in the loop (nothing is hoisted or merged); offsets are compile-time constants.
    __shared__ T buf[1024 + 32 * UNROLL];
    for (int i = threadIdx.x; i < 1024 + 32 * UNROLL; i += blockDim.x) buf[i] = (T)i;
    __syncthreads();
    volatile T *p = buf + threadIdx.x;
    T acc[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) acc[k] = (T)0;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) acc[k] += p[32 * k];
    }
    T sum = (T)0;
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) sum += acc[k];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
extern "C" __global__ void smem_read_float(float *out, int iters) { smem_read<float>(out, iters); }
extern "C" __global__ void smem_read_double(double *out, int iters) { smem_read<double>(out, iters); }
"""
_SMEM_UNROLL = 8


def _median_ms(fn, repeats: int) -> float:
    """Median time of ``fn()`` in milliseconds (CUDA events), after one warm-up call."""
    from an5dpy.perf.bench import median, time_runs
    return median(time_runs(fn, repeats)) * 1e3


def _copy_gbs(cupy, nbytes: int, repeats: int) -> float:
    """Device-to-device copy of ``nbytes``: bytes read + written per second, in GB/s."""
    src = cupy.ones(nbytes // 4, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    ms = _median_ms(lambda: dst.data.copy_from_device(src.data, src.nbytes), repeats)
    return 2 * src.nbytes / (ms * 1e-3) / 1e9


def _fp_lanes(major: int, minor: int) -> tuple[int, float]:
    """FP32 lanes per SM and the fp64:fp32 ratio by compute capability (for unknown GPUs)."""
    if (major, minor) in ((6, 0), (7, 0), (8, 0)):
        return 64, 0.5
    if (major, minor) == (9, 0) or major == 10:
        return 128, 0.5
    return (64 if major < 8 else 128), 1 / 64


#: Bytes each GPU sends, and at once receives, per message of the link probe: a halo's
#: scale, from a few planes of a 2D grid (32768 floats a plane: 128 KiB) to a few planes of
#: a 3D one (1024^2 floats: 4 MiB).
LINK_PROBE_BYTES = (512 << 10, 4 << 20, 32 << 20)
#: The small message whose time is taken as the per-exchange latency.
LINK_LATENCY_BYTES = 4 << 10


@dataclass(frozen=True)
class LinkProbe:
    """The link between devices 0 and 1 as NCCL's send/recv sees it: ``gbs`` per direction
    and ``latency_s`` per exchange (:func:`fit_link`), from the fastest ``seconds`` of an
    exchange of each message size ``nbytes`` (``points``, the small message first)."""

    gbs: float
    latency_s: float
    points: tuple[tuple[int, float], ...]

    def describe(self) -> str:
        sizes = ", ".join(f"{b >> 10} KiB {t * 1e6:.1f} us" for b, t in self.points)
        return (f"NCCL send/recv between devices 0 and 1, both directions at once "
                f"({sizes})")


def fit_link(points, latency_s: float) -> float:
    """GB/s per direction of ``seconds = latency_s + nbytes / bandwidth``, least squares
    over ``points`` ((nbytes, seconds) pairs) with the latency held: the slope
    ``sum(b (t - latency)) / sum(b^2)`` seconds per byte. Raises :class:`UsageError` where
    the messages took no longer than the latency (nothing to fit)."""
    num = sum(b * b for b, _ in points)
    den = sum(b * (t - latency_s) for b, t in points)
    if num <= 0 or den <= 0:
        raise UsageError(f"link probe: the messages {list(points)} took no longer than the "
                         f"latency of {latency_s * 1e6:.1f} us; cannot fit a bandwidth")
    return num / den / 1e9


def probe_link(repeats: int = 7, sizes: tuple[int, ...] = LINK_PROBE_BYTES,
               small: int = LINK_LATENCY_BYTES) -> LinkProbe | None:
    """Measure the link between devices 0 and 1 as a halo exchange uses it (None where
    fewer than two devices are visible): one process, the two communicators of
    ``ncclCommInitAll``, each device sending ``nbytes`` to the other and receiving as many
    in one NCCL group (both directions at once), on a stream per device; the fastest of
    ``repeats`` timed exchanges per size (:func:`an5dpy.perf.bench.time_runs`, device 0's
    stream waiting for device 1's). The ``small`` message's time is the latency, and the
    bandwidth is fitted to the others (:func:`fit_link`). NVLink multicast stays off."""
    import cupy
    from cupy.cuda import nccl
    from an5dpy.cuda.multi_gpu import keep_nvlink_multicast_off
    from an5dpy.perf.bench import time_runs
    if cupy.cuda.runtime.getDeviceCount() < 2:
        return None
    keep_nvlink_multicast_off()
    devices = (0, 1)
    comms = nccl.NcclCommunicator.initAll(list(devices))
    words = max(sizes + (small,)) // 4
    buffers, streams = [], []
    for d in devices:
        with cupy.cuda.Device(d):
            buffers.append((cupy.ones(words, cupy.float32), cupy.empty(words, cupy.float32)))
            # blocking streams, as the runner's: they wait for the legacy default stream
            # (time_runs' start event on device 0) and it for them
            streams.append(cupy.cuda.Stream())

    def exchange(nbytes: int) -> None:
        nccl.groupStart()
        for g in range(2):
            send, recv = buffers[g]
            comms[g].send(send.data.ptr, nbytes // 4, nccl.NCCL_FLOAT32, 1 - g, streams[g].ptr)
            comms[g].recv(recv.data.ptr, nbytes // 4, nccl.NCCL_FLOAT32, 1 - g, streams[g].ptr)
        nccl.groupEnd()
        with cupy.cuda.Device(1):
            done = cupy.cuda.Event()
            done.record(streams[1])
        cupy.cuda.get_current_stream().wait_event(done)

    try:
        with cupy.cuda.Device(0):
            # the fastest exchange of each size: other work on the GPUs or the host
            # only ever adds time (a median under load once put the latency above the
            # large messages' times, leaving no bandwidth to fit)
            points = tuple((n, min(time_runs(lambda: exchange(n), repeats)))
                           for n in (small, *sizes))
    finally:
        for d, comm in zip(devices, comms):
            with cupy.cuda.Device(d):
                cupy.cuda.Device(d).synchronize()
                comm.destroy()
    latency = points[0][1]
    return LinkProbe(fit_link(points[1:], latency), latency, points)


def probe(copy_bytes: int = 1 << 30, repeats: int = 7) -> GpuSpec:
    """Measure the current GPU with cupy and return its spec (name = CUDA's device name).

    * device memory: ``copy_bytes`` device-to-device copy (cudaMemcpy), bytes read +
      written over the median time of ``repeats`` copies after a warm-up;
    * shared memory: a kernel in which every thread reads shared memory in a conflict-free
      pattern, float and double, bytes read over the median time;
    * SM count, clock, resources: ``cudaGetDeviceProperties``. Peak FLOP/s are the known
      entry's when the device name matches one, else SMs x clock x FP32 lanes x 2;
    * the link to a peer, where two or more GPUs are visible: :func:`probe_link` between
      devices 0 and 1 (``link_measured``); with one GPU, the known entry's nominal
      bandwidth (else 0: not modelled) and no latency.
    """
    from an5dpy.cuda.runtime import cupy_available
    ok, why = cupy_available()
    if not ok:
        raise UsageError(f"probe needs a CUDA GPU and cupy: {why}")
    import cupy
    import numpy as np

    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    sms = int(props["multiProcessorCount"])
    clock_khz = props.get("clockRate") or cupy.cuda.runtime.deviceGetAttribute(13, dev.id)
    clock_mhz = clock_khz / 1000.0  # cudaDevAttrClockRate = 13, in kHz

    gmem = _copy_gbs(cupy, copy_bytes, repeats)  # (a) device memory

    # (b) shared memory
    module = cupy.RawModule(code=_SMEM_SOURCE, options=("-std=c++17",))
    threads, iters = 1024, 4096
    blocks = sms * (int(props["maxThreadsPerMultiProcessor"]) // threads) * 8
    smem = {}
    for dtype, np_type in (("float", np.float32), ("double", np.float64)):
        kernel = module.get_function(f"smem_read_{dtype}")
        out = cupy.empty(blocks * threads, dtype=np_type)
        ms = _median_ms(lambda: kernel((blocks,), (threads,), (out, np.int32(iters))),
                        repeats)
        nbytes = blocks * threads * iters * _SMEM_UNROLL * np.dtype(np_type).itemsize
        smem[dtype] = nbytes / (ms * 1e-3) / 1e9

    known = match_known(name)
    if known is not None:
        fp32, fp64 = KNOWN_GPUS[known].fp32_gflops, KNOWN_GPUS[known].fp64_gflops
        latency = KNOWN_GPUS[known].step_latency_cycles
        link = KNOWN_GPUS[known].link_gbs
        peaks = (f"peaks, step latency and (where not measured) nominal NVLink bandwidth "
                 f"of the known entry {known}")
    else:
        lanes, ratio = _fp_lanes(int(props["major"]), int(props["minor"]))
        fp32 = sms * clock_mhz * 1e6 * lanes * 2 / 1e9
        fp64 = fp32 * ratio
        latency = 0.0  # not measured: the model leaves its issue term out
        link = 0.0  # unless measured below: the model leaves a run's halo exchange out
        peaks = f"peaks estimated from {lanes} FP32 lanes/SM at the reported clock"
    link_latency_us, link_text = 0.0, "link not measured (one GPU visible)"
    measured = probe_link(repeats)
    if measured is not None:
        link, link_latency_us = round(measured.gbs, 1), round(measured.latency_s * 1e6, 2)
        link_text = f"link measured: {measured.describe()}"
    get = props.get
    return GpuSpec(
        name=name, sm_count=sms, clock_mhz=round(clock_mhz, 1), fp32_gflops=round(fp32, 1),
        fp64_gflops=round(fp64, 1), gmem_gbs_float=round(gmem, 1),
        gmem_gbs_double=round(gmem, 1), smem_gbs_float=round(smem["float"], 1),
        smem_gbs_double=round(smem["double"], 1),
        smem_per_sm=int(get("sharedMemPerMultiprocessor", 0)) or 48 * KiB,
        smem_per_block=int(get("sharedMemPerBlockOptin", 0) or get("sharedMemPerBlock", 0)),
        regs_per_sm=int(get("regsPerMultiprocessor", 65536)),
        regs_per_block=int(get("regsPerBlock", 65536)),
        max_threads_per_sm=int(get("maxThreadsPerMultiProcessor", 2048)),
        max_threads_per_block=int(get("maxThreadsPerBlock", 1024)),
        max_blocks_per_sm=int(get("maxBlocksPerMultiProcessor", 32) or 32),
        step_latency_cycles=latency, link_gbs=link, link_latency_us=link_latency_us,
        link_measured=measured is not None,
        source=f"an5d probe on {name}: {copy_bytes >> 20} MiB device-to-device copy "
               f"(read + write), shared-memory read kernel; {peaks}; {link_text}")
