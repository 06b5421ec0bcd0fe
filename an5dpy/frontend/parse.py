"""Parsing preprocessed C with pycparser; syntax errors become UnsupportedInput."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pycparser import c_ast, c_parser

from ..errors import UnsupportedInput
from .source import Locator

# pycparser formats errors as "FILE:LINE[:COL]: message" (FILE may itself contain colons).
_PARSE_ERROR = re.compile(r"^(?P<file>.*?):(?P<line>\d+)(?::(?P<col>\d+))?: (?P<msg>.*)$",
                          re.DOTALL)


def parse_c(text: str, filename: str, locator: Locator) -> c_ast.FileAST:
    """The AST of preprocessed ``text``; the caller bounds recursion (see frontend driver)."""
    parser = c_parser.CParser()
    try:
        return parser.parse(text, filename)
    except c_parser.ParseError as exc:
        raise _syntax_error(str(exc), filename, locator, parser) from None


@dataclass(frozen=True)
class _PycCoord:  # the shape Locator.coord expects
    file: str
    line: int
    column: int


def _current_token_coord(parser: c_parser.CParser) -> _PycCoord | None:
    """Where the parser stood when it gave up, for the errors that pycparser reports with
    a file name only ("Invalid expression"). Reads pycparser internals defensively."""
    stream = getattr(parser, "_tokens", None)
    buffer = getattr(stream, "_buffer", None)
    index = getattr(stream, "_index", None)
    if not buffer or index is None:
        return None
    candidates = [tok for tok in buffer[index:index + 1] + buffer[:index][::-1]
                  if tok is not None]
    if not candidates:
        return None
    token = candidates[0]
    return _PycCoord(parser.clex.filename, token.lineno, token.column)


def _syntax_error(text: str, filename: str, locator: Locator,
                  parser: c_parser.CParser) -> UnsupportedInput:
    m = _PARSE_ERROR.match(text)
    if not m:
        where = _current_token_coord(parser)
        prefix = f"{parser.clex.filename}: "
        message = text[len(prefix):] if text.startswith(prefix) else text
        coord = locator.coord(where) if where else locator.at(filename, 1)
        return UnsupportedInput(f"C syntax error: {message}", coord)
    pyc_coord = _PycCoord(m.group("file"), int(m.group("line")),
                          int(m.group("col")) if m.group("col") else 1)

    message = m.group("msg").strip()
    if message.startswith("before: "):
        message = f"before '{message[len('before: '):]}'"
    return UnsupportedInput(f"C syntax error {message}" if message.startswith("before")
                            else f"C syntax error: {message}", locator.coord(pyc_coord))
