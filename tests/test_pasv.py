"""Tests of icml26.pasv against exact oracles (enumeration, closed forms, a brute-force Shapley value)."""

from __future__ import annotations

import math
import pkgutil
from itertools import permutations

import numpy as np
import pytest
from docsections import undocumented
from scipy import stats

from icml26 import pasv as P


def brute_force_shapley(U: np.ndarray, n: int) -> np.ndarray:
    """Independent oracle: average marginal contributions over all n! orders (no shared code)."""
    psi = np.zeros(n)
    for order in permutations(range(n)):
        mask = 0
        for i in order:
            psi[i] += U[mask | (1 << i)] - U[mask]
            mask |= 1 << i
    return psi / math.factorial(n)


def random_game(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    U = rng.normal(size=2**n)
    U[0] = 0.0
    return U


def brute_force_pasv_probs(R: np.ndarray, lam: np.ndarray) -> dict[tuple, float]:
    """Eq. 4 evaluated literally, one order at a time, over all n! permutations."""
    n = len(lam)
    w = {}
    for order in permutations(range(n)):
        if any(R[order[b], order[a]] for a in range(n) for b in range(a + 1, n)):
            continue  # not a linear extension
        prob = 1.0
        for t in range(1, n + 1):
            S = set(order[:t])
            M = [i for i in S if not any(R[i, j] for j in S)]
            prob *= len(M) * lam[order[t - 1]] / sum(lam[j] for j in M)
        w[order] = prob
    Z = sum(w.values())
    return {k: v / Z for k, v in w.items()}


# ----------------------------------------------------------------------------- special cases


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_empty_dag_equal_weights_is_shapley(seed):
    n = 5
    U = random_game(n, seed)
    R = np.zeros((n, n), dtype=bool)
    oracle = brute_force_shapley(U, n)
    np.testing.assert_allclose(P.pasv_exact(U, R, np.full(n, 3.0)), oracle, atol=1e-12)
    np.testing.assert_allclose(P.shapley_exact(U), oracle, atol=1e-12)
    np.testing.assert_allclose(P.PasvDP(R).values(U), oracle, atol=1e-12)


def test_equal_weights_give_uniform_linear_extensions():
    R = P.random_dag(7, 0.3, 3)
    orders = P.linear_extensions(R)
    np.testing.assert_allclose(P.order_log_weights(orders, R, np.full(7, 2.5)), 0.0, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_eq4_matches_literal_evaluation(seed):
    rng = np.random.default_rng(seed)
    R = P.random_dag(6, 0.35, seed)
    lam = rng.uniform(0.2, 5.0, 6)
    orders, p = P.order_distribution(R, lam)
    ref = brute_force_pasv_probs(R, lam)
    assert len(ref) == len(orders)
    np.testing.assert_allclose(p, [ref[tuple(o)] for o in orders], rtol=1e-10)


def test_ordered_partition_is_weighted_shapley():
    rng = np.random.default_rng(4)
    blocks = [[0, 3], [1, 4, 5], [2, 6]]
    R = P.ordered_partition_closure(blocks)
    lam = rng.uniform(0.1, 10.0, 7)
    U = random_game(7, 4)
    np.testing.assert_allclose(P.pasv_exact(U, R, lam), P.wsv_exact(U, blocks, lam), atol=1e-12)


def test_dp_matches_enumeration_and_efficiency():
    rng = np.random.default_rng(5)
    R = P.random_dag(8, 0.25, 5)
    lam = rng.uniform(0.5, 4.0, 8)
    U = random_game(8, 5)
    orders, p = P.order_distribution(R, lam)
    enum = P.rov_exact(U, orders, p)
    dp = P.PasvDP(R, lam)
    np.testing.assert_allclose(dp.values(U), enum, atol=1e-12)
    assert enum.sum() == pytest.approx(U[-1] - U[0], abs=1e-12)  # efficiency
    pos = np.argsort(orders, axis=1)
    before = np.einsum("m,mij->ij", p, (pos[:, :, None] < pos[:, None, :]).astype(float))
    np.testing.assert_allclose(dp.precedence_probs(), before, atol=1e-12)


def test_unanimity_game_value_is_prob_last():
    rng = np.random.default_rng(6)
    n, T = 7, [1, 2, 5]
    R = P.random_dag(n, 0.3, 6)
    lam = rng.uniform(0.5, 3.0, n)
    tm = sum(1 << i for i in T)
    U = ((np.arange(2**n) & tm) == tm).astype(float)
    dp = P.PasvDP(R, lam)
    np.testing.assert_allclose(dp.values(U), dp.last_of_probs(T), atol=1e-12)


def test_infinite_weight_adds_edges():
    """λ_i → ∞ for a globally maximal i: PASV → PSV with edges j ≺ i from every other maximal j (Sec. 3.4)."""
    n = 6
    R = P.precedence_closure(n, [(0, 1), (0, 2), (3, 4)])
    U = random_game(n, 7)
    i = 2  # maximal: no successors
    lam = np.ones(n)
    lam[i] = 2.0**40
    others = [j for j in range(n) if j != i and not R[j].any()]
    R2 = P.precedence_closure(n, [(0, 1), (0, 2), (3, 4)] + [(j, i) for j in others])
    np.testing.assert_allclose(P.pasv_exact(U, R, lam), P.pasv_exact(U, R2), atol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_shapiq_exact(seed):
    import shapiq  # pinned in requirements.txt: the independent reference implementation

    n = 5
    U = random_game(n, seed)

    def value(coalitions):
        c = np.asarray(coalitions, dtype=bool)
        return U[(c.astype(np.int64) << np.arange(n)).sum(1)]

    ex = shapiq.ExactComputer(game=value, n_players=n)
    sv = ex(index="SV", order=1)
    ours = P.pasv_exact(U, np.zeros((n, n), dtype=bool))
    np.testing.assert_allclose([sv[(i,)] for i in range(n)], ours, atol=1e-10)


# ----------------------------------------------------------------------------- sampler


def test_sampler_order_distribution_goodness_of_fit():
    rng = np.random.default_rng(8)
    n = 6
    R = P.random_dag(n, 0.3, 8)
    lam = rng.uniform(0.2, 8.0, n)
    orders, p = P.order_distribution(R, lam)
    s = P.AdjacentSwapSampler(R, lam, n_chains=4000, random_state=9)
    O = s.sample(12000, burn_in=300, thin=60)
    assert P.is_linear_extension(O, R).all()
    key = {tuple(o): k for k, o in enumerate(orders)}
    counts = np.bincount([key[tuple(o)] for o in O], minlength=len(orders))
    # pool rare orders so every expected count is >= 5
    exp = p * len(O)
    big = exp >= 5
    obs = np.r_[counts[big], counts[~big].sum()]
    ex = np.r_[exp[big], exp[~big].sum()]
    keep = ex > 0
    pval = stats.chisquare(obs[keep], ex[keep]).pvalue
    assert pval > 1e-3, pval
    # the same chain on wrong weights must be rejected (the test has power)
    wrong = P.order_distribution(R, np.ones(n))[1] * len(O)
    wobs, wex = np.r_[counts[big], counts[~big].sum()], np.r_[wrong[big], wrong[~big].sum()]
    assert stats.chisquare(wobs[wex > 0], wex[wex > 0] * wobs[wex > 0].sum() / wex[wex > 0].sum()).pvalue < 1e-6


def test_sampler_state_invariants():
    R = P.random_dag(12, 0.2, 10)
    s = P.AdjacentSwapSampler(R, np.linspace(1, 5, 12), n_chains=16, init="random", random_state=1).step(500)
    np.testing.assert_array_equal(np.argsort(s.perm, axis=1), s.pos)
    for c in range(16):
        for i in range(12):
            exp = s.pos[c, R[i]].min() if R[i].any() else 12
            assert s.fsp[c, i] == exp
    assert P.is_linear_extension(s.perm, R).all()


def test_mh_estimates_converge_to_exact():
    rng = np.random.default_rng(11)
    n = 7
    R = P.random_dag(n, 0.3, 11)
    lam = rng.uniform(0.5, 16.0, n)
    U = random_game(n, 11)
    exact = P.PasvDP(R, lam).values(U)
    O = P.AdjacentSwapSampler(R, lam, n_chains=500, random_state=12).sample(4000, burn_in=400, thin=50)
    psi, se = P.rov_estimate(P.prefix_values(U, O), O)
    assert np.all(np.abs(psi - exact) < 4.5 * se + 1e-12), (psi - exact) / se
    assert psi.sum() == pytest.approx(U[-1] - U[0])  # efficiency holds per order


def test_mixing_trace_reaches_quarter():
    steps, D = P.pairwise_discrepancy_trace(P.random_dag(6, 0.3, 2), n_chains=2000, n_steps=300, every=50, random_state=0)
    assert D[0] > 0.25 and D[-1] < 0.1


def test_rejection_plus_importance_weights():
    rng = np.random.default_rng(13)
    n = 6
    R = P.random_dag(n, 0.3, 13)
    lam = rng.uniform(0.5, 4.0, n)
    U = random_game(n, 13)
    O, drawn = P.sample_linear_extensions_rejection(R, 6000, random_state=14)
    assert P.is_linear_extension(O, R).all() and drawn >= 6000
    w = np.exp(P.order_log_weights(O, R, lam))
    psi, se = P.rov_estimate(P.prefix_values(U, O), O, weights=w)
    exact = P.pasv_exact(U, R, lam)
    assert np.all(np.abs(psi - exact) < 4.5 * se)


# ----------------------------------------------------------------------------- utilities


def test_knn_utility_incremental_matches_direct():
    dm = P.make_data_market(3, 10, random_state=0)
    ku = P.KNNUtility(dm.X, dm.y, dm.X_test, dm.y_test, k=3)
    O = P.uniform_permutations(dm.n, 3, random_state=1)
    V = ku.values_along(O)
    for r in range(3):
        mask = np.zeros(dm.n, dtype=bool)
        direct = [ku(mask)]
        for x in O[r]:
            mask[x] = True
            direct.append(ku(mask))
        np.testing.assert_array_equal(V[r], direct)
    assert V[0, 0] == pytest.approx(0.1)


def test_knn_utility_is_1nn_accuracy_for_k1():
    from sklearn.neighbors import KNeighborsClassifier

    dm = P.make_data_market(3, 10, random_state=2)
    ku = P.KNNUtility(dm.X, dm.y, dm.X_test, dm.y_test, k=1)
    ref = KNeighborsClassifier(1).fit(dm.X, dm.y).score(dm.X_test, dm.y_test)
    assert ku(np.ones(dm.n, dtype=bool)) == pytest.approx(ref)


def test_data_market_lineage():
    dm = P.make_data_market(4, 5, random_state=0)
    assert dm.n == 5 * 8 and np.bincount(dm.provider).tolist() == [8, 8, 8, 8, 8]
    R = dm.closure()
    owner, copier_a = np.flatnonzero(dm.block == 0), np.flatnonzero(dm.block == 5)
    assert R[np.ix_(owner, copier_a)].all()  # Owner ≺ Anchor ≺ Copier|A, transitively
    assert not R[np.ix_(copier_a, owner)].any()
    np.testing.assert_allclose(dm.weights(2.0)[dm.provider == 3], 4.0)


def test_coalition_model_utility_caches():
    from sklearn.neighbors import KNeighborsClassifier

    dm = P.make_data_market(3, 5, random_state=0)
    cu = P.CoalitionModelUtility(lambda: KNeighborsClassifier(3), dm.X, dm.y, dm.block, dm.X_test, dm.y_test)
    U1 = P.game_table(cu, 8)
    fits = cu.n_fits
    U2 = P.game_table(cu, 8)
    assert fits == 255 and cu.n_fits == 255
    np.testing.assert_array_equal(U1, U2)


def test_value_block_markets_exact_game():
    kw = dict(block_half=3, block_test_per_class=5, block_k=3)
    rows, tables, markets = P.value_block_markets([0, 1], **kw)
    assert len(tables) == len(markets) == 2 and all(U.shape == (256,) for U in tables)
    methods = ["SV", "WSV (b=8)", "PSV", "PASV b=2", "PASV b=8", "PASV b=32"]
    assert len(rows) == 2 * len(methods) * 5
    for ms, U in zip([0, 1], tables):
        for m in methods:
            v = [r["value"] for r in rows if r["seed"] == ms and r["method"] == m]
            # every random order value is efficient: the providers share U(all) - U(empty)
            assert len(v) == 5 and np.isclose(sum(v), U[-1] - U[0], atol=1e-12)
    # the same market seed gives the same market and values; PASV with equal exponents is PSV
    again, _, _ = P.value_block_markets([1], **kw, c=(0, 0, 0, 0, 0))
    psv = {r["provider"]: r["value"] for r in again if r["method"] == "PSV"}
    for r in again:
        if r["method"].startswith("PASV"):
            assert np.isclose(r["value"], psv[r["provider"]], atol=1e-12)
    first = {(r["method"], r["provider"]): r["value"] for r in rows if r["seed"] == 1}
    for r in again:
        if r["method"] in ("SV", "PSV"):
            assert r["value"] == first[(r["method"], r["provider"])]
    # the table is the coalition utility of the same market: U(all) retrains on every block
    from sklearn.neighbors import KNeighborsClassifier

    m = markets[0]
    full = KNeighborsClassifier(3).fit(m.X, m.y).score(m.X_test, m.y_test)
    assert tables[0][-1] == full and tables[0][0] == 0.1


def test_cached_utility_counts():
    cu = P.CachedUtility(lambda m: float(m.sum() ** 2), 4)
    V = cu.values_along(np.array([[0, 1, 2, 3], [1, 0, 2, 3]]))
    np.testing.assert_array_equal(V[0], [0, 1, 4, 9, 16])
    assert cu.n_queries == 10 and cu.n_calls == 6  # {}, {0}, {1}, {0,1}, {0,1,2}, all


def test_priority_sweep_shapes():
    R = P.precedence_closure(3, [(0, 1)])
    U = random_game(3, 0)
    out = P.priority_sweep(lambda lam: P.pasv_exact(U, R, lam), np.ones(3), [2], [0.5, 1.0, 2.0])
    assert out.shape == (3, 3)
    np.testing.assert_allclose(out.sum(1), U[-1] - U[0])


# ----------------------------------------------------------------------------- bad input


def test_cyclic_precedence_graph_is_an_error():
    with pytest.raises(ValueError, match="cycle"):
        P.precedence_closure(3, [(0, 1), (1, 2), (2, 0)])
    with pytest.raises(ValueError, match="cycle"):
        P.block_closure([0, 0, 1], [(0, 1), (1, 0)])


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: P.precedence_closure(3, [(0, 5)]), "0..2"),
        (lambda: P.order_log_weights(np.array([[0, 1]]), np.zeros((2, 2), bool), [1.0, -1.0]), "> 0"),
        (lambda: P.order_log_weights(np.array([[0, 1]]), np.zeros((2, 2), bool), [1.0]), "shape"),
        (lambda: P.AdjacentSwapSampler(np.zeros((3, 3), bool), init="bogus"), "init"),
        (lambda: P.AdjacentSwapSampler(np.zeros((3, 3)), n_chains=2), "boolean"),
        (lambda: P.ordered_partition_closure([[0, 1], [1, 2]]), "partition"),
        (lambda: P.KNNUtility(np.zeros((2, 2)), [0, 1], np.zeros((1, 2)), [0], k=0), "k=0"),
        (lambda: P.priority_sweep(lambda lam: lam, np.ones(2), [0], [0.0]), "> 0"),
        (lambda: P.random_dag(4, 1.5), "edge_prob"),
    ],
)
def test_bad_input_raises(call, match):
    with pytest.raises(ValueError, match=match):
        call()


PASV_MODULES = sorted(
    m.name for m in pkgutil.iter_modules(P.__path__, "icml26.pasv.") if not m.name.rsplit(".", 1)[-1].startswith("_")
)


@pytest.mark.parametrize("module", PASV_MODULES)
def test_every_public_callable_has_numpydoc_sections(module):
    assert undocumented(module) == []


# ---------------------------------------------------------------- the chapter's experiment loops
def _small_game(n=4, seed=0):
    w = np.random.default_rng(seed).uniform(0, 1, n)
    return P.game_table(lambda mask: float(w[mask].sum() ** 2), n)


def test_feature_sweep_shift_is_the_swept_players_own_change():
    n = 4
    U, R = _small_game(n), P.precedence_closure(n, [(0, 1), (2, 3)])
    base = P.pasv_exact(U, R)
    lams = np.array([0.25, 1.0, 4.0])
    shift = P.feature_sweep_shift(R, U, base, lams, [1, 2])
    for k, lam in enumerate(lams):
        w = np.ones(n)
        w[1] = lam
        assert shift[1, k] == pytest.approx(P.pasv_exact(U, R, w)[1] - base[1], abs=1e-12)
    assert np.all(shift[[0, 3]] == 0) and shift[1, 1] == pytest.approx(0.0, abs=1e-12)  # λ = 1 changes nothing


def test_sampler_efficiency_errors_shrink_with_the_budget_and_mixing_runs_are_censored_honestly():
    n = 4
    U, R = _small_game(n), P.precedence_closure(n, [(0, 1)])
    rows = P.sampler_efficiency(U, R, [("equal", np.ones(n))], [4, 512], 3, seed=0)
    err = {(r["sampler"], r["N"]): [] for r in rows}
    for r in rows:
        err[(r["sampler"], r["N"])].append(r["err"])
    for s in ("MH (Alg. 1)", "rejection + IS"):
        assert np.mean(err[(s, 512)]) < np.mean(err[(s, 4)])
    assert {r["calls"] for r in rows} == {4 * n, 512 * n}
    mix, traces = P.mixing_runs([4], 2, n_chains=16, seed=0)
    assert len(mix) == 4 and set(traces) == {(4, "equal λ"), (4, "λ ~ U(1, 256)")}
    for r in mix:
        assert r["censored"] or r["t_mix"] <= 4 * 4 * 4
