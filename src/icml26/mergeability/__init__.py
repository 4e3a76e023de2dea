"""Predicting model-merging success from interpretable pairwise metrics (chapter 18).

The pipeline of Zhou, Zhao, Yu & Rodolà (ICML 2026) at laptop scale: a backbone
pretrained on half of scikit-learn's digits, fine-tuned on tasks built from the other
half (input transforms x label maps), pairs of fine-tuned models merged by five methods,
28 pairwise metrics per pair, and a per-method sparse linear predictor that maximises
the Pearson correlation with the post-merge normalised accuracy, fitted
leave-one-task-out.

Merges: weight averaging, task arithmetic, TIES and DARE (the last three through
``peft.utils.merge_utils``) and TSV-Merge (written here). Metrics follow the names of the
authors' ``METRIC_REGISTRY``.

Modules
-------
:mod:`~icml26.mergeability.tasks`
    the digits tasks: :data:`TASK_TRANSFORMS`, :data:`LABEL_MAPS`, :data:`DEFAULT_TASKS`,
    :class:`DigitTasks`, :func:`make_digit_tasks`, :func:`task_pairs`.
:mod:`~icml26.mergeability.models`
    :func:`pretrain_backbone`, :func:`finetune_tasks`, :class:`FineTuned`.
:mod:`~icml26.mergeability.merges`
    :data:`MERGE_METHODS`: :func:`merge_weight_average`, :func:`merge_task_arithmetic`,
    :func:`merge_ties` (:data:`TIES_AUTHORS`, :data:`TIES_GLOBAL`), :func:`merge_dare`,
    :func:`merge_tsv`, :func:`merge_pair`; and :func:`score_pair_merges` (the target).
:mod:`~icml26.mergeability.metrics`
    :data:`METRIC_FAMILIES`, :data:`METRIC_NAMES`, :func:`pairwise_metrics`,
    :func:`pairwise_metrics_loop`, :data:`GRAD_SAMPLES`, :func:`gradient_sample_draws`,
    :func:`gradient_weights`.
:mod:`~icml26.mergeability.predictor`
    :func:`fit_pearson_l1`, :func:`loto_mergeability` (:class:`LotoResult`,
    :data:`LOTO_AUTHORS`), :func:`driver_agreement`.
:mod:`~icml26.mergeability.sensitivity`
    :func:`sensitivity_fits` (the chapter's sensitivity rows).

Each submodule imports only those listed above it; every public name is re-exported
here: ``from icml26 import mergeability; mergeability.merge_ties``.

References
----------
L. Zhou, B. Zhao, R. Yu, E. Rodolà, "Demystifying Mergeability: Interpretable Properties
to Predict Model Merging Success", ICML 2026, arXiv:2601.22285. Code:
https://github.com/Rose-STL-Lab/demystifying-mergeability (``src/model_merging/metrics/
mergeability.py``, ``scripts/linear_optimization_loto_l1.py``).
"""

from __future__ import annotations

from .merges import (
    MERGE_METHODS,
    TIES_AUTHORS,
    TIES_GLOBAL,
    _pair_accuracy,  # noqa: F401  (used by tests/test_mergeability.py)
    merge_dare,
    merge_pair,
    merge_task_arithmetic,
    merge_ties,
    merge_tsv,
    merge_weight_average,
    score_pair_merges,
)
from .metrics import (
    GRAD_SAMPLES,
    METRIC_FAMILIES,
    METRIC_NAMES,
    gradient_sample_draws,
    gradient_weights,
    pairwise_metrics,
    pairwise_metrics_loop,
)
from .models import (
    HEAD_WIDTH,  # noqa: F401  (a public constant of the old module, outside its __all__)
    FineTuned,
    finetune_tasks,
    pretrain_backbone,
)
from .predictor import LOTO_AUTHORS, LotoResult, driver_agreement, fit_pearson_l1, loto_mergeability
from .sensitivity import sensitivity_fits
from .tasks import (
    DEFAULT_TASKS,
    LABEL_MAPS,
    N_PIXELS,  # noqa: F401  (a public constant of the old module, outside its __all__)
    TASK_TRANSFORMS,
    DigitTasks,
    make_digit_tasks,
    task_pairs,
)

__all__ = [
    "DEFAULT_TASKS",
    "GRAD_SAMPLES",
    "LABEL_MAPS",
    "LOTO_AUTHORS",
    "MERGE_METHODS",
    "METRIC_FAMILIES",
    "METRIC_NAMES",
    "TASK_TRANSFORMS",
    "TIES_AUTHORS",
    "TIES_GLOBAL",
    "DigitTasks",
    "FineTuned",
    "LotoResult",
    "driver_agreement",
    "finetune_tasks",
    "fit_pearson_l1",
    "gradient_sample_draws",
    "gradient_weights",
    "loto_mergeability",
    "make_digit_tasks",
    "merge_dare",
    "merge_pair",
    "merge_task_arithmetic",
    "merge_ties",
    "merge_tsv",
    "merge_weight_average",
    "pairwise_metrics",
    "pairwise_metrics_loop",
    "pretrain_backbone",
    "score_pair_merges",
    "sensitivity_fits",
    "task_pairs",
]
