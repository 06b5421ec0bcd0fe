"""Fixtures of the model's tests: two benchmarks' stencils, analysed once per module."""

from __future__ import annotations

import pytest

from model_support import load_benchmark


@pytest.fixture(scope="module")
def star2d():
    return load_benchmark("star2d1r")[1]


@pytest.fixture(scope="module")
def j2d5pt():
    return load_benchmark("j2d5pt")[1]
