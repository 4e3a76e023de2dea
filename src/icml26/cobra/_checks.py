"""Input checks shared by the modules of :mod:`icml26.cobra`."""

from __future__ import annotations

from typing import Any

import numpy as np


def _positive_vector(x: Any, name: str, *, allow_zero: bool = False) -> np.ndarray:
    try:
        v = np.asarray(x, dtype=float).ravel()
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of numbers, got {type(x).__name__}") from None
    if v.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite, got {v.tolist()}")
    if allow_zero and np.any(v < 0):
        raise ValueError(f"{name} must be >= 0, got {v.tolist()}")
    if not allow_zero and np.any(v <= 0):
        raise ValueError(f"{name} must be > 0, got {v.tolist()}")
    return v


def _int_vector(x: Any, name: str, *, low: int = 1) -> np.ndarray:
    v = np.asarray(x)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d sequence of integers, got shape {v.shape}")
    if v.dtype == bool or not np.issubdtype(v.dtype, np.integer):
        if np.issubdtype(v.dtype, np.floating) and np.all(np.isfinite(v)) and np.all(v == np.round(v)):
            v = v.astype(np.int64)
        else:
            raise TypeError(f"{name} must hold integers, got {v.tolist()}")
    if np.any(v < low):
        raise ValueError(f"{name} must hold integers >= {low}, got {v.tolist()}")
    return v.astype(np.int64)
