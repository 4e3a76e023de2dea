"""Input validation shared by the modules of :mod:`icml26.bcp` (private)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np


def as_float_array(x: Any, name: str, *, min_ndim: int = 0, nonneg: bool = False, positive: bool = False) -> np.ndarray:
    """``x`` as a finite float array, or a ``TypeError``/``ValueError`` naming ``name`` and what is allowed."""
    if x is None or isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be an array of numbers, got {type(x).__name__}")
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of numbers, got {type(x).__name__}: {exc}") from None
    if arr.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = arr[~np.isfinite(arr)].ravel()[:3].tolist()
        raise ValueError(f"{name} must be finite, got non-finite values such as {bad}")
    if positive and np.any(arr <= 0):
        raise ValueError(f"{name} must be positive, got a minimum of {arr.min()!r}")
    if nonneg and np.any(arr < 0):
        raise ValueError(
            f"{name} must be non-negative (BCP's e-values come from Markov's inequality), got a minimum of {arr.min()!r}"
        )
    return arr


def as_int_array(x: Any, name: str, *, low: int | None = None, high: int | None = None) -> np.ndarray:
    """``x`` as an integer array with values in ``[low, high]``, else a clear error."""
    if x is None or isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be an integer or an integer array, got {type(x).__name__}")
    arr = np.asarray(x)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must be an integer or an integer array, got {x!r} (dtype {arr.dtype})")
    lo = f"{low}" if low is not None else "-inf"
    hi = f"{high}" if high is not None else "inf"
    if arr.size and ((low is not None and arr.min() < low) or (high is not None and arr.max() > high)):
        raise ValueError(f"{name} must lie in {lo}..{hi}, got values from {arr.min()} to {arr.max()}")
    return arr


def as_int(x: Any, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """``x`` as a Python int in ``[low, high]``, else a clear error."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {x!r} ({type(x).__name__})")
    v = int(x)
    if (low is not None and v < low) or (high is not None and v > high):
        lo = f"{low}" if low is not None else "-inf"
        hi = f"{high}" if high is not None else "inf"
        raise ValueError(f"{name}={v} must lie in {lo}..{hi}")
    return v


def as_float(
    x: Any, name: str, *, low: float | None = None, high: float | None = None, open_low: bool = False, open_high: bool = False
) -> float:
    """``x`` as a finite float in the given interval, else a clear error."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {x!r} ({type(x).__name__})")
    v = float(x)
    ok = np.isfinite(v)
    if ok and low is not None:
        ok = v > low if open_low else v >= low
    if ok and high is not None:
        ok = v < high if open_high else v <= high
    if not ok:
        lb = ("(" if open_low else "[") + (f"{low:g}" if low is not None else "-inf")
        hb = (f"{high:g}" if high is not None else "inf") + (")" if open_high else "]")
        raise ValueError(f"{name}={x!r} must be a finite number in {lb}, {hb}")
    return v


def check_set_size(T: Any, K: int, name: str = "T") -> np.ndarray:
    """Set size(s) ``T`` as an integer array in ``1..K-1`` (a set of all K labels certifies nothing)."""
    return as_int_array(T, name, low=1, high=K - 1)


def broadcast(arrays: dict[str, np.ndarray], shape: tuple[int, ...]) -> list[np.ndarray]:
    """Broadcast each named array to ``shape``, or raise naming the one that does not fit."""
    out = []
    for name, a in arrays.items():
        try:
            out.append(np.broadcast_to(a, shape))
        except ValueError:
            raise ValueError(f"{name} has shape {a.shape}, which does not broadcast to {shape}") from None
    return out
