"""The fine-tuning tasks: scikit-learn's digits under input transforms and label maps.

:data:`TASK_TRANSFORMS`, :data:`LABEL_MAPS`, :data:`DEFAULT_TASKS` (the chapter's twelve
tasks), :class:`DigitTasks` (the pretraining half and every task's train / val / test
splits on shared base images), :func:`make_digit_tasks` and :func:`task_pairs`.

References
----------
L. Zhou, B. Zhao, R. Yu, E. Rodolà, "Demystifying Mergeability: Interpretable Properties
to Predict Model Merging Success", ICML 2026, arXiv:2601.22285. Code:
https://github.com/Rose-STL-Lab/demystifying-mergeability.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._common import RandomState, check_int, check_random_state, check_real

__all__ = ["DEFAULT_TASKS", "LABEL_MAPS", "TASK_TRANSFORMS", "DigitTasks", "make_digit_tasks", "task_pairs"]


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


N_PIXELS = 64


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
