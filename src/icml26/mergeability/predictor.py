"""The sparse linear predictor of mergeability, fitted leave-one-task-out.

:func:`fit_pearson_l1` (coefficients maximising Pearson r under an L1 penalty, by Adam),
:func:`loto_mergeability` (all leave-one-task-out folds in one batched loop, with
:data:`LOTO_AUTHORS` the authors' settings) and its :class:`LotoResult`, and
:func:`driver_agreement` (top-k metric overlap and sign agreement between methods).

References
----------
L. Zhou, B. Zhao, R. Yu, E. Rodolà, "Demystifying Mergeability: Interpretable Properties
to Predict Model Merging Success", ICML 2026, arXiv:2601.22285. Code:
https://github.com/Rose-STL-Lab/demystifying-mergeability.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .._common import RandomState, check_int, check_real, torch_generator
from .tasks import _check_pairs

__all__ = ["LOTO_AUTHORS", "LotoResult", "driver_agreement", "fit_pearson_l1", "loto_mergeability"]


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
        raise ValueError(
            f"y is constant ({y[0]!r} for all {y.size} rows{where}); Pearson r with a constant target is "
            "undefined and the fit would return NaN coefficients; give a target that varies, or objective='mse'"
        )
    if np.all(np.ptp(X, axis=0) == 0):
        raise ValueError(
            f"every column of X is constant{where}, so X w is constant for every w and Pearson r undefined; "
            "give at least one metric that varies, or objective='mse'"
        )


def _check_fit_args(lam, lr, max_steps, patience, objective):
    if objective not in ("pearson", "mse"):
        raise ValueError(f"objective={objective!r} is not known; use 'pearson' or 'mse'")
    return (
        check_real(lam, "lam (the L1 weight)", lo=0.0),
        check_real(lr, "lr", lo=0.0, lo_open=True),
        check_int(max_steps, "max_steps"),
        check_int(patience, "patience"),
    )


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
    w = _fit_batched(
        Xt, torch.from_numpy(y), m, lam, lr, max_steps, patience, tol, init_sd, torch_generator(random_state), objective
    )
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
    return LotoResult(
        coef=coef.numpy(),
        fold_r=np.array(fold_r),
        pooled_r=_safe_r(pearsonr, pv, tv),
        pooled_rho=_safe_r(spearmanr, pv, tv),
        train_r=np.array(train_r),
    )


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
