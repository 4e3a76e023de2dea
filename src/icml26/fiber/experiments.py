"""Chapter 07's experiment drivers: the bias mechanism, hyper-parameter selection, accuracy vs epsilon.

:func:`second_moment_bias` (Experiment 1: AdamW's second-moment estimate on a filtered
noisy synthetic gradient stream, under each correction); :func:`steps_for`,
:func:`select_hyperparameters` (grid search on a validation split) and
:func:`accuracy_vs_epsilon` (Experiment 2's runs); :func:`dp_step_fn` (one full DP step as a
closure, for benchmarks).

Reference: Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen,
"FIBER: A Differentially Private Optimizer with Filter-Aware Innovation Bias Correction",
ICML 2026, arXiv:2605.03425. Overview: :mod:`icml26.fiber`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

import numpy as np
import torch
from scipy import signal as sps
from torch import nn

from .._common import RandomState, check_random_state, seed_from
from .._common import progress as _progress
from ._checks import _count, _real, _torch_gen
from .filters import _check_kappa, apply_filter, filter_coeffs, numeric_attenuation
from .optimizer import METHODS, _method, make_optimizer
from .privacy import noise_for_epsilon, per_example_grads, privatize, two_point_grads
from .training import TabularData, _check_data, train_private

__all__ = ["second_moment_bias", "steps_for", "select_hyperparameters", "accuracy_vs_epsilon", "dp_step_fn"]


def second_moment_bias(
    true_grad: np.ndarray,
    noise_std: float,
    filter: str,
    *,
    omega: float = 0.5,
    kappa: float = 0.7,
    steps: int = 4000,
    beta2: float = 0.999,
    eps_v: float = 0.0,
    n_rep: int = 8,
    random_state: RandomState = 0,
) -> dict[str, np.ndarray]:
    r"""Second-moment estimate of AdamW on a filtered noisy gradient stream, under each correction.

    Each coordinate ``j`` sees :math:`g_t=\mu_j+\sigma_w z_t`, :math:`z_t\sim\mathcal N(0,1)`
    i.i.d.; the stream is filtered (``filter`` as in :class:`FilteredDPAdamW`, zero start),
    :math:`\hat v` is AdamW's bias-corrected second moment at the last step. The target is
    the noise-free :math:`\mu_j^2`. Returns, per correction in :data:`CORRECTIONS`,
    ``err_<corr>`` the error :math:`(\hat v-c-\mu^2)/\sigma_w^2` of the corrected estimate
    before the floor (shape ``(n_rep, d)``), ``err_floor_<corr>`` the same after the floor
    :math:`\max(\cdot,\epsilon_v)`, and ``clamped_<corr>`` the fraction of entries at the
    floor; plus ``"A"`` the filter's attenuation.
    Predicted bias: ``none`` :math:`+A`, ``sigma2`` :math:`-(1-A)`, ``filter`` 0.

    Parameters
    ----------
    true_grad : array_like, shape (d,)
        The noise-free gradient mu (finite, non-empty).
    noise_std : float
        sigma_w > 0.
    filter : {"none", "ema", "innovation"}
        The filter.
    omega : float
        Innovation gain, ``0 < omega < 4/3`` (1 is no filtering).
    kappa : float
        EMA weight on the new gradient, ``0 < kappa < 2`` (1 is no filtering).
    steps : int
        Stream length (>= 2).
    beta2 : float
        AdamW's beta_2, in [0, 1).
    eps_v : float
        The floor (>= 0).
    n_rep : int
        Independent repetitions (>= 1).
    random_state : int, numpy.random.Generator or None
        Seed (see ``icml26._common.check_random_state``).

    Returns
    -------
    dict of str to numpy.ndarray
        As described above.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    Q. Tang, F. Shpilevskiy, M. Lécuyer, "DP-AdamBC: Your DP-Adam Is Actually DP-SGD (Unless You
    Apply Bias Correction)", AAAI 2024.
    """
    try:
        mu = np.asarray(true_grad, dtype=float).ravel()  # (d,)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"true_grad must be an array of real numbers, got {type(true_grad).__name__}") from exc
    if mu.size == 0 or not np.all(np.isfinite(mu)):
        raise ValueError(f"true_grad must be a non-empty finite array, got {mu.size} values")
    noise_std = _real("noise_std", noise_std, lo=0.0, lo_open=True)
    steps, n_rep = _count("steps", steps, 2), _count("n_rep", n_rep)
    beta2 = _real("beta2", beta2, lo=0.0, hi=1.0, hi_open=True)
    eps_v = _real("eps_v", eps_v, lo=0.0)
    b, a = filter_coeffs(filter, omega=omega, kappa=kappa)
    A = numeric_attenuation(b, a)
    rng = check_random_state(random_state)
    g = mu[None, None, :] + noise_std * rng.standard_normal((int(steps), int(n_rep), mu.size))  # (T, R, d)
    gf = apply_filter(g, b, a)  # (T, R, d)
    v = sps.lfilter([1.0 - beta2], [1.0, -beta2], gf * gf, axis=0)[-1]  # (R, d)
    v_hat = v / (1.0 - beta2 ** int(steps))
    out: dict[str, np.ndarray] = {"A": np.asarray(A)}
    s2 = noise_std**2
    for corr, sub in (("none", 0.0), ("sigma2", s2), ("filter", A * s2)):
        vb = v_hat - sub
        out[f"err_{corr}"] = (vb - mu[None, :] ** 2) / s2
        if corr == "none":
            out["clamped_none"] = np.asarray(0.0)
            out["err_floor_none"] = out["err_none"]
        else:
            out[f"clamped_{corr}"] = np.asarray((vb <= eps_v).mean())
            out[f"err_floor_{corr}"] = (np.maximum(vb, eps_v) - mu[None, :] ** 2) / s2
    return out


def _listed(name: str, values: object) -> list:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a non-empty sequence, got {type(values).__name__}")
    out = list(values)
    if not out:
        raise ValueError(f"{name} is empty; give at least one value")
    return out


def steps_for(epochs: float, batch_size: int, n: int) -> tuple[float, int]:
    """Sample rate ``q = batch_size / n`` and step count ``ceil(epochs / q)`` used by :func:`train_private`.

    Parameters
    ----------
    epochs : float
        Expected passes (> 0).
    batch_size : int
        Expected batch size (1..n).
    n : int
        Training rows (>= 1).

    Returns
    -------
    (float, int)
        ``q`` and ``T``.

    References
    ----------
    M. Abadi et al., "Deep Learning with Differential Privacy", CCS 2016.
    """
    n, batch_size = _count("n", n), _count("batch_size", batch_size)
    if batch_size > n:
        raise ValueError(f"batch_size={batch_size} exceeds n={n}")
    _real("epochs", epochs, lo=0.0, lo_open=True)
    q = batch_size / n
    return q, int(math.ceil(epochs / q))


def select_hyperparameters(
    data: TabularData,
    methods: Iterable[str],
    *,
    epsilon: float,
    delta: float,
    lr_grid: Iterable[float],
    eps_v_grid: Iterable[float],
    random_state: RandomState,
    epochs: float,
    batch_size: int,
    progress: bool = False,
    **train_kw,
):
    """Grid search of ``lr`` (and ``eps_v`` for methods with a correction) on ``data``'s held-out part.

    Every method gets the same learning-rate grid; methods whose correction subtracts
    something also get ``eps_v_grid`` (the floor is then a real hyper-parameter). One
    seed, noise calibrated to ``(epsilon, delta)``. The best configuration has
    the highest validation accuracy; ties (frequent on small validation sets) are broken
    by the lower validation cross-entropy.

    Parameters
    ----------
    data : TabularData
        As returned by :func:`load_tabular` (or :func:`validation_split`).
    methods : iterable of str
        Keys of :data:`METHODS`.
    epsilon : float
        Privacy budget of the search (> 0).
    delta : float
        In (0, 1).
    lr_grid : iterable of float
        Learning rates (> 0).
    eps_v_grid : iterable of float
        Floors (>= 0), for the correcting methods.
    random_state : int, numpy.random.Generator or None
        Seed (see ``icml26._common.check_random_state``).
    epochs : float
        Expected passes.
    batch_size : int
        Expected batch size.
    progress : bool
        Report progress with ``icml26._common.progress``.
    **train_kw
        Passed to :func:`train_private` (``max_norm``, ``hidden``, ``omega``, ``kappa``, ...).

    Returns
    -------
    best : dict
        ``{method: {"lr": ..., "eps_v": ..., "val_acc": ...}}``.
    table : pandas.DataFrame
        Every configuration tried with its validation accuracy.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    """
    import pandas as pd

    _check_data(data)
    methods = [_method(m) for m in _listed("methods", methods)]
    lr_grid = [_real("lr", v, lo=0.0, lo_open=True) for v in _listed("lr_grid", lr_grid)]
    eps_v_grid = [_real("eps_v", v, lo=0.0) for v in _listed("eps_v_grid", eps_v_grid)]
    seed = seed_from(random_state)
    q, steps = steps_for(epochs, batch_size, data.X_train.shape[0])
    sigma = noise_for_epsilon(epsilon, delta, q, steps)
    configs = []
    for m in methods:
        evs = list(eps_v_grid) if METHODS[m]["correction"] != "none" else [list(eps_v_grid)[0]]
        configs += [(m, lr, ev) for lr in lr_grid for ev in evs]
    rows = []
    for m, lr, ev in _progress(configs, desc="validation grid", disable=not progress):
        r = train_private(
            data,
            m,
            noise_multiplier=sigma,
            epochs=epochs,
            batch_size=batch_size,
            lr=lr,
            eps_v=ev,
            random_state=seed,
            delta=delta,
            **train_kw,
        )
        rows.append(
            {
                "method": m,
                "lr": lr,
                "eps_v": ev if METHODS[m]["correction"] != "none" else float("nan"),
                "val_acc": r.test_acc,
                "val_loss": r.test_loss,
                "clamped": r.clamp_fraction,
            }
        )
    table = pd.DataFrame(rows)
    best = {}
    for m, sub in table.groupby("method", sort=False):
        row = sub.sort_values(["val_acc", "val_loss"], ascending=[False, True], kind="stable").iloc[0]
        best[m] = {
            "lr": float(row["lr"]),
            "eps_v": float(row["eps_v"]) if np.isfinite(row["eps_v"]) else 1e-8,
            "val_acc": float(row["val_acc"]),
            "val_loss": float(row["val_loss"]),
        }
    return best, table


def accuracy_vs_epsilon(
    data: TabularData,
    hparams: Mapping[str, Mapping[str, float]],
    *,
    epsilons: Iterable[float],
    delta: float,
    seeds: Iterable[int],
    epochs: float,
    batch_size: int,
    progress: bool = False,
    **train_kw,
):
    """Test accuracy of every method in ``hparams`` at every ``epsilon`` and seed (one row per run).

    The noise multiplier depends only on ``(epsilon, delta, q, T)``, so all methods share it,
    and a seed fixes initial weights, batches and noise draws for every method alike.

    Parameters
    ----------
    data : TabularData
        As returned by :func:`load_tabular` (or :func:`validation_split`).
    hparams : mapping
        ``{method: {"lr": ..., "eps_v": ...}}``, e.g. from :func:`select_hyperparameters`.
    epsilons : iterable of float
        Privacy budgets (> 0).
    delta : float
        In (0, 1).
    seeds : iterable of int
        One run per seed, method and epsilon (each seed is a ``random_state``).
    epochs : float
        Expected passes.
    batch_size : int
        Expected batch size.
    progress : bool
        Report progress with ``icml26._common.progress``.
    **train_kw
        Passed to :func:`train_private` (``max_norm``, ``hidden``, ``omega``, ``kappa``, ...).

    Returns
    -------
    pandas.DataFrame
        One row per run: data, target_eps, seed, method, test_acc, epsilon, sigma_dp, sigma_w, steps, clamped, curve.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    """
    import pandas as pd

    _check_data(data)
    if not isinstance(hparams, Mapping) or not hparams:
        raise ValueError("hparams must be a non-empty mapping {method: {'lr': ..., 'eps_v': ...}} (see select_hyperparameters)")
    for m, hp in hparams.items():
        _method(m)
        if not isinstance(hp, Mapping) or "lr" not in hp or "eps_v" not in hp:
            raise ValueError(f"hparams[{m!r}] must hold 'lr' and 'eps_v'")
    epsilons = [_real("epsilon", e, lo=0.0, lo_open=True) for e in _listed("epsilons", epsilons)]
    seeds = [_count("seed", s_, 0) for s_ in _listed("seeds", seeds)]
    q, steps = steps_for(epochs, batch_size, data.X_train.shape[0])
    jobs = [(e, s, m) for e in epsilons for s in seeds for m in hparams]
    sigmas = {e: noise_for_epsilon(e, delta, q, steps) for e in epsilons}
    rows = []
    for e, s, m in _progress(jobs, desc=f"{data.name}: runs", disable=not progress):
        hp = hparams[m]
        r = train_private(
            data,
            m,
            noise_multiplier=sigmas[e],
            epochs=epochs,
            batch_size=batch_size,
            lr=hp["lr"],
            eps_v=hp["eps_v"],
            random_state=s,
            delta=delta,
            **train_kw,
        )
        rows.append(
            {
                "data": data.name,
                "target_eps": e,
                "seed": s,
                "method": m,
                "test_acc": r.test_acc,
                "epsilon": r.epsilon,
                "sigma_dp": r.noise_multiplier,
                "sigma_w": r.noise_std,
                "steps": r.steps,
                "clamped": r.clamp_fraction,
                "curve": r.acc_curve,
            }
        )
    return pd.DataFrame(rows)


def dp_step_fn(
    method: str,
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    noise_multiplier: float,
    max_norm: float = 1.0,
    lr: float = 1e-2,
    omega: float = 0.5,
    kappa: float = 0.7,
    gamma: float | None = None,
    random_state: RandomState = 0,
) -> Callable[[], None]:
    """A closure doing one full DP step of ``method`` on the fixed batch ``(x, y)`` (for benchmarks).

    Per-example (two-point where the method uses it) gradients, clipping, noise with
    ``expected_batch_size = len(x)``, and the optimizer update, exactly as in :func:`train_private`.

    Parameters
    ----------
    method : str
        A key of :data:`METHODS`.
    model : torch.nn.Module
        The network.
    x : Tensor, shape (B, ...)
        Inputs of the batch.
    y : Tensor, shape (B,)
        Labels of the batch.
    noise_multiplier : float
        sigma_DP >= 0.
    max_norm : float
        Clipping norm > 0.
    lr : float
        Learning rate.
    omega : float
        Innovation gain, ``0 < omega < 4/3`` (1 is no filtering).
    kappa : float
        EMA weight on the new gradient, ``0 < kappa < 2`` (1 is no filtering).
    gamma : float, optional
        Extrapolation length.
    random_state : int, numpy.random.Generator or None
        Seed (see ``icml26._common.check_random_state``).

    Returns
    -------
    callable
        ``step()``, one DP step per call (it updates ``model`` in place).

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    A. Yousefpour et al., "Opacus: User-Friendly Differential Privacy Library in PyTorch", 2021;
    code https://github.com/pytorch/opacus.
    """
    _method(method)
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if (
        not isinstance(x, torch.Tensor)
        or not isinstance(y, torch.Tensor)
        or x.ndim < 2
        or y.ndim != 1
        or len(x) != len(y)
        or len(x) == 0
    ):
        raise ValueError("x must be (B, features) and y (B,) tensors with the same B >= 1")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x holds NaN or infinite values")
    _real("noise_multiplier", noise_multiplier, lo=0.0)
    _real("max_norm", max_norm, lo=0.0, lo_open=True)
    kappa = _check_kappa(kappa)
    gamma = (1.0 - kappa) / kappa if gamma is None else gamma
    B = x.shape[0]
    opt = make_optimizer(method, model.parameters(), noise_std=noise_multiplier * max_norm / B, lr=lr, omega=omega, kappa=kappa)
    params = dict(model.named_parameters())
    state = {"d": {k: torch.zeros_like(v) for k, v in params.items()}}
    gen = _torch_gen(random_state)
    loss_fn = nn.functional.cross_entropy

    def step() -> None:
        if METHODS[method]["two_point"]:
            u = two_point_grads(model, loss_fn, x, y, state["d"], kappa=kappa, gamma=gamma)
        else:
            u = per_example_grads(model, loss_fn, x, y)
        g = privatize(
            {k: u[k] for k in params},
            max_norm=max_norm,
            noise_multiplier=noise_multiplier,
            expected_batch_size=B,
            random_state=gen,
        )
        old = {k: v.detach().clone() for k, v in params.items()}
        for k, p in params.items():
            p.grad = g[k]
        opt.step()
        state["d"] = {k: params[k].detach() - old[k] for k in params}

    return step
