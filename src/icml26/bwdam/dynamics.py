r"""The BW-DAM energy and its retrieval dynamics (Algorithm 1 of the paper).

:func:`energy` (the log-sum-exp energy :math:`E(\xi)` from squared distances),
:func:`gibbs_weights`, :func:`phi_step` (one update :math:`\xi^+ = \Phi(\xi)`, vectorised
over queries and stored patterns), :func:`retrieve` (iterate to convergence, with the
path in a :class:`RetrievalResult`), :func:`nearest_pattern`, and
:func:`phi_step_pot_loop` (the same step as a Python loop of POT calls: the reference for
tests and the chapter's benchmark).

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

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from ._checks import _check_beta, _check_dist_sq, _check_int, _check_real
from .geometry import _CHUNK_ELEMS, _sym, bures_wasserstein_distance, check_gaussians, pairwise_bw_sq

__all__ = [
    "energy",
    "gibbs_weights",
    "phi_step",
    "retrieve",
    "nearest_pattern",
    "RetrievalResult",
    "phi_step_pot_loop",
]


EIG_FLOOR = 1e-10  # eigenvalue floor of the query covariance (the authors' code uses the same)


def energy(dist_sq: np.ndarray, beta: float) -> np.ndarray:
    r"""Log-sum-exp energy :math:`E=-\beta^{-1}\log\sum_i e^{-\beta d_i}` from squared distances.

    Parameters
    ----------
    dist_sq : array (..., N)
        :math:`W_2^2(X_i, \xi)` for each stored pattern (last axis), >= 0.
    beta : float > 0
        Inverse temperature.

    Returns
    -------
    numpy.ndarray (...,)

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, Sec. 3 (the energy); authors' code: https://github.com/chandantankala/DDAM.
    """
    beta = _check_beta(beta)
    return -logsumexp(-beta * _check_dist_sq(dist_sq), axis=-1) / beta


def gibbs_weights(dist_sq: np.ndarray, beta: float) -> np.ndarray:
    r"""Gibbs (softmax) weights :math:`w_i=\exp(-\beta d_i)/\sum_j\exp(-\beta d_j)`, stable in log space.

    Parameters
    ----------
    dist_sq : array (..., N)
        Squared distances to the stored patterns (last axis), >= 0.
    beta : float > 0
        Inverse temperature.

    Returns
    -------
    numpy.ndarray (..., N)
        Rows summing to 1.

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, Algorithm 1; authors' code: https://github.com/chandantankala/DDAM.
    """
    beta = _check_beta(beta)
    z = -beta * _check_dist_sq(dist_sq)
    return np.exp(z - logsumexp(z, axis=-1, keepdims=True))


def _phi_block(
    m: np.ndarray, Om: np.ndarray, mus: np.ndarray, Sig: np.ndarray, beta: float, frozen_w: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One Φ step for a block of q queries (m (q, d), Om (q, d, d)) against N patterns; no validation.

    Returns (m+ (q, d), Om+ (q, d, d), dist_sq (q, N), weights (q, N)).
    """
    q, d = m.shape
    lam, V = np.linalg.eigh(_sym(Om))  # (q, d), (q, d, d)
    lam = np.maximum(lam, EIG_FLOOR)
    Vt = np.swapaxes(V, -1, -2)
    s = (V * np.sqrt(lam)[:, None, :]) @ Vt  # Ω^{1/2}   (q, d, d)
    si = (V / np.sqrt(lam)[:, None, :]) @ Vt  # Ω^{-1/2}  (q, d, d)
    K = s[:, None] @ Sig[None] @ s[:, None]  # Ω^{1/2} Σ_i Ω^{1/2}   (q, N, d, d)
    mu_k, U = np.linalg.eigh(_sym(K))  # (q, N, d), (q, N, d, d)
    rk = np.sqrt(np.maximum(mu_k, 0.0))
    cross = rk.sum(-1)  # tr K^{1/2} = tr (Σ^{1/2} Ω Σ^{1/2})^{1/2}   (q, N)
    dist_sq = (
        ((m[:, None, :] - mus[None]) ** 2).sum(-1)
        + np.trace(Om, axis1=1, axis2=2)[:, None]
        + np.trace(Sig, axis1=1, axis2=2)[None, :]
        - 2 * cross
    )
    dist_sq = np.maximum(dist_sq, 0.0)  # (q, N)
    w = gibbs_weights(dist_sq, beta) if frozen_w is None else frozen_w
    # Σ_i w_i K_i^{1/2} without forming each K_i^{1/2}: U diag(w sqrt(mu)) U^T summed over i
    Kbar = np.einsum("qnab,qnb,qncb->qac", U, w[:, :, None] * rk, U)  # (q, d, d)
    Abar = _sym(si @ Kbar @ si)  # Σ_i w_i A_i   (q, d, d)
    m_new = w @ mus  # (q, d)
    Om_new = _sym(Abar @ Om @ Abar)
    lo = np.linalg.eigvalsh(Om_new)[:, 0]
    shift = np.where(lo < EIG_FLOOR, EIG_FLOOR - lo, 0.0)
    Om_new = Om_new + shift[:, None, None] * np.eye(d)
    return m_new, Om_new, dist_sq, w


def phi_step(means, covs, mus, Sigmas, beta: float, *, weights=None, validate: bool = True):
    r"""One retrieval step :math:`\xi^+=\Phi(\xi)` (Algorithm 1 of [1]_) for a batch of queries.

    .. math::

        m^+=\sum_i w_i\mu_i,\qquad \Omega^+=\bar A\,\Omega\,\bar A,\qquad
        \bar A=\sum_i w_i A_i,\quad A_i=\Omega^{-1/2}(\Omega^{1/2}\Sigma_i\Omega^{1/2})^{1/2}\Omega^{-1/2},

    with :math:`w=\operatorname{softmax}(-\beta W_2^2(X_\cdot,\xi))`. The result is symmetrised and its
    eigenvalues are floored at ``1e-10`` as in the authors' code. With ``weights`` given (fixed),
    the step is one iteration of the fixed-point barycenter algorithm of [2]_.

    Parameters
    ----------
    means : array (Q, d) or (d,)
    covs : array (Q, d, d) or (d, d)
        Queries :math:`\xi=\mathcal N(m,\Omega)`.
    mus : array (N, d)
    Sigmas : array (N, d, d)
        Stored patterns.
    beta : float > 0
        Inverse temperature.
    weights : array (Q, N) or (N,), optional
        Fixed weights instead of the Gibbs weights (non-negative, rows summing to 1).
    validate : bool
        Check the inputs first.

    Returns
    -------
    means_new, covs_new : arrays shaped like the input
    dist_sq : array (Q, N) (or (N,))
        :math:`W_2^2(X_i,\xi)` at the *input* state (so ``energy(dist_sq, beta)`` is :math:`E(\xi)`).
    weights : array (Q, N) (or (N,))

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, Algorithm 1; authors' code: https://github.com/chandantankala/DDAM.
    """
    beta = _check_beta(beta)
    single = np.ndim(means) == 1
    if validate:
        means, covs = check_gaussians(means, covs, name="covs")
        mus, Sigmas = check_gaussians(mus, Sigmas, name="Sigmas")
    m = np.atleast_2d(means)
    Om = covs.reshape(m.shape + (m.shape[-1],))
    if mus.ndim != 2 or mus.shape[1] != m.shape[1]:
        raise ValueError(f"stored means must have shape (N, {m.shape[1]}), got {mus.shape}")
    w = None if weights is None else np.atleast_2d(np.asarray(weights, dtype=float))
    if w is not None and w.shape != (m.shape[0], mus.shape[0]):
        raise ValueError(f"weights must have shape {(m.shape[0], mus.shape[0])}, got {w.shape}")
    if w is not None and (not np.all(np.isfinite(w)) or np.any(w < 0) or not np.allclose(w.sum(1), 1.0, atol=1e-8)):
        raise ValueError("weights must be finite, non-negative, and sum to 1 over the stored patterns")
    outs = [[], [], [], []]
    N, d = mus.shape
    step = max(1, _CHUNK_ELEMS // max(1, N * d * d))
    for a in range(0, m.shape[0], step):
        b = min(m.shape[0], a + step)
        res = _phi_block(m[a:b], Om[a:b], mus, Sigmas, beta, None if w is None else w[a:b])
        for o, r in zip(outs, res):
            o.append(r)
    mn, On, ds, ww = (np.concatenate(o) for o in outs)
    if single:
        return mn[0], On[0], ds[0], ww[0]
    return mn, On, ds, ww


@dataclass
class RetrievalResult:
    """Output of :func:`retrieve`.

    Attributes
    ----------
    means : array (Q, d), covs : array (Q, d, d)
        Final states.
    n_iter : array (Q,) of int
        Φ steps applied to each query before it met the tolerance (or ``max_iter``).
    path_means : array (T+1, Q, d), path_covs : array (T+1, Q, d, d)
        States along the iteration (index 0 is the query); a converged query stays put.
    path_energy : array (T+1, Q) or None
        Energy :math:`E(\\xi_t)` along the iteration (with ``track_energy=True``).
    path_dist_sq : array (T+1, Q, N) or None
        :math:`W_2^2(X_i,\\xi_t)` to every stored pattern along the iteration, the distances
        the energy is computed from (with ``track_energy=True``); ``argmin`` over the last
        axis is :func:`nearest_pattern` of each state.

    References
    ----------
    C. Tankala, K. Balasubramanian, ICML 2026, arXiv:2509.23162, Algorithm 1 (the iterates);
    authors' code: https://github.com/chandantankala/DDAM.
    """

    means: np.ndarray
    covs: np.ndarray
    n_iter: np.ndarray
    path_means: np.ndarray
    path_covs: np.ndarray
    path_energy: np.ndarray | None
    path_dist_sq: np.ndarray | None = None

    def __post_init__(self) -> None:
        m, c = np.asarray(self.means), np.asarray(self.covs)
        if m.ndim != 2 or c.shape != m.shape + (m.shape[1],):
            raise ValueError(f"means must have shape (Q, d) and covs (Q, d, d), got {m.shape} and {c.shape}")
        if np.shape(self.n_iter) != (m.shape[0],):
            raise ValueError(f"n_iter must have shape ({m.shape[0]},), got {np.shape(self.n_iter)}")
        pm, pc = np.asarray(self.path_means), np.asarray(self.path_covs)
        if pm.ndim != 3 or pm.shape[1:] != m.shape or pc.shape != pm.shape + (m.shape[1],):
            raise ValueError(
                f"path_means must have shape (T+1, {m.shape[0]}, {m.shape[1]}) and path_covs "
                f"(T+1, {m.shape[0]}, {m.shape[1]}, {m.shape[1]}), got {pm.shape} and {pc.shape}"
            )
        if self.path_energy is not None and np.shape(self.path_energy) != pm.shape[:2]:
            raise ValueError(f"path_energy must have shape {pm.shape[:2]}, got {np.shape(self.path_energy)}")
        if self.path_dist_sq is not None and (np.ndim(self.path_dist_sq) != 3 or np.shape(self.path_dist_sq)[:2] != pm.shape[:2]):
            raise ValueError(f"path_dist_sq must have shape {pm.shape[:2] + ('N',)}, got {np.shape(self.path_dist_sq)}")


def retrieve(
    means,
    covs,
    mus,
    Sigmas,
    beta: float,
    *,
    max_iter: int = 10,
    tol: float = 1e-6,
    track_energy: bool = False,
    validate: bool = True,
) -> RetrievalResult:
    r"""Iterate :math:`\xi\leftarrow\Phi(\xi)` until :math:`W_2(\xi_t,\xi_{t+1})<` ``tol`` or ``max_iter`` steps.

    This is the retrieval dynamics of [1]_ (authors' defaults: ``tol=1e-6``, 10 iterations), run for a
    batch of queries at once; a query that has converged is frozen (the authors return its last state).

    Parameters
    ----------
    means : array (Q, d)
    covs : array (Q, d, d)
        Queries.
    mus : array (N, d)
    Sigmas : array (N, d, d)
        Stored patterns.
    beta : float > 0
        Inverse temperature.
    max_iter : int >= 1
        Maximum number of steps.
    tol : float >= 0
        Stop a query once :math:`W_2(\xi_t,\xi_{t+1})<` ``tol``.
    track_energy : bool
        Also compute :math:`E(\xi_t)` at every state of the path (one more batched distance call,
        over the distinct states only: a converged query's repeated state is not recomputed), and
        keep the distances as ``path_dist_sq``.
    validate : bool
        Check the inputs first.

    Returns
    -------
    RetrievalResult

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, Algorithm 1; authors' code: https://github.com/chandantankala/DDAM.
    """
    beta = _check_beta(beta)
    max_iter = _check_int(max_iter, "max_iter")
    tol = _check_real(tol, "tol", low=0.0)
    if validate:
        means, covs = check_gaussians(means, covs, name="covs")
        mus, Sigmas = check_gaussians(mus, Sigmas, name="Sigmas")
        if mus.ndim != 2 or np.ndim(means) not in (1, 2) or mus.shape[1] != np.shape(means)[-1]:
            raise ValueError(
                f"retrieve needs queries of shape (Q, d) and stored means of shape (N, d), got {np.shape(means)} and {mus.shape}"
            )
    m = np.array(np.atleast_2d(means), dtype=float)
    Om = np.array(covs, dtype=float).reshape(m.shape + (m.shape[-1],))
    Q, d = m.shape
    active = np.ones(Q, dtype=bool)
    n_iter = np.zeros(Q, dtype=int)
    pm, pc = [m.copy()], [Om.copy()]
    moved_at = [np.ones(Q, dtype=bool)]  # which states differ from the step before (all at t = 0)
    for _ in range(int(max_iter)):
        idx = np.flatnonzero(active)
        upd = np.zeros(Q, dtype=bool)
        if idx.size:
            mn, On, _, _ = phi_step(m[idx], Om[idx], mus, Sigmas, beta, validate=False)
            moved = bures_wasserstein_distance(m[idx], Om[idx], mn, On, validate=False)
            m[idx], Om[idx] = mn, On
            n_iter[idx] += 1
            active[idx[moved < tol]] = False
            upd[idx] = True
        pm.append(m.copy())
        pc.append(Om.copy())
        moved_at.append(upd)
    path_m, path_c = np.stack(pm), np.stack(pc)  # (T+1, Q, d), (T+1, Q, d, d)
    path_e = path_ds = None
    if track_energy:
        T1 = path_m.shape[0]
        new = np.stack(moved_at)  # (T+1, Q): a frozen query's state repeats its last one exactly
        ds_new = pairwise_bw_sq(path_m[new], path_c[new], mus, Sigmas, validate=False)  # (distinct states, N)
        row = np.full((T1, Q), -1)
        row[new] = np.arange(ds_new.shape[0])
        row = np.maximum.accumulate(row, axis=0)  # the row of the latest distinct state of each query
        path_ds = ds_new[row]  # (T+1, Q, N)
        path_e = energy(path_ds.reshape(T1 * Q, -1), beta).reshape(T1, Q)
    return RetrievalResult(m, Om, n_iter, path_m, path_c, path_e, path_ds)


def nearest_pattern(means, covs, mus, Sigmas, *, validate: bool = True) -> np.ndarray:
    """Index of the stored Gaussian nearest (in :math:`W_2`) to each query.

    Parameters
    ----------
    means : array (Q, d)
    covs : array (Q, d, d)
        Queries (or retrieved states).
    mus : array (N, d)
    Sigmas : array (N, d, d)
        Stored patterns.
    validate : bool
        Check the inputs first.

    Returns
    -------
    numpy.ndarray (Q,) of int

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, Sec. 5 (success = the retrieved state is nearest its pattern); authors' code: https://github.com/chandantankala/DDAM.
    """
    return np.argmin(pairwise_bw_sq(means, covs, mus, Sigmas, validate=validate), axis=1)


def phi_step_pot_loop(mean, cov, mus, Sigmas, beta: float):
    """The same Φ step as :func:`phi_step` for one query, written as a Python loop of POT calls.

    ``ot.gaussian.bures_wasserstein_distance`` and ``ot.gaussian.bures_wasserstein_mapping`` once per
    stored pattern, then the Gibbs weights and the weighted average map. The reference for tests and
    the baseline of the chapter's benchmark (POT is imported lazily).

    Parameters
    ----------
    mean : array (d,)
    cov : array (d, d)
        One query.
    mus : array (N, d)
    Sigmas : array (N, d, d)
        Stored patterns.
    beta : float > 0
        Inverse temperature.

    Returns
    -------
    mean_new : numpy.ndarray (d,)
    cov_new : numpy.ndarray (d, d)

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, Algorithm 1; POT: R. Flamary et al., JMLR 22 (2021); authors' code: https://github.com/chandantankala/DDAM.
    """
    import ot

    beta = _check_beta(beta)
    mean, cov = check_gaussians(mean, cov, name="cov")
    mus, Sigmas = check_gaussians(mus, Sigmas, name="Sigmas")
    if mean.ndim != 1 or mus.ndim != 2 or mus.shape[1] != mean.shape[0]:
        raise ValueError(f"need one query of shape (d,) and stored means of shape (N, d), got {mean.shape} and {mus.shape}")
    d = mean.shape[0]
    ds = np.empty(len(mus))
    A_list = []
    for i in range(len(mus)):  # the loop this module avoids
        ds[i] = float(ot.gaussian.bures_wasserstein_distance(mean, mus[i], cov, Sigmas[i])) ** 2
        A, _ = ot.gaussian.bures_wasserstein_mapping(mean[None], mus[i][None], cov, Sigmas[i])
        A_list.append(A)
    w = gibbs_weights(ds, beta)
    Abar = sum(wi * Ai for wi, Ai in zip(w, A_list))
    cov_new = _sym(Abar @ cov @ Abar)
    lo = np.linalg.eigvalsh(cov_new)[0]
    if lo < EIG_FLOOR:
        cov_new = cov_new + (EIG_FLOOR - lo) * np.eye(d)
    return w @ mus, cov_new
