"""Double divisions by a launch-fixed divisor (ConstantTable.divide, templates/division.cu.j2).

The printing: which divisions take ``an5d_ddiv`` and what each kernel declares. The proof's
premise, in nvcc's own output (no GPU): ptxas expands ``x / c`` into a reciprocal of c and a
corrected quotient, returned where two range checks pass; ``an5d_ddiv`` after
``an5d_divisor_of`` computes that same quotient from the same instructions. The SASS of
both is evaluated symbolically (registers hold expressions of the kernel's parameters and
loads), and the quotient ptxas's division returns on its fast path must be among the values
the hoisted form computes, with the checks the template's constants copy, for every GPU
architecture this nvcc builds for (sm_75 to sm_120). The GPU test
(tests/gpu/test_division_gpu.py) compares the results bit for bit.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from fractions import Fraction

import numpy as np
import pytest

from an5dpy.cuda.macros import ConstantTable, quotient_floor
from an5dpy.cuda.render import environment
from an5dpy.cuda.runtime import nvcc_path
from an5dpy.driver import Options, translate
from an5dpy.ir import Binary, Cast, Const, Read, Scalar

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# --------------------------------------------------------------------------- printing


def test_only_double_divisions_by_a_divisor_without_reads_are_hoisted():
    table = ConstantTable("k")
    cell = Read("double", None, (0, 0), 1)
    by_literal = Binary("double", None, "/", cell, Cast("double", None, Const("float", None,
                                                                              11.7, "11.7f")))
    by_scalar = Binary("double", None, "/", cell, Scalar("double", None, "h"))
    by_cell = Binary("double", None, "/", Const("double", None, 1.0, "1.0"), cell)
    in_float = Binary("float", None, "/", cell, Const("float", None, 3.0, "3.0f"))
    assert table.divide(by_literal, "x", "(double)(11.7f)") == "an5d_ddiv(x, an5d_div0)"
    assert table.divide(by_scalar, "y", "h") == "an5d_ddiv(y, an5d_div1)"
    assert table.divide(by_literal, "z", "(double)(11.7f)") == "an5d_ddiv(z, an5d_div0)"
    assert table.divide(by_cell, "1.0", "x") is None
    assert table.divide(in_float, "x", "3.0f") is None
    # a literal's reciprocal, rounded to nearest, joins the constant table; its quotient
    # floor: 11.7 is in [2^3, 2^4), so quotients of at least 2^(57 - 1026) = 2^-969
    eleven_point_seven = float(np.float32(11.7))
    assert table.values == (repr(float(Fraction(1) / Fraction(eleven_point_seven))),)
    assert table.divisor_declarations == (
        "const an5d_divisor an5d_div0 = an5d_divisor_of((double)(11.7f), k[0], 0x03600001u);",
        "const an5d_divisor an5d_div1 = "
        "an5d_divisor_of(h, an5d_reciprocal(h), an5d_quotient_floor(h));")


@pytest.mark.parametrize("value", [1.0, 11.7, 2.0 ** -1022, 2.0 ** 1016, 3e-300, 0.75])
def test_the_quotient_floor_keeps_quotients_whose_dividend_ptxas_serves(value):
    """|q| >= 2^-966 / 2^e for |c| in [2^e, 2^(e+1)); never below 0x00100001."""
    floor = quotient_floor(value)
    exponent = math.frexp(value)[1] - 1
    least = math.ldexp(1.0, max(-966 - exponent, -1022))
    assert floor & 0xfff00000 == (math.frexp(least)[1] + 1022) << 20 and floor & 1
    assert floor >= 0x00100001


@pytest.mark.parametrize("name, opt", [("j2d9pt", "nondiag"), ("j2d9pt-gol", "assoc")])
def test_kernels_of_a_double_stencil_declare_its_divisor_and_divide_through_it(name, opt):
    path = os.path.join(REPO, "c_inputs", name + ".c")
    out = translate(path, Options(bt=2, bs="64", sl=16, opt=opt,
                                  defines=(("SB_TYPE", "double"),)))
    kernel = out.outputs[f"{name}_kernel.cu"]
    kernels = kernel.count("extern \"C\" __global__ void __launch_bounds__")
    assert kernels >= 2
    assert kernel.count("const an5d_divisor an5d_div0 = an5d_divisor_of(") == kernels
    assert "an5d_ddiv(" in kernel and "an5d_div1" not in kernel
    assert "struct an5d_divisor" in kernel
    floats = translate(path, Options(bt=2, bs="64", sl=16, opt=opt,
                                     defines=(("SB_TYPE", "float"),)))
    assert "an5d_div" not in floats.outputs[f"{name}_kernel.cu"]


def test_a_program_without_division_gets_no_division_code():
    out = translate(os.path.join(REPO, "c_inputs", "star2d1r.c"),
                    Options(bt=2, bs="64", sl=16, defines=(("SB_TYPE", "double"),)))
    assert "an5d_div" not in out.outputs["star2d1r_kernel.cu"]


# --------------------------------------------------------------------------- nvcc's output

PROBE = r"""
extern "C" __global__ void plain(const double *x, double *o, double c)
{ o[threadIdx.x] = x[threadIdx.x] / c; }
extern "C" __global__ void hoisted(const double *x, double *o, double c)
{ o[threadIdx.x] = an5d_ddiv(x[threadIdx.x],
                                 an5d_divisor_of(c, an5d_reciprocal(c), an5d_quotient_floor(c))); }
"""

SASS_LINE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)\s*([^;]*);")
#: ``c[0x0][0x220]``: a word of the kernel's parameters (on sm_90 ``c``, after x and o)
PARAM = re.compile(r"^c\[0x0\]\[(0x[0-9a-f]+)\]$")
#: 1 as an fp16 pair's low half, the low word ``MUFU.RCP64H``'s seed takes
ONE_AS_HALVES = "5.9604644775390625e-08"


def sass_of(function: str, cubin: str) -> list[tuple[str, str, list[str]]]:
    """(predicate, opcode, operands) of a function's instructions, in order."""
    text = subprocess.run([shutil.which("cuobjdump"), "-sass", "-fun", function, cubin],
                          capture_output=True, text=True, check=True).stdout
    out = []
    for line in text.splitlines():
        if m := SASS_LINE.match(line):
            out.append((m.group(1) or "", m.group(2),
                        [w.strip() for w in m.group(3).split(",")] if m.group(3) else []))
    return out


class Symbolic:
    """Registers as expressions of the parameters and loads, evaluated in program order.

    A 32-bit register holds a word: ``("word", offset)`` of a parameter, ``("lo"|"hi",
    value)`` of a double value, ``("imm", n)``, or an opaque ``("op", i)``. A double operand
    reads a register pair; products are ordered so that operand order does not matter."""

    def __init__(self):
        self.regs: dict[str, tuple] = {"RZ": ("imm", 0), "URZ": ("imm", 0)}
        self.values: list[tuple] = []  # every double DFMA or DMUL computed
        self.checks: list[tuple] = []  # (constant, the word it is compared with)
        self.seeds: list[tuple] = []  # the words reciprocal seeds were taken of

    @staticmethod
    def pair(reg: str) -> tuple[str, str]:
        prefix, n = re.match(r"(U?R)(\d+)", reg).groups()
        return reg, f"{prefix}{int(n) + 1}"

    def word(self, operand: str) -> tuple:
        name = operand.replace("|", "").lstrip("-").split(".")[0]
        if m := PARAM.match(name):
            return ("word", int(m.group(1), 16))
        return self.regs.get(name, ("unknown", name))

    def double(self, operand: str) -> tuple:
        negated = operand.startswith("-")
        name = operand.lstrip("-").split(".")[0]
        if re.fullmatch(r"[0-9.e+-]+", name):
            value = ("double", float(name))
        elif m := PARAM.match(name):
            value = ("param", int(m.group(1), 16))
        else:
            lo, hi = (self.regs.get(r, ("unknown", r)) for r in self.pair(name))
            if lo[0] == "lo" and hi[0] == "hi" and lo[1] == hi[1]:
                value = lo[1]
            elif lo[0] == "word" and hi == ("word", lo[1] + 4):
                value = ("param", lo[1])
            else:
                value = ("pair", lo, hi)
        return ("neg", value) if negated else value

    def set_double(self, reg: str, value: tuple) -> None:
        lo, hi = self.pair(reg)
        self.regs[lo], self.regs[hi] = ("lo", value), ("hi", value)
        self.values.append(value)

    def run(self, code) -> "Symbolic":
        for i, (pred, op, args) in enumerate(code):
            base = op.split(".")[0]
            if op.startswith(("LDC.64", "ULDC.64", "LDCU.64")) and PARAM.match(args[1]):
                lo, hi = self.pair(args[0])
                offset = int(PARAM.match(args[1]).group(1), 16)
                self.regs[lo], self.regs[hi] = ("word", offset), ("word", offset + 4)
            elif base in ("LDC", "ULDC", "LDCU") and PARAM.match(args[1]):
                self.regs[args[0]] = self.word(args[1])
            elif base == "LDG":
                self.set_double(args[0], ("load",))
            elif op == "MUFU.RCP64H":
                self.seeds.append(self.word(args[1]))
                self.regs[args[0]] = ("seed", self.seeds[-1])
            elif op == "IMAD.MOV.U32" and args[1:3] == ["RZ", "RZ"]:
                self.regs[args[0]] = (("imm", int(args[3], 16)) if args[3].startswith("0x")
                                      else self.word(args[3]))
            elif base == "HFMA2" and args[1:4] == ["-RZ", "RZ", "0"] and args[4] == ONE_AS_HALVES:
                self.regs[args[0]] = ("imm", 1)
            elif op == "MOV" and re.fullmatch(r"0x[0-9a-f]+", args[1]):
                self.regs[args[0]] = ("imm", int(args[1], 16))
            elif op == "DFMA":
                a, b, c = (self.double(x) for x in args[1:4])
                self.set_double(args[0], ("fma", *product(a, b), c))
            elif op == "DMUL":
                a, b = (self.double(x) for x in args[1:3])
                self.set_double(args[0], ("mul", *product(a, b)))
            elif op == "FSEL" and {args[2], args[1]} & {"RZ", "+QNAN"}:
                # a select against a constant (the reciprocal of a divisor not served is a
                # NaN): the served divisor's value flows through
                kept = args[1] if args[2] in ("RZ", "+QNAN") else args[2]
                self.regs[args[0]] = self.regs.get(kept, ("unknown", kept))
            elif op == "FFMA" and args[1] == "RZ":
                self.regs[args[0]] = ("zero_times_plus", self.word(args[2]), self.word(args[3]))
            elif base == "FSETP":
                self.checks.append((op, args[3].split(",")[0], self.word(args[2])))
            elif args and not pred and re.fullmatch(r"U?R\d+", args[0]):
                self.regs[args[0]] = ("op", i)
                if op.endswith(".64") or op.startswith(("DADD", "IMAD.WIDE")):
                    self.regs[self.pair(args[0])[1]] = ("op", i)
        return self


def product(a: tuple, b: tuple) -> tuple:
    """A product's sign and its factors in a fixed order (a * b = b * a, -a * b = -(a * b))."""
    sign = (a[0] == "neg") != (b[0] == "neg")
    a, b = (x[1] if x[0] == "neg" else x for x in (a, b))
    return (sign, *sorted((a, b), key=repr))


#: GPU generations whose ptxas the argument is checked against (those nvcc 13 builds for)
ARCHITECTURES = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")


@pytest.fixture(scope="module", params=ARCHITECTURES)
def cubin(request, tmp_path_factory):
    if nvcc_path() is None or shutil.which("cuobjdump") is None:
        pytest.skip("nvcc and cuobjdump are needed to read ptxas's division")
    folder = tmp_path_factory.mktemp("division")
    source = folder / "probe.cu"
    source.write_text(environment().get_template("division.cu.j2").render() + PROBE)
    target = folder / "probe.cubin"
    built = subprocess.run([nvcc_path(), f"-arch={request.param}", "-cubin", "-O3",
                            "--use_fast_math", "-o", str(target), str(source)],
                           capture_output=True, text=True)
    if built.returncode and "Unsupported gpu architecture" in built.stderr:
        pytest.skip(f"this nvcc does not build for {request.param}")
    assert built.returncode == 0, built.stderr
    return str(target)


def test_nvcc_divides_as_the_template_says_and_the_hoisted_form_computes_the_same_quotient(
        cubin):
    plain_code = sass_of("plain", cubin)
    plain = Symbolic().run(plain_code[:next(i for i, (_, op, _) in enumerate(plain_code)
                                            if op.startswith("CALL"))])
    # c's place among the parameters (after x and o) depends on the architecture: read it
    # from the reciprocal seed's operand, c's high word
    high = plain.seeds[0]
    c, x, one = ("param", high[1] - 4), ("load",), ("double", 1.0)
    seed = ("pair", ("imm", 1), ("seed", high))  # the high word's seed, low word 1
    e = ("fma", *product(seed, ("neg", c)), one)
    e = ("fma", *product(e, e), e)
    y = ("fma", *product(seed, e), seed)
    e = ("fma", *product(y, ("neg", c)), one)
    y = ("fma", *product(y, e), y)
    q = ("mul", *product(x, y))
    quotient = ("fma", *product(y, ("fma", *product(q, ("neg", c)), x)), q)
    assert plain.values[-1] == quotient, "ptxas no longer divides as division.cu.j2 says"
    # returned where |x|'s high word >= 0x03600000 and |0 * c_hi + q_hi| > 0x00100000, as
    # floats: the constants the template's check is derived from
    assert ("FSETP.GEU.AND", "6.5827683646048100446e-37", ("hi", x)) in plain.checks
    assert ("FSETP.GT.AND", "1.469367938527859385e-39",
            ("zero_times_plus", high, ("hi", quotient))) in plain.checks
    # the kernel's own code: the slow path's division, a subroutine after its EXIT, would
    # compute ptxas's quotient too
    hoisted_code = sass_of("hoisted", cubin)
    hoisted = Symbolic().run(hoisted_code[:next(i for i, (_, op, _) in enumerate(hoisted_code)
                                                if op == "EXIT")])
    assert quotient in hoisted.values
