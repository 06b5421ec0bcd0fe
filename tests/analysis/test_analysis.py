"""Tests of an5dpy.analysis.stencil: hand-built IR (every rule and every rejection), the 21
benchmark programs of Table 3 and tests/data/forms/*.c through the frontend, and
hypothesis-generated stencils (built directly and rendered to C)."""

from __future__ import annotations

import dataclasses
import glob
import itertools
import json
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from an5dpy import ir
from an5dpy.analysis import analyze
from an5dpy.analysis.stencil import classify_shape, format_access, op_mix
from an5dpy.errors import UnsupportedInput
from an5dpy.ir import (
    Access,
    Affine,
    Binary,
    Call,
    Cast,
    Const,
    Param,
    Read,
    Scalar,
    StencilInfo,
    Unary,
    walk,
)
from ir_builders import (
    StencilSpec,
    access,
    binary,
    box_offsets,
    build_program,
    const,
    coord,
    loop,
    make_program,
    read_at,
    star_offsets,
)
from stencil_render import render_c

from paths import REPO as ROOT, TESTS_DIR as HERE
C_INPUTS = os.path.join(ROOT, "c_inputs")

n = Affine.var("n")
t = Affine.var("t")
i = Affine.var("i")
j = Affine.var("j")
k = Affine.var("k")


# =========================================================================== helpers


def target2d(shift=1, idx=(i, j), array="A", ctype="float"):
    return access(array, t + shift, idx, ctype, coord(20, 3))


def rd(*off, shift=0, line=None, ctype="float"):
    """A read at an offset (builder coordinates: line 100+ unless given)."""
    return read_at(off, ctype, shift=shift, at=coord(line or 99, 7))


def loops2d(lo=1, hi=2):
    return [loop("i", lo, n - hi, 11), loop("j", lo, n - hi, 12)]


def prog2d(value, target=None, loops=None, **kw):
    return make_program(target or target2d(), value, loops or loops2d(), **kw)


def weighted(offsets, dtype="float"):
    """c0*A[o0] + c1*A[o1] + ... (left associated), coefficients 0.1, 0.2, ..."""
    terms = [binary("*", const(0.1 * (q + 1), dtype), read_at(o, dtype, at=coord(100 + q, 7)))
             for q, o in enumerate(offsets)]
    e = terms[0]
    for x in terms[1:]:
        e = binary("+", e, x)
    return e


def rejects(program, *fragments, at=None):
    with pytest.raises(UnsupportedInput) as exc:
        analyze(program)
    msg = exc.value.message
    for f in fragments:
        assert f in msg, msg
    if at is not None:
        assert exc.value.coord == at, (exc.value.coord, msg)
    return exc.value


def has_isl(value) -> bool:
    """True if any isl object hides anywhere inside ``value``."""
    stack = [value]
    seen = set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if type(v).__module__.startswith("islpy"):
            return True
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            stack.extend(getattr(v, f.name) for f in dataclasses.fields(v))
        elif isinstance(v, (tuple, list, set, frozenset)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (str, int, float, bool, type(None))):
            pass
        else:
            return True  # anything unexpected counts as a leak
    return False


# --- independent definitions (deliberately not the analysis module's code)


def expected_shape(offsets, radius):
    offs = set(offsets)
    if all(sum(c != 0 for c in o) <= 1 for o in offs):
        return "star"
    full = set(itertools.product(*[range(-r, r + 1) for r in radius]))
    return "box" if offs == full else "general"


def expected_radius(offsets, ndim):
    return tuple(max([0] + [abs(o[d]) for o in offsets]) for d in range(ndim))


# =========================================================================== basic rules


def test_star2d1r_everything():
    offs = star_offsets(2, 1)
    info = analyze(build_program(StencilSpec(offs)))
    assert info.array == "A" and info.dtype == "float"
    assert info.ndim == 2 and info.radius == (1, 1)
    assert info.offsets == offs
    assert [(d.reach_lo, d.reach_hi) for d in info.dims] == [(1, 1), (1, 1)]
    assert [d.var for d in info.dims] == ["i", "j"]
    assert info.dims[0].lower == Affine.of(1) and info.dims[0].upper == n - 2
    assert info.dims[1].extent == n
    assert info.time == ir.TimeInfo("t", Affine.of(0), Affine.var("T") - 1, 0, 1)
    assert info.shape == "star" and info.diagonal_free and info.associative
    assert info.opt == "nondiag" and info.flops_per_cell == 9
    assert not any(isinstance(e, Access) for e in walk(info.update))
    reads = [e for e in walk(info.update) if isinstance(e, Read)]
    assert [r.offset for r in reads] == list(offs)  # source order of the spec
    assert all(r.ctype == "float" and r.array == "A" for r in reads)
    assert [r.coord.line for r in reads] == [100 + q for q in range(5)]
    assert info.update.ctype == "float"
    assert not has_isl(info)
    json.dumps(info.to_json())


def test_update_keeps_conversion_and_coords():
    # double coefficients in a float program: the sum is double, converted back to float
    offs = star_offsets(2, 1)
    prog = build_program(StencilSpec(offs))
    info = analyze(prog)
    value = prog.statements[0].value
    # structure preserved: same node kinds in the same order
    kinds_in = [type(e).__name__ for e in walk(value)]
    kinds_out = [type(e).__name__ for e in walk(info.update)]
    assert kinds_out == [x.replace("Access", "Read") for x in kinds_in]

    dbl = [binary("*", Const("double", None, 0.5, "0.5"), rd(*o, line=100 + q))
           for q, o in enumerate(offs)]
    e = dbl[0]
    for x in dbl[1:]:
        e = binary("+", e, x)
    info = analyze(prog2d(e))
    assert isinstance(info.update, Cast) and info.update.ctype == "float"
    assert info.update.operand.ctype == "double"
    assert info.assoc.sum_type == "double"
    assert info.flops_per_cell == 9


def test_duplicate_reads_give_unique_sorted_offsets():
    e = binary("+", binary("+", rd(0, 1), rd(0, -1)), binary("*", rd(0, 1), rd(-1, 0)))
    info = analyze(prog2d(e))
    assert info.offsets == ((-1, 0), (0, -1), (0, 1))
    assert [(d.reach_lo, d.reach_hi) for d in info.dims] == [(1, 0), (1, 1)]
    assert info.radius == (1, 1)


def test_asymmetric_reach():
    e = weighted([(0, 0), (-2, 0), (0, 1), (0, 3)])
    info = analyze(prog2d(e, loops=[loop("i", 2, n - 1), loop("j", 0, n - 4)]))
    assert [(d.reach_lo, d.reach_hi) for d in info.dims] == [(2, 0), (0, 3)]
    assert info.radius == (2, 3)
    assert info.shape == "star"


@pytest.mark.parametrize("offsets,shape", [
    (((0, 0),), "star"),                                   # one point
    (((-1, 0), (0, 0), (1, 0)), "star"),                   # a line
    (((0, 1),), "star"),                                   # one shifted point
    (tuple(box_offsets(2, 1)), "box"),
    (tuple(box_offsets(2, 2)), "box"),
    (tuple(o for o in box_offsets(2, 2) if o != (2, 2)), "general"),
    (star_offsets(2, 1) + ((1, 1),), "general"),
    (((0, 0), (1, 1)), "general"),
    (tuple(itertools.product(range(0, 2), range(0, 2))), "general"),   # asymmetric box
    (tuple(itertools.product(range(-1, 2), range(-2, 3))), "box"),     # radius (1, 2)
    (tuple(box_offsets(3, 1)), "box"),
    (star_offsets(3, 2), "star"),
])
def test_shape(offsets, shape):
    nd = len(offsets[0])
    info = analyze(build_program(StencilSpec(tuple(offsets))))
    assert info.shape == shape
    assert classify_shape(offsets, expected_radius(offsets, nd)) == shape


@pytest.mark.parametrize("offsets,diag_free", [
    (star_offsets(2, 3), True),
    (box_offsets(2, 1), False),
    (((0, 0, 0), (0, 1, 1), (0, -1, 1), (1, 0, 0), (-2, 0, 0)), True),   # in-plane diagonals only
    (((0, 0, 0), (1, 0, 1)), False),
    (((1, 1),), False),
    (((0, 1), (0, -1), (0, 0)), True),
])
def test_diagonal_free(offsets, diag_free):
    info = analyze(build_program(StencilSpec(tuple(offsets))))
    assert info.diagonal_free == diag_free
    if diag_free:
        assert info.opt == "nondiag"
    else:
        assert info.opt == ("assoc" if info.associative else "none")


def test_general_in_plane_diagonals_still_nondiag():
    offs = ((0, 0, 0), (0, 1, 1), (0, -1, -1), (1, 0, 0), (-1, 0, 0))
    info = analyze(build_program(StencilSpec(offs)))
    assert info.shape == "general" and info.diagonal_free and info.opt == "nondiag"


# =========================================================================== FLOPs (Table 3)


def _gradient2d(dtype="float"):
    c = rd(0, 0)

    def sq(o):
        return binary("*", binary("-", rd(0, 0), rd(*o)), binary("-", rd(0, 0), rd(*o)))

    s = binary("+", const(0.0001, "float"), sq((-1, 0)))
    for o in ((1, 0), (0, -1), (0, 1)):
        s = binary("+", s, sq(o))
    call = Call("float", None, "sqrtf", (s,))
    return binary("+", c, binary("/", const(1.0, "float"), call))


@pytest.mark.parametrize("x", [1, 2, 3, 4])
@pytest.mark.parametrize("nd", [2, 3])
def test_table3_synthetic_flops(nd, x):
    star = analyze(build_program(StencilSpec(star_offsets(nd, x))))
    assert star.flops_per_cell == (8 * x + 1 if nd == 2 else 12 * x + 1)
    assert star.shape == "star" and star.opt == "nondiag" and star.radius == (x,) * nd
    if nd == 3 and x > 2:
        return  # box3d3r/4r: covered by the c_inputs test (and below for 4r)
    box = analyze(build_program(StencilSpec(box_offsets(nd, x))))
    assert box.flops_per_cell == 2 * (2 * x + 1) ** nd - 1
    assert box.shape == "box" and box.opt == "assoc" and box.associative


def test_box3d4r_flops_and_assoc():
    info = analyze(build_program(StencilSpec(box_offsets(3, 4))))
    assert info.flops_per_cell == 1457
    assert info.shape == "box" and info.opt == "assoc"
    assert info.assoc.planes() == tuple(range(-4, 5))
    assert len(info.assoc.terms) == 729


@pytest.mark.parametrize("name,offsets,flops,shape,opt", [
    ("j2d5pt", star_offsets(2, 1), 10, "star", "nondiag"),
    ("j2d9pt", star_offsets(2, 2), 18, "star", "nondiag"),
    ("j2d9pt-gol", box_offsets(2, 1), 18, "box", "assoc"),
    ("j3d27pt", box_offsets(3, 1), 54, "box", "assoc"),
])
def test_table3_j_stencils(name, offsets, flops, shape, opt):
    info = analyze(build_program(StencilSpec(tuple(offsets), divisor=5.0)))
    assert info.flops_per_cell == flops
    assert info.shape == shape and info.opt == opt and info.associative
    assert info.assoc.post[0] == "/" and isinstance(info.assoc.post[1], Const)


def test_gradient2d():
    info = analyze(prog2d(_gradient2d()))
    assert info.flops_per_cell == 19
    assert info.shape == "star" and info.radius == (1, 1)
    assert info.diagonal_free and not info.associative and info.assoc is None
    assert info.opt == "nondiag"
    assert info.offsets == ((-1, 0), (0, -1), (0, 0), (0, 1), (1, 0))


def test_flop_rule_details():
    # unary minus, casts and integer arithmetic are free; calls count 1
    int_expr = Binary("int", None, "*", Const("int", None, 2, "2"), Const("int", None, 3, "3"))
    e = binary("*", Cast("float", None, int_expr, False), Unary("float", None, "-", rd(0, 0)))
    e = binary("+", e, Call("float", None, "fabsf", (rd(1, 0),)))
    info = analyze(prog2d(e))
    assert info.flops_per_cell == 3  # *, +, fabsf
    mix = op_mix(info)
    assert mix == {"add": 1, "mul": 1, "div": 0, "double_div": 0, "fixed_double_div": 0,
                   "calls": {"fabsf": 1}, "fma": 1, "flops": 3}


def test_op_mix_fma_rule():
    # a*b + c*d: one add with two mul operands -> one FMA (fma(a, b, c*d))
    e = binary("+", binary("*", rd(0, 0), rd(1, 0)), binary("*", rd(0, 1), rd(0, -1)))
    assert op_mix(analyze(prog2d(e)))["fma"] == 1
    # c0*x0 + c1*x1 + c2*x2 (left assoc): 2 adds, each with a mul operand -> 2 FMAs
    mix = op_mix(analyze(prog2d(weighted([(0, 0), (1, 0), (-1, 0)]))))
    assert (mix["add"], mix["mul"], mix["fma"]) == (2, 3, 2)
    # a - b*c contracts too
    assert op_mix(analyze(prog2d(binary("-", rd(0, 0), binary("*", rd(1, 0), rd(-1, 0))))))[
        "fma"] == 1
    # mul behind a conversion (float product added in double) does not contract
    prod = binary("*", rd(0, 0), rd(1, 0))
    e = binary("+", Const("double", None, 1.0, "1.0"), prod)   # converts prod to double
    assert isinstance(e.rhs, Cast)
    mix = op_mix(analyze(prog2d(e)))
    assert mix["fma"] == 0 and mix["add"] == 1 and mix["mul"] == 1
    # star2d1r: 5 muls, 4 adds -> 4 FMAs; division is counted apart
    mix = op_mix(analyze(build_program(StencilSpec(star_offsets(2, 1), divisor=3.0))))
    assert mix == {"add": 4, "mul": 5, "div": 1, "double_div": 0, "fixed_double_div": 0,
                   "calls": {}, "fma": 4, "flops": 10}
    # op_mix accepts a bare expression too
    assert op_mix(prod)["mul"] == 1


def test_op_mix_counts_double_divisions():
    # a float cell divided by a double constant divides in double (no fast-math reciprocal)
    e = binary("/", rd(0, 0), Const("double", None, 6.5, "6.5"))
    assert (op_mix(e)["div"], op_mix(e)["double_div"]) == (1, 1)
    assert op_mix(e)["fixed_double_div"] == 1  # the divisor reads no array
    e = binary("/", rd(0, 0), Const("float", None, 6.5, "6.5f"))
    assert (op_mix(e)["div"], op_mix(e)["double_div"]) == (1, 0)
    # by a cell: a double division whose divisor changes from cell to cell
    e = binary("/", Const("double", None, 1.0, "1.0"), rd(1, 0))
    assert (op_mix(e)["double_div"], op_mix(e)["fixed_double_div"]) == (1, 0)


# =========================================================================== associativity


def test_assoc_terms_in_source_order_and_post():
    offs = [(1, 0), (0, 0), (-1, 0), (0, 1)]
    info = analyze(build_program(StencilSpec(tuple(offs), divisor=7.0)))
    af = info.assoc
    assert [dz for dz, _ in af.terms] == [1, 0, -1, 0]
    assert af.planes() == (-1, 0, 1)
    assert af.post[0] == "/" and af.post[1].value == 7.0
    assert af.sum_type == "float"
    for (dz, term), o in zip(af.terms, offs):
        reads = [e for e in walk(term) if isinstance(e, Read)]
        assert [r.offset for r in reads] == [o]


def test_assoc_post_multiply_either_side():
    s = weighted([(0, 0), (1, 0), (-1, 0)])
    left = analyze(prog2d(binary("*", const(0.5), s))).assoc
    right = analyze(prog2d(binary("*", s, const(0.5)))).assoc
    for af in (left, right):
        assert af.post[0] == "*" and af.post[1].value == 0.5
        assert [dz for dz, _ in af.terms] == [0, 1, -1]
    # a scalar parameter times a cast is constant as well
    cst = binary("*", Scalar("float", None, "alpha"), Cast("float", None, Const("int", None, 2, "2")))
    af = analyze(prog2d(binary("*", cst, s),
                        params=[Param("n", "int"), Param("T", "int"), Param("alpha", "float")])
                 ).assoc
    assert af.post == ("*", cst)


def test_assoc_constant_numerator_is_not_post():
    s = weighted([(0, 0), (1, 0)])
    info = analyze(prog2d(binary("/", const(1.0), s)))
    assert not info.associative and info.assoc is None
    assert info.opt == "nondiag"   # still diagonal-free
    # a box with c / sum: neither nondiag nor assoc
    s = weighted(box_offsets(2, 1))
    info = analyze(prog2d(binary("/", const(1.0), s)))
    assert info.opt == "none" and not info.diagonal_free


def test_assoc_subtraction_and_negation():
    # A[-1] - (A[0] + 2*A[1]) - -A[0,1]
    e = binary("-", binary("-", rd(-1, 0), binary("+", rd(0, 0), binary("*", const(2.0), rd(1, 0)))),
               Unary("float", None, "-", rd(0, 1)))
    af = analyze(prog2d(e)).assoc
    assert [dz for dz, _ in af.terms] == [-1, 0, 1, 0]
    t0, t1, t2, t3 = (term for _, term in af.terms)
    assert isinstance(t0, Read)
    assert isinstance(t1, Unary) and t1.op == "-" and isinstance(t1.operand, Read)
    assert t1.ctype == "float"
    assert isinstance(t2, Unary) and isinstance(t2.operand, Binary) and t2.operand.op == "*"
    assert isinstance(t3, Read) and t3.offset == (0, 1)   # double negation cancels
    assert af.post is None


def test_assoc_cast_stops_flattening():
    inner = binary("+", rd(1, 0), rd(-1, 0))             # float sum over two planes
    e = binary("+", Const("double", None, 1.0, "1.0"), inner)   # cast to double around it
    info = analyze(prog2d(e))
    assert not info.associative
    # but a cast around a single-plane subsum is just a term
    inner = binary("+", rd(0, 1), rd(0, -1))
    e = binary("+", binary("*", Const("double", None, 2.0, "2.0"), rd(1, 0)), inner)
    af = analyze(prog2d(e)).assoc
    assert [dz for dz, _ in af.terms] == [1, 0] and af.sum_type == "double"
    assert isinstance(af.terms[1][1], Cast)


def test_assoc_readless_term_joins_plane_zero():
    e = binary("+", binary("+", rd(1, 0), const(3.0)), rd(-1, 0))
    af = analyze(prog2d(e)).assoc
    assert [dz for dz, _ in af.terms] == [1, 0, -1]


def test_assoc_multi_plane_product_term():
    e = binary("+", rd(0, 0), binary("*", rd(1, 0), rd(-1, 0)))
    info = analyze(prog2d(e))
    assert not info.associative and info.opt == "nondiag"
    # same-plane product is fine
    e = binary("+", rd(0, 0), binary("*", rd(1, 1), rd(1, -1)))
    info = analyze(prog2d(e))
    assert info.associative and [dz for dz, _ in info.assoc.terms] == [0, 1]
    assert info.opt == "assoc"  # (1, ±1) is a diagonal access


def test_explicit_cast_to_dtype_is_stripped():
    s = weighted([(0, 0), (1, 1)], "double")
    e = Cast("float", None, binary("/", s, Const("double", None, 2.0, "2.0")), False)
    info = analyze(prog2d(e))
    assert info.associative and info.assoc.post[0] == "/" and info.assoc.sum_type == "double"


# =========================================================================== time


def test_time_shift_variants():
    # write t%2, read (t+1)%2
    info = analyze(prog2d(rd(0, 1, shift=1), target=target2d(shift=0)))
    assert (info.time.read_shift, info.time.write_shift) == (1, 0)
    # loop from 1, write t%2, read (t-1)%2
    tl = loop("t", 1, Affine.var("T"), 9)
    info = analyze(prog2d(rd(0, 1, shift=-1), target=target2d(shift=0), time_loop=tl))
    assert (info.time.read_shift, info.time.write_shift) == (-1, 0)
    assert info.time.start_buffer({"T": 5}) == 0
    assert info.time.steps({"T": 5}) == 5
    # (t+3)%2 reads the same buffer as (t+1)%2
    e = binary("+", rd(0, 0, shift=1), rd(1, 0, shift=3))
    info = analyze(prog2d(e, target=target2d(shift=2)))
    assert info.time.read_shift == 1 and info.time.write_shift == 2


def test_time_index_may_be_negative():
    e = rd(0, 1, shift=-1, line=55)
    rejects(prog2d(e, target=target2d(shift=0)), "time subscript", "negative", "t = 0",
            at=coord(55, 7))


def test_reads_without_any_read():
    info = analyze(prog2d(const(1.0)))
    assert info.offsets == () and info.radius == (0, 0) and info.shape == "star"
    assert info.opt == "nondiag" and info.flops_per_cell == 0
    assert info.time.read_shift % 2 != info.time.write_shift % 2


# =========================================================================== rejections


def test_reject_in_place():
    # the written buffer at the cell itself is a leapfrog read (lag 2); at a neighbour it
    # may already hold the new level
    e = binary("+", rd(0, 0, shift=1, line=40), rd(1, 0, shift=1, line=41))
    exc = rejects(prog2d(e), "in-place update", "A[(t+1)%2][i+1][j]",
                  "reads the buffer it writes (A[(t+1)%2][i][j]) at offset [1, 0]",
                  at=coord(41, 7))
    assert str(exc).startswith("built.c:41:7: error: in-place update")


def test_reject_newest_level_beside_a_neighbour_of_the_written_buffer():
    e = binary("+", rd(0, 0, line=40), rd(1, 0, shift=1, line=41))
    rejects(prog2d(e), "in-place update", "A[(t+1)%2][i+1][j]", at=coord(41, 7))


def test_reject_time_not_t_plus_c():
    bad = access("A", t.scale(2), (i, j), at=coord(42, 7))
    rejects(prog2d(bad), "time subscript (2*t)%2", at=coord(42, 7))
    bad = access("A", t + Affine.var("n"), (i, j), at=coord(43, 7))
    rejects(prog2d(bad), "time subscript", at=coord(43, 7))
    bad = access("A", None, (i, j), at=coord(44, 7))
    rejects(prog2d(bad), "no time subscript", at=coord(44, 7))


def test_reject_non_constant_offset():
    bad = access("A", t, (i.scale(2), j), at=coord(45, 7))
    # keep it in bounds: i in [1, n/2 - 1]... use the bounds check's absence by big extents
    prog = prog2d(binary("+", rd(0, 0), bad), extents=[n.scale(2), n])
    rejects(prog, "non-constant offset: A[t%2][2*i][j]", "dimension 0", at=coord(45, 7))


def test_reject_parameter_dependent_offset():
    m = Affine.var("m")
    bad = access("A", t, (i, j + m), at=coord(46, 7))
    prog = prog2d(bad, params=[Param("n", "int"), Param("T", "int"), Param("m", "int")])
    rejects(prog, "non-constant offset", "A[t%2][i][j+m]", "dimension 1", at=coord(46, 7))


def test_reject_time_dependent_offset():
    bad = access("A", t, (i, j + t), at=coord(47, 7))
    rejects(prog2d(bad), "non-constant offset", at=coord(47, 7))


def test_write_not_at_loop_point():
    rejects(prog2d(rd(0, 0), target=target2d(idx=(i + 1, j))),
            "write not at the loop point: A[(t+1)%2][i+1][j]", at=coord(20, 3))
    rejects(prog2d(rd(0, 0), target=target2d(idx=(i, i))),
            "write not at the loop point", "in two subscripts", at=coord(20, 3))
    rejects(prog2d(rd(0, 0), target=target2d(idx=(i.scale(2), j))),
            "write not at the loop point", at=coord(20, 3))
    rejects(prog2d(rd(0, 0), target=target2d(idx=(i, Affine.var("n")))),
            "write not at the loop point", at=coord(20, 3))
    rejects(prog2d(rd(0, 0), target=target2d(idx=(i, j - i))),
            "write not at the loop point", at=coord(20, 3))
    rejects(prog2d(rd(0, 0), target=target2d(idx=(i, t))),
            "write not at the loop point", at=coord(20, 3))


def test_swapped_write_permutes_dims():
    # loops i (outer, [1, n-2]), j (inner, [2, m-3]); the array is indexed [j][i]
    m = Affine.var("m")
    loops = [loop("i", 1, n - 2), loop("j", 2, m - 3)]
    target = access("A", t + 1, (j, i), at=coord(20, 3))
    reads = [access("A", t, (j + 2, i), at=coord(60, 7)), access("A", t, (j, i - 1), at=coord(61, 7))]
    prog = make_program(target, binary("+", *reads), loops, extents=[m, n],
                        params=[Param("n", "int"), Param("m", "int"), Param("T", "int")])
    info = analyze(prog)
    assert [d.var for d in info.dims] == ["j", "i"]
    assert info.dims[0].lower == Affine.of(2) and info.dims[0].extent == m
    assert info.offsets == ((0, -1), (2, 0))
    assert [(d.reach_lo, d.reach_hi) for d in info.dims] == [(0, 2), (1, 0)]


def test_reject_read_out_of_bounds():
    e = binary("+", rd(0, 0), rd(0, 2, line=70))
    exc = rejects(prog2d(e), "read may fall outside the array", "A[t%2][i][j+2]", "dimension 1",
                  at=coord(70, 7))
    assert re.search(r"reads index (\d+) of dimension 1 \(extent n = \1\)", exc.message), exc.message
    e = rd(-2, 0, line=71)
    exc = rejects(prog2d(e), "read may fall outside", "dimension 0", "reads index -1",
                  at=coord(71, 7))


def test_reject_write_out_of_bounds():
    rejects(prog2d(rd(0, 0), loops=[loop("i", 0, n), loop("j", 0, n - 1)]),
            "write may fall outside the array", "dimension 0", at=coord(20, 3))


def test_bounds_use_parameter_definitions():
    # int dimsize = compsize + 2;  loops over [1, compsize], array [dimsize][dimsize]
    ds, cs = Affine.var("dimsize"), Affine.var("compsize")
    loops = [loop("i", 1, cs), loop("j", 1, cs)]
    e = weighted(star_offsets(2, 1))
    params = [Param("compsize", "int"), Param("dimsize", "int", definition=cs + 2),
              Param("T", "int")]
    info = analyze(make_program(target2d(), e, loops, extents=[ds, ds], params=params))
    assert info.radius == (1, 1) and info.dims[0].upper == cs
    # without the definition dimsize is free and the reads may overflow
    params[1] = Param("dimsize", "int")
    rejects(make_program(target2d(), e, loops, extents=[ds, ds], params=params),
            "may fall outside the array", "dimsize = ")
    # a const parameter with a value works the same way
    params = [Param("N", "int", value=66), Param("T", "int")]
    N = Affine.var("N")
    info = analyze(make_program(target2d(), e, [loop("i", 1, N - 2), loop("j", 1, 64)],
                                extents=[N, Affine.of(66)], params=params))
    assert info.dims[1].extent == Affine.of(66)


def test_constant_sizes_and_global_form():
    spec = StencilSpec(star_offsets(3, 2), size=40, form="global", dtype="double")
    info = analyze(build_program(spec))
    assert info.dims[2].extent == Affine.of(40) and info.dims[2].upper == Affine.of(37)
    assert info.dtype == "double" and info.radius == (2, 2, 2)


def test_vla_pointer_time_extent_irrelevant():
    info = analyze(build_program(StencilSpec(star_offsets(2, 1), form="vla_pointer")))
    assert info.program.array.time_extent is None and info.radius == (1, 1)


def test_reject_time_extent_one():
    rejects(prog2d(rd(0, 0), time_extent=1), "time dimension of extent 1")


def test_reject_non_rectangular():
    loops = [loop("i", 1, n - 2, 11), loop("j", Affine.var("i"), n - 2, 12)]
    rejects(prog2d(rd(0, 0), loops=loops), "lower bound i of loop j depends on loop variable i",
            "non-rectangular", at=coord(12))


def test_reject_other_array_and_loop_var_value():
    other = access("B", t, (i, j), at=coord(80, 7))
    rejects(prog2d(binary("+", rd(0, 0), other)), "read of array B", at=coord(80, 7))
    sc = Scalar("int", coord(81, 9), "i")
    rejects(prog2d(binary("+", rd(0, 0), sc)), "loop variable i as a value", at=coord(81, 9))


def test_reject_wrong_target_array():
    rejects(prog2d(rd(0, 0), target=target2d(array="B")), "writes B, not the stencil array A")


def test_reject_statement_count_and_ndim():
    p = prog2d(rd(0, 0))
    extra = ir.Assign(target2d(), rd(0, 0), coord(21, 3))
    nest = p.nests[0]
    p2 = dataclasses.replace(p, nests=(dataclasses.replace(nest, statements=nest.statements + (extra,)),))
    rejects(p2, "'A' is written by two statements (the first at line 20)", at=coord(21, 3))
    # 1D
    p1 = make_program(access("A", t + 1, (i,), at=coord(20, 3)), read_at((1,), at=coord(90)),
                      [loop("i", 1, n - 2)])
    rejects(p1, "1 spatial loops", "2D and 3D")
    # array rank differs from the nest depth
    rejects(prog2d(rd(0, 0), extents=[n, n, n]), "3 spatial dimensions", "2 spatial loops")


def test_reject_empty_domain():
    loops = [loop("i", 5, 4), loop("j", 1, n - 2)]
    rejects(prog2d(rd(0, 0), loops=loops), "never executes", at=coord(9))


def test_isl_keyword_names():
    # user names that are isl keywords must not confuse the analysis
    mn, dv = Affine.var("min"), Affine.var("div")
    loops = [loop("and", 1, mn - 2), loop("or", 1, mn - 2)]
    tl = loop("max", 0, dv - 1, 9)
    tgt = access("A", Affine.var("max") + 1, (Affine.var("and"), Affine.var("or")),
                 at=coord(20, 3))
    rd1 = access("A", Affine.var("max"), (Affine.var("and") + 1, Affine.var("or")))
    rd2 = access("A", Affine.var("max"), (Affine.var("and"), Affine.var("or") - 1))
    info = analyze(make_program(tgt, binary("+", rd1, rd2), loops, extents=[mn, mn],
                                time_loop=tl, params=[Param("min", "int"), Param("div", "int")]))
    assert info.offsets == ((0, -1), (1, 0)) and info.time.var == "max"


def test_format_access():
    assert format_access(access("A", t + 1, (i - 1, j.scale(2) + 3))) == "A[(t+1)%2][i-1][2*j+3]"
    assert format_access(access("A", t, (i, -j))) == "A[t%2][i][-j]"


# =========================================================================== hypothesis (IR)


@st.composite
def stencil_specs(draw, max_box3d=2):
    nd = draw(st.sampled_from([2, 3]))
    kind = draw(st.sampled_from(["star", "box", "general"]))
    dtype = draw(st.sampled_from(["float", "double"]))
    if kind == "box":
        rmax = 4 if nd == 2 else max_box3d
        radius = tuple(draw(st.integers(1, rmax)) for _ in range(nd))
        offs = list(itertools.product(*[range(-r, r + 1) for r in radius]))
    else:
        radius = tuple(draw(st.integers(1, 4)) for _ in range(nd))
        if kind == "star":
            pool = [o for o in itertools.product(*[range(-r, r + 1) for r in radius])
                    if sum(c != 0 for c in o) <= 1]
        else:
            pool = list(itertools.product(*[range(-r, r + 1) for r in radius]))
        size = draw(st.integers(1, min(len(pool), 24)))
        offs = draw(st.lists(st.sampled_from(pool), min_size=size, max_size=size, unique=True))
        if kind == "general":
            diag = [o for o in pool if sum(c != 0 for c in o) >= 2]
            extra = draw(st.sampled_from(diag))
            if extra not in offs:
                offs.append(extra)
    offs = draw(st.permutations(offs))
    coeffs = draw(st.lists(st.integers(1, 9999), min_size=len(offs), max_size=len(offs),
                           unique=True))
    divisor = draw(st.sampled_from([None, None, 3.0]))
    array = draw(st.sampled_from(["A", "u", "grid"]))
    names = draw(st.permutations(["i", "j", "k", "x", "y", "z", "row", "col"]))
    return StencilSpec(tuple(offs), tuple(c / 1000 for c in coeffs), dtype=dtype,
                       divisor=divisor, array=array, loop_vars=tuple(names[:nd]))


def check_against_spec(info: StencilInfo, spec: StencilSpec):
    offs = spec.unique_offsets
    assert info.offsets == offs
    radius = expected_radius(offs, spec.ndim)
    assert info.radius == radius
    assert [(d.reach_lo, d.reach_hi) for d in info.dims] == list(spec.reach)
    assert info.shape == expected_shape(offs, radius)
    diag_free = all(all(c == 0 for c in o[1:]) for o in offs if o[0] != 0)
    assert info.diagonal_free == diag_free
    assert info.associative  # weighted sums are always associative
    assert [dz for dz, _ in info.assoc.terms] == [o[0] for o in spec.offsets]
    assert info.opt == ("nondiag" if diag_free else "assoc")
    npts = len(spec.offsets)
    assert info.flops_per_cell == 2 * npts - 1 + (spec.divisor is not None)
    assert info.dtype == spec.dtype and info.array == spec.array
    assert [d.var for d in info.dims] == list(spec.vars)
    reads = [e for e in walk(info.update) if isinstance(e, Read)]
    assert [r.offset for r in reads] == list(spec.offsets)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stencil_specs())
def test_hypothesis_built(spec):
    info = analyze(build_program(spec))
    check_against_spec(info, spec)
    assert not has_isl(info)


# =========================================================================== frontend-driven


def _frontend():
    try:
        from an5dpy.frontend import read_program, read_program_text  # noqa: F401
    except ImportError:
        return None
    return read_program, read_program_text


needs_frontend = pytest.mark.skipif(_frontend() is None,
                                    reason="an5dpy.frontend.read_program not available yet")


@needs_frontend
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stencil_specs(), st.sampled_from(["parameter", "vla_pointer", "global"]))
def test_hypothesis_rendered(spec, form):
    spec = dataclasses.replace(spec, form=form, size=48 if form == "global" else "n")
    _, read_text = _frontend()
    program = read_text(render_c(spec), filename="rendered.c")
    info = analyze(program)
    check_against_spec(info, spec)
    # the hand-built IR analyses the same way
    built = analyze(build_program(spec))
    assert built.to_json() | {"file": None} == info.to_json() | {"file": None}


# --- the 21 benchmark programs of Table 3

TABLE3 = {}
for x in (1, 2, 3, 4):
    TABLE3[f"star2d{x}r"] = dict(ndim=2, radius=[x, x], shape="star", flops=8 * x + 1,
                                 diagonal_free=True, associative=True, opt="nondiag")
    TABLE3[f"star3d{x}r"] = dict(ndim=3, radius=[x] * 3, shape="star", flops=12 * x + 1,
                                 diagonal_free=True, associative=True, opt="nondiag")
    TABLE3[f"box2d{x}r"] = dict(ndim=2, radius=[x, x], shape="box",
                                flops=2 * (2 * x + 1) ** 2 - 1,
                                diagonal_free=False, associative=True, opt="assoc")
    TABLE3[f"box3d{x}r"] = dict(ndim=3, radius=[x] * 3, shape="box",
                                flops=2 * (2 * x + 1) ** 3 - 1,
                                diagonal_free=False, associative=True, opt="assoc")
TABLE3.update({
    "j2d5pt": dict(ndim=2, radius=[1, 1], shape="star", flops=10, diagonal_free=True,
                   associative=True, opt="nondiag"),
    "j2d9pt": dict(ndim=2, radius=[2, 2], shape="star", flops=18, diagonal_free=True,
                   associative=True, opt="nondiag"),
    "j2d9pt-gol": dict(ndim=2, radius=[1, 1], shape="box", flops=18, diagonal_free=False,
                       associative=True, opt="assoc"),
    "gradient2d": dict(ndim=2, radius=[1, 1], shape="star", flops=19, diagonal_free=True,
                       associative=False, opt="nondiag"),
    "j3d27pt": dict(ndim=3, radius=[1, 1, 1], shape="box", flops=54, diagonal_free=False,
                    associative=True, opt="assoc"),
})
assert len(TABLE3) == 21


@needs_frontend
@pytest.mark.parametrize("dtype", ["float", "double"])
@pytest.mark.parametrize("name", sorted(TABLE3))
def test_c_inputs_table3(name, dtype):
    path = os.path.join(C_INPUTS, name + ".c")
    if not os.path.exists(path) or not os.path.exists(os.path.join(C_INPUTS, "common.h")):
        pytest.skip(f"{path} (or common.h) not written yet")
    read_program, _ = _frontend()
    program = read_program(path, defines=(("SB_TYPE", dtype),), include_dirs=(C_INPUTS,))
    info = analyze(program)
    want = TABLE3[name]
    assert info.ndim == want["ndim"]
    assert list(info.radius) == want["radius"]
    assert info.shape == want["shape"]
    assert info.flops_per_cell == want["flops"]
    assert info.diagonal_free == want["diagonal_free"]
    assert info.associative == want["associative"]
    assert info.opt == want["opt"]
    assert info.dtype == dtype
    # BENCH_FPP / BENCH_RAD in the file agree as well
    text = open(path).read()
    m = re.search(r"#define\s+BENCH_FPP\s+(\d+)", text)
    if m:
        assert info.flops_per_cell == int(m.group(1))
    m = re.search(r"#define\s+BENCH_RAD\s+(\d+)", text)
    if m:
        assert max(info.radius) == int(m.group(1))


# --- tests/data/forms/*.c (frontend forms) and tests/data/analysis_forms/*.c (analysis
# rules and rejections), each with a leading /* expect: {json} */

FORMS = sorted(glob.glob(os.path.join(HERE, "data", "forms", "*.c"))
               + glob.glob(os.path.join(HERE, "data", "analysis_forms", "*.c")))


def extended_json(info: StencilInfo) -> dict:
    """to_json() plus a few analysis details the expect lines may pin down."""
    out = info.to_json()
    out["read_shift"] = info.time.read_shift
    out["write_shift"] = info.time.write_shift
    out["op_mix"] = op_mix(info)
    out["dims"] = [d.var for d in info.dims]
    if info.assoc is not None:
        out["planes"] = list(info.assoc.planes())
        out["term_planes"] = [dz for dz, _ in info.assoc.terms]
        out["post"] = info.assoc.post[0] if info.assoc.post else None
        out["sum_type"] = info.assoc.sum_type
    return out


def read_expect(path: str) -> dict:
    with open(path) as f:
        first = f.readline()
    m = re.match(r"\s*/\*\s*expect:\s*(\{.*\})\s*\*/\s*$", first)
    assert m, f"{path}: first line must be /* expect: {{json}} */"
    return json.loads(m.group(1))


def _subset_equal(got, want, where=""):
    if isinstance(want, dict):
        assert isinstance(got, dict), where
        for key, value in want.items():
            assert key in got, f"{where}.{key} missing"
            _subset_equal(got[key], value, f"{where}.{key}")
    elif (isinstance(want, list) and want and all(isinstance(w, str) for w in want)
          and isinstance(got, list) and all(isinstance(g, dict) and "name" in g for g in got)):
        # "params": ["T", "n"] -- compare the parameter names, in any order
        assert sorted(g["name"] for g in got) == sorted(want), f"{where}: {got!r} vs {want!r}"
    elif isinstance(want, list) and not want and where.endswith(".params"):
        assert got == [], f"{where}: {got!r}"
    else:
        assert got == want, f"{where}: got {got!r}, want {want!r}"


@needs_frontend
@pytest.mark.parametrize("path", FORMS, ids=[os.path.relpath(p, HERE) for p in FORMS])
def test_forms(path):
    want = read_expect(path)
    read_program, _ = _frontend()
    defines = tuple((k, v) for k, v in want.pop("defines", {}).items())
    error = want.pop("error", None)
    error_line = want.pop("error_line", None)
    if error is not None:
        with pytest.raises(UnsupportedInput) as exc:
            analyze(read_program(path, defines=defines, include_dirs=(C_INPUTS,)))
        assert error in exc.value.message, exc.value.message
        if error_line is not None:
            assert exc.value.coord is not None and exc.value.coord.line == error_line, \
                str(exc.value)
        return
    info = analyze(read_program(path, defines=defines, include_dirs=(C_INPUTS,)))
    _subset_equal(extended_json(info), want, os.path.basename(path))


def test_forms_files_are_well_formed():
    assert FORMS
    for path in FORMS:
        read_expect(path)


# --- parameters hold values of their C types only (issue 12 item 4)

TIME_START = """
void f(int n, int T, {t0_type} t0, double A[2][n][n])
{{
  {t_type} t;
#pragma scop
  for (t = t0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = 0.25 * (A[t%2][i-1][j] + A[t%2][i+1][j] + A[t%2][i][j-1]
                                   + A[t%2][i][j+1]);
#pragma endscop
}}
"""


def _time_start(t0_type: str, t_type: str):
    _, read_text = _frontend()
    return read_text(TIME_START.format(t0_type=t0_type, t_type=t_type), filename="t0.c")


@needs_frontend
@pytest.mark.parametrize("t_type", ["unsigned int", "long"])
def test_unsigned_time_start_is_accepted_where_the_loop_variable_holds_it(t_type):
    # t0 >= 0, and t (which holds every t0) never goes below it: (t+1)%2 and t%2 stay in
    # [0, 1]. Before, the analysis let t0 be -2, a value an unsigned int cannot hold.
    info = analyze(_time_start("unsigned int", t_type))
    assert info.time.lower == Affine.var("t0")


@needs_frontend
def test_unsigned_time_start_into_an_int_loop_variable_is_refused_with_a_value_of_its_type():
    # int t = t0 wraps t0 = 4294967295 to -1: A[t%2] then reads buffer -1 (gcc's conversion)
    with pytest.raises(UnsupportedInput) as info:
        _time_start("unsigned int", "int")
    message = info.value.message
    assert "t0 = 4294967295 (unsigned int)" in message and "converts it to -1" in message
    assert info.value.coord.line == 6 and info.value.coord.column == 12


@needs_frontend
@pytest.mark.parametrize("t0_type, t_type", [("int", "int"), ("short", "long"),
                                             ("long", "long")])
def test_signed_time_start_counterexample_is_a_small_value_of_its_type(t0_type, t_type):
    with pytest.raises(UnsupportedInput) as info:
        analyze(_time_start(t0_type, t_type))
    found = re.search(r"when t0 = (-?\d+), T = (-?\d+), n = (-?\d+)", info.value.message)
    assert found, info.value.message
    t0, steps, n = map(int, found.groups())
    assert -256 <= t0 < 0 and t0 < steps and 3 <= n <= 256
    assert "time subscript of A[(t+1)%2][i][j] may be negative" in info.value.message


@needs_frontend
def test_unsigned_lower_bound_counterexample_is_a_value_of_its_type():
    # separate bound parameters are refused (A[t%2][i-1][j] reads row -1 when lb = 0), and
    # the counterexample is lb = 0, not a negative lb an unsigned int cannot hold
    _, read_text = _frontend()
    text = TIME_START.format(t0_type="unsigned int", t_type="unsigned int").replace(
        "int i = 1;", "unsigned int i = t0;")
    with pytest.raises(UnsupportedInput) as info:
        analyze(read_text(text, filename="lb.c"))
    assert "read may fall outside the array: A[t%2][i-1][j] reads index -1" in \
        info.value.message
    assert re.search(r"when t0 = 0, ", info.value.message), info.value.message


# --- the loop variable's type: 'V t = t0' converts the start to V (issue 12 item 4)

_VERDICTS = {  # (t0's type, t's type) -> what C makes of 'for (t = t0; t < T; t++)'
    ("int", "int"): "negative subscript", ("int", "long"): "negative subscript",
    ("long", "long"): "negative subscript",
    ("int", "unsigned int"): "start converted", ("long", "unsigned int"): "start converted",
    ("unsigned int", "int"): "start wraps", ("long", "int"): "start wraps",
    ("unsigned int", "unsigned int"): "accepted", ("unsigned int", "long"): "accepted",
}


@needs_frontend
@pytest.mark.parametrize("t0_type, t_type", sorted(_VERDICTS))
def test_time_start_of_each_type_into_each_loop_variable_type(t0_type, t_type):
    verdict = _VERDICTS[(t0_type, t_type)]
    program = None
    try:
        program = _time_start(t0_type, t_type)
        info = analyze(program)
    except UnsupportedInput as exc:
        message = exc.message
    else:
        assert verdict == "accepted"
        assert program.time_loop.var_type == t_type
        assert info.time.lower == Affine.var("t0")
        return
    if verdict == "negative subscript":
        assert "time subscript of A[(t+1)%2][i][j] may be negative" in message
    elif verdict == "start wraps":  # the frontend: the start wraps to a negative int
        assert "so 't' starts negative" in message
    elif verdict == "start converted":
        found = re.search(r"of type unsigned int starts at t0, a value its type cannot always "
                          r"hold: when t0 = (-?\d+), T = (-?\d+), n = \d+, the bounds say 't' "
                          r"runs from (-?\d+) to (-?\d+), but C converts the start to (\d+)",
                          message)
        assert found, message
        t0, steps, start, end, converted = map(int, found.groups())
        assert t0 < 0 and start == t0 and end == steps - 1 >= start
        assert converted == t0 + 2 ** 32  # what gcc's conversion to unsigned int gives
    else:
        pytest.fail(f"{t0_type} t0 into {t_type} t refused: {message}")


@needs_frontend
def test_the_loop_variable_type_reaches_the_ir():
    _, read_text = _frontend()
    text = TIME_START.format(t0_type="unsigned int", t_type="unsigned long").replace(
        "for (int i = 1;", "for (short i = 1;")
    program = read_text(text, filename="types.c")
    assert program.time_loop.var_type == "unsigned long"
    assert [lp.var_type for lp in program.space_loops] == ["short", "int"]


@needs_frontend
def test_a_space_loop_start_its_type_cannot_hold_is_refused():
    # unsigned j = k with k = -1 starts j at 4294967295, far outside the row
    _, read_text = _frontend()
    text = TIME_START.format(t0_type="unsigned int", t_type="unsigned int").replace(
        "int n, int T,", "int n, int T, int k,").replace(
        "for (int j = 1; j < n - 1;", "for (unsigned j = k + 1; j < n - 1;")
    with pytest.raises(UnsupportedInput) as info:
        analyze(read_text(text, filename="j.c"))
    assert re.search(r"loop 'j' of type unsigned int starts at k\+1, .* k = -\d+, "
                     r"the bounds say 'j' ", info.value.message), info.value.message


@needs_frontend
def test_an_unsigned_loop_with_a_constant_start_is_accepted():
    _, read_text = _frontend()
    text = TIME_START.format(t0_type="unsigned int", t_type="unsigned int").replace(
        "for (int i = 1;", "for (unsigned i = 1;")
    info = analyze(read_text(text, filename="u.c"))
    assert info.dims[0].lower == Affine.of(1)
