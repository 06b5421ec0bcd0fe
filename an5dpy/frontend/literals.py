"""C literals: their C type (C11 6.4.4) and their exact value in that type."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from fractions import Fraction

_INT_LITERAL = re.compile(r"(?P<digits>0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)"
                          r"(?P<suffix>(?:[uU](?:ll|LL|[lL])?|(?:ll|LL|[lL])[uU]?)?)")
_DECIMAL_FLOAT = re.compile(r"(?P<body>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)"
                            r"(?P<suffix>[fFlL]?)")
_HEX_FLOAT = re.compile(r"0[xX](?P<int>[0-9a-fA-F]*)(?:\.(?P<frac>[0-9a-fA-F]*))?"
                        r"[pP](?P<exp>[+-]?\d+)(?P<suffix>[fFlL]?)")

_INT_RANGES = {
    "int": (-(2 ** 31), 2 ** 31 - 1),
    "unsigned int": (0, 2 ** 32 - 1),
    "long": (-(2 ** 63), 2 ** 63 - 1),
    "unsigned long": (0, 2 ** 64 - 1),
    "long long": (-(2 ** 63), 2 ** 63 - 1),
    "unsigned long long": (0, 2 ** 64 - 1),
    # Types that only appear through declarations (never as a literal's type):
    "char": (-128, 127), "signed char": (-128, 127), "unsigned char": (0, 255),
    "short": (-(2 ** 15), 2 ** 15 - 1), "unsigned short": (0, 2 ** 16 - 1),
    "_Bool": (0, 1), "bool": (0, 1),
}

# C11 6.4.4.1p5: the candidate types of an integer constant, by suffix and by whether it is
# written in decimal (decimal constants never become unsigned implicitly).
_CANDIDATES = {
    ("", True): ("int", "long", "long long"),
    ("", False): ("int", "unsigned int", "long", "unsigned long", "long long",
                  "unsigned long long"),
    ("u", True): ("unsigned int", "unsigned long", "unsigned long long"),
    ("u", False): ("unsigned int", "unsigned long", "unsigned long long"),
    ("l", True): ("long", "long long"),
    ("l", False): ("long", "unsigned long", "long long", "unsigned long long"),
    ("ul", True): ("unsigned long", "unsigned long long"),
    ("ul", False): ("unsigned long", "unsigned long long"),
    ("ll", True): ("long long",),
    ("ll", False): ("long long", "unsigned long long"),
    ("ull", True): ("unsigned long long",),
    ("ull", False): ("unsigned long long",),
}


class LiteralError(ValueError):
    """The spelling is not a literal we can represent; the message says why."""


@dataclass(frozen=True)
class Literal:
    ctype: str
    value: int | float


def is_floating_spelling(text: str) -> bool:
    if text[:2] in ("0x", "0X"):
        return "." in text or "p" in text or "P" in text
    return "." in text or "e" in text or "E" in text


def int_range(ctype: str) -> tuple[int, int]:
    return _INT_RANGES[ctype]


def integer_literal(text: str) -> Literal:
    m = _INT_LITERAL.fullmatch(text)
    if not m:
        raise LiteralError(f"malformed integer constant '{text}'")
    digits, suffix = m.group("digits"), _normal_suffix(m.group("suffix"))
    if digits[:2] in ("0x", "0X"):
        value, decimal = int(digits[2:], 16), False
    elif digits[:2] in ("0b", "0B"):
        value, decimal = int(digits[2:], 2), False
    elif digits.startswith("0") and len(digits) > 1:
        value, decimal = int(digits, 8), False
    else:
        value, decimal = int(digits), True
    for ctype in _CANDIDATES[(suffix, decimal)]:
        low, high = _INT_RANGES[ctype]
        if low <= value <= high:
            return Literal(ctype, value)
    raise LiteralError(f"integer constant '{text}' is too large for any C integer type")


def _normal_suffix(suffix: str) -> str:
    """'', 'u', 'l', 'ul', 'll' or 'ull' (the order and case of the letters do not matter)."""
    lower = suffix.lower()
    return ("u" if "u" in lower else "") + "l" * lower.count("l")


def floating_literal(text: str) -> Literal:
    """A float/double literal, its value rounded exactly as a C compiler rounds it."""
    exact, suffix = _exact_value(text)
    if suffix in ("l", "L"):
        raise LiteralError(f"long double constant '{text}' (GPUs have no long double; "
                           f"drop the 'L' suffix)")
    if suffix in ("f", "F"):
        return Literal("float", round_to_float32(exact))
    return Literal("double", _round_to_double(exact))


def _exact_value(text: str) -> tuple[Fraction, str]:
    m = _HEX_FLOAT.fullmatch(text)
    if m:
        int_part, frac_part = m.group("int"), m.group("frac") or ""
        if not int_part and not frac_part:
            raise LiteralError(f"malformed floating constant '{text}'")
        mantissa = int(int_part + frac_part or "0", 16)
        exponent = int(m.group("exp")) - 4 * len(frac_part)
        value = Fraction(mantissa) * (Fraction(2) ** exponent)
        return value, m.group("suffix")
    m = _DECIMAL_FLOAT.fullmatch(text)
    if not m:
        raise LiteralError(f"malformed floating constant '{text}'")
    body = m.group("body")
    mantissa, _, exp = body.replace("E", "e").partition("e")
    if "." in mantissa:
        whole, _, frac = mantissa.partition(".")
    else:
        whole, frac = mantissa, ""
    value = Fraction(int(whole + frac or "0")) * Fraction(10) ** (int(exp or 0) - len(frac))
    return value, m.group("suffix")


def _round_to_double(value: Fraction) -> float:
    try:
        # int / int true division is correctly rounded (round half to even).
        return value.numerator / value.denominator
    except OverflowError:
        return float("inf")


_FLOAT32_MAX = Fraction((2 ** 24 - 1) * 2 ** 104)
# Values at or beyond the midpoint between FLT_MAX and 2**128 round to infinity.
_FLOAT32_OVERFLOW = _FLOAT32_MAX + Fraction(2 ** 103)


def round_to_float32(value: Fraction | float) -> float:
    """The float32 nearest to ``value`` (ties to even), returned as a Python float.

    Going through double would round twice and can be one ulp off; this rounds once.
    """
    value = Fraction(value)
    if value < 0:
        return -round_to_float32(-value)
    if value >= _FLOAT32_OVERFLOW:
        return float("inf")
    guess = _float32_bits(_round_to_double(value))
    best = None
    for bits in (guess - 1, guess, guess + 1):
        if bits < 0 or bits >= 0x7F800000:
            continue
        candidate = _bits_float32(bits)
        distance = abs(Fraction(candidate) - value)
        key = (distance, bits & 1)  # ties go to the even significand
        if best is None or key < best[0]:
            best = (key, candidate)
    return best[1]


def _float32_bits(x: float) -> int:
    try:
        return struct.unpack("<I", struct.pack("<f", x))[0]
    except OverflowError:
        return 0x7F7FFFFF


def _bits_float32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]
