r"""Seeded Gaussian patterns and queries: the paper's sphere, shared means, digits, perturbations.

:func:`sample_commuting_gaussians` (Algorithm 2 of the paper: Gaussians on a Wasserstein
sphere), :func:`sample_shared_mean_gaussians` (patterns that differ only in covariance),
:func:`digits_gaussians` (scikit-learn's digits as Gaussians), :func:`perturb_gaussians`
(the paper's query model) and :func:`sample_covariance_queries` (queries estimated from
samples).

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
from ._checks import _check_int, _check_real
from .geometry import _sym, check_gaussians, sqrtm_psd

__all__ = [
    "sample_commuting_gaussians",
    "sample_shared_mean_gaussians",
    "perturb_gaussians",
    "sample_covariance_queries",
    "digits_gaussians",
]


def _random_orthogonal(d: int, size: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Haar-random orthogonal matrices (size..., d, d) via QR with sign correction."""
    q, r = np.linalg.qr(rng.standard_normal(size + (d, d)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def sample_commuting_gaussians(
    n: int,
    d: int,
    *,
    radius: float | None = None,
    lambda_min: float = 1.0,
    lambda_max: float = 1.1,
    commuting: bool = True,
    random_state=None,
) -> tuple[np.ndarray, np.ndarray]:
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
            raise RuntimeError(
                f"rejection sampling accepted only {lams.shape[0]} of {n} spectra; "
                f"move R^2/2 = {target:.4g} away from the ends of the feasible interval"
            )
    lams = rng.permuted(lams[:n], axis=1)
    U = _random_orthogonal(d, () if commuting else (n,), rng)
    covs = _sym((U * lams[:, None, :]) @ np.swapaxes(U, -1, -2))
    g = rng.standard_normal((n, d))
    means = g / np.linalg.norm(g, axis=1, keepdims=True) * np.sqrt(target)
    return means, covs


def sample_shared_mean_gaussians(
    n: int, d: int, *, lambda_min: float = 0.25, lambda_max: float = 4.0, random_state=None
) -> tuple[np.ndarray, np.ndarray]:
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


def perturb_gaussians(means, covs, radius: float, *, cov_scale: float = 0.1, random_state=None) -> tuple[np.ndarray, np.ndarray]:
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


def digits_gaussians(
    n_components: int = 8, n_neighbors: int = 10, ridge: float = 0.05, n_patterns: int | None = None, random_state=None
):
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
