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

The package, by concern (every public name is re-exported here, so ``from icml26
import cobra; cobra.ta_lc`` works):

:mod:`~icml26.cobra.contributions`
    stage 1, layer conductance and per-layer contributions;
:mod:`~icml26.cobra.allocation`
    stages 2 and 3, TA-LC and the Dirichlet rank allocation under a budget;
:mod:`~icml26.cobra.adapters`
    LoRA and AdaLoRA through peft, training, parameter counts, the warm-up demand;
:mod:`~icml26.cobra.tasks`
    the two generated tasks;
:mod:`~icml26.cobra.experiments`
    the chapter's experiments (allocations, compared methods, one seed of each task).

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

from .adapters import (  # noqa: F401  (ADALORA_AUTHORS: the baseline's settings, for the chapter)
    ADALORA_AUTHORS,
    adalora_orth_penalty,
    adapter_param_counts,
    lora_gradient_demand,
    lora_param_count,
    lora_rank_pattern,
    make_adalora_model,
    make_lora_model,
    train_lora,
)
from .allocation import DirichletAllocation, dirichlet_rank_allocation, largest_remainder_ranks, share_ranks, ta_lc
from .contributions import (
    layer_conductance,
    layer_contributions,
    neg_squared_error,
    task_contributions,
    true_class_log_prob,
)

# the method names and the private losses are re-exported for the chapter and the tests, outside __all__ as before
from .experiments import (  # noqa: F401
    ADALORA,
    ADALORA_LOW,
    ALLOCATIONS,
    _mse,
    _mse_orth,
    _peft_mlp_forward,
    _regression_loss,
    allocate_ranks,
    build_methods,
    encoder_seed,
    regression_seed,
)
from .tasks import EncoderTask, RegressionTask, highrank_regression_task, marker_encoder_task

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
