r"""The conformal core of BCP and ST-BCP: scores, ranks, e-values, :math:`\tilde\alpha`, LOO, split CP.

With non-negative non-conformity scores :math:`s(x, y)`, calibration scores
:math:`S_i = s(X_i, Y_i)` (:math:`i = 1..n`) and a test input :math:`X_{n+1}`, the conformal
e-value of a candidate label is

.. math:: E(y) = \frac{(n+1)\, s(X_{n+1}, y)}{\sum_{i=1}^n S_i + s(X_{n+1}, y)},

the set at level :math:`\alpha` is :math:`\{y : E(y) < 1/\alpha\}`, and the smallest level
whose set has at most ``T`` labels is :math:`\tilde\alpha = 1/e_{(T+1)}`, the reciprocal of
the :math:`(T+1)`-th smallest e-value. Because :math:`E` increases with :math:`s`, with
:math:`w(X)` the :math:`(T+1)`-th smallest score of :math:`X`,

.. math:: \tilde\alpha = \frac{\sum_i S_i / w(X_{n+1}) + 1}{n + 1},

and Markov's inequality gives :math:`P(Y_{n+1} \notin C) \le E[\tilde\alpha]`. BCP estimates
:math:`E[\tilde\alpha]` by leave-one-out,

.. math:: \hat\alpha^{LOO} = \frac1n \sum_{j=1}^n
          \mathrm{clip}_{[0,1]}\Big(\frac{\sum_{i \ne j} S_i / w(X_j) + 1}{n}\Big).

ST-BCP feeds a transformed score :math:`h` into the same construction. Its main
transformation ("I_w") is :math:`h(x, y) = w(x)\,\mathbf 1\{r(x, y) > T\}` (``r`` the
ascending rank of the label's score, 1 = most likely label), plus :math:`10^{-4}` on the
calibration side as in the authors' notebook. The set (the ``T`` lowest-score labels) is
unchanged; only the certificate moves closer to the realised miscoverage.

References
----------
.. [1] E. Gauthier, F. Bach, M. I. Jordan. "Backward Conformal Prediction",
   arXiv:2505.13732, 2025.
.. [2] J. Liu, H. Zeng, H. Wei. "Tightening Coverage Bound for Backward Conformal
   Prediction via Non-Conformity Score Transformation", ICML 2026, arXiv:2602.01733.
   Official notebook: github.com/Junxian-Liu1/ST-BCP (``STBCP.ipynb``).
.. [3] V. Vovk, A. Gammerman, G. Shafer. *Algorithmic Learning in a Random World*,
   Springer, 2005 (split conformal prediction).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ._checks import as_float, as_float_array, as_int, as_int_array, broadcast, check_set_size

Transform = Literal["identity", "I_w", "I_ro"]
TRANSFORMS: tuple[str, ...] = ("identity", "I_w", "I_ro")
EPS_CAL = 1e-4  # offset the authors add to transformed calibration scores (avoids 0/0)


# ---------------------------------------------------------------------------------------
# scores and ranks
# ---------------------------------------------------------------------------------------
def nll_scores(log_probs: np.ndarray) -> np.ndarray:
    r"""Non-conformity scores :math:`s(x, y) = -\log p(y \mid x)`, from log-probabilities.

    The scores are computed from log-probabilities (e.g. a log-softmax of the logits), with
    no floor: flooring small probabilities (at, say, ``1e-12``) would make the scores of
    every label below the floor equal, and those artificial ties would then be broken by
    label index, changing ranks and the threshold :math:`w`.

    Parameters
    ----------
    log_probs : array (..., K)
        Finite log-probabilities, ``K >= 2``; each row must satisfy
        :math:`\log\sum_y e^{\log p_y} = 0` (within ``1e-6``).

    Returns
    -------
    array (..., K)
        Non-negative scores; lower means more conforming.

    References
    ----------
    Liu, Zeng & Wei (ICML 2026), arXiv:2602.01733, Sec. 5 (score :math:`-\log` softmax);
    the authors' notebook computes ``-F.log_softmax(logits)``.
    """
    lp = as_float_array(log_probs, "log_probs", min_ndim=1)
    if lp.shape[-1] < 2:
        raise ValueError(f"log_probs must have a class axis of length >= 2, got shape {lp.shape}")
    if np.any(lp > 1e-9):
        raise ValueError(f"log_probs must be <= 0 (they are logarithms of probabilities), got a maximum of {lp.max()!r}")
    mx = lp.max(-1, keepdims=True)
    lse = (mx + np.log(np.exp(lp - mx).sum(-1, keepdims=True)))[..., 0]
    if not np.allclose(lse, 0.0, atol=1e-6):
        raise ValueError(
            "log_probs must be normalised (log of the sum of exp over the class axis = 0); "
            f"got row values up to {np.abs(lse).max():.3g} (did you pass probabilities instead of log-probabilities?)"
        )
    return np.maximum(-lp, 0.0)


def label_ranks(scores: np.ndarray) -> np.ndarray:
    """Ascending rank of each label's score within its row, 1 = lowest score (top prediction).

    Tie rule (stable, documented): labels with exactly equal scores are ranked by label
    index, the lower index first (a stable sort). With scores computed from
    log-probabilities (:func:`nll_scores`) exact ties only occur between labels of
    exactly equal predicted probability.

    Parameters
    ----------
    scores : array (..., K)
        Finite scores, ``K >= 2``.

    Returns
    -------
    int array (..., K)
        Ranks in ``1..K``; each row is a permutation.

    References
    ----------
    Liu, Zeng & Wei (ICML 2026), arXiv:2602.01733 (rank :math:`r(x, y)`); the authors'
    notebook computes ``argsort(argsort(S)) + 1``.
    """
    s = as_float_array(scores, "scores", min_ndim=1)
    if s.shape[-1] < 2:
        raise ValueError(f"scores must have a class axis of length >= 2, got shape {s.shape}")
    return np.argsort(np.argsort(s, axis=-1, kind="stable"), axis=-1, kind="stable") + 1


def threshold_w(scores: np.ndarray, T: np.ndarray | int) -> np.ndarray:
    """``w(x)``: the (T+1)-th smallest score of each row (0-based index ``T`` after sorting).

    Parameters
    ----------
    scores : array (..., K)
        Non-negative finite scores, ``K >= 2``.
    T : int or integer array broadcastable to ``scores.shape[:-1]``
        Set size per row, in ``1..K-1``.

    Returns
    -------
    array (...)
        The threshold of each row.

    References
    ----------
    Gauthier, Bach & Jordan (2025), arXiv:2505.13732; Liu, Zeng & Wei (ICML 2026),
    arXiv:2602.01733 (:math:`w(X)`).
    """
    s = as_float_array(scores, "scores", min_ndim=1, nonneg=True)
    K = s.shape[-1]
    if K < 2:
        raise ValueError(f"scores must have a class axis of length >= 2, got shape {s.shape}")
    (T_arr,) = broadcast({"T": check_set_size(T, K)}, s.shape[:-1])
    srt = np.sort(s, axis=-1)
    return np.take_along_axis(srt, T_arr[..., None].astype(np.intp), axis=-1)[..., 0]


def transform_scores(
    true_scores: np.ndarray,
    true_ranks: np.ndarray | None,
    w: np.ndarray | None,
    T: np.ndarray | int,
    transform: Transform,
    *,
    eps: float = EPS_CAL,
) -> np.ndarray:
    r"""Scores :math:`h` under a transformation (calibration side, or every label of a test point).

    ``identity``: :math:`h = s` (plain BCP; ``true_ranks``, ``w`` and ``T`` are not used).
    ``I_w``: :math:`h = w(X)\,\mathbf 1\{r > T\} + \epsilon` (ST-BCP's main transform).
    ``I_ro``: :math:`h = \mathbf 1\{r > T\} + \epsilon` (the plain indicator of the paper's
    Fig. 5; it is paired with :math:`w \equiv 1`).

    Parameters
    ----------
    true_scores : array (...)
        Non-negative scores (of each calibration point's true label, or of every label of
        a test point).
    true_ranks : int array, same shape as ``true_scores``
        Their ranks ``r >= 1`` (:func:`label_ranks`); ``None`` allowed for ``identity``.
    w : array broadcastable to ``true_scores.shape``
        Non-negative :math:`w(X)` of the point each score belongs to; ``None`` allowed for
        ``identity`` and ``I_ro``.
    T : int or integer array broadcastable to ``true_scores.shape``
        Set size(s), ``>= 1``.
    transform : {"identity", "I_w", "I_ro"}
        The transformation.
    eps : float
        The authors' offset on transformed scores, ``>= 0``.

    Returns
    -------
    array, shape of ``true_scores``
        The transformed scores.

    References
    ----------
    Liu, Zeng & Wei (ICML 2026), arXiv:2602.01733, Sec. 4 and Fig. 5; the authors'
    notebook ``STBCP.ipynb`` (``fun_TC_C``, ``ro_fun_TC_C``).
    """
    if not isinstance(transform, str) or transform not in TRANSFORMS:
        raise ValueError(f"transform={transform!r} is not known; use one of {TRANSFORMS}")
    s = as_float_array(true_scores, "true_scores", nonneg=True)
    if transform == "identity":
        return s
    eps = as_float(eps, "eps", low=0.0)
    r = as_int_array(true_ranks, "true_ranks", low=1)
    if r.shape != s.shape:
        raise ValueError(f"true_ranks must have the shape of true_scores {s.shape}, got {r.shape}")
    (T_arr,) = broadcast({"T": as_int_array(T, "T", low=1)}, s.shape)
    miss = (r > T_arr).astype(float)
    if transform == "I_ro":
        return miss + eps
    w_arr = as_float_array(w, "w", nonneg=True)
    (w_arr,) = broadcast({"w": w_arr}, s.shape)
    return w_arr * miss + eps


# ---------------------------------------------------------------------------------------
# e-values, alpha-tilde and the leave-one-out estimate
# ---------------------------------------------------------------------------------------
def _cal_and_test(cal_h, test_h, test_name: str) -> tuple[np.ndarray, np.ndarray]:
    cal = as_float_array(cal_h, "cal_h", min_ndim=1, nonneg=True)
    tst = as_float_array(test_h, test_name, nonneg=True)
    if cal.shape[-1] < 1:
        raise ValueError(f"cal_h must hold at least one calibration score, got shape {cal.shape}")
    return cal, tst


def e_values(cal_h: np.ndarray, test_h: np.ndarray) -> np.ndarray:
    r"""Conformal e-values :math:`E(y) = (n+1)\,h(y) / (\sum_i h_i + h(y))` for every label.

    Convention for :math:`0/0`: a label whose score is 0 gets :math:`E(y) = 0` (the
    numerator vanishes) also when every calibration score is 0.

    Parameters
    ----------
    cal_h : array (..., n)
        Calibration scores (of the true labels), non-negative, ``n >= 1``.
    test_h : array (..., K)
        The test point's score for every candidate label, non-negative; the leading
        dimensions broadcast with those of ``cal_h``.

    Returns
    -------
    array (..., K)
        The e-values.

    References
    ----------
    Gauthier, Bach & Jordan (2025), arXiv:2505.13732 (the conformal e-value); Liu, Zeng
    & Wei (ICML 2026), arXiv:2602.01733, Eq. for :math:`E`.
    """
    cal, tst = _cal_and_test(cal_h, test_h, "test_h")
    if tst.ndim < 1:
        raise ValueError(f"test_h must have a label axis, got shape {tst.shape}")
    try:
        np.broadcast_shapes(cal.shape[:-1], tst.shape[:-1])
    except ValueError:
        raise ValueError(f"the leading dimensions of cal_h {cal.shape} and test_h {tst.shape} do not broadcast") from None
    n = cal.shape[-1]
    total = cal.sum(-1, keepdims=True)
    denom = total + tst
    out = np.zeros(np.broadcast_shapes(denom.shape, tst.shape))
    np.divide((n + 1) * tst, denom, out=out, where=np.broadcast_to(tst > 0, out.shape))
    return out


def alpha_tilde(cal_h: np.ndarray, w_test: np.ndarray) -> np.ndarray:
    r"""Data-dependent level :math:`\tilde\alpha = (\sum_i h_i / w(X_{n+1}) + 1)/(n+1)`.

    This is :math:`1/e_{(T+1)}` in closed form (see the module docstring); it can exceed 1,
    in which case it certifies nothing.

    Parameters
    ----------
    cal_h : array (..., n)
        Non-negative calibration scores, ``n >= 1``.
    w_test : array (...)
        The test point's (T+1)-th smallest score (or transformed score), positive;
        broadcasts with ``cal_h.shape[:-1]``.

    Returns
    -------
    array (...)
        :math:`\tilde\alpha` per trial.

    References
    ----------
    Gauthier, Bach & Jordan (2025), arXiv:2505.13732; Liu, Zeng & Wei (ICML 2026),
    arXiv:2602.01733; the authors' notebook (``alpha_compute``).
    """
    cal = as_float_array(cal_h, "cal_h", min_ndim=1, nonneg=True)
    if cal.shape[-1] < 1:
        raise ValueError(f"cal_h must hold at least one calibration score, got shape {cal.shape}")
    wt = as_float_array(w_test, "w_test")
    if np.any(wt <= 0):
        raise ValueError(
            f"w_test must be positive (a zero (T+1)-th score makes the certificate undefined), got a minimum of {wt.min()!r}"
        )
    try:
        np.broadcast_shapes(cal.shape[:-1], wt.shape)
    except ValueError:
        raise ValueError(f"w_test of shape {wt.shape} does not broadcast with cal_h's leading shape {cal.shape[:-1]}") from None
    n = cal.shape[-1]
    return (cal.sum(-1) / wt + 1.0) / (n + 1)


def alpha_tilde_bruteforce(cal_h: np.ndarray, test_h: np.ndarray, T: int) -> float:
    r"""Oracle for :func:`alpha_tilde`: the smallest :math:`\alpha` with :math:`|\{y: E(y) < 1/\alpha\}| \le T`.

    The set size only changes at :math:`\alpha = 1/E(y)`, so the infimum is attained at one
    of these K candidate levels; this function checks each of them directly, from the
    largest e-value down. One trial (1-D inputs) only. E-values of zero-score labels are 0
    (see :func:`e_values`), so they are never NaN and always inside the set.

    Parameters
    ----------
    cal_h : array (n,)
        Non-negative calibration scores, ``n >= 1``.
    test_h : array (K,)
        Non-negative scores of the test point's labels, ``K >= 2``.
    T : int
        Set size in ``1..K-1``.

    Returns
    -------
    float
        :math:`\tilde\alpha`.

    References
    ----------
    Gauthier, Bach & Jordan (2025), arXiv:2505.13732 (definition of :math:`\tilde\alpha`).
    """
    cal, tst = _cal_and_test(cal_h, test_h, "test_h")
    if cal.ndim != 1 or tst.ndim != 1:
        raise ValueError(f"alpha_tilde_bruteforce takes one trial: 1-D cal_h and test_h, got shapes {cal.shape} and {tst.shape}")
    K = tst.shape[0]
    if K < 2:
        raise ValueError(f"test_h must hold K >= 2 label scores, got {K}")
    T = as_int(T, "T", low=1, high=K - 1)
    ev = e_values(cal, tst)
    # thresholds 1/alpha = E(y), from the largest (smallest alpha) down; compare in e-space
    for c in np.sort(ev)[::-1]:
        if np.sum(ev < c) <= T:
            if c <= 0:
                raise ValueError("the (T+1)-th smallest e-value is 0 (a zero (T+1)-th score): the certificate is undefined")
            return float(1.0 / c)
    raise AssertionError("unreachable: the largest candidate always gives a set of size <= T")  # pragma: no cover


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
        Non-negative calibration scores, ``n >= 2``.
    w_cal : array (..., n)
        Each calibration point's own ``w(X_j)``, positive.
    corrected : bool
        Use the correlation-corrected estimate :math:`\hat b`.

    Returns
    -------
    array (...)
        The estimate per trial.

    References
    ----------
    Gauthier, Bach & Jordan (2025), arXiv:2505.13732 (LOO estimate); Liu, Zeng & Wei
    (ICML 2026), arXiv:2602.01733, Fig. 4; the authors' notebook (``alpha_compute``,
    ``cor_alpha_compute``).
    """
    if not isinstance(corrected, (bool, np.bool_)):
        raise TypeError(f"corrected must be a bool, got {corrected!r}")
    h = as_float_array(cal_h, "cal_h", min_ndim=1, nonneg=True)
    w = as_float_array(w_cal, "w_cal", min_ndim=1, positive=True)
    if h.shape != w.shape:
        raise ValueError(f"cal_h and w_cal must have the same shape, got {h.shape} and {w.shape}")
    n = h.shape[-1]
    if n < 2:
        raise ValueError(f"leave-one-out needs n >= 2 calibration points, got n={n}")
    rest = h.sum(-1, keepdims=True) - h  # sum over i != j, O(n) per trial
    a_j = (rest / w + 1.0) / n
    if corrected:
        if np.any(rest <= 0):
            raise ValueError("the b-hat correction needs the other calibration scores to have a positive sum for every j")
        a_j = a_j * (n * h / rest)
    return np.clip(a_j, 0.0, 1.0).mean(-1)


# ---------------------------------------------------------------------------------------
# sets and size rules
# ---------------------------------------------------------------------------------------
def prediction_sets(cal_h: np.ndarray, test_h: np.ndarray, T: int) -> np.ndarray:
    """BCP prediction set of one test point as a boolean mask over labels: ``E(y) < e_(T+1)``.

    Parameters
    ----------
    cal_h : array (n,)
        Non-negative calibration scores, ``n >= 1``.
    test_h : array (K,)
        Non-negative scores of the test point's labels.
    T : int
        Set size in ``1..K-1``.

    Returns
    -------
    bool array (K,)
        ``True`` for the labels in the set (at most ``T``; fewer only under exact ties).

    References
    ----------
    Gauthier, Bach & Jordan (2025), arXiv:2505.13732.
    """
    cal, tst = _cal_and_test(cal_h, test_h, "test_h")
    if cal.ndim != 1 or tst.ndim != 1:
        raise ValueError(f"prediction_sets takes one trial: 1-D cal_h and test_h, got shapes {cal.shape} and {tst.shape}")
    K = tst.shape[0]
    if K < 2:
        raise ValueError(f"test_h must hold K >= 2 label scores, got {K}")
    T = as_int(T, "T", low=1, high=K - 1)
    ev = e_values(cal, tst)
    return ev < np.sort(ev)[T]


def entropy_size(probs: np.ndarray, T_min: int, T_max: int, *, power: float = 2.5) -> np.ndarray:
    r"""Input-adaptive set size T(X) from the predictive entropy (the paper's Table 1 rule).

    .. math:: T(X) = T_{min} - 1 + \#\{l : H(X) \ge b_l\},\quad
              b_l = \log K\,\big(\tfrac{l-1}{L-1}\big)^{p},\; l = 1..L,\; L = T_{max}-T_{min}+1.

    Parameters
    ----------
    probs : array (..., K)
        Predicted probabilities; non-negative, each row summing to 1.
    T_min, T_max : int
        ``1 <= T_min < T_max <= K - 1``.
    power : float
        The exponent ``p > 0`` (2.5 in the authors' notebook).

    Returns
    -------
    int array (...)
        T(X) per row, in ``T_min..T_max``.

    References
    ----------
    Liu, Zeng & Wei (ICML 2026), arXiv:2602.01733, Table 1 (T(X)); the authors' notebook
    (``bin_f_thresholds``, ``T_ad``).
    """
    p = as_float_array(probs, "probs", min_ndim=1)
    K = p.shape[-1]
    if np.any(p < 0) or np.any(p > 1) or not np.allclose(p.sum(-1), 1.0, atol=1e-6):
        raise ValueError("probs must lie in [0, 1] and each row must sum to 1")
    T_min = as_int(T_min, "T_min")
    T_max = as_int(T_max, "T_max")
    power = as_float(power, "power", low=0.0, open_low=True)
    if not (1 <= T_min < T_max <= K - 1):
        raise ValueError(f"need 1 <= T_min < T_max <= K-1={K - 1}, got T_min={T_min}, T_max={T_max}")
    H = -(p * np.log(np.clip(p, 1e-300, 1.0))).sum(-1)  # p log p -> 0 as p -> 0: the clip is exact here
    L = T_max - T_min + 1
    b = np.log(K) * (np.arange(L) / (L - 1)) ** power  # (L,)
    return (T_min - 1 + (H[..., None] >= b).sum(-1)).astype(int)


# ---------------------------------------------------------------------------------------
# split conformal prediction, the reference point
# ---------------------------------------------------------------------------------------
def split_conformal_quantile(cal_scores: np.ndarray, alpha: float) -> np.ndarray:
    r"""Split-conformal threshold :math:`\hat q`: the :math:`\lceil (n+1)(1-\alpha)\rceil`-th smallest score.

    Parameters
    ----------
    cal_scores : array (..., n)
        Finite calibration scores, ``n >= 1``.
    alpha : float in (0, 1)
        Target miscoverage.

    Returns
    -------
    array (...)
        ``inf`` where :math:`\lceil (n+1)(1-\alpha)\rceil > n` (the set is then every label).

    References
    ----------
    Vovk, Gammerman & Shafer (2005); Papadopoulos et al., "Inductive confidence
    machines for regression", ECML 2002.
    """
    alpha = as_float(alpha, "alpha", low=0.0, high=1.0, open_low=True, open_high=True)
    s = np.sort(as_float_array(cal_scores, "cal_scores", min_ndim=1), axis=-1)
    n = s.shape[-1]
    if n < 1:
        raise ValueError(f"cal_scores must hold at least one calibration score, got shape {s.shape}")
    k = int(np.ceil((n + 1) * (1 - alpha)))
    if k > n:
        return np.full(s.shape[:-1], np.inf)
    return s[..., k - 1]
