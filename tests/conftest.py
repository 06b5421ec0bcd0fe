"""Shared test configuration: import path for the test-support modules, GPU skipping,
hypothesis profiles (``HYPOTHESIS_PROFILE=ci`` is the default; ``dev`` runs longer)."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import HealthCheck, settings

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS_DIR)
C_INPUTS = os.path.join(REPO, "c_inputs")
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)

# "ci" (the default): the same examples on every run, so that a run that passed here
# passes on a fresh clone; "dev" (HYPOTHESIS_PROFILE=dev): more examples, new ones each run,
# to look for what the fixed ones miss
settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=400, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def in_repo(monkeypatch):
    """Run the test from the repository root (commands name inputs like
    ``tests/data/forms/x.c`` and ``c_inputs/x.c``)."""
    monkeypatch.chdir(REPO)


def pytest_collection_modifyitems(config, items):
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    from an5dpy.cuda.runtime import cupy_available
    ok, why = cupy_available()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"GPU test: {why}")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
