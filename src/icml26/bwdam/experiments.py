"""Chapter 03's experiments: retrieval dynamics, shared-mean patterns, digits.

:func:`stream` (an independent generator per named piece of an experiment),
:func:`retrieval_dynamics` (experiment A), :func:`shared_mean_retrieval` (experiment C)
and :func:`digits_retrieval` (experiment D); each returns rows for the chapter's tables.

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

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from .._common import check_int
from .data import (
    digits_gaussians,
    perturb_gaussians,
    sample_commuting_gaussians,
    sample_covariance_queries,
    sample_shared_mean_gaussians,
)
from .dynamics import retrieve
from .evaluation import retrieval_success
from .geometry import bures_wasserstein_distance

__all__ = ["stream", "retrieval_dynamics", "shared_mean_retrieval", "digits_retrieval"]


def stream(*key: int) -> np.random.Generator:
    """An independent generator for one named piece of an experiment: ``default_rng([seed, part, ...])``."""
    if not key or not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 0 for k in key):
        raise ValueError(f"stream key {key!r} must be one or more non-negative integers")
    return np.random.default_rng(list(key))


def _energy_never_rises(e: np.ndarray) -> bool:
    return bool(np.all(np.diff(e, axis=0) <= 1e-9 * np.maximum(1, np.abs(e[:-1]))))


def retrieval_dynamics(
    seeds: Iterable[int],
    *,
    N: int,
    d: int,
    n_queries: int,
    betas: Sequence[float],
    radii: Sequence[tuple[str, float]],
    max_iter: int = 10,
    tol: float = 1e-6,
):
    """Chapter 03, experiment A: retrieval error along the BW-DAM iterations (the paper's Theorem 4.3 regime).

    For every seed ``s``, ``N`` commuting Gaussians in dimension ``d`` are stored
    (:func:`sample_commuting_gaussians`, ``stream(s, 1)``); the first ``n_queries`` are
    perturbed at each radius (:func:`perturb_gaussians`, ``stream(s, 2)``) and retrieved
    (:func:`retrieve`) at each inverse temperature; the BW distance to the target is
    measured after every iteration, and the energy is checked never to rise.

    Parameters
    ----------
    seeds : iterable of int
    N, d, n_queries : int
    betas : sequence of float
    radii : sequence of (name, radius)

    Returns
    -------
    (list of dict, dict, list of bool)
        One row per (seed, radius, beta) with the query, one-step and final W2 and success
        rates and the mean number of steps; the mean error path per ``(seed, name, beta)``;
        per retrieval, whether the energy never rose.
    """
    N, d, n_queries = check_int(N, "N"), check_int(d, "d"), check_int(n_queries, "n_queries")
    if n_queries > N:
        raise ValueError(f"n_queries={n_queries} exceeds the N={N} stored patterns")
    rows, paths, energy_ok = [], {}, []
    for s in seeds:
        mus, S = sample_commuting_gaussians(N, d, random_state=stream(s, 1))
        tgt = np.arange(n_queries)
        for rname, r in radii:
            qm, qc = perturb_gaussians(mus[tgt], S[tgt], r, random_state=stream(s, 2))
            for beta in betas:
                res = retrieve(qm, qc, mus, S, beta, max_iter=max_iter, tol=tol, track_energy=True)
                err = bures_wasserstein_distance(res.path_means, res.path_covs, mus[tgt], S[tgt], validate=False)  # (T+1, Q)
                energy_ok.append(_energy_never_rises(res.path_energy))
                # nearest pattern after one step and at the end, from the distances the energy used
                first = np.argmin(res.path_dist_sq[1], axis=1) == tgt
                final = np.argmin(res.path_dist_sq[-1], axis=1) == tgt
                paths[(s, rname, beta)] = err.mean(1)
                rows.append(
                    {
                        "seed": s,
                        "radius": rname,
                        "beta": beta,
                        "query W2": err[0].mean(),
                        "W2 after 1 step": err[1].mean(),
                        "final W2": err[-1].mean(),
                        "success after 1 step": first.mean(),
                        "final success": final.mean(),
                        "mean steps": res.n_iter.mean(),
                    }
                )
    return rows, paths, energy_ok


def _method_rows(rows, base, mus, covs, qm, qc, targets, methods, betas):
    for mname, code in methods.items():
        for beta in betas:
            ok = retrieval_success(mus, covs, qm, qc, targets, beta, method=code)
            rows.append({**base, "method": mname, "beta": beta, "success": ok.mean(), "hits": ok})


def _check_methods(methods) -> Mapping[str, str]:
    if not isinstance(methods, Mapping) or not methods:
        raise ValueError(f"methods must be a non-empty mapping name -> retrieval_success method, got {methods!r}")
    return methods


def shared_mean_retrieval(
    seeds: Iterable[int],
    methods: Mapping[str, str],
    *,
    N: int,
    d: int,
    radii: Sequence[float],
    n_samples: Sequence[int],
    betas: Sequence[float],
) -> list[dict]:
    """Chapter 03, experiment C: patterns that share their means and differ only in covariance.

    For every seed ``s`` the ``N`` patterns come from :func:`sample_shared_mean_gaussians`
    (``stream(s, 4)``); every pattern is queried, on a test split and on an independent
    tuning split (stream offset 20), under additive noise of each radius
    (:func:`perturb_gaussians` with ``cov_scale=1``, ``stream(s, 5 + off, k)``) and as a
    sample covariance of ``n`` draws (:func:`sample_covariance_queries`,
    ``stream(s, 6 + off, k)``); each memory of ``methods`` retrieves at each ``beta``
    (:func:`retrieval_success`).

    Returns
    -------
    list of dict
        One row per (seed, split, query model, method, beta): ``query W2``, ``success``
        and the per-query ``hits``.
    """
    methods = _check_methods(methods)
    N, d = check_int(N, "N"), check_int(d, "d")
    rows = []
    for s in seeds:
        m, C = sample_shared_mean_gaussians(N, d, random_state=stream(s, 4))
        tgt = np.arange(N)
        # held-out tuning queries: independent streams
        for split, off in [("test", 0), ("tune", 20)]:
            settings = [
                (f"additive, r = {r:g}", perturb_gaussians(m, C, r, cov_scale=1.0, random_state=stream(s, 5 + off, k)))
                for k, r in enumerate(radii)
            ]
            settings += [
                (f"sample cov., n = {n}", sample_covariance_queries(m, C, n, random_state=stream(s, 6 + off, k)))
                for k, n in enumerate(n_samples)
            ]
            for qname, (qm, qc) in settings:
                w2q = bures_wasserstein_distance(qm, qc, m, C).mean()
                _method_rows(
                    rows, {"seed": s, "split": split, "query model": qname, "query W2": w2q}, m, C, qm, qc, tgt, methods, betas
                )
    return rows


def digits_retrieval(
    seeds: Iterable[int],
    methods: Mapping[str, str],
    *,
    n_components: int,
    N: int,
    n_queries: int,
    radii: Sequence[float],
    betas: Sequence[float],
):
    """Chapter 03, experiment D: Gaussians fitted to scikit-learn's digits (:func:`digits_gaussians`).

    For every seed ``s``, ``N`` patterns are fitted (``stream(s, 7)``); ``n_queries``
    targets are drawn (``stream(s, 8)``) and as many other stored patterns for the tuning
    split (``stream(s, 28)``); each is perturbed at each radius (``stream(s, 9 + off, k)``,
    ``off`` 0 for test and 20 for tuning) and retrieved by each memory at each ``beta``.

    Returns
    -------
    (list of dict, (ndarray, ndarray))
        One row per (seed, split, radius, method, beta) as in :func:`shared_mean_retrieval`,
        and the stored means and covariances of the last seed.
    """
    methods = _check_methods(methods)
    N, n_queries = check_int(N, "N"), check_int(n_queries, "n_queries")
    if 2 * n_queries > N:
        raise ValueError(f"n_queries={n_queries} test and as many tuning targets need N >= {2 * n_queries}, got N={N}")
    rows, dm, dc = [], None, None
    for s in seeds:
        dm, dc, _ = digits_gaussians(n_components, n_patterns=N, random_state=stream(s, 7))
        tgt = stream(s, 8).choice(N, size=n_queries, replace=False)
        # held-out tuning queries: other stored patterns, independent noise
        tgt_tune = stream(s, 28).choice(np.setdiff1d(np.arange(N), tgt), size=n_queries, replace=False)
        for split, tg, off in [("test", tgt, 0), ("tune", tgt_tune, 20)]:
            for k, r in enumerate(radii):
                qm, qc = perturb_gaussians(dm[tg], dc[tg], r, random_state=stream(s, 9 + off, k))
                w2q = bures_wasserstein_distance(qm, qc, dm[tg], dc[tg]).mean()
                _method_rows(rows, {"seed": s, "split": split, "radius": r, "query W2": w2q}, dm, dc, qm, qc, tg, methods, betas)
    return rows, (dm, dc)
