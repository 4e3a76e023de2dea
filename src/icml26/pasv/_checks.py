"""Input checks shared by the PASV modules (private).

Each helper returns the validated value or raises ``ValueError``/``TypeError`` naming the
value and what is allowed: weights ``λ`` (finite, > 0), precedence closures ``R`` (square,
boolean, irreflexive, transitive), orders (rows are permutations), game tables (length
``2**n``, finite where used), coalition masks, and feature/label arrays.
"""

from __future__ import annotations

import numpy as np

from .._common import check_int


def _check_int(x, name: str, low: int = 1) -> int:
    return check_int(x, name, low=low)


def _check_weights(lam, n: int) -> np.ndarray:
    try:
        lam = np.asarray(lam, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"weights must be an array of {n} positive numbers, got {type(lam).__name__}") from None
    if lam.shape != (n,):
        raise ValueError(f"weights must have shape ({n},), got {lam.shape}")
    if not np.all(np.isfinite(lam)) or np.any(lam <= 0):
        raise ValueError(f"weights must be finite and > 0 (λ_i > 0), got {lam}")
    return lam


def _check_closure(R) -> np.ndarray:
    """``R`` must be a strict partial order: square, boolean, irreflexive and transitive (so acyclic)."""
    R = np.asarray(R)
    if R.ndim != 2 or R.shape[0] != R.shape[1] or R.shape[0] < 1 or R.dtype != bool:
        raise ValueError(f"a precedence closure must be a non-empty square boolean array, got shape {R.shape} dtype {R.dtype}")
    T = R.copy()
    for k in range(T.shape[0]):  # Warshall: the transitive closure of R
        T |= T[:, k : k + 1] & T[k : k + 1, :]
    cyc = np.flatnonzero(np.diag(T))
    if cyc.size:
        raise ValueError(
            f"the precedence relation has a directed cycle through player(s) {cyc.tolist()}; "
            "a partial order must be acyclic (Def. 2.1)"
        )
    missing = np.argwhere(T & ~R)
    if missing.size:
        i, j = missing[0].tolist()
        raise ValueError(
            f"R is not transitively closed: {i} ≺ {j} follows from R but R[{i}, {j}] is False; build R with precedence_closure"
        )
    return R


def _check_orders(orders, n: int | None = None) -> np.ndarray:
    """Orders must be an int array (m, n) whose rows are permutations of 0..n-1."""
    o = np.asarray(orders)
    if o.ndim == 1:
        o = o[None, :]
    if o.ndim != 2 or o.shape[0] == 0 or o.shape[1] == 0:
        raise ValueError(f"orders must be a non-empty int array of shape (m, n), got shape {o.shape}")
    if o.dtype.kind not in "iu":
        raise TypeError(f"orders must hold integer player indices, got dtype {o.dtype}")
    if n is not None and o.shape[1] != n:
        raise ValueError(f"orders must have n={n} columns (one per player), got {o.shape[1]}")
    if not np.array_equal(np.sort(o, axis=1), np.broadcast_to(np.arange(o.shape[1]), o.shape)):
        bad = int(np.flatnonzero(np.any(np.sort(o, axis=1) != np.arange(o.shape[1]), axis=1))[0])
        raise ValueError(f"every order must be a permutation of 0..{o.shape[1] - 1}; row {bad} is {o[bad].tolist()}")
    return o.astype(np.int64)


def _table_size(U) -> tuple[np.ndarray, int]:
    try:
        U = np.asarray(U, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"a game table must be an array of numbers, got {type(U).__name__}") from None
    if U.ndim != 1 or U.size < 2 or U.size & (U.size - 1):
        raise ValueError(f"a game table must be 1-D of length 2**n (one value per coalition bitmask), got shape {U.shape}")
    return U, U.size.bit_length() - 1


def _check_table(U, n: int) -> np.ndarray:
    try:
        U = np.asarray(U, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"a game table must be an array of numbers, got {type(U).__name__}") from None
    if U.shape != (2**n,):
        raise ValueError(
            f"the game table must hold one value per coalition bitmask: 2**{n} = {2**n} values for n={n} players, "
            f"got shape {U.shape}"
        )
    return U


def _finite_at(U: np.ndarray, masks: np.ndarray, what: str) -> None:
    bad = masks[~np.isfinite(U[masks])]
    if bad.size:
        raise ValueError(f"the game table is NaN or infinite at {bad.size} coalition(s) that {what}, e.g. bitmask {int(bad[0])}")


def _check_mask(mask, n: int, what: str = "a coalition mask") -> np.ndarray:
    mask = np.asarray(mask)
    if mask.shape != (n,):
        raise ValueError(f"{what} must have shape ({n},) (one coalition; see the Utility protocol), got {mask.shape}")
    if mask.dtype != bool:
        if mask.dtype.kind not in "iu" or not np.all((mask == 0) | (mask == 1)):
            raise TypeError(f"{what} must be boolean (or 0/1), got dtype {mask.dtype}")
        mask = mask.astype(bool)
    return mask


def _check_features(X, name: str) -> np.ndarray:
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a numeric array (n, d), got {type(X).__name__}") from None
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (n, d), got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} holds NaN or infinite values")
    return X


def _check_labels(y, n: int, name: str) -> np.ndarray:
    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) (one label per row), got {y.shape}")
    if y.dtype.kind not in "iu" and not (y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y))):
        raise ValueError(f"{name} must hold integer class labels, got dtype {y.dtype}")
    y = y.astype(int)
    if y.min() < 0:
        raise ValueError(f"{name} must hold class labels >= 0")
    return y
