r"""The two memories as scikit-learn-style estimators, and the Euclidean baseline's features.

:class:`BWDenseAssociativeMemory` (this paper's memory over Gaussians),
:class:`EuclideanDenseAssociativeMemory` (the modern Hopfield network on vectors, the
baseline) and :func:`gaussian_features` (means, or means with vectorised covariances,
for that baseline).

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

from ._checks import _check_beta, _check_int, _check_real, _float_array
from .dynamics import RetrievalResult, energy, gibbs_weights, nearest_pattern, retrieve
from .geometry import check_gaussians, pairwise_bw_sq

__all__ = ["BWDenseAssociativeMemory", "EuclideanDenseAssociativeMemory", "gaussian_features"]


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
