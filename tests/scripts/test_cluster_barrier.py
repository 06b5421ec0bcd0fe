"""scripts/cluster_barrier.py without a GPU: the CUDA source --source prints (its five
kernels, their clusters, built by nvcc for sm_90 through the script's build), the grid of
whole clusters, the table and the command line; on a GPU (marker gpu), a short run."""

from __future__ import annotations

import re

import pytest

from script_support import load_script

cluster_barrier = load_script("cluster_barrier")

KERNEL = re.compile(r'extern "C" __global__ void __launch_bounds__\(1024, 2\)'
                    r"(?: __cluster_dims__\((\d), 1, 1\))?\n(\w+)\(float \*out, int iterations\)")


def test_source_prints_the_five_kernels_and_their_clusters(capsys):
    assert cluster_barrier.main(["--source"]) == 0
    source = capsys.readouterr().out
    assert source == cluster_barrier.SOURCE
    clusters = {name: int(size or 1) for size, name in KERNEL.findall(source)}
    assert clusters == {"sync_threads_local": 1, "cluster2_local": 2, "cluster2_remote_x": 2,
                        "cluster4_local": 4, "cluster4_remote_xy": 4}
    assert [v.kernel for v in cluster_barrier.VARIANTS] == list(clusters)
    # the remote variants read the neighbour blocks' shared memory, the others do not
    assert [v.local for v in cluster_barrier.VARIANTS] == [True, True, False, True, False]


def test_the_source_builds_for_sm_90(tmp_path):
    from an5dpy.cuda.runtime import nvcc_path
    if nvcc_path() is None:
        pytest.skip("nvcc is not installed")
    cubin = cluster_barrier.build("sm_90", str(tmp_path))
    with open(cubin, "rb") as f:
        image = f.read()
    for variant in cluster_barrier.VARIANTS:
        assert variant.kernel.encode() in image


def test_the_grid_is_whole_clusters_of_four():
    assert cluster_barrier.grid_blocks(132, 32) == 4224
    assert cluster_barrier.grid_blocks(132, 1) == 132
    assert cluster_barrier.grid_blocks(66, 1) == 68
    assert cluster_barrier.grid_blocks(78, 3) == 236
    assert cluster_barrier.grid_blocks(1, 1) == 4


def test_the_table_gives_each_variant_over_sync_threads():
    seconds = dict(zip([v.kernel for v in cluster_barrier.VARIANTS],
                       [0.010, 0.012, 0.015, 0.013, 0.020]))
    same = {"sync_threads_local": True, "cluster2_local": True, "cluster2_remote_x": None,
            "cluster4_local": False, "cluster4_remote_xy": None}
    lines = cluster_barrier.render({"seconds": seconds, "same": same}, 4000, 1000).splitlines()
    assert lines[0] == "| variant | ms | G cell-iterations/s | time over __syncthreads |"
    # 4000 blocks of 1024 cells, 1000 iterations in 10 ms: 409.6 G cell-iterations/s
    assert lines[2] == "| __syncthreads, local reads | 10.00 | 410 | 1.000 |"
    assert lines[4] == "| cluster of 2 barrier, x edges remote | 15.00 | 273 | 1.500 |"
    assert lines[5] == ("| cluster of 4 barrier, local reads (result differs from "
                        "__syncthreads') | 13.00 | 315 | 1.300 |")
    assert len(lines) == 2 + len(cluster_barrier.VARIANTS)


@pytest.mark.parametrize("argv", [["--iterations", "0"], ["--blocks-per-sm", "x"],
                                  ["--repeats", "-1"]])
def test_the_command_line_wants_positive_counts(argv, capsys):
    with pytest.raises(SystemExit) as exit:
        cluster_barrier.main(argv)
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert "must be at least 1" in err or "invalid int value" in err


@pytest.mark.gpu
def test_a_short_run_times_every_variant_on_the_gpu(capsys):
    from an5dpy.cuda.runtime import device_arch
    if int(device_arch().removeprefix("sm_")) < 90:
        pytest.skip("thread-block clusters need sm_90 or newer")
    assert cluster_barrier.main(["--iterations", "50", "--blocks-per-sm", "2",
                                 "--repeats", "1"]) == 0
    text = capsys.readouterr().out
    assert "| variant | ms | G cell-iterations/s | time over __syncthreads |" in text
    for variant in cluster_barrier.VARIANTS:
        assert f"| {variant.description} | " in text
    assert "differs" not in text
