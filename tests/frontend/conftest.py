"""Shared helpers of the frontend tests (tests/ itself holds ir_builders and stencil_render)."""

from __future__ import annotations

import os
import sys

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)
