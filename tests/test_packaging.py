"""The package's metadata: the license file it names, tested dependency ranges, classifiers
(pyproject.toml, LICENSE)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

import paths

REPO = Path(paths.REPO)


def project() -> dict:
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def test_the_license_file_holds_the_bsd_3_clause_text():
    meta = project()
    assert meta["license"] == "BSD-3-Clause" and meta["license-files"] == ["LICENSE"]
    text = " ".join((REPO / "LICENSE").read_text().split())
    assert text.startswith("BSD 3-Clause License Copyright (c) 2026, the an5dpy developers")
    for clause in ("Redistributions of source code must retain the above copyright notice",
                   "Redistributions in binary form must reproduce the above copyright notice",
                   "Neither the name of the copyright holder nor the names of its contributors",
                   'THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"'):
        assert clause in text


def test_every_dependency_has_a_tested_range():
    meta = project()
    requirements = meta["dependencies"] + [r for extra in meta["optional-dependencies"].values()
                                           for r in extra]
    for text in requirements:
        operators = {spec.operator for spec in Requirement(text).specifier}
        assert operators == {">=", "<"}, text
    names = {Requirement(r).name for r in meta["dependencies"]}
    assert names == {"pycparser", "pycparser-fake-libc", "islpy", "jinja2", "numpy", "tqdm"}
    assert Requirement(next(r for r in meta["dependencies"] if r.startswith("pycparser>"))
                       ).specifier.contains("3.0")
    assert set(meta["optional-dependencies"]) >= {"test", "gpu", "plot"}


def test_classifiers_and_no_invented_urls():
    meta = project()
    assert "Programming Language :: Python :: 3.11" in meta["classifiers"]
    assert "Environment :: GPU :: NVIDIA CUDA" in meta["classifiers"]
    assert not any(c.startswith("License ::") for c in meta["classifiers"])  # PEP 639


def test_readme_commands_on_the_benchmarks_give_dtype():
    """The benchmarks need --dtype (c_inputs/common.h's #error): every example shows it."""
    readme = (REPO / "README.md").read_text()
    commands = re.findall(r"an5d(?:-translate| \w+) [^`\n]*c_inputs/\w+\.c[^`\n]*",
                          readme.replace("\n", " "))
    assert len(commands) >= 4
    for command in commands:
        assert "--dtype " in command, command
    for extra in ("pip install '.[gpu]'", "pip install '.[plot]'"):
        assert extra in readme
