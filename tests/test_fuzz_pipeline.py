"""Fuzzing the whole pipeline: frontend -> analysis -> plan -> schedule -> render -> files.

Property: for any input text and any options, :func:`an5dpy.driver.translate` (plus the
``--print-ir`` printers and :func:`~an5dpy.driver.write_outputs`) either succeeds or raises
an :class:`~an5dpy.errors.An5dError` whose exit status is 2 (UnsupportedInput, UsageError),
whose message has the ``FILE:LINE:COL: error:`` / ``error:`` form and no Python internals.
Anything else -- another exception, an InternalError (exit 70), a hang -- is a bug.
A case with ``sim_seed`` also runs ``an5d verify --backend sim`` on small random parameter
values: a translation that succeeds must agree with gcc's loop nest (exit 0, not 1).

Inputs are accepted programs (``c_inputs/*.c`` with SB_TYPE defined, ``tests/data/forms``,
...) mutated at the token and character level (delete / duplicate / swap tokens, new
numbers and operators, changed subscript offsets, inserted C fragments, line edits), run
with random option combinations (bt, bs, sl, opt, ...).

* ``tests/data/fuzz_pipeline/*.c`` are regression inputs found by campaigns; the first
  line is ``/* fuzz: {JSON} */`` with the options (and ``"open": "..."`` while the bug it
  reproduces is not fixed yet: such a file is an expected failure, strict, so fixing the
  bug makes the test say to drop the field).
* The test also runs a short seeded fuzz budget (``AN5D_FUZZ_SECONDS``, default 10 s).
* A campaign: ``python tests/test_fuzz_pipeline.py --minutes 20 --seed 1 --log DIR
  [--sim 0.3]`` (findings are deduplicated by signature, reduced, and written to DIR).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest

from an5dpy import driver
from an5dpy.cli import show
from an5dpy.errors import EXIT_BAD_INPUT, An5dError, UnsupportedInput
from an5dpy.blocking.printing import format_schedule
from paths import PAPER_BENCHMARKS

REPO = Path(__file__).resolve().parent.parent
REGRESSIONS = REPO / "tests" / "data" / "fuzz_pipeline"
HEADER = re.compile(r"^/\* fuzz: (\{.*\}) \*/\n")

# --------------------------------------------------------------------------- seeds


@dataclass(frozen=True)
class Seed:
    path: str  # relative to the repository
    text: str
    typed: bool  # needs -D SB_TYPE=...

    @property
    def include_dir(self) -> str:
        return os.path.dirname(self.path)


def load_seeds() -> list[Seed]:
    seeds = []
    patterns = ["c_inputs/*.c", "tests/data/forms/*.c", "tests/data/frontend/*.c",
                "tests/data/analysis_forms/*.c"]
    for pattern in patterns:
        for path in sorted(glob.glob(str(REPO / pattern))):
            with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
                text = f.read()
            rel = os.path.relpath(path, REPO)
            seeds.append(Seed(rel, text, "SB_TYPE" in text and "#define SB_TYPE" not in text))
    return seeds


# --------------------------------------------------------------------------- options


@dataclass
class Case:
    """One run: input text, file name, and the translate options (JSON-able)."""

    text: str
    name: str = "input.c"
    bt: int = 4
    bs: str | None = None
    sl: int | None = None
    opt: str | None = None
    defines: list = field(default_factory=list)
    include_dirs: list = field(default_factory=list)  # relative to the repository
    smem_wrap: bool = True
    baseline: bool = False
    sim_seed: int | None = None  # also run `an5d verify --backend sim` (parameters from it)

    def options(self) -> driver.Options:
        return driver.Options(
            bt=self.bt, bs=self.bs, sl=self.sl, opt=self.opt,
            defines=tuple((k, v) for k, v in self.defines),
            include_dirs=tuple(str(REPO / d) for d in self.include_dirs),
            smem_wrap=self.smem_wrap, baseline=self.baseline)

    def header(self, **extra) -> dict:
        data = {k: v for k, v in asdict(self).items() if k != "text"}
        data.update(extra)
        return data


BS_VALUES = [1, 2, 3, 4, 7, 8, 16, 17, 24, 32, 48, 64, 96, 100, 128, 200, 256, 384, 512,
             1000, 1024, 1025, 2048, 4096]
BS_GARBAGE = ["", "x", "32x", "x32", "0", "-4", "3.5", "32X32", " 64", "1_0", "0x20",
              "32x32x32", "32x0", "1x1", "\u0663\u0662", "99999999999999999999",
              "16x-16", "nan", "1e3", "32 x 32", "32x32 ", "+32"]
MODES = ["auto", "nondiag", "assoc", "none", None]


def random_options(rng: random.Random, case: Case, ndim: int | None = None) -> None:
    r = rng.random()
    case.bt = rng.randint(1, 8) if r < 0.9 else rng.choice([9, 10, 12, 16, 32, 100, 10 ** 6])
    r = rng.random()
    if r < 0.35:
        case.bs = None
    elif r < 0.92:
        two = rng.random() < 0.5 if ndim not in (2, 3) or rng.random() < 0.1 else ndim == 3
        case.bs = (f"{rng.choice(BS_VALUES)}x{rng.choice(BS_VALUES)}" if two
                   else str(rng.choice(BS_VALUES)))
    else:
        case.bs = rng.choice(BS_GARBAGE)
    r = rng.random()
    case.sl = None if r < 0.6 else (rng.randint(1, 40) if r < 0.95
                                     else rng.choice([0, -1, 1000, 10 ** 9]))
    case.opt = rng.choice(MODES)
    case.smem_wrap = rng.random() < 0.8
    case.baseline = rng.random() < 0.15


def seed_case(rng: random.Random, seed: Seed) -> Case:
    case = Case(seed.text, os.path.basename(seed.path), include_dirs=[seed.include_dir])
    if seed.typed:
        case.defines.append(["SB_TYPE", rng.choice(["float", "double"])])
    r = rng.random()
    if r < 0.03:
        case.defines.append(["SB_TYPE", rng.choice(["int", "long double", "float*", "",
                                                    "double double", "unsigned"])])
    elif r < 0.06:
        case.defines.append([rng.choice(["BENCH_RAD", "BENCH_DIM", "N", "T", "A", "t",
                                         "dimsize", "scop", "float"]),
                             rng.choice([None, "0", "1", "2", "4", "-1", "double", "x"])])
    elif r < 0.07:
        case.defines = []  # SB_TYPE missing: #error in common.h
    if rng.random() < 0.05:
        case.name = rng.choice(["a-b.c", "1st.c", "two words.c", "x.y.c", "\u00fcber.c",
                                "kernel.c", "A.c", "main.cu.c", "_.c", "-.c"])
    random_options(rng, case, seed_ndim(seed.text))
    return case


def seed_ndim(text: str) -> int | None:
    span = _scop_span(text)
    write = _WRITE.search(text, span[0]) if span else None
    return len(re.findall(r"\[", write.group("space"))) if write else None


# --------------------------------------------------------------------------- mutations

TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+|\n)
  | (?P<comment>/\*.*?\*/|//[^\n]*)
  | (?P<num>0[xX][0-9a-fA-F.]+(?:[pP][+-]?\d+)?[uUlLfF]*
           |(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFlLuU]*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<str>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<op>\+\+|--|->|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!~<>=]=?|[()\[\]{};,.?:\#])
  | (?P<other>.)
""", re.X | re.S)

NUMBERS = ["0", "1", "2", "3", "4", "5", "8", "16", "-1", "-2", "1000", "65536", "2147483647",
           "2147483648", "4294967296", "9223372036854775807", "99999999999999999999",
           "0x7fffffff", "1e308", "1e309", "1e-320", "0.0", "-0.0", "1.5f", "3.4e38f",
           "3.5e38f", "1e-46f", "0.1", "1.0L", "07", "08", "1u", "1ul", ".5", "5.", "0x1p3",
           "0.5", "2.0f", "1e10", "0", "1", "1", "2"]
OPERATORS = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "&&", "||", "<", ">", "<=",
             ">=", "==", "!=", "=", "+=", "-=", "*=", "/=", "++", "--", "!", "~", "?", ":",
             ",", ";", "(", ")", "[", "]", "{", "}", ".", "->", "#"]
IDENTS = ["A", "B", "t", "i", "j", "k", "x", "y", "z", "n", "T", "N", "dimsize", "timestep",
          "compsize", "sqrt", "sqrtf", "fabs", "exp", "expf", "pow", "sin", "fmax", "min",
          "NAN", "INFINITY", "M_PI", "float", "double", "int", "long", "unsigned", "const",
          "static", "volatile", "restrict", "sizeof", "for", "if", "while", "return",
          "BENCH_RAD", "SB_TYPE", "scop", "endscop", "pragma", "void", "char", "bool", "u",
          "c0", "coef", "alpha", "_Bool", "__int128", "register", "auto", "struct"]
FRAGMENTS = [
    "A[t%2][i][j]", "A[(t+1)%2][i][j]", " + ", " - ", " * ", " / ", "(", ")", "[", "]", "{",
    "}", ";", ",", "0.5f", "2", "-", "sqrt(", "fabs(", "expf(", "(double)", "(float)", "(int)",
    "t", "i", "j", "k", "dimsize", "timestep", "T", "n", "\n#pragma scop\n",
    "\n#pragma endscop\n", "\n#define X 3\n", "\n#undef SB_TYPE\n", "\n#include <math.h>\n",
    "for (int q = 0; q < 4; q++) ", "if (t) ", "A[t%2][i+1][j-1]", "A[t%2][i][j][k]",
    "A[t%2][i+dimsize][j]", "[0]", "[t]", "[t%2]", "[(t+2)%2]", "x", "float w = 1; ",
    "A[(t+1)%2][i][j] = 1;", "%", "<<", "?", ":", "...", "\\\n", "/*", "*/", "//", "\"", "'",
    "#", "##", "__attribute__((unused)) ", "restrict ", "const ", "volatile ", "static ",
    "register ", "long ", "unsigned ", "_Complex ", "__int128 ", "sizeof(float)", "&A", "*A",
    "A->x", "A.x", "1e400", "0x1p-1", "L'x'", "\t", "\f", "\r", "\u00e9", "\u2028", "\x00",
    "\x1a", "\ufeff", "\n#pragma omp parallel for\n", "\n#pragma GCC unroll 4\n", " 0 * ",
    " * 0.0", "-(", "+ A[t%2][i-1][j]", "+ A[t%2][i][j-3]", "+ 1e-3f * A[t%2][i][j+2]",
    "\n#line 1000 \"other.c\"\n", "\n#line 0\n", "\n#if 0\n", "\n#endif\n", "__LINE__",
    "__FILE__", "_Pragma(\"scop\")", "int ", "double ", "float ", "A[t%2]", "A[t&1][i][j]",
    "(t+1)%2", "(t-1)%2", "t%2", "(1+t)%2", "i+j", "-i", "2*i", "i/2", "n-1-i",
]
CHARS = "ijktAT0123456789+-*/%()[]{};,.=<>!&|^~?:#\\\"' \t\n\r\fx_\u00e9\x00\x7f\u200b"


def tokens(text: str) -> list[str]:
    return [m.group(0) for m in TOKEN.finditer(text)]


def _scop_span(text: str) -> tuple[int, int] | None:
    start = text.find("#pragma scop")
    if start < 0:
        return None
    end = text.find("#pragma endscop", start)
    return (start, len(text) if end < 0 else end + len("#pragma endscop"))


def _pick_index(rng: random.Random, toks: list[str], text_span, pred=None) -> int | None:
    """A token index, 80% of the time inside the scop; ``pred`` filters candidates."""
    offsets, pos = [], 0
    for tok in toks:
        offsets.append(pos)
        pos += len(tok)
    candidates = [n for n, tok in enumerate(toks) if (pred is None or pred(tok))]
    if not candidates:
        return None
    if text_span and rng.random() < 0.8:
        inside = [n for n in candidates if text_span[0] <= offsets[n] < text_span[1]]
        if inside:
            candidates = inside
    return rng.choice(candidates)


def _is_kind(kind: str):
    return lambda tok: (m := TOKEN.fullmatch(tok)) is not None and m.lastgroup == kind


def _not_ws(tok: str) -> bool:
    return not tok.isspace()


def mutate_once(rng: random.Random, text: str, donors: list[str]) -> str:
    span = _scop_span(text)
    toks = tokens(text)
    op = rng.choice(["delete", "duplicate", "swap", "number", "number", "operator", "ident",
                     "offset", "offset", "offset", "insert", "insert", "char", "char", "line",
                     "splice", "time", "bound"])
    if op in ("delete", "duplicate", "swap"):
        n = _pick_index(rng, toks, span, _not_ws)
        if n is None:
            return text
        if op == "delete":
            width = 1 if rng.random() < 0.8 else rng.randint(2, 6)
            del toks[n:n + width]
        elif op == "duplicate":
            width = 1 if rng.random() < 0.8 else rng.randint(2, 6)
            toks[n:n] = toks[n:n + width]
        else:
            m = n + 1
            while m < len(toks) and toks[m].isspace():
                m += 1
            if rng.random() < 0.3:
                m = _pick_index(rng, toks, span, _not_ws) or m
            if m < len(toks):
                toks[n], toks[m] = toks[m], toks[n]
        return "".join(toks)
    if op == "number":
        n = _pick_index(rng, toks, span, _is_kind("num"))
        if n is None:
            return text
        old = toks[n]
        if rng.random() < 0.5 and re.fullmatch(r"\d+", old):
            toks[n] = str(max(0, int(old) + rng.choice([-2, -1, 1, 2, 3, 10])))
        else:
            toks[n] = rng.choice(NUMBERS)
        return "".join(toks)
    if op == "operator":
        n = _pick_index(rng, toks, span, _is_kind("op"))
        if n is None:
            return text
        toks[n] = rng.choice(OPERATORS)
        return "".join(toks)
    if op == "ident":
        n = _pick_index(rng, toks, span, _is_kind("id"))
        if n is None:
            return text
        own = [t for t in toks if _is_kind("id")(t)]
        toks[n] = rng.choice(own if rng.random() < 0.5 else IDENTS)
        return "".join(toks)
    if op == "offset":
        subs = [m for m in re.finditer(r"\[([^\[\]\n]*)\]", text)
                if span is None or span[0] <= m.start() < span[1]]
        if not subs:
            return text
        m = rng.choice(subs)
        inner = m.group(1)
        r = rng.random()
        if r < 0.4 and re.search(r"\d+", inner):
            nums = list(re.finditer(r"\d+", inner))
            k = rng.choice(nums)
            new_num = str(rng.choice([0, 1, 2, 3, 4, 5, 8, int(k.group(0)) + 1,
                                      max(0, int(k.group(0)) - 1), 100, 2 ** 31]))
            inner = inner[:k.start()] + new_num + inner[k.end():]
        elif r < 0.6:
            inner = inner + rng.choice(["+1", "-1", " + 2", " - 3", "+0", "-0", "+ 9", "*2",
                                        "+n", "+t", "+i", "-j", "+k", "+ dimsize"])
        elif r < 0.75:
            inner = inner.replace("+", "-") if "+" in inner else inner.replace("-", "+")
        else:
            inner = rng.choice(["i", "j", "k", "t", "t%2", "(t+1)%2", "0", "1", "i-1", "j+1",
                                "k-2", "i+j", "-1", "n", "dimsize-1", "t+1", "(t+3)%2",
                                "(t+1)%2+0", "i+1-1", "2", "(i)", "((j))", "i*1", "1*i"])
        return text[:m.start()] + "[" + inner + "]" + text[m.end():]
    if op == "insert":
        n = _pick_index(rng, toks, span) or 0
        toks.insert(n, rng.choice(FRAGMENTS))
        return "".join(toks)
    if op == "char":
        if not text:
            return rng.choice(CHARS)
        if span and rng.random() < 0.8:
            pos = rng.randrange(span[0], max(span[0] + 1, span[1]))
        else:
            pos = rng.randrange(len(text))
        r = rng.random()
        if r < 0.35:
            return text[:pos] + text[pos + 1:]
        if r < 0.7:
            return text[:pos] + rng.choice(CHARS) + text[pos:]
        return text[:pos] + rng.choice(CHARS) + text[pos + 1:]
    if op == "line":
        lines = text.split("\n")
        if span:
            lo = text.count("\n", 0, span[0])
            hi = text.count("\n", 0, span[1])
            n = rng.randint(lo, hi) if rng.random() < 0.8 else rng.randrange(len(lines))
        else:
            n = rng.randrange(len(lines))
        n = min(n, len(lines) - 1)
        r = rng.random()
        if r < 0.35:
            del lines[n]
        elif r < 0.65:
            lines.insert(n, lines[n])
        elif r < 0.85:
            m = rng.randrange(len(lines))
            lines[n], lines[m] = lines[m], lines[n]
        else:
            lines[n] = lines[n][:rng.randint(0, len(lines[n]))]
        return "\n".join(lines)
    if op == "splice":
        donor = rng.choice(donors)
        dspan = _scop_span(donor)
        dlines = donor.split("\n")
        if dspan and rng.random() < 0.7:
            lo, hi = donor.count("\n", 0, dspan[0]), donor.count("\n", 0, dspan[1])
            piece = dlines[rng.randint(lo, hi)]
        else:
            piece = rng.choice(dlines)
        lines = text.split("\n")
        n = rng.randrange(len(lines) + 1)
        if rng.random() < 0.5 and n < len(lines):
            lines[n] = piece
        else:
            lines.insert(n, piece)
        return "\n".join(lines)
    if op == "time":  # the time subscripts: (t+1)%2 / t%2 forms
        forms = ["t%2", "(t+1)%2", "(t + 1) % 2", "(t+2)%2", "(t-1)%2", "(t+3)%2", "t", "0",
                 "1", "(t)%2", "t%2+0", "(1+t)%2", "(t+1)&1", "t&1", "(t%2)", "t % 2 ", "2%2"]
        subs = [m for m in re.finditer(r"\[\s*\(?\s*t\s*[^\[\]\n]*\]", text)
                if span is None or span[0] <= m.start() < span[1]]
        if not subs:
            return text
        m = rng.choice(subs)
        return text[:m.start()] + "[" + rng.choice(forms) + "]" + text[m.end():]
    # op == "bound": change a loop bound or init of the scop's for loops
    fors = [m for m in re.finditer(r"for\s*\(([^;]*);([^;]*);([^)]*)\)", text)
            if span is None or span[0] <= m.start() < span[1]]
    if not fors:
        return text
    m = rng.choice(fors)
    init, cond, step = m.group(1), m.group(2), m.group(3)
    r = rng.random()
    if r < 0.35:
        cond = cond + rng.choice([" - 1", " + 1", " - 2", " + 5", " * 2", " / 2", " - n",
                                  " + t", " - i", " - 100"])
    elif r < 0.5:
        cond = cond.replace("<", rng.choice(["<=", ">", ">=", "!=", "=="]), 1)
    elif r < 0.7:
        init = re.sub(r"=\s*[^;]*", "= " + rng.choice(["0", "1", "2", "3", "-1", "n",
                                                         "BENCH_RAD + 1", "t", "i", "5"]), init)
    else:
        step = rng.choice(["t++", "i++", "++i", "j += 1", "k = k + 1", "i--", "j += 2", "",
                           "i++, j++", "k++"])
    return text[:m.start()] + f"for ({init};{cond};{step})" + text[m.end():]


_WRITE = re.compile(r"(?P<array>[A-Za-z_]\w*)\s*\[(?P<time>[^\[\]]*\b[A-Za-z_]\w*\b[^\[\]]*)\]"
                    r"(?P<space>(?:\s*\[[^\[\]]*\])+)\s*=[^=]")
_READ = re.compile(r"[A-Za-z_]\w*\s*(?:\[[^\[\]\n]*\]\s*){2,}")
_FLOAT = re.compile(r"(?<![\w.])(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?[fF]?")


def mutate_semantic(rng: random.Random, text: str) -> str:
    """Edits that keep the C well-formed and change the stencil: a new term, other offsets,
    coefficients, operators, a wrapped read."""
    span = _scop_span(text)
    if span is None:
        return text
    body = text[span[0]:span[1]]
    write = _WRITE.search(body)
    op = rng.choice(["term", "term", "arith", "coef", "wrap", "drop"])
    if op == "term" and write:
        array = write.group("array")
        tvar = re.search(r"[A-Za-z_]\w*", write.group("time")).group(0)
        space = re.findall(r"\[([^\[\]]*)\]", write.group("space"))
        idx = []
        for sub in space:
            var = re.search(r"[A-Za-z_]\w*", sub)
            name = var.group(0) if var else "0"
            d = rng.choice([0, 0, 0, 1, -1, 2, -2, 3, -3, 4, -4, 5])
            idx.append(name if d == 0 else f"{name}{d:+d}")
        tsub = rng.choice([f"{tvar}%2", f"{tvar} % 2", f"({tvar}+2)%2", f"({tvar})%2"])
        coef = rng.choice(["0.1f", "0.25", "2", "1e-3f", "-0.5f", "3.0", "(float)0.3", "c0"])
        read = f"{array}[{tsub}]" + "".join(f"[{e}]" for e in idx)
        term = rng.choice([f" + {coef} * {read}", f" - {read}", f" + {read} * {read}",
                           f" + {read} / {coef}", f" * {read}", f" + sqrtf({read})",
                           f" + ({read} - {read})", f" + fabs({read})"])
        end = body.find(";", write.end())
        if end < 0:
            return text
        pos = span[0] + end
        return text[:pos] + term + text[pos:]
    if op == "arith":
        stmt = body[write.end():] if write else body
        ops = [m for m in re.finditer(r"(?<![+\-*/=<>!&|%])[+\-*/](?![+\-*/=])", stmt)]
        if not ops:
            return text
        m = rng.choice(ops)
        base = span[0] + (write.end() if write else 0)
        return (text[:base + m.start()] + rng.choice("+-*/") + text[base + m.end():])
    if op == "coef":
        nums = list(_FLOAT.finditer(body))
        if not nums:
            return text
        m = rng.choice(nums)
        new = rng.choice(["0.0f", "1.0f", "0.5", "2.0", "1e-30f", "1e30f", "3.4e38f", "1e300",
                          "-1.0f", "0.333333333333333314829616256247", "1e-45f", "0x1p-126f",
                          "1.0L", "5e-324", "(float)1", "(double)0.5f"])
        return text[:span[0] + m.start()] + new + text[span[0] + m.end():]
    if op == "wrap":
        start = write.end() if write else 0
        reads = [m for m in _READ.finditer(body, start)]
        if not reads:
            return text
        m = rng.choice(reads)
        f = rng.choice(["sqrt(", "sqrtf(", "fabs(", "-(", "(double)(", "(float)(", "exp(",
                        "cos(", "fmax(1.0f, ", "pow(2.0, ", "(", "(int)(", "fmin(", "floor("])
        close = ", 0.5)" if f == "fmin(" else ")"
        a, b = span[0] + m.start(), span[0] + m.end()
        return text[:a] + f + text[a:b].rstrip() + close + text[b:]
    # drop: remove one read term "+ c * A[..]..."
    terms = list(re.finditer(r"[+\-]\s*(?:[\w.]+\s*\*\s*)?[A-Za-z_]\w*\s*(?:\[[^\[\]\n]*\]\s*){2,}",
                             body[write.end():] if write else body))
    if not terms:
        return text
    m = rng.choice(terms)
    base = span[0] + (write.end() if write else 0)
    return text[:base + m.start()] + text[base + m.end():]


def mutate(rng: random.Random, text: str, donors: list[str]) -> str:
    semantic = rng.random() < 0.6
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 4, 6])):
        if semantic and rng.random() < 0.85:
            text = mutate_semantic(rng, text)
        else:
            text = mutate_once(rng, text, donors)
    return text


def random_case(rng: random.Random, seeds: list[Seed]) -> Case:
    seed = rng.choice(seeds)
    case = seed_case(rng, seed)
    if rng.random() < 0.9:
        case.text = mutate(rng, seed.text, [s.text for s in seeds])
    return case


# --------------------------------------------------------------------------- running


class Hang(Exception):
    pass


@dataclass
class Outcome:
    kind: str  # "ok", "rejected", "bug"
    signature: str = ""
    summary: str = ""
    trace: str = ""
    exit_status: int | None = None


_MESSAGE_JUNK = re.compile(r"Traceback|<pycparser|<an5dpy|object at 0x|\bNone\b: error")
_LOCATED = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): error: \S")


def _signature(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "an5dpy" in f.filename] or frames
    where = (f"{os.path.relpath(ours[-1].filename, REPO)}:{ours[-1].lineno} in {ours[-1].name}"
             if ours else "?")
    return f"{type(exc).__name__} @ {where}"


def check_message(exc: An5dError, src: str) -> str | None:
    """What is wrong with an exit-2 error message (None: nothing)."""
    text = str(exc)
    if _MESSAGE_JUNK.search(text):
        return f"message shows Python internals: {text[:200]!r}"
    if isinstance(exc, UnsupportedInput):
        if exc.coord is None:
            if not text.startswith("error: "):
                return f"coordinate-less message without 'error: ': {text[:200]!r}"
            return None
        if not _LOCATED.match(text):
            return f"located message not FILE:LINE:COL: error: {text[:200]!r}"
        # Line 0 is possible: the input's own `#line 0` / `# 0` directives number its lines.
        if exc.coord.line < 0 or exc.coord.column < 1:
            return f"coordinate {exc.coord} is out of range"
    elif not text.startswith("error: "):
        return f"usage message without 'error: ': {text[:200]!r}"
    return None


def run_case(case: Case, workdir: str, timeout: float = 20.0) -> Outcome:
    """Run the pipeline on ``case`` in ``workdir`` (emptied first)."""
    for entry in os.listdir(workdir):
        p = os.path.join(workdir, entry)
        shutil.rmtree(p) if os.path.isdir(p) else os.unlink(p)
    src = os.path.join(workdir, case.name)
    with open(src, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
        f.write(case.text)

    def on_alarm(signum, frame):
        raise Hang(f"no result after {timeout} s")

    old = signal.signal(signal.SIGALRM, on_alarm) if timeout else None
    if timeout:
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        result = driver.translate(src, case.options())
        show.format_program(result.program)
        show.format_analysis(result.info)
        show.format_plan(result.plan)
        format_schedule(result.schedule)
        json.dumps(result.info.to_json())
        out = os.path.join(workdir, "out")
        written = driver.write_outputs(result.outputs, out)
        names = sorted(p.name for p in written)
        stem = Path(case.name).stem
        expected = sorted([f"{stem}_host.cu", f"{stem}_kernel.cu", f"{stem}_kernel.hu"])
        if names != expected or sorted(os.listdir(out)) != expected:
            return Outcome("bug", "outputs: wrong file set",
                           f"wrote {sorted(os.listdir(out))}, expected {expected}")
        # The scop's pragma is gone (the text may remain in comments, verbatim).
        if result.outputs[f"{stem}_host.cu"].count("#pragma scop") >= \
                case.text.count("#pragma scop"):
            return Outcome("bug", "outputs: host file keeps '#pragma scop'", "")
        if case.sim_seed is not None:
            return run_sim(case, src, result)
        return Outcome("ok")
    except An5dError as exc:
        if exc.exit_status != EXIT_BAD_INPUT:
            return Outcome("bug", _signature(exc), f"{type(exc).__name__}: {exc}"[:500],
                           traceback.format_exc(), exc.exit_status)
        problem = check_message(exc, src)
        if problem:
            return Outcome("bug", f"message: {_signature(exc)}", problem, traceback.format_exc(),
                           exc.exit_status)
        return Outcome("rejected", exit_status=exc.exit_status, summary=str(exc)[:300])
    except Hang as exc:
        return Outcome("bug", "hang", str(exc), traceback.format_exc())
    except RecursionError as exc:
        return Outcome("bug", _signature(exc), f"RecursionError: {exc}"[:300],
                       traceback.format_exc()[-6000:])
    except Exception as exc:  # noqa: BLE001 - the property under test
        return Outcome("bug", _signature(exc), f"{type(exc).__name__}: {exc}"[:500],
                       traceback.format_exc())
    finally:
        if timeout:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


def sim_params(program, seed: int) -> dict[str, str]:
    """Small random values for the free parameters: few steps, small grids."""
    from an5dpy.ir import is_floating
    rng = random.Random(seed)
    steps = set(program.time_loop.upper.variables) | set(program.time_loop.lower.variables)
    small = 12 if len(program.space_loops) == 3 else 40
    values = {}
    for p in program.params:
        if p.value is not None or p.definition is not None:
            continue
        if is_floating(p.ctype):
            values[p.name] = rng.choice(["0.5", "1", "0.25", "-1.5", "3"])
        elif p.name in steps:
            values[p.name] = str(rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 9]))
        else:
            values[p.name] = str(rng.randint(0, small))
    return values


def run_sim(case: Case, src: str, result) -> Outcome:
    """The translated schedule, run by the simulator, must agree with gcc's loop nest."""
    from an5dpy.check.verify import verify_file
    params = sim_params(result.program, case.sim_seed)
    report = verify_file(src, case.options(), backend="sim", params=params, seed=case.sim_seed)
    c = report.comparison
    if not c.passed:
        kind = ("non-finite" if not (c.max_abs < float("inf")) else
                "rounding" if c.max_rel < 1e-3 else "wrong values")
        return Outcome("bug", f"sim mismatch ({result.plan.mode.value}, {kind})",
                       " / ".join(report.lines()) + f" / params {params}", "", 1)
    return Outcome("ok")


# --------------------------------------------------------------------------- reduction


def reduce_case(case: Case, signature: str, workdir: str, budget: float = 60.0) -> Case:
    """Shrink ``case.text`` (lines, then tokens) while it still fails with ``signature``."""
    deadline = time.monotonic() + budget

    def still(text: str) -> bool:
        if time.monotonic() > deadline:
            return False
        trial = Case(**{**asdict(case), "text": text})
        out = run_case(trial, workdir, timeout=120 if case.sim_seed is not None else 20)
        return out.kind == "bug" and out.signature == signature

    text = case.text
    for unit in ("line", "token"):
        pieces = text.split("\n") if unit == "line" else tokens(text)
        joiner = "\n" if unit == "line" else ""
        chunk = max(1, len(pieces) // 2)
        while chunk >= 1 and time.monotonic() < deadline:
            n, changed = 0, False
            while n < len(pieces) and time.monotonic() < deadline:
                trial = pieces[:n] + pieces[n + chunk:]
                if trial and still(joiner.join(trial)):
                    pieces, changed = trial, True
                else:
                    n += chunk
            if not changed:
                chunk //= 2
        text = joiner.join(pieces)
    return Case(**{**asdict(case), "text": text})


# --------------------------------------------------------------------------- regression files


def regression_text(case: Case, **extra) -> str:
    return f"/* fuzz: {json.dumps(case.header(**extra), ensure_ascii=True)} */\n" + case.text


def read_regression(path: str) -> tuple[Case, dict]:
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
        text = f.read()
    m = HEADER.match(text)
    assert m, f"{path}: first line must be /* fuzz: {{JSON}} */"
    data = json.loads(m.group(1))
    meta = {k: data.pop(k) for k in list(data) if k not in Case.__dataclass_fields__}
    return Case(text=text, **data), meta


def regression_files() -> list[str]:
    return sorted(glob.glob(str(REGRESSIONS / "*.c")))


# --------------------------------------------------------------------------- tests


def _ids(path: str) -> str:
    return os.path.basename(path)[:-2]


def _regression_params():
    params = []
    for path in regression_files():
        marks = []
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            m = HEADER.match(f.readline() + "\n")
        if m and json.loads(m.group(1)).get("open"):
            marks.append(pytest.mark.xfail(strict=True,
                                           reason=json.loads(m.group(1))["open"]))
        params.append(pytest.param(path, marks=marks, id=_ids(path)))
    return params


@pytest.fixture
def workdir(tmp_path):
    d = tmp_path / "work"
    d.mkdir()
    return str(d)


@pytest.mark.parametrize("path", _regression_params())
def test_regression(path, workdir):
    case, _ = read_regression(path)
    out = run_case(case, workdir, timeout=120 if case.sim_seed is not None else 20)
    assert out.kind != "bug", f"{out.signature}: {out.summary}\n{out.trace}"


def test_mutator_makes_changes():
    rng = random.Random(5)
    seeds = load_seeds()
    assert len(seeds) >= 40
    donors = [s.text for s in seeds]
    changed = sum(mutate(rng, seeds[0].text, donors) != seeds[0].text for _ in range(50))
    assert changed >= 40


def test_unmutated_seeds_translate(workdir):
    """Every paper benchmark and form translates (bt 2: box3d4r's radius 4 leaves no
    compute region in a 32-thread block at the default bt 4); the hand-written programs
    of c_inputs/ are seeds too, and tests/test_c_inputs_programs.py checks them."""
    paper = {f"c_inputs/{name}.c" for name in PAPER_BENCHMARKS}
    for seed in load_seeds():
        if not (seed.path in paper or seed.path.startswith("tests/data/forms")):
            continue
        case = Case(seed.text, os.path.basename(seed.path), include_dirs=[seed.include_dir],
                    defines=[["SB_TYPE", "float"]] if seed.typed else [], bt=2)
        out = run_case(case, workdir)
        assert out.kind == "ok", f"{seed.path}: {out.kind} {out.signature} {out.summary}"


def test_seeded_fuzz_budget(workdir):
    """A short fuzz run (AN5D_FUZZ_SECONDS, default 10): no input may break the property."""
    budget = float(os.environ.get("AN5D_FUZZ_SECONDS", "10"))
    rng = random.Random(int(os.environ.get("AN5D_FUZZ_SEED", "20240611")))
    seeds = load_seeds()
    deadline = time.monotonic() + budget
    tried, failures = 0, []
    while time.monotonic() < deadline:
        case = random_case(rng, seeds)
        out = run_case(case, workdir)
        tried += 1
        if out.kind == "bug":
            failures.append(f"{out.signature}: {out.summary}\n"
                            + regression_text(case)[:2000])
    assert tried > 10
    # An input that breaks the property: save the text shown (its first line holds the
    # options) as tests/data/fuzz_pipeline/NAME.c, with "open": "why" until it is fixed.
    known = _open_signatures()
    new = [f for f in failures if f.split(":", 1)[0] not in known]
    assert not new, f"{len(new)} of {tried} inputs broke the property:\n" + "\n\n".join(new[:3])


def _open_signatures() -> set[str]:
    """Signatures of the regression files still marked open (bugs not yet fixed)."""
    sigs = set()
    for path in regression_files():
        _, meta = read_regression(path)
        if meta.get("open") and meta.get("signature"):
            sigs.add(meta["signature"])
    return sigs


# --------------------------------------------------------------------------- campaign


def campaign(minutes: float, seed: int, log_dir: str, reduce_budget: float,
             sim_rate: float = 0.0) -> dict:
    rng = random.Random(seed)
    seeds = load_seeds()
    os.makedirs(log_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="an5d-fuzz-")
    rwork = tempfile.mkdtemp(prefix="an5d-fuzz-reduce-")
    stats = {"seed": seed, "tried": 0, "ok": 0, "rejected": 0, "bug": 0, "signatures": {},
             "started": time.time()}
    deadline = time.monotonic() + minutes * 60
    last_report = 0.0
    while time.monotonic() < deadline:
        case = random_case(rng, seeds)
        if rng.random() < sim_rate:
            case.sim_seed = rng.randrange(10 ** 6)
        out = run_case(case, work, timeout=120 if case.sim_seed is not None else 20)
        stats["tried"] += 1
        stats[out.kind] += 1
        if out.kind == "bug":
            sig = out.signature
            with open(os.path.join(log_dir, f"all-{seed}.jsonl"), "a") as f:
                f.write(json.dumps({"signature": sig, "summary": out.summary,
                                    "case": asdict(case)}) + "\n")
            entry = stats["signatures"].setdefault(sig, {"count": 0, "summary": out.summary})
            entry["count"] += 1
            if entry["count"] == 1:
                small = reduce_case(case, sig, rwork, reduce_budget)
                again = run_case(small, rwork)
                tag = f"{len(stats['signatures']):03d}"
                with open(os.path.join(log_dir, f"find-{seed}-{tag}.c"), "w",
                          encoding="utf-8", errors="surrogateescape", newline="") as f:
                    f.write(regression_text(small, signature=sig, summary=again.summary))
                with open(os.path.join(log_dir, f"find-{seed}-{tag}.orig.c"), "w",
                          encoding="utf-8", errors="surrogateescape", newline="") as f:
                    f.write(regression_text(case, signature=sig))
                with open(os.path.join(log_dir, f"find-{seed}-{tag}.txt"), "w") as f:
                    f.write(f"{sig}\n{out.summary}\n\n{out.trace}\n\nreduced:\n"
                            f"{again.signature}\n{again.summary}\n{again.trace}")
                print(f"[{seed}] NEW {tag} {sig}: {out.summary[:160]}", flush=True)
        if time.monotonic() - last_report > 60:
            last_report = time.monotonic()
            stats["elapsed"] = time.time() - stats["started"]
            with open(os.path.join(log_dir, f"stats-{seed}.json"), "w") as f:
                json.dump(stats, f, indent=1)
            print(f"[{seed}] {stats['tried']} tried, {stats['ok']} ok, {stats['rejected']} "
                  f"rejected, {stats['bug']} bugs ({len(stats['signatures'])} kinds)", flush=True)
    stats["elapsed"] = time.time() - stats["started"]
    with open(os.path.join(log_dir, f"stats-{seed}.json"), "w") as f:
        json.dump(stats, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(rwork, ignore_errors=True)
    return stats


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="fuzz the an5dpy pipeline")
    p.add_argument("--minutes", type=float, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log", default="fuzz-log")
    p.add_argument("--reduce-seconds", type=float, default=90)
    p.add_argument("--sim", type=float, default=0.0, metavar="RATE",
                   help="fraction of cases also verified on the simulator against gcc")
    args = p.parse_args(argv)
    stats = campaign(args.minutes, args.seed, args.log, args.reduce_seconds, args.sim)
    print(json.dumps({k: v for k, v in stats.items() if k != "signatures"}))
    for sig, entry in stats["signatures"].items():
        print(f"{entry['count']:6d}  {sig}: {entry['summary'][:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
