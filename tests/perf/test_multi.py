"""Tests of an5dpy.perf.multi (the model of a run over several GPUs) and ``an5d model
--gpus N``: the compute is the one-GPU model of the slowest slab's planes, the exchange
the busiest GPU's halo bytes of every refresh over the link, counted by hand here."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from an5dpy.blocking.plan import DimExtent, grid_extents, launch_plan, make_plan
from an5dpy.blocking.slabs import slab_halo
from an5dpy.check.reference import resolve_params
from an5dpy.errors import UsageError
from an5dpy.perf.gpus import KNOWN_GPUS
from an5dpy.perf.model import Model
from an5dpy.perf.multi import busiest_bytes, predict_slabs, refreshes

from cli_support import run
from model_support import load_benchmark
from paths import C_INPUTS

H200 = KNOWN_GPUS["H200"]


def benchmark(name: str, size: int, steps: int, dtype: str = "float"):
    program, info = load_benchmark(name, dtype)
    return info, resolve_params(program, {"compsize": size, "timestep": steps})


def test_one_gpu_is_the_one_gpu_model():
    info, env = benchmark("j2d5pt", 4096, 100)
    plan = make_plan(info, bt=6, bs=(256,), sl=256)
    sp = predict_slabs(info, plan, H200, env, 1)
    assert sp.compute == Model(info, H200, env).predict(plan)
    assert sp.exchange_seconds == 0 and sp.refreshes == 0
    assert sp.seconds == sp.compute.seconds
    assert sp.gflops == pytest.approx(sp.compute.gflops)


def test_two_gpus_by_hand():
    n, steps, bt = 4096, 100, 6
    info, env = benchmark("j2d5pt", n, steps)
    plan = make_plan(info, bt=bt, bs=(256,), sl=256)
    sp = predict_slabs(info, plan, H200, env, 2)
    halo = 1 + bt  # the edge plane and one plane per level
    assert (sp.decomposition.halo.below, sp.decomposition.halo.above) == (halo, halo)
    # the slab computes its owned planes and its halo less the edge plane it takes as boundary
    computed = n // 2 + halo - 1
    assert sp.compute.cells == computed * n
    slab = Model(info, H200, (DimExtent(1, computed, computed + 2), grid_extents(info, env)[1]),
                 steps).predict(plan)
    assert sp.compute.seconds == pytest.approx(slab.seconds)
    launches = len(launch_plan(steps, bt, 0))
    assert sp.refreshes == launches + 1  # every buffer before the first launch, then one
    assert sp.buffers_moved == 2 + launches
    assert sp.buffer_bytes == halo * (n + 2) * 4
    assert sp.exchange_seconds == pytest.approx((2 + launches) * halo * (n + 2) * 4 / 450e9)
    assert sp.seconds == pytest.approx(sp.compute.seconds + sp.exchange_seconds)
    assert sp.gflops == pytest.approx(n * n * 10 * steps / sp.seconds / 1e9)
    one = predict_slabs(info, plan, H200, env, 1)
    assert 0.5 < one.seconds / (2 * sp.seconds) < 1  # halo work and the exchange cost


def test_a_measured_link_charges_its_latency_per_refresh():
    n, steps, bt = 4096, 100, 6
    info, env = benchmark("j2d5pt", n, steps)
    plan = make_plan(info, bt=bt, bs=(256,), sl=256)
    measured = dataclasses.replace(H200, link_gbs=150.0, link_latency_us=20.0,
                                   link_measured=True)
    sp = predict_slabs(info, plan, measured, env, 2)
    nominal = predict_slabs(info, plan, H200, env, 2)
    assert sp.link_measured and not nominal.link_measured
    assert sp.compute == nominal.compute and sp.refreshes == nominal.refreshes
    assert sp.exchange_seconds == pytest.approx(
        sp.refreshes * 20e-6 + sp.exchange_bytes / 150e9)
    assert nominal.exchange_seconds == pytest.approx(nominal.exchange_bytes / 450e9)
    data = sp.to_json()
    assert data["link_measured"] is True and data["link_latency_s"] == pytest.approx(20e-6)


def test_a_middle_gpu_sends_to_both_neighbours():
    info, env = benchmark("star3d1r", 256, 20, "double")
    plan = make_plan(info, bt=2, bs=(32, 32), sl=None)
    two = predict_slabs(info, plan, H200, env, 2)
    four = predict_slabs(info, plan, H200, env, 4)
    plane = 258 * 258 * 8
    assert two.buffer_bytes == 3 * plane
    assert four.buffer_bytes == 2 * 3 * plane  # both halos of a middle slab
    assert busiest_bytes(four.decomposition, plane) == four.buffer_bytes
    # the middle slabs hold two halos: one of them is the slowest
    assert four.slowest in (1, 2)
    assert four.compute.cells == (64 + 2 * 2) * 256 * 256


def test_without_a_link_bandwidth_the_exchange_is_unknown():
    info, env = benchmark("j2d5pt", 1024, 10)
    plan = make_plan(info, bt=2, bs=(128,), sl=None)
    spec = dataclasses.replace(H200, link_gbs=0.0)
    sp = predict_slabs(info, plan, spec, env, 2)
    assert sp.exchange_seconds is None and sp.seconds == sp.compute.seconds
    assert sp.exchange_bytes > 0


def test_refreshes_of_rotating_and_coupled_programs():
    program, info = load_benchmark("wave2d", "double")
    plan = make_plan(info, bt=2, bs=(64,), sl=None)
    moved = refreshes(info, plan, 7, 0)
    assert moved[0] == plan.levels.buffers  # every buffer before the first launch
    assert all(1 <= m <= plan.levels.buffers + plan.levels.work_buffers for m in moved[1:])
    program, info = load_benchmark("grayscott2d")
    plan = make_plan(info, bt=1, bs=(64,), sl=None)
    env = resolve_params(program, {"compsize": 256, "timestep": 4})
    sp = predict_slabs(info, plan, H200, env, 2)
    # both fields' planes travel
    assert sp.buffer_bytes == slab_halo(info, plan).below * 258 * 4 * len(info.fields)


def test_slabs_thinner_than_the_halo_are_refused():
    info, env = benchmark("j2d5pt", 16, 10)
    plan = make_plan(info, bt=6, bs=(128,), sl=None)
    with pytest.raises(UsageError, match="thinner than the halo"):
        predict_slabs(info, plan, H200, env, 4)


# --------------------------------------------------------------------------- command line


def test_cli_model_gpus(capsys):
    path = os.path.join(C_INPUTS, "star3d1r.c")
    base = ["model", path, "--gpu", "H200", "--dtype", "float", "--size", "512", "--steps",
            "100", "--bt", "4", "--bs", "32x32", "--sl", "128"]
    code, out, err = run(capsys, *base + ["--gpus", "2"])
    assert code == 0, err
    assert "on 2 GPUs: slabs of the streaming dimension (planes owned: 256, 256), halo 5 " \
           "planes below and 5 above" in out
    assert "at 450 GB/s per direction, nominal" in out and "strong-scaling efficiency" in out
    code, out, err = run(capsys, *base + ["--gpus", "2", "--json"])
    data = json.loads(out)["several_gpus"]
    assert data["gpus"] == 2 and data["owned"] == [[1, 257], [257, 513]]
    assert data["seconds"] == pytest.approx(data["compute_seconds"] + data["exchange_seconds"])
    code, out, _ = run(capsys, *base + ["--gpus", "1"])
    assert code == 0 and "GPUs:" not in out


def test_cli_model_gpus_says_the_link_was_measured(capsys, tmp_path):
    spec = tmp_path / "probed.json"
    dataclasses.replace(H200, link_gbs=151.26, link_latency_us=18.04,
                        link_measured=True).save(spec)
    path = os.path.join(C_INPUTS, "star3d1r.c")
    code, out, err = run(capsys, "model", path, "--gpu", str(spec), "--dtype", "float",
                         "--size", "512", "--steps", "100", "--bt", "4", "--bs", "32x32",
                         "--sl", "128", "--gpus", "2")
    assert code == 0, err
    assert "at 151.3 GB/s per direction and 18.0 us per refresh, measured by an5d probe" in out
    assert "nominal" not in out


def test_cli_model_gpus_too_thin(capsys):
    path = os.path.join(C_INPUTS, "j2d5pt.c")
    code, out, err = run(capsys, "model", path, "--gpu", "H200", "--dtype", "float", "--size",
                         "20", "--steps", "10", "--bt", "4", "--bs", "128", "--sl", "off",
                         "--gpus", "8")
    assert code == 0
    assert "8 GPUs would cut the 20 interior planes" in err and "running on 4" in err
    assert "on 4 GPUs:" in out


# --------------------------------------------------------------------------- overlap


def launch_seconds(info, dims, steps, plan, gpu=H200) -> dict[int, float]:
    return {c.degree: c.seconds for c in Model(info, gpu, dims, steps).predict(plan).launches}


def test_the_overlapped_run_by_hand():
    """2 slabs of j2d5pt (halo 4 = the edge plane + bT 3): per launch after the first,
    max(interior window, refresh) + edge window + copy; the first launch whole; the
    refresh before it and the last one's exposed."""
    n, steps, bt = 512, 10, 3  # launches of degree 3, 3, 3, 1
    info, env = benchmark("j2d5pt", n, steps)
    plan = make_plan(info, bt=bt, bs=(128,), sl=64)
    slow = dataclasses.replace(H200, link_gbs=2.0, link_latency_us=50.0, link_measured=True)
    sp = predict_slabs(info, plan, slow, env, 2, overlap=True)
    plane = n + 2
    # slab 0 holds [0, 261): owned [1, 257); slab 1 holds [253, 514): owned [4, 260) locally
    full = launch_seconds(info, (DimExtent(1, 256 + 3, 261), DimExtent(1, n, plane)), steps,
                          plan)
    interior0 = launch_seconds(info, (DimExtent(1, 255, 257), DimExtent(1, n, plane)), steps,
                               plan)  # [0, 257): the array's bottom, a cut at 257
    interior1 = launch_seconds(info, (DimExtent(1, 254, 256), DimExtent(1, n, plane)), steps,
                               plan)  # [4, 260): a cut below, the array's top above
    edge = launch_seconds(info, (DimExtent(1, 10, 12), DimExtent(1, n, plane)), steps, plan)
    copy = 2 * 4 * n * 4 / (H200.gmem_gbs("float") * 1e9)  # 4 planes' interior, read + write
    refresh = [50e-6 + m * 4 * plane * 4 / 2e9 for m in (2, 1, 1, 1, 1)]
    degrees = [3, 3, 3, 1]
    expected = refresh[0] + full[3] + refresh[4]
    for k, d in enumerate(degrees[1:], 1):
        expected += max(max(interior0[d], refresh[k]) + edge[d] + copy,
                        max(interior1[d], refresh[k]) + edge[d] + copy)
    assert sp.overlap and sp.overlap_seconds == pytest.approx(expected)
    assert sp.seconds == sp.overlap_seconds
    assert sp.serial_seconds == pytest.approx(sp.compute.seconds + sp.exchange_seconds)


def test_the_model_overlaps_where_it_pays():
    info, env = benchmark("j2d5pt", 2048, 40)
    plan = make_plan(info, bt=4, bs=(256,), sl=128)
    slow = dataclasses.replace(H200, link_gbs=1.0, link_latency_us=200.0)
    fast = dataclasses.replace(H200, link_gbs=1e6)
    chosen = predict_slabs(info, plan, slow, env, 2)
    assert chosen.overlap and chosen.overlap_seconds < chosen.serial_seconds
    assert chosen.seconds == chosen.overlap_seconds
    assert chosen.to_json()["overlap"] is True
    kept = predict_slabs(info, plan, fast, env, 2)
    assert not kept.overlap and kept.overlap_seconds > kept.serial_seconds
    assert kept.seconds == kept.serial_seconds
    # forced either way, the prediction is the one asked for
    forced = predict_slabs(info, plan, fast, env, 2, overlap=True)
    assert forced.overlap and forced.seconds == kept.overlap_seconds
    assert not predict_slabs(info, plan, slow, env, 2, overlap=False).overlap


def test_runs_that_cannot_overlap_have_no_overlapped_time():
    info, env = benchmark("j2d5pt", 1024, 10)
    plan = make_plan(info, bt=2, bs=(128,), sl=None)
    assert predict_slabs(info, plan, H200, env, 1).overlap_seconds is None
    unknown = dataclasses.replace(H200, link_gbs=0.0)
    assert predict_slabs(info, plan, unknown, env, 2, overlap=True).overlap_seconds is None
    program, info = load_benchmark("wave2d", "double")
    plan = make_plan(info, bt=2, bs=(64,), sl=None)
    env = resolve_params(program, {"compsize": 512, "timestep": 7})
    sp = predict_slabs(info, plan, H200, env, 2, overlap=True)
    assert sp.overlap_seconds is None and not sp.overlap and sp.seconds == sp.serial_seconds
