"""Fuzzing: mutated inputs give a StencilProgram or UnsupportedInput, nothing else.

A short, seeded run here (fixed budget); long campaigns run ``fuzzing.py`` by hand and
keep what they find under tests/data/fuzz/, replayed below.
"""

from __future__ import annotations

import glob
import os
import random

import pytest

from fuzzing import REPO, campaign, check, mutate, seed_files

FUZZ_FILES = sorted(glob.glob(os.path.join(REPO, "tests", "data", "fuzz", "*.c")))


def test_seeds_exist():
    assert len(seed_files()) >= 5


def test_mutations_change_the_text():
    rng = random.Random(0)
    text = "for (int i = 0; i < n; i++) A[i] = 0;\n"
    assert sum(mutate(text, rng) != text for _ in range(50)) > 40


def test_short_fuzz_campaign():
    findings = campaign(seconds=12.0, seed=20240601, out=None, max_inputs=400)
    assert not findings, findings[0].problem + "\n--- input ---\n" + findings[0].text


@pytest.mark.parametrize("path", FUZZ_FILES, ids=lambda p: os.path.basename(p))
def test_fuzz_regressions(path):
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
        text = f.read()
    finding = check(text)
    assert finding is None, finding.problem
