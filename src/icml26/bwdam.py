r"""Dense associative memory over Gaussians in the 2-Wasserstein (Bures–Wasserstein) geometry.

The memory of Tankala & Balasubramanian [1]_ stores Gaussians :math:`X_i=\mathcal N(\mu_i,\Sigma_i)`,
:math:`i=1..N`, and retrieves them from a Gaussian query :math:`\xi=\mathcal N(m,\Omega)` by
descending the log-sum-exp energy

.. math::

    E(\xi) = -\beta^{-1}\log\sum_{i=1}^N \exp\!\big(-\beta\,W_2^2(X_i,\xi)\big),

with the update :math:`\Phi` that pushes :math:`\xi` through the Gibbs-weighted average of
the optimal-transport maps :math:`T_i` from :math:`\xi` to the :math:`X_i` (Algorithm 1 of [1]_):

.. math::

    w_i(\xi) = \operatorname{softmax}_i\big(-\beta W_2^2(X_i,\xi)\big),\quad
    m^+ = \sum_i w_i\mu_i,\quad \bar A=\sum_i w_i A_i,\quad \Omega^+=\bar A\,\Omega\,\bar A.

Fixed points are self-consistent weighted Bures–Wasserstein barycenters.

Everything here is numpy and vectorised over stored patterns and queries: one batched
``numpy.linalg.eigh`` over all (query, pattern) pairs per step, no Python loop over patterns.

Conventions: means have shape ``(..., d)``, covariances ``(..., d, d)``; a "batch" of
Gaussians is a pair ``(means (n, d), covs (n, d, d))``.

References
----------
.. [1] C. Tankala, K. Balasubramanian. "Dense Associative Memory for Gaussian Distributions"
   (v1: "Dense Associative Memory on the Bures-Wasserstein Space"), ICML 2026, arXiv:2509.23162.
.. [2] P. C. Álvarez-Esteban, E. del Barrio, J. A. Cuesta-Albertos, C. Matrán. "A fixed-point
   approach to barycenters in Wasserstein space", J. Math. Anal. Appl. 441 (2016).
.. [3] H. Ramsauer et al. "Hopfield Networks is All You Need", ICLR 2021 (the Euclidean baseline).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real

import numpy as np
from scipy.special import logsumexp

from ._common import check_int, check_random_state

__all__ = [
    "check_gaussians",
    "sqrtm_psd",
    "bures_wasserstein_distance",
    "pairwise_bw_sq",
    "ot_map",
    "energy",
    "gibbs_weights",
    "phi_step",
    "retrieve",
    "nearest_pattern",
    "RetrievalResult",
    "BWDenseAssociativeMemory",
    "EuclideanDenseAssociativeMemory",
    "gaussian_features",
    "sample_commuting_gaussians",
    "sample_shared_mean_gaussians",
    "perturb_gaussians",
    "sample_covariance_queries",
    "digits_gaussians",
    "phi_step_pot_loop",
    "retrieval_success",
    "capacity_curve",
    "capacity_threshold",
    "paired_sign_test",
    "stream",
    "retrieval_dynamics",
    "shared_mean_retrieval",
    "digits_retrieval",
]

EIG_FLOOR = 1e-10  # eigenvalue floor of the query covariance (the authors' code uses the same)
_CHUNK_ELEMS = 4_000_000  # max floats in one (queries x patterns x d x d) block (32 MB)


# --------------------------------------------------------------------------- validation


def check_gaussians(means, covs, *, name: str = "covs", psd_tol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Validate and return ``(means, covs)`` as float64 arrays.

    Parameters
    ----------
    means : array-like (..., d)
    covs : array-like (..., d, d)
        Symmetric positive semi-definite, same leading shape as ``means``.
    name : str
        Name used in error messages.
    psd_tol : float
        A covariance is rejected when its smallest eigenvalue is below ``-psd_tol * max(1, ||C||)``
        or when it is asymmetric beyond ``1e-8 * max(1, ||C||)``.

    Returns
    -------
    means : numpy.ndarray (..., d)
    covs : numpy.ndarray (..., d, d)
        The inputs as float64 arrays (not copied when they already are).

    Raises
    ------
    ValueError
        On a wrong shape, a non-finite entry, an asymmetric or a non-PSD covariance; the message
        names the offending index and the smallest eigenvalue.
    TypeError
        When an input cannot be read as a float array.

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, Sec. 2 (Gaussians as patterns); authors' code: https://github.com/chandantankala/DDAM.
    """
    if not isinstance(psd_tol, Real) or not np.isfinite(psd_tol) or psd_tol < 0:
        raise ValueError(f"psd_tol={psd_tol!r} must be a finite number >= 0")
    m = _float_array(means, "means")
    c = _float_array(covs, name)
    if m.ndim < 1:
        raise ValueError("means must have shape (..., d), got a scalar; pass e.g. np.zeros(d)")
    d = m.shape[-1]
    if d < 1:
        raise ValueError(f"means must have d >= 1 entries in the last axis, got shape {m.shape}")
    if c.shape != m.shape + (d,):
        raise ValueError(
            f"{name} has shape {c.shape} but the means have shape {m.shape}; "
            f"covariances must have shape {m.shape + (d,)} (one d x d matrix per mean)"
        )
    if not (np.all(np.isfinite(m)) and np.all(np.isfinite(c))):
        raise ValueError(f"means and {name} must be finite (found NaN or inf)")
    scale = np.maximum(1.0, np.abs(c).max(axis=(-2, -1), initial=0.0))
    asym = np.abs(c - np.swapaxes(c, -1, -2)).max(axis=(-2, -1), initial=0.0)
    def where(bad: np.ndarray) -> tuple[str, tuple]:
        if c.ndim == 2:
            return name, ()
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        return f"{name}[{', '.join(map(str, idx))}]", idx

    bad = asym > 1e-8 * scale
    if np.any(bad):
        label, idx = where(bad)
        raise ValueError(f"{label} is not symmetric (max |C - C^T| = {asym[idx]:.3g}); a covariance must be symmetric")
    lam_min = np.linalg.eigvalsh(c)[..., 0]
    bad = lam_min < -psd_tol * scale
    if np.any(bad):
        label, idx = where(bad)
        raise ValueError(
            f"{label} is not positive semi-definite: smallest eigenvalue {lam_min[idx]:.3g}; "
            f"a covariance must be symmetric with eigenvalues >= 0"
        )
    return m, c


def _float_array(x, name: str) -> np.ndarray:
    """``x`` as a float64 array, or a TypeError naming ``name`` (strings, objects, complex numbers)."""
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as exc:  # ragged nested lists
        raise TypeError(f"{name} must be a numeric array, got {type(x).__name__} ({exc})") from None
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real numeric array, got dtype {a.dtype} ({type(x).__name__})")
    return a.astype(float, copy=False)


def _check_beta(beta: float) -> float:
    if isinstance(beta, (bool, np.bool_)) or not isinstance(beta, Real):
        raise TypeError(f"beta={beta!r} must be a real number, got {type(beta).__name__}")
    if not np.isfinite(beta) or beta <= 0:
        raise ValueError(f"beta={beta!r} is not valid; the inverse temperature must be a finite number > 0")
    return float(beta)


def _check_int(value, name: str, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum`` (integral floats such as 3.0 are accepted)."""
    return check_int(value, name, low=minimum, integral_floats=True)


def _check_real(value, name: str, *, low: float | None = None, high: float | None = None,
                low_open: bool = False) -> float:
    """``value`` as a finite float in ``[low, high]`` (``(low, high]`` with ``low_open``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise TypeError(f"{name}={value!r} must be a real number, got {type(value).__name__}")
    v = float(value)
    lo_bad = low is not None and (v <= low if low_open else v < low)
    if not np.isfinite(v) or lo_bad or (high is not None and v > high):
        lo = "" if low is None else (f"> {low:g}" if low_open else f">= {low:g}")
        hi = "" if high is None else f"<= {high:g}"
        raise ValueError(f"{name}={value!r} must be a finite number {' and '.join(x for x in (lo, hi) if x)}".rstrip())
    return v


def _check_dist_sq(dist_sq) -> np.ndarray:
    d = _float_array(dist_sq, "dist_sq")
    if d.ndim < 1 or d.shape[-1] == 0:
        raise ValueError(f"dist_sq must have shape (..., N) with N >= 1 stored patterns, got shape {d.shape}")
    if np.isnan(d).any() or np.isneginf(d).any() or (d < 0).any():
        raise ValueError("dist_sq must hold squared distances: no NaN, no negative values")
    if np.isinf(d).all(axis=-1).any():
        raise ValueError("dist_sq has a row where every distance is infinite; the Gibbs weights are undefined")
    return d


# --------------------------------------------------------------------------- matrix functions


def _sym(a: np.ndarray) -> np.ndarray:
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def sqrtm_psd(c: np.ndarray, *, inverse: bool = False, floor: float = 0.0) -> np.ndarray:
    r"""Principal square root (or inverse square root) of symmetric PSD matrices, batched.

    :math:`C^{1/2} = V\operatorname{diag}(\sqrt{\lambda})V^\top` from ``numpy.linalg.eigh``,
    eigenvalues clipped at ``floor`` (and at 0).

    Parameters
    ----------
    c : array (..., d, d)
        Symmetric positive semi-definite matrices (only the symmetric part is used).
    inverse : bool
        Return :math:`C^{-1/2}` instead (then ``floor`` must be > 0).
    floor : float
        Lower clip of the eigenvalues (>= 0).

    Returns
    -------
    numpy.ndarray (..., d, d)
        Symmetric :math:`C^{1/2}` (or :math:`C^{-1/2}`).

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, Sec. 3 (the matrix square roots of the transport map); authors' code: https://github.com/chandantankala/DDAM.
    """
    floor = _check_real(floor, "floor", low=0.0)
    if inverse and floor <= 0:
        raise ValueError("inverse=True needs floor > 0 (the inverse square root of a singular matrix is undefined)")
    c = _float_array(c, "c")
    if c.ndim < 2 or c.shape[-1] != c.shape[-2] or c.shape[-1] == 0:
        raise ValueError(f"c must have shape (..., d, d) with d >= 1, got {c.shape}")
    if not np.all(np.isfinite(c)):
        raise ValueError("c must be finite (found NaN or inf)")
    lam, v = np.linalg.eigh(_sym(c))  # (..., d), (..., d, d)
    lam = np.maximum(lam, floor)
    f = 1.0 / np.sqrt(lam) if inverse else np.sqrt(lam)
    return _sym((v * f[..., None, :]) @ np.swapaxes(v, -1, -2))


# --------------------------------------------------------------------------- distances and maps


def bures_wasserstein_distance(m1, C1, m2, C2, *, squared: bool = False, validate: bool = True) -> np.ndarray:
    r"""2-Wasserstein distance between Gaussians, elementwise over broadcast batches.

    .. math::

        W_2^2(\mathcal N(m_1,C_1),\mathcal N(m_2,C_2)) = \|m_1-m_2\|^2
        + \operatorname{tr}\big(C_1 + C_2 - 2(C_2^{1/2} C_1 C_2^{1/2})^{1/2}\big)

    (the Bures–Wasserstein formula, eq. (1) of [1]_).

    Parameters
    ----------
    m1, m2 : array (..., d)
        Means (broadcast against each other).
    C1, C2 : array (..., d, d)
        Covariances, symmetric PSD.
    squared : bool
        Return :math:`W_2^2` instead of :math:`W_2`.
    validate : bool
        Check shapes, finiteness and PSD-ness first (switch off only for inputs already checked).

    Returns
    -------
    numpy.ndarray (...,)

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, eq. (1); authors' code: https://github.com/chandantankala/DDAM.
    """
    if validate:
        m1, C1 = check_gaussians(m1, C1, name="C1")
        m2, C2 = check_gaussians(m2, C2, name="C2")
        if m1.shape[-1] != m2.shape[-1]:
            raise ValueError(f"dimension mismatch: d={m1.shape[-1]} vs d={m2.shape[-1]}")
    s2 = sqrtm_psd(C2)
    lam = np.linalg.eigvalsh(_sym(s2 @ C1 @ s2))  # (..., d)
    cross = np.sqrt(np.maximum(lam, 0.0)).sum(-1)
    w2 = ((m1 - m2) ** 2).sum(-1) + np.trace(C1, axis1=-2, axis2=-1) + np.trace(C2, axis1=-2, axis2=-1) - 2 * cross
    w2 = np.maximum(w2, 0.0)
    return w2 if squared else np.sqrt(w2)


def pairwise_bw_sq(m1, C1, m2, C2, *, validate: bool = True) -> np.ndarray:
    r"""All pairwise squared Bures–Wasserstein distances :math:`W_2^2(\mathcal N_a, \mathcal N_b)`.

    Parameters
    ----------
    m1 : array (Q, d)
    C1 : array (Q, d, d)
        The first batch of Gaussians (queries).
    m2 : array (N, d)
    C2 : array (N, d, d)
        The second batch (stored patterns).
    validate : bool
        Check the inputs first.

    Returns
    -------
    numpy.ndarray (Q, N)
        Computed in blocks of queries so that memory stays bounded; one batched ``eigvalsh``.

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, eq. (1); authors' code: https://github.com/chandantankala/DDAM.
    """
    if validate:
        m1, C1 = check_gaussians(m1, C1, name="C1")
        m2, C2 = check_gaussians(m2, C2, name="C2")
    if m1.ndim != 2 or m2.ndim != 2 or m1.shape[1] != m2.shape[1]:
        raise ValueError(f"pairwise_bw_sq needs means of shapes (Q, d) and (N, d), got {m1.shape} and {m2.shape}")
    Q, d = m1.shape
    N = m2.shape[0]
    s2 = sqrtm_psd(C2)  # (N, d, d)
    tr1, tr2 = np.trace(C1, axis1=1, axis2=2), np.trace(C2, axis1=1, axis2=2)
    out = np.empty((Q, N))
    step = max(1, _CHUNK_ELEMS // max(1, N * d * d))
    for a in range(0, Q, step):
        b = min(Q, a + step)
        M = s2[None] @ C1[a:b, None] @ s2[None]  # (q, N, d, d)
        cross = np.sqrt(np.maximum(np.linalg.eigvalsh(_sym(M)), 0.0)).sum(-1)  # (q, N)
        mean_sq = ((m1[a:b, None, :] - m2[None, :, :]) ** 2).sum(-1)  # (q, N)
        out[a:b] = mean_sq + tr1[a:b, None] + tr2[None, :] - 2 * cross
    return np.maximum(out, 0.0)


def ot_map(m1, C1, m2, C2, *, validate: bool = True) -> tuple[np.ndarray, np.ndarray]:
    r"""Optimal-transport (Monge) map from :math:`\mathcal N(m_1,C_1)` to :math:`\mathcal N(m_2,C_2)`.

    :math:`T(x) = A x + b` with

    .. math::

        A = C_1^{-1/2}\big(C_1^{1/2} C_2 C_1^{1/2}\big)^{1/2} C_1^{-1/2},\qquad b = m_2 - A m_1,

    equal to the paper's :math:`A_i=\Sigma_i^{1/2}(\Sigma_i^{1/2}\Omega\Sigma_i^{1/2})^{-1/2}\Sigma_i^{1/2}`
    when both covariances are positive definite (Sec. 3 of [1]_). ``C1`` must be positive definite.

    :math:`C_1^{1/2}` and :math:`C_1^{-1/2}` come from one eigendecomposition of :math:`C_1`, with no
    absolute eigenvalue floor, so that :math:`A C_1 A = C_2` holds at every scale and
    :math:`A(cC_1, cC_2) = A(C_1, C_2)` for :math:`c > 0`. (An earlier version floored the eigenvalues
    at ``1e-10`` in the inverse root only, which broke both for covariances below that scale.)
    Eigenvalues below ``1e-15`` times the largest one (numerically singular input, reachable only with
    ``validate=False``) are raised to that level in both roots alike.

    Parameters
    ----------
    m1, m2 : array (..., d)
        Means of the source and the target.
    C1, C2 : array (..., d, d)
        Covariances; ``C1`` positive definite, ``C2`` positive semi-definite.
    validate : bool
        Check the inputs first (including that ``C1`` is positive definite).

    Returns
    -------
    A : numpy.ndarray (..., d, d)
        Symmetric positive semi-definite linear part.
    b : numpy.ndarray (..., d)
        Offset.

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, Sec. 3 (the maps A_i of the update); authors' code: https://github.com/chandantankala/DDAM.
    """
    if validate:
        m1, C1 = check_gaussians(m1, C1, name="C1")
        m2, C2 = check_gaussians(m2, C2, name="C2")
        if m1.shape[-1] != m2.shape[-1]:
            raise ValueError(f"dimension mismatch: d={m1.shape[-1]} vs d={m2.shape[-1]}")
        lam1 = np.linalg.eigvalsh(C1)
        if np.any(lam1[..., 0] <= 0):
            raise ValueError(
                f"C1 must be positive definite for the OT map from N(m1, C1) to exist; smallest eigenvalue "
                f"{lam1[..., 0].min():.3g}"
            )
    lam, V = np.linalg.eigh(_sym(C1))  # (..., d), (..., d, d)
    lam = np.maximum(lam, 1e-15 * np.maximum(lam[..., -1:], np.finfo(float).tiny))  # relative: scale-equivariant
    Vt = np.swapaxes(V, -1, -2)
    s1 = (V * np.sqrt(lam)[..., None, :]) @ Vt  # C1^{1/2}
    s1i = (V / np.sqrt(lam)[..., None, :]) @ Vt  # C1^{-1/2}, from the same eigenvalues
    A = _sym(s1i @ sqrtm_psd(s1 @ C2 @ s1) @ s1i)
    b = m2 - (A @ m1[..., None])[..., 0]
    return A, b


# --------------------------------------------------------------------------- energy and update


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


def _phi_block(m: np.ndarray, Om: np.ndarray, mus: np.ndarray, Sig: np.ndarray, beta: float,
               frozen_w: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
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

    def __post_init__(self) -> None:
        m, c = np.asarray(self.means), np.asarray(self.covs)
        if m.ndim != 2 or c.shape != m.shape + (m.shape[1],):
            raise ValueError(f"means must have shape (Q, d) and covs (Q, d, d), got {m.shape} and {c.shape}")
        if np.shape(self.n_iter) != (m.shape[0],):
            raise ValueError(f"n_iter must have shape ({m.shape[0]},), got {np.shape(self.n_iter)}")
        pm, pc = np.asarray(self.path_means), np.asarray(self.path_covs)
        if pm.ndim != 3 or pm.shape[1:] != m.shape or pc.shape != pm.shape + (m.shape[1],):
            raise ValueError(f"path_means must have shape (T+1, {m.shape[0]}, {m.shape[1]}) and path_covs "
                             f"(T+1, {m.shape[0]}, {m.shape[1]}, {m.shape[1]}), got {pm.shape} and {pc.shape}")
        if self.path_energy is not None and np.shape(self.path_energy) != pm.shape[:2]:
            raise ValueError(f"path_energy must have shape {pm.shape[:2]}, got {np.shape(self.path_energy)}")


def retrieve(means, covs, mus, Sigmas, beta: float, *, max_iter: int = 10, tol: float = 1e-6,
             track_energy: bool = False, validate: bool = True) -> RetrievalResult:
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
        Also compute :math:`E(\xi_t)` at every state of the path (one more batched distance call).
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
            raise ValueError(f"retrieve needs queries of shape (Q, d) and stored means of shape (N, d), "
                             f"got {np.shape(means)} and {mus.shape}")
    m = np.array(np.atleast_2d(means), dtype=float)
    Om = np.array(covs, dtype=float).reshape(m.shape + (m.shape[-1],))
    Q, d = m.shape
    active = np.ones(Q, dtype=bool)
    n_iter = np.zeros(Q, dtype=int)
    pm, pc = [m.copy()], [Om.copy()]
    for _ in range(int(max_iter)):
        idx = np.flatnonzero(active)
        if idx.size:
            mn, On, _, _ = phi_step(m[idx], Om[idx], mus, Sigmas, beta, validate=False)
            moved = bures_wasserstein_distance(m[idx], Om[idx], mn, On, validate=False)
            m[idx], Om[idx] = mn, On
            n_iter[idx] += 1
            active[idx[moved < tol]] = False
        pm.append(m.copy())
        pc.append(Om.copy())
    path_m, path_c = np.stack(pm), np.stack(pc)  # (T+1, Q, d), (T+1, Q, d, d)
    path_e = None
    if track_energy:
        T1 = path_m.shape[0]
        ds = pairwise_bw_sq(path_m.reshape(T1 * Q, d), path_c.reshape(T1 * Q, d, d), mus, Sigmas, validate=False)
        path_e = energy(ds, beta).reshape(T1, Q)
    return RetrievalResult(m, Om, n_iter, path_m, path_c, path_e)


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


# --------------------------------------------------------------------------- estimators


class BWDenseAssociativeMemory:
    r"""Dense associative memory over Gaussians with Bures–Wasserstein geometry [1]_.

    Parameters
    ----------
    beta : float > 0
        Inverse temperature of the Gibbs weights (the energy uses :math:`W_2^2` without a 1/2).
    max_iter : int
        Maximum Φ steps (authors: 10).
    tol : float
        Stop when :math:`W_2(\xi_t,\xi_{t+1})<` tol (authors: 1e-6).

    Attributes
    ----------
    means_ : array (N, d), covs_ : array (N, d, d)
        Stored patterns.

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162; authors' code: https://github.com/chandantankala/DDAM.
    """

    def __init__(self, beta: float = 1.0, *, max_iter: int = 10, tol: float = 1e-6):
        self.beta = beta
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, means, covs) -> BWDenseAssociativeMemory:
        """Store the Gaussians ``N(means[i], covs[i])``.

        Parameters
        ----------
        means : array (N, d)
        covs : array (N, d, d)

        Returns
        -------
        BWDenseAssociativeMemory
            ``self``.
        """
        _check_beta(self.beta)
        _check_int(self.max_iter, "max_iter")
        _check_real(self.tol, "tol", low=0.0)
        m, c = check_gaussians(means, covs, name="covs")
        if m.ndim != 2:
            raise ValueError(f"fit needs means of shape (N, d), got {m.shape}")
        self.means_, self.covs_ = m, c
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "means_"):
            raise ValueError("this memory stores no patterns yet; call fit(means, covs) first")

    def energy(self, means, covs) -> np.ndarray:
        """Energy :math:`E(\\xi)` of each query.

        Parameters
        ----------
        means : array (Q, d)
        covs : array (Q, d, d)

        Returns
        -------
        numpy.ndarray (Q,)
        """
        self._check_fitted()
        return energy(pairwise_bw_sq(means, covs, self.means_, self.covs_), self.beta)

    def retrieve(self, means, covs) -> RetrievalResult:
        """Run the retrieval dynamics from each query (see :func:`retrieve`).

        Parameters
        ----------
        means : array (Q, d)
        covs : array (Q, d, d)

        Returns
        -------
        RetrievalResult
        """
        self._check_fitted()
        return retrieve(means, covs, self.means_, self.covs_, self.beta, max_iter=self.max_iter, tol=self.tol)

    def predict(self, means, covs) -> np.ndarray:
        """Index of the stored pattern nearest (in :math:`W_2`) to each retrieved state.

        Parameters
        ----------
        means : array (Q, d)
        covs : array (Q, d, d)

        Returns
        -------
        numpy.ndarray (Q,) of int
        """
        r = self.retrieve(means, covs)
        return nearest_pattern(r.means, r.covs, self.means_, self.covs_, validate=False)


class EuclideanDenseAssociativeMemory:
    r"""Euclidean dense associative memory (modern Hopfield network) on feature vectors [3]_.

    Energy :math:`E(x)=-\beta^{-1}\log\sum_i\exp(-\beta\|x-p_i\|^2)`, update
    :math:`x\leftarrow\sum_i\operatorname{softmax}_i(-\beta\|x-p_i\|^2)\,p_i` — the vector analogue of
    :func:`phi_step`, used in [1]_ as the baseline on means (or means ⊕ vectorised covariances, see
    :func:`gaussian_features`).

    Parameters
    ----------
    beta : float > 0
        Inverse temperature.
    max_iter : int
        Maximum number of updates.
    tol : float
        Stop when :math:`\|x_t-x_{t+1}\|<` tol.

    References
    ----------
    H. Ramsauer et al., "Hopfield Networks is All You Need", ICLR 2021; used as the baseline in
    Tankala & Balasubramanian, ICML 2026, arXiv:2509.23162 (code: https://github.com/chandantankala/DDAM).
    """

    def __init__(self, beta: float = 1.0, *, max_iter: int = 10, tol: float = 1e-6):
        self.beta = beta
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, X) -> EuclideanDenseAssociativeMemory:
        """Store the rows of ``X``.

        Parameters
        ----------
        X : array (N, p)
            Finite pattern vectors, N >= 1, p >= 1.

        Returns
        -------
        EuclideanDenseAssociativeMemory
            ``self``.
        """
        _check_beta(self.beta)
        _check_int(self.max_iter, "max_iter")
        _check_real(self.tol, "tol", low=0.0)
        X = _float_array(X, "X")
        if X.ndim != 2 or 0 in X.shape or not np.all(np.isfinite(X)):
            raise ValueError(f"X must be a finite array of shape (N, p) with N, p >= 1, got shape {X.shape}")
        self.patterns_ = X
        self._sq = (X**2).sum(1)
        return self

    def _dist_sq(self, Xq: np.ndarray) -> np.ndarray:
        d = (Xq**2).sum(1)[:, None] + self._sq[None, :] - 2 * Xq @ self.patterns_.T  # (Q, N)
        return np.maximum(d, 0.0)

    def _queries(self, Xq) -> np.ndarray:
        if not hasattr(self, "patterns_"):
            raise ValueError("this memory stores no patterns yet; call fit(X) first")
        x = np.array(np.atleast_2d(_float_array(Xq, "Xq")), dtype=float)
        if x.ndim != 2 or x.shape[1] != self.patterns_.shape[1]:
            raise ValueError(f"queries must have shape (Q, {self.patterns_.shape[1]}), got {np.shape(Xq)}")
        if not np.all(np.isfinite(x)):
            raise ValueError("queries must be finite (found NaN or inf)")
        return x

    def energy(self, Xq) -> np.ndarray:
        """Energy of each query row.

        Parameters
        ----------
        Xq : array (Q, p)

        Returns
        -------
        numpy.ndarray (Q,)
        """
        return energy(self._dist_sq(self._queries(Xq)), self.beta)

    def retrieve(self, Xq, *, return_path: bool = False):
        """Iterate the update from each query row.

        Parameters
        ----------
        Xq : array (Q, p)
        return_path : bool
            Also return the states along the iteration.

        Returns
        -------
        numpy.ndarray (Q, p)
            Final states; with ``return_path`` also the path, shape (T+1, Q, p).
        """
        x = self._queries(Xq)
        active = np.ones(len(x), dtype=bool)
        path = [x.copy()]
        for _ in range(int(self.max_iter)):
            idx = np.flatnonzero(active)
            if idx.size:
                xn = gibbs_weights(self._dist_sq(x[idx]), self.beta) @ self.patterns_
                moved = np.linalg.norm(xn - x[idx], axis=1)
                x[idx] = xn
                active[idx[moved < self.tol]] = False
            path.append(x.copy())
        return (x, np.stack(path)) if return_path else x

    def predict(self, Xq) -> np.ndarray:
        """Index of the stored row nearest (Euclidean) to each retrieved state.

        Parameters
        ----------
        Xq : array (Q, p)

        Returns
        -------
        numpy.ndarray (Q,) of int
        """
        return np.argmin(self._dist_sq(self.retrieve(Xq)), axis=1)


def gaussian_features(means, covs, *, mode: str = "mean") -> np.ndarray:
    """Vectors for the Euclidean baseline: ``"mean"`` -> m (n, d); ``"mean+cov"`` -> m ⊕ vec(C) (n, d + d²).

    With ``"mean+cov"`` the squared Euclidean distance is ``||m1-m2||² + ||C1-C2||_F²``.

    Parameters
    ----------
    means : array (n, d)
    covs : array (n, d, d)
        Gaussians (validated with :func:`check_gaussians`).
    mode : {"mean", "mean+cov"}
        Which features.

    Returns
    -------
    numpy.ndarray (n, d) or (n, d + d²)

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, Sec. 5 (the Euclidean baselines); authors' code: https://github.com/chandantankala/DDAM.
    """
    if mode not in ("mean", "mean+cov"):
        raise ValueError(f"mode={mode!r} is not valid; use 'mean' or 'mean+cov'")
    m, c = check_gaussians(means, covs, name="covs")
    if m.ndim != 2:
        raise ValueError(f"means must have shape (n, d), got {m.shape}")
    if mode == "mean":
        return m.copy()
    if mode == "mean+cov":
        return np.concatenate([m, c.reshape(m.shape[0], -1)], axis=1)
    raise ValueError(f"mode={mode!r} is not valid; use 'mean' or 'mean+cov'")


# --------------------------------------------------------------------------- data


def _random_orthogonal(d: int, size: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Haar-random orthogonal matrices (size..., d, d) via QR with sign correction."""
    q, r = np.linalg.qr(rng.standard_normal(size + (d, d)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def sample_commuting_gaussians(n: int, d: int, *, radius: float | None = None, lambda_min: float = 1.0,
                               lambda_max: float = 1.1, commuting: bool = True,
                               random_state=None) -> tuple[np.ndarray, np.ndarray]:
    r"""Gaussians on a Wasserstein sphere (Algorithm 2 of [1]_).

    Every pattern has :math:`\|\mu_i\|^2=R^2/2` (uniform direction) and
    :math:`\Sigma_i=U\operatorname{diag}(\lambda_i)U^\top` with :math:`\lambda_{ij}\in[\lambda_{\min},\lambda_{\max}]`
    and :math:`\sum_j\lambda_{ij}=R^2/2` (rejection sampling on the last eigenvalue, then a random
    permutation), so that :math:`W_2(X_i,\delta_0)=R` for all i. ``U`` is one shared random
    orthogonal basis (covariances commute); with ``commuting=False`` each pattern gets its own.

    The paper's default :math:`R=\sqrt{2d}` puts the eigenvalue sum at exactly :math:`d\lambda_{\min}=d`,
    a set of probability zero for the rejection sampler (the authors' loop never ends for d >= 2).
    Our default is the nearest feasible choice, :math:`R^2/2 = d(\lambda_{\min}+\lambda_{\max})/2`
    (:math:`R=\sqrt{2.1d}` for the default bounds).

    Parameters
    ----------
    n : int >= 1
        Number of patterns.
    d : int >= 1
        Dimension.
    radius : float, optional
        Wasserstein radius R of the sphere (default above).
    lambda_min, lambda_max : float
        Eigenvalue bounds, ``0 < lambda_min <= lambda_max``.
    commuting : bool
        One shared eigenbasis (the paper's setting) or one per pattern.
    random_state : int, numpy.random.Generator or None
        Seed or generator (see :func:`icml26._common.check_random_state`).

    Returns
    -------
    means : numpy.ndarray (n, d)
    covs : numpy.ndarray (n, d, d)

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, Algorithm 2; authors' code: https://github.com/chandantankala/DDAM.
    """
    n, d = _check_int(n, "n"), _check_int(d, "d")
    lambda_min = _check_real(lambda_min, "lambda_min", low=0.0, low_open=True)
    lambda_max = _check_real(lambda_max, "lambda_max", low=0.0, low_open=True)
    if not lambda_min <= lambda_max:
        raise ValueError(f"need 0 < lambda_min <= lambda_max, got {lambda_min}, {lambda_max}")
    rng = check_random_state(random_state)
    if radius is None:
        radius = np.sqrt(d * (lambda_min + lambda_max))
    radius = _check_real(radius, "radius", low=0.0, low_open=True)
    target = radius**2 / 2
    tol = 1e-9 * d * lambda_max  # float slack: (sqrt(2d))**2 / 2 is not exactly d
    degenerate = lambda_min == lambda_max or d == 1
    if lambda_min == lambda_max:
        feasible = abs(target - d * lambda_min) <= tol
    elif d == 1:
        feasible = lambda_min <= target <= lambda_max
    else:
        feasible = d * lambda_min + tol < target < d * lambda_max - tol
    if not feasible:
        raise ValueError(
            f"radius={radius!r} is infeasible: R^2/2 = {target:.4g} must lie strictly inside "
            f"(d*lambda_min, d*lambda_max) = ({d * lambda_min:.4g}, {d * lambda_max:.4g}); at an end point "
            f"the eigenvalues are forced and rejection sampling never accepts (the paper's R = sqrt(2d))"
        )
    if degenerate:
        lams = np.full((n, d), target / d)
    else:
        lams = np.empty((0, d))
        for _ in range(10_000):  # vectorised rejection sampling of the eigenvalues
            if lams.shape[0] >= n:
                break
            k = max(256, 8 * (n - lams.shape[0]))
            head = rng.uniform(lambda_min, lambda_max, size=(k, d - 1))
            last = target - head.sum(1, keepdims=True)
            ok = ((last >= lambda_min) & (last <= lambda_max))[:, 0]
            lams = np.concatenate([lams, np.concatenate([head, last], 1)[ok]])
        else:
            raise RuntimeError(f"rejection sampling accepted only {lams.shape[0]} of {n} spectra; "
                               f"move R^2/2 = {target:.4g} away from the ends of the feasible interval")
    lams = rng.permuted(lams[:n], axis=1)
    U = _random_orthogonal(d, () if commuting else (n,), rng)
    covs = _sym((U * lams[:, None, :]) @ np.swapaxes(U, -1, -2))
    g = rng.standard_normal((n, d))
    means = g / np.linalg.norm(g, axis=1, keepdims=True) * np.sqrt(target)
    return means, covs


def sample_shared_mean_gaussians(n: int, d: int, *, lambda_min: float = 0.25, lambda_max: float = 4.0,
                                 random_state=None) -> tuple[np.ndarray, np.ndarray]:
    r"""Gaussians that share the mean 0 and differ only in covariance (the "geometric" case).

    :math:`\Sigma_i=Q_i\operatorname{diag}(\lambda_i)Q_i^\top` with Haar-random :math:`Q_i` and
    log-uniform eigenvalues in ``[lambda_min, lambda_max]``. All information is in the covariance, so
    a memory that only sees means cannot tell the patterns apart.

    Parameters
    ----------
    n : int >= 1
        Number of patterns.
    d : int >= 1
        Dimension.
    lambda_min, lambda_max : float
        Eigenvalue range, ``0 < lambda_min <= lambda_max``.
    random_state : int, numpy.random.Generator or None
        Seed or generator.

    Returns
    -------
    means : numpy.ndarray (n, d) of zeros
    covs : numpy.ndarray (n, d, d)

    References
    ----------
    Our construction, isolating the covariance geometry that Tankala & Balasubramanian (ICML 2026,
    arXiv:2509.23162; code: https://github.com/chandantankala/DDAM) argue for.
    """
    n, d = _check_int(n, "n"), _check_int(d, "d")
    lambda_min = _check_real(lambda_min, "lambda_min", low=0.0, low_open=True)
    lambda_max = _check_real(lambda_max, "lambda_max", low=0.0, low_open=True)
    if not lambda_min <= lambda_max:
        raise ValueError(f"need 0 < lambda_min <= lambda_max, got {lambda_min}, {lambda_max}")
    rng = check_random_state(random_state)
    lams = np.exp(rng.uniform(np.log(lambda_min), np.log(lambda_max), size=(n, d)))
    Qm = _random_orthogonal(d, (n,), rng)
    covs = _sym((Qm * lams[:, None, :]) @ np.swapaxes(Qm, -1, -2))
    return np.zeros((n, d)), covs


def perturb_gaussians(means, covs, radius: float, *, cov_scale: float = 0.1,
                      random_state=None) -> tuple[np.ndarray, np.ndarray]:
    r"""The paper's query model (``perturb_gaussian`` of the authors' code), vectorised.

    The mean moves by :math:`r/\sqrt2` in a uniform random direction; the covariance becomes
    :math:`\Sigma + c\,P` with :math:`P=WW^\top` (Gaussian :math:`W`) rescaled to
    :math:`\operatorname{tr}P=r^2/2` and :math:`c=` ``cov_scale`` (0.1 in the authors' code, so the
    realised :math:`W_2` to the original is a bit below :math:`r`; measure it with
    :func:`bures_wasserstein_distance`).

    Parameters
    ----------
    means : array (n, d)
    covs : array (n, d, d)
        The Gaussians to perturb.
    radius : float >= 0
        Perturbation radius r.
    cov_scale : float >= 0
        Share c of the budget put on the covariance.
    random_state : int, numpy.random.Generator or None
        Seed or generator.

    Returns
    -------
    means : numpy.ndarray (n, d)
    covs : numpy.ndarray (n, d, d)

    References
    ----------
    C. Tankala, K. Balasubramanian, "Dense Associative Memory for Gaussian Distributions", ICML 2026,
    arXiv:2509.23162, Sec. 5 (``perturb_gaussian`` in the authors' code); authors' code: https://github.com/chandantankala/DDAM.
    """
    radius = _check_real(radius, "radius", low=0.0)
    cov_scale = _check_real(cov_scale, "cov_scale", low=0.0)
    m, c = check_gaussians(means, covs, name="covs")
    m, c = np.atleast_2d(m), c.reshape(np.atleast_2d(m).shape + (m.shape[-1],))
    n, d = m.shape
    rng = check_random_state(random_state)
    g = rng.standard_normal((n, d))
    m_new = m + g / np.linalg.norm(g, axis=1, keepdims=True) * (radius / np.sqrt(2))
    W = rng.standard_normal((n, d, d))
    P = W @ np.swapaxes(W, -1, -2)
    P *= (radius**2 / 2) / np.trace(P, axis1=1, axis2=2)[:, None, None]
    c_new = _sym(c + cov_scale * P)
    return m_new, c_new


def digits_gaussians(n_components: int = 8, n_neighbors: int = 10, ridge: float = 0.05,
                     n_patterns: int | None = None, random_state=None):
    r"""Gaussian embeddings of scikit-learn's bundled 8x8 digits (a stand-in for the paper's image embeddings).

    Images are standardised per pixel and projected to ``n_components`` principal components; image k
    becomes :math:`\mathcal N(x_k, \widehat{\mathrm{Cov}}(\text{its } n\_neighbors \text{ nearest same-class
    images}) + \text{ridge}\cdot I)` — a mean with a local, class-aware uncertainty ellipsoid. With
    ``n_patterns`` a random subset (without replacement) is returned.

    Parameters
    ----------
    n_components : int in [1, 64]
        PCA dimension.
    n_neighbors : int in [2, 174]
        Same-class neighbours (the image included) per covariance estimate; 174 is the size of the
        smallest class.
    ridge : float >= 0
        Added to every covariance's diagonal.
    n_patterns : int in [1, 1797], optional
        Size of a random subset.
    random_state : int, numpy.random.Generator or None
        Seed or generator of the subset.

    Returns
    -------
    means : numpy.ndarray (n, n_components)
    covs : numpy.ndarray (n, n_components, n_components)
    labels : numpy.ndarray (n,)

    References
    ----------
    A stand-in for the image embeddings of Tankala & Balasubramanian (ICML 2026, arXiv:2509.23162,
    Sec. 5; code: https://github.com/chandantankala/DDAM); data: scikit-learn's ``load_digits``.
    """
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import StandardScaler

    n_components = _check_int(n_components, "n_components")
    if n_components > 64:
        raise ValueError(f"n_components={n_components!r} must be at most 64 (the digits have 64 pixels)")
    n_neighbors = _check_int(n_neighbors, "n_neighbors", minimum=2)
    if n_neighbors > 174:
        raise ValueError(f"n_neighbors={n_neighbors!r} must be at most 174 (the smallest digit class)")
    ridge = _check_real(ridge, "ridge", low=0.0)
    if n_patterns is not None:
        n_patterns = _check_int(n_patterns, "n_patterns")
        if n_patterns > 1797:
            raise ValueError(f"n_patterns={n_patterns!r} must be at most 1797 (the number of digit images)")
    X, y = load_digits(return_X_y=True)
    Z = PCA(n_components=n_components, random_state=0).fit_transform(StandardScaler().fit_transform(X))
    Z = Z / np.sqrt(Z.var(0).sum() / n_components)  # unit average variance per component
    n, p = Z.shape
    covs = np.empty((n, p, p))
    for label in np.unique(y):  # 10 classes: a loop over classes, not data points
        idx = np.flatnonzero(y == label)
        Zc = Z[idx]
        D = ((Zc[:, None, :] - Zc[None, :, :]) ** 2).sum(-1)  # (nc, nc)
        nb = np.argsort(D, axis=1)[:, :n_neighbors]  # includes the point itself
        G = Zc[nb]  # (nc, k, p)
        G = G - G.mean(1, keepdims=True)
        covs[idx] = np.einsum("nki,nkj->nij", G, G) / (n_neighbors - 1)
    covs += ridge * np.eye(p)
    means, labels = Z, y
    if n_patterns is not None:
        sel = check_random_state(random_state).choice(n, size=int(n_patterns), replace=False)
        means, covs, labels = means[sel], covs[sel], labels[sel]
    return means, _sym(covs), labels


def sample_covariance_queries(means, covs, n_samples: int, *, random_state=None) -> tuple[np.ndarray, np.ndarray]:
    r"""Queries estimated from data: the empirical mean and covariance (ddof=1) of ``n_samples`` draws.

    A natural "uncertain" query for a stored Gaussian :math:`\mathcal N(\mu_i,\Sigma_i)`: its sample
    covariance is Wishart, :math:`\hat\Sigma\sim W_d(\Sigma_i/(n-1), n-1)`, and its mean is
    :math:`\mathcal N(\mu_i,\Sigma_i/n)`. Vectorised over the Gaussians.

    Parameters
    ----------
    means : array (n, d)
    covs : array (n, d, d)
        The Gaussians to draw from.
    n_samples : int >= 2
        Draws per Gaussian.
    random_state : int, numpy.random.Generator or None
        Seed or generator.

    Returns
    -------
    means : numpy.ndarray (n, d)
    covs : numpy.ndarray (n, d, d)

    References
    ----------
    Our query model (estimated Gaussians) for the covariance experiment beside Tankala &
    Balasubramanian (ICML 2026, arXiv:2509.23162; code: https://github.com/chandantankala/DDAM).
    """
    n_samples = _check_int(n_samples, "n_samples", minimum=2)
    m, c = check_gaussians(means, covs, name="covs")
    m = np.atleast_2d(m)
    c = c.reshape(m.shape + (m.shape[-1],))
    rng = check_random_state(random_state)
    Z = rng.standard_normal((m.shape[0], int(n_samples), m.shape[1]))  # (n, s, d)
    X = m[:, None, :] + Z @ sqrtm_psd(c)  # (n, s, d): rows ~ N(m, C)
    mh = X.mean(1)
    Xc = X - mh[:, None, :]
    return mh, _sym(np.swapaxes(Xc, 1, 2) @ Xc / (n_samples - 1))


# --------------------------------------------------------------------------- references and experiment helpers


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


def retrieval_success(mus, Sigmas, q_means, q_covs, targets, beta: float, *, method: str = "bw",
                      max_iter: int = 10, tol: float = 1e-6) -> np.ndarray:
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
        raise ValueError(f"targets must have shape (Q,) with one entry per query, got {targets.shape} "
                         f"for queries of shape {np.shape(q_means)}")
    if targets.dtype.kind not in "iu" or (targets.size and (targets.min() < 0 or targets.max() >= n_stored)):
        raise ValueError(f"targets must be integer indices in [0, {n_stored}), got {targets[:5]}...")
    if method == "bw":
        mem = BWDenseAssociativeMemory(beta, max_iter=max_iter, tol=tol).fit(mus, Sigmas)
        pred = mem.predict(q_means, q_covs)
    elif method in ("mean", "mean+cov"):
        F, Fq = gaussian_features(mus, Sigmas, mode=method), gaussian_features(q_means, q_covs, mode=method)
        pred = EuclideanDenseAssociativeMemory(beta, max_iter=max_iter, tol=tol).fit(F).predict(Fq)
    return pred == targets


def capacity_curve(d: int, n_grid, *, beta: float = 1.0, n_queries: int = 32, stop_below: float = 0.5,
                   random_state=None) -> np.ndarray:
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


# --------------------------------------------------------------------------- the chapter's experiments


def stream(*key: int) -> np.random.Generator:
    """An independent generator for one named piece of an experiment: ``default_rng([seed, part, ...])``."""
    if not key or not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 0 for k in key):
        raise ValueError(f"stream key {key!r} must be one or more non-negative integers")
    return np.random.default_rng(list(key))


def _energy_never_rises(e: np.ndarray) -> bool:
    return bool(np.all(np.diff(e, axis=0) <= 1e-9 * np.maximum(1, np.abs(e[:-1]))))


def retrieval_dynamics(seeds: Iterable[int], *, N: int, d: int, n_queries: int, betas: Sequence[float],
                       radii: Sequence[tuple[str, float]], max_iter: int = 10, tol: float = 1e-6):
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
                first = nearest_pattern(res.path_means[1], res.path_covs[1], mus, S, validate=False) == tgt
                final = nearest_pattern(res.means, res.covs, mus, S, validate=False) == tgt
                paths[(s, rname, beta)] = err.mean(1)
                rows.append({"seed": s, "radius": rname, "beta": beta, "query W2": err[0].mean(),
                             "W2 after 1 step": err[1].mean(), "final W2": err[-1].mean(),
                             "success after 1 step": first.mean(), "final success": final.mean(),
                             "mean steps": res.n_iter.mean()})
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


def shared_mean_retrieval(seeds: Iterable[int], methods: Mapping[str, str], *, N: int, d: int,
                          radii: Sequence[float], n_samples: Sequence[int], betas: Sequence[float]) -> list[dict]:
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
            settings = [(f"additive, r = {r:g}", perturb_gaussians(m, C, r, cov_scale=1.0, random_state=stream(s, 5 + off, k)))
                        for k, r in enumerate(radii)]
            settings += [(f"sample cov., n = {n}", sample_covariance_queries(m, C, n, random_state=stream(s, 6 + off, k)))
                         for k, n in enumerate(n_samples)]
            for qname, (qm, qc) in settings:
                w2q = bures_wasserstein_distance(qm, qc, m, C).mean()
                _method_rows(rows, {"seed": s, "split": split, "query model": qname, "query W2": w2q},
                             m, C, qm, qc, tgt, methods, betas)
    return rows


def digits_retrieval(seeds: Iterable[int], methods: Mapping[str, str], *, n_components: int, N: int, n_queries: int,
                     radii: Sequence[float], betas: Sequence[float]):
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
