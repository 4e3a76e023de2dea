"""LOCK: Gaussian-process kernels built from an evolutionary substitution matrix.

Re-implementation of the sequence kernels of Jankowiak et al., *Flexible Kernels for
Protein Property Prediction* (ICML 2026, arXiv:2606.11057; code:
github.com/generatebio/lock_gp), with the baselines the paper puts beside them.

Contents
--------
Substitution-matrix machinery
    :func:`blosum50` (Biopython's BLOSUM50 on the 21-token alphabet ``ARNDCQEGHILKMFPSTWYV-``),
    :func:`normalize_substitution_matrix` (the authors' normalisation),
    :func:`correlation_matrix` (the Hadamard power :math:`C_\\gamma = \\exp(\\gamma\\tilde B)`),
    :func:`blosum_embedding` (the eigen-embedding used by the Tanimoto baseline).
Encoding
    :func:`encode_indices`, :func:`encode_one_hot` (validated, with clear errors).
Kernels (gpytorch)
    :class:`LinearGlobalKernel`, :class:`NonlinearLocalKernel`, :class:`TanimotoBlosumKernel`,
    :func:`build_lock_kernel` and the registry :data:`MODELS` of every model the chapter fits.
GP fitting
    :class:`ExactGPModel`, :func:`fit_map` (MAP by L-BFGS-B, as BoTorch's ``fit_gpytorch_mll``),
    :class:`GPRegressor` (scikit-learn style), :func:`evaluate`.
Data
    :func:`make_landscape` (seeded synthetic landscapes, with a control in which the
    substitution matrix carries no signal), :func:`load_landscape` (a user's CSV file),
    :func:`learning_curve` (metric against training-set size).

Tensor shapes: ``N``, ``M`` numbers of sequences, ``L`` positions, ``A`` alphabet size
(21); kernels take one-hot inputs flattened to ``(..., N, L*A)`` as gpytorch requires.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from pathlib import Path

import gpytorch
import numpy as np
import torch
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import AdditiveKernel, HammingIMQKernel, Kernel, LinearKernel, ProductKernel, ScaleKernel
from gpytorch.priors import GammaPrior, NormalPrior
from gpytorch.utils.warnings import NumericalWarning
from torch import Tensor

from ._common import check_int, check_random_state, seed_from
from ._common import progress as _progress

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

#: The 20 canonical amino acids in the order of the authors' code (and of BLOSUM tables).
AMINO_ACIDS: str = "ARNDCQEGHILKMFPSTWYV"
#: The kernels' alphabet: the 20 amino acids plus the gap token ``-`` (A = 21).
ALPHABET: str = AMINO_ACIDS + "-"


def _check_int(value, name: str, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum`` (integral floats such as 3.0 are accepted)."""
    return check_int(value, name, low=minimum, integral_floats=True)


def _check_nonneg(value, name: str, *, positive: bool = False) -> float:
    """``value`` as a finite float >= 0 (> 0 with ``positive``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise TypeError(f"{name}={value!r} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise ValueError(f"{name}={value!r} must be a finite number {'> 0' if positive else '>= 0'}")
    return v


def _square_matrix(B, name: str = "B") -> np.ndarray:
    try:
        M = np.asarray(B)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric square matrix ({exc})") from None
    if M.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real numeric matrix, got dtype {M.dtype}")
    M = M.astype(float)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {M.shape}")
    if not np.all(np.isfinite(M)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    if not np.allclose(M, M.T):
        raise ValueError(f"{name} must be symmetric")
    return M


# --------------------------------------------------------------------------------------
# Substitution matrices
# --------------------------------------------------------------------------------------


def blosum50(alphabet: str = ALPHABET) -> np.ndarray:
    """BLOSUM50 log-odds scores on ``alphabet``, from Biopython.

    The gap token ``-`` takes Biopython's ``*`` row (score -5 against every amino acid,
    +1 against itself), which is exactly the gap row of the authors' table.

    Parameters
    ----------
    alphabet : str
        Tokens to index the matrix by; each must be one of ``ARNDCQEGHILKMFPSTWYV-``.

    Returns
    -------
    numpy.ndarray, shape (A, A)
        Integer-valued (float64) symmetric matrix ``B[a, b]``.

    References
    ----------
    S. Henikoff, J. G. Henikoff, PNAS 89 (1992); as used by Jankowiak et al., ICML 2026,
    arXiv:2606.11057, Sec. 3 (code: https://github.com/generatebio/lock_gp).
    """
    from Bio.Align import substitution_matrices

    _check_alphabet(alphabet)
    table = substitution_matrices.load("BLOSUM50")
    keys = ["*" if a == "-" else a for a in alphabet]
    return np.array([[float(table[a][b]) for b in keys] for a in keys])


def _check_alphabet(alphabet: str) -> None:
    if not isinstance(alphabet, str) or not alphabet:
        raise TypeError(f"alphabet must be a non-empty str of tokens, got {alphabet!r}")
    bad = sorted(set(alphabet) - set(ALPHABET))
    if bad:
        raise ValueError(f"alphabet has token(s) {bad} not in BLOSUM50; allowed tokens are {ALPHABET!r}")
    if len(set(alphabet)) != len(alphabet):
        raise ValueError(f"alphabet={alphabet!r} repeats a token")


def normalize_substitution_matrix(B: np.ndarray, target: float = 0.25) -> np.ndarray:
    r"""The authors' normalisation of a log-odds substitution matrix.

    .. math::

        S_{ab} = B_{ab} - \tfrac12 (B_{aa} + B_{bb}), \qquad
        \tilde B = S \cdot \frac{t}{|\operatorname{median}_{a,b} S_{ab}|},

    with :math:`t` = ``target`` (0.25 in the paper's code); the median runs over all
    :math:`A^2` entries, diagonal zeros included. Hence :math:`\tilde B_{aa} = 0` and
    :math:`C_\gamma = \exp(\gamma \tilde B)` has a unit diagonal (Jankowiak et al. 2026,
    Sec. 3; ``get_blosum50_matrix(normalize=True)`` in the released code).

    Parameters
    ----------
    B : array_like, shape (A, A)
        Symmetric log-odds matrix.
    target : float
        Absolute value the median entry is scaled to; must be positive.

    Returns
    -------
    numpy.ndarray, shape (A, A)

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057, Sec. 3; authors' code: https://github.com/generatebio/lock_gp.
    """
    B = _square_matrix(B)
    target = _check_nonneg(target, "target", positive=True)
    d = np.diag(B)
    S = B - 0.5 * (d[:, None] + d[None, :])
    med = abs(float(np.median(S)))
    if med == 0.0:
        raise ValueError("the median of the shifted matrix is 0; cannot normalise")
    return S * (target / med)


def correlation_matrix(B_tilde: np.ndarray, gamma: float) -> np.ndarray:
    r"""Hadamard power of the substitution correlation: :math:`C_\gamma = \exp(\gamma \tilde B)`.

    Element-wise, :math:`C_\gamma = (e^{\tilde B})^{\circ\gamma}`. Because BLOSUM-derived
    :math:`e^{\tilde B}` is infinitely divisible, :math:`C_\gamma` is positive semi-definite
    for every :math:`\gamma > 0` (Jankowiak et al. 2026, Sec. 3), so :math:`\gamma` can
    be learned as a kernel hyper-parameter.

    Parameters
    ----------
    B_tilde : array_like, shape (A, A)
        Normalised matrix from :func:`normalize_substitution_matrix`.
    gamma : float
        Exponent, > 0.

    Returns
    -------
    numpy.ndarray, shape (A, A)

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057, Sec. 3 (infinite divisibility); authors' code: https://github.com/generatebio/lock_gp.
    """
    gamma = _check_nonneg(gamma, "gamma", positive=True)
    return np.exp(gamma * _square_matrix(B_tilde, "B_tilde"))


def blosum_embedding(B: np.ndarray) -> np.ndarray:
    r"""Residue embedding of the Tanimoto baseline: :math:`E = V \operatorname{diag}(\sqrt{\max(\lambda, 0)})`.

    :math:`B = V \operatorname{diag}(\lambda) V^\top` is the eigen-decomposition of the raw
    log-odds matrix; negative eigenvalues are clamped to zero, so :math:`E E^\top` is the
    nearest PSD matrix to :math:`B` in this basis (``TanimotoKernel`` in the released code).

    Parameters
    ----------
    B : array_like, shape (A, A)
        Symmetric log-odds matrix.

    Returns
    -------
    numpy.ndarray, shape (A, A)
        Row ``a`` is the embedding of token ``a``.

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057 (the Tanimoto baseline); authors' code: https://github.com/generatebio/lock_gp.
    """
    B = _square_matrix(B)
    lam, V = np.linalg.eigh(B)
    return V * np.sqrt(np.clip(lam, 0.0, None))[None, :]


# --------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------


def encode_indices(sequences: Sequence[str], alphabet: str = ALPHABET, length: int | None = None) -> np.ndarray:
    """Token indices of equal-length sequences, with clear errors for bad input.

    Parameters
    ----------
    sequences : sequence of str
        Aligned sequences, all of the same length, using only tokens of ``alphabet``.
    alphabet : str
        Token order (default :data:`ALPHABET`).
    length : int, optional
        Required length; default: the length of the first sequence.

    Returns
    -------
    numpy.ndarray of int64, shape (N, L)

    Raises
    ------
    ValueError
        Empty input; a sequence of another length (names its index and length); a token
        outside the alphabet (names it, its sequence and the allowed tokens).
    TypeError
        An element that is not a string.

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057 (sequences are aligned and one-hot encoded); authors' code: https://github.com/generatebio/lock_gp.
    """
    if not isinstance(alphabet, str) or not alphabet:
        raise TypeError(f"alphabet must be a non-empty str of tokens, got {alphabet!r}")
    if isinstance(sequences, str):
        raise TypeError("sequences must be a sequence of strings, not a single string")
    seqs = list(sequences)
    if not seqs:
        raise ValueError("sequences is empty; give at least one sequence")
    for i, s in enumerate(seqs):
        if not isinstance(s, str):
            raise TypeError(f"sequence {i} is {type(s).__name__}, expected str")
    L = len(seqs[0]) if length is None else _check_int(length, "length")
    if L < 1:
        raise ValueError(f"sequence length must be >= 1, got {L}")
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    bad = np.flatnonzero(lengths != L)
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"sequence {i} has length {lengths[i]}, expected {L} (all sequences must be aligned to one length)"
        )
    if any(ord(a) > 127 for a in alphabet) or len(set(alphabet)) != len(alphabet):
        raise ValueError(f"alphabet={alphabet!r} must be distinct ASCII tokens")
    # Map bytes through a lookup table: vectorised over all residues at once.
    lut = np.full(256, -1, dtype=np.int64)
    for k, a in enumerate(alphabet):
        lut[ord(a)] = k
    try:
        raw = np.frombuffer("".join(seqs).encode("ascii"), dtype=np.uint8)
    except UnicodeEncodeError:
        raw = None
    if raw is None or (idx := lut[raw]).min() < 0:
        for i, s in enumerate(seqs):
            unknown = sorted(set(s) - set(alphabet))
            if unknown:
                raise ValueError(
                    f"sequence {i} has unknown token(s) {unknown}; allowed tokens are {alphabet!r}"
                )
    return idx.reshape(len(seqs), L)


def encode_one_hot(
    sequences: Sequence[str], alphabet: str = ALPHABET, dtype: torch.dtype = torch.float64
) -> Tensor:
    """One-hot encoding, shape ``(N, L, A)``, of validated sequences (see :func:`encode_indices`).

    Parameters
    ----------
    sequences : sequence of str
        Aligned sequences of one length.
    alphabet : str
        Token order.
    dtype : torch.dtype
        A floating-point dtype of the result.

    Returns
    -------
    torch.Tensor, shape (N, L, A)

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057; authors' code: https://github.com/generatebio/lock_gp.
    """
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype={dtype!r} must be a floating-point torch.dtype")
    idx = torch.from_numpy(encode_indices(sequences, alphabet))
    return torch.nn.functional.one_hot(idx, num_classes=len(alphabet)).to(dtype)  # (N, L, A)


# --------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------

def _b_tilde_tensor(alphabet: str = ALPHABET) -> Tensor:
    return torch.from_numpy(normalize_substitution_matrix(blosum50(alphabet)))


class _OneHotKernel(Kernel):
    """Shared input handling: flattened one-hot ``(..., N, L*A)`` -> ``(..., N, L, A)``."""

    has_lengthscale = False

    def __init__(self, num_positions: int, alphabet_size: int = len(ALPHABET), **kwargs) -> None:
        num_positions = _check_int(num_positions, "num_positions")
        alphabet_size = _check_int(alphabet_size, "alphabet_size")
        super().__init__(**kwargs)
        self.num_positions = num_positions
        self.alphabet_size = alphabet_size

    def _unflatten(self, x: Tensor) -> Tensor:
        L, A = self.num_positions, self.alphabet_size
        if not isinstance(x, Tensor):
            raise TypeError(f"kernel inputs must be torch tensors of shape (..., N, L*A), got {type(x).__name__}")
        if x.ndim < 2 or x.shape[-1] != L * A:
            raise ValueError(
                f"input has {x.shape[-1]} features; expected num_positions*alphabet_size = {L}*{A} = {L * A} "
                "(one-hot sequences flattened to (..., N, L*A))"
            )
        return x.reshape(*x.shape[:-1], L, A)  # (..., N, L, A)

    @staticmethod
    def _no_last_dim_is_batch(flag: bool) -> None:
        if flag:
            raise ValueError("last_dim_is_batch=True is not supported by sequence kernels")


class LinearGlobalKernel(_OneHotKernel):
    r"""Linear-global LOCK kernel: a sum of per-position substitution correlations.

    .. math::

        k_\text{lin}(x, x') = \sum_{l=1}^{L} C_\gamma[x_l, x'_l], \qquad
        C_\gamma = \exp(\gamma \tilde B),\ \gamma = e^{\theta},\ \theta \sim \mathcal N(0, 1).

    :math:`k_\text{lin}(x, x) = L`. It is the covariance of an additive model whose
    per-site effects are correlated across amino acids by :math:`C_\gamma`
    (``LinearGlobalLOCKKernel`` in the released code).

    Parameters
    ----------
    num_positions : int
        Sequence length ``L``.
    batch_shape : torch.Size, optional
        Batch of independent hyper-parameters (gpytorch convention).

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057, Sec. 3 (``LinearGlobalLOCKKernel``); authors' code: https://github.com/generatebio/lock_gp.
    """

    def __init__(self, num_positions: int, **kwargs) -> None:
        super().__init__(num_positions, **kwargs)
        self.register_buffer("B_tilde", _b_tilde_tensor())  # (A, A)
        self.register_parameter("log_gamma", torch.nn.Parameter(torch.zeros(*self.batch_shape, 1)))
        self.register_prior("log_gamma_prior", NormalPrior(0.0, 1.0), "log_gamma")

    @property
    def gamma(self) -> Tensor:
        return self.log_gamma.exp()  # (*batch, 1)

    def correlation(self) -> Tensor:
        """:math:`C_\\gamma = \\exp(\\gamma \\tilde B)` at the current :math:`\\gamma`.

        Parameters
        ----------
        None

        Returns
        -------
        torch.Tensor, shape (*batch, A, A)
        """
        return torch.exp(self.gamma[..., None] * self.B_tilde.to(self.log_gamma))

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False, **params):
        self._no_last_dim_is_batch(last_dim_is_batch)
        z1, z2 = self._unflatten(x1), self._unflatten(x2)  # (..., N, L, A), (..., M, L, A)
        C = self.correlation().to(z1)  # (*batch, A, A)
        # without a batch of hyper-parameters, z1 @ C is one (N*L, A) x (A, A) product; the
        # broadcast form below would run it as N small batched products (twice as slow)
        z1C = z1 @ (C if C.ndim == 2 else C.unsqueeze(-3))  # (..., N, L, A): row l is C[x_l, :]
        if diag:
            return (z1C * z2).sum(dim=(-1, -2))  # (..., N)
        return z1C.flatten(-2) @ z2.flatten(-2).transpose(-1, -2)  # (..., N, M)


class NonlinearLocalKernel(_OneHotKernel):
    r"""Nonlinear-local LOCK kernel: a product of per-position correlations.

    .. math::

        k_\text{nl}(x, x') = \exp\Big(\sum_{l=1}^{L} \gamma\gamma_l\, \tilde B[x_l, x'_l]\Big)
                          = \prod_{l} C_{\gamma\gamma_l}[x_l, x'_l],

    :math:`\gamma = e^{\theta}`, :math:`\theta \sim \mathcal N(0, 1)`, :math:`\gamma_l = e^{\theta_l}`,
    :math:`\theta_l \sim \mathcal N(0, 0.5^2)`. :math:`k_\text{nl}(x, x) = 1` since
    :math:`\tilde B_{aa} = 0`; it decays with a substitution-weighted distance in sequence
    space (``NonlinearLocalLOCKKernel`` in the released code).

    Parameters
    ----------
    num_positions : int
        Sequence length ``L``.
    batch_shape : torch.Size, optional
        Batch of independent hyper-parameters.

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057, Sec. 3 (``NonlinearLocalLOCKKernel``); authors' code: https://github.com/generatebio/lock_gp.
    """

    def __init__(self, num_positions: int, **kwargs) -> None:
        super().__init__(num_positions, **kwargs)
        self.register_buffer("B_tilde", _b_tilde_tensor())  # (A, A)
        self.register_parameter("log_gamma", torch.nn.Parameter(torch.zeros(*self.batch_shape, 1)))
        self.register_parameter(
            "log_local", torch.nn.Parameter(torch.zeros(*self.batch_shape, self.num_positions))
        )
        self.register_prior("log_gamma_prior", NormalPrior(0.0, 1.0), "log_gamma")
        self.register_prior("log_local_prior", NormalPrior(0.0, 0.5), "log_local")

    def position_exponents(self) -> Tensor:
        """The per-position exponents :math:`\\gamma \\gamma_l`.

        Parameters
        ----------
        None

        Returns
        -------
        torch.Tensor, shape (*batch, L)
        """
        return torch.exp(self.log_gamma + self.log_local)

    def log_kernel(self, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        """:math:`\\log k_\\text{nl}(x, x')`.

        Parameters
        ----------
        x1, x2 : torch.Tensor, shape (..., N, L*A) and (..., M, L*A)
            Flattened one-hot sequences.
        diag : bool
            Only the diagonal (``x1`` and ``x2`` of the same length).

        Returns
        -------
        torch.Tensor, shape (..., N, M) (or (..., N) if ``diag``)
        """
        z1, z2 = self._unflatten(x1), self._unflatten(x2)  # (..., N, L, A), (..., M, L, A)
        w = self.position_exponents().to(z1)  # (*batch, L)
        # row l of z1M is gamma*gamma_l * B~[x_l, :]; B~ is shared by all positions, so one matmul
        z1M = (z1 @ self.B_tilde.to(z1)) * w[..., None, :, None]  # (..., N, L, A)
        if diag:
            return (z1M * z2).sum(dim=(-1, -2))  # (..., N)
        return z1M.flatten(-2) @ z2.flatten(-2).transpose(-1, -2)  # (..., N, M)

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False, **params):
        self._no_last_dim_is_batch(last_dim_is_batch)
        return self.log_kernel(x1, x2, diag=diag).exp()


class TanimotoBlosumKernel(_OneHotKernel):
    r"""Tanimoto kernel on the BLOSUM50 eigen-embedding (the paper's Tanimoto baseline).

    Each sequence is embedded as :math:`\phi(x) = (E[x_1], \dots, E[x_L])` with
    :math:`E` = :func:`blosum_embedding` of raw BLOSUM50, and

    .. math::

        k(x, x') = \frac{\langle \phi, \phi' \rangle}{\|\phi\|^2 + \|\phi'\|^2 - \langle \phi, \phi' \rangle}.

    No hyper-parameters (use inside a ``ScaleKernel``).

    Parameters
    ----------
    num_positions : int
        Sequence length ``L``.

    References
    ----------
    The Tanimoto baseline of Jankowiak et al., ICML 2026, arXiv:2606.11057 (``TanimotoKernel`` in
    https://github.com/generatebio/lock_gp).
    """

    def __init__(self, num_positions: int, **kwargs) -> None:
        super().__init__(num_positions, **kwargs)
        self.register_buffer("embedding", torch.from_numpy(blosum_embedding(blosum50())))  # (A, A)

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False, **params):
        self._no_last_dim_is_batch(last_dim_is_batch)
        E = self.embedding.to(x1)
        f1 = (self._unflatten(x1) @ E).flatten(-2)  # (..., N, L*A)
        f2 = (self._unflatten(x2) @ E).flatten(-2)  # (..., M, L*A)
        n1 = (f1 * f1).sum(-1)  # (..., N)
        n2 = (f2 * f2).sum(-1)  # (..., M)
        if diag:
            dot = (f1 * f2).sum(-1)  # (..., N)
            return dot / (n1 + n2 - dot)
        dot = f1 @ f2.transpose(-1, -2)  # (..., N, M)
        return dot / (n1[..., :, None] + n2[..., None, :] - dot)


class FastHammingIMQKernel(HammingIMQKernel):
    r"""gpytorch's ``HammingIMQKernel`` with the Hamming distance computed as one matrix product.

    :math:`k(x, x') = \big((1+\alpha)/(\alpha + d_H(x, x'))\big)^\beta` (Amin et al. 2023,
    arXiv:2304.03775), same parameters, priors and outputs as the parent; only
    :math:`d_H = L - \langle \text{onehot}(x), \text{onehot}(x') \rangle` is formed by a
    ``(N, L*V) @ (L*V, M)`` product instead of gpytorch's ``(N, M, L, V)`` broadcast,
    which takes minutes at N = 384 on a CPU (see the chapter's benchmark).

    Parameters
    ----------
    vocab_size : int
        Alphabet size V (21 for :data:`ALPHABET`).
    **kwargs
        As :class:`gpytorch.kernels.HammingIMQKernel`.

    References
    ----------
    H. Amin et al., arXiv:2304.03775 (2023); a baseline beside Jankowiak et al., ICML 2026,
    arXiv:2606.11057 (code: https://github.com/generatebio/lock_gp).
    """

    def __init__(self, vocab_size: int, **kwargs) -> None:
        super().__init__(vocab_size=_check_int(vocab_size, "vocab_size"), **kwargs)

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False, **params):
        if last_dim_is_batch:
            raise ValueError("last_dim_is_batch=True is not supported by sequence kernels")
        if not (isinstance(x1, Tensor) and isinstance(x2, Tensor)):
            raise TypeError("kernel inputs must be torch tensors of shape (..., N, L*V)")
        if x1.ndim < 2 or x1.shape[-1] % self.vocab_size or x1.shape[-1] != x2.shape[-1]:
            raise ValueError(f"inputs have {x1.shape[-1]} and {x2.shape[-1]} features; both must be the same "
                             f"multiple of vocab_size={self.vocab_size} (one-hot flattened to (..., N, L*V))")
        L = x1.shape[-1] // self.vocab_size
        if diag:
            dist = L - (x1 * x2).sum(-1)  # (..., N)
        else:
            dist = L - x1 @ x2.transpose(-1, -2)  # (..., N, M)
        return self._imq(dist.clamp_min(0))


def _scaled(kernel: Kernel) -> ScaleKernel:
    """``ScaleKernel`` with the paper's outputscale prior Gamma(2, 2) and floor 1e-4."""
    return ScaleKernel(
        kernel,
        outputscale_prior=GammaPrior(2.0, 2.0),
        outputscale_constraint=GreaterThan(1e-4),
        batch_shape=kernel.batch_shape,
    )


def build_lock_kernel(num_positions: int, **kwargs) -> Kernel:
    r"""The LOCK kernel :math:`k = s_1\, k_\text{nl} \cdot k^{(1)}_\text{lin} + s_2\, k^{(2)}_\text{lin}`.

    Two independent linear-global kernels (each its own :math:`\gamma`); the product term
    is the "local linearity" (an additive model whose coefficients drift smoothly with
    distance in sequence space), the second term a global additive model. Outputscales
    :math:`s_i \sim \mathrm{Gamma}(2, 2)`, :math:`s_i \ge 10^{-4}` (``build_lock_kernel`` in
    the released code).

    Parameters
    ----------
    num_positions : int
        Sequence length ``L``.
    **kwargs
        Passed to each part (e.g. ``batch_shape``).

    Returns
    -------
    gpytorch.kernels.Kernel

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057, Sec. 3 (``build_lock_kernel``); authors' code: https://github.com/generatebio/lock_gp.
    """
    nonlinear = NonlinearLocalKernel(num_positions, **kwargs)
    linear1 = LinearGlobalKernel(num_positions, **kwargs)
    linear2 = LinearGlobalKernel(num_positions, **kwargs)
    return AdditiveKernel(_scaled(ProductKernel(nonlinear, linear1)), _scaled(linear2))


#: Display names of the models the chapter fits, in plotting order.
MODELS: dict[str, str] = {
    "lock": "LOCK",
    "linear": "Linear (one-hot)",
    "tanimoto": "Tanimoto (BLOSUM)",
    "hamming": "Hamming-IMQ",
    "lock-lin": "LOCK: k_lin only",
    "lock-nl": "LOCK: k_nl only",
}


def build_kernel(name: str, num_positions: int, alphabet_size: int = len(ALPHABET)) -> Kernel:
    """Kernel of model ``name`` (a key of :data:`MODELS`) for sequences of ``num_positions``.

    ``linear`` is ``ScaleKernel(LinearKernel())`` on the flattened one-hot encoding and
    ``hamming`` is gpytorch's ``HammingIMQKernel`` (Amin et al. 2023; computed by
    :class:`FastHammingIMQKernel`, equal to it to rounding), both with the same
    outputscale prior as LOCK; ``lock-lin`` and ``lock-nl`` are the two halves of LOCK alone.

    Parameters
    ----------
    name : str
        A key of :data:`MODELS`.
    num_positions : int
        Sequence length ``L``.
    alphabet_size : int
        Alphabet size (21).

    Returns
    -------
    gpytorch.kernels.Kernel

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057 (the demo's baselines); authors' code: https://github.com/generatebio/lock_gp.
    """
    if not isinstance(name, str) or name not in MODELS:
        raise ValueError(f"unknown model {name!r}; use one of {', '.join(map(repr, MODELS))}")
    num_positions = _check_int(num_positions, "num_positions")
    alphabet_size = _check_int(alphabet_size, "alphabet_size")
    if name == "lock":
        return build_lock_kernel(num_positions)
    if name == "linear":
        return _scaled(LinearKernel())
    if name == "tanimoto":
        return _scaled(TanimotoBlosumKernel(num_positions))
    if name == "hamming":
        return _scaled(FastHammingIMQKernel(vocab_size=alphabet_size))
    if name == "lock-lin":
        return _scaled(LinearGlobalKernel(num_positions))
    if name == "lock-nl":
        return _scaled(NonlinearLocalKernel(num_positions))
    raise ValueError(f"unknown model {name!r}; use one of {', '.join(map(repr, MODELS))}")


# --------------------------------------------------------------------------------------
# Exact GP and MAP fitting
# --------------------------------------------------------------------------------------

class ExactGPModel(gpytorch.models.ExactGP):
    """Exact GP with constant mean and Gaussian noise (prior Gamma(2, 2), floor 1e-4).

    Parameters
    ----------
    train_x : torch.Tensor, shape (N, D)
        Training inputs (flattened one-hot sequences for the sequence kernels).
    train_y : torch.Tensor, shape (N,)
        Finite training targets.
    kernel : gpytorch.kernels.Kernel
        Covariance function.

    References
    ----------
    As ``GPWrapper`` in the code of Jankowiak et al., ICML 2026, arXiv:2606.11057
    (https://github.com/generatebio/lock_gp).
    """

    def __init__(self, train_x: Tensor, train_y: Tensor, kernel: Kernel) -> None:
        if not (isinstance(train_x, Tensor) and isinstance(train_y, Tensor)):
            raise TypeError(f"train_x and train_y must be torch tensors, got {type(train_x).__name__} and {type(train_y).__name__}")
        if train_x.ndim != 2 or train_y.ndim != 1 or train_x.shape[0] != train_y.shape[0] or train_y.shape[0] < 1:
            raise ValueError(f"need train_x of shape (N, D) and train_y of shape (N,), N >= 1; "
                             f"got {tuple(train_x.shape)} and {tuple(train_y.shape)}")
        if not (torch.isfinite(train_x).all() and torch.isfinite(train_y).all()):
            raise ValueError("train_x and train_y must be finite (found NaN or inf)")
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a gpytorch Kernel, got {type(kernel).__name__}")
        likelihood = gpytorch.likelihoods.GaussianLikelihood(
            noise_prior=GammaPrior(2.0, 2.0), noise_constraint=GreaterThan(1e-4)
        )
        super().__init__(train_x, train_y, likelihood)
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = kernel

    def forward(self, x: Tensor) -> gpytorch.distributions.MultivariateNormal:
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def _negative_log_posterior(model: ExactGPModel) -> Tensor:
    """``-(log p(y | theta) + log p(theta)) / N`` (gpytorch's ``ExactMarginalLogLikelihood``)."""
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(model.likelihood, model)
    out = model(*model.train_inputs)
    return -mll(out, model.train_targets)


def fit_map(model: ExactGPModel, max_iter: int = 200) -> dict[str, float]:
    r"""MAP hyper-parameters by L-BFGS-B on the log marginal likelihood plus log priors.

    Minimises :math:`-\frac1N\big[\log p(y\mid\theta) + \log p(\theta)\big]` over the raw
    (unconstrained) parameters with SciPy's L-BFGS-B, the optimiser BoTorch's
    ``fit_gpytorch_mll`` uses in the authors' code. A step at which the Cholesky
    factorisation fails is given a large loss, so the line search backs off; the best
    parameters seen are kept. A failure at the starting point is raised.

    Parameters
    ----------
    model : ExactGPModel
        The model whose parameters are fitted in place.
    max_iter : int >= 1
        L-BFGS-B iteration cap.

    Returns
    -------
    dict
        ``loss`` (final objective), ``n_iter``, ``n_eval``, ``n_failed`` evaluations,
        ``n_jitter`` (gpytorch jitter warnings swallowed), ``converged`` (0/1).

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057 (``fit_gpytorch_mll`` in the demo); authors' code: https://github.com/generatebio/lock_gp.
    """
    from scipy.optimize import minimize

    max_iter = _check_int(max_iter, "max_iter")
    if not isinstance(model, ExactGPModel):
        raise TypeError(f"model must be an ExactGPModel, got {type(model).__name__}")
    params = [p for p in model.parameters() if p.requires_grad]
    sizes = [p.numel() for p in params]

    def set_flat(v: np.ndarray) -> None:
        with torch.no_grad():
            offset = 0
            for p, n in zip(params, sizes):
                p.copy_(torch.from_numpy(v[offset : offset + n]).view_as(p).to(p))
                offset += n

    x0 = torch.cat([p.detach().reshape(-1) for p in params]).double().numpy().copy()
    state = {"best": math.inf, "best_x": x0.copy(), "n_eval": 0, "n_failed": 0, "n_jitter": 0}
    model.train()

    def objective(v: np.ndarray) -> tuple[float, np.ndarray]:
        set_flat(v)
        for p in params:
            p.grad = None
        state["n_eval"] += 1
        try:
            with warnings.catch_warnings(record=True) as caught:
                # gpytorch warns when it adds jitter to a nearly singular matrix; that is a
                # numerical event of the optimiser's trial point, counted rather than printed.
                warnings.simplefilter("always", NumericalWarning)
                loss = _negative_log_posterior(model)
                loss.backward()
            state["n_jitter"] += sum(issubclass(w.category, NumericalWarning) for w in caught)
            for w in caught:
                if not issubclass(w.category, NumericalWarning):
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            value = float(loss.item())
            grad = np.concatenate(
                [(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1).double().numpy() for p in params]
            )
            if not (np.isfinite(value) and np.all(np.isfinite(grad))):
                raise FloatingPointError
        except (gpytorch.utils.errors.NotPSDError, FloatingPointError, RuntimeError):
            if state["n_eval"] == 1:  # failing at the starting point is a bug or bad data, not a bad step
                raise
            state["n_failed"] += 1
            return 1e10, np.zeros_like(v)
        if value < state["best"]:
            state["best"], state["best_x"] = value, v.copy()
        return value, grad

    res = minimize(objective, x0, jac=True, method="L-BFGS-B", options={"maxiter": int(max_iter)})
    set_flat(state["best_x"])
    return {
        "loss": float(state["best"]),
        "n_iter": float(res.nit),
        "n_eval": float(state["n_eval"]),
        "n_failed": float(state["n_failed"]),
        "n_jitter": float(state["n_jitter"]),
        "converged": float(bool(res.success)),
    }


def _as_one_hot(X: Sequence[str] | np.ndarray | Tensor) -> Tensor:
    if isinstance(X, (str, bytes)) or X is None or isinstance(X, (Real, Mapping)):
        raise TypeError(f"X must be a list of sequences or a one-hot array of shape (N, L, {len(ALPHABET)}), got {type(X).__name__}")
    if isinstance(X, Tensor):
        x = X.to(torch.float64)
    elif isinstance(X, np.ndarray) and X.dtype.kind in "fiub":
        x = torch.from_numpy(np.asarray(X, dtype=np.float64))
    else:
        x = encode_one_hot(list(X))
    if x.ndim != 3 or x.shape[-1] != len(ALPHABET) or 0 in x.shape:
        raise ValueError(f"X must be sequences or one-hot of shape (N, L, {len(ALPHABET)}), got shape {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError("X must be finite (found NaN or inf in the one-hot array)")
    return x  # (N, L, A)


class GPRegressor:
    """Exact GP regressor on protein sequences with one of the kernels of :data:`MODELS`.

    Targets are standardised for fitting and predictions are returned on the original
    scale, as in the authors' ``GPWrapper``. Hyper-parameters are MAP estimates
    (:func:`fit_map`); everything runs in float64.

    Parameters
    ----------
    kernel : str
        A key of :data:`MODELS` (default ``"lock"``).
    max_iter : int
        L-BFGS-B iteration cap.
    random_state : int, numpy.random.Generator or None
        Unused by the deterministic fit (validated); kept for the scikit-learn convention.

    Attributes
    ----------
    model_ : ExactGPModel
    fit_info_ : dict
        Output of :func:`fit_map` plus ``fit_s`` (wall seconds).

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057 (``GPWrapper``); authors' code: https://github.com/generatebio/lock_gp.
    """

    def __init__(self, kernel: str = "lock", max_iter: int = 200, random_state: int | None = None) -> None:
        self.kernel = kernel
        self.max_iter = max_iter
        self.random_state = random_state

    def fit(self, X: Sequence[str] | np.ndarray | Tensor, y: np.ndarray | Tensor) -> GPRegressor:
        """Fit the GP's hyper-parameters by MAP.

        Parameters
        ----------
        X : sequence of str, or one-hot array/tensor of shape (N, L, 21)
            Training sequences.
        y : array_like, shape (N,)
            Finite training targets.

        Returns
        -------
        GPRegressor
            ``self``.
        """
        if not isinstance(self.kernel, str) or self.kernel not in MODELS:
            raise ValueError(f"unknown kernel {self.kernel!r}; use one of {', '.join(map(repr, MODELS))}")
        _check_int(self.max_iter, "max_iter")
        if self.random_state is not None:
            check_random_state(self.random_state)
        x = _as_one_hot(X)  # (N, L, A)
        try:
            y_np = np.asarray(y.detach().cpu().numpy() if isinstance(y, Tensor) else y, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"y must be numeric, got {type(y).__name__} ({exc})") from None
        y_t = torch.as_tensor(y_np)
        if y_t.ndim != 1 or y_t.shape[0] != x.shape[0]:
            raise ValueError(f"y must have shape ({x.shape[0]},), got {tuple(y_t.shape)}")
        if x.shape[0] < 2:
            raise ValueError("need at least 2 training sequences")
        if not torch.isfinite(y_t).all():
            raise ValueError("y has non-finite values")
        self.y_mean_ = float(y_t.mean())
        sd = float(y_t.std())
        self.y_std_ = sd if sd > 0 else 1.0
        self.num_positions_ = int(x.shape[1])
        kernel = build_kernel(self.kernel, self.num_positions_)
        self.model_ = ExactGPModel(x.flatten(-2), (y_t - self.y_mean_) / self.y_std_, kernel).double()
        t0 = time.perf_counter()
        self.fit_info_ = fit_map(self.model_, max_iter=self.max_iter)
        self.fit_info_["fit_s"] = time.perf_counter() - t0
        return self

    @torch.no_grad()
    def predict(self, X: Sequence[str] | np.ndarray | Tensor) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and variance (noise included) on the original scale.

        Parameters
        ----------
        X : sequence of str, or one-hot array/tensor of shape (M, L, 21)

        Returns
        -------
        mean, var : numpy.ndarray, shape (M,)
        """
        if not hasattr(self, "model_"):
            raise ValueError("GPRegressor is not fitted; call fit first")
        x = _as_one_hot(X)
        if x.shape[1] != self.num_positions_:
            raise ValueError(f"X has {x.shape[1]} positions, the model was fitted on {self.num_positions_}")
        self.model_.eval()
        with warnings.catch_warnings():
            # see fit_map: jitter added to a near-singular matrix is a numerical event, not an error
            warnings.simplefilter("ignore", NumericalWarning)
            post = self.model_.likelihood(self.model_(x.flatten(-2)))
            mean = post.mean * self.y_std_ + self.y_mean_
            var = post.variance * self.y_std_**2
        return mean.numpy(), var.numpy()


def evaluate(y_true: np.ndarray, mean: np.ndarray, var: np.ndarray) -> dict[str, float]:
    r"""Spearman, Pearson, MAE and mean Gaussian NLL of predictions (the paper's four metrics).

    .. math:: \text{NLL} = \frac1M \sum_i \tfrac12\log(2\pi\sigma_i^2) + \frac{(y_i-\mu_i)^2}{2\sigma_i^2}

    Parameters
    ----------
    y_true : array_like, shape (M,)
        Measured values (finite, not all equal), M >= 2.
    mean : array_like, shape (M,)
        Predictive means (finite, not all equal: a correlation with a constant is undefined).
    var : array_like, shape (M,)
        Predictive variances, > 0.

    Returns
    -------
    dict
        ``spearman``, ``pearson``, ``mae``, ``nll``.

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057 (the four metrics of its tables); authors' code: https://github.com/generatebio/lock_gp.
    """
    from scipy.stats import pearsonr, spearmanr

    arrs = []
    for name, a in (("y_true", y_true), ("mean", mean), ("var", var)):
        try:
            arr = np.asarray(a, dtype=float)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be numeric ({exc})") from None
        arrs.append(arr)
    y_true, mean, var = arrs
    if not (y_true.shape == mean.shape == var.shape) or y_true.ndim != 1:
        raise ValueError(f"shapes differ or are not 1-D: {y_true.shape}, {mean.shape}, {var.shape}")
    if y_true.size < 2:
        raise ValueError(f"need at least 2 test points for a correlation, got {y_true.size}")
    if not (np.all(np.isfinite(y_true)) and np.all(np.isfinite(mean)) and np.all(np.isfinite(var))):
        raise ValueError("y_true, mean and var must be finite (found NaN or inf)")
    if np.any(var <= 0):
        raise ValueError("predictive variances must be positive")
    for name, a in (("y_true", y_true), ("mean", mean)):
        if np.ptp(a) == 0:
            raise ValueError(f"{name} is constant; Spearman and Pearson correlations are undefined")
    r = y_true - mean
    return {
        "spearman": float(spearmanr(y_true, mean).statistic),
        "pearson": float(pearsonr(y_true, mean).statistic),
        "mae": float(np.mean(np.abs(r))),
        "nll": float(np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * r**2 / var)),
    }


# --------------------------------------------------------------------------------------
# Landscapes
# --------------------------------------------------------------------------------------


@dataclass
class Landscape:
    """A protein property landscape: aligned sequences and one value each.

    Parameters
    ----------
    sequences : list of str
        Aligned sequences of one length.
    y : array_like, shape (N,)
        Finite property values.
    name : str
        Label.
    info : dict
        Generator details.

    References
    ----------
    The data of Jankowiak et al., ICML 2026, arXiv:2606.11057 (code: https://github.com/generatebio/lock_gp).
    """

    sequences: list[str]
    y: np.ndarray
    name: str = ""
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.sequences, str) or not all(isinstance(q, str) for q in self.sequences):
            raise TypeError("sequences must be a list of str")
        self.sequences = list(self.sequences)
        try:
            self.y = np.asarray(self.y, dtype=float)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"y must be numeric ({exc})") from None
        if self.y.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {self.y.shape}")
        if not np.all(np.isfinite(self.y)):
            raise ValueError("y must be finite (found NaN or inf)")
        if len(self.sequences) != self.y.shape[0]:
            raise ValueError(f"{len(self.sequences)} sequences but {self.y.shape[0]} values")


def _blosum_correlation_embedding() -> np.ndarray:
    """Unit-norm rows of the PSD part of BLOSUM50 on the 20 amino acids, shape (20, 20)."""
    E = blosum_embedding(blosum50(AMINO_ACIDS))
    return E / np.linalg.norm(E, axis=1, keepdims=True)


def make_landscape(
    n_variants: int,
    kind: str = "blosum",
    length: int = 24,
    max_mutations: int = 6,
    n_pairs: int = 8,
    epistasis: float = 0.3,
    noise: float = 0.1,
    random_state: int | np.random.Generator | None = 0,
) -> Landscape:
    r"""Seeded synthetic landscape of multi-mutants around a random wild type.

    Each variant carries ``k ~ U{1..max_mutations}`` substitutions at distinct positions,
    to amino acids drawn uniformly from the 19 non-wild-type ones. Its property is

    .. math::

        z(x) = \sum_l w_l\,[\phi_l(x_l) - \phi_l(\mathrm{wt}_l)]
              + \sum_{(l,l')} J_{ll'}\,\Delta_l(x_l)\,\Delta_{l'}(x_{l'}), \qquad
        y = \sigma\!\Big(\frac{z - \operatorname{med} z}{\operatorname{sd} z}\Big) + \varepsilon,

    with position weights :math:`w_l = e^{0.5\,\xi_l}`, ``n_pairs`` epistatic pairs
    (:math:`J \sim \mathcal N(0,` ``epistasis``:math:`^2)`, :math:`\Delta_l` the single-site
    term), a global sigmoid, and Gaussian noise of sd ``noise`` times the sd of the clean
    signal. The amino-acid effects :math:`\phi_l = E\,u_l`, :math:`u_l \sim \mathcal N(0, I_{20})`:

    - ``kind="blosum"``: :math:`E` has the unit-normalised rows of the BLOSUM50 eigen-embedding,
      so :math:`\operatorname{Cov}\phi_l(a),\phi_l(b)` is the BLOSUM correlation of ``a`` and
      ``b`` -- substitution similarity carries signal;
    - ``kind="control"``: :math:`E = I` -- i.i.d. effects, BLOSUM carries none.

    The two kinds use the same random numbers (same wild type, variants, weights, pairs,
    noise, and the same :math:`u_l`), so they differ only in the correlation of the effects.

    Parameters
    ----------
    n_variants : int >= 2
        Number of distinct variants.
    kind : {"blosum", "control"}
        Whether the effects follow BLOSUM correlations.
    length : int >= 1
        Sequence length L.
    max_mutations : int in [1, length]
        Most substitutions per variant.
    n_pairs : int >= 0
        Epistatic pairs (needs length >= 2 when > 0).
    epistasis, noise : float >= 0
        Pair-coupling sd and relative noise sd.
    random_state : int, numpy.random.Generator or None
        Seed or generator.

    Returns
    -------
    Landscape
        ``info`` holds the wild type, weights, effects, pairs and ``r2_ceiling``
        (the share of variance not due to noise).

    References
    ----------
    Our synthetic stand-in for the landscapes of Jankowiak et al., ICML 2026, arXiv:2606.11057
    (code: https://github.com/generatebio/lock_gp).
    """
    if kind not in ("blosum", "control"):
        raise ValueError(f"kind={kind!r}; use 'blosum' or 'control'")
    n_variants = _check_int(n_variants, "n_variants", minimum=2)
    length = _check_int(length, "length")
    max_mutations = _check_int(max_mutations, "max_mutations")
    if max_mutations > length:
        raise ValueError(f"max_mutations={max_mutations!r} must be in [1, length={length}]")
    n_pairs = _check_int(n_pairs, "n_pairs", minimum=0)
    if n_pairs > 0 and length < 2:
        raise ValueError(f"n_pairs={n_pairs} epistatic pairs need length >= 2, got length={length}")
    noise, epistasis = _check_nonneg(noise, "noise"), _check_nonneg(epistasis, "epistasis")
    rng = check_random_state(random_state)
    L, n = int(length), int(n_variants)
    wt = rng.integers(0, 20, size=L)  # (L,)
    w = np.exp(0.5 * rng.standard_normal(L))  # (L,)
    u = rng.standard_normal((L, 20))  # (L, 20)
    pairs = np.array([rng.choice(L, size=2, replace=False) for _ in range(n_pairs)]).reshape(-1, 2)
    J = epistasis * rng.standard_normal(len(pairs))
    # Variants: oversample, keep the first n distinct ones in generation order.
    m = 2 * n + 64
    k = rng.integers(1, max_mutations + 1, size=m)  # (m,)
    ranks = np.argsort(np.argsort(rng.random((m, L)), axis=1), axis=1)  # random rank of each position
    mutated = ranks < k[:, None]  # (m, L): k distinct positions per variant
    shift = rng.integers(1, 20, size=(m, L))  # non-zero shift -> a different amino acid
    X = np.where(mutated, (wt[None, :] + shift) % 20, wt[None, :])  # (m, L)
    _, first = np.unique(X, axis=0, return_index=True)
    keep = np.sort(first)[:n]
    if keep.size < n:
        raise ValueError(f"could only draw {keep.size} distinct variants; lower n_variants or raise length")
    X = X[keep]  # (n, L)
    eps = rng.standard_normal(n)

    E = _blosum_correlation_embedding() if kind == "blosum" else np.eye(20)
    phi = u @ E.T  # (L, 20): phi[l, a] = <u_l, E_a>
    effect = w[:, None] * (phi - phi[np.arange(L), wt][:, None])  # (L, 20), zero at the wild type
    pos = np.arange(L)
    delta = effect[pos[None, :], X]  # (n, L) single-site terms
    z = delta.sum(1) + (J[None, :] * delta[:, pairs[:, 0]] * delta[:, pairs[:, 1]]).sum(1)
    s = z.std()
    clean = 1.0 / (1.0 + np.exp(-(z - np.median(z)) / (s if s > 0 else 1.0)))
    y = clean + noise * clean.std() * eps
    letters = np.array(list(AMINO_ACIDS))
    seqs = ["".join(r) for r in letters[X]]
    return Landscape(
        sequences=seqs,
        y=y,
        name=f"synthetic-{kind}",
        info={
            "kind": kind,
            "wild_type": "".join(letters[wt]),
            "weights": w,
            "effects": effect,
            "pairs": pairs,
            "J": J,
            "n_mutations": mutated[keep].sum(1),
            "r2_ceiling": float(clean.var() / y.var()) if y.var() > 0 else 1.0,
        },
    )


def load_landscape(
    path: str | Path, sequence_col: str = "sequence", value_col: str = "fitness", alphabet: str = ALPHABET
) -> Landscape:
    """Read a landscape the user supplies as CSV (e.g. the authors' ``cr6261_h1.csv``); never downloads.

    Parameters
    ----------
    path : str or Path
        CSV file with a column of aligned sequences and a column of values.
    sequence_col, value_col : str
        Column names (defaults match the authors' demo file).

    alphabet : str
        Allowed tokens.

    Returns
    -------
    Landscape

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        A missing column (names the ones present), a missing or non-numeric value, or a bad
        sequence (see :func:`encode_indices`).
    TypeError
        ``path`` is not a str or path.

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057 (the demo file ``cr6261_h1.csv``); authors' code: https://github.com/generatebio/lock_gp.
    """
    import pandas as pd

    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or pathlib.Path, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no landscape file at {path}; this loader reads a local CSV and never downloads")
    try:
        df = pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path.name} is not a readable CSV file: {exc}") from None
    if len(df) < 1:
        raise ValueError(f"{path.name} has no data rows")
    for col in (sequence_col, value_col):
        if col not in df.columns:
            raise ValueError(f"column {col!r} not in {path.name}; columns are {list(df.columns)}")
    y = pd.to_numeric(df[value_col], errors="coerce").to_numpy(dtype=float)
    if not np.all(np.isfinite(y)):
        bad = int(np.flatnonzero(~np.isfinite(y))[0])
        raise ValueError(f"row {bad} of column {value_col!r} is missing or not a number")
    seqs = df[sequence_col].astype(str).tolist()
    encode_indices(seqs, alphabet)  # validates length and alphabet
    return Landscape(sequences=seqs, y=y, name=path.stem, info={"path": str(path)})


def learning_curve(
    landscapes: Mapping[str, Callable[[int], Landscape]],
    models: Iterable[str],
    train_sizes: Sequence[int],
    n_test: int,
    n_reps: int,
    random_state: int | np.random.Generator | None = 0,
    max_iter: int = 200,
    progress: bool = True,
):
    """Metric against training-set size: the paper's "metric vs N" experiment.

    For each landscape factory and replicate ``r`` the landscape ``make(seed + r)`` is
    drawn (``seed`` = ``random_state`` when it is an int, else an int drawn from it), its
    sequences are permuted with the same seed, the last ``n_test`` are the test set and the
    first ``N`` (nested across ``train_sizes``) the training set; every model is fitted and
    scored with :func:`evaluate`.

    Parameters
    ----------
    landscapes : mapping of str to callable
        Name -> factory ``make(seed) -> Landscape``.
    models : iterable of str
        Keys of :data:`MODELS`.
    train_sizes : sequence of int >= 2
        Training-set sizes (nested prefixes).
    n_test : int >= 2
        Held-out variants per replicate.
    n_reps : int >= 1
        Replicates.
    random_state : int, numpy.random.Generator or None
        Base seed of the replicates.
    max_iter : int >= 1
        L-BFGS-B iteration cap per fit.
    progress : bool
        Report progress (:func:`icml26._common.progress`).

    Returns
    -------
    pandas.DataFrame
        One row per (landscape, rep, n_train, model) with the four metrics, ``fit_s``
        and the learned hyper-parameters' fit diagnostics.

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057 (the learning-curve figure); authors' code: https://github.com/generatebio/lock_gp.
    """
    import pandas as pd

    if not isinstance(landscapes, Mapping) or not landscapes or not all(callable(f) for f in landscapes.values()):
        raise TypeError("landscapes must be a non-empty mapping of name -> callable make(seed) -> Landscape")
    if isinstance(models, str):
        raise TypeError("models must be a list of model names, not a single string")
    models = list(models)
    if not models or any(m not in MODELS for m in models):
        raise ValueError(f"models={models!r}: each must be one of {', '.join(map(repr, MODELS))}")
    if isinstance(train_sizes, (str, Real)) or not isinstance(train_sizes, Iterable):
        raise TypeError(f"train_sizes must be a sequence of ints, got {train_sizes!r}")
    sizes = sorted(_check_int(s, "train size", minimum=2) for s in train_sizes)
    if not sizes:
        raise ValueError("train_sizes is empty; give at least one training-set size")
    n_test = _check_int(n_test, "n_test", minimum=2)
    n_reps = _check_int(n_reps, "n_reps")
    max_iter = _check_int(max_iter, "max_iter")
    if isinstance(random_state, (Integral, np.integer)) and not isinstance(random_state, (bool, np.bool_)):
        check_random_state(random_state)
        seed = int(random_state)
    else:
        seed = seed_from(random_state)
    jobs = [(lname, r, N, m) for lname in landscapes for r in range(n_reps) for N in sizes for m in models]
    rows = []
    cache: dict[tuple[str, int], tuple[Tensor, np.ndarray]] = {}
    for lname, r, N, m in _progress(jobs, desc="GP fits", disable=not progress):
        if (lname, r) not in cache:
            land = landscapes[lname](seed + r)
            if len(land.sequences) < sizes[-1] + n_test:
                raise ValueError(
                    f"landscape {lname!r} has {len(land.sequences)} sequences; need {sizes[-1]} + {n_test}"
                )
            perm = np.random.default_rng(seed + r).permutation(len(land.sequences))
            x = encode_one_hot([land.sequences[i] for i in perm])
            cache[(lname, r)] = (x, land.y[perm])
        x, y = cache[(lname, r)]
        gp = GPRegressor(m, max_iter=max_iter).fit(x[:N], y[:N])
        mean, var = gp.predict(x[-n_test:])
        rows.append(
            {"landscape": lname, "rep": r, "n_train": N, "model": m, **evaluate(y[-n_test:], mean, var),
             "fit_s": gp.fit_info_["fit_s"], "n_iter": gp.fit_info_["n_iter"], "n_failed": gp.fit_info_["n_failed"]}
        )
    return pd.DataFrame(rows)
