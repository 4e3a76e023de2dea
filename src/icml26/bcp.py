r"""Backward conformal prediction (BCP) and its score transformation ST-BCP.

Backward conformal prediction [1]_ fixes the size ``T`` of the prediction set and
reports the miscoverage it can certify. With non-negative non-conformity scores
:math:`s(x, y)`, calibration scores :math:`S_i = s(X_i, Y_i)` (:math:`i = 1..n`) and a
test input :math:`X_{n+1}`, the conformal e-value of a candidate label is

.. math:: E(y) = \frac{(n+1)\, s(X_{n+1}, y)}{\sum_{i=1}^n S_i + s(X_{n+1}, y)},

the set at level :math:`\alpha` is :math:`\{y : E(y) < 1/\alpha\}`, and the smallest
level whose set has at most ``T`` labels is :math:`\tilde\alpha = 1/e_{(T+1)}`, the
reciprocal of the :math:`(T+1)`-th smallest e-value. Because :math:`E` increases with
:math:`s`, with :math:`w(X)` the :math:`(T+1)`-th smallest score of :math:`X`,

.. math:: \tilde\alpha = \frac{\sum_i S_i / w(X_{n+1}) + 1}{n + 1},

and Markov's inequality gives :math:`P(Y_{n+1} \notin C) \le E[\tilde\alpha]`. BCP
estimates :math:`E[\tilde\alpha]` by leave-one-out,

.. math:: \hat\alpha^{LOO} = \frac1n \sum_{j=1}^n
          \mathrm{clip}_{[0,1]}\Big(\frac{\sum_{i \ne j} S_i / w(X_j) + 1}{n}\Big).

ST-BCP [2]_ feeds a transformed score :math:`h` into the same construction. Its main
transformation ("I_w") is :math:`h(x, y) = w(x)\,\mathbf 1\{r(x, y) > T\}` (``r`` the
ascending rank of the label's score, 1 = most likely label), plus :math:`10^{-4}` on the
calibration side as in the authors' notebook, so only calibration points whose true
label falls outside their own top-``T`` contribute. The set (the ``T`` lowest-score
labels) is unchanged; only the certificate moves closer to the realised miscoverage.

References
----------
.. [1] E. Gauthier, F. Bach, M. I. Jordan. "Backward Conformal Prediction",
   arXiv:2505.13732, 2025.
.. [2] J. Liu, H. Zeng, H. Wei. "Tightening Coverage Bound for Backward Conformal
   Prediction via Non-Conformity Score Transformation", ICML 2026, arXiv:2602.01733.
   Official notebook: github.com/Junxian-Liu1/ST-BCP (``STBCP.ipynb``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Transform = Literal["identity", "I_w", "I_ro"]
TRANSFORMS: tuple[str, ...] = ("identity", "I_w", "I_ro")
EPS_CAL = 1e-4  # offset the authors add to transformed calibration scores (avoids 0/0)


# ---------------------------------------------------------------------------------------
# scores and ranks
# ---------------------------------------------------------------------------------------
def nll_scores(probs: np.ndarray, *, floor: float = 1e-12) -> np.ndarray:
    r"""Non-conformity scores :math:`s(x, y) = -\log p(y \mid x)`.

    Parameters
    ----------
    probs : array (..., K)
        Predicted class probabilities; each row must sum to 1.
    floor : float
        Probabilities are clipped below at ``floor`` before the log.

    Returns
    -------
    array (..., K)
        Non-negative scores; lower means more conforming.
    """
    p = np.asarray(probs, dtype=float)
    if p.ndim < 1 or p.shape[-1] < 2:
        raise ValueError(f"probs must have a class axis of length >= 2, got shape {p.shape}")
    if np.any(p < 0) or not np.allclose(p.sum(-1), 1.0, atol=1e-6):
        raise ValueError("probs must be non-negative and each row must sum to 1")
    return -np.log(np.clip(p, floor, 1.0))


def label_ranks(scores: np.ndarray) -> np.ndarray:
    """Ascending rank of each label's score within its row, 1 = lowest score (top prediction).

    Ties are broken by label index (stable sort), as ``argsort(argsort(.))`` does.
    """
    s = np.asarray(scores)
    return np.argsort(np.argsort(s, axis=-1, kind="stable"), axis=-1, kind="stable") + 1


def _check_T(T: np.ndarray | int, K: int) -> np.ndarray:
    T_arr = np.asarray(T)
    if not np.issubdtype(T_arr.dtype, np.integer):
        raise ValueError(f"T must be an integer set size, got {T!r}")
    if np.any(T_arr < 1) or np.any(T_arr > K - 1):
        raise ValueError(f"T must lie in 1..K-1 = 1..{K - 1} (a set of all K labels certifies nothing), got {T!r}")
    return T_arr


def threshold_w(scores: np.ndarray, T: np.ndarray | int) -> np.ndarray:
    """``w(x)``: the (T+1)-th smallest score of each row (0-based index ``T`` after sorting).

    Parameters
    ----------
    scores : array (..., K)
    T : int or integer array broadcastable to ``scores.shape[:-1]``
        Set size per row, in 1..K-1.

    Returns
    -------
    array (...)
    """
    s = np.asarray(scores, dtype=float)
    T_arr = np.broadcast_to(_check_T(T, s.shape[-1]), s.shape[:-1])
    srt = np.sort(s, axis=-1)
    return np.take_along_axis(srt, T_arr[..., None], axis=-1)[..., 0]


def transform_scores(
    true_scores: np.ndarray,
    true_ranks: np.ndarray,
    w: np.ndarray,
    T: np.ndarray | int,
    transform: Transform,
    *,
    eps: float = EPS_CAL,
) -> np.ndarray:
    r"""Calibration-side scores :math:`h_i` under a transformation.

    ``identity``: :math:`h_i = S_i` (plain BCP).
    ``I_w``: :math:`h_i = w(X_i)\,\mathbf 1\{r_i > T_i\} + \epsilon` (ST-BCP's main transform).
    ``I_ro``: :math:`h_i = \mathbf 1\{r_i > T_i\} + \epsilon` (the plain indicator of the
    paper's Fig. 5; it is paired with :math:`w \equiv 1`).

    Parameters
    ----------
    true_scores, true_ranks, w : arrays of the same shape (..., n)
        Score and rank of each calibration point's true label, and its ``w(X_i)``.
    T : int or integer array broadcastable to the same shape
    transform : {"identity", "I_w", "I_ro"}
    eps : float
        The authors' offset on transformed calibration scores.
    """
    if transform not in TRANSFORMS:
        raise ValueError(f"transform={transform!r} is not known; use one of {TRANSFORMS}")
    s = np.asarray(true_scores, dtype=float)
    if transform == "identity":
        return s
    miss = (np.asarray(true_ranks) > np.asarray(T)).astype(float)
    if transform == "I_w":
        return np.asarray(w, dtype=float) * miss + eps
    return miss + eps


# ---------------------------------------------------------------------------------------
# e-values, alpha-tilde and the leave-one-out estimate
# ---------------------------------------------------------------------------------------
def e_values(cal_h: np.ndarray, test_h: np.ndarray) -> np.ndarray:
    r"""Conformal e-values :math:`E(y) = (n+1)\,h(y) / (\sum_i h_i + h(y))` for every label.

    Parameters
    ----------
    cal_h : array (..., n)
        Calibration scores (of the true labels), non-negative.
    test_h : array (..., K)
        The test point's score for every candidate label.

    Returns
    -------
    array (..., K)
    """
    cal = np.asarray(cal_h, dtype=float)
    tst = np.asarray(test_h, dtype=float)
    if np.any(cal < 0) or np.any(tst < 0):
        raise ValueError("BCP needs non-negative scores (e-values come from Markov's inequality)")
    n = cal.shape[-1]
    total = cal.sum(-1, keepdims=True)
    return (n + 1) * tst / (total + tst)


def alpha_tilde(cal_h: np.ndarray, w_test: np.ndarray) -> np.ndarray:
    r"""Data-dependent level :math:`\tilde\alpha = (\sum_i h_i / w(X_{n+1}) + 1)/(n+1)`.

    This is :math:`1/e_{(T+1)}` in closed form (see the module docstring); it can exceed 1,
    in which case it certifies nothing.

    Parameters
    ----------
    cal_h : array (..., n)
    w_test : array (...)
        The test point's (T+1)-th smallest score (or transformed score).
    """
    cal = np.asarray(cal_h, dtype=float)
    n = cal.shape[-1]
    wt = np.asarray(w_test, dtype=float)
    if np.any(wt <= 0):
        raise ValueError("w(X_test) must be positive; a zero (T+1)-th score makes the certificate undefined")
    return (cal.sum(-1) / wt + 1.0) / (n + 1)


def alpha_tilde_bruteforce(cal_h: np.ndarray, test_h: np.ndarray, T: int) -> float:
    r"""Oracle for :func:`alpha_tilde`: the smallest :math:`\alpha` with :math:`|\{y: E(y) < 1/\alpha\}| \le T`.

    The set size only changes at :math:`\alpha = 1/E(y)`, so the infimum is attained
    at one of these K candidate levels; this function checks each of them directly.
    One trial (1-D inputs) only.
    """
    ev = e_values(cal_h, test_h)
    # thresholds 1/alpha = E(y), from the largest (smallest alpha) down; compare in e-space
    for c in np.sort(ev)[::-1]:
        if np.sum(ev < c) <= T:
            return float(1.0 / c)
    raise AssertionError("unreachable: the largest candidate always gives a set of size <= T")


def loo_alpha(cal_h: np.ndarray, w_cal: np.ndarray, *, corrected: bool = False) -> np.ndarray:
    r"""Leave-one-out estimate :math:`\hat\alpha^{LOO}` of :math:`E[\tilde\alpha]`.

    .. math:: \hat\alpha_j = \mathrm{clip}_{[0,1]}\Big(\frac{\sum_{i \ne j} h_i / w(X_j) + 1}{n}\Big),
              \qquad \hat\alpha^{LOO} = \frac1n \sum_j \hat\alpha_j .

    With ``corrected=True`` each term is multiplied by the calibration point's own e-value
    :math:`E_j = n h_j / \sum_{i \ne j} h_i` before clipping (the authors' correlation
    correction :math:`\hat b`, their Fig. 4).

    Parameters
    ----------
    cal_h : array (..., n)
    w_cal : array (..., n)
        Each calibration point's own ``w(X_j)``.

    Returns
    -------
    array (...)
    """
    h = np.asarray(cal_h, dtype=float)
    w = np.asarray(w_cal, dtype=float)
    if h.shape != w.shape:
        raise ValueError(f"cal_h and w_cal must have the same shape, got {h.shape} and {w.shape}")
    n = h.shape[-1]
    if n < 2:
        raise ValueError(f"leave-one-out needs n >= 2 calibration points, got n={n}")
    rest = h.sum(-1, keepdims=True) - h  # sum over i != j, O(n) per trial
    a_j = (rest / w + 1.0) / n
    if corrected:
        a_j = a_j * (n * h / rest)
    return np.clip(a_j, 0.0, 1.0).mean(-1)


# ---------------------------------------------------------------------------------------
# size rules
# ---------------------------------------------------------------------------------------
def entropy_size(probs: np.ndarray, T_min: int, T_max: int, *, power: float = 2.5) -> np.ndarray:
    r"""Input-adaptive set size T(X) from the predictive entropy (the paper's Table 1 rule).

    .. math:: T(X) = T_{min} - 1 + \#\{l : H(X) \ge b_l\},\quad
              b_l = \log K\,\big(\tfrac{l-1}{L-1}\big)^{p},\; l = 1..L,\; L = T_{max}-T_{min}+1.

    Parameters
    ----------
    probs : array (..., K)
    T_min, T_max : int
        ``1 <= T_min < T_max <= K - 1``.
    power : float
        The exponent ``p`` (2.5 in the authors' notebook).
    """
    p = np.asarray(probs, dtype=float)
    K = p.shape[-1]
    if not (1 <= T_min < T_max <= K - 1):
        raise ValueError(f"need 1 <= T_min < T_max <= K-1={K - 1}, got T_min={T_min}, T_max={T_max}")
    H = -(p * np.log(np.clip(p, 1e-300, 1.0))).sum(-1)
    L = T_max - T_min + 1
    b = np.log(K) * (np.arange(L) / (L - 1)) ** power  # (L,)
    return (T_min - 1 + (H[..., None] >= b).sum(-1)).astype(int)


# ---------------------------------------------------------------------------------------
# the trial protocol
# ---------------------------------------------------------------------------------------
@dataclass
class TrialResult:
    """Per-trial quantities of one BCP run (arrays of shape (trials,)).

    Attributes
    ----------
    loo : leave-one-out estimate :math:`\\hat\\alpha^{LOO}` per trial
    alpha : the test point's :math:`\\tilde\\alpha` per trial
    miss : 1 if the test label is outside the set, per trial
    set_size : size of the test point's prediction set
    """

    loo: np.ndarray
    alpha: np.ndarray
    miss: np.ndarray
    set_size: np.ndarray

    def summary(self) -> dict[str, float]:
        """MED, STD, MSE, GAP and the signed gap, as in the authors' notebook.

        ``m`` is the realised miscoverage (mean of ``miss``); ``GAP = mean |loo - m|``;
        ``MSE = mean (loo - E[alpha~])^2`` with ``E[alpha~]`` the Monte-Carlo mean of ``alpha``.
        """
        m = float(self.miss.mean())
        ea = float(self.alpha.mean())
        return {
            "m": m,
            "E_alpha": ea,
            "MED": float(np.median(self.loo)),
            "STD": float(np.std(self.loo)),
            "MSE": float(np.mean((self.loo - ea) ** 2)),
            "GAP": float(np.mean(np.abs(self.loo - m))),
            "signed_gap": float(np.mean(self.loo - m)),
            "mean_size": float(self.set_size.mean()),
        }


def sample_trials(n_pool: int, n_cal: int, n_trials: int, rng: np.random.Generator) -> np.ndarray:
    """Indices (n_trials, n_cal + 1) drawn with replacement from a pool; column 0 is the test point.

    This mirrors the authors' protocol (``torch.randint`` over the test split).
    """
    if n_pool < 2 or n_cal < 2 or n_trials < 1:
        raise ValueError(f"need n_pool >= 2, n_cal >= 2, n_trials >= 1; got {n_pool}, {n_cal}, {n_trials}")
    return rng.integers(0, n_pool, size=(n_trials, n_cal + 1))


def run_bcp(
    scores: np.ndarray,
    labels: np.ndarray,
    idx: np.ndarray,
    T: int | np.ndarray,
    transform: Transform = "identity",
    *,
    corrected: bool = False,
) -> TrialResult:
    r"""Run BCP (``transform="identity"``) or ST-BCP on many trials at once.

    Parameters
    ----------
    scores : array (N, K)
        Non-conformity scores of every pool point for every label.
    labels : int array (N,)
        True labels of the pool.
    idx : int array (trials, n + 1)
        Pool indices per trial, column 0 the test point (:func:`sample_trials`).
    T : int or int array (N,)
        Set size: a constant, or one per pool point (an input-adaptive rule such as
        :func:`entropy_size`).
    transform : {"identity", "I_w", "I_ro"}
    corrected : bool
        Use the correlation-corrected estimate :math:`\hat b` (see :func:`loo_alpha`).

    Returns
    -------
    TrialResult
    """
    S = np.asarray(scores, dtype=float)
    y = np.asarray(labels)
    N, K = S.shape
    if y.shape != (N,):
        raise ValueError(f"labels must have shape ({N},), got {y.shape}")
    if y.min() < 0 or y.max() >= K:
        raise ValueError(f"labels must lie in 0..{K - 1}")
    T_pool = np.broadcast_to(_check_T(T, K), (N,))
    ranks = label_ranks(S)  # (N, K)
    true_s = S[np.arange(N), y]  # (N,)
    true_r = ranks[np.arange(N), y]  # (N,)
    w_pool = threshold_w(S, T_pool)  # (N,)
    if transform == "I_ro":
        w_pool = np.ones_like(w_pool)
    h_pool = transform_scores(true_s, true_r, w_pool, T_pool, transform)  # (N,)

    test, cal = idx[:, 0], idx[:, 1:]  # (trials,), (trials, n)
    loo = loo_alpha(h_pool[cal], w_pool[cal], corrected=corrected)
    alpha = alpha_tilde(h_pool[cal], w_pool[test])
    if corrected:
        # b-hat targets E[alpha~ * E(Y_test)]; its Monte-Carlo counterpart uses the test e-value.
        n = cal.shape[1]
        h_test = transform_scores(true_s[test], true_r[test], w_pool[test], T_pool[test], transform)
        alpha = np.clip(alpha * (n + 1) * h_test / h_pool[cal].sum(-1), 0.0, 1.0)
    miss = (true_r[test] > T_pool[test]).astype(float)
    return TrialResult(loo=loo, alpha=alpha, miss=miss, set_size=T_pool[test].astype(float))


def prediction_sets(
    cal_h: np.ndarray, test_h: np.ndarray, T: int
) -> np.ndarray:
    """BCP prediction set of one test point as a boolean mask over labels: ``E(y) < e_(T+1)``.

    Parameters
    ----------
    cal_h : array (n,)
    test_h : array (K,)
    T : int
    """
    ev = e_values(cal_h, test_h)
    K = ev.shape[-1]
    _check_T(T, K)
    e_T1 = np.sort(ev)[T]
    return ev < e_T1


# ---------------------------------------------------------------------------------------
# split conformal prediction, the reference point
# ---------------------------------------------------------------------------------------
def split_conformal_quantile(cal_scores: np.ndarray, alpha: float) -> np.ndarray:
    r"""Split-conformal threshold :math:`\hat q`: the :math:`\lceil (n+1)(1-\alpha)\rceil`-th smallest score.

    Parameters
    ----------
    cal_scores : array (..., n)
    alpha : float in (0, 1)

    Returns
    -------
    array (...)
        ``inf`` where :math:`\lceil (n+1)(1-\alpha)\rceil > n` (the set is then every label).
    """
    if not (0.0 < alpha < 1.0):
        raise ValueError(f"alpha={alpha!r} must lie in (0, 1)")
    s = np.sort(np.asarray(cal_scores, dtype=float), axis=-1)
    n = s.shape[-1]
    k = int(np.ceil((n + 1) * (1 - alpha)))
    if k > n:
        return np.full(s.shape[:-1], np.inf)
    return s[..., k - 1]


def run_split_conformal(scores: np.ndarray, labels: np.ndarray, idx: np.ndarray, alpha: float) -> dict[str, float]:
    """Split conformal prediction over the same trials: coverage and mean set size.

    The set of the test point is ``{y : s(x, y) <= q_hat}``; coverage is guaranteed to be
    at least ``1 - alpha`` on average over trials.
    """
    S = np.asarray(scores, dtype=float)
    y = np.asarray(labels)
    true_s = S[np.arange(len(y)), y]
    test, cal = idx[:, 0], idx[:, 1:]
    q = split_conformal_quantile(true_s[cal], alpha)  # (trials,)
    covered = true_s[test] <= q
    size = (S[test] <= q[:, None]).sum(-1)
    return {"alpha": alpha, "coverage": float(covered.mean()), "mean_size": float(size.mean())}


# ---------------------------------------------------------------------------------------
# the comparison the paper's Table 1 makes
# ---------------------------------------------------------------------------------------
METHODS: dict[str, tuple[str, bool]] = {
    "BCP": ("identity", False),
    "ST-BCP (I_w)": ("I_w", False),
    "ST-BCP (I_ro)": ("I_ro", False),
    "ST-BCP (I_w, b-hat)": ("I_w", True),
}


def compare_methods(
    scores: np.ndarray,
    labels: np.ndarray,
    T: int | np.ndarray,
    *,
    n_cal: int,
    n_trials: int,
    rng: np.random.Generator,
    methods: dict[str, tuple[str, bool]] | None = None,
) -> list[dict[str, float | str]]:
    """Run every method on the same trials and return one summary row per method.

    The trials (1 test + ``n_cal`` calibration points, drawn with replacement) are shared,
    so differences between methods are not sampling noise of the trials.
    """
    methods = METHODS if methods is None else methods
    idx = sample_trials(len(labels), n_cal, n_trials, rng)
    rows = []
    for name, (transform, corrected) in methods.items():
        res = run_bcp(scores, labels, idx, T, transform, corrected=corrected)  # type: ignore[arg-type]
        rows.append({"method": name, **res.summary()})
    return rows
