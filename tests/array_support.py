"""Test support: comparing grids bit for bit."""

from __future__ import annotations

import numpy as np


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype, shape and bits (NaN payloads included)."""
    bits = np.dtype(f"u{a.itemsize}")
    return a.dtype == b.dtype and a.shape == b.shape and bool(
        (a.view(bits) == b.view(bits)).all())
