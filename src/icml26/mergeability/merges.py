"""The five merge methods and the post-merge score of every task pair.

Weight averaging, task arithmetic, TIES and DARE (the last three through
``peft.utils.merge_utils``) and TSV-Merge (written here): :func:`merge_weight_average`,
:func:`merge_task_arithmetic`, :func:`merge_ties` (settings :data:`TIES_AUTHORS`,
:data:`TIES_GLOBAL`), :func:`merge_dare`, :func:`merge_tsv`, the dispatcher
:func:`merge_pair` over :data:`MERGE_METHODS`, and :func:`score_pair_merges` (the
paper's target: normalised post-merge accuracy per pair).

References
----------
L. Zhou, B. Zhao, R. Yu, E. Rodolà, "Demystifying Mergeability: Interpretable Properties
to Predict Model Merging Success", ICML 2026, arXiv:2601.22285. Code:
https://github.com/Rose-STL-Lab/demystifying-mergeability.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from .._common import RandomState, check_random_state, check_real, seed_from
from .models import _PARAM_KEYS, FineTuned, _accuracy, _check_backbone, _class_mask, _flat, _unflat
from .tasks import DigitTasks, _check_pairs

__all__ = [
    "MERGE_METHODS",
    "TIES_AUTHORS",
    "TIES_GLOBAL",
    "merge_dare",
    "merge_pair",
    "merge_task_arithmetic",
    "merge_ties",
    "merge_tsv",
    "merge_weight_average",
    "score_pair_merges",
]


MERGE_METHODS: tuple[str, ...] = ("weight_avg", "arithmetic", "ties", "dare", "tsv")


def _check_vectors(base: Mapping[str, torch.Tensor], task_vectors: Sequence[Mapping[str, torch.Tensor]]) -> None:
    if not isinstance(base, Mapping) or not base:
        raise TypeError("base must be a non-empty dict of parameter tensors")
    if isinstance(task_vectors, Mapping) or not isinstance(task_vectors, Sequence) or len(task_vectors) < 2:
        raise ValueError("task_vectors must be a list of at least two dicts of tensors")
    for i, tv in enumerate(task_vectors):
        if not isinstance(tv, Mapping) or set(tv) != set(base):
            raise ValueError(
                f"task vector {i} has parameters {sorted(tv) if isinstance(tv, Mapping) else tv!r}, "
                f"the base has {sorted(base)}; merging needs models of the same architecture"
            )
        for k in base:
            if not (isinstance(tv[k], torch.Tensor) and isinstance(base[k], torch.Tensor)):
                raise TypeError(f"parameter {k!r} must be a torch.Tensor")
            if tuple(tv[k].shape) != tuple(base[k].shape):
                raise ValueError(
                    f"cannot merge models of different shapes: parameter {k!r} has shape "
                    f"{tuple(tv[k].shape)} in task vector {i} and {tuple(base[k].shape)} in the base"
                )
            if not torch.isfinite(tv[k]).all():
                raise ValueError(f"parameter {k!r} of task vector {i} holds NaN or infinite values; task vectors must be finite")
    for k in base:
        if not torch.isfinite(base[k]).all():
            raise ValueError(f"parameter {k!r} of the base holds NaN or infinite values; the base must be finite")


def merge_weight_average(base, task_vectors) -> dict[str, torch.Tensor]:
    """Weight averaging: ``theta_0 + mean_t tau_t``.

    Parameters
    ----------
    base : dict of str to torch.Tensor
        Pretrained parameters theta_0.
    task_vectors : list of dict
        tau_t = theta_t - theta_0, same keys and shapes as ``base``.

    Returns
    -------
    dict of str to torch.Tensor
        The merged parameters.
    """
    _check_vectors(base, task_vectors)
    return {k: base[k] + torch.stack([tv[k] for tv in task_vectors]).mean(0) for k in base}


def merge_task_arithmetic(base, task_vectors, alpha: float) -> dict[str, torch.Tensor]:
    """Task arithmetic: ``theta_0 + alpha * sum_t tau_t`` via ``peft.utils.merge_utils.task_arithmetic``.

    Parameters
    ----------
    base, task_vectors
        As in :func:`merge_weight_average`.
    alpha : float
        Scaling coefficient (> 0); the chapter picks it on validation data.

    Returns
    -------
    dict of str to torch.Tensor

    References
    ----------
    Ilharco et al., "Editing models with task arithmetic", ICLR 2023.
    """
    from peft.utils.merge_utils import task_arithmetic

    _check_vectors(base, task_vectors)
    alpha = check_real(alpha, "alpha", lo=0.0, lo_open=True)
    keys = list(base)
    flat = [_flat(tv, keys) for tv in task_vectors]
    w = torch.full((len(flat),), alpha, dtype=flat[0].dtype)
    return _unflat(task_arithmetic(flat, w), base)


def merge_ties(
    base, task_vectors, *, density: float = 0.2, lam: float = 1.0, per_tensor: bool = False
) -> dict[str, torch.Tensor]:
    """TIES-Merging via ``peft.utils.merge_utils.ties``, on the flattened task vectors or per tensor.

    Trim each tau_t to its top ``density`` fraction by magnitude (over all parameters, or
    within each tensor when ``per_tensor``), elect the sign of the summed trimmed values per
    entry, average the entries that agree with it (disjoint mean), and add ``lam`` times the
    result to theta_0. The authors' Mergeability-Bench trims per tensor and scales by 0.3
    (:data:`TIES_AUTHORS`, used by :func:`merge_pair`); the TIES paper's description trims
    the whole vector.

    Parameters
    ----------
    base, task_vectors
        As in :func:`merge_weight_average`.
    density : float
        Fraction kept, in (0, 1] (the paper's k = 20 %).
    lam : float
        Final scaling (> 0).
    per_tensor : bool
        Trim and elect within each parameter tensor (the authors' code) rather than over
        the flattened vector.

    Returns
    -------
    dict of str to torch.Tensor

    Raises
    ------
    TypeError
        For a base or task vectors that are not dicts of tensors, or a non-bool ``per_tensor``.
    ValueError
        For mismatched or non-finite parameters, ``density`` outside (0, 1] or so small that
        ``int(density * size)`` keeps no entry (of the flattened vector, or of some tensor
        when ``per_tensor``), or ``lam <= 0``.

    References
    ----------
    Yadav et al., "TIES-Merging", NeurIPS 2023.
    """
    from peft.utils.merge_utils import ties

    _check_vectors(base, task_vectors)
    density = check_real(density, "density", lo=0.0, hi=1.0, lo_open=True)
    lam = check_real(lam, "lam", lo=0.0, lo_open=True)
    if not isinstance(per_tensor, (bool, np.bool_)):
        raise TypeError(f"per_tensor={per_tensor!r} must be a bool")
    sizes = (
        {f"parameter {k!r}": b.numel() for k, b in base.items()}
        if per_tensor
        else {"the flattened task vector": sum(b.numel() for b in base.values())}
    )
    for what, size in sizes.items():
        if int(density * size) < 1:  # peft keeps int(density * size) entries: none would be kept
            raise ValueError(
                f"density={density!r} keeps no entry of {what} ({size} entries, int(density * {size}) = 0), "
                f"so TIES would return the base unchanged; use density >= {1 / size:.3g}"
            )
    if density == 1.0:  # no trimming; peft warns "no pruning will be performed", which is what was asked
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The density .* no pruning", category=UserWarning)
            return _ties(base, task_vectors, ties, density, lam, per_tensor)
    return _ties(base, task_vectors, ties, density, lam, per_tensor)


def _ties(base, task_vectors, ties, density, lam, per_tensor):
    if per_tensor:
        out = {}
        for k, b in base.items():
            vs = [tv[k].reshape(-1) for tv in task_vectors]
            m = ties(vs, torch.ones(len(vs), dtype=vs[0].dtype), density=density, majority_sign_method="total")
            out[k] = b + lam * m.reshape(b.shape)
        return out
    keys = list(base)
    flat = [_flat(tv, keys) for tv in task_vectors]
    merged = ties(flat, torch.ones(len(flat), dtype=flat[0].dtype), density=density, majority_sign_method="total")
    return _unflat(lam * merged, base)


TIES_AUTHORS: dict = {"density": 0.2, "lam": 0.3, "per_tensor": True}
"""TIES as the authors run it: top 20 % per tensor (``ties_merger.py``), scaled by 0.3 (``conf/merger/ties.yaml``)."""

TIES_GLOBAL: dict = {"density": 0.2, "lam": 1.0, "per_tensor": False}
"""This book's earlier TIES: top 20 % over the whole backbone, scale 1 (kept for the sensitivity row)."""


def _ties_kwargs(ties: Mapping | None) -> dict:
    if ties is None:
        return dict(TIES_AUTHORS)
    if not isinstance(ties, Mapping) or not set(ties) <= {"density", "lam", "per_tensor"}:
        raise ValueError(
            f"ties={ties!r} must be a dict with some of the keys density, lam, per_tensor (keyword arguments of merge_ties)"
        )
    return {**TIES_AUTHORS, **ties}


def merge_dare(
    base, task_vectors, *, drop: float = 0.9, scale: float = 1.0, random_state: RandomState = 0
) -> dict[str, torch.Tensor]:
    """DARE: drop a fraction ``drop`` of each tau's entries at random, rescale, mean-merge.

    Through ``peft.utils.merge_utils.dare_linear`` with density ``1 - drop`` and weights
    ``scale / T``; its Bernoulli masks come from torch's global generator, seeded here from
    ``random_state`` inside ``torch.random.fork_rng`` (the caller's state is untouched).

    Parameters
    ----------
    base, task_vectors
        As in :func:`merge_weight_average`.
    drop : float
        Drop rate p in [0, 1) (the paper's 0.9).
    scale : float
        Scaling of the mean (the paper's 1.0).
    random_state : int, Generator or None
        Seeds the masks.

    Returns
    -------
    dict of str to torch.Tensor

    References
    ----------
    Yu et al., "Language Models are Super Mario", ICML 2024.
    """
    from peft.utils.merge_utils import dare_linear

    _check_vectors(base, task_vectors)
    drop = check_real(drop, "drop", lo=0.0, hi=1.0, hi_open=True)
    scale = check_real(scale, "scale", lo=0.0, lo_open=True)
    keys = list(base)
    flat = [_flat(tv, keys) for tv in task_vectors]
    w = torch.full((len(flat),), scale / len(flat), dtype=flat[0].dtype)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed_from(random_state))
        if drop == 0.0:
            merged = (torch.stack(flat) * w[:, None]).sum(0)
        else:
            merged = dare_linear(flat, w, density=1.0 - drop)
    return _unflat(merged, base)


def _orthogonalise(M: torch.Tensor) -> torch.Tensor:
    """The nearest matrix with orthonormal columns: ``P Q^T`` from ``M = P S Q^T``."""
    P, _, Qh = torch.linalg.svd(M, full_matrices=False)
    return P @ Qh


def merge_tsv(base, task_vectors, *, alpha: float = 1.0) -> dict[str, torch.Tensor]:
    """Task Singular Vectors merge (TSV-M).

    For every 2-D weight, each task's update ``Delta_t = U_t S_t V_t^T`` keeps its top
    ``k = floor(min(m, n) / T)`` singular triplets; the kept U's and V's are concatenated,
    orthogonalised (``U_perp = P Q^T`` from the SVD ``U_cat = P S Q^T``, likewise V), and the
    update is rebuilt as ``U_perp diag(S_cat) V_perp^T``. Other parameters (biases) are
    averaged. The merged model is ``theta_0 + alpha * Delta``.

    Parameters
    ----------
    base, task_vectors
        As in :func:`merge_weight_average`.
    alpha : float
        Final scaling (> 0, the paper's 1.0).

    Returns
    -------
    dict of str to torch.Tensor

    References
    ----------
    Gargiulo et al., "Task Singular Vectors: Reducing Task Interference in Model Merging",
    CVPR 2025.
    """
    _check_vectors(base, task_vectors)
    alpha = check_real(alpha, "alpha", lo=0.0, lo_open=True)
    T = len(task_vectors)
    out = {}
    for key, b in base.items():
        deltas = [tv[key] for tv in task_vectors]
        if b.dim() != 2:
            out[key] = b + alpha * torch.stack(deltas).mean(0)
            continue
        k = max(1, min(b.shape) // T)
        Us, Ss, Vs = [], [], []
        for d in deltas:
            U, S, Vh = torch.linalg.svd(d.double(), full_matrices=False)  # (m, r), (r,), (r, n); float64 for stability
            Us.append(U[:, :k])
            Ss.append(S[:k])
            Vs.append(Vh[:k].T)
        U_cat, S_cat, V_cat = torch.cat(Us, 1), torch.cat(Ss), torch.cat(Vs, 1)  # (m, Tk), (Tk,), (n, Tk)
        delta = _orthogonalise(U_cat) @ torch.diag(S_cat) @ _orthogonalise(V_cat).T
        out[key] = b + alpha * delta.to(b.dtype)
    return out


def merge_pair(
    method: str, base, task_vectors, *, alpha: float = 1.0, random_state: RandomState = 0, ties: Mapping | None = None
):
    """Dispatch to one of :data:`MERGE_METHODS` with the paper's settings (TIES: :data:`TIES_AUTHORS`).

    ``alpha`` is used by ``"arithmetic"`` only; ``random_state`` by ``"dare"`` only; ``ties``
    (keyword arguments of :func:`merge_ties`, default :data:`TIES_AUTHORS`) by ``"ties"`` only.
    """
    if method == "weight_avg":
        return merge_weight_average(base, task_vectors)
    if method == "arithmetic":
        return merge_task_arithmetic(base, task_vectors, alpha)
    if method == "ties":
        return merge_ties(base, task_vectors, **_ties_kwargs(ties))
    if method == "dare":
        return merge_dare(base, task_vectors, random_state=random_state)
    if method == "tsv":
        return merge_tsv(base, task_vectors)
    raise ValueError(f"method={method!r} is not a merge method; use one of {', '.join(MERGE_METHODS)}")


def _pair_accuracy(merged: list[dict], ft: FineTuned, tasks: DigitTasks, pairs, split: str) -> np.ndarray:
    """Accuracy (P, 2) of each merged backbone with the two tasks' own heads on ``split``."""
    X = torch.from_numpy(getattr(tasks, "X_" + split))
    y = torch.from_numpy(getattr(tasks, "y_" + split))
    mask = _class_mask(tasks.n_classes)
    out = np.zeros((len(pairs), 2))
    for side in (0, 1):
        idx = torch.tensor([pr[side] for pr in pairs])
        p = {k: torch.stack([m[k] for m in merged]) for k in _PARAM_KEYS}
        out[:, side] = _accuracy(p, ft.head_weight[idx], ft.head_bias[idx], X[idx], y[idx], mask[idx])
    return out


def score_pair_merges(
    base,
    ft: FineTuned,
    tasks: DigitTasks,
    pairs: Sequence[tuple[int, int]],
    *,
    methods: Sequence[str] = MERGE_METHODS,
    alphas: Sequence[float] = (0.3, 0.5, 0.7, 1.0),
    ties: Mapping | None = None,
    random_state: RandomState = 0,
) -> dict[str, dict[str, np.ndarray]]:
    """Merge every pair by every method and score the merged backbone.

    The target of the paper: normalised accuracy
    ``y = 1/2 * sum_{t in {a, b}} acc(theta_M, t) / acc(theta_t, t)`` on the test splits,
    each task read out with its own head. Task arithmetic picks its ``alpha`` per pair
    from ``alphas`` by the same normalised accuracy on the validation splits.

    Parameters
    ----------
    base : dict
        Pretrained backbone.
    ft : FineTuned
        The fine-tuned models.
    tasks : DigitTasks
        Their data.
    pairs : sequence of (a, b)
        Task index pairs.
    methods : sequence of str
        Subset of :data:`MERGE_METHODS`.
    alphas : sequence of float
        Task-arithmetic grid (one value: that alpha for every pair, the authors' 0.3).
    ties : dict, optional
        Keyword arguments of :func:`merge_ties` (default :data:`TIES_AUTHORS`;
        :data:`TIES_GLOBAL` is the earlier global trim at scale 1).
    random_state : int, Generator or None
        Seeds DARE (one seed per pair drawn from it).

    Returns
    -------
    dict
        ``result[method]`` holds ``"normalised"`` (P,), ``"accuracy"`` (P, 2) and, for
        task arithmetic, ``"alpha"`` (P,).

    Raises
    ------
    TypeError
        For ``ft``/``tasks`` of the wrong type, or ``methods`` given as one string.
    ValueError
        For bad pairs, unknown or no methods, or non-positive ``alphas``.
    """
    base = _check_backbone(base)
    if not isinstance(ft, FineTuned) or not isinstance(tasks, DigitTasks):
        raise TypeError("ft must be a FineTuned and tasks a DigitTasks")
    pairs = _check_pairs(pairs, tasks.n_tasks)
    if isinstance(methods, (str, bytes)):
        raise TypeError(f"methods={methods!r} is a single string; give a list of merge methods, e.g. [{methods!r}]")
    bad = [m for m in methods if m not in MERGE_METHODS]
    if bad or not methods:
        raise ValueError(f"methods {bad or list(methods)} are not merge methods; use some of {', '.join(MERGE_METHODS)}")
    alphas = [check_real(a, "alpha", lo=0.0, lo_open=True) for a in alphas]
    if not alphas:
        raise ValueError("alphas must hold at least one value")
    ties = _ties_kwargs(ties)
    rng = check_random_state(random_state)
    tvs = [ft.task_vector(base, t) for t in range(tasks.n_tasks)]
    ref_test, ref_val = ft.test_accuracy, ft.val_accuracy
    a_idx, b_idx = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])

    def normalised(acc, ref):
        return 0.5 * (acc[:, 0] / ref[a_idx] + acc[:, 1] / ref[b_idx])

    out: dict[str, dict[str, np.ndarray]] = {}
    dare_seeds = rng.integers(0, 2**31, size=len(pairs))
    for m in methods:
        if m == "arithmetic":
            val = np.stack(
                [
                    normalised(
                        _pair_accuracy(
                            [merge_task_arithmetic(base, [tvs[a], tvs[b]], al) for a, b in pairs], ft, tasks, pairs, "val"
                        ),
                        ref_val,
                    )
                    for al in alphas
                ],
                1,
            )  # (P, n_alpha)
            best = np.array(alphas)[val.argmax(1)]
            merged = [merge_task_arithmetic(base, [tvs[a], tvs[b]], float(al)) for (a, b), al in zip(pairs, best, strict=True)]
        else:
            best = None
            merged = [
                merge_pair(m, base, [tvs[a], tvs[b]], random_state=int(s), ties=ties)
                for (a, b), s in zip(pairs, dare_seeds, strict=True)
            ]
        acc = _pair_accuracy(merged, ft, tasks, pairs, "test")
        out[m] = {"normalised": normalised(acc, ref_test), "accuracy": acc}
        if best is not None:
            out[m]["alpha"] = best
    return out
