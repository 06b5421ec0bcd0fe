#!/usr/bin/env python3
"""Generate the 21 benchmark programs of Table 3 (AN5D, CGO'20) in this directory.

Usage:  python3 c_inputs/generate.py [--check]

It also writes ``paper_benchmarks.txt``, their names in Table 3's order, one a line: the
list that check.sh, the tests and the scripts read wherever they mean the paper's
benchmarks. The other programs of this directory (poisson2d.c, varheat2d.c, wave2d.c,
acoustic3d.c, heat3dz.c, dampedwave2d.c, and grayscott2d.c, fdtd2d.c, acousticvp3d.c with
several statements per time step) are written by hand; this script neither writes nor
checks them.

Every program has the same shape (see common.h for the harness): a function
``kernel_stencil`` whose ``#pragma scop`` region holds the time loop and the spatial
loops with one update ``A[(t+1)%2][i][j] = <expr>``, and whose ``else`` branch holds
the very same loop nest with the very same expression as the OpenMP CPU version.

FLOP counting rule (the one BENCH_FPP follows): each binary + - * / on floating
operands counts 1, each math call counts 1, unary minus and casts count 0.

Coefficients: every coefficient of a file is a distinct float literal (``f``
suffix), so that reading a wrong offset, or pairing a coefficient with the mirrored
offset, changes the result. For the plain weighted sums (star/box) the coefficients
are spread symmetrically around 1/npoints, so they sum to about 1 and values stay
bounded over thousands of steps; for the j-stencils (which divide by c0) they are
spread around 1.3 (so no product is a multiplication by 1) and c0 is their exact
decimal sum. The gradient2d constant c0 is 0.0001f.

``--check`` regenerates into memory and fails if a file on disk differs (the programs
and the list).
"""

from __future__ import annotations

import itertools
import math
import os
import sys
from decimal import Decimal

HERE = os.path.dirname(os.path.abspath(__file__))

# ----------------------------------------------------------------------------- offsets


def star_offsets(ndim: int, rad: int) -> list[tuple[int, ...]]:
    """All offsets with at most one nonzero component, |component| <= rad."""
    offs = {(0,) * ndim}
    for d in range(ndim):
        for k in range(1, rad + 1):
            for sign in (-1, 1):
                o = [0] * ndim
                o[d] = sign * k
                offs.add(tuple(o))
    return sorted(offs)


def box_offsets(ndim: int, rad: int) -> list[tuple[int, ...]]:
    return sorted(itertools.product(range(-rad, rad + 1), repeat=ndim))


# ----------------------------------------------------------------------------- coefficients


def spread(n: int, mean: float, rel_spread: float) -> list[str]:
    """``n`` distinct decimal strings spread symmetrically around ``mean``.

    ``m`` is ``mean`` rounded to 4 significant digits; the values are
    ``m + (k - (n-1)/2) * step`` for k = 0..n-1, with ``step`` a whole number of units of
    the last digit (even when n is even, so every value stays on the digit grid), chosen
    so that the values cover about ``rel_spread * mean``. Their exact sum is ``n * m``.
    """
    digits = 3 - math.floor(math.log10(mean))
    unit = Decimal(1).scaleb(-digits)
    m = Decimal(str(round(mean, digits)))
    step_units = 1 if n == 1 else max(1, round(rel_spread * mean / (n - 1) / float(unit)))
    if n % 2 == 0 and step_units % 2 == 1:
        step_units += 1
    vals = [m + (2 * k - (n - 1)) * step_units * unit / 2 for k in range(n)]
    assert sum(vals) == n * m
    texts = [format_decimal(v) for v in vals]
    assert len(set(texts)) == n, "coefficients must be distinct"
    assert all(v > 0 for v in vals)
    return texts


def format_decimal(v: Decimal) -> str:
    s = format(v.normalize(), "f")
    if "." not in s:
        s += ".0"
    return s


def float_lit(text: str) -> str:
    return text + "f"


# ----------------------------------------------------------------------------- expressions


def access(ndim: int, off: tuple[int, ...], time: str = "t%2") -> str:
    names = "ijk"[:ndim]
    subs = []
    for var, o in zip(names, off):
        if o == 0:
            subs.append(f"[{var}]")
        elif o > 0:
            subs.append(f"[{var}+{o}]")
        else:
            subs.append(f"[{var}-{-o}]")
    return f"A[{time}]" + "".join(subs)


def weighted_terms(ndim: int, offsets, coeffs) -> list[str]:
    return [f"{float_lit(c)} * {access(ndim, o)}" for c, o in zip(coeffs, offsets)]


def wrap_sum(terms: list[str], indent: str, first_prefix: str, per_line: int) -> list[str]:
    """Lay out ``t0 + t1 + ...`` over several lines, ``per_line`` terms each.

    Each continuation line starts with ``+ ``; the chain stays a plain left-to-right sum.
    """
    lines = []
    for start in range(0, len(terms), per_line):
        chunk = " + ".join(terms[start:start + per_line])
        if start == 0:
            lines.append(indent + first_prefix + chunk)
        else:
            lines.append(indent + "+ " + chunk)
    return lines


def expression_lines(bench: dict, ndim: int, indent: str) -> list[str]:
    """The right-hand side of the update, as source lines (no trailing ';')."""
    kind = bench["kind"]
    if kind == "gradient":
        c = access(ndim, (0, 0))
        diffs = []
        for o in [(-1, 0), (1, 0), (0, -1), (0, 1)]:
            n = access(ndim, o)
            diffs.append(f"({c} - {n}) * ({c} - {n})")
        lines = [indent + f"{c} + 1.0f / sqrtf({bench['c0']}"]
        for d in diffs:
            lines.append(indent + "    + " + d)
        lines[-1] += ")"
        return lines
    offsets = bench["offsets"]
    terms = weighted_terms(ndim, offsets, bench["coeffs"])
    per_line = bench.get("per_line", 3)
    if kind == "sum":
        return wrap_sum(terms, indent, "", per_line)
    if kind == "jacobi":
        lines = wrap_sum(terms, indent + " ", "", per_line)
        lines[0] = indent + "(" + lines[0][len(indent) + 1:]
        lines[-1] += f") / {bench['c0']}"
        return lines
    raise ValueError(kind)


# ----------------------------------------------------------------------------- flop count


def flops(bench: dict) -> int:
    kind = bench["kind"]
    if kind == "gradient":
        # 4 x (sub, sub, mul) + c0 + 4 terms (4 adds) + sqrtf + div + final add
        return 4 * 3 + 4 + 1 + 1 + 1
    n = len(bench["offsets"])
    f = n + (n - 1)  # n products, n-1 additions
    if kind == "jacobi":
        f += 1  # division by c0
    return f


# ----------------------------------------------------------------------------- benchmarks


def make_benches() -> list[dict]:
    """The 21 benchmarks in Table 3's order: per dimension count the star and box
    stencils of radius 1-4, then the j-stencils (and gradient2d)."""

    def weighted_sum(shape, ndim, x):
        offs = star_offsets(ndim, x) if shape == "star" else box_offsets(ndim, x)
        return {"name": f"{shape}{ndim}d{x}r", "ndim": ndim, "rad": x, "kind": "sum",
                "offsets": offs, "coeffs": spread(len(offs), 1.0 / len(offs), 0.4),
                "per_line": 3}

    def jacobi(name, ndim, rad, offs):
        coeffs = spread(len(offs), 1.3, 0.4)  # no coefficient is exactly 1
        total = sum(Decimal(c) for c in coeffs)
        c0 = float_lit(format_decimal(total))
        assert c0[:-1] not in coeffs
        return {"name": name, "ndim": ndim, "rad": rad, "kind": "jacobi", "offsets": offs,
                "coeffs": coeffs, "c0": c0, "per_line": 3}

    benches = []
    for ndim in (2, 3):
        benches += [weighted_sum(shape, ndim, x) for shape in ("star", "box")
                    for x in range(1, 5)]
        if ndim == 2:
            benches.append(jacobi("j2d5pt", 2, 1, star_offsets(2, 1)))
            benches.append(jacobi("j2d9pt", 2, 2, star_offsets(2, 2)))
            benches.append(jacobi("j2d9pt-gol", 2, 1, box_offsets(2, 1)))
            benches.append({"name": "gradient2d", "ndim": 2, "rad": 1, "kind": "gradient",
                            "c0": "0.0001f", "offsets": star_offsets(2, 1)})
        else:
            benches.append(jacobi("j3d27pt", 3, 1, box_offsets(3, 1)))
    return benches


EXPECTED_FPP = {
    **{f"star2d{x}r": 8 * x + 1 for x in range(1, 5)},
    **{f"box2d{x}r": 2 * (2 * x + 1) ** 2 - 1 for x in range(1, 5)},
    **{f"star3d{x}r": 12 * x + 1 for x in range(1, 5)},
    **{f"box3d{x}r": 2 * (2 * x + 1) ** 3 - 1 for x in range(1, 5)},
    "j2d5pt": 10, "j2d9pt": 18, "j2d9pt-gol": 18, "gradient2d": 19, "j3d27pt": 54,
}


# ----------------------------------------------------------------------------- rendering


def render(bench: dict) -> str:
    ndim, rad = bench["ndim"], bench["rad"]
    fpp = flops(bench)
    assert fpp == EXPECTED_FPP[bench["name"]], (bench["name"], fpp)
    ext = "[dimsize]" * ndim
    loops_vars = "ijk"[:ndim]
    lhs = "A[(t+1)%2]" + "".join(f"[{v}]" for v in loops_vars)

    def nest(omp: bool) -> list[str]:
        out = ["    for (int t = 0; t < timestep; t++)"]
        if omp:
            out.append("#pragma omp parallel for")
        ind = "      "
        for v in loops_vars:
            out.append(f"{ind}for (int {v} = BENCH_RAD; {v} < dimsize - BENCH_RAD; {v}++)")
            ind += "  "
        rhs = expression_lines(bench, ndim, ind + "  ")
        if len(rhs) == 1 and len(ind) + len(lhs) + 3 + len(rhs[0].strip()) <= 100:
            out.append(f"{ind}{lhs} = {rhs[0].strip()};")
        else:
            out.append(f"{ind}{lhs} =")
            out.extend(rhs)
            out[-1] += ";"
        return out

    head = []
    if bench["kind"] == "gradient":
        head = [
            "/* gradient2d: sqrtf (not sqrt) is used on purpose. With SB_TYPE=float the whole",
            "   update then stays in float, and C (gcc) and C++ (nvcc, where sqrt(float) would",
            "   pick the float overload) give it the same meaning. With SB_TYPE=double the",
            "   argument is converted to float; that is valid C, and the FLOP count is 19",
            "   either way: 4 x (sub, sub, mul) + 4 adds + sqrtf + div + final add. */",
            "",
        ]
    lines = [
        f"#define BENCH_DIM {ndim}",
        f"#define BENCH_FPP {fpp}",
        f"#define BENCH_RAD {rad}",
        "",
        '#include "common.h"',
        "",
        *head,
        "double kernel_stencil(SB_TYPE *A1, int compsize, int timestep, bool scop)",
        "{",
        "  double start_time = sb_time();",
        "  int dimsize = compsize + BENCH_RAD * 2;",
        f"  SB_TYPE (*A){ext} = (SB_TYPE (*){ext})A1;",
        "",
        "  if (scop) {",
        "#pragma scop",
        *nest(False),
        "#pragma endscop",
        "  }",
        "  else {",
        *nest(True),
        "  }",
        "  return sb_elapsed(start_time);",
        "}",
    ]
    return "\n".join(lines) + "\n"


#: The list of the programs this script writes (see the module docstring).
PAPER_LIST = "paper_benchmarks.txt"


def main(argv: list[str]) -> int:
    check = "--check" in argv[1:]
    benches = make_benches()
    assert len(benches) == 21
    outputs = [(b["name"] + ".c", render(b)) for b in benches]
    outputs.append((PAPER_LIST, "".join(b["name"] + "\n" for b in benches)))
    stale = []
    for name, text in outputs:
        path = os.path.join(HERE, name)
        if check:
            try:
                with open(path) as fh:
                    if fh.read() != text:
                        stale.append(path)
            except FileNotFoundError:
                stale.append(path)
        else:
            with open(path, "w") as fh:
                fh.write(text)
    if check:
        for p in stale:
            print(f"out of date: {p}", file=sys.stderr)
        return 1 if stale else 0
    print(f"wrote {len(benches)} programs and {PAPER_LIST} to {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
