"""scripts/sass_counts.py: its reading of SASS, its fit over bT and, where nvcc and
cuobjdump are installed, its counts of a real kernel against the model's."""

from __future__ import annotations

import shutil

import pytest
from script_support import load_script

sass = load_script("sass_counts")

LISTING = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   LDG.E R2, desc[UR4][R4.64] ;
        /*0020*/              @!P0 LDS R3, [R6+0x4] ;
        /*0030*/                   FFMA R3, R3, R2, R3 ;
        /*0040*/                   STS [R6], R3 ;
        /*0050*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0060*/               @P1 BRA 0x10 ;
        /*0070*/                   DADD R8, R8, R10 ;
        /*0080*/                   BRA 0x90 ;
        /*0090*/                   EXIT ;
"""


def test_instructions_drop_predicates_and_modifiers():
    code = sass.instructions(LISTING)
    assert [op for _, op, _ in code] == ["MOV", "LDG", "LDS", "FFMA", "STS", "BAR", "BRA",
                                         "DADD", "BRA", "EXIT"]
    assert code[6][0] == 0x60


def test_a_loop_is_a_backward_branch_and_what_it_jumps_over():
    (loop,) = sass.loops(LISTING)  # the forward branch at 0x80 is no loop
    assert (loop.start, loop.length) == (1, 6)
    assert [loop.count(k) for k in sass.KINDS] == [1, 1, 1, 1, 1]


def fake_count(bt, per_cell_level, unroll=3):
    cells = unroll * bt
    loop = sass.Loop(0, round(per_cell_level * cells),
                     tuple((k, cells if k == "barriers" else 0) for k in sass.KINDS))
    case = sass.Case.parse(f"star2d1r float bt={bt} bs=256 sl=256")
    return sass.Count(case, "plan", unroll, cells, 32, False, (loop,))


def test_cases_differing_in_bt_alone_fit_a_cost_per_level_and_one_per_step():
    counts = [fake_count(bt, 9 + 12 / bt) for bt in (2, 4, 6, 12)]
    counts.append(fake_count(3, 20))  # regs differ: a group of its own, of one bT
    counts[-1] = sass.Count(sass.Case.parse("star2d1r float bt=3 bs=256 sl=256 regs=64"),
                            "plan", 3, 9, 64, False, counts[-1].loops)
    ((case, bts, a, b),) = sass.fit_levels(counts)
    assert bts == (2, 4, 6, 12) and abs(a - 9) < 1e-9 and abs(b - 12) < 1e-9
    assert "| star2d1r float bs=256 sl=256 regs=none (2, 4, 6, 12) | 9.00 | 12.00 |" in (
        sass.table(counts))


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("cuobjdump")),
                    reason="needs nvcc and cuobjdump")
def test_a_kernels_inner_loop_holds_the_work_the_model_counts(tmp_path):
    """star2d1r's inner loop per cell and level op: the model's arithmetic, shared reads
    and store, and one barrier (a level op each)."""
    import os

    from an5dpy.driver import load
    from an5dpy.perf.bench import paper_env
    from an5dpy.perf.model import Model
    from paths import REPO
    from variants_compare import settings_plan
    count = sass.count(sass.Case.parse("star2d1r float bt=2 bs=64 sl=64"), str(tmp_path))
    inner = count.inner
    program, info = load(os.path.join(REPO, "c_inputs", "star2d1r.c"), (("SB_TYPE", "float"),))
    model = Model(info, "H200", paper_env(program, info))
    work = model.work(settings_plan(info, {"bt": "2", "bs": "64", "sl": "64"}))[0]
    assert count.per_cell_level(inner, "FP arithmetic") == work.mix.instructions
    assert count.per_cell_level(inner, "shared loads") == work.smem_reads
    assert count.per_cell_level(inner, "shared stores") == 1
    assert count.per_cell_level(inner, "barriers") == 1
    assert inner.length > sum(inner.count(k) for k in sass.KINDS)
