"""Exact values from a full game table: SV, random order values, PASV/PSV, WSV, and the DP.

:func:`shapley_exact` (subset formula), :func:`rov_exact` (eq. 1 for an explicit order
distribution), :func:`pasv_exact` (enumerating the linear extensions, eqs. 1 and 4),
:func:`wsv_exact` (Kalai & Samet's weighted Shapley value, eq. 3), and :class:`PasvDP`,
dynamic programming over the feasible sets (:func:`feasible_masks`, App. D.1.1, eqs. 29–31),
exact where enumerating orders is not.

Reference: K. Lee, Z. Liu, W. Tang, Y. Zhang, "Priority-Aware Shapley Value", ICML 2026,
arXiv:2602.09326. Conventions (closures ``R``, orders, bitmask game tables): :mod:`icml26.pasv`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ._checks import _check_closure, _check_orders, _check_table, _check_weights, _finite_at, _table_size
from .games import _bits, _popcount
from .posets import _partition_members, maximal_elements, order_distribution

__all__ = ["feasible_masks", "shapley_exact", "rov_exact", "pasv_exact", "wsv_exact", "PasvDP"]


def feasible_masks(R: np.ndarray) -> np.ndarray:
    """Bitmasks of all feasible (downward-closed) sets ``S`` (Def. 2.4), sorted.

    Parameters
    ----------
    R : ndarray of bool, shape (n, n)
        Strict precedence closure, ``n <= 24``.

    Returns
    -------
    ndarray of int64, shape (F,)
        The bitmasks ``sum(2**i for i in S)`` of the feasible sets, increasing.

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Def. 2.4 and App. D.1.1.
    """
    R = _check_closure(R)
    n = R.shape[0]
    if n > 24:
        raise ValueError(f"exact enumeration of feasible sets needs n <= 24, got n={n}")
    masks = np.arange(2**n, dtype=np.int64)
    predmask = (R.T.astype(np.int64) << np.arange(n, dtype=np.int64)[None, :]).sum(1)  # predecessors of j
    ok = np.ones(masks.size, dtype=bool)
    for j in range(n):
        inj = (masks >> j) & 1 == 1
        ok &= ~inj | ((masks & predmask[j]) == predmask[j])
    return masks[ok]


def shapley_exact(U: np.ndarray) -> np.ndarray:
    """Shapley value from a full game table (subset formula, Shapley 1953).

    .. math:: ψ_i = \\sum_{S \\subseteq [n] \\setminus i} \\frac{|S|!(n-|S|-1)!}{n!}\\,[U(S \\cup i) - U(S)]

    Parameters
    ----------
    U : array, shape (2**n,)
        Full game table without NaN.

    Returns
    -------
    ndarray, shape (n,)

    References
    ----------
    .. [1] L. S. Shapley, "A value for n-person games", 1953.
    .. [2] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 2 (the SV as a random order value).
    """
    U, n = _table_size(U)
    _finite_at(U, np.arange(2**n, dtype=np.int64), "the Shapley value needs (all of them)")
    masks = np.arange(2**n, dtype=np.int64)
    size = _popcount(masks)
    fact = np.array([math.factorial(k) for k in range(n + 1)], dtype=float)
    psi = np.zeros(n)
    for i in range(n):
        S = masks[(masks >> i) & 1 == 0]
        s = size[S]
        w = fact[s] * fact[n - s - 1] / fact[n]
        psi[i] = np.sum(w * (U[S | (1 << i)] - U[S]))
    return psi


def rov_exact(U: np.ndarray, orders: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Random order value (eq. 1) from an explicit order distribution and a game table.

    Parameters
    ----------
    U : array, shape (2**n,)
        Game table (finite on every prefix of every order).
    orders : int array, shape (m, n)
        Orders (permutations).
    probs : array, shape (m,)
        Their probabilities: non-negative, summing to 1.

    Returns
    -------
    ndarray, shape (n,)

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), eq. 1.
    """
    orders = _check_orders(orders)
    m, n = orders.shape
    U = _check_table(U, n)
    try:
        probs = np.asarray(probs, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"probs must be an array of numbers, got {type(probs).__name__}") from None
    if probs.shape != (m,):
        raise ValueError(f"probs must have shape ({m},) (one per order), got {probs.shape}")
    if not np.all(np.isfinite(probs)) or np.any(probs < 0) or not np.isclose(probs.sum(), 1.0):
        raise ValueError(f"probs must be finite, non-negative and sum to 1, got sum {probs.sum()!r}")
    prefix = np.concatenate([np.zeros((m, 1), dtype=np.int64), np.cumsum(1 << orders, axis=1)], 1)
    _finite_at(U, np.unique(prefix), "the orders visit")
    vals = U[prefix]  # (m, n+1)
    mc = np.zeros((m, n))
    mc[np.arange(m)[:, None], orders] = np.diff(vals, axis=1)
    return probs @ mc


def pasv_exact(U: np.ndarray, R: np.ndarray, lam=None) -> np.ndarray:
    """PASV (or PSV when ``lam`` is None) by enumerating the linear extensions (eqs. 1 and 4).

    Parameters
    ----------
    U : array, shape (2**n,)
        Game table (NaN allowed off the feasible sets).
    R : ndarray of bool, shape (n, n)
        Strict precedence closure.
    lam : array (n,), optional
        Positive weights; default equal (PSV).

    Returns
    -------
    ndarray, shape (n,)

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), eqs. 1 and 4, Prop. 3.1.
    """
    R = _check_closure(R)
    n = R.shape[0]
    _check_table(U, n)
    lam = np.ones(n) if lam is None else lam
    orders, p = order_distribution(R, lam)
    return rov_exact(U, orders, p)


def wsv_exact(U: np.ndarray, blocks: Sequence[Sequence[int]], lam) -> np.ndarray:
    """Weighted Shapley value (Kalai & Samet 1987) for an ordered partition, via its backward definition (eq. 3).

    The last player is drawn from the last block with probability ``∝ λ``, removed, and so on:
    ``p_WSV(π) = Π_t λ_{π_t} / Σ_{j ∈ max(S_t)} λ_j``. Computed by recursion over the remaining
    set, independently of :func:`order_log_weights`.

    Parameters
    ----------
    U : array, shape (2**n,)
        Full game table.
    blocks : sequence of sequences of int
        Ordered partition ``B_1 ≺ B_2 ≺ ..`` of ``0 .. n-1`` (each player exactly once).
    lam : array (n,)
        Positive weights.

    Returns
    -------
    ndarray, shape (n,)

    References
    ----------
    .. [1] E. Kalai, D. Samet, "On weighted Shapley values", IJGT 16, 1987.
    .. [2] Lee et al., ICML 2026 (arXiv:2602.09326), eq. 3 and Prop. 3.2.
    """
    n = len(_partition_members(blocks))
    U = _check_table(U, n)
    _finite_at(U, np.arange(2**n, dtype=np.int64), "WSV needs (all of them)")
    lam = _check_weights(lam, n)
    psi = np.zeros(n)

    def rec(remaining: list[list[int]], mask: int, prob: float) -> None:
        # remaining: non-empty blocks still to empty, in order; mask: current coalition
        if not remaining:
            return
        last = remaining[-1]
        tot = sum(lam[j] for j in last)
        for x in last:
            px = prob * lam[x] / tot
            rest = [j for j in last if j != x]
            psi[x] += px * (U[mask] - U[mask & ~(1 << x)])
            rec(remaining[:-1] + ([rest] if rest else []), mask & ~(1 << x), px)

    rec([[int(i) for i in b] for b in blocks if len(b)], 2**n - 1, 1.0)
    return psi


class PasvDP:
    """Exact PASV quantities by dynamic programming over feasible sets (App. D.1.1, eqs. 29–31).

    With ``w(x; S) = λ_x |M(S)| / Σ_{j∈M(S)} λ_j`` for ``x ∈ M(S)`` the forward mass is
    ``Z(S) = Σ_{x∈M(S)} w(x;S) Z(S∖x)``, ``Z(∅) = 1``, and the backward mass
    ``Y(S) = Σ_{x∉S, S∪x feasible} w(x; S∪x) Y(S∪x)``, ``Y([n]) = 1``. The probability that
    ``x`` joins right after the feasible prefix ``S∖x`` is ``q(S, x) = Z(S∖x) w(x;S) Y(S) / Z([n])``.
    Cost ``O(#feasible · n)``, so this is exact for ``n`` up to ~20 where enumerating orders is not.

    Parameters
    ----------
    R : bool array (n, n)
        Strict precedence closure (a cyclic or non-transitive relation raises ``ValueError``).
    lam : array (n,), optional
        Priority weights (default equal: PSV).

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), App. D.1.1, eqs. 29–31.
    """

    def __init__(self, R: np.ndarray, lam=None):
        self.R = R = _check_closure(R)
        n = self.n = R.shape[0]
        self.lam = _check_weights(np.ones(n) if lam is None else lam, n)
        self.masks = feasible_masks(R)  # (F,)
        F = self.masks.size
        index = np.full(2**n, -1, dtype=np.int64)
        index[self.masks] = np.arange(F)
        member = _bits(self.masks, n)  # (F, n)
        M = maximal_elements(member, R)  # (F, n)
        lamM = M @ self.lam
        with np.errstate(invalid="ignore", divide="ignore"):
            w = np.where(M, self.lam[None, :] * M.sum(1, keepdims=True) / lamM[:, None], 0.0)  # (F, n)
        size = _popcount(self.masks)
        Z = np.zeros(F)
        Z[index[0]] = 1.0
        sub = np.where(M, index[self.masks[:, None] ^ (1 << np.arange(n))[None, :]], -1)  # (F, n) index of S∖x
        for s in range(1, n + 1):
            rows = np.flatnonzero(size == s)
            Z[rows] = np.sum(np.where(M[rows], w[rows] * Z[np.maximum(sub[rows], 0)], 0.0), axis=1)
        Y = np.zeros(F)
        Y[index[2**n - 1]] = 1.0
        for s in range(n - 1, -1, -1):
            rows = np.flatnonzero(size == s)
            sup = index[self.masks[rows, None] | (1 << np.arange(n))[None, :]]  # (r, n) index of S∪x
            ok = (sup >= 0) & ~member[rows]
            Y[rows] = np.sum(np.where(ok, w[np.maximum(sup, 0), np.arange(n)[None, :]] * Y[np.maximum(sup, 0)], 0.0), 1)
        self.Z, self.Y, self.index, self.member, self.M, self.w, self.sub = Z, Y, index, member, M, w, sub
        self.total = Z[index[2**n - 1]]
        # q[S, x]: probability that the prefix after x joins is exactly S (x ∈ M(S))
        self.q = np.where(M, Z[np.maximum(sub, 0)] * w * Y[:, None], 0.0) / self.total

    def values(self, U: np.ndarray) -> np.ndarray:
        """PASV ``ψ_i = Σ_{S ∋ i} q(S, i) [U(S) − U(S∖i)]``.

        Parameters
        ----------
        U : array, shape (2**n,)
            Game table; NaN is allowed off the feasible sets, not on them.

        Returns
        -------
        ndarray, shape (n,)

        References
        ----------
        .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), eq. 1 with App. D.1.1.
        """
        n = self.n
        U = _check_table(U, n)
        _finite_at(U, self.masks, "are feasible")
        Uf = U[self.masks]  # (F,)
        Usub = np.where(self.M, U[self.masks[:, None] & ~(1 << np.arange(n))[None, :]], 0.0)
        return np.sum(self.q * (Uf[:, None] - Usub), axis=0)

    def precedence_probs(self) -> np.ndarray:
        """``P[a, b] = P_{π∼p}(a before b)`` (eqs. 29–31).

        Returns
        -------
        ndarray, shape (n, n)

        References
        ----------
        .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), eqs. 29–31.
        """
        return self.q.T @ (~self.member).astype(float)

    def last_of_probs(self, T: Sequence[int]) -> np.ndarray:
        """``P(i is the last member of T to arrive)`` for each ``i``: the PASV of the unanimity game ``u_T``.

        Parameters
        ----------
        T : sequence of int
            A non-empty set of players.

        Returns
        -------
        ndarray, shape (n,)
            Zero outside ``T``; sums to 1.

        References
        ----------
        .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 3 (unanimity games).
        """
        if isinstance(T, (str, bytes)) or not isinstance(T, Sequence | np.ndarray):
            raise TypeError(f"T must be a sequence of player indices, got {type(T).__name__}")
        if len(T) == 0 or any(
            isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.n for i in T
        ):
            raise ValueError(f"T must be a non-empty set of player indices in 0..{self.n - 1}, got {T!r}")
        tm = sum(1 << int(i) for i in set(int(i) for i in T))
        covers = (self.masks & tm) == tm  # S ⊇ T
        return np.sum(self.q * covers[:, None] * self.M, axis=0) * np.isin(np.arange(self.n), T)
