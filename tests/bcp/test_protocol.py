"""Tests of icml26.bcp.protocol: the trial protocol against hand computations and the guarantees."""

import numpy as np
import pytest

from icml26 import bcp


def _random_problem(rng, N=300, K=6):
    logits = rng.normal(size=(N, K)) * 2.0
    lp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    labels = np.array([rng.choice(K, p=p) for p in np.exp(lp)])
    return bcp.nll_scores(lp), labels


def test_identity_transform_reproduces_plain_bcp():
    rng = np.random.default_rng(3)
    S, y = _random_problem(rng)
    idx = bcp.sample_trials(len(y), 40, 200, rng)
    res = bcp.run_bcp(S, y, idx, 2, "identity")
    # recompute BCP by hand, trial by trial, from the definitions
    true_s = S[np.arange(len(y)), y]
    w = np.sort(S, 1)[:, 2]
    for t in range(0, 200, 37):
        test, cal = idx[t, 0], idx[t, 1:]
        n = len(cal)
        a = (true_s[cal].sum() / w[test] + 1) / (n + 1)
        loo = np.mean(np.clip([((true_s[cal].sum() - true_s[j]) / w[j] + 1) / n for j in cal], 0, 1))
        assert res.alpha[t] == pytest.approx(a)
        assert res.loo[t] == pytest.approx(loo)


@pytest.mark.parametrize("transform", ["identity", "I_w"])
def test_miss_implies_alpha_times_evalue_at_least_one(transform):
    """1{miss} <= alpha~ * E(Y_test) deterministically, hence P(miss) <= E[alpha~ E(Y)]."""
    rng = np.random.default_rng(4)
    S, y = _random_problem(rng, N=400, K=5)
    T = 2
    idx = bcp.sample_trials(len(y), 50, 300, rng)
    true_s = S[np.arange(len(y)), y]
    ranks = bcp.label_ranks(S)
    true_r = ranks[np.arange(len(y)), y]
    w = bcp.threshold_w(S, T)
    h = bcp.transform_scores(true_s, true_r, w, T, transform)
    test, cal = idx[:, 0], idx[:, 1:]
    alpha = bcp.alpha_tilde(h[cal], w[test])
    e_test = bcp.e_values(h[cal], h[test][:, None])[:, 0]
    miss = true_r[test] > T
    assert np.all(alpha[miss] * e_test[miss] >= 1 - 1e-12)


def test_bcp_coverage_bound_holds_over_seeds():
    """Realised miscoverage never exceeds E[alpha~] beyond sampling error (plain BCP)."""
    for seed in range(5):
        d = bcp.gaussian_mixture_outputs(seed, separation=1.5, n_pool=800)
        S = bcp.nll_scores(d.log_probs)
        idx = bcp.sample_trials(len(d.labels), 100, 400, seed)
        for T in (1, 2, 3):
            s = bcp.run_bcp(S, d.labels, idx, T, "identity").summary()
            se = np.sqrt(s["m"] * (1 - s["m"]) / 400)
            assert s["m"] <= s["E_alpha"] + 3 * se


def test_set_size_bound_respected():
    rng = np.random.default_rng(6)
    S, y = _random_problem(rng)
    idx = bcp.sample_trials(len(y), 30, 100, rng)
    for T in (1, 2, 5):
        for tr in ("identity", "I_w", "I_ro"):
            res = bcp.run_bcp(S, y, idx, T, tr)
            assert np.all(res.set_size <= T)
    Tx = bcp.entropy_size(np.exp(-S), 1, 4)
    res = bcp.run_bcp(S, y, idx, Tx, "I_w")
    assert np.all(res.set_size <= 4) and np.all(res.set_size >= 1)


def test_authors_shift_hands_each_point_its_neighbours_size():
    """Their cell: entropies as [cal_1..cal_n, test], column 0 read as the test point's size."""
    ours = np.array([[7, 1, 2, 3]])  # test (7), then cal_1..cal_3
    theirs_concat = np.concatenate([ours[:, 1:], ours[:, :1]], axis=1)  # [cal_1, cal_2, cal_3, test]
    expected = np.concatenate([theirs_concat[:, :1], theirs_concat[:, 1:]], axis=1)  # col 0 -> test, 1.. -> cal
    np.testing.assert_array_equal(bcp.authors_shifted_sizes(ours), expected)
    np.testing.assert_array_equal(bcp.authors_shifted_sizes(ours), [[1, 2, 3, 7]])


def test_authors_shift_changes_nothing_for_a_constant_size_and_something_for_T_of_X():
    rng = np.random.default_rng(8)
    S, y = _random_problem(rng, N=400, K=8)
    idx = bcp.sample_trials(len(y), 50, 200, rng)
    a = bcp.run_bcp(S, y, idx, 2, "I_w").summary()
    b = bcp.run_bcp(S, y, idx, 2, "I_w", authors_size_shift=True).summary()
    assert a == b
    Tx = bcp.entropy_size(np.exp(-S), 1, 4)
    a = bcp.run_bcp(S, y, idx, Tx, "I_w")
    b = bcp.run_bcp(S, y, idx, Tx, "I_w", authors_size_shift=True)
    np.testing.assert_array_equal(b.set_size, Tx[idx[:, 1]])  # the test point got calibration point 1's size
    assert not np.array_equal(a.loo, b.loo)


def test_split_conformal_coverage():
    d = bcp.gaussian_mixture_outputs(0, separation=1.5, n_pool=1500)
    S = bcp.nll_scores(d.log_probs)
    idx = bcp.sample_trials(len(d.labels), 100, 2000, 0)
    out = bcp.run_split_conformal(S, d.labels, idx, 0.1)
    assert out["coverage"] >= 0.9 - 3 * np.sqrt(0.09 / 2000)


def test_compare_methods_shares_trials_and_is_deterministic():
    d = bcp.gaussian_mixture_outputs(2, n_pool=300)
    S = bcp.nll_scores(d.log_probs)
    r1 = bcp.compare_methods(S, d.labels, 2, n_cal=30, n_trials=50, random_state=4)
    r2 = bcp.compare_methods(S, d.labels, 2, n_cal=30, n_trials=50, random_state=4)
    assert r1 == r2
    assert [r["method"] for r in r1] == list(bcp.METHODS)
    assert len({r["m"] for r in r1}) == 1  # the same trials: the same realised miscoverage


def _control_outcomes(separation, seeds=range(5), Ts=(1, 2, 3), n_trials=300):
    """Chapter 02's positive control on Gaussian-mixture pools of the given separation."""
    from icml26.book import chapter

    m, chance, rep = [], [], []
    for s in seeds:
        d = bcp.gaussian_mixture_outputs(s, separation=separation, n_pool=600)
        S = bcp.nll_scores(d.log_probs)
        idx = bcp.sample_trials(len(d.labels), 50, n_trials, s)
        for T in Ts:
            m.append(bcp.run_bcp(S, d.labels, idx, T, "identity").summary()["m"])
            chance.append(1 - T / d.log_probs.shape[1])
            rep.append(s)
    ctrl = bcp.miscoverage_control(np.array(m), np.array(chance), np.array(rep))
    misses = chapter.paired_effect(
        ctrl["miss"], 0.0, margin=bcp.CONTROL_MIN_MISS, smallest_effect=bcp.CONTROL_MIN_MISS, basis="chapter 02's control"
    )
    beats = chapter.paired_effect(
        ctrl["below_chance"],
        0.0,
        margin=bcp.CONTROL_MIN_BELOW_CHANCE,
        smallest_effect=bcp.CONTROL_MIN_BELOW_CHANCE,
        basis="chapter 02's control",
    )
    per_cell = bool(np.all((np.array(m) > 0) & (np.array(m) < np.array(chance))))
    return misses.outcome, beats.outcome, per_cell


def test_miscoverage_control_passes_on_a_stand_in_like_the_chapters():
    misses, beats, _ = _control_outcomes(1.2)
    assert (misses, beats) == ("supports", "supports")


def test_miscoverage_control_fails_when_nothing_is_left_to_certify():
    """A near-perfect classifier never misses at top-T: the re-stated control contradicts (issue #35)."""
    misses, beats, per_cell = _control_outcomes(50.0)
    assert misses == "contradicts"
    assert beats == "supports"
    assert not per_cell  # the old every-cell form fails here too


def test_miscoverage_control_fails_for_a_classifier_at_chance():
    misses, beats, _ = _control_outcomes(1e-3)
    assert beats == "contradicts"
    assert misses == "supports"


def test_miscoverage_control_is_the_row_mean_per_replicate():
    m = np.array([0.0, 0.2, 0.1, 0.3])
    c = np.array([0.9, 0.8, 0.9, 0.8])
    out = bcp.miscoverage_control(m, c, np.array([1, 1, 0, 0]))
    np.testing.assert_array_equal(out["replicates"], [0, 1])
    np.testing.assert_allclose(out["miss"], [0.2, 0.1])
    np.testing.assert_allclose(out["below_chance"], [0.65, 0.75])
    np.testing.assert_array_equal(out["rows_ok"], [2, 1])
    np.testing.assert_array_equal(out["rows"], [2, 2])
