"""Bad input to icml26.bwdam: every public callable rejects out-of-domain input with a clear
ValueError/TypeError raised by icml26 itself (never a NaN, a silent result or a deep traceback).

The first test is the bad call reported in issue #9 (``capacity_threshold`` with mismatched
lengths returned 1.0); the hypothesis tests then feed each public callable wrong shapes,
NaN/inf, non-PSD covariances, negative sizes, empty arrays, out-of-range rates and wrong types.
"""

from __future__ import annotations

import numpy as np
from badinput import covers, finite_or_raises, rejects
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from icml26 import bwdam as B

FAST = settings(max_examples=20, deadline=None, derandomize=True)

# a small valid memory to put beside the bad argument
M_OK = np.array([[0.0, 0.0], [1.0, 0.5], [-1.0, 2.0]])
C_OK = np.stack([np.eye(2), np.diag([0.5, 2.0]), np.array([[1.0, 0.3], [0.3, 0.8]])])

bad_floats = st.sampled_from([np.nan, np.inf, -np.inf])
bad_betas = st.sampled_from([np.nan, np.inf, -np.inf, -1.0, 0.0])
bad_sizes = st.integers(-5, 0)
not_numbers = st.sampled_from(["3", None, [1, 2], {"a": 1}])


@st.composite
def bad_gaussians(draw):
    """(means, covs, what) pairs that are not a batch of Gaussians in d = 2."""
    kind = draw(st.sampled_from(["nan-mean", "inf-cov", "non-psd", "asym", "shape", "string", "scalar"]))
    m, c = M_OK.copy(), C_OK.copy()
    k = draw(st.integers(0, 2))
    if kind == "nan-mean":
        m[k, draw(st.integers(0, 1))] = draw(bad_floats)
    elif kind == "inf-cov":
        c[k, 0, 0] = draw(bad_floats)
    elif kind == "non-psd":
        c[k] = np.diag([1.0, -draw(st.floats(0.01, 10.0))])
    elif kind == "asym":
        c[k, 0, 1] += draw(st.floats(0.1, 5.0))
    elif kind == "shape":
        c = draw(arrays(float, st.sampled_from([(3, 2), (3, 3, 3), (2, 2, 2), (3, 2, 3)]), elements=st.floats(0, 1)))
    elif kind == "string":
        m = np.array([["a", "b"]] * 3)
    else:
        m = np.float64(1.0)
    return m, c


# ----------------------------------------------------------------------------- the reported bad call (issue #9)


def test_capacity_threshold_with_mismatched_lengths_is_an_error_not_one():
    rejects(B.capacity_threshold, [4, 8, 16], [1.0, 1.0], match="one rate per grid point")
    rejects(B.capacity_threshold, [4, 8], [1.0, 1.0, 1.0], match="one rate per grid point")


# ----------------------------------------------------------------------------- Gaussians and distances


@covers(
    "bwdam.geometry.check_gaussians",
    "bwdam.geometry.bures_wasserstein_distance",
    "bwdam.geometry.pairwise_bw_sq",
    "bwdam.geometry.ot_map",
    "bwdam.dynamics.nearest_pattern",
    "bwdam.estimators.gaussian_features",
)
@FAST
@given(bad=bad_gaussians(), first=st.booleans())
def test_gaussian_functions_reject_bad_gaussians(bad, first):
    m, c = bad
    rejects(B.check_gaussians, m, c)
    args = (m, c, M_OK, C_OK) if first else (M_OK, C_OK, m, c)
    rejects(B.bures_wasserstein_distance, *args)
    rejects(B.pairwise_bw_sq, *args)
    rejects(B.ot_map, *args)
    rejects(B.nearest_pattern, *args)
    rejects(B.gaussian_features, m, c)


@FAST
@given(tol=st.sampled_from([-1.0, np.nan, np.inf]), mode=st.sampled_from(["cov", "", "MEAN", "mean cov"]))
def test_check_gaussians_tolerance_and_feature_mode(tol, mode):
    rejects(B.check_gaussians, M_OK, C_OK, psd_tol=tol, match="psd_tol")
    rejects(B.gaussian_features, M_OK, C_OK, mode=mode, match="mode")


@FAST
@given(d1=st.integers(1, 3), d2=st.integers(4, 5))
def test_dimension_mismatch_is_named(d1, d2):
    rejects(B.bures_wasserstein_distance, np.zeros(d1), np.eye(d1), np.zeros(d2), np.eye(d2), match="dimension|shape")
    rejects(B.ot_map, np.zeros(d1), np.eye(d1), np.zeros(d2), np.eye(d2), match="dimension|shape")
    rejects(
        B.pairwise_bw_sq,
        np.zeros((2, d1)),
        np.stack([np.eye(d1)] * 2),
        np.zeros((3, d2)),
        np.stack([np.eye(d2)] * 3),
        match="shape",
    )


@FAST
@given(eps=st.floats(0.0, 1e-3))
def test_ot_map_needs_a_positive_definite_source(eps):
    C1 = np.diag([1.0, -eps]) if eps > 0 else np.diag([1.0, 0.0])
    rejects(B.ot_map, np.zeros(2), C1, np.zeros(2), np.eye(2))


@covers("bwdam.geometry.sqrtm_psd")
@FAST
@given(
    c=arrays(float, st.sampled_from([(3,), (2, 3), (0, 0), (4, 2, 3)]), elements=st.floats(-1, 1)),
    bad=bad_floats,
    floor=st.sampled_from([-1.0, np.nan, np.inf]),
)
def test_sqrtm_psd_rejects_bad_matrices(c, bad, floor):
    rejects(B.sqrtm_psd, c, match="shape")
    nonfinite = np.eye(3)
    nonfinite[1, 1] = bad
    rejects(B.sqrtm_psd, nonfinite, match="finite")
    rejects(B.sqrtm_psd, np.eye(2), floor=floor, match="floor")
    rejects(B.sqrtm_psd, np.eye(2), inverse=True, match="floor")
    rejects(B.sqrtm_psd, "eye", match="numeric")


# ----------------------------------------------------------------------------- energy, weights, steps


@covers("bwdam.dynamics.energy", "bwdam.dynamics.gibbs_weights")
@FAST
@given(beta=bad_betas, neg=st.floats(-10, -1e-6), shape=st.sampled_from([(0,), (3, 0), ()]))
def test_energy_and_weights_reject_bad_distances_and_temperatures(beta, neg, shape):
    for fn in (B.energy, B.gibbs_weights):
        rejects(fn, np.ones(3), beta, match="beta")
        rejects(fn, np.array([1.0, np.nan, 2.0]), 1.0, match="NaN")
        rejects(fn, np.array([1.0, neg]), 1.0, match="negative")
        rejects(fn, np.zeros(shape), 1.0, match="shape")
        rejects(fn, np.full(3, np.inf), 1.0, match="infinite")
        rejects(fn, np.ones(3), "1", match="real number")


@covers("bwdam.dynamics.phi_step", "bwdam.dynamics.retrieve", "bwdam.dynamics.phi_step_pot_loop")
@FAST
@given(bad=bad_gaussians(), beta=bad_betas, first=st.booleans())
def test_retrieval_steps_reject_bad_queries_memories_and_beta(bad, beta, first):
    m, c = bad
    args = (m, c, M_OK, C_OK) if first else (M_OK, C_OK, m, c)
    rejects(B.phi_step, *args, 1.0)
    rejects(B.retrieve, *args, 1.0)
    rejects(B.phi_step, M_OK, C_OK, M_OK, C_OK, beta, match="beta")
    rejects(B.retrieve, M_OK, C_OK, M_OK, C_OK, beta, match="beta")
    rejects(B.phi_step_pot_loop, M_OK[0], C_OK[0], M_OK, C_OK, beta, match="beta")
    rejects(B.phi_step_pot_loop, M_OK[0], C_OK[0], m, c, 1.0)


@FAST
@given(
    max_iter=st.sampled_from([0, -3, 2.5, np.nan]),
    tol=st.sampled_from([-1e-6, np.nan, np.inf]),
    w=st.sampled_from([np.array([0.5, 0.5, 0.5]), np.array([1.5, -0.5, 0.0]), np.array([np.nan, 0.5, 0.5]), np.ones(2) / 2]),
)
def test_iteration_controls_and_frozen_weights(max_iter, tol, w):
    rejects(B.retrieve, M_OK, C_OK, M_OK, C_OK, 1.0, max_iter=max_iter, match="max_iter")
    rejects(B.retrieve, M_OK, C_OK, M_OK, C_OK, 1.0, tol=tol, match="tol")
    rejects(B.phi_step, M_OK[0], C_OK[0], M_OK, C_OK, 1.0, weights=w, match="weights")


@covers("bwdam.dynamics.RetrievalResult")
@FAST
@given(q=st.integers(1, 3), d=st.integers(1, 3), wrong=st.sampled_from(["covs", "n_iter", "path", "energy", "dist"]))
def test_retrieval_result_checks_its_shapes(q, d, wrong):
    kw = dict(
        means=np.zeros((q, d)),
        covs=np.zeros((q, d, d)),
        n_iter=np.zeros(q, int),
        path_means=np.zeros((2, q, d)),
        path_covs=np.zeros((2, q, d, d)),
        path_energy=np.zeros((2, q)),
    )
    B.RetrievalResult(**kw, path_dist_sq=np.zeros((2, q, 5)))  # the right shapes pass
    key = {"covs": "covs", "n_iter": "n_iter", "path": "path_means", "energy": "path_energy", "dist": "path_dist_sq"}[wrong]
    kw[key] = np.zeros((q + 1, d + 1))
    rejects(B.RetrievalResult, **kw, match="shape")


# ----------------------------------------------------------------------------- estimators


@covers("bwdam.estimators.BWDenseAssociativeMemory")
@FAST
@given(bad=bad_gaussians(), beta=bad_betas, max_iter=st.sampled_from([0, -1, 1.5]))
def test_bw_memory_rejects_bad_patterns_settings_and_use_before_fit(bad, beta, max_iter):
    m, c = bad
    rejects(B.BWDenseAssociativeMemory(1.0).fit, m, c)
    rejects(B.BWDenseAssociativeMemory(beta).fit, M_OK, C_OK, match="beta")
    rejects(B.BWDenseAssociativeMemory(1.0, max_iter=max_iter).fit, M_OK, C_OK, match="max_iter")
    rejects(B.BWDenseAssociativeMemory(1.0).predict, M_OK, C_OK, match="fit")
    rejects(B.BWDenseAssociativeMemory(1.0).energy, M_OK, C_OK, match="fit")
    mem = B.BWDenseAssociativeMemory(1.0).fit(M_OK, C_OK)
    rejects(mem.predict, m, c)
    rejects(mem.energy, m, c)


@covers("bwdam.estimators.EuclideanDenseAssociativeMemory")
@FAST
@given(
    X=arrays(float, st.sampled_from([(3,), (0, 2), (2, 0), (2, 2, 2)]), elements=st.floats(-1, 1)),
    bad=bad_floats,
    beta=bad_betas,
    p=st.integers(3, 5),
)
def test_euclidean_memory_rejects_bad_patterns_and_queries(X, bad, beta, p):
    rejects(B.EuclideanDenseAssociativeMemory(1.0).fit, X, match="shape")
    Xn = np.ones((3, 2))
    Xn[1, 1] = bad
    rejects(B.EuclideanDenseAssociativeMemory(1.0).fit, Xn, match="finite")
    rejects(B.EuclideanDenseAssociativeMemory(beta).fit, np.ones((3, 2)), match="beta")
    rejects(B.EuclideanDenseAssociativeMemory(1.0).predict, np.ones((1, 2)), match="fit")
    mem = B.EuclideanDenseAssociativeMemory(1.0).fit(np.eye(2))
    rejects(mem.predict, np.ones((1, p)), match="shape")
    rejects(mem.retrieve, Xn[:, :2], match="finite")
    rejects(mem.energy, "q", match="numeric")


# ----------------------------------------------------------------------------- data generators


@covers("bwdam.data.sample_commuting_gaussians", "bwdam.data.sample_shared_mean_gaussians")
@FAST
@given(
    n=bad_sizes,
    lam=st.sampled_from([(-1.0, 1.0), (2.0, 1.0), (0.0, 1.0), (np.nan, 1.0), (1.0, np.inf)]),
    junk=not_numbers,
    radius=st.sampled_from([-1.0, 0.0, np.nan, np.inf]),
)
def test_pattern_samplers_reject_bad_sizes_and_bounds(n, lam, junk, radius):
    for fn in (B.sample_commuting_gaussians, B.sample_shared_mean_gaussians):
        rejects(fn, n, 3, match="n=")
        rejects(fn, 3, n, match="d=")
        rejects(fn, 3, 2, lambda_min=lam[0], lambda_max=lam[1], match="lambda")
        rejects(fn, junk, 2)
        rejects(fn, 3, 2, random_state=-1)
        rejects(fn, 3, 2, random_state="seed")
    rejects(B.sample_commuting_gaussians, 3, 2, radius=radius, match="radius")


@covers("bwdam.data.perturb_gaussians", "bwdam.data.sample_covariance_queries")
@FAST
@given(bad=bad_gaussians(), r=st.sampled_from([-0.1, np.nan, np.inf]), ns=st.integers(-3, 1), cs=st.sampled_from([-1.0, np.nan]))
def test_query_models_reject_bad_input(bad, r, ns, cs):
    m, c = bad
    rejects(B.perturb_gaussians, m, c, 1.0, random_state=0)
    rejects(B.sample_covariance_queries, m, c, 10, random_state=0)
    rejects(B.perturb_gaussians, M_OK, C_OK, r, match="radius")
    rejects(B.perturb_gaussians, M_OK, C_OK, 1.0, cov_scale=cs, match="cov_scale")
    rejects(B.sample_covariance_queries, M_OK, C_OK, ns, match="n_samples")
    rejects(B.perturb_gaussians, M_OK, C_OK, 1.0, random_state=2.5)


@covers("bwdam.data.digits_gaussians")
@FAST
@given(
    nc=st.sampled_from([0, -2, 65, 2.5]),
    nn=st.sampled_from([1, 0, 175, -3]),
    ridge=st.sampled_from([-0.1, np.nan]),
    npat=st.sampled_from([0, -1, 1798]),
)
def test_digits_gaussians_rejects_bad_settings(nc, nn, ridge, npat):
    rejects(B.digits_gaussians, n_components=nc, match="n_components")
    rejects(B.digits_gaussians, n_neighbors=nn, match="n_neighbors")
    rejects(B.digits_gaussians, ridge=ridge, match="ridge")
    rejects(B.digits_gaussians, n_patterns=npat, match="n_patterns")


# ----------------------------------------------------------------------------- experiment helpers


@covers("bwdam.evaluation.retrieval_success")
@FAST
@given(
    tg=st.sampled_from(
        [np.array([0, 1]), np.array([0, 1, 3]), np.array([-1, 0, 1]), np.array([0.0, 1.0, 2.0]), np.zeros((3, 1), int)]
    ),
    method=st.sampled_from(["l2", "BW", "", "cov"]),
    beta=bad_betas,
)
def test_retrieval_success_rejects_bad_targets_method_and_beta(tg, method, beta):
    rejects(B.retrieval_success, M_OK, C_OK, M_OK, C_OK, tg, 1.0, match="targets")
    rejects(B.retrieval_success, M_OK, C_OK, M_OK, C_OK, np.arange(3), 1.0, method=method, match="method")
    rejects(B.retrieval_success, M_OK, C_OK, M_OK, C_OK, np.arange(3), beta, match="beta")


@covers("bwdam.evaluation.capacity_curve", "bwdam.evaluation.capacity_threshold")
@FAST
@given(
    grid=st.sampled_from([[], [4, 2], [0, 2], [2, 2.5], [2, np.nan], [[2, 4]]]),
    rate=st.sampled_from([1.5, -0.1, np.inf]),
    level=st.sampled_from([0.0, -0.5, 1.5, np.nan]),
    d=bad_sizes,
    stop=st.sampled_from([-0.1, 1.5, np.nan]),
)
def test_capacity_helpers_reject_bad_grids_rates_and_levels(grid, rate, level, d, stop):
    rejects(B.capacity_threshold, grid, np.ones(np.size(grid)), match="n_grid")
    rejects(B.capacity_threshold, [2, 4], [1.0, rate], match="success")
    rejects(B.capacity_threshold, [2, 4], [1.0, 1.0], level=level, match="level")
    rejects(B.capacity_curve, 2, grid, n_queries=2, random_state=0, match="n_grid")
    rejects(B.capacity_curve, d, [2, 4], n_queries=2, random_state=0, match="d=")
    rejects(B.capacity_curve, 2, [2, 4], n_queries=d, random_state=0, match="n_queries")
    rejects(B.capacity_curve, 2, [2, 4], n_queries=2, stop_below=stop, random_state=0, match="stop_below")
    finite_or_raises(B.capacity_threshold, [2, 4], [np.nan, np.nan])


@covers("bwdam.evaluation.paired_sign_test")
@FAST
@given(n=st.integers(1, 6), vals=st.sampled_from([np.array([0.5, 1.0]), np.array([2, 0]), np.array(["a", "b"])]))
def test_paired_sign_test_rejects_shapes_non_booleans_and_empty(n, vals):
    rejects(B.paired_sign_test, np.ones(n, bool), np.ones(n + 1, bool), match="equal shapes")
    rejects(B.paired_sign_test, vals, np.ones(2, bool), match="boolean")
    rejects(B.paired_sign_test, np.zeros(0, bool), np.zeros(0, bool), match="empty")


@covers(
    "bwdam.experiments.stream",
    "bwdam.experiments.retrieval_dynamics",
    "bwdam.experiments.shared_mean_retrieval",
    "bwdam.experiments.digits_retrieval",
)
def test_experiment_loops_reject_bad_sizes_and_keys():
    rejects(B.stream)
    rejects(B.stream, -1)
    rejects(B.stream, 1.5)
    rejects(B.retrieval_dynamics, [0], N=4, d=2, n_queries=5, betas=[1.0], radii=[("r", 1.0)])
    rejects(B.shared_mean_retrieval, [0], {}, N=4, d=2, radii=[1.0], n_samples=[5], betas=[1.0])
    rejects(B.shared_mean_retrieval, [0], {"bw": "bw"}, N=0, d=2, radii=[1.0], n_samples=[5], betas=[1.0])
    rejects(B.digits_retrieval, [0], {"bw": "bw"}, n_components=4, N=10, n_queries=6, radii=[1.0], betas=[1.0])
