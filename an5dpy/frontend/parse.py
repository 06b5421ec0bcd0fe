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
    except RecursionError:
        raise
    except Exception as exc:  # noqa: BLE001 -- pycparser tripping over malformed input
        # e.g. an unmatched '}' fails an assertion inside pycparser's scope stack, raised
        # while the lexer has just read that '}'
        where = _lexer_coord(parser) if isinstance(exc, AssertionError) \
            else _current_token_coord(parser)
        coord = locator.coord(where) if where else locator.at(filename, 1)
        what = "unmatched '}'" if isinstance(exc, AssertionError) else \
            f"the parser failed ({type(exc).__name__})"
        raise UnsupportedInput(f"C syntax error: {what}", coord) from None


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


def _lexer_coord(parser: c_parser.CParser) -> _PycCoord | None:
    """The position of the character the lexer consumed last (pycparser internals)."""
    lexer = parser.clex
    line, pos, line_start = (getattr(lexer, name, None)
                             for name in ("_lineno", "_pos", "_line_start"))
    if line is None or pos is None or line_start is None:
        return None
    return _PycCoord(lexer.filename, line, max(1, pos - line_start))


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
