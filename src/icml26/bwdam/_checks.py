"""Input checks shared by the modules of :mod:`icml26.bwdam` (private).

Float arrays, the inverse temperature, integers, bounded reals and squared-distance
arrays, each rejected with a ``TypeError`` or ``ValueError`` that names the value and
what is allowed.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from .._common import check_int


def _float_array(x, name: str) -> np.ndarray:
    """``x`` as a float64 array, or a TypeError naming ``name`` (strings, objects, complex numbers)."""
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as exc:  # ragged nested lists
        raise TypeError(f"{name} must be a numeric array, got {type(x).__name__} ({exc})") from None
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real numeric array, got dtype {a.dtype} ({type(x).__name__})")
    return a.astype(float, copy=False)


def _check_beta(beta: float) -> float:
    if isinstance(beta, (bool, np.bool_)) or not isinstance(beta, Real):
        raise TypeError(f"beta={beta!r} must be a real number, got {type(beta).__name__}")
    if not np.isfinite(beta) or beta <= 0:
        raise ValueError(f"beta={beta!r} is not valid; the inverse temperature must be a finite number > 0")
    return float(beta)


def _check_int(value, name: str, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum`` (integral floats such as 3.0 are accepted)."""
    return check_int(value, name, low=minimum, integral_floats=True)


def _check_real(value, name: str, *, low: float | None = None, high: float | None = None, low_open: bool = False) -> float:
    """``value`` as a finite float in ``[low, high]`` (``(low, high]`` with ``low_open``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise TypeError(f"{name}={value!r} must be a real number, got {type(value).__name__}")
    v = float(value)
    lo_bad = low is not None and (v <= low if low_open else v < low)
    if not np.isfinite(v) or lo_bad or (high is not None and v > high):
        lo = "" if low is None else (f"> {low:g}" if low_open else f">= {low:g}")
        hi = "" if high is None else f"<= {high:g}"
        raise ValueError(f"{name}={value!r} must be a finite number {' and '.join(x for x in (lo, hi) if x)}".rstrip())
    return v


def _check_dist_sq(dist_sq) -> np.ndarray:
    d = _float_array(dist_sq, "dist_sq")
    if d.ndim < 1 or d.shape[-1] == 0:
        raise ValueError(f"dist_sq must have shape (..., N) with N >= 1 stored patterns, got shape {d.shape}")
    if np.isnan(d).any() or np.isneginf(d).any() or (d < 0).any():
        raise ValueError("dist_sq must hold squared distances: no NaN, no negative values")
    if np.isinf(d).all(axis=-1).any():
        raise ValueError("dist_sq has a row where every distance is infinite; the Gibbs weights are undefined")
    return d
