"""The models: an MLP backbone pretrained on digits, and T fine-tuned copies trained at once.

:func:`pretrain_backbone` (64 -> H -> H with a ten-class head), :func:`finetune_tasks`
(the whole backbone plus a fresh head per task, all T stacked on a leading axis and
trained together) and :class:`FineTuned` (the fine-tuned backbones, heads and their own
accuracies; :meth:`FineTuned.task_vector`).

References
----------
L. Zhou, B. Zhao, R. Yu, E. Rodolà, "Demystifying Mergeability: Interpretable Properties
to Predict Model Merging Success", ICML 2026, arXiv:2601.22285. Code:
https://github.com/Rose-STL-Lab/demystifying-mergeability.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .._common import RandomState, check_int, check_real, torch_generator
from .tasks import N_PIXELS, DigitTasks

__all__ = ["FineTuned", "finetune_tasks", "pretrain_backbone"]


HEAD_WIDTH = 10  # every head has 10 outputs; classes beyond a task's count are masked out
_PARAM_KEYS = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")


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
        p,
        hw,
        hb,
        torch.from_numpy(X)[None],
        torch.from_numpy(y.astype(np.int64))[None],
        _class_mask(np.array([10])),
        epochs=epochs,
        lr=lr,
        weight_decay=0.0,
        batch_size=batch_size,
        gen=gen,
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
        p,
        hw,
        hb,
        torch.from_numpy(tasks.X_train),
        torch.from_numpy(tasks.y_train),
        mask,
        epochs=epochs,
        lr=lr,
        weight_decay=weight_decay,
        batch_size=batch_size,
        gen=gen,
    )
    test = _accuracy(p, hw, hb, torch.from_numpy(tasks.X_test), torch.from_numpy(tasks.y_test), mask)
    val = _accuracy(p, hw, hb, torch.from_numpy(tasks.X_val), torch.from_numpy(tasks.y_val), mask)
    return FineTuned(params=p, head_weight=hw, head_bias=hb, test_accuracy=test, val_accuracy=val)


def _check_backbone(base: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    if not isinstance(base, Mapping) or set(base) != set(_PARAM_KEYS):
        raise ValueError(f"a backbone is a dict with keys {list(_PARAM_KEYS)}")
    return dict(base)


def _flat(tv: Mapping[str, torch.Tensor], keys: Sequence[str]) -> torch.Tensor:
    return torch.cat([tv[k].reshape(-1) for k in keys])


def _unflat(v: torch.Tensor, base: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out, i = {}, 0
    for k, b in base.items():
        out[k] = b + v[i : i + b.numel()].reshape(b.shape)
        i += b.numel()
    return out
