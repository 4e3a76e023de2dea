"""DWN's training recipe and a machine-independent training cost (DWN, exact recipe).

References
----------
A. T. L. Bacellar, Z. Susskind, M. Breternitz Jr., E. John, L. K. John, P. M. V. Lima, F. M. G. França, "Differentiable Weightless Neural Networks", ICML 2024, arXiv:2410.11112; code https://github.com/alanbacellar/DWN
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .._common import RandomState, torch_generator
from .layers import LUTNet

__all__ = ["lut_training_cost", "accuracy", "fit_lut_model"]


def _unrolled_luts(module: nn.Module, input_shape: Sequence[int]) -> tuple[int, tuple[int, ...]]:
    """(LUT evaluations per sample, output shape) of one block (each block type says it itself)."""
    count = getattr(module, "lut_evaluations", None)
    if count is None:
        raise TypeError(f"unknown block {type(module).__name__}; LUT network blocks define lut_evaluations(input_shape)")
    return count(tuple(input_shape))


def _check_lutnet(model: object, name: str = "model") -> None:
    if not isinstance(model, LUTNet):
        raise TypeError(f"{name} must be a LUTNet (see dwn_mlp, clgn_net), got {type(model).__name__}")


def lut_training_cost(model: LUTNet, *, frozen_features: bool = False) -> int:
    """Training cost of one sample in LUT evaluations: 1 per forward lookup, +2 per trained lookup.

    A proxy for training compute that does not depend on the machine: every LUT evaluated
    in the forward pass costs 1, and every LUT whose table is trained costs 2 more for the
    backward pass (the table gradient and the EFD input gradient), as a dense layer's
    backward costs twice its forward. With ``frozen_features`` the feature stage is
    not run at all (its outputs are cached once, see :func:`icml26.lut.clgn.fit_hierarchical`).

    Parameters
    ----------
    model : LUTNet
        The network; a convolutional block counts one evaluation per channel and position.
    frozen_features : bool
        Leave the feature stage out (it is frozen and its outputs cached).

    Returns
    -------
    int
        LUT evaluations per training sample.

    Raises
    ------
    TypeError
        If ``model`` is not a :class:`~icml26.lut.layers.LUTNet`.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112; code https://github.com/alanbacellar/DWN (``torch_dwn``).
    """
    _check_lutnet(model)
    shape: tuple[int, ...] = model.input_shape
    cost = 0
    for block in model.features:
        ev, shape = _unrolled_luts(block, shape)
        cost += 0 if frozen_features else 3 * ev
    for block in model.classifier:
        ev, shape = _unrolled_luts(block, shape)
        cost += 3 * ev
    return int(cost)


def _check_xy(X: object, y: object, what: str = "X") -> None:
    if not isinstance(X, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError(f"{what} and its labels must be torch tensors, got {type(X).__name__} and {type(y).__name__}")
    if y.ndim != 1 or X.ndim < 2:
        raise ValueError(f"{what} must have shape (n, ...) and its labels shape (n,), got {tuple(X.shape)} and {tuple(y.shape)}")
    if len(X) != len(y):
        raise ValueError(f"{what} and its labels disagree in length: {len(X)} vs {len(y)}")
    if X.is_floating_point() and not bool(torch.isfinite(X).all()):
        raise ValueError(f"{what} holds NaN or infinite values")


@torch.no_grad()
def accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor, *, batch_size: int = 512) -> float:
    """Classification accuracy of ``model`` (eval mode, hard forward) on ``(X, y)``.

    Parameters
    ----------
    model : torch.nn.Module
        Maps a batch of ``X`` to class scores of shape ``(batch, k)``.
    X : Tensor, shape (n, ...)
        Inputs.
    y : Tensor of int, shape (n,)
        Labels.
    batch_size : int
        Rows per forward pass (memory only; the result does not depend on it).

    Returns
    -------
    float
        Fraction of rows whose argmax score equals the label; the model's train/eval
        mode is restored afterwards.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112; code https://github.com/alanbacellar/DWN (``torch_dwn``).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    _check_xy(X, y)
    if len(X) == 0:
        raise ValueError("X is empty; accuracy needs at least one row")
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size={batch_size!r} is not valid; use an integer >= 1")
    was = model.training
    model.eval()
    pred = torch.cat([model(X[i : i + batch_size]).argmax(1) for i in range(0, len(X), batch_size)])
    model.train(was)
    return float((pred == y).float().mean())


def fit_lut_model(
    model: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int,
    batch_size: int = 32,
    lr: float = 1e-2,
    step_size: int | None = None,
    gamma: float = 0.1,
    X_eval: torch.Tensor | None = None,
    y_eval: torch.Tensor | None = None,
    params: Sequence[nn.Parameter] | None = None,
    cost_per_sample: int = 0,
    random_state: RandomState = 0,
) -> dict[str, list[float]]:
    """Train with DWN's recipe: Adam(lr), cross-entropy on the GroupSum logits, StepLR.

    Parameters
    ----------
    model : torch.nn.Module
        A LUT network (or any classifier, e.g. :class:`~icml26.lut.digits.SmallCNN`).
    X : Tensor, shape (n, ...)
        Training inputs (bits for a LUT network).
    y : Tensor of int, shape (n,)
        Training labels.
    epochs : int
        Passes over ``X`` (>= 0).
    batch_size : int
        Mini-batch size (>= 1).
    lr : float
        Adam's learning rate (> 0).
    step_size : int, optional
        Multiply the learning rate by ``gamma`` every ``step_size`` epochs (DWN: 14 of 30);
        ``None`` never decays.
    gamma : float
        The decay factor, in (0, 1].
    X_eval, y_eval : Tensor, optional
        Data on which to record the accuracy after every epoch.
    params : sequence of Parameter, optional
        What to train (default: all of ``model``'s parameters).
    cost_per_sample : int
        LUT evaluations per training sample, for the ``cost`` history (see
        :func:`lut_training_cost`).
    random_state : int, numpy.random.Generator or None
        Seed of the mini-batch order.

    Returns
    -------
    dict of str to list of float
        One entry per epoch: ``loss`` (mean training loss), ``acc`` (accuracy on
        ``X_eval``, ``nan`` without it), ``seconds`` (cumulative wall time) and ``cost``
        (cumulative LUT evaluations, ``cost_per_sample`` times samples seen).

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112; code https://github.com/alanbacellar/DWN (``torch_dwn``).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 0:
        raise ValueError(f"epochs={epochs!r} is not valid; use an integer >= 0")
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size={batch_size!r} is not valid; use an integer >= 1")
    if not isinstance(lr, (int, float)) or isinstance(lr, bool) or not np.isfinite(lr) or lr <= 0:
        raise ValueError(f"lr={lr!r} is not valid; use a finite number > 0")
    if step_size is not None and (isinstance(step_size, bool) or not isinstance(step_size, (int, np.integer)) or step_size < 1):
        raise ValueError(f"step_size={step_size!r} is not valid; use None or an integer >= 1")
    if not isinstance(gamma, (int, float)) or isinstance(gamma, bool) or not 0 < gamma <= 1:
        raise ValueError(f"gamma={gamma!r} is not valid; use a number in (0, 1]")
    if isinstance(cost_per_sample, bool) or not isinstance(cost_per_sample, (int, np.integer)) or cost_per_sample < 0:
        raise ValueError(f"cost_per_sample={cost_per_sample!r} is not valid; use an integer >= 0")
    _check_xy(X, y)
    if len(X) == 0 and epochs > 0:
        raise ValueError("X is empty; training needs at least one row")
    if (X_eval is None) != (y_eval is None):
        raise ValueError("pass X_eval and y_eval together, or neither")
    if X_eval is not None:
        _check_xy(X_eval, y_eval, "X_eval")
    params = list(model.parameters()) if params is None else list(params)
    opt = torch.optim.Adam(params, lr=lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=step_size or max(epochs, 1), gamma=gamma)
    gen = torch_generator(random_state)
    hist: dict[str, list[float]] = {"loss": [], "acc": [], "seconds": [], "cost": []}
    elapsed, cost = 0.0, 0
    model.train()
    for _ in range(int(epochs)):
        t0 = time.perf_counter()
        perm = torch.randperm(len(X), generator=gen)
        total = 0.0
        for i in range(0, len(X), batch_size):
            idx = perm[i : i + batch_size]
            loss = F.cross_entropy(model(X[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        sched.step()
        elapsed += time.perf_counter() - t0
        cost += cost_per_sample * len(X)
        hist["loss"].append(total / len(X))
        hist["seconds"].append(elapsed)
        hist["cost"].append(float(cost))
        hist["acc"].append(accuracy(model, X_eval, y_eval) if X_eval is not None else float("nan"))
    model.eval()
    return hist
