"""Where an5dpy keeps what it builds or measures across processes.

Everything lives under ``$AN5D_CACHE_DIR`` (default ``~/.cache/an5dpy``), one entry per
kind: ``tune.json`` (the tuner's measurements), ``modules/`` (CUDA modules built for the
Python API) and ``libm/`` (the simulator's compiled math loops). Each entry's owner keys
its contents by what decides them, so a stale entry is never reused; deleting the folder is
always safe.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(entry: str | None = None) -> Path:
    """The cache folder, or the path of one ``entry`` in it."""
    base = Path(os.environ.get("AN5D_CACHE_DIR") or Path.home() / ".cache" / "an5dpy")
    return base / entry if entry else base
