"""Test support: where the repository's files are, for tests in any folder under tests/."""

from __future__ import annotations

import os

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS_DIR)
C_INPUTS = os.path.join(REPO, "c_inputs")
DATA = os.path.join(TESTS_DIR, "data")
