"""Tests of icml26.bcp.pools: determinism, log-probabilities, sane difficulty."""

import numpy as np

from icml26 import bcp


def test_pools_are_deterministic():
    a = bcp.digits_classifier_outputs(3)
    b = bcp.digits_classifier_outputs(3)
    np.testing.assert_array_equal(a.log_probs, b.log_probs)
    assert 0.7 < a.accuracy < 0.97
    g1 = bcp.gaussian_mixture_outputs(1)
    g2 = bcp.gaussian_mixture_outputs(np.random.default_rng(1))
    np.testing.assert_array_equal(g1.log_probs, g2.log_probs)


def test_log_probs_are_normalised_and_keep_tiny_probabilities():
    d = bcp.digits_classifier_outputs(0)
    np.testing.assert_allclose(np.exp(d.log_probs).sum(1), 1.0)
    assert d.log_probs.min() < np.log(1e-12)  # probabilities below any floor keep their own scores
    S = bcp.nll_scores(d.log_probs)
    assert np.isfinite(S).all() and (S >= 0).all()


def test_mixture_difficulty_knob():
    easy = bcp.gaussian_mixture_outputs(0, separation=3.0)
    hard = bcp.gaussian_mixture_outputs(0, separation=0.8)
    assert easy.accuracy > hard.accuracy
    np.testing.assert_allclose(easy.probs.sum(1), 1.0)
