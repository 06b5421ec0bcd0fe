"""an5dpy: a source-to-source compiler from C stencil loops to temporally blocked CUDA."""

__version__ = "0.1.0"
