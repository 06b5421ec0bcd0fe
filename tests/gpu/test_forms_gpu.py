"""The test forms on the GPU (pytest -m gpu; skipped without one): every program of
tests/data/forms/ (those with read-only arrays too) through ``verify_file`` with the CUDA
backend in an exact build, against the gcc oracle. The forms' scalar coefficients are
named like the kernels' old macro parameters (``scalar_coeffs.c`` has a ``b``), which the
simulator cannot catch: it never runs the macro text."""

from __future__ import annotations

import glob
import os

import pytest

from an5dpy import driver
from an5dpy.check.verify import verify_file

from cuda_support import form_params, small_block

pytestmark = pytest.mark.gpu

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FORMS = sorted(glob.glob(os.path.join(REPO, "tests", "data", "forms", "*.c")))
#: Planes per dimension and time steps of the runs: several blocks, several launches.
SIZE, STEPS = 37, 5


@pytest.mark.parametrize("path", FORMS, ids=lambda p: os.path.basename(p)[:-2])
def test_form_on_the_gpu_matches_the_oracle(path):
    program, info = driver.load(path)
    bs = "x".join(map(str, small_block(info, 2, (16,) if info.ndim == 2 else (8, 8))))
    report = verify_file(path, driver.Options(bt=2, bs=bs), "cuda",
                         form_params(program, SIZE, STEPS), exact=True)
    assert report.passed, "\n".join(report.lines())


@pytest.mark.parametrize("name, bs, coarsen, opt", [
    ("upwind_box3d", "66x10", 1, None), ("downwind_box3d", "66x10", 1, None),
    ("vla3d_star", "34x18", 2, None), ("leapfrog3d", "34x10", 1, None),
    ("seismic3d", "36x14", 2, None), ("seismic3d", "20x7", 1, None),
    ("rotate3_star3d", "18x11", 1, None), ("flat_box3d", "34x10", 2, "assoc")])
def test_a_loaded_halo_on_the_gpu_matches_the_oracle(name, bs, coarsen, opt):
    # the kernel whose computing threads load the halo (bT 1), mode assoc: upwind_box3d
    # reads no plane above a cell, downwind_box3d none below, so a stream block's first
    # arriving planes would lie below the array (they start at its first plane); mode
    # nondiag: vla3d_star, two cells a thread; rotating programs, whose work buffers hold
    # the interior only (boundary cells and planes from the boundary buffer): leapfrog3d
    # and seismic3d read level t-1 at the cell, seismic3d read-only arrays too, at odd
    # blocks; rotate3_star3d rotates through three buffers; flat_box3d reads no other
    # plane (mode assoc, streaming radius 0); stream blocks of 7 planes
    path = os.path.join(REPO, "tests", "data", "forms", name + ".c")
    program, info = driver.load(path)
    report = verify_file(path, driver.Options(bt=1, bs=bs, sl="7", coarsen=coarsen,
                                              opt=opt, halo="loaded"),
                         "cuda", form_params(program, SIZE, STEPS), exact=True)
    assert report.passed, "\n".join(report.lines())


#: Cells per dimension of the default plans' runs: a grid the model plans for as a user's
#: (several blocks of its chosen size), small enough for gcc's oracle.
DEFAULT_SIZE = {2: 300, 3: 70}


@pytest.mark.parametrize("path", FORMS, ids=lambda p: os.path.basename(p)[:-2])
def test_the_default_plan_of_each_form_matches_the_oracle(path):
    """The plan the model chooses for the form's grid (nothing given), as a user who names
    no option gets it: the choice, its register budget and its kernels, bit for bit."""
    program, info = driver.load(path)
    params = form_params(program, DEFAULT_SIZE[info.ndim], STEPS)
    report = verify_file(path, driver.Options(), "cuda", params, exact=True,
                         loaded=(program, info))
    assert report.passed, "\n".join(report.lines())
