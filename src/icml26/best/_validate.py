"""Argument checks shared by the modules of :mod:`icml26.best` (clear errors naming the value)."""

from __future__ import annotations

import math

import numpy as np

from .._common import check_int


def positive(x, name: str) -> float:
    """``x`` as a float if it is a finite number > 0, else ``TypeError``/``ValueError`` naming it."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}={x!r} must be a number > 0")
    if not (math.isfinite(x) and x > 0):
        raise ValueError(f"{name}={x!r} must be finite and > 0")
    return float(x)


def count(x, name: str, low: int = 1) -> int:
    """``x`` as an int if it is an integer >= ``low``, else ``TypeError``/``ValueError`` naming it."""
    return check_int(x, name, low=low)
