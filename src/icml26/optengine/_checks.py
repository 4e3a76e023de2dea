"""Argument checks shared by the optengine modules: one place for each rule."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._common import check_int as _check_int

STYLES = (0, 1, 2)  # canonical, seen paraphrase, unseen paraphrase


def is_real(x: Any) -> bool:
    """Whether ``x`` is a real number (bools are not)."""
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def is_int(x: Any) -> bool:
    """Whether ``x`` is an integer (bools are not)."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def check_int(x: Any, name: str, *, low: int = 1) -> int:
    """``x`` as an int ``>= low``, else ``TypeError``/``ValueError`` naming it."""
    return _check_int(x, name, low=low)


def check_real(x: Any, name: str, *, positive: bool = False, allow_none: bool = False) -> float | None:
    """``x`` as a finite float (positive if asked; ``None`` passes when allowed)."""
    if x is None and allow_none:
        return None
    if not is_real(x):
        raise TypeError(f"{name}={x!r} must be a number")
    if not math.isfinite(float(x)) or (positive and not float(x) > 0):
        raise ValueError(f"{name}={x!r} must be a {'positive ' if positive else ''}finite number")
    return float(x)


def check_probability(x: Any, name: str) -> float:
    """``x`` as a float in ``[0, 1]``."""
    if not is_real(x):
        raise TypeError(f"{name}={x!r} must be a probability (a number in [0, 1])")
    if not (0.0 <= float(x) <= 1.0):
        raise ValueError(f"{name}={x!r} must be a probability in [0, 1]")
    return float(x)


def check_style(style: Any, name: str = "style") -> int:
    """``style`` if it is one of :data:`STYLES`."""
    if not is_int(style) or style not in STYLES:
        raise ValueError(f"{name}={style!r} is not a valid style; use 0 (canonical), 1 or 2 (paraphrases)")
    return int(style)


def check_styles(known: Any) -> tuple[int, ...]:
    """A non-empty sequence of styles, as a tuple."""
    ok = isinstance(known, Sequence) and not isinstance(known, (str, bytes)) and len(known) > 0
    if not ok or not all(is_int(k) and k in STYLES for k in known):
        raise ValueError(f"known_styles={known!r} must be a non-empty sequence of styles from {STYLES}")
    return tuple(int(k) for k in known)


def check_type(x: Any, types: type | tuple[type, ...], name: str, what: str) -> Any:
    """``x`` if it is an instance of ``types``, else ``TypeError`` saying ``what`` is allowed."""
    if not isinstance(x, types):
        raise TypeError(f"{name} must be {what}, got {type(x).__name__}")
    return x
