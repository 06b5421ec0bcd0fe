"""No name of the generated kernels can capture or shadow a user's identifier.

The kernels' macros contain the user's update expression, which names the user's scalars
as written; a macro parameter or kernel local spelled like one would take its place (a
scalar ``b`` once read as the shared-buffer index). Every macro parameter and every local
of the kernels must carry the prefix the frontend refuses in user files
(:mod:`an5dpy.frontend.reserved`), and none may equal a name of the user's update, for
every test form and every benchmark, in every mode the stencil allows.
"""

from __future__ import annotations

import glob
import os
import re

import pytest

from an5dpy.driver import Options, translate
from an5dpy.errors import UsageError
from an5dpy.frontend.reserved import is_reserved
from an5dpy.ir import Scalar, walk

from cuda_support import FORMS
from read_only_support import PROGRAMS, write
from paths import C_INPUTS

#: Every form and every program of c_inputs/: read-only arrays, rotating time levels, time
#: steps of several statements and all.
FORM_FILES = sorted(glob.glob(os.path.join(FORMS, "*.c")))
BENCHMARKS = sorted(glob.glob(os.path.join(C_INPUTS, "*.c")))

_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_DEFINE = re.compile(r"^\s*#define\s+(\w+)\(([^)]*)\)", re.M)
_KERNEL = re.compile(r"__global__ void .*?\n\{\n(.*?)\n\}\n", re.S)
#: A declaration in a kernel body: a type, then pointers, ``const`` and the ``(*const``
#: of a pointer to an array, then the declared name.
_TYPES = r"(?:unsigned\s+char|unsigned|int|bool|float|double|size_t|long\s+long|char)"
_DECLARED = re.compile(rf"\b{_TYPES}\s+(?:\(\s*)?(?:\*\s*)?(?:const\s+)?(?:\*\s*)?"
                       rf"(?:__restrict__\s+)?([A-Za-z_]\w*)\s*[=;\[),]")


def macro_parameters(text: str) -> set[str]:
    return {p.strip() for _, params in _DEFINE.findall(text) for p in params.split(",")
            if p.strip()}


def kernel_locals(text: str) -> set[str]:
    """Every name declared in the bodies of the ``__global__`` functions, the locals of
    their macros included."""
    bodies = _KERNEL.findall(_COMMENT.sub("", text))
    assert bodies, "no kernel found"
    return {name for body in bodies for name in _DECLARED.findall(body)}


def user_names(translation) -> set[str]:
    info = translation.info
    return ({p.name for p in info.params}
            | {n.name for n in walk(info.update) if isinstance(n, Scalar)}
            | {c.name for c in info.coefficients})


def translations(path: str, defines=()):
    """The translations of ``path`` in its default mode, in mode assoc where allowed and
    with the computing threads loading the halo where allowed (a kernel of its own)."""
    found = [translate(path, Options(bt=2, defines=defines))]
    for options in (Options(bt=2, opt="assoc", defines=defines),
                    Options(bt=1, bs="40x20", sl="off", coarsen=2, halo="loaded",
                            defines=defines)):
        try:
            found.append(translate(path, options))
        except UsageError:
            pass  # not an associative update, or no kernel that loads the halo
    return found


def check_names(translation):
    text = translation.outputs[f"{translation.model.stem}_kernel.cu"]
    params, local = macro_parameters(text), kernel_locals(text)
    unprefixed = sorted(name for name in params | local if not is_reserved(name))
    assert not unprefixed, f"generated names without the reserved prefix: {unprefixed}"
    clashes = user_names(translation) & (params | local)
    assert not clashes, f"user names taken by the generated code: {sorted(clashes)}"


@pytest.mark.parametrize("path", FORM_FILES, ids=lambda p: os.path.basename(p)[:-2])
def test_form_kernels_use_only_reserved_names(path):
    for translation in translations(path):
        check_names(translation)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_read_only_kernels_use_only_reserved_names(tmp_path, name):
    """The kernels name a read-only array ``an5d_coef_<name>`` (its extents
    ``an5d_coefn<k>_<name>``), never as the user does."""
    for translation in translations(write(tmp_path, name)):
        check_names(translation)


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: os.path.basename(p)[:-2])
def test_benchmark_kernels_use_only_reserved_names(path):
    for translation in translations(path, (("SB_TYPE", "double"),)):
        check_names(translation)


def test_the_parsers_see_the_names_of_every_kind():
    """The checks above see macro parameters, registers, macro locals and kernel locals
    (and would see an unprefixed one)."""
    # one cell per thread: a coarsened kernel names its registers per cell (_x<m>)
    translation = translate(os.path.join(FORMS, "scalar_coeffs.c"),
                            Options(bt=3, bs="32", coarsen=1))
    text = translation.outputs["scalar_coeffs_kernel.cu"]
    assert {"an5d_out", "an5d_q", "an5d_b", "an5d_i0", "an5d_prev"} <= macro_parameters(text)
    assert {"an5d_reg_0_0", "an5d_v", "an5d_step", "an5d_sm", "an5d_p_ld",
            "an5d_act"} <= kernel_locals(text)
    assert "b" in user_names(translation)
    assert "b" in macro_parameters(text.replace("an5d_b)", "b)"))
    assert "s" in kernel_locals(text.replace("int an5d_step", "int s"))
