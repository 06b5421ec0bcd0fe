"""scripts/big_grid.py without a GPU: the default grid does not fit one H200 and does fit
two, the sampled planes, and the spot check itself on the CPU: the slabs run by the
simulator (as the GPUs run them), each sampled plane compared with gcc's run of its
sub-grid, which gives it bit for bit, where a sub-grid one plane thinner does not."""

from __future__ import annotations

import numpy as np
import pytest

from script_support import load_script

from an5dpy.api import bind
from an5dpy.blocking.plan import grid_extents
from an5dpy.check.simulate_slabs import simulate_slabs
from an5dpy.check.verify import result_buffer

big_grid = load_script("big_grid")
scaling = big_grid.scaling


def test_the_default_grid_needs_two_h200s():
    shape = big_grid.grid_shape(2900)
    assert shape == (2, 2902, 2902, 2902)
    whole = big_grid.grid_bytes(shape)
    assert whole == pytest.approx(195.5e9, rel=1e-3)
    h200 = 139.8e9  # what cupy reports of a 141 GB H200
    assert whole > h200 and whole / 2 * 1.01 < h200  # a slab (half, and its halo) fits


def decomposition(size: int, gpus: int, bt: int = 2):
    stencil = scaling.translate("star3d1r", scaling.plan_options(bt, "16x16", "off"),
                                big_grid.grid_shape(size))
    shape = big_grid.grid_shape(size)
    return stencil, shape, stencil.decompose(shape, list(range(gpus)))


def test_sampled_planes_and_sub_grids():
    stencil, shape, decomp = decomposition(40, 3)
    extent = grid_extents(stencil.info, bind(stencil.info, shape, 5, {}))[0]
    a, b = decomp.slabs[0].owned[1], decomp.slabs[1].owned[1]
    assert big_grid.sample_planes(decomp, extent) == (3, a - 1, a, b - 1, b, 38)
    assert big_grid.owner(decomp, a).index == 1 and big_grid.owner(decomp, a - 1).index == 0
    assert big_grid.sub_grid_planes(20, 5, 1, 42) == (15, 26)
    assert big_grid.sub_grid_planes(3, 5, 1, 42) == (0, 9)  # clipped at the array's ends
    assert big_grid.sub_grid_planes(39, 5, 1, 42) == (34, 42)


def test_compare_counts_cells_bit_for_bit():
    gpu = np.array([[1.0, np.nan], [0.5, 2.0]], np.float32)
    cpu = np.array([[1.0, np.nan], [0.5, np.nextafter(np.float32(2.0), np.float32(3.0))]],
                   np.float32)
    c = big_grid.compare(7, 1, (2, 13), gpu, cpu)
    assert (c.mismatches, c.cells, c.passed) == (1, 4, False)
    assert c.max_abs_diff == pytest.approx(2.0 ** -22)
    assert big_grid.compare(7, 1, (2, 13), gpu, gpu.copy()).passed
    text = big_grid.report([c, big_grid.compare(8, 1, (3, 14), gpu, gpu)], ["# head"])
    assert "| 7 | 1 | 2..12 | 4 | 1 | 2.38e-07 | FAIL |" in text
    assert text.rstrip().endswith("**FAIL**: 1 of 2 planes bit-identical to gcc.")


@pytest.mark.parametrize("steps", [5, 4])  # 2 bT + 1 (a remainder launch), and 2 bT
def test_the_spot_check_on_the_simulators_slabs(steps):
    size, gpus = 22, 2
    stencil, shape, decomp = decomposition(size, gpus)
    env = bind(stencil.info, shape, steps, {})
    grid = np.empty(shape, np.float32)
    scaling.fill_planes(np, grid, 0)
    result = simulate_slabs(stencil.info, stencil.plan, grid, env, gpus)[
        result_buffer(stencil.info, env)]
    extent = grid_extents(stencil.info, env)[0]
    for p in big_grid.sample_planes(decomp, extent):
        lo, hi = big_grid.sub_grid_planes(p, steps, 1, shape[1])
        sub = np.empty((2, hi - lo, *shape[2:]), np.float32)
        scaling.fill_planes(np, sub, lo)
        cpu = stencil.reference(sub, steps)
        assert big_grid.compare(p, 0, (lo, hi), result[p], cpu[p - lo]).passed, p
    # one plane less on each side (not clipped): the edges' error reaches plane p
    p = decomp.slabs[0].owned[1]
    lo, hi = big_grid.sub_grid_planes(p, steps - 1, 1, shape[1])
    assert lo > 0 and hi < shape[1]
    sub = np.empty((2, hi - lo, *shape[2:]), np.float32)
    scaling.fill_planes(np, sub, lo)
    assert not np.array_equal(stencil.reference(sub, steps)[p - lo], result[p])


def test_a_dry_run_on_the_cpu(monkeypatch, tmp_path, capsys):
    """main() end to end with numpy as cupy and the simulator as the GPUs' run
    (tests/numpy_gpus_support.py): every sampled plane passes, big_grid.md is written."""
    import numpy_gpus_support
    numpy_gpus_support.install(monkeypatch)
    assert big_grid.main(["--size", "21", "--bt", "2", "--bs", "16x16", "--sl", "off",
                          "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "fits on one" in out and "GPU 1: 40.0 GB used of 80.0 GB" in out
    text = (tmp_path / "big_grid.md").read_text()
    assert text.startswith("# A grid larger than one GPU: star3d1r float 21^3 on 2 x NVIDIA H200")
    assert "5 steps" in text and text.rstrip().endswith("**PASS**: 4 of 4 planes bit-identical to gcc.")


def test_a_dry_run_finds_a_wrong_plane(monkeypatch, tmp_path):
    import numpy_gpus_support
    from an5dpy import api
    numpy_gpus_support.install(monkeypatch)
    right = api.Stencil.run_slabs

    def wrong(self, slabs, *args, **kwargs):
        results = right(self, slabs, *args, **kwargs)
        results[1][3, 4, 5] += 1  # a cell of slab 1's first owned plane (local 3)
        return results

    monkeypatch.setattr(api.Stencil, "run_slabs", wrong)
    assert big_grid.main(["--size", "21", "--bt", "2", "--bs", "16x16", "--sl", "off",
                          "--out", str(tmp_path)]) == 1
    text = (tmp_path / "big_grid.md").read_text()
    assert "| FAIL |" in text and "**FAIL**: 3 of 4" in text
