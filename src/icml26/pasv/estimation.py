"""Monte Carlo estimation of random order values (eq. 1) and priority sweeps.

:func:`rov_estimate` and :func:`marginal_contributions` turn prefix values along sampled
orders into values with standard errors; :func:`pasv_mc` is Monte Carlo PASV (MH orders,
then eq. 1); :func:`priority_sweep` scales a group's weights and records the values.

Reference: K. Lee, Z. Liu, W. Tang, Y. Zhang, "Priority-Aware Shapley Value", ICML 2026,
arXiv:2602.09326. Conventions (closures ``R``, orders, bitmask game tables): :mod:`icml26.pasv`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .._common import RandomState
from ._checks import _check_orders, _check_weights
from .games import prefix_values
from .sampling import AdjacentSwapSampler

__all__ = ["rov_estimate", "marginal_contributions", "pasv_mc", "priority_sweep"]


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
