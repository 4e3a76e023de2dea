r"""The trial protocol of the paper's Table 1: many (1 test + n calibration) trials, BCP beside ST-BCP.

Each trial draws ``n + 1`` indices with replacement from a held-out pool (column 0 the
test point, as in the authors' notebook); every method runs on the same trials, so the
differences between methods are not sampling noise of the trials.

:func:`authors_shifted_sizes` replicates, as a labelled variant, the indexing of the
authors' T(X) cell, which hands each point the set size of its neighbour (see its
docstring); it exists only to show what that indexing does to the T(X) rows.

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

import numpy as np

from .._common import RandomState, check_random_state
from ._checks import as_float_array, as_int, as_int_array, check_set_size
from .conformal import TRANSFORMS, Transform, alpha_tilde, label_ranks, loo_alpha, split_conformal_quantile, transform_scores


@dataclass
class TrialResult:
    """Per-trial quantities of one BCP run (arrays of shape (trials,)).

    Parameters
    ----------
    loo : array (trials,)
        Leave-one-out estimate :math:`\\hat\\alpha^{LOO}` per trial.
    alpha : array (trials,)
        The test point's :math:`\\tilde\\alpha` per trial.
    miss : array (trials,)
        1 if the test label is outside the set, per trial.
    set_size : array (trials,)
        Size of the test point's prediction set.

    References
    ----------
    Liu, Zeng & Wei (ICML 2026), arXiv:2602.01733, Table 1 (MED, STD, MSE, GAP); the
    authors' notebook (``a_an``).
    """

    loo: np.ndarray
    alpha: np.ndarray
    miss: np.ndarray
    set_size: np.ndarray

    def __post_init__(self) -> None:
        arrays = {k: as_float_array(getattr(self, k), k) for k in ("loo", "alpha", "miss", "set_size")}
        shapes = {k: a.shape for k, a in arrays.items()}
        if len(set(shapes.values())) != 1 or arrays["loo"].ndim != 1 or arrays["loo"].size == 0:
            raise ValueError(f"TrialResult needs four non-empty 1-D arrays of one length, got shapes {shapes}")
        for k, a in arrays.items():
            setattr(self, k, a)

    def summary(self) -> dict[str, float]:
        """MED, STD, MSE, GAP and the signed gap, as in the authors' notebook.

        ``m`` is the realised miscoverage (mean of ``miss``); ``GAP = mean |loo - m|``;
        ``MSE = mean (loo - E[alpha~])^2`` with ``E[alpha~]`` the Monte-Carlo mean of ``alpha``.

        Returns
        -------
        dict
            ``m``, ``E_alpha``, ``MED``, ``STD``, ``MSE``, ``GAP``, ``signed_gap``, ``mean_size``.
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


def sample_trials(n_pool: int, n_cal: int, n_trials: int, random_state: RandomState = None) -> np.ndarray:
    """Indices (n_trials, n_cal + 1) drawn with replacement from a pool; column 0 is the test point.

    Parameters
    ----------
    n_pool : int
        Pool size, ``>= 2``.
    n_cal : int
        Calibration points per trial, ``>= 2``.
    n_trials : int
        Number of trials, ``>= 1``.
    random_state : int, numpy.random.Generator or None
        Randomness (see :func:`icml26._common.check_random_state`).

    Returns
    -------
    int array (n_trials, n_cal + 1)
        Pool indices.

    References
    ----------
    The authors' notebook (``torch.randint`` over the test split in ``funS_t3``).
    """
    n_pool = as_int(n_pool, "n_pool", low=2)
    n_cal = as_int(n_cal, "n_cal", low=2)
    n_trials = as_int(n_trials, "n_trials", low=1)
    rng = check_random_state(random_state)
    return rng.integers(0, n_pool, size=(n_trials, n_cal + 1))


def authors_shifted_sizes(sizes: np.ndarray) -> np.ndarray:
    """The per-trial set sizes as the authors' T(X) cell hands them out (a replication of their indexing).

    The cell of ``STBCP.ipynb`` that produces the T(X) rows concatenates the entropies as
    ``[calibration_1..n, test]`` and then reads column 0 as the test point's size and
    columns 1..n as the calibration points' sizes. So the test point receives the size of
    calibration point 1, calibration point ``j`` that of calibration point ``j + 1``, and
    calibration point ``n`` that of the test point. In our column order (test first) this
    is a cyclic shift by one column. The paper's definition (each point its own
    ``T(X)``) is what :func:`run_bcp` uses by default; this variant is for comparison.

    Parameters
    ----------
    sizes : int array (trials, n + 1)
        Each trial's sizes in our order: column 0 the test point, then the calibration points.

    Returns
    -------
    int array (trials, n + 1)
        The sizes each point receives under the authors' indexing.

    References
    ----------
    The authors' notebook ``STBCP.ipynb``, cell "tabel1:T(X)" (``enmo_t2 = torch.cat([cal,
    test])`` then ``T_t2[:, 0]`` read as the test point's size).
    """
    s = as_int_array(sizes, "sizes", low=1)
    if s.ndim != 2 or s.shape[0] < 1 or s.shape[1] < 2:
        raise ValueError(f"sizes must have shape (trials, n + 1) with trials >= 1 and n >= 1, got {s.shape}")
    return np.roll(s, -1, axis=1)


def _check_pool(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    S = as_float_array(scores, "scores", nonneg=True)
    if S.ndim != 2 or S.shape[0] < 1 or S.shape[1] < 2:
        raise ValueError(f"scores must have shape (N, K) with N >= 1 and K >= 2, got {S.shape}")
    N, K = S.shape
    y = as_int_array(labels, "labels", low=0, high=K - 1)
    if y.shape != (N,):
        raise ValueError(f"labels must have shape ({N},), got {y.shape}")
    return S, y


def _check_idx(idx, N: int) -> np.ndarray:
    ix = as_int_array(idx, "idx", low=0, high=N - 1)
    if ix.ndim != 2 or ix.shape[0] < 1 or ix.shape[1] < 3:
        raise ValueError(f"idx must have shape (trials, n + 1) with n >= 2 (see sample_trials), got {ix.shape}")
    return ix


def run_bcp(
    scores: np.ndarray,
    labels: np.ndarray,
    idx: np.ndarray,
    T: int | np.ndarray,
    transform: Transform = "identity",
    *,
    corrected: bool = False,
    authors_size_shift: bool = False,
) -> TrialResult:
    r"""Run BCP (``transform="identity"``) or ST-BCP on many trials at once.

    Parameters
    ----------
    scores : array (N, K)
        Non-negative non-conformity scores of every pool point for every label.
    labels : int array (N,)
        True labels of the pool, in ``0..K-1``.
    idx : int array (trials, n + 1)
        Pool indices per trial, column 0 the test point (:func:`sample_trials`), ``n >= 2``.
    T : int or int array (N,)
        Set size in ``1..K-1``: a constant, or one per pool point (an input-adaptive rule
        such as :func:`~icml26.bcp.conformal.entropy_size`).
    transform : {"identity", "I_w", "I_ro"}
        The score transformation.
    corrected : bool
        Use the correlation-corrected estimate :math:`\hat b` (see
        :func:`~icml26.bcp.conformal.loo_alpha`).
    authors_size_shift : bool
        Hand each point the size of its neighbour as the authors' T(X) cell does
        (:func:`authors_shifted_sizes`). ``False`` (the default) is the paper's
        definition; ``True`` exists only to show what that indexing changes.

    Returns
    -------
    TrialResult
        Per-trial LOO estimate, :math:`\tilde\alpha`, miss indicator and set size.

    References
    ----------
    Gauthier, Bach & Jordan (2025), arXiv:2505.13732; Liu, Zeng & Wei (ICML 2026),
    arXiv:2602.01733, Table 1; the authors' notebook (``fun_TC_C``, ``cor_fun_TC_C``,
    cell "tabel1:T(X)").
    """
    S, y = _check_pool(scores, labels)
    N, K = S.shape
    ix = _check_idx(idx, N)
    if not isinstance(transform, str) or transform not in TRANSFORMS:
        raise ValueError(f"transform={transform!r} is not known; use one of {TRANSFORMS}")
    for flag, name in ((corrected, "corrected"), (authors_size_shift, "authors_size_shift")):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be a bool, got {flag!r}")
    T_arr = check_set_size(T, K)
    if T_arr.ndim == 0:
        T_pool = np.full(N, int(T_arr))
    elif T_arr.shape == (N,):
        T_pool = T_arr
    else:
        raise ValueError(f"T must be an int or an int array of shape ({N},) (one size per pool point), got shape {T_arr.shape}")
    ranks = label_ranks(S)  # (N, K); ties by label index
    true_s = S[np.arange(N), y]  # (N,)
    true_r = ranks[np.arange(N), y]  # (N,)
    srt = np.sort(S, axis=1)  # (N, K)

    T_tr = T_pool[ix]  # (trials, n+1): each point's own size
    if authors_size_shift:
        T_tr = authors_shifted_sizes(T_tr)
    w_tr = srt[ix, T_tr]  # (trials, n+1): w(X) = (T+1)-th smallest score under the size handed out
    if transform == "I_ro":
        w_tr = np.ones_like(w_tr)
    h_tr = transform_scores(true_s[ix], true_r[ix], w_tr, T_tr, transform)  # (trials, n+1)

    h_cal, w_cal, w_test = h_tr[:, 1:], w_tr[:, 1:], w_tr[:, 0]
    loo = loo_alpha(h_cal, w_cal, corrected=corrected)
    alpha = alpha_tilde(h_cal, w_test)
    if corrected:
        # b-hat targets E[alpha~ * E(Y_test)]; its Monte-Carlo counterpart uses the test e-value.
        n = h_cal.shape[1]
        alpha = np.clip(alpha * (n + 1) * h_tr[:, 0] / h_cal.sum(-1), 0.0, 1.0)
    miss = (true_r[ix[:, 0]] > T_tr[:, 0]).astype(float)
    return TrialResult(loo=loo, alpha=alpha, miss=miss, set_size=T_tr[:, 0].astype(float))


def run_split_conformal(scores: np.ndarray, labels: np.ndarray, idx: np.ndarray, alpha: float) -> dict[str, float]:
    """Split conformal prediction over the same trials: coverage and mean set size.

    The set of the test point is ``{y : s(x, y) <= q_hat}``; coverage is guaranteed to be
    at least ``1 - alpha`` on average over trials.

    Parameters
    ----------
    scores : array (N, K)
        Non-negative scores of the pool.
    labels : int array (N,)
        True labels, in ``0..K-1``.
    idx : int array (trials, n + 1)
        Trials as from :func:`sample_trials`.
    alpha : float in (0, 1)
        Target miscoverage.

    Returns
    -------
    dict
        ``alpha``, ``coverage`` (mean over trials) and ``mean_size``.

    References
    ----------
    Vovk, Gammerman & Shafer, *Algorithmic Learning in a Random World* (2005).
    """
    S, y = _check_pool(scores, labels)
    ix = _check_idx(idx, S.shape[0])
    true_s = S[np.arange(len(y)), y]
    test, cal = ix[:, 0], ix[:, 1:]
    q = split_conformal_quantile(true_s[cal], alpha)  # (trials,); validates alpha
    covered = true_s[test] <= q
    size = (S[test] <= q[:, None]).sum(-1)
    return {"alpha": float(alpha), "coverage": float(covered.mean()), "mean_size": float(size.mean())}


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
    random_state: RandomState = None,
    methods: dict[str, tuple[str, bool]] | None = None,
    authors_size_shift: bool = False,
) -> list[dict[str, float | str]]:
    """Run every method on the same trials and return one summary row per method.

    Parameters
    ----------
    scores : array (N, K)
        Non-negative scores of the pool.
    labels : int array (N,)
        True labels.
    T : int or int array (N,)
        Set size(s), as in :func:`run_bcp`.
    n_cal, n_trials : int
        Calibration points per trial (``>= 2``) and number of trials (``>= 1``).
    random_state : int, numpy.random.Generator or None
        Randomness of the trials.
    methods : dict, optional
        ``name -> (transform, corrected)``; default :data:`METHODS`.
    authors_size_shift : bool
        As in :func:`run_bcp`.

    Returns
    -------
    list of dict
        One row per method: ``method`` and :meth:`TrialResult.summary`.

    References
    ----------
    Liu, Zeng & Wei (ICML 2026), arXiv:2602.01733, Table 1.
    """
    methods = METHODS if methods is None else methods
    if not isinstance(methods, dict) or not methods:
        raise TypeError(f"methods must be a non-empty dict name -> (transform, corrected), got {methods!r}")
    for name, spec in methods.items():
        if not (isinstance(spec, tuple) and len(spec) == 2 and spec[0] in TRANSFORMS and isinstance(spec[1], bool)):
            raise ValueError(f"methods[{name!r}]={spec!r} must be (transform in {TRANSFORMS}, corrected: bool)")
    S, y = _check_pool(scores, labels)
    idx = sample_trials(len(y), n_cal, n_trials, random_state)
    rows = []
    for name, (transform, corrected) in methods.items():
        res = run_bcp(S, y, idx, T, transform, corrected=corrected, authors_size_shift=authors_size_shift)  # type: ignore[arg-type]
        rows.append({"method": name, **res.summary()})
    return rows


CONTROL_MIN_MISS: float = 0.01
"""Smallest mean realised miscoverage (over a replicate's rows) that leaves something to certify: 1 point.

The paper's ST-BCP gap is 1.12 %; a miscoverage below a point cannot be told from the
estimator's own error, so there is no coverage gap to shrink (chapter 02's positive control)."""

CONTROL_MIN_BELOW_CHANCE: float = 0.10
"""Smallest mean distance of the realised miscoverage below chance (1 - T/K): 10 points (the stand-in learned)."""


def miscoverage_control(m: np.ndarray, chance: np.ndarray, replicate: np.ndarray) -> dict[str, np.ndarray]:
    r"""Per replicate, the numbers of chapter 02's positive control: is there a miscoverage to certify?

    A row is one data set × set-size cell of one replicate (seed), with realised
    miscoverage :math:`m_r` (the share of trials whose test label falls outside its top-:math:`T`
    set) and the miscoverage of a chance-level classifier :math:`c_r = 1 - T/K`. Per
    replicate :math:`s` with rows :math:`R_s`,

    .. math::

        \text{miss}_s = \frac{1}{|R_s|}\sum_{r \in R_s} m_r, \qquad
        \text{below}_s = \frac{1}{|R_s|}\sum_{r \in R_s} (c_r - m_r),

    the two figures the claims' own figures average over (the mean gap, STD and MSE over
    the rows of a replicate). The control decides them over replicates with an interval
    (``miss`` above :data:`CONTROL_MIN_MISS`, ``below`` above
    :data:`CONTROL_MIN_BELOW_CHANCE`): a stand-in that never misses (nothing to certify)
    or sits at chance (nothing learned) fails it. ``rows_ok`` counts, per replicate, the
    rows with :math:`0 < m_r < c_r`, the per-row form shown beside it.

    Parameters
    ----------
    m : array (rows,)
        Realised miscoverage of each row, in ``[0, 1]``.
    chance : array (rows,)
        Chance-level miscoverage of each row, in ``[0, 1]``.
    replicate : array (rows,)
        The replicate (seed) of each row; at least two distinct replicates.

    Returns
    -------
    dict
        ``replicates`` (the distinct replicates, sorted), and per replicate ``miss``,
        ``below_chance``, ``rows_ok`` and ``rows`` (arrays of that length).

    References
    ----------
    Liu, Zeng & Wei (ICML 2026), arXiv:2602.01733, Table 1 (the realised miscoverage
    ``m``); the control is the book's (chapter 02).
    """
    m = as_float_array(m, "m", min_ndim=1)
    c = as_float_array(chance, "chance", min_ndim=1)
    rep = np.asarray(replicate)
    if m.ndim != 1 or c.shape != m.shape or rep.shape != m.shape:
        raise ValueError(
            f"m, chance and replicate must be 1-D arrays of one length, got shapes {m.shape}, {c.shape}, {rep.shape}"
        )
    for name, a in (("m", m), ("chance", c)):
        if a.size and (a.min() < 0 or a.max() > 1):
            raise ValueError(f"{name} must lie in [0, 1] (a miscoverage), got values from {a.min()!r} to {a.max()!r}")
    reps = np.unique(rep)
    if reps.size < 2:
        raise ValueError(f"miscoverage_control needs rows of at least 2 replicates, got {reps.size}")
    out = {k: np.zeros(reps.size) for k in ("miss", "below_chance", "rows_ok", "rows")}
    for i, r in enumerate(reps):
        sel = rep == r
        out["miss"][i] = m[sel].mean()
        out["below_chance"][i] = (c[sel] - m[sel]).mean()
        out["rows_ok"][i] = np.sum((m[sel] > 0) & (m[sel] < c[sel]))
        out["rows"][i] = sel.sum()
    out["replicates"] = reps
    return out
