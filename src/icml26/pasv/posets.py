"""Precedence relations and their linear extensions, and the PASV order distribution (eq. 4).

Closures ``R`` from edges, block DAGs and ordered partitions (:func:`precedence_closure`,
:func:`block_closure`, :func:`ordered_partition_closure`), random DAGs (:func:`random_dag`),
linear extensions (:func:`topological_order`, :func:`is_linear_extension`,
:func:`linear_extensions`), maximal elements ``M(S)`` (Def. 2.5), and the order weights
``p(π)`` of eq. 4 (:func:`order_log_weights`, :func:`order_distribution`).

Reference: K. Lee, Z. Liu, W. Tang, Y. Zhang, "Priority-Aware Shapley Value", ICML 2026,
arXiv:2602.09326. Conventions (closures ``R``, orders, bitmask game tables): :mod:`icml26.pasv`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._common import RandomState, check_random_state
from ._checks import _check_closure, _check_int, _check_orders, _check_weights

__all__ = [
    "precedence_closure",
    "block_closure",
    "ordered_partition_closure",
    "random_dag",
    "topological_order",
    "is_linear_extension",
    "linear_extensions",
    "maximal_elements",
    "order_log_weights",
    "order_distribution",
]


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
