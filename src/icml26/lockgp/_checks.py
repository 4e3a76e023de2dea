"""Input checks shared by the modules of :mod:`icml26.lockgp` (private).

Integers, non-negative reals and symmetric matrices, each rejected with a ``TypeError`` or
``ValueError`` that names the value and what is allowed.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from .._common import check_int


def _check_int(value, name: str, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum`` (integral floats such as 3.0 are accepted)."""
    return check_int(value, name, low=minimum, integral_floats=True)


def _check_nonneg(value, name: str, *, positive: bool = False) -> float:
    """``value`` as a finite float >= 0 (> 0 with ``positive``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise TypeError(f"{name}={value!r} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise ValueError(f"{name}={value!r} must be a finite number {'> 0' if positive else '>= 0'}")
    return v


def _square_matrix(B, name: str = "B") -> np.ndarray:
    try:
        M = np.asarray(B)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric square matrix ({exc})") from None
    if M.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real numeric matrix, got dtype {M.dtype}")
    M = M.astype(float)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {M.shape}")
    if not np.all(np.isfinite(M)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    if not np.allclose(M, M.T):
        raise ValueError(f"{name} must be symmetric")
    return M
