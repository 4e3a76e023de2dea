"""Tests of icml26.datasets: determinism and sane difficulty."""

import numpy as np
import pytest

from icml26 import datasets


def test_datasets_are_deterministic():
    a = datasets.digits_classifier_outputs(3)
    b = datasets.digits_classifier_outputs(3)
    np.testing.assert_array_equal(a.probs, b.probs)
    assert 0.7 < a.accuracy < 0.97
    g1 = datasets.gaussian_mixture_outputs(1)
    g2 = datasets.gaussian_mixture_outputs(1)
    np.testing.assert_array_equal(g1.probs, g2.probs)


def test_bad_parameters_are_clear_errors():
    with pytest.raises(ValueError, match="n_components=0"):
        datasets.digits_classifier_outputs(0, n_components=0)
    with pytest.raises(ValueError, match="separation and temperature must be positive"):
        datasets.gaussian_mixture_outputs(0, separation=-1.0)


def test_mixture_difficulty_knob():
    easy = datasets.gaussian_mixture_outputs(0, separation=3.0)
    hard = datasets.gaussian_mixture_outputs(0, separation=0.8)
    assert easy.accuracy > hard.accuracy
    np.testing.assert_allclose(easy.probs.sum(1), 1.0)
