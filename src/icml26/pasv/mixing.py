"""How well the adjacent-swap sampler mixes, and what it buys over the baselines.

:func:`pairwise_discrepancy_trace` is the mixing diagnostic of Sec. 6.1;
:func:`mixing_runs` (mixing time on random DAGs) and :func:`sampler_efficiency` (RMSE of
Monte Carlo PASV against its exact value, per budget) are chapter 15's experiment loops.

Reference: K. Lee, Z. Liu, W. Tang, Y. Zhang, "Priority-Aware Shapley Value", ICML 2026,
arXiv:2602.09326. Conventions (closures ``R``, orders, bitmask game tables): :mod:`icml26.pasv`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .._common import RandomState, check_int
from ._checks import _check_int
from .estimation import rov_estimate
from .exact import PasvDP, pasv_exact
from .games import prefix_values
from .posets import order_log_weights, random_dag
from .sampling import AdjacentSwapSampler, sample_linear_extensions_rejection

__all__ = ["pairwise_discrepancy_trace", "mixing_runs", "sampler_efficiency"]


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
    if stop_below is not None and not (
        isinstance(stop_below, (int, float, np.integer, np.floating)) and math.isfinite(stop_below)
    ):
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
            for label, lam in (
                ("equal λ", np.ones(n)),
                ("λ ~ U(1, 256)", np.random.default_rng(seed + n + d).uniform(1, 256, n)),
            ):
                steps, D = pairwise_discrepancy_trace(
                    R_mix,
                    lam,
                    n_chains=n_chains,
                    n_steps=4 * n * n,
                    every=max(1, n // 4),
                    stop_below=None if d == 0 else threshold,
                    random_state=seed + d,
                )
                hit = np.flatnonzero(D < threshold)
                censored = hit.size == 0
                rows.append(
                    dict(n=n, dag=d, weights=label, t_mix=float(steps[-1] if censored else steps[hit[0]]), censored=censored)
                )
                if d == 0:
                    traces[(n, label)] = (steps, D)
    return rows, traces


def sampler_efficiency(
    utility_table, R: np.ndarray, settings, orders: Sequence[int], reps: int, *, seed: int, burn_in: int | None = None
) -> list[dict]:
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
                rows += [
                    dict(setting=label, sampler="MH (Alg. 1)", N=N, calls=n * N, err=err_mh, perms=np.nan),
                    dict(setting=label, sampler="rejection + IS", N=N, calls=n * N, err=err_is, perms=drawn),
                ]
    return rows
