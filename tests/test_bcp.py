"""Tests of icml26.bcp against exact oracles and the conformal guarantees."""

import numpy as np
import pytest

from icml26 import bcp, datasets


def _random_problem(rng, N=300, K=6):
    logits = rng.normal(size=(N, K)) * 2.0
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    labels = np.array([rng.choice(K, p=p) for p in probs])
    return bcp.nll_scores(probs), labels


@pytest.mark.parametrize("T", [1, 2, 3, 4])
def test_alpha_tilde_closed_form_equals_bruteforce(T):
    rng = np.random.default_rng(T)
    for _ in range(50):
        cal = rng.exponential(size=20)
        test = rng.exponential(size=6)
        w = np.sort(test)[T]
        assert bcp.alpha_tilde(cal, w) == pytest.approx(bcp.alpha_tilde_bruteforce(cal, test, T), rel=1e-12)


def test_alpha_tilde_bruteforce_matches_transformed_scores():
    # With I_w the test-side scores are w * 1{rank > T}; the oracle sees ties at w.
    rng = np.random.default_rng(1)
    T = 2
    for _ in range(50):
        s_test = rng.exponential(size=7)
        w = np.sort(s_test)[T]
        r = bcp.label_ranks(s_test)
        h_test = w * (r > T) + 1e-4
        h_cal = rng.exponential(size=15) * (rng.random(15) < 0.3) + 1e-4
        a = bcp.alpha_tilde(h_cal, w + 1e-4)
        assert a == pytest.approx(bcp.alpha_tilde_bruteforce(h_cal, h_test, T), rel=1e-12)
        # the set is the top-T labels
        assert np.array_equal(bcp.prediction_sets(h_cal, h_test, T), r <= T)


def test_sets_are_top_T_for_identity():
    rng = np.random.default_rng(2)
    for T in (1, 3):
        s = rng.exponential(size=8)
        cal = rng.exponential(size=30)
        assert np.array_equal(bcp.prediction_sets(cal, s, T), bcp.label_ranks(s) <= T)


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
    np.testing.assert_allclose(bcp.transform_scores(true_s, None, None, 2, "identity"), true_s)


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
    e_test = (cal.shape[1] + 1) * h[test] / (h[cal].sum(1) + h[test])
    miss = true_r[test] > T
    assert np.all(alpha[miss] * e_test[miss] >= 1 - 1e-12)


def test_evalue_has_mean_one_under_exchangeability():
    rng = np.random.default_rng(5)
    n, trials = 30, 20000
    h = rng.exponential(size=(trials, n + 1))
    e = (n + 1) * h[:, 0] / h.sum(1)
    se = e.std() / np.sqrt(trials)
    assert abs(e.mean() - 1.0) < 4 * se


def test_bcp_coverage_bound_holds_over_seeds():
    """Realised miscoverage never exceeds E[alpha~] beyond sampling error (plain BCP)."""
    for seed in range(5):
        d = datasets.gaussian_mixture_outputs(seed, separation=1.5, n_pool=800)
        S = bcp.nll_scores(d.probs)
        idx = bcp.sample_trials(len(d.labels), 100, 400, np.random.default_rng(seed))
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


def test_loo_uses_other_points_and_n():
    h = np.array([1.0, 2.0, 3.0])
    w = np.array([2.0, 2.0, 4.0])
    expected = np.mean(np.clip([((5) / 2 + 1) / 3, ((4) / 2 + 1) / 3, ((3) / 4 + 1) / 3], 0, 1))
    assert bcp.loo_alpha(h, w) == pytest.approx(expected)
    corr = np.mean(np.clip([((5) / 2 + 1) / 3 * 3 * 1 / 5, ((4) / 2 + 1) / 3 * 3 * 2 / 4, ((3) / 4 + 1) / 3 * 3 * 3 / 3], 0, 1))
    assert bcp.loo_alpha(h, w, corrected=True) == pytest.approx(corr)


def test_entropy_size_rule_matches_a_loop():
    rng = np.random.default_rng(7)
    K, T_min, T_max, p = 10, 1, 4, 2.5
    probs = rng.dirichlet(np.full(K, 0.3), size=200)
    H = -(probs * np.log(probs)).sum(1)
    b = [np.log(K) * ((l - 1) / (T_max - T_min)) ** p for l in range(1, T_max - T_min + 2)]
    expected = [T_min - 1 + sum(h >= bl for bl in b) for h in H]
    np.testing.assert_array_equal(bcp.entropy_size(probs, T_min, T_max, power=p), expected)
    certain = np.full((1, K), 1e-12)
    certain[0, 0] = 1 - 9e-12
    assert bcp.entropy_size(certain, 1, 3)[0] == 1


def test_split_conformal_quantile_and_coverage():
    s = np.arange(1.0, 10.0)  # n = 9
    assert bcp.split_conformal_quantile(s, 0.2) == 8.0  # ceil(10 * 0.8) = 8th smallest
    assert np.isinf(bcp.split_conformal_quantile(s, 0.05))
    d = datasets.gaussian_mixture_outputs(0, separation=1.5, n_pool=1500)
    S = bcp.nll_scores(d.probs)
    idx = bcp.sample_trials(len(d.labels), 100, 2000, np.random.default_rng(0))
    out = bcp.run_split_conformal(S, d.labels, idx, 0.1)
    assert out["coverage"] >= 0.9 - 3 * np.sqrt(0.09 / 2000)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: bcp.threshold_w(np.ones((3, 4)), 4), "T must lie in 1..K-1"),
        (lambda: bcp.threshold_w(np.ones((3, 4)), 0), "T must lie"),
        (lambda: bcp.transform_scores(np.ones(3), np.ones(3), np.ones(3), 1, "log"), "transform='log'"),
        (lambda: bcp.split_conformal_quantile(np.ones(5), 1.5), "alpha=1.5 must lie in"),
        (lambda: bcp.nll_scores(np.array([[0.5, 0.6]])), "sum to 1"),
        (lambda: bcp.e_values(-np.ones(3), np.ones(2)), "non-negative"),
        (lambda: bcp.entropy_size(np.full((2, 4), 0.25), 3, 2), "T_min < T_max"),
        (lambda: bcp.loo_alpha(np.ones(3), np.ones(4)), "same shape"),
    ],
)
def test_bad_input_is_a_clear_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()
