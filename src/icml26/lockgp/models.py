"""Exact GP regression on sequences: the model, MAP fitting, and a scikit-learn-style regressor.

:class:`ExactGPModel` (constant mean, Gaussian noise), :func:`fit_map` (MAP
hyper-parameters by SciPy's L-BFGS-B, as BoTorch's ``fit_gpytorch_mll``) and
:class:`GPRegressor` (standardised targets, predictions on the original scale).

References
----------
M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
arXiv:2606.11057; authors' code: https://github.com/generatebio/lock_gp.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Mapping, Sequence
from numbers import Real

import gpytorch
import numpy as np
import torch
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import Kernel
from gpytorch.priors import GammaPrior
from gpytorch.utils.warnings import NumericalWarning
from torch import Tensor

from .._common import check_random_state
from ._checks import _check_int
from .encoding import encode_one_hot
from .kernels import MODELS, build_kernel
from .substitution import ALPHABET

__all__ = ["ExactGPModel", "fit_map", "GPRegressor"]


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
            raise TypeError(
                f"train_x and train_y must be torch tensors, got {type(train_x).__name__} and {type(train_y).__name__}"
            )
        if train_x.ndim != 2 or train_y.ndim != 1 or train_x.shape[0] != train_y.shape[0] or train_y.shape[0] < 1:
            raise ValueError(
                f"need train_x of shape (N, D) and train_y of shape (N,), N >= 1; "
                f"got {tuple(train_x.shape)} and {tuple(train_y.shape)}"
            )
        if not (torch.isfinite(train_x).all() and torch.isfinite(train_y).all()):
            raise ValueError("train_x and train_y must be finite (found NaN or inf)")
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a gpytorch Kernel, got {type(kernel).__name__}")
        likelihood = gpytorch.likelihoods.GaussianLikelihood(noise_prior=GammaPrior(2.0, 2.0), noise_constraint=GreaterThan(1e-4))
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
        raise TypeError(
            f"X must be a list of sequences or a one-hot array of shape (N, L, {len(ALPHABET)}), got {type(X).__name__}"
        )
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
