"""Test support for the CUDA stage: translate a benchmark of ``c_inputs/`` or a test form."""

from __future__ import annotations

import os

from an5dpy.driver import Options, translate

from paths import C_INPUTS, DATA

FORMS = os.path.join(DATA, "forms")


def bench(name: str, dtype: str = "float", **kw):
    return translate(os.path.join(C_INPUTS, name + ".c"),
                     Options(defines=(("SB_TYPE", dtype),), **kw))
