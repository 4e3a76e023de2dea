"""Predicting model-merging success from interpretable pairwise metrics.

The pipeline of Zhou, Zhao, Yu & Rodolà (ICML 2026) at laptop scale: a backbone
pretrained on half of scikit-learn's digits, fine-tuned on tasks built from the other
half (input transforms x label maps), pairs of fine-tuned models merged by five methods,
28 pairwise metrics per pair, and a per-method sparse linear predictor that maximises
the Pearson correlation with the post-merge normalised accuracy, fitted
leave-one-task-out.

Merges: weight averaging, task arithmetic, TIES and DARE (the last three through
``peft.utils.merge_utils``) and TSV-Merge (written here). Metrics follow the names of the
authors' ``METRIC_REGISTRY``.

References
----------
L. Zhou, B. Zhao, R. Yu, E. Rodolà, "Demystifying Mergeability: Interpretable Properties
to Predict Model Merging Success", ICML 2026, arXiv:2601.22285. Code:
https://github.com/Rose-STL-Lab/demystifying-mergeability (``src/model_merging/metrics/
mergeability.py``, ``scripts/linear_optimization_loto_l1.py``).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ._common import RandomState, check_int, check_random_state, check_real, seed_from, torch_generator

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

TASK_TRANSFORMS: tuple[str, ...] = ("identity", "hflip", "rot90", "invert", "permute", "noise")
"""Input transforms of an 8x8 digit (pixel values scaled to [0, 1])."""

LABEL_MAPS: dict[str, int] = {"digit": 10, "parity": 2, "ge5": 2, "mod3": 3}
"""Label maps and their number of classes: the digit, its parity, digit >= 5, digit mod 3."""

DEFAULT_TASKS: tuple[tuple[str, str], ...] = (
    ("identity", "parity"),
    ("identity", "ge5"),
    ("identity", "mod3"),
    ("hflip", "digit"),
    ("hflip", "parity"),
    ("rot90", "digit"),
    ("rot90", "ge5"),
    ("invert", "digit"),
    ("invert", "mod3"),
    ("permute", "digit"),
    ("noise", "digit"),
    ("noise", "parity"),
)
"""The twelve (transform, label map) tasks of the chapter: 66 pairs."""

MERGE_METHODS: tuple[str, ...] = ("weight_avg", "arithmetic", "ties", "dare", "tsv")

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

N_PIXELS = 64
HEAD_WIDTH = 10  # every head has 10 outputs; classes beyond a task's count are masked out
_PARAM_KEYS = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")


# ----------------------------------------------------------------------------- data


@dataclass(frozen=True)
class DigitTasks:
    """Digits-derived tasks on shared base images.

    Attributes
    ----------
    names : tuple of str
        ``"transform/label map"`` per task, length T.
    n_classes : numpy.ndarray, shape (T,)
        Classes per task.
    X_pretrain, y_pretrain : numpy.ndarray, shapes (n_pre, 64), (n_pre,)
        The pretraining half (identity transform, ten classes).
    X_train, X_val, X_test : numpy.ndarray, shape (T, n_split, 64)
        Transformed inputs per task; the same base images in every task.
    y_train, y_val, y_test : numpy.ndarray, shape (T, n_split)
        Mapped labels per task.
    """

    names: tuple[str, ...]
    n_classes: np.ndarray
    X_pretrain: np.ndarray
    y_pretrain: np.ndarray
    X_train: np.ndarray
    y_train: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray

    @property
    def n_tasks(self) -> int:
        """Number of tasks T."""
        return len(self.names)


def _transform(X: np.ndarray, name: str, perm: np.ndarray, noise: np.ndarray) -> np.ndarray:
    img = X.reshape(-1, 8, 8)
    if name == "identity":
        out = img
    elif name == "hflip":
        out = img[:, :, ::-1]
    elif name == "rot90":
        out = np.rot90(img, k=1, axes=(1, 2))
    elif name == "invert":
        out = 1.0 - img
    elif name == "permute":
        out = img.reshape(-1, N_PIXELS)[:, perm]
    else:  # noise
        out = np.clip(img.reshape(-1, N_PIXELS) + noise[: len(img)], 0.0, 1.0)
    return np.ascontiguousarray(np.asarray(out).reshape(-1, N_PIXELS), dtype=np.float32)


def _label(y: np.ndarray, name: str) -> np.ndarray:
    return {"digit": y, "parity": y % 2, "ge5": (y >= 5).astype(int), "mod3": y % 3}[name].astype(np.int64)


def make_digit_tasks(
    tasks: Sequence[tuple[str, str]] = DEFAULT_TASKS,
    *,
    noise_sd: float = 0.3,
    random_state: RandomState = 0,
) -> DigitTasks:
    """Split scikit-learn's digits in half and build the fine-tuning tasks on the second half.

    A seeded permutation splits the 1797 images: the first half pretrains the backbone
    (ten classes, no transform); the second half is split 60/20/20 into train / val /
    test, and every task applies its transform (``TASK_TRANSFORMS``) and label map
    (``LABEL_MAPS``) to the same base images. The pixel permutation and the Gaussian
    noise (sd ``noise_sd`` in [0, 1] pixel units) are drawn once from ``random_state``.

    Parameters
    ----------
    tasks : sequence of (transform, label map)
        Distinct tasks, at least two.
    noise_sd : float
        Noise level of the ``"noise"`` transform, >= 0.
    random_state : int, Generator or None
        Seeds the split, the permutation and the noise.

    Returns
    -------
    DigitTasks

    References
    ----------
    The digest's laptop plan of Zhou et al. (2026): 6 transforms x 4 label maps, 12 tasks.
    """
    from sklearn.datasets import load_digits

    tasks = _check_tasks(tasks)
    noise_sd = check_real(noise_sd, "noise_sd", lo=0.0)
    rng = check_random_state(random_state)
    d = load_digits()
    X = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    order = rng.permutation(len(y))
    half = len(y) // 2
    pre, rest = order[:half], order[half:]
    n_tr, n_va = int(0.6 * len(rest)), int(0.2 * len(rest))
    splits = {"train": rest[:n_tr], "val": rest[n_tr : n_tr + n_va], "test": rest[n_tr + n_va :]}
    perm = rng.permutation(N_PIXELS)
    noise = {k: rng.normal(0.0, noise_sd, size=(len(v), N_PIXELS)).astype(np.float32) for k, v in splits.items()}
    out: dict[str, np.ndarray] = {}
    for k, idx in splits.items():
        out["X_" + k] = np.stack([_transform(X[idx], t, perm, noise[k]) for t, _ in tasks])
        out["y_" + k] = np.stack([_label(y[idx], m) for _, m in tasks])
    return DigitTasks(
        names=tuple(f"{t}/{m}" for t, m in tasks),
        n_classes=np.array([LABEL_MAPS[m] for _, m in tasks]),
        X_pretrain=X[pre],
        y_pretrain=y[pre],
        **out,
    )


def _check_tasks(tasks: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    if isinstance(tasks, (str, bytes)) or not isinstance(tasks, Sequence):
        raise TypeError(f"tasks must be a sequence of (transform, label map) pairs, got {type(tasks).__name__}")
    out = []
    for t in tasks:
        if not (isinstance(t, (tuple, list)) and len(t) == 2):
            raise ValueError(f"task {t!r} is not a (transform, label map) pair")
        tr, lm = t
        if tr not in TASK_TRANSFORMS:
            raise ValueError(f"transform {tr!r} is not known; use one of {', '.join(TASK_TRANSFORMS)}")
        if lm not in LABEL_MAPS:
            raise ValueError(f"label map {lm!r} is not known; use one of {', '.join(LABEL_MAPS)}")
        out.append((str(tr), str(lm)))
    if len(out) < 2:
        raise ValueError(f"at least two tasks are needed to form a pair, got {len(out)}")
    if len(set(out)) != len(out):
        raise ValueError(f"tasks must be distinct, got {out}")
    return out


def task_pairs(n_tasks: int) -> list[tuple[int, int]]:
    """All unordered pairs ``(a, b)``, ``a < b``, of ``n_tasks`` tasks (``n(n-1)/2`` of them)."""
    n = check_int(n_tasks, "n_tasks", low=2)
    return list(itertools.combinations(range(n), 2))


# ----------------------------------------------------------------------------- models


def _backbone_forward(p: Mapping[str, torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """Hidden features of a batch of backbones.

    ``p[k]`` has a leading batch dimension B: fc1.weight (B, H, 64), fc1.bias (B, H),
    fc2.weight (B, H, H), fc2.bias (B, H); X (B, n, 64) -> (B, n, H).
    """
    h = torch.relu(torch.baddbmm(p["fc1.bias"].unsqueeze(1), X, p["fc1.weight"].transpose(1, 2)))
    return torch.relu(torch.baddbmm(p["fc2.bias"].unsqueeze(1), h, p["fc2.weight"].transpose(1, 2)))


def _logits(p, head_w, head_b, X, mask) -> torch.Tensor:
    """Logits (B, n, 10) with classes beyond each task's count masked to -inf."""
    z = torch.baddbmm(head_b.unsqueeze(1), _backbone_forward(p, X), head_w.transpose(1, 2))
    return z.masked_fill(~mask.unsqueeze(1), float("-inf"))


def _class_mask(n_classes: np.ndarray) -> torch.Tensor:
    return torch.arange(HEAD_WIDTH)[None, :] < torch.as_tensor(n_classes)[:, None]  # (B, 10)


def _init_linear(gen: torch.Generator, B: int, n_out: int, n_in: int) -> tuple[torch.Tensor, torch.Tensor]:
    bound = 1.0 / math.sqrt(n_in)
    w = (torch.rand(B, n_out, n_in, generator=gen) * 2 - 1) * bound
    b = (torch.rand(B, n_out, generator=gen) * 2 - 1) * bound
    return w, b


def _train_batched(p, head_w, head_b, X, y, mask, *, epochs, lr, weight_decay, batch_size, gen) -> None:
    """AdamW on B independent models at once (the loss is a sum of per-model means)."""
    params = [*p.values(), head_w, head_b]
    for t in params:
        t.requires_grad_(True)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    B, n = y.shape
    for _ in range(epochs):
        order = torch.randperm(n, generator=gen)
        for s in range(0, n, batch_size):
            idx = order[s : s + batch_size]
            z = _logits(p, head_w, head_b, X[:, idx], mask)  # (B, b, 10)
            loss = torch.nn.functional.cross_entropy(z.reshape(-1, HEAD_WIDTH), y[:, idx].reshape(-1)) * B
            opt.zero_grad()
            loss.backward()
            opt.step()
    for t in params:
        t.requires_grad_(False)


def pretrain_backbone(
    X: np.ndarray,
    y: np.ndarray,
    *,
    hidden: int = 128,
    epochs: int = 20,
    lr: float = 1e-3,
    batch_size: int = 64,
    random_state: RandomState = 0,
) -> dict[str, torch.Tensor]:
    """Pretrain the MLP backbone 64 -> H -> H (ReLU) with a ten-class head (Adam(W), CE).

    Parameters
    ----------
    X : array, shape (n, 64)
        Inputs in [0, 1].
    y : array, shape (n,)
        Labels 0..9.
    hidden : int
        Width H.
    epochs, lr, batch_size
        Training schedule (AdamW with weight decay 0).
    random_state : int, Generator or None
        Seeds the initial weights and the batch order.

    Returns
    -------
    dict of str to torch.Tensor
        ``fc1.weight`` (H, 64), ``fc1.bias`` (H,), ``fc2.weight`` (H, H), ``fc2.bias``
        (H,); the pretraining head is discarded.
    """
    X = np.asarray(X, dtype=np.float32)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[1] != N_PIXELS or y.shape != (X.shape[0],) or X.shape[0] < 2:
        raise ValueError(f"X must have shape (n, {N_PIXELS}) with n >= 2 and y shape (n,), got {X.shape} and {y.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values")
    if y.dtype.kind not in "iu" or y.min() < 0 or y.max() >= HEAD_WIDTH:
        raise ValueError(f"y must hold integer labels in 0..{HEAD_WIDTH - 1}")
    H = check_int(hidden, "hidden")
    epochs = check_int(epochs, "epochs")
    batch_size = check_int(batch_size, "batch_size")
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    gen = torch_generator(random_state)
    w1, b1 = _init_linear(gen, 1, H, N_PIXELS)
    w2, b2 = _init_linear(gen, 1, H, H)
    hw, hb = _init_linear(gen, 1, HEAD_WIDTH, H)
    p = {"fc1.weight": w1, "fc1.bias": b1, "fc2.weight": w2, "fc2.bias": b2}
    _train_batched(
        p, hw, hb, torch.from_numpy(X)[None], torch.from_numpy(y.astype(np.int64))[None], _class_mask(np.array([10])),
        epochs=epochs, lr=lr, weight_decay=0.0, batch_size=batch_size, gen=gen,
    )
    return {k: v[0].clone() for k, v in p.items()}


@dataclass(frozen=True)
class FineTuned:
    """T fine-tuned models: backbones stacked on a leading task axis, and their own heads.

    Attributes
    ----------
    params : dict of str to torch.Tensor
        Backbone parameters, each with a leading axis of length T.
    head_weight : torch.Tensor, shape (T, 10, H)
    head_bias : torch.Tensor, shape (T, 10)
    test_accuracy : numpy.ndarray, shape (T,)
        Each fine-tuned model's accuracy on its own test split.
    val_accuracy : numpy.ndarray, shape (T,)
        The same on the validation split.
    """

    params: dict
    head_weight: torch.Tensor
    head_bias: torch.Tensor
    test_accuracy: np.ndarray
    val_accuracy: np.ndarray

    def task_vector(self, base: Mapping[str, torch.Tensor], t: int) -> dict[str, torch.Tensor]:
        """``theta_t - theta_0`` for task ``t`` as a dict of tensors."""
        return {k: self.params[k][t] - base[k] for k in base}


def _accuracy(p, hw, hb, X, y, mask) -> np.ndarray:
    with torch.no_grad():
        z = _logits(p, hw, hb, X, mask)
    return (z.argmax(-1) == y).double().mean(1).numpy()


def finetune_tasks(
    base: Mapping[str, torch.Tensor],
    tasks: DigitTasks,
    *,
    epochs: int = 5,
    lr: float = 1e-3,
    weight_decay: float = 0.01,
    batch_size: int = 32,
    random_state: RandomState = 0,
) -> FineTuned:
    """Fine-tune the whole backbone plus a fresh head on every task, all T at once.

    The T models are stacked on a leading axis and trained together with AdamW on the sum
    of their mean cross-entropies; AdamW acts per element, so this equals T separate runs
    with the same batch order.

    Parameters
    ----------
    base : dict of str to torch.Tensor
        The pretrained backbone (:func:`pretrain_backbone`).
    tasks : DigitTasks
        The tasks (:func:`make_digit_tasks`).
    epochs, lr, weight_decay, batch_size
        AdamW schedule (the digest: lr 1e-3, 5 epochs).
    random_state : int, Generator or None
        Seeds the heads and the batch order.

    Returns
    -------
    FineTuned
    """
    base = _check_backbone(base)
    if not isinstance(tasks, DigitTasks):
        raise TypeError(f"tasks must be a DigitTasks, got {type(tasks).__name__}")
    epochs = check_int(epochs, "epochs")
    batch_size = check_int(batch_size, "batch_size")
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    weight_decay = check_real(weight_decay, "weight_decay", lo=0.0)
    T = tasks.n_tasks
    H = base["fc2.weight"].shape[0]
    gen = torch_generator(random_state)
    p = {k: v.unsqueeze(0).repeat(T, *([1] * v.dim())).clone() for k, v in base.items()}
    hw, hb = _init_linear(gen, T, HEAD_WIDTH, H)
    mask = _class_mask(tasks.n_classes)
    _train_batched(
        p, hw, hb, torch.from_numpy(tasks.X_train), torch.from_numpy(tasks.y_train), mask,
        epochs=epochs, lr=lr, weight_decay=weight_decay, batch_size=batch_size, gen=gen,
    )
    test = _accuracy(p, hw, hb, torch.from_numpy(tasks.X_test), torch.from_numpy(tasks.y_test), mask)
    val = _accuracy(p, hw, hb, torch.from_numpy(tasks.X_val), torch.from_numpy(tasks.y_val), mask)
    return FineTuned(params=p, head_weight=hw, head_bias=hb, test_accuracy=test, val_accuracy=val)


def _check_backbone(base: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    if not isinstance(base, Mapping) or set(base) != set(_PARAM_KEYS):
        raise ValueError(f"a backbone is a dict with keys {list(_PARAM_KEYS)}")
    return dict(base)


# ----------------------------------------------------------------------------- merges


def _check_vectors(base: Mapping[str, torch.Tensor], task_vectors: Sequence[Mapping[str, torch.Tensor]]) -> None:
    if not isinstance(base, Mapping) or not base:
        raise TypeError("base must be a non-empty dict of parameter tensors")
    if isinstance(task_vectors, Mapping) or not isinstance(task_vectors, Sequence) or len(task_vectors) < 2:
        raise ValueError("task_vectors must be a list of at least two dicts of tensors")
    for i, tv in enumerate(task_vectors):
        if not isinstance(tv, Mapping) or set(tv) != set(base):
            raise ValueError(f"task vector {i} has parameters {sorted(tv) if isinstance(tv, Mapping) else tv!r}, "
                             f"the base has {sorted(base)}; merging needs models of the same architecture")
        for k in base:
            if not (isinstance(tv[k], torch.Tensor) and isinstance(base[k], torch.Tensor)):
                raise TypeError(f"parameter {k!r} must be a torch.Tensor")
            if tuple(tv[k].shape) != tuple(base[k].shape):
                raise ValueError(f"cannot merge models of different shapes: parameter {k!r} has shape "
                                 f"{tuple(tv[k].shape)} in task vector {i} and {tuple(base[k].shape)} in the base")
            if not torch.isfinite(tv[k]).all():
                raise ValueError(f"parameter {k!r} of task vector {i} holds NaN or infinite values; "
                                 "task vectors must be finite")
    for k in base:
        if not torch.isfinite(base[k]).all():
            raise ValueError(f"parameter {k!r} of the base holds NaN or infinite values; the base must be finite")


def _flat(tv: Mapping[str, torch.Tensor], keys: Sequence[str]) -> torch.Tensor:
    return torch.cat([tv[k].reshape(-1) for k in keys])


def _unflat(v: torch.Tensor, base: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out, i = {}, 0
    for k, b in base.items():
        out[k] = b + v[i : i + b.numel()].reshape(b.shape)
        i += b.numel()
    return out


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


def merge_ties(base, task_vectors, *, density: float = 0.2, lam: float = 1.0, per_tensor: bool = False) -> dict[str, torch.Tensor]:
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
    sizes = ({f"parameter {k!r}": b.numel() for k, b in base.items()} if per_tensor
             else {"the flattened task vector": sum(b.numel() for b in base.values())})
    for what, size in sizes.items():
        if int(density * size) < 1:  # peft keeps int(density * size) entries: none would be kept
            raise ValueError(f"density={density!r} keeps no entry of {what} ({size} entries, int(density * {size}) = 0), "
                             f"so TIES would return the base unchanged; use density >= {1 / size:.3g}")
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
        raise ValueError(f"ties={ties!r} must be a dict with some of the keys density, lam, per_tensor "
                         f"(keyword arguments of merge_ties)")
    return {**TIES_AUTHORS, **ties}


def merge_dare(base, task_vectors, *, drop: float = 0.9, scale: float = 1.0, random_state: RandomState = 0) -> dict[str, torch.Tensor]:
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


def merge_pair(method: str, base, task_vectors, *, alpha: float = 1.0, random_state: RandomState = 0,
               ties: Mapping | None = None):
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
            val = np.stack([normalised(_pair_accuracy(
                [merge_task_arithmetic(base, [tvs[a], tvs[b]], al) for a, b in pairs], ft, tasks, pairs, "val"), ref_val)
                for al in alphas], 1)  # (P, n_alpha)
            best = np.array(alphas)[val.argmax(1)]
            merged = [merge_task_arithmetic(base, [tvs[a], tvs[b]], float(al)) for (a, b), al in zip(pairs, best, strict=True)]
        else:
            best = None
            merged = [merge_pair(m, base, [tvs[a], tvs[b]], random_state=int(s), ties=ties)
                      for (a, b), s in zip(pairs, dare_seeds, strict=True)]
        acc = _pair_accuracy(merged, ft, tasks, pairs, "test")
        out[m] = {"normalised": normalised(acc, ref_test), "accuracy": acc}
        if best is not None:
            out[m]["alpha"] = best
    return out


def _check_pairs(pairs, n_tasks: int) -> list[tuple[int, int]]:
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence) or len(pairs) == 0:
        raise ValueError("pairs must be a non-empty sequence of (a, b) task indices")
    out = []
    for pr in pairs:
        if not (isinstance(pr, (tuple, list)) and len(pr) == 2):
            raise ValueError(f"pair {pr!r} is not an (a, b) pair")
        if not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in pr):
            raise TypeError(f"pair {pr!r} must hold integer task indices")
        a, b = (int(x) for x in pr)
        if not (0 <= a < n_tasks and 0 <= b < n_tasks) or a == b:
            raise ValueError(f"pair {pr!r} needs two different task indices in 0..{n_tasks - 1}")
        out.append((a, b))
    return out


# ----------------------------------------------------------------------------- metrics


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


def _profiles(base, ft: FineTuned, tasks: DigitTasks, task_ids: Sequence[int], n_grad: int, n_act: int,
              grad_samples: str = "first-train", grad_batch: int | None = None, grad_seed: int = 42,
              draws: Sequence[int] = (0,)) -> _Profiles:
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
    cols.update({"activation_l2_distance": s["l2"], "activation_cosine_similarity": s["cos"],
                 "activation_magnitude_ratio": s["ratio"], "activation_dot_product": s["dot"]})
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
        raise ValueError(f"n_grad={n_grad} / n_act={n_act} exceed the train-and-test / val split sizes "
                         f"{n_g} / {tasks.X_val.shape[1]}")
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
        prof = _profiles(based, ft, tasks, [pa, pb], n_grad, n_act, grad_samples=grad_samples,
                         grad_batch=grad_batch, grad_seed=grad_seed, draws=(0, 1))
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
        r.update(task_vector_cosine_similarity=cos, task_vector_l2_distance=l2, task_vector_dot_product=dot,
                 weight_space_angle=math.degrees(math.acos(max(-1.0, min(1.0, cos)))), task_vector_magnitude_ratio=ratio)
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
            sub["singular_value_overlap"].append(float(torch.nn.functional.cosine_similarity(
                (s1[:ksv] / (s1.sum() + 1e-8))[None], (s2[:ksv] / (s2.sum() + 1e-8))[None])))
            k = min(subspace_k, u1.shape[1])
            sub["subspace_overlap"].append(float(torch.linalg.matrix_norm(u1[:, :k].T @ u2[:, :k])) / k)
            for tag, (x1, x2) in (("top_k", (v1[:k], v2[:k])), ("bottom_k", (v1[-k:], v2[-k:]))):
                M = x1 @ x2.T
                sub[f"right_subspace_overlap_{tag}"].append(float(torch.linalg.matrix_norm(M)) / math.sqrt(k))
                sub[f"interaction_matrix_overlap_{tag}"].append(float((torch.linalg.svdvals(M) ** 2).mean()))
        r.update({n: sum(v) / len(v) for n, v in sub.items()})
        cos, l2, dot, ratio = vec(act[0], act[1])
        r.update(activation_l2_distance=l2, activation_cosine_similarity=cos, activation_magnitude_ratio=ratio,
                 activation_dot_product=dot)
        for prefix, V in (("encoder", prof.grad), ("input", prof.igrad)):
            cos, l2, dot, _ = vec(V[0], V[1])
            r.update({f"{prefix}_gradient_cosine_similarity": cos, f"{prefix}_gradient_l2_distance": l2,
                      f"{prefix}_gradient_dot_product": dot})
        rows.append([r[n] for n in METRIC_NAMES])
    return np.asarray(rows, dtype=float)


# ----------------------------------------------------------------------------- predictor


def _minmax(train: torch.Tensor, other: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    lo, hi = train.min(0).values, train.max(0).values
    rng = torch.where(hi - lo == 0, torch.ones_like(hi), hi - lo)
    return (train - lo) / rng * 2 - 1, (other - lo) / rng * 2 - 1


def _pearson_rows(P: torch.Tensor, y: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """Masked Pearson r per row: P (F, n), y (n,), m (F, n) 0/1 -> (F,) (eps as the authors')."""
    cnt = m.sum(1, keepdim=True)
    pc = (P - (P * m).sum(1, keepdim=True) / cnt) * m
    yc = (y[None] - (y[None] * m).sum(1, keepdim=True) / cnt) * m
    return (pc * yc).sum(1) / (torch.sqrt((pc**2).sum(1) * (yc**2).sum(1)) + 1e-8)


def _fit_batched(Xf: torch.Tensor, y: torch.Tensor, m: torch.Tensor, lam, lr, max_steps, patience, tol, init_sd, gen, objective):
    """Adam on F independent coefficient vectors; each stops on its own patience rule."""
    F, _, d = Xf.shape
    w = (torch.randn(F, d, generator=gen, dtype=torch.float64) * init_sd).requires_grad_(True)
    opt = torch.optim.Adam([w], lr=lr)
    best = torch.full((F,), math.inf, dtype=torch.float64)
    wait = torch.zeros(F, dtype=torch.long)
    active = torch.ones(F, dtype=torch.bool)
    final = torch.zeros(F, d, dtype=torch.float64)
    for _ in range(max_steps):
        pred = torch.einsum("fnd,fd->fn", Xf, w)
        if objective == "pearson":
            fit = -_pearson_rows(pred, y, m)
        else:
            fit = (((pred - y[None]) ** 2) * m).sum(1) / m.sum(1)
        loss = fit + lam * w.abs().sum(1)
        opt.zero_grad()
        loss.sum().backward()
        opt.step()
        with torch.no_grad():
            lv = loss.detach()
            improved = lv < best - tol
            best = torch.where(improved, lv, best)
            wait = torch.where(improved, torch.zeros_like(wait), wait + 1)
            stop = active & (wait >= patience)
            final[stop] = w.detach()[stop]
            active &= ~stop
        if not active.any():
            break
    final[active] = w.detach()[active]
    final[final.abs() < 1e-3] = 0.0
    return final


def _check_xy(X, y) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2 or y.shape != (X.shape[0],) or X.shape[0] < 3 or X.shape[1] < 1:
        raise ValueError(f"X must have shape (n, d) with n >= 3 and y shape (n,), got {X.shape} and {y.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X and y must be finite (no NaN or infinity)")
    return X, y


def _check_correlatable(X: np.ndarray, y: np.ndarray, where: str) -> None:
    """Pearson r of ``X w`` with ``y`` is undefined (its gradient NaN) for a constant ``y`` or ``X``."""
    if np.ptp(y) == 0:
        raise ValueError(f"y is constant ({y[0]!r} for all {y.size} rows{where}); Pearson r with a constant target is "
                         "undefined and the fit would return NaN coefficients; give a target that varies, or objective='mse'")
    if np.all(np.ptp(X, axis=0) == 0):
        raise ValueError(f"every column of X is constant{where}, so X w is constant for every w and Pearson r undefined; "
                         "give at least one metric that varies, or objective='mse'")


def _check_fit_args(lam, lr, max_steps, patience, objective):
    if objective not in ("pearson", "mse"):
        raise ValueError(f"objective={objective!r} is not known; use 'pearson' or 'mse'")
    return (check_real(lam, "lam (the L1 weight)", lo=0.0), check_real(lr, "lr", lo=0.0, lo_open=True),
            check_int(max_steps, "max_steps"), check_int(patience, "patience"))


def fit_pearson_l1(
    X,
    y,
    *,
    lam: float = 1.0,
    lr: float = 0.01,
    max_steps: int = 1000,
    patience: int = 50,
    tol: float = 1e-4,
    init_sd: float = 0.1,
    objective: str = "pearson",
    random_state: RandomState = 0,
) -> np.ndarray:
    """Coefficients ``w`` of ``X w`` maximising Pearson r with ``y`` under an L1 penalty.

    Minimises ``L(w) = -r(X w, y) + lam * ||w||_1`` with Adam (``lr``) from
    ``w ~ N(0, init_sd^2)``, for at most ``max_steps`` steps, stopping once the loss has
    not improved by more than ``tol`` for ``patience`` steps; then ``|w_j| < 1e-3`` is set
    to 0. ``X`` is used as given (the LOTO wrapper min-max scales it). Since r is scale
    invariant, only the direction of ``w`` matters for the fit, and the penalty sets its size.
    ``objective="mse"`` replaces ``-r`` with the mean squared error (the paper's variant).

    Parameters
    ----------
    X : array, shape (n, d)
    y : array, shape (n,)
    lam : float
        L1 weight, >= 0 (the paper's primary setting: 1.0).
    lr, max_steps, patience, tol, init_sd
        Optimiser settings of the authors' script.
    objective : {"pearson", "mse"}
    random_state : int, Generator or None
        Seeds the initial coefficients.

    Returns
    -------
    numpy.ndarray, shape (d,)

    Raises
    ------
    ValueError
        For mis-shaped or non-finite ``X``/``y``, an unknown ``objective``, settings out of
        range (``lam, tol, init_sd >= 0``, ``lr > 0``, integers ``max_steps, patience >= 1``),
        or, for ``objective="pearson"``, a constant ``y`` or an ``X`` whose columns are all
        constant (Pearson r is then undefined).
    TypeError
        For settings that are not numbers.

    References
    ----------
    Zhou et al. (2026); ``scripts/linear_optimization_loto_l1.py`` of the authors' repo.
    """
    X, y = _check_xy(X, y)
    lam, lr, max_steps, patience = _check_fit_args(lam, lr, max_steps, patience, objective)
    tol = check_real(tol, "tol", lo=0.0)
    init_sd = check_real(init_sd, "init_sd", lo=0.0)
    if objective == "pearson":
        _check_correlatable(X, y, "")
    Xt = torch.from_numpy(X)[None]
    m = torch.ones(1, X.shape[0], dtype=torch.float64)
    w = _fit_batched(Xt, torch.from_numpy(y), m, lam, lr, max_steps, patience, tol, init_sd,
                     torch_generator(random_state), objective)
    return w[0].numpy()


@dataclass(frozen=True)
class LotoResult:
    """Leave-one-task-out results of one merge method.

    Attributes
    ----------
    coef : numpy.ndarray, shape (F, d)
        Coefficients per fold (held-out task).
    fold_r : numpy.ndarray, shape (F,)
        Validation Pearson r per fold (NaN where a fold's prediction is constant).
    pooled_r, pooled_rho : float
        Pearson r and Spearman rho of all folds' validation predictions pooled.
    train_r : numpy.ndarray, shape (F,)
        Training Pearson r per fold.
    """

    coef: np.ndarray
    fold_r: np.ndarray
    pooled_r: float
    pooled_rho: float
    train_r: np.ndarray

    @property
    def mean_coef(self) -> np.ndarray:
        """Average coefficient over folds, shape (d,)."""
        return self.coef.mean(0)

    @property
    def nonzero_frequency(self) -> np.ndarray:
        """Fraction of folds in which each coefficient is non-zero, shape (d,)."""
        return (self.coef != 0).mean(0)


LOTO_AUTHORS: dict = {"max_steps": 2000, "patience": 100, "tol": 1e-5}
"""The fitting settings of the authors' published run (``scripts/linear_optimization_loto_l1.py``)."""


def loto_mergeability(
    M,
    y,
    pairs: Sequence[tuple[int, int]],
    *,
    lam: float = 1.0,
    lr: float = 0.01,
    max_steps: int = 1000,
    patience: int = 50,
    objective: str = "pearson",
    random_state: RandomState = 0,
    tol: float = 1e-4,
) -> LotoResult:
    """Fit :func:`fit_pearson_l1` leave-one-task-out, all folds at once.

    For held-out task h: train on pairs without h, validate on pairs containing h. Each
    metric is min-max scaled to [-1, 1] with the training pairs' statistics only. The
    folds are independent (own initial coefficients, own early stopping) but optimised in
    one batched loop.

    Parameters
    ----------
    M : array, shape (P, d)
        Metrics per pair.
    y : array, shape (P,)
        Post-merge normalised accuracy per pair.
    pairs : sequence of (a, b)
        The task pair of each row.
    lam, lr, max_steps, patience, objective
        As in :func:`fit_pearson_l1`.
    random_state : int, Generator or None
    tol : float
        Improvement that resets the patience counter (the authors' published run:
        ``max_steps=2000, patience=100, tol=1e-5``, :data:`LOTO_AUTHORS`).

    Returns
    -------
    LotoResult

    Raises
    ------
    ValueError
        As :func:`fit_pearson_l1`, for pairs that do not match the rows of ``M`` or cover
        fewer than 4 tasks, and (``objective="pearson"``) when a fold's training target or
        all its training metrics are constant.

    References
    ----------
    Zhou et al. (2026); ``run_loto_cv_l1`` in the authors' repo.
    """
    from scipy.stats import pearsonr, spearmanr

    M, y = _check_xy(M, y)
    lam, lr, max_steps, patience = _check_fit_args(lam, lr, max_steps, patience, objective)
    pairs = _check_pairs(pairs, 2**31)
    if len(pairs) != M.shape[0]:
        raise ValueError(f"pairs has {len(pairs)} entries but M has {M.shape[0]} rows")
    tasks = sorted({t for p in pairs for t in p})
    if len(tasks) < 4:
        raise ValueError(f"leave-one-task-out needs at least 4 tasks, got {len(tasks)}")
    Mt, yt = torch.from_numpy(M), torch.from_numpy(y)
    train_masks, val_idx, Xs = [], [], []
    for h in tasks:
        tr = np.array([h not in p for p in pairs])
        train_masks.append(tr)
        val_idx.append(np.flatnonzero(~tr))
        Xs.append(_minmax(Mt[torch.from_numpy(tr)], Mt)[1])
    Xf = torch.stack(Xs)  # (F, P, d): all pairs scaled with each fold's training statistics
    mtr = torch.from_numpy(np.stack(train_masks)).double()
    tol = check_real(tol, "tol", lo=0.0)
    if objective == "pearson":
        for h, tr in zip(tasks, train_masks):
            _check_correlatable(M[tr], y[tr], f" in the training pairs of the fold that holds out task {h}")
    coef = _fit_batched(Xf, yt, mtr, lam, lr, max_steps, patience, tol, 0.1, torch_generator(random_state), objective)
    preds = torch.einsum("fnd,fd->fn", Xf, coef).numpy()
    fold_r, train_r, pv, tv = [], [], [], []
    for f in range(len(tasks)):
        vi, ti = val_idx[f], np.flatnonzero(train_masks[f])
        fold_r.append(_safe_r(pearsonr, preds[f, vi], y[vi]))
        train_r.append(_safe_r(pearsonr, preds[f, ti], y[ti]))
        pv.append(preds[f, vi])
        tv.append(y[vi])
    pv, tv = np.concatenate(pv), np.concatenate(tv)
    return LotoResult(coef=coef.numpy(), fold_r=np.array(fold_r), pooled_r=_safe_r(pearsonr, pv, tv),
                      pooled_rho=_safe_r(spearmanr, pv, tv), train_r=np.array(train_r))


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
        out["grad"][name] = {"M": Mv, "loto": {m: loto_mergeability(Mv, merged[m]["normalised"], pairs, lam=lam,
                                                                    random_state=random_state, **fit)
                                               for m in MERGE_METHODS}}
    seed = seed_from(random_state)
    for name, method, kw in (("ties_global", "ties", dict(ties=TIES_GLOBAL)),
                             ("arithmetic_tuned", "arithmetic", dict(alphas=list(alphas_before)))):
        target = score_pair_merges(base, ft, tasks, pairs, methods=[method], random_state=seed, **kw)[method]
        out["merge"][name] = {"method": method, "target": target,
                              "loto": loto_mergeability(M, target["normalised"], pairs, lam=lam, random_state=random_state, **fit)}
    return out


def _safe_r(fn, a, b) -> float:
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(fn(a, b)[0])


def driver_agreement(coefs: Mapping[str, np.ndarray], *, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Top-k metric overlap and sign agreement between methods' average coefficients.

    For methods i, j with top-k sets A_i, A_j (by |average coefficient|, non-zero only):
    overlap ``|A_i & A_j| / k``; sign agreement, the fraction of the shared metrics whose
    coefficients have the same sign (NaN when none is shared).

    Parameters
    ----------
    coefs : dict of str to array, shape (d,)
        Average coefficients per method.
    k : int
        Size of the top set (the paper's 5).

    Returns
    -------
    overlap, sign_agreement : numpy.ndarray, shape (m, m)
        In the order of ``coefs``; the diagonal is 1.
    """
    if not isinstance(coefs, Mapping) or len(coefs) < 2:
        raise ValueError("coefs must map at least two method names to coefficient vectors")
    k = check_int(k, "k")
    vs = [np.asarray(v, dtype=float) for v in coefs.values()]
    d = vs[0].shape
    if any(v.shape != d or v.ndim != 1 for v in vs) or not all(np.all(np.isfinite(v)) for v in vs):
        raise ValueError("coefficient vectors must be finite, one-dimensional and of equal length")
    if k > d[0]:
        raise ValueError(f"k={k} exceeds the number of metrics {d[0]}")
    tops = [set(int(i) for i in np.argsort(-np.abs(v), kind="stable")[:k] if v[i] != 0) for v in vs]
    m = len(vs)
    ov, sg = np.eye(m), np.eye(m)
    for i, j in itertools.combinations(range(m), 2):
        shared = tops[i] & tops[j]
        ov[i, j] = ov[j, i] = len(shared) / k
        sg[i, j] = sg[j, i] = np.mean([np.sign(vs[i][s]) == np.sign(vs[j][s]) for s in shared]) if shared else np.nan
    return ov, sg
