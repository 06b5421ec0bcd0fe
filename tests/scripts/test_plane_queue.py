"""scripts/plane_queue.py without a GPU: the layouts (their shared memory, the cells they
keep, their blocks), the CUDA source --source prints and its builds (nvcc, sm_90), the
table; on a GPU (marker gpu), the bit-for-bit check of a layout in each element type."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from script_support import load_script

plane_queue = load_script("plane_queue")
Layout = plane_queue.Layout


def test_a_layout_is_cells_thread_rows_degree_and_stream_length():
    assert Layout.parse("64x32:32:4") == Layout(64, 32, 32, 4, 128)
    assert Layout.parse("96x32:16:3:64") == Layout(96, 32, 16, 3, 64)
    assert str(Layout(64, 48, 16, 4)) == "64x48:16:4:128"
    assert Layout.parse(str(Layout(32, 32, 16, 4, 7))) == Layout(32, 32, 16, 4, 7)


@pytest.mark.parametrize("text", ["48x32:32:4", "64x32:24:4", "64x8:8:4", "8x32:32:1",
                                  "64x32", "64:32:4"])
def test_a_layout_that_cannot_be_built_is_refused(text):
    with pytest.raises(ValueError):
        Layout.parse(text)


def test_the_command_line_refuses_a_bad_layout(capsys):
    with pytest.raises(SystemExit) as exit:
        plane_queue.main(["--source", "48x32:32:4"])
    assert exit.value.code == 2
    assert "invalid parse value" in capsys.readouterr().err


def test_shared_memory_kept_cells_and_blocks_per_sm():
    layout = Layout.parse("64x32:32:4")
    # 4 levels' rings of 4 planes of 66 x 34 cells (one-cell padding each side)
    assert layout.smem_bytes("float") == 4 * 4 * 66 * 34 * 4 == 143_616
    assert layout.smem_bytes("double") == 2 * 143_616
    assert layout.kept == 56 * 24 / (64 * 32)
    # one block by shared memory; a 32x32 block of 512 threads: three
    assert layout.blocks_per_sm("float") == 1
    assert Layout.parse("32x32:16:4").blocks_per_sm("float") == 3
    assert Layout.parse("32x32:16:4").blocks_per_sm("double") == 1
    # the paper's 512^3 (interior 1..510): 4 stream blocks of 128, 22 x 10 in-plane blocks
    dim = SimpleNamespace(lower=1, upper=510)
    assert layout.blocks((dim, dim, dim)) == 4 * 22 * 10
    assert Layout.parse("64x64:32:3:64").blocks((dim, dim, dim)) == 8 * 9 * 9


def test_source_prints_one_kernel_with_its_layout(capsys):
    assert plane_queue.main(["--source", "64x48:16:4:64", "--dtypes", "double"]) == 0
    source = capsys.readouterr().out
    assert source.strip() == plane_queue.kernel_source(Layout(64, 48, 16, 4, 64),
                                                       "double").strip()
    for line in ("typedef double real;", "#define TX 64", "#define TY 48", "#define NTY 16",
                 "#define BT 4", "#define SL 64", "#define MIN_BLOCKS 1"):
        assert line in source
    # one barrier a step; the coefficients promoted as the C program promotes them
    assert source.count("__syncthreads()") == 1
    assert "(real)0.1144f" in source and 'extern "C" __global__' in source


@pytest.mark.parametrize("dtype", ["float", "double"])
@pytest.mark.parametrize("exact", [False, True])
def test_the_source_builds_for_sm_90(tmp_path, dtype, exact):
    from an5dpy.cuda.runtime import nvcc_path
    if nvcc_path() is None:
        pytest.skip("nvcc is not installed")
    built = plane_queue.build(plane_queue.kernel_source(Layout.parse("32x32:16:2:16"), dtype),
                              exact, str(tmp_path), "pq")
    assert built.registers > 0
    with open(built.path, "rb") as f:
        assert b"pq_kernel" in f.read()


def test_the_table_gives_each_kernel_over_the_tuned_plan():
    rows = [{"dtype": "float", "case": "tuned bt=4 bs=32x32", "gflops": 7000.0, "ratio": 1.0,
             "registers": "-", "kept": None},
            {"dtype": "float", "case": "queue 64x32:32:4:128", "gflops": 4900.4, "ratio": 0.7,
             "registers": "64", "kept": 0.65625}]
    lines = plane_queue.render(rows, "NVIDIA H200").splitlines()
    assert lines[0] == ("| dtype | kernel | GFLOP/s on NVIDIA H200 | / tuned | cells kept | "
                        "registers |")
    assert lines[2] == "| float | tuned bt=4 bs=32x32 | 7,000 | 1.000 | - | - |"
    assert lines[3] == "| float | queue 64x32:32:4:128 | 4,900 | 0.700 | 66% | 64 |"


def test_nan_payloads_and_signs_compare_equal_and_other_bits_do_not():
    import numpy as np
    a = np.array([1.0, np.nan, -0.0], dtype=np.float32)
    b = a.copy()
    b.view(np.uint32)[1] ^= 0x80000001  # another NaN: sign and payload
    assert plane_queue.same_bits(a, b)
    b[2] = 0.0  # -0.0 against 0.0: other bits
    assert not plane_queue.same_bits(a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, layout", [("float", "64x32:32:4"), ("double", "32x32:16:4")])
def test_the_plane_queue_computes_what_the_generated_kernels_compute(dtype, layout, capsys):
    assert plane_queue.main(["--check-only", "--layouts", layout, "--dtypes", dtype]) == 0
    assert "check: 0 failures" in capsys.readouterr().out


def test_a_builds_registers_read_as_the_tables_give_them():
    assert plane_queue.Built("k.cubin", 64, False).registers_text() == "64"
    assert plane_queue.Built("k.cubin", 255, True).registers_text() == "255 (spills)"
