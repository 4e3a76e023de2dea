"""The Opacus reference: the same DP step done by Opacus (agreement test and benchmark).

:func:`opacus_dp_optimizer` wraps a model in Opacus's ``GradSampleModule`` and an
optimizer in its ``DPOptimizer``; :func:`opacus_step` does one DP step with them.

Reference: Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen,
"FIBER: A Differentially Private Optimizer with Filter-Aware Innovation Bias Correction",
ICML 2026, arXiv:2605.03425. Overview: :mod:`icml26.fiber`.
"""

from __future__ import annotations

import torch
from torch import nn

from .._common import RandomState
from ._checks import _count, _real, _torch_gen

__all__ = ["opacus_dp_optimizer", "opacus_step"]


def opacus_dp_optimizer(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    noise_multiplier: float,
    max_norm: float,
    expected_batch_size: int,
    random_state: RandomState | torch.Generator = None,
):
    """Wrap ``model`` in Opacus's ``GradSampleModule`` and ``optimizer`` in its ``DPOptimizer``.

    Returns ``(grad_sample_module, dp_optimizer)``; ``loss_reduction="mean"``.

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    optimizer : torch.optim.Optimizer
        The optimizer to wrap.
    noise_multiplier : float
        sigma_DP >= 0.
    max_norm : float
        Clipping norm > 0.
    expected_batch_size : int
        ``B`` (>= 1).
    random_state : int, numpy.random.Generator, torch.Generator or None
        Noise source; ``None`` lets Opacus use torch's global generator.

    Returns
    -------
    (opacus.GradSampleModule, opacus.optimizers.DPOptimizer)
        The wrapped model and optimizer (``loss_reduction="mean"``).

    References
    ----------
    A. Yousefpour et al., "Opacus: User-Friendly Differential Privacy Library in PyTorch", 2021;
    code https://github.com/pytorch/opacus.
    """
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
    _real("noise_multiplier", noise_multiplier, lo=0.0)
    _real("max_norm", max_norm, lo=0.0, lo_open=True)
    _count("expected_batch_size", expected_batch_size)
    gen = None if random_state is None else _torch_gen(random_state)
    gsm = GradSampleModule(model, loss_reduction="mean")
    dpo = DPOptimizer(
        optimizer,
        noise_multiplier=noise_multiplier,
        max_grad_norm=max_norm,
        expected_batch_size=expected_batch_size,
        loss_reduction="mean",
        generator=gen,
    )
    return gsm, dpo


def opacus_step(gsm: nn.Module, dpo, x: torch.Tensor, y: torch.Tensor) -> float:
    """One DP step with Opacus: zero grads, forward, mean cross-entropy, backward, ``dpo.step()``.

    Parameters
    ----------
    gsm : opacus.GradSampleModule
        From :func:`opacus_dp_optimizer`.
    dpo : opacus.optimizers.DPOptimizer
        Likewise.
    x : Tensor, shape (B, ...)
        Inputs of the batch.
    y : Tensor, shape (B,)
        Labels of the batch.

    Returns
    -------
    float
        The batch's mean cross-entropy before the step.

    References
    ----------
    A. Yousefpour et al., "Opacus: User-Friendly Differential Privacy Library in PyTorch", 2021;
    code https://github.com/pytorch/opacus.
    """
    import warnings

    if not isinstance(gsm, nn.Module) or not hasattr(dpo, "step") or not hasattr(dpo, "zero_grad"):
        raise TypeError("gsm and dpo must be the pair returned by opacus_dp_optimizer")
    if (
        not isinstance(x, torch.Tensor)
        or not isinstance(y, torch.Tensor)
        or x.ndim != 2
        or y.ndim != 1
        or len(x) != len(y)
        or len(x) == 0
    ):
        raise ValueError("x must be (B, features) and y (B,) tensors with the same B >= 1")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x holds NaN or infinite values")
    dpo.zero_grad()
    with warnings.catch_warnings():
        # Opacus's per-sample hooks are full backward hooks; PyTorch notes (harmlessly) that
        # they fire although the input does not require grad.
        warnings.filterwarnings("ignore", message="Full backward hook is firing", category=UserWarning)
        loss = nn.functional.cross_entropy(gsm(x), y)
        loss.backward()
    dpo.step()
    return float(loss.detach())
