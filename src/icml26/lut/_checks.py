"""Argument checks shared by the ``icml26.lut`` modules (clear errors naming the bad value)."""

from __future__ import annotations

from typing import Any

from .._common import check_int as _check_int
from .._common import check_real


def check_int(name: str, value: Any, lo: int = 1) -> int:
    """``value`` as an int if it is an integer >= ``lo`` (bools refused), else ``ValueError``/``TypeError``."""
    return _check_int(value, name, low=lo)


def check_float(
    name: str, value: Any, *, lo: float | None = None, hi: float | None = None, lo_open: bool = False, hi_open: bool = False
) -> float:
    """``value`` as a finite float within the given bounds, else ``ValueError`` (``TypeError`` for non-numbers)."""
    return check_real(value, name, lo=lo, hi=hi, lo_open=lo_open, hi_open=hi_open)
