"""Bad input to icml26.pasv: every public callable rejects out-of-domain input with a clear
ValueError/TypeError raised by icml26 itself (never a bare IndexError, a NaN or a silent result).

The first tests are the bad calls reported in issue #9; the hypothesis tests then feed each
public callable wrong shapes, NaN/inf, negative sizes, empty arrays and wrong types.
"""

from __future__ import annotations

import numpy as np
from badinput import covers, exempt, finite_or_raises, rejects
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from icml26 import pasv as P

FAST = settings(max_examples=20, deadline=None, derandomize=True)
CYCLIC = np.array([[False, True, False], [False, False, True], [True, False, False]])  # 0 → 1 → 2 → 0
CYCLIC_CLOSED = np.ones((3, 3), bool)  # the transitive closure of a 3-cycle: every player precedes itself
R3 = P.precedence_closure(3, [(0, 1)])
U3 = np.r_[0.0, np.arange(1.0, 8.0)]

exempt("pasv.games.Utility", "a typing.Protocol: it defines the calling convention and takes no input")
exempt("pasv.features.diabetes_dags", "takes no arguments; returns two fixed closures")

# strategies of wrong inputs
bad_floats = st.sampled_from([np.nan, np.inf, -np.inf, -1.0, 0.0])
bad_sizes = st.integers(-5, 0)
not_numbers = st.sampled_from(["3", None, [1, 2], {"a": 1}, 2.5])
non_square = arrays(bool, st.tuples(st.integers(1, 4), st.integers(5, 7)))


def cyclic_relation(n: int, k: int) -> np.ndarray:
    """A boolean relation on n players with a directed cycle through k >= 2 of them."""
    R = np.zeros((n, n), bool)
    for a in range(k):
        R[a, (a + 1) % k] = True
    return R


# ----------------------------------------------------------------------------- the reported bad calls (issue #9)


def test_topological_order_on_a_cyclic_order_names_the_cycle():
    for R in (CYCLIC, CYCLIC_CLOSED):
        rejects(P.topological_order, R, match="cycle")


def test_pasv_exact_with_the_wrong_number_of_utility_values():
    rejects(P.pasv_exact, np.zeros(5), R3, match="2\\*\\*3")
    rejects(P.pasv_exact, np.zeros(16), R3, match="n=3")


def test_wsv_exact_with_overlapping_blocks():
    rejects(P.wsv_exact, U3, [[0, 1], [1, 2]], np.ones(3), match="partition")


def test_pasv_dp_on_a_cyclic_order_is_an_error_not_nan():
    for R in (CYCLIC, CYCLIC_CLOSED):
        rejects(P.PasvDP, R, match="cycle")


def test_uniform_permutations_with_a_negative_count():
    rejects(P.uniform_permutations, 4, -1, match="n_samples")


# ----------------------------------------------------------------------------- posets


@covers(
    "pasv.posets.topological_order", "pasv.exact.PasvDP", "pasv.posets.linear_extensions", "pasv.exact.feasible_masks",
    "pasv.posets.order_distribution", "pasv.sampling.AdjacentSwapSampler", "pasv.posets.is_linear_extension",
    "pasv.posets.maximal_elements", "pasv.sampling.sample_linear_extensions_rejection",
    "pasv.mixing.pairwise_discrepancy_trace",
)  # fmt: skip
@FAST
@given(n=st.integers(2, 6), k=st.integers(2, 6))
def test_cyclic_relations_are_rejected_everywhere(n, k):
    R = cyclic_relation(n, min(k, n))
    for fn, args in (
        (P.topological_order, (R,)),
        (P.PasvDP, (R,)),
        (P.linear_extensions, (R,)),
        (P.feasible_masks, (R,)),
        (P.order_distribution, (R, np.ones(n))),
        (P.AdjacentSwapSampler, (R,)),
        (P.is_linear_extension, (np.arange(n), R)),
        (P.maximal_elements, (np.ones(n, bool), R)),
        (P.sample_linear_extensions_rejection, (R, 1)),
        (P.pairwise_discrepancy_trace, (R,)),
    ):
        rejects(fn, *args, match="cycle|transitive")


@FAST
@given(R=non_square)
def test_non_square_relations_are_rejected(R):
    rejects(P.topological_order, R, match="square")
    rejects(P.PasvDP, R, match="square")


def test_a_relation_that_is_not_transitively_closed_is_rejected():
    R = np.zeros((3, 3), bool)
    R[0, 1] = R[1, 2] = True  # 0 ≺ 1 ≺ 2 but R[0, 2] is False
    rejects(P.AdjacentSwapSampler, R, match="transitive")
    rejects(P.PasvDP, R.astype(int), match="boolean")


@covers(
    "pasv.posets.precedence_closure", "pasv.posets.random_dag", "pasv.posets.block_closure",
    "pasv.posets.ordered_partition_closure",
)  # fmt: skip
@FAST
@given(n=bad_sizes, p=bad_floats, junk=not_numbers)
def test_poset_builders_reject_bad_sizes_and_probabilities(n, p, junk):
    rejects(P.precedence_closure, n, [])
    rejects(P.precedence_closure, 3, [(0, 3)], match="0..2")
    rejects(P.precedence_closure, 3, [(0.5, 1.0)])
    rejects(P.random_dag, n, 0.5)
    if not 0 <= p <= 1:
        rejects(P.random_dag, 4, p, match="edge_prob")
    rejects(P.random_dag, 4, junk)
    rejects(P.block_closure, [], [(0, 1)])
    rejects(P.block_closure, [0, -1], [])
    rejects(P.ordered_partition_closure, [[0, 1], [1, 2]], match="partition")
    rejects(P.ordered_partition_closure, [[0, 2]], match="partition")
    rejects(P.ordered_partition_closure, [], match="partition")
    rejects(P.ordered_partition_closure, "ab")


@covers("pasv.posets.order_log_weights")
@FAST
@given(lam=arrays(float, 3, elements=bad_floats))
def test_weights_must_be_finite_and_positive(lam):
    rejects(P.order_log_weights, np.array([[0, 1, 2]]), R3, lam, match="weights")
    rejects(P.order_log_weights, np.array([[0, 1, 2]]), R3, np.ones(2), match="shape")
    rejects(P.order_log_weights, np.array([[0, 1, 1]]), R3, np.ones(3), match="permutation")
    rejects(P.PasvDP, R3, lam, match="weights")
    rejects(P.AdjacentSwapSampler, R3, lam, match="weights")


# ----------------------------------------------------------------------------- exact values


@covers("pasv.exact.shapley_exact", "pasv.exact.pasv_exact", "pasv.exact.rov_exact", "pasv.exact.wsv_exact")
@FAST
@given(size=st.integers(0, 40).filter(lambda s: s & (s - 1) != 0 or s < 2), bad=bad_floats)
def test_game_tables_of_the_wrong_length_or_with_nan(size, bad):
    rejects(P.shapley_exact, np.zeros(size), match="2\\*\\*n")
    rejects(P.pasv_exact, np.zeros(size), R3)
    U = U3.copy()
    U[3] = np.nan
    rejects(P.shapley_exact, U, match="NaN")
    rejects(P.pasv_exact, U, R3, match="NaN")
    rejects(P.wsv_exact, U, [[0], [1, 2]], np.ones(3), match="NaN")
    orders, probs = P.order_distribution(R3, np.ones(3))
    rejects(P.rov_exact, U3, orders, probs[:-1], match="probs")
    rejects(P.rov_exact, U3, orders, np.full(len(probs), bad), match="probs")
    rejects(P.rov_exact, U3, orders[:, :2], probs, match="permutation|2\\*\\*")
    rejects(P.shapley_exact, "table")


@covers("pasv.games.game_table")
@FAST
@given(n=st.integers(-3, 0), bad=st.sampled_from([np.nan, np.inf]))
def test_game_table_rejects_bad_sizes_masks_and_nan_utilities(n, bad):
    rejects(P.game_table, lambda m: 0.0, n)
    rejects(P.game_table, lambda m: 0.0, 25, match="24")
    rejects(P.game_table, lambda m: 0.0, 3, [0, 8], match="0..7")
    rejects(P.game_table, lambda m: bad, 3, match="finite")
    rejects(P.game_table, "not callable", 3)


def test_pasv_dp_values_and_last_of_probs_reject_bad_input():
    dp = P.PasvDP(R3)
    rejects(dp.values, np.zeros(4), match="n=3")
    U = U3.copy()
    U[1] = np.nan  # {0} is feasible
    rejects(dp.values, U, match="NaN")
    rejects(dp.last_of_probs, [], match="non-empty")
    rejects(dp.last_of_probs, [5], match="0..2")


# ----------------------------------------------------------------------------- sampling and estimation


@covers("pasv.sampling.uniform_permutations")
@FAST
@given(n=bad_sizes, m=bad_sizes, junk=not_numbers)
def test_uniform_permutations_rejects_bad_counts(n, m, junk):
    rejects(P.uniform_permutations, n, 3, match="n=")
    rejects(P.uniform_permutations, 3, m, match="n_samples")
    rejects(P.uniform_permutations, junk, 3)
    rejects(P.uniform_permutations, 3, 2, random_state="seed")


@FAST
@given(m=bad_sizes, junk=not_numbers)
def test_sampler_rejects_bad_counts_and_states(m, junk):
    rejects(P.AdjacentSwapSampler, R3, n_chains=m, match="n_chains")
    rejects(P.AdjacentSwapSampler, R3, n_chains=junk)
    rejects(P.AdjacentSwapSampler, np.zeros((1, 1), bool), match="n >= 2")
    rejects(P.AdjacentSwapSampler, R3, random_state=-1 + m)
    s = P.AdjacentSwapSampler(R3, n_chains=2, random_state=0)
    rejects(s.step, -1 + m, match="n_steps")
    rejects(s.sample, 2, burn_in=-1, thin=1, match="burn_in")
    rejects(s.sample, 2, burn_in=0, thin=m, match="thin")
    rejects(s.sample, m, burn_in=0, thin=1, match="n_samples")
    rejects(P.sample_linear_extensions_rejection, R3, m, match="n_samples")
    rejects(P.sample_linear_extensions_rejection, R3, 2, batch=m, match="batch")


@covers("pasv.estimation.rov_estimate", "pasv.estimation.marginal_contributions", "pasv.games.prefix_values")
@FAST
@given(values=arrays(float, (2, 4), elements=st.sampled_from([np.nan, np.inf, 0.5])), w=bad_floats)
def test_estimators_reject_mismatched_or_non_finite_input(values, w):
    orders = np.array([[0, 1, 2], [2, 1, 0]])
    if not np.all(np.isfinite(values)):
        rejects(P.rov_estimate, values, orders, match="NaN")
        rejects(P.marginal_contributions, values, orders, match="NaN")
    rejects(P.rov_estimate, np.zeros((2, 3)), orders, match="shape")
    rejects(P.rov_estimate, np.zeros((2, 4)), np.array([[0, 0, 1], [0, 1, 2]]), match="permutation")
    rejects(P.rov_estimate, np.zeros((2, 4)), orders.astype(float))
    rejects(P.rov_estimate, np.zeros((2, 4)), orders, weights=[w, w], match="weights")
    rejects(P.marginal_contributions, np.zeros((3, 4)), orders, match="shape")
    rejects(P.prefix_values, np.zeros(5), orders, match="2\\*\\*")
    rejects(P.prefix_values, U3, np.empty((0, 3), int), match="non-empty")


@covers("pasv.estimation.pasv_mc", "pasv.mixing.pairwise_discrepancy_trace", "pasv.estimation.priority_sweep")
@FAST
@given(m=bad_sizes, f=bad_floats)
def test_drivers_reject_bad_counts_and_factors(m, f):
    rejects(P.pasv_mc, U3, R3, n_samples=m, burn_in=0, thin=1, match="n_samples")
    rejects(P.pasv_mc, object(), R3, n_samples=2, burn_in=0, thin=1, match="utility")
    rejects(P.pairwise_discrepancy_trace, R3, n_chains=m, match="n_chains")
    rejects(P.pairwise_discrepancy_trace, R3, every=m, match="every")
    rejects(P.pairwise_discrepancy_trace, R3, stop_below=np.nan, match="stop_below")
    rejects(P.priority_sweep, lambda lam: lam, np.ones(3), [0], [1.0, f], match="factors")
    rejects(P.priority_sweep, lambda lam: lam, np.ones(3), [3], [1.0], match="group")
    rejects(P.priority_sweep, lambda lam: lam, np.ones(3), [], [1.0], match="group")
    rejects(P.priority_sweep, lambda lam: lam, np.ones(3), [0], [], match="factors")
    rejects(P.priority_sweep, lambda lam: lam, np.array([1.0, f, 1.0]), [0], [1.0], match="weights")
    rejects(P.priority_sweep, "f", np.ones(3), [0], [1.0])


# ----------------------------------------------------------------------------- utilities


@covers("pasv.games.CachedUtility")
@FAST
@given(n=bad_sizes, bad=st.sampled_from([np.nan, np.inf]))
def test_cached_utility_follows_the_protocol(n, bad):
    rejects(P.CachedUtility, lambda m: 0.0, n, match="n=")
    rejects(P.CachedUtility, 3, 4)
    cu = P.CachedUtility(lambda m: float(m.sum()), 3)
    assert isinstance(cu, P.Utility)
    rejects(cu, np.ones((2, 3), bool), match="shape \\(3,\\)")  # one mask per call, never a batch
    rejects(cu, np.full(3, 0.5), match="boolean")
    rejects(P.CachedUtility(lambda m: bad, 3), np.ones(3, bool), match="finite")
    rejects(cu.values_along, np.array([[0, 1]]), match="n=3")


def _market():
    return P.make_data_market(1, 2, random_state=0)


@covers("pasv.markets.make_data_market", "pasv.markets.DataMarket")
@FAST
@given(k=bad_sizes, junk=not_numbers, b=bad_floats)
def test_data_market_rejects_bad_sizes_and_weights(k, junk, b):
    rejects(P.make_data_market, k, 5, match="n_per_half")
    rejects(P.make_data_market, 2, k, match="n_test_per_class")
    rejects(P.make_data_market, junk, 5)
    rejects(P.make_data_market, 2, 175, match="smallest")
    m = _market()
    rejects(m.weights, b, match="b=")
    rejects(m.weights, 2.0, (1, 2), match="exponents")
    rejects(P.DataMarket, m.X[:, :3], m.y, m.block, m.X_test, m.y_test, match="features")
    rejects(P.DataMarket, m.X, m.y[:-1], m.block, m.X_test, m.y_test, match="shape")
    rejects(P.DataMarket, m.X, m.y, m.block + 8, m.X_test, m.y_test, match="block")
    X = m.X.copy()
    X[0, 0] = np.nan
    rejects(P.DataMarket, X, m.y, m.block, m.X_test, m.y_test, match="NaN")


@covers("pasv.markets.KNNUtility", "pasv.markets.CoalitionModelUtility", "pasv.features.ImputedFeatureUtility")
@FAST
@given(k=bad_sizes, bad=st.sampled_from([np.nan, np.inf]))
def test_utilities_reject_bad_data_and_one_mask_convention(k, bad):
    from sklearn.neighbors import KNeighborsClassifier

    m = _market()
    rejects(P.KNNUtility, m.X, m.y, m.X_test, m.y_test, k=k, match="k=")
    rejects(P.KNNUtility, m.X, m.y, m.X_test, m.y_test, n_classes=1, match="n_classes")
    rejects(P.KNNUtility, m.X, m.y, m.X_test[:, :5], m.y_test, match="features")
    rejects(P.KNNUtility, m.X, m.y + 10, m.X_test, m.y_test, match="labels")
    ku = P.KNNUtility(m.X, m.y, m.X_test, m.y_test)
    rejects(ku, np.ones((2, m.n), bool), match="shape")
    rejects(ku.values_along, np.zeros((1, m.n), int), match="permutation")
    rejects(P.CoalitionModelUtility, "model", m.X, m.y, m.block, m.X_test, m.y_test)
    rejects(P.CoalitionModelUtility, KNeighborsClassifier, m.X, m.y, m.block[:-1], m.X_test, m.y_test, match="groups")
    rejects(P.CoalitionModelUtility, KNeighborsClassifier, m.X, m.y, m.block, m.X_test, m.y_test, empty_value=bad)
    cu = P.CoalitionModelUtility(KNeighborsClassifier, m.X, m.y, m.block, m.X_test, m.y_test)
    rejects(cu, np.ones((3, 8), bool), match="shape")
    Xb = np.random.default_rng(0).normal(size=(20, 3))
    rejects(P.ImputedFeatureUtility, lambda Z: Z[:, 0], Xb, Xb[:5], np.ones(5), match="constant")
    rejects(P.ImputedFeatureUtility, lambda Z: Z[:, 0], Xb, Xb[:5], np.arange(5.0), k=21, match="k=21")
    rejects(P.ImputedFeatureUtility, lambda Z: Z[:, 0], Xb, Xb[:5, :2], np.arange(5.0), match="features")
    rejects(P.ImputedFeatureUtility, lambda Z: Z[:, 0], Xb, Xb[:5], np.arange(5.0), k=k, match="k=")
    rejects(P.ImputedFeatureUtility, "predict", Xb, Xb[:5], np.arange(5.0))
    fu = P.ImputedFeatureUtility(lambda Z: Z[:, 0], Xb, Xb[:5], np.arange(5.0), k=3)
    rejects(fu, np.ones((2, 3), bool), match="shape")
    assert all(isinstance(u, P.Utility) for u in (ku, cu, fu))
    finite_or_raises(fu, np.zeros(3, bool))


@covers(
    "pasv.markets.value_markets", "pasv.features.feature_sweep_shift", "pasv.mixing.mixing_runs",
    "pasv.mixing.sampler_efficiency", "pasv.markets.value_block_markets",
)  # fmt: skip
def test_chapter_loops_reject_bad_sizes():
    R = P.precedence_closure(3, [(0, 1)])
    U = P.game_table(lambda mask: float(mask.sum()), 3)
    rejects(P.value_markets, [0], market_half=0, n_test_per_class=5, knn_k=3, mh_orders=4, burn_n2=1, thin_n2=1, mh_chains=2)
    bk = dict(block_half=3, block_test_per_class=5, block_k=3)
    rejects(P.value_block_markets, [0], **{**bk, "block_k": 0}, match="block_k")
    rejects(P.value_block_markets, [0], **bk, c=(0, 1, 2), match="exponents")
    rejects(P.value_block_markets, [0], **bk, weight_bases=(2, -1), match="weight_bases")
    rejects(P.value_block_markets, [0], **{**bk, "block_half": 0}, match="n_per_half")
    rejects(P.feature_sweep_shift, R, U, np.zeros(3), np.array([-1.0]), [0])
    rejects(P.mixing_runs, [4], 0, n_chains=4, seed=0)
    rejects(P.sampler_efficiency, U, R, [("x", np.ones(3))], [4], 0, seed=0)
