"""The version of an5dpy (its own module, so that modules the package's ``__init__``
imports can read it without importing the package's public API)."""

__version__ = "0.1.0"
