"""COBRA-style (reconstructed) contribution-based Bayesian LoRA rank allocation.

Only the paper's abstract is public. It names three stages, which this module
implements from standard definitions; everything past the names is our
reconstruction, marked (R):

1. **layer contribution** by layer conductance, a path-integral attribution
   (:func:`layer_conductance`, tested against captum's ``LayerConductance``;
   :func:`layer_contributions` reduces it to one number per layer);
2. **task-adaptive layer conductance** (TA-LC), contribution combined with an
   adaptation-demand signal from warm-up gradient norms (:func:`lora_gradient_demand`),
   :math:`p_l \\propto c_l^{a} g_l^{1-a}` (:func:`ta_lc`);
3. **Bayesian rank allocation**: a Dirichlet variational posterior over the shares of a
   fixed parameter budget (:func:`dirichlet_rank_allocation`), rounded by largest
   remainder so that the budget is never exceeded (:func:`largest_remainder_ranks`).

LoRA itself, with per-layer ranks, and the AdaLoRA baseline come from peft
(:func:`make_lora_model`, :func:`make_adalora_model`). The two synthetic tasks of the
chapter are built by :func:`highrank_regression_task` and :func:`marker_encoder_task`.

References
----------
H. Ding, X. Zhao, X. Liu, J. Jin, S. N. Abdullah, D. A. Dewi. *COBRA: Contribution-Based
Bayesian Rank Allocation for Parameter-Efficient Fine-Tuning.* ICML 2026 (abstract only;
no code found).
K. Dhamdhere, M. Sundararajan, Q. Yan. *How Important Is a Neuron?* ICLR 2019
(arXiv:1805.12233) — layer conductance.
E. J. Hu et al. *LoRA: Low-Rank Adaptation of Large Language Models.* ICLR 2022.
Q. Zhang et al. *AdaLoRA: Adaptive Budget Allocation for Parameter-Efficient
Fine-Tuning.* ICLR 2023.
"""

from __future__ import annotations

import copy
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from ._common import RandomState, check_int, check_random_state, check_real, seed_from

__all__ = [
    "DirichletAllocation",
    "EncoderTask",
    "RegressionTask",
    "dirichlet_rank_allocation",
    "highrank_regression_task",
    "largest_remainder_ranks",
    "layer_conductance",
    "layer_contributions",
    "lora_gradient_demand",
    "lora_param_count",
    "lora_rank_pattern",
    "make_adalora_model",
    "make_lora_model",
    "marker_encoder_task",
    "adalora_orth_penalty",
    "adapter_param_counts",
    "allocate_ranks",
    "build_methods",
    "encoder_seed",
    "neg_squared_error",
    "regression_seed",
    "share_ranks",
    "ta_lc",
    "task_contributions",
    "train_lora",
    "true_class_log_prob",
]


# --------------------------------------------------------------------------- helpers


def _positive_vector(x: Any, name: str, *, allow_zero: bool = False) -> np.ndarray:
    try:
        v = np.asarray(x, dtype=float).ravel()
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of numbers, got {type(x).__name__}") from None
    if v.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite, got {v.tolist()}")
    if allow_zero and np.any(v < 0):
        raise ValueError(f"{name} must be >= 0, got {v.tolist()}")
    if not allow_zero and np.any(v <= 0):
        raise ValueError(f"{name} must be > 0, got {v.tolist()}")
    return v


def _int_vector(x: Any, name: str, *, low: int = 1) -> np.ndarray:
    v = np.asarray(x)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d sequence of integers, got shape {v.shape}")
    if v.dtype == bool or not np.issubdtype(v.dtype, np.integer):
        if np.issubdtype(v.dtype, np.floating) and np.all(np.isfinite(v)) and np.all(v == np.round(v)):
            v = v.astype(np.int64)
        else:
            raise TypeError(f"{name} must hold integers, got {v.tolist()}")
    if np.any(v < low):
        raise ValueError(f"{name} must hold integers >= {low}, got {v.tolist()}")
    return v.astype(np.int64)


# --------------------------------------------------------------------------- stage 1: conductance


def _path_alphas(n_steps: int) -> torch.Tensor:
    # k/m in float32, then widened: the same path points as captum's riemann_trapezoid alphas
    return torch.linspace(0.0, 1.0, n_steps + 1, dtype=torch.float32).double()


def _select_target(out: torch.Tensor, target: Any, n: int, reps: int) -> torch.Tensor:
    """The scalar output per path point: ``out`` (reps*n, ...) -> (reps*n,)."""
    if out.dim() == 1:
        if target is not None:
            raise ValueError("target must be None for a model with one scalar output per example")
        return out
    flat = out.reshape(out.shape[0], -1)  # (reps*n, k)
    if target is None:
        if flat.shape[1] != 1:
            raise ValueError(f"target is required: the model gives {flat.shape[1]} outputs per example")
        return flat[:, 0]
    if isinstance(target, (int, np.integer)) and not isinstance(target, bool):
        if not 0 <= int(target) < flat.shape[1]:
            raise ValueError(f"target={target} is out of range for {flat.shape[1]} outputs")
        return flat[:, int(target)]
    t = torch.as_tensor(target).reshape(-1).long()
    if t.numel() != n:
        raise ValueError(f"target must be an int or hold one index per example ({n}), got {t.numel()}")
    if t.min() < 0 or t.max() >= flat.shape[1]:
        raise ValueError(f"target indices must lie in [0, {flat.shape[1]})")
    return flat.gather(1, t.repeat(reps)[:, None])[:, 0]


def _check_forward_inputs(forward: Any, inputs: Any, baselines: Any) -> tuple[torch.Tensor, torch.Tensor]:
    if not callable(forward):
        raise TypeError(f"forward must be callable, got {type(forward).__name__}")
    if not isinstance(inputs, torch.Tensor) or not inputs.is_floating_point() or inputs.dim() < 1 or inputs.shape[0] == 0:
        raise TypeError("inputs must be a non-empty floating-point torch.Tensor of shape (n, ...)")
    if baselines is None:
        baselines = torch.zeros_like(inputs)
    elif isinstance(baselines, (int, float)) and not isinstance(baselines, bool):
        baselines = torch.full_like(inputs, float(baselines))
    elif not isinstance(baselines, torch.Tensor):
        raise TypeError(f"baselines must be None, a number or a tensor, got {type(baselines).__name__}")
    else:
        try:
            baselines = torch.broadcast_to(baselines.to(inputs.dtype), inputs.shape)
        except RuntimeError:
            raise ValueError(f"baselines of shape {tuple(baselines.shape)} do not broadcast to inputs {tuple(inputs.shape)}") from None
    if not torch.isfinite(inputs).all() or not torch.isfinite(baselines).all():
        raise ValueError("inputs and baselines must be finite")
    return inputs, baselines


def _call_forward(forward: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, layers: Mapping[str, nn.Module]) -> Any:
    """``forward(x)``, with a dtype clash between ``x`` and the model named in our own words."""
    try:
        return forward(x)
    except RuntimeError as exc:
        msg = str(exc)
        if "dtype" not in msg and "scalar type" not in msg:
            raise
        params = sorted({str(p.dtype) for mod in layers.values() for p in mod.parameters() if p.is_floating_point()})
        raise TypeError(
            f"forward failed on inputs of dtype {x.dtype}: the model's layers hold parameters of dtype "
            f"{', '.join(params) or 'unknown'}; give inputs (and baselines) of the model's dtype, "
            f"e.g. inputs.to({params[0] if len(params) == 1 else 'model_dtype'}) (torch said: {msg.splitlines()[0]})"
        ) from exc


def _conductance_many(
    forward: Callable[[torch.Tensor], torch.Tensor],
    layers: Mapping[str, nn.Module],
    inputs: torch.Tensor,
    baselines: torch.Tensor,
    target: Any,
    n_steps: int,
) -> dict[str, torch.Tensor]:
    """Conductance of every unit of every layer in ``layers``, in one batched pass."""
    n = inputs.shape[0]
    alphas = _path_alphas(n_steps).to(inputs.dtype)  # (m+1,)
    # path points x(alpha_k) for k = 0..m, stacked step-major: (m+1, n, ...) -> ((m+1)*n, ...)
    path = baselines[None] + alphas.view((-1,) + (1,) * inputs.dim()) * (inputs - baselines)[None]
    path = path.reshape((-1,) + tuple(inputs.shape[1:])).detach().requires_grad_(True)
    captured: dict[str, torch.Tensor] = {}

    def hook_for(name: str):
        def hook(_mod, _inp, out):
            if not isinstance(out, torch.Tensor):
                raise TypeError(f"layer {name!r} must return a tensor to take its conductance")
            captured[name] = out
        return hook

    handles = [mod.register_forward_hook(hook_for(name)) for name, mod in layers.items()]
    try:
        with torch.enable_grad():
            out = _call_forward(forward, path, layers)
            f = _select_target(out, target, n, n_steps + 1)  # ((m+1)*n,)
            missing = [k for k in layers if k not in captured]
            if missing:
                raise ValueError(f"layers {missing} were not called by forward")
            hs = [captured[k] for k in layers]
            grads = torch.autograd.grad(f.sum(), hs, allow_unused=True)
    finally:
        for h in handles:
            h.remove()
    result = {}
    for name, h, g in zip(layers, hs, grads, strict=True):
        if g is None:
            g = torch.zeros_like(h)
        h = h.detach()
        # sum_k dF/dh(x(alpha_k)) * (h(x(alpha_{k+1})) - h(x(alpha_k))), k = 0..m-1
        diff = h[n:] - h[:-n]  # (m*n, ...)
        prod = (g[:-n] * diff).reshape((n_steps, n) + tuple(h.shape[1:]))
        result[name] = prod.sum(0).detach()  # (n, ...)
    return result


def layer_conductance(
    forward: Callable[[torch.Tensor], torch.Tensor],
    layer: nn.Module,
    inputs: torch.Tensor,
    baselines: torch.Tensor | float | None = None,
    target: int | Sequence[int] | torch.Tensor | None = None,
    *,
    n_steps: int = 32,
) -> torch.Tensor:
    """Layer conductance of every output unit of ``layer``, by a Riemann–Stieltjes sum.

    .. math::

        \\operatorname{cond}_j(x) = \\int_0^1 \\frac{\\partial F}{\\partial h_j}(x(\\alpha))
        \\frac{\\partial h_j(x(\\alpha))}{\\partial \\alpha}\\, d\\alpha
        \\approx \\sum_{k=0}^{m-1} \\frac{\\partial F}{\\partial h_j}\\big(x(\\alpha_k)\\big)
        \\big(h_j(x(\\alpha_{k+1})) - h_j(x(\\alpha_k))\\big),

    with :math:`x(\\alpha) = x' + \\alpha (x - x')` and :math:`\\alpha_k = k/m`. This is the
    sum captum's ``LayerConductance(method="riemann_trapezoid", n_steps=m)`` computes.
    For a layer whose output determines the output (it cuts the network), the
    conductances sum to :math:`F(x) - F(x')` up to the discretisation error
    (completeness).

    Parameters
    ----------
    forward : callable
        Maps a batch of inputs, shape (N, ...), to outputs (N,) or (N, k).
    layer : torch.nn.Module
        A submodule called by ``forward``; its output tensor (N, ...) is attributed.
    inputs : torch.Tensor, shape (n, ...)
        Floating-point inputs.
    baselines : torch.Tensor, float or None
        The reference point :math:`x'` (broadcast to ``inputs``); ``None`` is zeros.
    target : int, sequence of int or None
        Output index whose value is :math:`F` (one for all, or one per example); ``None``
        only for a single output.
    n_steps : int
        Number of path segments :math:`m` (the sum uses :math:`m + 1` points).

    Returns
    -------
    torch.Tensor, shape (n, *layer_output_shape[1:])
        Conductance of each unit for each example.

    Raises
    ------
    TypeError
        For a non-callable ``forward``, a ``layer`` that is not a module or returns no
        tensor, inputs that are not a non-empty floating-point tensor, or inputs whose
        dtype the model cannot take (float32 inputs on a float64 model: the message names
        both dtypes).
    ValueError
        For non-finite inputs or baselines, baselines that do not broadcast, a bad
        ``target``, or a layer that ``forward`` does not call.

    References
    ----------
    Dhamdhere, Sundararajan & Yan, *How Important Is a Neuron?*, ICLR 2019; captum's
    ``captum.attr.LayerConductance``.
    """
    n_steps = check_int(n_steps, "n_steps", low=1)
    if not isinstance(layer, nn.Module):
        raise TypeError(f"layer must be a torch.nn.Module, got {type(layer).__name__}")
    inputs, baselines = _check_forward_inputs(forward, inputs, baselines)
    return _conductance_many(forward, {"layer": layer}, inputs, baselines, target, n_steps)["layer"]


def layer_contributions(
    forward: Callable[[torch.Tensor], torch.Tensor],
    layers: Mapping[str, nn.Module],
    inputs: torch.Tensor,
    baselines: torch.Tensor | float | None = None,
    target: int | Sequence[int] | torch.Tensor | None = None,
    *,
    n_steps: int = 32,
    batch_size: int = 64,
) -> np.ndarray:
    """Stage 1: each layer's contribution :math:`C_l = \\mathbb E_x \\sum_j |\\operatorname{cond}^l_j(x)|`.

    (R) The abstract names layer conductance; the absolute sum over units and the mean
    over task examples are our reduction to one number per layer.

    Parameters
    ----------
    forward, inputs, baselines, target, n_steps
        As in :func:`layer_conductance`; ``target`` may also be ``"all"`` to sum the
        contributions to every output coordinate (a regression with several outputs).
    layers : mapping of str to torch.nn.Module
        The layers, in order; all are attributed in one pass per batch.
    batch_size : int
        Examples per pass (each pass holds ``(n_steps + 1) * batch_size`` rows).

    Returns
    -------
    numpy.ndarray, shape (len(layers),)
        :math:`C_l`, not normalised.

    References
    ----------
    Dhamdhere et al., ICLR 2019; Ding et al., ICML 2026 (stage 1, reconstructed).
    """
    n_steps = check_int(n_steps, "n_steps", low=1)
    batch_size = check_int(batch_size, "batch_size", low=1)
    _check_layers(layers)
    inputs, baselines = _check_forward_inputs(forward, inputs, baselines)
    n = inputs.shape[0]
    totals = np.zeros(len(layers))
    if isinstance(target, str):
        if target != "all":
            raise ValueError(f"target={target!r}: the only string allowed is 'all'")
        with torch.no_grad():
            k_out = _call_forward(forward, inputs[:1], layers).reshape(1, -1).shape[1]
        targets: list[Any] = list(range(k_out))
    else:
        targets = [target]
    t_all = None if not isinstance(target, (list, tuple, np.ndarray, torch.Tensor)) else torch.as_tensor(target).reshape(-1)
    for start in range(0, n, batch_size):
        sl = slice(start, min(start + batch_size, n))
        for t in targets:
            tb = t_all[sl] if t_all is not None else t
            totals += _abs_totals(_conductance_many(forward, layers, inputs[sl], baselines[sl], tb, n_steps), layers)
    return totals / n


def _check_layers(layers) -> None:
    """``layers`` must be a non-empty mapping of names to modules (TypeError otherwise)."""
    if not isinstance(layers, Mapping) or not layers:
        raise TypeError("layers must be a non-empty mapping of names to modules")
    for k, v in layers.items():
        if not isinstance(v, nn.Module):
            raise TypeError(f"layers[{k!r}] must be a torch.nn.Module, got {type(v).__name__}")


def _abs_totals(cond: Mapping[str, torch.Tensor], layers: Mapping) -> np.ndarray:
    """Per layer, :math:`\\sum_i \\sum_j |\\mathrm{Cond}_j(x_i)|` of one batch, in the order of ``layers``."""
    return np.array([float(cond[name].abs().reshape(cond[name].shape[0], -1).sum(1).sum()) for name in layers])


def neg_squared_error(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-example negative task loss of a regression: :math:`-\\lVert f(x) - y \\rVert^2`.

    Parameters
    ----------
    out, y : torch.Tensor, shape (n, k)
        Predictions and targets.

    Returns
    -------
    torch.Tensor, shape (n,)
    """
    if not isinstance(out, torch.Tensor) or not isinstance(y, torch.Tensor) or out.shape != y.shape:
        raise ValueError(
            f"out and y must be tensors of the same shape, got {getattr(out, 'shape', type(out).__name__)} "
            f"and {getattr(y, 'shape', type(y).__name__)}"
        )
    return -((out - y) ** 2).reshape(out.shape[0], -1).sum(1)


def true_class_log_prob(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-example negative cross-entropy: :math:`\\log \\operatorname{softmax}(z)_{y}`.

    Parameters
    ----------
    logits : torch.Tensor, shape (n, k)
    y : torch.Tensor of int, shape (n,)

    Returns
    -------
    torch.Tensor, shape (n,)
    """
    if not isinstance(logits, torch.Tensor) or logits.dim() != 2:
        raise ValueError(f"logits must be a tensor of shape (n, k), got {getattr(logits, 'shape', type(logits).__name__)}")
    if not isinstance(y, torch.Tensor) or y.shape != logits.shape[:1]:
        raise ValueError(f"y must be a tensor of shape ({logits.shape[0]},), got {getattr(y, 'shape', type(y).__name__)}")
    if y.min() < 0 or y.max() >= logits.shape[1]:
        raise ValueError(f"labels y must lie in [0, {logits.shape[1]})")
    return torch.log_softmax(logits, -1).gather(1, y.reshape(-1, 1).long())[:, 0]


def task_contributions(
    forward: Callable[[torch.Tensor], torch.Tensor],
    layers: Mapping[str, nn.Module],
    inputs: torch.Tensor,
    labels: torch.Tensor,
    score: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    baselines: torch.Tensor | float | None = None,
    *,
    n_steps: int = 32,
    batch_size: int = 64,
) -> np.ndarray:
    """Stage 1 on the task: :math:`C_l = \\mathbb E_{(x,y)} \\sum_j |\\operatorname{cond}^l_j(x; y)|`.

    The attributed scalar is the example's negative task loss with its own label held
    fixed along the path, :math:`F_y(x) = \\mathrm{score}(f(x), y)` (e.g.
    :func:`neg_squared_error`, :func:`true_class_log_prob`), so the contributions see the
    task and not only the network. Conductance as in :func:`layer_conductance`;
    completeness gives :math:`\\sum_j \\operatorname{cond}^l_j(x; y) \\approx F_y(x) -
    F_y(x')` for a layer that cuts the network. (R) The absolute sum over units and the
    mean over examples are our reduction to one number per layer.

    Parameters
    ----------
    forward : callable
        Maps inputs (N, ...) to outputs (N, ...).
    layers : mapping of str to torch.nn.Module
        The layers, in order; all are attributed in one pass per batch.
    inputs : torch.Tensor, shape (n, ...)
        Floating-point inputs (for a token model, its input embeddings).
    labels : torch.Tensor, shape (n, ...)
        The task's labels or targets, one per example.
    score : callable
        ``score(outputs, labels)`` returns one scalar per example, shape (N,).
    baselines : torch.Tensor, float or None
        The reference inputs :math:`x'`; ``None`` is zeros.
    n_steps, batch_size : int
        Path segments :math:`m`; examples per pass.

    Returns
    -------
    numpy.ndarray, shape (len(layers),)
        :math:`C_l`, not normalised.

    References
    ----------
    Dhamdhere et al., ICLR 2019; Ding et al., ICML 2026 (stage 1, reconstructed).
    """
    n_steps = check_int(n_steps, "n_steps", low=1)
    batch_size = check_int(batch_size, "batch_size", low=1)
    _check_layers(layers)
    if not callable(score):
        raise TypeError(f"score must be callable, got {type(score).__name__}")
    inputs, baselines = _check_forward_inputs(forward, inputs, baselines)
    if not isinstance(labels, torch.Tensor) or labels.shape[0] != inputs.shape[0]:
        raise ValueError(f"labels must be a tensor with one row per input ({inputs.shape[0]})")
    n = inputs.shape[0]
    totals = np.zeros(len(layers))
    for start in range(0, n, batch_size):
        sl = slice(start, min(start + batch_size, n))
        # the path is stacked step-major, (m+1)*nb rows: row k*nb + i holds example i
        yb = labels[sl].repeat((n_steps + 1,) + (1,) * (labels.dim() - 1))

        def f(z, yb=yb):
            return score(forward(z), yb)

        totals += _abs_totals(_conductance_many(f, layers, inputs[sl], baselines[sl], None, n_steps), layers)
    return totals / n


# --------------------------------------------------------------------------- stage 2: TA-LC


def ta_lc(contribution: Sequence[float], demand: Sequence[float], a: float = 0.5) -> np.ndarray:
    """Stage 2: task-adaptive layer conductance :math:`p_l \\propto c_l^{a}\\, g_l^{1-a}`.

    Both signals are normalised to the simplex first (:math:`c_l = C_l/\\sum C`,
    :math:`g_l = G_l/\\sum G`). ``a = 1`` is conductance only, ``a = 0`` gradient only.

    Parameters
    ----------
    contribution : sequence of float, shape (L,)
        Layer contributions :math:`C_l > 0` (:func:`layer_contributions`).
    demand : sequence of float, shape (L,)
        Adaptation demand :math:`G_l > 0` (:func:`lora_gradient_demand`).
    a : float in [0, 1]
        The mixing exponent.

    Returns
    -------
    numpy.ndarray, shape (L,)
        :math:`p`, on the simplex.

    References
    ----------
    Ding et al., ICML 2026 (TA-LC named in the abstract; the geometric mixture is our
    reconstruction).
    """
    c = _positive_vector(contribution, "contribution")
    g = _positive_vector(demand, "demand")
    if c.shape != g.shape:
        raise ValueError(f"contribution and demand must have the same length, got {c.size} and {g.size}")
    a = check_real(a, "a", lo=0.0, hi=1.0)
    c, g = c / c.sum(), g / g.sum()
    logp = a * np.log(c) + (1.0 - a) * np.log(g)
    p = np.exp(logp - logp.max())
    return p / p.sum()


# --------------------------------------------------------------------------- stage 3: allocation


def largest_remainder_ranks(
    target_ranks: Sequence[float],
    costs: Sequence[int],
    budget: int,
    *,
    min_rank: int = 1,
    max_ranks: Sequence[int] | None = None,
) -> np.ndarray:
    """Integer ranks near real targets whose parameter cost never exceeds the budget.

    Start from :math:`r_l = \\operatorname{clip}(\\lfloor t_l \\rfloor, r_{\\min}, r^{\\max}_l)`;
    while :math:`\\sum_l c_l r_l > P`, take one rank from the layer most above its target
    (among those above ``min_rank``); then give one more rank to layers in order of
    decreasing remainder :math:`t_l - r_l > 0` whenever it still fits in the budget;
    finally, while some layer below its largest rank still fits in what is left, give one
    more rank to the one furthest below its target (largest :math:`t_l - r_l`, which may
    be negative). Clipping to ``min_rank`` can push the floors over the budget and the
    reductions can then leave much of it unspent; the last pass spends it, so that what
    stays unspent is smaller than the cost of one rank of every layer that can still grow.

    Parameters
    ----------
    target_ranks : sequence of float, shape (L,)
        Real-valued ranks :math:`t_l \\ge 0`.
    costs : sequence of int, shape (L,)
        Parameters per unit of rank, :math:`c_l = d^{in}_l + d^{out}_l` for LoRA.
    budget : int
        Parameter budget :math:`P`; it must afford ``min_rank`` in every layer.
    min_rank : int
        Smallest rank per layer.
    max_ranks : sequence of int, optional
        Largest rank per layer (e.g. :math:`\\min(d^{in}_l, d^{out}_l)`).

    Returns
    -------
    numpy.ndarray of int, shape (L,)
        Ranks with :math:`\\sum_l c_l r_l \\le P` and
        :math:`P - \\sum_l c_l r_l < \\min\\{c_l : r_l < r^{\\max}_l\\}`.

    References
    ----------
    The largest-remainder (Hamilton) apportionment method; Ding et al., ICML 2026
    (rounding under a budget, reconstructed).
    """
    t = _positive_vector(target_ranks, "target_ranks", allow_zero=True)
    c = _int_vector(costs, "costs", low=1)
    if c.size != t.size:
        raise ValueError(f"costs must have one entry per layer ({t.size}), got {c.size}")
    budget = check_int(budget, "budget", low=1)
    min_rank = check_int(min_rank, "min_rank", low=0)
    if max_ranks is None:
        mx = np.full(t.size, np.iinfo(np.int64).max // 4)
    else:
        mx = _int_vector(max_ranks, "max_ranks", low=max(min_rank, 1))
        if mx.size != t.size:
            raise ValueError(f"max_ranks must have one entry per layer ({t.size}), got {mx.size}")
    floor_cost = int((c * min_rank).sum())
    if floor_cost > budget:
        raise ValueError(
            f"budget={budget} is smaller than min_rank={min_rank} in every layer, which costs {floor_cost} parameters"
        )
    t = np.minimum(t, mx)
    r = np.clip(np.floor(t).astype(np.int64), min_rank, mx)
    while int((c * r).sum()) > budget:
        over = np.where(r > min_rank, r - t, -np.inf)
        r[int(np.argmax(over))] -= 1
    left = budget - int((c * r).sum())
    rem = t - r
    for i in np.argsort(-rem, kind="stable"):
        if rem[i] <= 0:
            break
        if r[i] < mx[i] and c[i] <= left:
            r[i] += 1
            left -= int(c[i])
    # what clipping to min_rank (or a remainder that did not fit) left unspent: one more rank at a
    # time to the layer furthest below its target that still fits, until no layer fits
    while True:
        fits = (r < mx) & (c <= left)
        if not fits.any():
            break
        i = int(np.argmax(np.where(fits, t - r, -np.inf)))
        r[i] += 1
        left -= int(c[i])
    return r


def share_ranks(shares: Sequence[float], costs: Sequence[int], budget: int, *, min_rank: int = 1,
                max_ranks: Sequence[int] | None = None) -> np.ndarray:
    """Ranks from budget shares: :math:`t_l = \\pi_l P / c_l`, rounded by :func:`largest_remainder_ranks`.

    With :math:`\\pi = p` this is the deterministic allocation (no Bayesian stage).

    Parameters
    ----------
    shares : sequence of float, shape (L,)
        Fractions :math:`\\pi_l \\ge 0` of the budget (normalised here).
    costs, budget, min_rank, max_ranks
        As in :func:`largest_remainder_ranks`.

    Returns
    -------
    numpy.ndarray of int, shape (L,)

    References
    ----------
    Ding et al., ICML 2026 (reconstructed).
    """
    s = _positive_vector(shares, "shares", allow_zero=True)
    if s.sum() <= 0:
        raise ValueError("shares must not all be zero")
    c = _int_vector(costs, "costs", low=1)
    if c.size != s.size:
        raise ValueError(f"costs must have one entry per layer ({s.size}), got {c.size}")
    budget = check_int(budget, "budget", low=1)
    return largest_remainder_ranks(s / s.sum() * budget / c, c, budget, min_rank=min_rank, max_ranks=max_ranks)


@dataclass
class DirichletAllocation:
    """The result of :func:`dirichlet_rank_allocation`.

    Attributes
    ----------
    ranks : numpy.ndarray of int, shape (L,)
        The integer ranks (cost within the budget).
    shares : numpy.ndarray, shape (L,)
        The posterior mean budget shares :math:`\\mathbb E_q[\\pi]`.
    eta : numpy.ndarray, shape (L,)
        The variational Dirichlet concentration.
    elbo : numpy.ndarray, shape (steps,)
        The objective's Monte Carlo estimate at each step.
    cost : int
        :math:`\\sum_l c_l r_l`.
    """

    ranks: np.ndarray
    shares: np.ndarray
    eta: np.ndarray
    elbo: np.ndarray
    cost: int


def dirichlet_rank_allocation(
    p: Sequence[float],
    costs: Sequence[int],
    budget: int,
    *,
    kappa: float = 50.0,
    steps: int = 300,
    lr: float = 0.05,
    n_samples: int = 32,
    min_rank: int = 1,
    max_ranks: Sequence[int] | None = None,
    random_state: RandomState = None,
) -> DirichletAllocation:
    """Stage 3 (R): a Dirichlet variational allocation of a parameter budget, then rounding.

    Budget shares :math:`\\pi` on the simplex, prior :math:`\\mathrm{Dir}(\\kappa p)`,
    variational posterior :math:`q = \\mathrm{Dir}(\\eta)`; maximise

    .. math::

        \\mathcal L(\\eta) = \\mathbb E_q\\Big[\\sum_l p_l \\log\\big(1 + r_l(\\pi)\\big)\\Big]
        - \\mathrm{KL}\\big(q \\,\\|\\, \\mathrm{Dir}(\\kappa p)\\big),\\qquad
        r_l(\\pi) = \\pi_l P / c_l,

    with reparameterised samples (``torch.distributions.Dirichlet.rsample``) and Adam on
    :math:`\\log \\eta`. The ranks are :math:`\\mathbb E_q[\\pi_l] P / c_l` rounded by
    :func:`largest_remainder_ranks`, so that :math:`\\sum_l c_l r_l \\le P`.

    Parameters
    ----------
    p : sequence of float, shape (L,)
        TA-LC distribution (:func:`ta_lc`); positive.
    costs : sequence of int, shape (L,)
        Parameters per unit of rank.
    budget : int
        Parameter budget :math:`P`.
    kappa : float
        Prior concentration.
    steps, lr, n_samples : int, float, int
        Adam steps, learning rate and Monte Carlo samples per step.
    min_rank, max_ranks
        As in :func:`largest_remainder_ranks`.
    random_state : int, Generator or None
        Seeds the Monte Carlo samples.

    Returns
    -------
    DirichletAllocation

    References
    ----------
    Ding et al., ICML 2026 ("Bayesian rank allocation" named in the abstract; this
    objective, prior and optimiser are our reconstruction).
    """
    pv = _positive_vector(p, "p")
    c = _int_vector(costs, "costs", low=1)
    if c.size != pv.size:
        raise ValueError(f"costs must have one entry per layer ({pv.size}), got {c.size}")
    budget = check_int(budget, "budget", low=1)
    min_rank = check_int(min_rank, "min_rank", low=0)
    if int((c * min_rank).sum()) > budget:
        raise ValueError(
            f"budget={budget} is smaller than min_rank={min_rank} in every layer, which costs {int((c * min_rank).sum())} parameters"
        )
    kappa = check_real(kappa, "kappa", lo=0.0, lo_open=True)
    steps = check_int(steps, "steps", low=1)
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    n_samples = check_int(n_samples, "n_samples", low=1)
    from torch.distributions.dirichlet import _Dirichlet

    gen = torch.Generator().manual_seed(seed_from(random_state))
    pv = pv / pv.sum()
    prior_c = torch.tensor(kappa * pv, dtype=torch.float64)  # (L,) the prior Dir(kappa p)
    # the prior's terms of KL(Dir(eta) || Dir(kappa p)), which do not change over the steps
    prior_sum_lgamma = prior_c.sum(-1).lgamma()
    prior_lgamma = prior_c.lgamma()
    pt = torch.tensor(pv, dtype=torch.float64)
    scale = torch.tensor(budget / c, dtype=torch.float64)  # (L,) rank per unit share
    log_eta = torch.tensor(np.log(kappa * pv), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([log_eta], lr=lr)
    history = np.empty(steps)
    sample_shape = (n_samples, pv.size)
    # rsample draws from torch's global generator; fork it once so the caller's state is kept
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
        for s in range(steps):
            # the operations of Dirichlet(eta).rsample((S,)) and kl_divergence(Dir(eta), prior),
            # in their order, without the distribution objects' checks and dispatch
            eta_t = log_eta.exp()
            pi = _Dirichlet.apply(eta_t.expand(sample_shape))  # (S, L)
            lik = (pt * torch.log1p(pi * scale)).sum(1).mean()
            sum_eta = eta_t.sum(-1)
            t1 = sum_eta.lgamma() - prior_sum_lgamma
            t2 = (eta_t.lgamma() - prior_lgamma).sum(-1)
            t3 = eta_t - prior_c
            t4 = eta_t.digamma() - sum_eta.digamma().unsqueeze(-1)
            elbo = lik - (t1 - t2 + (t3 * t4).sum(-1))
            opt.zero_grad()
            (-elbo).backward()
            opt.step()
            history[s] = float(elbo.detach())
    eta = log_eta.detach().exp().numpy()
    shares = eta / eta.sum()
    ranks = largest_remainder_ranks(shares * budget / c, c, budget, min_rank=min_rank, max_ranks=max_ranks)
    return DirichletAllocation(ranks=ranks, shares=shares, eta=eta, elbo=history, cost=int((c * ranks).sum()))


# --------------------------------------------------------------------------- LoRA through peft


def _module_names(model: nn.Module) -> set[str]:
    return {name for name, _ in model.named_modules() if name}


def lora_rank_pattern(ranks: Mapping[str, int], model: nn.Module | None = None) -> dict[str, int]:
    """A peft ``rank_pattern`` that gives each named module exactly its rank.

    peft matches each key as the regex ``(.*\\.)?KEY$`` against a module's name, and the
    **first** matching key in dict order wins. Keys here are the escaped full names,
    longest first, so that a name that is a suffix of another never captures it.

    Parameters
    ----------
    ranks : mapping of str to int
        Full module name (as in ``model.named_modules()``) to rank >= 1.
    model : torch.nn.Module, optional
        If given, every name must be one of its modules.

    Returns
    -------
    dict of str to int
        Regex key to rank, in the order peft should try them.

    References
    ----------
    peft ``LoraConfig.rank_pattern``; ``peft.utils.other.get_pattern_key``.
    """
    if not isinstance(ranks, Mapping) or not ranks:
        raise TypeError("ranks must be a non-empty mapping of module names to ranks")
    out = {}
    names = _module_names(model) if model is not None else None
    for name in sorted(ranks, key=lambda k: (-len(k), k)):
        if not isinstance(name, str) or not name:
            raise TypeError(f"module names must be non-empty strings, got {name!r}")
        if names is not None and name not in names:
            raise ValueError(f"rank pattern names module {name!r}, which the model does not have")
        out[re.escape(name)] = check_int(ranks[name], f"ranks[{name!r}]", low=1)
    return out


def make_lora_model(
    model: nn.Module,
    ranks: Mapping[str, int],
    *,
    scaling: float = 2.0,
    modules_to_save: Sequence[str] | None = None,
    random_state: RandomState = None,
):
    """Wrap a copy of ``model`` with peft LoRA adapters of per-module ranks.

    :math:`\\Delta W_l = (\\alpha_l / r_l) B_l A_l` with :math:`\\alpha_l = s\\, r_l`, so the
    scaling :math:`s` is the same for every rank; ``A`` is Kaiming-initialised, ``B = 0``
    (peft's defaults); no dropout.

    Parameters
    ----------
    model : torch.nn.Module
        The frozen base (deep-copied; the original is left untouched).
    ranks : mapping of str to int
        Full module name to LoRA rank (see :func:`lora_rank_pattern`).
    scaling : float
        :math:`s = \\alpha / r`.
    modules_to_save : sequence of str, optional
        Modules trained in full beside the adapters (a classification head).
    random_state : int, Generator or None
        Seeds the adapters' initialisation.

    Returns
    -------
    peft.PeftModel

    References
    ----------
    Hu et al., LoRA, ICLR 2022; peft ``LoraConfig`` / ``get_peft_model``.
    """
    from peft import LoraConfig, get_peft_model

    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    pattern = lora_rank_pattern(ranks, model)
    scaling = check_real(scaling, "scaling", lo=0.0, lo_open=True)
    alpha = {k: scaling * v for k, v in pattern.items()}
    r0 = next(iter(pattern.values()))
    cfg = LoraConfig(
        r=r0, lora_alpha=scaling * r0, target_modules=list(ranks), rank_pattern=pattern, alpha_pattern=alpha,
        lora_dropout=0.0, bias="none", modules_to_save=list(modules_to_save) if modules_to_save else None,
    )
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        # transformers 5 deprecates `is_gradient_checkpointing`, which peft still reads
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        torch.manual_seed(seed_from(random_state))
        pm = get_peft_model(copy.deepcopy(model), cfg)
    return pm


def make_adalora_model(
    model: nn.Module,
    target_modules: Sequence[str],
    *,
    target_r: int,
    init_r: int,
    total_step: int,
    tinit: int | None = None,
    tfinal: int | None = None,
    delta_t: int = 10,
    scaling: float = 2.0,
    modules_to_save: Sequence[str] | None = None,
    random_state: RandomState = None,
):
    """Wrap a copy of ``model`` with peft AdaLoRA (SVD-form adapters pruned to an average rank).

    The training loop must call ``model.base_model.update_and_allocate(step)`` after each
    backward pass (:func:`train_lora` does). At the end the total rank is
    ``target_r * len(target_modules)``, the same rank budget as uniform LoRA of rank
    ``target_r`` (each AdaLoRA rank also keeps one singular value).

    Parameters
    ----------
    model : torch.nn.Module
        The frozen base (deep-copied).
    target_modules : sequence of str
        Full names of the adapted modules.
    target_r, init_r : int
        Average final rank and initial rank per module.
    total_step : int
        Training steps; the budget schedule needs ``tinit + tfinal < total_step``.
    tinit, tfinal : int, optional
        Warm-up and final fine-tuning steps without pruning (defaults: 10 % and 30 %).
    delta_t : int
        Steps between two budget updates.
    scaling : float
        :math:`\\alpha / r` at the initial rank.
    modules_to_save, random_state
        As in :func:`make_lora_model`.

    Returns
    -------
    peft.PeftModel

    References
    ----------
    Zhang et al., AdaLoRA, ICLR 2023; peft ``AdaLoraConfig``.
    """
    from peft import AdaLoraConfig, get_peft_model

    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    names = list(target_modules)
    if not names:
        raise ValueError("target_modules must not be empty")
    have = _module_names(model)
    for nm in names:
        if nm not in have:
            raise ValueError(f"target module {nm!r} is not a module of the model")
    target_r = check_int(target_r, "target_r", low=1)
    init_r = check_int(init_r, "init_r", low=target_r)
    total_step = check_int(total_step, "total_step", low=3)
    tinit = check_int(total_step // 10 if tinit is None else tinit, "tinit", low=0)
    tfinal = check_int(3 * total_step // 10 if tfinal is None else tfinal, "tfinal", low=0)
    if tinit + tfinal >= total_step:
        raise ValueError(f"tinit + tfinal = {tinit + tfinal} must be < total_step = {total_step}")
    delta_t = check_int(delta_t, "delta_t", low=1)
    scaling = check_real(scaling, "scaling", lo=0.0, lo_open=True)
    cfg = AdaLoraConfig(
        init_r=init_r, target_r=target_r, tinit=tinit, tfinal=tfinal, deltaT=delta_t, total_step=total_step,
        lora_alpha=scaling * init_r, lora_dropout=0.0, target_modules=names,
        modules_to_save=list(modules_to_save) if modules_to_save else None,
    )
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        # transformers 5 deprecates `is_gradient_checkpointing`, which peft still reads
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        torch.manual_seed(seed_from(random_state))
        pm = get_peft_model(copy.deepcopy(model), cfg)
    return pm


def lora_param_count(model: nn.Module, *, adapters_only: bool = True) -> int:
    """Trainable parameters of a peft model (only the ``lora_`` tensors if ``adapters_only``).

    For AdaLoRA the count is of the ranks still active (non-zero singular values
    :math:`\\lambda`), each costing :math:`d^{in} + d^{out} + 1`.

    Parameters
    ----------
    model : torch.nn.Module
        A peft model.
    adapters_only : bool
        Count only adapter tensors (not a head in ``modules_to_save``).

    Returns
    -------
    int

    References
    ----------
    Hu et al., 2022; Zhang et al., 2023.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    total = 0
    for mod in model.modules():
        lam = getattr(mod, "lora_E", None)
        if isinstance(lam, nn.ParameterDict) and len(lam):
            for key, e in lam.items():
                active = int((e.detach().abs() > 0).sum())
                a = mod.lora_A[key]
                b = mod.lora_B[key]
                total += active * (a.shape[1] + b.shape[0] + 1)
            continue
        la = getattr(mod, "lora_A", None)
        if isinstance(la, nn.ModuleDict) and len(la):
            for key in la:
                total += sum(p.numel() for p in la[key].parameters()) + sum(p.numel() for p in mod.lora_B[key].parameters())
    if not adapters_only:
        total += sum(p.numel() for n, p in model.named_parameters() if p.requires_grad and "lora_" not in n)
    return int(total)


def adapter_param_counts(model: nn.Module) -> dict[str, int]:
    """The adapter parameters a peft model trains, and those it keeps at the end.

    ``"trained"`` counts every ``lora_A``, ``lora_B`` (and AdaLoRA ``lora_E``) entry, the
    parameters the optimiser updates; ``"final"`` is :func:`lora_param_count`, which for
    AdaLoRA counts only the ranks whose singular value is non-zero. For LoRA the two are
    equal; an AdaLoRA that starts at rank ``init_r`` trains ``init_r (d^{in} + d^{out} +
    1)`` per module before it prunes.

    Parameters
    ----------
    model : torch.nn.Module
        A peft model.

    Returns
    -------
    dict with int values ``"trained"`` and ``"final"``

    References
    ----------
    Hu et al., 2022; Zhang et al., 2023.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    trained = sum(
        p.numel() for n, p in model.named_parameters() if re.search(r"\.lora_[ABE](\.|$)", n)
    )
    return {"trained": int(trained), "final": lora_param_count(model)}


def adalora_orth_penalty(model: nn.Module) -> torch.Tensor:
    """AdaLoRA's orthogonality penalty :math:`\\frac1{|\\mathcal P|}\\sum_{P}\\lVert P P^\\top - I \\rVert_F`.

    Over every ``lora_A`` (:math:`P = A`) and ``lora_B`` (:math:`P = B^\\top`) tensor, as
    peft's ``AdaLoraModel.forward`` adds it to a model output that carries a loss; for a
    model without such an output (task A's MLP) the loss function adds it.

    Parameters
    ----------
    model : torch.nn.Module
        A peft AdaLoRA model.

    Returns
    -------
    torch.Tensor, shape ()

    References
    ----------
    Zhang et al., AdaLoRA, ICLR 2023, eq. (4); peft ``AdaLoraModel.forward``.
    """
    return _orth_penalty_of(_orth_params(model))


def _orth_params(model: nn.Module) -> list[tuple[bool, torch.Tensor]]:
    """The ``lora_A`` / ``lora_B`` tensors of a model, in parameter order: ``(is_A, tensor)``."""
    found = [
        ("lora_A" in n, p)
        for n, p in model.named_parameters()
        if ".lora_A." in n or n.endswith(".lora_A") or ".lora_B." in n or n.endswith(".lora_B")
    ]
    if not found:
        raise ValueError("the model has no lora_A / lora_B tensors")
    return found


def _orth_penalty_of(found: Sequence[tuple[bool, torch.Tensor]],
                     eyes: dict[tuple[int, torch.dtype], torch.Tensor] | None = None) -> torch.Tensor:
    """:func:`adalora_orth_penalty` of tensors collected by :func:`_orth_params` (``eyes``: a cache of identities)."""
    terms = []
    for is_a, p in found:
        cov = p @ p.T if is_a else p.T @ p
        key = (cov.shape[0], cov.dtype)
        if eyes is None:
            eye = torch.eye(cov.shape[0], dtype=cov.dtype)
        else:
            eye = eyes.get(key)
            if eye is None:
                eye = eyes[key] = torch.eye(cov.shape[0], dtype=cov.dtype)
        terms.append(torch.linalg.matrix_norm(cov - eye))
    return torch.stack(terms).mean()


def _lora_modules(model: nn.Module) -> dict[str, nn.Module]:
    """Modules that hold LoRA adapters, keyed by their name in the base model."""
    out = {}
    for name, mod in model.named_modules():
        if isinstance(getattr(mod, "lora_A", None), (nn.ModuleDict, nn.ParameterDict)) and len(mod.lora_A):
            out[name.removeprefix("base_model.model.")] = mod
    return out


def train_lora(
    model: nn.Module,
    loss_fn: Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor],
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    steps: int,
    lr: float = 1e-2,
    batch_size: int = 128,
    adalora: bool = False,
    record_grad_norms: bool = False,
    random_state: RandomState = None,
) -> dict[str, Any]:
    """Adam on a peft model's trainable parameters, with minibatches drawn with a seed.

    Parameters
    ----------
    model : torch.nn.Module
        A peft model (trained in place).
    loss_fn : callable
        ``loss_fn(model, xb, yb)`` returns a scalar loss.
    X, y : torch.Tensor, shape (n, ...)
        Training inputs and targets.
    steps, lr, batch_size : int, float, int
        Adam steps, learning rate and batch size (at most n).
    adalora : bool
        Call ``model.base_model.update_and_allocate(step)`` after each backward pass.
    record_grad_norms : bool
        Also return, per adapted module, the mean over steps of the adapters'
        gradient Frobenius norm.
    random_state : int, Generator or None
        Seeds the batch order.

    Returns
    -------
    dict
        ``"loss"``: array (steps,); ``"grad_norms"``: dict of module name to float (if
        recorded).

    References
    ----------
    Kingma & Ba, Adam, 2015; peft's AdaLoRA training recipe.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not callable(loss_fn):
        raise TypeError("loss_fn must be callable")
    if not isinstance(X, torch.Tensor) or not isinstance(y, torch.Tensor) or X.shape[0] != y.shape[0] or X.shape[0] == 0:
        raise ValueError("X and y must be tensors with the same, non-zero number of rows")
    steps = check_int(steps, "steps", low=1)
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    batch_size = min(check_int(batch_size, "batch_size", low=1), X.shape[0])
    rng = check_random_state(random_state)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters")
    opt = torch.optim.Adam(params, lr=lr)
    mods = _lora_modules(model) if record_grad_norms else {}
    gsum = dict.fromkeys(mods, 0.0)
    losses = np.empty(steps)
    model.train()
    for s in range(steps):
        idx = torch.from_numpy(rng.choice(X.shape[0], size=batch_size, replace=False))
        loss = loss_fn(model, X[idx], y[idx])
        opt.zero_grad()
        loss.backward()
        for name, mod in mods.items():
            sq = 0.0
            for key in mod.lora_A:
                for p in list(mod.lora_A[key].parameters()) + list(mod.lora_B[key].parameters()):
                    if p.grad is not None:
                        sq += float(p.grad.pow(2).sum())
            gsum[name] += sq**0.5
        opt.step()
        if adalora:
            model.base_model.update_and_allocate(s)
        losses[s] = float(loss.detach())
    model.eval()
    out: dict[str, Any] = {"loss": losses}
    if record_grad_norms:
        out["grad_norms"] = {k: v / steps for k, v in gsum.items()}
    return out


def lora_gradient_demand(
    model: nn.Module,
    module_names: Sequence[str],
    loss_fn: Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor],
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    r0: int = 2,
    steps: int = 20,
    lr: float = 1e-2,
    batch_size: int = 128,
    modules_to_save: Sequence[str] | None = None,
    random_state: RandomState = None,
) -> tuple[np.ndarray, nn.Module]:
    """Stage 2's adaptation demand (R): mean adapter gradient norm over a uniform-rank warm-up.

    :math:`G_l = \\frac1K \\sum_{k=1}^{K} \\big\\| \\nabla_{(A_l, B_l)} \\mathcal L_k \\big\\|_F`
    over :math:`K` = ``steps`` Adam steps of uniform LoRA of rank ``r0``.

    Parameters
    ----------
    model : torch.nn.Module
        The frozen base (copied).
    module_names : sequence of str
        The modules to adapt, in order.
    loss_fn, X, y, lr, batch_size
        As in :func:`train_lora`.
    r0 : int
        The warm-up rank.
    steps : int
        Warm-up steps :math:`K`.
    modules_to_save : sequence of str, optional
        Trained in full during the warm-up too (a head).
    random_state : int, Generator or None
        Seeds the adapters and the batches.

    Returns
    -------
    demand : numpy.ndarray, shape (L,)
        :math:`G_l` in the order of ``module_names``.
    warm : peft.PeftModel
        The warmed-up model (e.g. to take conductances with a trained head).

    References
    ----------
    Ding et al., ICML 2026 ("adaptation demand", reconstructed as warm-up gradient norms).
    """
    names = list(module_names)
    if not names:
        raise ValueError("module_names must not be empty")
    r0 = check_int(r0, "r0", low=1)
    rng = check_random_state(random_state)
    warm = make_lora_model(model, dict.fromkeys(names, r0), modules_to_save=modules_to_save, random_state=rng)
    out = train_lora(warm, loss_fn, X, y, steps=steps, lr=lr, batch_size=batch_size, record_grad_norms=True, random_state=rng)
    g = out["grad_norms"]
    return np.array([g[n] for n in names]), warm


# --------------------------------------------------------------------------- task A: high-rank regression


@dataclass
class RegressionTask:
    """Task A: a frozen base MLP and a target that differs by planted low-rank updates.

    Attributes
    ----------
    base : torch.nn.Sequential
        The frozen base network (float32).
    layer_names : list of str
        Names of its Linear layers (``"0"``, ``"2"``, ...), in order.
    costs : numpy.ndarray of int
        :math:`d^{in}_l + d^{out}_l` per layer.
    max_ranks : numpy.ndarray of int
        :math:`\\min(d^{in}_l, d^{out}_l)`.
    true_ranks : numpy.ndarray of int
        The planted perturbations' ranks.
    X_train, y_train, X_test, y_test : torch.Tensor
        Inputs (n, d_in) and targets (n, d_out).
    """

    base: nn.Sequential
    layer_names: list[str]
    costs: np.ndarray
    max_ranks: np.ndarray
    true_ranks: np.ndarray
    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    extra: dict = field(default_factory=dict)


def highrank_regression_task(
    true_ranks: Sequence[int],
    *,
    d_in: int = 32,
    width: int = 64,
    d_out: int = 4,
    sigma: float = 0.6,
    noise: float = 0.01,
    n_train: int = 2048,
    n_test: int = 1024,
    random_state: RandomState = None,
) -> RegressionTask:
    """Task A (R): regress a network that differs from the base by planted low-rank updates.

    The base is an MLP with ``len(true_ranks)`` Linear layers (tanh between them),
    weights :math:`\\mathcal N(0, 1.2^2/d^{in})`. The target network adds to layer
    :math:`l` the update :math:`\\Delta W_l = \\sigma \\sum_{i \\le r^*_l} u_i v_i^\\top` with
    orthonormal :math:`u_i, v_i`, so every planted direction has singular value
    :math:`\\sigma`; :math:`y = f_{\\text{target}}(x) + \\varepsilon`, :math:`x \\sim \\mathcal N(0, I)`.

    Parameters
    ----------
    true_ranks : sequence of int
        Planted rank per layer (0 = no change); at most ``min(d_in_l, d_out_l)``.
    d_in, width, d_out : int
        Input, hidden and output sizes.
    sigma : float
        Singular value of each planted direction.
    noise : float
        Standard deviation of the target noise.
    n_train, n_test : int
        Sample sizes.
    random_state : int, Generator or None

    Returns
    -------
    RegressionTask

    References
    ----------
    Ding et al., ICML 2026 ("high-rank regression", setting reconstructed).
    """
    tr = _int_vector(true_ranks, "true_ranks", low=0)
    if tr.size < 2:
        raise ValueError("true_ranks needs at least two layers")
    d_in, width, d_out = (check_int(v, k, low=1) for v, k in ((d_in, "d_in"), (width, "width"), (d_out, "d_out")))
    sigma = check_real(sigma, "sigma", lo=0.0)
    noise = check_real(noise, "noise", lo=0.0)
    n_train, n_test = check_int(n_train, "n_train", low=2), check_int(n_test, "n_test", low=1)
    rng = check_random_state(random_state)
    dims = [d_in] + [width] * (tr.size - 1) + [d_out]
    mx = np.array([min(a, b) for a, b in zip(dims[:-1], dims[1:], strict=True)])
    if np.any(tr > mx):
        raise ValueError(f"true_ranks {tr.tolist()} exceed the layers' largest ranks {mx.tolist()}")
    layers: list[nn.Module] = []
    names = []
    target_layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:], strict=True)):
        W = rng.normal(0.0, 1.2 / np.sqrt(a), size=(b, a))
        bvec = rng.normal(0.0, 0.1, size=b)
        U = np.linalg.qr(rng.normal(size=(b, b)))[0][:, : tr[i]]
        V = np.linalg.qr(rng.normal(size=(a, a)))[0][:, : tr[i]]
        dW = sigma * U @ V.T
        for dst, w in ((layers, W), (target_layers, W + dW)):
            lin = nn.Linear(a, b)
            with torch.no_grad():
                lin.weight.copy_(torch.tensor(w, dtype=torch.float32))
                lin.bias.copy_(torch.tensor(bvec, dtype=torch.float32))
            dst.append(lin)
            if i < tr.size - 1:
                dst.append(nn.Tanh())
        names.append(str(2 * i))
    base = nn.Sequential(*layers)
    target = nn.Sequential(*target_layers)
    for p in list(base.parameters()) + list(target.parameters()):
        p.requires_grad_(False)
    Xtr = torch.tensor(rng.normal(size=(n_train, d_in)), dtype=torch.float32)
    Xte = torch.tensor(rng.normal(size=(n_test, d_in)), dtype=torch.float32)
    with torch.no_grad():
        ytr = target(Xtr) + noise * torch.tensor(rng.normal(size=(n_train, d_out)), dtype=torch.float32)
        yte = target(Xte)
    costs = np.array([a + b for a, b in zip(dims[:-1], dims[1:], strict=True)])
    return RegressionTask(base, names, costs, mx, tr, Xtr, ytr, Xte, yte, {"target": target, "dims": dims})


# --------------------------------------------------------------------------- task B: tiny encoder


@dataclass
class EncoderTask:
    """Task B: a tiny BERT, pretrained as a masked LM on a generated corpus, and a labelled task.

    Attributes
    ----------
    model : transformers.BertForSequenceClassification
        The pretrained encoder with a fresh two-class head (frozen).
    module_names : list of str
        The adapted Linear modules (query, key, value, attention output, FFN in and out
        of every layer).
    costs, max_ranks : numpy.ndarray of int
        Per adapted module.
    X_train, y_train, X_test, y_test : torch.Tensor
        Token ids (n, L) and labels (n,).
    pad_id : int
        The pad token (its embedding is the conductance baseline).
    mlm_loss : numpy.ndarray
        Pretraining loss per step.
    """

    model: nn.Module
    module_names: list[str]
    costs: np.ndarray
    max_ranks: np.ndarray
    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    pad_id: int
    mlm_loss: np.ndarray


def _markov_corpus(rng: np.random.Generator, T: np.ndarray, n: int, length: int, first: int) -> np.ndarray:
    V = T.shape[0]
    out = np.empty((n, length), dtype=np.int64)
    out[:, 0] = rng.integers(0, V, size=n)
    cum = T.cumsum(1)
    for j in range(1, length):
        u = rng.random(n)[:, None]
        out[:, j] = np.minimum((u > cum[out[:, j - 1]]).sum(1), V - 1)
    return out + first


def marker_encoder_task(
    *,
    vocab: int = 32,
    seq_len: int = 16,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    pretrain_steps: int = 300,
    n_corpus: int = 4096,
    n_train: int = 2048,
    n_test: int = 1024,
    lr: float = 3e-3,
    marker_rate: float = 0.25,
    n_markers: int = 3,
    rule: str = "count",
    random_state: RandomState = None,
) -> EncoderTask:
    """Task B (R): the GLUE stand-in — a tiny BERT pretrained here, then a sequence task.

    Sentences come from a random sparse Markov chain over ``vocab`` word tokens. The
    encoder (``transformers.BertConfig``, no dropout) is pretrained for
    ``pretrain_steps`` Adam steps as a masked LM (15 % of tokens masked). The labelled
    task: does a sentence hold more tokens of a first marker set than of a second
    (``n_markers`` tokens each, sentences with a tie are dropped)? Sentences are prefixed by
    ``[CLS]``; the pooler and the head of ``BertForSequenceClassification`` start from
    fresh weights.

    Parameters
    ----------
    vocab, seq_len, hidden, layers, heads : int
        Word tokens, words per sentence and the encoder's size.
    pretrain_steps, n_corpus : int
        Masked-LM steps and corpus size.
    n_train, n_test : int
        Labelled examples.
    lr : float
        Pretraining learning rate.
    marker_rate : float in (0, 1)
        Fraction of a labelled sentence's tokens replaced by marker tokens: the lower,
        the smaller the typical count difference and the harder the task.
    n_markers : int
        Tokens in each of the two marker sets.
    rule : {"count", "halves"}
        ``"count"``: more tokens of the first marker set than of the second?
        ``"halves"``: more tokens of the first set in the first half of the sentence than
        in the second half (the second set's tokens are distractors; ties are dropped) —
        a position-dependent count, harder for a small encoder.
    random_state : int, Generator or None

    Returns
    -------
    EncoderTask

    References
    ----------
    Devlin et al., BERT, NAACL 2019 (masked LM); Ding et al., ICML 2026 (GLUE, replaced
    by this generated task).
    """
    import transformers
    from transformers import BertConfig, BertForMaskedLM, BertForSequenceClassification

    vocab = check_int(vocab, "vocab", low=8)
    seq_len = check_int(seq_len, "seq_len", low=4)
    hidden, layers, heads = check_int(hidden, "hidden"), check_int(layers, "layers"), check_int(heads, "heads")
    if hidden % heads:
        raise ValueError(f"hidden={hidden} must be a multiple of heads={heads}")
    pretrain_steps = check_int(pretrain_steps, "pretrain_steps", low=0)
    n_corpus, n_train, n_test = (check_int(v, k, low=1) for v, k in ((n_corpus, "n_corpus"), (n_train, "n_train"), (n_test, "n_test")))
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    marker_rate = check_real(marker_rate, "marker_rate", lo=0.0, hi=1.0, lo_open=True)
    n_markers = check_int(n_markers, "n_markers", low=1)
    if rule not in ("count", "halves"):
        raise ValueError(f"rule={rule!r}: allowed are 'count' and 'halves'")
    if 2 * n_markers > vocab:
        raise ValueError(f"n_markers={n_markers}: two marker sets need at most vocab={vocab} tokens")
    rng = check_random_state(random_state)
    transformers.logging.set_verbosity_error()
    PAD, CLS, MASK, FIRST = 0, 1, 2, 3
    V = vocab
    T = rng.random((V, V)) ** 4  # sparse-ish transitions
    T /= T.sum(1, keepdims=True)
    cfg = BertConfig(
        vocab_size=V + FIRST, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=2 * hidden, max_position_embeddings=seq_len + 1, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, pad_token_id=PAD, num_labels=2, attn_implementation="eager",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed_from(rng))
        mlm = BertForMaskedLM(cfg)
        clf = BertForSequenceClassification(cfg)
    corpus = torch.from_numpy(_markov_corpus(rng, T, n_corpus, seq_len, FIRST))
    corpus = torch.cat([torch.full((n_corpus, 1), CLS), corpus], 1)  # (n, L+1)
    opt = torch.optim.Adam(mlm.parameters(), lr=lr)
    mlm_loss = np.empty(pretrain_steps)
    mlm.train()
    for s in range(pretrain_steps):
        idx = torch.from_numpy(rng.choice(n_corpus, size=min(128, n_corpus), replace=False))
        ids = corpus[idx].clone()
        mask = torch.from_numpy(rng.random(ids.shape) < 0.15)
        mask[:, 0] = False
        labels = torch.where(mask, ids, torch.full_like(ids, -100))
        ids[mask] = MASK
        loss = mlm(input_ids=ids, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        mlm_loss[s] = float(loss.detach())
    clf.bert.load_state_dict(mlm.bert.state_dict(), strict=False)
    clf.eval()
    for p in clf.parameters():
        p.requires_grad_(False)
    markers = rng.choice(V, size=2 * n_markers, replace=False)
    set_a, set_b = markers[:n_markers] + FIRST, markers[n_markers:] + FIRST

    def labelled(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        xs, ys, have = [], [], 0
        while have < n:
            raw = _markov_corpus(rng, T, 2 * n, seq_len, FIRST)
            # make markers frequent: replace a fraction marker_rate of tokens by a marker token
            hit = rng.random(raw.shape) < marker_rate
            raw[hit] = rng.choice(markers + FIRST, size=int(hit.sum()))
            if rule == "count":
                ca, cb = np.isin(raw, set_a).sum(1), np.isin(raw, set_b).sum(1)
            else:  # "halves": set-A markers in the first half against the second half
                half = raw.shape[1] // 2
                ca, cb = np.isin(raw[:, :half], set_a).sum(1), np.isin(raw[:, half:], set_a).sum(1)
            keep = ca != cb
            xs.append(raw[keep])
            ys.append((ca > cb)[keep].astype(np.int64))
            have += int(keep.sum())
        x = np.concatenate(xs)[:n]
        y = np.concatenate(ys)[:n]
        x = np.concatenate([np.full((n, 1), CLS), x], 1)
        return torch.from_numpy(x), torch.from_numpy(y)

    Xtr, ytr = labelled(n_train)
    Xte, yte = labelled(n_test)
    names, costs, mx = [], [], []
    for i in range(layers):
        for sub in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                    "intermediate.dense", "output.dense"):
            nm = f"bert.encoder.layer.{i}.{sub}"
            lin = clf.get_submodule(nm)
            names.append(nm)
            costs.append(lin.in_features + lin.out_features)
            mx.append(min(lin.in_features, lin.out_features))
    return EncoderTask(clf, names, np.array(costs), np.array(mx), Xtr, ytr, Xte, yte, PAD, mlm_loss)


# --------------------------------------------------------------------------- the chapter's experiments

#: the allocation methods compared by the chapter: the TA-LC exponent a of each
ALLOCATIONS: dict[str, float] = {
    "gradient-only (a=0)": 0.0,
    "COBRA-style (a=½)": 0.5,
    "conductance-only (a=1)": 1.0,
}
ADALORA = "AdaLoRA (peft)"
ADALORA_LOW = "AdaLoRA, trained at the budget"


def allocate_ranks(
    contribution: Sequence[float],
    demand: Sequence[float],
    costs: Sequence[int],
    budget: int,
    *,
    alphas: Mapping[str, float] | None = None,
    kappa: float = 50.0,
    max_ranks: Sequence[int] | None = None,
    random_state: RandomState = None,
) -> dict[str, dict[str, np.ndarray]]:
    """Stages 2 and 3 for several TA-LC exponents: ranks, posterior shares, p and the rounding of p.

    For each ``a`` in ``alphas``: :math:`p = ` :func:`ta_lc` ``(C, G, a)``, the ranks of
    :func:`dirichlet_rank_allocation` (every call seeded by ``random_state``) and, for
    comparison, :func:`share_ranks` of :math:`p` itself (the allocation without the
    Bayesian stage).

    Parameters
    ----------
    contribution, demand : sequence of float, shape (L,)
        :math:`C_l` and :math:`G_l`.
    costs, budget, kappa, max_ranks
        As in :func:`dirichlet_rank_allocation`.
    alphas : mapping of str to float, optional
        Method name to exponent; default :data:`ALLOCATIONS`.
    random_state : int or None
        The same seed for every call.

    Returns
    -------
    dict of str to dict
        Per method: ``"ranks"``, ``"shares"`` (:math:`\\mathbb E_q[\\pi]`), ``"p"`` and
        ``"proportional"`` (the ranks of :math:`p` rounded without the Bayesian stage).

    References
    ----------
    Ding et al., ICML 2026 (stages 2 and 3, reconstructed).
    """
    out = {}
    for name, a in (ALLOCATIONS if alphas is None else alphas).items():
        p = ta_lc(contribution, demand, a)
        d = dirichlet_rank_allocation(p, costs, budget, kappa=kappa, max_ranks=max_ranks, random_state=random_state)
        out[name] = {
            "ranks": d.ranks,
            "shares": d.shares,
            "p": p,
            "proportional": share_ranks(p, costs, budget, max_ranks=max_ranks),
        }
    return out


def build_methods(
    base: nn.Module,
    module_names: Sequence[str],
    ranks: Mapping[str, Sequence[int]],
    *,
    r0: int,
    total_step: int,
    adalora_init_r: int | None = None,
    modules_to_save: Sequence[str] | None = None,
    methods: Sequence[str] | None = None,
    random_state: RandomState = None,
) -> dict[str, nn.Module]:
    """The peft models of every method at the budget of uniform rank ``r0``.

    ``"uniform"`` (rank ``r0`` everywhere), one LoRA per entry of ``ranks``, AdaLoRA
    (:data:`ADALORA`: from ``adalora_init_r`` pruned to an average ``r0``; its final
    parameters match the budget, it trains more) and :data:`ADALORA_LOW` (from ``r0``
    pruned to ``r0 - 1``: it trains within the budget and ends below it; left out when
    ``r0 = 1``). Every model is seeded by ``random_state``.

    Parameters
    ----------
    base : torch.nn.Module
        The frozen base model.
    module_names : sequence of str
        The adapted modules, in order.
    ranks : mapping of str to sequence of int
        Method name to per-module ranks.
    r0 : int
        The uniform rank that defines the budget.
    total_step : int
        Training steps (AdaLoRA's schedule).
    adalora_init_r : int, optional
        AdaLoRA's initial rank; default ``r0 + r0 // 2``.
    modules_to_save, random_state
        As in :func:`make_lora_model`.
    methods : sequence of str, optional
        Build only these (names among ``"uniform"``, the keys of ``ranks``,
        :data:`ADALORA`, :data:`ADALORA_LOW`); default all.

    Returns
    -------
    dict of str to peft.PeftModel

    References
    ----------
    Hu et al., 2022; Zhang et al., 2023.
    """
    r0 = check_int(r0, "r0", low=1)
    names = list(module_names)
    init_r = r0 + r0 // 2 if adalora_init_r is None else check_int(adalora_init_r, "adalora_init_r", low=r0 + 1)
    known = ["uniform", *ranks, ADALORA, *([ADALORA_LOW] if r0 > 1 else [])]
    keep = set(known if methods is None else methods)
    if keep - set(known):
        raise ValueError(f"methods {sorted(keep - set(known))} are not among {known}")
    models = {}
    if "uniform" in keep:
        models["uniform"] = make_lora_model(base, dict.fromkeys(names, r0), modules_to_save=modules_to_save,
                                            random_state=random_state)
    for name, r in ranks.items():
        if name not in keep:
            continue
        r = _int_vector(r, f"ranks[{name!r}]", low=1)
        if r.size != len(names):
            raise ValueError(f"ranks[{name!r}] must have one rank per module ({len(names)}), got {r.size}")
        models[name] = make_lora_model(base, dict(zip(names, map(int, r), strict=True)),
                                       modules_to_save=modules_to_save, random_state=random_state)
    if ADALORA in keep:
        models[ADALORA] = make_adalora_model(base, names, target_r=r0, init_r=init_r, total_step=total_step,
                                             modules_to_save=modules_to_save, random_state=random_state)
    if ADALORA_LOW in keep:
        models[ADALORA_LOW] = make_adalora_model(base, names, target_r=r0 - 1, init_r=r0, total_step=total_step,
                                                 modules_to_save=modules_to_save, random_state=random_state)
    return models


def _mse(m: nn.Module, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
    return ((m(xb) - yb) ** 2).mean()


def _mse_orth(m: nn.Module, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
    # peft's default orth_reg_weight
    return _mse(m, xb, yb) + 0.5 * adalora_orth_penalty(m)


def _peft_mlp_forward(model: nn.Module) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """A lean forward of a peft model of task A's MLP, or ``None`` where its structure is not the expected one.

    The base is an ``nn.Sequential`` of ``nn.Linear`` and ``nn.Tanh`` whose Linear layers
    peft wrapped (LoRA ``Linear`` or AdaLoRA ``SVDLinear``, one active adapter, no dropout,
    not merged). The returned function runs the same tensor operations, in the same
    order, as peft's forward (``lora.Linear.forward``: ``W x + b + B(A x) * s``;
    ``adalora.SVDLinear.forward``: ``W x + b += (x (A \\odot E)^T B^T) * s / (r + 10^{-5})``),
    so its outputs and gradients are bit-identical; it skips only the module dispatch
    (tested against ``model(x)``).
    """
    try:
        from peft.tuners.adalora.layer import SVDLinear
        from peft.tuners.lora.layer import Linear as LoraLinear
    except ImportError:  # pragma: no cover - peft is a dependency
        return None
    seq = getattr(getattr(model, "base_model", None), "model", None)
    if not isinstance(seq, nn.Sequential) or getattr(model, "active_adapters", None) != ["default"]:
        return None
    plan: list[tuple] = []
    for mod in seq:
        if isinstance(mod, nn.Tanh):
            plan.append(("tanh",))
            continue
        if type(mod) not in (LoraLinear, SVDLinear) or mod.disable_adapters or mod.merged:
            return None
        base = mod.base_layer
        if type(base) is not nn.Linear or list(mod.lora_A) != ["default"] or mod.fan_in_fan_out:
            return None
        if not isinstance(mod.lora_dropout["default"], nn.Identity):
            return None
        if getattr(mod, "cast_input_dtype_enabled", True) is False:
            return None
        if isinstance(mod, SVDLinear):
            plan.append(("svd", base, mod.lora_A["default"], mod.lora_B["default"], mod.lora_E["default"],
                         mod.scaling["default"], mod.ranknum["default"]))
        else:
            if mod.lora_variant or getattr(mod, "use_dora", {}).get("default", False):
                return None
            a, b = mod.lora_A["default"], mod.lora_B["default"]
            if type(a) is not nn.Linear or type(b) is not nn.Linear or a.bias is not None or b.bias is not None:
                return None
            plan.append(("lora", base, a, b, mod.scaling["default"]))
    F = torch.nn.functional

    def forward(x: torch.Tensor) -> torch.Tensor:
        for step in plan:
            kind = step[0]
            if kind == "tanh":
                x = torch.tanh(x)
                continue
            base = step[1]
            result = F.linear(x, base.weight, base.bias)
            if kind == "lora":
                _, _, a, b, scaling = step
                xa = x if x.dtype == a.weight.dtype else x.to(dtype=a.weight.dtype)
                result = result + F.linear(F.linear(xa, a.weight), b.weight) * scaling
                x = result.to(result.dtype)
            else:
                _, _, lora_a, lora_b, lora_e, scaling, ranknum = step
                ranknum = ranknum + 1e-5
                xa = x if x.dtype == lora_a.dtype else x.to(dtype=lora_a.dtype)
                result += (xa @ (lora_a * lora_e).T @ lora_b.T) * scaling / ranknum
                x = result
        return x

    return forward


def _regression_loss(m: nn.Module, adalora: bool) -> Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor]:
    """Task A's training loss for one model: :func:`_mse` (and :func:`_mse_orth` for AdaLoRA), same numbers, less dispatch.

    The lean forward of :func:`_peft_mlp_forward` and the AdaLoRA tensors collected once
    stand in for ``m(x)`` and :func:`adalora_orth_penalty`'s search of the parameters at
    every step; where the structure is not the expected one, the plain losses are used.
    """
    fwd = _peft_mlp_forward(m)
    if fwd is None:
        return _mse_orth if adalora else _mse
    if not adalora:
        def loss(_m, xb, yb):
            return ((fwd(xb) - yb) ** 2).mean()
        return loss
    found = _orth_params(m)
    eyes: dict = {}

    def loss_orth(_m, xb, yb):
        return ((fwd(xb) - yb) ** 2).mean() + 0.5 * _orth_penalty_of(found, eyes)
    return loss_orth


def regression_seed(
    true_ranks: Sequence[int],
    *,
    r0: int,
    steps: int,
    warmup: int = 20,
    lr: float = 1e-2,
    batch_size: int = 128,
    cond_n: int = 32,
    cond_steps: int = 16,
    kappa: float = 50.0,
    methods: Sequence[str] | None = None,
    random_state: int = 0,
) -> dict[str, Any]:
    """One seed of task A: signals, allocations, and every method trained and scored.

    The task is :func:`highrank_regression_task` ``(true_ranks, random_state)``. The
    adaptation demand comes from a warm-up of uniform rank ``r0``
    (:func:`lora_gradient_demand`); the contributions are :func:`task_contributions` of
    the negative squared error on the warmed-up model, with the training targets, on the
    first ``cond_n`` training inputs (zero baseline). Ranks by :func:`allocate_ranks`;
    models by :func:`build_methods` (AdaLoRA's loss adds :func:`adalora_orth_penalty`);
    every method trains ``steps`` Adam steps on the same batches and is scored by the
    test MSE. Every random stream is seeded by ``random_state``.

    Parameters
    ----------
    true_ranks : sequence of int
        The planted ranks.
    r0 : int
        The budget is the cost of uniform rank ``r0``.
    steps, warmup, lr, batch_size : int, int, float, int
        Training and warm-up steps, Adam's learning rate, batch size.
    cond_n, cond_steps : int
        Conductance examples and path steps.
    kappa : float
        The Dirichlet prior's concentration.
    methods : sequence of str, optional
        Train only these methods (see :func:`build_methods`); default all.
    random_state : int
        The seed.

    Returns
    -------
    dict
        ``"rows"`` (one dict per method: method, test MSE, trained and final parameters,
        budget, ranks, Spearman ρ with the planted ranks), ``"alloc"`` (from
        :func:`allocate_ranks`), ``"rho"`` (Spearman ρ of the two signals), ``"C"``,
        ``"G"``.

    References
    ----------
    Ding et al., ICML 2026 (high-rank regression, reconstructed).
    """
    from scipy.stats import spearmanr

    task = highrank_regression_task(true_ranks, random_state=random_state)
    budget = int(check_int(r0, "r0", low=1) * task.costs.sum())
    G, warm = lora_gradient_demand(task.base, task.layer_names, _mse, task.X_train, task.y_train, r0=r0,
                                   steps=warmup, lr=lr, batch_size=batch_size, random_state=random_state)
    Cl = task_contributions(
        warm, {n: warm.get_submodule("base_model.model." + n) for n in task.layer_names},
        task.X_train[:cond_n], task.y_train[:cond_n], neg_squared_error, n_steps=cond_steps, batch_size=cond_n,
    )
    alloc = allocate_ranks(Cl, G, task.costs, budget, kappa=kappa, max_ranks=task.max_ranks,
                           random_state=random_state)
    models = build_methods(task.base, task.layer_names, {k: v["ranks"] for k, v in alloc.items()}, r0=r0,
                           total_step=steps, methods=methods, random_state=random_state)
    rows = []
    for name, m in models.items():
        counts = adapter_param_counts(m)
        ada = name.startswith("AdaLoRA")
        train_lora(m, _regression_loss(m, ada), task.X_train, task.y_train, steps=steps, lr=lr,
                   batch_size=batch_size, adalora=ada, random_state=random_state)
        with torch.no_grad():
            test = float(_mse(m, task.X_test, task.y_test))
        r = alloc[name]["ranks"] if name in alloc else np.full(len(task.layer_names), r0) if name == "uniform" else None
        rows.append({
            "method": name, "test MSE": test, "trained parameters": counts["trained"],
            "final parameters": lora_param_count(m), "budget": budget,
            "ranks": "—" if r is None else " ".join(map(str, r)),
            "ρ(ranks, truth)": float(spearmanr(r, task.true_ranks).statistic)
            if r is not None and np.ptp(r) and np.ptp(task.true_ranks) else np.nan,
        })
    return {"rows": rows, "alloc": alloc, "rho": float(spearmanr(Cl, G).statistic), "C": Cl, "G": G,
            "true_ranks": task.true_ranks}


def _clf_loss(m: nn.Module, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
    return m(input_ids=xb, labels=yb).loss


def encoder_seed(
    enc: EncoderTask,
    *,
    r0: int,
    steps: int,
    warmup: int = 20,
    lr: float = 3e-3,
    batch_size: int = 64,
    cond_n: int = 32,
    cond_steps: int = 16,
    kappa: float = 50.0,
    head: Sequence[str] = ("classifier", "bert.pooler.dense"),
    methods: Sequence[str] | None = None,
    random_state: int = 0,
) -> dict[str, Any]:
    """One seed of task B: as :func:`regression_seed`, on a tiny BERT classifier.

    The contributions are :func:`task_contributions` of the true-class log-probability
    (:func:`true_class_log_prob`) on the warmed-up model (its head is trained in the
    warm-up), with input embeddings as inputs and pad-token embeddings as the baseline.
    The pooler and the head are trained in full by every method (``head``); the score is
    the test accuracy. The encoder is ``enc``'s (shared over seeds); ``random_state``
    seeds the adapters, the warm-up, the allocation and the batches.

    Parameters
    ----------
    enc : EncoderTask
        From :func:`marker_encoder_task`.
    r0, steps, warmup, lr, batch_size, cond_n, cond_steps, kappa, methods, random_state
        As in :func:`regression_seed`.
    head : sequence of str
        Modules trained in full.

    Returns
    -------
    dict
        As :func:`regression_seed`, rows with ``"accuracy"`` instead of the MSE.

    References
    ----------
    Ding et al., ICML 2026 (GLUE, replaced by a generated task).
    """
    from scipy.stats import spearmanr

    if not isinstance(enc, EncoderTask):
        raise TypeError(f"enc must be an EncoderTask, got {type(enc).__name__}")
    budget = int(check_int(r0, "r0", low=1) * enc.costs.sum())
    head = list(head)
    G, warm = lora_gradient_demand(enc.model, enc.module_names, _clf_loss, enc.X_train, enc.y_train, r0=r0,
                                   steps=warmup, lr=lr, batch_size=batch_size, modules_to_save=head,
                                   random_state=random_state)
    emb = warm.get_submodule("base_model.model.bert.embeddings.word_embeddings")
    xc = enc.X_train[:cond_n]
    with torch.no_grad():
        E, E0 = emb(xc), emb(torch.full_like(xc, enc.pad_id))
    Cl = task_contributions(
        lambda e: warm(inputs_embeds=e).logits,
        {n: warm.get_submodule("base_model.model." + n) for n in enc.module_names},
        E, enc.y_train[:cond_n], true_class_log_prob, E0, n_steps=cond_steps, batch_size=32,
    )
    alloc = allocate_ranks(Cl, G, enc.costs, budget, kappa=kappa, max_ranks=enc.max_ranks,
                           random_state=random_state)
    models = build_methods(enc.model, enc.module_names, {k: v["ranks"] for k, v in alloc.items()}, r0=r0,
                           total_step=steps, modules_to_save=head, methods=methods, random_state=random_state)
    rows = []
    for name, m in models.items():
        counts = adapter_param_counts(m)
        train_lora(m, _clf_loss, enc.X_train, enc.y_train, steps=steps, lr=lr, batch_size=batch_size,
                   adalora=name.startswith("AdaLoRA"), random_state=random_state)
        with torch.no_grad():
            acc = float((m(input_ids=enc.X_test).logits.argmax(1) == enc.y_test).float().mean())
        r = alloc[name]["ranks"] if name in alloc else np.full(len(enc.module_names), r0) if name == "uniform" else None
        rows.append({
            "method": name, "accuracy": acc, "trained parameters": counts["trained"],
            "final parameters": lora_param_count(m), "budget": budget,
            "ranks": "—" if r is None else " ".join(map(str, r)),
        })
    return {"rows": rows, "alloc": alloc, "rho": float(spearmanr(Cl, G).statistic), "C": Cl, "G": G}
