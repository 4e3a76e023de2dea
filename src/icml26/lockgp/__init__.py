"""LOCK: Gaussian-process kernels built from an evolutionary substitution matrix (chapter 04).

Re-implementation of the sequence kernels of Jankowiak et al., *Flexible Kernels for
Protein Property Prediction* (ICML 2026, arXiv:2606.11057; code:
github.com/generatebio/lock_gp), with the baselines the paper puts beside them.

Modules
-------
:mod:`~icml26.lockgp.substitution`
    the alphabet (:data:`ALPHABET`, :data:`AMINO_ACIDS`) and the substitution-matrix
    machinery: :func:`blosum50` (Biopython's BLOSUM50 on the 21-token alphabet
    ``ARNDCQEGHILKMFPSTWYV-``), :func:`normalize_substitution_matrix` (the authors'
    normalisation), :func:`correlation_matrix` (the Hadamard power
    :math:`C_\\gamma = \\exp(\\gamma\\tilde B)`), :func:`blosum_embedding` (the
    eigen-embedding used by the Tanimoto baseline).
:mod:`~icml26.lockgp.encoding`
    :func:`encode_indices`, :func:`encode_one_hot` (validated, with clear errors).
:mod:`~icml26.lockgp.kernels`
    the gpytorch kernels :class:`LinearGlobalKernel`, :class:`NonlinearLocalKernel`,
    :class:`TanimotoBlosumKernel`, :class:`FastHammingIMQKernel`,
    :func:`build_lock_kernel`, and the registry :data:`MODELS` of every model the
    chapter fits with :func:`build_kernel`.
:mod:`~icml26.lockgp.models`
    GP fitting: :class:`ExactGPModel`, :func:`fit_map` (MAP by L-BFGS-B, as BoTorch's
    ``fit_gpytorch_mll``), :class:`GPRegressor` (scikit-learn style).
:mod:`~icml26.lockgp.landscapes`
    data: :class:`Landscape`, :func:`make_landscape` (seeded synthetic landscapes, with a
    control in which the substitution matrix carries no signal), :func:`load_landscape`
    (a user's CSV file).
:mod:`~icml26.lockgp.evaluation`
    :func:`evaluate` (the paper's four metrics) and :func:`learning_curve` (metric
    against training-set size).

Each submodule imports only those listed above it (and the private ``_checks``); every
public name is re-exported here:
``from icml26 import lockgp; lockgp.build_kernel``.

Tensor shapes: ``N``, ``M`` numbers of sequences, ``L`` positions, ``A`` alphabet size
(21); kernels take one-hot inputs flattened to ``(..., N, L*A)`` as gpytorch requires.

References
----------
M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
arXiv:2606.11057; authors' code: https://github.com/generatebio/lock_gp.
"""

from __future__ import annotations

from .encoding import encode_indices, encode_one_hot
from .evaluation import evaluate, learning_curve
from .kernels import (
    MODELS,
    FastHammingIMQKernel,
    LinearGlobalKernel,
    NonlinearLocalKernel,
    TanimotoBlosumKernel,
    build_kernel,
    build_lock_kernel,
)
from .landscapes import Landscape, _blosum_correlation_embedding, load_landscape, make_landscape  # noqa: F401
from .models import ExactGPModel, GPRegressor, _negative_log_posterior, fit_map  # noqa: F401
from .substitution import ALPHABET, AMINO_ACIDS, blosum50, blosum_embedding, correlation_matrix, normalize_substitution_matrix

# the private helpers imported above are used by tests/test_lockgp.py and chapter 04's benchmark

__all__ = [
    "ALPHABET",
    "AMINO_ACIDS",
    "blosum50",
    "normalize_substitution_matrix",
    "correlation_matrix",
    "blosum_embedding",
    "encode_indices",
    "encode_one_hot",
    "LinearGlobalKernel",
    "NonlinearLocalKernel",
    "TanimotoBlosumKernel",
    "FastHammingIMQKernel",
    "build_lock_kernel",
    "build_kernel",
    "MODELS",
    "ExactGPModel",
    "fit_map",
    "GPRegressor",
    "evaluate",
    "Landscape",
    "make_landscape",
    "load_landscape",
    "learning_curve",
]
