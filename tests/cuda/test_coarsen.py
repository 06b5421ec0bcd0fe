"""Coarsened kernels (several cells per thread, BlockingPlan.coarsen): what the render
model prints for each cell, the row neighbours taken from registers, the shared-memory
writes 2D nondiag skips, and that nvcc builds them. Their results are checked on the GPU
(tests/gpu/test_cuda.py, test_levels_gpu.py, test_read_only_gpu.py: exact builds against
gcc)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from an5dpy.blocking.plan import COARSENINGS, BlockingPlan, Mode, make_plan
from an5dpy.cuda.kernels import generate
from an5dpy.cuda.render_model import CELL_MACRO, Coarsening, cell_register
from an5dpy.cuda.runtime import nvcc_path
from an5dpy.driver import load

from cuda_support import compile_kernels
from paths import C_INPUTS


def benchmark(name: str, dtype: str = "float"):
    return load(f"{C_INPUTS}/{name}.c", (("SB_TYPE", dtype),))[1]


def kernel_text(info, plan) -> str:
    return generate(info, plan, "x").files()["x_kernel.cu"]


def inner_lines(text: str) -> list[str]:
    """The first kernel's inner phase, one call per line."""
    body = text.split("inner phase")[1].split("}\n")[0]
    return [line.strip() for line in body.splitlines()[1:] if line.strip()]


def test_each_cell_has_its_registers_flags_and_macro():
    info = benchmark("star3d1r")
    plan = make_plan(info, 2, bs=(32, 32), sl=64, opt="nondiag", coarsen=4)
    text = kernel_text(info, plan)
    assert plan.threads == (8, 32) and plan.thread_block == (32, 8) and plan.nthreads == 256
    assert "__launch_bounds__(256)" in text
    for m in range(4):
        assert f"#define {CELL_MACRO}{m}(an5d_stmt)" in text
        assert f"const int an5d_t1_x{m} = threadIdx.y * 4 + {m};" in text
        assert f"unsigned an5d_act_x{m} = 0u;" in text
        assert re.search(rf"float an5d_reg_0_0_x{m} = 0;", text)
    # the one-cell names exist only as each cell macro's aliases
    assert "const bool an5d_bnd = an5d_in_array" not in text


def test_row_neighbours_come_from_the_threads_own_registers():
    info = benchmark("j2d5pt")
    plan = make_plan(info, 4, bs=(512,), sl=256, opt="nondiag", coarsen=2)
    how = Coarsening.of(info, plan)
    assert how.rows == (-1, 1)
    text = kernel_text(info, plan)
    assert "#define AN5D_UPDATE(an5d_i0, an5d_i1, an5d_i2, an5d_b, an5d_ym1, an5d_yp1)" in text
    evaluations = [line for line in inner_lines(text) if "_E(" in line]
    cell0, cell1 = evaluations[0], evaluations[1]
    # cell 0: the left neighbour from shared memory (cell 1 of the thread before, in the
    # cell-major row of cells 1), the right one is cell 1's register
    assert plan.cell_major and plan.cell_row_width == 256 + 2
    assert cell0.startswith(f"{CELL_MACRO}0(") and "[threadIdx.x + 258])" in cell0
    assert plan.cell_major_slot(0, -1) == 258
    assert cell0.rstrip(");").endswith("_x1")
    # cell 1: the left neighbour is cell 0's register, the right one from shared memory
    # (cell 0 of the next thread)
    assert cell1.startswith(f"{CELL_MACRO}1(") and "_x0, AN5D_SREF" in cell1
    assert "[threadIdx.x + 2])" in cell1 and plan.cell_major_slot(1, 1) == 2
    # each cell writes its own row
    assert "const int an5d_spos_x0 = threadIdx.x + 1;" in text
    assert "const int an5d_spos_x1 = threadIdx.x + 259;" in text
    assert "[an5d_spos] = " in text


@settings(max_examples=300, deadline=None)
@given(coarsen=st.sampled_from(COARSENINGS[1:]), radius=st.integers(1, 6),
       warps=st.integers(1, 8), dtype=st.sampled_from(["float", "double"]))
def test_cell_major_rows_put_each_read_where_its_owner_wrote(coarsen, radius, warps, dtype):
    """The cell-major layout (BlockingPlan.cell_major_slot) on any radius, cells per thread
    and block: every read of another thread's cell lands on the word that thread wrote
    for that cell, inside the plane; a thread at either end of the block reads only the
    padding beyond the written words (the halo, outside every level's window); and a
    warp's 32 lanes access 32 consecutive words (no bank conflict) in every read and
    write."""
    threads = 32 * warps
    plan = BlockingPlan(2, dtype, (radius, radius), 1, (threads * coarsen,), None,
                        Mode.NONDIAG, coarsen=coarsen)
    assert plan.cell_major
    shared = plan.shared_cells
    assert shared == tuple(m for m in range(coarsen)
                           if m < radius or m >= coarsen - radius)
    words = plan.smem_row_shape[0]
    written = {}
    for t in range(threads):
        for m in shared:
            index = t + plan.cell_major_slot(m, 0)
            assert index not in written
            written[index] = t * coarsen + m
    for t in range(threads):
        for m in range(coarsen):
            for dy in range(-radius, radius + 1):
                if 0 <= m + dy < coarsen:
                    continue  # the thread's own register
                index = t + plan.cell_major_slot(m, dy)
                assert 0 <= index < words
                cell = t * coarsen + m + dy
                if 0 <= cell < threads * coarsen:
                    assert written[index] == cell
                else:
                    assert index not in written
    for m in range(coarsen):
        for dy in range(-radius, radius + 1):
            if not 0 <= m + dy < coarsen or (dy == 0 and m in shared):
                lanes = [t + plan.cell_major_slot(m, dy) for t in range(32)]
                assert lanes == list(range(lanes[0], lanes[0] + 32))


def test_2d_nondiag_cells_inside_a_run_skip_the_shared_write():
    info = benchmark("star2d1r")
    plan = make_plan(info, 2, bs=(256,), sl=128, opt="nondiag", coarsen=4)
    assert Coarsening.of(info, plan).shared == (0, 3)
    writes = [line for line in inner_lines(kernel_text(info, plan)) if "_W(" in line]
    assert writes and {line.split("(")[0] for line in writes} == {f"{CELL_MACRO}0",
                                                                   f"{CELL_MACRO}3"}


@pytest.mark.parametrize("name, opt", [("star3d2r", "nondiag"), ("box2d1r", "assoc"),
                                       ("j3d27pt", "none")])
def test_modes_without_row_neighbours_write_every_cell(name, opt):
    info = benchmark(name)
    bs = (16, 32) if info.ndim == 3 else (128,)
    plan = make_plan(info, 1, bs=bs, sl=32, opt=opt, coarsen=2)
    how = Coarsening.of(info, plan)
    assert how.shared == (0, 1)
    assert (how.rows != ()) == (opt == "nondiag")


def test_cell_register_names():
    assert cell_register("an5d_reg_1_2", 3) == "an5d_reg_1_2_x3"


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed")
@pytest.mark.parametrize("name, dtype, bt, bs, opt, coarsen", [
    ("j2d5pt", "float", 4, (256,), "nondiag", 2),
    ("star2d2r", "double", 2, (128,), "none", 4),
    ("box3d1r", "float", 2, (16, 64), "assoc", 2),
    ("star3d1r", "double", 3, (32, 32), "nondiag", 8),
    ("wave2d", "float", 3, (256,), None, 2),
    ("poisson2d", "double", 2, (64,), None, 4),
])
def test_nvcc_builds_coarsened_kernels_without_warnings(tmp_path, name, dtype, bt, bs, opt,
                                                        coarsen):
    info = benchmark(name, dtype)
    plan = make_plan(info, bt, bs=bs, sl=64, opt=opt, coarsen=coarsen)
    rc, log = compile_kernels(generate(info, plan, name), str(tmp_path / "out"), name)
    assert rc == 0, log
    assert "warning" not in log.lower(), log


# --------------------------------------------------------------------------- warp shuffles


@pytest.mark.parametrize("name, coarsen, bt", [("star2d1r", 2, 3), ("star2d3r", 2, 2),
                                               ("j2d9pt", 4, 3), ("star2d4r", 8, 2)])
def test_shuffle_kernels_take_row_neighbours_from_other_lanes(name, coarsen, bt):
    """barriers=shuffle: no shared memory and no barrier; every neighbour off the thread's
    own cells is the neighbouring lane's register of that cell, ``(m + dy) // c`` lanes
    away, and the others are the thread's own registers, as in a coarsened kernel."""
    from an5dpy.cuda.render_model import shuffle_read
    info = benchmark(name)
    plan = make_plan(info, bt, bs=(32 * coarsen,), sl=64, opt="nondiag", coarsen=coarsen,
                     barriers="shuffle")
    text = kernel_text(info, plan)
    assert "__launch_bounds__(32)" in text
    assert "__syncthreads" not in text and "SYNC" not in text
    assert "__shared__" not in text and "an5d_sm[" not in text
    how = Coarsening.of(info, plan)
    r = plan.stream_radius
    calls = [line for line in inner_lines(text) if "_E(" in line]
    assert calls
    for line in calls:
        m = int(line[len(CELL_MACRO)])
        args = re.search(r"\((.*)\)\);$", line.split("(", 1)[1]).group(1)
        # the centre register of the op's input plane, then the row neighbours in order
        # CALCn(out, ins..) and STORE(q, ins..): the centre input is argument 1 + r
        centre = args.split(", ")[1 + r]
        base = centre.rsplit("_x", 1)[0]
        expected = [cell_register(base, m + dy) if 0 <= m + dy < coarsen
                    else shuffle_read(cell_register(base, (m + dy) % coarsen),
                                      (m + dy) // coarsen) for dy in how.rows]
        assert args.endswith(", ".join(expected)), (line, expected)


def test_shuffle_read_spelling():
    from an5dpy.cuda.render_model import shuffle_read
    assert shuffle_read("v", -2) == "__shfl_up_sync(0xffffffffu, v, 2)"
    assert shuffle_read("v", 1) == "__shfl_down_sync(0xffffffffu, v, 1)"


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed")
@pytest.mark.parametrize("name, dtype, bt, coarsen", [
    ("star2d1r", "float", 8, 2), ("j2d9pt", "double", 3, 4), ("gradient2d", "float", 2, 8),
])
def test_nvcc_builds_shuffle_kernels_without_warnings(tmp_path, name, dtype, bt, coarsen):
    info = benchmark(name, dtype)
    plan = make_plan(info, bt, bs=(32 * coarsen,), sl=64, opt="nondiag", coarsen=coarsen,
                     barriers="shuffle")
    rc, log = compile_kernels(generate(info, plan, name), str(tmp_path / "out"), name)
    assert rc == 0, log
    assert "warning" not in log.lower(), log
