"""The model's charge for read-only arrays (:class:`an5dpy.perf.counts.CoefficientReads`
and :class:`an5dpy.perf.model.Model`): each array's elements read once per launch from
device memory along the dimensions it follows, every distinct read through L1 per
computing thread and level, and its instructions in the issue term; the same stencil with
a scalar in place of the array costs exactly that much less. Programs without read-only
arrays are predicted as before (scripts/snapshot.py checks the benchmarks)."""

from __future__ import annotations

from an5dpy import driver
from an5dpy.blocking.plan import grid_extents
from an5dpy.check.reference import resolve_params
from an5dpy.perf.counts import CoefficientReads
from an5dpy.perf.model import Model
from an5dpy.perf.model_constants import COEF_READ_INSTRUCTIONS

from read_only_support import PROGRAMS, write

#: poisson with the read-only array f[i][j] replaced by the scalar g.
POISSON_SCALAR = PROGRAMS["poisson"][0].replace("double f[n][m]", "double g").replace(
    "f[i][j]", "g")


def test_counts_per_array_and_read(tmp_path):
    _, info = driver.load(write(tmp_path, "planes_rows"))
    reads = CoefficientReads.of(info)
    # cz[i] (double), row[j+1] (float), c[2][j] (double): one read each
    assert (reads.reads, reads.l1_bytes) == (3, 8 + 4 + 8)
    assert reads.arrays == ((8, (0,)), (4, (1,)), (8, (1,)))
    assert reads.gm_bytes((9, 11)) == 8 * 9 + 4 * 11 + 8 * 11
    _, info = driver.load(write(tmp_path, "conductivity"))
    assert CoefficientReads.of(info).reads == 3  # k[i-1][j], k[i][j-1], k[i][j] (twice)
    assert CoefficientReads.of(info).gm_bytes((5, 7)) == 4 * 35


def test_a_read_only_array_costs_its_traffic_and_nothing_else(tmp_path):
    program, info = driver.load(write(tmp_path, "poisson"))
    scalar_path = tmp_path / "poisson_scalar.c"
    scalar_path.write_text(POISSON_SCALAR)
    _, plain = driver.load(str(scalar_path))
    assert plain.flops_per_cell == info.flops_per_cell and not plain.coefficients
    env = resolve_params(program, {"n": 4098, "m": 2050, "T": 20, "h2": 0.5})
    cells = 4096 * 2048
    plan = driver.blocking_plan(info, 4, bs=(128,), sl=128)
    with_f = Model(info, "H100", grid_extents(info, env), 20)
    without = Model(plain, "H100", grid_extents(info, env), 20)
    a, b = with_f.launch_cost(plan, 4), without.launch_cost(plan, 4)
    assert a.coef_gm_bytes == 8 * cells and b.coef_gm_bytes == 0
    assert a.coef_l1_bytes == a.comp_threads * 8 and b.coef_l1_bytes == 0
    assert a.gm_bytes - b.gm_bytes == a.coef_gm_bytes
    assert a.sm_bytes - b.sm_bytes == a.coef_l1_bytes
    assert (a.levels, a.flops, a.gm_reads, a.sm_reads) == (b.levels, b.flops, b.gm_reads,
                                                            b.sm_reads)
    assert (with_f.level_instructions(plan, 4) - without.level_instructions(plan, 4)
            == COEF_READ_INSTRUCTIONS)
    assert with_f.predict(plan).seconds > without.predict(plan).seconds
    assert without.launch_cost(plan, 4).to_json()["coef_gm_bytes"] == 0
