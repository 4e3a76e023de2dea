"""The LOTO fits of chapter 18's sensitivity rows: other gradient metrics, earlier merge settings.

:func:`sensitivity_fits` recomputes the gradient metrics in each variant and re-scores
two earlier merge settings, and refits every predictor on them.

References
----------
L. Zhou, B. Zhao, R. Yu, E. Rodolà, "Demystifying Mergeability: Interpretable Properties
to Predict Model Merging Success", ICML 2026, arXiv:2601.22285. Code:
https://github.com/Rose-STL-Lab/demystifying-mergeability.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .._common import RandomState, seed_from
from .merges import MERGE_METHODS, TIES_GLOBAL, score_pair_merges
from .metrics import pairwise_metrics
from .models import FineTuned
from .predictor import loto_mergeability
from .tasks import DigitTasks

__all__ = ["sensitivity_fits"]


def sensitivity_fits(
    base,
    ft: FineTuned,
    tasks: DigitTasks,
    pairs: Sequence[tuple[int, int]],
    M: np.ndarray,
    merged: Mapping[str, Mapping[str, np.ndarray]],
    *,
    grad_variants: Mapping[str, Mapping],
    metric_kw: Mapping,
    alphas_before: Sequence[float] = (0.3, 0.5, 0.7, 1.0),
    lam: float = 1.0,
    fit: Mapping | None = None,
    random_state: RandomState = 0,
) -> dict:
    """The LOTO fits of the chapter's sensitivity rows, for one seed's models.

    * ``"grad"``: for every entry of ``grad_variants`` (keyword arguments of
      :func:`pairwise_metrics` for the gradient metrics), the metrics recomputed that way
      (only the six gradient columns change) and every method's targets ``merged`` fitted
      on them;
    * ``"merge"``: the targets of two earlier merge settings on the primary metrics ``M``
      — TIES trimmed over the whole backbone at scale 1 (:data:`TIES_GLOBAL`, key
      ``"ties_global"``) and task arithmetic with alpha tuned per pair on the validation
      splits over ``alphas_before`` (key ``"arithmetic_tuned"``) — and that method fitted on them.

    Every fit is :func:`loto_mergeability` with ``lam``, ``fit`` (e.g. :data:`LOTO_AUTHORS`)
    and ``random_state``, as the primary fits.

    Returns
    -------
    dict
        ``{"grad": {name: {"M": (P, 28), "loto": {method: LotoResult}}},
        "merge": {name: {"method": str, "target": dict, "loto": LotoResult}}}``.
    """
    fit = dict(fit or {})
    if not isinstance(grad_variants, Mapping) or not isinstance(metric_kw, Mapping):
        raise TypeError("grad_variants and metric_kw must be dicts of keyword arguments of pairwise_metrics")
    if not isinstance(merged, Mapping) or set(merged) != set(MERGE_METHODS):
        raise ValueError(f"merged must hold the targets of every merge method {list(MERGE_METHODS)}")
    out: dict = {"grad": {}, "merge": {}}
    for name, kw in grad_variants.items():
        Mv = pairwise_metrics(base, ft, tasks, pairs, **metric_kw, **kw)
        out["grad"][name] = {
            "M": Mv,
            "loto": {
                m: loto_mergeability(Mv, merged[m]["normalised"], pairs, lam=lam, random_state=random_state, **fit)
                for m in MERGE_METHODS
            },
        }
    seed = seed_from(random_state)
    for name, method, kw in (
        ("ties_global", "ties", dict(ties=TIES_GLOBAL)),
        ("arithmetic_tuned", "arithmetic", dict(alphas=list(alphas_before))),
    ):
        target = score_pair_merges(base, ft, tasks, pairs, methods=[method], random_state=seed, **kw)[method]
        out["merge"][name] = {
            "method": method,
            "target": target,
            "loto": loto_mergeability(M, target["normalised"], pairs, lam=lam, random_state=random_state, **fit),
        }
    return out
