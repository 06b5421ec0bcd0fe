"""an5dpy: a source-to-source compiler from C stencil loops to temporally blocked CUDA.

The Python API (:mod:`an5dpy.api`)::

    stencil = an5dpy.compile("j2d5pt.c", dtype="float", bt=4, bs=128, sl=128)
    stencil.run(grid, steps=100)        # a cupy array (2, n, n), in place on the GPU
    stencil.simulate(host_grid, steps=100)   # numpy, the CPU simulator of the same schedule

The command line (``an5d-translate``, ``an5d``) is :mod:`an5dpy.cli.main`.
"""

from an5dpy.api import Stencil, compile
from an5dpy.errors import (An5dError, CudaCompileError, InternalError, OptionError,
                           UnsupportedInput, UsageError)
from an5dpy.version import __version__

__all__ = ["compile", "Stencil", "An5dError", "UnsupportedInput", "UsageError", "OptionError",
           "CudaCompileError", "InternalError", "__version__"]
