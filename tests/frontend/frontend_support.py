"""Small helpers for the frontend tests."""

from __future__ import annotations

import glob
import json
import os
import re

from an5dpy.ir import Access, Affine, StencilProgram, walk

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_DIR = os.path.dirname(TESTS_DIR)
DATA_DIR = os.path.join(TESTS_DIR, "data")


def data_files(*patterns: str) -> list[str]:
    """Files under tests/data matching the patterns, as paths relative to the repo root
    (so coordinates in messages are short and stable)."""
    found = []
    for pattern in patterns:
        found += sorted(glob.glob(os.path.join(DATA_DIR, pattern)))
    return [os.path.relpath(f, REPO_DIR) for f in found]


def expectation(path: str) -> dict:
    """The JSON of a leading ``/* expect: {...} */`` line (empty when there is none)."""
    with open(os.path.join(REPO_DIR, path), encoding="utf-8") as f:
        first = f.readline()
    m = re.match(r"/\*\s*expect:\s*(\{.*\})\s*\*/", first)
    return json.loads(m.group(1)) if m else {}


def reads(program: StencilProgram) -> list[Access]:
    """The update's reads of the grid (read-only arrays excluded)."""
    value = program.statements[0].value
    return [e for e in walk(value) if isinstance(e, Access) and e.array == program.array.name]


def naive_offsets(program: StencilProgram) -> list[tuple[int, ...]]:
    """Offsets of the reads from the loop point, computed straight from the affine
    subscripts (the analysis does this properly; here it checks what the frontend kept)."""
    loop_vars = [loop.var for loop in program.space_loops]
    offsets = set()
    for access in reads(program):
        offset = []
        for index, var in zip(access.indices, loop_vars):
            rest = index - Affine.var(var)
            assert rest.is_constant, f"{index} is not {var} + constant"
            offset.append(rest.const)
        offsets.add(tuple(offset))
    return sorted(offsets)
