"""FIBER: DP AdamW on innovation-filtered gradients with a filter-aware second-moment correction.

Chapter 07 of the book. Reference: Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran,
Daeyoung Kim, Huy Nguyen, "FIBER: A Differentially Private Optimizer with Filter-Aware
Innovation Bias Correction", ICML 2026, arXiv:2605.03425.

The package has five parts in six modules; everything public is importable from here.

* **Linear filters and their noise attenuation** (:mod:`~icml26.fiber.filters`). The
  innovation filter of FIBER and the exponential moving average (EMA) of DiSK as
  difference equations, the closed forms :func:`innovation_attenuation`
  :math:`A(\\omega)=(2-\\omega)/(4-3\\omega)` and :func:`ema_attenuation`
  :math:`\\kappa/(2-\\kappa)`, and :func:`numeric_attenuation` :math:`A=\\sum_k h_k^2` for
  any stable linear filter.
* **Privatisation** (:mod:`~icml26.fiber.privacy`). Per-example gradients with
  ``torch.func``, the two-point observation, flat per-example clipping and Gaussian noise,
  matching Opacus's ``DPOptimizer`` bit for bit when given the same generator (the Opacus
  side is :mod:`~icml26.fiber.opacus_ref`).
* **Privacy accounting** (:mod:`~icml26.fiber.privacy`) with Opacus's RDP accountant
  (:func:`noise_for_epsilon`, :func:`epsilon_spent`): every optimizer here post-processes
  the same Gaussian mechanism, so one noise multiplier gives every method the same
  :math:`(\\varepsilon,\\delta)`.
* **Optimizers** (:mod:`~icml26.fiber.optimizer`). :class:`FilteredDPAdamW` covers FIBER
  and its baselines/ablations (:data:`METHODS`): DP-AdamW, DP-AdamBC (the unfiltered
  :math:`\\sigma_w^2` correction), DiSK (EMA filter), and FIBER with its correction
  switched off or replaced.
* **Experiments.** :func:`second_moment_bias` (the bias mechanism on a synthetic gradient
  stream, :mod:`~icml26.fiber.experiments`) and :func:`train_private` (DP training of a
  small MLP on scikit-learn's bundled data, :mod:`~icml26.fiber.training`); the chapter's
  drivers (:func:`select_hyperparameters`, :func:`accuracy_vs_epsilon`) are in
  :mod:`~icml26.fiber.experiments`.

Imports run one way: ``filters`` and ``privacy`` < ``optimizer`` < ``training`` <
``experiments``; ``opacus_ref`` stands alone; all use the private input checks ``_checks``.
"""

from __future__ import annotations

from .experiments import accuracy_vs_epsilon, dp_step_fn, second_moment_bias, select_hyperparameters, steps_for
from .filters import (
    FILTERS,
    apply_filter,
    attenuation_profile,
    check_stable,
    ema_attenuation,
    ema_filter_coeffs,
    filter_coeffs,
    impulse_response,
    innovation_attenuation,
    innovation_filter_coeffs,
    numeric_attenuation,
)
from .filters import OMEGA_MAX as OMEGA_MAX  # public, outside __all__ as before
from .opacus_ref import opacus_dp_optimizer, opacus_step
from .optimizer import CORRECTIONS, METHODS, FilteredDPAdamW, make_optimizer
from .privacy import (
    RDP_ALPHAS,
    clip_and_sum,
    epsilon_spent,
    gaussian_noise,
    noise_for_epsilon,
    observation_weight,
    per_example_grads,
    privatize,
    two_point_grads,
)
from .training import TabularData, TrainResult, load_tabular, make_mlp, train_private, validation_split

__all__ = [
    "FILTERS",
    "CORRECTIONS",
    "METHODS",
    "innovation_attenuation",
    "ema_attenuation",
    "innovation_filter_coeffs",
    "ema_filter_coeffs",
    "filter_coeffs",
    "check_stable",
    "impulse_response",
    "numeric_attenuation",
    "attenuation_profile",
    "apply_filter",
    "observation_weight",
    "per_example_grads",
    "two_point_grads",
    "clip_and_sum",
    "gaussian_noise",
    "privatize",
    "RDP_ALPHAS",
    "noise_for_epsilon",
    "epsilon_spent",
    "FilteredDPAdamW",
    "make_optimizer",
    "second_moment_bias",
    "TabularData",
    "load_tabular",
    "validation_split",
    "make_mlp",
    "TrainResult",
    "train_private",
    "opacus_dp_optimizer",
    "opacus_step",
    "steps_for",
    "select_hyperparameters",
    "accuracy_vs_epsilon",
    "dp_step_fn",
]
