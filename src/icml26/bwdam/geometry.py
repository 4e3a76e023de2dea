r"""Gaussians and their 2-Wasserstein (Bures–Wasserstein) geometry, batched in numpy.

:func:`check_gaussians` (validation of ``(means, covs)`` batches), :func:`sqrtm_psd`
(batched PSD square roots), :func:`bures_wasserstein_distance` (eq. (1) of the paper,
elementwise over broadcast batches), :func:`pairwise_bw_sq` (all pairs, in memory-bounded
blocks) and :func:`ot_map` (the Monge map :math:`T(x) = Ax + b` between two Gaussians).

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

from numbers import Real

import numpy as np

from ._checks import _check_real, _float_array

__all__ = ["check_gaussians", "sqrtm_psd", "bures_wasserstein_distance", "pairwise_bw_sq", "ot_map"]


_CHUNK_ELEMS = 4_000_000  # max floats in one (queries x patterns x d x d) block (32 MB)


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
