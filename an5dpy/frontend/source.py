"""Source text and coordinates: from preprocessed positions back to the user's file.

pycparser reports positions in the *preprocessed* text. Line numbers are right (the
preprocessor's line markers say which original line each output line comes from), but
columns are not: ``gcc -E`` collapses runs of whitespace, drops comments and expands macros,
so every token after such a spot moves. :class:`Locator` repairs columns by aligning the
tokens of the preprocessed line with the tokens of the original line; a token that came out
of a macro expansion is attributed to the macro's name, as a C compiler's diagnostics do.

Columns are 1-based and count characters (a tab is one column).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from ..errors import UnsupportedInput
from ..ir import Coord


def read_source_text(path: str) -> str:
    """The text of a source file exactly as stored, so character offsets are stable.

    ``newline=""`` keeps ``\\r\\n`` (offsets must count every byte of the line end) and
    ``surrogateescape`` maps each undecodable byte to one character, so a file that is not
    UTF-8 still round-trips when written back with the same error handler.
    """
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
            return f.read()
    except OSError as exc:
        raise UnsupportedInput(f"cannot read '{path}': {exc.strerror or exc}") from None


_NEWLINE = re.compile(r"\r\n|\r|\n")


def line_starts(text: str) -> list[int]:
    """Offset of the first character of each line; C counts CR LF, CR and LF as newlines."""
    return [0] + [m.end() for m in _NEWLINE.finditer(text)]


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` without their terminators, numbered as the C preprocessor does
    (unlike ``str.splitlines``, form feeds and other separators do not end a line)."""
    return _NEWLINE.split(text)


# --------------------------------------------------------------------------- line markers

_LINE_MARKER = re.compile(r'^#\s*(?:line\s+)?(\d+)(?:\s+"((?:[^"\\]|\\.)*)")?')


@dataclass(frozen=True)
class PreprocessedLine:
    file: str  # as the line marker spells it (pycparser reports the same string)
    line: int
    text: str


def preprocessed_lines(text: str, first_file: str) -> tuple[PreprocessedLine, ...]:
    """Each non-marker line of preprocessor output with the original file and line it is from."""
    result: list[PreprocessedLine] = []
    file, line = first_file, 1
    for raw in text.split("\n"):
        marker = _LINE_MARKER.match(raw)
        if marker:
            line = int(marker.group(1))
            if marker.group(2) is not None:
                file = marker.group(2)
            continue
        result.append(PreprocessedLine(file, line, raw))
        line += 1
    return tuple(result)


# --------------------------------------------------------------------------- C tokens

# Enough of C's lexical grammar to split a line into tokens for alignment; exactness only
# matters in that the same spelling yields the same tokens on both sides.
_TOKEN = re.compile(r"""
      (?P<space>\s+)
    | (?P<comment>/\*.*?\*/|/\*.*|//.*)
    | (?P<number>\.?\d(?:[eEpP][+-]|[\w.])*)
    | (?P<word>[A-Za-z_]\w*)
    | (?P<string>"(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?)
    | (?P<punct>\.\.\.|<<=|>>=|->|\+\+|--|<<|>>|[-+*/%&|^!=<>]=|&&|\|\||\#\#|.)
""", re.VERBOSE)


def tokenize_line(text: str) -> list[tuple[str, int]]:
    """``(spelling, 1-based column)`` of every token on one line, comments skipped."""
    tokens = []
    for m in _TOKEN.finditer(text):
        if m.lastgroup not in ("space", "comment"):
            tokens.append((m.group(), m.start() + 1))
    return tokens


def align_columns(preprocessed: str, original: str) -> dict[int, int]:
    """Map the start column of each preprocessed token to a column in the original line.

    Tokens present on both sides map to each other; the tokens of a macro expansion map
    to the macro's name in the original.
    Linear in the line length (unlike a general diff, which is quadratic on the long
    lines of big stencils).
    """
    pre = tokenize_line(preprocessed)
    orig = tokenize_line(original)
    mapping: dict[int, int] = {}
    if not pre or not orig:
        return mapping
    if [t for t, _ in pre] == [t for t, _ in orig]:
        return {p_col: o_col for (_, p_col), (_, o_col) in zip(pre, orig)}
    i = j = 0
    while i < len(pre) and j < len(orig):
        if pre[i][0] == orig[j][0]:
            mapping[pre[i][1]] = orig[j][1]
            i, j = i + 1, j + 1
            continue
        # orig[j] is a macro name (or an argument-taking macro's name, whose arguments
        # usually reappear in the expansion): its expansion is pre[i:resume].
        resume = _find_resume(pre, i, orig, j + 1)
        for k in range(i, resume):
            mapping[pre[k][1]] = orig[j][1]
        i, j = resume, j + 1
    for k in range(i, len(pre)):  # an invocation continued on later lines
        mapping[pre[k][1]] = orig[min(j, len(orig) - 1)][1]
    return mapping


_RESYNC_WINDOW = 4096


def _find_resume(pre: list[tuple[str, int]], i: int, orig: list[tuple[str, int]],
                 after: int) -> int:
    """First index >= i where the preprocessed tokens continue with ``orig[after:]``:
    two tokens agreeing if possible (fewer false matches), else one."""
    for length in (2, 1):
        want = [t for t, _ in orig[after:after + length]]
        if not want:
            return len(pre)
        for k in range(i, min(len(pre), i + _RESYNC_WINDOW)):
            if [t for t, _ in pre[k:k + length]] == want:
                return k
    return len(pre)


# --------------------------------------------------------------------------- locator


@dataclass
class Locator:
    """Turns pycparser coordinates into :class:`Coord` values in the user's files.

    ``display`` renames files (the text API preprocesses a temporary copy but must report
    the name the caller chose).
    """

    lines: tuple[PreprocessedLine, ...]
    display: Mapping[str, str] = field(default_factory=dict)
    # Several output lines can carry one original position (a macro that expands to a
    # directive, a header included twice): keep them all.
    _by_position: dict[tuple[str, int], list[str]] = field(default_factory=dict, init=False)
    _originals: dict[str, list[str] | None] = field(default_factory=dict, init=False)
    _alignments: dict[tuple[str, int, int], dict[int, int]] = field(default_factory=dict,
                                                                    init=False)

    def __post_init__(self) -> None:
        for pl in self.lines:
            self._by_position.setdefault((pl.file, pl.line), []).append(pl.text)

    def display_name(self, cpp_file: str) -> str:
        return self.display.get(cpp_file, cpp_file)

    def original_lines(self, cpp_file: str) -> list[str] | None:
        if cpp_file not in self._originals:
            try:
                # cpp names files as they can be opened from the working directory.
                text = read_source_text(cpp_file)
                self._originals[cpp_file] = split_lines(text)
            except UnsupportedInput:
                self._originals[cpp_file] = None
        return self._originals[cpp_file]

    def original_line(self, cpp_file: str, line: int) -> str | None:
        originals = self.original_lines(cpp_file)
        if originals is None or not 1 <= line <= len(originals):
            return None
        return originals[line - 1]

    def _alignment(self, cpp_file: str, line: int, column: int) -> dict[int, int]:
        candidates = self._by_position.get((cpp_file, line), [])
        original = self.original_line(cpp_file, line)
        if not candidates or original is None:
            return {}
        # The output line that has a token starting at this column is the one meant.
        choice = 0 if len(candidates) == 1 else next(
            (k for k, text in enumerate(candidates)
             if any(col == column for _, col in tokenize_line(text))), 0)
        key = (cpp_file, line, choice)
        if key not in self._alignments:
            self._alignments[key] = align_columns(candidates[choice], original)
        return self._alignments[key]

    def original_column(self, cpp_file: str, line: int, column: int) -> int:
        return self._alignment(cpp_file, line, column).get(column, column)

    def coord(self, pyc_coord) -> Coord | None:
        """The user-file coordinate of a pycparser ``Coord`` (None stays None)."""
        if pyc_coord is None or pyc_coord.line is None:
            return None
        file = pyc_coord.file or ""
        column = pyc_coord.column or 1
        column = self.original_column(file, pyc_coord.line, column)
        return Coord(self.display_name(file), pyc_coord.line, column)

    def prefix_operator_coord(self, operand_coord, spelling: str) -> Coord | None:
        """Where a prefix operator (``-x``, ``*p``) stands: pycparser gives unary operators
        their operand's position, so look for the operator token just before it (opening
        parentheses in between are skipped)."""
        at = self.coord(operand_coord)
        if at is None:
            return None
        original = self.original_line(operand_coord.file or "", operand_coord.line)
        if original is None:
            return at
        tokens = tokenize_line(original)
        index = next((k for k, (_, col) in enumerate(tokens) if col == at.column), None)
        if index is None:
            return at
        index -= 1
        while index >= 0 and tokens[index][0] == "(":
            index -= 1
        if index >= 0 and tokens[index][0] == spelling:
            return Coord(at.file, at.line, tokens[index][1])
        return at

    def at(self, cpp_file: str, line: int, column: int = 1) -> Coord:
        """A coordinate given in original-file terms (no column repair needed)."""
        return Coord(self.display_name(cpp_file), line, column)
