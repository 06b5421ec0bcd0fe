"""an5dpy.perf.bench without a GPU (timing is tested under tests/gpu)."""

from __future__ import annotations

import os

from an5dpy.perf.bench import paper_env
from an5dpy.driver import load

from paths import REPO


def test_paper_env_gives_the_paper_sizes_and_derives_the_rest():
    program, info = load(os.path.join(REPO, "c_inputs", "j2d5pt.c"), (("SB_TYPE", "float"),))
    env = paper_env(program, info)
    assert (env["compsize"], env["timestep"], env["dimsize"]) == (16384, 1000, 16386)
    program, info = load(os.path.join(REPO, "c_inputs", "star3d1r.c"), (("SB_TYPE", "float"),))
    assert paper_env(program, info, 7)["compsize"] == 512
    assert info.time.steps(paper_env(program, info, 7)) == 7


class FakeCupy:
    """Just enough of cupy for the timing loop: events on a clock that ``run`` advances."""

    def __init__(self):
        self.clock_ms = 0.0
        self.log = []
        fake = self

        class Event:
            def record(self):
                self.at = fake.clock_ms
                fake.log.append("record")

            def synchronize(self):
                fake.log.append("sync")

        class Device:
            def synchronize(self):
                fake.log.append("device sync")

        self.cuda = type("cuda", (), {"Event": Event, "Device": Device,
                                      "get_elapsed_time": staticmethod(
                                          lambda a, b: b.at - a.at)})


def test_one_timing_loop_for_bench_tune_and_probe(monkeypatch):
    import sys

    from an5dpy.perf import bench, gpus
    fake = FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    durations = iter([100.0, 30.0, 10.0, 20.0, 40.0])  # ms: a warm-up run, then 4 timed

    def run():
        fake.clock_ms += next(durations)
        fake.log.append("run")

    times = bench.time_runs(run, repeats=4, warmup=1)
    assert times == (0.03, 0.01, 0.02, 0.04)
    assert fake.log[:2] == ["run", "device sync"]  # the warm-up is not timed
    assert fake.log[2:6] == ["record", "run", "record", "sync"]
    assert bench.median(times) == 0.03  # the upper middle run of an even count
    durations = iter([5.0, 3.0, 2.0, 4.0])  # probe's helper: the same loop, in ms
    assert gpus._median_ms(run, 3) == 3.0
