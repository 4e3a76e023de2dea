"""Argument checks shared by the ``icml26.lut`` modules (clear errors naming the bad value)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def check_int(name: str, value: Any, lo: int = 1) -> int:
    """``value`` as an int if it is an integer >= ``lo`` (bools refused), else ``ValueError``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < lo:
        raise ValueError(f"{name}={value!r} is not valid; use an integer >= {lo}")
    return int(value)


def check_float(name: str, value: Any, *, lo: float | None = None, hi: float | None = None,
                lo_open: bool = False, hi_open: bool = False) -> float:
    """``value`` as a finite float within the given bounds, else ``ValueError`` (``TypeError`` for non-numbers)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}={value!r} must be a real number, got {type(value).__name__}")
    v = float(value)
    bad = not math.isfinite(v)
    if lo is not None:
        bad = bad or (v <= lo if lo_open else v < lo)
    if hi is not None:
        bad = bad or (v >= hi if hi_open else v > hi)
    if bad:
        left = "(" if lo_open else "["
        right = ")" if hi_open else "]"
        rng = f"{left}{'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}{right}"
        raise ValueError(f"{name}={value!r} is not valid; use a finite number in {rng}")
    return v
