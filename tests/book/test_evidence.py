"""Tests of icml26.book.evidence and the three-outcome decisions of icml26.book.chapter.

The decision rule is checked against closed forms (scipy's t interval, the noncentral t
power) and, by seeded simulation, for its error rates: with no true effect "supports"
happens at most at rate alpha, with a true effect equal to the smallest effect
"contradicts" happens at most at rate alpha, and the same holds over the looks of the
sequential rule that ``sweep --until-decided`` uses.
"""

import numpy as np
import pytest
from scipy import stats

from icml26.book import chapter, evidence


def _sim_intervals(d: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised t intervals of each row of ``d``, the same formula as evidence.interval."""
    n = d.shape[1]
    m, s = d.mean(1), d.std(1, ddof=1)
    half = stats.t.ppf(1 - alpha, n - 1) * s / np.sqrt(n)
    return m - half, m + half


def test_interval_matches_scipy():
    d = np.array([0.3, -0.1, 0.5, 0.2, 0.4])
    m, s, lo, hi = evidence.interval(d, 0.05)
    ref = stats.t.interval(0.90, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    assert (lo, hi) == pytest.approx(ref)
    lo_v, hi_v = _sim_intervals(d[None, :], 0.05)
    assert (lo_v[0], hi_v[0]) == pytest.approx((lo, hi))


def test_three_synthetic_cases():
    rng = np.random.default_rng(1)
    # a large effect with little noise supports
    a = 1.0 + rng.normal(0, 0.05, 6)
    big = chapter.paired_effect(a, np.zeros(6), smallest_effect=0.5, basis="stated")
    assert big.outcome == "supports" and big.holds and big.stats["n_needed"] is None
    # a null effect with many replicates and a positive smallest effect contradicts
    null = chapter.paired_effect(rng.normal(0, 1, 400), np.zeros(400), smallest_effect=0.5, basis="stated")
    assert null.outcome == "contradicts" and not null.holds
    # three noisy replicates around a small effect: inconclusive, with a finite n_needed
    noisy = chapter.paired_effect([0.3, -0.2, 0.6], [0.0, 0.0, 0.0], smallest_effect=0.2, basis="stated")
    assert noisy.outcome == "inconclusive"
    need = noisy.stats["n_needed"]
    assert isinstance(need, int) and 3 < need < evidence.MAX_N_NEEDED
    assert f"about {need} replicates" in noisy.detail


def test_n_needed_gives_the_power_it_claims():
    sd, delta = 1.3, 0.6
    n = evidence.n_needed(sd, margin=0.0, smallest_effect=delta, alpha=0.05)
    assert evidence.power(n, sd, effect=delta, margin=0.0, alpha=0.05) >= 0.8
    assert evidence.power(n - 1, sd, effect=delta, margin=0.0, alpha=0.05) < 0.8
    # power by simulation at that n agrees with the noncentral t
    rng = np.random.default_rng(2)
    d = rng.normal(delta, sd, (4000, n))
    lo, _ = _sim_intervals(d, 0.05)
    assert (lo > 0).mean() == pytest.approx(0.8, abs=0.03)
    # non-inferiority: power computed at equality against the margin
    assert evidence.n_needed(1.0, margin=-0.5, smallest_effect=-0.5) is not None
    assert evidence.n_needed(0.0, margin=0.0, smallest_effect=1.0) is None
    # "well above m" (margin = smallest effect > 0): powered at the observed effect when it lies above m
    assert evidence.n_needed(1.0, margin=0.05, smallest_effect=0.05) is None
    assert evidence.n_needed(1.0, margin=0.05, smallest_effect=0.05, observed=0.5) == evidence.n_needed(
        1.0, margin=0.05, smallest_effect=0.5
    )


def test_error_rates_by_simulation():
    rng = np.random.default_rng(3)
    alpha, delta, n, draws = 0.05, 0.5, 5, 4000
    # no true effect: supports at most at rate alpha (plus simulation error)
    lo, hi = _sim_intervals(rng.normal(0.0, 1.0, (draws, n)), alpha)
    supports = np.array([evidence.classify(a, b, margin=0.0, smallest_effect=delta) == "supports" for a, b in zip(lo, hi)])
    assert supports.mean() <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / draws)
    # a true effect equal to the smallest effect: contradicts at most at rate alpha
    lo, hi = _sim_intervals(rng.normal(delta, 1.0, (draws, n)), alpha)
    contra = np.array([evidence.classify(a, b, margin=0.0, smallest_effect=delta) == "contradicts" for a, b in zip(lo, hi)])
    assert contra.mean() <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / draws)


def _sequential(rng, effect, *, max_looks, per_look, delta, alpha, draws, split=True):
    """Outcome of the --until-decided rule: pool all replicates so far, decide at look_alpha, stop when decided."""
    a_look = evidence.look_alpha(alpha, max_looks) if split else alpha
    d = rng.normal(effect, 1.0, (draws, max_looks * per_look))
    final = np.full(draws, "inconclusive", dtype=object)
    open_ = np.ones(draws, bool)
    for k in range(1, max_looks + 1):
        lo, hi = _sim_intervals(d[:, : k * per_look], a_look)
        for i in np.flatnonzero(open_):
            o = evidence.classify(lo[i], hi[i], margin=0.0, smallest_effect=delta)
            if o != "inconclusive":
                final[i], open_[i] = o, False
    return final


def test_sequential_rule_keeps_error_rates_over_looks():
    rng = np.random.default_rng(4)
    alpha, draws = 0.05, 3000
    tol = 3 * np.sqrt(alpha * (1 - alpha) / draws)
    null = _sequential(rng, 0.0, max_looks=4, per_look=3, delta=0.5, alpha=alpha, draws=draws)
    assert (null == "supports").mean() <= alpha + tol
    at_delta = _sequential(rng, 0.5, max_looks=4, per_look=3, delta=0.5, alpha=alpha, draws=draws)
    assert (at_delta == "contradicts").mean() <= alpha + tol
    # without the split, the same looks inflate the false "supports" rate above alpha: the test can fail
    naive = _sequential(rng, 0.0, max_looks=4, per_look=3, delta=0.5, alpha=alpha, draws=draws, split=False)
    assert (naive == "supports").mean() > alpha + tol
    with pytest.raises(ValueError, match="max_looks"):
        evidence.look_alpha(0.05, 0)


def test_paper_claims_need_smallest_effects_and_exact_bools():
    noisy = chapter.paired_better([1.0, 2.0, 3.0], [0.0, 0.5, 1.0])
    with pytest.raises(ValueError, match="without a smallest effect"):
        chapter.Claim(id="x", claim="c", kind="paper", paper="", ours="", checks={"better": noisy})
    with pytest.raises(TypeError, match="bare bool"):
        chapter.Claim(id="x", claim="c", kind="paper", paper="", ours="", checks={"better": True})
    with pytest.raises(ValueError, match="without a smallest effect"):
        chapter.Claim(id="x", claim="c", kind="paper", paper="", ours="", checks={"t": chapter.exceeds(2.0, 1.0, rule="r")})
    ok = chapter.Claim(
        id="x", claim="c", kind="paper", paper="", ours="", checks={"t": chapter.exceeds(2.0, 1.0, rule="r", exact=True)}
    )
    assert ok.verdict == "reproduced"
    # other kinds keep the old helpers
    assert chapter.Claim(id="y", claim="c", kind="own", paper="", ours="", checks={"better": noisy}).verdict in ("holds", "fails")
    with pytest.raises(ValueError, match="basis"):
        chapter.paired_effect([1.0, 2.0], [0.0, 0.0], smallest_effect=0.5, basis="")
    with pytest.raises(ValueError, match="smallest_effect=-1.0 lies below margin=0.0"):
        chapter.paired_effect([1.0, 2.0], [0.0, 0.0], smallest_effect=-1.0, basis="x")


def test_failed_control_never_reads_not_reproduced():
    against = chapter.paired_effect(np.linspace(-0.01, 0.01, 50), 0.0, smallest_effect=0.5, basis="stated")
    assert against.outcome == "contradicts"
    plain = chapter.Claim(id="x", claim="c", kind="paper", paper="", ours="", checks={"k": against})
    assert plain.verdict == "not reproduced"
    failed = chapter.Claim(
        id="x",
        claim="c",
        kind="paper",
        paper="",
        ours="",
        checks={"k": against},
        control={"learns the task": chapter.exact(False, "accuracy on the fixed test set")},
    )
    assert failed.verdict == "untestable here" and "positive control 'learns the task' failed" in failed.why
    assert "what would test it is not stated" in failed.why
    assert failed.control["learns the task"]["outcome"] == "contradicts"


def test_verdict_words_and_guards():
    sup = chapter.exact(True, "count")
    con = chapter.exact(False, "count")
    inc = chapter.paired_effect([0.3, -0.2, 0.6], [0.0, 0.0, 0.0], smallest_effect=0.2, basis="stated")
    assert chapter.verdict({"a": sup, "b": sup}) == "reproduced"
    assert chapter.verdict({"a": sup, "b": con}) == "partly reproduced"
    assert chapter.verdict({"a": con, "b": con}) == "not reproduced"
    assert chapter.verdict({"a": con, "b": inc}) == "undecided"
    assert chapter.verdict({"a": sup, "b": inc}) == "undecided"
    # a guard lowers, never raises
    assert chapter.verdict({"a": sup}, guards={"g": con}) == "partly reproduced"
    assert chapter.verdict({"a": con}, guards={"g": sup}) == "not reproduced"
    assert chapter.verdict({"a": inc}, guards={"g": sup}) == "undecided"
    c = chapter.Claim(id="x", claim="c", kind="paper", paper="", ours="", checks={"a": inc})
    assert c.verdict == "undecided" and "about" in c.why and c.outcomes == {"a": "inconclusive"}


def test_a_failed_control_reads_untestable_never_undecided():
    sup = chapter.exact(True, "count")
    inc = chapter.paired_effect([0.3, -0.2, 0.6], [0.0, 0.0, 0.0], smallest_effect=0.2, basis="stated")
    failed = chapter.exact(False, "the toy learns the task")
    # whatever the core checks say, a contradicted control makes the claim untestable here
    for core in ({"a": sup}, {"a": inc}, {"a": chapter.exact(False, "count")}, {"a": sup, "b": inc}):
        assert chapter.verdict(core, control={"learns": failed}) == "untestable here"
        assert chapter.verdict(core, control={"learns": sup, "other": False}) == "untestable here"
    # a control that is itself undecided (noisy, interval straddling) leaves the claim undecided, and says so
    c = chapter.Claim(id="x", claim="c", kind="paper", paper="", ours="", checks={"a": sup}, control={"learns": inc})
    assert c.verdict == "undecided" and "positive control 'learns' undecided" in c.why
    # the construction: untestable whatever the checks, with why and what would test it
    c = chapter.Claim(
        id="x",
        claim="c",
        kind="paper",
        paper="",
        ours="",
        checks={"a": sup},
        untestable="both arms take the same argmax",
        to_test="a model whose argmax the method changes",
    )
    assert c.verdict == "untestable here"
    assert "by construction: both arms take the same argmax" in c.why and "what would test it: a model whose argmax" in c.why
    c = chapter.Claim(
        id="x",
        claim="c",
        kind="paper",
        paper="",
        ours="",
        checks={"a": sup},
        control={"learns": failed},
        to_test="a deeper model",
    )
    assert "what would test it: a deeper model" in c.why
    with pytest.raises(ValueError, match="untestable= is for paper claims only"):
        chapter.Claim(id="x", claim="c", kind="own", paper="", ours="", checks={"a": True}, untestable="why")
    with pytest.raises(TypeError, match="to_test= must be a sentence"):
        chapter.Claim(id="x", claim="c", kind="paper", paper="", ours="", checks={"a": sup}, to_test=3)


def test_smaller_than_the_paper_is_flagged():
    d = chapter.paired_effect([1.0, 1.1, 0.9, 1.0], 0.0, smallest_effect=0.5, paper_effect=3.0, basis="paper")
    assert d.outcome == "supports" and d.stats["smaller_than_paper"] and "smaller than the paper's" in d.detail
    c = chapter.Claim(id="x", claim="c", kind="paper", paper="", ours="", checks={"a": d})
    assert c.verdict == "reproduced" and "smaller than the paper's" in c.why


def test_noninferior_three_outcomes():
    worse = chapter.paired_noninferior(np.full(30, 0.5) + np.linspace(-0.01, 0.01, 30), np.ones(30), margin=0.1)
    assert worse.outcome == "contradicts"
    same = chapter.paired_noninferior(np.ones(30) + np.linspace(-0.01, 0.01, 30), np.ones(30), margin=0.1)
    assert same.outcome == "supports"


def test_pooling_two_seeds_equals_pooling_the_replicates():
    rng = np.random.default_rng(5)
    a0, b0, a1, b1 = rng.normal(0.3, 1, 4), rng.normal(0, 1, 4), rng.normal(0.3, 1, 5), rng.normal(0, 1, 5)
    kw = dict(smallest_effect=0.4, basis="stated")
    s0 = chapter.paired_effect(a0, b0, replicates=[0, 1, 2, 3], **kw).stats
    s1 = chapter.paired_effect(a1, b1, replicates=[1000, 1001, 1002, 1003, 1004], **kw).stats
    pooled = evidence.pool([s0, s1])
    direct = chapter.paired_effect(np.r_[a0, a1], np.r_[b0, b1], **kw).stats
    for k in ("effect", "ci_low", "ci_high", "n", "outcome", "n_needed"):
        assert pooled[k] == pytest.approx(direct[k]), k
    assert pooled["seeds"] == 2 and pooled["random_effects"]["k"] == 2
    # a replicate seen in two seeds counts once
    again = chapter.paired_effect(a0, b0, replicates=[0, 1, 2, 3], **kw).stats
    assert evidence.pool([s0, again])["n"] == 4
    with pytest.raises(ValueError, match="different smallest_effect"):
        evidence.pool([s0, chapter.paired_effect(a1, b1, smallest_effect=0.9, basis="x").stats])


def test_random_effects_matches_closed_form_without_heterogeneity():
    st = [{"effect": 1.0, "sd": 1.0, "n": 4}, {"effect": 1.0, "sd": 2.0, "n": 4}]
    re = evidence.random_effects(st)
    assert re["tau2"] == 0.0 and re["effect"] == pytest.approx(1.0)
    w = np.array([4.0, 1.0])
    assert re["ci_high"] - re["effect"] == pytest.approx(stats.norm.ppf(0.95) / np.sqrt(w.sum()))
