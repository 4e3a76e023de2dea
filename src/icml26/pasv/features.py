"""Feature attribution with precedence: diabetes-feature DAGs and an imputed-feature utility.

:func:`diabetes_dags` gives two precedence structures over scikit-learn's diabetes features
(the stand-in for Census Income, Fig. 6), :class:`ImputedFeatureUtility` a feature-coalition
utility with k-NN conditional imputation (Sec. 5.2, App. F.1), and
:func:`feature_sweep_shift` chapter 15's single-player priority sweep.

Reference: K. Lee, Z. Liu, W. Tang, Y. Zhang, "Priority-Aware Shapley Value", ICML 2026,
arXiv:2602.09326. Conventions (closures ``R``, orders, bitmask game tables): :mod:`icml26.pasv`.
"""

from __future__ import annotations

import numpy as np

from ._checks import _check_features, _check_mask
from .estimation import priority_sweep
from .exact import PasvDP
from .posets import ordered_partition_closure, precedence_closure

__all__ = ["DIABETES_FEATURES", "diabetes_dags", "ImputedFeatureUtility", "feature_sweep_shift"]


DIABETES_FEATURES = ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6")


def diabetes_dags() -> dict[str, np.ndarray]:
    """Two precedence structures over scikit-learn's diabetes features (stand-in for Census Income, Fig. 6).

    ``"ordered partition"``: demographics first, ``{age, sex} ≺ {bmi, bp, s1..s6}`` (Frye et al.'s
    coarse form). ``"general DAG"``: a finer, illustrative causal guess: age, sex ≺ bmi, bp;
    bmi ≺ s5 (triglycerides), s6 (glucose); s1 (total cholesterol) ≺ s2 (LDL), s3 (HDL);
    s2, s3 ≺ s4 (total/HDL ratio); bp ≺ s6.

    Parameters
    ----------
    None

    Returns
    -------
    dict of str to ndarray of bool, shape (10, 10)
        Closures indexed by :data:`DIABETES_FEATURES`.

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 5.2 and Fig. 6.
    .. [2] C. Frye, C. Rowat, I. Feige, "Asymmetric Shapley values", NeurIPS 2020.
    """
    f = {name: i for i, name in enumerate(DIABETES_FEATURES)}
    op = ordered_partition_closure([[f["age"], f["sex"]], [f[x] for x in DIABETES_FEATURES[2:]]])
    e = [("age", "bmi"), ("age", "bp"), ("sex", "bmi"), ("sex", "bp"), ("bmi", "s5"), ("bmi", "s6"),
         ("s1", "s2"), ("s1", "s3"), ("s2", "s4"), ("s3", "s4"), ("bp", "s6")]  # fmt: skip
    dag = precedence_closure(len(DIABETES_FEATURES), [(f[a], f[b]) for a, b in e])
    return {"ordered partition": op, "general DAG": dag}


class ImputedFeatureUtility:
    """Feature-coalition utility with k-NN conditional imputation (Sec. 5.2, App. F.1).

    ``u_S(x) = mean_{x' ∈ kNN_S(x)} f(x_S ⊕ x'_{S^c})``, where ``kNN_S(x)`` are the ``k`` background
    rows nearest to ``x`` on the (standardised) features in ``S``; ``U(S)`` is the R² of ``u_S`` on
    the evaluation set (regression stand-in for the paper's mean true-class probability).
    ``U(∅)`` uses the whole background (the marginal), so it is the R² of a constant ≈ 0.

    Parameters
    ----------
    predict : callable
        Fitted model's ``predict``: (m, d) -> (m,).
    X_background : array (nb, d)
    X_eval, y_eval : arrays (ne, d), (ne,)
        Evaluation rows and targets (the targets must vary).
    k : int
        Neighbours used for the imputation, ``1 <= k <= nb``.

    A :class:`Utility`: called on one feature mask of shape ``(d,)``.

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 5.2 and App. F.1.
    """

    def __init__(self, predict, X_background, X_eval, y_eval, k: int = 20):
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k={k!r} must be a positive integer")
        if not callable(predict):
            raise TypeError(f"predict must be callable (m, d) -> (m,), got {type(predict).__name__}")
        Xb, Xe = _check_features(X_background, "X_background"), _check_features(X_eval, "X_eval")
        if Xb.shape[1] != Xe.shape[1]:
            raise ValueError(f"X_background and X_eval must have the same features, got {Xb.shape[1]} and {Xe.shape[1]}")
        if k > Xb.shape[0]:
            raise ValueError(f"k={k} exceeds the {Xb.shape[0]} background rows")
        try:
            ye = np.asarray(y_eval, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"y_eval must be numeric, got {type(y_eval).__name__}") from None
        if ye.shape != (Xe.shape[0],) or not np.all(np.isfinite(ye)) or np.var(ye) == 0:
            raise ValueError(f"y_eval must be finite, of shape ({Xe.shape[0]},), and not constant (R² needs a variance)")
        self.predict, self.k = predict, int(k)
        self.Xb, self.Xe, self.ye = Xb, Xe, ye
        sd = self.Xb.std(0)
        self.scale = np.where(sd > 0, sd, 1.0)
        self.n = self.Xb.shape[1]
        self.n_calls = 0

    def __call__(self, mask: np.ndarray) -> float:
        """``U(S)``: R² of the imputed predictions for the feature coalition ``mask`` (shape ``(d,)``)."""
        mask = _check_mask(mask, self.n, "a feature mask")
        self.n_calls += 1
        ne, nb = self.Xe.shape[0], self.Xb.shape[0]
        if mask.any():
            A = self.Xe[:, mask] / self.scale[mask]
            B = self.Xb[:, mask] / self.scale[mask]
            d2 = (A**2).sum(1)[:, None] + (B**2).sum(1)[None, :] - 2 * A @ B.T  # (ne, nb)
            nn = np.argsort(d2, axis=1, kind="stable")[:, : self.k]  # (ne, k)
        else:
            nn = np.tile(np.arange(nb), (ne, 1))
        Z = self.Xb[nn].copy()  # (ne, k', d) imputed rows
        Z[:, :, mask] = self.Xe[:, None, mask]
        u = self.predict(Z.reshape(-1, self.n)).reshape(Z.shape[0], Z.shape[1]).mean(1)  # (ne,)
        return float(1.0 - np.mean((self.ye - u) ** 2) / np.var(self.ye))


def feature_sweep_shift(R: np.ndarray, utility_table, base: np.ndarray, lams: np.ndarray, players) -> np.ndarray:
    """Priority sweep of single players: the change of each swept player's own exact PASV value.

    For each player ``i`` of ``players`` its weight runs over ``lams`` (the others stay 1)
    with :func:`priority_sweep` over :class:`PasvDP` on ``R``; the result is
    ``shift[i, k] = psi_i(lams[k]) - base[i]`` (rows of unswept players are zero).

    Parameters
    ----------
    R : ndarray of bool, shape (n, n)
        The precedence closure.
    utility_table : ndarray, shape (2**n,)
        The game (:func:`game_table`).
    base : ndarray, shape (n,)
        The values at equal weights.
    lams : ndarray
        The swept weights.
    players : iterable of int
        The players to sweep.

    Returns
    -------
    ndarray, shape (n, len(lams))
    References
    ----------
    .. [1] Lee et al., "Priority-Aware Shapley Value", ICML 2026 (arXiv:2602.09326), Sec. 5 (priority sweeps).
    """
    base = np.asarray(base, dtype=float)
    n = base.size
    lams = np.asarray(lams, dtype=float)
    shift = np.zeros((n, lams.size))
    for i in players:
        vals = priority_sweep(lambda lam: PasvDP(R, lam).values(utility_table), np.ones(n), [i], lams)
        shift[i] = vals[:, i] - base[i]  # change of the swept player's own value
    return shift
