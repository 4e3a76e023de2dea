"""LoRA with per-module ranks and the AdaLoRA baseline, through peft; their training and parameter counts.

:func:`make_lora_model` (per-module ranks by :func:`lora_rank_pattern`),
:func:`make_adalora_model`, the parameter counts (:func:`lora_param_count`,
:func:`adapter_param_counts`), AdaLoRA's orthogonality penalty
(:func:`adalora_orth_penalty`), the training loop (:func:`train_lora`) and stage 2's
adaptation demand from a uniform-rank warm-up (:func:`lora_gradient_demand`).

References
----------
E. J. Hu et al. *LoRA: Low-Rank Adaptation of Large Language Models.* ICLR 2022.
Q. Zhang et al. *AdaLoRA: Adaptive Budget Allocation for Parameter-Efficient
Fine-Tuning.* ICLR 2023.
"""

from __future__ import annotations

import copy
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from .._common import RandomState, check_int, check_random_state, check_real, seed_from


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
        r=r0,
        lora_alpha=scaling * r0,
        target_modules=list(ranks),
        rank_pattern=pattern,
        alpha_pattern=alpha,
        lora_dropout=0.0,
        bias="none",
        modules_to_save=list(modules_to_save) if modules_to_save else None,
    )
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        # transformers 5 deprecates `is_gradient_checkpointing`, which peft still reads
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        torch.manual_seed(seed_from(random_state))
        pm = get_peft_model(copy.deepcopy(model), cfg)
    return pm


#: AdaLoRA's settings as its authors ran it on GLUE (Zhang et al., ICLR 2023; the scripts
#: ``NLU/scripts/run_debertav3_*.sh`` of github.com/QingruZhang/AdaLoRA): the warm-up
#: (``--init_warmup``) and the final phase (``--final_warmup``) as fractions of the
#: training steps (the median over the seven scripts, 9-18 % and 44-58 %), a budget update
#: every step (``--mask_interval 1``, their setting for the shortest runs, RTE and MRPC),
#: the orthogonality weight (``--reg_orth_coef 0.1``, five of the seven tasks) and the
#: importance EMAs (``--beta1 0.85 --beta2 0.85``) and ``--lora_alpha 32`` (five of the
#: seven). The initial rank is 1.5 times the target (the paper's
#: :math:`b^{(0)} = 1.5\, b^{(T)}`), set by the caller.
ADALORA_AUTHORS: dict[str, float] = {
    "tinit_frac": 0.12,
    "tfinal_frac": 0.49,
    "delta_t": 1,
    "orth_reg_weight": 0.1,
    "beta1": 0.85,
    "beta2": 0.85,
    "lora_alpha": 32.0,
}


def make_adalora_model(
    model: nn.Module,
    target_modules: Sequence[str],
    *,
    target_r: int,
    init_r: int,
    total_step: int,
    tinit: int | None = None,
    tfinal: int | None = None,
    delta_t: int | None = None,
    orth_reg_weight: float | None = None,
    scaling: float | None = None,
    modules_to_save: Sequence[str] | None = None,
    random_state: RandomState = None,
):
    """Wrap a copy of ``model`` with peft AdaLoRA (SVD-form adapters pruned to an average rank).

    The schedule and the regulariser default to the authors' GLUE settings
    (:data:`ADALORA_AUTHORS`): warm-up ``tinit`` 12 % and final phase ``tfinal`` 49 % of
    the steps, a budget update every step, orthogonality weight 0.1, importance EMAs
    :math:`\\beta_1 = \\beta_2 = 0.85` (peft's defaults) and ``lora_alpha`` 32 (peft
    scales the update by ``lora_alpha`` over the initial rank).

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
        Warm-up and final fine-tuning steps without pruning (defaults: the authors'
        fractions of ``total_step``, 12 % and 49 %).
    delta_t : int, optional
        Steps between two budget updates (default: the authors' 1).
    orth_reg_weight : float, optional
        Weight :math:`\\gamma` of the orthogonality penalty (default: the authors' 0.1);
        peft adds it to a model output that carries a loss, and task A's loss reads it
        from the model's config.
    scaling : float, optional
        :math:`\\alpha / r` at the initial rank (default: the authors' ``lora_alpha`` 32
        over ``init_r``).
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
    au = ADALORA_AUTHORS
    tinit = check_int(int(au["tinit_frac"] * total_step) if tinit is None else tinit, "tinit", low=0)
    tfinal = check_int(int(au["tfinal_frac"] * total_step) if tfinal is None else tfinal, "tfinal", low=0)
    if tinit + tfinal >= total_step:
        raise ValueError(f"tinit + tfinal = {tinit + tfinal} must be < total_step = {total_step}")
    delta_t = check_int(au["delta_t"] if delta_t is None else delta_t, "delta_t", low=1)
    orth = check_real(au["orth_reg_weight"] if orth_reg_weight is None else orth_reg_weight, "orth_reg_weight", lo=0.0)
    scaling = check_real(au["lora_alpha"] / init_r if scaling is None else scaling, "scaling", lo=0.0, lo_open=True)
    cfg = AdaLoraConfig(
        init_r=init_r,
        target_r=target_r,
        tinit=tinit,
        tfinal=tfinal,
        deltaT=delta_t,
        total_step=total_step,
        lora_alpha=scaling * init_r,
        lora_dropout=0.0,
        target_modules=names,
        orth_reg_weight=orth,
        beta1=au["beta1"],
        beta2=au["beta2"],
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
    trained = sum(p.numel() for n, p in model.named_parameters() if re.search(r"\.lora_[ABE](\.|$)", n))
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


def _orth_weight(model: nn.Module) -> float:
    """The orthogonality weight of a peft AdaLoRA model's config (peft's ``orth_reg_weight``)."""
    cfg = getattr(model, "peft_config", {}).get("default")
    w = getattr(cfg, "orth_reg_weight", None)
    if w is None:
        raise ValueError("the model is not a peft AdaLoRA model (its config has no orth_reg_weight)")
    return float(w)


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


def _orth_penalty_of(
    found: Sequence[tuple[bool, torch.Tensor]], eyes: dict[tuple[int, torch.dtype], torch.Tensor] | None = None
) -> torch.Tensor:
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
    schedule: str = "constant",
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
    schedule : {"constant", "linear"}
        The learning rate: constant, or LoRA's and AdaLoRA's GLUE recipe, a linear
        warm-up over the first 6 % of the steps and a linear decay to zero
        (:math:`\\eta_k = \\eta \\min\\{(k+1)/w,\\ (K-k)/(K-w)\\}`, :math:`w = \\lceil 0.06 K \\rceil`).
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
    if schedule not in ("constant", "linear"):
        raise ValueError(f"schedule={schedule!r}: allowed are 'constant' and 'linear'")
    batch_size = min(check_int(batch_size, "batch_size", low=1), X.shape[0])
    rng = check_random_state(random_state)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters")
    opt = torch.optim.Adam(params, lr=lr)
    warm = -(-6 * steps // 100)
    factors = (
        np.minimum((np.arange(steps) + 1) / warm, (steps - np.arange(steps)) / max(steps - warm, 1))
        if schedule == "linear"
        else None
    )
    mods = _lora_modules(model) if record_grad_norms else {}
    gsum = dict.fromkeys(mods, 0.0)
    losses = np.empty(steps)
    model.train()
    for s in range(steps):
        if factors is not None:
            for group in opt.param_groups:
                group["lr"] = lr * float(factors[s])
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
