"""The model's printout (an5dpy.perf.report): what it says of a plan whose computing
threads load the halo, whose slots are its tiles' cells, not its threads."""

from __future__ import annotations

from an5dpy.blocking.plan import make_plan
from an5dpy.perf.gpus import get_gpu
from an5dpy.perf.model import Model
from an5dpy.perf.report import format_prediction

from model_support import benchmark_grid, load_benchmark


def test_a_loaded_halo_is_named_where_the_printout_counts_slots_and_efficiency():
    info = load_benchmark("box3d3r", "double")[1]
    gpu = get_gpu("H200")
    model = Model(info, gpu, benchmark_grid(info, 128), 10)
    loaded = make_plan(info, 1, bs=(14, 70), opt="assoc", halo="loaded")
    threads = make_plan(info, 1, bs=(14, 70), opt="assoc")
    text = format_prediction(model.predict(loaded), gpu)
    assert ("cells of the blocks' tiles (cell x level 1..bT x plane, all launches; a "
            "block's 512 threads hold its compute region and load the halo):") in text
    assert "thread slots" not in text
    assert "cells per thread, their computing threads loading the halo, reach" in text
    plain = format_prediction(model.predict(threads), gpu)
    assert "thread slots (thread x level 1..bT x plane, all launches):" in plain
    assert "loading the halo" not in plain
