r"""Backward conformal prediction (BCP) and its score transformation ST-BCP (chapter 02).

Backward conformal prediction [1]_ fixes the size ``T`` of the prediction set and reports
the miscoverage it can certify through Markov's inequality on a conformal e-value.
ST-BCP [2]_ feeds a transformed score into the same construction so that the
certificate moves close to the realised miscoverage while the sets stay the same.

Modules
-------
:mod:`~icml26.bcp.conformal`
    scores and ranks, e-values, :math:`\tilde\alpha` (closed form and oracle), the
    leave-one-out estimate, the transformations, the T(X) size rule, split conformal.
:mod:`~icml26.bcp.protocol`
    the trial protocol of the paper's Table 1 (many 1 + n trials, every method on the
    same trials), and a labelled replication of the authors' T(X) indexing.
:mod:`~icml26.bcp.pools`
    offline classifier pools (digits, Gaussian mixtures) with log-probabilities.

Every public name is re-exported here: ``from icml26 import bcp; bcp.run_bcp``.

References
----------
.. [1] E. Gauthier, F. Bach, M. I. Jordan. "Backward Conformal Prediction",
   arXiv:2505.13732, 2025.
.. [2] J. Liu, H. Zeng, H. Wei. "Tightening Coverage Bound for Backward Conformal
   Prediction via Non-Conformity Score Transformation", ICML 2026, arXiv:2602.01733.
   Official notebook: github.com/Junxian-Liu1/ST-BCP (``STBCP.ipynb``).
"""

from __future__ import annotations

from .conformal import (
    EPS_CAL,
    TRANSFORMS,
    Transform,
    alpha_tilde,
    alpha_tilde_bruteforce,
    e_values,
    entropy_size,
    label_ranks,
    loo_alpha,
    nll_scores,
    prediction_sets,
    split_conformal_quantile,
    threshold_w,
    transform_scores,
)
from .pools import ClassifierOutputs, digits_classifier_outputs, gaussian_mixture_outputs
from .protocol import (
    CONTROL_MIN_BELOW_CHANCE,
    CONTROL_MIN_MISS,
    METHODS,
    TrialResult,
    authors_shifted_sizes,
    compare_methods,
    miscoverage_control,
    run_bcp,
    run_split_conformal,
    sample_trials,
)

__all__ = [
    "CONTROL_MIN_BELOW_CHANCE",
    "CONTROL_MIN_MISS",
    "EPS_CAL",
    "METHODS",
    "TRANSFORMS",
    "ClassifierOutputs",
    "Transform",
    "TrialResult",
    "alpha_tilde",
    "alpha_tilde_bruteforce",
    "authors_shifted_sizes",
    "compare_methods",
    "digits_classifier_outputs",
    "e_values",
    "entropy_size",
    "gaussian_mixture_outputs",
    "label_ranks",
    "loo_alpha",
    "miscoverage_control",
    "nll_scores",
    "prediction_sets",
    "run_bcp",
    "run_split_conformal",
    "sample_trials",
    "split_conformal_quantile",
    "threshold_w",
    "transform_scores",
]
