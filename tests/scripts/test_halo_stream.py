"""scripts/halo_stream.py without a GPU: the layouts, the C program's terms, the CUDA source
--source prints and its builds (nvcc, sm_90), the table; on a GPU (marker gpu), the
bit-for-bit check of a layout in each element type."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from script_support import load_script

halo_stream = load_script("halo_stream")
Layout = halo_stream.Layout


def test_a_layout_is_threads_cells_stream_length_unrolling_and_rows():
    assert Layout.parse("32x4x4") == Layout(32, 4, 4, 512, False, False)
    assert Layout.parse("64x2x8:128u") == Layout(64, 2, 8, 128, True, False)
    assert Layout.parse("64x2x8c") == Layout(64, 2, 8, 512, False, True)
    assert str(Layout(32, 8, 2, 7)) == "32x8x2:7"
    assert str(Layout(32, 8, 2, 512, True)) == "32x8x2:512u"
    for text in ("32x4x4:512", "64x2x8:128u", "32x1x1:1", "32x4x4:64uc", "32x4x4:512c"):
        assert str(Layout.parse(text)) == text


@pytest.mark.parametrize("text", ["48x4x4", "32x64x1", "32x4", "32x4x0", "32x0x4", "ax4x4",
                                  "32x4x4:", "32x4x4:0", "32x4x4:8x", "32x4x4cu", "32x4x4:c"])
def test_a_layout_that_cannot_be_built_is_refused(text):
    with pytest.raises(ValueError):
        Layout.parse(text)


def test_blocks_cover_the_interior_in_x_y_and_stream_blocks():
    # the paper's 512^3 of star3d4r: interior 4..515 in each dimension
    dim = SimpleNamespace(lower=4, upper=515)
    assert Layout.parse("32x4x4").blocks((dim, dim, dim)) == (16, 32, 1)
    assert Layout.parse("64x2x4:128").blocks((dim, dim, dim)) == (8, 64, 4)
    # odd extents round up: 45 cells, blocks of 32 x 16 cells, stream blocks of 7 planes
    odd = SimpleNamespace(lower=3, upper=47)
    assert Layout.parse("32x8x2:7").blocks((odd, odd, odd)) == (2, 3, 7)


@pytest.mark.parametrize("radius", [1, 2, 3, 4])
def test_the_terms_are_the_c_programs_in_its_order(radius):
    terms = halo_stream.update_terms(f"star3d{radius}r")
    assert len(terms) == 6 * radius + 1
    offsets = [t[1:] for t in terms]
    # z below, y below, x below, the centre, x above, y above, z above: the C source's order
    r = radius
    want = ([(-k, 0, 0) for k in range(r, 0, -1)] + [(0, -k, 0) for k in range(r, 0, -1)]
            + [(0, 0, -k) for k in range(r, 0, -1)] + [(0, 0, 0)]
            + [(0, 0, k) for k in range(1, r + 1)] + [(0, k, 0) for k in range(1, r + 1)]
            + [(k, 0, 0) for k in range(1, r + 1)])
    assert offsets == want
    assert all(re.fullmatch(r"[0-9.]+f", t[0]) for t in terms)


def test_a_stencil_that_is_not_a_star_is_refused():
    with pytest.raises(SystemExit, match="not a sum of star terms"):
        halo_stream.update_terms("box3d1r")


def test_source_prints_one_kernel_with_its_layout(capsys):
    assert halo_stream.main(["--source", "star3d3r:32x8x2:64"]) == 0
    source = capsys.readouterr().out
    assert source.strip() == halo_stream.kernel_source("star3d3r", Layout(32, 8, 2, 64),
                                                       "float").strip()
    assert 'extern "C" __global__ void __launch_bounds__(256) hs_kernel(' in source
    # one barrier a step, two shared planes of 16 + 6 rows of 32 + 6 cells
    assert source.count("__syncthreads()") == 1
    assert "__shared__ float sm[2][22][38];" in source
    # each cell's update once, its column from registers, the rest from shared memory
    assert source.count("const float v0 = ") == 1 and source.count("const float v1 = ") == 1
    assert "0.0421f * col0[0] + " in source and "0.06316f * col1[6])" in source
    assert "0.05263f * col0[3]" in source and "0.04561f * sm[buf][0 + ty][3 + tx]" in source
    assert "#pragma unroll 1\n  for (int z = z0" in source


def test_consecutive_rows_take_y_neighbours_among_the_threads_cells_from_registers():
    source = halo_stream.kernel_source("star3d2r", Layout.parse("32x4x4c"), "float")
    assert "const int y1 = ybase + 1 + ty * 4;" in source
    assert "sm[buf][3 + ty * 4][2 + tx] = col1[2];" in source
    v1 = next(line for line in source.splitlines() if "const float v1 = " in line)
    # cell 1: y-2 from shared memory (another thread's), y-1 and y+1, y+2 its own cells
    assert "0.06668f * sm[buf][1 + ty * 4][2 + tx]" in v1 and "0.06924f * col0[2]" in v1
    assert v1.count("col2[2]") == 1 and v1.count("col3[2]") == 1
    # strided rows: every y neighbour from shared memory
    strided = halo_stream.kernel_source("star3d2r", Layout.parse("32x4x4"), "float")
    v1 = next(line for line in strided.splitlines() if "const float v1 = " in line)
    assert "col0" not in v1 and "0.06924f * sm[buf][5 + ty][2 + tx]" in v1


def test_the_unrolled_layout_unrolls_the_stream_by_the_columns_planes():
    source = halo_stream.kernel_source("star3d2r", Layout.parse("32x4x2u"), "double")
    assert "#pragma unroll 5\n  for (int z = z0" in source
    assert "__shared__ double sm[2][12][36];" in source


@pytest.mark.parametrize("dtype", ["float", "double"])
@pytest.mark.parametrize("exact", [False, True])
def test_the_source_builds_for_sm_90(tmp_path, dtype, exact):
    from an5dpy.cuda.runtime import nvcc_path
    if nvcc_path() is None:
        pytest.skip("nvcc is not installed")
    built = halo_stream.build(halo_stream.kernel_source("star3d4r", Layout.parse("32x4x2:16"),
                                                        dtype), exact, str(tmp_path), "hs")
    assert built.registers > 0
    with open(built.path, "rb") as f:
        assert b"hs_kernel" in f.read()


def test_the_tuned_plans_are_those_the_kernel_was_measured_against():
    # table5's plans when the kernel was measured (halo_stream.md names those it timed);
    # since then star3d2r-4r are tuned with generated kernels that load the halo
    import csv
    artifact = halo_stream.os.path.join(halo_stream.REPO, "artifact", "H200")
    with open(halo_stream.os.path.join(artifact, "table5.csv")) as f:
        rows = {(r["stencil"], r["dtype"]): r for r in csv.DictReader(f)}
    with open(halo_stream.os.path.join(artifact, "halo_stream.md")) as f:
        measured = f.read()
    for (stencil, dtype), plan in halo_stream.TUNED.items():
        row = rows[(stencil, dtype)]
        # table5 gives bS contiguous dimension first
        bs = "x".join(map(str, plan["bs"][::-1]))
        sl = "off" if plan["sl"] is None else plan["sl"]
        line = (f"| {stencil} {dtype} | tuned bt={plan['bt']} bs={bs} sl={sl}"
                + (f" coarsen={plan['coarsen']}" if plan["coarsen"] > 1 else "")
                + f" barriers={plan['barriers']} opt=nondiag dtype={dtype} |")
        if row["halo"] == "threads":
            assert row["bt"] == str(plan["bt"]) and row["bs"] == bs
            assert row["cells"] == str(plan["coarsen"]) and row["barriers"] == plan["barriers"]
            regs = halo_stream.TUNED_REGS[(stencil, dtype)]
            assert row["regs"] == (str(regs) if regs else "-")
        else:
            assert row["halo"] == "loaded" and row["bt"] == "1"
        assert line in measured or (stencil, dtype) == ("star3d2r", "double")


def test_the_table_gives_each_kernel_over_the_tuned_plan():
    rows = [{"stencil": "star3d4r", "dtype": "float", "case": "tuned bt=1 bs=32x32",
             "gflops": 8579.4, "ratio": 1.0, "registers": "-"},
            {"stencil": "star3d4r", "dtype": "float", "case": "layout 64x4x4:512",
             "gflops": 13285.0, "ratio": 1.5485, "registers": "107"}]
    lines = halo_stream.render(rows, "NVIDIA H200").splitlines()
    assert lines[0] == "| row | kernel | GFLOP/s on NVIDIA H200 | / tuned | registers |"
    assert lines[2] == "| star3d4r float | tuned bt=1 bs=32x32 | 8,579 | 1.000 | - |"
    assert lines[3] == "| star3d4r float | layout 64x4x4:512 | 13,285 | 1.548 | 107 |"


@pytest.mark.gpu
@pytest.mark.parametrize("row, layout", [("star3d3r:float", "32x4x4"),
                                         ("star3d4r:double", "32x8x2u"),
                                         ("star3d3r:double", "64x2x4c")])
def test_the_kernel_computes_what_the_generated_kernels_compute(row, layout, capsys):
    assert halo_stream.main(["--check-only", "--rows", row, "--layouts", layout]) == 0
    assert "check: 0 failures" in capsys.readouterr().out
