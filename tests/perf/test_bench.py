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
