"""Stage 1 of COBRA-style allocation: layer conductance and per-layer contributions.

Layer conductance (Dhamdhere et al., 2019) by a batched Riemann sum with forward hooks
(:func:`layer_conductance`, tested against captum's ``LayerConductance``), its reduction
to one number per layer (:func:`layer_contributions`, :func:`task_contributions`) and
the two scalar outputs the chapter attributes (:func:`neg_squared_error`,
:func:`true_class_log_prob`).

References
----------
K. Dhamdhere, M. Sundararajan, Q. Yan. *How Important Is a Neuron?* ICLR 2019
(arXiv:1805.12233).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from .._common import check_int


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
            raise ValueError(
                f"baselines of shape {tuple(baselines.shape)} do not broadcast to inputs {tuple(inputs.shape)}"
            ) from None
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
