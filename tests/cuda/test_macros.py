"""The macros of the kernels (:mod:`an5dpy.cuda.macros`): the plane predicates as
printed, C semantics of the printed update, the idle-warp branches (on the thread's level
bit, or on its warp's), the constant table of double literals."""

from __future__ import annotations

import os
import re
from dataclasses import replace

from hypothesis import given, strategies as st

from an5dpy.blocking.plan import IdleWarps
from an5dpy.blocking.trace import BlockRanges
from an5dpy.cuda.macros import P_PLANE, plane_macros
from an5dpy.driver import Options, translate

from block_support import blocks, eval_c
from cuda_support import FORMS, bench
from paths import C_INPUTS


def expand(macros, name: str, plane: str) -> str:
    """The text of the one-parameter macro ``name`` applied to ``plane``."""
    macro = next(m for m in macros if m.name == name)
    return macro.text.replace(f"({P_PLANE})", f"({plane})")


@given(rng=blocks(), plane=st.integers(-10, 80))
def test_printed_plane_macros_decide_as_the_block_ranges(rng: BlockRanges, plane: int):
    """AN5D_STORES, AN5D_BOUNDARY_PLANE, AN5D_EXISTS and G_LOAD's condition, as the
    kernels print them, evaluated for a block, agree with what resolve_guarded asks."""
    macros = plane_macros("float", (rng.below, rng.above))
    assert eval_c(expand(macros, "AN5D_STORES", str(plane)), rng, plane) == rng.stores(plane)
    assert eval_c(expand(macros, "AN5D_BOUNDARY_PLANE", str(plane)), rng, plane) == \
        rng.is_boundary(plane)
    assert eval_c(expand(macros, "AN5D_EXISTS", str(plane)), rng, plane) == rng.exists(plane)
    g_load = next(m for m in macros if m.name == "G_LOAD").text
    condition = re.match(r"do \{ if \((.*?)\) \{", g_load).group(1)
    assert eval_c(condition.replace(f"({P_PLANE})", f"({plane})"), rng, plane) == rng.loads(plane)


def test_expressions_keep_c_semantics():
    gradient = bench("gradient2d").outputs["gradient2d_kernel.cu"]
    assert "sqrtf(" in gradient
    mixed = translate(os.path.join(FORMS, "mixed_precision.c"), Options(bt=2, bs="32"))
    text = mixed.outputs["mixed_precision_kernel.cu"]
    assert "((double)(" in text  # a float read in a double operation is converted explicitly
    assert "an5d_sref(" in text or "AN5D_SREF" in text


def test_levels_with_idle_warps():
    from an5dpy.cuda.macros import levels_with_idle_warps
    from an5dpy.driver import load
    from an5dpy.blocking.plan import make_plan

    def plan(name, bt, bs):
        _, info = load(os.path.join(C_INPUTS, name + ".c"), (("SB_TYPE", "float"),))
        return make_plan(info, bt=bt, bs=bs)

    # 1D blocks lose only a few lanes of the outer warps until bT*r reaches a warp
    assert levels_with_idle_warps(plan("j2d5pt", 6, (512,)), 6) == frozenset()
    assert levels_with_idle_warps(plan("star2d4r", 8, (512,)), 8) == {8}
    # 3D blocks lose whole rows: with 32 threads per row every level has idle warps
    assert levels_with_idle_warps(plan("star3d1r", 4, (32, 32)), 4) == {1, 2, 3, 4}
    # 16-thread rows pair up in a warp: both rows must be outside the window
    assert levels_with_idle_warps(plan("star3d1r", 2, (16, 16)), 2) == {2}
    assert levels_with_idle_warps(plan("box3d4r", 1, (16, 64)), 1) == {1}
    # a plan computing at idle warps branches at no level
    computing = replace(plan("star3d1r", 4, (32, 32)), idle=IdleWarps.COMPUTE)
    assert levels_with_idle_warps(computing, 4) == frozenset()


def test_idle_levels_branch_around_the_evaluation():
    from an5dpy.cuda.render import render_kernel
    from an5dpy.cuda.render_model import render_model
    from an5dpy.driver import load
    from an5dpy.blocking.plan import make_plan
    from an5dpy.blocking.build import build_schedule
    _, info = load(os.path.join(C_INPUTS, "star3d1r.c"), (("SB_TYPE", "float"),))

    def macros(bs, idle="skip"):
        plan = make_plan(info, bt=2, bs=bs, idle=idle)
        text = render_kernel(render_model(info, plan, build_schedule(plan), "s"))
        kernel = text.split("_kernel_d2(")[1]
        return {m.group(1): m.group(2) for m in re.finditer(
            r"#define (CALC1|STORE)\(.*?\) do \{ \\\n(.*?)\} while \(0\)", kernel, re.S)}

    # 16x16: no warp is idle at level 1 (every thread evaluates; only boundary cells
    # select), some are at level 2 (branch)
    small = macros((16, 16))
    assert "an5d_out = an5d_bnd ? an5d_p_bo[AN5D_PLANE(an5d_q)] : an5d_v;" in small["CALC1"]
    assert "an5d_act" not in small["CALC1"]
    assert "if (an5d_act & 4u) an5d_p_st[AN5D_PLANE(an5d_q)] = (float)(" in small["STORE"]
    assert "an5d_v" not in small["STORE"]
    # 32x32: halo rows are whole warps at both levels
    large = macros((32, 32))
    assert "if (an5d_act & 2u) an5d_out = (float)(" in large["CALC1"]
    assert "an5d_v" not in large["CALC1"]
    # computing at idle warps: no level op branches, the store alone keeps its guard
    computed = macros((32, 32), idle="compute")
    assert computed["CALC1"] == small["CALC1"]
    assert "an5d_act" not in computed["CALC1"]
    assert "const float an5d_v = (float)(" in computed["STORE"]
    assert "if (an5d_act & 4u) an5d_p_st[AN5D_PLANE(an5d_q)] = an5d_v;" in computed["STORE"]


def test_assoc_sums_branch_on_the_warps_level_bits():
    """Mode assoc's levels with idle warps branch on the OR of the level bits over the warp
    (warp_computes), declared once per cell; the other modes keep the thread's bit."""
    from an5dpy.cuda.macros import levels_with_idle_warps, warp_branch_levels
    from an5dpy.cuda.render import render_kernel
    from an5dpy.cuda.render_model import render_model
    from an5dpy.driver import load
    from an5dpy.blocking.plan import make_plan
    from an5dpy.blocking.build import build_schedule
    _, info = load(os.path.join(C_INPUTS, "box3d1r.c"), (("SB_TYPE", "float"),))

    def kernel(bs, opt, coarsen=1):
        plan = make_plan(info, bt=2, bs=bs, opt=opt, coarsen=coarsen)
        return plan, render_kernel(render_model(info, plan, build_schedule(plan), "s"))

    plan, text = kernel((32, 32), "assoc")
    assert warp_branch_levels(plan, 2) == levels_with_idle_warps(plan, 2) == {1, 2}
    d2 = text.split("_kernel_d2(")[1]
    assert "const unsigned an5d_wact = an5d_warp_or(an5d_act);" in d2
    assert "if (an5d_wact & 2u) {" in d2 and "if (an5d_wact & 4u) {" in d2
    assert "if (an5d_act & 4u) {" not in d2
    # 1024 threads: whole warps, a constant lane mask
    assert "const unsigned mask = 0xffffffffu;" in text and "const unsigned lanes" not in text
    # 240 threads: the last warp has 16 lanes, the mask counts them
    _, short = kernel((12, 20), "assoc")
    assert "const unsigned lanes = min(240u - first, 32u);" in short
    # a coarsened kernel's cell macros alias each cell's warp bits
    _, coarse = kernel((32, 32), "assoc", coarsen=2)
    assert "const unsigned an5d_wact_x1 = an5d_warp_or(an5d_act_x1);" in coarse
    assert "[[maybe_unused]] const unsigned an5d_wact = an5d_wact_x1;" in coarse
    # mode none selects a value: it keeps the thread's bit, and no kernel needs the OR
    plan, text = kernel((32, 32), "none")
    assert levels_with_idle_warps(plan, 2) and not warp_branch_levels(plan, 2)
    assert "an5d_wact" not in text and "an5d_warp_or" not in text


def test_double_literals_live_in_constant_memory():
    # j2d9pt: float literals that the double build converts, (double)(1.04f) ... / 11.7f
    t = bench("j2d9pt", "double")
    text = t.outputs["j2d9pt_kernel.cu"]
    name, values = t.model.constants
    assert name == "an5d_j2d9pt_k"
    # and last the reciprocal of the divisor 11.7f, rounded to nearest (ConstantTable.divide)
    assert values == (*(f"(double)({v})" for v in (
        "1.04f", "1.105f", "1.17f", "1.235f", "1.3f", "1.365f", "1.43f", "1.495f", "1.56f",
        "11.7f")), "0.08547008686342951")
    assert (f"static __constant__ double an5d_j2d9pt_k[11] = {{ {', '.join(values)} }};"
            in text)
    blocked = text.split("an5d_j2d9pt_kernel_d1(", 1)[1].split("an5d_j2d9pt_naive", 1)[0]
    assert "(double)(1.04f)" not in blocked and "an5d_j2d9pt_k[9]" in blocked
    # each literal once however many kernels and levels use it; float builds keep them inline
    assert text.count("(double)(1.04f)") == 1 + text.split("an5d_j2d9pt_naive", 1)[1].count(
        "(double)(1.04f)")
    single = bench("j2d9pt", "float")
    assert single.model.constants[1] == ()
    assert "__constant__" not in single.outputs["j2d9pt_kernel.cu"]


def test_constant_table_spells_double_literals_only():
    from an5dpy.cexpr import c_expr
    from an5dpy.cuda.macros import ConstantTable
    from an5dpy.ir import Binary, Cast, Const
    table = ConstantTable("k")
    half = Const("double", value=0.5, text="0.5")
    tenth = Cast("double", operand=Cast("float", operand=Const("float", value=0.1,
                                                                   text="0.1f")))
    expr = Binary("double", op="+", lhs=Binary("double", op="*", lhs=half, rhs=half),
                  rhs=Binary("double", op="*", lhs=tenth, rhs=Cast(
                      "double", operand=Const("float", value=0.25, text="0.25f"))))
    text = c_expr(expr, lambda n: "x", literal=table.literal)
    # the inner float cast is not a literal: it stays, inside the outer cast
    assert text == "((k[0] * k[0]) + (((double)(((float)(0.1f)))) * k[1]))"
    assert table.values == ("0.5", "(double)(0.25f)")
    assert table.literal(Const("float", value=1.0, text="1.0f")) is None


def test_continued_breaks_lines_between_tokens_only():
    from an5dpy.cuda.macros import continued
    text = "((a * 'x y') + (b * \"s t u\")) + " + " + ".join(f"v{k}" for k in range(60))
    wrapped = continued(text, width=40)
    lines = wrapped.split("\n")
    assert lines[0] == "\\" and all(line.endswith(" \\") for line in lines[1:-1])
    assert all(len(line) <= 40 for line in lines)
    # splicing the continuations gives the text back, up to the spaces at the breaks
    assert " ".join(line.rstrip("\\").strip() for line in lines[1:]) == text
    assert "'x y'" in wrapped and '"s t u"' in wrapped  # literals are never broken


def test_the_update_is_printed_once_per_kernel():
    t = bench("j2d9pt", "double", coarsen=1)  # a coarsened kernel's update takes rows
    text = t.outputs["j2d9pt_kernel.cu"]
    blocked = text.split("/* ---- naive baseline", 1)[0]
    kernels = blocked.split("__global__")[1:]
    assert len(kernels) == len(t.schedule.kernels)
    for kernel, ks in zip(kernels, t.schedule.kernels):
        call = "AN5D_UPDATE(an5d_i0, an5d_i1, an5d_i2, an5d_i3, an5d_i4, an5d_b)"
        assert kernel.count(f"#define {call} \\\n") == 1
        # every level evaluates it: CALC1..CALCd-1 and STORE
        assert kernel.count(f"(double)({call})") == ks.degree
        assert "#undef AN5D_UPDATE" in kernel
    assert max(len(line) for line in blocked.splitlines()) < 460  # the constant table
    assert "AN5D_UPDATE" not in bench("box2d1r", bt=3, bs="64", opt="assoc").outputs[
        "box2d1r_kernel.cu"]


def calls_program(calls: list[str], dtype: str = "double") -> str:
    """A 2D star whose update adds ``calls`` (C texts over ``@``, the cell's value)."""
    terms = " + ".join(["0.2 * A[t%2][i][j]", *(f"0.01 * {c}" for c in calls),
                        "0.1 * (A[t%2][i-1][j] + A[t%2][i+1][j] + A[t%2][i][j-1] + "
                        "A[t%2][i][j+1])"]).replace("@", "A[t%2][i][j]")
    return f"""#include <math.h>
void k(int n, int T, {dtype} A[2][n][n])
{{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = {terms};
#pragma endscop
}}
"""


def kernel_text(tmp_path, source: str, **plan) -> str:
    path = tmp_path / "k.c"
    path.write_text(source)
    translation = translate(str(path), Options(bt=2, bs="64", sl="32", **plan))
    return translation.outputs["k_kernel.cu"]


def test_an_update_of_many_inexact_calls_calls_them_out_of_line(tmp_path):
    """OUTLINED_CALLS_FROM calls of inexact library functions: each function is one
    __noinline__ function of the kernel file, every call of it in the update goes through
    it; exact functions (fabs, fmin, sqrt) stay inline and do not count."""
    from an5dpy.cuda.macros import OUTLINED_CALLS_FROM
    inexact = ["exp(-fabs(@))", "sin(@)", "cos(@)", "atan(@)", "pow(fabs(@), 0.75)",
               "log(1.0 + fabs(@))", "cbrt(@)", "tanh(@)", "erf(@)", "exp2(-fabs(@))"]
    exact = ["sqrt(fabs(@))", "fmin(@, 0.5)", "fmax(@, -0.5)", "floor(@)"]
    below = kernel_text(tmp_path, calls_program(inexact[:OUTLINED_CALLS_FROM - 1] + exact))
    assert "an5d_call_" not in below
    text = kernel_text(tmp_path, calls_program(inexact[:OUTLINED_CALLS_FROM] + exact))
    outlined = re.findall(r"static __device__ __noinline__ double (an5d_call_(\w+))\(", text)
    assert sorted(func for _, func in outlined) == \
        sorted(c.split("(")[0] for c in inexact[:OUTLINED_CALLS_FROM])
    assert "static __device__ __noinline__ double an5d_call_pow(double an5d_a0, " \
           "double an5d_a1) { return pow(an5d_a0, an5d_a1); }" in text
    # the blocked kernels (the naive one, a single expansion, keeps its calls inline)
    blocked = "\n".join(line for line in text[:text.index("_naive(")].splitlines()
                         if "__noinline__" not in line)
    for name, func in outlined:  # no inline call of it is left
        assert not re.search(rf"(?<!\w){func}\(", blocked), func
    for func in ("sqrt", "fmin", "fmax", "floor", "fabs"):
        assert f"an5d_call_{func}" not in text
        assert re.search(rf"(?<!\w){func}\(", blocked), func


def test_outlined_float_functions_keep_their_float_prototypes(tmp_path):
    calls = ["expf(-fabsf(@))", "sinf(@)", "cosf(@)", "atanf(@)", "powf(fabsf(@), 0.75f)",
             "logf(1.0f + fabsf(@))", "cbrtf(@)", "tanhf(@)", "ldexpf(@, 2)"]
    text = kernel_text(tmp_path, calls_program(calls, "float"))
    assert "static __device__ __noinline__ float an5d_call_powf(float an5d_a0, " \
           "float an5d_a1) { return powf(an5d_a0, an5d_a1); }" in text
    assert "an5d_call_ldexpf" not in text  # exact: inline
