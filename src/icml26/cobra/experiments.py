"""The chapter's experiments: allocations for several TA-LC exponents, the compared methods, one seed of each task.

References
----------
Ding et al., *COBRA*, ICML 2026 (reconstructed); Zhang et al., AdaLoRA, ICLR 2023.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from .._common import RandomState, check_int
from ._checks import _int_vector
from .adapters import (
    _orth_params,
    _orth_penalty_of,
    _orth_weight,
    adalora_orth_penalty,
    adapter_param_counts,
    lora_gradient_demand,
    lora_param_count,
    make_adalora_model,
    make_lora_model,
    train_lora,
)
from .allocation import dirichlet_rank_allocation, share_ranks, ta_lc
from .contributions import neg_squared_error, task_contributions, true_class_log_prob
from .tasks import EncoderTask, highrank_regression_task

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
        models["uniform"] = make_lora_model(
            base, dict.fromkeys(names, r0), modules_to_save=modules_to_save, random_state=random_state
        )
    for name, r in ranks.items():
        if name not in keep:
            continue
        r = _int_vector(r, f"ranks[{name!r}]", low=1)
        if r.size != len(names):
            raise ValueError(f"ranks[{name!r}] must have one rank per module ({len(names)}), got {r.size}")
        models[name] = make_lora_model(
            base, dict(zip(names, map(int, r), strict=True)), modules_to_save=modules_to_save, random_state=random_state
        )
    if ADALORA in keep:
        models[ADALORA] = make_adalora_model(
            base,
            names,
            target_r=r0,
            init_r=init_r,
            total_step=total_step,
            modules_to_save=modules_to_save,
            random_state=random_state,
        )
    if ADALORA_LOW in keep:
        models[ADALORA_LOW] = make_adalora_model(
            base,
            names,
            target_r=r0 - 1,
            init_r=r0,
            total_step=total_step,
            modules_to_save=modules_to_save,
            random_state=random_state,
        )
    return models


def _mse(m: nn.Module, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
    return ((m(xb) - yb) ** 2).mean()


def _mse_orth(m: nn.Module, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
    # the orthogonality weight of the model's AdaLoRA config, as peft adds it to a loss output
    return _mse(m, xb, yb) + _orth_weight(m) * adalora_orth_penalty(m)


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
            plan.append(
                (
                    "svd",
                    base,
                    mod.lora_A["default"],
                    mod.lora_B["default"],
                    mod.lora_E["default"],
                    mod.scaling["default"],
                    mod.ranknum["default"],
                )
            )
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
    w = _orth_weight(m)

    def loss_orth(_m, xb, yb):
        return ((fwd(xb) - yb) ** 2).mean() + w * _orth_penalty_of(found, eyes)

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
    G, warm = lora_gradient_demand(
        task.base,
        task.layer_names,
        _mse,
        task.X_train,
        task.y_train,
        r0=r0,
        steps=warmup,
        lr=lr,
        batch_size=batch_size,
        random_state=random_state,
    )
    Cl = task_contributions(
        warm,
        {n: warm.get_submodule("base_model.model." + n) for n in task.layer_names},
        task.X_train[:cond_n],
        task.y_train[:cond_n],
        neg_squared_error,
        n_steps=cond_steps,
        batch_size=cond_n,
    )
    alloc = allocate_ranks(Cl, G, task.costs, budget, kappa=kappa, max_ranks=task.max_ranks, random_state=random_state)
    models = build_methods(
        task.base,
        task.layer_names,
        {k: v["ranks"] for k, v in alloc.items()},
        r0=r0,
        total_step=steps,
        methods=methods,
        random_state=random_state,
    )
    rows = []
    for name, m in models.items():
        counts = adapter_param_counts(m)
        ada = name.startswith("AdaLoRA")
        train_lora(
            m,
            _regression_loss(m, ada),
            task.X_train,
            task.y_train,
            steps=steps,
            lr=lr,
            batch_size=batch_size,
            adalora=ada,
            random_state=random_state,
        )
        with torch.no_grad():
            test = float(_mse(m, task.X_test, task.y_test))
        r = alloc[name]["ranks"] if name in alloc else np.full(len(task.layer_names), r0) if name == "uniform" else None
        rows.append(
            {
                "method": name,
                "test MSE": test,
                "trained parameters": counts["trained"],
                "final parameters": lora_param_count(m),
                "budget": budget,
                "ranks": "—" if r is None else " ".join(map(str, r)),
                "ρ(ranks, truth)": float(spearmanr(r, task.true_ranks).statistic)
                if r is not None and np.ptp(r) and np.ptp(task.true_ranks)
                else np.nan,
            }
        )
    return {
        "rows": rows,
        "alloc": alloc,
        "rho": float(spearmanr(Cl, G).statistic),
        "C": Cl,
        "G": G,
        "true_ranks": task.true_ranks,
    }


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
    schedule: str = "constant",
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
    schedule : {"constant", "linear"}
        The learning-rate schedule of every compared method (:func:`train_lora`); the
        warm-up of the demand signal keeps a constant rate.

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
    G, warm = lora_gradient_demand(
        enc.model,
        enc.module_names,
        _clf_loss,
        enc.X_train,
        enc.y_train,
        r0=r0,
        steps=warmup,
        lr=lr,
        batch_size=batch_size,
        modules_to_save=head,
        random_state=random_state,
    )
    emb = warm.get_submodule("base_model.model.bert.embeddings.word_embeddings")
    xc = enc.X_train[:cond_n]
    with torch.no_grad():
        E, E0 = emb(xc), emb(torch.full_like(xc, enc.pad_id))
    Cl = task_contributions(
        lambda e: warm(inputs_embeds=e).logits,
        {n: warm.get_submodule("base_model.model." + n) for n in enc.module_names},
        E,
        enc.y_train[:cond_n],
        true_class_log_prob,
        E0,
        n_steps=cond_steps,
        batch_size=32,
    )
    alloc = allocate_ranks(Cl, G, enc.costs, budget, kappa=kappa, max_ranks=enc.max_ranks, random_state=random_state)
    models = build_methods(
        enc.model,
        enc.module_names,
        {k: v["ranks"] for k, v in alloc.items()},
        r0=r0,
        total_step=steps,
        modules_to_save=head,
        methods=methods,
        random_state=random_state,
    )
    rows = []
    for name, m in models.items():
        counts = adapter_param_counts(m)
        train_lora(
            m,
            _clf_loss,
            enc.X_train,
            enc.y_train,
            steps=steps,
            lr=lr,
            batch_size=batch_size,
            adalora=name.startswith("AdaLoRA"),
            schedule=schedule,
            random_state=random_state,
        )
        with torch.no_grad():
            acc = float((m(input_ids=enc.X_test).logits.argmax(1) == enc.y_test).float().mean())
        r = alloc[name]["ranks"] if name in alloc else np.full(len(enc.module_names), r0) if name == "uniform" else None
        rows.append(
            {
                "method": name,
                "accuracy": acc,
                "trained parameters": counts["trained"],
                "final parameters": lora_param_count(m),
                "budget": budget,
                "ranks": "—" if r is None else " ".join(map(str, r)),
            }
        )
    return {"rows": rows, "alloc": alloc, "rho": float(spearmanr(Cl, G).statistic), "C": Cl, "G": G}
