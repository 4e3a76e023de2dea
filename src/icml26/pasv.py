"""Priority-Aware Shapley Value (PASV): exact values, an adjacent-swap MH sampler, data valuation.

Reference: K. Lee, Z. Liu, W. Tang, Y. Zhang, "Priority-Aware Shapley Value", ICML 2026,
arXiv:2602.09326. Equation numbers below are the paper's. No code accompanies the paper;
everything here is re-derived from it.

Conventions
-----------
Players are ``0 .. n-1``. A precedence relation (a DAG / partial order) is stored as its
strict transitive closure ``R``: a boolean ``(n, n)`` array with ``R[i, j]`` true iff
``i`` must come before ``j`` (``i ≺ j``). Every function that takes ``R`` checks that it
is one (square, boolean, irreflexive, transitive, hence acyclic) and raises
``ValueError`` naming the cycle or the missing pair otherwise; :func:`precedence_closure`
builds it from edges. An order ``π`` is an int array holding the players in arrival
order; ``S_t = {π_1, .., π_t}`` is the prefix of length ``t``. Coalitions are boolean
masks of shape ``(n,)`` or, for exact computations over all ``2**n`` coalitions, the
bitmask ``sum(2**i for i in S)``; a *game table* ``U`` has length ``2**n`` and is
indexed by bitmask.

Utilities follow one protocol, :class:`Utility`: an attribute ``n`` and
``__call__(mask)`` taking **one** coalition, a boolean mask of shape ``(n,)``, and
returning a float. Batches go through :func:`game_table` (all or some coalitions) and
:func:`prefix_values` (every prefix of many orders; a utility may offer a faster
``values_along(orders)``).

Randomness: functions and classes that draw take ``random_state`` (int, Generator or
None), converted by :func:`icml26._common.check_random_state`.

The PASV order distribution (eq. 4) on the linear extensions ``Π_⪯`` is

.. math:: p(π) \\propto \\prod_{t=1}^{n} \\frac{|M_t|\\, λ_{π_t}}{\\sum_{k \\in M_t} λ_k},
          \\qquad M_t = \\max_⪯(S_t) = \\{i \\in S_t : \\nexists j \\in S_t,\\ i ≺ j\\},

and every value here is a random order value (eq. 1),
``ψ_i(U) = E_{π∼p}[U(π^i ∪ {i}) − U(π^i)]``. Equal weights give the precedence Shapley
value PSV (Prop. 3.1), an ordered partition gives the weighted Shapley value WSV (Prop. 3.2),
and the empty DAG with equal weights the Shapley value SV.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ._common import RandomState, check_int, check_random_state

__all__ = [
    "value_markets",
    "feature_sweep_shift",
    "mixing_runs",
    "sampler_efficiency",
    "Utility",
    "precedence_closure",
    "block_closure",
    "random_dag",
    "ordered_partition_closure",
    "topological_order",
    "is_linear_extension",
    "linear_extensions",
    "maximal_elements",
    "order_log_weights",
    "order_distribution",
    "feasible_masks",
    "game_table",
    "shapley_exact",
    "rov_exact",
    "pasv_exact",
    "wsv_exact",
    "PasvDP",
    "AdjacentSwapSampler",
    "sample_linear_extensions_rejection",
    "uniform_permutations",
    "CachedUtility",
    "prefix_values",
    "rov_estimate",
    "priority_sweep",
    "marginal_contributions",
    "pasv_mc",
    "DataMarket",
    "make_data_market",
    "KNNUtility",
    "CoalitionModelUtility",
    "pairwise_discrepancy_trace",
    "diabetes_dags",
    "ImputedFeatureUtility",
    "BLOCKS",
    "BLOCK_EDGES",
    "PROVIDERS",
]

_PAPER = 'K. Lee, Z. Liu, W. Tang, Y. Zhang, "Priority-Aware Shapley Value", ICML 2026, arXiv:2602.09326'


@runtime_checkable
class Utility(Protocol):
    """The one calling convention of every utility (cooperative game) in this module.

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


# ----------------------------------------------------------------------------- validation


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
        raise ValueError(
            f"a precedence closure must be a non-empty square boolean array, got shape {R.shape} dtype {R.dtype}"
        )
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
            f"R is not transitively closed: {i} ≺ {j} follows from R but R[{i}, {j}] is False; "
            "build R with precedence_closure"
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


# ----------------------------------------------------------------------------- posets


def precedence_closure(n: int, edges: Sequence[tuple[int, int]] | np.ndarray) -> np.ndarray:
    """Strict transitive closure of a DAG given by ``edges`` ``(i, j)`` meaning ``i ≺ j``.

    Parameters
    ----------
    n : int
        Number of players.
    edges : sequence of (int, int)
        Directed edges ``i -> j`` (``i`` must come before ``j``).

    Returns
    -------
    R : ndarray of bool, shape (n, n)
        ``R[i, j]`` is true iff there is a directed path ``i -> .. -> j`` (``i ≺ j``).

    Raises
    ------
    ValueError
        If a player index is out of range or the graph has a directed cycle (a partial
        order is antisymmetric, Def. 2.1, so a cyclic precedence graph defines no order).

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Def. 2.1.
    """
    n = _check_int(n, "n")
    try:
        e = np.asarray(edges).reshape(-1, 2) if len(edges) else np.zeros((0, 2), dtype=int)
    except (TypeError, ValueError):
        raise ValueError(f"edges must be pairs (i, j) of player indices, got {edges!r}") from None
    if e.size and e.dtype.kind not in "iu":
        raise TypeError(f"edge endpoints must be integers, got dtype {e.dtype}")
    e = e.astype(int)
    R = np.zeros((n, n), dtype=bool)
    if e.size and (e.min() < 0 or e.max() >= n):
        raise ValueError(f"edge endpoints must lie in 0..{n - 1}, got {e[(e < 0).any(1) | (e >= n).any(1)][0].tolist()}")
    R[e[:, 0], e[:, 1]] = True
    for k in range(n):  # Warshall: paths through k
        R |= R[:, k : k + 1] & R[k : k + 1, :]
    cyc = np.flatnonzero(np.diag(R))
    if cyc.size:
        raise ValueError(f"the precedence graph has a directed cycle through player(s) {cyc.tolist()}; it must be a DAG")
    return R


def block_closure(block_of: Sequence[int] | np.ndarray, block_edges: Sequence[tuple[int, int]]) -> np.ndarray:
    """Player-level closure of a DAG over blocks: every member of block ``a`` precedes every member of ``b``.

    This is how the paper encodes data lineage (Fig. 4): an edge between provider blocks stands
    for all member-to-member edges.

    Parameters
    ----------
    block_of : sequence of int, shape (n,)
        Block of each player (``0 .. n_blocks-1``).
    block_edges : sequence of (int, int)
        Edges ``a -> b`` between blocks.

    Returns
    -------
    R : ndarray of bool, shape (n, n)

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 5.1 and Fig. 4.
    """
    b = np.asarray(block_of)
    if b.ndim != 1 or b.size == 0 or b.dtype.kind not in "iu" or b.min() < 0:
        raise ValueError(f"block_of must be a non-empty 1-D array of non-negative block indices, got {block_of!r}")
    b = b.astype(int)
    RB = precedence_closure(int(b.max()) + 1, block_edges)
    return RB[b[:, None], b[None, :]]


def ordered_partition_closure(blocks: Sequence[Sequence[int]]) -> np.ndarray:
    """Closure of the ordered partition ``B_1 ≺ B_2 ≺ ..`` (every member of an earlier block precedes later ones).

    Parameters
    ----------
    blocks : sequence of sequences of int
        A partition of ``0 .. n-1`` into ordered blocks.

    Returns
    -------
    R : ndarray of bool, shape (n, n)

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Prop. 3.2 (ordered partitions give WSV).
    """
    members = _partition_members(blocks)
    n = len(members)
    rank = np.empty(n, dtype=int)
    for r, b in enumerate(blocks):
        rank[[int(i) for i in b]] = r
    return rank[:, None] < rank[None, :]


def _partition_members(blocks) -> list[int]:
    if isinstance(blocks, (str, bytes)) or not isinstance(blocks, Sequence | np.ndarray):
        raise TypeError(f"blocks must be a sequence of sequences of player indices, got {type(blocks).__name__}")
    try:
        members = [i for b in blocks for i in b]
    except TypeError:
        raise TypeError(f"blocks must be a sequence of sequences of player indices, got {blocks!r}") from None
    if any(isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) for i in members):
        raise TypeError(f"block members must be integer player indices, got {blocks!r}")
    n = len(members)
    if n == 0 or sorted(int(i) for i in members) != list(range(n)):
        raise ValueError(f"blocks must partition 0..{n - 1} exactly once (no overlap, no gap), got {blocks}")
    return [int(i) for i in members]


def random_dag(n: int, edge_prob: float, random_state: RandomState = None) -> np.ndarray:
    """Closure of a random DAG: edge ``i -> j`` for ``i < j`` with probability ``edge_prob``, players relabelled at random.

    Parameters
    ----------
    n : int
        Number of players (>= 1).
    edge_prob : float
        Probability of each forward edge, in ``[0, 1]``.
    random_state : int, Generator or None
        Seed or generator.

    Returns
    -------
    R : ndarray of bool, shape (n, n)

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 6.1 (random posets for the mixing study).
    """
    n = _check_int(n, "n")
    if isinstance(edge_prob, (bool, np.bool_)) or not isinstance(edge_prob, (int, float, np.integer, np.floating)):
        raise TypeError(f"edge_prob={edge_prob!r} must be a number in [0, 1]")
    if not 0.0 <= edge_prob <= 1.0:
        raise ValueError(f"edge_prob={edge_prob!r} must lie in [0, 1]")
    rng = check_random_state(random_state)
    iu, ju = np.triu_indices(n, 1)
    keep = rng.random(iu.size) < edge_prob
    perm = rng.permutation(n)
    return precedence_closure(n, np.stack([perm[iu[keep]], perm[ju[keep]]], 1))


def topological_order(R: np.ndarray, random_state: RandomState = None) -> np.ndarray:
    """One linear extension of ``R`` (Kahn's algorithm).

    Parameters
    ----------
    R : ndarray of bool, shape (n, n)
        Strict precedence closure.
    random_state : int, Generator or None
        ``None`` (default) breaks ties by the smallest player index, so the order is
        deterministic; an int or a generator breaks them at random.

    Returns
    -------
    order : ndarray of int, shape (n,)

    Raises
    ------
    ValueError
        If ``R`` is not a strict partial order (a cycle has no linear extension).

    References
    ----------
    .. [1] A. B. Kahn, "Topological sorting of large networks", CACM 5(11), 1962.
    .. [2] Lee et al., ICML 2026 (arXiv:2602.09326), Def. 2.2.
    """
    R = _check_closure(R)
    return _kahn(R, None if random_state is None else check_random_state(random_state))


def _kahn(R: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
    n = R.shape[0]
    placed = np.zeros(n, dtype=bool)
    order = np.empty(n, dtype=int)
    npred = R.sum(0)
    for t in range(n):
        avail = np.flatnonzero(~placed & (npred == 0))
        x = avail[0] if rng is None else rng.choice(avail)
        order[t] = x
        placed[x] = True
        npred = npred - R[x]
        npred[x] = -1
    return order


def is_linear_extension(orders: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Whether each row of ``orders`` respects ``R``: ``i ≺ j`` ⇒ ``i`` appears before ``j``.

    Parameters
    ----------
    orders : int array, shape (m, n) or (n,)
        Permutations of the players.
    R : ndarray of bool, shape (n, n)
        Strict precedence closure.

    Returns
    -------
    ndarray of bool, shape (m,)

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Def. 2.2.
    """
    R = _check_closure(R)
    return _respects(_check_orders(orders, R.shape[0]), R)


def _respects(orders: np.ndarray, R: np.ndarray) -> np.ndarray:
    pos = np.argsort(orders, axis=1)  # (m, n) position of each player
    ii, jj = np.nonzero(R)
    return np.all(pos[:, ii] < pos[:, jj], axis=1)


def linear_extensions(R: np.ndarray, max_count: int = 2_000_000) -> np.ndarray:
    """All linear extensions ``Π_⪯`` of ``R`` (Def. 2.2), lexicographic.

    Built breadth-first: a partial order is extended by every player whose predecessors are
    all placed.

    Parameters
    ----------
    R : ndarray of bool, shape (n, n)
        Strict precedence closure.
    max_count : int
        Largest number of partial orders kept at any depth; more raises ``ValueError``.

    Returns
    -------
    ndarray of int, shape (|Π_⪯|, n)

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Def. 2.2.
    """
    R = _check_closure(R)
    max_count = _check_int(max_count, "max_count")
    n = R.shape[0]
    partial = np.zeros((1, 0), dtype=np.int64)
    placed = np.zeros((1, n), dtype=bool)
    RT = R.T  # RT[j] = predecessors of j
    for _t in range(n):
        # avail[m, j]: j not placed and all predecessors of j placed
        avail = ~placed & ~np.any(RT[None, :, :] & ~placed[:, None, :], axis=2)
        rows, cols = np.nonzero(avail)
        if rows.size > max_count:
            raise ValueError(f"more than max_count={max_count} linear extensions; use the MH sampler instead")
        partial = np.concatenate([partial[rows], cols[:, None]], axis=1)
        placed = placed[rows].copy()
        placed[np.arange(rows.size), cols] = True
    return partial


def maximal_elements(mask: np.ndarray, R: np.ndarray) -> np.ndarray:
    """``max_⪯(S) = {i ∈ S : no j ∈ S with i ≺ j}`` (Def. 2.5) for boolean masks.

    Parameters
    ----------
    mask : array of bool, shape (..., n)
        Coalitions.
    R : ndarray of bool, shape (n, n)
        Strict precedence closure.

    Returns
    -------
    ndarray of bool, shape (..., n)

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Def. 2.5.
    """
    R = _check_closure(R)
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise TypeError(f"mask must be a boolean array, got dtype {mask.dtype}")
    if mask.ndim < 1 or mask.shape[-1] != R.shape[0]:
        raise ValueError(f"mask must have shape (..., {R.shape[0]}), got {mask.shape}")
    has_succ = (mask.astype(np.int64) @ R.T.astype(np.int64)) > 0  # (..., n): some successor in S
    return mask & ~has_succ


def order_log_weights(orders: np.ndarray, R: np.ndarray, lam) -> np.ndarray:
    """Unnormalised log PASV probability of each order (eq. 4).

    .. math:: \\log \\tilde p(π) = \\sum_{t=1}^n \\Big[\\log |M_t| + \\log λ_{π_t}
              - \\log \\sum_{k \\in M_t} λ_k\\Big]

    Parameters
    ----------
    orders : int array (m, n)
        Linear extensions of ``R`` (permutations are checked; use :func:`is_linear_extension`
        for the precedence).
    R : bool array (n, n)
        Strict precedence closure.
    lam : array (n,)
        Positive priority weights ``λ``.

    Returns
    -------
    ndarray (m,)
        ``log p̃(π)``; equal weights give 0 for every order (Prop. 3.1).

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), eq. 4 and Prop. 3.1.
    """
    R = _check_closure(R)
    orders = _check_orders(orders, R.shape[0])
    m, n = orders.shape
    lam = _check_weights(lam, n)
    pos = np.argsort(orders, axis=1)  # (m, n)
    # fsp[m, i]: earliest position of a successor of i (n if none)
    fsp = np.full((m, n), n, dtype=np.int64)
    for i in range(n):
        if R[i].any():
            fsp[:, i] = pos[:, R[i]].min(axis=1)
    logw = np.zeros(m)
    for t in range(n):  # prefix S holds positions 0..t
        M = (pos <= t) & (fsp > t)  # (m, n) maximal elements of the prefix
        logw += np.log(M.sum(1)) + np.log(lam[orders[:, t]]) - np.log(M @ lam)
    return logw


def order_distribution(R: np.ndarray, lam) -> tuple[np.ndarray, np.ndarray]:
    """Exact PASV order distribution by enumeration (eq. 4).

    Parameters
    ----------
    R : ndarray of bool, shape (n, n)
        Strict precedence closure.
    lam : array (n,)
        Positive weights.

    Returns
    -------
    orders : ndarray of int, shape (m, n)
        The linear extensions.
    probs : ndarray, shape (m,)
        Their PASV probabilities (sum 1).

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), eq. 4.
    """
    orders = linear_extensions(R)
    lw = order_log_weights(orders, R, lam)
    p = np.exp(lw - lw.max())
    return orders, p / p.sum()


# ----------------------------------------------------------------------------- exact values


def _popcount(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(x.astype(np.uint64)).astype(np.int64)


def _bits(masks: np.ndarray, n: int) -> np.ndarray:
    """Bitmasks (m,) -> boolean membership (m, n)."""
    return ((masks[:, None] >> np.arange(n, dtype=np.int64)[None, :]) & 1).astype(bool)


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


# ----------------------------------------------------------------------------- samplers


class AdjacentSwapSampler:
    """Adjacent-swap Metropolis–Hastings sampler for the PASV order distribution (Alg. 1, Lemma 4.1).

    Each step draws ``k`` uniformly from the ``n − 1`` adjacent position pairs; if ``π_k`` and
    ``π_{k+1}`` are incomparable under the closure, the swap is accepted with probability

    .. math:: α = \\min\\Big\\{1, \\frac{\\sum_{i∈M_k} λ_i/|M_k|}{\\sum_{j∈M'_k} λ_j/|M'_k|}\\Big\\},
              \\quad M_k = \\max_⪯(S_k),\\ M'_k = \\max_⪯(S_{k-1} ∪ \\{π_{k+1}\\}).

    ``n_chains`` independent chains run in lock-step (vectorised). Each chain keeps, for every
    player, the earliest position of any of its successors, so ``M_k`` and ``M'_k`` cost O(n).

    Parameters
    ----------
    R : bool array (n, n)
        Strict precedence closure (transitive, so "incomparable" is exact).
    lam : array (n,), optional
        Positive weights; default equal (PSV).
    n_chains : int
        Chains run in parallel.
    init : {"topological", "random"}
        Start every chain at the same Kahn order, or at a random topological order each.
    random_state : int, Generator or None
        Seed or generator of the proposals and of the random starts.

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Alg. 1 and Lemma 4.1.
    """

    def __init__(self, R: np.ndarray, lam=None, *, n_chains: int = 64, init: str = "topological", random_state=None):
        self.R = R = _check_closure(R)
        n = self.n = R.shape[0]
        if n < 2:
            raise ValueError(f"the sampler needs n >= 2 players, got n={n}")
        self.lam = _check_weights(np.ones(n) if lam is None else lam, n)
        n_chains = _check_int(n_chains, "n_chains")
        if init not in ("topological", "random"):
            raise ValueError(f"init={init!r}; use 'topological' or 'random'")
        self.n_chains = int(n_chains)
        self.rng = check_random_state(random_state)
        self.RT = np.ascontiguousarray(R.T)  # RT[b] = predecessors of b
        C = self.n_chains
        if init == "topological":
            start = _kahn(R, None)
            self.perm = np.tile(start, (C, 1))
        else:
            self.perm = np.stack([_kahn(R, self.rng) for _ in range(C)])
        self.pos = np.argsort(self.perm, axis=1)
        self.fsp = np.full((C, n), n, dtype=np.int64)  # earliest successor position
        for i in range(n):
            if R[i].any():
                self.fsp[:, i] = self.pos[:, R[i]].min(axis=1)
        self.n_steps = 0
        self.n_proposed = 0
        self.n_accepted = 0

    def step(self, n_steps: int = 1) -> AdjacentSwapSampler:
        """Advance every chain by ``n_steps`` MH steps.

        Parameters
        ----------
        n_steps : int
            Steps (>= 0).

        Returns
        -------
        AdjacentSwapSampler
            ``self``.

        References
        ----------
        .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Alg. 1.
        """
        n_steps = _check_int(n_steps, "n_steps", low=0)
        C, n = self.n_chains, self.n
        rows = np.arange(C)
        lam = self.lam
        perm, pos, fsp, R, RT = self.perm, self.pos, self.fsp, self.R, self.RT
        for _ in range(int(n_steps)):
            k = self.rng.integers(0, n - 1, size=C)  # swap positions k, k+1 (0-based)
            u = self.rng.random(C)
            a = perm[rows, k]
            b = perm[rows, k + 1]
            ok = ~R[a, b]  # incomparable (a is before b, so b ≺ a is impossible)
            kk = k[:, None]
            # M_k: maximal elements of positions 0..k (contains a)
            M_old = (pos <= kk) & (fsp > kk)
            # M'_k: maximal elements of positions 0..k-1 plus b
            M_new = (pos < kk) & (fsp >= kk) & ~RT[b]
            M_new[rows, b] = True
            ratio = (M_old @ lam / M_old.sum(1)) / (M_new @ lam / M_new.sum(1))
            acc = ok & (u < ratio)
            self.n_proposed += int(ok.sum())
            self.n_accepted += int(acc.sum())
            if acc.any():
                r, ka, a_, b_ = rows[acc], k[acc], a[acc], b[acc]
                perm[r, ka], perm[r, ka + 1] = b_, a_
                pos[r, a_], pos[r, b_] = ka + 1, ka
                pa, pb = RT[a_], RT[b_]  # (r, n) predecessors of a, b
                upd = (pa | pb) & (fsp[r] >= ka[:, None])
                newv = np.where(pb, ka[:, None], ka[:, None] + 1)
                fsp[r] = np.where(upd, newv, fsp[r])
        self.n_steps += int(n_steps)
        return self

    @property
    def acceptance_rate(self) -> float:
        """Accepted / proposed swaps (proposals of comparable neighbours excluded); 0 before any proposal."""
        return self.n_accepted / max(self.n_proposed, 1)

    def sample(self, n_samples: int, *, burn_in: int, thin: int) -> np.ndarray:
        """Run ``burn_in`` steps, then keep every chain's state every ``thin`` steps.

        Parameters
        ----------
        n_samples : int
            Orders to return (>= 1).
        burn_in : int
            Steps discarded first (>= 0).
        thin : int
            Steps between kept states (>= 1).

        Returns
        -------
        ndarray of int, shape (n_samples, n)
            Orders; samples ``c, c + n_chains, ..`` come from chain ``c``.

        References
        ----------
        .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Alg. 1 and Sec. 6.1 (burn-in, thinning).
        """
        n_samples = _check_int(n_samples, "n_samples")
        burn_in = _check_int(burn_in, "burn_in", low=0)
        thin = _check_int(thin, "thin")
        self.step(burn_in)
        out = []
        got = 0
        while got < n_samples:
            self.step(thin)
            out.append(self.perm.copy())
            got += self.n_chains
        return np.concatenate(out, axis=0)[:n_samples]


def uniform_permutations(n: int, n_samples: int, random_state: RandomState = None) -> np.ndarray:
    """``n_samples`` uniform random permutations of ``n`` players (the SV's order distribution).

    Parameters
    ----------
    n : int
        Number of players (>= 1).
    n_samples : int
        Number of permutations (>= 1).
    random_state : int, Generator or None
        Seed or generator.

    Returns
    -------
    ndarray of int, shape (n_samples, n)

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 2 (the SV as a random order value).
    """
    n = _check_int(n, "n")
    n_samples = _check_int(n_samples, "n_samples")
    rng = check_random_state(random_state)
    return np.argsort(rng.random((n_samples, n)), axis=1)


def sample_linear_extensions_rejection(
    R: np.ndarray, n_samples: int, random_state: RandomState = None, *, batch: int = 4096, max_draws: int = 50_000_000
) -> tuple[np.ndarray, int]:
    """Uniform linear extensions by rejection from uniform permutations (the naive baseline).

    Each kept order is an exact draw from ``Uniform(Π_⪯)``; the acceptance rate is ``|Π_⪯| / n!``.

    Parameters
    ----------
    R : ndarray of bool, shape (n, n)
        Strict precedence closure.
    n_samples : int
        Orders to return (>= 1).
    random_state : int, Generator or None
        Seed or generator.
    batch : int
        Permutations drawn at a time.
    max_draws : int
        Give up (``ValueError``) after this many permutations.

    Returns
    -------
    orders : ndarray of int, shape (n_samples, n)
    drawn : int
        Number of permutations drawn.

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Def. 2.2 (PSV = uniform on linear extensions).
    """
    R = _check_closure(R)
    n_samples = _check_int(n_samples, "n_samples")
    batch = _check_int(batch, "batch")
    max_draws = _check_int(max_draws, "max_draws")
    rng = check_random_state(random_state)
    n = R.shape[0]
    kept, drawn, got = [], 0, 0
    while got < n_samples:
        if drawn >= max_draws:
            raise ValueError(f"rejection sampling drew {drawn} permutations without enough linear extensions")
        P = uniform_permutations(n, batch, rng)
        drawn += batch
        ok = _respects(P, R)
        kept.append(P[ok])
        got += int(ok.sum())
    out = np.concatenate(kept)[:n_samples]
    return out, drawn


# ----------------------------------------------------------------------------- estimation


def _check_mask(mask, n: int, what: str = "a coalition mask") -> np.ndarray:
    mask = np.asarray(mask)
    if mask.shape != (n,):
        raise ValueError(f"{what} must have shape ({n},) (one coalition; see the Utility protocol), got {mask.shape}")
    if mask.dtype != bool:
        if mask.dtype.kind not in "iu" or not np.all((mask == 0) | (mask == 1)):
            raise TypeError(f"{what} must be boolean (or 0/1), got dtype {mask.dtype}")
        mask = mask.astype(bool)
    return mask


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


def _marginals(values, orders) -> tuple[np.ndarray, np.ndarray]:
    orders = _check_orders(orders)
    m, n = orders.shape
    try:
        values = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"values must be an array of numbers, got {type(values).__name__}") from None
    if values.shape != (m, n + 1):
        raise ValueError(f"values must have shape ({m}, {n + 1}) (prefix utilities of each order), got {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("values hold NaN or infinite utilities")
    mc = np.zeros((m, n))
    mc[np.arange(m)[:, None], orders] = np.diff(values, axis=1)
    return mc, orders


def rov_estimate(values: np.ndarray, orders: np.ndarray, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo random order value (eq. 1) with standard errors.

    Parameters
    ----------
    values : array (m, n+1)
        ``U`` along each order's prefixes (:func:`prefix_values`).
    orders : int array (m, n)
        The sampled orders.
    weights : array (m,), optional
        Importance weights (self-normalised): ``ψ̂ = Σ w·Δ / Σ w``.

    Returns
    -------
    psi : array (n,)
        Estimated values.
    se : array (n,)
        Standard errors: ``sd/√m`` for plain averages (treats retained orders as independent;
        ``inf`` for a single order), the delta-method ``sqrt(Σ w²(Δ − ψ̂)²)/Σ w`` for weighted ones.

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), eq. 1 and Sec. 4.
    """
    mc, orders = _marginals(values, orders)
    m, n = mc.shape
    if weights is None:
        psi = mc.mean(0)
        se = mc.std(0, ddof=1) / np.sqrt(m) if m > 1 else np.full(n, np.inf)
        return psi, se
    try:
        w = np.asarray(weights, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"weights must be an array of numbers, got {type(weights).__name__}") from None
    if w.shape != (m,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be finite, non-negative, shape ({m},), with a positive sum; got shape {w.shape}")
    psi = w @ mc / w.sum()
    se = np.sqrt((w[:, None] ** 2 * (mc - psi) ** 2).sum(0)) / w.sum()
    return psi, se


def marginal_contributions(values: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """``Δ[r, i] = U(π^i ∪ {i}) − U(π^i)`` along each order ``r``.

    Parameters
    ----------
    values : array (m, n+1)
        Prefix utilities (:func:`prefix_values`).
    orders : int array (m, n)

    Returns
    -------
    ndarray, shape (m, n)

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), eq. 1.
    """
    return _marginals(values, orders)[0]


def pasv_mc(
    utility,
    R: np.ndarray,
    lam=None,
    *,
    n_samples: int,
    burn_in: int,
    thin: int,
    n_chains: int = 64,
    init: str = "random",
    random_state: RandomState = None,
) -> dict[str, np.ndarray]:
    """Monte Carlo PASV: adjacent-swap MH orders (Alg. 1), then averaged marginal contributions (eq. 1).

    Parameters
    ----------
    utility : Utility, object with ``values_along``, or game table
        As in :func:`prefix_values`.
    R : ndarray of bool, shape (n, n)
        Strict precedence closure.
    lam : array (n,), optional
        Positive weights; default equal (PSV).
    n_samples, burn_in, thin, n_chains, init
        As in :class:`AdjacentSwapSampler` and its ``sample``.
    random_state : int, Generator or None
        Seed or generator of the sampler.

    Returns
    -------
    dict
        ``psi``, ``se``, ``orders``, ``values`` and the sampler's ``acceptance`` rate.

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Alg. 1 and Sec. 6.
    """
    if not (callable(utility) or hasattr(utility, "values_along") or isinstance(utility, (np.ndarray, list, tuple))):
        raise TypeError(f"utility must be a Utility, an object with values_along, or a game table; got {type(utility).__name__}")
    s = AdjacentSwapSampler(R, lam, n_chains=n_chains, init=init, random_state=random_state)
    orders = s.sample(n_samples, burn_in=burn_in, thin=thin)
    values = prefix_values(utility, orders)
    psi, se = rov_estimate(values, orders)
    return {"psi": psi, "se": se, "orders": orders, "values": values, "acceptance": np.float64(s.acceptance_rate)}


def priority_sweep(
    value_fn: Callable[[np.ndarray], np.ndarray], lam_base, group: Sequence[int], factors: Sequence[float]
) -> np.ndarray:
    """Priority sweeping: scale the weights of ``group`` by each factor (others fixed), record the values.

    Parameters
    ----------
    value_fn : callable
        ``value_fn(lam) -> (n,)`` values (exact or estimated PASV under weights ``lam``).
    lam_base : array (n,)
        Weights of everyone else (finite, > 0).
    group : sequence of int
        Players whose weight is multiplied by each factor.
    factors : sequence of float
        E.g. ``2.0 ** np.arange(-8, 9)``; each finite and > 0.

    Returns
    -------
    ndarray (len(factors), n)

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 3.4 (priority sweeping).
    """
    if not callable(value_fn):
        raise TypeError(f"value_fn must be callable on a weight vector, got {type(value_fn).__name__}")
    try:
        n = int(np.asarray(lam_base).shape[0]) if np.ndim(lam_base) == 1 else -1
    except (TypeError, ValueError):
        n = -1
    if n < 1:
        raise ValueError(f"lam_base must be a non-empty 1-D array of weights, got {lam_base!r}")
    lam_base = _check_weights(lam_base, n)
    g = np.asarray(group)
    if g.ndim != 1 or g.size == 0 or g.dtype.kind not in "iu" or g.min() < 0 or g.max() >= n:
        raise ValueError(f"group must be a non-empty list of player indices in 0..{n - 1}, got {group!r}")
    try:
        fac = np.asarray(factors, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"factors must be numbers, got {factors!r}") from None
    if fac.ndim != 1 or fac.size == 0:
        raise ValueError(f"factors must be a non-empty 1-D sequence, got {factors!r}")
    out = []
    for f in fac:
        if not (np.isfinite(f) and f > 0):
            raise ValueError(f"sweep factors must be finite and > 0, got {f}")
        lam = lam_base.copy()
        lam[g] *= f
        out.append(np.asarray(value_fn(lam), dtype=float))
    return np.stack(out)


# ----------------------------------------------------------------------------- data valuation


PROVIDERS = ("Owner", "Anchor", "Booster", "Copier", "Poisoner")
BLOCKS = ("Owner", "Anchor", "Booster|O", "Booster|A", "Copier|O", "Copier|A", "Poisoner|O", "Poisoner|A")
# Owner -> Anchor; Owner -> the Owner-derived half of each reuser; Anchor -> the Anchor-derived half (Fig. 4)
BLOCK_EDGES = ((0, 1), (0, 2), (1, 3), (0, 4), (1, 5), (0, 6), (1, 7))
BLOCK_PROVIDER = np.array([0, 1, 2, 2, 3, 3, 4, 4])


class DataMarket:
    """A data market on scikit-learn's digits (a stand-in for the paper's MNIST market, Sec. 5.1).

    Attributes
    ----------
    X, y : arrays (n, 64), (n,)
        Training points of all providers, block by block.
    block : int array (n,)
        Block of each point (index into ``BLOCKS``).
    provider : int array (n,)
        Provider of each point (index into ``PROVIDERS``).
    X_test, y_test : arrays
        Balanced held-out test set.

    Parameters
    ----------
    X, y, block, X_test, y_test : arrays
        As the attributes (``block`` values in ``0 .. 7``).

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 5.1, Fig. 4 and Table 1.
    """

    def __init__(self, X, y, block, X_test, y_test):
        X, X_test = _check_features(X, "X"), _check_features(X_test, "X_test")
        y, y_test = _check_labels(y, X.shape[0], "y"), _check_labels(y_test, X_test.shape[0], "y_test")
        block = np.asarray(block)
        if block.shape != y.shape or block.dtype.kind not in "iu" or block.min() < 0 or block.max() >= len(BLOCKS):
            raise ValueError(f"block must hold one block index in 0..{len(BLOCKS) - 1} per point, got shape {block.shape}")
        if X.shape[1] != X_test.shape[1]:
            raise ValueError(f"X and X_test must have the same number of features, got {X.shape[1]} and {X_test.shape[1]}")
        self.X, self.y, self.block = X, y, block
        self.provider = BLOCK_PROVIDER[block]
        self.X_test, self.y_test = X_test, y_test

    @property
    def n(self) -> int:
        """Number of points (players)."""
        return len(self.y)

    def closure(self) -> np.ndarray:
        """Point-level precedence closure of the lineage DAG (Fig. 4).

        Returns
        -------
        ndarray of bool, shape (n, n)

        References
        ----------
        .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Fig. 4.
        """
        return block_closure(self.block, BLOCK_EDGES)

    def weights(self, b: float, c: Sequence[float] = (0, 1, 0, 2, 2)) -> np.ndarray:
        """Provider weights ``λ = b**c[provider]``.

        Parameters
        ----------
        b : float
            Base, finite and > 0.
        c : sequence of 5 floats
            Exponents of (Owner, Anchor, Booster, Copier, Poisoner); the paper's ``(0, 1, 0, 2, 2)``.

        Returns
        -------
        ndarray, shape (n,)

        References
        ----------
        .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 5.1.
        """
        if isinstance(b, (bool, np.bool_)) or not isinstance(b, (int, float, np.integer, np.floating)):
            raise TypeError(f"b={b!r} must be a number > 0")
        if not (math.isfinite(b) and b > 0):
            raise ValueError(f"b={b!r} must be finite and > 0")
        c = np.asarray(c, dtype=float)
        if c.shape != (len(PROVIDERS),) or not np.all(np.isfinite(c)):
            raise ValueError(f"c must be {len(PROVIDERS)} finite exponents, one per provider {PROVIDERS}, got {c}")
        return float(b) ** c[self.provider]


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


def _rotate(img: np.ndarray, angle: float) -> np.ndarray:
    from scipy.ndimage import rotate

    return rotate(img.reshape(8, 8), angle, reshape=False, order=1, mode="constant").ravel()


def make_data_market(n_per_half: int = 10, n_test_per_class: int = 30, random_state: RandomState = None) -> DataMarket:
    """Build the digits data market with lineage (stand-in for the paper's MNIST market).

    Providers (each ``2 * n_per_half`` points): **Owner** (original digits, classes balanced);
    **Anchor** (each Owner-derived parent rotated by ±(8–15)°: a classical augmentation);
    **Booster** (half synthesised from Owner, half from Anchor: the mean of two same-class parents
    plus Gaussian noise, a crude class-conditional generator standing in for GAN/diffusion
    samples); **Copier** (exact copies, half of Owner, half of Anchor points); **Poisoner** (copies
    like Copier, labels replaced by a random other class). Pixel values are scaled to [0, 1].

    Parameters
    ----------
    n_per_half : int
        Points in each half-provider block (a provider has ``2 * n_per_half``), >= 1.
    n_test_per_class : int
        Test digits per class, >= 1; with the Owner's ``ceil(n_per_half / 5)`` points per
        class it must fit in the smallest digits class (174 images).
    random_state : int, Generator or None
        Seed or generator.

    Returns
    -------
    DataMarket

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 5.1 and Fig. 4.
    """
    from sklearn.datasets import load_digits

    n_per_half = _check_int(n_per_half, "n_per_half")
    n_test_per_class = _check_int(n_test_per_class, "n_test_per_class")
    rng = check_random_state(random_state)
    Xall, yall = load_digits(return_X_y=True)
    cmin = int(np.bincount(yall).min())
    if n_test_per_class + -(-2 * n_per_half // 10) > cmin:
        raise ValueError(
            f"n_test_per_class={n_test_per_class} plus the {-(-2 * n_per_half // 10)} Owner points per class "
            f"that n_per_half={n_per_half} needs exceed the {cmin} images of the smallest digits class"
        )
    Xall = Xall / 16.0
    idx = rng.permutation(len(yall))
    test = np.concatenate([idx[yall[idx] == c][:n_test_per_class] for c in range(10)])
    pool = np.setdiff1d(idx, test)
    pool = pool[rng.permutation(pool.size)]
    m = 2 * n_per_half
    # balanced Owner: cycle over classes
    by_class = [pool[yall[pool] == c] for c in range(10)]
    owner = np.array([by_class[i % 10][i // 10] for i in range(m)])
    Xo, yo = Xall[owner], yall[owner]
    angles = rng.uniform(8, 15, m) * rng.choice([-1, 1], m)
    Xa = np.stack([_rotate(x, a) for x, a in zip(Xo, angles)])
    ya = yo.copy()

    def synth(Xp, yp, count):
        out_x, out_y = [], []
        for _ in range(count):
            i = rng.integers(len(yp))
            same = np.flatnonzero(yp == yp[i])
            j = rng.choice(same)
            x = 0.5 * (Xp[i] + Xp[j]) + rng.normal(0, 0.05, Xp.shape[1])
            out_x.append(np.clip(x, 0, 1))
            out_y.append(yp[i])
        return np.array(out_x), np.array(out_y)

    h = n_per_half
    XbO, ybO = synth(Xo, yo, h)
    XbA, ybA = synth(Xa, ya, h)
    co, ca = rng.choice(m, h, replace=False), rng.choice(m, h, replace=False)
    po, pa = rng.choice(m, h, replace=False), rng.choice(m, h, replace=False)

    def flip(y):
        return (y + rng.integers(1, 10, size=y.size)) % 10

    X = np.concatenate([Xo, Xa, XbO, XbA, Xo[co], Xa[ca], Xo[po], Xa[pa]])
    y = np.concatenate([yo, ya, ybO, ybA, yo[co], ya[ca], flip(yo[po]), flip(ya[pa])])
    block = np.repeat(np.arange(8), [m, m, h, h, h, h, h, h])
    return DataMarket(X, y, block, Xall[test], yall[test])


class KNNUtility:
    """Test accuracy of a k-NN classifier retrained on a coalition of training points (Sec. 5.1).

    ``U(S)`` is the accuracy on the test set of the majority vote among the ``min(k, |S|)``
    nearest members of ``S`` (Euclidean; a tied vote goes to the class whose members have the
    smaller sum of distance ranks, then to the smaller label);
    ``U(∅) = 1 / n_classes``, the accuracy of a constant guess on a balanced test set.
    :meth:`values_along` computes all prefixes of many orders at once, incrementally.
    A :class:`Utility`: called on one coalition mask of shape ``(n,)``.

    Parameters
    ----------
    X, y : arrays (n, d), (n,)
        Training points (the players) and their labels in ``0 .. n_classes-1``.
    X_test, y_test : arrays (T, d), (T,)
        Test set.
    k : int
        Neighbours (>= 1).
    n_classes : int
        Number of classes (>= 2).

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 5.1 (k-NN test accuracy as the utility).
    """

    def __init__(self, X, y, X_test, y_test, k: int = 5, n_classes: int = 10):
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k={k!r} must be a positive integer")
        n_classes = _check_int(n_classes, "n_classes", low=2)
        X, X_test = _check_features(X, "X"), _check_features(X_test, "X_test")
        if X.shape[1] != X_test.shape[1]:
            raise ValueError(f"X and X_test must have the same number of features, got {X.shape[1]} and {X_test.shape[1]}")
        y, y_test = _check_labels(y, X.shape[0], "y"), _check_labels(y_test, X_test.shape[0], "y_test")
        if max(y.max(), y_test.max()) >= n_classes:
            raise ValueError(f"labels must lie in 0..{n_classes - 1} (n_classes={n_classes})")
        self.k, self.n_classes = int(k), int(n_classes)
        self.y = y
        self.y_test = y_test
        d2 = (X_test**2).sum(1)[:, None] + (X**2).sum(1)[None, :] - 2 * X_test @ X.T
        # rank-based distances make ties impossible and the result deterministic
        self.rank = np.argsort(np.argsort(d2, axis=1, kind="stable"), axis=1).astype(np.int64)  # (T, n)
        self.n = len(self.y)
        self.n_calls = 0

    def __call__(self, mask: np.ndarray) -> float:
        """Test accuracy of the k-NN vote of the coalition ``mask`` (shape ``(n,)``)."""
        mask = _check_mask(mask, self.n)
        self.n_calls += 1
        if not mask.any():
            return 1.0 / self.n_classes
        idx = np.flatnonzero(mask)
        r = self.rank[:, idx]  # (T, s)
        kk = min(self.k, idx.size)
        nn = np.argsort(r, axis=1)[:, :kk]  # (T, kk) nearest first
        lab = self.y[idx][nn]  # (T, kk)
        rk = np.take_along_axis(r, nn, axis=1)
        onehot = lab[..., None] == np.arange(self.n_classes)  # (T, kk, C)
        score = np.sum(onehot * (self._tie - rk[..., None]), axis=1)  # (T, C), integers: exact ties
        return float(np.mean(score.argmax(-1) == self.y_test))

    @property
    def _tie(self) -> int:
        # score_c = (k·n + 1)·count_c − Σ_{members of c} rank: the count decides, the rank sum breaks ties
        return self.k * self.n + 1

    def values_along(self, orders: np.ndarray, batch: int = 128) -> np.ndarray:
        """Accuracy after each prefix of each order, by incremental top-k and vote updates.

        Parameters
        ----------
        orders : int array, shape (m, n)
            Permutations of the points.
        batch : int
            Orders processed together (memory ~ ``batch * T * n``).

        Returns
        -------
        ndarray, shape (m, n+1)
            Equal to calling the utility on every prefix.

        References
        ----------
        .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), eq. 1 and Sec. 5.1.
        """
        orders = _check_orders(orders, self.n)
        batch = _check_int(batch, "batch")
        m, n = orders.shape
        T, k, C = self.rank.shape[0], self.k, self.n_classes
        out = np.empty((m, n + 1))
        out[:, 0] = 1.0 / C
        self.n_calls += m * n
        for s in range(0, m, batch):
            o = orders[s : s + batch]  # (B, n)
            B = o.shape[0]
            D = self.rank[:, o].transpose(1, 2, 0).copy()  # (B, n, T) distance rank of each arrival
            L = self.y[o]  # (B, n)
            BT = B * T
            topd = np.full((BT, k), n, dtype=np.int64)  # rank n: empty slot (ranks are 0..n-1)
            topl = np.full((BT, k), -1, dtype=np.int64)  # -1: empty slot
            score = np.zeros((BT, C), dtype=np.int64)
            flat = np.arange(BT)
            yt = np.tile(self.y_test, B)
            for t in range(n):
                d = D[:, t, :].ravel()  # (BT,)
                lab = np.repeat(L[:, t], T)
                worst = topd.argmax(-1)
                wv = topd[flat, worst]
                rep = np.flatnonzero(d < wv)
                old = topl[rep, worst[rep]]
                had = old >= 0
                score[rep[had], old[had]] -= self._tie - wv[rep[had]]
                score[rep, lab[rep]] += self._tie - d[rep]
                topd[rep, worst[rep]] = d[rep]
                topl[rep, worst[rep]] = lab[rep]
                out[s : s + B, t + 1] = (score.argmax(-1) == yt).reshape(B, T).mean(1)
        return out


class CoalitionModelUtility:
    """Utility of a coalition of *providers* (blocks): a model retrained on their pooled data, scored on a test set.

    ``U(G) = score(model fitted on ⋃_{g∈G} data_g)``; ``U(∅) = empty_value``. Values are cached by
    coalition, so an exact computation over ``2**n_groups`` coalitions trains each model once.

    A :class:`Utility`: called on one coalition mask of shape ``(n_groups,)``.

    Parameters
    ----------
    make_model : callable
        Returns a fresh scikit-learn estimator (``fit``/``score``).
    X, y : arrays
        Pooled training data; ``groups[i]`` is the provider/block of point ``i``.
    groups : int array (len(y),)
        Group of each point, ``0 .. n_groups-1``.
    X_test, y_test : arrays
        Test set for ``score``.
    empty_value : float
        ``U(∅)`` (finite).

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 5.1 (providers valued by retraining).
    """

    def __init__(self, make_model, X, y, groups, X_test, y_test, empty_value: float = 0.1):
        if not callable(make_model):
            raise TypeError(f"make_model must be a callable returning an estimator, got {type(make_model).__name__}")
        X, X_test = _check_features(X, "X"), _check_features(X_test, "X_test")
        g = np.asarray(groups)
        if g.shape != (X.shape[0],) or g.dtype.kind not in "iu" or g.min() < 0:
            raise ValueError(f"groups must hold one non-negative group index per row of X ({X.shape[0]}), got shape {g.shape}")
        y = np.asarray(y)
        if y.shape[:1] != (X.shape[0],) or np.asarray(y_test).shape[:1] != (X_test.shape[0],):
            raise ValueError(f"y and y_test must have one entry per row of X and X_test, got {y.shape} and {np.shape(y_test)}")
        if isinstance(empty_value, (bool, np.bool_)) or not isinstance(empty_value, (int, float, np.integer, np.floating)):
            raise TypeError(f"empty_value={empty_value!r} must be a number")
        if not math.isfinite(empty_value):
            raise ValueError(f"empty_value={empty_value!r} must be finite")
        self.make_model, self.X, self.y = make_model, X, y
        self.groups = g.astype(int)
        self.n = int(self.groups.max()) + 1
        self.X_test, self.y_test, self.empty_value = X_test, y_test, float(empty_value)
        self.cache: dict[int, float] = {}
        self.n_fits = 0

    def __call__(self, mask: np.ndarray) -> float:
        """``U(G)`` of the coalition of groups ``mask`` (shape ``(n_groups,)``), cached."""
        mask = _check_mask(mask, self.n)
        key = int(np.sum(mask.astype(np.int64) << np.arange(self.n)))
        if key not in self.cache:
            if not mask.any():
                self.cache[key] = self.empty_value
            else:
                rows = mask[self.groups]
                model = self.make_model().fit(self.X[rows], self.y[rows])
                self.cache[key] = float(model.score(self.X_test, self.y_test))
                self.n_fits += 1
        return self.cache[key]


def pairwise_discrepancy_trace(
    R: np.ndarray,
    lam=None,
    *,
    n_chains: int = 1000,
    n_steps: int = 1000,
    every: int = 10,
    stop_below: float | None = None,
    random_state: RandomState = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Mixing diagnostic ``D_t = max_{i,j} |P_t(i before j) − P*(i before j)|`` (Sec. 6.1, App. D.1.1).

    ``n_chains`` chains start at the same topological order; ``P_t`` is their empirical pairwise
    order frequency after ``t`` steps and ``P*`` the exact stationary value from :class:`PasvDP`.
    The empirical mixing time is the first ``t`` with ``D_t < 1/4``; with ``stop_below`` the run
    stops at the first recorded ``D_t`` under that level.

    Parameters
    ----------
    R : ndarray of bool, shape (n, n)
        Strict precedence closure (``n <= 24``: the exact ``P*`` needs :class:`PasvDP`).
    lam : array (n,), optional
        Positive weights; default equal.
    n_chains : int
        Chains (>= 1).
    n_steps : int
        Largest number of steps (>= 0).
    every : int
        Steps between records (>= 1).
    stop_below : float, optional
        Stop at the first record below this level.
    random_state : int, Generator or None
        Seed or generator of the sampler.

    Returns
    -------
    steps : int array (K,)
    D : float array (K,)

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 6.1, Fig. 8 and App. D.1.1.
    """
    n_chains = _check_int(n_chains, "n_chains")
    n_steps = _check_int(n_steps, "n_steps", low=0)
    every = _check_int(every, "every")
    if stop_below is not None and not (isinstance(stop_below, (int, float, np.integer, np.floating)) and math.isfinite(stop_below)):
        raise ValueError(f"stop_below={stop_below!r} must be a finite number or None")
    exact = PasvDP(R, lam).precedence_probs()
    s = AdjacentSwapSampler(R, lam, n_chains=n_chains, init="topological", random_state=random_state)
    steps, D = [], []
    for t in range(0, n_steps + 1, every):
        if t:
            s.step(every)
        emp = (s.pos[:, :, None] < s.pos[:, None, :]).mean(0)  # (n, n)
        steps.append(t)
        D.append(np.abs(emp - exact).max())
        if stop_below is not None and D[-1] < stop_below:
            break
    return np.asarray(steps), np.asarray(D)


# ----------------------------------------------------------------------------- feature attribution

DIABETES_FEATURES = ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6")


def diabetes_dags() -> dict[str, np.ndarray]:
    """Two precedence structures over scikit-learn's diabetes features (stand-in for Census Income, Fig. 6).

    ``"ordered partition"``: demographics first, ``{age, sex} ≺ {bmi, bp, s1..s6}`` (Frye et al.'s
    coarse form). ``"general DAG"``: a finer, illustrative causal guess: age, sex ≺ bmi, bp;
    bmi ≺ s5 (triglycerides), s6 (glucose); s1 (total cholesterol) ≺ s2 (LDL), s3 (HDL);
    s2, s3 ≺ s4 (total/HDL ratio); bp ≺ s6.

    Parameters
    ----------
    None

    Returns
    -------
    dict of str to ndarray of bool, shape (10, 10)
        Closures indexed by :data:`DIABETES_FEATURES`.

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 5.2 and Fig. 6.
    .. [2] C. Frye, C. Rowat, I. Feige, "Asymmetric Shapley values", NeurIPS 2020.
    """
    f = {name: i for i, name in enumerate(DIABETES_FEATURES)}
    op = ordered_partition_closure([[f["age"], f["sex"]], [f[x] for x in DIABETES_FEATURES[2:]]])
    e = [("age", "bmi"), ("age", "bp"), ("sex", "bmi"), ("sex", "bp"), ("bmi", "s5"), ("bmi", "s6"),
         ("s1", "s2"), ("s1", "s3"), ("s2", "s4"), ("s3", "s4"), ("bp", "s6")]  # fmt: skip
    dag = precedence_closure(len(DIABETES_FEATURES), [(f[a], f[b]) for a, b in e])
    return {"ordered partition": op, "general DAG": dag}


class ImputedFeatureUtility:
    """Feature-coalition utility with k-NN conditional imputation (Sec. 5.2, App. F.1).

    ``u_S(x) = mean_{x' ∈ kNN_S(x)} f(x_S ⊕ x'_{S^c})``, where ``kNN_S(x)`` are the ``k`` background
    rows nearest to ``x`` on the (standardised) features in ``S``; ``U(S)`` is the R² of ``u_S`` on
    the evaluation set (regression stand-in for the paper's mean true-class probability).
    ``U(∅)`` uses the whole background (the marginal), so it is the R² of a constant ≈ 0.

    Parameters
    ----------
    predict : callable
        Fitted model's ``predict``: (m, d) -> (m,).
    X_background : array (nb, d)
    X_eval, y_eval : arrays (ne, d), (ne,)
        Evaluation rows and targets (the targets must vary).
    k : int
        Neighbours used for the imputation, ``1 <= k <= nb``.

    A :class:`Utility`: called on one feature mask of shape ``(d,)``.

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 5.2 and App. F.1.
    """

    def __init__(self, predict, X_background, X_eval, y_eval, k: int = 20):
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k={k!r} must be a positive integer")
        if not callable(predict):
            raise TypeError(f"predict must be callable (m, d) -> (m,), got {type(predict).__name__}")
        Xb, Xe = _check_features(X_background, "X_background"), _check_features(X_eval, "X_eval")
        if Xb.shape[1] != Xe.shape[1]:
            raise ValueError(f"X_background and X_eval must have the same features, got {Xb.shape[1]} and {Xe.shape[1]}")
        if k > Xb.shape[0]:
            raise ValueError(f"k={k} exceeds the {Xb.shape[0]} background rows")
        try:
            ye = np.asarray(y_eval, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"y_eval must be numeric, got {type(y_eval).__name__}") from None
        if ye.shape != (Xe.shape[0],) or not np.all(np.isfinite(ye)) or np.var(ye) == 0:
            raise ValueError(f"y_eval must be finite, of shape ({Xe.shape[0]},), and not constant (R² needs a variance)")
        self.predict, self.k = predict, int(k)
        self.Xb, self.Xe, self.ye = Xb, Xe, ye
        sd = self.Xb.std(0)
        self.scale = np.where(sd > 0, sd, 1.0)
        self.n = self.Xb.shape[1]
        self.n_calls = 0

    def __call__(self, mask: np.ndarray) -> float:
        """``U(S)``: R² of the imputed predictions for the feature coalition ``mask`` (shape ``(d,)``)."""
        mask = _check_mask(mask, self.n, "a feature mask")
        self.n_calls += 1
        ne, nb = self.Xe.shape[0], self.Xb.shape[0]
        if mask.any():
            A = self.Xe[:, mask] / self.scale[mask]
            B = self.Xb[:, mask] / self.scale[mask]
            d2 = (A**2).sum(1)[:, None] + (B**2).sum(1)[None, :] - 2 * A @ B.T  # (ne, nb)
            nn = np.argsort(d2, axis=1, kind="stable")[:, : self.k]  # (ne, k)
        else:
            nn = np.tile(np.arange(nb), (ne, 1))
        Z = self.Xb[nn].copy()  # (ne, k', d) imputed rows
        Z[:, :, mask] = self.Xe[:, None, mask]
        u = self.predict(Z.reshape(-1, self.n)).reshape(Z.shape[0], Z.shape[1]).mean(1)  # (ne,)
        return float(1.0 - np.mean((self.ye - u) ** 2) / np.var(self.ye))


# --------------------------------------------------------------------------- the chapter's experiment loops
def value_markets(market_seeds, *, market_half: int, n_test_per_class: int, knn_k: int, mh_orders: int,
                  burn_n2: int, thin_n2: int, mh_chains: int, weight_bases: Sequence[float] = (2, 8, 32)):
    """Chapter 15's data-market experiment (the paper's Table 1): provider values under every method.

    For every seed ``ms`` a market is drawn (:func:`make_data_market`); its points are valued
    with a :class:`KNNUtility` by the Shapley value (``mh_orders`` uniform orders, seeded by
    ``ms``), WSV (:func:`pasv_mc` on the two-block order with weights of base 8), PSV (the
    market's precedence closure, equal weights) and PASV with weight bases ``weight_bases``;
    the MH chains use burn-in ``burn_n2 n^2`` and thinning ``thin_n2 n^2`` and are seeded
    by ``100 ms + k`` for the ``k``-th method. Point values are summed per provider.

    Parameters
    ----------
    market_seeds : iterable of int
    market_half, n_test_per_class : int
        Passed to :func:`make_data_market`.
    knn_k : int
        Neighbours of the :class:`KNNUtility`.
    mh_orders, burn_n2, thin_n2, mh_chains : int
        Orders per estimate, burn-in and thinning in units of ``n^2``, MH chains.
    weight_bases : sequence of float
        The PASV weight bases ``b``.

    Returns
    -------
    (list of dict, list of dict, list of DataMarket)
        Rows ``seed, method, provider, value``; per market, the :func:`pasv_mc` results by
        method; the markets.
    References
    ----------
    .. [1] Lee et al., "Priority-Aware Shapley Value", ICML 2026 (arXiv:2602.09326), Sec. 5 (data-market experiment, Table 1).
    """
    rows, extras, markets = [], [], []
    for ms in market_seeds:
        market = make_data_market(market_half, n_test_per_class, random_state=ms)
        n = market.n
        util = KNNUtility(market.X, market.y, market.X_test, market.y_test, k=knn_k)
        R = market.closure()
        R_wsv = ordered_partition_closure([np.flatnonzero(market.provider == 0), np.flatnonzero(market.provider != 0)])
        mh = dict(n_samples=mh_orders, burn_in=burn_n2 * n * n, thin=thin_n2 * n * n, n_chains=mh_chains)
        vals, extra = {}, {}
        O = uniform_permutations(n, mh_orders, random_state=ms)
        vals["SV"] = rov_estimate(util.values_along(O), O)[0]
        runs = {"WSV": (R_wsv, market.weights(8)), "PSV": (R, None)}
        runs.update({f"PASV b={b}": (R, market.weights(b)) for b in weight_bases})
        for k, (name, (RR, lam)) in enumerate(runs.items()):
            res = pasv_mc(util, RR, lam, random_state=ms * 100 + k, **mh)
            vals[name] = res["psi"]
            extra[name] = res
        markets.append(market)
        extras.append(extra)
        for method, v in vals.items():
            sums = np.bincount(market.provider, weights=v, minlength=5)
            rows += [dict(seed=ms, method=method, provider=PROVIDERS[j], value=sums[j]) for j in range(5)]
    return rows, extras, markets


def feature_sweep_shift(R: np.ndarray, utility_table, base: np.ndarray, lams: np.ndarray, players) -> np.ndarray:
    """Priority sweep of single players: the change of each swept player's own exact PASV value.

    For each player ``i`` of ``players`` its weight runs over ``lams`` (the others stay 1)
    with :func:`priority_sweep` over :class:`PasvDP` on ``R``; the result is
    ``shift[i, k] = psi_i(lams[k]) - base[i]`` (rows of unswept players are zero).

    Parameters
    ----------
    R : ndarray of bool, shape (n, n)
        The precedence closure.
    utility_table : ndarray, shape (2**n,)
        The game (:func:`game_table`).
    base : ndarray, shape (n,)
        The values at equal weights.
    lams : ndarray
        The swept weights.
    players : iterable of int
        The players to sweep.

    Returns
    -------
    ndarray, shape (n, len(lams))
    References
    ----------
    .. [1] Lee et al., "Priority-Aware Shapley Value", ICML 2026 (arXiv:2602.09326), Sec. 5 (priority sweeps).
    """
    base = np.asarray(base, dtype=float)
    n = base.size
    lams = np.asarray(lams, dtype=float)
    shift = np.zeros((n, lams.size))
    for i in players:
        vals = priority_sweep(lambda lam: PasvDP(R, lam).values(utility_table), np.ones(n), [i], lams)
        shift[i] = vals[:, i] - base[i]  # change of the swept player's own value
    return shift


def mixing_runs(ns, n_dags: int, *, n_chains: int, seed: int, threshold: float = 0.25):
    """Chapter 15's mixing experiment: the adjacent-swap sampler's mixing time on random DAGs.

    For each ``n`` and DAG ``d < n_dags`` (:func:`random_dag` with edge probability
    ``3/n``, seeded by ``1000 seed + 10 n + d``), under equal weights and weights drawn from
    ``U(1, 256)`` (``default_rng(seed + n + d)``), :func:`pairwise_discrepancy_trace` runs
    ``4 n^2`` steps (recorded every ``max(1, n // 4)``; DAG 0 runs to the end, the others
    stop below ``threshold``). The mixing time is the first recorded step with
    ``D < threshold``, censored at the last step when it is never reached.

    Parameters
    ----------
    ns : iterable of int
        Player counts.
    n_dags : int
        Random DAGs per ``n``.
    n_chains : int
        Chains of :func:`pairwise_discrepancy_trace`.
    seed : int
        The run's seed (DAGs, weights and chains derive from it).
    threshold : float
        The discrepancy that counts as mixed.

    Returns
    -------
    (list of dict, dict)
        Rows ``n, dag, weights, t_mix, censored``; the traces ``(steps, D)`` of DAG 0 by
        ``(n, weights)``.
    References
    ----------
    .. [1] Lee et al., "Priority-Aware Shapley Value", ICML 2026 (arXiv:2602.09326), Sec. 4 (the MH sampler's mixing bound).
    """
    n_dags = check_int(n_dags, "n_dags")
    rows, traces = [], {}
    for n in ns:
        for d in range(n_dags):
            R_mix = random_dag(n, 3.0 / n, random_state=seed * 1000 + 10 * n + d)
            for label, lam in (("equal λ", np.ones(n)), ("λ ~ U(1, 256)", np.random.default_rng(seed + n + d).uniform(1, 256, n))):
                steps, D = pairwise_discrepancy_trace(R_mix, lam, n_chains=n_chains, n_steps=4 * n * n, every=max(1, n // 4),
                                                      stop_below=None if d == 0 else threshold, random_state=seed + d)
                hit = np.flatnonzero(D < threshold)
                censored = hit.size == 0
                rows.append(dict(n=n, dag=d, weights=label, t_mix=float(steps[-1] if censored else steps[hit[0]]), censored=censored))
                if d == 0:
                    traces[(n, label)] = (steps, D)
    return rows, traces


def sampler_efficiency(utility_table, R: np.ndarray, settings, orders: Sequence[int], reps: int, *, seed: int,
                       burn_in: int | None = None) -> list[dict]:
    """Chapter 15's sampler comparison: RMSE of Monte Carlo PASV against its exact value, per budget.

    For each ``(label, lam)`` of ``settings``, each number of orders ``N`` and repetition
    ``r`` (generator ``default_rng([seed, N, r])``): Algorithm 1's MH sampler
    (:class:`AdjacentSwapSampler`, ``N`` chains from random starts, burn-in ``burn_in``,
    default ``4 n^2``) and rejection sampling of linear extensions with importance weights
    (:func:`sample_linear_extensions_rejection`, :func:`order_log_weights`); each estimate's
    RMSE over players against :func:`pasv_exact`; the cost is ``n N`` utility calls.

    Parameters
    ----------
    utility_table : ndarray, shape (2**n,)
    R : ndarray of bool, shape (n, n)
    settings : iterable of (str, ndarray)
        ``(label, weights)``.
    orders : sequence of int
        Budgets ``N`` (retained orders).
    reps : int
        Repetitions per budget.
    seed : int
    burn_in : int, optional

    Returns
    -------
    list of dict
        Rows ``setting, sampler, N, calls, err, perms`` (``perms``: uniform permutations
        the rejection sampler drew; NaN for MH).
    References
    ----------
    .. [1] Lee et al., "Priority-Aware Shapley Value", ICML 2026 (arXiv:2602.09326), Alg. 1 and Sec. 4.
    """
    reps = check_int(reps, "reps")
    n = np.asarray(R).shape[0]
    burn = 4 * n * n if burn_in is None else burn_in
    rows = []
    for label, lam in settings:
        exact = pasv_exact(utility_table, R, lam)
        for N in orders:
            for r in range(reps):
                rr = np.random.default_rng([seed, N, r])
                O = AdjacentSwapSampler(R, lam, n_chains=N, init="random", random_state=rr).sample(N, burn_in=burn, thin=1)
                err_mh = np.sqrt(np.mean((rov_estimate(prefix_values(utility_table, O), O)[0] - exact) ** 2))
                O2, drawn = sample_linear_extensions_rejection(R, N, random_state=rr, batch=256)
                w = np.exp(order_log_weights(O2, R, lam))
                err_is = np.sqrt(np.mean((rov_estimate(prefix_values(utility_table, O2), O2, weights=w)[0] - exact) ** 2))
                rows += [dict(setting=label, sampler="MH (Alg. 1)", N=N, calls=n * N, err=err_mh, perms=np.nan),
                         dict(setting=label, sampler="rejection + IS", N=N, calls=n * N, err=err_is, perms=drawn)]
    return rows
