"""The kernel whose computing threads load the block's halo (plan.HaloCells.LOADED):
its render model (render_model.HaloLoadedCode), its text (templates/halo_loaded.cu.j2) and
its builds with nvcc; the GPU runs are tests/gpu/test_cuda.py's cases with halo loaded."""

from __future__ import annotations

import os
import re

import pytest

from an5dpy.blocking.plan import make_plan
from an5dpy.cuda.macros import ConstantTable
from an5dpy.cuda.render_model import HaloLoadedCode, HaloRegion
from an5dpy.driver import Options, generate, load, translate

from cuda_support import FORMS, compile_host, compile_kernels
from paths import C_INPUTS


def star(radius: int, dtype: str = "float"):
    return load(os.path.join(C_INPUTS, f"star3d{radius}r.c"), (("SB_TYPE", dtype),))[1]


def loaded(info, bs, coarsen, sl=None):
    return make_plan(info, 1, bs=bs, sl=sl, coarsen=coarsen, halo="loaded")


def test_the_halo_is_the_tiles_rows_above_and_below_then_its_columns_left_and_right():
    info = star(2)
    code = HaloLoadedCode.of(info, loaded(info, (20, 68), 4), (), ConstantTable("k"))
    # tile 20x68 around a 16x64 compute region: 2 rows of 68 above and below (corners
    # included), 2 columns of 16 each side
    assert code.regions == (HaloRegion(0, 136, 0, 0, 68), HaloRegion(136, 136, 18, 0, 68),
                            HaloRegion(272, 32, 2, 0, 2), HaloRegion(304, 32, 2, 66, 2))
    assert code.halo_count == 336 and code.nthreads == 256 and code.per_thread == 2
    assert code.compute == (16, 64) and code.tile == (20, 68) and code.cells == 4


def test_each_cell_takes_its_row_neighbours_from_its_own_registers_where_it_holds_them():
    info = star(2)
    code = HaloLoadedCode.of(info, loaded(info, (20, 68), 4), (), ConstantTable("k"))
    column = ", ".join(f"an5d_col_x1_{k}" for k in range(5))
    smem = "AN5D_SREF(an5d_sm[an5d_buf][0][an5d_t1 + 0][an5d_t2 + 2])"
    # cell 1: y-2 another thread's (shared memory), y-1, y+1 and y+2 its cells 0, 2, 3
    assert code.updates[1] == (f"AN5D_UPDATE({column}, an5d_buf, {smem}, an5d_col_x0_2, "
                               "an5d_col_x2_2, an5d_col_x3_2)")
    # one cell per thread: the update takes no row neighbours
    one = HaloLoadedCode.of(info, loaded(info, (12, 36), 1), (), ConstantTable("k"))
    assert one.updates == ("AN5D_UPDATE(" + ", ".join(f"an5d_col_x0_{k}" for k in range(5))
                           + ", an5d_buf)",)


def test_the_kernel_loads_the_halo_a_step_ahead_and_has_one_barrier_per_plane():
    info = star(3, "double")
    plan = loaded(info, (22, 70), 2, sl=13)
    text = generate(info, plan, "star3d3r").files()["star3d3r_kernel.cu"]
    body = text[text.index("an5d_star3d3r_kernel_d1("):text.index("an5d_star3d3r_launch")]
    assert body.count("__syncthreads()") == 1
    assert "__shared__ double an5d_sm[2][1][22][70];" in body
    assert "#define AN5D_UPDATE(" in body and "#undef AN5D_UPDATE" in body
    assert "#define LOAD(" not in body  # the schedule's macros are the other kernels'
    assert "const int an5d_sl = 13;" in body
    # the launch: 70-6 = 64 threads along x, 16 rows of 2 cells: 8 along y
    assert "const dim3 block(64, 8);" in text
    assert re.search(r"__launch_bounds__\(512\) an5d_star3d3r_kernel_d1", text)


def box(radius: int, dtype: str = "float"):
    return load(os.path.join(C_INPUTS, f"box3d{radius}r.c"), (("SB_TYPE", dtype),))[1]


def test_mode_assoc_adds_each_arriving_plane_into_each_cells_sums():
    # the sums of planes p - r .. p + r (2r + 1 of them a cell), the level ops' statements
    # in a macro, the finished sum stored from plane S0 on, the sums moved one plane down
    info = box(2, "double")
    plan = make_plan(info, 1, bs=(12, 68), sl=9, coarsen=2, opt="assoc", halo="loaded")
    code = generate(info, plan, "box3d2r").model.halo_loaded
    assert code.assoc and code.halo_lag == 2 and code.acc_type == "double"
    assert code.accumulators(1) == tuple(f"an5d_acc_x1_{k}" for k in range(5))
    assert code.rotation(0)[0] == ("an5d_acc_x0_0", "an5d_acc_x0_1") and len(code.rotation(0)) == 4
    assert code.accumulations[1] == ("AN5D_ACCUMULATE(an5d_v_x1, "
                                     + ", ".join(code.accumulators(1)) + ", an5d_buf)")
    assert code.updates[0] == "AN5D_FINISH(an5d_acc_x0_0)"
    assert code.macro_names == ("AN5D_FINISH", "AN5D_ACCUMULATE")
    text = generate(info, plan, "box3d2r").files()["box3d2r_kernel.cu"]
    body = text[text.index("an5d_box3d2r_kernel_d1("):text.index("an5d_box3d2r_launch")]
    assert body.count("__syncthreads()") == 1 and "#define AN5D_UPDATE(" not in body
    # 25 in-plane cells a plane, one of them the cell's own arriving value
    accumulate = body[body.index("#define AN5D_ACCUMULATE"):body.index("} while (0)")]
    assert accumulate.count("AN5D_SREF(an5d_sm[an5d_b][0]") == 24
    assert accumulate.count("= an5d_arriving;") == 1
    # from the first plane that exists, r below the stream block's or the array's first
    assert "const int an5d_p0 = max(an5d_S0 - 2, an5d_first);" in body
    assert "for (int an5d_p = an5d_p0; an5d_p < an5d_S1 + 2; ++an5d_p)" in body
    assert "if (an5d_p >= an5d_S0 + 2) {" in body
    assert "#undef AN5D_FINISH" in body and "#undef AN5D_ACCUMULATE" in body


def box_plan(radius: int, dtype: str):
    # the sums of a double box of radius 2 in two cells spill at 512 threads' bound
    coarsen = 2 if radius == 1 or (radius == 2 and dtype == "float") else 1
    r = 2 * radius
    return make_plan(box(radius, dtype), 1, bs=(8 + r, 64 + r),
                     sl=(None, 7, 64, 5)[radius - 1], coarsen=coarsen, opt="assoc",
                     halo="loaded")


def star_plan(radius: int, dtype: str):
    r = 2 * radius
    return loaded(star(radius, dtype), (16 + r, 32 + r), (1, 2, 4, 4)[radius - 1],
                  sl=(None, 7, 64, 5)[radius - 1])


@pytest.mark.parametrize("family, radius", [(f, r) for f in ("star", "box")
                                             for r in (1, 2, 3, 4)])
@pytest.mark.parametrize("dtype", ["float", "double"])
def test_the_kernels_build_for_sm_90(tmp_path, family, radius, dtype):
    # mode nondiag (the stars) and mode assoc (the boxes), without spills
    from an5dpy.cuda.runtime import nvcc_path
    if nvcc_path() is None:
        pytest.skip("nvcc is not installed")
    plan = (star_plan if family == "star" else box_plan)(radius, dtype)
    info = (star if family == "star" else box)(radius, dtype)
    rc, log = compile_kernels(generate(info, plan, "k"), str(tmp_path / "out"), "k")
    assert rc == 0, log
    assert "spill" not in re.sub(r"0 bytes spill (stores|loads)", "", log)


def test_mode_assoc_builds_for_a_stencil_reading_no_other_plane(tmp_path):
    """flat_box3d reads its own plane only (streaming radius 0): the first arriving plane
    (an5d_p0) is the stream block's first, declared as for any radius."""
    from an5dpy.cuda.runtime import nvcc_path
    info = load(os.path.join(FORMS, "flat_box3d.c"))[1]
    assert info.radius[0] == 0
    plan = make_plan(info, 1, bs=(10, 34), sl=7, coarsen=2, opt="assoc", halo="loaded")
    kernels = generate(info, plan, "k")
    assert "const int an5d_p0 = max(an5d_S0 - 0, an5d_first);" in kernels.files()["k_kernel.cu"]
    if nvcc_path() is None:
        pytest.skip("nvcc is not installed")
    rc, log = compile_kernels(kernels, str(tmp_path / "out"), "k")
    assert rc == 0, log


def test_the_host_program_builds(tmp_path):
    from an5dpy.cuda.runtime import nvcc_path
    if nvcc_path() is None:
        pytest.skip("nvcc is not installed")
    translation = translate(os.path.join(C_INPUTS, "star3d2r.c"),
                            Options(bt=1, bs="36x20", sl="off", coarsen=4, halo="loaded",
                                    defines=(("SB_TYPE", "float"),)))
    assert translation.plan.halo_loaded
    rc, log = compile_host(translation, tmp_path, include_dirs=(C_INPUTS,))
    assert rc == 0, log


def test_the_command_line_refuses_it_where_it_does_not_hold(tmp_path, capsys):
    from an5dpy.cli.main import translate_main
    out = tmp_path / "out"
    out.mkdir()
    code = translate_main([os.path.join(C_INPUTS, "star3d1r.c"), "--dtype", "float", "--bt", "2",
                           "--bs", "32x32",
                           "--sl", "off", "--halo", "loaded", "-o", str(out)])
    assert code == 2 and list(out.iterdir()) == []
    err = capsys.readouterr().err
    assert "--halo loaded" in err and "needs bT 1" in err
    assert translate_main([os.path.join(C_INPUTS, "star3d1r.c"), "--dtype", "float", "--bt", "1",
                          "--bs", "34x18",
                           "--sl", "off", "--halo", "loaded", "-o", str(out), "-q"]) == 0
    assert "halo=loaded" in (out / "star3d1r_kernel.cu").read_text()


def test_a_rotating_program_reads_boundary_cells_from_the_boundary_buffer():
    """The seismic form (leapfrog, read-only arrays): cells outside the interior and the
    streaming-boundary planes from level 0's boundary buffer, level t-1 from src_old at
    the cell, the velocity model at the cell's plane and row; a double-buffered program's
    kernel reads every cell from its source."""
    info = load(os.path.join(FORMS, "seismic3d.c"))[1]
    plan = loaded(info, (14, 36), 2)
    code = HaloLoadedCode.of(info, plan, (), ConstantTable("k"))
    assert code.boundary_source == "an5d_bnd_even" and code.reads_coefficients
    assert code.cell_source(1) == "(an5d_stores_x1 ? an5d_src : an5d_bnd_even)"
    assert code.column_value(0, "an5d_q") == (
        "*(an5d_q < an5d_lo0 || an5d_q > an5d_hi0 ? an5d_be_x0 : an5d_ld_x0)")
    assert code.cell_lines(1) == ("const int an5d_t1 = an5d_t1_x1;",
                                  "const int an5d_c1 = an5d_c1_x1;")
    # level t-1 at the cell, before the shared buffer; the plane of the read-only reads after
    assert ("an5d_src_old[(long long)an5d_z * an5d_plane + an5d_at_x0], an5d_buf, an5d_z, "
            in code.updates[0])
    text = generate(info, plan, "seismic3d").files()["seismic3d_kernel.cu"]
    body = text[text.index("an5d_seismic3d_kernel_d1("):text.index("an5d_seismic3d_launch")]
    assert "? an5d_src : an5d_bnd_even) + (an5d_h_on[an5d_h]" in body
    assert body.count("an5d_be_x0 += an5d_plane;") == 2 and "const int an5d_base = 0;" in body
    plain = HaloLoadedCode.of(star(1), loaded(star(1), (10, 34), 1), (), ConstantTable("k"))
    assert not plain.boundary_source and plain.halo_source == "an5d_src"
    assert plain.column_value(0, "an5d_q") == "*an5d_ld_x0"
