"""The scop region: finding the two pragmas, the statements between them, and where they
sit in the user's original file and in the preprocessed text."""

from __future__ import annotations

import re
from typing import Sequence

from pycparser import c_ast

from ..errors import InternalError, UnsupportedInput
from ..ir import Coord, ScopRegion
from . import tgmath
from .scope import PragmaSite, enclosing_function, find_scop_pragmas
from .source import Locator, PreprocessedLine, line_starts, read_source_text, split_lines

_SCOP_LINE = re.compile(r"^\s*#\s*pragma\s+scop\b")
_ENDSCOP_LINE = re.compile(r"^\s*#\s*pragma\s+endscop\b")


def pragma_coord(pragma: c_ast.Pragma, locator: Locator) -> Coord:
    """Position of the pragma's '#' in the user's file."""
    file, line = pragma.coord.file, pragma.coord.line
    text = locator.original_line(file, line)
    if text is not None and text.strip():
        # The '#' of the directive, or the macro invocation that produced it.
        return locator.at(file, line, len(text) - len(text.lstrip()) + 1)
    return locator.coord(pragma.coord)


def locate_scop(ast: c_ast.FileAST, locator: Locator, display_file: str
                ) -> tuple[PragmaSite, PragmaSite, list[c_ast.Node]]:
    """The two pragma sites and the statements between them (checked: one region, in one
    block of a function body, not empty)."""
    starts, ends = find_scop_pragmas(ast)

    def at(site: PragmaSite) -> Coord:
        return pragma_coord(site.pragma, locator)

    if not starts:
        if ends:
            raise UnsupportedInput("'#pragma endscop' without a '#pragma scop' before it",
                                   at(ends[0]))
        raise UnsupportedInput("no '#pragma scop' found: mark the stencil loop nest with "
                               "'#pragma scop' and '#pragma endscop'",
                               Coord(display_file, 1, 1))
    if len(starts) > 1:
        raise UnsupportedInput(f"more than one '#pragma scop' region (the first is at line "
                               f"{at(starts[0]).line}; an5dpy blocks one loop nest per file)",
                               at(starts[1]))
    start = starts[0]
    if not ends:
        raise UnsupportedInput("'#pragma scop' without a matching '#pragma endscop'", at(start))
    if len(ends) > 1:
        raise UnsupportedInput("more than one '#pragma endscop' (one scop region per file)",
                               at(ends[1]))
    end = ends[0]
    if start.link is None or not isinstance(start.link.parent, c_ast.Compound) \
            or enclosing_function(start.link) is None:
        raise UnsupportedInput("'#pragma scop' must be inside a function body", at(start))
    if end.link is None or end.link.parent is not start.link.parent:
        raise UnsupportedInput(f"'#pragma endscop' is not in the same block as the "
                               f"'#pragma scop' at line {at(start).line}", at(end))
    if end.link.index < start.link.index:
        raise UnsupportedInput("'#pragma endscop' comes before '#pragma scop'", at(end))
    block_items = start.link.parent.block_items
    items = statements_of(block_items[start.link.index + 1:end.link.index])
    if not items:
        raise UnsupportedInput("empty scop: no loop nest between '#pragma scop' and "
                               "'#pragma endscop'", at(start))
    return start, end, items


def statements_of(items: Sequence[c_ast.Node]) -> list[c_ast.Node]:
    """The statements of a block, braces flattened, pragmas and empty statements skipped."""
    result: list[c_ast.Node] = []
    for item in items:
        if isinstance(item, (c_ast.Pragma, c_ast.EmptyStatement)):
            continue
        if isinstance(item, c_ast.Compound):
            result.extend(statements_of(item.block_items or []))
        else:
            result.append(item)
    return result


def scop_region(start: PragmaSite, end: PragmaSite, locator: Locator,
                 lines: Sequence[PreprocessedLine]) -> ScopRegion:
    start_coord = pragma_coord(start.pragma, locator)
    end_coord = pragma_coord(end.pragma, locator)
    cpp_file = start.pragma.coord.file
    try:
        text = read_source_text(cpp_file)
    except UnsupportedInput:
        raise UnsupportedInput(f"cannot read '{cpp_file}', the file that holds the scop "
                               f"(a #line directive names a file that is not there?)",
                               start_coord) from None
    originals = split_lines(text)
    offsets = line_starts(text)
    first, last = start.pragma.coord.line, end.pragma.coord.line
    for line, pattern, what, coord in ((first, _SCOP_LINE, "scop", start_coord),
                                       (last, _ENDSCOP_LINE, "endscop", end_coord)):
        if not (1 <= line <= len(originals) and pattern.match(originals[line - 1])):
            raise UnsupportedInput(f"'#pragma {what}' must be written on a line of its own "
                                   f"(a pragma produced by a macro cannot be located)", coord)
    span_end = offsets[last] if last < len(offsets) else len(text)
    return ScopRegion(pragma_start=start_coord, pragma_end=end_coord,
                      original_span=(offsets[first - 1], span_end),
                      preprocessed_text=tgmath.as_gcc_expands(
                          _preprocessed_between(lines, cpp_file, first, last)))


def _preprocessed_between(lines: Sequence[PreprocessedLine], cpp_file: str, first: int,
                          last: int) -> str:
    begin = next((k for k, pl in enumerate(lines) if pl.file == cpp_file and pl.line == first
                  and _SCOP_LINE.match(pl.text)), None)
    finish = None
    if begin is not None:
        finish = next((k for k in range(begin + 1, len(lines)) if lines[k].file == cpp_file
                       and lines[k].line == last and _ENDSCOP_LINE.match(lines[k].text)), None)
    if begin is None or finish is None:
        raise InternalError("cannot find the scop pragmas in the preprocessed text")
    return "".join(pl.text + "\n" for pl in lines[begin + 1:finish])
