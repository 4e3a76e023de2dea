r"""Scoring retrieval: per-query success, the capacity protocol, and a paired sign test.

:func:`retrieval_success` (is the stored pattern nearest the retrieved state the
target?), :func:`capacity_curve` and :func:`capacity_threshold` (success against the
number of stored patterns, and its breaking point) and :func:`paired_sign_test` (exact
McNemar test of two memories on the same queries).

References
----------
.. [1] C. Tankala, K. Balasubramanian. "Dense Associative Memory for Gaussian Distributions"
   (v1: "Dense Associative Memory on the Bures-Wasserstein Space"), ICML 2026, arXiv:2509.23162.
   Authors' code: https://github.com/chandantankala/DDAM.
.. [2] P. C. Álvarez-Esteban, E. del Barrio, J. A. Cuesta-Albertos, C. Matrán. "A fixed-point
   approach to barycenters in Wasserstein space", J. Math. Anal. Appl. 441 (2016).
.. [3] H. Ramsauer et al. "Hopfield Networks is All You Need", ICLR 2021 (the Euclidean baseline).
"""

from __future__ import annotations

import numpy as np

from .._common import check_random_state
from ._checks import _check_beta, _check_int, _check_real, _float_array
from .data import perturb_gaussians, sample_commuting_gaussians
from .estimators import BWDenseAssociativeMemory, EuclideanDenseAssociativeMemory, gaussian_features

__all__ = ["retrieval_success", "capacity_curve", "capacity_threshold", "paired_sign_test"]


def retrieval_success(
    mus, Sigmas, q_means, q_covs, targets, beta: float, *, method: str = "bw", max_iter: int = 10, tol: float = 1e-6
) -> np.ndarray:
    """Per-query success (bool array (Q,)): the stored pattern nearest to the retrieved state is the target.

    Parameters
    ----------
    mus : array (N, d)
    Sigmas : array (N, d, d)
        Stored patterns.
    q_means : array (Q, d)
    q_covs : array (Q, d, d)
        Queries.
    targets : int array (Q,)
        Index of each query's pattern, in ``[0, N)``.
    beta : float > 0
        Inverse temperature.
    method : {"bw", "mean", "mean+cov"}
        ``"bw"`` (this paper's memory, nearest in :math:`W_2`), ``"mean"`` or ``"mean+cov"``
        (the Euclidean memory on :func:`gaussian_features`, nearest in Euclidean distance).
    max_iter : int >= 1
        Maximum number of steps.
    tol : float >= 0
        Convergence tolerance.

    Returns
    -------
    numpy.ndarray (Q,) of bool

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, Sec. 5 (retrieval accuracy); authors' code: https://github.com/chandantankala/DDAM.
    """
    if method not in ("bw", "mean", "mean+cov"):
        raise ValueError(f"method={method!r} is not valid; use 'bw', 'mean' or 'mean+cov'")
    n_stored = np.shape(mus)[0] if np.ndim(mus) >= 1 else 0
    targets = np.asarray(targets)
    if targets.ndim != 1 or targets.shape[0] != (np.shape(q_means)[0] if np.ndim(q_means) == 2 else -1):
        raise ValueError(
            f"targets must have shape (Q,) with one entry per query, got {targets.shape} for queries of shape {np.shape(q_means)}"
        )
    if targets.dtype.kind not in "iu" or (targets.size and (targets.min() < 0 or targets.max() >= n_stored)):
        raise ValueError(f"targets must be integer indices in [0, {n_stored}), got {targets[:5]}...")
    if method == "bw":
        mem = BWDenseAssociativeMemory(beta, max_iter=max_iter, tol=tol).fit(mus, Sigmas)
        pred = mem.predict(q_means, q_covs)
    elif method in ("mean", "mean+cov"):
        F, Fq = gaussian_features(mus, Sigmas, mode=method), gaussian_features(q_means, q_covs, mode=method)
        pred = EuclideanDenseAssociativeMemory(beta, max_iter=max_iter, tol=tol).fit(F).predict(Fq)
    return pred == targets


def capacity_curve(
    d: int, n_grid, *, beta: float = 1.0, n_queries: int = 32, stop_below: float = 0.5, random_state=None
) -> np.ndarray:
    r"""Retrieval success rate against the number of stored patterns (the authors' capacity protocol).

    For each N in ``n_grid`` (increasing): N patterns from :func:`sample_commuting_gaussians`;
    ``n_queries`` queries = patterns ``0, 1, ..., N-1, 0, 1, ...`` (cyclically, so small memories are
    queried as often as large ones), each perturbed independently at the theory radius
    :math:`r=1/\sqrt{\beta N}`; success = the nearest stored pattern to the retrieved state is the
    original. Once the rate falls
    below ``stop_below`` the larger N are skipped (NaN): they cannot change the breaking point.

    Parameters
    ----------
    d : int >= 1
        Dimension.
    n_grid : sequence of int
        Strictly increasing numbers of stored patterns, each >= 1.
    beta : float > 0
        Inverse temperature.
    n_queries : int >= 1
        Queries per N.
    stop_below : float in [0, 1]
        Skip the larger N once the rate is below this.
    random_state : int, numpy.random.Generator or None
        Seed or generator.

    Returns
    -------
    numpy.ndarray (len(n_grid),)
        Success rates (NaN where skipped).

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, Sec. 5 (capacity experiment); authors' code: https://github.com/chandantankala/DDAM.
    """
    d = _check_int(d, "d")
    grid = _check_grid(n_grid)
    beta = _check_beta(beta)
    n_queries = _check_int(n_queries, "n_queries")
    stop_below = _check_real(stop_below, "stop_below", low=0.0, high=1.0)
    n_grid = grid
    rng = check_random_state(random_state)
    out = np.full(len(n_grid), np.nan)
    for k, N in enumerate(n_grid):
        mus, S = sample_commuting_gaussians(int(N), d, random_state=rng)
        tgt = np.arange(int(n_queries)) % int(N)
        qm, qc = perturb_gaussians(mus[tgt], S[tgt], 1.0 / np.sqrt(beta * N), random_state=rng)
        out[k] = retrieval_success(mus, S, qm, qc, tgt, beta).mean()
        if out[k] < stop_below:
            break
    return out


def _check_grid(n_grid) -> np.ndarray:
    g = _float_array(n_grid, "n_grid")
    if g.ndim != 1 or g.size == 0:
        raise ValueError(f"n_grid must be a non-empty 1-D sequence of pattern counts, got shape {g.shape}")
    if not np.all(np.isfinite(g)) or np.any(g < 1) or np.any(g != np.round(g)):
        raise ValueError(f"n_grid must hold integers >= 1, got {g.tolist()}")
    if np.any(np.diff(g) <= 0):
        raise ValueError(f"n_grid must be strictly increasing, got {g.tolist()}")
    return g.astype(int)


def capacity_threshold(n_grid, success, level: float = 0.9) -> float:
    """Largest N of the grid up to which every success rate is >= ``level`` (0 if the first is below).

    The breaking point of a capacity curve; equals ``n_grid[-1]`` when the curve never drops: the
    value is then censored, a lower bound (test ``threshold == n_grid[-1]`` for it).

    Parameters
    ----------
    n_grid : sequence of int
        Strictly increasing numbers of stored patterns.
    success : sequence of float
        Success rate at each N, in [0, 1], NaN where skipped (counts as below ``level``); same length.
    level : float in (0, 1]
        Required success rate.

    Returns
    -------
    float
        The breaking point N* (0 if the first rate is below ``level``).

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, Sec. 5 (capacity experiment); authors' code: https://github.com/chandantankala/DDAM.
    """
    grid = _check_grid(n_grid)
    success = _float_array(success, "success")
    if success.shape != grid.shape:
        raise ValueError(f"success must have one rate per grid point: n_grid has {grid.size}, success has shape {success.shape}")
    finite = success[~np.isnan(success)]
    if np.any((finite < 0) | (finite > 1)):
        raise ValueError(f"success rates must lie in [0, 1] (NaN for skipped), got {success.tolist()}")
    level = _check_real(level, "level", low=0.0, high=1.0, low_open=True)
    n_grid = grid.astype(float)
    ok = np.nan_to_num(success, nan=-1.0) >= level
    k = len(ok) if ok.all() else int(np.argmin(ok))
    return float(n_grid[k - 1]) if k > 0 else 0.0


def paired_sign_test(hits_a, hits_b) -> tuple[int, int, float]:
    r"""One-sided exact McNemar (sign) test that method A succeeds more often than B on the same queries.

    With :math:`n_{10}` queries that only A gets right and :math:`n_{01}` that only B gets right, the
    p-value is :math:`P(X\ge n_{10})` for :math:`X\sim\mathrm{Binomial}(n_{10}+n_{01}, 1/2)` (1 when there
    is no discordant query).

    Parameters
    ----------
    hits_a, hits_b : bool arrays of the same shape
        Per-query success of the two methods on identical queries.

    Returns
    -------
    n10 : int
    n01 : int
    p_value : float

    References
    ----------
    Q. McNemar, Psychometrika 12 (1947); used here to compare the memories of Tankala &
    Balasubramanian (ICML 2026, arXiv:2509.23162; code: https://github.com/chandantankala/DDAM).
    """
    from scipy.stats import binom

    raw_a, raw_b = np.asarray(hits_a), np.asarray(hits_b)
    for name, r in (("hits_a", raw_a), ("hits_b", raw_b)):
        if r.dtype.kind not in "biu" or (r.dtype.kind != "b" and not np.isin(r, (0, 1)).all()):
            raise ValueError(f"{name} must hold booleans (or 0/1), got dtype {r.dtype}")
    a, b = raw_a.astype(bool), raw_b.astype(bool)
    if a.shape != b.shape:
        raise ValueError(f"paired outcomes need equal shapes, got {a.shape} and {b.shape}")
    if a.size == 0:
        raise ValueError("paired outcomes are empty; need at least one query")
    n10, n01 = int(np.sum(a & ~b)), int(np.sum(~a & b))
    n = n10 + n01
    p = 1.0 if n == 0 else float(binom.sf(n10 - 1, n, 0.5))
    return n10, n01, p
