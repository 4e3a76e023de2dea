"""Scoring GP predictions and the paper's metric-against-training-size experiment.

:func:`evaluate` (Spearman, Pearson, MAE and Gaussian NLL, the four metrics of the
paper's tables) and :func:`learning_curve` (every model fitted on nested training sets
of each landscape, over replicates).

References
----------
M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
arXiv:2606.11057; authors' code: https://github.com/generatebio/lock_gp.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from numbers import Integral, Real

import numpy as np
from torch import Tensor

from .._common import check_random_state, seed_from
from .._common import progress as _progress
from ._checks import _check_int
from .encoding import encode_one_hot
from .kernels import MODELS
from .landscapes import Landscape
from .models import GPRegressor

__all__ = ["evaluate", "learning_curve"]


def evaluate(y_true: np.ndarray, mean: np.ndarray, var: np.ndarray) -> dict[str, float]:
    r"""Spearman, Pearson, MAE and mean Gaussian NLL of predictions (the paper's four metrics).

    .. math:: \text{NLL} = \frac1M \sum_i \tfrac12\log(2\pi\sigma_i^2) + \frac{(y_i-\mu_i)^2}{2\sigma_i^2}

    Parameters
    ----------
    y_true : array_like, shape (M,)
        Measured values (finite, not all equal), M >= 2.
    mean : array_like, shape (M,)
        Predictive means (finite, not all equal: a correlation with a constant is undefined).
    var : array_like, shape (M,)
        Predictive variances, > 0.

    Returns
    -------
    dict
        ``spearman``, ``pearson``, ``mae``, ``nll``.

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057 (the four metrics of its tables); authors' code: https://github.com/generatebio/lock_gp.
    """
    from scipy.stats import pearsonr, spearmanr

    arrs = []
    for name, a in (("y_true", y_true), ("mean", mean), ("var", var)):
        try:
            arr = np.asarray(a, dtype=float)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be numeric ({exc})") from None
        arrs.append(arr)
    y_true, mean, var = arrs
    if not (y_true.shape == mean.shape == var.shape) or y_true.ndim != 1:
        raise ValueError(f"shapes differ or are not 1-D: {y_true.shape}, {mean.shape}, {var.shape}")
    if y_true.size < 2:
        raise ValueError(f"need at least 2 test points for a correlation, got {y_true.size}")
    if not (np.all(np.isfinite(y_true)) and np.all(np.isfinite(mean)) and np.all(np.isfinite(var))):
        raise ValueError("y_true, mean and var must be finite (found NaN or inf)")
    if np.any(var <= 0):
        raise ValueError("predictive variances must be positive")
    for name, a in (("y_true", y_true), ("mean", mean)):
        if np.ptp(a) == 0:
            raise ValueError(f"{name} is constant; Spearman and Pearson correlations are undefined")
    r = y_true - mean
    return {
        "spearman": float(spearmanr(y_true, mean).statistic),
        "pearson": float(pearsonr(y_true, mean).statistic),
        "mae": float(np.mean(np.abs(r))),
        "nll": float(np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * r**2 / var)),
    }


def learning_curve(
    landscapes: Mapping[str, Callable[[int], Landscape]],
    models: Iterable[str],
    train_sizes: Sequence[int],
    n_test: int,
    n_reps: int,
    random_state: int | np.random.Generator | None = 0,
    max_iter: int = 200,
    progress: bool = True,
):
    """Metric against training-set size: the paper's "metric vs N" experiment.

    For each landscape factory and replicate ``r`` the landscape ``make(seed + r)`` is
    drawn (``seed`` = ``random_state`` when it is an int, else an int drawn from it), its
    sequences are permuted with the same seed, the last ``n_test`` are the test set and the
    first ``N`` (nested across ``train_sizes``) the training set; every model is fitted and
    scored with :func:`evaluate`.

    Parameters
    ----------
    landscapes : mapping of str to callable
        Name -> factory ``make(seed) -> Landscape``.
    models : iterable of str
        Keys of :data:`MODELS`.
    train_sizes : sequence of int >= 2
        Training-set sizes (nested prefixes).
    n_test : int >= 2
        Held-out variants per replicate.
    n_reps : int >= 1
        Replicates.
    random_state : int, numpy.random.Generator or None
        Base seed of the replicates.
    max_iter : int >= 1
        L-BFGS-B iteration cap per fit.
    progress : bool
        Report progress (:func:`icml26._common.progress`).

    Returns
    -------
    pandas.DataFrame
        One row per (landscape, rep, n_train, model) with the four metrics, ``fit_s``
        and the learned hyper-parameters' fit diagnostics.

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057 (the learning-curve figure); authors' code: https://github.com/generatebio/lock_gp.
    """
    import pandas as pd

    if not isinstance(landscapes, Mapping) or not landscapes or not all(callable(f) for f in landscapes.values()):
        raise TypeError("landscapes must be a non-empty mapping of name -> callable make(seed) -> Landscape")
    if isinstance(models, str):
        raise TypeError("models must be a list of model names, not a single string")
    models = list(models)
    if not models or any(m not in MODELS for m in models):
        raise ValueError(f"models={models!r}: each must be one of {', '.join(map(repr, MODELS))}")
    if isinstance(train_sizes, (str, Real)) or not isinstance(train_sizes, Iterable):
        raise TypeError(f"train_sizes must be a sequence of ints, got {train_sizes!r}")
    sizes = sorted(_check_int(s, "train size", minimum=2) for s in train_sizes)
    if not sizes:
        raise ValueError("train_sizes is empty; give at least one training-set size")
    n_test = _check_int(n_test, "n_test", minimum=2)
    n_reps = _check_int(n_reps, "n_reps")
    max_iter = _check_int(max_iter, "max_iter")
    if isinstance(random_state, (Integral, np.integer)) and not isinstance(random_state, (bool, np.bool_)):
        check_random_state(random_state)
        seed = int(random_state)
    else:
        seed = seed_from(random_state)
    jobs = [(lname, r, N, m) for lname in landscapes for r in range(n_reps) for N in sizes for m in models]
    rows = []
    cache: dict[tuple[str, int], tuple[Tensor, np.ndarray]] = {}
    for lname, r, N, m in _progress(jobs, desc="GP fits", disable=not progress):
        if (lname, r) not in cache:
            land = landscapes[lname](seed + r)
            if len(land.sequences) < sizes[-1] + n_test:
                raise ValueError(f"landscape {lname!r} has {len(land.sequences)} sequences; need {sizes[-1]} + {n_test}")
            perm = np.random.default_rng(seed + r).permutation(len(land.sequences))
            x = encode_one_hot([land.sequences[i] for i in perm])
            cache[(lname, r)] = (x, land.y[perm])
        x, y = cache[(lname, r)]
        gp = GPRegressor(m, max_iter=max_iter).fit(x[:N], y[:N])
        mean, var = gp.predict(x[-n_test:])
        rows.append(
            {
                "landscape": lname,
                "rep": r,
                "n_train": N,
                "model": m,
                **evaluate(y[-n_test:], mean, var),
                "fit_s": gp.fit_info_["fit_s"],
                "n_iter": gp.fit_info_["n_iter"],
                "n_failed": gp.fit_info_["n_failed"],
            }
        )
    return pd.DataFrame(rows)
