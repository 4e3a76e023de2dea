"""DP training of a small MLP on bundled scikit-learn data (the chapter's Experiment 2).

Standardised data sets (:class:`TabularData`, :func:`load_tabular`,
:func:`validation_split`), the MLP (:func:`make_mlp`), and :func:`train_private`, which
trains it with any of :data:`~icml26.fiber.optimizer.METHODS` under DP-SGD's Gaussian
mechanism and returns a :class:`TrainResult` (test accuracy and epsilon spent).

Reference: Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen,
"FIBER: A Differentially Private Optimizer with Filter-Aware Innovation Bias Correction",
ICML 2026, arXiv:2605.03425. Overview: :mod:`icml26.fiber`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .._common import RandomState, seed_from
from ._checks import _count, _real
from .optimizer import METHODS, _method, make_optimizer
from .privacy import epsilon_spent, per_example_grads, privatize, two_point_grads

__all__ = ["TabularData", "load_tabular", "validation_split", "make_mlp", "TrainResult", "train_private"]


@dataclass
class TabularData:
    """Standardised train/test tensors of a bundled scikit-learn data set.

    Parameters
    ----------
    name : str
        Data set name.
    X_train, X_test : Tensor
        Standardised features (float32).
    y_train, y_test : Tensor
        Labels (int64).
    n_classes : int
        Number of classes.

    Returns
    -------
    TabularData
        A plain record.

    References
    ----------
    F. Pedregosa et al., "Scikit-learn: Machine Learning in Python", JMLR 2011 (bundled data sets).
    """

    name: str
    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    n_classes: int


def _check_data(data: object) -> None:
    if not isinstance(data, TabularData):
        raise TypeError(f"data must be a TabularData (see load_tabular), got {type(data).__name__}")


def load_tabular(name: str, *, random_state: RandomState = 0, test_size: float = 0.25) -> TabularData:
    """``"digits"`` (1797 x 64, 10 classes) or ``"breast_cancer"`` (569 x 30, 2 classes).

    Stratified split with ``random_state=seed``; features standardised with the training
    mean and std (a data-dependent step that we, like most DP papers, leave outside the
    privacy budget — see the chapter).

    Parameters
    ----------
    name : {"digits", "breast_cancer"}
        The bundled data set.
    random_state : int, numpy.random.Generator or None
        Seed (see ``icml26._common.check_random_state``).
    test_size : float
        Held-out fraction, in (0, 1).

    Returns
    -------
    TabularData
        Standardised float32 features and int64 labels.

    References
    ----------
    F. Pedregosa et al., "Scikit-learn: Machine Learning in Python", JMLR 2011 (bundled data sets).
    """
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.model_selection import train_test_split

    loaders = {"digits": load_digits, "breast_cancer": load_breast_cancer}
    if not isinstance(name, str) or name not in loaders:
        raise ValueError(f"name={name!r} is not a bundled data set here; use one of {list(loaders)}")
    _real("test_size", test_size, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    X, y = loaders[name](return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=test_size, random_state=seed_from(random_state), stratify=y)
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd[sd == 0] = 1.0
    f = lambda Z: torch.as_tensor((Z - mu) / sd, dtype=torch.float32)  # noqa: E731
    return TabularData(name, f(Xtr), torch.as_tensor(ytr), f(Xte), torch.as_tensor(yte), int(y.max()) + 1)


def validation_split(data: TabularData, *, frac: float = 0.2, random_state: RandomState = 0) -> TabularData:
    """Carve a stratified validation set out of ``data``'s training part; it replaces the test part.

    Hyper-parameters are chosen on this split, so the test set is never looked at while tuning.

    Parameters
    ----------
    data : TabularData
        As returned by :func:`load_tabular` (or :func:`validation_split`).
    frac : float
        Validation fraction, in (0, 1).
    random_state : int, numpy.random.Generator or None
        Seed (see ``icml26._common.check_random_state``).

    Returns
    -------
    TabularData
        Training part and validation part (in the test slots).

    References
    ----------
    F. Pedregosa et al., "Scikit-learn: Machine Learning in Python", JMLR 2011 (bundled data sets).
    """
    from sklearn.model_selection import train_test_split

    _check_data(data)
    _real("frac", frac, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    idx = np.arange(data.X_train.shape[0])
    tr, va = train_test_split(idx, test_size=frac, random_state=seed_from(random_state), stratify=data.y_train.numpy())
    tr, va = torch.as_tensor(tr), torch.as_tensor(va)
    return TabularData(
        f"{data.name} (validation)", data.X_train[tr], data.y_train[tr], data.X_train[va], data.y_train[va], data.n_classes
    )


def make_mlp(in_dim: int, hidden: int, out_dim: int, *, random_state: RandomState = 0) -> nn.Module:
    """``Linear(in, hidden) -> tanh -> Linear(hidden, out)`` with PyTorch's default init drawn from ``seed``.

    Parameters
    ----------
    in_dim : int
        Input features (>= 1).
    hidden : int
        Hidden units (>= 1).
    out_dim : int
        Classes (>= 1).
    random_state : int, numpy.random.Generator or None
        Seed (see ``icml26._common.check_random_state``).

    Returns
    -------
    torch.nn.Module
        The untrained MLP; the global torch RNG is left untouched.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    """
    in_dim, hidden, out_dim = _count("in_dim", in_dim), _count("hidden", hidden), _count("out_dim", out_dim)
    seed = seed_from(random_state)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(in_dim, hidden), nn.Tanh(), nn.Linear(hidden, out_dim))


@dataclass
class TrainResult:
    """Outcome of :func:`train_private`.

    Parameters
    ----------
    method : str
        The optimizer.
    test_acc : float
        Final test accuracy.
    epsilon : float
        Spent at ``delta``.
    noise_multiplier, noise_std : float
        sigma_DP and sigma_w.
    steps : int
        Optimizer steps.
    acc_curve : list of float
        Test accuracy at evenly spaced steps.
    clamp_fraction : float
        Mean fraction of coordinates on the floor.
    test_loss : float
        Final test cross-entropy.

    Returns
    -------
    TrainResult
        A plain record.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    """

    method: str
    test_acc: float
    epsilon: float
    noise_multiplier: float
    noise_std: float
    steps: int
    acc_curve: list[float] = field(default_factory=list)
    clamp_fraction: float = 0.0
    test_loss: float = float("nan")


def train_private(
    data: TabularData,
    method: str,
    *,
    noise_multiplier: float,
    epochs: float = 20,
    batch_size: int = 64,
    max_norm: float = 1.0,
    lr: float = 2e-3,
    hidden: int = 32,
    omega: float = 0.5,
    kappa: float = 0.7,
    gamma: float | None = None,
    eps_v: float = 1e-8,
    weight_decay: float = 0.0,
    delta: float = 1e-5,
    random_state: RandomState = 0,
    n_curve: int = 10,
) -> TrainResult:
    r"""Train ``make_mlp`` with ``method`` under DP-SGD's Gaussian mechanism; return test accuracy and epsilon.

    Poisson sampling with rate :math:`q=B/N` for :math:`T=\lceil\text{epochs}/q\rceil` steps;
    per-example (two-point, for DiSK and FIBER) gradients are clipped to ``max_norm`` and
    noised with multiplier ``noise_multiplier``; :math:`\sigma_w=\sigma_{DP}C/B`. The
    batches, noise draws and initial weights depend on ``seed`` only, so methods run with
    the same seed see the same randomness. ``gamma`` defaults to :math:`(1-\kappa)/\kappa`
    (one gradient per example per step, at the extrapolated point).

    Parameters
    ----------
    data : TabularData
        As returned by :func:`load_tabular` (or :func:`validation_split`).
    method : str
        A key of :data:`METHODS`.
    noise_multiplier : float
        sigma_DP >= 0 (0: no privacy, epsilon = inf).
    epochs : float
        Expected passes over the data (> 0).
    batch_size : int
        Expected batch size, in 1..n.
    max_norm : float
        Clipping norm > 0.
    lr : float
        Learning rate.
    hidden : int
        Hidden units of the MLP.
    omega : float
        Innovation gain, ``0 < omega < 4/3`` (1 is no filtering).
    kappa : float
        EMA weight on the new gradient, ``0 < kappa < 2`` (1 is no filtering).
    gamma : float, optional
        Extrapolation length of the two-point observation.
    eps_v : float
        Floor of the corrected second moment.
    weight_decay : float
        AdamW's decoupled weight decay.
    delta : float
        For the reported epsilon, in (0, 1).
    random_state : int, numpy.random.Generator or None
        Seed (see ``icml26._common.check_random_state``).
    n_curve : int
        Points of the accuracy curve (>= 1).

    Returns
    -------
    TrainResult
        Test accuracy and loss, epsilon spent, noise levels, steps, curve, floor fraction.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    X. Zhang, Z. Bu, B. Balle, M. Hong, M. Razaviyayn, V. Mirrokni, "DiSK: Differentially Private
    Optimizer with Simplified Kalman Filter for Noise Reduction", ICLR 2025.
    M. Abadi et al., "Deep Learning with Differential Privacy", CCS 2016.
    """
    _method(method)
    _check_data(data)
    n = data.X_train.shape[0]
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or not (1 <= batch_size <= n):
        raise ValueError(f"batch_size={batch_size!r} must be an integer in 1..{n}")
    _real("noise_multiplier", noise_multiplier, lo=0.0)
    _real("epochs", epochs, lo=0.0, lo_open=True)
    _real("max_norm", max_norm, lo=0.0, lo_open=True)
    _real("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    _count("n_curve", n_curve)
    seed = seed_from(random_state)
    q = batch_size / n
    steps = int(math.ceil(epochs / q))
    gamma = (1.0 - kappa) / kappa if gamma is None else gamma
    spec = METHODS[method]
    model = make_mlp(data.X_train.shape[1], hidden, data.n_classes, random_state=seed)
    sigma_w = noise_multiplier * max_norm / batch_size
    opt = make_optimizer(
        method, model.parameters(), noise_std=sigma_w, lr=lr, omega=omega, kappa=kappa, eps_v=eps_v, weight_decay=weight_decay
    )
    loss_fn = nn.functional.cross_entropy
    gen_sample = torch.Generator().manual_seed(10_007 * seed + 1)
    gen_noise = torch.Generator().manual_seed(10_007 * seed + 2)
    names = [k for k, _ in model.named_parameters()]
    params = dict(model.named_parameters())
    d_prev = {k: torch.zeros_like(v) for k, v in params.items()}
    curve_at = set(np.linspace(0, steps, n_curve + 1)[1:].round().astype(int).tolist())
    curve, clamp = [], []

    def accuracy() -> float:
        with torch.no_grad():
            return float((model(data.X_test).argmax(1) == data.y_test).float().mean())

    for t in range(steps):
        idx = torch.nonzero(torch.rand(n, generator=gen_sample) < q).squeeze(1)
        xb, yb = data.X_train[idx], data.y_train[idx]
        if spec["two_point"]:
            u = two_point_grads(model, loss_fn, xb, yb, d_prev, kappa=kappa, gamma=gamma)
        else:
            u = per_example_grads(model, loss_fn, xb, yb)
        u = {k: u[k] for k in names}
        g = privatize(
            u, max_norm=max_norm, noise_multiplier=noise_multiplier, expected_batch_size=batch_size, random_state=gen_noise
        )
        old = {k: v.detach().clone() for k, v in params.items()}
        for k, p in params.items():
            p.grad = g[k]
        opt.step()
        clamp.append(opt.last_clamp_fraction)
        d_prev = {k: params[k].detach() - old[k] for k in names}
        if t + 1 in curve_at:
            curve.append(accuracy())
    eps = epsilon_spent(noise_multiplier, q, steps, delta) if noise_multiplier > 0 else float("inf")
    with torch.no_grad():
        test_loss = float(loss_fn(model(data.X_test), data.y_test))
    return TrainResult(method, accuracy(), eps, float(noise_multiplier), sigma_w, steps, curve, float(np.mean(clamp)), test_loss)
