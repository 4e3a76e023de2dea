"""Tests of icml26.bwdam: closed forms, POT as the reference, the energy descent, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from icml26 import bwdam as B

ot = pytest.importorskip("ot")
import ot.gaussian  # noqa: E402, F811  (after the importorskip)


def rand_spd(rng, n, d, jitter=0.1):
    A = rng.standard_normal((n, d, d))
    return A @ np.swapaxes(A, 1, 2) / d + jitter * np.eye(d)


# ---------------------------------------------------------------- closed forms


def test_distance_and_map_1d_closed_form():
    rng = np.random.default_rng(0)
    m1, m2 = rng.standard_normal((2, 7, 1))
    s1, s2 = rng.uniform(0.1, 3.0, (2, 7))
    C1, C2 = (s1**2)[:, None, None], (s2**2)[:, None, None]
    w2 = B.bures_wasserstein_distance(m1, C1, m2, C2, squared=True)
    np.testing.assert_allclose(w2, (m1 - m2)[:, 0] ** 2 + (s1 - s2) ** 2, rtol=1e-12, atol=1e-12)
    A, b = B.ot_map(m1, C1, m2, C2)
    np.testing.assert_allclose(A[:, 0, 0], s2 / s1, rtol=1e-12)
    np.testing.assert_allclose(b[:, 0], m2[:, 0] - s2 / s1 * m1[:, 0], rtol=1e-10, atol=1e-12)


def test_distance_and_map_commuting_closed_form():
    rng = np.random.default_rng(1)
    d = 5
    U = B._random_orthogonal(d, (), rng)
    a, c = rng.uniform(0.2, 4.0, (2, d))
    C1, C2 = U @ np.diag(a) @ U.T, U @ np.diag(c) @ U.T
    m1, m2 = rng.standard_normal((2, d))
    expect = np.sum((m1 - m2) ** 2) + np.sum((np.sqrt(a) - np.sqrt(c)) ** 2)
    assert B.bures_wasserstein_distance(m1, C1, m2, C2, squared=True) == pytest.approx(expect, rel=1e-10)
    A, _ = B.ot_map(m1, C1, m2, C2)
    np.testing.assert_allclose(A, U @ np.diag(np.sqrt(c / a)) @ U.T, atol=1e-10)


def test_map_pushes_source_exactly_onto_target():
    rng = np.random.default_rng(2)
    d = 6
    m1, m2 = rng.standard_normal((2, 4, d))
    C1, C2 = rand_spd(rng, 4, d), rand_spd(rng, 4, d)
    A, b = B.ot_map(m1, C1, m2, C2)
    np.testing.assert_allclose(A, np.swapaxes(A, 1, 2), atol=1e-12)  # symmetric (a gradient of a convex map)
    assert np.all(np.linalg.eigvalsh(A) > 0)
    np.testing.assert_allclose((A @ m1[..., None])[..., 0] + b, m2, atol=1e-10)  # T#N: mean
    np.testing.assert_allclose(A @ C1 @ A, C2, atol=1e-9)  # T#N: covariance
    # and the transport cost E|T(X) - X|^2 equals W2^2 (optimality of the map)
    cost = np.sum((m2 - m1) ** 2, 1) + np.trace(C1 - 2 * A @ C1 + A @ C1 @ A, axis1=1, axis2=2)
    np.testing.assert_allclose(cost, B.bures_wasserstein_distance(m1, C1, m2, C2, squared=True), rtol=1e-9)


def test_phi_step_1d_is_barycenter_of_standard_deviations():
    # in 1-D: A_i = s_i / s, so Omega+ = (sum_i w_i s_i)^2 and m+ = sum_i w_i mu_i
    rng = np.random.default_rng(3)
    mus = rng.standard_normal((5, 1))
    s = rng.uniform(0.5, 2.0, 5)
    m, om = np.array([0.3]), np.array([[1.7]])
    mn, On, ds, w = B.phi_step(m, om, mus, (s**2)[:, None, None], beta=0.7)
    expect_d = (mus[:, 0] - 0.3) ** 2 + (s - np.sqrt(1.7)) ** 2
    np.testing.assert_allclose(ds, expect_d, atol=1e-12)
    np.testing.assert_allclose(w, np.exp(-0.7 * expect_d) / np.exp(-0.7 * expect_d).sum(), rtol=1e-12)
    assert mn[0] == pytest.approx(w @ mus[:, 0], rel=1e-12)
    assert On[0, 0] == pytest.approx((w @ s) ** 2, rel=1e-10)


def test_single_pattern_is_retrieved_in_one_step():
    rng = np.random.default_rng(4)
    mu, S = rng.standard_normal((1, 4)), rand_spd(rng, 1, 4)
    qm, qc = rng.standard_normal((3, 4)), rand_spd(rng, 3, 4)
    mn, On, _, w = B.phi_step(qm, qc, mu, S, beta=1.0)
    np.testing.assert_allclose(w, 1.0)
    np.testing.assert_allclose(mn, np.repeat(mu, 3, 0), atol=1e-12)
    np.testing.assert_allclose(On, np.repeat(S, 3, 0), atol=1e-9)


# ---------------------------------------------------------------- POT as the reference


def test_distance_agrees_with_pot():
    rng = np.random.default_rng(5)
    for d in (1, 3, 8):
        m1, m2 = rng.standard_normal((2, 6, d))
        C1, C2 = rand_spd(rng, 6, d), rand_spd(rng, 6, d)
        ours = B.bures_wasserstein_distance(m1, C1, m2, C2)
        ref = ot.gaussian.bures_wasserstein_distance(m1, m2, C1, C2, paired=True)
        np.testing.assert_allclose(ours, ref, rtol=1e-8, atol=1e-8)
        # the pairwise (Q x N) version equals the elementwise one and POT's batched matrix
        P = B.pairwise_bw_sq(m1, C1, m2, C2)
        np.testing.assert_allclose(P, ot.gaussian.bures_wasserstein_distance(m1, m2, C1, C2) ** 2, rtol=1e-7, atol=1e-8)


def test_map_agrees_with_pot():
    rng = np.random.default_rng(6)
    d = 5
    m1, m2 = rng.standard_normal((2, d))
    C1, C2 = rand_spd(rng, 2, d)
    A, b = B.ot_map(m1, C1, m2, C2)
    Ar, br = ot.gaussian.bures_wasserstein_mapping(m1[None], m2[None], C1, C2)
    np.testing.assert_allclose(A, Ar, atol=1e-10)
    np.testing.assert_allclose(b, np.ravel(br), atol=1e-10)


def test_fixed_weight_phi_iteration_converges_to_pot_barycenter():
    # with frozen weights, Phi is the fixed-point barycenter iteration of Alvarez-Esteban et al.
    rng = np.random.default_rng(7)
    d, n = 4, 6
    mus, S = rng.standard_normal((n, d)), rand_spd(rng, n, d)
    w = rng.dirichlet(np.ones(n))
    mb, Cb = ot.gaussian.bures_wasserstein_barycenter(mus, S, weights=w, num_iter=2000, eps=1e-12)
    m, C = np.zeros(d), np.eye(d)
    for _ in range(100):
        m, C, _, _ = B.phi_step(m, C, mus, S, beta=1.0, weights=w)
    np.testing.assert_allclose(m, mb, atol=1e-10)
    np.testing.assert_allclose(C, Cb, atol=1e-8)


def test_retrieval_fixed_point_is_self_consistent_barycenter():
    # small beta: the dynamics settle on a genuine mixture; the limit must equal the POT barycenter
    # of the stored patterns with the Gibbs weights *of the limit itself*
    rng = np.random.default_rng(8)
    d, n = 3, 5
    mus, S = 0.5 * rng.standard_normal((n, d)), rand_spd(rng, n, d)
    r = B.retrieve(np.zeros((1, d)), np.eye(d)[None], mus, S, beta=0.3, max_iter=300, tol=1e-13)
    w = B.gibbs_weights(B.pairwise_bw_sq(r.means, r.covs, mus, S), 0.3)[0]
    assert w.max() < 0.9  # a real mixture, not one pattern
    mb, Cb = ot.gaussian.bures_wasserstein_barycenter(mus, S, weights=w, num_iter=2000, eps=1e-12)
    np.testing.assert_allclose(r.means[0], mb, atol=1e-8)
    np.testing.assert_allclose(r.covs[0], Cb, atol=1e-7)


# ---------------------------------------------------------------- dynamics


@pytest.mark.parametrize("beta", [0.05, 0.3, 1.0, 10.0])
def test_energy_never_increases_along_retrieval(beta):
    mus, S = B.sample_commuting_gaussians(40, 6, commuting=False, random_state=9)
    qm, qc = B.perturb_gaussians(mus[:8], S[:8], 3.0, random_state=10)
    r = B.retrieve(qm, qc, mus, S, beta, max_iter=15, tol=0.0, track_energy=True)
    e = r.path_energy  # (T+1, Q)
    assert np.all(np.diff(e, axis=0) <= 1e-9 * np.maximum(1.0, np.abs(e[:-1])))
    assert np.all(np.isfinite(e))


def test_large_beta_retrieves_and_small_beta_collapses():
    mus, S = B.sample_commuting_gaussians(50, 10, random_state=11)
    qm, qc = B.perturb_gaussians(mus[:10], S[:10], 1.0, random_state=12)
    mem = B.BWDenseAssociativeMemory(beta=10.0).fit(mus, S)
    assert np.array_equal(mem.predict(qm, qc), np.arange(10))
    err = B.bures_wasserstein_distance(mem.retrieve(qm, qc).means, mem.retrieve(qm, qc).covs, mus[:10], S[:10])
    assert err.max() < 1e-4
    # beta -> 0: every query goes to (near) the uniform barycenter, far from its pattern
    r = B.retrieve(qm, qc, mus, S, 1e-3)
    assert B.bures_wasserstein_distance(r.means, r.covs, mus[:10], S[:10]).min() > 1.0


def test_euclidean_dam_oracles():
    rng = np.random.default_rng(13)
    X = rng.standard_normal((30, 5))
    mem = B.EuclideanDenseAssociativeMemory(beta=50.0).fit(X)
    q = X[:6] + 0.01 * rng.standard_normal((6, 5))
    assert np.array_equal(mem.predict(q), np.arange(6))
    # one step equals the softmax-weighted average of the patterns
    d2 = ((q[:, None] - X[None]) ** 2).sum(-1)
    w = np.exp(-0.2 * d2) / np.exp(-0.2 * d2).sum(1, keepdims=True)
    step = B.EuclideanDenseAssociativeMemory(beta=0.2, max_iter=1).fit(X).retrieve(q)
    np.testing.assert_allclose(step, w @ X, atol=1e-12)
    x, path = B.EuclideanDenseAssociativeMemory(beta=0.2, max_iter=20, tol=0.0).fit(X).retrieve(q, return_path=True)
    e = np.stack([B.EuclideanDenseAssociativeMemory(beta=0.2).fit(X).energy(p) for p in path])
    assert np.all(np.diff(e, axis=0) <= 1e-10)


# ---------------------------------------------------------------- data


def test_sampler_puts_patterns_on_wasserstein_sphere():
    d, n = 7, 30
    mus, S = B.sample_commuting_gaussians(n, d, random_state=14)
    R = np.sqrt(2.1 * d)
    dist0 = B.bures_wasserstein_distance(mus, S, np.zeros((n, d)), np.zeros((n, d, d)))
    np.testing.assert_allclose(dist0, R, rtol=1e-10)
    lam = np.linalg.eigvalsh(S)
    assert lam.min() >= 1.0 - 1e-12 and lam.max() <= 1.1 + 1e-12
    np.testing.assert_allclose(S[0] @ S[5], S[5] @ S[0], atol=1e-12)  # commuting
    m2, S2 = B.sample_commuting_gaussians(n, d, random_state=14)
    assert np.array_equal(mus, m2) and np.array_equal(S, S2)  # seeded
    _, Snc = B.sample_commuting_gaussians(n, d, commuting=False, random_state=14)
    assert np.abs(Snc[0] @ Snc[5] - Snc[5] @ Snc[0]).max() > 1e-4


def test_perturbation_model():
    mus, S = B.sample_commuting_gaussians(20, 6, random_state=15)
    r = 0.8
    qm, qc = B.perturb_gaussians(mus, S, r, random_state=16)
    np.testing.assert_allclose(np.linalg.norm(qm - mus, axis=1), r / np.sqrt(2), rtol=1e-12)
    np.testing.assert_allclose(np.trace(qc - S, axis1=1, axis2=2), 0.1 * r**2 / 2, rtol=1e-10)
    assert np.all(np.linalg.eigvalsh(qc - S) >= -1e-12)
    assert np.all(B.bures_wasserstein_distance(qm, qc, mus, S) <= r)


def test_shared_mean_and_digits_generators():
    m, C = B.sample_shared_mean_gaussians(10, 4, random_state=17)
    assert np.all(m == 0) and np.all(np.linalg.eigvalsh(C) > 0.2)
    dm, dc, y = B.digits_gaussians(n_components=6, n_patterns=50, random_state=0)
    assert dm.shape == (50, 6) and dc.shape == (50, 6, 6) and y.shape == (50,)
    assert np.linalg.eigvalsh(dc).min() >= 0.05 - 1e-9


def test_features():
    m, C = B.sample_shared_mean_gaussians(3, 2, random_state=18)
    F = B.gaussian_features(m, C, mode="mean+cov")
    assert F.shape == (3, 6)
    np.testing.assert_allclose(((F[0] - F[1]) ** 2).sum(), np.sum((C[0] - C[1]) ** 2))


# ---------------------------------------------------------------- bad input


def test_bad_input_is_a_clear_error():
    good_m, good_C = np.zeros((2, 3)), np.stack([np.eye(3)] * 2)
    bad_C = good_C.copy()
    bad_C[1] = np.diag([1.0, -0.5, 1.0])
    with pytest.raises(ValueError, match=r"covs\[1\] is not positive semi-definite.*-0.5"):
        B.check_gaussians(good_m, bad_C)
    with pytest.raises(ValueError, match="shape"):
        B.bures_wasserstein_distance(good_m, np.eye(3), good_m, good_C)
    with pytest.raises(ValueError, match="not symmetric"):
        asym = good_C.copy()
        asym[0, 0, 1] = 0.5
        B.check_gaussians(good_m, asym)
    with pytest.raises(ValueError, match="finite"):
        B.check_gaussians(good_m * np.nan, good_C)
    with pytest.raises(ValueError, match="Sigmas"):
        B.phi_step(good_m, good_C, good_m, bad_C, beta=1.0)
    with pytest.raises(ValueError, match="beta"):
        B.phi_step(good_m, good_C, good_m, good_C, beta=0.0)
    with pytest.raises(ValueError, match="beta"):
        B.BWDenseAssociativeMemory(beta=-1).fit(good_m, good_C)
    with pytest.raises(ValueError, match="max_iter"):
        B.retrieve(good_m, good_C, good_m, good_C, 1.0, max_iter=0)
    with pytest.raises(ValueError, match="infeasible"):
        B.sample_commuting_gaussians(5, 10, radius=np.sqrt(2 * 10) * 2)
    with pytest.raises(ValueError, match="positive definite"):
        B.ot_map(np.zeros(2), np.diag([1.0, 0.0]), np.zeros(2), np.eye(2))
    with pytest.raises(ValueError, match="mode"):
        B.gaussian_features(good_m, good_C, mode="cov")


def test_paper_default_radius_is_rejected_not_an_endless_loop():
    # R = sqrt(2d) forces every eigenvalue to lambda_min = 1: the authors' sampler never returns
    with pytest.raises(ValueError, match="strictly inside"):
        B.sample_commuting_gaussians(5, 10, radius=np.sqrt(2 * 10))


def test_vectorised_step_equals_loop_of_pot_calls():
    mus, S = B.sample_commuting_gaussians(25, 5, commuting=False, random_state=19)
    qm, qc = B.perturb_gaussians(mus[:3], S[:3], 2.0, random_state=20)
    mn, On, _, _ = B.phi_step(qm, qc, mus, S, beta=0.4)
    for k in range(3):
        rm, rc = B.phi_step_pot_loop(qm[k], qc[k], mus, S, 0.4)
        np.testing.assert_allclose(mn[k], rm, atol=1e-10)
        np.testing.assert_allclose(On[k], rc, atol=1e-8)


def test_sample_covariance_queries_and_capacity_helpers():
    m, C = B.sample_shared_mean_gaussians(4, 3, random_state=21)
    qm, qc = B.sample_covariance_queries(m, C, 20000, random_state=22)
    np.testing.assert_allclose(qc, C, atol=0.15)  # law of large numbers
    with pytest.raises(ValueError, match="n_samples"):
        B.sample_covariance_queries(m, C, 1)
    assert B.capacity_threshold([4, 8, 16, 32], [1.0, 0.95, 0.5, np.nan]) == 8
    assert B.capacity_threshold([4, 8], [1.0, 1.0]) == 8
    assert B.capacity_threshold([4, 8], [0.5, 1.0]) == 0
    curve = B.capacity_curve(6, [4, 8], n_queries=4, random_state=0)
    assert curve.shape == (2,) and np.all((curve >= 0) & (curve <= 1))
    with pytest.raises(ValueError, match="method"):
        B.retrieval_success(m, C, qm, qc, np.arange(4), 1.0, method="l2")


def test_estimator_api():
    mus, S = B.sample_commuting_gaussians(12, 3, random_state=23)
    mem = B.BWDenseAssociativeMemory(beta=5.0).fit(mus, S)
    assert mem.fit(mus, S) is mem
    e_stored = mem.energy(mus, S)
    qm, qc = B.perturb_gaussians(mus, S, 1.0, random_state=24)
    assert np.all(e_stored < mem.energy(qm, qc))  # stored patterns sit lower than perturbed queries
    with pytest.raises(ValueError, match=r"^covs is not positive semi-definite"):
        B.check_gaussians(np.zeros(2), np.diag([1.0, -1.0]))


def test_paired_sign_test_against_enumeration():
    from itertools import product
    from math import comb

    a = np.array([1, 1, 1, 1, 0, 1, 0, 1], bool)
    b = np.array([0, 0, 1, 0, 1, 1, 0, 0], bool)
    n10, n01, p = B.paired_sign_test(a, b)
    assert (n10, n01) == (4, 1)
    # brute force over all 2^5 sign patterns of the 5 discordant pairs
    expect = sum(1 for signs in product([0, 1], repeat=5) if sum(signs) >= 4) / 2**5
    assert p == pytest.approx(expect) == pytest.approx((comb(5, 4) + comb(5, 5)) / 32)
    assert B.paired_sign_test(a, a)[2] == 1.0
    with pytest.raises(ValueError, match="equal shapes"):
        B.paired_sign_test(a, b[:3])


# ---------------------------------------------------------------- ot_map at tiny scales (issue #9)


def test_ot_map_tiny_covariances_issue_example():
    # C1 positive definite with eigenvalues below 1e-10: the map must still be sqrt(c2 / c1)
    C1, C2 = np.diag([2e-11, 5e-11]), np.diag([4e-11, 1e-11])
    A, b = B.ot_map(np.zeros(2), C1, np.zeros(2), C2)
    np.testing.assert_allclose(A, np.diag([np.sqrt(2.0), np.sqrt(0.2)]), rtol=1e-10, atol=0)
    np.testing.assert_allclose(np.diag(A), [1.414, 0.447], atol=5e-4)
    np.testing.assert_allclose(A @ C1 @ A, C2, rtol=1e-9, atol=0)
    np.testing.assert_allclose(b, 0.0, atol=0)


@pytest.mark.parametrize("c", [1e-14, 1e-11, 1e-6, 1.0, 1e4, 1e9])
def test_ot_map_is_scale_equivariant_and_pushes_c1_onto_c2(c):
    rng = np.random.default_rng(30)
    d = 4
    m1, m2 = rng.standard_normal((2, 3, d))
    C1, C2 = rand_spd(rng, 3, d), rand_spd(rng, 3, d)
    A_ref, _ = B.ot_map(m1, C1, m2, C2)
    A, _ = B.ot_map(m1, c * C1, m2, c * C2)
    np.testing.assert_allclose(A, A_ref, rtol=1e-7, atol=1e-9)  # A(cC1, cC2) = A(C1, C2)
    np.testing.assert_allclose(A @ (c * C1) @ A, c * C2, rtol=1e-7, atol=1e-9 * c)  # A C1 A = C2


def test_capacity_threshold_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="one rate per grid point"):
        B.capacity_threshold([4, 8, 16], [1.0, 1.0])
    with pytest.raises(ValueError, match="increasing"):
        B.capacity_threshold([8, 4], [1.0, 1.0])
    # the censored case: the curve never drops, the breaking point is the grid's end (a lower bound)
    assert B.capacity_threshold([4, 8, 16], [1.0, 1.0, 0.95]) == 16


def test_tracked_distances_skip_repeated_states_bit_for_bit():
    # a converged query's state repeats; its distances are reused, not recomputed, and must equal
    # the distances of every state computed afresh, to the bit (energy and nearest pattern too)
    mus, S = B.sample_commuting_gaussians(30, 4, random_state=3)
    qm, qc = B.perturb_gaussians(mus[:7], S[:7], 0.7, random_state=4)
    r = B.retrieve(qm, qc, mus, S, 3.0, max_iter=8, tol=1e-6, track_energy=True)
    assert r.n_iter.min() < 8  # some queries froze, so some states were reused
    T1, Q, d = r.path_means.shape
    full = B.pairwise_bw_sq(r.path_means.reshape(T1 * Q, d), r.path_covs.reshape(T1 * Q, d, d), mus, S).reshape(T1, Q, -1)
    assert np.array_equal(r.path_dist_sq, full)
    assert np.array_equal(r.path_energy, B.energy(full.reshape(T1 * Q, -1), 3.0).reshape(T1, Q))
    assert np.array_equal(np.argmin(r.path_dist_sq[-1], axis=1), B.nearest_pattern(r.means, r.covs, mus, S))
    assert B.retrieve(qm, qc, mus, S, 3.0).path_dist_sq is None


# ---------------------------------------------------------------- the chapter's experiment loops
def test_stream_is_the_seeded_generator_of_its_key():
    assert np.array_equal(B.stream(3, 1).random(4), np.random.default_rng([3, 1]).random(4))
    assert not np.array_equal(B.stream(3, 1).random(4), B.stream(3, 2).random(4))


def test_retrieval_dynamics_rows_match_one_retrieval_by_hand():
    rows, paths, energy_ok = B.retrieval_dynamics([5], N=6, d=2, n_queries=3, betas=[1.0], radii=[("r", 0.5)])
    mus, S = B.sample_commuting_gaussians(6, 2, random_state=np.random.default_rng([5, 1]))
    qm, qc = B.perturb_gaussians(mus[:3], S[:3], 0.5, random_state=np.random.default_rng([5, 2]))
    res = B.retrieve(qm, qc, mus, S, 1.0, max_iter=10, tol=1e-6, track_energy=True)
    err = B.bures_wasserstein_distance(res.path_means, res.path_covs, mus[:3], S[:3])
    assert len(rows) == 1 and rows[0]["final W2"] == err[-1].mean() and rows[0]["query W2"] == err[0].mean()
    assert np.array_equal(paths[(5, "r", 1.0)], err.mean(1)) and energy_ok == [True]
    final = B.nearest_pattern(res.means, res.covs, mus, S) == np.arange(3)
    assert rows[0]["final success"] == final.mean()


def test_shared_mean_and_digits_rows_cover_the_grid():
    m = {"bw": "bw", "mean": "mean"}
    rows = B.shared_mean_retrieval([0], m, N=4, d=2, radii=[0.5], n_samples=[20], betas=[1.0, 3.0])
    # 2 splits x 2 query models x 2 methods x 2 betas
    assert len(rows) == 16 and {r["split"] for r in rows} == {"test", "tune"}
    mu, C = B.sample_shared_mean_gaussians(4, 2, random_state=np.random.default_rng([0, 4]))
    qm, qc = B.perturb_gaussians(mu, C, 0.5, cov_scale=1.0, random_state=np.random.default_rng([0, 5, 0]))
    hits = B.retrieval_success(mu, C, qm, qc, np.arange(4), 1.0, method="bw")
    assert np.array_equal(rows[0]["hits"], hits) and rows[0]["query model"] == "additive, r = 0.5"
    drows, (dm, dc) = B.digits_retrieval([0], m, n_components=4, N=10, n_queries=2, radii=[0.5], betas=[1.0])
    assert len(drows) == 4 and dm.shape == (10, 4) and dc.shape == (10, 4, 4)
