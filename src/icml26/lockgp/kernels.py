"""The gpytorch sequence kernels: LOCK's two halves, the baselines, and the model registry.

:class:`LinearGlobalKernel` (:math:`k_\\text{lin}`), :class:`NonlinearLocalKernel`
(:math:`k_\\text{nl}`), :class:`TanimotoBlosumKernel` (the Tanimoto baseline),
:class:`FastHammingIMQKernel` (gpytorch's Hamming-IMQ kernel as one matrix product),
:func:`build_lock_kernel` (:math:`s_1 k_\\text{nl} k_\\text{lin}^{(1)} + s_2 k_\\text{lin}^{(2)}`),
the registry :data:`MODELS` of every model the chapter fits and :func:`build_kernel`.
Kernels take one-hot inputs flattened to ``(..., N, L*A)``, as gpytorch requires.

References
----------
M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
arXiv:2606.11057; authors' code: https://github.com/generatebio/lock_gp.
"""

from __future__ import annotations

import torch
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import AdditiveKernel, HammingIMQKernel, Kernel, LinearKernel, ProductKernel, ScaleKernel
from gpytorch.priors import GammaPrior, NormalPrior
from torch import Tensor

from ._checks import _check_int
from .substitution import ALPHABET, blosum50, blosum_embedding, normalize_substitution_matrix

__all__ = [
    "LinearGlobalKernel",
    "NonlinearLocalKernel",
    "TanimotoBlosumKernel",
    "FastHammingIMQKernel",
    "build_lock_kernel",
    "build_kernel",
    "MODELS",
]


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
        self.register_parameter("log_local", torch.nn.Parameter(torch.zeros(*self.batch_shape, self.num_positions)))
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
            raise ValueError(
                f"inputs have {x1.shape[-1]} and {x2.shape[-1]} features; both must be the same "
                f"multiple of vocab_size={self.vocab_size} (one-hot flattened to (..., N, L*V))"
            )
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
