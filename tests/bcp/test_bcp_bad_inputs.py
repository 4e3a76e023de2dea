"""Bad input to every public callable of icml26.bcp: a clear ValueError/TypeError, never a silent result.

The named cases of issue #9 come first, then hypothesis suites feeding out-of-domain
input (wrong shapes, NaN/inf, negative scores, empty arrays, out-of-range sizes and
levels, wrong types).
"""

import numpy as np
import pytest
from badinput import covers, finite_or_raises, rejects
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from icml26 import bcp

FAST = settings(max_examples=20, deadline=None, derandomize=True)

# ---------------------------------------------------------------------------------------
# the bad calls named in issue #9
# ---------------------------------------------------------------------------------------


@covers("bcp.conformal.transform_scores")
def test_transform_scores_mismatched_shapes_and_T_zero():
    rejects(bcp.transform_scores, np.ones(3), np.ones(4, dtype=int), np.ones(3), 1, "I_w", match="true_ranks must have the shape")
    rejects(bcp.transform_scores, np.ones(3), np.ones(3, dtype=int), np.ones(5), 1, "I_w", match="w has shape")
    rejects(
        bcp.transform_scores, np.ones(3), np.ones(3, dtype=int), np.ones(3), np.ones(2, dtype=int), "I_w", match="T has shape"
    )
    rejects(bcp.transform_scores, np.ones(3), np.ones(3, dtype=int), np.ones(3), 0, "I_w", match="T must lie in 1")
    rejects(bcp.transform_scores, np.ones(3), np.ones(3, dtype=int), np.ones(3), 1, "log", match="transform='log'")


@covers("bcp.conformal.threshold_w")
def test_threshold_w_negative_scores_and_bad_T():
    rejects(bcp.threshold_w, -np.ones((3, 4)), 1, match="scores must be non-negative")
    rejects(bcp.threshold_w, np.ones((3, 4)), 4, match=r"T must lie in 1\.\.3")
    rejects(bcp.threshold_w, np.ones((3, 4)), 0, match="T must lie")
    rejects(bcp.threshold_w, np.ones((3, 4)), 1.5, match="T must be an integer")
    rejects(bcp.threshold_w, np.ones((3, 4)), np.ones(2, dtype=int), match="T has shape")


@covers("bcp.conformal.e_values")
def test_e_values_empty_calibration_and_negative_scores():
    rejects(bcp.e_values, np.ones(0), np.ones(3), match="at least one calibration score")
    rejects(bcp.e_values, -np.ones(3), np.ones(2), match="non-negative")
    rejects(bcp.e_values, np.ones((2, 3)), np.ones((3, 4)), match="do not broadcast")


@covers("bcp.conformal.split_conformal_quantile")
def test_split_conformal_quantile_empty_and_bad_alpha():
    rejects(bcp.split_conformal_quantile, [], 0.1, match="at least one calibration score")
    rejects(bcp.split_conformal_quantile, np.ones(5), 1.5, match="alpha=1.5 must be a finite number in")
    rejects(bcp.split_conformal_quantile, np.ones(5), "0.1", match="alpha must be a real number")
    rejects(bcp.split_conformal_quantile, np.array([1.0, np.nan]), 0.1, match="finite")


# ---------------------------------------------------------------------------------------
# hypothesis suites
# ---------------------------------------------------------------------------------------
non_finite = st.sampled_from([np.nan, np.inf, -np.inf])


def _spoil(a: np.ndarray, value: float, where: int) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.flat[where % a.size] = value
    return a


good_scores = arrays(float, st.tuples(st.integers(1, 4), st.integers(3, 6)), elements=st.floats(0.01, 5.0))


@covers("bcp.conformal.nll_scores", "bcp.conformal.label_ranks", "bcp.conformal.threshold_w")
@FAST
@given(good_scores, non_finite, st.integers(0, 100))
def test_score_functions_reject_non_finite(S, bad, where):
    spoiled = _spoil(S, bad, where)
    rejects(bcp.label_ranks, spoiled, match="finite")
    rejects(bcp.threshold_w, spoiled, 1, match="finite")
    rejects(bcp.nll_scores, -spoiled, match="finite")


@covers("bcp.conformal.nll_scores")
@FAST
@given(arrays(float, st.tuples(st.integers(1, 4), st.integers(2, 6)), elements=st.floats(0.0, 1.0)))
def test_nll_scores_rejects_probabilities_and_unnormalised_rows(P):
    # probabilities are not log-probabilities: a row of non-negative numbers is never normalised in log space
    rejects(bcp.nll_scores, P + 1e-3, match="log_probs must be")
    rejects(bcp.nll_scores, np.log(P + 1.0), match="log_probs must be")  # unnormalised (and >= 0) rows


@covers("bcp.conformal.nll_scores", "bcp.conformal.label_ranks", "bcp.conformal.threshold_w", "bcp.conformal.entropy_size")
@FAST
@given(st.integers(0, 4), st.sampled_from(["abc", None, object()]))
def test_class_axis_too_short_or_wrong_type(n, junk):
    one_class = np.zeros((n + 1, 1))
    rejects(bcp.nll_scores, one_class, match="class axis")
    rejects(bcp.label_ranks, one_class, match="class axis")
    rejects(bcp.threshold_w, one_class, 1, match="class axis")
    rejects(bcp.entropy_size, np.ones((n + 1, 1)), 1, 2, match="T_min < T_max")
    for fn in (bcp.nll_scores, bcp.label_ranks):
        rejects(fn, junk)
    rejects(bcp.threshold_w, junk, 1)


@covers("bcp.conformal.transform_scores")
@FAST
@given(st.integers(2, 6), st.integers(-3, 0), st.sampled_from(["I_w", "I_ro"]), non_finite)
def test_transform_scores_rejects_bad_sizes_and_values(n, T_bad, transform, bad):
    s = np.linspace(0.1, 2.0, n)
    r = np.arange(1, n + 1)
    rejects(bcp.transform_scores, s, r, s, T_bad, transform, match="T must lie")
    rejects(bcp.transform_scores, s, r - 1, s, 1, transform, match="true_ranks must lie")
    rejects(bcp.transform_scores, _spoil(s, bad, n), r, s, 1, transform, match="finite")
    rejects(bcp.transform_scores, -s, r, s, 1, transform, match="non-negative")
    rejects(bcp.transform_scores, s, r, s, 1, transform, eps=-1.0, match="eps")
    if transform == "I_w":
        rejects(bcp.transform_scores, s, r, -s, 1, transform, match="w must be non-negative")
        rejects(bcp.transform_scores, s, r, None, 1, transform, match="w must be an array")


cal_arrays = arrays(float, st.integers(1, 20), elements=st.floats(0.0, 3.0))


@covers(
    "bcp.conformal.e_values",
    "bcp.conformal.alpha_tilde",
    "bcp.conformal.alpha_tilde_bruteforce",
    "bcp.conformal.prediction_sets",
    "bcp.conformal.loo_alpha",
)
@FAST
@given(cal_arrays, non_finite, st.integers(0, 100))
def test_conformal_core_rejects_non_finite_and_negative(cal, bad, where):
    test = np.array([0.1, 0.5, 1.0, 2.0])
    spoiled = _spoil(cal, bad, where)
    rejects(bcp.e_values, spoiled, test, match="finite")
    rejects(bcp.alpha_tilde, spoiled, 1.0, match="finite")
    rejects(bcp.alpha_tilde_bruteforce, spoiled, test, 1, match="finite")
    rejects(bcp.prediction_sets, spoiled, test, 1, match="finite")
    rejects(bcp.e_values, cal, _spoil(test, bad, where), match="finite")
    rejects(bcp.alpha_tilde, cal, bad, match="finite")
    neg = cal - 1.0 - cal.max()
    rejects(bcp.e_values, neg, test, match="non-negative")
    rejects(bcp.alpha_tilde, neg, 1.0, match="non-negative")
    rejects(bcp.prediction_sets, cal, -test, 1, match="non-negative")
    w = np.ones_like(cal)
    rejects(bcp.loo_alpha, spoiled, w, match="finite")
    rejects(bcp.loo_alpha, neg, w, match="non-negative")


@covers("bcp.conformal.e_values", "bcp.conformal.alpha_tilde_bruteforce")
@FAST
@given(st.integers(1, 10), st.integers(2, 6), st.integers(0, 6))
def test_zero_scores_give_finite_e_values(n, K, n_zero):
    test = np.concatenate([np.zeros(min(n_zero, K - 1)), np.linspace(0.5, 2.0, K - min(n_zero, K - 1))])
    ev = finite_or_raises(bcp.e_values, np.zeros(n), test)
    assert np.all(ev >= 0)
    T = max(1, min(n_zero, K - 1))
    finite_or_raises(bcp.alpha_tilde_bruteforce, np.zeros(n), test, T)


@covers("bcp.conformal.alpha_tilde", "bcp.conformal.alpha_tilde_bruteforce", "bcp.conformal.prediction_sets")
@FAST
@given(st.integers(2, 8), st.integers(-2, 12), st.sampled_from([1.5, "2", None, True]))
def test_sizes_out_of_range_or_wrong_type(K, T, junk):
    cal, test = np.ones(5), np.linspace(0.1, 1.0, K)
    if not 1 <= T <= K - 1:
        rejects(bcp.alpha_tilde_bruteforce, cal, test, T, match="T=")
        rejects(bcp.prediction_sets, cal, test, T, match="T=")
    rejects(bcp.alpha_tilde_bruteforce, cal, test, junk, match="T must be an integer")
    rejects(bcp.prediction_sets, cal, test, junk, match="T must be an integer")
    rejects(bcp.alpha_tilde, cal, -abs(float(T)), match="w_test must be positive")
    rejects(bcp.alpha_tilde, np.ones((3, 5)), np.ones(4), match="does not broadcast")
    rejects(bcp.alpha_tilde, np.ones(0), 1.0, match="at least one calibration score")
    rejects(bcp.alpha_tilde_bruteforce, np.ones((2, 5)), test, 1, match="1-D")
    rejects(bcp.prediction_sets, cal, np.ones((2, K)), 1, match="1-D")


@covers("bcp.conformal.loo_alpha")
@FAST
@given(st.integers(0, 1), st.integers(2, 10), st.sampled_from([0.0, -1.0]))
def test_loo_alpha_rejects_small_n_shapes_and_nonpositive_w(n_small, n, w_bad):
    rejects(bcp.loo_alpha, np.ones(n_small), np.ones(n_small), match="n >= 2|at least")
    rejects(bcp.loo_alpha, np.ones(n), np.ones(n + 1), match="same shape")
    rejects(bcp.loo_alpha, np.ones(n), np.full(n, w_bad), match="w_cal must be positive")
    rejects(bcp.loo_alpha, np.ones(n), np.ones(n), corrected="yes", match="corrected must be a bool")
    h = np.zeros(n)
    h[0] = 1.0  # the other points sum to zero for j = 0: the b-hat correction is 0/0
    rejects(bcp.loo_alpha, h, np.ones(n), corrected=True, match="positive sum")


@covers("bcp.conformal.entropy_size")
@FAST
@given(
    arrays(float, st.tuples(st.integers(1, 4), st.just(5)), elements=st.floats(-1.0, 2.0)),
    st.integers(-2, 6),
    st.integers(-2, 6),
    st.sampled_from([0.0, -1.0, np.nan]),
)
def test_entropy_size_rejects_bad_probs_sizes_and_power(P, T_min, T_max, power):
    good = np.full((2, 5), 0.2)
    if np.any(P < 0) or np.any(P > 1) or not np.allclose(P.sum(-1), 1.0, atol=1e-6):
        rejects(bcp.entropy_size, P, 1, 3, match="probs must lie")
    if not (1 <= T_min < T_max <= 4):
        rejects(bcp.entropy_size, good, T_min, T_max, match="T_min < T_max")
    rejects(bcp.entropy_size, good, 1, 3, power=power, match="power")
    rejects(bcp.entropy_size, good, 1.0, 3, match="T_min must be an integer")
    rejects(bcp.entropy_size, _spoil(good, np.nan, T_max), 1, 3, match="finite")


@covers("bcp.conformal.split_conformal_quantile")
@FAST
@given(cal_arrays, st.sampled_from([0.0, 1.0, -0.1, 2.0, np.nan, np.inf]), non_finite, st.integers(0, 100))
def test_split_conformal_quantile_rejects_bad_levels_and_scores(cal, alpha, bad, where):
    rejects(bcp.split_conformal_quantile, cal, alpha, match="alpha=")
    rejects(bcp.split_conformal_quantile, _spoil(cal, bad, where), 0.1, match="finite")
    rejects(bcp.split_conformal_quantile, np.ones((3, 0)), 0.1, match="at least one")


# ---------------------------------------------------------------------------------------
# the protocol
# ---------------------------------------------------------------------------------------
def _pool(N=30, K=4, seed=0):
    rng = np.random.default_rng(seed)
    S = rng.exponential(size=(N, K))
    y = rng.integers(0, K, size=N)
    return S, y


@covers("bcp.protocol.sample_trials")
@FAST
@given(st.integers(-3, 1), st.integers(-3, 1), st.integers(-3, 0), st.sampled_from([1.5, "7", -1]))
def test_sample_trials_rejects_bad_sizes_and_random_state(n_pool, n_cal, n_trials, rs):
    rejects(bcp.sample_trials, n_pool, 10, 5, match="n_pool=")
    rejects(bcp.sample_trials, 10, n_cal, 5, match="n_cal=")
    rejects(bcp.sample_trials, 10, 10, n_trials, match="n_trials=")
    rejects(bcp.sample_trials, 10.0, 10, 5, match="n_pool must be an integer")
    rejects(bcp.sample_trials, 10, 10, 5, random_state=rs, match="random_state")


@covers("bcp.protocol.authors_shifted_sizes")
@FAST
@given(st.sampled_from([(5,), (3, 1), (0, 4), (2, 3, 4)]), st.integers(-2, 0))
def test_authors_shifted_sizes_rejects_bad_shapes_and_sizes(shape, bad):
    rejects(bcp.authors_shifted_sizes, np.ones(shape, dtype=int), match="sizes must have shape")
    rejects(bcp.authors_shifted_sizes, np.full((3, 4), bad), match="sizes must lie")
    rejects(bcp.authors_shifted_sizes, np.ones((3, 4)), match="integer")


@covers("bcp.protocol.run_bcp", "bcp.protocol.run_split_conformal", "bcp.protocol.compare_methods")
@FAST
@given(st.integers(0, 100), non_finite, st.integers(-2, 0), st.sampled_from(["log", 3, None]))
def test_protocol_rejects_bad_pools_trials_sizes_and_transforms(where, bad, T_bad, tr_bad):
    S, y = _pool()
    idx = bcp.sample_trials(len(y), 5, 4, 0)
    rejects(bcp.run_bcp, _spoil(S, bad, where), y, idx, 1, match="finite")
    rejects(bcp.run_bcp, -S, y, idx, 1, match="non-negative")
    rejects(bcp.run_bcp, S, y[:-1], idx, 1, match="labels must have shape")
    rejects(bcp.run_bcp, S, y + 4, idx, 1, match="labels must lie")
    rejects(bcp.run_bcp, S, y, idx + len(y), 1, match="idx must lie")
    rejects(bcp.run_bcp, S, y, idx[:, :2], 1, match="idx must have shape")
    rejects(bcp.run_bcp, S, y, idx, T_bad, match="T must lie")
    rejects(bcp.run_bcp, S, y, idx, np.ones(3, dtype=int), match="one size per pool point")
    rejects(bcp.run_bcp, S, y, idx, 1, tr_bad, match="transform=")
    rejects(bcp.run_bcp, S, y, idx, 1, corrected=1, match="corrected must be a bool")
    rejects(bcp.run_bcp, S[:, 0], y, idx, 1, match="scores must have shape")
    rejects(bcp.run_split_conformal, _spoil(S, bad, where), y, idx, 0.1, match="finite")
    rejects(bcp.run_split_conformal, S, y, idx, 1.0 - T_bad, match="alpha=")
    rejects(bcp.run_split_conformal, S, y, idx[:, :1], 0.1, match="idx must have shape")
    rejects(bcp.compare_methods, S, y, T_bad, n_cal=5, n_trials=4, random_state=0, match="T must lie")
    rejects(bcp.compare_methods, S, y, 1, n_cal=1, n_trials=4, random_state=0, match="n_cal=")
    rejects(bcp.compare_methods, S, y, 1, n_cal=5, n_trials=4, random_state=0, methods={"x": ("log", False)}, match="methods")
    rejects(bcp.compare_methods, S, y, 1, n_cal=5, n_trials=4, random_state=0, methods=[1], match="methods must be")


@covers("bcp.protocol.TrialResult")
@FAST
@given(st.integers(1, 6), st.integers(0, 6), non_finite)
def test_trial_result_rejects_ragged_empty_and_non_finite(n, m, bad):
    ok = np.ones(n)
    if m != n:
        rejects(bcp.TrialResult, ok, ok, ok, np.ones(m), match="one length")
    rejects(bcp.TrialResult, np.ones(0), np.ones(0), np.ones(0), np.ones(0), match="non-empty")
    rejects(bcp.TrialResult, _spoil(ok, bad, m), ok, ok, ok, match="finite")
    rejects(bcp.TrialResult, np.ones((n, 2)), np.ones((n, 2)), np.ones((n, 2)), np.ones((n, 2)), match="1-D")


# ---------------------------------------------------------------------------------------
# the pools
# ---------------------------------------------------------------------------------------
@covers("bcp.pools.ClassifierOutputs")
@FAST
@given(arrays(float, st.tuples(st.integers(1, 4), st.integers(2, 5)), elements=st.floats(0.0, 1.0)), non_finite)
def test_classifier_outputs_rejects_probabilities_bad_labels_and_non_finite(P, bad):
    N, K = P.shape
    lp = np.log(np.full((N, K), 1.0 / K))
    y = np.zeros(N, dtype=int)
    rejects(bcp.ClassifierOutputs, P + 1e-3, y, match="log_probs must be")
    rejects(bcp.ClassifierOutputs, _spoil(lp, bad, N), y, match="finite")
    rejects(bcp.ClassifierOutputs, lp, y + K, match="labels must lie")
    rejects(bcp.ClassifierOutputs, lp, np.zeros(N + 1, dtype=int), match="labels must have shape")
    rejects(bcp.ClassifierOutputs, lp[:, :1] * 0, y, match="shape")
    rejects(bcp.ClassifierOutputs, lp, y.astype(float) + 0.5, match="labels must be an integer")


@covers("bcp.pools.gaussian_mixture_outputs")
@FAST
@given(st.integers(-3, 1), st.integers(-3, 0), st.sampled_from([0.0, -1.0, np.nan, np.inf]), st.sampled_from([1.5, "x", -2]))
def test_gaussian_mixture_rejects_bad_parameters(k_bad, d_bad, f_bad, rs_bad):
    rejects(bcp.gaussian_mixture_outputs, 0, n_classes=k_bad, match="n_classes=")
    rejects(bcp.gaussian_mixture_outputs, 0, dim=d_bad, match="dim=")
    rejects(bcp.gaussian_mixture_outputs, 0, n_pool=k_bad, match="n_pool=")
    rejects(bcp.gaussian_mixture_outputs, 0, separation=f_bad, match="separation=")
    rejects(bcp.gaussian_mixture_outputs, 0, temperature=f_bad, match="temperature=")
    rejects(bcp.gaussian_mixture_outputs, rs_bad, match="random_state")


@covers("bcp.pools.digits_classifier_outputs")
@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_components=0), "n_components=0 must lie in 1..64"),
        (dict(n_components=65), "n_components=65"),
        (dict(n_components=2.5), "n_components must be an integer"),
        (dict(test_size=0.0), "test_size=0.0"),
        (dict(test_size=1.2), "test_size=1.2"),
        (dict(test_size=0.001), "too few images"),
        (dict(random_state="a"), "random_state"),
    ],
)
def test_digits_rejects_bad_parameters(kwargs, match):
    rejects(bcp.digits_classifier_outputs, **kwargs, match=match)


@covers("bcp.protocol.miscoverage_control")
def test_miscoverage_control_rejects_bad_shapes_ranges_and_one_replicate():
    m, c, r = np.array([0.1, 0.2]), np.array([0.9, 0.9]), np.array([0, 1])
    rejects(bcp.miscoverage_control, m, c[:1], r, match="one length")
    rejects(bcp.miscoverage_control, m[:, None], c[:, None], r[:, None], match="1-D")
    rejects(bcp.miscoverage_control, m + 1, c, r, match="m must lie in")
    rejects(bcp.miscoverage_control, m, -c, r, match="chance must lie in")
    rejects(bcp.miscoverage_control, np.array([np.nan, 0.1]), c, r, match="finite")
    rejects(bcp.miscoverage_control, m, c, np.array([3, 3]), match="at least 2 replicates")
    rejects(bcp.miscoverage_control, "m", c, r, match="array of numbers")
