r"""Dense associative memory over Gaussians in the 2-Wasserstein (Bures–Wasserstein) geometry (chapter 03).

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

Modules
-------
:mod:`~icml26.bwdam.geometry`
    :func:`check_gaussians`, :func:`sqrtm_psd`, :func:`bures_wasserstein_distance`,
    :func:`pairwise_bw_sq`, :func:`ot_map`.
:mod:`~icml26.bwdam.dynamics`
    the energy and the update: :func:`energy`, :func:`gibbs_weights`, :func:`phi_step`,
    :func:`retrieve` (:class:`RetrievalResult`), :func:`nearest_pattern`, and the POT
    reference :func:`phi_step_pot_loop`.
:mod:`~icml26.bwdam.estimators`
    :class:`BWDenseAssociativeMemory`, :class:`EuclideanDenseAssociativeMemory` (the
    baseline) and :func:`gaussian_features`.
:mod:`~icml26.bwdam.data`
    :func:`sample_commuting_gaussians`, :func:`sample_shared_mean_gaussians`,
    :func:`digits_gaussians`, :func:`perturb_gaussians`, :func:`sample_covariance_queries`.
:mod:`~icml26.bwdam.evaluation`
    :func:`retrieval_success`, :func:`capacity_curve`, :func:`capacity_threshold`,
    :func:`paired_sign_test`.
:mod:`~icml26.bwdam.experiments`
    chapter 03's experiments: :func:`stream`, :func:`retrieval_dynamics`,
    :func:`shared_mean_retrieval`, :func:`digits_retrieval`.

Each submodule imports only those listed above it (and the private ``_checks``); every
public name is re-exported here:
``from icml26 import bwdam; bwdam.phi_step``.

References
----------
.. [1] C. Tankala, K. Balasubramanian. "Dense Associative Memory for Gaussian Distributions"
   (v1: "Dense Associative Memory on the Bures-Wasserstein Space"), ICML 2026, arXiv:2509.23162.
.. [2] P. C. Álvarez-Esteban, E. del Barrio, J. A. Cuesta-Albertos, C. Matrán. "A fixed-point
   approach to barycenters in Wasserstein space", J. Math. Anal. Appl. 441 (2016).
.. [3] H. Ramsauer et al. "Hopfield Networks is All You Need", ICLR 2021 (the Euclidean baseline).
"""

from __future__ import annotations

from .data import (
    _random_orthogonal,  # noqa: F401  (used by tests/test_bwdam.py)
    digits_gaussians,
    perturb_gaussians,
    sample_commuting_gaussians,
    sample_covariance_queries,
    sample_shared_mean_gaussians,
)
from .dynamics import (
    EIG_FLOOR,  # noqa: F401  (a public constant of the old module, outside its __all__)
    RetrievalResult,
    energy,
    gibbs_weights,
    nearest_pattern,
    phi_step,
    phi_step_pot_loop,
    retrieve,
)
from .estimators import BWDenseAssociativeMemory, EuclideanDenseAssociativeMemory, gaussian_features
from .evaluation import capacity_curve, capacity_threshold, paired_sign_test, retrieval_success
from .experiments import digits_retrieval, retrieval_dynamics, shared_mean_retrieval, stream
from .geometry import bures_wasserstein_distance, check_gaussians, ot_map, pairwise_bw_sq, sqrtm_psd

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
