"""Test support: where the repository's files are, for tests in any folder under tests/."""

from __future__ import annotations

import os

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS_DIR)
C_INPUTS = os.path.join(REPO, "c_inputs")
DATA = os.path.join(TESTS_DIR, "data")


def _paper_benchmarks() -> tuple[str, ...]:
    with open(os.path.join(C_INPUTS, "paper_benchmarks.txt")) as f:
        return tuple(line.strip() for line in f if line.strip())


#: The 21 benchmarks of the paper's Table 3 (the programs c_inputs/generate.py writes), in
#: the table's order; c_inputs/ also holds hand-written programs, which this leaves out.
PAPER_BENCHMARKS = _paper_benchmarks()
