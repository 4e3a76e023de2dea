"""The statistics behind a verdict: effect with interval, three outcomes, power, pooling, sequential looks.

A noisy comparison in this book is decided by the mean paired difference
:math:`\\bar d` of ``n`` replicates, in the paper's direction, with its two-sided
:math:`1-2\\alpha` t interval :math:`[L, U] = \\bar d \\mp t_{1-\\alpha, n-1}\\, s/\\sqrt n`,
against two numbers fixed before the run:

``margin`` (:math:`m`)
    the improvement that must be exceeded to *support* the claim (0: any improvement;
    :math:`-\\delta` for a non-inferiority claim with tolerance :math:`\\delta`);
``smallest_effect`` (:math:`\\delta_{\\min}`)
    the smallest effect the claim needs, in the figure's own units.

The outcome is *supports* when :math:`L > m`, *contradicts* when it does not support and
:math:`U < \\delta_{\\min}` (an effect as large as the claim needs is excluded), and
*inconclusive* otherwise. Each error is controlled at :math:`\\alpha`: with no true
effect :math:`P(L > 0) = \\alpha`; with a true effect :math:`\\delta_{\\min}`,
:math:`P(U < \\delta_{\\min}) = \\alpha` (Lakens 2017 for the equivalence logic;
Simonsohn 2015, "Small telescopes", for testing against the smallest effect of
interest; Pawel, Heyard, Micheloud & Held 2024 on absence of evidence versus evidence
of absence).

When inconclusive, :func:`n_needed` gives the replicates at which a one-sided t-test at
level :math:`\\alpha` has 80 % power to support an effect of :math:`\\delta_{\\min}`
(at the observed spread), from the noncentral t distribution.

Evidence from several seeds of a sweep is pooled by :func:`pool` (the replicates'
differences concatenated, a replicate counted once) and, as a sensitivity, by
:func:`random_effects` (DerSimonian & Laird 1986). A sweep that looks at the pooled
evidence after every round spends :math:`\\alpha` over its looks by Bonferroni's split
(:func:`look_alpha`), so that over all looks each error stays at most :math:`\\alpha`.

This module holds numbers only; :mod:`icml26.book.chapter` wraps them in the
``Decision`` a chapter's claims use.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

OUTCOMES: tuple[str, ...] = ("supports", "contradicts", "inconclusive")
POWER: float = 0.8
MAX_N_NEEDED: int = 1_000_000


def _check_alpha(alpha: float) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)) or not 0 < float(alpha) < 0.5:
        raise ValueError(f"alpha={alpha!r} must be a number in (0, 0.5)")
    return float(alpha)


def _check_finite(name: str, x: Any) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)) or not math.isfinite(float(x)):
        raise ValueError(f"{name}={x!r} must be a finite number")
    return float(x)


def interval(d: Sequence[float] | np.ndarray, alpha: float = 0.05) -> tuple[float, float, float, float]:
    """Mean, sd and two-sided :math:`1-2\\alpha` t interval of the differences ``d``.

    Parameters
    ----------
    d : array_like, shape (n,)
        Paired differences, n >= 2, finite.
    alpha : float
        One-sided level; the interval is two-sided :math:`1-2\\alpha`.

    Returns
    -------
    (mean, sd, low, high) : tuple of float

    >>> m, s, lo, hi = interval([1.0, 2.0, 3.0])
    >>> round(lo, 3), round(hi, 3)
    (0.314, 3.686)
    """
    from scipy import stats

    alpha = _check_alpha(alpha)
    d = np.asarray(d, dtype=float).ravel()
    if d.size < 2:
        raise ValueError(f"an interval needs at least 2 replicates, got {d.size}")
    if not np.all(np.isfinite(d)):
        raise ValueError(f"an interval needs finite differences, got {d.tolist()}")
    n = d.size
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    half = float(stats.t.ppf(1 - alpha, n - 1)) * sd / math.sqrt(n)
    return mean, sd, mean - half, mean + half


def classify(low: float, high: float, *, margin: float, smallest_effect: float) -> str:
    """*supports* when ``low > margin``; else *contradicts* when ``high < smallest_effect``; else *inconclusive*.

    >>> classify(0.2, 0.9, margin=0.0, smallest_effect=0.5)
    'supports'
    >>> classify(-0.1, 0.1, margin=0.0, smallest_effect=0.5)
    'contradicts'
    >>> classify(-0.5, 0.9, margin=0.0, smallest_effect=0.5)
    'inconclusive'
    """
    if low > margin:
        return "supports"
    if high < smallest_effect:
        return "contradicts"
    return "inconclusive"


def power_target(margin: float, smallest_effect: float, observed: float | None = None) -> float | None:
    """The true effect at which :func:`n_needed` asks for 80 % power to support.

    ``smallest_effect`` when it exceeds ``margin`` (a superiority claim); 0 when the
    margin is negative and the smallest effect sits on it (a non-inferiority claim:
    power to show "no worse" when the two are equal); when a positive margin equals the
    smallest effect ("well above m"), the ``observed`` effect if it lies above the margin
    (the replicates that would support an effect as large as the one seen); ``None``
    otherwise.
    """
    if smallest_effect > margin:
        return smallest_effect
    if margin < 0:
        return 0.0
    if observed is not None and observed > margin:
        return float(observed)
    return None


def power(n: int, sd: float, *, effect: float, margin: float, alpha: float) -> float:
    """Power of the one-sided paired t-test of :math:`\\bar d > m` with ``n`` replicates at true ``effect``.

    :math:`P(T_{n-1}(\\lambda) > t_{1-\\alpha, n-1})`, :math:`\\lambda = (\\text{effect} - m)\\sqrt n / \\sigma`.
    """
    from scipy import stats

    if n < 2:
        raise ValueError(f"power needs n >= 2, got {n}")
    if sd <= 0:
        return 1.0 if effect > margin else 0.0
    ncp = (effect - margin) * math.sqrt(n) / sd
    return float(stats.nct.sf(stats.t.ppf(1 - alpha, n - 1), n - 1, ncp))


def n_needed(
    sd: float,
    *,
    margin: float,
    smallest_effect: float,
    alpha: float = 0.05,
    target_power: float = POWER,
    observed: float | None = None,
) -> int | None:
    """Replicates giving ``target_power`` to support an effect of ``smallest_effect`` at spread ``sd``.

    The effect powered is :func:`power_target` (``observed`` matters only when a
    positive margin equals the smallest effect).

    Returns ``None`` when no number of replicates can (a zero spread, or no effect to
    power, see :func:`power_target`); values above :data:`MAX_N_NEEDED` are capped there.

    >>> n_needed(1.0, margin=0.0, smallest_effect=1.0)
    8
    """
    alpha = _check_alpha(alpha)
    target = power_target(margin, smallest_effect, observed)
    if target is None or not sd > 0 or not math.isfinite(sd):
        return None
    if power(MAX_N_NEEDED, sd, effect=target, margin=margin, alpha=alpha) < target_power:
        return MAX_N_NEEDED
    lo, hi = 2, 2
    while power(hi, sd, effect=target, margin=margin, alpha=alpha) < target_power:
        lo, hi = hi, hi * 2
    while lo < hi:
        mid = (lo + hi) // 2
        if power(mid, sd, effect=target, margin=margin, alpha=alpha) >= target_power:
            hi = mid
        else:
            lo = mid + 1
    return int(hi)


def decide(
    d: Sequence[float] | np.ndarray,
    *,
    smallest_effect: float,
    margin: float = 0.0,
    alpha: float = 0.05,
    paper_effect: float | None = None,
) -> dict[str, Any]:
    """The decision numbers of paired differences ``d`` (in the claim's direction).

    Returns
    -------
    dict
        ``effect``, ``sd``, ``ci_low``, ``ci_high``, ``n``, ``margin``,
        ``smallest_effect``, ``alpha``, ``outcome``, ``n_needed`` (when inconclusive,
        else ``None``), ``p`` (one-sided, of :math:`\\bar d > m`), ``wins`` (differences
        above 0), ``paper_effect`` and ``smaller_than_paper`` (supported, but the
        interval lies wholly below the paper's own effect).
    """
    from scipy import stats

    smallest_effect = _check_finite("smallest_effect", smallest_effect)
    margin = _check_finite("margin", margin)
    if smallest_effect < margin:
        raise ValueError(
            f"smallest_effect={smallest_effect!r} lies below margin={margin!r}: the smallest effect the claim needs "
            "must be at least the margin it has to clear"
        )
    if paper_effect is not None:
        paper_effect = _check_finite("paper_effect", paper_effect)
    mean, sd, lo, hi = interval(d, alpha)
    n = int(np.asarray(d).size)
    outcome = classify(lo, hi, margin=margin, smallest_effect=smallest_effect)
    if sd == 0.0:
        p = 0.0 if mean > margin else 1.0
    else:
        p = float(stats.t.sf((mean - margin) / (sd / math.sqrt(n)), n - 1))
    need = (
        n_needed(sd, margin=margin, smallest_effect=smallest_effect, alpha=alpha, observed=mean)
        if outcome == "inconclusive"
        else None
    )
    return {
        "effect": mean,
        "mean": mean,
        "sd": sd,
        "ci_low": lo,
        "ci_high": hi,
        "n": n,
        "margin": margin,
        "smallest_effect": smallest_effect,
        "alpha": alpha,
        "outcome": outcome,
        "n_needed": need,
        "p": p,
        "wins": int((np.asarray(d, dtype=float) > 0).sum()),
        "paper_effect": paper_effect,
        "smaller_than_paper": bool(outcome == "supports" and paper_effect is not None and hi < paper_effect),
    }


# ---------------------------------------------------------------------------------------
# pooling over seeds
# ---------------------------------------------------------------------------------------
def pooled_diffs(stats_list: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """The paired differences of several seeds' decisions, each replicate counted once.

    Each mapping carries ``diffs`` and, optionally, ``replicates`` (one id per
    difference, e.g. the replicate's seed). A replicate id seen in an earlier mapping
    is skipped, so that overlapping replicate sets never count a replicate twice.
    """
    out: list[float] = []
    seen: set[str] = set()
    for i, st in enumerate(stats_list):
        diffs = st.get("diffs")
        if diffs is None:
            raise ValueError(f"decision {i} carries no replicate differences ('diffs'); it cannot be pooled")
        ids = st.get("replicates")
        if ids is None:
            out.extend(float(x) for x in diffs)
            continue
        if len(ids) != len(diffs):
            raise ValueError(f"decision {i}: {len(ids)} replicate ids for {len(diffs)} differences")
        for rid, x in zip(ids, diffs):
            key = str(rid)
            if key in seen:
                continue
            seen.add(key)
            out.append(float(x))
    return np.asarray(out, dtype=float)


def pool(stats_list: Sequence[Mapping[str, Any]], *, alpha: float | None = None) -> dict[str, Any]:
    """One decision from several seeds' paired decisions of the same comparison.

    The rule: the (seed, replicate) differences are pooled as replicates
    (:func:`pooled_diffs`) and decided by :func:`decide` with the first decision's
    ``margin``, ``smallest_effect`` and ``paper_effect``, at ``alpha`` (default: the
    decisions' own). Decisions with different margins or smallest effects are refused.
    """
    if not stats_list:
        raise ValueError("pool needs at least one decision")
    first = stats_list[0]
    for st in stats_list[1:]:
        for k in ("margin", "smallest_effect"):
            if st.get(k) != first.get(k):
                raise ValueError(f"cannot pool decisions with different {k}: {first.get(k)!r} and {st.get(k)!r}")
    d = pooled_diffs(stats_list)
    a = float(first.get("alpha", 0.05)) if alpha is None else alpha
    out = decide(
        d,
        smallest_effect=first["smallest_effect"],
        margin=first.get("margin", 0.0),
        alpha=a,
        paper_effect=first.get("paper_effect"),
    )
    out["seeds"] = len(stats_list)
    out["random_effects"] = random_effects(stats_list, alpha=a) if len(stats_list) > 1 else None
    return out


def random_effects(stats_list: Sequence[Mapping[str, Any]], *, alpha: float = 0.05) -> dict[str, float] | None:
    """DerSimonian–Laird random-effects pooled effect of per-seed mean differences.

    Each seed contributes :math:`\\bar d_s` with variance :math:`v_s = s_s^2/n_s`;
    :math:`\\hat\\tau^2 = \\max(0, (Q - (k-1)) / (\\sum w - \\sum w^2/\\sum w))` with
    :math:`w = 1/v`, and the pooled effect weighs by :math:`1/(v_s + \\hat\\tau^2)`,
    with a normal two-sided :math:`1-2\\alpha` interval. ``None`` when a seed has zero
    variance. (DerSimonian & Laird 1986, *Controlled Clinical Trials* 7:177.)
    """
    from scipy import stats

    y = np.array([float(st["effect"]) for st in stats_list])
    v = np.array([float(st["sd"]) ** 2 / int(st["n"]) for st in stats_list])
    if np.any(v <= 0) or y.size < 2:
        return None
    w = 1 / v
    ybar = float((w * y).sum() / w.sum())
    q = float((w * (y - ybar) ** 2).sum())
    c = float(w.sum() - (w**2).sum() / w.sum())
    tau2 = max(0.0, (q - (y.size - 1)) / c) if c > 0 else 0.0
    ws = 1 / (v + tau2)
    est = float((ws * y).sum() / ws.sum())
    se = math.sqrt(1 / float(ws.sum()))
    z = float(stats.norm.ppf(1 - alpha))
    return {"effect": est, "ci_low": est - z * se, "ci_high": est + z * se, "tau2": tau2, "k": int(y.size)}


def look_alpha(alpha: float, max_looks: int) -> float:
    """The level of each look of a sequential sweep: Bonferroni's :math:`\\alpha / K` over ``K`` looks.

    Over all looks, the chance of a false *supports* (or a false *contradicts*) is at
    most the sum of the looks' levels, :math:`\\alpha`.

    >>> look_alpha(0.05, 5)
    0.01
    """
    alpha = _check_alpha(alpha)
    if isinstance(max_looks, bool) or not isinstance(max_looks, (int, np.integer)) or max_looks < 1:
        raise ValueError(f"max_looks={max_looks!r} must be a positive integer")
    return alpha / int(max_looks)
