"""Typed expressions: C's usual arithmetic conversions made explicit, literal types and
values exactly as gcc reads them."""

from __future__ import annotations

import struct
import subprocess

import pytest

from an5dpy.frontend import literals, read_program_text
from an5dpy.ir import Access, Affine, Binary, Call, Cast, Const, Scalar, Unary

NEST = """{prelude}
void f(int n, int T, {elem} A[2][n][n], float x, double d, short s, unsigned u, long l,
       char c)
{{
#pragma scop
  for (int t = 0; t < T; t++)
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[(t+1)%2][i][j] = {value};
#pragma endscop
}}
"""


def update(value: str, elem: str = "float", prelude: str = "#include <math.h>"):
    """The assigned value's tree (with the final conversion to the element type)."""
    program = read_program_text(NEST.format(prelude=prelude, elem=elem, value=value), "e.c")
    return program.statements[0].value


def A(ctype: str = "float") -> Access:
    return Access(ctype, array="A", time=Affine.var("t"), indices=(Affine.var("i"),
                                                                   Affine.var("j")))


def implicit(ctype, operand):
    return Cast(ctype, operand=operand, implicit=True)


def test_float_scalar_times_double_literal_is_a_double_multiply():
    value = update("0.25 * x")
    assert value == implicit("float", Binary(
        "double", op="*", lhs=Const("double", value=0.25, text="0.25"),
        rhs=implicit("double", Scalar("float", name="x"))))


def test_float_literal_over_integer_product():
    value = update("1.0f / (2 * 4)")
    product = Binary("int", op="*", lhs=Const("int", value=2, text="2"),
                     rhs=Const("int", value=4, text="4"))
    assert value == Binary("float", op="/", lhs=Const("float", value=1.0, text="1.0f"),
                           rhs=implicit("float", product))


def test_sqrt_of_float_converts_to_double_and_back():
    value = update("sqrt(x)")
    assert value == implicit("float", Call("double", func="sqrt",
                                           args=(implicit("double", Scalar("float", name="x")),)))


def test_sqrtf_of_int_literal_and_fmaf():
    value = update("sqrtf(2) + fmaf(x, x, 1)")
    assert value.lhs == Call("float", func="sqrtf",
                             args=(implicit("float", Const("int", value=2, text="2")),))
    assert value.rhs.args[2] == implicit("float", Const("int", value=1, text="1"))


def test_unary_minus_and_plus():
    value = update("-A[t%2][i][j] + +x")
    assert value == Binary("float", op="+", lhs=Unary("float", op="-", operand=A()),
                           rhs=Unary("float", op="+", operand=Scalar("float", name="x")))


def test_unary_minus_promotes_small_integers():
    value = update("-s * A[t%2][i][j]")
    assert value.lhs == implicit("float", Unary("int", op="-",
                                                operand=implicit("int", Scalar("short", name="s"))))


def test_explicit_casts_are_not_implicit():
    value = update("(double)x * (float)d")
    assert value == implicit("float", Binary(
        "double", op="*", lhs=Cast("double", operand=Scalar("float", name="x"), implicit=False),
        rhs=implicit("double", Cast("float", operand=Scalar("double", name="d"),
                                    implicit=False))))


def test_cast_of_a_literal_keeps_both_types():
    value = update("(double)0.125f * A[t%2][i][j]", elem="double")
    assert value.lhs == Cast("double", operand=Const("float", value=0.125, text="0.125f"),
                             implicit=False)


def test_integer_conversions():
    # unsigned + int -> unsigned int; long + unsigned int -> long; char promotes to int
    value = update("(u + 1) * A[t%2][i][j] + (l + u) + (c + c)")
    sum_u = value.lhs.lhs.lhs.operand
    assert sum_u == Binary("unsigned int", op="+", lhs=Scalar("unsigned int", name="u"),
                           rhs=implicit("unsigned int", Const("int", value=1, text="1")))
    sum_l = value.lhs.rhs.operand
    assert sum_l == Binary("long", op="+", lhs=Scalar("long", name="l"),
                           rhs=implicit("long", Scalar("unsigned int", name="u")))
    sum_c = value.rhs.operand
    assert sum_c == Binary("int", op="+", lhs=implicit("int", Scalar("char", name="c")),
                           rhs=implicit("int", Scalar("char", name="c")))


def test_integer_modulo():
    value = update("A[t%2][i][j] / (n % 3)")
    assert value.rhs == implicit("float", Binary("int", op="%", lhs=Scalar("int", name="n"),
                                                 rhs=Const("int", value=3, text="3")))


def test_double_expression_assigned_to_float_array():
    value = update("A[t%2][i][j] * 0.5")
    assert value.ctype == "float" and isinstance(value, Cast) and value.implicit
    assert value.operand.ctype == "double"


def test_no_conversion_when_types_match():
    value = update("A[t%2][i][j] * 0.5", elem="double")
    assert isinstance(value, Binary) and value.ctype == "double"


def test_scalars_become_params_in_order_of_first_use():
    program = read_program_text(NEST.format(prelude="", elem="float",
                                            value="d * A[t%2][i][j] + x + d"), "p.c")
    assert [p.name for p in program.params] == ["T", "n", "d", "x"]
    assert [p.ctype for p in program.params] == ["int", "int", "double", "float"]


def test_parameter_types_through_standard_typedefs():
    program = read_program_text(
        "#include <stddef.h>\n#include <stdint.h>\n"
        "void f(size_t n, int64_t T, float A[2][n][n], uint8_t k)\n{\n#pragma scop\n"
        "  for (int t = 0; t < T; t++) for (int i = 1; i < n - 1; i++)"
        " for (int j = 1; j < n - 1; j++)\n"
        "    A[(t+1)%2][i][j] = k * A[t%2][i][j];\n#pragma endscop\n}\n", "std.c")
    assert {p.name: p.ctype for p in program.params} == \
        {"T": "long", "n": "unsigned long", "k": "unsigned char"}


def test_coordinates_of_nodes():
    value = update("  -x   *   sqrtf( A[t%2][i][j] )")
    # NEST puts the statement on line 9, the value after "        A[(t+1)%2][i][j] = ".
    unary = value.lhs
    assert (unary.coord.line, unary.coord.column) == (9, 30)  # the '-', not the 'x'
    call = value.rhs
    assert call.coord.column == 39
    assert call.args[0].coord.column == 46


# --------------------------------------------------------------------------- literals


@pytest.mark.parametrize("text,ctype,value", [
    ("0", "int", 0), ("2147483647", "int", 2 ** 31 - 1), ("2147483648", "long", 2 ** 31),
    ("0x7fffffff", "int", 2 ** 31 - 1), ("0x80000000", "unsigned int", 2 ** 31),
    ("017", "int", 15), ("10u", "unsigned int", 10), ("5L", "long", 5), ("5ll", "long long", 5),
    ("7UL", "unsigned long", 7), ("7lu", "unsigned long", 7), ("3ULL", "unsigned long long", 3),
    ("0xffffffffffffffff", "unsigned long", 2 ** 64 - 1),
    ("9223372036854775808", None, None),
])
def test_integer_literal_types(text, ctype, value):
    if ctype is None:
        with pytest.raises(literals.LiteralError):
            literals.integer_literal(text)
    else:
        assert literals.integer_literal(text) == literals.Literal(ctype, value)


@pytest.mark.parametrize("text,ctype,value", [
    ("1.0", "double", 1.0), ("1.", "double", 1.0), (".5", "double", 0.5),
    ("1e3", "double", 1000.0), ("2.5E-1f", "float", 0.25), ("0x1p-2", "double", 0.25),
    ("0x1.8p1f", "float", 3.0), ("0X.8P0", "double", 0.5), ("1e400", "double", float("inf")),
    ("0.1f", "float", struct.unpack("f", struct.pack("f", 0.1))[0]),
])
def test_floating_literal_values(text, ctype, value):
    assert literals.floating_literal(text) == literals.Literal(ctype, value)


def test_long_double_literal_is_rejected():
    with pytest.raises(literals.LiteralError, match="long double"):
        literals.floating_literal("1.5L")


def test_float_literals_round_once_like_gcc(tmp_path):
    """Decimal -> float must round once (double rounding is off by an ulp sometimes)."""
    texts = ["0.1f", "5.1f", "1.00000005960464477539062500001f", "3.4028235e38f",
             "3.40282357e38f", "1e-45f", "7e-46f", "1.17549435e-38f", "0.333333343267f",
             "16777217.0f", "16777219.0f", "33554434.99999999f", "2.2250738585072014e-308",
             "4.9406564584124654e-324", "0.1", "1.7976931348623157e308", "123456789.123456789f",
             "8.589973e9f", "1.4012984643e-45f"]
    body = "\n".join(
        f'  {{ {"float" if t.endswith("f") else "double"} v = {t}; '
        f'unsigned char b[sizeof v]; memcpy(b, &v, sizeof v); '
        f'for (unsigned k = 0; k < sizeof v; k++) printf("%02x", b[k]); printf("\\n"); }}'
        for t in texts)
    source = tmp_path / "lit.c"
    source.write_text(f"#include <stdio.h>\n#include <string.h>\nint main(void)\n{{\n{body}\n"
                      "  return 0;\n}\n")
    exe = tmp_path / "lit"
    subprocess.run(["gcc", "-O0", "-o", str(exe), str(source)], check=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True,
                           text=True).stdout.split()
    for text, hexbits in zip(texts, lines):
        lit = literals.floating_literal(text)
        packed = struct.pack("<f" if lit.ctype == "float" else "<d", lit.value)
        assert packed.hex() == hexbits, text


def test_float32_rounding_ties_to_even():
    # 1 + 2**-24 is halfway between 1 and the next float: ties go to the even (1.0)
    assert literals.round_to_float32(1 + 2 ** -24) == 1.0
    assert literals.round_to_float32(1 + 3 * 2 ** -24) == 1 + 2 ** -22
    assert literals.round_to_float32(-0.1) == -literals.round_to_float32(0.1)


def test_lgamma_and_j0_of_float_convert_to_double():
    value = update("lgamma(x) + j0f(d)", elem="double")
    assert value.lhs == Call("double", func="lgamma",
                                 args=(implicit("double", Scalar("float", name="x")),))
    assert value.rhs == implicit("double", Call(
        "float", func="j0f", args=(implicit("float", Scalar("double", name="d")),)))


def test_integer_parameters_of_jn_and_ldexp_convert_as_c_does():
    # jn's order and ldexp's exponent are int: a double argument is truncated, a long
    # one converted; scalbln's exponent is long.
    value = update("jn(d, x) + ldexp(x, l) + scalbln(x, s)", elem="double")
    jn, ldexp = value.lhs.lhs, value.lhs.rhs
    scalbln = value.rhs
    assert jn == Call("double", func="jn", args=(
        implicit("int", Scalar("double", name="d")),
        implicit("double", Scalar("float", name="x"))))
    assert ldexp.args[1] == implicit("int", Scalar("long", name="l"))
    assert scalbln.args[1] == implicit("long", Scalar("short", name="s"))
