"""The paper's 28 pairwise metrics (weight, rank, subspace, activation, gradient), vectorised.

:data:`METRIC_FAMILIES` and :data:`METRIC_NAMES` (names as in the authors' registry),
:func:`pairwise_metrics` (all pairs at once from per-task profiles),
:func:`pairwise_metrics_loop` (the same, one pair at a time: the check of the batching),
and the calibration samples of the gradient metrics: :data:`GRAD_SAMPLES`,
:func:`gradient_sample_draws` (the authors' draws) and :func:`gradient_weights`.

References
----------
L. Zhou, B. Zhao, R. Yu, E. Rodolà, "Demystifying Mergeability: Interpretable Properties
to Predict Model Merging Success", ICML 2026, arXiv:2601.22285. Code:
https://github.com/Rose-STL-Lab/demystifying-mergeability.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .._common import check_int
from .models import _PARAM_KEYS, HEAD_WIDTH, FineTuned, _backbone_forward, _check_backbone, _class_mask, _flat, _logits
from .tasks import N_PIXELS, DigitTasks, _check_pairs, task_pairs

__all__ = [
    "GRAD_SAMPLES",
    "METRIC_FAMILIES",
    "METRIC_NAMES",
    "gradient_sample_draws",
    "gradient_weights",
    "pairwise_metrics",
    "pairwise_metrics_loop",
]


METRIC_FAMILIES: dict[str, tuple[str, ...]] = {
    "weight": (
        "task_vector_cosine_similarity",
        "task_vector_l2_distance",
        "task_vector_dot_product",
        "weight_space_angle",
        "task_vector_magnitude_ratio",
    ),
    "rank": (
        "effective_rank",
        "effective_rank_mergeability_score",
        "stable_rank",
        "spectral_gap",
        "singular_value_ratio",
        "layerwise_effective_rank",
        "layerwise_effective_rank_mergeability_score",
    ),
    "subspace": (
        "singular_value_overlap",
        "subspace_overlap",
        "right_subspace_overlap_top_k",
        "right_subspace_overlap_bottom_k",
        "interaction_matrix_overlap_top_k",
        "interaction_matrix_overlap_bottom_k",
    ),
    "activation": (
        "activation_l2_distance",
        "activation_cosine_similarity",
        "activation_magnitude_ratio",
        "activation_dot_product",
    ),
    "gradient": (
        "encoder_gradient_cosine_similarity",
        "encoder_gradient_l2_distance",
        "encoder_gradient_dot_product",
        "input_gradient_cosine_similarity",
        "input_gradient_l2_distance",
        "input_gradient_dot_product",
    ),
}
"""The paper's 28 pairwise metrics by family (names as in the authors' registry)."""

METRIC_NAMES: tuple[str, ...] = tuple(n for fam in METRIC_FAMILIES.values() for n in fam)


@dataclass
class _Profiles:
    """Per-task quantities the pair metrics are built from (float64)."""

    keys: list[str]
    tv: list[dict]  # T task vectors
    flat: torch.Tensor  # (T, D)
    act: torch.Tensor  # (T, H) mean activation on the calibration set
    grad: torch.Tensor  # (T, D) mean encoder gradient of each model's own loss
    igrad: torch.Tensor  # (T, n*64) per-sample input gradients, concatenated


GRAD_SAMPLES = ("random-test", "first-train")
"""Which samples the gradient metrics use: ``"random-test"`` (the authors' draws) or ``"first-train"`` (earlier)."""


def _check_grad_args(grad_samples, grad_batch, grad_seed):
    if grad_samples not in GRAD_SAMPLES:
        raise ValueError(f"grad_samples={grad_samples!r} is not a choice; use one of {', '.join(GRAD_SAMPLES)}")
    if grad_batch is not None:
        grad_batch = check_int(grad_batch, "grad_batch")
    if isinstance(grad_seed, bool) or not isinstance(grad_seed, (int, np.integer)):
        raise TypeError(f"grad_seed={grad_seed!r} must be an integer")
    return grad_samples, grad_batch, int(grad_seed)


def gradient_sample_draws(n_available: int, n_grad: int, *, grad_seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """The authors' calibration draws for the gradient metrics of one pair: two sorted index sets.

    ``random.seed(grad_seed)``, then ``random.sample(range(n_available), n_grad)`` for the
    pair's first task and again, from the same stream, for its second (the authors'
    ``build_pairwise_calibration_loader``, called afresh for every pair, so every pair
    draws the same two sets; each set is sorted).

    Parameters
    ----------
    n_available : int
        Size of the split drawn from (the test split).
    n_grad : int
        Samples per task, ``1 <= n_grad <= n_available``.
    grad_seed : int
        The seed reset for every pair (the authors': 42).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Index sets (n_grad,) of the first and the second task of a pair.
    """
    import random

    n_available, n_grad = check_int(n_available, "n_available"), check_int(n_grad, "n_grad")
    if n_grad > n_available:
        raise ValueError(f"n_grad={n_grad} exceeds the {n_available} samples available")
    r = random.Random(int(grad_seed))
    first = sorted(r.sample(range(n_available), n_grad))
    second = sorted(r.sample(range(n_available), n_grad))
    return np.array(first), np.array(second)


def gradient_weights(n: int, batch: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample weights of the encoder- and input-gradient metrics over ``n`` samples.

    ``batch=None`` is the plain average the paper's text names: encoder gradient
    ``(1/n) sum_i g_i``, input gradients ``x_i -> (1/n) dl_i/dx_i``. A ``batch`` size is the
    authors' computation: batches of ``batch`` in order, the mean loss of each batch
    back-propagated, the encoder gradients summed over batches and divided by ``n``
    (weight ``1 / (n n_k)`` for a sample in a batch of ``n_k``), the input gradient of each
    sample that of its batch's mean loss (weight ``1 / n_k``). With ``n = 10`` and batches of
    eight, the last two samples weigh four times as much as the others.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Encoder weights (n,) and input weights (n,).
    """
    n = check_int(n, "n")
    if batch is None:
        return np.full(n, 1.0 / n), np.full(n, 1.0 / n)
    batch = check_int(batch, "batch")
    nk = np.array([min(batch, n - (i // batch) * batch) for i in range(n)], dtype=float)
    return 1.0 / (n * nk), 1.0 / nk


def _gradients(p, hw, hb, mask, X: np.ndarray, y: np.ndarray, grad_batch: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Encoder gradients (T, D) and concatenated input gradients (T, n*64) of T models on their own samples."""
    T, n = y.shape
    keys = list(_PARAM_KEYS)
    Xt = torch.from_numpy(X).double().requires_grad_(True)
    p = {k: v.detach().clone().requires_grad_(True) for k, v in p.items()}
    z = _logits(p, hw, hb, Xt, mask)
    loss = torch.nn.functional.cross_entropy(z.reshape(-1, HEAD_WIDTH), torch.from_numpy(y).reshape(-1), reduction="none")
    if grad_batch is None:
        loss = loss.reshape(T, n).mean(1).sum()
        scale_in = 1.0
    else:
        w_enc, w_in = gradient_weights(n, grad_batch)
        loss = (loss.reshape(T, n) * torch.from_numpy(w_enc)).sum()
        scale_in = torch.from_numpy(w_in / w_enc)[None, :, None]  # input weights from the encoder-weighted loss
    grads = torch.autograd.grad(loss, [*[p[k] for k in keys], Xt])
    grad = torch.cat([g.reshape(T, -1) for g in grads[:-1]], 1)
    igrad = (grads[-1] * scale_in).reshape(T, -1)
    return grad.detach(), igrad.detach()


def _profiles(
    base,
    ft: FineTuned,
    tasks: DigitTasks,
    task_ids: Sequence[int],
    n_grad: int,
    n_act: int,
    grad_samples: str = "first-train",
    grad_batch: int | None = None,
    grad_seed: int = 42,
    draws: Sequence[int] = (0,),
) -> _Profiles:
    """Per-task profiles; the gradients of ``task_ids[i]`` are taken on draw ``draws[i]`` (0: first, 1: second)."""
    keys = list(_PARAM_KEYS)
    ids = torch.as_tensor(list(task_ids))
    tv = [{k: (ft.params[k][t] - base[k]).double() for k in keys} for t in task_ids]
    flat = torch.stack([_flat(v, keys) for v in tv])
    mask = _class_mask(tasks.n_classes)[ids]
    p = {k: ft.params[k][ids].double().clone() for k in keys}
    hw, hb = ft.head_weight[ids].double(), ft.head_bias[ids].double()
    # activation: every model on the same pooled calibration set (n_act samples of each task)
    Xall = torch.from_numpy(tasks.X_val[list(task_ids), :n_act].reshape(-1, N_PIXELS)).double()
    with torch.no_grad():
        act = _backbone_forward(p, Xall.expand(len(task_ids), -1, -1)).mean(1)  # (T, H)
    if grad_samples == "first-train":
        # each model, its own loss, on its own first n_grad training samples
        X, y = tasks.X_train[list(task_ids), :n_grad], tasks.y_train[list(task_ids), :n_grad]
    else:
        # the authors' draws from the test split: the pair's first task on the first set, its second on the second
        sets = gradient_sample_draws(tasks.X_test.shape[1], n_grad, grad_seed=grad_seed)
        idx = np.stack([sets[d] for d in (draws if len(draws) == len(task_ids) else [draws[0]] * len(task_ids))])
        tid = np.asarray(list(task_ids))[:, None]
        X, y = tasks.X_test[tid, idx], tasks.y_test[tid, idx]
    grad, igrad = _gradients(p, hw, hb, mask, np.ascontiguousarray(X), np.ascontiguousarray(y), grad_batch)
    return _Profiles(keys, tv, flat, act.detach(), grad, igrad)


def _vec_pair_stats(V: torch.Tensor, a: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
    """cosine, L2 distance, dot and magnitude ratio of rows a and b of V, from the Gram matrix."""
    G = V @ V.T
    n = torch.sqrt(torch.diag(G))
    dot = G[a, b]
    na, nb = n[a], n[b]
    l2 = torch.sqrt(torch.clamp(G[a, a] + G[b, b] - 2 * dot, min=0.0))
    cos = dot / torch.clamp(na * nb, min=1e-300)
    ratio = torch.where((na < 1e-8) | (nb < 1e-8), torch.zeros_like(na), torch.minimum(na, nb) / torch.maximum(na, nb))
    return {"cos": cos.numpy(), "l2": l2.numpy(), "dot": dot.numpy(), "ratio": ratio.numpy()}


def _two_row_svals(gaa, gbb, gab) -> torch.Tensor:
    """Singular values (P, 2) of the 2 x D stack [u; v] from its Gram entries (descending)."""
    tr, det = gaa + gbb, gaa * gbb - gab**2
    disc = torch.sqrt(torch.clamp(tr**2 / 4 - det, min=0.0))
    lam = torch.stack([tr / 2 + disc, torch.clamp(tr / 2 - disc, min=0.0)], 1)
    return torch.sqrt(lam)


def _rank_stats(S: torch.Tensor) -> dict[str, torch.Tensor]:
    """The authors' effective rank, stable rank, spectral gap and sigma2/sigma1 from S (P, 2)."""
    Sn = S / (S.sum(1, keepdim=True) + 1e-10)
    er = torch.exp(-(Sn * torch.log(Sn + 1e-10)).sum(1))
    return {
        "effective_rank": er,
        "effective_rank_mergeability_score": torch.clamp(2.0 - er, 0.0, 1.0),
        "stable_rank": S.sum(1) ** 2 / ((S**2).sum(1) + 1e-10),
        "spectral_gap": (S[:, 0] - S[:, 1]) / (S[:, 0] + 1e-10),
        "singular_value_ratio": S[:, 1] / (S[:, 0] + 1e-10),
    }


def pairwise_metrics(
    base,
    ft: FineTuned,
    tasks: DigitTasks,
    pairs: Sequence[tuple[int, int]] | None = None,
    *,
    n_grad: int = 10,
    n_act: int = 10,
    subspace_k: int = 10,
    sv_k: int = 100,
    grad_samples: str = "random-test",
    grad_batch: int | None = None,
    grad_seed: int = 42,
) -> np.ndarray:
    """The 28 pairwise metrics of :data:`METRIC_NAMES` for every pair, vectorised.

    Per task, once: the task vector and the SVD of each 2-D update; the mean activation of
    the last hidden layer on a pooled calibration set (``n_act`` validation samples of
    every task); the mean gradient of the model's own loss on ``n_grad`` samples of its own
    task w.r.t. the backbone (encoder gradient) and the per-sample gradients w.r.t. the
    inputs (input gradient, concatenated). The samples are the authors' draws
    (:func:`gradient_sample_draws`: ``n_grad`` random test samples, the seed reset for every
    pair, so a pair's first task always gets the first set and its second task the second)
    or, with ``grad_samples="first-train"``, each task's first ``n_grad`` training samples
    (both tasks then see the same base images); the weights are
    :func:`gradient_weights` (``grad_batch=None``: the plain average of the paper's text;
    ``grad_batch=8``: the authors' code). Per pair, from those: Gram-matrix quantities
    (cosine, L2 distance, dot, angle in degrees, magnitude ratio min/max), the two singular
    values of the 2 x D stack [tau_a; tau_b] (closed form from the 2 x 2 Gram), per-layer
    2 x d stacks weighted by ``||tau_a|| + ||tau_b||`` (layer-wise effective rank), and per
    2-D layer, averaged over layers: cosine of the top-``sv_k`` normalised singular values,
    ``||U_a,k^T U_b,k||_F / k`` (left), ``||V_a,k^T V_b,k||_F / sqrt(k)`` (right, top and
    bottom k) and the mean squared singular value of ``V_a,k^T V_b,k`` (interaction).

    Parameters
    ----------
    base : dict
        Pretrained backbone.
    ft : FineTuned
        The fine-tuned models.
    tasks : DigitTasks
        Their data.
    pairs : sequence of (a, b), optional
        Task pairs (default: all pairs).
    n_grad, n_act : int
        Samples per task for the gradient and activation metrics (the paper: 10).
    subspace_k, sv_k : int
        k of the subspace overlaps (10) and of the singular-value overlap (100).
    grad_samples : {"random-test", "first-train"}
        Which samples the gradient metrics use (see above).
    grad_batch : int, optional
        None: the plain average; an int: the authors' batches of that size.
    grad_seed : int
        The seed of the authors' draws (42), reset for every pair.

    Returns
    -------
    numpy.ndarray, shape (P, 28)
        Columns in the order of :data:`METRIC_NAMES`.

    References
    ----------
    Zhou et al. (2026), Sec. 3; the authors' ``compute_all_svd_metrics`` and registry.
    """
    base, pairs, n_grad, n_act, subspace_k, sv_k = _check_metric_args(base, ft, tasks, pairs, n_grad, n_act, subspace_k, sv_k)
    grad_samples, grad_batch, grad_seed = _check_grad_args(grad_samples, grad_batch, grad_seed)
    used = sorted({t for pr in pairs for t in pr})
    pos = {t: i for i, t in enumerate(used)}
    based = {k: v.double() for k, v in base.items()}
    gkw = dict(grad_samples=grad_samples, grad_batch=grad_batch, grad_seed=grad_seed)
    prof = _profiles(based, ft, tasks, used, n_grad, n_act, **gkw, draws=(0,))
    a = np.array([pos[p[0]] for p in pairs])
    b = np.array([pos[p[1]] for p in pairs])
    if grad_samples == "first-train":
        enc, inp, gb = prof.grad, prof.igrad, b
    else:
        # every task's gradients on both draws; a pair reads its first task's on the first, its second's on the second
        prof2 = _profiles(based, ft, tasks, used, n_grad, n_act, **gkw, draws=(1,))
        enc, inp, gb = torch.cat([prof.grad, prof2.grad]), torch.cat([prof.igrad, prof2.igrad]), b + len(used)
    cols: dict[str, np.ndarray] = {}
    w = _vec_pair_stats(prof.flat, a, b)
    cols["task_vector_cosine_similarity"] = w["cos"]
    cols["task_vector_l2_distance"] = w["l2"]
    cols["task_vector_dot_product"] = w["dot"]
    cols["weight_space_angle"] = np.degrees(np.arccos(np.clip(w["cos"], -1.0, 1.0)))
    cols["task_vector_magnitude_ratio"] = w["ratio"]
    G = prof.flat @ prof.flat.T
    for k, v in _rank_stats(_two_row_svals(G[a, a], G[b, b], G[a, b])).items():
        cols[k] = v.numpy()
    # layer-wise effective rank (each parameter tensor is a layer, as in the authors' code)
    num, den = torch.zeros(len(pairs), dtype=torch.float64), torch.zeros(len(pairs), dtype=torch.float64)
    for key in prof.keys:
        L = torch.stack([tv[key].reshape(-1) for tv in prof.tv])
        Gl = L @ L.T
        nl = torch.sqrt(torch.diag(Gl))
        ok = ((nl[a] >= 1e-10) & (nl[b] >= 1e-10)).double()
        er = _rank_stats(_two_row_svals(Gl[a, a], Gl[b, b], Gl[a, b]))["effective_rank"]
        wgt = (nl[a] + nl[b]) * ok
        num += er * wgt
        den += wgt
    lw = torch.where(den > 0, num / torch.clamp(den, min=1e-300), torch.full_like(den, 2.0))
    cols["layerwise_effective_rank"] = lw.numpy()
    cols["layerwise_effective_rank_mergeability_score"] = torch.clamp(2.0 - lw, 0.0, 1.0).numpy()
    # per-layer subspace metrics
    acc = {n: np.zeros(len(pairs)) for n in METRIC_FAMILIES["subspace"]}
    mats = [k for k in prof.keys if prof.tv[0][k].dim() == 2]
    for key in mats:
        U, S, Vh = torch.linalg.svd(torch.stack([tv[key] for tv in prof.tv]), full_matrices=False)  # (T,m,r),(T,r),(T,r,n)
        r = S.shape[1]
        ksv = min(sv_k, r)
        Sn = S[:, :ksv] / (S.sum(1, keepdim=True) + 1e-8)
        acc["singular_value_overlap"] += (torch.nn.functional.cosine_similarity(Sn[a], Sn[b], dim=1)).numpy()
        k = min(subspace_k, r)
        left = U[a][:, :, :k].transpose(1, 2) @ U[b][:, :, :k]
        acc["subspace_overlap"] += (torch.linalg.matrix_norm(left) / k).numpy()
        for tag, sl in (("top_k", slice(0, k)), ("bottom_k", slice(r - k, r))):
            M = Vh[a][:, sl] @ Vh[b][:, sl].transpose(1, 2)  # (P, k, k)
            acc[f"right_subspace_overlap_{tag}"] += (torch.linalg.matrix_norm(M) / math.sqrt(k)).numpy()
            acc[f"interaction_matrix_overlap_{tag}"] += (torch.linalg.svdvals(M) ** 2).mean(1).numpy()
    for n, v in acc.items():
        cols[n] = v / max(len(mats), 1)
    s = _vec_pair_stats(prof.act, a, b)
    cols.update(
        {
            "activation_l2_distance": s["l2"],
            "activation_cosine_similarity": s["cos"],
            "activation_magnitude_ratio": s["ratio"],
            "activation_dot_product": s["dot"],
        }
    )
    for prefix, V in (("encoder", enc), ("input", inp)):
        s = _vec_pair_stats(V, a, gb)
        cols[f"{prefix}_gradient_cosine_similarity"] = s["cos"]
        cols[f"{prefix}_gradient_l2_distance"] = s["l2"]
        cols[f"{prefix}_gradient_dot_product"] = s["dot"]
    return np.stack([np.asarray(cols[n], dtype=float) for n in METRIC_NAMES], 1)


def _check_metric_args(base, ft, tasks, pairs, n_grad, n_act, subspace_k, sv_k):
    base = _check_backbone(base)
    if not isinstance(ft, FineTuned) or not isinstance(tasks, DigitTasks):
        raise TypeError("ft must be a FineTuned and tasks a DigitTasks")
    pairs = task_pairs(tasks.n_tasks) if pairs is None else _check_pairs(pairs, tasks.n_tasks)
    n_grad = check_int(n_grad, "n_grad")
    n_act = check_int(n_act, "n_act")
    n_g = min(tasks.X_train.shape[1], tasks.X_test.shape[1])
    if n_grad > n_g or n_act > tasks.X_val.shape[1]:
        raise ValueError(
            f"n_grad={n_grad} / n_act={n_act} exceed the train-and-test / val split sizes {n_g} / {tasks.X_val.shape[1]}"
        )
    return base, pairs, n_grad, n_act, check_int(subspace_k, "subspace_k"), check_int(sv_k, "sv_k")


def pairwise_metrics_loop(
    base,
    ft: FineTuned,
    tasks: DigitTasks,
    pairs: Sequence[tuple[int, int]] | None = None,
    *,
    n_grad: int = 10,
    n_act: int = 10,
    subspace_k: int = 10,
    sv_k: int = 100,
    grad_samples: str = "random-test",
    grad_batch: int | None = None,
    grad_seed: int = 42,
) -> np.ndarray:
    """The same 28 metrics as :func:`pairwise_metrics`, one pair at a time: our own per-pair loop.

    Written pair by pair in the order of the authors' code (every pair recomputes both
    models' activations and gradients, the SVD of the stacked task vectors and the SVDs
    of every 2-D update), but it is ours, not the authors' code, and it shares the
    per-task helpers (forward pass, gradients, rank statistics) with
    :func:`pairwise_metrics`: it checks the batching over pairs, not those helpers.
    Parameters and return value as in :func:`pairwise_metrics`.
    """
    base, pairs, n_grad, n_act, subspace_k, sv_k = _check_metric_args(base, ft, tasks, pairs, n_grad, n_act, subspace_k, sv_k)
    grad_samples, grad_batch, grad_seed = _check_grad_args(grad_samples, grad_batch, grad_seed)
    used = sorted({t for pr in pairs for t in pr})
    based = {k: v.double() for k, v in base.items()}
    rows = []
    for pa, pb in pairs:
        prof = _profiles(
            based,
            ft,
            tasks,
            [pa, pb],
            n_grad,
            n_act,
            grad_samples=grad_samples,
            grad_batch=grad_batch,
            grad_seed=grad_seed,
            draws=(0, 1),
        )
        # the activation calibration set pools every task of the experiment, as in pairwise_metrics
        Xall = torch.from_numpy(tasks.X_val[used, :n_act].reshape(-1, N_PIXELS)).double()
        pp = {k: ft.params[k][[pa, pb]].double() for k in _PARAM_KEYS}
        with torch.no_grad():
            act = _backbone_forward(pp, Xall.expand(2, -1, -1)).mean(1)
        ta, tb = prof.tv
        va, vb = prof.flat[0], prof.flat[1]
        r: dict[str, float] = {}

        def vec(u, v):
            cos = float(torch.nn.functional.cosine_similarity(u[None], v[None]))
            nu, nv = float(u.norm()), float(v.norm())
            ratio = 0.0 if nu < 1e-8 or nv < 1e-8 else min(nu, nv) / max(nu, nv)
            return cos, float((u - v).norm()), float(u @ v), ratio

        cos, l2, dot, ratio = vec(va, vb)
        r.update(
            task_vector_cosine_similarity=cos,
            task_vector_l2_distance=l2,
            task_vector_dot_product=dot,
            weight_space_angle=math.degrees(math.acos(max(-1.0, min(1.0, cos)))),
            task_vector_magnitude_ratio=ratio,
        )
        S = torch.linalg.svdvals(torch.stack([va, vb]))[None]
        r.update({k: float(v[0]) for k, v in _rank_stats(S).items()})
        ranks, wts = [], []
        for key in prof.keys:
            da, db = ta[key].reshape(-1), tb[key].reshape(-1)
            if da.norm() < 1e-10 or db.norm() < 1e-10:
                continue
            ranks.append(float(_rank_stats(torch.linalg.svdvals(torch.stack([da, db]))[None])["effective_rank"][0]))
            wts.append(float(da.norm() + db.norm()))
        lw = sum(x * y for x, y in zip(ranks, wts, strict=True)) / sum(wts) if ranks else 2.0
        r.update(layerwise_effective_rank=lw, layerwise_effective_rank_mergeability_score=max(0.0, min(1.0, 2.0 - lw)))
        sub = {n: [] for n in METRIC_FAMILIES["subspace"]}
        for key in prof.keys:
            if ta[key].dim() != 2:
                continue
            u1, s1, v1 = torch.linalg.svd(ta[key], full_matrices=False)
            u2, s2, v2 = torch.linalg.svd(tb[key], full_matrices=False)
            ksv = min(sv_k, len(s1))
            sub["singular_value_overlap"].append(
                float(
                    torch.nn.functional.cosine_similarity(
                        (s1[:ksv] / (s1.sum() + 1e-8))[None], (s2[:ksv] / (s2.sum() + 1e-8))[None]
                    )
                )
            )
            k = min(subspace_k, u1.shape[1])
            sub["subspace_overlap"].append(float(torch.linalg.matrix_norm(u1[:, :k].T @ u2[:, :k])) / k)
            for tag, (x1, x2) in (("top_k", (v1[:k], v2[:k])), ("bottom_k", (v1[-k:], v2[-k:]))):
                M = x1 @ x2.T
                sub[f"right_subspace_overlap_{tag}"].append(float(torch.linalg.matrix_norm(M)) / math.sqrt(k))
                sub[f"interaction_matrix_overlap_{tag}"].append(float((torch.linalg.svdvals(M) ** 2).mean()))
        r.update({n: sum(v) / len(v) for n, v in sub.items()})
        cos, l2, dot, ratio = vec(act[0], act[1])
        r.update(
            activation_l2_distance=l2,
            activation_cosine_similarity=cos,
            activation_magnitude_ratio=ratio,
            activation_dot_product=dot,
        )
        for prefix, V in (("encoder", prof.grad), ("input", prof.igrad)):
            cos, l2, dot, _ = vec(V[0], V[1])
            r.update(
                {
                    f"{prefix}_gradient_cosine_similarity": cos,
                    f"{prefix}_gradient_l2_distance": l2,
                    f"{prefix}_gradient_dot_product": dot,
                }
            )
        rows.append([r[n] for n in METRIC_NAMES])
    return np.asarray(rows, dtype=float)
