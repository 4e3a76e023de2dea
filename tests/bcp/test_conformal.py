"""Tests of icml26.bcp.conformal against exact oracles and the conformal guarantees."""

import numpy as np
import pytest
from scipy.special import log_softmax

from icml26 import bcp


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


def test_bruteforce_with_zero_calibration_and_zero_test_scores_is_not_nan():
    """Issue #9: all calibration scores 0 and some test scores 0 gave NaN (0/0 e-values)."""
    n, T = 10, 2
    cal = np.zeros(n)
    test = np.array([0.0, 0.0, 0.7, 1.3, 2.0])  # two zero-score labels, w = 0.7 > 0
    ev = bcp.e_values(cal, test)
    assert not np.isnan(ev).any()
    np.testing.assert_array_equal(ev[:2], 0.0)  # documented convention: a zero score has e-value 0
    np.testing.assert_allclose(ev[2:], n + 1)
    brute = bcp.alpha_tilde_bruteforce(cal, test, T)
    assert brute == pytest.approx(1 / (n + 1))
    assert brute == pytest.approx(bcp.alpha_tilde(cal, np.sort(test)[T]))
    # the (T+1)-th score itself 0: both forms refuse (the certificate is undefined)
    with pytest.raises(ValueError, match="undefined"):
        bcp.alpha_tilde_bruteforce(cal, np.array([0.0, 0.0, 0.0, 1.0]), T)
    with pytest.raises(ValueError, match="w_test must be positive"):
        bcp.alpha_tilde(cal, 0.0)


def test_sets_are_top_T_for_identity():
    rng = np.random.default_rng(2)
    for T in (1, 3):
        s = rng.exponential(size=8)
        cal = rng.exponential(size=30)
        assert np.array_equal(bcp.prediction_sets(cal, s, T), bcp.label_ranks(s) <= T)


def test_nll_scores_from_log_probs_need_no_floor():
    """Tiny probabilities keep distinct scores, so ranks follow the probabilities, not the label index."""
    logits = np.array([[40.0, 0.0, -5.0, -3.0]])  # p of the last three labels is far below 1e-12
    lp = log_softmax(logits, axis=1)
    s = bcp.nll_scores(lp)
    assert np.all(np.diff(np.sort(s[0])) > 0)  # no ties
    np.testing.assert_array_equal(bcp.label_ranks(s)[0], [1, 2, 4, 3])
    assert bcp.threshold_w(s, 2)[0] == pytest.approx(43.0, rel=1e-9)  # w from the real score, not a floor
    np.testing.assert_allclose(s, -lp)


def test_ties_are_broken_by_label_index():
    s = np.array([0.5, 0.2, 0.5, 0.2])
    np.testing.assert_array_equal(bcp.label_ranks(s), [3, 1, 4, 2])


def test_transform_scores_values():
    s = np.array([0.1, 2.0, 3.0])
    r = np.array([1, 3, 2])
    w = np.array([1.5, 2.5, 0.5])
    np.testing.assert_allclose(bcp.transform_scores(s, r, w, 2, "I_w"), [1e-4, 2.5 + 1e-4, 1e-4])
    np.testing.assert_allclose(bcp.transform_scores(s, r, None, 1, "I_ro", eps=0.0), [0.0, 1.0, 1.0])
    np.testing.assert_allclose(bcp.transform_scores(s, None, None, 2, "identity"), s)
    # a test point: every label with its own rank, one w broadcast
    np.testing.assert_allclose(bcp.transform_scores(s, r, 2.0, 1, "I_w", eps=0.0), [0.0, 2.0, 2.0])


def test_evalue_has_mean_one_under_exchangeability():
    rng = np.random.default_rng(5)
    n, trials = 30, 20000
    h = rng.exponential(size=(trials, n + 1))
    e = bcp.e_values(h[:, 1:], h[:, :1])[:, 0]
    se = e.std() / np.sqrt(trials)
    assert abs(e.mean() - 1.0) < 4 * se


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


def test_split_conformal_quantile():
    s = np.arange(1.0, 10.0)  # n = 9
    assert bcp.split_conformal_quantile(s, 0.2) == 8.0  # ceil(10 * 0.8) = 8th smallest
    assert np.isinf(bcp.split_conformal_quantile(s, 0.05))
