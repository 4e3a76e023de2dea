"""Cooperative games: the :class:`Utility` protocol, game tables, cached utilities, prefix values.

:class:`Utility` is the one calling convention (``n`` players, called on one boolean
coalition mask). :func:`game_table` tabulates a utility over bitmask-indexed coalitions,
:class:`CachedUtility` wraps a function with a cache and call counters, and
:func:`prefix_values` evaluates every prefix of many orders (through a utility's
``values_along`` when it has one). Also the bitmask helpers used by :mod:`~icml26.pasv.exact`.

Reference: K. Lee, Z. Liu, W. Tang, Y. Zhang, "Priority-Aware Shapley Value", ICML 2026,
arXiv:2602.09326. Conventions (closures ``R``, orders, bitmask game tables): :mod:`icml26.pasv`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from ._checks import _check_int, _check_mask, _check_orders, _check_table, _finite_at

__all__ = ["Utility", "game_table", "CachedUtility", "prefix_values"]


@runtime_checkable
class Utility(Protocol):
    """The one calling convention of every utility (cooperative game) in this package.

    A utility has ``n`` players and is called on **one** coalition: a boolean mask of
    shape ``(n,)``, returning ``U(S)`` as a float. It raises ``ValueError`` for a mask of
    another shape. :class:`KNNUtility`, :class:`CoalitionModelUtility`,
    :class:`ImputedFeatureUtility` and :class:`CachedUtility` follow it; so does any
    function ``mask -> float`` wrapped in :class:`CachedUtility`. Many coalitions at once:
    :func:`game_table`; all prefixes of many orders: :func:`prefix_values` (which uses
    the utility's ``values_along(orders)`` when it has one).

    Attributes
    ----------
    n : int
        Number of players.

    Parameters
    ----------
    mask : ndarray of bool, shape (n,)
        The one argument of ``__call__``: a single coalition.

    Returns
    -------
    float
        ``U(S)``, finite.

    References
    ----------
    .. [1] K. Lee et al., "Priority-Aware Shapley Value", ICML 2026, arXiv:2602.09326,
       Sec. 2 (the utility ``U: 2^[n] -> R``).
    """

    n: int

    def __call__(self, mask: np.ndarray) -> float:  # pragma: no cover - protocol
        ...


def _popcount(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(x.astype(np.uint64)).astype(np.int64)


def _bits(masks: np.ndarray, n: int) -> np.ndarray:
    """Bitmasks (m,) -> boolean membership (m, n)."""
    return ((masks[:, None] >> np.arange(n, dtype=np.int64)[None, :]) & 1).astype(bool)


def game_table(utility: Utility | Callable[[np.ndarray], float], n: int, masks: np.ndarray | None = None) -> np.ndarray:
    """Tabulate a utility on coalitions: ``U`` of length ``2**n`` indexed by bitmask.

    Parameters
    ----------
    utility : Utility or callable
        Called on one coalition at a time, a boolean mask of shape ``(n,)``, returning a
        float (the :class:`Utility` convention).
    n : int
        Number of players, ``1 <= n <= 24``.
    masks : array of int, optional
        Bitmasks of the coalitions to evaluate (default: all ``2**n``); the others are NaN.

    Returns
    -------
    U : ndarray, shape (2**n,)

    Raises
    ------
    ValueError
        For a bitmask out of range, or when the utility returns NaN or an infinite value.

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 2.
    """
    if not callable(utility):
        raise TypeError(f"utility must be callable on a coalition mask, got {type(utility).__name__}")
    n = _check_int(n, "n")
    if n > 24:
        raise ValueError(f"a full game table needs n <= 24, got n={n}")
    if masks is None:
        masks = np.arange(2**n, dtype=np.int64)
    else:
        masks = np.asarray(masks)
        if masks.ndim != 1 or (masks.size and masks.dtype.kind not in "iu"):
            raise ValueError(f"masks must be a 1-D array of integer bitmasks, got shape {masks.shape} dtype {masks.dtype}")
        masks = masks.astype(np.int64)
        if masks.size and (masks.min() < 0 or masks.max() >= 2**n):
            raise ValueError(f"bitmasks must lie in 0..{2**n - 1} for n={n} players")
    U = np.full(2**n, np.nan)
    for key, mask in zip(masks, _bits(masks, n)):
        v = float(utility(mask))
        if not math.isfinite(v):
            raise ValueError(f"the utility returned {v} for coalition bitmask {int(key)}; a utility must be finite")
        U[key] = v
    return U


class CachedUtility:
    """Wrap a function of one boolean coalition mask with a cache and call counters (a :class:`Utility`).

    Parameters
    ----------
    fn : callable
        ``fn(mask: bool array (n,)) -> float``.
    n : int
        Number of players.

    Attributes
    ----------
    n_calls : int
        Evaluations of ``fn`` (cache misses).
    n_queries : int
        Look-ups, cached or not.

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 4 (cost counted in utility calls).
    """

    def __init__(self, fn: Callable[[np.ndarray], float], n: int):
        if not callable(fn):
            raise TypeError(f"fn must be callable on a coalition mask, got {type(fn).__name__}")
        self.fn, self.n = fn, _check_int(n, "n")
        self.cache: dict[bytes, float] = {}
        self.n_calls = 0
        self.n_queries = 0

    def __call__(self, mask: np.ndarray) -> float:
        mask = _check_mask(mask, self.n)
        key = np.packbits(mask).tobytes()
        self.n_queries += 1
        if key not in self.cache:
            v = float(self.fn(mask))
            if not math.isfinite(v):
                raise ValueError(f"the utility returned {v} for the coalition {np.flatnonzero(mask).tolist()}; it must be finite")
            self.cache[key] = v
            self.n_calls += 1
        return self.cache[key]

    def values_along(self, orders: np.ndarray) -> np.ndarray:
        """``U(S_0), .., U(S_n)`` along each order.

        Parameters
        ----------
        orders : int array, shape (m, n)

        Returns
        -------
        ndarray, shape (m, n+1)

        References
        ----------
        .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), eq. 1.
        """
        orders = _check_orders(orders, self.n)
        m, n = orders.shape
        out = np.empty((m, n + 1))
        for r in range(m):
            mask = np.zeros(n, dtype=bool)
            out[r, 0] = self(mask)
            for t in range(n):
                mask[orders[r, t]] = True
                out[r, t + 1] = self(mask)
        return out


def prefix_values(utility, orders: np.ndarray) -> np.ndarray:
    """Utility of every prefix of every order.

    Parameters
    ----------
    utility : Utility, object with ``values_along(orders)``, or game table (2**n,)
        A utility with a ``values_along`` method is asked for all prefixes at once; a
        plain :class:`Utility` is called once per prefix (through a :class:`CachedUtility`);
        a game table is indexed by the prefixes' bitmasks.
    orders : int array, shape (m, n)

    Returns
    -------
    ndarray, shape (m, n+1)
        ``U(S_0) .. U(S_n)`` along each order.

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), eq. 1.
    """
    orders = _check_orders(orders)
    m, n = orders.shape
    if hasattr(utility, "values_along"):
        return utility.values_along(orders)
    if callable(utility):
        return CachedUtility(utility, n).values_along(orders)
    U = _check_table(utility, n)
    prefix = np.concatenate([np.zeros((m, 1), dtype=np.int64), np.cumsum(1 << orders, axis=1)], 1)
    _finite_at(U, np.unique(prefix), "the orders visit")
    return U[prefix]
