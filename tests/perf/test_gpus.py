"""Tests of an5dpy.perf.gpus: the known GPU table (paper Table 4), name lookup, JSON specs, and
the probe (on a GPU only)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from an5dpy.errors import UsageError
from an5dpy.perf.gpus import (HOPPER_STEP_LATENCY, KNOWN_GPUS, GpuSpec, LinkProbe,
                              estimated_smem_gbs, fit_link, get_gpu, match_known, probe)
from an5dpy.blocking.plan import DeviceLimits


def test_table4_entries():
    # Table 4 of the paper: GFLOP/s float|double, measured external and shared memory
    # throughput float|double (GB/s), SM count.
    p100, v100 = KNOWN_GPUS["P100"], KNOWN_GPUS["V100"]
    assert (p100.fp32_gflops, p100.fp64_gflops) == (10600, 5300)
    assert (p100.gmem_gbs_float, p100.gmem_gbs_double) == (535, 540)
    assert (p100.smem_gbs_float, p100.smem_gbs_double) == (9700, 10150)
    assert p100.sm_count == 56
    assert (v100.fp32_gflops, v100.fp64_gflops) == (15700, 7850)
    assert (v100.gmem_gbs_float, v100.gmem_gbs_double) == (791, 805)
    assert (v100.smem_gbs_float, v100.smem_gbs_double) == (10650, 12750)
    assert v100.sm_count == 80


def test_hopper_entries():
    h100, h200 = KNOWN_GPUS["H100"], KNOWN_GPUS["H200"]
    for g in (h100, h200):
        assert g.sm_count == 132 and g.clock_mhz == 1980
        assert (g.fp32_gflops, g.fp64_gflops) == (66900, 33500)
        assert g.smem_per_sm == 228 * 1024 and g.smem_per_block == 227 * 1024
        # the estimate: 132 SMs x 1.98 GHz x 128 bytes/cycle = 33.45 TB/s
        assert g.smem_gbs_float == pytest.approx(132 * 1.98 * 128)
    assert h100.gmem_gbs_float == 3000
    assert h200.gmem_gbs_float == 4300
    # the model's issue term: on for Hopper only (fitted there), off for the paper's GPUs
    assert h100.step_latency_cycles == h200.step_latency_cycles == HOPPER_STEP_LATENCY > 0
    assert all(KNOWN_GPUS[n].step_latency_cycles == 0 for n in ("P100", "V100", "A100"))
    assert KNOWN_GPUS["A100"].sm_count == 108
    assert KNOWN_GPUS["A100"].smem_per_block == 163 * 1024


def test_link_bandwidths_are_the_nominal_nvlink_figures():
    # per direction: NVLink 4 (Hopper) 450 GB/s, NVLink 3 300, NVLink 2 150, NVLink 1 80
    assert {k: g.link_gbs for k, g in KNOWN_GPUS.items()} == {
        "P100": 80, "V100": 150, "A100": 300, "H100": 450, "H200": 450}
    data = KNOWN_GPUS["H200"].to_json()
    del data["link_gbs"]  # a probe's or an older spec file: the exchange is not modelled
    assert GpuSpec.from_json(data).link_gbs == 0


def test_link_latency_and_origin_in_specs():
    """The known entries' link is nominal, without latency; a measured one survives JSON,
    and a spec file written before the fields existed reads as nominal."""
    assert all(g.link_latency_us == 0 and not g.link_measured for g in KNOWN_GPUS.values())
    measured = dataclasses.replace(KNOWN_GPUS["H200"], link_gbs=123.4, link_latency_us=17.5,
                                   link_measured=True)
    data = json.loads(json.dumps(measured.to_json()))
    assert data["link_measured"] is True and GpuSpec.from_json(data) == measured
    del data["link_latency_us"], data["link_measured"]
    older = GpuSpec.from_json(data)
    assert older.link_latency_us == 0 and older.link_measured is False
    assert older.link_gbs == 123.4


def test_fit_link_by_hand():
    """seconds = latency + bytes / bandwidth, least squares with the latency held."""
    latency = 20e-6
    points = [(b, latency + b / 150e9) for b in (1 << 19, 1 << 22, 1 << 25)]
    assert fit_link(points, latency) == pytest.approx(150)
    # noise: the slope weighs the large messages most (sum b (t - L) / sum b^2)
    noisy = [(1 << 19, latency + (1 << 19) / 100e9), (1 << 25, latency + (1 << 25) / 200e9)]
    b, t = zip(*noisy)
    slope = sum(x * (y - latency) for x, y in noisy) / sum(x * x for x in b)
    assert fit_link(noisy, latency) == pytest.approx(1 / slope / 1e9)
    assert 190 < fit_link(noisy, latency) < 200
    with pytest.raises(UsageError, match="cannot fit a bandwidth"):
        fit_link([(1 << 20, latency / 2)], latency)
    probe_ = LinkProbe(150.0, latency, ((4096, latency), *points))
    assert probe_.describe().startswith("NCCL send/recv between devices 0 and 1, both "
                                        "directions at once (4 KiB 20.0 us, 512 KiB")


def test_estimate_and_per_dtype_accessors():
    assert estimated_smem_gbs(80, 1530) == pytest.approx(80 * 1.53 * 128)
    v100 = KNOWN_GPUS["V100"]
    assert v100.peak_gflops("float") == 15700 and v100.peak_gflops("double") == 7850
    assert v100.gmem_gbs("double") == 805 and v100.smem_gbs("double") == 12750
    with pytest.raises(UsageError):
        v100.peak_gflops("half")


def test_limits():
    lim = KNOWN_GPUS["P100"].limits()
    assert isinstance(lim, DeviceLimits)
    assert lim == DeviceLimits(max_threads_per_block=1024, max_smem_per_block=48 * 1024,
                               max_regs_per_thread=255, max_regs_per_block=65536)
    assert KNOWN_GPUS["H200"].limits().max_smem_per_block == 227 * 1024


@pytest.mark.parametrize("name, key", [
    ("H200", "H200"), ("h100", "H100"), (" v100 ", "V100"), ("NVIDIA H200", "H200"),
    ("NVIDIA H100 80GB HBM3", "H100"), ("Tesla V100-SXM2-16GB", "V100"),
    ("Tesla P100-SXM2-16GB", "P100"), ("NVIDIA A100-SXM4-40GB", "A100"),
])
def test_lookup_by_name(name, key):
    assert match_known(name) == key
    assert get_gpu(name) is KNOWN_GPUS[key]


@pytest.mark.parametrize("name", ["NVIDIA H100 PCIe", "NVIDIA A100-SXM4-80GB", "H100 NVL",
                                  "RTX 4090", "", "H100 H200"])
def test_other_boards_do_not_match(name):
    assert match_known(name) is None


def test_unknown_gpu_lists_known_names():
    with pytest.raises(UsageError) as e:
        get_gpu("GTX 480")
    text = str(e.value)
    assert "unknown GPU" in text
    for key in KNOWN_GPUS:
        assert key in text


def test_json_round_trip(tmp_path):
    for spec in KNOWN_GPUS.values():
        assert GpuSpec.from_json(spec.to_json()) == spec
        assert GpuSpec.from_json(json.dumps(spec.to_json())) == spec
    path = tmp_path / "mygpu.json"
    KNOWN_GPUS["H200"].save(path)
    loaded = get_gpu(str(path))
    assert loaded == KNOWN_GPUS["H200"]
    assert json.loads(path.read_text())["name"] == "H200"


def test_json_missing_smem_is_estimated():
    data = KNOWN_GPUS["V100"].to_json()
    del data["smem_gbs_float"], data["smem_gbs_double"], data["regs_per_sm"]
    spec = GpuSpec.from_json(data)
    assert spec.smem_gbs_float == pytest.approx(estimated_smem_gbs(80, 1530))
    assert spec.regs_per_sm == 65536  # default


@pytest.mark.parametrize("change, message", [
    ({"bogus": 1}, "unknown key"),
    ({"sm_count": None}, "positive number"),
    ({"sm_count": -3}, "positive number"),
    ({"sm_count": 2.5}, "integer"),
    ({"name": 7}, "string"),
    ({"step_latency_cycles": -1}, "a number >= 0"),
    ({"link_gbs": -450}, "a number >= 0"),
    ({"link_latency_us": -1}, "a number >= 0"),
    ({"link_measured": 1}, "true or false"),
    ({"link_measured": "yes"}, "true or false"),
    ({"schedulers_per_sm": 0}, "positive number"),
])
def test_json_bad_specs(change, message):
    data = KNOWN_GPUS["V100"].to_json()
    data.update(change)
    with pytest.raises(UsageError, match=message):
        GpuSpec.from_json(data)


def test_json_missing_required_key():
    data = KNOWN_GPUS["V100"].to_json()
    del data["fp32_gflops"]
    with pytest.raises(UsageError, match="missing key"):
        GpuSpec.from_json(data)


def test_bad_spec_files(tmp_path):
    with pytest.raises(UsageError, match="cannot read"):
        get_gpu(str(tmp_path / "absent.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(UsageError, match="not valid JSON"):
        get_gpu(str(bad))


def test_probe_without_gpu_is_a_usage_error():
    from an5dpy.cuda.runtime import cupy_available
    ok, _ = cupy_available()
    if ok:
        pytest.skip("a GPU is present")
    with pytest.raises(UsageError, match="probe needs a CUDA GPU"):
        probe()


@pytest.mark.gpu
def test_probe_on_gpu(tmp_path):
    spec = probe(copy_bytes=256 << 20, repeats=5)
    assert spec.sm_count > 0 and spec.clock_mhz > 0
    assert spec.gmem_gbs_float > 50
    # measured shared-memory bandwidth is below the theoretical 128 B/cycle/SM (+ slack
    # for boost clocks above the reported one)
    bound = estimated_smem_gbs(spec.sm_count, spec.clock_mhz) * 1.2
    assert 0.1 * bound < spec.smem_gbs_float < bound
    assert 0.1 * bound < spec.smem_gbs_double < bound
    path = tmp_path / "probed.json"
    spec.save(path)
    assert get_gpu(str(path)) == spec
    import cupy
    if cupy.cuda.runtime.getDeviceCount() >= 2:  # the link between devices 0 and 1
        assert spec.link_measured and spec.link_gbs > 1 and spec.link_latency_us > 0
        assert "link measured: NCCL send/recv" in spec.source
    else:
        assert not spec.link_measured and spec.link_latency_us == 0
        assert "link not measured (one GPU visible)" in spec.source
